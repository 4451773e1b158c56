"""Run a user function on symbolic values and record the graph it builds.

A :class:`Tracer` stands for one array-valued node.  Python arithmetic on it
calls the dunder methods below; NumPy ufuncs and functions reach it through
``__array_ufunc__`` / ``__array_function__`` (the tables live in
:mod:`symgrad.trace.numpy_api`, which registers them in :data:`NUMPY_PROTOCOL` when
imported; ``symgrad/trace/__init__.py`` imports it, so this module never does).  Anything that would need a concrete value
(``if x > 0``, ``math.exp(x)``, ``float(x)``) raises :class:`TraceError`
naming the line in the user's code.
"""
from __future__ import annotations

import contextlib
import numbers
import os
import sys
import threading

import numpy as np

from ..errors import DTypeError, TraceError, _is_internal, format_error, user_location
from ..ir.graph import Graph
from .array_methods import ArrayMethods

__all__ = ["Tracer", "TraceContext", "to_node"]


# How a Tracer meets NumPy: name -> handler, filled by symgrad.trace.numpy_api when it is imported
# (symgrad/trace/__init__.py imports it, so it is filled before any Tracer exists).  A registry rather
# than an import keeps the dependency one way: the NumPy tables import this module, never the reverse.
NUMPY_PROTOCOL: dict = {}
_PROTOCOL_NAMES = ("apply_ufunc", "apply_function", "getitem", "matmul", "untraceable_library_call")


def register_numpy_protocol(**handlers) -> None:
    """Install the NumPy protocol handlers (called once, by :mod:`symgrad.trace.numpy_api`).

    Keyword arguments, each a callable: ``apply_ufunc(ctx, ufunc, method, inputs, kwargs)``,
    ``apply_function(ctx, func, args, kwargs)``, ``getitem(ctx, x, key)``, ``matmul(ctx, a, b)``
    and ``untraceable_library_call()`` (an exception to raise, or None).  Raises TypeError for a
    missing or unknown name.
    """
    if set(handlers) != set(_PROTOCOL_NAMES):
        raise TypeError(f"register_numpy_protocol needs exactly {', '.join(_PROTOCOL_NAMES)}; "
                        f"got {', '.join(sorted(handlers))}")
    NUMPY_PROTOCOL.update(handlers)


def _protocol(name: str):
    handler = NUMPY_PROTOCOL.get(name)
    if handler is None:  # only if symgrad.trace was bypassed (the package imports numpy_api first)
        raise RuntimeError("symgrad.trace.numpy_api has not been imported, so traced values cannot meet numpy; "
                           "import symgrad (or symgrad.trace) before tracing")
    return handler


class NotElementwise(BaseException):
    """Raised while probing a function at scalar cores when it turns out not to be elementwise.

    With no signature, :func:`symgrad.trace.trace.trace_default` first traces a function with every
    argument a scalar core (NumPy's ufunc model).  The first operation that only makes sense on whole
    arrays (a reduction, indexing, ``len``, iteration, a matrix product, reading ``.shape``) raises
    this, and the function is traced again with each argument's whole shape as its core (JAX's
    semantics).  It derives from BaseException so that a user's ``except Exception`` cannot swallow it.
    """

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


class VariableRead:
    """A :class:`symgrad.Variable` read inside one trace, and its input node."""

    def __init__(self, var, node: int):
        self.var, self.node, self.name = var, node, var.name


DEFAULT_MAX_NODES = 1_000_000


def max_nodes() -> int:
    """The most graph nodes one trace may build: ``$SYMGRAD_MAX_NODES``, default 10^6.

    A Python loop on traced values is unrolled, one set of nodes per iteration.  Long
    straight-line code is compiled in parts of bounded size (:mod:`symgrad.emit.chunk`), so
    build time grows linearly, but a runaway loop (10^7 iterations) would still take hours:
    it stops here with a TraceError instead (after about 10 s of tracing at the default).
    """
    text = os.environ.get("SYMGRAD_MAX_NODES", "").strip()
    if not text:
        return DEFAULT_MAX_NODES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"SYMGRAD_MAX_NODES must be a positive integer; got {text!r}")
    return value


_ACTIVE = threading.local()  # the traces being recorded on this thread, innermost last


def active_trace() -> "TraceContext | None":
    """The innermost trace being recorded on this thread (by :func:`recording`), or None."""
    stack = getattr(_ACTIVE, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def recording(ctx: "TraceContext"):
    """Mark ``ctx`` as the trace being recorded while the user's function runs."""
    stack = getattr(_ACTIVE, "stack", None)
    if stack is None:
        stack = _ACTIVE.stack = []
    stack.append(ctx)
    try:
        yield ctx
    finally:
        stack.pop()


_BOOLEAN_OPERANDS = {"logical_and", "logical_or", "logical_not", "eq", "ne"}


_INTERNAL: dict[str, bool] = {}  # file name -> part of symgrad/numpy (see symgrad.errors.user_location)


def _user_line(frame) -> tuple[str, int] | None:
    """(file, line) of the innermost user frame from ``frame`` outwards; one dict lookup per frame."""
    while frame is not None:
        name = frame.f_code.co_filename
        internal = _INTERNAL.get(name)
        if internal is None:
            internal = _INTERNAL[name] = _is_internal(name)
        if not internal:
            return name, frame.f_lineno
        frame = frame.f_back
    return None


class TraceContext:
    """The graph being recorded, shared by every Tracer of one trace.

    ``max_nodes`` (None: no limit) bounds the nodes this trace may add to the graph.
    """

    def __init__(self, graph: Graph | None = None, allow_variables: bool = False, max_nodes: int | None = None,
                 probe: bool = False):
        self.graph = graph if graph is not None else Graph()
        self.probe = probe  # True: every argument is a scalar core until something shows otherwise
        self.allow_variables = allow_variables
        self.max_nodes = max_nodes
        self.node_limit = None if max_nodes is None else len(self.graph.nodes) + max_nodes
        self.variables: dict = {}  # id(Variable) -> read record (see symgrad.api.variables)
        self.read_log: list = []   # every Variable read in order (custom_gradient scopes by position)

    def read_variable(self, var) -> int:
        """Node of a :class:`symgrad.Variable` read in this trace (an input of its own)."""
        rec = self.variables.get(id(var))
        if rec is None:
            if not self.allow_variables:
                raise TraceError(format_error(
                    f"symgrad.Variable {var.name!r} was read inside a compiled transformation",
                    "a compiled function would freeze its current value", "pass the value as an argument, "
                    "or use symgrad.GradientTape / ForwardAccumulator, which watch variables", user_location(4)))
            rec = self.variables[id(var)] = VariableRead(var, self.graph.input(var.name, var.value.shape))
        self.read_log.append(rec)
        return rec.node

    def wrap(self, nid: int) -> "Tracer":
        return Tracer(self, nid)

    def float_operands(self, op: str, ids: list[int]) -> list[int]:
        """Booleans used as numbers become 0.0/1.0, as NumPy and JAX promote them (``preds * mask``).

        Logical ops and ``where``'s condition keep their booleans.
        """
        g = self.graph
        out = list(ids)
        for k, nid in enumerate(ids):
            if g[nid].kind != "b" or op in _BOOLEAN_OPERANDS or (op == "where" and k == 0):
                continue
            if g[nid].op == "bconst":
                out[k] = g.const(g.consts[nid].astype(np.float64))
            else:
                out[k] = g.apply("where", nid, g.const(1.0), g.const(0.0))
        return out

    def apply(self, op: str, *args, params: tuple = ()) -> "Tracer":
        nodes = self.graph.nodes
        ids, boolean = [], False
        for a in args:
            nid = a.id if type(a) is Tracer and a.ctx is self else to_node(self, a)
            boolean = boolean or nodes[nid].kind == "b"
            ids.append(nid)
        if boolean:
            ids = self.float_operands(op, ids)
        try:
            nid = self.graph.apply(op, *ids, params=params)
            if nid not in self.graph.lines:  # for "# line N: ..." comments in generated code
                where = _user_line(sys._getframe(1))
                if where is not None:  # (no user frame: every frame is symgrad's, NumPy's or frozen)
                    self.graph.lines[nid] = where
        except (TypeError, ValueError) as exc:
            shapes = ", ".join(str(self.graph.shape(i)) for i in ids)
            raise type(exc)(format_error(
                f"{op}: cannot apply to arguments of shapes ({shapes})",
                str(exc), "check the shapes of the arrays at this line", user_location(2))) from None
        if self.node_limit is not None and len(self.graph.nodes) > self.node_limit:
            self._too_large()
        if self.probe and self.graph.shape(nid) != ():
            raise NotElementwise(f"{op} gives an array")
        return Tracer(self, nid)

    def whole_array(self, what: str) -> None:
        """Note an operation that needs whole arrays (``np.sum``, ``x[0]``, ``len(x)``); see NotElementwise."""
        if self.probe:
            raise NotElementwise(what)

    def _too_large(self):
        self.node_limit = None  # raised once, even if the user's code catches it and goes on
        raise TraceError(format_error(
            f"the traced program grew past {self.max_nodes} graph nodes (the limit set by $SYMGRAD_MAX_NODES)",
            "a Python loop on traced values is unrolled into one set of operations per iteration; a program "
            "this large takes Numba minutes to compile", "vectorise the loop with array operations (slicing, "
            f"np.sum, @, np.where), or raise the limit: SYMGRAD_MAX_NODES={10 * self.max_nodes}", user_location(3)))


def to_node(ctx: TraceContext, value) -> int:
    """Node id for a Tracer, a Python/NumPy number or array, or an object array of Tracers."""
    if isinstance(value, Tracer):
        if value.ctx is not ctx:
            raise TraceError(format_error(
                "a traced value from a different trace was used here", "values leaked out of an "
                "earlier symgrad transformation (e.g. stored in a global)", "pass values as arguments",
                user_location(3)))
        return value.id
    if type(value) is float or type(value) is np.float64:  # the common constant: no ABC checks
        return ctx.graph.const(value)
    if isinstance(value, (bool, np.bool_)):
        return ctx.graph.bool_const(value)
    if getattr(type(value), "__symgrad_variable__", False):  # symgrad.Variable (defined in the API layer)
        return ctx.read_variable(value)
    if isinstance(value, numbers.Real):
        return ctx.graph.const(float(value))
    if isinstance(value, (list, tuple)):
        value = np.array(value, dtype=object)
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return _stack_objects(ctx, value)
        if value.dtype == bool:
            return ctx.graph.bool_const(value)
        if np.issubdtype(value.dtype, np.complexfloating):
            raise DTypeError(format_error("complex constants are not supported", "symgrad differentiates "
                                          "real-valued functions only", "split into real and imaginary parts",
                                          user_location(3)))
        return ctx.graph.const(value.astype(np.float64))
    if isinstance(value, numbers.Complex):
        raise DTypeError(format_error(f"complex value {value!r} is not supported", "symgrad differentiates "
                                      "real-valued functions only", "use real arithmetic", user_location(3)))
    raise TypeError(format_error(f"cannot use a value of type {type(value).__name__} in a traced function",
                                 "symgrad traces numbers, numpy arrays and symgrad values only",
                                 "convert it to a numpy array first", user_location(3)))


def _stack_objects(ctx: TraceContext, arr: np.ndarray) -> int:
    """An object array whose elements are Tracers or numbers (``np.array([x, y])``)."""
    g = ctx.graph
    ids = [to_node(ctx, v) for v in arr.reshape(-1)]
    shapes = {g.shape(i) for i in ids}
    if shapes != {()}:
        raise ValueError(format_error("cannot build an array from traced values of different shapes",
                                      f"element shapes {sorted(shapes)}", "use np.stack or np.concatenate",
                                      user_location(4)))
    if all(g[i].op == "const" for i in ids):
        return g.const(np.array([g.consts[i] for i in ids]).reshape(arr.shape))
    parts = [g.apply("reshape", i, params=((1,),)) for i in ids]
    flat = parts[0] if len(parts) == 1 else g.apply("concat", *parts, params=(0,))
    return g.apply("reshape", flat, params=(arr.shape,))


def _no_concrete(what: str, do_instead: str):
    def method(self, *args, **kwargs):
        err = _protocol("untraceable_library_call")()
        if err is not None:
            raise err
        raise TraceError(format_error(
            what, "symgrad derives one formula for all inputs, so a concrete "
            "number does not exist while tracing", do_instead, user_location(2)))
    return method


class Tracer(ArrayMethods):
    """A symbolic array: one node of the graph being traced."""

    __slots__ = ("ctx", "id")
    __array_priority__ = 1000

    def __init__(self, ctx: TraceContext, nid: int):
        self.ctx, self.id = ctx, nid

    # -- array attributes -------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        self.ctx.whole_array("reading .shape")
        return self.ctx.graph.shape(self.id)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def core_shape(self) -> tuple[int, ...]:
        """The node's shape, for symgrad's own use (reading it is not a whole-array operation)."""
        return self.ctx.graph.shape(self.id)

    @property
    def dtype(self):
        return np.dtype(bool) if self.ctx.graph[self.id].kind == "b" else np.dtype(np.float64)

    @property
    def T(self) -> "Tracer":
        return self.transpose()

    def __len__(self) -> int:
        self.ctx.whole_array("len() or iteration")
        if not self.shape:
            raise TraceError(format_error(
                "len() of (or a loop over) a traced scalar", "this argument has core shape () (the default: "
                "every argument is a scalar core)", 'give a gufunc signature, e.g. signature="(n)->()"',
                user_location(2)))
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Tracer(shape={self.core_shape}, node={self.id})"

    # -- arithmetic ------------------------------------------------------------------
    def _bin(self, op, other, reverse=False):
        return self.ctx.apply(op, other, self) if reverse else self.ctx.apply(op, self, other)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __pow__(self, o): return self._bin("pow", o)
    def __rpow__(self, o): return self._bin("pow", o, True)
    def __neg__(self): return self.ctx.apply("neg", self)
    def __pos__(self): return self
    def __abs__(self): return self.ctx.apply("abs", self)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __eq__(self, o): return self._bin("eq", o)
    def __ne__(self, o): return self._bin("ne", o)
    def __and__(self, o): return self._bin("logical_and", o)
    def __rand__(self, o): return self._bin("logical_and", o, True)
    def __or__(self, o): return self._bin("logical_or", o)
    def __ror__(self, o): return self._bin("logical_or", o, True)
    def __invert__(self): return self.ctx.apply("logical_not", self)
    __hash__ = object.__hash__

    def __matmul__(self, o):
        return _protocol("matmul")(self.ctx, self, o)

    def __rmatmul__(self, o):
        return _protocol("matmul")(self.ctx, o, self)

    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _no_concrete(
        "cannot use // or % on a traced value", "use np.floor(x / y) only on constants; these have no derivative")

    __bool__ = _no_concrete("cannot branch on a traced value (Python if/while/and/or, or the builtins "
                            "min/max/sorted, on it)", "np.where(condition, a, b), which symgrad emits as a branch "
                            "that evaluates and differentiates only the taken side; np.maximum/np.minimum "
                            "instead of max/min")
    __float__ = _no_concrete("cannot convert a traced value to a Python float (float(x), or a math.* function such as math.exp)",
                             "use the numpy function (np.exp instead of math.exp); a math function with no numpy "
                             "ufunc (math.gamma, math.lgamma) cannot be traced")
    item = tolist = _no_concrete("cannot read a traced value as a Python number (.item(), .tolist())",
                                 "keep it as an array; symgrad traces numpy operations on it")
    __int__ = __index__ = _no_concrete("cannot convert a traced value to a Python int", "keep sizes and indices constant")
    __complex__ = _no_concrete("cannot convert a traced value to complex", "symgrad traces real-valued functions only")

    # -- indexing ------------------------------------------------------------------------
    def __getitem__(self, key):
        return _protocol("getitem")(self.ctx, self, key)

    def __setitem__(self, key, value):
        raise TraceError(format_error(
            "cannot assign into a traced array (x[i] = ...)", "in-place mutation has no derivative rule",
            "build a new array: np.concatenate, np.stack, or np.where with a mask", user_location(2)))

    # -- numpy protocol -------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _protocol("apply_ufunc")(self.ctx, ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _protocol("apply_function")(self.ctx, func, args, kwargs)

    # -- ndarray-like methods (more in array_methods.ArrayMethods) -----------------------------
    def dot(self, other):
        return np.dot(self, other)

    def astype(self, dtype, copy=True):
        if not np.issubdtype(np.dtype(dtype), np.floating):
            raise DTypeError(format_error(f"cannot cast a traced value to {np.dtype(dtype)}",
                                          "symgrad traces floating-point values only",
                                          "keep values as floats", user_location(2)))
        return self

    def clip(self, a_min=None, a_max=None):
        return np.clip(self, a_min, a_max)


def _unary_method(name):
    def method(self):
        return self.ctx.apply(name, self)
    method.__name__ = name
    return method


# NumPy calls these methods when a ufunc meets an *object* array holding Tracers.
for _name in ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
              "sinh", "cosh", "tanh", "arcsinh", "sign"):
    setattr(Tracer, _name, _unary_method(_name))
