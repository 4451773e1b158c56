"""The array helpers every NumPy table builds on: wrapping values, axes, sum/mean, reshaping, joining.

:mod:`.numpy_api`, :mod:`.numpy_reductions`, :mod:`.numpy_shapes` and :mod:`.linalg_api`
import from here and never from each other's tables, so the tracing layer has no import
cycle (``tests/test_architecture.py`` checks it).  Each function takes the
:class:`~symgrad.trace.tracer.TraceContext` first and the NumPy arguments after it, with
NumPy's meaning (the shapes are the traced arrays' core shapes).

Axis arguments are validated as NumPy does: an out-of-range axis raises
``numpy.exceptions.AxisError`` (extended with the user's line) and negative axes count
from the end.
"""
from __future__ import annotations

import operator

import numpy as np
from numpy.exceptions import AxisError
from numpy.lib import array_utils

from ..errors import TraceError, format_error, user_location
from .tracer import TraceContext, Tracer, to_node


def as_tracer(ctx: TraceContext, v) -> Tracer:
    """``v`` as a Tracer of ``ctx``: a Tracer unchanged, a number or array as a constant node.

    Raises what :func:`~symgrad.trace.tracer.to_node` raises (TypeError, DTypeError, TraceError).
    """
    return v if isinstance(v, Tracer) else ctx.wrap(to_node(ctx, v))


# -- traced indices ------------------------------------------------------------------------

def argument_names(t: Tracer) -> list[str]:
    """The names of the function's arguments that the traced value ``t`` is computed from."""
    g, seen, todo, names = t.ctx.graph, set(), [t.id], set()
    while todo:
        nid = todo.pop()
        if nid in seen:
            continue
        seen.add(nid)
        node = g[nid]
        if node.op == "input":
            names.add(str(node.params[0]))
        else:
            todo.extend(node.args)
    return sorted(names)


def traced_index_error(what: str, index: Tracer, skip: int = 4) -> TraceError:
    """The TraceError for indexing with a traced ``index`` (``what`` says which).

    For a traced index that is not a mask it names the arguments the index is computed from and
    how to keep index data out of the traced arguments, since integer labels passed as an
    argument (``x[np.arange(n), labels]``) are traced like any argument.
    """
    names = [] if index.dtype == bool else argument_names(index)
    where = "to select by a traced condition, use np.where with a mask: np.where(condition, x, other)"
    if not names:
        return TraceError(format_error(
            what, "the positions read would depend on the input, which has no single derivative formula",
            f"use a constant index array or mask; {where}", user_location(skip)))
    listed = ", ".join(names)
    return TraceError(format_error(
        f"{what}: it is computed from the argument(s) {listed}",
        "symgrad traces every argument of the function, integer arrays included (they become float64), so "
        "positions read from an argument would depend on the input, which has no single derivative formula",
        f"use a constant index array or mask. If {listed} is data (integer labels, indices), not something to "
        f"differentiate, keep it out of the arguments: close over it (a global or a closure), or bind it "
        f"with functools.partial(f, {names[0]}="
        f"{names[0]}); such values are constants of the compiled code, traced again when they change. Or pass "
        f"one-hot labels and multiply: np.sum(logits * onehot, axis=1). Otherwise, {where}", user_location(skip)))


# -- axes ----------------------------------------------------------------------------------

def _located(fn):
    """NumPy's axis normaliser, its AxisError extended with the user's line and advice."""
    def normalize(*args, **kw):
        try:
            return fn(*args, **kw)
        except AxisError as exc:
            raise AxisError(format_error(str(exc), "a traced array has the dimensions of its core shape (the "
                                         "signature), not of the batched arrays you call with",
                                         "give an axis in [-ndim, ndim) of the core shape", user_location(3))) from None
    return normalize


normalize_axis_index = _located(array_utils.normalize_axis_index)
normalize_axis_tuple = _located(array_utils.normalize_axis_tuple)


def axes_of(axis, ndim: int) -> tuple[int, ...]:
    """Sorted non-negative axes; ``None`` is every axis; AxisError as NumPy raises it."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, tuple):
        axis = (operator.index(axis),)
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


# -- sum and mean --------------------------------------------------------------------------

def np_sum(ctx, x, axis=None, keepdims=False):
    """``np.sum(x, axis, keepdims)``: one ``sum`` node over the sorted axes (none: ``x`` itself).

    The helper the tables build on; ``np.sum`` itself, with ``where=``/``initial=``, is
    :func:`symgrad.trace.numpy_reductions.np_sum`.
    """
    x = as_tracer(ctx, x)
    axes = axes_of(axis, x.ndim)
    if not axes:
        return x
    out = ctx.apply("sum", x, params=(axes,))
    if keepdims:
        out = reshape(ctx, out, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return out


def mean(ctx, x, axis=None, keepdims=False):
    """``np.mean(x, axis, keepdims)``: the sum divided by the number of elements reduced."""
    x = as_tracer(ctx, x)
    axes = axes_of(axis, x.ndim)
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    return ctx.apply("div", np_sum(ctx, x, axis, keepdims), float(n))


# -- reshaping and joining -----------------------------------------------------------------

def reshape(ctx, x, shape, order="C", **kw):
    """``np.reshape(x, shape, order)``; NumPy itself resolves ``-1`` and raises on a size mismatch."""
    x = as_tracer(ctx, x)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    probe = np.empty(x.shape, dtype=np.int8).reshape(shape)
    if order == "F":  # column-major: reverse the axes, reshape row-major, reverse back
        flat = ctx.apply("reshape", transpose(ctx, x), params=(tuple(reversed(probe.shape)),))
        return transpose(ctx, flat)
    if order not in ("C", "A", None):
        raise ValueError(f"reshape: order must be 'C', 'F' or 'A'; got {order!r}")
    return ctx.apply("reshape", x, params=(probe.shape,))


def transpose(ctx, x, axes=None):
    """``np.transpose(x, axes)``; ``axes=None`` reverses them."""
    x = as_tracer(ctx, x)
    perm = tuple(reversed(range(x.ndim))) if axes is None else normalize_axis_tuple(tuple(axes), x.ndim, "axes")
    if len(perm) != x.ndim:
        raise ValueError("axes don't match array")
    return ctx.apply("transpose", x, params=(perm,))


def concatenate(ctx, arrays, axis=0, **kw):
    """``np.concatenate(arrays, axis)``: one ``concat`` node (a single array is returned as is)."""
    arrays = [as_tracer(ctx, a) for a in arrays]
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated (use np.stack)")
    return ctx.apply("concat", *arrays, params=(normalize_axis_index(axis, ndim),)) if len(arrays) > 1 else arrays[0]


def stack(ctx, arrays, axis=0, **kw):
    """``np.stack(arrays, axis)``: each array given a length-1 axis, then concatenated."""
    arrays = [as_tracer(ctx, a) for a in arrays]
    ndim = arrays[0].ndim + 1
    axis = normalize_axis_index(axis, ndim)
    expanded = [reshape(ctx, a, a.shape[:axis] + (1,) + a.shape[axis:]) for a in arrays]
    return concatenate(ctx, expanded, axis=axis)
