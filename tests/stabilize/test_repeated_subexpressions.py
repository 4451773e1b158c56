"""Derivatives repeat a subexpression in several terms (GELU'' has ``1 - tanh(u)**2`` four times):
the search rewrites all occurrences at once, keeps the best candidate of each dtype in its beam,
and divides before a product overflows (issue 16, point 5).  Values against 400-digit mpmath."""
import mpmath
import numpy as np
import sympy as sp

from symgrad.stabilize import stabilize
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.numeric import evaluate
from symgrad.stabilize.rewrites import _divide_early
from symgrad.stabilize.search import Search

x = sp.Symbol("x", real=True)
C = float(np.sqrt(2 / np.pi))


def _ref(mf, X, order=0):
    with mpmath.workdps(400):
        out = []
        for v in X:
            t = mpmath.mpf(float(v))
            val = mpmath.diff(mf, t, order) if order else mf(t)
            d = mpmath.diff(mf, t, order + 1)
            out.append((float(val), float(abs(t * d / val)) if val else 0.0))
    return np.array([r for r, _ in out]), np.array([k for _, k in out])


def _within(expr, mf, X, dtype="float64", order=0):
    """Bits of error of ``expr`` at ``X`` and the bound: 2 ulps widened by log2(1 + kappa)."""
    ref, kappa = _ref(mf, X, order)
    got = evaluate(expr, [x], np.asarray(X, dtype=dtype)[:, None], dtype)
    bits = ulp_bits(got, ref.astype(dtype))
    return bits, np.log2(3) + np.log2(1 + kappa) + 1e-9


def test_sech2_rewritten_at_every_occurrence():
    """x*(1 - tanh(x)**2) + x**2*(1 - tanh(x)**2): each term alone cancels to 0 for |x| > 19."""
    s = 1 - sp.tanh(x) ** 2
    e = x * s + x**2 * s
    res = stabilize(e, [x], budget_s=30.0, n_points=128)
    # the formula as written may serve an interval where it is within 1 ulp (the never-worse check's split)
    forms = [p.expr for p in res.expr.args] if isinstance(res.expr, sp.Piecewise) else [res.expr]
    assert not any(f.has(s) for f in forms if f != e), res.expr
    X = np.array([-300.0, -40.0, -15.13, -6.4, -0.5, 0.5, 6.4, 15.13, 40.0, 300.0])
    mf = lambda t: t * (1 - mpmath.tanh(t) ** 2) + t**2 * (1 - mpmath.tanh(t) ** 2)  # noqa: E731
    bits, limit = _within(res.expr, mf, X)
    assert np.all(bits <= limit), list(zip(X, bits, limit))


def test_children_offer_the_all_occurrence_rewrite():
    s = 1 - sp.tanh(x) ** 2
    e = x * s + x**3 * s
    srch = Search(e, [x], None, 30.0, ("float64",), 0, 32)
    kids = [k for k, _, _ in srch.children(srch.orig)]
    assert e.xreplace({s: sp.cosh(x) ** -2}) in kids  # both occurrences in one candidate


def test_divide_early_keeps_the_product_in_range():
    """x**2*(x**3 + 1)/cosh(x)**2 in float32 at x = 1e10: x**5 overflows (inf/inf = NaN); the true
    value underflows to 0, which (x**2/cosh(x)**2)*(x**3 + 1) gives."""
    e = x**2 * (x**3 + 1) / sp.cosh(x) ** 2
    news = _divide_early(e)
    assert news and all(sp.simplify(n - e) == 0 for n in news)
    X = np.array([1e10, -1e10, 3.0, -0.25, 20.0], dtype=np.float32)
    mf = lambda t: t**2 * (t**3 + 1) / mpmath.cosh(t) ** 2  # noqa: E731
    ref, _ = _ref(mf, X)
    ref = ref.astype(np.float32)
    naive = ulp_bits(evaluate(e, [x], X[:, None], "float32"), ref)
    assert naive[0] == naive[1] == 32  # NaN
    best = min(ulp_bits(evaluate(n, [x], X[:, None], "float32"), ref).max() for n in news)
    # 0 where x**5 overflowed; the ordinary float32 rounding of four operations (<= 3 ulps) elsewhere
    assert best <= 2.0
    # a -1 coefficient goes last (a leading -1 would be re-evaluated as a negation of the product)
    assert any(n.args[-1] == -1 for n in _divide_early(-e))


def test_gelu_second_derivative():
    """GELU (tanh form) '' as the tracer writes it: within 2 ulps, or the conditioning, of mpmath in
    float64 (the compiled float32 half is in test_ml_functions)."""
    u = C * x + C * 0.044715 * x**3
    s, T, du = 1 - sp.tanh(u) ** 2, sp.tanh(u), C + 3 * C * 0.044715 * x**2
    t0 = 3 * C * 0.044715 * x**2
    P = sp.S.Half - x * du * T
    e = t0 * s * P + t0 * s + s * du / 2 + C * s * P
    mf = lambda t: 0.5 * t * (1 + mpmath.tanh(mpmath.mpf(C) * (t + mpmath.mpf(0.044715) * t**3)))  # noqa: E731
    res = stabilize(e, [x], budget_s=30.0)
    assert not res.expr.has(s), res.expr
    X = np.array([-20.0, -18.0, -15.13, -15.0, -6.4, -2.0, -0.68, 0.68, 2.0, 6.4, 15.0, 20.0])
    bits, limit = _within(res.expr, mf, X, "float64", order=2)
    assert np.all(bits <= limit), list(zip(X, bits, limit))
