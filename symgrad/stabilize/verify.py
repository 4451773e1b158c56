"""Equivalence check of a rewrite at high precision on fresh points.

Every accepted candidate must agree with the original expression, evaluated
in mpmath with exact sums/products, to a relative difference below ``1e-10``
on points the search never saw.  Points where the original itself is not
stable at the working precision (or not finite/real) are skipped.

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating
    point expressions", PLDI, sec. 4.1 (ground truth by increasing precision).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import mpmath
import numpy as np
import sympy as sp

from .reference import compile_mpmath, exact_value
from .sampling import sample_points

__all__ = ["equivalent"]

# The original's exact values at the check points, kept across candidates: one search verifies its
# candidates in turn until one passes, and on a derivative that cancels at tiny inputs each value can
# need thousands of bits.  (This saves the repeats only.  expq3's regions lost their searches to the
# program's deadline in steps that had no bound of their own, the parametric series and the regime
# split's optimiser; see transforms._parametric_variants and regimes._best_segments.)
_ORIGINAL_VALUES: dict = {}
MAX_KEPT = 20000


def equivalent(orig: sp.Expr, cand: sp.Expr, variables: Sequence[sp.Symbol], domain: Mapping | None = None,
               n: int = 24, seed: int = 12345, rtol: float = 1e-10) -> bool:
    """True if ``cand`` equals ``orig`` (relative diff < ``rtol``) at ``n`` fresh points."""
    if orig == cand:
        return True
    rng = np.random.default_rng(seed)
    X = sample_points(variables, domain, "float64", n, rng)
    fo, fc = compile_mpmath(orig, variables), compile_mpmath(cand, variables)
    key = (orig, tuple(variables), mpmath.mp.prec)
    for row in X:
        args = [mpmath.mpf(float(v)) for v in row]
        at = key + (tuple(map(float, row)),)
        if at not in _ORIGINAL_VALUES:  # the search verifies several candidates against one original
            if len(_ORIGINAL_VALUES) > MAX_KEPT:
                _ORIGINAL_VALUES.clear()
            _ORIGINAL_VALUES[at] = exact_value(fo, args)
        a = _ORIGINAL_VALUES[at]
        if a is None:
            continue
        c = exact_value(fc, args)
        if c is None or abs(c - a) > rtol * abs(a) + mpmath.mpf(2) ** -1200:
            return False
    return True
