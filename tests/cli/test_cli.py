"""The symgrad command line, driven through ``python -m symgrad`` (and in-process for cheap cases)."""
import re

import pytest

from symgrad.cli import build_parser, main

from pathlib import Path

FUNCS = str(Path(__file__).resolve().parent / "funcs.py")

COMMANDS = ("grad", "hessian", "jvp", "vjp", "check", "plot", "compile", "explain")


def test_top_level_help_lists_every_command(cli):
    r = cli("--help")
    assert r.returncode == 0
    for c in COMMANDS:
        assert re.search(rf"^\s+{c}\s+\S", r.stdout, re.M), c
    assert "FILE.py:FUNC" in r.stdout or "file.py:func" in r.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_subcommand_help_is_self_contained(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: symgrad {command}" in out
    assert "FILE.py:FUNC" in out and "examples:" in out


def test_grad_softplus_derived_form(cli):
    r = cli("grad", f"{FUNCS}:softplus", "--no-stabilize", "--format", "text")
    assert r.returncode == 0, r.stderr
    assert "softplus(x) = log(exp(x) + 1)" in r.stdout
    assert "∂softplus/∂x = exp(x)/(exp(x) + 1)" in r.stdout
    assert "stable" not in r.stdout


def test_grad_softplus_stabilised_with_bits_and_code(cli):
    r = cli("grad", f"{FUNCS}:softplus", "--format", "text", "--budget", "0.5", "--show-code")
    assert r.returncode == 0, r.stderr
    assert "∂softplus/∂x = exp(x)/(exp(x) + 1)" in r.stdout
    assert re.search(r"exp\(x\)/\(exp\(x\) \+ 1\) -> sigmoid\(x\)", r.stdout)
    assert re.search(r"bits of error float64 \d+\.\d -> 0\.\d", r.stdout)
    assert "stable form = sigmoid(x)" in r.stdout
    assert "@numba.njit" in r.stdout and "def softplus_grad(" in r.stdout
    assert "    # rewrite sigmoid_from_ratio" in r.stdout  # at the statement, in the code's names


def test_grad_formats_wrt_and_higher_order(capsys):
    assert main(["grad", f"{FUNCS}:cube", "--no-stabilize", "--format", "text", "--wrt", "y"]) == 0
    out = capsys.readouterr().out
    assert "∂cube/∂y = x**3" in out and "∂cube/∂x" not in out
    assert main(["grad", f"{FUNCS}:cube", "--no-stabilize", "--format", "text", "--order", "3"]) == 0
    out = capsys.readouterr().out
    assert "∂³cube/∂x∂x∂x = 6*y" in out
    assert "∂³cube/∂x∂x∂y = 6*x" in out
    assert "∂³cube/∂y∂y∂y = 0" in out
    assert main(["grad", f"{FUNCS}:cube", "--no-stabilize", "--format", "latex", "--wrt", "x"]) == 0
    assert "3 x^{2} y" in capsys.readouterr().out
    assert main(["grad", f"{FUNCS}:norm2", "--no-stabilize", "--format", "text",
                 "--signature", "(n)->()", "--dims", "n=2"]) == 0
    assert "[2*x[0], 2*x[1]]" in capsys.readouterr().out


def test_hessian_jvp_vjp(capsys):
    assert main(["hessian", f"{FUNCS}:cube", "--no-stabilize", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "∂²cube/∂x∂x = 6*x*y" in out and "∂²cube/∂x∂y = 3*x**2" in out
    assert "∂²cube/∂y∂x" not in out  # symmetric block printed once
    assert main(["jvp", f"{FUNCS}:lse2", "--no-stabilize", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "tangents: x_dot, y_dot" in out
    assert "out_dot = J·(x_dot, y_dot) = (x_dot*exp(x) + y_dot*exp(y))/(exp(x) + exp(y))" in out
    assert main(["vjp", f"{FUNCS}:softplus", "--no-stabilize", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "cotangents: out_bar" in out and "= out_bar*exp(x)/(exp(x) + 1)" in out


@pytest.mark.parametrize("args, message", [
    (["grad", "tests/cli/nope.py:f"], "no such file: tests/cli/nope.py"),
    (["grad", f"{FUNCS}:missing"], "defines no function 'missing'"),
    (["grad", f"{FUNCS}:not_a_function"], "is a int, not a function"),
    (["grad", "softplus"], "expected FILE.py:FUNC"),
    (["grad", "no_such_pkg.mod:f"], "cannot import module 'no_such_pkg.mod'"),
    (["grad", f"{FUNCS}:branchy"], "TraceError: cannot branch on a traced value"),
    (["grad", f"{FUNCS}:softplus", "--wrt", "z"], "--wrt z: softplus has arguments x"),
    (["grad", f"{FUNCS}:norm2", "--signature", "(n)->()", "--dims", "n"], "--dims expects name=size"),
    (["plot", f"{FUNCS}:softplus", "--range", "3:1", "-o", "x.png"], "--range expects A:B with A < B"),
    (["compile", f"{FUNCS}:norm2", "--signature", "(n)->()", "-o", "x.py"], "give the core size of n"),
])
def test_user_errors_one_line_exit_2(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("symgrad: error: "), err
    assert message in err


def test_errors_in_subprocess_and_debug(cli, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x)\n    return x\n")
    r = cli("grad", f"{bad}:f")
    assert r.returncode == 2
    assert r.stderr.strip() == f"symgrad: error: syntax error in {bad}:1: expected ':'"
    assert r.stdout == ""
    r = cli("--debug", "grad", f"{FUNCS}:branchy")
    assert r.returncode == 2 and "Traceback (most recent call last)" in r.stderr
    r = cli("grad", f"{FUNCS}:softplus", "--format", "fancy")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "symgrad grad: error: argument --format: invalid choice: 'fancy' (choose from 'pretty', 'unicode', "
        "'latex', 'python', 'text') (see symgrad grad --help)"]


def test_check_passes(capsys):
    assert main(["check", f"{FUNCS}:lse2", "--points", "2", "--no-stabilize"]) == 0
    out = capsys.readouterr().out
    assert "dlse2/dx" in out and "dlse2/dy" in out and "<w,Jv> vs <Jᵀw,v>" in out
    assert "6/6 checks passed" in out


def test_check_fails_with_exit_1(cli):
    r = cli("check", f"{FUNCS}:wrong_sin", "--points", "2")
    assert r.returncode == 1, r.stderr
    assert "FAIL" in r.stdout and "2/4 checks passed; 2 FAILED" in r.stdout


def test_check_vector_function(capsys):
    assert main(["check", f"{FUNCS}:norm2", "--signature", "(n)->()", "--dims", "n=3", "--points", "2", "--no-stabilize"]) == 0
    assert "4/4 checks passed" in capsys.readouterr().out


def test_plot_writes_png(cli, tmp_path):
    out = tmp_path / "softplus.png"
    r = cli("plot", f"{FUNCS}:softplus", "--range", "-1000:1000", "--points", "81", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    m = re.search(r"mean bits of error of d/dx: naive ([\d.]+), stabilised ([\d.]+)", r.stdout)
    assert m and float(m[2]) < float(m[1])


def test_explain_prints_every_adjoint_and_the_gradient(capsys):
    # Loss = z * (x + y) at (x, y, z) = (-2, 5, -4): dL/dx = dL/dy = z = -4, dL/dz = x + y = 3
    assert main(["explain", FUNCS + ":loss_zxy", "--at", "x=-2,y=5,z=-4"]) == 0
    out = capsys.readouterr().out
    assert "forward pass of loss_zxy:" in out and "backward pass" in out
    assert re.search(r"x_bar = .* = -4\b", out) and re.search(r"z_bar = .* = 3\b", out)
    assert out.rstrip().endswith("= -4, dt1/dy = -4, dt1/dz = 3")


def test_explain_array_point(capsys):
    assert main(["explain", FUNCS + ":rosen", "--at", "x=[1,2,3]", "--signature", "(n)->()"]) == 0
    out = capsys.readouterr().out
    assert "[-400. 1002. -200.]" in out.splitlines()[-1]  # scipy.optimize.rosen_der([1, 2, 3])
