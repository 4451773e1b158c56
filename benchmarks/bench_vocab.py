"""NumPy vocabulary (issue 14): gradients of programs using max, cumsum, fancy indexing, pad, diff, std.

For a batch of B vectors of length n, each program's gradient is timed in symgrad (one
compiled gufunc call over the batch) and in JAX (``jit(vmap(grad(f)))``, x64, CPU), with
NumPy's forward pass over the batch as a scale.  Medians of repeats; the ratio is measured
in the same run.  Build = symgrad's first call (trace, differentiate, stabilise, emit, compile).

    python benchmarks/bench_vocab.py            -> benchmarks/results/vocab.md
"""
from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import fmt_t, table  # noqa: E402

import symgrad as sg  # noqa: E402

B, N, REPEATS = 10_000, 64, 7
IDX = np.random.default_rng(0).permutation(N)


def programs(m):
    return {
        "logsumexp with np.max shift": lambda x: m.max(x) + m.log(m.sum(m.exp(x - m.max(x)))),
        "cumsum of a fancy-indexed gather": lambda x: m.sum(m.cumsum(x[m.asarray(IDX)]) ** 2) / N,
        "std of diff of pad": lambda x: m.std(m.diff(m.pad(x, 1))),
    }


def median_time(fn, *args) -> float:
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    import jax
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = np.random.default_rng(1).standard_normal((B, N))
    rows = []
    for (name, f_np), f_jax in zip(programs(np).items(), programs(jnp).values()):
        g = sg.grad(f_np, signature="(n)->()")
        t = time.perf_counter()
        ours = g(x)
        build = time.perf_counter() - t
        jg = jax.jit(jax.vmap(jax.grad(f_jax)))
        ref = np.asarray(jg(x))
        err = float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))
        t_sg = median_time(g, x)
        g_plain = sg.grad(f_np, signature="(n)->()", stabilize=False)
        g_plain(x)
        t_plain = median_time(g_plain, x)
        t_jax = median_time(lambda a: jg(a).block_until_ready(), x)
        t_np = median_time(lambda a: [f_np(r) for r in a[:1000]], x) * (B / 1000)
        rows.append([name, fmt_t(build), fmt_t(t_sg), fmt_t(t_plain), fmt_t(t_jax), f"{t_sg / t_jax:.2f}x",
                     f"{t_plain / t_jax:.2f}x", fmt_t(t_np), f"{err:.1e}"])
    text = "\n".join([
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared, noisy); Python {platform.python_version()}, "
        f"numpy {np.__version__}, jax {jax.__version__}; {datetime.date.today()}; "
        "command: `python benchmarks/bench_vocab.py`.",
        "",
        f"Gradient over a batch of {B} vectors of length {N}, float64, median of {REPEATS} calls. "
        "JAX = `jit(vmap(grad(f)))` after warm-up; NumPy = a Python loop of the forward pass (scale only); "
        "rel. diff = max |symgrad - JAX| / max |JAX|.",
        "",
        table(["program", "symgrad build", "symgrad grad", "symgrad grad, stabilize=False", "JAX grad",
               "symgrad / JAX", "stabilize=False / JAX", "NumPy forward loop", "rel. diff"], rows),
        "",
    ])
    out = Path(__file__).resolve().parent / "results" / "vocab.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
