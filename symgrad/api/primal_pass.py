"""The rewrites of the primal graph that run before differentiation when the stabiliser is on.

Each one gives every derivative order from a better primal, which the per-region stabiliser
(:mod:`.stabilize_pass`, after differentiation) cannot reach: the max-shift of log-sum-exp and
softmax across a reduction (:mod:`.shift_pass`) and fused special functions (:mod:`.fused_pass`).
They run on the compiled program (:func:`.pipeline.build` and its siblings) and, for a
transformation called inside another one (``jacobian(grad(f))``), on the inner function's
outputs before the inner derivative is formed (:func:`.nested.call_traced`).
"""
from __future__ import annotations

from ..ir.graph import Graph
from .fused_pass import fuse_special
from .shift_pass import shift_reductions

__all__ = ["primal_rewrites"]


def primal_rewrites(g: Graph, outputs: list[int]) -> tuple[list[int], list[str]]:
    """``(new output ids, header lines)`` after :func:`.shift_pass.shift_reductions` and
    :func:`.fused_pass.fuse_special`; the graph grows, no node changes."""
    outputs, shifted = shift_reductions(g, outputs)
    outputs, fused = fuse_special(g, outputs)
    return outputs, shifted + fused
