"""Issue 16 point 1: regime thresholds on several inputs are refined per dtype.

The derivative of ``log(exp(a) + exp(b))`` by ``b`` is served by the formula as written,
``exp(b)/(exp(a) + exp(b))``, where no input is large (it is within an ulp there) and by
``sigmoid(b - a)`` where one is (the written form overflows).  The shifted form loses
``log2|b - a|`` bits to the rounding of ``b - a``, so the split must sit where the written form
overflows: 709.78 in float64, 88.72 in float32.  The search fitted 48.88 for both dtypes on a
bit-pattern sample (about 1 % of its points have ``max(|a|, |b|)`` in (49, 709)), and
``grad`` lost 5 bits at (100, 1.00000001).  Values are checked against 50-digit mpmath.
"""
import mpmath
import numpy as np
import pytest
import sympy as sp

from symgrad.ir.sympy_funcs import sigmoid
from symgrad.stabilize import stabilize
from symgrad.stabilize.accept import check_samples
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.result import evaluate_result
from symgrad.stabilize.thresholds import _builder, _splits, refine_thresholds

a, b, c = sp.symbols("a b c", real=True)
LSE_DB = sp.diff(sp.log(sp.exp(a) + sp.exp(b)), b)  # exp(b)/(exp(a) + exp(b))
KEY = sp.Max(sp.Abs(a), sp.Abs(b))
AS_FITTED = sp.Piecewise((sigmoid(b - a), KEY < sp.Float(2.2, 17)), (LSE_DB, KEY < sp.Float(48.88, 17)),
                         (sigmoid(b - a), True))  # the split the search made (benchmark, 2026-11-29)


def _mp_lse_db(x, y):
    with mpmath.workdps(50):
        return mpmath.exp(mpmath.mpf(y)) / (mpmath.exp(mpmath.mpf(x)) + mpmath.exp(mpmath.mpf(y)))


def _ulps(form, points, dtype, result=None):
    """ulps of ``form`` (or, given, of the kernel ``result`` computes in ``dtype``) at ``points``."""
    X = np.array(points, dtype=dtype)
    got = result.evaluate([a, b], X, dtype) if result is not None else evaluate_result(form, False, [a, b], X, dtype)
    ref = np.array([float(_mp_lse_db(*row)) for row in X.astype(np.float64)]).astype(dtype)
    return 2.0 ** ulp_bits(got, ref) - 1


FLOAT64_POINTS = [(100.0, 1.00000001), (100.0, -1.00001), (300.0, -2.5), (650.0, 0.3), (-400.0, 12.0),
                  (800.0, 1.0), (1000.0, 999.5)]
FLOAT32_POINTS = [(60.0, 1.3), (80.0, -2.7), (87.0, 0.11), (95.0, 1.0), (-70.0, 3.3)]


@pytest.fixture(scope="module")
def moved():
    """The fitted split with each dtype's own thresholds (the check sample of each dtype)."""
    S = check_samples(LSE_DB, [a, b], None, ("float64", "float32"))
    return {dt: refine_thresholds(LSE_DB, AS_FITTED, False, [a, b], None, s) for dt, s in S.items()}


def test_each_dtype_moves_the_threshold_to_where_its_exp_overflows(moved):
    for dt, (lo, hi) in {"float64": (600.0, 709.8), "float32": (80.0, 88.8)}.items():
        key, ts = _splits(moved[dt])
        assert key == KEY and len(ts) == 2
        assert lo < ts[1] < hi, (dt, ts)


def test_refined_split_is_within_two_ulps_where_the_fitted_one_lost_bits(moved):
    before = _ulps(AS_FITTED, FLOAT64_POINTS[:4], np.float64)
    assert before.max() > 8  # the rounding of b - a, multiplied by |b - a|
    assert _ulps(moved["float64"], FLOAT64_POINTS, np.float64).max() <= 2
    assert _ulps(moved["float32"], FLOAT32_POINTS, np.float32).max() <= 2


def test_stabilize_refines_per_dtype_and_says_so():
    res = stabilize(LSE_DB, [a, b], budget_s=2.0)
    names = [r.name for r in res.records]
    for dt, points in (("float64", FLOAT64_POINTS), ("float32", FLOAT32_POINTS)):
        assert _ulps(None, points, np.dtype(dt), res).max() <= 2, (dt, res.form(dt), res.widen_float32)
    assert "regime_thresholds_float64" in names or not res.form("float64").has(sp.Piecewise)


def test_quantities_the_thresholds_can_be_built_at():
    assert _splits(sp.Piecewise((a, (a - b < sp.Float(1.0)) | (a - b < sp.Float(3.0))), (b, True))) == (a - b, [3.0])
    assert _splits(sp.Piecewise((a, a < b), (b, True))) is None  # not a threshold
    assert _splits(a + b) is None
    rows = np.array([[0.5, -2.0, 7.0], [3.0, 1.0, -0.25]])
    at = _builder(b - c, [a, b, c])(rows, 4.0)
    np.testing.assert_array_equal(at[:, 1] - at[:, 2], [4.0, 4.0])
    at = _builder(sp.Max(sp.Abs(a), sp.Abs(c)), [a, b, c])(rows, 10.0)
    np.testing.assert_allclose(np.max(np.abs(at[:, [0, 2]]), axis=1), 10.0)
    np.testing.assert_array_equal(at[:2], [[0.5, -2.0, 10.0], [10.0, 1.0, -0.25]])  # the largest input set to 10
    assert _builder(a * b, [a, b, c]) is None
