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

==========================================  ==================  ===============================
pattern                                     fused               source
==========================================  ==================  ===============================
``log(ndtr(u))``                            ``log_ndtr(u)``     SciPy ``log_ndtr``
``log(0.5 * (1 + erf(u / np.sqrt(2))))``    ``log_ndtr(u)``     DLMF 7.18.2 with 7.2.1
``log(0.5 * erfc(-u / np.sqrt(2)))``        ``log_ndtr(u)``     DLMF 7.18.2 with 7.2.2
==========================================  ==================  ===============================

The normal CDF written with erf or erfc is recognised on the SymPy form of the small
elementwise region under the log (any arrangement of the halves and the scaling; the float
``1/np.sqrt(2.0)`` read as sqrt(2)/2, :func:`symgrad.stabilize.constants.exact_constants`).  That is
how statistics code writes it, and its second derivative was the stabiliser's hardest search:
NaN at x = -40 with some CPU budgets, 79 ulps with others.  The stabiliser's rule ``ndtr_forms``
(:mod:`symgrad.stabilize.rules_erf`) states the same identity on SymPy regions, for a log of ndtr
that appears only after differentiation or in an expression given to :func:`symgrad.stabilize.stabilize`.
"""
from __future__ import annotations

import sympy as sp

from ..ir.from_sympy import from_sympy
from ..ir.graph import Graph
from .stabilize_pass import _REGION_OPS, _region_expr, rebuild

__all__ = ["FUSED", "fuse_special"]

# (outer op, inner op) -> fused op of the inner op's argument
FUSED = {("log", "ndtr"): "log_ndtr"}
MAX_CDF_NODES = 12  # the region under a log read as a normal CDF: 0.5 * (1 + erf(x / sqrt 2)) has 5 ops


def _small_region_with_erf(g: Graph, root: int) -> bool:
    """The elementwise region at ``root`` has at most MAX_CDF_NODES ops, one of them erf or erfc."""
    stack, seen, erf = [root], set(), False
    while stack:
        nid = stack.pop()
        node = g[nid]
        if nid in seen or node.op not in _REGION_OPS:
            continue
        seen.add(nid)
        if len(seen) > MAX_CDF_NODES:
            return False
        erf = erf or node.op in ("erf", "erfc")
        stack.extend(node.args)
    return erf


def _normal_cdf_argument(expr: sp.Expr):
    """``w`` with ``expr == ndtr(w)`` when ``expr`` is (1 + erf(w/sqrt 2))/2 or erfc(-w/sqrt 2)/2
    up to arrangement, else None.  In erf terms (erfc = 1 - erf; SymPy writes erfc(-z) as
    2 - erfc(z) and erf(-z) as -erf(z), so both signs of the argument are tried)."""
    expr = expr.rewrite(sp.erf)
    fs = expr.atoms(sp.erf)
    if len(fs) != 1:
        return None
    (f,) = fs
    for sign in (1, -1):
        if sp.expand(expr - (1 + sign * f) / 2) == 0:
            return sp.expand(sign * sp.sqrt(2) * f.args[0])
    return None


def _log_normal_cdf(g: Graph, nid: int):
    """The node ``log_ndtr(w)`` when ``nid`` is the log of a normal CDF written with erf or erfc."""
    node = g[nid]
    if node.op != "log" or not _small_region_with_erf(g, node.args[0]):
        return None
    expr, leaves, _ = _region_expr(g, node.args[0])
    w = _normal_cdf_argument(expr)
    return None if w is None else g.apply("log_ndtr", from_sympy(g, w, leaves))


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
        elif (new := _log_normal_cdf(g, nid)) is not None:
            mapping[nid] = new
            notes.append(f"fused_log_ndtr: t{nid} = log(normal CDF written with erf/erfc) -> log_ndtr(.)")
    if not mapping:
        return list(outputs), []
    memo = rebuild(g, list(outputs), mapping)
    return [memo[o] for o in outputs], notes
