"""Reverse mode: accumulate adjoints over the graph in reverse topological order.

An elementwise node sends ``out_bar * partial_i`` to argument ``i``, summed
over the axes along which the argument was broadcast; structural ops use their
own ``vjp``.  Only nodes that depend on the requested inputs *and* feed the
outputs are visited (activity analysis), each once, so building a gradient
costs time linear in the size of the function (Griewank & Walther 2008, ch. 3;
the seed article on backprop for a small graph engine shows the same loop).
"""
from __future__ import annotations

from ..ir.graph import Graph
from ..ir.ops import REGISTRY, E, refuse_constant_args
from ..ir.rules.structural import unbroadcast


def active_nodes(g: Graph, wrt: list[int], needed: list[int]) -> set[int]:
    """Nodes in ``needed`` (sorted ids) that depend on some node in ``wrt``."""
    active = set(wrt)
    for nid in needed:
        if nid not in active and any(a in active for a in g[nid].args):
            active.add(nid)
    return active


def vjp_nodes(g: Graph, outputs: list[int], cotangents: list[int | None], wrt: list[int],
              nb: int = 0, on_step=None) -> list[int | None]:
    """Cotangent node of each ``wrt`` node given cotangents of ``outputs``.

    Args:
      g: the graph; new nodes are appended to it.
      outputs: node ids of the function's outputs.
      cotangents: one node id per output (``nb`` batch axes + output shape) or None.
      wrt: node ids (usually inputs) whose cotangents are wanted.
      nb: number of leading batch axes on every cotangent (0 or 1).
      on_step: called as ``on_step(nid, ct, sent)`` after node ``nid`` (cotangent ``ct``, final
        since nodes are visited in reverse order) sent ``sent``, a list of
        ``(k, arg, contribution, partial)`` for each argument ``k`` it sent a cotangent to
        (``partial``: the local partial's node for elementwise ops, else None).
        :func:`symgrad.explain` narrates the pass with it.
    Returns:
      One cotangent id per ``wrt`` node, or None where it is identically zero.
    """
    with g.derivative_mode():
        return _vjp_nodes(g, outputs, cotangents, wrt, nb, on_step)


def _vjp_nodes(g: Graph, outputs: list[int], cotangents: list[int | None], wrt: list[int],
              nb: int = 0, on_step=None) -> list[int | None]:
    needed = g.ancestors(outputs)
    active = active_nodes(g, wrt, needed)
    adj: dict[int, int] = {}

    def accumulate(nid: int, contrib: int) -> None:
        adj[nid] = contrib if nid not in adj else g.apply("add", adj[nid], contrib)

    for o, c in zip(outputs, cotangents):
        if c is not None and o in active:
            accumulate(o, c)
    one = g.const(1.0)  # a partial equal to 1 (add, sub) passes the cotangent on as it is
    nodes = g.nodes
    for nid in reversed(needed):
        ct = adj.get(nid)
        node = nodes[nid]
        if ct is None or node.op == "input":
            continue
        op = REGISTRY[node.op]
        if op.nondiff:
            continue
        sent = []
        if op.elementwise:
            if op.constant_args:
                refuse_constant_args(g, nid, [a in active for a in node.args])
            partials = op.partials(E(g, nid), *[E(g, a) for a in node.args])
            for k, (a, p) in enumerate(zip(node.args, partials)):
                if p is not None and a in active:
                    pid = p.id
                    c = ct if pid == one and not nb else g.apply("mul", ct, pid)
                    sent.append((k, a, unbroadcast(g, c, nodes[a].shape, nb), pid))
        else:
            for k, (a, c) in enumerate(zip(node.args, op.vjp(g, node, ct, nb))):
                if c is not None and a in active:
                    sent.append((k, a, c, None))
        for _, a, c, _ in sent:
            accumulate(a, c)
        if on_step is not None:
            on_step(nid, ct, sent)
    return [adj.get(w) for w in wrt]
