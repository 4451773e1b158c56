"""Sparse Jacobian and Hessian entries of scalar-level programs, one graph node per nonzero.

A program written with scalar loops (``C[k]``, ``x[i - 1]``, then ``np.stack(out)``: the GRI-Mech
kinetics of ``examples/grimech.py``, a loop-written Broyden function) traces to a graph whose
nodes that depend on the differentiated input ``x`` are scalars, apart from the rearrangements
(``getitem``, ``reshape``, ``concat``, ``transpose``, ``broadcast_to``) that read elements of ``x``
and assemble the output.  Then every Jacobian entry ``d y_i / d x_j`` is itself a scalar
expression, and it can be built directly from the local partials of the op rules (the same
``OpDef.partials`` the dense transforms use) with no colouring and no compressed sweep:

* forward: each scalar node ``v`` carries a dict ``{j: node of dv/dx_j}`` over its own structural
  dependencies only, ``dv/dx_j = sum_k partial_k * d a_k / dx_j``;
* reverse: each node carries ``{i: node of dy_i/dv}`` over the outputs it reaches.

The cost of the forward (reverse) variant is the sum over scalar nodes of the number of
columns (rows) each one depends on (reaches): sparse forward and reverse accumulation over
index domains (Griewank & Walther, *Evaluating Derivatives*, 2nd ed., 2008, sec. 7.1-7.2;
Bischof et al., "Efficient derivative codes through automatic differentiation and interface
contraction", 1996, call it the sparse vector mode).  Since each column of a row has its own
colour, the forward count never exceeds ``(scalar nodes) x ncolours`` of a column-coloured
compressed forward sweep.  Structural zeros are decided as in :mod:`.sparsity`: a partial that
is None or a constant 0 contributes nothing, so the patterns agree with
:func:`.sparsity.jacobian_pattern`.

Hessians of scalar-level programs: the gradient entries come from the sparse reverse variant
(each ``g_j`` a scalar node), then the Jacobian entries of the gradient (forward over reverse);
the pattern is symmetrised and only ``j <= i`` entries are computed, the others reuse them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import Graph
from ..ir.ops import REGISTRY, E, refuse_constant_args
from ..ir.rules.structural import index_to_python

__all__ = ["ScalarProgram", "scalar_program", "DirectEntries", "jacobian_entries", "gradient_program",
           "symmetrised", "pattern_of", "forward_cost", "reverse_cost",
           "ASSEMBLY"]

NONE = -1  # element reference: independent of x


def _leaf(j):
    """Element reference of element ``j`` of x (``-2 - j``, so every reference < -1 is a leaf)."""
    return -2 - j


def _assemble_concat(g, node, refs):
    parts = [refs[a] if a in refs else np.full(g.shape(a), NONE, dtype=np.int64) for a in node.args]
    return np.concatenate(parts, axis=node.params[0])


ASSEMBLY = {  # element rearrangements: the element references of the result, from the arguments'
    "reshape": lambda g, node, refs: refs[node.args[0]].reshape(node.shape),
    "transpose": lambda g, node, refs: refs[node.args[0]].transpose(node.params[0]),
    "broadcast_to": lambda g, node, refs: np.broadcast_to(refs[node.args[0]], node.shape),
    "getitem": lambda g, node, refs: np.asarray(refs[node.args[0]][index_to_python(node.params[0])]),
    "concat": _assemble_concat,
}


@dataclass
class ScalarProgram:
    """The scalar-level view of the part of a graph between ``x`` and the output ``y``.

    Attributes:
      x, n: the differentiated input node and its size.
      nodes: scalar nodes depending on x, in topological order.
      terms: for each of ``nodes``, ``[(argument reference, partial node)]`` for every structurally
        nonzero partial (argument reference: a scalar node id >= 0 or a leaf ``-2 - j``).
      out_refs: flat int64 array, one reference per output element (``-1``: independent of x).
    """

    x: int
    n: int
    nodes: list = field(default_factory=list)
    terms: dict = field(default_factory=dict)
    out_refs: np.ndarray = None

    def column_sets(self) -> dict:
        """``{node: frozenset of columns}`` (forward index domains)."""
        cols: dict = {}
        for v in self.nodes:
            s = set()
            for ref, _ in self.terms[v]:
                if ref >= 0:
                    s |= cols[ref]
                else:
                    s.add(-2 - ref)
            cols[v] = frozenset(s)
        return cols

    def row_sets(self) -> dict:
        """``{node: frozenset of output rows}`` (reverse index domains)."""
        rows: dict = {v: set() for v in self.nodes}
        for i, r in enumerate(self.out_refs.tolist()):
            if r >= 0:
                rows[r].add(i)
        for v in reversed(self.nodes):
            mine = rows[v]
            if mine:
                for ref, _ in self.terms[v]:
                    if ref >= 0:
                        rows[ref] |= mine
        return rows


def scalar_program(g: Graph, x: int, y: int) -> tuple[ScalarProgram | None, str]:
    """The :class:`ScalarProgram` of output ``y`` w.r.t. input ``x``, or ``(None, reason)``.

    A program qualifies when every node that depends on ``x`` is a scalar elementwise op, an
    op without derivative (comparisons, ``stop_gradient``: independent from there on) or an
    element rearrangement (:data:`ASSEMBLY`).  ``reason`` names the first node that is not.
    """
    shape = g.shape(x)
    n = int(np.prod(shape))
    refs = {x: _leaf(np.arange(n, dtype=np.int64)).reshape(shape)}
    sp = ScalarProgram(x, n)
    with g.derivative_mode():
        for nid in g.ancestors([y]):
            node = g[nid]
            if nid <= x or not any(a in refs for a in node.args):
                continue
            op = REGISTRY[node.op]
            if op.nondiff:
                continue
            if op.elementwise:
                if node.shape != ():
                    return None, f"'{node.op}' of shape {node.shape} (an array operation on x)"
                if op.constant_args:
                    refuse_constant_args(g, nid, [a in refs for a in node.args])
                partials = op.partials(E(g, nid), *[E(g, a) for a in node.args])
                terms = []
                for a, p in zip(node.args, partials):
                    if a in refs and p is not None and not g.is_const(p.id, 0.0):
                        ref = int(refs[a])
                        if ref != NONE:
                            terms.append((ref, p.id))
                if not terms:
                    continue
                refs[nid] = np.asarray(nid, dtype=np.int64)
                sp.nodes.append(nid)
                sp.terms[nid] = terms
            elif node.op in ASSEMBLY:
                refs[nid] = ASSEMBLY[node.op](g, node, refs)
            else:
                return None, f"'{node.op}' (not an element rearrangement)"
    sp.out_refs = (refs[y] if y in refs else np.full(g.shape(y), NONE, dtype=np.int64)).reshape(-1).astype(np.int64)
    return sp, ""


def forward_cost(sp: ScalarProgram, cols: dict | None = None) -> int:
    """Multiply-adds of the sparse forward variant: sum over terms of the argument's column count."""
    cols = sp.column_sets() if cols is None else cols
    return sum(len(cols[r]) if r >= 0 else 1 for v in sp.nodes for r, _ in sp.terms[v])


def reverse_cost(sp: ScalarProgram, rows: dict | None = None) -> int:
    """Multiply-adds of the sparse reverse variant: sum over terms of the node's row count."""
    rows = sp.row_sets() if rows is None else rows
    return sum(len(rows[v]) * len(sp.terms[v]) for v in sp.nodes)


@dataclass
class DirectEntries:
    """CSR structure and one scalar node per stored entry, in CSR order.

    ``shape`` (m, n); ``indptr``/``indices`` as in SciPy (sorted column indices); ``nodes[k]`` the
    graph node of data entry ``k`` (several entries may share one node: a symmetric Hessian).
    """

    shape: tuple
    indptr: np.ndarray
    indices: np.ndarray
    nodes: list

    @property
    def nnz(self) -> int:
        return len(self.nodes)


def _accumulate(g, table, key, term):
    old = table.get(key)
    table[key] = term if old is None else g.apply("add", old, term)


def _forward(g: Graph, sp: ScalarProgram) -> dict:
    """``{(i, j): node}`` by sparse forward accumulation."""
    one = g.const(1.0)
    der: dict = {}
    for v in sp.nodes:
        d: dict = {}
        for ref, p in sp.terms[v]:
            if ref >= 0:
                for j, t in der[ref].items():
                    _accumulate(g, d, j, g.apply("mul", p, t))
            else:
                _accumulate(g, d, -2 - ref, p)
        der[v] = d
    out = {}
    for i, r in enumerate(sp.out_refs.tolist()):
        if r >= 0:
            for j, t in der[r].items():
                out[(i, j)] = t
        elif r != NONE:
            out[(i, -2 - r)] = one
    return out


def _reverse(g: Graph, sp: ScalarProgram) -> dict:
    """``{(i, j): node}`` by sparse reverse accumulation."""
    one = g.const(1.0)
    adj: dict = {v: {} for v in sp.nodes}
    out: dict = {}
    for i, r in enumerate(sp.out_refs.tolist()):
        if r >= 0:
            _accumulate(g, adj[r], i, one)
        elif r != NONE:
            _accumulate(g, out, (i, -2 - r), one)
    for v in reversed(sp.nodes):
        a = adj.pop(v)
        if not a:
            continue
        for ref, p in sp.terms[v]:
            if ref >= 0:
                target = adj[ref]
                for i, t in a.items():
                    _accumulate(g, target, i, g.apply("mul", t, p))
            else:
                j = -2 - ref
                for i, t in a.items():
                    _accumulate(g, out, (i, j), g.apply("mul", t, p))
    return out


def _csr(entries: dict, shape) -> DirectEntries:
    keys = sorted(entries)
    rows = np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys))
    cols = np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys))
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    np.cumsum(indptr, out=indptr)
    idx_t = np.int32 if len(keys) < 2**31 else np.int64
    return DirectEntries(tuple(shape), indptr.astype(idx_t), cols.astype(idx_t), [entries[k] for k in keys])


def jacobian_entries(g: Graph, sp: ScalarProgram, m: int, mode: str = "auto") -> tuple[DirectEntries, str]:
    """Entry nodes of the ``(m, n)`` Jacobian of a :class:`ScalarProgram` (m output elements).

    ``mode``: ``"forward"``, ``"reverse"`` or ``"auto"`` (the variant with fewer multiply-adds).
    Returns ``(entries, mode used)``.
    """
    if mode == "auto":
        mode = "forward" if forward_cost(sp) <= reverse_cost(sp) else "reverse"
    with g.derivative_mode():
        entries = _forward(g, sp) if mode == "forward" else _reverse(g, sp)
    return _csr(entries, (m, sp.n)), mode


def pattern_of(sp: ScalarProgram, m: int, cols: dict | None = None):
    """The ``(m, n)`` structural pattern (bool ``csr_array``) from the forward index domains."""
    import scipy.sparse as sparse

    cols = sp.column_sets() if cols is None else cols
    rows, idx = [], []
    for i, r in enumerate(sp.out_refs.tolist()):
        js = sorted(cols[r]) if r >= 0 else ([] if r == NONE else [-2 - r])
        rows += [i] * len(js)
        idx += js
    return sparse.csr_array((np.ones(len(idx), dtype=bool), (np.asarray(rows, dtype=np.int64),
                                                             np.asarray(idx, dtype=np.int64))), shape=(m, sp.n))


def gradient_program(g: Graph, sp: ScalarProgram) -> ScalarProgram:
    """The scalar program of the gradient of ``sp``'s scalar output (from sparse reverse entries).

    Its outputs are the ``n`` gradient elements (a structural zero is a constant 0), so its
    Jacobian entries are the Hessian's.
    """
    with g.derivative_mode():
        rev = _reverse(g, sp)
        grad = [None] * sp.n
        for (_, j), t in rev.items():
            grad[j] = t
        stacked = g.apply("concat", *[g.apply("reshape", g.instantiate_zeros(t, ()), params=((1,),)) for t in grad],
                          params=(0,))
    inner, why = scalar_program(g, sp.x, stacked)
    if inner is None:  # pragma: no cover - gradient nodes of a scalar program are scalar
        raise RuntimeError(f"symgrad internal error: the gradient of a scalar-level program has {why}")
    return inner


def symmetrised(jac: DirectEntries) -> DirectEntries:
    """The Hessian entries from the Jacobian entries of the gradient: the pattern symmetrised,
    and entry ``(i, j)`` taken from ``(max(i, j), min(i, j))`` when that exists, so each value is
    computed once and the result is exactly symmetric."""
    full = {}
    for i in range(jac.shape[0]):
        for k in range(int(jac.indptr[i]), int(jac.indptr[i + 1])):
            full[(i, int(jac.indices[k]))] = jac.nodes[k]
    sym = {}
    for (i, j) in full:
        for a, b in ((i, j), (j, i)):
            low = (max(a, b), min(a, b))
            sym[(a, b)] = full[low] if low in full else full[(min(a, b), max(a, b))]
    return _csr(sym, jac.shape)
