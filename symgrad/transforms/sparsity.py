"""Structural sparsity patterns read from the traced graph (no sampling, no evaluation).

:func:`jacobian_pattern` runs one forward pass over the graph and maps every node
to a boolean sparse matrix ``P`` of shape ``(node.size, n_inputs)``:
``P[k, j]`` is True when element ``k`` of the node (row-major) depends
structurally on element ``j`` of the seeded inputs.  This is the forward
propagation of index domains (Griewank & Walther, *Evaluating Derivatives*,
2nd ed., 2008, sec. 7.1), done op by op with sparse row selections and unions:

* elementwise ops: union of the broadcast operand rows, for each operand whose
  partial (read from the op's own ``partials`` rule, so the derivative and the
  pattern cannot drift) is not a structural zero; a constant partial with zero
  entries (a mask) removes those rows;
* getitem / reshape / transpose / broadcast_to / scatter / concat: row
  selections and permutations;
* sum and contract: row unions (a contraction with a constant operand skips the
  terms where the constant is zero, so ``A @ x`` with a banded constant ``A``
  stays banded);
* ``stop_gradient``, comparisons and constants: empty;
* ``custom_gradient``: the pattern of the user's traced ``grad_fn`` (the rule's
  ``x_bar`` nodes as functions of its upstream placeholders), transposed.

The per-op structure rules of non-elementwise ops live in :data:`STRUCTURE`
(one entry per op, next to each other); a test checks that every registered op
is either elementwise or listed.  An op added later without an entry gets the
conservative pattern (every output element depends on every dependency of
every operand): never too sparse, only less sparse than it could be.

The Hessian pattern is the Jacobian pattern of the gradient nodes built by
symgrad's own reverse pass (:func:`hessian_pattern`), which honours
``stop_gradient`` and ``custom_gradient`` at second order automatically.

SciPy (``scipy.sparse``) is imported when a pattern is first computed.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Graph
from ..ir.ops import REGISTRY, E, refuse_constant_args
from ..ir.rules.structural import index_to_python, parse_spec
from .custom import rules_of
from .higher import gradient_nodes

__all__ = ["jacobian_pattern", "hessian_pattern", "STRUCTURE"]

CONTRACT_ENUM_LIMIT = 20_000_000  # index-space points enumerated for one contraction's exact pattern


def _sp():
    try:
        import scipy.sparse as sparse
    except ImportError as exc:  # pragma: no cover - scipy is in the test extra
        raise ImportError("symgrad's sparse Jacobians need SciPy: pip install scipy") from exc
    return sparse


def _size(shape) -> int:
    return int(math.prod(shape))


def _empty(rows: int, cols: int):
    return _sp().csr_array((rows, cols), dtype=bool)


def _select(p, rows: np.ndarray):
    """Rows ``rows`` of ``p`` (a gather; repeated rows allowed), as CSR with sorted indices.

    Vectorised: each selected row's slice of ``indices`` is copied with one ``np.repeat``
    of the row starts plus a running offset (no Python loop over rows).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == p.shape[0] and np.array_equal(rows, np.arange(len(rows))):
        return p
    counts = np.diff(p.indptr)[rows]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    starts = np.repeat(p.indptr[rows].astype(np.int64) - indptr[:-1], counts)
    indices = p.indices[starts + np.arange(indptr[-1], dtype=np.int64)]
    return _sp().csr_array((np.ones(len(indices), dtype=bool), indices, indptr), shape=(len(rows), p.shape[1]))


def _union(a, b):
    """Elementwise OR of two patterns (None is empty)."""
    if a is None:
        return b
    if b is None:
        return a
    if a.nnz == b.nnz and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices):
        return a
    out = (a + b).tocsr()
    out.data[:] = True
    return out.astype(bool)


def _gather_sum(out_pos: np.ndarray, src_pos: np.ndarray, n_out: int, p):
    """Row ``r`` of the result = union of rows ``src_pos[k]`` of ``p`` with ``out_pos[k] == r``."""
    sp = _sp()
    s = sp.csr_array((np.ones(len(out_pos), dtype=np.float32), (out_pos, src_pos)), shape=(n_out, p.shape[0]))
    out = (s @ p.astype(np.float32)).tocsr()
    out.eliminate_zeros()
    out.data[:] = 1
    return out.astype(bool)


def _broadcast_rows(src_shape, dst_shape) -> np.ndarray:
    """For each element of ``dst_shape`` (row-major), the flat index of its source under broadcasting."""
    return np.broadcast_to(np.arange(_size(src_shape)).reshape(src_shape), dst_shape).ravel()


# -- elementwise ops: read the partials from the op's rule ------------------------------------

def _elementwise(g: Graph, node, pats):
    op = REGISTRY[node.op]
    if op.nondiff:
        return None
    if not any(p is not None for p in pats):
        return None
    if op.constant_args:
        refuse_constant_args(g, node.id, [p is not None for p in pats])
    with g.derivative_mode():
        partials = op.partials(E(g, node.id), *[E(g, a) for a in node.args])
    out = None
    for a, p, part in zip(node.args, pats, partials):
        if p is None or part is None or g.is_const(part.id, 0.0):
            continue
        rows = _broadcast_rows(g.shape(a), node.shape)
        term = _select(p, rows)
        if g[part.id].op == "const" and g.scalar_value(part.id) is None:  # a mask: drop its zero rows
            keep = np.broadcast_to(g.consts[part.id], node.shape).ravel() != 0
            term = _sp().diags_array(keep.astype(np.float32)).tocsr() @ term.astype(np.float32)
            term = _sp().csr_array(term)
            term.eliminate_zeros()
            term = term.astype(bool)
        out = _union(out, term)
    return out


# -- structural ops: one rule each -------------------------------------------------------------

def _reshape(g, node, pats):
    return pats[0]


def _transpose(g, node, pats):
    src = g.shape(node.args[0])
    return _select(pats[0], np.arange(_size(src)).reshape(src).transpose(node.params[0]).ravel())


def _broadcast_to(g, node, pats):
    return _select(pats[0], _broadcast_rows(g.shape(node.args[0]), node.shape))


def _getitem(g, node, pats):
    src = g.shape(node.args[0])
    rows = np.asarray(np.arange(_size(src)).reshape(src)[index_to_python(node.params[0])]).ravel()
    return _select(pats[0], rows)


def _scatter(g, node, pats):
    index, shape = node.params
    pos = np.asarray(np.arange(_size(shape)).reshape(shape)[index_to_python(index)])
    vshape = g.shape(node.args[0])
    pos = np.broadcast_to(pos, vshape).ravel() if pos.shape != vshape else pos.ravel()
    return _gather_sum(pos, np.arange(len(pos)), _size(shape), pats[0])


def _sum(g, node, pats):
    src = g.shape(node.args[0])
    axes = node.params[0]
    keep = tuple(1 if i in axes else d for i, d in enumerate(src))
    out_pos = np.broadcast_to(np.arange(_size(node.shape)).reshape(keep), src).ravel()
    return _gather_sum(out_pos, np.arange(_size(src)), _size(node.shape), pats[0])


def _concat(g, node, pats):
    axis, offset, parts, blocks = node.params[0], 0, [], []
    cols = next(p.shape[1] for p in pats if p is not None)
    for a, p in zip(node.args, pats):
        shape = g.shape(a)
        parts.append(np.arange(_size(shape)).reshape(shape) + offset)
        blocks.append(_empty(_size(shape), cols) if p is None else p)
        offset += _size(shape)
    rows = np.concatenate(parts, axis=axis).ravel()
    return _select(_sp().vstack(blocks, format="csr"), rows)


def _contract(g, node, pats):
    """Enumerate the index space: output element o gets operand elements (ia, ib) of each term;
    a term whose other factor is a constant zero contributes nothing to that operand's rows."""
    (x, y), spec = node.args, node.params[0]
    a, b, out = parse_spec(spec)
    sx, sy = g.shape(x), g.shape(y)
    sizes = dict(zip(a, sx))
    sizes.update(zip(b, sy))
    letters = list(dict.fromkeys(a + b + out))
    total = _size([sizes[ch] for ch in letters])
    if total > CONTRACT_ENUM_LIMIT:
        return _conservative(g, node, pats)
    grid = np.indices([sizes[ch] for ch in letters]).reshape(len(letters), -1)
    pos = {ch: grid[k] for k, ch in enumerate(letters)}

    def flat(lets, shape):
        if not lets:
            return np.zeros(grid.shape[1], dtype=np.int64)
        return np.ravel_multi_index(tuple(pos[ch] for ch in lets), shape)

    ia, ib, io = flat(a, sx), flat(b, sy), flat(out, node.shape)
    result = None
    for p, own, other_node, other_idx in ((pats[0], ia, y, ib), (pats[1], ib, x, ia)):
        if p is None:
            continue
        keep = slice(None)
        if g[other_node].op == "const":
            keep = np.asarray(g.consts[other_node]).ravel()[other_idx] != 0
        result = _union(result, _gather_sum(io[keep], own[keep], _size(node.shape), p))
    return result


def _custom_gradient(g, node, pats):
    """``y_k = custom(y_k, x_1..x_n)``: d y_k / d x_i is the transpose of the rule's x_bar_i(u_k)."""
    rule = rules_of(g)[node.params[0]]
    k = node.params[1]
    us = rule.placeholders
    sizes = [_size(g.shape(u)) for u in us]
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    bars = [b for b in rule.x_bars if b is not None]
    if not bars:
        return None
    inner = jacobian_pattern(g, us, bars)
    out, j = None, 0
    for b, x, p in zip(rule.x_bars, rule.inputs, pats[1:]):
        if b is None:
            continue
        q = inner[j][:, offsets[k]:offsets[k + 1]]  # (size x_bar, size u_k)
        j += 1
        if p is None:
            continue
        xb = g.shape(b)
        if xb != g.shape(x):  # a smaller x_bar is broadcast to x's shape (as the rule's VJP does)
            q = _select(q, _broadcast_rows(xb, g.shape(x)))
        term = (q.T.astype(np.float32) @ p.astype(np.float32)).tocsr()
        term.eliminate_zeros()
        out = _union(out, _sp().csr_array(term).astype(bool))
    return out


def _take(g, node, pats):
    """``np.take(x, idx, axis)``: each output element is one element of x."""
    src = g.shape(node.args[0])
    idx = np.asarray(g.consts[node.args[1]]).astype(np.int64).ravel()
    rows = np.take(np.arange(_size(src)).reshape(src), idx, axis=node.params[0]).ravel()
    return _select(pats[0], rows)


def _take_add(g, node, pats):
    """Scatter-add: value element k lands on output position ``idx[k]`` along the axis."""
    axis, _ = node.params
    idx = np.asarray(g.consts[node.args[1]]).astype(np.int64).ravel()
    pos = np.take(np.arange(_size(node.shape)).reshape(node.shape), idx, axis=axis).ravel()
    return _gather_sum(pos, np.arange(len(pos)), _size(node.shape), pats[0])


def _cumsum(g, node, pats):
    """Output ``i`` along the axis sums inputs ``j <= i`` (``j >= i`` for the reversed scan)."""
    axis, reverse = node.params[0], bool(node.params[1])
    shape = g.shape(node.args[0])
    n = shape[axis]
    if _size(shape) * n > CONTRACT_ENUM_LIMIT:
        return _conservative(g, node, pats)
    flat = np.moveaxis(np.arange(_size(shape)).reshape(shape), axis, -1).reshape(-1, n)
    i, j = np.tril_indices(n) if not reverse else np.triu_indices(n)
    out_pos = flat[:, i].ravel()
    src_pos = flat[:, j].ravel()
    return _gather_sum(out_pos, src_pos, _size(shape), pats[0])


def _nothing(g, node, pats):
    return None


def _conservative(g, node, pats):
    """Every output element depends on everything any operand depends on (a safe superset)."""
    row = None
    for p in pats:
        if p is not None:
            r = _sp().csr_array(np.asarray(p.astype(np.float32).sum(axis=0)).reshape(1, -1) != 0)
            row = _union(row, r)
    if row is None:
        return None
    return _select(row, np.zeros(_size(node.shape), dtype=np.int64))


STRUCTURE = {
    "reshape": _reshape,
    "transpose": _transpose,
    "broadcast_to": _broadcast_to,
    "getitem": _getitem,
    "scatter": _scatter,
    "sum": _sum,
    "concat": _concat,
    "contract": _contract,
    "custom_gradient": _custom_gradient,
    "take": _take,
    "take_add": _take_add,
    "cumsum": _cumsum,
    "amax": _sum,          # a max depends on every element it ranges over (as a sum does)
    "amin": _sum,
    "shift_max": _nothing,  # no derivative (a constant shift)
    # matrix functions of a small core and the inf-norm: every output element depends on every input
    **{name: _conservative for name in ("inv", "solve", "det", "slogdet_sign", "slogdet_logabs", "cholesky",
                                        "eigh_w", "eigh_v", "lstsq", "norm_inf")},
    "eye": _nothing,
    "input": _nothing,
    "const": _nothing,
    "bconst": _nothing,
}


def jacobian_pattern(g: Graph, inputs: list[int], outputs: list[int]) -> list:
    """Structural Jacobian pattern of each output w.r.t. the concatenated flattened ``inputs``.

    Args:
      g: the graph (derivative partials may be appended to it while reading rules).
      inputs: node ids; their flattened elements, in order, are the columns.
      outputs: node ids.
    Returns:
      One ``scipy.sparse.csr_array`` of dtype bool per output, shape ``(output size, n_columns)``.
    """
    sizes = [_size(g.shape(x)) for x in inputs]
    n = int(sum(sizes))
    sp = _sp()
    pats: dict[int, object] = {}
    offset = 0
    for x, s in zip(inputs, sizes):
        eye = sp.csr_array((np.ones(s, dtype=bool), (np.arange(s), np.arange(offset, offset + s))), shape=(s, n))
        pats[x] = _union(pats.get(x), eye)
        offset += s
    first = min(inputs) if inputs else 0
    for nid in g.ancestors(outputs):
        if nid < first or nid in pats:
            continue
        node = g[nid]
        arg_pats = [pats.get(a) for a in node.args]
        if all(p is None for p in arg_pats):
            continue
        op = REGISTRY[node.op]
        rule = _elementwise if op.elementwise else STRUCTURE.get(node.op, _conservative)
        p = rule(g, node, arg_pats)
        if p is not None and p.nnz:
            pats[nid] = p
    return [pats[o].tocsr() if o in pats else _empty(_size(g.shape(o)), n) for o in outputs]


def hessian_pattern(g: Graph, output: int, inputs: list[int]):
    """Structural Hessian pattern of scalar ``output`` w.r.t. the concatenated ``inputs``.

    The Jacobian pattern of the gradient program symgrad builds (reverse pass), symmetrised.
    Returns a square ``scipy.sparse.csr_array`` of dtype bool.
    """
    grads = gradient_nodes(g, output, inputs)
    rows = jacobian_pattern(g, inputs, grads)
    p = _sp().vstack(rows, format="csr")
    return _union(p, p.T.tocsr())
