"""Values a traced function reads from outside its arguments, and whether they changed.

Tracing runs the function once on symbolic arguments; every number or array it
reads from a global, a closure cell, an object attribute (``self.w`` in a bound
method) or a ``functools.partial`` becomes a constant of the compiled code.
JAX's ``jit`` has the same rule and documents it; symgrad goes one step further:
it records a cheap fingerprint of those values when it traces, compares it on
every call, and traces again when one changed, so a call never uses a stale
value.

What is watched (``captured_values``): numbers, booleans, NumPy arrays and
scalars, and short tuples/lists of numbers, reached from the function through
its closure cells, the global names its code (and the code of nested functions
and lambdas) mentions, the attributes of the object of a bound method and of
user-defined objects held in those places (numeric class attributes included), and the arguments of a
``functools.partial``; Python functions found there are followed two levels
deep.  Modules, classes and other objects are not.

Fingerprints: numbers by value; arrays by identity, shape, dtype and an Adler-32
checksum of their bytes (arrays of more than ``FULL_CHECKSUM_ELEMENTS``
elements: of an evenly strided sample of that many elements, so an in-place
change that leaves every sampled element alone is not seen; pass large arrays
that change as arguments).
"""
from __future__ import annotations

import functools
import numbers
import types
import zlib

import numpy as np

__all__ = ["Captures", "captured_values", "FULL_CHECKSUM_ELEMENTS"]

FULL_CHECKSUM_ELEMENTS = 1 << 14
_MAX_SEQUENCE = 64
_DEPTH = 2
_EMPTY = object()  # a name not bound (yet)


def _is_numeric(v) -> bool:
    if isinstance(v, (bool, numbers.Number, np.ndarray, np.generic)):
        return not isinstance(v, np.ndarray) or v.dtype.kind in "biuf"
    if isinstance(v, (tuple, list)) and 0 < len(v) <= _MAX_SEQUENCE:
        return all(isinstance(x, (bool, numbers.Number, np.generic)) for x in v)
    return False


def _is_user_object(v) -> bool:
    """An instance of a class defined outside the standard library, NumPy and symgrad."""
    if isinstance(v, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, functools.partial)):
        return False
    module = getattr(type(v), "__module__", "") or ""
    return hasattr(v, "__dict__") and module.split(".")[0] not in ("builtins", "numpy", "symgrad", "scipy",
                                                                    "sympy", "numba", "functools", "typing")


def _code_names(code) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def captured_values(fn, reads: list | None = None) -> list[tuple[str, object]]:
    """(where, value) for every number or array ``fn`` may read from outside its arguments.

    With a list ``reads``, also appends ``(container, key, value)`` for every lookup the walk
    made (a closure cell with key None, or a mutable mapping and its key) and the object it
    found: while each lookup still finds the same object, the walk would find the same values.
    """
    found: dict[int, tuple[str, object]] = {}
    seen: set[int] = set()
    note = reads.append if reads is not None else (lambda item: None)

    def add(where: str, v, depth: int) -> None:
        if _is_numeric(v):
            found.setdefault(id(v) if isinstance(v, np.ndarray) else hash((where, id(v))), (where, v))
        elif isinstance(v, (types.FunctionType, types.MethodType, functools.partial)) and depth > 0:
            visit(v, depth - 1, where)
        elif _is_user_object(v) and id(v) not in seen:
            seen.add(id(v))
            attrs = vars(v)
            for k, attr in list(attrs.items()):
                if _is_numeric(attr):
                    note((attrs, k, attr))
                    add(f"{where}.{k}", attr, depth)
            for cls in type(v).__mro__[:-1]:  # class-level numbers the instance reads (``class M: w = 1.0``)
                for k, attr in list(vars(cls).items()):
                    if k in attrs or k.startswith("__") or not _is_numeric(attr):
                        continue
                    note((attrs, k, _EMPTY))  # an instance attribute set later shadows it
                    note((vars(cls), k, attr))
                    add(f"{where}.{k}", attr, depth)

    def visit(f, depth: int, prefix: str = "") -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        if isinstance(f, functools.partial):
            for k, a in enumerate(f.args):
                add(f"{prefix or 'partial'}.args[{k}]", a, depth)
            for k, a in (f.keywords or {}).items():
                note((f.keywords, k, a))
                add(f"{prefix or 'partial'}.keywords[{k!r}]", a, depth)
            visit(f.func, depth, prefix)
            return
        if isinstance(f, types.MethodType):
            add(getattr(f.__self__, "__class__", type(f)).__name__ if not prefix else prefix, f.__self__, depth)
            f = f.__func__
        code = getattr(f, "__code__", None)
        if code is None:
            return
        if f.__closure__:
            for name, cell in zip(code.co_freevars, f.__closure__):
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell (a name assigned after the function was made)
                    value = _EMPTY
                note((cell, None, value))
                if value is not _EMPTY:
                    add(name, value, depth)
        glb = getattr(f, "__globals__", {})
        for name in sorted(_code_names(code)):
            value = glb.get(name, _EMPTY)
            note((glb, name, value))
            if value is not _EMPTY:
                add(name, value, depth)

    visit(fn, _DEPTH)
    return list(found.values())


def _fingerprint(v):
    if isinstance(v, np.ndarray):
        flat = v.reshape(-1)
        if flat.size > FULL_CHECKSUM_ELEMENTS:
            flat = flat[:: flat.size // FULL_CHECKSUM_ELEMENTS]
        data = np.ascontiguousarray(flat)
        return (id(v), v.shape, v.dtype.str, zlib.adler32(memoryview(data).cast("B")))
    if isinstance(v, list):
        return ("list", tuple(v))
    if isinstance(v, np.generic):
        return (v.dtype.str, v.item())
    return v


class Captures:
    """Fingerprints of the values ``fn`` reads from outside its arguments (see the module docstring).

    :meth:`changed` runs on every call, so it does not walk the function again: it repeats the
    walk's lookups (``reads``) and checks that each finds the object it found then (a rebound
    name sends it to the full walk), then fingerprints the values that can change in place
    (arrays and lists).
    """

    __slots__ = ("fn", "items", "prints", "reads", "mutable")

    def __init__(self, fn):
        self.fn = fn
        self.reads: list = []
        self.items = captured_values(fn, self.reads)
        self.prints = [_fingerprint(v) for _, v in self.items]
        self.mutable = [k for k, (_, v) in enumerate(self.items) if isinstance(v, (np.ndarray, list))]

    def __bool__(self) -> bool:
        return bool(self.items)

    def _same_bindings(self) -> bool:
        for container, key, value in self.reads:
            if key is None:
                try:
                    now = container.cell_contents
                except ValueError:
                    now = _EMPTY
            else:
                now = container.get(key, _EMPTY)
            if now is not value:
                return False
        return True

    def changed(self) -> list[str]:
        """Where a value changed since this snapshot (or was rebound to a new object); empty if none."""
        if self._same_bindings():
            return [self.items[k][0] for k in self.mutable if _fingerprint(self.items[k][1]) != self.prints[k]]
        now = captured_values(self.fn)
        if len(now) != len(self.items):
            return sorted({w for w, _ in now} ^ {w for w, _ in self.items}) or ["a captured value"]
        return [w for (w, v), old in zip(now, self.prints) if _fingerprint(v) != old]
