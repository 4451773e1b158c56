"""Topic 5: backpropagation by hand, checked against symgrad.

1. Loss = z (x + y) at x = 1, y = 2, z = -3.  Forward: q = x + y = 3, Loss = z q = -9.
   Backward, starting from dLoss/dLoss = 1: dLoss/dz = q = 3, dLoss/dq = z = -3, and an add
   passes its adjoint unchanged to both inputs: dLoss/dx = dLoss/dy = -3.
2. Broadcasting add C = A + b, b of shape (n,) added to every row of A (m, n).  With upstream
   gradient G = dL/dC, each b[j] was used m times, so dL/db = G summed over the broadcast axis.
3. Matrix product C = A B: C[i, j] = sum_k A[i, k] B[k, j], so dL/dA = G B^T and dL/dB = A^T G.
In 2 and 3 the upstream gradient G is imposed by the loss L = sum(G * C).
Run: python examples/topic5_backprop_by_hand.py
"""
import numpy as np

import symgrad as sg


def loss(x, y, z):
    return z * (x + y)


x, y, z = 1.0, 2.0, -3.0
q = x + y                     # forward pass
L = z * q
L_bar = 1.0                   # backward pass
z_bar, q_bar = L_bar * q, L_bar * z
x_bar, y_bar = q_bar, q_bar
print(f"forward by hand (q, Loss): {[q, L]}")
print(f"adjoints by hand (x, y, z): {[x_bar, y_bar, z_bar]}")
print(f"symgrad.grad (x, y, z): {[float(g) for g in sg.grad(loss, argnums=(0, 1, 2))(x, y, z)]}")
print(sg.explain(loss, x, y, z))  # symgrad's own account of the same passes

rng = np.random.default_rng(5)
m, k, n = 2, 3, 4
A, b = rng.standard_normal((m, k)), rng.standard_normal(k)
G = rng.standard_normal((m, k))
db = sg.grad(lambda A, b: np.sum(G * (A + b)), argnums=1, signature="(m,k),(k)->()")(A, b)
print(f"broadcast bias, G summed over rows: {G.sum(axis=0).tolist()}")
print(f"broadcast bias, symgrad dL/db: {db.tolist()}")

B, G = rng.standard_normal((k, n)), rng.standard_normal((m, n))
dA, dB = sg.grad(lambda A, B: np.sum(G * (A @ B)), argnums=(0, 1), signature="(m,k),(k,n)->()")(A, B)
print(f"matmul: max |dL/dA - G B^T|: {np.abs(dA - G @ B.T).max():.3e}")
print(f"matmul: max |dL/dB - A^T G|: {np.abs(dB - A.T @ G).max():.3e}")
print(f"matmul: symgrad dL/dA: {dA.tolist()}")
print(f"matmul: symgrad dL/dB: {dB.tolist()}")
