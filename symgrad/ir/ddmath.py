"""Double-double arithmetic on scalars: the primitives of double-double regions in kernels.

A double-double (dd) number is an unevaluated sum ``hi + lo`` of two float64 values with
``|lo| <= ulp(hi) / 2``, about 106 significant bits.  These functions take and return such
pairs as plain floats, using only float64 ``+ - * /``, comparisons and the ``math`` functions
``log1p``, ``exp``, ``expm1``, ``log``, ``sqrt``, ``frexp``, ``ldexp``, ``hypot`` and ``floor``.
The same text runs three ways, with the same roundings: inside generated kernels
(:mod:`symgrad.emit.prelude` copies the block between the two marker lines into each module
that calls it, every name prefixed ``_``, each function ``numba.njit`` with ``fastmath=False``,
so no operation is contracted or reassociated); in the stabiliser, which scores a dd region
with exactly the kernel's arithmetic (:mod:`symgrad.ir.ddprogram`); and in the tests against
mpmath.  NumPy's array versions of the same algorithms (:mod:`symgrad.stabilize.ddarith`)
compute the stabiliser's references.

Algorithms:

* error-free transformations: :func:`dd_two_sum` (Knuth, TAOCP vol. 2, 3rd ed., sec. 4.2.2,
  Theorem B), :func:`dd_fast_two_sum` (Dekker 1971, "A floating-point technique for extending
  the available precision", Numer. Math. 18), :func:`dd_two_prod` (Dekker 1971 with Veltkamp's
  splitting; Numba gives no guaranteed fused multiply-add);
* :func:`dd_add` is AccurateDWPlusDW and :func:`dd_mul` DWTimesDW1 of Joldes, Muller & Popescu
  (2017), "Tight and rigorous error bounds for basic building blocks of double-word
  arithmetic", ACM TOMS 44(2) (relative errors <= 3u^2 + 13u^3 and 7u^2 without FMA,
  u = 2^-53); :func:`dd_div` is the QD library's three-quotient division (Hida, Li & Bailey
  2001); :func:`dd_sqrt` one Karp-Markstein correction of the float64 root; :func:`dd_hypot` scales
  both arguments by one power of 2 first;
* :func:`dd_exp`: ``x = k ln2 + r`` with ln 2 in 22-bit pieces (Cody & Waite 1980; each
  ``k * piece`` exact), ``expm1(r)`` by :func:`dd_expm1_small` (``r`` scaled by 2^-4,
  degree-12 Taylor polynomial, its terms of degree 8 and more in float64, four doublings
  ``(1 + p)^2 - 1 = p (2 + p)``), then ``2^k``;
* :func:`dd_log` and :func:`dd_log1p`: ``x = m 2^e`` with ``m`` in [1/sqrt 2, sqrt 2), then
  ``log1p(m - 1)`` by one Newton step on ``expm1`` from the float64 ``log1p`` (the error of a
  Newton step is quadratic: 2^-106 relative from a 2^-53 start; Muller et al. (2018),
  "Handbook of Floating-Point Arithmetic", 2nd ed., sec. 4.9 and ch. 14);
* :func:`dd_exp_tail`, :func:`dd_expm1_tail`, :func:`dd_log_tail`, :func:`dd_log1p_tail`: the
  float64 function (libm) at the high part plus the first-order term of the low part: accurate
  to float64 (one libm rounding), not to 106 bits, at about the cost of one dd multiplication.
  They serve regions whose loss is the rounding of an elementary function's *argument*
  (``exp(-a/x)``: float64 multiplies the argument's 0.5-ulp rounding by ``|a/x|``), the
  technique of accurate ``pow`` implementations (the logarithm in extended precision, then
  ``exp(hi) (1 + lo)``; Muller et al. 2018, sec. 14.3).

Overflow and NaN: when a dd operation's high part is not finite it returns float64's own
result for the high parts (``ah + bh``, ``ah * bh`` ...) and a zero tail, so a dd region is inf
or NaN exactly where the float64 formula would be (never NaN from ``inf - inf`` in a tail).
Measured errors (``tests/stabilize/test_ddmath.py``, against mpmath): below 2^-100 relative
for the arithmetic and 2^-98 for ``exp``, ``expm1``, ``log``, ``log1p``.
"""
from __future__ import annotations

import math

__all__ = ["dd_two_sum", "dd_fast_two_sum", "dd_two_prod", "dd_add", "dd_mul", "dd_div", "dd_sqrt",
           "dd_exp", "dd_expm1", "dd_expm1_small", "dd_log", "dd_log1p", "dd_sigmoid", "dd_softplus",
           "dd_powi", "dd_hypot", "dd_exp_tail", "dd_expm1_tail", "dd_log_tail", "dd_log1p_tail",
           "dd_err_mul", "dd_err_div", "dd_err_powi", "dd_err_sqrt", "dd_err_hypot", "dd_err_exp_tail",
           "dd_err_expm1_tail", "dd_err_log_tail", "dd_err_log1p_tail"]

# ---- generated modules copy the text from here to the end marker (symgrad.emit.prelude): ----
# ---- top-level names only, using math; every name is prefixed _ there, functions njit. ----

DD_SPLITTER = 134217729.0  # 2^27 + 1 (Veltkamp)
DD_SPLIT_LIMIT = 6.696928794914171e+299  # 2^996: above it the splitting product would overflow
DD_INV_LN2 = 1.4426950408889634
DD_LN2_HI = 0.6931471805599453
DD_LN2_LO = 2.3190468138462996e-17
DD_SQRT_HALF = 0.7071067811865476
DD_EXP_MAX = 709.782712893384  # the largest float64 whose exp is finite


def dd_two_sum(a, b):
    """``(s, e)``: ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth, TAOCP 4.2.2)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def dd_fast_two_sum(a, b):
    """``(s, e)``: ``s + e = a + b`` exactly when ``|a| >= |b|`` (Dekker 1971)."""
    s = a + b
    return s, b - (s - a)


def dd_split(a):
    """Veltkamp's splitting: ``a = hi + lo`` with 26 significant bits in each part."""
    if abs(a) > DD_SPLIT_LIMIT:  # scale down by 2^-28 so that the product with the splitter is finite
        a = a * 3.725290298461914e-09
        t = DD_SPLITTER * a
        hi = t - (t - a)
        return hi * 268435456.0, (a - hi) * 268435456.0
    t = DD_SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def dd_two_prod(a, b):
    """``(p, e)``: ``p = fl(a b)`` and ``p + e = a b`` exactly, barring underflow (Dekker 1971)."""
    p = a * b
    ah, al = dd_split(a)
    bh, bl = dd_split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dd_add(ah, al, bh, bl):
    """dd + dd (Joldes, Muller & Popescu 2017, Algorithm 6, AccurateDWPlusDW)."""
    sh, sl = dd_two_sum(ah, bh)
    th, tl = dd_two_sum(al, bl)
    sh, sl = dd_fast_two_sum(sh, sl + th)
    sh, sl = dd_fast_two_sum(sh, sl + tl)
    if sh - sh != 0.0:  # inf or NaN: float64's result, no NaN from inf - inf in the tails
        return ah + bh, 0.0
    return sh, sl


def dd_mul(ah, al, bh, bl):
    """dd * dd (Joldes, Muller & Popescu 2017, Algorithm 10, DWTimesDW1, with Dekker's product)."""
    ph, pl = dd_two_prod(ah, bh)
    h, l = dd_fast_two_sum(ph, pl + (ah * bl + al * bh))  # noqa: E741
    if h - h != 0.0:
        return ah * bh, 0.0
    return h, l


def dd_quotient(a, b):
    """IEEE ``a / b`` of floats, also for ``b = 0`` (where Python raises ZeroDivisionError)."""
    if b == 0.0:
        if a != a or a == 0.0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def dd_div(ah, al, bh, bl):
    """dd / dd: three float64 quotient digits (Hida, Li & Bailey 2001, QD's accurate division)."""
    q1 = dd_quotient(ah, bh)
    if (q1 - q1) + (bh - bh) != 0.0:  # inf, NaN (a zero divisor included), an infinite divisor: float64's quotient
        return q1, 0.0
    ph, pl = dd_mul(q1, 0.0, bh, bl)
    rh, rl = dd_add(ah, al, -ph, -pl)
    q2 = rh / bh
    ph, pl = dd_mul(q2, 0.0, bh, bl)
    rh, rl = dd_add(rh, rl, -ph, -pl)
    q3 = rh / bh
    q1, q2 = dd_fast_two_sum(q1, q2)
    return dd_add(q1, q2, q3, 0.0)


def dd_sqrt(ah, al):
    """sqrt of a dd: float64 root plus one Karp-Markstein correction (NaN below 0, as float64)."""
    if ah < 0.0:
        return math.nan, 0.0
    if ah == 0.0 or ah - ah != 0.0:  # 0, -0, inf, NaN
        return ah, 0.0
    y = math.sqrt(ah)
    ph, pl = dd_two_prod(y, y)
    rh, rl = dd_add(ah, al, -ph, -pl)
    return dd_fast_two_sum(y, rh / (2.0 * y))


def dd_hypot(ah, al, bh, bl):
    """sqrt(a^2 + b^2) of two dd values without overflow or underflow of the squares: both are
    scaled by the same power of 2 (exact: ``ldexp``), which brings the larger into [1/2, 1), the
    sum of squares is formed and rooted in dd, and the root is scaled back (the scaling of LAPACK's
    ``dlapy2`` and of C99 ``hypot``, with a dd sum instead of the float64 one).  Zeros, inf and NaN
    give float64's ``hypot`` (inf if either is infinite, even with a NaN)."""
    m = max(abs(ah), abs(bh))
    if m == 0.0 or m - m != 0.0:
        return math.hypot(ah, bh), 0.0
    e = math.frexp(m)[1]
    xh, xl = math.ldexp(ah, -e), math.ldexp(al, -e)
    yh, yl = math.ldexp(bh, -e), math.ldexp(bl, -e)
    sh, sl = dd_mul(xh, xl, xh, xl)
    th, tl = dd_mul(yh, yl, yh, yl)
    sh, sl = dd_add(sh, sl, th, tl)
    rh, rl = dd_sqrt(sh, sl)
    if e <= 0:  # 2^e is a float (e >= -1073): one exact scaling
        p = math.ldexp(1.0, e)
        return rh * p, rl * p
    p = math.ldexp(1.0, e - 1)  # e <= 1024: two products, inf on overflow (math.ldexp would raise)
    h = (rh * p) * 2.0
    if h - h != 0.0:
        return h, 0.0
    return h, (rl * p) * 2.0


def dd_powi(ah, al, n):
    """dd ** n for an integer ``n`` (binary powering; ``1 / a**|n|`` for negative ``n``)."""
    m = n if n >= 0 else -n
    rh, rl = 1.0, 0.0
    bh, bl = ah, al
    while m > 0:
        if m % 2 == 1:
            rh, rl = dd_mul(rh, rl, bh, bl)
        m = m // 2
        if m > 0:
            bh, bl = dd_mul(bh, bl, bh, bl)
    if n < 0:
        return dd_div(1.0, 0.0, rh, rl)
    return rh, rl


def dd_horner_step(ph, pl, rh, rl, ch, cl):
    """``p * r + c`` in dd (one Horner step)."""
    th, tl = dd_mul(ph, pl, rh, rl)
    return dd_add(th, tl, ch, cl)


def dd_expm1_small(xh, xl):
    """expm1 of a dd with ``|x| <= 0.35``, relatively accurate (see the module docstring).

    ``r = x / 16`` (exact), ``expm1(r) = r p(r)`` with ``p(r) = sum_{k <= 12} r^k / (k+1)!``
    (truncation below 2^-108 for ``|r| <= 0.022``): the terms of degree 8 and more, below 2^-53
    of ``p``, in float64, the others in dd (Horner); then four doublings
    ``expm1(2r) = expm1(r) (2 + expm1(r))``.  Coefficients 1/(k+1)! as (hi, lo) pairs, written
    out (Numba indexes a global tuple of pairs slowly).
    """
    rh = xh * 0.0625  # 2^-4: exact
    rl = xl * 0.0625
    q = 1.1470745597729725e-11 * rh + 1.6059043836821613e-10
    q = q * rh + 2.08767569878681e-09
    q = q * rh + 2.505210838544172e-08
    q = q * rh + 2.755731922398589e-07
    q = q * rh + 2.7557319223985893e-06
    ph, pl = dd_horner_step(q, 0.0, rh, rl, 2.48015873015873e-05, 2.1511947866775882e-23)
    ph, pl = dd_horner_step(ph, pl, rh, rl, 0.0001984126984126984, 1.7209558293420705e-22)
    ph, pl = dd_horner_step(ph, pl, rh, rl, 0.001388888888888889, -5.300543954373577e-20)
    ph, pl = dd_horner_step(ph, pl, rh, rl, 0.008333333333333333, 1.1564823173178714e-19)
    ph, pl = dd_horner_step(ph, pl, rh, rl, 0.041666666666666664, 2.3129646346357427e-18)
    ph, pl = dd_horner_step(ph, pl, rh, rl, 0.16666666666666666, 9.25185853854297e-18)
    ph, pl = dd_horner_step(ph, pl, rh, rl, 0.5, 0.0)
    ph, pl = dd_horner_step(ph, pl, rh, rl, 1.0, 0.0)
    ph, pl = dd_mul(ph, pl, rh, rl)
    for _ in range(4):
        th, tl = dd_add(ph, pl, 2.0, 0.0)
        ph, pl = dd_mul(ph, pl, th, tl)
    return ph, pl


def dd_exp(xh, xl):
    """exp of a dd: Cody-Waite reduction by ln 2, :func:`dd_expm1_small`, scaling by 2^k."""
    if xh != xh:
        return xh, 0.0
    if xh > 709.79:
        return math.inf, 0.0
    if xh < -745.2:
        return 0.0, 0.0
    k = math.floor(xh * DD_INV_LN2 + 0.5)
    kf = float(k)
    rh, rl = dd_add(xh, xl, -kf * 0.6931469440460205, 0.0)  # ln 2 in 22-bit pieces (154 bits):
    rh, rl = dd_add(rh, rl, -kf * 2.3651386982237455e-07, 0.0)  # each product is exact for |k| < 2^31
    rh, rl = dd_add(rh, rl, -kf * 5.497922809290928e-14, 0.0)
    rh, rl = dd_add(rh, rl, -kf * 2.0941741261527805e-21, 0.0)
    rh, rl = dd_add(rh, rl, -kf * 3.0311720282574886e-28, 0.0)
    rh, rl = dd_add(rh, rl, -kf * 8.928834683655317e-35, 0.0)
    rh, rl = dd_add(rh, rl, -kf * 1.0908257365428066e-41, 0.0)
    ph, pl = dd_expm1_small(rh, rl)
    eh, el = dd_add(1.0, 0.0, ph, pl)
    half = k // 2  # 2^k in two exact steps: 2.0 ** k alone overflows for k = 1024
    s1 = 2.0 ** half
    s2 = 2.0 ** (k - half)
    return (eh * s1) * s2, (el * s1) * s2


def dd_expm1(xh, xl):
    """exp(x) - 1 of a dd, relatively accurate near 0."""
    if abs(xh) <= 0.35:
        return dd_expm1_small(xh, xl)
    eh, el = dd_exp(xh, xl)
    return dd_add(eh, el, -1.0, 0.0)


def dd_log1p_core(uh, ul):
    """log(1 + u) for ``-0.2929 <= u <= 0.4143``: one Newton step on expm1 from float64's log1p."""
    y = math.log1p(uh)
    dh, dl = dd_expm1_small(y, 0.0)
    nh, nl = dd_add(dh, dl, -uh, -ul)  # expm1(y) - u, exact cancellation
    return dd_fast_two_sum(y, -nh / (1.0 + dh))  # y - (expm1(y) - u) / (1 + expm1(y))


def dd_log(xh, xl):
    """log of a dd: ``x = m 2^e`` with ``m`` in [1/sqrt 2, sqrt 2), ``e ln2 + log1p(m - 1)``."""
    if xh != xh or xh < 0.0:
        return math.nan, 0.0
    if xh == 0.0:
        return -math.inf, 0.0
    if xh == math.inf:
        return xh, 0.0
    m, e = math.frexp(xh)
    if m < DD_SQRT_HALF:
        m = 2.0 * m
        e = e - 1
    ml = math.ldexp(xl, -e)
    uh, ul = dd_add(m, ml, -1.0, 0.0)
    yh, yl = dd_log1p_core(uh, ul)
    if e == 0:
        return yh, yl
    ch, cl = dd_mul(float(e), 0.0, DD_LN2_HI, DD_LN2_LO)
    return dd_add(ch, cl, yh, yl)


def dd_log1p(xh, xl):
    """log(1 + x) of a dd, relatively accurate near 0."""
    if -0.2929 <= xh <= 0.4142:
        return dd_log1p_core(xh, xl)
    sh, sl = dd_add(xh, xl, 1.0, 0.0)
    return dd_log(sh, sl)


def dd_sigmoid(xh, xl):
    """1 / (1 + exp(-x)) of a dd, without overflow: ``e = exp(-|x|)``, then 1/(1+e) or e/(1+e)."""
    if xh >= 0.0:
        eh, el = dd_exp(-xh, -xl)
        dh, dl = dd_add(1.0, 0.0, eh, el)
        return dd_div(1.0, 0.0, dh, dl)
    eh, el = dd_exp(xh, xl)
    dh, dl = dd_add(1.0, 0.0, eh, el)
    return dd_div(eh, el, dh, dl)


def dd_softplus(xh, xl):
    """log(1 + exp(x)) of a dd: ``max(x, 0) + log1p(exp(-|x|))`` (Maechler 2012)."""
    if xh >= 0.0:
        eh, el = dd_exp(-xh, -xl)
        lh, ll = dd_log1p(eh, el)
        return dd_add(xh, xl, lh, ll)
    eh, el = dd_exp(xh, xl)
    return dd_log1p(eh, el)

def dd_exp_tail(xh, xl):
    """exp of a dd to float64 accuracy, cheaply: libm ``exp(xh)`` times ``1 + xl``.

    ``exp(xh + xl) = exp(xh) (1 + xl + xl^2/2 ...)`` and ``|xl| <= ulp(xh)/2``, so the first-order
    tail carries the argument's low part (``|xh| * 2^-53`` relative, up to 2^-43 at |x| = 700: the
    error float64 would amplify from a rounded argument) and what it drops is below 2^-86.  The
    result is one libm rounding (glibc: < 1 ulp) from exact: a float64-accurate value, not a
    106-bit one (:func:`dd_exp` is that, at 30-40x the cost)."""
    if xh > DD_EXP_MAX:  # inf (Python's math.exp would raise)
        return math.inf, 0.0
    e = math.exp(xh)
    if e - e != 0.0 or e == 0.0:  # NaN, underflow: float64's result
        return e, 0.0
    return dd_fast_two_sum(e, e * xl)


def dd_expm1_tail(xh, xl):
    """expm1 of a dd to float64 accuracy: libm ``expm1(xh)`` plus ``exp(xh) xl`` (first order,
    as :func:`dd_exp_tail`; ``d expm1 = exp``)."""
    if xh > DD_EXP_MAX:
        return math.inf, 0.0
    m = math.expm1(xh)
    if m - m != 0.0:
        return m, 0.0
    return dd_two_sum(m, (m + 1.0) * xl)


def dd_log_tail(xh, xl):
    """log of a dd to float64 accuracy: libm ``log(xh)`` plus ``xl / xh`` (first order: the
    dropped ``(xl/xh)^2 / 2`` is below 2^-106).  NaN, 0, negative and infinite ``xh``: as :func:`dd_log`."""
    if not 0.0 < xh < math.inf:
        return dd_log(xh, xl)
    return dd_two_sum(math.log(xh), xl / xh)


def dd_log1p_tail(xh, xl):
    """log1p of a dd to float64 accuracy: libm ``log1p(xh)`` plus ``xl / (1 + xh)`` (first order).
    NaN, ``xh <= -1`` and infinite ``xh``: as :func:`dd_log1p`."""
    if not -1.0 < xh < math.inf:
        return dd_log1p(xh, xl)
    return dd_two_sum(math.log1p(xh), xl / (1.0 + xh))


# Running error bounds of a region with first-order tails (a ``ddt`` region): ``s`` is a bound on
# a value's absolute error in units of u = 2^-53, first order (Higham 2002, "Accuracy and
# Stability of Numerical Algorithms", 2nd ed., sec. 3.1), counting only the libm roundings
# (DD_LIBM_ULPS ulps = 2 DD_LIBM_ULPS u of the output each; the dd arithmetic's own errors,
# about u^2, are left out).  Where the bound shows the roundings amplified by cancellation
# (the adaptive-precision idea of Shewchuk 1997, "Adaptive precision floating-point arithmetic
# and fast robust geometric predicates"), the region is computed again with dd functions.
DD_LIBM_ULPS = 1.0  # the bound assumed for libm exp, expm1, log, log1p (glibc: 0.51-0.9 ulp)


def dd_err_mul(ah, sa, bh, sb):
    """Error bound of ``a * b`` from those of ``a`` and ``b``."""
    return abs(ah) * sb + abs(bh) * sa


def dd_err_div(vh, sa, bh, sb):
    """Error bound of ``v = a / b``."""
    return dd_quotient(sa + abs(vh) * sb, abs(bh))


def dd_err_powi(vh, ah, sa, n):
    """Error bound of ``v = a ** n``."""
    return dd_quotient(abs(n * vh) * sa, abs(ah))


def dd_err_sqrt(vh, sa):
    """Error bound of ``v = sqrt(a)``."""
    return dd_quotient(sa, 2.0 * vh)


def dd_err_hypot(vh, ah, sa, bh, sb):
    """Error bound of ``v = hypot(a, b)``."""
    return dd_quotient(abs(ah) * sa + abs(bh) * sb, vh)


def dd_err_exp_tail(vh, sa):
    """Error bound of ``v = exp(a)`` by :func:`dd_exp_tail`."""
    return abs(vh) * (sa + 2.0 * DD_LIBM_ULPS)


def dd_err_expm1_tail(vh, sa):
    """Error bound of ``v = expm1(a)`` by :func:`dd_expm1_tail`."""
    return abs(vh + 1.0) * sa + 2.0 * DD_LIBM_ULPS * abs(vh)


def dd_err_log_tail(vh, ah, sa):
    """Error bound of ``v = log(a)`` by :func:`dd_log_tail`."""
    return dd_quotient(sa, abs(ah)) + 2.0 * DD_LIBM_ULPS * abs(vh)


def dd_err_log1p_tail(vh, ah, sa):
    """Error bound of ``v = log1p(a)`` by :func:`dd_log1p_tail`."""
    return dd_quotient(sa, abs(1.0 + ah)) + 2.0 * DD_LIBM_ULPS * abs(vh)
# ---- end of the text generated modules copy ----
