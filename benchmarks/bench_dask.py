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


def run_both(args):
    """Both clusters up at once; each repeat runs on 1 worker then on 2, so load changes hit both alike."""
    res = {1: {}, 2: {}}
    with cluster(1) as c1, cluster(2) as c2, Client(c1, set_as_default=False) as k1, \
            Client(c2, set_as_default=False) as k2:
        clients = {1: k1, 2: k2}
        for n, client in clients.items():
            client.run(lambda: None)
            # warm-up: every worker loads the kernel once (one small chunk each)
            client.compute(elementwise_graph(n * 10_000, 10_000)).result()
            res[n]["rss_before"] = client.run(peak_rss_mb)
        interleaved(clients, res, "elementwise", lambda: [elementwise_graph(args.points, args.chunk)], args.repeats)
        for n, client in clients.items():
            res[n]["rss_elementwise"] = client.run(peak_rss_mb)
        X, y = logistic_data(args.rows, args.row_chunk)
        w = np.linspace(-0.5, 0.5, D)
        data = {n: client.persist([X, y]) for n, client in clients.items()}
        for n, client in clients.items():
            Xn, yn = data[n]
            v, g = VG(Xn[:1000], w, yn[:1000], 1e-3)
            client.gather(client.compute([v.sum(), g.sum(axis=0)]))  # warm-up

        def logistic(n):
            v, g = VG(data[n][0], w, data[n][1], 1e-3)
            return [v.sum(), g.sum(axis=0)]
        interleaved(clients, res, "logistic", logistic, args.repeats)
        for n, client in clients.items():
            res[n]["rss_after"] = client.run(peak_rss_mb)
        tiny = da.linspace(-1.0, 1.0, args.tiny * 1000, chunks=1000, dtype=np.float32)
        graph = GRAD(tiny).sum()
        s = time.perf_counter()
        k2.compute(graph).result()
        res[2]["overhead"] = ((time.perf_counter() - s) / len(dict(graph.__dask_graph__())),
                              len(dict(graph.__dask_graph__())))
    Xn, yn = dask.compute(X, y, scheduler="synchronous")  # the same data, in this process
    v, g = VG(Xn, w, yn, 1e-3)
    total, gsum = res[2]["logistic"][2]
    res[2]["check"] = (abs(total - v.sum()) / abs(v.sum()),
                       float(np.abs(gsum - g.sum(axis=0)).max() / np.abs(g.sum(axis=0)).max()))
    return res[1], res[2]


def interleaved(clients, res, name, make, repeats):
    """Run ``make(n)`` (a list of Dask collections) on each cluster, ``repeats`` times in turn; store
    (median wall time, wall times, last results, CPU seconds per worker) in ``res[n][name]``."""
    times = {n: [] for n in clients}
    cpu0 = {n: client.run(time.process_time) for n, client in clients.items()}
    out = {}
    for _ in range(repeats):
        for n, client in clients.items():
            graphs = make(n) if name == "logistic" else make()
            s = time.perf_counter()
            out[n] = client.gather(client.compute(graphs))
            times[n].append(time.perf_counter() - s)
    for n, client in clients.items():
        cpu1 = client.run(time.process_time)
        res[n][name] = (statistics.median(times[n]), times[n], out[n], [cpu1[w] - cpu0[n][w] for w in sorted(cpu1)])


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
    one, two = run_both(args)
    rows = []
    for name, label, size in (("elementwise", "grad(softplus), float32", f"{args.points:.0e} points, chunks {args.chunk:.0e}"),
                              ("logistic", "value_and_grad(logloss) summed", f"{args.rows:.0e} rows x {D}, chunks {args.row_chunk:.0e}")):
        t1, t2 = one[name][0], two[name][0]
        c1, c2 = one[name][3], two[name][3]
        rows.append([label, size, fmt_t(t1), fmt_t(t2), f"{t1 / t2:.2f}x", f"{100 * t1 / (2 * t2):.0f} %",
                     f"{sum(c1):.1f}", " + ".join(f"{c:.1f}" for c in c2), f"{100 * sum(c1) / sum(c2):.0f} %"])
    head = ["workload", "size", "1 worker", "2 workers", "speed-up", "parallel efficiency (wall)",
            "worker CPU s, 1 worker", "worker CPU s, 2 workers", "work efficiency (CPU)"]
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
        "- Parallel efficiency (wall) = T(1 worker) / (2 T(2 workers)). Work efficiency (CPU) = worker CPU "
        "seconds with 1 worker / with 2 workers (summed): below 100 % only if 2 workers do extra work "
        "(transfers, serialisation, duplicated loads). On an idle 2-core machine the wall efficiency "
        "approaches the CPU one; here other jobs share the cores (load average above).",
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
