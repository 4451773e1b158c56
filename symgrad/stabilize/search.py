"""Candidate search: rewrite, localise, branch, choose and verify.

The loop follows Herbie's structure with our own components:

1. sample inputs and compute correctly rounded references (:mod:`accuracy`);
2. beam search: from the best few candidates, apply every identity of
   :mod:`rewrites` at every subexpression, plus a greedy saturation chain, and
   algebraic transformations at the subexpressions with the largest *local*
   error (:mod:`localize`, :mod:`transforms`).  The search stops as soon as a
   round brings no improvement of the best mean error;
3. only if the best exact candidate is still inaccurate: truncated series at
   the worst subexpressions (approximations, usable only inside a regime);
4. regime inference over the best candidates (:mod:`regimes`);
5. choose the lowest mean bits of error (mean over dtypes), ties to the
   cheaper ``count_ops``; reject candidates that are worse than the original
   at a point where the original was accurate -- unless the regression is
   within the conditioning of the problem at that point (see
   :meth:`Search.acceptable`) -- and anything that fails the high-precision
   equivalence check (:mod:`verify`);
6. (in :func:`symgrad.stabilize.stabilize`) the never-worse acceptance check of
   :mod:`accept` on points the search never saw.

Budget and determinism
----------------------
The search is bounded by a deterministic *work* budget counted in units (one
unit per newly scored candidate, a few units per algebraic transformation,
localisation or series expansion; see ``COST``).  The same expression, sample
size and seed therefore always explore the same candidates and return the same
result, independent of machine load.  ``budget_s`` is only an outer safety cap,
in CPU seconds of the calling thread (``budget.cpu_clock``), so a busy machine does not
cut the search; when either limit cuts it the result reports
``budget_exhausted=True`` (only a CPU-time cut can make a result depend on timing).

References:
    Panchekha, Sanchez-Stern, Wilcox & Tatlock (2015), "Automatically improving
    accuracy for floating point expressions", PLDI.
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", sec. 1.6
    (conditioning vs. stability).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp

from .accuracy import MAX_BITS, Sample, make_sample, point_bits, ulp_bits
from .budget import (StabilizeBudgetExceeded, check_deadline, cpu_clock, deadline_passed, hard_deadline,
                     interrupted_past)
from .limits import saturation_limits
from .localize import local_errors
from .numeric import compile_numpy
from .reference import compile_mpmath
from .regimes import TWO_ULPS, best_split, covering_series, flatten_regimes
from .rewrites import RULES
from .transforms import algebraic_variants, parametric_terms, series_variants
from .verify import equivalent
from .widen import widened_bits

__all__ = ["Cand", "Step", "Search", "DEFAULT_WORK", "COST"]

DEFAULT_WORK = 600
# Work units, roughly proportional to time (one candidate scoring ~ 1-2 ms).
COST = {"score": 1, "algebraic": 5, "localize": 10, "series": 40, "regime": 20, "verify": 20}
SATURATE_FROM = 1e100  # |input| from which a NaN/inf-level point asks for the function's limits (Search.saturated)
SERIES_ABOVE = 0.25  # bits: series/regimes are tried only when the best exact form is worse than this
TIE = 0.05  # bits: candidates this close to the best mean error count as tied (cheaper wins)
IMPROVE_EPS = 0.01
SERIES_SPARE = float(np.log2(5.0))  # bits: a regime split beyond 4 ulps at some point still calls for a series
REPAIR_BITS = 8.0  # bits: a point lost this badly by every frontier form calls for the form that serves it
# subexpression values kept for scoring (Search._values): 256-point samples, about 2 KB each
MAX_KNOWN_VALUES = 20000
# Algebraic transformations (SymPy's together/cancel/expand/factor) only at nodes of at most this many
# tree nodes: on larger ones (the root of GELU'', 115-144 nodes) each costs 30-60 ms, half of a default
# program budget's search, and returns a larger expression that does not score better; the rewrites
# and the localised moves at the worst (smaller) subexpressions still reach those trees.
MAX_ALGEBRAIC_NODES = 100
SERIES_AT_INFINITY_FROM = 4.0  # |input| a sample must reach for a series at infinity to be tried
MIN_REGIME_GAIN = 0.1  # bits of mean error a regime split must win (see _worth_a_branch)
# A regime split (its thresholds refined on fresh mpmath references) may run this fraction of the search
# budget past it; a split cut there is not made.  Unbounded, it ran into the program's hard deadline and
# the whole search was lost (log(0.5*(1 + erf(x/sqrt 2))) at the 1 s default budget: 0 searched).
REGIME_GRACE = 0.15
# The step name of a candidate the caller hands in (``stabilize(seeds=...)``): the program pass offers
# the derivative of the primal's stable form (symgrad.api.primal_seeds).
SEED_STEP = "derivative_of_stable_primal"
# Input magnitudes below which a form that overflows beyond them may serve (Search.guarded), largest first.
GUARD_MAGNITUDES = (1e300, 1e150, 1e100, 1e50, 1e20)
REGRESSION_SLACK = 2.0  # bits; see Search.acceptable  # bits: a round must lower the best mean error by more than this to continue


@dataclass(frozen=True)
class Step:
    """One rewrite step: ``sub_before`` (a subexpression of ``before``) became ``sub_after``."""
    name: str
    sub_before: sp.Expr
    sub_after: sp.Expr
    before: sp.Expr
    after: sp.Expr
    regime: str | None = None


@dataclass(eq=False)
class Cand:
    """A scored candidate and the chain of steps that produced it.

    ``cost`` (SymPy's ``count_ops``) and the canonical sort key only break ties of the rounded
    score, so both are computed on first use: ``key()`` orders candidates exactly as the tuple
    ``(rounded score, cost, default_sort_key)`` would, without paying for the tree walks of the
    candidates whose scores differ (they were a sixth of a search's CPU time).
    """
    expr: sp.Expr
    bits: dict
    score: float
    history: tuple  # (Step, ...)
    exact: bool = True  # False for series approximations (only usable inside regimes)

    @functools.cached_property
    def cost(self) -> int:
        return int(sp.count_ops(self.expr))

    @functools.cached_property
    def _key(self):
        return (round(self.score, 6), _TieBreak(self))

    def key(self):
        return self._key


@functools.total_ordering
class _TieBreak:
    """``(cost, default_sort_key(expr))`` of a candidate, evaluated only when compared."""
    __slots__ = ("c",)

    def __init__(self, c: Cand):
        self.c = c

    def __eq__(self, other):
        a, b = self.c, other.c
        return a.cost == b.cost and (a.expr == b.expr or _sort_key(a.expr) == _sort_key(b.expr))

    def __lt__(self, other):
        a, b = self.c, other.c
        return a.cost < b.cost if a.cost != b.cost else _sort_key(a.expr) < _sort_key(b.expr)


@functools.lru_cache(maxsize=4096)
def _sort_key(expr):
    return sp.default_sort_key(expr)


def positions(expr, path=()):
    """All ``(path, node)`` pairs in deterministic preorder (conditions excluded)."""
    yield path, expr
    if isinstance(expr, sp.Piecewise):
        for i, pair in enumerate(expr.args):
            yield from positions(pair.expr, path + (i, 0))
        return
    for i, a in enumerate(expr.args):
        if isinstance(a, sp.Basic) and not a.is_Atom:
            yield from positions(a, path + (i,))


def replace_at(expr, path, new):
    """Rebuild ``expr`` with the node at ``path`` replaced (parents re-evaluated)."""
    if not path:
        return new
    args = list(expr.args)
    args[path[0]] = replace_at(args[path[0]], path[1:], new)
    return expr.func(*args)


_OVERFLOW_ONLY = frozenset(r.name for r in RULES if r.overflow_only)
_CHILDREN: dict = {}  # node -> [(rule name, replacement)] (rules are pure functions of the node)


class RulesStopped(Exception):
    """The rules at one position were stopped: the search's share of the budget ended while SymPy ran."""


def _rule_results(node, t: float | None = None):
    """``[(rule name, replacement)]`` of every rule at ``node`` (memoised).  The rules call SymPy
    (expand, factor, together), which has no checkpoints: once this thread's CPU clock passes ``t``
    the work is stopped (:class:`RulesStopped`, nothing memoised) rather than let the expansions of
    one large subexpression run past the search's share of the budget (0.4 s at one position of the
    BCE Hessian written with exp(z)/(1 + exp(z)), after the reduced form had been found at its root)."""
    hit = _CHILDREN.get(node)
    if hit is not None:
        return hit
    out = []
    with interrupted_past(t, RulesStopped):
        for rule in RULES:
            try:
                news = rule.apply(node)
            except RulesStopped:
                raise
            except Exception:  # noqa: BLE001 - a rule that cannot handle a node just skips it
                continue
            out += [(rule.name, new) for new in news if new != node]
    if len(_CHILDREN) > 50000:
        _CHILDREN.clear()
    _CHILDREN[node] = out
    return out


class Search:
    """One stabilisation run (state shared by the phases)."""

    def __init__(self, expr, variables, domain, budget_s, dtypes, seed, n_points, work=DEFAULT_WORK,
                 beam=4, rounds=4, samples=None, widen=False, seeds=(), series=True):
        self.t0 = cpu_clock()
        self.widen = widen  # float32 kernels may compute in float64 (see acceptable)
        self.expr, self.vars, self.domain = expr, list(variables), domain
        self.budget_s, self.work, self.beam, self.rounds = budget_s, work, beam, rounds
        self.allow_series = series  # truncated series (inside regimes) may be tried
        self.used = 0
        self.exhausted = False
        self.timed_out = False
        # given samples (the program triage's shared points, see .triage) replace the search's own
        self.samples = {dt: samples[dt] if samples is not None and dt in samples else
                        make_sample(expr, self.vars, dt, domain=domain, n=n_points, seed=seed) for dt in dtypes}
        self.seen: dict = {}
        self._cond: dict = {}
        self._local: dict = {}  # (node, dtype, sample index) -> correctly rounded reference (localisation)
        self._variants: dict = {}  # node -> algebraic_variants(node)
        self._splits: dict = {}  # candidate expressions -> best_split over them
        self._values: dict = {dt: {} for dt in self.samples}  # dtype -> {subexpression: values on its sample}
        self.max_size = 3 * _tree_size(expr, 10**6) + 40
        self.orig = self.score(expr, ())
        for form in seeds:  # equivalent forms the caller knows (ranked and verified like any candidate),
            if form != expr and form not in self.seen:  # kept when better than the original on the mean
                c = self.score(form, (Step(SEED_STEP, expr, form, expr, form),))
                if c is not None and c.score >= self.orig.score:
                    self.seen[form] = None  # no better: it would only take a place in the beam

    # -- bookkeeping -------------------------------------------------------
    def charge(self, what: str, k: int = 1):
        self.used += COST[what] * k

    def out_of_budget(self) -> bool:
        check_deadline()  # the program's stabiliser budget (a no-op outside one)
        if self.used >= self.work:
            self.exhausted = True
        elif cpu_clock() - self.t0 > self.budget_s:
            self.exhausted = self.timed_out = True
        return self.exhausted

    def score(self, expr, history, exact=True):
        c = self.seen.get(expr, False)
        if c is not False:
            return c
        if history and exact and history[-1].name not in ("regime_split", SEED_STEP) \
                and _tree_size(expr, self.max_size) >= self.max_size:
            self.seen[expr] = None  # runaway growth (nested shifts etc.): not a useful candidate
            return None
        if history and history[-1].name in _OVERFLOW_ONLY and not self._repairs_overflow(history[-1].before, expr):
            self.seen[expr] = None  # a reordering that removes no NaN/inf would only change the rounding
            return None
        self.charge("score")
        check_deadline()
        try:
            if sum(map(len, self._values.values())) > MAX_KNOWN_VALUES:
                self._values = {dt: {} for dt in self.samples}
            bits = {dt: point_bits(expr, self.vars, s, self._values[dt]) for dt, s in self.samples.items()}
        except Exception:  # noqa: BLE001 - a candidate the evaluator cannot handle is dropped
            self.seen[expr] = None
            return None
        score = float(np.mean([b.mean() if len(b) else 0.0 for b in bits.values()]))
        c = Cand(expr, bits, score, history, exact)
        self.seen[expr] = c
        return c

    def _repairs_overflow(self, parent, expr) -> bool:
        """Is ``expr`` accurate at one of the points where the scored ``parent`` has NaN/inf-level error?

        The gate of the rewrites that only reorder operations (``Rewrite.overflow_only``): checked
        on those few points before the candidate is scored (and charged), so a reordering is never
        kept for its rounding noise and costs next to nothing where it cannot help.
        """
        p = self.seen.get(parent)
        if not p:
            return False
        for dt, b in p.bits.items():
            full = np.flatnonzero(b >= 8 * np.dtype(dt).itemsize - 0.01)
            if not len(full):
                continue
            s = self.samples[dt]
            try:
                got = compile_numpy(expr, self.vars, s.dtype)(s.X[full])
            except Exception:  # noqa: BLE001 - a candidate the evaluator cannot handle repairs nothing
                return False
            if np.any(ulp_bits(got, s.ref[full]) < 8 * np.dtype(dt).itemsize - 0.01):
                return True
        return False

    def cond_bits(self, dt, idx) -> np.ndarray:
        """log2(1 + condition number) of the exact function at sample points ``idx`` of ``dt``.

        kappa = sum_i |x_i * df/dx_i / f| (relative perturbation of the inputs),
        estimated by high-precision relative perturbations of each input.
        """
        out = np.empty(len(idx))
        fn = None
        s = self.samples[dt]
        for n, i in enumerate(idx):
            key = (str(dt), int(i))
            if key not in self._cond:
                fn = fn or compile_mpmath(self.expr, self.vars)
                self._cond[key] = _cond_bits(fn, s.X[i])
            out[n] = self._cond[key]
        return out

    def acceptable(self, c: Cand) -> bool:
        """Never worse than the original where the original was accurate -- up to conditioning.

        A candidate is rejected if, at some sample point where the original had
        at most 1 bit of error, it has more than ``max(orig, 1) + 1`` bits *and*
        the excess is larger than ``log2(1 + kappa)``, kappa being the condition
        number of the exact function at that point.  Rationale: where the
        problem itself is ill-conditioned (log-sum-exp near 0, exp(a - b) for
        huge a, a function near a root) no backward-stable formula can promise
        more than ``kappa`` ulps; the original being exact there is luck, and
        refusing a candidate that is far better everywhere else for that would
        keep NaN/inf in the output.  When float32 kernels may compute in float64 (``widen``,
        :mod:`.widen`), a float32 point at NaN/inf-level error is judged as that widened kernel computes it: an
        intermediate that overflows in float32 only (``(-2*x - 1)/((x**2 + 1)*(x**2 + 2*x + 2))``
        at x = 3.4e38, whose numerator is -inf) does not block a form that is exact in float64
        arithmetic (the never-worse check, :mod:`.accept`, then judges the kernel as built).
        On top of the conditioning, a regression of
        ``REGRESSION_SLACK`` (2) bits is tolerated at a few points (at most 1/16
        of the sample; regressions within the conditioning are excused at up
        to 1/4 of the sample): formulas with the same cancellation round differently,
        and an original that happens to round luckily at one point (e.g. both
        terms of ``sin(x)/x**2 - 2*(1 - cos(x))/x**3`` rounding favourably at
        x = 0.99) must not block a candidate that removes NaN/inf elsewhere.
        Regressions to NaN/inf (maximal error) are never excused unless the
        conditioning is equally extreme.
        """
        for dt, ob in self.orig.bits.items():
            cb = c.bits[dt]
            if len(cb) and cb.mean() > ob.mean() + 1e-9:  # never worse on average, in every dtype
                return False
            lim = np.maximum(ob, 1.0) + 1.0
            bad = np.flatnonzero((ob <= 1.0) & (cb > lim))
            over = bad[cb[bad] >= 31.99] if self.widen and np.dtype(dt) == np.float32 else bad[:0]
            if len(over):  # NaN/inf in float32 arithmetic only: judged as the widened kernel computes it
                bad = np.setdiff1d(bad, over[self._widened_bits(c.expr, dt, over) <= lim[over]])
            if not len(bad):
                continue
            if len(bad) > len(ob) // 4:  # wholesale regression: not a conditioning effect
                return False
            excess = cb[bad] - lim[bad] - self.cond_bits(dt, bad)
            if np.any(excess > REGRESSION_SLACK) or np.count_nonzero(excess > 0) > max(2, len(ob) // 16):
                return False
        return True

    def _widened_bits(self, expr, dt, idx) -> np.ndarray:
        """Bits of error of ``expr`` at sample points ``idx`` of ``dt`` computed in float64 and
        rounded once (:func:`.widen.widened_bits`, as a widened float32 kernel computes it)."""
        s = self.samples[dt]
        try:
            return widened_bits(expr, self.vars, Sample(s.dtype, s.X[idx], s.ref[idx]))
        except Exception:  # noqa: BLE001 - a candidate the evaluator cannot handle is not excused
            return np.full(len(idx), np.inf)

    # -- generation ---------------------------------------------------------
    def children(self, c: Cand):
        """Every rule result at every position, and, for a subexpression that occurs more than once,
        the same rewrite at all its occurrences at once (derivatives repeat a subexpression in
        several terms: ``1 - tanh(u)**2`` four times in GELU'': one occurrence rewritten at a time,
        each step alone barely moves the mean error and the beam may never reach the form with all).

        A generator, in the order of :func:`positions` (the root first): the rules at a node run when
        the caller asks for that node's results, so a budget that ends while the children are scored
        has spent nothing on the rules of the positions not reached (SymPy's expand and factor on the
        subexpressions of a large derivative take most of a program's second)."""
        where = list(positions(c.expr))
        count: dict = {}
        for _, node in where:
            count[node] = count.get(node, 0) + 1
        done = set()
        for path, node in where:
            if self.out_of_budget():  # the rules at the positions left would run past the search's share
                return
            try:
                results = _rule_results(node, self.t0 + self.budget_s)
            except RulesStopped:
                self.exhausted = self.timed_out = True
                return
            for name, new in results:
                e = replace_at(c.expr, path, new)
                yield e, c.history + (Step(name, node, new, c.expr, e),), True
                if count[node] > 1 and (node, new) not in done:
                    done.add((node, new))
                    e = c.expr.xreplace({node: new})
                    yield e, c.history + (Step(name, node, new, c.expr, e),), True

    def saturate(self, c: Cand, max_steps=5):
        """Greedy chain: repeatedly take the best-scoring single rewrite, even if temporarily worse."""
        cur = c
        visited = {c.expr} | {h.before for h in c.history}
        for _ in range(max_steps):
            if self.out_of_budget():
                break
            scored = []
            for e, h, _ in self.children(cur):
                if e in visited:
                    continue
                s = self.score(e, h)
                if s is not None:
                    scored.append(s)
                if self.out_of_budget():
                    break
            if not scored:
                break
            cur = min(scored, key=Cand.key)
            visited.add(cur.expr)
        return cur

    def worst_nodes(self, c: Cand, top=2):
        self.charge("localize")
        worst = {}
        for dt, s in self.samples.items():
            for err, node in local_errors(c.expr, self.vars, s, c.bits[dt], n_points=12, memo=self._local):
                worst[node] = worst.get(node, 0.0) + err
        return sorted(worst, key=lambda n: (-worst[n], sp.default_sort_key(n)))[:top]

    def _at(self, c, node):
        """Path of ``node`` in ``c.expr``; None when it occurs only inside a Piecewise condition
        (local errors are measured there too, but conditions are not rewritten)."""
        return next((p for p, n in positions(c.expr) if n == node), None)

    def localized(self, c: Cand, top=2):
        """Algebraic variants at the nodes with the largest local error, and at the root."""
        out = []
        nodes = self.worst_nodes(c, top)
        nodes += [c.expr] if c.expr not in nodes else []
        for node in nodes:
            if self.out_of_budget():
                break
            path = self._at(c, node)
            if path is None or _tree_size(node, MAX_ALGEBRAIC_NODES + 1) > MAX_ALGEBRAIC_NODES:
                continue
            self.charge("algebraic")
            if node not in self._variants:
                self._variants[node] = algebraic_variants(node)
            for name, new in self._variants[node]:
                e = replace_at(c.expr, path, new)
                out.append((e, c.history + (Step(name, node, new, c.expr, e),), True))
        return out

    def series(self, c: Cand, done: set) -> bool:
        """Score series approximations of ``c`` at its root (SymPy series are expensive).

        Returns True when some series variant was produced."""
        node = c.expr
        if node in done or self.out_of_budget():
            return False
        done.add(node)
        news = series_variants(node, at_infinity=self._unbounded())
        self.charge("series", len(news) + 1)
        for name, new in news:
            self.score(new, c.history + (Step(name, node, new, node, new),), False)
        return bool(news)

    def saturated(self, c: Cand):
        """``c`` with the constants the function settles to for huge inputs (:mod:`.limits`) beyond
        thresholds the regime search places, when ``c`` is NaN/inf-level at some of the sample's
        huge inputs (|x| >= ``SATURATE_FROM``) and the split is worth its branch; else None.

        The tanh form of GELU's derivative is NaN for |x| > 5.6e102, where ``x**3`` overflows and
        multiplies ``sigmoid(-u) = 0``; its value rounds to 1 there (and to -0 for x < 0).  A step
        after the search, not constants among its candidates: a constant exact on half of a
        bit-pattern sample would crowd the series out of the regime search (the Planck
        derivative's series near 0)."""
        if len(self.vars) != 1 or self.out_of_budget():
            return None
        huge = {dt: np.abs(s.X[:, 0].astype(np.float64)) >= SATURATE_FROM for dt, s in self.samples.items()}
        lost = any(np.any(huge[dt] & (c.bits[dt] >= MAX_BITS[np.dtype(dt)] / 2)) for dt in self.samples)
        if not lost:
            return None
        self.charge("series")
        limits = [self.score(e, (Step(name, self.expr, e, self.expr, e),), False)
                  for name, e in saturation_limits(self.expr)]
        limits = [k for k in limits if k is not None]
        if not limits:
            return None
        picks = [c] + limits
        split = self._in_grace(lambda: best_split([(k.expr, k.bits) for k in picks], self.samples, self.vars,
                                                  self.expr, alone=[k.exact for k in picks]))
        if split is None:
            return None
        pw, cond = flatten_regimes(split[0], self.vars[0]), split[1]
        rc = self.score(pw, c.history + (Step("regime_split", c.expr, pw, c.expr, pw, cond),))
        return rc if rc is not None and _worth_a_branch(rc, c) else None

    def _unbounded(self) -> bool:
        """Do the sample's inputs (where the function is finite) reach ``SERIES_AT_INFINITY_FROM``?
        If not, a series at infinity serves nowhere, and SymPy's expansion there is the slowest
        step of a search (d/dx of log(1 - x)/log(1 + x), finite on |x| < 1: 0.3 s of a 0.6 s cap)."""
        return any(len(s.X) and float(np.max(np.abs(s.X))) >= SERIES_AT_INFINITY_FROM for s in self.samples.values())

    # -- main loop ----------------------------------------------------------
    def best_exact(self):
        return min((c for c in self.seen.values() if c is not None and c.exact), key=Cand.key)

    def run(self) -> Cand:
        frontier, expanded = [self.orig], set()
        best = self.orig.score
        for _ in range(self.rounds):
            for i, c in enumerate(frontier):
                if self.out_of_budget():
                    break
                expanded.add(c.expr)
                # the rules' results are scored before the localized ones, whose references cost more:
                # on a large derivative (the BCE Hessian with exp(z)/(1 + exp(z))) the budget may end
                # in between, and a rule at the root (sigmoid_identity) may be the answer
                for kids in (lambda: self.children(c), lambda: self.localized(c) if i == 0 else []):
                    if self.out_of_budget():
                        break
                    for e, h, exact in kids():
                        self.score(e, h, exact)
                        if self.out_of_budget():
                            break
                if i == 0:
                    self.saturate(c)
            new_best = self.best_exact().score
            if self.out_of_budget() or new_best < 0.05:
                break
            if new_best > best - IMPROVE_EPS:
                # no progress on the mean: only a form that serves points every open form loses badly
                # goes on (the combined fraction of 1/(x+1) - 2/x + 1/(x-1) over all reals: worse on
                # the mean, its quotient overflowing past 1e51, exact where the others cancel; its
                # divide-early form is the answer)
                open_ = [c for c in self.pool() if c.exact and c.expr not in expanded]
                frontier = _repairing(open_[:self.beam], open_[:64])
            else:
                frontier = self.frontier(expanded)
            best = min(best, new_best)
            if not frontier:
                break
        if self.allow_series and self.vars and self.best_exact().score > SERIES_ABOVE and not self.out_of_budget() \
                and not self.split_suffices():
            # Exact candidates are the same function, so their series at the root are the same:
            # expand the original (usually the cheapest for SymPy) and the best form only if that fails.
            done: set = set()
            for c in [self.orig, self.best_exact()]:
                if self.series(c, done):
                    break
        return self.choose()

    def frontier(self, expanded: set) -> list:
        """The next round's candidates: the ``beam`` best by mean error over the dtypes, then the
        best of each dtype alone when it is not among them.

        A form can be far better in one format and worse in the other on inputs no formula serves
        (``1/cosh(u)**2`` for ``1 - tanh(u)**2`` in a product: exact where float64 cancelled, NaN in
        float32 where the product overflows before the division); its mean over the dtypes then
        ranks it below many near-copies of the current best, and the rewrite that repairs it
        (:func:`~.rewrites._divide_early`) is never tried.  Keeping the best program of each format
        (in the spirit of Herbie's candidate table, which keeps every program that is best at some
        sample point; Panchekha et al. 2015) costs at most one expansion per dtype and round.
        One more is the candidate that serves the most points every one of those loses
        (:func:`_repairing`).
        """
        open_ = [c for c in self.pool() if c.exact and c.expr not in expanded]
        out = open_[:self.beam]
        for dt in sorted(self.samples, key=str):
            best = min(open_, key=lambda c: (round(float(c.bits[dt].mean()), 6) if len(c.bits[dt]) else 0.0,
                                              c.key()), default=None)
            if best is not None and all(best is not c for c in out):
                out.append(best)
        return out + _repairing(out, open_[:64])

    def pool(self):
        cs = [c for c in self.seen.values() if c is not None]
        cs.sort(key=Cand.key)
        return cs

    def ranked(self):
        """The acceptable exact candidates, best first (ties within TIE bits go to the cheaper
        form), and the best of them (the original when none is acceptable)."""
        ok = [c for c in self.pool() if c.exact and c.score <= self.orig.score + 1e-9 and self.acceptable(c)]
        if ok:
            tied = [c for c in ok if c.score <= ok[0].score + TIE]
            first = min(tied, key=lambda c: (c.cost, c.key()))
            ok = [first] + [c for c in ok if c is not first]
        return ok, (ok[0] if ok else self.orig)

    def regime(self, best_exact: Cand, probe: bool = False):
        """The regime split over a few of the best candidates (series included), or None when
        no split is worth its branch over ``best_exact`` (``_worth_a_branch``).  A ``probe`` does
        not add the split to the candidates (a later split would nest it)."""
        pool = self.pool()
        picks, seen = [], set()
        base = [self.orig, best_exact] + [c for c in pool if c.exact][:4] + [c for c in pool if not c.exact][:3]
        for c in base + _complements(base, pool[:64], 2):
            if c.expr not in seen:
                seen.add(c.expr)
                picks.append(c)
        if len(picks) < 2:
            return None
        return self._in_grace(lambda: self._split(picks, best_exact, probe))

    def _in_grace(self, step):
        """``step()``, which may run ``REGIME_GRACE`` past the search budget (a split refines its
        thresholds on fresh references); None, the search marked out of time, when that ends too."""
        try:
            with hard_deadline(self.t0 + self.budget_s * (1 + REGIME_GRACE)):
                return step()
        except StabilizeBudgetExceeded:
            if deadline_passed():  # the program's own deadline: not this search's to absorb
                raise
            self.exhausted = self.timed_out = True
            return None

    def _split(self, picks, best_exact: Cand, probe: bool):
        key = tuple(c.expr for c in picks)
        if key not in self._splits:
            self.charge("regime")
            self._splits[key] = best_split([(c.expr, c.bits) for c in picks], self.samples, self.vars, self.expr,
                                           alone=[c.exact for c in picks] if len(self.vars) == 1 else None)
        split = self._splits[key] or self._covering(best_exact)
        if split is None:
            return None
        pw, cond = split[:2]
        known = pw in self.seen
        rc = self.score(pw, best_exact.history + (Step("regime_split", best_exact.expr, pw, best_exact.expr, pw, cond),))
        if probe and not known:
            self.seen.pop(pw, None)
        if rc is None or not _worth_a_branch(rc, best_exact):
            return None
        return rc if self.acceptable(rc) else self.guarded(rc, best_exact)

    def guarded(self, c: Cand, best_exact: Cand):
        """``c`` below an input magnitude and the formula as written beyond it, for the first of
        ``GUARD_MAGNITUDES`` where that is acceptable and worth its branch over ``best_exact``; else None.

        A form can be far better at ordinary inputs and lose only where an intermediate overflows
        that the formula as written survives: the conjugate ``2c/((b + sqrt(b^2 - 4ac)) sqrt(b^2 - 4ac))``
        of the quadratic root's derivative d/db is exact where ``-1 + b/sqrt(b^2 - 4ac)`` cancels,
        and 0 where ``4ac`` overflows (|a c| > 1e308), where the form as written gives ``-1/(2a)``.
        The branch keeps the formula as written there (as Herbie's regimes keep the input program
        on the inputs where no candidate beats it; Panchekha et al. 2015, sec. 4.5)."""
        big = sp.Max(*[sp.Abs(v) for v in self.vars]) if len(self.vars) > 1 else sp.Abs(self.vars[0])
        for m in GUARD_MAGNITUDES:
            cond = sp.StrictLessThan(big, sp.Float(m, 17))
            pw = sp.Piecewise((c.expr, cond), (self.expr, True))
            g = self.score(pw, c.history + (Step("regime_split", c.expr, pw, c.expr, pw, str(cond)),))
            if g is not None and _worth_a_branch(g, best_exact) and self.acceptable(g):
                return g
        return None

    def _covering(self, best_exact: Cand):
        """The best parametric series where it converges and ``best_exact`` elsewhere, when the
        series beats ``best_exact`` and no split of the candidates does (:func:`covering_series`)."""
        series = [c for c in self.pool() if not c.exact and parametric_terms(c.expr) is not None]
        if not series or series[0].score > best_exact.score - MIN_REGIME_GAIN:
            return None
        _, lead, last = parametric_terms(series[0].expr)
        return covering_series(series[0].expr, best_exact.expr, lead, last)

    def split_suffices(self) -> bool:
        """Does a regime split of the forms found already serve every region, so that a series
        would only spend the budget?  (log(exp(x) - 1): log(expm1(x)) near 0, x + log1p(-exp(-x))
        beyond.)  Within ``SERIES_ABOVE`` on the mean and ``SERIES_SPARE`` bits at every point: the
        mean alone is not enough (GELU' keeps 9 bits at 4 % of its points)."""
        rc = self.regime(self.ranked()[1], probe=True)
        return rc is not None and rc.score <= SERIES_ABOVE and all(
            b.max(initial=0.0) <= SERIES_SPARE for b in rc.bits.values())

    def choose(self) -> Cand:
        ok, best_exact = self.ranked()
        final = list(ok)
        if best_exact.score > 0.05 and not (self.timed_out and self.exhausted):
            rc = self.regime(best_exact)
            if rc is not None:
                final = [rc] + final
        if final and self.allow_series:
            sat = self.saturated(final[0])
            if sat is not None:
                final = [sat] + final
        for c in final:
            if c is self.orig:
                return c
            self.charge("verify")
            if equivalent(self.expr, c.expr, self.vars, self.domain):
                return c
        return self.orig


def _worth_a_branch(split: Cand, single: Cand) -> bool:
    """Is a regime split worth its branch over the best single formula?

    It must lower the mean error by ``MIN_REGIME_GAIN`` bits, or bring clearly more
    points within 2 ulps (at least 2, and 5% of those over).  A smaller gain is
    sampling noise: the split would add a branch and a formula for nothing.
    """
    if split.score > single.score - 1e-9:
        return False
    if split.score <= single.score - MIN_REGIME_GAIN:
        return True
    over = lambda c: sum(int(np.count_nonzero(b > TWO_ULPS + 1e-9)) for b in c.bits.values())  # noqa: E731
    n_single, n_split = over(single), over(split)
    return n_single - n_split >= max(2, 0.05 * n_single)


def _complements(base, pool, k):
    """Up to ``k`` candidates of ``pool`` that most lower the pointwise minimum error of ``base``.

    Regimes combine candidates that are each accurate on a different region; a
    series at infinity has a poor mean (it is useless near 0) but may be the only
    form within 2 ulps for large inputs.  Ranking by mean alone would keep it out
    of the regime search, so the picks are completed greedily by their marginal
    gain (deterministic: ties go to the pool order).
    """
    dts = sorted(base[0].bits, key=str)
    cur = {dt: np.min([_pen(c.bits[dt]) for c in base], axis=0) for dt in dts}
    names = {c.expr for c in base}
    out = []
    for _ in range(k):
        best, gain = None, 1e-9
        for c in pool:
            if c.expr in names:
                continue
            g = sum(float(np.sum(np.maximum(cur[dt] - _pen(c.bits[dt]), 0.0))) / max(len(cur[dt]), 1)
                    for dt in dts)
            if g > gain:
                best, gain = c, g
        if best is None:
            break
        out.append(best)
        names.add(best.expr)
        cur = {dt: np.minimum(cur[dt], _pen(best.bits[dt])) for dt in dts}
    return out


def _repairing(base, pool) -> list:
    """The candidate of ``pool`` within 2 ulps at most of the points where every one of ``base``
    loses more than ``REPAIR_BITS`` (none if it repairs fewer than 2 points).

    A form exact where the others cancel but NaN where they are merely inaccurate ranks low on
    every mean, so it is never expanded: the combined quotient ``y*(b*x - a*y)/(hypot(a, b)*
    (x**2 + y**2)**(3/2))`` of a cosine similarity's derivative, which underflows at tiny inputs
    until ``pair_divide`` rewrites it.  Herbie keeps every program that is best at some point for
    the same reason (Panchekha et al. 2015, its candidate table); this keeps one per round.
    """
    if not base:
        return []
    lost = {dt: np.min([b.bits[dt] for b in base], axis=0) > REPAIR_BITS for dt in base[0].bits}
    if not any(m.sum() >= 2 for m in lost.values()):
        return []
    names = {c.expr for c in base}
    gain = lambda c: sum(int(np.count_nonzero(lost[dt] & (c.bits[dt] <= TWO_ULPS + 1e-9))) for dt in lost)  # noqa: E731
    best = max((c for c in pool if c.expr not in names), key=gain, default=None)
    return [best] if best is not None and gain(best) >= 2 else []


def _pen(bits):
    return bits + 0.5 * np.maximum(bits - 1.5849625007211563, 0.0)


def _tree_size(expr, limit: int) -> int:
    """Number of tree nodes of ``expr``, counting stops at ``limit``."""
    n = 0
    for _ in sp.preorder_traversal(expr):
        n += 1
        if n >= limit:
            break
    return n


def _cond_bits(fn, row) -> float:
    """log2(1 + sum_i |x_i f_i / f|) at one point, by relative perturbations of 2**-80 at 320 bits."""
    args = [mpmath.mpf(float(v)) for v in row]
    with mpmath.workprec(320):
        f0 = fn(args)
        if type(f0) is not mpmath.mpf or not mpmath.isfinite(f0):
            return 0.0
        if not f0:
            return 64.0
        h = mpmath.ldexp(1, -80)
        k = mpmath.mpf(0)
        for j in range(len(args)):
            if not args[j]:
                continue
            check_deadline()  # one evaluation per input at 320 bits: 24 inputs take a while
            a2 = list(args)
            a2[j] = args[j] * (1 + h)
            f1 = fn(a2)
            if type(f1) is not mpmath.mpf or not mpmath.isfinite(f1):
                return 64.0
            k += abs(f1 - f0) / (h * abs(f0))
    return float(min(mpmath.log(1 + k, 2), 64))
