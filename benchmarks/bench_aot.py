"""First-call time: ahead-of-time modules (`symgrad compile`) against the JIT path.

Every measurement runs in a fresh interpreter and times, inside it, the import
plus the first result of ``softplus_grad`` on a 1000-element float64 array
(``perf_counter`` around ``import`` and the call); the whole process's wall
time (interpreter start-up included) is reported beside it.

* AOT ``.py`` module, cold: its ``__pycache__`` (Numba's cache) removed first.
* AOT ``.py`` module, warm: Numba's cache beside the module is populated.
* AOT ``--shared`` module: numpy-only wrapper plus the extension; import time
  measured separately with numpy already imported (the 50 ms target).
* JIT path, cold: ``import symgrad; symgrad.grad(softplus)(x)`` with an empty
  ``SYMGRAD_CACHE_DIR`` (trace, differentiate, stabilise, emit, compile).
* JIT path, disk-cached: the same with the cache directory populated.

Targets (issue 5): <= 0.3 s for the warm ``.py`` module, < 50 ms for the shared
module's import.  Run: ``python benchmarks/bench_aot.py [--repeats 5]``; writes
``benchmarks/results/aot.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "softplus.py"

AOT_SNIPPET = """
import time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import {mod} as m
t2 = time.perf_counter()
r = m.softplus_grad(np.linspace(-5.0, 5.0, 1000))
t3 = time.perf_counter()
print(json.dumps({{"total": t3 - t0, "numpy": t1 - t0, "import": t2 - t1, "call": t3 - t2}}))
"""

JIT_SNIPPET = """
import time
t0 = time.perf_counter()
import numpy as np
import symgrad
sys.path.insert(0, {examples!r})
from softplus import softplus
t1 = time.perf_counter()
r = symgrad.grad(softplus)(np.linspace(-5.0, 5.0, 1000))
t2 = time.perf_counter()
print(json.dumps({{"total": t2 - t0, "import": t1 - t0, "call": t2 - t1}}))
"""


def run(code: str, cwd: Path, env=None, block=()) -> dict:
    pre = "import json, sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in block) + f"sys.path.insert(0, {str(cwd)!r})\n"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", pre + code], capture_output=True, text=True, cwd=cwd,
                       env=dict(os.environ, **(env or {})), timeout=600)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def median(rows, key):
    return statistics.median(r[key] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cold-repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "aot.md"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="symgrad_bench_aot_"))
    results = {}
    try:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "symgrad", "compile", f"{SOURCE}:softplus", "--grad",
                        "-o", str(work / "sp_aot.py")], check=True, capture_output=True)
        build_py = time.perf_counter() - t
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "symgrad", "compile", f"{SOURCE}:softplus", "--grad",
                            "--dtype", "float64", "--shared", "-o", str(work / "sp_shared.py")],
                           capture_output=True, text=True)
        build_shared = time.perf_counter() - t
        shared_ok = r.returncode == 0
        block = ("sympy", "symgrad")
        code = AOT_SNIPPET.format(mod="sp_aot")
        cold = []
        for _ in range(args.cold_repeats):
            shutil.rmtree(work / "__pycache__", ignore_errors=True)
            cold.append(run(code, work, block=block))
        results["AOT .py module, cold (no Numba cache)"] = cold
        results["AOT .py module, warm Numba cache"] = [run(code, work, block=block) for _ in range(args.repeats)]
        if shared_ok:
            results["AOT --shared module (numpy only)"] = [
                run(AOT_SNIPPET.format(mod="sp_shared"), work, block=block + ("numba",)) for _ in range(args.repeats)]
        jit_cold = []
        for _ in range(args.cold_repeats):
            cache = tempfile.mkdtemp(prefix="symgrad_bench_cache_")
            jit_cold.append(run(JIT_SNIPPET.format(examples=str(SOURCE.parent)), work, {"SYMGRAD_CACHE_DIR": cache}))
        results["JIT path, cold (empty cache)"] = jit_cold
        results["JIT path, disk-cached"] = [run(JIT_SNIPPET.format(examples=str(SOURCE.parent)), work,
                                                {"SYMGRAD_CACHE_DIR": cache}) for _ in range(args.repeats)]
        bare = [run("print(json.dumps({'total': 0.0}))", work) for _ in range(args.repeats)]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = ["# Ahead-of-time modules: first-call time", "",
             f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
             f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, {_cpu()}, {platform.platform()}",
             f"- Python {platform.python_version()}; numpy {_ver('numpy')}; numba {_ver('numba')}",
             f"- function: `examples/softplus.py:softplus`, `softplus_grad` on a 1000-element float64 array",
             f"- medians of {args.repeats} runs ({args.cold_repeats} for cold rows), each in a fresh process",
             f"- build: `symgrad compile` {build_py:.1f} s; `--shared` {build_shared:.1f} s"
             + ("" if shared_ok else " (FAILED: " + r.stderr.strip().splitlines()[-1] + ")"),
             f"- bare interpreter start-up (`python -c` with nothing imported): {median(bare, 'wall'):.2f} s", "",
             "| path | import + first result (in process) | of which import | of which first call | "
             "whole process (wall) |", "|---|---|---|---|---|"]
    for name, rows in results.items():
        imp = median(rows, "import") + (median(rows, "numpy") if "numpy" in rows[0] else 0.0)
        lines.append(f"| {name} | {median(rows, 'total') * 1e3:.0f} ms | {imp * 1e3:.0f} ms | "
                     f"{median(rows, 'call') * 1e3:.1f} ms | {median(rows, 'wall'):.2f} s |")
    if shared_ok:
        rows = results["AOT --shared module (numpy only)"]
        lines += ["", f"`--shared` module import alone (numpy already imported): "
                      f"{median(rows, 'import') * 1e3:.1f} ms (target < 50 ms); numpy import: "
                      f"{median(rows, 'numpy') * 1e3:.0f} ms."]
    warm = results["AOT .py module, warm Numba cache"]
    lines += ["", f"Warm `.py` module, import + first result: {median(warm, 'total') * 1e3:.0f} ms (target <= 300 ms); "
                  f"numpy import {median(warm, 'numpy') * 1e3:.0f} ms of it, numba import inside the module import.", "",
              "Notes (profiled with cProfile / -X importtime on this machine):", "",
              "- The warm `.py` module misses the 0.3 s target because of Numba itself: `import numba` takes "
              "0.2-0.7 s, and the first load of any cached kernel initialises Numba's CPU target "
              "(`BaseContext.refresh`, which imports `numba.np.arraymath` and, for its BLAS check, "
              "`scipy.linalg`: about 0.3 s with SciPy installed).  The generated kernels and helpers are lazy "
              "`njit` functions, so this cost sits in the first call; it cannot be removed without leaving "
              "Numba at run time, which is what `--shared` does.  The JIT path pays the same plus SymPy/symgrad "
              "imports and tracing.",
              "- The `--shared` module (numba.pycc) avoids Numba at run time: its import is a few ms; what remains "
              "is the numpy import and interpreter start-up.",
              "- The machine was shared with other jobs while measuring (2 CPUs); absolute numbers are noisy, "
              "the ratios are stable across reruns.", ""]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


def _ver(name):
    try:
        return __import__(name).__version__
    except Exception:
        return "?"


def _cpu():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
