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

Last, a cheap region (arithmetic, square roots, hypot, functions with first-order tails) is
tried where the float64 form is worse than the formula as written by fewer bits than the
conditioning excuses (the same 2-3 ulps,
from several roundings on a rounded ``hypot(x, y)`` in ``-(y/h)/h/h``, or on Heron's products):
such points are rare, so they are looked for on a larger sample (1024 points, references in dd),
and the candidates then include every piece of a regime split that repairs one (the losses often
fall in two pieces) and the formula as written, whole.  A region that repairs some of the
failing points and is no worse anywhere is taken when none repairs them all.

Both triggers also look at 512 points drawn uniformly in the box of ordinary values
(:func:`.sampling.ordinary_box`: [-1, 1] in each input, inside the domain).  Without a domain
(``sg.jit``, ``sg.grad``) the search's samples are bit patterns of every float, which seldom fall
inside (0, 1)^2 away from 0, where a program of probabilities is evaluated: the Bernoulli KL
gradient's form ``log1p((m - t)/(t (1 - m)))`` is 3-9 ulps off at 5 % of that square, where the
derivative as written rounds to 1 ulp.  These regions cost some 10-35x the
float64 arithmetic they replace (``benchmarks/results/dd_regions.md``), against 40-400x for one
holding a dd ``exp``; ``SYMGRAD_DD_REGIONS=0`` keeps float64 kernels in float64.

Where the loss is the rounding of an elementary function's argument (``exp(-a/y)`` multiplies
the 0.5-ulp rounding of ``a/y`` by ``a/y``: the Arrhenius ratio ``exp(-a/x) - exp(-a/y)``, 3-5 ulps
at 1 % of the points), the region need not hold a dd ``exp``: ``ddt(N)``
(:class:`symgrad.ir.sympy_funcs.ddt`) computes the arithmetic in dd and exp, expm1, log and
log1p in float64 at the dd argument's high part plus the first-order term of its low part, with
a running error bound; where the bound shows the libm roundings amplified by cancellation, the
region is computed again with dd functions (adaptive precision: Shewchuk 1997).  Where nothing
cancels, each function costs one libm call and a few products, so the region is a cheap
candidate (14-20x the float64 formula, against 37x and more with dd exps), tried before the dd
region of the same node; one that recomputes at more than ``MAX_RECOMPUTED`` of its regime
piece's points (``exp(-a/x) - exp(-a/y)`` as written, wherever x ~ y) costs what a dd region
does, and is taken only when no other candidate reaches the target.

The candidates are the form with one subexpression ``N`` marked ``dd(N)`` or ``ddt(N)``, for
every ``N`` of the form that has a double-double routine
(:func:`symgrad.ir.ddprogram.from_sympy_region`), cheapest first (fewest dd operations).  Each
is scored with exactly the kernel's arithmetic (:func:`symgrad.ir.ddprogram.run`; on many points
the same bits by :func:`symgrad.emit.tape_numpy.run_region`), first at the failing points, then at
all of them; the first within 1 ulp everywhere and not worse on average
is taken (else the first within 2 ulps), and its cost is recorded.  The 1-ulp margin is there
because the roundings left outside the region are only sampled: ``dd(x sigmoid(-x) + 1) *
sigmoid(x)`` is within 2 ulps on the search's points and 3 ulps at some of 2000 points next to
the root.  float32 is not affected: its kernels compute the plain formula (in float64 when
widened).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import numpy as np
import sympy as sp

from symgrad.ir.ddprogram import TAIL, UNARY, from_sympy_region, operation_count, region_of
from symgrad.ir.sympy_funcs import dd, ddt

from .accuracy import Sample, box_sample, make_sample, point_bits
from .budget import cpu_clock
from .numeric import evaluate, run_columns
from .reference import compile_mpmath
from .result import RewriteRecord
from .search import _cond_bits, positions
from .widen import TWO_ULPS, stress_sample

__all__ = ["NAME", "dd_region", "cost_note"]

NAME = "double_double"
MAX_CANDIDATES = 24  # regions scored at most (cheapest first)
# A region costs 10-100x the float64 formula per element (benchmarks/results/dd_regions.md): it is
# tried only when float64 loses at least this many bits somewhere (2^6 = 64 ulps: cancellation
# no rewrite can repair, as next to a root), not for the few ulps a libm rounding costs.
MIN_LOSS_BITS = 6.0
# exp, log ...: 30-45 dd operations each (a dd sqrt: about one division; a first-order tail, about one dd product)
COSTLY = frozenset(UNARY) - {"neg", "sqrt"} - frozenset(TAIL.values())
ONE_ULP = 1.0  # bits (log2(1 + 1))
PROBE_POINTS, PROBE_SEED = 1024, 5  # the larger sample of the second trigger (references in dd: cheap)
BOX_POINTS = 512  # uniform points in the box of ordinary values (sampling.ordinary_box), for both triggers
MAX_COND_POINTS = 32  # points whose condition number is computed to see whether a smaller loss calls for a region
# A ddt region computes itself again with dd functions where its error bound shows cancellation: a
# cheap region (second trigger) may do so at this share of the points at most, else it costs what
# a region with dd functions does (exp(-a/x) - exp(-a/y) as written recomputes wherever x ~ y).
MAX_RECOMPUTED = 0.1


def _candidates(expr: sp.Expr):
    """``(dd operations, ((path, node, mark),), elementary functions in dd)`` of every
    subexpression with a dd routine, cheapest first; ``mark`` is :class:`dd`, or :class:`ddt`
    for the same node with its elementary functions in float64 with a first-order tail."""
    out, seen = [], set()
    for k, (path, node) in enumerate(positions(expr)):
        if node.is_Atom or not node.free_symbols or isinstance(node, sp.Piecewise) or node in seen \
                or isinstance(node, dd) or node.is_Relational or node.is_Boolean:
            continue
        seen.add(node)
        prog = _program(node)
        if prog is None:
            continue
        out.append((prog[0], k, 1, path, node, prog[1], dd))
        tail = _program(node, True) if prog[1] else None
        if tail is not None:
            out.append((tail[0], k, 0, path, node, 0, ddt))
    out.sort(key=lambda c: c[:3])
    return [(n_ops, ((path, node, mark),), n_fun) for n_ops, _, _, path, node, n_fun, mark in out]


@functools.lru_cache(maxsize=4096)
def _program(node: sp.Expr, tails: bool = False):
    """``(dd operations, costly functions)`` of ``node``'s region (with first-order tails for
    ``tails``: a ``ddt`` region), or None if it has none (a memo: candidates, pieces and the cost
    note ask for the same nodes)."""
    try:
        program = from_sympy_region(node, sorted(node.free_symbols, key=lambda s: s.name), tails=tails)
    except NotImplementedError:
        return None
    return operation_count(program), sum(1 for ins in program if ins[0] in COSTLY)


def _cheap(node: sp.Expr):
    """The mark of ``node``'s cheap region (:class:`dd` for arithmetic, square roots and hypot
    only; :class:`ddt` when it has exp, expm1, log or log1p), or None if it has none."""
    if not node.free_symbols:
        return None
    prog = _program(node)
    if prog is not None and not prog[1]:
        return dd
    return ddt if _program(node, True) is not None else None


def _leaves(expr: sp.Expr, path=()):
    """``(path, piece)`` of every piece of ``expr``'s regime split (nested splits flattened);
    ``expr`` itself when it is not a split."""
    if not isinstance(expr, sp.Piecewise):
        yield path, expr
        return
    for i, pair in enumerate(expr.args):
        yield from _leaves(pair.expr, path + (i, 0))


def _whole_pieces(expr, original, variables, at_bad: Sample) -> list:
    """Candidates that put whole pieces in double-double: every piece of the split that, as a
    region, repairs a failing point (one region cannot when the failures fall in two pieces), and
    the formula as written as one region (where the split was made against overflow the
    domain never reaches).  Cheap regions only (:func:`_cheap`)."""
    before, out, marks, n_ops = point_bits(expr, variables, at_bad), [], [], 0
    for path, leaf in _leaves(expr):
        mark = _cheap(leaf)
        if mark is not None and (point_bits(_marked(expr, ((path, leaf, mark),)), variables, at_bad) < before).any():
            marks.append((path, leaf, mark))
            n_ops += _program(leaf, mark is ddt)[0]
    if marks:
        out.append((n_ops, tuple(marks), 0))
    mark = _cheap(original)
    if mark is not None and original != expr:
        out.append((_program(original, mark is ddt)[0], (((), original, mark),), 0))
    return out


def cost_note(region: sp.Expr, mark=dd) -> str:
    """``double-double region: N dd operations (k elementary functions)`` for the record and the CLI:
    an elementary function (exp, log ...) costs some 30-45 dd additions and multiplications; a
    square root or hypot, about one division, is counted as an operation.  A :class:`ddt` region
    says ``(k elementary functions in float64 with first-order tails)``: one libm call and a
    product each where nothing cancels."""
    if mark is ddt:
        n_ops, n_tail = _program(region, True)[0], _program(region)[1]
        return (f"double-double region: {n_ops} dd operations ({n_tail} elementary "
                f"function{'s' if n_tail != 1 else ''} in float64 with first-order tails)")
    n_ops, n_fun = _program(region)
    funs = f"{n_fun} elementary function{'s' if n_fun != 1 else ''}"
    return f"double-double region: {n_ops} dd operations ({funs})"


def _merge(a: Sample, b: Sample | None) -> Sample:
    if b is None or not len(b.X):
        return a
    return Sample(a.dtype, np.concatenate([a.X, b.X.astype(a.X.dtype)]), np.concatenate([a.ref, b.ref]))


def dd_region(expr: sp.Expr, variables: Sequence[sp.Symbol], sample: Sample, original: sp.Expr,
              domain=None, deadline: float | None = None) -> tuple[sp.Expr, RewriteRecord] | None:
    """``(form with one dd region, its record)`` when float64 needs one to reach 2 ulps, else None.

    Two triggers, two candidate lists:

    * the form loses ``MIN_LOSS_BITS`` somewhere, or is worse than the formula as written beyond
      the conditioning there (:func:`_worse_than_written`): any region, elementary functions
      included, within 1 (else 2) ulps at every point;
    * it is worse than the formula as written only within the conditioning bound (beyond 2 ulps
      where that formula is within 1 ulp, by fewer bits than ``log2(1 + kappa)``: the rounding of
      several float64 operations on ``hypot(x, y)`` in ``-(y/h)/h/h``): cheap regions first, of
      arithmetic, square roots and ``hypot`` (some 10-35x the float64 operations they replace)
      or ``ddt`` ones (exp, log ... with first-order tails; against 40-400x for dd exps), which
      must be within 1 (else 2) ulps wherever the formula as written is within 1 ulp.  Not regions
      with dd functions: mish's derivative took one with six (3 ulps -> 1 at a few points of
      [-1.4, -0.2]), a hundred times the float64 formula there, and its loop no longer vectorised.

    Args:
      expr: the chosen float64 form.
      variables: its input symbols.
      sample: the search's float64 sample (correctly rounded references).
      original: the exact function (the formula as written), for the stress sample's roots.
      domain: the stabiliser's domain.
      deadline: ``budget.cpu_clock`` time after which no further candidate is scored.
    """
    spread = _merge(sample, stress_sample(original, variables, domain, np.float64))
    box = box_sample(original, variables, np.float64, domain=domain, n=BOX_POINTS, seed=PROBE_SEED)
    full = _merge(spread, box)
    before = point_bits(expr, variables, full)
    if not len(before):
        return None
    naive = point_bits(original, variables, full)
    cands = _candidates(expr)
    if before.max() >= MIN_LOSS_BITS or _worse_than_written(original, variables, full, before, naive):
        hit = _first_within(expr, variables, full, before, np.ones(len(before), dtype=bool), cands, deadline)
        if hit is not None:
            return _confined(hit, expr, variables, full, before)
    # Such losses are rare (1 point in 100 for -(y/h)/h/h): they are looked for on a larger sample,
    # when a region of arithmetic could repair them and the form is already at 2 ulps where the
    # formula as written is within 1 ulp somewhere on the search's points or the box sample's.
    cheap = [c for c in cands if c[2] == 0]
    if not (cheap and any(_cheap(leaf) is not None for _, leaf in _leaves(expr))) \
            or not ((naive <= ONE_ULP + 1e-9) & (before >= TWO_ULPS - 1e-9)).any():
        return None
    spread = _merge(spread, make_sample(original, variables, np.float64, domain=domain, n=PROBE_POINTS,
                                        seed=PROBE_SEED, real_only=True))
    full = _merge(spread, box)  # the box last: the share a ddt region recomputes is counted without it
    naive = point_bits(original, variables, full)
    before = point_bits(expr, variables, full)
    hit = _first_within(expr, variables, full, before, naive <= ONE_ULP + 1e-9, cheap, deadline,
                        lambda at_bad: _whole_pieces(expr, original, variables, at_bad), MAX_RECOMPUTED,
                        partial=True, spread=len(spread.X))
    return _confined(hit, expr, variables, full, before)


CONFINE_MARGIN = 0.5  # of each end's magnitude, added on its side of the inputs a region repairs


def _confined(hit, expr: sp.Expr, variables, full: Sample, before: np.ndarray):
    """``hit`` with its region computed only on the interval of the input where the float64 form
    needs it: ``Piecewise((expr, x < lo), (region, x <= hi), (expr, True))``, ``[lo, hi]`` the inputs
    where the form is beyond 2 ulps and the region better, each end moved out by ``CONFINE_MARGIN`` of
    its magnitude; ``hit`` itself for several inputs, or when the split is worse than the region
    anywhere it was within 2 ulps.  GELU's derivative ``Phi(x) + x phi(x)`` needs its dd ``erfc`` where
    the sum cancels, next to its root and in the left tail (by a factor x^2 there): for x > 0 its
    kernel runs at float64 speed (the whole line in double-double costs 100 times the float64
    formula)."""
    if hit is None or len(variables) != 1 or not len(before):
        return hit
    cand, rec = hit
    v, x = variables[0], full.X[:, 0]
    after = point_bits(cand, variables, full)
    need = (before > TWO_ULPS + 1e-9) & (after < before)
    if not need.any():
        return hit
    lo, hi = float(x[need].min()), float(x[need].max())
    tiny = 1e-6 * max(abs(lo), abs(hi), 1e-300)  # (an interval at 0)
    lo, hi = lo - CONFINE_MARGIN * max(abs(lo), tiny), hi + CONFINE_MARGIN * max(abs(hi), tiny)
    if not ((x < lo) | (x > hi)).any():  # the region serves the whole sample: nothing to confine
        return hit
    split = sp.Piecewise((expr, v < sp.Float(lo, 17)), (cand, v <= sp.Float(hi, 17)), (expr, True))
    got = point_bits(split, variables, full)
    if np.any(got > np.maximum(after, TWO_ULPS) + 1e-9):  # a point the region brought within 2 ulps is not
        return hit
    return split, dataclasses.replace(rec, regime=f"{lo:.6g} <= {v} <= {hi:.6g}", expr_after=split)


def _first_within(expr, variables, full: Sample, before: np.ndarray, watched: np.ndarray, cands, deadline,
                  more=None, max_recomputed: float = 1.0, partial: bool = False, spread: int | None = None):
    """The first of ``cands`` (cheapest first, then those ``more(at_bad)`` proposes) within
    1 ulp, else the first within 2 ulps, at every ``watched`` point of ``full`` and not worse on
    the mean than ``expr`` (its bits ``before``), with its record; None if there is none or
    nothing to repair.  Where the failing points of ``watched`` lie beyond 2 ulps (``at_bad``),
    a candidate must bring them within 2 ulps and keep every other point within 2 ulps or no
    worse than it was.  A candidate whose ``ddt`` regions compute themselves again with dd
    functions at more than ``max_recomputed`` of their points comes after all the others: it
    costs what a region with dd functions does, and is taken only where it is the only way.

    ``partial``: a candidate may also leave some failing points beyond 2 ulps if it repairs
    others and is no worse than ``expr`` at any watched point; the one leaving the fewest is
    taken.  The failures of a regime split often lie in two pieces, one of which no region can
    repair (the Bernoulli KL gradient: 2-5 ulps in its piece for m > 0.035, a difference of two
    quotients that rounds to 1e-32 instead of 0 at m = t < 0 in its first piece).  Candidates that
    rank alike by those criteria are ranked by their mean error on ``full``.

    ``spread``: the share of points a ``ddt`` region recomputes is counted on the first
    ``spread`` points of ``full`` only (the samples spread over the domain, not the box sample
    concentrated on ordinary values: its points in [-1, -0.73] all lie where ``x + e^x + 1``
    cancels a little, and would make the swish gradient's whole-piece region look costly)."""
    bad = np.flatnonzero(watched & (before > TWO_ULPS + 1e-9))
    if not len(bad):
        return None
    at_bad = Sample(full.dtype, full.X[bad], full.ref[bad])
    cands = cands[:MAX_CANDIDATES] + (more(at_bad) if more is not None else [])

    def repairing():  # (failing points a candidate leaves, candidate, marks): in ``cands``' order, or with
        for _, marks, _ in cands:  # ``partial`` all scored at the failing points first, fewest left first
            if deadline is not None and cpu_clock() > deadline:
                return
            cand = _marked(expr, marks)
            fixed = point_bits(cand, variables, at_bad) <= TWO_ULPS + 1e-9
            if fixed.all() or (partial and fixed.any()):
                yield int((~fixed).sum()), cand, marks

    scored = sorted(repairing(), key=lambda c: c[0]) if partial else repairing()
    fewest = None
    best = None  # (rank, candidate, marks, bits after); rank: (failing points left, recomputes often, beyond 1 ulp)
    for n_left, cand, marks in scored:  # a margin first: the sample shows the float64 rest's worst case only
        if deadline is not None and cpu_clock() > deadline:  # roughly (3 ulps off it for dd(...) * sigmoid(x))
            break
        if best is not None and n_left > best[0][0]:
            break
        after = point_bits(cand, variables, full)
        left = watched & (after > TWO_ULPS + 1e-9)
        if after.mean() > before.mean() + 1e-9 or np.any(after[left] > before[left] + 1e-9):
            continue  # (a point within 2 ulps before and not now is among them: its bits grew)
        kept = watched & ~left
        rank = (int(left.sum()), _recomputed_share(cand, marks, variables, full.X[:spread]) > max_recomputed,
                bool(kept.any() and after[kept].max() > ONE_ULP + 1e-9), float(after.mean()))
        if best is None or rank < best[0]:
            best = (rank, cand, marks, after)
        fewest = n_left if fewest is None else fewest
        if rank[:3] == (fewest, False, False):
            break
    if best is None:
        return None
    _, cand, marks, after = best
    bits = {"float64": (float(before.mean()), float(before.max()), float(after.mean()), float(after.max()))}
    nodes = list(dict.fromkeys((node, mark) for _, node, mark in marks))
    node = nodes[0][0] if len(nodes) == 1 else expr
    return cand, RewriteRecord(NAME, node, nodes[0][1](node) if len(nodes) == 1 else cand, bits, None, expr,
                               cand, "; ".join(cost_note(n, mark) for n, mark in nodes))


def _recomputed_share(expr: sp.Expr, marks, variables, X: np.ndarray) -> float:
    """The largest share of the points ``X`` at which a ``ddt`` region of ``marks`` computes
    itself again with dd functions (0.0 without ``ddt`` regions), counted among the points whose
    regime piece of ``expr`` holds it."""
    share = 0.0
    for _, node, mark in marks:
        if mark is not ddt or not len(X):
            continue
        used = np.zeros(len(X), dtype=bool)
        for path in [p for p, n in positions(expr) if n == node]:
            used |= _reaching(expr, path, variables, X)
        if used.any():
            leaves, program = region_of(mark(node))
            count: list = []
            run_columns(program, [X[used, list(variables).index(v)] for v in leaves], count)
            share = max(share, count[0] / used.sum())
    return share


def _reaching(expr: sp.Expr, path: tuple, variables, X: np.ndarray) -> np.ndarray:
    """Mask of the points of ``X`` whose regime pieces lead to the node at ``path``."""
    mask = np.ones(len(X), dtype=bool)
    while path:
        if isinstance(expr, sp.Piecewise):
            k = path[0]
            if path[1] == 1:  # inside a condition: evaluated everywhere
                return mask
            for j, (_, cond) in enumerate(expr.args[:k + 1]):
                holds = np.ones(len(X), dtype=bool) if cond is sp.true else \
                    evaluate(cond, variables, X, np.float64) != 0
                mask &= holds if j == k else ~holds
            expr, path = expr.args[k].expr, path[2:]
        else:
            expr, path = expr.args[path[0]], path[1:]
    return mask


def _worse_than_written(original, variables, full: Sample, before: np.ndarray, naive: np.ndarray) -> bool:
    """Does the form (its bits ``before`` on ``full``) lose, at a point where the formula as
    written (its bits ``naive``) is within 1 ulp, more than 2 ulps and more than the
    conditioning there allows (``log2(3) + log2(1 + kappa)`` bits)?

    Issue 16's never-worse target, point by point: no float64 form reached it (the search keeps
    the best it found), so the region is the only way left, however few bits are at stake.
    ``(x - 1) log1p(-x) - (x + 1) log1p(x)`` over ``(1 - x)(1 + x) log1p(x)^2``, the derivative
    of ``log(1 - x)/log(1 + x)``, is 3 ulps off at x = -0.69, where the formula as written
    rounds to 1 ulp and kappa is 0.4: every float64 form found loses 2-3 bits somewhere there.
    """
    idx = np.flatnonzero((naive <= ONE_ULP + 1e-9) & (before > TWO_ULPS + 1e-9))
    if not len(idx):
        return False
    idx = idx[np.argsort(-before[idx], kind="stable")][:MAX_COND_POINTS]  # the largest losses first
    fn = compile_mpmath(original, variables)
    return any(before[i] > TWO_ULPS + 1e-9 + _cond_bits(fn, full.X[i]) for i in idx)


def _marked(expr: sp.Expr, marks) -> sp.Expr:
    """``expr`` with each ``(path, node, mark)`` of ``marks`` a double-double region ``mark(node)``
    (:class:`dd` or :class:`ddt`) -- at every occurrence of a node that occurs more than once (the
    outer pieces of a regime split are often the same form).  ``((), u, dd)`` makes the whole of
    ``dd(u)`` the result.

    The parents are rebuilt unevaluated: SymPy would merge ``-(y/dd(h))/dd(h)/dd(h)``, the
    order of operations the search chose, into ``-y*dd(h)**(-3)``, whose cube underflows."""
    done = set()
    for path, node, mark in marks:
        if node in done:  # a piece the outer pieces of a split share: marked at every occurrence already
            continue
        done.add(node)
        # Every occurrence outside a region, found again after each replacement: a parent rebuilt by
        # SymPy (a function's argument) may reorder its arguments, and the paths found before it were
        # stale (IndexError out of sg.jit for the Black-Scholes example at a 2 s budget).  The mark's
        # own path serves only where no occurrence is found and it still leads to the node.
        for k in range(MAX_OCCURRENCES):
            hit = next((p for p, n in positions(expr) if n == node and _outside_regions_at(expr, p, node)),
                       path if k == 0 and _outside_regions_at(expr, path, node) else None)
            if hit is None:
                break
            expr = _rebuilt(expr, hit, mark(node))
    return expr


MAX_OCCURRENCES = 64  # occurrences of one node marked, at most (each finds the paths again)


def _along(expr: sp.Expr, path: tuple) -> list | None:
    """The nodes from ``expr`` down to the one at ``path`` (as :func:`.search.positions` numbers
    them, a Piecewise pair's expression at ``(i, 0)``), or None where the path leads nowhere."""
    nodes = [expr]
    while path:
        if path[0] >= len(expr.args):
            return None
        expr, path = (expr.args[path[0]].expr, path[2:]) if isinstance(expr, sp.Piecewise) \
            else (expr.args[path[0]], path[1:])
        nodes.append(expr)
    return nodes


def _outside_regions_at(expr: sp.Expr, path: tuple, node) -> bool:
    """Is ``node`` at ``path``, with no region (:class:`dd` or :class:`ddt`) above it?"""
    nodes = _along(expr, path)
    return nodes is not None and nodes[-1] == node and not any(isinstance(n, (dd, ddt)) for n in nodes[:-1])


def _rebuilt(expr: sp.Expr, path: tuple, new: sp.Expr) -> sp.Expr:
    if not path:
        return new
    args = list(expr.args)
    if isinstance(expr, sp.Piecewise):
        pair = expr.args[path[0]]
        args[path[0]] = (_rebuilt(pair.expr, path[2:], new), pair.cond)
        return sp.Piecewise(*args, evaluate=False)
    args[path[0]] = _rebuilt(args[path[0]], path[1:], new)
    if isinstance(expr, (sp.Add, sp.Mul, sp.Pow)):
        return expr.func(*args, evaluate=False)
    return expr.func(*args)
