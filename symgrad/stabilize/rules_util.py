"""Small structural helpers shared by the rewrite rules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

__all__ = ["Rewrite", "x", "y", "a", "b", "coeff_and_rest", "exp_terms", "offset_terms"]

@dataclass(frozen=True)
class Rewrite:
    """One identity.

    Attributes:
        name: short identifier used in reports.
        apply: ``node -> list[replacement]`` (empty when the node does not match).
        why: the numerical reason the right-hand side is better.
        ref: literature reference.
        witness: ``(naive_expr, {symbol: value}, dtype)`` where the naive form is
            inaccurate and the rewritten one is accurate.
        overflow_only: the rewrite only changes the evaluation order (the same operations,
            rounded differently); the search keeps its result only where it leaves fewer points
            at NaN/inf-level error than the form it came from, so a reordering never wins on
            rounding noise alone.
    """
    name: str
    apply: Callable[[sp.Expr], list]
    why: str
    ref: str
    witness: tuple
    overflow_only: bool = False


x, y = sp.symbols("x y", real=True)
a, b = sp.symbols("a b", real=True)  # witnesses of rules with four inputs


def coeff_and_rest(t: sp.Expr):
    """Split a product into its numeric coefficient and the rest: ``-3*exp(u) -> (-3, exp(u))``."""
    c, r = t.as_coeff_Mul()
    return c, r


def exp_terms(s: sp.Expr):
    """Exponents ``w_i`` with ``s == sum(exp(w_i))``, or None.

    Accepts ``k*exp(w)`` (k > 0 numeric, as ``exp(w + log k)``) and positive
    constants ``k`` (as ``exp(log k)``); requires at least one exp term.
    """
    terms = s.args if s.is_Add else (s,)
    ws = []
    n_exp = 0
    for t in terms:
        c, r = coeff_and_rest(t)
        if not (c.is_Number and c > 0):
            return None
        if r == 1:
            ws.append(sp.log(c))
        elif r.func is sp.exp:
            ws.append(r.args[0] + sp.log(c) if c != 1 else r.args[0])
            n_exp += 1
        else:
            return None
    return ws if n_exp >= 1 and len(ws) >= 2 else None


def constant_minus(node: sp.Expr, replacements: dict) -> list:
    """Rewrites of ``k - k*f(u) + rest``: ``replacements[f](k, u)`` stands for ``k - k*f(u)``.

    Shared by the rules that remove the cancellation in ``1 - cos(u)``, ``1 - cosh(u)``
    and ``1 - sigmoid(u)``.
    """
    if not node.is_Add:
        return []
    k, rest = node.as_coeff_Add()
    out = []
    for t in rest.args if rest.is_Add else (rest,):
        c, r = coeff_and_rest(t)
        if k != 0 and c == -k and r.func in replacements:
            out.append(node - t - k + replacements[r.func](k, r.args[0]))
    return out


def exp_factor_pairs(node: sp.Expr):
    """``(g, f, base, exponent)`` for every ``exp`` factor ``g`` and factor ``f = base**exponent``
    of a product (the shape shared by rules that cancel an exponential against another factor)."""
    if not node.is_Mul:
        return
    for g in node.args:
        if g.func is sp.exp:
            for f in node.args:
                b, e = f.as_base_exp()
                yield g, f, b, e


def offset_terms(node: sp.Expr):
    """``(k, t, c, r)`` for each term ``t = c*r`` of ``node = k + t + ...`` with a nonzero constant ``k``:
    the shape of every ``k + c*f(u)`` cancellation rule (expm1, sigmoid, tanh, erf/erfc complements)."""
    if not node.is_Add:
        return
    k, rest = node.as_coeff_Add()
    if k == 0:
        return
    for t in sp.Add.make_args(rest):
        c, r = t.as_coeff_Mul()
        yield k, t, c, r
