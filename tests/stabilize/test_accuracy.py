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
