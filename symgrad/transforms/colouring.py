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
Hessians use the column colouring of their (symmetric) pattern with direct
recovery: exact, though a star colouring (GMP 2005, sec. 4) could use fewer
colours for some patterns.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["colour_columns", "Recovery"]


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


class Recovery:
    """Precomputed index arrays mapping a compressed product to CSR data.

    Args:
      pattern: scipy.sparse pattern (m, n).
      colours: column colours (``by="columns"``: ``B^T = (J S)^T`` of shape (ncolours, m), from
        forward passes) or row colours (``by="rows"``: ``S^T J`` of shape (ncolours, n), from
        reverse passes), from :func:`colour_columns` of ``pattern`` or of its transpose.
    """

    def __init__(self, pattern, colours: np.ndarray, by: str = "columns"):
        if by not in ("columns", "rows"):
            raise ValueError(f"by must be 'columns' or 'rows'; got {by!r}")
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
        if by == "columns":
            self.take = self.colours[cols] * csr.shape[0] + rows
        else:
            self.take = self.colours[rows] * csr.shape[1] + cols
        self.nnz = csr.nnz

    @property
    def seed_size(self) -> int:
        """Length of one seed vector: n for column colours, m for row colours."""
        return self.shape[1] if self.by == "columns" else self.shape[0]

    def seeds(self, dtype=np.float64) -> np.ndarray:
        """The seed matrix transposed, shape (ncolours, seed_size): row c is the indicator of colour c."""
        s = np.zeros((self.ncolours, self.seed_size), dtype=dtype)
        s[self.colours, np.arange(self.seed_size)] = 1
        return s

    def data(self, compressed: np.ndarray) -> np.ndarray:
        """CSR data from the compressed product (C order, ncolours leading)."""
        return np.ascontiguousarray(compressed).reshape(-1)[self.take]
