"""np.cov, np.corrcoef and the NaN-ignoring nanmax/nanmin/nanvar/nanstd/nanprod while tracing.

``cov`` is NumPy's two-pass formula, ``(X - mean) @ (X - mean).T * (1 / (N - ddof))``; ``corrcoef``
divides it by the outer product of its diagonal's square roots and clips to [-1, 1], as NumPy.  The
NaN reductions replace NaN by the operation's identity (-inf, +inf, 1) or leave it out through a
``where=`` mask (``nanvar``), then reduce with the builders of :mod:`.numpy_reductions`; the
derivative at a NaN entry is 0 and an all-NaN slice of ``nanmax``/``nanmin`` is NaN, as in NumPy
and JAX (``jnp.nanmax``).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import format_error, user_location
from . import numpy_core as core
from .numpy_core import axes_of
from .numpy_reductions import _NO_VALUE, _count, _mask, _not_nan, check_dtype, np_max, np_min, prod, reject_given, var
from .tracer import Tracer


def _rows(ctx, name: str, value, rowvar: bool, transpose_when) -> Tracer:
    """NumPy's ``array(value, ndmin=2)``, transposed when not ``rowvar`` and ``transpose_when(x)``."""
    x = core.as_tracer(ctx, value)
    if x.ndim > 2:
        raise ValueError(f"{name} has more than 2 dimensions")
    x2 = core.reshape(ctx, x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x
    return core.transpose(ctx, x2) if not rowvar and transpose_when(x, x2) else x2


def cov(ctx, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """np.cov: rows are variables (``rowvar=True``) or columns are; ``y`` adds variables.  For X of
    shape (k, N): ``C = (X - mean(X, 1)) @ (X - mean(X, 1)).T * (1 / (N - ddof))`` with ddof 1, or 0
    for ``bias=True``; ``ddof=`` overrides both.  N - ddof <= 0 gives inf/NaN and a RuntimeWarning,
    as NumPy.

    Shapes: (k, k), squeezed (one variable: a scalar).  Raises UnsupportedOperationError for
    ``fweights=``/``aweights=`` and a dtype other than float64; ValueError for a non-integer ddof or
    more than two dimensions.  Reference: NumPy's ``cov`` docs."""
    reject_given("cov", fweights=fweights, aweights=aweights)
    check_dtype("cov", dtype)
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    X = _rows(ctx, "m", m, rowvar, lambda x, x2: x.ndim != 1)
    if X.shape[0] == 0:
        return core.as_tracer(ctx, np.zeros((0, 0)))
    if y is not None:
        Y = _rows(ctx, "y", y, rowvar, lambda x, x2: x2.shape[0] != 1)
        if Y.shape[1] != X.shape[1]:
            raise ValueError(format_error(
                f"numpy.cov: m has {X.shape[1]} observations and y has {Y.shape[1]}", "y's variables are "
                "joined to m's, so both need the same number of observations", "pass arrays of matching "
                "lengths (and the same rowvar layout)", user_location(3)))
        X = core.concatenate(ctx, [X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = X.shape[1] - int(ddof)
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
        fact = 0.0
    Xc = ctx.apply("sub", X, core.mean(ctx, X, 1, keepdims=True))
    with np.errstate(divide="ignore"):
        scale = float(np.true_divide(1, fact))
    c = ctx.apply("mul", Xc @ core.transpose(ctx, Xc), scale)
    return core.reshape(ctx, c, ()) if c.shape == (1, 1) else c


def corrcoef(ctx, x, y=None, rowvar=True, *, dtype=None):
    """np.corrcoef: ``R = C / sqrt(diag(C))[:, None] / sqrt(diag(C))[None, :]`` clipped to [-1, 1],
    with C = :func:`cov` (one variable: ``C / C``, 1 or NaN).  Shapes and errors as :func:`cov`."""
    c = cov(ctx, x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return ctx.apply("div", c, c)
    k = c.shape[0]
    d = core.stack(ctx, [c[i, i] for i in range(k)]) if k else c
    sd = ctx.apply("sqrt", d)
    r = ctx.apply("div", ctx.apply("div", c, core.reshape(ctx, sd, (k, 1))), core.reshape(ctx, sd, (1, k)))
    return ctx.apply("minimum", ctx.apply("maximum", r, -1.0), 1.0)


def _nan_extreme(name: str, fill: float, reduce):
    def build(ctx, a, axis=None, out=None, keepdims=_NO_VALUE, initial=_NO_VALUE, where=_NO_VALUE):
        reject_given(name, out=out)
        x = core.as_tracer(ctx, a)
        ok = _not_nan(ctx, x)
        res = reduce(ctx, ctx.apply("where", ok, x, fill), axis, None, keepdims, initial, where)
        if initial is not _NO_VALUE:  # NumPy's fmax.reduce: an all-NaN slice gives the initial value
            return res
        keep = False if keepdims is _NO_VALUE else bool(keepdims)
        kept = _count(ctx, x, ok, axes_of(axis, x.ndim), keep)
        return ctx.apply("where", ctx.apply("eq", kept, 0.0), np.nan, res)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"np.{name}: np.{name[3:]} of ``where(isnan(a), {fill}, a)``, NaN where a slice is all NaN "
                     "(NumPy warns there; with ``initial=`` NumPy gives the initial value, and so does this).  "
                     "The derivative at a NaN entry is 0; ties share it equally (JAX's rule).  Shapes, "
                     f"keywords and errors as np.{name[3:]} (UnsupportedOperationError for out=).")
    return build


nanmax = _nan_extreme("nanmax", -np.inf, np_max)
nanmin = _nan_extreme("nanmin", np.inf, np_min)


def nanprod(ctx, a, axis=None, dtype=None, out=None, keepdims=_NO_VALUE, initial=_NO_VALUE, where=_NO_VALUE):
    """np.nanprod: np.prod of ``where(isnan(a), 1, a)`` (keywords and errors as np.prod); the
    derivative at a NaN entry is 0."""
    reject_given("nanprod", out=out)
    x = core.as_tracer(ctx, a)
    return prod(ctx, ctx.apply("where", _not_nan(ctx, x), x, 1.0), axis, dtype, None,
                False if keepdims is _NO_VALUE else keepdims, initial, where)


def nanvar(ctx, a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO_VALUE, *, where=_NO_VALUE,
           mean=_NO_VALUE, correction=_NO_VALUE):
    """np.nanvar: np.var over the entries that are not NaN (and that ``where=`` keeps):
    ``sum(|x - m|^2) / (count - ddof)`` with m the mean of those entries, NaN where count - ddof <= 0
    (NumPy's RuntimeWarning case).  The derivative at a NaN entry is 0.

    Shapes as np.var.  Raises UnsupportedOperationError for ``out=``, ``mean=`` or a dtype other than
    float64; ValueError for both ddof and correction; what np.var raises for a bad ``where=``."""
    reject_given("nanvar", out=out, mean=mean)
    if correction is not _NO_VALUE and ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    x = core.as_tracer(ctx, a)
    ok = _not_nan(ctx, x)
    user = _mask(ctx, "nanvar", x, where)
    keep = ok if user is None else ctx.apply("logical_and", ok, core.as_tracer(ctx, user))
    return var(ctx, x, axis, dtype, None, ddof, keepdims, where=keep, correction=correction)


def nanstd(ctx, a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO_VALUE, *, where=_NO_VALUE,
           mean=_NO_VALUE, correction=_NO_VALUE):
    """np.nanstd = sqrt(:func:`nanvar`) (keywords and errors as nanvar); its derivative is infinite
    where the variance is 0, as in JAX."""
    return ctx.apply("sqrt", nanvar(ctx, a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                                    correction=correction))


FUNCTIONS = {np.cov: cov, np.corrcoef: corrcoef, np.nanmax: nanmax, np.nanmin: nanmin, np.nanprod: nanprod,
             np.nanvar: nanvar, np.nanstd: nanstd}
