"""Write generated source to a content-addressed file and import it.

Numba can cache machine code only for functions defined in a real file (no
locator exists for ``exec``'d strings, numba/numba#3501), so every generated
module is written under the cache directory, named by a hash of what
determines its text, and imported from there.  A new process that traces the
same function reuses both the file and Numba's compiled artifacts beside it.

The directory is ``$SYMGRAD_CACHE_DIR`` or ``~/.cache/symgrad``.

Reliability:

* **Integrity.**  Every module file ends with a line ``# symgrad-sha256: <hex>``
  over the text before it.  A file whose checksum does not match (truncated,
  overwritten, edited, bit-flipped) is never executed: it is rebuilt, with a
  :class:`~symgrad.errors.CacheWarning`.  The verified bytes are compiled
  directly (no ``.pyc`` is read or written), so what runs is what was checked.
  Numba's index (``.nbi``) and data (``.nbc``) files for these modules get the
  same treatment: :class:`_VerifiedCacheFile` prefixes each with a sha256 of its
  payload, stores the signature key inside each data file, and treats a
  mismatch as a cache miss (Numba recompiles and overwrites the file).
* **Atomic writes.**  Files are written to a temporary name in the same
  directory and moved into place with :func:`os.replace`, so a reader (another
  process) sees either no file or a complete one.  Numba's index is updated
  under an advisory lock on its directory, so processes compiling different
  signatures of one function at once do not drop each other's entries.
* **Unusable directory.**  If the directory cannot be created or written, one
  :class:`~symgrad.errors.CacheWarning` names it, and generated modules are
  compiled in memory for the rest of the process (Numba's ``cache=True`` is
  turned off for them, since Numba cannot cache without a writable directory).
* **Threads.**  Loading is serialised by a lock, so a module is executed once
  per process however many threads ask for it.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import linecache
import os
import pickle
import re
import sys
import tempfile
import threading
import types
import warnings
from pathlib import Path

from .._version import __version__
from ..emit.prelude import vecmath_enabled
from ..errors import CacheWarning

_MODULES: dict[str, object] = {}
_LOCK = threading.RLock()
_DIR_STATE: dict[str, bool] = {}  # resolved cache directory -> usable (probed once per process)
CHECKSUM_PREFIX = "# symgrad-sha256: "


def cache_dir() -> Path:
    """The configured cache directory (``$SYMGRAD_CACHE_DIR/v<version>``), created if possible."""
    root = os.environ.get("SYMGRAD_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "symgrad")
    path = Path(root) / f"v{__version__}"
    with contextlib.suppress(OSError):
        path.mkdir(parents=True, exist_ok=True)
    return path


def usable_cache_dir() -> Path | None:
    """The cache directory if symgrad (and Numba, in its ``__pycache__``) can write there, else None.

    Probed once per process and directory; the first failure issues the one
    :class:`CacheWarning` for that directory.
    """
    path = cache_dir()
    state = _DIR_STATE.get(str(path))
    if state is None:
        with _LOCK:
            state = _DIR_STATE.get(str(path))
            if state is None:
                try:
                    for d in (path, path / "__pycache__"):
                        d.mkdir(parents=True, exist_ok=True)
                        fd, probe = tempfile.mkstemp(dir=d, prefix=".probe-")
                        os.close(fd)
                        os.unlink(probe)
                    state = True
                except OSError as exc:
                    _disable(path, exc)
                    state = False
                _DIR_STATE.setdefault(str(path), state)
    return path if state else None


def _disable(path: Path, exc: BaseException) -> None:
    """Mark ``path`` unusable for this process and warn (once per directory)."""
    with _LOCK:
        if _DIR_STATE.get(str(path)) is False:
            return
        _DIR_STATE[str(path)] = False
    warnings.warn(
        f"symgrad cannot use its cache directory {str(path)!r} ({type(exc).__name__}: {exc}). "
        "Compiled functions are kept in memory for this process only and will be compiled again by "
        "every new process. Do instead: set SYMGRAD_CACHE_DIR to a directory you can write to "
        "(or fix the permissions of this one).", CacheWarning, stacklevel=_stacklevel())


def _stacklevel() -> int:
    """Stack level of the innermost frame outside symgrad, its generated modules and Numba, so
    warnings point at user code."""
    internal = [str(Path(__file__).resolve().parents[1]), "<symgrad:", str(cache_dir())]
    numba = sys.modules.get("numba")
    if getattr(numba, "__file__", None):
        internal.append(os.path.dirname(numba.__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(tuple(internal)):
        frame, level = frame.f_back, level + 1
    return level


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """sha256 of symgrad's own source files: a changed rule, stabiliser or printer must not
    reuse modules generated by the old code (version numbers alone do not change between edits)."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(*parts: object) -> str:
    """sha256 of the parts' reprs plus everything else that determines generated code:
    the versions of symgrad, Numba, NumPy and SymPy, symgrad's own source, and the
    environment switches the emitter and the stabiliser read (``$SYMGRAD_VECMATH``: vecmath helpers
    or libm calls; ``$SYMGRAD_DD_REGIONS``: double-double regions allowed or not), so a module
    generated under one setting is never reused under the other.

    Raises:
      ValueError: ``$SYMGRAD_VECMATH`` or ``$SYMGRAD_DD_REGIONS`` is set to something other than 0 or 1.
    """
    import numba
    import numpy
    import sympy

    from ..ir.ddprogram import dd_regions_enabled  # here: a Dask worker loading a module never imports symgrad.ir

    h = hashlib.sha256()
    switches = ("vecmath", vecmath_enabled(), "dd_regions", dd_regions_enabled())
    for p in (__version__, code_hash(), numba.__version__, numpy.__version__, sympy.__version__, switches, *parts):
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


# -- the module file format: source + checksum trailer ---------------------------------------------
def with_checksum(source: str) -> str:
    """``source`` followed by the line ``# symgrad-sha256: <sha256 of source>``."""
    if not source.endswith("\n"):
        source += "\n"
    return f"{source}{CHECKSUM_PREFIX}{hashlib.sha256(source.encode()).hexdigest()}\n"


def verified_source(data: bytes) -> str | None:
    """The source in a module file's bytes if its checksum trailer matches, else None."""
    body, sep, last = data.rstrip(b"\n").rpartition(b"\n")
    if not sep or not last.startswith(CHECKSUM_PREFIX.encode()):
        return None
    body += b"\n"
    if hashlib.sha256(body).hexdigest().encode() != last[len(CHECKSUM_PREFIX):].strip():
        return None
    try:
        return body.decode()
    except UnicodeDecodeError:
        return None


def _read_verified(path: Path) -> str | None:
    """The verified source stored at ``path``; None if absent; warns and returns None if corrupt."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.warn(f"symgrad could not read cache file {str(path)!r} ({exc}); it is rebuilt.",
                      CacheWarning, stacklevel=_stacklevel())
        return None
    source = verified_source(data)
    if source is None:
        warnings.warn(f"symgrad found a corrupt cache file {str(path)!r} (checksum mismatch); it was not "
                      "loaded and is rebuilt.", CacheWarning, stacklevel=_stacklevel())
    return source


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:  # bytes: the checksum covers exactly what is stored
            fh.write(text.encode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- loading ---------------------------------------------------------------------------------------
def _loaded_or(key: str, load):
    """The module loaded for ``key``, else ``load()`` under the lock (a module executes once)."""
    mod = _MODULES.get(key)
    if mod is not None:
        return mod
    with _LOCK:
        mod = _MODULES.get(key)
        return mod if mod is not None else load()


def loaded_module(key: str):
    """The module already loaded in this process for cache key ``key`` (a summing module of
    :mod:`symgrad.emit.batch_sum` takes its kernel module's cores from it).

    Raises:
      LookupError: no module with that key was loaded in this process.
    """
    mod = _MODULES.get(key)
    if mod is None:
        raise LookupError(f"symgrad: no generated module with cache key {key[:12]}... is loaded in this process "
                          f"(load the kernel module before the module that uses it)")
    return mod


def cached_module(name: str, key: str):
    """The module for ``key`` if it is loaded or on disk (and intact), else None."""
    def load():
        directory = usable_cache_dir()
        if directory is None:
            return None
        path = directory / f"{name}_{key[:20]}.py"
        source = _read_verified(path)
        return None if source is None else _exec(path, key, source)
    return _loaded_or(key, load)


def write_module(name: str, key: str, source: str, subdir: str | None = None) -> Path | None:
    """Write ``source`` to its file in the cache directory (unless an intact copy is there);
    its path, or None without a usable cache directory.  With ``subdir`` the file goes into that
    subfolder, where :func:`cached_module` does not look (a module's text for reading, not for
    loading: loading an uncompiled module would compile it)."""
    directory = usable_cache_dir()
    if directory is None:
        return None
    path = directory / f"{name}_{key[:20]}.py"
    if subdir is not None:
        path = directory / subdir / path.name
        path.parent.mkdir(exist_ok=True)
    if not source.endswith("\n"):
        source += "\n"
    with _LOCK:
        try:
            if not path.exists() or verified_source(path.read_bytes()) != source:
                _atomic_write(path, with_checksum(source))
        except OSError as exc:  # e.g. the disk filled up or permissions changed since the probe
            _disable(directory, exc)
            return None
    return path


def load_module(name: str, key: str, source: str):
    """Write ``source`` (unless an intact copy is there) and import it; returns the module.

    Without a usable cache directory the module is compiled in memory.
    """
    def load():
        path = write_module(name, key, source)
        if path is not None:
            return _exec(path, key, source if source.endswith("\n") else source + "\n")
        return _exec_in_memory(name, key, source)
    return _loaded_or(key, load)


_NJIT_CACHE = re.compile(r"^(@numba\.njit\(.*)\bcache=True", re.M)


def _exec_in_memory(name: str, key: str, source: str):
    """Compile ``source`` without a file: Numba's disk cache off, source registered for tracebacks."""
    filename = f"<symgrad:{name}_{key[:20]}>"
    text = _NJIT_CACHE.sub(r"\1cache=False", source)
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    mod = _run(filename, key, text, source)
    _bind_entries(mod)
    return mod


def _exec(path: Path, key: str, source: str):
    """Execute verified ``source`` as the module stored at ``path``."""
    try:
        mod = _run(str(path), key, source, source)
    except RuntimeError as exc:  # Numba found no writable place for its cache after all
        if "cannot cache function" not in str(exc):
            raise
        _disable(path.parent, exc)
        return _exec_in_memory(path.stem.rsplit("_", 1)[0], key, source)
    _verify_numba_cache(mod)
    _bind_entries(mod)
    return mod


def _bind_entries(mod) -> None:
    """Bind each ``<kernel>_f64_entry`` of the module to its compiled float64 overload.

    Called once the module's Numba cache files are set up (compiling at import would bypass
    that); until then an entry is the core's dispatcher itself.  The entry point calls it only
    with the types it has checked: Python floats for scalar cores, float64 ndarrays of the core
    shape with C strides for array cores (see ``symgrad.emit.module._array_fast_path``), and
    the module's own constants; for those the overload computes exactly what the core does.
    """
    from ..runtime.gufunc import GufuncSpec  # NumPy only: Dask workers load modules without SymPy

    specs = {v.name: v for v in vars(mod).values() if isinstance(v, GufuncSpec)}
    for name, core in list(vars(mod).items()):
        if name.endswith("_f64_entry") and hasattr(core, "overloads") and hasattr(core, "py_func"):
            setattr(mod, name, _LazyEntry(mod, name, core, specs.get(name[:-len("_f64_entry")])))


class _LazyEntry:
    """A module's ``<kernel>_f64_entry`` until its first call, which compiles the float64 overload
    (:func:`_float64_entry`) and rebinds the module attribute to it: a program only ever called on
    arrays never compiles its scalar entry (the batch kernel is a separate compile)."""

    def __init__(self, mod, name: str, core, spec):
        self._mod, self._name, self._core, self._spec = mod, name, core, spec

    def resolve(self):
        """The compiled entry (compiling it now), also bound to the module attribute from now on."""
        entry = _float64_entry(self._core, self._spec)
        setattr(self._mod, self._name, entry)
        return entry

    def __call__(self, *args):
        return self.resolve()(*args)


def _float64_entry(core, spec):
    """The compiled overload of ``core`` for float64 arguments of its core shapes, C-contiguous
    (compiled now or loaded from Numba's cache), to call without Numba's type dispatch;
    ``core`` itself on a Numba without these internals or for a core it cannot type."""
    try:
        import numba

        def arg_type(core_shape):
            return numba.float64 if core_shape == () else numba.types.Array(numba.float64, len(core_shape), "C")

        sig = tuple([arg_type(tuple(c)) for c in spec.in_cores] + [numba.typeof(c) for c in spec.consts]
                    + [arg_type(tuple(c)) for c in spec.out_cores if tuple(c) != ()])
        if len(sig) != core.py_func.__code__.co_argcount:
            return core
        core.compile(sig)
        return core.overloads[sig].entry_point
    except Exception:  # a Numba without these internals, no spec: dispatch as usual
        return core


def _run(filename: str, key: str, text: str, source: str):
    stem = Path(filename.strip("<>").split(":")[-1]).stem
    mod_name = f"symgrad_generated.{stem}"
    mod = types.ModuleType(mod_name)
    mod.__file__ = filename
    mod.__symgrad_source__ = source
    code = compile(text, filename, "exec", dont_inherit=True)
    sys.modules[mod_name] = mod
    try:
        exec(code, mod.__dict__)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    _MODULES[key] = mod
    return mod


# -- Numba's cache files ---------------------------------------------------------------------------
def _verify_numba_cache(mod) -> None:
    """Give each Numba dispatcher defined in ``mod`` a checksummed index/data file implementation
    (not the ones it imports, such as symgrad.emit.vecmath's: their cache files are Numba's own
    format, which other importers read with Numba's reader)."""
    cls = _verified_cache_file_class()
    if cls is None:
        return
    for value in vars(mod).values():
        if getattr(getattr(value, "py_func", None), "__globals__", None) is not vars(mod):
            continue
        cache = getattr(getattr(value, "_cache", None), "_cache_file", None)
        if cache is not None and type(cache) is cls.__base__:
            cache.__class__ = cls


@functools.lru_cache(maxsize=1)
def _verified_cache_file_class():
    """:class:`_VerifiedCacheFile`, or None if Numba's cache internals are not the expected ones."""
    try:
        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        return None
    try:  # the attributes and methods used below (Numba 0.5x-0.6x)
        probe = IndexDataCacheFile(cache_path="/", filename_base="probe", source_stamp=None)
        assert all(hasattr(probe, n) for n in ("_load_index", "_save_index", "_save_data", "_dump",
                                                "_data_path", "_index_path", "_index_name", "_version",
                                                "_source_stamp", "_cache_path"))
    except Exception:
        return None

    _MAGIC = b"symgrad-nb1:"

    class _VerifiedCacheFile(IndexDataCacheFile):
        """Numba's index/data files with a sha256 of each payload and the key stored in each data file.

        A file that fails its checksum, does not unpickle, or holds another
        signature's code is a cache miss: Numba recompiles and overwrites it.
        Data files are named by a hash of their key, so processes compiling
        different signatures at once never write the same data file.
        """

        def _dump(self, obj):
            payload = super()._dump(obj)
            return _MAGIC + hashlib.sha256(payload).digest() + payload

        def _payload(self, blob: bytes, path: str):
            n = len(_MAGIC)
            if blob[:n] != _MAGIC or hashlib.sha256(blob[n + 32:]).digest() != blob[n:n + 32]:
                if _first_report(path, blob):
                    warnings.warn(f"symgrad found a corrupt Numba cache file {path!r} (checksum mismatch); "
                                  "it was not loaded and is rebuilt.", CacheWarning, stacklevel=_stacklevel())
                return None
            return pickle.loads(blob[n + 32:])

        def _load_index(self):
            try:
                with open(self._index_path, "rb") as f:
                    version = pickle.load(f)
                    blob = f.read()
            except FileNotFoundError:
                return {}
            except Exception:  # unreadable or not even a pickled version number
                blob, version = b"", self._version
            if version != self._version:
                return {}
            try:
                found = self._payload(blob, self._index_path)
                stamp, overloads = found if found is not None else (None, {})
            except Exception:
                return {}
            return overloads if stamp == self._source_stamp and isinstance(overloads, dict) else {}

        def load(self, key):
            name = self._load_index().get(key)
            if name is None:
                return None
            path = self._data_path(name)
            try:
                with open(path, "rb") as f:
                    found = self._payload(f.read(), path)
                stored_key, data = found
            except Exception:  # missing, corrupt, or not a (key, data) pair
                return None
            if stored_key != repr(key):
                if _first_report(path, stored_key.encode()):
                    warnings.warn(f"symgrad found a Numba cache file {path!r} holding code for another "
                                  "signature; it was not loaded and is rebuilt.", CacheWarning,
                                  stacklevel=_stacklevel())
                return None
            return data

        def save(self, key, data):
            name = f"{self._index_name[:-4]}.{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}.nbc"
            self._save_data(name, (repr(key), data))
            with _dir_lock(self._cache_path):
                overloads = self._load_index()
                if overloads.get(key) != name:
                    overloads[key] = name
                    self._save_index(overloads)

    return _VerifiedCacheFile


_REPORTED: set = set()


def _first_report(path: str, blob: bytes) -> bool:
    """True the first time this process sees this corrupt content at ``path`` (one warning each)."""
    tag = (path, hashlib.sha256(blob).hexdigest())
    with _LOCK:
        new = tag not in _REPORTED
        _REPORTED.add(tag)
    return new


@contextlib.contextmanager
def _dir_lock(path: str):
    """An advisory exclusive lock on directory ``path`` (no-op where ``fcntl`` is unavailable)."""
    try:
        import fcntl
        fd = os.open(path, os.O_RDONLY)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
