"""scipy.special functions users reach for in models, and the NumPy aliases they spell, as found
by the session-23 sweep: each value and derivative against mpmath (or SciPy for values).

References are mpmath at 40 digits (``mpmath.diff`` of the defining formula), so a test checks
the mathematics, not another AD system's rounding (JAX's derivative of ``expm1(l*log x)/l`` in
``l`` near 0 cancels just as the formula does)."""
import math

import mpmath as mp
import numpy as np
import pytest
import scipy.special as sp

import symgrad as sg


def _mp_derivs(fn, x, n=2):
    """``fn`` and its first ``n`` derivatives at ``x``, with 40 digits."""
    with mp.workdps(40):
        x = mp.mpf(x)
        return [float(fn(x))] + [float(mp.diff(fn, x, k)) for k in range(1, n + 1)]


def _assert_derivs(f, xs, ref, rtol=1e-13):
    """``jit(f)``, ``grad(f)`` and ``grad(grad(f))`` elementwise on ``xs`` against ``ref``."""
    xs = np.asarray(xs, dtype=np.float64)
    got = [sg.jit(f)(xs), sg.grad(f)(xs), sg.grad(sg.grad(f))(xs)]
    for i, x in enumerate(xs):
        for k, expected in enumerate(_mp_derivs(ref, x)):
            assert got[k][i] == pytest.approx(expected, rel=rtol, abs=1e-300), (k, x)


def test_np_degrees_and_radians_trace_like_rad2deg_and_deg2rad():
    """np.degrees / np.radians are ufuncs of their own (not the rad2deg / deg2rad objects)."""
    x = np.array([0.5, -2.0])
    assert sg.jit(lambda x: np.degrees(x) - 2.0 * np.radians(x))(x) == pytest.approx(
        np.degrees(x) - 2 * np.radians(x))
    assert sg.grad(lambda x: np.degrees(x) - 2.0 * np.radians(x))(x) == pytest.approx(
        np.full(2, 180 / math.pi - math.pi / 90), rel=1e-15)


def test_pseudo_huber_loss_gradient_and_curvature_in_the_residual():
    """A robust regression loss: d/dr = r / sqrt(1 + (r/delta)**2), and curvature 1 at r = 0
    (a branch for r == 0 would give 0 there)."""
    ref = lambda r: mp.mpf(1.5) ** 2 * (mp.sqrt(1 + (r / mp.mpf(1.5)) ** 2) - 1)
    _assert_derivs(lambda r: sp.pseudo_huber(1.5, r), [-3.0, -1e-5, 0.0, 0.2, 2.0], ref)
    r = np.array([-1e-5, 0.0, 1e6, 1e200])
    np.testing.assert_allclose(sg.jit(lambda r: sp.pseudo_huber(1.5, r))(r), [_mp_derivs(ref, x, 0)[0] for x in r],
                               rtol=1e-14)
    # far in the tail the slope is delta * sign(r) (r**2 does not overflow)
    np.testing.assert_allclose(sg.grad(lambda r: sp.pseudo_huber(1.5, r))(r),
                               [_mp_derivs(ref, x, 1)[1] for x in r[:3]] + [1.5], rtol=1e-14)


def test_pseudo_huber_in_delta_and_its_conventions():
    """d/d delta = delta t**4 / ((h + 1)**2 h): no cancellation at delta >> r; SciPy's inf for
    delta < 0 and 0 for delta == 0."""
    ref = lambda d: d ** 2 * (mp.sqrt(1 + (mp.mpf(0.7) / d) ** 2) - 1)
    _assert_derivs(lambda d: sp.pseudo_huber(d, 0.7), [1e-3, 0.5, 2.0, 1e5], ref)
    d, r = np.array([0.0, 0.0, -1.0]), np.array([0.0, 2.0, 1.0])
    np.testing.assert_array_equal(sg.jit(lambda d, r: sp.pseudo_huber(d, r))(d, r), sp.pseudo_huber(d, r))


def test_boxcox_in_lambda_near_zero_and_in_x():
    """The Box-Cox likelihood is fitted in lambda, often from lambda = 0: d/dlambda there is
    log(x)**2/2 and the second derivative log(x)**3/3 (expm1(l log x)/l as written cancels)."""
    L = mp.log(3)
    ref = lambda l: L * sum((l * L) ** k / mp.factorial(k + 1) for k in range(40))
    _assert_derivs(lambda l: sp.boxcox(3.0, l), [-0.7, -0.09, 1e-8, 0.0, 0.05, 0.5, 2.0], ref, rtol=1e-12)
    _assert_derivs(lambda x: sp.boxcox(x, 0.5), [0.1, 1.0, 3.0], lambda x: (mp.sqrt(x) - 1) / 0.5)
    _assert_derivs(lambda x: sp.boxcox1p(x, -0.3), [-0.5, 1e-9, 2.0],
                   lambda x: mp.expm1(-0.3 * mp.log1p(x)) / -0.3)
    x = np.array([0.5, 3.0, 40.0])
    np.testing.assert_allclose(sg.jit(lambda x: sp.boxcox(x, 0.0) + sp.boxcox(x, 1e-3))(x),
                               sp.boxcox(x, 0.0) + sp.boxcox(x, 1e-3), rtol=1e-15)


@pytest.mark.parametrize("name, f, ref, xs", [
    ("expm1", lambda x: sp.expm1(x), mp.expm1, [-40.0, 1e-10, 0.5]),
    ("log1p", lambda x: sp.log1p(x), mp.log1p, [-0.5, 1e-10, 3.0]),
    ("exp2", lambda x: sp.exp2(x), lambda x: mp.power(2, x), [-3.5, 0.0, 10.25]),
    ("exp10", lambda x: sp.exp10(x), lambda x: mp.power(10, x), [-300.0, -2.5, 0.0, 1.3, 300.0]),
    ("cosm1", lambda x: sp.cosm1(x), lambda x: mp.cos(x) - 1, [-3.0, 1e-8, 0.0, 0.5, 100.0]),
])
def test_scipy_special_elementary_ufuncs(name, f, ref, xs):
    """scipy.special's own expm1/log1p/exp2/exp10/cosm1 trace like NumPy's (cosm1 near 0 to full
    precision, exp10 as pow(10, x): exp(x ln 10) would carry the rounding of x ln 10)."""
    _assert_derivs(f, xs, ref)


def test_private_scipy_ufunc_is_named_by_its_public_function():
    """scipy.special.zeta calls the private ufunc _zeta: the refusal names zeta."""
    with pytest.raises(sg.UnsupportedOperationError, match=r"scipy\.special\.zeta"):
        sg.grad(lambda x: sp.zeta(x, 1.0))(3.0)


def wishart_logpdf(nu, X, V):
    """The Wishart log-density as a user writes it (Bishop, PRML eq. B.78), normaliser by multigammaln."""
    p = X.shape[0]
    _, ld_x = np.linalg.slogdet(X)
    _, ld_v = np.linalg.slogdet(V)
    return ((nu - p - 1) / 2 * ld_x - np.trace(np.linalg.solve(V, X)) / 2 - nu * p / 2 * np.log(2.0)
            - nu / 2 * ld_v - sp.multigammaln(nu / 2, p))


@pytest.mark.slow  # 10 s: slogdet and solve kernels
def test_wishart_logpdf_through_multigammaln_value_and_score_in_nu():
    """scipy.special.multigammaln is a Python function that checks its argument's values; symgrad
    intercepts it (sum of gammaln(a - j/2)).  Value vs scipy.stats.wishart, d/dnu and d2/dnu2 vs
    the closed forms with digamma / polygamma."""
    from scipy import stats

    X = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
    V = 0.8 * np.eye(3)
    nu, p = 5.0, 3
    assert sg.jit(wishart_logpdf)(nu, X, V) == pytest.approx(stats.wishart(nu, V).logpdf(X), rel=1e-13)
    half = nu / 2 - np.arange(p) / 2
    score = (np.linalg.slogdet(X)[1] - p * np.log(2.0) - np.linalg.slogdet(V)[1] - np.sum(sp.digamma(half))) / 2
    assert sg.grad(wishart_logpdf)(nu, X, V) == pytest.approx(score, rel=1e-13)
    assert sg.grad(sg.grad(wishart_logpdf))(nu, X, V) == pytest.approx(-np.sum(sp.polygamma(1, half)) / 4, rel=1e-13)


def test_multigammaln_elementwise_and_its_refusals():
    a = np.array([2.0, 3.5, 10.0])
    np.testing.assert_allclose(sg.jit(lambda a: sp.multigammaln(a, 4))(a), sp.multigammaln(a, 4), rtol=1e-14)
    np.testing.assert_allclose(sg.grad(lambda a: sp.multigammaln(a, 4))(a),
                               [np.sum(sp.digamma(x - np.arange(4) / 2)) for x in a], rtol=1e-14)
    assert sp.multigammaln(3.0, 2) == pytest.approx(np.log(np.pi) / 2 + sp.gammaln(3.0) + sp.gammaln(2.5))  # SciPy's
    with pytest.raises(TypeError, match="traced dimension d"):
        sg.grad(lambda a: sp.multigammaln(a, a))(3.0)
    with pytest.raises(ValueError, match="positive integer dimension d; got 2.5"):
        sg.grad(lambda a: sp.multigammaln(a, 2.5))(3.0)


def test_beta_binomial_score_at_large_counts_has_no_cancellation():
    """d/da betaln(a, b) = digamma(a) - digamma(a + b) cancels to 7e-10 relative at a = 1e6 as
    written (and to 1e-5 at a = 1e10); symgrad's rule computes it without the subtraction.
    References: mpmath's digamma and trigamma at 40 digits."""
    pts = [(1e-5, 2.5), (3.0, 2.5), (100.0, 2.5), (1e6, 2.5), (1e10, 0.3), (5.0, 1e-8), (0.3, 1e12), (1e6, 1e6)]
    a, b = np.array(pts).T
    f = lambda a, b: sp.betaln(a, b)
    ga, gb = sg.grad(f, argnums=(0, 1))(a, b)
    haa = sg.grad(sg.grad(f, argnums=0), argnums=0)(a, b)
    hab = sg.grad(sg.grad(f, argnums=0), argnums=1)(a, b)
    with mp.workdps(40):
        for i, (x, y) in enumerate(pts):
            x, y = mp.mpf(x), mp.mpf(y)
            assert ga[i] == pytest.approx(float(mp.digamma(x) - mp.digamma(x + y)), rel=1e-14), pts[i]
            assert gb[i] == pytest.approx(float(mp.digamma(y) - mp.digamma(x + y)), rel=1e-14), pts[i]
            assert haa[i] == pytest.approx(float(mp.psi(1, x) - mp.psi(1, x + y)), rel=1e-14), pts[i]
            assert hab[i] == pytest.approx(float(-mp.psi(1, x + y)), rel=1e-14), pts[i]
    # negative arguments (SciPy's log|B|) keep the difference as written
    assert sg.grad(f)(-0.5, 2.2) == pytest.approx(sp.digamma(-0.5) - sp.digamma(1.7), rel=1e-14)


def test_hessian_through_gammaln_of_a_sum_builds():
    """The Hessian of gammaln(a + b) holds polygamma(1, a + b); the stabiliser samples a + b over
    all floats, and SciPy's polygamma steps up one unit at a time from a negative argument (and
    the kernels' did too, forever beyond 2**53): this build hung for hours.  Both now reflect
    (DLMF 5.15.6) below -20."""
    h = sg.grad(sg.grad(lambda a, b: sp.gammaln(a + b)))(np.array([4.5, 7.0]), 2.0)
    np.testing.assert_allclose(h, sp.polygamma(1, np.array([6.5, 9.0])), rtol=1e-14)


def test_trigamma_and_tetragamma_kernels_at_large_negative_arguments():
    x = np.array([-25.3, -20.5, -1e10 - 0.5, -1e14 - 0.25])
    d2 = sg.grad(sg.grad(lambda x: sp.gammaln(x)))(x)
    d3 = sg.grad(sg.grad(sg.grad(lambda x: sp.gammaln(x))))(x)
    with mp.workdps(30):
        assert d2[0] == pytest.approx(float(mp.polygamma(1, mp.mpf(-25.3))), rel=1e-14)
        assert d3[0] == pytest.approx(float(mp.polygamma(2, mp.mpf(-25.3))), rel=1e-14)
        assert d3[1] == pytest.approx(float(mp.polygamma(2, mp.mpf(-20.5))), rel=1e-14)
    # reflection: psi_1(x) = pi**2 / sin(pi x)**2 - psi_1(1 - x); psi_2(x) = psi_2(1 - x) - 2 pi**3 cot / sin**2
    assert d2[2] == pytest.approx(math.pi ** 2 - sp.polygamma(1, 1e10 + 1.5), rel=1e-15)
    assert d3[2] == pytest.approx(sp.polygamma(2, 1e10 + 1.5), rel=1e-12)
    assert d2[3] == pytest.approx(2 * math.pi ** 2 - sp.polygamma(1, 1e14 + 1.25), rel=1e-14)
