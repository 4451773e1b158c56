"""Topic 7: Robertson's stiff chemical kinetics with an exact Jacobian.

    y0' = -0.04 y0 + 1e4 y1 y2
    y1' =  0.04 y0 - 1e4 y1 y2 - 3e7 y1^2
    y2' =  3e7 y1^2
The rate constants span nine orders of magnitude, so explicit methods need tiny steps; the
implicit BDF method needs the Jacobian df/dy for its Newton iterations.  symgrad.jacobian
(argnums=1, signature "(),(3)->(3)") compiles it exactly; without jac= SciPy estimates it by
finite differences, paying extra right-hand-side calls (only a few dozen here: with three
unknowns a difference Jacobian is cheap, and BDF re-evaluates its Jacobian rarely).  Both solves are compared with the
reference solution at t = 40 (Hairer & Wanner, Solving ODEs II) and with each other;
y0 + y1 + y2 = 1 is conserved.
Run: python examples/topic7_robertson.py
"""
import time

import numpy as np
from scipy.integrate import solve_ivp

import symgrad as sg


def robertson(t, y):
    k1, k2, k3 = 0.04, 3e7, 1e4
    return np.stack([-k1 * y[0] + k3 * y[1] * y[2],
                     k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
                     k2 * y[1] ** 2])


SIG = "(),(3)->(3)"
rhs = sg.jit(robertson, signature=SIG)
jac = sg.jacobian(robertson, argnums=1, signature=SIG)
y_test = np.array([0.9, 1e-5, 0.1])
print(f"symgrad Jacobian at y = [0.9, 1e-5, 0.1]: {jac(0.0, y_test).tolist()}")
print(f"closed-form Jacobian: {[[-0.04, 1e4 * 0.1, 1e4 * 1e-5], [0.04, -1e4 * 0.1 - 6e7 * 1e-5, -1e4 * 1e-5], [0.0, 6e7 * 1e-5, 0.0]]}")

calls = [0]


def counted_rhs(t, y):   # solve_ivp's nfev leaves out finite-difference calls, so count them here
    calls[0] += 1
    return rhs(t, y)


y0, span, opts = [1.0, 0.0, 0.0], (0.0, 40.0), dict(method="BDF", rtol=1e-10, atol=1e-14)
counted_rhs(0.0, np.array(y0)), jac(0.0, np.array(y0))   # compile before timing
results = {}
for label, kwargs in (("exact Jacobian", dict(jac=jac)), ("finite differences", {})):
    calls[0] = 0
    t0 = time.perf_counter()
    sol = solve_ivp(counted_rhs, span, y0, **opts, **kwargs)
    elapsed = time.perf_counter() - t0
    results[label] = sol.y[:, -1]
    print(f"{label}: y(40): {sol.y[:, -1].tolist()}")
    print(f"{label}: steps, rhs calls, Jacobian evaluations: {[sol.t.size - 1, calls[0], sol.njev]}")
    print(f"{label}: time: {elapsed:.3f} s")
    print(f"{label}: 1 - sum(y(40)): {1.0 - sol.y[:, -1].sum():.3e}")
reference = np.array([0.7158270687193135, 9.185534764529634e-06, 0.2841637457458220])
print(f"reference y(40): {reference.tolist()}")
for label, y_end in results.items():
    print(f"{label}: max relative error vs reference: {np.max(np.abs(y_end - reference) / reference):.3e}")
