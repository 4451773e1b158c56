"""Logistic regression on a Dask cluster: a per-sample loss, its gradient summed over the rows.

The loss of one sample is written for one row (signature ``(d),(d),(),()->()``);
symgrad compiles its value and gradient once, on this process.  Called with
Dask arrays, the compiled function returns Dask arrays: each chunk of rows is
one call of the compiled kernel on a worker, which loads the kernel from its
recipe (generated source + cache key; workers never trace or import SymPy).
``value_and_grad.sum(X, w, y, lam)`` sums the value and gradient over the rows
inside each chunk's kernel call (no per-row gradient is stored), and Dask
tree-reduces the per-chunk sums.
SciPy's L-BFGS-B then fits the weights with ``minimize(jac=True)``.

Run:  python examples/dask_logistic_regression.py [--rows 10000000] [--workers 2]
(default 50,000 rows in 4 chunks; the fit is compared with the same fit on NumPy arrays in memory).
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
    total, g = dask.compute(*value_and_grad.sum(X, w, y, lam))  # one task per chunk, then Dask's tree sum
    return total / rows, g / rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=12_500)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    lam = 1e-3
    w0 = np.zeros(args.d)
    # preload: each worker imports Numba and initialises it at start-up (symgrad.compile.recipe.dask_setup)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, preload=["symgrad.compile.recipe"]) as cluster, Client(cluster):
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

            def in_memory(w):
                v, g = value_and_grad(Xn, w, yn, lam)
                return v.sum() / args.rows, g.sum(axis=0) / args.rows

            w1 = np.linspace(-1.0, 1.0, args.d)  # a point where the gradient is far from zero
            (dv, dg), (v, g) = mean_loss_and_grad(w1, X, y, lam, args.rows), in_memory(w1)
            rel_v, rel_g = abs(dv - v) / abs(v), np.abs(dg - g).max() / np.abs(g).max()
            print(f"cluster vs in-memory at w = linspace(-1, 1): loss rel. diff {rel_v:.1e}, "
                  f"gradient rel. diff {rel_g:.1e}")
            assert rel_v <= 1e-12 and rel_g <= 1e-12, (rel_v, rel_g)
            mem = minimize(in_memory, w0, jac=True, method="L-BFGS-B", options={"gtol": 1e-10})
            print(f"in-memory fit: {mem.nit} iterations; max |w_cluster - w_memory| = {np.abs(mem.x - fit.x).max():.1e}")

if __name__ == "__main__":
    main()
