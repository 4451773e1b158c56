"""Transformations applied to traced values: ``grad(grad(f))``, ``jacobian(grad(f))``.

When a compiled transformation is called inside another trace, its arguments
are :class:`Tracer` s.  Instead of compiling, the function is traced straight
into the outer graph and the transformation is applied there on the graph, so
the outer transformation differentiates through it (derivatives of
derivatives, built by the same linear-time passes).

With no signature (scalar cores), an argument may be an array tracer: the
function is then elementwise over it, and its gradient is the VJP with an
all-ones cotangent, as in the compiled gufunc model.
"""
from __future__ import annotations

import numpy as np

from ..errors import SignatureError, format_error
from ..trace.pytree import tree_flatten, tree_unflatten
from ..trace.tracer import Tracer, to_node
from ..transforms import hessian_nodes, jacobian_nodes, jvp_nodes, vjp_nodes
from .compiled import _leaf_ranges, normalize_argnums


def _elementwise_between(g, xs, y) -> bool:
    """True if ``y`` depends on the inputs ``xs`` through elementwise operations only, all of
    ``y``'s shape: then its Jacobian is diagonal and the VJP with ones gives the derivatives
    elementwise (the ufunc model of a transformation called with no signature)."""
    from ..ir.ops import REGISTRY

    depends = set(xs)
    for nid in g.ancestors([y]):
        node = g[nid]
        if nid in depends or not any(a in depends for a in node.args):
            continue
        if not REGISTRY[node.op].elementwise or node.shape != g.shape(y):
            return False
        depends.add(nid)
    return all(g.shape(x) in ((), g.shape(y)) for x in xs)


def call_traced(compiled, args):
    """Apply ``compiled.kind`` to ``compiled.fn`` symbolically on the tracers in ``args``."""
    leaves, in_tree = tree_flatten(tuple(args))
    ctx = next(l.ctx for l in leaves if isinstance(l, Tracer))
    g = ctx.graph
    ids = [to_node(ctx, l) for l in leaves]
    tracers = [ctx.wrap(i) for i in ids]
    result = compiled.fn(*tree_unflatten(in_tree, tracers))
    out_leaves, out_tree = tree_flatten(result)
    outs = [to_node(ctx, o) for o in out_leaves]
    kind = compiled.kind
    if kind == "jit":
        return result
    nums, single = normalize_argnums(compiled.argnums, len(args), compiled.name)
    ranges = _leaf_ranges(in_tree)
    wrt = [ids[leaf] for a in nums for leaf in ranges[a]]

    def per_arg(values):
        it = iter(ctx.wrap(v) for v in values)
        trees = tuple(tree_unflatten(in_tree.children[a], [next(it) for _ in ranges[a]]) for a in nums)
        return trees[0] if single else trees

    if kind in ("grad", "value_and_grad", "hessian"):
        if len(outs) != 1 or (g.shape(outs[0]) != () and (
                compiled.signature is not None or not _elementwise_between(g, wrt, outs[0]))):
            raise SignatureError(format_error(
                f"{kind} of {compiled.name} needs one scalar core output", "gradients are defined for "
                "real-valued functions", "reduce the output or use jacobian"))
        y = outs[0]
        ones = g.const(np.ones(g.shape(y)))
        if kind == "hessian":
            if g.shape(y) != ():
                raise NotImplementedError("nested hessian of an elementwise function: use grad(grad(f))")
            rows = hessian_nodes(g, y, wrt)
            if len(wrt) != 1:
                raise NotImplementedError("nested hessian with several arguments: use jacobian(grad(f))")
            return ctx.wrap(rows[0][0])
        bars = vjp_nodes(g, [y], [ones], wrt)
        bars = [b if b is not None else g.const(np.zeros(g.shape(w))) for b, w in zip(bars, wrt)]
        grads = per_arg(bars)
        return (ctx.wrap(y), grads) if kind == "value_and_grad" else grads
    if kind == "jacobian":
        blocks = jacobian_nodes(g, wrt, outs)
        rows = [per_arg(r) for r in blocks]
        return tree_unflatten(out_tree, rows)
    raise NotImplementedError(f"symgrad.{kind} cannot yet be applied inside another transformation")
