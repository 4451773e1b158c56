"""Accuracy and cost of the double-double tanh, sinh, cosh, erf, erfc, sin and cos (symgrad/ir/ddmath.py).

For each function and each range of its algorithms (tiny arguments, both signs, the switch points),
the largest relative error of the dd result ``hi + lo`` against mpmath at 200 bits, at N points
with random dd tails (``|lo| <= 2^-54 |x|``), as tests/stabilize/test_ddmath.py draws them; then
the number of dd operations per call (calls of ``dd_add``, ``dd_mul`` and ``dd_div_float``; a
``dd_div`` is its five) at a few arguments, dd_exp for scale.

    python benchmarks/bench_dd_functions.py      -> benchmarks/results/dd_functions.md
"""
from __future__ import annotations

import datetime
import math
import os
import platform
import sys
from pathlib import Path

import mpmath
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from symgrad.ir import ddmath as D  # noqa: E402

N = 3000
RNG = np.random.default_rng(2027)


def _signed(a):
    return a * RNG.choice([-1.0, 1.0], len(a))


def _u(lo, hi):
    return RNG.uniform(lo, hi, N)


def _log_u(lo, hi):
    return 10.0 ** RNG.uniform(lo, hi, N)


S = D.DD_ERF_SWITCH
RANGES = {  # function: [(range, points)]
    "tanh": [("1e-290 < abs(x) < 1", _signed(_log_u(-290, 0))),
             ("abs(x) within 0.01 of 0.55", _signed(0.55 + _u(-0.01, 0.01))),
             ("1 < abs(x) < 40", _signed(_u(1, 40)))],
    "sinh": [("1e-290 < abs(x) < 3", _signed(_log_u(-290, 0.5))),
             ("3 < abs(x) < 709", _signed(_u(3, 709))),
             ("709 < abs(x) < 710.47", _signed(_u(709, 710.47)))],
    "cosh": [("abs(x) < 3", _u(-3, 3)),
             ("3 < abs(x) < 709", _signed(_u(3, 709))),
             ("709 < abs(x) < 710.47", _signed(_u(709, 710.47)))],
    "erf": [("1e-290 < abs(x) < 1", _signed(_log_u(-290, 0))),
             (f"abs(x) < {S}", _u(-S, S)),
            (f"abs(x) within 0.02 of {S}", _signed(S + _u(-0.02, 0.02))),
             (f"{S} < abs(x) < 6", _signed(_u(S, 6))),
            ("6 < abs(x) < 30", _signed(_u(6, 30)))],
    "erfc": [("1e-290 < abs(x) < 1", _signed(_log_u(-290, 0))),
             (f"abs(x) < {S}", _u(-S, S)),
             (f"abs(x) within 0.02 of {S}", _signed(S + _u(-0.02, 0.02))),
             (f"{S} < x < 6", _u(S, 6)),
             ("6 < x < 25.9 (tail normal)", _u(6, 25.9)),
             (f"-30 < x < -{S}", _u(-30, -S))],
    "sin": [("1e-290 < abs(x) < 5", _signed(_log_u(-290, 0.7))),
             ("5 < abs(x) < 1e5", _signed(_log_u(0.7, 5))),
            ("1e5 < abs(x) < 1e8", _signed(_log_u(5, 8))),
             ("next to k pi, abs(k) < 3e4", np.round(_u(-3e4, 3e4)) * math.pi)],
    "cos": [("1e-290 < abs(x) < 5", _signed(_log_u(-290, 0.7))),
             ("5 < abs(x) < 1e5", _signed(_log_u(0.7, 5))),
            ("1e5 < abs(x) < 1e8", _signed(_log_u(5, 8))),
             ("next to (k + 1/2) pi", (np.round(_u(-3e4, 3e4)) + 0.5) * math.pi)],
}
COST_AT = {"exp": [0.3, 700.0], "tanh": [0.001, 0.5, 20.0], "sinh": [0.001, 5.0, 709.5], "cosh": [0.001, 5.0, 709.5],
           "erf": [0.001, 1.0, 1.74, 1.75, 3.0, 10.0, 27.0], "erfc": [0.001, 1.0, 1.74, 1.75, 3.0, 10.0, -1.75],
           "sin": [0.5, 3.0, 1e5, 1e8], "cos": [0.5, 3.0, 1e5]}


def worst_bits(name: str, xs) -> float:
    fn, ref_fn = getattr(D, f"dd_{name}"), getattr(mpmath, name)
    worst = 0
    with mpmath.workprec(200):
        for x in xs:
            h, l = D.dd_fast_two_sum(float(x), float(x) * 2.0 ** -54 * RNG.uniform(-1, 1))  # noqa: E741
            ref = ref_fn(mpmath.mpf(h) + l)
            got = fn(h, l)
            worst = max(worst, abs((mpmath.mpf(got[0]) + got[1] - ref) / ref))
    return float(mpmath.log(worst, 2)) if worst else -math.inf


def dd_operations(name: str, x: float) -> int:
    counts = [0]
    saved = {n: getattr(D, n) for n in ("dd_add", "dd_mul", "dd_div_float")}

    def counting(f):
        def g(*a):
            counts[0] += 1
            return f(*a)
        return g

    for n, f in saved.items():  # the functions call each other through the module's globals
        setattr(D, n, counting(f))
    try:
        getattr(D, f"dd_{name}")(x, 0.0)
    finally:
        for n, f in saved.items():
            setattr(D, n, f)
    return counts[0]


def main() -> None:
    rows = [f"| {name} | {label} | {worst_bits(name, xs):.1f} |" for name, ranges in RANGES.items()
            for label, xs in ranges]
    cost = [f"| {name} | " + ", ".join(f"{x:g}: {dd_operations(name, x)}" for x in xs) + " |"
            for name, xs in COST_AT.items()]
    text = "\n".join([
        "# Double-double functions: accuracy and cost (benchmarks/bench_dd_functions.py)", "",
        f"Date: {datetime.datetime.now().isoformat(timespec='seconds')}  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}  ",
        "Command: `python benchmarks/bench_dd_functions.py`  ",
        f"{N} points per range, each a float with a random dd tail (abs(lo) <= 2^-54 abs(x)); "
        "reference mpmath at 200 bits.", "",
        "| function | range | log2 max relative error |", "|---|---|---|", *rows, "",
        "dd operations per call (dd_add, dd_mul, dd_div_float calls; a dd_div is five) at x:", "",
        "| function | x: operations |", "|---|---|", *cost, ""])
    out = Path(__file__).resolve().parent / "results" / "dd_functions.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
