"""The stabiliser's hard CPU-time deadline for a whole program.

:func:`symgrad.api.stabilize_pass.stabilize_kernel` gives every program one budget of CPU
seconds of the calling thread (:func:`cpu_clock`, ``time.thread_time``: neither other processes'
load nor this process's other threads, such as a background compile, change it).  Inside
``with hard_deadline(t):`` the expensive loops (the per-point reference evaluation, the
triage) call :func:`check_deadline`, which raises :class:`StabilizeBudgetExceeded` once
the CPU clock passes ``t``; the pass catches it and keeps the derived forms of whatever
was not searched.
"""
from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager

__all__ = ["StabilizeBudgetExceeded", "hard_deadline", "check_deadline", "deadline_passed", "cpu_clock",
           "collector_paused"]


def cpu_clock() -> float:
    """CPU seconds of the calling thread: the clock of every stabiliser budget and deadline."""
    return time.thread_time()


class StabilizeBudgetExceeded(RuntimeError):
    """The program's stabiliser budget (CPU seconds) was spent; the search stopped."""


_LOCAL = threading.local()  # per thread: programs may be compiled from several threads at once


def _current():
    return getattr(_LOCAL, "t", None)


class hard_deadline:
    """Context: :func:`check_deadline` raises :class:`StabilizeBudgetExceeded` past CPU time ``t``
    (:func:`cpu_clock`); ``None`` removes the bound.  Nested deadlines keep the earlier."""

    def __init__(self, t: float | None):
        self.t = t

    def __enter__(self):
        self.saved = _current()
        if self.t is not None and (self.saved is None or self.t < self.saved):
            _LOCAL.t = self.t
        return self

    def __exit__(self, *exc):
        _LOCAL.t = self.saved
        return False


def deadline_passed() -> bool:
    """True if the current hard deadline (if any) has passed."""
    t = _current()
    return t is not None and cpu_clock() > t


def check_deadline() -> None:
    """Raise :class:`StabilizeBudgetExceeded` if the current hard deadline has passed."""
    if deadline_passed():
        raise StabilizeBudgetExceeded("the stabiliser's program budget is spent")


_PAUSE_LOCK = threading.Lock()
_PAUSED = {"depth": 0, "was_enabled": False}


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off inside (nestable, from any thread; back on when the
    last one leaves, if it was on before the first).

    A budget is CPU time of the calling thread, and a full collection of a large heap (a test
    session's or a notebook's SymPy objects) can take most of a second there: it would be charged
    to the stabiliser although it collects other code's garbage.  Reference counting still frees
    the pass's acyclic temporaries; a pass is one program's budget long."""
    with _PAUSE_LOCK:
        if _PAUSED["depth"] == 0:
            _PAUSED["was_enabled"] = gc.isenabled()
            gc.disable()
        _PAUSED["depth"] += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _PAUSED["depth"] -= 1
            if _PAUSED["depth"] == 0 and _PAUSED["was_enabled"]:
                gc.enable()
