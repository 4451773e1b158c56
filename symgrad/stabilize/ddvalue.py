"""Double-double values with an exponent and a rigorous relative error bound.

An :class:`XD` holds, per sample point, ``(hi + lo) * 2**e`` with ``hi`` in ``[0.5, 1)``
(or 0), ``lo`` its double-double tail, ``e`` an int64 exponent (so no intermediate
overflows or underflows: ``exp(800) / (1 + exp(800))`` is evaluated as it is written), and
``r``, a bound on the relative error against the exact value of the expression at that
point.  ``r = inf`` marks a point this arithmetic cannot vouch for (a huge argument of sin,
a sign that cancellation hides, a NaN); the caller evaluates such points with mpmath.

Error propagation is running error analysis (Higham 2002, sec. 3.3): for each operation the
bound is the propagated input error (to first order plus a bound on the rest, using the
condition of the operation, e.g. ``|x f'(x)/f(x)|``) plus the operation's own rounding error
(``ddarith.U_*``).  A sum whose terms cancel divides the absolute error of the terms by the
small result, so cancellation shows up as a large ``r``, never as a wrong value.

References:
    Dekker (1971), "A floating-point technique for extending the available precision".
    Joldes, Muller & Popescu (2017), "Tight and rigorous error bounds for basic building
    blocks of double-word arithmetic", ACM TOMS 44(2).
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", 2nd ed., ch. 3.
    Muller et al. (2018), "Handbook of Floating-Point Arithmetic", ch. 11 (argument reduction).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ddarith as D

__all__ = ["XD", "const", "from_float", "where", "EXP_LIMIT"]

INF = np.inf
SAFE = 1.0 + 2.0 ** -30   # slack on every bound computed in float64
E_LIMIT = 2 ** 55        # exponents beyond this are not trusted (int64 headroom)
EXP_LIMIT = 30           # |x| < 2^30: exp/sin/cos reduce x exactly (|k| < 2^31)
_TINY_E = -60            # |x| < 2^-60: sin x = x, expm1 x = x, ... within 2^-120 relative


@dataclass
class XD:
    """Per-point ``(h + l) * 2**e`` with relative error bound ``r`` (see the module docstring)."""
    h: np.ndarray
    l: np.ndarray  # noqa: E741
    e: np.ndarray
    r: np.ndarray

    # -- construction ------------------------------------------------------
    @staticmethod
    def make(h, l, e, r) -> "XD":  # noqa: E741
        """Normalise ``(h + l) * 2**e`` (any ``h``) so that ``h`` is in [0.5, 1)."""
        with np.errstate(all="ignore"):
            h, l = D.fast_two_sum(h, l)
            m, k = np.frexp(h)
            l = np.ldexp(l, -k)  # noqa: E741
            e = np.asarray(e, dtype=np.int64) + k
            zero = m == 0
            bad = ~np.isfinite(m) | ~np.isfinite(l) | (~zero & (np.abs(e) > E_LIMIT)) | np.isnan(r)
            e = np.where(zero, 0, e)
            r = np.where(bad, INF, r)
            m = np.where(bad, 0.5, m)
            l = np.where(bad | zero, 0.0, l)  # noqa: E741
        return XD(m, l, e, r)

    @property
    def n(self) -> int:
        return self.h.shape[0]

    def is_zero(self):
        return self.h == 0

    def sign(self):
        """(sign, certain): the sign of the exact value where it is certain (r < 1 or exact 0)."""
        s = np.sign(self.h)
        return s, (self.r < 1) | ((self.h == 0) & (self.r == 0))

    def approx(self):
        """float64 value (inf/0 beyond the float64 range)."""
        with np.errstate(all="ignore"):
            return np.ldexp(self.h, np.clip(self.e, -2000, 2000))

    def log2_abs(self):
        """log2 |value| as float64 (-inf for 0)."""
        with np.errstate(all="ignore"):
            return np.log2(np.abs(self.h)) + self.e

    def plain(self, max_e: int):
        """``(hi, lo, ok)``: the value as a plain double-double where ``e <= max_e``; values
        below 2^-1000 become 0 (callers handle tiny arguments separately)."""
        ok = (self.e <= max_e) & np.isfinite(self.r)
        e = np.clip(self.e, -1000, max_e)
        with np.errstate(all="ignore"):
            return np.ldexp(self.h, e), np.ldexp(self.l, e), ok

    # -- arithmetic ----------------------------------------------------------
    def __neg__(self):
        return XD(-self.h, -self.l, self.e, self.r)

    def __add__(self, o: "XD") -> "XD":
        a, b = self, o
        ea = np.where(a.h == 0, -(2 ** 60), a.e)
        eb = np.where(b.h == 0, -(2 ** 60), b.e)
        e = np.maximum(ea, eb)
        e = np.where((a.h == 0) & (b.h == 0), 0, e)
        da, db = np.clip(ea - e, -1100, 0), np.clip(eb - e, -1100, 0)
        with np.errstate(all="ignore"):
            ah, al = np.ldexp(a.h, da), np.ldexp(a.l, da)
            bh, bl = np.ldexp(b.h, db), np.ldexp(b.l, db)
            sh, sl = D.add(ah, al, bh, bl)
            # two plain doubles add exactly (two_sum); an operand shifted out of range is lost
            lost = (da < -1020) | (db < -1020)
            exact = (al == 0) & (bl == 0) & ~lost
            err = (np.abs(ah) * a.r + np.abs(bh) * b.r) * SAFE + np.where(lost, 2.0 ** -1060, 0.0)
            exact0 = (err == 0) & (sh == 0) & (sl == 0)
            r = np.where(exact0, 0.0, err / np.abs(sh) * SAFE + np.where(exact, 0.0, D.U_ADD))
            sh, sl, r = _zero_with_error(sh, sl, r, err * SAFE)
        return XD.make(sh, sl, e, r)

    def __sub__(self, o: "XD") -> "XD":
        return self + (-o)

    def __mul__(self, o: "XD") -> "XD":
        ph, pe = D.two_prod(self.h, o.h)
        ph, pl = D.fast_two_sum(ph, pe + (self.h * o.l + self.l * o.h))
        with np.errstate(all="ignore"):
            exact = (pe == 0) & (self.l == 0) & (o.l == 0)  # a product of two doubles that fits one
            r = (self.r + o.r + self.r * o.r) * SAFE + np.where(exact, 0.0, D.U_MUL)
            zero = (ph == 0) & (((self.h == 0) & (self.r == 0) & np.isfinite(o.r)) |
                                ((o.h == 0) & (o.r == 0) & np.isfinite(self.r)))
            r = np.where(zero, 0.0, r)
        return XD.make(ph, pl, self.e + o.e, r)

    def __truediv__(self, o: "XD") -> "XD":
        with np.errstate(all="ignore"):
            qh, ql = D.div(self.h, self.l, o.h, o.l)
            r = np.where(o.r < 0.5, (self.r + o.r) / (1 - o.r) * SAFE + D.U_DIV, INF)
            r = np.where(o.h == 0, INF, r)
            r = np.where((self.h == 0) & (self.r == 0) & (o.h != 0) & (o.r < 0.5), 0.0, r)
        return XD.make(qh, ql, self.e - o.e, r)

    def scale2(self, k: int) -> "XD":
        """Exact product by 2**k."""
        return XD(self.h, self.l, np.where(self.h == 0, 0, self.e + k), self.r)

    def with_error(self, extra) -> "XD":
        return XD(self.h, self.l, self.e, self.r + extra)

    def untrusted(self, mask) -> "XD":
        return XD(self.h, self.l, self.e, np.where(mask, INF, self.r))


def _zero_with_error(h, l, r, abs_err):  # noqa: E741
    """A computed 0 with a finite absolute error bound A > 0 becomes the value A with relative
    bound 2: the enclosure [-A, 3A] contains [-A, A], and a later ``x + (that)`` with a large
    ``x`` keeps a small relative error (``x + log(1 + exp(-x))`` at x = 1e20)."""
    z = (h == 0) & (l == 0) & (abs_err > 0) & np.isfinite(abs_err)
    return np.where(z, abs_err, h), np.where(z, 0.0, l), np.where(z, 2.0, r)


def where(mask, a: XD, b: XD) -> XD:
    """Pointwise choice (``a`` where ``mask``)."""
    return XD(np.where(mask, a.h, b.h), np.where(mask, a.l, b.l), np.where(mask, a.e, b.e),
              np.where(mask, a.r, b.r))


def from_float(x: np.ndarray) -> XD:
    """Exact XD of float64 (or float32) inputs."""
    x = np.asarray(x, dtype=np.float64)
    return XD.make(x, np.zeros_like(x), np.zeros(x.shape, np.int64), np.zeros_like(x))


def const(hi: float, lo: float, exp: int, rel: float, n: int) -> XD:
    """A constant ``(hi + lo) * 2**exp`` with relative error ``rel`` broadcast to ``n`` points."""
    return XD.make(np.full(n, hi), np.full(n, lo), np.full(n, exp, np.int64), np.full(n, rel))


def _plain_xd(h, l, r) -> XD:  # noqa: E741
    return XD.make(h, l, np.zeros(h.shape, np.int64), r)


# ---------------------------------------------------------------------------------------
# elementary functions (each: value, own rounding error, propagated input error)

def exp(x: XD) -> XD:
    """exp: x = k ln2 + r (|k| < 2^31, Cody-Waite with 7 pieces of ln 2), exp(r) = 1 + expm1(r).

    ``x < -2^30`` gives the enclosure ``[0, 2^E]`` (value 2^(E-1), relative error 1), so that
    ``1 + exp(-1e300)`` is certainly 1; ``x > 2^30`` is untrusted."""
    n = x.n
    xh, xl, ok = x.plain(EXP_LIMIT)
    with np.errstate(all="ignore"):
        k, rh, rl = D.reduce(xh, xl, D.LN2_PARTS, D.LN2_PARTS[0] + D.LN2_PARTS[1])
        k = np.where(ok, k, 0.0)
        rh, rl = np.where(ok, rh, 0.0), np.where(ok, rl, 0.0)
        ph, pl = D.expm1_small(rh, rl)
        yh, yl = D.add(ph, pl, 1.0, 0.0)
        ak = np.abs(k)
        red = ak * D.PARTS_TAIL["ln2"] + 2.0 ** -100 * (np.abs(rh) + ak * 2.0 ** -20)
        ax = np.abs(x.approx())
        prop = np.expm1(ax * x.r) * SAFE
        r = np.where(ok, prop + red + D.U_KERNEL, INF)
        out = XD.make(yh, yl, k.astype(np.int64), r)
        # tiny |x|: exp(x) = 1 within |x| (the reduction above keeps those too, but x may underflow)
        tiny = x.e < -1000
        one = const(1.0, 0.0, 0, 0.0, n).with_error(2.0 ** -999 + x.r * 2.0 ** -999)
        out = where(tiny & np.isfinite(x.r), one, out)
        # large negative x: an enclosure
        neg = (x.h < 0) & (x.e > EXP_LIMIT) & (x.r < 0.5)
        big = np.abs(np.ldexp(x.h, np.clip(x.e, -1000, 1000))) * (1 - x.r) * (1 - 2.0 ** -40)
        E = np.ceil(np.maximum(-big / np.log(2.0), -(2.0 ** 50)))
        enc = XD(np.full(n, 0.5), np.zeros(n), E.astype(np.int64), np.ones(n))
        out = where(neg, enc, out)
        zero = (x.h == 0) & (x.r == 0)
        return where(zero, const(1.0, 0.0, 0, 0.0, n), out)


def expm1(x: XD) -> XD:
    """expm1: the relatively accurate kernel for |x| <= 0.35 (and x itself below 2^-60),
    ``exp(x) - 1`` beyond (no cancellation there)."""
    xh, xl, _ = x.plain(0)
    small = (x.e <= -2) & np.isfinite(x.r)
    with np.errstate(all="ignore"):
        sh = np.where(small, xh, 0.0)
        ph, pl = D.expm1_small(sh, np.where(small, xl, 0.0))
        ax = np.abs(x.approx())
        prop = np.exp(ax) * np.expm1(ax * x.r) / np.maximum(np.abs(np.expm1(np.where(small, xh, 1.0))), 1e-300)
        k = _plain_xd(ph, pl, prop * SAFE + D.U_KERNEL)
        tiny = x.with_error(np.ldexp(1.0, np.clip(x.e, -1070, 0)) + x.r * 2.0 ** -50)
        k = where(x.e < _TINY_E, tiny, k)
        big = exp(x) - const(1.0, 0.0, 0, 0.0, x.n)
    out = where(small, k, big)
    return where((x.h == 0) & (x.r == 0), x, out)


def log(x: XD) -> XD:
    """log: m 2^e with m in [1/sqrt2, sqrt2); log m = y0 + (m - 1 - expm1(y0)) e^-y0 (one Newton
    step from the float64 log, in expm1 form so that log m near 0 keeps its relative
    accuracy); plus e ln 2 with 7 pieces of ln 2.  Non-positive or unsure arguments: untrusted."""
    n = x.n
    with np.errstate(all="ignore"):
        low = x.h < 0.7071067811865476
        mh = np.where(low, 2 * x.h, x.h)
        ml = np.where(low, 2 * x.l, x.l)
        e = np.where(low, x.e - 1, x.e).astype(np.float64)
        y0 = np.log(mh)
        dh, dl = D.two_sum(mh - 1.0, ml)
        Eh, El = D.expm1_small(y0, np.zeros(n))
        # c = m e^-y0 - 1 = (m - 1 - expm1(y0)) / (1 + expm1(y0)), in double-double: c is not small
        # against y0 when m ~ 1 (y0 = log(1.0) = 0 while m = 1 + 2^-60 has log m = 2^-60)
        nh, nl = D.add(dh, dl, -Eh, -El)
        gh, gl = D.add(Eh, El, 1.0, 0.0)
        ch, cl = D.div(nh, nl, gh, gl)
        # log m = y0 + log1p(c) = y0 + c - c^2/2 + O(c^3), |c| <~ 2^-52
        qh, ql = D.mul(ch, cl, ch, cl)
        lh, ll = D.add(ch, cl, -0.5 * qh, -0.5 * ql)
        lh, ll = D.add(lh, ll, y0, 0.0)
        ac = np.abs(ch)
        err = np.abs(y0) * 2.0 ** -90 + ac * 2.0 ** -99 + ac ** 3 * 0.34
        # + e ln2 (|e| < 2^31: each e * piece exact)
        for p in D.LN2_PARTS:
            lh, ll = D.add(lh, ll, e * p, 0.0)
        err = err + np.abs(e) * (D.PARTS_TAIL["ln2"] + 8 * 2.0 ** -102)
        # absolute error: own rounding + |log(1 + d)| <= r / (1 - r) from the argument's error
        A = (err + np.where(x.r < 0.5, x.r / (1 - x.r), INF)) * SAFE
        r = np.where(A == 0, 0.0, A / np.abs(lh) + 3 * D.U_ADD)
        lh, ll, r = _zero_with_error(lh, ll, r, A)
        r = np.where((x.h > 0) & (x.r < 0.5) & (np.abs(e) < 2.0 ** 31), r, INF)
    return XD.make(lh, ll, np.zeros(n, np.int64), r)


def log1p(x: XD) -> XD:
    """log1p: for |x| < 1/4, y0 = log1p(x_hi) and one Newton step in expm1 form; beyond,
    log(1 + x); below 2^-60, x itself."""
    n = x.n
    xh, xl, _ = x.plain(0)
    small = (x.e <= -2) & np.isfinite(x.r)
    with np.errstate(all="ignore"):
        sh, sl = np.where(small, xh, 0.0), np.where(small, xl, 0.0)
        y0 = np.log1p(sh)
        Eh, El = D.expm1_small(y0, np.zeros(n))
        ch, _ = D.add(sh, sl, -Eh, -El)
        lh, ll = D.two_sum(y0, ch * np.exp(-y0))
        ax = np.abs(sh)
        t = ax * x.r / (1 - ax * (1 + x.r))
        prop = np.where(t < 0.5, t / (1 - t), INF) / np.abs(lh)
        prop = np.where(x.r == 0, 0.0, prop)
        k = _plain_xd(lh, ll, (prop + 2.0 ** -90) * SAFE)
        tiny = x.with_error(np.ldexp(1.0, np.clip(x.e, -1070, 0)) + x.r * 2.0 ** -50)
        k = where(x.e < _TINY_E, tiny, k)
        big = log(const(1.0, 0.0, 0, 0.0, n) + x)
    out = where(small, k, big)
    return where((x.h == 0) & (x.r == 0), x, out)


def sqrt(x: XD) -> XD:
    """sqrt: even exponent, Karp-Markstein root of the mantissa in [0.25, 1)."""
    odd = (x.e % 2) != 0
    with np.errstate(all="ignore"):
        mh = np.where(odd, x.h / 2, x.h)
        ml = np.where(odd, x.l / 2, x.l)
        e = np.where(odd, x.e + 1, x.e) // 2
        yh, yl = D.sqrt(mh, ml)
        r = np.where(x.r < 0.5, 0.5 * x.r + x.r * x.r, INF) * SAFE + D.U_SQRT
        r = np.where(x.h > 0, r, np.where((x.h == 0) & (x.r == 0), 0.0, INF))
    return XD.make(yh, yl, e, r)


def _sincos_plain(xh, xl, ok):
    """(sin, cos, abs error of the reduced argument) in plain dd for |x| < 2^30."""
    with np.errstate(all="ignore"):
        k, rh, rl = D.reduce(np.where(ok, xh, 0.0), np.where(ok, xl, 0.0), D.PIO2_PARTS, np.pi / 2)
        (sh, sl), (ch, cl) = D.sincos_reduced(rh, rl)
        q = np.mod(k, 4).astype(np.int64)
        ak = np.abs(k)
        red = ak * D.PARTS_TAIL["pio2"] + 10 * 2.0 ** -102 * (np.abs(rh) + ak * 2.0 ** -20)
        sin_h = np.choose(q, [sh, ch, -sh, -ch])
        sin_l = np.choose(q, [sl, cl, -sl, -cl])
        cos_h = np.choose(q, [ch, -sh, -ch, sh])
        cos_l = np.choose(q, [cl, -sl, -cl, sl])
    return (sin_h, sin_l), (cos_h, cos_l), red


def _trig(x: XD, which: int) -> XD:
    xh, xl, ok = x.plain(EXP_LIMIT)
    s, c, red = _sincos_plain(xh, xl, ok)
    vh, vl = s if which == 0 else c
    with np.errstate(all="ignore"):
        val = np.abs(vh)
        ax = np.abs(x.approx())
        r = (red + ax * x.r) / val * SAFE + D.U_KERNEL
        r = np.where(ok & (val > 0), r, INF)
        out = _plain_xd(vh, vl, r)
        tiny = x.e < _TINY_E
        if which == 0:
            small = x.with_error(np.ldexp(1.0, np.clip(2 * x.e, -1070, 0)) + x.r * 2.0 ** -50)
        else:
            small = const(1.0, 0.0, 0, 0.0, x.n).with_error(np.ldexp(1.0, np.clip(2 * x.e, -1070, 0)))
        out = where(tiny & np.isfinite(x.r), small, out)
    zero = (x.h == 0) & (x.r == 0)
    return where(zero, x if which == 0 else const(1.0, 0.0, 0, 0.0, x.n), out)


def sin(x: XD) -> XD:
    """sin, |x| < 2^30 (Cody-Waite reduction by pi/2 in 9 pieces); larger |x| untrusted."""
    return _trig(x, 0)


def cos(x: XD) -> XD:
    """cos, as :func:`sin`."""
    return _trig(x, 1)


def atan(x: XD) -> XD:
    """atan: y0 = atan(x_hi), then y0 + delta with delta = tan(atan x - y0) =
    (x cos y0 - sin y0) / (cos y0 + x sin y0) (|delta| ~ 2^-53, so atan delta = delta within
    |delta|^3 / 3); |x| >= 2^60: sign(x) pi/2 - 1/x."""
    n = x.n
    xh, xl, ok = x.plain(60)
    with np.errstate(all="ignore"):
        y0 = np.arctan(xh)
        (sh, sl), (ch, cl), _ = _sincos_plain(y0, np.zeros(n), np.ones(n, bool))
        xch, xcl = D.mul(xh, xl, ch, cl)
        xsh, xsl = D.mul(xh, xl, sh, sl)
        nh, nl = D.add(xch, xcl, -sh, -sl)
        dh, dl = D.add(ch, cl, xsh, xsl)
        qh, ql = D.div(nh, nl, dh, dl)
        rh, rl = D.add(y0, 0.0, qh, ql)
        err = 2.0 ** -96 * (np.abs(xch) + np.abs(sh)) / np.abs(dh) + np.abs(qh) ** 3
        ax = np.abs(xh)
        prop = ax * x.r / (1 + (ax * (1 - np.minimum(x.r, 1.0))) ** 2)
        r = np.where(ok, (err + prop) / np.abs(rh) * SAFE + 2 * D.U_ADD, INF)
        out = _plain_xd(rh, rl, np.where(rh == 0, INF, r))
        tiny = x.with_error(np.ldexp(1.0, np.clip(2 * x.e, -1070, 0)) + x.r * 2.0 ** -50)
        out = where((x.e < _TINY_E) & np.isfinite(x.r), tiny, out)
        s = np.where(x.h < 0, -1.0, 1.0)
        hp = D.split_const(lambda: __import__("mpmath").pi / 2)
        half_pi = XD.make(s * hp[0], s * hp[1], np.zeros(n, np.int64), np.full(n, 2.0 ** -104))
        far = (half_pi - const(1.0, 0.0, 0, 0.0, n) / x).with_error(2.0 ** -170)
        out = where((x.e > 60) & (x.r < 0.5), far, out)
    return where((x.h == 0) & (x.r == 0), x, out)


def absolute(x: XD) -> XD:
    """|x| (exact)."""
    neg = x.h < 0
    return XD(np.where(neg, -x.h, x.h), np.where(neg, -x.l, x.l), x.e, x.r)
