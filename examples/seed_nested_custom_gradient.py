"""Nesting custom gradients: two patterns from the tf.custom_gradient documentation, for f(x) = x**3.

1. grad_fn is itself a custom_gradient function of the upstream value dy.  Its rule (grad_grad_fn) is the
   derivative of grad_fn *with respect to dy*; symgrad uses it to build forward mode from reverse mode.
   It is not the second derivative of f: x is only captured, so no second derivative flows, and writing
   the second derivative (6 x) there makes forward mode wrong.
2. For a real second derivative, make the first-order gradient a custom_gradient function *of x*.
Run: python examples/seed_nested_custom_gradient.py
"""
import numpy as np

import symgrad as sg


def cube_with_nested_rule(inner_rule):
    @sg.custom_gradient
    def cube(x):
        @sg.custom_gradient
        def grad_fn(dy):
            def grad_grad_fn(ddy):
                return ddy * inner_rule(x)
            return dy * 3 * x ** 2, grad_grad_fn
        return x ** 3, grad_fn
    return cube


@sg.custom_gradient
def cube_fused(x):
    y, x_grad = x ** 3, 3 * x ** 2

    def first_order_gradient(dy):
        @sg.custom_gradient
        def first_order_custom(unused_x):
            def second_order(ddy):
                return ddy * 6 * x              # d(3 x**2)/dx
            return x_grad, second_order
        return dy * first_order_custom(x)
    return y, first_order_gradient


def derivatives(f, x0):
    """(df/dx by a tape, d2f/dx2 by nested tapes, df/dx by forward mode) at x0."""
    x = sg.constant(x0)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    h = outer.gradient(g, x, unconnected_gradients="zero")
    with sg.ForwardAccumulator(x, 1.0) as acc:
        y = f(x)
    return float(g), float(h), float(acc.jvp(y))


cases = [
    ("pattern 1, rule = d/d(dy) = 3 x^2", cube_with_nested_rule(lambda x: 3 * x ** 2), (27.0, 0.0, 27.0)),
    ("pattern 1, rule = 6 x (pitfall)", cube_with_nested_rule(lambda x: 6 * x), (27.0, 0.0, 18.0)),
    ("pattern 2, fused", cube_fused, (27.0, 18.0, 27.0)),
]
print("x = 3:                               grad  2nd   jvp   (true: 27, 18, 27)")
for name, f, expected in cases:
    got = derivatives(f, 3.0)
    print(f"{name:36s} {got[0]:5.1f} {got[1]:5.1f} {got[2]:5.1f}")
    assert got == expected, (name, got, expected)
