"""symgrad on real problems, checked against independent references.

1. Rosenbrock (n = 1000): gradient, Hessian-vector product and Hessian vs SciPy.
2. Logistic regression on scikit-learn's breast-cancer data (raw features):
   summed per-sample gradient vs a hand-written NumPy gradient; no overflow at
   logits of +-1e3; L-BFGS-B with symgrad's gradient reaches the same optimum.
3. Robertson's stiff kinetics: symgrad.jacobian as ``jac=`` for BDF.

The traced functions are spelled exactly as in ``examples/main_job.py`` so the
example subprocess can reuse the compiled artifacts from the shared cache.
"""
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import minimize, rosen_der, rosen_hess, rosen_hess_prod
from scipy.special import expit
from sklearn.datasets import load_breast_cancer

import symgrad as sg


# --------------------------------------------------------------------------------------------
# 1. Rosenbrock
# --------------------------------------------------------------------------------------------

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


N_ROSEN = 1000
ROSEN_SIG = "(n)->()"
rosen_grad = sg.grad(rosenbrock, signature=ROSEN_SIG)
rosen_hessian = sg.hessian(rosenbrock, signature=ROSEN_SIG)


def _assert_close(actual, desired, rtol=1e-12):
    """assert_allclose with an absolute floor scaled to the reference's magnitude."""
    desired = np.asarray(desired)
    scale = max(1.0, float(np.max(np.abs(desired))))
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=rtol * scale)


@pytest.fixture(scope="module")
def rosen_points():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, N_ROSEN)
    v = rng.standard_normal(N_ROSEN)
    xb = rng.uniform(-2.0, 2.0, (3, N_ROSEN))
    vb = rng.standard_normal((3, N_ROSEN))
    return x, v, xb, vb


def test_rosenbrock_gradient_matches_scipy(rosen_points):
    x, _, _, _ = rosen_points
    g = rosen_grad(x)
    assert g.shape == (N_ROSEN,) and g.dtype == np.float64
    _assert_close(g, rosen_der(x))


def test_rosenbrock_hvp_matches_scipy(rosen_points):
    x, v, _, _ = rosen_points
    hv = sg.hvp(rosenbrock, (x,), (v,), signature=ROSEN_SIG)
    assert hv.shape == (N_ROSEN,)
    _assert_close(hv, rosen_hess_prod(x, v))


def test_rosenbrock_hessian_matches_scipy(rosen_points):
    x, _, _, _ = rosen_points
    H = rosen_hessian(x)
    assert H.shape == (N_ROSEN, N_ROSEN)
    _assert_close(H, rosen_hess(x))
    np.testing.assert_array_equal(H, H.T)  # symmetric by construction, to the bit


def test_rosenbrock_batch_of_three(rosen_points):
    _, _, xb, vb = rosen_points
    g = rosen_grad(xb)
    hv = sg.hvp(rosenbrock, (xb,), (vb,), signature=ROSEN_SIG)
    H = rosen_hessian(xb)
    assert g.shape == (3, N_ROSEN) and hv.shape == (3, N_ROSEN) and H.shape == (3, N_ROSEN, N_ROSEN)
    for k in range(3):
        _assert_close(g[k], rosen_der(xb[k]))
        _assert_close(hv[k], rosen_hess_prod(xb[k], vb[k]))
        _assert_close(H[k], rosen_hess(xb[k]))


def test_rosenbrock_gradient_zero_at_minimum():
    # At the global minimum x = 1 every term vanishes exactly: the gradient is exactly 0.
    np.testing.assert_array_equal(rosen_grad(np.ones(N_ROSEN)), np.zeros(N_ROSEN))


# --------------------------------------------------------------------------------------------
# 2. Logistic regression on breast-cancer data (raw, unstandardised features)
# --------------------------------------------------------------------------------------------

def logistic_loss(x, w, b, y):
    """Per-sample loss log(1 + exp(-y (x.w + b))), labels y in {-1, +1}."""
    return np.logaddexp(0.0, -y * (x @ w + b))


LOGREG_SIG = "(d),(d),(),()->()"
logreg_loss = sg.jit(logistic_loss, signature=LOGREG_SIG)
logreg_grad = sg.grad(logistic_loss, argnums=(1, 2), signature=LOGREG_SIG)


@pytest.fixture(scope="module")
def cancer():
    X, labels = load_breast_cancer(return_X_y=True)
    return X, 2.0 * labels - 1.0


def _np_loss(X, y, w, b):
    return np.logaddexp(0.0, -y * (X @ w + b))


def _np_grad(X, y, w, b):
    """Hand-written gradient of sum_i log(1 + exp(-y_i z_i)): r_i = -y_i sigmoid(-y_i z_i)."""
    r = -y * expit(-y * (X @ w + b))
    return X.T @ r, r.sum()


def test_logistic_gradient_matches_handwritten(cancer):
    X, y = cancer
    rng = np.random.default_rng(1)
    for _ in range(5):
        w = rng.standard_normal(X.shape[1]) * 1e-3
        b = float(rng.standard_normal())
        gw, gb = logreg_grad(X, w, b, y)
        assert gw.shape == X.shape and np.shape(gb) == (X.shape[0],)
        ref_w, ref_b = _np_grad(X, y, w, b)
        np.testing.assert_allclose(gw.sum(axis=0), ref_w, rtol=1e-10, atol=1e-10 * np.max(np.abs(ref_w)))
        np.testing.assert_allclose(gb.sum(), ref_b, rtol=1e-10, atol=1e-10 * np.abs(ref_b))
        np.testing.assert_allclose(logreg_loss(X, w, b, y), _np_loss(X, y, w, b), rtol=1e-12)


def test_logistic_no_overflow_at_large_logits(cancer):
    X, y = cancer
    rng = np.random.default_rng(2)
    d = rng.standard_normal(X.shape[1])
    z = X @ d
    w = d * (1e3 / np.max(np.abs(z)))  # logits now reach +-1e3
    logits = X @ w
    assert np.max(np.abs(logits)) == pytest.approx(1e3)
    margins = -y * logits
    assert np.min(margins) < -300 and np.max(margins) > 300  # both tails of the loss are exercised
    loss = logreg_loss(X, w, 0.0, y)
    gw, gb = logreg_grad(X, w, 0.0, y)
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(gw)) and np.all(np.isfinite(gb))
    np.testing.assert_allclose(loss, _np_loss(X, y, w, 0.0), rtol=1e-12)
    m = -y * logits
    r = -y * expit(m)
    np.testing.assert_allclose(gb, r, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(gw, r[:, None] * X, rtol=1e-12, atol=1e-300)
    # Saturated samples: loss ~ margin and d/db = -y exactly when the margin is huge.
    big = m > 100
    assert big.any()
    np.testing.assert_allclose(loss[big], m[big], rtol=1e-15)
    np.testing.assert_array_equal(gb[big], -y[big])


def test_lbfgsb_with_symgrad_gradient_reaches_same_optimum(cancer):
    """L-BFGS-B driven by symgrad's gradient finds the same optimum as the hand-written one.

    The breast-cancer data are linearly separable, so the plain loss has no finite
    minimiser; a small ridge term (computed in NumPy, identical in both runs)
    makes the optimum unique.  A fixed diagonal change of variables w = u / s
    (s = column max) keeps L-BFGS-B's iteration count modest on raw features;
    the loss values are those of the raw-feature model.
    """
    X, y = cancer
    s = np.max(np.abs(X), axis=0)
    lam = 1e-2

    def obj_sg(u):
        w = u[:-1] / s
        return float(np.sum(logreg_loss(X, w, u[-1], y))) + 0.5 * lam * float(u @ u)

    def jac_sg(u):
        gw, gb = logreg_grad(X, u[:-1] / s, u[-1], y)
        return np.append(gw.sum(axis=0) / s, gb.sum()) + lam * u

    def obj_np(u):
        return float(np.sum(_np_loss(X, y, u[:-1] / s, u[-1]))) + 0.5 * lam * float(u @ u)

    def jac_np(u):
        gw, gb = _np_grad(X, y, u[:-1] / s, u[-1])
        return np.append(gw / s, gb) + lam * u

    u0 = np.zeros(X.shape[1] + 1)
    opts = dict(ftol=1e-13, gtol=1e-8, maxiter=5000)
    res_sg = minimize(obj_sg, u0, method="L-BFGS-B", jac=jac_sg, options=opts)
    res_np = minimize(obj_np, u0, method="L-BFGS-B", jac=jac_np, options=opts)
    assert res_sg.success and res_np.success, (res_sg.message, res_np.message)
    assert res_sg.fun < 0.5 * obj_np(u0)  # it actually optimised
    np.testing.assert_allclose(res_sg.fun, res_np.fun, rtol=1e-6)
    # and the gradient at symgrad's optimum is small according to the hand-written gradient
    assert np.max(np.abs(jac_np(res_sg.x))) < 1e-4 * res_sg.fun


def test_lbfgsb_raw_parameters_short_run_same_trajectory(cancer):
    """On the raw parametrisation, the first iterations follow the hand-written gradient's path."""
    X, y = cancer

    def obj(theta):
        return float(np.sum(logreg_loss(X, theta[:-1], theta[-1], y)))

    def jac_sg(theta):
        gw, gb = logreg_grad(X, theta[:-1], theta[-1], y)
        return np.append(gw.sum(axis=0), gb.sum())

    def jac_np(theta):
        gw, gb = _np_grad(X, y, theta[:-1], theta[-1])
        return np.append(gw, gb)

    opts = dict(maxiter=15)
    a = minimize(obj, np.zeros(31), method="L-BFGS-B", jac=jac_sg, options=opts)
    b = minimize(obj, np.zeros(31), method="L-BFGS-B", jac=jac_np, options=opts)
    assert a.nit == b.nit
    np.testing.assert_allclose(a.fun, b.fun, rtol=1e-6)
    assert a.fun < obj(np.zeros(31))


# --------------------------------------------------------------------------------------------
# 3. Robertson stiff kinetics
# --------------------------------------------------------------------------------------------

def robertson(t, y):
    k1, k2, k3 = 0.04, 3e7, 1e4
    return np.array([-k1 * y[0] + k3 * y[1] * y[2],
                     k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
                     k2 * y[1] ** 2])


ROB_SIG = "(),(3)->(3)"
rob_rhs = sg.jit(robertson, signature=ROB_SIG)
rob_jac = sg.jacobian(robertson, argnums=1, signature=ROB_SIG)


def _robertson_np(t, y):
    k1, k2, k3 = 0.04, 3e7, 1e4
    return np.array([-k1 * y[0] + k3 * y[1] * y[2],
                     k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
                     k2 * y[1] ** 2])


def _robertson_jac_closed(y):
    k1, k2, k3 = 0.04, 3e7, 1e4
    return np.array([[-k1, k3 * y[2], k3 * y[1]],
                     [k1, -k3 * y[2] - 2 * k2 * y[1], -k3 * y[1]],
                     [0.0, 2 * k2 * y[1], 0.0]])


def test_robertson_rhs_and_jacobian_closed_form():
    rng = np.random.default_rng(3)
    ys = np.column_stack([rng.uniform(0, 1, 6), rng.uniform(0, 4e-5, 6), rng.uniform(0, 1, 6)])
    for y in ys:
        np.testing.assert_allclose(rob_rhs(0.0, y), _robertson_np(0.0, y), rtol=1e-14, atol=1e-14)
        J = rob_jac(0.0, y)
        assert J.shape == (3, 3)
        ref = _robertson_jac_closed(y)
        np.testing.assert_allclose(J, ref, rtol=1e-14, atol=1e-14 * np.max(np.abs(ref)))
    # batched: t has batch shape (6,), y has batch shape (6,)
    Jb = rob_jac(np.zeros(6), ys)
    assert Jb.shape == (6, 3, 3)
    for k in range(6):
        ref = _robertson_jac_closed(ys[k])
        np.testing.assert_allclose(Jb[k], ref, rtol=1e-14, atol=1e-14 * np.max(np.abs(ref)))


def test_robertson_bdf_with_symgrad_jacobian():
    kw = dict(method="BDF", rtol=1e-8, atol=1e-10)
    calls = {"fd": 0, "ex": 0}

    def counted(key):
        # SciPy's ``nfev`` leaves out the RHS calls made inside its finite-difference
        # Jacobian, so count every call of the right-hand side ourselves.
        def rhs(t, y):
            calls[key] += 1
            return rob_rhs(t, y)
        return rhs

    fd = solve_ivp(counted("fd"), (0.0, 1e5), [1.0, 0.0, 0.0], **kw)
    ex = solve_ivp(counted("ex"), (0.0, 1e5), [1.0, 0.0, 0.0], jac=rob_jac, **kw)
    ref = solve_ivp(_robertson_np, (0.0, 1e5), [1.0, 0.0, 0.0], jac=lambda t, y: _robertson_jac_closed(y), **kw)
    assert fd.success and ex.success
    np.testing.assert_allclose(ex.y[:, -1], fd.y[:, -1], rtol=1e-6, atol=1e-13)
    # an analytic Jacobian takes the same path as the closed-form one
    np.testing.assert_allclose(ex.y[:, -1], ref.y[:, -1], rtol=1e-10, atol=1e-16)
    assert ex.nfev == ref.nfev
    assert calls["ex"] == ex.nfev  # with jac=, every RHS call is a solver step evaluation
    assert calls["ex"] < calls["fd"]
    assert ex.nfev <= fd.nfev
    # mass is conserved: y0 + y1 + y2 = 1
    assert abs(ex.y[:, -1].sum() - 1.0) < 1e-8
    # known behaviour at t = 1e5: y0 ~ 1.79e-2, y1 ~ 7.27e-8
    np.testing.assert_allclose(ex.y[:, -1], [1.7865924e-2, 7.2747527e-8, 9.8213400e-1], rtol=1e-5)
