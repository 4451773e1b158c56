"""Numba lowering of the order-dependent reductions: ``amax``/``amin``, ``norm_inf``, ``cumsum``
(:mod:`symgrad.ir.rules.reductions`, :mod:`symgrad.ir.rules.norms`) and ``shift_max``
(:mod:`symgrad.ir.rules.shift`).

Each is one pass over its argument in memory order (:func:`symgrad.emit.loops.element_loops`);
the interpreter tier (:mod:`symgrad.emit.tape`) follows the same order.  A running maximum or
minimum is replaced unless the new value keeps it, and a NaN, once stored, stays (it compares
unequal to itself), which is NumPy's NaN propagation.
"""
from __future__ import annotations

import numpy as np

from ..loops import element_loops, index_vars
from .base import lowers


def _running(target: str, value: str, keeps: str, pad: str) -> list[str]:
    """Replace the running value ``target`` by ``_v = value`` unless ``_v <keeps> target``,
    and never once it is NaN."""
    return [f"{pad}_v = {value}",
            f"{pad}if {target} == {target} and not (_v {keeps} {target}):",
            f"{pad}    {target} = _v"]


def _reduce(keeps: str):
    """Loop emitter: the running value is replaced unless ``v <keeps> acc``; a NaN, once seen, stays."""
    def emit(ctx, node, a):
        (axes,) = node.params
        shape = ctx.graph.shape(node.args[0])
        start = "-np.inf" if keeps == "<=" else "np.inf"
        idx = index_vars(len(shape))
        kept = [v for k, v in enumerate(idx) if k not in axes]
        acc = f"{{out}}[{', '.join(kept)}]" if kept else "{out}"
        lines = [f"{{out}} = np.full({node.shape!r}, {start}, dtype={ctx.dtype_expr})" if kept else
                 f"{{out}} = {ctx.dtype_expr}({start})"]
        loops, pad = element_loops(shape)
        return lines + loops + _running(acc, f"{a[0]}[{', '.join(idx)}]", keeps, pad)
    return emit


lowers("amax")(_reduce("<="))
lowers("amin")(_reduce(">="))


@lowers("norm_inf")
def _norm_inf(ctx, node, a):
    """Statements: one pass over x in memory order; a NaN, once stored, stays (NumPy's max/min)."""
    axis, kind = node.params
    shape = ctx.graph.shape(node.args[0])
    idx = index_vars(len(shape))
    kept = [v for k, v in enumerate(idx) if k != axis]
    target = f"{{out}}[{', '.join(kept)}]" if kept else "{out}"
    start = ctx.literal(-1.0 if kind == "max" else float("inf"))  # |x| >= 0 beats -1; anything beats inf
    lines = [f"{{out}} = np.full({node.shape!r}, {start})" if kept else f"{{out}} = {start}"]
    loops, pad = element_loops(shape)
    better = "<=" if kind == "max" else ">="
    return lines + loops + _running(target, f"abs({a[0]}[{', '.join(idx)}])", better, pad)


@lowers("cumsum")
def _cumsum(ctx, node, a):
    """One loop nest; along ``axis`` each element adds its predecessor (NumPy's sequential order)."""
    axis, reverse = node.params
    shape = node.shape
    loops, pad = element_loops(shape)
    n = shape[axis]
    pos = f"{n - 1} - _i{axis}" if reverse else f"_i{axis}"
    prev = "_p + 1" if reverse else "_p - 1"
    here = [f"_i{k}" if k != axis else "_p" for k in range(len(shape))]
    before = [f"_i{k}" if k != axis else prev for k in range(len(shape))]
    h, b = ", ".join(here), ", ".join(before)
    return [f"{{out}} = np.empty({shape!r}, dtype={ctx.dtype_expr})"] + loops + [
        f"{pad}_p = {pos}",
        f"{pad}if _i{axis} == 0:",
        f"{pad}    {{out}}[{h}] = {a[0]}[{h}]",
        f"{pad}else:",
        f"{pad}    {{out}}[{h}] = {{out}}[{b}] + {a[0]}[{h}]"]


@lowers("shift_max")
def _shift_max(ctx, node, a):
    """The max over the op's axes clamped to the finite range: an all ``-inf`` (or some ``+inf``)
    input must not make ``u - m`` NaN; with the clamp ``log(sum(exp(u)))`` stays ``-inf``
    (``+inf``) as written.  NaN propagates (Python's ``max``/``min`` keep a NaN first argument;
    the loop keeps a NaN)."""
    (axes,) = node.params
    big = ctx.literal(float(np.finfo(ctx.dtype).max))
    shape = ctx.graph.shape(node.args[0])
    if len(axes) == len(shape):  # the whole core: one expression
        inner = f"np.max({a[0]})" if shape else a[0]
        return [f"{{out}} = min(max({inner}, -{big}), {big})"]
    return _reduce("<=")(ctx, node, a) + [f"{{out}} = np.minimum(np.maximum({{out}}, -{big}), {big})"]
