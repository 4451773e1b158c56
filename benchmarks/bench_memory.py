"""Memory benchmark: elementwise kernels over 10^8 points allocate only their outputs.

Run:   python benchmarks/bench_memory.py            (10^8 points; needs ~4 GB free RAM, ~2 min)
       python benchmarks/bench_memory.py --quick    (10^7 points)

Writes benchmarks/results/memory.md.

Each case runs in a fresh process: it creates its inputs (without float64
temporaries), compiles on a small input of the same dtypes and layouts, then
resets the kernel's peak-RSS counter (``/proc/self/clear_refs``, Linux) and
records the resident set size as the baseline.  It makes one call and reads
the new peak (VmHWM).  The figure of merit is

    (peak - baseline) / bytes of the call's outputs

which is 1.0 when a call allocates nothing but its outputs.  A temporary
copy of one input-sized array adds about 1.0 for each copy.

Worker mode (used internally through subprocess):  --worker CASE N
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "memory.md"


def softplus(x):
    import numpy as np

    return np.log(1 + np.exp(x))


def two_input(x, y):
    import numpy as np

    return np.exp(-x * x) * np.tanh(y) + x * y


# name -> (description, transformation, how the inputs are made); n is the number of output points
CASES = {
    "jit_softplus": ("`jit(softplus)(x)`, x float32 (n,)", "jit", "f32"),
    "grad_softplus": ("`grad(softplus)(x)`, x float32 (n,)", "grad", "f32"),
    "value_and_grad_softplus": ("`value_and_grad(softplus)(x)`, x float32 (n,): two outputs",
                                "value_and_grad", "f32"),
    "jit_two_input": ("`jit(f)(x, y)`, x, y float32 (n,)", "jit2", "f32,f32"),
    "grad_two_input": ("`grad(f, argnums=(0, 1))(x, y)`, x, y float32 (n,): two outputs", "grad2", "f32,f32"),
    "jit_two_input_outer": ("`jit(f)(a[:, None], b[None, :])`, a, b float32 (√n,): broadcast outer product",
                            "jit2", "outer"),
    "jit_softplus_transposed": ("`jit(softplus)(X.T)`, X float32 (√n, √n): non-contiguous input", "jit",
                                "transposed"),
    "jit_two_input_mixed_dtype": ("`jit(f)(x, y)`, x float32, y float64 (n,): float64 result", "jit2",
                                  "f32,f64"),
    "jit_two_input_scalar": ("`jit(f)(x, 0.5)`, x float32 (n,), Python float y", "jit2", "f32,scalar"),
}


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _uniform(shape, dtype, lo, hi, seed):
    """Uniform random array of ``dtype`` made in place (no float64 temporary of the full size)."""
    import numpy as np

    out = np.empty(shape, dtype=dtype)
    np.random.default_rng(seed).random(out=out, dtype=dtype)
    out *= hi - lo
    out += lo
    return out


def make_inputs(kind: str, n: int):
    import numpy as np

    if kind == "f32":
        return (_uniform(n, np.float32, -20, 20, 0),)
    if kind == "f32,f32":
        return _uniform(n, np.float32, -3, 3, 0), _uniform(n, np.float32, -3, 3, 1)
    if kind == "f32,f64":
        return _uniform(n, np.float32, -3, 3, 0), _uniform(n, np.float64, -3, 3, 1)
    if kind == "f32,scalar":
        return _uniform(n, np.float32, -3, 3, 0), 0.5
    side = int(round(n ** 0.5))
    if kind == "outer":
        return _uniform(side, np.float32, -3, 3, 0)[:, None], _uniform(side, np.float32, -3, 3, 1)[None, :]
    if kind == "transposed":
        return (_uniform((side, side), np.float32, -20, 20, 0).T,)
    raise ValueError(kind)


def small_like(args):
    """Small inputs with the same dtypes, dimensions and layouts (so the call compiles nothing new)."""
    import numpy as np

    out = []
    for a in args:
        if not isinstance(a, np.ndarray):
            out.append(a)
        elif a.ndim == 1:
            out.append(a[:1000].copy())
        elif a.shape[0] == 1 or a.shape[1] == 1:
            out.append(a[:40, :40].copy())
        else:  # transposed
            out.append(np.ascontiguousarray(a[:40, :40].T).T)
    return tuple(out)


def worker(case: str, n: int) -> dict:
    import numpy as np

    import symgrad as sg

    _, transform, kind = CASES[case]
    fn = {"jit": lambda: sg.jit(softplus), "grad": lambda: sg.grad(softplus),
          "value_and_grad": lambda: sg.value_and_grad(softplus), "jit2": lambda: sg.jit(two_input),
          "grad2": lambda: sg.grad(two_input, argnums=(0, 1))}[transform]()
    args = make_inputs(kind, n)
    small = small_like(args)
    ref = fn(*small)  # compile (and check) on a small input
    ref_np = (softplus if transform in ("jit", "grad", "value_and_grad") else two_input)(*small)
    if transform in ("jit", "jit2"):
        assert np.allclose(ref, ref_np, rtol=1e-5, atol=1e-6)
    time.sleep(0.2)
    reset = _reset_peak()
    base = _status("VmRSS")
    t0 = time.perf_counter()
    out = fn(*args)
    elapsed = time.perf_counter() - t0
    peak = _status("VmHWM")
    outs = out if isinstance(out, tuple) else (out,)
    if transform in ("jit", "jit2"):  # spot-check the big result against numpy on a corner
        sl = (slice(0, 7),) * outs[0].ndim
        corner = [np.broadcast_to(a, outs[0].shape)[sl] if isinstance(a, np.ndarray) else a for a in args]
        expect = (softplus if transform == "jit" else two_input)(*corner)
        assert np.allclose(outs[0][sl], expect, rtol=1e-5, atol=1e-6), (outs[0][sl], expect)
    out_bytes = sum(o.nbytes for o in outs)
    in_bytes = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
    return {"case": case, "n": n, "baseline": base, "peak": peak, "extra": peak - base,
            "out_bytes": out_bytes, "in_bytes": in_bytes, "ratio": (peak - base) / out_bytes,
            "peak_reset": reset, "seconds": elapsed,
            "out_dtypes": [str(o.dtype) for o in outs], "out_shapes": [list(o.shape) for o in outs]}


def run_worker(case: str, n: int, env: dict) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", case, str(n)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"worker {case} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def mb(b: float) -> str:
    return f"{b / 2 ** 20:,.0f} MiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10^7 points instead of 10^8")
    ap.add_argument("--only", nargs="*", help="case names")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker[0], int(a.worker[1]))))
        return

    sys.path.insert(0, str(HERE))
    from bench_core import machine_header, snapshot_symgrad, table

    code = snapshot_symgrad()
    n = 10 ** 7 if a.quick else 10 ** 8
    env = dict(os.environ, SYMGRAD_CACHE_DIR=tempfile.mkdtemp(prefix="symgrad_bench_mem_"))
    env.pop("NUMBA_CACHE_DIR", None)
    rows, results = [], []
    for case in a.only or CASES:
        res = run_worker(case, n, env)
        results.append(res)
        print(json.dumps(res), flush=True)
        rows.append([CASES[case][0], mb(res["in_bytes"]), mb(res["out_bytes"]), mb(res["baseline"]),
                     mb(res["extra"]), f"**{res['ratio']:.3f}**", f"{res['seconds']:.2f} s"])
    cmd = "python benchmarks/bench_memory.py" + (" --quick" if a.quick else "")
    header = machine_header(cmd, code).replace("# symgrad core benchmarks", "# symgrad memory benchmark")
    header = header.split("\nThe machine is shared")[0]
    md = [header, "",
          f"### Peak memory of one call over n = {n:,} points\n",
          "Each row is a fresh process (fresh SYMGRAD_CACHE_DIR shared by the rows, so later rows may load "
          "kernels from disk). It creates the inputs, compiles on a small input of the same dtypes and layouts, "
          "resets the peak-RSS counter (`/proc/self/clear_refs`), takes the resident set size as the baseline, "
          "makes one call, and reads the new peak (VmHWM). *extra / output* = (peak − baseline) / bytes of the "
          "outputs: 1.0 means the call allocated only its outputs; each input-sized temporary (dtype "
          "conversion, contiguous copy, materialised broadcast) would add about 1.0 (0.5 for a float32 input "
          "against a float64 output).\n",
          table(["call", "inputs", "outputs", "baseline RSS", "peak − baseline", "extra / output", "call time"],
                rows), "",
          f"- largest extra / output: {max(r['ratio'] for r in results):.3f}; peak counter reset: "
          f"{'yes' if all(r['peak_reset'] for r in results) else 'NO (ru_maxrss-style peak, baseline may hide)'}",
          "- softplus(x) = log(1 + exp(x)); f(x, y) = exp(-x²)·tanh(y) + x·y. *call time* is wall time of "
          "that one call on a shared machine (it includes first-touch page faults of the outputs); only the "
          "memory columns are the point here.",
          "- Before symgrad's runtime ran such calls block by block (commit 614e357, same machine, 10^8 "
          "points), the broadcast outer product measured 2.999 (both inputs materialised at full size), "
          "the transposed input 2.000 (a contiguous copy) and the mixed float32/float64 call 2.000 (x "
          "converted to float64 whole); the other rows were already 1.000.\n"]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(md))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
