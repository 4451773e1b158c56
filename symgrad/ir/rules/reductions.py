"""Order-dependent reductions: ``amax``/``amin`` over axes, and ``cumsum`` along one axis.

``amax(x; axes)`` is ``np.max(x, axis=axes)`` (NaN propagates, as in NumPy).  Its
derivative follows JAX (``jax/_src/lax/lax.py``, ``_reduce_chooser_jvp_rule``): the
tangent is split equally among tied maxima, so
``grad(max)([1, 2, 2]) == [0, 0.5, 0.5]``; a NaN maximum gives NaN derivatives, as in JAX.
With ``w = (x == max) / count(x == max)``
the JVP is ``sum(w * x_dot, axes)`` and the VJP ``w * out_bar`` (broadcast back); both
are built from existing primitives, so ``amax`` itself needs only its value and loop.
``amin`` is the same with ``<=`` reversed.

``cumsum(x; axis, reverse)`` is ``np.cumsum(x, axis)`` (``reverse``: sums from the end).
It is linear; its VJP is the reversed cumulative sum of the cotangent (the transpose
of a lower-triangular ones matrix is upper-triangular), its JVP the cumsum of the
tangent.  Tangents and cotangents carry ``nb`` leading batch axes (see ``structural.py``).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..ops import OpDef, register


def _infer_reduce(nodes, params):
    (x,), (axes,) = nodes, params
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError("zero-size array to a max/min reduction, which has no identity")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes), "f"


def _weights(g, node):
    """``(x == out) / count(x == out)`` over the reduced axes: JAX's equal split among ties."""
    (x,), (axes,) = node.args, node.params
    xshape = g.shape(x)
    keep = tuple(1 if i in axes else d for i, d in enumerate(xshape))
    out_b = g.apply("reshape", node.id, params=(keep,))
    mask = g.apply("where", g.apply("eq", x, out_b), g.const(1.0), g.const(0.0))
    count = g.apply("reshape", g.apply("sum", mask, params=(axes,)), params=(keep,))
    # a NaN maximum matches no element: every weight is NaN, as in JAX (not 0)
    return g.apply("where", g.apply("eq", out_b, out_b), g.apply("div", mask, count), g.const(np.nan))


def _jvp_reduce(g, node, t, nb):
    prod = g.apply("mul", t[0], _weights(g, node))
    return g.apply("sum", prod, params=(tuple(a + nb for a in node.params[0]),))


def _vjp_reduce(g, node, ct, nb):
    (x,), (axes,) = node.args, node.params
    xshape = g.shape(x)
    batch = g.shape(ct)[:nb]
    keep = tuple(1 if i in axes else d for i, d in enumerate(xshape))
    ct = g.apply("reshape", ct, params=(batch + keep,))
    out = g.apply("mul", ct, _weights(g, node))
    if g.shape(out) != batch + xshape:
        out = g.apply("broadcast_to", out, params=(batch + xshape,))
    return (out,)


def _reference(np_fn, sp_fn):
    """NumPy's reduction on floats; SymPy's Max/Min, one axis at a time, on symbolic (object) arrays."""
    def evaluate(x, axes):
        x = np.asarray(x)
        if x.dtype != object:
            return np_fn(x, axis=axes)
        pair = np.frompyfunc(sp_fn, 2, 1)
        for a in sorted(axes, reverse=True):
            x = pair.reduce(x, axis=a)
        return np.asarray(x, dtype=object)
    return evaluate


def _reduction(name: str, np_fn, sp_fn, which: str):
    return OpDef(
        statement=True,
        name=name, infer=_infer_reduce, numpy=_reference(np_fn, sp_fn),
        jvp=_jvp_reduce, vjp=_vjp_reduce,
        simplify=lambda g, args, p, shape: args[0] if not p[0] else None,
        kink=f"ties: the derivative is split equally among the tied {which} (as JAX does)",
        ref="JAX _reduce_chooser_jvp_rule: d max = sum(x_dot * [x == max]) / count([x == max])",
    )


register(_reduction("amax", np.max, sp.Max, "maxima"))
register(_reduction("amin", np.min, sp.Min, "minima"))


# -- cumulative sum ------------------------------------------------------------------------

def _numpy_cumsum(x, axis, reverse):
    x = np.asarray(x)  # float64, or SymPy objects for display
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    return np.cumsum(x, axis=axis)


register(OpDef(
    statement=True,
    name="cumsum", infer=lambda nodes, p: (nodes[0].shape, "f"), numpy=_numpy_cumsum,
    jvp=lambda g, node, t, nb: g.apply("cumsum", t[0], params=(node.params[0] + nb, node.params[1])),
    vjp=lambda g, node, ct, nb: (g.apply("cumsum", ct, params=(node.params[0] + nb, not node.params[1])),),
    ref="linear: cumsum = L x with L lower-triangular ones; its VJP L^T ct is the reversed cumsum",
))
