"""The cheap call paths (a scalar gradient called with Python floats, hvp with plain arrays) give
the same values as the general path and never use a stale captured value.  No timings here:
speed is measured in benchmarks/peers.py (sections 2 and 3)."""
import math

import numpy as np

import symgrad as sg

W = 2.0  # a module global read by the traced functions below


def _latency_f(x, y, z):
    return x * y * np.sin(z) + np.exp(x * z)


def _uses_global(x):
    return W * x ** 3


def test_scalar_core_keeps_the_gil_batch_kernels_release_it():
    """Scalar cores are called from Python for one point: nogil's release and re-acquire cost more
    than the core (peers.py section 2 went from 1.04x to 1.3x hand-written njit with it)."""
    g = sg.grad(_latency_f, argnums=(0, 1, 2))
    g(0.7, 1.3, 0.4)
    mod, name = g.func.__globals__, g.func.__name__
    core, batch = mod[f"{name}_f64"], mod[f"{name}_f64_batch"]
    assert not core.targetoptions.get("nogil", False)
    assert batch.targetoptions.get("nogil", False)


def test_scalar_fast_path_values():
    g = sg.grad(_latency_f, argnums=(0, 1, 2))
    a, b, c = 0.7, 1.3, 0.4
    expect = (b * math.sin(c) + c * math.exp(a * c), a * math.sin(c), a * b * math.cos(c) + a * math.exp(a * c))
    for _ in range(3):  # the first call builds; later ones take the routed fast path
        got = g(a, b, c)
        assert all(type(v) is float for v in got)
        np.testing.assert_allclose(got, expect, rtol=1e-15)
    # NumPy scalars and arrays leave the float fast path and give the same numbers
    np.testing.assert_allclose([float(v) for v in g(np.float64(a), b, c)], expect, rtol=1e-15)
    np.testing.assert_allclose([v[1] for v in g(np.array([0.0, a]), b, c)], expect, rtol=1e-15)
    assert all(v.dtype == np.float32 for v in g(np.float32(a), np.float32(b), np.float32(c)))


def test_global_changed_after_compiling_is_seen_with_float_arguments():
    global W
    g = sg.grad(_uses_global)
    assert g(1.0) == 6.0
    assert g(2.0) == 24.0  # the same entry again
    W = 5.0
    try:
        assert g(1.0) == 15.0
        assert g(np.float64(1.0)) == 15.0
        np.testing.assert_array_equal(g(np.array([1.0, 2.0])), [15.0, 60.0])
    finally:
        W = 2.0
    assert g(1.0) == 6.0


# -- Hessian-vector products: sg.hvp's per-call lookup and the compiled callable -----------------
def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _points(n, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 2, n), rng.standard_normal(n)


def test_hvp_per_call_form_matches_scipy():
    from scipy.optimize import rosen_hess_prod

    for n in (100, 7):
        x, v = _points(n, n)
        for _ in range(3):  # the first call builds; later ones take the cached fast path
            np.testing.assert_allclose(sg.hvp(rosen, (x,), (v,), signature="(n)->()"), rosen_hess_prod(x, v),
                                       rtol=1e-12, atol=1e-9)
    x, v = _points(100, 1)
    xb, vb = np.stack([x, -x]), np.stack([v, 2 * v])  # a batch: one product per row
    got = sg.hvp(rosen, (xb,), (vb,), signature="(n)->()")
    for k in range(2):
        np.testing.assert_allclose(got[k], rosen_hess_prod(xb[k], vb[k]), rtol=1e-12, atol=1e-9)
    # arrays the fast path's tests send to the general path: strided views, Fortran order, float32, lists
    xs, vs = np.repeat(x, 2)[::2], np.repeat(v, 2)[::2]
    np.testing.assert_allclose(sg.hvp(rosen, (xs,), (vs,), signature="(n)->()"), rosen_hess_prod(x, v), rtol=1e-12,
                               atol=1e-9)
    np.testing.assert_allclose(sg.hvp(rosen, [x], [v], signature="(n)->()"), rosen_hess_prod(x, v), rtol=1e-12,
                               atol=1e-9)
    got32 = sg.hvp(rosen, (x.astype(np.float32),), (v.astype(np.float32),), signature="(n)->()")
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, rosen_hess_prod(x, v), rtol=1e-3, atol=1e-2)


def test_hessian_vector_product_callable_matches_scipy():
    from scipy.optimize import rosen_hess_prod

    h = sg.hessian_vector_product(rosen, signature="(n)->()")
    x, v = _points(100, 2)
    for _ in range(3):  # built, then routed straight to the generated entry point
        np.testing.assert_allclose(h(x, v), rosen_hess_prod(x, v), rtol=1e-12, atol=1e-9)
    x7, v7 = _points(7, 3)  # another core size: back through the general path, compiled again
    np.testing.assert_allclose(h(x7, v7), rosen_hess_prod(x7, v7), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(h(x, v), rosen_hess_prod(x, v), rtol=1e-12, atol=1e-9)
    xb, vb = np.stack([x, -x]), np.stack([v, 2 * v])
    got = h(xb, vb)
    assert got.shape == (2, 100)
    np.testing.assert_allclose(got[1], rosen_hess_prod(-x, 2 * v), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(h(np.asfortranarray(x), v[::-1].copy()[::-1]), rosen_hess_prod(x, v), rtol=1e-12,
                               atol=1e-9)
    assert h(x.astype(np.float32), v.astype(np.float32)).dtype == np.float32
    np.testing.assert_array_equal(h(x, v), sg.hvp(rosen, (x,), (v,), signature="(n)->()"))


def test_hessian_vector_product_argnums_pytrees_and_scalars():
    def f(a, b, data):
        return np.sum(a ** 2 * b[0] ** 3) + data * np.sum(b[1] ** 2)

    a, b0, b1 = np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([3.0])
    ta, tb = np.array([1.0, 0.0]), (np.array([0.0, 1.0]), np.array([2.0]))
    h = sg.hessian_vector_product(f, argnums=(0, 1))
    ha, hb = h(a, (b0, b1), 4.0, ta, tb)
    # H @ t by hand: f = sum a_i^2 b0_i^3 + 4 sum b1^2
    np.testing.assert_allclose(ha, 2 * b0 ** 3 * ta + 6 * a * b0 ** 2 * tb[0])
    np.testing.assert_allclose(hb[0], 6 * a * b0 ** 2 * ta + 6 * a ** 2 * b0 * tb[0])
    np.testing.assert_allclose(hb[1], 8.0 * tb[1])
    h0 = sg.hessian_vector_product(f)  # argnums=0: the last argument is the one tangent
    np.testing.assert_allclose(h0(a, (b0, b1), 4.0, ta), 2 * b0 ** 3 * ta)
    hs = sg.hessian_vector_product(lambda x: x ** 3 * np.sin(x))
    for _ in range(2):
        assert math.isclose(float(hs(0.3, 2.0)), 2.0 * (6 * 0.3 * math.sin(0.3) + 6 * 0.09 * math.cos(0.3)
                                                       - 0.027 * math.sin(0.3)), rel_tol=1e-13)


def test_hessian_vector_product_bad_calls_are_explained():
    import pytest

    h = sg.hessian_vector_product(rosen, signature="(n)->()")
    with pytest.raises(TypeError, match="tangent"):
        h(np.ones(3))
    with pytest.raises(ValueError, match="pytree structure"):
        h(np.ones(3), (np.ones(3), np.ones(3)))
    with pytest.raises(TypeError, match="positional"):
        h(x=np.ones(3), v=np.ones(3))
    with pytest.raises(TypeError, match="argnums"):
        sg.hessian_vector_product(rosen, argnums="x")
    with pytest.raises(sg.SignatureError):
        sg.hessian_vector_product(lambda x: x * np.ones(2))(1.0, 1.0)


SCALE_H = np.array([1.0, 1.0, 1.0])


def test_hvp_fast_paths_see_a_changed_global():
    """The HVP's cached lookups check captured values every call (a global array changed in place,
    a global rebound)."""
    global W
    f = lambda x: np.sum(SCALE_H * x ** 3) * W  # noqa: E731
    h = sg.hessian_vector_product(f)
    x, v = np.ones(3), np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        np.testing.assert_array_equal(sg.hvp(f, (x,), (v,)), 12.0 * v)
        np.testing.assert_array_equal(h(x, v), 12.0 * v)
    SCALE_H[0] = 5.0
    try:
        np.testing.assert_array_equal(sg.hvp(f, (x,), (v,)), 12.0 * v * SCALE_H)
        np.testing.assert_array_equal(h(x, v), 12.0 * v * SCALE_H)
        W = 3.0
        np.testing.assert_array_equal(sg.hvp(f, (x,), (v,)), 18.0 * v * SCALE_H)
        np.testing.assert_array_equal(h(x, v), 18.0 * v * SCALE_H)
    finally:
        SCALE_H[0], W = 1.0, 2.0
    np.testing.assert_array_equal(sg.hvp(f, (x,), (v,)), 12.0 * v)
    np.testing.assert_array_equal(h(x, v), 12.0 * v)


def test_array_fast_path_takes_only_what_it_can_and_gives_the_general_paths_numbers():
    """The generated entry point's one-point path (dtype by identity, strides as a tuple, the core's
    compiled overload) against arrays that must leave it: byte-swapped, strided, Fortran order,
    read-only (taken: the core does not write its inputs), 2-D batch."""
    from scipy.optimize import rosen_der

    g = sg.grad(rosen, signature="(n)->()")
    x, _ = _points(100, 5)
    ref = rosen_der(x)
    for _ in range(2):
        np.testing.assert_allclose(g(x), ref, rtol=1e-13, atol=1e-10)
    ro = x.copy()
    ro.flags.writeable = False
    np.testing.assert_array_equal(g(ro), g(x))
    np.testing.assert_array_equal(g(x.astype(">f8")), g(x))
    np.testing.assert_array_equal(g(np.repeat(x, 2)[::2]), g(x))
    xb = np.asfortranarray(np.stack([x, 2 * x]))
    np.testing.assert_array_equal(g(xb)[0], g(x))
    np.testing.assert_allclose(g(xb)[1], rosen_der(2 * x), rtol=1e-13, atol=1e-10)


def test_scalar_arguments_with_an_array_output_take_the_fast_path():
    """Float arguments, an array output: the one-point path allocates the output (its module defines
    the allocation alias even with no array argument to test)."""
    f = sg.jit(lambda s, t: np.stack([s * t, s + t]))
    for _ in range(2):
        np.testing.assert_array_equal(f(0.5, 4.0), [2.0, 4.5])


def test_scalar_entry_is_compiled_on_the_first_float_call():
    """Array calls never compile the float64 scalar entry (a separate Numba compile); the first call
    with Python floats compiles it, rebinds the module attribute, and gives the array path's numbers."""
    from symgrad.compile.cache import _LazyEntry

    def f(x):
        return np.tanh(x) * np.exp(-0.375 * x)  # a program no other test builds

    g = sg.grad(f)
    xs = np.array([-2.0, 0.3, 1.5])
    by_array = g(xs)
    mod, entry = g.func.__globals__, f"{g.func.__name__}_f64_entry"
    assert isinstance(mod[entry], _LazyEntry)
    by_float = [g(float(v)) for v in xs]
    assert not isinstance(mod[entry], _LazyEntry)
    assert all(type(v) is float for v in by_float)
    np.testing.assert_array_equal(by_float, by_array)
    expect = (1 - np.tanh(xs) ** 2) * np.exp(-0.375 * xs) - 0.375 * np.tanh(xs) * np.exp(-0.375 * xs)
    np.testing.assert_allclose(by_array, expect, rtol=1e-14)
