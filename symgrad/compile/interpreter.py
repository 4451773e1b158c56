"""Load the interpreter tier and call it like a generated module's batch kernels.

:func:`tape_spec` wraps a :class:`~symgrad.emit.tape.Tape` in a
:class:`~symgrad.runtime.gufunc.GufuncSpec`, so a call on the interpreter tier broadcasts,
picks the dtype and checks shapes exactly as the compiled entry point does
(:func:`symgrad.runtime.gufunc.gufunc_call`).
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np

from ..emit.interpreter import interpreter_source
from ..emit.tape import Tape
from ..runtime.gufunc import GufuncSpec
from .cache import cache_key, load_module

_LOAD_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def interpreter_module():
    """The interpreter module, loaded (and on first use on this machine, compiled) once."""
    source = interpreter_source()
    return load_module("symgrad_interpreter", cache_key("interpreter", source), source)


def warm_interpreter() -> None:
    """Compile (or load from Numba's cache) both dtype variants of the interpreter now, so that
    a first call never waits for it.  Safe to call from several threads."""
    with _LOAD_LOCK:
        mod = interpreter_module()
        for dtype, run in (("float64", mod.run_f64), ("float32", mod.run_f32)):
            code = np.zeros((0, 5), dtype=np.int32)
            slots = np.zeros(0, dtype=np.int64)
            run(code, np.zeros(1, dtype=dtype), 1, slots, np.zeros((1, 0), dtype=dtype), slots,
                np.zeros((1, 0), dtype=dtype))


class _TapeBatch:
    """A batch kernel over a tape: ``kernel(*inputs, *outputs)``, each ``(n, *core)``, like the
    ``<name>_<dtype>_batch`` functions of a generated module."""

    def __init__(self, tape: Tape, dtype: str):
        tape = tape.for_dtype(dtype)
        self.tape, self.dtype = tape, dtype
        self.compute = "float64" if (dtype == "float32" and tape.widen_float32) else dtype
        self.init = tape.consts.astype(self.compute)
        self.n_in = len(tape.in_shapes)
        self.out_sizes = [math.prod(s) for s in tape.out_shapes]

    def __call__(self, *arrays):
        tape = self.tape
        ins, outs = arrays[:self.n_in], arrays[self.n_in:]
        n = outs[0].shape[0]
        if ins:
            X = np.concatenate([np.asarray(a, dtype=self.compute).reshape(n, -1) for a in ins], axis=1)
        else:
            X = np.zeros((n, 0), dtype=self.compute)
        Y = np.empty((n, tape.out_slots.size), dtype=self.compute)
        mod = interpreter_module()
        run = mod.run_f64 if self.compute == "float64" else mod.run_f32
        run(tape.code, self.init, tape.n_regs, tape.in_slots, np.ascontiguousarray(X), tape.out_slots, Y)
        start = 0
        for o, size in zip(outs, self.out_sizes):
            o.reshape(n, size)[...] = Y[:, start:start + size]
            start += size


def tape_spec(name: str, tape: Tape) -> GufuncSpec:
    """A gufunc spec whose kernels run ``tape`` on the interpreter (float64 and float32)."""
    return GufuncSpec(name=name, in_cores=tape.in_shapes, out_cores=tape.out_shapes,
                      kernels={d: _TapeBatch(tape, d) for d in ("float64", "float32")})
