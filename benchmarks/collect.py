"""Assemble BENCHMARKS.md from the per-suite results in benchmarks/results/.

Each suite writes its own markdown (with machine, date and command):
    python benchmarks/bench_core.py         -> results/core.md
    python benchmarks/bench_stability.py    -> results/stability.md
    python benchmarks/bench_stability_api.py -> results/stability_api.md
    python benchmarks/bench_aot.py          -> results/aot.md
    python benchmarks/bench_mlp_batch.py    -> results/mlp_batch.md
    python benchmarks/bench_memory.py       -> results/memory.md
    python benchmarks/peers.py              -> results/peers.md   (needs `pip install -e ".[bench]"`)
    python benchmarks/profile_peers.py      -> results/peers_profile.md
    python benchmarks/bench_dask.py         -> results/dask.md    (needs `pip install -e ".[dask]"`)
    python benchmarks/bench_sparse.py       -> results/sparse.md
    python benchmarks/bench_vocab.py        -> results/vocab.md
    python benchmarks/bench_linalg.py       -> results/linalg.md
    python benchmarks/bench_buildtime.py    -> results/buildtime.md
    python benchmarks/bench_vecmath.py      -> results/vecmath.md
    python benchmarks/bench_issue19.py      -> results/issue19.md
then:
    python benchmarks/collect.py            -> BENCHMARKS.md
"""
from __future__ import annotations

import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITES = [("summary.md", "Targets at a glance"),
          ("core.md", "Core: throughput, call latency, build time, disk cache (issue 2)"),
          ("mlp_batch.md", "MLP loss over a minibatch: gradient vs forward (issue 2)"),
          ("stability.md", "Numerical stabilisation: bits of error, naive vs stabilised (issue 4)"),
          ("stability_issue16.md", "Stable forms beyond Herbie: never worse, across reductions, double-double "
                                   "references, JAX column (issue 16)"),
          ("stability_api.md", "The same expressions through sg.jit / sg.grad, as a user calls them (issue 16)"),
          ("dd_functions.md", "Double-double functions of regions: error per range and cost (issue 16)"),
          ("aot.md", "Ahead-of-time modules: first-call time (issue 5)"),
          ("memory.md", "Memory: elementwise calls over 10^8 points allocate only their outputs (issue 8)"),
          ("peers.md", "Against peers: JAX, PyTensor, CasADi, autograd, SymPy, hand-written Numba (issue 7)"),
          ("peers_profile.md", "Against peers: where symgrad's time goes where it misses a target (issue 7)"),
          ("dask.md", "Dask: a 2-process LocalCluster against one process (issue 18)"),
          ("sparse.md", "Sparse Jacobians and Hessians: symgrad, CasADi SX, finite differences (issue 17)"),
          ("vocab.md", "NumPy vocabulary: gradients through max, cumsum, gathers, pad, diff, std (issue 14)"),
          ("linalg.md", "Linear algebra: Gaussian log-likelihood gradient through slogdet and solve (issue 14)"),
          ("buildtime.md", "Build time of a scalar-loop model at growing sizes (issue 15)"),
          ("vecmath.md", "Vectorised elementary functions in Numba loops (issue 19)"),
          ("issue19.md", "Issue 19 targets: elementwise and Rosenbrock kernels against the best peer")]


def main() -> None:
    parts = ["# symgrad benchmarks", "",
             f"Assembled {datetime.date.today().isoformat()} by `python benchmarks/collect.py` from "
             "`benchmarks/results/*.md`. Each section states its machine, date and command. The machine "
             "is shared and noisy, so compare the ratios measured within one run (medians of repeats), "
             "not absolute times across sections.", ""]
    for name, title in SUITES:
        path = HERE / "results" / name
        if not path.exists():
            parts += [f"## {title}", "", f"_not run yet: `{name}` is missing_", ""]
            continue
        body = path.read_text().strip().splitlines()
        if body and body[0].startswith("# "):
            body = body[1:]
        parts += [f"## {title}", ""] + ["#" + line if line.startswith("#") else line for line in body] + [""]
    (HERE.parent / "BENCHMARKS.md").write_text("\n".join(parts) + "\n")
    print(f"wrote {HERE.parent / 'BENCHMARKS.md'}")


if __name__ == "__main__":
    main()
