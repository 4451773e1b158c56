"""Result records of :func:`symgrad.stabilize.stabilize`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import sympy as sp

from symgrad.ir.sympy_funcs import strip_dd

from .numeric import compile_numpy

__all__ = ["RewriteRecord", "StabilizeResult"]


@dataclass(frozen=True)
class RewriteRecord:
    """One accepted rewrite step.

    Attributes:
        name: identity or transformation name (``"regime_split"`` for branches).
        before: the subexpression that was rewritten (e.g. ``log(exp(x) + 1)``).
        after: its replacement (e.g. ``softplus(x)``).
        bits: ``{dtype: (mean_before, max_before, mean_after, max_after)}`` bits of error
            of the *whole* expression before and after the step.
        regime: the Piecewise condition introduced by the step, or None.
        expr_before: whole expression before the step.
        expr_after: whole expression after the step.
        cost: what the step costs at run time when that is more than its formula shows
            (``"double-double region: 41 dd operations"``), else None.
    """
    name: str
    before: sp.Expr
    after: sp.Expr
    bits: dict = field(hash=False, compare=True)
    regime: Optional[str] = None
    expr_before: Optional[sp.Expr] = None
    expr_after: Optional[sp.Expr] = None
    cost: Optional[str] = None

    def one_line(self) -> str:
        """``name: before -> after  [f64 bits a -> b, f32 c -> d]  (cost: ...)``."""
        parts = []
        for dt, tag in (("float64", "f64 bits"), ("float32", "f32")):
            if dt in self.bits:
                mb, _, ma, _ = self.bits[dt]
                parts.append(f"{tag} {mb:.1f} -> {ma:.1f}")
        reg = f"  (regime: {self.regime})" if self.regime else ""
        cost = f"  (cost: {self.cost})" if self.cost else ""
        return f"{self.name}: {self.before} -> {self.after}  [{', '.join(parts)}]{reg}{cost}"


@dataclass(frozen=True)
class StabilizeResult:
    """Outcome of :func:`stabilize`.

    Attributes:
        expr: chosen expression (the input when nothing better was found).
        records: applied rewrites, in order.
        budget_exhausted: True when the work budget or the CPU-time cap cut the search short.
        seconds: CPU seconds spent.
        work: work units spent (deterministic; see :mod:`symgrad.stabilize.search`).
        timed_out: True when the CPU-time cap (not the work budget) cut the search; only
            then can the result depend on machine load.
        bits: ``{dtype: (mean_before, max_before, mean_after, max_after)}`` for the whole expression.
        widen_float32: float32 kernels should evaluate ``expr`` in float64 and round once
            (see :mod:`symgrad.stabilize.widen`); the last record says so.
        acceptance: None when the searched form passed the final never-worse check
            (:mod:`symgrad.stabilize.accept`), else what it repaired or reverted and why.
        dtype_exprs: ``{dtype name: form}`` for the dtypes whose kernels compute another form
            than ``expr``: a regime split of ``expr`` that gains nothing in that dtype is
            replaced there by a single form (:mod:`symgrad.stabilize.dtype_regimes`; a
            ``regime_not_in_<dtype>`` record says so).  Empty: every dtype computes ``expr``.
        skipped: the optional steps after the never-worse check that the program's hard CPU
            deadline cut or left unstarted (``"per-dtype regimes"``, ``"double-double region"``);
            ``expr`` is still the form that passed the check, so it is kept.
    """
    expr: sp.Expr
    records: list
    budget_exhausted: bool
    seconds: float
    bits: dict = field(default_factory=dict, hash=False)
    work: int = 0
    timed_out: bool = False
    widen_float32: bool = False
    acceptance: Optional[str] = None
    dtype_exprs: dict = field(default_factory=dict, hash=False)
    skipped: tuple = ()

    def form(self, dtype) -> sp.Expr:
        """The expression the ``dtype`` kernel computes (``expr`` unless ``dtype_exprs`` says otherwise)."""
        return self.dtype_exprs.get(np.dtype(dtype).name, self.expr)

    def evaluate(self, variables, X, dtype):
        """Values at the rows of ``X`` (shape ``(n, len(variables))``) as the emitted kernel
        computes them in ``dtype`` (its own form, :meth:`form`; float64 then one rounding for
        float32 when ``widen_float32``); an ``(n,)`` array of ``dtype``."""
        return evaluate_result(self.form(dtype), self.widen_float32, variables, X, dtype)


def evaluate_result(expr: sp.Expr, widen_float32: bool, variables: Sequence[sp.Symbol], X: np.ndarray,
                    dtype) -> np.ndarray:
    """Values of a stabiliser's chosen form as the emitted kernel computes them in ``dtype``.

    float32 with ``widen_float32`` evaluates in float64 and rounds once; otherwise the
    arithmetic is in ``dtype`` throughout.  Double-double regions (``dd(u)``) are double-double
    in float64 only: float32 kernels compute their plain formula.
    """
    if np.dtype(dtype) == np.float32 and widen_float32:
        wide = compile_numpy(strip_dd(expr), variables, np.float64)(np.asarray(X, dtype=np.float64))
        with np.errstate(over="ignore", invalid="ignore"):
            return wide.astype(np.float32)
    return compile_numpy(expr, variables, dtype)(X)
