"""Eager values, GradientTape and ForwardAccumulator (TensorFlow-style front ends).

These run on the NumPy interpreter (no Numba compilation) except where noted.
"""
import gc
import weakref

import numpy as np
import pytest

import symgrad as sg
from symgrad.api import eager
from symgrad.ir.interpret import evaluate

RNG = np.random.default_rng(20260301)


# -- eager values ------------------------------------------------------------------------------

def test_constant_value_dtype_and_repr():
    x = sg.constant([1.0, 2.0])
    assert isinstance(x, sg.EagerTensor)
    assert x.shape == (2,) and x.dtype == np.float64
    y = x * 3
    np.testing.assert_array_equal(np.asarray(y), [3.0, 6.0])
    assert "numpy=[3., 6.]" in repr(y)
    assert sg.constant(2).dtype == np.float64           # integers become float64
    assert sg.constant(1.5, np.float32).dtype == np.float32


def test_python_numbers_adopt_the_array_dtype():
    x = sg.constant(1.1, np.float32)
    y = 2.0 * x ** 3.5 + 1.0
    assert y.dtype == np.float32
    assert y.numpy() == np.float32(2.0) * np.float32(1.1) ** np.float32(3.5) + np.float32(1.0)
    z = x + sg.constant(1.0)                             # float32 with float64 -> float64 (NumPy promotion)
    assert z.dtype == np.float64


def test_concrete_values_allow_python_control_flow():
    x = sg.constant(3.0)
    assert float(x) == 3.0 and int(x) == 3 and bool(x > 2)
    assert [10, 11, 12, 13][x] == 13
    assert f"{x * 2:.2f}" == "6.00"
    y = x * x if x > 0 else -x
    assert float(y) == 9.0
    with pytest.raises(TypeError, match="integer"):
        [0, 1][sg.constant(0.5)]


def test_value_only_numpy_functions_use_values():
    x = sg.constant([1.0, np.nan])
    np.testing.assert_array_equal(np.isnan(x), [False, True])
    assert np.allclose(sg.constant([1.0, 2.0]), [1.0, 2.0])
    assert int(np.argmax(sg.constant([1.0, 5.0, 2.0]))) == 1


def test_eager_values_match_the_reference_interpreter():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    x, w = sg.constant(a), sg.constant(b)
    y = np.tanh(x @ w) * np.exp(-np.sum(x ** 2, axis=1)) + np.logaddexp(x[:, 0], 0.5)
    g = y.ctx.graph
    ref, = evaluate(g, [y.id], {x.id: a, w.id: b})
    np.testing.assert_allclose(y.numpy(), ref, rtol=0, atol=0)


def test_context_is_released_with_its_values():
    x = sg.constant(1.0)
    ref = weakref.ref(x.ctx)
    del x
    gc.collect()
    assert ref() is None
    y = sg.constant(1.0)
    assert y.ctx is eager.current_context()


# -- GradientTape ------------------------------------------------------------------------------

def test_tape_gradient_nested_sources():
    x, y = sg.constant(2.0), sg.constant([1.0, 3.0])
    with sg.GradientTape() as tape:
        tape.watch([x, y])
        z = x ** 2 * np.sum(y)
    grads = tape.gradient(z, {"x": x, "ys": (y,)})
    assert float(grads["x"]) == 16.0
    np.testing.assert_array_equal(np.asarray(grads["ys"][0]), [4.0, 4.0])


def test_tape_unwatched_and_unconnected_sources():
    x, c = sg.constant(2.0), sg.constant(5.0)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        z = x * c
    assert tape.gradient(z, c) is None                  # not watched: as in TensorFlow
    other = sg.constant([1.0, 2.0])
    assert tape.gradient(z, other) is None
    zero = tape.gradient(z, other, unconnected_gradients="zero")
    np.testing.assert_array_equal(np.asarray(zero), [0.0, 0.0])
    assert float(tape.gradient(z, x)) == 5.0
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(z, x, unconnected_gradients="nan")


def test_tape_gradient_wrt_intermediate_value():
    x = sg.constant(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y + x
    assert float(tape.gradient(z, y)) == 18.0           # dz/dy with x held fixed: 2 y


def test_tape_nonscalar_target_and_output_gradients():
    a = RNG.standard_normal(3)
    x = sg.constant(a)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = np.sin(x)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), np.cos(a))    # sum of outputs
    w = RNG.standard_normal(3)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x, output_gradients=w)), w * np.cos(a))
    np.testing.assert_allclose(np.asarray(tape.gradient([y, 2 * y], x)), 3 * np.cos(a))  # targets summed
    with pytest.raises(ValueError, match="shape"):
        tape.gradient(y, x, output_gradients=np.ones(4))


def test_non_persistent_tape_can_be_used_once():
    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x ** 3
    assert float(tape.gradient(y, x)) == 12.0
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.gradient(y, x)


def test_tape_watch_rejects_plain_arrays():
    with sg.GradientTape() as tape:
        with pytest.raises(TypeError, match="symgrad.constant"):
            tape.watch(np.ones(2))


def test_tape_watches_variables_read_inside():
    v = sg.Variable(np.array([1.0, 2.0]), name="v")
    x = sg.constant(3.0)
    with sg.GradientTape() as tape:
        y = np.sum(x * sg.convert_to_tensor(v) ** 2)
    assert tape.watched_variables() == (v,)
    np.testing.assert_array_equal(np.asarray(tape.gradient(y, v)), [6.0, 12.0])


def test_tape_variable_read_via_arithmetic_with_eager_value():
    v = sg.Variable(np.array([1.0, 2.0]))
    x = sg.constant([3.0, 4.0])
    with sg.GradientTape() as tape:
        y = np.sum(x * v)                                # reads v through to_node
    np.testing.assert_array_equal(np.asarray(tape.gradient(y, v)), [3.0, 4.0])


def test_watch_accessed_variables_false():
    v, w = sg.Variable(2.0), sg.Variable(5.0)
    with sg.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(v)
        y = sg.convert_to_tensor(v) * sg.convert_to_tensor(w)
    assert float(tape.gradient(y, v)) == 5.0
    assert tape.gradient(y, w) is None


def test_variable_assign_between_tapes_uses_new_value():
    v = sg.Variable(np.array([1.0, 2.0]))
    for step in range(3):
        with sg.GradientTape() as tape:
            loss = np.sum(sg.convert_to_tensor(v) ** 2)
        grad = np.asarray(tape.gradient(loss, v))
        np.testing.assert_array_equal(grad, 2 * v.value)
        v.assign(v.value - 0.25 * grad)
    np.testing.assert_allclose(v.value, np.array([1.0, 2.0]) * 0.5 ** 3)


def test_nested_tapes_give_second_derivatives():
    x = sg.constant(1.5)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = np.sin(x) * x
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    np.testing.assert_allclose(float(dy), np.cos(1.5) * 1.5 + np.sin(1.5), rtol=1e-15)
    np.testing.assert_allclose(float(d2y), 2 * np.cos(1.5) - 1.5 * np.sin(1.5), rtol=1e-15)


def test_tape_jacobian():
    a = RNG.standard_normal(3)
    m = RNG.standard_normal((2, 3))
    x = sg.constant(a)
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = np.tanh(m @ x)
    jac = np.asarray(tape.jacobian(y, x))
    np.testing.assert_allclose(jac, (1 - np.tanh(m @ a) ** 2)[:, None] * m, rtol=1e-13)
    other = sg.constant(1.0)
    assert tape.jacobian(y, other) is None
    assert np.asarray(tape.jacobian(y, other, unconnected_gradients="zero")).shape == (2,)


def test_tape_with_stop_gradient():
    x = sg.constant(3.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * sg.stop_gradient(x)
    assert float(y) == 9.0
    assert float(tape.gradient(y, x)) == 3.0


def test_compiled_transformation_inside_a_tape():
    x = sg.constant(2.0)
    cube_grad = sg.grad(lambda t: t ** 3 + 0.0625 * t)   # a fresh Compiled: first call is traced
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = cube_grad(x)                                  # traced into the eager graph
    assert isinstance(y, sg.EagerTensor)
    assert float(y) == 12.0625
    assert float(tape.gradient(y, x)) == 12.0


def test_compiled_transformation_on_eager_value_after_a_plain_call():
    f = sg.grad(lambda t: t ** 3 + 0.125 * t)
    assert float(f(2.0)) == 12.125                        # sets the fast path
    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert isinstance(y, sg.EagerTensor)
    assert float(tape.gradient(y, x)) == 12.0


# -- ForwardAccumulator ------------------------------------------------------------------------

def test_accumulator_jvp_matches_analytic():
    a, v = RNG.standard_normal(3), RNG.standard_normal(3)
    x = sg.constant(a)
    with sg.ForwardAccumulator(x, v) as acc:
        y = np.exp(x) * np.sum(x)
    np.testing.assert_allclose(np.asarray(acc.jvp(y)), np.exp(a) * v * np.sum(a) + np.exp(a) * np.sum(v),
                               rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(acc.jvp(x)), v)   # a primal's JVP is its tangent


def test_accumulator_structures_and_unconnected():
    x, y = sg.constant(1.0), sg.constant(2.0)
    with sg.ForwardAccumulator({"a": x, "b": y}, {"a": 1.0, "b": 10.0}) as acc:
        z = x * y
        c = sg.constant(4.0) * 2
    out = acc.jvp((z, [c]))
    assert float(out[0]) == 12.0 and out[1][0] is None
    assert float(acc.jvp(c, unconnected_gradients="zero")) == 0.0


def test_accumulator_rejects_duplicate_primals():
    x = sg.constant(1.0)
    with pytest.raises(ValueError, match="twice"):
        sg.ForwardAccumulator([x, x], [1.0, 2.0])
    v = sg.Variable(1.0)
    with pytest.raises(ValueError, match="twice"):
        sg.ForwardAccumulator((v, v), (1.0, 1.0))


def test_accumulator_rejects_bad_tangents():
    x = sg.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        sg.ForwardAccumulator(x, np.ones(3))
    with pytest.raises(ValueError, match="tangent"):
        sg.ForwardAccumulator([x], [1.0, 2.0])
    with pytest.raises(TypeError, match="symgrad.constant"):
        sg.ForwardAccumulator(np.ones(2), np.ones(2))


def test_accumulator_with_variable_primal():
    v = sg.Variable(np.array([1.0, 2.0]))
    with sg.ForwardAccumulator(v, np.array([0.5, -1.0])) as acc:
        y = np.sum(sg.convert_to_tensor(v) ** 2)
    assert float(acc.jvp(y)) == 2 * (1.0 * 0.5 + 2.0 * -1.0)
    np.testing.assert_array_equal(np.asarray(acc.jvp(v)), [0.5, -1.0])


def test_accumulator_uses_custom_gradient_by_transposition():
    @sg.custom_gradient
    def scaled(x):
        def grad(up):
            return up * 7.0                               # deliberately not the true derivative
        return 2.0 * x, grad
    x = sg.constant(1.0)
    with sg.ForwardAccumulator(x, 1.0) as acc:
        y = scaled(x)
    assert float(y) == 2.0
    assert float(acc.jvp(y)) == 7.0


def test_tape_jvp_and_vjp_are_transposes():
    a = RNG.standard_normal(4)
    w, v = RNG.standard_normal(2), RNG.standard_normal(4)
    m = RNG.standard_normal((2, 4))
    x = sg.constant(a)
    with sg.ForwardAccumulator(x, v) as acc:
        with sg.GradientTape() as tape:
            tape.watch(x)
            y = np.tanh(m @ x) * np.sum(x ** 2)
    jv = np.asarray(acc.jvp(y))
    vj = np.asarray(tape.gradient(y, x, output_gradients=w))
    np.testing.assert_allclose(np.dot(w, jv), np.dot(vj, v), rtol=1e-13)
