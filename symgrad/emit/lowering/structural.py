"""Numba lowering of the structural ops of :mod:`symgrad.ir.rules.structural`.

``sum``, ``transpose``, ``scatter``, ``contract`` and ``eye`` print as statements: an
output array (``np.zeros``/``np.empty``) and one loop nest (:mod:`symgrad.emit.loops`);
Numba compiles these loops faster than ``np.sum``/``np.transpose``/slice assignment/
``np.eye`` and the loop order fixes the summation order, which the interpreter tier
(:mod:`symgrad.emit.tape`) reproduces.  ``reshape``, ``broadcast_to``, ``getitem`` and
``concat`` print as NumPy expressions; the leaves print as names and literals.
"""
from __future__ import annotations

import numpy as np

from ...ir.rules.structural import BATCH, parse_spec
from ..loops import element_loops, index_vars, loop_nest
from .base import lowers

__all__ = ["index_to_source"]


def index_to_source(index: tuple) -> str:
    """An index in params form (ints, ``('s', start, stop, step)``, None) as Python source,
    ``"1:, 0, None"`` (``"()"`` for the empty index)."""
    parts = []
    for i in index:
        if i is None:
            parts.append("None")
        elif isinstance(i, tuple):
            start, stop, step = (("" if v is None else str(v)) for v in i[1:])
            parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        else:
            parts.append(str(i))
    return ", ".join(parts) if parts else "()"


def _subscript(name: str, idx) -> str:
    return f"{name}[{', '.join(idx)}]"


@lowers("sum")
def _sum(ctx, node, a):
    """Loops over the summand in memory order, accumulating into the result (a scalar or array)."""
    axes = node.params[0]
    shape = ctx.graph.shape(node.args[0])
    idx = index_vars(len(shape))
    kept = [v for k, v in enumerate(idx) if k not in axes]
    target = _subscript("{out}", kept) if kept else "{out}"
    lines = [f"{{out}} = np.zeros({node.shape!r}, dtype={ctx.dtype_expr})" if kept else
             f"{{out}} = {ctx.literal(0.0)}"]
    loops, pad = element_loops(shape)
    return lines + loops + [f"{pad}{target} += {_subscript(a[0], idx)}"]


@lowers("reshape")
def _reshape(ctx, node, a):
    src = ctx.graph.shape(node.args[0])
    shape = node.params[0]
    if shape == ():
        return f"{a[0]}.ravel()[0]" if src else a[0]
    if src == ():
        return f"np.full({shape!r}, {a[0]})"
    return f"np.ascontiguousarray({a[0]}).reshape({shape!r})"


@lowers("transpose")
def _transpose(ctx, node, a):
    """Statements: an element loop writing the permuted array (compiles faster than np.transpose)."""
    perm, shape = node.params[0], node.shape
    loops, pad = element_loops(shape)
    src = [""] * len(perm)
    for k, p in enumerate(perm):
        src[p] = f"_i{k}"
    return ([f"{{out}} = np.empty({shape!r}, dtype={ctx.dtype_expr})"] + loops
            + [f"{pad}{_subscript('{out}', index_vars(len(shape)))} = {_subscript(a[0], src)}"])


@lowers("broadcast_to")
def _broadcast(ctx, node, a):
    shape = node.params[0]
    if ctx.graph.shape(node.args[0]) == ():
        return f"np.full({shape!r}, {a[0]})"
    return f"np.broadcast_to({a[0]}, {shape!r})"


@lowers("getitem")
def _getitem(ctx, node, a):
    return f"{a[0]}[{index_to_source(node.params[0])}]"


@lowers("scatter")
def _scatter(ctx, node, a):
    """zeros, then an element loop over the value (Numba compiles slice assignment slowly).

    The printer's sums of scatters (:func:`symgrad.emit.printer.scatter_sums`) reuse these
    lines without the first (the zeros) and with ``+=``.
    """
    index, shape = node.params
    vshape = ctx.graph.shape(node.args[0])
    out_idx, v_idx, loops, d, j = [], [], [], 0, 0
    for item in index:
        if item is None:  # newaxis: a size-1 axis of the value
            v_idx.append("0")
            j += 1
        elif isinstance(item, tuple):
            start, _, step = slice(*item[1:]).indices(shape[d])
            var = f"_i{j}"
            term = var if step == 1 else f"{step} * {var}"
            out_idx.append(term if start == 0 else f"{start} + {term}")
            v_idx.append(var)
            loops.append((var, vshape[j]))
            d += 1
            j += 1
        else:
            out_idx.append(str(item % shape[d]))
            d += 1
    while d < len(shape):
        var = f"_i{j}"
        out_idx.append(var)
        v_idx.append(var)
        loops.append((var, vshape[j]))
        d += 1
        j += 1
    headers, pad = loop_nest(loops)
    value = _subscript(a[0], v_idx) if vshape else a[0]
    return ([f"{{out}} = np.zeros({shape!r}, dtype={ctx.dtype_expr})"] + headers
            + [f"{pad}{_subscript('{out}', out_idx)} = {value}"])


@lowers("contract")
def _contract(ctx, node, names):
    """Loops for a contraction, ordered for memory locality.

    The innermost loop runs over the last (contiguous) axis of the larger operand.  If that
    index is summed, each output element accumulates in a scalar (dot-product form); if it is
    an output index, the output is zeroed and accumulated in place (outer-product form), so
    e.g. ``"nh,ni->hi"`` streams along rows instead of striding down columns.
    """
    a, b, out = parse_spec(node.params[0])
    shape_a, shape_b = ctx.graph.shape(node.args[0]), ctx.graph.shape(node.args[1])
    sizes = dict(zip(a, shape_a))
    sizes.update(zip(b, shape_b))
    summed = [ch for ch in dict.fromkeys(a + b) if ch not in out]
    var = {ch: f"_{ch.lower()}{'b' if ch == BATCH else ''}" for ch in sizes}
    big = b if int(np.prod(shape_b)) >= int(np.prod(shape_a)) and b else a
    inner = big[-1] if big else None

    def ref(name, letters):
        return _subscript(name, [var[ch] for ch in letters]) if letters else name

    def loops(letters, pad=""):
        return loop_nest(((var[ch], sizes[ch]) for ch in letters), pad)

    product = f"{ref(names[0], a)} * {ref(names[1], b)}"
    out_shape = tuple(sizes[ch] for ch in out)
    if out and summed and inner in out:  # outer-product form: accumulate into the output
        headers, pad = loops([ch for ch in summed + list(out) if ch != inner] + [inner])
        return ([f"{{out}} = np.zeros({out_shape!r}, dtype={ctx.dtype_expr})"] + headers
                + [f"{pad}{ref('{out}', out)} += {product}"])
    if inner in summed:  # dot-product form with the contiguous summed index innermost
        summed = [ch for ch in summed if ch != inner] + [inner]
    lines = [f"{{out}} = np.empty({out_shape!r}, dtype={ctx.dtype_expr})"] if out else []
    headers, pad = loops(out)
    lines += headers + [f"{pad}_acc = {ctx.literal(0.0)}"]
    headers, inner_pad = loops(summed, pad)
    lines += headers + [f"{inner_pad}_acc += {product}"]
    lines.append(f"{pad}{ref('{out}', out) if out else '{out}'} = _acc")
    return lines


@lowers("concat")
def _concat(ctx, node, a):
    return f"np.concatenate(({', '.join(a)},), axis={node.params[0]})"


@lowers("eye")
def _eye(ctx, node, a):
    """Statements: a zero matrix with ones on the diagonal (loops compile faster than np.eye)."""
    shape = node.params[0]
    n = shape[0]
    headers, pad = loop_nest([("_i0", n)])
    lines = [f"{{out}} = np.zeros(({n}, {n}), dtype={ctx.dtype_expr})"] + headers
    lines.append(f"{pad}{{out}}[_i0, _i0] = {ctx.literal(1.0)}")
    if shape != (n, n):
        lines.append(f"{{out}} = {{out}}.reshape({shape!r})")
    return lines


@lowers("input")
def _input(ctx, node, args):
    # kernel arguments are printed by name; an input reaching here is not an argument of the kernel
    raise ValueError(f"symgrad internal error: graph input {node.params[0]!r} is not an argument of this kernel")


@lowers("const", "bconst")
def _const(ctx, node, a):
    return ctx.const(node)
