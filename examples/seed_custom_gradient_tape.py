"""Custom gradients with several inputs and with variables, read back from a GradientTape.

* bar(x, y) = x * y with its gradient written by hand: one persistent tape answers two gradient calls.
* linear_poly(x) = w[1] x + w[0] reads a Variable w; its grad_fn takes a ``variables`` keyword and
  returns (gradient for x, [gradient for each variable]).
Run: python examples/seed_custom_gradient_tape.py
"""
import numpy as np

import symgrad as sg


@sg.custom_gradient
def bar(x, y):
    def grad(upstream):
        return upstream * y, upstream * x   # dz/dx = y, dz/dy = x
    return x * y, grad


x, y = sg.constant(2.0, np.float32), sg.constant(3.0, np.float32)
with sg.GradientTape(persistent=True) as tape:
    tape.watch(x)
    tape.watch(y)
    z = bar(x, y)
dz_dx, dz_dy = tape.gradient(z, x), tape.gradient(z, y)   # persistent: two calls are allowed
print("z =", z, " dz/dx =", dz_dx, " dz/dy =", dz_dy)
assert (z.numpy(), dz_dx.numpy(), dz_dy.numpy()) == (6.0, 3.0, 2.0)

weights = sg.Variable(np.ones(2, dtype=np.float32), name="weights")


@sg.custom_gradient
def linear_poly(x):
    w = sg.convert_to_tensor(weights)         # a read of the Variable (watched by the tape)
    poly = w[1] * x + w[0]

    def grad_fn(dpoly, variables=None):
        assert variables is not None and len(variables) == 1
        grad_xs = dpoly * w[1]
        dy_dw = dpoly * np.stack([x ** 1, x ** 0])
        return grad_xs, [np.sum(np.reshape(dy_dw, (2, -1)), axis=1)]
    return poly, grad_fn


x = sg.constant([1.0, 2.0, 3.0], np.float32)
with sg.GradientTape(persistent=True) as tape:
    tape.watch(x)
    poly = linear_poly(x)
d_x, d_w = tape.gradient(poly, x), tape.gradient(poly, weights)
print("poly =", poly, " dpoly/dx =", d_x, " dpoly/dweights =", d_w)
assert poly.numpy().tolist() == [2.0, 3.0, 4.0]
assert d_x.numpy().tolist() == [1.0, 1.0, 1.0] and d_w.numpy().tolist() == [6.0, 3.0]
