"""Bits-of-error measurement (Herbie's accuracy metric).

The error of a computed float ``r`` against the correctly rounded reference
``y`` is ``log2(1 + #floats between r and y)``, i.e. the base-2 log of the ulp
distance measured on integer bit patterns.  A NaN or infinity where the
reference is finite scores the maximum (the format width: 64 or 32 bits).

References:
    Panchekha, Sanchez-Stern, Wilcox & Tatlock (2015), "Automatically improving
    accuracy for floating point expressions", PLDI, sec. 3 (bits of error).
    Goldberg (1991), "What every computer scientist should know about
    floating-point arithmetic", sec. 1.2 (ulps and relative error).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from .budget import cpu_clock
from .numeric import compile_numpy, may_be_real
from .reference import compile_mpmath, reference_values
from .sampling import box_points, ordinal, sample_points

__all__ = ["Sample", "make_sample", "box_sample", "ulp_bits", "point_bits", "bits_of_error_report", "MAX_BITS"]

MAX_BITS = {np.dtype("float64"): 64.0, np.dtype("float32"): 32.0}


def ulp_bits(result: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per-point bits of error of ``result`` against reference ``ref`` (same dtype)."""
    dt = np.asarray(ref).dtype
    result = np.asarray(result, dtype=dt)
    top = MAX_BITS[dt]
    same = (result == ref) | (np.isnan(result) & np.isnan(ref))
    bad = ~np.isfinite(result) | ~np.isfinite(ref)
    oa, ob = ordinal(np.nan_to_num(result)), ordinal(np.nan_to_num(ref))
    same_sign = (oa >= 0) == (ob >= 0)
    d = np.where(same_sign, np.abs(oa - ob).astype(np.float64),
                 np.abs(oa).astype(np.float64) + np.abs(ob).astype(np.float64))
    bits = np.minimum(np.log2(1.0 + d), top)
    return np.where(same, 0.0, np.where(bad, top, bits))


@dataclass(frozen=True)
class Sample:
    """Sample points of one dtype with their correctly rounded reference values; ``cpu_s``: the
    CPU seconds :func:`make_sample` spent on it when it was first made (a cached sample keeps the
    figure, so decisions taken on it do not change when the cache has it)."""
    dtype: np.dtype
    X: np.ndarray
    ref: np.ndarray
    cpu_s: float = 0.0


_CACHE: dict = {}


def _key(expr, variables, domain, dtype, n, seed):
    dom = tuple(sorted((str(k), tuple(map(float, v))) for k, v in (domain or {}).items()))
    return (sp.srepr(expr), tuple(map(str, variables)), dom, str(np.dtype(dtype)), n, seed)


BASE_N = 64  # samples of n > BASE_N points extend the BASE_N-point sample (its references are reused)


def _draw(fn, variables, domain, dt, n, rng, real=None):
    xs, refs = [], []
    have = 0
    for _ in range(4):
        X = sample_points(variables, domain, dt, n, rng)
        X = np.unique(X, axis=0) if len(variables) else X
        X = X[rng.permutation(len(X))]
        if real is not None and len(X):
            X = X[may_be_real(real, variables, X)]
        ref = reference_values(fn, X, dt)
        ok = np.isfinite(ref)
        xs.append(X[ok])
        refs.append(ref[ok])
        have += int(ok.sum())
        if have >= n:
            break
    return np.concatenate(xs)[:n], np.concatenate(refs)[:n]


def make_sample(expr: sp.Expr, variables: Sequence[sp.Symbol], dtype, *, domain: Mapping | None = None,
                n: int = 256, seed: int = 0, real_only: bool = False) -> Sample:
    """Sample ``n`` points where ``expr`` has a finite real reference in ``dtype``.

    Results are cached per (expression, variables, domain, dtype, n, seed).
    Points whose reference is NaN/inf (outside the real domain or overflowing)
    are dropped; up to four batches are drawn to fill ``n`` points.  A sample
    of ``n > 64`` points is the 64-point sample (same seed) followed by
    ``n - 64`` further points, so a quick 64-point accuracy probe and a full
    search share their references.

    ``real_only``: points where ``expr`` in complex arithmetic is not real
    (:func:`.numeric.may_be_real`) are dropped before their references are computed (mpmath
    spends some 0.1 ms on each such point to find its value complex); the sample then also misses
    the rare real points whose complex evaluation rounds off the real line.
    """
    key = _key(expr, variables, domain, dtype, n, seed) + (real_only,)
    if key in _CACHE:
        return _CACHE[key]
    dt = np.dtype(dtype)
    t0, before = cpu_clock(), 0.0
    fn = compile_mpmath(expr, variables)
    if n > BASE_N:
        head = make_sample(expr, variables, dt, domain=domain, n=BASE_N, seed=seed, real_only=real_only)
        t0, before = cpu_clock(), head.cpu_s
        rng = np.random.default_rng([seed, 7919 if dt == np.float32 else 104729, n])
        X, ref = _draw(fn, variables, domain, dt, n - BASE_N, rng, expr if real_only else None)
        X, ref = np.concatenate([head.X, X]), np.concatenate([head.ref, ref])
    else:
        rng = np.random.default_rng([seed, 7919 if dt == np.float32 else 104729])
        X, ref = _draw(fn, variables, domain, dt, n, rng, expr if real_only else None)
    s = Sample(dt, X, ref, before + cpu_clock() - t0)
    if len(_CACHE) > 2000:
        _CACHE.clear()
    _CACHE[key] = s
    return s


def box_sample(expr: sp.Expr, variables: Sequence[sp.Symbol], dtype, *, domain: Mapping | None = None,
               n: int = 256, seed: int = 0) -> Sample:
    """Up to ``n`` points drawn uniformly in the box of ordinary values
    (:func:`.sampling.ordinary_box`: ``[-1, 1]`` in each input, inside ``domain``) where ``expr``
    has a finite real reference in ``dtype``; cached like :func:`make_sample`."""
    key = ("box",) + _key(expr, variables, domain, dtype, n, seed)
    if key in _CACHE:
        return _CACHE[key]
    dt = np.dtype(dtype)
    t0 = cpu_clock()
    X = box_points(variables, domain, dt, n, np.random.default_rng([seed, 5381]))
    ref = reference_values(compile_mpmath(expr, variables), X, dt) if len(X) else np.zeros(0, dt)
    ok = np.isfinite(ref)
    s = Sample(dt, X[ok], ref[ok], cpu_clock() - t0)
    if len(_CACHE) > 2000:
        _CACHE.clear()
    _CACHE[key] = s
    return s


def point_bits(expr: sp.Expr, variables: Sequence[sp.Symbol], sample: Sample,
               values: dict | None = None) -> np.ndarray:
    """Bits of error of ``expr`` evaluated in ``sample.dtype`` at every sample point.
    ``values``: subexpression values on ``sample.X`` shared across calls (see :func:`.numeric.compile_numpy`)."""
    if len(sample.X) == 0:
        return np.zeros(0)
    vals = compile_numpy(expr, variables, sample.dtype, values)(sample.X)
    return ulp_bits(vals, sample.ref)


def bits_of_error_report(expr: sp.Expr, variables: Sequence[sp.Symbol], dtype, domain: Mapping | None = None,
                         n: int = 256, seed: int = 0, reference_expr: sp.Expr | None = None
                         ) -> tuple[float, float]:
    """Mean and max bits of error of ``expr`` in ``dtype`` over sampled inputs.

    Args:
        expr: expression to measure (evaluated with numpy in ``dtype``).
        variables: ordered input symbols.
        dtype: ``"float64"`` or ``"float32"``.
        domain: optional ``{symbol: (lo, hi)}``.
        n: number of sample points.
        seed: RNG seed for the sampler.
        reference_expr: expression used for the exact reference and for the
            sample set (default ``expr``); pass the naive form to compare
            naive and stabilised versions on the same points.

    Returns:
        ``(mean_bits, max_bits)``.
    """
    s = make_sample(reference_expr if reference_expr is not None else expr, variables, dtype,
                    domain=domain, n=n, seed=seed)
    b = point_bits(expr, variables, s)
    if len(b) == 0:
        return 0.0, 0.0
    return float(b.mean()), float(b.max())
