"""Vectorised double-double evaluation of SymPy expressions, with certified rounding.

:func:`compile_dd` turns expressions into one evaluator over :class:`.ddvalue.XD` values (a
memo shared by all of them: a subexpression used by several expressions, such as the forward
pass under every gradient entry, is evaluated once per sample, for all points at once).
:func:`round_certified` rounds the result to float64 or float32 *where the error bound
proves the rounding*: the exact value and the computed one lie strictly between the same
two rounding boundaries.  Elsewhere -- cancellation beyond what 106 bits absorb, huge
arguments of trigonometric functions, an op this module has no routine for, NaN -- the
point is reported as not certified and the caller evaluates it with mpmath
(:func:`.reference.reference_values`).  A certified value is exactly what the mpmath
reference gives (round to the target's precision with an unbounded exponent, then to the
format, as :func:`.reference.round_to` does).

References:
    Ziv (1991), "Fast evaluation of elementary mathematical functions with correctly
    rounded last bit" (round from a wider result when its error bound allows, else retry
    at higher precision: here the retry is mpmath).
    Joldes, Muller & Popescu (2017), ACM TOMS 44(2) (double-word arithmetic).
"""
from __future__ import annotations

from typing import Sequence

import mpmath
import numpy as np
import sympy as sp

from sympy.functions.elementary.piecewise import ExprCondPair

from symgrad.ir.ops import sympy_functions
from symgrad.ir.sympy_funcs import dd

from . import ddvalue as V
from .ddvalue import XD

__all__ = ["compile_dd", "round_certified", "DDEvaluator"]

_MANT = {np.dtype("float64"): 53, np.dtype("float32"): 24}


def _two(n):
    return V.const(2.0 ** -1, 0.0, 2, 0.0, n)  # 2 = 0.5 * 2**2


def _one(n):
    return V.const(1.0, 0.0, 0, 0.0, n)


def _sigmoid(x: XD) -> XD:
    s, sure = x.sign()
    one = _one(x.n)
    w = V.exp(-V.absolute(x))  # <= 1
    pos = one / (one + w)
    neg = w / (one + w)
    return _where_sure(s >= 0, pos, neg, sure)


def _softplus(x: XD) -> XD:
    return _maxx(x, V.const(0.0, 0.0, 0, 0.0, x.n)) + V.log1p(V.exp(-V.absolute(x)))


def _logaddexp(a: XD, b: XD) -> XD:
    return _maxx(a, b) + V.log1p(V.exp(-V.absolute(a - b)))


def _hypot(a: XD, b: XD) -> XD:
    return V.sqrt(a * a + b * b)


def _tanh(x: XD) -> XD:
    n = x.n
    one = _one(n)
    t = V.expm1(x.scale2(1))
    small = t / (t + _two(n))
    s, sure = x.sign()
    w = V.exp(-(V.absolute(x).scale2(1)))
    big = (one - w) / (one + w)
    big = V.where(s < 0, -big, big)
    return _where_sure(x.e <= 0, small, big, sure | (x.e <= 0))


def _sinh(x: XD) -> XD:
    one = _one(x.n)
    t = V.expm1(x)
    small = (t + t / (t + one)).scale2(-1)
    big = (V.exp(x) - V.exp(-x)).scale2(-1)
    return V.where(x.e <= 0, small, big)


def _cosh(x: XD) -> XD:
    return (V.exp(x) + V.exp(-x)).scale2(-1)


def _tan(x: XD) -> XD:
    return V.sin(x) / V.cos(x)


def _where_sure(mask, a: XD, b: XD, sure) -> XD:
    return V.where(mask, a, b).untrusted(~sure)


def _maxx(a: XD, b: XD, lo: bool = False) -> XD:
    s, sure = (a - b).sign()
    pick_a = s <= 0 if lo else s >= 0
    return _where_sure(pick_a, a, b, sure)


_UNARY = {"exp": V.exp, "log": V.log, "log1p": V.log1p, "expm1": V.expm1, "sin": V.sin, "cos": V.cos,
          "tan": _tan, "arctan": V.atan, "sinh": _sinh, "cosh": _cosh, "tanh": _tanh, "abs": V.absolute,
          "sigmoid": _sigmoid, "softplus": _softplus}
_BINARY = {"logaddexp": _logaddexp, "hypot": _hypot}
_OPS = {cls: op.name for cls, op in sympy_functions().items()}


# unary ops whose value is NaN wherever their argument is (in the dd routines and in mpmath)
_NAN_PROPAGATING = {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "arctan", "sinh", "cosh", "tanh", "abs",
                    "sigmoid", "softplus"}
CERTAIN_NAN = -1.0  # the relative error bound of a root value that is NaN for certain (no op makes r < 0)


def _marked_nan(x: XD, nan: np.ndarray) -> XD:
    """``x`` with NaN and the bound ``CERTAIN_NAN`` where ``nan``: :func:`round_certified` certifies NaN there."""
    if not nan.any():
        return x
    return XD(np.where(nan, np.nan, x.h), np.where(nan, np.nan, x.l), x.e, np.where(nan, CERTAIN_NAN, x.r))


class _Bool:
    """Boolean per point and whether it is certain."""
    __slots__ = ("v", "sure")

    def __init__(self, v, sure):
        self.v, self.sure = v, sure


def _as_bool(x) -> "_Bool":
    """A condition's value as a :class:`_Bool`: a boolean leaf of the graph arrives as a number
    (1.0 or 0.0), true where it is nonzero."""
    if isinstance(x, _Bool):
        return x
    s, sure = x.sign()
    return _Bool(s != 0, sure)


def _const_xd(expr, n) -> XD:
    if expr in (sp.oo, -sp.oo, sp.nan, sp.zoo):  # np.where(..., -np.inf, ...): left to mpmath
        raise NotImplementedError(f"double-double evaluator: constant {expr}")
    with mpmath.workprec(320):
        if expr.is_Rational:
            v = mpmath.mpf(int(expr.p)) / int(expr.q)
        elif isinstance(expr, sp.Float):
            v = mpmath.mpf(expr._mpf_)
        else:
            v = mpmath.mpf(sp.Float(expr.evalf(100), 100)._mpf_)
        if not mpmath.isfinite(v):
            raise NotImplementedError(f"double-double evaluator: constant {expr}")
        if v == 0:
            return V.const(0.0, 0.0, 0, 0.0, n)
        m, e = mpmath.frexp(v)
        hi = float(m)
        lo = float(m - hi)
        exact = (mpmath.mpf(hi) + lo) == m and (expr.is_Rational or isinstance(expr, sp.Float))
    return V.const(hi, lo, int(e), 0.0 if exact else 2.0 ** -104, n)


class DDEvaluator:
    """Evaluator of several SymPy expressions over shared subexpressions (see the module doc)."""

    def __init__(self, exprs: Sequence[sp.Expr], variables: Sequence[sp.Symbol]):
        self.exprs = [sp.sympify(e) for e in exprs]
        self.pos = {v: i for i, v in enumerate(variables)}
        for e in self.exprs:  # refuse unsupported nodes now, not at the first call
            self._check(e, set())

    def _check(self, e, seen):
        if e in seen or e in self.pos:
            return
        seen.add(e)
        if isinstance(e, (sp.Symbol, sp.Number)) or e in (sp.pi, sp.E, sp.true, sp.false):
            if isinstance(e, sp.Symbol):
                raise NotImplementedError(f"double-double evaluator: free symbol {e}")
            return
        if not e.free_symbols and not isinstance(e, sp.Piecewise):
            return
        ok = (e.is_Add or e.is_Mul or e.is_Pow or isinstance(e, (sp.Piecewise, sp.Max, sp.Min, sp.And, sp.Or,
                                                                  sp.Not, sp.StrictLessThan, sp.LessThan,
                                                                  sp.StrictGreaterThan, sp.GreaterThan,
                                                                  sp.Eq, sp.Ne, sp.logic.boolalg.BooleanTrue,
                                                                  sp.logic.boolalg.BooleanFalse))
              or _OPS.get(e.func) in _UNARY or _OPS.get(e.func) in _BINARY)
        if isinstance(e, (sp.Piecewise, ExprCondPair, dd)):
            ok = True
        if not ok:
            raise NotImplementedError(f"double-double evaluator: no routine for {e.func.__name__}")
        for a in e.args:
            if isinstance(a, sp.Basic):
                self._check(a, seen)

    def __call__(self, X: np.ndarray) -> list[XD]:
        """Values of every expression at the rows of ``X`` (n, len(variables))."""
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        memo: dict = {}
        env = [V.from_float(X[:, i]) for i in range(X.shape[1])]
        with np.errstate(all="ignore"):
            out = [self._ev(e, env, memo, n) for e in self.exprs]
            nan_memo: dict = {}
            return [_marked_nan(x, self._certain_nan(e, memo, nan_memo, n)) for e, x in zip(self.exprs, out)]

    def _certain_nan(self, e, memo, nan_memo, n) -> np.ndarray:
        """Points where ``e`` is NaN in real arithmetic for certain: a square root, a non-integer
        power or a log of a value whose sign the error bound proves negative, under sums,
        products, integer powers and elementary functions only (NaN propagates through them in
        mpmath too; a Piecewise, Max, Min or comparison may discard it, so nothing is certain
        through one).  Half the points of a bit-pattern sample of ``log(x)`` or of a box sample of
        Heron's formula are such points; without this, each went through mpmath to find its NaN."""
        hit = nan_memo.get(e)
        if hit is not None:
            return hit
        none = np.zeros(n, dtype=bool)
        rec = lambda a: self._certain_nan(a, memo, nan_memo, n)  # noqa: E731

        def negative(a):
            x = memo.get(a)
            if not isinstance(x, XD):
                return none
            s, sure = x.sign()
            return (s < 0) & sure & np.isfinite(x.r)

        out = none  # an input, a constant, or a node NaN does not pass through for certain
        if e in self.pos or not e.free_symbols:
            pass
        elif e.is_Add or e.is_Mul:
            out = np.logical_or.reduce([rec(a) for a in e.args])
        elif e.is_Pow:
            if e.base is sp.E:
                out = rec(e.exp)
            else:
                out = rec(e.base) | rec(e.exp)
                if e.exp.is_number and not e.exp.is_integer:
                    out = out | negative(e.base)
        elif isinstance(e, dd):
            out = rec(e.args[0])
        elif _OPS.get(e.func) in _NAN_PROPAGATING:
            out = rec(e.args[0])
            if _OPS.get(e.func) == "log":
                out = out | negative(e.args[0])
        nan_memo[e] = out
        return out

    def _ev(self, e, env, memo, n):
        hit = memo.get(e)
        if hit is None:
            hit = memo[e] = self._node(e, env, memo, n)
        return hit

    def _node(self, e, env, memo, n):  # noqa: C901 - one dispatch table
        ev = lambda a: self._ev(a, env, memo, n)  # noqa: E731
        if e in self.pos:
            return env[self.pos[e]]
        if isinstance(e, dd):  # a double-double mark is the identity on values
            return ev(e.args[0])
        if e is sp.true or isinstance(e, sp.logic.boolalg.BooleanTrue):
            return _Bool(np.ones(n, bool), np.ones(n, bool))
        if e is sp.false or isinstance(e, sp.logic.boolalg.BooleanFalse):
            return _Bool(np.zeros(n, bool), np.ones(n, bool))
        if not e.free_symbols and not isinstance(e, sp.Piecewise) and not e.is_Relational:
            return _const_xd(e, n)
        if e.is_Add:
            acc = ev(e.args[0])
            for a in e.args[1:]:
                acc = acc + ev(a)
            return acc
        if e.is_Mul:
            acc = ev(e.args[0])
            for a in e.args[1:]:
                acc = acc * ev(a)
            return acc
        if e.is_Pow:
            return self._pow(e, ev, n)
        name = _OPS.get(e.func)
        if name in _UNARY:
            return _UNARY[name](ev(e.args[0]))
        if name in _BINARY:
            return _BINARY[name](*[ev(a) for a in e.args])
        if isinstance(e, (sp.Max, sp.Min)):
            acc = ev(e.args[0])
            for a in e.args[1:]:
                acc = _maxx(acc, ev(a), lo=isinstance(e, sp.Min))
            return acc
        if isinstance(e, sp.Piecewise):
            vals = [(ev(p.expr), _as_bool(ev(p.cond))) for p in e.args]
            out = vals[-1][0]
            taken = vals[-1][1].v.copy()
            sure = vals[-1][1].sure.copy()
            for val, cond in reversed(vals[:-1]):
                out = V.where(cond.v, val, out)
                taken |= cond.v
                sure &= cond.sure
            return out.untrusted(~sure | ~taken)
        if e.is_Relational:
            a, b = ev(e.lhs), ev(e.rhs)
            s, sure = (a - b).sign()
            v = {sp.StrictLessThan: s < 0, sp.LessThan: s <= 0, sp.StrictGreaterThan: s > 0,
                 sp.GreaterThan: s >= 0, sp.Eq: s == 0, sp.Ne: s != 0}[type(e)]
            return _Bool(v, sure & np.isfinite(a.r) & np.isfinite(b.r))
        if isinstance(e, (sp.And, sp.Or)):
            parts = [_as_bool(ev(a)) for a in e.args]
            f = np.logical_and if isinstance(e, sp.And) else np.logical_or
            v, sure = parts[0].v, parts[0].sure
            for p in parts[1:]:
                v, sure = f(v, p.v), sure & p.sure
            return _Bool(v, sure)
        if isinstance(e, sp.Not):
            p = _as_bool(ev(e.args[0]))
            return _Bool(~p.v, p.sure)
        raise NotImplementedError(f"double-double evaluator: no routine for {e.func.__name__}")

    def _pow(self, e, ev, n):
        base, ex = e.base, e.exp
        if base is sp.E:
            return V.exp(ev(ex))
        b = ev(base)
        if ex == sp.Rational(1, 2):
            return V.sqrt(b)
        if ex.is_Integer:
            k = abs(int(ex))
            if k > 4096:
                raise NotImplementedError("double-double evaluator: integer power beyond 4096")
            acc, sq = None, b
            while k:
                if k & 1:
                    acc = sq if acc is None else acc * sq
                k >>= 1
                if k:
                    sq = sq * sq
            acc = _one(n) if acc is None else acc
            return _one(n) / acc if int(ex) < 0 else acc
        # b**y = exp(y log b), b > 0 (a negative base is NaN in real arithmetic: untrusted)
        y = ev(ex)
        out = V.exp(y * V.log(b))
        zero = (b.h == 0) & (b.r == 0)
        if ex.is_positive:
            out = V.where(zero, b, out)
        return out


def compile_dd(exprs: Sequence[sp.Expr], variables: Sequence[sp.Symbol]) -> DDEvaluator:
    """A :class:`DDEvaluator`; raises NotImplementedError for an op without a routine."""
    return DDEvaluator(exprs, variables)


def round_certified(x: XD, dtype) -> tuple[np.ndarray, np.ndarray]:
    """``(values, certified)``: ``x`` rounded to ``dtype`` as :func:`.reference.round_to` rounds
    the exact value (nearest, ``p`` bits, then to the format), and where that rounding is proven
    by the error bound.  Uncertified entries hold NaN."""
    dt = np.dtype(dtype)
    p = _MANT[dt]
    with np.errstate(all="ignore"):
        # mantissa in [1, 2): m = 2h, exponent e - 1; quantum 2^(1-p) relative to m
        mh, ml = 2 * x.h, 2 * x.l
        n_int = np.ldexp(mh, p - 1)             # m / quantum (exact)
        k = np.rint(n_int)
        d = (n_int - k) + np.ldexp(ml, p - 1)   # residual in quanta
        unc = np.abs(mh) * x.r * 2.0 ** (p - 1) * V.SAFE + np.abs(d) * 2.0 ** -50
        ok = (np.abs(d) + unc < 0.5 - 2.0 ** -30) & np.isfinite(x.r) & (x.h != 0)
        # below a power of two the quantum halves: the boundary there is a quarter of a quantum away
        ok &= (np.abs(k) != 2.0 ** (p - 1)) | (np.abs(d) + unc < 0.25 - 2.0 ** -30)
        out = np.ldexp(k, np.clip(x.e - p, -3000, 3000).astype(np.int64))
        # certainly beyond the format: 0 below half the smallest subnormal, inf above the largest float
        lg = x.log2_abs()
        tiny_exp = -1076.0 if dt == np.float64 else -151.0
        big_exp = 1025.0 if dt == np.float64 else 129.0
        gone = (lg + np.log2(1 + x.r) < tiny_exp) & np.isfinite(x.r) & (x.h != 0)
        huge = (lg + np.log2(np.maximum(1 - x.r, 1e-300)) > big_exp) & (x.r < 0.5)
        out = np.where(gone, 0.0, np.where(huge, np.sign(x.h) * np.inf, out))
        zero = (x.h == 0) & (x.r == 0)
        out = np.where(zero, 0.0, out)
        nan = x.r == CERTAIN_NAN  # (see DDEvaluator._certain_nan)
        ok = (ok | zero | gone | huge) & ~nan
        res = out.astype(dt)
    return np.where(ok, res, dt.type(np.nan)), ok | nan
