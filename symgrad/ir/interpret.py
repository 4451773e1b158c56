"""Evaluate a graph directly: with NumPy (the reference semantics) or with SymPy.

``evaluate`` walks the nodes the outputs need, in id (topological) order.  In
``"sympy"`` mode values are object arrays of SymPy expressions, which gives the
closed form of every output element for display (``symgrad.trace(...).expr``)
and the expressions the stabiliser rewrites.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from .graph import Graph, simple_rational
from .ops import REGISTRY


def sympy_number(v: float) -> sp.Expr:
    """A float as the SymPy number a reader expects: 2 not 2.0, 1/2 not 0.5."""
    if np.isnan(v):
        return sp.nan
    if np.isinf(v):
        return sp.oo if v > 0 else -sp.oo
    frac = simple_rational(v)
    if frac is not None:
        return sp.Rational(frac.numerator, frac.denominator)
    return sp.Float(v)


def _sympy_const(arr: np.ndarray):
    if arr.dtype == bool:
        conv = np.frompyfunc(lambda b: sp.true if b else sp.false, 1, 1)
    else:
        conv = np.frompyfunc(lambda v: sympy_number(float(v)), 1, 1)
    out = conv(arr)
    return out if isinstance(out, np.ndarray) else np.array(out, dtype=object)


def evaluate(g: Graph, outputs: list[int], env: dict[int, object], mode: str = "numpy") -> list:
    """Values of ``outputs`` given input values ``env`` (node id -> array).

    Args:
      mode: ``"numpy"`` (float64 arrays) or ``"sympy"`` (object arrays of SymPy expressions).
    """
    vals: dict[int, object] = {}
    for nid in g.ancestors(outputs):
        node = g[nid]
        if nid in env:  # inputs, or any node whose value the caller supplies
            vals[nid] = env[nid]
            continue
        if node.op in ("const", "bconst"):
            vals[nid] = g.consts[nid] if mode == "numpy" else _sympy_const(g.consts[nid])
            continue
        op = REGISTRY[node.op]
        args = [vals[a] for a in node.args]
        if mode == "sympy" and op.elementwise:
            params = node.params  # a dd_region's program; elementwise ops otherwise have none
            res = np.frompyfunc(lambda *a: op.sympy(*a, *params), len(args), 1)(*args)
        else:
            with np.errstate(all="ignore"):
                res = op.numpy(*args, *node.params)
        if mode == "sympy" and not isinstance(res, np.ndarray):
            res = np.array(res, dtype=object)
        vals[nid] = res
    return [vals[o] for o in outputs]
