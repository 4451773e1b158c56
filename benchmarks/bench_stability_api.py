"""bench_stability's expressions as a user runs them: ``sg.jit`` and ``sg.grad`` of a NumPy function.

``bench_stability.py`` calls the stabiliser directly, with each expression's domain and a
2 s CPU cap per expression.  A user writes a NumPy function and calls ``sg.jit(f)`` or
``sg.grad(f, argnums=i)``: the program pass then searches with no domain (bit patterns of every
magnitude and sign) and within the whole program's budget of 1 s CPU.  This script measures that
path on the same expressions and the same kind of sample (``make_sample``, seed 1, inside each
expression's domain, where the reference is finite), with the formula as written in the same
dtype alongside, and counts the cases the never-worse criterion of issue 16 flags.

Each expression becomes a NumPy function with ``sympy.lambdify`` (SciPy's functions for erf and
erfc: a user writes ``scipy.special.erf``).  One program per part: ``sg.jit(f)`` for f and
``sg.grad(f, argnums=i)`` for each partial.

Run: ``python benchmarks/bench_stability_api.py [--n 128] [--only NAME ...]``
(about 10 minutes on 2 cores: it compiles some 400 kernels).  Writes
``benchmarks/results/stability_api.md``.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import sys
import tempfile
import time

os.environ.setdefault("SYMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="symgrad-stability-api-"))

import numpy as np  # noqa: E402
import scipy.special  # noqa: E402
import sympy as sp  # noqa: E402

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symgrad as sg  # noqa: E402
from _common import write_markdown  # noqa: E402
from bench_stability import SUITE, TWO_ULPS  # noqa: E402
from symgrad.stabilize.accuracy import make_sample, point_bits, ulp_bits  # noqa: E402

accept = importlib.import_module("symgrad.stabilize.accept")  # the package re-exports a function of that name
MODULES = [{"erf": scipy.special.erf, "erfc": scipy.special.erfc}, "numpy"]


def _kernels(f, vs):
    """``(program's function, [(part, derivative expression, compiled callable)])``: ``sg.jit`` of
    f, ``sg.grad`` per input.  The function is the one the program computes: where the NumPy
    function holds rounded constants (``np.sqrt(2)``, ``np.sqrt(2 / np.pi)``), the traced
    expression with those floats (:func:`symgrad.trace`), else f itself.  Its references are
    the program's exact values: the normal survival function's derivative with the rounded
    ``1/sqrt(2)`` differs from the exact one by 600 ulps at x = -30, which no kernel of the program
    can know."""
    fn = sp.lambdify(vs, f, modules=MODULES)
    traced = sg.trace(fn, *[0.5] * len(vs)).expr
    if traced.atoms(sp.Float):
        by_name = {str(v): v for v in vs}
        f = traced.xreplace({s: by_name[str(s)] for s in traced.free_symbols})
    out = [("f", f, sg.jit(fn))]
    for i, v in enumerate(vs):
        out.append((f"d/d{v}", sp.diff(f, v), sg.grad(fn, argnums=i)))
    return f, out


def run(n: int, out: str, only=None):
    rows, cells, flags, failures = [], [], [], []
    t_all = time.perf_counter()
    for name, f, vs, dom in SUITE:
        if only and name not in only:
            continue
        try:
            f, parts = _kernels(f, vs)
        except Exception as exc:  # noqa: BLE001 - report and continue
            failures.append(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            continue
        for part, e, kern in parts:
            line = [name, part]
            for dt in ("float64", "float32"):
                s = make_sample(e, vs, dt, domain=dom, n=n, seed=1)
                if not len(s.X):
                    line += ["", ""]
                    continue
                try:
                    with np.errstate(all="ignore"):
                        got = np.broadcast_to(np.asarray(kern(*[s.X[:, j] for j in range(len(vs))])), (len(s.X),))
                except Exception as exc:  # noqa: BLE001 - a call that fails is a result
                    failures.append(f"{name} {part} {dt}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
                    line += ["error", ""]
                    continue
                sb = ulp_bits(np.asarray(got, dtype=dt), s.ref)
                nb = point_bits(e, vs, s)
                worse = sb.mean() > nb.mean() + 0.5 or bool(accept._lost(e, vs, s, nb, sb).any())
                strict = bool(np.any((nb <= 1.0) & (sb > TWO_ULPS + 1e-9)))
                if worse or strict:
                    flags.append((f"{name} {part} {dt}", "worse" if worse else "cond"))
                cells.append((nb.mean(), sb.mean(), sb.max(), int((sb >= 31.99).sum())))
                line += [f"{nb.mean():.2f} / {nb.max():.1f}", f"{sb.mean():.2f} / {sb.max():.1f}"]
            rows.append("| " + " | ".join(line) + " |")
            print(rows[-1], flush=True)
    C = np.array(cells)
    head = [
        "# Numerical stability through the public API (sg.jit / sg.grad, no domain)", "",
        f"Date: {datetime.datetime.now().isoformat(timespec='seconds')}  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}  ",
        f"Command: `python benchmarks/bench_stability_api.py --n {n}`; wall time {time.perf_counter() - t_all:.0f} s  ",
        f"Sample: {n} points per dtype (seed 1) inside each expression's domain; the kernels were built "
        "without it, as a user's are; the program budget is the default (1 s CPU).", "",
        f"**Summary** over {len(C)} (expression, part, dtype) cases: mean bits naive {C[:, 0].mean():.2f} -> "
        f"through the API {C[:, 1].mean():.2f}; cases under 1 bit: {(C[:, 1] < 1).sum()}/{len(C)}; cases with "
        f"NaN/inf-level points: {(C[:, 3] > 0).sum()}; worse than the formula as written (mean more than 0.5 bit "
        f"above it, or beyond 2 ulps and the conditioning bound where it is within 1 ulp): "
        f"{sum(v == 'worse' for _, v in flags)}"
        + "".join(f"; {c}" for c, v in flags if v == "worse")
        + f". Beyond 2 ulps where it is within 1 ulp, within the conditioning bound: "
        f"{sum(v == 'cond' for _, v in flags)}" + "".join(f"; {c}" for c, v in flags if v == "cond") + ".", "",
    ] + ([f"Failures: {'; '.join(failures)}.", ""] if failures else []) + [
        "Bits of error = log2(1 + ulps from the correctly rounded reference); mean / max.", "",
        "| expression | part | f64 naive | f64 API | f32 naive | f32 API |",
        "|---|---|---|---|---|---|",
    ]
    write_markdown(out, head + rows)
    print("\n".join(head[:9]))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--only", nargs="*", default=None, help="expression names (default: all)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "stability_api.md"))
    args = ap.parse_args()
    run(args.n, args.out, args.only)
