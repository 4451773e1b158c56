"""Sparse Jacobians and Hessians of scalar-level programs, entry by entry from the graph (issue 17).

Programs written with scalar loops (``x[i]``, then ``np.stack``) get one graph node per structural
nonzero (``symgrad/transforms/entries.py``), with no colouring.  References are independent of that
path: dense symgrad (forward/reverse with an identity seed), central finite differences of the
numpy function, the colouring path, and the nonzeros of JAX's (x64) Jacobians of the same source.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import symgrad as sg
from symgrad.trace.trace import trace_program
from symgrad.transforms.entries import jacobian_entries, scalar_program


def need_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


# -- programs written once, run with numpy (symgrad) and jax.numpy (reference) --------------------------

def broyden_loop(m):
    """Broyden tridiagonal function (Moré, Garbow & Hillstrom 1981, problem 30), one row per iteration."""
    def f(x):
        n = x.shape[0]
        out = []
        for i in range(n):
            v = (3.0 - 2.0 * x[i]) * x[i] + 1.0
            if i > 0:
                v = v - x[i - 1]
            if i < n - 1:
                v = v - 2.0 * x[i + 1]
            out.append(v)
        return m.stack(out)
    return f


def rosenbrock_loop(m):
    def f(x):
        s = 0.0
        for i in range(x.shape[0] - 1):
            s = s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
        return s
    return f


# A toy mechanism written as examples/grimech.py writes GRI-Mech: (reactants, products, kf, kr, third body)
REACTIONS = [([(0, 1), (1, 1)], [(2, 1)], 2.0, 0.3, False),
             ([(2, 2)], [(3, 1), (0, 1)], 0.7, 0.0, False),
             ([(0, 1), (4, 1)], [(5, 1)], 1.5, 0.2, True),   # + M: every species collides
             ([(5, 1)], [(1, 1), (4, 1)], 0.4, 0.1, False)]
EFFICIENCY = [1.0, 2.5, 1.0, 0.0, 1.0, 1.2]  # species 3 does not collide


def kinetics(m):
    def wdot(c):
        n = c.shape[0]
        w = [0.0] * n
        for reactants, products, kf, kr, third_body in REACTIONS:
            fwd, rev = kf, kr
            for k, nu in reactants:
                fwd = fwd * c[k] ** nu if nu != 1 else fwd * c[k]
            for k, nu in products:
                rev = rev * c[k] ** nu if nu != 1 else rev * c[k]
            rop = fwd - rev
            if third_body:
                mix = 0.0
                for k in range(n):
                    if EFFICIENCY[k] != 0.0:
                        mix = mix + EFFICIENCY[k] * c[k]
                rop = rop * mix
            for k, nu in reactants:
                w[k] = w[k] - nu * rop
            for k, nu in products:
                w[k] = w[k] + nu * rop
        return m.stack(w)
    return wdot


def central_differences(f, x, h=1e-6):
    """Column j = (f(x + h_j e_j) - f(x - h_j e_j)) / (2 h_j), h_j = h max(1, |x_j|)."""
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h * max(1.0, abs(x[j]))
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * e[j]))
    return np.stack(cols, axis=-1)


def jax_nonzeros(jac_fn, points):
    out = None
    for p in points:
        nz = np.asarray(jac_fn(p)) != 0
        out = nz if out is None else (out | nz)
    return out


# -- Jacobians ------------------------------------------------------------------------------------------

def test_loop_broyden_goes_direct_and_matches_dense_and_fd(rng):
    n = 12
    x = rng.uniform(-1, 1, n)
    f = broyden_loop(np)
    jac = sg.jacobian(f, sparse=True, stabilize=False)
    assert jac.info(x) == {"shape": (n, n), "nnz": 3 * n - 2, "ncolours": 0, "mode": "direct"}
    j = jac(x)
    assert isinstance(j, sp.csr_array) and j.has_canonical_format
    np.testing.assert_allclose(j.toarray(), sg.jacobian(f, stabilize=False)(x), rtol=1e-15, atol=0)
    np.testing.assert_allclose(j.toarray(), central_differences(f, x), rtol=1e-8, atol=1e-8)
    coloured = sg.jacobian(f, sparse=True, method="colouring", stabilize=False)
    assert coloured.info(x)["mode"] == "jvp" and coloured.info(x)["ncolours"] == 3
    np.testing.assert_array_equal(coloured(x).toarray(), j.toarray())
    assert (j != 0).toarray().sum() == 3 * n - 2  # the constants -1 and -2 are stored, not dropped


def test_loop_broyden_pattern_equals_jax_nonzeros(rng):
    jax = need_jax()
    n = 9
    pattern = sg.jacobian(broyden_loop(np), sparse=True, stabilize=False).pattern(np.zeros(n)).toarray()
    seen = jax_nonzeros(jax.jit(jax.jacfwd(broyden_loop(jax.numpy))), rng.uniform(-1, 1, (3, n)))
    np.testing.assert_array_equal(pattern, seen)
    np.testing.assert_array_equal(pattern, sg.jacobian_sparsity(broyden_loop(np), np.zeros(n)).toarray())


def test_kinetics_forward_and_reverse_variants_agree(rng):
    """A third-body sum makes some rows dense: the forward variant carries up to n columns per node,
    the reverse variant up to n rows; both give the same nodes' values and the same pattern."""
    c = rng.uniform(0.1, 2.0, 6)
    p = trace_program(kinetics(np), (c,), [(6,)])
    scalar, why = scalar_program(p.graph, p.inputs[0], p.outputs[0])
    assert scalar is not None, why
    fwd, _ = jacobian_entries(p.graph, scalar, 6, "forward")
    rev, _ = jacobian_entries(p.graph, scalar, 6, "reverse")
    np.testing.assert_array_equal(fwd.indptr, rev.indptr)
    np.testing.assert_array_equal(fwd.indices, rev.indices)
    jac = sg.jacobian(kinetics(np), sparse=True, stabilize=False)
    assert jac.info(c)["mode"] == "direct"
    j = jac(c)
    np.testing.assert_array_equal(np.diff(j.indptr), np.diff(fwd.indptr))
    dense = sg.jacobian(kinetics(np), stabilize=False)(c)
    np.testing.assert_allclose(j.toarray(), dense, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(j.toarray(), central_differences(kinetics(np), c), rtol=1e-7, atol=1e-8)


def test_kinetics_pattern_equals_jax_nonzeros(rng):
    jax = need_jax()
    pattern = sg.jacobian_sparsity(kinetics(np), np.ones(6)).toarray()
    direct = sg.jacobian(kinetics(np), sparse=True, stabilize=False).pattern(np.ones(6)).toarray()
    seen = jax_nonzeros(jax.jit(jax.jacfwd(kinetics(jax.numpy))), rng.uniform(0.1, 2.0, (3, 6)))
    np.testing.assert_array_equal(direct, pattern)
    # structural, not numerical: the irreversible reaction's 0.0 * c[3] * c[0] keeps (3, 0), as
    # sg.jacobian_sparsity does (x * 0 is not folded in user code: it is NaN for x = inf)
    extra = direct & ~seen
    assert not (seen & ~direct).any() and list(zip(*np.nonzero(extra))) == [(3, 0)]
    # the +M reaction couples its species to every collider; species 3 never collides and is only
    # produced irreversibly, so its column is empty
    assert direct[0, [0, 1, 2, 4, 5]].all() and not direct[:, 3].any()


def test_where_stop_gradient_leaves_and_constants():
    """Both branches of a scalar where; stop_gradient cuts a path; an output that is an element
    of x (entry exactly 1), a linear entry (a constant) and a row independent of x (empty)."""
    def f(x):
        return np.stack([np.where(x[0] > 0.0, x[1] * x[2], x[3]),
                         x[4] * sg.stop_gradient(x[0]) + 2.0 * x[1],
                         x[2],
                         np.float64(3.0) + 0.0 * np.sum(np.zeros(2))])

    jac = sg.jacobian(f, sparse=True, stabilize=False)
    x = np.array([0.5, 2.0, -3.0, 4.0, 5.0])
    expected = np.zeros((4, 5), dtype=bool)
    expected[0, [1, 2, 3]] = expected[1, [1, 4]] = expected[2, 2] = True
    np.testing.assert_array_equal(jac.pattern(x).toarray(), expected)
    assert jac.info(x)["mode"] == "direct"
    for point in (x, x * np.array([-1, 1, 1, 1, 1])):
        j = jac(point).toarray()
        np.testing.assert_array_equal(j, sg.jacobian(f, stabilize=False)(point))
    j = jac(x).toarray()
    assert j[1, 1] == 2.0 and j[1, 4] == 0.5 and j[2, 2] == 1.0 and j[0, 3] == 0.0


def test_linear_program_is_all_constants():
    def f(x):
        return np.stack([x[0] + 2.0 * x[1], -x[2], x[0] - x[2]])

    jac = sg.jacobian(f, sparse=True, stabilize=False)
    j = jac(np.zeros(3))
    np.testing.assert_array_equal(j.toarray(), [[1.0, 2.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, -1.0]])
    batched = sg.jacobian(f, signature="(n)->(m)", sparse=True, stabilize=False)(np.zeros((2, 3)))
    assert len(batched) == 2 and all((b != j).nnz == 0 for b in batched)


def test_float32_and_batches(rng):
    f = broyden_loop(np)
    xs = rng.uniform(-1, 1, (2, 3, 7))
    jac = sg.jacobian(f, signature="(n)->(n)", sparse=True, stabilize=False)
    mats = jac(xs)
    assert isinstance(mats, list) and len(mats) == 6
    dense = sg.jacobian(f, signature="(n)->(n)", stabilize=False)(xs).reshape(6, 7, 7)
    for b in range(6):
        np.testing.assert_allclose(mats[b].toarray(), dense[b], rtol=1e-15, atol=0)
    j32 = jac(xs[0, 0].astype(np.float32))
    assert j32.dtype == np.float32
    np.testing.assert_allclose(j32.toarray(), mats[0].toarray(), rtol=1e-6, atol=1e-6)


def test_array_level_programs_keep_colouring():
    def broyden(x):
        xp = np.concatenate((np.zeros(1), x[:-1]))
        xn = np.concatenate((x[1:], np.zeros(1)))
        return (3.0 - 2.0 * x) * x - xp - 2.0 * xn + 1.0

    assert sg.jacobian(broyden, sparse=True, stabilize=False).info(np.zeros(10))["mode"] == "jvp"
    with pytest.raises(ValueError, match=r"not scalar-level: it has 'mul' of shape \(10,\)"):
        sg.jacobian(broyden, sparse=True, method="direct").plan(np.zeros(10))
    with pytest.raises(ValueError, match="unknown method"):
        sg.jacobian(broyden, sparse=True, method="greedy")


# -- Hessians -------------------------------------------------------------------------------------------

def test_loop_rosenbrock_hessian_direct(rng):
    n = 10
    x = rng.uniform(-1, 2, n)
    f = rosenbrock_loop(np)
    hess = sg.hessian(f, sparse=True, stabilize=False)
    assert hess.info(x) == {"shape": (n, n), "nnz": 3 * n - 2, "ncolours": 0, "mode": "direct"}
    h = hess(x)
    assert (h != h.T).nnz == 0  # exactly symmetric: (i, j) and (j, i) read one node
    dense = sg.hessian(f, stabilize=False)(x)
    np.testing.assert_allclose(h.toarray(), dense, rtol=1e-14, atol=1e-12)
    grad = sg.grad(f, stabilize=False)
    np.testing.assert_allclose(h.toarray(), central_differences(grad, x), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(sg.hessian(f, sparse=True, method="colouring", stabilize=False)(x).toarray(),
                               h.toarray(), rtol=1e-14, atol=1e-12)


def test_hessian_pattern_equals_jax_nonzeros(rng):
    jax = need_jax()

    def g(m):
        def f(x):  # a product of neighbours, a cube, an arrowhead coupling through x[0], a linear term
            s = 0.0
            for i in range(x.shape[0] - 1):
                s = s + x[i] * x[i + 1] + m.sin(x[i]) ** 3
            for i in range(3, x.shape[0]):
                s = s + x[0] * x[i] + 2.0 * x[i]
            return s
        return f

    n = 7
    direct = sg.hessian(g(np), sparse=True, stabilize=False)
    assert direct.info(np.zeros(n))["mode"] == "direct"
    pattern = direct.pattern(np.zeros(n)).toarray()
    seen = jax_nonzeros(jax.jit(jax.hessian(g(jax.numpy))), rng.standard_normal((3, n)))
    np.testing.assert_array_equal(pattern, seen)
    np.testing.assert_array_equal(pattern, sg.hessian_sparsity(g(np), np.zeros(n)).toarray())
    x = rng.standard_normal(n)
    np.testing.assert_allclose(direct(x).toarray(), np.asarray(jax.hessian(g(jax.numpy))(x)), rtol=1e-13,
                               atol=1e-13)


# -- slow: GRI-Mech 3.0 (python -m pytest -m slow; the kernel takes about 40 s to compile) ---------------

@pytest.mark.slow
def test_grimech_sparse_jacobian_direct():
    ct = pytest.importorskip("cantera")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    from grimech import Mechanism, make_rhs

    gas = ct.Solution("gri30.yaml")
    gas.TPX = 1500.0, 101325.0, "CH4:1, O2:2, N2:7.52"
    wdot = make_rhs(Mechanism(gas))
    c = gas.concentrations * (1 + 0.1 * np.random.default_rng(0).random(gas.n_species)) + 1e-9
    jac = sg.jacobian(wdot, sparse=True, stabilize=False)
    info = jac.info(c)
    assert info["mode"] == "direct" and info["nnz"] == jac.pattern(c).nnz
    j = jac(c).toarray()
    fd = central_differences(wdot, c, h=1e-6)
    scale = np.abs(j).max()
    assert np.abs(j - fd).max() / scale < 1e-6
    gas.TP = 1500.0, 101325.0
    gas.concentrations = c
    gas.derivative_settings = {"skip-third-bodies": False, "skip-falloff": False}
    ddc = gas.net_production_rates_ddCi
    ddc = ddc.toarray() if hasattr(ddc, "toarray") else np.asarray(ddc)
    assert np.abs(j - ddc).max() / scale < 1e-8
    assert not (np.abs(fd) > 1e-9 * scale)[~jac.pattern(c).toarray()].any()  # nothing outside the pattern
