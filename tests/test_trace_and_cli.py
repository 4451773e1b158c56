"""``symgrad.trace`` expressions against SymPy closed forms, generated source, the CLI and the disk cache."""
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symgrad as sg

ROOT = Path(__file__).resolve().parents[1]


def _zero(expr):
    return sp.simplify(sp.expand(expr)) == 0


def softplus_naive(x):
    return np.log(1 + np.exp(x))


def rosen3(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def mixed(x, y):
    return np.sin(x * y) + np.exp(x * y) * x


def test_trace_expr_and_grad_expr_softplus():
    t = sg.trace(softplus_naive, 0.0)
    x = sp.Symbol("x", real=True)
    assert _zero(t.expr - sp.log(1 + sp.exp(x)))
    (g,) = t.grad_expr()
    assert _zero(sp.simplify(g.rewrite(sp.exp) - sp.exp(x) / (1 + sp.exp(x))))


def test_trace_two_arguments_grad_expr():
    t = sg.trace(mixed, 0.0, 0.0)
    x, y = sp.symbols("x y", real=True)
    f = sp.sin(x * y) + sp.exp(x * y) * x
    assert _zero(t.expr - f)
    gx, gy = t.grad_expr(argnums=(0, 1))
    assert _zero(gx - sp.diff(f, x)) and _zero(gy - sp.diff(f, y))
    (gy_only,) = t.grad_expr(argnums=1, simplify=True)
    assert _zero(gy_only - sp.diff(f, y))


def test_trace_rosenbrock_vector_expressions():
    t = sg.trace(rosen3, np.zeros(3), signature="(n)->()")
    X = sp.IndexedBase("x", real=True)
    x0, x1, x2 = X[0], X[1], X[2]
    f = 100 * (x1 - x0 ** 2) ** 2 + (1 - x0) ** 2 + 100 * (x2 - x1 ** 2) ** 2 + (1 - x1) ** 2
    assert _zero(t.expr - f)
    (g,) = t.grad_expr()
    assert len(g) == 3
    for i, xi in enumerate((x0, x1, x2)):
        assert _zero(g[i] - sp.diff(f, xi))
    (row,) = t.hessian_expr()
    H = row[0]
    for i, xi in enumerate((x0, x1, x2)):
        for j, xj in enumerate((x0, x1, x2)):
            assert _zero(H[i, j] - sp.diff(f, xi, xj))


def test_jvp_and_vjp_expr_are_linear_in_tangents():
    t = sg.trace(mixed, 0.0, 0.0)
    x, y = sp.symbols("x y", real=True)
    f = sp.sin(x * y) + sp.exp(x * y) * x
    (xd, yd), (ydot,) = t.jvp_expr()
    assert _zero(ydot - (sp.diff(f, x) * xd + sp.diff(f, y) * yd))
    # linear: no constant term, and second derivatives in the tangents vanish
    assert _zero(ydot.subs({xd: 0, yd: 0}))
    assert all(_zero(sp.diff(ydot, a, b)) for a in (xd, yd) for b in (xd, yd))
    (ob,), (xbar, ybar) = t.vjp_expr()
    assert _zero(xbar - sp.diff(f, x) * ob) and _zero(ybar - sp.diff(f, y) * ob)
    assert _zero(sp.diff(xbar, ob, 2)) and _zero(xbar.subs(ob, 0))


def test_jacobian_expr():
    t = sg.trace(lambda jx: np.stack([jx[0] * jx[1], np.sin(jx[0])]), np.zeros(2), signature="(n)->(m)")
    X = sp.IndexedBase("jx", real=True)
    ((J,),) = t.jacobian_expr()
    expected = [[X[1], X[0]], [sp.cos(X[0]), 0]]
    for i in range(2):
        for j in range(2):
            assert _zero(J[i, j] - expected[i][j])


# -- generated source ------------------------------------------------------------------------

def test_source_is_numba_and_compiles(tmp_path):
    t = sg.trace(mixed, 0.0, 0.0)
    src = t.source("grad")
    assert "@numba.njit(cache=True, fastmath=False" in src
    assert re.search(r"^\s+t\d+ = ", src, re.M), "expected named temporaries t0, t1, ..."
    names = re.findall(r"^def (\w+)\(", src, re.M)
    assert "mixed_grad" in names and "mixed_grad_f64" in names and "mixed_grad_f32" in names
    path = tmp_path / "gen_mixed_grad.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("gen_mixed_grad", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in names:
        assert callable(getattr(mod, name))
    x, y = 0.7, -1.3
    np.testing.assert_allclose(mod.mixed_grad(np.array([x]), np.array([y])),
                               [y * np.cos(x * y) + np.exp(x * y) * (1 + x * y)], rtol=1e-14)


def test_source_is_deterministic():
    """The same program gives the same module.  The stabiliser's search is bounded by a work budget
    and its outcome is deterministic; the CPU-time cap is a safety net whose cut depends on the
    machine (and, within a process, on which samples are already cached: the first build pays
    for them, the second does not).  A cap far above what these searches need keeps the cut out."""
    a = sg.trace(rosen3, np.zeros(3), signature="(n)->()").source("grad", stabilize=30.0)
    b = sg.trace(rosen3, np.zeros(3), signature="(n)->()").source("grad", stabilize=30.0)
    assert a == b
    c = sg.trace(mixed, 0.0, 0.0).source("jvp", stabilize=30.0)
    d = sg.trace(mixed, 0.0, 0.0).source("jvp", stabilize=30.0)
    assert c == d


def clashing_names(t0, c1, out, _tmp):
    return t0 * c1 + np.sin(out) * _tmp


def test_argument_names_that_clash_with_generated_names():
    src = sg.trace(clashing_names, 0.0, 0.0, 0.0, 0.0).source("grad", argnums=(0, 1, 2, 3))
    compile(src, "<generated>", "exec")  # valid Python
    g = sg.grad(clashing_names, argnums=(0, 1, 2, 3))
    vals = (0.5, -2.0, 1.25, 3.0)
    ref = (vals[1], vals[0], np.cos(vals[2]) * vals[3], np.sin(vals[2]))
    np.testing.assert_allclose(g(*vals), ref, rtol=1e-15)
    assert sg.jit(clashing_names)(*vals) == pytest.approx(vals[0] * vals[1] + np.sin(vals[2]) * vals[3])


# -- CLI ---------------------------------------------------------------------------------------

def _cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "symgrad", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_cli_grad_softplus_text():
    r = _cli("grad", "examples/softplus.py:softplus", "--format", "text")
    assert r.returncode == 0, r.stderr
    assert "log(exp(x) + 1)" in r.stdout
    # the derivative heading (either spelling) followed by the formula
    assert re.search(r"(d softplus / d x|∂softplus/∂x)\s*=\s*exp\(x\)/\(exp\(x\) \+ 1\)", r.stdout), r.stdout


def test_cli_grad_wrt_and_signature():
    r = _cli("grad", "examples/softplus.py:lse2", "--wrt", "y", "--format", "text")
    assert r.returncode == 0, r.stderr
    flat = r.stdout.replace(" ", "")
    assert "exp(y)/(exp(x)+exp(y))" in flat, r.stdout
    assert "/dx" not in flat and "/∂x" not in flat  # only the requested partial is printed


def test_cli_missing_file_exit_2_one_line():
    r = _cli("grad", "does/not/exist.py:f")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "does/not/exist.py" in lines[0]
    assert "Traceback" not in r.stderr


def test_cli_unknown_function_exit_2():
    r = _cli("grad", "examples/softplus.py:nope")
    assert r.returncode == 2
    assert "nope" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cli_help():
    r = _cli("--help")
    assert r.returncode == 0
    assert "grad" in r.stdout and "usage" in r.stdout.lower()
    r = _cli("grad", "--help")
    assert r.returncode == 0 and "--format" in r.stdout and "--signature" in r.stdout


# -- disk cache across processes ---------------------------------------------------------------

CACHE_SCRIPT = textwrap.dedent("""
    import os, sys, json
    import numpy as np
    import symgrad as sg

    def cached_fn(cz):
        return np.sin(cz) * np.exp(-cz * cz)

    g = sg.grad(cached_fn)
    x = np.linspace(-2.0, 2.0, 9)
    # where the module for this program lives (name is content-addressed)
    from symgrad.compile.cache import cache_dir
    before = {p.name: p.stat().st_mtime_ns for p in cache_dir().glob("cached_fn_grad_*.py")}
    vals = g(x)
    path = g.entry_for((x,)).source_path
    print(json.dumps({"path": path, "before": before, "mtime": os.stat(path).st_mtime_ns,
                      "vals": vals.tolist()}))
""")


def test_disk_cache_reused_by_second_process(tmp_path):
    import json

    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "cache_script.py"
    script.write_text(CACHE_SCRIPT)
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["before"] == {}  # fresh cache: nothing there before the first process
    assert second["path"] == first["path"]
    name = os.path.basename(first["path"])
    assert second["before"].get(name) == first["mtime"]  # the file already existed ...
    assert second["mtime"] == first["mtime"]  # ... and was not rewritten
    x = np.linspace(-2.0, 2.0, 9)
    ref = np.exp(-x * x) * (np.cos(x) - 2 * x * np.sin(x))
    np.testing.assert_allclose(first["vals"], ref, rtol=1e-14, atol=1e-16)
    assert second["vals"] == first["vals"]
    # Numba's machine-code cache sits beside the generated module
    pycache = Path(first["path"]).parent / "__pycache__"
    assert any(p.suffix == ".nbi" for p in pycache.iterdir())
