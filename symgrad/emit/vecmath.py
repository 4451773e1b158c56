"""Vectorisable elementary functions for Numba kernels: exp, expm1, log, log1p, tanh, sigmoid, softplus.

Numba lowers ``math.exp``/``np.exp`` in a loop to one scalar libm call per element,
which LLVM cannot vectorise (pip's llvmlite has no vector maths library).  The
functions here are plain arithmetic on IEEE doubles plus integer bit casts, with
regime choices written as ``a if c else b`` on values already computed, which LLVM
turns into ``select`` instructions; a loop over them vectorises (AVX2/AVX-512).
No ``fastmath``: every operation rounds as IEEE 754 says, so the error bounds of
the algorithms below hold.

Algorithms (all fdlibm's, Sun Microsystems 1993, as kept in FreeBSD msun and
musl; the same ones are described in J.-M. Muller, *Elementary Functions*, 3rd ed.,
Birkhaeuser 2016, ch. 11, and P. T. P. Tang, "Table-driven implementation of the
exponential function in IEEE floating-point arithmetic", ACM TOMS 15(2), 1989):

* ``exp_f64`` -- fdlibm ``e_exp.c``: x = k ln2 + r with k = round(x / ln2) and
  ln2 split into a 32-bit head and a tail (Cody-Waite, so k*ln2_hi is exact),
  |r| <= ln2/2; exp(r) = 1 + r + r c/(2 - c) with c = r - r^2 P(r^2), P a degree-5
  Remez polynomial (error < 2^-59); then times 2^k, built from exponent bits in
  two halves so that overflow gives inf and tiny results round once into the
  subnormals.  fdlibm's branches are replaced: k by the round-to-nearest shifter
  1.5 * 2^52 (no float-to-int conversion), the k == 0 case is the general formula,
  the over/underflow tests become a clamp of x to [-746, 710].
* ``log_f64`` -- fdlibm ``e_log.c``: x = 2^k (1 + f) with sqrt(2)/2 <= 1 + f < sqrt(2),
  s = f/(2 + f), log(1 + f) = f - s (f - R(s^2)) with R a degree-7 Remez polynomial
  (error < 2^-58.45); subnormal x are first scaled by 2^54.  fdlibm's two final
  formulas (chosen by f's range for accuracy) are both computed and selected.
* ``log1p_f64`` -- fdlibm ``s_log1p.c`` (the log kernel with the rounding error of 1 + x
  fed in as c/u); ``expm1_f64`` -- fdlibm ``s_expm1.c``, its k-range cases selected.
* ``tanh_f64`` (fdlibm ``s_tanh.c``, from one expm1), ``sigmoid_f64`` and ``softplus_f64``
  (the stable forms of emit/prelude.py) compose the above: < 1 ulp in float32, but in float64
  only within the composition's bound (tanh 4.2, sigmoid 3.72, softplus 3.3 ulp; measured
  about 2.0, 2.1, 1.4).  1 ulp there needs exp/expm1 with a double-double tail (not done).
* ``exp_f32`` has its own cheaper float64 evaluation (see its doc); the other ``*_f32``
  functions evaluate the float64 ones and round once to float32:
  the float64 error (< 1 ulp of float64 = 2^-29 ulp of float32) plus that rounding
  stays below 1 ulp of float32.

Specials follow IEEE/C99: exp(NaN) = NaN, exp(+inf) = inf, exp(-inf) = +0, exp(+-0) = 1,
overflow gives inf and underflow gives subnormals or +0; log(NaN) = NaN, log(x < 0) =
NaN, log(+-0) = -inf, log(+inf) = inf, log(1) = +0.

Each function exists as ``<name>_f64``, ``<name>_f32`` and ``<name>`` (dispatching on the
argument's type inside Numba code; NumPy when called from Python).  Functions too big for
LLVM's inliner are inlined in Numba IR (``inline="always"``) with their divisions in
``_div``, so they keep NumPy's error model inside any caller and the caller's loop vectorises.

Accuracy (tests/test_vecmath.py): at most 1 ulp (exp, expm1, log, log1p; all functions in
float32) against an extended-precision reference (x87 long double, cross-checked with mpmath), on random bit patterns over
the whole range plus the edge cases; measured maxima are in BENCHMARKS.md.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic, overload

__all__ = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus",
           "exp_f64", "expm1_f64", "log_f64", "log1p_f64", "tanh_f64", "sigmoid_f64", "softplus_f64",
           "exp_f32", "expm1_f32", "log_f32", "log1p_f32", "tanh_f32", "sigmoid_f32", "softplus_f32"]


@intrinsic
def _f64_bits(typingctx, x):
    """The IEEE bits of a float64 as an int64 (an LLVM bitcast: free and vectorisable)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def _f64_from_bits(typingctx, n):
    """The float64 whose IEEE bits are the int64 ``n``."""
    if n != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


_JIT = dict(nogil=True, fastmath=False, error_model="numpy", cache=True)

# fdlibm e_exp.c constants.
_INVLN2 = 1.44269504088896338700e+00
_LN2HI = 6.93147180369123816490e-01        # 0x3fe62e42fee00000: 32 significant bits
_LN2LO = 1.90821492927058770002e-10
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
_SHIFT = 6755399441055744.0                # 1.5 * 2^52: x + _SHIFT rounds x to an integer
_SHIFT_BITS = 0x4338000000000000           # its bits; the low mantissa bits then hold that integer
_EXP_HI = 710.0                            # > log(DBL_MAX) = 709.78: exp overflows to inf
_EXP_LO = -746.0                           # < log(2^-1075) = -745.13: exp rounds to +0

# fdlibm e_log.c constants.
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_TWO54 = 18014398509481984.0
_DBL_MIN = 2.2250738585072014e-308


@numba.njit(**_JIT)
def exp_f64(x):
    """e**x for a float64 scalar, error < 1 ulp (fdlibm e_exp.c, branch-free; see module doc).

    Args: x: float64 scalar.  Returns: float64.  Raises nothing: NaN -> NaN,
    +inf -> inf, -inf -> 0, x > 709.78 -> inf, x < -745.13 -> 0, subnormal results rounded once.
    """
    xc = _EXP_HI if x > _EXP_HI else x      # NaN compares false and stays NaN
    xc = _EXP_LO if xc < _EXP_LO else xc
    t = xc * _INVLN2 + _SHIFT
    kf = t - _SHIFT                         # round(x / ln2), |kf| <= 1077
    k = _f64_bits(t) - _SHIFT_BITS
    hi = xc - kf * _LN2HI                   # exact (Cody-Waite)
    lo = kf * _LN2LO
    r = hi - lo
    rr = r * r
    c = r - rr * (_P1 + rr * (_P2 + rr * (_P3 + rr * (_P4 + rr * _P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    k1 = k >> 1                             # 2^k = 2^k1 * 2^k2 with both halves normal
    k2 = k - k1
    return (y * _f64_from_bits((k1 + 1023) << 52)) * _f64_from_bits((k2 + 1023) << 52)


@numba.njit(**_JIT)
def log_f64(x):
    """Natural logarithm of a float64 scalar, error < 1 ulp (fdlibm e_log.c, branch-free).

    Args: x: float64 scalar.  Returns: float64.  Raises nothing: NaN and x < 0 -> NaN,
    +-0 -> -inf, +inf -> inf.
    """
    tiny = x < _DBL_MIN                     # subnormal (and 0, negative): scale by 2^54
    xs = x * _TWO54 if tiny else x
    bits = _f64_bits(xs)
    hx = bits >> 32
    k = (hx >> 20) - 1023 - (54 if tiny else 0)
    hm = hx & 0x000fffff
    i = (hm + 0x95f64) & 0x100000           # 1 when the mantissa is above sqrt(2)
    xn = _f64_from_bits(((hm | (i ^ 0x3ff00000)) << 32) | (bits & 0xffffffff))
    k += i >> 20
    f = xn - 1.0
    s = f / (2.0 + f)
    dk = float(k)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    rr = t2 + t1
    hfsq = 0.5 * f * f
    far = dk * _LN2HI - ((hfsq - (s * (hfsq + rr) + dk * _LN2LO)) - f)
    near = dk * _LN2HI - ((s * (f - rr) - dk * _LN2LO) - f)
    y = far if ((hm - 0x6147a) | (0x6b851 - hm)) > 0 else near
    y = x if x == math.inf else y
    y = -math.inf if x == 0.0 else y
    y = math.nan if x < 0.0 else y
    return x if x != x else y


_LN2 = 0.6931471805599453


@numba.njit(inline="always", **_JIT)
def exp_f32(x):
    """e**x for a float32 scalar, error < 1 ulp of float32 (max 0.5032 ulp over every float32).

    In float64: k = round(x / ln2), r = x - k ln2 (|r| <= ln2/2, absolute error < 2^-46),
    exp(r) by its degree-8 Taylor polynomial (remainder < 2^-27 relative), times 2^k, then
    one rounding to float32 (which also makes overflow inf and subnormal results), as musl's
    expf evaluates in double (cheaper than exp_f64: no division, one scaling).  Checked
    exhaustively on all 2.24e9 float32 in [-104, 89] against NumPy's float64 exp (max 0.5032
    ulp); outside that range the clamp gives inf or +0.  NaN -> NaN.
    """
    xd = np.float64(x)
    xd = 89.0 if xd > 89.0 else xd          # exp(89) > FLT_MAX: inf after rounding
    xd = -104.0 if xd < -104.0 else xd      # exp(-104) < FLT_TRUE_MIN / 2: +0
    t = xd * _INVLN2 + _SHIFT
    kf = t - _SHIFT
    k = _f64_bits(t) - _SHIFT_BITS
    r = xd - kf * _LN2
    p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (
        1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320))))))))
    return np.float32(p * _f64_from_bits((k + 1023) << 52))


@numba.njit(inline="always", **_JIT)
def log_f32(x):
    """log(x) for a float32 scalar: the float64 result rounded once, error < 1 ulp of float32."""
    return np.float32(log_f64(np.float64(x)))


@numba.njit(**_JIT)
def log1p_f64(x):
    """log(1 + x) for a float64 scalar, error < 1 ulp (fdlibm s_log1p.c, branch-free).

    u = 1 + x is rounded; its rounding error c (exact by Fast2Sum) enters the
    polynomial as c/u, so log1p(x) = k ln2 + log(1 + f) + c/u with one final rounding.
    For -0.2929 < x < 0.4142 (1 + x within [sqrt(2)/2, sqrt(2))) f = x and k = c = 0.
    Args: x: float64 scalar.  Returns: float64.  Raises nothing: x < -1 and NaN -> NaN,
    -1 -> -inf, +inf -> inf, +-0 -> +-0.
    """
    u = 1.0 + x
    c = (1.0 - (u - x) if u >= 2.0 else x - (u - 1.0)) / u
    bits = _f64_bits(u)
    hx = bits >> 32
    hu = hx & 0x000fffff
    big = hu >= 0x6a09e                     # mantissa of u above sqrt(2): use u/2
    k = (hx >> 20) - 1023 + (1 if big else 0)
    un = _f64_from_bits(((hu | (0x3fe00000 if big else 0x3ff00000)) << 32) | (bits & 0xffffffff))
    near = (x > -0.2928932188134524) & (x < 0.41421356237309503)
    f = x if near else un - 1.0
    c = 0.0 if near else c
    dk = 0.0 if near else float(k)
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    rr = z * (_LG1 + z * (_LG2 + z * (_LG3 + z * (_LG4 + z * (_LG5 + z * (_LG6 + z * _LG7))))))
    y = dk * _LN2HI - ((hfsq - (s * (hfsq + rr) + (dk * _LN2LO + c))) - f)
    y = x if x == math.inf else y
    y = x if x == 0.0 else y                # keeps the sign of zero
    y = -math.inf if x == -1.0 else y
    y = math.nan if x < -1.0 else y
    return x if x != x else y


@numba.njit(inline="always", **_JIT)
def log1p_f32(x):
    """log(1 + x) for a float32 scalar: the float64 result rounded once, error < 1 ulp of float32."""
    return np.float32(log1p_f64(np.float64(x)))


_Q1 = -3.33333333333331316428e-02          # fdlibm s_expm1.c
_Q2 = 1.58730158725481460165e-03
_Q3 = -7.93650757867487942473e-05
_Q4 = 4.00821782732936239552e-06
_Q5 = -2.01099218183624371326e-07


@numba.njit(**_JIT)
def _div(a, b):
    """a / b as IEEE division: a small function LLVM inlines, keeping NumPy's error model
    inside callers that are inlined in Numba IR (whose own ``/`` would follow the caller's)."""
    return a / b


@numba.njit(inline="always", **_JIT)    # too big for LLVM's inliner (see softplus_f64); its one
def expm1_f64(x):                         # division goes through _div
    """e**x - 1 for a float64 scalar, error < 1 ulp (fdlibm s_expm1.c, branch-free).

    x = k ln2 + r (+ c, the rounding error of r), |r| <= ln2/2; expm1(r) from a degree-5
    Remez rational form in r^2/2 (error < 2^-61); then 2^k (expm1(r) + 1) - 1 written for
    each k range as fdlibm does (k = 0, -1, 1, 2..19, 20..56, else), all computed and selected.
    Args: x: float64 scalar.  Returns: float64.  Raises nothing: NaN -> NaN, +inf -> inf,
    -inf -> -1, x > 709.78 -> inf, +-0 -> +-0.
    """
    xc = _EXP_HI if x > _EXP_HI else x
    xc = -60.0 if xc < -60.0 else xc        # expm1(-60) rounds to -1
    t = xc * _INVLN2 + _SHIFT
    kf = t - _SHIFT
    k = _f64_bits(t) - _SHIFT_BITS
    hi = xc - kf * _LN2HI
    lo = kf * _LN2LO
    r = hi - lo
    c = (hi - r) - lo
    hfx = 0.5 * r
    hxs = r * hfx
    r1 = 1.0 + hxs * (_Q1 + hxs * (_Q2 + hxs * (_Q3 + hxs * (_Q4 + hxs * _Q5))))
    tt = 3.0 - r1 * hfx
    e = hxs * _div(r1 - tt, 6.0 - r * tt)
    y0 = r - (r * e - hxs)                  # k == 0 (c == 0)
    e = (r * (e - c) - c) - hxs
    ym1 = 0.5 * (r - e) - 0.5               # k == -1
    y1 = -2.0 * (e - (r + 0.5)) if r < -0.25 else 1.0 + 2.0 * (r - e)
    k1 = k >> 1
    yfar = ((1.0 - (e - r)) * _f64_from_bits((k1 + 1023) << 52)) * _f64_from_bits((k - k1 + 1023) << 52) - 1.0
    twopk = _f64_from_bits((k + 1023) << 52)            # 2^k for 2 <= k <= 56
    twomk = _f64_from_bits((1023 - k) << 52)            # 2^-k
    ymid = ((1.0 - twomk) - (e - r)) * twopk            # 2 <= k < 20
    yhigh = ((r - (e + twomk)) + 1.0) * twopk           # 20 <= k <= 56
    y = yhigh if k >= 20 else ymid
    y = yfar if (k <= -2) | (k > 56) else y
    y = y1 if k == 1 else y
    y = ym1 if k == -1 else y
    y = y0 if k == 0 else y
    return x if x != x else y


@numba.njit(inline="always", **_JIT)
def expm1_f32(x):
    """e**x - 1 for a float32 scalar: the float64 result rounded once, error < 1 ulp of float32."""
    return np.float32(expm1_f64(np.float64(x)))


@numba.njit(inline="always", **_JIT)    # inlined like expm1_f64, divisions through _div
def tanh_f64(x):
    """tanh for a float64 scalar from one expm1 (fdlibm s_tanh.c, branch-free).

    t = expm1(2|x|), tanh = 1 - 2/(t + 2) for |x| >= 1; t = expm1(-2|x|), tanh = -t/(t + 2)
    below; |x| is clamped to 22 (tanh rounds to 1 there); the sign is copied back.  Errors of
    expm1 and two roundings: not <= 1 ulp for |x| < 1 (bound 4.2 ulp, measured 2.05).  NaN -> NaN, +-inf -> +-1, +-0 -> +-0.
    """
    ax = abs(x)
    ax = 22.0 if ax > 22.0 else ax
    big = ax >= 1.0
    t = expm1_f64(2.0 * ax if big else -2.0 * ax)
    z = 1.0 - _div(2.0, t + 2.0) if big else _div(-t, t + 2.0)
    return math.copysign(z, x)


@numba.njit(inline="always", **_JIT)
def tanh_f32(x):
    """tanh for a float32 scalar: the float64 result rounded once, error < 1 ulp of float32."""
    return np.float32(tanh_f64(np.float64(x)))


@numba.njit(**_JIT)
def sigmoid_f64(x):
    """1/(1 + e**-x) for a float64 scalar without overflow: e = exp(-|x|), then 1/(1+e) or e/(1+e).

    Same formula as the prelude's ``_sigmoid`` (the select replaces its branch).  Three
    roundings after exp: see BENCHMARKS.md / tests for the measured error (not <= 1 ulp).
    """
    e = exp_f64(-abs(x))
    return (1.0 if x >= 0.0 else e) / (1.0 + e)


@numba.njit(inline="always", **_JIT)     # inlined in Numba IR: too big for LLVM's inliner, whose
def softplus_f64(x):                      # call would stop the caller's loop vectorising (no division here)
    """log(1 + e**x) for a float64 scalar as max(x, 0) + log1p(exp(-|x|)) (Maechler 2012).

    NaN -> NaN, +inf -> inf, -inf -> 0.  Two rounded functions and a sum: measured error in
    tests/test_vecmath.py (not <= 1 ulp for x < 0).
    """
    return (x if x > 0.0 else 0.0) + log1p_f64(exp_f64(-abs(x)))


@numba.njit(inline="always", **_JIT)
def sigmoid_f32(x):
    """Logistic function for a float32 scalar: float64 evaluation rounded once, error < 1 ulp."""
    return np.float32(sigmoid_f64(np.float64(x)))


@numba.njit(inline="always", **_JIT)
def softplus_f32(x):
    """log(1 + e**x) for a float32 scalar: float64 evaluation rounded once, error < 1 ulp."""
    return np.float32(softplus_f64(np.float64(x)))


def _dispatcher(name, f64, f32, numpy_form, what):
    """The generic ``name(x)``: inside Numba code f64 or f32 by the argument's type (other
    types: Numba TypingError), inlined in the caller's IR so its loop can vectorise; called
    from Python, ``numpy_form`` (NumPy, the same formula)."""
    def generic(x):
        return numpy_form(x)
    generic.__name__ = generic.__qualname__ = name
    generic.__doc__ = (f"{what}, vectorisable inside Numba code (float64 -> float64, float32 -> float32; "
                       f"see {f64.__name__}).  From Python: NumPy.")

    @overload(generic, inline="always")
    def _typed(x):
        if x == types.float64:
            return lambda x: f64(x)
        if x == types.float32:
            return lambda x: f32(x)
        return None
    return generic


def _np_sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


def _np_softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


exp = _dispatcher("exp", exp_f64, exp_f32, np.exp, "e**x")
expm1 = _dispatcher("expm1", expm1_f64, expm1_f32, np.expm1, "e**x - 1")
log = _dispatcher("log", log_f64, log_f32, np.log, "natural logarithm")
log1p = _dispatcher("log1p", log1p_f64, log1p_f32, np.log1p, "log(1 + x)")
tanh = _dispatcher("tanh", tanh_f64, tanh_f32, np.tanh, "hyperbolic tangent")
sigmoid = _dispatcher("sigmoid", sigmoid_f64, sigmoid_f32, _np_sigmoid, "1/(1 + e**-x)")
softplus = _dispatcher("softplus", softplus_f64, softplus_f32, _np_softplus, "log(1 + e**x)")
