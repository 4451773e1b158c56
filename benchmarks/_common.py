"""Helpers shared by the benchmark scripts: time formatting, markdown tables, build-stage timers.

The scripts run as ``python benchmarks/<name>.py``, so this module is imported as ``_common``.
"""
from __future__ import annotations

import math
import os
import statistics
import time


def median_time(fn, repeats: int = 15) -> float:
    """Median wall time in seconds of ``fn()`` over ``repeats`` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fmt_t(sec: float | None) -> str:
    """Seconds as ``1.23 s`` / ``4.56 ms`` / ``7.89 µs`` / ``12 ns`` ("–" for None or non-finite)."""
    if sec is None or not math.isfinite(sec):
        return "–"
    if sec >= 1:
        return f"{sec:.2f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.2f} ms"
    if sec >= 1e-6:
        return f"{sec * 1e6:.2f} µs"
    return f"{sec * 1e9:.0f} ns"


def table(headers, rows) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# (module, name it calls, stage): the build pipeline's stages, timed by wrapping the names its modules call
BUILD_STAGES = (("symgrad.api.compiled", "trace_program", "trace"), ("symgrad.api.pipeline", "build_kernel", "differentiate"),
                ("symgrad.api.pipeline", "stabilize_kernel", "stabilize"), ("symgrad.api.pipeline", "emit_module", "emit"),
                ("symgrad.api.pipeline", "load_module", "load"))


def time_build_stages(stages: dict) -> None:
    """Wrap every name of :data:`BUILD_STAGES` so that its wall time adds to ``stages[stage]``."""
    import importlib

    for module, name, stage in BUILD_STAGES:
        mod = importlib.import_module(module)
        if hasattr(mod, name):
            stages.setdefault(stage, 0.0)
            time_calls(mod, name, stages, stage)


def time_calls(module, name: str, stages: dict, stage: str) -> None:
    """Replace ``module.name`` by a wrapper adding its wall time to ``stages[stage]``."""
    fn = getattr(module, name)

    def timed(*a, **k):
        s = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            stages[stage] = stages.get(stage, 0.0) + time.perf_counter() - s
    setattr(module, name, timed)


def compile_event_log():
    """Register a Numba compile listener; returns the list it fills with (qualname, seconds)."""
    from numba.core import event

    starts, log = {}, []

    class _Listener(event.Listener):
        def on_start(self, ev):
            starts[id(ev.data["dispatcher"]), str(ev.data["args"])] = time.perf_counter()

        def on_end(self, ev):
            s = starts.pop((id(ev.data["dispatcher"]), str(ev.data["args"])), None)
            if s is not None:
                log.append((ev.data["dispatcher"].py_func.__qualname__, time.perf_counter() - s))
    event.register("numba:compile", _Listener())
    return log


def write_markdown(path: str, lines) -> None:
    """Write ``lines`` (one string per line) to ``path``, creating its folder."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
