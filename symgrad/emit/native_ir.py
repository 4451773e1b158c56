"""LLVM IR of an instruction tape: the native tier's code (issue 15, point 2).

Numba compiles straight-line code at a few milliseconds per operation (its type inference
and lowering are Python), so a program of 10^4 operations takes minutes.  The tape
(:mod:`symgrad.emit.tape`) already is the program as scalar instructions in evaluation
order; printing it as LLVM IR and handing that to LLVM directly (llvmlite, the library Numba
itself uses) costs microseconds per instruction.

The IR computes exactly what the interpreter computes, bit for bit:

* ``add``, ``sub``, ``mul``, ``div`` and ``neg`` are single IEEE instructions (``fadd`` ...),
  as in the interpreter's Numba code (no fast-math flags, so LLVM may not reassociate);
  ``mov`` is a copy;
* every other opcode is a call to a C-callable function compiled by Numba from the very
  expression the interpreter runs for it (:func:`symgrad.emit.interpreter.opcode_expression`),
  named :func:`opcode_symbol`.

Layout: ``<name>_run(x, y, n, regs)`` loops over ``n`` rows of the inputs ``x``
(``n x len(in_slots)``, C order) and writes rows of ``y`` (``n x len(out_slots)``); the
instructions are split into functions of at most ``chunk`` instructions (``<name>_part<k>``),
so LLVM never sees one giant function and its work grows linearly with the program.  Values
live in SSA registers inside a part; a value read by a later part or written to ``y`` is
also stored to ``regs[r]`` (a scratch buffer of ``tape.n_regs`` elements the caller owns).
Constant registers become literals.
"""
from __future__ import annotations

import functools
import re
import zlib

import numpy as np

from .interpreter import opcode_expression
from .tape import OPCODES, Tape

__all__ = ["native_ir", "opcode_symbol", "opcode_arity", "CHUNK"]

CHUNK = 500  # instructions per function: LLVM's time per function grows faster than linearly
PAUSE_EVERY = 32  # instructions printed between two pause() calls (about 0.3 ms)

_LLVM_TYPE = {"float64": "double", "float32": "float"}
_BINARY = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_OPERANDS = ("regs[a]", "regs[b]", "regs[c]")


def opcode_symbol(name: str, dtype: str) -> str:
    """The C symbol of opcode ``name``'s function in ``dtype`` (safe characters, unique)."""
    safe = re.sub(r"[^A-Za-z0-9]", "_", name)
    return f"symgrad_op_{safe}_{zlib.crc32(name.encode()):08x}_{dtype}"


@functools.lru_cache(maxsize=None)
def opcode_arity(name: str, dtype: str = "float64") -> int:
    """How many of the operands ``a``, ``b``, ``c`` opcode ``name`` reads."""
    text = opcode_expression(name, dtype)
    return max((k + 1 for k, operand in enumerate(_OPERANDS) if operand in text), default=0)


def _literal(value: float, dtype: str) -> str:
    """An exact LLVM literal: the value's float64 bit pattern in hex (float32 values widen exactly)."""
    v = np.float64(np.asarray(value, dtype=dtype))
    return "0x%016X" % v.view(np.uint64)


class _Part:
    """The IR of one part: operand lookup with SSA values, input loads and literals."""

    def __init__(self, T: str, consts: np.ndarray, input_of: dict, dtype: str):
        self.T, self.consts, self.input_of, self.dtype = T, consts, input_of, dtype
        self.lines: list[str] = []
        self.value: dict[int, str] = {}  # register -> SSA name in this part

    def operand(self, r: int) -> str:
        if r < len(self.consts):
            return _literal(self.consts[r], self.dtype)
        v = self.value.get(r)
        if v is not None:
            return v
        T = self.T
        j = self.input_of.get(r)
        base, index = ("%x", j) if j is not None else ("%regs", r)
        self.lines += [f"  %p{r} = getelementptr inbounds {T}, {T}* {base}, i64 {index}",
                       f"  %l{r} = load {T}, {T}* %p{r}"]
        self.value[r] = f"%l{r}"
        return self.value[r]


def native_ir(tape: Tape, name: str, dtype: str, chunk: int = CHUNK, pause=None) -> tuple[str, list[str]]:
    """LLVM IR (text) of ``tape`` computing in ``dtype``, and the opcodes whose functions it
    calls (symbols :func:`opcode_symbol`).

    The module defines ``void <name>_run(T* x, T* y, i64 n, T* regs)`` (``T`` the LLVM type of
    ``dtype``; layout in the module docstring).  ``name`` must be an identifier.  ``pause``, if
    given, is called every :data:`PAUSE_EVERY` instructions (a background thread passes
    ``time.sleep(0)`` there, handing the GIL to calls waiting for it).
    """
    if not name.isidentifier():
        raise ValueError(f"native_ir: {name!r} is not an identifier")
    T = _LLVM_TYPE[dtype]
    code = np.asarray(tape.code)
    consts = np.asarray(tape.consts, dtype=np.float64)
    n = code.shape[0]
    in_slots = [int(s) for s in tape.in_slots]
    out_slots = [int(s) for s in tape.out_slots]
    input_of = {r: j for j, r in enumerate(in_slots)}
    # the last part reading each register: a value crossing parts is stored to regs
    last_part: dict[int, int] = {}
    arity = {k: opcode_arity(op, dtype) for k, op in enumerate(OPCODES)}
    for k in range(n):
        op, _, a, b, c = (int(v) for v in code[k])
        for r in (a, b, c)[:arity[op]]:
            last_part[r] = k // chunk
    outputs = set(out_slots)
    used_ops = sorted({int(op) for op in code[:, 0]}) if n else []
    called = [OPCODES[op] for op in used_ops if OPCODES[op] not in _BINARY and OPCODES[op] not in ("neg", "mov")]
    lines = [f"; Generated by symgrad from the instruction tape of {name} ({n} instructions, {dtype});",
             "; do not edit.  See symgrad/emit/native_ir.py."]
    lines += [f"declare {T} @{opcode_symbol(op, dtype)}({T}, {T}, {T}) nounwind readnone" for op in called]
    n_parts = (n + chunk - 1) // chunk
    for p in range(n_parts):
        part = _Part(T, consts, input_of, dtype)
        for k in range(p * chunk, min(n, (p + 1) * chunk)):
            if pause is not None and k % PAUSE_EVERY == 0:
                pause()
            op, o, a, b, c = (int(v) for v in code[k])
            opname = OPCODES[op]
            args = [part.operand(r) for r in (a, b, c)[:arity[op]]]
            part.lines.append(f"  ; {k}: r{o} = {opname}({', '.join(f'r{r}' for r in (a, b, c)[:arity[op]])})")
            if opname == "mov":
                part.value[o] = args[0]
                v = args[0]
            else:
                v = f"%v{k}"
                if opname in _BINARY:
                    part.lines.append(f"  {v} = {_BINARY[opname]} {T} {args[0]}, {args[1]}")
                elif opname == "neg":
                    part.lines.append(f"  {v} = fneg {T} {args[0]}")
                else:
                    full = args + [_literal(0.0, dtype)] * (3 - len(args))
                    call_args = ", ".join(f"{T} {x}" for x in full)
                    part.lines.append(f"  {v} = call {T} @{opcode_symbol(opname, dtype)}({call_args})")
                part.value[o] = v
            if last_part.get(o, -1) > p or o in outputs:
                part.lines += [f"  %s{k} = getelementptr inbounds {T}, {T}* %regs, i64 {o}",
                               f"  store {T} {v}, {T}* %s{k}"]
        lines += ["", f"define internal void @{name}_part{p}({T}* noalias nocapture readonly %x, "
                  f"{T}* noalias nocapture %regs) nounwind {{"]
        lines += part.lines + ["  ret void", "}"]
    lines += _driver(name, T, dtype, n_parts, in_slots, out_slots, consts)
    return "\n".join(lines) + "\n", called


def _driver(name, T, dtype, n_parts, in_slots, out_slots, consts) -> list[str]:
    """``<name>_run``: for each row, the parts in order, then the outputs copied to ``y``."""
    n_in, n_out = len(in_slots), len(out_slots)
    lines = ["", f"define void @{name}_run({T}* noalias nocapture readonly %x, {T}* noalias nocapture %y, "
             f"i64 %n, {T}* noalias nocapture %regs) nounwind {{",
             "entry:",
             "  %empty = icmp sle i64 %n, 0",
             "  br i1 %empty, label %done, label %row",
             "row:",
             "  %b = phi i64 [ 0, %entry ], [ %next, %row ]",
             f"  %xoff = mul i64 %b, {n_in}",
             f"  %xrow = getelementptr inbounds {T}, {T}* %x, i64 %xoff",
             f"  %yoff = mul i64 %b, {n_out}",
             f"  %yrow = getelementptr inbounds {T}, {T}* %y, i64 %yoff"]
    lines += [f"  call void @{name}_part{p}({T}* %xrow, {T}* %regs)" for p in range(n_parts)]
    input_of = {r: j for j, r in enumerate(in_slots)}
    for j, r in enumerate(out_slots):
        if r < len(consts):
            value = _literal(consts[r], dtype)
        else:
            base, index = ("%xrow", input_of[r]) if r in input_of else ("%regs", r)
            lines += [f"  %ro{j} = getelementptr inbounds {T}, {T}* {base}, i64 {index}",
                      f"  %rv{j} = load {T}, {T}* %ro{j}"]
            value = f"%rv{j}"
        lines += [f"  %yo{j} = getelementptr inbounds {T}, {T}* %yrow, i64 {j}",
                  f"  store {T} {value}, {T}* %yo{j}"]
    lines += ["  %next = add i64 %b, 1",
              "  %more = icmp slt i64 %next, %n",
              "  br i1 %more, label %row, label %done",
              "done:",
              "  ret void",
              "}"]
    return lines
