"""Apply the numerical stabiliser to every output of a kernel before emission.

For each output, the *elementwise region* above it is collected: the nodes
reachable through elementwise ops, stopping at inputs, constants and
non-elementwise nodes (sums, contractions, indexing), which become the
region's free symbols.  The region is converted to one scalar SymPy
expression (elementwise ops act the same on every array element), handed to
:func:`symgrad.stabilize.stabilize`, and a better expression is built back into
the graph.  Each accepted rewrite becomes a comment above the statement it
changed and a line in the module header.
"""
from __future__ import annotations

import os

import sympy as sp

from ..emit.module import KernelDef
from ..ir.from_sympy import from_sympy
from ..ir.graph import Graph
from ..ir.interpret import sympy_number
from ..ir.ops import REGISTRY

MAX_REGION_NODES = 60
DEFAULT_BUDGET_S = float(os.environ.get("SYMGRAD_STABILIZE_BUDGET", "2.0"))  # seconds per expression
ACCURATE_MEAN_BITS = 1.5  # regions this accurate on average, and within 2 ulps everywhere probed, are not searched


def _region_size(g: Graph, root: int, limit: int) -> int:
    """Number of elementwise ops in the region at ``root``, counting stops past ``limit``.

    Iterative, so a long chain (``for _ in range(1000): x = np.sin(x)``) cannot overflow
    Python's recursion limit before the size check rejects it.
    """
    seen, stack, size = set(), [root], 0
    while stack and size <= limit:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        node = g[nid]
        op = REGISTRY[node.op]
        if node.op in ("const", "bconst") or not (op.elementwise and op.sympy is not None
                                                   and node.op != "stop_gradient"):
            continue
        size += 1
        stack.extend(node.args)
    return size


def _region_expr(g: Graph, root: int):
    """(SymPy expression of the elementwise region at ``root``, {symbol: node id}, size)."""
    leaves: dict = {}
    memo: dict[int, sp.Expr] = {}
    size = 0

    def leaf(nid: int) -> sp.Expr:
        node = g[nid]
        name = node.params[0] if node.op == "input" else f"t{nid}"
        sym = sp.Symbol(name, real=True)
        leaves[sym] = nid
        return sym

    def rec(nid: int) -> sp.Expr:
        nonlocal size
        if nid in memo:
            return memo[nid]
        node = g[nid]
        op = REGISTRY[node.op]
        if node.op == "const" and node.shape == ():
            out = sympy_number(float(g.consts[nid]))
        elif node.op == "bconst" and node.shape == ():
            out = sp.true if bool(g.consts[nid]) else sp.false
        elif op.elementwise and op.sympy is not None and node.op != "stop_gradient":
            size += 1
            out = op.sympy(*[rec(a) for a in node.args])
        else:
            out = leaf(nid)
        memo[nid] = out
        return out

    expr = rec(root)
    return expr, leaves, size


def budget_of(stabilize) -> float:
    """The per-expression budget meant by a ``stabilize=`` argument (True or seconds)."""
    if stabilize is True:
        return DEFAULT_BUDGET_S
    return float(stabilize)


def stabilize_kernel(g: Graph, kernel: KernelDef, budget_s: float | None = None) -> list[str]:
    """Rewrite ``kernel``'s outputs into stable forms in place; return header lines."""
    budget_s = DEFAULT_BUDGET_S if budget_s is None else budget_s
    from ..stabilize import needs_search, stabilize

    header: list[str] = []
    for out in kernel.outputs:
        node = g[out.node]
        if node.kind != "f" or not REGISTRY[node.op].elementwise:
            continue
        size = _region_size(g, out.node, MAX_REGION_NODES)
        if size > MAX_REGION_NODES:
            header.append(f"stabilize: {out.name} not searched (region of more than {MAX_REGION_NODES} ops)")
            continue
        expr, leaves, size = _region_expr(g, out.node)
        if size == 0:
            continue
        variables = sorted(leaves, key=lambda s: s.name)
        try:
            if not needs_search(expr, variables, ACCURATE_MEAN_BITS):
                continue
            res = stabilize(expr, variables, budget_s=budget_s)
        except NotImplementedError as exc:  # an op the error model cannot sample: keep the derived form
            header.append(f"stabilize: {out.name} kept as derived ({exc})")
            continue
        if res.budget_exhausted:
            header.append(f"stabilize: {out.name}: search stopped at the {budget_s:g} s budget")
        records = list(res.records)
        if res.widen_float32 and not _scalar_cores(kernel):  # only scalar cores compute in float64
            records.pop()
            header.append(f"stabilize: {out.name}: float32 beyond 2 ulps; float64 evaluation needs scalar cores")
        elif res.widen_float32:
            kernel.widen_float32 = True
        if not records:
            continue
        new = from_sympy(g, res.expr, leaves) if res.expr != expr else out.node
        out.node = new
        kernel.rewrites += [(out.name, r) for r in records]
        lines = [f"rewrite {r.one_line()}" for r in records]
        kernel.comments[new] = "\n".join(filter(None, [kernel.comments.get(new), *lines]))
        header += [f"{out.name}: {line}" for line in lines]
    return header


def _scalar_cores(kernel: KernelDef) -> bool:
    return all(a.shape == () for a in kernel.args) and all(o.shape == () for o in kernel.outputs)
