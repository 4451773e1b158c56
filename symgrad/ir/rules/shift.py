"""``shift_max``: the maximum of a whole core array, used only as a constant shift.

Log-sum-exp, softmax and softmax cross-entropy are rewritten with the max-shift
``log(sum(exp(u))) = m + log(sum(exp(u - m)))``, ``m = max(u)`` (Blanchard, Higham &
Higham 2021, "Accurately computing the log-sum-exp and softmax functions", IMA J.
Numer. Anal. 41(4), eq. (2.2)); see :mod:`symgrad.api.shift_pass`.  The value of every
rewritten expression does not depend on ``m``, so ``m`` has no derivative (the exact
derivative of the rewritten expression with respect to ``m`` is zero): the op is
``nondiff``, like ``jax.lax.stop_gradient(jnp.max(u))`` in ``jax.nn.logsumexp``.

Private to the stabiliser: the user-facing ``np.max`` reduction is a separate op.
"""
from __future__ import annotations

import numpy as np

from ..ops import OpDef, register


def _amax(x):
    """np.max clamped to the finite range (as printed by :mod:`symgrad.emit.lowering.reductions`), or SymPy's Max for the object
    arrays of the interpreter's symbolic mode."""
    x = np.asarray(x)
    if x.dtype == object:
        import sympy as sp

        return sp.Max(*x.ravel())
    big = np.finfo(x.dtype if x.dtype.kind == "f" else np.float64).max
    return np.clip(np.max(x), -big, big)


def _infer(nodes, params):
    (x,) = nodes
    if x.kind != "f":
        raise TypeError("shift_max needs a float array")
    return (), "f"


register(OpDef(
    name="shift_max", infer=_infer, numpy=_amax,
    nondiff=True,
    ref="max-shift constant of log-sum-exp/softmax (Blanchard, Higham & Higham 2021, eq. 2.2); no derivative",
))
