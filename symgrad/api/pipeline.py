"""The build pipeline: a traced program and a transformation in, a structured build out.

trace -> (max-shift reductions) -> differentiate -> stabilise -> {print, lower to a tape, load}

Every consumer builds through :func:`build`: the compiled API (:class:`~.compiled.Compiled`),
``symgrad.trace(...).source()`` and ``.rewrites()`` (:class:`~.traced.Traced`), the CLI's
formulas (:mod:`symgrad.cli.derive`) and the ahead-of-time compiler (:mod:`symgrad.aot`).  They
differ only in what they read from the :class:`Build`: its kernel and rewrite records, its
source text, its tape (the interpreter tier) or its loaded module.
"""
from __future__ import annotations

import contextlib
import gc
import itertools
from dataclasses import dataclass, field

from typing import Callable

from ..compile.cache import cached_module, load_module
from ..compile.native import cached_tape, native_spec, save_tape
from ..emit.module import KernelDef, emit_module
from ..emit.names import Namespace, kernel_names
from ..emit.printer import KernelIO
from ..emit.tape import Tape, kernel_tape
from ..runtime.gufunc import gufunc_call
from ..trace.trace import TracedProgram
from ..transforms.higher import gradient_nodes
from .build import build_kernel, kernel_header
from .primal_pass import primal_rewrites
from .primal_seeds import PrimalSeeds
from .stabilize_pass import budget_of, stabilize_kernel
from .transformations import scalar_output

__all__ = ["Build", "build", "build_higher_order", "build_outputs", "building", "cached_or_built",
           "native_or_module"]


@contextlib.contextmanager
def building():
    """Python's cyclic garbage collector paused while a program is traced and built.

    A build allocates one node, one tracer and a few tuples per traced operation, none of them
    garbage until the build ends; with the collector on, its full passes over the growing heap
    cost about a third of the time to a first result at 10^4 operations.  Reference counting
    still frees everything acyclic meanwhile; the collector resumes (if it was on) afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class Build:
    """One transformation of one traced program, built.

    Attributes:
      program: the program; its graph now also holds the derivative and stabilised nodes.
      kind: the transformation (:data:`symgrad.api.transformations.KINDS`).
      wrt: indices into ``program.inputs`` of the differentiated leaves.
      kernel: the kernel definition: arguments, outputs (graph nodes), rewrite records
        (``kernel.rewrites``: ``(output name, RewriteRecord)``), stabiliser CPU seconds.
      header: the generated module's header comment lines (origin, cores, max shifts, the
        stabiliser's summary).
      stabilizer_notes: the stabiliser's summary lines alone (budget, regions not searched).
      n_ops: operations the kernel's outputs depend on.
      derived: the output nodes as differentiated, before the stabiliser rewrote them.
    """

    program: TracedProgram
    kind: str
    wrt: list
    kernel: KernelDef
    header: list = field(default_factory=list)
    stabilizer_notes: list = field(default_factory=list)
    n_ops: int = 0
    derived: list = field(default_factory=list)  # output nodes as differentiated, before stabilising
    _source: str | None = None

    @property
    def name(self) -> str:
        return self.kernel.name

    def source(self) -> str:
        """The generated module's text (printed once)."""
        if self._source is None:
            self._source = emit_module(self.program.graph, [self.kernel], self.header)
        return self._source

    def tape(self) -> Tape | None:
        """The kernel as an interpreter tape, or None if an op has no tape lowering."""
        return kernel_tape(self.program.graph, self.kernel)

    def load(self, key: str):
        """The generated module, written to the cache under ``key`` and imported."""
        return load_module(self.name, key, self.source())


def build(program: TracedProgram, kind: str, wrt: list, *, stabilize: bool | float = True,
          parallel: bool = False, copy: bool = False) -> Build:
    """Differentiate ``program`` for ``kind`` and stabilise the result.

    Args:
      program: a traced program (:func:`symgrad.trace.trace.trace_program`).
      kind: transformation name (``"jit"``, ``"grad"``, ``"hessian"``, ...).
      wrt: indices into ``program.inputs`` to differentiate.
      stabilize: False, True (the default budget, ``$SYMGRAD_STABILIZE_BUDGET``) or a budget
        in CPU seconds for the whole program.
      parallel: batch loops with ``numba.prange``.
      copy: build on a copy of the program (the caller keeps its graph unchanged).
    Raises:
      SignatureError: ``kind`` needs one scalar output and the program has another.
    """
    if copy:
        program = program.copy()
    rewritten = []
    if stabilize:  # log-sum-exp/softmax across a reduction, fused special functions: before differentiation
        program.outputs, rewritten = primal_rewrites(program.graph, program.outputs)
    kernel = build_kernel(program, kind, wrt, parallel).kernel
    return _stabilized(program, kind, wrt, kernel, kernel_header(program, kind) + rewritten, stabilize)


def build_higher_order(program: TracedProgram, wrt: list, order: int, *, stabilize: bool | float = True) -> Build:
    """Every distinct order-``order`` partial derivative of a scalar function of scalar arguments
    (repeated reverse mode; outputs ``d<order>_out_d_x_d_y...``), stabilised as :func:`build`.

    Raises:
      SignatureError: the program does not have one scalar output.
      ValueError: a differentiated argument is not a scalar.
    """
    g = program.graph
    rewritten = []
    if stabilize:  # as in build
        program.outputs, rewritten = primal_rewrites(g, program.outputs)
    out = scalar_output(program, f"order-{order} derivatives")
    if any(g.shape(program.inputs[k]) != () for k in wrt):
        raise ValueError(f"order-{order} derivatives need scalar arguments")
    memo = {(): out}

    def partial(idx):
        if idx not in memo:
            memo[idx] = gradient_nodes(g, partial(idx[:-1]), [program.inputs[idx[-1]]])[0]
        return memo[idx]

    outs = [KernelIO(f"d{order}_out" + "".join(f"_d_{program.arg_names[k]}" for k in combo), partial(combo), ())
            for combo in itertools.combinations_with_replacement(wrt, order)]
    ins = [KernelIO(n, i, g.shape(i)) for n, i in zip(program.arg_names, program.inputs)]
    kernel = KernelDef(f"{program.name}_d{order}", f"Order-{order} partial derivatives of {program.name}", ins, outs)
    return _stabilized(program, f"d{order}", wrt, kernel, kernel_header(program, f"order-{order} partials") + rewritten,
                       stabilize)


def build_outputs(program: TracedProgram, kind: str, wrt: list, outputs: Callable, *,
                  stabilize: bool | float = True) -> Build:
    """A kernel of the program's arguments whose outputs the caller adds to the graph (compressed
    seeds, sparse entries), stabilised and described as :func:`build` does.

    Args:
      program: the traced program (its graph grows).
      kind: the kernel's kind, used in its name ``<program>_<kind>`` and header.
      wrt: indices into ``program.inputs`` of the differentiated leaves.
      outputs: ``outputs(g, fresh) -> (doc, extra_inputs, outputs)``: builds the output nodes in
        the graph ``g`` and returns the kernel's docstring, its arguments beyond the program's
        and its outputs (lists of :class:`~symgrad.emit.printer.KernelIO`); ``fresh(base)``
        returns a kernel-unique variable name.
      stabilize: as in :func:`build`.
    """
    g = program.graph
    kname = f"{program.name}_{kind}"
    ns = Namespace(kernel_names(kname))
    ins = [KernelIO(ns.fresh(n), i, g.shape(i)) for n, i in zip(program.arg_names, program.inputs)]
    doc, extra, outs = outputs(g, ns.fresh)
    kernel = KernelDef(kname, doc, ins + list(extra), list(outs))
    return _stabilized(program, kind, wrt, kernel, kernel_header(program, kind), stabilize)


def cached_or_built(name: str, key: str, make: Callable[[], Build]):
    """The generated module ``name`` under cache ``key``: from the cache, or built by ``make()``,
    written and imported."""
    module = cached_module(name, key)
    return module if module is not None else make().load(key)


def native_or_module(name: str, key: str, make: Callable[[], Build]) -> Callable:
    """Entry point ``fn(*args)`` of a scalar-level kernel: native code (LLVM from its instruction
    tape, :mod:`symgrad.compile.native`; compiled in well under a second where Numba needs minutes
    for thousands of scalar statements) when the kernel lowers to a tape, else the generated
    Numba module.  The tape, the object code and the module are cached under ``key``; the values
    are the module's, bit for bit (``tests/test_tiers.py``).
    """
    module = cached_module(name, key)
    if module is not None:
        return getattr(module, name)
    tape = cached_tape(key)
    if tape is None:
        b = make()
        tape = b.tape()
        if tape is None:
            return getattr(b.load(key), name)
        save_tape(key, tape)
    spec = native_spec(name, tape, key)
    return lambda *args: gufunc_call(spec, args)


def _stabilized(program, kind, wrt, kernel: KernelDef, header: list, stabilize) -> Build:
    derived = [o.node for o in kernel.outputs]
    notes = []
    if stabilize:
        seeds = PrimalSeeds(program.graph, program.outputs, kind) if kind != "jit" else None
        notes = stabilize_kernel(program.graph, kernel, budget_of(stabilize), seeds)
    n_ops = len(program.graph.ancestors([o.node for o in kernel.outputs]))
    return Build(program, kind, list(wrt), kernel, header + notes, notes, n_ops, derived)
