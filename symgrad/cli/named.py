"""The user's own variable names for common subexpressions in printed formulas.

A function written in steps (``inner = c * (x + 0.044715 * x**3)``, then
``return 0.5 * x * (1 + np.tanh(inner))``) would otherwise print, and differentiate,
as one expanded expression in which ``inner`` appears many times.  The tracer records
the user's ``file:line`` of every node (``Graph.lines``); the last scalar node traced on
a line ``name = <expr>`` is the value of ``name``, so the formulas can say ``inner``
where the code said ``inner``, and print ``inner = ...`` once.
"""
from __future__ import annotations

import ast
import linecache


def _assigned_name(file: str, line: int) -> str | None:
    """``name`` when source line ``line`` of ``file`` is a plain ``name = <expr>``, else None."""
    text = linecache.getline(file, line).strip()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    targets = tree.body[0].targets
    if len(targets) != 1 or not isinstance(targets[0], ast.Name):
        return None
    return targets[0].id


def user_variables(g, outputs: list[int], arg_names) -> dict[int, str]:
    """{node id: variable name} for scalar nodes of ``outputs``' program that hold a user variable.

    A name bound on several lines (or reassigned in a loop) is used for its first binding
    only, so each printed name means one value; argument names are never reused.
    """
    last: dict[tuple, int] = {}
    for nid in g.ancestors(outputs):
        loc = g.lines.get(nid)
        if loc is not None and g[nid].shape == () and g[nid].op not in ("input", "const", "bconst"):
            last[loc] = max(last.get(loc, -1), nid)
    names: dict[int, str] = {}
    taken = set(arg_names)
    for loc in sorted(last, key=last.get):
        name = _assigned_name(*loc)
        if name is not None and name not in taken:
            names[last[loc]] = name
            taken.add(name)
    return names


def definitions(g, named: dict[int, str], env: dict, symbols: dict) -> list[tuple[str, object]]:
    """``[(name, SymPy expression)]`` of each named node, in terms of the arguments and of the
    names defined before it (``symbols``: node id -> SymPy symbol of every named node)."""
    from ..ir.interpret import evaluate

    out = []
    for nid in sorted(named):
        inner = {**env, **{m: s for m, s in symbols.items() if m != nid}}
        (value,) = evaluate(g, [nid], inner, mode="sympy")
        out.append((named[nid], value[()] if getattr(value, "shape", None) == () else value))
    return out
