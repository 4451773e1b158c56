"""Issue 16 points 1 and 3: the quadratic root's derivative in b, through ``sg.grad`` (no domain).

The root ``(-b + sqrt(b^2 - 4ac))/(2a)`` has the derivative ``(b/sqrt(b^2 - 4ac) - 1)/(2a)``, which
cancels for every b > 0: at b = 1e6 ... 1e8 (a, c near 1) it was wrong in most digits (21.6 bits
of mean error on bench_stability_api's points).  Its conjugate ``2c/((b + sqrt(b^2 - 4ac))
sqrt(b^2 - 4ac))`` cancels nowhere there but is 0 where ``4ac`` overflows (|a c| > 1e308), where
the form as written gives ``-1/(2a)``: the search now keeps the form as written beyond an input
magnitude (:meth:`symgrad.stabilize.search.Search.guarded`) and takes the split.  A derivative region
its search leaves inaccurate is also searched again from the derivative of the primal's stable
form (:mod:`symgrad.api.primal_seeds`): a seed is a candidate like any other, and a wrong one is
never taken.

References: the derivatives in 80-digit mpmath.
"""
import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.api.primal_seeds import _same_values
from symgrad.stabilize import searched_form, stabilize
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.numeric import evaluate


def root(a, b, c):
    return (-b + np.sqrt(b**2 - 4 * a * c)) / (2 * a)


def _mp_partial(k, row):
    """d/da (k = 0) or d/db (k = 1) of the root in 80-digit mpmath (the cancellation costs at most 50)."""
    with mpmath.workdps(80):
        a, b, c = (mpmath.mpf(float(v)) for v in row)
        s = mpmath.sqrt(b**2 - 4 * a * c)
        return float(-c / (a * s) - (-b + s) / (2 * a**2) if k == 0 else (b / s - 1) / (2 * a))


ROWS = np.array([[1.0, 1e6, 1.0], [0.7057433027730503, 4.4063808800289435, 0.7805425648264502],
                 [1.2524431554522946, 70259417.70662175, 0.5955323244322754], [0.50001, 99999999.0, 1.000000000001],
                 [2.0, 3.0, -5.0], [1.5, 1e4, 0.25], [0.8, 250.0, 1.3]])


def _ulps(got, want):
    return 2.0 ** ulp_bits(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)) - 1


def test_quadratic_root_derivative_in_b_through_grad():
    got = sg.grad(root, argnums=1)(*ROWS.T)
    want = np.array([_mp_partial(1, r) for r in ROWS])
    assert _ulps(got, want).max() <= 4
    with np.errstate(all="ignore"):  # the derivative as derived, in float64: most digits lost at b >= 1e6
        a, b, c = ROWS.T
        naive = (b / np.sqrt(b**2 - 4 * a * c) - 1) / (2 * a)
    assert _ulps(naive, want).max() > 1e6


def test_quadratic_root_derivative_keeps_its_value_where_4ac_overflows():
    # 4ac overflows, b^2 - 4ac too: the conjugate's derivative is 0 there, the form as written -1/(2a)
    a, b, c = 2.81741626e141, 3.87094725e-77, -5.99501179e303
    got = sg.grad(root, argnums=1)(np.array([a, 1.0]), np.array([b, 1e6]), np.array([c, 1.0]))
    want = np.array([_mp_partial(1, r) for r in [(a, b, c), (1.0, 1e6, 1.0)]])
    assert np.isfinite(got).all() and _ulps(got, want).max() <= 2


def test_seeds_are_candidates_and_a_wrong_seed_is_never_taken():
    a, b, c = sp.symbols("a b c", real=True)
    f = (-b + sp.sqrt(b**2 - 4 * a * c)) / (2 * a)
    e = sp.diff(f, b)
    stable = searched_form(f, [a, b, c], budget_s=1.0)  # what the program pass hands over
    assert stable.has(sp.Piecewise)  # the conjugate for b > 0
    right, wrong = sp.diff(stable, b), 2 * sp.diff(stable, b)
    seeded = stabilize(e, [a, b, c], budget_s=1.0, seeds=[wrong, right]).expr
    X = ROWS[[0, 2, 3, 5]]
    want = np.array([_mp_partial(1, r) for r in X])
    assert _ulps(evaluate(seeded, [a, b, c], X, np.float64), want).max() <= 2


def test_a_region_is_matched_to_the_primal_derivative_it_equals():
    x, y, g = sp.symbols("x y g", real=True)
    f = sp.log(1 + sp.exp(x * y))
    assert _same_values(sp.diff(f, x), sp.diff(f, x), [x, y])
    assert not _same_values(sp.diff(f, y), sp.diff(f, x), [x, y])
    assert not _same_values(g * sp.diff(f, x), sp.diff(f, x), [x, y])  # a cotangent times it: another function
    assert not _same_values(sp.sqrt(-1 - x**2), sp.sqrt(-1 - x**2), [x])  # never real: nothing to compare
