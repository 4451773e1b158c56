"""Correctly rounded reference values with mpmath.

Each expression is compiled to a tree of closures over ``mpmath.mpf`` values.
Sums and products of the (exact, binary) inputs are computed *exactly*
(``exact=True``), so absorption such as ``(1e300 + 1) - 1e300`` cannot fake a
stable answer.  The working precision starts from the dynamic range of the
inputs and is raised until two consecutive precisions round to the same
float, as Herbie does with its ground-truth evaluation.

:func:`reference_values` first evaluates the expression at all points at once in
double-double arithmetic with a running error bound (:mod:`.ddeval`); the points where
that bound proves the rounding take that value (the same float), and only the others
(cancellation beyond 106 bits, huge arguments, NaN, ops without a double-double routine)
go through mpmath.  ``SYMGRAD_STABILIZE_DD=0`` in the environment turns the first pass off.

References:
    Panchekha, Sanchez-Stern, Wilcox & Tatlock (2015), "Automatically improving
    accuracy for floating point expressions", PLDI (Herbie), sec. 4.1.
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", sec. 1.12.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

import mpmath
import numpy as np
import sympy as sp

from symgrad.ir.mpmath_exp import exp_reduced
from symgrad.ir.ops import sympy_functions, sympy_relations
from symgrad.ir.sympy_funcs import dd

from .budget import check_deadline
from .ddeval import compile_dd, round_certified
from .numeric import _OncePerEnv

__all__ = ["compile_mpmath", "round_to", "reference_values", "reference_values_many", "MAX_PREC"]

# Summed cancellation of two chained float64-range cancellations (2 x ~2100 bits).
# Precision reached by doubling / total-cancellation jumps is SOFT_MAX_PREC; MAX_PREC only
# when the cancellation tracked at SOFT_MAX_PREC is below the working precision and says a
# finite precision above it suffices.  Known limitation: sin(x)/x**2 - 2*(1 - cos(x))/x**3
# at x = 3.8e-308 tracks a loss of ~5100 bits (> 4096) and needs ~5200 bits; allowing that
# escalation made hopeless points (1 - sigmoid(1e300)) cost seconds per sample, so such
# points keep the 4096-bit value (off by 0.3% there).
MAX_PREC = 8192
SOFT_MAX_PREC = 4096
_MANT = {np.dtype("float64"): 53, np.dtype("float32"): 24}

_EXP_MEMO: dict = {}  # (argument, precision) -> exp: repeated exp(u) in one expression is computed once


def _exp(v):
    """mpmath.exp, memoised per (argument, precision) and fast for huge |v| (reduction by ln 2)."""
    if type(v) is not mpmath.mpf:
        return mpmath.exp(v)
    key = (v._mpf_, mpmath.mp.prec)
    r = _EXP_MEMO.get(key)
    if r is None:
        if len(_EXP_MEMO) > 4096:
            _EXP_MEMO.clear()
        r = _EXP_MEMO[key] = _exp_raw(v)
    return r


# Intermediates whose magnitude exceeds 2**_HUGE_MAG (far beyond any float: exp(exp(x)) at
# x = 1e300) have no usable exact value: exp of them would need ln 2, and sin/cos/tan pi, to
# that many bits (hours), and mpmath's tanh allocates a 2**mag-bit integer (MemoryError).  Such
# exp overflows to inf (or underflows to 0) and the trigonometric functions give nan, as the
# float program does; points with a non-finite reference are dropped by the sampler.
_HUGE_MAG = 1 << 15


def _huge(v) -> bool:
    return type(v) is mpmath.mpf and bool(v._mpf_[1]) and v._mpf_[2] + v._mpf_[3] > _HUGE_MAG


def _exp_raw(v):
    if _huge(v):
        return mpmath.inf if v > 0 else mpmath.mpf(0)
    return exp_reduced(v)


def _sinh(v):
    return (_exp(v) - _exp(-v)) / 2 if type(v) is mpmath.mpf and abs(v) > 64 else mpmath.sinh(v)


def _cosh(v):
    return (_exp(v) + _exp(-v)) / 2 if type(v) is mpmath.mpf and abs(v) > 64 else mpmath.cosh(v)


def _tanh(v):
    """tanh; for |v| > 64 as sign(v) (1 - 2 / (exp(2|v|) + 1)) (no cancellation there), since
    mpmath.tanh of a huge argument builds a 2**mag-bit integer."""
    if type(v) is mpmath.mpf and abs(v) > 64:
        return mpmath.sign(v) * (1 - 2 / (_exp(2 * abs(v)) + 1))
    return mpmath.tanh(v)


def _periodic(fn):
    """sin/cos/tan, nan for a huge argument (its reduction modulo pi would need mag bits of pi)."""
    return lambda v: mpmath.nan if _huge(v) else fn(v)


def _expm1(v):
    return _exp(v) - 1 if type(v) is mpmath.mpf and abs(v) > 64 else mpmath.expm1(v)


def _softplus(v):
    return _lae(v, mpmath.mpf(0))


def _lae(a, b):
    """log(exp(a) + exp(b)) with the difference exact and the final sum loss-tracked."""
    m = max(a, b)
    d = _xadd(a, -b)
    t = mpmath.log1p(_exp(-abs(d)))
    r = _xadd(m, t)
    if m and t and r:
        _note_loss(max(_mag(m), _mag(t)), r)
    return r


_ERFC_FLUSH = mpmath.mpf(2) ** 64


def _erfc(v):
    """erfc; 0 for v > 2**64, where it is below 2**(-2**128) (as exp of a huge negative argument,
    see ``_HUGE_MAG``): mpmath spends 13 ms on erfc(1e300) alone, a tenth of a bit-pattern sample."""
    return mpmath.mpf(0) if type(v) is mpmath.mpf and v > _ERFC_FLUSH else mpmath.erfc(v)


# Evaluators that replace an op's plain ``mpmath`` facet here, keyed by op name: range-safe
# or memoised versions (huge arguments), and loss-tracked ones (the cancellation bookkeeping
# lives in this module).  Every other SymPy function evaluates with its op's facet.
_OVERRIDES = {
    "exp": _exp, "sin": _periodic(mpmath.sin), "cos": _periodic(mpmath.cos), "tan": _periodic(mpmath.tan),
    "sinh": _sinh, "cosh": _cosh, "tanh": _tanh, "expm1": _expm1, "softplus": _softplus,
    "sigmoid": lambda v: 1 / (1 + _exp(-v)), "logaddexp": _lae, "erfc": _erfc,
}
# ops whose result may cancel relative to their argument (loss tracked, see ``ill`` below)
_ILL_OPS = ("log", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh")

_FUNCS = {cls: op for cls, op in sympy_functions().items()}
_UNARY = {cls: _OVERRIDES.get(op.name, op.mpmath) for cls, op in _FUNCS.items() if len(op.domain) == 1}
_CUSTOM = {cls: _OVERRIDES.get(op.name, op.mpmath) for cls, op in _FUNCS.items() if len(op.domain) != 1}
_ILL = {cls for cls, op in _FUNCS.items() if op.name in _ILL_OPS}
_REL = {cls: op.mpmath for cls, op in sympy_relations().items()}


def _const(expr):
    if expr.is_Rational:
        p, q = int(expr.p), int(expr.q)
        return lambda env: mpmath.mpf(p) / q if q != 1 else mpmath.mpf(p)
    if isinstance(expr, sp.Float):
        m = expr._mpf_
        return lambda env: mpmath.mpf(m)
    if expr is sp.pi:
        return lambda env: +mpmath.pi
    if expr is sp.E:
        return lambda env: mpmath.e()
    return None


def _mag(v):
    s, man, e, bc = v._mpf_
    return e + bc if man else None


_LOSS = [0]  # bits cancelled in the current evaluation (summed over operations)


def _note_loss(operand_mag, result):
    if type(result) is mpmath.mpf:
        m = _mag(result)
        # losses compound along a chain of cancellations, so they are summed
        # (an upper bound: independent branches are counted too)
        _LOSS[0] = min(_LOSS[0] + (10**9 if m is None else max(operand_mag - m, 0)), 10**9)


def _xadd(a, b):
    """Exact sum when the operands' magnitudes are within 20000 bits, else rounded."""
    if type(a) is mpmath.mpf and type(b) is mpmath.mpf:
        ma, mb = _mag(a), _mag(b)
        if ma is None or mb is None or abs(ma - mb) < 20000:
            return mpmath.fadd(a, b, exact=True)
    return a + b


def _xmul(a, b):
    if type(a) is mpmath.mpf and type(b) is mpmath.mpf and a._mpf_[3] + b._mpf_[3] < 40000:
        return mpmath.fmul(a, b, exact=True)
    return a * b


def _real(v):
    """Real semantics: a complex intermediate (sqrt/log of a negative) is NaN."""
    return mpmath.nan if type(v) is mpmath.mpc else v


def _real_power(base, exp):
    """``base**exp`` with real semantics: NaN for a negative base and a non-integer exponent, decided
    before mpmath computes the complex power (30 ms a point at |base| ~ 1e300: half the points of
    a bit-pattern sample of ``x**x`` are negative, and its references took 0.85 s of a 1 s budget)."""
    if type(base) is mpmath.mpf and type(exp) is mpmath.mpf and mpmath.isfinite(exp):
        if exp != mpmath.floor(exp):
            if base < 0:
                return mpmath.nan
        elif exp._mpf_[2] + exp._mpf_[3] > HUGE_EXPONENT_BITS and base and mpmath.isfinite(base):  # |exp| bits
            return _huge_integer_power(base, exp)
    return _real(mpmath.power(base, exp))


# Integer exponents beyond 2**HUGE_EXPONENT_BITS (a float exponent 1/n above 2**53 is an integer: half
# of a bit-pattern sample's 1/n) are raised as exp(n log|b|): mpmath's repeated squaring took 1.6 ms a
# point on average (3.5 ms at 2**1000) and was 3 s of the references of (x + 1)**(1/n) - x**(1/n)'s d/dn.
HUGE_EXPONENT_BITS = 100


def _huge_integer_power(base, exp):
    """``base**exp`` for an integer ``exp`` of more than HUGE_EXPONENT_BITS bits, rounded to the working
    precision: ``exp(n log|b|)`` with the log carried to ``bits(n)`` extra bits, the sign ``(-1)**n``."""
    prec = mpmath.mp.prec
    with mpmath.workprec(prec + exp._mpf_[2] + exp._mpf_[3] + 30):
        r = mpmath.exp(exp * mpmath.log(abs(base)))
    odd = exp._mpf_[2] == 0 and exp._mpf_[1] & 1
    return -(+r) if base < 0 and odd else +r


def _is_exact(e) -> bool:
    """Statically exact nodes: inputs, rationals, and sums/products/max/min/abs of them."""
    if e.is_Symbol or e.is_Rational:
        return True
    if e.is_Add or e.is_Mul or e.func in (sp.Max, sp.Min, sp.Abs):
        return all(_is_exact(a) for a in e.args)
    return False


def _compile(expr, pos):
    """Evaluator closure of ``expr`` (``env`` = a fresh list of the arguments per evaluation).

    As in :func:`.numeric.compile_numpy`, each distinct subexpression is compiled once and
    evaluated once per call: a derivative is a DAG whose tree form grows exponentially with
    depth (each chain-rule level reuses the level below twice), and walking the tree made the
    reference of a deep gradient take minutes."""
    memo: dict = {}

    def rec(e):
        c = memo.get(e)
        if c is None:
            c = _compile_node(e, pos, rec)
            if not (e in pos or e.is_Atom):
                c = _OncePerEnv(c)
            memo[e] = c
        return c
    return rec(expr)


def _compile_node(expr, pos, rec):
    if expr in pos:
        i = pos[expr]
        return lambda env: env[i]
    if expr is sp.true:
        return lambda env: True
    if expr is sp.false:
        return lambda env: False
    if expr.is_Number or expr in (sp.pi, sp.E):
        c = _const(expr)
        if c is not None:
            return c
    if isinstance(expr, dd):  # a double-double mark is the identity on values
        return rec(expr.args[0])
    if expr.is_Add:
        parts = [rec(a) for a in expr.args]
        track = not _is_exact(expr)

        def add(env):
            vals = [p(env) for p in parts]
            acc = vals[0]
            for v in vals[1:]:
                acc = _xadd(acc, v)
            mags = [_mag(v) for v in vals if type(v) is mpmath.mpf and v._mpf_[1]] if track else []
            if len(mags) > 1 and acc:
                _note_loss(max(mags), acc)
            elif len(mags) > 1:
                _LOSS[0] = max(_LOSS[0], 10**9)
            return acc
        return add
    if expr.is_Mul:
        parts = [rec(a) for a in expr.args]
        def mul(env):
            acc = parts[0](env)
            for p in parts[1:]:
                acc = _xmul(acc, p(env))
            return acc
        return mul
    if expr.is_Pow:
        b = rec(expr.base)
        ex = expr.exp
        if ex == sp.Rational(1, 2):
            return lambda env: _real(mpmath.sqrt(b(env)))
        if ex.is_Integer:
            n = int(ex)
            return lambda env: mpmath.power(b(env), n)
        e = rec(ex)
        return lambda env: _real_power(b(env), e(env))
    f = expr.func
    if f in _UNARY and f in _ILL:
        g, a = _UNARY[f], rec(expr.args[0])
        log_like = f is sp.log
        arg_exact = _is_exact(expr.args[0])

        def ill(env):
            v = a(env)
            if log_like and type(v) is mpmath.mpf:
                if v < 0:  # real semantics; skip the complex log
                    return mpmath.nan
                if v == 1:  # cheap exact answer (high-precision AGM logs are slow)
                    if not arg_exact:
                        _LOSS[0] = 10**9
                    return mpmath.mpf(0)
            r = _real(g(v))
            if type(v) is mpmath.mpf and v._mpf_[1] and type(r) is mpmath.mpf:
                if r._mpf_[1]:
                    _note_loss(1 if log_like else max(_mag(v), 1), r)
                elif not arg_exact and not r._mpf_[2]:
                    # log(1) = 0 from a rounded argument (exp(1e-200) -> 1): total loss
                    _LOSS[0] = max(_LOSS[0], 10**9)
            return r
        return ill
    if f in _UNARY:  # log1p, acosh, asin ... of an argument outside their real domain: NaN
        g, a = _UNARY[f], rec(expr.args[0])
        return lambda env: _real(g(a(env)))
    if f in _CUSTOM:
        g, parts = _CUSTOM[f], [rec(a) for a in expr.args]
        return lambda env: _real(g(*[p(env) for p in parts]))
    if f in (sp.Max, sp.Min):
        g = max if f is sp.Max else min
        parts = [rec(a) for a in expr.args]
        return lambda env: g(p(env) for p in parts)
    if isinstance(expr, sp.Piecewise):
        pieces = [(rec(e), rec(c)) for e, c in expr.args]
        def pw(env):
            for val, cond in pieces:
                if cond(env):
                    return val(env)
            return mpmath.nan
        return pw
    if type(expr) in _REL:
        g = _REL[type(expr)]
        a, b = (rec(x) for x in expr.args)
        return lambda env: g(a(env), b(env))
    if isinstance(expr, (sp.And, sp.Or)):
        g = all if isinstance(expr, sp.And) else any
        parts = [rec(a) for a in expr.args]
        return lambda env: g(p(env) for p in parts)
    if isinstance(expr, sp.Not):
        a = rec(expr.args[0])
        return lambda env: not a(env)
    if expr in _SPECIAL_CONSTANTS:  # np.where(..., -np.inf, ...) in a traced program
        value = _SPECIAL_CONSTANTS[expr]
        return lambda env: value
    if not expr.free_symbols:
        s = expr
        return lambda env: mpmath.mpf(sp.Float(s.evalf(mpmath.mp.dps + 5), mpmath.mp.dps + 5)._mpf_)
    raise NotImplementedError(f"mpmath evaluator: unsupported node {expr.func}")


_SPECIAL_CONSTANTS = {sp.nan: mpmath.nan, sp.oo: mpmath.inf, -sp.oo: mpmath.ninf}


def _erf_complements(expr: sp.Expr) -> sp.Expr:
    """``k + k*erf(u)`` as ``k*erfc(-u)`` and ``k - k*erf(u)`` as ``k*erfc(u)`` (DLMF 7.2.2), for the
    reference only: the same value without the cancellation for which the precision loop evaluated
    erf again and again (seven times a point, 0.6 s of a 1 s budget, for the normal log-CDF written
    ``log(0.5*(1 + erf(x/sqrt 2)))``)."""
    if not expr.has(sp.erf):
        return expr

    def fix(node):
        if not node.is_Add:
            return node
        k, rest = node.as_coeff_Add()
        for t in sp.Add.make_args(rest) if k != 0 else ():
            c, r = t.as_coeff_Mul()
            if r.func is sp.erf and c in (k, -k):
                u = -r.args[0] if c == k else r.args[0]
                return sp.Add(node - t - k, k * sp.erfc(u, evaluate=False), evaluate=False)
        return node
    return sp.bottom_up(expr, fix)


def compile_mpmath(expr: sp.Expr, variables: Sequence[sp.Symbol]) -> Callable[[Sequence], object]:
    """Compile to ``f(list_of_mpf) -> mpf/mpc`` evaluated at the current mpmath precision.

    Errors (division by zero, domain errors) return ``mpmath.nan``.
    """
    expr = sp.sympify(expr)
    core = _compile(_erf_complements(expr), {v: i for i, v in enumerate(variables)})

    def f(args):
        try:
            return core(list(args))  # a new env: values are cached per env
        except (ZeroDivisionError, ValueError, OverflowError, TypeError):
            return mpmath.nan
    f.expr, f.variables = expr, tuple(variables)  # for the double-double first pass
    return f


# The double-double first pass of reference_values (see .ddeval); SYMGRAD_STABILIZE_DD=0 turns it
# off (benchmarks/bench_stability.py compares the two on the same machine state).
DOUBLE_DOUBLE = os.environ.get("SYMGRAD_STABILIZE_DD", "1") != "0"
# Below this many points the vectorised pass costs more than mpmath (its cost is a fixed number of
# NumPy calls per operation, about 1-2 ms per exp or sin whatever the size; mpmath ~50 us per point).
DD_MIN_ROWS = int(os.environ.get("SYMGRAD_STABILIZE_DD_MIN_ROWS", "24"))


def _dd_first(fn, X: np.ndarray, dt):
    """``(values, certified)`` of ``fn``'s expression at the rows of ``X`` by the double-double
    evaluator, or None (turned off, no expression attached, or an op without a routine)."""
    if not DOUBLE_DOUBLE or len(X) < DD_MIN_ROWS or getattr(fn, "expr", None) is None:
        return None
    ev = getattr(fn, "dd", None)
    if ev is None:
        try:
            ev = compile_dd([fn.expr], fn.variables)
        except NotImplementedError:
            ev = False
        fn.dd = ev
    if ev is False:
        return None
    return round_certified(ev(X)[0], dt)


def round_to(value, dtype) -> float:
    """Round an mpmath value to ``dtype`` (round to nearest); non-real -> nan."""
    dt = np.dtype(dtype)
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            return dt.type(np.nan)
        value = value.real
    if isinstance(value, bool) or not isinstance(value, mpmath.mpf):
        value = mpmath.mpf(value)
    if mpmath.isnan(value):
        return dt.type(np.nan)
    if mpmath.isinf(value):
        return dt.type(np.inf if value > 0 else -np.inf)
    with mpmath.workprec(_MANT[dt]):
        r = +value
    try:
        with np.errstate(all="ignore"):
            return dt.type(float(r))
    except OverflowError:
        return dt.type(np.inf if r > 0 else -np.inf)


def _start_prec(row, dtype) -> int:
    # Sums and products of inputs are exact and cancellation is tracked, so a
    # modest start suffices; the loop raises it where needed.
    return _MANT[np.dtype(dtype)] + 96


_MARGIN = 40  # bits of slack assumed for error amplification not tracked as cancellation


def _safely_rounded(v, r, good_bits: int, dtype) -> bool:
    """True if every value within relative ``2**-good_bits`` of ``v`` rounds to ``r``.

    Lets one evaluation suffice when the result is far from a rounding boundary
    (the common case); otherwise the caller compares two precisions.
    """
    if type(v) is not mpmath.mpf or not v or not mpmath.isfinite(v) or good_bits < _MANT[dtype] + 8:
        return False
    if np.isinf(r):  # far beyond the largest float: overflow is certain
        return _mag(v) > np.finfo(dtype).maxexp + 2
    if not np.isfinite(r) or r == 0 or abs(float(r)) < np.finfo(dtype).tiny:
        return False
    rel = mpmath.ldexp(1, -good_bits)
    with mpmath.workprec(good_bits + 16):
        lo, hi = v * (1 - rel), v * (1 + rel)
    return round_to(lo, dtype) == r and round_to(hi, dtype) == r


def reference_values(fn, X: np.ndarray, dtype) -> np.ndarray:
    """Correctly rounded values of compiled ``fn`` at rows of ``X``.

    The precision is raised (x2) until the rounded result at precision ``p``
    equals the one at ``p + 64`` *and* no addition or ill-conditioned function
    evaluation cancelled more bits than the precision can afford (tracked
    during evaluation, so ``1 - cos(1e-64)`` is not mistaken for 0).  At
    ``MAX_PREC`` the last value is used; non-real values are nan.
    """
    dt = np.dtype(dtype)
    out = np.empty(X.shape[0], dtype=dt)
    rows = range(X.shape[0])
    check_deadline()
    first = _dd_first(fn, X, dt)
    if first is not None:  # certified double-double values; mpmath only for the other rows
        out[first[1]] = first[0][first[1]]
        rows = np.flatnonzero(~first[1])
    for i in rows:
        row = X[i]
        check_deadline()  # the program's stabiliser budget (see .budget); no-op outside one
        p = _start_prec(row, dt)
        args = [mpmath.mpf(float(v)) for v in row]
        prev = None
        res = dt.type(np.nan)
        while True:
            _LOSS[0] = 0
            with mpmath.workprec(p):
                v = fn(args)
                r = round_to(v, dt)
            trusted = _LOSS[0] < p - _MANT[dt] - 24
            if p >= MAX_PREC:
                res = r
                break
            if trusted and prev is None and _safely_rounded(v, r, p - _LOSS[0] - _MARGIN, dt):
                res = r
                break
            if trusted and prev is not None and (r == prev or (np.isnan(r) and np.isnan(prev))):
                res = r
                break
            if trusted:
                with mpmath.workprec(p + 64):
                    r2 = round_to(fn(args), dt)
                if r2 == r or (np.isnan(r) and np.isnan(r2)):
                    res = r
                    break
                prev = r2
            # jump straight to a precision that covers the cancellation just observed
            # (total cancellation -- a zero result -- says nothing about the size: x4)
            need = _LOSS[0] + _MANT[dt] + 24 + _MARGIN if _LOSS[0] < MAX_PREC else 4 * p
            # beyond SOFT_MAX_PREC only for a measured, finite cancellation that the precision
            # already covers, or one that leaves a subnormal result (d/dx (1 - cos x)/x**2
            # at 3.8e-308 cancels ~5100 bits; an O(1) result at huge x is not worth 8192 bits)
            tiny = np.isfinite(r) and 0 < abs(float(r)) < np.finfo(dt).tiny  # a subnormal result
            if p >= SOFT_MAX_PREC and not (_LOSS[0] < p < need <= MAX_PREC or
                                           (tiny and _LOSS[0] < MAX_PREC and p < need <= MAX_PREC)):
                res = r
                break
            p = min(max(2 * p, need), MAX_PREC if p >= SOFT_MAX_PREC else SOFT_MAX_PREC)
        out[i] = res
    return out


def reference_values_many(exprs: Sequence[sp.Expr], variables: Sequence[sp.Symbol], X: np.ndarray,
                          dtype) -> list[np.ndarray]:
    """:func:`reference_values` of several expressions at the same points, with *one*
    double-double evaluation of their shared DAG (subexpressions common to several of them
    are evaluated once, for all points); mpmath only for the points it does not certify.
    An expression with an op that has no double-double routine goes through mpmath alone."""
    dt = np.dtype(dtype)
    fns = [compile_mpmath(e, variables) for e in exprs]
    first = [None] * len(exprs)
    if DOUBLE_DOUBLE and len(X) and exprs:
        check_deadline()
        try:
            vals = compile_dd(exprs, variables)(X)
            first = [round_certified(v, dt) for v in vals]
        except NotImplementedError:
            pass
    out = []
    for fn, fi in zip(fns, first):
        if fi is None:
            fn.dd = False  # already known: no double-double pass inside reference_values
            out.append(reference_values(fn, X, dt))
            continue
        ref = fi[0].copy()
        miss = ~fi[1]
        if miss.any():
            fn.dd = False
            ref[miss] = reference_values(fn, X[miss], dt)
        out.append(ref)
    return out


def exact_value(fn, args, rtol: float = 1e-20):
    """High-precision value of compiled ``fn`` at mpf ``args`` (None if not finite real).

    Precision doubles until no cancellation exceeded the working precision and
    the values at ``p`` and ``p + 64`` agree to ``rtol``.
    """
    p = 128
    while p <= MAX_PREC:
        check_deadline()
        _LOSS[0] = 0
        with mpmath.workprec(p):
            a = fn(args)
        trusted = _LOSS[0] < p - 80
        with mpmath.workprec(p + 64):
            b = fn(args)
        if isinstance(a, mpmath.mpc) or isinstance(b, mpmath.mpc):
            if a.imag != 0 or b.imag != 0:
                return None
            a, b = a.real, b.real
        if not (isinstance(b, mpmath.mpf) and mpmath.isfinite(b)):
            if trusted:
                return None
            # a sum cancelled to 0 at this precision, then a division by it: b + sqrt(b**2 - 4ac) at
            # b = -9.4e36, 4ac = 3e-332 needs 1400 bits (the quadratic formula's conjugate, b < 0)
            p *= 2
            continue
        if trusted and abs(a - b) <= rtol * abs(b):
            return b
        p *= 2
    return None
