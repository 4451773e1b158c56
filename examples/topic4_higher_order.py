"""Topic 4: higher-order derivatives.

* Nested ForwardAccumulators: the inner one gives f'(x) as an eager value that stays
  differentiable, the outer one differentiates it again: f''(x).  Here f(x) = e^x sin x, with
  f' = e^x (sin x + cos x) and f'' = 2 e^x cos x.
* Hessian-vector products, forward over backward: push a tangent v through the gradient,
  H v = d/dt grad f(x + t v) at t = 0, without ever forming H (symgrad.hvp, compiled; and a
  ForwardAccumulator around a GradientTape, eager).  Checked against symgrad.hessian(f)(x) @ v
  and the closed form for log-sum-exp, H = diag(p) - p p^T with p = softmax(x).
Run: python examples/topic4_higher_order.py
"""
import numpy as np

import symgrad as sg


def f(x):
    return np.exp(x) * np.sin(x)


x0 = 0.7
x = sg.constant(x0)
with sg.ForwardAccumulator(x, 1.0) as outer:
    with sg.ForwardAccumulator(x, 1.0) as inner:
        y = f(x)
    dy = inner.jvp(y)            # f'(x), recorded for the outer accumulator
d2y = outer.jvp(dy)              # f''(x)
print(f"f(0.7): {float(y)}")
print(f"f'(0.7) inner accumulator: {float(dy)}")
print(f"f'(0.7) closed form: {np.exp(x0) * (np.sin(x0) + np.cos(x0))}")
print(f"f''(0.7) outer accumulator: {float(d2y)}")
print(f"f''(0.7) closed form: {2 * np.exp(x0) * np.cos(x0)}")
print(f"f''(0.7) symgrad.hessian: {float(sg.hessian(f)(x0))}")


def logsumexp(x):
    return np.log(np.sum(np.exp(x)))


SIG = "(n)->()"
xv = np.array([0.5, -1.0, 2.0, 0.0, 1.5])
v = np.array([1.0, 2.0, -1.0, 0.5, 0.0])
Hv = sg.hvp(logsumexp, (xv,), (v,), signature=SIG)
H = sg.hessian(logsumexp, signature=SIG)(xv)
p = np.exp(xv) / np.sum(np.exp(xv))
H_closed = np.diag(p) - np.outer(p, p)
print(f"symgrad.hvp: {Hv.tolist()}")
print(f"symgrad.hessian(f)(x) @ v: {(H @ v).tolist()}")
print(f"(diag(p) - p p^T) @ v: {(H_closed @ v).tolist()}")
print(f"max |H - closed form|: {np.abs(H - H_closed).max():.3e}")

# The same product in eager mode: an accumulator around a tape.
xs = sg.constant(xv)
with sg.ForwardAccumulator(xs, v) as acc:
    with sg.GradientTape() as tape:
        tape.watch(xs)
        y = logsumexp(xs)
    grad = tape.gradient(y, xs)
print(f"eager gradient (= p): {grad.numpy().tolist()}")
print(f"eager forward-over-backward H v: {acc.jvp(grad).numpy().tolist()}")
