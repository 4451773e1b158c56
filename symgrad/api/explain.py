"""Step-by-step backpropagation, for teaching: ``symgrad.explain(f, *values)``.

Prints the forward pass (one line per graph node: its formula in terms of
earlier nodes and its value) and the backward pass in reverse topological
order: each node's adjoint ``t_bar`` as the sum over its consumers ``c`` of
``c_bar * d c / d t``, with values.  This is the loop of a small autodiff
engine (cf. micrograd's ``backward``), run on the traced graph.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..ir.interpret import evaluate
from ..ir.ops import REGISTRY, E
from .traced import Traced


def _fmt(v) -> str:
    arr = np.asarray(v, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.6g}"
    return np.array2string(arr, precision=4, threshold=6)


def explain(fun, *args, signature: str | None = None) -> str:
    """Text of the forward and backward pass of ``fun`` at ``args`` (scalar output).

    Args:
      fun: function with one scalar core output.
      *args: the point (numbers or arrays matching ``signature``).
    Returns:
      A multi-line string; print it.

    >>> import numpy as np, symgrad
    >>> print(symgrad.explain(lambda x, y: x * y + np.sin(x), 2.0, 3.0))  # doctest: +ELLIPSIS
    forward pass:
    ...
    """
    t = Traced(fun, *args, signature=signature)
    p, g = t.program, t.program.graph
    out = t._scalar_out()
    order = [n for n in g.ancestors([out]) if g[n].op not in ("const", "bconst", "eye")]
    names = {nid: name for nid, name in zip(p.inputs, p.arg_names)}
    k = 0
    for nid in order:
        if nid not in names:
            names[nid] = f"t{k}"
            k += 1
    syms = {nid: sp.Symbol(n) for nid, n in names.items()}
    env = {i: np.asarray(a, dtype=float) for i, a in zip(p.inputs, _leaves(args))}
    values = dict(zip(order, evaluate(g, order, env)))

    def local(nid):
        node = g[nid]
        op = REGISTRY[node.op]
        parts = [syms.get(a, _const(g, a)) for a in node.args]
        if op.elementwise and op.sympy is not None:
            return op.sympy(*parts)
        return sp.Function(node.op)(*parts)

    lines = ["forward pass:"]
    for nid in order:
        if g[nid].op == "input":
            lines.append(f"  {names[nid]:>8} = {_fmt(values[nid])}   (input)")
        else:
            lines.append(f"  {names[nid]:>8} = {str(local(nid)):<28} = {_fmt(values[nid])}")
    # backward: adjoint of every node, built by the same rules the VJP uses
    adj_nodes: dict[int, int] = {out: g.const(1.0)}
    terms: dict[int, list[str]] = {}
    with g.derivative_mode():
        _backward(g, order, names, syms, values, adj_nodes, terms)
    adj_vals = dict(zip(adj_nodes, evaluate(g, list(adj_nodes.values()), env)))
    lines += ["", f"backward pass ({names[out]}_bar = 1), reverse topological order:"]
    for nid in reversed(order):
        if nid == out or nid not in adj_vals:
            continue
        lines.append(f"  {names[nid] + '_bar':>10} = {' + '.join(terms.get(nid, ['0'])):<40} = {_fmt(adj_vals[nid])}")
    lines += ["", "gradient: " + ", ".join(f"d{names[out]}/d{n} = {_fmt(adj_vals.get(i, 0.0))}"
                                           for i, n in zip(p.inputs, p.arg_names))]
    return "\n".join(lines)


def _backward(g, order, names, syms, values, adj_nodes, terms) -> None:
    """Accumulate every node's adjoint (in ``adj_nodes``) and a readable term list per node."""
    for nid in reversed(order):
        node = g[nid]
        if nid not in adj_nodes or node.op == "input":
            continue
        op = REGISTRY[node.op]
        if op.nondiff:
            continue
        if not op.elementwise:  # structural op: its own VJP rule (e.g. a sum broadcasts back)
            for a, c in zip(node.args, op.vjp(g, node, adj_nodes[nid], 0)):
                if c is None or a not in values:
                    continue
                adj_nodes[a] = c if a not in adj_nodes else g.apply("add", adj_nodes[a], c)
                terms.setdefault(a, []).append(f"{node.op}_vjp({names[nid]}_bar)")
            continue
        partials = op.partials(E(g, nid), *[E(g, a) for a in node.args])
        for a, pe in zip(node.args, partials):
            if pe is None or a not in values:
                continue
            contrib = g.apply("mul", adj_nodes[nid], pe.id)
            adj_nodes[a] = contrib if a not in adj_nodes else g.apply("add", adj_nodes[a], contrib)
            sym_env = {n: np.array(s, dtype=object) for n, s in syms.items()}
            pexpr = evaluate(g, [pe.id], sym_env, mode="sympy")[0][()]
            factor = "" if pexpr == 1 else f" * {_paren(pexpr)}"
            terms.setdefault(a, []).append(f"{names[nid]}_bar{factor}")


def _paren(expr) -> str:
    text = str(expr)
    return text if expr.is_Atom or isinstance(expr, sp.Function) else f"({text})"


def _leaves(args):
    from ..trace.pytree import tree_flatten

    return tree_flatten(args)[0]


def _const(g, nid):
    from ..ir.interpret import sympy_number

    arr = g.consts.get(nid)
    return sympy_number(float(arr)) if arr is not None and arr.ndim == 0 else sp.Symbol(f"c{nid}")
