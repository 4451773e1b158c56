"""Compile one program into ONE Numba kernel holding f, grad, jvp, vjp, hvp (and the Hessian).

Numba's compile time (~0.1-1 s per kernel here) dominates a property test, so
instead of one kernel per transformation, :func:`combined` traces the program
once and asks :func:`symgrad.api.build.build_kernel` for every transformation on
the *same* graph (the derivative nodes are hash-consed, so e.g. the gradient is
shared by grad, hessian and hvp).  The outputs of all of them are put into one
:class:`~symgrad.emit.module.KernelDef`, emitted by symgrad's emitter, written
and imported by symgrad's cache (optionally stabilised by symgrad's stabiliser
first), exactly as :class:`symgrad.api.compiled.Compiled` does for one kind.

:meth:`Combined.call` runs the Numba *core* function of one dtype directly (no
batch loop, which would be a second Numba compile) and asserts that it is a
Numba dispatcher that compiled a specialisation: nothing runs as plain Python.
The public entry points (``sg.grad`` ...) are tested separately on fewer programs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

from symgrad.api.build import build_kernel
from symgrad.api.stabilize_pass import stabilize_kernel
from symgrad.compile.cache import cache_key, load_module
from symgrad.emit.module import KernelDef, emit_module
from symgrad.emit.names import SUFFIX, spec_name
from symgrad.emit.printer import KernelIO
from symgrad.trace.trace import trace_program

from .programs import Program

STATS = {"kernels": 0, "programs": set(), "sizes": {}, "ops": {}}


def register_program(program: Program) -> None:
    """Record a distinct program (size and ops) for the session summary."""
    if program.name in STATS["programs"]:
        return
    STATS["programs"].add(program.name)
    STATS["sizes"][program.name] = len(program.live())
    for op, k in program.count_ops().items():
        STATS["ops"][op] = STATS["ops"].get(op, 0) + k


@dataclass
class Combined:
    module: object
    kname: str
    kernel: KernelDef
    program: Program
    kinds: tuple

    def call(self, dtype: str, primals, tangents=None, cotangent=None) -> dict:
        """Run the core function in ``dtype``; returns {output name: value}."""
        dt = np.dtype(dtype).type
        core = getattr(self.module, f"{self.kname}_{SUFFIX[dtype]}")
        assert isinstance(core, Dispatcher), f"{self.kname} core is not a Numba dispatcher: {core!r}"
        assert not numba.config.DISABLE_JIT, "NUMBA_DISABLE_JIT would run generated code as Python"
        spec = getattr(self.module, spec_name(self.kname))
        values = {}
        n = self.program.n_inputs
        for k in range(n):
            values[f"x{k}"] = primals[k]
            if tangents is not None:
                values[f"x{k}_dot"] = tangents[k]
        if cotangent is not None:
            values["out_bar"] = cotangent
        args = []
        for a in self.kernel.args:
            v = values[a.name]
            args.append(dt(v) if a.shape == () else np.ascontiguousarray(v, dtype=dt))
        arr_outs = [np.empty(o.shape, dtype=dt) for o in self.kernel.outputs if o.shape != ()]
        res = core(*args, *spec.consts_for(dtype), *arr_outs)
        assert core.signatures, "the Numba core was not compiled"
        scalars = [o for o in self.kernel.outputs if o.shape == ()]
        res = list(res) if isinstance(res, tuple) else ([res] if scalars else [])
        out, it_s, it_a = {}, iter(res), iter(arr_outs)
        for o in self.kernel.outputs:
            out[o.name] = next(it_s) if o.shape == () else next(it_a)
        return out


def combined(program: Program, kinds=("jit", "grad", "jvp", "vjp", "hvp", "hessian"), *, stabilize=False,
             budget=0.25) -> Combined:
    """Trace ``program`` once, build every transformation in ``kinds`` into one kernel, compile it."""
    p = trace_program(program.fn, program.example_args(), [tuple(s) for s in program.input_shapes])
    wrt = list(range(len(p.inputs)))
    ins, outs, seen = [], [], set()
    for kind in kinds:
        k = build_kernel(p, kind, wrt).kernel
        for a in k.args:
            if a.node not in seen:  # jvp and hvp share the tangent inputs x{k}_dot (same graph node)
                seen.add(a.node)
                ins.append(KernelIO(a.name, a.node, a.shape))
        outs += [KernelIO(f"{kind}:{o.name}".replace(":", "__"), o.node, o.shape) for o in k.outputs]
    kname = f"{p.name}_all"
    kd = KernelDef(kname, f"property test kernel ({', '.join(kinds)}) of {p.name}", ins, outs)
    header = [f"property-test combined kernel: {', '.join(kinds)}"]
    if stabilize:
        header += stabilize_kernel(p.graph, kd, budget)
    key = cache_key(p.fingerprint(), "property-combined", kinds, stabilize, budget if stabilize else None)
    module = load_module(kname, key, emit_module(p.graph, [kd], header))
    STATS["kernels"] += 1
    register_program(program)
    return Combined(module, kname, kd, program, tuple(kinds))
