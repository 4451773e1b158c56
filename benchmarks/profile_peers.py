"""Where symgrad's time goes in the benchmarks of benchmarks/peers.py that miss their targets.

Run:   python benchmarks/profile_peers.py          (~2-3 min; writes benchmarks/results/peers_profile.md)

Measures, without changing symgrad:
1. Build of the MLP gradient (cold process): symgrad's stages, Numba's compile split
   (type inference / lowering / LLVM, per generated function), the stabiliser's probes
   and searches; the scalar-loop form; the recursion limit of the stabiliser's region walk.
2. Per-call cost of array-core calls (Rosenbrock, logistic regression): layer by layer,
   and the minor page faults per call.
3. Scalar call latency, layer by layer.
4. Elementwise throughput: Numba's scalar libm exp vs NumPy's SIMD exp, and allocation.

Worker mode (internal):  --worker build H I FORM [--prewarm-njit]   --worker faults
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

from _common import time_build_stages, compile_event_log, time_calls  # noqa: E402

import peers  # noqa: E402  (the benchmark's own functions: same MLP, Rosenbrock, data)

np.seterr(all="ignore")


def med_us(fn, target=0.02, rep=15) -> float:
    return med_min_us(fn, target, rep)[0]


def med_min_us(fn, target=0.02, rep=15) -> tuple[float, float]:
    """(median, min) µs per call over ``rep`` repeats of ~``target`` s (min: the cost under the least load)."""
    fn()
    t1 = timeit.timeit(fn, number=3) / 3
    n = max(1, int(target / max(t1, 1e-8)))
    ts = timeit.repeat(fn, number=n, repeat=rep)
    return statistics.median(ts) / n * 1e6, min(ts) / n * 1e6


def faults_per_call(fn, number=2000) -> float:
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(number):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / number


def table(headers, rows) -> str:
    return peers.table(headers, rows)


# ----------------------------------------------------------------------------------------
# 1. build
# ----------------------------------------------------------------------------------------
def worker_build(h: int, i: int, form: str, prewarm: bool) -> dict:
    os.environ["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="profile-build-")
    t0 = time.perf_counter()
    import numba

    import symgrad as sg
    import symgrad.api.compiled  # noqa: F401  (its import is timed)
    import symgrad.stabilize as stab
    res = {"import_s": time.perf_counter() - t0}
    if prewarm:
        t0 = time.perf_counter()
        numba.njit(lambda a: a + 1.0)(1.0)
        res["numba_first_njit_s"] = time.perf_counter() - t0
    stages = collections.Counter()

    time_build_stages(stages)
    time_calls(stab, "bits_of_error_report", stages, "stabilize: probes (bits_of_error_report)")
    time_calls(stab, "stabilize", stages, "stabilize: searches (stabilize)")
    calls = collections.Counter()
    for nm in ("bits_of_error_report", "stabilize"):
        f = getattr(stab, nm)

        def counted(*a, _f=f, _nm=nm, **k):
            calls[_nm] += 1
            return _f(*a, **k)
        setattr(stab, nm, counted)
    log = compile_event_log()
    loss = peers.mlp_loss if form == "array" else peers.mlp_loss_unrolled
    args = peers.mlp_args(h, i)
    t0 = time.perf_counter()
    g = sg.grad(loss, argnums=(0, 1, 2), signature=peers.MLP_SIG)
    g(*args)
    res["build_s"] = time.perf_counter() - t0
    res["stages"] = dict(stages)
    res["stages"]["numba (remainder: lazy compile at the first call)"] = res["build_s"] - sum(
        v for k, v in stages.items() if ":" not in k)
    res["stabilizer_calls"] = dict(calls)
    res["numba_events"] = log
    entry = next(iter(g.compiled._entries.values()))
    mod = entry.fn.__globals__
    kern = {}
    for name in (entry.fn.__name__ + "_f64", entry.fn.__name__ + "_f64_batch"):
        for md in mod[name].get_metadata().values():
            passes = collections.Counter()
            for pipe in md.get("pipeline_times", {}).values():
                for pname, t in pipe.items():
                    passes[pname.split("_", 1)[1]] += t.init + t.run + t.finalize
            kern[name] = {"compiler_lock": md["timers"].get("compiler_lock"), "llvm_lock": md["timers"].get("llvm_lock"),
                          "type_inference": passes.get("nopython_type_inference", 0.0),
                          "native_lowering": passes.get("native_lowering", 0.0), "all_passes": sum(passes.values())}
    res["kernels"] = kern
    res["source_lines"] = open(entry.source_path).read().count("\n")
    res["graph_nodes"] = len(entry.program.graph.nodes)
    return res


def run_worker(args, env=None, timeout=900) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or dict(os.environ))
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(s) -> str:
    return peers.fmt_t(s)


def section_build() -> str:
    out = ["## 1. Build time (issue 7 targets: ≥ 20x ahead of naive SymPy, within 2x of CasADi SX)\n"]
    rows, krows = [], []
    runs = {}
    for (h, i, form, pre) in [(64, 30, "array", False), (64, 30, "array", False), (64, 30, "array", True),
                              (16, 10, "unrolled", False)]:
        r = run_worker(["build", str(h), str(i), form] + (["--prewarm-njit"] if pre else []))
        runs.setdefault((h, i, form, pre), []).append(r)
    for key, rs in runs.items():
        h, i, form, pre = key
        for r in rs:
            st = r["stages"]
            label = f"({h}, {i}) {'array form' if form == 'array' else 'scalar loops'}" + \
                    (f", Numba initialised first ({fmt(r['numba_first_njit_s'])})" if pre else "")
            rows.append([label, f"**{fmt(r['build_s'])}**", fmt(st.get("trace", 0)), fmt(st.get("differentiate", 0)),
                         fmt(st.get("stabilize", 0)),
                         f"{r['stabilizer_calls'].get('bits_of_error_report', 0)} / {fmt(st.get('stabilize: probes (bits_of_error_report)', 0))}",
                         f"{r['stabilizer_calls'].get('stabilize', 0)} / {fmt(st.get('stabilize: searches (stabilize)', 0))}",
                         fmt(st.get("emit", 0)), fmt(st.get("load", 0)),
                         fmt(st["numba (remainder: lazy compile at the first call)"]), r["source_lines"], r["graph_nodes"]])
            for name, k in r["kernels"].items():
                krows.append([label, f"`{name}`", fmt(k["compiler_lock"]), fmt(k["type_inference"]),
                              fmt(k["native_lowering"]), fmt(k["llvm_lock"])])
    out += ["Each row is one fresh process with a fresh SYMGRAD_CACHE_DIR (imports excluded), timing "
            "`sg.grad(loss, argnums=(0, 1, 2), signature=...)` to its first value. Stages are timed by wrapping the "
            "functions `symgrad.api.compiled` calls; *Numba* is the remainder, Numba's lazy compilation at the first "
            "call (including its one-time target initialisation).\n",
            table(["build", "total", "trace", "differentiate", "stabilize", "of which probes (n / time)",
                   "of which searches (n / time)", "emit", "load", "Numba", "generated lines", "graph nodes"], rows),
            "", "Numba's own timers per generated function (`dispatcher.get_metadata()`: *compiler lock* is the whole "
            "compilation of that function including nested ones, e.g. the batch loop compiles the core kernel it "
            "calls; *LLVM* is time holding the LLVM lock):\n",
            table(["build", "function", "compiler lock", "type inference", "native lowering", "LLVM"], krows), ""]
    # the recursion limit of the stabiliser's region walk
    from symgrad.api.build import build_kernel
    from symgrad.api.stabilize_pass import stabilize_kernel
    from symgrad.trace.trace import trace_program

    def dot_loop(x, y):
        s = 0.0
        for k in range(x.shape[0]):
            s = s + x[k] * y[k]
        return np.tanh(s)
    rec = []
    for n in (100, 200, 300, 400, 450, 500, 1000):
        p = trace_program(dot_loop, (np.ones(n), np.ones(n)), [(n,), (n,)])
        b = build_kernel(p, "grad", [0])
        try:
            stabilize_kernel(p.graph, b.kernel)
            rec.append([n, "ok"])
        except RecursionError:
            rec.append([n, "**RecursionError**"])
    out += [f"Recursion limit of the stabiliser's region walk (`symgrad/api/stabilize_pass.py`, `_region_expr.rec`, "
            f"two Python frames per elementwise level; `sys.getrecursionlimit()` = {sys.getrecursionlimit()}): "
            "trace + differentiate + `stabilize_kernel` of `tanh(sum of x[k]*y[k] written as a Python loop)`, no "
            "compilation:\n", table(["n (chain length)", "stabilize_kernel"], rec), ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------------------
# 2-3. per-call costs
# ----------------------------------------------------------------------------------------
def worker_faults() -> dict:
    import symgrad as sg
    res = {}
    for n in (100, 10_000):
        x = np.random.default_rng(0).uniform(-2, 2, n)
        g = sg.grad(peers.rosen_np, signature="(n)->()")
        g(x)
        res[str(n)] = {"us": med_us(lambda: g(x)), "faults": faults_per_call(lambda: g(x))}
    return res


def section_calls() -> str:
    import math

    import numba

    import symgrad as sg
    from symgrad.trace.pytree import tree_flatten
    out = ["## 2. Array-core calls: Rosenbrock and logistic regression (targets: ≤ 0.8x best peer, ≤ 1.1x hand Numba)\n",
           "Medians of 15 repeats of ~20 ms each, in this process. *kernel alone* calls the generated Numba kernel "
           "directly with a preallocated output (internal API, for diagnosis only). Page faults: "
           "`getrusage(RUSAGE_SELF).ru_minflt` over 2000 calls.\n"]
    rows = []
    try:
        import pytensor
        import pytensor.tensor as pt
    except ImportError:
        pytensor = None
    for n in (100, 10_000):
        x = np.random.default_rng(0).uniform(-2, 2, n)
        v = np.random.default_rng(1).standard_normal(n)
        g = sg.grad(peers.rosen_np, signature="(n)->()")
        g(x)
        C = g.compiled
        entry = C.entry_for((x,))
        mod, nm = entry.fn.__globals__, entry.fn.__name__
        from symgrad.emit.names import spec_name
        batch = mod[spec_name(nm)].kernels["float64"]
        xin, outb = x.reshape(1, n), np.empty((1, n))
        sg.hvp(peers.rosen_np, (x,), (v,), signature="(n)->()")
        hk = peers.rosen_np.__symgrad_cache__[("hvp", "(n)->()", True, (0,))]
        he = hk.entry_for((x,))
        hcore = he.fn.__globals__[he.fn.__name__ + "_f64"]
        out1 = np.empty(n)

        @numba.njit
        def grad_hand(x):
            g = np.zeros_like(x)
            for k in range(x.shape[0] - 1):
                d = x[k + 1] - x[k] * x[k]
                g[k] += -400.0 * x[k] * d - 2.0 * (1.0 - x[k])
                g[k + 1] += 200.0 * d
            return g
        layers = [("`sg.grad(rosen, signature=\"(n)->()\")(x)` (public)", lambda: g(x)),
                  ("  `tree_flatten((x,))`", lambda: tree_flatten((x,))),
                  ("  `Compiled.entry_for((x,))` (signature bind, key, dict lookup)", lambda: C.entry_for((x,))),
                  ("  generated entry point → `gufunc_call` (dtype, shapes, broadcast_to, np.empty, kernel)",
                   lambda: entry.fn(x)),
                  ("    Numba batch kernel alone, output preallocated", lambda: batch(xin, outb)),
                  ("`sg.hvp(rosen, (x,), (v,), signature=...)` (public)",
                   lambda: sg.hvp(peers.rosen_np, (x,), (v,), signature="(n)->()")),
                  ("    Numba HVP core kernel alone, output preallocated", lambda: hcore(x, v, out1)),
                  ("hand-written `numba.njit` gradient (allocates inside)", lambda: grad_hand(x))]
        if pytensor is not None:
            xv = pt.dvector("x")
            y = pt.sum(100.0 * (xv[1:] - xv[:-1] ** 2) ** 2 + (1.0 - xv[:-1]) ** 2)
            fp = pytensor.function([xv], pytensor.grad(y, xv))
            layers.append(("PyTensor gradient function (Numba linker)", lambda: fp(x)))
        for name, fn in layers:
            md_, mn_ = med_min_us(fn)
            rows.append([f"{n:,}", name, f"{md_:.2f}", f"{mn_:.2f}", f"{faults_per_call(fn):.1f}"])
    out += [table(["n", "layer", "µs/call (median)", "µs/call (min)", "minor page faults / call"], rows), ""]
    # glibc malloc tunables: does the fault cost go away?
    base = run_worker(["faults"])
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="268435456", MALLOC_MMAP_THRESHOLD_="268435456")
    tuned = run_worker(["faults"], env=env)
    out += ["Same public Rosenbrock gradient call in a fresh process, default glibc malloc vs "
            "`MALLOC_TRIM_THRESHOLD_=MALLOC_MMAP_THRESHOLD_=256 MiB` (the output memory then stays mapped between "
            "calls):\n",
            table(["n", "default: µs/call", "default: faults/call", "tuned: µs/call", "tuned: faults/call"],
                  [[f"{int(n):,}", f"{base[n]['us']:.2f}", f"{base[n]['faults']:.1f}", f"{tuned[n]['us']:.2f}",
                    f"{tuned[n]['faults']:.1f}"] for n in base]), ""]
    # logistic regression
    from sklearn.datasets import load_breast_cancer
    d = load_breast_cancer()
    X = (d.data - d.data.mean(0)) / d.data.std(0)
    X = np.hstack([X, np.ones((len(X), 1))])
    yv = np.where(d.target == 1, 1.0, -1.0)
    w = np.random.default_rng(1).standard_normal(31) / np.sqrt(31)

    def loss_np(w, X, y):
        return np.mean(np.log(1 + np.exp(-y * (X @ w))))
    g = sg.grad(loss_np, signature="(d),(n,d),(n)->()")
    g(w, X, yv)
    entry = g.compiled.entry_for((w, X, yv))
    core = entry.fn.__globals__[entry.fn.__name__ + "_f64"]
    ob = np.empty(31)
    rows = [[name, *(f"{t:.2f}" for t in med_min_us(fn))] for name, fn in
            [("`sg.grad(loss, signature=\"(d),(n,d),(n)->()\")(w, X, y)` (public)", lambda: g(w, X, yv)),
             ("  generated entry point → `gufunc_call`", lambda: entry.fn(w, X, yv)),
             ("    Numba core kernel alone, output preallocated", lambda: core(w, X, yv, ob))]]
    out += ["Logistic-regression gradient (569 x 31):\n", table(["layer", "µs/call (median)", "µs/call (min)"], rows), ""]
    # 3. scalar latency
    out += ["## 3. Scalar call latency (target: ≤ 1.5x hand-written njit)\n"]

    @numba.njit
    def hand(x, y, z):
        s = math.sin(z)
        e = math.exp(x * z)
        return y * s + z * e, x * s, x * y * math.cos(z) + x * e
    gs = sg.grad(lambda x, y, z: x * y * np.sin(z) + np.exp(x * z), argnums=(0, 1, 2))
    gs(0.7, 1.3, 0.4)
    hand(0.7, 1.3, 0.4)
    wrapper = next(iter(gs.compiled._entries.values())).fn
    core = wrapper.__globals__[wrapper.__name__ + "_f64"]

    def noop(x, y, z):
        return x, y, z
    layers = {"Python no-op def": noop, "hand-written njit": hand, "generated core (Numba dispatcher)": core,
              "generated entry point (3 isinstance checks + core)": wrapper,
              "`sg.grad(...)` public (`functools.partial` → entry point)": gs}
    glb = {"a": 0.7, "b": 1.3, "c": 0.4}
    ts = {k: [] for k in layers}
    for _ in range(9):
        for k, f in layers.items():
            glb["fn"] = f
            ts[k].append(timeit.timeit("fn(a, b, c)", globals=glb, number=200_000) / 200_000 * 1e9)
    m = {k: statistics.median(v) for k, v in ts.items()}
    mn = {k: min(v) for k, v in ts.items()}
    hand_t, hand_mn = m["hand-written njit"], mn["hand-written njit"]
    out += ["Python floats in; 9 interleaved repeats of 200,000 calls (median, and min = the cost under the least "
            "load).\n",
            table(["layer", "ns/call (median)", "ns/call (min)", "vs hand njit (median)", "vs hand njit (min)"],
                  [[k, f"{v:.0f}", f"{mn[k]:.0f}", f"{v / hand_t:.2f}x", f"{mn[k] / hand_mn:.2f}x"]
                   for k, v in m.items()]),
            "", "```python\n" + __import__("inspect").getsource(wrapper).strip() + "\n```", ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------------------
# 4. elementwise
# ----------------------------------------------------------------------------------------
def section_elementwise() -> str:
    import numba

    import symgrad as sg
    out = ["## 4. Elementwise d/dx log(1 + exp(x)), 10^7 points (target: ≤ 0.8x best peer)\n",
           f"NumPy's SIMD dispatch on this CPU: "
           f"`{', '.join(np.__config__.CONFIG.get('SIMD Extensions', {}).get('found', ['?']))}`; Numba SVML: "
           f"{numba.core.config.USING_SVML} (without SVML, Numba calls scalar libm `exp` per element). "
           "Median of 7 interleaved repeats; minor page faults per call.\n"]
    for dt in (np.float64, np.float32):
        x = np.random.default_rng(0).uniform(-20, 20, 10 ** 7).astype(dt)

        @numba.njit
        def exp_into(x, out):
            for k in range(x.shape[0]):
                out[k] = np.exp(x[k])

        @numba.njit
        def twice_into(x, out):
            for k in range(x.shape[0]):
                out[k] = x[k] * 2

        @numba.njit
        def sig_alloc_inside(x):
            out = np.empty_like(x)
            one = x[0] - x[0] + 1
            for k in range(x.shape[0]):
                v = x[k]
                e = np.exp(-abs(v))
                r = one / (one + e)
                out[k] = r if v >= 0 else e * r
            return out

        def numpy_out(kern):
            def f():
                o = np.empty_like(x)
                kern(x, o)
                return o
            return f
        g = sg.grad(lambda x: np.log(1 + np.exp(x)))
        cands = {"NumPy `np.exp(x)` (SIMD)": lambda: np.exp(x),
                 "Numba loop `np.exp(x[k])` (scalar libm), NumPy-allocated output": numpy_out(exp_into),
                 "Numba loop `2*x[k]` (memory + allocation floor), NumPy-allocated output": numpy_out(twice_into),
                 "symgrad `grad(softplus)` (`_sigmoid` per element)": lambda: g(x),
                 "NumPy naive `exp(x)/(exp(x)+1)` (= SymPy lambdify)": lambda: np.exp(x) / (np.exp(x) + 1),
                 "hand njit stable sigmoid, `np.empty_like` inside `@njit`": lambda: sig_alloc_inside(x)}
        for f in cands.values():
            f()
        ts = {k: [] for k in cands}
        for _ in range(7):
            for k, f in cands.items():
                ts[k].append(timeit.timeit(f, number=1))
        rows = []
        for k, f in cands.items():
            t = statistics.median(ts[k])
            rows.append([k, f"{t * 1e3:.1f} ms", f"{t / 1e7 * 1e9:.2f}", f"{faults_per_call(f, number=3):.0f}"])
        out += [f"### {np.dtype(dt).name}\n", table(["implementation", "median", "ns/elem", "minor faults / call"], rows),
                ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results" / "peers_profile.md"))
    ap.add_argument("--prewarm-njit", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        if a.worker[0] == "build":
            h, i, form = int(a.worker[1]), int(a.worker[2]), a.worker[3]
            print(json.dumps(worker_build(h, i, form, "--prewarm-njit" in sys.argv)))
        else:
            print(json.dumps(worker_faults()))
        return
    os.environ["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="profile-peers-")
    info = peers.machine_info()
    t0 = time.perf_counter()
    parts = ["# Profile of symgrad where it misses the issue-7 targets\n",
             f"Date {info['date']}; {info['cpu_model']} ({info['lscpu']}); {info['platform']}; Python "
             f"{info['python']}; symgrad git {info['git']}; command `python benchmarks/profile_peers.py`. "
             "symgrad's code is not changed: stages are timed by wrapping its functions from outside. The machine "
             "is shared: compare numbers within a table.\n"]
    for sec in (section_build, section_calls, section_elementwise):
        parts.append(sec())
        print(parts[-1], flush=True)
    parts.append(f"_Profile wall time: {time.perf_counter() - t0:.0f} s ({datetime.date.today().isoformat()})._\n")
    Path(a.out).write_text("\n".join(parts))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
