"""Saturation limits: the constant a univariate function rounds to for every huge input.

Many functions of machine learning saturate: GELU's derivative is 1 for large x and 0 for very
negative x, and any formula for it overflows on the way there.  The tanh form's derivative as
reverse mode gives it, ``(1 + t1 s + 0.214 x**3 s) sigmoid(u)`` with ``s = sigmoid(-u)``,
multiplies ``s = 0`` by ``x**3 = inf`` for |x| > 5.6e102 and returns NaN where the value is 1.
SymPy finds no expansion of it at infinity (``exp`` of a cubic: see
:func:`.transforms._no_expansion_at_infinity`), and a series whose only term is a constant has no
variable left to scale.  The constant itself is a candidate like a series: the regime search
(:mod:`.regimes`) gives it the inputs beyond a threshold it places by bisection against the exact
reference, and the never-worse check (:mod:`.accept`) judges the split as any other.

The limit is read from references at three huge inputs of each sign (2^200, 2^600, 2^1000):
when the correctly rounded float64 values agree there and are finite, that value is offered.
This is the order-0 term of the asymptotic expansion (DLMF 2.1), found numerically because the
symbolic one is out of reach; a function that still varies out there (``sin(x)/x``) gives three
different values and no candidate.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from .reference import compile_mpmath, reference_values

__all__ = ["saturation_limits"]

HUGE = (2.0**200, 2.0**600, 2.0**1000)  # inputs where the limit is read, each sign

_LIMITS: dict = {}


def saturation_limits(node: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """``[(name, constant)]`` for each sign s of the one input v where ``node`` rounds to the same
    finite float64 value at v = s*2^200, s*2^600 and s*2^1000 (names ``limit_at_inf``,
    ``limit_at_minus_inf``); ``[]`` for a node of several inputs or none.  Cached per node."""
    syms = sorted(node.free_symbols, key=str)
    if len(syms) != 1:
        return []
    if node in _LIMITS:
        return list(_LIMITS[node])
    fn = compile_mpmath(node, syms)
    out = []
    for sign, name in ((1.0, "limit_at_inf"), (-1.0, "limit_at_minus_inf")):
        with np.errstate(all="ignore"):
            ref = reference_values(fn, np.array([[sign * h] for h in HUGE]), np.float64)
        if np.all(np.isfinite(ref)) and np.all(ref == ref[0]):
            c = float(ref[0])
            out.append((name, sp.Integer(int(c)) if c.is_integer() else sp.Float(c)))
    if len(_LIMITS) > 5000:
        _LIMITS.clear()
    _LIMITS[node] = tuple(out)
    return out
