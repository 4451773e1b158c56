"""Topic 2: custom gradients with two inputs, and with variables.

* Two inputs: lse(x, y) = log(e^x + e^y).  grad_fn(upstream) returns one gradient per input,
  (upstream * sigmoid(x - y), upstream * sigmoid(y - x)), written so that nothing overflows.
  symgrad uses the rule in reverse mode (grad), forward mode (jvp, by transposing it) and for
  the Hessian (by differentiating it).
* Variables: affine(x) = w[0] + w[1] x reads a symgrad.Variable w.  Following TensorFlow's
  tf.custom_gradient contract, grad_fn takes a ``variables`` keyword (the Variables read in the
  forward pass) and returns (gradient for x, [one gradient per variable]).  A GradientTape
  watches the variable automatically; the result is checked against the plain function.
Run: python examples/topic2_custom_gradients.py
"""
import numpy as np

import symgrad as sg


def lse_plain(x, y):
    return np.log(np.exp(x) + np.exp(y))


@sg.custom_gradient
def lse(x, y):
    def grad_fn(upstream):
        return upstream / (1 + np.exp(y - x)), upstream / (1 + np.exp(x - y))
    return np.maximum(x, y) + np.log1p(np.exp(-np.abs(x - y))), grad_fn


x0, y0 = 1000.0, 0.0
print(f"lse(1000, 0) custom: {sg.jit(lse)(x0, y0)}")
print(f"grad of plain lse at (1000, 0), stabilize=False: {[float(g) for g in sg.grad(lse_plain, argnums=(0, 1), stabilize=False)(x0, y0)]}")
print(f"grad of custom lse at (1000, 0): {[float(g) for g in sg.grad(lse, argnums=(0, 1))(x0, y0)]}")

x0, y0 = 0.3, -0.5
s = 1 / (1 + np.exp(y0 - x0))  # sigmoid(x - y), by hand
print(f"sigmoid(x - y) at (0.3, -0.5) by hand: {s}")
print(f"grad of custom lse at (0.3, -0.5): {[float(g) for g in sg.grad(lse, argnums=(0, 1))(x0, y0)]}")
_, tangent = sg.jvp(lse, (x0, y0), (2.0, -1.0))  # forward mode from the transposed rule
print(f"jvp of custom lse with tangent (2, -1): {tangent}")
H = sg.hessian(lse, argnums=(0, 1))(x0, y0)  # nested tuple H[i][j]
print(f"Hessian of custom lse: {[[float(H[i][j]) for j in range(2)] for i in range(2)]}")
print(f"s (1 - s) by hand: {s * (1 - s)}")


# Variables: the rule returns (grad_xs, grad_vars).
weights = sg.Variable(np.array([0.5, 2.0]), name="weights")


@sg.custom_gradient
def affine(x):
    w = sg.convert_to_tensor(weights)   # reading the Variable records it for grad_fn's `variables`
    y = w[0] + w[1] * x

    def grad_fn(upstream, variables=None):
        print(f"grad_fn received variables: {[v.name for v in variables]}")
        grad_x = upstream * w[1]
        grad_w = np.stack([np.sum(upstream), np.sum(upstream * x)])   # d/dw0, d/dw1, summed over x
        return grad_x, [grad_w]
    return y, grad_fn


def affine_plain(x):
    w = sg.convert_to_tensor(weights)
    return w[0] + w[1] * x


x = sg.constant([1.0, 2.0, 3.0])
upstream = np.array([1.0, -1.0, 2.0])
results = {}
for name, fn in (("custom", affine), ("plain", affine_plain)):
    with sg.GradientTape() as tape:    # Variables are watched automatically
        tape.watch(x)
        y = fn(x)
    d_x, d_w = tape.gradient(y, [x, weights], output_gradients=upstream)
    results[name] = (d_x.numpy(), d_w.numpy())
    print(f"{name} affine(x): {y.numpy().tolist()}")
    print(f"{name} d/dx: {d_x.numpy().tolist()}")
    print(f"{name} d/dweights: {d_w.numpy().tolist()}")
print(f"by hand d/dx = upstream * w1: {(upstream * 2.0).tolist()}")
print(f"by hand d/dweights = [sum(upstream), sum(upstream * x)]: {[float(upstream.sum()), float(upstream @ [1.0, 2.0, 3.0])]}")
