"""NumPy reductions and scans while tracing: max/min, var/std, prod, cumsum, diff, nan*, interp.

Each entry of :data:`FUNCTIONS` maps a numpy function to a builder composed from
primitives.  Where a composition is exact and O(1) graph nodes it is used (``var``
is ``sum((x - mean)^2) / (n - ddof)`` as NumPy computes it); ``amax``/``amin``
and ``cumsum`` are primitives (:mod:`symgrad.ir.rules.reductions`).  ``prod`` and
``cumprod`` are log-depth trees of multiplications of slices (O(log n) graph nodes),
which keeps the derivative exact when an element is zero.

Axis arguments are validated as NumPy does: an out-of-range axis raises
``numpy.exceptions.AxisError`` and negative axes count from the end.
"""
from __future__ import annotations

import operator

import numpy as np

from ..errors import UnsupportedOperationError, format_error, user_location
from . import numpy_core as core
from .numpy_core import axes_of, normalize_axis_index
from .tracer import Tracer

_NO_VALUE = np._NoValue  # numpy's "argument not given" sentinel (initial=, where=)


def unsupported_arg(func: str, arg: str, do_instead: str):
    return UnsupportedOperationError(format_error(
        f"numpy.{func}(..., {arg}) is not supported on traced values", "symgrad traces the common forms of "
        "NumPy functions only (README, 'Traceable code')", do_instead, user_location(3)))


def reject_given(func: str, **given):
    """UnsupportedOperationError for the first keyword given a value (not None, not NumPy's no-value)."""
    for name, value in given.items():
        if value is not None and value is not _NO_VALUE:
            raise unsupported_arg(func, f"{name}=...", f"drop {name}= and apply it with array operations")


_HARMLESS = {"out": (None,), "casting": ("same_kind",), "order": ("K", None), "subok": (True,), "where": (True,),
             "shape": (None,)}  # NumPy's defaults: given with these values a keyword changes nothing


def reject_keywords(func: str, kw: dict) -> None:
    """UnsupportedOperationError for a keyword of ``numpy.<func>`` that symgrad would otherwise drop
    (``out=``, ``casting=``, ``where=``, ``shape=`` of ``*_like`` ... other than NumPy's default); ``dtype=``
    may be None or float64 (:func:`check_dtype`)."""
    for name, value in kw.items():
        if name == "dtype":
            check_dtype(func, value)
        elif not any(value is v or (isinstance(v, str) and value == v) for v in _HARMLESS.get(name, ())):
            shown = "<a traced array>" if isinstance(value, Tracer) else repr(value)
            raise unsupported_arg(func, f"{name}={shown}", f"drop {name}=: symgrad does not apply it to traced values")


def check_dtype(func: str, dtype) -> None:
    """``dtype=`` may be None or float64 (the dtype symgrad traces in); anything else is refused."""
    if dtype is None:
        return
    try:
        ok = np.dtype(dtype) == np.float64
    except TypeError:
        ok = False
    if not ok:
        raise unsupported_arg(func, f"dtype={dtype!r}", "drop dtype=: symgrad reduces in the arguments' float "
                              "dtype (float64, or float32 for float32 arguments); cast the result afterwards")


def _flag(value) -> bool:
    """A ``keepdims`` argument: NumPy's no-value sentinel means False."""
    return False if value is _NO_VALUE else bool(value)


def _mask(ctx, func: str, x, where):
    """The ``where=`` mask of a reduction of ``x``: None for "everything", else a boolean array or Tracer.

    As in NumPy, the mask must be boolean (TypeError) and broadcast to ``x.shape`` (ValueError).
    A constant mask is returned as a NumPy array, so counts over it stay constants.
    """
    if where is _NO_VALUE:
        return None
    m = where if isinstance(where, Tracer) else np.asarray(where)
    if m.dtype != bool:
        raise TypeError(format_error(
            f"numpy.{func}(..., where=...) needs a boolean mask; got dtype {m.dtype}", "NumPy casts where= to "
            "bool only safely", "pass a comparison such as x > 0, or a boolean array", user_location(4)))
    try:
        fits = np.broadcast_shapes(m.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(format_error(
            f"numpy.{func}(..., where=...): a mask of shape {m.shape} does not broadcast to the input's "
            f"shape {x.shape}", "NumPy broadcasts where= against the array being reduced",
            "give a mask whose shape broadcasts to the input's", user_location(4)))
    return None if isinstance(m, np.ndarray) and m.all() else m  # all True: the plain reduction


def _select(ctx, mask, x, fill):
    """``where(mask, x, fill)`` shaped like ``x`` (``x`` itself when there is no mask)."""
    return x if mask is None else ctx.apply("where", core.as_tracer(ctx, mask), x, fill)


def _count(ctx, x, mask, axes, keepdims):
    """How many entries of ``x`` the mask keeps along ``axes`` (a constant for a constant mask)."""
    if isinstance(mask, np.ndarray):
        return np.asarray(np.sum(np.broadcast_to(mask, x.shape), axis=axes, keepdims=keepdims), dtype=np.float64)
    ones = ctx.apply("broadcast_to", ctx.apply("where", mask, 1.0, 0.0), params=(x.shape,))
    return core.np_sum(ctx, ones, axes, keepdims=keepdims)


def _per_count(ctx, num, count):
    """``num / count``, NaN where the count is 0 (NumPy's mean of nothing), with a finite derivative
    there: the division is by ``where(count == 0, 1, count)``, so no 0 * inf reaches the gradient."""
    if isinstance(count, np.ndarray):  # a constant mask: the empty slices are known now
        empty = count == 0
        if not empty.any():
            return ctx.apply("div", num, count)
        res = ctx.apply("div", num, np.where(empty, 1.0, count))
        return ctx.apply("where", empty, np.nan, res)
    empty = ctx.apply("eq", count, 0.0)
    return ctx.apply("where", empty, np.nan, ctx.apply("div", num, ctx.apply("where", empty, 1.0, count)))


def _keep(ctx, out, x, axes, keepdims):
    if keepdims:
        out = core.reshape(ctx, out, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return out


# -- sum and mean --------------------------------------------------------------------------------

def np_sum(ctx, a, axis=None, dtype=None, out=None, keepdims=_NO_VALUE, initial=_NO_VALUE, where=_NO_VALUE):
    """np.sum with NumPy's keywords: ``sum(where(mask, a, 0)) + initial`` (one ``sum`` node).

    Shape: ``a``'s shape without ``axis`` (kept as 1s with ``keepdims``). ``where=`` is a
    boolean mask (traced or constant) that broadcasts to ``a``'s shape; the derivative is the
    mask (0 at excluded entries). Raises UnsupportedOperationError for ``out=`` or a dtype other
    than float64; TypeError for a non-boolean mask, ValueError for one that does not broadcast.
    """
    reject_given("sum", out=out)
    check_dtype("sum", dtype)
    x = core.as_tracer(ctx, a)
    res = core.np_sum(ctx, _select(ctx, _mask(ctx, "sum", x, where), x, 0.0), axis, _flag(keepdims))
    return res if initial is _NO_VALUE else ctx.apply("add", res, initial)


def np_mean(ctx, a, axis=None, dtype=None, out=None, keepdims=_NO_VALUE, *, where=_NO_VALUE):
    """np.mean with NumPy's keywords: ``sum(where(mask, a, 0)) / count(mask)`` along ``axis``.

    Shape as :func:`np_sum`. A slice whose mask keeps nothing is NaN (0/0), as in NumPy.
    Raises what :func:`np_sum` raises.
    """
    reject_given("mean", out=out)
    check_dtype("mean", dtype)
    x = core.as_tracer(ctx, a)
    mask, keep = _mask(ctx, "mean", x, where), _flag(keepdims)
    if mask is None:
        return core.mean(ctx, x, axis, keep)
    axes = axes_of(axis, x.ndim)
    num = core.np_sum(ctx, _select(ctx, mask, x, 0.0), axes, keep)
    return _per_count(ctx, num, _count(ctx, x, mask, axes, keep))


# -- max, min, ptp, argmax ------------------------------------------------------------------------

def _extreme(op: str, combine: str, name: str):
    def build(ctx, a, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=_NO_VALUE):
        reject_given(name, out=out)
        keepdims = _flag(keepdims)
        x = core.as_tracer(ctx, a)
        mask = _mask(ctx, name, x, where)
        if mask is not None and initial is _NO_VALUE:
            raise ValueError(format_error(
                f"numpy.{name}(..., where=...) needs initial=", f"np.{name} has no identity, so NumPy needs "
                "a value for slices the mask empties", f"pass initial=, e.g. np.{name}(x, where=m, initial="
                f"{'-' if op == 'amax' else ''}np.inf)", user_location(3)))
        x = _select(ctx, mask, x, initial)
        axes = axes_of(axis, x.ndim)
        if initial is _NO_VALUE and any(x.shape[i] == 0 for i in axes):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        if initial is not _NO_VALUE and any(x.shape[i] == 0 for i in axes):  # nothing but the initial value
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
            return _keep(ctx, ctx.apply("broadcast_to", initial, params=(shape,)), x, axes, keepdims)
        res = ctx.apply(op, x, params=(axes,)) if axes else x
        if initial is not _NO_VALUE:
            res = ctx.apply(combine, res, initial)
        return _keep(ctx, res, x, axes, keepdims)
    build.__doc__ = (f"np.{name}: the {op} primitive; ties share the derivative equally (JAX's rule), "
                     "NaN propagates. ``where=`` (with ``initial=``, as NumPy requires) reduces "
                     "``where(mask, a, initial)``. Shapes and AxisError as NumPy; UnsupportedOperationError "
                     "for out=.")
    return build


np_max = _extreme("amax", "maximum", "max")
np_min = _extreme("amin", "minimum", "min")


def ptp(ctx, a, axis=None, out=None, keepdims=False):
    """np.ptp = max - min (each with JAX's equal split among ties)."""
    return ctx.apply("sub", np_max(ctx, a, axis, out, keepdims), np_min(ctx, a, axis, out, keepdims))


def _arg_extreme(name: str, real):
    def build(ctx, a, axis=None, out=None, **kw):
        if not isinstance(a, Tracer):
            return real(np.asarray(a), axis=axis, **kw)
        raise UnsupportedOperationError(format_error(
            f"numpy.{name} of a traced value", "the position of the extreme depends on the input, has no "
            "derivative, and a traced value cannot be used as an index",
            f"use np.{name[3:]} for the value itself, or np.take_along_axis with a constant index array",
            user_location(3)))
    return build


# -- moments ----------------------------------------------------------------------------------------

def var(ctx, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO_VALUE, mean=_NO_VALUE,
        correction=_NO_VALUE):
    """np.var as NumPy computes it: sum(|x - mean|^2) / (n - ddof) (two-pass, no cancellation).

    With ``where=`` the mean, the sum and ``n`` count only the entries the mask keeps
    (``max(n - ddof, 0)``; an empty slice is NaN). Raises UnsupportedOperationError for
    ``out=``, ``mean=`` or a dtype other than float64.
    """
    reject_given("var", out=out, mean=mean)
    check_dtype("var", dtype)
    if correction is not _NO_VALUE:
        ddof = correction
    keepdims = _flag(keepdims)
    x = core.as_tracer(ctx, a)
    axes = axes_of(axis, x.ndim)
    mask = _mask(ctx, "var", x, where)
    if mask is None:
        n = int(np.prod([x.shape[i] for i in axes])) if axes else 1
        d = ctx.apply("sub", x, core.mean(ctx, x, axes, keepdims=True))
        ss = core.np_sum(ctx, ctx.apply("mul", d, d), axes, keepdims=keepdims)
        return ctx.apply("div", ss, float(max(n - ddof, 0)))
    m = _per_count(ctx, core.np_sum(ctx, _select(ctx, mask, x, 0.0), axes, True), _count(ctx, x, mask, axes, True))
    d = _select(ctx, mask, ctx.apply("sub", x, m), 0.0)  # excluded entries: 0, never NaN from an empty mean
    ss = core.np_sum(ctx, ctx.apply("mul", d, d), axes, keepdims=keepdims)
    count = _count(ctx, x, mask, axes, keepdims)
    dof = (np.maximum(count - ddof, 0.0) if isinstance(count, np.ndarray)
           else ctx.apply("maximum", ctx.apply("sub", count, float(ddof)), 0.0))
    return _per_count(ctx, ss, dof)


def std(ctx, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO_VALUE, mean=_NO_VALUE,
        correction=_NO_VALUE):
    """np.std = sqrt(var) (keywords and errors as :func:`var`); its derivative is infinite/NaN where
    the variance is 0 (as in JAX)."""
    return ctx.apply("sqrt", var(ctx, a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                                 correction=correction))


def average(ctx, a, axis=None, weights=None, returned=False, *, keepdims=False):
    """np.average: sum(a * w) / sum(w) over ``axis``; 1-D weights apply along ``axis``."""
    x = core.as_tracer(ctx, a)
    if weights is None:
        res, scl = core.mean(ctx, x, axis, keepdims=keepdims), None
        if returned:
            axes = axes_of(axis, x.ndim)
            scl = float(np.prod([x.shape[i] for i in axes]))
        return (res, scl) if returned else res
    w = core.as_tracer(ctx, weights)
    axes = axes_of(axis, x.ndim)
    if w.shape != x.shape:
        if axis is None or len(axes) != 1 or w.ndim != 1 or w.shape[0] != x.shape[axes[0]]:
            raise ValueError("average: weights must have the shape of a, or be 1-D along the given axis")
        w = core.reshape(ctx, w, tuple(d if i == axes[0] else 1 for i, d in enumerate(x.shape)))
        w = ctx.apply("broadcast_to", w, params=(x.shape,))
    num = core.np_sum(ctx, ctx.apply("mul", x, w), axes, keepdims=keepdims)
    den = core.np_sum(ctx, w, axes, keepdims=keepdims)
    res = ctx.apply("div", num, den)
    return (res, den) if returned else res


# -- products and scans ----------------------------------------------------------------------------

def _along(ctx, x, axis):
    """(x with ``axis`` moved to the front, the axis) ; ``axis=None`` flattens."""
    x = core.as_tracer(ctx, x)
    if axis is None:
        return core.reshape(ctx, x, (-1,)), 0
    ax = normalize_axis_index(operator.index(axis), x.ndim)
    return x, ax


def _slice(ctx, x, ax, start, stop):
    return ctx.apply("getitem", x, params=((("s", None, None, None),) * ax + (("s", start, stop, None),),))


def _prod_axis(ctx, x, ax):
    """Product along ``ax`` by halving: ``x[:h] * x[h:2h]`` (odd tail carried), log2(n) levels of nodes."""
    while x.shape[ax] > 1:
        n, h = x.shape[ax], x.shape[ax] // 2
        y = ctx.apply("mul", _slice(ctx, x, ax, 0, h), _slice(ctx, x, ax, h, 2 * h))
        x = core.concatenate(ctx, [y, _slice(ctx, x, ax, 2 * h, n)], axis=ax) if n % 2 else y
    pre = (("s", None, None, None),) * ax
    return ctx.apply("getitem", x, params=(pre + (0,),))


def prod(ctx, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=_NO_VALUE):
    """np.prod by pairwise halving: O(log n) graph nodes, only multiplications (exact derivative at zeros).

    The rounding order is a pairwise tree, so results may differ from NumPy's in the last bits.
    ``where=`` multiplies ``where(mask, a, 1)``; ``initial=`` multiplies the result. Raises
    UnsupportedOperationError for ``out=`` or a dtype other than float64.
    """
    reject_given("prod", out=out)
    check_dtype("prod", dtype)
    keepdims = _flag(keepdims)
    x = core.as_tracer(ctx, a)
    x = _select(ctx, _mask(ctx, "prod", x, where), x, 1.0)
    axes = axes_of(axis, x.ndim)
    res = x
    for ax in reversed(axes):  # reduce the last axes first, so earlier axis numbers stay valid
        if res.shape[ax] == 0:
            res = core.as_tracer(ctx, np.ones(res.shape[:ax] + res.shape[ax + 1:]))
        else:
            res = _prod_axis(ctx, res, ax)
    if initial is not _NO_VALUE:
        res = ctx.apply("mul", res, initial)
    return _keep(ctx, res, x, axes, keepdims)


def cumsum(ctx, a, axis=None, dtype=None, out=None):
    """np.cumsum: the cumsum primitive (its VJP is the reversed cumulative sum)."""
    reject_given("cumsum", out=out)
    check_dtype("cumsum", dtype)
    x, ax = _along(ctx, a, axis)
    if x.ndim == 0:
        return core.reshape(ctx, x, (1,))
    return ctx.apply("cumsum", x, params=(ax, False))


def cumprod(ctx, a, axis=None, dtype=None, out=None):
    """np.cumprod as a log-depth scan (Hillis & Steele 1986): ``y[k] *= y[k - s]`` for s = 1, 2, 4, ...

    O(log n) graph nodes and O(n log n) multiplications, only multiplications, so the
    derivative stays exact when an element is zero; rounding may differ from NumPy's
    sequential order in the last bits.
    """
    reject_given("cumprod", out=out)
    check_dtype("cumprod", dtype)
    x, ax = _along(ctx, a, axis)
    if x.ndim == 0:
        return core.reshape(ctx, x, (1,))
    n, s = x.shape[ax], 1
    while s < n:
        y = ctx.apply("mul", _slice(ctx, x, ax, s, n), _slice(ctx, x, ax, 0, n - s))
        x = core.concatenate(ctx, [_slice(ctx, x, ax, 0, s), y], axis=ax)
        s *= 2
    return x


def diff(ctx, a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    """np.diff: ``x[1:] - x[:-1]`` along ``axis``, ``n`` times (slices, O(n) nodes)."""
    x = core.as_tracer(ctx, a)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = normalize_axis_index(operator.index(axis), x.ndim)
    if operator.index(n) < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    parts = []
    for edge in (prepend, append):
        if edge is _NO_VALUE:
            parts.append(None)
            continue
        e = core.as_tracer(ctx, edge)
        if e.ndim == 0:
            e = ctx.apply("broadcast_to", e, params=(x.shape[:ax] + (1,) + x.shape[ax + 1:],))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        x = core.concatenate(ctx, [p for p in (parts[0], x, parts[1]) if p is not None], axis=ax)
    pre = (("s", None, None, None),) * ax
    for _ in range(n):
        hi = ctx.apply("getitem", x, params=(pre + (("s", 1, None, None),),))
        lo = ctx.apply("getitem", x, params=(pre + (("s", None, -1, None),),))
        x = ctx.apply("sub", hi, lo)
    return x


# -- NaN-ignoring reductions --------------------------------------------------------------------------

def _not_nan(ctx, x):
    return ctx.apply("eq", x, x)


def nansum(ctx, a, axis=None, dtype=None, out=None, keepdims=_NO_VALUE, initial=_NO_VALUE, where=_NO_VALUE):
    """np.nansum = sum(where(isnan(x), 0, x)) (+ ``initial``; ``where=`` as :func:`np_sum`); the
    derivative at a NaN entry is 0 (as in JAX). Raises what :func:`np_sum` raises."""
    reject_given("nansum", out=out)
    check_dtype("nansum", dtype)
    x = core.as_tracer(ctx, a)
    kept = _select(ctx, _mask(ctx, "nansum", x, where), ctx.apply("where", _not_nan(ctx, x), x, 0.0), 0.0)
    res = core.np_sum(ctx, kept, axis, _flag(keepdims))
    return res if initial is _NO_VALUE else ctx.apply("add", res, initial)


def nanmean(ctx, a, axis=None, dtype=None, out=None, keepdims=_NO_VALUE, *, where=_NO_VALUE):
    """np.nanmean = nansum(x) / count(not NaN) (both over the ``where=`` mask); all-NaN or empty
    slices give NaN (0/0) as in NumPy. Raises what :func:`np_sum` raises."""
    reject_given("nanmean", out=out)
    check_dtype("nanmean", dtype)
    x = core.as_tracer(ctx, a)
    ok, mask, keep = _not_nan(ctx, x), _mask(ctx, "nanmean", x, where), _flag(keepdims)
    num = core.np_sum(ctx, _select(ctx, mask, ctx.apply("where", ok, x, 0.0), 0.0), axis, keep)
    den = core.np_sum(ctx, _select(ctx, mask, ctx.apply("where", ok, 1.0, 0.0), 0.0), axis, keep)
    return ctx.apply("div", num, den)


# -- interpolation and polynomials ---------------------------------------------------------------------

def interp(ctx, x, xp, fp, left=None, right=None, period=None):
    """np.interp with constant sample points ``xp`` (increasing); ``x`` and ``fp`` may be traced.

    Piecewise linear: ``fp[j] + (x - xp[j]) * (fp[j+1] - fp[j]) / (xp[j+1] - xp[j])`` on
    ``xp[j] <= x < xp[j+1]`` (NumPy's formula), ``left``/``right`` outside, NaN for NaN.
    At an interior sample point the derivative is the right-hand slope, at ``xp[-1]`` the
    left-hand one (JAX's convention, ``jnp.interp``).  One ``where`` per segment.
    """
    if isinstance(xp, Tracer):
        raise UnsupportedOperationError(format_error(
            "numpy.interp with traced sample points xp", "the segment each x falls in would depend on the "
            "input", "pass xp as a constant array (fp and x may be traced)", user_location(3)))
    if period is not None:
        raise unsupported_arg("interp", "period=...", "reduce x into one period with constant arithmetic first")
    xp = np.asarray(xp, dtype=np.float64)
    fpt = core.as_tracer(ctx, fp)
    if xp.ndim != 1 or fpt.shape != xp.shape or xp.size == 0:
        raise ValueError("interp: xp and fp must be 1-D sequences of the same nonzero length")
    x = core.as_tracer(ctx, x)
    f = [ctx.apply("getitem", fpt, params=((j,),)) for j in range(xp.size)]
    res = f[-1] if right is None else core.as_tracer(ctx, right)
    if xp.size == 1:
        last = ctx.apply("add", f[0], ctx.apply("mul", x, 0.0))
    for j in range(xp.size - 2, -1, -1):
        slope = ctx.apply("div", ctx.apply("sub", f[j + 1], f[j]), float(xp[j + 1] - xp[j]))
        seg = ctx.apply("add", f[j], ctx.apply("mul", ctx.apply("sub", x, float(xp[j])), slope))
        if j == xp.size - 2:  # at xp[-1]: the value fp[-1] exactly, the slope from the left (as JAX)
            last = seg
            end = ctx.apply("add", f[j + 1], ctx.apply("mul", ctx.apply("sub", x, float(xp[j + 1])), slope))
            res = ctx.apply("where", ctx.apply("eq", x, float(xp[j + 1])), end, res)
        res = ctx.apply("where", ctx.apply("lt", x, float(xp[j + 1])), seg, res)
    res = ctx.apply("where", ctx.apply("lt", x, float(xp[0])), f[0] if left is None else left, res)
    return ctx.apply("where", _not_nan(ctx, x), res, last)  # NaN in, NaN out (the last segment's slope, as JAX)


def polyval(ctx, p, x):
    """np.polyval by Horner's rule: ((p[0] x + p[1]) x + ...) + p[-1]; p and x may be traced."""
    pt = core.as_tracer(ctx, p)
    if pt.ndim != 1:
        raise ValueError("polyval: p must be a 1-D array of coefficients")
    if pt.shape[0] == 0:
        return ctx.apply("mul", x, 0.0)
    coef = [ctx.apply("getitem", pt, params=((k,),)) for k in range(pt.shape[0])]
    res = ctx.apply("add", ctx.apply("mul", x, 0.0), coef[0])
    for c in coef[1:]:
        res = ctx.apply("add", ctx.apply("mul", res, x), c)
    return res


FUNCTIONS = {
    np.sum: np_sum, np.mean: np_mean, np.max: np_max, np.amax: np_max, np.min: np_min, np.amin: np_min, np.ptp: ptp,
    np.argmax: _arg_extreme("argmax", np.argmax), np.argmin: _arg_extreme("argmin", np.argmin),
    np.var: var, np.std: std, np.average: average, np.prod: prod, np.cumsum: cumsum, np.cumprod: cumprod,
    np.diff: diff, np.nansum: nansum, np.nanmean: nanmean, np.interp: interp, np.polyval: polyval,
}
