"""Helper functions a generated module defines when its kernels call them.

Each is a scalar ``njit`` function (the printer only calls them on scalars:
array-valued elementwise code is emitted as loops), compiled lazily on first
use, evaluating a function in its numerically stable form.  Constants are
built from ``x`` itself so float32 stays float32: ``x ** 0`` is 1 in ``x``'s
dtype for every ``x``, inf and NaN included (``x - x + 1`` would be NaN at
+-inf, so ``sigmoid(inf)`` would be NaN instead of 1).

The vectorisable elementary functions of :mod:`symgrad.emit.vecmath` are helpers too, named
with the prefix ``_vm`` (``exp_f64`` -> ``_vm_exp_f64``, ``_div`` -> ``_vm_div``).  Modules that
symgrad loads import them from that file (:func:`vecmath_imports`: compiled once per machine and
cached by Numba, inlined by LLVM into each kernel); standalone modules copy their text (between the
file's two marker lines, one helper per function or constant), so they hold only what their kernels
call and run without symgrad installed.  Op emit facets call them when :func:`vecmath_enabled`
(``$SYMGRAD_VECMATH``, default on).
"""
from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path

from ..tables import ERFCX_TAYLOR


HELPERS = {
    "_sigmoid": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _sigmoid(x):
    """Logistic function without overflow: e = exp(-|x|) <= 1, then 1/(1+e) or e/(1+e)."""
    one = x ** 0
    e = np.exp(-abs(x))
    return one / (one + e) if x >= 0 else e / (one + e)
''',
    "_softplus": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _softplus(x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)) (Maechler 2012; dtype of x kept)."""
    zero = x ** 0 - x ** 0
    return max(x, zero) + np.log1p(np.exp(-abs(x)))
''',
    "_bd0": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _bd0(a, b):
    """a log(a/b) + b - a in float64 by Loader's (2000) algorithm (symgrad.ir.numpy_funcs.bd0):
    (a - b) v + 2a (v^3/3 + v^5/5 + ...), v = (a - b)/(a + b), where |a - b| < (a + b)/2."""
    A = np.float64(a)
    B = np.float64(b)
    d = A - B
    if abs(d) < 0.5 * abs(A + B):
        v = d / (A + B)
        v2 = v * v
        s = d * v
        ej = 2.0 * A * v
        for j in range(1, 31):
            ej *= v2
            s += ej / (2 * j + 1)
        return s
    if A == 0.0:
        return B
    return A * np.log(A / B) + B - A
''',
    "_erf": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _erf(x):
    """The error function (NumPy has no erf ufunc; Numba supports math.erf)."""
    return math.erf(x)
''',
    "_erfcx_prime": '''
# Taylor coefficients of erfcx' about 0.125 + 0.25 k (row k), lowest order first: the recurrence of
# symgrad.ir.numpy_funcs.erfcx_prime_taylor in 50-digit mpmath (symgrad.tables.ERFCX_TAYLOR)
_ERFCX_PRIME_TAYLOR = np.array(<ERFCX_PRIME_TAYLOR>)


@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def _erfcx_prime(x):
    """d/dx erfcx(x) in float64 by symgrad.ir.numpy_funcs.erfcx_prime's algorithm: for x >= 1.25
    -(2/sqrt(pi)) K/(x + K), K the tail of Laplace's continued fraction (DLMF 7.9.2) from
    8 + 180/x**1.5 terms; on [0, 1.25) the Taylor series of erfcx' about the nearest of 0.125,
    0.375, ..., 1.125 (_ERFCX_PRIME_TAYLOR, by Horner's rule); below 0, 2x erfcx(x) - 2/sqrt(pi)."""
    X = np.float64(x)
    if X >= 0.0 and X < 1.25:
        k = min(int(X / 0.25), _ERFCX_PRIME_TAYLOR.shape[0] - 1)
        h = X - (0.25 * k + 0.125)
        acc = 0.0
        for n in range(_ERFCX_PRIME_TAYLOR.shape[1] - 1, -1, -1):
            acc = acc * h + _ERFCX_PRIME_TAYLOR[k, n]
        return acc
    if not X >= 1.25:
        return 2.0 * X * _sc_erfcx(X) - 1.1283791670955126
    K = 0.0
    for k in range(int(8.0 + 180.0 / X ** 1.5), 0, -1):
        K = (0.5 * k) / (X + K)
    return -1.1283791670955126 * K / (X + K)
''',
    "_heaviside": '''
@numba.njit(cache=True, fastmath=False, error_model="numpy")
def _heaviside(x, h0):
    """NumPy's heaviside: 0 for x < 0, h0 at 0, 1 for x > 0, NaN for NaN (dtype of x kept)."""
    one = x ** 0
    if x != x:
        return x
    return one - one if x < 0 else (h0 if x == 0 else one)
''',
    "_polygamma": '''
_BERNOULLI_2K = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
                 -3617.0 / 510, 43867.0 / 798, -174611.0 / 330)


@numba.njit(cache=True, fastmath=False, error_model="numpy")
def _polygamma(n, x):
    """polygamma(n, x) in float64, as scipy.special.polygamma (cython_special has no Hurwitz zeta).

    n = 0: SciPy's psi.  n >= 1: the recurrence psi_n(x) = psi_n(x + 1) - (-1)**n n!/x**(n+1)
    (DLMF 5.15.5) up to x >= 20 + n, then the asymptotic series DLMF 5.15.8 with ten
    Bernoulli terms (the next term is below 1e-17 relative there).  Below x = -20 the
    reflection DLMF 5.15.6 first (``_polygamma_reflection``, symgrad/ir/gamma_reflection.py): the
    recurrence alone would take |x| steps (forever beyond 2**53, where x + 1 == x).
    """
    n = np.float64(n)
    x = np.float64(x)
    if n == 0.0:
        return _sc_psi(x)
    if n < 0.0 or n != math.floor(n) or x != x:
        return np.nan
    if x <= 0.0 and x == math.floor(x):
        return np.inf if n % 2.0 == 1.0 else np.nan
    if x < -20.0:  # DLMF 5.15.6 (symgrad/ir/gamma_reflection.py)
        if n % 2.0 == 1.0:
            return _polygamma_reflection(n, x) - _polygamma(n, 1.0 - x)
        return _polygamma_reflection(n, x) + _polygamma(n, 1.0 - x)
    sign = 1.0 if n % 2.0 == 1.0 else -1.0   # (-1)**(n+1)
    fact = math.gamma(n + 1.0)
    acc = 0.0
    while x < 20.0 + n:
        acc += sign * fact / x ** (n + 1.0)   # psi_n(x) = psi_n(x + 1) + (-1)**(n+1) n!/x**(n+1)
        x += 1.0
    s = math.gamma(n) / x ** n + fact / (2.0 * x ** (n + 1.0))
    for k in range(1, 11):
        s += _BERNOULLI_2K[k - 1] * math.exp(math.lgamma(2.0 * k + n) - math.lgamma(2.0 * k + 1.0)) / x ** (2.0 * k + n)
    return acc + sign * s
''',
}


def _table(rows, per_line: int = 5) -> str:
    """A tuple of rows of floats as Python source, ``per_line`` numbers to a line."""
    out = []
    for row in rows:
        lines = [", ".join(repr(v) for v in row[i:i + per_line]) for i in range(0, len(row), per_line)]
        out.append("    (" + ",\n     ".join(lines) + "),\n")
    return "(\n" + "".join(out) + ")"


HELPERS["_erfcx_prime"] = HELPERS["_erfcx_prime"].replace("<ERFCX_PRIME_TAYLOR>", _table(ERFCX_TAYLOR))

# SciPy's compiled special functions (scipy.special.cython_special), called from kernels as
# Numba external functions: the symbol is registered with LLVM when the module is imported,
# so kernels that call it stay cacheable (a ctypes pointer would make them uncacheable).
_SCIPY_SETUP = '''
import llvmlite.binding as _llvm
from numba.extending import get_cython_function_address as _cython_address


def _scipy_special(name, capsule, nargs):
    """SciPy's compiled scipy.special.<name> (double in, double out) as a Numba external function."""
    symbol = "symgrad_scipy_special_" + name
    _llvm.add_symbol(symbol, _cython_address("scipy.special.cython_special", capsule))
    return numba.types.ExternalFunction(symbol, numba.float64(*((numba.float64,) * nargs + (numba.intc,))))
'''


def _capsule(name: str, nargs: int) -> str:
    """The cython_special export of ``name`` taking and returning doubles (fused names vary)."""
    import ctypes

    import scipy.special.cython_special as cs

    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    want = "double (" + ", ".join(["double"] * nargs) + ", int __pyx_skip_dispatch)"
    for key in [name] + [f"__pyx_fuse_{i}{name}" for i in range(4)]:
        cap = cs.__pyx_capi__.get(key)
        if cap is not None and get_name(cap).decode() == want:
            return key
    raise LookupError(f"scipy.special.cython_special has no double version of {name}")


def _scipy_helper(name: str, nargs: int) -> str:
    args = ", ".join(f"x{i}" for i in range(nargs))
    conv = ", ".join(f"np.float64(x{i})" for i in range(nargs))
    return f'''
_sc_{name}_c = _scipy_special({name!r}, {_capsule(name, nargs)!r}, {nargs})


@numba.njit(cache=True, fastmath=False, error_model="numpy")
def _sc_{name}({args}):
    """scipy.special.{name}: SciPy's compiled implementation (cython_special), in float64."""
    return _sc_{name}_c({conv}, 0)
'''


def vecmath_enabled() -> bool:
    """Whether kernels call the vecmath helpers (``$SYMGRAD_VECMATH``: unset or ``1``: yes, the
    default; ``0``: the libm calls ``np.exp`` ..., which LLVM cannot vectorise).  Part of every
    generated module's cache key.

    Raises:
      ValueError: the variable is set to something other than ``0`` or ``1``.
    """
    text = os.environ.get("SYMGRAD_VECMATH", "").strip()
    if text in ("", "1"):
        return True
    if text == "0":
        return False
    raise ValueError(f"SYMGRAD_VECMATH must be 1 (vectorisable vecmath helpers, the default) or 0 (libm "
                     f"calls); got {text!r}")


_VM_BEGIN = "# ---- generated modules copy the text from here"
_VM_END = "# ---- end of the text generated modules copy"


def _vm_name(name: str) -> str:
    return "_vm" + name if name.startswith("_") else "_vm_" + name


def _copied_pieces(path: Path, rename, decorator: str = "") -> dict[str, tuple]:
    """``{renamed name: (source text, renamed names it uses, name, whether a function)}`` of the block between the marker lines
    of ``path``, in the file's order (each piece's dependencies come before it); functions get
    ``decorator`` when given (the block of :mod:`symgrad.ir.ddmath` is plain Python)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(_VM_BEGIN))
    end = next(i for i, line in enumerate(lines) if line.startswith(_VM_END))
    block = "\n".join(lines[start:end])
    tree = ast.parse(block)
    names = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node
        else:
            raise ValueError(f"{path.name} line {start + node.lineno}: the copied block holds only functions "
                             "and constants")
    pattern = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")
    block_lines = block.splitlines()
    pieces = {}
    for name, node in names.items():
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        src = "\n".join(block_lines[first - 1:node.end_lineno])
        if decorator and isinstance(node, ast.FunctionDef):
            src = decorator + "\n" + src
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in names and n.id != name}
        pieces[rename(name)] = (pattern.sub(lambda m: rename(m.group(1)), src) + "\n",
                                tuple(rename(u) for u in names if u in used), name,
                                isinstance(node, ast.FunctionDef))
    return pieces


@functools.lru_cache(maxsize=1)
def _vm_pieces() -> dict[str, tuple]:
    """``{_vm name: (source text, _vm names it uses, name in vecmath.py, whether a function)}`` in
    vecmath.py's order."""
    return _copied_pieces(Path(__file__).with_name("vecmath.py"), _vm_name)


_DD_JIT = '@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)'


@functools.lru_cache(maxsize=1)
def _dd_pieces() -> dict[str, tuple]:
    """``{_dd name: (source text, _dd names it uses)}``: the scalar double-double functions of
    symgrad/ir/ddmath.py (``dd_add`` -> ``_dd_add``), each ``numba.njit``, for region helpers."""
    return _copied_pieces(Path(__file__).parent.parent / "ir" / "ddmath.py", lambda n: "_" + n, _DD_JIT)


def dd_library_text() -> str:
    """The whole copied block of symgrad/ir/ddmath.py as generated modules copy it (``_dd`` names,
    functions ``numba.njit``, in the file's order): what :mod:`symgrad.emit.ddjit` compiles once."""
    return "\n".join(piece[0] for piece in _dd_pieces().values())


def dd_imports(helpers: list[str]) -> list[str]:
    """The double-double pieces (``_dd_exp``, its constants ...) among ``helpers``: what a generated
    module that may import symgrad imports from :mod:`symgrad.emit.ddjit` instead of copying."""
    return [h for h in helpers if h in _dd_pieces()]


def vm_library() -> frozenset[str]:
    """The renamed names (``_vm_exp_f64``, ``_vm_LG1`` ...) of every piece of vecmath.py's copied block."""
    return frozenset(_vm_pieces())


def cache_usable(load) -> bool:
    """Whether ``load()`` (the import of a module of ``cache=True`` Numba functions) succeeds here:
    Numba refuses to define such functions when it has nowhere to write their cache (a read-only
    install without a writable user cache directory); generated modules then copy the text instead,
    which symgrad's own cache layer compiles in memory when it must."""
    try:
        load()
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):
            raise
        return False
    return True


def _load_vecmath():
    from . import vecmath  # noqa: F401


@functools.lru_cache(maxsize=1)
def vecmath_importable() -> bool:
    """Whether symgrad.emit.vecmath imports here (:func:`cache_usable`)."""
    return cache_usable(_load_vecmath)


def vecmath_imports(body_text: str, helpers: list[str]) -> dict[str, str]:
    """``{alias: name in symgrad.emit.vecmath}`` for the vecmath functions that ``body_text`` or a
    helper outside the copied block (a ``_vm_..._call`` wrapper) calls: what a generated module that
    may import symgrad imports instead of copying the block's text."""
    origin = {alias: piece[2] for alias, piece in _vm_pieces().items() if piece[3]}
    texts = "\n".join([body_text] + [_helper_source(h) for h in helpers if h not in _vm_pieces()])
    return {alias: origin[alias] for alias in sorted(origin) if re.search(rf"\b{alias}\(", texts)}


@functools.lru_cache(maxsize=1)
def _gamma_pieces() -> dict[str, tuple]:
    """The scalar functions of symgrad/ir/gamma_reflection.py (``polygamma_reflection`` ->
    ``_polygamma_reflection``), each ``numba.njit``, for ``_polygamma``."""
    return _copied_pieces(Path(__file__).parent.parent / "ir" / "gamma_reflection.py", lambda n: "_" + n, _DD_JIT)


def _library_pieces() -> dict[str, tuple]:
    return {**_vm_pieces(), **_dd_pieces(), **_gamma_pieces()}


def _helper_source(name: str) -> str:
    if name in HELPERS:
        return HELPERS[name]
    if name in _vm_pieces():
        return _vm_pieces()[name][0]
    if name in _dd_pieces():
        return _dd_pieces()[name][0]
    if name in _gamma_pieces():
        return _gamma_pieces()[name][0]
    if name.startswith("_dd_region_"):
        from . import ddregion  # here: loading a generated module (a Dask worker) never imports SymPy

        return ddregion.helper_source(name)
    if name.startswith("_vm_") and name.endswith("_call") and name[:-5] in _vm_pieces():
        return _VM_CALL.format(name=name, inner=name[:-5])
    if name == "_scipy_special":
        return _SCIPY_SETUP
    if name.startswith("_sc_"):
        return _scipy_helper(name[4:], _scipy_arity(name[4:]))
    raise KeyError(name)


_VM_CALL = '''
@numba.njit(cache=True, fastmath=False, error_model="numpy", nogil=True)
def {name}(x):
    """{inner} as a function call, for scalar code (compiled once, not inlined at every use)."""
    return {inner}(x)
'''


def _scipy_arity(name: str) -> int:
    from ..ir.ops import REGISTRY

    if name == "psi":
        return 1
    for op in REGISTRY.values():
        if f"_sc_{name}" in op.helpers:
            return len(op.domain)
    raise KeyError(name)


def _all_helper_names() -> list[str]:
    from ..ir.ops import REGISTRY

    names = list(HELPERS) + list(_vm_pieces()) + list(_dd_pieces()) + list(_gamma_pieces())
    for op in REGISTRY.values():
        names += [h for h in op.helpers if h not in names]
    return names + (["_sc_psi"] if "_sc_psi" not in names else [])


def helpers_used(body_text: str) -> list[str]:
    """Names of the helpers that ``body_text`` calls, with the helpers those call, in a fixed
    order (the SciPy setup first when a ``_sc_`` helper is used)."""
    from . import ddregion  # here: loading a generated module (a Dask worker) never imports SymPy

    used: list[str] = []
    texts = [body_text]
    while texts:
        text = texts.pop()
        found = [n for n in _all_helper_names() if n not in used and f"{n}(" in text]
        found += [n for n in ddregion.region_helpers(text) if n not in used]
        while found:  # with the constants and functions a vecmath or double-double piece uses
            name = found.pop()
            if name not in used:
                used.append(name)
                texts.append(_helper_source(name))
                found += list(_library_pieces().get(name, ("", ()))[1])
    order = {n: k for k, n in enumerate(_all_helper_names())}
    used.sort(key=lambda n: (order.get(n, len(order)), n))  # region helpers last, by name
    return (["_scipy_special"] if any(n.startswith("_sc_") for n in used) else []) + used


def helper_source(name: str) -> str:
    """Source text of helper ``name`` (see :func:`helpers_used`)."""
    return _helper_source(name)
