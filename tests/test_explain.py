"""symgrad.explain: the structured step-by-step record of forward and reverse/forward mode.

Every number is checked against a closed form or against the compiled transforms.
"""
import shutil
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.cli import main

from .cli.funcs import bias_matmul, loss_zxy

FUNCS = str(Path(__file__).resolve().parent / "cli" / "funcs.py")


def test_loss_zxy_adjoints_match_the_chain_rule_by_hand():
    # L = z (x + y) at (2, 3, 6): q = x + y = 5, dL/dq = z = 6, dL/dx = dL/dy = 6, dL/dz = q = 5
    e = sg.explain(loss_zxy, 2.0, 3.0, 6.0)
    assert [s.name for s in e.forward] == ["x", "y", "z", "t0", "t1"]
    assert float(e.step("t0").value) == 5.0 and float(e.step("t1").value) == 30.0
    assert {k: float(v) for k, v in e.gradient.items()} == {"x": 6.0, "y": 6.0, "z": 5.0}
    q_bar = e.adjoint("t0")
    (c,) = q_bar.contributions
    assert (c.consumer, float(c.upstream), c.local, float(c.local_value), float(c.value)) == ("t1", 1.0, "z", 6.0, 6.0)
    assert [a.name for a in e.backward] == ["t0", "z", "y", "x"]  # reverse topological order
    text = str(e)
    assert "backward pass (t1_bar = 1)" in text and "dt1/dz = 5" in text


def test_a_variable_used_twice_sums_both_paths():
    # f = x*x + sin(x): x feeds t0 twice and t1 once; x_bar = x + x + cos x
    e = sg.explain(lambda x: x * x + np.sin(x), 2.0)
    x_bar = e.adjoint("x")
    assert x_bar.merged and len(x_bar.contributions) == 3
    assert sorted(float(c.value) for c in x_bar.contributions) == pytest.approx(sorted([2.0, 2.0, np.cos(2.0)]))
    assert float(x_bar.value) == pytest.approx(4.0 + np.cos(2.0), rel=1e-15)
    assert "paths merge at x" in str(e)
    assert e.step("t0").formula == "x*x"


def test_broadcasting_and_matrix_product_shapes_are_explained():
    rng = np.random.default_rng(0)
    A, B, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=4)
    e = sg.explain(bias_matmul, A, B, b, signature="(m,k),(k,n),(n)->()")
    G = 2 * (A @ B + b)  # dL/d(AB + b)
    np.testing.assert_allclose(e.gradient["A"], G @ B.T, rtol=1e-13)
    np.testing.assert_allclose(e.gradient["B"], A.T @ G, rtol=1e-13)
    np.testing.assert_allclose(e.gradient["b"], G.sum(axis=0), rtol=1e-13)
    (cb,) = e.adjoint("b").contributions
    assert cb.shape_note == "sum over broadcast axes (0,) back to shape (4,)"
    assert np.shape(cb.upstream) == (2, 4) and np.shape(cb.value) == (4,)
    notes = {a.name: a.contributions[0].shape_note for a in e.backward}
    assert notes["A"].startswith("matrix product: G Bᵀ") and notes["B"].startswith("matrix product: Aᵀ G")
    assert e.step("t0").formula == "A @ B" and e.step("t0").shape == (2, 4)
    assert e.adjoint("A").shape == (2, 3)


@pytest.mark.parametrize("seed", [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.5, -2.0, 3.0)])
def test_forward_mode_tangents_give_the_directional_derivative(seed):
    e = sg.explain(loss_zxy, 2.0, 3.0, 6.0, mode="forward", tangents=seed)
    _, out_dot = sg.jvp(loss_zxy, (2.0, 3.0, 6.0), seed)
    assert float(e.gradient["output_dot"]) == pytest.approx(float(out_dot), rel=1e-15)
    assert float(e.gradient["output_dot"]) == pytest.approx(6 * seed[0] + 6 * seed[1] + 5 * seed[2])
    assert [t.name for t in e.tangents] == ["t0", "t1"]
    assert float(e.tangents[0].value) == seed[0] + seed[1]


def test_forward_mode_on_arrays_matches_the_gradient():
    f = lambda x, y: np.sum(x * y + np.exp(y / x))  # noqa: E731
    x, y, v = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([0.3, -0.7])
    e = sg.explain(f, x, y, signature="(n),(n)->()", mode="forward", tangents=(v, np.zeros(2)))
    g = sg.grad(f, signature="(n),(n)->()")(x, y)
    assert float(e.gradient["output_dot"]) == pytest.approx(float(g @ v), rel=1e-13)


def test_reverse_explanation_agrees_with_compiled_grad():
    def f(x, y):
        return np.log1p(np.exp(x - y)) * np.tanh(x * y) + np.sqrt(x * x + y * y)
    e = sg.explain(f, 0.7, -1.3)
    gx, gy = sg.grad(f, argnums=(0, 1))(0.7, -1.3)
    assert float(e.gradient["x"]) == pytest.approx(gx, rel=1e-13)
    assert float(e.gradient["y"]) == pytest.approx(gy, rel=1e-13)


def test_bad_mode_and_tangents_are_reported():
    with pytest.raises(ValueError, match="mode must be 'reverse' or 'forward'"):
        sg.explain(loss_zxy, 1.0, 1.0, 1.0, mode="sideways")
    with pytest.raises(ValueError, match="tangents must match the arguments"):
        sg.explain(loss_zxy, 1.0, 1.0, 1.0, mode="forward", tangents=(1.0,))


def test_dot_text_names_every_node_with_value_and_adjoint():
    e = sg.explain(loss_zxy, 2.0, 3.0, 6.0)
    dot = e.to_dot()
    assert dot.startswith("digraph")
    for line in ('"t0" [label="{t0 = x + y | value 5 | t0_bar 6}"];', '"x" -> "t0";', '"t0" -> "t1";',
                 '"z" [label="{z (input) | value 6 | z_bar 5}"];'):
        assert line in dot


def test_cli_forward_mode_and_dot(tmp_path, capsys):
    dot = tmp_path / "g.dot"
    assert main(["explain", FUNCS + ":loss_zxy", "--at", "x=2,y=3,z=6", "--mode", "forward",
                 "--tangent", "z=1", "--dot", str(dot)]) == 0
    out = capsys.readouterr().out
    assert "t1_dot = t0 * z_dot + z * t0_dot = 5" in out
    assert "seed x_dot = 0, y_dot = 0, z_dot = 1" in out
    assert '"t1" [label="{t1 = t0*z | value 30 | t1_dot 5}"];' in dot.read_text()


def test_cli_png_without_graphviz_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["explain", FUNCS + ":loss_zxy", "--png", str(tmp_path / "g.png")]) == 2
    err = capsys.readouterr().err
    assert "Graphviz's `dot` program" in err and "--dot FILE" in err


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_cli_png_with_graphviz(tmp_path):
    png = tmp_path / "g.png"
    assert main(["explain", FUNCS + ":loss_zxy", "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_tangent_needs_forward_mode(capsys):
    assert main(["explain", FUNCS + ":loss_zxy", "--tangent", "x=1"]) == 2
    assert "--mode forward" in capsys.readouterr().err


def test_custom_gradient_is_honoured_in_both_modes():
    @sg.custom_gradient
    def scaled_sin(x):
        def grad_fn(upstream):
            return upstream * 3.0  # deliberately not cos(x): the rule must win
        return np.sin(x), grad_fn

    f = lambda x: 2 * scaled_sin(x)  # noqa: E731
    rev, fwd = sg.explain(f, 1.5), sg.explain(f, 1.5, mode="forward")
    assert float(rev.gradient["x"]) == 6.0 == float(fwd.gradient["output_dot"])
    assert "custom_gradient" in rev.adjoint("x").contributions[0].shape_note
    assert "grad_fn transposed(x_dot)" in fwd.tangents[1].formula and float(fwd.tangents[1].value) == 3.0
