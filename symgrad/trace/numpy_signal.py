"""np.convolve, np.correlate, np.trapezoid, np.gradient and np.ediff1d while tracing: shifted slices.

Each is a sum of constant-index slices of the traced arrays, so the values follow NumPy's
formulas operation for operation where the order is NumPy's own (``trapezoid``, ``gradient``,
``ediff1d``), and the derivatives are exact (every operation is a ``mul``/``add``/``sub`` of
slices).  A full convolution of lengths n >= m is ``sum_j v[j] * shift_j(a)``: m products of the
longer array by one element of the shorter, each placed at offset j between constant zeros, so the
graph has O(m) nodes whichever argument is traced (both may be).
"""
from __future__ import annotations

import operator

import numpy as np

from ..errors import format_error, user_location
from . import numpy_core as core
from .numpy_core import normalize_axis_index
from .numpy_reductions import _slice, diff, unsupported_arg
from .tracer import Tracer

_MODES = {"valid": "valid", "same": "same", "full": "full", 0: "valid", 1: "same", 2: "full"}


def _mode(func: str, mode) -> str:
    key = mode.lower() if isinstance(mode, str) else mode
    if isinstance(key, (bool, np.bool_)) or key not in _MODES:
        raise ValueError(format_error(
            f"numpy.{func}(..., mode={mode!r}): unknown mode", "NumPy's modes are 'valid', 'same' and 'full' "
            "(or 0, 1, 2)", "pass mode='full', 'same' or 'valid'", user_location(4)))
    return _MODES[key]


def _vector(ctx, func: str, name: str, value):
    """A 1-D operand of convolve/correlate (a scalar becomes length 1, as NumPy's ``ndmin=1``)."""
    x = core.as_tracer(ctx, value)
    if x.ndim == 0:
        x = core.reshape(ctx, x, (1,))
    if x.ndim != 1:
        raise ValueError(format_error(
            f"numpy.{func} needs 1-D arrays; {name} has shape {x.shape}", "NumPy's convolve and correlate are "
            "one-dimensional (it raises 'object too deep for desired array')",
            "convolve each row in a loop, or flatten first", user_location(4)))
    if x.shape[0] == 0:
        raise ValueError(f"{name} cannot be empty")
    return x


def _full_convolution(ctx, a, v):
    """``np.convolve(a, v, 'full')`` of 1-D tracers, length n + m - 1: the sum over the shorter
    operand's elements ``s[j]`` of ``s[j] * longer`` placed at offset j (O(min(n, m)) nodes)."""
    long_, short = (a, v) if a.shape[0] >= v.shape[0] else (v, a)
    n, m = long_.shape[0], short.shape[0]
    acc = None
    for j in range(m):
        term = ctx.apply("mul", short[j], long_)
        parts = ([np.zeros(j)] if j else []) + [term] + ([np.zeros(m - 1 - j)] if j < m - 1 else [])
        placed = core.concatenate(ctx, parts, axis=0)
        acc = placed if acc is None else ctx.apply("add", acc, placed)
    return acc


def _window(full, start: int, length: int, ctx):
    return full if start == 0 and length == full.shape[0] else _slice(ctx, full, 0, start, start + length)


def convolve(ctx, a, v, mode="full"):
    """np.convolve: ``(a * v)[k] = sum_j a[j] v[k - j]`` of two 1-D arrays (either or both traced).

    Shapes (n = len(a), m = len(v)): ``full`` n + m - 1, ``same`` max(n, m) (the full result from
    offset (min(n, m) - 1) // 2, as NumPy centres it), ``valid`` max(n, m) - min(n, m) + 1.  A scalar
    counts as length 1.  Raises ValueError for an array of 2 or more dimensions, an empty array or
    an unknown mode.  Reference: NumPy's ``convolve`` docs (``correlate(a, v[::-1], mode)``)."""
    mode = _mode("convolve", mode)
    a, v = _vector(ctx, "convolve", "a", a), _vector(ctx, "convolve", "v", v)
    full = _full_convolution(ctx, a, v)
    n, m = max(a.shape[0], v.shape[0]), min(a.shape[0], v.shape[0])
    if mode == "full":
        return full
    if mode == "same":
        return _window(full, (m - 1) // 2, n, ctx)
    return _window(full, m - 1, n - m + 1, ctx)


def correlate(ctx, a, v, mode="valid"):
    """np.correlate: ``c[k] = sum_i a[i + k] v[i]`` of two 1-D real arrays (NumPy's definition; the
    second argument is the one slid and, for complex input, conjugated), for lags k from -(m - 1).

    This is ``convolve(a, v[::-1])``; the windows are NumPy's: ``valid`` (the default) and ``full``
    as :func:`convolve`, ``same`` of length max(n, m) starting at (m - 1) // 2 of the full result
    when n >= m, and at n // 2 when n < m (NumPy swaps the arguments and reverses the result).
    Raises what :func:`convolve` raises."""
    mode = _mode("correlate", mode)
    a, v = _vector(ctx, "correlate", "a", a), _vector(ctx, "correlate", "v", v)
    n, m = a.shape[0], v.shape[0]
    full = _full_convolution(ctx, a, _slice_reversed(ctx, v))
    big, small = max(n, m), min(n, m)
    if mode == "full":
        return full
    if mode == "same":
        return _window(full, (m - 1) // 2 if n >= m else n // 2, big, ctx)
    return _window(full, small - 1, big - small + 1, ctx)


def _slice_reversed(ctx, v):
    return ctx.apply("getitem", v, params=((("s", None, None, -1),),)) if v.shape[0] > 1 else v


def trapezoid(ctx, y, x=None, dx=1.0, axis=-1):
    """np.trapezoid: ``sum(d * (y[1:] + y[:-1]) / 2.0)`` along ``axis`` with d = ``diff(x)`` (1-D x
    along ``axis``, or x of y's shape) or the spacing ``dx`` (a scalar or an array that broadcasts),
    in NumPy's order of operations.  y, x and dx may be traced.

    Shapes: y's shape without ``axis``.  Raises ValueError for a 0-d y, AxisError for a bad axis,
    ValueError when x does not fit y.  Reference: NumPy's ``trapezoid`` (the composite trapezoidal rule)."""
    yt = core.as_tracer(ctx, y)
    if yt.ndim == 0:
        raise ValueError(format_error("numpy.trapezoid needs y with at least one dimension", "it integrates "
                                      "along an axis of y", "pass an array of samples", user_location(3)))
    ax = normalize_axis_index(operator.index(axis), yt.ndim)
    if x is None:
        d = dx
    else:
        xt = x if isinstance(x, Tracer) else np.asarray(x, dtype=np.float64)
        if xt.ndim == 1:
            if xt.shape[0] != yt.shape[ax]:
                raise ValueError(format_error(
                    f"numpy.trapezoid: x has {xt.shape[0]} samples but y has {yt.shape[ax]} along axis {ax}",
                    "a 1-D x gives the sample points along the axis", "pass x of that length", user_location(3)))
            d = diff(ctx, xt) if isinstance(xt, Tracer) else np.diff(xt)
            shape = [1] * yt.ndim
            shape[ax] = d.shape[0]
            d = core.reshape(ctx, d, tuple(shape)) if isinstance(d, Tracer) else d.reshape(shape)
        else:
            d = diff(ctx, xt, axis=ax) if isinstance(xt, Tracer) else np.diff(xt, axis=ax)
    n = yt.shape[ax]
    s = ctx.apply("add", _slice(ctx, yt, ax, 1, n), _slice(ctx, yt, ax, 0, max(n - 1, 0)))
    return core.np_sum(ctx, ctx.apply("div", ctx.apply("mul", d, s), 2.0), ax)


def _spacings(ctx, f, axes, varargs):
    """NumPy's spacing arguments of np.gradient: one per axis, a float (uniform) or the constant
    array of coordinate differences (non-uniform); a uniform coordinate array becomes its step."""
    if any(isinstance(v, Tracer) for v in varargs):
        raise unsupported_arg("gradient", "a traced spacing", "pass the spacing or the coordinates as constants")
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [float(varargs[0])] * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("invalid number of arguments")
    out = []
    for ax, distances in zip(axes, varargs):
        d = np.asarray(distances, dtype=np.float64)
        if d.ndim == 0:
            out.append(float(d))
            continue
        if d.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if len(d) != f.shape[ax]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        step = np.diff(d)
        out.append(float(step[0]) if step.size and (step == step[0]).all() else step)
    return out


def _combine(ctx, terms):
    """``a * f1 + b * f2 + c * f3`` left to right (NumPy's order)."""
    (a, f1), (b, f2), (c, f3) = terms
    return ctx.apply("add", ctx.apply("add", ctx.apply("mul", a, f1), ctx.apply("mul", b, f2)),
                     ctx.apply("mul", c, f3))


def _gradient_axis(ctx, f, ax, h, edge_order):
    """np.gradient of ``f`` along ``ax`` with spacing ``h`` (a float or the array of steps)."""
    n = f.shape[ax]
    if n < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "(edge_order + 1) elements are required.")
    at = lambda i: _slice(ctx, f, ax, i % n, i % n + 1)  # noqa: E731 - one position, the axis kept
    uniform = np.ndim(h) == 0
    parts = []
    if uniform:  # edges of order 1 or 2 (NumPy's one-sided formulas), centred differences inside
        if edge_order == 1:
            parts.append(ctx.apply("div", ctx.apply("sub", at(1), at(0)), h))
        else:
            parts.append(_combine(ctx, [(-1.5 / h, at(0)), (2.0 / h, at(1)), (-0.5 / h, at(2))]))
        if n > 2:
            parts.append(ctx.apply("div", ctx.apply("sub", _slice(ctx, f, ax, 2, n), _slice(ctx, f, ax, 0, n - 2)),
                                   2.0 * h))
        if edge_order == 1:
            parts.append(ctx.apply("div", ctx.apply("sub", at(-1), at(-2)), h))
        else:
            parts.append(_combine(ctx, [(0.5 / h, at(-3)), (-2.0 / h, at(-2)), (1.5 / h, at(-1))]))
        return core.concatenate(ctx, parts, axis=ax)
    shape = [1] * f.ndim
    shape[ax] = -1
    if edge_order == 1:
        parts.append(ctx.apply("div", ctx.apply("sub", at(1), at(0)), float(h[0])))
    else:
        dx1, dx2 = float(h[0]), float(h[1])
        parts.append(_combine(ctx, [(-(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2)), at(0)),
                                    ((dx1 + dx2) / (dx1 * dx2), at(1)), (-dx1 / (dx2 * (dx1 + dx2)), at(2))]))
    if n > 2:
        dx1, dx2 = h[0:-1], h[1:]
        a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
        b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
        c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
        parts.append(_combine(ctx, [(a, _slice(ctx, f, ax, 0, n - 2)), (b, _slice(ctx, f, ax, 1, n - 1)),
                                    (c, _slice(ctx, f, ax, 2, n))]))
    if edge_order == 1:
        parts.append(ctx.apply("div", ctx.apply("sub", at(-1), at(-2)), float(h[-1])))
    else:
        dx1, dx2 = float(h[-2]), float(h[-1])
        parts.append(_combine(ctx, [(dx2 / (dx1 * (dx1 + dx2)), at(-3)), (-(dx2 + dx1) / (dx1 * dx2), at(-2)),
                                    ((2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2)), at(-1))]))
    return core.concatenate(ctx, parts, axis=ax)


def gradient(ctx, f, *varargs, axis=None, edge_order=1):
    """np.gradient: second-order central differences inside, first- or second-order one-sided
    differences at the two ends (``edge_order`` 1 or 2), along every axis or the given ``axis``
    (an int or a tuple).  Spacings as NumPy: none (1.0), one scalar for every axis, or one per axis,
    each a scalar or a constant 1-D coordinate array (non-uniform coordinates use NumPy's weights;
    uniform ones reduce to their step, as NumPy does).

    Shapes: f's shape; a tuple of arrays when more than one axis is differentiated.  Raises
    UnsupportedOperationError for a traced spacing; ValueError for an axis shorter than
    edge_order + 1, bad coordinates or edge_order other than 1 or 2; TypeError for the wrong number
    of spacings.  Reference: NumPy's ``gradient`` (its notes derive the weights; Fornberg 1988,
    "Generation of finite difference formulas on arbitrarily spaced grids", Math. Comp. 51)."""
    x = core.as_tracer(ctx, f)
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported" if isinstance(edge_order, int) and edge_order > 2
                         else f"numpy.gradient: edge_order must be 1 or 2; got {edge_order!r}")
    if x.ndim == 0:
        raise ValueError("numpy.gradient needs an array with at least one dimension")
    axes = tuple(range(x.ndim)) if axis is None else core.normalize_axis_tuple(axis, x.ndim)
    out = [_gradient_axis(ctx, x, ax, h, edge_order) for ax, h in zip(axes, _spacings(ctx, x, axes, varargs))]
    return out[0] if len(out) == 1 else tuple(out)


def ediff1d(ctx, ary, to_end=None, to_begin=None):
    """np.ediff1d: ``concatenate([to_begin, x[1:] - x[:-1], to_end])`` of the flattened array (the
    edge values flattened too; any of them may be traced).

    Shape: (max(size - 1, 0) + len(to_begin) + len(to_end),)."""
    flat = core.reshape(ctx, core.as_tracer(ctx, ary), (-1,))
    edges = [core.reshape(ctx, core.as_tracer(ctx, e), (-1,)) if e is not None else None for e in (to_begin, to_end)]
    middle = diff(ctx, flat) if flat.shape[0] > 1 else None
    parts = [p for p in (edges[0], middle, edges[1]) if p is not None and p.shape[0]]
    return core.concatenate(ctx, parts, axis=0) if parts else core.as_tracer(ctx, np.zeros(0))


FUNCTIONS = {np.convolve: convolve, np.correlate: correlate, np.trapezoid: trapezoid, np.gradient: gradient,
             np.ediff1d: ediff1d}
