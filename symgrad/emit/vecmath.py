"""Vectorisable elementary functions for Numba kernels: exp, expm1, log, log1p, tanh, sigmoid, softplus, sin, cos.

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

* ``exp_f64`` -- x = k ln2 + r with k = round(x / ln2) by the round-to-nearest shifter
  1.5 * 2^52 (no float-to-int conversion) and ln2 in three parts (Cody-Waite), |r| <= ln2/2;
  e^r as a double-double (``_exp_dd``, below: Taylor polynomial in Estrin's scheme, relative
  error < 2^-62), its two parts summed once and scaled by 2^k in two halves so that overflow
  gives inf and tiny results round once into the subnormals; over/underflow tests are a clamp
  of x to [-746, 710].  Within 2^-9 ulp of correct rounding (fdlibm ``e_exp.c``'s cheaper
  formula reaches 0.89 ulp); ``exp_f32`` uses a degree-10 polynomial in float64 (musl's expf).
* ``log_f64`` -- table-driven, as glibc's log (Szabolcs Nagy, ARM optimized-routines, 2018; Tang,
  "Table-driven implementation of the logarithm function", ACM TOMS 16(4), 1990): x = 2^k z,
  z in [0x1.6p-1, 0x1.6p0), log x = k ln2 + log c + log1p(z/c - 1) for c the centre of one of 128
  subintervals, 1/c rounded to 8 bits so that r = z/c - 1 is exact in one FMA, log c in
  double-double from a table, and
  log1p(r) = r - r^2/2 + r^3 Q(r); the large parts are summed exactly (TwoSum) and rounded once:
  within 0.5 + 2^-14 ulp, correctly rounded at every one of 10^5 sampled points (NumPy's log and
  fdlibm's misround 1 % and 3-4 % of them), at about 1.5 times the cost of fdlibm ``e_log.c`` (two
  table gathers and a division; ``log1p``: two divisions), which serves the float32 functions
  (``_log_fdlibm``).
* ``log1p_f64`` -- the same sum with r = x for -2^-8 <= x < 2^-7, else log(u) for u = 1 + x
  with the rounding error c of 1 + x (exact, fdlibm ``s_log1p.c``'s formula) added as c/u;
  ``expm1_f64`` -- fdlibm ``s_expm1.c``, its k-range cases selected.
* ``tanh_f64``, ``sigmoid_f64``, ``softplus_f64`` -- fdlibm's formulas (``s_tanh.c``'s
  -t/(2 + t) with t = expm1(-2|x|); the stable sigmoid; Maechler's max(x, 0) + log1p(exp(-|x|)))
  evaluated in double-double arithmetic (Dekker 1971; J.-M. Muller et al., *Handbook of
  Floating-Point Arithmetic*, 2nd ed. 2018, ch. 4 and 14): exp of the reduced argument from
  ``_exp_dd`` with relative error below 2^-62, exact sums by Fast2Sum/TwoSum, products by
  FMA (``_fma``, LLVM's ``llvm.fma.f64``), one corrected division, so the result is rounded
  once: error <= 0.5 ulp + 2^-8 ulp, and <= 0.75 ulp for subnormal sigmoid/softplus results
  (the 2^k scaling rounds a second time there).  Composing the 1-ulp routines instead gives
  up to 4.2 (tanh), 3.72 (sigmoid) and 3.3 ulp (softplus); those cheaper forms serve float32,
  where such errors are below 2^-26 ulp (``_tanh_f64_fast``; sigmoid and softplus with
  ``_exp_for_f32``).
* ``sin_f64``, ``cos_f64`` -- |x| = (4j + q) pi/2 + r with |r| <= pi/4 as a double-double
  (``_rem_pio2``), then +-sin r or +-cos r by fdlibm's kernels (``k_sin.c``; ``k_cos.c`` as revised
  by Bruce D. Evans in FreeBSD msun), which take the tail of r.  The reduction is Cody-Waite
  (Cody & Waite, *Software Manual for the Elementary Functions*, 1980; Muller ch. 11) with pi/2 in
  three parts and FMA for |x| < 2^28, and Payne-Hanek (Payne & Hanek, SIGNUM Newsletter 18(1),
  1983; Muller 11.4) above, with 2^E (2/pi) mod 4 for each exponent E tabulated from a 1200-bit
  2/pi; both are computed and one selected, so there is no branch (the table row is a gather).
  No libm call: a conditional call to libm's sin for huge |x| either stops the loop vectorising
  or is speculated for every element (LLVM calls the scalar sin 8 times per vector).
  The closest double to a multiple of pi/2 (6381956970095103 2^797, 2^-60.9 away; Muller table
  11.1) bounds the cancellation the reduction must carry.  ``sin_f32``/``cos_f32`` reduce the
  float32 argument the same way with a single-double result (a three-part table row for a
  24-bit significand) and use FreeBSD's ``k_sinf.c``/``k_cosf.c`` polynomials in float64, then
  round once; every float32 input is checked (tests/test_vecmath.py, slow).
* ``exp_f32``, ``sigmoid_f32`` and ``softplus_f32`` use a cheaper float64 exp (``_exp_for_f32``,
  relative error < 2^-42); the other ``*_f32`` functions evaluate the float64 ones.  Each
  rounds once to float32: a float64 error below 2^-29 ulp of float32 plus that rounding
  stays below 1 ulp of float32.

Specials follow IEEE/C99: exp(NaN) = NaN, exp(+inf) = inf, exp(-inf) = +0, exp(+-0) = 1,
overflow gives inf and underflow gives subnormals or +0; log(NaN) = NaN, log(x < 0) =
NaN, log(+-0) = -inf, log(+inf) = inf, log(1) = +0; sin(+-inf) = cos(+-inf) = NaN,
sin(+-0) = +-0, cos(+-0) = 1.

Each function exists as ``<name>_f64``, ``<name>_f32`` and ``<name>`` (dispatching on the
argument's type inside Numba code; NumPy when called from Python).  Functions too big for
LLVM's inliner are inlined in Numba IR (``inline="always"``) with their divisions in
``_div``, so they keep NumPy's error model inside any caller and the caller's loop vectorises.

Accuracy (tests/test_vecmath.py): at most 1 ulp for every function and dtype, against an
extended-precision reference (x87 long double, cross-checked with mpmath), on random bit
patterns over the whole range plus the edge cases; measured maxima are in BENCHMARKS.md.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

__all__ = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus", "sin", "cos",
           "exp_f64", "expm1_f64", "log_f64", "log1p_f64", "tanh_f64", "sigmoid_f64", "softplus_f64",
           "sin_f64", "cos_f64",
           "exp_f32", "expm1_f32", "log_f32", "log1p_f32", "tanh_f32", "sigmoid_f32", "softplus_f32",
           "sin_f32", "cos_f32"]


# ---- generated modules copy the text from here to the end marker (symgrad.emit.prelude): ----
# ---- top-level names only, using math, np and numba; every name is renamed _vm... there. ----

@numba.extending.intrinsic
def _f64_bits(typingctx, x):
    """The IEEE bits of a float64 as an int64 (an LLVM bitcast: free and vectorisable)."""
    if x != numba.types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(numba.types.int64))
    return numba.types.int64(numba.types.float64), codegen


@numba.extending.intrinsic
def _f64_from_bits(typingctx, n):
    """The float64 whose IEEE bits are the int64 ``n``."""
    if n != numba.types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(numba.types.float64))
    return numba.types.float64(numba.types.int64), codegen



# fdlibm e_exp.c constants.
_INVLN2 = 1.44269504088896338700e+00
_LN2HI = 6.93147180369123816490e-01        # 0x3fe62e42fee00000: 32 significant bits
_LN2LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0                # 1.5 * 2^52: x + _SHIFT rounds x to an integer
_SHIFT_BITS = 0x4338000000000000           # its bits; the low mantissa bits then hold that integer
_EXP_HI = 710.0                            # > log(DBL_MAX) = 709.78: exp overflows to inf
_EXP_LO = -746.0                           # < log(2^-1075) = -745.13: exp rounds to +0

# fdlibm e_log.c constants (softplus_f64's log kernel).
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_TWO54 = 18014398509481984.0
_DBL_MIN = 2.2250738585072014e-308

# The table-driven log (log_f64, log1p_f64): x = 2^k z with z in [0x1.6p-1, 0x1.6p0), the
# interval split into 128 subintervals by the top 7 bits of z's mantissa (as glibc's and ARM's
# optimized-routines log, Szabolcs Nagy 2018).
_LOG_OFF = 0x3FE6000000000000              # the bits of 0x1.6p-1 = 0.6875
_LOG_N = 128
_LOG_ROUND_HI = 52776558133248.0          # 1.5 * 2^45: (v + it) - it rounds v in [1, 2) to 8 bits
_LOG_ROUND_LO = 26388279066624.0          # 1.5 * 2^44: the same for v in [0.5, 1)
_LOG_LN2HI = 0.6931471805598903            # ln 2 to 42 bits (0x1.62e42fefa38p-1): k ln2_hi is exact for |k| < 2^11
_LOG_LN2LO = 5.497923018708371e-14         # ln 2 - _LOG_LN2HI (to 2^-102)
# log1p(r) = r - r^2/2 + r^3 Q(r) for |r| <= 2^-7: Q's coefficients from a Chebyshev fit of degree 7
# to (log1p(r) - r + r^2/2)/r^3 on [-2^-7, 2^-7] (mpmath.chebyfit at 300 bits), relative error of
# r^3 Q(r) against log1p(r) below 2^-73.
_LOG_Q0 = 0.3333333333333333
_LOG_Q1 = -0.25000000000000566
_LOG_Q2 = 0.20000000000000517
_LOG_Q3 = -0.16666666620096274
_LOG_Q4 = 0.14285714243377506
_LOG_Q5 = -0.12501220788501516
_LOG_Q6 = 0.11112220920033893


def _log_invc(c: float) -> float:
    """1/c rounded to 8 significant bits (round to nearest even, as :func:`_log_reduce` computes it),
    or 1 for the two subintervals next to 1 (their centres 1 - 2^-9 and 1 + 2^-8)."""
    if c == 0.998046875 or c == 1.00390625:
        return 1.0
    v = 1.0 / c
    s = _LOG_ROUND_HI if v >= 1.0 else _LOG_ROUND_LO
    return (v + s) - s


def _log_table():
    """``[logc_hi, logc_lo] * 128`` (flat: one entry's two values share a cache line): per subinterval,
    ``logc = -log(invc)`` for ``invc`` = :func:`_log_invc` of its centre, as ``logc_hi + logc_lo`` with
    ``logc_hi`` a multiple of 2^-43, so that ``k ln2_hi + logc_hi`` is exact for |k| < 2^10 + 54;
    from the standard library's decimal arithmetic at 40 digits (these modules need no mpmath)."""
    import decimal
    ctx = decimal.Context(prec=40)
    out = np.empty(2 * _LOG_N)
    for i in range(_LOG_N):
        c = float(np.int64(_LOG_OFF + (i << 45) + (1 << 44)).view(np.float64))
        lc = -ctx.ln(decimal.Decimal(_log_invc(c)))
        hi = math.ldexp(round(math.ldexp(float(lc), 43)), -43)  # a multiple of 2^-43
        out[2 * i:2 * i + 2] = hi, float(ctx.subtract(lc, decimal.Decimal(hi)))
    return out


_LOG_TABLE = _log_table()


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _log_reduce(u):
    """``(r, k, logc_hi, logc_lo)`` with log(u) = k ln2 + logc + log1p(r) for a positive normal finite
    float64 u: u = 2^k z, z in [0x1.6p-1, 0x1.6p0), c the centre of z's subinterval, invc = 1/c
    rounded to 8 bits (:func:`_log_invc`: a division here is cheaper than a third table gather), and
    r = z invc - 1, exact in one FMA (|r| < 2^-7)."""
    ix = _f64_bits(u)
    tmp = ix - _LOG_OFF
    i = (tmp >> 45) & (_LOG_N - 1)
    iz = ix - (tmp & (0xFFF << 52))
    v = 1.0 / _f64_from_bits((iz & ~((1 << 45) - 1)) | (1 << 44))
    rnd = _LOG_ROUND_HI if v >= 1.0 else _LOG_ROUND_LO
    invc = (v + rnd) - rnd
    invc = 1.0 if (i == 79) | (i == 80) else invc
    return _fma(_f64_from_bits(iz), invc, -1.0), float(tmp >> 52), _LOG_TABLE[2 * i], _LOG_TABLE[2 * i + 1]


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _log_sum(r, kd, chi, clo, corr):
    """k ln2 + logc + log1p(r) + corr, rounded once: the large parts k ln2_hi + logc_hi + r - r^2/2
    summed exactly (TwoSum, Fast2Sum; r^2 by FMA), their errors and the small parts added in the tail.
    Relative error before the final rounding below 2^-68 (|r| < 2^-7, corr < 2^-52 relative)."""
    w = kd * _LOG_LN2HI + chi               # exact: both multiples of 2^-43, |w| < 2^10
    h1, e1 = _two_sum(w, r)
    r2 = r * r
    h2 = -0.5 * r2
    h = h1 + h2                             # Fast2Sum: |h1| > 2^-9 > |h2| or h1 = r (w = 0)
    e2 = h2 - (h - h1)
    r2e = _fma(r, r, -r2)                   # r^2 = r2 + r2e exactly
    q = _LOG_Q0 + r * (_LOG_Q1 + r * (_LOG_Q2 + r * (_LOG_Q3 + r * (_LOG_Q4 + r * (_LOG_Q5 + r * _LOG_Q6)))))
    lo = (e1 + e2) + (kd * _LOG_LN2LO + clo + corr) + (r2 * r * q - 0.5 * r2e)
    return h + lo


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def log_f64(x):
    """Natural logarithm of a float64 scalar, within 0.5 ulp + 2^-14 ulp (correctly rounded at all
    but about 1 in 10^4 points), branch-free.

    Table-driven, as glibc's log (Szabolcs Nagy, ARM optimized-routines, 2018): ``x = 2^k z``,
    ``log x = k ln2 + log c + log1p(z/c - 1)`` with ``1/c`` from a 128-entry table chosen so that
    ``z/c - 1`` is exact, and the sum formed in double-double (:func:`_log_sum`).  Subnormal x are
    first scaled by 2^54.  Args: x: float64 scalar.  Returns: float64.  Raises nothing: NaN and
    x < 0 -> NaN, +-0 -> -inf, +inf -> inf.
    """
    tiny = x < _DBL_MIN                     # subnormal (and 0, negative): scale by 2^54
    r, kd, chi, clo = _log_reduce(x * (_TWO54 if tiny else 1.0))
    y = _log_sum(r, kd - (54.0 if tiny else 0.0), chi, clo, 0.0)
    y = x if (x == math.inf) | (x != x) else y
    y = -math.inf if x == 0.0 else y
    return math.nan if x < 0.0 else y


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _log_fdlibm(x):
    """Natural logarithm of a float64 scalar, error < 1 ulp (fdlibm e_log.c, branch-free): for the float32
    functions, where its error is below 2^-28 ulp of float32 and it costs two thirds of :func:`log_f64`.

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


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _exp_for_f32(xd):
    """e**xd in float64 for the float32 functions: relative error below 2^-42 for xd in [-104, 89]
    (the clamp; outside it a float32 result is inf or +0 either way).

    k = round(xd / ln2), r = xd - k ln2 (|r| <= ln2/2, absolute error < 2^-46 for |k| <= 150),
    exp(r) by its degree-10 Taylor polynomial (remainder < 2^-42 relative) in Estrin's scheme
    (Muller 2016, 5.1.3), times 2^k; as musl's expf evaluates in double: cheaper than exp_f64 (no
    division, one scaling).  NaN -> NaN.
    """
    xd = 89.0 if xd > 89.0 else xd          # exp(89) > FLT_MAX: inf after rounding
    xd = -104.0 if xd < -104.0 else xd      # exp(-104) < FLT_TRUE_MIN / 2: +0
    t = xd * _INVLN2 + _SHIFT
    kf = t - _SHIFT
    k = _f64_bits(t) - _SHIFT_BITS
    r = xd - kf * _LN2
    r2 = r * r
    r4 = r2 * r2
    p = (((1.0 + r) + r2 * (0.5 + r * (1.0 / 6)))
         + r4 * ((1.0 / 24 + r * (1.0 / 120)) + r2 * (1.0 / 720 + r * (1.0 / 5040)))
         + (r4 * r4) * ((1.0 / 40320 + r * (1.0 / 362880)) + r2 * (1.0 / 3628800)))
    return p * _f64_from_bits((k + 1023) << 52)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def exp_f32(x):
    """e**x for a float32 scalar, error < 1 ulp of float32 (0.5 + 2^-18 ulp): ``_exp_for_f32`` rounded
    once to float32 (which also makes overflow inf and subnormal results).  Checked exhaustively
    on all float32 in [-104, 89] (tests/test_vecmath.py, slow).  NaN -> NaN.
    """
    return np.float32(_exp_for_f32(np.float64(x)))


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def log_f32(x):
    """log(x) for a float32 scalar: the float64 result rounded once, error < 1 ulp of float32."""
    return np.float32(_log_fdlibm(np.float64(x)))


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _one_plus(x):
    """``(u, c/u)``: u = 1 + x rounded and c its rounding error, exact (fdlibm s_log1p.c's formula);
    log1p(x) = log(u) + c/u to first order."""
    u = 1.0 + x
    return u, (1.0 - (u - x) if u >= 2.0 else x - (u - 1.0)) / u


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _log1p_specials(x, y):
    """``y`` (log1p(x) as computed for finite x > -1) with IEEE's special values: +inf -> inf,
    +-0 -> +-0, -1 -> -inf, x < -1 and NaN -> NaN."""
    y = x if x == math.inf else y
    y = x if x == 0.0 else y                # keeps the sign of zero
    y = -math.inf if x == -1.0 else y
    y = math.nan if x < -1.0 else y
    return x if x != x else y


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def log1p_f64(x):
    """log(1 + x) for a float64 scalar, within 0.5 ulp + 2^-14 ulp, branch-free.

    For -2^-8 <= x < 2^-7, ``log1p(x)`` by :func:`_log_sum` with r = x (no table, no rounding of
    1 + x).  Elsewhere u = 1 + x is rounded and its rounding error c (exact: fdlibm s_log1p.c's
    formula) enters as c/u: log1p(x) = log(u) + c/u to first order (the next term is below 2^-105),
    log(u) as in :func:`log_f64`.  Args: x: float64 scalar.  Returns: float64.  Raises nothing:
    x < -1 and NaN -> NaN, -1 -> -inf, +inf -> inf, +-0 -> +-0.
    """
    near = (x >= -0.00390625) & (x < 0.0078125)
    u, c = _one_plus(x)
    r, kd, chi, clo = _log_reduce(1.0 if near else u)  # near: u = 1, so r = k = logc = 0
    y = _log_sum(x if near else r, kd, chi, clo, 0.0 if near else c)
    return _log1p_specials(x, y)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _log1p_fdlibm(x):
    """log(1 + x) for a float64 scalar, error < 1 ulp (fdlibm s_log1p.c, branch-free): for the float32
    functions, as :func:`_log_fdlibm`.

    u = 1 + x is rounded; its rounding error c (exact by Fast2Sum) enters the
    polynomial as c/u, so log1p(x) = k ln2 + log(1 + f) + c/u with one final rounding.
    For -0.2929 < x < 0.4142 (1 + x within [sqrt(2)/2, sqrt(2))) f = x and k = c = 0.
    Args: x: float64 scalar.  Returns: float64.  Raises nothing: x < -1 and NaN -> NaN,
    -1 -> -inf, +inf -> inf, +-0 -> +-0.
    """
    u, c = _one_plus(x)
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
    w = z * z                               # R(z) split in odd and even parts as e_log.c does
    rr = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    y = dk * _LN2HI - ((hfsq - (s * (hfsq + rr) + (dk * _LN2LO + c))) - f)
    return _log1p_specials(x, y)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def log1p_f32(x):
    """log(1 + x) for a float32 scalar: the float64 result rounded once, error < 1 ulp of float32."""
    return np.float32(_log1p_fdlibm(np.float64(x)))


_Q1 = -3.33333333333331316428e-02          # fdlibm s_expm1.c
_Q2 = 1.58730158725481460165e-03
_Q3 = -7.93650757867487942473e-05
_Q4 = 4.00821782732936239552e-06
_Q5 = -2.01099218183624371326e-07


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _div(a, b):
    """a / b as IEEE division: a small function LLVM inlines, keeping NumPy's error model
    inside callers that are inlined in Numba IR (whose own ``/`` would follow the caller's)."""
    return a / b


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def expm1_f64(x):  # too big for LLVM's inliner: inlined in Numba IR, its one division through _div
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


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def expm1_f32(x):
    """e**x - 1 for a float32 scalar: the float64 result rounded once, error < 1 ulp of float32."""
    return np.float32(expm1_f64(np.float64(x)))


@numba.extending.intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (LLVM ``llvm.fma.f64``: one instruction on x86-64 with FMA3,
    vectorisable; a correctly rounded libm call elsewhere).  Used for exact products in the
    double-double routines below (Dekker's TwoProduct as fma(a, b, -a*b))."""
    if not (a == numba.types.float64 and b == numba.types.float64 and c == numba.types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return numba.types.float64(numba.types.float64, numba.types.float64, numba.types.float64), codegen


_LN2LO2 = 1.1612227229362532e-26           # ln 2 - _LN2HI - _LN2LO (third Cody-Waite part)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _exp_dd(a):
    """exp(a) = 2^k (s_hi + s_lo) and expm1(r) = m_hi + m_lo for a float64 ``a`` (clamped to [-746, 710]).

    Returns (k, s_hi, s_lo, m_hi, m_lo): s = e^r in [0.70, 1.42] and m = e^r - 1 (|m| <= 0.42) as
    double-doubles with relative errors below 2^-62 resp. 2^-61 (m also for tiny r), where
    a = k ln 2 + r.  NaN gives NaN parts (k is then meaningless).

    Reduction (Cody-Waite with a three-part ln 2, Tang 1989 without the table): k = round(a / ln 2),
    r = a - k ln 2 as r_hi + r_lo exactly up to 2^-100 |a|; |r| <= 0.3466.  Then
    expm1(r) = r + r^2/2 + r^3 P(r), r^2/2 in double-double (TwoProduct by FMA), P the Taylor
    polynomial of (e^r - 1 - r - r^2/2)/r^3 to degree 11 (truncation < 2^-63 relative),
    and the sums by Fast2Sum (Dekker 1971; Muller et al., Handbook of Floating-Point
    Arithmetic, 2nd ed. 2018, ch. 4).
    """
    xc = _EXP_HI if a > _EXP_HI else a
    xc = _EXP_LO if xc < _EXP_LO else xc
    t = xc * _INVLN2 + _SHIFT
    kf = t - _SHIFT
    k = _f64_bits(t) - _SHIFT_BITS
    hi = xc - kf * _LN2HI                   # exact
    lo = kf * _LN2LO
    lo_err = _fma(kf, _LN2LO, -lo) + kf * _LN2LO2   # kf ln2_lo - lo, plus the third part
    rh = hi - lo
    rl = ((hi - rh) - lo) - lo_err          # Fast2Sum: |hi| >= |lo|
    p2h = 0.5 * (rh * rh)
    p2l = 0.5 * _fma(rh, rh, -(rh * rh)) + rh * rl
    # Estrin's scheme (Muller 2016, 5.1.3): the same polynomial as Horner's rule with a critical
    # path of 5 multiply-adds instead of 11, so that loops overlap more of their iterations
    r2 = rh * rh
    r4 = r2 * r2
    p = (((1.0 / 6 + rh * (1.0 / 24)) + r2 * (1.0 / 120 + rh * (1.0 / 720)))
         + r4 * ((1.0 / 5040 + rh * (1.0 / 40320)) + r2 * (1.0 / 362880 + rh * (1.0 / 3628800)))
         + (r4 * r4) * ((1.0 / 39916800 + rh * (1.0 / 479001600))
                        + r2 * (1.0 / 6227020800 + rh * (1.0 / 87178291200))))
    c3 = (rh * p2h) * (2.0 * p)             # r^3 P(r)
    mh = rh + p2h                           # Fast2Sum (|p2h| <= 0.18 |rh|)
    ml = ((rh - mh) + p2h) + (rl + p2l + c3)
    m_hi = mh + ml
    m_lo = (mh - m_hi) + ml
    s1 = 1.0 + m_hi                         # Fast2Sum (|m_hi| < 1)
    s_lo = ((1.0 - s1) + m_hi) + m_lo
    s_hi = s1 + s_lo
    s_lo = (s1 - s_hi) + s_lo
    return k, s_hi, s_lo, m_hi, m_lo


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _pow2(k):
    """2.0 ** k for an int64 -1022 <= k <= 1023 (exponent bits)."""
    return _f64_from_bits((k + 1023) << 52)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def exp_f64(x):
    """e**x for a float64 scalar, error <= 0.5 ulp + 2^-9 ulp for normal results (max 0.524 ulp
    measured on 10^6 points), <= 1 ulp for subnormal ones.

    exp(x) = 2^k (s_hi + s_lo) from ``_exp_dd`` (relative error below 2^-62), the sum rounded once,
    then scaled by 2^k in two exact halves (a subnormal result rounds a second time).  Twice the
    cost of fdlibm's e_exp.c formula (max 0.89 ulp measured), and within 2^-9 ulp of a correctly
    rounded exp, so the forms the stabiliser chose by evaluating NumPy's exp (max 0.67 ulp) keep
    their accuracy in kernels.  NaN -> NaN, +inf -> inf, -inf -> +0, x > 709.78 -> inf, x < -745.13 -> +0.
    """
    k, sh, sl, mh, ml = _exp_dd(x)
    k1 = k >> 1                             # 2^k = 2^k1 * 2^(k - k1) with both halves normal
    return ((sh + sl) * _pow2(k1)) * _pow2(k - k1)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _div_dd(nh, nl, dh, dl):
    """(nh + nl) / (dh + dl) rounded once more: q = nh/dh corrected by the exact residual
    nh - q dh (FMA) and the tails (Dekker 1971; Muller et al. 2018, section 14.5).  Relative error
    below 2^-53 * 0.5 + 2^-100 for |nl| <= 2^-50 |nh|, |dl| <= 2^-50 |dh|; used only with dh in [1, 3]."""
    q = _div(nh, dh)
    r = _fma(-q, dh, nh) + (nl - q * dl)
    return q + _div(r, dh)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def tanh_f64(x):  # inlined in Numba IR, divisions through _div
    """tanh for a float64 scalar, error < 1 ulp (measured max in tests/test_vecmath.py).

    tanh|x| = -t/(2 + t) with t = expm1(-2|x|) (fdlibm s_tanh.c's small-|x| formula, used for all
    |x| <= 22; tanh rounds to 1 beyond).  t is computed in double-double (``_exp_dd``:
    t = 2^k s - 1 for k < 0, t = m for k = 0), 2 + t is exact in double-double, and the quotient
    is one corrected division, so the only error above 2^-60 relative is the final rounding.
    NaN -> NaN, +-inf -> +-1, +-0 -> +-0, subnormal x -> x.
    """
    ax = abs(x)
    ax = 22.0 if ax > 22.0 else ax          # NaN stays NaN
    k, sh, sl, mh, ml = _exp_dd(-2.0 * ax)
    kk = -64 if k < -64 else k              # k in [-64, 0] except for NaN
    sc = _pow2(kk)
    a = sc * sh                             # 2^k s - 1 in double-double (a <= 0.71 for k < 0)
    th = a - 1.0
    tl = (a - (th + 1.0)) + sc * sl         # Fast2Sum(-1, a): the exact error of a - 1, plus the tail
    th = mh if k == 0 else th
    tl = ml if k == 0 else tl
    dh = 2.0 + th                           # Fast2Sum (|th| <= 1)
    dl = ((2.0 - dh) + th) + tl
    z = _div_dd(-th, -tl, dh, dl)
    y = math.copysign(z, x)
    return x if x != x else y


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _tanh_f64_fast(x):
    """fdlibm's tanh from one expm1 (bound 4.2 ulp of float64): rounded to float32 it is < 1 ulp."""
    ax = abs(x)
    ax = 22.0 if ax > 22.0 else ax
    big = ax >= 1.0
    t = expm1_f64(2.0 * ax if big else -2.0 * ax)
    z = 1.0 - _div(2.0, t + 2.0) if big else _div(-t, t + 2.0)
    return math.copysign(z, x)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def tanh_f32(x):
    """tanh for a float32 scalar: fdlibm's formula in float64 (error < 4.2 ulp of float64 =
    2^-26.9 ulp of float32) rounded once, error < 1 ulp of float32."""
    return np.float32(_tanh_f64_fast(np.float64(x)))


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def sigmoid_f64(x):
    """1/(1 + e**-x) for a float64 scalar, error < 1 ulp, no overflow.

    e = exp(-|x|) = 2^k s in double-double (``_exp_dd``), then 1/(1 + e) for x >= 0 and
    s/(1 + e) * 2^k for x < 0 (the stable forms of emit/prelude.py's ``_sigmoid``), each by one
    corrected double-double division; the 2^k scaling of a subnormal result rounds once
    (two exact half steps).  NaN -> NaN, +inf -> 1, -inf -> +0, +-0 -> 0.5.
    """
    k, sh, sl, mh, ml = _exp_dd(-abs(x))
    kc = -1000 if k < -1000 else k          # e < 2^-999: 1 + e is 1 either way
    sc = _pow2(kc)
    eh = sc * sh
    el = sc * sl
    dh = 1.0 + eh                           # Fast2Sum (e <= 1)
    dl = ((1.0 - dh) + eh) + el
    neg = x < 0.0
    q = _div_dd(1.0 if not neg else sh, 0.0 if not neg else sl, dh, dl)
    k1 = k >> 1
    qs = (q * _pow2(k1)) * _pow2(k - k1)    # x < 0: times 2^k, rounding once into the subnormals
    y = qs if neg else q
    return x if x != x else y


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def softplus_f64(x):
    """log(1 + e**x) for a float64 scalar, error < 1 ulp: max(x, 0) + log1p(exp(-|x|)) (Maechler 2012)
    with every step in double-double.

    e = exp(-|x|) = 2^k s (``_exp_dd``); u = 1 + e exactly (Fast2Sum); u = 2^j (1 + f) with
    sqrt(2)/2 <= 1 + f < sqrt(2) and f a double-double; log(1 + f) = 2s + s R(s^2) with
    s = f/(2 + f) by a corrected division and R fdlibm e_log.c's Remez polynomial (error
    < 2^-58.45, entering the result scaled by s^2/3 < 0.01); then max(x, 0) + j ln 2 + 2s + ... summed
    exactly and rounded once.  For x < 0 with e < 2^-1000 (x < -693), 2^k s rounded once
    (the e^2/2 term is below the subnormal spacing).  NaN -> NaN, +inf -> inf, -inf -> +0.
    """
    k, sh, sl, mh, ml = _exp_dd(-abs(x))
    kc = -1000 if k < -1000 else k
    sc = _pow2(kc)
    eh = sc * sh
    el = sc * sl
    uh = 1.0 + eh                           # Fast2Sum (e <= 1)
    ul = (1.0 - uh) + eh
    big = uh > 1.4142135623730951           # u/2 in [sqrt(2)/2, 1]
    half = 0.5 if big else 1.0
    j = 1.0 if big else 0.0
    f0 = uh * half - 1.0                    # exact (Sterbenz)
    g = ul * half
    fh = f0 + g                             # TwoSum(f0, g)
    bv = fh - f0
    fl = ((f0 - (fh - bv)) + (g - bv)) + el * half
    dh = 2.0 + fh                           # Fast2Sum (|fh| < 0.42)
    dl = ((2.0 - dh) + fh) + fl
    qh = _div(fh, dh)
    ql = _div(_fma(-qh, dh, fh) + (fl - qh * dl), dh)
    z = qh * qh
    w = z * z                               # R(z) split in odd and even parts as e_log.c does
    rr = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    m = x if x > 0.0 else 0.0
    a1 = m + j * _LN2HI                     # TwoSum (j ln2_hi is exact)
    bv = a1 - m
    b1 = (m - (a1 - bv)) + (j * _LN2HI - bv)
    q2 = 2.0 * qh
    a2 = a1 + q2                            # TwoSum
    bv = a2 - a1
    b2 = (a1 - (a2 - bv)) + (q2 - bv)
    y = a2 + (b1 + b2 + (j * _LN2LO + (2.0 * ql + qh * rr)))
    k1 = k >> 1
    tiny = ((sh + sl) * _pow2(k1)) * _pow2(k - k1)
    y = tiny if (x < 0.0) & (k < -1000) else y
    return x if (x != x) | (x == math.inf) else y


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def sigmoid_f32(x):
    """Logistic function for a float32 scalar: the prelude's stable form in float64 with
    ``_exp_for_f32`` (relative error < 2^-41) rounded once, error < 1 ulp of float32."""
    xd = np.float64(x)
    e = _exp_for_f32(-abs(xd))
    return np.float32((1.0 if xd >= 0.0 else e) / (1.0 + e))


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def softplus_f32(x):
    """log(1 + e**x) for a float32 scalar: max(x, 0) + log1p(exp(-|x|)) in float64 with
    ``_exp_for_f32`` and ``_log1p_fdlibm`` (relative error < 2^-41) rounded once, error < 1 ulp of float32."""
    xd = np.float64(x)
    return np.float32((xd if xd > 0.0 else 0.0) + _log1p_fdlibm(_exp_for_f32(-abs(xd))))


# ---- sin and cos ----
# pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_3 + O(2^-163): each part the double nearest to what the
# previous parts leave (three-part Cody-Waite constant, used with FMA below).
_PIO2_1 = 1.5707963267948966
_PIO2_2 = 6.123233995736766e-17
_PIO2_3 = -1.4973849048591698e-33
_TWO_OVER_PI = 0.6366197723675814
_CW_MAX = 268435456.0                      # 2^28: Cody-Waite below, Payne-Hanek from here on
# fdlibm k_sin.c / k_cos.c (Sun Microsystems 1993; k_cos.c as revised by Bruce D. Evans for
# FreeBSD msun): Remez polynomials for sin(r) - r and cos(r) - 1 + r^2/2 on |r| <= pi/4,
# errors below 2^-58 and 2^-58 relative.
_S1 = -1.66666666666666324348e-01
_S2 = 8.33333333332248946124e-03
_S3 = -1.98412698298579493134e-04
_S4 = 2.75573137070700676789e-06
_S5 = -2.50507602534068634195e-08
_S6 = 1.58969099521155010221e-10
_C1 = 4.16666666666666019037e-02
_C2 = -1.38888888888741095749e-03
_C3 = 2.48015872894767294178e-05
_C4 = -2.75573143513906633035e-07
_C5 = 2.08757232129817482790e-09
_C6 = -1.13596475577881948265e-11
# floor(2/pi * 2^1200) in hexadecimal (checked against mpmath in tests/test_vecmath.py).
_TWO_OVER_PI_HEX = (
    "a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561b7246e3a424dd2e006492eea09d1921cf"
    "e1deb1cb129a73ee88235f52ebb4484e99c7026b45f7e413991d639835339f49c845f8bbdf9283b1ff897ffde05980fef2"
    "f118b5a0a6d1f6d367ecf27cb09b74f463f669e5fea2d7527bac7ebe5f17b3d0739f78a5292ea6bfb5fb11f8d5d0856033046fc7b")


def _payne_hanek_table():
    """For each E = -24 ... 971 (|x| = M 2^E with M a 53-bit integer, 2^28 <= |x| < 2^1024):
    2^E * (2/pi) modulo 4, its bits from 2^1 down to 2^-210, as four doubles of 53 bits each
    (weights 2^1..2^-51, 2^-52..2^-104, 2^-105..2^-157, 2^-158..2^-210); a flat float64 array."""
    bits = int(_TWO_OVER_PI_HEX, 16)
    mask = (1 << 53) - 1
    out = []
    for e in range(-24, 972):
        n = (bits >> (1200 - 210 - e)) & ((1 << 212) - 1)
        for shift, scale in ((159, -51), (106, -104), (53, -157), (0, -210)):
            out.append(math.ldexp(float((n >> shift) & mask), scale))
    return np.array(out)


_PH_TABLE = _payne_hanek_table()


@numba.extending.intrinsic
def _rint(typingctx, x):
    """x rounded to an integer, ties to even (LLVM ``llvm.rint.f64``: one vectorisable instruction)."""
    if x != numba.types.float64:
        return None

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.rint", [args[0].type])
        return builder.call(fn, args)
    return numba.types.float64(numba.types.float64), codegen


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _two_sum(a, b):
    """(s, e) with s = RN(a + b) and a + b = s + e exactly (Knuth's TwoSum, 6 operations)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _rem_pio2(a):  # too big for LLVM's inliner
    """a = (4j + q) pi/2 + r for a float64 a >= 0 (finite): (q, r_hi, r_lo), q in 0..3 (int64),
    r = r_hi + r_lo with |r| <= pi/4 (+ 2^-48), relative error below 2^-70.

    Both reductions are computed and one is selected (no branch, so loops vectorise):

    * a < 2^28, Cody-Waite (Cody & Waite 1980; Muller, Elementary Functions, 3rd ed., 11.2) with
      FMA: k = round(a 2/pi); a - k P1 is exact (a and k P1 are multiples of 2^-53, the
      difference is below 1); k P2 is split exactly (TwoProduct by FMA) and TwoSum-ed in; k P3
      and the rounding of the small tail cost below k 2^-159 <= 2^-131 absolute, against
      |r| >= 2^-61 for every double (the closest double to a multiple of pi/2 is
      6381956970095103 2^797 at 2^-60.9; Muller, ch. 11, table 11.1).
    * a >= 2^28, Payne-Hanek (Payne & Hanek 1983; Muller, 11.4): a = M 2^E with M an integer;
      a 2/pi mod 4 = M G(E) mod 4 with G(E) = 2^E 2/pi mod 4 from ``_PH_TABLE`` (a gather: the
      row is chosen by E) in four 53-bit parts g0..g3.  M g0 and M g1 are exact double-doubles
      (FMA); their multiples of 4 and the integer q are removed exactly (these terms are
      multiples of 2^-104, so TwoSums keep them exact), M g2 (exact double-double) and M g3 are
      added last, so the only roundings are of terms below 2^-53 |f| + 2^-100 and the fraction
      f = a 2/pi - 4j - q has a relative error below 2^-90 (|f| >= 2^-62); then r = f pi/2 in
      double-double.
    """
    # Cody-Waite
    t = a * _TWO_OVER_PI + _SHIFT
    kf = t - _SHIFT
    kq = _f64_bits(t) - _SHIFT_BITS
    r1 = _fma(-kf, _PIO2_1, a)              # exact
    ph = kf * _PIO2_2
    pl = _fma(kf, _PIO2_2, -ph)
    s, se = _two_sum(r1, -ph)
    tail = (se - pl) - kf * _PIO2_3
    cw_h, cw_l = _two_sum(s, tail)
    # Payne-Hanek
    bits = _f64_bits(a)
    i = (bits >> 52) - 1075 + 24            # row of E = exponent - 52
    i = 0 if i < 0 else i
    i = 995 if i > 995 else i
    m = float((bits & 0xfffffffffffff) | 0x10000000000000)
    g0 = _PH_TABLE[4 * i]
    g1 = _PH_TABLE[4 * i + 1]
    g2 = _PH_TABLE[4 * i + 2]
    g3 = _PH_TABLE[4 * i + 3]
    h = m * g0
    lo = _fma(m, g0, -h)
    h = h - 4.0 * _rint(0.25 * h)           # exact: multiples of 4 removed
    lo = lo - 4.0 * _rint(0.25 * lo)
    s0 = h + lo                             # exact: multiples of 2^-51 below 4
    u = m * g1
    v = _fma(m, g1, -u)
    s1, e1 = _two_sum(s0, u)                # |s1| <= 8
    tq = s1 + _SHIFT
    qf = tq - _SHIFT
    pq = _f64_bits(tq) - _SHIFT_BITS
    fh = s1 - qf                            # exact, |fh| <= 1/2
    a1, b1 = _two_sum(fh, e1)
    a2, b2 = _two_sum(a1, v)
    ah, al = _two_sum(a2, b1 + b2)          # b1 + b2 exact: multiples of 2^-104 below 2^-51
    w = m * g2
    wl = _fma(m, g2, -w)
    sh, sl = _two_sum(ah, w)
    fh, fl = _two_sum(sh, ((al + sl) + wl) + m * g3)
    ph_h = fh * _PIO2_1
    ph_l = _fma(fh, _PIO2_1, -ph_h) + (fh * _PIO2_2 + fl * _PIO2_1)
    big = a >= _CW_MAX
    rh = ph_h if big else cw_h
    rl = ph_l if big else cw_l
    q = pq if big else kq
    return q & 3, rh, rl


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _ksin(x, y):
    """sin(x + y) for |x + y| <= pi/4 + 2^-48, |y| <= 2^-52 |x| (fdlibm k_sin.c with its tail y)."""
    z = x * x
    v = z * x
    r = _S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))
    return x - ((z * (0.5 * y - v * r) - y) - v * _S1)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _kcos(x, y):
    """cos(x + y) for |x + y| <= pi/4 + 2^-48 (FreeBSD msun k_cos.c: 1 - x^2/2 split exactly)."""
    z = x * x
    w = z * z
    r = z * (_C1 + z * (_C2 + z * _C3)) + w * w * (_C4 + z * (_C5 + z * _C6))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - x * y))


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def sin_f64(x):  # inlined in Numba IR (too big for LLVM's inliner)
    """sin(x) for a float64 scalar, error < 1 ulp (measured max in tests/test_vecmath.py).

    |x| = (4j + q) pi/2 + r (``_rem_pio2``: Cody-Waite below 2^28, Payne-Hanek above, both
    branch-free), then sin|x| = +-sin r or +-cos r by q (fdlibm's kernels), sign of x restored.
    Args: x: float64 scalar.  Returns: float64.  Raises nothing: NaN, +-inf -> NaN; +-0 -> +-0;
    subnormal x -> x.
    """
    a = abs(x)
    q, rh, rl = _rem_pio2(a)
    s = _ksin(rh, rl)
    c = _kcos(rh, rl)
    y = c if (q & 1) != 0 else s
    y = -y if ((q & 2) != 0) != (_f64_bits(x) < 0) else y
    return y if a < math.inf else x - x


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def cos_f64(x):  # inlined in Numba IR (too big for LLVM's inliner)
    """cos(x) for a float64 scalar, error < 1 ulp: as ``sin_f64``, cos|x| = +-cos r or -+sin r by q.

    Args: x: float64 scalar.  Returns: float64.  Raises nothing: NaN, +-inf -> NaN; +-0 -> 1.
    """
    a = abs(x)
    q, rh, rl = _rem_pio2(a)
    s = _ksin(rh, rl)
    c = _kcos(rh, rl)
    y = s if (q & 1) != 0 else c
    y = -y if ((q + 1) & 2) != 0 else y
    return y if a < math.inf else x - x


# FreeBSD msun k_sinf.c / k_cosf.c (Bruce D. Evans, 1994; float kernels evaluated in double):
# |sin(r)/r - s(r)| < 2^-37.5 and |cos(r) - c(r)| < 2^-34.1 on |r| <= pi/4.
_SF1 = -0.16666666641626524
_SF2 = 0.008333329385889463
_SF3 = -0.00019839334836096632
_SF4 = 2.718311493989822e-06
_CF0 = -0.499999997251031
_CF1 = 0.04166662332373906
_CF2 = -0.001388676377460993
_CF3 = 2.439044879627741e-05


def _payne_hanek_table_f32():
    """For each E = 5 ... 104 (a float32 |x| = M 2^E with M a 24-bit integer, 2^28 <= |x| < 2^128):
    2^E (2/pi) mod 4 from 2^1 down to 2^-133 in three doubles of 29, 53 and 53 bits (weights
    2^1..2^-27, 2^-28..2^-80, 2^-81..2^-133), so that M g0 is exact; a flat float64 array."""
    bits = int(_TWO_OVER_PI_HEX, 16)
    mask = (1 << 53) - 1
    out = []
    for e in range(5, 105):
        n = (bits >> (1200 - 133 - e)) & ((1 << 135) - 1)
        out += [math.ldexp(float(n >> 106), -27), math.ldexp(float((n >> 53) & mask), -80),
                math.ldexp(float(n & mask), -133)]
    return np.array(out)


_PH_TABLE_F32 = _payne_hanek_table_f32()


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _rem_pio2_f32(a):
    """a = (4j + q) pi/2 + r for a float32 value a >= 0 held in a float64 (finite): (q, r), q in 0..3,
    |r| <= pi/4 (+ 2^-50), r with relative error below 2^-50 (float32 results need about 2^-30).

    Below 2^28, ``_rem_pio2``'s Cody-Waite steps with a single-double result; above, Payne-Hanek
    as there with a 24-bit M and a three-part table row: M g0 is exact and its multiples of 4 are
    removed exactly, M g1 is an exact double-double, M g2 is rounded (absolute error < 2^-104).
    """
    t = a * _TWO_OVER_PI + _SHIFT
    kf = t - _SHIFT
    kq = _f64_bits(t) - _SHIFT_BITS
    r1 = _fma(-kf, _PIO2_1, a)              # exact
    ph = kf * _PIO2_2
    pl = _fma(kf, _PIO2_2, -ph)
    cw = (r1 - ph) - (pl + kf * _PIO2_3)
    bits = _f64_bits(a)
    i = (bits >> 52) - 1023 - 23 - 5        # row of E = exponent - 23
    i = 0 if i < 0 else i
    i = 99 if i > 99 else i
    m = float(((bits >> 29) & 0x7fffff) | 0x800000)
    g0 = _PH_TABLE_F32[3 * i]
    g1 = _PH_TABLE_F32[3 * i + 1]
    g2 = _PH_TABLE_F32[3 * i + 2]
    h = m * g0                              # exact: 24 + 29 bits
    s0 = h - 4.0 * _rint(0.25 * h)          # exact, |s0| <= 2
    u = m * g1
    v = _fma(m, g1, -u)
    s1, e1 = _two_sum(s0, u)
    tq = s1 + _SHIFT
    pq = _f64_bits(tq) - _SHIFT_BITS
    f = (s1 - (tq - _SHIFT)) + ((e1 + v) + m * g2)
    big = a >= _CW_MAX
    r = f * _PIO2_1 if big else cw
    q = pq if big else kq
    return q & 3, r


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def _sin_cos_f32(x, want_cos):
    """sin(x) or cos(x) of a float32 x in float64 (k_sinf.c / k_cosf.c kernels), rounded once to
    float32: reduction and kernel errors stay below 2^-33 relative, so the result is within
    0.5 + 2^-9 ulp of float32 (every float32 input checked, tests/test_vecmath.py, slow)."""
    xd = np.float64(x)
    a = abs(xd)
    q, r = _rem_pio2_f32(a)
    z = r * r
    w = z * z
    sn = (r + z * r * (_SF1 + z * _SF2)) + z * r * w * (_SF3 + z * _SF4)
    cs = ((1.0 + z * _CF0) + w * _CF1) + (w * z) * (_CF2 + z * _CF3)
    qq = q + 1 if want_cos else q
    y = cs if (qq & 1) != 0 else sn
    neg = ((qq & 2) != 0) != ((_f64_bits(xd) < 0) & (not want_cos))
    y = -y if neg else y
    return np.float32(y if a < math.inf else xd - xd)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def sin_f32(x):
    """sin(x) for a float32 scalar, error < 1 ulp of float32 (``_sin_cos_f32``).  NaN, +-inf -> NaN; +-0 -> +-0."""
    return _sin_cos_f32(x, False)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, forceinline=True)
def cos_f32(x):
    """cos(x) for a float32 scalar, error < 1 ulp of float32 (``_sin_cos_f32``).  NaN, +-inf -> NaN; +-0 -> 1."""
    return _sin_cos_f32(x, True)

# ---- end of the text generated modules copy ----


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
sin = _dispatcher("sin", sin_f64, sin_f32, np.sin, "sine")
cos = _dispatcher("cos", cos_f64, cos_f32, np.cos, "cosine")
