"""Helper functions a generated module defines when its kernels call them.

Each is a Numba ufunc (usable on scalars and arrays inside ``njit`` code)
evaluating a function in its numerically stable form.
"""
from __future__ import annotations

HELPERS = {
    "_sigmoid": '''
@numba.vectorize(["float64(float64)", "float32(float32)"], cache=True)
def _sigmoid(x):
    """Logistic function without overflow: branch on the sign of x."""
    if x >= 0:
        return 1.0 / (1.0 + np.exp(-x))
    z = np.exp(x)
    return z / (1.0 + z)
''',
    "_softplus": '''
@numba.vectorize(["float64(float64)", "float32(float32)"], cache=True)
def _softplus(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)) (Maechler 2012)."""
    return max(x, 0.0) + np.log1p(np.exp(-abs(x)))
''',
    "_erf": '''
@numba.vectorize(["float64(float64)", "float32(float32)"], cache=True)
def _erf(x):
    """The error function (NumPy has no erf ufunc; Numba supports math.erf)."""
    return math.erf(x)
''',
}


def helpers_used(body_text: str) -> list[str]:
    """Names of the helpers that ``body_text`` calls, in a fixed order."""
    return [name for name in HELPERS if f"{name}(" in body_text]
