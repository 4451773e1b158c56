"""Forward mode: push tangents through the graph in topological order.

For an elementwise node ``out = f(a_1, ..., a_k)`` the tangent is
``out_dot = sum_i partial_i * a_i_dot`` with the partials of the op's
:class:`~symgrad.ir.ops.OpDef`; structural ops use their own linear ``jvp``.
Each node is visited once, so the cost is linear in the size of the program
(Griewank & Walther, *Evaluating Derivatives*, 2nd ed., 2008, ch. 3).
"""
from __future__ import annotations

from ..ir.graph import Graph
from ..ir.ops import REGISTRY, E, refuse_constant_args
from ..ir.rules.structural import expand_batched


def jvp_nodes(g: Graph, inputs: list[int], tangents: list[int | None], outputs: list[int],
              nb: int = 0, on_step=None) -> list[int | None]:
    """Tangent node of each output given tangent nodes of ``inputs``.

    Args:
      g: the graph; new nodes are appended to it.
      inputs: node ids carrying a tangent.
      tangents: one node id per input (shape: ``nb`` batch axes + input shape), or None for zero.
      outputs: node ids whose tangents are wanted.
      nb: number of leading batch axes on every tangent (0 or 1).
      on_step: called as ``on_step(nid, tangent, terms)`` for each node given a tangent;
        ``terms`` lists ``(k, arg, partial)`` for the elementwise partials used (empty for array
        primitives, whose tangent is their own linear ``jvp``).  :func:`symgrad.explain` uses it.
    Returns:
      One tangent id per output, or None where the tangent is identically zero.
    """
    with g.derivative_mode():
        return _jvp_nodes(g, inputs, tangents, outputs, nb, on_step)


def _jvp_nodes(g: Graph, inputs: list[int], tangents: list[int | None], outputs: list[int],
              nb: int = 0, on_step=None) -> list[int | None]:
    tan: dict[int, int] = {i: t for i, t in zip(inputs, tangents) if t is not None}
    if not tan:
        return [None] * len(outputs)
    first = min(tan)
    batch = g.shape(next(iter(tan.values())))[:nb]
    for nid in g.ancestors(outputs):
        if nid < first or nid in tan:
            continue
        node = g[nid]
        arg_t = [tan.get(a) for a in node.args]
        if all(t is None for t in arg_t):
            continue
        op = REGISTRY[node.op]
        if op.nondiff:
            continue
        terms = []
        if op.elementwise:
            if op.constant_args:
                refuse_constant_args(g, nid, [t is not None for t in arg_t])
            partials = op.partials(E(g, nid), *[E(g, a) for a in node.args])
            out = None
            for k, (a, p, t) in enumerate(zip(node.args, partials, arg_t)):
                if p is None or t is None:
                    continue
                terms.append((k, a, p.id))
                term = g.apply("mul", p.id, expand_batched(g, t, nb, len(node.shape)))
                out = term if out is None else g.apply("add", out, term)
            if out is not None and g.shape(out) != batch + node.shape:
                out = g.apply("broadcast_to", out, params=(batch + node.shape,))
        else:
            out = op.jvp(g, node, arg_t, nb)
        if out is not None:
            tan[nid] = out
            if on_step is not None:
                on_step(nid, out, terms)
    return [tan.get(o) for o in outputs]
