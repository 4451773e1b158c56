"""The loop nest every lowered array statement is printed in.

Generated kernels never use NumPy's array expressions or slice assignment for data
movement and accumulation: Numba compiles an explicit element loop faster and the loop
fixes the summation order (which :mod:`symgrad.emit.tape` reproduces bit for bit).  Every
such loop is printed here, so its text (``for _i0 in range(3):`` with four spaces per
level) is written once.
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["loop_nest", "element_loops", "index_vars"]

INDENT = "    "


def index_vars(rank: int) -> list[str]:
    """The loop variables ``_i0, _i1, ...`` of an element loop over ``rank`` axes."""
    return [f"_i{k}" for k in range(rank)]


def loop_nest(loops: Iterable[tuple[str, int]], pad: str = "") -> tuple[list[str], str]:
    """The ``for`` headers of a loop nest and the indentation of its body.

    Args:
      loops: ``(variable, extent)`` pairs, outermost first (an empty nest prints nothing).
      pad: the indentation the outermost header starts at.

    Returns:
      ``(lines, body_pad)``: ``for <variable> in range(<extent>):`` per loop, each indented one
      level deeper than the last, and the indentation of the statements inside the innermost.
    """
    lines = []
    for var, n in loops:
        lines.append(f"{pad}for {var} in range({n}):")
        pad += INDENT
    return lines, pad


def element_loops(shape: tuple[int, ...], pad: str = "") -> tuple[list[str], str]:
    """:func:`loop_nest` over every element of an array of ``shape`` in C (memory) order,
    with the variables of :func:`index_vars`."""
    return loop_nest(zip(index_vars(len(shape)), shape), pad)
