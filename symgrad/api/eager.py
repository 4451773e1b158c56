"""Eager values for the TensorFlow-style front ends (``GradientTape``, ``ForwardAccumulator``).

An :class:`EagerTensor` is a :class:`~symgrad.trace.tracer.Tracer` that also has
a concrete value.  Every operation on eager values adds a node to one shared
graph (so tapes and accumulators can differentiate anything computed so far,
including gradients they produced themselves), and the value of a node is
computed from its arguments' values with the op's NumPy reference
implementation (:mod:`symgrad.ir.ops`), the same semantics as
:func:`symgrad.ir.interpret.evaluate`.  Values are computed on first use and
kept, so printing, ``float(x)`` and Python control flow on eager values work,
as in TensorFlow's eager mode.

Dtypes follow TensorFlow's weak typing: Python numbers and other constants
adopt the dtype of the arrays they meet, so ``constant(1.1, np.float32) ** 3.5``
is computed in float32 (and overflows where float32 overflows).

One context is shared by all live eager values; it is dropped when the last
value, tape and accumulator referring to it is garbage collected, so loops
that create fresh values do not grow one graph forever.
"""
from __future__ import annotations

import itertools
import numbers
import weakref

import numpy as np

from ..errors import TraceError, format_error, user_location
from ..ir.ops import REGISTRY
from ..trace.library_calls import intercept_scipy
from ..trace.tracer import TraceContext, Tracer, to_node

__all__ = ["EagerTensor", "EagerContext", "constant", "convert_to_tensor", "current_context"]

_NAMES = itertools.count()
_CURRENT: "weakref.ref[EagerContext] | None" = None


class _VarRead:
    """One read of a :class:`symgrad.Variable`: the graph input holding its value at read time.

    Has the ``var``/``node``/``name`` attributes :mod:`symgrad.api.custom` expects.
    """

    __slots__ = ("var", "node", "name", "source", "snapshot")

    def __init__(self, var, node: int):
        self.var, self.node, self.name = var, node, var.name
        self.source = var.value
        self.snapshot = np.array(var.value, copy=True)

    def is_current(self) -> bool:
        v = self.var.value
        return v is self.source and v.shape == self.snapshot.shape and np.array_equal(v, self.snapshot)


class EagerContext(TraceContext):
    """A trace whose nodes also have concrete values (see the module docstring).

    Attributes:
      graph: the shared :class:`~symgrad.ir.graph.Graph`.
      values: node id -> NumPy value, filled on demand.
      variables: Variable reads since the innermost tape/accumulator was entered
        (what ``custom_gradient`` hands to a ``grad_fn`` with a ``variables`` keyword).
    """

    def __init__(self):
        super().__init__(allow_variables=True)
        self.values: dict[int, np.ndarray] = {}
        self.weak: set[int] = set()          # nodes whose dtype adapts (constants and their results)
        self.recorders: list = []           # active tapes/accumulators, outermost first
        self._reads: dict[int, _VarRead] = {}

    # -- leaves ------------------------------------------------------------------
    def leaf(self, value, name: str = "eager") -> "EagerTensor":
        """A new graph input holding ``value`` (float32 kept, everything else float64)."""
        arr = np.asarray(value)
        if arr.dtype == object:
            raise TypeError("symgrad.constant: expected numbers or a numeric array; got an object array")
        if arr.dtype != np.float32:
            if np.issubdtype(arr.dtype, np.complexfloating):
                raise TypeError("symgrad.constant: complex values are not supported (real-valued functions only)")
            arr = arr.astype(np.float64)
        nid = self.graph.input(f"{name}{next(_NAMES)}", arr.shape)
        self.values[nid] = arr
        return self.wrap(nid)

    def read_variable(self, var) -> int:
        """Node of ``var``'s current value; a new node after ``var.assign`` so old reads keep their value."""
        rec = self._reads.get(id(var))
        if rec is None or rec.var is not var or not rec.is_current():
            rec = _VarRead(var, self.graph.input(f"{var.name}_read{next(_NAMES)}", var.value.shape))
            self.values[rec.node] = rec.snapshot
            self._reads[id(var)] = rec
        self.variables[id(var)] = rec
        self.read_log.append(rec)
        for r in self.recorders:
            r._on_variable_read(var, rec.node)
        return rec.node

    # -- building ------------------------------------------------------------------
    def wrap(self, nid: int) -> "EagerTensor":
        return EagerTensor(self, nid)

    def derivative(self, nid: int | None, shape: tuple, dtype, unconnected: str) -> "EagerTensor | None":
        """The tensor of derivative node ``nid``.  Where the derivative is the symbolic zero
        (``nid`` None: the target does not depend on the source), TensorFlow's
        ``unconnected_gradients`` decides: ``"none"`` gives None, ``"zero"`` a zeros tensor of
        ``shape`` and ``dtype``."""
        if nid is not None:
            return self.wrap(nid)
        return None if unconnected == "none" else self.leaf(np.zeros(shape, dtype=dtype), "zeros")

    def apply(self, op: str, *args, params: tuple = ()) -> "EagerTensor":
        ids = self.float_operands(op, [to_node(self, a) for a in args])
        try:
            return EagerTensor(self, self.graph.apply(op, *ids, params=params))
        except (TypeError, ValueError) as exc:
            shapes = ", ".join(str(self.graph.shape(i)) for i in ids)
            raise type(exc)(format_error(
                f"{op}: cannot apply to arguments of shapes ({shapes})",
                str(exc), "check the shapes of the arrays at this line", user_location(2))) from None

    # -- values --------------------------------------------------------------------
    def value(self, nid: int) -> np.ndarray:
        """The concrete value of node ``nid`` (computed now if needed)."""
        v = self.values.get(nid)
        if v is not None:
            return v
        g = self.graph
        todo, stack, seen = [], [nid], set()
        while stack:
            n = stack.pop()
            if n in seen or n in self.values:
                continue
            seen.add(n)
            todo.append(n)
            stack.extend(g[n].args)
        for n in sorted(todo):  # ids are a topological order
            self.values[n] = self._compute(n)
        return self.values[nid]

    def _compute(self, nid: int) -> np.ndarray:
        g = self.graph
        node = g[nid]
        if node.op in ("const", "bconst"):
            self.weak.add(nid)
            return g.consts[nid]
        if node.op == "input":
            raise TraceError(format_error(
                f"the symbolic input {node.params[0]!r} has no concrete value",
                "inside a custom_gradient grad_fn the upstream gradient is symbolic: symgrad traces the rule "
                "once and reuses it in every mode", "keep grad_fn free of Python control flow and float() on "
                "upstream values", user_location(3)))
        args = [self.values[a] for a in node.args]
        strong = [v.dtype for a, v in zip(node.args, args) if a not in self.weak and v.dtype.kind == "f"]
        dtype = np.result_type(*strong) if strong else np.dtype(np.float64)
        if not strong:
            self.weak.add(nid)
        args = [v.astype(dtype) if v.dtype.kind == "f" and v.dtype != dtype else v for v in args]
        with np.errstate(all="ignore"):
            out = np.asarray(REGISTRY[node.op].numpy(*args, *node.params))
        if out.shape != node.shape:
            out = np.broadcast_to(out, node.shape)
        if node.kind == "b":
            return out.astype(bool, copy=False)
        return out.astype(dtype, copy=False)


def current_context() -> EagerContext:
    """The eager context shared by all live eager values (a new one if none is alive)."""
    global _CURRENT
    ctx = _CURRENT() if _CURRENT is not None else None
    if ctx is None:
        ctx = EagerContext()
        _CURRENT = weakref.ref(ctx)
    return ctx


def _concrete(name, fn):
    def method(self):
        return fn(self.value[()] if self.value.ndim == 0 else self.value)
    method.__name__ = name
    return method


def _as_index(v):
    if np.ndim(v) != 0 or not float(v).is_integer():
        raise TypeError("only integer scalar eager values can be used as an index")
    return int(v)


class EagerTensor(Tracer):
    """A symbolic array with a concrete value (TensorFlow's eager ``tf.Tensor``).

    Arithmetic, NumPy ufuncs and the NumPy functions symgrad traces return new
    ``EagerTensor`` s; ``numpy()``, ``np.asarray(t)``, ``float(t)`` and ``bool(t)``
    give the value.  Create one with :func:`symgrad.constant`.
    """

    __slots__ = ()

    @property
    def value(self) -> np.ndarray:
        """The value as a NumPy array (read-only view; do not mutate)."""
        return self.ctx.value(self.id)

    def numpy(self) -> np.ndarray:
        """A copy of the value as a NumPy array (TensorFlow's ``Tensor.numpy``)."""
        v = self.value
        return v.copy() if v.ndim else v[()]

    @property
    def dtype(self):
        if self.ctx.graph[self.id].kind == "b":
            return np.dtype(bool)
        try:
            return self.value.dtype
        except TraceError:
            return np.dtype(np.float64)

    def __array__(self, dtype=None, copy=None):
        v = self.value
        return np.array(v, dtype=dtype, copy=True) if (dtype is not None or copy) else v

    def __repr__(self) -> str:
        try:
            val = np.array2string(np.asarray(self.value), separator=", ")
        except TraceError:
            val = "<symbolic>"
        return f"<symgrad.EagerTensor: shape={self.shape}, dtype={self.dtype}, numpy={val}>"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        v = self.value
        return format(v[()] if v.ndim == 0 else v, spec) if spec else str(self)

    # TensorFlow allows Python control flow on eager values: use the concrete value.
    __bool__ = _concrete("__bool__", lambda v: bool(v))
    __float__ = _concrete("__float__", lambda v: float(v))
    __int__ = _concrete("__int__", lambda v: int(v))
    __index__ = _concrete("__index__", _as_index)
    __complex__ = _concrete("__complex__", lambda v: complex(v))
    __hash__ = Tracer.__hash__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc in _VALUE_UFUNCS and method == "__call__":
            return ufunc(*[_plain(i) for i in inputs], **kwargs)
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func in _VALUE_FUNCTIONS:
            return func(*[_plain(a) for a in args], **{k: _plain(v) for k, v in kwargs.items()})
        return super().__array_function__(func, types, args, kwargs)


def _plain(x):
    if isinstance(x, EagerTensor):
        return x.value
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


# NumPy calls with no derivative: answered from the values, returning plain NumPy results.
_VALUE_UFUNCS = {np.isnan, np.isinf, np.isfinite, np.signbit, np.floor, np.ceil, np.rint, np.trunc}
_VALUE_FUNCTIONS = {np.allclose, np.isclose, np.array_equal, np.array_equiv, np.argmax, np.argmin, np.argsort,
                    np.all, np.any, np.count_nonzero, np.nonzero, np.round, np.around, np.shape, np.ndim,
                    np.size, np.copy, np.array2string, np.array_repr, np.array_str}


def constant(value, dtype=None) -> EagerTensor:
    """An eager value (TensorFlow's ``tf.constant``) that tapes and accumulators can differentiate.

    Args:
      value: number, nested list or array (integers become float64; float32 stays float32).
      dtype: optional NumPy float dtype (``np.float32`` or ``np.float64``).
    Returns:
      An :class:`EagerTensor` of ``np.shape(value)``.
    Raises:
      TypeError: complex, object or non-float ``dtype`` values.

    >>> import numpy as np, symgrad as sg
    >>> sg.constant([1.0, 2.0]) * 3
    <symgrad.EagerTensor: shape=(2,), dtype=float64, numpy=[3., 6.]>
    """
    if isinstance(value, EagerTensor):
        return value if dtype is None or value.dtype == np.dtype(dtype) else value.ctx.leaf(value.value.astype(dtype))
    if type(value).__name__ == "Variable" and hasattr(value, "assign"):
        value = value.value
    if dtype is not None:
        if not np.issubdtype(np.dtype(dtype), np.floating) or np.dtype(dtype).itemsize not in (4, 8):
            raise TypeError(f"symgrad.constant: dtype must be float32 or float64; got {np.dtype(dtype)}")
        value = np.asarray(value, dtype=dtype)
    return current_context().leaf(value)


def convert_to_tensor(value) -> EagerTensor:
    """``value`` as an :class:`EagerTensor`; a :class:`symgrad.Variable` is *read* (watched by active tapes).

    Use it to compute with a Variable directly (``convert_to_tensor(v) ** 3``); arithmetic between an
    eager value and a Variable reads the Variable automatically.
    """
    if isinstance(value, EagerTensor):
        return value
    ctx = current_context()
    if type(value).__name__ == "Variable" and hasattr(value, "assign"):
        return ctx.wrap(ctx.read_variable(value))
    if isinstance(value, (numbers.Real, np.ndarray, list, tuple)):
        return constant(value)
    raise TypeError(f"cannot convert a value of type {type(value).__name__} to a symgrad eager tensor")


def eager_node(ctx: EagerContext, value) -> int:
    """Node of an eager value, Variable (a read) or constant in ``ctx``."""
    if isinstance(value, Tracer) and value.ctx is not ctx:
        raise TraceError(format_error(
            "an eager value from a different symgrad eager context was used here",
            "all eager values share one context while any of them is alive; this one outlived its context "
            "or comes from a compiled trace", "create values with symgrad.constant", user_location(3)))
    return to_node(ctx, value)


class Recorder:
    """Common part of :class:`GradientTape` and :class:`ForwardAccumulator`: a context manager
    that sees the :class:`symgrad.Variable` reads made while it is active."""

    def __init__(self):
        self._ctx = current_context()
        self._reads: dict[int, list[int]] = {}   # id(Variable) -> read nodes seen while active
        self._active = False

    def _on_variable_read(self, var, node: int) -> None:
        nodes = self._reads.setdefault(id(var), [])
        if node not in nodes:
            nodes.append(node)

    def __enter__(self):
        if self._active:
            raise RuntimeError(f"this {type(self).__name__} is already active; a context manager cannot be nested "
                               "inside itself")
        intercept_scipy()  # scipy.special.logsumexp & co. on watched values stay on the tape
        ctx = self._ctx = current_context()
        self._active = True
        ctx.recorders.append(self)
        # Variable reads visible to custom_gradient start afresh inside each recorder.
        self._saved_variables, ctx.variables = ctx.variables, {}
        return self

    def __exit__(self, *exc):
        ctx = self._ctx
        if self in ctx.recorders:
            ctx.recorders.remove(self)
        inner, ctx.variables = ctx.variables, self._saved_variables
        ctx.variables.update(inner)
        self._active = False
        return False


def is_variable(x) -> bool:
    return type(x).__name__ == "Variable" and hasattr(x, "assign")
