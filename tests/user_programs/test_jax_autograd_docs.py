"""Programs from JAX's documentation (quickstart, 'The Autodiff Cookbook', API docstrings) and
autograd's README/tutorial, run with JAX habits.  Expected values: the docs' printed numbers,
closed forms, mpmath, and JAX x64 / autograd on the same source."""
import autograd
import mpmath
import numpy as np
import pytest

from scipy.special import expit, log_expit, logit, logsumexp, softmax

import symgrad as sg

from ._reference import as_autograd, as_jax, assert_close, need_jax, to_numpy


def test_grad_tanh_docstring():
    """jax.grad docstring: grad(jnp.tanh)(0.2) = 0.961043."""
    assert_close(sg.grad(np.tanh)(0.2), 1 - np.tanh(0.2) ** 2)
    assert abs(float(sg.grad(np.tanh)(0.2)) - 0.961043) < 1e-6


def test_nested_grad_third_derivative_of_tanh():
    """Autodiff cookbook: grad(grad(grad(jnp.tanh)))(2.0) = 0.13621868 (mpmath, 30 digits)."""
    with mpmath.workdps(30):
        ref = float(mpmath.diff(mpmath.tanh, 2.0, 3))
    assert_close(sg.grad(sg.grad(sg.grad(np.tanh)))(2.0), ref)


def tanh_autograd(x):
    """autograd README: tanh written with exp."""
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def test_autograd_readme_tanh_and_elementwise_derivatives():
    """grad_tanh(1.0) = 0.419974341614026; then derivatives on np.linspace(-7, 7, 200), elementwise,
    up to second order (autograd's elementwise_grad); compared with closed forms."""
    assert abs(float(sg.grad(tanh_autograd)(1.0)) - 0.419974341614026) < 1e-14
    x = np.linspace(-7, 7, 200)
    t = np.tanh(x)
    assert_close(sg.grad(tanh_autograd)(x), 1 - t ** 2)
    assert_close(sg.grad(sg.grad(tanh_autograd))(x), -2 * t * (1 - t ** 2), atol=1e-12)


def sum_logistic(x):
    """JAX quickstart: sum of logistic sigmoids."""
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def test_quickstart_sum_logistic_and_finite_differences():
    """Quickstart prints grad(sum_logistic)(arange(3.)) = [0.25, 0.19661197, 0.10499357] and compares
    with first finite differences."""
    x_small = np.arange(3.0)
    s = 1 / (1 + np.exp(-x_small))
    assert_close(sg.jit(sum_logistic)(x_small), np.sum(s))    # a scalar, as in JAX (np.sum reduces)
    g = sg.grad(sum_logistic)(x_small)
    assert_close(g, s * (1 - s))
    eps = 1e-4
    fd = np.array([(sum_logistic(x_small + eps * v) - sum_logistic(x_small - eps * v)) / (2 * eps)
                   for v in np.eye(3)])
    np.testing.assert_allclose(g, fd, rtol=1e-7)


def selu(x, alpha=1.67, lmbda=1.05):
    """JAX quickstart: SELU with np.where (elementwise)."""
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_quickstart_selu_jit_and_grad(dtype):
    x = np.linspace(-3, 3, 11).astype(dtype)
    xf = x.astype(np.float64)
    assert_close(sg.jit(selu)(x), selu(xf), dtype=dtype)
    assert_close(sg.grad(selu)(x), 1.05 * np.where(xf > 0, 1.0, 1.67 * np.exp(xf)), dtype=dtype)


def jac_example(x):
    """jax.jacfwd / jax.jacrev docstrings."""
    return np.asarray([x[0], 5 * x[2], 4 * x[1] ** 2 - 2 * x[2], x[2] * np.sin(x[0])])


def test_jacfwd_docstring_example():
    """Printed result: [[1, 0, 0], [0, 0, 5], [0, 16, -2], [1.6209, 0, 0.84147]]."""
    J = sg.jacobian(jac_example)(np.array([1.0, 2.0, 3.0]))
    expected = np.array([[1.0, 0, 0], [0, 0, 5.0], [0, 16.0, -2.0], [3 * np.cos(1.0), 0, np.sin(1.0)]])
    assert_close(J, expected)


def test_jvp_docstring_example():
    """jax.jvp(jnp.sin, (0.1,), (0.2,)) = (0.09983342, 0.19900084)."""
    assert_close(sg.jvp(np.sin, (0.1,), (0.2,)), (np.sin(0.1), 0.2 * np.cos(0.1)))


def sin_cos(x, y):
    return np.sin(x), np.cos(y)


def test_vjp_docstring_example():
    """jax.vjp docstring: f(x, y) = (sin x, cos y); f_vjp((-0.7, 0.3)) = (-0.61430776, -0.2524413)."""
    primals, f_vjp = sg.vjp(sin_cos, 0.5, 1.0)
    xbar, ybar = f_vjp((-0.7, 0.3))
    assert_close((primals, (xbar, ybar)), ((np.sin(0.5), np.cos(1.0)), (-0.7 * np.cos(0.5), -0.3 * np.sin(1.0))))


def test_hessian_docstring_example():
    """jax.hessian docstring: g = x0^3 - 2 x0 x1 - x1^6 at [1, 2] -> [[6, -2], [-2, -480]]."""
    g = lambda x: x[0] ** 3 - 2 * x[0] * x[1] - x[1] ** 6  # noqa: E731
    assert_close(sg.hessian(g)(np.array([1.0, 2.0])), np.array([[6.0, -2.0], [-2.0, -480.0]]))


def sigmoid(x):
    return 0.5 * (np.tanh(x / 2) + 1)


def predict(W, b, inputs):
    """Autodiff cookbook: logistic predictions."""
    return sigmoid(np.dot(inputs, W) + b)


INPUTS = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
TARGETS = np.array([True, True, False, True])
W = np.array([0.6, -0.4, 0.25])
B = 0.3


def loss(W, b):
    """Autodiff cookbook: negative log-likelihood of the labels (boolean targets)."""
    preds = predict(W, b, INPUTS)
    label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
    return -np.sum(np.log(label_probs))


def test_cookbook_grad_argnums_and_value_and_grad():
    """grad(loss, argnums=0), grad(loss, (0, 1)) and value_and_grad, against JAX x64."""
    jax = need_jax()
    jloss = as_jax(loss)
    ref = to_numpy(jax.value_and_grad(jloss, (0, 1))(W, B))
    assert_close(sg.grad(loss, argnums=0)(W, B), ref[1][0])
    assert_close(sg.grad(loss, (0, 1))(W, B), ref[1])
    assert_close(sg.value_and_grad(loss, (0, 1))(W, B), ref)


def test_cookbook_finite_difference_check_on_b():
    """Cookbook: b_grad_numerical = (loss(W, b + eps/2) - loss(W, b - eps/2)) / eps."""
    eps = 1e-4
    numerical = (loss(W, B + eps / 2.0) - loss(W, B - eps / 2.0)) / eps
    assert abs(float(sg.grad(loss, 1)(W, B)) - numerical) < 1e-7


def loss2(params_dict):
    """Cookbook: gradients with respect to a dict of parameters."""
    preds = predict(params_dict["W"], params_dict["b"], INPUTS)
    label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
    return -np.sum(np.log(label_probs))


def test_cookbook_dict_parameters():
    ref = autograd.grad(as_autograd(loss2))({"W": W, "b": B})
    assert_close(sg.grad(loss2)({"W": W, "b": B}), ref)


def test_cookbook_jvp_and_vjp_of_predict():
    """Cookbook: y, u = jvp(f, (W,), (v,)) and vjp; <u_out, J v> = <J^T u_out, v>; J = s(1-s) inputs."""
    f = lambda W: predict(W, B, INPUTS)  # noqa: E731
    s = predict(W, B, INPUTS)
    J = (s * (1 - s))[:, None] * INPUTS
    v = np.array([0.5, -1.0, 2.0])
    y, u = sg.jvp(f, (W,), (v,))
    assert_close((y, u), (s, J @ v))
    w = np.array([1.0, -2.0, 0.5, 0.25])
    y2, vjp_fun = sg.vjp(f, W)
    (ct,) = vjp_fun(w)
    assert_close((y2, ct), (s, J.T @ w))
    assert abs(w @ u - ct @ v) < 1e-12 * (1 + abs(w @ u))


def test_cookbook_jacobian_forward_and_reverse_shapes():
    """Cookbook: jacfwd and jacrev of predict w.r.t. W agree, shape (4, 3)."""
    jax = need_jax()
    ref = to_numpy(jax.jacrev(as_jax(predict))(W, B, INPUTS))
    assert_close(sg.jacobian(predict)(W, B, INPUTS), ref)


def test_cookbook_hessian_of_vector_output():
    """Cookbook: hessian(f)(W) of the vector-valued predict has shape (4, 3, 3) (jacfwd(jacrev(f)))."""
    s = predict(W, B, INPUTS)
    d2 = s * (1 - s) * (1 - 2 * s)
    expected = d2[:, None, None] * INPUTS[:, :, None] * INPUTS[:, None, :]
    assert_close(sg.hessian(predict)(W, B, INPUTS), expected)


def tanh_sq_sum(X):
    """Cookbook, Hessian-vector products: f(X) = sum(tanh(X)**2) on a matrix."""
    return np.sum(np.tanh(X) ** 2)


def test_cookbook_hvp_matrix_argument():
    """The Hessian of sum(tanh(X)^2) is diagonal: d2/dx2 tanh^2 = 2 sech^4 - 4 tanh^2 sech^2."""
    rng = np.random.default_rng(9)
    X, V = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    t = np.tanh(X)
    h = 2 * (1 - t ** 2) ** 2 - 4 * t ** 2 * (1 - t ** 2)
    assert_close(sg.hvp(tanh_sq_sum, (X,), (V,)), h * V)


def per_example_loss(w, x, y):
    """JAX 'per-example gradients' (vmap(grad(loss))): logistic loss of one example."""
    z = np.dot(w, x)
    return np.logaddexp(0.0, z) - y * z


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_per_example_gradients_with_signature(dtype):
    """One gradient per example: x (4, 3) batched, w shared; grad = (sigmoid(w.x) - y) x."""
    y = TARGETS.astype(float)
    g = sg.grad(per_example_loss, signature="(d),(d),()->()")(W.astype(dtype), INPUTS.astype(dtype), y.astype(dtype))
    p = 1 / (1 + np.exp(-(INPUTS @ W)))
    assert_close(g, (p - y)[:, None] * INPUTS, dtype=dtype)


def rosenbrock2(x):
    """autograd examples/rosenbrock.py."""
    return 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2


def test_autograd_rosenbrock_example_value_and_grad():
    x = np.array([-1.2, 1.0])
    val, g = sg.value_and_grad(rosenbrock2)(x)
    expected = np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]), 200 * (x[1] - x[0] ** 2)])
    assert_close((val, g), (rosenbrock2(x), expected))


def test_matrix_calculus_det_and_slogdet():
    """Jacobi's formula: d det(A) / dA = det(A) A^{-T}; d log|det A| / dA = A^{-T} (Petersen &
    Pedersen, The Matrix Cookbook, eqs. 49 and 57)."""
    A = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, -0.2], [0.0, 0.4, 1.0]])
    assert_close(sg.grad(lambda A: np.linalg.det(A))(A), np.linalg.det(A) * np.linalg.inv(A).T)
    assert_close(sg.grad(lambda A: np.linalg.slogdet(A)[1])(A), np.linalg.inv(A).T)


def test_matrix_calculus_trace_of_inverse():
    """d tr(A^{-1}) / dA = -(A^{-2})^T (The Matrix Cookbook, eq. 124)."""
    A = np.array([[2.0, 0.5], [0.3, 1.5]])
    Ai = np.linalg.inv(A)
    assert_close(sg.grad(lambda A: np.trace(np.linalg.inv(A)))(A), -(Ai @ Ai).T)


def test_quadratic_form_with_solve_and_signature():
    """x^T A^{-1} x via np.linalg.solve under "(n),(n,n)->()": grad 2 A^{-1} x (A symmetric), batched."""
    A = np.array([[3.0, 0.5], [0.5, 2.0]])
    xs = np.array([[1.0, 2.0], [-0.5, 0.3], [0.0, 1.0]])
    g = sg.grad(lambda x, A: x @ np.linalg.solve(A, x), signature="(n),(n,n)->()")(xs, A)
    assert_close(g, 2 * np.linalg.solve(A, xs.T).T)


def vocabulary_programs():
    """One-liners with the planned NumPy vocabulary, each checked against JAX x64 (grad of a scalar)."""
    return {
        "max": lambda x: np.max(x ** 2),
        "min": lambda x: np.min(np.sin(x)),
        "cumsum": lambda x: np.sum(np.cumsum(x) ** 2),
        "diff": lambda x: np.sum(np.diff(x) ** 2),
        "tile": lambda x: np.sum(np.tile(x, 2) * np.arange(8.0)),
        "repeat": lambda x: np.sum(np.repeat(x, 2) * np.arange(8.0)),
        "flip": lambda x: np.dot(np.flip(x), np.arange(4.0)),
        "roll": lambda x: np.dot(np.roll(x, 1), np.arange(4.0)),
        "pad": lambda x: np.sum(np.pad(x, 1) * np.arange(6.0)),
        "hstack": lambda x: np.sum(np.hstack([x, x ** 2]) * np.arange(8.0)),
        "vstack": lambda x: np.sum(np.vstack([x, x ** 2]) ** 2),
        "reshape": lambda x: np.sum(x.reshape(2, 2) @ np.array([1.0, -1.0])),
        "transpose": lambda x: np.sum(x.reshape(2, 2).T * np.array([[1.0, 2.0], [3.0, 4.0]])),
        "fancy_index": lambda x: np.sum(x[np.array([0, 2, 2, 3])] ** 2),
        "boolean_mask_const": lambda x: np.sum(x[np.array([True, False, True, False])] ** 3),
        "outer": lambda x: np.sum(np.outer(x, x) * np.arange(16.0).reshape(4, 4)),
        "cross": lambda x: np.sum(np.cross(x[:3], np.array([1.0, 2.0, 3.0])) ** 2),
        "tensordot": lambda x: np.tensordot(x.reshape(2, 2), np.eye(2), axes=2),
        "polyval": lambda x: np.polyval(x, 0.7),
        "interp": lambda x: np.sum(np.interp(np.array([0.5, 1.5, 2.5]), np.arange(4.0), x)),
        "dot_method": lambda x: x.dot(x),
        "prod_method": lambda x: x.prod(),
        "mean_axis": lambda x: np.sum(np.mean(x.reshape(2, 2), axis=0) ** 2),
        "diag": lambda x: np.sum(np.diag(x) @ np.arange(4.0)),
    }


VOCAB = vocabulary_programs()


@pytest.mark.parametrize("name", sorted(VOCAB))
def test_numpy_vocabulary_gradient_against_jax(name):
    jax = need_jax()
    x = np.array([0.5, -1.25, 2.0, 0.75])
    f = VOCAB[name]
    ref = to_numpy(jax.grad(as_jax(f))(x))
    assert_close(sg.grad(f)(x), ref)


A4 = np.arange(16.0).reshape(4, 4) / 8.0


def habit_programs():
    """Idioms of JAX/autograd users (negative and Ellipsis indexing, len/shape, where-masks, clip,
    Huber loss, broadcasting with None, quadratic forms, keepdims), without a signature."""
    return {
        "negative_index": lambda x: x[-1] ** 2 + x[::-1][0] * x[1],
        "ellipsis_index": lambda x: x[..., 0] * x[..., 2],
        "len_and_shape": lambda x: len(x) * np.sum(x ** 2) + x.shape[0] * x[0],
        "where_mask_sum": lambda x: np.where(x > 0, x, 0.0).sum(),
        "clip": lambda x: np.sum(np.clip(x, -1.0, 1.0) ** 2),
        "huber": lambda x: np.sum(np.where(np.abs(x) < 1.0, 0.5 * x ** 2, np.abs(x) - 0.5)),
        "none_broadcast": lambda x: np.sum(x[:, None] * x[None, :] * A4),
        "quadratic_form": lambda x: x @ A4 @ x,
        "softmax_weights": lambda x: np.dot(np.exp(x) / np.sum(np.exp(x)), np.arange(4.0)),
        "concatenate": lambda x: np.sum(np.concatenate([x, x[:2]]) ** 2),
        "keepdims_normalise": lambda x: np.sum(x / np.sum(x ** 2, keepdims=True)),
        "generator_polynomial": lambda x: sum(c * x[0] ** k for k, c in enumerate([1.0, 2.0, 3.0])),
    }


HABITS = habit_programs()


@pytest.mark.parametrize("name", sorted(HABITS))
def test_jax_habits_gradient_against_jax(name):
    jax = need_jax()
    x = np.array([0.5, -1.25, 2.0, 0.75])
    f = HABITS[name]
    assert_close(sg.grad(f)(x), to_numpy(jax.grad(as_jax(f))(x)))


def cube_plus_exp(x):
    """A small program checked across every transformation (autograd README style)."""
    return np.sum(x ** 3) + np.exp(x[0] * x[1])


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
def test_one_program_across_all_transformations(dtype):
    """grad, value_and_grad, jacobian, hessian, hvp, jvp, vjp of one program, float64 and float32,
    against autograd in float64."""
    x64 = np.array([0.4, -0.7, 1.1])
    v64 = np.array([1.0, 0.5, -2.0])
    x, v = x64.astype(dtype), v64.astype(dtype)
    af = as_autograd(cube_plus_exp)
    g_ref, H_ref, val_ref = autograd.grad(af)(x64), autograd.hessian(af)(x64), cube_plus_exp(x64)
    assert_close(sg.grad(cube_plus_exp)(x), g_ref, dtype=dtype)
    assert_close(sg.value_and_grad(cube_plus_exp)(x), (val_ref, g_ref), dtype=dtype)
    assert_close(sg.jacobian(cube_plus_exp)(x), g_ref, dtype=dtype)
    assert_close(sg.hessian(cube_plus_exp)(x), H_ref, dtype=dtype)
    assert_close(sg.hvp(cube_plus_exp, (x,), (v,)), H_ref @ v64, dtype=dtype)
    assert_close(sg.jvp(cube_plus_exp, (x,), (v,)), (val_ref, g_ref @ v64), dtype=dtype)
    out, vjp_fn = sg.vjp(cube_plus_exp, x)
    assert_close((out, vjp_fn(dtype(2.0))), (val_ref, (2 * g_ref,)), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
def test_per_example_loss_across_all_transformations_batched(dtype):
    """The per-example logistic loss under "(d),(d),()->()" with a batch of 4 examples, through every
    transformation: grad/value_and_grad/jacobian (batch, d), hessian (batch, d, d), hvp/jvp/vjp per row.
    References: closed forms per example (p = sigmoid(w.x): grad (p - y) x, Hessian p (1 - p) x x^T)."""
    sig = "(d),(d),()->()"
    X, y = INPUTS, TARGETS.astype(float)
    ws = np.stack([W, -W, 0.5 * W, W[::-1]])            # one weight vector per example (batched too)
    v = np.array([0.5, -1.0, 2.0])
    z = np.sum(ws * X, axis=1)
    p = 1 / (1 + np.exp(-z))
    val = np.logaddexp(0.0, z) - y * z
    g = (p - y)[:, None] * X
    H = (p * (1 - p))[:, None, None] * X[:, :, None] * X[:, None, :]
    args = (ws.astype(dtype), X.astype(dtype), y.astype(dtype))
    assert_close(sg.grad(per_example_loss, signature=sig)(*args), g, dtype=dtype)
    assert_close(sg.value_and_grad(per_example_loss, signature=sig)(*args), (val, g), dtype=dtype)
    assert_close(sg.jacobian(per_example_loss, signature=sig)(*args), g, dtype=dtype)
    assert_close(sg.hessian(per_example_loss, signature=sig)(*args), H, dtype=dtype)
    vs = np.tile(v, (4, 1)).astype(dtype)
    zeros = np.zeros_like(args[1])
    # H of the whole argument list times (v, 0, 0): the w block H_ww v, and the mixed blocks
    # d2L/dx dw v = p(1-p)(x.v) w + (p - y) v and d2L/dy dw v = -(x.v)
    xv = X @ v
    assert_close(sg.hvp(per_example_loss, args, (vs, zeros, np.zeros_like(args[2])), signature=sig),
                 ((p * (1 - p) * xv)[:, None] * X, (p * (1 - p) * xv)[:, None] * ws + (p - y)[:, None] * v, -xv),
                 dtype=dtype)
    assert_close(sg.jvp(per_example_loss, args, (vs, zeros, np.zeros_like(args[2])), signature=sig),
                 (val, g @ v), dtype=dtype)
    out, vjp_fn = sg.vjp(per_example_loss, *args, signature=sig)
    ct = np.array([1.0, -2.0, 0.5, 3.0])
    w_bar, x_bar, y_bar = vjp_fn(ct.astype(dtype))
    dz = p - y
    assert_close((out, w_bar, x_bar, y_bar),
                 (val, (ct * dz)[:, None] * X, (ct * dz)[:, None] * ws, -ct * z), dtype=dtype)


def special_elementwise():
    """scipy.special elementwise functions a user differentiates pointwise (signature=None)."""
    return {
        "expit": (lambda x: expit(x), lambda x: expit(x) * (1 - expit(x)), np.linspace(-30, 30, 13)),
        "logit": (lambda p: logit(p), lambda p: 1 / (p * (1 - p)), np.linspace(0.01, 0.99, 9)),
        "log_expit": (lambda x: log_expit(x), lambda x: expit(-x), np.linspace(-40, 40, 9)),
        "softplus_logaddexp": (lambda x: np.logaddexp(0.0, x), lambda x: expit(x), np.linspace(-40, 40, 9)),
        "softplus_log1p_exp": (lambda x: np.log1p(np.exp(x)), lambda x: expit(x), np.linspace(-30, 30, 9)),
    }


SPECIAL = special_elementwise()


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_scipy_special_elementwise_derivatives(name):
    """Closed-form derivatives on a grid (float64), elementwise broadcasting with signature=None."""
    f, df, x = SPECIAL[name]
    assert_close(sg.grad(f)(x), df(x))


def test_softmax_and_logsumexp_rows_with_signature():
    """scipy.special.softmax / logsumexp over a core vector, batched over rows; JAX x64 reference.

    SciPy's softmax and logsumexp are Python functions that branch on values; symgrad intercepts
    them and traces JAX's max-shifted forms, so the program as written gives JAX's gradient, as
    does the np.logaddexp.reduce spelling."""
    jax = need_jax()
    rng = np.random.default_rng(21)
    X, w = rng.standard_normal((3, 4)), np.array([1.0, -1.0, 0.5, 2.0])

    def f(x):
        return np.dot(softmax(x), w) + logsumexp(x)

    def f_traceable(x):
        lse = np.logaddexp.reduce(x, axis=-1, keepdims=True)
        return np.dot(np.exp(x - lse), w) + lse[0]
    ref = np.stack([to_numpy(jax.grad(as_jax(f))(x)) for x in X])
    assert_close(sg.grad(f, signature="(n)->()")(X), ref)
    assert_close(sg.grad(f_traceable, signature="(n)->()")(X), ref)

def mse_with_predictions(params, xb, yb):
    """A training loss that also returns what a user logs: JAX's ``has_aux`` pattern."""
    pred = np.tanh(xb @ params["w"] + params["b"])
    return np.mean((pred - yb) ** 2), {"pred": pred, "max_abs": np.max(np.abs(pred))}


def test_has_aux_grad_and_value_and_grad_match_jax():
    """jax.grad / jax.value_and_grad with has_aux=True: ``(grads, aux)`` and ``((loss, aux), grads)``,
    the aux pytree returned as computed; compared with JAX x64 on the same source, and with
    finite differences of the loss."""
    rng = np.random.default_rng(7)
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xb, yb = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    (loss, aux), grads = sg.value_and_grad(mse_with_predictions, has_aux=True)(params, xb, yb)
    g_only, aux2 = sg.grad(mse_with_predictions, has_aux=True)(params, xb, yb)
    assert_close(g_only, grads)
    assert_close(aux2, aux)
    pred = np.tanh(xb @ params["w"] + params["b"])
    assert_close(loss, np.mean((pred - yb) ** 2))
    assert_close(aux, {"pred": pred, "max_abs": np.max(np.abs(pred))})
    eps = 1e-6
    w = params["w"].copy()
    w[1, 0] += eps
    up = mse_with_predictions({"w": w, "b": params["b"]}, xb, yb)[0]
    w[1, 0] -= 2 * eps
    down = mse_with_predictions({"w": w, "b": params["b"]}, xb, yb)[0]
    assert abs(grads["w"][1, 0] - (up - down) / (2 * eps)) < 1e-8
    need_jax()
    import jax

    jf = as_jax(mse_with_predictions)
    (jl, jaux), jg = jax.value_and_grad(jf, has_aux=True)(params, xb, yb)
    assert_close(loss, to_numpy(jl))
    assert_close(aux, to_numpy(jaux))
    assert_close(grads, to_numpy(jg))


def test_has_aux_needs_a_pair_and_a_scalar_first_item():
    with pytest.raises(TypeError, match="return a pair"):
        sg.grad(lambda x: np.sum(x ** 2), has_aux=True)(np.ones(3))
    with pytest.raises(sg.SignatureError, match="scalar core"):
        sg.grad(lambda x: (np.cumsum(x), x), has_aux=True)(np.ones(3))


def test_jacfwd_and_jacrev_are_jacobian():
    """jax.jacfwd / jax.jacrev names: the same Jacobian as sg.jacobian (and JAX's)."""
    x = np.array([0.3, -1.2, 2.0])
    f = lambda v: np.sin(v) * v[0] + np.sum(v ** 2)  # noqa: E731
    want = np.cos(x)[:, None] * np.eye(3) * x[0] + np.outer(np.sin(x), [1, 0, 0]) + 2 * x[None, :]
    assert_close(sg.jacfwd(f)(x), want)
    assert_close(sg.jacrev(f)(x), want)
    # an elementwise function: the diagonal with no signature (the ufunc rule, documented), JAX's
    # diagonal matrix with a signature
    assert_close(sg.jacfwd(lambda v: v ** 2)(x), 2 * x)
    assert_close(sg.jacrev(lambda v: v ** 2, signature="(n)->(n)")(x), np.diag(2 * x))
