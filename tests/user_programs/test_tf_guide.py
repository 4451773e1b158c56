"""TensorFlow's guides 'Introduction to gradients and automatic differentiation' and 'Advanced
automatic differentiation', with sg.GradientTape / sg.Variable / sg.constant and numpy calls in
place of tf ops.  Expected values: the guides' printed outputs and closed forms; autograd for
the Jacobian/Hessian shapes TensorFlow documents."""
import autograd
import numpy as np
import pytest

import symgrad as sg

from ._reference import as_autograd, assert_close


def test_scalar_variable():
    """x = tf.Variable(3.0); y = x**2; dy_dx = 6.0."""
    x = sg.Variable(3.0)
    with sg.GradientTape() as tape:
        y = x ** 2
    assert_close(tape.gradient(y, x), 6.0)


W0 = np.array([[0.3, -1.2], [0.8, 0.5], [-0.4, 1.1]])


def test_list_of_sources_x_at_w_plus_b():
    """The guide's w (3, 2), b (2,), x = [[1., 2., 3.]] (a nested Python list): [dl_dw, dl_db]."""
    w, b = sg.Variable(W0, name="w"), sg.Variable(np.zeros(2), name="b")
    x = [[1.0, 2.0, 3.0]]
    with sg.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = np.mean(y ** 2)
    dl_dw, dl_db = tape.gradient(loss, [w, b])
    dy = 2 * (np.array(x) @ W0) / 2
    assert_close([dl_dw, dl_db], [np.array(x).T @ dy, dy.sum(0)])


def test_dict_of_sources():
    """my_vars = {'w': w, 'b': b}; grad = tape.gradient(loss, my_vars) -> a dict."""
    w, b = sg.Variable(W0), sg.Variable(np.array([0.5, -0.5]))
    x = np.array([[1.0, 2.0, 3.0]])
    with sg.GradientTape() as tape:
        y = x @ w + b
        loss = np.mean(y ** 2)
    g = tape.gradient(loss, {"w": w, "b": b})
    dy = (x @ W0 + np.array([0.5, -0.5]))
    assert_close(g, {"w": x.T @ dy, "b": dy.sum(0)})


def test_dense_relu_layer_gradient_against_autograd():
    """A Dense(2, activation='relu') layer written out: relu(x @ kernel + bias), loss = mean(y**2)."""
    kernel0, bias0 = W0, np.array([0.1, 0.2])
    x = np.array([[1.0, 2.0, 3.0], [-0.5, 0.3, 0.9]])
    kernel, bias = sg.Variable(kernel0), sg.Variable(bias0)
    with sg.GradientTape() as tape:
        y = np.maximum(x @ kernel + bias, 0.0)
        loss = np.mean(y ** 2)

    def ref_loss(k, b):
        return np.mean(np.maximum(x @ k + b, 0.0) ** 2)
    ref = [autograd.grad(as_autograd(ref_loss), argnum=i)(kernel0, bias0) for i in (0, 1)]
    assert_close(tape.gradient(loss, [kernel, bias]), ref)


def test_watch_a_constant():
    """x = tf.constant(3.0); tape.watch(x); y = x**2 -> 6.0."""
    x = sg.constant(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x ** 2
    assert_close(tape.gradient(y, x), 6.0)


def test_unwatched_sources_give_none():
    """Guide: x0 Variable, x2 = Variable + 1.0 (a tensor), x3 constant: [cos(3), None, None]."""
    x0 = sg.Variable(3.0, name="x0")
    x2 = sg.Variable(2.0, name="x2") + 1.0
    x3 = sg.constant(3.0)
    with sg.GradientTape() as tape:
        y = np.sin(x0) + np.sin(x2) + np.sin(x3)
    g = tape.gradient(y, [x0, x2, x3])
    assert g[1] is None and g[2] is None
    assert_close(g[0], np.cos(3.0))


def test_trainable_false_variable_is_not_watched():
    """Guide: x1 = tf.Variable(3.0, trainable=False) is not watched: its gradient is None."""
    x0 = sg.Variable(3.0, name="x0")
    x1 = sg.Variable(3.0, name="x1", trainable=False)
    with sg.GradientTape() as tape:
        y = np.sin(x0) + np.sin(x1)
    g0, g1 = tape.gradient(y, [x0, x1])
    assert g1 is None
    assert_close(g0, np.cos(3.0))


def test_watched_variables_names():
    x0 = sg.Variable(3.0, name="x0")
    with sg.GradientTape() as tape:
        y = x0 * 2.0
    assert [v.name for v in tape.watched_variables()] == ["x0"]
    assert_close(tape.gradient(y, x0), 2.0)


def test_watch_accessed_variables_false():
    """Guide: only x1 watched; ys = sin(x0) + softplus(x1); {'x0': None, 'x1': sigmoid(10)}."""
    x0, x1 = sg.Variable(0.0), sg.Variable(10.0)
    with sg.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = np.sin(x0)
        y1 = np.logaddexp(0.0, x1)   # tf.nn.softplus
        ys = np.sum(y0 + y1)
    grad = tape.gradient(ys, {"x0": x0, "x1": x1})
    assert grad["x0"] is None
    assert_close(grad["x1"], 1 / (1 + np.exp(-10.0)))


def test_gradient_with_respect_to_an_intermediate():
    """Guide: y = x * x; z = y * y; dz_dy = 2 y = 18."""
    x = sg.constant(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert_close(tape.gradient(z, y), 18.0)


def test_persistent_tape_two_gradients():
    """Guide: x = [1, 3]; y = x*x; z = y*y; dz/dx = 4 x^3 = [4, 108]; dy/dx = [2, 6]."""
    x = sg.constant([1.0, 3.0])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert_close(tape.gradient(z, x), np.array([4.0, 108.0]))
    assert_close(tape.gradient(y, x), np.array([2.0, 6.0]))
    del tape


def test_non_persistent_tape_refuses_a_second_gradient():
    """TensorFlow raises RuntimeError on a second call on a non-persistent tape."""
    x = sg.constant(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert_close(tape.gradient(y, x), 6.0)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(y, x)


def test_non_scalar_targets_sum():
    """Guide: a dict target {'y0': x**2, 'y1': 1/x} at x = 2 -> 4 - 0.25 = 3.75; x * [3, 4] -> 7."""
    x = sg.Variable(2.0)
    with sg.GradientTape(persistent=True) as tape:
        y0 = x ** 2
        y1 = 1 / x
        y = x * [3.0, 4.0]
    assert_close(tape.gradient({"y0": y0, "y1": y1}, x), 3.75)
    assert_close(tape.gradient(y, x), 7.0)


def test_elementwise_sigmoid_derivative_on_linspace():
    """Guide: x = linspace(-10, 10, 201); y = sigmoid(x); dy_dx = sigmoid'(x) elementwise."""
    x = sg.constant(np.linspace(-10.0, 10.0, 201))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = 1 / (1 + np.exp(-x))
    s = 1 / (1 + np.exp(-np.linspace(-10.0, 10.0, 201)))
    assert_close(tape.gradient(y, x), s * (1 - s))


def test_python_control_flow_on_eager_values():
    """Guide: if x > 0.0: result = v0 else: result = v1**2 -> dv0 = 1, dv1 = None."""
    x = sg.constant(1.0)
    v0, v1 = sg.Variable(2.0), sg.Variable(2.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1 ** 2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    assert dv1 is None
    assert_close(dv0, 1.0)
    assert tape.gradient(result, x) is None


def test_unconnected_variable_gives_none_or_zero():
    """Guide: z = y * y does not depend on x: None, or zeros with unconnected_gradients='zero'."""
    x, y = sg.Variable([2.0, 2.0]), sg.Variable(3.0)
    with sg.GradientTape(persistent=True) as tape:
        z = y ** 2
    assert tape.gradient(z, x) is None
    assert_close(tape.gradient(z, x, unconnected_gradients="zero"), np.zeros(2))


def test_replacing_a_variable_with_a_tensor_stops_watching():
    """Guide: for epoch in range(2): y = x + 1; grad; x = x + 1 -> 1.0, then None."""
    x = sg.Variable(2.0)
    grads = []
    for _ in range(2):
        with sg.GradientTape() as tape:
            y = x + 1
        grads.append(tape.gradient(y, x))
        x = x + 1
    assert grads[1] is None
    assert_close(grads[0], 1.0)


def test_numpy_reductions_are_recorded():
    """Guide's 'calculations outside TensorFlow' example: with symgrad, np.mean IS the op, so
    x2 = x**2; y = mean(mean(x2, axis=0), axis=0) gives dy/dx = 2 x / 4."""
    x0 = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    x = sg.Variable(x0)
    with sg.GradientTape() as tape:
        x2 = x ** 2
        y = np.mean(np.mean(x2, axis=0), axis=0)
    assert_close(tape.gradient(y, x), x0 / 2, dtype=np.float32)


def test_tape_jacobian_scalar_source():
    """Advanced guide: x = linspace(-10, 10, 201); delta = Variable(0.0); y = sigmoid(x + delta);
    tape.jacobian(y, delta) has shape (201,)."""
    xs = np.linspace(-10.0, 10.0, 201)
    delta = sg.Variable(0.0)
    with sg.GradientTape() as tape:
        y = 1 / (1 + np.exp(-(xs + delta)))
    s = 1 / (1 + np.exp(-xs))
    assert_close(tape.jacobian(y, delta), s * (1 - s))


def test_tape_jacobian_of_dense_layer_wrt_kernel():
    """Advanced guide: y = layer(x) with x (7, 5), Dense(10, relu); jacobian(y, kernel) shape (7, 10, 5, 10)."""
    rng = np.random.default_rng(7)
    x, k0, b0 = rng.standard_normal((7, 5)), rng.standard_normal((5, 10)), rng.standard_normal(10)
    kernel, bias = sg.Variable(k0), sg.Variable(b0)
    with sg.GradientTape(persistent=True) as tape:
        y = np.maximum(x @ kernel + bias, 0.0)
    ref = autograd.jacobian(as_autograd(lambda k: np.maximum(x @ k + b0, 0.0)))(k0)
    assert_close(tape.jacobian(y, kernel), ref)


def test_nested_tapes_second_derivative():
    """Advanced guide: y = x*x*x at x = 1: dy_dx = 3, d2y_dx2 = 6."""
    x = sg.Variable(1.0)
    with sg.GradientTape() as t2:
        with sg.GradientTape() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    assert_close((dy_dx, d2y_dx2), (3.0, 6.0))


def test_nested_tapes_hessian_of_two_layers():
    """Advanced guide: Hessian of mean(layer2(layer1(x))**2) w.r.t. layer1's kernel by
    t2.jacobian(t1.gradient(loss, kernel), kernel): shape kernel.shape * 2."""
    rng = np.random.default_rng(8)
    x, k1, k2 = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    kernel = sg.Variable(k1)
    with sg.GradientTape() as t2:
        with sg.GradientTape() as t1:
            h = np.tanh(x @ kernel)
            loss = np.mean((h @ k2) ** 2)
        g = t1.gradient(loss, kernel)
    H = t2.jacobian(g, kernel)
    ref = autograd.hessian(as_autograd(lambda k: np.mean((np.tanh(x @ k) @ k2) ** 2)))(k1)
    assert_close(H, ref)


def test_forward_accumulator():
    """tf.autodiff.ForwardAccumulator docs: v = Variable([1., 2.]); primal v, tangent [1., 0.];
    jvp of reduce_sum(v ** 3) = 3 v0^2 = 3."""
    v = sg.Variable([1.0, 2.0])
    with sg.ForwardAccumulator(v, sg.constant([1.0, 0.0])) as acc:
        y = np.sum(v ** 3)
    assert_close(acc.jvp(y), 3.0)


def test_custom_gradient_log1pexp():
    """tf.custom_gradient docs: log1pexp with a stable gradient; at x = 100 the gradient is 1.0."""
    @sg.custom_gradient
    def log1pexp(x):
        e = np.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return np.log(1 + e), grad
    x = sg.constant(100.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert_close(tape.gradient(y, x), 1.0)


def test_stop_gradient():
    """tf.stop_gradient: z = stop_gradient(x**2) * x -> dz/dx = x**2 = 9."""
    x = sg.Variable(3.0)
    with sg.GradientTape() as tape:
        z = sg.stop_gradient(x ** 2) * x
    assert_close(tape.gradient(z, x), 9.0)


def test_list_target_and_output_gradients():
    """tape.gradient([y0, y1], x) sums the targets; output_gradients weights them (TF contract)."""
    x = sg.Variable(np.array([1.0, 2.0]))
    with sg.GradientTape(persistent=True) as tape:
        y0 = np.sum(x ** 2)
        y1 = x * 3.0
    assert_close(tape.gradient([y0, y1], x), 2 * np.array([1.0, 2.0]) + 3.0)
    assert_close(tape.gradient(y1, x, output_gradients=np.array([1.0, -2.0])), np.array([3.0, -6.0]))


def test_tape_jacobian_list_of_sources():
    """tape.jacobian(y, [w, b]) for y = tanh(x @ w + b): shapes (2, 3, 2) and (2, 2); autograd reference."""
    x = np.array([0.5, -1.0, 2.0])
    w0, b0 = W0, np.array([0.1, -0.3])
    w, b = sg.Variable(w0), sg.Variable(b0)
    with sg.GradientTape() as tape:
        y = np.tanh(x @ w + b)
    f = as_autograd(lambda w, b: np.tanh(x @ w + b))
    ref = [autograd.jacobian(f, 0)(w0, b0), autograd.jacobian(f, 1)(w0, b0)]
    assert_close(tape.jacobian(y, [w, b]), ref)


def test_float32_variable_gradient_stays_float32():
    """tf.Variable(..., dtype=float32): the gradient is float32 too."""
    x0 = np.array([0.5, 1.5], dtype=np.float32)
    x = sg.Variable(x0)
    with sg.GradientTape() as tape:
        y = np.sum(np.exp(x) * x)
    assert_close(tape.gradient(y, x), np.exp(x0.astype(np.float64)) * (1 + x0), dtype=np.float32)


def test_forward_over_backward_hessian_vector_product():
    """Advanced guide, 'Hessian-vector product': ForwardAccumulator around a GradientTape;
    acc.jvp(tape.gradient(y, x)) = H v.  f = sum(x**3) + x0 x1: H = diag(6 x) + [[0, 1], [1, 0]]."""
    x0, v0 = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    x = sg.constant(x0)
    with sg.ForwardAccumulator(x, sg.constant(v0)) as acc:
        with sg.GradientTape() as tape:
            tape.watch(x)
            y = np.sum(x ** 3) + x[0] * x[1]
        backward = tape.gradient(y, x)
    H = np.diag(6 * x0) + np.array([[0.0, 1.0], [1.0, 0.0]])
    assert_close(acc.jvp(backward), H @ v0)
