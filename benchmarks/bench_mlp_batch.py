"""Gradient vs forward time for an MLP loss averaged over a minibatch inside the core.

The training-loop form of issue 2's MLP benchmark: loss = mean((tanh(X W1^T + b1) w2 - Y)^2)
with signature "(h,i),(h),(h),(n,i),(n)->()", so the gradient has the parameters' shapes
(no per-sample output arrays to allocate).  Medians of repeats, ratios within one run.

Run: python benchmarks/bench_mlp_batch.py   (writes benchmarks/results/mlp_batch.md)
"""
from __future__ import annotations

import datetime
import os
import platform
import statistics
import tempfile
import time
import timeit
from pathlib import Path

os.environ.setdefault("SYMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="symgrad-bench-"))

import numpy as np  # noqa: E402

import symgrad as sg  # noqa: E402

SIG = "(h,i),(h),(h),(n,i),(n)->()"
SIZES = [(4, 4), (16, 8), (32, 16), (64, 32)]
N = 1000


def loss(W1, b1, w2, X, Y):
    return np.mean((np.tanh(X @ W1.T + b1) @ w2 - Y) ** 2)


def reference_grad(W1, b1, w2, X, Y):
    Z = np.tanh(X @ W1.T + b1)
    e = 2.0 * (Z @ w2 - Y) / len(Y)
    d = (e[:, None] * w2) * (1.0 - Z**2)
    return d.T @ X, d.sum(axis=0), Z.T @ e


def median_time(fn, number=20, repeat=9) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for h, i in SIZES:
        W1, b1, w2 = rng.standard_normal((h, i)), rng.standard_normal(h), rng.standard_normal(h)
        X, Y = rng.standard_normal((N, i)), rng.standard_normal(N)
        t0 = time.perf_counter()
        g = sg.grad(loss, argnums=(0, 1, 2), signature=SIG)
        grads = g(W1, b1, w2, X, Y)
        build = time.perf_counter() - t0
        f = sg.jit(loss, signature=SIG)
        f(W1, b1, w2, X, Y)
        err = max(float(np.max(np.abs(a - r)) / np.max(np.abs(r)))
                  for a, r in zip(grads, reference_grad(W1, b1, w2, X, Y)))
        tf = median_time(lambda: f(W1, b1, w2, X, Y))
        tg = median_time(lambda: g(W1, b1, w2, X, Y))
        rows.append((h, i, h * i + 2 * h, build, tf, tg, err))
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    out = ["# MLP minibatch loss: gradient vs forward", "",
           f"Date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {platform.platform()}; "
           f"{cpu} ({os.cpu_count()} CPUs); numpy {np.__version__}; command `python benchmarks/bench_mlp_batch.py`.",
           "", f"loss = mean((tanh(X W1^T + b1) w2 - Y)^2), signature `{SIG}`, n = {N} samples inside the core. "
           "Medians of 9 repeats of 20 calls. Target (issue 2): gradient at most 3x the forward time.", "",
           "| (hidden, inputs) | params | build (grad, first call) | forward | gradient | grad / fwd | rel. error vs NumPy |",
           "|---|---|---|---|---|---|---|"]
    for h, i, p, build, tf, tg, err in rows:
        out.append(f"| ({h}, {i}) | {p} | {build:.2f} s | {tf * 1e6:.0f} µs | {tg * 1e6:.0f} µs | "
                   f"**{tg / tf:.2f}x** | {err:.1e} |")
    path = Path(__file__).resolve().parent / "results" / "mlp_batch.md"
    path.write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
