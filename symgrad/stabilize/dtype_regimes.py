"""Regimes decided per dtype: a split stays in a dtype's kernel only where it gains there.

The search scores a regime split on float64 and float32 points together
(:func:`~.regimes.best_split`, :func:`~.search._worth_a_branch`), so a split can win by what
it gains in one dtype while it gains nothing in the other: the Rosenbrock gradient's
three-way split on ``x[1:]`` is worth 0.4 bits in float32 and 0.0 bits in float64.  A branch
is not free in the kernel: a select on every element, the pieces it needs, and a loop LLVM may
no longer vectorise.  So once the form is accepted (:mod:`.accept`), each dtype of the kernel
decides for itself: the split stays in dtype ``d`` when, on the check sample (fresh and
ordinary points, :func:`~.accept.check_samples`, plus the search's own points) evaluated as the
``d`` kernel computes it,

* its mean error is at least :data:`~.search.MIN_REGIME_GAIN` bits below the best single
  form's, or
* it brings clearly more points within 2 ulps (at least 2, and 5% of the single form's
  points beyond 2 ulps), or
* it overflows (NaN/inf where the reference is finite) at fewer points.

Before that, each dtype moves the split's thresholds to where its own kernel needs them
(:mod:`.thresholds`: the search fitted one threshold for both dtypes on a sample with few
points where it matters), kept when the check sample and the never-worse check agree.

Nor does a split give way to a single form that passes the never-worse check only through its
conditioning excuse (:attr:`~.accept.Verdict.strict`) when the split passes without it.

Otherwise dtype ``d`` computes the best single form -- the unsplit form the search had before
the split, or one of the split's exact pieces (series pieces are valid on their interval
only) -- provided that form also passes the never-worse check (:func:`~.accept.verdict`) in
``d``.  Only the regime the stabiliser made is decided: a Piecewise whose conditions occur in
the formula as written (the user's ``np.where``) is semantics, not a regime.

Reference:
    Panchekha et al. (2015), "Automatically improving accuracy for floating point
    expressions", PLDI, sec. 4.5 (regimes are kept only where they pay for their branch).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from .accept import kernel_bits, the_check_samples, verdict
from .accuracy import MAX_BITS, Sample
from .budget import StabilizeBudgetExceeded, deadline_passed, hard_deadline, share_of_time_left
from .result import RewriteRecord
from .regimes import TWO_ULPS
from .search import MIN_REGIME_GAIN
from .thresholds import refine_thresholds

__all__ = ["decide_regimes", "RECORD_PREFIX", "THRESHOLDS_PREFIX"]

RECORD_PREFIX = "regime_not_in_"  # record name: regime_not_in_float64 / regime_not_in_float32
THRESHOLDS_PREFIX = "regime_thresholds_"  # the split with this dtype's own thresholds (:mod:`.thresholds`)


def _is_regime(orig: sp.Expr, form: sp.Expr) -> bool:
    """``form`` is a top-level Piecewise the stabiliser made (no condition of it occurs in ``orig``)."""
    if not isinstance(form, sp.Piecewise) or form == orig:
        return False
    conds = [p.cond for p in form.args if p.cond is not sp.true]
    return bool(conds) and not any(orig.has(c) for c in conds)


def _singles(form: sp.Piecewise, single) -> list:
    """The one-formula alternatives to the split: the unsplit form, then the exact pieces."""
    from .transforms import series_variable

    out = [single] if single is not None and not isinstance(single, sp.Piecewise) else []
    for p in form.args:
        e = p.expr
        if isinstance(e, sp.Piecewise) or series_variable(e) is not None:
            continue
        out.append(e)
    return list(dict.fromkeys(out))


def _stats(bits: np.ndarray, dt: str) -> tuple[float, int, int, float]:
    """(mean bits, points beyond 2 ulps, points that overflow, max bits)."""
    if not len(bits):
        return 0.0, 0, 0, 0.0
    return (float(bits.mean()), int(np.count_nonzero(bits > TWO_ULPS + 1e-9)),
            int(np.count_nonzero(bits >= MAX_BITS[np.dtype(dt)])), float(bits.max()))


REFINE_SHARE = 0.25  # of the CPU time left, at most, for one dtype's thresholds (references at built points)


def _moved(orig, form, widen, variables, domain, s: Sample):
    """:func:`.thresholds.refine_thresholds` of ``form`` in ``s.dtype``, or None (also when the forms
    cannot be evaluated at the built points, or the refinement needs more than ``REFINE_SHARE`` of
    the time left before the caller's deadline: the search's thresholds then stand, and the steps
    after it keep their time).

    Raises:
        StabilizeBudgetExceeded: the caller's own deadline passed.
    """
    try:
        with hard_deadline(share_of_time_left(REFINE_SHARE)):
            return refine_thresholds(orig, form, widen, variables, domain, s)
    except StabilizeBudgetExceeded:
        if deadline_passed():  # the caller's deadline, not this refinement's share
            raise
        return None
    except Exception:  # noqa: BLE001 - an optional refinement
        return None


def _no_worse(moved, split) -> bool:
    """Are the moved thresholds (:func:`_stats` tuple) no worse than the search's on the check sample:
    no more overflows, no more points beyond 2 ulps, and a mean at most 0.01 bit higher?"""
    return moved[2] <= split[2] and moved[1] <= split[1] and moved[0] <= split[0] + 0.01


def _gains(split, single) -> bool:
    """Does the split measurably gain over ``single`` (both :func:`_stats` tuples) in one dtype?"""
    m_split, o_split, n_split, _ = split
    m_one, o_one, n_one, _ = single
    return (m_split <= m_one - MIN_REGIME_GAIN or o_one - o_split >= max(2, 0.05 * o_one) or n_split < n_one)


def decide_regimes(orig: sp.Expr, form: sp.Expr, widen: bool, variables: Sequence[sp.Symbol],
                   domain: Mapping | None, dtypes: Sequence[str], seen: dict | None = None, single=None,
                   check=None):
    """Which form each dtype's kernel computes when ``form`` is a regime split.

    Args:
        orig: the formula as written (the never-worse reference).
        form: the accepted form; only a top-level Piecewise the stabiliser made is decided.
        widen: float32 kernels compute in float64 and round once (scored that way).
        variables: input symbols (ordered).
        domain: ``{symbol: (lo, hi)}`` or None, as given to :func:`symgrad.stabilize.stabilize`.
        dtypes: dtype names (``"float64"``, ``"float32"``).
        seen: ``{dtype: Sample}``, the search's own sample (checked too).
        single: the best one-formula form before the split, if the search made it.
        check: gives the check sample instead of :func:`~.accept.check_samples` (see
            :func:`~.accept.accept`).

    Returns:
        ``({dtype: form}, [RewriteRecord])``: the form of every dtype in ``dtypes`` (``form``
        itself, or ``form`` with that dtype's own thresholds, where the split gains), one
        ``regime_thresholds_<dtype>`` record per dtype whose thresholds moved, and one
        ``regime_not_in_<dtype>`` record per dtype that computes a single form instead (bits:
        before and after, on the check sample of that dtype).  ``({}, [])`` when ``form`` is not a
        regime split or every dtype keeps it unchanged; also when a form cannot be evaluated
        (the split is then kept as accepted).

    Raises:
        StabilizeBudgetExceeded: the program's hard CPU deadline passed (the caller's budget).
    """
    if not _is_regime(orig, form):
        return {}, []
    alts = _singles(form, single)
    try:
        samples = the_check_samples(orig, variables, domain, dtypes, check)
        if seen:
            samples = {dt: Sample(s.dtype, np.concatenate([s.X, seen[dt].X]), np.concatenate([s.ref, seen[dt].ref]))
                       if dt in seen else s for dt, s in samples.items()}
        forms, records = {}, []
        for dt in map(str, dtypes):
            s = samples.get(dt)
            forms[dt] = form
            if s is None or not len(s.X):
                continue
            split, here = form, _stats(kernel_bits(form, widen, variables, s), dt)
            moved = _moved(orig, form, widen, variables, domain, s)
            if moved is not None:  # this dtype's own thresholds (float32's exp overflows at 88.7, float64's at 709.8)
                there = _stats(kernel_bits(moved, widen, variables, s), dt)
                v = verdict(orig, moved, widen, variables, {dt: s})
                if _no_worse(there, here) and v.ok and (v.strict or not verdict(orig, form, widen, variables,
                                                                                {dt: s}).strict):
                    records.append(RewriteRecord(f"{THRESHOLDS_PREFIX}{dt}", form, moved,
                                                 {dt: (here[0], here[3], there[0], there[3])},
                                                 " ; ".join(str(p.cond) for p in moved.args[:-1]), form, moved))
                    split, here = moved, there
                    forms[dt] = moved
            if not alts:
                continue
            scored = sorted(((_stats(kernel_bits(a, widen, variables, s), dt), k) for k, a in enumerate(alts)),
                            key=lambda t: (t[0][2], t[0][1], t[0][0], t[1]))
            st, k = scored[0]  # the best single form: the split stays unless it fails to gain over it
            if _gains(here, st):
                continue
            one = verdict(orig, alts[k], widen, variables, {dt: s})
            if not one.ok or (not one.strict and verdict(orig, split, widen, variables, {dt: s}).strict):
                continue  # the split keeps the points where the formula as written is within 1 ulp
            forms[dt] = alts[k]
            records.append(RewriteRecord(f"{RECORD_PREFIX}{dt}", split, alts[k],
                                         {dt: (here[0], here[3], st[0], st[3])}, None, split, alts[k]))
    except StabilizeBudgetExceeded:
        raise
    except Exception:  # noqa: BLE001 - a form the evaluators cannot handle: the split stays as accepted
        return {}, []
    if not records:
        return {}, []
    return forms, records
