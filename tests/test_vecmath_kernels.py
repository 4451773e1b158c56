"""Generated kernels call symgrad.emit.vecmath through prelude helpers (issue 19, point 2).

On by default (``SYMGRAD_VECMATH`` unset or ``1``); ``0`` gives the libm calls, and the setting is part
of the module cache key.  Generated modules import the functions from symgrad.emit.vecmath (compiled
once per process, cached by Numba); standalone modules (``symgrad compile``) copy their text.  Kernel values are checked against 50-digit mpmath within 1 ulp of the
kernel's dtype, and the batch loop of an elementwise kernel with a regime split is checked
to vectorise (its LLVM IR holds vector arithmetic).
"""
from __future__ import annotations

import re
import sys

import mpmath
import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.cache import cache_key
from symgrad.emit.prelude import vecmath_enabled


def softplus(x):
    return np.log(1 + np.exp(x))


def lse(x, y):
    return np.log(np.exp(x) + np.exp(y))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    return tmp_path


def _newest_module(entry: str):
    """The generated module loaded last that defines ``entry``."""
    return next(m for n, m in reversed(list(sys.modules.items()))
                if n.startswith("symgrad_generated.") and hasattr(m, entry))


def test_kernels_call_vecmath_by_default_and_libm_when_switched_off(monkeypatch):
    for setting in ("1", None):
        if setting is None:
            monkeypatch.delenv("SYMGRAD_VECMATH", raising=False)
        else:
            monkeypatch.setenv("SYMGRAD_VECMATH", setting)
        src = sg.trace(softplus, 0.5).source("grad")
        assert "_vm_sigmoid_f64(x)" in src and "_vm_sigmoid_f32(x)" in src, src
        assert "sigmoid_f64 as _vm_sigmoid_f64," in src and "from symgrad.emit.vecmath import (" in src
        assert "def _vm_sigmoid_f64(" not in src and "def _sigmoid(" not in src
    monkeypatch.setenv("SYMGRAD_VECMATH", "0")
    src = sg.trace(softplus, 0.5).source("grad")
    assert "_sigmoid(x)" in src and "_vm_" not in src, src


def test_standalone_modules_copy_the_vecmath_text(tmp_path):
    from symgrad import aot

    built = aot.build([aot.Target(softplus, (0.5,))], ("grad",), stabilize=True)
    text = aot.module_source(built)
    assert "def _vm_sigmoid_f64(" in text and "symgrad.emit.vecmath" not in text.replace("# ---- library", "")
    path = aot.write(tmp_path / "softplus_aot.py", text)
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    x = np.linspace(-40.0, 40.0, 81)
    np.testing.assert_allclose(ns["softplus_grad"](x), 1 / (1 + np.exp(-x)), rtol=1e-15, atol=0)


def test_switch_is_part_of_the_cache_key(monkeypatch):
    monkeypatch.setenv("SYMGRAD_VECMATH", "1")
    on = cache_key("same parts")
    monkeypatch.setenv("SYMGRAD_VECMATH", "0")
    off = cache_key("same parts")
    monkeypatch.delenv("SYMGRAD_VECMATH")
    assert on != off and cache_key("same parts") == on


def test_switching_builds_a_new_module(monkeypatch, fresh_cache):
    x = np.linspace(-50.0, 50.0, 101)
    sources = []
    for setting in ("1", "0"):
        monkeypatch.setenv("SYMGRAD_VECMATH", setting)
        g = sg.grad(softplus)
        np.testing.assert_allclose(g(x), 1 / (1 + np.exp(-x)), rtol=1e-15, atol=0)
        sources.append(g.source(x))
        assert ("_vm_sigmoid_f64" in sources[-1]) == (setting == "1")
    assert sources[0] != sources[1]


@pytest.mark.parametrize("bad", ["yes", "2", "off"])
def test_bad_switch_value_is_a_value_error(monkeypatch, bad):
    monkeypatch.setenv("SYMGRAD_VECMATH", bad)
    with pytest.raises(ValueError, match="SYMGRAD_VECMATH must be 1"):
        vecmath_enabled()


def _ulps(y, exact, dtype):
    """|y - exact| in ulps of ``dtype`` at ``exact`` (exact: list of mpf); subnormal spacing below, inf as 2^maxexp."""
    fi = np.finfo(dtype)
    out = []
    for v, e in zip(y, exact):
        if mpmath.isnan(e):
            out.append(0.0 if np.isnan(v) else np.inf)
            continue
        if mpmath.isinf(e):
            out.append(0.0 if v == e else np.inf)
            continue
        # an overflow to inf counts as 2^maxexp (within 1 ulp only if the exact value rounds to inf or max)
        big = mpmath.ldexp(1, fi.maxexp)
        vv = big * int(np.sign(v)) if np.isinf(v) else mpmath.mpf(float(v))
        e = max(min(e, big), -big)
        ex = int(mpmath.floor(mpmath.log(abs(e), 2))) if e != 0 else fi.minexp
        ulp = mpmath.ldexp(1, min(max(ex, fi.minexp), fi.maxexp - 1) - fi.nmant)
        out.append(float(abs(vv - e) / ulp))
    return np.array(out)


def _points(dtype):
    rng = np.random.default_rng(19)
    fi = np.finfo(dtype)
    pts = np.concatenate([rng.normal(0.0, 30.0, 300), rng.uniform(-3, 3, 200), [0.0, -0.0, 1e-30, -1e-30],
                          [float(fi.smallest_subnormal), -float(fi.smallest_subnormal)], [-700.0, -100.0, 80.0, 700.0],
                          [np.inf, -np.inf, np.nan]])
    with np.errstate(over="ignore"):
        return pts.astype(dtype)


KERNELS = {
    "exp": (lambda x: np.exp(x), mpmath.exp),
    "expm1": (lambda x: np.expm1(x), mpmath.expm1),
    "log": (lambda x: np.log(np.abs(x)), lambda v: mpmath.log(abs(v)) if v != 0 else -mpmath.inf),
    "log1p": (lambda x: np.log1p(np.abs(x)), lambda v: mpmath.log1p(abs(v))),
    "tanh": (lambda x: np.tanh(x), mpmath.tanh),
    "softplus": (softplus, lambda v: mpmath.log1p(mpmath.exp(v))),
    "sin": (lambda x: np.sin(x), mpmath.sin),
    "cos": (lambda x: np.cos(x), mpmath.cos),
}


def _mp(f, v):
    """f at the float v in 50-digit mpmath (NaN -> NaN; mpmath's exp/tanh/log1p handle +-inf;
    sin and cos of +-inf are NaN)."""
    if np.isnan(v) or np.isinf(v) and f in (mpmath.sin, mpmath.cos):
        return mpmath.nan
    with mpmath.workdps(50):
        return f(mpmath.mpf(float(v)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_compiled_kernels_within_one_ulp_of_mpmath(name, dtype, monkeypatch):
    """sg.jit of each elementwise function (the stabiliser may rewrite it, e.g. to softplus)."""
    monkeypatch.setenv("SYMGRAD_VECMATH", "1")
    fn, ref = KERNELS[name]
    x = _points(dtype)
    x = x[np.isfinite(x)] if name in ("softplus", "log", "log1p") else x
    with np.errstate(all="ignore"):
        y = sg.jit(fn)(x)
    assert y.dtype == dtype
    exact = [_mp(ref, v) for v in x]
    err = _ulps(y, exact, dtype)
    worst = int(np.argmax(err))
    assert err[worst] <= 1.0, f"{name}({x[worst]!r}) = {y[worst]!r}: {err[worst]:.3f} ulp"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sigmoid_gradient_kernel_within_one_ulp(dtype, monkeypatch):
    monkeypatch.setenv("SYMGRAD_VECMATH", "1")
    x = _points(dtype)
    x = x[np.isfinite(x)]
    y = sg.grad(softplus)(x)
    exact = [_mp(lambda v: 1 / (1 + mpmath.exp(-v)), v) for v in x]
    assert _ulps(y, exact, dtype).max() <= 1.0


def _batch_ir(fn_name, kernel):
    return list(getattr(_newest_module(fn_name), kernel).inspect_llvm().values())[0]


def mish(x):
    return x * np.tanh(np.log1p(np.exp(x)))


def test_regime_split_kernel_loop_vectorises(monkeypatch, fresh_cache):
    """mish's gradient has a regime split (a conditional expression); with the vecmath helpers every
    side is branch-free arithmetic, so LLVM if-converts the conditional and vectorises the batch loop.
    With libm calls (SYMGRAD_VECMATH=0) it cannot: the calls stay scalar."""
    monkeypatch.setenv("SYMGRAD_VECMATH", "1")
    x = np.random.default_rng(0).normal(0.0, 3.0, 64)
    g = sg.grad(mish)
    g(x)
    src = sg.trace(mish, 0.0).source("grad")
    assert re.search(r" if .* else ", src), "the kernel no longer has a regime split; pick another example"
    assert re.search(r"<\d+ x double>", _batch_ir("mish_grad", "mish_grad_f64_batch"))
    monkeypatch.setenv("SYMGRAD_VECMATH", "0")

    def mish_libm(x):
        return x * np.tanh(np.log1p(np.exp(x)))
    g0 = sg.grad(mish_libm)
    np.testing.assert_allclose(g0(x), g(x), rtol=1e-14, atol=1e-300)
    assert not re.search(r"fmul <\d+ x double>", _batch_ir("mish_libm_grad", "mish_libm_grad_f64_batch"))


def sin_cos(x):
    return np.sin(x) * np.cos(x)


def test_sin_cos_kernel_loop_vectorises_and_matches_mpmath(monkeypatch, fresh_cache):
    """The batch loop over np.sin(x) * np.cos(x) holds vector arithmetic and no scalar sin/cos calls
    with the vecmath helpers; with libm calls (SYMGRAD_VECMATH=0) it holds the scalar calls.  Values:
    within 1.5 ulp of mpmath (two results within 1 ulp each and one rounded product), huge
    arguments and points next to multiples of pi/2 included."""
    monkeypatch.setenv("SYMGRAD_VECMATH", "1")
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0.0, 30.0, 60), [np.pi / 2, np.pi, 1e22, 1e300, 6381956970095103 * 2.0 ** 797]])
    f = sg.jit(sin_cos)
    y = f(x)
    assert "_vm_sin_f64(" in f.source(x) and "_vm_cos_f64(" in f.source(x)
    ir = _batch_ir("sin_cos_jit", "sin_cos_jit_f64_batch")
    assert re.search(r"<\d+ x double>", ir) and not re.search(r"call .*@(llvm\.)?(sin|cos)(\.f64)?\(", ir)
    exact = [_mp(lambda v: mpmath.sin(v) * mpmath.cos(v), v) for v in x]
    assert _ulps(y, exact, np.float64).max() <= 1.5
    monkeypatch.setenv("SYMGRAD_VECMATH", "0")

    def sin_cos_libm(x):
        return np.sin(x) * np.cos(x)
    sg.jit(sin_cos_libm)(x)  # values not checked: glibc's cos is 8 ulp off at 6381956970095103 2^797
    assert re.search(r"call .*@(llvm\.)?(sin|cos)(\.f64)?\(", _batch_ir("sin_cos_libm_jit", "sin_cos_libm_jit_f64_batch"))
