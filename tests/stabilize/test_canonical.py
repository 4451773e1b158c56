"""Products of a sum and its negation are merged before a region is measured (symgrad.stabilize.canonical)."""
import mpmath
import numpy as np
import sympy as sp

import symgrad as sg
from symgrad.stabilize.canonical import cancel_negated_factors

x, a, b = sp.symbols("x a b", real=True)


def test_a_quotient_of_a_sum_and_its_negation_is_minus_one():
    derived = sp.log(1 - x) - 1 - (x - 1) / (1 - x) - sp.log(x)  # reverse mode's entropy derivative
    assert cancel_negated_factors(derived) == sp.log(1 - x) - sp.log(x)
    assert cancel_negated_factors((a - b) ** 2 / (b - a)) == b - a
    assert cancel_negated_factors((a - b) ** 3 / (b - a) ** 2) == a - b
    assert cancel_negated_factors(x * (a - b) / (b - a) * sp.exp((x - 1) / (1 - x))) == -x * sp.exp(-1)


def test_non_integer_powers_and_unrelated_products_are_left_alone():
    assert cancel_negated_factors(sp.sqrt(x - 1) / (1 - x)) == sp.sqrt(x - 1) / (1 - x)
    e = (a + b) / (a - b) + sp.log(x) * (1 - x)
    assert cancel_negated_factors(e) == e


def test_entropy_derivative_through_grad_is_within_two_ulps_where_sympy_diff_is_within_one():
    """-x log x - (1 - x) log(1 - x): at x = 0.3788 the derived form's -1 and +1 cost 3 ulps."""
    f = lambda x: -x * np.log(x) - (1 - x) * np.log(1 - x)  # noqa: E731
    xs = np.array([0.3787622682550214, 0.3, 0.5 + 2**-20, 0.7, 1e-3])
    got = sg.grad(f)(xs)
    with mpmath.workprec(200):
        want = np.array([float(mpmath.log1p(-mpmath.mpf(v)) - mpmath.log(v)) for v in xs])
    assert np.all(np.abs(got - want) <= 2 * np.spacing(np.abs(want))), (got - want) / np.spacing(np.abs(want))
