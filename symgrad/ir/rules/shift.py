"""``shift_max``: the maximum of a core array over some axes, used only as a constant shift.

Log-sum-exp, softmax and softmax cross-entropy are evaluated with the max-shift
``log(sum(exp(u))) = m + log(sum(exp(u - m)))``, ``m = max(u)`` (Blanchard, Higham &
Higham 2021, "Accurately computing the log-sum-exp and softmax functions", IMA J.
Numer. Anal. 41(4), eq. (2.2)): the stabiliser rewrites the sums it finds
(:mod:`symgrad.api.shift_pass`, all axes of a core) and ``scipy.special.logsumexp``,
``softmax`` and ``log_softmax`` trace to it directly (:mod:`symgrad.trace.scipy_special`,
any axes).  The value of every shifted expression does not depend on ``m``, so ``m`` has
no derivative (the exact derivative of the shifted expression with respect to ``m`` is
zero): the op is ``nondiff``, like ``jax.lax.stop_gradient(jnp.max(u, axes))`` in
``jax.nn.logsumexp``.

``shift_max(x; axes)`` has the shape of ``x`` without ``axes`` (sorted, non-negative).
Not the user-facing ``np.max`` reduction, which is the ``amax`` op (it has JAX's
derivative).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..ops import OpDef, register
from .reductions import _reference

_MAX = _reference(np.max, sp.Max)  # NumPy's max on floats, SymPy's Max on the interpreter's objects


def _amax(x, axes):
    """The max over ``axes`` clamped to the finite range (as printed by
    :mod:`symgrad.emit.lowering.reductions`), or SymPy's Max for the object arrays of the
    interpreter's symbolic mode."""
    x = np.asarray(x)
    out = _MAX(x, axes)
    if x.dtype == object:
        return out
    big = np.finfo(x.dtype if x.dtype.kind == "f" else np.float64).max
    return np.clip(out, -big, big)


def _infer(nodes, params):
    (x,), (axes,) = nodes, params
    if x.kind != "f":
        raise TypeError("shift_max needs a float array")
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError("shift_max over a zero-size axis (a max of nothing)")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes), "f"


register(OpDef(
    name="shift_max", infer=_infer, numpy=_amax, statement=True,
    nondiff=True,
    ref="max-shift constant of log-sum-exp/softmax (Blanchard, Higham & Higham 2021, eq. 2.2); no derivative",
))
