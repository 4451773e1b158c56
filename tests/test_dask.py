"""Compiled functions on Dask arrays (issue 18): lazy results through dask.array.apply_gufunc.

Every transformation is checked on Dask arrays against closed forms (and the
in-memory NumPy call), on the synchronous and threaded schedulers; a
LocalCluster of two worker processes runs the logistic-regression gradient and
shows that workers never import SymPy.  Kernels travel as a KernelRecipe
(source + cache key), which a fresh process loads without SymPy.
"""
import pickle
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import symgrad as sg  # noqa: E402
from symgrad.compile.recipe import BatchSumRecipe, KernelRecipe  # noqa: E402
from symgrad.errors import DTypeError, ShapeError  # noqa: E402

SCHEDULERS = ["synchronous", "threads"]


def softplus(x):
    return np.log1p(np.exp(x))


def sigmoid(x):
    from scipy.special import expit  # SciPy's logistic function: accurate for either sign

    return expit(x)


def logloss(x, w, y, lam):
    """Per-sample logistic loss with an L2 term; x, w: (d), y in {-1, 1}, lam: ()."""
    return np.logaddexp(0.0, -y * np.dot(x, w)) + lam * np.dot(w, w)


LOGLOSS_SIG = "(d),(d),(),()->()"


def logloss_grad_w(X, w, y, lam):
    """d logloss / d w per row: -y sigmoid(-y x.w) x + 2 lam w (closed form)."""
    z = X @ w
    return (-y * sigmoid(-y * z))[:, None] * X + 2 * lam * w


def data(n=2000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(rng.standard_normal(n) + X[:, 0] > 0, 1.0, -1.0)
    return X, y, 0.1 * rng.standard_normal(d)


def lazy(result):
    """Every leaf of ``result`` is a Dask array (nothing was computed)."""
    leaves = result if isinstance(result, (tuple, list)) else [result]
    return all(isinstance(r, da.Array) for r in leaves)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_elementwise_transformations_on_dask(scheduler):
    x = np.linspace(-30.0, 30.0, 1001)
    dx = da.from_array(x, chunks=97)  # uneven chunks
    s, ds = sigmoid(x), sigmoid(x) * sigmoid(-x)
    with dask.config.set(scheduler=scheduler):
        out = {
            "jit": sg.jit(softplus)(dx),
            "grad": sg.grad(softplus)(dx),
            "value_and_grad": sg.value_and_grad(softplus)(dx),
            "jacobian": sg.jacobian(softplus)(dx),
            "hessian": sg.hessian(softplus)(dx),
            "jvp": sg.jvp(softplus, (dx,), (2.0 * dx,)),
            "hvp": sg.hvp(softplus, (dx,), (3.0 * dx,)),
        }
        value, vjp_fn = sg.vjp(softplus, dx)
        out["vjp"] = (value, vjp_fn(dx)[0])
        assert all(lazy(r) for r in out.values())
        assert out["grad"].chunks == dx.chunks
        got = dask.compute(out)[0]
    ref = np.logaddexp(0.0, x)
    np.testing.assert_allclose(got["jit"], ref, rtol=1e-15)
    np.testing.assert_allclose(got["grad"], s, rtol=1e-14)
    np.testing.assert_allclose(got["value_and_grad"][0], ref, rtol=1e-15)
    np.testing.assert_allclose(got["value_and_grad"][1], s, rtol=1e-14)
    np.testing.assert_allclose(got["jacobian"], s, rtol=1e-14)
    np.testing.assert_allclose(got["hessian"], ds, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got["jvp"][0], ref, rtol=1e-15)
    np.testing.assert_allclose(got["jvp"][1], 2 * x * s, rtol=1e-14)
    np.testing.assert_allclose(got["hvp"], 3 * x * ds, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got["vjp"][0], ref, rtol=1e-15)
    np.testing.assert_allclose(got["vjp"][1], x * s, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept_and_python_numbers_stay_weak(dtype):
    x = np.linspace(-3, 3, 64).astype(dtype)
    f = sg.jit(lambda a, b: a * b + np.exp(a))
    lazy_out = f(da.from_array(x, chunks=16), 0.5)
    assert lazy_out.dtype == dtype
    out = lazy_out.compute(scheduler="synchronous")
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, f(x, 0.5))  # blockwise equals the in-memory call, bit for bit
    mixed = f(da.from_array(x, chunks=16), np.float64(0.5))  # a NumPy scalar is strongly typed
    assert mixed.dtype == np.float64 and mixed.compute().dtype == np.float64


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_signature_value_and_grad_sum_over_rows(scheduler):
    X, y, w = data(n=3000)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    dX, dy = da.from_array(X, chunks=(700, -1)), da.from_array(y, chunks=500)  # different row chunks
    value, grad = vg(dX, w, dy, 0.01)
    assert lazy((value, grad)) and value.shape == (3000,) and grad.shape == (3000, 4)
    with dask.config.set(scheduler=scheduler):
        total, g_total = dask.compute(value.sum(), grad.sum(axis=0))
    z = X @ w
    ref_v = np.logaddexp(0.0, -y * z) + 0.01 * (w @ w)
    ref_g = logloss_grad_w(X, w, y, 0.01).sum(axis=0)
    assert total == pytest.approx(ref_v.sum(), rel=1e-12)
    np.testing.assert_allclose(g_total, ref_g, rtol=1e-12)
    v_np, g_np = vg(X, w, y, 0.01)  # the in-memory NumPy result
    assert total == pytest.approx(v_np.sum(), rel=1e-12)
    np.testing.assert_allclose(g_total, g_np.sum(axis=0), rtol=1e-12)


def test_signature_jacobian_hessian_float32_and_hvp():
    X, y, w = data(n=600)
    X32, y32, w32 = X.astype(np.float32), y.astype(np.float32), w.astype(np.float32)
    dX, dy = da.from_array(X32, chunks=(150, -1)), da.from_array(y32, chunks=150)
    jac = sg.jacobian(logloss, argnums=1, signature=LOGLOSS_SIG)(dX, w32, dy, np.float32(0.01))
    hess = sg.hessian(logloss, argnums=1, signature=LOGLOSS_SIG)(dX, w32, dy, np.float32(0.01))
    assert jac.dtype == np.float32 and hess.dtype == np.float32
    assert jac.shape == (600, 4) and hess.shape == (600, 4, 4) and hess.chunks[1:] == ((4,), (4,))
    jac, hess = dask.compute(jac, hess, scheduler="threads")
    assert jac.dtype == np.float32 and hess.dtype == np.float32
    np.testing.assert_allclose(jac, logloss_grad_w(X, w, y, 0.01), rtol=2e-5, atol=2e-6)
    z = X @ w
    curv = sigmoid(z) * sigmoid(-z)  # d^2/dz^2 logaddexp(0, -y z) with y^2 = 1
    ref_h = curv[:, None, None] * X[:, :, None] * X[:, None, :] + 0.02 * np.eye(4)
    np.testing.assert_allclose(hess, ref_h, rtol=2e-5, atol=2e-6)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    zeros = (np.zeros(4), 0.0, 0.0)
    hv = sg.hvp(logloss, (dX.astype(np.float64), w, dy.astype(np.float64), 0.01),
                (zeros[0], v, zeros[1], zeros[2]), signature=LOGLOSS_SIG)
    assert lazy(hv)
    hv_w = hv[1].compute(scheduler="synchronous")  # H_ww v per row, never forming H
    Xr = X32.astype(np.float64)  # the data the hvp saw
    cr = sigmoid(Xr @ w) * sigmoid(-(Xr @ w))
    ref_hv = cr[:, None] * Xr * (Xr @ v)[:, None] + 0.02 * v
    np.testing.assert_allclose(hv_w, ref_hv, rtol=1e-12, atol=1e-14)


def test_pytree_arguments_and_results():
    def f(p, scale):
        return {"sum": p["a"] * scale + p["b"], "prod": p["a"] * p["b"]}

    a, b = np.linspace(0, 1, 40), np.linspace(1, 2, 40)
    params = {"a": da.from_array(a, chunks=10), "b": da.from_array(b, chunks=(25,))}
    out = sg.jit(f)(params, 3.0)
    assert set(out) == {"sum", "prod"} and lazy(list(out.values()))
    got = dask.compute(out, scheduler="threads")[0]
    np.testing.assert_allclose(got["sum"], 3 * a + b, rtol=1e-15)
    np.testing.assert_allclose(got["prod"], a * b, rtol=1e-15)
    g = sg.grad(lambda p: p["a"] * np.sin(p["b"]))(params)
    assert set(g) == {"a", "b"} and lazy(list(g.values()))
    got = dask.compute(g, scheduler="synchronous")[0]
    np.testing.assert_allclose(got["a"], np.sin(b), rtol=1e-15)
    np.testing.assert_allclose(got["b"], a * np.cos(b), rtol=1e-15, atol=1e-300)


def test_batch_broadcasting_against_numpy_leaves():
    f = sg.jit(lambda x, y: x * y, signature="(),()->()")
    x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=(1, 2))
    out = f(x, np.arange(4.0))  # NumPy (4,) broadcast over the Dask (3, 4)
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.compute(), np.arange(12.0).reshape(3, 4) * np.arange(4.0))


def test_kernels_release_the_gil():
    """Dask's threaded scheduler runs blocks in parallel only if kernels are nogil."""
    g = sg.grad(softplus)
    entry = g.entry_for((np.ones(3),))
    kernels = [v for k, v in entry.fn.__globals__.items() if k.endswith("_batch") and hasattr(v, "targetoptions")]
    assert kernels and all(k.targetoptions.get("nogil") is True for k in kernels)
    assert "nogil=True" in g.source(np.ones(3))


def test_split_core_dimension_is_a_clear_error():
    X, y, w = data(n=100)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    with pytest.raises(ShapeError, match=r"core axis 1 .*split into 2 chunks(.|\n)*rechunk\(\{1: -1\}\)"):
        vg(da.from_array(X, chunks=(50, 2)), w, y, 0.01)


def test_whole_argument_core_without_signature():
    """No signature and not elementwise: each argument is one core (JAX's rule), so it must be one chunk."""
    g = sg.grad(lambda x: np.sum(x ** 2))
    x = np.arange(6.0)
    np.testing.assert_array_equal(g(da.from_array(x, chunks=-1)).compute(scheduler="synchronous"), 2 * x)
    with pytest.raises(ShapeError, match=r"rechunk\(\{0: -1\}\)(.|\n)*signature"):
        g(da.from_array(x, chunks=3))


def test_complex_dask_array_is_a_dtype_error():
    with pytest.raises(DTypeError, match="complex"):
        sg.jit(softplus)(da.ones(4, chunks=2, dtype=np.complex128))


def test_recipe_is_small_and_loads_without_sympy(tmp_path):
    """A kernel travels as source + key (no Numba dispatcher); a fresh process runs it
    after importing only symgrad.compile.recipe: no SymPy, no symgrad.api, no tracing."""
    g = sg.grad(softplus)
    out = g(da.from_array(np.linspace(-2, 2, 8), chunks=4))
    recipes = [t for t in _task_functions(out) if isinstance(t, KernelRecipe)]
    assert recipes, "the graph should call a KernelRecipe"
    blob = pickle.dumps(recipes[0])
    assert len(blob) < 64_000 and b"numba.core" not in blob
    path = tmp_path / "recipe.pkl"
    path.write_bytes(blob)
    code = textwrap.dedent(f"""
        import pickle, sys
        import numpy as np
        recipe = pickle.loads(open({str(path)!r}, "rb").read())
        x = np.linspace(-2, 2, 8)
        got = recipe(x)
        assert np.allclose(got, 1 / (1 + np.exp(-x)), rtol=1e-14), got
        heavy = [m for m in ("sympy", "symgrad.api", "symgrad.trace", "symgrad.ir") if m in sys.modules]
        assert not heavy, heavy
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def _task_functions(arr):
    """The callables in a Dask array's graph (every task spec form Dask has used)."""
    found = []

    def visit(obj, depth=0):
        if depth > 6:
            return
        if isinstance(obj, (KernelRecipe, BatchSumRecipe)):
            found.append(obj)
            return
        func = getattr(obj, "func", None)
        if func is not None:
            visit(func, depth + 1)
        for attr in ("args", "dependencies_values"):
            for a in getattr(obj, attr, ()) or ():
                visit(a, depth + 1)
        if isinstance(obj, tuple):
            for a in obj:
                visit(a, depth + 1)

    for task in dict(arr.__dask_graph__()).values():
        visit(task)
    return found


def test_local_cluster_two_processes():
    """Two worker processes on the loopback interface compute the tree-reduced gradient
    equal to the in-memory result; neither worker imports SymPy."""
    distributed = pytest.importorskip("distributed")
    X, y, w = data(n=20_000, d=5, seed=3)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    v_np, g_np = vg(X, w, y, 0.01)  # compiles on the driver; workers reuse the disk cache
    start = time.monotonic()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, death_timeout=60) as cluster, \
            distributed.Client(cluster, timeout=60) as client:
        dX, dy = da.from_array(X, chunks=(2500, -1)), da.from_array(y, chunks=2500)
        value, grad = vg(dX, w, dy, 0.01)
        fut = client.compute([value.sum(), grad.sum(axis=0)])
        total, g_total = client.gather(fut)
        s_total, s_grad = client.gather(client.compute(list(vg.sum(dX, w, dy, 0.01))))  # summing kernel
        workers_sympy = client.run(lambda: "sympy" in sys.modules)
        workers_api = client.run(lambda: "symgrad.api" in sys.modules)
    assert time.monotonic() - start < 120
    assert len(workers_sympy) == 2 and not any(workers_sympy.values()), workers_sympy
    assert not any(workers_api.values()), workers_api
    assert total == pytest.approx(v_np.sum(), rel=1e-12)
    np.testing.assert_allclose(g_total, g_np.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(g_total, logloss_grad_w(X, w, y, 0.01).sum(axis=0), rtol=1e-12)
    assert s_total == pytest.approx(v_np.sum(), rel=1e-12)
    np.testing.assert_allclose(s_grad, g_np.sum(axis=0), rtol=1e-12)


# -- f.sum: results summed over the batch by the summing kernel (one task per chunk) -------------
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_sum_over_rows_equals_in_memory(scheduler):
    """``vg.sum`` on Dask arrays (uneven, mismatched row chunks) equals the in-memory NumPy result
    and the closed form to 1e-12 relative, and its graph holds one task per chunk plus Dask's tree."""
    X, y, w = data(n=3000)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    dX, dy = da.from_array(X, chunks=(700, -1)), da.from_array(y, chunks=500)
    value, grad = vg.sum(dX, w, dy, 0.01)
    assert lazy((value, grad)) and value.shape == () and grad.shape == (4,)
    assert value.dtype == np.float64 and grad.dtype == np.float64
    with dask.config.set(scheduler=scheduler):
        total, g_total = dask.compute(value, grad)
    v_np, g_np = vg(X, w, y, 0.01)
    assert total == pytest.approx(v_np.sum(), rel=1e-12)
    np.testing.assert_allclose(g_total, g_np.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(g_total, logloss_grad_w(X, w, y, 0.01).sum(axis=0), rtol=1e-12)
    m_total, m_grad = vg.sum(X, w, y, 0.01)  # the same sums in memory, NumPy in and out
    assert isinstance(m_total, np.float64) and isinstance(m_grad, np.ndarray) and m_grad.shape == (4,)
    assert m_total == pytest.approx(total, rel=1e-13)
    np.testing.assert_allclose(m_grad, g_total, rtol=1e-13)


def test_sum_graph_has_no_per_row_results():
    """Persisted aligned chunks: one summing task per chunk; no task outputs a (rows, d) array."""
    X, y, w = data(n=4000)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    dX, dy = dask.persist(da.from_array(X, chunks=(1000, -1)), da.from_array(y, chunks=1000),
                          scheduler="synchronous")
    value, grad = vg.sum(dX, w, dy, 0.01)
    layers = dict(grad.__dask_graph__().layers)
    summing = [name for name in layers if name.startswith("logloss_value_and_grad_sum-")]
    assert len(summing) == 1 and len(layers[summing[0]]) == 4
    recipes = [t for t in _task_functions(grad) if isinstance(t, KernelRecipe)]
    assert not recipes, "a per-row kernel call is in the graph"
    v_old, g_old = vg(dX, w, dy, 0.01)
    n_new = len({**dict(value.__dask_graph__()), **dict(grad.__dask_graph__())})
    n_old = len({**dict(v_old.sum().__dask_graph__()), **dict(g_old.sum(axis=0).__dask_graph__())})
    assert n_new < n_old, (n_new, n_old)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_keeps_float32_and_python_numbers_weak(dtype):
    X, y, w = data(n=1000)
    X, y, w = X.astype(dtype), y.astype(dtype), w.astype(dtype)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    value, grad = vg.sum(da.from_array(X, chunks=(300, -1)), w, da.from_array(y, chunks=300), 0.01)
    assert value.dtype == dtype and grad.dtype == dtype
    total, g_total = dask.compute(value, grad, scheduler="threads")
    assert np.asarray(total).dtype == dtype and g_total.dtype == dtype
    m_total, m_grad = vg.sum(X, w, y, 0.01)
    assert np.asarray(m_total).dtype == dtype and m_grad.dtype == dtype
    # float64 accumulation of the float32 per-row results, rounded once: as close to NumPy's float64
    # sum of those results as float32 allows
    v_rows, g_rows = vg(X, w, y, 0.01)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    assert float(total) == pytest.approx(v_rows.astype(np.float64).sum(), rel=tol)
    np.testing.assert_allclose(g_total, g_rows.astype(np.float64).sum(axis=0), rtol=tol,
                               atol=tol * np.abs(g_rows).sum(axis=0).max())
    np.testing.assert_allclose(m_grad, g_total, rtol=tol)  # in memory: the same sums in another order


def test_sum_elementwise_batch_broadcast_and_empty():
    """Elementwise function: every axis is a batch axis; NumPy leaves broadcast against Dask
    blocks; an empty batch sums to zero."""
    g = sg.grad(softplus)
    x = np.linspace(-5.0, 5.0, 2 * 3 * 50).reshape(6, 50)
    got = g.sum(da.from_array(x, chunks=(2, 20))).compute(scheduler="synchronous")
    assert got.shape == () and got == pytest.approx(sigmoid(x).sum(), rel=1e-13)
    assert g.sum(x) == pytest.approx(sigmoid(x).sum(), rel=1e-13)
    f = sg.jit(lambda a, b: a * b, signature="(),()->()")
    a = da.from_array(np.arange(12.0).reshape(3, 4), chunks=(1, 2))
    assert f.sum(a, np.arange(4.0)).compute() == pytest.approx((np.arange(12.0).reshape(3, 4) * np.arange(4.0)).sum())
    assert g.sum(np.zeros(0)) == 0.0
    X, y, w = data(n=10)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    total, grad = vg.sum(X[0], w, y[0], 0.01)  # no batch axes: the single result itself
    v1, g1 = vg(X[0], w, y[0], 0.01)
    assert total == v1 and np.array_equal(grad, g1)


def test_sum_bad_inputs_are_clear_errors():
    X, y, w = data(n=100)
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    with pytest.raises(ShapeError, match=r"core axis 1 .*split into 2 chunks"):
        vg.sum(da.from_array(X, chunks=(50, 2)), w, y, 0.01)
    with pytest.raises(ShapeError, match="broadcast"):
        vg.sum(X, w, y[:7], 0.01)
    with pytest.raises(DTypeError, match="complex"):
        sg.jit(softplus).sum(da.ones(4, chunks=2, dtype=np.complex128))


def test_summing_module_loads_without_sympy(tmp_path):
    """The summing recipe, pickled, runs in a fresh process that imports no SymPy or tracer."""
    vg = sg.value_and_grad(logloss, argnums=1, signature=LOGLOSS_SIG)
    X, y, w = data(n=64)
    total = vg.sum(da.from_array(X, chunks=(16, -1)), w, da.from_array(y, chunks=16), 0.01)[1]
    recipes = [t for t in _task_functions(total) if isinstance(t, BatchSumRecipe)]
    assert recipes
    path = tmp_path / "sum.pkl"
    path.write_bytes(pickle.dumps(recipes[0]))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "w.npy", w)
    code = textwrap.dedent(f"""
        import pickle, sys
        import numpy as np
        recipe = pickle.loads(open({str(path)!r}, "rb").read())
        X, y, w = (np.load({str(tmp_path)!r} + f"/{{n}}.npy") for n in ("X", "y", "w"))
        part = recipe(X, w, y)
        assert part.shape == (1, 5) and part.dtype == np.float64, part.shape
        print(repr(part[0].tolist()))
        heavy = [m for m in ("sympy", "symgrad.api", "symgrad.trace", "symgrad.ir") if m in sys.modules]
        assert not heavy, heavy
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    part = np.array(eval(r.stdout.strip()))
    v_np, g_np = vg(X, w, y, 0.01)
    np.testing.assert_allclose(part, np.concatenate([[v_np.sum()], g_np.sum(axis=0)]), rtol=1e-13)
