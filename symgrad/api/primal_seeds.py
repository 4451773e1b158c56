"""The derivative of the primal's stable form, offered to the search of a derivative's region.

The program pass (:func:`.stabilize_pass.stabilize_kernel`) searches each region of a derivative
kernel on its own, starting from the derivative as the graph derives it.  Some stable derivatives
are far from that start and near the primal's stable form: the quadratic root
``(-b + sqrt(b^2 - 4ac))/(2a)`` becomes ``-2c/(b + sqrt(b^2 - 4ac))`` for b > 0 (a rewrite of the
primal the search finds in one step), and its derivative with respect to a or b, differentiated
symbolically, cancels nowhere; the derivative as derived, ``(b/sqrt(b^2 - 4ac) - 1)/(2a)``, cancels
for every b > 0 (21.6 bits of mean error through ``sg.grad``, without a domain, on
``bench_stability_api``'s points; seeded, 0.68).  A seed is one more candidate: scored, ranked,
expanded and verified like any other (:func:`symgrad.stabilize.stabilize`, ``seeds=``), so it is
taken only where it is better; the pass asks for seeds only where the region's own search left it
inaccurate, and keeps the seeded result only where it is better on that search's points
(:func:`.stabilize_pass._seeded`).  d/da is not reached that way within the program's budget: the
short seeded search ranks the conjugate's derivative below the double-double form the first search
found, on points of every magnitude (11.5 bits on the benchmark's).

A region gets the seeds of a primal region whose inputs are all among its own and whose
derivative (first order, and second for Hessians) it equals numerically at a few points; the
primal region is searched once per kernel (float64 only, :func:`symgrad.stabilize.searched_form`),
in the budget of the first region that asks.
"""
from __future__ import annotations

from typing import Sequence

import mpmath
import numpy as np
import sympy as sp

from ..ir.graph import Graph
from ..stabilize.budget import StabilizeBudgetExceeded, deadline_passed
from ..stabilize.reference import compile_mpmath
from .stabilize_pass import MAX_REGION_NODES, _region_expr, region_roots, region_sizes

__all__ = ["PrimalSeeds", "SECOND_ORDER_KINDS"]

SECOND_ORDER_KINDS = frozenset({"hessian", "d2"})  # kernels whose regions are second derivatives
# A region and a derivative of the primal are compared at up to PROBE_POINTS fixed points (seed
# PROBE_SEED): equal to PROBE_RTOL relative at the first PROBE_AGREE where both are finite and real.
PROBE_POINTS, PROBE_SEED, PROBE_AGREE = 16, 20261129, 3
PROBE_RTOL = 1e-20
PRIMAL_WORK = 300  # the primal's search: half the default work, no series (it is a starting point)
MAX_PRIMAL_INPUTS = 4  # primal regions of more inputs are not seeded (their second derivatives multiply)


class PrimalSeeds:
    """Seeds for the regions of one derivative kernel (callable: ``seeds(expr, budget_s)``).

    Args:
      g: the program's graph (primal and derivative nodes).
      primal: node ids of the primal's outputs.
      kind: the kernel's kind (``"grad"``, ``"hessian"``, ``"d2"`` ...): second derivatives are
        offered for :data:`SECOND_ORDER_KINDS`.
    """

    def __init__(self, g: Graph, primal: Sequence[int], kind: str):
        self.g, self.primal, self.order = g, list(primal), 2 if kind in SECOND_ORDER_KINDS else 1
        self._regions: list | None = None
        self._stable: dict = {}  # primal region -> its stable form (None: the search kept it)

    def regions(self) -> list:
        """``(expression, inputs)`` of the primal's searchable elementwise regions (computed once)."""
        if self._regions is None:
            roots = region_roots(self.g, self.primal)
            sizes = region_sizes(self.g, roots, MAX_REGION_NODES)
            self._regions = []
            for root in roots:
                if sizes[root] > MAX_REGION_NODES:
                    continue
                expr, _, size = _region_expr(self.g, root)
                inputs = sorted(expr.free_symbols, key=lambda s: s.name)
                if size and 0 < len(inputs) <= MAX_PRIMAL_INPUTS:
                    self._regions.append((expr, inputs))
        return self._regions

    def __call__(self, expr: sp.Expr, budget_s: float) -> list:
        """Derivatives of the primal's stable forms equal to ``expr``, the region of a derivative
        (empty if none is, or if the primal keeps its form).  Stabilising a primal region spends at
        most ``budget_s`` CPU seconds, once per kernel.

        Raises:
          StabilizeBudgetExceeded: only when the program's own deadline passed.
        """
        out = []
        for primal, inputs in self.regions():
            if primal == expr or not set(inputs) <= expr.free_symbols:
                continue
            orders = [(v,) for v in inputs]
            if self.order == 2:
                orders = [(v, w) for i, v in enumerate(inputs) for w in inputs[i:]]
            try:
                matching = [wrt for wrt in orders if _same_values(expr, sp.diff(primal, *wrt), inputs)]
            except StabilizeBudgetExceeded:
                raise
            except Exception:  # noqa: BLE001 - an op mpmath cannot evaluate here: no seeds, the region's result stands
                continue
            if not matching:
                continue
            stable = self._stable_form(primal, inputs, budget_s)
            if stable is None:
                continue
            for wrt in matching:
                seed = sp.diff(stable, *wrt)
                if not seed.has(sp.Derivative, sp.Subs):
                    out.append(seed)
        return out

    def _stable_form(self, primal: sp.Expr, inputs: list, budget_s: float):
        if primal not in self._stable:
            from ..stabilize import searched_form

            try:
                form = searched_form(primal, inputs, budget_s=budget_s, work=PRIMAL_WORK)
            except StabilizeBudgetExceeded:
                if deadline_passed():
                    raise
                form = primal
            except NotImplementedError:  # an op the sampler cannot evaluate: no seeds from this region
                form = primal
            self._stable[primal] = None if form == primal else form
        return self._stable[primal]


def _same_values(a: sp.Expr, b: sp.Expr, inputs: list) -> bool:
    """Are ``a`` and ``b`` equal (to ``PROBE_RTOL``) at the probe points where both are finite real
    numbers, with at least ``PROBE_AGREE`` such points?  (``b``'s symbols are among ``inputs``; a
    symbol of ``a`` outside them, a cotangent or tangent, makes them differ.)  The probe points are
    fixed: ``PROBE_POINTS`` rows drawn uniformly of magnitude 0.1 to 10 and either sign, so
    that some lie inside a domain such as ``b^2 >= 4ac``.  Not :func:`symgrad.stabilize.verify.equivalent`:
    that check samples every float and raises the precision until each value is proven, thousands of
    bits at tiny inputs of a cancelling derivative, and holds vacuously where no point is real; this
    one only picks which seeds to offer, at 40 digits (the search verifies the one it takes)."""
    variables = sorted(a.free_symbols | set(inputs), key=lambda s: s.name)
    fa, fb = compile_mpmath(a, variables), compile_mpmath(b, variables)
    rng = np.random.default_rng(PROBE_SEED)
    shape = (PROBE_POINTS, len(variables))
    rows = rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-1, 1, shape)
    seen = 0
    with mpmath.workdps(40):
        for row in rows:
            va, vb = fa([mpmath.mpf(float(x)) for x in row]), fb([mpmath.mpf(float(x)) for x in row])
            if not all(isinstance(v, mpmath.mpf) and mpmath.isfinite(v) for v in (va, vb)):
                continue
            if abs(va - vb) > PROBE_RTOL * max(abs(va), abs(vb), mpmath.mpf(10) ** -30):
                return False
            seen += 1
            if seen >= PROBE_AGREE:
                return True
    return False
