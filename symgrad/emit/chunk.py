"""Split a long straight-line kernel body into functions of bounded size.

Numba's (LLVM's) compile time grows faster than linearly with the length of one
function.  Measured here (benchmarks/bench_buildtime.py; statements ``s = s + p[k] * c``,
three operations each, in one function): 4.5 ms per statement at 50-250 statements,
5.2 ms at 500 and 14 ms at 1000, so a traced loop unrolled into 10^4 operations takes
minutes in one function but about 1.5 ms per operation as a sequence of small ones.
:func:`split_body` cuts a printed body (the lines of :func:`.printer.print_body`) at
top-level statement boundaries into parts of at most ``max_ops`` operations (a
statement's operations are counted from its text: arithmetic operators, calls and
subscripts), and never splits one statement.
Each part becomes its own ``@numba.njit`` function; it receives the values it reads
that earlier statements defined (kernel arguments, constants, output arrays and the
temporaries computed by earlier parts) and returns the temporaries that later parts
read.  The kernel then calls the parts in sequence.  The statements themselves are
unchanged, so every operation is evaluated with the same operands in the same order
and the results are bit-identical to the unsplit kernel.
"""
from __future__ import annotations

import os
import re

__all__ = ["split_body", "chunk_size", "DEFAULT_CHUNK_OPS"]

DEFAULT_CHUNK_OPS = 400  # well inside the linear range above (150-750 operations per function)

_IDENT = re.compile(r"[A-Za-z_]\w*")
_OPS = re.compile(r"[-+*/%\[(<>=]=?")
_DEF = re.compile(r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=(?!=)")


def chunk_size() -> int:
    """Operations per part: ``$SYMGRAD_CHUNK_OPS`` (a positive integer), default 400."""
    text = os.environ.get("SYMGRAD_CHUNK_OPS", "").strip()
    if not text:
        return DEFAULT_CHUNK_OPS
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"SYMGRAD_CHUNK_OPS must be a positive integer; got {text!r}")
    return n


def _statements(lines: list[str]) -> list[list[str]]:
    """Group body lines into top-level statements (a statement with its indented block and
    the comment lines just above it)."""
    out: list[list[str]] = []
    pending: list[str] = []
    for line in lines:
        if line.startswith("#"):
            pending.append(line)
        elif line[:1] in (" ", "\t") and out and not pending:
            out[-1].append(line)
        else:
            out.append(pending + [line])
            pending = []
    if pending:
        out.append(pending)
    return out


def _ops(stmt: list[str]) -> int:
    """Operations in a statement, counted from its text (at least 1)."""
    return max(1, sum(len(_OPS.findall(line)) for line in stmt if not line.lstrip().startswith("#")))


def _names_read(stmt: list[str]) -> set[str]:
    names: set[str] = set()
    for line in stmt:
        code = line.lstrip()
        if not code.startswith("#"):
            names.update(_IDENT.findall(code))
    return names


def _names_defined(stmt: list[str]) -> list[str]:
    for line in stmt:
        if not line.startswith("#"):
            m = _DEF.match(line)
            return [n.strip() for n in m.group(1).split(",")] if m else []
    return []


def split_body(lines: list[str], params: list[str], results: list[str], part_name: str,
               max_ops: int) -> tuple[list[tuple[str, list[str], list[str], list[str]]], list[str]]:
    """Cut ``lines`` into parts of at most ``max_ops`` operations (whole top-level statements).

    Args:
        lines: body lines at indentation 0 (statements; blocks indented by 4 spaces).
        params: the names the body may read without defining them (kernel parameters).
        results: names the kernel returns after the body (its scalar outputs).
        part_name: prefix of the part functions; part ``i`` is ``f"{part_name}{i}"``.
        max_ops: bound on the operations per part (a positive integer); a statement with
            more operations than that is a part on its own.

    Returns:
        ``(parts, calls)``: ``parts`` lists ``(function name, parameter names, returned
        names, body lines)`` per part, and ``calls`` the body lines that replace ``lines``
        in the kernel (one call per part).  With at most ``max_ops`` operations in all,
        ``parts`` is empty and ``calls`` is ``lines`` itself.
    """
    stmts = _statements(lines)
    weights = [_ops(s) for s in stmts]
    if sum(weights) <= max_ops:
        return [], lines
    groups: list[list[list[str]]] = [[]]
    load = 0
    for stmt, w in zip(stmts, weights):
        if groups[-1] and load + w > max_ops:
            groups.append([])
            load = 0
        groups[-1].append(stmt)
        load += w
    reads = [set().union(*(_names_read(s) for s in grp)) for grp in groups]
    defs = [[n for s in grp for n in _names_defined(s)] for grp in groups]
    available = list(params)  # in first-definition order, for readable signatures
    later_reads: list[set[str]] = [set(results)] * len(groups)
    acc = set(results)
    for i in range(len(groups) - 1, -1, -1):
        later_reads[i] = set(acc)
        acc |= reads[i]
    parts, calls = [], []
    for i, grp in enumerate(groups):
        name = f"{part_name}{i}"
        args = [n for n in available if n in reads[i]]
        returned = [n for n in dict.fromkeys(defs[i]) if n in later_reads[i]]
        body = [line for s in grp for line in s]
        parts.append((name, args, returned, body))
        call = f"{name}({', '.join(args)})"
        if len(returned) == 1:
            calls.append(f"{returned[0]} = {call}")
        elif returned:
            calls.append(f"{', '.join(returned)} = {call}")
        else:
            calls.append(call)
        available += [n for n in returned if n not in available]
    return parts, calls
