"""Float constants of a traced program read as the closed forms they round.

A user writes ``x / np.sqrt(2.0)`` or ``np.sqrt(2 / np.pi)``; the trace holds the floats
0.7071067811865475 and 0.7978845608028654, and the derivative folds more (0.3989422804014327 for
1/sqrt(2 pi), 0.6366197723675814 for 2/pi).  Identities that remove a cancellation need the exact
constants.  The second derivative of the normal log-CDF has the numerator
``sqrt(2) x erfcx(u) + 2/sqrt(pi)`` (u = -x/sqrt 2), which is ``-erfcx'(u)``, a value near
-1/(sqrt(pi) u**2), only if its constants are those; with the floats the exact value of the region
keeps a residual of about 1e-17 that grows like x**2 and dominates where the cancelled value is
small, and the erfc/erfcx rewrites leave factors ``exp(1e-17 x**2)``.

A float within 4 ulps of ``(p/q) K`` (q <= 1000, K in :data:`BASIS`; 4 ulps because a constant
folded through a few float operations drifts: 0.5 * sqrt(2/pi) is 0.39894228040143254, 3 ulps
off) is that closed form in the stabiliser's region expressions (the search, its references and
its check all see the same function), when the region holds a function whose identities tie its
constants together (:data:`TIED`).  Elsewhere the floats stay: with symbolic constants SymPy's
rewrites cost more and the search takes other paths (GELU'' written with np.sqrt(2 / np.pi) ended
at its work budget without the form it finds with the float).
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from symgrad.ir.interpret import sympy_number
from symgrad.ir.rules.special import erfcx, erfcx_prime, log_ndtr, ndtr

__all__ = ["closed_form", "exact_constants"]

_PI, _S2 = sp.pi, sp.sqrt(2)
#: the constants of the formulas users write (normal density, GELU, error function, log-space sums)
BASIS = (sp.Integer(1), _S2, sp.sqrt(3), _PI, _PI**2, sp.sqrt(_PI), sp.sqrt(2 * _PI), 1 / _PI,
         1 / sp.sqrt(_PI), 1 / sp.sqrt(2 * _PI), sp.sqrt(2 / _PI), sp.E, sp.log(2), sp.log(10))
_BASIS_F = tuple(float(k) for k in BASIS)
MAX_DENOMINATOR = 1000
ULPS = 4  # a constant folded through a few float operations drifts (0.5 * sqrt(2/pi): 3 ulps)


@lru_cache(maxsize=4096)
def closed_form(v: float) -> sp.Expr:
    """``v`` as the SymPy number it rounds: ``sympy_number(v)`` (2, 1/2, or a Float) unless ``v`` is within
    ``ULPS`` ulps of ``(p/q) K`` (``q <= MAX_DENOMINATOR``, ``K`` in ``BASIS``), then that closed form.

    0.7071067811865475 (``1/np.sqrt(2.0)``) -> sqrt(2)/2; 0.3989422804014327 -> sqrt(2)/(2 sqrt(pi));
    0.6931471805599453 -> log(2).  Others stay as they are: 0.044715 (GELU's cubic coefficient; its
    denominator is above the bound) and SELU's 1.0507009873554805 stay Floats.
    """
    exact = sympy_number(v)
    if not isinstance(exact, sp.Float) or not math.isfinite(v) or v == 0.0:
        return exact
    tol = ULPS * math.ulp(v)
    for k, kf in zip(BASIS, _BASIS_F):
        frac = Fraction(v / kf).limit_denominator(MAX_DENOMINATOR)
        if frac.numerator == 0 or abs(frac.numerator) > 10**6:
            continue
        cand = sp.Rational(frac.numerator, frac.denominator) * k
        if abs(float(cand) - v) <= tol:
            return cand
    return exact


#: functions whose identities need the exact constants of their arguments (erfc(u) = exp(-u**2) erfcx(u),
#: erfcx' = 2u erfcx(u) - 2/sqrt(pi), the normal density's 1/sqrt(2 pi) against Phi's x/sqrt(2))
TIED = (sp.erf, sp.erfc, erfcx, erfcx_prime, ndtr, log_ndtr)


def exact_constants(expr: sp.Expr) -> sp.Expr:
    """``expr`` with each Float read by :func:`closed_form` if it holds a function of :data:`TIED`, else as it is."""
    if not expr.has(*TIED):
        return expr
    floats = expr.atoms(sp.Float)
    return expr.xreplace({f: closed_form(float(f)) for f in floats}) if floats else expr
