"""The reflection term of polygamma for large negative arguments, on scalars, written once.

DLMF 5.15.6: psi_n(1 - x) + (-1)**(n+1) psi_n(x) = (-1)**n pi d^n/dx^n cot(pi x), so

    psi_n(x) = (-1)**n psi_n(1 - x) - pi**(n+1) P_n(cot(pi x))

with P_0(c) = c and P_(k+1)(c) = -(1 + c**2) P_k'(c) (d/dy cot(y) = -(1 + cot(y)**2)).
Both evaluations of polygamma take it below x = -20 (n >= 1): the kernels' ``_polygamma``
(:mod:`symgrad.emit.prelude`) and the stabiliser's NumPy facet (:mod:`symgrad.ir.rules.special`).
The recurrence psi_n(x) = psi_n(x + 1) - (-1)**n n!/x**(n+1) they use elsewhere would take |x|
steps there (forever beyond 2**53, where x + 1 == x), and SciPy's Hurwitz zeta steps the same
way (5 s at x = -2.5e8).

The text between the two marker lines runs in both places with the same roundings: generated
modules copy it (:func:`symgrad.emit.prelude`, every name prefixed ``_``, each function
``numba.njit``), the NumPy facet calls it point by point.
"""
from __future__ import annotations

import math

__all__ = ["polygamma_reflection", "cot_pi"]

# ---- generated modules copy the text from here to the end marker (symgrad.emit.prelude): ----
# ---- top-level names only, using math; every name is prefixed _ there, functions njit. ----


def cot_pi(x):
    """cot(pi x) for finite non-integer x, taken at the exact remainder r = x - round(x) in
    [-1/2, 1/2] (pi x itself is rounded: cot of it is wrong in most digits for large |x|);
    tan(pi (1/2 - |r|)) near the half-integers, where it is 0."""
    r = x - math.floor(x + 0.5)
    if r > 0.25:
        return math.tan(math.pi * (0.5 - r))
    if r < -0.25:
        return -math.tan(math.pi * (0.5 + r))
    return 1.0 / math.tan(math.pi * r)


def polygamma_reflection(n, x):
    """-pi**(n+1) P_n(cot(pi x)) of DLMF 5.15.6 (module docstring), for an integer order
    n >= 0 given as a float and a finite non-integer x: psi_n(x) - (-1)**n psi_n(1 - x)."""
    m = int(n)
    coef = [0.0] * (m + 3)  # P_k's coefficients, lowest power first
    coef[1] = 1.0           # P_0(c) = c
    for _ in range(m):
        new = [0.0] * (m + 3)
        for j in range(m + 2):  # P'(c) (-(1 + c**2)): j-th coefficient
            new[j] = -((j + 1.0) * coef[j + 1] + ((j - 1.0) * coef[j - 1] if j >= 1 else 0.0))
        coef = new
    c = cot_pi(x)
    p = 0.0
    for j in range(m + 1, -1, -1):  # P_m has degree m + 1
        p = p * c + coef[j]
    return -math.pi ** (n + 1.0) * p


# ---- end of the text generated modules copy ----
