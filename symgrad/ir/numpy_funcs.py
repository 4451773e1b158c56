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

from ..tables import ERFCX_STEP, ERFCX_TAYLOR

__all__ = ["sigmoid", "softplus", "erf", "bd0", "erfcx_prime"]


def _float(x) -> np.ndarray:
    """``x`` as a float array (integers and booleans as float64).

    Raises:
      TypeError: ``x`` is complex: a function with no complex formula here (the stabiliser's
        real-domain filter, :func:`symgrad.stabilize.numeric.may_be_real`, then keeps every point);
        casting would drop the imaginary part with a ComplexWarning.
    """
    x = np.asarray(x)
    if x.dtype.kind == "c":
        raise TypeError(f"a real function was given a complex array ({x.dtype}); real arguments only")
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def softplus(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)) (no overflow); for a complex array, the
    formula itself (the stabiliser's real-domain filter evaluates formulas in complex arithmetic)."""
    if np.iscomplexobj(x):
        return np.log1p(np.exp(x))
    x = _float(x)
    return np.maximum(x, x.dtype.type(0)) + np.log1p(np.exp(-np.abs(x)))


def sigmoid(x):
    """1/(1+exp(-x)) for x >= 0, exp(x)/(1+exp(x)) for x < 0; for a complex array, 1/(1+exp(-x))."""
    if np.iscomplexobj(x):
        return 1 / (1 + np.exp(-np.asarray(x)))
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


def erfcx_prime_taylor(n_terms: int = 18, digits: int = 50) -> tuple:
    """:data:`symgrad.tables.ERFCX_TAYLOR` from mpmath: ``y = erfcx`` solves ``y' = 2xy - 2/sqrt(pi)`` (DLMF 7.10.1
    with 7.2.3), so its Taylor coefficients about ``x0`` satisfy ``a_0 = erfcx(x0)``,
    ``a_1 = 2 x0 a_0 - 2/sqrt(pi)``, ``(n + 1) a_(n+1) = 2 x0 a_n + 2 a_(n-1)``; erfcx' has
    coefficients ``(n + 1) a_(n+1)``."""
    import mpmath

    out = []
    with mpmath.workdps(digits):
        c = 2 / mpmath.sqrt(mpmath.pi)
        for k in range(round(ERFCX_PRIME_CF_FROM / ERFCX_STEP)):
            x0 = mpmath.mpf(ERFCX_STEP) * (k + mpmath.mpf(1) / 2)
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
    0.125, 0.375, ..., 1.125 (:data:`symgrad.tables.ERFCX_TAYLOR`, Horner's rule): within 1 ulp.  Below 0, the
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
            k = np.clip(np.floor(np.where(near, X, 0.0) / ERFCX_STEP), 0, len(ERFCX_TAYLOR) - 1)
            h = X - ERFCX_STEP * (k + 0.5)
            table = np.array(ERFCX_TAYLOR)[k.astype(np.intp)]
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
