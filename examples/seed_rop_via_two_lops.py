"""A Jacobian-vector product (R-operator) from two vector-Jacobian products (L-operators).

For y = f(x), g(w) = J^T w is one VJP.  g is linear in w, so its own VJP with cotangent v is
(J^T)^T v = J v: Rop(f, x, v) = Lop(Lop(f, x, w), w, v), for any value of the dummy w.
Here f is a tanh layer; the result is checked against symgrad.jvp (compiled) and the tape/accumulator.
Run: python examples/seed_rop_via_two_lops.py
"""
import numpy as np

import symgrad as sg


def layer(x, W, b):
    return np.tanh(W @ x + b)


def lop(x, W, b, w):
    """J^T w: the gradient of <w, f(x)> with respect to x (a function of w as well)."""
    return sg.grad(lambda x_: np.dot(w, layer(x_, W, b)), signature="(n)->()")(x)


rng = np.random.default_rng(0)
x, W, b, v = rng.standard_normal(4), rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal(4)
w = np.zeros(3)

# Compiled: the second Lop is symgrad.vjp of lop with respect to w.
_, vjp_lop = sg.vjp(lop, x, W, b, w, signature="(n),(m,n),(m),(m)->(n)")
rop = vjp_lop(v)[3]
_, jvp = sg.jvp(layer, (x, W, b), (v, np.zeros_like(W), np.zeros_like(b)), signature="(n),(m,n),(m)->(m)")
print("Lop(Lop(f, x, w), w, v) =", rop)
print("symgrad.jvp             =", jvp)
np.testing.assert_allclose(rop, jvp, rtol=1e-13)

# Eager: the same two Lops with nested tapes.
xs, ws = sg.constant(x), sg.constant(w)
with sg.GradientTape() as outer:
    outer.watch(ws)
    with sg.GradientTape() as inner:
        inner.watch(xs)
        y = layer(xs, W, b)
    g = inner.gradient(y, xs, output_gradients=ws)   # J^T w
rop_tape = outer.gradient(g, ws, output_gradients=v)  # J v
print("with GradientTape       =", rop_tape)
np.testing.assert_allclose(rop_tape.numpy(), jvp, rtol=1e-13)

# Both programs, as symgrad generates them (float64 cores): the JVP by transposing twice
# and the JVP by forward mode. The first still mentions the dummy w; its value does not matter.
def core(source: str) -> str:
    start = source.index("@numba.njit")
    return source[start:source.index("\n@numba.njit", start + 1)].rstrip()


print("\nJVP as the VJP of a VJP (symgrad.trace(lop, ...).source('vjp')):")
print(core(sg.trace(lop, x, W, b, w, signature="(n),(m,n),(m),(m)->(n)").source("vjp", stabilize=False)))
print("\nJVP by forward mode (symgrad.trace(layer, ...).source('jvp')):")
print(core(sg.trace(layer, x, W, b, signature="(n),(m,n),(m)->(m)").source("jvp", stabilize=False)))
