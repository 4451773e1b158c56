"""symgrad's main job on real inputs: compiled gradients, Hessians and Jacobians.

1. Rosenbrock (n = 1000): gradient, Hessian-vector product and Hessian vs SciPy.
2. Logistic regression on scikit-learn's breast-cancer data (not standardised):
   the summed per-sample gradient drives L-BFGS-B (with a small ridge term: the
   data are separable) to the same optimum as a hand-written gradient.
3. Robertson's stiff kinetics: symgrad.jacobian as ``jac=`` for BDF.

Run:  python examples/main_job.py
"""
import time

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess, rosen_hess_prod
from sklearn.datasets import load_breast_cancer

import symgrad as sg


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic_loss(x, w, b, y):
    """Per-sample loss log(1 + exp(-y (x.w + b))), labels y in {-1, +1}."""
    return np.logaddexp(0.0, -y * (x @ w + b))


def robertson(t, y):
    k1, k2, k3 = 0.04, 3e7, 1e4
    return np.array([-k1 * y[0] + k3 * y[1] * y[2],
                     k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
                     k2 * y[1] ** 2])


def timed(label, fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    print(f"  {label:<44s} {time.perf_counter() - t0:7.3f} s")
    return out


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def main():
    print("symgrad traced rosenbrock(x) for n = 3:")
    print("  f      =", sg.trace(rosenbrock, np.zeros(3), signature="(n)->()").expr)
    print("  df/dx  =", sg.trace(rosenbrock, np.zeros(3), signature="(n)->()").grad_expr(simplify=True)[0])

    print("\n1. Rosenbrock, n = 1000")
    x = np.random.default_rng(0).uniform(-2, 2, 1000)
    v = np.random.default_rng(1).standard_normal(1000)
    grad = sg.grad(rosenbrock, signature="(n)->()")
    hess = sg.hessian(rosenbrock, signature="(n)->()")
    g = timed("gradient (build + first call)", grad, x)
    hv = timed("Hessian-vector product (build + first call)", sg.hvp, rosenbrock, (x,), (v,), "(n)->()")
    H = timed("Hessian (build + first call)", hess, x)
    print(f"  max rel. error vs scipy: grad {rel_err(g, rosen_der(x)):.1e}, "
          f"hvp {rel_err(hv, rosen_hess_prod(x, v)):.1e}, hessian {rel_err(H, rosen_hess(x)):.1e}")

    print("\n2. Logistic regression, breast-cancer data (569 x 30, raw features)")
    X, labels = load_breast_cancer(return_X_y=True)
    y = 2.0 * labels - 1.0
    loss = sg.jit(logistic_loss, signature="(d),(d),(),()->()")
    dloss = sg.grad(logistic_loss, argnums=(1, 2), signature="(d),(d),(),()->()")
    ridge = 1.0  # the data are separable: without it the loss has no finite minimiser

    def objective(theta):
        return float(np.sum(loss(X, theta[:-1], theta[-1], y))) + 0.5 * ridge * float(theta @ theta)

    def jac_symgrad(theta):
        gw, gb = dloss(X, theta[:-1], theta[-1], y)  # per-sample gradients, summed here
        return np.append(gw.sum(axis=0), gb.sum()) + ridge * theta

    def jac_by_hand(theta):
        m = y * (X @ theta[:-1] + theta[-1])
        with np.errstate(over="ignore"):  # exp(m) overflows for confident samples; 1/inf = 0 is right
            s = -y / (1.0 + np.exp(m))  # d loss / d logit
        return np.append(X.T @ s, s.sum()) + ridge * theta

    g0 = np.random.default_rng(2).standard_normal(31) * 1e-3
    print(f"  gradient vs hand-written at a random point: max rel. error "
          f"{rel_err(jac_symgrad(g0), jac_by_hand(g0)):.1e}")
    opts = dict(maxiter=20000, ftol=1e-13, gtol=1e-8)
    res = timed("L-BFGS-B with symgrad's gradient", minimize, objective, np.zeros(31),
                method="L-BFGS-B", jac=jac_symgrad, options=opts)
    ref = timed("L-BFGS-B with the hand-written gradient", minimize, objective, np.zeros(31),
                method="L-BFGS-B", jac=jac_by_hand, options=opts)
    print(f"  final objective {res.fun:.8f} ({res.nit} iterations) vs {ref.fun:.8f} ({ref.nit} iterations)")

    print("\n3. Robertson stiff kinetics, t in [0, 1e5], BDF")
    jac_fn = sg.jacobian(robertson, argnums=1, signature="(),(3)->(3)")
    rhs = sg.jit(robertson, signature="(),(3)->(3)")
    calls = [0]

    def counted_rhs(t, y):  # solve_ivp's nfev leaves out finite-difference evaluations
        calls[0] += 1
        return rhs(t, y)

    kw = dict(method="BDF", rtol=1e-8, atol=1e-10)
    fd = timed("finite-difference Jacobian", solve_ivp, counted_rhs, (0, 1e5), [1.0, 0.0, 0.0], **kw)
    fd_calls, calls[0] = calls[0], 0
    ex = timed("symgrad.jacobian", solve_ivp, counted_rhs, (0, 1e5), [1.0, 0.0, 0.0], jac=jac_fn, **kw)
    print(f"  y(1e5) = {ex.y[:, -1]}")
    print(f"  rhs evaluations: {fd_calls} (finite differences) vs {calls[0]} (symgrad), "
          f"max rel. difference {rel_err(ex.y[:, -1], fd.y[:, -1]):.1e}")


if __name__ == "__main__":
    main()
