"""np.sort, np.median and np.quantile while tracing: a sorting network of minimum/maximum.

A traced array has no order until its values are known, so ``np.sort`` is traced as Batcher's
odd-even merge sort (Knuth, TAOCP vol. 3, sec. 5.3.4, Algorithm M): rounds of disjoint
compare-exchanges ``(x[i], x[j]) -> (minimum, maximum)`` (:func:`_exchange`), the same pairs for
every input.  One round is one vectorised exchange over constant index arrays, and an axis of
length n takes about log2(n)**2 / 2 rounds.  Its derivative is the permutation JAX's sort applies
to the cotangent (each output takes the derivative of the input that lands there); where inputs
are equal, ``minimum``/``maximum`` share the derivative equally between them (JAX's rule for
``np.max``), while JAX's sort gives it to one of them.  Two differences from NumPy's values: NaN
propagates through the comparisons (NumPy's sort moves NaN to the end), and of two equal zeros
-0.0 may come out as 0.0.

``np.median`` and ``np.quantile``/``np.percentile`` (``method="linear"``) read the sorted axis at
constant positions.
"""
from __future__ import annotations

import functools

import numpy as np

from . import numpy_core as core
from .numpy_core import normalize_axis_index
from .numpy_reductions import reject_given, unsupported_arg

SCALAR_SORTED = 64  # axes up to this length are sorted element by element, longer ones by whole rounds
MAX_SORTED = 4096  # longest axis traced as a network (about 80 rounds at 4096)


@functools.lru_cache(maxsize=64)
def merge_sort_rounds(n: int) -> tuple:
    """Batcher's odd-even merge sort for ``n`` elements as rounds of disjoint pairs: a tuple of
    ``(lo, hi)`` index arrays, ``lo < hi`` elementwise, the minimum to ``lo``.  The network for the
    next power of two with the comparators that touch an index >= n dropped (the padding would
    be +inf: such a comparator never moves a value)."""
    rounds = []
    p = 1
    while p < n:
        k = p
        while k >= 1:
            lo, hi = [], []
            for j in range(k % p, n - k, 2 * k):
                for i in range(min(k, n - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        lo.append(i + j)
                        hi.append(i + j + k)
            if lo:
                rounds.append((np.array(lo), np.array(hi)))
            k //= 2
        p *= 2
    return tuple(rounds)


def _last_axis(ctx, a, axis):
    """(x with ``axis`` last, the axis it came from, or None when ``axis`` is None: flattened)."""
    x = core.as_tracer(ctx, a)
    if axis is None:
        return core.reshape(ctx, x, (-1,)), None
    ax = normalize_axis_index(axis, x.ndim)
    perm = [d for d in range(x.ndim) if d != ax] + [ax]
    return (core.transpose(ctx, x, perm) if ax != x.ndim - 1 else x), ax


def _back(ctx, x, ax):
    """Undo :func:`_last_axis`'s move of ``ax`` to the end."""
    if ax is None or ax == x.ndim - 1:
        return x
    perm = list(range(x.ndim - 1))
    perm.insert(ax, x.ndim - 1)
    return core.transpose(ctx, x, perm)


def _exchange(ctx, a, b):
    """One comparator: ``(minimum(a, b), maximum(a, b))``.  Not a ``where`` on ``a > b``: SymPy folds
    the nested Piecewise of a network of selections without end when the stabiliser reads a region
    (a 5-element sort of float32 did not build in 10 minutes)."""
    return ctx.apply("minimum", a, b), ctx.apply("maximum", a, b)


def _sorted_last(ctx, x):
    """``x`` sorted along its last axis by the network of :func:`merge_sort_rounds`."""
    n = x.shape[-1]
    if n <= 1:  # nothing to order (an empty axis included)
        return x
    if n > MAX_SORTED:
        raise unsupported_arg("sort", f"an axis of length {n} (more than {MAX_SORTED})",
                              "sort a shorter axis, or wrap the step in symgrad.custom_gradient")
    if n <= SCALAR_SORTED:  # one node per comparator output: small kernels compile fastest this way
        vals = [x[..., i] for i in range(n)]
        for lo, hi in merge_sort_rounds(n):
            for i, j in zip(lo.tolist(), hi.tolist()):
                vals[i], vals[j] = _exchange(ctx, vals[i], vals[j])
        return core.stack(ctx, vals, axis=-1)
    for lo, hi in merge_sort_rounds(n):
        rest = np.setdiff1d(np.arange(n), np.concatenate([lo, hi]))
        parts = list(_exchange(ctx, x[..., lo], x[..., hi])) + ([x[..., rest]] if len(rest) else [])
        where = np.concatenate([lo, hi, rest])  # position in x of each column of the joined parts
        x = core.concatenate(ctx, parts, axis=-1)[..., np.argsort(where)]
    return x


def sort(ctx, a, axis=-1, kind=None, order=None, *, stable=None):
    """np.sort: ascending along ``axis`` (``None``: the flattened array), any ``kind``.

    Shapes: as ``a`` (1-D for ``axis=None``).  Raises UnsupportedOperationError for ``order=``
    (structured arrays) and for an axis longer than ``MAX_SORTED``; AxisError as NumPy."""
    reject_given("sort", order=order)
    x, ax = _last_axis(ctx, a, axis)
    if x.ndim == 0:
        raise np.exceptions.AxisError("axis -1 is out of bounds for array of dimension 0")
    return _back(ctx, _sorted_last(ctx, x), ax)


def _sorted_for(ctx, func: str, a, axis):
    """(``a`` sorted along ``axis`` moved last, ``a`` as a tracer, the axis) for the order statistics:
    ``axis`` an int or None (flattened).  Raises UnsupportedOperationError for a tuple axis and
    ValueError for an empty axis (NumPy returns NaN with a RuntimeWarning there)."""
    if not isinstance(axis, (int, np.integer, type(None))):
        raise unsupported_arg(func, "a tuple axis", "reshape the axes into one first")
    x0 = core.as_tracer(ctx, a)
    s, ax = _last_axis(ctx, x0, axis)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ValueError(f"{func}: the array has no elements along the axis (NumPy gives NaN and a RuntimeWarning)")
    return _sorted_last(ctx, s), x0, ax


def _kept(ctx, v, x0, axis, ax, keepdims):
    """``v`` with the reduced axis (every axis for ``axis=None``) kept as length 1 when ``keepdims``."""
    if not keepdims:
        return v
    return core.reshape(ctx, v, tuple(1 if axis is None or d == ax else x0.shape[d] for d in range(x0.ndim)))


def quantile(ctx, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
    """np.quantile with ``method="linear"`` (NumPy's default): for each constant q in [0, 1], the
    sorted values at ``floor(h)`` and ``floor(h) + 1`` with h = (n - 1) q, interpolated by the
    fractional part (Hyndman & Fan 1996, definition 7).  ``axis`` an int or None.

    Shapes: ``q.shape + a.shape`` without ``axis`` (kept as length 1 with ``keepdims``).
    Raises: UnsupportedOperationError for a traced q, another method, weights=, out= or a tuple
    axis; ValueError for q outside [0, 1] or an empty axis."""
    reject_given("quantile", out=out, weights=weights, interpolation=interpolation)
    if method != "linear":
        raise unsupported_arg("quantile", f"method={method!r}", "use the default method='linear'")
    if isinstance(q, core.Tracer):
        raise unsupported_arg("quantile", "a traced q", "pass the quantiles as constants")
    qs = np.asarray(q, dtype=np.float64)
    if np.any((qs < 0) | (qs > 1)) or np.any(np.isnan(qs)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    s, x0, ax = _sorted_for(ctx, "quantile", a, axis)
    n = s.shape[-1]
    outs = []
    for qi in qs.ravel():
        h = (n - 1) * float(qi)
        j = min(int(np.floor(h)), n - 1)
        t = h - j
        v = s[..., j]
        if t > 0 and j + 1 < n:
            w = s[..., j + 1]  # NumPy's lerp: a + (b - a) t, from the far end for t >= 0.5
            v = (ctx.apply("sub", w, ctx.apply("mul", ctx.apply("sub", w, v), 1.0 - t)) if t >= 0.5
                 else ctx.apply("add", v, ctx.apply("mul", ctx.apply("sub", w, v), t)))
        outs.append(_kept(ctx, v, x0, axis, ax, keepdims))
    res = core.stack(ctx, outs, axis=0) if len(outs) > 1 or qs.ndim else outs[0]
    return core.reshape(ctx, res, qs.shape + tuple(res.shape[1:])) if qs.ndim > 1 else res


def percentile(ctx, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               weights=None, interpolation=None):
    """np.percentile: :func:`quantile` at q / 100 (q in [0, 100])."""
    if isinstance(q, core.Tracer):
        raise unsupported_arg("percentile", "a traced q", "pass the percentiles as constants")
    qs = np.asarray(q, dtype=np.float64)
    if np.any((qs < 0) | (qs > 100)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return quantile(ctx, a, qs / 100.0, axis, out, overwrite_input, method, keepdims, weights=weights,
                    interpolation=interpolation)


def median(ctx, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.median: the middle of the sorted ``axis``, and for an even length the mean of the two
    middle values, ``(a + b) / 2`` as NumPy computes it.  ``axis`` an int or None.

    Shapes: ``a.shape`` without ``axis`` (length 1 with ``keepdims``).  Raises:
    UnsupportedOperationError for out= or a tuple axis; ValueError for an empty axis."""
    reject_given("median", out=out)
    s, x0, ax = _sorted_for(ctx, "median", a, axis)
    n = s.shape[-1]
    v = s[..., n // 2] if n % 2 else ctx.apply("div", ctx.apply("add", s[..., n // 2 - 1], s[..., n // 2]), 2.0)
    return _kept(ctx, v, x0, axis, ax, keepdims)


FUNCTIONS = {np.sort: sort, np.median: median, np.quantile: quantile, np.percentile: percentile}
