"""Trace a Python function at given core shapes into a :class:`TracedProgram`."""
from __future__ import annotations

import dataclasses

import inspect
import numbers
import sys
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError, SymgradError, TraceError, format_error, traceback_location
from ..ir.graph import Graph
from .library_calls import intercept_scipy
from .names import identifier, unique
from .pytree import TreeDef, tree_flatten
from .tracer import NotElementwise, TraceContext, Tracer, max_nodes, recording, to_node

__all__ = ["TracedProgram", "trace_program", "trace_default", "leaf_names"]


@dataclass
class TracedProgram:
    """The graph of one function traced at fixed core shapes.

    Attributes:
      graph: the DAG; grows when transformations append derivative nodes.
      name: the function's ``__name__`` (made a valid identifier).
      arg_names: one identifier per flattened input leaf.
      inputs: input node ids, one per leaf.
      outputs: output node ids, one per flattened output leaf.
      in_tree / out_tree: pytree structure of the arguments tuple and of the result.
      origin: ``file:line`` of the function definition.
    """

    graph: Graph
    name: str
    arg_names: list[str]
    inputs: list[int]
    outputs: list[int]
    in_tree: TreeDef
    out_tree: TreeDef
    origin: str
    elementwise: bool = False  # traced with no signature and found elementwise: ufunc broadcasting

    def copy(self) -> "TracedProgram":
        """The program on a copy of its graph: transformations applied to the copy (which append
        derivative nodes and may replace ``outputs``) leave this one unchanged."""
        return dataclasses.replace(self, graph=self.graph.copy(), arg_names=list(self.arg_names),
                                   inputs=list(self.inputs), outputs=list(self.outputs))

    def signature_text(self) -> str:
        """The gufunc signature this program was traced with, e.g. ``"(3),()->()"``.

        Core dimensions are written as their sizes (NumPy's fixed-size core dimensions).
        """
        def cores(ids):
            return ",".join("(" + ",".join(str(d) for d in self.graph.shape(i)) + ")" for i in ids)
        return f"{cores(self.inputs)}->{cores(self.outputs)}"

    def fingerprint(self) -> str:
        """Hash of everything that determines generated code: the outputs' sub-DAG, the
        bodies of user derivative rules, and the names of the function and its arguments."""
        rules = [r for r in self.graph.custom_rules if r is not None]
        extra = [b for r in rules for b in [*r.placeholders, *r.x_bars] if b is not None]
        body = self.graph.fingerprint(self.outputs + extra)
        return f"{body}:{self.name}:{','.join(self.arg_names)}:{','.join(r.name for r in rules)}"


def leaf_names(fn, args) -> list[str]:
    """Identifiers for the flattened argument leaves: parameter names plus pytree keys."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for k, arg in enumerate(args):
        base = params[k] if k < len(params) else f"arg{k}"
        leaves, tree = tree_flatten(arg)
        if tree.kind == "leaf":
            names.append(identifier(base))
        else:
            paths = _leaf_paths(tree)
            names.extend(identifier(f"{base}_{p}") for p in paths)
    return unique(names)


def _leaf_paths(tree: TreeDef, prefix: str = "") -> list[str]:
    if tree.kind == "leaf":
        return [prefix.strip("_") or "leaf"]
    keys = tree.keys if tree.kind == "dict" else range(len(tree.children))
    out = []
    for k, child in zip(keys, tree.children):
        out.extend(_leaf_paths(child, f"{prefix}_{k}"))
    return out


def origin_of(fn) -> str:
    """``file:line`` of ``fn``'s definition (a file name with control characters escaped)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return "<unknown>"
    filename = code.co_filename if code.co_filename.isprintable() else repr(code.co_filename)
    return f"{filename}:{code.co_firstlineno}"


def _describe_args(fn, args_tree, core_shapes) -> str:
    """One line per argument: what the function received while being traced."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    parts, k = [], 0
    for i, arg in enumerate(args_tree):
        leaves, tree = tree_flatten(arg)
        name = params[i] if i < len(params) else f"argument {i}"
        if tree.kind == "leaf":
            shape = core_shapes[k]
            parts.append(f"{name}: a traced {'scalar' if shape == () else f'array of core shape {shape}'}")
        else:
            parts.append(f"{name}: a {tree.kind} of {len(leaves)} traced value(s) (a pytree: each element is "
                         f"traced on its own; pass np.asarray(...) to give one array)")
        k += len(leaves)
    return "; ".join(parts)


def _check_arity(fn, fn_name: str, args_tree) -> None:
    """Raise ArgumentError when ``fn`` cannot take ``len(args_tree)`` positional arguments."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and ufuncs: let the call decide
        return
    try:
        sig.bind(*args_tree)
    except TypeError as exc:
        raise ArgumentError(format_error(
            f"{fn_name}{sig} cannot be called with {len(args_tree)} positional argument(s): {exc}",
            f"defined at {origin_of(fn)}; symgrad calls the function with the arguments of the call "
            "(one per signature input when a gufunc signature is given)",
            "call it with the arguments its definition takes")) from None


def _output_leaf(ctx, fn_name: str, leaf) -> int:
    what = None
    if leaf is None:
        what = "None"
    elif isinstance(leaf, (str, bytes)):
        what = f"a {type(leaf).__name__} ({leaf!r:.40})"
    elif not isinstance(leaf, (Tracer, numbers.Real, np.ndarray, np.generic)) and not getattr(
            type(leaf), "__symgrad_variable__", False):
        what = f"a value of type {type(leaf).__name__}"
    if what is not None:
        raise TraceError(format_error(
            f"{fn_name} returned {what}; it must return arrays or numbers (or tuples, lists and dicts of them)",
            "symgrad compiles and differentiates numeric outputs only", "return the numeric result"))
    nid = to_node(ctx, leaf)
    if ctx.graph[nid].kind != "f":
        raise TraceError(format_error(
            f"{fn_name} returned a boolean array", "only float outputs can be compiled and differentiated",
            "return np.where(mask, 1.0, 0.0) if you need the mask as numbers"))
    return nid


def trace_default(fn, args_tree, leaf_shapes: list[tuple[int, ...]],
                  names: list[str] | None = None) -> TracedProgram:
    """Trace ``fn`` for a call with no signature, deciding its semantics while tracing.

    A function that is elementwise in all its arguments keeps NumPy's ufunc model: every argument
    is a scalar core and compiled functions broadcast over arrays of any shape.  A function that
    reduces, contracts, indexes, iterates over, unpacks or reshapes an argument (or combines it with
    a constant array) gets JAX's semantics instead: each argument's core is its whole shape at this
    call, so ``np.sum(x) ** 2`` differentiates to ``2 * sum(x)`` in every component.

    The rule is decided by tracing at scalar cores first; the first whole-array operation stops that
    trace (:class:`~symgrad.trace.tracer.NotElementwise`) and the function is traced at its whole
    shapes.  An elementwise function is therefore traced once.

    Args:
      fn, args_tree, names: as for :func:`trace_program`.
      leaf_shapes: the shape of each flattened argument leaf at this call.
    Returns:
      The program; ``program.elementwise`` says which rule applied.
    """
    scalar = [()] * len(leaf_shapes)
    if all(tuple(s) == () for s in leaf_shapes):
        program = trace_program(fn, args_tree, scalar, names)
        program.elementwise = True  # the two rules agree on scalars; call it elementwise
        return program
    try:
        program = trace_program(fn, args_tree, scalar, names, probe=True)
    except NotElementwise:
        return trace_program(fn, args_tree, [tuple(s) for s in leaf_shapes], names)
    program.elementwise = True
    return program


def _note_arguments(exc: Exception, fn, fn_name: str, args_tree, core_shapes) -> None:
    """Add a note to a user's exception saying what the traced arguments were."""
    if hasattr(exc, "add_note"):
        exc.add_note(f"(raised while symgrad traced {fn_name} with symbolic arguments: "
                     f"{_describe_args(fn, args_tree, core_shapes)})")


def trace_program(fn, args_tree, core_shapes: list[tuple[int, ...]], names: list[str] | None = None,
                  graph: Graph | None = None, probe: bool = False) -> TracedProgram:
    """Trace ``fn`` with symbolic inputs of the given core shapes.

    Args:
      fn: the user function.
      args_tree: example arguments (only their pytree structure is used).
      core_shapes: the core shape of each flattened leaf.
      names: identifiers for the leaves (default: from ``fn``'s parameters).
      graph: a graph to trace into (default: a new one).
      probe: stop with :class:`~symgrad.trace.tracer.NotElementwise` at the first whole-array
        operation (used by :func:`trace_default`).
    Raises:
      ArgumentError: ``fn`` cannot take that many positional arguments.
      TraceError, UnsupportedOperationError: from the operations ``fn`` performs; also for a
        recursion without end and for programs larger than ``$SYMGRAD_MAX_NODES`` nodes.
      TraceError: also for a traced value stored into a NumPy array (``out = np.zeros(n);
        out[0] = x[0]``), which NumPy reports as a ValueError.
      Any other exception ``fn`` raises, with a note saying what the traced arguments were.
    """
    from .pytree import tree_unflatten

    fn_name = str(getattr(fn, "__name__", "function"))
    args_tree = tuple(args_tree)
    intercept_scipy()  # scipy.special.logsumexp & co. on traced values (symgrad.trace.library_calls)
    _check_arity(fn, fn_name, args_tree)
    leaves, in_tree = tree_flatten(args_tree)
    names = names or leaf_names(fn, args_tree)
    ctx = TraceContext(graph, max_nodes=max_nodes(), probe=probe)
    ids = [ctx.graph.input(n, s) for n, s in zip(names, core_shapes)]
    tracers = [ctx.wrap(i) for i in ids]
    try:
        with recording(ctx):
            result = fn(*tree_unflatten(in_tree, tracers))
    except RecursionError as exc:
        raise TraceError(format_error(
            f"{fn_name} recursed without end while being traced (Python's recursion limit, "
            f"{sys.getrecursionlimit()}, was reached)",
            "tracing runs the Python code once on symbolic values: a recursion that stops on a condition of "
            "a traced value cannot stop", "stop the recursion on a Python int (a fixed depth), or write it "
            "as a loop over a fixed range", traceback_location(exc.__traceback__))) from None
    except SymgradError:
        raise
    except ValueError as exc:
        if isinstance(exc.__cause__, SymgradError):  # NumPy storing a traced value into an ndarray
            raise TraceError(format_error(
                "cannot store a traced value in a NumPy array (out[i] = ... on an array from np.zeros, "
                "np.empty, np.ones or np.array of numbers)", "a NumPy array holds numbers, and a traced value "
                "is a symbol while tracing; in-place assignment also has no derivative rule",
                "build a new array from the traced values: np.stack([...]) or np.array([...]) of them, "
                "np.concatenate, or np.where with a mask", traceback_location(exc.__traceback__))) from None
        _note_arguments(exc, fn, fn_name, args_tree, core_shapes)
        raise
    except Exception as exc:
        _note_arguments(exc, fn, fn_name, args_tree, core_shapes)
        raise
    out_leaves, out_tree = tree_flatten(result)
    outputs = [_output_leaf(ctx, fn_name, leaf) for leaf in out_leaves]
    if probe and any(ctx.graph.shape(o) != () for o in outputs):  # e.g. returns a constant array
        raise NotElementwise("an output is an array")
    ctx.probe = False
    name = identifier(fn_name.replace("<lambda>", "lambda_fn"), default="fn")
    return TracedProgram(ctx.graph, name, names, ids, outputs, in_tree, out_tree, origin_of(fn))
