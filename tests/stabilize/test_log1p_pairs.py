"""Issue 16, point 3: the log addition identity for log1p pairs, found by the search.

d/dx log1p(-x)/log1p(x) (Hamming's example 3.10, "qlog") has the numerator
(1 + x) log1p(x) + (1 - x) log1p(-x) = x**2 + O(x**4) from terms of size x: log2(1/x) bits lost
as derived.  Paired as log1p(-x**2) + x log1p(2x/(1 - x)) it loses none.
"""
import numpy as np
import sympy as sp

from symgrad.stabilize import stabilize
from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.reference import compile_mpmath, reference_values

x = sp.symbols("x", real=True)
TWO_ULPS = float(np.log2(3.0))


def test_qlog_derivative_pairs_its_log1p_terms():
    e = sp.diff(sp.log(1 - x) / sp.log(1 + x), x)
    res = stabilize(e, [x], domain={x: (-0.999, 0.999)})
    X = np.array([[0.02], [0.05], [0.1], [0.3], [0.9]])
    ref = reference_values(compile_mpmath(e, [x]), X, "float64")
    assert np.all(ulp_bits(res.evaluate([x], X, "float64"), ref) <= TWO_ULPS)
