"""Deterministic names and literals for generated code.

Temporaries are ``t0, t1, ...`` in evaluation order; array constants are
hidden arguments ``_c0, _c1, ...``; user argument names are kept (the tracer
made them identifiers with :func:`symgrad.trace.names.identifier`, which escapes
keywords and clashes).  Names derived from them (``x_bar``, ``out_dot``) come
from a :class:`Namespace`, so they never equal another name of the kernel, and
:func:`check_identifier` rejects anything else before it is printed.  User
text that is not a name (file names, rule names) reaches generated source only
through :func:`comment_lines` and :func:`docstring`, which escape it.

Float literals are typed per kernel dtype: Numba types a bare ``1.0`` as
float64, which would silently promote float32 arithmetic, so float32 kernels
spell ``np.float32(1.0)``.
"""
from __future__ import annotations

import keyword
import math
import re
import unicodedata

from ..trace.names import RESERVED, identifier

OUTPUT_NAMES = frozenset({"out"})  # reserved for users (a parameter `out` becomes `out_`), used for outputs

DTYPES = ("float64", "float32")
SUFFIX = {"float64": "f64", "float32": "f32"}


NODE_REF = "\x1f{}\x1f"  # a graph node named in a comment; the printer puts the code's name for it


def float_literal(value: float, dtype: str) -> str:
    """Source text for ``value`` as a constant of ``dtype``."""
    if math.isnan(value):
        text = "np.nan"
    elif math.isinf(value):
        text = "np.inf" if value > 0 else "-np.inf"
    else:
        text = repr(float(value))
    if dtype == "float64":
        return text
    return f"np.float32({text})"


class TempNamer:
    """Hands out ``t0, t1, ...`` in the order statements are emitted."""

    def __init__(self, prefix: str = "t"):
        self.prefix, self.count = prefix, 0

    def __call__(self) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        return name


def kernel_names(kname: str) -> list[str]:
    """Module-level names a kernel ``kname`` defines (its arguments must not shadow them)."""
    return [kname] + [f"{kname}_{SUFFIX[d]}{tag}" for d in DTYPES for tag in ("", "_batch", "_pbatch", "_entry")]


def spec_name(kname: str) -> str:
    """The module-level ``GufuncSpec`` of kernel ``kname`` (starts with ``_``: never a user name)."""
    return f"_{kname}_SPEC"


def const_name(kname: str, i: int) -> str:
    """The module-level array constant ``i`` of kernel ``kname``."""
    return f"_{kname}_C{i}"


_LOCAL = re.compile(r"t\d+|_b|_i\d+|_c\d+")  # temporaries, loop and batch indices, constants


def _safe(name: str) -> bool:
    return (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
            and unicodedata.normalize("NFKC", name) == name
            and name not in RESERVED - OUTPUT_NAMES and _LOCAL.fullmatch(name) is None)


class Namespace:
    """The names of one kernel: hands out derived names (``x_bar``, ``out_dot``) that are safe
    identifiers and collide with no name already taken (user arguments, other outputs, the
    kernel's own functions).

    >>> ns = Namespace(["x", "x_bar"])
    >>> ns.fresh("x_bar")
    'x_bar_2'
    """

    def __init__(self, taken=()):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name = base if _safe(base) else identifier(base)
        k = 1
        while name in self.taken or not _safe(name):
            k += 1
            name = identifier(f"{base}_{k}")
        self.taken.add(name)
        return name


def check_names(kname: str, names: list[str]) -> None:
    """Refuse to print a kernel whose argument/output names are unsafe or collide.

    Safe: a valid identifier, NFKC-normal (Python's parser normalises names, so ``ﬁ`` would
    be ``fi``), not a keyword, builtin or module-level name of generated code, not a
    temporary or loop index, distinct from each other and from the kernel's functions.
    The tracer and :class:`Namespace` only produce such names; this is the last check
    before any of them reaches generated source.
    """
    bad = [n for n in names if not _safe(n)]
    clash = set(names) & set(kernel_names(kname))
    if bad or clash or len(set(names)) != len(names) or not kname.isidentifier():
        raise ValueError(f"symgrad internal error: unsafe names for kernel {kname!r}: "
                         f"{sorted(map(repr, set(bad) | clash)) or names}")


def _escape(text: str) -> str:
    """``text`` with every non-printable character (newlines, NUL, U+2028, ...) escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


def comment_lines(text: str) -> list[str]:
    """``text`` as ``# ...`` comment lines: one per line, control characters escaped."""
    return [f"# {_escape(line)}".rstrip() for line in str(text).split("\n")]


def docstring(text: str) -> str:
    """A docstring literal for ``text``: triple-quoted when plain, else an escaped literal."""
    text = str(text)
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"""{text}"""'
    return repr(text)
