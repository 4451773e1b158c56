"""Source of the per-program helpers of double-double regions (``_dd_region_<hash>``).

Each ``dd_region`` node of a float64 kernel prints as a call to a helper generated from its
program (:mod:`symgrad.ir.ddprogram`): one statement per instruction, each value a named pair
``t<k>_hi, t<k>_lo``, calling the scalar double-double functions of :mod:`symgrad.ir.ddmath`
(copied into the module as ``_dd_add``, ``_dd_exp`` ...), and one rounding at the end::

    @numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
    def _dd_region_5d0c1e2f3a4b(a0):
        \"\"\"a0 + exp(a0) + 1
        in double-double (Dekker 1971; Joldes, Muller & Popescu 2017), rounded once to float64:
        3 dd operations.
        \"\"\"
        t1_hi, t1_lo = a0, 0.0
        t2_hi, t2_lo = _dd_exp(t1_hi, t1_lo)
        ...
        return t4_hi + t4_lo

The text holds only names from :data:`symgrad.ir.ddprogram.INSTRUCTIONS`, integers and
float literals: no user text.
"""
from __future__ import annotations

import re

import sympy as sp

from ..ir.ddprogram import (BINARY, UNARY, bound_spec, has_tails, operation_count, program_of, to_sympy, trusted_bound,
                            without_tails)

PATTERN = re.compile(r"\b_dd_region_[0-9a-f]{12}(?=\()")
# instruction -> the generated module's copy of its ddmath function ("exp" -> "_dd_exp"; neg and sub are inline)
_CALLS = {op: "_" + fn.__name__ for op, fn in {**UNARY, **BINARY}.items() if fn is not None}
JIT = '@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)'


def region_helpers(text: str) -> list[str]:
    """Names of the region helpers ``text`` calls, in order of first appearance."""
    return list(dict.fromkeys(PATTERN.findall(text)))


def helper_source(name: str) -> str:
    """Source of helper ``name`` (a name :func:`symgrad.ir.ddprogram.helper_name` gave).

    A program with first-order tails also computes each value's error bound ``s<k>``
    (:func:`symgrad.ir.ddprogram.bound_spec`) and, where the result's exceeds the trusted bound,
    computes the region again with dd functions (``u<k>_hi, u<k>_lo``), as
    :func:`symgrad.ir.ddprogram.run` does.

    Raises:
      KeyError: ``name`` is not a region helper of this process.
    """
    program = program_of(name)
    n_in = 1 + max((ins[1] for ins in program if ins[0] == "input"), default=-1)
    params = [f"a{i}" for i in range(n_in)]
    shown = to_sympy(program, [sp.Symbol(p) for p in params])
    tails = has_tails(program)
    how = ["    exp, expm1, log, log1p in float64 with a first-order tail and an error bound (s<k>);",
           "    computed again with dd functions (u<k>) where the bound shows cancellation."] if tails else []
    lines = ["", JIT, f"def {name}({', '.join(params)}):", f'    """{shown}',
             "    in double-double (Dekker 1971; Joldes, Muller & Popescu 2017), rounded once to float64:",
             f"    {operation_count(program)} dd operations.", *how, '    """']
    last = len(program) - 1
    if not tails:
        lines += _statements(program, params, "t")
        lines.append(f"    return t{last}_hi + t{last}_lo")
        return "\n".join(lines) + "\n"
    for k, (statement, ins) in enumerate(zip(_statements(program, params, "t"), program)):
        lines += [statement, f"    s{k} = {_bound(ins, k)}"]
    lines += [f"    if t{last}_hi - t{last}_hi != 0.0 or s{last} <= {trusted_bound(program)!r} * abs(t{last}_hi):",
              f"        return t{last}_hi + t{last}_lo", "    # the bound shows cancellation: dd functions"]
    lines += _statements(without_tails(program), params, "u")
    lines.append(f"    return u{last}_hi + u{last}_lo")
    return "\n".join(lines) + "\n"


def _statements(program: tuple, params: list[str], v: str) -> list[str]:
    """One statement per instruction: ``<v><k>_hi, <v><k>_lo = ...``."""
    hi = lambda j: f"{v}{j}_hi"  # noqa: E731
    lo = lambda j: f"{v}{j}_lo"  # noqa: E731
    out = []
    for k, ins in enumerate(program):
        op = ins[0]
        if op == "input":
            rhs = f"{params[ins[1]]}, 0.0"
        elif op == "const":
            rhs = f"{ins[1]!r}, {ins[2]!r}"
        elif op == "neg":
            rhs = f"-{hi(ins[1])}, -{lo(ins[1])}"
        elif op == "sub":
            rhs = f"_dd_add({hi(ins[1])}, {lo(ins[1])}, -{hi(ins[2])}, -{lo(ins[2])})"
        elif op == "powi":
            rhs = f"_dd_powi({hi(ins[1])}, {lo(ins[1])}, {int(ins[2])})"
        elif len(ins) == 3:
            rhs = f"{_CALLS[op]}({hi(ins[1])}, {lo(ins[1])}, {hi(ins[2])}, {lo(ins[2])})"
        else:
            rhs = f"{_CALLS[op]}({hi(ins[1])}, {lo(ins[1])})"
        out.append(f"    {hi(k)}, {lo(k)} = {rhs}")
    return out


def _bound(ins: tuple, k: int) -> str:
    """The right-hand side of instruction ``k``'s error bound ``s<k>``."""
    name, refs = bound_spec(ins, k)
    operands = [f"t{j}_hi" if kind == "hi" else f"s{j}" if kind == "s" else repr(j) for kind, j in refs]
    if name is None:
        return "0.0"
    if name == "copy":
        return operands[0]
    if name == "sum":
        return " + ".join(operands)
    return f"_{name}({', '.join(operands)})"
