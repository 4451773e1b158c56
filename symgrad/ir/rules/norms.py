"""Vector infinity norms: ``max |x|`` and ``min |x|`` along one axis (``np.linalg.norm(x, +-inf)``).

One primitive with a parameter ``(axis, kind)``, ``kind`` ``"max"`` or ``"min"``.  Its
derivative follows JAX's conventions exactly, so ``symgrad.grad`` and ``jax.grad`` agree
at kinks:

* ties are split equally among the entries attaining the extreme (JAX's
  ``reduce_max``/``reduce_min`` JVP rule);
* ``d|x|/dx = +1`` at ``x = 0`` (JAX's ``abs``);
* ``norm(x, inf)`` at ``x = 0`` gets a further factor 1/2, because JAX computes it as
  ``max(0, max|x|)`` and splits that tie too: ``jax.grad(norm(., inf))(zeros(n)) = 1/(2n)``.

The derivative is built from ``eq``/``where`` (zero derivative) and linear ops, so
every higher derivative is zero, as it is in JAX.

The kernel loop propagates NaN like NumPy (``norm([1, nan], inf)`` is NaN).
This is a small own reduction on purpose: a general ``max``/``min`` reduction is
being added on another branch; this op can become ``max(abs(x))`` once it lands.
"""
from __future__ import annotations

import numpy as np

from ..graph import Graph
from ..ops import OpDef, register


def _infer(nodes, params):
    (x,), (axis, _kind) = nodes, params
    if not x.shape:
        raise ValueError("an infinity norm needs an array; got a scalar")
    return tuple(d for i, d in enumerate(x.shape) if i != axis), "f"


def _numpy(x, axis, kind):
    return (np.max if kind == "max" else np.min)(np.abs(x), axis=axis)


def _weights(g: Graph, node) -> int:
    """d out / d x as an array shaped like x: sign(x) (+1 at 0) times the tie-splitting weights."""
    (x,), (axis, kind) = node.args, node.params
    xshape = g.shape(x)
    keep = tuple(1 if i == axis else d for i, d in enumerate(xshape))
    one, zero = g.const(1.0), g.const(0.0)
    out = g.apply("reshape", node.id, params=(keep,))
    hit = g.apply("where", g.apply("eq", g.apply("abs", x), out), one, zero)
    count = g.apply("reshape", g.apply("sum", hit, params=((axis,),)), params=(keep,))
    w = g.apply("div", hit, count)
    if kind == "max":  # JAX's max(0, max|x|): a second tie at x = 0
        w = g.apply("mul", w, g.apply("where", g.apply("eq", out, zero), g.const(0.5), one))
    sign = g.apply("where", g.apply("ge", x, zero), one, g.const(-1.0))
    return g.apply("mul", w, sign)


def _jvp(g, node, t, nb):
    return g.apply("sum", g.apply("mul", t[0], _weights(g, node)), params=((node.params[0] + nb,),))


def _vjp(g, node, ct, nb):
    (x,), axis = node.args, node.params[0]
    batch = g.shape(ct)[:nb]
    keep = batch + tuple(1 if i == axis else d for i, d in enumerate(g.shape(x)))
    return (g.apply("mul", g.apply("reshape", ct, params=(keep,)), _weights(g, node)),)


register(OpDef(
    statement=True,
    name="norm_inf", infer=_infer, numpy=_numpy, jvp=_jvp, vjp=_vjp,
    kink="ties split equally; d|x|/dx = +1 at 0; norm(x, inf) at x = 0 has gradient 1/(2n) (JAX's values)",
    ref="JAX reduce_max/reduce_min JVP (ties averaged) composed with abs",
))
