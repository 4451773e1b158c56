"""Double-double regions on the interpreter's tape: :mod:`symgrad.ir.ddmath` as tape instructions.

A ``dd_region`` node (:mod:`symgrad.ir.rules.ddregion`) is printed into a float64 Numba kernel
as a call of a helper that runs its program with :mod:`symgrad.ir.ddmath` (Dekker 1971;
Knuth, TAOCP 4.2.2; Joldes, Muller & Popescu 2017; Hida, Li & Bailey 2001).  Those functions
use only float64 ``+ - * /``, ``abs`` and comparisons, so the tape can run the same
operations in the same order: each dd function below emits, instruction by instruction, the
operations of its namesake in ``ddmath``; a Python ``if`` there is a ``where`` here, both
sides computed (they are plain float arithmetic, never trapping) and the same side selected.
The tape's result is therefore the helper's, bit for bit; ``tests/test_tiers.py`` checks it
on random inputs, special values included.

An elementary function inside the region (``exp``, ``log``, ``sqrt``, a first-order tail ...)
is two instructions of the interpreter, ``dd_exp_hi`` and ``dd_exp_lo`` (:data:`FUNCTION_OPCODES`):
each calls ``ddmath``'s function, as the helper does, and keeps one part.  A region with first-order
tails (``ddt``) also carries its error bound, instruction by instruction as
:mod:`symgrad.ir.ddmath`'s ``dd_err_*`` functions compute it, and selects between its value and
the value of the same program with dd functions, both computed, as the helper's ``if`` does.
``hypot`` (four operands) is not lowered (:class:`NotLowerable`): such a region waits for the
compiled kernel.

float32 kernels print the region as the plain formula it stands for (its ops' own facets),
and so does their tape (:func:`lower_plain`).
"""
from __future__ import annotations

from ..ir import ddmath as D
from ..ir.ddprogram import UNARY, bound_spec, has_tails, trusted_bound, without_tails

FUNCTION_OPCODES = [f"dd_{fn}_{part}" for fn in sorted(UNARY) if fn != "neg" for part in ("hi", "lo")]


class NotLowerable(Exception):
    """The region needs a double-double routine the tape does not express."""


class _DD:
    """Emits the tape instructions of :mod:`symgrad.ir.ddmath`'s functions through ``emit``
    (``emit(opname, a, b=0, c=0) -> register``) and ``const`` (``const(value) -> register``)."""

    def __init__(self, emit, const):
        self.emit, self.const = emit, const
        self.zero = const(0.0)

    def op(self, name, *a):
        return self.emit(name, *a)

    def select(self, cond, then_pair, else_pair):
        return (self.op("where", cond, then_pair[0], else_pair[0]),
                self.op("where", cond, then_pair[1], else_pair[1]))

    def not_finite(self, h):
        """``h - h != 0.0``: true for inf and NaN."""
        return self.op("ne", self.op("sub", h, h), self.zero)

    def two_sum(self, a, b):
        s = self.op("add", a, b)
        bb = self.op("sub", s, a)
        return s, self.op("add", self.op("sub", a, self.op("sub", s, bb)), self.op("sub", b, bb))

    def fast_two_sum(self, a, b):
        s = self.op("add", a, b)
        return s, self.op("sub", b, self.op("sub", s, a))

    def split(self, a):
        big = self.op("gt", self.op("abs", a), self.const(D.DD_SPLIT_LIMIT))
        splitter = self.const(D.DD_SPLITTER)
        t = self.op("mul", splitter, a)
        hi = self.op("sub", t, self.op("sub", t, a))
        small = (hi, self.op("sub", a, hi))
        a2 = self.op("mul", a, self.const(3.725290298461914e-09))
        t2 = self.op("mul", splitter, a2)
        hi2 = self.op("sub", t2, self.op("sub", t2, a2))
        scale = self.const(268435456.0)
        large = (self.op("mul", hi2, scale), self.op("mul", self.op("sub", a2, hi2), scale))
        return self.select(big, large, small)

    def two_prod(self, a, b):
        p = self.op("mul", a, b)
        ah, al = self.split(a)
        bh, bl = self.split(b)
        e = self.op("add", self.op("sub", self.op("mul", ah, bh), p), self.op("mul", ah, bl))
        e = self.op("add", e, self.op("mul", al, bh))
        return p, self.op("add", e, self.op("mul", al, bl))

    def add(self, ah, al, bh, bl):
        sh, sl = self.two_sum(ah, bh)
        th, tl = self.two_sum(al, bl)
        sh, sl = self.fast_two_sum(sh, self.op("add", sl, th))
        sh, sl = self.fast_two_sum(sh, self.op("add", sl, tl))
        return self.select(self.not_finite(sh), (self.op("add", ah, bh), self.zero), (sh, sl))

    def mul(self, ah, al, bh, bl):
        ph, pl = self.two_prod(ah, bh)
        cross = self.op("add", self.op("mul", ah, bl), self.op("mul", al, bh))
        h, l = self.fast_two_sum(ph, self.op("add", pl, cross))  # noqa: E741
        return self.select(self.not_finite(h), (self.op("mul", ah, bh), self.zero), (h, l))

    def div(self, ah, al, bh, bl):
        q1 = self.op("div", ah, bh)  # dd_quotient is IEEE division, as the tape's div
        ph, pl = self.mul(q1, self.zero, bh, bl)
        rh, rl = self.add(ah, al, self.op("neg", ph), self.op("neg", pl))
        q2 = self.op("div", rh, bh)
        ph, pl = self.mul(q2, self.zero, bh, bl)
        rh, rl = self.add(rh, rl, self.op("neg", ph), self.op("neg", pl))
        q3 = self.op("div", rh, bh)
        q1f, q2f = self.fast_two_sum(q1, q2)
        either = self.op("add", self.op("sub", q1, q1), self.op("sub", bh, bh))  # q1 or the divisor not finite
        return self.select(self.op("ne", either, self.zero), (q1, self.zero), self.add(q1f, q2f, q3, self.zero))

    def extreme(self, op, ah, al, bh, bl):
        """:func:`~symgrad.ir.ddmath.dd_max` (``op`` "maximum") or ``dd_min``: NaN first, then the sign of
        ``(ah - bh) + (al - bl)``."""
        d = self.op("add", self.op("sub", ah, bh), self.op("sub", al, bl))
        pick_a = self.op("le", self.zero, d) if op == "maximum" else self.op("le", d, self.zero)
        out = self.select(pick_a, (ah, al), (bh, bl))
        out = self.select(self.op("ne", bh, bh), (bh, bl), out)
        return self.select(self.op("ne", ah, ah), (ah, al), out)

    def powi(self, ah, al, n):
        m = n if n >= 0 else -n
        r = (self.const(1.0), self.zero)
        base = (ah, al)
        while m > 0:
            if m % 2 == 1:
                r = self.mul(*r, *base)
            m //= 2
            if m > 0:
                base = self.mul(*base, *base)
        if n < 0:
            return self.div(self.const(1.0), self.zero, *r)
        return r


def lower_dd(program: tuple, args: list[int], emit, const) -> int:
    """Register of ``program`` (a :mod:`symgrad.ir.ddprogram` program) run in double-double on
    the argument registers ``args``, rounded once (``hi + lo``), as the kernel's helper does; a
    program with first-order tails keeps that value where its error bound allows and takes the
    value of its program with dd functions elsewhere (:func:`symgrad.ir.ddprogram.run`).

    Raises:
      NotLowerable: the program has a ``hypot`` instruction.
    """
    value, keep = lower_tails(program, args, emit, const)
    if keep is None:
        return value
    return emit("where", keep, value, lower_dd(without_tails(program), args, emit, const))


def lower_tails(program: tuple, args: list[int], emit, const) -> tuple[int, int | None]:
    """``(value, keep)``: the registers of ``program``'s value rounded once and, for a program
    with first-order tails, of the flag ``keep`` (its error bound allows the value; where it does
    not, :func:`lower_dd` takes the value of ``without_tails(program)``); ``keep`` is None for a
    program without tails.

    Raises:
      NotLowerable: the program has a ``hypot`` instruction.
    """
    dd = _DD(emit, const)
    vals = _lower(dd, program, args)
    h, l = vals[-1]  # noqa: E741
    if not has_tails(program):
        return emit("add", h, l), None
    bounds: list[int] = []
    for k, ins in enumerate(program):
        name, refs = bound_spec(ins, k)
        operands = [vals[j][0] if kind == "hi" else bounds[j] if kind == "s" else const(j) for kind, j in refs]
        bounds.append(const(0.0) if name is None else operands[0] if name == "copy" else
                      emit("add", *operands) if name == "sum" else _BOUNDS[name](dd, *operands))
    keep = emit("logical_or", emit("ne", emit("sub", h, h), dd.zero),
                emit("le", bounds[-1], emit("mul", const(trusted_bound(program)), emit("abs", h))))
    return emit("add", h, l), keep


def _lower(dd: _DD, program: tuple, args: list[int]) -> list[tuple[int, int]]:
    emit, const = dd.emit, dd.const
    vals: list[tuple[int, int]] = []
    for ins in program:
        op = ins[0]
        if op == "input":
            v = (args[ins[1]], dd.zero)
        elif op == "const":
            v = (const(ins[1]), const(ins[2]))
        elif op == "neg":
            h, l = vals[ins[1]]  # noqa: E741
            v = (emit("neg", h), emit("neg", l))
        elif op == "sub":
            (ah, al), (bh, bl) = vals[ins[1]], vals[ins[2]]
            v = dd.add(ah, al, emit("neg", bh), emit("neg", bl))
        elif op in ("add", "mul", "div"):
            v = getattr(dd, op)(*vals[ins[1]], *vals[ins[2]])
        elif op in ("maximum", "minimum"):
            v = dd.extreme(op, *vals[ins[1]], *vals[ins[2]])
        elif op == "powi":
            v = dd.powi(*vals[ins[1]], ins[2])
        elif f"dd_{op}_hi" in FUNCTION_OPCODES:
            h, l = vals[ins[1]]  # noqa: E741
            v = (emit(f"dd_{op}_hi", h, l), emit(f"dd_{op}_lo", h, l))
        else:
            raise NotLowerable(f"double-double region with {op}")
        vals.append(v)
    return vals


def _abs_times(dd: _DD, a: int, s: int) -> int:
    return dd.op("mul", dd.op("abs", a), s)


def _libm(dd: _DD, vh: int) -> int:  # 2.0 * DD_LIBM_ULPS * abs(vh), the product folded as Python and LLVM fold it
    return dd.op("mul", dd.const(2.0 * D.DD_LIBM_ULPS), dd.op("abs", vh))


def _err_log1p_tail(dd: _DD, vh: int, ah: int, sa: int) -> int:
    return dd.op("add", dd.op("div", sa, dd.op("abs", dd.op("add", dd.const(1.0), ah))), _libm(dd, vh))


# ddmath's dd_err_* functions as tape instructions, operation for operation (dd_quotient is the
# tape's IEEE division; hypot, with no tape, needs none).
_BOUNDS = {
    "dd_err_mul": lambda dd, ah, sa, bh, sb: dd.op("add", _abs_times(dd, ah, sb), _abs_times(dd, bh, sa)),
    "dd_err_div": lambda dd, vh, sa, bh, sb: dd.op("div", dd.op("add", sa, _abs_times(dd, vh, sb)),
                                                   dd.op("abs", bh)),
    "dd_err_powi": lambda dd, vh, ah, sa, n: dd.op("div", _abs_times(dd, dd.op("mul", n, vh), sa), dd.op("abs", ah)),
    "dd_err_sqrt": lambda dd, vh, sa: dd.op("div", sa, dd.op("mul", dd.const(2.0), vh)),
    "dd_err_exp_tail": lambda dd, vh, sa: _abs_times(dd, vh, dd.op("add", sa, dd.const(2.0 * D.DD_LIBM_ULPS))),
    "dd_err_expm1_tail": lambda dd, vh, sa: dd.op("add", _abs_times(dd, dd.op("add", vh, dd.const(1.0)), sa),
                                                  _libm(dd, vh)),
    "dd_err_log_tail": lambda dd, vh, ah, sa: dd.op("add", dd.op("div", sa, dd.op("abs", ah)), _libm(dd, vh)),
    "dd_err_log1p_tail": _err_log1p_tail,
}
