"""Transformations applied to traced values: ``grad(grad(f))``, ``jacobian(grad(f))``.

When a compiled transformation is called inside another trace, its arguments
are :class:`Tracer` s.  Instead of compiling, the function is traced straight
into the outer graph and the transformation is applied there on the graph, so
the outer transformation differentiates through it (derivatives of
derivatives, built by the same linear-time passes).

With no signature, an argument may be an array tracer of a function that is
elementwise in it: its gradient is then the VJP with an all-ones cotangent, as
in the compiled ufunc model.  A function that is not elementwise needs a scalar
output, as ``jax.grad`` does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SignatureError, UnsupportedOperationError, format_error
from ..ir.ops import REGISTRY
from ..trace.pytree import TreeDef, tree_flatten, tree_unflatten
from ..trace.tracer import TraceContext, Tracer, to_node
from ..transforms import hessian_nodes, jacobian_nodes, vjp_nodes
from .argnums import leaf_ranges, normalize_argnums
from .primal_pass import primal_rewrites

__all__ = ["call_traced", "NESTED"]


@dataclass
class NestedCall:
    """A transformation called on tracers of an enclosing trace."""

    compiled: object      # the symgrad.api.compiled.Compiled being called
    ctx: TraceContext
    result: object        # what the function returned, traced into the outer graph
    outs: list            # its output nodes
    out_tree: TreeDef
    in_tree: TreeDef
    nums: tuple
    single: bool
    ranges: list
    wrt: list             # differentiated input nodes

    def per_arg(self, values):
        it = iter(self.ctx.wrap(v) for v in values)
        trees = tuple(tree_unflatten(self.in_tree.children[a], [next(it) for _ in self.ranges[a]])
                      for a in self.nums)
        return trees[0] if self.single else trees

    def scalar_output(self) -> int:
        g, c = self.ctx.graph, self.compiled
        if len(self.outs) != 1 or (g.shape(self.outs[0]) != () and (
                c.signature is not None or not _elementwise_between(g, self.wrt, self.outs[0]))):
            raise SignatureError(format_error(
                f"{c.kind} of {c.name} needs one scalar core output", "gradients are defined for "
                "real-valued functions", "reduce the output or use jacobian"))
        return self.outs[0]


def _elementwise_between(g, xs, y) -> bool:
    """True if ``y`` depends on the inputs ``xs`` through elementwise operations only, all of
    ``y``'s shape: then its Jacobian is diagonal and the VJP with ones gives the derivatives
    elementwise (the ufunc model of a transformation called with no signature)."""
    depends = set(xs)
    for nid in g.ancestors([y]):
        node = g[nid]
        if nid in depends or not any(a in depends for a in node.args):
            continue
        if not REGISTRY[node.op].elementwise or node.shape != g.shape(y):
            return False
        depends.add(nid)
    return all(g.shape(x) in ((), g.shape(y)) for x in xs)


def _grad(n: NestedCall, with_value: bool = False):
    g = n.ctx.graph
    y = n.scalar_output()
    bars = vjp_nodes(g, [y], [g.const(np.ones(g.shape(y)))], n.wrt)
    grads = n.per_arg([g.instantiate_zeros(b, g.shape(w)) for b, w in zip(bars, n.wrt)])
    return (n.ctx.wrap(y), grads) if with_value else grads


def _hessian(n: NestedCall):
    g = n.ctx.graph
    y = n.scalar_output()
    if g.shape(y) != () or len(n.wrt) != 1:
        raise UnsupportedOperationError(format_error(
            f"hessian of {n.compiled.name} inside another transformation needs one scalar output and one "
            "differentiated argument", "nested Hessians are built for that case only",
            "use jacobian(grad(f)) instead"))
    return n.ctx.wrap(hessian_nodes(g, y, n.wrt)[0][0])


def _jacobian(n: NestedCall):
    blocks = jacobian_nodes(n.ctx.graph, n.wrt, n.outs)
    return tree_unflatten(n.out_tree, [n.per_arg(r) for r in blocks])


# how each transformation applies inside another trace (kinds missing here are refused)
NESTED = {
    "jit": lambda n: n.result,
    "grad": _grad,
    "value_and_grad": lambda n: _grad(n, with_value=True),
    "hessian": _hessian,
    "jacobian": _jacobian,
}


def call_traced(compiled, args):
    """Apply ``compiled.kind`` to ``compiled.fn`` symbolically on the tracers in ``args``."""
    rule = NESTED.get(compiled.kind)
    if rule is None:
        raise UnsupportedOperationError(format_error(
            f"symgrad.{compiled.kind} of {compiled.name} was called inside another transformation",
            f"{compiled.kind} cannot yet be applied to traced values",
            "apply it outside, or write the inner derivative with grad/jacobian"))
    leaves, in_tree = tree_flatten(tuple(args))
    ctx = next(l.ctx for l in leaves if isinstance(l, Tracer))
    ids = [to_node(ctx, l) for l in leaves]
    result = compiled.fn(*tree_unflatten(in_tree, [ctx.wrap(i) for i in ids]))
    out_leaves, out_tree = tree_flatten(result)
    outs = [to_node(ctx, o) for o in out_leaves]
    # before the inner derivative is formed (a nested jit forms none: the outer build rewrites its graph);
    # the header lines are dropped, the inner call has no kernel of its own to print them in
    if compiled.stabilize and compiled.kind != "jit":
        new, _ = primal_rewrites(ctx.graph, outs)
        if new != outs:
            outs, result = new, tree_unflatten(out_tree, [ctx.wrap(o) for o in new])
    nums, single = normalize_argnums(compiled.argnums, len(args), compiled.name)
    ranges = leaf_ranges(in_tree)
    wrt = [ids[k] for k in compiled.transformation.wrt(len(ids), nums, ranges)]
    return rule(NestedCall(compiled, ctx, result, outs, out_tree, in_tree, nums, single, ranges, wrt))
