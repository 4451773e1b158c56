"""Compile a generated module off the calling thread (the compiled tier of issue 15).

Numba's compiler is Python code holding the GIL for most of a compile, so compiling in a
thread of the user's process would slow every call made meanwhile.  A :class:`CompileJob`
compiles in a child process instead (``python -m symgrad.compile.worker``), which writes
Numba's on-disk cache next to the module file; a thread of this process waits for the
child, then loads the module from that cache (milliseconds) and warms the same call
signatures, so the first call on the compiled tier does not compile.  Jobs run one at a
time.  Children still running when the interpreter exits are terminated.

Without a usable cache directory there is nothing to share between processes; the job
then compiles in its thread.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from typing import Callable

from .cache import load_module, usable_cache_dir, write_module

_SLOTS = threading.Semaphore(1)  # one compile at a time: the machine's other cores serve calls
_CHILDREN: set = set()
_CHILDREN_LOCK = threading.Lock()


class CompileJob:
    """The compiled tier of one generated module, being built.

    Attributes:
      module: the loaded module once ready, else None.
      error: a one-paragraph description if the compile failed, else None.
    """

    def __init__(self, name: str, key: str, make_source: Callable[[], str]):
        self.name, self.key, self._make_source = name, key, make_source
        self.module = None
        self.error: str | None = None
        self._source: str | None = None
        self._source_ready = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"symgrad-compile-{name}", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None):
        """Block until the compiled module is ready (or failed); returns it (None on failure)."""
        self._done.wait(timeout)
        return self.module

    @property
    def source(self) -> str:
        """The generated module's source text (printed by the job's thread; waits for it)."""
        self._source_ready.wait()
        if self._source is None:
            raise RuntimeError(f"symgrad could not print the module of {self.name}: {self.error}")
        return self._source

    def _run(self) -> None:
        try:
            try:
                self._source = self._make_source()
            finally:
                self._source_ready.set()
            with _SLOTS:
                if usable_cache_dir() is not None:
                    path = write_module(self.name, self.key, self._source)
                    _compile_in_child(self.name, self.key, path)
                module = load_module(self.name, self.key, self._source)
                from .worker import warm

                warm(module, self.name)
            self.module = module
        except BaseException as exc:  # reported to the caller's thread by whoever reads .error
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()


def _compile_in_child(name: str, key: str, path) -> None:
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", "")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env["PYTHONPATH"]) if p)
    proc = subprocess.Popen([sys.executable, "-m", "symgrad.compile.worker", name, key, str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    with _CHILDREN_LOCK:
        _CHILDREN.add(proc)
    try:
        _, err = proc.communicate()
    finally:
        with _CHILDREN_LOCK:
            _CHILDREN.discard(proc)
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"the compile process exited with status {proc.returncode}: {' | '.join(tail)}")


@atexit.register
def _terminate_children() -> None:
    with _CHILDREN_LOCK:
        for proc in list(_CHILDREN):
            proc.kill()
