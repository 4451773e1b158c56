"""Issue 19's table: symgrad's elementwise and Rosenbrock kernels against the best finite, correct peer.

Rows (one run, one thread, medians of interleaved repeats, ratios from the same run):

* d/dx log(1 + exp(x)) and log(1 + exp(x)) itself, 10^7 points x ~ N(0, 30), float64 and float32:
  ``sg.grad(f)`` / ``sg.jit(f)`` on the naive formula, built with the vecmath helpers
  (default) and with ``SYMGRAD_VECMATH=0`` (libm calls), against NumPy's stable forms
  ``1/(1 + exp(-x))`` and ``maximum(x, 0) + log1p(exp(-abs(x)))`` (finite and correct on these
  points) and against the memory-copy floor ``np.copyto(out, x)`` (read x, write out).
* Rosenbrock gradient and Hessian-vector product, n = 10^4 and 100: ``sg.grad(rosen,
  signature="(n)->()")`` and ``sg.hvp`` against the hand-written ``numba.njit`` loops of
  benchmarks/peers.py.

Targets (issue 19, point 3): elementwise rows at most 0.8x the best peer and within 3x the
copy floor; Rosenbrock at most 1.2x hand-written Numba at n = 10^4 and 1.5x at n = 100.
Each symgrad result is checked against a reference (relative error printed) so a speed-up
that costs accuracy shows.

    python benchmarks/bench_issue19.py          -> benchmarks/results/issue19.md
"""
from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("SYMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="symgrad-issue19-"))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import fmt_t, table  # noqa: E402

import symgrad as sg  # noqa: E402

N = 10_000_000
np.seterr(all="ignore")


def interleaved(cands: dict, repeats: int) -> dict:
    """{name: median seconds}: every candidate once per round, ``repeats`` rounds after a warm-up."""
    for fn in cands.values():
        fn()
    times = {k: [] for k in cands}
    for _ in range(repeats):
        for k, fn in cands.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def built(make, vecmath: bool, *example):
    """``make()`` built and compiled (by one call on ``example``) with SYMGRAD_VECMATH set as given:
    symgrad reads it when it emits the kernel, at the first call, not when ``make()`` returns."""
    old = os.environ.get("SYMGRAD_VECMATH")
    os.environ["SYMGRAD_VECMATH"] = "1" if vecmath else "0"
    try:
        fn = make()
        fn(*example)
        wait = getattr(fn, "wait_compiled", None)
        if wait is not None:
            wait()
        return fn
    finally:
        if old is None:
            del os.environ["SYMGRAD_VECMATH"]
        else:
            os.environ["SYMGRAD_VECMATH"] = old


def softplus(x):
    return np.log(1 + np.exp(x))


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@numba.njit
def grad_hand(x):  # benchmarks/peers.py's hand-written Rosenbrock gradient
    g = np.zeros_like(x)
    for k in range(x.shape[0] - 1):
        d = x[k + 1] - x[k] * x[k]
        g[k] += -400.0 * x[k] * d - 2.0 * (1.0 - x[k])
        g[k + 1] += 200.0 * d
    return g


@numba.njit
def hvp_hand(x, v):  # benchmarks/peers.py's hand-written Rosenbrock HVP
    out = np.zeros_like(x)
    for k in range(x.shape[0] - 1):
        a = 1200.0 * x[k] * x[k] - 400.0 * x[k + 1] + 2.0
        b = -400.0 * x[k]
        out[k] += a * v[k] + b * v[k + 1]
        out[k + 1] += b * v[k] + 200.0 * v[k + 1]
    return out


def relerr(y, ref, tiny: float = 1e-300) -> float:
    """Max |y - ref| / max(|ref|, tiny) (tiny: the dtype's smallest normal, so results that
    underflow in that dtype count as absolute errors); inf when y has a non-finite value."""
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        return float("inf")
    return float(np.max(np.abs(y - ref) / np.maximum(np.abs(ref), tiny)))


def elementwise_rows(repeats: int) -> tuple[list, list]:
    """(table rows, NumPy's SIMD exp alone against the copy floor in the same runs)."""
    rows, exp_alone = [], []
    x64 = np.random.default_rng(0).normal(0.0, 30.0, N)
    xl = x64.astype(np.longdouble)
    el = np.exp(-np.abs(xl))
    ref = {"df": (np.where(xl >= 0, 1, el) / (1 + el)).astype(np.float64), "f": np.logaddexp(0.0, x64)}
    for dtype in (np.float64, np.float32):
        x = x64.astype(dtype)
        out = np.empty_like(x)
        one = dtype(1)
        numpy_forms = {"df": ("NumPy `1/(1+exp(-x))`", lambda: np.divide(one, one + np.exp(-x), out=out)),
                       "f": ("NumPy `maximum(x,0)+log1p(exp(-abs(x)))`",
                             lambda: np.add(np.maximum(x, 0), np.log1p(np.exp(-np.abs(x))), out=out))}
        for kind in ("df", "f"):
            make = (lambda: sg.grad(softplus)) if kind == "df" else (lambda: sg.jit(softplus))
            fns = {"vm": built(make, True, x[:10]), "libm": built(make, False, x[:10])}
            label, np_fn = numpy_forms[kind]
            cands = {"symgrad": lambda: fns["vm"](x), "symgrad libm": lambda: fns["libm"](x), "numpy": np_fn,
                     "copy": lambda: np.copyto(out, x), "np.exp": lambda: np.exp(x, out=out)}
            t = interleaved(cands, repeats)
            tiny = float(np.finfo(dtype).smallest_normal)
            errs = {k: relerr(fns[k](x), ref[kind], tiny) for k in fns}
            np_err = relerr(np_fn(), ref[kind], tiny)
            what = "d/dx log(1+exp(x))" if kind == "df" else "log(1+exp(x))"
            rows.append([f"{what}, {np.dtype(dtype).name}", fmt_t(t["symgrad"]), fmt_t(t["symgrad libm"]),
                         f"{label} {fmt_t(t['numpy'])}", f"{t['symgrad'] / t['numpy']:.2f}",
                         f"{t['symgrad libm'] / t['numpy']:.2f}", fmt_t(t["copy"]), f"{t['symgrad'] / t['copy']:.1f}",
                         f"{errs['vm']:.1e} / {errs['libm']:.1e} / {np_err:.1e}"])
            print(rows[-1], flush=True)
            exp_alone.append([f"NumPy `exp(x)` alone, {np.dtype(dtype).name} ({what} run)", fmt_t(t["np.exp"]),
                              fmt_t(t["copy"]), f"{t['np.exp'] / t['copy']:.1f}"])
    return rows, exp_alone



def rosen_rows(repeats: int) -> list:
    rows = []
    from scipy.optimize import rosen_der, rosen_hess_prod

    for n in (10_000, 100):
        rng = np.random.default_rng(1)
        x, v = rng.uniform(-2, 2, n), rng.standard_normal(n)
        for kind in ("gradient", "Hessian-vector product"):
            if kind == "gradient":
                make = lambda: sg.grad(rosen, signature="(n)->()")  # noqa: E731
                fns = {"vm": built(make, True, x), "libm": built(make, False, x)}
                cands = {"symgrad": lambda: fns["vm"](x), "symgrad libm": lambda: fns["libm"](x),
                         "hand": lambda: grad_hand(x)}
                ref = rosen_der(x)
                outs = {k: f(x) for k, f in fns.items()}
            else:  # no exp/log in Rosenbrock: vecmath changes nothing here, so one build
                fn = lambda x, v: sg.hvp(rosen, (x,), (v,), signature="(n)->()")  # noqa: E731
                cands = {"symgrad": lambda: fn(x, v), "hand": lambda: hvp_hand(x, v)}
                ref = rosen_hess_prod(x, v)
                outs = {"vm": fn(x, v)}
            t = interleaved(cands, repeats)
            limit = 1.2 if n >= 10_000 else 1.5
            ratio = t["symgrad"] / t["hand"]
            rows.append([f"Rosenbrock {kind}, n = {n}", fmt_t(t["symgrad"]),
                         fmt_t(t.get("symgrad libm")), f"hand-written Numba {fmt_t(t['hand'])}", f"{ratio:.2f}",
                         f"≤ {limit}: {'met' if ratio <= limit else 'NOT met'}",
                         f"{max(relerr(o, ref) for o in outs.values()):.1e}"])
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    import llvmlite.binding as llvm

    quick = "--quick" in sys.argv
    global N
    if quick:
        N = 100_000
    ew, exp_alone = elementwise_rows(3 if quick else 9)
    ro = rosen_rows(5 if quick else 201)
    cpu = platform.processor() or platform.machine()
    try:
        load = "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = ""
    head = (f"Machine: {cpu}, {os.cpu_count()} cores (shared; {load} at the end), LLVM host CPU "
            f"{numba.core.config.CPU_NAME or llvm.get_host_cpu_name()}; numba {numba.__version__}, "
            f"numpy {np.__version__}; {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"n = {N:,} elementwise; medians of interleaved repeats; command: python benchmarks/bench_issue19.py"
            + (" --quick" if quick else ""))
    md = head + "\n\n" + table(
        ["work", "symgrad (vecmath)", "symgrad (SYMGRAD_VECMATH=0)", "best peer", "ratio (target ≤ 0.8)",
         "libm ratio", "memory-copy floor", "× floor (target ≤ 3)", "max rel. error: vecmath / libm / peer"], ew)
    md += "\n\nFor scale, one elementary function with no accuracy guarantee beyond NumPy's (AVX-512, up to 0.67 ulp):\n\n"
    md += table(["work", "time", "memory-copy floor", "× floor"], exp_alone)
    md += "\n\n" + table(["work", "symgrad (vecmath)", "symgrad (SYMGRAD_VECMATH=0)", "hand-written", "ratio",
                          "target", "max rel. error vs SciPy"], ro)
    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    if not quick:
        (out_dir / "issue19.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
