"""Extended precision for float32: evaluate the chosen form in float64 and round once.

When the best float32 formula still loses more than 2 ulps somewhere (a function
near a root, where every float32 formula built from roundings cancels, e.g. the
derivative of x * sigmoid(x) at x = -1.2785 with condition number 2750), the
float32 kernel can compute in float64 and round the result to float32.  The
float64 error (about kappa * 2**-53) is far below half a float32 ulp, so the
result is correctly rounded except in rare double-rounding cases: at most 1 ulp.
This is the classical remedy for float32 (Higham 2002, sec. 3.4 and ch. 27 on
extra precision; Kahan's "evaluate in the widest precision that is not too slow").
The form itself does not change, so no equivalence check is needed; the cost is
float64 arithmetic (half the SIMD width) in that one kernel.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import sympy as sp

from .accuracy import Sample, ulp_bits
from .numeric import compile_numpy
from .reference import compile_mpmath, reference_values
from .sampling import box_points, from_ordinal, ordinal, sample_points
from .result import RewriteRecord, evaluate_result

TWO_ULPS = float(np.log2(3.0))
NAME = "float32_in_float64"


def widened_bits(expr: sp.Expr, variables: Sequence[sp.Symbol], sample: Sample) -> np.ndarray:
    """Bits of error at the float32 sample points of ``expr`` computed in float64, rounded to float32."""
    if len(sample.X) == 0:
        return np.zeros(0)
    wide = compile_numpy(expr, variables, np.float64)(sample.X.astype(np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        return ulp_bits(wide.astype(np.float32), sample.ref)


_MAG = np.unique(np.concatenate([np.geomspace(1e-6, 8.0, 48), np.linspace(1e-6, 8.0, 48),
                                 np.geomspace(10.0, 1e4, 13)]))
GRID = np.concatenate([-_MAG[::-1], _MAG])  # where roots and thresholds of moderate inputs live
ROOT_STEPS = (1, 3, 10, 30, 100, 300, 1000, 3000)  # float32 ulps from a sign change of the reference


def stress_sample(expr: sp.Expr, variables: Sequence[sp.Symbol], domain=None, dtype=np.float32) -> Sample | None:
    """Points of ``dtype`` (float32 by default) where a formula is most likely to cancel: a log/linear
    grid of moderate magnitudes and, for one variable, the floats next to every root of ``expr`` on
    that grid (1 to 3000 ulps of ``dtype`` away).

    The bit-pattern sample rarely lands within a few thousand ulps of a root (the derivative
    of x * sigmoid(x) has one at x = -1.2785), where the condition number is large.
    """
    if len(variables) != 1:
        return None
    dt = np.dtype(dtype)
    lo, hi = (domain or {}).get(variables[0], (-np.inf, np.inf))
    X = GRID[(GRID >= float(lo)) & (GRID <= float(hi))].astype(dt)
    fn = compile_mpmath(expr, variables)
    ref = reference_values(fn, X[:, None], dt)
    sign = np.sign(ref)
    near = []
    for i in np.flatnonzero((sign[:-1] * sign[1:] < 0) & np.isfinite(ref[:-1]) & np.isfinite(ref[1:])):
        a, b = int(ordinal(X[i:i + 1])[0]), int(ordinal(X[i + 1:i + 2])[0])  # Python ints: no int64 overflow
        while b - a > 1:  # bisect the sign change down to adjacent floats
            m = (a + b) // 2
            if np.sign(reference_values(fn, from_ordinal(np.array([m]), dt)[:, None], dt)[0]) == sign[i]:
                a = m
            else:
                b = m
        near += [a - k for k in ROOT_STEPS] + [b + k for k in ROOT_STEPS]
    if near:
        extra = from_ordinal(np.array(near, dtype=np.int64), dt)
        wide = extra.astype(np.float64)
        X = np.concatenate([X, extra[(wide >= float(lo)) & (wide <= float(hi))]])
    X = X[:, None]
    ref = reference_values(fn, X, dt)
    ok = np.isfinite(ref)
    return Sample(dt, X[ok], ref[ok])


def widen_record(expr: sp.Expr, variables: Sequence[sp.Symbol], sample: Sample,
                 bits32: np.ndarray, original: sp.Expr | None = None, domain=None,
                 stressed: bool = True) -> RewriteRecord | None:
    """A record for evaluating ``expr`` in float64 in float32 kernels, or None if not worth it.

    Worth it when the float32 form exceeds 2 ulps at some point of the search sample or (when
    ``stressed``) of the :func:`stress_sample` of ``original`` (the exact function, a few hundred
    more references), and the widened evaluation is better there without being worse on average.
    """
    stress = stress_sample(original if original is not None else expr, variables, domain) if stressed else None
    if stress is not None and len(stress.X):
        sample = Sample(sample.dtype, np.concatenate([sample.X, stress.X.astype(sample.X.dtype)]),
                        np.concatenate([sample.ref, stress.ref]))
        bits32 = np.concatenate([bits32, ulp_bits(compile_numpy(expr, variables, np.float32)(stress.X),
                                                  stress.ref)])
    if not len(bits32) or bits32.max() <= TWO_ULPS + 1e-9:
        return None
    wide = widened_bits(expr, variables, sample)
    if wide.max() >= bits32.max() or wide.mean() > bits32.mean() + 1e-9:
        return None
    return _record(expr, bits32, wide)


N_DENSE = 4096  # float32 points of the never-worse probe (:func:`loses_where_written_does_not`)
DENSE_SEED = 31415


def loses_where_written_does_not(expr: sp.Expr, original: sp.Expr, variables: Sequence[sp.Symbol],
                                 domain=None, n: int = N_DENSE) -> bool:
    """Does the float32 kernel of ``expr`` lose more than 2 ulps at some point where the formula as
    written (``original`` in float32) is within 1 ulp?  Issue 16's never-worse criterion, probed
    on ``n`` float32 points (:func:`~.sampling.sample_points`, seeded) and ``n/4`` uniform in the box of
    ordinary values (:func:`~.sampling.box_points`), without mpmath.

    The reference is ``expr`` computed in float64 and rounded once, which is what the widened
    kernel returns: where the float64 form is accurate (its error far below half a float32 ulp)
    it is the correctly rounded value but for double rounding.  So the probe costs three numpy
    evaluations, and sees the rare points a 256-point sample misses: the derivative of
    Michaelis-Menten ``x/(m + x)`` in float32, ``(m/(m + x))/(m + x)``, is 3 ulps off at
    (1.01, 0.9999), where the derivative as written rounds exactly.
    """
    rng = np.random.default_rng(DENSE_SEED)
    X = np.concatenate([sample_points(variables, domain, np.float32, n, rng),
                        box_points(variables, domain, np.float32, n // 4, rng)])
    with np.errstate(all="ignore"):
        ref = evaluate_result(expr, True, variables, X, np.float32)
        ok = np.isfinite(ref)
        if not ok.any():
            return False
        X, ref = X[ok], ref[ok]
        b32 = ulp_bits(evaluate_result(expr, False, variables, X, np.float32), ref)
        if b32.max() <= TWO_ULPS + 1e-9:
            return False
        written = ulp_bits(compile_numpy(original, variables, np.float32)(X), ref)
    return bool(np.any((written <= 1.0 + 1e-9) & (b32 > TWO_ULPS + 1e-9)))


def widened_record(expr: sp.Expr, variables: Sequence[sp.Symbol], sample: Sample, bits32: np.ndarray) -> RewriteRecord:
    """The record of a widening decided elsewhere (the never-worse check's float32 choice,
    :func:`.accept.per_dtype`): ``expr``'s float32 bits on ``sample`` before and after."""
    return _record(expr, bits32, widened_bits(expr, variables, sample))


def _record(expr, bits32, wide) -> RewriteRecord:
    bits = {"float32": (float(bits32.mean()), float(bits32.max()), float(wide.mean()), float(wide.max()))} \
        if len(bits32) and len(wide) else {}
    return RewriteRecord(NAME, sp.Symbol("float32 arithmetic"), sp.Symbol("float64 arithmetic rounded once"),
                         bits, None, expr, expr)
