"""Algebraic transformations and series applied at high-error subexpressions.

These are the non-local moves of the search: SymPy's ``together``, ``cancel``,
``expand``, ``factor`` (never the heuristic, version-dependent ``simplify``)
and truncated series around 0 and infinity.  Series are only approximations;
they become useful inside a regime (see :mod:`regimes`) and are verified there.

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating
    point expressions", PLDI, sec. 4.3 (rewriting, series expansion).
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", sec. 1.14.
"""
from __future__ import annotations

import sympy as sp

__all__ = ["algebraic_variants", "series_variants", "split_powers"]

_ALG = (("together", sp.together), ("cancel", sp.cancel), ("expand", sp.expand),
        ("factor", sp.factor), ("expand_trig", sp.expand_trig))


def _ok(e) -> bool:
    return not e.has(sp.I, sp.zoo, sp.nan, sp.oo, sp.Order, sp.LambertW, sp.polar_lift)


def algebraic_variants(node: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """``[(name, new_node)]`` for each transformation that changes ``node``."""
    out, seen = [], {node}
    for name, f in _ALG:
        try:
            new = f(node)
        except Exception:  # noqa: BLE001 - polys can refuse some inputs
            continue
        if new not in seen and _ok(new):
            seen.add(new)
            out.append((name, new))
    return out


def series_variants(node: sp.Expr, orders=(2, 4, 6)) -> list[tuple[str, sp.Expr]]:
    """Truncated series of a univariate ``node`` around 0 (several orders) and infinity.

    The expansion at 0 is computed once at the highest order and truncated to
    the lower ones (keeping the terms whose exponent is below ``lead + n``);
    the expansion at infinity (expensive in SymPy) is computed once at order 3.
    Results are cached per node.
    """
    key = (node, tuple(orders))
    if key in _SERIES:
        return list(_SERIES[key])
    out = _series_variants(node, orders)
    if len(_SERIES) > 5000:
        _SERIES.clear()
    _SERIES[key] = tuple(out)
    return out


_SERIES: dict = {}


def _series_variants(node, orders):
    syms = sorted(node.free_symbols, key=str)
    if len(syms) != 1 or sp.count_ops(node) > 25 or node.has(sp.Piecewise, sp.Max, sp.Min, sp.Abs, sp.sign):
        return []
    v = syms[0]
    base = node.rewrite(sp.exp) if any(node.has(f) for f in _custom()) else node
    out = []
    try:
        s0 = sp.expand(sp.series(base, v, 0, n=max(orders)).removeO())
    except Exception:  # noqa: BLE001 - no expansion exists
        s0 = None
    if s0 is not None and s0.free_symbols and _ok(s0):
        terms = sp.Add.make_args(s0)
        exps = [t.as_coeff_exponent(v)[1] for t in terms]
        if all(e.is_Number for e in exps):
            lead = min(exps)
            seen = set()
            for n in orders:
                t = sp.Add(*[term for term, e in zip(terms, exps) if e < lead + n])
                if t not in seen and t.free_symbols:
                    seen.add(t)
                    out.append((f"series_at_0_n{n}", t))
        else:
            out.append((f"series_at_0_n{max(orders)}", s0))
    try:
        si = sp.expand(sp.series(base, v, sp.oo, n=3).removeO())
        if si.free_symbols and _ok(si) and _plausible_at_inf(base, si, v):
            out.append(("series_at_inf_n3", si))
    except Exception:  # noqa: BLE001 - no expansion exists
        pass
    out = [(name, s) for name, s in out if s != node and not s.has(sp.log(v))]
    return [(name, split_powers(s)) for name, s in out]


def split_powers(expr: sp.Expr) -> sp.Expr:
    """``c*v**-n`` -> ``((c/v)/v)...`` in every term: no ``v**n`` is formed.

    Series at infinity have terms like ``1/(2*x**2)``; ``x**2`` overflows for
    |x| > 1.3e154 although the term is representable (as a subnormal) up to
    |x| ~ 1e308.  Dividing by one factor at a time (nested unevaluated products,
    whose order the emitted code preserves) keeps every intermediate in range.
    Half-integer powers divide by ``sqrt(v)`` last.
    """
    terms = sp.Add.make_args(expr)
    new = [_split_term(t) for t in terms]
    if all(a is b for a, b in zip(new, terms)):
        return expr
    return sp.Add(*new, evaluate=False) if len(new) > 1 else new[0]


def _split_term(t):
    num, dens = [], []
    for f in sp.Mul.make_args(t):
        b, e = f.as_base_exp()
        if e.is_Rational and e < -1 and (2 * e).is_Integer and not b.is_Number:
            dens.append((b, -e))
        else:
            num.append(f)
    if not dens:
        return t
    acc = sp.Mul(*num)
    for b, e in dens:
        for _ in range(int(e)):
            acc = sp.Mul(acc, sp.Pow(b, -1), evaluate=False)
        if not e.is_Integer:
            acc = sp.Mul(acc, sp.Pow(sp.sqrt(b), -1), evaluate=False)
    return acc


def _plausible_at_inf(f, s, v) -> bool:
    """Reject a series at infinity that does not track ``f`` at v = 64 and 256.

    SymPy drops exponentially small terms (``x**3*exp(-x)``) and can return a
    polynomial unrelated to the function; such a "series" must never reach a regime.
    """
    try:
        for p in (64, 256):
            a, b = complex(sp.N(f.subs(v, p), 30)), complex(sp.N(s.subs(v, p), 30))
            if not (abs(a - b) <= 1e-2 * abs(a) or (a == 0 and abs(b) < 1e-300)):
                return False
    except Exception:  # noqa: BLE001 - cannot evaluate: do not trust the series
        return False
    return True


def _custom():
    from symgrad.ir import sympy_funcs as sf
    return tuple(sf.CUSTOM_FUNCTIONS.values())
