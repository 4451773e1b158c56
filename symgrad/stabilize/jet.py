"""Truncated series in one input with the other inputs as symbolic parameters (Taylor mode).

``sympy.series`` of a multivariate expression is exact but slow: the derivative in ``t`` of
Hamming's problem 3.4.2, ``t (e^{(a+b)t} - 1) / ((e^{at} - 1)(e^{bt} - 1))``, takes 17 s to
order 7 in SymPy 1.14.  This module propagates truncated Laurent series through the expression
tree instead, one node at a time, with coefficients in the field of rational functions of the
other inputs (``QQ(a, b)``; SymPy's sparse polynomial fields), so the same expansion takes
milliseconds.  Zero tests in that field are exact, so a leading term that cancels is dropped
exactly and the relative precision left is tracked; when cancellation leaves too few terms the
expansion is repeated with more.

Supported: + - * /, integer and rational powers (a rational power needs a leading coefficient
with an exact rational root), exp, log (argument 1 + O(v)), sin, cos, tan, sinh, cosh, tanh,
atan, asin, asinh, atanh, and symgrad's stable functions through their elementary forms.  The
recurrences are the standard ones of Taylor-mode differentiation (Griewank and Walther 2008,
"Evaluating Derivatives", 2nd ed., sec. 13.2, Table 13.2); functions whose series needs a
constant outside the field (``exp(a)``, ``log(2)``, ``log(v)``) raise :class:`Unsupported`.
"""
from __future__ import annotations

import sympy as sp
from sympy.polys.domains import QQ

from symgrad.ir import sympy_funcs as sf

__all__ = ["Unsupported", "parametric_series", "power_series"]


class Unsupported(ValueError):
    """The expression has no power series in the variable with coefficients in the field."""


class _Budget:
    """Deterministic work cap (coefficient operations) so a large expression gives up early."""

    def __init__(self, ops: int):
        self.left = ops

    def charge(self, k: int):
        self.left -= k
        if self.left < 0:
            raise Unsupported("series work cap reached")


class Jet:
    """``v**val * sum(c[i] v**i) + O(v**(val + len(c)))``; ``c[0] != 0`` unless ``c`` is empty."""

    __slots__ = ("val", "c")

    def __init__(self, val: int, c: list):
        self.val, self.c = val, c

    @property
    def order(self) -> int:
        return self.val + len(self.c)


class _Ctx:
    def __init__(self, field, var, n: int, budget: _Budget):
        self.K, self.v, self.n, self.budget = field, var, n, budget
        self.memo: dict = {}

    # -- arithmetic ---------------------------------------------------------
    def const(self, k) -> Jet:
        return Jet(0, [k] + [self.K.zero] * (self.n - 1)) if k else Jet(self.n, [])

    def strip(self, val, c) -> Jet:
        i = 0
        while i < len(c) and not c[i]:
            i += 1
        return Jet(val + i, c[i:])

    def add(self, a: Jet, b: Jet) -> Jet:
        lo, hi = min(a.val, b.val), min(a.order, b.order)
        c = [self.K.zero] * max(hi - lo, 0)
        for j in (a, b):
            for i, x in enumerate(j.c):
                e = j.val + i - lo
                if e < len(c):
                    c[e] += x
        self.budget.charge(len(c))
        return self.strip(lo, c)

    def scale(self, a: Jet, k) -> Jet:
        return Jet(a.val, [k * x for x in a.c]) if k else Jet(self.n, [])

    def mul(self, a: Jet, b: Jet) -> Jet:
        p = min(len(a.c), len(b.c))
        c = [sum((a.c[j] * b.c[i - j] for j in range(i + 1)), self.K.zero) for i in range(p)]
        self.budget.charge(p * p)
        return Jet(a.val + b.val, c)

    def inv(self, a: Jet) -> Jet:
        if not a.c:
            raise Unsupported("division by a series with no known terms")
        c0 = a.c[0]
        r = 1 / c0
        y = [r]
        for k in range(1, len(a.c)):
            y.append(-r * sum((a.c[j] * y[k - j] for j in range(1, k + 1)), self.K.zero))
        self.budget.charge(len(a.c) ** 2)
        return Jet(-a.val, y)

    def taylor(self, a: Jet) -> list:
        """Coefficients of ``a`` from exponent 0 (``a`` must vanish at 0)."""
        if a.val < 1:
            raise Unsupported("function of an argument that does not vanish at 0")
        return [self.K.zero] * a.val + list(a.c)

    def norm_power(self, a: Jet, r) -> Jet:
        """``a**r`` for rational ``r`` (integer ``r``: repeated products or an inverse)."""
        if not a.c:
            raise Unsupported("power of a series with no known terms")
        if r.is_Integer:
            n = int(r)
            base = a if n >= 0 else self.inv(a)
            out = self.const(self.K.one)
            for _ in range(abs(n)):
                out = self.mul(out, base)
            return out
        val = a.val * r
        c0 = a.c[0]
        root = _rational_power(self.K, c0, r)
        if not val.is_Integer or root is None:
            raise Unsupported("rational power without an exact leading root")
        u = [x / c0 for x in a.c]  # u[0] == 1
        y = [self.K.one]
        rr = self.K.convert(r)
        for k in range(1, len(u)):
            y.append(sum(((rr * j - (k - j)) * u[j] * y[k - j] for j in range(1, k + 1)), self.K.zero) / k)
        self.budget.charge(len(u) ** 2)
        return Jet(int(val), [root * x for x in y])

    def exp(self, a: Jet) -> Jet:
        u = self.taylor(a)
        y = [self.K.one]
        for k in range(1, len(u)):
            y.append(sum((j * u[j] * y[k - j] for j in range(1, k + 1)), self.K.zero) / k)
        self.budget.charge(len(u) ** 2)
        return Jet(0, y)

    def log(self, a: Jet) -> Jet:
        if a.val != 0 or not a.c or a.c[0] != self.K.one:
            raise Unsupported("log of an argument other than 1 + O(v)")
        u = a.c
        y = [self.K.zero]
        for k in range(1, len(u)):
            y.append(u[k] - sum((i * y[i] * u[k - i] for i in range(1, k)), self.K.zero) / k)
        self.budget.charge(len(u) ** 2)
        return self.strip(0, y)

    def sincos(self, a: Jet, hyperbolic: bool):
        u = self.taylor(a)
        s, c = [self.K.zero], [self.K.one]
        sign = 1 if hyperbolic else -1
        for k in range(1, len(u)):
            s.append(sum((j * u[j] * c[k - j] for j in range(1, k + 1)), self.K.zero) / k)
            c.append(sign * sum((j * u[j] * s[k - j] for j in range(1, k + 1)), self.K.zero) / k)
        self.budget.charge(2 * len(u) ** 2)
        return self.strip(0, s), self.strip(0, c)

    def integral_of(self, a: Jet, dfdu: Jet) -> Jet:
        """``F(a)`` with ``F(0) = 0`` from ``F'(a)`` given as a series: ``(F(a))' = a' F'(a)``."""
        u = self.taylor(a)
        du = [k * u[k] for k in range(1, len(u))]  # coefficients of a' from exponent 0
        d = self.mul(Jet(0, du) if du else Jet(self.n, []), self.pad(dfdu, len(du)))
        full = [self.K.zero] * d.val + list(d.c)
        return self.strip(0, [self.K.zero] + [full[k] / (k + 1) for k in range(min(len(full), len(u) - 1))])

    def pad(self, a: Jet, p: int) -> Jet:
        return Jet(a.val, list(a.c[:p]))

    # -- expression walk ----------------------------------------------------
    def jet(self, e) -> Jet:
        hit = self.memo.get(e)
        if hit is None:
            hit = self.memo[e] = self._jet(e)
        return hit

    def _jet(self, e) -> Jet:
        K, v = self.K, self.v
        if e == v:
            return Jet(1, [K.one] + [K.zero] * (self.n - 1))
        if not e.has(v):
            if e.is_Float:
                e = sp.Rational(e)
            try:
                return self.const(K.from_sympy(e))
            except Exception as err:  # noqa: BLE001 - a constant outside the field
                raise Unsupported(f"coefficient {e} is not in {K}") from err
        if e.is_Add or e.is_Mul:
            combine = self.add if e.is_Add else self.mul
            out = self.jet(e.args[0])
            for t in e.args[1:]:
                out = combine(out, self.jet(t))
            return out
        if e.is_Pow:
            base, ex = e.args
            if ex.has(v) or not ex.is_Rational:
                if base == sp.E:
                    return self.exp(self.jet(ex))
                raise Unsupported("power with a non-rational exponent")
            return self.norm_power(self.jet(base), ex)
        if isinstance(e, sp.exp):
            return self.exp(self.jet(e.args[0]))
        if isinstance(e, sp.log):
            return self.log(self.jet(e.args[0]))
        if isinstance(e, (sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh)):
            hyper = isinstance(e, (sp.sinh, sp.cosh, sp.tanh))
            s, c = self.sincos(self.jet(e.args[0]), hyper)
            if isinstance(e, (sp.sin, sp.sinh)):
                return s
            if isinstance(e, (sp.cos, sp.cosh)):
                return c
            return self.mul(s, self.inv(c))
        if type(e) in _INVERSE:
            sign, power = _INVERSE[type(e)]
            a = self.jet(e.args[0])
            one_plus = self.add(self.const(K.one), self.scale(self.mul(a, a), K.convert(sign)))
            return self.integral_of(a, self.norm_power(one_plus, sp.Rational(power)))
        if isinstance(e, (sp.erf, sp.erfc)):  # erf(a) = integral of 2/sqrt(pi) exp(-a**2) a' (DLMF 7.2.1)
            a = self.jet(e.args[0])
            gauss = self.exp(self.scale(self.mul(a, a), K.convert(-1)))
            s = self.integral_of(a, self.scale(gauss, K.from_sympy(_TWO_OVER_SQRT_PI)))
            return s if isinstance(e, sp.erf) else self.add(self.const(K.one), self.scale(s, K.convert(-1)))
        if isinstance(e, sf.dd):
            return self.jet(e.args[0])
        if type(e) in sf.CUSTOM_FUNCTIONS.values():
            return self.jet(type(e)._elementary(*e.args))
        raise Unsupported(f"no series rule for {type(e).__name__}")


# 2/sqrt(pi) as the exact value of its nearest double: the field is rational, and the coefficients
# are rounded to floats in the end (each within an ulp or so of the exact series')
_TWO_OVER_SQRT_PI = sp.Rational(float(2 / sp.sqrt(sp.pi)))

# F(u) = integral of (1 + sign*u**2)**power: atan, atanh, asin, asinh (all vanish at 0)
_INVERSE = {sp.atan: (1, -1), sp.atanh: (-1, -1), sp.asin: (-1, sp.Rational(-1, 2)),
            sp.asinh: (1, sp.Rational(-1, 2))}


def _rational_power(K, c, r):
    """``c**r`` in ``K`` when it is exact there (``c`` a positive rational number), else None."""
    if c == K.one:
        return K.one
    try:
        num = K.to_sympy(c)
    except Exception:  # noqa: BLE001
        return None
    if not (num.is_Rational and num > 0):
        return None
    root = num**r
    return K.from_sympy(root) if root.is_Rational else None


def _field(expr, v):
    params = sorted(expr.free_symbols - {v}, key=str)
    consts = sorted({a for a in expr.atoms(sp.NumberSymbol)}, key=str)
    gens = params + consts
    return QQ.frac_field(*gens) if gens else QQ


def parametric_series(expr, v, terms: int, max_n: int = 48, ops: int = 200_000) -> list[tuple[sp.Expr, int]]:
    """The series of ``expr`` at ``v = 0`` with the other inputs as parameters.

    Args:
        expr: SymPy expression; ``v`` one of its symbols.
        terms: number of nonzero-able terms wanted after the leading one.
        max_n: cap on the working number of terms (cancellation consumes terms).
        ops: deterministic cap on coefficient operations.

    Returns:
        ``[(term, exponent)]`` in increasing exponent, ``term`` a SymPy expression in
        ``v`` and the parameters: ``expr = sum(term) + O(v**(lead + terms))``.

    Raises:
        Unsupported: no power series with coefficients rational in the parameters (and
        the constants of ``expr``), or the work cap was reached.
    """
    K = _field(expr, v)
    budget = _Budget(ops)
    n = terms + 4
    while True:
        j = _Ctx(K, v, n, budget).jet(expr)
        if len(j.c) >= terms or n >= max_n:
            break
        n = min(2 * n, max_n)
    if not j.c:
        raise Unsupported("every term cancelled at the working order")
    out = []
    for i, c in enumerate(j.c[:terms]):
        if c:
            e = j.val + i
            out.append((K.to_sympy(c) * v**e, e))
    return out


def power_series(expr, v, order: int, max_n: int = 64, ops: int = 200_000) -> sp.Expr:
    """The terms of the series of ``expr`` at ``v = 0`` with exponent below ``order``.

    What ``sympy.series(expr, v, 0, order).removeO()`` gives, for the expressions this module
    supports (other symbols of ``expr`` are parameters), at a small fraction of its cost: the
    univariate series of the stabiliser's search (orders up to 40) take milliseconds here and
    up to seconds in SymPy.

    Args:
        expr: SymPy expression; ``v`` a symbol of it.
        order: absolute truncation order (a negative order keeps only the principal part).
        max_n: cap on the working number of terms per node.
        ops: deterministic cap on coefficient operations.

    Returns:
        SymPy expression ``sum(c_k * v**k for k < order)`` (0 when no term is below ``order``).

    Raises:
        Unsupported: as :func:`parametric_series`, or ``order`` not reached within ``max_n`` terms.
    """
    K = _field(expr, v)
    budget = _Budget(ops)
    n = max(order, 1) + 4
    while True:
        j = _Ctx(K, v, n, budget).jet(expr)
        if j.order >= order:
            break
        if n >= max_n:
            raise Unsupported(f"order {order} not reached with {max_n} working terms")
        n = min(max(2 * n, n + order - j.order + 4), max_n)
    return sp.Add(*[K.to_sympy(c) * v**(j.val + i) for i, c in enumerate(j.c) if c and j.val + i < order])
