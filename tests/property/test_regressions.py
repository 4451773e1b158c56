"""Counterexamples found by the property-based tests, kept as ordinary tests.

Each test holds the minimal program (shrunk by hypothesis, then simplified by hand)
and asserts values, so it fails if the bug comes back.  Tests of bugs that are not
fixed are ``xfail(strict=True)``: they start failing (XPASS) when a fix lands.
"""
import signal
import time

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.stabilize.reference import compile_mpmath

x_ = sp.Symbol("x", real=True)


# -- stabiliser reference evaluator on astronomically large intermediates -------------------------
# Found while building the property tests (first experiment): programs like tanh(exp(x)) made the stabiliser's mpmath reference raise
# MemoryError (mpmath's tanh builds a 2**mag-bit integer for exp(1e308)), and sin(exp(x)) or
# exp(exp(x)) hang for hours (argument reduction with pi or ln 2 to 1e308 bits), because the
# sampler draws x over all float bit patterns.  Fixed in symgrad/stabilize/reference.py.

@pytest.mark.parametrize("expr, expected", [
    (sp.tanh(sp.exp(x_)), 1.0),
    (sp.tanh(-sp.exp(x_)), -1.0),
    (sp.exp(sp.exp(x_)), float("inf")),
    (sp.exp(-sp.exp(x_)), 0.0),
    (sp.sin(sp.exp(x_)), float("nan")),
    (sp.cos(sp.cosh(x_)), float("nan")),
    (sp.atan(sp.exp(sp.exp(x_))), np.pi / 2),
])
def test_reference_of_huge_intermediates(expr, expected):
    fn = compile_mpmath(expr, [x_])
    with mpmath.workprec(200):
        v = fn([mpmath.mpf(1e308)])
    np.testing.assert_equal(float(v), expected)


def test_reference_of_moderate_tanh_is_unchanged():
    fn = compile_mpmath(sp.tanh(x_), [x_])
    with mpmath.workdps(60):
        for v in (-100.5, -65.0, 0.3, 64.5, 70.25, 1e5):
            a = mpmath.mpf(v)
            assert mpmath.almosteq(fn([a]), mpmath.tanh(a), rel_eps=mpmath.mpf(10) ** -55)


@pytest.mark.parametrize("name, f, df", [
    ("tanh_exp", lambda x: np.tanh(np.exp(x)), lambda x: np.exp(x) / np.cosh(np.exp(x)) ** 2),
    ("sin_exp", lambda x: np.sin(np.exp(x)), lambda x: np.cos(np.exp(x)) * np.exp(x)),
    ("exp_exp", lambda x: np.exp(np.exp(x)), lambda x: np.exp(np.exp(x) + x)),
])
def test_stabilised_compile_of_nested_exp(name, f, df):
    f.__name__ = f"reg_{name}"
    x = np.array([-2.0, -0.5, 0.25, 1.0, 1.5])
    np.testing.assert_allclose(sg.jit(f, stabilize=0.5)(x), f(x), rtol=1e-13)
    np.testing.assert_allclose(sg.grad(f, stabilize=0.5)(x), df(x), rtol=1e-12)


# -- stabiliser wall-clock budget -----------------------------------------------------------------------
# Found while building the property tests: sg.jit(lambda x: np.tan(np.exp(np.exp(x))))(1.0) did not
# finish in 10 minutes, although the stabiliser documents a cap of 2 s per expression.  The series
# candidate for tan(exp(exp(x))) (adaptive_series: order-12 expansion, several seconds by itself) is
# a Horner form nested dozens of levels deep; scoring it (compile_numpy: default_sort_key and
# is_number recurse through the unevaluated nesting) takes minutes, and the deadline is only
# checked between steps.  With budget_s <= 1 the series step is skipped and it returns in ~1 s.

class _Alarm(BaseException):  # not an Exception: the stabiliser's `except Exception` must not swallow it
    pass


def _raise_alarm(signum, frame):
    raise _Alarm()


@pytest.mark.xfail(strict=True, raises=_Alarm,
                   reason="stabiliser series candidate of tan(exp(exp(x))) takes minutes (budget 2 s)")
def test_stabiliser_respects_budget_on_nested_exp_series():
    from symgrad.stabilize import stabilize

    old = signal.signal(signal.SIGALRM, _raise_alarm)
    signal.alarm(10)
    try:
        t0 = time.perf_counter()
        res = stabilize(sp.tan(sp.exp(sp.exp(x_))), [x_], budget_s=2.0)
        elapsed = time.perf_counter() - t0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert elapsed < 10
    f = sp.lambdify(x_, res.expr, "mpmath")
    with mpmath.workdps(30):
        assert mpmath.almosteq(f(mpmath.mpf("0.5")), mpmath.tan(mpmath.exp(mpmath.exp(mpmath.mpf("0.5")))),
                               rel_eps=1e-12)
