"""Write generated source to a content-addressed file and import it.

Numba can cache machine code only for functions defined in a real file (no
locator exists for ``exec``'d strings, numba/numba#3501), so every generated
module is written under the cache directory, named by a hash of what
determines its text, and imported from there.  A new process that traces the
same function reuses both the file and Numba's compiled artifacts beside it.

The directory is ``$SYMGRAD_CACHE_DIR`` or ``~/.cache/symgrad``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from .._version import __version__

_MODULES: dict[str, object] = {}


def cache_dir() -> Path:
    root = os.environ.get("SYMGRAD_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "symgrad")
    path = Path(root) / f"v{__version__}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(*parts: object) -> str:
    """sha256 of the parts' reprs plus the versions that affect generated code."""
    import numba
    import numpy
    import sympy

    h = hashlib.sha256()
    for p in (__version__, numba.__version__, numpy.__version__, sympy.__version__, *parts):
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def module_path(name: str, key: str) -> Path:
    return cache_dir() / f"{name}_{key[:20]}.py"


def cached_module(name: str, key: str):
    """The module for ``key`` if it is loaded or on disk, else None."""
    mod = _MODULES.get(key)
    if mod is not None:
        return mod
    path = module_path(name, key)
    return _import(path, key) if path.exists() else None


def load_module(name: str, key: str, source: str):
    """Write ``source`` (if new) and import it; returns the module."""
    mod = _MODULES.get(key)
    if mod is not None:
        return mod
    path = module_path(name, key)
    if not path.exists() or path.read_text() != source:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(source)
        os.replace(tmp, path)
    return _import(path, key)


def _import(path: Path, key: str):
    mod_name = f"symgrad_generated.{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    _MODULES[key] = mod
    return mod
