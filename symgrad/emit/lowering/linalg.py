"""Numba lowering of the linear-algebra ops (:mod:`symgrad.ir.rules.linalg`): Numba's own
``np.linalg``, which calls SciPy's LAPACK at run time.

Each prints as one statement ``{out} = np.linalg.<call>(...)``, so a scalar result (``det``)
is computed once and never inlined into an elementwise loop.
"""
from __future__ import annotations

import numpy as np

from .base import lowers


def _arr(ctx, node, k: int, a: str) -> str:
    """Argument ``k`` as Numba's np.linalg wants it: C-contiguous (no copy if it already is), and
    of the kernel's dtype (array constants are stored as float64, so they are cast)."""
    text = f"np.ascontiguousarray({a})"
    return f"{text}.astype({ctx.dtype_expr})" if ctx.graph[node.args[k]].op == "const" else text


def _call(call: str, item: str = "", scalar: bool = False):
    """``{out} = np.linalg.<call>(...)<item>``; ``scalar`` results are cast to the kernel's dtype
    (Numba's float32 ``det`` returns float64)."""
    def emit(ctx, node, a):
        text = f"np.linalg.{call}({', '.join(_arr(ctx, node, k, x) for k, x in enumerate(a))}){item}"
        return [f"{{out}} = {ctx.dtype_expr}({text})" if scalar else f"{{out}} = {text}"]
    return emit


lowers("inv")(_call("inv"))
lowers("solve")(_call("solve"))
lowers("det")(_call("det", scalar=True))
lowers("slogdet_sign")(_call("slogdet", "[0]", scalar=True))
lowers("slogdet_logabs")(_call("slogdet", "[1]", scalar=True))
lowers("cholesky")(_call("cholesky"))
lowers("eigh_w")(_call("eigh", "[0]"))
lowers("eigh_v")(_call("eigh", "[1]"))


@lowers("lstsq")
def _lstsq(ctx, node, a):
    """``np.linalg.lstsq(A, b, rcond)[0]`` with NumPy's default ``rcond`` (eps * max(m, n))."""
    m, n = ctx.graph.shape(node.args[0])
    rcond = float(np.finfo(ctx.dtype).eps) * max(m, n)  # NumPy's rcond=None
    return [f"{{out}} = np.linalg.lstsq({_arr(ctx, node, 0, a[0])}, {_arr(ctx, node, 1, a[1])}, {rcond!r})[0]"]
