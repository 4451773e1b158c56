"""NumPy's array methods on traced values (``x.max()``, ``x.var(ddof=1)``, ``x.cumsum()`` ...).

Each method calls the numpy function of the same name, so its rule lives in one place
(:mod:`symgrad.trace.numpy_api` and the tables it includes).  The reductions and scans
(``x.sum(axis, dtype, out, keepdims, initial, where)`` ...) take exactly that function's
arguments after the array, as ndarray's methods do; any other argument raises
:class:`ArgumentError` naming ``ndarray.<method>``.  An ``ndarray`` attribute
with no traced meaning raises :class:`UnsupportedOperationError` naming it, never a bare
``AttributeError``.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..errors import ArgumentError, TraceError, UnsupportedOperationError, format_error, user_location

__all__ = ["ArrayMethods"]


class ArrayMethods:
    """Mixin for :class:`symgrad.trace.tracer.Tracer`; needs ``self.ctx`` and ``self.id``."""

    __slots__ = ()

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

    @property
    def real(self):
        """The value itself: symgrad's values are real."""
        return self

    @property
    def imag(self):
        """Zeros of the value's shape: symgrad's values are real."""
        return np.imag(self)

    def conj(self):
        """The value itself: symgrad's values are real."""
        return self

    conjugate = conj

    def all(self, *args, **kwargs):
        """ndarray.all(axis, out, keepdims, *, where) of a constant mask (NumPy's arguments and errors)."""
        return self._constant_mask("all")(*args, **kwargs)

    def any(self, *args, **kwargs):
        """ndarray.any(axis, out, keepdims, *, where) of a constant mask (NumPy's arguments and errors)."""
        return self._constant_mask("any")(*args, **kwargs)

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


def _forwarding_method(name: str):
    """``x.<name>(...)`` as ``np.<name>(x, ...)``, its arguments checked against NumPy's signature."""
    func = getattr(np, name)
    params = list(inspect.signature(func).parameters.values())[1:]  # after the array
    signature = inspect.Signature(params)

    def method(self, *args, **kwargs):
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ArgumentError(format_error(
                f"ndarray.{name}() cannot take these arguments: {exc}", f"a traced array's .{name}() takes "
                f"the arguments of np.{name} after the array: {signature}", f"call it as NumPy's ndarray.{name} "
                "is called", user_location(2))) from None
        return func(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"ndarray.{name}{signature}: np.{name}(x, ...) with the same arguments."
    return method


# ndarray's reductions and scans: the same arguments as the numpy functions, in the same order.
for _name in ("sum", "mean", "max", "min", "ptp", "var", "std", "prod", "cumsum", "cumprod", "argmax", "argmin"):
    setattr(ArrayMethods, _name, _forwarding_method(_name))
del _name
