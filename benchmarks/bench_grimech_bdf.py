"""GRI-Mech 3.0 at constant T and P with BDF: sparse vs dense symgrad Jacobian vs finite differences (issue 17, point 4).

The model is ``examples/grimech.py`` (needs Cantera): the net production rates written with loops over
the 325 reactions, and the isothermal, isobaric equation ``dC/dt = wdot - C sum(wdot) / C_total``
(stoichiometric CH4/air, 1500 K, 1 atm).  One run of ``solve_ivp(method="BDF", rtol=1e-9, atol=1e-20)``
to ``--t-end`` (0.1 s: past ignition, major species within 0.5% of equilibrium) with each of

* ``jac=`` symgrad's sparse Jacobian (the direct path: one generated statement per nonzero);
* ``jac=`` symgrad's dense Jacobian;
* ``jac_sparsity=`` the same pattern (SciPy's grouped finite differences of the compiled right-hand side);

against Cantera's ``IdealGasConstPressureReactor`` with the energy equation off (rtol 1e-12).  Also
reported: the patterns and densities of ``d wdot / dC`` and of the equation's Jacobian, and each
Jacobian's build (trace and plan; the first call, which compiles the kernel; one evaluation).
Every kernel is compiled before its timed use: the first-call column runs until the compiled
tier serves calls (``wait_compiled()``; for these large programs the native tier, which LLVM
compiles from the instruction tape in a thread, while the first call answers from the
interpreter), so no compile competes with the timed runs.
With a warm symgrad cache (``SYMGRAD_CACHE_DIR``) the first calls are disk-cache loads.

Run: ``python benchmarks/bench_grimech_bdf.py`` (replaces its section of benchmarks/results/sparse.md;
under a minute on a 2-core machine with a cold cache).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

from _common import fmt_t, median_time, table  # noqa: E402

import symgrad as sg  # noqa: E402

BEGIN, END = "<!-- bench_grimech_bdf: begin -->", "<!-- bench_grimech_bdf: end -->"


def _build(jac, c):
    """(plan seconds, first-call seconds, median evaluation seconds)."""
    t = time.perf_counter()
    if hasattr(jac, "plan"):
        jac.plan(c)
    plan = time.perf_counter() - t
    t = time.perf_counter()
    jac(c)
    if hasattr(jac, "wait_compiled"):
        jac.wait_compiled()
    first = time.perf_counter() - t
    return plan, first, median_time(lambda: jac(c), repeats=51)


def run(t_end: float):
    import cantera as ct
    from grimech import (Mechanism, cantera_reference, initial_state, integrate, make_isothermal_isobaric_ode,
                         make_rhs, max_relative_difference)

    gas = ct.Solution("gri30.yaml")
    c0, c_total = initial_state(gas)
    n = gas.n_species
    wdot = make_rhs(Mechanism(gas))
    ode = make_isothermal_isobaric_ode(wdot, c_total)
    rhs = sg.jit(ode, stabilize=False)
    t = time.perf_counter()
    rhs(c0)
    rhs.wait_compiled()
    rhs_first = time.perf_counter() - t
    rhs_ev = median_time(lambda: rhs(c0), repeats=51)

    p_w = sg.jacobian_sparsity(wdot, c0)
    p_ode = sg.jacobian_sparsity(ode, c0)
    empty = np.flatnonzero(~p_w.toarray().any(axis=0))
    empty_text = ("d wdot / dC has no empty column (every species is a collision partner of some third-body "
                  "reaction)" if not len(empty) else f"the {len(empty)} empty columns of d wdot / dC "
                  f"({', '.join(gas.species_names[k] for k in empty)}) keep only their diagonal -sum(wdot) / C_total")
    notes = [f"Patterns (from the graph): d wdot / dC has {p_w.nnz} of {n * n} entries ({p_w.nnz / n ** 2:.1%}); "
             f"the constant-pressure equation's Jacobian has {p_ode.nnz} ({p_ode.nnz / n ** 2:.1%}): the term "
             f"-C (1^T dW) / C_total fills every column some rate depends on, and {empty_text}.",
             f"Right-hand side (sg.jit, compiled primal): first call to compiled tier {fmt_t(rhs_first)}, evaluation {fmt_t(rhs_ev)}."]

    jacs = {"sparse symgrad (direct)": sg.jacobian(ode, sparse=True, stabilize=False),
            "dense symgrad": sg.jacobian(ode, stabilize=False)}
    builds, values = {}, {}
    for name, jac in jacs.items():
        builds[name] = _build(jac, c0)
        v = jac(c0)
        values[name] = v.toarray() if hasattr(v, "toarray") else v
        print(name, builds[name], flush=True)
    scale = np.abs(values["dense symgrad"]).max()
    jdiff = np.abs(values["sparse symgrad (direct)"] - values["dense symgrad"]).max() / scale

    sols = {name: integrate(rhs, c0, t_end, jac=jac) for name, jac in jacs.items()}
    sols["FD + jac_sparsity"] = integrate(rhs, c0, t_end, jac_sparsity=p_ode)
    ref = cantera_reference(gas, t_end)
    base = sols["sparse symgrad (direct)"].y[:, -1]
    rows = []
    for name, sol in sols.items():
        y = sol.y[:, -1]
        nnz, build = (p_ode.nnz, builds.get(name)) if name != "dense symgrad" else (n * n, builds[name])
        rows.append([name, f"{nnz:,} ({nnz / n ** 2:.1%})",
                     "–" if build is None else f"{fmt_t(build[0])} + {fmt_t(build[1])}",
                     "–" if build is None else fmt_t(build[2]),
                     f"{sol.wall:.2f} s", sol.nfev, sol.njev, sol.nlu,
                     f"{max_relative_difference(y, ref):.1e}", f"{max_relative_difference(y, ref, 1e-12):.1e}",
                     "–" if y is base else f"{max_relative_difference(y, base, 1e-12):.1e}"])
        print(rows[-1], flush=True)
    notes.append(f"The sparse and dense symgrad Jacobians at C(0) agree to {jdiff:.1e} of max |J|.")
    return rows, notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--t-end", type=float, default=0.1, help="end time in seconds (default 0.1)")
    parser.add_argument("--out", default=str(HERE / "results" / "sparse.md"))
    a = parser.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    rows, notes = run(a.t_end)
    import cantera
    import numba
    import scipy
    cmd = "python benchmarks/bench_grimech_bdf.py" + (f" --t-end {a.t_end:g}" if a.t_end != 0.1 else "")
    text = "\n".join([
        BEGIN, f"## GRI-Mech 3.0, isothermal and isobaric, BDF to t = {a.t_end:g} s", "",
        table(["", ""], [["date", f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"],
                         ["command", f"`{cmd}` (one run)"],
                         ["load (`uptime` at the start)", load],
                         ["platform", f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"],
                         ["numpy / scipy / numba / cantera", f"{np.__version__} / {scipy.__version__} / "
                          f"{numba.__version__} / {cantera.__version__}"]]), "",
        "Stoichiometric CH4/air at 1500 K and 1 atm, `dC/dt = wdot - C sum(wdot) / C_total`, "
        "`solve_ivp(method=\"BDF\", rtol=1e-9, atol=1e-20)`; the right-hand side is symgrad's compiled primal "
        "in every run. Build = plan (trace, pattern, entry nodes) + first call (emit and Numba compile); "
        "evaluation = median of 51 calls at C(0). Differences: max |y - ref| / ref at t_end over the species "
        "whose ref is above 1e-3 (major) or 1e-12 of the largest concentration; ref = Cantera's "
        "`IdealGasConstPressureReactor(energy=\"off\")` (rtol 1e-12, atol 1e-22) or the sparse-jac run.", "",
        table(["jac", "nonzeros (density)", "build", "evaluation", "BDF wall", "nfev", "njev", "nlu",
               "vs Cantera, major", "vs Cantera, > 1e-12", "vs sparse run"], rows), "",
        *notes, END])
    print(text)
    out = Path(a.out)
    old = out.read_text() if out.exists() else ""
    if BEGIN in old:
        new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda m: text, old, flags=re.DOTALL)
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    out.write_text(new)


if __name__ == "__main__":
    main()
