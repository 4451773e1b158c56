"""Table-driven checks of every differentiable elementwise primitive in ``symgrad.ir.ops.REGISTRY``.

For each op one function is traced (applying the NumPy ufunc, or the IR op
directly when NumPy has no ufunc), compiled once, and evaluated on 20 points
at once via broadcasting.  Checks:

(a) the dot-product test <w, J v> = <J^T w, v> between ``jvp`` and ``vjp``;
(b) a central finite difference in a random direction (coarse);
(c) each partial derivative against ``mpmath.diff`` at 50 digits.

Points are sampled in each op's declared ``domain`` and kept away from kinks.
Everything here runs with ``stabilize=False`` so the derivative *rules* are
tested, independent of the expression-rewriting pass (which the other test
files exercise through the default path).
"""
import zlib

import mpmath
import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.ops import REGISTRY

NPTS = 20

mp = mpmath.mp


def _sigmoid_mp(a):
    return 1 / (1 + mpmath.exp(-a))


def _max_mp(a, b):
    return a if a >= b else b


def _min_mp(a, b):
    return a if a <= b else b


# op name -> (how to apply it while tracing, mpmath reference of the value)
NUMPY = {
    "add": (np.add, lambda a, b: a + b),
    "sub": (np.subtract, lambda a, b: a - b),
    "mul": (np.multiply, lambda a, b: a * b),
    "div": (np.divide, lambda a, b: a / b),
    "neg": (np.negative, lambda a: -a),
    "pow": (np.power, lambda a, b: a ** b),
    "exp": (np.exp, mpmath.exp),
    "log": (np.log, mpmath.log),
    "log1p": (np.log1p, mpmath.log1p),
    "expm1": (np.expm1, mpmath.expm1),
    "sqrt": (np.sqrt, mpmath.sqrt),
    "sin": (np.sin, mpmath.sin),
    "cos": (np.cos, mpmath.cos),
    "tan": (np.tan, mpmath.tan),
    "arcsin": (np.arcsin, mpmath.asin),
    "arccos": (np.arccos, mpmath.acos),
    "arctan": (np.arctan, mpmath.atan),
    "sinh": (np.sinh, mpmath.sinh),
    "cosh": (np.cosh, mpmath.cosh),
    "tanh": (np.tanh, mpmath.tanh),
    "arcsinh": (np.arcsinh, mpmath.asinh),
    "abs": (np.abs, mpmath.fabs),
    "sign": (np.sign, mpmath.sign),
    "maximum": (np.maximum, _max_mp),
    "minimum": (np.minimum, _min_mp),
    "logaddexp": (np.logaddexp, lambda a, b: mpmath.log(mpmath.exp(a) + mpmath.exp(b))),
    "hypot": (np.hypot, mpmath.hypot),
    "arctan2": (np.arctan2, mpmath.atan2),
}

# ops with no NumPy ufunc: applied as IR primitives through the tracer
IR_ONLY = {
    "erf": mpmath.erf,
    "sigmoid": _sigmoid_mp,
    "softplus": lambda a: mpmath.log(1 + mpmath.exp(a)),
    "bd0": lambda a, b: a * mpmath.log(a / b) + b - a,  # Loader's deviance term
    "erfcx_prime": lambda a: 2 * a * mpmath.exp(a * a) * mpmath.erfc(a) - 2 / mpmath.sqrt(mpmath.pi),  # erfcx'
}

# ops whose derivative is zero by definition, not the derivative of their value
ZERO_DERIVATIVE = {"stop_gradient": lambda a: a}

EXCLUDED = {"where": "tested separately (boolean condition argument)",
            "dd_region": "tests/stabilize/test_ddregion.py (a program parameter, any number of arguments)"}
# the special-function and piecewise ops: table-driven in tests/test_special.py, grouped per kernel
EXCLUDED.update({n: "tests/test_special.py" for n in (
    "erfc", "erfcx", "ndtr", "log_ndtr", "ndtri", "erfinv", "erfcinv", "digamma", "polygamma", "gammaln",
    "gamma", "beta", "betaln", "xlogy", "xlog1py", "logit", "entr", "rel_entr", "kl_div", "huber", "i0", "i1",
    "i0e", "i1e", "cbrt", "exp2", "log2", "log10", "arccosh", "arctanh", "floor", "ceil", "trunc", "rint",
    "heaviside", "mod", "fmod", "j0", "j1", "y0", "y1", "k0", "k1", "k0e", "k1e", "jv", "yv", "iv", "kv", "ive",
    "kve", "gammainc", "gammaincc", "rgamma", "binom", "exp1", "expi", "spence", "dawsn")})


def _differentiable_elementwise():
    return sorted(n for n, op in REGISTRY.items() if op.elementwise and not op.nondiff and n not in EXCLUDED)


OPS = _differentiable_elementwise()


def test_every_elementwise_op_has_a_reference():
    """A newly registered elementwise op must be added to the tables above (no silent gaps)."""
    missing = [n for n in OPS if n not in NUMPY and n not in IR_ONLY and n not in ZERO_DERIVATIVE]
    assert not missing, f"no test reference for ops {missing}"


def _nargs(name):
    return len(REGISTRY[name].domain)


def _make_fn(name):
    """A traced function applying op ``name`` to its arguments."""
    n = _nargs(name)
    if name in NUMPY:
        ufunc = NUMPY[name][0]
        fn = (lambda r0: ufunc(r0)) if n == 1 else (lambda r0, r1: ufunc(r0, r1))
    else:
        if n == 1:
            def fn(r0):
                return r0.ctx.apply(name, r0)
        else:
            def fn(r0, r1):
                return r0.ctx.apply(name, r0, r1)
    fn.__name__ = f"rule_{name}"
    fn.__qualname__ = fn.__name__
    return fn


_FNS = {}


def _fn(name):
    if name not in _FNS:
        _FNS[name] = (_make_fn(name),)
        _FNS[name] += (sg.jit(_FNS[name][0], stabilize=False),)
    return _FNS[name]


def _sample(domain, rng):
    if domain == "real":
        return rng.uniform(-2.0, 2.0, NPTS)
    if domain == "positive":
        return rng.uniform(0.2, 3.0, NPTS)
    if domain == "unit":
        return rng.uniform(-0.9, 0.9, NPTS)
    if domain == "nonzero":
        return rng.choice([-1.0, 1.0], NPTS) * rng.uniform(0.5, 2.0, NPTS)
    raise AssertionError(f"unknown domain {domain!r}")


def _points(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    args = [_sample(d, rng) for d in REGISTRY[name].domain]
    if name in ("abs", "sign"):  # stay away from the kink at 0
        args[0] = np.where(np.abs(args[0]) < 0.1, args[0] + 0.3, args[0])
    if name in ("maximum", "minimum"):  # stay away from the tie a == b
        close = np.abs(args[0] - args[1]) < 0.1
        args[1] = np.where(close, args[1] + 0.5, args[1])
    tangents = [rng.standard_normal(NPTS) for _ in args]
    return args, tangents, rng


def _mp_ref(name):
    if name in NUMPY:
        return NUMPY[name][1]
    if name in IR_ONLY:
        return IR_ONLY[name]
    return ZERO_DERIVATIVE[name]


def _mp_partials(name, args):
    """Array (nargs, NPTS) of partial derivatives at 50 digits."""
    f = _mp_ref(name)
    out = np.zeros((len(args), NPTS))
    if name in ZERO_DERIVATIVE:
        return out
    with mpmath.workdps(50):
        for k in range(NPTS):
            pt = [mpmath.mpf(float(a[k])) for a in args]
            for i in range(len(args)):
                def along(t, i=i):
                    q = list(pt)
                    q[i] = q[i] + t
                    return f(*q)
                out[i, k] = float(mpmath.diff(along, 0))
    return out


@pytest.mark.parametrize("name", OPS)
def test_primal_value(name):
    fn, jitted = _fn(name)
    args, _, _ = _points(name)
    f = _mp_ref(name)
    with mpmath.workdps(50):
        ref = np.array([float(f(*[mpmath.mpf(float(a[k])) for a in args])) for k in range(NPTS)])
    np.testing.assert_allclose(jitted(*args), ref, rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("name", OPS)
def test_jvp_vjp_dot_product(name):
    fn, _ = _fn(name)
    args, tangents, rng = _points(name)
    w = rng.standard_normal(NPTS)
    y, ydot = sg.jvp(fn, tuple(args), tuple(tangents), stabilize=False)
    y2, vjp_fn = sg.vjp(fn, *args, stabilize=False)
    bars = vjp_fn(w)
    assert len(bars) == len(args)
    np.testing.assert_array_equal(y, y2)
    lhs_terms = w * ydot
    rhs_terms = sum(b * t for b, t in zip(bars, tangents))
    lhs, rhs = lhs_terms.sum(), rhs_terms.sum()
    scale = np.sum(np.abs(lhs_terms)) + np.sum([np.sum(np.abs(b * t)) for b, t in zip(bars, tangents)])
    assert abs(lhs - rhs) <= 1e-12 * max(scale, 1e-300), (lhs, rhs)


@pytest.mark.parametrize("name", OPS)
def test_jvp_vs_central_difference(name):
    fn, jitted = _fn(name)
    args, tangents, _ = _points(name)
    _, ydot = sg.jvp(fn, tuple(args), tuple(tangents), stabilize=False)
    if name in ZERO_DERIVATIVE:
        np.testing.assert_array_equal(ydot, 0.0)
        return
    h = 1e-6
    plus = jitted(*[a + h * t for a, t in zip(args, tangents)])
    minus = jitted(*[a - h * t for a, t in zip(args, tangents)])
    fd = (plus - minus) / (2 * h)
    scale = 1.0 + np.abs(jitted(*args))
    # relative 1e-6, with an absolute floor for directions where J v nearly cancels
    np.testing.assert_array_less(np.abs(ydot - fd), 1e-6 * (np.abs(fd) + 1e-3 * scale))


@pytest.mark.parametrize("name", OPS)
def test_partials_vs_mpmath(name):
    fn, _ = _fn(name)
    args, _, _ = _points(name)
    ref = _mp_partials(name, args)
    for i in range(len(args)):
        tangents = [np.zeros(NPTS) for _ in args]
        tangents[i] = np.ones(NPTS)
        _, d = sg.jvp(fn, tuple(args), tuple(tangents), stabilize=False)
        np.testing.assert_allclose(d, ref[i], rtol=1e-12, atol=1e-14 * (1 + np.abs(ref[i]).max()),
                                   err_msg=f"d {name} / d arg{i}")
        # the same partial from reverse mode
        _, vjp_fn = sg.vjp(fn, *args, stabilize=False)
        bars = vjp_fn(np.ones(NPTS))
        np.testing.assert_allclose(bars[i], ref[i], rtol=1e-12, atol=1e-14 * (1 + np.abs(ref[i]).max()),
                                   err_msg=f"reverse d {name} / d arg{i}")


@pytest.mark.parametrize("name", sorted(n for n in OPS if REGISTRY[n].kink))
def test_kink_is_documented(name):
    assert REGISTRY[name].kink.strip()


# -- where ------------------------------------------------------------------------------------

def rule_where(r0, r1):
    return np.where(r0 > 0.25, np.sin(r0) * r1, r1 ** 2 - r0)


def _where_mp(a, b):
    return mpmath.sin(a) * b if a > 0.25 else b ** 2 - a


def test_where_rules():
    rng = np.random.default_rng(7)
    a = rng.uniform(-2, 2, NPTS)
    a = np.where(np.abs(a - 0.25) < 0.05, a + 0.2, a)
    b = rng.uniform(-2, 2, NPTS)
    ta, tb, w = rng.standard_normal((3, NPTS))
    y, ydot = sg.jvp(rule_where, (a, b), (ta, tb), stabilize=False)
    _, vjp_fn = sg.vjp(rule_where, a, b, stabilize=False)
    abar, bbar = vjp_fn(w)
    np.testing.assert_allclose(y, np.where(a > 0.25, np.sin(a) * b, b ** 2 - a), rtol=1e-15)
    assert np.dot(w, ydot) == pytest.approx(np.dot(abar, ta) + np.dot(bbar, tb), rel=1e-12)
    with mpmath.workdps(50):
        da = np.array([float(mpmath.diff(lambda t: _where_mp(mpmath.mpf(a[k]) + t, mpmath.mpf(b[k])), 0))
                       for k in range(NPTS)])
        db = np.array([float(mpmath.diff(lambda t: _where_mp(mpmath.mpf(a[k]), mpmath.mpf(b[k]) + t), 0))
                       for k in range(NPTS)])
    np.testing.assert_allclose(abar, w * da, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(bbar, w * db, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ydot, da * ta + db * tb, rtol=1e-11, atol=1e-14)


def rule_where_nan(r0):
    return np.where(r0 > 0.0, np.sqrt(r0), np.log(-r0 + 1.0) * 0.0)


def test_where_untaken_branch_is_exact_zero():
    """The untaken branch (sqrt of a negative, or its nan derivative) never leaks as 0 * nan."""
    x = np.array([-4.0, -1.0, 4.0, 0.25])
    g = sg.grad(rule_where_nan)(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_array_equal(g[:2], [0.0, 0.0])
    np.testing.assert_allclose(g[2:], 0.5 / np.sqrt(x[2:]), rtol=1e-15)
