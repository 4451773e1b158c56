"""Float constants of a traced program read as the closed forms they round (symgrad/stabilize/constants.py)."""
import math

import numpy as np
import sympy as sp

from symgrad.stabilize.constants import closed_form


def test_rounded_constants_are_read_as_their_closed_forms():
    pi, s2 = sp.pi, sp.sqrt(2)
    cases = {
        1 / np.sqrt(2.0): s2 / 2,                       # 1 ulp below the nearest double of sqrt(2)/2
        np.sqrt(2 / np.pi): s2 / sp.sqrt(pi),
        1 / np.sqrt(2 * np.pi): 1 / sp.sqrt(2 * pi),
        2 / np.pi: 2 / pi,
        np.log(2.0): sp.log(2),
        0.49999999999999994: sp.Rational(1, 2),         # rounding noise of 1/2
        1.702: sp.Rational(851, 500),
        -3 * np.pi / 4: -3 * pi / 4,
    }
    for v, want in cases.items():
        assert sp.simplify(closed_form(float(v)) - want) == 0, (v, closed_form(float(v)))


def test_other_constants_stay_as_written():
    for v in (0.044715, 1.0507009873554805, 1.6732632423543772, 1e-300, 0.7071067811865, math.pi + 1e-12):
        got = closed_form(v)
        assert isinstance(got, sp.Float) and float(got) == v, (v, got)
    assert closed_form(0.0) == 0 and closed_form(float("inf")) == sp.oo
