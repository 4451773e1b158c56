"""Deterministic names and literals for generated code.

Temporaries are ``t0, t1, ...`` in evaluation order; array constants are
hidden arguments ``_c0, _c1, ...``; user argument names are kept (the tracer
already escaped keywords and clashes).  Float literals are typed per kernel
dtype: Numba types a bare ``1.0`` as float64, which would silently promote
float32 arithmetic, so float32 kernels spell ``np.float32(1.0)``.
"""
from __future__ import annotations

import math

DTYPES = ("float64", "float32")
SUFFIX = {"float64": "f64", "float32": "f32"}


def float_literal(value: float, dtype: str) -> str:
    """Source text for ``value`` as a constant of ``dtype``."""
    if math.isnan(value):
        text = "np.nan"
    elif math.isinf(value):
        text = "np.inf" if value > 0 else "-np.inf"
    else:
        text = repr(float(value))
    if dtype == "float64":
        return text
    return f"np.float32({text})"


class TempNamer:
    """Hands out ``t0, t1, ...`` in the order statements are emitted."""

    def __init__(self, prefix: str = "t"):
        self.prefix, self.count = prefix, 0

    def __call__(self) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        return name
