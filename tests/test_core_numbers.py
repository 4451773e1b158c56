"""Core transformations checked against numbers known in closed form.

Compiled callables are created once at module level and reused; arguments of
the traced functions are named per-file (``x``, ``v``, ...) and bodies are
distinct, so no two functions here share a compiled module.
"""
import numpy as np
import pytest

import symgrad as sg

RNG_SEED = 12345


def _fd_jacobian(f, x, h=1e-6):
    """Central finite-difference Jacobian of a vector function (NumPy reference)."""
    x = np.asarray(x, dtype=float)
    f0 = np.atleast_1d(f(x))
    J = np.empty((f0.size, x.size))
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        J[:, j] = (np.atleast_1d(f(x + e)) - np.atleast_1d(f(x - e))) / (2 * h)
    return J


# --------------------------------------------------------------------------------------------
# x ** 3.5
# --------------------------------------------------------------------------------------------

def power35(x):
    return x ** 3.5


power35_grad = sg.grad(power35)
power35_hess = sg.hessian(power35)


def test_power_derivative_float64():
    # d/dx x^3.5 = 3.5 x^2.5;  at 1.1: 4.44170569...
    assert power35_grad(1.1) == pytest.approx(3.5 * 1.1 ** 2.5, rel=1e-15)
    assert power35_grad(1.1) == pytest.approx(4.4417057, abs=5e-7)


def test_power_derivative_float32():
    out = power35_grad(np.float32(1.1))
    assert np.asarray(out).dtype == np.float32
    ref = 3.5 * float(np.float32(1.1)) ** 2.5
    assert abs(float(out) - ref) <= 4 * np.finfo(np.float32).eps * ref
    assert float(out) == pytest.approx(4.4417057, rel=1e-6)
    arr = power35_grad(np.full(3, 1.1, dtype=np.float32))
    assert arr.dtype == np.float32 and arr.shape == (3,)
    np.testing.assert_allclose(arr, ref, rtol=4 * np.finfo(np.float32).eps)


def test_power_second_derivative_via_hessian():
    # d2/dx2 x^3.5 = 8.75 x^1.5;  at 1.1: 10.0947862...
    assert power35_hess(1.1) == pytest.approx(8.75 * 1.1 ** 1.5, rel=1e-14)
    assert power35_hess(1.1) == pytest.approx(10.094786, abs=1e-6)


def test_power_second_derivative_nested_grad():
    inner = sg.grad(power35)
    assert sg.grad(inner)(1.1) == pytest.approx(8.75 * 1.1 ** 1.5, rel=1e-14)


# --------------------------------------------------------------------------------------------
# sum(v ** 3) with signature "(n)->()"
# --------------------------------------------------------------------------------------------

def sum_cubes(v):
    return np.sum(v ** 3)


sum_cubes_grad = sg.grad(sum_cubes, signature="(n)->()")


def test_sum_cubes_gradient_and_hvp():
    v = np.array([1.0, 2.0])
    np.testing.assert_array_equal(sum_cubes_grad(v), [3.0, 12.0])
    np.testing.assert_array_equal(sg.hvp(sum_cubes, (v,), (np.array([1.0, 0.0]),), signature="(n)->()"),
                                  [6.0, 0.0])
    np.testing.assert_array_equal(sg.hvp(sum_cubes, (v,), (np.array([0.0, 1.0]),), signature="(n)->()"),
                                  [0.0, 12.0])


# --------------------------------------------------------------------------------------------
# log(1 + exp(x)) and np.where
# --------------------------------------------------------------------------------------------

def log1pexp(x):
    return np.log(1 + np.exp(x))


log1pexp_grad = sg.grad(log1pexp)


def test_log1pexp_gradient_at_zero():
    assert log1pexp_grad(0.0) == 0.5  # sigmoid(0) = 1/2 exactly


def test_log1pexp_gradient_large_array_float64():
    x = np.random.default_rng(RNG_SEED).uniform(-20.0, 20.0, 10 ** 6)
    g = log1pexp_grad(x)
    assert g.shape == x.shape and g.dtype == np.float64
    np.testing.assert_allclose(g, np.exp(x) / (1 + np.exp(x)), rtol=1e-13, atol=0)


def test_log1pexp_gradient_float32_and_no_overflow():
    x32 = np.linspace(-20, 20, 1001, dtype=np.float32)
    g32 = log1pexp_grad(x32)
    assert g32.dtype == np.float32
    ref = np.exp(x32.astype(np.float64)) / (1 + np.exp(x32.astype(np.float64)))
    np.testing.assert_allclose(g32, ref, rtol=1e-6)
    # the naive derivative exp(x)/(1+exp(x)) overflows to nan at x=1000; the compiled one must not
    g = log1pexp_grad(np.array([-1000.0, 1000.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0])


def where_sqrt(x):
    return np.where(x >= 0, x, np.sqrt(-x))


where_sqrt_grad = sg.grad(where_sqrt)


def test_where_takes_only_the_live_branch():
    g = where_sqrt_grad(1.0)
    assert g == 1.0 and not np.isnan(g)
    assert where_sqrt_grad(-4.0) == pytest.approx(-0.25, rel=1e-15)
    # arrays, including the boundary x = 0 (x >= 0 branch) and huge values
    ga = where_sqrt_grad(np.array([1.0, 100.0, 0.0, -4.0, -1e300]))
    np.testing.assert_array_equal(ga[:3], [1.0, 1.0, 1.0])
    assert ga[3] == pytest.approx(-0.25, rel=1e-15)
    assert np.all(np.isfinite(ga))


def test_grad_at_100_is_exactly_one():
    assert where_sqrt_grad(100.0) == 1.0


# --------------------------------------------------------------------------------------------
# broadcasting, argnums, value_and_grad, pytrees
# --------------------------------------------------------------------------------------------

def prod_sin(x, y):
    return np.sin(x) * y ** 2


prod_sin_jit = sg.jit(prod_sin)
prod_sin_grad01 = sg.grad(prod_sin, argnums=(0, 1))
prod_sin_vg = sg.value_and_grad(prod_sin, argnums=1)


def test_broadcasting_scalar_cores():
    rng = np.random.default_rng(RNG_SEED)
    x = rng.standard_normal((3, 1))
    y = rng.standard_normal(4)
    out = prod_sin_jit(x, y)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out, np.sin(x) * y ** 2, rtol=1e-15)
    gx, gy = prod_sin_grad01(x, y)
    assert gx.shape == (3, 4) and gy.shape == (3, 4)  # elementwise derivatives, broadcast shape
    np.testing.assert_allclose(gx, np.cos(x) * y ** 2, rtol=1e-14)
    np.testing.assert_allclose(gy, np.sin(x) * 2 * y, rtol=1e-14)


def test_argnums_tuple_and_value_and_grad():
    gx, gy = prod_sin_grad01(0.5, 3.0)
    assert gx == pytest.approx(np.cos(0.5) * 9.0, rel=1e-15)
    assert gy == pytest.approx(np.sin(0.5) * 6.0, rel=1e-15)
    val, g = prod_sin_vg(0.5, 3.0)
    assert val == pytest.approx(np.sin(0.5) * 9.0, rel=1e-15)
    assert g == pytest.approx(np.sin(0.5) * 6.0, rel=1e-15)


def dict_fn(p):
    return p["a"] * np.exp(p["b"]) + p["c"][0] * p["c"][1]


def tuple_out(x):
    return {"s": np.sin(x), "pair": (np.cos(x), 2.0 * x)}


def test_pytree_dict_and_tuple_inputs():
    params = {"a": 2.0, "b": 0.5, "c": (3.0, 4.0)}
    g = sg.grad(dict_fn)(params)
    assert set(g) == {"a", "b", "c"} and isinstance(g["c"], tuple)
    assert g["a"] == pytest.approx(np.exp(0.5), rel=1e-15)
    assert g["b"] == pytest.approx(2.0 * np.exp(0.5), rel=1e-15)
    assert g["c"][0] == 4.0 and g["c"][1] == 3.0


def test_pytree_outputs_jit_and_jvp():
    out = sg.jit(tuple_out)(0.3)
    assert set(out) == {"s", "pair"}
    assert out["s"] == pytest.approx(np.sin(0.3), rel=1e-15)
    assert out["pair"][0] == pytest.approx(np.cos(0.3), rel=1e-15)
    assert out["pair"][1] == 0.6
    y, ydot = sg.jvp(tuple_out, (0.3,), (2.0,))
    assert ydot["s"] == pytest.approx(2.0 * np.cos(0.3), rel=1e-15)
    assert ydot["pair"][0] == pytest.approx(-2.0 * np.sin(0.3), rel=1e-15)
    assert ydot["pair"][1] == 4.0


# --------------------------------------------------------------------------------------------
# jacobian (both modes), hessian, vjp/jvp transpose identity
# --------------------------------------------------------------------------------------------

def two_to_three(x):
    return np.array([x[0] * x[1], np.sin(x[0]), x[1] ** 2 * np.exp(x[0])])


def three_to_one(x):
    return np.sum(x ** 2) * np.tanh(x[:1]) + x[2:3] * x[1]


@pytest.mark.parametrize("fn, n", [(two_to_three, 2), (three_to_one, 3)], ids=["2to3_forward", "3to1_reverse"])
def test_jacobian_vs_finite_differences(fn, n):
    x = np.random.default_rng(RNG_SEED).uniform(-1, 1, n)
    J = sg.jacobian(fn, signature="(n)->(m)")(x)
    ref = _fd_jacobian(fn, x)
    assert J.shape == ref.shape
    np.testing.assert_allclose(J, ref, rtol=1e-7, atol=1e-8)


def test_jacobian_closed_form_and_batch():
    jac = sg.jacobian(two_to_three, signature="(n)->(m)")
    xb = np.random.default_rng(RNG_SEED).uniform(-1, 1, (4, 2))
    Jb = jac(xb)
    assert Jb.shape == (4, 3, 2)
    for x, J in zip(xb, Jb):
        ref = np.array([[x[1], x[0]], [np.cos(x[0]), 0.0],
                        [x[1] ** 2 * np.exp(x[0]), 2 * x[1] * np.exp(x[0])]])
        np.testing.assert_allclose(J, ref, rtol=1e-14, atol=1e-15)


def quartic(x):
    return np.sum(x ** 4) + x[0] * x[1] * x[2]


def test_hessian_closed_form():
    x = np.array([0.5, -1.5, 2.0])
    H = sg.hessian(quartic, signature="(n)->()")(x)
    ref = np.diag(12 * x ** 2) + np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])
    np.testing.assert_allclose(H, ref, rtol=1e-15, atol=0)


def network(x, W):
    return np.tanh(W @ x) * np.exp(-0.5 * (W @ x) ** 2)


def test_vjp_jvp_transpose_identity_on_small_network():
    rng = np.random.default_rng(RNG_SEED)
    n, m = 5, 4
    x, W = rng.standard_normal(n), rng.standard_normal((m, n))
    xd, Wd = rng.standard_normal(n), rng.standard_normal((m, n))
    ybar = rng.standard_normal(m)
    sig = "(n),(m,n)->(m)"
    y, ydot = sg.jvp(network, (x, W), (xd, Wd), signature=sig)
    y2, vjp_fn = sg.vjp(network, x, W, signature=sig)
    xbar, Wbar = vjp_fn(ybar)
    np.testing.assert_allclose(y, network(x, W), rtol=1e-14)
    np.testing.assert_allclose(y2, y, rtol=0, atol=0)
    lhs = ybar @ ydot
    rhs = xbar @ xd + np.sum(Wbar * Wd)
    assert lhs == pytest.approx(rhs, rel=1e-12)
    # and J v against finite differences
    h = 1e-6
    fd = (network(x + h * xd, W + h * Wd) - network(x - h * xd, W - h * Wd)) / (2 * h)
    np.testing.assert_allclose(ydot, fd, rtol=1e-7, atol=1e-9)


# --------------------------------------------------------------------------------------------
# The seed article's graph-engine checks
# --------------------------------------------------------------------------------------------

def article_loss(x, y, z):
    return z * (x + y)


def test_article_product_of_sum():
    gx, gy, gz = sg.grad(article_loss, argnums=(0, 1, 2))(2.0, -3.0, 4.0)
    assert (gx, gy, gz) == (4.0, 4.0, -1.0)  # dL/dx = z, dL/dy = z, dL/dz = x + y


def bias_add(a, b):
    return a + b


def test_broadcast_add_reduces_upstream_gradient():
    rng = np.random.default_rng(RNG_SEED)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    G = rng.standard_normal((3, 4))
    out, vjp_fn = sg.vjp(bias_add, a, b, signature="(m,n),(n)->(m,n)")
    np.testing.assert_allclose(out, a + b, rtol=1e-15)
    abar, bbar = vjp_fn(G)
    assert abar.shape == (3, 4) and bbar.shape == (4,)
    np.testing.assert_array_equal(abar, G)
    np.testing.assert_allclose(bbar, G.sum(axis=0), rtol=1e-15)


def matmul_ab(A, B):
    return A @ B


def test_matmul_vjp_is_G_Bt_and_At_G():
    rng = np.random.default_rng(RNG_SEED)
    A, B, G = rng.standard_normal((3, 5)), rng.standard_normal((5, 2)), rng.standard_normal((3, 2))
    C, vjp_fn = sg.vjp(matmul_ab, A, B, signature="(m,n),(n,k)->(m,k)")
    np.testing.assert_allclose(C, A @ B, rtol=1e-14)
    Abar, Bbar = vjp_fn(G)
    np.testing.assert_allclose(Abar, G @ B.T, rtol=1e-13)
    np.testing.assert_allclose(Bbar, A.T @ G, rtol=1e-13)


# --------------------------------------------------------------------------------------------
# numpy surface: reductions, indexing, stacking, kinks, closures, loops
# --------------------------------------------------------------------------------------------

CONST_W = np.array([0.5, -1.0, 2.0, 3.0])


def np_surface(v):
    a = np.sum(v ** 2) + np.mean(np.sin(v))
    b = np.dot(v, CONST_W) + v @ v[::-1]
    c = v[0] * v[-1] + np.sum(v[1:3] ** 3)
    s = np.stack([v[0], v[1]])
    d = np.sum(np.concatenate([s, v[2:] * 2.0]) * CONST_W)
    e = np.sum(np.tanh(v)) + np.logaddexp(v[0], v[1])
    return a + b + c + d + e


def np_surface_grad_ref(v):
    n = v.size
    g = 2 * v + np.cos(v) / n
    g = g + CONST_W + 2 * v[::-1]
    g[0] += v[-1]
    g[-1] += v[0]
    g[1:3] += 3 * v[1:3] ** 2
    g = g + CONST_W * np.array([1.0, 1.0, 2.0, 2.0])
    g = g + (1 - np.tanh(v) ** 2)
    s0 = 1 / (1 + np.exp(v[1] - v[0]))
    g[0] += s0
    g[1] += 1 - s0
    return g


def test_numpy_surface_gradient():
    f = sg.value_and_grad(np_surface, signature="(n)->()")
    rng = np.random.default_rng(RNG_SEED)
    for v in rng.standard_normal((3, 4)):
        val, g = f(v)
        assert val == pytest.approx(np_surface(v), rel=1e-14)
        np.testing.assert_allclose(g, np_surface_grad_ref(v), rtol=1e-13, atol=1e-14)


def kinks(x, y):
    return np.abs(x) + 2.0 * np.maximum(x, y) + 3.0 * np.minimum(x, y)


def test_kink_conventions():
    """abs'(0) = 0; maximum/minimum at a tie split the derivative, 1/2 to each argument (JAX's values:
    jax.grad of jnp.maximum(x, y) at x == y is 0.5 for each; jax.grad(jnp.abs)(0.) is 1, symgrad keeps
    the minimal-norm subgradient 0)."""
    gk = sg.grad(kinks, argnums=(0, 1))
    x = np.array([0.0, 0.0, 2.0, -2.0, 1.0, -1.0, 0.5])
    y = np.array([0.0, 1.0, 1.0, 1.0, 3.0, -3.0, 0.5])
    gx, gy = gk(x, y)
    dmax_x = np.where(x == y, 0.5, (x > y).astype(float))
    dmin_x = np.where(x == y, 0.5, (x < y).astype(float))
    np.testing.assert_array_equal(gx, np.sign(x) + 2 * dmax_x + 3 * dmin_x)
    np.testing.assert_array_equal(gy, 2 * (1 - dmax_x) + 3 * (1 - dmin_x))
    # spelled out at the tie x == y == 0: d/dx = 0 (abs) + 2/2 + 3/2, d/dy = 2/2 + 3/2
    assert gx[0] == 2.5 and gy[0] == 2.5
    # ReLU spelled np.maximum(x, 0) has derivative 1/2 at 0 either way round (jax.nn.relu's 0: np.where)
    assert sg.grad(lambda rx: np.maximum(rx, 0.0))(0.0) == 0.5
    assert sg.grad(lambda rx: np.maximum(0.0, rx))(0.0) == 0.5
    assert sg.grad(lambda rx: np.where(rx > 0, rx, 0.0))(0.0) == 0.0


def clip_unit(cx):
    return np.clip(cx, -1.0, 1.0)


CLIP_X = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0])


def test_clip_values():
    np.testing.assert_array_equal(sg.jit(clip_unit)(CLIP_X), np.clip(CLIP_X, -1.0, 1.0))


def test_clip_derivative():
    # clip = minimum(maximum(x, lo), hi): derivative 1 inside (lo, hi), 1/2 at the bounds (a tie, as
    # jax.grad(jnp.clip) gives), 0 outside
    g = sg.grad(clip_unit)(CLIP_X)
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0, 1.0, 1.0, 0.5, 0.0])


def unrolled_poly(x):
    acc = 0.0
    for k in range(1, 6):
        acc = acc + k * x ** k
    return acc


def test_python_loop_over_fixed_range():
    g = sg.grad(unrolled_poly)
    x = np.array([-1.5, 0.0, 0.5, 2.0])
    ref = sum(k * k * x ** (k - 1) for k in range(1, 6))
    np.testing.assert_allclose(g(x), ref, rtol=1e-14)


def test_closure_over_constant_array():
    f = sg.grad(lambda v: np.sum(CONST_W * v ** 2) + CONST_W @ np.exp(v), signature="(n)->()")
    v = np.array([0.1, 0.2, -0.3, 0.4])
    np.testing.assert_allclose(f(v), 2 * CONST_W * v + CONST_W * np.exp(v), rtol=1e-14)


# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

def test_float32_in_float32_out_for_jit_and_grad():
    x32 = np.array([0.25, 0.5, 2.0], dtype=np.float32)
    y32 = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    out = prod_sin_jit(x32, y32)
    gx, gy = prod_sin_grad01(x32, y32)
    assert out.dtype == np.float32 and gx.dtype == np.float32 and gy.dtype == np.float32
    x, y = x32.astype(float), y32.astype(float)
    np.testing.assert_allclose(out, np.sin(x) * y ** 2, rtol=1e-6)
    np.testing.assert_allclose(gx, np.cos(x) * y ** 2, rtol=1e-6)
    np.testing.assert_allclose(gy, 2 * np.sin(x) * y, rtol=1e-6)
    # float32 array with a Python float: the Python float is weakly typed, result stays float32
    assert prod_sin_jit(x32, 2.0).dtype == np.float32
    # float32 mixed with float64 arrays promotes like NumPy
    assert prod_sin_jit(x32, y32.astype(np.float64)).dtype == np.float64


def test_integer_input_is_float64():
    out = power35_grad(np.array([1, 4]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, 3.5 * np.array([1.0, 4.0]) ** 2.5, rtol=1e-15)


# --------------------------------------------------------------------------------------------
# Regression: functions with identical graphs but different names must not share one module
# --------------------------------------------------------------------------------------------

def test_same_body_different_names_both_compile():
    def first_q(qq):
        return np.cosh(qq) * 3.0

    def second_q(qq):
        return np.cosh(qq) * 3.0

    assert sg.jit(first_q)(0.5) == pytest.approx(3 * np.cosh(0.5))
    assert sg.jit(second_q)(0.5) == pytest.approx(3 * np.cosh(0.5))


def log_only(lx):
    return np.log(lx)


# regression: the stabilize pass once crashed on a -inf reference value for np.log
def test_jit_of_log_with_default_stabilize():
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(sg.jit(log_only)(x), np.log(x), rtol=1e-15)


def test_jit_of_log_without_stabilize():
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(sg.jit(log_only, stabilize=False)(x), np.log(x), rtol=1e-15)
    np.testing.assert_allclose(sg.grad(log_only)(x), 1 / x, rtol=1e-15)


def test_forward_code_keeps_numpy_semantics_for_untaken_branches():
    # where(x > 0, x, 0) * log(x) is NaN at x = -1 in NumPy (0 * nan); only derivative code may
    # treat the untaken branch as an exact zero
    f = lambda x: np.where(x > 0, x, 0.0) * np.log(x)  # noqa: E731
    xs = np.array([-1.0, 2.0])
    with np.errstate(invalid="ignore"):
        expected = f(xs)
    got = sg.jit(f, stabilize=False)(xs)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    assert got[1] == expected[1]


def test_forward_code_keeps_numpy_rounding_of_reciprocal_products():
    # x * (1 / y) rounds twice in NumPy; symgrad must not silently turn it into x / y
    f = lambda x, y: x * (1.0 / y)  # noqa: E731
    x, y = np.float64(0.6066357757671799), np.float64(0.7294965609839984)
    assert x * (1.0 / y) != x / y  # the two orders round differently here
    assert sg.jit(f, stabilize=False)(x, y) == x * (1.0 / y)
