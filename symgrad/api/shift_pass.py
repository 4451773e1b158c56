"""Max-shift of log-sum-exp and softmax patterns that cross a reduction (issue 16, point 2).

The per-expression stabiliser (:mod:`symgrad.api.stabilize_pass`) sees elementwise
regions only: in ``np.log(np.sum(np.exp(z)))`` the sum is a leaf, so ``exp(z)``
overflows at logits near 1000 and nothing downstream can repair it.  This pass
rewrites the *primal* graph before differentiation, so values, gradients, Jacobians
and Hessians all come out shifted:

=========================================  ============================================
pattern (``S = sum(exp(u))`` over the core)  rewritten (``m = shift_max(u)``, ``S' = sum(exp(u - m))``)
=========================================  ============================================
``log(S)``                                  ``m + log(S')``
``exp(v) / S``                              ``exp(v - m) / S'``
``log(exp(v) / S)``                         ``(v - m) - log(S')``
=========================================  ============================================

``m`` is a constant shift: every rewritten expression equals the original for any
``m``, so its derivative with respect to ``m`` is zero and ``shift_max`` is
``nondiff`` (JAX's ``logsumexp`` uses ``stop_gradient(max)`` the same way).  After
the shift every exponential is at most 1 and ``S' >= 1``, so nothing overflows, and
``log(S')`` is exact to a few ulps (Blanchard, Higham & Higham 2021, "Accurately
computing the log-sum-exp and softmax functions", IMA J. Numer. Anal. 41(4), sec. 2-3).
Only sums over every axis of their argument (a whole core array) are rewritten.
"""
from __future__ import annotations

from ..ir.graph import Graph
from .stabilize_pass import rebuild

__all__ = ["shift_reductions"]


def _shifted(g: Graph, u: int) -> bool:
    """``u`` is ``v - m`` with ``m`` a ``shift_max`` (possibly reshaped): shifted already, as
    ``scipy.special.softmax`` traces (:mod:`symgrad.trace.scipy_special`)."""
    node = g[u]
    if node.op != "sub":
        return False
    m = g[node.args[1]]
    while m.op in ("reshape", "broadcast_to"):
        m = g[m.args[0]]
    return m.op == "shift_max"


def _lse_sums(g: Graph, live: set):
    """``(sum node, exp argument)`` for every live ``sum(exp(u))`` over all axes of ``u``
    (``u`` not shifted already)."""
    for nid in sorted(live):
        node = g[nid]
        if node.op != "sum":
            continue
        e = g[node.args[0]]
        if e.op == "exp" and e.shape and len(node.params[0]) == len(e.shape) and not _shifted(g, e.args[0]):
            yield nid, e.args[0]


def shift_reductions(g: Graph, outputs: list[int]) -> tuple[list[int], list[str]]:
    """Rewrite the patterns of the module docstring below ``outputs``.

    Args:
      g: the traced graph (it grows; no node is changed in place).
      outputs: output node ids.

    Returns:
      ``(new output ids, one header line per rewritten pattern)``; the outputs are the
      same ids when nothing matched.
    """
    live = set(g.ancestors(outputs))
    users = g.consumers()
    mapping: dict[int, int] = {}
    notes: list[str] = []
    for s, u in _lse_sums(g, live):
        m = g.apply("shift_max", u, params=(tuple(range(len(g.shape(u)))),))
        s2 = g.apply("sum", g.apply("exp", g.apply("sub", u, m)), params=g[s].params)
        for c in sorted(set(users.get(s, ()))):
            node = g[c]
            if c not in live:
                continue
            if node.op == "log":
                mapping[c] = g.apply("add", m, g.apply("log", s2))
                notes.append(f"lse_max_shift: t{c} = log(sum(exp(.))) -> max + log(sum(exp(. - max)))")
            elif node.op == "div" and node.args[1] == s and g[node.args[0]].op == "exp":
                v = g[node.args[0]].args[0]
                shifted = g.apply("sub", v, m)
                mapping[c] = g.apply("div", g.apply("exp", shifted), s2)
                notes.append(f"softmax_max_shift: t{c} = exp(.)/sum(exp(.)) -> exp(. - max)/sum(exp(. - max))")
                for c2 in sorted(set(users.get(c, ()))):
                    if c2 in live and g[c2].op == "log":
                        mapping[c2] = g.apply("sub", shifted, g.apply("log", s2))
                        notes.append(f"log_softmax_max_shift: t{c2} = log(exp(v)/sum(exp(.))) -> "
                                     "(v - max) - log(sum(exp(. - max)))")
    if not mapping:
        return list(outputs), []
    memo = rebuild(g, list(outputs), mapping)
    return [memo[o] for o in outputs], notes
