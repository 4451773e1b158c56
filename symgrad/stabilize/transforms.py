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

__all__ = ["algebraic_variants", "series_variants"]

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


def series_variants(node: sp.Expr, orders=(2, 4)) -> list[tuple[str, sp.Expr]]:
    """Truncated series of a univariate ``node`` around 0 and infinity."""
    syms = sorted(node.free_symbols, key=str)
    if len(syms) != 1 or sp.count_ops(node) > 25 or node.has(sp.Piecewise, sp.Max, sp.Min, sp.Abs, sp.sign):
        return []
    v = syms[0]
    base = node.rewrite(sp.exp) if any(node.has(f) for f in _custom()) else node
    out = []
    for point, tag in ((0, "series_at_0"), (sp.oo, "series_at_inf")):
        for n in orders:
            try:
                s = sp.series(base, v, point, n=n).removeO()
            except Exception:  # noqa: BLE001 - no expansion exists
                continue
            s = sp.expand(s)
            if s.free_symbols and _ok(s) and s != node and not s.has(sp.log(v)):
                out.append((f"{tag}_n{n}", s))
    return out


def _custom():
    from symgrad.ir import sympy_funcs as sf
    return tuple(sf.CUSTOM_FUNCTIONS.values())
