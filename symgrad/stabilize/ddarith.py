"""Double-double arithmetic on NumPy arrays: error-free transformations and kernels.

A double-double (dd) number is an unevaluated sum ``hi + lo`` of two float64 values with
``|lo| <= ulp(hi) / 2``: about 106 significant bits.  Every function here works on whole
arrays (one value per sample point), so a sample of 256 points costs a few dozen NumPy
calls per operation instead of 256 mpmath evaluations.

Error-free transformations (exact, in round-to-nearest, barring overflow):

* :func:`two_sum` (Knuth, TAOCP vol. 2, sec. 4.2.2; 6 flops, no branch),
* :func:`fast_two_sum` (Dekker 1971; needs ``|a| >= |b|`` or ``a`` of larger exponent),
* :func:`two_prod` (Dekker 1971 with Veltkamp's splitting; NumPy has no FMA).

dd operations follow Joldes, Muller & Popescu (2017), "Tight and rigorous error bounds for
basic building blocks of double-word arithmetic", ACM TOMS 44(2): :func:`add` is their
AccurateDWPlusDW (relative error <= 3u^2 + 13u^3, u = 2^-53), :func:`mul` DWTimesDW1
(<= 7u^2 without FMA), :func:`div` the QD library's three-quotient division (Hida, Li &
Bailey 2001), :func:`sqrt` one Karp-Markstein correction of the float64 root.  The error
bounds that :mod:`.ddvalue` propagates (``U_*`` below) are these with a safety factor.

The elementary kernels evaluate on reduced arguments only (the caller reduces):
:func:`expm1_small` for ``|r| <= 0.35`` (argument scaled by 2^-8, degree-10 Taylor
polynomial, 8 doublings in expm1 form: ``(1+p)^2 - 1 = p (2 + p)``, so the result is
relatively accurate), :func:`sincos_reduced` (Cody-Waite reduction by pi/2 split in
22-bit pieces, then Taylor series of sin and cos on ``|r| <= pi/4``).  Their measured
errors (``tests/stabilize/test_ddarith.py`` against mpmath) are below 2^-100 relative;
:mod:`.ddvalue` assumes 2^-93.
"""
from __future__ import annotations

import mpmath
import numpy as np

from ..ir.ddmath import dd_fast_two_sum, dd_two_sum

__all__ = ["two_sum", "fast_two_sum", "two_prod", "add", "mul", "div", "sqrt", "expm1_small",
           "sincos_reduced", "split_const", "LN2_PARTS", "PIO2_PARTS", "U_ADD", "U_MUL", "U_DIV",
           "U_SQRT", "U_KERNEL"]

# relative error bounds assumed per operation (u = 2^-53; Joldes et al. 2017 give 3u^2, 7u^2,
# ~10u^2 and ~4u^2; each is taken 4-16 times larger)
U_ADD = 2.0 ** -102
U_MUL = 2.0 ** -101
U_DIV = 2.0 ** -99
U_SQRT = 2.0 ** -100
U_KERNEL = 2.0 ** -93  # expm1_small, sincos_reduced (measured below 2^-100)

_SPLITTER = 134217729.0  # 2^27 + 1 (Veltkamp)


# The error-free sums are branch-free arithmetic, so the kernels' scalar versions work on whole
# arrays as they are (one definition: symgrad.ir.ddmath).
two_sum = dd_two_sum
fast_two_sum = dd_fast_two_sum


def _split(a):
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker; |a|, |b| < 2^996)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def add(ah, al, bh, bl):
    """dd + dd (Joldes et al. 2017, Algorithm 6, AccurateDWPlusDW)."""
    sh, sl = two_sum(ah, bh)
    th, tl = two_sum(al, bl)
    sh, sl = fast_two_sum(sh, sl + th)
    return fast_two_sum(sh, sl + tl)


def mul(ah, al, bh, bl):
    """dd * dd (Joldes et al. 2017, Algorithm 10 with Dekker's product)."""
    ph, pl = two_prod(ah, bh)
    return fast_two_sum(ph, pl + (ah * bl + al * bh))


def div(ah, al, bh, bl):
    """dd / dd: three float64 quotient digits (Hida, Li & Bailey 2001, QD's accurate division)."""
    q1 = ah / bh
    ph, pl = mul(q1, 0.0, bh, bl)
    rh, rl = add(ah, al, -ph, -pl)
    q2 = rh / bh
    ph, pl = mul(q2, 0.0, bh, bl)
    rh, rl = add(rh, rl, -ph, -pl)
    q3 = rh / bh
    q1, q2 = fast_two_sum(q1, q2)
    return add(q1, q2, q3, 0.0)


def sqrt(ah, al):
    """sqrt of a non-negative dd: float64 root plus one Karp-Markstein correction."""
    y = np.sqrt(ah)
    ph, pl = two_prod(y, y)
    rh, _ = add(ah, al, -ph, -pl)
    with np.errstate(all="ignore"):
        c = np.where(y > 0, rh / (2.0 * y), 0.0)
    return fast_two_sum(y, c)


def split_const(value, prec: int = 300):
    """``(hi, lo)`` float64 pair nearest the real constant ``value`` (an mpf, or a callable
    returning one, evaluated at ``prec`` bits)."""
    with mpmath.workprec(prec):
        v = mpmath.mpf(value() if callable(value) else value)
        hi = float(v)
        lo = float(v - hi)
    return hi, lo


def _parts(value, n: int, bits: int = 22):
    """``value()`` as a sum of ``n`` float64 pieces of ``bits`` significant bits each (Cody-Waite)."""
    out = []
    with mpmath.workprec(n * bits + 80):
        rest = mpmath.mpf(value())
        for _ in range(n):
            m, e = mpmath.frexp(rest)
            piece = mpmath.ldexp(mpmath.floor(mpmath.ldexp(m, bits)), e - bits)
            out.append(float(piece))
            rest -= piece
    return tuple(out)


# 22-bit pieces: k * piece is exact for |k| < 2^31.  7 pieces of ln 2 (154 bits), 9 of pi/2 (198 bits).
LN2_PARTS = _parts(lambda: mpmath.log(2), 7)
PIO2_PARTS = _parts(lambda: mpmath.pi / 2, 9)
PARTS_TAIL = {"ln2": 2.0 ** -152, "pio2": 2.0 ** -196}  # bounds of the omitted remainders

with mpmath.workprec(300):
    _INV_FACT = [split_const(1 / mpmath.factorial(k)) for k in range(0, 32)]


def _horner(xh, xl, coeffs):
    """sum_k coeffs[k] x^k in dd (coeffs: list of (hi, lo), constant term first)."""
    rh = np.full_like(xh, coeffs[-1][0])
    rl = np.full_like(xh, coeffs[-1][1])
    for ch, cl in reversed(coeffs[:-1]):
        rh, rl = mul(rh, rl, xh, xl)
        rh, rl = add(rh, rl, ch, cl)
    return rh, rl


def expm1_small(xh, xl):
    """expm1 of a dd with ``|x| <= 0.35``, relatively accurate (see the module docstring)."""
    rh, rl = np.ldexp(xh, -8), np.ldexp(xl, -8)
    ph, pl = _horner(rh, rl, _INV_FACT[1:12])  # expm1(r)/r = sum r^k/(k+1)!, k <= 10
    ph, pl = mul(ph, pl, rh, rl)
    for _ in range(8):  # p <- p (2 + p)
        th, tl = add(ph, pl, 2.0, 0.0)
        ph, pl = mul(ph, pl, th, tl)
    return ph, pl


def reduce(xh, xl, parts, scale):
    """``(k, rh, rl)``: ``k = rint(x / scale)`` and ``r = x - k * sum(parts)`` in dd.

    ``|k| < 2^31`` is the caller's job (each ``k * part`` is then exact).  The absolute error
    of ``r`` is below ``|k| * tail + 2^-100 (|r| + |k| 2^-20)`` (see ``PARTS_TAIL``)."""
    k = np.rint(xh / scale)
    rh, rl = xh, xl
    for p in parts:
        rh, rl = add(rh, rl, -k * p, 0.0)
    return k, rh, rl


def sincos_reduced(rh, rl):
    """``(sin r, cos r)`` in dd for ``|r| <= pi/4 + 2^-20`` (Taylor to degree 29 and 28)."""
    sh, sl = mul(rh, rl, rh, rl)
    s_coef = [(((-1) ** j) * _INV_FACT[2 * j + 1][0], ((-1) ** j) * _INV_FACT[2 * j + 1][1]) for j in range(15)]
    c_coef = [(((-1) ** j) * _INV_FACT[2 * j][0], ((-1) ** j) * _INV_FACT[2 * j][1]) for j in range(15)]
    ph, pl = _horner(sh, sl, s_coef)
    sin = mul(ph, pl, rh, rl)
    cos = _horner(sh, sl, c_coef)
    return sin, cos
