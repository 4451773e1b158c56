"""Kernels that sum a generated kernel's outputs over the batch axis: a small companion module.

``f.sum(*args)`` (:meth:`symgrad.api.compiled.Compiled.sum`) and its Dask form need, for each
chunk of rows, the kernel's outputs summed over the rows, without first holding one output per
row: for a per-sample gradient of 8 weights over a chunk of 10^6 rows that array is 64 MB of
float64, written by the kernel and read back by the sum.  :func:`sum_module_source` prints, for
kernel ``name`` of a generated module (the *kernel module*, cache key ``key``), a module that
takes the kernel module's cores from it (:func:`symgrad.compile.cache.loaded_module`: it must be
loaded first) and defines, per dtype,

``<name>_<f64|f32>_sum(a0, ..., c0, ..., s0, s1, ...)``
    ``a0 ...``: the arguments as the batch kernel ``<name>_<dtype>_batch`` takes them, each of
    shape ``(n,) + in_core`` (the same arrays, so the core's compiled overloads are reused);
    ``c0 ...``: the kernel's constant arrays; ``s0 ...``: one flat float64 accumulator per output,
    of ``prod(out_core)`` elements (1 for a scalar output).  Each row's outputs are added into a
    float64 partial sum of :data:`BLOCK` rows, and each partial into ``s0 ...``, which are not
    zeroed first (several blocks of a call add into the same accumulators).

Blocked summation bounds the rounding error by about ``(BLOCK + n / BLOCK)`` units in the last
place of the sum of magnitudes, against ``n`` for one running sum.  The module is generated
from the kernel's :class:`~symgrad.runtime.gufunc.GufuncSpec` alone (core shapes, number of
constants), so it is as small as this text and compiles in well under a second: the core is
compiled already.
"""
from __future__ import annotations

import math

from .names import DTYPES, SUFFIX, comment_lines, docstring

BLOCK = 256  # rows per float64 partial sum
JIT = '@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)'


def sum_kernel_name(name: str, dtype: str) -> str:
    """The summing kernel of kernel ``name`` for ``dtype`` ("float64" or "float32")."""
    return f"{name}_{SUFFIX[dtype]}_sum"


def sum_module_source(name: str, key: str, in_cores, out_cores, n_consts: int, dtypes=DTYPES) -> str:
    """Source text of the summing module of kernel ``name`` (see the module docstring).

    Args:
      name: the kernel (and entry point) name in the kernel module.
      key: the kernel module's cache key.
      in_cores, out_cores: the kernel's core shapes, one tuple per argument and per output.
      n_consts: how many constant arrays the kernel's core takes after its arguments.
      dtypes: the dtypes the kernel module defines cores for.
    """
    args = [f"a{k}" for k in range(len(in_cores))]
    consts = [f"c{k}" for k in range(n_consts)]
    sums = [f"s{m}" for m in range(len(out_cores))]
    scalar = [m for m, c in enumerate(out_cores) if tuple(c) == ()]
    array = [m for m, c in enumerate(out_cores) if tuple(c) != ()]
    size = {m: math.prod(c) for m, c in enumerate(out_cores)}
    lines = comment_lines(f"Sums of {name} over the batch axis (symgrad.emit.batch_sum); do not edit.")
    lines += ["import numba", "import numpy as np", "", "from symgrad.compile.cache import loaded_module", "",
              f"_kernels = loaded_module({key!r})  # the kernel module, loaded first"]
    lines += [f"{name}_{SUFFIX[d]} = _kernels.{name}_{SUFFIX[d]}" for d in dtypes]
    for d in dtypes:
        core = f"{name}_{SUFFIX[d]}"
        lines += ["", "", JIT, f"def {sum_kernel_name(name, d)}({', '.join(args + consts + sums)}):",
                  "    " + docstring(f"Adds {core} summed over the batch axis into the float64 accumulators "
                                     f"{', '.join(sums)}, in partial sums of {BLOCK} rows."),
                  f"    n = {args[0]}.shape[0]" if args else "    n = 1"]
        for m in array:
            lines += [f"    t{m} = np.empty({tuple(out_cores[m])!r}, dtype=np.{d})",
                      f"    f{m} = t{m}.reshape({size[m]})",
                      f"    p{m} = np.zeros({size[m]})"]
        lines += [f"    p{m} = 0.0" for m in scalar]
        call = f"{core}({', '.join([a + '[b]' for a in args] + consts + [f't{m}' for m in array])})"
        lines += [f"    for start in range(0, n, {BLOCK}):",
                  f"        for b in range(start, min(start + {BLOCK}, n)):",
                  f"            {', '.join(f'v{m}' for m in scalar)} = {call}" if scalar else f"            {call}"]
        lines += [f"            p{m} += v{m}" for m in scalar]
        for m in array:
            lines += [f"            for j in range({size[m]}):", f"                p{m}[j] += f{m}[j]"]
        for m in scalar:
            lines += [f"        s{m}[0] += p{m}", f"        p{m} = 0.0"]
        for m in array:
            lines += [f"        for j in range({size[m]}):", f"            s{m}[j] += p{m}[j]",
                      f"            p{m}[j] = 0.0"]
    return "\n".join(lines) + "\n"
