"""End-to-end: stabilised forms are accurate against mpmath references."""
import numpy as np
import pytest
import sympy as sp

from symgrad.stabilize import bits_of_error_report, stabilize
from symgrad.stabilize.accuracy import make_sample, point_bits, ulp_bits
from symgrad.stabilize.numeric import evaluate
from symgrad.stabilize.reference import compile_mpmath, reference_values
from symgrad.stabilize.search import _cond_bits

x, y, z, m = sp.symbols("x y z m", real=True)
N = 200
PTS = [-1000, -100, -20, -1e-8, 0, 1e-8, 20, 100, 1000]

_cache = {}


def stab(expr, vs, domain=None):
    key = (sp.srepr(expr), str(domain))
    if key not in _cache:
        # a generous wall-clock cap: the deterministic work budget decides, not the machine's load
        _cache[key] = stabilize(expr, vs, domain=domain, budget_s=60.0, n_points=N)
        assert not _cache[key].timed_out, f"stabilize({expr}) hit the 60 s wall-clock cap"
    return _cache[key]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("which", ["f", "df"])
def test_log1pexp_points(dtype, which):
    f = sp.log(1 + sp.exp(x))
    e = f if which == "f" else sp.diff(f, x)
    res = stab(e, [x])
    X = np.array([[v] for v in PTS], dtype=dtype)
    ref = reference_values(compile_mpmath(e, [x]), X, dtype)
    got = res.evaluate([x], X, dtype)
    assert np.all(np.isfinite(got))
    assert np.all(ulp_bits(got, ref) <= 1.0), (res.expr, got, ref)


_LOG1PEXP_F32 = ("float32 softplus = max(x, 0) + log1p(exp(-|x|)) is 2 ulps at x = -0.881, -0.508: exp rounds "
                 "(0.5 ulp, amplified by the condition number 0.84 of log1p at exp(x) ~ 0.41) and numpy's float32 "
                 "log1p/exp are not correctly rounded; 1 ulp needs a wider intermediate in the emitted primitive "
                 "(outside symgrad/stabilize).  Held to 2 ulps by test_accuracy_2ulps_stratified[logistic]")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("which", ["f", "df"])
def test_log1pexp_stratified(dtype, which, request):
    """1 ulp at log/linear points of +-[1e-8, 2] (STRAT, defined below)."""
    if (which, dtype) == ("f", "float32"):
        request.applymarker(pytest.mark.xfail(reason=_LOG1PEXP_F32, strict=True))
    f = sp.log(1 + sp.exp(x))
    e = f if which == "f" else sp.diff(f, x)
    res = stab(e, [x])
    X = STRAT[:, None].astype(dtype)
    ref = reference_values(compile_mpmath(e, [x]), X, dtype)
    got = res.evaluate([x], X, dtype)
    bits = ulp_bits(got, ref)
    assert np.all(np.isfinite(got))
    assert bits.max() <= 1.0, (res.expr, X[bits > 1.0, 0], bits.max())


CASES = [
    ("logistic", sp.log(1 + sp.exp(-m)), [m], None),
    ("expm1", sp.exp(x) - 1, [x], None),
    ("log1p", sp.log(1 + x), [x], {x: (-1, 1.7e308)}),
    ("sqrt_diff", sp.sqrt(x + 1) - sp.sqrt(x), [x], {x: (0, 1e300)}),
    ("hypot", sp.sqrt(x**2 + y**2), [x, y], None),
    ("swish", x / (1 + sp.exp(-x)), [x], None),
    ("lse3", sp.log(sp.exp(x) + sp.exp(y) + sp.exp(z)), [x, y, z], None),
    ("softmax_ce", -x + sp.log(sp.exp(x) + sp.exp(y) + sp.exp(z)), [x, y, z], None),
    ("one_minus_cos", (1 - sp.cos(x)) / x**2, [x], {x: (-1e5, 1e5)}),
]


def _exprs():
    for name, f, vs, dom in CASES:
        yield name, "f", f, vs, dom
        for v in vs[:1]:
            yield name, f"d/d{v}", sp.diff(f, v), vs, dom


# Known gaps (name, part) -> reason; currently none: sqrt_diff' and swish' (float32) are within
# 2 ulps via regimes (series at infinity / cancellation-free `together` form near the root).
XFAIL = {
}


def _params():
    for name, part, e, vs, dom in _exprs():
        marks = [pytest.mark.xfail(reason=XFAIL[(name, part)], strict=True)] if (name, part) in XFAIL else []
        yield pytest.param(name, part, e, vs, dom, marks=marks)


@pytest.mark.parametrize("name,part,expr,vs,dom", list(_params()), ids=lambda a: str(a)[:20])
def test_accuracy_2ulps(name, part, expr, vs, dom):
    res = stab(expr, vs, dom)
    for dt in ("float64", "float32"):
        s = make_sample(expr, vs, dt, domain=dom, n=N)
        bits = ulp_bits(res.evaluate(vs, s.X, dt), s.ref)  # as the kernel computes it
        mean, mx = (float(bits.mean()), float(bits.max())) if len(bits) else (0.0, 0.0)
        nmean, nmax = bits_of_error_report(expr, vs, dt, domain=dom, n=N)
        assert mean <= nmean + 0.05 and mean < 1.0, (dt, res.expr, mean, nmean)
        # max within 2 ulps (log2(1+2) bits).  Documented exception: where the
        # exact answer is ill-conditioned in the *rounded* inputs of a stable
        # formula (exp(a - b) with a - b rounded, log-sum-exp near 0, results in
        # the subnormal range after an unavoidable overflow of x**2) no
        # working-precision formula reaches 2 ulps.
        if name not in ("lse3", "softmax_ce") and mx > TWO_ULPS:
            _assert_max(expr, vs, s.X, bits, dt, res.expr)


TWO_ULPS = np.log2(3) + 1e-9
ILL = 3.0  # log2(1 + kappa) above which a point counts as ill-conditioned (kappa >= 7)


def _assert_max(expr, vs, X, bits, dt, got_expr):
    """Every point within 2 ulps, except near roots/poles of ``expr`` (kappa >= 7).

    There the condition number kappa = |x f'(x) / f(x)| (summed over inputs) bounds what
    a formula built from roundings can promise, as in ``Search.acceptable``: e.g.
    d/dx (1 - cos x)/x**2 at x = -34.39166 (a root of the derivative) has kappa = 690,
    swish' at its root x = -1.278 has kappa = 2752.  Such points may exceed 2 ulps by at
    most log2(1 + kappa) bits.
    """
    fn = compile_mpmath(expr, vs)
    for i in np.flatnonzero(bits > TWO_ULPS):
        cb = _cond_bits(fn, X[i])
        lim = TWO_ULPS + (cb if cb >= ILL else 0.0)
        assert bits[i] <= lim, (dt, got_expr, X[i], bits[i], cb)


# Stratified points: the random sample above has almost no points in [1e-8, 2] (bit patterns
# over +-1e5 or the whole float range), where series/regime thresholds live.
_MAG = np.unique(np.concatenate([np.geomspace(1e-8, 2, 60), np.linspace(1e-8, 2, 60)]))
STRAT = np.concatenate([-_MAG[::-1], _MAG])


def _strat_points(vs, dom, dtype):
    rng = np.random.default_rng(1)
    cols = [STRAT] + [rng.permutation(STRAT) for _ in vs[1:]]
    X = np.stack(cols, axis=1).astype(dtype)
    for j, v in enumerate(vs):
        lo, hi = (dom or {}).get(v, (-np.inf, np.inf))
        X = X[(X[:, j] >= np.float64(lo)) & (X[:, j] <= np.float64(hi))]
    return X


XFAIL_STRAT: dict = {}  # (name, part) -> reason; empty since float32 kernels may compute in float64


def _strat_params():
    for name, part, e, vs, dom in _exprs():
        marks = [pytest.mark.xfail(reason=XFAIL_STRAT[(name, part)], strict=True)] \
            if (name, part) in XFAIL_STRAT else []
        yield pytest.param(name, part, e, vs, dom, marks=marks)


@pytest.mark.parametrize("name,part,expr,vs,dom", list(_strat_params()), ids=lambda a: str(a)[:20])
def test_accuracy_2ulps_stratified(name, part, expr, vs, dom):
    """Max within 2 ulps at log- and linearly spaced points of +-[1e-8, 2] (both dtypes).

    Documented exception as above: lse3/softmax_ce are ill-conditioned in the rounded
    inputs (log-sum-exp near 0); they are checked for the mean only.
    """
    res = stab(expr, vs, dom)
    for dt in ("float64", "float32"):
        X = _strat_points(vs, dom, dt)
        ref = reference_values(compile_mpmath(expr, vs), X, dt)
        ok = np.isfinite(ref)
        got = res.evaluate(vs, X[ok], dt)
        bits = ulp_bits(got, ref[ok])
        if name in ("lse3", "softmax_ce"):
            assert bits.mean() < 1.0, (dt, res.expr, bits.mean())
            continue
        _assert_max(expr, vs, X[ok], bits, dt, res.expr)


def test_determinism():
    e = sp.diff(sp.log(1 + sp.exp(x)), x)
    a = stabilize(e, [x], budget_s=6, n_points=N)
    b = stabilize(e, [x], budget_s=6, n_points=N)
    assert a.expr == b.expr and [r.name for r in a.records] == [r.name for r in b.records]
    assert a.records and "->" in a.records[0].one_line()


@pytest.mark.parametrize("expr,vs", [
    (sp.diff(sp.log(1 + sp.exp(x)), x), [x]),
    (sp.diff(-x + sp.log(sp.exp(x) + sp.exp(y) + sp.exp(z)), x), [x, y, z]),
    (400 * (x**2 - y) * x + 2 * x - 2, [x, y]),
], ids=["dsoftplus", "dsoftmax_ce", "rosenbrock"])
def test_deterministic_across_wall_budgets(expr, vs):
    """The work budget, not the clock, bounds the search: any cap that is not hit gives the same result."""
    runs = [stabilize(expr, vs, budget_s=b, n_points=128) for b in (15.0, 40.0)]
    for r in runs:
        assert not r.timed_out
    a, b = runs
    assert a.expr == b.expr and a.work == b.work and a.budget_exhausted == b.budget_exhausted
    assert [(r.name, r.before, r.after) for r in a.records] == [(r.name, r.before, r.after) for r in b.records]


def test_work_budget_reported():
    e = -x + sp.log(sp.exp(x) + sp.exp(y) + sp.exp(z))
    r = stabilize(e, [x, y, z], budget_s=30, n_points=64, work=5)
    assert r.budget_exhausted and not r.timed_out


def test_records_name_the_rewritten_subexpression():
    f = 3 * x + sp.log(1 + sp.exp(x))
    res = stab(f, [x])
    names = {(r.name, r.before, r.after) for r in res.records}
    assert any(r.before == sp.log(1 + sp.exp(x)) for r in res.records), names
    r = next(r for r in res.records if r.before == sp.log(1 + sp.exp(x)))
    assert r.expr_before.has(r.before) and r.expr_after.has(r.after)
    assert r.one_line().startswith(f"{r.name}: log(exp(x) + 1) -> ")


RANDOM = [sp.exp(x) - sp.exp(y), sp.log(x) - sp.log(y), 1 / x - 1 / (x + 1), sp.sqrt(x**2 + 1) - x,
          sp.exp(x) / (sp.exp(x) + sp.exp(y)), sp.log(1 + sp.exp(x + y)), x * y - sp.cos(x), sp.tanh(x) + x]


@pytest.mark.parametrize("expr", RANDOM, ids=str)
def test_never_worse(expr):
    vs = sorted(expr.free_symbols, key=str)
    res = stabilize(expr, vs, budget_s=6, n_points=N)
    for dt, (mb, xb, ma, xa) in res.bits.items():
        assert ma <= mb + 1e-9


a_, b_, c_ = sp.symbols("a b c", real=True)
_S3 = sp.exp(a_) + sp.exp(b_) + sp.exp(c_)
FAMILIES = [  # formerly left with NaN/inf where the reference is finite
    ("dsoftmax_da", sp.diff(sp.exp(a_) / _S3, a_), [a_, b_, c_]),
    ("dsoftmax_db", sp.diff(sp.exp(a_) / _S3, b_), [a_, b_, c_]),
    ("dsoftmax2_dy", sp.diff(sp.exp(x) / (sp.exp(x) + sp.exp(y)), y), [x, y]),
    ("tanh_via_exp", (sp.exp(x) - sp.exp(-x)) / (sp.exp(x) + sp.exp(-x)), [x]),
    ("dtanh_via_exp", sp.diff((sp.exp(x) - sp.exp(-x)) / (sp.exp(x) + sp.exp(-x)), x), [x]),
    ("dinv_hypot", sp.diff(1 / sp.sqrt(x**2 + y**2), x), [x, y]),
    # series at infinity in a regime, powers split so x**2 does not overflow
    ("sqrt_hyp_minus_x", sp.sqrt(x**2 + 1) - x, [x]),
    ("dsqrt_hyp_minus_x", sp.diff(sp.sqrt(x**2 + 1) - x, x), [x]),
    # (x - y)*(x + y) is inf*0 at x = +-y ~ 3e38 in float32: halves, times 4
    ("sqdiff", x**2 - y**2, [x, y]),
]


@pytest.mark.parametrize("name,expr,vs", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_no_nan_inf_left(name, expr, vs):
    """Softmax products, tanh written with exp, 1/hypot**3: no NaN/inf, mean < 1 bit, never worse."""
    res = stabilize(expr, vs, budget_s=10.0, n_points=128)
    for dt, (mb, xb, ma, xa) in res.bits.items():
        assert ma <= mb + 1e-9 and ma < 1.0, (dt, res.expr, ma)
        assert xa < (31.0 if dt == "float32" else 63.0), (dt, res.expr, xa)


@pytest.mark.parametrize("expr, vs", [(sp.Integer(3), []), (sp.sqrt(2) + 1, [x]), (sp.log(2) + 0 * x, [x])])
def test_constant_expressions_pass_through(expr, vs):
    """A constant (no input it depends on) has no points to check: it comes back as it is, with no
    rewrite (the never-worse check's points are drawn before the search only when there are inputs)."""
    res = stabilize(expr, vs)
    assert res.expr == expr and not res.records
