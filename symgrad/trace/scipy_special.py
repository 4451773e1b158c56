"""``scipy.special``'s Python functions while tracing: logsumexp, softmax, log_softmax, polygamma,
multigammaln.

SciPy's own implementations of these are Python code that branches on values, so they cannot
run on traced values; :mod:`.library_calls` sends calls with traced arguments here instead
(the ufuncs of ``scipy.special`` reach symgrad through NumPy's ``__array_ufunc__``).  Each
builder takes the :class:`~symgrad.trace.tracer.TraceContext` first and SciPy's arguments
after it, with SciPy's meaning and defaults (``axis=None`` reduces every axis, unlike JAX's
``jax.nn.softmax`` whose default is the last axis).

The reductions are the max-shifted forms of ``jax.scipy.special.logsumexp`` and
``jax.nn.softmax``/``log_softmax``: with ``m = shift_max(x)`` over the axes, a constant of
no derivative (``stop_gradient(max)`` in JAX; :mod:`symgrad.ir.rules.shift`),

* ``softmax(x)     = exp(x - m) / sum(exp(x - m))``;
* ``logsumexp(x)   = m + log1p(T)``, ``log_softmax(x) = (x - m) - log1p(T)``, where
  ``T = sum(exp(x - m)) - 1`` is summed without cancellation as SciPy does (its
  ``_logsumexp`` takes the maximal terms out of the sum): the terms at the maximum
  contribute ``expm1(x - m) = 0`` (derivative 1, as ``exp`` there) and their count minus one
  is added, so ``logsumexp([0, -40])`` is ``4.2e-18`` (``log(1 + 4.2e-18)`` would be 0).

Blanchard, Higham & Higham (2021), "Accurately computing the log-sum-exp and softmax
functions", IMA J. Numer. Anal. 41(4), sec. 2-3.  Derivatives come from the graph: the
gradient of ``logsumexp`` is ``softmax``, finite for ``-inf`` entries and logits near
+-1000, as JAX's.
"""
from __future__ import annotations

import numbers
import operator

import numpy as np

from ..errors import format_error, user_location
from . import numpy_core as core
from .tracer import Tracer

__all__ = ["FUNCTIONS", "logsumexp", "softmax", "log_softmax", "polygamma", "multigammaln"]


def _bool_flag(func: str, name: str, value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(format_error(
        f"scipy.special.{func}: {name} must be True or False; got {type(value).__name__} {value!r:.40}",
        f"{name} decides the shape or structure of the result, which is fixed while tracing",
        f"pass a constant {name}=True or {name}=False", user_location(3)))


def _axes(func: str, axis, ndim: int) -> tuple[int, ...]:
    """SciPy's ``axis``: None (every axis), an int or a tuple of ints; AxisError as NumPy."""
    items = axis if isinstance(axis, tuple) else (axis,)
    if axis is not None and not all(isinstance(a, (numbers.Integral, np.integer)) and not isinstance(a, bool)
                                    for a in items):
        raise TypeError(format_error(
            f"scipy.special.{func}: axis must be None, an int or a tuple of ints; got {axis!r:.60}",
            "the axes are part of the traced program's structure", "pass constant integer axes",
            user_location(3)))
    return core.axes_of(None if axis is None else tuple(operator.index(a) for a in items), ndim)


def _reduced(x: Tracer, axes) -> tuple[int, ...]:
    """``x``'s shape with the reduced axes kept as length 1 (``keepdims=True``)."""
    return tuple(1 if i in axes else d for i, d in enumerate(x.core_shape))


def _shift(ctx, x: Tracer, axes, of: Tracer | None = None) -> tuple[Tracer, Tracer]:
    """``(x - m, m)``, ``m`` the finite-clamped max over ``axes`` of ``of`` (default ``x``), kept as
    length-1 axes; ``m`` has no derivative (``shift_max``)."""
    m = ctx.apply("shift_max", x if of is None else of, params=(axes,))
    m = core.reshape(ctx, m, _reduced(x, axes))
    return ctx.apply("sub", x, m), m


def _excess(ctx, d: Tracer, axes, b) -> Tracer:
    """``T = sum(b * exp(d)) - 1`` over ``axes`` (kept as length 1) for ``d = x - max(x)``,
    with no cancellation: the maximal terms (``d == 0``) enter as ``expm1(d) = 0`` (whose
    derivative is ``exp(d)``, as for every other term) and their weights minus one as a
    separate sum, which is exactly 0 for a single maximum of weight 1.

    ``T`` is right for *any* choice of the terms marked maximal, as long as both sums use the
    same marks (``expm1 = exp - 1``); the marks only decide the accuracy.  They are therefore
    read through one ``stop_gradient`` node: the stabiliser treats it as a leaf and cannot
    rewrite the test ``d == 0`` differently in the two sums (it may rewrite ``d`` inside a
    branch, where an ulp of difference costs an ulp)."""
    marks = ctx.apply("stop_gradient", ctx.apply("where", ctx.apply("eq", d, 0.0), 1.0, 0.0))
    at_max = ctx.apply("gt", marks, 0.5)
    terms = ctx.apply("where", at_max, ctx.apply("expm1", d), ctx.apply("exp", d))
    if b is not None:
        terms = ctx.apply("mul", b, terms)
    top = marks if b is None else ctx.apply("where", at_max, b, 0.0)
    rest = core.np_sum(ctx, terms, axes, keepdims=True)
    return ctx.apply("add", rest, ctx.apply("sub", core.np_sum(ctx, top, axes, keepdims=True), 1.0))


def _squeeze(ctx, v: Tracer, x: Tracer, axes, keepdims: bool) -> Tracer:
    if keepdims:
        return v
    return core.reshape(ctx, v, tuple(d for i, d in enumerate(x.core_shape) if i not in axes))


def logsumexp(ctx, a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp(a, axis, b, keepdims, return_sign)`` on traced values.

    ``log(sum(b * exp(a)))`` over ``axis`` (None: every axis) as SciPy defines it: ``a`` and
    ``b`` broadcast together, a 0-d input counts as shape (1,), terms with ``b == 0`` are left
    out (even where ``a`` is inf or NaN; the derivative in ``b`` is 0 there, as JAX's), a
    negative sum gives NaN unless ``return_sign``, and ``return_sign=True`` returns
    ``(log|sum|, sign(sum))`` with the sign +1, 0 or -1 (its derivative is 0).  Evaluated shifted by the maximum as the module docstring says; with
    ``b`` the sum of weights at the maximum replaces the count there.

    Args:
      a: traced array or constant, any core shape; float64 or float32 kernels.
      axis: None, int or tuple of ints (constants).
      b: None, a number, an array or a traced array broadcastable with ``a``; it may be
        negative and may be differentiated.
      keepdims, return_sign: constant bools.
    Returns:
      The log-sum-exp, shaped like the broadcast of ``a`` and ``b`` without ``axis`` (kept as
      length 1 with ``keepdims``); with ``return_sign`` a tuple ``(out, sign)`` of that shape.
    Raises:
      TypeError: a non-constant or non-integer ``axis``, or non-bool ``keepdims``/``return_sign``.
      numpy.exceptions.AxisError: an axis out of range, as SciPy (NumPy) raises it.
      ValueError: ``a`` and ``b`` do not broadcast.
    Reference: SciPy ``scipy/special/_logsumexp.py`` (semantics, maximal terms separated);
    ``jax.scipy.special.logsumexp`` (stop-gradient max shift); Blanchard, Higham & Higham 2021.
    """
    ctx.whole_array("scipy.special.logsumexp")
    keepdims = _bool_flag("logsumexp", "keepdims", keepdims)
    return_sign = _bool_flag("logsumexp", "return_sign", return_sign)
    x = core.as_tracer(ctx, a)
    if b is not None:
        b = core.as_tracer(ctx, b)
        try:
            shape = np.broadcast_shapes(x.core_shape, b.core_shape)
        except ValueError:
            raise ValueError(format_error(
                f"scipy.special.logsumexp: a of core shape {x.core_shape} and b of core shape {b.core_shape} "
                "do not broadcast", "SciPy weights each term of a by the element of b broadcast against it",
                "give b a shape that broadcasts with a", user_location(2))) from None
        x, b = (v if v.core_shape == shape else ctx.apply("broadcast_to", v, params=(shape,)) for v in (x, b))
    if x.core_shape == ():
        x = core.reshape(ctx, x, (1,))
        b = None if b is None else core.reshape(ctx, b, (1,))
    axes = _axes("logsumexp", axis, len(x.core_shape))
    if any(x.core_shape[i] == 0 for i in axes):  # an empty sum: log(0) = -inf, as SciPy
        out = core.as_tracer(ctx, np.full(_reduced(x, axes), -np.inf))
        sign = core.as_tracer(ctx, np.zeros(_reduced(x, axes)))
    else:
        if b is None:
            d, m = _shift(ctx, x, axes)
        else:  # SciPy: a term with b == 0 is left out, even where a is inf or NaN (so is its derivative, as JAX)
            d, m = _shift(ctx, ctx.apply("where", ctx.apply("ne", b, 0.0), x, -np.inf), axes)
        t = _excess(ctx, d, axes, b)
        sign = ctx.apply("sign", ctx.apply("add", t, 1.0))
        if b is not None and return_sign:  # log|1 + T|: for T < -1 that is log1p(-T - 2)
            t = ctx.apply("where", ctx.apply("lt", t, -1.0), ctx.apply("sub", -2.0, t), t)
        out = ctx.apply("add", m, ctx.apply("log1p", t))  # NaN for a negative sum, as SciPy
    out = _squeeze(ctx, out, x, axes, keepdims)
    if return_sign:
        return out, _squeeze(ctx, sign, x, axes, keepdims)
    return out


def _softmax_input(ctx, func: str, x, axis):
    ctx.whole_array(f"scipy.special.{func}")
    x = core.as_tracer(ctx, x)
    axes = _axes(func, axis, len(x.core_shape))
    return x, axes


def softmax(ctx, x, axis=None):
    """``scipy.special.softmax(x, axis)``: ``exp(x - m) / sum(exp(x - m))`` over ``axis``.

    ``m`` is the max over ``axis`` (no derivative, as ``stop_gradient`` in ``jax.nn.softmax``).
    ``axis=None`` (SciPy's default) normalises over every axis.

    Args:
      x: traced array (any core shape; a 0-d input gives 1.0), float64 or float32 kernels.
      axis: None, int or tuple of ints (constants).
    Returns:
      An array shaped like ``x`` summing to 1 over ``axis``.
    Raises:
      TypeError: a non-constant or non-integer ``axis``.
      numpy.exceptions.AxisError: an axis out of range.
    Reference: SciPy ``softmax`` (values), ``jax.nn.softmax`` (derivative); Blanchard, Higham &
    Higham 2021, sec. 3.
    """
    x, axes = _softmax_input(ctx, "softmax", x, axis)
    if not axes or any(x.core_shape[i] == 0 for i in axes):  # 0-d (exp(0)/exp(0)) or empty
        return ctx.apply("div", ctx.apply("exp", ctx.apply("sub", x, x)), 1.0)
    e = ctx.apply("exp", _shift(ctx, x, axes)[0])
    return ctx.apply("div", e, core.np_sum(ctx, e, axes, keepdims=True))


def log_softmax(ctx, x, axis=None):
    """``scipy.special.log_softmax(x, axis)``: ``(x - m) - log1p(T)``, ``T = sum(exp(x - m)) - 1``.

    As :func:`softmax`; ``T`` is summed as in :func:`logsumexp` (no cancellation), so the
    largest entry's value keeps its digits where SciPy's ``log(sum)`` rounds it to 0.

    Args, Returns, Raises: as :func:`softmax` (the result's exponential sums to 1 over ``axis``).
    Reference: SciPy ``log_softmax`` (values), ``jax.nn.log_softmax`` (derivative).
    """
    x, axes = _softmax_input(ctx, "log_softmax", x, axis)
    if not axes or any(x.core_shape[i] == 0 for i in axes):
        return ctx.apply("sub", x, x)
    d, _ = _shift(ctx, x, axes)
    return ctx.apply("sub", d, ctx.apply("log1p", _excess(ctx, d, axes, None)))


def polygamma(ctx, n, x):
    """``scipy.special.polygamma(n, x)``: the (n+1)-th derivative of log Gamma at ``x``.

    ``n`` is a constant non-negative integer (or a constant array of them, broadcast with
    ``x``); ``n = 0`` is ``digamma``.  Elementwise in ``x``; its derivative is
    ``polygamma(n + 1, x)`` (DLMF 5.15.1).

    Raises:
      TypeError: ``n`` is traced (there is no derivative in the order).
      ValueError: ``n`` is negative or not an integer (SciPy returns NaN there).
    """
    if isinstance(n, Tracer):
        raise TypeError(format_error(
            "scipy.special.polygamma(n, x) with a traced order n", "the order is an integer: "
            "polygamma has no derivative in n", "pass n as a constant int (e.g. polygamma(2, x))", user_location(3)))
    order = np.asarray(n)
    if order.dtype.kind not in "biuf" or not np.all(np.isfinite(order)) or np.any(order != np.round(order)) \
            or np.any(order < 0):
        raise ValueError(format_error(
            f"scipy.special.polygamma(n, x) needs a non-negative integer order n; got {n!r:.60}",
            "polygamma(n, x) is the (n+1)-th derivative of log Gamma; SciPy returns NaN for other n",
            "pass n = 0, 1, 2, ...", user_location(3)))
    if order.ndim == 0:
        return _polygamma(ctx, int(order), x)
    # an array of orders: one call per order, selected by constant masks (a traced op never
    # gets an array of orders, which the stabiliser would sample as if it were a real variable)
    out = None
    for k in np.unique(order):
        value = _polygamma(ctx, int(k), x)
        out = value if out is None else ctx.apply("where", order == k, value, out)
    shape = np.broadcast_shapes(order.shape, core.as_tracer(ctx, x).core_shape)
    return out if out.core_shape == shape else ctx.apply("broadcast_to", out, params=(shape,))


def _polygamma(ctx, n: int, x):
    return ctx.apply("digamma", x) if n == 0 else ctx.apply("polygamma", float(n), x)


def multigammaln(ctx, a, d):
    """``scipy.special.multigammaln(a, d)``: log of the multivariate gamma function of dimension d,
    ``d (d - 1)/4 log(pi) + sum(gammaln(a - j/2), j < d)`` (the Wishart and matrix-t
    normalisers).  Elementwise in ``a``; its derivative is ``sum(digamma(a - j/2))``.

    SciPy raises ValueError where ``a <= (d - 1)/2``; a traced ``a`` has no value to check, so
    there, as in ``jax.scipy.special.multigammaln``, the sum is returned (of ``log|Gamma|``).

    Raises:
      TypeError: ``d`` is traced (the dimension is an integer).
      ValueError: ``d`` is not a positive integer (SciPy's check).
    Reference: Muirhead (1982), Aspects of Multivariate Statistical Theory, Theorem 2.1.12.
    """
    if isinstance(d, Tracer):
        raise TypeError(format_error(
            "scipy.special.multigammaln(a, d) with a traced dimension d", "the dimension is an integer: "
            "multigammaln has no derivative in d", "pass d as a constant int (e.g. multigammaln(a, 3))",
            user_location(3)))
    dim = np.asarray(d)[()]
    if not np.isscalar(dim) or isinstance(dim, (bool, np.bool_)) or not np.isfinite(dim) or dim != np.floor(dim) \
            or dim < 1:
        raise ValueError(format_error(
            f"scipy.special.multigammaln(a, d) needs a positive integer dimension d; got {d!r:.60}",
            "SciPy raises ValueError for it too", "pass d = 1, 2, 3, ...", user_location(3)))
    dim = int(dim)
    total = None
    for j in range(dim):
        term = ctx.apply("gammaln", core.as_tracer(ctx, a) if j == 0 else ctx.apply("sub", a, 0.5 * j))
        total = term if total is None else ctx.apply("add", total, term)
    return ctx.apply("add", total, dim * (dim - 1) * 0.25 * float(np.log(np.pi)))


# scipy.special name -> builder; symgrad.trace.library_calls intercepts these functions
FUNCTIONS = {"logsumexp": logsumexp, "softmax": softmax, "log_softmax": log_softmax, "polygamma": polygamma,
             "multigammaln": multigammaln}
