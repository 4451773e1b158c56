"""np.select and np.piecewise while tracing: chains of ``where``.

Both choose, element by element, among values by boolean conditions, so each is a chain of
``where`` (emitted as a branch that evaluates and differentiates only the taken side).  They differ
in precedence, and NumPy's order is kept: in ``np.select`` the *first* true condition wins (its
docs: "When multiple conditions are satisfied, the first one encountered in condlist is used"), in
``np.piecewise`` the *last* one does (NumPy assigns ``y[cond] = ...`` condition by condition, so a
later condition overwrites an earlier one; ``jnp.piecewise`` agrees).
"""
from __future__ import annotations

import numpy as np

from ..errors import format_error, user_location
from . import numpy_core as core
from .tracer import Tracer


def _condition(ctx, i: int, cond, strict: bool):
    """Condition ``i`` as a boolean Tracer or array.  ``strict`` (np.select): it must be boolean
    (TypeError as NumPy); otherwise (np.piecewise) it is cast to bool as NumPy's ``asarray(dtype=bool)``."""
    if isinstance(cond, Tracer):
        if cond.dtype == bool:
            return cond
        if strict:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
        return ctx.apply("ne", cond, 0.0)
    arr = np.asarray(cond)
    if arr.dtype != bool:
        if strict:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
        arr = arr.astype(bool)
    return arr


def select(ctx, condlist, choicelist, default=0):
    """np.select: ``choicelist[i]`` where ``condlist[i]`` is the first true condition, ``default``
    where none is; conditions and choices (traced or constant) broadcast together.

    Built as ``where(c0, v0, where(c1, v1, ... default))``.  Shape: the broadcast of every condition
    and choice.  Raises ValueError for lists of different lengths or empty ones, TypeError for a
    non-boolean condition (NumPy's errors)."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    conds = [_condition(ctx, i, c, strict=True) for i, c in enumerate(condlist)]
    result = default
    for cond, choice in zip(reversed(conds), reversed(choicelist)):
        result = ctx.apply("where", cond, choice, result)
    return result


def _conditions(x: Tracer, condlist) -> list:
    """NumPy's reading of piecewise's ``condlist``: a list of conditions, or one condition (a
    scalar, an array of x's shape, or a list of scalars for an x with dimensions); an array with one
    more dimension than x is a stack of conditions."""
    ndim = len(x.core_shape)
    if isinstance(condlist, (Tracer, np.ndarray)):
        cond_ndim = len(condlist.core_shape) if isinstance(condlist, Tracer) else condlist.ndim
        if cond_ndim == ndim + 1:
            return [condlist[i] for i in range(condlist.core_shape[0] if isinstance(condlist, Tracer)
                                               else condlist.shape[0])]
        return [condlist]
    if np.isscalar(condlist) or isinstance(condlist, (bool, np.bool_)):
        return [condlist]
    condlist = list(condlist)
    if condlist and not isinstance(condlist[0], (list, tuple, np.ndarray, Tracer)) and ndim != 0:
        return [condlist]  # NumPy's "undocumented: single condition is promoted to a list of one condition"
    return condlist


def piecewise(ctx, x, condlist, funclist, *args, **kw):
    """np.piecewise: ``funclist[i]`` where ``condlist[i]`` holds, the *last* true condition winning
    (NumPy's assignment order); with one more function than conditions, the extra one applies where
    no condition holds, else such entries are 0.  A function is called as ``f(x, *args, **kw)`` on
    the whole traced x (NumPy calls it on ``x[cond]``: the same for elementwise functions, which the
    functions must be here); a non-callable entry is a constant value (may be traced).

    Shape: x's.  Raises ValueError when the number of functions is neither the number of conditions
    nor one more (NumPy's message), and for a condition that does not broadcast to x."""
    xt = core.as_tracer(ctx, x)
    conds = [_condition(ctx, i, c, strict=False) for i, c in enumerate(_conditions(xt, condlist))]
    funclist = list(funclist)
    n, n2 = len(conds), len(funclist)
    if n2 not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    shape = xt.core_shape
    for i, c in enumerate(conds):
        cshape = c.core_shape if isinstance(c, Tracer) else np.shape(c)
        try:
            fits = np.broadcast_shapes(cshape, shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(format_error(
                f"numpy.piecewise: condition {i} has shape {cshape}, x has shape {shape}", "each condition "
                "selects entries of x", "give conditions of x's shape", user_location(3)))

    def value(func):
        return func(xt, *args, **kw) if callable(func) else func
    y = value(funclist[-1]) if n2 == n + 1 else 0.0  # the "otherwise" entries: where no condition holds
    for cond, func in zip(conds, funclist):
        y = ctx.apply("where", cond, value(func), y)
    y = core.as_tracer(ctx, y)
    return y if y.core_shape == shape else ctx.apply("broadcast_to", y, params=(shape,))


FUNCTIONS = {np.select: select, np.piecewise: piecewise}
