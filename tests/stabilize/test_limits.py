"""Saturation limits (symgrad/stabilize/limits.py): constants for huge inputs, as regime pieces."""
import mpmath
import numpy as np
import sympy as sp

import symgrad as sg
from symgrad.ir.sympy_funcs import sigmoid
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.limits import saturation_limits

x = sp.Symbol("x", real=True)


def test_saturation_limits_are_read_from_references_and_only_where_the_function_settles():
    assert dict(saturation_limits(sigmoid(x))) == {"limit_at_inf": 1, "limit_at_minus_inf": 0}
    assert dict(saturation_limits(sp.atan(x))) == {"limit_at_inf": sp.Float(np.pi / 2),
                                                  "limit_at_minus_inf": sp.Float(-np.pi / 2)}
    assert saturation_limits(sp.sin(x) / x) == []  # still varies at 2**200 ... 2**1000
    assert saturation_limits(x**2) == []  # no finite limit
    assert dict(saturation_limits(sp.exp(x))) == {"limit_at_minus_inf": 0}
    assert saturation_limits(x * sp.Symbol("y")) == []  # one input only


def _gelu_tanh(t):
    return 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t**3)))


def test_gelu_tanh_derivative_is_finite_where_its_cube_overflows():
    """The derivative of the tanh form of GELU as reverse mode gives it multiplies sigmoid(-u) = 0
    by x**3 = inf for |x| > 5.6e102 (NaN, as JAX's and sympy.diff's forms); the truth rounds to 1
    (x > 0) and to -0 (x < 0).  The search offers the limits as regime pieces."""
    g = sg.grad(_gelu_tanh)
    big = np.array([1e103, 1e200, 1.7e308])
    np.testing.assert_array_equal(g(big), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(np.abs(g(-big)), [0.0, 0.0, 0.0])
    # and the thresholds the regime search placed cost nothing at ordinary inputs: within 2 ulps, or
    # for x < 0, where f' is small, the conditioning bound log2(3) + log2(1 + kappa) bits, kappa =
    # |x f''(x)/f'(x)| (the rounding of the argument u of tanh is amplified there)
    c = mpmath.mpf(float(np.sqrt(2 / np.pi)))
    k = mpmath.mpf(0.044715)

    def exact(t):  # d/dx of 0.5 x (1 + tanh(c (x + k x^3))), in closed form
        u = c * (t + k * t**3)
        return (1 + mpmath.tanh(u)) / 2 + t / 2 * mpmath.sech(u) ** 2 * c * (1 + 3 * k * t**2)

    xs = np.concatenate([np.linspace(-12.0, 12.0, 241), [7.4, 7.489, 7.5, 8.0, 9.0, 30.0, 50.0]])
    got = g(xs)
    with mpmath.workdps(80):
        want = np.array([float(exact(mpmath.mpf(float(t)))) for t in xs])
        kappa = np.array([float(abs(t * mpmath.diff(exact, mpmath.mpf(float(t))) / exact(mpmath.mpf(float(t)))))
                          for t in xs])
    bits = ulp_bits(got, want)
    bound = np.log2(3.0) + np.log2(1 + kappa) * (xs < 0) + 1e-9
    assert np.all(bits <= bound), (xs[bits > bound], bits[bits > bound])
