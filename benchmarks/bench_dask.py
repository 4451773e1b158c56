"""Compiled functions on a Dask cluster (issue 18): scaling, first task, per-task overhead, memory.

Workloads, each run on a LocalCluster of 1 and of 2 worker processes (one
thread each, loopback interface), after a warm-up computation:

* **elementwise**: ``symgrad.grad(softplus)`` over ``--points`` float32 points in
  chunks of ``--chunk`` (each chunk made by ``da.linspace`` on the worker, so no
  data moves), summed (``.sum()``, Dask's tree reduction);
* **logistic**: ``value_and_grad`` of the per-sample logistic loss, signature
  ``(d),(d),(),()->()``, over ``--rows`` rows (persisted on the workers first),
  value and gradient summed over the rows; checked against the in-memory NumPy
  call to 1e-12 relative.

Parallel efficiency = T(1 worker) / (2 T(2 workers)), medians of ``--repeats``.
*First task on a warm worker*: a new 1-worker cluster whose disk cache holds the
kernel (compiled by an earlier process) runs one small chunk; reported as the
worker-side task time (Dask's task stream: unpickle the recipe, load the module,
Numba's cache load, the call) and as the wall time seen by the client.
*Scheduler overhead per task*: a graph of ``--tiny`` chunks of 1000 points on 2
workers, wall time / number of tasks.  *Peak memory*: each worker's peak RSS
(``ru_maxrss``) before and after the workload.

Run:  python benchmarks/bench_dask.py [--points 1e9 --chunk 1e7 --rows 1e7]
Writes benchmarks/results/dask.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster, get_task_stream

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_t, table  # noqa: E402

import symgrad as sg  # noqa: E402

HERE = Path(__file__).resolve().parent


def softplus(x):
    return np.log1p(np.exp(x))


def logloss(x, w, y, lam):
    return np.logaddexp(0.0, -y * np.dot(x, w)) + lam * np.dot(w, w)


GRAD = sg.grad(softplus)
VG = sg.value_and_grad(logloss, argnums=1, signature="(d),(d),(),()->()")
D = 8


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cluster(n, preload=True):
    return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=None, memory_limit=0,
                        preload=["symgrad.compile.recipe"] if preload else [])


def elementwise_graph(points, chunk):
    x = da.linspace(-20.0, 20.0, int(points), chunks=int(chunk), dtype=np.float32)
    return GRAD(x).sum(dtype=np.float64)


def logistic_data(rows, chunk):
    rng = da.random.default_rng(1)
    X = rng.standard_normal((int(rows), D), chunks=(int(chunk), D))
    y = da.where(X[:, 0] + rng.standard_normal(int(rows), chunks=int(chunk)) > 0, 1.0, -1.0)
    return X, y


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        s = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - s)
    return statistics.median(times), times, out


def first_task(preload: bool) -> tuple[float, float]:
    """(worker-side duration, client wall time) of the first task on a new worker, disk cache warm."""
    with cluster(1, preload) as c, Client(c) as client:
        client.run(lambda: None)  # the worker is up
        x = da.linspace(-20.0, 20.0, 100_000, chunks=100_000, dtype=np.float32)
        graph = GRAD(x)
        with get_task_stream(client) as ts:
            s = time.perf_counter()
            graph.compute()
            wall = time.perf_counter() - s
        durations = [sum(ss["stop"] - ss["start"] for ss in t["startstops"] if ss["action"] == "compute")
                     for t in ts.data if "softplus" in str(t["key"])]
        return (max(durations) if durations else float("nan")), wall


def run(n_workers, args, Xy_np):
    res = {}
    with cluster(n_workers) as c, Client(c) as client:
        client.run(lambda: None)
        # warm-up: every worker loads the kernels once (one small chunk each)
        dask.compute(elementwise_graph(n_workers * 10_000, 10_000))
        res["rss_before"] = client.run(peak_rss_mb)
        res["elementwise"] = timed(lambda: elementwise_graph(args.points, args.chunk).compute(), args.repeats)
        res["rss_elementwise"] = client.run(peak_rss_mb)
        X, y = logistic_data(args.rows, args.row_chunk)
        X, y = dask.persist(X, y)
        w = np.linspace(-0.5, 0.5, D)
        vg = VG(X[:1000], w, y[:1000], 1e-3)
        dask.compute(vg[0].sum(), vg[1].sum(axis=0))  # warm-up
        res["logistic"] = timed(lambda: dask.compute(*(lambda v, g: (v.sum(), g.sum(axis=0)))(*VG(X, w, y, 1e-3))),
                                args.repeats)
        if Xy_np is not None and n_workers == 2:
            Xn, yn = dask.compute(X, y)
            v, g = VG(Xn, w, yn, 1e-3)
            total, gsum = res["logistic"][2]
            res["check"] = (abs(total - v.sum()) / abs(v.sum()),
                            float(np.abs(gsum - g.sum(axis=0)).max() / np.abs(g.sum(axis=0)).max()))
            del Xn, yn, v, g
        if n_workers == 2:
            tiny = da.linspace(-1.0, 1.0, args.tiny * 1000, chunks=1000, dtype=np.float32)
            s = time.perf_counter()
            dask.compute(GRAD(tiny).sum())
            n_tasks = len(dict(GRAD(tiny).sum().__dask_graph__()))
            res["overhead"] = ((time.perf_counter() - s) / n_tasks, n_tasks)
        res["rss_after"] = client.run(peak_rss_mb)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=float, default=2e8)
    ap.add_argument("--chunk", type=float, default=1e7)
    ap.add_argument("--rows", type=float, default=1e7)
    ap.add_argument("--row-chunk", type=float, default=1e6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tiny", type=int, default=400)
    args = ap.parse_args()
    os.environ.setdefault("SYMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="symgrad-bench-dask-"))
    # compile on the driver (and fill the disk cache) for the block types the workers will see
    GRAD(np.linspace(-1, 1, 10, dtype=np.float32))
    VG(np.ones((3, D)), np.ones(D), np.ones(3), 1e-3)
    ft_worker, ft_wall = first_task(True)
    ft_cold_worker, ft_cold_wall = first_task(False)
    one = run(1, args, None)
    two = run(2, args, True)
    rows = []
    for name, label, size in (("elementwise", "grad(softplus), float32", f"{args.points:.0e} points, chunks {args.chunk:.0e}"),
                              ("logistic", "value_and_grad(logloss) summed", f"{args.rows:.0e} rows x {D}, chunks {args.row_chunk:.0e}")):
        t1, t2 = one[name][0], two[name][0]
        rows.append([label, size, fmt_t(t1), fmt_t(t2), f"{t1 / t2:.2f}x", f"{100 * t1 / (2 * t2):.0f} %"])
    head = ["workload", "size", "1 worker", "2 workers", "speed-up", "parallel efficiency"]
    mem = [[f"{n} worker(s)"] + [", ".join(f"{v:.0f}" for v in r[k].values())
                                  for k in ("rss_before", "rss_elementwise", "rss_after")] for n, r in ((1, one), (2, two))]
    load = os.getloadavg()
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other jobs (load average "
        f"{load[0]:.1f} at the end), Python {platform.python_version()}, dask {dask.__version__}; "
        f"{datetime.date.today().isoformat()}.",
        f"Command: `python benchmarks/bench_dask.py --points {args.points:.0e} --chunk {args.chunk:.0e} "
        f"--rows {args.rows:.0e} --row-chunk {args.row_chunk:.0e} --repeats {args.repeats}`. "
        "LocalCluster, one thread per worker process, loopback interface; medians of the repeats.", "",
        table(head, rows), "",
        f"- Per-run times (s): elementwise 1 worker {[round(t, 2) for t in one['elementwise'][1]]}, "
        f"2 workers {[round(t, 2) for t in two['elementwise'][1]]}; logistic 1 worker "
        f"{[round(t, 2) for t in one['logistic'][1]]}, 2 workers {[round(t, 2) for t in two['logistic'][1]]}.",
        f"- Logistic gradient on 2 workers vs the in-memory NumPy call: relative difference "
        f"{two['check'][0]:.1e} (value), {two['check'][1]:.1e} (gradient, max-norm).",
        f"- First task on a new warm worker (started with `preload=[\"symgrad.compile.recipe\"]`, which imports "
        f"Numba and initialises its CPU target; disk cache holds the kernel; 100,000 points): {fmt_t(ft_worker)} on "
        f"the worker (unpickle the recipe, load the module, Numba's cache, the call), {fmt_t(ft_wall)} wall time at "
        f"the client. Without the preload: {fmt_t(ft_cold_worker)} on the worker, {fmt_t(ft_cold_wall)} at the client.",
        f"- Scheduler overhead: {fmt_t(two['overhead'][0])} per task ({two['overhead'][1]} tasks of 1000 points "
        "on 2 workers, wall time / tasks).",
        "", table(["cluster", "peak RSS per worker after warm-up (MB)", "... after the elementwise runs",
               "... after the logistic runs (data persisted on the workers)"], mem),
        "",
        f"Chunk sizes: elementwise {args.chunk:.0e} float32 points = {4 * args.chunk / 2**20:.0f} MiB in and "
        f"{4 * args.chunk / 2**20:.0f} MiB out per task (whole array {4 * args.points / 2**20:.0f} MiB); logistic "
        f"{args.row_chunk * D * 8 / 2**20:.0f} MiB of X per task, {args.rows * (D + 1) * 8 / 2**20:.0f} MiB of X "
        f"and y in all (persisted, split over the workers).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results" / "dask.md").write_text(text)


if __name__ == "__main__":
    main()
