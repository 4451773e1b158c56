"""Identities for the error function family: erf, erfc and the scaled erfcx.

``1 + erf(u)`` (the normal CDF and GELU as written with erf) cancels for u << 0, and
``erfc(u)`` underflows for u > 26.5 while ``log(erfc(u))`` or ``exp(u**2) * erfc(u)``
are ordinary numbers.  The rules offer the complement (erfc for 1 - erf) and the scaled
function ``erfcx(u) = exp(u**2) erfc(u)``, which stays within [1/(u sqrt(pi)), 2 exp(u**2)];
the search decides where each form serves (a regime split on u where needed: erfcx overflows
for u < -26.6, where erfc itself is ~2).

References:
    DLMF 7.2.2 (erfc = 1 - erf), 7.2.3 (erfcx), 7.4.1 (erf(-z) = -erf z, erfc(-z) = 2 - erfc z).
    Cody (1969), "Rational Chebyshev approximations for the error function" (erfcx for large z).
"""
from __future__ import annotations

import sympy as sp

from symgrad.ir.rules.special import erfcx, erfcx_prime, log_ndtr, ndtr
from symgrad.ir.sympy_funcs import log1p
from .rules_util import Rewrite, coeff_and_rest, offset_terms, x

__all__ = ["ERF_RULES"]


def _erfc_neg(u):
    """``erfc(-u)`` as written: SymPy would turn it back into ``2 - erfc(u)``."""
    return sp.erfc(-u, evaluate=False)


def _erf_complement(node):
    """``k + c*erf(u)`` with ``c = -k`` or ``c = k`` -> ``k*erfc(u)`` or ``k*erfc(-u)``; ``k + c*erfc(u)``
    with ``c = -k`` -> ``k*erf(u)``, with ``k = -2c`` -> ``-c*erfc(-u)`` (DLMF 7.2.2, 7.4.1).  ``1 + erf(u)``
    cancels for u << 0 (GELU written with erf is 0 at x = -30, the truth -1.5e-196), ``1 - erfc(u)``
    near u = 0 and ``2 - erfc(u)`` for u << 0."""
    out = []
    for k, t, c, r in offset_terms(node):
        if r.func is sp.erf and c in (k, -k):
            out.append(node - t - k + k * (_erfc_neg(r.args[0]) if c == k else sp.erfc(r.args[0])))
        elif r.func is sp.erfc and c == -k:
            out.append(node - t - k + k * sp.erf(r.args[0]))
        elif r.func is sp.erfc and k == -2 * c:
            out.append(node - t - k - c * _erfc_neg(r.args[0]))
    return out


def _erfc_scaled(node):
    """``exp(w) * erfc(u)**k * rest`` -> ``exp(w - k*u**2) * erfcx(u)**k * rest`` (erfc = exp(-u**2) erfcx,
    DLMF 7.2.3): ``exp(-u**2)/erfc(u)``, the derivative of log(erfc(u)) and of the normal log-CDF, is
    0/0 for u > 26.5 and becomes ``1/erfcx(u)``; ``exp(u**2)*erfc(u)`` is inf*0 and becomes erfcx(u).
    On a sum, every term at once: the second derivative of the normal log-CDF has two such terms,
    and scaling one leaves the other 0/0 at the same points (no step the search would keep)."""
    if node.is_Add:
        terms = [_erfc_scaled(t) if t.is_Mul else [] for t in node.args]
        if sum(1 for c in terms if c) < 2:
            return []
        return [sp.Add(*[c[0] if c else t for t, c in zip(node.args, terms)])]
    if not node.is_Mul:
        return []
    out = []
    exps = [g for g in node.args if g.func is sp.exp]
    for f in node.args:
        base, k = f.as_base_exp()
        if base.func is not sp.erfc or not k.is_Integer:
            continue
        u = base.args[0]
        for g in exps:
            rest = node / (g * f)
            w = sp.expand(g.args[0] - k * u**2)
            out.append(rest * (sp.exp(w) if w != 0 else 1) * erfcx(u) ** k)
    return out


def _log_erfc(node):
    """``log(c*erfc(u))`` -> ``log(c) + log(erfcx(u)) - u**2`` (c > 0): erfc underflows to 0 for u > 26.5
    (log gives -inf; the normal log-CDF at x = -40 is -804.6), erfcx(u) ~ 1/(u sqrt(pi)) does not;
    and -> ``log(2c) + log1p(-erfc(-u)/2)`` (DLMF 7.4.1): for u << 0 erfc(u) ~ 2 - tiny, whose log
    rounds the tiny part away (the normal log-CDF at x = 10 is -7.6e-24, as written 0).  Also for
    ``log(k + k*erf(u))`` (:func:`_erf_complement` of the argument), so a search cut short still has
    them one step from the formula as written."""
    if node.func is not sp.log:
        return []
    out = []
    for arg in [node.args[0]] + _erf_complement(node.args[0]):  # log(k + k*erf(u)): its complement's forms
        c, r = coeff_and_rest(arg)
        if r.func is sp.erfc and c.is_Number and c > 0:
            u = r.args[0]
            out += [sp.log(c) + sp.log(erfcx(u)) - u**2, sp.log(2 * c) + log1p(-sp.erfc(-u) / 2)]
    return out


def _erfcx_derivative(node):
    """``A*u*erfcx(u) + rest`` (A a number) -> ``(A/2)*erfcx_prime(u) + A/sqrt(pi) + rest``: with the
    constant ``-A/sqrt(pi)`` in ``rest`` the two cancel to 0 and what remains is erfcx's derivative
    2u erfcx(u) - 2/sqrt(pi) ~ -1/(sqrt(pi) u**2), which the op erfcx_prime computes without
    cancellation (DLMF 7.9.2).  The second derivative of the normal log-CDF written with erf,
    ``-(x + phi/Phi) phi/Phi``, becomes ``(x erfcx(u) + sqrt(2/pi))/erfcx(u)**2`` with u = -x/sqrt(2),
    whose numerator cancels for x << 0 (NaN at x = -40 in float64).  The constants must be exact for
    the two to cancel: a program's floats are read as closed forms first (:mod:`.constants`)."""
    if not node.is_Add:
        return []
    out = []
    for t in node.args:
        for e in t.atoms(erfcx):
            u = e.args[0]
            A = sp.cancel(t / (u * e))
            if A.is_number and A != 0:
                out.append(node - t + A / 2 * erfcx_prime(u) + A / sp.sqrt(sp.pi))
    if not out and any(f.func is erfcx and k.is_negative for t in node.args
                       for f, k in (g.as_base_exp() for g in sp.Mul.make_args(t))):
        num, den = sp.fraction(sp.together(node))  # A u/erfcx(u) + B/erfcx(u)**2: over one denominator
        if num.is_Add:
            out += [c / den for c in _erfcx_derivative(sp.expand(num))]
    return out


def _erfcx_prime_definition(node):
    """``erfcx_prime(u)`` -> ``2u erfcx(u) - 2/sqrt(pi)`` (DLMF 7.10.1 with 7.2.3), the other direction of
    :func:`_erfcx_derivative`: for u << 0 both terms have one sign (no cancellation), and a quotient
    ``erfcx_prime(u)/erfcx(u)**2``, which is inf/inf once erfcx(u) overflows (u < -26.6, log_ndtr'' for
    x > 37.7), distributes into ``2u/erfcx(u) - 2/(sqrt(pi) erfcx(u)**2)``, two finite terms."""
    if node.func is erfcx_prime:
        u = node.args[0]
        return [2 * u * erfcx(u) - 2 / sp.sqrt(sp.pi)]
    if not node.is_Mul:
        return []
    out = []
    for f in node.args:
        if f.func is erfcx_prime:  # over the product's other factors: erfcx(u)*erfcx(u)**-2 is erfcx(u)**-1
            u, rest = f.args[0], node / f
            out.append(rest * 2 * u * erfcx(u) - rest * 2 / sp.sqrt(sp.pi))
    return out


def _ndtr_forms(node):
    """``ndtr(u)`` -> ``erfc(-u/sqrt(2))/2`` (DLMF 7.18.2 with 7.2.2), where the erfc rules apply;
    ``log(c*ndtr(u))`` -> ``log(c) + log_ndtr(u)``: ndtr underflows for u < -38.5 (log gives -inf; the
    log-CDF at -40 is -804.6) and its derivative phi/Phi is 0/0 there."""
    if node.func is ndtr:
        return [_erfc_neg(node.args[0] / sp.sqrt(2)) / 2]
    if node.func is sp.log:
        c, r = coeff_and_rest(node.args[0])
        if r.func is ndtr and c.is_Number and c > 0:
            return [sp.log(c) + log_ndtr(r.args[0])]
    return []


ERF_RULES = [
    Rewrite("erf_complement", _erf_complement, "1 + erf(u) and 2 - erfc(u) cancel for u << 0, 1 - erfc(u) near 0; "
            "erfc(-u) and erf(u) do not", "DLMF 7.2.2, 7.4.1", (1 + sp.erf(x), {x: -6.0}, "float64")),
    Rewrite("erfc_scaled", _erfc_scaled, "exp(-u**2)/erfc(u) is 0/0 for u > 26.5; 1/erfcx(u) is not",
            "DLMF 7.2.3; Cody 1969", (sp.exp(x**2) * sp.erfc(x), {x: 30.0}, "float64")),
    Rewrite("log_erfc", _log_erfc, "erfc(u) underflows for u > 26.5 (log gives -inf) and rounds to 2 for u << 0; "
            "log(erfcx(u)) - u**2 and log1p(-erfc(-u)/2) do neither", "DLMF 7.2.3, 7.4.1",
            (sp.log(sp.erfc(x)), {x: 30.0}, "float64")),
    Rewrite("erfcx_derivative", _erfcx_derivative, "2u erfcx(u) - 2/sqrt(pi) cancels to -1/(sqrt(pi) u**2) "
            "for u >> 1; erfcx_prime(u) does not", "DLMF 7.9.2, 7.10.1",
            (2 * x * erfcx(x) - 2 / sp.sqrt(sp.pi), {x: 1e4}, "float64")),
    Rewrite("erfcx_prime_definition", _erfcx_prime_definition, "erfcx_prime(u)/erfcx(u)**2 is inf/inf for "
            "u < -26.6; 2u/erfcx(u) - 2/(sqrt(pi) erfcx(u)**2) is not", "DLMF 7.2.3, 7.10.1",
            (erfcx_prime(x) / erfcx(x) ** 2, {x: -30.0}, "float64")),
    Rewrite("ndtr_forms", _ndtr_forms, "ndtr(u) underflows for u < -38.5: its log is -inf and phi/Phi 0/0; "
            "log_ndtr(u) and the erfc forms are not", "DLMF 7.18.2, 7.2.2",
            (sp.log(ndtr(x)), {x: -40.0}, "float64")),
]
