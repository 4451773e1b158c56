"""With no signature: ufunc broadcasting for elementwise functions, JAX's semantics for the rest.

Expected values are closed forms (each also what jax.grad / jax.jacobian / jax.hessian return
in x64 for the same call, checked when the test was written).
"""
import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import SignatureError

X3 = np.array([0.3, -1.2, 2.0])


@pytest.mark.parametrize("f, expected", [
    (lambda x: np.sum(x) ** 2, lambda x: 2 * np.sum(x) * np.ones_like(x)),
    (lambda x: x.sum() ** 2, lambda x: 2 * np.sum(x) * np.ones_like(x)),
    (lambda x: np.mean(x ** 2), lambda x: 2 * x / x.size),
    (lambda x: np.prod(x), lambda x: np.array([x[1] * x[2], x[0] * x[2], x[0] * x[1]])),
    (lambda x: np.linalg.norm(x), lambda x: x / np.linalg.norm(x)),
    (lambda x: np.log(np.sum(np.exp(x))), lambda x: np.exp(x) / np.sum(np.exp(x))),
    (lambda x: np.sum(np.sin(x)) * np.sum(np.cos(x)),
     lambda x: np.cos(x) * np.sum(np.cos(x)) - np.sin(x) * np.sum(np.sin(x))),
    (lambda x: x @ x, lambda x: 2 * x),
    (lambda x: x[0] * x[1] + x[2], lambda x: np.array([x[1], x[0], 1.0])),
])
def test_grad_of_reductions_is_the_whole_array_gradient(f, expected):
    np.testing.assert_allclose(sg.grad(f)(X3), expected(X3), rtol=1e-13, atol=1e-15)


def test_jacobian_and_hessian_have_jax_shapes():
    x = np.array([1.0, 2.0, 4.0])
    s = x.sum()
    jac = sg.jacobian(lambda v: v / np.sum(v))(x)
    np.testing.assert_allclose(jac, np.eye(3) / s - np.outer(x, np.ones(3)) / s ** 2, rtol=1e-14)
    hess = sg.hessian(lambda v: np.sum(v) ** 3)(x)
    np.testing.assert_allclose(hess, 6 * s * np.ones((3, 3)), rtol=1e-14)
    stacked = sg.jacobian(lambda v: np.stack([v[0] * v[1], v[1] + v[2]]))(x)
    np.testing.assert_allclose(stacked, [[2.0, 1.0, 0.0], [0.0, 1.0, 1.0]])


def test_unpacking_in_an_ode_right_hand_side():
    def robertson(t, y):
        y1, y2, y3 = y
        return np.array([-0.04 * y1 + 1e4 * y2 * y3,
                         0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 ** 2,
                         3e7 * y2 ** 2])
    y = np.array([1.0, 2e-5, 0.1])
    jac = sg.jacobian(robertson, argnums=1)(0.0, y)
    expected = [[-0.04, 1e4 * y[2], 1e4 * y[1]],
                [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
                [0.0, 6e7 * y[1], 0.0]]
    np.testing.assert_allclose(jac, expected, rtol=1e-14)


def test_vjp_jvp_hvp_value_and_grad_follow_jax():
    f = lambda v: np.sum(v ** 3) * v  # noqa: E731
    x = np.array([1.0, -2.0, 0.5])
    s3 = np.sum(x ** 3)
    jac = np.diag(np.full(3, s3)) + np.outer(x, 3 * x ** 2)
    t = np.array([0.1, 0.2, -0.3])
    out, out_dot = sg.jvp(f, (x,), (t,))
    np.testing.assert_allclose(out, s3 * x, rtol=1e-14)
    np.testing.assert_allclose(out_dot, jac @ t, rtol=1e-13)
    out, vjp_fn = sg.vjp(f, x)
    np.testing.assert_allclose(vjp_fn(t)[0], jac.T @ t, rtol=1e-13)
    loss = lambda v: np.sum(v) ** 3  # noqa: E731
    np.testing.assert_allclose(sg.hvp(loss, (x,), (t,)), 6 * x.sum() * t.sum() * np.ones(3), rtol=1e-13)
    value, grad = sg.value_and_grad(loss)(x)
    assert value == pytest.approx(x.sum() ** 3) and np.allclose(grad, 3 * x.sum() ** 2)


def _jax_vjp(f, primals, out_bar):
    """jax.vjp's cotangents (x64), or None without JAX."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return [np.asarray(c) for c in jax.vjp(f, *primals)[1](out_bar)]


def test_vjp_sums_the_cotangent_of_a_broadcast_primal_back_to_its_shape():
    """vjp_fn gives one cotangent per primal *shaped like it*, as jax.vjp: a scalar (Python float or
    0-d array) or a smaller array that broadcast against the others receives the sum over the
    broadcast axes (it was the un-reduced per-element array)."""
    x = np.array([1.0, 2.0, 3.0])
    scaled = lambda x, a: a * x  # noqa: E731
    for a in (2.0, np.array(2.0)):
        out, vjp_fn = sg.vjp(scaled, x, a)
        x_bar, a_bar = vjp_fn(np.ones(3))
        np.testing.assert_array_equal(x_bar, [2.0, 2.0, 2.0])
        assert np.shape(a_bar) == () and a_bar == 6.0 and isinstance(a_bar, np.float64)
        np.testing.assert_allclose(a_bar, _jax_vjp(scaled, (x, a), np.ones(3))[1], rtol=1e-15)
    mixed = lambda x, b, c: x * b + c ** 2  # noqa: E731
    xs, b, c = np.arange(6.0).reshape(2, 3), np.array([0.5, -1.0, 2.0]), np.array([[1.5], [-0.5]])
    w = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    bars = sg.vjp(mixed, xs, b, c)[1](w)
    assert [np.shape(v) for v in bars] == [(2, 3), (3,), (2, 1)]
    for got, want in zip(bars, _jax_vjp(mixed, (xs, b, c), w)):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    x32 = x.astype(np.float32)
    a_bar = sg.vjp(scaled, x32, 2.0)[1](np.ones(3, np.float32))[1]
    assert np.shape(a_bar) == () and a_bar.dtype == np.float32 and a_bar == 6.0


def test_vjp_with_a_signature_sums_over_batch_axes_a_primal_lacks():
    """Like jax.vjp of jax.vmap(f, in_axes=(0, None)): the unbatched argument's cotangent is the
    sum over the batch; the batched one keeps one cotangent per batch element."""
    f = lambda v, s: np.sum(v ** 2) * s  # noqa: E731
    V, s, w = np.arange(12.0).reshape(4, 3) / 10, 1.5, np.array([1.0, -1.0, 2.0, 0.5])
    v_bar, s_bar = sg.vjp(f, V, s, signature="(n),()->()")[1](w)
    np.testing.assert_allclose(v_bar, 2 * V * s * w[:, None], rtol=1e-15)
    assert np.shape(s_bar) == ()
    np.testing.assert_allclose(s_bar, np.sum(w * np.sum(V ** 2, axis=1)), rtol=1e-15)


def test_elementwise_functions_keep_ufunc_broadcasting():
    softplus = lambda v: np.log1p(np.exp(v))  # noqa: E731
    x = np.linspace(-3.0, 3.0, 7)
    np.testing.assert_allclose(sg.grad(softplus)(x), 1 / (1 + np.exp(-x)), rtol=1e-14)
    assert sg.grad(softplus)(np.ones((2, 5))).shape == (2, 5)  # any shape, no retrace needed
    t = sg.trace(softplus, x)
    assert t.signature is None and "elementwise" in repr(t)
    assert sg.trace(lambda v: np.sum(v) ** 2, x).signature == "(7)->()"


def test_whole_array_functions_are_traced_again_for_new_shapes():
    g = sg.grad(lambda v: np.sum(v) ** 2)
    np.testing.assert_allclose(g(np.ones(3)), [6.0] * 3)
    np.testing.assert_allclose(g(np.ones(4)), [8.0] * 4)
    np.testing.assert_allclose(g(np.ones((2, 2))), np.full((2, 2), 8.0))


def test_grad_of_a_vector_output_names_jacobian():
    with pytest.raises(SignatureError, match="jacobian"):
        sg.grad(lambda v: v[:2] * 2.0)(X3)


def test_constant_array_makes_a_function_whole_array():
    w = np.array([1.0, 2.0, 3.0])
    # x * w with x of shape (3,) is elementwise in NumPy; with whole cores it is the same function
    np.testing.assert_allclose(sg.jacobian(lambda v: v * w)(X3), np.diag(w))


def test_nested_transformations_under_the_default_rule():
    f = lambda v: np.sum(v) ** 2  # noqa: E731
    np.testing.assert_allclose(sg.jacobian(sg.grad(f))(np.ones(3)), np.full((3, 3), 2.0))
    inner = sg.grad(np.sin)  # elementwise: gives the derivative of every element
    np.testing.assert_allclose(sg.grad(lambda v: np.sum(inner(v)))(X3), -np.sin(X3), rtol=1e-14)
    with pytest.raises(SignatureError, match="jacobian"):
        sg.grad(lambda v: np.sum(sg.grad(lambda z: z[:2] * z[1:])(v)))(X3)
