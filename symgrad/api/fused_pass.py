"""Fused special functions in the primal graph, before differentiation (issue 16, points 1 and 5).

``np.log(scipy.special.ndtr(x))`` is -inf for x < -38.5 (ndtr underflows; the truth at -40 is
-804.6) and its derivative ``phi/Phi`` is 0/0 there.  The stabiliser's rule ``ndtr_forms``
repairs the value and the first derivative region by region, but the second derivative as traced,
``(-x phi Phi - phi**2)/Phi**2``, needs a chain of rewrites (ndtr -> erfc -> erfcx -> erfcx_prime)
that the search completes within its budget in some processes only.  Rewriting the composition
into the fused op *before* differentiation gives every derivative from the fused op's own rules
(``log_ndtr``: phi/Phi in two clamped branches, 1 ulp for f'' at x = -40), as the max-shift of
:mod:`.shift_pass` does for log-sum-exp.  The pairs are equal as functions, so values change only
by rounding; the pass runs only when the stabiliser is on (``stabilize=False`` computes the
formula as written).

========================  ======================  =====================================
pattern                   fused                   source
========================  ======================  =====================================
``log(ndtr(u))``          ``log_ndtr(u)``         SciPy ``log_ndtr``; DLMF 7.2.3, 7.12.1
========================  ======================  =====================================
"""
from __future__ import annotations

from ..ir.graph import Graph
from .stabilize_pass import rebuild

__all__ = ["FUSED", "fuse_special"]

# (outer op, inner op) -> fused op of the inner op's argument
FUSED = {("log", "ndtr"): "log_ndtr"}


def fuse_special(g: Graph, outputs: list[int]) -> tuple[list[int], list[str]]:
    """Rewrite the compositions of :data:`FUSED` below ``outputs``.

    Args:
      g: the traced graph (it grows; no node is changed in place).
      outputs: output node ids.

    Returns:
      ``(new output ids, one header line per rewritten node)``; the same ids when nothing matched.
    """
    mapping: dict[int, int] = {}
    notes: list[str] = []
    for nid in sorted(g.ancestors(outputs)):
        node = g[nid]
        if len(node.args) != 1:
            continue
        inner = g[node.args[0]]
        fused = FUSED.get((node.op, inner.op))
        if fused is not None and len(inner.args) == 1:
            mapping[nid] = g.apply(fused, inner.args[0])
            notes.append(f"fused_{fused}: t{nid} = {node.op}({inner.op}(.)) -> {fused}(.)")
    if not mapping:
        return list(outputs), []
    memo = rebuild(g, list(outputs), mapping)
    return [memo[o] for o in outputs], notes
