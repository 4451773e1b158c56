"""Acyclic colouring of a symmetric pattern and recovery of the Hessian by substitution.

An *acyclic* colouring is a distance-1 colouring (neighbours get different colours) in which
every cycle uses at least three colours: the subgraph induced by any two colour classes is a
forest.  It needs at most as many colours as a star colouring (every star colouring is acyclic)
and often fewer, but reading ``H`` back from ``B = H S`` then takes *substitution*: in each
two-coloured tree, a leaf ``v`` hangs on one neighbour ``u`` of colour ``c(u)``, so
``H[v, u] = B[v, c(u)]`` (less what was already removed), and removing that edge subtracts
``H[v, u]`` from ``B[u, c(v)]``; peeling leaves empties every tree (Gebremedhin, Manne & Pothen,
"What color is your Jacobian?", SIAM Review 47, 2005, sec. 4.3 and 6; Gebremedhin, Tarafdar,
Manne & Pothen, "New acyclic and star coloring algorithms with application to computing
Hessians", SIAM J. Sci. Comput. 29, 2007, sec. 3 and 5).

The colouring here is the sequential greedy one in natural vertex order: vertex ``v`` takes the
smallest colour ``c`` that no neighbour has and for which no two neighbours of one colour ``d``
already lie in the same tree of the ``(c, d)`` forest (which would close a two-coloured cycle
through ``v``).  The trees are kept in disjoint sets with path halving, one set structure per
colour pair (Gebremedhin et al. 2007 key the sets by edges to the same effect).  The recovery
plan (:func:`substitution_plan`) is verified when it is built: every off-diagonal nonzero must be
peeled, otherwise the colouring is rejected.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.typed import Dict

__all__ = ["colour_acyclic", "substitution_plan", "substitute"]


@numba.njit(cache=True)
def _find(parent, key):  # pragma: no cover - compiled
    root = key
    while True:
        p = parent.get(root, root)
        if p == root:
            break
        gp = parent.get(p, p)
        if gp != p:
            parent[root] = gp  # path halving
        root = p
    return root


@numba.njit(cache=True)
def _greedy_acyclic(ptr, adj, n):  # pragma: no cover - compiled
    colour = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    parent = Dict.empty(key_type=types.int64, value_type=types.int64)
    stride = np.int64(n + 1)  # set key: ((lo * stride + hi) * n + vertex) for the colour pair (lo, hi)
    roots = np.empty(n, dtype=np.int64)
    for v in range(n):
        for p in range(ptr[v], ptr[v + 1]):
            w = adj[p]
            if w != v and colour[w] >= 0:
                forbidden[colour[w]] = v
        c = 0
        while True:
            while forbidden[c] == v:
                c += 1
            ok = True
            k = 0
            for p in range(ptr[v], ptr[v + 1]):  # neighbours of one colour d must lie in distinct (c, d) trees
                w = adj[p]
                if w == v or colour[w] < 0:
                    continue
                d = colour[w]
                lo, hi = min(c, d), max(c, d)
                r = _find(parent, (lo * stride + hi) * n + w)
                for q in range(k):
                    if roots[q] == r:
                        ok = False
                        break
                if not ok:
                    break
                roots[k] = r
                k += 1
            if ok:
                break
            forbidden[c] = v  # try the next colour
        colour[v] = c
        for p in range(ptr[v], ptr[v + 1]):  # v joins the tree of each coloured neighbour
            w = adj[p]
            if w == v or colour[w] < 0:
                continue
            d = colour[w]
            lo, hi = min(c, d), max(c, d)
            base = (lo * stride + hi) * n
            rv, rw = _find(parent, base + v), _find(parent, base + w)
            if rv != rw:
                parent[rv] = rw
    return colour


def colour_acyclic(pattern) -> np.ndarray:
    """Greedy acyclic colouring of a symmetric ``scipy.sparse`` pattern (diagonal ignored).

    Returns:
      int64 array of shape (n,), colours 0 .. ncolours - 1.
    Raises:
      ValueError: the pattern is not square, or too large for the set keys (n > 2 * 10**6).
    """
    csr = pattern.tocsr()
    csr.sort_indices()
    n = csr.shape[0]
    if csr.shape[0] != csr.shape[1]:
        raise ValueError(f"an acyclic colouring needs a square symmetric pattern; got shape {csr.shape}")
    if n > 2_000_000:
        raise ValueError(f"colour_acyclic supports n <= 2*10**6 unknowns; got n = {n}: use the star colouring")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return _greedy_acyclic(csr.indptr.astype(np.int64), csr.indices.astype(np.int64), n)


@numba.njit(cache=True)
def _peel(ptr, adj, colour, nc, n, mirror):  # pragma: no cover - compiled
    """Leaf-peeling order over all two-coloured trees at once.

    Returns (read, update, e1, e2, done): for each step, read ``W[read]``, store it at nonzero
    positions ``e1`` and ``e2`` (the entry and its mirror) and subtract it from ``W[update]``, with
    ``W`` the compressed product laid out (ncolours, n) in C order.  ``done`` is False when some
    off-diagonal nonzero was never peeled (a two-coloured cycle: the colouring is not acyclic).
    """
    count = np.zeros(n * nc, dtype=np.int64)  # count[v * nc + d]: unpeeled neighbours of v with colour d
    removed = np.zeros(len(adj), dtype=np.bool_)
    n_off = 0
    for v in range(n):
        for p in range(ptr[v], ptr[v + 1]):
            if adj[p] != v:
                count[v * nc + colour[adj[p]]] += 1
                n_off += 1
    stack = np.empty(n_off + 1, dtype=np.int64)
    top = 0
    for v in range(n):
        for p in range(ptr[v], ptr[v + 1]):
            if adj[p] != v and count[v * nc + colour[adj[p]]] == 1:
                stack[top] = p
                top += 1
    m = n_off // 2
    read = np.empty(m, dtype=np.int64)
    update = np.empty(m, dtype=np.int64)
    e1 = np.empty(m, dtype=np.int64)
    e2 = np.empty(m, dtype=np.int64)
    k = 0
    v_of = np.empty(len(adj), dtype=np.int64)
    for v in range(n):
        for p in range(ptr[v], ptr[v + 1]):
            v_of[p] = v
    while top > 0:
        top -= 1
        p = stack[top]
        if removed[p]:
            continue
        v, u = v_of[p], adj[p]
        if count[v * nc + colour[u]] != 1:
            continue
        q = mirror[p]
        read[k] = colour[u] * n + v
        update[k] = colour[v] * n + u
        e1[k] = p
        e2[k] = q
        k += 1
        removed[p] = True
        removed[q] = True
        count[v * nc + colour[u]] -= 1
        key = u * nc + colour[v]
        count[key] -= 1
        if count[key] == 1:  # u is now a leaf of this tree: push its last edge of colour c(v)
            for r in range(ptr[u], ptr[u + 1]):
                if not removed[r] and adj[r] != u and colour[adj[r]] == colour[v]:
                    if top >= len(stack):
                        break
                    stack[top] = r
                    top += 1
                    break
    return read[:k], update[:k], e1[:k], e2[:k], k == m


def substitution_plan(csr, colours: np.ndarray):
    """The recovery plan of an acyclic colouring, or None when some nonzero cannot be recovered.

    Args:
      csr: symmetric pattern, CSR with sorted indices, shape (n, n).
      colours: its colouring, shape (n,).
    Returns:
      dict of int64 arrays: ``diag_nnz``/``diag_pos`` (diagonal entries read directly) and the
      substitution steps ``read``/``update``/``e1``/``e2`` (see :func:`substitute`), or None.
    """
    n = csr.shape[0]
    nc = int(colours.max()) + 1 if n else 0
    ptr, adj = csr.indptr.astype(np.int64), csr.indices.astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    mirror = _mirror_positions(csr, rows, adj)
    if mirror is None:
        return None
    if np.any((colours[rows] == colours[adj]) & (rows != adj)):
        return None  # not even a distance-1 colouring
    read, update, e1, e2, done = _peel(ptr, adj, colours.astype(np.int64), max(nc, 1), n, mirror)
    if not done:
        return None
    diag = np.flatnonzero(rows == adj)
    return {"diag_nnz": diag, "diag_pos": colours[rows[diag]] * n + rows[diag],
            "read": read, "update": update, "e1": e1, "e2": e2}


def _mirror_positions(csr, rows, cols):
    """Position of nonzero (j, i) for each nonzero (i, j), or None if the pattern is not symmetric."""
    n = csr.shape[0]
    key = rows * n + cols
    tkey = cols * n + rows
    order = np.argsort(key, kind="stable")
    pos = np.searchsorted(key[order], tkey)
    pos = np.clip(pos, 0, len(key) - 1)
    if len(key) and not np.array_equal(key[order][pos], tkey):
        return None
    return order[pos].astype(np.int64)


@numba.njit(cache=True)
def _substitute(work, data, read, update, e1, e2):  # pragma: no cover - compiled
    for k in range(len(read)):
        val = work[read[k]]
        data[e1[k]] = val
        data[e2[k]] = val
        work[update[k]] -= val


def substitute(plan: dict, compressed: np.ndarray, nnz: int) -> np.ndarray:
    """CSR data of ``H`` from ``B^T = (H S)^T`` (shape (ncolours, n)) by the plan's substitutions."""
    work = np.array(compressed, dtype=compressed.dtype, order="C").reshape(-1)
    data = np.empty(nnz, dtype=work.dtype)
    data[plan["diag_nnz"]] = work[plan["diag_pos"]]
    _substitute(work, data, plan["read"], plan["update"], plan["e1"], plan["e2"])
    return data
