"""Trace a Python function at given core shapes into a :class:`TracedProgram`."""
from __future__ import annotations

import inspect
import keyword
import re
from dataclasses import dataclass

import numpy as np

from ..errors import SignatureError, TraceError
from ..ir.graph import Graph
from .pytree import TreeDef, tree_flatten
from .tracer import TraceContext, to_node

__all__ = ["TracedProgram", "trace_program", "leaf_names"]

_RESERVED = set(keyword.kwlist) | {"np", "math", "numba", "out", "self", "_acc", "None", "True", "False"}


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

    def fingerprint(self) -> str:
        """Hash of everything that determines generated code: the outputs' sub-DAG, the
        bodies of user derivative rules, and the names of the function and its arguments."""
        rules = [r for r in self.graph.custom_rules if r is not None]
        extra = [b for r in rules for b in [*r.placeholders, *r.x_bars] if b is not None]
        body = self.graph.fingerprint(self.outputs + extra)
        return f"{body}:{self.name}:{','.join(self.arg_names)}:{','.join(r.name for r in rules)}"


def _ident(text: str) -> str:
    name = re.sub(r"\W", "_", str(text)) or "arg"
    if name[0].isdigit():
        name = "_" + name
    if name in _RESERVED or re.fullmatch(r"t\d+|c\d+|_.*", name):
        name += "_"
    return name


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
            names.append(_ident(base))
        else:
            paths = _leaf_paths(tree)
            names.extend(_ident(f"{base}_{p}") for p in paths)
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            n = f"{n}_{seen[n]}"
        seen.setdefault(n, 0)
        out.append(n)
    return out


def _leaf_paths(tree: TreeDef, prefix: str = "") -> list[str]:
    if tree.kind == "leaf":
        return [prefix.strip("_") or "leaf"]
    keys = tree.keys if tree.kind == "dict" else range(len(tree.children))
    out = []
    for k, child in zip(keys, tree.children):
        out.extend(_leaf_paths(child, f"{prefix}_{k}"))
    return out


def origin_of(fn) -> str:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"


def trace_program(fn, args_tree, core_shapes: list[tuple[int, ...]], names: list[str] | None = None,
                  graph: Graph | None = None) -> TracedProgram:
    """Trace ``fn`` with symbolic inputs of the given core shapes.

    Args:
      fn: the user function.
      args_tree: example arguments (only their pytree structure is used).
      core_shapes: the core shape of each flattened leaf.
      names: identifiers for the leaves (default: from ``fn``'s parameters).
    Raises:
      TraceError, UnsupportedOperationError: from the operations ``fn`` performs.
    """
    from .pytree import tree_unflatten

    leaves, in_tree = tree_flatten(tuple(args_tree))
    names = names or leaf_names(fn, args_tree)
    ctx = TraceContext(graph)
    ids = [ctx.graph.input(n, s) for n, s in zip(names, core_shapes)]
    tracers = [ctx.wrap(i) for i in ids]
    result = fn(*tree_unflatten(in_tree, tracers))
    out_leaves, out_tree = tree_flatten(result)
    outputs = []
    for leaf in out_leaves:
        if leaf is None:
            raise TraceError(f"{getattr(fn, '__name__', 'function')} returned None; it must return arrays or numbers")
        nid = to_node(ctx, leaf)
        if ctx.graph[nid].kind != "f":
            raise TraceError(f"{getattr(fn, '__name__', 'function')} returned a boolean array; "
                             "only float outputs can be compiled and differentiated")
        outputs.append(nid)
    name = _ident(getattr(fn, "__name__", "fn").replace("<lambda>", "lambda_fn"))
    return TracedProgram(ctx.graph, name, names, ids, outputs, in_tree, out_tree, origin_of(fn))
