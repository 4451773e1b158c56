"""Cheap, shared accuracy triage of all the expressions of one program.

Before the stabiliser searches anything, it asks which outputs lose accuracy at all.
:func:`triage` answers for every expression of a kernel at once: one small sample of
the union of their variables (shared by all expressions), the float64 and float32
values of each expression with numpy (vectorised over the sample), and *one*
evaluation of the whole set of expressions in wide arithmetic, memoised across
expressions, so a subexpression shared by many outputs (the forward pass under every
gradient entry) is evaluated once.  The wide arithmetic is double-double with a running
error bound (:mod:`.ddeval`, all points at once); where that bound does not prove the
rounding (or an op has no double-double routine), mpmath at a fixed modest precision
(with the gmpy2 back end when installed), once per point, for those points only.  An expression whose float values agree
with the wide value to within 2 ulps at every point, with a small mean error, is left
alone; the others are returned worst first, so the search spends the program's budget
where bits are lost.

The wide value is not escalated to a correctly rounded one (that is
:func:`.reference.reference_values`' job, done by the search).  When an evaluation
tracked more cancellation than the fixed precision covers, the point counts as
inaccurate for that expression (a search is the safe answer).

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating point
    expressions", PLDI, sec. 4 (sampling, bits of error).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import mpmath
import numpy as np
import sympy as sp

from . import reference as _ref
from .accuracy import ulp_bits
from .budget import StabilizeBudgetExceeded, check_deadline, cpu_clock, hard_deadline  # noqa: F401 (re-exported)
from .ddeval import compile_dd, round_certified
from .numeric import _once_per_env, compile_numpy
from .sampling import sample_points
from .widen import TWO_ULPS

__all__ = ["triage", "TriageResult", "StabilizeBudgetExceeded", "hard_deadline", "check_deadline"]

WIDE_PREC = 53 + 96       # bits of the wide evaluation (the reference's starting precision)
POINTS = {"float64": 32, "float32": 32}


@dataclass
class TriageResult:
    """Per expression: mean and max bits of error (float64 and float32 pooled) on the shared
    sample, and whether it needs a search."""

    mean_bits: list[float]
    max_bits: list[float]
    needs_search: list[bool]
    points: int
    cpu_s: float


def _compile_many(exprs: Sequence[sp.Expr], variables: Sequence[sp.Symbol]):
    """mpmath evaluators of ``exprs`` sharing one memo: each distinct subexpression is
    evaluated once per environment (per point), whichever expression reaches it first."""
    pos = {v: i for i, v in enumerate(variables)}
    memo: dict = {}

    def rec(e):
        c = memo.get(e)
        if c is None:
            c = _ref._compile_node(e, pos, rec)
            if not (e in pos or e.is_Atom):
                c = _once_per_env(c)
            memo[e] = c
        return c
    return [rec(sp.sympify(e)) for e in exprs]


def _wide_values(fns, X: np.ndarray, need: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(mpmath values (k, n), trusted flags (k, n)); only the entries where ``need`` (k, n) is
    True are evaluated (the others hold NaN and count as trusted).

    The cancellation each expression tracks is counted from the nodes it evaluates first
    (shared nodes an earlier expression evaluated are not recounted): an undercount only
    makes a point look trustworthy, and the float value then has to agree with the wide
    one anyway, which a value that lost 96 bits practically never does."""
    k, n = len(fns), X.shape[0]
    need = np.ones((k, n), dtype=bool) if need is None else need
    vals = np.full((k, n), mpmath.nan, dtype=object)
    trusted = np.ones((k, n), dtype=bool)
    limit = WIDE_PREC - 53 - 24
    with mpmath.workprec(WIDE_PREC):
        for i in np.flatnonzero(need.any(axis=0)):
            row = X[i]
            check_deadline()
            env = [mpmath.mpf(float(v)) for v in row]
            for j in np.flatnonzero(need[:, i]):
                f = fns[j]
                _ref._LOSS[0] = 0
                try:
                    vals[j, i] = f(env)
                except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                    vals[j, i] = mpmath.nan
                trusted[j, i] = _ref._LOSS[0] < limit
    return vals, trusted


def _dd_evaluator(exprs, allvars):
    """The double-double evaluator of all ``exprs`` (one shared memo), or None (turned off, or an
    op without a double-double routine: then every point goes through mpmath)."""
    if not _ref.DOUBLE_DOUBLE:
        return None
    try:
        return compile_dd(exprs, allvars)
    except NotImplementedError:
        return None


def _dd_refs(dd, X, dt, k):
    """((k, n) rounded values, (k, n) certified) of the double-double pass (none certified
    without an evaluator)."""
    vals = np.full((k, X.shape[0]), np.nan, dtype=dt)
    ok = np.zeros((k, X.shape[0]), dtype=bool)
    if dd is not None and X.shape[0]:
        check_deadline()
        for j, xd in enumerate(dd(X)):
            vals[j], ok[j] = round_certified(xd, dt)
    return vals, ok


def triage(exprs: Sequence[sp.Expr], variables: Sequence[Sequence[sp.Symbol]], *, seed: int = 0,
           mean_bits: float = 1.5, points: dict | None = None) -> TriageResult:
    """Which of ``exprs`` lose accuracy on a small sample shared by all of them.

    Args:
        exprs: SymPy expressions (real symbols), e.g. one per output region of a kernel.
        variables: for each expression, its ordered variables (symbols shared between
            expressions are sampled once: the same point feeds every expression).
        seed: RNG seed of the shared sample.
        mean_bits: an expression whose mean error reaches this many bits needs a search.
        points: sample size per dtype (default ``{"float64": 32, "float32": 32}``).

    Returns:
        :class:`TriageResult`; ``needs_search[i]`` is True when expression ``i`` is beyond
        2 ulps somewhere on the sample, has a mean error of ``mean_bits`` or more, or was
        evaluated at a point where the wide arithmetic itself lost too many bits.

    Raises:
        StabilizeBudgetExceeded: past the current :class:`hard_deadline`.
    """
    t0 = cpu_clock()
    allvars = sorted({v for vs in variables for v in vs}, key=lambda s: s.name)
    col = {v: i for i, v in enumerate(allvars)}
    fns = _compile_many(exprs, allvars)
    dd = _dd_evaluator(exprs, allvars)
    k = len(exprs)
    sum_bits, max_bits, count = np.zeros(k), np.zeros(k), 0
    untrusted = np.zeros(k, dtype=bool)
    for j, (dt, n) in enumerate((points or POINTS).items()):
        rng = np.random.default_rng([seed, 31337, j])
        X = sample_points(allvars, None, dt, n, rng)
        first = _dd_refs(dd, X, dt, k)  # certified double-double values, one DAG evaluation
        wide, trusted = _wide_values(fns, X, ~first[1])
        for e_i, (expr, vs) in enumerate(zip(exprs, variables)):
            check_deadline()
            ref = np.array([_ref.round_to(v, dt) for v in wide[e_i]], dtype=dt)
            ref = np.where(first[1][e_i], first[0][e_i], ref)
            cols = [col[v] for v in vs]
            with np.errstate(all="ignore"):
                got = compile_numpy(expr, list(vs), np.dtype(dt))(X[:, cols])
            got = np.broadcast_to(np.asarray(got, dtype=dt), ref.shape)
            ok = np.isfinite(ref)
            bits = ulp_bits(got[ok], ref[ok]) if ok.any() else np.zeros(0)
            sum_bits[e_i] += bits.sum()
            max_bits[e_i] = max(max_bits[e_i], float(bits.max()) if len(bits) else 0.0)
            untrusted[e_i] |= bool((~trusted[e_i] & ok).any())
        count += X.shape[0]
    mean = sum_bits / max(count, 1)
    needs = [bool(u or m >= mean_bits or x > TWO_ULPS + 1e-9) for m, x, u in zip(mean, max_bits, untrusted)]
    return TriageResult(list(map(float, mean)), list(map(float, max_bits)), needs, count,
                        cpu_clock() - t0)
