"""Negative-binomial maximum likelihood with gammaln: symgrad gives scipy.optimize the
exact gradient and Hessian.

Counts y_i ~ NB(mean mu, dispersion k): P(y) = Gamma(y + k) / (Gamma(k) y!) (k/(k+mu))^k (mu/(k+mu))^y.
Parameters are unconstrained, theta = (log k, log mu).  The negative log-likelihood
uses ``scipy.special.gammaln`` (its derivatives digamma and polygamma(1, .) are
compiled from SciPy's implementations) and ``scipy.special.xlogy``.

Checks: the objective against scipy.stats.nbinom.logpmf, the gradient and Hessian
against central differences, and the Newton (trust-exact) optimum against a
derivative-free Nelder-Mead fit.

Run:  python examples/negbin_mle.py
"""
import numpy as np
from scipy.optimize import minimize
from scipy.special import gammaln, xlogy
from scipy.stats import nbinom

import symgrad as sg

SIG = "(2),(n)->()"  # theta, counts


def nll(theta, y):
    k, mu = np.exp(theta[0]), np.exp(theta[1])
    ll = (gammaln(y + k) - gammaln(k) - gammaln(y + 1.0)
          + k * (theta[0] - np.log(k + mu)) + xlogy(y, mu) - y * np.log(k + mu))
    return -np.sum(ll)


def main():
    rng = np.random.default_rng(7)
    k_true, mu_true, n = 2.5, 6.0, 400
    y = rng.negative_binomial(k_true, k_true / (k_true + mu_true), size=n).astype(float)
    f = sg.jit(nll, signature=SIG)
    g = sg.grad(nll, signature=SIG)
    h = sg.hessian(nll, signature=SIG)

    theta0 = np.array([0.0, np.log(y.mean())])
    ref = -np.sum(nbinom.logpmf(y, np.exp(theta0[0]), np.exp(theta0[0]) / (np.exp(theta0[0]) + y.mean())))
    print(f"objective at theta0: symgrad {f(theta0, y):.12f}   scipy.stats {ref:.12f}")
    assert abs(f(theta0, y) - ref) < 1e-9 * abs(ref)

    eps = 1e-6
    fd_g = np.array([(f(theta0 + eps * e, y) - f(theta0 - eps * e, y)) / (2 * eps) for e in np.eye(2)])
    fd_h = np.array([(g(theta0 + eps * e, y) - g(theta0 - eps * e, y)) / (2 * eps) for e in np.eye(2)])
    print(f"gradient  symgrad {g(theta0, y)}   central difference {fd_g}")
    print(f"Hessian   symgrad {h(theta0, y).ravel()}   central difference {fd_h.ravel()}")
    assert np.allclose(g(theta0, y), fd_g, rtol=1e-6, atol=1e-6)
    assert np.allclose(h(theta0, y), fd_h, rtol=1e-6, atol=1e-6)

    newton = minimize(f, theta0, args=(y,), jac=g, hess=h, method="trust-exact")
    simplex = minimize(f, theta0, args=(y,), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12})
    k_hat, mu_hat = np.exp(newton.x)
    print(f"trust-exact: k = {k_hat:.6f}, mu = {mu_hat:.6f} in {newton.nit} iterations "
          f"(|grad| = {np.abs(newton.jac).max():.1e})")
    print(f"Nelder-Mead: k = {np.exp(simplex.x[0]):.6f}, mu = {np.exp(simplex.x[1]):.6f} in {simplex.nit} iterations")
    print(f"true values: k = {k_true}, mu = {mu_true}; sample mean {y.mean():.6f}")
    assert newton.success and np.allclose(newton.x, simplex.x, atol=1e-6)
    assert abs(mu_hat - y.mean()) < 1e-8 * y.mean()  # the MLE of the mean is the sample mean


if __name__ == "__main__":
    main()
