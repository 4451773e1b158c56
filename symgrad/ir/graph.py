"""The traced program: a DAG of array-valued nodes, hash-consed as it is built.

Every value is a node with a static shape (``()`` for scalars) and a kind
(``'f'`` float or ``'b'`` boolean).  Nodes are created in topological order, so
node ids are a valid evaluation order.  Building a node that already exists
(same op, arguments and parameters) returns the existing id: this is common
subexpression elimination by value numbering, and it keeps derivative graphs
small because shared subexpressions stay shared.

The op semantics (shape rules, derivatives, printing) live in the registry
(:mod:`symgrad.ir.ops`); this module only stores nodes and applies the local
algebraic simplifications every builder needs (x + 0, x * 1, pushing a
multiplication into a ``where`` with a zero branch, constant folding).
"""
from __future__ import annotations

import contextlib
import hashlib
import operator
import struct
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

__all__ = ["Node", "Graph", "simple_rational"]

_F64 = struct.Struct("=d")  # a float64's bytes in native order, as ndarray.tobytes() gives them
FOLD_MAX_SIZE = 256  # larger constant results stay as ops, so generated files stay small

# name -> OpDef.  The table is filled by symgrad.ir.ops.register (which re-exports it as REGISTRY); it
# lives here so that the graph, which looks ops up, does not import the module that defines them.
OPS: dict = {}


class Node:
    """One operation: ``op(*args; params)`` with a static ``shape`` and ``kind``.

    Immutable by convention (nodes are shared between graph copies; never assign to a field).
    A plain class with slots, not a frozen dataclass: tracing builds one per traced
    operation, and a frozen dataclass's ``__init__`` costs several times as much.
    """

    __slots__ = ("id", "op", "args", "params", "shape", "kind")

    def __init__(self, id: int, op: str, args: tuple[int, ...], params: tuple, shape: tuple[int, ...],
                 kind: str = "f"):
        self.id, self.op, self.args, self.params, self.shape, self.kind = id, op, args, params, shape, kind

    def _fields(self):
        return (self.id, self.op, self.args, self.params, self.shape, self.kind)

    def __eq__(self, other):
        return type(other) is Node and self._fields() == other._fields()

    def __hash__(self):
        return hash(self._fields())

    def __repr__(self):
        return (f"Node(id={self.id!r}, op={self.op!r}, args={self.args!r}, params={self.params!r}, "
                f"shape={self.shape!r}, kind={self.kind!r})")


def _all_constant(arg_nodes) -> bool:
    for n in arg_nodes:
        if n.op != "const" and n.op != "bconst":
            return False
    return True


_EXACT_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
               "neg": operator.neg}
SIMPLE_DENOMINATOR = 1000  # the rationals a float constant is read as (here and in interpret.sympy_number)


def simple_rational(v: float | None) -> Fraction | None:
    """``v`` as the rational p/q (q <= 1000) it is the correctly rounded value of, else None."""
    if v is None or not np.isfinite(v):
        return None
    frac = Fraction(v).limit_denominator(SIMPLE_DENOMINATOR)
    return frac if float(frac) == v else None


def _rational_fold(op: str, values: list) -> float | None:
    """``op`` of scalar constants that are simple rationals, in exact arithmetic rounded once, or None.

    Derivatives fold constants of the user's formula: the partial of ``x ** (1/3)`` is
    ``(1/3) * x ** (1/3 - 1)``, and ``0.3333333333333333 - 1.0`` in float arithmetic is
    -0.6666666666666667, one ulp from -2/3: its SymPy reading stays a Float and the power rules
    (the factored difference of powers) do not see the exponent -2/3.  Folded exactly, it is the
    float nearest -2/3, read back as -2/3.  Only in derivative mode: the user's own forward code
    keeps NumPy's float arithmetic.
    """
    fn = _EXACT_FOLD.get(op)
    if fn is None:
        return None
    fracs = [simple_rational(v) for v in values]
    if any(f is None for f in fracs) or (op == "div" and fracs[1] == 0):
        return None
    return float(fn(*fracs))


@dataclass
class Graph:
    """A growing DAG of :class:`Node` s with value numbering."""

    nodes: list[Node] = field(default_factory=list)
    consts: dict[int, np.ndarray] = field(default_factory=dict)
    notes: dict[int, str] = field(default_factory=dict)  # comments the printer puts above a node
    lines: dict[int, tuple[str, int]] = field(default_factory=dict)  # node -> user (file, line) that traced it
    custom_rules: list = field(default_factory=list)      # traced custom_gradient rules
    ad_mode: bool = False  # True while a transform builds derivative nodes (see ``derivative_mode``)
    _intern: dict = field(default_factory=dict)
    _fingerprints: dict = field(default_factory=dict)  # tuple(outputs) -> fingerprint (nodes never change)
    _ancestors: dict = field(default_factory=dict)     # tuple(outputs) -> sorted ancestor ids (the same)

    # -- leaves -------------------------------------------------------------
    def input(self, name: str, shape: tuple[int, ...]) -> int:
        """A program input called ``name`` with ``shape``; the same (name, shape) gives the same node.

        The shape is part of the key: functions traced into one graph (``symgrad compile``) may
        each have an argument ``x`` of a different core shape.
        """
        return self._add("input", (), (name, tuple(int(s) for s in shape)), tuple(shape), "f")

    def const(self, value) -> int:
        """A float constant (scalar or array), stored as float64."""
        if type(value) is float or type(value) is np.float64 or type(value) is int:  # the common case
            v = float(value)
            nid = self._add("const", (), ("c", (), _F64.pack(v)), (), "f")
            if nid not in self.consts:
                self.consts[nid] = np.array(v)
            return nid
        arr = np.asarray(value, dtype=np.float64)
        arr = arr.copy() if arr.ndim else arr.reshape(())
        key_params = ("c", arr.shape, arr.tobytes())
        nid = self._add("const", (), key_params, arr.shape, "f")
        self.consts.setdefault(nid, arr)
        return nid

    def zeros(self, shape: tuple[int, ...]) -> int:
        """The zero array of ``shape`` (a float constant node).

        The transforms pass a derivative that is identically zero as ``None`` (the symbolic
        zero of autograd's VJPs and JAX's ``ad.Zero``), so no node is built for it and sums
        skip it.  Where a node is needed after all (a kernel output, an operand of ``concat``,
        a Jacobian block), it becomes this constant, here and nowhere else
        (:meth:`instantiate_zeros`).
        """
        return self.const(np.zeros(shape))

    def instantiate_zeros(self, nid: int | None, shape: tuple[int, ...]) -> int:
        """``nid``, or :meth:`zeros` of ``shape`` if ``nid`` is the symbolic zero ``None``
        (JAX's ``ad.instantiate_zeros``)."""
        return self.zeros(shape) if nid is None else nid

    def eye(self, shape: tuple[int, ...]) -> int:
        """The identity seed ``np.eye(n).reshape(shape)`` with ``n = shape[0]``."""
        return self._add("eye", (), (tuple(shape),), tuple(shape), "f")

    def bool_const(self, value) -> int:
        arr = np.asarray(value, dtype=bool)
        nid = self._add("bconst", (), ("b", arr.shape, arr.tobytes()), arr.shape, "b")
        self.consts.setdefault(nid, arr)
        return nid

    # -- queries ------------------------------------------------------------
    def __getitem__(self, nid: int) -> Node:
        return self.nodes[nid]

    def shape(self, nid: int) -> tuple[int, ...]:
        return self.nodes[nid].shape

    def is_const(self, nid: int, value: float | None = None) -> bool:
        """True if ``nid`` is a constant (equal everywhere to ``value`` if given)."""
        if self.nodes[nid].op != "const":
            return False
        if value is None:
            return True
        arr = self.consts[nid]
        if arr.ndim == 0:  # the common case, without NumPy's reduction machinery
            return float(arr) == value
        return bool(arr.size) and bool(np.all(arr == value))

    def scalar_value(self, nid: int) -> float | None:
        """The value of a constant that is the same everywhere, else None."""
        if self.nodes[nid].op != "const":
            return None
        arr = self.consts[nid]
        if arr.ndim == 0:
            return float(arr)
        flat = arr.reshape(-1)
        if flat.size and np.all(flat == flat[0]):
            return float(flat[0])
        return None

    # -- building -----------------------------------------------------------
    def apply(self, op: str, *args: int, params: tuple = ()) -> int:
        """Add ``op(*args)`` after shape checking, simplification and folding."""
        opdef = OPS.get(op)
        if opdef is None:
            raise KeyError(f"symgrad internal error: no op {op!r} in the registry")
        nodes = self.nodes
        arg_nodes = [nodes[a] for a in args]
        shape, kind = opdef.infer(arg_nodes, params)
        if opdef.simplify is not None:
            simpler = opdef.simplify(self, args, params, shape)
            if simpler is not None:
                return simpler
        if (args and opdef.numpy is not None and _all_constant(arg_nodes)
                and (int(np.prod(shape)) <= FOLD_MAX_SIZE
                     or all(self.scalar_value(a) is not None for a in args if self.nodes[a].op == "const"))):
            exact = _rational_fold(op, [self.scalar_value(a) for a in args]) if self.ad_mode else None
            with np.errstate(all="ignore"):
                val = opdef.numpy(*[self.consts[a] for a in args], *params) if exact is None else exact
            val = np.broadcast_to(np.asarray(val), shape)
            return self.bool_const(val) if kind == "b" else self.const(val)
        if opdef.commutative and len(args) == 2:  # constants first, then by id (one canonical form)
            a, b = args
            if (nodes[a].op != "const", a) > (nodes[b].op != "const", b):
                args = (b, a)
        elif opdef.commutative:
            args = tuple(sorted(args, key=lambda a: (nodes[a].op != "const", a)))
        return self._add(op, tuple(args), params, shape, kind)

    def _add(self, op, args, params, shape, kind) -> int:
        key = (op, args, params)
        nid = self._intern.get(key)
        if nid is None:
            nid = len(self.nodes)
            self.nodes.append(Node(nid, op, args, params, tuple(map(int, shape)) if shape else (), kind))
            self._intern[key] = nid
        return nid

    @contextlib.contextmanager
    def derivative_mode(self):
        """Enable the simplifications that are only valid for derivative expressions.

        Pushing a multiplication into a ``where`` with a zero branch, ``x * 0 -> 0`` and
        ``y * (1/z) -> y / z`` change results when an untaken branch or a factor is inf/NaN,
        or change rounding; derivative code wants exactly that (an untaken branch contributes
        an exact zero), but the user's own forward code must keep NumPy's semantics.
        """
        saved, self.ad_mode = self.ad_mode, True
        try:
            yield self
        finally:
            self.ad_mode = saved

    def copy(self) -> "Graph":
        """An independent graph with the same nodes (nodes and constants are immutable: shared)."""
        return Graph(list(self.nodes), dict(self.consts), dict(self.notes), dict(self.lines),
                     list(self.custom_rules), self.ad_mode, dict(self._intern), dict(self._fingerprints),
                     dict(self._ancestors))

    # -- whole-graph utilities ------------------------------------------------
    def ancestors(self, outputs) -> list[int]:
        """Ids of every node the ``outputs`` depend on (themselves included), sorted.

        Remembered per ``outputs`` (a fresh list each call: callers may change it), as
        :meth:`fingerprint` is: the sub-DAG under given nodes never changes.
        """
        key = tuple(o for o in outputs if o is not None)
        known = self._ancestors.get(key)
        if known is None:
            known = self._ancestors[key] = self._ancestors_of(key)
        return list(known)

    def _ancestors_of(self, roots: tuple[int, ...]) -> tuple[int, ...]:
        if len(roots) == 1 and not self.nodes[roots[0]].args:
            return roots
        seen = set()
        stack = list(roots)
        nodes = self.nodes
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            stack.extend(nodes[n].args)
        return tuple(sorted(seen))

    def consumers(self) -> dict[int, list[int]]:
        """Map each node id to the ids of the nodes that use it."""
        users: dict[int, list[int]] = {}
        for node in self.nodes:
            for a in node.args:
                users.setdefault(a, []).append(node.id)
        return users

    def fingerprint(self, outputs) -> str:
        """sha256 over the sub-DAG reaching ``outputs``; stable across processes.

        Remembered per ``outputs``: nodes are immutable and ids never reused, so the sub-DAG
        under given outputs never changes as the graph grows.
        """
        key = tuple(outputs)
        known = self._fingerprints.get(key)
        if known is not None:
            return known
        order = self.ancestors(outputs)
        local = {nid: i for i, nid in enumerate(order)}
        nodes = self.nodes
        parts = []
        for nid in order:
            n = nodes[nid]
            parts.append(repr((n.op, [local[a] for a in n.args], n.params, n.shape, n.kind)))
        parts.append(repr([local.get(o) for o in outputs]))
        self._fingerprints[key] = digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
        return digest
