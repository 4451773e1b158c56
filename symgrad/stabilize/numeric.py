"""Evaluate SymPy expressions in a chosen floating-point format with numpy.

The evaluator walks the expression tree once and builds a chain of closures,
so every operation is rounded in the *target* format: inputs are cast to the
dtype, every constant is a numpy scalar of the dtype (so ``float32`` arithmetic
is never silently promoted to ``float64``), and quotients are evaluated the way
a code printer writes them (``num / den``).  The stable primitives of
:mod:`symgrad.ir.sympy_funcs` get the textbook stable numpy implementations (each op's
``numeric`` facet, declared with the op in :mod:`symgrad.ir.rules`).

References:
    Goldberg (1991), "What every computer scientist should know about
    floating-point arithmetic", ACM Computing Surveys 23(1).
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", 2nd ed., ch. 1-2.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np
import sympy as sp

from symgrad.ir import numpy_funcs as npf
from symgrad.emit.tape_numpy import NotLowerable, run_region
from symgrad.ir.ddprogram import region_of, run_many
from symgrad.ir.from_sympy import rational_power_residue
from symgrad.ir.ops import sympy_functions, sympy_relations
from symgrad.ir.sympy_funcs import dd

__all__ = ["compile_numpy", "evaluate", "np_softplus", "np_sigmoid", "is_constant", "may_be_real", "run_columns"]

Env = Sequence[np.ndarray]


np_softplus = npf.softplus  # the softplus/sigmoid ops' numeric facets (kept for importers)
np_sigmoid = npf.sigmoid

# SymPy class -> float evaluator in the target dtype: each op's ``numeric`` facet (symgrad.ir.ops)
_FUNCS = {cls: op.numeric for cls, op in sympy_functions().items()}
_CBRT = next(cls for cls, op in sympy_functions().items() if op.name == "cbrt")
_REL = {cls: op.numeric for cls, op in sympy_relations().items()}


_TREE_CLASSES = (sp.Add, sp.Mul, sp.Pow, sp.Function, sp.Piecewise, sp.logic.boolalg.BooleanFunction,
                 sp.core.relational.Relational)


@functools.lru_cache(maxsize=1 << 16)
def is_constant(expr: sp.Basic) -> bool:
    """``not expr.free_symbols``, memoised and computed from the children's answers.

    SymPy's ``free_symbols`` walks the whole tree on every call, so asking it at every node of
    a candidate (as the evaluator and the error localisation do) cost time quadratic in the
    depth: a tenth of a search over GELU'' went there.  Nodes of other kinds (bound variables,
    ``ExprCondPair``) keep SymPy's own answer.
    """
    if expr.is_Atom or not isinstance(expr, _TREE_CLASSES):
        return not expr.free_symbols
    return all(is_constant(a) if isinstance(a, sp.Basic) else True for a in expr.args)


def _const(expr: sp.Expr, t) -> Callable[[Env], np.ndarray]:
    val = complex(sp.N(expr, 40))
    with np.errstate(all="ignore"):
        c = t(val.real) if val.imag == 0 else t(np.nan)
    return lambda env: c


def _fold(g, parts) -> Callable[[Env], np.ndarray]:
    """Left fold of the binary ufunc ``g`` over compiled operands (Max/Min, And/Or)."""
    def fold(env):
        acc = parts[0](env)
        for p in parts[1:]:
            acc = g(acc, p(env))
        return acc
    return fold


_VALUES = "values"  # key of ``pos``: values of subexpressions on the X the function will be called with


def _compile(expr, pos: dict, t) -> Callable[[Env], np.ndarray]:
    """Memoised per :func:`compile_numpy` call (``pos[None]``): shared subexpressions
    are compiled once and evaluated once per call (DAG, not tree, cost).  A subexpression whose
    values on this call's points are already known (``pos[_VALUES]``) is neither compiled nor
    evaluated."""
    memo = pos[None]
    fn = memo.get(expr)
    if fn is None:
        known = pos[_VALUES]
        if known is not None and expr in known:
            value = known[expr]
            fn = lambda env: value  # noqa: E731
        else:
            fn = _compile_node(expr, pos, t)
            if not (expr in pos or expr.is_Atom):
                fn = _OncePerEnv(fn)
        memo[expr] = fn
    return fn


class _OncePerEnv:
    """``fn(env)`` computed once per environment (the value of one shared subexpression)."""

    __slots__ = ("fn", "env", "value")

    def __init__(self, fn):
        self.fn, self.env, self.value = fn, None, None

    def __call__(self, env):
        if self.env is not env:
            self.value = self.fn(env)
            self.env = env
        return self.value


def _compile_node(expr, pos: dict, t) -> Callable[[Env], np.ndarray]:
    if expr in pos:
        i = pos[expr]
        return lambda env: env[i]
    if isinstance(expr, sp.logic.boolalg.BooleanTrue):
        return lambda env: np.True_
    if isinstance(expr, sp.logic.boolalg.BooleanFalse):
        return lambda env: np.False_
    if not isinstance(expr, sp.Piecewise) and is_constant(expr):
        return _const(expr, t)
    if isinstance(expr, dd):
        return _compile_dd(expr, pos, t)
    if expr.is_Add:
        return _compile_add(expr, pos, t)
    if expr.is_Mul:
        return _compile_mul(expr, pos, t)
    if expr.is_Pow:
        return _compile_pow(expr.base, expr.exp, pos, t)
    f = expr.func
    if f in _FUNCS and len(expr.args) == 1:
        g, a = _FUNCS[f], _compile(expr.args[0], pos, t)
        return lambda env: g(a(env))
    if f in _FUNCS:
        g, parts = _FUNCS[f], [_compile(x, pos, t) for x in expr.args]
        return lambda env: g(*[p(env) for p in parts])
    if f in (sp.Max, sp.Min):
        g = np.maximum if f is sp.Max else np.minimum
        return _fold(g, [_compile(a, pos, t) for a in expr.args])
    if isinstance(expr, sp.Piecewise):
        pieces = [(_compile(e, pos, t), _compile(c, pos, t)) for e, c in expr.args]
        def pw(env):
            out = None
            for val, cond in reversed(pieces):
                v = val(env)
                out = v if out is None else np.where(cond(env), v, out)
            return out
        return pw
    if type(expr) in _REL:
        g = _REL[type(expr)]
        a, b = (_compile(x, pos, t) for x in expr.args)
        return lambda env: g(a(env), b(env))
    if isinstance(expr, (sp.And, sp.Or)):
        g = np.logical_and if isinstance(expr, sp.And) else np.logical_or
        return _fold(g, [_compile(a, pos, t) for a in expr.args])
    if isinstance(expr, sp.Not):
        a = _compile(expr.args[0], pos, t)
        return lambda env: np.logical_not(a(env))
    raise NotImplementedError(f"numeric evaluator: unsupported node {expr.func}")


VECTOR_ROWS = 64  # from this many points on, a region runs one NumPy operation per tape instruction


def run_columns(program: tuple, columns, recomputed: list | None = None) -> np.ndarray:
    """:func:`symgrad.ir.ddprogram.run_many`, the same bits: on a few points by :mod:`symgrad.ir.ddmath`
    point by point, on more by :func:`symgrad.emit.tape_numpy.run_region` (two to seven times faster
    on a few thousand points; a region with ``hypot`` has no tape and runs point by point)."""
    if len(columns) and np.size(columns[0]) >= VECTOR_ROWS:
        try:
            return run_region(program, columns, recomputed)
        except NotLowerable:
            pass
    return run_many(program, columns, recomputed)


def _compile_dd(expr, pos, t):
    """A double-double region: in float64 exactly the kernel's helper (:func:`symgrad.ir.ddprogram.run`'s
    bits, :func:`run_columns`); in float32 its plain formula, as float32 kernels print it."""
    if t is not np.float64:
        return _compile(expr.args[0], pos, t)
    syms, program = region_of(expr)
    parts = [_compile(s, pos, t) for s in syms]

    def region(env):
        cols = [np.broadcast_to(np.asarray(p(env), dtype=np.float64), np.shape(env[0]) if env else ())
                for p in parts]
        return run_columns(program, [c.reshape(-1) for c in cols]).reshape(np.shape(cols[0]))
    return region


def _is_negative(t) -> bool:
    return t.could_extract_minus_sign() and not t.is_Number or (t.is_Number and t < 0)


def _compile_add(expr, pos, t):
    """Same order as :func:`symgrad.ir.from_sympy.from_sympy`: positive terms added in
    ``default_sort_key`` order, then the negative ones subtracted."""
    terms = sorted(expr.args, key=sp.default_sort_key)
    pos_t = [_compile(a, pos, t) for a in terms if not _is_negative(a)]
    neg_t = [_compile(-a, pos, t) for a in terms if _is_negative(a)]

    def add(env):
        acc = pos_t[0](env) if pos_t else None
        for p in pos_t[1:]:
            acc = acc + p(env)
        for p in neg_t:
            acc = -p(env) if acc is None else acc - p(env)
        return acc
    return add


def _compile_mul(expr, pos, t):
    """As the emitted code: ``-(rest)`` for a leading -1, numerator factors multiplied in
    argument order, then *divided by each denominator factor in turn* (no product of
    denominators, so ``1/(sqrt(x)*sqrt(x+1)*...)`` does not overflow early)."""
    if expr.args[0] == -1:
        rest = _compile(sp.Mul(*expr.args[1:]), pos, t)
        return lambda env: -rest(env)
    num, den = [], []
    for a in expr.args:
        if a.is_Pow and a.exp.is_Number and a.exp.is_negative:
            den.append(sp.Pow(a.base, -a.exp))
        else:
            num.append(a)
    nf = [_compile(a, pos, t) for a in num]
    df = [_compile(a, pos, t) for a in den]
    one = t(1)

    def mul(env):
        acc = nf[0](env) if nf else one
        for p in nf[1:]:
            acc = acc * p(env)
        for p in df:
            acc = acc / p(env)
        return acc
    return mul


def _compile_pow(base, ex, pos, t):
    b = _compile(base, pos, t)
    one = t(1)
    if ex == sp.Rational(1, 2):
        return lambda env: np.sqrt(b(env))
    if ex.is_Number and ex.is_negative:  # as emitted: 1 / base**(-ex)
        inv = _compile_pow(base, -ex, pos, t)
        return lambda env: one / inv(env)
    if ex == 1:
        return b
    if ex.is_Integer:
        n = int(ex)
        return lambda env: b(env) ** n
    if ex.is_Rational and ex.q == 3:  # as emitted (symgrad.ir.from_sympy): cbrt(A)**k, NaN for A < 0
        k, nan, cbrt = int(ex.p), t(np.nan), _FUNCS[_CBRT]  # the cbrt op's own routine, as kernels call it

        def thirds(env):
            v = b(env)
            with np.errstate(invalid="ignore"):
                return np.where(v < 0, nan, cbrt(v) ** k)
        return thirds
    if base == sp.E:
        e = _compile(ex, pos, t)
        return lambda env: np.exp(e(env))
    if ex.is_Rational and (delta := rational_power_residue(ex)):  # as emitted: pow(A, p) (1 + (k/n - p) ln A)
        p, d, inf = t(float(ex)), t(delta), t(np.inf)

        def fractional(env):
            v = b(env)
            with np.errstate(all="ignore"):
                r = np.power(v, p)
                return np.where((v > 0) & (v < inf), r + r * (d * np.log(v)), r)
        return fractional
    e = _compile(ex, pos, t)
    return lambda env: np.power(b(env), e(env))


def compile_numpy(expr: sp.Expr, variables: Sequence[sp.Symbol], dtype,
                  values: dict | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """Compile ``expr`` to a function of an ``(n, len(variables))`` array.

    Args:
        expr: SymPy expression over ``variables``.
        variables: ordered input symbols.
        dtype: ``"float64"``/``"float32"`` (or numpy dtype); all arithmetic uses it.
        values: optional ``{subexpression: (n,) array}`` of values on the one ``X`` the function
            will be called with; known subexpressions are taken from it, and the call adds the
            values of the others.  A search scores hundreds of candidates on one sample, and
            they share most of their subtrees (``Search.score``).

    Returns:
        ``f(X) -> ndarray`` of shape ``(n,)`` and the requested dtype; numpy
        floating-point warnings are suppressed.
    """
    t = np.dtype(dtype).type
    pos = {v: i for i, v in enumerate(variables)}
    pos[None], pos[_VALUES] = {}, values
    core = _compile(sp.sympify(expr), pos, t)

    def f(X: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            X = np.asarray(X, dtype=t)
            env = [X[:, i] for i in range(X.shape[1])]
            out = core(env)
        if values is not None:
            values.update((e, fn.value) for e, fn in pos[None].items()
                          if isinstance(fn, _OncePerEnv) and fn.env is env)
        return np.broadcast_to(np.asarray(out, dtype=t), (X.shape[0],)).copy()
    return f


def evaluate(expr, variables, X, dtype) -> np.ndarray:
    """One-shot :func:`compile_numpy` + call."""
    return compile_numpy(expr, variables, dtype)(X)


def may_be_real(expr: sp.Expr, variables: Sequence[sp.Symbol], X: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``X`` where ``expr`` may be real: its value in complex arithmetic
    (complex128) has no imaginary part, or one that is not finite (overflow: unknown, kept).  A
    point outside the real domain (log of a negative ratio in the Bernoulli KL gradient) has no
    value a form could lose, though forms that merge two logs are finite there.  All rows if
    ``expr`` has no complex evaluation (hypot, erf ...).  A filter for samples, not a proof: the
    roundings of complex arithmetic can make a real value's imaginary part nonzero (``sqrt`` of a
    difference that rounds below 0), so such a point is left out of a sample, never given a value."""
    try:
        with np.errstate(all="ignore"):
            z = np.broadcast_to(np.asarray(compile_numpy(expr, variables, "complex128")(X.astype(np.complex128))),
                                (len(X),))
    except Exception:  # noqa: BLE001 - an op with no complex facet: no filter
        return np.ones(len(X), dtype=bool)
    return ~(np.isfinite(z.imag) & (z.imag != 0))
