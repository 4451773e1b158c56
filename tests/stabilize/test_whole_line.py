"""Issue 16, point 3, as a user gets it: no domain given, the search samples the whole real line.

A program traced by ``sg.jit``/``sg.grad`` carries no domain, so its stabiliser searches on
bit patterns of every magnitude and sign.  Two families of the issue were left as written there
while a bounded domain found them (benchmarks/bench_stability.py gives domains):

* the quadratic formula: its conjugate ``-2c/(b + sqrt(b**2 - 4ac))`` was never verified,
  because at b < 0 the conjugate's denominator cancels beyond the reference's first precisions
  (1400 bits at b = -9.4e36, 4ac = 3e-332), the division by the 0 it gave made the value
  "not computable", and the verifier took that for a mismatch;
* the partial fractions ``1/(x + 1) - 2/x + 1/(x - 1)``: the combined fraction, the step to the
  answer, is worse on the mean over the whole line (its denominator overflows past 1e51), so the
  search stopped after one round without expanding it;
* the softmax of three logits: ``sg.grad`` differentiates into ``(1/S - exp(a)/S**2) exp(a)``, not
  sympy.diff's sum, and the search's route from there passes ``(X) exp(a)/(S S_shifted)``, where the
  max-shift rule saw two exponential sums below the line and gave up (it also shifted every
  exponential factor above the line, not one: a wrong candidate the verifier threw away);
* cosine similarity's gradient: a regime split on ``max|input|`` took ``(x**2 + y**2)**(3/2)``
  for inputs below 1e13, which is NaN wherever x and y are both below 1e-103 and a or b is not:
  points 256 random samples of four inputs rarely hold (the split now charges a candidate for
  NaN/inf on a sample of mixed magnitudes, ``regimes._magnitude_stress``).
Checked against 60-digit mpmath through the compiled kernels.
"""
import mpmath
import numpy as np
import sympy as sp

import symgrad as sg
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.reference import compile_mpmath, reference_values
from symgrad.stabilize.verify import equivalent

TWO_ULPS = np.log2(3) + 1e-9
BUDGET = 2.0  # CPU s per program for the cosine gradients: the factored d/da needs about 1 s of search


def _bits(got, want):
    return ulp_bits(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64))


def test_conjugate_of_the_quadratic_formula_is_verified_where_it_cancels_deeply():
    a, b, c = sp.symbols("a b c", real=True)
    e = (-b + sp.sqrt(b**2 - 4 * a * c)) / (2 * a)
    conj = -2 * c / (b + sp.sqrt(b**2 - 4 * a * c))
    assert equivalent(e, conj, [a, b, c])
    assert not equivalent(e, -2 * c / (b - sp.sqrt(b**2 - 4 * a * c)), [a, b, c])  # the other root


def test_quadratic_root_without_a_domain():
    f = lambda a, b, c: (-b + np.sqrt(b**2 - 4 * a * c)) / (2 * a)  # noqa: E731
    pts = np.array([[1.0, 1e8, 1.0], [0.5, 1e5, 2.0], [1.0, -1e8, 1.0], [2.0, 3.0, -5.0], [1.0, 7.0, 3.0]])
    with mpmath.workdps(60):
        want = [float((-mpmath.mpf(q) + mpmath.sqrt(mpmath.mpf(q) ** 2 - 4 * mpmath.mpf(p) * mpmath.mpf(r)))
                      / (2 * mpmath.mpf(p))) for p, q, r in pts]
    got = sg.jit(f)(pts[:, 0], pts[:, 1], pts[:, 2])
    assert np.all(_bits(got, want) <= TWO_ULPS), (got, want)
    naive = f(pts[:, 0], pts[:, 1], pts[:, 2])
    assert _bits(naive, want)[0] > 20  # -7.45e-9 for -1e-8 as written


def test_partial_fractions_gradient_without_a_domain():
    f = lambda x: 1 / (x + 1) - 2 / x + 1 / (x - 1)  # noqa: E731
    xs = np.array([3.0, 1e5, 1e10, 1e20, -1e10, 0.3, -7.5])
    fn = compile_mpmath(sp.diff(f(sp.Symbol("x", real=True)), sp.Symbol("x", real=True)), [sp.Symbol("x", real=True)])
    with mpmath.workdps(200):
        want = [float(fn([mpmath.mpf(v)])) for v in xs]
    got = sg.grad(f)(xs)
    assert np.all(_bits(got, want) <= TWO_ULPS), (got, want)
    assert abs(want[2] + 6e-40) < 1e-52  # -6/x**4 at 1e10, where the formula as written gives 3e-36


def test_max_shift_takes_one_factor_of_the_numerator():
    from symgrad.stabilize.rules_exp import _softmax

    a, b, c = sp.symbols("a b c", real=True)
    E, S = sp.exp, sp.exp(a) + sp.exp(b) + sp.exp(c)
    m = sp.Max(a, b, c)
    shifted = E(a - m) + E(b - m) + E(c - m)
    for e in ((E(b) + E(c)) * E(a) / S, (E(b - m) + E(c - m)) * E(a) / (S * shifted)):
        out = _softmax(e)
        assert out and all(equivalent(e, o, [a, b, c]) for o in out), out
        assert all(not o.has(E(a) + E(b) + E(c)) for o in out)


def test_softmax_gradient_through_grad():
    f = lambda a, b, c: np.exp(a) / (np.exp(a) + np.exp(b) + np.exp(c))  # noqa: E731
    pts = np.array([[3.0, 1.0, 2.0], [1000.0, 999.0, 998.0], [-800.0, -801.5, -803.0], [1e8, -1e-300, 1.0]])
    with mpmath.workdps(60):
        want = []
        for p in pts:
            s = mpmath.exp(mpmath.mpf(p[0])) / sum(mpmath.exp(mpmath.mpf(v)) for v in p)
            want.append(float(s * (1 - s)))
    got = sg.grad(f)(pts[:, 0], pts[:, 1], pts[:, 2])
    assert np.all(np.isfinite(got)) and np.all(_bits(got, want) <= TWO_ULPS), (got, want)


def test_cosine_similarity_gradient_is_finite_where_inputs_differ_widely_in_magnitude():
    x, y, a, b = sp.symbols("x y a b", real=True)
    e = (x * a + y * b) / (sp.sqrt(x**2 + y**2) * sp.sqrt(a**2 + b**2))
    pts = np.array([[-1.42280627e-167, -3.94796943e-288, -3.85097094e-249, -1.27346711e-11],
                    [3e-160, -2e-170, 3.0, -4.0], [1e-200, -1e-200, 0.5, 7.0], [2.5, -1.5, 1e-180, 3e-190],
                    [1e-3, 2e-3, -5.0, 1e2], [-7.0, 1e150, 2.0, 3.0]])
    for i, v in enumerate((x, y, a, b)):
        g = sg.grad(lambda x, y, a, b: (x * a + y * b) / (np.sqrt(x**2 + y**2) * np.sqrt(a**2 + b**2)), argnums=i,
                    stabilize=BUDGET)
        want = reference_values(compile_mpmath(sp.diff(e, v), [x, y, a, b]), pts, "float64")  # 150 digits cancel
        got = g(*[pts[:, k].copy() for k in range(4)])
        assert np.all(np.isfinite(got)), (v, got)
        bits = _bits(got, want)
        assert bits.max() <= TWO_ULPS, (v, pts[bits > TWO_ULPS], bits)


def test_compound_interest_searched_without_expanding_the_100th_power():
    """``(1 + x)**100 - 1``: the search no longer expands or factors the 100th power (factoring
    took 0.4 s of a program's 1 s), and over the whole line it reaches a form within 2 ulps where
    the formula as written is 0 at x = 1e-18 and off by 1e-8 relative at x = 1e-10.  The budget is
    4 s: the first search in a process also pays SymPy's warm-up, and at 1 s it sometimes stops at
    a series split that is 3 ulps off at x = 0.45."""
    from symgrad.stabilize import stabilize
    from symgrad.stabilize.transforms import algebraic_variants

    x = sp.Symbol("x", real=True)
    e = (1 + x) ** 100 - 1
    assert not [name for name, _ in algebraic_variants(e) if name in ("expand", "cancel", "factor")]
    res = stabilize(e, [x], budget_s=4.0)
    pts = np.array([1e-18, 1e-10, -3e-7, 0.01, -0.4, 0.45])
    with mpmath.workdps(60):
        want = [float((1 + mpmath.mpf(float(p))) ** 100 - 1) for p in pts]
    got = res.evaluate([x], pts[:, None], "float64")
    assert _bits(got, want).max() <= TWO_ULPS, (res.expr, got, want)


def test_the_real_domain_filter_raises_no_complex_warning_through_sigmoid():
    """The regime split's stress points are filtered by the formula as written in complex
    arithmetic (``regimes._real_at``).  sigmoid and softplus have no complex extension there:
    they cast the complex array to float, and the ComplexWarning reached the user's terminal
    (examples/main_job.py, the logistic-regression gradient), and the filter judged the points by
    the real part alone.  They now evaluate their formulas in complex arithmetic; a function with
    none (erf) refuses complex input, and the filter keeps every point."""
    import warnings

    from symgrad.ir.sympy_funcs import sigmoid
    from symgrad.stabilize.regimes import _real_at

    x, y = sp.symbols("x y", real=True)
    X = np.array([[1.0, 2.0], [-3.0, 0.5], [1e300, -1e-300]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _real_at(sigmoid(x) * y - y, [x, y], X).all()
        assert list(_real_at(sp.log(x) * y, [x, y], X)) == [True, False, True]  # log has a complex facet
        assert list(_real_at(sigmoid(sp.log(x)) * y, [x, y], X)) == [True, False, True]
        assert _real_at(sp.erf(sp.log(x)) * y, [x, y], X).all()  # no complex erf: no filter
    assert not [w for w in caught if issubclass(w.category, np.exceptions.ComplexWarning)]
