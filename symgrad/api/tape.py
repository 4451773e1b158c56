"""``symgrad.GradientTape``: TensorFlow's reverse-mode front end on eager values.

Operations on eager values (:func:`symgrad.constant`, :class:`symgrad.Variable`
reads) are already recorded in one graph (:mod:`symgrad.api.eager`), so the
tape itself only remembers what it watches.  ``tape.gradient`` builds the
reverse-mode derivative on that graph with
:func:`~symgrad.transforms.vjp.vjp_nodes` (so ``custom_gradient`` rules are
honoured) and returns eager values: the gradient nodes stay in the graph, where
an enclosing tape or :class:`symgrad.ForwardAccumulator` can differentiate
them again (second derivatives, forward-over-backward Hessian-vector
products).

Difference from TensorFlow: a TensorFlow tape differentiates only the operations
executed while it was recording.  symgrad differentiates every operation on the
path from the sources to the target, including ones executed before the
``with`` block; the tape decides *which sources* are differentiable (watched
values, values computed from them, and variables read while recording).
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..trace.pytree import tree_flatten, tree_unflatten
from ..transforms import jacobian_nodes, vjp_nodes
from .eager import EagerTensor, Recorder, eager_node, is_variable

__all__ = ["GradientTape"]

_UNCONNECTED = ("none", "zero")


def _check_unconnected(value: str) -> str:
    value = getattr(value, "value", value)  # accept an enum with a .value like TF's UnconnectedGradients
    if value not in _UNCONNECTED:
        raise ValueError(f"unconnected_gradients must be 'none' or 'zero'; got {value!r}")
    return value


class GradientTape(Recorder):
    """Record eager computations and differentiate them in reverse mode (TensorFlow's ``tf.GradientTape``).

    Args:
      persistent: allow more than one ``gradient``/``jacobian`` call (default: one).
      watch_accessed_variables: watch every :class:`symgrad.Variable` read while the tape is active.

    Example (the ``tf.custom_gradient`` documentation's ``x * y``)::

        x, y = sg.constant(2.0, np.float32), sg.constant(3.0, np.float32)
        with sg.GradientTape(persistent=True) as tape:
            tape.watch(x)
            tape.watch(y)
            z = x * y
        tape.gradient(z, x)   # 3.0
        tape.gradient(z, y)   # 2.0

    Reference: TensorFlow, ``tf.GradientTape``; reverse accumulation as in
    Griewank & Walther, *Evaluating Derivatives* (2008), ch. 3.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        super().__init__()
        self.persistent = bool(persistent)
        self.watch_accessed_variables = bool(watch_accessed_variables)
        self._watched: set[int] = set()
        self._watched_vars: dict[int, object] = {}
        self._read_vars: dict[int, object] = {}
        self._used = False

    def _on_variable_read(self, var, node: int) -> None:
        super()._on_variable_read(var, node)
        if getattr(var, "trainable", True):  # tf.Variable(trainable=False) is watched only by tape.watch
            self._read_vars[id(var)] = var

    # -- watching --------------------------------------------------------------------
    def watch(self, tensor) -> None:
        """Differentiate with respect to ``tensor`` (an eager value, a Variable, or a nested structure of them).

        Raises:
          TypeError: a leaf is a plain number or array (wrap it with ``symgrad.constant`` first).
        """
        leaves, _ = tree_flatten(tensor)
        for leaf in leaves:
            if isinstance(leaf, EagerTensor):
                self._watched.add(eager_node(self._ctx, leaf))
            elif is_variable(leaf):
                self._watched_vars[id(leaf)] = leaf
            else:
                raise TypeError(f"GradientTape.watch expects eager values (symgrad.constant) or symgrad.Variable; "
                                f"got {type(leaf).__name__}. Create the value with symgrad.constant(...) first")

    def watched_variables(self) -> tuple:
        """The Variables this tape differentiates with respect to (read while recording, or watched)."""
        out = dict(self._watched_vars)
        if self.watch_accessed_variables:
            out.update(self._read_vars)
        return tuple(out.values())

    # -- differentiation ---------------------------------------------------------------
    def _use(self, what: str) -> None:
        if self._used and not self.persistent:
            raise RuntimeError(
                f"GradientTape.{what}: this non-persistent tape was already used to compute gradients; its "
                "resources are released after one gradient or jacobian call. Create it with "
                "GradientTape(persistent=True) to call gradient/jacobian more than once")
        self._used = True

    def _source_nodes(self, leaf) -> list[int] | None:
        """Graph nodes that stand for one source leaf, or None if it is not differentiable on this tape."""
        g = self._ctx.graph
        if is_variable(leaf):
            watched = id(leaf) in self._watched_vars or (self.watch_accessed_variables and id(leaf) in self._read_vars)
            nodes = self._reads.get(id(leaf), [])
            return list(nodes) if watched and nodes else None
        if not isinstance(leaf, EagerTensor):
            raise TypeError(f"GradientTape: sources must be eager values or symgrad.Variable; got {type(leaf).__name__}")
        nid = eager_node(self._ctx, leaf)
        roots = self._watched | {n for vid, ns in self._reads.items() for n in ns
                                 if vid in self._watched_vars or self.watch_accessed_variables}
        if nid in roots or roots & set(g.ancestors([nid])):
            return [nid]
        return None

    def _targets(self, target, output_gradients):
        ctx, g = self._ctx, self._ctx.graph
        t_leaves, t_tree = tree_flatten(target)
        outs = [eager_node(ctx, t) for t in t_leaves]
        if output_gradients is None:
            cts = [g.const(np.ones(g.shape(o))) for o in outs]
        else:
            c_leaves, c_tree = tree_flatten(output_gradients)
            if len(c_leaves) != len(outs):
                raise ValueError(f"GradientTape.gradient: output_gradients has {len(c_leaves)} leaves but the target "
                                 f"has {len(outs)}; give one upstream gradient per target")
            cts = []
            for c, o in zip(c_leaves, outs):
                cid = g.zeros(g.shape(o)) if c is None else eager_node(ctx, c)
                if g.shape(cid) != g.shape(o):
                    if np.broadcast_shapes(g.shape(cid), g.shape(o)) != g.shape(o):
                        raise ValueError(f"GradientTape.gradient: an output gradient has shape {g.shape(cid)} but "
                                         f"its target has shape {g.shape(o)}")
                    cid = g.apply("broadcast_to", cid, params=(g.shape(o),))
                cts.append(cid)
        return outs, cts

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """Gradient of ``target`` (summed over its elements and leaves) with respect to ``sources``.

        Args:
          target: eager value or nested structure of them; a non-scalar target is differentiated as
            the sum of its elements unless ``output_gradients`` is given.
          sources: eager value, :class:`symgrad.Variable`, or a nested structure of them.
          output_gradients: upstream gradients, one per target leaf, shaped like it (the "vector" of
            the vector-Jacobian product). May be eager values: the result is then a function of them.
          unconnected_gradients: ``"none"`` (default) returns None for a source the target does not
            depend on; ``"zero"`` returns zeros of the source's shape.
        Returns:
          Eager values with the structure of ``sources``, each shaped like its source
          (``np.asarray`` gives the array). They can be differentiated again by an enclosing tape
          or accumulator.
        Raises:
          RuntimeError: a non-persistent tape is used a second time.
          ValueError: ``output_gradients`` does not match ``target``; bad ``unconnected_gradients``.
          TypeError: a source is not an eager value or Variable.
          RuleError: a ``custom_gradient`` rule met on the way breaks its contract.
        """
        unconnected = _check_unconnected(unconnected_gradients)
        self._use("gradient")
        g = self._ctx.graph
        for leaf in tree_flatten(target)[0]:
            if is_variable(leaf):  # a Variable returned as the target (TF's ``result = v0``): read now, as TF does
                self._on_variable_read(leaf, eager_node(self._ctx, leaf))
        outs, cts = self._targets(target, output_gradients)
        s_leaves, s_tree = tree_flatten(sources)
        groups = [self._source_nodes(s) for s in s_leaves]
        wrt = sorted({n for grp in groups if grp for n in grp})
        bars = dict(zip(wrt, vjp_nodes(g, outs, cts, wrt))) if wrt else {}
        results = [self._ctx.derivative(_sum_blocks(g, grp, bars), np.shape(leaf), _dtype_of(leaf), unconnected)
                   for leaf, grp in zip(s_leaves, groups)]
        return tree_unflatten(s_tree, results)

    def jacobian(self, target, sources, unconnected_gradients="none"):
        """Full Jacobian of one eager ``target`` with respect to ``sources``.

        Returns:
          For each source (structure of ``sources``), an eager value of shape
          ``target.shape + source.shape``; None (or zeros with ``"zero"``) if unconnected.
        Raises:
          RuntimeError: a non-persistent tape is used a second time.
        """
        unconnected = _check_unconnected(unconnected_gradients)
        self._use("jacobian")
        ctx, g = self._ctx, self._ctx.graph
        out = eager_node(ctx, target)
        s_leaves, s_tree = tree_flatten(sources)
        groups = [self._source_nodes(s) for s in s_leaves]
        wrt = sorted({n for grp in groups if grp for n in grp})
        anc = set(g.ancestors([out]))
        live = [n for n in wrt if n in anc]
        blocks = {}
        if live:
            try:
                rows = jacobian_nodes(g, live, [out])
            except NotImplementedError:  # reverse-mode Jacobian through some custom rules
                rows = jacobian_nodes(g, live, [out], mode="fwd")
            blocks = dict(zip(live, rows[0]))
        results = [self._ctx.derivative(_sum_blocks(g, grp, blocks), g.shape(out) + np.shape(leaf), _dtype_of(leaf),
                                unconnected) for leaf, grp in zip(s_leaves, groups)]
        return tree_unflatten(s_tree, results)


def _dtype_of(leaf):
    if is_variable(leaf):
        return leaf.value.dtype
    try:
        return leaf.dtype
    except (AttributeError, TraceError):
        return np.float64


def _sum_blocks(g, nodes, blocks: dict):
    """Sum of ``blocks[n]`` over the graph nodes ``n`` that stand for one source (None if none)."""
    total = None
    for n in nodes or ():
        b = blocks.get(n)
        if b is not None:
            total = b if total is None else g.apply("add", total, b)
    return total
