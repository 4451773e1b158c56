"""A compiled kernel as a small picklable recipe, for Dask workers and other processes.

Numba dispatchers do not travel well between processes: pickled into Dask
workers they are recompiled on every unpickle or fail to unpickle
(dask/distributed#7929, #3450; numba/numba#3026), and serialising them can
take seconds.  A :class:`KernelRecipe` carries instead what determines the
kernel: the generated module's source text, its cache key and the entry
point's name.  Called in a process, it loads the module once per process
(:func:`symgrad.compile.cache.load_module`: from that machine's on-disk cache
if the file is there and intact, else it writes the file; Numba's own cache
then supplies machine code compiled by any earlier process) and calls the
entry point.

Importing this module imports numpy, numba (when a recipe is first called)
and symgrad's cache and runtime modules, never SymPy or symgrad's tracer:
workers do not trace.
"""
from __future__ import annotations

import numpy as np

from .cache import load_module


class KernelRecipe:
    """The entry point ``name`` of the generated module with ``source`` and cache ``key``.

    Calling the recipe calls the entry point, which broadcasts batch dimensions
    like a NumPy gufunc (:func:`symgrad.runtime.gufunc.gufunc_call`).

    Args:
      name: the module's stem and entry-point name (``<fn>_<kind>``).
      key: the module's cache key (sha256 hex of what determines its text).
      source: the module's source text, exactly as written to the cache.
      constants: ``{argument position: value}`` for Python numbers passed to the
        entry point as they are (weakly typed, so a float32 call stays float32);
        the remaining positions take the call's arguments in order.
    """

    __slots__ = ("name", "key", "source", "constants")

    def __init__(self, name: str, key: str, source: str, constants: dict | None = None):
        self.name, self.key, self.source = name, key, source
        self.constants = dict(constants or {})

    def __getstate__(self):
        return (self.name, self.key, self.source, self.constants)

    def __setstate__(self, state):
        self.name, self.key, self.source, self.constants = state

    def __dask_tokenize__(self):
        """Dask's deterministic token: the key determines the source (no need to hash the text)."""
        return ("symgrad.KernelRecipe", self.name, self.key, sorted((k, repr(v)) for k, v in self.constants.items()))

    def __repr__(self) -> str:
        return f"KernelRecipe({self.name!r}, key={self.key[:12]}...)"

    def entry_point(self):
        """The generated entry point, loading (and if need be writing) the module in this process."""
        return getattr(load_module(self.name, self.key, self.source), self.name)

    def __call__(self, *arrays):
        """Run the kernel on one block: arrays of shape ``batch + core`` (NumPy, not Dask).

        Returns one ndarray per output (a tuple if several), shaped ``batch + out_core``;
        0-d results are returned as 0-d arrays, which Dask expects from a block.
        """
        args = list(arrays)
        for pos in sorted(self.constants):
            args.insert(pos, self.constants[pos])
        out = self.entry_point()(*args)
        if isinstance(out, tuple):
            return tuple(np.asarray(o) for o in out)
        return np.asarray(out)


class BatchSumRecipe:
    """A kernel's outputs summed over one block's batch dimensions, packed for a Dask reduction.

    Calling it on one block (arrays shaped ``batch + core``, as :class:`KernelRecipe` takes them)
    loads the kernel module and its summing module (:mod:`symgrad.emit.batch_sum`) once per
    process and returns a float64 array of shape ``(1,) * n_loop + (K,)``: every output summed
    over the block's rows, flattened and concatenated (``K`` = the sum of the outputs' core
    sizes).  Dask then tree-sums these partials over the blocks.

    Args:
      kernel: the :class:`KernelRecipe` of the kernel (its module, key, entry name, constants).
      spec_attr: the kernel module's name for the kernel's ``GufuncSpec``.
      sum_key, sum_source: cache key and source text of the summing module.
      sum_names: ``{dtype: summing kernel name}`` in the summing module.
      n_loop: the number of batch dimensions of the Dask result (the block's partial keeps one
        axis of length 1 per batch dimension, so blocks line up as Dask's blockwise expects).
    """

    __slots__ = ("kernel", "spec_attr", "sum_key", "sum_source", "sum_names", "n_loop")

    def __init__(self, kernel: KernelRecipe, spec_attr: str, sum_key: str, sum_source: str,
                 sum_names: dict, n_loop: int):
        self.kernel, self.spec_attr, self.sum_key, self.sum_source = kernel, spec_attr, sum_key, sum_source
        self.sum_names, self.n_loop = dict(sum_names), n_loop

    def __getstate__(self):
        return (self.kernel, self.spec_attr, self.sum_key, self.sum_source, self.sum_names, self.n_loop)

    def __setstate__(self, state):
        self.kernel, self.spec_attr, self.sum_key, self.sum_source, self.sum_names, self.n_loop = state

    def __dask_tokenize__(self):
        return ("symgrad.BatchSumRecipe", self.kernel.__dask_tokenize__(), self.sum_key, self.n_loop)

    def __repr__(self) -> str:
        return f"BatchSumRecipe({self.kernel.name!r}, key={self.kernel.key[:12]}...)"

    def kernels(self):
        """(the kernel's GufuncSpec, {dtype: summing kernel}), loading both modules in this process."""
        module = load_module(self.kernel.name, self.kernel.key, self.kernel.source)
        sums = load_module(self.kernel.name + "_sum", self.sum_key, self.sum_source)
        return getattr(module, self.spec_attr), {d: getattr(sums, n) for d, n in self.sum_names.items()}

    def __call__(self, *arrays):
        """One block's partial sums: float64, shape ``(1,) * n_loop + (K,)``."""
        from ..runtime.gufunc import gufunc_sum

        args = list(arrays)
        for pos in sorted(self.kernel.constants):
            args.insert(pos, self.kernel.constants[pos])
        spec, kernels = self.kernels()
        _, sums = gufunc_sum(spec, kernels, tuple(args))
        packed = np.concatenate([s.reshape(-1) for s in sums]) if sums else np.zeros(0)
        return packed.reshape((1,) * self.n_loop + (packed.size,))


def dask_setup(worker=None) -> None:
    """Warm a Dask worker at start-up: ``LocalCluster(preload=["symgrad.compile.recipe"])`` or
    ``dask worker --preload symgrad.compile.recipe``.

    Imports Numba and initialises its CPU target (0.3-1 s, once per process), so the
    first task that calls a kernel pays only for loading that kernel.  Imports no SymPy.
    """
    import numba

    numba.njit(cache=False, nogil=True)(lambda v: v + 1.0)(1.0)  # initialise Numba's CPU target
