"""Jacobians, Hessians and Hessian-vector products by composing JVP and VJP.

No rules of its own: a Jacobian pushes an identity seed with one batch axis
through :func:`jvp_nodes` (forward accumulation, when inputs are fewer than
outputs) or pulls it through :func:`vjp_nodes` (reverse accumulation); a
Hessian is the forward-mode Jacobian of the reverse-mode gradient; an HVP is
one forward pass over the gradient program with a symbolic tangent, so the
Hessian is never formed (Pearlmutter, "Fast exact multiplication by the
Hessian", Neural Computation 6, 1994).
"""
from __future__ import annotations

import math

from ..ir.graph import Graph
from .jvp import jvp_nodes
from .vjp import vjp_nodes


def _size(shape) -> int:
    return int(math.prod(shape))


def jacobian_fwd(g: Graph, inputs: list[int], outputs: list[int]) -> list[list[int]]:
    """J[o][i] of shape ``out_shape + in_shape``, by forward accumulation."""
    cols = []
    for x in inputs:
        shape = g.shape(x)
        n = _size(shape)
        if shape == ():
            tans = jvp_nodes(g, [x], [g.const(1.0)], outputs, nb=0)
            cols.append([g.instantiate_zeros(t, g.shape(o)) for t, o in zip(tans, outputs)])
            continue
        seed = g.eye((n,) + shape)
        tans = jvp_nodes(g, [x], [seed], outputs, nb=1)
        col = []
        for t, o in zip(tans, outputs):
            oshape = g.shape(o)
            if t is None:
                col.append(g.zeros(oshape + shape))
                continue
            perm = tuple(range(1, len(oshape) + 1)) + (0,)
            t = g.apply("transpose", t, params=(perm,))
            col.append(g.apply("reshape", t, params=(oshape + shape,)))
        cols.append(col)
    return [[cols[i][o] for i in range(len(inputs))] for o in range(len(outputs))]


def jacobian_rev(g: Graph, inputs: list[int], outputs: list[int]) -> list[list[int]]:
    """J[o][i] of shape ``out_shape + in_shape``, by reverse accumulation."""
    rows = []
    for k, o in enumerate(outputs):
        oshape = g.shape(o)
        m = _size(oshape)
        cts: list[int | None] = [None] * len(outputs)
        if oshape == ():
            cts[k] = g.const(1.0)
            bars = vjp_nodes(g, outputs, cts, inputs, nb=0)
            rows.append([g.instantiate_zeros(b, g.shape(x)) for b, x in zip(bars, inputs)])
            continue
        cts[k] = g.eye((m,) + oshape)
        bars = vjp_nodes(g, outputs, cts, inputs, nb=1)
        row = []
        for b, x in zip(bars, inputs):
            shape = oshape + g.shape(x)
            row.append(g.zeros(shape) if b is None else g.apply("reshape", b, params=(shape,)))
        rows.append(row)
    return rows


def jacobian_nodes(g: Graph, inputs: list[int], outputs: list[int], mode: str = "auto"):
    """Jacobian blocks ``J[o][i]``; ``mode`` 'fwd', 'rev' or 'auto' (fewer passes' worth)."""
    if mode == "auto":
        n_in = sum(_size(g.shape(x)) for x in inputs)
        n_out = sum(_size(g.shape(o)) for o in outputs)
        mode = "fwd" if n_in <= n_out else "rev"
    return (jacobian_fwd if mode == "fwd" else jacobian_rev)(g, inputs, outputs)


def gradient_nodes(g: Graph, output: int, inputs: list[int]) -> list[int]:
    """Gradient of a scalar ``output`` w.r.t. ``inputs`` (zeros where unconnected)."""
    bars = vjp_nodes(g, [output], [g.const(1.0)], inputs)
    return [g.instantiate_zeros(b, g.shape(x)) for b, x in zip(bars, inputs)]


def hessian_nodes(g: Graph, output: int, inputs: list[int]) -> list[list[int]]:
    """H[i][j] = d^2 out / dx_i dx_j, shape ``shape_i + shape_j`` (forward over reverse)."""
    grads = gradient_nodes(g, output, inputs)
    return jacobian_fwd(g, inputs, grads)


def hvp_nodes(g: Graph, output: int, inputs: list[int], tangents: list[int]) -> list[int]:
    """Hessian-vector product: the JVP of the gradient with tangents ``tangents``."""
    grads = gradient_nodes(g, output, inputs)
    tans = jvp_nodes(g, inputs, tangents, grads, nb=0)
    return [g.instantiate_zeros(t, g.shape(x)) for t, x in zip(tans, inputs)]
