"""symgrad.emit.vecmath: exp, expm1, log, log1p, tanh, sigmoid, softplus, sin, cos within 1 ulp, exact specials, loops that vectorise.

Reference: the x87 80-bit long double (64-bit significand; NumPy's ``longdouble`` on
x86-64 Linux) evaluates exp/log of each float64/float32 input with a relative error
near 2^-63, i.e. about 2^-11 ulp of float64, so it measures ulp errors vectorised over
10^5-10^6 points.  That reference is itself checked against mpmath at 120 bits on a
subset (``test_reference_agrees_with_mpmath``), and the module skips where long double
is not the 80-bit format.  The ulp of a reference value r is 2^(e - p + 1) where 2^e <=
|r| < 2^(e+1), e clamped to the normal range (so subnormals count in 2^-1074 steps);
inf results count as 2^1024 (resp. 2^128), so an overflow to inf is within 1 ulp only
when the correctly rounded result is inf or DBL_MAX.
"""
from __future__ import annotations

import re

import mpmath
import numba
import numpy as np
import pytest

from symgrad.emit import vecmath as vm

pytestmark = pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63,
                                reason="reference needs 80-bit long double")

LD = np.longdouble


@numba.njit(error_model="numpy")
def _exp_loop(x, out):
    for i in range(x.size):
        out[i] = vm.exp(x[i])


@numba.njit(error_model="numpy")
def _log_loop(x, out):
    for i in range(x.size):
        out[i] = vm.log(x[i])


@numba.njit(error_model="numpy")
def _log1p_loop(x, out):
    for i in range(x.size):
        out[i] = vm.log1p(x[i])


@numba.njit(error_model="numpy")
def _expm1_loop(x, out):
    for i in range(x.size):
        out[i] = vm.expm1(x[i])


@numba.njit(error_model="numpy")
def _tanh_loop(x, out):
    for i in range(x.size):
        out[i] = vm.tanh(x[i])


@numba.njit(error_model="numpy")
def _sigmoid_loop(x, out):
    for i in range(x.size):
        out[i] = vm.sigmoid(x[i])


@numba.njit(error_model="numpy")
def _softplus_loop(x, out):
    for i in range(x.size):
        out[i] = vm.softplus(x[i])


@numba.njit(error_model="numpy")
def _sin_loop(x, out):
    for i in range(x.size):
        out[i] = vm.sin(x[i])


@numba.njit(error_model="numpy")
def _cos_loop(x, out):
    for i in range(x.size):
        out[i] = vm.cos(x[i])


def _ld_sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


def _ld_softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


FUNCS = {"exp": (_exp_loop, np.exp, mpmath.exp), "log": (_log_loop, np.log, mpmath.log),
         "log1p": (_log1p_loop, np.log1p, mpmath.log1p), "expm1": (_expm1_loop, np.expm1, mpmath.expm1),
         "tanh": (_tanh_loop, np.tanh, mpmath.tanh),
         "sigmoid": (_sigmoid_loop, _ld_sigmoid, lambda v: 1 / (1 + mpmath.exp(-v))),
         "softplus": (_softplus_loop, _ld_softplus, lambda v: mpmath.log1p(mpmath.exp(v))),
         "sin": (_sin_loop, np.sin, mpmath.sin), "cos": (_cos_loop, np.cos, mpmath.cos)}

# Max ulp allowed: 1 for every function and dtype (issue 19).  tanh, sigmoid and softplus in
# float64 evaluate in double-double and round once (bound 0.5 ulp + 2^-8, 0.75 ulp for subnormal
# sigmoid/softplus results); composing the 1-ulp exp/log1p instead would allow 4.2, 3.72, 3.3 ulp.
BOUNDS: dict = {}

# The measured maxima of test_within_one_ulp (seed 19, fixed inputs): the always-on test fails
# when any of them grows, not only when it passes 1 ulp.
MEASURED = {("exp", np.float64): 0.750, ("exp", np.float32): 0.502, ("expm1", np.float64): 0.768,
            ("expm1", np.float32): 0.500, ("log", np.float64): 0.500, ("log", np.float32): 0.500,
            ("log1p", np.float64): 0.500, ("log1p", np.float32): 0.500, ("tanh", np.float64): 0.535,
            ("tanh", np.float32): 0.500, ("sigmoid", np.float64): 0.750, ("sigmoid", np.float32): 0.500,
            ("softplus", np.float64): 0.750, ("softplus", np.float32): 0.500,
            ("sin", np.float64): 0.766, ("sin", np.float32): 0.501, ("cos", np.float64): 0.778,
            ("cos", np.float32): 0.501}


def run(name, x):
    out = np.empty_like(x)
    FUNCS[name][0](x, out)
    return out


def reference(name, x):
    """Extended-precision reference (long double) for each element of x."""
    with np.errstate(all="ignore"):
        return FUNCS[name][1](x.astype(LD))


def ulp_errors(y, ref, dtype):
    """|y - ref| in units of the last place of ref in ``dtype`` (NaN vs NaN: 0; NaN vs number: inf)."""
    fi = np.finfo(dtype)
    big = np.ldexp(LD(1), fi.maxexp)
    with np.errstate(all="ignore"):
        r = np.clip(ref, -big, big)
        yy = y.astype(LD)
        yy = np.where(np.isinf(yy), np.sign(yy) * big, yy)
        _, e = np.frexp(r)
        e = np.clip(e.astype(np.int64) - 1, fi.minexp, fi.maxexp - 1)
        e = np.where(r == 0, fi.minexp, e) - fi.nmant
        err = np.abs(yy - r) / np.ldexp(LD(1), e)
    ny, nr = np.isnan(y), np.isnan(ref)
    return np.where(ny & nr, 0.0, np.where(ny | nr, np.inf, err))


def random_bits(rng, dtype, n):
    """Uniformly random bit patterns: every exponent, both signs, NaN and inf included."""
    return np.frombuffer(rng.bytes(np.dtype(dtype).itemsize * n), dtype=dtype).copy()


def around(t, dtype, k=20):
    """t and its k float neighbours either side."""
    t = dtype(t)
    out = [t]
    up = down = t
    for _ in range(k):
        with np.errstate(over="ignore"):
            up, down = np.nextafter(up, dtype(np.inf)), np.nextafter(down, dtype(-np.inf))
        out += [up, down]
    return np.array(out, dtype=dtype)


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]


def exp_inputs(dtype, n, rng):
    fi = np.finfo(dtype)
    tiny = float(fi.smallest_subnormal)
    over, under, sub = np.log(float(fi.max)), np.log(tiny) - np.log(2.0), np.log(float(fi.smallest_normal))
    parts = [random_bits(rng, dtype, n // 2),
             rng.uniform(under - 2, over + 2, n // 4),
             rng.choice([-1.0, 1.0], n // 4) * 10.0 ** rng.uniform(-40 if dtype == np.float32 else -320, 0.5, n // 4),
             rng.normal(0.0, 30.0, n // 8)]
    for t in (over, under, sub, np.log(tiny), 0.0):
        parts += [around(t, dtype), t + rng.uniform(-1e-3, 1e-3, n // 80)]
    parts.append(np.array(SPECIALS + [float(fi.max), -float(fi.max), tiny, -tiny]))
    return np.concatenate([np.asarray(p).astype(dtype) for p in parts])


def log_inputs(dtype, n, rng):
    fi = np.finfo(dtype)
    parts = [np.abs(random_bits(rng, dtype, n // 2)),
             random_bits(rng, dtype, n // 20),                      # negatives included
             rng.uniform(0.5, 2.0, n // 4),
             1.0 + rng.choice([-1.0, 1.0], n // 5) * 10.0 ** rng.uniform(-17, -1, n // 5),
             float(fi.smallest_normal) * rng.uniform(0.0, 1.0, n // 20),   # subnormals
             around(1.0, dtype), around(float(fi.smallest_normal), dtype),
             around(float(fi.max), dtype), around(float(fi.smallest_subnormal), dtype),
             np.array(SPECIALS + [float(fi.max), float(fi.smallest_subnormal)])]
    return np.concatenate([np.asarray(p).astype(dtype) for p in parts])


def log1p_inputs(dtype, n, rng):
    fi = np.finfo(dtype)
    tiny = -40 if dtype == np.float32 else -320
    parts = [np.abs(random_bits(rng, dtype, n // 4)), random_bits(rng, dtype, n // 8),
             rng.uniform(-1.0, 2.0, n // 4), rng.uniform(-0.35, 0.45, n // 8),
             rng.choice([-1.0, 1.0], n // 4) * 10.0 ** rng.uniform(tiny, 0, n // 4),
             -1.0 + 10.0 ** rng.uniform(-16 if dtype == np.float64 else -7, -1, n // 20),
             around(-1.0, dtype), around(-0.2928932188134524, dtype), around(0.41421356237309503, dtype),
             around(1.0, dtype), around(2.0 ** (fi.nmant + 1), dtype), around(float(fi.max), dtype),
             np.array(SPECIALS + [-2.0, float(fi.max), float(fi.smallest_subnormal)])]
    return np.concatenate([np.asarray(p).astype(dtype) for p in parts])


def expm1_inputs(dtype, n, rng):
    ln2 = np.log(2.0)
    edges = [around(k * ln2 + d, dtype, 5) for k in (-2, -1, 1, 2, 19, 20, 56, 57) for d in (-0.5 * ln2, 0.5 * ln2)]
    return np.concatenate([exp_inputs(dtype, n // 2, rng), rng.uniform(-40.0 * ln2, 60.0 * ln2, n // 4).astype(dtype),
                           rng.uniform(-1.5, 1.5, n // 4).astype(dtype), around(-0.25, dtype)] + edges)


def logistic_inputs(dtype, n, rng):
    return np.concatenate([exp_inputs(dtype, n // 2, rng), -exp_inputs(dtype, n // 4, rng),
                           rng.uniform(-40.0, 40.0, n // 4).astype(dtype), rng.uniform(-2.0, 2.0, n // 8).astype(dtype),
                           around(1.0, dtype), around(-1.0, dtype), around(22.0, dtype)])


# Doubles close to multiples of pi/2 (tiny sin or cos: the hard cases of argument reduction).
# 6381956970095103 * 2^797 is the closest of all doubles, |x - k pi/2| = 2^-60.9 (Muller,
# Elementary Functions, 3rd ed., table 11.1); the others are pi/2 multiples rounded to doubles.
HARD_TRIG = [6381956970095103 * 2.0 ** 797, 1.5707963267948966, 3.141592653589793, 4.71238898038469,
             6.283185307179586, 7.0 * np.pi / 2, 1e22, 2.0 ** 28, 2.0 ** 28 * np.pi / 2]


def trig_inputs(dtype, n, rng):
    """Random bit patterns (huge arguments, NaN, inf), |x| <= 10, |x| <= 10^6, log-uniform magnitudes
    over the whole range, points within a few ulps of k pi/2 (k up to 2^20, and 2^j pi/2 up to the
    top of the range), the Cody-Waite/Payne-Hanek switch at 2^28, subnormals and specials."""
    fi = np.finfo(dtype)
    lo, hi = (-45, 38.5) if dtype == np.float32 else (-320, 308.2)
    k = rng.integers(1, 2 ** 20, n // 8).astype(np.float64)
    near = (k * (np.pi / 2)).astype(dtype)
    steps = rng.integers(-3, 4, near.size)
    near = np.where(steps > 0, np.nextafter(near, dtype(np.inf)), np.where(steps < 0, np.nextafter(near, dtype(-np.inf)), near))
    with np.errstate(over="ignore"):
        powers = (np.pi / 2 * 2.0 ** np.arange(0, fi.maxexp - 1)).astype(dtype)
    parts = [random_bits(rng, dtype, n // 4), rng.uniform(-10.0, 10.0, n // 4), rng.uniform(-1e6, 1e6, n // 8),
             rng.choice([-1.0, 1.0], n // 4) * 10.0 ** rng.uniform(lo, hi, n // 4), near, -near[: n // 32], powers,
             float(fi.smallest_normal) * rng.uniform(-1.0, 1.0, n // 100), around(2.0 ** 28, dtype),
             around(float(fi.max), dtype), around(float(fi.smallest_subnormal), dtype)]
    parts += [around(t, dtype, 5) for t in HARD_TRIG if t < float(fi.max)]
    parts.append(np.array(SPECIALS + [float(fi.max), -float(fi.max), float(fi.smallest_subnormal)]))
    with np.errstate(over="ignore"):
        return np.concatenate([np.asarray(p).astype(dtype) for p in parts])


INPUTS = {"exp": exp_inputs, "log": log_inputs, "log1p": log1p_inputs, "expm1": expm1_inputs,
          "sigmoid": logistic_inputs, "softplus": logistic_inputs, "tanh": logistic_inputs,
          "sin": trig_inputs, "cos": trig_inputs}


def max_ulp_error(name, dtype, n, seed):
    x = INPUTS[name](dtype, n, np.random.default_rng(seed))
    y = run(name, x)
    assert y.dtype == dtype
    err = ulp_errors(y, reference(name, x), dtype)
    worst = int(np.argmax(err))
    return float(err[worst]), x[worst], y[worst], x.size


ALL = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus", "sin", "cos"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ALL)
def test_within_one_ulp(name, dtype):
    err, x, y, n = max_ulp_error(name, dtype, 200_000, seed=19)
    assert n >= 200_000
    assert err <= BOUNDS.get((name, dtype), 1.0), f"vecmath.{name}({x!r}) = {y!r}: {err:.3f} ulp"
    assert err <= MEASURED[name, dtype] + 5e-4, \
        f"vecmath.{name} {np.dtype(dtype).name}: max error grew from {MEASURED[name, dtype]} to {err:.4f} ulp at {x!r}"
    print(f"vecmath.{name} {np.dtype(dtype).name}: max {err:.3f} ulp over {n} points")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ALL)
def test_within_one_ulp_million_points(name, dtype):
    for seed in range(3):
        err, x, y, n = max_ulp_error(name, dtype, 1_000_000, seed=100 + seed)
        assert n >= 1_000_000
        assert err <= BOUNDS.get((name, dtype), 1.0), f"vecmath.{name}({x!r}) = {y!r}: {err:.3f} ulp"


@pytest.mark.parametrize("name", ALL)
def test_reference_agrees_with_mpmath(name):
    """The long double reference is within 0.01 ulp of float64 of mpmath at 120 bits."""
    x = INPUTS[name](np.float64, 4000, np.random.default_rng(7))
    with np.errstate(all="ignore"):
        x = x[np.isfinite(x) & {"log": x > 0, "log1p": x > -1, "exp": np.abs(x) < 745, "expm1": np.abs(x) < 700,
                                "tanh": np.abs(x) < 700, "sigmoid": np.abs(x) < 700, "softplus": np.abs(x) < 700,
                                "sin": ~np.isnan(x), "cos": ~np.isnan(x)}[name]]
    ref = reference(name, x)
    with mpmath.workprec(120):
        exact = np.array([LD(str(FUNCS[name][2](mpmath.mpf(float(v))))) for v in x])
    with np.errstate(over="ignore"):
        err = ulp_errors(ref.astype(np.float64), exact, np.float64)  # sanity: rounding is <= 0.5 ulp
    assert err.max() <= 0.5 + 1e-3
    rel = np.abs(ref - exact) / np.where(exact == 0, 1, np.abs(exact))
    assert rel.max() < 1e-18


def _mp_ulps(got: float, exact) -> float:
    """|got - exact| in ulps of the float64 nearest ``exact`` (an mpmath number; 0 counts exactly)."""
    if exact == 0:
        return 0.0 if got == 0 else np.inf
    return float(abs(mpmath.mpf(got) - exact) / mpmath.mpf(float(np.spacing(abs(float(exact))))))


@pytest.mark.parametrize("name", ["log", "log1p"])
def test_log_and_log1p_are_correctly_rounded_against_mpmath(name):
    """The table-driven log and log1p round correctly: within 0.5 + 2^-10 ulp of 120-bit mpmath
    at 6000 points (spread over the range, next to 1 and 0 where log1p(r) carries the result, and
    next to the table's subinterval boundaries), misrounded at fewer than 1 in 1000 (none measured;
    fdlibm's formulas, as before, misround 3-4 % of them, NumPy's 1 %)."""
    rng = np.random.default_rng(11)
    edges = np.int64(0x3FE6000000000000 + (np.arange(129) << 45)).view(np.float64)
    x = np.concatenate([np.exp(rng.uniform(-700, 700, 1500)), 1 + rng.uniform(-0.02, 0.02, 1500),
                        1 + np.exp(rng.uniform(-45, -4, 1000)) * rng.choice([-1, 1], 1000),
                        np.nextafter(edges, 0), edges, np.nextafter(edges, 2), rng.uniform(0.6, 1.4, 1613)])
    if name == "log1p":
        x = np.concatenate([x - 1, rng.uniform(-0.004, 0.008, 500), -np.exp(rng.uniform(-40, -1e-3, 500))])
    with np.errstate(invalid="ignore"):
        x = x[np.isfinite(x) & (x > (0 if name == "log" else -1))]
    got = run(name, x)
    with mpmath.workprec(120):
        err = np.array([_mp_ulps(float(g), FUNCS[name][2](mpmath.mpf(float(v)))) for g, v in zip(got, x)])
    assert err.max() <= 0.5 + 2.0**-10, f"{name}({x[np.argmax(err)]!r}): {err.max():.4f} ulp"
    assert np.mean(err > 0.5) < 1e-3


def _check_specials(name, dtype, cases):
    x = np.array([c[0] for c in cases], dtype=dtype)
    want = np.array([c[1] for c in cases], dtype=dtype)
    got = run(name, x)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(x[~same], got[~same], want[~same]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp_specials(dtype):
    fi = np.finfo(dtype)
    _check_specials("exp", dtype, [
        (0.0, 1.0), (-0.0, 1.0), (np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan),
        (1e6, np.inf), (-1e6, 0.0), (float(fi.max), np.inf), (-float(fi.max), 0.0),
        (np.log(float(fi.max)) * 1.001, np.inf), (np.log(float(fi.smallest_subnormal)) * 1.01, 0.0),
        (float(fi.smallest_subnormal), 1.0)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_log_specials(dtype):
    fi = np.finfo(dtype)
    _check_specials("log", dtype, [
        (0.0, -np.inf), (-0.0, -np.inf), (np.inf, np.inf), (-np.inf, np.nan), (np.nan, np.nan),
        (1.0, 0.0), (-1.0, np.nan), (-float(fi.smallest_subnormal), np.nan),
        (2.0, np.log(dtype(2.0))), (float(fi.smallest_subnormal), np.log(LD(fi.smallest_subnormal)))])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_log1p_specials(dtype):
    _check_specials("log1p", dtype, [
        (0.0, 0.0), (-0.0, -0.0), (np.inf, np.inf), (-np.inf, np.nan), (np.nan, np.nan),
        (-1.0, -np.inf), (-2.0, np.nan), (float(np.finfo(dtype).smallest_subnormal), float(np.finfo(dtype).smallest_subnormal))])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_expm1_specials(dtype):
    fi = np.finfo(dtype)
    _check_specials("expm1", dtype, [
        (0.0, 0.0), (-0.0, -0.0), (np.inf, np.inf), (-np.inf, -1.0), (np.nan, np.nan), (-50.0, -1.0),
        (1e6, np.inf), (float(fi.max), np.inf), (-float(fi.max), -1.0),
        (float(fi.smallest_subnormal), float(fi.smallest_subnormal))])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tanh_specials(dtype):
    tiny = float(np.finfo(dtype).smallest_subnormal)
    _check_specials("tanh", dtype, [(0.0, 0.0), (-0.0, -0.0), (np.inf, 1.0), (-np.inf, -1.0), (np.nan, np.nan),
                                    (30.0, 1.0), (-30.0, -1.0), (tiny, tiny), (-tiny, -tiny)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sigmoid_softplus_specials(dtype):
    big = float(np.finfo(dtype).max)
    _check_specials("sigmoid", dtype, [(0.0, 0.5), (-0.0, 0.5), (np.inf, 1.0), (-np.inf, 0.0), (np.nan, np.nan),
                                       (big, 1.0), (-big, 0.0), (50.0, 1.0)])
    _check_specials("softplus", dtype, [(np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan), (big, big),
                                        (-big, 0.0), (0.0, np.log(dtype(2)))])


def test_sigmoid_softplus_match_the_prelude_forms():
    """Same formulas as emit/prelude.py's _sigmoid/_softplus: agree to 4 ulp on float64."""
    x = np.random.default_rng(3).normal(0.0, 30.0, 10_000)
    with np.errstate(all="ignore"):
        for name, ref in (("sigmoid", vm.sigmoid(x)), ("softplus", vm.softplus(x))):
            assert ulp_errors(run(name, x), ref.astype(LD), np.float64).max() <= 4


def test_exp_subnormal_results_are_correctly_rounded_powers_of_two():
    """exp(k ln 2) for k in the subnormal range lands on 2^k (a single rounding in the scaling)."""
    k = np.arange(-1074, -1021)
    x = np.array([float(mpmath.mpf(int(v)) * mpmath.log(2)) for v in k])
    err = ulp_errors(run("exp", x), reference("exp", x), np.float64)
    assert err.max() <= 1.0


def test_python_level_calls_fall_back_to_numpy():
    assert vm.exp(1.0) == np.exp(1.0) and vm.log(2.0) == np.log(2.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("loop", [_exp_loop, _expm1_loop, _log_loop, _log1p_loop, _tanh_loop, _sigmoid_loop,
                                  _softplus_loop, _sin_loop, _cos_loop])
def test_loops_vectorise_without_libm_calls(loop, dtype):
    """The loop's LLVM IR holds vector arithmetic and no scalar exp/log calls."""
    x = np.ones(4, dtype)
    loop(x, np.empty_like(x))
    ir = loop.inspect_llvm()[(numba.typeof(x), numba.typeof(x))]
    assert not re.search(r"call .*@(llvm\.)?(exp|expm1|log|log1p|tanh|sin|cos)(\.f64)?\(", ir)
    assert re.search(r"<\d+ x double>", ir)


def test_ulp_measure_catches_a_two_ulp_error():
    """The error measure itself: the correctly rounded value scores <= 0.5, two steps away > 1."""
    x = np.array([0.3, 5.0, -700.0, -744.0, 709.0])
    ref = reference("exp", x)
    y = ref.astype(np.float64)
    assert ulp_errors(y, ref, np.float64).max() <= 0.5
    two_off = np.nextafter(np.nextafter(y, np.inf), np.inf)
    assert (ulp_errors(two_off, ref, np.float64) > 1.0).all()


@pytest.mark.slow
def test_exp_f32_exhaustive():
    """Every float32 in [-104, 89] (2.24e9 inputs, a few minutes): within 1 ulp of NumPy's float64
    exp, itself within 2^-28 ulp of float32 of the exact value (errors measured in float64 here,
    for speed and memory); outside the range the result is inf or +0."""
    chunk, end, worst = 1 << 22, 0x42B20001, 0.0
    for sign in (0, 0x80000000):
        for start in range(0, end, chunk):
            x = (np.arange(start, min(start + chunk, end), dtype=np.uint32) | np.uint32(sign)).view(np.float32)
            y = run("exp", x).astype(np.float64)
            with np.errstate(all="ignore"):
                ref = np.exp(x.astype(np.float64))
                big = 2.0 ** 128
                y[np.isinf(y)] = big
                ref = np.minimum(ref, big)
                e = np.clip(np.frexp(ref)[1] - 1, -126, 127) - 23
                worst = max(worst, float((np.abs(y - ref) / np.ldexp(1.0, e)).max()))
    assert worst <= 1.0, worst
    _check_specials("exp", np.float32, [(89.0, np.inf), (-104.0, 0.0), (1e30, np.inf), (-1e30, 0.0)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sin_cos_specials(dtype):
    fi = np.finfo(dtype)
    tiny = float(fi.smallest_subnormal)
    _check_specials("sin", dtype, [(0.0, 0.0), (-0.0, -0.0), (np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan),
                                   (tiny, tiny), (-tiny, -tiny), (float(fi.smallest_normal), float(fi.smallest_normal)),
                                   (1e-20, 1e-20), (-1e-20, -1e-20)])
    _check_specials("cos", dtype, [(0.0, 1.0), (-0.0, 1.0), (np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan),
                                   (tiny, 1.0), (-tiny, 1.0), (1e-20, 1.0)])


def test_two_over_pi_bits_and_payne_hanek_table():
    """The hexadecimal 2/pi is floor(2/pi 2^1200) (mpmath at 1400 bits), and each table row sums to
    2^E 2/pi mod 4 within 2^-210 (E = -24 ... 971), its four parts of at most 53 bits each."""
    with mpmath.workprec(1400):
        assert int(vm._TWO_OVER_PI_HEX, 16) == int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** 1200))
        table = vm._PH_TABLE.reshape(-1, 4)
        assert table.shape == (996, 4)
        for row, e in ((0, -24), (1, -23), (100, 76), (500, 476), (995, 971)):
            exact = mpmath.fmod(mpmath.ldexp(2 / mpmath.pi, e), 4)
            got = sum(mpmath.mpf(float(v)) for v in table[row])
            assert 0 <= exact - got < mpmath.ldexp(1, -210)
            for j, v in enumerate(table[row]):
                assert v == 0 or mpmath.ldexp(1, -51 - 53 * j) <= v < mpmath.ldexp(1, 2 - 53 * j)


def test_sin_cos_near_multiples_of_half_pi_against_mpmath():
    """Tiny results straight against mpmath at 200 bits (independent of the long double reference):
    the closest double to a multiple of pi/2 (2^-60.9 away), pi/2 multiples rounded to doubles with
    k up to 2^20 and k 2^j, and their neighbours; within 1 ulp and the sign right."""
    rng = np.random.default_rng(5)
    k = np.concatenate([np.arange(1, 40), rng.integers(1, 2 ** 20, 200)]).astype(np.float64)
    x = np.concatenate([k * (np.pi / 2), np.pi / 2 * 2.0 ** np.arange(20, 1000, 37), HARD_TRIG])
    x = np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf)])
    x = np.concatenate([x, -x])
    for name in ("sin", "cos"):
        y = run(name, x)
        with mpmath.workprec(200):
            exact = np.array([LD(str(FUNCS[name][2](mpmath.mpf(float(v))))) for v in x])
        err = ulp_errors(y, exact, np.float64)
        worst = int(np.argmax(err))
        assert err[worst] <= 1.0, f"{name}({x[worst]!r}) = {y[worst]!r}, exact {exact[worst]}: {err[worst]:.3f} ulp"
        assert (np.sign(y) == np.sign(exact.astype(np.float64))).all()
    assert abs(run("cos", np.array([HARD_TRIG[0]]))[0]) < 2.0 ** -60  # the tiny result itself


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_f32_exhaustive(name):
    """Every float32 (2^32 inputs, a few minutes each): within 1 ulp of NumPy's float64 sin/cos (glibc,
    < 1 ulp of float64 = 2^-29 ulp of float32 from the exact value; errors measured in float64 here,
    the margin 2^-20 covers the reference's error), NaN exactly where the input is inf or NaN."""
    chunk, worst, f = 1 << 24, 0.0, getattr(np, name)
    for start in range(0, 1 << 32, chunk):
        x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        y = run(name, x)
        with np.errstate(all="ignore"):
            ref = f(x.astype(np.float64))
        finite = np.isfinite(x)
        assert np.isnan(y[~finite]).all() and not np.isnan(y[finite]).any()
        y, ref = y[finite].astype(np.float64), ref[finite]
        e = np.clip(np.frexp(ref)[1] - 1, -126, 127) - 23
        worst = max(worst, float((np.abs(y - ref) / np.ldexp(1.0, e)).max()))
    assert worst <= 1.0 - 2.0 ** -20, worst
    print(f"vecmath.{name} float32: max {worst:.4f} ulp over all 2^32 inputs")
