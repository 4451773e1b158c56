"""Final acceptance: the stabilised form is never worse than the formula as written.

The search scores candidates on its own sample and excuses some regressions by the
conditioning of the problem (:meth:`~.search.Search.acceptable`).  This last check
does not excuse anything.  On points the search never saw -- a fresh bit-pattern
sample and a grid of *ordinary* inputs (``+-[1e-6, 60]``, a few large values, and
for several inputs, tuples of those and nearly equal tuples) -- it compares, per
dtype, the chosen form as the kernel computes it (float32 in float64 when widened)
with the formula as written (the derived expression before any rewrite) evaluated
in the same dtype.  The chosen form passes when

* its mean error is at most ``MEAN_SLACK`` (half a bit) above the original's, and
* at every point where the original is within 1 ulp, it is within 2 ulps, or within
  the conditioning bound there (see :func:`_lost`).

A form that passes only through that excuse (some point where the original is within 1 ulp
and the form is beyond 2 ulps, within the conditioning bound) is split with the original when
a split passes without the excuse: the formula as written then serves the interval where it
is within 1 ulp (softsign' at x = 1.01: 0 ulps as written, 3 as searched), the searched form
the rest.  The split must give the original an interval (``MIN_SERVED`` of the points, not a
sliver around one point), and is not made where the float64 form loses ``MIN_LOSS_BITS`` or more
somewhere: the double-double step (:mod:`.ddregion`) takes such a form and repairs every point,
and cannot see into a split.  Otherwise the form stands.

A form that fails is repaired: if it is a regime split, a piece that fails is
replaced by the original formula or by another piece (whichever loses fewest
points, then has the lowest error, on that piece's points; on each dtype's points apart when
that serves float64 better: a piece may overflow in float32 only); otherwise, or if that
is not enough, the original serves the interval where it is better (a regime split
between the two, on one input or one difference of inputs).  If no repair passes,
the formula as written is kept -- unless it overflows (NaN/inf where the reference is
finite) at more check points than the searched form, whose mean error is not worse:
then reverting would bring the NaN back, and the searched form is kept with a note
giving the points it loses (the issue's point 1 asks for both; where they conflict the
NaN is the larger harm, and the note makes the trade visible).

Why a grid of ordinary inputs: a bit-pattern sample almost never lands on 0.1 or
22000, where a series piece past its radius or a branch threshold placed between
two far-apart sample points loses 20-30 bits (the issue's
``grad(lambda x: np.exp(x)/(1 + np.exp(x))**2)(0.1)``).

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating point
    expressions", PLDI, sec. 6 (evaluation on fresh samples).
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", sec. 1.6.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import sympy as sp

from symgrad.ir.ddprogram import dd_regions_enabled

from .accuracy import MAX_BITS, Sample, ulp_bits
from .budget import check_deadline
from .numeric import compile_numpy
from .reference import compile_mpmath, reference_values
from .ddregion import MIN_LOSS_BITS
from .regimes import best_split
from .search import _cond_bits
from .sampling import domain_bounds, sample_points
from .result import evaluate_result

__all__ = ["check_points", "check_samples", "the_check_samples", "verdict", "accept", "Verdict", "MEAN_SLACK"]

MEAN_SLACK = 0.5  # bits of mean error the chosen form may lose against the original
MIN_SERVED = 0.05  # share of the check's points the formula as written serves in a split made for strictness
ONE_ULP = 1.0 + 1e-9
TWO_ULPS = float(np.log2(3.0)) + 1e-9
SEED = 27182
N_FRESH = 48  # bit-pattern points per dtype (the search saw a different sample)
N_TUPLES = 48  # ordinary tuples per dtype for functions of several inputs
_MAG = np.unique(np.concatenate([np.geomspace(1e-6, 60.0, 30), np.linspace(0.05, 8.0, 12),
                                 [100.0, 710.0, 1000.0, 22000.0, 1e8]]))
ORDINARY = np.concatenate([-_MAG[::-1], [0.0], _MAG])


def _ordinary(variables, domain, dt, rng) -> np.ndarray:
    k = len(variables)
    bounds = [domain_bounds(v, domain, dt) for v in variables]
    if k == 1:
        X = ORDINARY[:, None]
    else:
        X = rng.choice(ORDINARY, size=(N_TUPLES, k))
        near = X[: N_TUPLES // 4].copy()  # nearly equal inputs: cancellation of differences
        near[:, 1:] = near[:, :1] * (1 + 10.0 ** rng.uniform(-12, -1, (len(near), k - 1)))
        big = rng.choice([-1e5, -1000.0, -710.0, -100.0, 100.0, 710.0, 1000.0, 1e5], size=(N_TUPLES // 2, 1))
        shifted = big + rng.uniform(-60, 60, (len(big), k))  # large inputs, ordinary differences
        lone = rng.uniform(-60, 60, size=(N_TUPLES // 2, k))
        lone[np.arange(len(lone)), rng.integers(0, k, len(lone))] = rng.choice([-1000.0, -710.0, 710.0, 1000.0],
                                                                               len(lone))
        # one input where its exp overflows (> 709.78) while the result can still be a normal number, the
        # others ordinary: exp(x)/(exp(x) + exp(y)) is 0 at (19, 720), the truth e^(x - y) = 3.6e-305
        edge = np.repeat(np.array([[-20.0], [0.0], [19.0]]), k, axis=1)
        edge = np.concatenate([np.where(np.arange(k) == j, s * 720.0, edge) for j in range(k) for s in (1, -1)])
        X = np.concatenate([X, near, shifted, lone, edge])  # lone: one large input among ordinary ones
    with np.errstate(all="ignore"):
        X = X.astype(dt)
    ok = np.all([(X[:, j] >= lo) & (X[:, j] <= hi) for j, (lo, hi) in enumerate(bounds)], axis=0)
    return X[ok]


_CACHE: dict = {}


def check_points(variables: Sequence[sp.Symbol], domain: Mapping | None, dtype) -> np.ndarray:
    """The check's points of ``dtype``: ``N_FRESH`` bit-pattern points and the ordinary grid or tuples
    (deterministic: seeded by ``SEED`` and the dtype), duplicates removed."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng([SEED, dt.itemsize])
    X = np.concatenate([sample_points(variables, domain, dt, N_FRESH, rng), _ordinary(variables, domain, dt, rng)])
    return np.unique(X, axis=0)


def check_samples(orig: sp.Expr, variables: Sequence[sp.Symbol], domain: Mapping | None,
                  dtypes: Sequence[str]) -> dict:
    """``{dtype: Sample}`` of fresh and ordinary points (:func:`check_points`) with finite
    references of ``orig``."""
    key = (sp.srepr(orig), tuple(map(str, variables)), repr(sorted((str(k), v) for k, v in (domain or {}).items())),
           tuple(dtypes))
    if key in _CACHE:
        return _CACHE[key]
    fn = compile_mpmath(orig, variables)
    out = {}
    for dt in dtypes:
        dt = np.dtype(dt)
        X = check_points(variables, domain, dt)
        ref = reference_values(fn, X, dt)
        ok = np.isfinite(ref)
        out[str(dt)] = Sample(dt, X[ok], ref[ok])
    if len(_CACHE) > 500:
        _CACHE.clear()
    _CACHE[key] = out
    return out


def the_check_samples(orig, variables, domain, dtypes, check: Callable[[], dict] | None) -> dict:
    """``check()`` restricted to ``dtypes`` when given, else :func:`check_samples`."""
    if check is None:
        return check_samples(orig, variables, domain, dtypes)
    given = check()
    return {str(np.dtype(dt)): given[str(np.dtype(dt))] for dt in dtypes if str(np.dtype(dt)) in given}


@dataclass(frozen=True)
class Verdict:
    """Outcome of the check for one form: ``ok`` and, per dtype, (mean orig, mean chosen, lost points).

    ``strict``: ``ok`` without the conditioning excuse of :func:`_lost` (every point where the
    original is within 1 ulp has the form within 2 ulps)."""
    ok: bool
    detail: dict
    strict: bool = False

    @property
    def mean_ok(self) -> bool:
        return all(mc <= mo + MEAN_SLACK for mo, mc, _ in self.detail.values())

    def why(self) -> str:
        parts = []
        for dt, (mo, mc, lost) in self.detail.items():
            if mc > mo + MEAN_SLACK or lost:
                parts.append(f"{dt}: mean {mo:.1f} -> {mc:.1f} bits, {lost} points within 1 ulp lost")
        return "; ".join(parts)


def kernel_bits(expr, widen, variables, s: Sample) -> np.ndarray:
    """Bits of error of ``expr`` at the points of ``s`` as the kernel computes it in ``s.dtype``
    (float32 through float64 when ``widen``); one value per point."""
    if not len(s.X):
        return np.zeros(0)
    check_deadline()  # the program's stabiliser budget (a no-op outside one)
    with np.errstate(all="ignore"):
        return ulp_bits(evaluate_result(expr, widen, variables, s.X, s.dtype), s.ref)


def _fails(ob: np.ndarray, cb: np.ndarray) -> np.ndarray:
    return (ob <= ONE_ULP) & (cb > TWO_ULPS)


def _lost(orig, variables, s: Sample, ob: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """Points where the original is within 1 ulp and the chosen form is beyond 2 ulps by more
    than the conditioning of the problem there allows (``log2(1 + kappa)`` bits, kappa the
    relative condition number of the exact function at the point).

    The softmax ``exp(x)/sum(exp(w))`` with its max-shift, for example, loses ``log2|x - max|``
    bits to the rounding of ``x - max``: no formula that takes those differences can be
    within 2 ulps there, and the unshifted formula is exact only by luck (it overflows
    elsewhere).  That excuse is the conditioning bound of the issue's point 5.
    """
    bad = _fails(ob, cb)
    if bad.any():
        fn = None
        for i in np.flatnonzero(bad):
            key = (orig, tuple(float(v) for v in s.X[i]))
            if key not in _COND:
                fn = fn or compile_mpmath(orig, variables)
                _COND[key] = _cond_bits(fn, s.X[i])
            if cb[i] <= TWO_ULPS + _COND[key]:
                bad[i] = False
    if len(_COND) > 20000:
        _COND.clear()
    return bad


_COND: dict = {}  # (orig, point) -> log2(1 + condition number): repairs ask for the same points again


def verdict(orig, chosen, widen, variables, samples: dict) -> Verdict:
    """Compare ``chosen`` (as the kernel computes it) with ``orig`` in each dtype of ``samples``."""
    detail, ok, strict = {}, True, True
    for dt, s in samples.items():
        ob = kernel_bits(orig, False, variables, s)
        cb = kernel_bits(chosen, widen, variables, s)
        if not len(ob):
            continue
        lost = int(np.count_nonzero(_lost(orig, variables, s, ob, cb)))
        detail[dt] = (float(ob.mean()), float(cb.mean()), lost)
        ok = ok and lost == 0 and cb.mean() <= ob.mean() + MEAN_SLACK
        strict = strict and ok and not _fails(ob, cb).any()
    return Verdict(ok, detail, ok and strict)


def _overflows(orig, chosen, widen, variables, samples: dict) -> tuple[int, int]:
    """(points where ``orig`` gives NaN/inf, points where ``chosen`` does), finite references only."""
    n_o = n_c = 0
    for dt, s in samples.items():
        top = MAX_BITS[np.dtype(dt)]
        n_o += int(np.count_nonzero(kernel_bits(orig, False, variables, s) >= top))
        n_c += int(np.count_nonzero(kernel_bits(chosen, widen, variables, s) >= top))
    return n_o, n_c


def _piece_index(pw: sp.Piecewise, variables, X) -> np.ndarray:
    """Index of the Piecewise piece that serves each row of ``X`` (float64 evaluation)."""
    ind = sp.Piecewise(*[(sp.Integer(k), c) for k, (_, c) in enumerate(pw.args)])
    return compile_numpy(ind, variables, np.float64)(np.asarray(X, dtype=np.float64)).astype(int)


def repair_regimes(orig, chosen, widen, variables, samples: dict, single=None):
    """Replace the pieces of a regime split that lose accuracy against ``orig``, or that
    overflow (NaN/inf where the reference is finite, or half the format's bits wrong: 0 for a
    normal number) where ``single`` does not.

    ``single`` is the best one-formula form the search found before it split regimes: a
    split fitted on a sample with few large-but-close inputs can hand ``(710, 10)`` to a
    piece that computes ``exp(710)``.  A piece that fails is replaced by the alternative
    (the original, ``single``, the other pieces) that loses no point on the points it
    serves, with the fewest overflows first (a few ulps at one point never justify a NaN
    elsewhere), then the fewest lost points, then the fewest points beyond 2 ulps where the
    formula as written is within 1 ulp even if the conditioning excuses them (``sigmoid(y - x)
    sigmoid(x - y)`` rounds ``x - y``: 21 ulps at (-25.5, 37.3), where ``exp(x) exp(y)/(exp(x) +
    exp(y))**2`` is exact and cannot overflow), then the lowest error.  Returns the new
    Piecewise, or None when ``chosen`` is not a Piecewise or nothing changed.
    """
    if not isinstance(chosen, sp.Piecewise):
        return None
    pieces = [p.expr for p in chosen.args]
    alts = list(dict.fromkeys([orig] + ([single] if single is not None else []) + pieces))
    idx = {dt: _piece_index(chosen, variables, s.X) for dt, s in samples.items()}
    ob = {dt: kernel_bits(orig, False, variables, s) for dt, s in samples.items()}
    alt_bits = [{dt: kernel_bits(a, widen, variables, s) for dt, s in samples.items()} for a in alts]
    # NaN/inf-level: half the bits of the format or more wrong (an overflow, or a result flushed to 0 where
    # the reference is a normal number: exp(19)/(exp(19) + exp(720)) is 0, the truth 3.6e-305)
    top = {dt: MAX_BITS[np.dtype(dt)] / 2 for dt in samples}
    new = list(pieces)
    for k, e in enumerate(pieces):
        def cost(bits):  # (overflows, lost points, strict failures, error) on this piece's points
            lost, over, strict, err = 0, 0, 0, 0.0
            for dt, s in samples.items():
                m = idx[dt] == k
                sub = Sample(s.dtype, s.X[m], s.ref[m])
                lost += int(np.count_nonzero(_lost(orig, variables, sub, ob[dt][m], bits[dt][m])))
                over += int(np.count_nonzero(bits[dt][m] >= top[dt]))
                strict += int(np.count_nonzero(_fails(ob[dt][m], bits[dt][m])))
                err += float(bits[dt][m].sum())
            return over, lost, strict, err
        costs = [cost(b) for b in alt_bits]
        here = costs[alts.index(e)]
        # overflow first: a few ulps at a point never justify NaN/inf elsewhere
        best = min(range(len(alts)), key=lambda j: (costs[j], j))
        if costs[best][:2] < here[:2]:
            new[k] = alts[best]
    if new == pieces:
        return None
    return sp.Piecewise(*[(n, p.cond) for n, p in zip(new, chosen.args)])


def _repaired_per_dtype(orig, chosen, fixed, widen, variables, samples: dict, single=None):
    """``(float64 form, {dtype: own form})`` when repairing ``chosen``'s pieces on each dtype's
    points alone serves float64 better than ``fixed`` (the repair on all dtypes' points), else None.

    A piece that overflows in float32 only is replaced for both kernels by the joint repair:
    ``exp(x) exp(y)/(exp(x) + exp(y))**2`` for max(|x|, |y|) in [22, 48.6) overflows float32's
    ``exp(48)**2``, and its replacement ``sigmoid(y - x) sigmoid(x - y)`` rounds ``x - y`` in float64
    too (21 ulps at (-25.5, 37.3), where the float64 form is exact).  Each dtype keeps its own
    repair when that passes the check in its dtype and has fewer float64 points beyond 2 ulps
    where the formula as written is within 1 ulp."""
    s64 = samples.get("float64")
    if len(samples) < 2 or s64 is None or not len(s64.X):
        return None
    forms = {dt: repair_regimes(orig, chosen, widen, variables, {dt: s}, single) or chosen
             for dt, s in samples.items()}
    if forms["float64"] == fixed:
        return None
    if not all(verdict(orig, f, widen, variables, {dt: samples[dt]}).ok for dt, f in forms.items()):
        return None
    ob = kernel_bits(orig, False, variables, s64)
    strict = [int(np.count_nonzero(_fails(ob, kernel_bits(f, widen, variables, s64)))) for f in (forms["float64"], fixed)]
    if strict[0] >= strict[1]:
        return None
    main = forms["float64"]
    return main, {dt: f for dt, f in forms.items() if f != main}


def split_with_original(orig, chosen, widen, variables, samples: dict):
    """A regime split between ``chosen`` and ``orig`` on the check sample, or None.

    Where the formula as written is accurate on a whole interval of some input (or
    difference of inputs) and the searched form is not, the original serves that
    interval (:func:`~.regimes.best_split`, any gain).
    """
    if widen:  # the kernel evaluates every piece the same way; the split is scored that way
        cands = [(e, {dt: kernel_bits(e, True, variables, s) for dt, s in samples.items()}) for e in (orig, chosen)]
    else:
        cands = [(e, {dt: kernel_bits(e, False, variables, s) for dt, s in samples.items()}) for e in (orig, chosen)]
    try:
        out = best_split(cands, samples, variables, orig, min_gain=0.0)
    except Exception:  # noqa: BLE001 - no split is an answer, not an error
        return None
    return None if out is None else out[0]


def _strictly(orig, chosen, widen, variables, samples: dict):
    """``chosen`` passes only through the conditioning excuse: a regime split between it and
    the formula as written that passes without the excuse, as ``accept`` returns it, or None."""
    s64 = samples.get("float64")
    if s64 is not None and len(s64.X) and dd_regions_enabled() \
            and kernel_bits(chosen, widen, variables, s64).max() >= MIN_LOSS_BITS:
        return None  # the double-double step takes it and repairs every point (GELU'); a split would hide it
    split = split_with_original(orig, chosen, widen, variables, samples)
    if split is None:
        return None
    served = sum(int(np.count_nonzero(np.isin(_piece_index(split, variables, s.X),
                                              [k for k, p in enumerate(split.args) if p.expr == orig])))
                 for s in samples.values())
    if served < MIN_SERVED * sum(len(s.X) for s in samples.values()):
        return None  # a sliver fitted to a point or two (d2/dx2 lse: x in [-710, -709.3)), not an interval
    v = verdict(orig, split, widen, variables, samples)
    if not v.strict:
        return None
    return split, widen, "never_worse: formula as written kept where it is within 1 ulp", {}


def accept(orig: sp.Expr, chosen: sp.Expr, widen: bool, variables: Sequence[sp.Symbol],
           domain: Mapping | None, dtypes: Sequence[str], seen: dict | None = None, single=None,
           check: Callable[[], dict] | None = None, may_widen: bool = False):
    """``(form, widen, note, own)``: ``chosen`` if it passes, a repaired regime split, ``chosen``
    in the dtypes where it passes with ``own`` (``{dtype: form}``) for the others
    (:func:`per_dtype`), or ``orig``.

    ``seen`` (``{dtype: Sample}``, the search's own sample) is checked too: its references
    are already paid for, and a repair must not be judged on the fresh points alone.
    ``single``: the best one-formula form before a regime split (see :func:`repair_regimes`).
    ``check``: gives the ``{dtype: Sample}`` to check on instead of :func:`check_samples` (the
    program pass's shared check points, :meth:`.triage.TriageResult.check_samples`).
    ``may_widen``: the float32 kernel may compute in float64 (scalar cores), though ``widen``
    was not proposed; only :func:`per_dtype` uses it.

    ``note`` is None when ``chosen`` passed, else one line saying what was repaired or
    reverted and why (the per-dtype mean bits and lost points on the check sample).
    """
    if chosen == orig and not widen:
        return chosen, widen, None, {}
    samples = the_check_samples(orig, variables, domain, dtypes, check)
    if seen:
        samples = {dt: Sample(s.dtype, np.concatenate([s.X, seen[dt].X]), np.concatenate([s.ref, seen[dt].ref]))
                   if dt in seen else s for dt, s in samples.items()}
    v = verdict(orig, chosen, widen, variables, samples)
    fixed = repair_regimes(orig, chosen, widen, variables, samples, single)
    if fixed is None and v.ok:
        if not v.strict:
            exact = _strictly(orig, chosen, widen, variables, samples)
            if exact is not None:
                return exact
        return chosen, widen, None, {}
    forms = [(chosen, v)]
    if fixed is not None:
        v2 = verdict(orig, fixed, widen, variables, samples)
        if v2.ok:
            why = v.why() or "a piece overflowed where the single best form does not"
            own = _repaired_per_dtype(orig, chosen, fixed, widen, variables, samples, single)
            if own is not None:
                return own[0], widen, f"never_worse: regime piece(s) replaced dtype by dtype ({why})", own[1]
            return fixed, widen, f"never_worse: regime piece(s) replaced ({why})", {}
        forms.insert(0, (fixed, v2))
    # nothing passes in full: the form that overflows least, if its mean is not worse and the
    # formula as written overflows more (reverting would bring NaN/inf back), is kept, and said so
    n_orig = _overflows(orig, orig, False, variables, samples)[0]
    keep = [(f, vv, _overflows(orig, f, widen, variables, samples)[1]) for f, vv in forms if vv.mean_ok]
    keep = [k for k in keep if k[2] < n_orig]
    if keep:
        f, vv, n = min(keep, key=lambda k: k[2])
        return f, widen, (f"never_worse: kept although {vv.why()}; the formula as written "
                          f"overflows at {n_orig} points of the check, this form at {n}"), {}
    split = split_with_original(orig, fixed if fixed is not None else chosen, widen, variables, samples)
    if split is not None and verdict(orig, split, widen, variables, samples).ok:
        return split, widen, f"never_worse: formula as written kept where it is better ({v.why()})", {}
    if widen:  # the form may be fine in float64 and only its float32 evaluation worse
        v3 = verdict(orig, chosen, False, variables, samples)
        if v3.ok:
            return chosen, False, f"never_worse: float32 kept in float32 ({v.why()})", {}
    own = per_dtype(orig, chosen, widen, variables, samples, may_widen)
    if own is None and split is not None:  # the split with the original, in the dtypes where it passes
        # (mish'': float64 passes split, float32 loses x = 60, where exp(x)**2 overflows in float32)
        own = per_dtype(orig, split, widen, variables, samples, may_widen,
                        what="searched form split with the formula as written")
    if own is not None:
        return own
    return orig, False, f"never_worse: reverted to the formula as written ({v.why()})", {}


def per_dtype(orig, chosen, widen, variables, samples: dict, may_widen: bool = False, what: str = "searched form"):
    """Acceptance dtype by dtype, when ``chosen`` fails the check in some dtypes only.

    A form that serves float64 and loses one float32 point under widening (mish'' in float32:
    mean 6.4 -> 4.9 bits, one point within 1 ulp lost) used to be reverted in both kernels,
    and float64 lost a form it needed (``mish''(60)`` = 0, the truth -3.6e-50).  Here each dtype
    that passes keeps ``chosen``; a dtype that fails computes the best of the alternatives that
    pass there, lowest mean error first: in float32, the formula as written or ``chosen``
    computed in float64 (when ``widen`` or ``may_widen``: the kernel may widen float32) or
    ``chosen`` in float32; in any dtype, the formula as written (which always passes).
    Widening is one flag for the whole float32 kernel, so it is on only when the float32
    choice uses it.  ``what`` names ``chosen`` in the note.

    Returns ``(float64 form, widen, note, {dtype: own form})`` or None when no dtype passes
    (or there is a single dtype: nothing to split).
    """
    if len(samples) < 2:
        return None
    ok = {dt: verdict(orig, chosen, widen, variables, {dt: s}) for dt, s in samples.items()}
    if not any(v.ok for v in ok.values()):
        return None
    forms, wide, why = {}, widen, []
    for dt, s in samples.items():
        if ok[dt].ok:
            forms[dt] = chosen
            continue
        why.append(ok[dt].why())
        opts = [(orig, False)]  # passes by definition
        if dt == "float32":
            wides = [(orig, True), (chosen, True)] if widen or may_widen else []
            opts = [o for o in wides + [(chosen, False)] if o != (chosen, widen)] + opts
        scored = [(f, w, verdict(orig, f, w, variables, {dt: s})) for f, w in opts]
        f, w, _ = min((t for t in scored if t[2].ok), key=lambda t: t[2].detail.get(dt, (0.0, 0.0, 0))[1])
        forms[dt] = f
        if dt == "float32":
            wide = w
    main = forms.get("float64", chosen)
    own = {dt: f for dt, f in forms.items() if f != main}
    kept = ", ".join(dt for dt, v in ok.items() if v.ok)
    alone = [f"{dt} computes {'the formula as written' if f == orig else 'the searched form'}"
             f"{(' in float64' if wide else ' in float32') if dt == 'float32' else ''}"
             for dt, f in forms.items() if not ok[dt].ok]
    return main, wide, f"never_worse: {what} kept in {kept}; {'; '.join(alone)} ({'; '.join(why)})", own
