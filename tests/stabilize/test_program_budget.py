"""The program pass's budget is spent on searches (issue 15 point 1, issue 16 point 5).

Searches reuse the triage's shared points and references and one shared never-worse check
sample, and each region gets a share of the remaining budget.  Values are checked against
mpmath; budgets through the numbers the stabiliser reports (never wall time).
"""
from __future__ import annotations

import gc
import re

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.api.stabilize_pass import DEFAULT_BUDGET_S
from symgrad.stabilize.accept import check_samples
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.reference import compile_mpmath, reference_values
from symgrad.stabilize.triage import triage

from ..test_buildtime import make_mlp

SUMMARY = re.compile(r"(\d+) region\(s\) triaged, (\d+) losing accuracy, (\d+) searched")


@pytest.mark.parametrize("budget", [DEFAULT_BUDGET_S, 3.0])
def test_mlp_4x4_searches_regions_within_the_program_budget(budget, monkeypatch):
    """(4, 4): 25 regions, 22 losing accuracy; each search used to draw its own 512-point mpmath
    sample (~0.9 s CPU per 24-input region), so the 1 s budget ended with 0 searched.  At the
    default budget the number searched (3-6 here) depends on how far the shared check sample's
    references get, so only the budget is held; with 3 s, searches must happen."""
    import symgrad.api.stabilize_pass as sp_pass

    monkeypatch.setattr(sp_pass, "DEFAULT_BUDGET_S", budget)
    loss, grad_ref, n = make_mlp(4, 4)
    # the budget is CPU time of this thread, which includes the garbage collector: a full collection of
    # the heap the test session has built up (1700 tests of SymPy objects) once cost 0.6 s inside it
    gc.collect()
    rw = sg.trace(loss, np.zeros(n), signature="(n)->()").rewrites()
    summary = next(m for m in map(SUMMARY.search, rw.notes) if m)
    triaged, losing, searched = map(int, summary.groups())
    assert (triaged, losing) == (25, 22), rw.notes
    assert searched <= losing
    if budget > DEFAULT_BUDGET_S:
        assert searched >= 2, rw.notes
    assert rw.cpu_s <= budget + 0.1, rw.notes  # a single SymPy call may end past the deadline
    p = np.random.default_rng(1).standard_normal(n) * 0.3
    np.testing.assert_allclose(sg.grad(loss, signature="(n)->()")(p), grad_ref(p), rtol=1e-12, atol=1e-15)


def _gelu_derivative(order):
    x = sp.Symbol("x", real=True)
    c, k = sp.Rational(float(np.sqrt(2 / np.pi))), sp.Rational(0.044715)  # the float64 constants, exactly
    return x, sp.diff(x / 2 * (1 + sp.tanh(c * (x + k * x**3))), x, order)


def _gelu_reference(order):
    x, f = _gelu_derivative(order)
    fn = sp.lambdify(x, f, "mpmath")

    def ref(v):
        with mpmath.workprec(3000):
            return +fn(mpmath.mpf(float(v)))
    return ref


def _gelu_kappa(order, v: float) -> float:
    """|x f^(order+1)(x) / f^(order)(x)| of GELU (tanh form) at ``v`` (mpmath, 3000 bits)."""
    x, f = _gelu_derivative(order)
    fn, fn1 = sp.lambdify(x, f, "mpmath"), sp.lambdify(x, sp.diff(f, x), "mpmath")
    with mpmath.workprec(3000):
        t = mpmath.mpf(v)
        return float(abs(t * fn1(t) / fn(t)))


@pytest.mark.parametrize("order", [1, 2])
def test_gelu_derivatives_at_the_default_budget(order):
    """GELU' (tanh form) at x = -15 is -7.7e-113 and GELU'' at -18 is -5.7e-189; the derived forms
    gave 0.0 (1 - tanh(u)**2 cancels), and float32 GELU'' at -6.4 gave 0 (truth -1.8e-10).  At the
    default budget GELU' was not searched here (its own 256-point sample did not fit; 128 do) and
    GELU'' was cut mid-search (its search now ends in 0.57 of 0.69 s).  Held to the criterion of
    test_ml_functions: log2(3) + log2(1 + kappa) bits, kappa = |x f^(k+1)/f^(k)| (GELU' at -15:
    kappa 750 and 48 ulps; GELU'' at -18: kappa = 1.3e3 and 6 ulps; 0-3 ulps elsewhere)."""
    gelu = lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))  # noqa: E731
    g = sg.grad(gelu) if order == 1 else sg.grad(sg.grad(gelu))
    ref = _gelu_reference(order)
    points = (-18.0, -15.0, -15.13, -6.4, -3.0, 0.5, 2.0)
    gc.collect()  # the budget is CPU time of this thread (see the MLP test above)
    for dtype, xs in (("float64", points), ("float32", (-6.4, -3.0, 0.5, 2.0))):
        for x in xs:
            x = np.dtype(dtype).type(x)
            got, want = g(x), np.dtype(dtype).type(float(ref(float(x))))
            assert np.asarray(got).dtype == np.dtype(dtype)
            limit = np.log2(3) + np.log2(1 + _gelu_kappa(order, float(x))) + 1e-9
            bits = float(ulp_bits(np.asarray([got]), np.asarray([want]))[0])
            assert bits <= limit, (dtype, float(x), got, want, bits, limit)


def test_mish_second_derivative_at_the_default_budget(monkeypatch):
    """mish''(60) is -3.6e-50; the derived form gave 0.0 (its terms cancel).  The searched form
    serves float64 but loses one float32 point under widening, and the never-worse check used
    to revert both kernels to the formula as written; now each dtype is accepted on its own
    (float64 keeps the searched form, float32 computes the formula as written).  Held to
    log2(3) + log2(1 + kappa) bits, kappa = |x f'''(x) / f''(x)|."""
    x = sp.Symbol("x", real=True)
    f2 = sp.diff(x * sp.tanh(sp.log(1 + sp.exp(x))), x, 2)
    fn, fn1 = sp.lambdify(x, f2, "mpmath"), sp.lambdify(x, sp.diff(f2, x), "mpmath")
    import symgrad.api.stabilize_pass as sp_pass

    # the product's default, 1 s, also under xdist (conftest raises it to 2 s there); at 2 s the search
    # sometimes ends on another form, which accept's split with the formula as written now keeps in
    # float64 (test_never_worse.py::test_a_split_with_the_original_that_passes_in_float64_only_is_kept_there)
    monkeypatch.setattr(sp_pass, "DEFAULT_BUDGET_S", 1.0)
    g = sg.grad(sg.grad(lambda x: x * np.tanh(np.log1p(np.exp(x)))))
    gc.collect()  # the budget is CPU time of this thread (see the MLP test above)
    for dtype, xs in (("float64", (60.0, 40.0, 12.0, 1.0, -1.0, -6.0, -20.0)), ("float32", (12.0, 1.0, -1.0, -6.0))):
        for v in xs:
            v = np.dtype(dtype).type(v)
            with mpmath.workprec(3000):
                t = mpmath.mpf(float(v))
                want, kappa = fn(t), float(abs(t * fn1(t) / fn(t)))
            got, want = g(v), np.dtype(dtype).type(float(want))
            assert np.asarray(got).dtype == np.dtype(dtype)
            bits = float(ulp_bits(np.asarray([got]), np.asarray([want]))[0])
            assert bits <= np.log2(3) + np.log2(1 + kappa) + 1e-9, (dtype, float(v), got, want, bits)


def test_power_tower_second_derivative_near_zero_at_the_default_budget():
    """(x**x)'' = x**x ((log x + 1)**2 + 1/x) is 1.0001504e6 at x = 1e-6; the derived form's
    x**(x - 1) rounds x - 1 first and is 12 ulps off there.  The region was never searched at the
    default budget: the 64-point probe of its own sample took 0.85 s, mpmath computing complex
    powers of the negative inputs (NaN in real arithmetic, now decided before the power)."""
    g = sg.grad(sg.grad(lambda x: x**x))
    gc.collect()  # the budget is CPU time of this thread (see the MLP test above)
    xs = np.array([1e-6, 9.4e-6, 8.8e-5, 0.5, 3.0])
    got = g(xs)
    with mpmath.workprec(200):
        want = np.array([float((lambda t: t**t * ((mpmath.log(t) + 1) ** 2 + 1 / t))(mpmath.mpf(v))) for v in xs])
    assert np.all(np.abs(got - want) <= 2 * np.spacing(np.abs(want))), (got, want)  # kappa ~ 1 at each


def test_triage_samples_are_correctly_rounded_references():
    """The points a search gets from the triage carry the correctly rounded references (as
    :func:`reference_values` computes them), non-finite ones dropped, each expression's columns."""
    x, y = sp.symbols("x y", real=True)
    exprs = [sp.log(1 + sp.exp(x)), sp.exp(x) - sp.exp(y), sp.sqrt(y + 1) - sp.sqrt(y)]
    vs = [[x], [x, y], [y]]
    res = triage(exprs, vs)
    for i, (e, v) in enumerate(zip(exprs, vs)):
        for dt, s in res.samples(i).items():
            assert s.X.shape[1] == len(v) and len(s.X) > 0
            assert np.all(np.isfinite(s.ref))
            want = reference_values(compile_mpmath(e, v), s.X, dt)
            np.testing.assert_array_equal(s.ref, want)
        for dt, s in res.check_samples(i).items():  # the shared check: same points as accept's own
            own = check_samples(e, v, None, (dt,))[dt] if len(v) == 2 else None
            want = reference_values(compile_mpmath(e, v), s.X, dt)
            np.testing.assert_array_equal(s.ref, want)
            if own is not None:  # two inputs, as the union: the very points accept draws itself
                np.testing.assert_array_equal(s.X, own.X)


def test_cheap_region_searches_on_its_own_sample(monkeypatch):
    """A region whose own 256-point sample is cheap against its budget share is searched as
    ``stabilize()`` alone searches it (the triage's 20/13 finite points of sqrt(x+1) - sqrt(x)'s
    derivative ranked a 2-ulp form first); the values are then within 1.58 bits of mpmath."""
    import symgrad.api.stabilize_pass as sp_pass
    import symgrad.stabilize as stab

    calls, orig = [], stab.stabilize

    def spy(expr, variables, **kw):
        calls.append(kw.get("samples"))
        return orig(expr, variables, **kw)

    monkeypatch.setattr(stab, "stabilize", spy)
    monkeypatch.setattr(sp_pass, "DEFAULT_BUDGET_S", 10.0)
    g = sg.grad(lambda v: np.sqrt(v + 1) - np.sqrt(v))
    X = np.array([9.96902888e-07, 6.54048561e-05, 5.12820513e+00])
    got = g(X)
    assert calls == [None]  # one region, on its own sample
    v = sp.Symbol("v", positive=True)
    want = reference_values(compile_mpmath(sp.diff(sp.sqrt(v + 1) - sp.sqrt(v), v), [v]), X[:, None], "float64")
    assert np.all(np.abs(got - want) <= 2 * np.spacing(np.abs(want))), (got, want)


@pytest.mark.parametrize("step, said", [("dd_region", "double-double region"),
                                        ("_regimes_per_dtype", "per-dtype regimes")])
def test_a_deadline_in_an_optional_step_keeps_the_checked_form(step, said, monkeypatch):
    """The steps after the never-worse check only refine its form: when the program's deadline cuts
    one, the checked form stands.  A cut double-double step once threw the sech^2 rewrite of GELU''
    away on a slower machine, leaving 0.0 for -5.7e-189.  Here the step is made to hit the deadline."""
    import symgrad.stabilize as stab
    from symgrad.stabilize.budget import StabilizeBudgetExceeded

    def spent(*args, **kwargs):
        raise StabilizeBudgetExceeded("the stabiliser's program budget is spent")
    monkeypatch.setattr(stab, step, spent)
    softplus = lambda x: np.log(1 + np.exp(x))  # noqa: E731 - its derivative exp(x)/(1 + exp(x)) is NaN past 710
    x = np.array([-800.0, -40.0, 0.5, 40.0, 800.0])
    want = [float(1 / (1 + mpmath.exp(-mpmath.mpf(v)))) for v in x]
    np.testing.assert_allclose(sg.grad(softplus, stabilize=30.0)(x), want, rtol=4e-16, atol=0)
    notes = sg.trace(softplus, 1.0).rewrites().notes
    assert any(f"budget spent before the optional {said} step(s); the checked form is kept" in n
               for n in notes), notes


def test_the_collector_is_paused_during_the_pass_and_restored(monkeypatch):
    """The budget is the thread's CPU time, so a full collection of a large heap inside the pass (0.6 s
    once, in a test session) was charged to the stabiliser: the collector is off during the pass and
    back as it was after, nested and from several threads alike."""
    import gc
    import threading

    import symgrad.stabilize.triage as triage_mod
    from symgrad.stabilize.budget import collector_paused

    seen = []
    real = triage_mod.triage

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)
    monkeypatch.setattr(triage_mod, "triage", spy)
    assert gc.isenabled()
    sg.trace(lambda x: np.log(1 + np.exp(x)) * x, 1.0).rewrites()
    assert seen == [False] and gc.isenabled()
    states = []

    def other_thread():
        with collector_paused():
            states.append(gc.isenabled())
    with collector_paused():
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert not gc.isenabled()  # the other thread's exit did not turn it back on
    assert states == [False] and gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def _qlog_prime(v):
    with mpmath.workprec(2500):  # the two terms of size 1/x cancel to -1: 1e-300 needs ~2100 bits
        v = mpmath.mpf(float(v))
        lp, lm = mpmath.log1p(v), mpmath.log1p(-v)
        return float(-1 / ((1 - v) * lp) - lm / ((1 + v) * lp**2))


def test_qlog_derivative_near_zero_at_the_default_budget():
    """d/dx log(1 - x)/log(1 + x) is -1 - x - ... near 0, where the formula as written cancels
    (0.11 at x = 1e-8).  At the default budget the search's own 256-point sample took a third of
    the budget, a series at infinity (useless: the function is finite on |x| < 1 only) another
    third, the never-worse check was cut, and the region kept that formula.  Now the search
    samples 64 points when 256 would cost too much and tries no series at infinity for bounded
    inputs, so the check runs: within 2 ulps at these points, and never worse than the formula
    as written at 300 points of (0.3, 0.999) and (-0.999, -0.3)."""
    gc.collect()
    g = sg.grad(lambda x: np.log(1 - x) / np.log(1 + x))
    near = np.array([1e-300, 1e-30, 1e-8, -1e-8, -1e-5, 0.01, -0.05, 0.1, 0.2, -0.25])
    want = np.array([_qlog_prime(v) for v in near])
    assert ulp_bits(g(near), want).max() <= np.log2(3) + 1e-9, g(near)
    far = np.concatenate([np.linspace(-0.999, -0.3, 150), np.linspace(0.3, 0.999, 150)])
    want = np.array([_qlog_prime(v) for v in far])
    written = -1 / ((1 - far) * np.log(1 + far)) - np.log(1 - far) / ((1 + far) * np.log(1 + far) ** 2)
    got_bits, written_bits = ulp_bits(g(far), want), ulp_bits(written, want)
    assert got_bits.mean() <= written_bits.mean() + 0.5
    assert np.all(got_bits[written_bits <= 1.0] <= np.log2(1 + 10))  # a few ulps, never the cancellation


class _Stopped(Exception):
    pass


def test_interrupted_past_stops_pure_python_work_at_the_cpu_deadline_and_leaks_nothing():
    """The guard of SymPy's series (which has no checkpoints): a busy loop is stopped once the
    thread has spent 0.05 s more CPU; a block that ends in time leaves no exception behind, and
    None is no bound."""
    import time

    from symgrad.stabilize.budget import cpu_clock, interrupted_past

    t0 = cpu_clock()
    with pytest.raises(_Stopped):
        with interrupted_past(t0 + 0.05, _Stopped):
            while cpu_clock() < t0 + 5.0:
                sum(range(1000))
    assert 0.05 <= cpu_clock() - t0 < 1.0
    for _ in range(20):  # short blocks next to their deadline: a late firing is cleared on the way out
        t = cpu_clock()
        with interrupted_past(t + 0.011, _Stopped):
            while cpu_clock() < t + 0.01:
                pass
        end = time.monotonic() + 0.05
        while time.monotonic() < end:  # bytecodes after the block: nothing raised here
            sum(range(100))
    with interrupted_past(None, _Stopped):
        assert sum(range(10)) == 45


_UNDER_A_PROFILER = """
import cProfile
from symgrad.stabilize.budget import cpu_clock, interrupted_past
class Stopped(Exception):
    pass
cProfile.Profile().enable()  # a C profile hook, as python -m cProfile and pyinstrument set
t0 = cpu_clock()
try:
    with interrupted_past(t0 + 0.05, Stopped):
        while cpu_clock() < t0 + 5.0:
            sum(range(1000))
except Stopped:
    pass
for _ in range(20):  # blocks that end next to their deadline: the late firing is taken on the way out
    t = cpu_clock()
    with interrupted_past(t + 0.011, Stopped):
        while cpu_clock() < t + 0.01:
            pass
    sum(range(100))
print("done", round(cpu_clock() - t0, 2))
"""


def test_interrupted_past_works_under_a_profile_hook():
    """Under a profile hook (``python -m cProfile``), clearing a pending asynchronous exception with
    ``PyThreadState_SetAsyncExc(tid, NULL)`` made CPython 3.11 re-enter one instruction forever: every
    ``sg.jit`` build whose series step was interrupted hung.  The block must end, in a child process
    so that a regression fails the test instead of hanging the run."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _UNDER_A_PROFILER], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("done"), done.stdout
