"""SymPy function classes for the numerically careful primitives symgrad emits.

SymPy has no ``log1p``/``expm1``/``softplus``/``sigmoid``/``logaddexp``/``hypot``
as separate functions: it rewrites them into ``log``/``exp`` forms at once, which
would undo every stable rewrite.  These classes keep the stable form visible in
expressions, differentiate correctly, evaluate at any precision through mpmath
(for error measurement) and print as the matching Numba call.

References: Goldberg (1991) "What every computer scientist should know about
floating-point arithmetic", Thm. 4 (log1p); Maechler (2012) "Accurately computing
log(1 - exp(-|a|))" (softplus / log1pexp); Blanchard, Higham & Higham (2021)
"Accurately computing the log-sum-exp and softmax functions" (logaddexp).
"""
from __future__ import annotations

import mpmath
import sympy as sp

__all__ = ["log1p", "bd0", "expm1", "softplus", "sigmoid", "logaddexp", "hypot", "dd", "ddt", "strip_dd",
           "CUSTOM_FUNCTIONS"]


class _StableFunction(sp.Function):
    """Base: subclasses give ``_elementary`` (the naive form) and ``_mp`` (mpmath)."""

    @classmethod
    def _elementary(cls, *args):  # pragma: no cover - abstract
        raise NotImplementedError

    def _eval_rewrite_as_exp(self, *args, **kwargs):
        return self._elementary(*args)

    _eval_rewrite_as_log = _eval_rewrite_as_exp

    def _eval_evalf(self, prec):
        vals = [a.evalf(prec) for a in self.args]
        if not all(v.is_Number for v in vals):
            return None
        with mpmath.workprec(prec):
            r = self._mp(*[mpmath.mpf(sp.Float(v)._mpf_) for v in vals])
        return sp.Float(r, precision=prec)

    def _eval_is_extended_real(self):
        return all(a.is_extended_real for a in self.args) or None


class log1p(_StableFunction):
    """log(1 + x), accurate for |x| << 1."""
    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return sp.S.Zero

    def fdiff(self, argindex=1):
        return 1 / (1 + self.args[0])

    @classmethod
    def _elementary(cls, x):
        return sp.log(1 + x)

    @staticmethod
    def _mp(x):
        return mpmath.log1p(x)


class bd0(_StableFunction):
    """a log(a/b) + b - a (a >= 0, b > 0): the deviance term of Loader (2000), accurate where
    the two parts cancel (a near b, where it is about (a - b)^2/(2b)).  Sums of it are the
    Kullback-Leibler divergence of Bernoulli or Poisson laws and the Poisson deviance."""
    nargs = 2

    def fdiff(self, argindex=1):
        a, b = self.args
        return sp.log(a / b) if argindex == 1 else 1 - a / b

    @classmethod
    def _elementary(cls, a, b):
        return a * sp.log(a / b) + b - a

    @staticmethod
    def _mp(a, b):
        return (a * mpmath.log(a / b) if a else mpmath.mpf(0)) + b - a


class expm1(_StableFunction):
    """exp(x) - 1, accurate for |x| << 1."""
    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return sp.S.Zero

    def fdiff(self, argindex=1):
        return sp.exp(self.args[0])

    @classmethod
    def _elementary(cls, x):
        return sp.exp(x) - 1

    @staticmethod
    def _mp(x):
        return mpmath.expm1(x)


class sigmoid(_StableFunction):
    """Logistic function 1 / (1 + exp(-x)), evaluated without overflow."""
    nargs = 1

    def fdiff(self, argindex=1):
        return sigmoid(self.args[0]) * sigmoid(-self.args[0])

    @classmethod
    def _elementary(cls, x):
        return 1 / (1 + sp.exp(-x))

    @staticmethod
    def _mp(x):
        return 1 / (1 + mpmath.exp(-x))


class softplus(_StableFunction):
    """log(1 + exp(x)), evaluated as max(x, 0) + log1p(exp(-|x|))."""
    nargs = 1

    def fdiff(self, argindex=1):
        return sigmoid(self.args[0])

    @classmethod
    def _elementary(cls, x):
        return sp.log(1 + sp.exp(x))

    @staticmethod
    def _mp(x):
        return mpmath.log1p(mpmath.exp(x))


class logaddexp(_StableFunction):
    """log(exp(a) + exp(b)), evaluated as max(a, b) + log1p(exp(-|a - b|))."""
    nargs = 2

    def fdiff(self, argindex=1):
        a, b = self.args
        return sigmoid(a - b) if argindex == 1 else sigmoid(b - a)

    @classmethod
    def _elementary(cls, a, b):
        return sp.log(sp.exp(a) + sp.exp(b))

    @staticmethod
    def _mp(a, b):
        m = max(a, b)
        return m + mpmath.log(mpmath.exp(a - m) + mpmath.exp(b - m))


class hypot(_StableFunction):
    """sqrt(a**2 + b**2) without overflow or underflow of the squares."""
    nargs = 2

    def fdiff(self, argindex=1):
        return self.args[argindex - 1] / hypot(*self.args)

    @classmethod
    def _elementary(cls, a, b):
        return sp.sqrt(a**2 + b**2)

    @staticmethod
    def _mp(a, b):
        return mpmath.hypot(a, b)


class dd(sp.Function):
    """``dd(u)`` is ``u``, evaluated in double-double arithmetic and rounded once to float64.

    A mark the stabiliser puts on an ill-conditioned region of a float64 formula (see
    :mod:`symgrad.stabilize.ddregion`); mathematically the identity, so derivatives and
    references see through it (:func:`strip_dd`).  It becomes one ``dd_region`` graph node
    (:mod:`symgrad.ir.rules.ddregion`); float32 kernels evaluate ``u`` as it is.
    """
    nargs = 1

    @classmethod
    def eval(cls, u):
        if u.is_Number or u.is_Symbol:
            return u

    def fdiff(self, argindex=1):
        return sp.S.One

    def _eval_evalf(self, prec):
        return self.args[0].evalf(prec)

    def _eval_is_extended_real(self):
        return self.args[0].is_extended_real


class ddt(dd):
    """``ddt(u)`` is ``u``, its arithmetic in double-double and its elementary functions (exp,
    expm1, log, log1p) in float64 at the high part of their double-double argument plus the
    first-order term of its low part (:func:`symgrad.ir.ddmath.dd_exp_tail`), rounded once.

    Float64-accurate where the loss is the rounding of a function's argument (``exp(-a/x)``
    multiplies it by ``|a/x|``): 14-20x the float64 formula in ``benchmarks/results/dd_regions.md``,
    against 37x and more for a :class:`dd` region holding an ``exp``.  The same ``dd_region``
    graph node, its program made with ``tails=True``
    (:func:`symgrad.ir.ddprogram.from_sympy_region`).
    """


def strip_dd(expr):
    """``expr`` with every :class:`dd` (and :class:`ddt`) mark removed (the same function)."""
    expr = sp.sympify(expr)
    return expr.replace(dd, lambda u: u) if expr.has(dd) else expr


CUSTOM_FUNCTIONS = {cls.__name__: cls for cls in (log1p, bd0, expm1, softplus, sigmoid, logaddexp, hypot)}
