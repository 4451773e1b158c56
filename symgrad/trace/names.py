"""Python identifiers made from user strings: parameter names, pytree keys, function names.

Every name symgrad puts into generated source comes from :func:`identifier` (or is
derived from one by :class:`symgrad.emit.names.Namespace`), so a user string reaches
generated code only as a valid, normalised identifier that cannot shadow anything the
generated module uses:

* NFKC-normalised first, as Python's parser does (``ﬁ`` and ``fi`` are one name);
* characters that cannot appear in an identifier become ``_`` (``'x-y'`` -> ``x_y``);
* a leading digit gets a ``_`` prefix (``'1abc'`` -> ``_1abc_``);
* keywords, builtins and every module-level name of a generated module (``np``,
  ``math``, ``numba``, ``GufuncSpec``, the runtime's helpers, ...) get a ``_`` suffix,
  as do ``t0, t1, ...`` (temporaries) and names starting with ``_`` (so a user name never
  equals a generated ``_b``, ``_i0``, ``_c0``, ``_sigmoid``, ``_decode`` or ``_F_SPEC``:
  those start with ``_`` and do not end with one).
"""
from __future__ import annotations

import builtins
import keyword
import re
import unicodedata

from ..runtime import gufunc as _runtime

__all__ = ["RESERVED", "identifier", "is_reserved", "unique"]

_SITE_BUILTINS = {"exit", "quit", "copyright", "credits", "license", "help", "display", "get_ipython"}

#: names user-derived identifiers never take
RESERVED = frozenset(
    set(keyword.kwlist)
    | {n for n in dir(builtins) if not n.startswith("_")} - _SITE_BUILTINS
    | {n for n in vars(_runtime) if not n.startswith("__")}
    | {"np", "math", "numba", "base64", "importlib", "os", "sys", "GufuncSpec", "gufunc_call",
       "_decode", "_sigmoid", "_softplus", "_erf", "_bd0", "_gufunc_call", "_ext", "_load_kernels",
       "out", "self", "_acc", "_heaviside", "_polygamma", "_BERNOULLI_2K", "_scipy_special", "_llvm",
       "_cython_address", "_erfcx_prime"}
)
_GENERATED = re.compile(r"t\d+|c\d+|_.*")


def is_reserved(name: str) -> bool:
    """True if ``name`` could clash with a name generated code defines or uses."""
    return name in RESERVED or _GENERATED.fullmatch(name) is not None


def identifier(text, default: str = "arg") -> str:
    """A valid, NFKC-normal, non-reserved Python identifier made from ``text`` (any object)."""
    text = unicodedata.normalize("NFKC", str(text))
    name = "".join(c if ("_" + c).isidentifier() else "_" for c in text) or default
    if not name[0].isidentifier():  # a digit or a combining mark cannot start an identifier
        name = "_" + name
    if not (name.isidentifier() and unicodedata.normalize("NFKC", name) == name):  # pragma: no cover
        name = "_" + "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"u{ord(c):x}" for c in name)
    if is_reserved(name):
        name += "_"
    return name


def unique(names: list[str]) -> list[str]:
    """Identifiers ``names`` with repeats renamed ``name_2, name_3, ...`` (never to another
    name of the list: ``['a', 'a', 'a_2']`` gives ``['a', 'a_3', 'a_2']``)."""
    taken = set(names)
    seen: set[str] = set()
    out = []
    for n in names:
        if n in seen:
            k = 2
            while identifier(f"{n}_{k}") in taken:
                k += 1
            n = identifier(f"{n}_{k}")
            taken.add(n)
        seen.add(n)
        out.append(n)
    return out
