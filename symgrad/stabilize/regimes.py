"""Regime inference: branch on one quantity when no single candidate wins everywhere.

Points of all dtypes are sorted by one input or one difference of two inputs; with prefix sums of each
candidate's error the best split into two or three contiguous segments (each
served by one candidate) is found exactly in O(n) per candidate tuple.  The
threshold between two segments is then refined by bisection on the float line
between the neighbouring sample points (comparing both candidates against the
exact reference) and rounded to the shortest decimal inside the bracket.

With several inputs, a candidate must also stay finite where the inputs differ widely in
magnitude (:func:`_magnitude_stress`): such points where it is NaN/inf and another form is
finite and nonzero cost it heavily, and the split found is checked on a second, larger set of
them; a piece that fails inside its own segment bans its candidate and the split is found again
(:func:`_failing_pieces`).  A random sample of four inputs rarely holds two tiny ones next to two
moderate ones, where ``(x^2 + y^2)^(3/2)`` underflows.

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating
    point expressions", PLDI, sec. 4.5 (regime inference).
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import sympy as sp

from .accuracy import ulp_bits
from .numeric import compile_numpy, may_be_real
from .reference import compile_mpmath, reference_values

__all__ = ["best_split", "covering_series", "flatten_regimes", "grid_between", "shortest_between"]


def shortest_between(lo: float, hi: float) -> float:
    """A short decimal ``t`` with ``lo < t <= hi``."""
    for d in range(1, 18):
        t = float(f"{hi:.{d}g}")
        if lo < t <= hi:
            return t
    return hi


def _bisect(a, b, lo, hi, row, j, orig, variables):
    """Move the A|B threshold inside (lo, hi] by bisection on float64 values of variable j."""
    fa = compile_numpy(a, variables, "float64")
    fb = compile_numpy(b, variables, "float64")
    fo = compile_mpmath(orig, variables)
    for _ in range(8):
        mid = lo / 2 + hi / 2
        if not (lo < mid < hi):
            break
        X = np.array([row], dtype=np.float64)
        X[0, j] = mid
        ref = reference_values(fo, X, "float64")
        ea, eb = ulp_bits(fa(X), ref)[0], ulp_bits(fb(X), ref)[0]
        if ea <= eb:
            lo = mid
        else:
            hi = mid
    return lo, hi


REFINE_POINTS = 48


def grid_between(lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` levels strictly inside (lo, hi): geometric when the interval keeps one sign and spans
    more than a factor 4 (e.g. (0.1, 30) covered per binade), linear otherwise."""
    with np.errstate(all="ignore"):  # (geomspace up to 1.8e308 overflows in its last step)
        if np.sign(lo) == np.sign(hi) != 0 and max(abs(lo), abs(hi)) > 4 * min(abs(lo), abs(hi)):
            g = np.sign(hi) * np.geomspace(abs(lo), abs(hi), n + 2)
        elif np.isfinite(hi - lo):
            g = np.linspace(lo, hi, n + 2)
        else:  # (-1e308, 1e308): in halves, whose difference is finite
            g = np.linspace(lo / 2, hi / 2, n + 2) * 2
    g = np.sort(g)[1:-1]
    return np.unique(g[(g > lo) & (g < hi)])


def _refine(a, b, lo, hi, orig, variables):
    """Narrow the A|B bracket (lo, hi] with a dense grid: sample neighbours can be far apart.

    Points are spaced geometrically when the bracket does not contain 0 and spans
    more than a factor 4 (so e.g. (0.1, 30) is covered per binade), linearly
    otherwise.  The cut minimising the (penalised) bits of A left of it plus B right
    of it is kept, and the bracket shrinks to the two grid points around it.
    """
    if not (np.isfinite(lo) and np.isfinite(hi)) or not lo < hi:
        return lo, hi
    g = grid_between(lo, hi, REFINE_POINTS)
    if not len(g):
        return lo, hi
    X = g[:, None].astype(np.float64)
    ref = reference_values(compile_mpmath(orig, variables), X, "float64")
    ok = np.isfinite(ref)
    if not ok.any():
        return lo, hi
    with np.errstate(all="ignore"):
        ea = _penalised(ulp_bits(compile_numpy(a, variables, "float64")(X), ref))
        eb = _penalised(ulp_bits(compile_numpy(b, variables, "float64")(X), ref))
    ea, eb = np.where(ok, ea, 0.0), np.where(ok, eb, 0.0)
    # cut after k grid points: A on g[:k], B on g[k:]
    cost = np.concatenate([[0.0], np.cumsum(ea)]) + np.concatenate([np.cumsum(eb[::-1])[::-1], [0.0]])
    k = int(np.argmin(cost))
    new_lo = g[k - 1] if k > 0 else lo
    new_hi = g[k] if k < len(g) else hi
    return float(new_lo), float(new_hi)


def _fit_series(exprs, thresholds, vmin, vmax, v):
    """Re-expand each series-at-0 piece for the interval it serves (and keep it accurate there).

    The candidate series were sized for a default radius; inside a regime the
    piece is used on [t_lo, t_hi] (sample extremes at the open ends), so its order
    is chosen for R = max(|t_lo|, |t_hi|): fewer terms for a small interval, more
    for a large one.  If even the capped expansion is not accurate up to R, the
    bounding thresholds are pulled in to the radius it does reach.
    """
    from .transforms import adaptive_series, series_source
    exprs, thresholds = list(exprs), list(thresholds)
    for n, e in enumerate(exprs):
        src = series_source(e)
        if src is None:
            continue
        lo = thresholds[n - 1] if n > 0 else vmin
        hi = thresholds[n] if n < len(thresholds) else vmax
        R = max(abs(lo), abs(hi))
        if not np.isfinite(R) or R <= 0:
            continue
        try:
            new, reach = adaptive_series(src[0], src[1], R, two_sided=lo < 0)
        except Exception:  # noqa: BLE001 - keep the candidate as scored
            continue
        exprs[n] = new
        if reach < R:
            r = float(f"{reach:.3g}")
            r = r if r <= reach else float(np.nextafter(reach, 0))
            new_lo = max(lo, -r) if n > 0 else lo
            new_hi = min(hi, r) if n < len(thresholds) else hi
            if new_lo < new_hi:
                if n > 0:
                    thresholds[n - 1] = new_lo
                if n < len(thresholds):
                    thresholds[n] = new_hi
    return exprs, thresholds


MAX_PENALTY = 0.5  # weight of the bits above 2 ulps in the regime cost
TWO_ULPS = float(np.log2(3.0))


def _penalised(bits: np.ndarray) -> np.ndarray:
    return bits + MAX_PENALTY * np.maximum(bits - TWO_ULPS, 0.0)


TRUNCATION_TOL = 2.0 ** -54  # last kept term / leading term where a series is trusted (half an ulp)


def covering_series(series, exact, lead, last):
    """``series`` wherever its last kept term is below half an ulp of its leading term,
    ``exact`` elsewhere.

    :func:`best_split` compares splits with the best single candidate, series included, so a
    series accurate at every sample point is never split off: it wins alone.  A truncated
    series cannot stand alone, and with several inputs the region where it converges is not
    an interval of one input (``d/dt`` of Hamming's problem 3.4.2 is ``(a + b) t/6 + ...``
    for ``|a t|, |b t|`` small, whatever ``t`` is).  The series itself measures that at run
    time: when its last kept term is negligible against the leading one, the omitted terms
    are smaller still (the usual stopping test of a series summation; Herbie chooses its
    series regimes on sampled error instead, which cannot describe such a region).

    Returns ``(piecewise, condition_str)``.
    """
    cond = sp.LessThan(sp.Abs(last), sp.Float(TRUNCATION_TOL) * sp.Abs(lead))
    return sp.Piecewise((series, cond), (exact, sp.true)), str(cond)


MODERATE_EXPONENTS = np.array([-10, -3, -1, 0, 1, 3, 10])
FAR_EXPONENTS = np.array([-300, -200, -150, -100, -50, 50, 100, 150, 200, 300])
STRESS_POINTS = 1024
FAILED_PENALTY = 1e4  # bits charged for a stress point where a candidate is NaN/inf and another is finite


def _magnitude_stress(samples, dts, variables, orig, n: int = STRESS_POINTS, seed: int = 20261129) -> np.ndarray:
    """float64 points whose inputs differ widely in magnitude (``+-m 10^e``: each input, with
    probability 1/2, at the point's moderate exponent, else at its far one), kept inside the box
    the samples span (the domain, as sampled) and where ``orig`` may be real (:func:`.numeric.may_be_real`).

    A random sample of several inputs rarely holds the point that breaks a piece: over every
    float, the piece ``(x^2 + y^2)^(3/2)`` of a cosine-similarity gradient, taken for
    ``max|input| < 1e13``, underflows to NaN wherever x and y are both below 1e-103 and a or b
    is not, and 256 sample points held none such in that range.  Deterministic (fixed seed)."""
    n_vars = len(variables)
    cols = np.concatenate([samples[dt].X.astype(np.float64) for dt in dts])
    if n_vars < 2 or not len(cols):
        return np.empty((0, n_vars))
    rng = np.random.default_rng(seed)
    shape = (n, n_vars)
    common = rng.choice(MODERATE_EXPONENTS, (n, 1))  # some inputs of a point share a moderate
    far = rng.random(shape) < 0.5  # magnitude, the others (each with probability 1/2) a far one
    e = np.where(far, rng.choice(FAR_EXPONENTS, (n, 1)), common).astype(np.float64)
    X = rng.choice([-1.0, 1.0], shape) * rng.uniform(1.0, 10.0, shape) * 10.0 ** e
    X = X[np.all((X >= cols.min(axis=0)) & (X <= cols.max(axis=0)), axis=1)]
    return X[may_be_real(orig, variables, X)] if len(X) else X


def _stress_losses(cands, variables, X: np.ndarray) -> np.ndarray:
    """``[candidate, point]``: is the candidate NaN or inf at a stress point where another is
    finite and not 0?

    No reference is computed (these points need mpmath more often than not); a finite, nonzero
    value of another form stands for it.  A 0 does not: at b = -1e200 the quadratic formula's
    conjugate ``-2c/(b + sqrt(b^2 - 4ac))`` is 0, and the root is 1e200."""
    vals = np.empty((len(cands), len(X)))
    with np.errstate(all="ignore"):
        for k, (expr, _) in enumerate(cands):
            vals[k] = np.broadcast_to(np.asarray(compile_numpy(expr, variables, "float64")(X), dtype=np.float64),
                                      (len(X),))
    return ~np.isfinite(vals) & (np.isfinite(vals) & (vals != 0)).any(axis=0)


def _split_keys(variables, samples, dts, extra=None):
    """Quantities a regime may branch on, with their values at the sample points (all dtypes).

    Each input, and for two to four inputs each pairwise difference ``v_i - v_j``: the
    accuracy of ``log(exp(x) + exp(y))`` and its derivatives depends on ``x - y``, not on
    either input, so a split on one input cannot separate the regimes (the issue's
    ``hessian(lse)`` at (80, 50) and (90, 50)).  Differences are formed in float64 from the
    sample values (exact for the ordering that matters).  ``extra``: further points (the
    magnitude stress points of :func:`best_split`), after the samples'.
    """
    blocks = [samples[dt].X.astype(np.float64) for dt in dts] + ([extra] if extra is not None else [])
    cols = [np.concatenate([X[:, j] for X in blocks]) for j in range(len(variables))]
    keys = [(v, cols[j]) for j, v in enumerate(variables)]
    if 2 <= len(variables) <= 4:
        with np.errstate(all="ignore"):
            for i, j in itertools.combinations(range(len(variables)), 2):
                d = cols[i] - cols[j]
                if np.all(np.isfinite(d)):
                    keys.append((variables[i] - variables[j], d))
        # the largest input magnitude: a form as written (exp(x)/(exp(x) + exp(y))) is the most accurate
        # where no input is large, and a shifted form (sigmoid(x - y)) where one is -- a split on one
        # input would hand (19, 720) to the form that overflows
        keys.append((sp.Max(*[sp.Abs(v) for v in variables]), np.max(np.abs(np.stack(cols)), axis=0)))
    return keys


def _fewer_over(cands, samples, dts, variables, costs, best, keys=None, single=None, stress=None) -> bool:
    """Does the split leave fewer points beyond 2 ulps than the best single candidate (``single``,
    the index :func:`best_split` compares with; default the lowest cost)?

    A split whose mean gain is below ``min_gain`` is still worth its branch when it
    brings points back within 2 ulps (e.g. a cancellation-free form near the root
    of a derivative, which overflows far from it).
    """
    over = np.concatenate([np.stack([c[1][dt] for c in cands]) > TWO_ULPS + 1e-9 for dt in dts]
                          + ([stress] if stress is not None else []), axis=1)
    single = int(np.argmin(costs.sum(axis=1))) if single is None else single
    _, j, ids, cuts = best
    vals = keys[j][1] if keys is not None else np.concatenate([samples[dt].X[:, j].astype(np.float64) for dt in dts])
    order = np.argsort(vals, kind="stable")
    bounds = [0, *cuts, len(order)]
    n_split = sum(int(over[ids[k], order[bounds[k]:bounds[k + 1]]].sum()) for k in range(len(ids)))
    return n_split < int(over[single].sum())


MAX_BANS = 3  # candidates banned from a split, at most, before it is taken as it is
CHECK_SEED = 20261130


def _best_segments(keys, costs):
    """``(cost, key index, candidate ids, cut indices)`` of the cheapest 2- or 3-segment split over
    every key (``costs``: ``[candidate, point]``, the points in the order of the keys' values), or
    None.  Exact in O(n) per candidate pair or triple, by prefix sums, the pairs and triples of one
    key at once (a loop over triples in Python took 70 % of a three-input search, Hamming's expq3).
    Ties within 1e-12 go to the first key, two segments before three, then the first candidates
    in lexicographic order."""
    K, best = costs.shape[0], None
    if K < 2:
        return None
    off = ~np.eye(K, dtype=bool)  # a != b
    for j, (v, vals) in enumerate(keys):
        order = np.argsort(vals, kind="stable")
        sv, C = vals[order], costs[:, order]
        P = np.concatenate([np.zeros((K, 1)), np.cumsum(C, axis=1)], axis=1)
        tot = P[:, -1:]
        valid = np.concatenate([[False], sv[1:] > sv[:-1], [False]])
        # two[a, b, i]: a on the first i points, b on the rest
        two = np.where(valid, (P[:, None, :] + tot[None, :, :]) - P[None, :, :], np.inf)
        at2 = np.argmin(two, axis=2)
        val2 = np.take_along_axis(two, at2[:, :, None], axis=2)[:, :, 0]
        for a, b in zip(*np.nonzero(off & (val2 < (best[0] - 1e-12 if best else np.inf)))):  # in order
            if best is None or val2[a, b] < best[0] - 1e-12:
                best = (val2[a, b], j, (int(a), int(b)), (int(at2[a, b]),))
        # three[a, b, c, k2]: a, then b up to k2, then c; a's cut is the best one before k2
        left = np.where(valid, P[:, None, :] - P[None, :, :], np.inf)  # [a, b, i]
        run = np.minimum.accumulate(left, axis=2)
        val3, at3 = np.empty((K, K, K)), np.empty((K, K, K), dtype=np.intp)
        for b in range(K):
            three = np.where(valid, ((run[:, b, None, :] + P[b]) + tot[None, :, :]) - P[None, :, :], np.inf)
            at3[:, b, :] = np.argmin(three, axis=2)
            val3[:, b, :] = np.take_along_axis(three, at3[:, b, :, None], axis=2)[:, :, 0]
        ok = off[:, :, None] & off[None, :, :] & (val3 < (best[0] if best else np.inf) - 1e-12)
        for a, b, c in map(tuple, np.argwhere(ok).tolist()):  # lexicographic order
            if not val3[a, b, c] < (best[0] if best else np.inf) - 1e-12:
                continue
            k2 = int(at3[a, b, c])
            i1 = int(np.argmin(np.where(valid[:k2 + 1], left[a, b, :k2 + 1], np.inf)))
            if 0 < i1 < k2:
                best = (val3[a, b, c], j, (a, b, c), (i1, k2))
    return best


def _failing_pieces(best, keys, variables, X: np.ndarray, lost: np.ndarray) -> list[int]:
    """Candidates of ``best``'s pieces that are NaN/inf, where another candidate is finite, at a
    point of the check sample ``X`` (``lost``: its :func:`_stress_losses`) inside their own segment.

    The split is chosen between the first stress sample's failures; where a candidate's failures
    depend on inputs other than the split quantity (tiny x and y, any a and b), a segment can
    fall between them and still hold many: a second, larger sample finds them."""
    _, j, ids, cuts = best
    key_expr, vals = keys[j]
    with np.errstate(all="ignore"):
        kv = np.broadcast_to(np.asarray(compile_numpy(key_expr, variables, "float64")(X), dtype=np.float64),
                             (len(X),))
    sv = np.sort(vals, kind="stable")
    edges = [-np.inf] + [sv[c] for c in cuts] + [np.inf]
    return sorted({k for n, k in enumerate(ids) if np.any(lost[k] & (kv >= edges[n]) & (kv < edges[n + 1]))})


def best_split(cands: Sequence[tuple[sp.Expr, dict]], samples: dict, variables, orig, min_gain=0.1,
               alone=None):
    """Best 2/3-segment regime over the candidates.

    Args:
        cands: ``[(expr, {dtype: per-point bits})]``.
        samples: ``{dtype: Sample}`` (same points the bits refer to).
        variables: input symbols.
        orig: original expression (exact reference for threshold refinement).
        min_gain: minimal improvement in mean bits (averaged over dtypes).
        alone: optional ``[bool]`` per candidate: may it serve every input alone?  A split is
            compared with the best of those (default: all).  A truncated series accurate at
            every sample point cannot stand alone (the search never returns one), yet as the
            best single candidate it made every split look worthless: d/dx of
            ``(x - sin x)/(x - tan x)`` on (1e-8, 1.5), whose exact forms are NaN near 0, kept
            one of them.

    Returns:
        ``(piecewise_expr, condition_str, gain)`` or None.
    """
    dts = sorted(samples, key=str)
    K = len(cands)
    if K < 2 or not variables:
        return None
    # mean bits, plus a small penalty on the excess over 2 ulps (log2(3) bits): between
    # candidates with about the same mean, the one that keeps every point within 2 ulps wins
    costs = np.concatenate([_penalised(np.stack([c[1][dt] for c in cands])) / max(len(samples[dt].X), 1)
                            / len(dts) for dt in dts], axis=1)
    # Points of widely different input magnitudes where a candidate is NaN/inf and another is not:
    # FAILED_PENALTY bits each (issue 16, point 1: no NaN/inf where the value is finite); where no
    # candidate fails there they are left out.  The split found is then checked on more such
    # points, and a piece failing inside its own segment bans its candidate (see _failing_pieces).
    Xs = _magnitude_stress(samples, dts, variables, orig)
    stress = _stress_losses(cands, variables, Xs) if len(Xs) else None
    if stress is None or not stress.any():
        Xs, stress = None, None
    else:  # only the points some candidate fails at: the others cost every candidate nothing
        keep = stress.any(axis=0)
        Xs, stress = Xs[keep], stress[:, keep]
        n_ref = max(len(samples[dts[0]].X), 1) * len(dts)
        costs = np.concatenate([costs, np.where(stress, FAILED_PENALTY / n_ref, 0.0)], axis=1)
    totals = costs.sum(axis=1)
    standalone = np.asarray(alone, dtype=bool) if alone is not None and any(alone) else np.ones(K, dtype=bool)
    single = int(np.flatnonzero(standalone)[np.argmin(totals[standalone])])
    best_single = totals[single]
    keys = _split_keys(variables, samples, dts, Xs)
    best, check_lost = _best_segments(keys, costs), None
    if best is not None and stress is not None:
        check = _magnitude_stress(samples, dts, variables, orig, n=4 * STRESS_POINTS, seed=CHECK_SEED)
        check_lost = _stress_losses(cands, variables, check) if len(check) else None
    for _ in range(MAX_BANS):
        if best is None or check_lost is None:
            break
        banned = _failing_pieces(best, keys, variables, check, check_lost)
        if not banned:
            break
        costs = costs.copy()
        costs[banned] += FAILED_PENALTY  # per point: the candidate serves no segment
        best = _best_segments(keys, costs)
    if best is None or best_single - best[0] <= 1e-9:
        return None
    if best_single - best[0] < max(min_gain, 0.1 * best_single) and not _fewer_over(
            cands, samples, dts, variables, costs, best, keys, single, stress):
        return None
    cost, j, ids, cuts = best
    v = keys[j][0]
    vals = np.sort(keys[j][1], kind="stable")
    v64 = np.sort(samples["float64"].X[:, j].astype(np.float64)) if "float64" in samples and j < len(variables) \
        else vals
    thresholds = []
    for n, i in enumerate(cuts):
        lo, hi = vals[i - 1], vals[i]
        if len(variables) == 1:
            # refine between the float64 neighbours of the cut: float32 points of the other dtype
            # can sit right next to it (float32 forms stop being accurate much earlier), and the
            # float64 refinement must be free to move the threshold to where float64 needs it
            k = int(np.searchsorted(v64, hi))
            if 0 < k < len(v64):
                lo, hi = min(lo, v64[k - 1]), max(hi, v64[k])
            lo, hi = _refine(cands[ids[n]][0], cands[ids[n + 1]][0], lo, hi, orig, variables)
            lo, hi = _bisect(cands[ids[n]][0], cands[ids[n + 1]][0], lo, hi, [0.0], 0, orig, variables)
        thresholds.append(shortest_between(lo, hi))
    exprs = [cands[k][0] for k in ids]
    if v in variables:  # series pieces are re-fitted for the interval of their own variable
        exprs, thresholds = _fit_series(exprs, thresholds, float(vals[0]), float(vals[-1]), v)
    pieces = [(exprs[n], sp.StrictLessThan(v, sp.Float(t, 17))) for n, t in enumerate(thresholds)]
    pieces.append((exprs[-1], sp.true))
    pw = sp.Piecewise(*pieces)
    cond = " ; ".join(str(p[1]) for p in pieces[:-1])
    return pw, cond, float(best_single - cost)


def _upper(cond, v):
    """The threshold t of a regime condition ``v < t`` (inf for True), or None for any other condition."""
    if cond is sp.true:
        return float("inf")
    if isinstance(cond, sp.StrictLessThan) and cond.lhs == v and cond.rhs.is_Number:
        return float(cond.rhs)
    return None


def flatten_regimes(pw: sp.Expr, v: sp.Symbol) -> sp.Expr:
    """A split on ``v`` whose pieces are splits on ``v`` themselves, as one Piecewise.

    ``Piecewise((Piecewise((a, v < -0.7), (s, v < 0.7), (b, True)), v < 823.5), (0, True))`` becomes
    ``Piecewise((a, v < -0.7), (s, v < 0.7), (b, v < 823.5), (0, True))``: the same function, one
    chain of comparisons, and each piece's regime decided per dtype (:mod:`.dtype_regimes`) as one
    split.  Any other condition leaves ``pw`` as it is."""
    if not isinstance(pw, sp.Piecewise):
        return pw
    out, lo = [], float("-inf")
    for e, c in pw.args:
        hi = _upper(c, v)
        if hi is None:
            return pw
        subs = list(e.args) if isinstance(e, sp.Piecewise) else [(e, sp.true)]
        if any(_upper(sc, v) is None for _, sc in subs):
            return pw
        for se, sc in subs:
            top = _upper(sc, v)
            if top <= lo:
                continue  # never reached on [lo, hi)
            out.append((se, min(top, hi)))
            if top >= hi:
                break
        lo = hi
    merged = []
    for e, t in out:
        if merged and merged[-1][0] == e:
            merged[-1] = (e, t)
        else:
            merged.append((e, t))
    pieces = [(e, sp.StrictLessThan(v, sp.Float(t, 17))) for e, t in merged[:-1]] + [(merged[-1][0], sp.true)]
    return sp.Piecewise(*pieces) if len(pieces) > 1 else pieces[0][0]
