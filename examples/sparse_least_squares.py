"""Nonlinear least squares and trust-region minimisation with sparse derivatives from symgrad.

1. The Broyden tridiagonal function (Moré, Garbow & Hillstrom, ACM TOMS 7, 1981, problem 30)
   solved with ``scipy.optimize.least_squares(jac=..., tr_solver="lsmr")``: the Jacobian is a
   ``scipy.sparse.csr_array`` with 3n - 2 nonzeros, computed with 3 colours.
2. The chained Rosenbrock function minimised with ``minimize(method="trust-constr")`` given the
   sparse Hessian (3n - 2 nonzeros), compared with the same run given Hessian-vector products.

Run: ``python examples/sparse_least_squares.py`` (n = 1000) or ``--n 100000``.
"""
import argparse
import time

import numpy as np
from scipy.optimize import least_squares, minimize

import symgrad as sg


def broyden(x):
    xp = np.concatenate((np.zeros(1), x[:-1]))
    xn = np.concatenate((x[1:], np.zeros(1)))
    return (3.0 - 2.0 * x) * x - xp - 2.0 * xn + 1.0


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def solve_broyden(n):
    jac = sg.jacobian(broyden, sparse=True, stabilize=False)
    x0 = -np.ones(n)
    info = jac.info(x0)
    t = time.perf_counter()
    res = least_squares(broyden, x0, jac=jac, tr_solver="lsmr", xtol=1e-15, ftol=1e-15, gtol=1e-15)
    print(f"least_squares, Broyden tridiagonal n = {n}: nnz = {info['nnz']}, colours = {info['ncolours']}")
    print(f"  {time.perf_counter() - t:.3f} s, {res.njev} Jacobians, cost {res.cost:.2e}, "
          f"max|F| = {np.max(np.abs(res.fun)):.2e}")
    assert res.success and res.cost < 1e-20


def minimise_rosenbrock(n):
    grad = sg.grad(rosen, signature="(n)->()", stabilize=False)
    hess = sg.hessian(rosen, signature="(n)->()", sparse=True, stabilize=False)
    hvp = sg.hvp  # forward over reverse, never forms the Hessian
    x0 = 1.0 + 0.3 * np.sin(np.arange(n))  # from far away trust-constr needs thousands of iterations
    opts = dict(gtol=1e-8, xtol=1e-12, maxiter=5000)
    print(f"trust-constr, chained Rosenbrock n = {n}: Hessian nnz = {hess.info(x0)['nnz']}, "
          f"colours = {hess.info(x0)['ncolours']}")
    for label, kw in (("sparse hess", dict(hess=hess)),
                      ("hessp (symgrad.hvp)", dict(hessp=lambda x, p: hvp(rosen, (x,), (np.asarray(p, float),),
                                                                           signature="(n)->()", stabilize=False)))):
        t = time.perf_counter()
        res = minimize(rosen, x0, jac=grad, method="trust-constr", options=opts, **kw)
        print(f"  {label:20s}: {time.perf_counter() - t:7.3f} s, {res.nit} iterations, f = {res.fun:.2e}, "
              f"max|x - 1| = {np.max(np.abs(res.x - 1)):.1e}")
        assert np.max(np.abs(res.x - 1)) < 1e-6


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    n = parser.parse_args().n
    solve_broyden(n)
    minimise_rosenbrock(n)
