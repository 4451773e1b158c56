"""Issue 16, point 1: the stabilised form is never worse than the formula as written.

Unit tests of the final acceptance check (:mod:`symgrad.stabilize.accept`) on hand-made
bad candidates, and the issue's listed regressions as values through the compiled
``jit``/``grad``/``hessian`` kernels against mpmath (closed forms at 60 digits).
"""
import importlib

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.stabilize import stabilize
from symgrad.ir.sympy_funcs import log1p
from symgrad.stabilize.accuracy import Sample, make_sample, point_bits, ulp_bits

accept = importlib.import_module("symgrad.stabilize.accept")  # the package re-exports a function of that name

x, y = sp.symbols("x y", real=True)
TWO_ULPS = np.log2(3) + 1e-9
DTS = ("float64", "float32")


def test_bad_series_piece_is_repaired_by_the_original():
    # a truncated series used far beyond its radius: 2 terms of sin up to 1 lose ~12 bits near 1
    chosen = sp.Piecewise((x - x**3 / 6, x < 1), (sp.sin(x), True))
    form, widen, note, _ = accept.accept(sp.sin(x), chosen, False, [x], {x: (-100.0, 100.0)}, DTS)
    assert form == sp.sin(x)
    assert note is not None and "never_worse" in note


def test_worse_single_form_is_reverted():
    orig = sp.sin(x)
    chosen = x - x**3 / 6 + x**5 / 120  # fine near 0, useless at 10
    form, widen, note, _ = accept.accept(orig, chosen, False, [x], {x: (-100.0, 100.0)}, DTS)
    assert form == orig and not widen
    assert "reverted" in note


def test_good_form_passes_untouched():
    orig = sp.log(1 + x)
    form, widen, note, _ = accept.accept(orig, log1p(x), False, [x], {x: (-0.5, 1e6)}, DTS)
    assert form == log1p(x) and note is None


def test_verdict_counts_lost_points():
    s = accept.check_samples(sp.sin(x), [x], {x: (-100.0, 100.0)}, ("float64",))
    v = accept.verdict(sp.sin(x), x - x**3 / 6, False, [x], s)
    assert not v.ok and v.detail["float64"][2] > 0
    assert accept.verdict(sp.sin(x), sp.sin(x), False, [x], s).ok


def test_regime_splits_on_a_difference():
    # d2/dx2 log(exp(x) + exp(y)) = sigmoid(x - y) * sigmoid(y - x): its accuracy depends on x - y only
    e = sp.diff(sp.log(sp.exp(x) + sp.exp(y)), x, 2)
    res = stabilize(e, [x, y])
    conds = [str(p.cond) for p in res.expr.args] if isinstance(res.expr, sp.Piecewise) else []
    assert not any(c.startswith(("x <", "y <")) for c in conds), res.expr
    X = np.array([[80.0, 50.0], [90.0, 50.0], [710.0, 10.0], [-800.0, -801.5], [1000.0, 999.0]])
    got = res.evaluate([x, y], X, "float64")
    for (a, b), g in zip(X, got):
        with mpmath.workdps(60):
            d = mpmath.mpf(a) - mpmath.mpf(b)
            ref = float(mpmath.exp(-abs(d)) / (1 + mpmath.exp(-abs(d))) ** 2)
        assert ulp_bits(np.array([g]), np.array([ref]))[0] <= TWO_ULPS, (a, b, g, ref)


# -- the listed regressions, compiled -------------------------------------------

def _mp(f, v):
    with mpmath.workdps(60):
        return float(f(mpmath.mpf(float(v))))


def _assert_2ulps(got, ref, what, limit=TWO_ULPS):
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    bits = ulp_bits(got, ref)
    assert np.all(np.isfinite(got)), what
    assert np.all(bits <= limit), (what, got, ref, bits)


def test_logistic_density_gradient_at_ordinary_inputs():
    g = sg.grad(lambda v: np.exp(v) / (1 + np.exp(v)) ** 2)
    pts = np.array([0.1, -0.1, 0.05, 0.3, 1e-6, -2.0, 5.0, 40.0, -40.0])
    ref = [_mp(lambda t: -mpmath.sinh(t / 2) / (4 * mpmath.cosh(t / 2) ** 3), p) for p in pts]
    # was 1.2e-8 relative at 0.1 (a series piece past its radius).  The chosen form
    # -tanh(x/2)*sigmoid(x)/(exp(x) + 1) has six roundings: up to 3 ulps (0.05 gives 3), so
    # 4 ulps here; the 2-ulp target (point 5) needs wider arithmetic for this one
    _assert_2ulps(g(pts), ref, "d/dx logistic density", limit=np.log2(5) + 1e-9)


def test_sqrt_x2_plus_1_minus_x():
    f = sg.jit(lambda v: np.sqrt(v * v + 1) - v)
    pts = np.array([22000.0, 1e4, 3e4, 1e6, 1e8, 0.5, 2.0, 60.0, -3.0])
    ref = [_mp(lambda t: 1 / (t + mpmath.sqrt(t * t + 1)), p) for p in pts]
    _assert_2ulps(f(pts), ref, "sqrt(x*x+1)-x")


def test_arccosh_and_its_gradient():
    f, g = sg.jit(np.arccosh), sg.grad(np.arccosh)
    pts = np.array([1 + 1e-15, 1 + 1e-10, 1.0001, 1.5, 10.0, 22000.0, 1e8])
    _assert_2ulps(f(pts), [_mp(mpmath.acosh, p) for p in pts], "arccosh")
    _assert_2ulps(g(pts), [_mp(lambda t: 1 / mpmath.sqrt((t - 1) * (t + 1)), p) for p in pts], "arccosh'")


def test_readme_lse_hessian_regimes():
    h = sg.hessian(lambda a, b: np.log(np.exp(a) + np.exp(b)))
    pts = [(80.0, 50.0), (90.0, 50.0), (710.0, 10.0), (0.5, 0.25), (-800.0, -801.5)]
    for a, b in pts:
        got = h(a, b)
        with mpmath.workdps(60):
            d = mpmath.mpf(a) - mpmath.mpf(b)
            ref = float(mpmath.exp(-abs(d)) / (1 + mpmath.exp(-abs(d))) ** 2)
        _assert_2ulps(got, ref, ("lse hessian", a, b))


def test_lse_gradient_where_one_exp_overflows():
    """d/dx log(e^x + e^y) = sigmoid(x - y) where e^y overflows and the result is still a normal number:
    a regime piece exp(x)/(exp(x) + exp(y)) (more accurate on ordinary inputs, which do not round
    x - y) would return 0 at (19, 720), the truth 3.6e-305; the final check's points include such
    inputs, and the piece is replaced."""
    g = sg.grad(lambda x, y: np.log(np.exp(x) + np.exp(y)))
    for x, y in [(19.0, 720.0), (0.0, -720.0), (720.0, 19.0), (-20.0, 715.0), (0.3, 0.2), (1000.0, 999.0)]:
        with mpmath.workdps(60):
            ref = float(1 / (1 + mpmath.exp(mpmath.mpf(y) - mpmath.mpf(x))))
        _assert_2ulps(g(x, y), ref, ("lse gradient", x, y))


@pytest.mark.parametrize("dtype", ["float32"])
def test_regressions_in_float32(dtype):
    g = sg.grad(lambda v: np.exp(v) / (1 + np.exp(v)) ** 2)
    pts = np.array([0.1, -0.1, 0.05, 0.3, 1e-6, -2.0, 5.0, 40.0], dtype=dtype)
    ref = np.array([_mp(lambda t: -mpmath.sinh(t / 2) / (4 * mpmath.cosh(t / 2) ** 3), p) for p in pts],
                   dtype=dtype)
    got = g(pts)
    assert got.dtype == np.dtype(dtype)
    assert np.all(ulp_bits(got, ref) <= TWO_ULPS), (got, ref)


def test_difference_of_nearly_equal_sines_by_sum_to_product():
    # issue 16's family "sin(x + e) - sin(x), cos(x + e) - cos(x)": 20-29 bits naive
    t = sp.Symbol("t", real=True)
    dom = {x: (-1e4, 1e4), t: (-1e-2, 1e-2)}
    for e in (sp.sin(x + t) - sp.sin(x), sp.cos(x + t) - sp.cos(x)):
        res = stabilize(e, [x, t], domain=dom)
        for dt in DTS:
            mean_before, _, mean_after, max_after = res.bits[dt]
            assert mean_before > 10 and mean_after < 0.5 and max_after <= TWO_ULPS, (e, dt, res.bits)


def test_each_dtype_is_accepted_on_its_own():
    """A form that serves float64 and fails only in float32 is kept for float64; float32 computes
    the formula as written (before, both kernels were reverted).  exp(2x)/exp(x) overflows in
    float32 beyond x = 44.4, never in float64 on (-50, 50)."""
    dom = {x: (-50.0, 50.0)}
    s = accept.check_samples(sp.exp(x), [x], dom, DTS)
    chosen = sp.Mul(sp.exp(2 * x), sp.Pow(sp.exp(x), -1, evaluate=False), evaluate=False)  # as written
    assert accept.verdict(sp.exp(x), chosen, False, [x], {"float64": s["float64"]}).ok
    assert not accept.verdict(sp.exp(x), chosen, False, [x], {"float32": s["float32"]}).ok
    form, widen, note, own = accept.per_dtype(sp.exp(x), chosen, False, [x], s)
    assert form == chosen and own == {"float32": sp.exp(x)} and not widen
    assert "kept in float64; float32 computes the formula as written in float32" in note
    both = {dt: accept.verdict(sp.exp(x), f, widen, [x], {dt: s[dt]}) for dt, f in (("float64", form),
                                                                                     ("float32", own["float32"]))}
    assert all(v.ok for v in both.values())
    # nothing passes anywhere: no per-dtype answer
    assert accept.per_dtype(sp.exp(x), sp.exp(x) * (1 + 1e-3), False, [x], s) is None


def test_formula_as_written_kept_where_it_is_within_one_ulp():
    """softsign': the searched ``1/(|x| + 1)/(|x| + 1)`` passes the check only through the
    conditioning excuse (3 ulps at x = 1.01, where the derivative as written rounds exactly and
    kappa = 1): the formula as written now serves the interval where it is within 1 ulp, and the
    searched form the tails, where the written one cancels (10 bits at |x| = 1e3)."""
    g = sg.grad(lambda v: v / (1 + np.abs(v)))
    pts = np.array([1.01, 0.3, 0.99, 1e3, -1e3, 1e8, 40.0])
    ref = [_mp(lambda t: 1 / (1 + abs(t)) ** 2, p) for p in pts]
    _assert_2ulps(g(pts), ref, "softsign'")
    # the split is fitted on the check sample, which has no point like -1.01: 3 ulps there, within
    # log2(3) + log2(1 + kappa) bits (kappa = 2|x|/(1 + |x|) = 1)
    _assert_2ulps(g(np.array([-1.01])), [_mp(lambda t: 1 / (1 + abs(t)) ** 2, -1.01)], "softsign'(-1.01)",
                  limit=np.log2(3) + 1 + 1e-9)
    chosen = sp.Mul(1 / (sp.Abs(x) + 1), 1 / (sp.Abs(x) + 1), evaluate=False)
    orig = sp.diff(x / (1 + sp.Abs(x)), x)
    at = np.array([[1.01]])  # the search's own sample holds a point like this one
    seen = {dt: Sample(np.dtype(dt), at.astype(dt), np.array([_mp(lambda t: 1 / (1 + t) ** 2, 1.01)], dtype=dt))
            for dt in DTS}
    v = accept.verdict(orig, chosen, False, [x], seen)
    assert v.detail["float64"][2] == 0 and not v.strict  # 3 ulps at 1.01, within the excuse alone
    form = accept.accept(orig, chosen, False, [x], None, DTS, seen)[0]
    assert isinstance(form, sp.Piecewise) and orig in [p.expr for p in form.args]
    assert accept.verdict(orig, form, False, [x], seen).strict


def test_float32_widened_where_its_arithmetic_loses_points_the_written_formula_keeps():
    """d/dx of Michaelis-Menten ``x/(m + x)``: the searched ``(m/(m + x))/(m + x)`` is accurate in
    float64 and 3 ulps off in float32 arithmetic at (1.01, 0.9999), where the derivative as
    written rounds exactly; such points are too rare for the search's sample.  A dense probe
    (:func:`~symgrad.stabilize.widen.loses_where_written_does_not`) finds them, and the float32
    kernel computes in float64."""
    from symgrad.stabilize.widen import loses_where_written_does_not

    m = sp.Symbol("m", real=True)
    orig = sp.diff(x / (m + x), x)
    form = sp.Mul(m / (m + x), 1 / (m + x), evaluate=False)
    assert loses_where_written_does_not(form, orig, [x, m], {x: (0.0, 1e300), m: (1e-300, 1e300)})
    assert not loses_where_written_does_not(orig, orig, [x, m])
    dom = {x: (0.0, 1e300), m: (1e-300, 1e300)}
    res = stabilize(orig, [x, m], domain=dom)
    assert res.widen_float32
    X = np.array([[1.01, 0.9999], [0.5, 2.0], [3.0, 0.1], [1e-3, 1.0], [40.0, 3.0], [1e6, 1e-4]], dtype=np.float32)
    with mpmath.workdps(50):
        ref = [np.float32(float(mpmath.mpf(float(k)) / (mpmath.mpf(float(k)) + mpmath.mpf(float(v))) ** 2))
               for v, k in X]
    got = res.evaluate([x, m], X, "float32")
    assert np.all(ulp_bits(got, np.array(ref, dtype=np.float32)) <= 1.0), got
    # the API's program pass widens it too (its sample has a float32 point beyond 2 ulps)
    g = sg.grad(lambda v, k: v / (k + v))
    assert np.all(ulp_bits(g(X[:, 0], X[:, 1]), np.array(ref, dtype=np.float32)) <= 1.0)


def test_no_split_for_strictness_where_the_double_double_step_takes_the_form():
    """GELU' (tanh form) passes the check only through the conditioning excuse, and loses 8.9
    bits at some points as float64 forms go: the double-double step repairs every point.  A split
    with the formula as written made for strictness hid the form from that step (bench_stability:
    0 -> 8.9 bits max); no such split is made where the float64 form loses 6 bits or more."""
    c = sp.sqrt(2 / sp.pi)
    gelu = x / 2 * (1 + sp.tanh(c * (x + sp.Rational(44715, 10**6) * x**3)))
    res = stabilize(sp.diff(gelu, x), [x], domain={x: (-60.0, 60.0)})
    assert any(r.name == "double_double" for r in res.records), res.expr
    pts = np.array([-1.0, -0.75, -2.0, 0.5, 3.0])
    with mpmath.workdps(60):
        ref = [float(mpmath.diff(lambda t: t / 2 * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi)
                                                                  * (t + mpmath.mpf(44715) / 10**6 * t**3))),
                                 mpmath.mpf(float(v)))) for v in pts]
    _assert_2ulps(res.evaluate([x], pts[:, None], "float64"), ref, "GELU'")


a, b, c = sp.symbols("a b c", real=True)
HERON = sp.sqrt((a + b + c) * (-a + b + c) * (a - b + c) * (a + b - c)) / 4
_ROUNDING_CASES = {  # losses within the conditioning bound: several float64 roundings on hypot, 1 + xy ...
    "d/dy 1/hypot": (sp.diff(1 / sp.sqrt(x**2 + y**2), y), [x, y], None),
    "d/dy velocity addition": (sp.diff((x + y) / (1 + x * y), y), [x, y], {x: (-0.999, 0.999), y: (-0.999, 0.999)}),
    "d/da Heron": (sp.diff(HERON, a), [a, b, c], {a: (1.0, 2.0), b: (1.0, 2.0), c: (1.0, 2.0)}),
}


@pytest.mark.parametrize("case", sorted(_ROUNDING_CASES))
def test_rounding_losses_within_the_conditioning_get_an_arithmetic_dd_region(case):
    """Point 1 literally: on a fresh sample, wherever the formula as written is within 1 ulp the
    kernel is within 2 ulps, also where losing more would be within the conditioning bound.
    The float64 forms (``-(y/h)/h/h``, Heron's three-piece split) lose 2-3 ulps at 1 to 3 % of the
    points there; a double-double region of arithmetic, square roots and hypot repairs them."""
    e, vs, dom = _ROUNDING_CASES[case]
    res = stabilize(e, vs, domain=dom)
    regions = [r for r in res.records if r.name == "double_double"]
    assert regions and all("0 elementary functions" in r.cost for r in regions), (case, res.expr)
    s = make_sample(e, vs, "float64", domain=dom, n=2048, seed=11)
    nb, sb = point_bits(e, vs, s), ulp_bits(res.evaluate(vs, s.X, "float64"), s.ref)
    lost = (nb <= 1.0) & (sb > TWO_ULPS)
    assert not lost.any(), (case, s.X[lost][:3], sb[lost][:3])
    assert sb.mean() < 0.2, (case, sb.mean())


def test_gradient_through_the_api_runs_a_hypot_region_in_the_kernel():
    """``sg.grad`` of 1/hypot: the compiled kernel runs the region's dd hypot (emitted helper, Numba)
    and is within 1 ulp of mpmath at 2000 points of every magnitude, where the float64 form
    ``-(y/h)/h/h`` was 2-3 ulps at 1 % of them (the program is searched with no domain, as users'
    are; Heron's area, searched so, is not repaired in [1, 2]: see README)."""
    e = sp.diff(1 / sp.sqrt(x**2 + y**2), y)
    s = make_sample(e, [x, y], "float64", n=2000, seed=12)
    inv = sg.grad(lambda x, y: 1 / np.sqrt(x**2 + y**2), argnums=1)
    got = np.asarray(inv(s.X[:, 0].copy(), s.X[:, 1].copy()))
    assert ulp_bits(got, s.ref).max() <= 1.0 + 1e-9


ARRHENIUS = sp.exp(-a / x) - sp.exp(-a / y)
ARRHENIUS_DOMAIN = {a: (1.0, 10.0), x: (1.0, 1e3), y: (1.0, 1e3)}


@pytest.mark.parametrize("part", ["f", "d/da"])
def test_argument_roundings_of_exp_get_a_region_with_first_order_tails(part):
    """The ratio of two Arrhenius factors, ``exp(-a/x) - exp(-a/y)`` (bench_stability): its float64
    forms, ``exp(-a/y) expm1(a (x - y)/(x y))`` and the split of d/da, were 3-5 ulps off at 1 % of the
    points where the formula as written is within 1 ulp: float64 multiplies the rounding of
    ``a/y`` by ``a/y`` inside ``exp``.  A ``ddt`` region (arithmetic in dd, exp and expm1 in float64
    with a first-order tail, recomputed with dd functions where its error bound shows cancellation)
    repairs them at a few times the float64 cost; one holding dd exps costs 40-400x."""
    e = ARRHENIUS if part == "f" else sp.diff(ARRHENIUS, a)
    vs = [a, x, y]
    res = stabilize(e, vs, domain=ARRHENIUS_DOMAIN)
    regions = [r for r in res.records if r.name == "double_double"]
    assert regions and any("first-order tails" in r.cost for r in regions), res.expr
    s = make_sample(e, vs, "float64", domain=ARRHENIUS_DOMAIN, n=2048, seed=11)
    nb, sb = point_bits(e, vs, s), ulp_bits(res.evaluate(vs, s.X, "float64"), s.ref)
    lost = (nb <= 1.0) & (sb > TWO_ULPS)
    assert not lost.any(), (part, s.X[lost][:3], sb[lost][:3])
    assert sb.mean() < 0.5 * nb.mean(), (part, sb.mean(), nb.mean())  # the naive mean: 3.5 and 4.6 bits


def test_a_split_with_the_original_that_passes_in_float64_only_is_kept_there():
    """mish'' as reverse mode derives it, and a searched form whose exp(x)**2 overflows in float32 at
    x = 60 and which loses 2 points within 1 ulp in float64: no dtype accepts the form, and its
    split with the formula as written passes in float64 only.  The float64 kernel takes the split
    (mish''(60) = -3.6e-50; the formula as written gives 0.0), float32 the formula as written.  It
    used to revert both (a program pass at 2 s ended on this form in 2 of 11 builds)."""
    from symgrad.ir.sympy_funcs import softplus
    from symgrad.stabilize.result import evaluate_result

    x = sp.Symbol("x", real=True)
    e, t = sp.exp(x), sp.tanh(log1p(sp.exp(x)))
    s = 1 - t**2
    orig = s * e / (e + 1) + (x * s / (e + 1) - x * s * e / (e + 1) ** 2
                              + s * (-2 * x * e * t / (e + 1) + 1) / (e + 1)) * e
    chosen = (-2 * x * e * sp.tanh(softplus(x)) + x + 2 * e + 2) * e / ((e + 1) ** 2 * sp.cosh(softplus(x)) ** 2)
    form, widen, note, own = accept.accept(orig, chosen, False, [x], None, ("float64", "float32"))
    assert "split with the formula as written kept in float64" in note and own == {"float32": orig}
    with mpmath.workprec(3000):
        t60 = mpmath.mpf(60)
        want = float(mpmath.diff(lambda u: u * mpmath.tanh(mpmath.log1p(mpmath.exp(u))), t60, 2))
    got = evaluate_result(form, widen, [x], np.array([[60.0]]), np.dtype("float64"))[0]
    assert abs(got - want) <= 2 * np.spacing(abs(want)), (got, want)


def test_a_piece_that_overflows_in_float32_only_is_replaced_in_float32_only():
    """d/dx exp(x)/(exp(x) + exp(y)) split by max(|x|, |y|) as the search found it.  Its middle
    piece exp(x) exp(y)/(exp(x) + exp(y))**2 overflows float32 at max(|x|, |y|) near 48; repaired on
    both dtypes' points it became sigmoid(y - x) sigmoid(x - y) in both kernels, which rounds x - y:
    21 ulps in float64 at (-25.54, 37.27), where the piece as found is exact.  Each dtype now keeps
    its own repair: the float64 kernel the exact piece, the float32 one the sigmoids."""
    from symgrad.ir.sympy_funcs import sigmoid
    from symgrad.stabilize.result import evaluate_result

    x, y = sp.symbols("x y", real=True)
    ex, ey, m = sp.exp(x), sp.exp(y), sp.Max(x, y)
    orig = sp.diff(ex / (ex + ey), x)
    big = sp.Max(sp.Abs(x), sp.Abs(y))
    chosen = sp.Piecewise((ex * ey / (sp.exp(2 * x) + 2 * ex * ey + sp.exp(2 * y)), big < 22),
                          (ex * ey / (ex + ey) ** 2, big < sp.Float(48.6)),
                          (sp.exp(x - m) * sigmoid(y - x) / (sp.exp(x - m) + sp.exp(y - m)), True))
    from symgrad.stabilize.reference import compile_mpmath, reference_values

    fn = compile_mpmath(orig, [x, y])  # the search's own points: a few of each piece's, as it saw them
    pts = np.array([[-25.536875558362286, 37.27204519707226], [30.0, -15.5], [47.5, 2.0], [-47.5, 30.0],
                    [40.0, 45.0], [0.5, -3.0], [60.0, 1.0]])
    seen = {dt: Sample(np.dtype(dt), pts.astype(dt), reference_values(fn, pts.astype(dt), dt))
            for dt in ("float64", "float32")}
    form, widen, note, own = accept.accept(orig, chosen, False, [x, y], None, ("float64", "float32"), seen)
    assert note is not None and "dtype by dtype" in note and set(own) == {"float32"}, note
    X = np.array([[-25.536875558362286, 37.27204519707226], [30.0, -15.5], [-40.25, 33.0]])
    with mpmath.workprec(400):
        want = [float(mpmath.exp(a + b) / (mpmath.exp(a) + mpmath.exp(b)) ** 2) for a, b in X]
    got = evaluate_result(form, widen, [x, y], X, np.dtype("float64"))
    assert np.all(np.abs(got - want) <= 2 * np.spacing(np.abs(want))), (got, want)
    X32 = np.array([[47.5, 2.0], [-47.5, 30.0]], dtype=np.float32)
    with mpmath.workprec(400):
        want32 = [float(mpmath.exp(mpmath.mpf(float(a)) + float(b)) / (mpmath.exp(float(a)) + mpmath.exp(float(b))) ** 2)
                  for a, b in X32]
    got32 = evaluate_result(own["float32"], widen, [x, y], X32, np.dtype("float32"))
    assert np.all(np.isfinite(got32)) and np.allclose(got32, want32, rtol=1e-6, atol=0), (got32, want32)
