"""symgrad against the systems a user would pick instead (issue 7).

Run:   python benchmarks/peers.py                 (full: ~15-25 min on 2 shared cores)
       python benchmarks/peers.py --quick         (small sizes, few repeats: a smoke run)
       python benchmarks/peers.py --peers symgrad,numba --quick    (only these systems)

Writes benchmarks/results/peers.md (and, with --json PATH, the raw numbers and the
correctness checks).  Peers: symgrad, JAX (jit, CPU), PyTensor (its default linker:
Numba in PyTensor 3), CasADi (SX Function on CasADi's virtual machine; C code
generation only where stated), autograd, SymPy (naive: sympy.diff + lambdify with
numpy), hand-written numba.njit, and SciPy's hand-written NumPy Rosenbrock.  Missing
peers are skipped with a note; install them with ``pip install -e ".[bench]"``.

1. Elementwise log(1 + exp(x)) and its derivative, 10^7 points, float64 and float32.
2. Call latency: gradient of f(x, y, z) = x*y*sin(z) + exp(x*z), Python floats in.
3. Rosenbrock, n = 100 and 10^4: gradient and Hessian-vector product.
4. Build time: one-hidden-layer tanh MLP loss gradient at growing sizes (fresh process
   and fresh caches per build) and per-call time.
5. Logistic regression on scikit-learn's breast-cancer data: full-data gradient time
   and non-finite gradients when the logits reach +-1e3.

Every timing is a median over interleaved repeats, and ratios are measured in the
same run: the machine this was written on is shared and noisy.

Worker mode (internal, through subprocess):  --worker mlp PEER H I [--prewarm]
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "peers.md"

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("SYMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="symgrad-peers-"))
warnings.filterwarnings("ignore", category=RuntimeWarning)

import numpy as np  # noqa: E402

from _common import fmt_t, table, time_build_stages  # noqa: E402

np.seterr(all="ignore")

ALL_PEERS = ["symgrad", "jax", "pytensor", "casadi", "autograd", "sympy", "numba"]
PEER_LABEL = {"symgrad": "symgrad", "jax": "JAX jit", "pytensor": "PyTensor", "casadi": "CasADi SX",
              "autograd": "autograd", "sympy": "SymPy lambdify (naive)", "numba": "hand-written numba.njit",
              "numpy": "NumPy, stable forms"}
DIST = {"symgrad": None, "jax": "jax", "pytensor": "pytensor", "casadi": "casadi", "autograd": "autograd",
        "sympy": "sympy", "numba": "numba"}
HAND = {"numba", "scipy"}  # hand-written baselines, not "peers" for the best-peer ratios


# ----------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------
def med(xs):
    return statistics.median(xs)


def peer_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("symgrad" if name == "symgrad" else DIST[name])
    except PackageNotFoundError:
        return "?"


def load_peers(selected: list[str]) -> tuple[dict, dict]:
    """Import the selected peers; return ({name: version}, {name: reason skipped})."""
    have, skipped = {}, {}
    for name in selected:
        mod = {"symgrad": "symgrad", "jax": "jax", "pytensor": "pytensor", "casadi": "casadi",
               "autograd": "autograd", "sympy": "sympy", "numba": "numba"}[name]
        try:
            importlib.import_module(mod)
        except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
            skipped[name] = f"not importable ({type(e).__name__}: {str(e).splitlines()[0][:120]}); " \
                            "install with `pip install -e \".[bench]\"`"
            continue
        have[name] = peer_version(name)
        if name == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)
    return have, skipped


def interleaved(cands: dict, repeats: int, target: float = 0.2, slow: float = 1.0) -> dict:
    """Median / min seconds per call of zero-argument callables, repeats interleaved.

    Each callable has been called once already (compiled).  The number of calls per
    repeat is calibrated to ~``target`` seconds; callables slower than ``slow`` seconds
    get 3 repeats.  Returns {name: {"med", "min", "number", "repeats", "cpu_over_wall"}}.
    """
    numbers, reps = {}, {}
    for k, fn in cands.items():
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter() - t0
        numbers[k] = max(1, int(target / max(t1, 1e-7)))
        reps[k] = min(repeats, 3) if t1 > slow else repeats
    times = {k: [] for k in cands}
    cpu = {k: [] for k in cands}
    for r in range(max(reps.values())):
        for k, fn in cands.items():
            if r >= reps[k]:
                continue
            n = numbers[k]
            c0 = time.process_time()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            dt = time.perf_counter() - t0
            times[k].append(dt / n)
            cpu[k].append((time.process_time() - c0) / max(dt, 1e-12))
    return {k: {"med": med(v), "min": min(v), "number": numbers[k], "repeats": len(v),
                "cpu_over_wall": med(cpu[k])} for k, v in times.items()}


def timed_first(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def machine_info() -> dict:
    info = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        kv = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
              for line in out.splitlines() if ":" in line}
        info["cpu_model"] = kv.get("Model name", "?")
        info["lscpu"] = (f"{kv.get('CPU(s)', '?')} CPU(s), {kv.get('Thread(s) per core', '?')} thread(s) per core, "
                         f"{kv.get('Core(s) per socket', '?')} core(s) per socket, "
                         f"{kv.get('Socket(s)', '?')} socket(s)")
    except (OSError, subprocess.SubprocessError):
        info["cpu_model"], info["lscpu"] = platform.processor() or "?", "lscpu unavailable"
    try:
        info["git"] = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(HERE.parent), "status", "--porcelain", "--", "symgrad"],
                               capture_output=True, text=True).stdout.strip()
        info["git"] += " + uncommitted symgrad changes" if dirty else ""
    except OSError:
        info["git"] = "?"
    return info


class Checks:
    """Correctness checks run before timing; the smoke test asserts them for symgrad and numba."""

    def __init__(self):
        self.items = []

    def add(self, bench: str, peer: str, what: str, ok: bool, detail: str = ""):
        self.items.append({"bench": bench, "peer": peer, "what": what, "ok": bool(ok), "detail": detail})
        return ok


def relerr(a, ref) -> float:
    a = np.asarray(a, dtype=np.float64).ravel()
    ref = np.asarray(ref, dtype=np.float64).ravel()
    if a.shape != ref.shape:
        return float("inf")
    if not np.all(np.isfinite(a)):
        return float("nan")
    return float(np.max(np.abs(a - ref)) / max(np.max(np.abs(ref)), 1e-300))


def sigmoid_ref(x):
    """1 / (1 + exp(-x)) without overflow or cancellation (float64 reference)."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def fmt_err(e: float) -> str:
    return "NaN/inf" if not math.isfinite(e) else f"{e:.1e}"


# ----------------------------------------------------------------------------------------
# 1. Elementwise softplus and its derivative
# ----------------------------------------------------------------------------------------
def _elementwise_impls(have: dict, dtype, n: int) -> dict:
    """{peer: (f_builder, df_builder, to_native, to_numpy, note)}; builders return callables."""
    impls = {}
    if "symgrad" in have:
        import symgrad as sg

        sp = lambda x: np.log(1 + np.exp(x))  # noqa: E731
        impls["symgrad"] = (lambda: sg.jit(sp), lambda: sg.grad(sp), None, None,
                            "`sg.jit(f)`, `sg.grad(f)` on the naive formula")
    if "jax" in have:
        import jax
        import jax.numpy as jnp

        spj = lambda x: jnp.log(1 + jnp.exp(x))  # noqa: E731
        impls["jax"] = (lambda: jax.jit(spj), lambda: jax.jit(jax.vmap(jax.grad(spj))),
                        lambda x: jax.device_put(x), lambda y: np.asarray(y),
                        "`jax.jit(jax.vmap(jax.grad(f)))`; input placed on the device before timing, "
                        "`block_until_ready` in the timed call")
    if "pytensor" in have:
        import pytensor
        import pytensor.tensor as pt

        def pt_build(deriv):
            xv = pt.vector("x", dtype=np.dtype(dtype).name)
            y = pt.log(1 + pt.exp(xv))
            out = pytensor.grad(y.sum(), xv) if deriv else y
            return pytensor.function([xv], out)
        impls["pytensor"] = (lambda: pt_build(False), lambda: pt_build(True), None, None,
                             "`pytensor.function([x], pytensor.grad(f(x).sum(), x))`")
    if "casadi" in have and dtype == np.float64:
        import casadi as ca

        def ca_build(deriv):
            s = ca.SX.sym("s")
            e = ca.log(1 + ca.exp(s))
            fn = ca.Function("f", [s], [ca.gradient(e, s) if deriv else e])
            return fn.map(n)
        impls["casadi"] = (lambda: ca_build(False), lambda: ca_build(True),
                           lambda x: x.reshape(1, -1), lambda y: y.full().ravel(),
                           "scalar SX Function `.map(n)` on its VM; NumPy in, `DM.full()` out (the conversions "
                           "are about half the time); float64 only; C codegen (`jit=True`) measured no faster "
                           "here since the map's per-element dispatch dominates")
    if "autograd" in have:
        import autograd
        import autograd.numpy as anp

        spa = lambda x: anp.log(1 + anp.exp(x))  # noqa: E731
        impls["autograd"] = (lambda: spa, lambda: autograd.elementwise_grad(spa), None, None,
                             "`autograd.elementwise_grad(f)` (NumPy-interpreted)")
    if "sympy" in have:
        import sympy

        def sy_build(deriv):
            x = sympy.Symbol("x", real=True)
            e = sympy.log(1 + sympy.exp(x))
            return sympy.lambdify(x, sympy.diff(e, x) if deriv else e, "numpy")
        impls["sympy"] = (lambda: sy_build(False), lambda: sy_build(True), None, None,
                          "`sympy.lambdify(x, sympy.diff(log(1 + exp(x)), x), 'numpy')`")
    # NumPy's own ufuncs on the stable forms a careful user writes (the best peer of issue 19's
    # table): array expressions, no compilation
    impls["numpy"] = (lambda: (lambda x: np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))),
                      lambda: (lambda x: 1 / (1 + np.exp(-x))), None, None,
                      "stable forms written with NumPy ufuncs: `np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))`, "
                      "`1 / (1 + np.exp(-x))`")
    if "numba" in have:
        import numba

        one, zero = dtype(1.0), dtype(0.0)

        @numba.njit
        def softplus_into(x, out):
            for k in range(x.shape[0]):
                v = x[k]
                out[k] = max(v, zero) + np.log1p(np.exp(-abs(v)))

        @numba.njit
        def sigmoid_into(x, out):  # stable, branch-free: compiles to a select
            for k in range(x.shape[0]):
                v = x[k]
                e = np.exp(-abs(v))
                r = one / (one + e)
                out[k] = r if v >= zero else e * r

        def softplus_hand(x):
            out = np.empty_like(x)  # NumPy's allocation (transparent hugepages): far fewer page faults
            softplus_into(x, out)   # than np.empty_like inside @njit for 10^7 elements
            return out

        def sigmoid_hand(x):
            out = np.empty_like(x)
            sigmoid_into(x, out)
            return out

        impls["numba"] = (lambda: softplus_hand, lambda: sigmoid_hand, None, None,
                          "stable kernels written by hand: `max(x,0)+log1p(exp(-|x|))`, "
                          "branch-free `1/(1+exp(-|x|))`, writing into an output allocated by NumPy (allocating "
                          "inside `@njit` was 1.7x slower at 10^7 points: 4 KiB page faults, no hugepages)")
    return impls


def bench_elementwise(have: dict, quick: bool, checks: Checks) -> tuple[str, dict]:
    import mpmath

    n = 10 ** 5 if quick else 10 ** 7
    repeats = 3 if quick else 7
    pts = [-1000.0, -100.0, -30.0, -5.0, 0.0, 5.0, 30.0, 100.0, 1000.0]
    mpmath.mp.dps = 60
    ref_f = [float(mpmath.log1p(mpmath.exp(mpmath.mpf(p)))) for p in pts]
    ref_df = [float(1 / (1 + mpmath.exp(-mpmath.mpf(p)))) for p in pts]
    md, res = [], {}
    for dtype in (np.float64, np.float32):
        dname = np.dtype(dtype).name
        tol = 1e-13 if dtype == np.float64 else 3e-7
        x = np.random.default_rng(0).uniform(-20, 20, n).astype(dtype)
        x64 = x.astype(np.float64)
        ref = {"f": np.logaddexp(0.0, x64), "df": sigmoid_ref(x64)}
        xp = np.array(pts, dtype=dtype)
        refp = {"f": np.array(ref_f, dtype=dtype).astype(np.float64),
                "df": np.array(ref_df, dtype=dtype).astype(np.float64)}
        impls = _elementwise_impls(have, dtype, n)
        rows, cands, info = [], {"f": {}, "df": {}}, {}
        for peer, (bf, bdf, to_nat, to_np, note) in impls.items():
            to_nat = to_nat or (lambda a: a)
            to_np = to_np or (lambda a: np.asarray(a))
            xn = to_nat(x)
            info[peer] = {"note": note}
            for kind, builder in (("f", bf), ("df", bdf)):
                t0 = time.perf_counter()
                fn = builder()
                out = fn(xn)
                if peer == "jax":
                    out.block_until_ready()
                build = time.perf_counter() - t0
                y = to_np(out)
                # relative error, pointwise, on the U(-20, 20) sample (|ref| > 0 everywhere there)
                with np.errstate(all="ignore"):
                    rel = np.abs(y.astype(np.float64) - ref[kind]) / np.abs(ref[kind])
                err = float(np.max(rel)) if np.all(np.isfinite(y)) else float("nan")
                # extreme points vs mpmath (rounded to dtype)
                if peer == "casadi":  # its map has a fixed size n: evaluate the scalar Function
                    import casadi as ca

                    s = ca.SX.sym("s")
                    e = ca.log(1 + ca.exp(s))
                    fn1 = ca.Function("f1", [s], [ca.gradient(e, s) if kind == "df" else e])
                    yp = np.array([float(fn1(float(v))) for v in xp])
                elif peer == "jax":
                    yp = np.asarray(fn(to_nat(xp)))
                else:
                    yp = np.asarray(fn(xp))
                yp = yp.astype(np.float64)
                bad = [pts[k] for k in range(len(pts)) if not np.isfinite(yp[k])]
                inacc = [pts[k] for k in range(len(pts)) if np.isfinite(yp[k]) and
                         abs(yp[k] - refp[kind][k]) > 8 * tol * abs(refp[kind][k]) + np.finfo(dtype).tiny]
                dtype_ok = (np.asarray(y).dtype == dtype)
                info[peer][kind] = {"build_s": build, "relerr": err, "nonfinite_at": bad, "inaccurate_at": inacc,
                                    "dtype_ok": bool(dtype_ok), "values_at_extremes": yp.tolist()}
                ok_sample = math.isfinite(err) and err <= (tol if kind == "df" else 1e3 * tol)
                checks.add("elementwise", peer, f"{kind} {dname} U(-20,20) rel. err ≤ tol", ok_sample, fmt_err(err))
                checks.add("elementwise", peer, f"{kind} {dname} finite and accurate at ±1000 etc. (mpmath)",
                           not bad and not inacc, f"non-finite at {bad}; inaccurate at {inacc}")
                checks.add("elementwise", peer, f"{kind} {dname} output dtype", dtype_ok,
                           str(np.asarray(y).dtype))
                if peer == "jax":
                    cands[kind][peer] = (lambda fn=fn, xn=xn: fn(xn).block_until_ready())
                else:
                    cands[kind][peer] = (lambda fn=fn, xn=xn, to_np=to_np: to_np(fn(xn))) if peer == "casadi" \
                        else (lambda fn=fn, xn=xn: fn(xn))
        t_f = interleaved(cands["f"], repeats)
        t_df = interleaved(cands["df"], repeats)
        sgf, sgd = t_f.get("symgrad", {}).get("med"), t_df.get("symgrad", {}).get("med")
        for peer in impls:
            i = info[peer]
            rows.append([PEER_LABEL[peer],
                         f"**{fmt_t(t_df[peer]['med'])}**", f"{t_df[peer]['med'] / n * 1e9:.2f}",
                         f"{t_df[peer]['med'] / sgd:.2f}x" if sgd else "–",
                         fmt_t(t_f[peer]["med"]), f"{t_f[peer]['med'] / sgf:.2f}x" if sgf else "–",
                         f"{t_df[peer]['cpu_over_wall']:.1f}",
                         f"{fmt_t(i['df']['build_s'])} / {fmt_t(i['f']['build_s'])}",
                         fmt_err(i["df"]["relerr"]), fmt_err(i["f"]["relerr"]),
                         _extreme_note(i["df"]), _extreme_note(i["f"])])
            res.setdefault(dname, {})[peer] = {"time_df": t_df[peer], "time_f": t_f[peer], **i}
        # issue 19: the best peer *that returns finite, correct values* (on the sample and at the
        # extreme points); the fastest one regardless is shown too
        correct = {kind: {p for p in impls if info[p][kind]["relerr"] <= (tol if kind == "df" else 1e3 * tol)
                          and not info[p][kind]["nonfinite_at"] and not info[p][kind]["inaccurate_at"]}
                   for kind in ("f", "df")}
        best_df = _best({p: v for p, v in t_df.items() if p in correct["df"]}, "med")
        best_f = _best({p: v for p, v in t_f.items() if p in correct["f"]}, "med")
        fastest_df, fastest_f = _best(t_df, "med"), _best(t_f, "med")
        res[dname]["best_peer_df"], res[dname]["best_peer_f"] = best_df, best_f
        md += [f"#### {dname}\n",
               table(["system", "d/dx median", "ns/elem", "d/dx vs symgrad", "f median", "f vs symgrad",
                      "CPU/wall (d/dx)", "build d/dx / f (first call)", "d/dx max rel. err U(-20,20)",
                      "f max rel. err", "d/dx at extremes", "f at extremes"], rows), ""]
        for what, sgt, tk, best, fastest in (("d/dx", sgd, t_df, best_df, fastest_df), ("f", sgf, t_f, best_f, fastest_f)):
            if not (sgt and best):
                continue
            line = f"- {dname} {what}: symgrad / best peer with finite, correct values ({PEER_LABEL[best]}) = " \
                   f"**{sgt / tk[best]['med']:.2f}x**"
            if fastest and fastest != best:
                line += f"; symgrad / fastest peer, NaN or wrong at the checked points ({PEER_LABEL[fastest]}) = " \
                        f"{sgt / tk[fastest]['med']:.2f}x"
            if "numba" in tk:
                line += f"; symgrad / hand-written numba = **{sgt / tk['numba']['med']:.2f}x**"
            md.append(line)
        md.append("")
        res[dname]["_notes"] = {p: info[p]["note"] for p in impls}
    notes = res["float64"]["_notes"]
    head = [f"### 1. Elementwise log(1 + exp(x)) and d/dx, n = {n:,} points, x ~ U(-20, 20)\n",
            f"Each system is given the naive formula `log(1 + exp(x))` in its own API (except the hand-written "
            f"kernels). Median of {repeats} interleaved repeats (3 for calls slower than 1 s), after a first call "
            "whose time (trace + differentiate + compile + run) is the *build* column. Before timing, results are "
            "checked against a stable NumPy reference on the sample (relative error) and against mpmath at "
            f"x ∈ {pts} (rounded to the dtype); *extremes* lists where a system gives NaN/inf or a wrong value. "
            "CPU/wall > 1 means the system used more than one thread.\n",
            "How each system is called:\n"] + [f"- {PEER_LABEL[p]}: {v}" for p, v in notes.items()] + [""]
    return "\n".join(head + md), res


def _extreme_note(i: dict) -> str:
    parts = []
    if i["nonfinite_at"]:
        parts.append("NaN/inf at x = " + ", ".join(f"{v:g}" for v in i["nonfinite_at"]))
    if i["inaccurate_at"]:
        parts.append("wrong at x = " + ", ".join(f"{v:g}" for v in i["inaccurate_at"]))
    return "; ".join(parts) if parts else "ok"


def _best(times: dict, key: str):
    peers = [p for p in times if p not in HAND and not p.startswith("symgrad")]
    return min(peers, key=lambda p: times[p][key]) if peers else None


# ----------------------------------------------------------------------------------------
# 2. Call latency
# ----------------------------------------------------------------------------------------
def bench_latency(have: dict, quick: bool, checks: Checks) -> tuple[str, dict]:
    calls = 10_000 if quick else 100_000
    repeats = 3 if quick else 7
    a, b, c = 0.7, 1.3, 0.4
    expect = (b * math.sin(c) + c * math.exp(a * c), a * math.sin(c), a * b * math.cos(c) + a * math.exp(a * c))
    fns, notes = {}, {}

    def py_noop(x, y, z):
        return x, y, z
    fns["python"] = py_noop
    notes["python"] = "a Python `def` returning its arguments (the floor of a Python call)"
    if "symgrad" in have:
        import symgrad as sg

        fns["symgrad"] = sg.grad(lambda x, y, z: x * y * np.sin(z) + np.exp(x * z), argnums=(0, 1, 2))
        notes["symgrad"] = "`sg.grad(f, argnums=(0, 1, 2))`: tuple of 3 floats"
    if "jax" in have:
        import jax
        import jax.numpy as jnp

        gj = jax.jit(jax.grad(lambda x, y, z: x * y * jnp.sin(z) + jnp.exp(x * z), argnums=(0, 1, 2)))
        fns["jax"] = lambda x, y, z: jax.block_until_ready(gj(x, y, z))
        notes["jax"] = "`jax.jit(jax.grad(f, argnums=(0, 1, 2)))` + `block_until_ready`: tuple of 0-d arrays"
    if "pytensor" in have:
        import pytensor
        import pytensor.tensor as pt

        xs = pt.dscalars("x", "y", "z")
        e = xs[0] * xs[1] * pt.sin(xs[2]) + pt.exp(xs[0] * xs[2])
        fns["pytensor"] = pytensor.function(list(xs), pytensor.grad(e, list(xs)))
        notes["pytensor"] = "`pytensor.function([x, y, z], pytensor.grad(f, [x, y, z]))`: list of 0-d arrays"
    if "casadi" in have:
        import casadi as ca

        xs = [ca.SX.sym(s) for s in "xyz"]
        e = xs[0] * xs[1] * ca.sin(xs[2]) + ca.exp(xs[0] * xs[2])
        fns["casadi"] = ca.Function("g", xs, [ca.gradient(e, v) for v in xs])
        notes["casadi"] = "SX `Function` of 3 scalars, 3 outputs (`ca.gradient` each), VM: tuple of `DM`"
    if "autograd" in have:
        import autograd
        import autograd.numpy as anp

        fns["autograd"] = autograd.grad(lambda x, y, z: x * y * anp.sin(z) + anp.exp(x * z), argnum=(0, 1, 2))
        notes["autograd"] = "`autograd.grad(f, argnum=(0, 1, 2))`"
    if "sympy" in have:
        import sympy

        xs = sympy.symbols("x y z", real=True)
        e = xs[0] * xs[1] * sympy.sin(xs[2]) + sympy.exp(xs[0] * xs[2])
        fns["sympy"] = sympy.lambdify(xs, [sympy.diff(e, v) for v in xs], "numpy")
        notes["sympy"] = "`sympy.lambdify((x, y, z), [sympy.diff(f, v) for v in (x, y, z)], 'numpy')`: list"
    if "numba" in have:
        import numba

        @numba.njit
        def hand(x, y, z):
            s = math.sin(z)
            e = math.exp(x * z)
            return y * s + z * e, x * s, x * y * math.cos(z) + x * e
        fns["numba"] = hand
        notes["numba"] = "`numba.njit` of the hand-derived gradient: tuple of 3 floats"
    build, res = {}, {}
    for k, fn in fns.items():
        out, build[k] = timed_first(lambda fn=fn: fn(a, b, c))
        if k == "python":
            continue
        vals = [float(np.asarray(v, dtype=float).ravel()[0]) for v in out]
        err = max(abs(v - w) / abs(w) for v, w in zip(vals, expect))
        checks.add("latency", k, "gradient at (0.7, 1.3, 0.4) rel. err ≤ 1e-12", err <= 1e-12, f"{err:.1e}")
    # calls per repeat: `calls` for fast callables, fewer for slow ones (~0.5 s per repeat)
    numbers = {}
    for k, fn in fns.items():
        t1 = timeit.timeit(lambda fn=fn: fn(a, b, c), number=20) / 20
        numbers[k] = int(min(calls, max(1000, 0.5 / t1)))
    times = {k: [] for k in fns}
    glb = {"a": a, "b": b, "c": c}
    for _ in range(repeats):
        for k, fn in fns.items():
            glb["fn"] = fn
            times[k].append(timeit.timeit("fn(a, b, c)", globals=glb, number=numbers[k]) / numbers[k])
    m = {k: med(v) for k, v in times.items()}
    sg_t = m.get("symgrad")
    rows = []
    for k in fns:
        label = "Python no-op def (floor)" if k == "python" else PEER_LABEL[k]
        rows.append([label, f"**{m[k] * 1e9:.0f}**", f"{min(times[k]) * 1e9:.0f}",
                     f"{sg_t / m[k]:.3f}" if sg_t else "–", f"{numbers[k]:,}",
                     fmt_t(build[k]) if k != "python" else "–"])
        res[k] = {"med_ns": m[k] * 1e9, "min_ns": min(times[k]) * 1e9, "calls": numbers[k], "build_s": build[k]}
    md = ["### 2. Call latency: gradient of f(x, y, z) = x*y*sin(z) + exp(x*z) w.r.t. x, y, z\n",
          f"Called from Python with Python floats: `timeit('fn(a, b, c)')`, {calls:,} calls per repeat "
          f"(fewer, ~0.5 s worth, for slow systems; see column), median over {repeats} interleaved repeats. "
          "Every result is checked against the hand-derived gradient first.\n",
          "How each system is called:\n"] + [f"- {PEER_LABEL.get(k, k)}: {v}" for k, v in notes.items()] + [
          "", table(["system", "ns/call (median)", "ns/call (min)", "symgrad / this", "calls per repeat",
                     "build (first call)"], rows), ""]
    if sg_t and "jax" in m:
        md.append(f"- symgrad / JAX jit = **{sg_t / m['jax']:.3f}**")
    if sg_t and "numba" in m:
        md.append(f"- symgrad / hand-written njit = **{sg_t / m['numba']:.2f}x**")
    return "\n".join(md), res


# ----------------------------------------------------------------------------------------
# 3. Rosenbrock gradient and Hessian-vector product
# ----------------------------------------------------------------------------------------
def rosen_np(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_der_ref(x):
    try:
        from scipy.optimize import rosen_der

        return rosen_der(x)
    except ImportError:
        g = np.zeros_like(x)
        d = x[1:] - x[:-1] ** 2
        g[:-1] += -400 * x[:-1] * d - 2 * (1 - x[:-1])
        g[1:] += 200 * d
        return g


def rosen_hvp_ref(x, v):
    try:
        from scipy.optimize import rosen_hess_prod

        return rosen_hess_prod(x, v)
    except ImportError:
        out = np.zeros_like(x)
        a = 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
        b = -400 * x[:-1]
        out[:-1] += a * v[:-1] + b * v[1:]
        out[1:] += b * v[:-1] + 200 * v[1:]
        return out


def _rosen_impls(have: dict, n: int, quick: bool) -> dict:
    """{peer: (build_grad, build_hvp, note)}; each build returns a callable (x, v) -> numpy-like."""
    impls = {}
    if "symgrad" in have:
        import symgrad as sg

        def sg_grad():
            g = sg.grad(rosen_np, signature="(n)->()")
            return lambda x, v: g(x)

        def sg_hvp():
            return lambda x, v: sg.hvp(rosen_np, (x,), (v,), signature="(n)->()")

        def sg_hvp_fn():  # the compiled callable, built once (what the JAX row times)
            return sg.hessian_vector_product(rosen_np, signature="(n)->()")
        impls["symgrad"] = (sg_grad, sg_hvp, '`sg.grad(rosen, signature="(n)->()")`, '
                            '`sg.hvp(rosen, (x,), (v,), signature="(n)->()")` (kernel looked up per call)')
        impls["symgrad-fn"] = (None, sg_hvp_fn, 'HVP only: `h = sg.hessian_vector_product(rosen, signature="(n)->()")` '
                               'built once, then `h(x, v)` (the form of the JAX row)')
    if "jax" in have:
        import jax
        import jax.numpy as jnp

        def rosen_j(x):
            return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

        def j_grad():
            g = jax.jit(jax.grad(rosen_j))
            return lambda x, v: g(x).block_until_ready()

        def j_hvp():
            h = jax.jit(lambda x, v: jax.jvp(jax.grad(rosen_j), (x,), (v,))[1])
            return lambda x, v: h(x, v).block_until_ready()
        impls["jax"] = (j_grad, j_hvp, "`jax.jit(jax.grad(rosen))`; HVP `jax.jit(lambda x, v: jax.jvp(jax.grad(rosen), "
                        "(x,), (v,))[1])` (forward-over-reverse); inputs on the device before timing")
    if "pytensor" in have:
        import pytensor
        import pytensor.tensor as pt
        from pytensor.gradient import hessian_vector_product

        def pt_expr():
            xv, vv = pt.dvector("x"), pt.dvector("v")
            return xv, vv, pt.sum(100.0 * (xv[1:] - xv[:-1] ** 2) ** 2 + (1.0 - xv[:-1]) ** 2)

        def p_grad():
            xv, _, y = pt_expr()
            f = pytensor.function([xv], pytensor.grad(y, xv))
            return lambda x, v: f(x)

        def p_hvp():
            xv, vv, y = pt_expr()
            f = pytensor.function([xv, vv], hessian_vector_product(y, xv, vv))
            return lambda x, v: f(x, v)
        impls["pytensor"] = (p_grad, p_hvp, "`pytensor.grad`; HVP `pytensor.gradient.hessian_vector_product` "
                             "(R-op/L-op)")
    if "casadi" in have:
        import casadi as ca

        def ca_expr():
            xs, vs = ca.SX.sym("x", n), ca.SX.sym("v", n)
            return xs, vs, ca.sum1(100 * (xs[1:] - xs[:-1] ** 2) ** 2 + (1 - xs[:-1]) ** 2)

        def c_grad(codegen=False):
            xs, _, y = ca_expr()
            opts = {"jit": True, "compiler": "shell", "jit_options": {"flags": ["-O3"]}} if codegen else {}
            f = ca.Function("g", [xs], [ca.gradient(y, xs)], opts)
            return lambda x, v: f(x)

        def c_hvp(codegen=False):
            xs, vs, y = ca_expr()
            opts = {"jit": True, "compiler": "shell", "jit_options": {"flags": ["-O3"]}} if codegen else {}
            f = ca.Function("h", [xs, vs], [ca.jtimes(ca.gradient(y, xs), xs, vs)], opts)
            return lambda x, v: f(x, v)
        impls["casadi"] = (c_grad, c_hvp, "SX over n scalar symbols, `ca.gradient`; HVP `ca.jtimes(gradient, x, v)`; "
                           "VM; NumPy in, `DM` out")
        if n <= 1000:
            impls["casadi-codegen"] = (lambda: c_grad(True), lambda: c_hvp(True),
                                       "the same with C code generation (`jit=True`, `compiler='shell'`, gcc -O3)")
    if "autograd" in have:
        import autograd
        import autograd.numpy as anp

        def rosen_a(x):
            return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
        ga, ha = autograd.grad(rosen_a), autograd.hessian_vector_product(rosen_a)
        impls["autograd"] = (lambda: (lambda x, v: ga(x)), lambda: (lambda x, v: ha(x, v)),
                             "`autograd.grad`, `autograd.hessian_vector_product`")
    if "sympy" in have and n <= 100:
        import sympy

        def sy_expr():
            xs = sympy.symbols(f"x0:{n}", real=True)
            return xs, sum(100 * (xs[k + 1] - xs[k] ** 2) ** 2 + (1 - xs[k]) ** 2 for k in range(n - 1))

        def s_grad():
            xs, y = sy_expr()
            f = sympy.lambdify([xs], [sympy.diff(y, xk) for xk in xs], "numpy")
            return lambda x, v: np.array(f(x))

        def s_hvp():
            xs, y = sy_expr()
            vs = sympy.symbols(f"v0:{n}", real=True)
            gv = sum(sympy.diff(y, xk) * vk for xk, vk in zip(xs, vs))
            f = sympy.lambdify([xs, vs], [sympy.diff(gv, xk) for xk in xs], "numpy")
            return lambda x, v: np.array(f(x, v))
        impls["sympy"] = (s_grad, s_hvp, "n symbols, one `sympy.diff` per variable, `lambdify(..., 'numpy')`; HVP "
                          "= diff of (gradient · v) per variable; n = 100 only (quadratic symbolic cost)")
    if "numba" in have:
        import numba

        @numba.njit
        def grad_hand(x):
            g = np.zeros_like(x)
            for k in range(x.shape[0] - 1):
                d = x[k + 1] - x[k] * x[k]
                g[k] += -400.0 * x[k] * d - 2.0 * (1.0 - x[k])
                g[k + 1] += 200.0 * d
            return g

        @numba.njit
        def hvp_hand(x, v):
            out = np.zeros_like(x)
            for k in range(x.shape[0] - 1):
                a = 1200.0 * x[k] * x[k] - 400.0 * x[k + 1] + 2.0
                b = -400.0 * x[k]
                out[k] += a * v[k] + b * v[k + 1]
                out[k + 1] += b * v[k] + 200.0 * v[k + 1]
            return out
        impls["numba"] = (lambda: (lambda x, v: grad_hand(x)), lambda: hvp_hand,
                          "hand-derived loops in `numba.njit`")
    try:
        from scipy.optimize import rosen_der, rosen_hess_prod

        impls["scipy"] = (lambda: (lambda x, v: rosen_der(x)), lambda: rosen_hess_prod,
                          "`scipy.optimize.rosen_der` / `rosen_hess_prod` (hand-written NumPy; also the reference)")
    except ImportError:
        pass
    return impls


ROSEN_LABEL = {**PEER_LABEL, "symgrad-fn": "symgrad hessian_vector_product (built once)",
               "casadi-codegen": "CasADi SX + C codegen", "scipy": "SciPy rosen_der / rosen_hess_prod"}


def bench_rosen(have: dict, quick: bool, checks: Checks) -> tuple[str, dict]:
    sizes = [100, 1000] if quick else [100, 10_000]
    repeats = 3 if quick else 25
    md, res, notes = [], {}, {}
    for n in sizes:
        rng = np.random.default_rng(n)
        x, v = rng.uniform(-2, 2, n), rng.standard_normal(n)
        rg, rh = rosen_der_ref(x), rosen_hvp_ref(x, v)
        impls = _rosen_impls(have, n, quick)
        cands = {"grad": {}, "hvp": {}}
        build = {"grad": {}, "hvp": {}}
        errs = {"grad": {}, "hvp": {}}
        for peer, (bg, bh, note) in impls.items():
            notes[peer] = note
            if peer == "jax":
                import jax

                xn, vn = jax.device_put(x), jax.device_put(v)
            else:
                xn, vn = x, v
            for kind, builder, ref in (("grad", bg, rg), ("hvp", bh, rh)):
                if builder is None:  # a form measured for one of the two only
                    continue
                t0 = time.perf_counter()
                fn = builder()
                out = fn(xn, vn)
                build[kind][peer] = time.perf_counter() - t0
                y = out.full().ravel() if hasattr(out, "full") else np.asarray(out).ravel()
                errs[kind][peer] = relerr(y, ref)
                checks.add("rosenbrock", peer, f"{kind} n={n} rel. err ≤ 1e-12 vs SciPy",
                           errs[kind][peer] <= 1e-12, fmt_err(errs[kind][peer]))
                cands[kind][peer] = lambda fn=fn, xn=xn, vn=vn: fn(xn, vn)
        t = {kind: interleaved(cands[kind], repeats, target=0.05) for kind in ("grad", "hvp")}
        for kind in ("grad", "hvp"):
            tk = t[kind]
            sgt = tk.get("symgrad", {}).get("med")
            rows = [[ROSEN_LABEL[p], f"**{fmt_t(tk[p]['med'])}**", fmt_t(tk[p]["min"]),
                     f"{tk[p]['med'] / sgt:.2f}x" if sgt else "–", fmt_t(build[kind][p]), fmt_err(errs[kind][p])]
                    for p in tk]
            best = _best(tk, "med")
            res[f"{kind}_{n}"] = {"times": tk, "build": build[kind], "errs": errs[kind], "best_peer": best}
            md += [f"#### {'gradient' if kind == 'grad' else 'Hessian-vector product'}, n = {n:,}\n",
                   table(["system", "median", "min", "vs symgrad", "build (first call)", "rel. err vs SciPy"], rows),
                   ""]
            if sgt and best:
                line = f"- symgrad / best peer ({ROSEN_LABEL[best]}) = **{sgt / tk[best]['med']:.2f}x**"
                if "numba" in tk:
                    line += f"; symgrad / hand-written numba = **{sgt / tk['numba']['med']:.2f}x**"
                md += [line, ""]
            fnt = tk.get("symgrad-fn", {}).get("med")
            if fnt and best and "numba" in tk:
                md += [f"- built once (`sg.hessian_vector_product`): symgrad / best peer = "
                       f"**{fnt / tk[best]['med']:.2f}x**; symgrad / hand-written numba = "
                       f"**{fnt / tk['numba']['med']:.2f}x**", ""]
    head = [f"### 3. Rosenbrock: gradient and Hessian-vector product, n = {', '.join(f'{s:,}' for s in sizes)}\n",
            f"x ~ U(-2, 2), v ~ N(0, 1). Median of {repeats} interleaved repeats of ~0.05 s; each result checked against "
            "`scipy.optimize.rosen_der` / `rosen_hess_prod` first. *Best peer* excludes the hand-written baselines "
            "(Numba, SciPy). CasADi's C code generation is measured at n ≤ 1000 only: gcc takes 45 s (-O1) / 120 s "
            "(-O3) on the n = 10^4 gradient alone on this machine. SymPy at n = 100 only.\n",
            "How each system is called:\n"] + [f"- {ROSEN_LABEL[p]}: {v}" for p, v in notes.items()] + [""]
    return "\n".join(head + md), res


# ----------------------------------------------------------------------------------------
# 4. Build time: MLP loss gradient at growing sizes (fresh process per build)
# ----------------------------------------------------------------------------------------
MLP_SIG = "(h,i),(h),(h),(i),()->()"


def mlp_loss(W1, b1, w2, x, y):
    return (w2 @ np.tanh(W1 @ x + b1) - y) ** 2


def mlp_loss_unrolled(W1, b1, w2, x, y):
    """The same loss written with scalar loops: a graph of O(h*i) scalar nodes."""
    h, i = W1.shape
    s = 0.0
    for j in range(h):
        a = b1[j]
        for k in range(i):
            a = a + W1[j, k] * x[k]
        s = s + w2[j] * np.tanh(a)
    return (s - y) ** 2


def mlp_args(h, i, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((h, i)) / np.sqrt(i), rng.standard_normal(h), rng.standard_normal(h) / np.sqrt(h),
            rng.standard_normal(i), 0.3)


def mlp_grad_ref(W1, b1, w2, x, y):
    z = np.tanh(W1 @ x + b1)
    e = 2.0 * (w2 @ z - y)
    d = e * w2 * (1 - z ** 2)
    return np.outer(d, x), d, e * z


def _emit(obj):
    print(json.dumps(obj), flush=True)


def worker_mlp(peer: str, h: int, i: int, prewarm: bool, repeats: int) -> dict:
    """Build the MLP gradient for ``peer`` in this (fresh) process; print JSON lines."""
    t0 = time.perf_counter()
    res = {"peer": peer, "h": h, "i": i, "params": h * i + 2 * h}
    args = mlp_args(h, i)
    ref = np.concatenate([r.ravel() for r in mlp_grad_ref(*args)])
    stages = None

    if peer in ("symgrad", "symgrad-unrolled"):
        import symgrad as sg
        import symgrad.api.compiled  # noqa: F401  (its import is timed)

        loss = mlp_loss if peer == "symgrad" else mlp_loss_unrolled
        from symgrad.compile.interpreter import warm_interpreter
        warm_interpreter()  # the tape interpreter: compiled once per installation (Numba's disk cache), like an import
        res["import_s"] = time.perf_counter() - t0
        if prewarm:
            t1 = time.perf_counter()
            sg.grad(loss, argnums=(0, 1, 2), signature=MLP_SIG)(*mlp_args(2, 3))
            res["prewarm_s"] = time.perf_counter() - t1
        stages = {"trace": 0.0, "differentiate": 0.0, "stabilize": 0.0, "emit": 0.0, "load": 0.0}

        time_build_stages(stages)

        def build():
            g = sg.grad(loss, argnums=(0, 1, 2), signature=MLP_SIG)
            return g, g(*args)

        def flat(out):
            return np.concatenate([np.asarray(o).ravel() for o in out])
        call_args = args
    elif peer == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        res["import_s"] = time.perf_counter() - t0

        def loss_j(W1, b1, w2, x, y):
            return (w2 @ jnp.tanh(W1 @ x + b1) - y) ** 2
        if prewarm:
            t1 = time.perf_counter()
            jax.block_until_ready(jax.jit(jax.grad(loss_j, argnums=(0, 1, 2)))(*mlp_args(2, 3)))
            res["prewarm_s"] = time.perf_counter() - t1
        call_args = tuple(jax.device_put(a) for a in args)

        def build():
            g = jax.jit(jax.grad(loss_j, argnums=(0, 1, 2)))
            gg = lambda *a: jax.block_until_ready(g(*a))  # noqa: E731
            return gg, gg(*call_args)

        def flat(out):
            return np.concatenate([np.asarray(o).ravel() for o in out])
    elif peer == "pytensor":
        import pytensor
        import pytensor.tensor as pt

        res["import_s"] = time.perf_counter() - t0
        res["linker"] = type(pytensor.compile.mode.get_default_mode().linker).__name__

        def build_pt():
            W1, b1, w2, x = pt.dmatrix("W1"), pt.dvector("b1"), pt.dvector("w2"), pt.dvector("x")
            y = pt.dscalar("y")
            loss = (pt.dot(w2, pt.tanh(pt.dot(W1, x) + b1)) - y) ** 2
            return pytensor.function([W1, b1, w2, x, y], pytensor.grad(loss, [W1, b1, w2]))
        if prewarm:
            t1 = time.perf_counter()
            build_pt()(*mlp_args(2, 3))
            res["prewarm_s"] = time.perf_counter() - t1
        call_args = args

        def build():
            g = build_pt()
            return g, g(*args)

        def flat(out):
            return np.concatenate([np.asarray(o).ravel() for o in out])
    elif peer in ("casadi", "casadi-codegen"):
        import casadi as ca

        res["import_s"] = time.perf_counter() - t0
        opts = {"jit": True, "compiler": "shell", "jit_options": {"flags": ["-O3"]}} if peer == "casadi-codegen" else {}

        def build():
            W1, b1, w2 = ca.SX.sym("W1", h, i), ca.SX.sym("b1", h), ca.SX.sym("w2", h)
            x, y = ca.SX.sym("x", i), ca.SX.sym("y")
            loss = (ca.mtimes(w2.T, ca.tanh(ca.mtimes(W1, x) + b1)) - y) ** 2
            g = ca.gradient(loss, ca.vertcat(ca.vec(W1), b1, w2))
            f = ca.Function("g", [W1, b1, w2, x, y], [g], opts)
            return f, f(*args)

        def flat(out):  # ca.vec is column-major
            g = out.full().ravel()
            return np.concatenate([g[:h * i].reshape(i, h).T.ravel(), g[h * i:]])
        call_args = args
    elif peer == "autograd":
        import autograd
        import autograd.numpy as anp

        res["import_s"] = time.perf_counter() - t0

        def loss_a(W1, b1, w2, x, y):
            return (anp.dot(w2, anp.tanh(anp.dot(W1, x) + b1)) - y) ** 2

        def build():
            g = autograd.grad(loss_a, argnum=(0, 1, 2))
            return g, g(*args)

        def flat(out):
            return np.concatenate([np.asarray(o).ravel() for o in out])
        call_args = args
    elif peer == "sympy":
        import sympy

        res["import_s"] = time.perf_counter() - t0
        st = {}

        def build():
            s0 = time.perf_counter()
            W1 = [[sympy.Symbol(f"W1_{a}_{b}", real=True) for b in range(i)] for a in range(h)]
            b1 = [sympy.Symbol(f"b1_{a}", real=True) for a in range(h)]
            w2 = [sympy.Symbol(f"w2_{a}", real=True) for a in range(h)]
            x = [sympy.Symbol(f"x_{b}", real=True) for b in range(i)]
            y = sympy.Symbol("y", real=True)
            loss = (sum(w2[a] * sympy.tanh(sum(W1[a][b] * x[b] for b in range(i)) + b1[a])
                        for a in range(h)) - y) ** 2
            params = [p for row in W1 for p in row] + b1 + w2
            st["expr_s"] = time.perf_counter() - s0
            s0 = time.perf_counter()
            grads = []
            for k, p in enumerate(params):
                grads.append(sympy.diff(loss, p))
                if k % 64 == 63:
                    _emit({"progress": "diff", "done": k + 1, "of": len(params), "elapsed_s": time.perf_counter() - t_b})
            st["diff_s"] = time.perf_counter() - s0
            _emit({"progress": "cse+lambdify", "diff_s": st["diff_s"], "elapsed_s": time.perf_counter() - t_b})
            s0 = time.perf_counter()
            f = sympy.lambdify(params + x + [y], grads, "numpy", cse=True)
            st["cse_lambdify_s"] = time.perf_counter() - s0
            s0 = time.perf_counter()
            out = f(*flat_args)
            st["first_call_s"] = time.perf_counter() - s0
            return f, out
        flat_args = list(args[0].ravel()) + list(args[1]) + list(args[2]) + list(args[3]) + [args[4]]
        call_args = flat_args

        def flat(out):
            return np.array(out, dtype=float)
    else:
        raise SystemExit(f"unknown peer {peer}")

    t_b = time.perf_counter()
    fn, out = build()
    res["build_s"] = time.perf_counter() - t_b
    if stages is not None:
        res["stages"] = dict(stages)
        res["stages"]["numba compile + first call"] = res["build_s"] - sum(stages.values())
    if peer == "sympy":
        res["stages"] = st
    res["relerr"] = relerr(flat(out), ref)
    # per-call time
    t1 = timeit.timeit(lambda: fn(*call_args), number=3) / 3
    number = max(1, int(0.2 / max(t1, 1e-7)))
    ts = [timeit.timeit(lambda: fn(*call_args), number=number) / number for _ in range(repeats)]
    res["call_s"] = med(ts)
    res["call_min_s"] = min(ts)
    return res


def run_mlp_worker(peer, h, i, prewarm, repeats, timeout) -> dict:
    env = dict(os.environ)
    env["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="symgrad-peers-mlp-")
    env["PYTENSOR_FLAGS"] = f"base_compiledir={tempfile.mkdtemp(prefix='pytensor-peers-')}"
    env.pop("NUMBA_CACHE_DIR", None)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "mlp", peer, str(h), str(i),
           "--repeats", str(repeats)] + (["--prewarm"] if prewarm else [])
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        prog = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        return {"peer": peer, "h": h, "i": i, "params": h * i + 2 * h, "timed_out": timeout,
                "progress": prog[-1] if prog else None, "wall_s": time.perf_counter() - t0}
    if p.returncode != 0:
        return {"peer": peer, "h": h, "i": i, "params": h * i + 2 * h, "error": p.stderr[-1500:]}
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t0
    return res


MLP_LABEL = {**PEER_LABEL, "symgrad": "symgrad (array form, signature)",
             "symgrad-unrolled": "symgrad (same loss as scalar loops)",
             "casadi": "CasADi SX (VM)", "casadi-codegen": "CasADi SX + C codegen (gcc -O3)",
             "sympy": "SymPy naive (diff per param + cse + lambdify)", "autograd": "autograd (no build step)"}


def bench_build(have: dict, quick: bool, checks: Checks) -> tuple[str, dict]:
    sizes = [(4, 4)] if quick else [(8, 4), (16, 10), (32, 30), (64, 30)]
    reps = 1 if quick else 3
    call_reps = 3 if quick else 7
    timeout = 60 if quick else 420
    peers = []
    for p in ("symgrad", "symgrad-unrolled", "jax", "pytensor", "casadi", "casadi-codegen", "autograd", "sympy"):
        base = p.split("-")[0]
        if base in have:
            peers.append(p)
    # cold: fresh process, nothing compiled before (what a user sees); repeated `reps` times for
    # the quick systems. warm: a (2, 3) build first in the same process (JIT start-up paid).
    slow = {"sympy", "symgrad-unrolled", "casadi-codegen", "autograd"}
    warm_peers = [] if quick else ["symgrad", "jax", "pytensor"]
    results = {}
    given_up = set()
    for (h, i) in sizes:
        for p in peers:
            if p in given_up:
                results[(p, h, i, "cold")] = [{"skipped": "timed out at a smaller size", "timed_out": timeout}]
                continue
            runs = []
            for r in range(1 if p in slow else reps):
                res = run_mlp_worker(p, h, i, False, call_reps, timeout)
                runs.append(res)
                print(f"  [mlp {p} ({h},{i}) cold: {res.get('build_s', res.get('timed_out', res.get('error', '?')))}]",
                      file=sys.stderr, flush=True)
                if "timed_out" in res or "error" in res:
                    break
            results[(p, h, i, "cold")] = runs
            if any("timed_out" in r for r in runs):
                given_up.add(p)
            if p in warm_peers:
                res = run_mlp_worker(p, h, i, True, call_reps, timeout)
                results[(p, h, i, "warm")] = [res]
    # tables
    rows, stage_rows, info = [], [], {}
    for (h, i) in sizes:
        for p in peers:
            runs = results.get((p, h, i, "cold"))
            if runs is None:
                continue
            r0 = runs[0]
            label = MLP_LABEL[p]
            if "skipped" in r0:
                rows.append([f"({h}, {i})", h * i + 2 * h, label,
                             f"**> {timeout} s** (not run: timed out at a smaller size)", "–", "–", "–", "–"])
                info[(p, h, i)] = {"build_s": float(timeout), "lower_bound": True}
                continue
            if "error" in r0:
                last = r0["error"].strip().splitlines()[-1][:100]
                rows.append([f"({h}, {i})", h * i + 2 * h, label, f"**error**: {last}", "–", "–", "–", "–"])
                checks.add("mlp", p.split("-")[0], f"({h},{i}) build of the {label}", False, last)
                info[(p, h, i)] = {"error": last}
                continue
            if "timed_out" in r0:
                prog = r0.get("progress") or {}
                pr = (f" (after {prog.get('done')}/{prog.get('of')} diffs)" if prog.get("progress") == "diff"
                      else f" (in {prog.get('progress')}, diffs took {prog.get('diff_s', 0):.0f} s)" if prog else "")
                rows.append([f"({h}, {i})", h * i + 2 * h, label, f"**> {r0['timed_out']} s** (timeout){pr}",
                             "–", "–", "–", "–"])
                info[(p, h, i)] = {"build_s": float(r0["timed_out"]), "lower_bound": True}
                continue
            builds = [r["build_s"] for r in runs]
            b = med(builds)
            warm = results.get((p, h, i, "warm"), [{}])[0].get("build_s")
            info[(p, h, i)] = {"build_s": b, "call_s": r0["call_s"], "lower_bound": False, "warm_s": warm,
                               "import_s": r0.get("import_s")}
            ok = r0["relerr"] <= 1e-10
            checks.add("mlp", p.split("-")[0], f"({h},{i}) gradient rel. err ≤ 1e-10 vs NumPy", ok, fmt_err(r0["relerr"]))
            rows.append([f"({h}, {i})", h * i + 2 * h, label,
                         f"**{fmt_t(b)}**" + (f" ({', '.join(f'{x:.2f}' for x in builds)})" if len(builds) > 1 else ""),
                         fmt_t(warm) if warm is not None else "–", fmt_t(r0.get("import_s")),
                         fmt_t(r0["call_s"]), fmt_err(r0["relerr"])])
            if "stages" in r0:
                st = r0["stages"]
                stage_rows.append([f"({h}, {i})", label] + [f"{k} {fmt_t(v)}" for k, v in st.items()])
    # ratios at the largest size
    H, I = sizes[-1]
    lines = []
    sgb = info.get(("symgrad", H, I))
    sgb = None if sgb is None or "error" in sgb else sgb
    for other in ("sympy", "casadi", "casadi-codegen", "jax", "pytensor", "symgrad-unrolled"):
        ob = info.get((other, H, I))
        if sgb and ob and "error" not in ob:
            q = ob["build_s"] / sgb["build_s"]
            lines.append(f"- ({H}, {I}): {MLP_LABEL[other]} build / symgrad build = "
                         f"{'> ' if ob['lower_bound'] else ''}**{q:.3g}x**"
                         f" (symgrad / it = {'< ' if ob['lower_bound'] else ''}{1 / q:.3g})")
    md = [f"### 4. Build time: one-hidden-layer tanh MLP loss gradient, loss = (w2 · tanh(W1 x + b1) - y)^2\n",
          f"Gradient w.r.t. (W1, b1, w2) at one sample. *build* = time from creating the transformation to the first "
          "gradient value (trace + differentiate + compile + first call), each build in a **fresh process** with a "
          "fresh SYMGRAD_CACHE_DIR (and PyTensor compiledir); imports (for symgrad also the one-time compile of its tape interpreter, which a fresh cache directory repeats) are excluded and shown separately. *cold* "
          f"(median of {reps} processes for the fast systems, 1 for the slow ones): nothing compiled before in the "
          "process, what a user sees. *warm process*: a (2, 3) build done first in the same process, so one-time "
          "JIT start-up (LLVM / XLA / Numba initialisation) is already paid. *per call*: median of "
          f"{call_reps} repeats after the build. Timeout {timeout} s per build. symgrad traces the array program "
          f"with signature `{MLP_SIG}` (a handful of array nodes whatever the size); the *scalar loops* row writes "
          "the same loss with Python loops, so symgrad sees an unrolled scalar graph like SymPy and CasADi SX do. "
          "SymPy: `sympy.diff` per parameter of the inlined expression, then `lambdify(..., 'numpy', cse=True)` "
          "(per call: a list of Python floats in).\n",
          table(["(hidden, inputs)", "params", "system", "build (cold)", "build (warm process)", "import",
                 "per call", "rel. err vs NumPy"], rows), ""] + lines
    if stage_rows:
        md += ["", "Where the build time goes (cold process, first run; symgrad stages timed by wrapping "
               "`symgrad.api.compiled`'s stage functions; the remainder is Numba's lazy compilation at the first "
               "call):\n", table(["size", "system", "stages"], [[a, b, ", ".join(c)] for a, b, *c in stage_rows]), ""]
    flat_info = {f"{k[0]}|{k[1]}|{k[2]}": v for k, v in info.items()}
    return "\n".join(md), {"info": flat_info, "largest": [H, I],
                           "raw": {f"{k[0]}|{k[1]}|{k[2]}|{k[3]}": v for k, v in results.items()}}


# ----------------------------------------------------------------------------------------
# 5. Logistic regression on the breast-cancer data
# ----------------------------------------------------------------------------------------
def bench_logreg(have: dict, quick: bool, checks: Checks) -> tuple[str, dict]:
    try:
        from sklearn.datasets import load_breast_cancer
    except ImportError:
        return "### 5. Logistic regression\n\n_skipped: scikit-learn is not installed_\n", {}
    repeats = 3 if quick else 25
    data = load_breast_cancer()
    X = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.hstack([X, np.ones((X.shape[0], 1))])
    y = np.where(data.target == 1, 1.0, -1.0)
    n, d = X.shape
    w0 = np.random.default_rng(1).standard_normal(d) / np.sqrt(d)
    w_big = w0 * (1e3 / np.median(np.abs(X @ w0)))

    def ref_grad(w):
        return X.T @ (-y * sigmoid_ref(-y * (X @ w))) / n

    def loss_np(w, X, y):
        return np.mean(np.log(1 + np.exp(-y * (X @ w))))
    impls, notes = {}, {}
    if "symgrad" in have:
        import symgrad as sg

        g = sg.grad(loss_np, signature="(d),(n,d),(n)->()")
        impls["symgrad"] = lambda: (lambda w: g(w, X, y))
        notes["symgrad"] = '`sg.grad(loss, signature="(d),(n,d),(n)->()")`'
    if "jax" in have:
        import jax
        import jax.numpy as jnp

        def loss_j(w, X, y):
            return jnp.mean(jnp.log(1 + jnp.exp(-y * (X @ w))))
        gj = jax.jit(jax.grad(loss_j))
        Xj, yj = jax.device_put(X), jax.device_put(y)
        impls["jax"] = lambda: (lambda w: gj(w, Xj, yj).block_until_ready())
        notes["jax"] = "`jax.jit(jax.grad(loss))`, X and y on the device"
    if "pytensor" in have:
        import pytensor
        import pytensor.tensor as pt

        def pt_build():
            wv, Xv, yv = pt.dvector("w"), pt.dmatrix("X"), pt.dvector("y")
            lo = pt.mean(pt.log(1 + pt.exp(-yv * pt.dot(Xv, wv))))
            f = pytensor.function([wv, Xv, yv], pytensor.grad(lo, wv))
            return lambda w: f(w, X, y)
        impls["pytensor"] = pt_build
        notes["pytensor"] = "`pytensor.function([w, X, y], pytensor.grad(loss, w))`"
    if "casadi" in have:
        import casadi as ca

        def ca_build():
            wv = ca.SX.sym("w", d)
            m = ca.DM(y) * ca.mtimes(ca.DM(X), wv)
            lo = ca.sum1(ca.log(1 + ca.exp(-m))) / n
            f = ca.Function("g", [wv], [ca.gradient(lo, wv)])
            return lambda w: f(w)
        impls["casadi"] = ca_build
        notes["casadi"] = "SX in w with X, y embedded as constants, `ca.gradient`, VM"
    if "autograd" in have:
        import autograd
        import autograd.numpy as anp

        ga = autograd.grad(lambda w, X, y: anp.mean(anp.log(1 + anp.exp(-y * anp.dot(X, w)))))
        impls["autograd"] = lambda: (lambda w: ga(w, X, y))
        notes["autograd"] = "`autograd.grad(loss)`"
    if "sympy" in have:
        import sympy

        def sy_build():
            ws = sympy.symbols(f"w0:{d}", real=True)
            xs = sympy.symbols(f"x0:{d}", real=True)
            ys = sympy.Symbol("y", real=True)
            li = sympy.log(1 + sympy.exp(-ys * sum(a * b for a, b in zip(ws, xs))))
            f = sympy.lambdify([ws, xs, ys], [sympy.diff(li, wk) for wk in ws], "numpy")
            cols = list(X.T)

            def g(w):
                return np.array([np.mean(c) for c in f(w, cols, y)])
            return g
        impls["sympy"] = sy_build
        notes["sympy"] = ("per-sample loss in symbols w, x, y; `sympy.diff` per w_k; `lambdify(..., 'numpy')` "
                          "evaluated on the data columns, then averaged")
    if "numba" in have:
        import numba

        @numba.njit
        def grad_hand(w, X, y):
            n, d = X.shape
            g = np.zeros(d)
            for r in range(n):
                m = 0.0
                for k in range(d):
                    m += X[r, k] * w[k]
                m *= y[r]
                # sigmoid(-m), stable
                if m >= 0:
                    e = math.exp(-m)
                    s = e / (1.0 + e)
                else:
                    s = 1.0 / (1.0 + math.exp(m))
                c = -y[r] * s / n
                for k in range(d):
                    g[k] += c * X[r, k]
            return g
        impls["numba"] = lambda: (lambda w: grad_hand(w, X, y))
        notes["numba"] = "hand-derived stable gradient in `numba.njit`"
    build, errs, errs_big, cands = {}, {}, {}, {}
    for p, builder in impls.items():
        t0 = time.perf_counter()
        fn = builder()
        out = fn(w0)
        build[p] = time.perf_counter() - t0
        conv = (lambda o: o.full().ravel()) if p == "casadi" else (lambda o: np.asarray(o).ravel())
        errs[p] = relerr(conv(out), ref_grad(w0))
        checks.add("logreg", p, "gradient at |Xw| ~ 1 rel. err ≤ 1e-10", errs[p] <= 1e-10, fmt_err(errs[p]))
        gb = conv(fn(w_big))
        errs_big[p] = (int(np.sum(~np.isfinite(gb))), relerr(gb, ref_grad(w_big)))
        checks.add("logreg", p, "gradient finite and accurate at |Xw| ~ 1e3",
                   errs_big[p][0] == 0 and errs_big[p][1] <= 1e-10, f"{errs_big[p]}")
        cands[p] = lambda fn=fn: fn(w0)
    t = interleaved(cands, repeats, target=0.05)
    sgt = t.get("symgrad", {}).get("med")
    rows = [[PEER_LABEL[p], f"**{fmt_t(t[p]['med'])}**", f"{t[p]['med'] / sgt:.2f}x" if sgt else "–",
             fmt_t(build[p]), fmt_err(errs[p]),
             "finite" if errs_big[p][0] == 0 else f"**{errs_big[p][0]}/{d} non-finite**",
             fmt_err(errs_big[p][1])] for p in impls]
    best = _best(t, "med")
    z = y * (X @ w_big)
    md = [f"### 5. Logistic regression: breast-cancer data ({n}x{d - 1} standardised + intercept column)\n",
          "loss(w) = mean(log(1 + exp(-y * (X @ w)))), y ∈ {-1, +1}, written naively in each system. Full-data "
          f"gradient at a random w with |Xw| ~ 1 (median of {repeats} interleaved repeats of ~0.05 s), checked against a stable "
          f"NumPy reference. Then w scaled so that median |Xw| = 1e3 (logits from {z.min():.0f} to {z.max():.0f}; "
          f"{int(np.sum(z < -709))} samples have y·Xw < -709, where exp overflows): which systems return "
          "non-finite gradients.\n",
          "How each system is called:\n"] + [f"- {PEER_LABEL[p]}: {v}" for p, v in notes.items()] + [
          "", table(["system", "gradient median", "vs symgrad", "build (first call)", "rel. err (|Xw|~1)",
                     "gradient at |Xw| ~ 1e3", "rel. err there"], rows), ""]
    if sgt and best:
        md.append(f"- symgrad / best peer ({PEER_LABEL[best]}) = **{sgt / t[best]['med']:.2f}x**"
                  + (f"; symgrad / hand-written numba = **{sgt / t['numba']['med']:.2f}x**" if "numba" in t else ""))
    nonfinite = [PEER_LABEL[p] for p in impls if errs_big[p][0]]
    md.append(f"- non-finite gradients at |Xw| ~ 1e3: {', '.join(nonfinite) if nonfinite else 'none'}")
    return "\n".join(md), {"times": t, "build": build, "errs": errs, "errs_big": errs_big, "best_peer": best}


# ----------------------------------------------------------------------------------------
# targets
# ----------------------------------------------------------------------------------------
def _status(ratio, limit, le=True):
    if ratio is None:
        return "–", "not measured"
    met = ratio <= limit if le else ratio >= limit
    if met:
        return "**met**", f"margin {limit / ratio:.2f}x" if le else f"margin {ratio / limit:.2f}x"
    return "**missed**", f"by {ratio / limit:.2f}x" if le else f"by {limit / ratio:.2f}x"


def targets(res: dict) -> tuple[str, list]:
    rows, out = [], []

    def add(area, target, ratio, limit, le=True, detail=""):
        st, by = _status(ratio, limit, le)
        shown = "–" if ratio is None else (f"{ratio:#.3g}" if ratio < 100 else f"{ratio:.0f}")
        rows.append([area, target, shown + (f" ({detail})" if detail else ""), st, by])
        out.append({"area": area, "target": target, "ratio": ratio, "limit": limit, "status": st, "by": by})
    el = res.get("elementwise")
    if el:
        for dn in ("float64", "float32"):
            r = el.get(dn, {})
            sg_t = r.get("symgrad", {}).get("time_df", {}).get("med")
            bp = r.get("best_peer_df")
            if sg_t and bp:
                add("elementwise d/dx", f"{dn}: symgrad / best peer ≤ 0.8", sg_t / r[bp]["time_df"]["med"], 0.8,
                    detail=f"best peer {PEER_LABEL[bp]}")
            if sg_t and "numba" in r:
                add("elementwise d/dx", f"{dn}: symgrad / hand numba ≤ 1.1", sg_t / r["numba"]["time_df"]["med"], 1.1)
            sg_f, bf = r.get("symgrad", {}).get("time_f", {}).get("med"), r.get("best_peer_f")
            if sg_f and bf:
                add("elementwise f", f"{dn}: symgrad / best peer ≤ 0.8 (issue 19)", sg_f / r[bf]["time_f"]["med"], 0.8,
                    detail=f"best peer {PEER_LABEL[bf]}")
    ro = res.get("rosenbrock")
    if ro:
        for key, v in ro.items():
            kind, n = key.split("_")
            tk = v["times"]
            what = f"Rosenbrock {'gradient' if kind == 'grad' else 'HVP'} n={int(n):,}"
            if "symgrad" in tk and v["best_peer"]:
                add(what, "symgrad / best peer ≤ 0.8", tk["symgrad"]["med"] / tk[v["best_peer"]]["med"], 0.8,
                    detail=f"best peer {ROSEN_LABEL[v['best_peer']]}")
            if "symgrad" in tk and "numba" in tk:
                add(what, "symgrad / hand numba ≤ 1.1", tk["symgrad"]["med"] / tk["numba"]["med"], 1.1)
            if "symgrad-fn" in tk and v["best_peer"]:
                add(what + ", built once", "symgrad / best peer ≤ 0.8", tk["symgrad-fn"]["med"] /
                    tk[v["best_peer"]]["med"], 0.8, detail=f"sg.hessian_vector_product; best peer "
                    f"{ROSEN_LABEL[v['best_peer']]}")
            if "symgrad-fn" in tk and "numba" in tk:
                add(what + ", built once", "symgrad / hand numba ≤ 1.1", tk["symgrad-fn"]["med"] / tk["numba"]["med"],
                    1.1, detail="sg.hessian_vector_product")
    la = res.get("latency")
    if la and "symgrad" in la:
        if "jax" in la:
            add("call latency", "symgrad / JAX jit ≤ 0.2", la["symgrad"]["med_ns"] / la["jax"]["med_ns"], 0.2)
        if "numba" in la:
            add("call latency", "symgrad / hand njit ≤ 1.5", la["symgrad"]["med_ns"] / la["numba"]["med_ns"], 1.5)
    bu = res.get("build")
    if bu and bu.get("info"):
        H, I = bu["largest"]
        info = bu["info"]
        sgb = info.get(f"symgrad|{H}|{I}")
        sgb = None if sgb is None or "error" in sgb else sgb
        for other, tgt, limit, le in (("sympy", "naive SymPy / symgrad ≥ 20", 20, False),
                                      ("casadi", "symgrad / CasADi SX ≤ 2", 2, True)):
            ob = info.get(f"{other}|{H}|{I}")
            if sgb and ob and "error" not in ob:
                ratio = ob["build_s"] / sgb["build_s"] if not le else sgb["build_s"] / ob["build_s"]
                lb = ob["lower_bound"]
                add(f"build time, MLP ({H}, {I})", tgt, ratio, limit, le,
                    detail=("SymPy timed out: lower bound" if lb and not le else "cold process"))
        # the same for the unrolled (scalar-loop) form, for information
        sgu = info.get(f"symgrad-unrolled|{H}|{I}")
        ob = info.get(f"casadi|{H}|{I}")
        if sgu and "error" in sgu:
            rows.append([f"build time, MLP ({H}, {I}), scalar-loop form", "symgrad / CasADi SX ≤ 2",
                         f"build fails: {sgu['error'][:60]}", "**missed**", "no result"])
            out.append({"area": "build, scalar-loop form", "target": "symgrad / CasADi SX ≤ 2", "ratio": None,
                        "status": "missed", "by": sgu["error"]})
        elif sgu and ob:
            add(f"build time, MLP ({H}, {I}), scalar-loop form", "symgrad / CasADi SX ≤ 2",
                sgu["build_s"] / ob["build_s"], 2, True,
                detail="symgrad timed out: lower bound" if sgu["lower_bound"] else "")
    md = ["### Targets (issue 7)\n",
          "Ratios from this run (medians; < 1 means symgrad is faster). *Best peer* = the fastest of JAX, PyTensor, "
          "CasADi, autograd and SymPy (hand-written Numba/SciPy excluded); in the elementwise rows, the fastest "
          "system other than symgrad and hand-written Numba whose values are finite and correct on the sample and "
          "at the extreme points (issue 19), NumPy's stable forms included. Build targets use the cold-process "
          "build at the largest MLP size.\n",
          table(["area", "target", "ratio", "status", "by how much"], rows), ""]
    return "\n".join(md), out


# ----------------------------------------------------------------------------------------
def header(info: dict, have: dict, skipped: dict, cmd: str) -> str:
    import numba

    vers = [[PEER_LABEL[p], have[p]] for p in have]
    vers.append(["numpy / numba (symgrad's and the hand kernels')", f"{np.__version__} / {numba.__version__}"])
    backend = []
    if "jax" in have:
        import jax

        backend.append(f"- JAX: `jax.jit` on backend `{jax.default_backend()}` with `jax_enable_x64`; XLA CPU may "
                       "use more than one thread (CPU/wall column in benchmark 1).")
    if "pytensor" in have:
        import pytensor

        mode = pytensor.compile.mode.get_default_mode()
        backend.append(f"- PyTensor: default mode `{pytensor.config.mode}`, linker `{type(mode.linker).__name__}` "
                       "(PyTensor 3 compiles through Numba; the C backend is not used). PyTensor pins "
                       "numba ≤ 0.65.1; it ran here with the numba shown above.")
    if "casadi" in have:
        backend.append("- CasADi: SX expression graphs, `casadi.Function` evaluated by CasADi's SX virtual machine; "
                       "C code generation (`jit=True`, `compiler='shell'`, gcc -O3) only in the rows that say so.")
    for p, why in skipped.items():
        backend.append(f"- {PEER_LABEL[p]}: **skipped** — {why}")
    return "\n".join([
        "# symgrad against peers (issue 7)\n",
        table(["", ""], [["date", info["date"]], ["command", f"`{cmd}`"],
                         ["CPU (lscpu)", f"{info['cpu_model']}; {info['lscpu']}"],
                         ["platform", info["platform"]], ["Python", info["python"]],
                         ["symgrad code", f"git {info['git']}"]] + vers), "",
        *backend, "",
        "The machine is shared and noisy: compare ratios measured in this run (medians of interleaved repeats), "
        "not absolute times across runs. Build times (first call: trace, differentiate, compile, run) are reported "
        "separately from run times.\n"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (smoke run)")
    ap.add_argument("--only", default="12345", help="which benchmarks, e.g. 135")
    ap.add_argument("--peers", default=",".join(ALL_PEERS),
                    help=f"comma-separated subset of {','.join(ALL_PEERS)} (default: all installed)")
    ap.add_argument("--out", default=str(RESULTS), help="markdown output")
    ap.add_argument("--json", default=None, help="also write raw results and checks as JSON here")
    ap.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--prewarm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=7, help=argparse.SUPPRESS)
    ap.add_argument("--buildtime", action="store_true",
                    help="run bench_buildtime.py instead: the scalar-loop MLP (issue 15) against CasADi SX, "
                         "JAX and SymPy at (4, 4) ... (128, 64) -> results/buildtime.md")
    a = ap.parse_args()
    if a.buildtime:
        raise SystemExit(subprocess.call([sys.executable, str(HERE / "bench_buildtime.py")]))

    if a.worker:
        kind, peer, h, i = a.worker
        _emit(worker_mlp(peer, int(h), int(i), a.prewarm, a.repeats))
        return

    # cold caches for the in-process builds: a fresh symgrad cache (under $SYMGRAD_CACHE_DIR when set)
    # and a fresh PyTensor compile directory, both set before either package is imported
    parent = os.environ.get("SYMGRAD_CACHE_DIR")
    if parent:
        os.makedirs(parent, exist_ok=True)
    os.environ["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="peers-run-", dir=parent)
    os.environ["PYTENSOR_FLAGS"] = f"base_compiledir={tempfile.mkdtemp(prefix='pytensor-peers-')}"
    selected = [p.strip() for p in a.peers.split(",") if p.strip()]
    unknown = set(selected) - set(ALL_PEERS)
    if unknown:
        raise SystemExit(f"unknown peers {sorted(unknown)}; choose from {ALL_PEERS}")
    have, skipped = load_peers(selected)
    for p in set(ALL_PEERS) - set(selected):
        skipped[p] = "not selected (--peers)"
    info = machine_info()
    cmd = "python benchmarks/peers.py" + (" --quick" if a.quick else "") + \
          (f" --only {a.only}" if a.only != "12345" else "") + \
          (f" --peers {a.peers}" if a.peers != ",".join(ALL_PEERS) else "")
    checks = Checks()
    benches = {"1": ("elementwise", bench_elementwise), "2": ("latency", bench_latency),
               "3": ("rosenbrock", bench_rosen), "4": ("build", bench_build), "5": ("logreg", bench_logreg)}
    parts, res = [], {}
    t_all = time.perf_counter()
    for k in a.only:
        name, fn = benches[k]
        t0 = time.perf_counter()
        md, r = fn(have, a.quick, checks)
        res[name] = r
        print(md, "\n", flush=True)
        print(f"[benchmark {k} ({name}) took {time.perf_counter() - t0:.0f} s]\n", file=sys.stderr, flush=True)
        parts.append(md + "\n")
    tmd, tlist = targets(res)
    failed = [c for c in checks.items if not c["ok"]]
    chk = ["### Correctness checks (run before timing)\n",
           f"{len(checks.items) - len(failed)} of {len(checks.items)} checks pass. Failures are results a user "
           "would get, reported, not errors of the benchmark:\n"]
    chk += [f"- {c['bench']} / {PEER_LABEL.get(c['peer'], ROSEN_LABEL.get(c['peer'], c['peer']))}: {c['what']} — "
            f"{c['detail']}" for c in failed] or ["- none"]
    total = time.perf_counter() - t_all
    doc = "\n".join([header(info, have, skipped, cmd), tmd, *parts, "\n".join(chk) + "\n",
                     f"_Total benchmark wall time: {total:.0f} s._\n"])
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(doc)
    print(tmd)
    print(f"wrote {out} ({total:.0f} s)")
    if a.json:
        Path(a.json).write_text(json.dumps({"machine": info, "peers": have, "skipped": skipped, "results": res,
                                            "targets": tlist, "checks": checks.items}, indent=1, default=str))


if __name__ == "__main__":
    main()
