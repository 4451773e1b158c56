"""Run-time cost and accuracy of double-double regions (issue 16, point 4).

For gradients whose float64 form the stabiliser evaluates partly in double-double, the compiled
float64 kernel with regions (the default) against the same program built with
``SYMGRAD_DD_REGIONS=0`` (float64 arithmetic throughout; the module cache keys differ), on
n = 10^6 points: x ~ U(-10, 10) (every input; sides of a triangle ~ U(1, 2), speeds ~ U(-0.999,
0.999)), and the points next to the root of swish'.
Medians of REPEATS calls after one warm-up, both variants timed in the same run; the maximum
error in ulps against mpmath (50 digits) on a subsample shows what the time buys.

    python benchmarks/bench_dd_regions.py      -> benchmarks/results/dd_regions.md
"""
from __future__ import annotations

import datetime
import os
import platform
import sys
from pathlib import Path

import mpmath
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_t, median_time, table  # noqa: E402

import symgrad as sg  # noqa: E402
from symgrad.stabilize.accuracy import ulp_bits  # noqa: E402

N, REPEATS, N_ACC = 1_000_000, 7, 400


def _swish(x):
    return x / (1 + np.exp(-x))


def _binary_ce(x, y):
    return -y * np.log(1 / (1 + np.exp(-x))) - (1 - y) * np.log(1 - 1 / (1 + np.exp(-x)))


def _lse2(a, b):
    return np.log(np.exp(a) + np.exp(b))


def _heron_formula(sqrt, a, b, c):
    return sqrt((a + b + c) * (-a + b + c) * (a - b + c) * (a + b - c)) / 4


def _inv_hypot_formula(sqrt, x, y):
    return 1 / sqrt(x**2 + y**2)


def _cosine_formula(sqrt, x, y, a, b):
    return (x * a + y * b) / (sqrt(x**2 + y**2) * sqrt(a**2 + b**2))


def _velocity(x, y):
    return (x + y) / (1 + x * y)


def _heron(a, b, c):
    return _heron_formula(np.sqrt, a, b, c)


def _inv_hypot(x, y):
    return _inv_hypot_formula(np.sqrt, x, y)


def _cosine(x, y, a, b):
    return _cosine_formula(np.sqrt, x, y, a, b)


def _mp_grad(formula, argnum):
    """The exact partial derivative ``d formula / d (argument argnum)`` (``formula`` builds a SymPy
    expression from symbols, ``sqrt`` given), as an mpmath function: sympy.diff, then lambdify."""
    import sympy as sp

    n = formula.__code__.co_argcount - 1
    syms = sp.symbols(f"a0:{n}", real=True)
    return sp.lambdify(syms, sp.diff(formula(sp.sqrt, *syms), syms[argnum]), "mpmath")


def _mp_swish1(v):
    s = 1 / (1 + mpmath.exp(-v))
    return s * (1 + v * (1 - s))


def _mp_ce1(v, w):
    return 1 / (1 + mpmath.exp(-v)) - w


def _mp_lse_b(a, b):
    return 1 / (1 + mpmath.exp(a - b))


CASES = [  # name, function, argnums, inputs, mpmath gradient (the first partial, or d/db for lse2)
    ("swish' (x / (1 + exp(-x)))", _swish, 0, "uniform", _mp_swish1),
    ("swish' next to its root", _swish, 0, "root", _mp_swish1),
    ("binary cross-entropy d/dx", _binary_ce, 0, "uniform", _mp_ce1),
    ("log(e^a + e^b) d/db", _lse2, 1, "uniform", _mp_lse_b),
    # regions of arithmetic, sqrt and hypot only: float64 forms within the conditioning bound but
    # beyond 2 ulps at 1-3 % of the points where the formula as written is within 1 ulp
    ("Heron's area d/db", _heron, 1, "sides", _mp_grad(_heron_formula, 1)),
    ("1/hypot(x, y) d/dy", _inv_hypot, 1, "uniform", _mp_grad(_inv_hypot_formula, 1)),
    ("cosine similarity d/dy", _cosine, 1, "uniform", _mp_grad(_cosine_formula, 1)),
    ("velocity addition d/dy", _velocity, 1, "unit", _mp_grad(lambda sqrt, x, y: _velocity(x, y), 1)),
]


def _inputs(kind, nargs, rng):
    if kind == "root":
        return [-1.2784645427610738 * (1 + rng.uniform(-1e-6, 1e-6, N))]
    if kind == "sides":  # triangle sides in [1, 2]: always a triangle
        return [rng.uniform(1, 2, N) for _ in range(nargs)]
    if kind == "unit":  # speeds in units of c
        return [rng.uniform(-0.999, 0.999, N) for _ in range(nargs)]
    return [rng.uniform(-10, 10, N) for _ in range(nargs)]


def _max_ulps(got, mpf, args):
    idx = np.linspace(0, N - 1, N_ACC).astype(int)
    with mpmath.workdps(50):
        ref = np.array([float(mpf(*[mpmath.mpf(float(a[i])) for a in args])) for i in idx])
    return float(2.0 ** ulp_bits(got[idx], ref).max() - 1)


def _kernel(expr, variables, name: str):
    """The float64 kernel of a SymPy form (its dd/ddt marks as regions), compiled by symgrad's emitter."""
    from symgrad.compile.cache import cache_key, load_module
    from symgrad.emit.module import KernelDef, emit_module
    from symgrad.emit.printer import KernelIO
    from symgrad.ir.from_sympy import from_sympy
    from symgrad.ir.graph import Graph

    g = Graph()
    leaves = {v: g.input(v.name, ()) for v in variables}
    out = from_sympy(g, expr, leaves)
    kd = KernelDef(name, name, [KernelIO(v.name, leaves[v], ()) for v in variables], [KernelIO("out", out, ())])
    mod = load_module(name, cache_key(g.fingerprint([out]), "bench_dd_regions", name),
                      emit_module(g, [kd], [f"bench_dd_regions: {name}"]))
    return getattr(mod, name)


def _stabilized_rows(rng) -> list[list[str]]:
    """Rows for forms ``stabilize()`` gives with a domain (the API searches the whole line): the
    Arrhenius ratio's ddt regions (first-order tails), kernel with the marks against the same
    form without them, on n points of the benchmark's domain."""
    import sympy as sp

    from symgrad.ir.sympy_funcs import strip_dd
    from symgrad.stabilize import stabilize
    from symgrad.stabilize.reference import reference_values_many

    a, x, y = sp.symbols("a x y", real=True)
    f = sp.exp(-a / x) - sp.exp(-a / y)
    dom = {a: (1.0, 10.0), x: (1.0, 1e3), y: (1.0, 1e3)}
    args = [rng.uniform(1, 10, N), np.exp(rng.uniform(0, np.log(1e3), N)), np.exp(rng.uniform(0, np.log(1e3), N))]
    idx = np.linspace(0, N - 1, N_ACC).astype(int)
    rows = []
    for part, e in (("f", f), ("d/da", sp.diff(f, a))):
        res = stabilize(e, [a, x, y], domain=dom)
        ref = reference_values_many([e], [a, x, y], np.stack([c[idx] for c in args], axis=1), np.float64)[0]
        cells = []
        for k, form in enumerate((strip_dd(res.expr), res.expr)):
            kern = _kernel(form, [a, x, y], f"arrhenius_{part[-1]}_{k}")
            kern(*[c[:8] for c in args])
            cells.append((median_time(lambda: kern(*args), REPEATS),
                          float(2.0 ** ulp_bits(kern(*args)[idx], ref).max() - 1)))
        (t0, e0), (t1, e1) = cells
        rows.append([f"Arrhenius ratio {part} (stabilize, domain)", fmt_t(t0), fmt_t(t1), f"{t1 / t0:.1f}x",
                     f"{e0:.0f}", f"{e1:.0f}"])
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for name, fn, argnum, kind, mpf in CASES:
        nargs = fn.__code__.co_argcount
        args = _inputs(kind, nargs, rng)
        if fn is _binary_ce:
            args[1] = rng.uniform(0, 1, N)  # labels in [0, 1]
        res = {}
        for setting in ("1", "0"):
            os.environ["SYMGRAD_DD_REGIONS"] = setting
            g = sg.grad(fn, argnums=argnum)
            g(*[a[:8] for a in args])  # build and compile outside the timing
            res[setting] = (median_time(lambda: g(*args), REPEATS), _max_ulps(g(*args), mpf, args))
        os.environ.pop("SYMGRAD_DD_REGIONS")
        (t1, e1), (t0, e0) = res["1"], res["0"]
        rows.append([name, fmt_t(t0), fmt_t(t1), f"{t1 / t0:.1f}x", f"{e0:.0f}", f"{e1:.0f}"])
        print(rows[-1], flush=True)
    rows += _stabilized_rows(rng)
    head = ["# Double-double regions: run-time cost (benchmarks/bench_dd_regions.py)", "",
            f"Date: {datetime.datetime.now().isoformat(timespec='seconds')}  ",
            f"Machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
            f"(shared with other jobs while this ran: the ratios, measured in one run, are the result), "
            f"Python {platform.python_version()}  ",
            "Command: `python benchmarks/bench_dd_regions.py`  ",
            f"n = {N} points per call, median of {REPEATS} calls after a warm-up; float64 gradient kernels "
            "built with `SYMGRAD_DD_REGIONS=0` (float64 only) and with regions (default). Max error in ulps "
            f"against 50-digit mpmath at {N_ACC} evenly spaced points of the same inputs.", ""]
    body = table(["gradient", "float64 only", "with dd regions", "ratio", "max ulps float64 only",
                  "max ulps with regions"], rows)
    out = Path(__file__).resolve().parent / "results" / "dd_regions.md"
    out.write_text("\n".join(head) + "\n" + body + "\n")
    print(body)


if __name__ == "__main__":
    main()
