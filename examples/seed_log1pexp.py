"""log(1 + exp(x)) with a user-defined gradient (the tf.custom_gradient documentation's first example).

The derivative of log(1 + e^x) is e^x / (1 + e^x).  Computed literally it becomes inf / inf = NaN as soon
as e^x overflows (x = 100 in float32, x = 1000 in float64).  Rewritten as 1 - 1 / (1 + e^x) it is 1.0.
Run: python examples/seed_log1pexp.py
"""
import numpy as np

import symgrad as sg


def naive(x):
    return np.log(1 + np.exp(x))


@sg.custom_gradient
def log1pexp(x):
    e = np.exp(x)

    def grad(upstream):                     # upstream * d/dx log(1 + e^x), in a form that cannot overflow
        return upstream * (1 - 1 / (1 + e))
    return np.log(1 + e), grad


# Compiled (Numba) path; stabilize=False keeps the literal formula symgrad would otherwise rewrite.
d_naive = sg.grad(naive, stabilize=False)
d_custom = sg.grad(log1pexp)
for x in (np.float32(100.0), np.float64(1000.0)):
    print(f"{type(x).__name__}({x}): naive d/dx = {d_naive(x)}, custom d/dx = {d_custom(x)}")
    assert np.isnan(d_naive(x)) and d_custom(x) == 1.0

# Eager path: the same rule is used by GradientTape.
x = sg.constant(100.0, np.float32)
with sg.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y_naive, y_custom = naive(x), log1pexp(x)
g_naive, g_custom = tape.gradient(y_naive, x), tape.gradient(y_custom, x)
print(f"GradientTape at x = 100 (float32): naive {g_naive}, custom {g_custom}")
assert np.isnan(g_naive.numpy()) and g_custom.numpy() == 1.0 and g_custom.dtype == np.float32
