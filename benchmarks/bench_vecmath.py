"""Vectorised elementary functions (issue 19): a Numba loop calling math.exp/log/sin ... vs symgrad.emit.vecmath vs NumPy.

For n = 10^7 points (x ~ N(0, 30); log: |x|; tanh: x/10), float64 and float32, one thread, the same
array each time: ``for i in range(n): out[i] = f(x[i])`` compiled by Numba (no fastmath)
with scalar libm calls (``math.exp``/``math.log``/``math.sin`` ...; for sigmoid and softplus the forms of
emit/prelude.py's ``_sigmoid``/``_softplus``) and with ``vecmath.*``, against NumPy
(``np.exp(x, out=out)``, SIMD; sigmoid/softplus as the same stable forms in NumPy calls).
Medians of REPEATS runs after one warm-up; ratios are measured in the same run.  The
maximum ulp error of each vecmath call over the same points (against long double) is
printed too (and NumPy's), so a speed-up that costs accuracy shows.

    python benchmarks/bench_vecmath.py          -> benchmarks/results/vecmath.md
"""
from __future__ import annotations

import datetime
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import fmt_t, table  # noqa: E402

from symgrad.emit import vecmath as vm  # noqa: E402

N, REPEATS = 10_000_000, 7


@numba.njit(error_model="numpy", nogil=True)
def loop_math_exp(x, out):
    for i in range(x.size):
        out[i] = math.exp(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_exp(x, out):
    for i in range(x.size):
        out[i] = vm.exp(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_math_log(x, out):
    for i in range(x.size):
        out[i] = math.log(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_log(x, out):
    for i in range(x.size):
        out[i] = vm.log(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_math_expm1(x, out):
    for i in range(x.size):
        out[i] = math.expm1(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_expm1(x, out):
    for i in range(x.size):
        out[i] = vm.expm1(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_math_tanh(x, out):
    for i in range(x.size):
        out[i] = math.tanh(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_tanh(x, out):
    for i in range(x.size):
        out[i] = vm.tanh(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_math_sigmoid(x, out):      # emit/prelude.py's _sigmoid, scalar libm exp
    for i in range(x.size):
        e = np.exp(-abs(x[i]))
        out[i] = (1.0 if x[i] >= 0 else e) / (1.0 + e)


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_sigmoid(x, out):
    for i in range(x.size):
        out[i] = vm.sigmoid(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_math_softplus(x, out):     # emit/prelude.py's _softplus, scalar libm exp and log1p
    for i in range(x.size):
        out[i] = max(x[i], 0.0) + np.log1p(np.exp(-abs(x[i])))


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_softplus(x, out):
    for i in range(x.size):
        out[i] = vm.softplus(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_math_sin(x, out):
    for i in range(x.size):
        out[i] = math.sin(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_sin(x, out):
    for i in range(x.size):
        out[i] = vm.sin(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_math_cos(x, out):
    for i in range(x.size):
        out[i] = math.cos(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_cos(x, out):
    for i in range(x.size):
        out[i] = vm.cos(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_fdlibm_log(x, out):        # the former log_f64 (fdlibm e_log.c), now the float32 functions' log
    for i in range(x.size):
        out[i] = vm._log_fdlibm(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_vm_log1p(x, out):
    for i in range(x.size):
        out[i] = vm.log1p_f64(x[i])


@numba.njit(error_model="numpy", nogil=True)
def loop_fdlibm_log1p(x, out):      # the former log1p_f64 (fdlibm s_log1p.c)
    for i in range(x.size):
        out[i] = vm._log1p_fdlibm(x[i])


def interleaved_medians(fns: dict, *args) -> dict:
    """``{name: median seconds}`` of ``REPEATS`` rounds, each round running every function once (so
    the machine's load falls on all of them alike; their ratios are the figures to read)."""
    for fn in fns.values():
        fn(*args)
    times = {k: [] for k in fns}
    for _ in range(REPEATS):
        for k, fn in fns.items():
            s = time.perf_counter()
            fn(*args)
            times[k].append(time.perf_counter() - s)
    return {k: statistics.median(v) for k, v in times.items()}


def misrounded(y, x, f) -> float:
    """Share of ``y`` (float64) that differ from the long double value of ``f`` rounded to float64
    (the reference is within about 2^-11 ulp, so a few in 10^4 of the differences may be its own)."""
    ref = f(x.astype(np.longdouble)).astype(np.float64)
    ok = np.isfinite(ref)
    return float(np.mean(y[ok] != ref[ok]))


def log_rows(rng) -> list:
    """float64 log and log1p: the table-driven functions against fdlibm's (their former versions,
    still the float32 functions' kernels) and NumPy, timed interleaved; share of misrounded results."""
    rows = []
    base = np.abs(rng.normal(0.0, 30.0, N))
    near1 = 1.0 + rng.uniform(-0.05, 0.05, N)
    for name, x, table_loop, fdlibm_loop, ufunc in (
            ("log, x = abs(N(0, 30))", base, loop_vm_log, loop_fdlibm_log, np.log),
            ("log, x = 1 + U(-0.05, 0.05)", near1, loop_vm_log, loop_fdlibm_log, np.log),
            ("log1p, x = abs(N(0, 30))", base, loop_vm_log1p, loop_fdlibm_log1p, np.log1p),
            ("log1p, x = U(-0.05, 0.05)", near1 - 1.0, loop_vm_log1p, loop_fdlibm_log1p, np.log1p)):
        outs = {k: np.empty_like(x) for k in ("table", "fdlibm", "numpy")}
        t = interleaved_medians({"table": lambda: table_loop(x, outs["table"]),
                                 "fdlibm": lambda: fdlibm_loop(x, outs["fdlibm"]),
                                 "numpy": lambda: ufunc(x, out=outs["numpy"])})
        sub = slice(0, 10**6)
        miss = {k: misrounded(outs[k][sub], x[sub], ufunc) for k in outs}
        rows.append([name, fmt_t(t["table"]), fmt_t(t["fdlibm"]), fmt_t(t["numpy"]),
                     f"{t['table'] / t['fdlibm']:.2f}", f"{100 * miss['table']:.3f} %",
                     f"{100 * miss['fdlibm']:.3f} %", f"{100 * miss['numpy']:.3f} %"])
        print(rows[-1], flush=True)
    return rows


def np_sigmoid(x, out):
    e = np.exp(-np.abs(x))
    return np.divide(np.where(x >= 0, 1, e), 1 + e, out=out)


def np_softplus(x, out):
    return np.add(np.maximum(x, 0), np.log1p(np.exp(-np.abs(x))), out=out)


def median_time(fn, *args) -> float:
    fn(*args)
    times = []
    for _ in range(REPEATS):
        s = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - s)
    return statistics.median(times)


def max_ulp(y, x, f, dtype) -> float:
    ref = f(x.astype(np.longdouble))
    ok = np.isfinite(ref.astype(dtype)) & (ref != 0)
    fi = np.finfo(dtype)
    _, e = np.frexp(ref[ok])
    ulp = np.ldexp(np.longdouble(1), np.maximum(e.astype(np.int64) - 1, fi.minexp) - fi.nmant)
    return float(np.max(np.abs(y[ok].astype(np.longdouble) - ref[ok]) / ulp))


def main() -> None:
    rng = np.random.default_rng(0)
    load_start = os.getloadavg()
    rows = []
    for dtype in (np.float64, np.float32):
        base = rng.normal(0.0, 30.0, N).astype(dtype)
        for name, x, loops, ufunc in (
                ("exp", base, (loop_math_exp, loop_vm_exp), np.exp),
                ("expm1", base, (loop_math_expm1, loop_vm_expm1), np.expm1),
                ("log", np.abs(base), (loop_math_log, loop_vm_log), np.log),
                ("tanh", base / 10, (loop_math_tanh, loop_vm_tanh), np.tanh),
                ("sigmoid", base, (loop_math_sigmoid, loop_vm_sigmoid), np_sigmoid),
                ("softplus", base, (loop_math_softplus, loop_vm_softplus), np_softplus),
                ("sin", base, (loop_math_sin, loop_vm_sin), np.sin),
                ("cos", base, (loop_math_cos, loop_vm_cos), np.cos)):
            out = np.empty_like(x)
            with np.errstate(all="ignore"):
                t_math = median_time(loops[0], x, out)
                t_vm = median_time(loops[1], x, out)
                err = max_ulp(out, x, lambda v: ufunc(v, out=np.empty_like(v)), dtype)
                t_np = median_time(lambda: ufunc(x, out=out))
                err_np = max_ulp(out, x, lambda v: ufunc(v, out=np.empty_like(v)), dtype)
            rows.append([name, np.dtype(dtype).name, fmt_t(t_math), fmt_t(t_vm), fmt_t(t_np),
                         f"{t_math / t_vm:.1f}x", f"{t_vm / t_np:.2f}", f"{err:.3f}", f"{err_np:.3f}"])
            print(rows[-1], flush=True)
    import llvmlite.binding as llvm
    cpu = platform.processor() or platform.machine()
    load = " ".join(f"{v:.2f}" for v in load_start) + " at the start, " + " ".join(f"{v:.2f}" for v in os.getloadavg())
    head = (f"Machine: {cpu}, {os.cpu_count()} cores (shared; load average {load} at the end), LLVM host CPU "
            f"{numba.core.config.CPU_NAME or llvm.get_host_cpu_name()}; numba {numba.__version__}, numpy {np.__version__}; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"n = {N:,}, median of {REPEATS}; command: python benchmarks/bench_vecmath.py")
    md = head + "\n\n" + table(["function", "dtype", "Numba loop, math.*", "Numba loop, vecmath",
                                "NumPy", "vecmath speed-up over math.*", "vecmath / NumPy",
                                "vecmath max ulp (these points)", "NumPy max ulp"], rows)
    md += ("\n\nfloat64 log and log1p, table-driven (vecmath) against fdlibm's formulas (vecmath's before "
           "2026-11-29, still its float32 kernels) and NumPy; times interleaved, median of "
           f"{REPEATS}; misrounded: results that differ from the long double reference rounded to float64, "
           "on the first 10^6 points\n\n" + table(
               ["function, points", "vecmath (table)", "fdlibm", "NumPy", "table / fdlibm", "misrounded: table",
                "fdlibm", "NumPy"], log_rows(rng)))
    out_dir = Path(__file__).resolve().parent / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "vecmath.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
