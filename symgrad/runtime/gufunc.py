"""Call-time half of the gufunc model: dtype choice, core checks, batch broadcasting.

Generated modules call :func:`gufunc_call`.  This file depends on NumPy only
(symgrad's error classes are used when symgrad is already loaded), so the
ahead-of-time compiler copies it into standalone modules verbatim.
"""
import math
import sys
from dataclasses import dataclass, field

import numpy as np

if "symgrad.errors" in sys.modules:  # inside symgrad: raise its documented error classes
    from symgrad.errors import DTypeError, ShapeError
else:  # in a standalone generated module: never import symgrad (or SymPy)
    class ShapeError(ValueError):
        """Argument shapes do not match the compiled core shapes."""

    class DTypeError(TypeError):
        """An argument has an unsupported dtype."""

PARALLEL_MIN_BATCH = 1 << 16


PLAIN_TYPES = (np.ndarray, np.generic, float, int)
_CONTAINERS = (tuple, list, dict)


def _needs_general_path(value) -> bool:
    """Pytrees and symbolic values (tracers): not plain numbers or arrays, but not bad input either."""
    if isinstance(value, PLAIN_TYPES):
        return False
    return isinstance(value, _CONTAINERS) or hasattr(value, "__array_function__")


@dataclass
class GufuncSpec:
    """What a generated entry point needs to call its batch kernels."""

    name: str
    in_cores: tuple
    out_cores: tuple
    kernels: dict
    parallel_kernels: dict = field(default_factory=dict)
    consts: tuple = ()
    cores: dict = field(default_factory=dict)  # dtype -> core function, when every core is a scalar
    fallback: object = None  # called with the args tuple when one is not a plain number or array
    _consts_by_dtype: dict = field(default_factory=dict)

    def consts_for(self, dtype: str) -> tuple:
        found = self._consts_by_dtype.get(dtype)
        if found is None:
            found = tuple(c if c.dtype == bool else np.ascontiguousarray(c, dtype=dtype) for c in self.consts)
            self._consts_by_dtype[dtype] = found
        return found


def _as_float_array(name: str, k: int, value):
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "f":
        if not arr.dtype.isnative and arr.dtype.newbyteorder("=") in (np.float32, np.float64):
            arr = arr.astype(arr.dtype.newbyteorder("="))  # byte-swapped floats: same values, native order
        if arr.dtype not in (np.float32, np.float64):
            raise DTypeError(f"{name}: argument {k} has dtype {arr.dtype}; compiled kernels exist for float32 "
                             f"and float64.\n  Do instead: pass x.astype(np.float64).")
        return arr, type(value) is float  # Python numbers are weakly typed (NEP 50); numpy scalars are not
    if kind in "iub":  # converted to float64 by gufunc_call, block by block if it is large
        return arr, type(value) in (int, bool)
    if kind == "c":
        raise DTypeError(f"{name}: argument {k} is complex ({arr.dtype}); symgrad compiles real-valued functions "
                         f"only.\n  Do instead: split the computation into real and imaginary parts.")
    raise DTypeError(f"{name}: argument {k} has dtype {arr.dtype}, not a real number or array.\n"
                     f"  Do instead: pass a float32 or float64 numpy array.")


def _one_float64_point(spec: GufuncSpec, args: tuple) -> bool:
    """Every argument a float64 array of exactly its core shape (not a scalar core): no batch."""
    if len(args) != len(spec.in_cores):
        return False
    for a, core in zip(args, spec.in_cores):
        if type(a) is not np.ndarray or a.dtype != np.float64 or not a.ndim or a.shape != tuple(core):
            return False
    return True


def gufunc_call(spec: GufuncSpec, args: tuple, parallel: bool = False):
    """Broadcast ``args`` over their batch dimensions and run the compiled kernel.

    Returns one array (or NumPy scalar when there are no batch dimensions) per
    output: a single value for one output, else a tuple.
    """
    if spec.fallback is not None:  # pytrees and traced values go back to the caller's general path
        for a in args:
            if _needs_general_path(a):
                return spec.fallback(args)
    if _one_float64_point(spec, args):  # the common call: one point, float64 arrays of the core shapes
        outs = [np.empty((1,) + tuple(core)) for core in spec.out_cores]
        spec.kernels["float64"](*[a.reshape((1,) + a.shape) for a in args], *spec.consts_for("float64"), *outs)
        return outs[0][0] if len(outs) == 1 else tuple(o[0] for o in outs)
    arrays, dtype = _arrays_and_dtype(spec, args)
    if spec.cores and all(a.ndim == 0 for a in arrays):  # scalars: call the core directly
        typ = np.dtype(dtype).type
        res = spec.cores[dtype](*[typ(a) for a in arrays], *spec.consts_for(dtype))
        return tuple(typ(r) for r in res) if isinstance(res, tuple) else typ(res)
    batch = _batch_shape(spec, arrays)
    if isinstance(batch, int):  # argument ``batch`` does not end in its core shape
        if spec.fallback is not None:  # the caller binds new core sizes (compiling again)
            return spec.fallback(args)
        raise _core_mismatch(spec, batch, arrays[batch])
    n = math.prod(batch)
    # small arrays (scalars, broadcast rows) are converted whole; large ones block by block below
    views = [np.broadcast_to(arr.astype(dtype, copy=False) if arr.size <= BLOCK_ELEMENTS else arr,
                             batch + tuple(core)) for arr, core in zip(arrays, spec.in_cores)]
    outs = [np.empty(batch + tuple(core), dtype=dtype) for core in spec.out_cores]
    kernels = spec.parallel_kernels if (parallel and spec.parallel_kernels and n >= PARALLEL_MIN_BATCH) else spec.kernels
    kernel, consts = kernels[dtype], spec.consts_for(dtype)
    flat = [_flat_view(v, n, core) if v.dtype == dtype else None for v, core in zip(views, spec.in_cores)]
    if all(f is not None for f in flat):  # every input is a view of its batch as one axis: no copies
        kernel(*flat, *consts, *[o.reshape((n,) + tuple(core)) for o, core in zip(outs, spec.out_cores)])
    else:
        _call_blocked(kernel, consts, views, outs, spec, batch, dtype)
    results = tuple(r[()] if r.ndim == 0 else r for r in outs)
    return results[0] if len(results) == 1 else results


BLOCK_ELEMENTS = 1 << 16


def _flat_view(view, n: int, core):
    """``view`` reshaped to ``(n,) + core`` without copying, or None if that needs a copy."""
    try:
        return view.reshape((n,) + tuple(core), copy=False)
    except ValueError:
        return None
    except TypeError:  # NumPy < 2.1 has no copy argument
        out = view.view()
        try:
            out.shape = (n,) + tuple(core)
        except AttributeError:
            return None
        return out


def _call_blocked(kernel, consts, views, outs, spec, batch, dtype):
    """Run ``kernel`` over blocks of about BLOCK_ELEMENTS elements of the batch.

    Used when an input is not one strided axis over the batch (a broadcast
    along several dimensions, a transposed or sliced array) or needs a dtype
    conversion: only one block of each such input is copied at a time, so a
    call allocates little beyond its outputs.  Outputs are C-contiguous, so each
    block of them is a view the kernel writes into directly.
    """
    for idx, m in _blocks(spec, batch):
        ins = [(v[idx] if v.dtype == dtype else v[idx].astype(dtype)).reshape((m,) + tuple(core))
               for v, core in zip(views, spec.in_cores)]
        kernel(*ins, *consts, *[_flat_view(o[idx], m, core) for o, core in zip(outs, spec.out_cores)])
        del ins  # free this block's copies before the next block makes its own


def _arrays_and_dtype(spec, args) -> tuple[list, str]:
    """The arguments as arrays, and the dtype the kernel runs in: float32 if every argument that is
    not a Python number (weakly typed, as in NumPy 2) is float32, else float64.

    Raises:
      DTypeError: an argument is complex, not numeric, or a float type other than float32/64.
    """
    arrays, weak = [], []
    for k, a in enumerate(args):
        arr, is_weak = _as_float_array(spec.name, k, a)
        arrays.append(arr)
        weak.append(is_weak)
    strong = [a.dtype if a.dtype.kind == "f" else np.dtype(np.float64) for a, w in zip(arrays, weak) if not w]
    return arrays, (np.result_type(*strong).name if strong else "float64")


def _batch_shape(spec, arrays):
    """The broadcast batch shape of ``arrays`` (each ``batch + core``), or the index (an int) of the
    first argument whose trailing dimensions are not its core shape.

    Raises:
      ShapeError: the batch shapes do not broadcast together.
    """
    batch_shapes = []
    for k, (arr, core) in enumerate(zip(arrays, spec.in_cores)):
        nd = len(core)
        if arr.ndim < nd or tuple(arr.shape[arr.ndim - nd:]) != tuple(core):
            return k
        batch_shapes.append(arr.shape[:arr.ndim - nd])
    try:
        return np.broadcast_shapes(*batch_shapes)
    except ValueError:
        raise ShapeError(f"{spec.name}: batch shapes {batch_shapes} do not broadcast together.\n"
                         f"  Do instead: give the arguments broadcast-compatible leading dimensions.") from None


def _core_mismatch(spec, k: int, arr) -> ShapeError:
    core = tuple(spec.in_cores[k])
    return ShapeError(f"{spec.name}: argument {k} has shape {arr.shape}, but this function was compiled "
                      f"for core shape {core} (bound at the first call).\n  Do instead: pass "
                      f"arrays whose trailing dimensions are {core}, or call symgrad again to "
                      f"compile for new core sizes.")


def _blocks(spec, batch) -> list:
    """``(index, rows)`` per block of about BLOCK_ELEMENTS elements of ``batch``: a range along one
    axis times all of the later axes, so each block of a C-contiguous array is one strided run."""
    if not batch:
        return [((), 1)]
    per_item = max([math.prod(c) for c in (*spec.in_cores, *spec.out_cores)] + [1])
    target = max(1, BLOCK_ELEMENTS // per_item)
    axis, inner = len(batch) - 1, 1
    while axis > 0 and inner * batch[axis] < target:
        inner *= batch[axis]
        axis -= 1
    step = max(1, target // inner)
    return [((*outer, slice(i, i + step)), (min(i + step, batch[axis]) - i) * inner)
            for outer in np.ndindex(*batch[:axis]) for i in range(0, batch[axis], step)]


def gufunc_sum(spec: GufuncSpec, sum_kernels: dict, args: tuple):
    """The kernel's outputs summed over all batch dimensions, without an array of per-row outputs.

    Arguments are taken as :func:`gufunc_call` takes them (NumPy arrays or Python numbers shaped
    ``batch + core``, batch shapes broadcast together, Python numbers weakly typed, integers
    converted to float64).  ``sum_kernels[dtype]`` is the summing kernel of
    :mod:`symgrad.emit.batch_sum`: it adds each row's outputs, in float64 partial sums, into
    float64 accumulators.  Inputs that are one strided run over the batch are passed whole;
    others (broadcast along several axes, or needing a dtype conversion) block by block.

    Returns:
      ``(dtype, sums)``: the dtype the kernel ran in ("float32" if every non-Python-number argument
      is float32, else "float64") and one float64 array per output, shaped ``out_core`` (0-d for a
      scalar output).  Empty batches sum to zeros.
    Raises:
      ShapeError: an argument's trailing dimensions are not its core shape, or batch shapes do not
        broadcast.
      DTypeError: an argument is complex, not numeric, or a float type other than float32/64.
    """
    arrays, dtype = _arrays_and_dtype(spec, args)
    batch = _batch_shape(spec, arrays)
    if isinstance(batch, int):
        raise _core_mismatch(spec, batch, arrays[batch])
    n = math.prod(batch)
    sums = [np.zeros(math.prod(core)) for core in spec.out_cores]
    if n == 0:
        return dtype, [s.reshape(core) for s, core in zip(sums, spec.out_cores)]
    views = [np.broadcast_to(arr.astype(dtype, copy=False) if arr.size <= BLOCK_ELEMENTS else arr,
                             batch + tuple(core)) for arr, core in zip(arrays, spec.in_cores)]
    kernel, consts = sum_kernels[dtype], spec.consts_for(dtype)
    flat = [_flat_view(v, n, core) if v.dtype == dtype else None for v, core in zip(views, spec.in_cores)]
    if all(f is not None for f in flat):
        kernel(*flat, *consts, *sums)
    else:
        for idx, m in _blocks(spec, batch):
            kernel(*[(v[idx] if v.dtype == dtype else v[idx].astype(dtype)).reshape((m,) + tuple(core))
                     for v, core in zip(views, spec.in_cores)], *consts, *sums)
    return dtype, [s.reshape(core) for s, core in zip(sums, spec.out_cores)]
