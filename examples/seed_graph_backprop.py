"""Backpropagation on a small computation graph (the SimpleFlow article's examples), with a tape.

* Loss = z (x + y): dLoss/dx = dLoss/dy = z, dLoss/dz = x + y.
* Broadcasting add C = A + b: dL/db sums the upstream gradient G over the axes b was repeated along.
* Matrix product C = A B: dL/dA = G B^T, dL/dB = A^T G.
Run: python examples/seed_graph_backprop.py
"""
import numpy as np

import symgrad as sg

x, y, z = sg.constant(2.0), sg.constant(3.0), sg.constant(6.0)
with sg.GradientTape() as tape:
    tape.watch([x, y, z])
    loss = z * (x + y)
dx, dy, dz = tape.gradient(loss, [x, y, z])
print(f"Loss = {loss}; dLoss/dx = {dx}, dLoss/dy = {dy}, dLoss/dz = {dz}")
assert (float(loss), float(dx), float(dy), float(dz)) == (30.0, 6.0, 6.0, 5.0)

rng = np.random.default_rng(1)
A, G = rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
for b in (rng.standard_normal(()), rng.standard_normal((2, 1))):
    a_t, b_t = sg.constant(A), sg.constant(b)
    with sg.GradientTape() as tape:
        tape.watch(b_t)
        C = a_t + b_t
    db = tape.gradient(C, b_t, output_gradients=G)
    expected = G.sum() if b.ndim == 0 else G.sum(axis=1, keepdims=True)
    print(f"b of shape {b.shape}: dL/db = {db.numpy().ravel()}  (G summed over broadcast axes: {np.ravel(expected)})")
    np.testing.assert_allclose(db.numpy(), expected, rtol=1e-15)

M, N, K = 3, 4, 2
A, B, G = rng.standard_normal((M, N)), rng.standard_normal((N, K)), rng.standard_normal((M, K))
a_t, b_t = sg.constant(A), sg.constant(B)
with sg.GradientTape() as tape:
    tape.watch([a_t, b_t])
    C = a_t @ b_t
dA, dB = tape.gradient(C, [a_t, b_t], output_gradients=G)
print("max |dL/dA - G B^T| =", np.abs(dA.numpy() - G @ B.T).max(), " max |dL/dB - A^T G| =", np.abs(dB.numpy() - A.T @ G).max())
np.testing.assert_allclose(dA.numpy(), G @ B.T, rtol=1e-14)
np.testing.assert_allclose(dB.numpy(), A.T @ G, rtol=1e-14)
