"""The seed documents' examples, with their numbers (see /work/shared/seeds and examples/seed_*.py).

Tape/accumulator tests run on the NumPy interpreter; tests named ``*_compiled`` build Numba
kernels (about a second each, cached on disk afterwards).
"""
import numpy as np
import pytest

import symgrad as sg

RNG = np.random.default_rng(7)


# -- custom-gradient functions used throughout ----------------------------------------------------

def naive_log1pexp(x):
    return np.log(1 + np.exp(x))


@sg.custom_gradient
def log1pexp(x):
    e = np.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))             # = sigmoid(x), finite where e overflows
    return np.log(1 + e), grad


@sg.custom_gradient
def bar(x, y):
    def grad(upstream):
        return upstream * y, upstream * x
    return x * y, grad


def _nested_op(name, forward, second):
    """``x**3`` whose grad_fn is itself a custom_gradient function (TensorFlow's first nesting pattern).

    ``second(x)`` is what the innermost rule multiplies ``ddy`` by.  The innermost rule is the derivative
    of ``grad_fn`` with respect to its *upstream* argument ``dy`` (used to build forward mode from reverse
    mode), so the right choice is ``3 x**2``; ``6 x`` (the second derivative of ``x**3``) is the pitfall.
    ``forward`` spells x**3 differently per variant so that compiled kernels are not shared (report item 4).
    """
    def cube(x):
        @sg.custom_gradient
        def grad_fn(dy):
            def grad_grad_fn(ddy):
                return ddy * second(x)
            return dy * 3 * x ** 2, grad_grad_fn
        return forward(x), grad_fn
    cube.__name__ = cube.__qualname__ = name
    return sg.custom_gradient(cube)


cube_nested = _nested_op("cube_nested", lambda x: x ** 3, lambda x: 3 * x ** 2)
cube_nested_pitfall = _nested_op("cube_nested_pitfall", lambda x: x * x * x, lambda x: 6 * x)


@sg.custom_gradient
def cube_fused(x):
    """``x**3`` with TensorFlow's second pattern: the first-order gradient is itself a custom_gradient
    function *of x*, whose rule gives the second derivative ``6 x``."""
    y, x_grad = x ** 2 * x, 3 * x ** 2

    def first_order_gradient(dy):
        @sg.custom_gradient
        def first_order_custom(unused_x):
            def second_order(ddy):
                return ddy * 6 * x
            return x_grad, second_order
        return dy * first_order_custom(x)
    return y, first_order_gradient


# -- tf.custom_gradient: log1pexp ------------------------------------------------------------------

def test_log1pexp_naive_gradient_is_nan_compiled():
    g = sg.grad(naive_log1pexp, stabilize=False)
    assert np.isnan(g(np.float32(100.0)))
    assert np.isnan(g(np.float64(1000.0)))
    assert g(np.float64(100.0)) == 1.0                 # float64 only overflows later


def test_log1pexp_custom_gradient_is_one_compiled():
    g = sg.grad(log1pexp)
    out32 = g(np.float32(100.0))
    assert out32 == 1.0 and np.asarray(out32).dtype == np.float32
    np.testing.assert_array_equal(g(np.array([1000.0, 100.0])), [1.0, 1.0])
    assert g(0.0) == 0.5


@pytest.mark.parametrize("dtype,x", [(np.float32, 100.0), (np.float64, 1000.0)])
def test_log1pexp_on_the_tape(dtype, x):
    x = sg.constant(x, dtype)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        naive, custom = naive_log1pexp(x), log1pexp(x)
    assert np.isnan(tape.gradient(naive, x).numpy())
    grad = tape.gradient(custom, x)
    assert grad.dtype == dtype and grad.numpy() == 1.0


# -- tf.custom_gradient: x * y with a persistent tape -----------------------------------------------

def test_bar_persistent_tape():
    x, y = sg.constant(2.0, np.float32), sg.constant(3.0, np.float32)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(y)
        z = bar(x, y)
    assert z.numpy() == 6.0 and z.dtype == np.float32
    assert tape.gradient(z, x).numpy() == 3.0
    assert tape.gradient(z, y).numpy() == 2.0


# -- tf.custom_gradient with variables -----------------------------------------------------------------

def _linear_poly_setup():
    weights = sg.Variable(np.ones(2, dtype=np.float32), name="weights")
    seen = {}

    @sg.custom_gradient
    def linear_poly(x):
        w = sg.convert_to_tensor(weights)
        poly = w[1] * x + w[0]

        def grad_fn(dpoly, variables=None):
            seen["variables"] = variables
            grad_xs = dpoly * w[1]
            dy_dw = dpoly * np.stack([x ** 1, x ** 0])
            return grad_xs, [np.sum(np.reshape(dy_dw, (2, -1)), axis=1)]
        return poly, grad_fn
    return weights, linear_poly, seen


def test_linear_poly_with_variables():
    weights, linear_poly, seen = _linear_poly_setup()
    x = sg.constant([1.0, 2.0, 3.0], np.float32)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        poly = linear_poly(x)
    np.testing.assert_array_equal(poly.numpy(), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(poly, x).numpy(), [1.0, 1.0, 1.0])
    dw = tape.gradient(poly, weights)
    assert dw.dtype == np.float32
    np.testing.assert_array_equal(dw.numpy(), [6.0, 3.0])
    assert len(seen["variables"]) == 1


def test_linear_poly_receives_the_variable_objects():
    weights, linear_poly, seen = _linear_poly_setup()
    with sg.GradientTape() as tape:
        x = sg.constant([1.0, 2.0, 3.0])
        tape.watch(x)
        linear_poly(x)
    assert seen["variables"][0] is weights


def test_custom_gradient_variables_in_forward_mode():
    weights, linear_poly, _ = _linear_poly_setup()
    x = sg.constant([1.0, 2.0, 3.0])
    with sg.ForwardAccumulator(weights, np.array([1.0, 0.0])) as acc:
        poly = linear_poly(x)
    # Forward mode transposes the user's rule, which pairs weights[0] with x (the seed's rule: the
    # gradient [6, 3] is [sum(x), sum(1)]), so the JVP along weights[0] is x, not d(w[1] x + w[0])/dw[0].
    np.testing.assert_array_equal(acc.jvp(poly).numpy(), [1.0, 2.0, 3.0])


# -- rule errors --------------------------------------------------------------------------------------

def test_rule_error_wrong_arity():
    @sg.custom_gradient
    def two_args(x, y):
        return x * y, lambda up: up * y                 # one gradient for two inputs
    x, y = sg.constant(1.0), sg.constant(2.0)
    with pytest.raises(sg.RuleError, match="two_args"):
        two_args(x, y)


def test_rule_error_wrong_shape():
    @sg.custom_gradient
    def shape_bug(x):
        return np.sum(x), lambda up: up * np.ones(3)
    with pytest.raises(sg.RuleError, match="shape_bug"):
        shape_bug(sg.constant([1.0, 2.0]))


def test_rule_error_missing_variables_keyword():
    v = sg.Variable(2.0)

    @sg.custom_gradient
    def reads_variable(x):
        return x * sg.convert_to_tensor(v), lambda up: up * 2.0
    with sg.GradientTape():
        with pytest.raises(sg.RuleError, match="reads_variable"):
            reads_variable(sg.constant(1.0))


def test_rule_error_wrong_arity_compiled_trace():
    @sg.custom_gradient
    def arity_bug(x, y):
        return x * y, lambda up: (up,)
    with pytest.raises(sg.RuleError, match="arity_bug"):
        sg.grad(arity_bug)(1.0, 2.0)                    # raised while tracing, before compiling


# -- Rop via two Lops (Japanese article) --------------------------------------------------------------

def layer(x, W, b):
    return np.tanh(W @ x + b)


def rop_two_lops_tape(f, primals, k, v):
    """J_k v for argument ``k`` by two VJPs: g(w) = J^T w, then the VJP of the linear map w -> g(w)."""
    xs = [sg.constant(p) for p in primals]
    y0 = f(*xs)
    w = sg.constant(np.zeros(y0.shape))                # any value: g is linear in w
    with sg.GradientTape() as outer:
        outer.watch(w)
        with sg.GradientTape() as inner:
            inner.watch(xs[k])
            y = f(*xs)
        g = inner.gradient(y, xs[k], output_gradients=w)   # Lop(f, x, w) = J^T w
    return outer.gradient(g, w, output_gradients=v)         # Lop(g, w, v) = J v


def test_rop_via_two_lops_on_the_tape():
    n, m = 4, 3
    for _ in range(3):
        x, W, b = RNG.standard_normal(n), RNG.standard_normal((m, n)), RNG.standard_normal(m)
        v = RNG.standard_normal(n)
        jv = np.asarray(rop_two_lops_tape(layer, (x, W, b), 0, v))
        np.testing.assert_allclose(jv, (1 - np.tanh(W @ x + b) ** 2) * (W @ v), rtol=1e-13)
        xs = sg.constant(x)
        with sg.ForwardAccumulator(xs, v) as acc:
            y = layer(xs, sg.constant(W), sg.constant(b))
        np.testing.assert_allclose(jv, np.asarray(acc.jvp(y)), rtol=1e-13)


def test_rop_via_two_lops_compiled():
    sig = "(n),(m,n),(m)->(m)"

    def lop_layer(x, W, b, w):                         # J^T w, itself a traced function of w
        return sg.grad(lambda x_: np.dot(w, layer(x_, W, b)), signature="(n)->()")(x)

    n, m = 4, 3
    x, W, b = RNG.standard_normal(n), RNG.standard_normal((m, n)), RNG.standard_normal(m)
    w0 = np.zeros(m)
    for _ in range(3):
        v = RNG.standard_normal(n)
        _, vjp_fn = sg.vjp(lop_layer, x, W, b, w0, signature="(n),(m,n),(m),(m)->(n)")
        rop = vjp_fn(v)[3]                              # Lop(Lop(f, x, w), w, v)
        _, jv = sg.jvp(layer, (x, W, b), (v, np.zeros_like(W), np.zeros_like(b)), signature=sig)
        np.testing.assert_allclose(rop, jv, rtol=1e-13, atol=1e-15)
        x = RNG.standard_normal(n)


# -- tf.autodiff.ForwardAccumulator -------------------------------------------------------------------

def test_nested_accumulators_higher_order():
    primal = sg.constant(1.1, np.float32)
    with sg.ForwardAccumulator(primal, sg.constant(1.0, np.float32)) as outer:
        with sg.ForwardAccumulator(primal, sg.constant(1.0, np.float32)) as inner:
            primal_out = primal ** 3.5
    inner_jvp = inner.jvp(primal_out)
    assert inner_jvp.dtype == np.float32
    assert inner_jvp.numpy() == np.float32(4.4417057)            # 3.5 * 1.1 ** 2.5
    assert outer.jvp(inner_jvp).numpy() == np.float32(10.094786)  # 3.5 * 2.5 * 1.1 ** 1.5


def test_forward_over_backward_hvp():
    v = sg.Variable(np.array([1.0, 2.0], dtype=np.float32))
    with sg.ForwardAccumulator(v, np.array([1.0, 0.0], dtype=np.float32)) as acc:
        with sg.GradientTape() as tape:
            y = np.sum(sg.convert_to_tensor(v) ** 3.0)
        backward = tape.gradient(y, v)
    np.testing.assert_array_equal(backward.numpy(), [3.0, 12.0])
    np.testing.assert_array_equal(acc.jvp(backward).numpy(), [6.0, 0.0])
    assert backward.dtype == np.float32


def test_linear_regression_columns_of_jvps_equal_gradient():
    x = np.array([[2.0, 3.0], [1.0, 4.0]])
    kernel = sg.Variable(np.array([[0.3], [-0.7]]), name="kernel")
    bias = sg.Variable(np.array([0.2]), name="bias")

    def loss_fn():
        dense = sg.constant(x) @ kernel + bias                # (2, 1)
        return np.sum((dense - np.array([1.0, -1.0])) ** 2.0)  # broadcasts to (2, 2), as in the seed

    kernel_fprop = []
    for column in (np.array([[1.0], [0.0]]), np.array([[0.0], [1.0]])):
        with sg.ForwardAccumulator(kernel, column) as acc:
            kernel_fprop.append(acc.jvp(loss_fn()).numpy())
    with sg.ForwardAccumulator(bias, np.array([1.0])) as acc:
        bias_fprop = acc.jvp(loss_fn()).numpy()
    with sg.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad, bias_grad = tape.gradient(loss, (kernel, bias))
    np.testing.assert_allclose(np.asarray(kernel_grad), np.stack(kernel_fprop)[:, np.newaxis], rtol=1e-14)
    np.testing.assert_allclose(np.asarray(bias_grad), bias_fprop[np.newaxis], rtol=1e-14)
    # and both equal the hand-derived gradient
    r = x @ kernel.value + bias.value - np.array([1.0, -1.0])
    np.testing.assert_allclose(np.asarray(kernel_grad), x.T @ (2 * r).sum(axis=1, keepdims=True), rtol=1e-14)


# -- backprop in a small graph engine (Chinese article) ---------------------------------------------

def test_chain_rule_loss_z_times_x_plus_y():
    x, y, z = sg.constant(2.0), sg.constant(3.0), sg.constant(6.0)
    with sg.GradientTape() as tape:
        tape.watch([x, y, z])
        loss = z * (x + y)
    dx, dy, dz = (float(d) for d in tape.gradient(loss, [x, y, z]))
    assert (float(loss), dx, dy, dz) == (30.0, 6.0, 6.0, 5.0)   # dL/dx = z, dL/dz = x + y


def test_square_gradient():
    a, G = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    x = sg.constant(a)
    with sg.GradientTape() as tape:
        tape.watch(x)
        out = np.square(x)
    np.testing.assert_allclose(np.asarray(tape.gradient(out, x, output_gradients=G)), G * 2 * a, rtol=1e-15)


@pytest.mark.parametrize("b_shape,reduce", [
    ((), lambda G: G.sum()),
    ((2,), lambda G: G.sum(axis=0)),                   # a row, repeated down the rows
    ((3, 1), lambda G: G.sum(axis=1, keepdims=True)),  # a column, repeated across the columns
    ((1, 2), lambda G: G.sum(axis=0, keepdims=True)),
])
def test_broadcasting_add_reduces_upstream_gradient(b_shape, reduce):
    A, b = RNG.standard_normal((3, 2)), RNG.standard_normal(b_shape)
    G = RNG.standard_normal((3, 2))
    a_t, b_t = sg.constant(A), sg.constant(b)
    with sg.GradientTape() as tape:
        tape.watch([a_t, b_t])
        C = a_t + b_t
    dA, db = tape.gradient(C, [a_t, b_t], output_gradients=G)
    np.testing.assert_array_equal(np.asarray(dA), G)
    assert db.shape == b_shape
    np.testing.assert_allclose(np.asarray(db), reduce(G), rtol=1e-15)


def test_matmul_gradients_tape():
    M, N, K = 3, 4, 2
    A, B, G = RNG.standard_normal((M, N)), RNG.standard_normal((N, K)), RNG.standard_normal((M, K))
    a_t, b_t = sg.constant(A), sg.constant(B)
    with sg.GradientTape() as tape:
        tape.watch([a_t, b_t])
        C = a_t @ b_t
    dA, dB = tape.gradient(C, [a_t, b_t], output_gradients=G)
    np.testing.assert_allclose(np.asarray(dA), G @ B.T, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(dB), A.T @ G, rtol=1e-14)


# -- nesting custom gradients (tf.custom_gradient documentation) -------------------------------------

def _tape_first_and_second(f, x0):
    x = sg.constant(x0)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    h = outer.gradient(g, x, unconnected_gradients="zero")
    with sg.ForwardAccumulator(x, 1.0) as acc:
        y2 = f(x)
    return float(g), float(h), float(acc.jvp(y2))


def test_nested_pattern_inner_rule_is_derivative_wrt_upstream():
    grad, second, jvp = _tape_first_and_second(cube_nested, 3.0)
    assert grad == 27.0 and jvp == 27.0    # forward mode uses grad_grad_fn: correct only if it is 3 x^2
    assert second == 0.0                   # NOT 6 x = 18: x is captured, so no second derivative flows


def test_nested_pattern_pitfall_second_derivative_breaks_forward_mode():
    grad, second, jvp = _tape_first_and_second(cube_nested_pitfall, 3.0)
    assert grad == 27.0
    assert jvp == 18.0                     # 6 x: wrong, the JVP of x**3 at 3 is 27


def test_fused_pattern_gives_true_second_derivative():
    grad, second, jvp = _tape_first_and_second(cube_fused, 3.0)
    assert (grad, second, jvp) == (27.0, 18.0, 27.0)


def test_fused_pattern_compiled():
    assert float(sg.hessian(cube_fused)(3.0)) == 18.0
    _, jv = sg.jvp(cube_nested_pitfall, (3.0,), (1.0,))
    assert float(jv) == 18.0


# -- stop_gradient ------------------------------------------------------------------------------------

def sg_product(x):
    return x ** 2 * sg.stop_gradient(x)


def test_stop_gradient_every_mode_compiled():
    x = 1.5
    assert float(sg.jit(sg_product)(x)) == x ** 3                 # identity forward
    assert float(sg.grad(sg_product)(x)) == 2 * x * x             # only d(x**2)
    assert float(sg.jvp(sg_product, (x,), (1.0,))[1]) == 2 * x * x
    assert float(sg.hessian(sg_product)(x)) == 2 * x


def test_stop_gradient_every_mode_eager():
    x = sg.constant(1.5)
    with sg.ForwardAccumulator(x, 1.0) as acc:
        with sg.GradientTape() as outer:
            outer.watch(x)
            with sg.GradientTape() as inner:
                inner.watch(x)
                y = sg_product(x)
            g = inner.gradient(y, x)
        h = outer.gradient(g, x)
    assert (float(y), float(g), float(h), float(acc.jvp(y)), float(acc.jvp(g))) == (3.375, 4.5, 3.0, 4.5, 3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        z = sg.stop_gradient(x * 2)
    assert tape.gradient(z, x) is None


# -- <w, J v> == <J^T w, v> for every custom-gradient function (compiled) ------------------------------

TRANSPOSE_CASES = [
    pytest.param(log1pexp, (0.7,), id="log1pexp"),
    pytest.param(bar, (2.0, 3.0), id="bar"),
    pytest.param(cube_fused, (1.3,), id="cube_fused"),
    pytest.param(cube_nested, (1.3,), id="cube_nested"),
]


@pytest.mark.parametrize("fun,primals", TRANSPOSE_CASES)
def test_custom_gradient_jvp_is_transpose_of_vjp_compiled(fun, primals):
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = tuple(rng.standard_normal(len(primals)))
        w = rng.standard_normal()
        _, jv = sg.jvp(fun, primals, v)
        _, vjp_fn = sg.vjp(fun, *primals)
        vj = vjp_fn(w)
        np.testing.assert_allclose(w * float(jv), float(np.dot(np.array(vj, dtype=float), v)), rtol=1e-13)
        primals = tuple(p + 0.25 for p in primals)
