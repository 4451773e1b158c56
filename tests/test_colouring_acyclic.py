"""Acyclic colouring of Hessian patterns with recovery by substitution (issue 17, point 1).

The colouring is checked against its definition (distance-1, every two-colour subgraph a forest,
counted with SciPy's connected components), the recovery against the matrix it was applied to,
and the API's sparse Hessians against dense symgrad Hessians and the star colouring.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import symgrad as sg
from symgrad.transforms.acyclic import colour_acyclic
from symgrad.transforms.colouring import Recovery, colour_symmetric


def is_acyclic_colouring(pattern, colours) -> bool:
    """Distance-1, and the subgraph of any two colour classes has #edges = #vertices - #components."""
    a = sp.coo_array(pattern)
    off = a.row != a.col
    rows, cols = a.row[off], a.col[off]
    if np.any(colours[rows] == colours[cols]):
        return False
    nc = colours.max() + 1
    for c in range(nc):
        for d in range(c + 1, nc):
            keep = np.isin(colours[rows], (c, d)) & np.isin(colours[cols], (c, d))
            verts = np.flatnonzero(np.isin(colours, (c, d)))
            if not keep.any():
                continue
            sub = sp.coo_array((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=pattern.shape).tocsr()
            sub = sub[verts][:, verts]
            ncomp, _ = connected_components(sub, directed=False)
            if sub.nnz // 2 != len(verts) - ncomp:
                return False
    return True


def random_symmetric(n, density, rng):
    a = sp.random_array((n, n), density=density, rng=rng, format="csr")
    h = (a + a.T + sp.eye_array(n)).tocsr()
    h.sort_indices()
    return h


def grid_pattern(n):
    t = sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1])
    i = sp.eye_array(n)
    return ((sp.kron(i, t) + sp.kron(t, i)).tocsr() != 0)


@pytest.mark.parametrize("density", [0.02, 0.1, 0.3])
def test_acyclic_colouring_and_substitution_recover_random_matrices(density, rng):
    n = 80
    h = random_symmetric(n, density, rng)
    colours = colour_acyclic(h != 0)
    assert is_acyclic_colouring(h != 0, colours)
    got, rec = colour_symmetric(h != 0, "acyclic")
    assert rec.valid and rec.by == "acyclic"
    star, _ = colour_symmetric(h != 0, "star")
    assert rec.ncolours <= star.max() + 1
    s = np.zeros((n, rec.ncolours))
    s[np.arange(n), got] = 1.0
    np.testing.assert_allclose(rec.data((h @ s).T), h.data, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pattern, star_colours, acyclic_colours", [
    (sp.diags_array([np.ones(99), np.ones(100), np.ones(99)], offsets=[-1, 0, 1]).tocsr() != 0, 3, 2),  # a path
    (grid_pattern(12), 6, 4),  # 5-point stencil
], ids=["tridiagonal", "grid"])
def test_fewer_colours_than_star(pattern, star_colours, acyclic_colours, rng):
    star, _ = colour_symmetric(pattern, "star")
    colours, rec = colour_symmetric(pattern, "acyclic")
    assert star.max() + 1 == star_colours and rec.ncolours == acyclic_colours and rec.by == "acyclic"
    assert is_acyclic_colouring(pattern, colours)
    h = sp.csr_array(pattern, dtype=float)
    h.data = rng.standard_normal(h.nnz)
    h = (h + h.T).tocsr()
    h.sort_indices()
    n = h.shape[0]
    s = np.zeros((n, rec.ncolours))
    s[np.arange(n), colours] = 1.0
    np.testing.assert_allclose(rec.data((h @ s).T), h.data, rtol=1e-12, atol=1e-12)


def test_two_coloured_cycle_is_rejected():
    """A 4-cycle coloured 0, 1, 0, 1 is distance-1 but not acyclic: substitution cannot start."""
    cycle = sp.csr_array(np.array([[1, 1, 0, 1], [1, 1, 1, 0], [0, 1, 1, 1], [1, 0, 1, 1]], dtype=bool))
    assert not Recovery(cycle, np.array([0, 1, 0, 1]), by="acyclic").valid
    colours, rec = colour_symmetric(cycle, "acyclic")
    assert rec.valid and is_acyclic_colouring(cycle, colours)
    assert not Recovery(cycle, np.array([0, 0, 1, 1]), by="acyclic").valid  # not even distance-1


def test_sparse_hessian_with_acyclic_colouring(rng):
    def f(x):  # chained Rosenbrock plus an arrowhead coupling through x[0]
        return (np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
                + x[0] * np.sum(np.sin(x[5:])))

    n = 30
    x = rng.uniform(-1, 2, n)
    acyclic = sg.hessian(f, sparse=True, colouring="acyclic", stabilize=False)
    star = sg.hessian(f, sparse=True, stabilize=False)
    assert acyclic.plan(x).recovery.by == "acyclic" and acyclic.info(x)["mode"] == "hvp"
    assert acyclic.info(x)["ncolours"] < star.info(x)["ncolours"]
    dense = sg.hessian(f, stabilize=False)(x)
    np.testing.assert_allclose(acyclic(x).toarray(), dense, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(star(x).toarray(), dense, rtol=1e-12, atol=1e-10)
    with pytest.raises(ValueError, match="unknown colouring"):
        sg.hessian(f, sparse=True, colouring="greedy")
