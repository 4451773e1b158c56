"""Sparse Jacobians and Hessians (issue 17): build, evaluation, nonzeros and colours.

Compares in one run:
* symgrad ``jacobian(f, sparse=True)`` (pattern from the graph, greedy colouring, one compiled
  forward pass carrying all colour seeds);
* CasADi SX (``jacobian`` of an SX expression, evaluated through a ``casadi.Function``), if installed;
* finite differences with the known pattern (SciPy's grouped differences, the path
  ``least_squares(jac_sparsity=...)`` and ``solve_ivp(jac_sparsity=...)`` take);
* dense symgrad ``jacobian`` (n = 2000 and 10^4).

Problems: the Broyden tridiagonal function at n = 10^4 and 10^6; the 2-D Brusselator with BDF
(N = 32 and 128); the chained Rosenbrock function with trust-constr at n = 10^5.

Run: ``python benchmarks/bench_sparse.py`` (writes benchmarks/results/sparse.md; about 10 minutes
on a loaded 2-core machine).  ``--quick`` runs the small sizes only.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

from _common import fmt_t, median_time, table  # noqa: E402

import symgrad as sg  # noqa: E402


def broyden(x):
    xp = np.concatenate((np.zeros(1), x[:-1]))
    xn = np.concatenate((x[1:], np.zeros(1)))
    return (3.0 - 2.0 * x) * x - xp - 2.0 * xn + 1.0


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)



def casadi_broyden(n):
    """(build seconds, Function, nnz) for CasADi SX's sparse Jacobian of Broyden's function."""
    import casadi as ca

    t = time.perf_counter()
    x = ca.SX.sym("x", n)
    xp = ca.vertcat(ca.SX(1, 1), x[:-1])
    xn = ca.vertcat(x[1:], ca.SX(1, 1))
    f = (3 - 2 * x) * x - xp - 2 * xn + 1
    jac = ca.jacobian(f, x)
    fn = ca.Function("J", [x], [jac])
    return time.perf_counter() - t, fn, jac.nnz()


def bench_broyden(sizes, rows, notes):
    from scipy.optimize._numdiff import approx_derivative, group_columns

    try:
        import casadi  # noqa: F401
        have_casadi = True
    except ImportError:
        have_casadi = False
        notes.append("CasADi not installed: its rows are skipped.")
    for n in sizes:
        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, n)
        # symgrad: build = trace + pattern + colouring (a warm process: SciPy imported, Numba loaded);
        # the first evaluation compiles the seeded kernel (or loads it from the disk cache)
        jac = sg.jacobian(broyden, sparse=True, stabilize=False)
        t = time.perf_counter()
        jac.plan(x)
        build = time.perf_counter() - t
        t = time.perf_counter()
        j = jac(x)
        first = time.perf_counter() - t
        ev = median_time(lambda: jac(x))
        info = jac.info(x)
        mem = j.data.nbytes + j.indices.nbytes + j.indptr.nbytes
        rows.append([f"Broyden n = {n:,}", "symgrad sparse", fmt_t(build), fmt_t(ev), f"{info['nnz']:,}",
                     info["ncolours"], f"first call {fmt_t(first)}; result {mem / 2**20:.1f} MiB"])
        ref_ev = ev
        if have_casadi:
            cb, fn, nnz = casadi_broyden(n)
            ev_c = median_time(lambda: fn(x))
            jc = fn(x).sparse()
            err = abs(jc - j).max()
            rows.append([f"Broyden n = {n:,}", "CasADi SX", fmt_t(cb), fmt_t(ev_c), f"{nnz:,}", "–",
                         f"symgrad eval / CasADi eval = {ref_ev / ev_c:.2f}; max abs diff = {err:.1e}"])
        pattern = jac.pattern(x)
        t = time.perf_counter()
        groups = group_columns(pattern)
        fb = time.perf_counter() - t
        ev_fd = median_time(lambda: approx_derivative(broyden, x, sparsity=(pattern, groups)), repeats=7)
        jf = approx_derivative(broyden, x, sparsity=(pattern, groups))
        rows.append([f"Broyden n = {n:,}", "FD + pattern (SciPy)", fmt_t(fb), fmt_t(ev_fd), f"{jf.nnz:,}",
                     int(groups.max()) + 1, f"symgrad eval / FD eval = {ref_ev / ev_fd:.3f}; max abs diff = "
                     f"{abs(jf - j).max():.1e}"])
        if n <= 10_000:
            for nd in ((2000, n) if n == 10_000 else (n,)):
                xd = x[:nd] if nd <= n else x
                dense = sg.jacobian(broyden, signature="(n)->(n)", stabilize=False)
                t = time.perf_counter()
                dense(xd)
                db = time.perf_counter() - t
                ev_d = median_time(lambda: dense(xd), repeats=3 if nd > 5000 else 9)
                sparse_nd = sg.jacobian(broyden, sparse=True, stabilize=False)
                ev_s = median_time(lambda: sparse_nd(xd))
                rows.append([f"Broyden n = {nd:,}", "symgrad dense", fmt_t(db) + " (incl. compile)", fmt_t(ev_d),
                             f"{nd * nd:,}", "–", f"dense / sparse eval = {ev_d / ev_s:,.0f}x"])


def bench_brusselator(sizes, rows, t_end=11.5):
    from scipy.integrate import solve_ivp
    from sparse_brusselator import initial, make_rhs

    for n in sizes:
        rhs, y0 = make_rhs(n), initial(n)
        jac = sg.jacobian(rhs, argnums=1, sparse=True, stabilize=False)
        t = time.perf_counter()
        jac.plan(0.0, y0)
        build = time.perf_counter() - t
        jac(0.0, y0)
        ev = median_time(lambda: jac(0.0, y0), repeats=9)
        info = jac.info(0.0, y0)
        opts = dict(rtol=1e-8, atol=1e-10)
        t = time.perf_counter()
        sym = solve_ivp(rhs, (0.0, t_end), y0, method="BDF", jac=jac, **opts)
        t_sym = time.perf_counter() - t
        t = time.perf_counter()
        fd = solve_ivp(rhs, (0.0, t_end), y0, method="BDF", jac_sparsity=jac.pattern(0.0, y0), **opts)
        t_fd = time.perf_counter() - t
        err = float(np.max(np.abs(sym.y[:, -1] - fd.y[:, -1]) / np.abs(fd.y[:, -1])))
        label = f"Brusselator N = {n} ({2 * n * n:,} unknowns)"
        rows.append([label, "symgrad sparse jac", fmt_t(build), fmt_t(ev), f"{info['nnz']:,}", info["ncolours"],
                     f"BDF {t_sym:.2f} s, {sym.njev} Jacobians, {sym.nfev} f-evals, {sym.nlu} LU; "
                     f"t_end = {t_end}; max rel. diff of y(t_end) vs FD run {err:.1e}"])
        rows.append([label, "FD + jac_sparsity", "–", "–", f"{info['nnz']:,}", "–",
                     f"BDF {t_fd:.2f} s, {fd.njev} Jacobians, {fd.nfev} f-evals, {fd.nlu} LU"])


def bench_rosenbrock(n, rows):
    from scipy.optimize import minimize

    grad = sg.grad(rosen, signature="(n)->()", stabilize=False)
    hess = sg.hessian(rosen, signature="(n)->()", sparse=True, stabilize=False)
    x0 = 1.0 + 0.3 * np.sin(np.arange(n))
    t = time.perf_counter()
    hess.plan(x0)
    build = time.perf_counter() - t
    hess(x0)
    grad(x0)  # compile outside the timed runs
    sg.hvp(rosen, (x0,), (x0,), signature="(n)->()", stabilize=False)
    ev = median_time(lambda: hess(x0), repeats=9)
    ev_p = median_time(lambda: sg.hvp(rosen, (x0,), (x0,), signature="(n)->()", stabilize=False), repeats=9)
    info = hess.info(x0)
    opts = dict(gtol=1e-8, xtol=1e-12, maxiter=5000)
    res = {}
    for label, kw in (("hess (sparse)", dict(hess=hess)),
                      ("hessp (symgrad.hvp)", dict(hessp=lambda x, p: sg.hvp(rosen, (x,), (np.asarray(p, float),),
                                                                           signature="(n)->()", stabilize=False)))):
        t = time.perf_counter()
        r = minimize(rosen, x0, jac=grad, method="trust-constr", options=opts, **kw)
        res[label] = (time.perf_counter() - t, r)
    (t_h, r_h), (t_p, r_p) = res.values()
    label = f"chained Rosenbrock n = {n:,}"
    rows.append([label, "symgrad sparse Hessian", fmt_t(build), fmt_t(ev), f"{info['nnz']:,}", info["ncolours"],
                 f"trust-constr {t_h:.2f} s, {r_h.nit} iterations, max abs(x - 1) = {np.max(np.abs(r_h.x - 1)):.1e}"])
    rows.append([label, "symgrad hvp (hessp)", "–", fmt_t(ev_p) + " per product", "–", "–",
                 f"trust-constr {t_p:.2f} s, {r_p.nit} iterations, max abs(x - 1) = {np.max(np.abs(r_p.x - 1)):.1e}"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    parser.add_argument("--out", default=str(HERE / "results" / "sparse.md"))
    parser.add_argument("--t-end", type=float, default=11.5, help="Brusselator end time (11.5: Hairer-Wanner)")
    a = parser.parse_args()
    sg.jacobian(broyden, sparse=True, stabilize=False).plan(np.zeros(3))  # import SciPy, load Numba once
    rows, notes = [], []
    bench_broyden([1000] if a.quick else [10_000, 1_000_000], rows, notes)
    print(*rows, sep="\n", flush=True)
    bench_rosenbrock(1000 if a.quick else 100_000, rows)
    print(*rows[-2:], sep="\n", flush=True)
    bench_brusselator([8] if a.quick else [32, 128], rows, a.t_end)
    cmd = "python benchmarks/bench_sparse.py" + (" --quick" if a.quick else "") + (
        f" --t-end {a.t_end:g}" if a.t_end != 11.5 else "")
    import casadi
    import numba
    import scipy
    text = "\n".join([
        "# Sparse Jacobians and Hessians (issue 17)", "",
        table(["", ""], [["date", f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"],
                         ["command", f"`{cmd}`"], ["platform", platform.platform()],
                         ["CPUs", str(os.cpu_count())], ["Python", platform.python_version()],
                         ["numpy / scipy / numba / casadi", f"{np.__version__} / {scipy.__version__} / "
                          f"{numba.__version__} / {casadi.__version__}"]]), "",
        "Build: symgrad = trace + pattern propagation + colouring in a warm process (SciPy imported, Numba "
        "loaded; the seeded kernel's Numba compile or disk-cache load is in the first call, shown in the notes); "
        "CasADi = SX expression + `jacobian` + `Function`; FD = SciPy's column grouping. Evaluation: median of "
        "repeats of one call returning the sparse matrix (symgrad: `csr_array`; CasADi: `DM`; FD: SciPy's "
        "`approx_derivative(sparsity=...)`). The machine is shared with other jobs: compare ratios within "
        "this run.", "",
        table(["problem", "method", "build", "evaluation", "nonzeros", "colours", "notes"], rows), "",
        *notes])
    Path(a.out).parent.mkdir(exist_ok=True)
    Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
