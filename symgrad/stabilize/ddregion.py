"""Double-double regions: the float64 candidate of last resort (issue 16, point 4).

When the best float64 form still loses more than 2 ulps at some point (of the search sample
or of the float64 :func:`~.widen.stress_sample`: the grid of moderate magnitudes and the
floats next to the roots), no rewrite in working precision reached the target: typically a
function near its root, whose terms cancel whatever their form.  The derivative of
``x * sigmoid(x)`` at x = -1.2785 is ``(x + exp(x) + 1) exp(x) / (exp(x) + 1)^2``, and
``x + exp(x) + 1`` cancels to 5e-8 there: the 0.5-ulp rounding of ``exp(x)`` alone becomes
2^17 ulps of the sum.  The input itself is exact, so computing the cancelling region with
about 106 bits (double-double: Dekker 1971; Ogita, Rump & Oishi 2005, "Accurate sum and dot
product") and rounding once restores full float64 accuracy.

A region is also tried where the float64 form loses fewer bits but is worse than the formula as
written point by point (beyond 2 ulps and the conditioning where that formula is within 1 ulp,
:func:`_worse_than_written`): the never-worse target of issue 16, point 1, which no float64 form
the search found reaches there (the derivative of ``log(1 - x)/log(1 + x)`` for |x| > 0.3).

The candidates are the form with one subexpression ``N`` marked ``dd(N)``, for every ``N`` of
the form that has a double-double routine (:func:`symgrad.ir.ddprogram.from_sympy_region`),
cheapest first (fewest dd operations).  Each is scored with exactly the kernel's arithmetic
(:func:`symgrad.ir.ddprogram.run`), first at the failing points, then at all of them; the first
within 1 ulp everywhere and not worse on average is taken (else the first within 2 ulps), and
its cost is recorded.  The 1-ulp margin is there because the roundings left outside the region
are only sampled: ``dd(x sigmoid(-x) + 1) * sigmoid(x)`` is within 2 ulps on the search's points
and 3 ulps at some of 2000 points next to the root.  float32
is not affected: its kernels compute the plain formula (in float64 when widened).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import sympy as sp

from symgrad.ir.ddprogram import UNARY, from_sympy_region, operation_count
from symgrad.ir.sympy_funcs import dd

from .accuracy import Sample, point_bits
from .budget import cpu_clock
from .reference import compile_mpmath
from .result import RewriteRecord
from .search import _cond_bits, positions, replace_at
from .widen import TWO_ULPS, stress_sample

__all__ = ["NAME", "dd_region", "cost_note"]

NAME = "double_double"
MAX_CANDIDATES = 24  # regions scored at most (cheapest first)
# A region costs 10-100x the float64 formula per element (benchmarks/results/dd_regions.md): it is
# tried only when float64 loses at least this many bits somewhere (2^6 = 64 ulps: cancellation
# no rewrite can repair, as next to a root), not for the few ulps a libm rounding costs.
MIN_LOSS_BITS = 6.0
ELEMENTARY = frozenset(UNARY) - {"neg"}
ONE_ULP = 1.0  # bits (log2(1 + 1))
MAX_COND_POINTS = 32  # points whose condition number is computed to see whether a smaller loss calls for a region


def _candidates(expr: sp.Expr):
    """``(dd operations, path, node, program)`` of every subexpression with a dd routine, cheapest first."""
    out, seen = [], set()
    for k, (path, node) in enumerate(positions(expr)):
        if node.is_Atom or not node.free_symbols or isinstance(node, sp.Piecewise) or node in seen \
                or isinstance(node, dd) or node.is_Relational or node.is_Boolean:
            continue
        seen.add(node)
        try:
            program = from_sympy_region(node, sorted(node.free_symbols, key=lambda s: s.name))
        except NotImplementedError:
            continue
        out.append((operation_count(program), k, path, node))
    out.sort(key=lambda c: (c[0], c[1]))
    return [(n_ops, path, node) for n_ops, _, path, node in out]


def cost_note(region: sp.Expr) -> str:
    """``double-double region: N dd operations (k elementary functions)`` for the record and the CLI:
    an elementary function (exp, log ...) costs some 30-45 dd additions and multiplications."""
    program = from_sympy_region(region, sorted(region.free_symbols, key=lambda s: s.name))
    n_fun = sum(1 for ins in program if ins[0] in ELEMENTARY)
    funs = f"{n_fun} elementary function{'s' if n_fun != 1 else ''}"
    return f"double-double region: {operation_count(program)} dd operations ({funs})"


def _merge(a: Sample, b: Sample | None) -> Sample:
    if b is None or not len(b.X):
        return a
    return Sample(a.dtype, np.concatenate([a.X, b.X.astype(a.X.dtype)]), np.concatenate([a.ref, b.ref]))


def dd_region(expr: sp.Expr, variables: Sequence[sp.Symbol], sample: Sample, original: sp.Expr,
              domain=None, deadline: float | None = None) -> tuple[sp.Expr, RewriteRecord] | None:
    """``(form with one dd region, its record)`` when float64 needs one to reach 2 ulps, else None.

    Args:
      expr: the chosen float64 form.
      variables: its input symbols.
      sample: the search's float64 sample (correctly rounded references).
      original: the exact function (the formula as written), for the stress sample's roots.
      domain: the stabiliser's domain.
      deadline: ``budget.cpu_clock`` time after which no further candidate is scored.
    """
    full = _merge(sample, stress_sample(original, variables, domain, np.float64))
    before = point_bits(expr, variables, full)
    if not len(before) or not (before.max() >= MIN_LOSS_BITS or _worse_than_written(expr, original, variables,
                                                                                   full, before)):
        return None
    bad = np.flatnonzero(before > TWO_ULPS + 1e-9)
    at_bad = Sample(full.dtype, full.X[bad], full.ref[bad])
    cands = _candidates(expr)[:MAX_CANDIDATES]
    for target in (ONE_ULP, TWO_ULPS):  # a margin first: the sample shows the float64 rest's worst case
        for n_ops, path, node in cands:  # only roughly (3 ulps off the sample for dd(...) * sigmoid(x))
            if deadline is not None and cpu_clock() > deadline:
                return None
            cand = _marked(expr, path, node)
            if point_bits(cand, variables, at_bad).max() > target + 1e-9:
                continue
            after = point_bits(cand, variables, full)
            if after.max() > target + 1e-9 or after.mean() > before.mean() + 1e-9:
                continue
            bits = {"float64": (float(before.mean()), float(before.max()), float(after.mean()), float(after.max()))}
            return cand, RewriteRecord(NAME, node, dd(node), bits, None, expr, cand, cost_note(node))
    return None


def _worse_than_written(expr, original, variables, full: Sample, before: np.ndarray) -> bool:
    """Does ``expr`` lose, at a point where the formula as written is within 1 ulp, more than
    2 ulps and more than the conditioning there allows (``log2(3) + log2(1 + kappa)`` bits)?

    Issue 16's never-worse target, point by point: no float64 form reached it (the search keeps
    the best it found), so the region is the only way left, however few bits are at stake.
    ``(x - 1) log1p(-x) - (x + 1) log1p(x)`` over ``(1 - x)(1 + x) log1p(x)^2``, the derivative
    of ``log(1 - x)/log(1 + x)``, is 3 ulps off at x = -0.69, where the formula as written
    rounds to 1 ulp and kappa is 0.4: every float64 form found loses 2-3 bits somewhere there.
    """
    naive = point_bits(original, variables, full)
    idx = np.flatnonzero((naive <= ONE_ULP + 1e-9) & (before > TWO_ULPS + 1e-9))
    if not len(idx):
        return False
    idx = idx[np.argsort(-before[idx], kind="stable")][:MAX_COND_POINTS]  # the largest losses first
    fn = compile_mpmath(original, variables)
    return any(before[i] > TWO_ULPS + 1e-9 + _cond_bits(fn, full.X[i]) for i in idx)


def _marked(expr: sp.Expr, path: tuple, node: sp.Expr) -> sp.Expr:
    """``expr`` with ``node`` as a double-double region at ``path`` -- at every occurrence when it
    occurs more than once (the outer pieces of a regime split are often the same form)."""
    if sum(1 for _, n in positions(expr) if n == node) > 1:
        return expr.xreplace({node: dd(node)})
    return replace_at(expr, path, dd(node))
