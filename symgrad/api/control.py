"""Derivative control usable inside traced functions."""
from __future__ import annotations

from ..trace.pytree import tree_flatten, tree_unflatten
from ..trace.tracer import Tracer


def stop_gradient(x):
    """Identity on values; its derivative is zero in every mode and at every order.

    Args:
      x: an array, number or pytree of them (traced or not).
    Returns:
      ``x`` unchanged in value; inside a trace, a value that derivatives do not flow through.

    >>> import numpy as np, symgrad
    >>> float(symgrad.grad(lambda x: x * symgrad.stop_gradient(x))(3.0))
    3.0
    """
    leaves, tree = tree_flatten(x)
    out = [l.ctx.apply("stop_gradient", l) if isinstance(l, Tracer) else l for l in leaves]
    return tree_unflatten(tree, out)
