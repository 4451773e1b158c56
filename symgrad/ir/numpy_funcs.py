"""NumPy implementations of the primitives that have no NumPy ufunc.

Each is the op's ``numpy`` facet (reference interpreter, constant folding) and
``numeric`` facet (the stabiliser's float evaluator): computed in the
argument's dtype, so a float32 evaluation stays float32.  They are the
textbook stable forms, the same ones the generated Numba helpers use
(:mod:`symgrad.emit.prelude`).

References: Maechler (2012), "Accurately computing log(1 - exp(-|a|))"
(log1pexp, the softplus form); Goldberg (1991), sec. 1.4 (sigmoid without
overflow).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["sigmoid", "softplus", "erf"]


def _float(x) -> np.ndarray:
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def softplus(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)) (no overflow)."""
    x = _float(x)
    return np.maximum(x, x.dtype.type(0)) + np.log1p(np.exp(-np.abs(x)))


def sigmoid(x):
    """1/(1+exp(-x)) for x >= 0, exp(x)/(1+exp(x)) for x < 0."""
    x = _float(x)
    one = x.dtype.type(1)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, one / (one + e), e / (one + e))


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    """The error function (NumPy has no erf ufunc): math.erf, rounded once to x's dtype."""
    x = _float(x)
    return _ERF(x).astype(x.dtype)
