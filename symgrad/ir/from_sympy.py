"""Build graph nodes from a SymPy expression (the inverse of the SymPy interpreter).

Used to bring stabilised expressions back into the graph: every SymPy class a
rewrite may produce maps onto a registered primitive, and the graph's
hash-consing re-shares common subexpressions.
"""
from __future__ import annotations

import sympy as sp

from .graph import Graph
from .ddprogram import OP_NAME as DD_REGION, region_of
from .ops import sympy_functions, sympy_relations
from .sympy_funcs import dd

# SymPy class -> op name, derived from each op's ``sympy`` facet (symgrad.ir.ops)
_FUNCTIONS = {cls: op.name for cls, op in sympy_functions().items()}
_REL = {cls: op.name for cls, op in sympy_relations().items()}


def from_sympy(g: Graph, expr, leaves: dict) -> int:
    """Node id computing ``expr``; ``leaves`` maps SymPy symbols to existing node ids."""
    memo: dict = {}

    def rec(e) -> int:
        if e in memo:
            return memo[e]
        out = _build(e)
        memo[e] = out
        return out

    def _build(e) -> int:
        if e in leaves:
            return leaves[e]
        if e is sp.true or e is sp.false:
            return g.bool_const(bool(e))
        if e.is_Number or e in (sp.pi, sp.E) or e.is_NumberSymbol:
            return g.const(float(e))
        if isinstance(e, sp.Add):
            terms = sorted(e.args, key=sp.default_sort_key)
            pos = [t for t in terms if not _is_negative(t)]
            neg = [t for t in terms if _is_negative(t)]
            acc = rec(pos[0]) if pos else None
            for t in pos[1:]:
                acc = g.apply("add", acc, rec(t))
            for t in neg:
                acc = g.apply("sub", acc, rec(-t)) if acc is not None else g.apply("neg", rec(-t))
            return acc
        if isinstance(e, sp.Mul):
            if e.args[0] == -1:
                return g.apply("neg", rec(sp.Mul(*e.args[1:])))
            num, den = [], []
            for f in e.args:
                if f.is_Pow and f.exp.is_Number and f.exp < 0:
                    den.append(sp.Pow(f.base, -f.exp))
                else:
                    num.append(f)
            acc = rec(num[0]) if num else g.const(1.0)
            for f in num[1:]:
                acc = g.apply("mul", acc, rec(f))
            for f in den:
                acc = g.apply("div", acc, rec(f))
            return acc
        if isinstance(e, sp.Pow):
            base, ex = e.args
            if ex == sp.Rational(1, 2):
                return g.apply("sqrt", rec(base))
            if ex == -1:
                return g.apply("div", g.const(1.0), rec(base))
            if ex.is_Number and ex < 0:
                return g.apply("div", g.const(1.0), rec(sp.Pow(base, -ex)))
            if base == sp.E:
                return g.apply("exp", rec(ex))
            if ex.is_Rational and ex.q == 3:
                # A**(k/3) as cbrt(A)**k: pow(A, 0.3333333333333333) is the power of 1/3 rounded, off by
                # ln(A) * 1.9e-17 relative (60 ulps at A = 1e300); NaN for A < 0 as NumPy's power
                # (the real cube root there is np.cbrt's, not this power's).  Mirrored by
                # symgrad.stabilize.numeric, which scores forms as this code computes them.
                a = rec(base)
                root = g.apply("cbrt", a)
                if abs(ex.p) != 1:
                    root = g.apply("pow", root, g.const(float(abs(ex.p))))
                return g.apply("where", g.apply("lt", a, g.const(0.0)), g.const(float("nan")), root)
            if ex.is_Rational and ex.q != 1 and (delta := rational_power_residue(ex)):
                # A**(k/n) with k/n not a binary fraction: pow(A, p) with p = k/n rounded is off by
                # (k/n - p) ln(A) relative (35 ulps of A**(1/5) at A = 1e300); one term of
                # A**(k/n) = A**p * exp((k/n - p) ln A) restores it (the term is below 1e-14, its
                # square below the rounding).  Only for 0 < A < inf: 0, inf and NaN are pow's.  The
                # residue is float64's: a float32 kernel keeps the rounding of its own exponent (its
                # forms are computed in float64 where that matters, stabilize.widen).
                # Mirrored by symgrad.stabilize.numeric.
                a = rec(base)
                t = g.apply("pow", a, g.const(float(ex)))
                fix = g.apply("add", t, g.apply("mul", t, g.apply("mul", g.const(delta), g.apply("log", a))))
                inside = g.apply("logical_and", g.apply("lt", g.const(0.0), a),
                                 g.apply("lt", a, g.const(float("inf"))))
                return g.apply("where", inside, fix, t)
            return g.apply("pow", rec(base), rec(ex))
        if isinstance(e, sp.Piecewise):
            (val, cond), rest = e.args[0], e.args[1:]
            other = rec(sp.Piecewise(*rest)) if rest and not (len(rest) == 1 and rest[0][1] is sp.true) \
                else rec(rest[0][0]) if rest else g.const(float("nan"))
            if cond is sp.true:
                return rec(val)
            return g.apply("where", rec(cond), rec(val), other)
        if type(e) in _REL:
            return g.apply(_REL[type(e)], rec(e.lhs), rec(e.rhs))
        if isinstance(e, (sp.And, sp.Or)):
            name = "logical_and" if isinstance(e, sp.And) else "logical_or"
            acc = rec(e.args[0])
            for a in e.args[1:]:
                acc = g.apply(name, acc, rec(a))
            return acc
        if isinstance(e, sp.Not):
            return g.apply("logical_not", rec(e.args[0]))
        if isinstance(e, (sp.Max, sp.Min)):
            name = "maximum" if isinstance(e, sp.Max) else "minimum"
            args = sorted(e.args, key=sp.default_sort_key)
            acc = rec(args[0])
            for a in args[1:]:
                acc = g.apply(name, acc, rec(a))
            return acc
        if isinstance(e, dd):  # one double-double region node over the region's leaves, sorted by name
            syms, program = region_of(e)
            return g.apply(DD_REGION, *[rec(s) for s in syms], params=(program,))
        func = type(e)
        if func in _FUNCTIONS:
            return g.apply(_FUNCTIONS[func], *[rec(a) for a in e.args])
        raise NotImplementedError(f"no symgrad primitive for SymPy {func.__name__}: {e}")

    return rec(sp.sympify(expr))


def rational_power_residue(ex: sp.Rational) -> float:
    """``k/n - p`` rounded to float64, where ``p = float(k/n)``: the error of the exponent of
    ``pow(A, p)``, 0.0 when ``k/n`` is a binary fraction (``1/2``, ``3/4``).  ``A**(k/n)`` is
    ``pow(A, p) * (1 + residue * ln A)`` to within ``(residue * ln A)**2 / 2 < 1e-28``."""
    return float(ex - sp.Rational(float(ex)))


def _is_negative(t) -> bool:
    return t.could_extract_minus_sign() and not t.is_Number or (t.is_Number and t < 0)
