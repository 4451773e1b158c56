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


def _loop(ctx, node, a, alloc: str, loop_shape: tuple, gather: bool) -> list[str]:
    """``alloc`` the output, then one loop nest over ``loop_shape`` in which the ``axis``
    subscript of the gathered-from (``gather``: the source ``a[0]``; else the output) is
    ``int(idx[_i<axis>])``."""
    axis = node.params[0]
    lines = [f"{{out}} = {alloc}({node.shape!r}, dtype={ctx.dtype_expr})"]
    idx = _index_name(lines, a[1])
    loops, pad = element_loops(loop_shape)
    plain = index_vars(len(loop_shape))
    picked = list(plain)
    picked[axis] = f"int({idx}[_i{axis}])"
    out_i, src_i = (plain, picked) if gather else (picked, plain)
    assign = "=" if gather else "+="
    return lines + loops + [f"{pad}{{out}}[{', '.join(out_i)}] {assign} {a[0]}[{', '.join(src_i)}]"]


@lowers("take")
def _take(ctx, node, a):
    """``out[i.., k, j..] = x[i.., int(idx[k]), j..]`` as one loop nest over the output."""
    return _loop(ctx, node, a, "np.empty", node.shape, gather=True)


@lowers("take_add")
def _take_add(ctx, node, a):
    """zeros, then ``out[i.., int(idx[k]), j..] += v[i.., k, j..]`` over the value's elements."""
    return _loop(ctx, node, a, "np.zeros", ctx.graph.shape(node.args[0]), gather=False)
