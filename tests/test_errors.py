"""Every bad input raises the documented exception type with a message that names the problem."""
import math

import numpy as np
import pytest

import symgrad as sg


def branchy(x):
    if x > 0:
        return x
    return -x


def uses_math_exp(x):
    return math.exp(x) + x


def uses_float(x):
    return float(x) * 2.0


def uses_histogram(v):
    return np.sum(np.histogram(v)[0] * v[0])


def uses_nanmedian(v):
    return np.nanmedian(v)


def uses_floor(x):
    return np.floor(x) * x


def indexes_scalar(x):
    return x[0] * 2.0


def assigns(v):
    v[0] = 1.0
    return np.sum(v)


def index_with_traced(v):
    return v[v[0]]


def two_args(x, y):
    return x * y + x


def vec_out(v):
    return v * 2.0


def inner(a, b):
    return np.sum(a * b)


def cosine(x):
    return np.cos(x) + 1.0


def test_python_if_on_traced_value():
    with pytest.raises(sg.TraceError) as exc:
        sg.grad(branchy)(1.0)
    msg = str(exc.value)
    assert "np.where" in msg
    assert "if x > 0:" in msg  # the offending source line
    assert "branchy" in msg
    assert isinstance(exc.value, TypeError)


def test_math_exp_on_traced_value():
    with pytest.raises(sg.TraceError) as exc:
        sg.jit(uses_math_exp)(1.0)
    msg = str(exc.value)
    assert "np.exp" in msg and "math.exp(x)" in msg and "uses_math_exp" in msg


def test_float_on_traced_value():
    with pytest.raises(sg.TraceError, match="float"):
        sg.grad(uses_float)(1.0)


@pytest.mark.parametrize("fn, name", [(uses_histogram, "histogram"), (uses_nanmedian, "nanmedian")])
def test_unsupported_numpy_function(fn, name):
    with pytest.raises(sg.UnsupportedOperationError) as exc:
        sg.grad(fn, signature="(n)->()")(np.ones(3))
    assert f"numpy.{name}" in str(exc.value)
    assert fn.__name__ in str(exc.value)
    assert isinstance(exc.value, NotImplementedError)


def test_unsupported_ufunc():
    with pytest.raises(sg.UnsupportedOperationError, match=r"numpy\.spacing"):
        sg.grad(lambda x: np.spacing(x) * x)(1.5)
    assert sg.grad(uses_floor)(1.5) == 1.0  # floor has a rule now: d/dx floor(x) * x = floor(x) here


def test_argnums_out_of_range():
    for bad in (2, -3):
        with pytest.raises(ValueError) as exc:
            sg.grad(two_args, argnums=bad)(1.0, 2.0)
        assert f"argnums {bad}" in str(exc.value) and "two_args" in str(exc.value)
        assert "between 0 and 1" in str(exc.value)


@pytest.mark.parametrize("bad", ["x", 1.0, True, (0, "y"), None])
def test_argnums_wrong_type(bad):
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        sg.grad(two_args, argnums=bad)(1.0, 2.0)


def test_signature_wrong_number_of_inputs():
    with pytest.raises(sg.SignatureError) as exc:
        sg.grad(two_args, signature="(n)->()")(np.ones(3), np.ones(3))
    msg = str(exc.value)
    assert "two_args" in msg and "1 input(s)" in msg and "2 argument(s)" in msg
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize("sig", ["(n),(n->()", "n->", "(n)->()->()", "((n))->()"])
def test_malformed_signature(sig):
    with pytest.raises(sg.SignatureError) as exc:
        sg.jit(two_args, signature=sig)
    assert repr(sig) in str(exc.value) and "not a valid gufunc signature" in str(exc.value)


def test_signature_not_a_string():
    with pytest.raises(sg.SignatureError, match="must be a string"):
        sg.jit(two_args, signature=3)


def test_grad_of_non_scalar_output():
    with pytest.raises(sg.SignatureError) as exc:
        sg.grad(vec_out, signature="(n)->(n)")(np.ones(3))
    msg = str(exc.value)
    assert "scalar" in msg and "vec_out" in msg and "jacobian" in msg
    assert isinstance(exc.value, ValueError)


def test_output_does_not_match_signature():
    with pytest.raises(sg.SignatureError, match="returned core shape"):
        sg.jit(inner, signature="(n),(n)->(n)")(np.ones(3), np.ones(3))


def test_inconsistent_core_sizes_in_one_call():
    f = sg.grad(inner, signature="(n),(n)->()")
    with pytest.raises(sg.ShapeError) as exc:
        f(np.ones(3), np.ones(4))
    msg = str(exc.value)
    assert "'n'" in msg and "3" in msg and "4" in msg and "inner" in msg
    assert isinstance(exc.value, ValueError)
    # a consistent call still works afterwards, and a new n simply recompiles
    np.testing.assert_array_equal(f(np.ones(3), np.arange(3.0)), np.arange(3.0))
    np.testing.assert_array_equal(f(np.ones(4), np.arange(4.0)), np.arange(4.0))


def test_argument_rank_too_low_for_signature():
    with pytest.raises(sg.SignatureError, match="core dimensions"):
        sg.grad(inner, signature="(n),(n)->()")(1.0, np.ones(3))


def test_batch_shapes_that_do_not_broadcast():
    f = sg.jit(inner, signature="(n),(n)->()")
    with pytest.raises(sg.ShapeError, match="do not broadcast"):
        f(np.ones((2, 3)), np.ones((5, 3)))


@pytest.mark.parametrize("arg", [1.0 + 2.0j, np.ones(3, dtype=complex)], ids=["scalar", "array"])
def test_complex_input(arg):
    with pytest.raises(sg.DTypeError) as exc:
        sg.grad(cosine)(arg)
    assert "complex" in str(exc.value)
    assert isinstance(exc.value, TypeError)


@pytest.mark.parametrize("arg, word", [(np.ones(2, dtype=np.float16), "float16"), ("a", "<U1")])
def test_other_bad_dtypes(arg, word):
    with pytest.raises(sg.DTypeError, match=word):
        sg.jit(cosine)(arg)


def test_indexing_a_scalar_core():
    # an array argument with no signature is indexed as a whole array (JAX's semantics) ...
    np.testing.assert_array_equal(sg.grad(indexes_scalar)(np.ones(3)), [2.0, 0.0, 0.0])
    # ... a scalar argument cannot be indexed
    with pytest.raises(IndexError) as exc:
        sg.grad(indexes_scalar)(1.0)
    msg = str(exc.value)
    assert "signature" in msg and "(n)" in msg
    assert "x[0]" in msg  # the line


def test_index_out_of_bounds():
    with pytest.raises(IndexError, match="out of bounds"):
        sg.jit(lambda ov: ov[5], signature="(n)->()")(np.ones(3))


def test_item_assignment():
    with pytest.raises(sg.TraceError) as exc:
        sg.grad(assigns, signature="(n)->()")(np.ones(3))
    msg = str(exc.value)
    assert "v[0] = 1.0" in msg and "np.concatenate" in msg


def test_indexing_with_traced_value():
    with pytest.raises(sg.TraceError, match="cannot index with a traced value"):
        sg.jit(index_with_traced, signature="(n)->()")(np.ones(3))


def test_not_callable():
    with pytest.raises(TypeError, match="callable"):
        sg.grad(3.0)


def test_jvp_primal_tangent_count_mismatch():
    with pytest.raises(ValueError, match="1 primal"):
        sg.jvp(cosine, (1.0,), (1.0, 2.0))


def test_errors_share_a_base_class():
    for cls in (sg.TraceError, sg.UnsupportedOperationError, sg.SignatureError, sg.ShapeError, sg.DTypeError):
        assert issubclass(cls, sg.SymgradError)


def test_a_user_directory_named_like_numpy_is_user_code(tmp_path):
    """The error's location is the user's line even in a project directory ending in "numpy"
    (it used to be skipped as NumPy's code: any path containing "numpy/")."""
    import importlib.util

    src = tmp_path / "my-numpy" / "model_with_histogram.py"
    src.parent.mkdir()
    src.write_text("import numpy as np\n\n\ndef f(v):\n    return np.sum(np.histogram(v)[0] * v[0])\n")
    spec = importlib.util.spec_from_file_location("model_with_histogram", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(sg.UnsupportedOperationError) as exc:
        sg.grad(mod.f, signature="(n)->()")(np.ones(3))
    assert "model_with_histogram.py:5" in str(exc.value), str(exc.value)
