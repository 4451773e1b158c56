"""Helper functions a generated module defines when its kernels call them.

Each is a scalar ``njit`` function (the printer only calls them on scalars:
array-valued elementwise code is emitted as loops), compiled lazily on first
use, evaluating a function in its numerically stable form.  Constants are
built from ``x`` itself so float32 stays float32: ``x ** 0`` is 1 in ``x``'s
dtype for every ``x``, inf and NaN included (``x - x + 1`` would be NaN at
+-inf, so ``sigmoid(inf)`` would be NaN instead of 1).
"""
from __future__ import annotations

HELPERS = {
    "_sigmoid": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _sigmoid(x):
    """Logistic function without overflow: e = exp(-|x|) <= 1, then 1/(1+e) or e/(1+e)."""
    one = x ** 0
    e = np.exp(-abs(x))
    d = one + e
    return one / d if x >= 0 else e / d
''',
    "_softplus": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _softplus(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)) (Maechler 2012; dtype of x kept)."""
    zero = x ** 0 - x ** 0
    return max(x, zero) + np.log1p(np.exp(-abs(x)))
''',
    "_erf": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _erf(x):
    """The error function (NumPy has no erf ufunc; Numba supports math.erf)."""
    return math.erf(x)
''',
}


def helpers_used(body_text: str) -> list[str]:
    """Names of the helpers that ``body_text`` calls, in a fixed order."""
    return [name for name in HELPERS if f"{name}(" in body_text]
