"""Issue 4's must-hold list, through the compiled path: ``symgrad.jit`` / ``symgrad.grad``.

Values are compared with correctly rounded mpmath references (precision raised until the
rounding is stable) at the issue's listed points and at log/linear points of +-[1e-8, 8]
plus the floats next to the root of swish' (x0 = -1.2785), in float32 and float64.
"""
import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.reference import compile_mpmath, reference_values

x = sp.Symbol("x", real=True)
TWO_ULPS = np.log2(3) + 1e-9
ONE_ULP = 1.0 + 1e-9

_MAG = np.unique(np.concatenate([np.geomspace(1e-8, 8, 50), np.linspace(1e-8, 8, 40)]))
STRAT = np.concatenate([-_MAG[::-1], _MAG, [-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0, 1000.0]])
SWISH_ROOT = -1.2784645  # root of d/dx x*sigmoid(x); float32 neighbours below
NEAR_ROOT = (np.float32(SWISH_ROOT)
             + np.arange(-40, 41, 3, dtype=np.float32) * np.spacing(np.float32(SWISH_ROOT))).astype(np.float32)

CASES = [  # name, numpy function, sympy form, domain (lo, hi)
    ("softplus", lambda v: np.log(1 + np.exp(v)), sp.log(1 + sp.exp(x)), None),
    ("logistic_loss", lambda v: np.log(1 + np.exp(-v)), sp.log(1 + sp.exp(-x)), None),
    ("expm1", lambda v: np.exp(v) - 1, sp.exp(x) - 1, None),
    ("log1p", lambda v: np.log(1 + v), sp.log(1 + x), (-1.0, np.inf)),
    ("sqrt_diff", lambda v: np.sqrt(v + 1) - np.sqrt(v), sp.sqrt(x + 1) - sp.sqrt(x), (0.0, np.inf)),
    ("one_minus_cos", lambda v: (1 - np.cos(v)) / v**2, (1 - sp.cos(x)) / x**2, None),
    ("swish", lambda v: v / (1 + np.exp(-v)), x / (1 + sp.exp(-x)), None),
]


def _points(dtype, dom, extra=()):
    pts = np.concatenate([STRAT, np.asarray(extra, dtype=np.float64)]).astype(dtype)
    if dom is not None:
        pts = pts[(pts.astype(np.float64) > dom[0]) & (pts.astype(np.float64) < dom[1])]
    return pts


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["f", "df"])
@pytest.mark.parametrize("name,fn,expr,dom", CASES, ids=[c[0] for c in CASES])
def test_compiled_within_2ulps(name, fn, expr, dom, kind, dtype, request):
    if (name, kind, dtype) in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[name, kind, dtype], strict=True))
    # a generous CPU-time cap, so the deterministic work budget decides even on a loaded machine
    compiled = sg.jit(fn, stabilize=10.0) if kind == "f" else sg.grad(fn, stabilize=10.0)
    exact = expr if kind == "f" else sp.diff(expr, x)
    X = _points(dtype, dom, NEAR_ROOT if name == "swish" else ())
    ref = reference_values(compile_mpmath(exact, [x]), X[:, None], dtype)
    ok = np.isfinite(ref)
    got = compiled(X[ok])
    assert got.dtype == np.dtype(dtype)
    assert np.all(np.isfinite(got)), X[ok][~np.isfinite(got)]
    bits = ulp_bits(got, ref[ok])
    limit = np.full(len(bits), ONE_ULP if name == "softplus" and dtype == "float64" else TWO_ULPS)
    if dtype == "float64":  # near a root no float64 formula beats the conditioning: allow log2(1 + kappa)
        kappa = _condition(exact, X[ok])
        limit = np.where(kappa >= 7, limit + np.log2(1 + kappa), limit)
    worst = np.argsort(limit - bits)[:3]
    assert np.all(bits <= limit), (name, kind, dtype, X[ok][worst], bits[worst], limit[worst])


KNOWN = {  # (name, kind, dtype) -> why it is not within 2 ulps yet
    ("sqrt_diff", "f", "float64"): "1/(sqrt(x + 1) + sqrt(x)) is 3 ulps at x ~ 1e-7: x + 1 rounds in [1, 2) and "
                                   "the result lands in [0.5, 1), where an ulp is half as large",
}
# swish' float64 (3 ulps at x = -6.77 with libm's exp, and up to log2(1 + kappa) bits next to its root)
# is within 2 ulps since the stabiliser evaluates its cancelling branch in double-double.


def _condition(expr, X):
    """kappa = |x f'(x) / f(x)| at each point (mpmath, 50 digits)."""
    fn, dfn = compile_mpmath(expr, [x]), compile_mpmath(sp.diff(expr, x), [x])
    out = []
    with mpmath.workdps(50):
        for v in X:
            xv = mpmath.mpf(float(v))
            f, d = fn([xv]), dfn([xv])
            out.append(float(abs(xv * d / f)) if f != 0 else np.inf)
    return np.array(out)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softplus_and_derivative_at_the_listed_points_within_1ulp(dtype):
    pts = np.array([-1000, -100, -20, -1e-8, 0, 1e-8, 20, 100, 1000], dtype=dtype)
    f = lambda v: np.log(1 + np.exp(v))  # noqa: E731
    for compiled, exact in ((sg.jit(f), sp.log(1 + sp.exp(x))), (sg.grad(f), sp.diff(sp.log(1 + sp.exp(x)), x))):
        ref = reference_values(compile_mpmath(exact, [x]), pts[:, None], dtype)
        got = compiled(pts)
        assert np.all(np.isfinite(got))
        assert ulp_bits(got, ref).max() <= ONE_ULP, (exact, pts, got, ref)
    assert sg.grad(f)(np.float32(100.0)) == np.float32(1.0)


def test_swish_derivative_float32_near_its_root_is_correctly_rounded_or_1ulp():
    """The case that needs float64 evaluation inside the float32 kernel (kappa up to ~1e4)."""
    dswish = sg.grad(lambda v: v / (1 + np.exp(-v)))
    X = NEAR_ROOT.astype(np.float32)
    mpmath.mp.dps = 60
    ref = np.array([float(mpmath.mpf(1) / (1 + mpmath.exp(-mpmath.mpf(float(v))))
                          * (1 + mpmath.mpf(float(v)) / (1 + mpmath.exp(mpmath.mpf(float(v))))))
                    for v in X]).astype(np.float32)
    got = dswish(X)
    assert got.dtype == np.float32
    assert ulp_bits(got, ref).max() <= ONE_ULP
    src = sg.trace(lambda v: v / (1 + np.exp(-v)), 0.0).source("grad")
    assert "float32_in_float64" in src and "v = np.float64(v)" in src
