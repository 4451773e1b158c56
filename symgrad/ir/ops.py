"""The op registry: every primitive declares its semantics in one place.

An :class:`OpDef` gives the shape rule, a NumPy reference implementation (used
for constant folding and the reference interpreter), a SymPy form (for
display and stabilisation), its derivative, and how it prints as Numba code.

Elementwise ops give scalar ``partials`` once; :mod:`symgrad.transforms` derives
both the JVP (``sum_i partial_i * x_i_dot``) and the VJP (``out_bar * partial_i``,
reduced over broadcast axes) from them, so the two modes cannot drift (the
approach of JAX's ``defjvp`` and autograd's ``defvjp``).  Structural (linear)
ops give ``jvp`` and ``vjp`` rules that accept tangents/cotangents with ``nb``
extra leading batch axes, which is how Jacobians and Hessians are built
without unrolling one pass per basis vector.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..errors import SourceLoc, format_error
from .graph import OPS, Graph

__all__ = ["OpDef", "REGISTRY", "register", "install_printer", "E", "broadcast_shapes", "sympy_functions",
           "sympy_relations", "refuse_constant_args"]


@dataclass(frozen=True)
class OpDef:
    """Everything symgrad knows about one primitive.

    Attributes:
      name: NumPy-style name (``exp``, ``logaddexp``, ``contract``).
      infer: ``(arg_nodes, params) -> (shape, kind)``.
      numpy: reference implementation on ndarrays, ``numpy(*arrays, *params)``.
      sympy: for elementwise ops, the scalar SymPy function ``sympy(*args)``.
      partials: elementwise ops: ``partials(out, *args) -> tuple`` of :class:`E`
        (or None for a zero partial), built from the primal output ``out``.
      jvp / vjp: structural ops: ``jvp(g, node, tangents, nb)``,
        ``vjp(g, node, cotangent, nb)``; see :mod:`symgrad.ir.rules.structural`.
      emit: ``emit(ctx, node, arg_strs)``: a Numba expression (``str``), or for ``statement``
        ops a list of lines using ``{out}``.  Elementwise ops give it here; the structural,
        reduction, gather and linear-algebra ops are lowered to loops in
        :mod:`symgrad.emit.lowering`, which fills this slot when imported (:func:`install_printer`;
        ``ir`` cannot import ``emit``, the layer above it).
      mpmath: elementwise ops: ``mpmath(*mpf) -> mpf``, the value at the current mpmath
        precision (the stabiliser's reference evaluator; it may override a few for speed
        or loss tracking, keyed by op name, in :mod:`symgrad.stabilize.reference`).
      numeric: elementwise ops: ``numeric(*arrays) -> array`` computed in the arguments'
        dtype (float32 stays float32), the stabiliser's float evaluator.
      ufuncs: qualified names of the ufuncs that trace to this op (``"numpy.exp"``,
        ``"scipy.special.erf"``); the tracer's ufunc table is built from them.
      infix: ``(symbol, precedence)`` for ops printed as Python operators.
      statement: the op prints as statements (``emit`` returns lines using ``{out}``);
        its arguments must be names.
      helpers: names of the generated-module helper functions ``emit`` calls
        (see :mod:`symgrad.emit.prelude`).
      nondiff: the op has no derivative (comparisons); must be explicit.
      kink: the documented convention at non-differentiable points.
      domain: per-argument sampling domain used by the rule tests.
      ref: source of the derivative formula.
      constant_args: elementwise ops: positions of the arguments that have no derivative rule (the
        order v of ``jv``, the ``a`` of ``gammainc``).  Their partials are None, which would read as
        0; every transform that reads partials (jvp, vjp, the direct Jacobian entries, sparsity)
        calls :func:`refuse_constant_args` first, which raises a TypeError naming the function and
        the argument when one of them depends on what is differentiated.  A traced value there is
        fine otherwise (``jit``, or ``grad`` with respect to another argument).
      arg_names: the arguments' names as the function's documentation spells them (``("a", "x")``),
        for error messages; required with ``constant_args``.
    """

    name: str
    infer: Callable
    emit: Callable | None = None
    numpy: Callable | None = None
    sympy: Callable | None = None
    partials: Callable | None = None
    jvp: Callable | None = None
    vjp: Callable | None = None
    simplify: Callable | None = None
    elementwise: bool = False
    commutative: bool = False
    nondiff: bool = False
    kink: str = ""
    domain: tuple = ()
    ref: str = ""
    mpmath: Callable | None = None
    numeric: Callable | None = None
    ufuncs: tuple = ()
    infix: tuple | None = None
    statement: bool = False
    helpers: tuple = ()
    constant_args: tuple = ()
    arg_names: tuple = ()


REGISTRY: dict[str, OpDef] = OPS  # one table, stored beside the graph that looks ops up


def register(op: OpDef) -> OpDef:
    """Add ``op`` to the registry; rejects duplicates and silent missing derivatives."""
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is registered twice")
    if not op.nondiff and op.partials is None and op.vjp is None and op.name not in ("input", "const", "bconst"):
        raise ValueError(f"op {op.name!r} gives no derivative; pass nondiff=True if that is intended")
    if op.constant_args and (not op.elementwise or len(op.arg_names) != len(op.domain)
                             or not all(0 <= i < len(op.domain) for i in op.constant_args)):
        raise ValueError(f"op {op.name!r}: constant_args {op.constant_args} need an elementwise op with one "
                         f"arg_names entry per argument (got {op.arg_names})")
    REGISTRY[op.name] = op
    return op


def refuse_constant_args(g: Graph, nid: int, differentiated) -> None:
    """Raise TypeError if node ``nid``'s op has a constant argument (``OpDef.constant_args``) that is
    differentiated: ``differentiated[k]`` is true when argument ``k`` carries a tangent or is
    active for a cotangent.  Its partial is None (no rule), and 0 would be a silently wrong number.

    The message names the function as the user called it (the op's ufunc, e.g.
    ``scipy.special.gammainc(a, x)``), the argument and the user's line that traced the call.
    """
    op = REGISTRY[g[nid].op]
    for k in op.constant_args:
        if differentiated[k]:
            qualified = op.ufuncs[0] if op.ufuncs else op.name
            fn, arg = qualified.rsplit(".", 1)[-1], op.arg_names[k]
            where = g.lines.get(nid)
            loc = None
            if where is not None:
                loc = SourceLoc("traced code", where[0], where[1], linecache.getline(where[0], where[1]).strip())
            raise TypeError(format_error(
                f"{qualified}({', '.join(op.arg_names)}) differentiated with respect to its argument {arg}",
                f"symgrad has no derivative of {fn} in {arg} (taking it as 0 would be wrong)",
                f"pass {arg} as a constant (a Python float or NumPy array), e.g. with functools.partial, "
                f"or differentiate only with respect to arguments {arg} does not depend on", loc))


def install_printer(name: str, emit: Callable) -> None:
    """Fill the ``emit`` facet of the registered op ``name`` (the op's other facets stay as declared).

    Called once per op by the lowering modules of :mod:`symgrad.emit.lowering` when they are
    imported, the way ``jax.interpreters.mlir.register_lowering`` attaches a lowering to a
    primitive declared elsewhere.

    Raises:
      ValueError: no op ``name`` is registered, or it has a printer already (two lowerings of
        one op would depend on import order).
    """
    op = REGISTRY.get(name)
    if op is None:
        raise ValueError(f"install_printer: no op {name!r} is registered; register its OpDef in symgrad/ir/rules first")
    if op.emit is not None:
        raise ValueError(f"install_printer: op {name!r} has a printer already; give each op one lowering")
    REGISTRY[name] = replace(op, emit=emit)


def sympy_functions() -> dict:
    """``{SymPy function class: OpDef}`` for the elementwise ops whose ``sympy`` facet is a
    ``sympy.Function`` subclass (``sp.exp``, ``sympy_funcs.log1p``, ``sp.erf`` ...).

    The one inverse map: :mod:`symgrad.ir.from_sympy` and the stabiliser's float and mpmath
    evaluators are built from it.  Arithmetic, ``Max``/``Min``, relations and ``Piecewise``
    are SymPy's own expression forms and are handled structurally by those modules.
    """
    import sympy as sp

    return _sympy_classes(sp.Function)


def sympy_relations() -> dict:
    """``{SymPy relation class: OpDef}`` for the comparison ops (``sp.StrictGreaterThan`` -> gt)."""
    from sympy.core.relational import Relational

    return _sympy_classes(Relational)


def _sympy_classes(base) -> dict:
    # Every op is registered already: importing this module runs symgrad/ir/__init__.py, which
    # imports symgrad.ir.rules (so this module does not import the rules, which import it).
    return {op.sympy: op for op in REGISTRY.values()
            if op.elementwise and isinstance(op.sympy, type) and issubclass(op.sympy, base)}


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes`` (raises ValueError if they do not broadcast)."""
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case (scalars), without NumPy's machinery
        return tuple(first)
    return tuple(np.broadcast_shapes(*shapes))


class E:
    """A node id with arithmetic operators, for writing derivative rules readably.

    ``E(g, x)`` lets a rule say ``1 - out**2`` instead of nested ``g.apply`` calls.
    """

    __slots__ = ("g", "id")
    __array_ufunc__ = None  # keep numpy scalars from hijacking the operators

    def __init__(self, g: Graph, nid: int):
        self.g, self.id = g, nid

    def _c(self, other) -> int:
        return other.id if isinstance(other, E) else self.g.const(other)

    def _op(self, name, *others):
        return E(self.g, self.g.apply(name, self.id, *[self._c(o) for o in others]))

    def _rop(self, name, other):
        return E(self.g, self.g.apply(name, self._c(other), self.id))

    def __add__(self, o): return self._op("add", o)
    def __radd__(self, o): return self._rop("add", o)
    def __sub__(self, o): return self._op("sub", o)
    def __rsub__(self, o): return self._rop("sub", o)
    def __mul__(self, o): return self._op("mul", o)
    def __rmul__(self, o): return self._rop("mul", o)
    def __truediv__(self, o): return self._op("div", o)
    def __rtruediv__(self, o): return self._rop("div", o)
    def __pow__(self, o): return self._op("pow", o)
    def __neg__(self): return self._op("neg")

    def __getattr__(self, name):
        if name.startswith("_") or name not in REGISTRY:
            raise AttributeError(name)
        return lambda *others: self._op(name, *others)

    @property
    def shape(self):
        return self.g.shape(self.id)
