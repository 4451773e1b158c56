"""Numba lowering of ``take`` and ``take_add`` (:mod:`symgrad.ir.rules.gather`): one loop nest each.

The index array is a float constant (exact up to 2**24 in float32) read with ``int(...)``.
``take_add`` accumulates over the value's elements in memory order, so repeated indices add
up in the order ``np.add.at`` uses; the interpreter tier (:mod:`symgrad.emit.tape`) follows it.
"""
from __future__ import annotations

from ..loops import element_loops, index_vars
from .base import lowers


def _index_name(lines: list[str], text: str) -> str:
    """The index array's name; a printed expression (a uniform constant) is bound once first."""
    if text.isidentifier():
        return text
    lines.append(f"_idx = {text}")
    return "_idx"


@lowers("take")
def _take(ctx, node, a):
    """``out[i.., k, j..] = x[i.., int(idx[k]), j..]`` as one loop nest."""
    (axis,), shape = node.params, node.shape
    lines = [f"{{out}} = np.empty({shape!r}, dtype={ctx.dtype_expr})"]
    idx = _index_name(lines, a[1])
    loops, pad = element_loops(shape)
    out_i = index_vars(len(shape))
    src_i = list(out_i)
    src_i[axis] = f"int({idx}[_i{axis}])"
    return lines + loops + [f"{pad}{{out}}[{', '.join(out_i)}] = {a[0]}[{', '.join(src_i)}]"]


@lowers("take_add")
def _take_add(ctx, node, a):
    """zeros, then ``out[i.., int(idx[k]), j..] += v[i.., k, j..]`` over the value's elements."""
    (axis, _), vshape = node.params, ctx.graph.shape(node.args[0])
    lines = [f"{{out}} = np.zeros({node.shape!r}, dtype={ctx.dtype_expr})"]
    idx = _index_name(lines, a[1])
    loops, pad = element_loops(vshape)
    v_i = index_vars(len(vshape))
    out_i = list(v_i)
    out_i[axis] = f"int({idx}[_i{axis}])"
    return lines + loops + [f"{pad}{{out}}[{', '.join(out_i)}] += {a[0]}[{', '.join(v_i)}]"]
