"""Ahead-of-time modules (`symgrad compile`): standalone, same results and broadcasting as the JIT path.

Generated modules are imported in a fresh interpreter where ``sympy`` and
``symgrad`` (and, for --shared, ``numba``) are unimportable.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import symgrad
from symgrad import aot

HERE = Path(__file__).resolve().parent
FUNCS = HERE / "cli" / "funcs.py"
sys.path.insert(0, str(FUNCS.parent))
import funcs  # noqa: E402

X = np.array([[-30.0, -1.5, 0.0], [0.25, 2.0, 40.0]])
Y = np.array([0.5, -2.0, 3.0])
V = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])


def run_isolated(code: str, folder: Path, block=("sympy", "symgrad")) -> dict:
    """Run ``code`` in a new interpreter with ``block`` unimportable; it must print one JSON object."""
    prelude = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in block)
               + f"sys.path.insert(0, {str(folder)!r})\nimport json\nimport numpy as np\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                       env=env, timeout=300, cwd=folder)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def plain_module(tmp_path_factory):
    """softplus, lse2, norm2((n)->(), n=3) with every derivative, unstabilised (so bitwise equal to the JIT)."""
    folder = tmp_path_factory.mktemp("aot")
    targets = [aot.Target(funcs.softplus, (0.0,)), aot.Target(funcs.lse2, (0.0, 0.0))]
    built = aot.build(targets, aot.DERIVATIVES, stabilize=False)
    aot.write(folder / "scal_aot.py", aot.module_source(built))
    built = aot.build([aot.Target(funcs.norm2, (np.zeros(3),), "(n)->()")], ("grad", "hessian", "vjp", "jvp"),
                      stabilize=False)
    aot.write(folder / "vec_aot.py", aot.module_source(built, ("float64",)))
    return folder


def test_module_source_is_standalone(plain_module):
    text = (plain_module / "scal_aot.py").read_text()
    assert text.startswith('"""Standalone derivative kernels')
    code = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    # numpy and numba only (base64 and math only where constants or math.* calls need them)
    assert {"import numba", "import numpy as np", "import sys", "from dataclasses import dataclass, field"} <= set(code)
    assert set(code) <= {"from dataclasses import dataclass, field", "import base64", "import math",
                         "import numba", "import numpy as np", "import sys"}
    assert "lse2_grad(x, y) -> x_bar, y_bar" in text
    assert "x_bar = exp(x)/(exp(x) + exp(y))" in text
    assert "cache=True" in text


def test_same_results_and_broadcasting_as_jit(plain_module):
    res = run_isolated("""
        import scal_aot as m
        X = np.array(%s); Y = np.array(%s); V = np.array(%s)
        out = {
            "mods": sorted(k for k, v in sys.modules.items() if v is not None and k.split(".")[0] in ("sympy", "symgrad")),
            "f": m.softplus(X).tolist(),
            "g": m.softplus_grad(X).tolist(),
            "g_float": m.softplus_grad(0.5),
            "g32": [str(m.softplus_grad(X.astype(np.float32)).dtype), m.softplus_grad(X.astype(np.float32)).tolist()],
            "lse_grad": [a.tolist() for a in m.lse2_grad(X, Y)],
            "lse_vjp": [a.tolist() for a in m.lse2_vjp(X, Y, V)],
            "lse_jvp": [a.tolist() for a in m.lse2_jvp(X, Y, V, 1.0)],
            "lse_hess": [np.asarray(a).tolist() for a in m.lse2_hessian(X, 2.0)],
        }
        print(json.dumps(out))
    """ % (X.tolist(), Y.tolist(), V.tolist()), plain_module)
    assert res["mods"] == []
    f, g = funcs.softplus, funcs.lse2
    np.testing.assert_array_equal(res["f"], symgrad.jit(f, stabilize=False)(X))
    np.testing.assert_array_equal(res["g"], symgrad.grad(f, stabilize=False)(X))
    assert res["g_float"] == symgrad.grad(f, stabilize=False)(0.5)
    assert res["g32"][0] == "float32"
    np.testing.assert_array_equal(res["g32"][1], symgrad.grad(f, stabilize=False)(X.astype(np.float32)))
    jit_grad = symgrad.grad(g, argnums=(0, 1), stabilize=False)(X, Y)
    for a, b in zip(res["lse_grad"], jit_grad):
        np.testing.assert_array_equal(a, b)
    _, vjp_fn = symgrad.vjp(g, X, Y, stabilize=False)  # y (3,) broadcast against x (2, 3): summed over axis 0
    for a, b in zip(res["lse_vjp"], vjp_fn(V)):            # the module's kernel gives every element's
        np.testing.assert_array_equal(np.sum(a, axis=0) if np.ndim(b) < np.ndim(a) else a, b)
    assert np.shape(res["lse_vjp"][1]) == X.shape
    out, dot = symgrad.jvp(g, (X, Y), (V, np.ones_like(Y)), stabilize=False)
    np.testing.assert_array_equal(res["lse_jvp"][0], out)
    np.testing.assert_array_equal(res["lse_jvp"][1], dot)
    h = symgrad.hessian(g, argnums=(0, 1), stabilize=False)(X, 2.0)
    np.testing.assert_array_equal(res["lse_hess"], [h[0][0], h[0][1], h[1][0], h[1][1]])


def test_signature_module_and_errors(plain_module):
    res = run_isolated("""
        import vec_aot as m
        x = np.arange(12.0).reshape(4, 3) / 7
        out = {"g": m.norm2_grad(x).tolist(), "h": m.norm2_hessian(x[0]).tolist(),
               "g32": str(m.norm2_grad(x.astype(np.float32)).dtype)}
        try:
            m.norm2_grad(np.zeros((2, 4)))
        except ValueError as exc:
            out["err"] = type(exc).__name__ + ": " + str(exc).splitlines()[0]
        print(json.dumps(out))
    """, plain_module)
    x = np.arange(12.0).reshape(4, 3) / 7
    np.testing.assert_array_equal(res["g"], symgrad.grad(funcs.norm2, signature="(n)->()", stabilize=False)(x))
    np.testing.assert_array_equal(res["h"], 2 * np.eye(3))  # (the JIT hessian agrees; its first compile is slow)
    assert res["g32"] == "float64"  # a float64-only module upcasts float32 input
    assert res["err"].startswith("ShapeError: norm2_grad: argument 0 has shape (2, 4)")


def test_cli_compile_stabilised_module(tmp_path):
    out = tmp_path / "sp_aot.py"
    r = subprocess.run([sys.executable, "-m", "symgrad", "compile", f"{FUNCS}:softplus", "lse2", "--grad",
                        "--budget", "0.5", "--dtype", "float32", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "softplus_grad" in r.stdout and "lse2_grad" in r.stdout
    text = out.read_text()
    assert "x_bar = sigmoid(x)" in text  # the stable form is what the module computes
    res = run_isolated("""
        import sp_aot as m
        x = np.array([-1000.0, -1.0, 0.0, 1.0, 1000.0])
        print(json.dumps({"g": m.softplus_grad(x).tolist(), "dt": str(m.softplus_grad(x).dtype),
                          "s": float(m.softplus_grad(1000.0))}))
    """, tmp_path)
    assert res["dt"] == "float32"
    np.testing.assert_allclose(res["g"], symgrad.grad(funcs.softplus)(np.array([-1000, -1, 0, 1, 1000.0],
                                                                             dtype=np.float32)), rtol=1e-6)
    assert res["s"] == 1.0


def test_bad_requests():
    with pytest.raises(aot.AOTError, match="float64 and/or float32"):
        aot.module_source(aot.Built(None, []), ("float16",))
    with pytest.raises(aot.AOTError, match="two functions named 'softplus'"):
        aot.build([aot.Target(funcs.softplus, (0.0,)), aot.Target(funcs.softplus, (0.0,))], (), stabilize=False)


@pytest.mark.skipif(not aot.shared_available()[0], reason=aot.shared_available()[1])
def test_shared_module_imports_with_numpy_only(tmp_path):
    built = aot.build([aot.Target(funcs.lse2, (0.0, 0.0))], ("grad",), stabilize=False)
    paths = aot.build_shared(built, tmp_path / "lse_shared.py", ("float64",))
    assert all(p.exists() for p in paths)
    res = run_isolated("""
        import time
        t = time.perf_counter()
        import lse_shared as m
        t = time.perf_counter() - t
        X = np.array(%s); Y = np.array(%s)
        print(json.dumps({"g": [a.tolist() for a in m.lse2_grad(X, Y)], "f": m.lse2(0.5, 1.5), "t": t,
                          "numba": "numba" in sys.modules and sys.modules["numba"] is not None}))
    """ % (X.tolist(), Y.tolist()), tmp_path, block=("sympy", "symgrad", "numba"))
    assert not res["numba"]
    for a, b in zip(res["g"], symgrad.grad(funcs.lse2, argnums=(0, 1), stabilize=False)(X, Y)):
        np.testing.assert_array_equal(a, b)
    assert res["f"] == symgrad.jit(funcs.lse2, stabilize=False)(0.5, 1.5)
