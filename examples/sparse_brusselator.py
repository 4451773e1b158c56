"""The 2-D Brusselator on an N x N periodic grid, integrated with SciPy's BDF and a sparse Jacobian.

BRUSS-2D (Hairer & Wanner, *Solving ODEs II*, 2nd ed., 1996, sec. IV.10) without its
time-dependent source: with ``a = alpha N^2``,

    u' = 1 + u^2 v - 4.4 u + a (u_up + u_down + u_left + u_right - 4 u)
    v' = 3.4 u - u^2 v     + a (v_up + v_down + v_left + v_right - 4 v)

2 N^2 unknowns.  ``symgrad.jacobian(rhs, argnums=1, sparse=True)`` reads the 5-point
stencil plus the u-v coupling from the traced graph (12 N^2 nonzeros, a handful of colours)
and evaluates only those entries.  The run is compared with SciPy's finite differences
given the same pattern (``jac_sparsity``), which is what SciPy users write today.

Run: ``python examples/sparse_brusselator.py`` (N = 16) or ``--n 32 128`` (the issue's sizes).
"""
import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

import symgrad as sg

ALPHA = 0.1


def make_rhs(n):
    a = ALPHA * n * n

    def lap(w):  # periodic 5-point Laplacian through slices (no np.roll needed)
        up = np.concatenate((w[-1:], w[:-1]), axis=0)
        down = np.concatenate((w[1:], w[:1]), axis=0)
        left = np.concatenate((w[:, -1:], w[:, :-1]), axis=1)
        right = np.concatenate((w[:, 1:], w[:, :1]), axis=1)
        return up + down + left + right - 4.0 * w

    def brusselator(t, y):
        u = y[:n * n].reshape(n, n)
        v = y[n * n:].reshape(n, n)
        uuv = u * u * v
        du = 1.0 + uuv - 4.4 * u + a * lap(u)
        dv = 3.4 * u - uuv + a * lap(v)
        return np.concatenate((du.ravel(), dv.ravel()))

    return brusselator


def initial(n):
    x = np.arange(n) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    return np.concatenate(((22.0 * Y * (1 - Y) ** 1.5).ravel(), (27.0 * X * (1 - X) ** 1.5).ravel()))


def run(n, t_end=11.5, method="BDF", rtol=1e-8, atol=1e-10):
    rhs = make_rhs(n)
    y0 = initial(n)
    jac = sg.jacobian(rhs, argnums=1, sparse=True, stabilize=False)
    t = time.perf_counter()
    jac(0.0, y0)  # trace, pattern, colouring (and a compile on the first run on this machine)
    build = time.perf_counter() - t
    info = jac.info(0.0, y0)
    t = time.perf_counter()
    sym = solve_ivp(rhs, (0.0, t_end), y0, method=method, jac=jac, rtol=rtol, atol=atol)
    t_sym = time.perf_counter() - t
    t = time.perf_counter()
    fd = solve_ivp(rhs, (0.0, t_end), y0, method=method, jac_sparsity=jac.pattern(0.0, y0), rtol=rtol, atol=atol)
    t_fd = time.perf_counter() - t
    err = float(np.max(np.abs(sym.y[:, -1] - fd.y[:, -1]) / (np.abs(fd.y[:, -1]) + 1e-300)))
    print(f"N = {n} ({2 * n * n} unknowns), {method}: nnz = {info['nnz']}, colours = {info['ncolours']}, "
          f"build {build:.2f} s")
    print(f"  symgrad sparse jac : {t_sym:7.3f} s, {sym.njev:4d} Jacobians, {sym.nfev:5d} f-evals, "
          f"status {sym.status}")
    print(f"  FD + jac_sparsity  : {t_fd:7.3f} s, {fd.njev:4d} Jacobians, {fd.nfev:5d} f-evals, "
          f"status {fd.status}")
    print(f"  max relative difference of y(t_end): {err:.1e}")
    assert sym.success and fd.success and err < 1e-6, "sparse-Jacobian run disagrees with finite differences"
    return sym, fd, err


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[16])
    parser.add_argument("--method", default="BDF", choices=["BDF", "Radau"])
    for n in parser.parse_args().n:
        run(n, method=parser.parse_args().method)
