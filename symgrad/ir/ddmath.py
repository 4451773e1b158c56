"""Double-double arithmetic on scalars: the primitives of double-double regions in kernels.

A double-double (dd) number is an unevaluated sum ``hi + lo`` of two float64 values with
``|lo| <= ulp(hi) / 2``, about 106 significant bits.  These functions take and return such
pairs as plain floats, using only float64 ``+ - * /``, comparisons and the ``math`` functions
``log1p``, ``exp``, ``expm1``, ``log``, ``sqrt``, ``frexp``, ``ldexp``, ``hypot``, ``floor`` and (beyond
the range :func:`dd_sin` and :func:`dd_cos` reduce) ``sin`` and ``cos``.
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
* :func:`dd_tanh`, :func:`dd_sinh`, :func:`dd_cosh`: from ``m = expm1(|x|)`` (``expm1(2|x|)`` for tanh
  up to 0.55, ``exp(-2|x|)`` beyond), in forms whose terms are all positive
  (``sinh = (m + m/(m+1))/2``, ``cosh = 1 + m (m/(m+1))/2``, ``tanh = m/(m+2)`` or
  ``1 - 2e/(1+e)``), so relatively accurate near 0; ``exp(|x|/2)^2 / 2`` where ``exp(|x|)``
  overflows and sinh, cosh do not (709 < |x| < 710.48);
* :func:`dd_erf` and :func:`dd_erfc`: below ``DD_ERF_SWITCH`` = 1.75 the series with positive terms
  ``erf x = (2/sqrt pi) x exp(-x^2) sum (2x^2)^n / (1*3*...*(2n+1))`` (DLMF 7.6.2; erfc as ``1 - erf``,
  above 0.013 there), at and above it erfc by the continued fraction of DLMF 7.9.2 (its even
  part), backward, with a number of terms set by ``x`` (truncation below 2^-111) and its inner
  terms in float64; ``exp(-x^2)`` from the exact square of the high part
  (:func:`dd_exp_neg_square`);
* :func:`dd_sin` and :func:`dd_cos`: ``x = k pi/2 + r`` by Cody & Waite's reduction with pi/2 in
  eight 26-bit pieces (208 bits, each ``k * piece`` exact for ``|x| <= DD_TRIG_MAX`` = 1e8), then
  Taylor polynomials of sin and cos on ``|r| <= pi/4`` (degrees 27 and 28; their terms below
  2^-54 of the sum in float64); beyond 1e8, float64's libm value with a zero tail (a region is
  scored before it is chosen, so it is not chosen where that is not accurate);
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
for the arithmetic and 2^-98 for ``exp``, ``expm1``, ``log``, ``log1p``, ``tanh``, ``sinh``,
``cosh``, ``erf``, ``sin`` and ``cos``, 2^-95 for ``erfc`` (``1 - erf`` cancels up to 6.3 bits
below the switch), wherever the result's low part is not subnormal (erfc beyond x = 25.9, erf and
tanh below 2^-969: there the format, not the algorithm, limits the bits).  Near a zero of sin or cos
the error is absolute, the truncation of pi/2 times ``k``: below 2^-198, so 2^-98 relative holds
down to ``|sin x| = 2^-100`` (a dd ``x`` can be closer to a multiple of pi/2; a float64 one is not:
the closest of all doubles is about 2^-61 away, Muller, "Elementary Functions", ch. 11).
"""
from __future__ import annotations

import math

__all__ = ["dd_two_sum", "dd_fast_two_sum", "dd_two_prod", "dd_add", "dd_mul", "dd_div", "dd_sqrt",
           "dd_exp", "dd_expm1", "dd_expm1_small", "dd_log", "dd_log1p", "dd_sigmoid", "dd_softplus",
           "dd_tanh", "dd_sinh", "dd_cosh", "dd_erf", "dd_erfc", "dd_sin", "dd_cos", "dd_div_float",
           "dd_exp_neg_square", "dd_square_split", "dd_twice_square", "dd_expm1_ratio",
           "dd_powi", "dd_hypot", "dd_max", "dd_min", "dd_exp_tail", "dd_expm1_tail", "dd_log_tail", "dd_log1p_tail",
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


def dd_div_float(ah, al, b):
    """dd / float64 for a finite nonzero ``b`` (QD's dd_real / double: Hida, Li & Bailey 2001):
    two quotient digits, the remainder formed exactly by :func:`dd_two_prod`."""
    q1 = ah / b
    p1, p2 = dd_two_prod(q1, b)
    s, e = dd_two_sum(ah, -p1)
    e = (e + al) - p2
    return dd_fast_two_sum(q1, (s + e) / b)


def dd_odd(sign_negative, h, l):  # noqa: E741
    """``(h, l)``, negated when ``sign_negative``: the sign of an odd function's result."""
    if sign_negative:
        return -h, -l
    return h, l


def dd_sinh_cosh_big(ah, al):
    """``exp(a) / 2`` for ``709 < a``, where ``exp(a)`` overflows and ``sinh(a) = cosh(a)`` does not
    (up to 710.4758...): ``exp(a/2) * (exp(a/2) / 2)``, inf beyond (``a/2`` exact; float64's inf
    from the product's overflow, as :func:`dd_mul` gives it)."""
    if ah > 711.0:
        return math.inf, 0.0
    eh, el = dd_exp(0.5 * ah, 0.5 * al)
    return dd_mul(eh, el, 0.5 * eh, 0.5 * el)


def dd_expm1_ratio(ah, al):
    """``(m, q)`` as four floats: ``m = expm1(a)`` and ``q = m / (m + 1) = 1 - exp(-a)`` for a dd
    ``a >= 0`` (both relatively accurate near 0)."""
    mh, ml = dd_expm1(ah, al)
    dh, dl = dd_add(mh, ml, 1.0, 0.0)
    qh, ql = dd_div(mh, ml, dh, dl)
    return mh, ml, qh, ql


def dd_sinh(xh, xl):
    """sinh of a dd: ``m = expm1(|x|)``, ``sinh |x| = (m + m / (m + 1)) / 2`` (two positive terms:
    relatively accurate near 0, where ``m ~ |x|``); ``x`` itself below 2^-55 (``x^3/6`` is below
    2^-111 of it); ``exp(|x|/2)^2 / 2`` beyond 709 (:func:`dd_sinh_cosh_big`).  fdlibm's ``e_sinh.c``
    form (Sun Microsystems 1993).  Odd: the sign of ``x``."""
    if xh != xh:
        return xh, 0.0
    neg = xh < 0.0
    ah, al = dd_odd(neg, xh, xl)
    if ah < 2.7755575615628914e-17:  # 2^-55
        return xh, xl
    if ah > 709.0:
        rh, rl = dd_sinh_cosh_big(ah, al)
        return dd_odd(neg, rh, rl)
    mh, ml, qh, ql = dd_expm1_ratio(ah, al)
    sh, sl = dd_add(mh, ml, qh, ql)
    return dd_odd(neg, 0.5 * sh, 0.5 * sl)


def dd_cosh(xh, xl):
    """cosh of a dd: ``m = expm1(|x|)``, ``cosh x = 1 + m (m / (m + 1)) / 2`` (``m / (m + 1) =
    1 - exp(-|x|)``: all terms positive, and the small part ``x^2/2 + ...`` is relatively accurate
    near 0; fdlibm's ``e_cosh.c`` form near 0, Sun Microsystems 1993); ``exp(|x|/2)^2 / 2`` beyond 709
    (:func:`dd_sinh_cosh_big`)."""
    if xh != xh:
        return xh, 0.0
    ah, al = dd_odd(xh < 0.0, xh, xl)
    if ah > 709.0:
        return dd_sinh_cosh_big(ah, al)
    mh, ml, qh, ql = dd_expm1_ratio(ah, al)
    ph, pl = dd_mul(mh, ml, qh, ql)
    return dd_add(1.0, 0.0, 0.5 * ph, 0.5 * pl)


def dd_tanh(xh, xl):
    """tanh of a dd.  ``|x| <= 0.55``: ``m / (m + 2)`` with ``m = expm1(2|x|)`` (relatively accurate
    near 0; ``x`` itself below 2^-55); beyond: ``1 - 2e / (1 + e)`` with ``e = exp(-2|x|)``, where
    ``2e/(1 + e) <= 1/2`` (no cancellation), and where tanh rounds to 1 the low part is
    ``-2e/(1 + e)`` to float64 accuracy (all a dd holds there; 1 exactly once ``e`` underflows,
    |x| > 372.6).  fdlibm's ``s_tanh.c`` (Sun Microsystems 1993) has the same two forms, the second
    as ``1 - 2 / (expm1(2|x|) + 2)``.  Odd: the sign of ``x``."""
    if xh != xh:
        return xh, 0.0
    neg = xh < 0.0
    ah, al = dd_odd(neg, xh, xl)
    if ah < 2.7755575615628914e-17:  # 2^-55: x^3/3 is below 2^-111 of x
        return xh, xl
    if ah <= 0.55:
        mh, ml = dd_expm1(2.0 * ah, 2.0 * al)
        dh, dl = dd_add(mh, ml, 2.0, 0.0)
        rh, rl = dd_div(mh, ml, dh, dl)
        return dd_odd(neg, rh, rl)
    eh, el = dd_exp(-2.0 * ah, -2.0 * al)
    dh, dl = dd_add(eh, el, 1.0, 0.0)
    qh, ql = dd_div(2.0 * eh, 2.0 * el, dh, dl)
    rh, rl = dd_add(1.0, 0.0, -qh, -ql)
    return dd_odd(neg, rh, rl)


DD_2_SQRTPI_HI = 1.1283791670955126  # 2 / sqrt(pi) = hi + lo
DD_2_SQRTPI_LO = 1.533545961316588e-17
DD_ERF_SWITCH = 1.75  # erf by its series below, erfc by its continued fraction at and above
DD_ERFC_ZERO = 27.3  # erfc(x) < 2^-1075 beyond: float64's 0


def dd_square_split(xh, xl):
    """``(ph, pl, sh, sl)``: ``x^2 = (ph + pl) + (sh + sl)`` for a dd ``x``, ``ph + pl = xh^2`` exactly
    (:func:`dd_two_prod`) and ``sh + sl = 2 xh xl + xl^2`` (``|s| <= 2^-52 xh^2``) to dd accuracy; a
    dd square would carry its ``7u^2`` relative error, 2^-93 absolute at x = 27, into an exponent."""
    ph, pl = dd_two_prod(xh, xh)
    sh, sl = dd_two_prod(2.0 * xh, xl)
    sh, sl = dd_fast_two_sum(sh, sl + xl * xl)
    return ph, pl, sh, sl


def dd_twice_square(xh, xl):
    """``2 x^2`` of a dd, from :func:`dd_square_split` (one rounding, 3u^2 relative at most)."""
    ph, pl, sh, sl = dd_square_split(xh, xl)
    zh, zl = dd_add(ph, pl, sh, sl)
    return 2.0 * zh, 2.0 * zl


def dd_exp_neg_square(xh, xl):
    """exp(-x^2) of a dd with ``|x| <= 27.3``, relatively accurate: ``x^2 = xh^2 + s`` by
    :func:`dd_square_split`, ``|s| <= 2^-42``, so ``exp(-x^2) = exp(-xh^2) (1 - s + s^2/2)``."""
    ph, pl, sh, sl = dd_square_split(xh, xl)
    eh, el = dd_exp(-ph, -pl)
    fh, fl = dd_add(1.0, 0.0, -sh, -sl)
    fh, fl = dd_add(fh, fl, 0.5 * sh * sh, 0.0)  # s^3/6 < 2^-127 is dropped
    return dd_mul(eh, el, fh, fl)


def dd_erf_series(xh, xl):
    """erf of a dd with ``0 < x < DD_ERF_SWITCH``: ``(2/sqrt pi) x exp(-x^2) sum_n (2x^2)^n /
    (1*3*...*(2n+1))`` (DLMF 7.6.2; every term positive, so no cancellation at any x), the terms
    summed forward in dd while they exceed 2^-57 of the sum, then in float64 until below 2^-112."""
    zh, zl = dd_twice_square(xh, xl)
    sh, sl = 1.0, 0.0
    th, tl = 1.0, 0.0
    d = 1.0
    while th > 6.938893903907228e-18 * sh:  # 2^-57
        d = d + 2.0
        th, tl = dd_mul(th, tl, zh, zl)
        th, tl = dd_div_float(th, tl, d)
        sh, sl = dd_add(sh, sl, th, tl)
    t, acc = th, 0.0
    while t > 1.925929944387236e-34 * sh:  # 2^-112
        d = d + 2.0
        t = t * zh / d
        acc = acc + t
    sh, sl = dd_add(sh, sl, acc, 0.0)
    eh, el = dd_exp_neg_square(xh, xl)
    ph, pl = dd_mul(xh, xl, eh, el)
    ph, pl = dd_mul(ph, pl, sh, sl)
    return dd_mul(ph, pl, DD_2_SQRTPI_HI, DD_2_SQRTPI_LO)


def dd_erfc_cf(xh, xl):
    """erfc of a dd with ``DD_ERF_SWITCH <= x <= DD_ERFC_ZERO`` by the continued fraction
    of Laplace (DLMF 7.9.2) contracted to its even part (each term two of its steps; the even
    contraction: Cuyt et al. 2008, "Handbook of Continued Fractions for Special Functions", ch. 1)
    ``erfc x = (2x exp(-x^2) / sqrt pi) / R_0``, ``R_j = 2x^2 + 4j + 1 - (2j+1)(2j+2) / R_(j+1)``,
    evaluated backward from ``R_K = 2x^2 + 4K + 1``.  ``K = 5 + 45/x + 330/x^2`` terms (178 at
    x = 1.75, 7 at 27) put the truncation below 2^-111 (measured with mpmath on a grid of x in
    [1.7, 27.3]).  A relative error in ``R_j`` reaches ``R_0`` shrunk by the product of the
    fraction's contractions ``(2i+1)(2i+2) / (R_i R_(i+1))``, below 2^-59 for ``j > J =
    5 + 14/x + 100/x^2``; so the steps beyond ``J`` run in float64, the last ``J`` (43 at x = 1.75,
    5 at 27) in dd as a ratio ``R = P / Q`` (``P <- b P - a Q``, ``Q <- P``: products and sums,
    one division at the end)."""
    yh, yl = dd_twice_square(xh, xl)
    inv = 1.0 / xh
    n = int(5.0 + (330.0 * inv + 45.0) * inv)
    n_dd = int(5.0 + (100.0 * inv + 14.0) * inv)
    r = yh + float(4 * n + 1)
    for k in range(n, n_dd, -1):
        r = (yh + float(4 * k - 3)) - float((2 * k - 1) * (2 * k)) / r
    ph, pl = r, 0.0
    qh, ql = 1.0, 0.0
    for k in range(n_dd, 0, -1):
        bh, bl = dd_add(yh, yl, float(4 * k - 3), 0.0)
        bh, bl = dd_mul(bh, bl, ph, pl)
        ah, al = dd_mul(float((2 * k - 1) * (2 * k)), 0.0, qh, ql)
        qh, ql = ph, pl
        ph, pl = dd_add(bh, bl, -ah, -al)
    eh, el = dd_exp_neg_square(xh, xl)
    eh, el = dd_mul(eh, el, xh, xl)
    eh, el = dd_mul(eh, el, qh, ql)
    eh, el = dd_mul(eh, el, DD_2_SQRTPI_HI, DD_2_SQRTPI_LO)
    return dd_div(eh, el, ph, pl)


def dd_erf(xh, xl):
    """erf of a dd: :func:`dd_erf_series` below ``DD_ERF_SWITCH``, ``1 - erfc`` by
    :func:`dd_erfc_cf` up to 27.3 (the low part is ``-erfc x``), 1 beyond; ``(2/sqrt pi) x`` below
    2^-56 (``x^3/3`` is below 2^-112 of it).  Odd: the sign of ``x``."""
    if xh != xh:
        return xh, 0.0
    if xh == 0.0:  # +-0, as float64
        return xh, 0.0
    neg = xh < 0.0
    ah, al = dd_odd(neg, xh, xl)
    if ah < 1.3877787807814457e-17:  # 2^-56
        return dd_mul(xh, xl, DD_2_SQRTPI_HI, DD_2_SQRTPI_LO)
    if ah < DD_ERF_SWITCH:
        rh, rl = dd_erf_series(ah, al)
    elif ah <= DD_ERFC_ZERO:
        ch, cl = dd_erfc_cf(ah, al)
        rh, rl = dd_add(1.0, 0.0, -ch, -cl)
    else:
        rh, rl = 1.0, 0.0
    return dd_odd(neg, rh, rl)


def dd_erfc(xh, xl):
    """erfc of a dd: ``1 - erf x`` by :func:`dd_erf_series` for ``|x| < DD_ERF_SWITCH`` (erfc is
    above 0.013 there: at most 6.3 bits cancel), :func:`dd_erfc_cf` above, ``2 - erfc(-x)`` below
    ``-DD_ERF_SWITCH``; 0 above 27.3, where float64's erfc underflows, and 2 below -27.3."""
    if xh != xh:
        return xh, 0.0
    if xh > DD_ERFC_ZERO:
        return 0.0, 0.0
    if xh < -DD_ERFC_ZERO:
        return 2.0, 0.0
    if xh >= DD_ERF_SWITCH:
        return dd_erfc_cf(xh, xl)
    if xh <= -DD_ERF_SWITCH:
        ch, cl = dd_erfc_cf(-xh, -xl)
        return dd_add(2.0, 0.0, -ch, -cl)
    if abs(xh) < 1.3877787807814457e-17:
        eh, el = dd_mul(xh, xl, DD_2_SQRTPI_HI, DD_2_SQRTPI_LO)
    elif xh > 0.0:
        eh, el = dd_erf_series(xh, xl)
    else:
        eh, el = dd_erf_series(-xh, -xl)
        eh, el = -eh, -el
    return dd_add(1.0, 0.0, -eh, -el)


DD_TRIG_MAX = 1.0e8  # |x| up to which sin and cos are reduced by pi/2 in dd (|k| < 2^26)


def dd_sin_reduced(rh, rl):
    """sin r of a dd with ``|r| <= pi/4 + 2^-26``: ``r (1 + sum_{1 <= j <= 13} (-1)^j s^j / (2j+1)!)``,
    ``s = r^2`` (truncation below 2^-112); the terms of degree 17 and more, below 2^-54 of the
    sum, in float64 (Horner), the others in dd."""
    sh, sl = dd_mul(rh, rl, rh, rl)
    q = -9.183689863795546e-29 * sh + 6.446950284384474e-26
    q = q * sh - 3.868170170630684e-23
    q = q * sh + 1.9572941063391263e-20
    q = q * sh - 8.22063524662433e-18
    q = q * sh + 2.8114572543455206e-15
    ph, pl = dd_horner_step(q, 0.0, sh, sl, -7.647163731819816e-13, -7.03872877733453e-30)
    ph, pl = dd_horner_step(ph, pl, sh, sl, 1.6059043836821613e-10, 1.2585294588752098e-26)
    ph, pl = dd_horner_step(ph, pl, sh, sl, -2.505210838544172e-08, 1.448814070935912e-24)
    ph, pl = dd_horner_step(ph, pl, sh, sl, 2.7557319223985893e-06, -1.858393274046472e-22)
    ph, pl = dd_horner_step(ph, pl, sh, sl, -0.0001984126984126984, -1.7209558293420705e-22)
    ph, pl = dd_horner_step(ph, pl, sh, sl, 0.008333333333333333, 1.1564823173178714e-19)
    ph, pl = dd_horner_step(ph, pl, sh, sl, -0.16666666666666666, -9.25185853854297e-18)
    ph, pl = dd_horner_step(ph, pl, sh, sl, 1.0, 0.0)
    return dd_mul(ph, pl, rh, rl)


def dd_cos_reduced(rh, rl):
    """cos r of a dd with ``|r| <= pi/4 + 2^-26``: ``sum_{0 <= j <= 14} (-1)^j s^j / (2j)!``,
    ``s = r^2`` (truncation below 2^-118); the terms of degree 18 and more, below 2^-59 of the
    sum, in float64, the others in dd."""
    sh, sl = dd_mul(rh, rl, rh, rl)
    q = 3.279889237069838e-30 * sh - 2.4795962632247976e-27
    q = q * sh + 1.6117375710961184e-24
    q = q * sh - 8.896791392450574e-22
    q = q * sh + 4.110317623312165e-19
    q = q * sh - 1.5619206968586225e-16
    ph, pl = dd_horner_step(q, 0.0, sh, sl, 4.779477332387385e-14, 4.399205485834081e-31)
    ph, pl = dd_horner_step(ph, pl, sh, sl, -1.1470745597729725e-11, -2.0655512752830745e-28)
    ph, pl = dd_horner_step(ph, pl, sh, sl, 2.08767569878681e-09, -1.20734505911326e-25)
    ph, pl = dd_horner_step(ph, pl, sh, sl, -2.755731922398589e-07, -2.3767714622250297e-23)
    ph, pl = dd_horner_step(ph, pl, sh, sl, 2.48015873015873e-05, 2.1511947866775882e-23)
    ph, pl = dd_horner_step(ph, pl, sh, sl, -0.001388888888888889, 5.300543954373577e-20)
    ph, pl = dd_horner_step(ph, pl, sh, sl, 0.041666666666666664, 2.3129646346357427e-18)
    ph, pl = dd_horner_step(ph, pl, sh, sl, -0.5, 0.0)
    return dd_horner_step(ph, pl, sh, sl, 1.0, 0.0)


def dd_sincos_quadrant(xh, xl, shift):
    """sin x (``shift = 0``) or cos x (``shift = 1``: sin(x + pi/2)) of a finite dd with
    ``|x| <= DD_TRIG_MAX``: ``x = k pi/2 + r``, ``k = rint(2x/pi)``, ``r`` by Cody & Waite's
    reduction with pi/2 in eight 26-bit pieces (208 bits; each ``k * piece`` exact for
    ``|k| < 2^27``), then ``+-sin r`` or ``+-cos r`` by the quadrant ``(k + shift) mod 4``."""
    k = math.floor(xh * 0.6366197723675814 + 0.5)
    rh, rl = xh, xl
    if k != 0:
        kf = float(k)
        rh, rl = dd_add(rh, rl, -kf * 1.5707963109016418, 0.0)
        rh, rl = dd_add(rh, rl, -kf * 1.5893254712295857e-08, 0.0)
        rh, rl = dd_add(rh, rl, -kf * 6.123233932053594e-17, 0.0)
        rh, rl = dd_add(rh, rl, -kf * 6.368317055225283e-25, 0.0)
        rh, rl = dd_add(rh, rl, -kf * 1.0828566716053562e-32, 0.0)
        rh, rl = dd_add(rh, rl, -kf * 2.316557719485773e-41, 0.0)
        rh, rl = dd_add(rh, rl, -kf * 5.562271104062196e-50, 0.0)
        rh, rl = dd_add(rh, rl, -kf * 2.546305778996385e-60, 0.0)
    q = (k + shift) & 3
    if q == 0:
        return dd_sin_reduced(rh, rl)
    if q == 1:
        return dd_cos_reduced(rh, rl)
    if q == 2:
        h, l = dd_sin_reduced(rh, rl)  # noqa: E741
    else:
        h, l = dd_cos_reduced(rh, rl)  # noqa: E741
    return -h, -l


def dd_sin(xh, xl):
    """sin of a dd (see :func:`dd_sincos_quadrant`); ``x`` itself below 2^-55; beyond
    ``DD_TRIG_MAX`` float64's ``sin(xh)`` (libm) with a zero tail; NaN for inf and NaN."""
    if xh - xh != 0.0:
        return math.nan, 0.0
    if abs(xh) < 2.7755575615628914e-17:
        return xh, xl
    if abs(xh) > DD_TRIG_MAX:
        return math.sin(xh), 0.0
    return dd_sincos_quadrant(xh, xl, 0)


def dd_cos(xh, xl):
    """cos of a dd (see :func:`dd_sincos_quadrant`); beyond ``DD_TRIG_MAX`` float64's ``cos(xh)``
    (libm) with a zero tail; NaN for inf and NaN."""
    if xh - xh != 0.0:
        return math.nan, 0.0
    if abs(xh) > DD_TRIG_MAX:
        return math.cos(xh), 0.0
    return dd_sincos_quadrant(xh, xl, 1)


def dd_max(ah, al, bh, bl):
    """max of two dd numbers, exactly (a selection): NaN if either is NaN (as NumPy's ``maximum``);
    ``a`` where ``(ah - bh) + (al - bl) >= 0`` (the sign of the dd difference: ``ah - bh`` is exact
    when the two are close, Sterbenz 1974), else ``b``.  The max-shift of a softmax or a
    log-sum-exp (``exp(b - Max(a, b, c))``) inside a region."""
    if ah != ah:
        return ah, al
    if bh != bh:
        return bh, bl
    if (ah - bh) + (al - bl) >= 0.0:
        return ah, al
    return bh, bl


def dd_min(ah, al, bh, bl):
    """min of two dd numbers, exactly (see :func:`dd_max`)."""
    if ah != ah:
        return ah, al
    if bh != bh:
        return bh, bl
    if (ah - bh) + (al - bl) <= 0.0:
        return ah, al
    return bh, bl


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
