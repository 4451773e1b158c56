"""NumPy's array methods on traced values (``x.max()``, ``x.var(ddof=1)``, ``x.cumsum()`` ...).

Each method calls the numpy function of the same name, so its rule lives in one place
(:mod:`symgrad.trace.numpy_api` and the tables it includes).  An ``ndarray`` attribute
with no traced meaning raises :class:`UnsupportedOperationError` naming it, never a bare
``AttributeError``.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError, UnsupportedOperationError, format_error, user_location

__all__ = ["ArrayMethods"]


class ArrayMethods:
    """Mixin for :class:`symgrad.trace.tracer.Tracer`; needs ``self.ctx`` and ``self.id``."""

    __slots__ = ()

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return np.sum(self, axis=axis, out=out, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return np.mean(self, axis=axis, out=out, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return np.max(self, axis=axis, out=out, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return np.min(self, axis=axis, out=out, keepdims=keepdims)

    def ptp(self, axis=None, out=None, keepdims=False):
        return np.ptp(self, axis=axis, out=out, keepdims=keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.var(self, axis=axis, out=out, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.std(self, axis=axis, out=out, ddof=ddof, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return np.prod(self, axis=axis, out=out, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None, out=None):
        return np.cumsum(self, axis=axis, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return np.cumprod(self, axis=axis, out=out)

    def argmax(self, axis=None, out=None):
        return np.argmax(self, axis=axis, out=out)

    def argmin(self, axis=None, out=None):
        return np.argmin(self, axis=axis, out=out)

    def reshape(self, *shape, order="C"):
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def transpose(self, *axes):
        return np.transpose(self, (axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes) or None)

    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        return np.squeeze(self, axis=axis)

    def ravel(self, order="C"):
        return np.ravel(self, order=order)

    def flatten(self, order="C"):
        return np.ravel(self, order=order)

    def copy(self, order="C"):
        return self

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(self, offset, axis1, axis2, out=out)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return np.take(self, indices, axis=axis, out=out, mode=mode)

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis=axis)

    def all(self, axis=None, keepdims=False):
        return self._constant_mask("all")(axis=axis, keepdims=keepdims)

    def any(self, axis=None, keepdims=False):
        return self._constant_mask("any")(axis=axis, keepdims=keepdims)

    def _constant_mask(self, name):
        """``.all()``/``.any()`` of a mask that folded to a constant: NumPy's own answer."""
        g = self.ctx.graph
        if g[self.id].op in ("bconst", "const"):
            return getattr(g.consts[self.id], name)
        raise TraceError(format_error(
            f".{name}() of a traced value", "its truth would depend on the input, and symgrad derives one "
            "formula for all inputs", "np.where(condition, a, b) to select elementwise, or np.max/np.min of a "
            "float expression", user_location(3)))

    def __getattr__(self, name):
        """ndarray attributes symgrad does not trace raise UnsupportedOperationError, not AttributeError."""
        if name.startswith("_") or not hasattr(np.ndarray, name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise UnsupportedOperationError(format_error(
            f"ndarray.{name} is not supported on a traced array", "symgrad traces the array methods that have "
            "derivative rules (README.md, 'Traceable code')", "use the numpy functions listed there, or "
            "symgrad.custom_gradient for your own rule", user_location(2)))
