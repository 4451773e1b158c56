"""The programs quoted in issue 14 as silently wrong or refused, with their correct values.

With ``signature=None`` a function that reduces, indexes, contracts or unpacks its argument
gets JAX's semantics (each argument's core is its whole shape), so these must equal JAX's
and autograd's results.  References: closed forms, and autograd running the same source.
"""
import autograd
import numpy as np

import symgrad as sg

from ._reference import as_autograd, assert_close

X = np.array([0.3, -1.2, 2.0])


def test_grad_sum_squared():
    """Issue 14: sg.grad(lambda x: np.sum(x) ** 2)(np.ones(3)) returned [2, 2, 2]; the gradient is [6, 6, 6]."""
    assert_close(sg.grad(lambda x: np.sum(x) ** 2)(np.ones(3)), np.full(3, 6.0))


def test_grad_mean_of_squares():
    """Issue 14: np.mean(x**2); gradient 2 x / n."""
    assert_close(sg.grad(lambda x: np.mean(x ** 2))(X), 2 * X / 3)


def test_grad_prod():
    """Issue 14: np.prod(x); gradient prod(x) / x_i (no zero entries)."""
    assert_close(sg.grad(lambda x: np.prod(x))(X), np.prod(X) / X)


def test_grad_linalg_norm():
    """Issue 14: np.linalg.norm(x); gradient x / |x|."""
    assert_close(sg.grad(lambda x: np.linalg.norm(x))(X), X / np.sqrt(np.sum(X ** 2)))


def test_grad_log_sum_exp():
    """Issue 14: np.log(np.sum(np.exp(x))); gradient softmax(x)."""
    e = np.exp(X)
    assert_close(sg.grad(lambda x: np.log(np.sum(np.exp(x))))(X), e / e.sum())


def test_grad_method_sum_squared():
    """Issue 14: x.sum() ** 2 (array method); gradient 2 sum(x)."""
    assert_close(sg.grad(lambda x: x.sum() ** 2)(X), np.full(3, 2 * X.sum()))


def test_grad_product_of_sums():
    """Issue 14: np.sum(np.sin(x)) * np.sum(np.cos(x)); gradient cos(x) S_c - sin(x) S_s."""
    s, c = np.sum(np.sin(X)), np.sum(np.cos(X))
    assert_close(sg.grad(lambda x: np.sum(np.sin(x)) * np.sum(np.cos(x)))(X), np.cos(X) * c - np.sin(X) * s)


def test_jacobian_normalise():
    """Issue 14: sg.jacobian(lambda x: x / np.sum(x)) returned zeros; J = (s I - x 1^T) / s^2."""
    x = np.array([1.0, 2.0, 4.0])
    s = x.sum()
    assert_close(sg.jacobian(lambda x: x / np.sum(x))(x), (s * np.eye(3) - np.outer(x, np.ones(3))) / s ** 2)


def test_hessian_sum_cubed():
    """Issue 14: sg.hessian(lambda x: np.sum(x) ** 3) returned a vector; H = 6 sum(x) * ones((n, n))."""
    assert_close(sg.hessian(lambda x: np.sum(x) ** 3)(X), 6 * X.sum() * np.ones((3, 3)))


def test_jacobian_stack_of_products():
    """Issue 14: np.stack([x[0] * x[1], x[1] + x[2]]) raised "cannot index a traced scalar"."""
    x = np.array([2.0, 3.0, 5.0])
    assert_close(sg.jacobian(lambda x: np.stack([x[0] * x[1], x[1] + x[2]]))(x),
                 np.array([[3.0, 2.0, 0.0], [0.0, 1.0, 1.0]]))


def ode_rhs(t, y):
    """Issue 14: `y1, y2, y3 = y` in an ODE right-hand side (Robertson's kinetics)."""
    y1, y2, y3 = y
    return np.array([-0.04 * y1 + 1e4 * y2 * y3,
                     0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 ** 2,
                     3e7 * y2 ** 2])


def test_jacobian_ode_unpacking():
    y = np.array([0.9, 2e-5, 0.1])
    y1, y2, y3 = y
    expected = np.array([[-0.04, 1e4 * y3, 1e4 * y2],
                         [0.04, -1e4 * y3 - 6e7 * y2, -1e4 * y2],
                         [0.0, 6e7 * y2, 0.0]])
    assert_close(sg.jacobian(ode_rhs, argnums=1)(0.0, y), expected)


def test_grad_self_matmul():
    """Issue 14: sg.grad(lambda x: x @ x) raised a matmul dimension error; gradient 2 x."""
    assert_close(sg.grad(lambda x: x @ x)(X), 2 * X)


def test_tf_guide_dense_layer_with_variables():
    """Issue 14 / TensorFlow 'Introduction to gradients': y = x @ w + b; loss = mean(y**2);
    tape.gradient(loss, [w, b]) returned [None], None."""
    w0 = np.array([[0.5, -1.0], [0.25, 2.0], [-0.75, 0.1]])
    b0 = np.array([0.1, -0.2])
    x = np.array([[1.0, 2.0, 3.0]])
    w, b = sg.Variable(w0, name="w"), sg.Variable(b0, name="b")
    with sg.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = np.mean(y ** 2)
    dl_dw, dl_db = tape.gradient(loss, [w, b])
    dl_dy = 2 * (x @ w0 + b0) / 2
    assert_close([dl_dw, dl_db], [x.T @ dl_dy, dl_dy.sum(axis=0)])


def test_tf_tape_sum_exp_variable():
    """Issue 14: w = sg.Variable(np.ones(3)); loss = np.sum(np.exp(w)); tape.gradient(loss, w) returned None."""
    w = sg.Variable(np.ones(3))
    with sg.GradientTape() as tape:
        loss = np.sum(np.exp(w))
    assert_close(tape.gradient(loss, w), np.exp(np.ones(3)))


def test_issue_programs_agree_with_autograd():
    """The same issue programs, each with autograd on the same source as the reference (float64)."""
    programs = [lambda x: np.sum(x) ** 2, lambda x: np.mean(x ** 2), lambda x: np.prod(x),
                lambda x: np.linalg.norm(x), lambda x: np.log(np.sum(np.exp(x))), lambda x: x.sum() ** 2,
                lambda x: np.sum(np.sin(x)) * np.sum(np.cos(x)), lambda x: x @ x]
    for f in programs:
        assert_close(sg.grad(f)(X), autograd.grad(as_autograd(f))(X))
