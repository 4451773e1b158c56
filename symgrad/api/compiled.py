"""The callable returned by ``jit``/``grad``/...: trace on first call, compile, cache.

Each distinct (argument structure, core shapes) traces once; the generated
module is cached in memory and on disk (keyed by a hash of the traced
program), so a new process reuses compiled artifacts.  Calls with plain float
arguments on scalar cores take a fast path straight into the compiled core.
"""
from __future__ import annotations

import functools
import inspect
import threading
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..compile.background import CompileJob
from ..compile.native import NativeJob, cached_tape, save_tape
from ..compile.cache import cache_key, cached_module, write_module
from ..compile.interpreter import tape_spec, warm_interpreter
from ..emit.names import spec_name
from ..errors import ArgumentError, SignatureError, SymgradWarning, format_error
from ..trace.captures import Captures
from ..trace.pytree import tree_flatten
from ..trace.signature import parse_signature
from ..trace.trace import TracedProgram, trace_default, trace_program
from ..runtime.gufunc import PLAIN_TYPES
from ..trace.tracer import Tracer
from .argnums import leaf_ranges, normalize_argnums
from .transformations import Assembly, transformation
from .pipeline import build, building
from .tiers import TIER_MIN_OPS, Tiered, tiered_default

# Tracing, differentiating and loading run under one re-entrant lock: nested transformations build
# inside an outer build on the same thread, and a first call racing from many threads builds once.
_BUILD_LOCK = threading.RLock()


@dataclass
class Entry:
    """One compiled transformation at one argument structure and core shapes.

    ``fn`` is the generated module's entry point, or for a large program still being compiled
    in the background, a :class:`~symgrad.api.tiers.Tiered` entry point answering from the
    interpreter, then from native code (``tiered``).
    """

    fn: Callable
    assemble: Callable
    program: TracedProgram
    printed: str | None  # the module's source text (None until asked for: printing costs time)
    identity: bool
    key: str = ""  # the generated module's cache key (a Dask KernelRecipe carries it to workers)
    tiered: Tiered | None = None
    make_source: Callable[[], str] | None = None

    @property
    def source(self) -> str:
        """The generated module's source text."""
        if self.printed is None:
            self.printed = self.make_source()
        return self.printed

    @property
    def source_path(self) -> str:
        """Path of the generated module's file (if the module was not compiled, its text written
        now to the cache's ``sources/`` folder)."""
        if self.tiered is not None and self.tiered.tier != "compiled":
            path = write_module(self.tiered.name, self.key, self.source, subdir="sources")
            if path is not None:
                return str(path)
            self.promote(wait=True, module=True)
        return self.fn.__globals__["__file__"]

    @property
    def tier(self) -> str:
        """``"compiled"`` (the generated module), ``"native"`` or ``"interpreter"``: the tier
        answering calls now."""
        return "compiled" if self.tiered is None else self.tiered.tier

    def promote(self, wait: bool = False, module: bool = False) -> bool:
        """Make ``fn`` the generated module's entry point if that module is compiled (with
        ``module``, compile it; with ``wait``, wait for it); True if ``fn`` is that entry point.
        Without ``module``, ``wait`` waits for the native tier instead.

        Raises:
          RuntimeError: with ``wait``, the background compile failed (calls keep working on
            the interpreter tier).
        """
        t = self.tiered
        if t is None:
            return True
        if module:
            if wait:
                t.wait_module()
            else:
                t.module_job()
        elif wait:
            t.wait()
        job = t.job
        if job is None or job.module is None:
            return False
        self.fn = getattr(job.module, t.name)
        self.tiered = None
        return True


class Compiled:
    """State of a compiled transformation of a user function (see :func:`symgrad.jit` etc.).

    Calling it traces and compiles on the first call for each argument structure
    and core shapes (:meth:`_call`).  Users receive :attr:`public`, a
    :class:`functools.partial` whose target starts as :meth:`_call`.  Once a call has
    shown that the generated module's entry point can serve calls directly (scalar
    cores, plain positional arguments, results needing no restructuring), the
    partial's target is swapped to that entry point, so a call costs no Python frame
    of ours (an exact ``functools.partial`` is the cheapest callable CPython offers
    for this).  The entry point sends anything that is not a plain number or array
    (pytrees, tracers of an enclosing transformation) back to :meth:`_call` through
    its spec's ``fallback``.
    """

    def __init__(self, fn, kind: str, signature=None, argnums=0, stabilize=True, parallel=False,
                 tiered: bool | None = None):
        if not callable(fn):
            raise TypeError(f"expected a callable to transform; got {type(fn).__name__}")
        self.fn, self.kind, self.argnums = fn, kind, argnums
        self.transformation = transformation(kind)
        self.name = getattr(fn, "__name__", "function")
        self.signature = parse_signature(signature, self.name)
        self.stabilize, self.parallel, self.tiered = stabilize, parallel, tiered
        self._entries: dict = {}
        self._elementwise: dict = {}
        self._captures: Captures | None = None  # what the traces read from outside the arguments  # with no signature: argument structure -> elementwise? (trace_default)
        self.plain_entries: dict = {}  # core shapes -> entry, for calls with plain ndarray arguments (hvp)
        call = self._call
        self.public = functools.partial(lambda *args, **kwargs: call(args, kwargs))
        self.public.__dict__.update(
            __doc__=f"symgrad.{kind} of {self.name} (compiled on first call; see symgrad.{kind})",
            compiled=self, entry_for=self.entry_for, source=self.source, kind=kind, fn=fn,
            wait_compiled=self.wait_compiled, sum=self.sum)

    def __call__(self, *args):
        return self.public(*args)

    def _route(self, target) -> None:
        """Make calls of :attr:`public` go to ``target`` (a generated module's entry point)."""
        self.public.__setstate__((target, (), {}, self.public.__dict__))

    def _call(self, args, kwargs=None):
        if kwargs:
            args = self._bind_keywords(args, kwargs)
        leaves, in_tree = tree_flatten(args)
        if any(isinstance(leaf, Tracer) for leaf in leaves):
            from .nested import call_traced

            return call_traced(self, args)
        if _has_dask(leaves):  # lazy: one dask.array.apply_gufunc over the compiled kernel
            entry = self.entry_for(args, leaves, in_tree)
            entry.promote(wait=True, module=True)  # workers load the generated module
            return entry.assemble(run_entry(entry, leaves, self.name))
        entry = self.entry_for(args, leaves, in_tree)
        if entry.tiered is not None and entry.tiered.job is not None and entry.promote():
            self._try_route(entry, in_tree, leaves)
        # leaves that are neither plain nor tracers (array-likes) are converted here, so the entry
        # point's fallback to this method cannot recur
        leaves = [leaf if isinstance(leaf, PLAIN_TYPES) else np.asarray(leaf) for leaf in leaves]
        return entry.assemble(entry.fn(*leaves))

    def sum(self, *args, **kwargs):
        """The results of ``f(*args)`` summed over every batch (loop) dimension, in one pass.

        For a per-sample function (``signature="(d),(d),(),()->()"`` or an elementwise one) this is
        ``f(*args)`` with each result summed over its leading batch axes, e.g. ``(loss.sum(),
        grad.sum(axis=0))`` for ``value_and_grad``, but no per-row result is ever stored: the
        kernel adds each row's results into float64 partial sums of 256 rows
        (:mod:`symgrad.emit.batch_sum`).  With Dask arrays among the arguments the result is lazy:
        one task per chunk returns that chunk's partial sums and Dask tree-reduces them; the
        graph never holds a per-row array (:func:`symgrad.api.dask_arrays.apply_entry_sum`).

        Args:
          *args, **kwargs: as for ``f`` (NumPy or Dask arrays, Python numbers, pytrees of them),
            shaped ``batch + core``; batch shapes broadcast together.
        Returns:
          ``f``'s result structure with every leaf shaped ``out_core`` (no batch axes): NumPy
          values, or 0-d and ``out_core``-shaped Dask arrays when an argument is a Dask array.
          float32 if every non-Python-number argument is float32 (summed in float64, rounded
          once), else float64.  An empty batch sums to zeros.
        Raises:
          ShapeError: arguments' batch shapes do not broadcast, or (Dask) a core axis is split
            over several chunks.
          DTypeError: an argument is complex or not numeric.
          ArgumentError: called on symbolic values inside another transformation.
        """
        from .batch_sum import sum_entry

        if kwargs:
            args = self._bind_keywords(args, kwargs)
        leaves, in_tree = tree_flatten(args)
        if any(isinstance(leaf, Tracer) for leaf in leaves):
            raise ArgumentError(format_error(
                f"{self.name}.sum cannot be traced by an enclosing transformation",
                "the summing kernels run on arrays, not on symbolic values",
                f"inside a traced function, call {self.name}(...) and sum the result with np.sum"))
        entry = self.entry_for(args, leaves, in_tree)
        entry.promote(wait=True, module=True)  # the summing kernels call the generated module's cores
        if _has_dask(leaves):
            from .dask_arrays import apply_entry_sum

            return entry.assemble(apply_entry_sum(entry, list(leaves), self.name))
        leaves = [leaf if isinstance(leaf, PLAIN_TYPES) else np.asarray(leaf) for leaf in leaves]
        return entry.assemble(sum_entry(entry, leaves))

    def refresh(self) -> None:
        """Forget every trace when a number or array the function reads from outside its arguments
        (a global, a closure cell, ``self.w``) changed since it was traced (see symgrad.trace.captures).
        Called before every lookup of a compiled entry (:meth:`entry_for`, the HVP's fast path)."""
        if not self._captures:
            return
        with _BUILD_LOCK:
            if self._captures and self._captures.changed():
                self._entries.clear()
                self._elementwise.clear()
                self.plain_entries.clear()
                self._captures = None  # taken again by the next build

    def _bind_keywords(self, args, kwargs) -> tuple:
        """Keyword arguments moved to their positions, as Python would bind them."""
        try:
            sig = inspect.signature(self.fn)
            bound = sig.bind(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            raise ArgumentError(format_error(
                f"{self.name} cannot take the keyword argument(s) {', '.join(kwargs)}: {exc}",
                "symgrad binds keyword arguments to the function's positional parameters",
                "pass the arguments positionally")) from None
        params = list(sig.parameters.values())
        if bound.kwargs or any(params[i].kind not in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD)
                               for i in range(len(bound.args))):
            raise ArgumentError(format_error(
                f"{self.name}: keyword-only and variadic parameters cannot be traced "
                f"(got keyword argument(s) {', '.join(kwargs)})",
                "compiled functions take the values they differentiate positionally",
                "make them positional parameters, or close over constants (functools.partial)"))
        return tuple(bound.args)

    def entry_for(self, args, leaves=None, in_tree=None) -> Entry:
        """The compiled entry for arguments structured like ``args`` (building it if new; every
        trace is dropped first if a value the function reads from outside changed)."""
        self.refresh()
        if leaves is None:
            leaves, in_tree = tree_flatten(tuple(args))
        program = None
        if self.signature is not None:
            cores, _ = self.signature.bind([np.shape(l) for l in leaves], self.name)
        elif self._elementwise.get(in_tree, True):
            cores = [()] * len(leaves)  # elementwise (or not yet known): ufunc broadcasting
        else:
            cores = [np.shape(l) for l in leaves]  # JAX's semantics: each core is the whole shape
        key = (in_tree, tuple(map(tuple, cores)))
        entry = self._entries.get(key)
        if entry is None:
            with _BUILD_LOCK, building():  # threads racing on a first call: one builds, the others reuse it
                if self.signature is None and in_tree not in self._elementwise:
                    program = trace_default(self.fn, args, [np.shape(l) for l in leaves])
                    self._elementwise[in_tree] = program.elementwise
                    cores = [program.graph.shape(i) for i in program.inputs]
                    key = (in_tree, tuple(map(tuple, cores)))
                entry = self._entries.get(key)
                if entry is None:
                    if self._captures is None:
                        self._captures = Captures(self.fn)
                    entry = self._entries[key] = self._build(args, in_tree, cores, program)
                    if entry.tiered is None:
                        self._try_route(entry, in_tree, leaves)
        return entry

    def _try_route(self, entry: Entry, in_tree, leaves) -> None:
        """Send calls straight to the compiled entry point when it can serve them (see the class).
        Not for vjp, jvp and hvp kernels: they take inputs (cotangents, tangents) besides the
        arguments of :attr:`public`."""
        if (self.kind not in ("vjp", "jvp", "hvp") and entry.identity and in_tree.kind == "tuple"
                and self._elementwise.get(in_tree, True)
                and not self._captures
                and all(c.kind == "leaf" for c in in_tree.children)
                and _fixed_arity(self.fn) == len(leaves)
                and not any(isinstance(leaf, Tracer) for leaf in leaves)
                and _same_parameters(entry.fn, self.fn)):
            spec = entry.fn.__globals__[spec_name(entry.fn.__name__)]
            spec.fallback = self._call
            self._route(entry.fn)

    def wait_compiled(self) -> None:
        """Block until every entry built so far runs on a compiled tier: native code for the large
        programs that answered from the interpreter, the generated module otherwise (benchmarks,
        tests).

        Raises:
          RuntimeError: a background compile failed (calls still work, on the interpreter tier).
        """
        for entry in list(self._entries.values()):
            entry.promote(wait=True)

    def _use_tiers(self, n_ops: int) -> bool:
        """Answer from the interpreter while compiling in the background? (option, then
        ``$SYMGRAD_TIERED``, then program size)."""
        if self.tiered is not None:
            return bool(self.tiered)
        mode = tiered_default()
        return mode == "1" or (mode == "auto" and n_ops >= TIER_MIN_OPS)

    def _build(self, args, in_tree, cores, program: TracedProgram | None = None) -> Entry:
        if program is None:
            program = trace_program(self.fn, args, [tuple(c) for c in cores])
        self._check_outputs(program)
        nums, single = normalize_argnums(self.argnums, len(args), self.name)
        ranges = leaf_ranges(in_tree)
        wrt = self.transformation.wrt(len(program.inputs), nums, ranges)
        key = cache_key(program.fingerprint(), program.arg_names, self.kind, wrt, single, self.stabilize,
                        self.parallel)
        kname = f"{program.name}_{self.kind}"
        module = cached_module(kname, key)
        tiered = source = None
        tape = cached_tape(key) if module is None and self._use_tiers(TIER_MIN_OPS) else None
        if tape is not None:  # built before as a large program: its tape and native code are on disk
            make_source = _printer(program, self.kind, wrt, self.stabilize, self.parallel)
        elif module is None:
            b = build(program, self.kind, wrt, stabilize=self.stabilize, parallel=self.parallel)
            tape = b.tape() if self._use_tiers(b.n_ops) else None
            make_source = b.source
            if tape is None:
                _warn_if_large(program, b.n_ops, kname)
                module = b.load(key)
            else:
                save_tape(key, tape)
        if tape is not None:  # first calls from the interpreter; native code compiled in the background
            warm_interpreter()
            fn = tiered = Tiered(kname, tape_spec(kname, tape), lambda: NativeJob(kname, key, tape),
                                 lambda: CompileJob(kname, key, make_source))
            if self.parallel:  # the native code loops over a batch on one thread; the module in parallel
                tiered.module_job()
        if module is not None:
            fn, source = getattr(module, kname), module.__symgrad_source__
        assembly = Assembly(program, nums, single, ranges, wrt)
        t = self.transformation
        return Entry(fn, lambda flat: t.assemble(assembly, flat), program, source, t.identity(assembly), key,
                     tiered, None if tiered is None else make_source)

    def _check_outputs(self, p: TracedProgram) -> None:
        sig = self.signature
        if sig is None:
            return
        shapes = [p.graph.shape(o) for o in p.outputs]
        if len(shapes) != len(sig.outputs) or any(len(s) != len(d) for s, d in zip(shapes, sig.outputs)):
            raise SignatureError(format_error(
                f"{self.name} returned core shape(s) {shapes}, but signature {sig.text!r} declares "
                f"{len(sig.outputs)} output(s) with core dimensions {list(sig.outputs)}",
                "outputs must match the signature's right-hand side", "fix the signature or the return value"))

    def source(self, *args) -> str:
        """The generated source for calling with ``args`` (compiling if needed)."""
        return self.entry_for(args).source




def _printer(program: TracedProgram, kind: str, wrt, stabilize, parallel) -> Callable[[], str]:
    """The generated module's source, built and printed on first use (a large program loaded
    from its cached tape has not been differentiated in this process)."""
    @functools.lru_cache(maxsize=1)
    def source() -> str:
        return build(program, kind, wrt, stabilize=stabilize, parallel=parallel, copy=True).source()
    return source


LARGE_KERNEL_NODES = 50_000


def _warn_if_large(p: TracedProgram, n: int, name: str) -> None:
    """Say before a long Numba compile in the calling thread that it will be long.  Straight-line
    code is compiled in parts of bounded size (symgrad.emit.chunk), so the compile grows linearly,
    but Numba spends a few milliseconds per operation: 50000 operations take minutes."""
    if n > LARGE_KERNEL_NODES:
        warnings.warn(SymgradWarning(
            f"{name} has {n} operations (function traced at {p.origin}); Numba compiles about "
            f"1000 operations per second, so expect a compile of a minute or more. "
            f"Vectorise Python loops over array elements with array operations (slicing, np.sum, @)."),
            stacklevel=4)


def _fixed_arity(fn) -> int:
    """Number of positional parameters if ``fn`` takes exactly that many (no defaults, no *args)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return -1
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.default is not p.empty
           for p in params):
        return -1
    return len(params)


def _same_parameters(entry_fn, fn) -> bool:
    """The generated entry point has ``fn``'s parameter names, so keyword calls bind alike."""
    try:
        return list(inspect.signature(entry_fn).parameters) == list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False


def _has_dask(leaves) -> bool:
    """A leaf is a Dask array (checked by module name: Dask is imported only when it is used)."""
    return any(type(leaf).__module__.startswith("dask.") for leaf in leaves)


def run_entry(entry: Entry, leaves, fn_name: str):
    """``entry.fn(*leaves)``, or with a Dask array among ``leaves`` its lazy Dask equivalent
    (:func:`symgrad.api.dask_arrays.apply_entry`)."""
    if _has_dask(leaves):
        from .dask_arrays import apply_entry

        entry.promote(wait=True, module=True)  # workers load the generated module
        return apply_entry(entry, list(leaves), fn_name)
    return entry.fn(*leaves)
