"""Build time of a scalar-loop model at growing sizes (issue 15), against CasADi SX, JAX and SymPy.

The model is the issue's squared-error loss of a one-hidden-layer tanh MLP written with
scalar Python loops over a flat parameter vector (the way CasADi and SymPy users write
models); p = [W (H*D, row major) | b (H) | v (H)], data constants xd (D) and yd:

    out = sum_h v[h] * tanh(b[h] + sum_d W[h, d] * xd[d]);  loss = (out - yd)**2

Gradient with signature "(n)->()".  *Build* = traced function to first gradient value, in a
fresh process with fresh caches (one run each; Numba's one-time initialisation included).
*Eval* = median of repeated calls on one float64 vector, after the build.  Every gradient
is checked against the closed form (NumPy) before its time is reported.

Run:   python benchmarks/bench_buildtime.py                       (all sizes, all peers)
       python benchmarks/bench_buildtime.py --stages --sizes 64x32,128x64   (CPU per stage to the first result)
       python benchmarks/bench_buildtime.py --sizes 4x4,16x8 --peers symgrad,casadi
       python benchmarks/bench_buildtime.py --timeout 300         (per build, seconds)
Also run by ``python benchmarks/peers.py --buildtime``.
Writes benchmarks/results/buildtime.md (collected into BENCHMARKS.md by collect.py).
Worker mode (internal): --worker PEER H D
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
RESULTS = HERE / "results" / "buildtime.md"
PEERS = ["symgrad", "symgrad-nostab", "casadi", "jax", "sympy"]
LABEL = {"symgrad": "symgrad", "symgrad-nostab": "symgrad stabilize=False", "casadi": "CasADi SX",
         "jax": "JAX jit", "sympy": "SymPy diff+cse+lambdify(math)"}
SIZES = [(4, 4), (16, 8), (32, 16), (64, 32), (128, 64)]


def data(H, D, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    xd, yd = rng.standard_normal(D), 0.3
    p = rng.standard_normal(H * D + 2 * H) * 0.3
    return xd, yd, p


def make_loss(H, D, xd, yd, tanh):
    def mlp_loss(p):
        out = 0.0
        for h in range(H):
            a = p[H * D + h]
            for d in range(D):
                a = a + p[h * D + d] * xd[d]
            out = out + p[H * D + H + h] * tanh(a)
        r = out - yd
        return r * r
    return mlp_loss


def grad_ref(H, D, xd, yd, p):
    import numpy as np
    W, b, v = p[:H * D].reshape(H, D), p[H * D:H * D + H], p[H * D + H:]
    t = np.tanh(W @ xd + b)
    r = v @ t - yd
    da = 2 * r * v * (1 - t * t)
    return np.concatenate([np.outer(da, xd).ravel(), da, 2 * r * t])


def _build(peer, H, D, xd, yd, p):
    """(callable p -> gradient as a NumPy array, extra info); the caller times this."""
    import numpy as np
    if peer.startswith("symgrad"):
        import symgrad as sg
        g = sg.grad(make_loss(H, D, xd, yd, np.tanh), signature="(n)->()", stabilize=peer == "symgrad")
        return g, {}
    if peer == "casadi":
        import casadi as ca
        P = ca.SX.sym("p", len(p))
        loss = make_loss(H, D, [float(v) for v in xd], yd, ca.tanh)(P)
        f = ca.Function("g", [P], [ca.gradient(loss, P)])
        return (lambda q: np.asarray(f(q)).ravel()), {}
    if peer == "jax":
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        g = jax.jit(jax.grad(make_loss(H, D, jnp.asarray(xd), yd, jnp.tanh)))
        return (lambda q: np.asarray(g(q))), {}
    if peer == "sympy":
        import sympy as sp
        P = sp.symbols(f"p0:{len(p)}", real=True)
        loss = make_loss(H, D, [sp.Float(float(v)) for v in xd], sp.Float(yd), sp.tanh)(P)
        grads = [sp.diff(loss, q) for q in P]
        body = sp.lambdify([P], grads, modules="math", cse=True)
        return (lambda q: np.asarray(body(q))), {}
    raise ValueError(peer)


# -- two Hessians from the issue: a Gaussian-mixture log-likelihood and 100 explicit Euler steps --------

GMM_K, GMM_N = 3, 40
EULER_STEPS = 100


def gmm_loglik(theta, xs, np_):
    """Log-likelihood of 1-D data ``xs`` under K Gaussians; theta = [logits (K) | means (K) |
    log sigmas (K)].  Written with scalar loops, as a modeller would."""
    K = GMM_K
    lw = [theta[k] for k in range(K)]
    m = lw[0]
    for k in range(1, K):
        m = np_.logaddexp(m, lw[k])  # log of the softmax normaliser
    total = 0.0
    for x in xs:
        acc = None
        for k in range(K):
            z = (x - theta[K + k]) * np_.exp(-theta[2 * K + k])
            term = lw[k] - m - theta[2 * K + k] - 0.5 * z * z - 0.9189385332046727
            acc = term if acc is None else np_.logaddexp(acc, term)
        total = total + acc
    return total


def euler_loss(theta, np_):
    """Squared final state of 100 explicit Euler steps of Lotka-Volterra with parameters theta (4)."""
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    u, v, h = 1.0, 0.5, 0.01
    for _ in range(EULER_STEPS):
        u, v = u + h * (a * u - b * u * v), v + h * (c * u * v - d * v)
    return u * u + v * v


def hessian_models():
    import numpy as np
    rng = np.random.default_rng(1)
    xs = [float(v) for v in np.concatenate([rng.normal(-2, 0.5, GMM_N // 2), rng.normal(1.5, 1.0, GMM_N // 2)])]
    gmm_theta = np.array([0.1, -0.2, 0.3, -2.0, 0.0, 1.5, -0.5, 0.0, 0.2])
    eul_theta = np.array([1.1, 0.4, 0.3, 0.9])
    return {"gmm": (lambda t, np_=np: gmm_loglik(t, xs, np_), gmm_theta, lambda t, jnp: gmm_loglik(t, xs, jnp)),
            "euler": (lambda t, np_=np: euler_loss(t, np_), eul_theta, lambda t, jnp: euler_loss(t, jnp))}


def hessian_worker(peer, model, repeats):
    import numpy as np
    fn, theta, jfn = hessian_models()[model]
    if peer.startswith("symgrad"):
        import symgrad as sg
        from symgrad.compile.interpreter import warm_interpreter
        warm_interpreter()  # compiled once per installation
    else:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
    t0, c0 = time.perf_counter(), time.process_time()
    if peer.startswith("symgrad"):
        h = sg.hessian(fn, signature="(n)->()", stabilize=peer == "symgrad")
    else:
        hj = jax.jit(jax.hessian(lambda t: jfn(t, jnp)))
        h = lambda t: np.asarray(hj(t))  # noqa: E731
    got = np.asarray(h(theta))
    build, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    extra = {}
    if peer.startswith("symgrad"):
        extra["tier"] = next(iter(h.compiled._entries.values())).tier
        h.wait_compiled()
        extra["compiled_s"] = time.perf_counter() - t0
    eps = 1e-5  # check: central differences of a central-difference gradient (rel. error ~1e-6)
    g = lambda t: np.array([(fn(t + eps * e) - fn(t - eps * e)) / (2 * eps) for e in np.eye(len(t))])  # noqa: E731
    ref = np.array([(g(theta + eps * e) - g(theta - eps * e)) / (2 * eps) for e in np.eye(len(theta))])
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    times = timeit.repeat(lambda: h(theta), number=20, repeat=repeats)
    print(json.dumps({"peer": peer, "model": model, "build_s": build, "build_cpu_s": build_cpu,
                      "relerr_fd": err, "eval_s": statistics.median(times) / 20, **extra}), flush=True)


def worker(peer, H, D, repeats):
    import numpy as np
    xd, yd, p = data(H, D)
    _ = np.tanh(p)  # numpy warm: its import is not the peer's build
    if peer.startswith("symgrad"):
        import symgrad
        symgrad.grad  # noqa: B018  (the API is imported lazily; imports are not build time, for every peer)
        from symgrad.compile.interpreter import warm_interpreter
        t_int = time.perf_counter()
        warm_interpreter()  # compiled once per installation (Numba's disk cache), like an import
        interp_install_s = time.perf_counter() - t_int
    elif peer == "casadi":
        import casadi  # noqa: F401
    elif peer == "jax":
        import jax  # noqa: F401
    elif peer == "sympy":
        import sympy  # noqa: F401
    t0, c0 = time.perf_counter(), time.process_time()
    fn, info = _build(peer, H, D, xd, yd, p)
    got = fn(p)
    build, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    ref = grad_ref(H, D, xd, yd, p)
    err = float(np.max(np.abs(np.asarray(got) - ref)) / np.max(np.abs(ref)))
    out = {"peer": peer, "H": H, "D": D, "n": len(p), "build_s": build, "build_cpu_s": build_cpu, "relerr": err}
    if peer.startswith("symgrad"):
        import symgrad as sg
        out["interp_install_s"] = interp_install_s
        entry = next(iter(fn.compiled._entries.values()))
        out["tier"] = entry.tier
        call = None
        if entry.tier == "interpreter":  # the interpreter tier itself, while LLVM compiles the native code
            from symgrad.runtime.gufunc import gufunc_call
            spec = entry.tiered.spec  # not ``fn``: the native code may take over during the timing
            call = lambda: gufunc_call(spec, (p,))  # noqa: E731
            number = max(1, int(2e-3 / max(min(timeit.repeat(call, number=1, repeat=3)), 1e-7)))
            out["interp_during_compile_s"] = statistics.median(
                timeit.repeat(call, number=number, repeat=repeats)) / number
        print(json.dumps(out), flush=True)  # the first-result figures, should the compile outlast the timeout
        fn.wait_compiled()
        if call is not None:  # the interpreter alone, the compile thread finished (no GIL shared with it)
            number = max(1, int(2e-3 / max(min(timeit.repeat(call, number=1, repeat=3)), 1e-7)))
            out["interp_eval_s"] = statistics.median(timeit.repeat(call, number=number, repeat=repeats)) / number
        out["compiled_s"] = time.perf_counter() - t0
        out["compiled_tier"] = entry.tier  # "native" (LLVM from the tape) or "compiled" (the Numba module)
        if peer == "symgrad":
            rw = sg.trace(make_loss(H, D, xd, yd, np.tanh), p, signature="(n)->()").rewrites()
            out["stab_cpu_s"] = rw.cpu_s
            out["stab_note"] = "; ".join(rw.notes)
    number = max(1, int(2e-3 / max(min(timeit.repeat(lambda: fn(p), number=1, repeat=3)), 1e-7)))
    times = timeit.repeat(lambda: fn(p), number=number, repeat=repeats)
    out["eval_s"] = statistics.median(times) / number
    print(json.dumps(out), flush=True)


def stages(H, D) -> dict:
    """Main-thread CPU seconds of each stage from the traced function to the interpreter tape:
    trace, differentiate (VJP), fingerprint (cache key), stabilise, lower to a tape."""
    import numpy as np
    from symgrad.api.build import build_kernel
    from symgrad.api.shift_pass import shift_reductions
    from symgrad.api.stabilize_pass import budget_of, stabilize_kernel
    from symgrad.emit.tape import build_tape
    from symgrad.trace.trace import trace_program
    xd, yd, p = data(H, D)
    f = make_loss(H, D, xd, yd, np.tanh)
    clock, out = time.thread_time, {}
    t = clock()
    prog = trace_program(f, (p,), [(len(p),)])
    out["trace"], t = clock() - t, clock()
    prog.outputs, _ = shift_reductions(prog.graph, prog.outputs)
    k = build_kernel(prog, "grad", [0]).kernel
    out["vjp"], t = clock() - t, clock()
    prog.fingerprint()
    out["fingerprint"], t = clock() - t, clock()
    stabilize_kernel(prog.graph, k, budget_of(True))
    out["stabilise"], t = clock() - t, clock()
    build_tape(prog.graph, k.args, k.outputs, k.widen_float32)
    out["tape"] = clock() - t
    out["total"] = sum(out.values())
    return out


def run_worker(peer, H, D, timeout, repeats, **extra_env):
    env = dict(os.environ, **extra_env, SYMGRAD_CACHE_DIR=tempfile.mkdtemp(prefix="symgrad-buildtime-"),
               JAX_PLATFORMS="cpu", SYMGRAD_MAX_NODES=os.environ.get("SYMGRAD_MAX_NODES", "1000000"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", peer, str(H), str(D),
           "--repeats", str(repeats)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        lines = [ln for ln in partial.splitlines() if ln.startswith("{")]
        if lines:  # the first result came; the compiled tier did not finish in time
            return {**json.loads(lines[-1]), "compiled_timed_out": timeout}
        return {"peer": peer, "H": H, "D": D, "timed_out": timeout}
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"peer": peer, "H": H, "D": D, "error": (r.stderr.strip().splitlines() or ["?"])[-1][:200]}


def fmt(sec):
    if sec is None:
        return "–"
    if sec >= 1:
        return f"{sec:.2f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.1f} ms"
    return f"{sec * 1e6:.1f} µs"


def cell(r, key):
    if r.get("not_run"):
        return "not run"
    if "timed_out" in r:
        return f"> {r['timed_out']:.0f} s (stopped)"
    if "error" in r:
        return f"error: {r['error']}"
    if r.get("relerr", 1.0) > 1e-10:
        return f"WRONG (rel. err {r['relerr']:.1e})"
    if key in ("compiled_s", "eval_s") and "compiled_timed_out" in r:
        return f"> {r['compiled_timed_out']:.0f} s (stopped)"
    return fmt(r.get(key))


def report(results, sizes, peers, cmd) -> str:
    import numpy
    by = {(r["peer"], r["H"], r["D"]): r for r in results}
    hdr = ["(H, D), params"] + [LABEL[p] for p in peers]
    lines = ["|  |  |", "|---|---|",
             f"| date | {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC |",
             f"| command | `{cmd}` |", f"| platform | {platform.platform()} |",
             f"| CPU | {platform.processor() or platform.machine()} ({os.cpu_count()} logical CPUs, shared) |",
             f"| Python / numpy | {platform.python_version()} / {numpy.__version__} |", ""]

    def tab(title, key):
        out = [f"#### {title}", "", "| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
        for H, D in sizes:
            n = H * D + 2 * H
            row = [f"({H}, {D}), {n}"] + [cell(by.get((p, H, D), {"not_run": True}), key) for p in peers]
            out.append("| " + " | ".join(row) + " |")
        return out + [""]

    lines += tab("Build: traced function to first gradient value (wall time, fresh process and caches)", "build_s")
    lines += tab("Build, CPU time of the building process (the machine is shared: wall time includes waiting)",
                 "build_cpu_s")
    lines += tab("symgrad: traced function to the compiled tier serving calls (wall; programs of 1000 operations "
                 "or more answer first from the interpreter, then from native code that LLVM compiles from the "
                 "tape in a thread; smaller ones compile the Numba module before the first result)", "compiled_s")
    lines += tab("Evaluation per gradient call (median of repeats, one float64 vector; symgrad: compiled tier)",
                 "eval_s")
    lines += tab("symgrad interpreter tier: evaluation per gradient call (the interpreter's own calls, timed once "
                 "the compile thread has finished)", "interp_eval_s")
    lines += tab("symgrad interpreter tier, calls made while LLVM compiles the native code in a thread (the two "
                 "share the GIL: the compile thread's Python work delays the caller's next call)",
                 "interp_during_compile_s")
    notes = [f"- ({r['H']}, {r['D']}): {r['stab_note']}" for r in results
             if r.get("peer") == "symgrad" and r.get("stab_note")]
    if notes:
        lines += ["Stabiliser reports (symgrad, default budget):", ""] + notes + [""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(f"{h}x{d}" for h, d in SIZES))
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--timeout", type=float, default=600.0, help="per build, seconds (default 600)")
    ap.add_argument("--sympy-timeout", type=float, default=120.0,
                    help="SymPy's build limit, seconds (default 120, as in the issue)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--chunk-sweep", default=None, metavar="HxD",
                    help="instead: symgrad stabilize=False at one size for several SYMGRAD_CHUNK_OPS")
    ap.add_argument("--hessians", action="store_true",
                    help="instead: build the Gaussian-mixture and 100-step Euler Hessians (symgrad, JAX)")
    ap.add_argument("--stages", action="store_true",
                    help="instead: main-thread CPU per stage to the first result (interpreter tier), per size")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.stages:
        print("| size | " + " | ".join(["trace", "vjp", "fingerprint", "stabilise", "tape", "total"]) + " |")
        print("|---|---|---|---|---|---|---|")
        for s in a.sizes.split(","):
            H, D = (int(v) for v in s.split("x"))
            r = stages(H, D)
            print(f"| ({H}, {D}) | " + " | ".join(f"{r[k]:.3f} s" for k in
                                                  ("trace", "vjp", "fingerprint", "stabilise", "tape", "total")) + " |")
        return
    if a.worker and a.worker[0] == "hessian":
        hessian_worker(a.worker[1], a.worker[2], a.repeats)
        return
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), int(a.worker[2]), a.repeats)
        return
    if a.hessians:
        rows = []
        for model in ("gmm", "euler"):
            for peer in ("symgrad", "symgrad-nostab", "jax"):
                env = dict(os.environ, SYMGRAD_CACHE_DIR=tempfile.mkdtemp(prefix="symgrad-buildtime-"),
                           JAX_PLATFORMS="cpu")
                cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "hessian", peer, model]
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env).stdout
                    r = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
                    row = [fmt(r["build_s"]), r.get("tier", "–"), fmt(r.get("compiled_s")), fmt(r["build_cpu_s"]),
                           fmt(r["eval_s"]), f"{r['relerr_fd']:.1e}"]
                except (subprocess.TimeoutExpired, IndexError) as exc:
                    row = [f"failed ({type(exc).__name__})", "–", "–", "–", "–", "–"]
                print(model, peer, row, flush=True)
                rows.append(f"| {model} | {LABEL[peer]} | " + " | ".join(row) + " |")
        print("| model | system | first result (wall) | answered by | compiled tier (wall) | first result (CPU) "
              "| Hessian per call | rel. err vs finite differences |")
        print("|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
        return
    if a.chunk_sweep:
        H, D = (int(v) for v in a.chunk_sweep.split("x"))
        rows = []
        for chunk in (100, 400, 1600, 10**7):
            r = run_worker("symgrad-nostab", H, D, a.timeout, 3, SYMGRAD_CHUNK_OPS=str(chunk))
            print(json.dumps(r), flush=True)
            rows.append(f"| {chunk if chunk < 10**7 else 'one function'} | {cell(r, 'build_s')} | "
                        f"{cell(r, 'build_cpu_s')} | {cell(r, 'eval_s')} |")
        print(f"python benchmarks/bench_buildtime.py --chunk-sweep {a.chunk_sweep}\n")
        print("| operations per part | build (wall) | build (CPU) | eval |\n|---|---|---|---|\n" + "\n".join(rows))
        return
    sizes = [tuple(int(v) for v in s.split("x")) for s in a.sizes.split(",")]
    peers = [p for p in a.peers.split(",") if p]
    results = []
    for H, D in sizes:
        for peer in peers:
            r = run_worker(peer, H, D, a.sympy_timeout if peer == "sympy" else a.timeout, a.repeats)
            print(json.dumps(r), flush=True)
            results.append(r)
    cmd = "python benchmarks/bench_buildtime.py " + " ".join(sys.argv[1:])
    text = report(results, sizes, peers, cmd.strip())
    Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
