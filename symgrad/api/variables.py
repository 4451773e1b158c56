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
    """

    __symgrad_variable__ = True  # recognised by the tracer

    def __init__(self, value, name: str | None = None):
        arr = np.asarray(value)
        self.value = arr.astype(np.float64) if arr.dtype != np.float32 else arr
        self.name = name or f"variable{next(_COUNTER)}"

    @property
    def shape(self):
        return self.value.shape

    def assign(self, value):
        self.value = np.asarray(value, dtype=self.value.dtype).reshape(self.value.shape)

    def numpy(self):
        return self.value

    def __array__(self, dtype=None, copy=None):
        return self.value if dtype is None else self.value.astype(dtype)

    def __repr__(self):
        return f"symgrad.Variable(name={self.name!r}, value={self.value!r})"


def _delegate(name):
    def method(self, *args):
        from .eager import convert_to_tensor

        return getattr(convert_to_tensor(self), name)(*args)
    method.__name__ = name
    return method


# Variables behave like eager tensors in arithmetic and indexing (as tf.Variable does).
for _name in ("__getitem__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__neg__", "__matmul__", "__rmatmul__"):
    setattr(Variable, _name, _delegate(_name))
