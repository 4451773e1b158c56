"""Candidate search: rewrite, localise, branch, choose and verify.

The loop follows Herbie's structure with our own components:

1. sample inputs and compute correctly rounded references (:mod:`accuracy`);
2. beam search: from the best few candidates, apply every identity of
   :mod:`rewrites` at every subexpression, plus a greedy saturation chain, and
   algebraic transformations / series at the subexpressions with the largest
   *local* error (:mod:`localize`, :mod:`transforms`);
3. regime inference over the best candidates (:mod:`regimes`);
4. choose the lowest mean bits of error (mean over dtypes), ties to the
   cheaper ``count_ops``; reject candidates more than 1 bit worse than the
   original at points where the original was accurate, and anything that fails
   the high-precision equivalence check (:mod:`verify`).

Everything iterates over lists in a fixed order and all randomness comes from
a seeded generator, so results are deterministic.

References:
    Panchekha, Sanchez-Stern, Wilcox & Tatlock (2015), "Automatically improving
    accuracy for floating point expressions", PLDI.
    Higham (2002), "Accuracy and Stability of Numerical Algorithms".
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .accuracy import make_sample, point_bits
from .localize import local_errors
from .regimes import best_split
from .rewrites import RULES
from .transforms import algebraic_variants, series_variants
from .verify import equivalent

__all__ = ["Cand", "Search"]


@dataclass
class Cand:
    """A scored candidate and the chain of steps that produced it."""
    expr: sp.Expr
    bits: dict
    score: float
    cost: int
    history: tuple  # ((name, before, after, regime), ...)
    exact: bool = True  # False for series approximations (only usable inside regimes)

    def key(self):
        return (round(self.score, 6), self.cost, str(self.expr))


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


class Search:
    """One stabilisation run (state shared by the phases)."""

    def __init__(self, expr, variables, domain, budget_s, dtypes, seed, n_points, beam=5, rounds=4):
        self.t0 = time.perf_counter()
        self.expr, self.vars, self.domain = expr, list(variables), domain
        self.budget_s, self.beam, self.rounds = budget_s, beam, rounds
        self.exhausted = False
        self.samples = {dt: make_sample(expr, self.vars, dt, domain=domain, n=n_points, seed=seed)
                        for dt in dtypes}
        self.seen: dict = {}
        self.orig = self.score(expr, ())

    # -- bookkeeping -------------------------------------------------------
    def out_of_time(self) -> bool:
        if time.perf_counter() - self.t0 > self.budget_s:
            self.exhausted = True
        return self.exhausted

    def score(self, expr, history, exact=True):
        k = sp.srepr(expr)
        if k in self.seen:
            return self.seen[k]
        try:
            bits = {dt: point_bits(expr, self.vars, s) for dt, s in self.samples.items()}
        except Exception:  # noqa: BLE001 - a candidate the evaluator cannot handle is dropped
            self.seen[k] = None
            return None
        score = float(np.mean([b.mean() if len(b) else 0.0 for b in bits.values()]))
        c = Cand(expr, bits, score, int(sp.count_ops(expr)), history, exact)
        self.seen[k] = c
        return c

    def acceptable(self, c: Cand) -> bool:
        """Never worse than the original by > 1 bit where the original was accurate (<= 1 bit)."""
        for dt, ob in self.orig.bits.items():
            good = ob <= 1.0
            if np.any(c.bits[dt][good] > np.maximum(ob[good], 1.0) + 1.0):
                return False
        return True

    # -- generation ---------------------------------------------------------
    def children(self, c: Cand):
        out = []
        for path, node in list(positions(c.expr)):
            for rule in RULES:
                try:
                    news = rule.apply(node)
                except Exception:  # noqa: BLE001 - a rule that cannot handle a node just skips it
                    continue
                for new in news:
                    e = replace_at(c.expr, path, new)
                    out.append((e, c.history + ((rule.name, c.expr, e, None),), True))
            if self.out_of_time():
                break
        return out

    def saturate(self, c: Cand, max_steps=6):
        """Greedy chain: repeatedly take the best-scoring single rewrite, even if temporarily worse."""
        cur = c
        for _ in range(max_steps):
            if self.out_of_time():
                break
            scored = [self.score(e, h) for e, h, _ in self.children(cur)]
            scored = [s for s in scored if s is not None and s.expr != cur.expr
                      and all(s.expr != h[1] for h in cur.history)]
            if not scored:
                break
            cur = min(scored, key=Cand.key)
        return cur

    def localized(self, c: Cand, top=2):
        """Algebraic variants (and series) at the nodes with the largest local error, and at the root."""
        out = []
        worst = {}
        for dt, s in self.samples.items():
            for err, node in local_errors(c.expr, self.vars, s, c.bits[dt], n_points=12):
                worst[node] = worst.get(node, 0.0) + err
        nodes = sorted(worst, key=lambda n: (-worst[n], str(n)))[:top]
        nodes += [c.expr] if c.expr not in nodes else []
        for node in nodes:
            if self.out_of_time():
                break
            path = next(p for p, n in positions(c.expr) if n == node)
            for name, new in algebraic_variants(node):
                e = replace_at(c.expr, path, new)
                out.append((e, c.history + ((name, c.expr, e, None),), True))
            if c.score < 0.05 or node in self.series_done or not self.vars:
                continue
            self.series_done.add(node)
            for name, new in series_variants(node):
                e = replace_at(c.expr, path, new)
                out.append((e, c.history + ((name, c.expr, e, None),), False))
        return out

    # -- main loop ----------------------------------------------------------
    def run(self) -> Cand:
        frontier, expanded = [self.orig], set()
        self.series_done = set()
        best = self.orig.key()
        for _ in range(self.rounds):
            for i, c in enumerate(frontier):
                expanded.add(str(c.expr))
                kids = self.children(c)
                if i == 0 and not self.out_of_time():
                    kids += self.localized(c)
                for e, h, exact in kids:
                    self.score(e, h, exact)
                if i == 0 and not self.out_of_time():
                    self.saturate(c)
                if self.out_of_time():
                    break
            pool = self.pool()
            exact = [c for c in pool if c.exact]
            if self.out_of_time() or (exact and exact[0].key() == best and exact[0].score < 0.05):
                break
            best = exact[0].key() if exact else best
            frontier = [c for c in pool if str(c.expr) not in expanded][:self.beam]
            if not frontier:
                break
        return self.choose()

    def pool(self):
        cs = [c for c in self.seen.values() if c is not None]
        cs.sort(key=Cand.key)
        return cs

    def choose(self) -> Cand:
        pool = self.pool()
        exact = [c for c in pool if c.exact]
        ok = [c for c in exact if self.acceptable(c)]
        best_exact = [c for c in ok if c.score <= ok[0].score + 1e-9] if ok else [self.orig]
        # regimes over a few of the best candidates (series included)
        picks, seen = [], set()
        for c in [self.orig] + exact[:4] + [c for c in pool if not c.exact][:3]:
            if str(c.expr) not in seen:
                seen.add(str(c.expr))
                picks.append(c)
        final = sorted(ok, key=Cand.key)
        if len(picks) > 1 and (best_exact[0].score > 0.05 or not ok):
            split = best_split([(c.expr, c.bits) for c in picks], self.samples, self.vars, self.expr)
            if split is not None:
                pw, cond, _ = split
                base = best_exact[0]
                rc = self.score(pw, base.history + (("regime_split", base.expr, pw, cond),))
                if rc is not None and self.acceptable(rc) and rc.score < base.score - 1e-9:
                    final = [rc] + final
        for c in final:
            if c.score > self.orig.score + 1e-9:
                break
            if c is self.orig or equivalent(self.expr, c.expr, self.vars, self.domain):
                return c
        return self.orig
