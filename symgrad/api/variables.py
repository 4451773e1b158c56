"""``symgrad.Variable``: a named, mutable array that traced functions may read.

Inside a trace a Variable is a graph input of its own (created on first read),
so ``custom_gradient`` rules can give gradients with respect to it and
:class:`symgrad.GradientTape` can watch it automatically, as TensorFlow does.
"""
from __future__ import annotations

import itertools

import numpy as np

_COUNTER = itertools.count()


class Variable:
    """A float array with a name, read by traced code like a constant-but-differentiable input.

    Args:
      value: initial value (converted to a float64 array unless float32).
      name: identifier used in generated code and formulas.
      trainable: as ``tf.Variable``: a GradientTape watches a trainable Variable when it is read while
        the tape records; one with ``trainable=False`` only through ``tape.watch``.
      dtype: convert ``value`` to this dtype first (float32 is kept, anything else becomes float64).
    """

    __symgrad_variable__ = True  # recognised by the tracer

    def __init__(self, value, name: str | None = None, trainable: bool = True, dtype=None):
        arr = np.asarray(value, dtype=dtype)
        self.value = arr.astype(np.float64) if arr.dtype != np.float32 else arr
        self.name = name or f"variable{next(_COUNTER)}"
        self.trainable = bool(trainable)

    __array_priority__ = 1000  # an ndarray on the left of an operator defers to us

    @property
    def shape(self):
        return self.value.shape

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def ndim(self):
        return self.value.ndim

    # numpy calls on a Variable (np.exp(w), np.sum(w), ndarray * w) read it like an operator does, so
    # a GradientTape keeps it on the tape (tf.Variable's contract) and a compiled trace raises its
    # clear "Variable read inside a compiled transformation" error instead of freezing the value
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*_read_all(inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_read_all(args), **{k: _read_all([v])[0] for k, v in kwargs.items()})

    def __getattr__(self, name):
        # array methods and attributes (w.sum(), w.T, w.reshape(...)) act on the value read now
        if name.startswith("_"):
            raise AttributeError(name)
        from .eager import convert_to_tensor

        return getattr(convert_to_tensor(self), name)

    def assign(self, value):
        self.value = np.asarray(value, dtype=self.value.dtype).reshape(self.value.shape)

    def numpy(self):
        return self.value

    def __array__(self, dtype=None, copy=None):
        return self.value if dtype is None else self.value.astype(dtype)

    def __repr__(self):
        return f"symgrad.Variable(name={self.name!r}, value={self.value!r})"


def _find_context(values):
    """The trace of the first traced value in ``values`` (nested lists/tuples), or None."""
    from ..trace.tracer import Tracer, active_trace

    for v in values:
        if isinstance(v, Tracer):
            return v.ctx
        if isinstance(v, (list, tuple)):
            ctx = _find_context(v)
            if ctx is not None:
                return ctx
    return active_trace()


def _read_all(values):
    """``values`` with every Variable replaced by its read in the current trace or eager context."""
    ctx = _find_context(values)

    def read(v):
        if isinstance(v, Variable):
            if ctx is None:
                from .eager import convert_to_tensor

                return convert_to_tensor(v)
            return ctx.wrap(ctx.read_variable(v))
        if isinstance(v, (list, tuple)):
            return type(v)(read(x) for x in v)
        return v
    return [read(v) for v in values]


def _delegate(name):
    def method(self, *args):
        from .eager import convert_to_tensor

        return getattr(convert_to_tensor(self), name)(*args)
    method.__name__ = name
    return method


# Variables behave like eager tensors in arithmetic and indexing (as tf.Variable does).
for _name in ("__getitem__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__matmul__",
              "__rmatmul__", "__lt__", "__le__", "__gt__", "__ge__", "__len__", "__iter__", "__float__"):
    setattr(Variable, _name, _delegate(_name))
