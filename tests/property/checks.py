"""Comparison helpers shared by the property tests: collect every mismatch, then fail once."""
from __future__ import annotations

import math
import time

import numpy as np
from hypothesis import event
from hypothesis.errors import InvalidArgument

from .kernels import STATS


def count(name: str) -> None:
    """Count an event for the session summary (and hypothesis' statistics)."""
    ev = STATS.setdefault("events", {})
    ev[name] = ev.get(name, 0) + 1
    try:
        event(name)
    except InvalidArgument:  # a check reused outside hypothesis (tests/property/test_regressions.py)
        pass


class timed:
    """Context manager adding the elapsed time to STATS["time"][name]."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.t = time.perf_counter()

    def __exit__(self, *exc):
        tm = STATS.setdefault("time", {})
        tm[self.name] = tm.get(self.name, 0.0) + time.perf_counter() - self.t


class Checker:
    """Collects failed comparisons with context; :meth:`done` raises one AssertionError."""

    def __init__(self, program, header=""):
        self.program, self.header = program, header
        self.failures: list[str] = []
        self.checked = 0
        self.t0 = time.perf_counter()

    def close(self, what: str, got, want, tol: float, ctx: str = "") -> None:
        got, want = float(got), float(want)
        self.checked += 1
        if math.isnan(tol):
            return
        if not (math.isfinite(got) and abs(got - want) <= tol):
            self.failures.append(f"{what}: got {got!r}, want {want!r} (diff {abs(got - want):.3g} > tol "
                                 f"{tol:.3g}) {ctx}")

    def equal(self, what: str, got, want, ctx: str = "") -> None:
        self.checked += 1
        got, want = np.asarray(got), np.asarray(want)
        nan_ok = got.dtype.kind == "f" and want.dtype.kind == "f"
        if got.shape != want.shape or not np.array_equal(got, want, equal_nan=nan_ok):
            self.failures.append(f"{what}: got {got!r}, want {want!r} (must be identical) {ctx}")

    def done(self) -> None:
        if self.failures:
            msg = [self.header, "program:", self.program.source(), f"signature {self.program.signature}"]
            msg += self.failures[:25]
            if len(self.failures) > 25:
                msg.append(f"... and {len(self.failures) - 25} more")
            raise AssertionError("\n".join(m for m in msg if m))
