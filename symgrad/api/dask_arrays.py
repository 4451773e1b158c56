"""Compiled functions on Dask arrays: one ``dask.array.apply_gufunc`` per call, built lazily.

When an argument leaf of a compiled function (``jit``, ``grad``,
``value_and_grad``, the ``vjp`` function, ``jvp``, ``jacobian``, ``hessian``,
``hvp``) is a Dask array, the call traces and compiles on the driver exactly
as for NumPy arrays (the core shapes come from the Dask arrays' shapes), then
returns Dask arrays: the graph holds one :func:`dask.array.apply_gufunc` with
the compiled kernel's signature, whose function is a
:class:`~symgrad.compile.recipe.KernelRecipe` (module source, cache key and
entry-point name), never a pickled Numba dispatcher.

Chunking follows Dask's gufunc rules: batch (loop) dimensions may be chunked
any way (chunks are unified across arguments first, as Dask's elementwise
operations do); core dimensions must be one chunk each, else a
:class:`~symgrad.errors.ShapeError` names the argument and the ``rechunk`` that
fixes it.  Python numbers stay weakly typed (a float32 array plus ``0.5`` gives
float32), and float32 and float64 arrays keep their dtype, as in the NumPy path.

Dask is imported only here, and only when a Dask array is passed.
"""
from __future__ import annotations

import re

import numpy as np

from ..compile.recipe import BatchSumRecipe, KernelRecipe
from ..emit.names import spec_name
from ..errors import ShapeError, format_error
from ..runtime.gufunc import _as_float_array


def is_dask_array(value) -> bool:
    """True for a Dask collection (checked by module name, so Dask is never imported for it)."""
    return type(value).__module__.startswith("dask.")


def apply_entry(entry, leaves: list, fn_name: str):
    """The lazy Dask equivalent of ``entry.fn(*leaves)``.

    Args:
      entry: a compiled :class:`~symgrad.api.compiled.Entry` (its module defines the
        entry point ``entry.fn`` and its :class:`~symgrad.runtime.gufunc.GufuncSpec`).
      leaves: the flat arguments: Dask arrays, NumPy arrays or Python numbers, each
        shaped ``batch + core`` with the core shapes the entry was compiled for.
      fn_name: the user function's name, for error messages.
    Returns:
      One Dask array per kernel output (a tuple if several), shaped
      ``broadcast(batch) + out_core``, float32 if every non-Python-number input is
      float32, else float64.
    Raises:
      ShapeError: a core dimension of a Dask argument is split over several chunks.
      DTypeError: an argument is complex or not numeric.
    """
    import dask.array as da

    spec, name, constants, arrays, cores, dtype = _prepare(da, entry, leaves, fn_name)
    in_sig = [f"({','.join(f'i{k}_{j}' for j in range(len(c)))})" for k, c in enumerate(cores)]
    out_sig = [f"({','.join(f'o{m}_{j}' for j in range(len(c)))})" for m, c in enumerate(spec.out_cores)]
    sizes = {f"o{m}_{j}": n for m, c in enumerate(spec.out_cores) for j, n in enumerate(c)}
    recipe = KernelRecipe(name, entry.key, entry.fn.__globals__["__symgrad_source__"], constants)
    n_out = len(spec.out_cores)
    return da.apply_gufunc(
        recipe, f"{','.join(in_sig)}->{','.join(out_sig)}", *arrays,
        output_dtypes=[dtype] * n_out if n_out > 1 else dtype, output_sizes=sizes,
        vectorize=False, allow_rechunk=False, token=re.sub(r"[^A-Za-z0-9_]", "_", name))


def apply_entry_sum(entry, leaves: list, fn_name: str):
    """The lazy Dask equivalent of ``entry.fn(*leaves)`` summed over all batch dimensions.

    Each block (a chunk of the batch, every core whole) is one task that runs the summing kernel
    (:mod:`symgrad.emit.batch_sum`) through a :class:`~symgrad.compile.recipe.BatchSumRecipe`
    and returns the block's float64 partial sums, packed into one vector of ``K`` floats (the
    sum of the outputs' core sizes); Dask's ``sum`` tree-reduces the partials (its default
    ``split_every``), and the total is split into the outputs.  No per-row result is ever held.

    Args: as :func:`apply_entry`.
    Returns:
      One Dask array per kernel output (a tuple if several), shaped ``out_core``, float32 if
      every non-Python-number input is float32 (partials summed in float64, rounded once at the
      end), else float64.
    Raises:
      ShapeError: a core dimension of a Dask argument is split over several chunks.
      DTypeError: an argument is complex or not numeric.
    """
    import dask.array as da

    from .batch_sum import sum_parts

    spec, name, constants, arrays, cores, dtype = _prepare(da, entry, leaves, fn_name)
    parts = sum_parts(entry)
    _compile_sum_here(parts, leaves, spec.in_cores)
    n_loop = max([a.ndim - len(c) for a, c in zip(arrays, cores)] + [0])
    loop = tuple(f"l{j}" for j in range(n_loop))
    arginds = []
    for k, (a, c) in enumerate(zip(arrays, cores)):
        nloop = a.ndim - len(c)
        arginds += [a, loop[n_loop - nloop:] + tuple(f"c{k}_{j}" for j in range(len(c)))]
    size = [int(np.prod(c)) for c in spec.out_cores]
    recipe = BatchSumRecipe(KernelRecipe(name, entry.key, entry.fn.__globals__["__symgrad_source__"], constants),
                            parts.spec_attr, parts.key, parts.source, parts.names, n_loop)
    partials = da.blockwise(recipe, loop + ("k",), *arginds, new_axes={"k": sum(size)},
                            adjust_chunks={ind: 1 for ind in loop}, concatenate=True, dtype=np.float64,
                            meta=np.empty((0,) * (n_loop + 1)),
                            token=re.sub(r"[^A-Za-z0-9_]", "_", name) + "_sum")
    total = partials.sum(axis=tuple(range(n_loop)), dtype=np.float64) if n_loop else partials
    outs, start = [], 0
    for core, n in zip(spec.out_cores, size):
        out = total[start:start + n].reshape(core) if len(size) > 1 else total.reshape(core)
        outs.append(out.astype(dtype) if dtype != np.float64 else out)
        start += n
    return tuple(outs) if len(outs) > 1 else outs[0]


def _prepare(da, entry, leaves, fn_name):
    """(spec, kernel name, {position: Python number}, array arguments with batch chunks unified,
    their core shapes, result dtype) for a call of ``entry`` on ``leaves``; compiles the kernel
    here for the blocks' dtypes (see :func:`_compile_here`)."""
    spec = entry.fn.__globals__[spec_name(entry.fn.__name__)]
    name = entry.fn.__name__
    names = list(entry.program.arg_names)
    constants, arrays, cores, strong = {}, [], [], []
    for k, (leaf, core) in enumerate(zip(leaves, spec.in_cores)):
        if type(leaf) in (float, int, bool):  # weakly typed (NEP 50): passed to each block as is
            constants[k] = leaf
            continue
        dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
        _as_float_array(name, k, np.empty((0,), np.dtype(dtype)))  # raises DTypeError for complex and non-numbers
        strong.append(np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64))
        if is_dask_array(leaf):
            _check_core_chunks(fn_name, k, names[k] if k < len(names) else f"leaf {k}", leaf, core)
        arrays.append(leaf)
        cores.append(tuple(core))
    dtype = np.result_type(*strong) if strong else np.dtype(np.float64)
    _compile_here(entry.fn, leaves, spec.in_cores)
    return spec, name, constants, _unify_batch_chunks(da, arrays, cores), cores, dtype


_COMPILED: set = set()


def _compile_sum_here(parts, leaves, in_cores) -> None:
    """Run the summing kernel once here on one-element batches like the blocks', so Numba
    compiles it in this process and writes its disk cache (see :func:`_compile_here`)."""
    from ..runtime.gufunc import gufunc_sum

    probe = _probe(leaves, in_cores)
    key = (id(parts), tuple((p.dtype.str, p.ndim) if isinstance(p, np.ndarray) else type(p) for p in probe))
    if key not in _COMPILED:
        gufunc_sum(parts.spec, parts.kernels, tuple(probe))
        _COMPILED.add(key)


def _probe(leaves, in_cores) -> list:
    """Zero arrays shaped like one element of each leaf's batch (same dtype and rank); Python
    numbers as they are."""
    probe = []
    for leaf, core in zip(leaves, in_cores):
        if type(leaf) in (float, int, bool):
            probe.append(leaf)
        else:
            batch_nd = len(np.shape(leaf)) - len(core)
            probe.append(np.zeros((1,) * batch_nd + tuple(core), dtype=leaf.dtype if hasattr(leaf, "dtype")
                                  else np.asarray(leaf).dtype))
    return probe


def _compile_here(fn, leaves, in_cores) -> None:
    """Call the kernel once here on one-element batches like the blocks (same dtypes, ranks and
    Python numbers), so Numba compiles it in this process and writes its disk cache: workers on this
    machine then load machine code instead of compiling (each would otherwise compile once)."""
    probe = _probe(leaves, in_cores)
    key = (id(fn), tuple((p.dtype.str, p.ndim) if isinstance(p, np.ndarray) else type(p) for p in probe))
    if key not in _COMPILED:
        fn(*probe)
        _COMPILED.add(key)


def _check_core_chunks(fn_name: str, k: int, arg_name: str, arr, core) -> None:
    nd = len(core)
    for axis in range(arr.ndim - nd, arr.ndim):
        if len(arr.chunks[axis]) > 1:
            raise ShapeError(format_error(
                f"{fn_name}: argument {k} ({arg_name}, a Dask array of shape {arr.shape}, chunks {arr.chunksize}) has "
                f"its core axis {axis} (size {arr.shape[axis]}) split into {len(arr.chunks[axis])} chunks",
                "each block is one call of the compiled kernel, which needs whole core arrays "
                "(Dask's gufunc rule, dask.array.apply_gufunc)",
                f"rechunk that axis into one chunk, x.rechunk({{{axis}: -1}}), and chunk the leading "
                f"(batch) axes instead" + ("" if arr.ndim > nd else
                                         "; a function with no signature that is not elementwise takes each "
                                         "argument whole (JAX's rule), and a gufunc signature such as "
                                         "signature=\"(n)->()\" makes leading axes batch axes")))


def _unify_batch_chunks(da, arrays, cores):
    """Arrays rechunked so that batch dimensions line up (Dask's ``unify_chunks``); cores untouched."""
    if len(arrays) < 2:
        return [da.asarray(a) for a in arrays]
    arrays = [da.asarray(a) for a in arrays]
    n_loop = max(a.ndim - len(c) for a, c in zip(arrays, cores))
    pairs = []
    for k, (a, c) in enumerate(zip(arrays, cores)):
        loop = a.ndim - len(c)
        pairs += [a, tuple(f"l{n_loop - loop + j}" for j in range(loop)) + tuple(f"c{k}_{j}" for j in range(len(c)))]
    _, unified = da.core.unify_chunks(*pairs)
    return list(unified)
