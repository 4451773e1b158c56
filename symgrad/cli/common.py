"""Shared pieces of the command line: loading functions, options, formatting, progress.

Every subcommand takes a target ``path/to/file.py:func`` or ``package.module:func``.
User errors raise :class:`CLIError`; :func:`symgrad.cli.main` prints them as one
line and exits with status 2.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import re
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np

FORMATS = ("pretty", "unicode", "latex", "python", "text")


class CLIError(Exception):
    """A user error the CLI reports in one line (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``symgrad grad: error: ... (see --help)``."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        # accept option values such as ``--range -5:5`` (argparse takes "-5:5" for an option otherwise)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- loading the user's function ---------------------------------------------------------
def _load_file(path: str):
    if not os.path.exists(path):
        raise CLIError(f"no such file: {path}")
    name = "_symgrad_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:  # sibling imports in the user's file
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise CLIError(f"syntax error in {path}:{exc.lineno}: {exc.msg}") from exc
    except Exception as exc:
        raise CLIError(f"running {path} failed: {type(exc).__name__}: {_first_line(exc)}") from exc
    return vars(module)


def load_function(target: str):
    """Resolve ``path/to/file.py:func`` or ``package.module:func`` to the function."""
    if ":" not in target:
        raise CLIError(f"expected FILE.py:FUNC or package.module:FUNC, got {target!r}")
    where, name = target.rsplit(":", 1)
    if not where or not name:
        raise CLIError(f"expected FILE.py:FUNC or package.module:FUNC, got {target!r}")
    if where.endswith(".py") or os.sep in where:
        namespace = _load_file(where)
    else:
        try:
            namespace = vars(importlib.import_module(where))
        except ImportError as exc:
            raise CLIError(f"cannot import module {where!r}: {exc}") from exc
        except SyntaxError as exc:
            raise CLIError(f"syntax error in {exc.filename}:{exc.lineno}: {exc.msg}") from exc
    if name not in namespace:
        raise CLIError(f"{where} defines no function {name!r}")
    if not callable(namespace[name]):
        raise CLIError(f"{where}:{name} is a {type(namespace[name]).__name__}, not a function")
    return namespace[name]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- options -----------------------------------------------------------------------------------
def parse_dims(text: str | None) -> dict[str, int]:
    dims: dict[str, int] = {}
    for part in filter(None, (text or "").split(",")):
        key, _, val = part.partition("=")
        if not key.strip() or not val.strip().isdigit():
            raise CLIError(f"--dims expects name=size pairs like n=3, got {part!r}")
        dims[key.strip()] = int(val)
    return dims


def parse_range(text: str) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in text.split(":"))
    except ValueError:
        raise CLIError(f"--range expects A:B with numbers A < B, got {text!r}") from None
    if not a < b:
        raise CLIError(f"--range expects A:B with A < B, got {text!r}")
    return a, b


def positional_count(fn) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        raise CLIError(f"cannot read the parameters of {fn!r}") from None
    return len([p for p in params if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


def core_shapes(fn, signature: str | None, dims: dict[str, int], default: int | None = 3):
    """(parsed signature or None, one core shape per positional argument)."""
    from ..trace.signature import parse_signature

    n = positional_count(fn)
    sig = parse_signature(signature, getattr(fn, "__name__", "function"))
    if sig is None:
        return None, [()] * n
    if len(sig.inputs) != n:
        raise CLIError(f"--signature {signature!r} has {len(sig.inputs)} input(s) but "
                       f"{fn.__name__} takes {n} argument(s)")
    missing = sorted({d for core in sig.inputs for d in core if not d.isdigit() and d not in dims})
    if missing and default is None:
        raise CLIError(f"give the core size of {', '.join(missing)} with --dims "
                       f"(e.g. --dims {','.join(m + '=3' for m in missing)})")
    shapes = [tuple(int(d) if d.isdigit() else dims.get(d, default) for d in core) for core in sig.inputs]
    return sig, shapes


def example_args(fn, signature: str | None, dims: dict[str, int], default: int | None = 3):
    _, shapes = core_shapes(fn, signature, dims, default)
    return [0.0 if s == () else np.zeros(s) for s in shapes]


def add_target(p: argparse.ArgumentParser, nargs=None) -> None:
    p.add_argument("target", metavar="FILE.py:FUNC", nargs=nargs,
                   help="the function: path/to/file.py:func or package.module:func")


def add_shape_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--signature", metavar="SIG",
                   help='gufunc signature of the function, e.g. "(n)->()" (default: every argument a scalar)')
    p.add_argument("--dims", metavar="N=K,...", help="core sizes for the signature's dimensions, e.g. n=3 (default 3)")


def add_derive_options(p: argparse.ArgumentParser, order: bool = True) -> None:
    add_target(p)
    p.add_argument("--wrt", metavar="X,Y", help="comma-separated argument names to differentiate (default: all)")
    add_shape_options(p)
    if order:
        p.add_argument("--order", type=int, default=1, metavar="N",
                       help="derivative order: 1 gradient, 2 Hessian, N >= 3 all N-th partials (scalar arguments)")
    p.add_argument("--format", choices=FORMATS, default="pretty",
                   help="formula format: pretty (ASCII art), unicode, latex, python, text (one line)")
    p.add_argument("--no-stabilize", action="store_true",
                   help="skip the numerical stabiliser (faster; prints the derivatives as derived)")
    p.add_argument("--no-simplify", action="store_true", help="do not run sympy.simplify on the closed forms")
    p.add_argument("--budget", type=float, default=1.0, metavar="SECONDS",
                   help="the stabiliser's CPU-time budget for the whole function (default 1)")
    p.add_argument("--show-code", action="store_true", help="also print the generated Numba module")


def resolve_wrt(wrt: str | None, names: list[str], fn_name: str) -> list[int]:
    if not wrt:
        return list(range(len(names)))
    chosen = [w.strip() for w in wrt.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in names]
    if unknown or not chosen:
        raise CLIError(f"--wrt {','.join(unknown) or repr(wrt)}: {fn_name} has arguments {', '.join(names)}")
    return [names.index(w) for w in chosen]


# -- formula rendering --------------------------------------------------------------------------
def render(expr, fmt: str) -> str:
    import sympy as sp

    if isinstance(expr, np.ndarray):
        expr = sp.ImmutableDenseNDimArray(expr.tolist(), expr.shape) if expr.ndim else expr[()]
    if fmt == "latex":
        return sp.latex(expr)
    if fmt == "python":
        if isinstance(expr, sp.NDimArray):
            return "[" + ", ".join(render(e, fmt) for e in expr) + "]" if expr.rank() == 1 else str(expr.tolist())
        try:
            return sp.pycode(expr)
        except Exception:  # a symgrad function sympy has no Python printer for
            return str(expr)
    if fmt == "text":
        return str(expr)
    return sp.pretty(expr, use_unicode=(fmt == "unicode"))


# -- progress ------------------------------------------------------------------------------------
STAGES = ("trace", "differentiate", "stabilise", "emit", "compile")


class Progress:
    """Stage-by-stage progress on stderr (rich), shown once a build has run for ``delay`` seconds.

    Use ``with progress.stage("stabilise", "x_bar"):`` around each step.  Nothing is
    drawn for builds shorter than ``delay``, when stderr is not a terminal (rich
    renders live displays only on terminals), or when rich is not installed.
    """

    def __init__(self, delay: float = 1.0, enabled: bool = True):
        self.delay, self.enabled = delay, enabled
        self._t0 = time.perf_counter()
        self._done: list[tuple[str, float]] = []
        self._current: tuple[str, float] | None = None
        self._live = None
        self._task = None
        self._lock = threading.Lock()
        self._timer = None

    def __enter__(self):
        if self.enabled:
            self._timer = threading.Timer(self.delay, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc):
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None
        return False

    def _start(self):
        try:
            from rich.console import Console
            from rich.progress import Progress as RichProgress, SpinnerColumn, TextColumn, TimeElapsedColumn
        except ImportError:
            return
        with self._lock:
            console = Console(stderr=True)
            if not console.is_terminal:
                return
            live = RichProgress(SpinnerColumn(), TextColumn("[bold]{task.description}"), TimeElapsedColumn(),
                                console=console, transient=True)
            live.start()
            for name, secs in self._done:
                tid = live.add_task(f"{name} ({secs:.1f} s)", total=1)
                live.update(tid, completed=1)
            if self._current is not None:
                self._task = live.add_task(self._current[0], total=1)
            self._live = live

    @contextmanager
    def stage(self, name: str, detail: str = ""):
        label = f"{name}: {detail}" if detail else name
        t = time.perf_counter()
        with self._lock:
            self._current = (label, t)
            if self._live is not None:
                self._task = self._live.add_task(label, total=1)
        try:
            yield
        finally:
            secs = time.perf_counter() - t
            with self._lock:
                self._done.append((label, secs))
                self._current = None
                if self._live is not None and self._task is not None:
                    self._live.update(self._task, completed=1, description=f"{label} ({secs:.1f} s)")
                self._task = None
