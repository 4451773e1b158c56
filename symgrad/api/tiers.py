"""The tiers a large kernel answers from while it is being compiled (issue 15, points 2 and 3).

1. the interpreter (:mod:`symgrad.compile.interpreter`): one Numba function that runs any
   instruction tape; answers the first call at once;
2. native code (:mod:`symgrad.compile.native`): the same tape printed as LLVM IR and compiled
   by LLVM in a background thread, in time linear in the program (a fraction of a second at
   10^4 operations);
3. the generated Numba module, compiled in a child process (:mod:`symgrad.compile.background`)
   only when something needs the module itself (Dask workers load it) or when the native
   compile failed: for large programs Numba takes minutes and the native code is as fast.

All three compute the same bits (``tests/test_tiers.py``).
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import Callable

from ..compile.background import CompileJob
from ..compile.native import NativeJob
from ..errors import SymgradWarning, format_error
from ..runtime.gufunc import gufunc_call

__all__ = ["Tiered", "TIER_MIN_OPS", "tiered_default"]

# Programs with at least this many operations answer their first calls from the interpreter tier
# while LLVM compiles (SYMGRAD_TIERED=1: every program; 0: none); smaller ones compile with Numba
# in well under a second.
TIER_MIN_OPS = 1000


def tiered_default() -> str:
    """``$SYMGRAD_TIERED``: ``"1"`` always, ``"0"`` never, else ``"auto"`` (by program size)."""
    value = os.environ.get("SYMGRAD_TIERED", "auto").strip().lower()
    return {"1": "1", "true": "1", "yes": "1", "0": "0", "false": "0", "no": "0"}.get(value, "auto")


class Tiered:
    """Entry point of a kernel answered by the best tier ready: the Numba module if it was
    built, else the native code, else the interpreter (the same values bit for bit).

    Args:
      name: the kernel's entry-point name in the generated module.
      spec: the interpreter's :class:`~symgrad.runtime.gufunc.GufuncSpec`.
      native: starts the background native compile (a :class:`NativeJob`); called after the
        first call has been answered, so that printing the IR (Python, holding the GIL) does not
        delay the first result.
      module_job: starts the Numba compile of the generated module (a :class:`CompileJob`).
    """

    def __init__(self, name: str, spec, native: Callable[[], NativeJob], module_job: Callable[[], CompileJob]):
        self.name, self.spec = name, spec
        self._native: NativeJob | None = None
        self.job: CompileJob | None = None
        self._start_native, self._start_module_job = native, module_job
        self._lock = threading.Lock()
        self._warned = False

    @property
    def native(self) -> NativeJob:
        """The native compile (started now if it was not)."""
        with self._lock:
            if self._native is None:
                self._native = self._start_native()
            return self._native

    def __call__(self, *args):
        job = self.job
        if job is not None and job.module is not None:
            return getattr(job.module, self.name)(*args)
        native = self._native
        if native is None:  # the first call: answer, then start the native compile
            result = gufunc_call(self.spec, args)
            _ = self.native  # the property starts the compile
            return result
        if native.spec is not None:
            return gufunc_call(native.spec, args)
        if native.error is not None:
            self._after_native_failure()
        return gufunc_call(self.spec, args)

    @property
    def tier(self) -> str:
        """``"compiled"`` (the Numba module), ``"native"`` or ``"interpreter"``."""
        if self.job is not None and self.job.module is not None:
            return "compiled"
        return "native" if self._native is not None and self._native.spec is not None else "interpreter"

    def module_job(self) -> CompileJob:
        """The Numba compile of the generated module, started now if it was not."""
        with self._lock:
            if self.job is None:
                self.job = self._start_module_job()
            return self.job

    def wait(self) -> None:
        """Block until a compiled tier answers (native code, or the module if that failed).

        Raises:
          RuntimeError: both compiles failed (calls still work, on the interpreter).
        """
        if self.native.wait() is not None:
            return
        job = self.module_job()
        if job.wait() is None:
            raise RuntimeError(self._failure_text())

    def wait_module(self):
        """The Numba module, compiled (waits).

        Raises:
          RuntimeError: its compile failed.
        """
        module = self.module_job().wait()
        if module is None:
            raise RuntimeError(self._failure_text())
        return module

    def _failure_text(self) -> str:
        native = self._native.error if self._native is not None else None
        errors = "; ".join(e for e in (native, self.job.error if self.job else None) if e)
        return format_error(
            f"symgrad could not compile {self.name} in the background ({errors})",
            "calls are answered by the interpreter tier, which gives the same values",
            "report this as a symgrad bug, with the function; set SYMGRAD_TIERED=0 to compile in "
            "the calling thread")

    def _after_native_failure(self) -> None:
        """The native compile failed: fall back on the Numba module; warn once if that fails too."""
        job = self.module_job()
        if job.error is not None and not self._warned:
            self._warned = True
            warnings.warn(SymgradWarning(
                f"symgrad could not compile {self.name} in the background (native code: {self.native.error}; "
                f"Numba: {job.error}); calls keep running on the interpreter tier (same values, slower). "
                f"Set SYMGRAD_TIERED=0 to compile in the calling thread and see the error."), stacklevel=4)
