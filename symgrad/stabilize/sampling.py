"""Input sampling for error measurement.

Following Herbie, most points are drawn uniformly over floating-point *bit
patterns* inside the domain (every binade is equally likely, so both huge and
tiny magnitudes are exercised).  The rest go to the regions where rounding
usually hurts: moderate values (where exp/log transition), a fixed list of
special magnitudes, points next to the domain ends and to 0 and +-1 (typical
singular points), and "clustered" tuples whose coordinates are nearly equal
(cancellation between variables, e.g. ``a - b`` or ``log(exp(a) + exp(b))``).

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating
    point expressions", PLDI, sec. 4.1 (sampling by bit pattern).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import sympy as sp

__all__ = ["ordinal", "from_ordinal", "sample_points", "domain_bounds", "ordinary_box", "box_points"]

_INT = {np.dtype("float64"): np.int64, np.dtype("float32"): np.int32}
_SPECIAL = [0.0, 1e-300, 1e-30, 1e-8, 1e-4, 0.1, 0.5, 1.0, 1 - 1e-8, 1 + 1e-8, 1 - 1e-4, 2.0,
            10.0, 20.0, 30.0, 100.0, 1000.0, 1e8, 1e30, 1e300]


def ordinal(x: np.ndarray) -> np.ndarray:
    """Map floats to integers so that consecutive floats map to consecutive integers."""
    x = np.asarray(x)
    it = _INT[x.dtype]
    i = x.view(it).astype(np.int64)
    mask = np.int64(np.iinfo(it).max)
    return np.where(i < 0, -(i & mask), i)


def from_ordinal(o: np.ndarray, dtype) -> np.ndarray:
    """Inverse of :func:`ordinal`."""
    dt = np.dtype(dtype)
    it = _INT[dt]
    o = np.asarray(o, dtype=np.int64)
    mask = np.int64(np.iinfo(it).max)
    bits = np.where(o < 0, (-o) | ~mask, o)
    return bits.astype(it).view(dt)


def domain_bounds(var, domain: Mapping | None, dtype) -> tuple[float, float]:
    """Finite ``(lo, hi)`` for ``var`` in ``dtype`` (default: all finite floats)."""
    dt = np.dtype(dtype)
    big = float(np.finfo(dt).max)
    lo, hi = (domain or {}).get(var, (-big, big))
    lo = max(float(lo), -big)
    hi = min(float(hi), big)
    return lo, hi


def _bitpattern(rng, lo, hi, size, dt):
    olo, ohi = ordinal(np.array([lo], dt))[0], ordinal(np.array([hi], dt))[0]
    return from_ordinal(rng.integers(olo, ohi + 1, size=size), dt)


def _specials(lo, hi, dt):
    vals = []
    for v in _SPECIAL:
        vals += [v, -v]
    for anchor in (lo, hi, 0.0, 1.0, -1.0):
        for k in (1e-12, 1e-8, 1e-5, 1e-2):
            step = k * max(abs(anchor), 1.0)
            vals += [anchor + step, anchor - step]
    vals += [lo, hi]
    with np.errstate(all="ignore"):
        arr = np.array(vals, dtype=dt)
    arr = arr[np.isfinite(arr) & (arr >= lo) & (arr <= hi)]
    return np.unique(arr)


def sample_points(variables: Sequence[sp.Symbol], domain: Mapping | None, dtype, n: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` input tuples as an ``(n, len(variables))`` array of ``dtype``.

    Mixture: 55% bit-pattern uniform, 15% uniform on the moderate part
    ``[-40, 40]`` of the domain, 15% special values, 15% clustered tuples.
    """
    dt = np.dtype(dtype)
    k = len(variables)
    bounds = [domain_bounds(v, domain, dt) for v in variables]
    n_bits, n_mod, n_spec = int(0.55 * n), int(0.15 * n), int(0.15 * n)
    n_clu = n - n_bits - n_mod - n_spec if k > 1 else 0
    n_bits += (n - n_bits - n_mod - n_spec) if k == 1 else 0
    cols = []
    for j, (lo, hi) in enumerate(bounds):
        parts = [_bitpattern(rng, lo, hi, n_bits, dt)]
        mlo, mhi = max(lo, -40.0), min(hi, 40.0)
        if mlo < mhi:
            parts.append(rng.uniform(mlo, mhi, n_mod).astype(dt))
        else:
            parts.append(_bitpattern(rng, lo, hi, n_mod, dt))
        spec = _specials(lo, hi, dt)
        parts.append(spec[rng.integers(0, len(spec), n_spec)] if len(spec) else
                     _bitpattern(rng, lo, hi, n_spec, dt))
        cols.append(np.concatenate(parts))
    X = np.stack(cols, axis=1) if k else np.zeros((n - n_clu, 0), dt)
    if n_clu:
        base = _bitpattern(rng, max(b[0] for b in bounds), min(b[1] for b in bounds), n_clu, dt) \
            if max(b[0] for b in bounds) < min(b[1] for b in bounds) else \
            _bitpattern(rng, bounds[0][0], bounds[0][1], n_clu, dt)
        scale = 10.0 ** rng.uniform(-12, 1, (n_clu, k))
        with np.errstate(all="ignore"):
            C = (base[:, None] * (1 + scale * rng.standard_normal((n_clu, k)))
                 + scale * rng.standard_normal((n_clu, k))).astype(dt)
        for j, (lo, hi) in enumerate(bounds):
            C[:, j] = np.clip(np.nan_to_num(C[:, j], nan=lo), lo, hi)
        X = np.concatenate([X, C])
    return X.astype(dt)


def ordinary_box(variables: Sequence[sp.Symbol], domain: Mapping | None, dtype) -> list[tuple[float, float]] | None:
    """Per input, the interval of ordinary values a box sample draws from: the domain inside
    ``[-1, 1]`` where that has width, else the domain's binade nearest to 1 (``[lo, 2 lo]`` for
    ``lo >= 1``, ``[2 hi, hi]`` for ``hi <= -1``); None if an input has a single value.

    Bounded real domains of ordinary size are common in users' programs (probabilities in
    (0, 1), speeds as fractions of c in (-1, 1), cosines) and the bit-pattern sample of every
    float rarely lands inside them away from 0: the probability that two inputs drawn by bit
    pattern both fall in (0.1, 1) is 1e-6."""
    out = []
    for v in variables:
        lo, hi = domain_bounds(v, domain, dtype)
        blo, bhi = max(lo, -1.0), min(hi, 1.0)
        if blo >= bhi:
            blo, bhi = (lo, min(hi, 2.0 * lo)) if lo >= 1.0 else (max(lo, 2.0 * hi), hi)
        if not blo < bhi:
            return None
        out.append((blo, bhi))
    return out


def box_points(variables: Sequence[sp.Symbol], domain: Mapping | None, dtype, n: int,
               rng: np.random.Generator) -> np.ndarray:
    """``n`` input tuples drawn uniformly in the :func:`ordinary_box`, and for one input every
    special value of its domain after them (0.1, 0.5, 1, 2, 10 ..., and the floats at 1e-2 ...
    1e-12 relative from 0, +-1 and the domain's ends: the values a user tries first); an
    ``(m, k)`` array of ``dtype``, empty if there is no such box."""
    dt = np.dtype(dtype)
    box = ordinary_box(variables, domain, dt)
    if box is None or not variables:
        return np.empty((0, len(variables)), dt)
    lo, hi = np.array(box).T
    X = np.clip(rng.uniform(lo, hi, (n, len(variables))).astype(dt), lo.astype(dt), hi.astype(dt))
    if len(variables) == 1:
        X = np.concatenate([X, _specials(*domain_bounds(variables[0], domain, dt), dt)[:, None]])
    return X
