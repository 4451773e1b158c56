"""Topic 1: log(1 + exp(x)) -- a NaN derivative, the stable form symgrad finds, and a custom gradient.

The derivative of softplus(x) = log(1 + e^x) is e^x / (1 + e^x).  Evaluated as written it is
inf / inf = NaN once e^x overflows (x = 100 in float32, where exp overflows above ~88.7).
symgrad scores the derived expression against mpmath and rewrites it to sigmoid(x), which is
exactly 1.0 there.  A hand-written rule (@symgrad.custom_gradient) is the other way out.
Run: python examples/topic1_softplus.py
"""
import numpy as np

import symgrad as sg


def softplus(x):
    return np.log(1 + np.exp(x))


# 1. The derivative computed literally, in plain numpy, float32.
x = np.float32(100.0)
with np.errstate(over="ignore", invalid="ignore"):
    e = np.exp(x)
    naive = e / (1 + e)
print(f"numpy float32 exp(100): {e}")
print(f"numpy float32 naive derivative at x=100: {naive}")

# 2. What symgrad derives, and what it compiles after measuring the error.
t = sg.trace(softplus, 0.0)
print(f"traced f(x): {t.expr}")
print(f"derived df/dx: {t.grad_expr()[0]}")
for output, r in t.rewrites():  # one record per accepted rewrite of the gradient kernel
    mean_before, max_before, mean_after, max_after = r.bits["float32"]
    print(f"rewrite of {output}: {r.name}: {r.before} -> {r.after}")
    print(f"float32 bits of error (mean, max) before: {mean_before:.2f} {max_before:.2f}")
    print(f"float32 bits of error (mean, max) after: {mean_after:.2f} {max_after:.2f}")
for output, r in t.rewrites("jit"):  # the function itself is rewritten too
    print(f"rewrite of f ({output}): {r.name}: {r.before} -> {r.after}")

dsoftplus = sg.grad(softplus)
d_literal = sg.grad(softplus, stabilize=False)  # the derived formula, compiled as is
g = dsoftplus(x)
print(f"symgrad.grad at x=100 (float32): {g} dtype {g.dtype}")
print(f"symgrad.grad(stabilize=False) at x=100 (float32): {d_literal(x)}")
print(f"symgrad.jit(softplus) at x=100 (float32): {sg.jit(softplus)(x)}")

# 3. A custom gradient: the forward pass saves e = exp(x); the rule never divides inf by inf.
@sg.custom_gradient
def softplus_custom(x):
    e = np.exp(x)

    def grad_fn(upstream):
        return upstream * (1 - 1 / (1 + e))   # = e / (1 + e), finite when e = inf
    return np.log(1 + e), grad_fn


d_custom = sg.grad(softplus_custom)
print(f"custom gradient at x=100 (float32): {d_custom(x)}")
xs = np.array([-30.0, -2.0, 0.0, 0.5, 3.0, 40.0])
print(f"points: {xs.tolist()}")
print(f"symgrad.grad: {dsoftplus(xs).tolist()}")
print(f"custom gradient: {d_custom(xs).tolist()}")
# The custom rule is used in forward mode as well (symgrad transposes it).
_, tangent = sg.jvp(softplus_custom, (xs,), (np.ones_like(xs),))
print(f"custom gradient via jvp: {tangent.tolist()}")
