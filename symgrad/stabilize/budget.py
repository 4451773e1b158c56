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

import ctypes
import gc
import threading
import time
from contextlib import contextmanager

from sympy.core.parameters import global_parameters

__all__ = ["StabilizeBudgetExceeded", "hard_deadline", "check_deadline", "deadline_passed", "cpu_clock",
           "collector_paused", "interrupted_past", "share_of_time_left"]


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


def share_of_time_left(fraction: float, end: float | None = None) -> float | None:
    """The CPU time (:func:`cpu_clock`) ``fraction`` of the way from now to the earlier of the
    current hard deadline and ``end`` (None: neither is set), for a step that must leave the rest
    to the steps after it."""
    ends = [t for t in (_current(), end) if t is not None]
    if not ends:
        return None
    now = cpu_clock()
    return now + fraction * max(min(ends) - now, 0.0)


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


POLL_S = 0.01  # how often the watcher of :func:`interrupted_past` reads the thread's CPU clock


def _raise_in(thread_id: int, exc) -> None:
    """Make ``exc`` (an exception class) raise in the thread ``thread_id`` at its next check of the
    eval breaker: CPython's ``PyThreadState_SetAsyncExc``.  Never called with NULL to clear one: on
    CPython 3.11 that leaves a thread running under a profile hook (``cProfile``, pyinstrument)
    re-entering the same instruction forever (``python -m cProfile`` of ``sg.jit(f)(x)`` hung)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


def _absorb_late(exc) -> None:
    """Take an ``exc`` raised asynchronously in this thread that has not arrived yet: it arrives at
    the first backward jump of the loop (CPython checks the eval breaker there) and stops here."""
    try:
        for _ in range(8):
            pass
    except exc:
        pass


class _Watch:
    """One armed :func:`interrupted_past` block: its thread, that thread's clock, the limit, the exception."""

    __slots__ = ("tid", "used", "limit", "exc", "fired")

    def __init__(self, tid, used, limit, exc):
        self.tid, self.used, self.limit, self.exc, self.fired = tid, used, limit, exc, False


_ARMED: set = set()                 # the blocks being watched (any thread's)
_WATCH = threading.Condition()      # guards _ARMED; wakes the watcher when a block is armed
_WATCHER: list = []                 # the one watcher thread, started with the first block


def _watch_forever() -> None:
    """The watcher: every ``POLL_S`` seconds while blocks are armed (asleep otherwise), raise in each
    thread whose clock has passed its limit, once."""
    with _WATCH:
        while True:
            while not _ARMED:
                _WATCH.wait()
            for w in list(_ARMED):
                if w.used() > w.limit:
                    _raise_in(w.tid, w.exc)
                    w.fired = True
                    _ARMED.discard(w)
            _WATCH.wait(POLL_S)


@contextmanager
def interrupted_past(t: float | None, exc: type[BaseException]):
    """Inside, ``exc`` is raised in the calling thread once its CPU clock (:func:`cpu_clock`) passes
    ``t`` (None: no bound): for calls into code that has no checkpoints and can run for minutes,
    such as SymPy's ``series`` (``log(1 - 1/(1 + exp(-z)))`` at infinity never returned).

    One watcher thread for the process reads each armed thread's CPU clock
    (``time.pthread_getcpuclockid``; where there is none, wall time from entry stands in for the CPU
    time left) every ``POLL_S`` seconds and, past ``t``, raises ``exc`` asynchronously (CPython's
    ``PyThreadState_SetAsyncExc``): at the next bytecode, inside pure-Python code such as SymPy's.
    Arming a block costs a lock and a set insertion (the search arms one per subexpression whose
    rules it computes).  An exception fired as the block ends is taken on the way out, so none
    escapes into the code after it, and SymPy's global evaluation flags (``global_parameters``,
    which its ``evaluate(False)`` blocks set and reset) are restored when it fired.  Code inside must
    tolerate being stopped anywhere: callers wrap pure functions (a SymPy call, a rewrite rule) whose
    results they use, or cache, only on success.
    """
    if t is None:
        yield
        return
    tid = threading.get_ident()
    try:
        clock = time.pthread_getcpuclockid(tid)
        used = lambda: time.clock_gettime(clock)  # noqa: E731 - the watched thread's CPU seconds
        limit = t
    except (AttributeError, OSError):  # no per-thread CPU clock here: wall seconds from now
        used, limit = time.monotonic, time.monotonic() + max(t - cpu_clock(), 0.0)
    w = _Watch(tid, used, limit, exc)
    flags = dict(vars(global_parameters))
    with _WATCH:
        if not _WATCHER:
            _WATCHER.append(threading.Thread(target=_watch_forever, name="symgrad-interrupt", daemon=True))
            _WATCHER[0].start()
        _ARMED.add(w)
        _WATCH.notify()
    try:
        yield
    finally:
        try:
            with _WATCH:
                _ARMED.discard(w)  # from here on the watcher cannot fire: it fires under _WATCH, armed blocks only
            if w.fired:  # fired after the block's last bytecode, the exception may still be on its way
                _absorb_late(exc)
        except exc:  # it arrived inside this clean-up: the block's work was done
            pass
        if w.fired:
            for name, value in flags.items():
                setattr(global_parameters, name, value)
