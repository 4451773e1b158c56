"""Captured values are never stale; Variables stay on a GradientTape through numpy calls; check is relative."""
import functools

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import TraceError

SCALE = np.array([1.0, 1.0, 1.0])


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return self.w * x ** 2


def test_attribute_rebound_after_compiling_is_seen():
    m = Model(2.0)
    g = sg.grad(m.loss)
    assert g(1.0) == 4.0
    m.w = 7.0
    assert g(1.0) == 14.0


def test_global_array_changed_in_place_is_seen():
    g = sg.grad(lambda v: np.sum(SCALE * v ** 2))
    np.testing.assert_array_equal(g(np.ones(3)), [2.0, 2.0, 2.0])
    SCALE[0] = 5.0
    try:
        np.testing.assert_array_equal(g(np.ones(3)), [10.0, 2.0, 2.0])
    finally:
        SCALE[0] = 1.0
    np.testing.assert_array_equal(g(np.ones(3)), [2.0, 2.0, 2.0])


def test_every_transformation_sees_a_changed_global():
    """vjp, jvp and hvp look their kernels up without going through a compiled callable's call:
    they once answered with the old global (jvp 9.0 instead of 18.0 below)."""
    m = Model(1.0)
    f = lambda x: m.w * np.sum(x ** 3)  # noqa: E731
    x, v = np.ones(3), np.array([1.0, 2.0, 3.0])
    before = (sg.jvp(f, (x,), (v,))[1], sg.vjp(f, x)[1](1.0)[0], sg.hvp(f, (x,), (v,)),
              sg.hessian(f)(x), sg.value_and_grad(f)(x)[1])
    np.testing.assert_array_equal(before[0], 18.0)
    m.w = 2.0  # every derivative doubles: d/dx = 3 w x^2, H = 6 w diag(x)
    after = (sg.jvp(f, (x,), (v,))[1], sg.vjp(f, x)[1](1.0)[0], sg.hvp(f, (x,), (v,)),
             sg.hessian(f)(x), sg.value_and_grad(f)(x)[1])
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, 2 * np.asarray(b))
    np.testing.assert_array_equal(after[2], 12.0 * v)


class Config:
    w = 1.0  # a class-level default, read through an instance


def test_sparse_derivatives_and_class_attributes_see_changes():
    cfg = Config()
    s = lambda x: cfg.w * np.sum(x ** 3)  # noqa: E731
    g, H = sg.grad(s), sg.hessian(s, signature="(n)->()", sparse=True)
    x = np.ones(3)
    np.testing.assert_array_equal(g(x), 3.0)
    np.testing.assert_array_equal(H(x).toarray(), 6.0 * np.eye(3))
    cfg.w = 2.0  # an instance attribute now shadows the class's
    np.testing.assert_array_equal(g(x), 6.0)
    np.testing.assert_array_equal(H(x).toarray(), 12.0 * np.eye(3))
    del cfg.w
    Config.w = 5.0  # the class attribute itself
    try:
        np.testing.assert_array_equal(g(x), 15.0)
        np.testing.assert_array_equal(H(x).toarray(), 30.0 * np.eye(3))
    finally:
        Config.w = 1.0


def test_closure_cell_and_partial():
    k = 3.0
    f = sg.jit(lambda v: k * v)
    assert f(2.0) == 6.0
    k = 4.0  # noqa: F841 - read through the closure cell
    assert f(2.0) == 8.0
    scale = np.array(2.0)
    p = functools.partial(lambda v, s: s * v, s=scale)
    gp = sg.grad(p)
    assert gp(1.0) == 2.0
    scale[()] = 5.0
    assert gp(1.0) == 5.0


def test_numpy_calls_on_variables_stay_on_the_tape():
    w = sg.Variable(np.ones(3), name="w")
    with sg.GradientTape() as tape:
        loss = np.sum(np.exp(w))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, w)), np.e * np.ones(3))
    with sg.GradientTape() as tape:
        loss = np.sum(np.array([1.0, 2.0, 3.0]) * w) + w.sum()  # ndarray on the left; a method
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, w)), [2.0, 3.0, 4.0])


def test_tensorflow_guide_dense_layer():
    """TensorFlow guide "Introduction to gradients": y = x @ w + b; loss = reduce_mean(y ** 2)."""
    x = np.array([[1.0, 2.0, 3.0]])
    w = sg.Variable(np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]]), name="w")
    b = sg.Variable(np.array([0.5, -1.0]), name="b")
    with sg.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = np.mean(y ** 2)
    y_val = x @ w.numpy() + b.numpy()
    dl_dy = 2 * y_val / y_val.size
    dw, db = tape.gradient(loss, [w, b])
    np.testing.assert_allclose(np.asarray(dw), x.T @ dl_dy, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(db), dl_dy.sum(axis=0), rtol=1e-14)
    grads = tape.gradient(loss, {"w": w, "b": b})
    assert set(grads) == {"w", "b"}
    np.testing.assert_allclose(np.asarray(grads["b"]), dl_dy.sum(axis=0), rtol=1e-14)
    assert isinstance(tape.gradient(loss, (w, b)), tuple)


def test_variable_in_a_compiled_function_is_refused_through_numpy_calls():
    w = sg.Variable(np.ones(3), name="w")
    with pytest.raises(TraceError, match="Variable 'w' was read inside a compiled transformation"):
        sg.jit(lambda v: np.exp(w) * v)(1.0)


def test_check_fails_a_wrong_derivative_far_below_the_absolute_tolerance(tmp_path, capsys):
    """A derivative of size ~1e-63 with the wrong sign: the relative error is 2, so check fails."""
    from symgrad.cli import main

    src = tmp_path / "wrong.py"
    src.write_text(
        "import numpy as np\nimport symgrad as sg\n\n"
        "@sg.custom_gradient\n"
        "def bump(x):\n"
        "    y = np.exp(-x * x)\n"
        "    return y, lambda u: u * 2.0 * x * y  # wrong sign\n")
    assert main(["check", f"{src}:bump", "--range", "12:12.5", "--points", "1"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "2.0e+00" in out
