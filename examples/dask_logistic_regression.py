"""Logistic regression on a Dask cluster: a per-sample loss, its gradient summed over the rows.

The loss of one sample is written for one row (signature ``(d),(d),(),()->()``);
symgrad compiles its value and gradient once, on this process.  Called with
Dask arrays, the compiled function returns Dask arrays: each chunk of rows is
one call of the compiled kernel on a worker, which loads the kernel from its
recipe (generated source + cache key; workers never trace or import SymPy),
and ``.sum(axis=0)`` is Dask's tree reduction of the per-chunk sums.
SciPy's L-BFGS-B then fits the weights with ``minimize(jac=True)``.

Run:  python examples/dask_logistic_regression.py [--rows 10000000] [--workers 2]
(default 200,000 rows; the fit is compared with the same fit on NumPy arrays in memory).
Needs the Dask extra:  pip install -e ".[dask]"
"""
import argparse
import time

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from scipy.optimize import minimize

import symgrad as sg


def logloss(x, w, y, lam):
    """Loss of one sample: log(1 + exp(-y x.w)) + lam |w|^2, with y in {-1, +1}."""
    return np.logaddexp(0.0, -y * np.dot(x, w)) + lam * np.dot(w, w)


value_and_grad = sg.value_and_grad(logloss, argnums=1, signature="(d),(d),(),()->()")


def make_data(rows: int, d: int, chunk: int):
    """Rows generated on the workers, in chunks of ``chunk`` rows (the driver holds none)."""
    rng = da.random.default_rng(0)
    X = rng.standard_normal((rows, d), chunks=(chunk, d))
    true_w = np.linspace(-1.0, 1.0, d)
    y = da.where(X @ true_w + rng.standard_normal(rows, chunks=chunk) > 0, 1.0, -1.0)
    return X, y


def mean_loss_and_grad(w, X, y, lam, rows):
    """(mean loss, its gradient) over all rows: per-chunk kernel calls, tree-reduced sums."""
    value, grad = value_and_grad(X, w, y, lam)
    total, g = dask.compute(value.sum(), grad.sum(axis=0))
    return total / rows, g / rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=50_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    lam = 1e-3
    w0 = np.zeros(args.d)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster):
        X, y = make_data(args.rows, args.d, args.chunk)
        X, y = dask.persist(X, y)  # keep the data on the workers between iterations
        start = time.perf_counter()
        fit = minimize(mean_loss_and_grad, w0, args=(X, y, lam, args.rows), jac=True, method="L-BFGS-B",
                       options={"gtol": 1e-10})
        elapsed = time.perf_counter() - start
        print(f"rows: {args.rows}, features: {args.d}, chunks: {X.numblocks[0]}, workers: {args.workers}")
        print(f"L-BFGS-B on the cluster: {fit.nit} iterations, {fit.nfev} gradient evaluations, {elapsed:.2f} s")
        print(f"final mean loss: {fit.fun:.12f}")
        print(f"weights: {np.array2string(fit.x, precision=6)}")
        if args.rows <= 1_000_000:  # the same loss and gradient in memory, as NumPy arrays
            Xn, yn = dask.compute(X, y)
            v, g = value_and_grad(Xn, fit.x, yn, lam)
            dv, dg = mean_loss_and_grad(fit.x, X, y, lam, args.rows)
            rel = np.abs(dg - g.sum(axis=0) / args.rows).max() / np.abs(g.sum(axis=0) / args.rows).max()
            print(f"cluster vs in-memory mean loss: |diff| = {abs(dv - v.sum() / args.rows):.3e}")
            print(f"cluster vs in-memory gradient: max relative diff = {rel:.3e}")
            assert abs(dv - v.sum() / args.rows) <= 1e-12 * abs(dv) and rel <= 1e-10
            mem = minimize(lambda w: (lambda vg: (vg[0].sum() / args.rows, vg[1].sum(axis=0) / args.rows))(
                value_and_grad(Xn, w, yn, lam)), w0, jac=True, method="L-BFGS-B", options={"gtol": 1e-10})
            print(f"in-memory fit: max |w_cluster - w_memory| = {np.abs(mem.x - fit.x).max():.3e}")


if __name__ == "__main__":
    main()
