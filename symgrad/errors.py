"""symgrad's exception hierarchy and the user-source locations messages point at.

Every exception derives from :class:`SymgradError` and also from the builtin
exception a Python user would expect (``TypeError``, ``ValueError``,
``NotImplementedError``), so ``except ValueError`` keeps working.  Messages have
four parts: what failed; where in the user's function; why; and "Do instead:".
"""
from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass

import numpy as np

__all__ = [
    "SymgradError", "TraceError", "UnsupportedOperationError", "SignatureError",
    "ShapeError", "DTypeError", "RuleError", "ArgumentError", "SymgradWarning", "CacheWarning", "SourceLoc",
    "user_location", "traceback_location", "format_error",
]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIP_DIRS = (_PKG_DIR, os.path.dirname(os.path.abspath(os.__file__)))


class SymgradError(Exception):
    """Base class of every error symgrad raises on purpose."""


class TraceError(SymgradError, TypeError):
    """The function did something that has no single symbolic meaning.

    Raised for Python control flow on a traced value (``if x > 0:``), conversion
    of a traced value to a Python number (``math.exp(x)``, ``float(x)``), and
    indexing with a traced value.
    """


class UnsupportedOperationError(SymgradError, NotImplementedError):
    """The function called a numpy function or ufunc that has no symgrad rule."""


class SignatureError(SymgradError, ValueError):
    """A gufunc signature is malformed or does not match the arguments."""


class ShapeError(SymgradError, ValueError):
    """Argument shapes do not match the core shapes bound at the first call."""


class DTypeError(SymgradError, TypeError):
    """An argument has a dtype symgrad cannot differentiate or compile for."""


class RuleError(SymgradError, TypeError):
    """A user-supplied derivative rule (``custom_gradient``) broke its contract."""


class ArgumentError(SymgradError, TypeError):
    """A transformed function was called with arguments its Python function cannot take
    (too many or too few positional arguments, an unknown keyword)."""


class SymgradWarning(UserWarning):
    """Something works but will be slow or surprising (e.g. a kernel so large that Numba
    needs minutes to compile it)."""


class CacheWarning(UserWarning):
    """symgrad's on-disk cache could not be used as it is; results are still correct.

    Issued once per process and directory when the cache directory
    (``$SYMGRAD_CACHE_DIR``, default ``~/.cache/symgrad``) cannot be created or
    written: generated modules are then compiled in memory, and every new process
    compiles them again.  To fix it, set ``SYMGRAD_CACHE_DIR`` to a writable
    directory.  Also issued when a cache file fails its integrity check
    (truncated, overwritten or edited): the file is never loaded, and is rebuilt.
    A warning, not an error: silence it with
    ``warnings.filterwarnings("ignore", category=symgrad.errors.CacheWarning)``.
    """


@dataclass(frozen=True)
class SourceLoc:
    """A place in the user's code: function name, file, line and the line's text."""

    function: str
    filename: str
    lineno: int
    line: str

    def __str__(self) -> str:
        return f"in {self.function} at {self.filename}:{self.lineno}\n    {self.lineno} | {self.line}"


_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


def _is_internal(filename: str) -> bool:
    path = os.path.abspath(filename)
    if path.startswith(_PKG_DIR) and os.sep + "tests" + os.sep not in path:
        return True
    # NumPy's own files, not any path with a directory ending in "numpy" (a project in ~/my-numpy/)
    return path.startswith(_NUMPY_DIR) or filename.startswith("<frozen")


def user_location(skip: int = 1) -> SourceLoc | None:
    """The innermost stack frame that belongs to user code (not symgrad, numpy or stdlib)."""
    frame = sys._getframe(skip)
    while frame is not None:
        code = frame.f_code
        if not _is_internal(code.co_filename):
            line = linecache.getline(code.co_filename, frame.f_lineno).strip()
            return SourceLoc(code.co_qualname, code.co_filename, frame.f_lineno, line)
        frame = frame.f_back
    return None


def traceback_location(tb) -> SourceLoc | None:
    """The innermost user-code frame of a traceback (for errors caught after the stack unwound)."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_internal(code.co_filename):
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            found = SourceLoc(code.co_qualname, code.co_filename, tb.tb_lineno, line)
        tb = tb.tb_next
    return found


def format_error(what: str, why: str, do_instead: str, loc: SourceLoc | None = None) -> str:
    """Assemble the four-part message used by every symgrad error."""
    parts = [what]
    if loc is not None:
        parts.append(f"  {loc}")
    parts.append(f"  {why}")
    parts.append(f"  Do instead: {do_instead}")
    return "\n".join(parts)
