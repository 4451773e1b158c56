"""``symgrad.ForwardAccumulator``: TensorFlow's forward-mode front end on eager values.

The accumulator pairs primals (eager values or :class:`symgrad.Variable` s) with
tangents.  ``acc.jvp(y)`` pushes the tangents forward to ``y`` with
:func:`~symgrad.transforms.jvp.jvp_nodes` on the shared eager graph
(:mod:`symgrad.api.eager`) and returns an eager value, which stays in the
graph.  Hence:

* nested accumulators give higher-order JVPs: ``outer.jvp(inner.jvp(y))`` is
  the second directional derivative;
* an accumulator around a :class:`symgrad.GradientTape` gives
  forward-over-backward Hessian-vector products: ``acc.jvp(tape.gradient(y, v))``;
* ``custom_gradient`` rules work in forward mode too (their rule is transposed,
  see :mod:`symgrad.transforms.custom`).

Differences from TensorFlow: JVPs are computed when ``jvp`` is called (TensorFlow
computes them while the context is active and ``jvp`` only looks them up), so
operations executed after the ``with`` block are also differentiated, and
``inner.jvp(outer.jvp(y))`` works as well (TensorFlow returns None there).
"""
from __future__ import annotations

import numpy as np

from ..trace.pytree import tree_flatten, tree_unflatten
from ..transforms import jvp_nodes
from .eager import EagerTensor, Recorder, eager_node, is_variable
from .tape import _check_unconnected, _dtype_of

__all__ = ["ForwardAccumulator"]


class ForwardAccumulator(Recorder):
    """Jacobian-vector products by forward accumulation (TensorFlow's ``tf.autodiff.ForwardAccumulator``).

    Args:
      primals: an eager value, a :class:`symgrad.Variable`, or a nested structure of them.
      tangents: the same structure; each leaf has its primal's shape (or its size, reshaped)
        and is an array, a number or an eager value.
    Raises:
      ValueError: the same value or Variable appears twice in ``primals``; tangents do not
        match primals in structure or shape.
      TypeError: a primal is a plain number or array (wrap it with ``symgrad.constant``).

    Example (the forward-accumulator documentation's nested JVP)::

        x = sg.constant(1.1, np.float32)
        with sg.ForwardAccumulator(x, 1.0) as outer:
            with sg.ForwardAccumulator(x, 1.0) as inner:
                y = x ** 3.5
        inner.jvp(y)                # 3.5 * 1.1**2.5        = 4.4417057
        outer.jvp(inner.jvp(y))     # 3.5 * 2.5 * 1.1**1.5  = 10.094786

    Reference: TensorFlow, ``tf.autodiff.ForwardAccumulator``; forward accumulation as in
    Griewank & Walther, *Evaluating Derivatives* (2008), ch. 3.
    """

    def __init__(self, primals, tangents):
        super().__init__()
        ctx, g = self._ctx, self._ctx.graph
        p_leaves, p_tree = tree_flatten(primals)
        t_leaves, t_tree = tree_flatten(tangents)
        if len(p_leaves) != len(t_leaves):
            raise ValueError(f"ForwardAccumulator: got {len(p_leaves)} primal(s) but {len(t_leaves)} tangent(s); "
                             "tangents must have the structure of primals")
        self._nodes: dict[int, int] = {}   # primal node -> tangent node
        self._vars: dict[int, tuple] = {}  # id(Variable) -> (Variable, tangent node)
        for p, t in zip(p_leaves, t_leaves):
            if is_variable(p):
                key, shape = ("var", id(p)), p.value.shape
            elif isinstance(p, EagerTensor):
                key, shape = ("node", eager_node(ctx, p)), p.shape
            else:
                raise TypeError(f"ForwardAccumulator: primals must be eager values (symgrad.constant) or "
                                f"symgrad.Variable; got {type(p).__name__}")
            if key[1] in (self._vars if key[0] == "var" else self._nodes):
                raise ValueError(f"ForwardAccumulator: the same {'Variable' if key[0] == 'var' else 'tensor'} "
                                 "was given twice in primals; give each primal once (sum its tangents instead)")
            tid = eager_node(ctx, t)
            if g.shape(tid) != tuple(shape):
                if int(np.prod(g.shape(tid))) != int(np.prod(shape)):
                    raise ValueError(f"ForwardAccumulator: a tangent has shape {g.shape(tid)} but its primal has "
                                     f"shape {tuple(shape)}")
                tid = g.apply("reshape", tid, params=(tuple(shape),))
            if key[0] == "var":
                self._vars[key[1]] = (p, tid)
            else:
                self._nodes[key[1]] = tid

    def _inputs(self):
        pairs = dict(self._nodes)
        for vid, (var, tid) in self._vars.items():
            for n in self._reads.get(vid, ()):
                pairs[n] = tid
        return list(pairs), list(pairs.values())

    def jvp(self, primals, unconnected_gradients="none"):
        """The Jacobian-vector product for ``primals`` (values computed from the watched primals).

        Args:
          primals: an eager value, a watched Variable, or a nested structure of them.
          unconnected_gradients: ``"none"`` returns None where there is no dependence on the
            watched primals; ``"zero"`` returns zeros of the value's shape.
        Returns:
          Eager values with the structure and shapes of ``primals``.
        """
        unconnected = _check_unconnected(unconnected_gradients)
        ctx, g = self._ctx, self._ctx.graph
        leaves, tree = tree_flatten(primals)
        inputs, tangents = self._inputs()
        results = []
        for leaf in leaves:
            if is_variable(leaf):
                entry = self._vars.get(id(leaf))
                nid = entry[1] if entry is not None else None
                shape = leaf.value.shape
            else:
                out = eager_node(ctx, leaf)
                nid = jvp_nodes(g, inputs, tangents, [out])[0] if inputs else None
                shape = g.shape(out)
            results.append(ctx.derivative(nid, shape, _dtype_of(leaf), unconnected))
        return tree_unflatten(tree, results)
