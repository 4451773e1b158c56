"""SymPy function classes for the special functions SymPy lacks (or rewrites away).

``ndtr``, ``log_ndtr``, ``erfcx``, ``i0e``, ``xlogy`` ... have no SymPy class,
and ``sp.digamma(x)`` turns into ``polygamma(0, x)`` at once, so each such op
makes its own class with :func:`special_function` in its block of
:mod:`symgrad.ir.rules.special`.  A class keeps the function visible in
expressions (the stabiliser and ``trace(f).expr`` show ``ndtr(x)``), evaluates
at any precision with the op's mpmath facet and differentiates with the op's
derivative formula written in SymPy.
"""
from __future__ import annotations

from typing import Callable

import mpmath
import sympy as sp

__all__ = ["special_function"]


class _Special(sp.Function):
    """Base: subclasses set ``nargs``, ``_mp`` (mpmath) and ``_diff`` (SymPy partials)."""

    _mp: Callable
    _diff: Callable | None = None

    def _eval_evalf(self, prec):
        vals = [a.evalf(prec) for a in self.args]
        if not all(v.is_Number for v in vals):
            return None
        with mpmath.workprec(prec):
            r = type(self)._mp(*[mpmath.mpf(sp.Float(v)._mpf_) for v in vals])
        if not isinstance(r, mpmath.mpf) or not mpmath.isfinite(r):
            return None
        return sp.Float(r, precision=prec)

    def fdiff(self, argindex=1):
        if type(self)._diff is None:
            raise sp.ArgumentIndexError(self, argindex)
        return type(self)._diff(*self.args)[argindex - 1]

    def _eval_is_extended_real(self):
        return all(a.is_extended_real for a in self.args) or None


def special_function(name: str, nargs: int, mp: Callable, diff: Callable | None = None,
                     doc: str = "") -> type:
    """A SymPy function class ``name`` of ``nargs`` real arguments.

    Args:
      mp: the mpmath evaluation ``mp(*mpf) -> mpf`` (the op's ``mpmath`` facet).
      diff: ``diff(*sympy_args) -> tuple`` of partial derivatives as SymPy expressions.
      doc: what the function computes (shown by ``help``).
    """
    return type(name, (_Special,), {"nargs": nargs, "_mp": staticmethod(mp),
                                    "_diff": staticmethod(diff) if diff else None, "__doc__": doc,
                                    "__module__": __name__})
