"""Functions the CLI tests name as tests/cli/funcs.py:FUNC."""
import numpy as np

import symgrad


def softplus(x):
    return np.log(1 + np.exp(x))


def lse2(x, y):
    return np.log(np.exp(x) + np.exp(y))


def cube(x, y):
    return x ** 3 * y


def norm2(x):
    return np.sum(x * x)


def branchy(x):
    if x > 0:
        return x
    return -x


@symgrad.custom_gradient
def wrong_sin(x):
    """sin with a wrong derivative rule (2 cos x): `symgrad check` must catch it."""
    return np.sin(x), lambda dy: dy * 2 * np.cos(x)


not_a_function = 3


def loss_zxy(x, y, z):
    return z * (x + y)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def bias_matmul(A, B, b):
    return np.sum((A @ B + b) ** 2)
