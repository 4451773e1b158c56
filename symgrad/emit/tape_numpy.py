"""Double-double regions run on NumPy arrays: the tape's instructions, one ufunc each.

The stabiliser scores every candidate region (:mod:`symgrad.stabilize.ddregion`) with exactly
the arithmetic of the kernel's helper.  :func:`symgrad.ir.ddprogram.run` does that one point at
a time in Python (some 70 microseconds a point); here the region's tape
(:func:`.tape_dd.lower_tails`: :mod:`symgrad.ir.ddmath`'s operations instruction by instruction,
each Python ``if`` a ``where`` with both sides computed) runs on whole columns, each
instruction one NumPy ufunc.  IEEE float64 ``+ - * /`` round the same in NumPy as in Python and
in the compiled helper, so the values are the helper's bit for bit
(``tests/stabilize/test_ddregion.py`` checks it against :func:`~symgrad.ir.ddprogram.run_many`).

Only the elementary functions (``dd_exp_hi`` ...) are called point by point, through
:mod:`symgrad.ir.ddmath`.  A region with first-order tails computes its program with dd
functions only at the points whose error bound calls for it, as the helper does.
"""
from __future__ import annotations

import numpy as np

from ..ir import ddmath as D
from ..ir.ddprogram import without_tails
from .tape_dd import FUNCTION_OPCODES, NotLowerable, lower_tails

__all__ = ["run_region", "NotLowerable"]

_UFUNC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "neg": np.negative,
          "abs": np.abs, "ne": np.not_equal, "le": np.less_equal, "gt": np.greater,
          "logical_or": np.logical_or}
_FUNCTIONS = {name: getattr(D, name[:-3]) for name in FUNCTION_OPCODES}  # "dd_exp_hi" -> ddmath.dd_exp


class _Columns:
    """A register file of float64 columns (or scalars for constants): ``emit`` and ``const`` as
    :func:`.tape_dd.lower_tails` calls them, each instruction computed when it is emitted."""

    def __init__(self, columns: list[np.ndarray]):
        self.regs: list = list(columns)
        self.pairs: dict = {}  # (function, a, b) -> (hi column, lo column): one call per point for both parts

    def const(self, value: float) -> int:
        self.regs.append(np.float64(value))
        return len(self.regs) - 1

    def emit(self, name: str, a: int, b: int = 0, c: int = 0) -> int:
        r = self.regs
        if name == "where":
            v = np.where(r[a], r[b], r[c])
        elif name in _FUNCTIONS:
            v = self._function(name, a, b)
        elif name in ("neg", "abs"):
            v = _UFUNC[name](r[a])
        else:
            v = _UFUNC[name](r[a], r[b])
        r.append(v)
        return len(r) - 1

    def _function(self, name: str, a: int, b: int) -> np.ndarray:
        key = (name[:-3], a, b)
        if key not in self.pairs:
            fn = _FUNCTIONS[name]
            n = max(np.size(self.regs[a]), np.size(self.regs[b]))
            hs, ls = (np.broadcast_to(self.regs[i], (n,)).tolist() for i in (a, b))
            self.pairs[key] = np.array([fn(h, l) for h, l in zip(hs, ls)], dtype=np.float64).reshape(n, 2).T
        return self.pairs[key][0 if name.endswith("_hi") else 1]


def run_region(program: tuple, columns, recomputed: list | None = None) -> np.ndarray:
    """:func:`symgrad.ir.ddprogram.run_many` on float64 columns, one NumPy operation per tape
    instruction.  ``recomputed``, if given, receives the number of rows a program with tails
    computed again with dd functions.

    Raises:
      NotLowerable: the program has a ``hypot`` instruction (run it with ``run_many``).
    """
    cols = [np.asarray(c, dtype=np.float64).reshape(-1) for c in columns]
    n = len(cols[0]) if cols else 1
    with np.errstate(all="ignore"):
        out, keep = _run(program, cols, n)
        if keep is not None:
            again = ~keep
            if again.any():
                out = out.copy()
                out[again], _ = _run(without_tails(program), [c[again] for c in cols], int(again.sum()))
    if recomputed is not None:
        recomputed.append(0 if keep is None else int((~keep).sum()))
    return out


def _run(program: tuple, cols: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray | None]:
    file = _Columns(cols)
    value, keep = lower_tails(program, list(range(len(cols))), file.emit, file.const)
    out = np.broadcast_to(file.regs[value], (n,)).astype(np.float64)
    return out, None if keep is None else np.broadcast_to(file.regs[keep], (n,)).astype(bool)
