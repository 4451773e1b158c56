"""stop_gradient: the identity on values, a constant for every derivative (any mode, any order).

f(x) = x**2 * stop_gradient(x) equals x**3, but its derivatives treat the second factor as a constant:
f' = 2 x * x, f'' = 2 x (not 3 x**2 and 6 x).
Run: python examples/seed_stop_gradient.py
"""
import numpy as np

import symgrad as sg


def f(x):
    return x ** 2 * sg.stop_gradient(x)


x0 = 1.5
compiled = (float(sg.jit(f)(x0)), float(sg.grad(f)(x0)), float(sg.jvp(f, (x0,), (1.0,))[1]), float(sg.hessian(f)(x0)))
print("compiled: f, grad, jvp, hessian =", compiled)
assert compiled == (3.375, 4.5, 4.5, 3.0)

x = sg.constant(x0)
with sg.ForwardAccumulator(x, 1.0) as acc:
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
eager = (float(y), float(g), float(acc.jvp(y)), float(h))
print("eager:    f, grad, jvp, 2nd     =", eager)
assert eager == (3.375, 4.5, 4.5, 3.0)
