"""Issue 16, point 5 (machine-learning functions): compiled jit/grad/grad-of-grad against
400-digit mpmath over +-[1e-6, 60] and the issue's listed points, float64 and float32.

The bound is 2 ulps, widened by the conditioning of the exact function at the point
where the problem itself allows no better: ``log2(3) + log2(1 + kappa)`` bits with
``kappa = |x f'(x) / f(x)|`` (relative condition number of the value being computed;
for GELU at x = -18, kappa ~ 1300: the rounding of x alone moves the result by that
many ulps).  Cases still beyond the bound are ``xfail(strict=True)`` with the measured
error, so a fix shows up as an XPASS.  The float32 half is marked ``slow`` (about 20 more
compiled kernels): ``python -m pytest -m slow tests/stabilize/test_ml_functions.py``.
"""
import mpmath
import numpy as np
import pytest
import scipy.special

import symgrad as sg
from symgrad.stabilize.accuracy import ulp_bits

C = float(np.sqrt(2 / np.pi))
FUNCS = {
    "gelu": (lambda x: 0.5 * x * (1 + np.tanh(C * (x + 0.044715 * x**3))),
             lambda x: 0.5 * x * (1 + mpmath.tanh(mpmath.mpf(C) * (x + mpmath.mpf(0.044715) * x**3))),
             [-15.0, -15.13, -2.0]),
    "elu": (lambda x: np.where(x > 0, x, np.expm1(x)), lambda x: x if x > 0 else mpmath.expm1(x), [-40.0, -37.91]),
    "mish": (lambda x: x * np.tanh(np.log1p(np.exp(x))), lambda x: x * mpmath.tanh(mpmath.log1p(mpmath.exp(x))),
             [60.0]),
    "logcosh": (lambda x: np.log(np.cosh(x)), lambda x: mpmath.log(mpmath.cosh(x)), [-47.0, 711.0, -800.0]),
    "logistic_density": (lambda x: np.exp(x) / (1 + np.exp(x)) ** 2,
                         lambda x: mpmath.exp(x) / (1 + mpmath.exp(x)) ** 2, [44.0, 0.1]),
    "expm1_minus_x": (lambda x: np.expm1(x) - x, lambda x: mpmath.expm1(x) - x, [5.7e-8]),
    "x_pow_x": (lambda x: x**x, lambda x: x**x, [0.5, 3.0]),
    # GELU as written with erf (PyTorch's exact form): 1 + erf(u) cancels for u << 0 (0 at x = -30, the
    # truth -1.5e-196; 30 bits lost at -6.4) until the search has erfc(-u) (DLMF 7.2.2)
    "gelu_erf": (lambda x: 0.5 * x * (1 + scipy.special.erf(x / np.sqrt(2))),
                 lambda x: 0.5 * x * (1 + mpmath.erf(x / mpmath.sqrt(2))), [-30.0, -6.4]),
}
_MAG = np.geomspace(1e-6, 60.0, 9)
# measured on this branch (bits of error beyond the bound, worst point): not fixed yet
KNOWN: dict = {}
FLOAT32_TOP = 3.0e38


def _points(name, extra):
    pts = np.concatenate([-_MAG[::-1], _MAG, extra])
    return np.unique(pts[pts > 0] if name == "x_pow_x" else pts)


def _reference(mf, x, order):
    with mpmath.workdps(400):
        t = mpmath.mpf(float(x))
        val = mpmath.diff(mf, t, order) if order else mf(t)
        nxt = mpmath.diff(mf, t, order + 1)
        kappa = abs(t * nxt / val) if val else mpmath.mpf(0)
        return float(val), float(kappa)


SEARCH_BUDGET_S = 10.0


@pytest.mark.parametrize("dtype", ["float64", pytest.param("float32", marks=pytest.mark.slow)])
@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("name", list(FUNCS))
def test_within_2ulps_or_conditioning(name, order, dtype, request):
    if (name, order, dtype) in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[name, order, dtype], strict=True))
    f, mf, extra = FUNCS[name]
    # A search budget above the 1 s default: the second derivatives of mish and the logistic density
    # need about 3 s of search to reach this accuracy (issue 15's budget trades it for build time).
    b = SEARCH_BUDGET_S
    compiled = (sg.jit(f, stabilize=b) if order == 0 else sg.grad(f, stabilize=b) if order == 1
                else sg.grad(sg.grad(f), stabilize=b))
    X = _points(name, extra).astype(dtype)
    refs = [_reference(mf, x, order) for x in X]
    ref = np.array([r for r, _ in refs], dtype=np.float64)
    kappa = np.array([k for _, k in refs])
    keep = np.isfinite(ref) & (np.abs(ref) < (FLOAT32_TOP if dtype == "float32" else np.inf))
    got = compiled(X[keep])
    assert got.dtype == np.dtype(dtype)
    bits = ulp_bits(got, ref[keep].astype(dtype))
    limit = np.log2(3) + np.log2(1 + kappa[keep]) + 1e-9
    bad = bits > limit
    assert not bad.any(), list(zip(X[keep][bad], got[bad], ref[keep][bad], bits[bad], limit[bad]))
