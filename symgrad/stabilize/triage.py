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

The wide value is not escalated to a correctly rounded one during triage.  When an
evaluation tracked more cancellation than the fixed precision covers, the point counts as
inaccurate for that expression (a search is the safe answer).

The shared sample and its references are kept (:meth:`TriageResult.samples`): the search of a
losing expression starts from them instead of drawing and evaluating a fresh sample of its own
(which, for the 24-input regions of a small scalar-loop MLP, cost ~0.9 s CPU per region against
~0.1 s for the triage of all 25 regions).  A value the double-double pass certified is the
correctly rounded reference; a fixed-precision mpmath value is one when no value within its
tracked error rounds differently (:func:`.reference._safely_rounded`); the few others are
escalated by :func:`.reference.reference_values` when a search asks for them.

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating point
    expressions", PLDI, sec. 4 (sampling, bits of error).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import mpmath
import numpy as np
import sympy as sp

from . import reference as _ref
from .accept import check_points
from .accuracy import Sample, ulp_bits
from .budget import StabilizeBudgetExceeded, check_deadline, cpu_clock, hard_deadline  # noqa: F401 (re-exported)
from .ddeval import compile_dd, round_certified
from .numeric import _OncePerEnv, compile_numpy
from .sampling import sample_points
from .widen import TWO_ULPS

__all__ = ["triage", "TriageResult", "StabilizeBudgetExceeded", "hard_deadline", "check_deadline"]

WIDE_PREC = 53 + 96       # bits of the wide evaluation (the reference's starting precision)
POINTS = {"float64": 32, "float32": 32}


@dataclass
class TriageResult:
    """Per expression: mean and max bits of error (float64 and float32 pooled) on the shared
    sample, and whether it needs a search; the shared sample itself (see :meth:`samples`)."""

    mean_bits: list[float]
    max_bits: list[float]
    needs_search: list[bool]
    points: int
    cpu_s: float
    exprs: list = field(default_factory=list, repr=False)
    variables: list = field(default_factory=list, repr=False)
    columns: list = field(default_factory=list, repr=False)     # per expression: its columns of X
    X: dict = field(default_factory=dict, repr=False)           # dtype -> (n, all variables) points
    refs: dict = field(default_factory=dict, repr=False)        # dtype -> (k, n) rounded references
    settled: dict = field(default_factory=dict, repr=False)     # dtype -> (k, n): ref correctly rounded
    allvars: list = field(default_factory=list, repr=False)
    _fns: list = field(default_factory=list, repr=False)        # shared mpmath evaluators
    _dd: object = field(default=None, repr=False)               # shared double-double evaluator
    _samples: dict = field(default_factory=dict, repr=False)
    _check: dict = field(default_factory=dict, repr=False)      # dtype -> (X, refs, settled) once drawn
    check_rows: list | None = field(default=None, repr=False)   # expressions the shared check covers

    def samples(self, i: int) -> dict:
        """``{dtype: Sample}`` of expression ``i`` on the shared triage points (its own columns),
        with correctly rounded references, points with a non-finite reference dropped (as
        :func:`.accuracy.make_sample` does).  References the triage left unsettled are computed
        here once (:func:`.reference.reference_values`, under the current deadline)."""
        if i not in self._samples:
            self._samples[i] = self._split(i, {dt: (X, self.refs[dt], self.settled[dt]) for dt, X in self.X.items()})
        return self._samples[i]

    def check_samples(self, i: int) -> dict:
        """``{dtype: Sample}`` of expression ``i`` on the acceptance check's fresh and ordinary points
        (:func:`.accept.check_points` of all the variables, drawn once for the program), as
        :func:`.accept.check_samples` gives for one expression: the references of every expression
        that needs a search come from one shared evaluation, not one evaluation per expression."""
        if not self._check:
            rows = np.array(self.needs_search if self.check_rows is None else self.check_rows, dtype=bool)
            for dt in self.X:
                X = check_points(self.allvars, None, np.dtype(dt))
                self._check[dt] = (X, *_references(self._fns, self._dd, X, dt, rows)[:2])
        return self._split(i, self._check)

    def _split(self, i: int, sets: dict) -> dict:
        vs, cols = self.variables[i], self.columns[i]
        fn, out = None, {}
        for dt, (X, refs, settled) in sets.items():
            Xi = np.ascontiguousarray(X[:, cols])
            ref = refs[i].copy()
            todo = np.flatnonzero(~settled[i])
            if len(todo):
                fn = fn or _ref.compile_mpmath(self.exprs[i], vs)
                ref[todo] = _ref.reference_values(fn, Xi[todo], dt)
            ok = np.isfinite(ref)
            out[dt] = Sample(np.dtype(dt), Xi[ok], ref[ok])
        return out


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
                c = _OncePerEnv(c)
            memo[e] = c
        return c
    return [rec(sp.sympify(e)) for e in exprs]


def _wide_values(fns, X: np.ndarray, need: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(mpmath values (k, n), bits of cancellation tracked (k, n)); only the entries where
    ``need`` (k, n) is True are evaluated (the others hold NaN and 0).

    The cancellation each expression tracks is counted from the nodes it evaluates first
    (shared nodes an earlier expression evaluated are not recounted): an undercount only
    makes a point look trustworthy, and the float value then has to agree with the wide
    one anyway, which a value that lost 96 bits practically never does."""
    k, n = len(fns), X.shape[0]
    need = np.ones((k, n), dtype=bool) if need is None else need
    vals = np.full((k, n), mpmath.nan, dtype=object)
    loss = np.zeros((k, n), dtype=np.int64)
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
                loss[j, i] = _ref._LOSS[0]
    return vals, loss


def _references(fns, dd, X: np.ndarray, dt, rows: np.ndarray | None = None):
    """((k, n) references rounded to ``dt``, (k, n) settled: correctly rounded, (k, n) trusted) of
    all the expressions at the points ``X``: one double-double evaluation of their shared DAG,
    mpmath at ``WIDE_PREC`` where it does not certify.  ``rows`` (k,) bool: only those
    expressions go through mpmath (the others stay NaN, unsettled)."""
    k = len(fns)
    first = _dd_refs(dd, X, dt, k)  # certified double-double values, one DAG evaluation
    need = ~first[1] if rows is None else ~first[1] & rows[:, None]
    wide, loss = _wide_values(fns, X, need)
    trusted = loss < WIDE_PREC - 53 - 24
    refs, settled = np.empty((k, X.shape[0]), dtype=dt), first[1].copy()
    for e_i in range(k):
        check_deadline()
        ref = np.array([_ref.round_to(v, dt) for v in wide[e_i]], dtype=dt)
        for i in np.flatnonzero(need[e_i] & trusted[e_i]):
            settled[e_i, i] = _settled(wide[e_i, i], ref[i], int(loss[e_i, i]), np.dtype(dt))
        refs[e_i] = np.where(first[1][e_i], first[0][e_i], ref)
    return refs, settled, trusted


def _settled(v, r, loss: int, dt: np.dtype) -> bool:
    """Is ``r``, the rounding of the wide value ``v`` (``loss`` bits cancelled, within the trusted
    limit), the correctly rounded reference?  Exact zeros, infinities and NaN (no cancellation
    undoes them) are; a finite value is when every value within its tracked error rounds to
    ``r`` (:func:`.reference._safely_rounded`, as :func:`.reference.reference_values` decides)."""
    if type(v) is not mpmath.mpf:
        return False
    if not v or mpmath.isnan(v) or mpmath.isinf(v):
        return True
    return _ref._safely_rounded(v, r, WIDE_PREC - loss - _ref._MARGIN, dt)


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
    columns = [[col[v] for v in vs] for vs in variables]
    keep_X, keep_ref, keep_settled = {}, {}, {}
    for j, (dt, n) in enumerate((points or POINTS).items()):
        rng = np.random.default_rng([seed, 31337, j])
        X = sample_points(allvars, None, dt, n, rng)
        refs, settled, trusted = _references(fns, dd, X, dt)
        for e_i, (expr, vs) in enumerate(zip(exprs, variables)):
            check_deadline()
            ref = refs[e_i]
            cols = columns[e_i]
            with np.errstate(all="ignore"):
                got = compile_numpy(expr, list(vs), np.dtype(dt))(X[:, cols])
            got = np.broadcast_to(np.asarray(got, dtype=dt), ref.shape)
            ok = np.isfinite(ref)
            bits = ulp_bits(got[ok], ref[ok]) if ok.any() else np.zeros(0)
            sum_bits[e_i] += bits.sum()
            max_bits[e_i] = max(max_bits[e_i], float(bits.max()) if len(bits) else 0.0)
            untrusted[e_i] |= bool((~trusted[e_i] & ok).any())
        count += X.shape[0]
        keep_X[dt], keep_ref[dt], keep_settled[dt] = X, refs, settled
    mean = sum_bits / max(count, 1)
    needs = [bool(u or m >= mean_bits or x > TWO_ULPS + 1e-9) for m, x, u in zip(mean, max_bits, untrusted)]
    return TriageResult(list(map(float, mean)), list(map(float, max_bits)), needs, count,
                        cpu_clock() - t0, [sp.sympify(e) for e in exprs], [list(vs) for vs in variables],
                        columns, keep_X, keep_ref, keep_settled, allvars, fns, dd)
