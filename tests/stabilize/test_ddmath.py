"""The scalar double-double arithmetic of kernels (symgrad/ir/ddmath.py) against mpmath.

Error-free transformations must be exact; dd operations and elementary functions within
2^-100 (arithmetic) and 2^-98 (exp, expm1, log, log1p, sigmoid, softplus, tanh, sinh, cosh, erf,
sin, cos; erfc 2^-95) relative to the exact value of the dd input, wherever the result's tail is
not subnormal.  The Numba-compiled
copy a generated module holds (symgrad.emit.prelude) must give the same bits as the Python
functions, which is what the stabiliser scores.
"""
from __future__ import annotations

import importlib.util
import math

import mpmath
import numpy as np
import pytest

from symgrad.emit.prelude import helper_source, helpers_used
from symgrad.ir import ddmath as D

RNG = np.random.default_rng(20261124)


def _mp(h, l=0.0):  # noqa: E741
    return mpmath.mpf(float(h)) + mpmath.mpf(float(l))


def _dd(x):
    """A dd number near float ``x`` with a random tail."""
    return D.dd_fast_two_sum(x, x * 2.0 ** -54 * RNG.uniform(-1, 1))


def _rel(got, ref):
    return abs((_mp(*got) - ref) / ref)


def test_error_free_transformations_are_exact():
    a = RNG.choice([-1.0, 1.0], 3000) * 10.0 ** RNG.uniform(-150, 150, 3000)
    b = RNG.choice([-1.0, 1.0], 3000) * 10.0 ** RNG.uniform(-150, 150, 3000)
    a[:5] = [1e300, -3e305, 7e299, 1.0, 2.0 ** 996 * 1.5]  # beyond Veltkamp's limit: scaled splitting
    b[:5] = [1e-20, 1e-10, -3.0, 1e300, 1e-300]
    with mpmath.workprec(5000):
        for x, y in zip(a, b):
            s, e = D.dd_two_sum(float(x), float(y))
            assert _mp(s, e) == _mp(x) + _mp(y)
            if 1e-280 < abs(x * y) < 1e300:  # exact barring underflow of the tail (and overflow)
                p, f = D.dd_two_prod(float(x), float(y))
                assert _mp(p, f) == _mp(x) * _mp(y), (x, y)


@pytest.mark.parametrize("name,mp_op", [("dd_add", lambda a, b: a + b), ("dd_mul", lambda a, b: a * b),
                                        ("dd_div", lambda a, b: a / b)])
def test_arithmetic_has_100_bits(name, mp_op):
    fn = getattr(D, name)
    worst = 0
    with mpmath.workprec(400):
        for _ in range(2000):
            a = _dd(float(RNG.standard_normal() * 10.0 ** RNG.uniform(-60, 60)))
            b = _dd(float(RNG.standard_normal() * 10.0 ** RNG.uniform(-60, 60)))
            worst = max(worst, _rel(fn(*a, *b), mp_op(_mp(*a), _mp(*b))))
    assert worst < 2.0 ** -100, math.log2(worst)


def test_add_cancelling_terms_is_exact_enough():
    """x + exp(x) + 1 at the root of swish' (the case the regions exist for): 2^-100 of the result."""
    with mpmath.workprec(400):
        for x in -1.2784645 + RNG.uniform(-1e-6, 1e-6, 200):
            e = D.dd_exp(float(x), 0.0)
            s = D.dd_add(*D.dd_add(1.0, 0.0, float(x), 0.0), *e)
            ref = 1 + _mp(x) + mpmath.exp(_mp(x))
            assert _rel(s, ref) < 2.0 ** -100 * (1 + mpmath.exp(_mp(x)) / abs(ref))


FUNCTIONS = [  # name, mpmath, sampler of x
    ("dd_exp", mpmath.exp, lambda: RNG.uniform(-660, 709)),  # below e^-671 the tail is subnormal
    ("dd_exp", mpmath.exp, lambda: RNG.uniform(-2, 2)),
    ("dd_expm1", mpmath.expm1, lambda: RNG.choice([-1, 1]) * 10 ** RNG.uniform(-30, 2.8)),
    ("dd_log", mpmath.log, lambda: 10 ** RNG.uniform(-300, 300)),
    ("dd_log", mpmath.log, lambda: 1 + RNG.uniform(-1e-3, 1e-3)),
    ("dd_log1p", mpmath.log1p, lambda: RNG.choice([-1, 1]) * 10 ** RNG.uniform(-30, -0.6)),
    ("dd_log1p", mpmath.log1p, lambda: 10 ** RNG.uniform(-0.6, 300)),
    ("dd_sigmoid", lambda x: 1 / (1 + mpmath.exp(-x)), lambda: RNG.uniform(-660, 700)),
    ("dd_softplus", lambda x: mpmath.log1p(mpmath.exp(x)), lambda: RNG.uniform(-660, 700)),
    ("dd_sqrt", mpmath.sqrt, lambda: 10 ** RNG.uniform(-280, 300)),
    # each algorithm's range, both signs, tiny arguments and the switch points (tanh 0.55, erf 1.75,
    # sinh and cosh 709, where exp(|x|) overflows and they do not)
    ("dd_tanh", mpmath.tanh, lambda: _signed(10 ** RNG.uniform(-290, 0))),
    ("dd_tanh", mpmath.tanh, lambda: _signed(0.55 + RNG.uniform(-0.01, 0.01))),
    ("dd_tanh", mpmath.tanh, lambda: RNG.uniform(-40, 40)),
    ("dd_sinh", mpmath.sinh, lambda: _signed(10 ** RNG.uniform(-290, 0.5))),
    ("dd_sinh", mpmath.sinh, lambda: _signed(RNG.uniform(3, 710.47))),
    ("dd_cosh", mpmath.cosh, lambda: _signed(10 ** RNG.uniform(-20, 0.5))),
    ("dd_cosh", mpmath.cosh, lambda: _signed(RNG.uniform(3, 710.47))),
    ("dd_erf", mpmath.erf, lambda: _signed(10 ** RNG.uniform(-290, 0))),
    ("dd_erf", mpmath.erf, lambda: _signed(D.DD_ERF_SWITCH + RNG.uniform(-0.02, 0.02))),
    ("dd_erf", mpmath.erf, lambda: _signed(RNG.uniform(1, 8))),
    ("dd_erfc", mpmath.erfc, lambda: RNG.uniform(-2, 2)),
    ("dd_erfc", mpmath.erfc, lambda: _signed(D.DD_ERF_SWITCH + RNG.uniform(-0.02, 0.02))),
    ("dd_erfc", mpmath.erfc, lambda: RNG.uniform(1.7, 25.9)),  # beyond 25.9 the result's tail is subnormal
    ("dd_erfc", mpmath.erfc, lambda: RNG.uniform(-30, -1.7)),
    ("dd_sin", mpmath.sin, lambda: _signed(10 ** RNG.uniform(-290, 0.7))),
    ("dd_sin", mpmath.sin, lambda: _signed(10 ** RNG.uniform(0.7, 8))),
    ("dd_cos", mpmath.cos, lambda: _signed(10 ** RNG.uniform(-10, 0.7))),
    ("dd_cos", mpmath.cos, lambda: _signed(10 ** RNG.uniform(0.7, 8))),
]
BITS = {"dd_erfc": 95}  # 1 - erf below the switch point cancels up to 6.3 bits (the others: 98)


def _signed(x):
    return x * RNG.choice([-1.0, 1.0])


@pytest.mark.parametrize("name,mp_fn,draw", FUNCTIONS, ids=[f"{f[0]}-{i}" for i, f in enumerate(FUNCTIONS)])
def test_functions_have_98_bits(name, mp_fn, draw):
    fn = getattr(D, name)
    worst, at = 0, None
    with mpmath.workprec(400):
        for _ in range(600):
            x = _dd(float(draw()))
            err = _rel(fn(*x), mp_fn(_mp(*x)))
            if err > worst:
                worst, at = err, x
    assert worst < 2.0 ** -BITS.get(name, 98), (math.log2(worst), at)


def test_exp_with_a_subnormal_tail_still_beats_float64():
    """Below e^-671 the tail is subnormal: fewer bits, still far more than float64's 53."""
    with mpmath.workprec(400):
        worst = max(_rel(D.dd_exp(x, 0.0), mpmath.exp(_mp(x))) for x in RNG.uniform(-700, -671, 300))
    assert worst < 2.0 ** -60, math.log2(worst)


def test_powi_matches_repeated_products():
    with mpmath.workprec(400):
        for n in (-7, -2, -1, 0, 1, 2, 3, 10, 33):
            a = _dd(1.1)
            assert _rel(D.dd_powi(*a, n), _mp(*a) ** n) < 2.0 ** -98


@pytest.mark.parametrize("name,x,want", [
    ("dd_exp", 800.0, math.inf), ("dd_exp", -800.0, 0.0), ("dd_exp", math.nan, math.nan),
    ("dd_log", 0.0, -math.inf), ("dd_log", -1.0, math.nan), ("dd_log", math.inf, math.inf),
    ("dd_log1p", -1.0, -math.inf), ("dd_sqrt", -1.0, math.nan), ("dd_sigmoid", -800.0, 0.0),
    ("dd_sigmoid", 800.0, 1.0), ("dd_softplus", 800.0, 800.0), ("dd_powi", 0.0, math.inf),
    ("dd_tanh", math.inf, 1.0), ("dd_tanh", -math.inf, -1.0), ("dd_tanh", 400.0, 1.0), ("dd_tanh", 1e-300, 1e-300),
    ("dd_sinh", math.inf, math.inf), ("dd_sinh", -math.inf, -math.inf), ("dd_sinh", -710.5, -math.inf),
    ("dd_sinh", 5e-324, 5e-324), ("dd_cosh", -math.inf, math.inf), ("dd_cosh", 710.5, math.inf),
    ("dd_cosh", 1e300, math.inf), ("dd_erf", math.inf, 1.0), ("dd_erf", -math.inf, -1.0), ("dd_erf", 30.0, 1.0),
    ("dd_erfc", math.inf, 0.0), ("dd_erfc", -math.inf, 2.0), ("dd_erfc", 27.5, 0.0), ("dd_erfc", -1e300, 2.0),
    ("dd_sin", math.inf, math.nan), ("dd_sin", -math.inf, math.nan), ("dd_cos", math.inf, math.nan),
    ("dd_sin", 1e300, math.sin(1e300)), ("dd_cos", -3e8, math.cos(-3e8)), ("dd_cos", 0.0, 1.0)]
    + [(f"dd_{f}", math.nan, math.nan) for f in ("tanh", "sinh", "cosh", "erf", "erfc", "sin", "cos")])
def test_special_values_are_float64s(name, x, want):
    got = sum(D.dd_powi(x, 0.0, -2) if name == "dd_powi" else getattr(D, name)(x, 0.0))
    assert got == want or (math.isnan(got) and math.isnan(want)), (name, x, got)


def test_overflow_gives_floats_result_not_nan():
    """A dd sum or product that overflows is inf, as in float64 (no NaN from inf - inf in a tail)."""
    assert D.dd_add(1e308, 0.0, 1e308, 0.0) == (math.inf, 0.0)
    assert D.dd_mul(1e200, 0.0, -1e200, 0.0) == (-math.inf, 0.0)
    assert D.dd_add(*D.dd_exp(709.7, 0.0), 1e308, 0.0)[0] == math.inf
    assert D.dd_div(1.0, 0.0, -0.0, 0.0)[0] == -math.inf and math.isnan(D.dd_div(0.0, 0.0, 0.0, 0.0)[0])


def test_hypot_has_100_bits_at_every_magnitude():
    """dd_hypot scales by a power of 2 first: the squares of 1e200 or 1e-200 neither overflow nor
    underflow, and the root is correctly scaled back (inf where hypot itself overflows)."""
    worst = 0
    with mpmath.workprec(400):
        for _ in range(2000):
            e = RNG.uniform(-280, 280)
            a = _dd(float(RNG.standard_normal() * 10.0 ** e))
            b = _dd(float(RNG.standard_normal() * 10.0 ** (e + RNG.uniform(-20, 20))))
            worst = max(worst, _rel(D.dd_hypot(*a, *b), mpmath.sqrt(_mp(*a) ** 2 + _mp(*b) ** 2)))
    assert worst < 2.0 ** -100, worst
    assert D.dd_hypot(1.7e308, 0.0, 1.7e308, 0.0) == (math.inf, 0.0)
    assert D.dd_hypot(-3.0, 0.0, 4.0, 0.0) == (5.0, 0.0) and D.dd_hypot(0.0, 0.0, -0.0, 0.0) == (0.0, 0.0)
    assert D.dd_hypot(math.nan, 0.0, math.inf, 0.0)[0] == math.inf
    assert sum(D.dd_hypot(3e-320, 0.0, 4e-320, 0.0)) == math.hypot(3e-320, 4e-320)


def test_division_by_an_infinite_divisor_is_zero_as_in_float64():
    """x / inf is 0 (the dd product q1 * inf in the remainder would be NaN): what 1/hypot(x, y) needs
    where the hypot of two huge inputs overflows."""
    assert D.dd_div(2.0, 0.0, math.inf, 0.0) == (0.0, 0.0)
    assert D.dd_div(-2.0, 1e-17, math.inf, 0.0)[0] == 0.0
    assert math.isnan(D.dd_div(math.inf, 0.0, math.inf, 0.0)[0])


def test_kernel_copy_gives_the_same_bits(tmp_path):
    """The njit copy of every function (as generated modules hold it) against the Python functions."""
    names = ["_dd_exp", "_dd_log", "_dd_log1p", "_dd_expm1", "_dd_div", "_dd_sqrt", "_dd_sigmoid",
             "_dd_softplus", "_dd_powi", "_dd_hypot", "_dd_exp_tail", "_dd_expm1_tail", "_dd_log_tail",
             "_dd_log1p_tail", "_dd_err_div", "_dd_err_log_tail", "_dd_tanh", "_dd_sinh", "_dd_cosh", "_dd_erf",
             "_dd_erfc", "_dd_sin", "_dd_cos"]
    calls = "\n".join(f"    {n}(" for n in names)
    used = helpers_used(calls)
    text = "import math\n\nimport numba\n" + "\n".join(helper_source(h) for h in used)
    path = tmp_path / "ddcopy.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("ddcopy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    xs = np.concatenate([RNG.uniform(-50, 50, 40), [0.3, -0.29, 1e-20, 700.0, -744.0, 0.55, 1.75, -1.75, 709.8,
                                                     -710.4, 27.29, 1.2e5, -9e7, 3e8]])
    for x in xs:
        x = float(x)
        for n in ("exp", "expm1", "sigmoid", "softplus", "exp_tail", "expm1_tail", "tanh", "sinh", "cosh", "erf",
                  "erfc", "sin", "cos"):
            assert getattr(mod, f"_dd_{n}")(x, x * 1e-17) == getattr(D, f"dd_{n}")(x, x * 1e-17), (n, x)
        a = abs(x) + 1e-3
        for n in ("log", "log1p", "sqrt", "log_tail", "log1p_tail"):
            assert getattr(mod, f"_dd_{n}")(a, 1e-20) == getattr(D, f"dd_{n}")(a, 1e-20), (n, a)
        assert mod._dd_err_div(x, 3.0, a, 1.0) == D.dd_err_div(x, 3.0, a, 1.0)
        assert mod._dd_err_log_tail(x, a, 2.0) == D.dd_err_log_tail(x, a, 2.0)
        assert mod._dd_div(x, 0.0, 3.0, 1e-17) == D.dd_div(x, 0.0, 3.0, 1e-17)
        assert mod._dd_powi(x, 0.0, 3) == D.dd_powi(x, 0.0, 3)
        for y in (x * 1e150, x * 1e-300, 1.7e308, 0.5):
            assert mod._dd_hypot(x, 1e-17, y, 0.0) == D.dd_hypot(x, 1e-17, y, 0.0), (x, y)
        assert mod._dd_div(x, 0.0, math.inf, 0.0) == D.dd_div(x, 0.0, math.inf, 0.0)


TAILS = [("dd_exp_tail", mpmath.exp, lambda: RNG.uniform(-700, 700)),
         ("dd_expm1_tail", mpmath.expm1, lambda: RNG.uniform(-40, 700)),
         ("dd_expm1_tail", mpmath.expm1, lambda: 10.0 ** RNG.uniform(-30, -1) * RNG.choice([-1, 1])),
         ("dd_log_tail", mpmath.log, lambda: 10.0 ** RNG.uniform(-300, 300)),
         ("dd_log_tail", mpmath.log, lambda: 1.0 + RNG.uniform(-1e-6, 1e-6)),
         ("dd_log1p_tail", mpmath.log1p, lambda: 10.0 ** RNG.uniform(-30, 300)),
         ("dd_log1p_tail", mpmath.log1p, lambda: -RNG.uniform(0.0, 0.999))]


@pytest.mark.parametrize("name,mp_fn,draw", TAILS, ids=[f"{t[0]}-{i}" for i, t in enumerate(TAILS)])
def test_first_order_tails_are_float64_accurate_at_the_dd_argument(name, mp_fn, draw):
    """The float64 functions of ddt regions: within 1 ulp (glibc's libm rounding plus the neglected
    second-order term) of the function at the exact dd argument -- also where float64 of the high
    part alone is off by many ulps (exp(700 + 5e-14): the low part moves the result 3.5e-14, 316
    ulps) -- and within the error bound their ``dd_err_*`` functions give."""
    worst, worst_plain = 0.0, 0.0
    bound = getattr(D, name.replace("dd_", "dd_err_"))
    with mpmath.workdps(60):
        for _ in range(200):
            h, l = _dd(float(draw()))  # noqa: E741
            ref = mp_fn(_mp(h, l))
            got = getattr(D, name)(h, l)
            ulp = math.ulp(float(ref))
            err = float(abs(_mp(*got) - ref))
            worst = max(worst, err / ulp)
            worst_plain = max(worst_plain, float(abs(mp_fn(mpmath.mpf(h)) - ref)) / ulp)
            args = (got[0], 0.0) if "exp" in name else (got[0], h, 0.0)
            assert err <= bound(*args) * 2.0 ** -53 * 1.0001, (name, h, l)  # the libm part of the bound
    assert worst <= 1.0, (name, worst)
    if name == "dd_exp_tail":
        assert worst_plain > 4.0  # the low part matters there: float64 of the high part alone is far off


def test_tails_give_floats_results_at_special_values():
    assert D.dd_exp_tail(710.0, 0.0) == (math.inf, 0.0) and D.dd_expm1_tail(800.0, 1e-14) == (math.inf, 0.0)
    assert D.dd_exp_tail(-800.0, 0.0) == (0.0, 0.0) and D.dd_expm1_tail(-800.0, 0.0) == (-1.0, 0.0)
    assert D.dd_log_tail(0.0, 0.0) == (-math.inf, 0.0) and math.isnan(D.dd_log_tail(-1.0, 0.0)[0])
    assert D.dd_log1p_tail(-1.0, 0.0) == (-math.inf, 0.0) and math.isnan(D.dd_log1p_tail(-2.0, 0.0)[0])
    assert D.dd_log_tail(math.inf, 0.0) == (math.inf, 0.0) and math.isnan(D.dd_exp_tail(math.nan, 0.0)[0])


def test_odd_functions_keep_the_sign_of_zero_and_tiny_arguments():
    for name in ("dd_tanh", "dd_sinh", "dd_erf", "dd_sin"):
        for x in (0.0, -0.0, 5e-324, -1e-300):
            h, l = getattr(D, name)(x, 0.0)  # noqa: E741
            assert math.copysign(1.0, h) == math.copysign(1.0, x), (name, x, h)
            assert (h, l) == (x, 0.0) if name != "dd_erf" else h == x * D.DD_2_SQRTPI_HI, (name, x, h, l)


def test_saturated_tanh_and_erf_carry_their_tails():
    """Beyond the range where they round to 1, tanh and erf are ``1 + lo`` with ``lo`` the float64 value of
    ``-2 exp(-2x) / (1 + exp(-2x))`` and ``-erfc(x)`` (53 bits: a dd holds no more there), so a region
    ``dd(1 - tanh(x))`` or ``dd(1 - erf(x))`` loses nothing."""
    with mpmath.workprec(400):
        for x in RNG.uniform(19.0, 350.0, 200):
            h, l = D.dd_tanh(float(x), 0.0)  # noqa: E741
            e = mpmath.exp(-2 * _mp(x))
            assert h == 1.0 and abs(l / (-2 * e / (1 + e)) - 1) < 2.0 ** -52, x
        for x in RNG.uniform(6.0, 25.9, 200):
            h, l = D.dd_erf(float(x), 0.0)  # noqa: E741
            assert h == 1.0 and abs(l / -mpmath.erfc(_mp(x)) - 1) < 2.0 ** -52, x


def test_sin_and_cos_next_to_their_zeros():
    """At the dd nearest ``k pi/2`` (|k| up to 6e7, so ``|x|`` up to 9.4e7) sin or cos is 2^-60 to 2^-250:
    the reduction's error is the truncation of pi/2 (208 bits) times ``k``, below 2^-198 absolute, so
    relative within 2^-98 down to 2^-100; and float64 arguments next to the zeros (``k pi`` rounded)."""
    worst_rel, worst_abs = 0.0, 0.0
    with mpmath.workprec(800):
        for k in np.concatenate([RNG.integers(1, 200, 100), RNG.integers(200, 6 * 10**7, 300)]):
            v = int(k) * mpmath.pi / 2
            for h, l in ((float(v), float(v - float(v))), (float(v), 0.0)):  # noqa: E741
                fn, mp_fn = (D.dd_sin, mpmath.sin) if k % 2 == 0 else (D.dd_cos, mpmath.cos)
                ref = mp_fn(_mp(h, l))
                err = abs(_mp(*fn(h, l)) - ref)
                if abs(ref) > 2.0 ** -100:
                    worst_rel = max(worst_rel, err / abs(ref))
                else:
                    worst_abs = max(worst_abs, err)
    assert worst_rel < 2.0 ** -98 and worst_abs < 2.0 ** -198, (worst_rel, worst_abs)
