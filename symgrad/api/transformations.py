"""The public transformations, each declared once: what it builds, what it differentiates, how
its results are assembled, and how it applies inside another trace.

=============  =========================================  =============================
kind           kernel inputs                               kernel outputs
=============  =========================================  =============================
jit            primals                                     outputs
grad           primals                                     x_bar for the argnums leaves
value_and_grad primals                                     output, then x_bar
grad_with_aux  primals                                     x_bar, then the aux leaves (has_aux=True)
value_and_grad_with_aux  primals                           output, x_bar, then the aux leaves
vjp            primals, out_bar per output                 x_bar for every primal leaf
jvp            primals, x_dot per primal leaf              outputs, then out_dot
jacobian       primals                                     d_out_d_x per (output, argnums leaf)
hessian        primals                                     d2_out_d_x_d_y per pair of leaves
hvp            primals, x_dot per argnums leaf             hvp per argnums leaf
=============  =========================================  =============================

Every entry point (``jit``/``grad``/... through :class:`~symgrad.api.compiled.Compiled`,
``trace(...).source()``, the CLI and ``symgrad compile``) reaches a kind through
:data:`TRANSFORMATIONS`; a new transformation is one more :class:`Transformation` here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..emit.printer import KernelIO
from ..errors import SignatureError, format_error
from ..trace.pytree import tree_unflatten
from ..trace.trace import TracedProgram
from ..transforms import hessian_nodes, hvp_nodes, jacobian_nodes, jvp_nodes, vjp_nodes
from ..transforms.higher import gradient_nodes

__all__ = ["Transformation", "TRANSFORMATIONS", "KINDS", "KernelPlan", "Assembly", "scalar_output",
           "aux_output", "transformation"]


def scalar_output(p: TracedProgram, kind: str) -> int:
    """The one scalar-core output ``kind`` needs.

    Raises:
      SignatureError: several outputs or an array output (naming ``jacobian``).
    """
    if len(p.outputs) != 1 or p.graph.shape(p.outputs[0]) != ():
        shapes = [p.graph.shape(o) for o in p.outputs]
        raise SignatureError(format_error(
            f"{kind} needs a function with one scalar core output; {p.name} returns core shape(s) {shapes}",
            "a gradient is defined for a real-valued (scalar) function",
            "reduce the output (np.sum), or use symgrad.jacobian / symgrad.vjp for vector outputs"))
    return p.outputs[0]


@dataclass
class KernelPlan:
    """What a transformation's ``build`` step reads and appends to (see :func:`symgrad.api.build.build_kernel`).

    Attributes:
      p: the traced program (its graph grows).
      xs, xnames: the differentiated input nodes and their kernel names.
      onames: kernel names of the outputs.
      ins, outs: kernel arguments and results, appended to by ``build``.
      new_input: ``new_input(base, shape) -> (name, node)``, a new kernel argument (a cotangent or tangent).
      fresh: ``fresh(base) -> name``, a new kernel name.
    """

    p: TracedProgram
    xs: list
    xnames: list
    onames: list
    ins: list
    outs: list
    new_input: Callable
    fresh: Callable

    def add_inputs(self, base_names, like) -> list[int]:
        made = [self.new_input(b, self.p.graph.shape(n)) for b, n in zip(base_names, like)]
        self.ins += [KernelIO(name, nid, self.p.graph.shape(nid)) for name, nid in made]
        return [nid for _, nid in made]

    def out(self, name: str, nid: int, shape) -> None:
        self.outs.append(KernelIO(name, nid, tuple(shape)))


@dataclass
class Assembly:
    """How flat kernel results map onto the user's structures (one compiled entry)."""

    p: TracedProgram
    nums: tuple        # the argnums, normalised
    single: bool       # the user gave one int
    ranges: list       # leaves of each argument
    wrt: list          # differentiated leaves

    @property
    def n_out(self) -> int:
        return len(self.p.outputs)

    def flat(self, values, n: int) -> list:
        return [values] if n == 1 else list(values)

    def per_arg(self, values):
        """One tree per differentiated argument (a tuple unless argnums was an int)."""
        pos = {leaf: v for leaf, v in zip(self.wrt, values)}
        trees = tuple(tree_unflatten(self.p.in_tree.children[a], [pos[l] for l in self.ranges[a]])
                      for a in self.nums)
        return trees[0] if self.single else trees

    def leaf_args(self) -> bool:
        return all(self.p.in_tree.children[a].kind == "leaf" for a in self.nums)


@dataclass(frozen=True)
class Transformation:
    """One public transformation.

    Attributes:
      kind: its name (``grad``).
      all_leaves: differentiates every input leaf (``jit``, ``vjp``, ``jvp``), not the argnums leaves.
      build: ``build(plan) -> docstring``: append the derivative nodes and kernel inputs/outputs.
      assemble: ``assemble(a, flat) -> result`` in the user's structure.
      identity: ``identity(a) -> bool``: ``assemble`` returns the kernel's result unchanged (so calls
        may go straight to the generated entry point).
    """

    kind: str
    all_leaves: bool
    build: Callable
    assemble: Callable = lambda a, flat: flat
    identity: Callable = lambda a: False

    def wrt(self, n_leaves: int, nums, ranges) -> list[int]:
        """Indices of the differentiated leaves."""
        return list(range(n_leaves)) if self.all_leaves else [leaf for k in nums for leaf in ranges[k]]


# -- build steps -------------------------------------------------------------------------------

def _build_jit(k: KernelPlan) -> str:
    p = k.p
    for n, o in zip(k.onames, p.outputs):
        k.out(n, o, p.graph.shape(o))
    return f"{p.name}({', '.join(p.arg_names)})"


def aux_output(p: TracedProgram, kind: str) -> int:
    """The scalar-core output of a function returning ``(output, aux)`` (``has_aux=True``, as JAX).

    Raises:
      TypeError: the function does not return a pair whose first item is one array.
      SignatureError: that item is not a scalar core.
    """
    tree = p.out_tree
    if tree.kind not in ("tuple", "list") or len(tree.children) != 2 or tree.children[0].kind != "leaf":
        raise TypeError(format_error(
            f"{kind} with has_aux=True needs {p.name} to return a pair (output, aux)",
            "the first item is differentiated, the second (any pytree of arrays) is returned as it is",
            "return (loss, aux), e.g. return loss, {'predictions': y}"))
    y = p.outputs[0]
    if p.graph.shape(y) != ():
        raise SignatureError(format_error(
            f"{kind} needs the first item {p.name} returns to have a scalar core; it has core shape "
            f"{p.graph.shape(y)}", "a gradient is defined for a real-valued (scalar) function",
            "reduce it (np.sum), or use symgrad.jacobian / symgrad.vjp for vector outputs"))
    return y


def _build_grad(k: KernelPlan, with_value: bool = False, aux: bool = False) -> str:
    kind = ("value_and_grad" if with_value else "grad") + (" (has_aux)" if aux else "")
    g = k.p.graph
    y = aux_output(k.p, kind) if aux else scalar_output(k.p, kind)
    if with_value:
        k.out(k.onames[0], y, ())
    for n, gid, x in zip(k.xnames, gradient_nodes(g, y, k.xs), k.xs):
        k.out(k.fresh(f"{n}_bar"), gid, g.shape(x))
    if aux:
        for n, o in zip(k.onames[1:], k.p.outputs[1:]):
            k.out(k.fresh(f"aux_{n}"), o, g.shape(o))
    return f"Gradient of {k.p.name} w.r.t. ({', '.join(k.xnames)})" + (", and its aux outputs" if aux else "")


def _build_vjp(k: KernelPlan) -> str:
    g, p = k.p.graph, k.p
    cts = k.add_inputs([f"{n}_bar" for n in k.onames], p.outputs)
    bars = vjp_nodes(g, p.outputs, cts, k.xs)
    for n, b, x in zip(k.xnames, bars, k.xs):
        k.out(k.fresh(f"{n}_bar"), g.instantiate_zeros(b, g.shape(x)), g.shape(x))
    names = [io.name for io in k.ins[-len(cts):]] if cts else []
    return (f"VJP of {p.name}: cotangents ({', '.join(names)}) -> "
            f"({', '.join(o.name for o in k.outs)})")


def _build_jvp(k: KernelPlan) -> str:
    g, p = k.p.graph, k.p
    tans = k.add_inputs([f"{n}_dot" for n in k.xnames], k.xs)
    names = [io.name for io in k.ins[-len(tans):]] if tans else []
    dots = jvp_nodes(g, k.xs, tans, p.outputs)
    for n, o in zip(k.onames, p.outputs):
        k.out(n, o, g.shape(o))
    for n, d, o in zip(k.onames, dots, p.outputs):
        k.out(k.fresh(f"{n}_dot"), g.instantiate_zeros(d, g.shape(o)), g.shape(o))
    return f"JVP of {p.name}: tangents ({', '.join(names)}) -> outputs and their tangents"


def _build_jacobian(k: KernelPlan) -> str:
    g, p = k.p.graph, k.p
    for on, row, o in zip(k.onames, jacobian_nodes(g, k.xs, p.outputs), p.outputs):
        for xn, j, x in zip(k.xnames, row, k.xs):
            k.out(k.fresh(f"d_{on}_d_{xn}"), j, g.shape(o) + g.shape(x))
    return f"Jacobian of {p.name} w.r.t. ({', '.join(k.xnames)})"


def _build_hessian(k: KernelPlan) -> str:
    """Second derivatives, shape ``out + a + b`` per pair of differentiated leaves (``jax.hessian``):
    forward over reverse for a scalar output, the Jacobian of the Jacobian for an array output."""
    g, p = k.p.graph, k.p
    if len(p.outputs) != 1:
        scalar_output(p, "hessian")  # raises: JAX's hessian of several outputs is not supported here
    y = p.outputs[0]
    if g.shape(y) == ():
        blocks = hessian_nodes(g, y, k.xs)
    else:
        (first,) = jacobian_nodes(g, k.xs, [y])
        blocks = jacobian_nodes(g, k.xs, first)  # [a][b]: d/db of dy/da
    for an, row, a in zip(k.xnames, blocks, k.xs):
        for bn, h, b in zip(k.xnames, row, k.xs):
            k.out(k.fresh(f"d2_out_d_{an}_d_{bn}"), h, g.shape(y) + g.shape(a) + g.shape(b))
    return f"Hessian of {p.name} w.r.t. ({', '.join(k.xnames)})"


def _build_hvp(k: KernelPlan) -> str:
    g, y = k.p.graph, scalar_output(k.p, "hvp")
    tans = k.add_inputs([f"{n}_dot" for n in k.xnames], k.xs)
    for n, h, x in zip(k.xnames, hvp_nodes(g, y, k.xs, tans), k.xs):
        k.out(k.fresh(f"hvp_{n}"), h, g.shape(x))
    return f"Hessian-vector product of {k.p.name} w.r.t. ({', '.join(k.xnames)})"


# -- assembly ----------------------------------------------------------------------------------

def _assemble_grad_aux(a: Assembly, flat, with_value: bool):
    """``(grads, aux)``, or ``((value, aux), grads)`` with the value (``jax.value_and_grad``)."""
    vals = a.flat(flat, int(with_value) + len(a.wrt) + a.n_out - 1)
    head = 1 if with_value else 0
    grads = a.per_arg(vals[head:head + len(a.wrt)])
    aux = tree_unflatten(a.p.out_tree.children[1], vals[head + len(a.wrt):])
    return ((vals[0], aux), grads) if with_value else (grads, aux)


def _assemble_jacobian(a: Assembly, flat):
    vals, w = a.flat(flat, a.n_out * len(a.wrt)), len(a.wrt)
    return tree_unflatten(a.p.out_tree, [a.per_arg(vals[i * w:(i + 1) * w]) for i in range(a.n_out)])


def _assemble_hessian(a: Assembly, flat):
    vals, w = a.flat(flat, len(a.wrt) ** 2), len(a.wrt)
    return a.per_arg([a.per_arg(vals[i * w:(i + 1) * w]) for i in range(w)])


def _jit_identity(a: Assembly) -> bool:
    tree = a.p.out_tree
    return tree.kind == "leaf" or (tree.kind == "tuple" and a.n_out > 1
                                   and all(c.kind == "leaf" for c in tree.children))


TRANSFORMATIONS: dict[str, Transformation] = {t.kind: t for t in (
    Transformation("jit", True, _build_jit,
                   assemble=lambda a, flat: tree_unflatten(a.p.out_tree, a.flat(flat, a.n_out)),
                   identity=_jit_identity),
    Transformation("grad", False, _build_grad,
                   assemble=lambda a, flat: a.per_arg(a.flat(flat, len(a.wrt))),
                   identity=lambda a: a.leaf_args() and (a.single or len(a.nums) > 1)),
    Transformation("value_and_grad", False, lambda k: _build_grad(k, with_value=True),
                   assemble=lambda a, flat: (flat[0], a.per_arg(list(flat[1:])))),
    Transformation("grad_with_aux", False, lambda k: _build_grad(k, aux=True),
                   assemble=lambda a, flat: _assemble_grad_aux(a, flat, with_value=False)),
    Transformation("value_and_grad_with_aux", False, lambda k: _build_grad(k, with_value=True, aux=True),
                   assemble=lambda a, flat: _assemble_grad_aux(a, flat, with_value=True)),
    Transformation("vjp", True, _build_vjp),
    Transformation("jvp", True, _build_jvp),
    Transformation("jacobian", False, _build_jacobian, assemble=_assemble_jacobian,
                   identity=lambda a: (a.n_out == 1 and a.single and a.p.out_tree.kind == "leaf"
                                       and a.leaf_args())),
    Transformation("hessian", False, _build_hessian, assemble=_assemble_hessian),
    Transformation("hvp", False, _build_hvp),
)}

KINDS = tuple(TRANSFORMATIONS)


def transformation(kind: str) -> Transformation:
    """The :class:`Transformation` called ``kind``.

    Raises:
      ValueError: no such transformation.
    """
    try:
        return TRANSFORMATIONS[kind]
    except KeyError:
        raise ValueError(f"unknown transformation {kind!r}; expected one of {KINDS}") from None
