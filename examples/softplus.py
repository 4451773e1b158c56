"""log(1 + exp(x)): the textbook example of a formula whose naive derivative overflows."""
import numpy as np


def softplus(x):
    return np.log(1 + np.exp(x))


def lse2(x, y):
    return np.log(np.exp(x) + np.exp(y))
