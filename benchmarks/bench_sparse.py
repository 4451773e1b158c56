"""Sparse Jacobians and Hessians (issue 17): build, evaluation, nonzeros and colours.

Compares in one run:
* symgrad ``jacobian(f, sparse=True)`` (pattern from the graph, greedy colouring, one compiled
  forward pass carrying all colour seeds);
* CasADi SX (``jacobian`` of an SX expression, evaluated through a ``casadi.Function``), if installed;
* finite differences with the known pattern (SciPy's grouped differences, the path
  ``least_squares(jac_sparsity=...)`` and ``solve_ivp(jac_sparsity=...)`` take);
* dense symgrad ``jacobian`` (n = 2000 and 10^4).

Problems: the Broyden tridiagonal function at n = 10^4 and 10^6; the same function written with
a scalar loop (the direct path: one generated statement per nonzero, no colouring) at n = 10^3;
the 2-D Brusselator with BDF (N = 32 and 128); the chained Rosenbrock function with trust-constr
at n = 10^5, with the star and the acyclic colouring.  ``--grimech`` adds GRI-Mech 3.0
(``examples/grimech.py``, needs Cantera): pattern and density, the direct sparse Jacobian against
the colouring path and dense symgrad, and BDF at constant volume with each Jacobian (several
minutes: the colouring and dense kernels take about 3 minutes each to compile).  BDF at constant
pressure, with finite differences over the pattern as well, is ``bench_grimech_bdf.py``; this
script keeps that script's section of the results file.

Run: ``python benchmarks/bench_sparse.py`` (writes benchmarks/results/sparse.md; about 30 minutes
on a loaded 2-core machine, most of it the N = 128 Brusselator's BDF runs).  ``--quick`` runs the
small sizes only.
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


def broyden_loop(x):
    """Broyden's function as a modeller writes it with a loop: every value is a scalar."""
    n = x.shape[0]
    out = []
    for i in range(n):
        v = (3.0 - 2.0 * x[i]) * x[i] + 1.0
        if i > 0:
            v = v - x[i - 1]
        if i < n - 1:
            v = v - 2.0 * x[i + 1]
        out.append(v)
    return np.stack(out)



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


def _timed_build(jac, *args):
    """(plan seconds, first-call seconds, median evaluation seconds, info)."""
    t = time.perf_counter()
    jac.plan(*args)
    build = time.perf_counter() - t
    t = time.perf_counter()
    jac(*args)
    first = time.perf_counter() - t
    return build, first, median_time(lambda: jac(*args)), jac.info(*args)


def bench_broyden_loop(sizes, rows, methods=("direct",)):
    """The direct path on a scalar-level program (``methods`` may add "colouring": the compressed sweep
    over the same scalar program, whose kernel carries an ncolours-vector per scalar node and takes
    minutes to compile at n = 1000)."""
    for n in sizes:
        x = np.random.default_rng(0).uniform(-1, 1, n)
        ref = None
        for method in methods:
            jac = sg.jacobian(broyden_loop, sparse=True, stabilize=False, method=method)
            build, first, ev, info = _timed_build(jac, x)
            j = jac(x)
            diff = "" if ref is None else f"; max abs diff vs direct {abs(j - ref).max():.1e}"
            ref = j if ref is None else ref
            rows.append([f"Broyden as a loop, n = {n:,}", f"symgrad sparse, {info['mode']}", fmt_t(build), fmt_t(ev),
                         f"{info['nnz']:,}", info["ncolours"], f"first call (compile) {fmt_t(first)}{diff}"])


def bench_grimech(rows, notes):
    """GRI-Mech 3.0: pattern, direct vs colouring vs dense Jacobians, and BDF at constant volume."""
    import cantera as ct
    from grimech import Mechanism, make_rhs
    from scipy.integrate import solve_ivp

    gas = ct.Solution("gri30.yaml")
    gas.TPX = 1500.0, 101325.0, "CH4:1, O2:2, N2:7.52"
    wdot = make_rhs(Mechanism(gas))
    c0 = gas.concentrations.copy()
    c = c0 * (1 + 0.1 * np.random.default_rng(0).random(gas.n_species)) + 1e-9
    label = "GRI-Mech 3.0 wdot(C), 53 species"
    jacs, results = {}, {}
    for method in ("direct", "colouring"):
        jac = jacs[method] = sg.jacobian(wdot, sparse=True, stabilize=False, method=method)
        build, first, ev, info = _timed_build(jac, c)
        results[method] = jac(c)
        rows.append([label, f"symgrad sparse, {info['mode']}", fmt_t(build), fmt_t(ev), f"{info['nnz']:,}",
                     info["ncolours"], f"first call (compile) {fmt_t(first)}; density {info['nnz'] / 53 ** 2:.1%}"])
    dense = sg.jacobian(wdot, stabilize=False)
    t = time.perf_counter()
    jd = dense(c)
    first = time.perf_counter() - t
    ev = median_time(lambda: dense(c))
    scale = np.abs(jd).max()
    diffs = ", ".join(f"{m} {np.abs(r.toarray() - jd).max() / scale:.1e}" for m, r in results.items())
    rows.append([label, "symgrad dense", fmt_t(first) + " (incl. compile)", fmt_t(ev), f"{53 * 53:,}", "–",
                 f"max abs diff / max abs J vs dense: {diffs}"])
    pattern = jacs["direct"].pattern(c)
    notes.append(f"GRI-Mech 3.0 Jacobian pattern: {pattern.nnz} of {53 * 53} entries ({pattern.nnz / 53 ** 2:.1%}); "
                 f"{int((np.diff(pattern.indptr) == 53).sum())} dense rows, {int((pattern.sum(axis=0) == 0).sum())} "
                 "empty columns; column colouring needs "
                 f"{int(__import__('symgrad.transforms.colouring', fromlist=['x']).colour_columns(pattern).max()) + 1} "
                 "colours, so compressed sweeps save nothing here.")
    # BDF at constant volume and temperature (dC/dt = wdot), as Cantera's IdealGasReactor with energy off
    fw = sg.jit(wdot)
    t_end, opts = 2e-3, dict(rtol=1e-9, atol=1e-20)
    sols = {}
    for name, jac in (("direct sparse", jacs["direct"]), ("dense", dense)):
        t = time.perf_counter()
        sols[name] = solve_ivp(lambda t, y: fw(y), (0.0, t_end), c0, method="BDF", jac=lambda t, y, j=jac: j(y), **opts)
        sols[name].wall = time.perf_counter() - t
    gas.TPX = 1500.0, 101325.0, "CH4:1, O2:2, N2:7.52"
    reactor = ct.IdealGasReactor(gas, energy="off", clone=True)
    net = ct.ReactorNet([reactor])
    net.rtol, net.atol = 1e-12, 1e-22
    net.advance(t_end)
    ref = (reactor.phase if hasattr(reactor, "phase") else reactor.thermo).concentrations
    big = ref > 1e-12 * ref.max()
    for name, sol in sols.items():
        err = np.max(np.abs(sol.y[:, -1] - ref)[big] / ref[big])
        rows.append([f"GRI-Mech 3.0, BDF to t = {t_end:g} s (constant V, T)", f"jac = symgrad {name}", "–", "–", "–",
                     "–", f"BDF {sol.wall:.2f} s, {sol.njev} Jacobians, {sol.nfev} f-evals, {sol.nlu} LU; max rel. "
                     f"diff vs Cantera's IdealGasReactor (energy off; species above 1e-12 of the largest) {err:.1e}"])


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
    rows.append([label, "symgrad sparse Hessian (star)", fmt_t(build), fmt_t(ev), f"{info['nnz']:,}", info["ncolours"],
                 f"trust-constr {t_h:.2f} s, {r_h.nit} iterations, max abs(x - 1) = {np.max(np.abs(r_h.x - 1)):.1e}"])
    acyclic = sg.hessian(rosen, signature="(n)->()", sparse=True, stabilize=False, colouring="acyclic")
    build_a, first_a, ev_a, info_a = _timed_build(acyclic, x0)
    t = time.perf_counter()
    r_a = minimize(rosen, x0, jac=grad, method="trust-constr", options=opts, hess=acyclic)
    t_a = time.perf_counter() - t
    diff = abs(acyclic(x0) - hess(x0)).max() / abs(hess(x0)).max()
    rows.append([label, "symgrad sparse Hessian (acyclic)", fmt_t(build_a), fmt_t(ev_a), f"{info_a['nnz']:,}",
                 info_a["ncolours"], f"recovery by substitution; max abs diff / max abs H vs star {diff:.1e}; "
                 f"trust-constr {t_a:.2f} s, {r_a.nit} iterations, max abs(x - 1) = {np.max(np.abs(r_a.x - 1)):.1e}"])
    rows.append([label, "symgrad hvp (hessp)", "–", fmt_t(ev_p) + " per product", "–", "–",
                 f"trust-constr {t_p:.2f} s, {r_p.nit} iterations, max abs(x - 1) = {np.max(np.abs(r_p.x - 1)):.1e}"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    parser.add_argument("--out", default=str(HERE / "results" / "sparse.md"))
    parser.add_argument("--t-end", type=float, default=11.5, help="Brusselator end time (11.5: Hairer-Wanner)")
    parser.add_argument("--grimech", action="store_true", help="add GRI-Mech 3.0 (needs Cantera; several minutes)")
    parser.add_argument("--no-brusselator", action="store_true", help="skip the Brusselator BDF runs")
    a = parser.parse_args()
    sg.jacobian(broyden, sparse=True, stabilize=False).plan(np.zeros(3))  # import SciPy, load Numba once
    rows, notes = [], []
    bench_broyden([1000] if a.quick else [10_000, 1_000_000], rows, notes)
    print(*rows, sep="\n", flush=True)
    bench_broyden_loop([100] if a.quick else [1000], rows)
    print(*rows[-2:], sep="\n", flush=True)
    bench_rosenbrock(1000 if a.quick else 100_000, rows)
    print(*rows[-3:], sep="\n", flush=True)
    if a.grimech:
        bench_grimech(rows, notes)
        print(*rows[-5:], sep="\n", flush=True)
    if not a.no_brusselator:
        bench_brusselator([8] if a.quick else [32, 128], rows, a.t_end)
    cmd = "python benchmarks/bench_sparse.py" + (" --quick" if a.quick else "") + (
        f" --t-end {a.t_end:g}" if a.t_end != 11.5 else "") + (" --grimech" if a.grimech else "") + (
        " --no-brusselator" if a.no_brusselator else "")
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
    old = Path(a.out).read_text() if Path(a.out).exists() else ""
    from bench_grimech_bdf import BEGIN, END  # keep that script's section (GRI-Mech BDF at constant pressure)
    if BEGIN in old and END in old:
        text += "\n\n" + old[old.index(BEGIN):old.index(END) + len(END)]
    Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
