"""np.convolve, correlate, trapezoid, gradient, ediff1d, cov, corrcoef, the nan-reductions, meshgrid,
select, piecewise, real/imag/conj and count_nonzero on traced arrays (symgrad/trace/numpy_signal.py,
numpy_statistics.py, numpy_select.py, numpy_shapes.py): values against NumPy's own, derivatives
against JAX (x64) and, for the linear maps, against NumPy applied to the basis vectors (the
Jacobian of a linear map is its matrix: independent of JAX)."""
import warnings

import numpy as np
import pytest

import symgrad as sg

RTOL = 1e-13


def _close(got, want, rtol=RTOL, atol=1e-14):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, rtol, atol)
        return
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


def _linear_jacobian(fn, x):
    """The matrix of the linear map ``fn`` at the shape of ``x``: fn of each basis vector."""
    cols = [np.ravel(fn(np.eye(x.size)[j].reshape(x.shape))) for j in range(x.size)]
    return np.stack(cols, axis=-1).reshape(np.shape(fn(x)) + x.shape)


RNG = np.random.default_rng(7)
A5, V3, V4 = RNG.normal(size=5), RNG.normal(size=3), RNG.normal(size=4)
M34 = RNG.normal(size=(3, 4))


# -- convolve and correlate ----------------------------------------------------------------------

def _all_modes(a, v, np=np):
    return tuple(f(a, v, mode=m) for f in (np.convolve, np.correlate) for m in ("full", "same", "valid"))


def test_convolve_and_correlate_values_are_numpys_in_every_mode():
    """Longer first and second, odd and even lengths (the 'same' window's centring), equal lengths, length 1."""
    pairs = [(A5, V4), (V3, A5), (A5[:4], V4), (A5[:2], V3[:1])]

    def f(*arrays):
        return sum((_all_modes(arrays[i], arrays[i + 1]) for i in range(0, len(arrays), 2)), ())
    args = [x for pair in pairs for x in pair]
    _close(sg.jit(f, stabilize=False)(*args), f(*args))


def test_convolve_and_correlate_jacobians_match_jax_and_the_linear_map():
    jax, jnp = _jax()

    def f(a, v, np=np):
        return np.concatenate([np.convolve(a, v), np.correlate(a, v, "same"), np.correlate(v, a, "full")])
    _close(sg.jacobian(f, argnums=(0, 1), stabilize=False)(A5, V4),
           jax.jacobian(lambda a, v: f(a, v, np=jnp), argnums=(0, 1))(A5, V4))
    # a constant kernel: the Jacobian in a is the matrix of the linear map a -> convolve(a, k)
    k = np.array([1.0, -2.0, 0.5])

    def modes(a):
        return np.concatenate([np.correlate(a, k, mode) for mode in ("full", "same", "valid")])
    np.testing.assert_array_equal(sg.jacobian(modes, stabilize=False)(A5), _linear_jacobian(modes, A5))


# -- trapezoid, gradient, ediff1d ----------------------------------------------------------------

def test_trapezoid_values_and_derivatives():
    jax, jnp = _jax()
    x = np.cumsum(np.abs(A5)) - 1.0

    def f(y, xs, np=np):
        return (np.trapezoid(y), np.trapezoid(y, dx=0.25), np.trapezoid(y, x=xs), np.trapezoid(y ** 2, xs),
                np.trapezoid(np.outer(y, y[:3]), x=xs, axis=0))
    _close(sg.jit(f, stabilize=False)(A5, x), f(A5, x))
    _close(sg.jit(lambda m: np.trapezoid(m, x=np.linspace(0, 1, 3), axis=0), stabilize=False)(M34),
           np.trapezoid(M34, x=np.linspace(0, 1, 3), axis=0))

    def loss(y, xs, np=np):
        return np.trapezoid(np.sin(y), x=xs) + np.trapezoid(y * xs, dx=0.3)
    _close(sg.grad(loss, argnums=(0, 1), stabilize=False)(A5, x),  # y and the sample points x both traced
           jax.grad(lambda y, xs: loss(y, xs, np=jnp), argnums=(0, 1))(A5, x))
    # closed form: d/dy_i trapezoid(y, x) = (x[i+1] - x[i-1]) / 2 inside, d_0 / 2 and d_{n-1} / 2 at the ends
    d = np.diff(x)
    want = np.concatenate([[d[0] / 2], (d[1:] + d[:-1]) / 2, [d[-1] / 2]])
    _close(sg.grad(lambda y: np.trapezoid(y, x), stabilize=False)(A5), want)


_COORDS = np.array([0.0, 0.1, 0.3, 0.7, 1.5])


def test_gradient_values_and_jacobian_are_the_linear_map():
    def grads(v, m, edge_order):
        return (np.gradient(v, edge_order=edge_order), np.gradient(v, 0.3, edge_order=edge_order),
                np.gradient(v, _COORDS, edge_order=edge_order),  # non-uniform coordinates
                np.gradient(v, np.linspace(0, 2, 5), edge_order=edge_order),  # uniform: reduced to the step
                np.gradient(m, 2.0, [0.0, 1.0, 3.0, 4.0], edge_order=edge_order),
                np.gradient(m[:, :3], 0.5, edge_order=edge_order)) + tuple(
                    np.gradient(m, axis=axis, edge_order=edge_order) for axis in (0, 1, -1, (1, 0)))

    def both(v, m):
        return grads(v, m, 1) + grads(v, m, 2)
    _close(sg.jit(both, stabilize=False)(A5, M34), both(A5, M34))

    def one(y):  # the first- and second-order edges on non-uniform coordinates
        return np.concatenate([np.gradient(y, _COORDS, edge_order=k) for k in (1, 2)])
    np.testing.assert_allclose(sg.jacobian(one, stabilize=False)(A5), _linear_jacobian(one, A5), rtol=RTOL,
                               atol=1e-13)


def test_gradient_and_ediff1d_derivatives_match_jax():
    jax, jnp = _jax()

    def loss(y, np=np):
        gy, gx = np.gradient(y, 0.5, np.array([0.0, 1.0, 3.0, 4.0]))
        return np.sum(np.sin(gy) * gx) + np.sum(np.gradient(y[0], _COORDS[:4]) ** 2) + np.sum(
            np.ediff1d(y, to_begin=y[1, 1], to_end=np.asarray([1.0, 2.0])) ** 3)
    _close(sg.grad(loss, stabilize=False)(M34), jax.grad(lambda y: loss(y, np=jnp))(M34), atol=1e-13)
    got = sg.jit(lambda y: (np.ediff1d(y), np.ediff1d(y, to_begin=[1.0, 2.0], to_end=y[0]),
                            np.ediff1d(y[:1, :1]), np.ediff1d(y[0, :1], to_end=3.0)), stabilize=False)(M34)
    _close(got, (np.ediff1d(M34), np.ediff1d(M34, to_begin=[1.0, 2.0], to_end=M34[0]), np.ediff1d(M34[:1, :1]),
                 np.ediff1d(M34[0, :1], to_end=3.0)))


# -- cov and corrcoef ----------------------------------------------------------------------------

def _covs(m, y, np=np):
    return (np.cov(m), np.cov(m, rowvar=False), np.cov(m, bias=True), np.cov(m, ddof=2), np.cov(m[0], y),
            np.cov(m[0]), np.cov(m, y[:4], rowvar=True), np.corrcoef(m), np.corrcoef(m, rowvar=False),
            np.corrcoef(m[0], y), np.corrcoef(m[1]))


def test_cov_and_corrcoef_values_are_numpys():
    y = RNG.normal(size=4)
    _close(sg.jit(_covs, stabilize=False)(M34, y), _covs(M34, y))


def test_cov_and_corrcoef_gradients_match_jax_and_finite_differences():
    jax, jnp = _jax()

    def loss(m, np=np):
        return (np.sum(np.cov(m) * np.arange(9.0).reshape(3, 3)) + np.sum(np.cov(m, rowvar=False, ddof=0) ** 2)
                + np.sum(np.corrcoef(m) * np.array([[0.0, 1.0, 2.0], [3.0, 0.0, -1.0], [0.5, 2.0, 0.0]])))
    g = sg.grad(loss, stabilize=False)(M34)
    _close(g, jax.grad(lambda m: loss(m, np=jnp))(M34), atol=1e-13)
    eps, E = 1e-6, np.zeros_like(M34)  # central differences, independent of JAX
    E[1, 2] = eps
    assert g[1, 2] == pytest.approx((loss(M34 + E) - loss(M34 - E)) / (2 * eps), rel=1e-7)


# -- nan-reductions ------------------------------------------------------------------------------

NANS = np.array([[0.3, np.nan, -1.2, 2.5], [np.nan, np.nan, np.nan, np.nan], [1.5, -0.7, np.nan, 0.2]])


def _nan_reductions(m, np=np):
    return (np.nanmax(m), np.nanmax(m, axis=1), np.nanmin(m, axis=0, keepdims=True), np.nanmin(m, axis=1),
            np.nanvar(m), np.nanvar(m, axis=1, ddof=1), np.nanstd(m, axis=0), np.nanstd(m, axis=1, keepdims=True),
            np.nanprod(m), np.nanprod(m, axis=0, keepdims=True), np.nanmax(m, axis=1, initial=5.0),
            np.nanvar(m, axis=1, where=np.array([True, True, False, True])))


def test_nan_reductions_values_are_numpys_including_all_nan_slices():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns about the all-NaN row
        want = _nan_reductions(NANS)
    _close(sg.jit(_nan_reductions, stabilize=False)(NANS), want)


def test_nan_reductions_derivatives_ignore_nan_entries_as_jax():
    jax, jnp = _jax()
    x = NANS[[0, 2]]  # no all-NaN row: a finite loss

    def loss(m, np=np):
        return (np.nanmax(m) + np.sum(np.nanmin(m, axis=1) ** 2) + np.sum(np.nanstd(m, axis=1))
                + np.nanvar(m) + np.sum(np.nanprod(m, axis=0)))
    g = sg.grad(loss, stabilize=False)(x)
    _close(g, jax.grad(lambda m: loss(m, np=jnp))(x), atol=1e-13)
    assert np.all(g[np.isnan(x)] == 0.0)
    # with the all-NaN row the outputs there are NaN and their derivatives 0, as in JAX
    J = sg.jacobian(lambda m: np.nanmax(m, axis=1), stabilize=False)(NANS)
    _close(J, jax.jacobian(lambda m: jnp.nanmax(m, axis=1))(NANS))


# -- meshgrid, select, piecewise, real/imag --------------------------------------------------------

def test_meshgrid_values_and_gradient():
    jax, jnp = _jax()

    def f(x, y, np=np):
        return np.meshgrid(x, y) + np.meshgrid(x, y, np.arange(2.0), indexing="ij") + np.meshgrid(x, y, sparse=True)
    _close(sg.jit(f, stabilize=False)(A5, V3), f(A5, V3))

    def loss(x, y, np=np):
        X, Y = np.meshgrid(x, y)
        return np.sum(np.sin(X) * Y ** 2)
    _close(sg.grad(loss, argnums=(0, 1), stabilize=False)(A5, V3),
           jax.grad(lambda x, y: loss(x, y, np=jnp), argnums=(0, 1))(A5, V3))


X8 = np.array([-2.0, -0.9, -0.5, -0.1, 0.0, 0.3, 0.5, 1.7])


def _select(x, np=np):  # overlapping conditions: the first wins
    return np.select([x < 0.0, x < 0.6, x > -1.0], [x ** 2, np.sin(x), 10.0 * x], default=-x)


def _piecewise(x, np=np):  # overlapping conditions: the last wins
    return np.piecewise(x, [x < 0.0, x > -0.6], [lambda t: t ** 2, lambda t: 3.0 * t, 7.0])


def test_select_values_gradient_and_precedence_with_the_stabiliser_on():
    jax, jnp = _jax()
    _close(sg.jit(_select)(X8), _select(X8))  # the default stabilize=True
    _close(sg.grad(lambda x: np.sum(_select(x)))(X8), jax.grad(lambda x: jnp.sum(_select(x, np=jnp)))(X8))
    _close(sg.jit(lambda x: np.select([x > 0], [x], default=np.cos(x)), stabilize=False)(X8),
           np.select([X8 > 0], [X8], default=np.cos(X8)))


def test_piecewise_values_gradient_and_precedence():
    jax, jnp = _jax()
    _close(sg.jit(_piecewise, stabilize=False)(X8), _piecewise(X8))
    _close(sg.grad(lambda x: np.sum(_piecewise(x)), stabilize=False)(X8),
           jax.grad(lambda x: jnp.sum(_piecewise(x, np=jnp)))(X8))

    def single(x, np=np, one=lambda c: c):  # a lone condition (NumPy promotes it; JAX needs the list)
        return (np.piecewise(x, one(x > 0.2), [np.exp])  # no "otherwise": zeros where it fails
                + np.piecewise(x, one(x < 0), [lambda t, c: np.sin(c * t), lambda t, c: c * t], 2.0))
    _close(sg.jit(single, stabilize=False)(X8), single(X8))
    _close(sg.grad(lambda x: np.sum(single(x)), stabilize=False)(X8),
           jax.grad(lambda x: jnp.sum(single(x, np=jnp, one=lambda c: [c])))(X8))


def test_real_imag_conj_of_real_values():
    def f(x):
        return np.real(x) * 2.0 + np.imag(x) + np.conj(x) ** 2 + np.conjugate(x) + x.real + x.imag + x.conj()
    _close(sg.jit(f, stabilize=False)(A5), f(A5))
    _close(sg.grad(lambda x: np.sum(f(x)), stabilize=False)(A5), 2.0 + 2.0 * A5 + 1.0 + 1.0 + 1.0)
    assert np.all(sg.jit(lambda x: np.imag(x), stabilize=False)(np.array([np.inf, np.nan])) == 0.0)


# -- refusals and bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("bad,exc,pattern", [
    (lambda v: np.cov(v, fweights=np.ones(4)), sg.UnsupportedOperationError, r"numpy.cov\(\.\.\., fweights="),
    (lambda v: np.cov(v, aweights=np.ones(4)), sg.UnsupportedOperationError, r"numpy.cov\(\.\.\., aweights="),
    (lambda v: np.cov(v, ddof=1.5), ValueError, "ddof must be integer"),
    (lambda v: np.cov(v, np.ones(3)), ValueError, "observations"),
    (lambda v: np.convolve(np.outer(v, v), v), ValueError, "numpy.convolve needs 1-D arrays"),
    (lambda v: np.correlate(v, v[:0]), ValueError, "v cannot be empty"),
    (lambda v: np.convolve(v, v, mode="middle"), ValueError, "mode='middle'"),
    (lambda v: np.gradient(v, v), sg.UnsupportedOperationError, "a traced spacing"),
    (lambda v: np.gradient(v[:2], edge_order=2), ValueError, "too small"),
    (lambda v: np.gradient(v, edge_order=3), ValueError, "'edge_order' greater than 2"),
    (lambda v: np.gradient(v, np.ones(3)), ValueError, "must match the length"),
    (lambda v: np.gradient(v, 1.0, 2.0), TypeError, "invalid number of arguments"),
    (lambda v: np.select([v > 0], [v, v]), ValueError, "same length"),
    (lambda v: np.select([v * 1.0], [v]), TypeError, "should be boolean"),
    (lambda v: np.piecewise(v, [v > 0], [np.sin, np.cos, np.tan]), ValueError, "either 1 or 2 functions"),
    (lambda v: np.meshgrid(v, v, indexing="xz"), ValueError, "'xy' and 'ij'"),
    (lambda v: np.nanmax(v, out=np.zeros(())), sg.UnsupportedOperationError, r"numpy.nanmax\(\.\.\., out="),
    (lambda v: np.nanvar(v, mean=np.zeros(())), sg.UnsupportedOperationError, r"numpy.nanvar\(\.\.\., mean="),
    (lambda v: np.nanmax(v[:0]), ValueError, "zero-size array"),
    (lambda v: np.count_nonzero(v), sg.UnsupportedOperationError, r"np.sum\(a != 0"),
])
def test_bad_calls_raise_typed_errors(bad, exc, pattern):
    with pytest.raises(exc, match=pattern):
        sg.jit(bad, signature="(n)->()", stabilize=False)(np.ones(4))


def test_count_nonzero_of_a_constant_is_numpys_and_the_suggested_spelling_traces():
    got = sg.jit(lambda v: np.sum(v != 0) + np.count_nonzero(np.zeros_like(v)), stabilize=False)(X8)
    assert got == np.count_nonzero(X8) == 7


def test_nan_reductions_of_values_masked_with_a_nan_constant():
    """np.where(mask, np.nan, x) then a nan-reduction (how users drop values): the region holding
    the NaN constant is not searched (SymPy cannot order a product with NaN in it; it raised
    "Invalid NaN comparison" from the stabiliser), and the gradient is right, against JAX."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = np.array([0.5, 1.7, 0.9, 1.2, 2.0, 0.7])
    got = sg.grad(lambda x: np.nanstd(np.where(x > 1.5, np.nan, x)))(x)
    want = jax.grad(lambda x: jnp.nanstd(jnp.where(x > 1.5, jnp.nan, x)))(x)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    assert got[1] == got[4] == 0.0
