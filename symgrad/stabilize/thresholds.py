"""Regime thresholds refined per dtype on points built at the quantity the regime branches on.

:func:`~.regimes.best_split` places a threshold between two neighbouring points of the
search's sample, scored on float64 and float32 points together.  For a function of one input
it then refines the cut on a dense grid of that input (:func:`~.regimes._refine`).  For several
inputs the quantity is a difference ``x - y`` or the largest magnitude ``max |x_i|``, and a
bit-pattern sample has few points where it matters: the derivative of ``log(exp(a) + exp(b))``
by ``b`` is served by ``exp(b)/(exp(a) + exp(b))`` where no input is large and by
``sigmoid(b - a)`` where one is.  The written form is exact in float64 up to
``max |a|, |b| = 709.78`` (where ``exp`` overflows) and in float32 up to 88.72, while the shifted
form loses ``log2 |b - a|`` bits to the rounding of ``b - a``.  About 1 % of a bit-pattern
sample has ``max(|a|, |b|)`` in (49, 709), so the split landed at 48.88 for both dtypes, and
the float64 kernel lost up to 5 bits at (100, 1.00000001).

So once a split is accepted, each dtype moves each of its thresholds to where that dtype's
kernel needs it.  Points are built at chosen levels ``t`` of the quantity from rows of the
sample: a row's input gets ``t``; or ``x_i = x_j + t``; or the row's largest input becomes
``+-t`` (one large input among ordinary ones) and, separately, the whole row is scaled to
``max |x_k| = t``.  The levels are a grid over the interval between the neighbouring
thresholds (sample extremes at the ends) together with the moderate magnitudes inside it, then
finer grids around the best cut.  The cut minimises the bits of the left piece on the points
below it plus those of the right piece on the points above it, over the built points and the
sample's own, as the ``dtype`` kernel computes them (a point beyond 2 ulps costs 2 bits more);
ties keep the threshold the search chose.  This is Herbie's threshold refinement (a binary
search between the sample points around a regime boundary), made dense and carried to
quantities of several inputs.

Reference:
    Panchekha et al. (2015), "Automatically improving accuracy for floating point
    expressions", PLDI, sec. 4.5 (regime inference and the refinement of its boundaries).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import sympy as sp

from .accept import kernel_bits
from .accuracy import Sample
from .numeric import compile_numpy
from .reference import compile_mpmath, reference_values
from .regimes import TWO_ULPS, grid_between, shortest_between
from .sampling import domain_bounds

__all__ = ["refine_thresholds"]

LEVELS = 32  # levels of the quantity per grid
ROWS = 6  # sample rows each level is built from
PASSES = 4  # grids per threshold: 32 levels, then 16 inside the best bracket, ...
NARROW = 0.01  # a bracket this narrow (relative) is final
MIN_MOVE_GAIN = 2.0  # bits summed over the points a threshold must gain to move (more than ulp noise)
OVER_COST = 2.0  # bits a point beyond 2 ulps costs on top of its error
MODERATE = (1e-6, 60.0)  # inputs of ordinary rows (the check's ordinary tuples, :mod:`.accept`)
MODERATE_LEVELS = np.concatenate([[0.0], np.geomspace(1e-6, 1e4, 41)])  # a factor 1.78 apart


def _splits(form) -> tuple[sp.Expr, list[float]] | None:
    """``(quantity, thresholds)`` when every condition of ``form`` but the last is ``quantity < t``
    with one quantity and increasing Float thresholds; else None."""
    if not isinstance(form, sp.Piecewise) or len(form.args) < 2 or form.args[-1].cond is not sp.true:
        return None
    key, ts = None, []
    for p in form.args[:-1]:
        # SymPy merges neighbouring pieces with one formula: (e, q < t1), (e, q < t2) -> (e, q < t1 | q < t2)
        conds = p.cond.args if isinstance(p.cond, sp.Or) else (p.cond,)
        if not all(isinstance(c, sp.StrictLessThan) and c.rhs.is_Float for c in conds):
            return None
        if len({c.lhs for c in conds} | ({key} if key is not None else set())) != 1:
            return None
        key = conds[0].lhs
        ts.append(max(float(c.rhs) for c in conds))
    return (key, ts) if all(a < b for a, b in zip(ts, ts[1:])) else None


def _builder(key, variables):
    """``build(rows, t) -> X``: the rows moved to level ``t`` of ``key`` (an input, a difference of
    two inputs, or the largest input magnitude), or None for another quantity."""
    vs = list(variables)
    if key in vs:
        j = vs.index(key)

        def at_input(rows, t):
            X = rows.copy()
            X[:, j] = t
            return X
        return at_input
    if isinstance(key, sp.Add) and len(key.args) == 2:
        coeffs = dict(key.as_coefficients_dict())
        if sorted(coeffs.values()) == [-1, 1] and all(s in vs for s in coeffs):
            i = vs.index(next(s for s, c in coeffs.items() if c == 1))
            j = vs.index(next(s for s, c in coeffs.items() if c == -1))

            def at_difference(rows, t):
                X = rows.copy()
                X[:, i] = X[:, j] + t
                return X
            return at_difference
    if isinstance(key, sp.Max) and all(isinstance(a, sp.Abs) and a.args[0] in vs for a in key.args):
        cols = [vs.index(a.args[0]) for a in key.args]

        def at_magnitude(rows, t):
            # each row twice: its largest input set to +-t (the others kept where they are below t:
            # one large input among ordinary ones, where a shifted form rounds x_k - max), and the
            # whole row scaled to max |x_k| = t (the row's proportions kept)
            X = rows[:, cols]
            m = np.max(np.abs(X), axis=1)
            big = np.argmax(np.abs(X), axis=1)
            lone = X.copy()
            lone[np.arange(len(X)), big] = np.where(X[np.arange(len(X)), big] < 0, -t, t)
            lone = lone[m <= t]
            with np.errstate(all="ignore"):
                scaled = X * (t / np.where(m > 0, m, np.nan))[:, None]
            out = np.repeat(rows[:1], len(lone) + len(scaled), axis=0) if len(rows) else rows.copy()
            out[:len(lone)] = rows[m <= t]
            out[len(lone):] = rows
            out[:, cols] = np.concatenate([lone, scaled])
            return out
        return at_magnitude
    return None


def _fitted(piece: sp.Expr) -> bool:
    """Is ``piece`` a truncated series (sized for the interval it serves, :func:`~.regimes._fit_series`)
    or a series with its own truncation test?  Its thresholds stay where the search put them."""
    from .transforms import series_variable
    return series_variable(piece) is not None or piece.has(sp.Piecewise)


def _cost(bits: np.ndarray) -> np.ndarray:
    """Bits of error plus :data:`OVER_COST` at a point beyond 2 ulps: the never-worse check counts those."""
    return bits + OVER_COST * (bits > TWO_ULPS + 1e-9)


def _spread(X: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Up to :data:`ROWS` rows of ``X`` evenly spread over the sorted ``keys``."""
    if not len(X):
        return X
    order = np.argsort(keys, kind="stable")
    pick = np.unique(np.linspace(0, len(order) - 1, min(ROWS, len(order))).round().astype(int))
    return X[order[pick]]


def _levels(lo: float, hi: float, n: int) -> np.ndarray:
    """The first grid: :func:`~.regimes.grid_between` over (lo, hi) and the moderate magnitudes
    :data:`MODERATE_LEVELS` (of both signs) inside it: a bracket such as (0.14, 1.8e308) has its thresholds where
    ``exp`` overflows (709.78 in float64, 88.72 in float32), not spread over 308 decades."""
    g = np.concatenate([grid_between(lo, hi, n), MODERATE_LEVELS, -MODERATE_LEVELS])
    return np.unique(g[(g > lo) & (g < hi)])


class _Refiner:
    """Scores two neighbouring pieces at built points of one dtype (references paid once per point)."""

    def __init__(self, orig, widen, variables, domain, sample: Sample, key):
        self.widen, self.vars, self.s = widen, list(variables), sample
        self.dt = np.dtype(sample.dtype)
        self.build = _builder(key, variables)
        self.key_fn = compile_numpy(key, variables, np.float64)
        self.ref_fn = compile_mpmath(orig, variables)
        self.bounds = [domain_bounds(v, domain, self.dt) for v in variables]
        keys = self.key_of(sample.X)
        X = sample.X.astype(np.float64)
        with np.errstate(all="ignore"):
            moderate = np.all((np.abs(X) <= MODERATE[1]) & ((np.abs(X) >= MODERATE[0]) | (X == 0)), axis=1)
        # rows of ordinary inputs (where a threshold between two good forms is decided) and rows of the
        # whole sample, each evenly spread over the quantity
        self.rows = np.concatenate([_spread(X[moderate], keys[moderate]), _spread(X, keys)])
        self.sample_keys = keys

    def key_of(self, X) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(self.key_fn(np.asarray(X, dtype=np.float64)), dtype=np.float64)

    def points(self, levels) -> Sample:
        """Built points at ``levels`` inside the domain, with finite references."""
        with np.errstate(all="ignore"):
            X = np.concatenate([self.build(self.rows, t) for t in levels]).astype(self.dt)
        ok = np.all(np.isfinite(X), axis=1)
        for j, (lo, hi) in enumerate(self.bounds):
            ok &= (X[:, j] >= lo) & (X[:, j] <= hi)
        X = np.unique(X[ok], axis=0)
        ref = reference_values(self.ref_fn, X, self.dt) if len(X) else np.zeros(0, self.dt)
        fin = np.isfinite(ref)
        return Sample(self.dt, X[fin], ref[fin])

    def scored(self, a, b, pts: Sample) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(quantity, cost of A, cost of B)`` at the points of ``pts``, sorted by the quantity."""
        k = self.key_of(pts.X)
        order = np.argsort(k, kind="stable")
        ea = _cost(kernel_bits(a, self.widen, self.vars, pts))
        eb = _cost(kernel_bits(b, self.widen, self.vars, pts))
        return k[order], ea[order], eb[order]

    def own(self, lo, hi) -> Sample:
        """The sample's own points with the quantity in (lo, hi)."""
        inside = (self.sample_keys > lo) & (self.sample_keys < hi)
        return Sample(self.dt, self.s.X[inside], self.s.ref[inside])

    def cut(self, a, b, lo, hi, t0, levels, evidence: list) -> tuple[float, float]:
        """The bracket ``(l, h]`` of the best A|B cut in ``(lo, hi)`` on the points built at
        ``levels`` and the sample's own points there; ties keep the cut nearest to ``t0``.  The
        built points' scores are appended to ``evidence``."""
        grid, own = self.points(levels), self.own(lo, hi)
        pts = Sample(self.dt, np.concatenate([grid.X, own.X]), np.concatenate([grid.ref, own.ref]))
        if not len(pts.X):
            return lo, hi
        k, ea, eb = self.scored(a, b, pts)
        evidence.append(self.scored(a, b, grid) if len(grid.X) else (k[:0], ea[:0], eb[:0]))
        keep = (k > lo) & (k < hi)
        k, ea, eb = k[keep], ea[keep], eb[keep]
        if not len(k):
            return lo, hi
        # a cut after position i (A serves k[:i]); only between distinct key values
        cost = np.concatenate([[0.0], np.cumsum(ea)]) + np.concatenate([np.cumsum(eb[::-1])[::-1], [0.0]])
        valid = np.concatenate([[True], k[1:] > k[:-1], [True]])
        cost = np.where(valid, cost, np.inf)
        best = np.flatnonzero(cost <= cost.min() + 1e-9)
        i = int(best[np.argmin(np.abs(best - np.searchsorted(k, t0)))])
        return (float(k[i - 1]) if i > 0 else lo), (float(k[i]) if i < len(k) else hi)

    def gain(self, a, b, lo, hi, t0, t, evidence: list) -> float:
        """Bits the cut at ``t`` saves over the cut at ``t0``, on every point scored in (lo, hi)."""
        own = self.own(lo, hi)
        parts = evidence + ([self.scored(a, b, own)] if len(own.X) else [])
        if not parts:
            return 0.0
        k, ea, eb = (np.concatenate(c) for c in zip(*parts))
        inside = (k > lo) & (k < hi)
        k, ea, eb = k[inside], ea[inside], eb[inside]

        def cost(c):
            return float(ea[k < c].sum() + eb[k >= c].sum())
        return cost(t0) - cost(t)


def refine_thresholds(orig: sp.Expr, form: sp.Expr, widen: bool, variables: Sequence[sp.Symbol],
                      domain, sample: Sample) -> sp.Expr | None:
    """``form`` with each regime threshold moved to where the ``sample.dtype`` kernel needs it.

    Args:
        orig: the formula as written (the exact reference).
        form: a regime split from :func:`~.regimes.best_split`: a Piecewise whose conditions are
            ``q < t_1``, ``q < t_2``, ... on one quantity ``q`` (an input, a difference of two
            inputs, or ``Max(|x_1|, ...)``).
        widen: float32 kernels compute in float64 and round once (scored that way).
        variables: input symbols (ordered as the columns of ``sample.X``).
        domain: ``{symbol: (lo, hi)}`` or None; built points stay inside it.
        sample: points of one dtype with finite references (the check sample and the search's own).

    Returns:
        The Piecewise with the refined thresholds, or None when ``form`` is not such a split,
        ``form`` has one input (:func:`~.regimes.best_split` refines those on a dense grid of
        it), the sample is empty, or no threshold moved.  A threshold next to a series piece stays
        (the series was sized for its interval).

    Raises:
        StabilizeBudgetExceeded: the program's hard CPU deadline passed (from the evaluations).
    """
    split = _splits(form)
    if split is None or not len(sample.X) or len(variables) < 2:
        return None  # (one input: best_split refined its thresholds on a dense grid already)
    key, ts = split
    if _builder(key, variables) is None:
        return None
    r = _Refiner(orig, widen, variables, domain, sample, key)
    sk = r.sample_keys[np.isfinite(r.sample_keys)]
    if not len(sk):
        return None
    pieces = [p.expr for p in form.args]
    new = list(ts)
    for n, t0 in enumerate(ts):
        lo = new[n - 1] if n > 0 else min(float(sk.min()), t0)
        hi = ts[n + 1] if n + 1 < len(ts) else max(float(sk.max()), t0)
        if not lo < hi:
            continue
        a, b = pieces[n], pieces[n + 1]
        if _fitted(a) or _fitted(b):
            continue
        lo2, hi2, evidence = lo, hi, []
        for p in range(PASSES):  # zoom in on the cut
            levels = _levels(lo2, hi2, LEVELS) if p == 0 else grid_between(lo2, hi2, LEVELS // 2)
            bracket = r.cut(a, b, lo2, hi2, t0, levels, evidence)
            if bracket == (lo2, hi2) or not bracket[0] < bracket[1]:
                break
            lo2, hi2 = bracket
            if hi2 - lo2 <= NARROW * max(abs(lo2), abs(hi2)):
                break
        t = shortest_between(lo2, hi2) if lo2 < hi2 else t0
        # a move must pay on all the points scored, by more than the ulp noise of two good forms
        if lo < t < hi and r.gain(a, b, lo, hi, t0, t, evidence) > MIN_MOVE_GAIN:
            new[n] = t
    if new == ts:
        return None
    return sp.Piecewise(*[(e, sp.StrictLessThan(key, sp.Float(t, 17))) for e, t in zip(pieces, new)],
                        (pieces[-1], sp.true))
