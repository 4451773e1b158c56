"""NumPy implementations of the primitives that have no NumPy ufunc.

Each is the op's ``numpy`` facet (reference interpreter, constant folding) and
``numeric`` facet (the stabiliser's float evaluator): computed in the
argument's dtype, so a float32 evaluation stays float32.  They are the
textbook stable forms, the same ones the generated Numba helpers use
(:mod:`symgrad.emit.prelude`).

References: Maechler (2012), "Accurately computing log(1 - exp(-|a|))"
(log1pexp, the softplus form); Goldberg (1991), sec. 1.4 (sigmoid without
overflow).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["sigmoid", "softplus", "erf", "bd0", "erfcx_prime"]


def _float(x) -> np.ndarray:
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def softplus(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)) (no overflow)."""
    x = _float(x)
    return np.maximum(x, x.dtype.type(0)) + np.log1p(np.exp(-np.abs(x)))


def sigmoid(x):
    """1/(1+exp(-x)) for x >= 0, exp(x)/(1+exp(x)) for x < 0."""
    x = _float(x)
    one = x.dtype.type(1)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, one / (one + e), e / (one + e))


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    """The error function (NumPy has no erf ufunc): math.erf, rounded once to x's dtype."""
    x = _float(x)
    return _ERF(x).astype(x.dtype)


def bd0(a, b):
    """a log(a/b) + b - a, Loader's (2000) algorithm in float64, rounded once to the dtype.

    Where |a - b| < (a + b)/2: with v = (a - b)/(a + b), log(a/b) = 2 (v + v^3/3 + ...) and
    bd0 = (a - b) v + 2a (v^3/3 + v^5/5 + ...), which cancel by at most 10 % (v^2 < 1/4: 30 terms
    reach 2^-60; Loader's threshold of 1/10 is for speed, and beyond it the formula as it reads
    loses up to 26 ulps).  Elsewhere the formula as it reads, which cancels by at most a factor
    of 2.5 there.  bd0(0, b) = b.  The same algorithm as the generated kernels'
    helper ``_bd0`` (:mod:`symgrad.emit.prelude`).
    """
    a, b = np.broadcast_arrays(_float(a), _float(b))
    dt = np.result_type(a, b)
    A, B = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        d = A - B
        near = np.abs(d) < 0.5 * np.abs(A + B)
        v = np.where(near, d / (A + B), 0.0)
        v2 = v * v
        s, ej = d * v, 2.0 * A * v
        for j in range(1, 31):
            ej = ej * v2
            s = s + ej / (2 * j + 1)
        far = np.where(A == 0, B, A * np.log(A / B) + B - A)
        out = np.where(near, s, far)
    return out.astype(dt)


ERFCX_PRIME_CF_FROM = 1.25  # erfcx_prime: the continued fraction from here on, the formula as it reads below
ERFCX_PRIME_STEP = 0.25  # erfcx_prime on [0, 1.25): Taylor series about 0.125, 0.375, ..., 1.125
# Taylor coefficients of erfcx' about each centre, lowest order first (|h| <= 0.125: the 18th term is below
# 2**-60 of the first); :func:`erfcx_prime_taylor` recomputes them from 50-digit mpmath
ERFCX_PRIME_TAYLOR = (
    (-0.9100737058249748, 1.518925263708058, -1.6302817536864425, 1.3830684509008544, -1.000412724276325,
     0.641513589236611, -0.3734353568256712, 0.20050088604938204, -0.10043016354686286, 0.04733549474715488,
     -0.02113442675284621, 0.00898677106868447, -0.0036553986487077783, 0.0014274990502543136,
     -0.0005368779684092927, 0.00019498046961046134, -6.853715928357557e-05, 2.3364659300078614e-05),
    (-0.6139862422695429, 0.9112247845004285, -0.8862631903514252, 0.6896589869125722, -0.4615310668548428,
     0.2755998334280597, -0.15016244756342967, 0.07577777747517625, -0.03579938980839641, 0.015961161884761026,
     -0.006758332816064349, 0.002731436957675091, -0.0010580729748842792, 0.0003941968213179093,
     -0.00014166277081818792, 4.9230693075934786e-05, -1.6580680704490615e-05, 5.422336015176086e-06),
    (-0.43236181600380946, 0.5731754917419633, -0.5064889496688919, 0.3621384293799249, -0.2244910405980347,
     0.12494645454045378, -0.06376590487661934, 0.03026204945218352, -0.01349038473784471, 0.005691847816123003,
     -0.0022863822980612267, 0.0008785533929903704, -0.0003241898939382716, 0.0001152534603120228,
     -3.958488077033645e-05, 1.3166039980379981e-05, -4.249387229244341e-06, 1.3333000542207078e-06),
    (-0.3158338964908418, 0.3759138475463648, -0.3027431763786144, 0.1993136613255064, -0.11462905742250057,
     0.059536660564878004, -0.028486763637577475, 0.012723862612231632, -0.005355730378596466,
     0.002139573634997484, -0.0008157369202302106, 0.0002981383987810542, -0.00010483728718931637,
     3.557702139315235e-05, -1.1681685739596936e-05, 3.719568291306883e-06, -1.1507303167512345e-06,
     3.4648850380661566e-07),
    (-0.2380584881012718, 0.25576456087813026, -0.18838184521464704, 0.11447817696714498, -0.061193922265745646,
     0.02970182346398695, -0.013339385107303153, 0.005612948322552969, -0.0022326111720828786,
     0.0008450842876175225, -0.0003059918513044749, 0.00010642761521122555, -3.567970420325428e-05,
     1.1562602448743582e-05, -3.630909868491044e-06, 1.1071638695468551e-06, -3.284263966437794e-07,
     9.492728413756256e-08),
)


def erfcx_prime_taylor(n_terms: int = 18, digits: int = 50) -> tuple:
    """:data:`ERFCX_PRIME_TAYLOR` from mpmath: ``y = erfcx`` solves ``y' = 2xy - 2/sqrt(pi)`` (DLMF 7.10.1
    with 7.2.3), so its Taylor coefficients about ``x0`` satisfy ``a_0 = erfcx(x0)``,
    ``a_1 = 2 x0 a_0 - 2/sqrt(pi)``, ``(n + 1) a_(n+1) = 2 x0 a_n + 2 a_(n-1)``; erfcx' has
    coefficients ``(n + 1) a_(n+1)``."""
    import mpmath

    out = []
    with mpmath.workdps(digits):
        c = 2 / mpmath.sqrt(mpmath.pi)
        for k in range(round(ERFCX_PRIME_CF_FROM / ERFCX_PRIME_STEP)):
            x0 = mpmath.mpf(ERFCX_PRIME_STEP) * (k + mpmath.mpf(1) / 2)
            a = [mpmath.exp(x0 * x0) * mpmath.erfc(x0)]
            a.append(2 * x0 * a[0] - c)
            for n in range(1, n_terms):
                a.append((2 * x0 * a[n] + 2 * a[n - 1]) / (n + 1))
            out.append(tuple(float((n + 1) * a[n + 1]) for n in range(n_terms)))
    return tuple(out)


def erfcx_prime(x):
    """d/dx erfcx(x) = 2x erfcx(x) - 2/sqrt(pi), without the cancellation of that formula for x >> 1.

    For x >= 1.25 the two terms cancel to ``-1/(sqrt(pi) x**2)``; there the value is
    ``-(2/sqrt(pi)) K/(x + K)`` with ``K`` the tail of Laplace's continued fraction
    ``sqrt(pi) erfcx(x) = 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))`` (DLMF 7.9.2), evaluated
    backwards from ``8 + 180/x**1.5`` terms (within 2 ulps of 200-digit mpmath for x >= 1.25, mostly 1).  On
    [0, 1.25), where the formula as it reads multiplies SciPy's erfcx rounding by the cancellation
    factor 1/(1 - x sqrt(pi) erfcx(x)) (5.4 at 1.25: 22 ulps), a Taylor series about the nearest of
    0.125, 0.375, ..., 1.125 (:data:`ERFCX_PRIME_TAYLOR`, Horner's rule): within 1 ulp.  Below 0, the
    formula as it reads (no cancellation: within 5 ulps, SciPy's erfcx rounding).  Float64 inside,
    rounded once to x's dtype; the same algorithm as the kernels' helper ``_erfcx_prime``
    (:mod:`symgrad.emit.prelude`).
    """
    import scipy.special  # symgrad imports SciPy only where a SciPy function is used

    x = _float(x)
    X = x.astype(np.float64)
    with np.errstate(all="ignore"):
        direct = 2.0 * X * scipy.special.erfcx(X) - 2.0 / math.sqrt(math.pi)
        near = (X >= 0.0) & (X < ERFCX_PRIME_CF_FROM)
        if near.any():
            k = np.clip(np.floor(np.where(near, X, 0.0) / ERFCX_PRIME_STEP), 0, len(ERFCX_PRIME_TAYLOR) - 1)
            h = X - ERFCX_PRIME_STEP * (k + 0.5)
            table = np.array(ERFCX_PRIME_TAYLOR)[k.astype(np.intp)]
            acc = np.zeros_like(X)
            for n in range(table.shape[-1] - 1, -1, -1):
                acc = acc * h + table[..., n]
            direct = np.where(near, acc, direct)
        far = X >= ERFCX_PRIME_CF_FROM
        if not far.any():
            return direct.astype(x.dtype)
        t = np.where(far, X, 2.0)
        n = np.where(far, np.floor(8.0 + 180.0 / t ** 1.5), 0.0)
        K = np.zeros_like(t)
        for k in range(int(n.max()), 0, -1):
            K = np.where(k <= n, (0.5 * k) / (t + K), K)
        cf = -(2.0 / math.sqrt(math.pi)) * K / (t + K)
        out = np.where(far, cf, direct)
    return out.astype(x.dtype)
