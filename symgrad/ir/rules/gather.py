"""Gather along one axis with a constant index array, and its transpose.

``take(x, idx; axis)`` is ``np.take(x, idx, axis)`` for a constant 1-D index array
``idx`` (held as a float constant node, so the generated module passes it like any
other array constant; indices are exact in float32 up to 2**24).  Fancy indexing,
constant boolean masks, ``np.take``, ``take_along_axis``, ``repeat``, ``tile``,
``roll``, ``diagonal`` and ``trace`` are all built on it by :mod:`symgrad.trace.numpy_shapes`:
each gathers from the flattened array with a constant index array, so the graph
stays O(1) nodes and the generated code is one loop nest.

``take_add(v, idx; axis, n)`` is its transpose: zeros of size ``n`` along ``axis``
with ``out[..., idx[k], ...] += v[..., k, ...]`` (repeated indices accumulate, as in
``np.add.at``).  Both are linear; each is the other's VJP (the rule of JAX's
``gather``/``scatter-add`` pair, ``jax/_src/lax/slicing.py``).
Tangents and cotangents carry ``nb`` leading batch axes (see ``structural.py``).
"""
from __future__ import annotations

import numpy as np

from ..ops import OpDef, register


def _int_index(idx) -> np.ndarray:
    """Index values as ints (float64 constants, or SymPy integers when evaluated symbolically)."""
    return np.array([int(v) for v in np.asarray(idx).reshape(-1)], dtype=np.int64)


def _infer_take(nodes, params):
    x, idx = nodes
    (axis,) = params
    if len(idx.shape) != 1 or not 0 <= axis < len(x.shape):
        raise ValueError(f"take: needs a 1-D index and an axis of x; got index shape {idx.shape}, axis {axis}, "
                         f"x shape {x.shape}")
    return x.shape[:axis] + idx.shape + x.shape[axis + 1:], "f"


def _infer_take_add(nodes, params):
    v, idx = nodes
    axis, n = params
    if len(idx.shape) != 1 or not 0 <= axis < len(v.shape) or v.shape[axis] != idx.shape[0]:
        raise ValueError(f"take_add: value shape {v.shape} does not match index shape {idx.shape} on axis {axis}")
    return v.shape[:axis] + (n,) + v.shape[axis + 1:], "f"


def _numpy_take_add(v, idx, axis, n):
    v = np.asarray(v)  # float64, or SymPy objects for display (symgrad.trace(...).expr)
    out = np.zeros(v.shape[:axis] + (n,) + v.shape[axis + 1:], dtype=v.dtype if v.dtype == object else np.float64)
    np.add.at(np.moveaxis(out, axis, 0), _int_index(idx), np.moveaxis(v, axis, 0))
    return out


register(OpDef(
    statement=True,
    name="take", infer=_infer_take, numpy=lambda x, idx, axis: np.take(x, _int_index(idx), axis=axis),
    jvp=lambda g, node, t, nb: g.apply("take", t[0], node.args[1], params=(node.params[0] + nb,)),
    vjp=lambda g, node, ct, nb: (g.apply("take_add", ct, node.args[1], params=(
        node.params[0] + nb, g.shape(node.args[0])[node.params[0]])), None),
    ref="linear (a gather); its VJP is the scatter-add take_add (JAX: gather/scatter-add transpose pair)",
))

register(OpDef(
    statement=True,
    name="take_add", infer=_infer_take_add, numpy=_numpy_take_add,
    jvp=lambda g, node, t, nb: g.apply("take_add", t[0], node.args[1], params=(
        node.params[0] + nb, node.params[1])),
    vjp=lambda g, node, ct, nb: (g.apply("take", ct, node.args[1], params=(node.params[0] + nb,)), None),
    ref="linear (a scatter-add, np.add.at); its VJP is the gather take",
))
