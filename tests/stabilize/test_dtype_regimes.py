"""Issue 19 point 2: a regime split stays in a dtype's kernel only where it gains in that dtype.

The Rosenbrock gradient's region ``c*(2*x1 - 2*x0**2)`` (``c`` the broadcast constant 100)
gets a three-way split on ``x1`` that gains about 0.4 bits in float32 and nothing in float64:
the float64 core computes the single form (no branch, SIMD-friendly), the float32 core keeps
the split.  Values are checked against mpmath and the generated module against the
interpreter and native tiers, per dtype.
"""
import importlib

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.api.build import build_kernel
from symgrad.api.stabilize_pass import stabilize_kernel
from symgrad.compile.cache import cache_key, load_module
from symgrad.compile.interpreter import tape_spec
from symgrad.compile.native import cached_tape, native_spec, save_tape
from symgrad.emit.module import emit_module
from symgrad.emit.tape import kernel_tape
from symgrad.runtime.gufunc import gufunc_call
from symgrad.stabilize import stabilize
from symgrad.stabilize.accuracy import make_sample, ulp_bits
from symgrad.stabilize.result import evaluate_result
from symgrad.stabilize.search import MIN_REGIME_GAIN
from symgrad.trace.trace import trace_program

dtype_regimes = importlib.import_module("symgrad.stabilize.dtype_regimes")

x1, c, x0 = sp.symbols("t1 t19 t2", real=True)
REGION = c * (2 * x1 - 2 * x0**2)  # the Rosenbrock gradient's region, as the kernel pass hands it over
VARS = [x1, c, x0]


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.fixture(scope="module")
def region_result():
    return stabilize(REGION, VARS, widen_float32=False)


def test_split_gaining_in_float32_only_stays_in_float32_only(region_result):
    res = region_result
    assert isinstance(res.form("float32"), sp.Piecewise)  # float32 keeps the split ...
    assert not res.form("float64").has(sp.Piecewise)  # ... float64 computes one formula
    assert res.form("float32") == res.expr and set(res.dtype_exprs) == {"float64"}
    rec = [r for r in res.records if r.name == "regime_not_in_float64"]
    assert len(rec) == 1 and set(rec[0].bits) == {"float64"}
    split_mean, _, single_mean, _ = rec[0].bits["float64"]
    assert single_mean < split_mean + MIN_REGIME_GAIN  # the split gained less than that in float64
    assert not [r for r in res.records if r.name == "regime_not_in_float32"]


def test_each_dtype_evaluates_its_own_form_with_unchanged_float32_accuracy(region_result):
    res = region_result
    split, single = res.form("float32"), res.form("float64")
    for dt in ("float64", "float32"):
        s = make_sample(REGION, VARS, dt, n=256, seed=5)  # a sample the search did not see
        got = res.evaluate(VARS, s.X, dt)
        mine = evaluate_result(res.form(dt), False, VARS, s.X, dt)
        assert np.array_equal(got, mine, equal_nan=True)
        b_split = ulp_bits(evaluate_result(split, False, VARS, s.X, dt), s.ref).mean()
        b_single = ulp_bits(evaluate_result(single, False, VARS, s.X, dt), s.ref).mean()
        if dt == "float32":  # the kernel's float32 values are the split's: its accuracy is kept
            assert ulp_bits(got, s.ref).mean() == b_split
            assert b_split <= b_single
        else:  # float64 gives up less than the regime threshold by dropping the branch
            assert ulp_bits(got, s.ref).mean() == b_single
            assert b_single <= b_split + MIN_REGIME_GAIN


def test_user_where_is_not_a_regime():
    x = sp.Symbol("x", real=True)
    orig = sp.Piecewise((sp.log(1 + sp.exp(x)), x > 0), (sp.Integer(0), True))
    form = sp.Piecewise((sp.log(1 + sp.exp(x)), x > 0), (sp.Integer(0), True))
    assert dtype_regimes.decide_regimes(orig, form, False, [x], None, ("float64", "float32")) == ({}, [])


def _exact_grad(x):
    """Rosenbrock's gradient at 60 digits, rounded once to float64."""
    with mpmath.workdps(60):
        v = [mpmath.mpf(float(t)) for t in x]
        g = [mpmath.mpf(0)] * len(v)
        for k in range(len(v) - 1):
            d = v[k + 1] - v[k] ** 2
            g[k] += -400 * v[k] * d - 2 * (1 - v[k])
            g[k + 1] += 200 * d
        return np.array([float(t) for t in g])


def test_rosenbrock_float64_kernel_has_no_branch_and_matches_the_closed_form(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    f = sg.grad(rosen, signature="(n)->()")
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.0, 2.0, 16)
    src = f.source(x)
    f64 = src[src.index("def rosen_grad_f64("):src.index("def rosen_grad_f64_batch(")]
    f32 = src[src.index("def rosen_grad_f32("):src.index("def rosen_grad_f32_batch(")]
    code64 = [ln for ln in f64.splitlines() if not ln.lstrip().startswith("#")]
    assert not any(" if " in ln or "np.where" in ln for ln in code64), "\n".join(code64)
    assert any(" if " in ln for ln in f32.splitlines())  # float32 keeps its split
    assert "regime_not_in_float64" in f64  # and the float64 core says why it has none
    exact = _exact_grad(x)
    got = f(x)
    # within a few ulps of the terms' magnitudes (the sum cancels: ulps of the result mean nothing there)
    scale = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    scale[:-1] += np.abs(400 * x[:-1] * d) + np.abs(2 * (1 - x[:-1]))
    scale[1:] += np.abs(200 * d) + 400 * x[:-1] ** 2
    assert np.all(np.abs(got - exact) <= 4 * np.finfo(np.float64).eps * scale)
    got32 = f(x.astype(np.float32))
    assert got32.dtype == np.float32
    assert np.all(np.abs(got32 - exact) <= 4 * np.finfo(np.float32).eps * scale)


def test_tiers_follow_the_per_dtype_regimes_bit_for_bit(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    p = trace_program(rosen, (np.zeros(9),), [(9,)])
    kd = build_kernel(p, "grad", [0]).kernel
    stabilize_kernel(p.graph, kd, 1.0)
    assert set(kd.dtype_nodes) == {"float32"}  # the float32 core computes other nodes
    tape = kernel_tape(p.graph, kd)
    assert tape is not None and tape.float32 is not None
    key = cache_key(p.fingerprint(), "dtype-regime-tier-test")
    save_tape(key, tape)
    again = cached_tape(key)
    assert again.float32 is not None and np.array_equal(again.float32.code, tape.float32.code)
    module = load_module(kd.name, key, emit_module(p.graph, [kd], ["dtype regime tier test"]))
    rng = np.random.default_rng(11)
    X = np.concatenate([rng.uniform(-3, 3, (40, 9)), rng.uniform(-1e-9, 1e-9, (4, 9)),
                        rng.uniform(-60, -20, (4, 9))])
    for dt in ("float64", "float32"):
        want = getattr(module, kd.name)(X.astype(dt))
        for spec in (tape_spec(kd.name, again), native_spec(kd.name, again, key)):
            got = gufunc_call(spec, (X.astype(dt),))
            assert got.dtype == want.dtype and np.array_equal(got, want), dt


def planck(x):
    return x**3 / (np.exp(x) - 1)


def test_widened_float32_core_with_its_own_regimes_is_bit_identical_on_every_tier(tmp_path, monkeypatch):
    """d/dx x^3/(e^x - 1): float64 keeps its series|formula split, the float32 core (computed in
    float64 and rounded once) does not need it; the native tier's widened float32 kernel runs the
    float32 tape in float64, not the float64 one."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    p = trace_program(planck, (0.5,), [()])
    kd = build_kernel(p, "grad", [0]).kernel
    stabilize_kernel(p.graph, kd, 6.0)  # room to finish on a loaded machine (CPU time grows under contention)
    assert kd.widen_float32 and set(kd.dtype_nodes) == {"float32"}
    assert [r.name for _, r in kd.rewrites if r.name.startswith("regime_not_in")] == ["regime_not_in_float32"]
    tape = kernel_tape(p.graph, kd)
    assert tape.float32 is not None and tape.float32.widen_float32
    key = cache_key(p.fingerprint(), "dtype-regime-widened-tier-test")
    module = load_module(kd.name, key, emit_module(p.graph, [kd], ["dtype regime widened tier test"]))
    src = emit_module(p.graph, [kd], ["t"])
    f64 = src[src.index(f"def {kd.name}_f64("):src.index(f"def {kd.name}_f64_batch(")]
    f32 = src[src.index(f"def {kd.name}_f32("):src.index(f"def {kd.name}_f32_batch(")]
    assert " if " in f64 and " if " not in f32 and "np.float64(x)" in f32
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.uniform(-80, 80, 200), 10.0 ** rng.uniform(-9, 2, 200), [0.0, -0.0, 1e-300]])
    for dt in ("float64", "float32"):
        want = getattr(module, kd.name)(X.astype(dt))
        for spec in (tape_spec(kd.name, tape), native_spec(kd.name, tape, key)):
            got = gufunc_call(spec, (X.astype(dt),))
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), dt
            assert np.array_equal(np.signbit(got), np.signbit(want))
