"""Sparse Jacobians and Hessians (issue 17): patterns read from the graph, values from colouring.

References are independent of symgrad: JAX in x64 (jacfwd / hessian) for values and for the
nonzeros at random points, hand-derived patterns for the structure rules, and SciPy's own
finite-difference paths (jac_sparsity) for the solver integrations.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import symgrad as sg
from symgrad.ir.ops import REGISTRY
from symgrad.transforms.colouring import colour_columns, colour_symmetric
from symgrad.transforms.sparsity import STRUCTURE

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


# -- programs written once, run with numpy (symgrad) and jax.numpy (reference) ---------------------

def broyden(m):
    """Broyden tridiagonal function (Moré, Garbow & Hillstrom 1981, problem 30)."""
    def f(x):
        xp = m.concatenate((m.zeros(1), x[:-1]))
        xn = m.concatenate((x[1:], m.zeros(1)))
        return (3.0 - 2.0 * x) * x - xp - 2.0 * xn + 1.0
    return f


def grid(m):
    """A 2-D stencil through reshape, transpose, slicing, where and a row sum."""
    def f(x):
        u = x.reshape(4, 5)
        lap = m.concatenate((u[1:] - u[:-1], u[:1] - u[-1:]), axis=0)
        v = m.where(u > 0.0, m.exp(lap), lap * u.T.reshape(4, 5))
        return m.concatenate((v.ravel(), m.sum(u * u, axis=1)))
    return f


def chained_rosenbrock(m):
    def f(x):
        return m.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return f


def mixed_hessian(m):
    """Products of neighbours, a cube, a global coupling through one element and a constant contraction."""
    a = np.diag(np.ones(6)) + np.diag(np.ones(5), 2)[:6, :6]
    def f(x):
        return (m.sum(x[:-1] * x[1:]) + m.sum(m.sin(x) ** 3) + x[0] * m.sum(x[3:])
                + m.sum((a @ x) ** 2))
    return f


def dense_nonzeros(jac_fn, n, rng, trials=3):
    """Union over random points of the entries where the JAX Jacobian is nonzero."""
    out = None
    for _ in range(trials):
        j = np.asarray(jax.jit(jac_fn)(jnp.asarray(rng.standard_normal(n)))) != 0
        out = j if out is None else (out | j)
    return out


# -- the table of structure rules -----------------------------------------------------------------

def test_every_op_has_a_structure_rule():
    missing = sorted(name for name, op in REGISTRY.items() if not op.elementwise and name not in STRUCTURE)
    assert not missing, f"ops without a sparsity rule in symgrad/transforms/sparsity.py: {missing}"


# -- patterns: exact against the nonzeros of JAX's dense Jacobian ---------------------------------------

@pytest.mark.parametrize("make, n", [(broyden, 12), (grid, 20)], ids=["broyden", "grid"])
def test_jacobian_pattern_is_exact(make, n, rng):
    pattern = sg.jacobian_sparsity(make(np), np.zeros(n))
    assert sp.issparse(pattern) and pattern.dtype == bool
    seen = dense_nonzeros(jax.jacfwd(make(jnp)), n, rng)
    dense_pattern = pattern.toarray()
    assert not (seen & ~dense_pattern).any(), "a nonzero of the Jacobian is missing from the pattern"
    if make is broyden:  # no where: every structural nonzero is nonzero at a random point
        assert (seen == dense_pattern).all()


def test_where_keeps_both_branches():
    pattern = sg.jacobian_sparsity(lambda x: np.where(x > 0, 2.0 * x[::-1], x ** 2), np.zeros(5)).toarray()
    assert (pattern == (np.eye(5, dtype=bool) | np.eye(5, dtype=bool)[::-1])).all()


@pytest.mark.parametrize("fn, expected", [
    (lambda x: np.exp(x) * np.sin(x), np.eye(5)),                                 # elementwise: diagonal
    (lambda x: x[1:] - x[:-1] ** 2, np.eye(5, k=1)[:4] + np.eye(5)[:4]),          # shifts
    (lambda x: np.sum(x) * x, np.ones((5, 5))),                                   # a sum: dense
    (lambda x: x * sg.stop_gradient(x[::-1]), np.eye(5)),                         # stop_gradient honoured
    (lambda x: (np.diag(np.ones(5)) + np.diag(np.ones(4), 1)) @ np.sin(x),        # banded constant matrix
     np.eye(5) + np.eye(5, k=1)),
    (lambda x: (x.reshape(2, 3).T * np.array([1.0, 0.0])).ravel(),               # transpose and a mask
     np.eye(6)[[0, 5, 1, 5, 2, 5]] * (np.arange(6) % 2 == 0)[:, None]),
    (lambda x: np.stack([x[0] * x[1], x[4]]), np.eye(5)[[0, 4]] + np.eye(5)[[1, 4]] * [[1], [0]]),
], ids=["elementwise", "shift", "sum", "stop_gradient", "banded_const", "transpose_mask", "stack"])
def test_structure_rules(fn, expected):
    got = sg.jacobian_sparsity(fn, np.zeros(expected.shape[1])).toarray()
    assert (got == (expected != 0)).all(), got.astype(int)


def test_custom_gradient_pattern_comes_from_grad_fn():
    @sg.custom_gradient
    def shifty(x):
        def grad_fn(u):  # x_bar[i] = u[i] + u[i-1]: J[i, i] and J[i-1, i], whatever the forward is
            return (u + np.concatenate((np.zeros(1), u[:-1])),)
        return x * 1.0, grad_fn

    got = sg.jacobian_sparsity(lambda x: 2.0 * shifty(x), np.zeros(5)).toarray()
    assert (got == ((np.eye(5) + np.eye(5, k=1)) != 0)).all()
    # the values come from the rule too (forward mode transposes grad_fn): J = 2 (I + superdiagonal)
    j = sg.jacobian(lambda x: 2.0 * shifty(x), sparse=True, stabilize=False)(np.linspace(0.0, 1.0, 5))
    np.testing.assert_array_equal(j.toarray(), 2.0 * (np.eye(5) + np.eye(5, k=1)))


def test_hessian_pattern_is_exact(rng):
    n = 6
    pattern = sg.hessian_sparsity(mixed_hessian(np), np.zeros(n), signature="(n)->()").toarray()
    seen = dense_nonzeros(jax.hessian(mixed_hessian(jnp)), n, rng)
    assert (pattern == seen).all(), (pattern.astype(int), seen.astype(int))
    linear_diag = sg.hessian_sparsity(lambda x: np.sum(x[:-1] * x[1:]) + np.sum(2.0 * x), np.zeros(4),
                                      signature="(n)->()").toarray()
    assert not linear_diag.diagonal().any()


# -- colouring ---------------------------------------------------------------------------------------

def test_colouring_is_valid_and_optimal_for_bands(rng):
    pattern = sp.random_array((60, 40), density=0.08, rng=rng, format="csr") != 0
    colours = colour_columns(pattern)
    dense = pattern.toarray()
    for c in range(colours.max() + 1):  # no row has two nonzeros of one colour
        assert dense[:, colours == c].sum(axis=1).max() <= 1
    band = sp.diags_array([np.ones(99), np.ones(100), np.ones(99), np.ones(98)], offsets=[-1, 0, 1, 2]) != 0
    assert colour_columns(band).max() + 1 == 4


@pytest.mark.parametrize("density", [0.02, 0.1, 0.3])
def test_symmetric_colouring_recovers_random_symmetric_matrices(density, rng):
    """Whatever colouring colour_symmetric picks, reading H S back gives exactly H's nonzeros."""
    n = 80
    a = sp.random_array((n, n), density=density, rng=rng, format="csr")
    h = (a + a.T + sp.eye_array(n)).tocsr()
    h.sort_indices()
    colours, rec = colour_symmetric(h != 0)
    assert rec.valid
    s = np.zeros((n, rec.ncolours))
    s[np.arange(n), colours] = 1.0
    np.testing.assert_allclose(rec.data((h @ s).T), h.data, rtol=1e-13, atol=1e-13)


def test_arrowhead_hessian_uses_star_colouring(rng):
    """x0 couples to every unknown: distance-2 colouring needs n colours, a star colouring 2."""
    def f(x):
        return x[0] * np.sum(np.sin(x[1:])) + np.sum(x ** 4)

    def f_jax(x):
        return x[0] * jnp.sum(jnp.sin(x[1:])) + jnp.sum(x ** 4)

    n = 9
    x = rng.standard_normal(n)
    hess = sg.hessian(f, sparse=True, stabilize=False)
    assert hess.info(x)["ncolours"] == 2 and colour_columns(hess.pattern(x)).max() + 1 == n
    np.testing.assert_allclose(hess(x).toarray(), np.asarray(jax.hessian(f_jax)(x)), rtol=1e-13, atol=1e-13)


# -- values: equal to JAX's dense Jacobian and Hessian ----------------------------------------------

def test_sparse_jacobian_values(rng):
    n = 40
    x = rng.standard_normal(n)
    jac = sg.jacobian(broyden(np), sparse=True, stabilize=False)  # shares its kernel with least_squares below
    j = jac(x)
    assert isinstance(j, sp.csr_array) and j.shape == (n, n)
    assert jac.info(x) == {"shape": (n, n), "nnz": 3 * n - 2, "ncolours": 3, "mode": "jvp"}
    np.testing.assert_allclose(j.toarray(), np.asarray(jax.jacfwd(broyden(jnp))(x)), rtol=1e-14, atol=1e-14)
    j32 = jac(x.astype(np.float32))
    assert j32.dtype == np.float32
    np.testing.assert_allclose(j32.toarray(), j.toarray(), rtol=1e-6, atol=1e-5)
    jm = sg.jacobian(broyden(np), sparse=True, format="csr_matrix", stabilize=False)(x)
    assert isinstance(jm, sp.csr_matrix)


def test_sparse_jacobian_batched_with_signature(rng):
    xs = rng.standard_normal((2, 3, 40))  # core size of test_sparse_jacobian_values: the same kernel
    mats = sg.jacobian(broyden(np), signature="(n)->(n)", sparse=True, stabilize=False)(xs)
    assert isinstance(mats, list) and len(mats) == 6
    ref = jax.jit(jax.jacfwd(broyden(jnp)))
    for b, x in enumerate(xs.reshape(6, 40)):
        np.testing.assert_allclose(mats[b].toarray(), np.asarray(ref(x)), rtol=1e-14, atol=1e-14)


def test_dense_row_uses_row_colours(rng):
    """A sum over all unknowns puts every column in one conflict: colour the rows, pull back once."""
    def f(x):
        return np.concatenate((np.sin(x[1:]) * x[:-1], np.sum(x ** 2, keepdims=True)))

    def f_jax(x):
        return jnp.concatenate((jnp.sin(x[1:]) * x[:-1], jnp.sum(x ** 2, keepdims=True)))

    x = rng.standard_normal(12)
    jac = sg.jacobian(f, sparse=True, stabilize=False)
    info = jac.info(x)
    assert info["mode"] == "vjp" and info["ncolours"] == 3 and colour_columns(jac.pattern(x)).max() + 1 == 12
    np.testing.assert_allclose(jac(x).toarray(), np.asarray(jax.jacfwd(f_jax)(x)), rtol=1e-14, atol=1e-14)


def test_sparse_jacobian_second_argument(rng):
    def f(t, x):
        return t * np.sin(x) + x[::-1]
    x = rng.standard_normal(7)
    j = sg.jacobian(f, argnums=1, sparse=True)(0.5, x)
    ref = jax.jacfwd(lambda t, x: t * jnp.sin(x) + x[::-1], argnums=1)(0.5, x)
    np.testing.assert_allclose(j.toarray(), np.asarray(ref), rtol=1e-14, atol=1e-14)


def test_sparse_hessian_values(rng):
    n = 40  # the size of the trust-constr test: one compiled kernel for both
    x = rng.standard_normal(n)
    hess = sg.hessian(chained_rosenbrock(np), signature="(n)->()", sparse=True, stabilize=False)
    h = hess(x)
    assert hess.info(x)["nnz"] == 3 * n - 2
    np.testing.assert_allclose(h.toarray(), np.asarray(jax.hessian(chained_rosenbrock(jnp))(x)),
                               rtol=1e-13, atol=1e-10)


# -- errors ----------------------------------------------------------------------------------------

def test_errors_are_typed():
    f = broyden(np)
    with pytest.raises(TypeError, match="argnums must be one int"):
        sg.jacobian_sparsity(f, np.zeros(3), argnums=(0,))
    with pytest.raises(TypeError, match="is a tuple, not an array"):
        sg.jacobian_sparsity(lambda p: p[0] * p[1], (np.zeros(2), np.zeros(2)))
    with pytest.raises(sg.SignatureError, match="returns 2 outputs"):
        sg.jacobian_sparsity(lambda x: (x, 2 * x), np.zeros(2))
    with pytest.raises(sg.SignatureError, match="not \\(\\)"):
        sg.hessian_sparsity(f, np.zeros(3))
    with pytest.raises(ValueError, match="unknown format"):
        sg.jacobian(f, sparse=True, format="coo")
    with pytest.raises(ValueError, match="out of range"):
        sg.jacobian_sparsity(f, np.zeros(3), argnums=2)


# -- SciPy's solvers take the sparse results as their docs expect ---------------------------------------

def _brusselator(n, a):
    def lap(w):
        return (np.concatenate((w[-1:], w[:-1]), axis=0) + np.concatenate((w[1:], w[:1]), axis=0)
                + np.concatenate((w[:, -1:], w[:, :-1]), axis=1) + np.concatenate((w[:, 1:], w[:, :1]), axis=1)
                - 4.0 * w)

    def rhs(t, y):
        u, v = y[:n * n].reshape(n, n), y[n * n:].reshape(n, n)
        uuv = u * u * v
        return np.concatenate(((1.0 + uuv - 4.4 * u + a * lap(u)).ravel(), (3.4 * u - uuv + a * lap(v)).ravel()))
    return rhs


@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_solve_ivp_with_sparse_jac(method):
    from scipy.integrate import solve_ivp

    n = 6
    rhs = _brusselator(n, 0.1 * n * n)
    x = np.arange(n) / n
    y0 = np.concatenate((np.repeat(22 * x * (1 - x) ** 1.5, n), np.tile(27 * x * (1 - x) ** 1.5, n)))
    jac = sg.jacobian(rhs, argnums=1, sparse=True, stabilize=False)
    pattern = jac.pattern(0.0, y0)
    assert pattern.nnz == 12 * n * n  # 5-point stencil in each species plus the u-v coupling
    opts = dict(rtol=1e-8, atol=1e-10)
    sym = solve_ivp(rhs, (0.0, 2.0), y0, method=method, jac=jac, **opts)
    fd = solve_ivp(rhs, (0.0, 2.0), y0, method=method, jac_sparsity=pattern, **opts)
    assert sym.success and fd.success and sym.njev >= 1
    np.testing.assert_allclose(sym.y[:, -1], fd.y[:, -1], rtol=1e-6)
    j = jac(0.7, y0)
    h, e = 1e-6, np.eye(2 * n * n)
    fd_cols = np.stack([(rhs(0.7, y0 + h * e[k]) - rhs(0.7, y0 - h * e[k])) / (2 * h) for k in range(2 * n * n)], 1)
    np.testing.assert_allclose(j.toarray(), fd_cols, rtol=1e-6, atol=1e-6)


def test_least_squares_lsmr_with_sparse_jac():
    from scipy.optimize import least_squares

    n = 40
    f = broyden(np)
    jac = sg.jacobian(f, sparse=True, stabilize=False)
    x0 = -np.ones(n)
    sym = least_squares(f, x0, jac=jac, tr_solver="lsmr", xtol=1e-14, ftol=1e-14, gtol=1e-14)
    fd = least_squares(f, x0, jac_sparsity=jac.pattern(x0), tr_solver="lsmr", xtol=1e-14, ftol=1e-14, gtol=1e-14)
    assert sym.success and sym.cost < 1e-20
    np.testing.assert_allclose(sym.x, fd.x, rtol=1e-8)
    assert sp.issparse(sym.jac)
    np.testing.assert_allclose(sym.jac.toarray(), np.asarray(jax.jacfwd(broyden(jnp))(sym.x)), rtol=1e-12, atol=1e-12)


def test_trust_constr_with_sparse_hessian():
    from scipy.optimize import minimize

    n = 40
    f = chained_rosenbrock(np)
    grad = sg.grad(f, signature="(n)->()", stabilize=False)
    hess = sg.hessian(f, signature="(n)->()", sparse=True, stabilize=False)
    x0 = np.full(n, -0.5)
    opts = dict(gtol=1e-10, xtol=1e-14, maxiter=2000)
    with_h = minimize(f, x0, jac=grad, hess=hess, method="trust-constr", options=opts)
    with_p = minimize(f, x0, jac=grad, hessp=lambda x, p: hess(x) @ p, method="trust-constr", options=opts)
    hvp = jax.jit(lambda x, p: jax.jvp(jax.grad(chained_rosenbrock(jnp)), (x,), (p,))[1])
    with_jax = minimize(f, x0, jac=grad, hessp=lambda x, p: np.asarray(hvp(x, np.asarray(p, float))), method="trust-constr",
                        options=opts)
    assert with_h.status in (1, 2) and with_jax.status in (1, 2)
    np.testing.assert_allclose(with_h.x, np.ones(n), atol=1e-7)
    np.testing.assert_allclose(with_h.x, with_jax.x, atol=1e-7)
    np.testing.assert_allclose(with_p.x, with_h.x, atol=1e-7)


# -- slow: the sizes (python -m pytest -m slow) -------------------------------------------------

@pytest.mark.slow
def test_brusselator_n32_bdf_matches_finite_differences():
    from scipy.integrate import solve_ivp

    n = 32
    rhs = _brusselator(n, 0.1 * n * n)
    x = np.arange(n) / n
    y0 = np.concatenate((np.repeat(22 * x * (1 - x) ** 1.5, n), np.tile(27 * x * (1 - x) ** 1.5, n)))
    jac = sg.jacobian(rhs, argnums=1, sparse=True, stabilize=False)
    opts = dict(rtol=1e-8, atol=1e-10)
    sym = solve_ivp(rhs, (0.0, 11.5), y0, method="BDF", jac=jac, **opts)
    fd = solve_ivp(rhs, (0.0, 11.5), y0, method="BDF", jac_sparsity=jac.pattern(0.0, y0), **opts)
    assert sym.success and fd.success
    np.testing.assert_allclose(sym.y[:, -1], fd.y[:, -1], rtol=1e-6)


@pytest.mark.slow
def test_broyden_million_pattern_and_values():
    n = 10**6
    x = np.random.default_rng(3).uniform(-1, 1, n)
    jac = sg.jacobian(broyden(np), sparse=True, stabilize=False)
    assert jac.info(x) == {"shape": (n, n), "nnz": 3 * n - 2, "ncolours": 3, "mode": "jvp"}
    j = jac(x)
    np.testing.assert_allclose(j.diagonal(), 3.0 - 4.0 * x, rtol=1e-15)
    np.testing.assert_array_equal(j.diagonal(1), -2.0 * np.ones(n - 1))
    np.testing.assert_array_equal(j.diagonal(-1), -np.ones(n - 1))
