"""``f.sum(*args)``: a compiled function's results summed over the batch, in one pass per chunk.

A per-sample loss compiled with a signature (``"(d),(d),(),()->()"``) returns one value and one
gradient per row; a fit wants their sums.  ``f(X, w, y, lam)`` followed by ``.sum(axis=0)``
writes a ``(rows, d)`` gradient and reads it back; ``f.sum(X, w, y, lam)`` instead runs the
summing kernels of :mod:`symgrad.emit.batch_sum`, which add each row's results into float64
partial sums as they are computed.  On Dask arrays each chunk becomes one task returning its
partial sums (a few floats), tree-reduced by Dask (:func:`symgrad.api.dask_arrays.apply_entry_sum`).
:meth:`symgrad.api.compiled.Compiled.sum` is the public entry.
"""
from __future__ import annotations

import numpy as np

from ..compile.cache import cache_key, load_module
from ..emit.batch_sum import sum_kernel_name, sum_module_source
from ..emit.names import DTYPES, spec_name


class SumParts:
    """What summing a compiled entry needs: its spec, the summing module's key, source and kernels."""

    def __init__(self, entry):
        fn = entry.fn
        self.name = fn.__name__
        self.spec_attr = spec_name(self.name)
        self.spec = fn.__globals__[self.spec_attr]
        self.dtypes = tuple(d for d in DTYPES if d in self.spec.kernels)
        self.source = sum_module_source(self.name, entry.key, self.spec.in_cores, self.spec.out_cores,
                                        len(self.spec.consts), self.dtypes)
        self.key = cache_key("batch-sum", entry.key, self.source)
        self.names = {d: sum_kernel_name(self.name, d) for d in self.dtypes}
        module = load_module(self.name + "_sum", self.key, self.source)  # the kernel module is loaded
        self.kernels = {d: getattr(module, n) for d, n in self.names.items()}


def sum_parts(entry) -> SumParts:
    """The entry's :class:`SumParts`, made once per entry (the entry must be its module's entry point)."""
    parts = getattr(entry, "_sum_parts", None)
    if parts is None:
        parts = entry._sum_parts = SumParts(entry)
    return parts


def sum_entry(entry, leaves: list):
    """The kernel's outputs of ``entry.fn(*leaves)`` (NumPy arrays and numbers) summed over the
    batch: one value per output (a tuple if several), shaped ``out_core``; a NumPy scalar for a
    scalar output; float32 if every non-Python-number input is float32 (summed in float64 and
    rounded once), else float64."""
    from ..runtime.gufunc import gufunc_sum

    parts = sum_parts(entry)
    dtype, sums = gufunc_sum(parts.spec, parts.kernels, tuple(leaves))
    out = [s.astype(dtype)[()] for s in sums]
    return out[0] if len(out) == 1 else tuple(out)
