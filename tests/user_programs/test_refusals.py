"""Constructs a traced function cannot have: each must raise a typed symgrad error that names
the construct (never a wrong number, never an internal exception).  Programs from autograd's
tutorial and the usual first attempts of JAX/autograd users."""
import math

import numpy as np
import pytest

import symgrad as sg

from ._reference import assert_refused


def relu_if(x):
    """A Python `if` on a traced value (JAX's 'control flow' docs)."""
    if x > 0:
        return x
    return 0.0 * x


def test_python_if_on_traced_value():
    with pytest.raises(sg.TraceError) as e:
        sg.grad(relu_if)(1.5)
    assert_refused(e, "if", "branch")
    assert "np.where" in str(e.value) or "sg.where" in str(e.value)


def taylor_sine(x):
    """autograd tutorial: a while loop whose condition depends on x."""
    ans = currterm = x
    i = 0
    while np.abs(currterm) > 0.001:
        currterm = -currterm * x ** 2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        i += 1
    return ans


def test_while_loop_on_traced_value():
    with pytest.raises(sg.TraceError) as e:
        sg.grad(taylor_sine)(np.pi)
    assert_refused(e, "while", "branch")


def test_math_exp_on_tracer():
    with pytest.raises(sg.TraceError) as e:
        sg.grad(lambda x: math.exp(x) * x)(1.0)
    assert_refused(e, "math.exp", "math.")
    assert "np.exp" in str(e.value)


def test_float_of_tracer():
    with pytest.raises(sg.TraceError) as e:
        sg.grad(lambda x: float(x) * x)(1.0)
    assert_refused(e, "float(")


def test_item_of_tracer():
    with pytest.raises(sg.TraceError) as e:
        sg.grad(lambda x: x.item() * x)(1.0)
    assert_refused(e, ".item()")


def test_traced_index():
    """Indexing with a value computed from the input (a traced index)."""
    with pytest.raises(sg.TraceError) as e:
        sg.grad(lambda x: x[int(x[0])] ** 2, signature="(n)->()")(np.array([1.0, 2.0, 3.0]))
    assert_refused(e, "int", "index")


def test_traced_index_without_signature():
    """The same with JAX habits (no signature): still a typed refusal naming the traced index."""
    with pytest.raises(sg.TraceError) as e:
        sg.grad(lambda x: x[int(x[0])] ** 2)(np.array([1.0, 2.0, 3.0]))
    assert_refused(e, "int", "index")


def test_argmax_index():
    """x[np.argmax(x)]: a data-dependent index; refused (TraceError or UnsupportedOperationError)."""
    with pytest.raises((sg.TraceError, sg.UnsupportedOperationError)) as e:
        sg.grad(lambda x: x[np.argmax(x)] ** 2, signature="(n)->()")(np.array([1.0, 3.0, 2.0]))
    assert_refused(e, "argmax", "index")


def set_first(x):
    """In-place assignment (JAX: 'arrays are immutable'; use x.at[0].set)."""
    x[0] = 0.0
    return np.sum(x ** 2)


def test_item_assignment():
    with pytest.raises(sg.TraceError) as e:
        sg.grad(set_first, signature="(n)->()")(np.ones(3))
    assert_refused(e, "x[i] = ", "assign")


def test_and_or_on_traced_value():
    with pytest.raises(sg.TraceError) as e:
        sg.grad(lambda x: (x > 0 and x) or -x)(1.0)
    assert_refused(e, "and", "or", "branch")


def test_unsupported_numpy_function_fft():
    with pytest.raises(sg.UnsupportedOperationError) as e:
        sg.grad(lambda x: np.sum(np.abs(np.fft.fft(x))), signature="(n)->()")(np.ones(4))
    assert_refused(e, "fft")


def test_unsupported_linalg_eig():
    with pytest.raises(sg.UnsupportedOperationError) as e:
        sg.grad(lambda A: np.sum(np.linalg.eig(A)[0].real), signature="(n,n)->()")(np.eye(3))
    assert_refused(e, "eig")


def test_complex_input():
    """JAX cookbook's complex section: symgrad is real-only and says so."""
    with pytest.raises(sg.DTypeError) as e:
        sg.grad(lambda z: np.abs(z) ** 2)(1.0 + 2.0j)
    assert_refused(e, "complex")


def test_grad_of_vector_output_without_signature_names_jacobian():
    """JAX: 'Gradient only defined for scalar-output functions'; symgrad names jacobian."""
    with pytest.raises((TypeError, ValueError)) as e:
        sg.grad(lambda x: x[:2] * np.sum(x))(np.array([1.0, 2.0, 3.0]))
    assert_refused(e, "jacobian")


def test_grad_of_vector_output_with_signature_names_jacobian():
    with pytest.raises((TypeError, ValueError)) as e:
        sg.grad(lambda x: x * 2.0, signature="(n)->(n)")(np.ones(3))
    assert_refused(e, "jacobian")


def test_argnums_out_of_range():
    with pytest.raises((TypeError, ValueError)) as e:
        sg.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)
    assert "argnums" in str(e.value) and "2" in str(e.value)


def test_fixed_size_signature_dimension_is_checked():
    """NumPy gufunc grammar: "(3)" is a fixed core size; a length-4 vector must be refused."""
    with pytest.raises((sg.ShapeError, sg.SignatureError)) as e:
        sg.grad(lambda x: np.sum(x ** 2), signature="(3)->()")(np.ones(4))
    assert_refused(e, "3", "4")


def test_shape_mismatch_between_calls_under_signature():
    """Core sizes bind per call shape; two vectors of different lengths in one call are refused."""
    with pytest.raises(sg.ShapeError) as e:
        sg.grad(lambda x, y: np.dot(x, y), signature="(n),(n)->()")(np.ones(3), np.ones(4))
    assert_refused(e, "'n'")


def test_tracer_attribute_error_is_typed():
    """A numpy array method with no rule must be a typed refusal naming the method, not AttributeError
    from symgrad's Tracer (`.argsort()` is not differentiable and outside the planned vocabulary)."""
    with pytest.raises(sg.SymgradError) as e:
        sg.grad(lambda x: np.sum(x[x.argsort()] ** 2), signature="(n)->()")(np.array([3.0, 1.0, 2.0]))
    assert_refused(e, "argsort")
