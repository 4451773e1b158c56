"""Topic 3: forward mode (JVP) versus reverse mode (VJP).

For f: R^n -> R^m with Jacobian J (m x n):
* a JVP pushes a tangent v forward and returns J v; with v = e_j it is column j of J;
* a VJP pulls a cotangent u back and returns J^T u; with u = e_i it is row i of J.
So the full Jacobian costs n JVPs or m VJPs: forward mode for few inputs, reverse mode for few
outputs (a gradient, m = 1, is one VJP).  Each pass costs a small multiple of evaluating f.
The two-VJP trick: w -> J^T w is linear in w, so the VJP of that map with cotangent v is
(J^T)^T v = J v.  A JVP can be had from reverse mode alone.
Run: python examples/topic3_jvp_vs_vjp.py
"""
import time

import numpy as np

import symgrad as sg


def f(x):  # R^3 -> R^2
    return np.stack([x[0] * x[1] * np.sin(x[2]), x[0] + np.exp(x[1] * x[2])])


SIG = "(3)->(2)"
x = np.array([1.0, 2.0, 0.5])

# Column by column: one JVP per input direction e_j.
columns = [sg.jvp(f, (x,), (e,), signature=SIG)[1] for e in np.eye(3)]
J_fwd = np.stack(columns, axis=1)
# Row by row: one VJP per output direction e_i.
y, vjp_fn = sg.vjp(f, x, signature=SIG)
print(f"f(x) at x = [1, 2, 0.5]: {y.tolist()}")
J_rev = np.stack([vjp_fn(e)[0] for e in np.eye(2)], axis=0)
print(f"Jacobian from 3 JVPs (columns): {J_fwd.tolist()}")
print(f"Jacobian from 2 VJPs (rows): {J_rev.tolist()}")
print(f"symgrad.jacobian: {sg.jacobian(f, signature=SIG)(x).tolist()}")


# The two-VJP trick.  lop(x, w) = J(x)^T w is itself a (compiled, traced) gradient.
def lop(x, w):
    return sg.grad(lambda x_: np.dot(w, f(x_)), signature="(n)->()")(x)


v = np.array([0.5, -1.0, 2.0])
_, vjp_lop = sg.vjp(lop, x, np.zeros(2), signature="(3),(2)->(3)")  # w's value is irrelevant
print(f"J v by the VJP of the VJP: {vjp_lop(v)[1].tolist()}")
print(f"J v by symgrad.jvp: {sg.jvp(f, (x,), (v,), signature=SIG)[1].tolist()}")


# Costs: g: R^n -> R^m with n = 400 inputs and m = 3 outputs.
def g(x):
    return np.stack([np.sum(np.sin(x)), np.sum(x * x), np.log(np.sum(np.exp(x)))])


n, m = 400, 3
xg = np.linspace(-1.0, 1.0, n)
_, t_g = sg.jvp(g, (xg,), (xg,), signature="(n)->(3)")     # compile once before timing
_, vjp_g = sg.vjp(g, xg, signature="(n)->(3)")
vjp_g(np.ones(m))


def best_of(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


J_cols, t_fwd = best_of(lambda: np.stack([sg.jvp(g, (xg,), (e,), signature="(n)->(3)")[1] for e in np.eye(n)], 1))
J_rows, t_rev = best_of(lambda: np.stack([vjp_g(e)[0] for e in np.eye(m)]))
print(f"g: R^{n} -> R^{m}; passes for the full Jacobian: JVP {n}, VJP {m}")
print(f"time for {n} JVPs: {t_fwd * 1e3:.2f} ms")
print(f"time for {m} VJPs: {t_rev * 1e3:.2f} ms")
print(f"max |J_jvp - J_vjp|: {np.abs(J_cols - J_rows).max():.3e}")
