"""Compiled functions on a Dask cluster (issue 18): scaling, first task, per-task overhead, memory.

Workloads, each run on a LocalCluster of 1 and of 2 worker processes (one
thread each, loopback interface), after a warm-up computation:

* **elementwise**: ``symgrad.grad(softplus)`` over ``--points`` float32 points in
  chunks of ``--chunk`` (each chunk made by ``da.linspace`` on the worker, so no
  data moves), summed (``.sum()``, Dask's tree reduction);
* **logistic**: ``value_and_grad`` of the per-sample logistic loss, signature
  ``(d),(d),(),()->()``, over ``--rows`` rows (persisted on the workers first),
  value and gradient summed over the rows; checked against the in-memory NumPy
  call to 1e-12 relative.  Two ways, interleaved in one run: ``VG.sum(X, w, y, lam)``
  (the summing kernel: one task per chunk returns its partial sums) and, for comparison,
  ``VG(X, w, y, lam)`` followed by ``.sum()`` / ``.sum(axis=0)`` (a per-row value and
  ``(rows, d)`` gradient per chunk, then Dask's sums).

Parallel efficiency = T(1 worker) / (2 T(2 workers)), medians of ``--repeats``.
*Where the 2-worker time goes* (logistic, summing kernel): per run, from the task stream and
each worker's fine performance metrics (``digests_total``: ``thread-cpu`` and ``thread-noncpu``
seconds inside tasks), the busier worker's CPU seconds in tasks, its seconds inside tasks not
on a CPU (waiting for a core: other processes on the machine), and the rest of the wall time
(scheduling, transfers, idle while the other worker finishes); and the chunks per worker.
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
        interleaved(clients, res, {"elementwise": lambda n: [elementwise_graph(args.points, args.chunk)]},
                    args.repeats)
        for n, client in clients.items():
            res[n]["rss_elementwise"] = client.run(peak_rss_mb)
        X, y = logistic_data(args.rows, args.row_chunk)
        w = np.linspace(-0.5, 0.5, D)
        data = {n: client.persist([X, y]) for n, client in clients.items()}
        for n, client in clients.items():
            Xn, yn = data[n]
            v, g = VG(Xn[:1000], w, yn[:1000], 1e-3)
            client.gather(client.compute([v.sum(), g.sum(axis=0)]))  # warm-up

            client.gather(client.compute(list(VG.sum(Xn[:1000], w, yn[:1000], 1e-3))))

        def logistic_rows(n):
            v, g = VG(data[n][0], w, data[n][1], 1e-3)
            return [v.sum(), g.sum(axis=0)]

        def logistic(n):
            return list(VG.sum(data[n][0], w, data[n][1], 1e-3))
        res[2]["placement"] = chunks_per_worker(k2, data[2][0])
        interleaved(clients, res, {"logistic": logistic, "logistic_rows": logistic_rows}, args.repeats,
                    detail="logistic")
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
    for name in ("logistic", "logistic_rows"):
        total, gsum = res[2][name][2]
        res[2]["check_" + name] = (abs(total - v.sum()) / abs(v.sum()),
                                   float(np.abs(gsum - g.sum(axis=0)).max() / np.abs(g.sum(axis=0)).max()))
    return res[1], res[2]


def interleaved(clients, res, makers, repeats, detail=None):
    """Run each ``makers[name](n)`` (a list of Dask collections) on each cluster, ``repeats`` times in
    turn; store (median wall time, wall times, last results, CPU seconds per worker) in
    ``res[n][name]``.  For ``detail``, also each run's breakdown (:func:`breakdown`) in
    ``res[n][detail + "_breakdown"]``."""
    times = {(name, n): [] for name in makers for n in clients}
    cpu = {(name, n): [] for name in makers for n in clients}
    out, parts = {}, {n: [] for n in clients}
    for _ in range(repeats):
        for name, make in makers.items():
            for n, client in clients.items():
                graphs = make(n)
                cpu0 = client.run(time.process_time)
                digests0 = client.run(_digests) if name == detail else None
                with get_task_stream(client) as ts:
                    s = time.perf_counter()
                    out[name, n] = client.gather(client.compute(graphs))
                    wall = time.perf_counter() - s
                times[name, n].append(wall)
                cpu1 = client.run(time.process_time)
                cpu[name, n].append([cpu1[w] - cpu0[w] for w in sorted(cpu1)])
                if name == detail:
                    parts[n].append(breakdown(wall, ts.data, digests0, client.run(_digests)))
    for (name, n), t in times.items():
        per_worker = [sum(c[i] for c in cpu[name, n]) for i in range(len(cpu[name, n][0]))]
        res[n][name] = (statistics.median(t), t, out[name, n], per_worker)
    if detail:
        for n in clients:
            res[n][detail + "_breakdown"] = parts[n]


def _digests(dask_worker):
    """This worker's cumulative seconds inside tasks: (thread-cpu, thread-noncpu)."""
    cpu = noncpu = 0.0
    for key, value in dask_worker.digests_total.items():
        if isinstance(key, tuple) and key[0] == "execute" and key[-1] == "seconds":
            if key[-2] == "thread-cpu":
                cpu += value
            elif key[-2] == "thread-noncpu":
                noncpu += value
    return cpu, noncpu


def breakdown(wall, stream, digests0, digests1):
    """One run on 2 workers: (wall, the busier worker's task CPU s, its task s off a CPU, the rest of
    the wall time, tasks per worker).  The busier worker is the one with more wall time in tasks."""
    in_tasks, ntasks = {}, {}
    for t in stream:
        in_tasks[t["worker"]] = in_tasks.get(t["worker"], 0.0) + sum(
            ss["stop"] - ss["start"] for ss in t["startstops"] if ss["action"] == "compute")
        if "_sum-" in str(t["key"]):
            ntasks[t["worker"]] = ntasks.get(t["worker"], 0) + 1
    busy = max(in_tasks, key=in_tasks.get)
    cpu = digests1[busy][0] - digests0[busy][0]
    noncpu = digests1[busy][1] - digests0[busy][1]
    return wall, cpu, noncpu, wall - cpu - noncpu, sorted(ntasks.values(), reverse=True)


def chunks_per_worker(client, arr):
    """How many of ``arr``'s persisted chunks each worker holds (most first)."""
    held = {}
    for workers in client.who_has(arr).values():
        held[workers[0]] = held.get(workers[0], 0) + 1
    return sorted(held.values(), reverse=True)


def breakdown_text(parts, t1, placement, parts1) -> str:
    """Where the 2-worker wall time of the summed logistic gradient went (medians over the runs),
    and the efficiency with each run's in-task time off a CPU taken out of its wall time."""
    med = [statistics.median(p[i] for p in parts) for i in range(4)]
    wall, cpu, noncpu, rest = med
    on_cpu1 = statistics.median(p[0] - p[2] for p in parts1)
    on_cpu2 = statistics.median(p[0] - p[2] for p in parts)
    return (f"- Where the 2-worker time goes (`VG.sum`, medians of {len(parts)} runs): wall {fmt_t(wall)} = the busier "
            f"worker's CPU time in tasks {fmt_t(cpu)} + its time in tasks without a CPU (other processes on the "
            f"machine) {fmt_t(noncpu)} + the rest (scheduling, transfers, waiting for the other worker) {fmt_t(rest)}. "
            f"Persisted chunks of X per worker: {placement}; chunk tasks per worker per run: "
            f"{[p[4] for p in parts]}. Half the 1-worker time is {fmt_t(t1 / 2)}; the time in tasks without a CPU "
            f"accounts for {100 * noncpu / max(wall - t1 / 2, 1e-9):.0f} % of the excess over it. Wall time minus "
            f"the (busier) worker's in-task time without a CPU, medians: 1 worker {fmt_t(on_cpu1)}, 2 workers "
            f"{fmt_t(on_cpu2)}, an efficiency of {100 * on_cpu1 / (2 * on_cpu2):.0f} % (an estimate for a machine "
            f"without other jobs, not a measurement: the scheduler and the client also wait for cores here).")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=float, default=2e8)
    ap.add_argument("--chunk", type=float, default=1e7)
    ap.add_argument("--rows", type=float, default=1e7)
    ap.add_argument("--row-chunk", type=float, default=1e6)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tiny", type=int, default=400)
    args = ap.parse_args()
    os.environ.setdefault("SYMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="symgrad-bench-dask-"))
    # compile on the driver (and fill the disk cache) for the block types the workers will see
    GRAD(np.linspace(-1, 1, 10, dtype=np.float32))
    VG(np.ones((3, D)), np.ones(D), np.ones(3), 1e-3)
    ft_worker, ft_wall = first_task(True)
    ft_cold_worker, ft_cold_wall = first_task(False)
    load0 = os.getloadavg()
    one, two = run_both(args)
    rows = []
    logistic_size = f"{args.rows:.0e} rows x {D}, chunks {args.row_chunk:.0e}"
    for name, label, size in (("elementwise", "grad(softplus), float32", f"{args.points:.0e} points, chunks {args.chunk:.0e}"),
                              ("logistic", "value_and_grad(logloss): `VG.sum(X, w, y, lam)`", logistic_size),
                              ("logistic_rows", "value_and_grad(logloss): `VG(X, w, y, lam)` then `.sum(axis=0)`",
                               logistic_size)):
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
        f"{load0[0]:.1f} at the start, {load[0]:.1f} at the end), Python {platform.python_version()}, dask {dask.__version__}; "
        f"{datetime.date.today().isoformat()}.",
        f"Command: `python benchmarks/bench_dask.py --points {args.points:.0e} --chunk {args.chunk:.0e} "
        f"--rows {args.rows:.0e} --row-chunk {args.row_chunk:.0e} --repeats {args.repeats}`. "
        "LocalCluster, one thread per worker process, loopback interface; medians of the repeats.", "",
        table(head, rows), "",
        "- Parallel efficiency (wall) = T(1 worker) / (2 T(2 workers)). Work efficiency (CPU) = worker CPU "
        "seconds with 1 worker / with 2 workers (summed): below 100 % only if 2 workers do extra work "
        "(transfers, serialisation, duplicated loads). On an idle 2-core machine the wall efficiency "
        "approaches the CPU one; here other jobs share the cores (load average above).",
        "- Per-run times (s): " + "; ".join(
            f"{name} 1 worker {[round(t, 2) for t in one[name][1]]}, 2 workers {[round(t, 2) for t in two[name][1]]}"
            for name in ("elementwise", "logistic", "logistic_rows")) + ".",
        "- Logistic value and gradient on 2 workers vs the in-memory NumPy call (`VG(X, w, y, lam)` summed): "
        "relative difference " + "; ".join(
            f"{how} {two['check_' + name][0]:.1e} (value), {two['check_' + name][1]:.1e} (gradient, max-norm)"
            for name, how in (("logistic", "`VG.sum`"), ("logistic_rows", "per-row then `.sum`"))) + ".",
        breakdown_text(two["logistic_breakdown"], one["logistic"][0], two["placement"], one["logistic_breakdown"]),
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
