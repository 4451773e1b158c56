"""Assemble a generated Python module: header, imports, helpers, kernels, wrappers.

For every kernel the module holds, per dtype (float64, float32):

* ``<name>_f64(...)``: the *core* function on one batch element; scalar
  outputs are returned, array outputs are written into arrays passed in;
* ``<name>_f64_batch(...)``: loops the core over the leading batch axis;

and one Python entry point ``<name>(*args)`` that broadcasts batch
dimensions (the NumPy gufunc model) and picks the dtype variant.  Kernels are
``numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)``: fastmath
would reassociate and undo stable rewrites, the numpy error model makes
division by zero give inf/nan instead of raising, and nogil lets threads (Dask's
threaded scheduler, a thread pool) run kernels in parallel; it does not change results.
Scalar cores are the exception: Python calls them for one point (the entry point's
float fast path, a NumPy scalar), where releasing and taking back the GIL costs more
than the core itself (about 35 ns against 15-80 ns), and nothing runs long enough
meanwhile to profit; inside a batch loop, which is nogil, the GIL flag of the core
it calls or inlines plays no part.
"""
from __future__ import annotations

import base64
import functools
import re
from dataclasses import dataclass, field, replace

import numpy as np

from ..ir.graph import Graph
from .chunk import chunk_size, split_body
from .names import DTYPES, SUFFIX, check_names, comment_lines, const_name, docstring, spec_name
from .prelude import cache_usable, dd_imports, helper_source, helpers_used, vecmath_importable, vecmath_imports, vm_library
from .printer import KernelIO, array_constants, print_body

JIT = '@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)'
# A scalar core (every argument and output a scalar) keeps the GIL: Python calls it for one point,
# and nogil's release and re-acquire would cost more than the arithmetic (see the module docstring).
JIT_SCALAR = '@numba.njit(cache=True, fastmath=False, error_model="numpy")'
# A small scalar core (an elementwise kernel) is inlined into its batch loop in Numba IR, so LLVM sees
# one loop body and can vectorise it (a call per element cannot be).
JIT_INLINE = '@numba.njit(cache=True, fastmath=False, error_model="numpy", forceinline=True)'
MAX_INLINE_ARGS = 24
JIT_PARALLEL = '@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True, parallel=True)'
RUNTIME_IMPORT = "from symgrad.runtime.gufunc import GufuncSpec, gufunc_call"
VECMATH_IMPORT = "# vectorisable elementary functions, within 1 ulp (symgrad/emit/vecmath.py; SYMGRAD_VECMATH=0 for libm)"
DDJIT_IMPORT = "# double-double arithmetic and functions (symgrad/ir/ddmath.py, compiled once: symgrad/emit/ddjit.py)"
VECMATH_BANNER = "# ---- library: symgrad/emit/vecmath.py (vectorisable, within 1 ulp; SYMGRAD_VECMATH=0 for libm) ----"


@dataclass
class KernelDef:
    """One compiled entry point: its name, docstring, arguments and outputs."""

    name: str
    doc: str
    args: list[KernelIO]
    outputs: list[KernelIO]
    comments: dict[int, str] = field(default_factory=dict)
    parallel: bool = False
    rewrites: list = field(default_factory=list)  # (output name, RewriteRecord) applied by the stabiliser
    widen_float32: bool = False  # float32 core computes in float64 and rounds once (scalar cores only)
    stabilize_cpu_s: float | None = None  # CPU seconds the stabiliser spent on this kernel (None: not run)
    # {dtype: output node per output} for a dtype whose core computes other nodes than ``outputs``
    # (float64's): a regime split kept in one dtype only (symgrad.stabilize.dtype_regimes)
    dtype_nodes: dict[str, list[int]] = field(default_factory=dict)

    def outputs_for(self, dtype: str) -> list[KernelIO]:
        """The outputs the ``dtype`` core computes: ``outputs`` with the nodes of ``dtype_nodes[dtype]``.

        Every printer of a core (the Numba module, the interpreter and native tapes) asks this, so
        the tiers compute the same nodes per dtype."""
        nodes = self.dtype_nodes.get(dtype)
        if nodes is None:
            return self.outputs
        return [replace(o, node=n) for o, n in zip(self.outputs, nodes)]

    def all_output_nodes(self) -> list[int]:
        """Output nodes of every dtype's core (float64's first), each once."""
        nodes = [o.node for o in self.outputs]
        for extra in self.dtype_nodes.values():
            nodes += [n for n in extra if n not in nodes]
        return nodes


def _load_ddjit():  # here, not in prelude: ddjit imports prelude
    from . import ddjit  # noqa: F401


@functools.lru_cache(maxsize=1)
def ddjit_importable() -> bool:
    """Whether :mod:`symgrad.emit.ddjit` imports here (:func:`.prelude.cache_usable`)."""
    return cache_usable(_load_ddjit)


def _encode(arr: np.ndarray) -> str:
    data = base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode()
    return f'_decode("{data}", {arr.shape!r}, "{arr.dtype.name}")'


def _indent(lines, n=1):
    pad = "    " * n
    return [pad + line if line else line for line in lines]


def emit_kernel(g: Graph, k: KernelDef, dtypes=DTYPES, max_ops: int | None = None
                ) -> tuple[list[str], list[str]]:
    """(module-level constant lines, function lines) for kernel ``k``.

    A body of more than ``max_ops`` operations (default :func:`.chunk.chunk_size`) is split
    into part functions called in sequence, so that Numba's compile time stays linear in
    the program size (see :mod:`.chunk`).
    """
    max_ops = chunk_size() if max_ops is None else max_ops
    consts = array_constants(g, k.all_output_nodes())
    cnames = {nid: f"_c{i}" for i, nid in enumerate(consts)}
    const_lines = [f"{const_name(k.name, i)} = {_encode(g.consts[nid])}" for i, nid in enumerate(consts)]
    arg_names = [a.name for a in k.args]
    check_names(k.name, arg_names + [o.name for o in k.outputs])
    arr_outs = [o.name for o in k.outputs if o.shape != ()]
    sca_outs = [o.name for o in k.outputs if o.shape == ()]
    params = ", ".join(arg_names + list(cnames.values()) + arr_outs)
    batch_params = ", ".join(arg_names + list(cnames.values()) + [o.name for o in k.outputs])
    ret = ", ".join(sca_outs)
    lines: list[str] = []
    # a small scalar core is inlined into its batch loop (vectorised there): so are its vecmath calls
    # (Numba cannot inline a function of very many arguments: "calling a closure with *args")
    small_scalar_core = (all(a.shape == () for a in k.args) and all(o.shape == () for o in k.outputs)
                         and len(k.args) + len(k.outputs) <= MAX_INLINE_ARGS
                         and len(g.ancestors(k.all_output_nodes())) <= max_ops)
    for dtype in dtypes:
        sfx = SUFFIX[dtype]
        widen = dtype == "float32" and k.widen_float32 and not arr_outs and all(a.shape == () for a in k.args)
        body = print_body(g, k.args, k.outputs_for(dtype), "float64" if widen else dtype, cnames, k.comments,
                          vecmath_inline=small_scalar_core, double_double=dtype == "float64")
        doc = f"{k.doc} ({dtype} core, computed in float64 and rounded once)." if widen else f"{k.doc} ({dtype} core)."
        if dtype != dtypes[0]:  # the first core's statements (but for regimes decided per dtype): comments there
            body = [line for line in body if not line.lstrip().startswith("#")]
            doc = doc[:-1] + f"; comments in {k.name}_{SUFFIX[dtypes[0]]}."
        parts, body = split_body(body, arg_names + list(cnames.values()) + arr_outs, sca_outs,
                                 f"{k.name}_{sfx}_part", max_ops)
        for i, (pname, pargs, pret, pbody) in enumerate(parts):
            lines += ["", JIT, f"def {pname}({', '.join(pargs)}):",
                      f"    {docstring(f'Part {i + 1} of {len(parts)} of {k.name}_{sfx} (straight-line code split for compile time).')}"]
            lines += _indent(pbody)
            if pret:
                lines.append(f"    return {', '.join(pret)}")
        scalar_core = all(a.shape == () for a in k.args) and not arr_outs
        deco = (JIT_INLINE if small_scalar_core and not parts else JIT_SCALAR) if scalar_core else JIT
        lines += ["", deco, f"def {k.name}_{sfx}({params}):",
                  f"    {docstring(doc)}"]
        if widen:  # float32 in, float32 out, float64 in between (see symgrad.stabilize.widen)
            lines += [f"    {a} = np.float64({a})" for a in arg_names]
        lines += _indent(body)
        if ret:
            lines.append(f"    return {', '.join(f'np.float32({o})' for o in sca_outs) if widen else ret}")
        call_args = [f"{a}[_b]" for a in arg_names] + list(cnames.values()) + [f"{o}[_b]" for o in arr_outs]
        call = f"{k.name}_{sfx}({', '.join(call_args)})"
        stmt = f"{', '.join(o + '[_b]' for o in sca_outs)} = {call}" if sca_outs else call
        first = k.outputs[0].name
        variants = [(JIT, "range", "_batch")] + ([(JIT_PARALLEL, "numba.prange", "_pbatch")] if k.parallel else [])
        for deco, rng, tag in variants:
            lines += ["", deco, f"def {k.name}_{sfx}{tag}({batch_params}):  # loops {k.name}_{sfx} over the batch axis",
                      f"    for _b in {rng}({first}.shape[0]):", f"        {stmt}"]
    return const_lines, lines


def emit_wrapper(k: KernelDef, const_count: int, dtypes=DTYPES) -> list[str]:
    arg_names = [a.name for a in k.args]
    cores = tuple(a.shape for a in k.args)
    out_cores = tuple(o.shape for o in k.outputs)
    spec = spec_name(k.name)
    consts64 = ", ".join(const_name(k.name, i) for i in range(const_count))
    lines = ["", f"{spec} = GufuncSpec(name={k.name!r}, in_cores={cores!r}, out_cores={out_cores!r},",
             f"    kernels={{{', '.join(repr(d) + ': ' + k.name + '_' + SUFFIX[d] + '_batch' for d in dtypes)}}},"]
    if k.parallel:
        lines.append(f"    parallel_kernels={{{', '.join(repr(d) + ': ' + k.name + '_' + SUFFIX[d] + '_pbatch' for d in dtypes)}}},")
    if const_count:
        lines.append(f"    consts=({consts64},),")
    scalar = all(c == () for c in cores) and all(c == () for c in out_cores)
    fast = f"{k.name}_f64_entry"
    if scalar:
        lines.append(f"    cores={{{', '.join(repr(d) + ': ' + k.name + '_' + SUFFIX[d] for d in dtypes)}}},")
    lines[-1] = lines[-1][:-1] + ")"
    if arg_names and "float64" in dtypes:
        lines.append(f"{fast} = {k.name}_f64  # symgrad rebinds it to the compiled float64 overload")
    lines += ["",
             f"def {k.name}({', '.join(arg_names)}):",
             f"    {docstring(k.doc + '.')}"]
    if scalar and arg_names and "float64" in dtypes:
        test = " and ".join(f"isinstance({a}, float)" for a in arg_names)
        call_args = ", ".join(arg_names + [const_name(k.name, i) for i in range(const_count)])
        lines += [f"    if {test}:", f"        return {fast}({call_args})"]
    elif arg_names and "float64" in dtypes:
        lines += _array_fast_path(k, const_count)
    par = ", parallel=True" if k.parallel else ""
    lines.append(f"    return gufunc_call({spec}, ({', '.join(arg_names)}{',' if len(arg_names) == 1 else ''}){par})")
    return lines


def _array_fast_path(k: KernelDef, const_count: int) -> list[str]:
    """Entry-point lines that call the float64 core directly for one unbatched call.

    Taken when every array argument is a float64 ndarray of exactly its core shape with C strides
    and every scalar argument is a float: no broadcasting, no conversion, so the general gufunc
    path (about 10 us of Python) is skipped.  The tests are the cheap ones: the dtype by identity
    with ``_F64`` (NumPy shares one float64 dtype object; an equal copy takes the general path)
    and the strides as a tuple (``.flags`` builds an object per call); ``np.ndarray`` and ``np.empty``
    are read from module-level aliases.  The core is called through ``<name>_f64_entry``, its
    compiled overload for exactly these types once symgrad has bound it
    (``symgrad.compile.cache._bind_entries``): Numba's type dispatch skipped.
    """
    tests = []
    for a in k.args:
        if a.shape == ():
            tests.append(f"isinstance({a.name}, float)")
        else:
            tests.append(f"type({a.name}) is _ndarray and {a.name}.shape == {tuple(a.shape)!r} and "
                         f"{a.name}.dtype is _F64 and {a.name}.strides == {c_strides(a.shape)!r}")
    return ["    if (" + "\n            and ".join(tests) + "):"] + _indent(_core_call(k, const_count))


def _core_call(k: KernelDef, const_count: int) -> list[str]:
    """Statements (indented once) running the float64 core on arguments that passed the fast-path tests."""
    arr_outs = [o for o in k.outputs if o.shape != ()]
    sca_outs = [o for o in k.outputs if o.shape == ()]
    call = ", ".join([a.name for a in k.args] + [const_name(k.name, i) for i in range(const_count)]
                     + [o.name for o in arr_outs])
    fast = f"{k.name}_f64_entry"
    lines = [f"    {o.name} = _empty({tuple(o.shape)!r})" for o in arr_outs]
    if sca_outs:
        lines.append(f"    {', '.join(o.name for o in sca_outs)}{',' if len(sca_outs) == 1 else ''} = "
                     f"({fast}({call}),)" if len(sca_outs) == 1 else
                     f"    {', '.join(o.name for o in sca_outs)} = {fast}({call})")
    else:
        lines.append(f"    {fast}({call})")
    results = [o.name if o.shape != () else f"np.float64({o.name})" for o in k.outputs]
    lines.append(f"    return {results[0] if len(results) == 1 else '(' + ', '.join(results) + ')'}")
    return lines


def c_strides(shape, itemsize: int = 8) -> tuple:
    """Strides of a C-contiguous array of ``shape`` (as NumPy reports them for a fresh array)."""
    strides, step = [], itemsize
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def emit_module(g: Graph, kernels: list[KernelDef], header: list[str],
                runtime_import: str = RUNTIME_IMPORT, dtypes=DTYPES, max_ops: int | None = None) -> str:
    """The full source text of a module defining ``kernels`` for each of ``dtypes`` (bodies of
    more than ``max_ops`` operations split into parts, see :func:`emit_kernel`)."""
    const_lines: list[str] = []
    func_lines: list[str] = []
    wrapper_lines: list[str] = []
    for k in kernels:
        c, f = emit_kernel(g, k, dtypes, max_ops)
        const_lines += c
        func_lines += f
        wrapper_lines += emit_wrapper(k, len(c), dtypes)
    body = "\n".join(func_lines + wrapper_lines)
    helpers = helpers_used(body)
    # vecmath's functions: imported from symgrad (compiled once per process, cached on disk by Numba)
    # unless the module must stand alone (``symgrad compile``), which copies their text
    imported = vecmath_imports(body, helpers) if runtime_import == RUNTIME_IMPORT and vecmath_importable() else {}
    if imported:  # the copied block's pieces (functions and constants) are not needed then
        helpers = [h for h in helpers if h not in vm_library()]
    # ddmath's functions likewise (symgrad.emit.ddjit): copied, Numba compiled the sixteen that a region
    # with exp and cos calls again for every program, 4-5 s a build
    dd_imported = dd_imports(helpers) if runtime_import == RUNTIME_IMPORT and ddjit_importable() else []
    if dd_imported:
        helpers = [h for h in helpers if h not in dd_imported]
    helper_text = "\n".join(helper_source(h) for h in helpers)
    code = "\n".join(line for line in (body + "\n" + helper_text).splitlines() if not line.lstrip().startswith("#"))
    out = [c for line in header for c in comment_lines(line)]
    # only the imports the code uses: base64 for constants (_decode), math where called
    stdlib = (["base64"] if const_lines else []) + (["math"] if re.search(r"\bmath\.", code) else [])
    out += [f"import {m}" for m in stdlib] + ([""] if stdlib else [])
    fast_path_names = re.search(r"\b(_F64|_ndarray|_empty)\b", code)  # np's objects the array fast path reads
    uses_np = const_lines or fast_path_names or re.search(r"\bnp\.", code)
    out += ["import numba"] + (["import numpy as np"] if uses_np else []) + ["", runtime_import]
    if imported:
        out += ["", VECMATH_IMPORT, "from symgrad.emit.vecmath import ("]
        out += [f"    {name} as {alias}," for alias, name in imported.items()] + [")"]
    if dd_imported:
        out += ["", DDJIT_IMPORT, "from symgrad.emit.ddjit import ("]
        out += [f"    {name}," for name in dd_imported] + [")"]
    if fast_path_names:  # module-level aliases: globals, not attribute lookups on np
        out += ["", "_F64 = np.dtype(np.float64)  # the dtype object of every native float64 array",
                "_ndarray, _empty = np.ndarray, np.empty"]
    if const_lines:
        out += ["", "def _decode(data, shape, dtype):",
                '    """A constant array stored in this file as base64 bytes."""',
                "    return np.frombuffer(base64.b64decode(data), dtype=dtype).reshape(shape)", ""]
        out += const_lines
    library = [h for h in helpers if h.startswith("_vm")]
    for h in helpers:
        if h not in library:
            out += ["", helper_source(h).strip("\n")]
    out += func_lines + wrapper_lines
    if library:  # after the kernels, which look these names up when they are compiled (first call)
        out += ["", "", VECMATH_BANNER]
        for h in library:
            text = helper_source(h).strip("\n")
            out += ([text] if "\n" not in text and out[-1].startswith("_vm") else ["", text])
    return "\n".join(out) + "\n"
