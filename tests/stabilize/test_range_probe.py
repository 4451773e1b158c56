"""The sweep of every binade finds the inputs where a rewrite overflows and the formula as written does not."""
import mpmath
import numpy as np
import sympy as sp

import symgrad as sg
from symgrad.ir.sympy_funcs import expm1
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.range_probe import range_failures, sweep_points

x, a, b = sp.symbols("x a b", real=True)


def test_the_overflow_window_of_a_rewrite_is_found_and_only_it():
    """exp(-x) expm1(2x) overflows on (354.9, 709.8) where exp(x) - exp(-x) is finite: every point
    the probe returns lies there, and the formula as written has none of its own."""
    written = sp.exp(x) - sp.exp(-x)
    X = range_failures(written, [sp.exp(-x) * expm1(2 * x)], [x], None, "float64")[:, 0]
    assert len(X) >= 4
    assert np.all((X > 354.8) & (X < 709.8))
    assert not len(range_failures(written, [written], [x], None, "float64"))
    X32 = range_failures(written, [sp.exp(-x) * expm1(2 * x)], [x], None, "float32")[:, 0]
    assert len(X32) and np.all((X32 > 44.3) & (X32 < 88.8))  # float32's window: expm1(2x) past 3.4e38


def test_sweep_covers_every_binade_inside_the_domain():
    X = sweep_points([x], {x: (-1.0, 1e10)}, "float64")[:, 0]
    assert X.min() >= -1.0 and X.max() <= 1e10
    binades = np.unique(np.floor(np.log2(np.abs(X))))
    assert set(range(-1074, 34)) <= set(binades.astype(int))
    two = sweep_points([a, b], None, "float32")
    assert two.shape[1] == 2 and np.isfinite(two).all()


def _sinh2(v):
    with mpmath.workdps(40):
        return float(2 * mpmath.sinh(mpmath.mpf(v)))


def test_gradient_of_exp_minus_two_plus_exp_minus_is_finite_where_its_value_is():
    """d/dx (e^x - 2 + e^-x) = 2 sinh(x): the search's form exp(-x) expm1(2x) was inf from x = 355 on
    (the float64 kernel dropped the split that kept the formula as written there); the issue's
    point 1 asks for no NaN/inf where the reference is finite, overflow of intermediates included."""
    g = sg.grad(lambda t: np.exp(t) - 2 + np.exp(-t))
    pts = np.array([-700.0, -433.3, -360.0, -1e-9, 1e-9, 0.3, 360.0, 433.3, 600.0, 709.0])
    got = g(pts)
    want = np.array([_sinh2(v) for v in pts])
    assert np.isfinite(got).all()
    assert ulp_bits(got, want).max() <= np.log2(3.0) + 1e-9
