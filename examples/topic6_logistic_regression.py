"""Topic 6: logistic regression on scikit-learn's breast-cancer data with scipy.optimize.

Objective (labels y in {-1, +1}, standardised features X, ridge penalty on w only):
    J(w, b) = sum_i log(1 + exp(-y_i (x_i . w + b))) + 0.5 * lam * |w|^2
The data term is one compiled function of the whole data set (core signature
"(d),(),(n,d),(n)->()"); symgrad.value_and_grad returns J and dJ/d(w, b) from one pass, which is
what scipy.optimize.minimize(..., jac=True) with L-BFGS-B wants.  np.logaddexp(0, t) keeps the
loss finite for confident samples.  The optimum is compared with scikit-learn's
LogisticRegression, which minimises the same objective with C = 1 / lam.
Run: python examples/topic6_logistic_regression.py
"""
import time

import numpy as np
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import symgrad as sg

X, labels = load_breast_cancer(return_X_y=True)
X = (X - X.mean(axis=0)) / X.std(axis=0)
y = 2.0 * labels - 1.0
n, d = X.shape
lam = 1.0
print(f"samples, features: {[n, d]}")


def data_loss(w, b, X, y):
    return np.sum(np.logaddexp(0.0, -y * (X @ w + b)))


loss_and_grad = sg.value_and_grad(data_loss, argnums=(0, 1), signature="(d),(),(n,d),(n)->()")


def objective(theta):
    w, b = theta[:-1], theta[-1]
    value, (gw, gb) = loss_and_grad(w, b, X, y)
    return value + 0.5 * lam * w @ w, np.append(gw + lam * w, gb)


def objective_by_hand(theta):
    w, b = theta[:-1], theta[-1]
    margin = y * (X @ w + b)
    s = -y / (1.0 + np.exp(margin))        # d loss_i / d (x_i . w + b)
    return np.sum(np.logaddexp(0.0, -margin)) + 0.5 * lam * w @ w, np.append(X.T @ s + lam * w, s.sum())


print(f"J at zero: {objective(np.zeros(d + 1))[0]}")
print(f"n log 2: {n * np.log(2)}")
theta = np.random.default_rng(0).standard_normal(d + 1) * 0.1
(j1, g1), (j2, g2) = objective(theta), objective_by_hand(theta)
print(f"at a random point, |J - J_hand|: {abs(j1 - j2):.3e}")
print(f"at a random point, max |grad - grad_hand| / max |grad_hand|: {np.abs(g1 - g2).max() / np.abs(g2).max():.3e}")

t0 = time.perf_counter()
res = minimize(objective, np.zeros(d + 1), jac=True, method="L-BFGS-B", options=dict(maxiter=5000, gtol=1e-10, ftol=1e-15))
print(f"L-BFGS-B time: {time.perf_counter() - t0:.3f} s")
print(f"L-BFGS-B iterations, evaluations: {[res.nit, res.nfev]}")
print(f"L-BFGS-B final objective: {res.fun}")
print(f"L-BFGS-B final gradient norm: {np.linalg.norm(res.jac):.3e}")

ref = LogisticRegression(C=1.0 / lam, tol=1e-12, max_iter=10000).fit(X, labels)
theta_ref = np.append(ref.coef_.ravel(), ref.intercept_)
print(f"scikit-learn objective: {objective(theta_ref)[0]}")
print(f"max |theta - theta_sklearn|: {np.abs(res.x - theta_ref).max():.3e}")
accuracy = np.mean(np.sign(X @ res.x[:-1] + res.x[-1]) == y)
print(f"training accuracy: {accuracy}")
print(f"scikit-learn training accuracy: {ref.score(X, labels)}")
