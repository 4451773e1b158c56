"""``symgrad.custom_gradient``: TensorFlow's decorator, honoured in every mode.

The decorated ``f(*x)`` returns ``(y, grad_fn)``; ``grad_fn(*upstream)`` returns
one gradient per input (a bare value is accepted for a single input), or
``(grad_xs, grad_vars)`` when it takes a ``variables`` keyword (see
:class:`symgrad.Variable`).  symgrad traces ``grad_fn`` once with symbolic
upstream values and uses it for ``grad``, ``vjp``, ``jacobian``, ``hessian``,
``hvp`` and, by transposing it, for ``jvp`` (which JAX's ``custom_vjp``
refuses).
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ..errors import RuleError, format_error
from ..trace.pytree import tree_flatten, tree_unflatten
from ..trace.tracer import Tracer, to_node
from ..transforms.custom import CustomRule, rules_of


def _split_result(name, result):
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
        raise RuleError(format_error(
            f"custom_gradient function {name} must return (y, grad_fn)",
            f"got {type(result).__name__}", "return the value and a function computing the input gradients"))
    return result


def custom_gradient(f):
    """Decorator giving ``f`` a user-defined gradient (TensorFlow's ``tf.custom_gradient`` contract).

    Args:
      f: function ``f(*x) -> (y, grad_fn)``; ``x`` and ``y`` may be pytrees of arrays.
    Returns:
      A function with ``f``'s arguments returning ``y``. Inside symgrad transformations its
      derivative is ``grad_fn``; called on concrete values it just returns ``y``.
    Raises:
      RuleError: ``grad_fn`` returns the wrong number of gradients, wrong shapes, or is not
        linear in its upstream arguments (needed for forward mode).
    """
    name = getattr(f, "__name__", "function")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        leaves, in_tree = tree_flatten(args)
        tracers = [l for l in leaves if isinstance(l, Tracer)]
        start = len(tracers[0].ctx.read_log) if tracers else 0
        y, grad_fn = _split_result(name, f(*args, **kwargs))
        if not tracers:
            return y
        ctx = tracers[0].ctx
        g = ctx.graph
        x_ids = [to_node(ctx, l) for l in leaves]
        y_leaves, y_tree = tree_flatten(y)
        y_ids = [to_node(ctx, v) for v in y_leaves]
        index = len(rules_of(g))
        rules_of(g).append(None)  # reserve: grad_fn may itself call custom_gradient functions
        holders = [g.input(f"_upstream_{index}_{k}", g.shape(yid)) for k, yid in enumerate(y_ids)]
        upstream = [ctx.wrap(h) for h in holders]
        variables = _variables_read(ctx, x_ids, start)
        grad_sig = inspect.signature(grad_fn)
        params = grad_sig.parameters
        takes_vars = "variables" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
        try:
            grad_sig.bind(*upstream)
        except TypeError as exc:
            raise RuleError(format_error(
                f"grad_fn{grad_sig} of custom gradient {name} cannot take {len(upstream)} upstream "
                f"gradient(s): {exc}", f"{name} returned {len(y_leaves)} output leaf(s), and grad_fn(*upstream) "
                "receives one upstream gradient per output leaf", f"define grad_fn with {len(y_leaves)} "
                "positional parameter(s)")) from None
        if variables and not takes_vars:
            raise RuleError(format_error(
                f"custom gradient of {name} reads symgrad.Variable(s) {[v.name for v in variables]} "
                "but its grad_fn has no 'variables' keyword",
                "the gradient with respect to those variables would be lost",
                "define grad_fn(*upstream, variables=None) returning (grad_xs, grad_vars)"))
        if takes_vars and variables:
            out = grad_fn(*upstream, variables=[v.var for v in variables])
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise RuleError(f"custom gradient of {name} with variables must return (grad_xs, grad_vars); "
                                f"got {type(out).__name__}")
            grad_xs, grad_vars = out
            var_leaves = list(grad_vars) if isinstance(grad_vars, (list, tuple)) else [grad_vars]
            if len(var_leaves) != len(variables):
                raise RuleError(f"custom gradient of {name} returned {len(var_leaves)} variable gradient(s) "
                                f"for {len(variables)} variable(s)")
        else:
            grad_xs, var_leaves = grad_fn(*upstream), []
        x_bar_leaves = _match_inputs(name, args, grad_xs)
        all_inputs = x_ids + [v.node for v in variables]
        bars = []
        for b, x in zip(x_bar_leaves + var_leaves, all_inputs):
            if b is None:
                bars.append(None)
                continue
            bid = to_node(ctx, b)
            xs, bs = g.shape(x), g.shape(bid)
            if bs != xs and not _broadcasts_to(bs, xs):
                raise RuleError(format_error(
                    f"custom gradient of {name} returned a gradient of shape {bs} for an input of shape {xs}",
                    "each gradient must have its input's shape", "reduce or reshape the gradient"))
            if bs != xs:
                bid = g.apply("broadcast_to", bid, params=(xs,))
            bars.append(bid)
        rules_of(g)[index] = CustomRule(name, holders, bars, all_inputs)
        outs = [ctx.wrap(g.apply("custom_gradient", yid, *all_inputs, params=(index, k)))
                for k, yid in enumerate(y_ids)]
        return tree_unflatten(y_tree, outs)

    return wrapper


def _broadcasts_to(shape, target) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _match_inputs(name, args, grad_xs):
    """Flatten grad_fn's result to one entry per input leaf, checking the count."""
    if len(args) == 1 and not isinstance(grad_xs, (tuple, list)):
        grad_xs = (grad_xs,)
    if not isinstance(grad_xs, (tuple, list)) or len(grad_xs) != len(args):
        got = f"{len(grad_xs)} value(s)" if isinstance(grad_xs, (tuple, list)) else type(grad_xs).__name__
        raise RuleError(format_error(
            f"custom gradient 'grad_fn' of {name} must return {len(args)} gradient(s), one per input; got {got}",
            "grad_fn(*upstream) returns the gradient with respect to each positional input",
            f"return a {len(args)}-tuple (None for an input with zero gradient)"))
    leaves = []
    for a, gx in zip(args, grad_xs):
        a_leaves, a_tree = tree_flatten(a)
        if gx is None:
            leaves.extend([None] * len(a_leaves))
            continue
        g_leaves, g_tree = tree_flatten(gx)
        if len(g_leaves) != len(a_leaves):
            raise RuleError(f"custom gradient of {name}: gradient structure {g_tree} does not match input {a_tree}")
        leaves.extend(g_leaves)
    return leaves


def _variables_read(ctx, x_ids, start: int):
    """Variables read while ``f`` ran (log entries from ``start``), first read first, inputs excluded."""
    seen, out = set(), []
    for rec in ctx.read_log[start:]:
        if id(rec.var) not in seen and rec.node not in x_ids:
            seen.add(id(rec.var))
            out.append(rec)
    return out
