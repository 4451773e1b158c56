"""Print the body of one kernel: the nodes an output list needs, as Numba code.

Walks nodes in id (topological) order.  A node used once by an elementwise or
indexing consumer is inlined into it, so ``log(1 + exp(x))`` prints as one
line; nodes used more than once become named temporaries (the graph is
already hash-consed, so this *is* common-subexpression elimination).  Inside a
scalar ``where`` the branches are inlined into a conditional expression, so
only the taken branch is evaluated.  Operators get parentheses by precedence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.ops import REGISTRY
from ..ir.rules.elementwise import INFIX
from .names import TempNamer, float_literal

ATOM = 100
_INLINE_MAX_CHARS = 100
_STATEMENT_OPS = {"contract", "scatter"}  # emit several lines; their args must be names


@dataclass
class KernelIO:
    """One argument or output of a kernel: identifier, node id, core shape."""

    name: str
    node: int
    shape: tuple[int, ...]


@dataclass
class PrintContext:
    """What op ``emit`` functions may ask: the graph, the dtype and constants."""

    graph: Graph
    dtype: str
    const_names: dict[int, str] = field(default_factory=dict)

    @property
    def dtype_expr(self) -> str:
        return f"np.{self.dtype}"

    def literal(self, value: float) -> str:
        return float_literal(value, self.dtype)

    def const(self, node: Node) -> str:
        arr = self.graph.consts[node.id]
        if node.op == "bconst":
            return repr(bool(arr.reshape(-1)[0])) if arr.ndim == 0 else self.const_names[node.id]
        if arr.ndim == 0:
            return self.literal(float(arr))
        if node.id not in self.const_names:  # uniform array: no data to store
            return f"np.full({arr.shape!r}, {self.literal(float(arr.reshape(-1)[0]))})"
        return self.const_names[node.id]


def array_constants(g: Graph, outputs: list[int]) -> list[int]:
    """Ids of the non-scalar constants the outputs need (passed as hidden arguments)."""
    out = []
    for n in g.ancestors(outputs):
        if g[n].op == "bconst" and g[n].shape != ():
            out.append(n)
        elif g[n].op == "const" and g[n].shape != () and g.scalar_value(n) is None:
            out.append(n)
    return out


def print_body(g: Graph, args: list[KernelIO], outputs: list[KernelIO], dtype: str,
               const_names: dict[int, str], comments: dict[int, str] | None = None) -> list[str]:
    """Source lines (unindented) computing ``outputs`` from ``args``.

    Scalar outputs are assigned to their names; array outputs are written into
    the output arrays of the same name (``x_bar[:] = ...``).
    """
    ctx = PrintContext(g, dtype, const_names)
    comments = {**{n: t for n, t in g.notes.items()}, **(comments or {})}
    order = g.ancestors([o.node for o in outputs])
    arg_names = {a.node: a.name for a in args}
    uses: dict[int, int] = {}
    for nid in order:
        for a in g[nid].args:
            uses[a] = uses.get(a, 0) + 1
    for o in outputs:
        uses[o.node] = uses.get(o.node, 0) + 2  # outputs are always materialised
    text: dict[int, tuple[str, int]] = {}
    for nid, name in arg_names.items():
        text[nid] = (name, ATOM)
    lines: list[str] = []
    new_temp = TempNamer()
    scalar_out: dict[int, str] = {}
    for o in outputs:
        if o.shape == () and o.node not in arg_names:
            scalar_out.setdefault(o.node, o.name)
    assigned: set[int] = set()
    consumers_need_name = set()
    for nid in order:
        if g[nid].op in _STATEMENT_OPS:
            consumers_need_name.update(g[nid].args)
    for nid in order:
        node = g[nid]
        if nid in text:
            continue
        if node.op in ("const", "bconst"):
            s = ctx.const(node)
            text[nid] = (s, 25 if s.startswith("-") else ATOM)
            continue
        expr, prec = _node_expr(ctx, node, text)
        if isinstance(expr, list):  # multi-line statement op
            name = new_temp()
            lines += _comment_lines(comments, nid)
            lines.extend(line.replace("{out}", name) for line in expr)
            text[nid] = (name, ATOM)
            continue
        direct = scalar_out.get(nid)
        if direct is not None and uses.get(nid, 0) == 2:  # used only as this output
            lines += _comment_lines(comments, nid)
            lines.append(f"{direct} = {expr}")
            text[nid] = (direct, ATOM)
            assigned.add(nid)
            continue
        inline = (uses.get(nid, 0) == 1 and nid not in consumers_need_name
                  and len(expr) <= _INLINE_MAX_CHARS and not (comments and nid in comments))
        if inline:
            text[nid] = (expr, prec)
        else:
            name = new_temp()
            lines += _comment_lines(comments, nid)
            lines.append(f"{name} = {expr}")
            text[nid] = (name, ATOM)
    for o in outputs:
        value = text[o.node][0]
        if o.node in assigned and value == o.name:
            continue
        if o.shape == ():
            lines.append(f"{o.name} = {value}")
        else:
            lines.append(f"{o.name}[...] = {value}" if len(o.shape) > 1 else f"{o.name}[:] = {value}")
    return lines


def _comment_lines(comments, nid) -> list[str]:
    if not comments or nid not in comments:
        return []
    return [f"# {line}" for line in comments[nid].split("\n")]


def _wrap(item: tuple[str, int], need: int) -> str:
    s, prec = item
    return s if prec >= need else f"({s})"


def _node_expr(ctx: PrintContext, node: Node, text) -> tuple:
    op = REGISTRY[node.op]
    items = [text[a] for a in node.args]
    if node.op in INFIX:
        symbol, prec = INFIX[node.op]
        if len(items) == 1:
            return f"-{_wrap(items[0], prec)}", prec
        left_need = prec + 1 if node.op == "pow" else prec
        right_need = prec if node.op == "pow" else prec + 1  # never re-associate floats
        return f"{_wrap(items[0], left_need)} {symbol} {_wrap(items[1], right_need)}", prec
    if node.op == "getitem":
        return op.emit(ctx, node, [_wrap(items[0], ATOM)]), ATOM
    out = op.emit(ctx, node, [s for s, _ in items])
    return out, ATOM
