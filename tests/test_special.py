"""Table-driven checks of the scipy.special and piecewise primitives (symgrad/ir/rules/special.py).

To keep Numba compilations few, all unary ops are applied in one traced function
(each to an affine map of the input into its domain) and all binary ops in
another; one jit, one jvp and one vjp kernel per group.  Checks per op:

(a) compiled value vs scipy.special / NumPy in float64, and once in float32;
(b) the derivative (jvp) vs ``mpmath.diff`` of an independent mpmath formula at 30 digits;
(c) the derivative vs ``jax.grad`` in x64 where jax.scipy.special has the function;
(d) the dot-product identity <w, J v> = <J^T w, v> between jvp and vjp;
and the kink conventions of the op blocks, at the kinks, against JAX.
Everything runs with ``stabilize=False``: these test the rules, not the rewrites.
"""
import mpmath
import numpy as np
import pytest
import scipy.special as ss

import symgrad as sg
from symgrad.errors import UnsupportedOperationError

T = np.array([0.03, 0.17, 0.31, 0.5, 0.62, 0.77, 0.96])  # sample positions in each op's interval

# name: (traced call, interval, mpmath reference, jax.scipy.special / jax.numpy name or None)
UNARY = {
    "erfc": (ss.erfc, (-3.0, 5.0), mpmath.erfc, "erfc"),
    "erfcx": (ss.erfcx, (-2.0, 6.0), lambda u: mpmath.exp(u * u) * mpmath.erfc(u), "erfcx"),
    "ndtr": (ss.ndtr, (-10.0, 5.0), mpmath.ncdf, "ndtr"),
    "log_ndtr": (ss.log_ndtr, (-40.0, 5.0), lambda u: mpmath.log(mpmath.ncdf(u)), "log_ndtr"),
    "ndtri": (ss.ndtri, (1e-3, 0.999), lambda p: mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1), "ndtri"),
    "erfinv": (ss.erfinv, (-0.99, 0.99), mpmath.erfinv, "erfinv"),
    "erfcinv": (ss.erfcinv, (0.01, 1.99), lambda u: mpmath.erfinv(1 - u), None),
    "gammaln": (ss.gammaln, (0.1, 30.0), mpmath.loggamma, "gammaln"),
    "gamma": (ss.gamma, (0.2, 10.0), mpmath.gamma, "gamma"),
    "digamma": (ss.digamma, (0.2, 20.0), mpmath.digamma, "digamma"),
    "logit": (ss.logit, (0.01, 0.99), lambda p: mpmath.log(p / (1 - p)), "logit"),
    "expit": (ss.expit, (-30.0, 30.0), lambda u: 1 / (1 + mpmath.exp(-u)), "expit"),
    "log_expit": (ss.log_expit, (-30.0, 30.0), lambda u: -mpmath.log1p(mpmath.exp(-u)), None),
    "entr": (ss.entr, (0.05, 5.0), lambda u: -u * mpmath.log(u), "entr"),
    "i0": (ss.i0, (-5.0, 5.0), lambda u: mpmath.besseli(0, u), "i0"),
    "i1": (ss.i1, (-5.0, 5.0), lambda u: mpmath.besseli(1, u), "i1"),
    "i0e": (ss.i0e, (-5.0, 5.0), lambda u: mpmath.exp(-abs(u)) * mpmath.besseli(0, u), "i0e"),
    "i1e": (ss.i1e, (-5.0, 5.0), lambda u: mpmath.exp(-abs(u)) * mpmath.besseli(1, u), "i1e"),
    "cbrt": (np.cbrt, (-8.0, 7.5), lambda u: mpmath.sign(u) * mpmath.cbrt(abs(u)), "jnp.cbrt"),
    "exp2": (np.exp2, (-20.0, 20.0), lambda u: mpmath.power(2, u), "jnp.exp2"),
    "log2": (np.log2, (0.01, 100.0), lambda u: mpmath.log(u, 2), "jnp.log2"),
    "log10": (np.log10, (0.01, 100.0), lambda u: mpmath.log(u, 10), "jnp.log10"),
    "arccosh": (np.arccosh, (1.001, 50.0), mpmath.acosh, "jnp.arccosh"),
    "arctanh": (np.arctanh, (-0.99, 0.99), mpmath.atanh, "jnp.arctanh"),
    "floor": (np.floor, (-3.3, 3.1), mpmath.floor, "jnp.floor"),
    "ceil": (np.ceil, (-3.3, 3.1), mpmath.ceil, "jnp.ceil"),
    "trunc": (np.trunc, (-3.3, 3.1), lambda u: mpmath.floor(u) if u >= 0 else mpmath.ceil(u), "jnp.trunc"),
    "rint": (np.rint, (-3.3, 3.1), mpmath.nint, "jnp.rint"),
}
U_NAMES = sorted(UNARY)

# name: (traced call, interval of x, interval of y, mpmath reference, jax name or None)
BINARY = {
    "xlogy": (ss.xlogy, (-2.0, 2.0), (0.1, 5.0), lambda x, y: x * mpmath.log(y), "xlogy"),
    "xlog1py": (ss.xlog1py, (-2.0, 2.0), (-0.9, 5.0), lambda x, y: x * mpmath.log1p(y), "xlog1py"),
    "beta": (ss.beta, (0.2, 10.0), (0.3, 12.0), mpmath.beta, "beta"),
    "betaln": (ss.betaln, (0.2, 10.0), (0.3, 12.0), lambda a, b: mpmath.log(mpmath.beta(a, b)), "betaln"),
    "rel_entr": (ss.rel_entr, (0.1, 5.0), (0.2, 4.0), lambda x, y: x * mpmath.log(x / y), "rel_entr"),
    "kl_div": (ss.kl_div, (0.1, 5.0), (0.2, 4.0), lambda x, y: x * mpmath.log(x / y) - x + y, "kl_div"),
    "huber": (ss.huber, (0.5, 2.0), (-4.0, 4.0),
              lambda d, r: r * r / 2 if abs(r) <= d else d * (abs(r) - d / 2), None),
    "mod": (np.mod, (-5.0, 4.6), (0.7, 2.0), lambda a, b: a - b * mpmath.floor(a / b), "jnp.mod"),
    "fmod": (np.fmod, (-5.0, 4.6), (0.7, 2.0), lambda a, b: mpmath.fmod(a, b) if a >= 0 else -mpmath.fmod(-a, b),
             "jnp.fmod"),
    "heaviside": (np.heaviside, (-1.0, 0.9), (0.0, 1.0), lambda x, h: 0 if x < 0 else 1, None),
}
B_NAMES = sorted(BINARY)


def _map(interval, t):
    lo, hi = interval
    return lo + (hi - lo) * t, hi - lo


def unary_all(x):
    """Every unary op, each on its own affine map of x (x in [0, 1])."""
    return tuple(UNARY[n][0](UNARY[n][1][0] + (UNARY[n][1][1] - UNARY[n][1][0]) * x) for n in U_NAMES)


def binary_all(x, y):
    """Every binary op, on affine maps of x and y (both in [0, 1])."""
    return tuple(BINARY[n][0](BINARY[n][1][0] + (BINARY[n][1][1] - BINARY[n][1][0]) * x,
                              BINARY[n][2][0] + (BINARY[n][2][1] - BINARY[n][2][0]) * y) for n in B_NAMES)


def _ref_value(name, *args):
    fn = UNARY[name][0] if name in UNARY else BINARY[name][0]
    return fn(*args)


def _mp_derivative(f, args, i):
    with mpmath.workdps(30):
        pt = [mpmath.mpf(float(a)) for a in args]

        def along(t):
            q = list(pt)
            q[i] += t
            return f(*q)
        return float(mpmath.diff(along, 0))


def _as_accurate_as_jax(ours, jax_vals, exact, what):
    """Equal to JAX x64's derivative, or closer to the 30-digit value where they differ
    (JAX's expit' cancels for x >> 1, its i0'(0) is 1 instead of 0, its log_ndtr' and
    betaln' lose digits)."""
    err_ours, err_jax = np.abs(ours - exact), np.abs(jax_vals - exact)
    ok = (err_ours <= err_jax + 1e-13 * np.abs(exact)) | np.isclose(ours, jax_vals, rtol=1e-13, atol=0)
    assert ok.all(), f"{what}: symgrad {ours[~ok]} vs JAX {jax_vals[~ok]}, exact {exact[~ok]}"


def _jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.special as js
    return getattr(jnp, name[4:]) if name.startswith("jnp.") else getattr(js, name), jax


@pytest.fixture(scope="module")
def unary_results():
    y = sg.jit(unary_all, stabilize=False)(T)
    _, ydot = sg.jvp(unary_all, (T,), (np.ones_like(T),), stabilize=False)
    return dict(zip(U_NAMES, y)), dict(zip(U_NAMES, ydot))


@pytest.fixture(scope="module")
def binary_results():
    ty = T[::-1].copy()
    vals = sg.jit(binary_all, stabilize=False)(T, ty)
    _, dx = sg.jvp(binary_all, (T, ty), (np.ones_like(T), np.zeros_like(T)), stabilize=False)
    _, dy = sg.jvp(binary_all, (T, ty), (np.zeros_like(T), np.ones_like(T)), stabilize=False)
    return ty, dict(zip(B_NAMES, vals)), dict(zip(B_NAMES, dx)), dict(zip(B_NAMES, dy))


@pytest.mark.parametrize("name", U_NAMES)
def test_unary_value_and_derivative(name, unary_results):
    vals, dots = unary_results
    u, scale = _map(UNARY[name][1], T)
    np.testing.assert_allclose(vals[name], _ref_value(name, u), rtol=2e-15, atol=0, err_msg=name)
    ref = np.array([_mp_derivative(UNARY[name][2], [ui], 0) for ui in u]) * scale
    np.testing.assert_allclose(dots[name], ref, rtol=1e-13, atol=1e-300, err_msg=name)
    if UNARY[name][3]:
        jf, jax = _jax(UNARY[name][3])
        jref = np.array([float(jax.grad(jf)(float(ui))) for ui in u]) * scale
        _as_accurate_as_jax(dots[name], jref, ref, name)


@pytest.mark.parametrize("name", B_NAMES)
def test_binary_value_and_partials(name, binary_results):
    ty, vals, dx, dy = binary_results
    x, sx = _map(BINARY[name][1], T)
    y, sy = _map(BINARY[name][2], ty)
    np.testing.assert_allclose(vals[name], _ref_value(name, x, y), rtol=2e-15, atol=1e-300, err_msg=name)
    f = BINARY[name][3]
    for got, i, s in ((dx[name], 0, sx), (dy[name], 1, sy)):
        ref = np.array([_mp_derivative(f, [a, b], i) for a, b in zip(x, y)]) * s
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-300, err_msg=f"{name} partial {i}")
    if BINARY[name][4]:
        jf, jax = _jax(BINARY[name][4])
        for got, i, s in ((dx[name], 0, sx), (dy[name], 1, sy)):
            jref = np.array([float(jax.grad(jf, argnums=i)(float(a), float(b))) for a, b in zip(x, y)]) * s
            ref = np.array([_mp_derivative(f, [a, b], i) for a, b in zip(x, y)]) * s
            _as_accurate_as_jax(got, jref, ref, f"{name} partial {i}")


def test_jvp_vjp_dot_product():
    """<w, J v> = <J^T w, v> for both groups (one random w per output, one v per input)."""
    rng = np.random.default_rng(14)
    for fn, nin in ((unary_all, 1), (binary_all, 2)):
        args = tuple(rng.uniform(0.05, 0.95, 5) for _ in range(nin))
        v = tuple(rng.standard_normal(5) for _ in range(nin))
        _, jv = sg.jvp(fn, args, v, stabilize=False)
        w = tuple(rng.standard_normal(5) for _ in jv)
        _, vjp_fn = sg.vjp(fn, *args, stabilize=False)
        bars = vjp_fn(w)
        bars = bars if isinstance(bars, tuple) else (bars,)
        lhs = sum(float(np.dot(wi, ji)) for wi, ji in zip(w, jv))
        rhs = sum(float(np.dot(b, vi)) for b, vi in zip(bars, v))
        assert lhs == pytest.approx(rhs, rel=1e-12)


def test_float32_values_round_once(unary_results):
    """float32 kernels compute these in float64 and round once (SciPy's double versions)."""
    t32 = T.astype(np.float32)
    vals32 = sg.jit(unary_all, stabilize=False)(t32)
    for name, v in zip(U_NAMES, vals32):
        assert v.dtype == np.float32, name
        lo, hi = UNARY[name][1]
        u = (np.float32(lo) + np.float32(hi - lo) * t32).astype(np.float64)  # as the float32 kernel maps x
        np.testing.assert_allclose(v, _ref_value(name, u).astype(np.float32), rtol=4e-6, err_msg=name)


def test_second_derivatives_use_polygamma():
    """gammaln'' = polygamma(1, x) and digamma'' = polygamma(2, x): the _polygamma helper."""
    x = np.array([0.3, 1.0, 2.5, 7.0, 40.0])
    h1 = sg.hessian(ss.gammaln, stabilize=False)(x)
    np.testing.assert_allclose(h1, ss.polygamma(1, x), rtol=1e-14)
    h2 = sg.hessian(ss.digamma, stabilize=False)(x)
    np.testing.assert_allclose(h2, ss.polygamma(2, x), rtol=1e-13)
    with mpmath.workdps(30):
        assert h2[0] == pytest.approx(float(mpmath.polygamma(2, 0.3)), rel=1e-14)


def kinks(x):
    return (np.hypot(x, 0.0), np.sqrt(x * x), ss.i1(x), ss.i1e(x), ss.i0e(x), np.floor(x), np.cbrt(x),
            ss.entr(x), ss.xlogy(x, x), ss.rel_entr(x, 1.0 + x), ss.kl_div(x, 1.0 + x))


def test_kinks_are_finite_documented_and_as_jax():
    _, d = sg.jvp(kinks, (np.zeros(1),), (np.ones(1),), stabilize=False)
    d = [float(v[0]) for v in d]
    # hypot(x, 0) and sqrt(x*x) at 0: 0, as symgrad's abs'(0) = 0 (README kink list)
    # i1, i1e: 1/2; i0e: 0; floor: 0; cbrt: +inf; entr: +inf (JAX gives the same)
    assert d[:7] == [0.0, 0.0, 0.5, 0.5, 0.0, 0.0, np.inf]
    assert d[7] == np.inf
    # xlogy(x, x) at 0: x-partial log(0) = -inf, y-partial 0 (the function is 0 for every y at x = 0)
    assert d[8] == -np.inf
    # rel_entr(x, 1 + x) at 0: 0 + 0; kl_div(x, 1 + x) at 0: -1 + 1 (JAX: (0, 0) and (-1, 1))
    assert d[9] == 0.0 and d[10] == 0.0
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.special as js
    assert float(jax.grad(js.i1)(0.0)) == 0.5 and float(jax.grad(js.i1e)(0.0)) == 0.5
    assert float(jax.grad(js.rel_entr, argnums=0)(0.0, 1.0)) == 0.0
    assert float(jax.grad(js.kl_div, argnums=0)(0.0, 1.0)) == -1.0


def test_grad_of_hypot_and_sqrt_square_is_finite_at_zero():
    g = sg.grad(lambda x: np.hypot(x, 0.0))
    assert g(0.0) == 0.0 and g(-2.0) == -1.0
    assert sg.grad(lambda x: np.sqrt(x**2))(0.0) == 0.0


def test_arccosh_arctanh_are_accurate_primitives():
    """The old composites log(x + sqrt(x*x - 1)) and 0.5*(log1p(x) - log1p(-x)) lost digits."""
    f = sg.jit(lambda x: np.arccosh(x))
    x = np.array([1 + 1e-15, 1.5, 22000.0, 1e200])
    np.testing.assert_allclose(f(x), np.arccosh(x), rtol=2e-15)
    g = sg.grad(lambda x: np.arccosh(x))
    with mpmath.workdps(30):
        ref = [float(1 / mpmath.sqrt(mpmath.mpf(v) ** 2 - 1)) for v in x]
    np.testing.assert_allclose(g(x), ref, rtol=4e-15)


def test_unsupported_scipy_ufunc_names_the_call():
    with pytest.raises(UnsupportedOperationError, match=r"scipy\.special\.struve"):
        sg.jit(lambda x: ss.struve(0.0, x))(1.0)


def test_logaddexp_reduce_is_the_logsumexp_spelling():
    def lse(v):
        return np.logaddexp.reduce(v)
    f = sg.value_and_grad(lse, signature="(n)->()")
    v = np.array([1000.0, 999.0, -5.0, 998.5])
    val, g = f(v)
    assert val == pytest.approx(float(ss.logsumexp(v)), rel=1e-15)
    np.testing.assert_allclose(g, ss.softmax(v), rtol=1e-13, atol=1e-300)


# scipy.special.logsumexp, softmax, log_softmax and polygamma (Python functions, not ufuncs):
# tests/test_scipy_reductions.py


def test_quantile_references_are_fast_and_accurate_in_the_tails():
    """The stabiliser's references for ndtri, erfinv and erfcinv (symgrad.ir.rules.special): Newton
    on log Phi, not mpmath's erfinv, whose findroot took minutes near +-1 at high precision (the
    gradient of ndtri(expit(x)) never finished).  Checked by the defining identity at 700 bits
    (Phi(z) = p to the working precision, relative to the tail probability), against mpmath's
    erfinv where it is quick, and, in a child process bounded in time, through the public call."""
    import subprocess
    import sys

    from symgrad.ir.rules.special import _mp_erfcinv, _mp_erfinv, _mp_ndtri

    with mpmath.workprec(700):
        for p in [mpmath.mpf(2) ** -3000, mpmath.mpf(1e-300), mpmath.mpf(0.3), 1 - mpmath.mpf(2) ** -600]:
            z = _mp_ndtri(p)
            tail = min(p, 1 - p)
            assert abs(mpmath.ncdf(z) - p) <= tail * mpmath.mpf(2) ** -680
        assert _mp_ndtri(mpmath.mpf(0.5)) == 0
    with mpmath.workdps(40):
        for y in (-0.999999, -0.3, 0.2, 0.9999999999):
            assert abs(_mp_erfinv(y) - mpmath.erfinv(y)) <= abs(mpmath.erfinv(y)) * mpmath.mpf(10) ** -38
        for x in (1e-200, 0.01, 1.5, 1.9999999):
            assert abs(mpmath.erfc(_mp_erfcinv(x)) - x) <= min(x, 2 - x) * mpmath.mpf(10) ** -38
    code = ("import numpy as np, scipy.special as ss, symgrad as sg\n"
            "x = np.array([0.3, -1.2, 0.5, 2.0])\n"
            "g = sg.grad(lambda x: np.sum(ss.ndtri(ss.expit(x))))(x)\n"
            "p = ss.expit(x)\n"
            "want = p * (1 - p) * np.sqrt(2 * np.pi) * np.exp(ss.ndtri(p) ** 2 / 2)\n"
            "assert np.allclose(g, want, rtol=1e-12, atol=0), (g, want)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
