import numpy as np
import sympy as sp

from symgrad.stabilize.accuracy import bits_of_error_report, ulp_bits
from symgrad.stabilize.numeric import evaluate
from symgrad.stabilize.reference import compile_mpmath, reference_values

x = sp.Symbol("x", real=True)


def test_ulp_bits_basic():
    a = np.array([1.0, 1.0, np.nan, np.inf, 0.0], dtype=np.float64)
    b = np.array([1.0, np.nextafter(1.0, 2.0), 1.0, 1.0, -0.0])
    bits = ulp_bits(a, b)
    assert bits[0] == 0 and bits[1] == 1.0 and bits[2] == 64 and bits[3] == 64 and bits[4] == 0


def test_reference_catches_cancellation():
    f = compile_mpmath((1 - sp.cos(x)) / x**2, [x])
    ref = reference_values(f, np.array([[1e-64], [1e-300]]), "float64")
    assert list(ref) == [0.5, 0.5]
    g = compile_mpmath(sp.sqrt(x + 1) - sp.sqrt(x), [x])
    assert reference_values(g, np.array([[1e300]]), "float64")[0] == 5e-151


def test_float32_not_promoted():
    out = evaluate(sp.sqrt(2) * x + sp.Rational(1, 3), [x], np.array([[1.0]]), "float32")
    assert out.dtype == np.float32


def test_report_naive_is_bad():
    mean, mx = bits_of_error_report(sp.exp(x) - 1, [x], "float64", n=128)
    assert mean > 5 and mx > 30


def test_reference_power_of_a_negative_base_is_real():
    """x**y with x < 0: NaN for a non-integer y (real semantics, decided before mpmath computes a
    complex power), the real power for an integer-valued y; positive bases as usual."""
    x, y = sp.symbols("x y", real=True)
    X = np.array([[-2.5, 0.5], [-2.0, 3.0], [-1e300, 1e-300], [2.0, 0.5], [-3.0, -2.0]])
    ref = reference_values(compile_mpmath(x**y, [x, y]), X, "float64")
    assert np.isnan(ref[0]) and np.isnan(ref[2])
    np.testing.assert_array_equal(ref[[1, 3, 4]], [-8.0, np.sqrt(2.0), 1 / 9])


def test_reference_powers_with_huge_integer_exponents_are_correctly_rounded():
    """A float exponent above 2**53 is an integer; beyond 2**100 the reference raises it as
    exp(n log|b|) (repeated squaring took milliseconds a point): the values mpmath's own power gives
    (every such float exponent is even), and ratios of two such powers finite as the exact ones are."""
    import mpmath

    x, y = sp.symbols("x y", real=True)
    X = np.array([[1.0 + 2.0**-40, 2.0**120], [-(1.0 + 2.0**-52), 2.0**110 + 2.0**58], [0.5, -2.0**200],
                  [1e30, 2.0**105], [-3.0, 2.0**101], [0.0, 2.0**300], [1.0, 2.0**200], [-1.0, -2.0**150]])
    got = reference_values(compile_mpmath(x**y, [x, y]), X, "float64")
    with mpmath.workprec(2000):
        want = [float(mpmath.mpf(float(a)) ** mpmath.mpf(float(b))) for a, b in X]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[-2:], [1.0, 1.0])  # (+-1)**n through exp(n log 1): every such n is even
    ratio = reference_values(compile_mpmath((x + 1) ** y / x ** y, [x, y]), np.array([[2.0**110, 2.0**108]]), "float64")
    np.testing.assert_allclose(ratio, np.exp(0.25), rtol=1e-15)


def test_reference_of_one_plus_erf_is_the_complement():
    """1 + erf(u) is evaluated as erfc(-u) for the reference (DLMF 7.2.2): the same value without the
    cancellation the precision loop fought (normal log-CDF at x = -40: -804.6, as 1 + erf it took
    seven erf evaluations a point); erfc beyond 2**64 is 0 at once (it underflows every format)."""
    import mpmath

    x = sp.Symbol("x", real=True)
    e = sp.log(sp.Float(0.5) * (1 + sp.erf(x / sp.sqrt(2))))
    X = np.array([[-40.0], [-10.0], [0.5], [10.0]])
    ref = reference_values(compile_mpmath(e, [x]), X, "float64")
    with mpmath.workdps(50):
        want = [float(mpmath.log(mpmath.ncdf(v))) for v in X[:, 0]]
    np.testing.assert_array_equal(ref, want)
    tail = reference_values(compile_mpmath(sp.erfc(x), [x]), np.array([[1e300], [30.0]]), "float64")
    assert tail[0] == 0.0 and tail[1] == float(mpmath.erfc(30))


def test_erfcx_mpmath_facet_far_in_the_tail():
    """erfcx(x) for x > 2**20 by its asymptotic series (DLMF 7.12.1) agrees with exp(x**2) erfc(x)."""
    import mpmath

    from symgrad.ir.rules.special import _mp_erfcx

    for v in (3e6, 1e20, 1e300):
        with mpmath.workdps(40):
            t = mpmath.mpf(v)
            assert abs(_mp_erfcx(t) / (mpmath.exp(t * t) * mpmath.erfc(t)) - 1) < mpmath.mpf(10) ** -35


def test_ordinary_box_is_the_domain_near_one():
    """The box sample draws inside [-1, 1] where the domain reaches it, else in the domain's
    binade nearest to 1; an input with a single value has none.  For one input, every special
    value of the domain follows the uniform points."""
    from symgrad.stabilize.sampling import box_points, ordinary_box
    x, y = sp.symbols("x y", real=True)
    assert ordinary_box([x, y], None, np.float64) == [(-1.0, 1.0), (-1.0, 1.0)]
    assert ordinary_box([x], {x: (1e-6, 0.999999)}, np.float64) == [(1e-6, 0.999999)]
    assert ordinary_box([x, y], {x: (5.0, 1e100), y: (-1e100, -3.0)}, np.float64) == [(5.0, 10.0), (-6.0, -3.0)]
    assert ordinary_box([x], {x: (1.0, 2.0)}, np.float64) == [(1.0, 2.0)]
    assert ordinary_box([x], {x: (1.0, 1.0)}, np.float64) is None
    X = box_points([x, y], {x: (0.0, 1.0)}, np.float32, 1000, np.random.default_rng(0))
    assert X.dtype == np.float32 and X.shape == (1000, 2)
    assert X[:, 0].min() >= 0 and X[:, 0].max() <= 1 and X[:, 1].min() >= -1 and X[:, 1].max() <= 1
    assert X[:, 1].min() < -0.9 and X[:, 1].max() > 0.9  # uniform, not by bit pattern: most points are ordinary
    assert np.mean(np.abs(X[:, 1]) > 0.1) > 0.8
    X1 = box_points([x], {x: (0.0, 100.0)}, np.float64, 10, np.random.default_rng(0))[:, 0]
    assert {0.1, 0.5, 1.0, 2.0, 10.0, 100.0, 1 - 1e-2}.issubset(set(X1[10:])) and X1.max() == 100.0
