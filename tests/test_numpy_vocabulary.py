"""The NumPy structural vocabulary and array methods (issue 14), checked against NumPy and JAX.

Each row of ``CASES`` is one traced program written once against an array module
``xp`` (``numpy`` for symgrad and the value reference, ``jax.numpy`` for the
derivative reference, run in x64).  For each row:

(a) the compiled value equals NumPy's (same shape, rtol 1e-12);
(b) the JVP in a random direction equals ``jax.jvp``'s (value and tangent come from
    one compiled pass);
(c) the gradient of <w, f(x)> for a random cotangent ``w`` (reverse mode, J^T w)
    equals ``jax.vjp``'s, and <w, J v> = <J^T w, v>.

Rules are checked with ``stabilize=False`` (the rewriting pass is tested elsewhere).
Inputs are random normals (ties have probability zero); ties are tested separately.
"""
import numpy as np
import pytest
from numpy.exceptions import AxisError

import symgrad as sg
from symgrad.errors import ArgumentError, TraceError, UnsupportedOperationError

try:  # the derivative reference; the tests that need it skip without it (pip install jax)
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = jnp = None
needs_jax = pytest.mark.skipif(jax is None, reason="JAX (x64) is the derivative reference")

MASK = np.array([True, False, True, True, False, True])
ROW_MASK = np.array([True, False, True, True])  # where= masks that broadcast against a (3, 4) core
COL_MASK = np.array([[True], [False], [True]])
IDX = np.array([[0, 2], [5, 5]])
ALONG = np.array([[2, 0, 1, 1], [0, 0, 3, 1], [1, 2, 2, 0]])

V, M = (6,), (3, 4)
# name, program(xp) -> f, signature, core shape of the input
CASES = [
    ("max", lambda xp: lambda x: xp.max(x), "(n)->()", V),
    ("min_axis_keepdims", lambda xp: lambda x: xp.min(x, axis=-1, keepdims=True), "(m,n)->(m,k)", M),
    ("amax_axis0", lambda xp: lambda x: xp.amax(x, axis=0), "(m,n)->(n)", M),
    ("ptp", lambda xp: lambda x: xp.ptp(x, axis=1), "(m,n)->(m)", M),
    ("prod", lambda xp: lambda x: xp.prod(x, axis=0), "(m,n)->(n)", M),
    ("cumsum", lambda xp: lambda x: xp.cumsum(x, axis=0), "(m,n)->(m,n)", M),
    ("cumsum_flat", lambda xp: lambda x: xp.cumsum(x), "(m,n)->(k)", M),
    ("cumprod", lambda xp: lambda x: xp.cumprod(x, axis=1), "(m,n)->(m,n)", M),
    ("diff", lambda xp: lambda x: xp.diff(x, n=2, axis=1), "(m,n)->(m,k)", M),
    ("var_std", lambda xp: lambda x: xp.var(x, axis=0) + xp.std(x, ddof=1), "(m,n)->(n)", M),
    ("average", lambda xp: lambda x: xp.average(x, axis=1, weights=xp.array([1., 2., 3., 4.])), "(m,n)->(m)", M),
    ("outer_inner", lambda xp: lambda x: xp.outer(x, x[:3]) + xp.inner(x, x), "(n)->(n,k)", V),
    ("tensordot", lambda xp: lambda x: xp.tensordot(x, x * x, axes=([1], [1])), "(m,n)->(m,k)", M),
    ("einsum3", lambda xp: lambda x: xp.einsum("ij,kj,k->i", x, x, x[:, 0]), "(m,n)->(m)", M),
    ("einsum_trace", lambda xp: lambda x: xp.einsum("ii->", x[:, :3]) + xp.einsum("ij->j", x)[0], "(m,n)->()", M),
    ("trace_diagonal", lambda xp: lambda x: xp.trace(x, 1) + xp.diagonal(x, -1)[0], "(m,n)->()", M),
    ("diag", lambda xp: lambda x: xp.diag(x, 1) + xp.diag(xp.diag(xp.outer(x, x), -1), 2), "(n)->(k,k)", V),
    ("triu_tril", lambda xp: lambda x: xp.triu(x, 1) - 2 * xp.tril(x), "(m,n)->(m,n)", M),
    ("cross", lambda xp: lambda x: xp.cross(x[:, :3], x[:, 1:]), "(m,n)->(m,k)", M),
    ("kron", lambda xp: lambda x: xp.kron(x[:2, :2], x[1:, 1:3]), "(m,n)->(a,b)", M),
    ("reshape_moves", lambda xp: lambda x: xp.moveaxis(xp.swapaxes(xp.reshape(x, (2, 2, 3), order="F"), 0, 1),
                                                        0, -1).ravel(), "(m,n)->(k)", M),
    ("expand_squeeze", lambda xp: lambda x: xp.squeeze(xp.expand_dims(x, 0), axis=0)
     + xp.atleast_2d(x[0])[0] + xp.broadcast_to(x[0], (3, 4)), "(m,n)->(m,n)", M),
    ("tile_repeat", lambda xp: lambda x: xp.tile(x, 2) + xp.repeat(x, 2), "(n)->(k)", V),
    ("flip_roll", lambda xp: lambda x: xp.flip(x, 1) + xp.roll(x, -1, axis=0) + xp.roll(x, 2), "(m,n)->(m,n)", M),
    ("pad", lambda xp: lambda x: xp.pad(x, ((1, 0), (2, 1))) + xp.pad(x, ((0, 1), (1, 2)), mode="edge"),
     "(m,n)->(a,b)", M),
    ("stacks", lambda xp: lambda x: xp.hstack([x, x[:2]])[2:] + xp.vstack([x[:3], x[3:]]).ravel()
     + xp.column_stack([x[:4], x[2:]]).ravel()[:6], "(n)->(k)", V),
    ("split", lambda xp: lambda x: xp.split(x, 3)[1] * xp.array_split(x, 4)[-1], "(n)->(k)", V),
    ("take", lambda xp: lambda x: xp.take(x, xp.asarray(IDX), axis=1), "(m,n)->(m,a,b)", (3, 6)),
    ("take_along_axis", lambda xp: lambda x: xp.take_along_axis(x, xp.asarray(ALONG), axis=1), "(m,n)->(m,n)", M),
    ("fancy", lambda xp: lambda x: x[xp.asarray([0, 2])][:, :3] + x[:, xp.asarray([1, 3, 3])][xp.asarray([2, 0])],
     "(m,n)->(a,b)", M),
    ("mask", lambda xp: lambda x: x[MASK] + x[xp.asarray(IDX[1])][0], "(n)->(k)", V),
    ("fancy_mixed", lambda xp: lambda x: x[0, :, xp.asarray([1, 0])], "(a,m,n)->(b,m)", (2, 3, 4)),
    ("interp", lambda xp: lambda x: xp.interp(x, xp.array([-1.0, 0.0, 0.5, 2.0]), xp.array([0.0, 1.0, -1.0, 3.0])),
     "(n)->(n)", V),
    ("interp_fp", lambda xp: lambda x: xp.interp(xp.array([-3., 0.25, 1.0]), xp.array([-1.0, 0.0, 0.5, 2.0]), x[:4]),
     "(n)->(k)", V),
    ("polyval", lambda xp: lambda x: xp.polyval(x[:3], x), "(n)->(n)", V),
    ("nansum_nanmean", lambda xp: lambda x: xp.nansum(x, axis=0) * xp.nanmean(x), "(m,n)->(n)", M),
    ("sum_mean_where_initial", lambda xp: lambda x: xp.sum(x ** 2, axis=1, where=x > 0, initial=1.5)
     + xp.mean(x ** 3, axis=1, where=xp.asarray(ROW_MASK)) + x.sum(axis=1, where=x < 0.5)
     + x.mean(axis=1, keepdims=True, where=xp.asarray(ROW_MASK))[:, 0], "(m,n)->(m)", M),
    ("prod_max_var_where", lambda xp: lambda x: xp.prod(x, axis=0, where=xp.asarray(COL_MASK), initial=2.0)
     + xp.max(x, axis=0, where=x < 1.0, initial=-5.0) + xp.var(x, axis=0, where=xp.asarray(COL_MASK))
     + xp.std(x, axis=0, ddof=1, where=x > -1.0), "(m,n)->(n)", M),
    ("nansum_nanmean_where", lambda xp: lambda x: xp.nansum(x, axis=1, where=x > 0, initial=0.5)
     * xp.nanmean(x, axis=1, where=xp.asarray(ROW_MASK)), "(m,n)->(m)", M),
    ("full_like", lambda xp: lambda x: xp.full_like(x, 2.5) * x + xp.full_like(x, x[1, 2]), "(m,n)->(m,n)", M),
    ("matrix_power", lambda xp: lambda x: xp.linalg.matrix_power(x[:, :3], 5) + xp.linalg.matrix_power(x[:, 1:], 0)
     - xp.linalg.matrix_power(x[:, :3] + 3 * xp.eye(3), -2), "(m,n)->(m,m)", M),
]


def _point(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape)


@needs_jax
@pytest.mark.parametrize("name,prog,sig,shape", CASES, ids=[c[0] for c in CASES])
def test_value_vjp_jvp_match_numpy_and_jax(name, prog, sig, shape):
    f_np, f_jax = prog(np), prog(jnp)
    x = _point(shape, len(name))
    ref = f_np(x)
    rng = np.random.default_rng(1)
    w, v = rng.standard_normal(np.shape(ref)), rng.standard_normal(shape)
    # one compiled pass gives the value and J v
    out, jv = sg.jvp(f_np, (x,), (v,), signature=sig, stabilize=False)
    assert np.shape(out) == np.shape(ref)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-13)
    jax_out, jax_jv = jax.jvp(f_jax, (jnp.asarray(x),), (jnp.asarray(v),))
    np.testing.assert_allclose(out, np.asarray(jax_out), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(jv, np.asarray(jax_jv), rtol=1e-10, atol=1e-12)
    # reverse mode: the gradient of <w, f(x)> is J^T w
    jtw = sg.grad(lambda x: np.sum(w * f_np(x)), signature=sig.split("->")[0] + "->()", stabilize=False)(x)
    np.testing.assert_allclose(jtw, np.asarray(jax.vjp(f_jax, jnp.asarray(x))[1](jnp.asarray(w))[0]),
                               rtol=1e-10, atol=1e-12)
    assert np.vdot(w, jv) == pytest.approx(np.vdot(jtw, v), rel=1e-10, abs=1e-12)


@needs_jax
def test_ties_split_the_derivative_equally_as_in_jax():
    x = np.array([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 2.0, -1.0, 0.0]])

    def f(x, xp):
        return xp.sum(xp.max(x, axis=1) * xp.array([1.0, 2.0, 3.0])) + 5 * xp.min(x) + xp.max(x[0]) * x[1, 0]

    g = sg.grad(lambda x: f(x, np), signature="(m,n)->()", stabilize=False)(x)
    expected = np.asarray(jax.grad(lambda x: f(x, jnp))(jnp.asarray(x)))
    np.testing.assert_allclose(g, expected, rtol=1e-14)
    assert g[0, 1] == g[0, 2] == 0.5 + 0.5 * 0.5  # row max split in two, plus x[0]'s max times x[1, 0]
    dmax = sg.grad(lambda x: np.max(x), signature="(n)->()", stabilize=False)
    np.testing.assert_allclose(dmax(np.array([1.0, 2.0, 2.0])), [0.0, 0.5, 0.5])


def test_nan_propagates_through_max_and_min():
    f = sg.jit(lambda x: np.stack([np.max(x), np.min(x), np.nanmean(x)]), signature="(n)->(k)", stabilize=False)
    out = f(np.array([1.0, np.nan, 3.0]))
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == 2.0


def test_float32_once_per_family():
    """Values in float32 match NumPy's float32 result; the derivative stays float32."""
    def f(x):
        return np.stack([np.max(x), np.var(x), np.prod(x[:3]), np.cumsum(x)[-1], x[[1, 3]].sum(),
                         np.trace(np.outer(x, x)), np.interp(0.3, [0.0, 1.0], x[:2])])
    x = _point(V, 3).astype(np.float32)
    out = sg.jit(f, signature="(n)->(k)")(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, f(x.astype(np.float64)), rtol=2e-6, atol=1e-6)
    dh = sg.grad(lambda x: np.max(np.cumsum(x)) + np.var(x), signature="(n)->()")
    g, g64 = dh(x), dh(x.astype(np.float64))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, g64, rtol=1e-5, atol=1e-6)


def test_array_methods_have_no_attribute_errors():
    def f(x):
        m = x.reshape(2, 3)
        return np.stack([x.max(), x.min(), x.var(), x.std(ddof=1), x.prod(), x.sum(), x.mean(), x.max() - x.min(),
                         x.cumsum()[-2], x.cumprod()[2], x.dot(x), m.T[2, 1], m.ravel()[4], x.clip(-0.5, 0.5)[0],
                         x.copy()[1], m.flatten()[5], x.astype(float)[3], m.swapaxes(0, 1)[0, 1],
                         m.diagonal()[1], m.trace(), x.take([4]).squeeze(), m.transpose(1, 0)[1, 0],
                         x.repeat(2)[3], m.squeeze()[0, 0], m.max(axis=0).min(), x[[1, 3]][1]])
    x = _point(V, 7)
    np.testing.assert_allclose(sg.jit(f, signature="(n)->(k)", stabilize=False)(x), f(x), rtol=1e-12)
    ptp = sg.jit(lambda x: x.reshape(2, 3).ptp(axis=1), signature="(n)->(k)", stabilize=False)(x)
    np.testing.assert_allclose(ptp, np.ptp(x.reshape(2, 3), axis=1), rtol=1e-14)  # ndarray.ptp left NumPy 2.0


def test_all_any_on_constant_masks_and_errors_on_traced_ones():
    def f(x):
        mask = np.arange(6) > 1
        assert (np.asarray(mask) == mask).all()
        return x[mask].sum()
    x = _point(V, 2)
    assert sg.jit(f, signature="(n)->()", stabilize=False)(x) == pytest.approx(x[2:].sum(), rel=1e-14)
    with pytest.raises(TraceError, match=r"\.all\(\) of a traced value"):
        sg.jit(lambda x: x + (x > 0).all(), signature="(n)->(n)")(x)


@pytest.mark.parametrize("bad,exc,pattern", [
    (lambda x: np.sum(x, axis=2), AxisError, "axis 2 is out of bounds"),
    (lambda x: np.max(x, axis=-3), AxisError, "axis -3 is out of bounds"),
    (lambda x: np.cumsum(x, axis=5), AxisError, "out of bounds"),
    (lambda x: np.transpose(x, (0, 2)), AxisError, "out of bounds"),
    (lambda x: np.squeeze(x, axis=0), ValueError, "size not equal to one"),
    (lambda x: x[np.array([0, 7])], IndexError, "out of bounds"),
    (lambda x: np.argmax(x), UnsupportedOperationError, "np.take_along_axis"),
    (lambda x: x[np.argmax(np.ones(3))] + x.sort(), UnsupportedOperationError, "ndarray.sort"),
    (lambda x: x[x > 0], TraceError, "np.where"),
    (lambda x: np.take(x, [x[0, 0]]), TraceError, "constant index array"),
    (lambda x: np.interp(x, x[0], x[1]), UnsupportedOperationError, "xp as a constant"),
    (lambda x: np.pad(x, 1, mode="linear_ramp"), UnsupportedOperationError, "mode='constant'"),
    (lambda x: np.einsum("...i->i", x), UnsupportedOperationError, "explicit subscripts"),
    (lambda x: np.nanmedian(x), UnsupportedOperationError, "README.md"),
    (lambda x: np.sum(x, dtype=np.int64), UnsupportedOperationError, r"numpy.sum\(\.\.\., dtype="),
    (lambda x: np.mean(x, dtype=np.float32), UnsupportedOperationError, r"numpy.mean\(\.\.\., dtype="),
    (lambda x: np.sum(x, out=np.zeros(())), UnsupportedOperationError, r"numpy.sum\(\.\.\., out="),
    (lambda x: np.cumsum(x, dtype=int)[0, 0], UnsupportedOperationError, r"numpy.cumsum\(\.\.\., dtype="),
    (lambda x: np.max(x, where=x > 0), ValueError, "needs initial="),
    (lambda x: np.sum(x, where=x * 1.0), TypeError, "needs a boolean mask"),
    (lambda x: np.mean(x, where=np.ones((3, 3), bool)), ValueError, "does not broadcast"),
    (lambda x: np.logaddexp.reduce(x, axis=1, where=x > 0)[0], UnsupportedOperationError, "logaddexp.reduce"),
    (lambda x: np.trace(x, dtype=int), UnsupportedOperationError, r"numpy.trace\(\.\.\., dtype="),
    (lambda x: np.einsum("ij->", x, out=np.zeros(())), UnsupportedOperationError, r"numpy.einsum\(\.\.\., out="),
    (lambda x: np.sum(np.concatenate([x, x], dtype=np.float32)), UnsupportedOperationError,
     r"numpy.concatenate\(\.\.\., dtype="),
    (lambda x: np.sum(np.stack([x, x], out=np.zeros((2, 2, 3)))), UnsupportedOperationError,
     r"numpy.stack\(\.\.\., out="),
    (lambda x: np.sum(np.hstack([x, x], casting="unsafe")), UnsupportedOperationError,
     r"numpy.hstack\(\.\.\., casting="),
    (lambda x: np.sum(np.vstack([x, x], dtype=int)), UnsupportedOperationError, r"numpy.vstack\(\.\.\., dtype="),
    (lambda x: np.sum(np.clip(x, 0, 1, where=x > 0)), UnsupportedOperationError,
     r"numpy.clip\(\.\.\., where=<a traced array>"),
    (lambda x: np.sum(np.zeros_like(x, shape=(2,)) + 1), UnsupportedOperationError,
     r"numpy.zeros_like\(\.\.\., shape="),
    (lambda x: x.sum(wher=x > 0), ArgumentError, r"ndarray\.sum\(\) cannot take"),
    (lambda x: x.mean(0, None, None, False, True), ArgumentError, r"ndarray\.mean\(\) cannot take"),
])
def test_bad_calls_raise_typed_errors(bad, exc, pattern):
    with pytest.raises(exc, match=pattern) as info:
        sg.jit(bad, signature="(m,n)->()")(np.ones((2, 3)))
    assert "symgrad ops" not in str(info.value)


def test_numpys_default_keywords_given_explicitly_are_accepted():
    """out=None, casting="same_kind", dtype=float64, where=True (NumPy's defaults) change nothing and
    are accepted; only other values are refused (above)."""
    def f(x):
        a = np.concatenate([x, x ** 2], axis=0, out=None, dtype=np.float64, casting="same_kind")
        b = np.stack([x, x], dtype=None) + np.zeros_like(x, dtype=float, shape=None)
        return np.sum(np.clip(a, -1.0, 2.0, out=None, where=True)) + np.sum(np.vstack([b], casting="same_kind"))
    x = np.array([0.5, 1.5, -2.0])
    value, grad = sg.value_and_grad(f, signature="(n)->()")(x)
    assert value == pytest.approx(f(x), rel=1e-14)
    np.testing.assert_allclose(grad, [1 + 2 * 0.5 + 2, 1 + 0 + 2, 0 + 0 + 2], rtol=1e-14)


@needs_jax
@pytest.mark.parametrize("prog", [
    lambda xp: lambda x: xp.sum(x ** 2, where=x > 0),                       # NumPy and JAX: 11.5
    lambda xp: lambda x: xp.sum(x ** 2, where=xp.asarray(MASK[:5])) + xp.sum(x, initial=10.0),
    lambda xp: lambda x: xp.mean(x ** 2, where=xp.asarray(MASK[:5])),      # 4.41667, not the plain mean 3.1125
    lambda xp: lambda x: (x ** 2).sum(where=xp.asarray(MASK[:5])) + (x ** 3).mean(where=x > 0),
], ids=["sum_traced_mask", "sum_constant_mask_initial", "mean_constant_mask", "methods"])
def test_where_and_initial_are_not_ignored(prog):
    """np.sum/np.mean/x.sum/x.mean with where= and initial=: NumPy's values, JAX's gradients (no signature)."""
    x = np.array([0.5, 1.5, -2.0, 3.0, -0.25])
    value, grad = sg.value_and_grad(prog(np), stabilize=False)(x)
    assert value == pytest.approx(prog(np)(x), rel=1e-14)
    np.testing.assert_allclose(grad, np.asarray(jax.grad(prog(jnp))(jnp.asarray(x))), rtol=1e-14, atol=0)


@needs_jax
def test_where_slices_the_mask_empties_are_nan_and_do_not_poison_gradients():
    """np.mean / np.var over a slice the mask empties is NaN (NumPy); the slices that are used keep
    JAX's finite gradient (0 for the emptied entries), constant or traced mask."""
    x = np.array([[0.5, 1.5, -2.0], [3.0, -0.25, 1.0]])
    empties_col_1 = np.array([[True, False, True], [False, False, True]])

    def prog(xp):
        def f(x):
            mean = xp.mean(x ** 2, axis=0, where=xp.asarray(empties_col_1))
            var = xp.var(x, axis=0, where=x < -5.0)  # traced: every slice empty
            return xp.sum(mean[xp.asarray([0, 2])]) + 0.5 * xp.sum(xp.var(x, axis=0, where=x > 0)[1:]), mean, var
        return f
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):  # NumPy: "Mean of empty slice"
        _, mean_ref, var_ref = prog(np)(x)
    _, mean, var = sg.jit(prog(np), stabilize=False)(x)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-15)
    assert np.isnan(var).all() and np.isnan(var_ref).all()
    grad = sg.grad(lambda x: prog(np)(x)[0], stabilize=False)(x)
    np.testing.assert_allclose(grad, jax.grad(lambda x: prog(jnp)(x)[0])(jnp.asarray(x)), rtol=1e-14, atol=0)


def test_ufunc_reduce_defaults_to_axis_0():
    x = _point(M, 4)
    np.testing.assert_allclose(sg.jit(lambda x: np.add.reduce(x), stabilize=False)(x), np.add.reduce(x), rtol=1e-14)


def test_axis_of_a_whole_array_argument_and_of_a_scalar():
    # no signature: the sum over axis 0 makes x a whole-array argument (JAX's semantics)
    np.testing.assert_array_equal(sg.grad(lambda x: np.sum(x, axis=0))(np.ones(3)), [1.0, 1.0, 1.0])
    with pytest.raises(AxisError):  # a scalar has no axis 0: NumPy's error, not ZeroDivisionError
        sg.grad(lambda x: np.sum(x, axis=0))(1.0)


def test_negative_axes_are_normalised():
    x = _point(M, 4)
    f = sg.jit(lambda x: np.sum(x, axis=-1) + np.max(x, axis=(-1,)) + np.cumsum(x, axis=-1)[:, -1],
               signature="(m,n)->(m)", stabilize=False)
    np.testing.assert_allclose(f(x), 2 * x.sum(-1) + x.max(-1) - x.sum(-1) + x.sum(-1), rtol=1e-12)


@needs_jax
def test_vocabulary_under_batching_and_jacobian():
    """Leading batch axes and the identity-seeded Jacobian pass (nb = 1) through the new primitives."""
    def f(x):
        return np.cumsum(x[[2, 0, 1]]) * np.max(x) + np.pad(x, 1)[1:-1]
    xs = _point((5, 3), 9)
    out = sg.jit(f, signature="(n)->(n)", stabilize=False)(xs)
    np.testing.assert_allclose(out, np.stack([f(x) for x in xs]), rtol=1e-12)
    J = sg.jacobian(f, signature="(n)->(n)", stabilize=False)(xs)
    Jref = np.stack([np.asarray(jax.jacobian(lambda x: jnp.cumsum(x[jnp.array([2, 0, 1])]) * jnp.max(x)
                                             + jnp.pad(x, 1)[1:-1])(jnp.asarray(x))) for x in xs])
    np.testing.assert_allclose(J, Jref, rtol=1e-12, atol=1e-14)


def test_symbolic_display_of_the_new_primitives():
    """symgrad.trace(...).expr evaluates take, cumsum and max on SymPy values (no compilation)."""
    t = sg.trace(lambda x: np.sum(np.cumsum(x[[0, 2, 2]])) + np.max(x), np.ones(3), signature="(n)->()")
    text = str(t.expr)
    assert "Max(x[0], x[1], x[2])" in text and "3*x[0]" in text and "3*x[2]" in text
    assert str(t.grad_expr()).count("Piecewise") >= 3  # the tie-splitting weights


def test_reductions_of_empty_axes_follow_numpy():
    assert sg.trace(lambda x: np.max(x[:0], initial=-1.0) + np.sum(x), np.ones(3),
                    signature="(n)->()").expr is not None
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        sg.trace(lambda x: np.max(x[:0]), np.ones(3), signature="(n)->()")
    assert str(sg.trace(lambda x: np.prod(x[:0]) * x[0], np.ones(3), signature="(n)->()").expr) == "x[0]"


@needs_jax
def test_special_points_match_jax():
    """Sample points and ends of interp, NaN inputs, zero variance: the same numbers as JAX (x64)."""
    xp_, fp_ = [-1.0, 0.0, 0.5, 2.0], [0.0, 1.0, -1.0, 3.0]

    def interp(m):
        return lambda x: m.interp(x, m.array(xp_), m.array(fp_))
    x = np.array([-2.0, -1.0, 0.0, 0.5, 2.0, 3.0, np.nan])
    out, tangent = sg.jvp(interp(np), (x,), (np.ones_like(x),), signature="(n)->(n)", stabilize=False)
    np.testing.assert_array_equal(out, np.interp(x, xp_, fp_))  # exact, NaN in place
    np.testing.assert_allclose(tangent, jax.jvp(interp(jnp), (x,), (jnp.ones_like(x),))[1], rtol=1e-15)
    cases = [(lambda m: lambda x: m.max(x), [1.0, np.nan, 2.0]),            # NaN max: NaN derivatives
             (lambda m: lambda x: m.std(x), [1.0, 1.0, 1.0]),               # zero variance: NaN
             (lambda m: lambda x: m.nanmean(x) + m.nansum(x), [1.0, np.nan, 2.0])]
    for prog, point in cases:
        point = np.array(point)
        got = sg.grad(prog(np), signature="(n)->()", stabilize=False)(point)
        np.testing.assert_allclose(got, jax.grad(prog(jnp))(jnp.asarray(point)), rtol=1e-15)


@needs_jax
def test_hessian_through_the_new_primitives():
    """Forward-over-reverse pushes a batched tangent through take_add, reversed cumsum and the tie weights."""
    def f(m):
        return lambda x: m.max(m.cumsum(x[m.asarray([3, 0, 1, 2, 0])]) * x[0]) + m.var(m.pad(x, 1) ** 2)
    x = _point((4,), 5)
    H = sg.hessian(f(np), signature="(n)->()", stabilize=False)(x)
    np.testing.assert_allclose(H, jax.hessian(f(jnp))(jnp.asarray(x)), rtol=1e-11, atol=1e-12)


def test_round_and_sinc_values_and_derivatives():
    """np.round is NumPy's rint(x * 10**d) / 10**d (derivative 0); np.sinc keeps every derivative right
    at 0 through its series (sinc''(0) = -pi^2/3), checked against mpmath."""
    import mpmath as mp

    x = np.array([0.0, 1e-4, -3e-4, 0.3, 2.5, -7.2])
    np.testing.assert_allclose(sg.jit(np.sinc)(x), np.sinc(x), rtol=1e-15, atol=0)
    ref = [float(mp.diff(lambda t: mp.sinpi(t) / (mp.pi * t) if t else mp.mpf(1), mp.mpf(v))) for v in x]
    np.testing.assert_allclose(sg.grad(np.sinc)(x), ref, rtol=1e-12, atol=1e-300)
    assert sg.grad(sg.grad(np.sinc))(0.0) == pytest.approx(-np.pi ** 2 / 3, rel=1e-14)
    r = np.array([1.234, 2.345, -0.125, 7.5])
    np.testing.assert_array_equal(sg.jit(lambda v: np.round(v, 2))(r), np.round(r, 2))
    np.testing.assert_array_equal(sg.jit(np.round)(r), np.round(r))
    assert sg.grad(lambda v: np.round(v) * v)(2.4) == 2.0
    assert sg.trace(np.sinc, np.zeros(3)).signature is None  # elementwise: ufunc broadcasting


def test_logaddexp2_values_and_gradients():
    """np.logaddexp2 traces as the stable logaddexp in base 2: NumPy's values, mpmath's derivatives
    2**a / (2**a + 2**b), finite at +-1000."""
    import mpmath

    a = np.array([0.3, -700.0, 1000.0, -3.0, 5.0])
    b = np.array([0.7, -701.0, 999.0, 40.0, 5.0])
    np.testing.assert_allclose(sg.jit(np.logaddexp2)(a, b), np.logaddexp2(a, b), rtol=4e-16)
    ga, gb = sg.grad(lambda x, y: np.logaddexp2(x, y), argnums=(0, 1))(a, b)
    for i in range(len(a)):
        with mpmath.workdps(50):
            x, y = mpmath.mpf(a[i]), mpmath.mpf(b[i])
            da, db = 2**x / (2**x + 2**y), 2**y / (2**x + 2**y)
        assert abs(ga[i] - float(da)) <= 1e-14 * float(da) and abs(gb[i] - float(db)) <= 1e-14 * float(db)
