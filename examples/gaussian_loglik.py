"""The multivariate normal log-likelihood, its gradient and its Hessian through slogdet and solve.

For m observations y_i in R^n with mean mu and covariance S (symmetric positive definite):
    L(mu, S) = -1/2 sum_i [ log det S + r_i^T S^-1 r_i + n log 2 pi ],   r_i = y_i - mu
written with np.linalg.slogdet and np.linalg.solve on the (n, n) core matrix S; the m residuals
are solved at once as the columns of one right-hand side.

Closed forms (P = S^-1, R = sum_i r_i r_i^T, Q = P R P; S treated as an unconstrained matrix):
    dL/dmu  = P sum_i r_i                          d2L/dmu2 = -m P
    d2L/dmu_i dS_kl = -1/2 (P_ik p_l + P_il p_k),  p = P sum_j r_j
    dL/dS   = -1/2 (m P - Q)                       (Giles 2008, sec. 2.2: d log det S = tr(P dS))
    d2L/dS_ij dS_kl = 1/2 (m P_il P_kj - P_il Q_kj - Q_il P_kj)
The value is compared with scipy.stats.multivariate_normal.
Run: python examples/gaussian_loglik.py
"""
import numpy as np
from scipy.stats import multivariate_normal

import symgrad as sg

n, m = 3, 20
rng = np.random.default_rng(0)
A = rng.standard_normal((n, n))
S = A @ A.T + n * np.eye(n)
mu = rng.standard_normal(n)
Y = rng.multivariate_normal(mu + 0.3, S, size=m)


def loglik(mu, S, Y):
    sign, logdet = np.linalg.slogdet(S)
    R = Y - mu                                       # (m, n) residuals
    quad = np.sum(R.T * np.linalg.solve(S, R.T))      # sum_i r_i^T S^-1 r_i
    return -0.5 * (Y.shape[0] * logdet + quad + Y.size * np.log(2 * np.pi))


SIG = "(n),(n,n),(m,n)->()"
value, (g_mu, g_S) = sg.value_and_grad(loglik, argnums=(0, 1), signature=SIG)(mu, S, Y)
H = sg.hessian(loglik, argnums=(0, 1), signature=SIG)(mu, S, Y)

P = np.linalg.inv(S)
r = Y - mu
Q = P @ (r.T @ r) @ P
H_SS = 0.5 * (m * np.einsum("il,kj->ijkl", P, P) - np.einsum("il,kj->ijkl", P, Q) - np.einsum("il,kj->ijkl", Q, P))


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


print(f"log-likelihood: {value:.15g}")
print(f"scipy logpdf sum: {multivariate_normal(mu, S).logpdf(Y).sum():.15g}")
print(f"grad mu rel error: {rel(g_mu, P @ r.sum(axis=0)):.2e}")
print(f"grad S rel error: {rel(g_S, -0.5 * (m * P - Q)):.2e}")
print(f"hessian mu,mu rel error: {rel(H[0][0], -m * P):.2e}")
p = P @ r.sum(axis=0)
print(f"hessian mu,S rel error: {rel(H[0][1], -0.5 * (np.einsum('ik,l->ikl', P, p) + np.einsum('il,k->ikl', P, p))):.2e}")
print(f"hessian S,S rel error: {rel(H[1][1], H_SS):.2e}")
print(f"hessian shapes: {[list(np.shape(H[i][j])) for i in range(2) for j in range(2)]}")
