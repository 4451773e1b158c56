"""Column colouring of a sparsity pattern and recovery of the compressed matrix.

Two columns may share a colour when no row has a structural nonzero in both
(they are not adjacent in the column intersection graph; a *distance-2*
colouring of the bipartite graph).  Then ``B = J S`` with the 0/1 seed matrix
``S[j, colour[j]] = 1`` holds every nonzero of ``J`` exactly once per row:
``J[i, j] = B[i, colour[j]]`` ("direct recovery").

The colouring is the sequential greedy algorithm in natural column order
(Curtis, Powell & Reid, "On the estimation of sparse Jacobian matrices",
IMA J. Appl. Math. 13, 1974; Gebremedhin, Manne & Pothen, "What color is your
Jacobian? Graph coloring for computing derivatives", SIAM Review 47, 2005,
sec. 3 and Alg. 3.1 for partial distance-2 colouring).  It runs in
``O(sum over rows of nnz(row)^2)`` and is compiled with Numba because the
patterns of interest have up to millions of columns.  For a banded matrix
with bandwidth ``w`` it uses ``w`` colours (optimal).

Colouring the rows instead (the columns of ``J^T``) gives ``S^T J`` from reverse
passes; :mod:`symgrad.api.sparse` takes whichever needs fewer colours (a dense row
makes column colouring useless, a dense column makes row colouring useless).
Hessians use a greedy star colouring of their symmetric pattern when it needs fewer
colours than the column colouring (:func:`colour_symmetric`; GMP 2005, sec. 4), or, on
request, an acyclic colouring with recovery by substitution (:mod:`.acyclic`).
"""
from __future__ import annotations

import numba
import numpy as np

from .acyclic import colour_acyclic, substitute, substitution_plan

__all__ = ["colour_columns", "colour_symmetric", "Recovery"]


@numba.njit(cache=True)
def _greedy(col_ptr, col_rows, row_ptr, row_cols, n):  # pragma: no cover - compiled
    colour = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)  # forbidden[c] == j: colour c is taken near column j
    for j in range(n):
        for p in range(col_ptr[j], col_ptr[j + 1]):
            r = col_rows[p]
            for q in range(row_ptr[r], row_ptr[r + 1]):
                k = row_cols[q]
                if colour[k] >= 0:
                    forbidden[colour[k]] = j
        c = 0
        while forbidden[c] == j:
            c += 1
        colour[j] = c
    return colour


@numba.njit(cache=True)
def _greedy_star(ptr, adj, n):  # pragma: no cover - compiled
    """Greedy star colouring of the adjacency graph (diagonal entries ignored); GMP 2005, Alg. 4.1."""
    colour = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    for v in range(n):
        for p in range(ptr[v], ptr[v + 1]):
            w = adj[p]
            if w == v:
                continue
            if colour[w] >= 0:
                forbidden[colour[w]] = v
            for q in range(ptr[w], ptr[w + 1]):
                x = adj[q]
                if x == v or x == w or colour[x] < 0:
                    continue
                if colour[w] < 0:
                    forbidden[colour[x]] = v
                else:  # path v-w-x-y with colour(y) == colour(w): v must not take colour(x)
                    for r in range(ptr[x], ptr[x + 1]):
                        y = adj[r]
                        if y != w and y != x and colour[y] == colour[w]:
                            forbidden[colour[x]] = v
                            break
        c = 0
        while forbidden[c] == v:
            c += 1
        colour[v] = c
    return colour


STAR_WORK_LIMIT = 200_000_000  # sum of squared degrees beyond which the star colouring is not tried
SYMMETRIC = ("star", "acyclic")


def colour_symmetric(pattern, method: str = "star"):
    """Colouring of a symmetric pattern (a Hessian) and how to read each nonzero back.

    Tries a greedy star colouring, which uses symmetry: ``H[i, j]`` is read from row ``i`` of ``H S``
    at colour ``c(j)`` when ``j`` is the only neighbour of ``i`` with that colour, otherwise from row
    ``j`` at colour ``c(i)`` (Gebremedhin, Manne & Pothen, SIAM Review 47, 2005, sec. 4: star
    colouring, direct recovery).  An arrowhead pattern needs 2 colours this way instead of ``n``.
    The recovery condition is checked for every nonzero; where the star colouring is not tried
    (more work than :data:`STAR_WORK_LIMIT`), fails the check, or needs more colours, the
    distance-2 column colouring is used.

    ``method="acyclic"`` tries a greedy acyclic colouring instead (fewer or as many colours as a
    star colouring; :mod:`.acyclic`), read back by substitution along two-coloured trees; the plan
    is verified (every off-diagonal nonzero peeled) and the same fallbacks apply.

    Returns:
      (colours, recovery) with ``recovery`` a :class:`Recovery` reading ``(H S)^T``.
    Raises:
      ValueError: ``method`` is not ``"star"`` or ``"acyclic"``.
    """
    if method not in SYMMETRIC:
        raise ValueError(f"symmetric colouring must be one of {SYMMETRIC}; got {method!r}")
    csr = pattern.tocsr()
    csr.sort_indices()
    n = csr.shape[0]
    plain = colour_columns(csr)
    best = Recovery(csr, plain)
    deg = np.diff(csr.indptr).astype(np.float64)
    if n == 0 or float(deg @ deg) > STAR_WORK_LIMIT:
        return plain, best
    if method == "acyclic":
        colours = colour_acyclic(csr)
        by = "acyclic"
    else:
        colours = _greedy_star(csr.indptr.astype(np.int64), csr.indices.astype(np.int64), n)
        by = "symmetric"
    if colours.max() >= plain.max():
        return plain, best
    rec = Recovery(csr, colours, by=by)
    return (colours, rec) if rec.valid else (plain, best)


def colour_columns(pattern) -> np.ndarray:
    """Greedy distance-2 column colouring of a ``scipy.sparse`` pattern of shape (m, n).

    Returns:
      int64 array of shape (n,): the colour of each column, colours 0 .. ncolours - 1.
      Columns with a nonzero in a common row get different colours.
    """
    csr = pattern.tocsr()
    csc = pattern.tocsc()
    csr.sort_indices()
    csc.sort_indices()
    m, n = pattern.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return _greedy(csc.indptr.astype(np.int64), csc.indices.astype(np.int64),
                   csr.indptr.astype(np.int64), csr.indices.astype(np.int64), n)


def _count(uniq: np.ndarray, counts: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """How often each of ``keys`` occurs, given the sorted distinct keys ``uniq`` and their ``counts``."""
    if not len(uniq):
        return np.zeros(len(keys), dtype=np.int64)
    pos = np.clip(np.searchsorted(uniq, keys), 0, len(uniq) - 1)
    return np.where(uniq[pos] == keys, counts[pos], 0)


class Recovery:
    """Precomputed index arrays mapping a compressed product to CSR data.

    Args:
      pattern: scipy.sparse pattern (m, n).
      colours: column colours (``by="columns"``: ``B^T = (J S)^T`` of shape (ncolours, m), from
        forward passes) or row colours (``by="rows"``: ``S^T J`` of shape (ncolours, n), from
        reverse passes), from :func:`colour_columns` of ``pattern`` or of its transpose; for a
        symmetric pattern, a star colouring (``by="symmetric"``, direct recovery) or an acyclic one
        (``by="acyclic"``, recovery by substitution).  ``valid`` tells whether every nonzero can
        be read back.
    """

    def __init__(self, pattern, colours: np.ndarray, by: str = "columns"):
        if by not in ("columns", "rows", "symmetric", "acyclic"):
            raise ValueError(f"by must be 'columns', 'rows', 'symmetric' or 'acyclic'; got {by!r}")
        csr = pattern.tocsr()
        csr.sort_indices()
        self.shape, self.by = csr.shape, by
        self.indptr = csr.indptr.astype(np.int32 if csr.nnz < 2**31 else np.int64)
        self.indices = csr.indices.astype(self.indptr.dtype)
        self.colours = np.asarray(colours, dtype=np.int64)
        self.ncolours = int(self.colours.max()) + 1 if len(self.colours) else 0
        rows = np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))
        cols = csr.indices.astype(np.int64)
        # flat position of each nonzero in the C-ordered compressed array
        self.valid = True
        self.plan = None
        if by == "acyclic":  # substitution along two-coloured trees (see .acyclic)
            self.plan = substitution_plan(csr, self.colours)
            self.valid = self.plan is not None
            self.take = None
        elif by == "columns":
            self.take = self.colours[cols] * csr.shape[0] + rows
        elif by == "rows":
            self.take = self.colours[rows] * csr.shape[1] + cols
        else:  # star colouring of a symmetric pattern: read (i, j) in row i or, failing that, in row j
            nc = max(self.ncolours, 1)
            key_i = rows * nc + self.colours[cols]
            key_j = cols * nc + self.colours[rows]
            uniq, counts = np.unique(key_i, return_counts=True)
            in_row_i = _count(uniq, counts, key_i) == 1
            self.valid = bool(np.all(in_row_i | (_count(uniq, counts, key_j) == 1)))
            self.take = np.where(in_row_i, self.colours[cols] * csr.shape[0] + rows,
                                 self.colours[rows] * csr.shape[0] + cols)
        self.nnz = csr.nnz

    @property
    def seed_size(self) -> int:
        """Length of one seed vector: n for column colours, m for row colours."""
        return self.shape[0] if self.by == "rows" else self.shape[1]

    def seeds(self, dtype=np.float64) -> np.ndarray:
        """The seed matrix transposed, shape (ncolours, seed_size): row c is the indicator of colour c."""
        s = np.zeros((self.ncolours, self.seed_size), dtype=dtype)
        s[self.colours, np.arange(self.seed_size)] = 1
        return s

    def data(self, compressed: np.ndarray) -> np.ndarray:
        """CSR data from the compressed product (C order, ncolours leading)."""
        if self.by == "acyclic":
            return substitute(self.plan, np.asarray(compressed).reshape(self.ncolours, self.shape[0]), self.nnz)
        return np.ascontiguousarray(compressed).reshape(-1)[self.take]
