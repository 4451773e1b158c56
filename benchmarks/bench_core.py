"""Core performance benchmarks for symgrad.

Run:   python benchmarks/bench_core.py            (full, ~10 min on 2 cores)
       python benchmarks/bench_core.py --quick    (smaller sizes, fewer repeats)

Writes benchmarks/results/core.md.  Every number is a median over repeats, and
every comparison is a ratio measured in the same run against a hand-written
baseline, because the machine this was written on is shared and noisy.

1. Elementwise derivative of log(1 + exp(x)), 10^7 points, float64/float32:
   symgrad.grad vs hand-written numba.njit loops computing the stable sigmoid.
2. Python call latency of a compiled 3-argument scalar gradient vs numba.njit,
   with a layer-by-layer breakdown of where the time goes.
3. Build time (trace + differentiate + emit + compile to first result, fresh
   process and cache each) of a one-hidden-layer tanh MLP loss gradient, the
   gradient/forward evaluation time ratio, and sympy.diff on the inlined
   closed form for comparison.
4. Disk cache: first call in a fresh process, cold vs warm SYMGRAD_CACHE_DIR.

Worker modes (used internally through subprocess):
   --worker build H I [--prewarm] [--eval]   --worker sympy H I TIMEOUT
   --worker cache N
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "core.md"

sys.path.insert(0, str(HERE))
from _common import compile_event_log, fmt_t, table, time_build_stages  # noqa: E402

MLP_SIG = "(h,i),(h),(h),(i),()->()"


def _fresh_cache_env(cache_dir: str | None = None) -> dict:
    env = dict(os.environ)
    env["SYMGRAD_CACHE_DIR"] = cache_dir or tempfile.mkdtemp(prefix="symgrad_bench_")
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def med(xs):
    return statistics.median(xs)


# ----------------------------------------------------------------------------------------
# MLP loss (shared by the build worker and the sympy worker)
# ----------------------------------------------------------------------------------------
def mlp_loss(W1, b1, w2, x, y):
    import numpy as np

    return (w2 @ np.tanh(W1 @ x + b1) - y) ** 2


def mlp_args(h, i, batch=None, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    W1 = rng.standard_normal((h, i)) / np.sqrt(i)
    b1 = rng.standard_normal(h)
    w2 = rng.standard_normal(h) / np.sqrt(h)
    if batch is None:
        return W1, b1, w2, rng.standard_normal(i), 0.3
    return W1, b1, w2, rng.standard_normal((batch, i)), rng.standard_normal(batch)


def scalar_op_count(graph) -> int:
    """Scalar floating-point operations of the traced forward program.

    Graph nodes are array-level (one ``contract`` node is a whole mat-vec), so
    this counts element operations: a contraction costs 2 flops per term of its
    einsum (multiply + add), a reduction one per input element, everything
    else one per output element.  Inputs, constants and views cost nothing.
    """
    import math

    total = 0
    for n in graph.nodes:
        if n.op in ("input", "const", "getitem", "broadcast_to", "reshape", "transpose"):
            continue
        if n.op == "contract":
            spec = n.params[0]
            lhs = spec.split("->")[0].split(",")
            sizes = {}
            for sub, a in zip(lhs, n.args):
                for ch, d in zip(sub, graph.nodes[a].shape):
                    sizes[ch] = d
            total += 2 * math.prod(sizes.values())
        elif n.op == "sum":
            total += math.prod(graph.nodes[n.args[0]].shape)
        else:
            total += math.prod(n.shape) if n.shape else 1
    return total


# ----------------------------------------------------------------------------------------
# Workers (fresh processes)
# ----------------------------------------------------------------------------------------
def worker_build(h: int, i: int, prewarm: str, do_eval: bool, repeats: int) -> dict:
    t0 = time.perf_counter()
    import numba
    import numpy as np

    import symgrad
    import symgrad.api.compiled  # noqa: F401  (its import is timed)
    t_import = time.perf_counter() - t0

    res = {"import_s": t_import}
    if prewarm == "njit":  # pay Numba/LLVM's once-per-process initialisation before the clock starts
        t0 = time.perf_counter()
        numba.njit(lambda a: a + 1.0)(1.0)
        res["prewarm_s"] = time.perf_counter() - t0
    elif prewarm == "mlp":  # steady state: another MLP gradient (2 x 3) already built in this process
        t0 = time.perf_counter()
        symgrad.grad(mlp_loss, argnums=(0, 1, 2), signature=MLP_SIG)(*mlp_args(2, 3))
        res["prewarm_s"] = time.perf_counter() - t0

    # Numba compile events: total per top-level function, and the part spent compiling
    # Numba's own slice-assignment error message (raise_with_shape_context -> str/join).
    compile_log = compile_event_log()

    # Time the stages by wrapping the names compiled.py calls (in this process only).
    stages: dict = {}
    time_build_stages(stages)

    args = mlp_args(h, i, batch=1000 if do_eval else None)
    t0 = time.perf_counter()
    dloss = symgrad.grad(mlp_loss, argnums=(0, 1, 2), signature=MLP_SIG)
    out = dloss(*args)
    res["build_s"] = time.perf_counter() - t0
    res["stages"] = dict(stages)
    res["stages"]["compile+run"] = res["build_s"] - sum(stages.values())
    res["numba_setslice_errmsg_s"] = sum(d for q, d in compile_log if "raise_with_shape_context" in q)
    assert out[0].shape[-2:] == (h, i)

    tr = symgrad.trace(mlp_loss, *mlp_args(h, i), signature=MLP_SIG)
    res["nodes"] = len(tr.program.graph.nodes)
    res["ops"] = sum(1 for n in tr.program.graph.nodes if n.op not in ("input", "const"))
    res["scalar_ops"] = scalar_op_count(tr.program.graph)
    res["params"] = h * i + 2 * h

    if do_eval:
        fwd = symgrad.jit(mlp_loss, signature=MLP_SIG)
        t0 = time.perf_counter()
        fwd(*args)
        res["fwd_build_s"] = time.perf_counter() - t0
        # check the gradient against central differences on one sample
        W1, b1, w2, X, Y = args
        eps = 1e-6
        E = np.zeros_like(W1)
        E[0, 0] = eps
        fd = (mlp_loss(W1 + E, b1, w2, X[0], Y[0]) - mlp_loss(W1 - E, b1, w2, X[0], Y[0])) / (2 * eps)
        res["grad_check_relerr"] = float(abs(out[0][0, 0, 0] - fd) / max(abs(fd), 1e-12))
        ng = max(1, int(0.2 / max(1e-6, min(timeit.repeat(lambda: dloss(*args), number=1, repeat=3)))))
        nf = max(1, int(0.2 / max(1e-6, min(timeit.repeat(lambda: fwd(*args), number=1, repeat=3)))))
        tg = [t / ng for t in timeit.repeat(lambda: dloss(*args), number=ng, repeat=repeats)]
        tf = [t / nf for t in timeit.repeat(lambda: fwd(*args), number=nf, repeat=repeats)]
        # interleave once more to reduce drift bias
        tg += [t / ng for t in timeit.repeat(lambda: dloss(*args), number=ng, repeat=repeats)]
        res["grad_eval_s"], res["fwd_eval_s"] = med(tg), med(tf)
        res["grad_over_fwd"] = med(tg) / med(tf)
        # output bytes written by each (per-sample gradients vs one scalar per sample)
        res["grad_out_bytes"] = sum(o.nbytes for o in out)
        # The generated batch kernel alone, outputs preallocated and reused: separates the
        # kernel's arithmetic from allocating (and first-touching) fresh output memory per call.
        import resource
        mod = next(iter(dloss.compiled._entries.values())).fn.__globals__
        kern = next(v for k, v in mod.items() if k.endswith("_grad_f64_batch"))
        n = X.shape[0]
        ins = [np.broadcast_to(W1, (n, h, i)), np.broadcast_to(b1, (n, h)), np.broadcast_to(w2, (n, h)),
               np.broadcast_to(X, X.shape), np.broadcast_to(Y, Y.shape)]
        outs = [np.empty((n, h, i)), np.empty((n, h)), np.empty((n, h))]
        kern(*ins, *outs)
        tk = [t / ng for t in timeit.repeat(lambda: kern(*ins, *outs), number=ng, repeat=repeats)]
        res["grad_kernel_prealloc_s"] = med(tk)
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(10):
            dloss(*args)
        res["grad_minflt_per_call"] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 10
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(10):
            fwd(*args)
        res["fwd_minflt_per_call"] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 10
    return res


def worker_sympy(h: int, i: int, timeout: float) -> dict:
    import sympy as sp

    W1 = sp.Matrix(h, i, lambda a, b: sp.Symbol(f"W1_{a}_{b}", real=True))
    b1 = sp.Matrix(h, 1, lambda a, _: sp.Symbol(f"b1_{a}", real=True))
    w2 = sp.Matrix(h, 1, lambda a, _: sp.Symbol(f"w2_{a}", real=True))
    x = sp.Matrix(i, 1, lambda a, _: sp.Symbol(f"x_{a}", real=True))
    y = sp.Symbol("y", real=True)
    t0 = time.perf_counter()
    hidden = (W1 * x + b1).applyfunc(sp.tanh)
    expr = ((w2.T * hidden)[0, 0] - y) ** 2
    t_build = time.perf_counter() - t0
    params = list(W1) + list(b1) + list(w2)
    per = []
    start = time.perf_counter()
    for p in params:
        s = time.perf_counter()
        sp.diff(expr, p)
        per.append(time.perf_counter() - s)
        if time.perf_counter() - start > timeout:
            break
    return {"params": len(params), "done": len(per), "diff_total_s": sum(per),
            "per_diff_s": med(per), "expr_ops": int(sp.count_ops(expr)), "expr_build_s": t_build,
            "timed_out": len(per) < len(params),
            "extrapolated_total_s": sum(per) / len(per) * len(params)}


def worker_cache(n: int) -> dict:
    t0 = time.perf_counter()
    import numpy as np

    import symgrad
    t_import = time.perf_counter() - t0

    def rosenbrock(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.random.default_rng(0).uniform(-2, 2, n)
    t0 = time.perf_counter()
    g = symgrad.grad(rosenbrock, signature="(n)->()")(x)
    t_first = time.perf_counter() - t0
    from scipy.optimize import rosen_der
    err = float(np.max(np.abs(g - rosen_der(x))) / np.max(np.abs(rosen_der(x))))
    files = sorted(p.name for p in Path(os.environ["SYMGRAD_CACHE_DIR"]).rglob("*") if p.is_file())
    return {"import_s": t_import, "first_call_s": t_first, "relerr_vs_scipy": err, "n_cache_files": len(files)}


def run_worker(argv: list[str], env: dict, timeout: float = 900) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *argv]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"worker {argv} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------
# 1. Elementwise softplus derivative
# ----------------------------------------------------------------------------------------
def bench_elementwise(quick: bool) -> tuple[str, list]:
    import numba
    import numpy as np

    import symgrad

    n = 10 ** 6 if quick else 10 ** 7
    repeats = 5 if quick else 9

    def make_kernels(dt):
        one = dt(1.0)
        zero = dt(0.0)

        @numba.njit
        def stable_into(x, out):
            for k in range(x.shape[0]):
                v = x[k]
                if v >= zero:
                    out[k] = one / (one + np.exp(-v))
                else:
                    e = np.exp(v)
                    out[k] = e / (one + e)

        @numba.njit
        def stable_alloc(x):
            out = np.empty_like(x)
            for k in range(x.shape[0]):
                v = x[k]
                if v >= zero:
                    out[k] = one / (one + np.exp(-v))
                else:
                    e = np.exp(v)
                    out[k] = e / (one + e)
            return out

        @numba.njit
        def branchless_alloc(x):  # same stable formula, written so it compiles to a select
            out = np.empty_like(x)
            for k in range(x.shape[0]):
                v = x[k]
                e = np.exp(-abs(v))
                r = one / (one + e)
                out[k] = r if v >= zero else e * r
            return out

        @numba.njit
        def naive_alloc(x):  # textbook formula, overflows to nan for large x
            out = np.empty_like(x)
            for k in range(x.shape[0]):
                e = np.exp(x[k])
                out[k] = e / (one + e)
            return out

        return stable_into, stable_alloc, branchless_alloc, naive_alloc

    g = symgrad.grad(lambda x: np.log(1 + np.exp(x)))
    rows, notes = [], []
    for dtype in (np.float64, np.float32):
        x = np.random.default_rng(0).uniform(-20, 20, n).astype(dtype)
        out = np.empty_like(x)
        stable_into, stable_alloc, branchless_alloc, naive_alloc = make_kernels(dtype)
        # warm up (compile) everything
        r_sg = g(x)
        stable_into(x, out)
        r_st = stable_alloc(x)
        naive_alloc(x)
        branchless_alloc(x)
        assert r_sg.dtype == dtype and r_st.dtype == dtype
        err = float(np.max(np.abs(r_sg.astype(np.float64) - r_st.astype(np.float64))))
        cands = {
            "symgrad.grad": lambda: g(x),
            "njit stable, prealloc out": lambda: stable_into(x, out),
            "njit stable, allocating": lambda: stable_alloc(x),
            "njit stable branch-free exp(-|x|), allocating": lambda: branchless_alloc(x),
            "njit naive e/(1+e), allocating": lambda: naive_alloc(x),
        }
        times = {k: [] for k in cands}
        for _ in range(repeats):  # interleave candidates so drift hits all equally
            for k, f in cands.items():
                times[k].append(min(timeit.repeat(f, number=1, repeat=1)))
        m = {k: med(v) for k, v in times.items()}
        base_pre, base_alloc = m["njit stable, prealloc out"], m["njit stable, allocating"]
        for k in cands:
            rows.append([np.dtype(dtype).name, k, fmt_t(m[k]), f"{m[k] / n * 1e9:.2f}",
                         f"{m[k] / base_alloc:.2f}x", f"{m[k] / base_pre:.2f}x"])
        notes.append((np.dtype(dtype).name, m["symgrad.grad"] / base_alloc, m["symgrad.grad"] / base_pre, err))
        # extreme inputs: is the emitted derivative stable?
        big = np.array([-1000.0, 1000.0], dtype=dtype)
        notes.append(("extremes", np.dtype(dtype).name, g(big).tolist(), stable_alloc(big).tolist()))

    src = g.source(x)
    start = src.index("def lambda_fn_grad_f64(")
    body = src[src.rfind("\n\n", 0, start):src.index("\n\n\n", start)].strip("\n")
    notes.append(("source", body))
    md = [f"### 1. Elementwise d/dx log(1 + exp(x)), n = {n:,} points, x ~ U(-20, 20)\n",
          f"Median of {repeats} interleaved repeats (1 call each, after warm-up). "
          "Ratios are against the hand-written stable-sigmoid kernels; target symgrad ≤ 1.1x.\n",
          table(["dtype", "implementation", "median", "ns/elem", "vs njit stable alloc", "vs njit stable prealloc"],
                rows), ""]
    for item in notes:
        if item[0] == "source":
            md.append("\nsymgrad's generated float64 core (benchmarked above):\n\n```python\n" + item[1] + "\n```")
        elif item[0] == "extremes":
            md.append(f"- {item[1]} at x = [-1000, 1000]: symgrad {item[2]}, hand-written stable {item[3]}")
        else:
            md.append(f"- {item[0]}: symgrad / hand-written = **{item[1]:.2f}x** (allocating), "
                      f"{item[2]:.2f}x (preallocated); max |difference| on U(-20, 20) = {item[3]:.1e}")
    return "\n".join(md), notes


# ----------------------------------------------------------------------------------------
# 2. Scalar call latency
# ----------------------------------------------------------------------------------------
def bench_latency(quick: bool) -> tuple[str, dict]:
    import math

    import numba
    import numpy as np

    import symgrad

    calls = 50_000 if quick else 200_000
    repeats = 5 if quick else 7

    def f(x, y, z):
        return x * y * np.sin(z) + np.exp(x * z)

    @numba.njit
    def hand(x, y, z):
        s = math.sin(z)
        e = math.exp(x * z)
        return y * s + z * e, x * s, x * y * math.cos(z) + x * e

    def py_noop(x, y, z):
        return x, y, z

    g = symgrad.grad(f, argnums=(0, 1, 2))
    a, b, c = 0.7, 1.3, 0.4
    r_sg, r_hand = g(a, b, c), hand(a, b, c)
    assert all(abs(p - q) < 1e-12 * max(1, abs(q)) for p, q in zip(r_sg, r_hand)), (r_sg, r_hand)
    entry = next(iter(g.compiled._entries.values()))
    wrapper = entry.fn                                   # generated module-level f_grad(x, y, z)
    core = wrapper.__globals__["f_grad_f64"]             # the numba dispatcher it calls
    layers = {
        "Python no-op def (baseline)": py_noop,
        "hand-written numba.njit": hand,
        "generated core f_grad_f64 (numba dispatcher)": core,
        "generated module wrapper f_grad (type checks + core)": wrapper,
        "symgrad.grad(...) public callable": g,
    }
    extra = {  # arguments that miss the float fast path
        "symgrad.grad with np.float64 args": (g, (np.float64(a), np.float64(b), np.float64(c))),
        "hand njit with np.float64 args": (hand, (np.float64(a), np.float64(b), np.float64(c))),
        "symgrad.grad with int args": (g, (1, 2, 3)),
    }
    for fn in layers.values():
        fn(a, b, c)
    times = {k: [] for k in layers}
    glb = {"a": a, "b": b, "c": c}
    for _ in range(repeats):
        for k, fn in layers.items():
            glb["fn"] = fn
            times[k].append(timeit.timeit("fn(a, b, c)", globals=glb, number=calls) / calls)
    m = {k: med(v) for k, v in times.items()}
    mn = {k: min(v) for k, v in times.items()}
    base = m["hand-written numba.njit"]
    rows = [[k, f"{m[k] * 1e9:.0f}", f"{mn[k] * 1e9:.0f}", f"{m[k] / base:.2f}x"] for k in layers]
    for k, (fn, args) in extra.items():
        fn(*args)
        n_ex = calls // 20
        ts = [timeit.timeit(lambda: fn(*args), number=n_ex) / n_ex for _ in range(repeats)]
        m[k], mn[k] = med(ts), min(ts)
        rows.append([k + " (lambda-wrapped, fewer calls)", f"{m[k] * 1e9:.0f}", f"{mn[k] * 1e9:.0f}",
                     f"{m[k] / base:.2f}x"])
    keys = list(layers)
    brk = [
        ["numba dispatch + boxing (hand njit − no-op def)", f"{(m[keys[1]] - m[keys[0]]) * 1e9:.0f}"],
        ["generated core vs hand njit (same dispatch, generated body)", f"{(m[keys[2]] - m[keys[1]]) * 1e9:.0f}"],
        ["module wrapper: 3× `type(x) is float` + extra Python frame", f"{(m[keys[3]] - m[keys[2]]) * 1e9:.0f}"],
        ["Compiled.__call__: fast-path lookup, len(args), try, *args frame", f"{(m[keys[4]] - m[keys[3]]) * 1e9:.0f}"],
    ]
    ratio = m[keys[4]] / base
    md = ["### 2. Scalar call latency: grad of f(x, y, z) = x*y*sin(z) + exp(x*z), argnums=(0, 1, 2)\n",
          f"Python floats in, tuple of 3 floats out. Median over {repeats} repeats of {calls:,} calls "
          "(layers interleaved). Target symgrad / hand-written ≤ 1.5x.\n",
          table(["callable", "ns/call (median)", "ns/call (min)", "median vs hand njit"], rows), "",
          "Where the time goes (differences of the medians above):\n",
          table(["layer", "ns/call"], brk), "",
          f"- symgrad / hand-written = **{ratio:.2f}x**"]
    return "\n".join(md), {"ratio": ratio, **m}


# ----------------------------------------------------------------------------------------
# 3. MLP build time, grad/forward ratio, sympy.diff comparison
# ----------------------------------------------------------------------------------------
def bench_build(quick: bool) -> tuple[str, dict]:
    sizes = [(4, 4), (16, 8)] if quick else [(4, 4), (16, 8), (32, 16), (64, 32)]
    reps = 1 if quick else 3
    eval_reps = 3 if quick else 7
    rows, rows_stage, rows_eval, info = [], [], [], {}
    for h, i in sizes:
        cold, njitw, steady, stage_list, errmsg, steady_errmsg = [], [], [], [], [], []
        evalres = prew = None
        for r in range(reps):
            # cold: nothing compiled before in the process (what a user sees on a first build)
            res = run_worker(["build", str(h), str(i), "--eval" if r == 0 else "--no-eval",
                              "--repeats", str(eval_reps)], _fresh_cache_env())
            cold.append(res["build_s"])
            stage_list.append(res["stages"])
            errmsg.append(res["numba_setslice_errmsg_s"])
            if r == 0:
                evalres = res
                # trivial @njit compiled first: removes only LLVM/Numba initialisation
                prew = run_worker(["build", str(h), str(i), "--prewarm", "njit", "--no-eval"], _fresh_cache_env())
                njitw.append(prew["build_s"])
            # steady state: a (2, 3) MLP gradient built first in the same process
            res3 = run_worker(["build", str(h), str(i), "--prewarm", "mlp", "--no-eval"], _fresh_cache_env())
            steady.append(res3["build_s"])
            steady_errmsg.append(res3["numba_setslice_errmsg_s"])
        e = evalres
        st = {k: med([s_[k] for s_ in stage_list]) for k in stage_list[0]}
        info[(h, i)] = {"cold": med(cold), "steady": med(steady), "ratio": e["grad_over_fwd"],
                        "nodes": e["nodes"], "scalar_ops": e["scalar_ops"]}
        rows.append([f"({h}, {i})", e["params"], e["nodes"], e["ops"], e["scalar_ops"],
                     f"**{med(cold):.2f} s**", f"{med(njitw):.2f} s", f"{med(steady):.2f} s",
                     f"{med(steady) / e['ops'] * 1e3:.0f} ms", f"{med(steady) / e['scalar_ops'] * 1e6:.0f} µs"])
        rows_stage.append([f"({h}, {i})"] + [f"{st[k] * 1e3:.0f} ms" for k in
                                            ("trace", "differentiate", "stabilize", "emit", "load",
                                             "compile+run") if k in st]
                          + [f"{med(errmsg):.2f} s", f"{med(steady_errmsg):.2f} s",
                             f"{e['import_s']:.2f} s", f"{prew['prewarm_s']:.2f} s"])
        rows_eval.append([f"({h}, {i})", fmt_t(e["fwd_eval_s"]), fmt_t(e["grad_eval_s"]),
                          f"**{e['grad_over_fwd']:.2f}x**", f"{e['grad_out_bytes'] / 1e6:.1f} MB",
                          f"{e['grad_minflt_per_call']:.0f} / {e['fwd_minflt_per_call']:.0f}",
                          fmt_t(e["grad_kernel_prealloc_s"]), f"{e['grad_kernel_prealloc_s'] / e['fwd_eval_s']:.2f}x",
                          f"{e['fwd_build_s']:.2f} s", f"{e['grad_check_relerr']:.1e}"])
    ks = list(info)
    slope = ((info[ks[-1]]["steady"] - info[ks[0]]["steady"]) /
             (info[ks[-1]]["scalar_ops"] - info[ks[0]]["scalar_ops"]))

    sym_sizes = [(4, 4), (16, 8)] if quick else [(4, 4), (16, 8), (32, 16)]
    timeout = 60 if quick else 300
    rows_sym = []
    for h, i in sym_sizes:
        r = run_worker(["sympy", str(h), str(i), str(timeout)], _fresh_cache_env(), timeout=timeout + 120)
        total = (f"{r['diff_total_s']:.2f} s" if not r["timed_out"]
                 else f"> {timeout} s (timed out after {r['done']}/{r['params']}; ≈{r['extrapolated_total_s']:.0f} s)")
        rows_sym.append([f"({h}, {i})", r["params"], r["expr_ops"], f"{r['per_diff_s'] * 1e3:.2f} ms", total])
        info[("sympy", h, i)] = r

    sym_lines = []
    sk = [k for k in info if k[0] == "sympy"]
    for k0, k1 in zip(sk, sk[1:]):
        r0, r1 = info[k0], info[k1]
        sym_lines.append(f"- ({k0[1]}, {k0[2]}) → ({k1[1]}, {k1[2]}): params ×{r1['params'] / r0['params']:.1f}, "
                         f"expression ops ×{r1['expr_ops'] / r0['expr_ops']:.1f}, per-diff time "
                         f"×{r1['per_diff_s'] / r0['per_diff_s']:.1f}, total diff time "
                         f"×{r1['extrapolated_total_s'] / r0['extrapolated_total_s']:.1f}")
    skipped = "(64, 32)" if not quick else "(32, 16) and (64, 32)"
    md = ["### 3. Build time: one-hidden-layer tanh MLP, loss = (w2 @ tanh(W1 @ x + b1) - y)**2\n",
          f"`symgrad.grad(loss, argnums=(0, 1, 2), signature=\"{MLP_SIG}\")`: time from creating it to the "
          "first result (trace + differentiate + emit + Numba compile + run on a 1000-sample batch), each in a "
          f"fresh process with a fresh SYMGRAD_CACHE_DIR (symgrad already imported). *cold* (median of {reps} "
          "processes): nothing compiled before in the process — what a user sees, the number the ≤ 10 s target "
          "applies to. *njit-prewarmed* (1 process): a trivial @njit function compiled first, removing only "
          f"LLVM/Numba initialisation. *steady state* (median of {reps}): a (2, 3) MLP gradient built first in the "
          "same process, so Numba's per-process compilation of its own helpers is already paid; this is the "
          "marginal cost of one more kernel and the number to compare across sizes.\n",
          "Graph nodes are array-level (one `contract` node is a whole mat-vec), so the node count does not "
          "change with size; *scalar ops* counts the element-level flops of the forward program "
          "(2 per multiply-add term of a contraction).\n",
          table(["(hidden, inputs)", "params", "graph nodes", "non-input ops", "scalar ops", "build (cold)",
                 "build (njit-prewarmed)", "build (steady state)", "steady / graph op", "steady / scalar op"],
                rows), "",
          f"- steady-state build slope between the smallest and largest size: {slope * 1e6:.1f} µs per extra "
          "scalar op (the intercept dominates: see the breakdown below).\n",
          "Stage breakdown of the cold build (medians; *compile+run* is the remainder, i.e. Numba's lazy "
          "compilation at the first call). *of which setslice error message* is the time Numba spent, inside "
          "compile+run, compiling `raise_with_shape_context` (the formatted ValueError of array slice "
          "assignment such as `W1_bar[...] = t7`, which pulls in Numba's str(int)/str.join machinery), "
          "measured with numba.core.event; import and first trivial @njit compile are process overheads "
          "outside the build time:\n",
          table(["size", "trace", "differentiate"] + (["stabilize"] if "stabilize" in stage_list[0] else [])
                + ["emit", "load (write+import)", "compile+run",
                 "of which setslice error message (cold)", "same, steady state",
                 "import symgrad", "trivial @njit first compile"], rows_stage), "",
          f"Evaluation on a batch of 1000 samples (W1, b1, w2 broadcast; per-sample gradients returned), "
          f"medians of {eval_reps}+ repeats, measured in the cold process after the build. Target gradient ≤ 3x "
          "forward. The gradient returns per-sample gradients (W1_bar has shape (1000, h, i)), so each call "
          "allocates and first-touches that much fresh memory; the *kernel alone* column calls the generated "
          "`*_grad_f64_batch` kernel directly with preallocated, reused outputs (internal API, for diagnosis "
          "only), and the page-fault column (getrusage ru_minflt over 10 calls) shows the allocation cost.\n",
          table(["size", "forward (symgrad.jit)", "gradient (symgrad.grad)", "grad / fwd", "gradient output",
                 "minor page faults per call (grad / fwd)", "grad batch kernel alone, outputs preallocated",
                 "kernel alone / fwd",
                 "forward build (same process)", "grad check rel. err (central diff)"], rows_eval), "",
          "sympy.diff on the fully inlined closed form (sympy Matrix of symbols, one `sp.diff` per parameter, "
          f"no simplification, no code generation; timeout {timeout} s). {skipped} skipped: per-diff cost grows "
          "with expression size and the number of diffs with the parameter count, i.e. quadratically.\n",
          table(["size", "params", "expr ops (sp.count_ops)", "median per diff", "all diffs"], rows_sym), "",
          *sym_lines]
    return "\n".join(md), info


# ----------------------------------------------------------------------------------------
# 4. Disk cache
# ----------------------------------------------------------------------------------------
def bench_cache(quick: bool) -> tuple[str, dict]:
    reps = 2 if quick else 3
    cold, warm, imp_c, imp_w = [], [], [], []
    shared = tempfile.mkdtemp(prefix="symgrad_bench_shared_")
    for r in range(reps):
        d = shared if r == 0 else None
        res = run_worker(["cache", "1000"], _fresh_cache_env(d))
        cold.append(res["first_call_s"])
        imp_c.append(res["import_s"])
    nfiles = res["n_cache_files"]
    for r in range(reps):
        res = run_worker(["cache", "1000"], _fresh_cache_env(shared))
        warm.append(res["first_call_s"])
        imp_w.append(res["import_s"])
    md = ["### 4. Disk cache: Rosenbrock gradient, n = 1000, signature \"(n)->()\"\n",
          f"First call of `symgrad.grad(rosenbrock, signature=\"(n)->()\")(x)` in a fresh process; cold = empty "
          f"SYMGRAD_CACHE_DIR (new dir per process), warm = the cache dir filled by a previous process "
          f"({nfiles} files). Median of {reps} processes each. Import time of symgrad shown separately.\n",
          table(["cache", "first call (median)", "import symgrad (median)", "runs"],
                [["cold", fmt_t(med(cold)), fmt_t(med(imp_c)), ", ".join(f"{t:.2f}" for t in cold)],
                 ["warm", fmt_t(med(warm)), fmt_t(med(imp_w)), ", ".join(f"{t:.2f}" for t in warm)]]), "",
          f"- warm / cold = **{med(warm) / med(cold):.3f}** ({med(cold) / med(warm):.0f}x faster); "
          f"gradient rel. error vs scipy.optimize.rosen_der {res['relerr_vs_scipy']:.1e}"]
    return "\n".join(md), {"cold": med(cold), "warm": med(warm)}


# ----------------------------------------------------------------------------------------
def snapshot_symgrad() -> str:
    """Copy the symgrad package to a temp dir and put it first on the import path.

    The working tree may be edited by others while a run is in progress; every
    benchmark (and every worker process, through PYTHONPATH) then uses one
    consistent version of the code.  Returns a description for the header.
    """
    import hashlib
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("symgrad")
    src = Path(spec.origin).parent
    dst = Path(tempfile.mkdtemp(prefix="symgrad_snapshot_"))
    shutil.copytree(src, dst / "symgrad", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    h = hashlib.sha256()
    files = sorted((dst / "symgrad").rglob("*.py"))
    for f in files:
        h.update(str(f.relative_to(dst)).encode())
        h.update(f.read_bytes())
    os.environ["PYTHONPATH"] = str(dst) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    sys.path.insert(0, str(dst))
    try:
        head = subprocess.run(["git", "-C", str(src.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src.parent), "status", "--porcelain", "--", "symgrad"],
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        head, dirty = "?", ""
    stamp = datetime.datetime.now().astimezone().strftime("%H:%M:%S")
    return (f"snapshot of {src} taken at {stamp} ({len(files)} .py files, sha256 {h.hexdigest()[:12]}; "
            f"git HEAD {head}{' + uncommitted changes' if dirty else ''})")


def machine_header(cmd: str, code: str) -> str:
    import numba
    import numpy
    import sympy

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return "\n".join([
        "# symgrad core benchmarks\n",
        table(["", ""], [
            ["date", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")],
            ["command", f"`{cmd}`"],
            ["platform", platform.platform()],
            ["CPU", f"{cpu} ({os.cpu_count()} logical CPUs)"],
            ["Python", platform.python_version()],
            ["numpy / numba / sympy", f"{numpy.__version__} / {numba.__version__} / {sympy.__version__}"],
            ["symgrad code", code],
        ]), "",
        "The machine is shared and noisy: absolute times drift between runs; compare the ratios, which are "
        "measured against a baseline in the same run (medians of repeats). Benchmarks 1–2 run in this process "
        "with a fresh SYMGRAD_CACHE_DIR; 3–4 each start fresh processes.\n"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    ap.add_argument("--only", default="1234", help="which benchmarks to run, e.g. 12")
    ap.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--prewarm", default="", help=argparse.SUPPRESS)
    ap.add_argument("--eval", dest="do_eval", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-eval", dest="do_eval", action="store_false", help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=7, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(RESULTS), help="markdown output file")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="import symgrad from where it is installed instead of a snapshot copy")
    a = ap.parse_args()

    if a.worker:
        kind, *rest = a.worker
        if kind == "build":
            res = worker_build(int(rest[0]), int(rest[1]), a.prewarm, a.do_eval, a.repeats)
        elif kind == "sympy":
            res = worker_sympy(int(rest[0]), int(rest[1]), float(rest[2]))
        elif kind == "cache":
            res = worker_cache(int(rest[0]))
        else:
            raise SystemExit(f"unknown worker {kind}")
        print(json.dumps(res))
        return

    code = "as installed (no snapshot)" if a.no_snapshot else snapshot_symgrad()
    os.environ["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="symgrad_bench_main_")
    os.environ.pop("NUMBA_CACHE_DIR", None)
    cmd = "python benchmarks/bench_core.py" + (" --quick" if a.quick else "") + \
          (f" --only {a.only}" if a.only != "1234" else "")
    parts = [machine_header(cmd, code)]
    benches = {"1": bench_elementwise, "2": bench_latency, "3": bench_build, "4": bench_cache}
    t_all = time.perf_counter()
    for k in a.only:
        t0 = time.perf_counter()
        md, _ = benches[k](a.quick)
        print(md, "\n", flush=True)
        print(f"[benchmark {k} took {time.perf_counter() - t0:.0f} s]\n", file=sys.stderr, flush=True)
        parts.append(md + "\n")
    parts.append(f"_Total benchmark wall time: {time.perf_counter() - t_all:.0f} s._\n")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
