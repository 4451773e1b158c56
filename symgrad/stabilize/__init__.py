"""Numerical stabilisation engine: find accurate floating-point forms by search.

Usage::

    from symgrad.stabilize import stabilize
    res = stabilize(sp.log(1 + sp.exp(x)), [x])
    res.expr            # softplus(x)
    for r in res.records: print(r.one_line())

The method follows Herbie (Panchekha et al., PLDI 2015): measure bits of error
against correctly rounded mpmath references on sampled inputs, localise error,
rewrite with a library of identities and algebraic transformations, infer
regimes and keep the most accurate verified candidate.  A final check
(:mod:`.accept`) compares that candidate with the formula as written on fresh
and ordinary inputs, per dtype, and repairs or reverts it when it is worse.

References:
    Panchekha, Sanchez-Stern, Wilcox & Tatlock (2015), "Automatically improving
    accuracy for floating point expressions", PLDI.
    Goldberg (1991), "What every computer scientist should know about
    floating-point arithmetic".
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", 2nd ed.
    Blanchard, Higham & Higham (2021), "Accurately computing the log-sum-exp and
    softmax functions", IMA J. Numer. Anal.
"""
from __future__ import annotations

import dataclasses

from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from symgrad.ir.ddprogram import dd_regions_enabled

from .accept import accept, the_check_samples, verdict
from .accuracy import Sample, bits_of_error_report, ulp_bits
from .budget import (StabilizeBudgetExceeded, collector_paused, cpu_clock, deadline_passed, hard_deadline,
                     share_of_time_left)
from .ddregion import dd_region
from .dtype_regimes import decide_regimes
from .numeric import compile_numpy
from .range_probe import with_range_failures
from .result import RewriteRecord, StabilizeResult
from .search import DEFAULT_WORK, Search
from .transforms import deadline
from .widen import NAME, TWO_ULPS, loses_where_written_does_not, stress_sample, widen_record, widened_record

__all__ = ["stabilize", "searched_form", "needs_search", "StabilizeResult", "RewriteRecord", "bits_of_error_report",
           "DEFAULT_WORK"]


# Of ``budget_s`` less the references of the search's sample and of the never-worse check's points (paid
# first), the search may use this fraction (a regime split may run ``search.REGIME_GRACE`` past it); the
# rest is room for the check itself and then the optional steps -- float32 widening found on stress
# points, the per-dtype regime decision, the double-double region -- which run only while the budget
# lasts (a step the program's deadline cuts leaves the checked form).
SEARCH_SHARE = 0.7
# The per-dtype regime decision (thresholds moved on built points, with their references) may use this
# fraction of the time left; the double-double region after it gets the rest.  Unbounded, it took 0.36 s
# of the 0.45 s left for sg.grad of the Bernoulli KL divergence on a slower machine, and the region its
# float64 points needed was never tried.
PER_DTYPE_SHARE = 0.5


def _summary(bits_before: dict, bits_after: dict) -> dict:
    out = {}
    for dt in sorted(bits_before, key=str):
        b, a = bits_before[dt], bits_after[dt]
        f = lambda v, g: float(g(v)) if len(v) else 0.0  # noqa: E731
        out[str(dt)] = (f(b, np.mean), f(b, np.max), f(a, np.mean), f(a, np.max))
    return out


@collector_paused()  # the budget is this thread's CPU time: other code's garbage is not charged to it
def stabilize(expr: sp.Expr, variables: Sequence[sp.Symbol], *, domain: Mapping | None = None,
              budget_s: float = 2.0, dtypes: Sequence[str] = ("float64", "float32"), seed: int = 0,
              n_points: int = 256, work: int = DEFAULT_WORK, widen_float32: bool = True,
              samples: Mapping | None = None, check=None, seeds: Sequence[sp.Expr] = ()) -> StabilizeResult:
    """Search for a numerically more accurate equivalent of ``expr``.

    Args:
        expr: SymPy expression in the real symbols ``variables``.
        variables: ordered input symbols.
        domain: optional ``{symbol: (lo, hi)}``; default all finite floats where
            the exact value is finite and real.
        budget_s: safety cap in CPU seconds of the calling thread (``budget.cpu_clock``,
            sampling included), so neither other processes nor other threads cut the search
            (the search itself stops at ``SEARCH_SHARE`` of it, leaving the rest to the steps after).  The
            search itself is bounded by the deterministic ``work`` budget; the cap only
            matters for very expensive expressions or a very slow machine.
        work: deterministic work budget in units (about one per scored candidate).
        dtypes: floating-point formats to score (error averaged over them).
        seed: RNG seed.  Results are deterministic for given (expr, variables, domain,
            dtypes, seed, n_points, work) unless the CPU-time cap is hit
            (``result.timed_out``).
        n_points: sample points per dtype.
        widen_float32: float32 kernels may compute in float64 and round once (scalar cores);
            False (array cores): no widening is proposed, and the never-worse check and the
            per-dtype regime decision score float32 arithmetic.
        samples: optional ``{dtype: Sample}`` (:class:`.accuracy.Sample`, correctly rounded
            references of ``expr``) the search scores on instead of drawing ``n_points`` of its
            own: the program pass hands over the triage's shared points
            (:meth:`.triage.TriageResult.samples`), whose references are already paid for.
        check: optional zero-argument callable giving the ``{dtype: Sample}`` of the never-worse
            check (:func:`.accept.accept`) instead of :func:`.accept.check_samples` (the program
            pass shares one check sample, :meth:`.triage.TriageResult.check_samples`).  Called
            before the search, so the search's time is what is left after its references.
        seeds: forms equal to ``expr`` that the caller knows, scored with the original before the
            search starts; those better than the original on the mean are then ranked, expanded
            and verified (:func:`.verify.equivalent`) like any candidate, the others dropped.  One
            that is not equal to ``expr`` is never chosen.  The program pass
            offers a derivative's region the derivative of the primal's stable form
            (:mod:`symgrad.api.primal_seeds`).

    Returns:
        :class:`StabilizeResult` with the chosen expression and the applied rewrites; a regime
        split that gains nothing in one dtype is replaced there by a single form
        (``result.dtype_exprs``, :mod:`.dtype_regimes`).  Where the
        float64 form still exceeds 2 ulps, the expression may mark one subexpression ``dd(u)``:
        evaluated in double-double in float64 kernels (:mod:`.ddregion`; the last-resort
        candidate, its cost in the record; ``$SYMGRAD_DD_REGIONS=0`` turns it off).
    """
    t0 = cpu_clock()
    given = sp.sympify(expr)
    expr = wide_floats(given)
    s = Search(expr, variables, domain, SEARCH_SHARE * budget_s, tuple(dtypes), seed, n_points, work=work,
               samples=samples, widen=widen_float32, seeds=[wide_floats(sp.sympify(f)) for f in seeds])
    # the never-worse check's references first: every rewrite needs them, and a check the program's deadline
    # cut after the search lost the whole search (mish'' at the default budget, now and then)
    if s.vars:  # (a constant has no points to check)
        checked = the_check_samples(expr, s.vars, domain, tuple(dtypes), check)
        check = lambda: checked  # noqa: E731 - the same samples for every later step
    paid = cpu_clock() - s.t0
    s.budget_s = paid + SEARCH_SHARE * max(budget_s - paid, 0.0)
    with deadline(s.t0 + s.budget_s):
        best = s.run()
    records = []
    for st in best.history:
        cb, ca = s.score(st.before, ()), s.score(st.after, ())
        bits = _summary(cb.bits, ca.bits) if cb is not None and ca is not None else {}
        records.append(RewriteRecord(st.name, st.sub_before, st.sub_after, bits, st.regime,
                                     st.before, st.after))
    summary = _summary(s.orig.bits, best.bits)
    widen = None
    if widen_float32 and "float32" in s.samples and cpu_clock() - t0 < budget_s:  # float32 beyond 2 ulps
        # on the search's own points only: the stress points come after the check (an optional step)
        widen = widen_record(best.expr, s.vars, s.samples["float32"], best.bits["float32"], expr, domain,
                             stressed=False)
    if widen is not None:
        records.append(widen)
        summary["float32"] = summary["float32"][:2] + widen.bits["float32"][2:]
    form, wide, note, own = best.expr, widen is not None, None, {}
    single = None  # the one formula before the split (before both, when the saturation split wraps a split)
    for step in reversed(best.history):
        if step.name != "regime_split":
            break
        single = step.before
        if not isinstance(single, sp.Piecewise):
            break
    if records and s.vars and not deadline_passed():  # the sweep of every binade: a rewrite's overflow window
        checked = with_range_failures(checked, expr, [best.expr, *_pieces(best.expr), *([single] if single else [])],
                                      s.vars, domain)
    if records:  # never worse than the formula as written, on fresh and ordinary inputs
        form, wide, note, own = accept(expr, best.expr, wide, s.vars, domain, tuple(dtypes), s.samples, single,
                                       check, may_widen=widen_float32)
    if note is not None:
        wide = wide and (form != expr or own.get("float32", expr) != expr)  # the formula as written is kept as it is
        records, summary = _after_acceptance(expr, best.expr, form, wide, records, s, dtypes, own)
    others: dict = dict(own)  # dtype -> its own form (accepted in that dtype only, or a regime split that
    # gains nothing there)
    if wide and "float32" in s.samples and not any(r.name == NAME for r in records):  # the check's float32 choice
        sc = s.score(others.get("float32", form), ())
        if sc is not None:
            records.append(widened_record(others.get("float32", form), s.vars, s.samples["float32"],
                                          sc.bits["float32"]))
    # The steps below only refine a form that passed the never-worse check: past the program's hard
    # deadline they are not started, and if it cuts one, the checked form stands (throwing it away
    # made results depend on load: GELU'' lost its sech^2 form to a cut double-double step on CI).
    skipped: list = []  # optional steps the deadline cut or left unstarted

    def optional(step: str, run):
        if not deadline_passed():
            try:
                return run()
            except StabilizeBudgetExceeded:
                pass
        skipped.append(step)
        return None

    if widen_float32 and not wide and "float32" in s.samples and cpu_clock() - t0 < budget_s:
        form32 = others.get("float32", form)
        # beyond 2 ulps on the stress points, or where the formula as written is within 1 ulp (a rewritten form)
        rec = optional("float32 widening", lambda: _widen_after_check(expr, form32, s, domain, check) or (
            _widen_never_worse(expr, form32, s, domain, check) if form32 != expr else None))
        if rec is not None:
            records.append(rec)
            wide = True
            summary["float32"] = summary["float32"][:2] + rec.bits["float32"][2:]
    if form != expr and not own and cpu_clock() - t0 < budget_s:
        with hard_deadline(share_of_time_left(PER_DTYPE_SHARE, t0 + budget_s)):
            form, others, records = optional("per-dtype regimes", lambda: _regimes_per_dtype(
                expr, form, wide, records, summary, s, domain, dtypes, single, check)) or (form, others, records)
    if "float64" in s.samples and dd_regions_enabled() and cpu_clock() - t0 < budget_s:  # float64 beyond 2 ulps
        hit = optional("double-double region", lambda: dd_region(
            others.get("float64", form), s.vars, s.samples["float64"], expr, domain, t0 + budget_s))
        if hit is not None:
            if "float64" in others:
                others["float64"], rec = hit
            else:
                form, rec = hit
            at = _widening_at(records)  # the float32 widening record stays last
            records = records[:at] + [rec] + records[at:]
            summary["float64"] = rec.bits["float64"]
    back = _narrowing(expr, given)  # the caller's own Floats where the search kept them
    return StabilizeResult(back(form), [_record_with(r, back) for r in records], s.exhausted, cpu_clock() - t0,
                           summary, s.used, s.timed_out, wide, note, {dt: back(e) for dt, e in others.items()},
                           tuple(skipped))


def searched_form(expr: sp.Expr, variables: Sequence[sp.Symbol], *, budget_s: float, n_points: int = 256,
                  work: int = DEFAULT_WORK) -> sp.Expr:
    """The search's best float64 form of ``expr`` (verified equal to it), without truncated series,
    the never-worse check, the float32 widening and the double-double step that :func:`stabilize`
    adds: a starting point for another search (the ``seeds`` of a derivative,
    :mod:`symgrad.api.primal_seeds`), not a kernel's form; its derivative must be exact too.
    ``expr`` itself when nothing better was found.

    Args:
        expr: SymPy expression in the real symbols ``variables``.
        variables: ordered input symbols.
        budget_s: CPU seconds of the calling thread (sampling included).
        n_points: sample points (float64 only).
        work: deterministic work budget (see :mod:`.search`).

    Raises:
        StabilizeBudgetExceeded: a program's hard deadline passed.
    """
    given = sp.sympify(expr)
    wide = wide_floats(given)
    s = Search(wide, variables, None, budget_s, ("float64",), 0, n_points, work=work, series=False)
    with deadline(s.t0 + s.budget_s):
        best = s.run()
    return _narrowing(wide, given)(best.expr)


FLOAT_PRECISION = 113  # bits of the Floats a searched expression holds (their values unchanged)


def wide_floats(expr: sp.Expr) -> sp.Expr:
    """``expr`` with each Float (a traced program's constant: a double) held at ``FLOAT_PRECISION``
    bits, its value unchanged.  SymPy folds the constants a rewrite derives from it at its
    operands' precision: ``log(17.079468445347132 x^2)/2`` becomes ``1.4189385332046727 + log(x)``
    with ``log(17.079...)/2`` rounded to 53 bits, a function 1 ulp away from the program's, which no
    region can then evaluate within 2 ulps of it where the sum cancels.  At 113 bits the kernel
    rounds the folded constant once, and a double-double region takes its low part too."""
    floats = [f for f in expr.atoms(sp.Float) if f._prec < FLOAT_PRECISION]
    return expr.xreplace({f: sp.Float(f, precision=FLOAT_PRECISION) for f in floats}) if floats else expr


def _narrowing(wide: sp.Expr, given: sp.Expr):
    """The map from ``wide``'s Floats (:func:`wide_floats`) back to ``given``'s, as a function of
    an expression (identity when there are none)."""
    pairs = {sp.Float(f, precision=FLOAT_PRECISION): f for f in given.atoms(sp.Float) if f._prec < FLOAT_PRECISION}
    if not pairs:
        return lambda e: e
    return lambda e: _replaced(e, pairs) if isinstance(e, sp.Basic) else e


def _replaced(e: sp.Basic, pairs: dict) -> sp.Basic:
    """``e`` with the atoms of ``pairs`` replaced, its sums, products and powers rebuilt
    unevaluated: ``xreplace`` would evaluate ``0.693*(x - y)``, a form the search built on purpose,
    into ``0.693*x - 0.693*y`` (SymPy distributes a number over a sum), which cancels."""
    if e in pairs:
        return pairs[e]
    if not e.args or not e.has(*pairs):
        return e
    args = [_replaced(a, pairs) for a in e.args]
    if isinstance(e, (sp.Add, sp.Mul, sp.Pow)):
        return e.func(*args, evaluate=False)
    return e.func(*args)


def _record_with(rec: RewriteRecord, back) -> RewriteRecord:
    return dataclasses.replace(rec, before=back(rec.before), after=back(rec.after),
                               expr_before=back(rec.expr_before), expr_after=back(rec.expr_after))


def _pieces(expr: sp.Expr) -> list:
    """The pieces of a regime split (nested splits flattened); none when ``expr`` is not one."""
    if not isinstance(expr, sp.Piecewise):
        return []
    return [leaf for pair in expr.args for leaf in (_pieces(pair.expr) or [pair.expr])]


def _widening_at(records) -> int:
    """Index of the float32 widening record (kept last), or ``len(records)``."""
    return next((i for i, r in enumerate(records) if r.name == NAME), len(records))


def _widen_after_check(expr, form32, s, domain, check=None):
    """The float32 widening record of ``form32`` (the form the float32 kernel computes) found on the
    :func:`.widen.stress_sample` (moderate inputs, the floats next to roots), or None.

    Runs after the never-worse check, as an optional step: its few hundred references once ran into
    the program's deadline before the check and the region's whole search was lost.  The widened
    kernel must pass the check in float32 (:func:`.accept.verdict`).
    """
    sc = s.score(form32, ())
    if sc is None:
        return None
    rec = widen_record(form32, s.vars, s.samples["float32"], sc.bits["float32"], expr, domain)
    if rec is None:
        return None
    checked = the_check_samples(expr, s.vars, domain, ("float32",), check)
    seen = s.samples["float32"]
    checked = {dt: Sample(c.dtype, np.concatenate([c.X, seen.X]), np.concatenate([c.ref, seen.ref]))
               for dt, c in checked.items()}
    return rec if verdict(expr, form32, True, s.vars, checked).ok else None


def _widen_never_worse(expr, form32, s, domain, check=None):
    """The float32 widening record of ``form32`` when its float32 arithmetic loses more than 2 ulps
    at a point where the formula as written is within 1 ulp (:func:`.widen.loses_where_written_does_not`,
    a dense probe: such points are too rare for the search's sample), and the widened kernel passes
    the check in float32; else None."""
    if not loses_where_written_does_not(form32, expr, s.vars, domain):
        return None
    sc = s.score(form32, ())
    if sc is None:
        return None
    checked = the_check_samples(expr, s.vars, domain, ("float32",), check)
    if not verdict(expr, form32, True, s.vars, checked).ok:
        return None
    return widened_record(form32, s.vars, s.samples["float32"], sc.bits["float32"])


def _regimes_per_dtype(expr, form, wide, records, summary, s, domain, dtypes, single, check=None):
    """``(form, {dtype: other form}, records)`` once each dtype decided whether ``form``'s regime
    split gains there (:func:`.dtype_regimes.decide_regimes`).  ``form`` stays the split when some
    dtype keeps it, else it becomes the first dtype's single form; ``summary`` is updated for the
    dtypes that changed (on the search's sample, as the rest of it)."""
    forms, extra = decide_regimes(expr, form, wide, s.vars, domain, tuple(dtypes), s.samples, single, check)
    if not extra:
        return form, {}, records
    if all(f != form for f in forms.values()):  # no dtype keeps the split
        form = forms["float64"] if "float64" in forms else forms[str(dtypes[0])]
    others = {dt: f for dt, f in forms.items() if f != form}
    at = _widening_at(records)  # the float32 widening record stays last
    records = records[:at] + extra + records[at:]
    for rec in extra:
        dt = next(iter(rec.bits))
        if dt == "float32" and wide:
            continue  # the widening record's float32 bits stand
        after = s.score(rec.after, ())
        if after is not None and dt in summary:
            summary[dt] = _summary(s.orig.bits, after.bits)[dt]
    return form, others, records


def _after_acceptance(expr, chosen, form, wide, records, s, dtypes, own=None):
    """Records and summary once the acceptance check repaired or reverted ``chosen`` (in every
    dtype, or in the dtypes of ``own``, ``{dtype: the form it computes}``)."""
    own = own or {}
    if form == expr and not own:
        return [], _summary(s.orig.bits, s.orig.bits)
    records = [r for r in records if r.name != NAME] if not wide else records
    after = s.score(form, ())
    bits = _summary(s.orig.bits, after.bits) if after is not None else {}
    for dt, f in own.items():  # the search's sample, scored as the rest of the summary
        sc = s.score(f, ())
        if sc is not None and dt in bits and not (dt == "float32" and wide):
            bits[dt] = _summary(s.orig.bits, sc.bits)[dt]
    if form != chosen:
        cb = s.score(chosen, ())
        step = _summary(cb.bits, after.bits) if cb is not None and after is not None else {}
        rec = RewriteRecord("never_worse_repair", chosen, form, step, None, chosen, form)
        records = [r for r in records if r.name != NAME] + [rec] + [r for r in records if r.name == NAME]
    return records, bits


def needs_search(expr: sp.Expr, variables: Sequence[sp.Symbol], mean_bits: float = 1.5) -> bool:
    """Quick probe: is ``expr`` inaccurate enough to search for a better form?

    True when the mean error over a 64-point sample reaches ``mean_bits`` in float64 or
    float32, or some point of that sample or of the float32 :func:`~.widen.stress_sample`
    (moderate magnitudes and the floats next to roots) is beyond 2 ulps.
    """
    for dt in ("float64", "float32"):
        mean, mx = bits_of_error_report(expr, variables, dt, n=64)
        if mean >= mean_bits or mx > TWO_ULPS + 1e-9:
            return True
    stress = stress_sample(expr, variables)
    if stress is not None and len(stress.X):
        bits = ulp_bits(compile_numpy(expr, variables, np.float32)(stress.X), stress.ref)
        return bool(bits.max() > TWO_ULPS + 1e-9)
    return False
