"""Ahead-of-time modules: derivative kernels in a file that needs neither symgrad nor SymPy.

:func:`module_source` traces each function into one graph, builds the requested
kernels with :func:`symgrad.api.build.build_kernel` (stabilised as in the JIT
path), and assembles them with :func:`symgrad.emit.module.emit_module`, the
runtime import replaced by the source of :mod:`symgrad.runtime.gufunc` (NumPy
only).  The result imports numpy and numba, keeps ``njit(cache=True)``
kernels (machine code is cached in ``__pycache__`` beside the module after the
first call) and broadcasts exactly like the JIT path, because it runs the same
generated code and the same runtime.

:func:`build_shared` compiles the same kernels with Numba's ahead-of-time
compiler (``numba.pycc.CC``, deprecated by Numba but present in 0.68) into an
extension module plus a small wrapper module that imports with NumPy alone.
Limits of the shared build: every kernel is compiled for fixed types (the
chosen dtypes, arrays of any layout with the traced core shapes); there is no
``parallel`` variant; the extension is specific to the platform, Python and
NumPy ABI it was built with; building needs a C compiler and Numba.

This is the only module that imports ``numba.pycc``.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DERIVATIVES = ("grad", "vjp", "jvp", "hessian")
ALL_DTYPES = ("float64", "float32")
FORMULA_CHARS = 400


class AOTError(Exception):
    """The ahead-of-time build cannot be done (bad request or missing toolchain)."""


@dataclass
class Target:
    """A function to compile, with example arguments fixing structure and core shapes."""

    fn: object
    args: tuple
    signature: str | None = None


@dataclass
class Built:
    graph: object
    kernels: list
    header: list = field(default_factory=list)
    doc: list = field(default_factory=list)
    aliases: dict = field(default_factory=dict)


def runtime_source() -> str:
    """Source of :mod:`symgrad.runtime.gufunc`, copied verbatim into standalone modules.

    It imports symgrad's error classes only when symgrad is already loaded, so a
    standalone module never imports symgrad (or SymPy).
    """
    from ..runtime import gufunc

    text = Path(gufunc.__file__).read_text()
    return "# --- runtime: symgrad/runtime/gufunc.py " + "-" * 40 + "\n" + text.rstrip() + "\n# --- end of runtime " + "-" * 59


def _check_dtypes(dtypes) -> tuple:
    dtypes = tuple(dict.fromkeys(dtypes))
    bad = [d for d in dtypes if d not in ALL_DTYPES]
    if bad or not dtypes:
        raise AOTError(f"--dtype: expected float64 and/or float32, got {','.join(dtypes) or 'nothing'}")
    return dtypes


def _text(expr) -> str:
    text = str(expr)
    return text if len(text) <= FORMULA_CHARS else text[:FORMULA_CHARS] + f" ... ({len(text)} characters)"


def build(targets: list[Target], kinds=("grad",), *, stabilize: bool = True, budget: float = 2.0,
          progress=None) -> Built:
    """Trace every target into one graph and build its kernels: the function, then each of ``kinds``."""
    from ..api.pipeline import build
    from ..api.traced import symbols_for, to_sympy
    from ..ir.interpret import evaluate
    from ..trace.pytree import tree_flatten
    from ..trace.signature import parse_signature
    from ..trace.trace import trace_program

    stage = progress.stage if progress is not None else (lambda *a, **k: contextlib.nullcontext())
    bad = [k for k in kinds if k not in DERIVATIVES]
    if bad:
        raise AOTError(f"unknown derivative kind(s) {bad}; expected some of {DERIVATIVES}")
    g = None
    built = Built(None, [])
    names: set = set()
    for t in targets:
        fname = getattr(t.fn, "__name__", "function")
        with stage("trace", fname):
            leaves, _ = tree_flatten(tuple(t.args))
            sig = parse_signature(t.signature, fname)
            cores = [()] * len(leaves) if sig is None else sig.bind([np.shape(l) for l in leaves], fname)[0]
            p = trace_program(t.fn, t.args, [tuple(c) for c in cores], graph=g)
        g = p.graph
        if p.name in names:
            raise AOTError(f"two functions named {p.name!r}; a module holds one function per name")
        names.add(p.name)
        wrt = list(range(len(p.inputs)))
        shapes = ", ".join(f"{n}: {g.shape(i) or 'scalar'}" for n, i in zip(p.arg_names, p.inputs))
        built.doc += [f"{p.name}({', '.join(p.arg_names)})  [{p.origin}]",
                      f"    signature {t.signature or 'scalar arguments'}; core shapes {shapes}"]
        for kind in ("jit",) + tuple(kinds):
            with stage("differentiate and stabilise" if stabilize else "differentiate", f"{p.name} {kind}"):
                b = build(p, kind, wrt, stabilize=budget if stabilize else False)
            k = b.kernel
            built.header += [f"{k.name}: {line}" for line in b.stabilizer_notes]
            env = {a.node: symbols_for(a.name, a.shape) for a in k.args}
            forms = [to_sympy(v) for v in evaluate(g, [o.node for o in k.outputs], env, mode="sympy")]
            built.doc.append(f"    {k.name}({', '.join(a.name for a in k.args)}) -> "
                             f"{', '.join(o.name for o in k.outputs)}")
            built.doc += [f"        {o.name} = {_text(e)}" for o, e in zip(k.outputs, forms)]
            built.kernels.append(k)
            if kind == "jit":
                built.aliases[p.name] = k.name
        built.doc.append("")
    built.graph = g
    return built


def _docstring(built: Built, dtypes, shared: bool) -> str:
    how = ("The kernels are compiled into the extension module beside this file (Numba AOT); "
           "this wrapper imports numpy only." if shared else
           "Kernels are numba.njit(cache=True): the first call of each dtype compiles it and caches the "
           "machine code in __pycache__ beside this file; later processes load it from there.")
    lines = ["Standalone derivative kernels generated by `symgrad compile` (needs numpy"
             + (")." if shared else " and numba)."), "",
             "Every entry point broadcasts leading (batch) dimensions like a NumPy gufunc and takes",
             "float64/float32 arrays or Python numbers; `<name>_<kind>` returns the outputs listed below",
             "(a tuple when several).  Formulas are the forms the code computes (after stabilisation).",
             f"Compiled dtypes: {', '.join(dtypes)}.  {how}", "", "Functions:", ""]
    lines += built.doc
    text = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{text.rstrip()}\n"""\n'


def _dtype_shim(dtypes) -> list[str]:
    """When a dtype is not compiled, convert arguments to one that is."""
    if set(dtypes) == set(ALL_DTYPES):
        return []
    target = dtypes[0]
    if target == "float64":
        conv = "np.asarray(a, np.float64) if getattr(a, 'dtype', None) == np.float32 else a"
    else:
        conv = "np.asarray(a, np.float32)"
    return ["", "",
            "_gufunc_call = gufunc_call",
            "",
            "",
            "def gufunc_call(spec, args, parallel=False):",
            f'    """Run the {target} kernels (the only dtype compiled into this module)."""',
            f"    return _gufunc_call(spec, tuple({conv} for a in args), parallel)"]


def _finish(text: str, built: Built, dtypes) -> str:
    out = [text.rstrip("\n")] + _dtype_shim(dtypes)
    public = []
    for alias, kname in built.aliases.items():
        if not re.search(rf"^(def |){re.escape(alias)}\b", text, flags=re.M):
            out += ["", "", f"{alias} = {kname}"]
            public.append(alias)
    public += [k.name for k in built.kernels]
    out += ["", "", f"__all__ = {public!r}", ""]
    return "\n".join(out)


def module_source(built: Built, dtypes=ALL_DTYPES) -> str:
    """Source of a standalone module (numpy and numba only) holding ``built``'s kernels."""
    from .._version import __version__
    from ..emit.module import emit_module

    dtypes = _check_dtypes(dtypes)
    header = [f"Generated by symgrad {__version__} (`symgrad compile`); do not edit, regenerate instead.",
              "Imports numpy and numba only."] + built.header
    text = emit_module(built.graph, built.kernels, header, runtime_import=runtime_source(), dtypes=dtypes)
    if "from symgrad" in re.sub(r"#.*|    from symgrad\.errors import .*", "", text):
        raise AOTError("generated module still imports symgrad")  # guards against emitter changes
    return _docstring(built, dtypes, shared=False) + _finish(text, built, dtypes)


def write(path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


# -- shared library (numba.pycc) -----------------------------------------------------------------------
def shared_available() -> tuple[bool, str]:
    """(whether numba.pycc can build extensions here, reason when it cannot)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from numba.pycc import CC  # noqa: F401
    except ImportError as exc:
        return False, f"numba.pycc is not available in this Numba ({exc})"
    import shutil
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None and shutil.which("cc") is None:
        return False, "no C compiler found (numba.pycc links the extension with the system compiler)"
    return True, ""


def _import_path(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def build_shared(built: Built, out_path, dtypes=ALL_DTYPES, progress=None) -> list[Path]:
    """Compile ``built`` with numba.pycc: ``<stem>_kernels<ext suffix>`` plus the numpy-only wrapper ``out_path``.

    Returns the paths written.
    """
    ok, why = shared_available()
    if not ok:
        raise AOTError(f"--shared is unavailable: {why}")
    from numba import types
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from numba.pycc import CC

    from ..emit.module import emit_kernel, emit_wrapper
    from ..emit.names import SUFFIX, comment_lines, spec_name

    stage = progress.stage if progress is not None else (lambda *a, **k: contextlib.nullcontext())
    dtypes = _check_dtypes(dtypes)
    out_path = Path(out_path)
    stem = out_path.stem
    if not stem.isidentifier():
        raise AOTError(f"-o {out_path.name}: the module name {stem!r} is not a Python identifier")
    ext_name = f"{stem}_kernels"
    source = module_source(built, dtypes)
    if "_scipy_special(" in source:  # see symgrad.emit.prelude: SciPy's code is linked at import
        raise AOTError("--shared cannot build kernels that call scipy.special functions (they link "
                       "SciPy's compiled code when the module is imported); build the module form "
                       "(without --shared), which imports scipy")
    nbt = {"float64": types.float64, "float32": types.float32, "bool": types.boolean}
    with tempfile.TemporaryDirectory(prefix="symgrad_aot_") as tmp:
        mod = _import_path(write(Path(tmp) / f"_symgrad_aot_{stem}.py", source), f"_symgrad_aot_{stem}")
        try:
            cc = CC(ext_name)
            cc.output_dir = str(out_path.parent.resolve())
            cc.verbose = False
            for k in built.kernels:
                consts = getattr(mod, spec_name(k.name)).consts
                for d in dtypes:
                    sfx = SUFFIX[d]
                    ctypes = [types.Array(nbt["bool"] if c.dtype == bool else nbt[d], c.ndim, "C") for c in consts]
                    args = [types.Array(nbt[d], 1 + len(a.shape), "A") for a in k.args]
                    outs = [types.Array(nbt[d], 1 + len(o.shape), "C") for o in k.outputs]
                    fn = getattr(mod, f"{k.name}_{sfx}_batch").py_func
                    cc.export(f"{k.name}_{sfx}_batch", types.void(*args, *ctypes, *outs))(fn)
                scalar = all(a.shape == () for a in k.args) and all(o.shape == () for o in k.outputs)
                for d in (dtypes if scalar and k.args else ()):  # scalar cores: plain-number calls
                    ret = nbt[d] if len(k.outputs) == 1 else types.UniTuple(nbt[d], len(k.outputs))
                    ctypes = [types.Array(nbt["bool"] if c.dtype == bool else nbt[d], c.ndim, "C")
                              for c in consts]
                    core = getattr(mod, f"{k.name}_{SUFFIX[d]}").py_func
                    cc.export(f"{k.name}_{SUFFIX[d]}", ret(*[nbt[d]] * len(k.args), *ctypes))(core)
            with stage("compile", f"numba.pycc {ext_name}"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cc.compile()
            ext_file = Path(cc.output_dir) / Path(cc.output_file).name
        finally:
            sys.modules.pop(f"_symgrad_aot_{stem}", None)
    # the numpy-only wrapper: runtime, constants, kernels bound from the extension, entry points
    const_lines, wrapper_lines, bind = [], [], []
    for k in built.kernels:
        c, _ = emit_kernel(built.graph, k, dtypes)
        const_lines += c
        wrapper_lines += emit_wrapper(k, len(c), dtypes)
        scalar = all(a.shape == () for a in k.args) and all(o.shape == () for o in k.outputs)
        for d in dtypes:
            bind.append(f"{k.name}_{SUFFIX[d]}_batch = _ext.{k.name}_{SUFFIX[d]}_batch")
            if scalar and k.args:
                bind.append(f"{k.name}_{SUFFIX[d]} = _ext.{k.name}_{SUFFIX[d]}")
    from .._version import __version__

    lines = [f"# Generated by symgrad {__version__} (`symgrad compile --shared`); do not edit, regenerate instead.",
             f"# Kernels: {ext_file.name} (Numba AOT, fixed signatures); this file imports numpy only."]
    lines += [c for h in built.header for c in comment_lines(h)]
    lines += ["import base64", "import importlib.util", "import math", "import os", "", "import numpy as np", "",
              runtime_source(), "", "",
              "def _decode(data, shape, dtype):",
              '    """A constant array stored in this file as base64 bytes."""',
              "    return np.frombuffer(base64.b64decode(data), dtype=dtype).reshape(shape)", "", "",
              "def _load_kernels():",
              '    """Import the compiled extension that sits beside this file."""',
              f"    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), {ext_file.name!r})",
              f"    spec = importlib.util.spec_from_file_location({ext_name!r}, path)",
              "    module = importlib.util.module_from_spec(spec)",
              "    spec.loader.exec_module(module)",
              "    return module", "", "",
              "_ext = _load_kernels()"] + bind
    if const_lines:
        lines += [""] + const_lines
    text = "\n".join(lines + wrapper_lines) + "\n"
    wrapper = _docstring(built, dtypes, shared=True) + _finish(text, built, dtypes)
    write(out_path, wrapper)
    return [out_path, ext_file]
