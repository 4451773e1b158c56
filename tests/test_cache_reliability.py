"""The disk cache under bad conditions: unusable directory, corrupt files, concurrent processes and
threads, and changed function bodies.

Each scenario that depends on what a *new* process finds on disk runs symgrad in subprocesses with
their own SYMGRAD_CACHE_DIR; the in-process ones use functions with constants no other test uses, so
the in-memory module cache cannot answer for the disk.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile import cache as cache_mod
from symgrad.errors import CacheWarning

ROOT = Path(__file__).resolve().parents[1]


def _env(cache_dir, **extra) -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1", **extra)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def _run(script: Path, cache_dir, *args, timeout=300) -> dict:
    r = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=_env(cache_dir))
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


# A worker script: compiles the gradient of f_k(x) (not stabilised) = c_k * sin(x) + exp(-x^2 / 2) for each k given
# (distinct constants c_k give distinct cache entries), in float64 and float32, and reports the values,
# the CacheWarnings, where each module lives, and Numba's cache hits/misses for its kernels.
WORKER = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import symgrad as sg
    from symgrad.errors import CacheWarning

    warnings.simplefilter("always")
    X = np.linspace(-3.0, 3.0, 13)
    out = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in map(int, sys.argv[1:]):
            c = 1.0 + k / 8.0

            def f(x):
                return c * np.sin(x) + np.exp(-x * x / 2)

            g = sg.grad(f, stabilize=False)  # the cache's behaviour, not the stabiliser's (4 s a build)
            v64 = g(X)
            v32 = g(X.astype(np.float32))
            entry = next(iter(g.compiled._entries.values()))
            mod = entry.fn.__globals__  # the module's own kernels (not the vecmath functions it imports)
            stats = [v.stats for v in mod.values()
                     if hasattr(v, "stats") and getattr(v, "py_func", None) and v.py_func.__globals__ is mod]
            out[k] = {"v64": v64.tolist(), "v32": v32.astype(float).tolist(), "dtype32": str(v32.dtype),
                      "path": entry.source_path, "numba_cache_paths": sorted({str(s.cache_path) for s in stats}),
                      "hits": sum(sum(s.cache_hits.values()) for s in stats),
                      "misses": sum(sum(s.cache_misses.values()) for s in stats)}
    print(json.dumps({"funcs": out,
                      "warnings": [(w.category.__name__, str(w.message)) for w in caught]}))
""")


def _expected(k: int) -> np.ndarray:
    x = np.linspace(-3.0, 3.0, 13)
    return (1.0 + k / 8.0) * np.cos(x) - x * np.exp(-x * x / 2)


def _check_values(res: dict, ks) -> None:
    for k in ks:
        r = res["funcs"][str(k)]
        np.testing.assert_allclose(r["v64"], _expected(k), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(r["v32"], _expected(k), rtol=1e-5, atol=1e-6)
        assert r["dtype32"] == "float32"


def _cache_warnings(res: dict) -> list[str]:
    return [msg for cat, msg in res["warnings"] if cat == "CacheWarning"]


# -- unusable cache directory ----------------------------------------------------------------------
def _unusable_dirs(tmp_path):
    """Cache paths that cannot be created or written, also when running as root."""
    blocker = tmp_path / "a_regular_file"
    blocker.write_text("not a directory")
    yield "under a regular file", blocker / "cache"
    yield "is a regular file", blocker
    if os.geteuid() != 0:  # root ignores permission bits
        ro = tmp_path / "readonly"
        ro.mkdir()
        ro.chmod(0o500)
        yield "read-only directory", ro


def test_unusable_cache_dir_warns_once_and_works_in_memory(tmp_path, monkeypatch):
    for label, bad in _unusable_dirs(tmp_path):
        monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(bad))
        x = np.linspace(-2.0, 2.0, 7)
        salt = 0.001 * len(label)  # a program no other test (or earlier label) compiled in this process
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = sg.grad(lambda x: np.sin(x) * (3.25 + salt))
            j = sg.jit(lambda x, y: np.log1p(x * x) + (1.75 + salt) * y)
            h = sg.grad(lambda v: np.sum(v ** 3) * (0.5 + salt), signature="(n)->()")
            v_g, v_g32 = g(x), g(x.astype(np.float32))
            v_j = j(x, 2.0)
            v_h = h(np.array([1.0, 2.0, 3.0]))
            g(0.5), j(0.5, 0.25)  # the scalar fast path too
        np.testing.assert_allclose(v_g, (3.25 + salt) * np.cos(x), rtol=1e-14)
        np.testing.assert_allclose(v_g32, (3.25 + salt) * np.cos(x), rtol=1e-6)
        np.testing.assert_allclose(v_j, np.log1p(x * x) + (1.75 + salt) * 2.0, rtol=1e-14)
        np.testing.assert_allclose(v_h, 3 * (0.5 + salt) * np.array([1.0, 4.0, 9.0]), rtol=1e-14)
        ours = [w for w in caught if issubclass(w.category, CacheWarning)]
        assert len(ours) == 1, (label, [str(w.message) for w in caught])
        msg = str(ours[0].message)
        assert str(bad) in msg and "SYMGRAD_CACHE_DIR" in msg and "memory" in msg, msg
        assert ours[0].filename == __file__, "the warning should point at the user's call"
        others = [str(w.message) for w in caught if not issubclass(w.category, CacheWarning)]
        assert others == [], others  # in particular nothing from Numba's cache=True
        # the source is still available, compiled from memory
        assert "symgrad-sha256" not in g.source(x) and "def " in g.source(x)
    assert (tmp_path / "a_regular_file").read_text() == "not a directory"


def test_unusable_cache_dir_in_a_fresh_process(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    res = _run(script, blocker / "sub" / "cache", 0, 1, 2)
    _check_values(res, [0, 1, 2])
    cw = _cache_warnings(res)
    assert len(cw) == 1 and str(blocker / "sub" / "cache") in cw[0], res["warnings"]
    assert [w for w in res["warnings"] if w[0] != "CacheWarning"] == []
    for r in res["funcs"].values():  # compiled in memory, Numba's disk cache off
        assert r["numba_cache_paths"] == ["None"] and r["hits"] == 0 and r["path"].startswith("<symgrad:")
    assert blocker.read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits")
def test_read_only_existing_cache_dir(tmp_path):
    d = tmp_path / "cache"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    _run(script, d, 0)
    for p in [d, *d.rglob("*")]:
        if p.is_dir():
            p.chmod(0o500)
    try:
        res = _run(script, d, 0, 3)
    finally:
        for p in [d, *d.rglob("*")]:
            if p.is_dir():
                p.chmod(0o700)
    _check_values(res, [0, 3])
    assert len(_cache_warnings(res)) == 1


# -- corrupted entries -----------------------------------------------------------------------------
def _flip(data: bytes, at: float, n: int = 64) -> bytes:
    i = int(len(data) * at)
    return data[:i] + bytes(b ^ 0xFF for b in data[i:i + n]) + data[i + n:]


def _numba_files(py: Path, suffix: str) -> list[Path]:
    return sorted((py.parent / "__pycache__").glob(f"{py.stem}.*{suffix}"))


def _corrupt_py_semantic(py: Path) -> None:
    """An edit that keeps the file valid Python and the same length but computes something else."""
    text = py.read_text()
    before, after = ("_vm_cos_f64(x)", "_vm_exp_f64(x)") if "_vm_cos_f64(x)" in text else ("np.cos(x)", "np.sin(x)")
    assert before in text and len(before) == len(after)
    py.write_text(text.replace(before, after))


CORRUPTIONS = {
    "py truncated": lambda py: py.write_bytes(py.read_bytes()[: len(py.read_bytes()) // 2]),
    "py garbage": lambda py: py.write_bytes(os.urandom(len(py.read_bytes()))),
    "py bytes flipped": lambda py: py.write_bytes(_flip(py.read_bytes(), 0.6, 1)),
    "py edited (valid Python)": _corrupt_py_semantic,
    "py checksum line removed": lambda py: py.write_text(py.read_text().rsplit("# symgrad-sha256", 1)[0]),
    "nbi deleted": lambda py: [p.unlink() for p in _numba_files(py, ".nbi")],
    "nbi garbage": lambda py: [p.write_bytes(os.urandom(300)) for p in _numba_files(py, ".nbi")],
    "nbi bytes flipped": lambda py: [p.write_bytes(_flip(p.read_bytes(), 0.7)) for p in _numba_files(py, ".nbi")],
    "nbc garbage": lambda py: [p.write_bytes(os.urandom(2000)) for p in _numba_files(py, ".nbc")],
    "nbc truncated": lambda py: [p.write_bytes(p.read_bytes()[:1000]) for p in _numba_files(py, ".nbc")],
    "nbc bytes flipped": lambda py: [p.write_bytes(_flip(p.read_bytes(), 0.5)) for p in _numba_files(py, ".nbc")],
    "nbc swapped f64<->f32": lambda py: _swap_data_files(py),
}
# corruptions that leave nothing to detect (a missing file is a plain cache miss)
SILENT = {"nbi deleted"}


def _swap_data_files(py: Path) -> None:
    """Put the float32 machine code where the float64 code was and vice versa (both files intact)."""
    f64 = _numba_files(py, ".nbc")
    for a in [p for p in f64 if "_f64_batch-" in p.name]:
        b = next(p for p in f64 if "_f32_batch-" in p.name)
        da, db = a.read_bytes(), b.read_bytes()
        a.write_bytes(db)
        b.write_bytes(da)


@pytest.fixture(scope="module")
def corrupted_runs(tmp_path_factory):
    """One process fills a cache with one function per corruption; each function's files are then
    corrupted in its own way; a second process computes them all; a third loads what it left."""
    tmp = tmp_path_factory.mktemp("corrupt")
    script = tmp / "worker.py"
    script.write_text(WORKER)
    ks = list(range(len(CORRUPTIONS)))
    cache_dir = tmp / "cache"
    first = _run(script, cache_dir, *ks)
    _check_values(first, ks)
    before = {}
    for k, corrupt in zip(ks, CORRUPTIONS.values()):
        py = Path(first["funcs"][str(k)]["path"])
        assert _numba_files(py, ".nbi") and _numba_files(py, ".nbc")
        corrupt(py)
        before[k] = {p.name: p.read_bytes() for p in [py, *_numba_files(py, ".nb")]}
    # a crash here (what an unverified cache does with most of these) fails every case below
    second = _run(script, cache_dir, *ks)
    third = _run(script, cache_dir, *ks)
    return {"first": first, "second": second, "third": third, "before": before, "dir": cache_dir}


# one worker runs the module fixture for every case (README runs pytest with --dist loadgroup):
# split over two workers, its three processes ran twice (~90 s each)
@pytest.mark.xdist_group("corrupted_runs")
@pytest.mark.parametrize("k,kind", list(enumerate(CORRUPTIONS)))
def test_corrupt_entry_is_detected_rebuilt_and_never_loaded(corrupted_runs, k, kind):
    second, third = corrupted_runs["second"], corrupted_runs["third"]
    # values are right in the process that found the corruption ...
    _check_values(second, [k])
    r2 = second["funcs"][str(k)]
    py = Path(r2["path"])
    # ... which said so, naming the file (nothing to say for a deleted index)
    said = [m for m in _cache_warnings(second) if py.stem in m]
    if kind in SILENT:
        assert said == []
    else:
        assert said and all("corrupt" in m and "rebuilt" in m for m in said), (kind, second["warnings"])
    if kind.startswith("nb"):  # Numba had to compile again rather than use the bad file
        assert r2["misses"] > 0
    # the entry was rebuilt: intact on disk, and a third process uses it without compiling anything
    assert cache_mod.verified_source(py.read_bytes()) is not None
    r3 = third["funcs"][str(k)]
    _check_values(third, [k])
    assert r3["path"] == r2["path"] and r3["misses"] == 0 and r3["hits"] > 0, (kind, r3)
    assert not [m for m in _cache_warnings(third) if py.stem in m], third["warnings"]


@pytest.mark.xdist_group("corrupted_runs")
def test_corruption_runs_leave_no_temporary_files(corrupted_runs):
    leftovers = [p for p in corrupted_runs["dir"].rglob("*") if ".tmp" in p.name or p.name.startswith(".probe")]
    assert leftovers == []


def test_verified_source_rejects_tampering():
    src = "import numpy as np\nX = 1.0\n"
    stored = cache_mod.with_checksum(src).encode()
    assert cache_mod.verified_source(stored) == src
    assert cache_mod.verified_source(stored.replace(b"1.0", b"2.0")) is None
    assert cache_mod.verified_source(stored[:-10]) is None
    assert cache_mod.verified_source(src.encode()) is None
    assert cache_mod.verified_source(b"") is None
    assert cache_mod.verified_source(b"\xff\xfe" + stored) is None


# -- concurrent processes --------------------------------------------------------------------------
def test_processes_building_the_same_functions_at_once(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cache_dir = tmp_path / "cache"
    ks = [0, 1]
    env = _env(cache_dir)
    procs = [subprocess.Popen([sys.executable, str(script), *map(str, ks)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-4000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    for res in results:
        _check_values(res, ks)
        assert _cache_warnings(res) == []
    # consistent afterwards: one intact module per function, no partial files ...
    files = sorted(p for p in cache_dir.rglob("*") if p.is_file())
    assert [p for p in files if ".tmp" in p.name or p.name.startswith(".")] == []
    modules = [p for p in files if p.suffix == ".py"]
    assert len(modules) == len(ks)
    assert all(cache_mod.verified_source(p.read_bytes()) is not None for p in modules)
    # ... and a later process loads everything (both dtypes) without compiling
    later = _run(script, cache_dir, *ks)
    _check_values(later, ks)
    assert _cache_warnings(later) == []
    for k in ks:
        r = later["funcs"][str(k)]
        assert r["misses"] == 0 and r["hits"] > 0, r


# -- threads ---------------------------------------------------------------------------------------
def test_first_call_racing_from_8_threads_builds_once(monkeypatch):
    import symgrad.api.compiled as compiled
    import importlib

    tracing = importlib.import_module("symgrad.trace.trace")  # (symgrad.trace is also the function)

    traces = []
    real = tracing.trace_program

    def counting(*a, **k):
        traces.append(threading.get_ident())
        return real(*a, **k)

    monkeypatch.setattr(compiled, "trace_program", counting)
    monkeypatch.setattr(tracing, "trace_program", counting)  # used by trace_default

    def f(x, y):
        return np.tanh(1.375 * x) * y + np.log1p(y * y)

    g = sg.grad(f, argnums=(0, 1))
    rng = np.random.default_rng(1)
    inputs = [(rng.uniform(-2, 2, 50 + i), rng.uniform(-2, 2, 50 + i)) for i in range(8)]
    barrier = threading.Barrier(8)

    def call(xy):
        barrier.wait()
        return g(*xy)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, inputs))
    for (x, y), (gx, gy) in zip(inputs, results):
        np.testing.assert_allclose(gx, 1.375 * y / np.cosh(1.375 * x) ** 2, rtol=1e-12)
        np.testing.assert_allclose(gy, np.tanh(1.375 * x) + 2 * y / (1 + y * y), rtol=1e-12)
    assert len(traces) == 1


def test_compiled_function_called_from_8_threads():
    def loss(w, x):
        return np.sum((np.tanh(x) * w - 0.625) ** 2)

    g = sg.grad(loss, signature="(n),(n)->()")
    j = sg.jit(lambda x: np.exp(-x * 1.0625))
    rng = np.random.default_rng(2)
    g(np.zeros(4), np.zeros(4)), j(0.0)  # compiled; now many concurrent calls with different inputs
    cases = [(rng.uniform(-1, 1, (30, 4)), rng.uniform(-1, 1, (30, 4)), rng.uniform(-1, 1, 100), float(i) / 7)
             for i in range(64)]

    def work(case):
        w, x, v, s = case
        return g(w, x), j(v), j(s), g(w[0], x[0])

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, cases))
    for (w, x, v, s), (gw, jv, js, gw0) in zip(cases, results):
        ref = 2 * (np.tanh(x) * w - 0.625) * np.tanh(x)
        np.testing.assert_allclose(gw, ref, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(gw0, ref[0], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(jv, np.exp(-v * 1.0625), rtol=1e-14)
        assert js == pytest.approx(np.exp(-s * 1.0625), rel=1e-14)


# -- changed function bodies -----------------------------------------------------------------------
USER_MODULE_V1 = """
import numpy as np
C = np.array([1.0, 2.0, 3.0])

def body_fn(x):
    return np.sum(np.sin(x) * C)
"""
USER_MODULE_V2 = """
import numpy as np
C = np.array([1.0, 2.0, 3.0])

def body_fn(x):
    return np.sum(np.cosh(x) * C)
"""
USER_MODULE_V3 = USER_MODULE_V1.replace("[1.0, 2.0, 3.0]", "[4.0, 5.0, 6.0]")  # same text length

USER_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import user_mod
    import symgrad as sg
    g = sg.grad(user_mod.body_fn, signature="(n)->()")
    x = np.array([0.5, -1.0, 2.0])
    print(json.dumps({"g": g(x).tolist(), "path": next(iter(g.compiled._entries.values())).source_path}))
""")


def test_changed_body_or_constant_in_a_new_process_never_reuses_the_old_module(tmp_path):
    mod_dir = tmp_path / "user"
    mod_dir.mkdir()
    script = tmp_path / "run.py"
    script.write_text(USER_SCRIPT)
    x = np.array([0.5, -1.0, 2.0])
    expected = {USER_MODULE_V1: np.cos(x) * [1, 2, 3], USER_MODULE_V2: np.sinh(x) * [1, 2, 3],
                USER_MODULE_V3: np.cos(x) * [4, 5, 6]}
    paths = []
    for text in (USER_MODULE_V1, USER_MODULE_V2, USER_MODULE_V3, USER_MODULE_V1):
        (mod_dir / "user_mod.py").write_text(text)
        res = _run(script, tmp_path / "cache", mod_dir)
        np.testing.assert_allclose(res["g"], expected[text], rtol=1e-14)
        paths.append(res["path"])
    assert len(set(paths[:3])) == 3 and paths[3] == paths[0]  # back to v1: its module is reused


def test_changed_body_reloaded_in_process(tmp_path, monkeypatch):
    import importlib

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    src = tmp_path / "sg_reload_mod.py"
    x = np.array([0.25, 1.5])
    src.write_text("import numpy as np\ndef h(x):\n    return np.sum(np.sin(x) * 2.0)\n")
    mod = importlib.import_module("sg_reload_mod")
    try:
        np.testing.assert_allclose(sg.grad(mod.h, signature="(n)->()")(x), 2.0 * np.cos(x), rtol=1e-14)
        src.write_text("import numpy as np\ndef h(x):\n    return np.sum(np.arctan(x) * 2.0)\n")
        mod = importlib.reload(mod)
        np.testing.assert_allclose(sg.grad(mod.h, signature="(n)->()")(x), 2.0 / (1 + x * x), rtol=1e-14)
    finally:
        sys.modules.pop("sg_reload_mod", None)


def test_closures_over_different_constants_get_different_modules():
    def make(c):
        def closure_fn(x):
            return np.sum(c * np.exp(x))
        return closure_fn

    x = np.array([0.1, 0.2, 0.3])
    c1 = np.array([1.5, 2.5, 3.5])
    f1 = make(c1)
    g1 = sg.grad(f1, signature="(n)->()")
    np.testing.assert_allclose(g1(x), c1 * np.exp(x), rtol=1e-14)
    c2 = np.array([-1.5, 0.5, 7.5])
    g2 = sg.grad(make(c2), signature="(n)->()")
    np.testing.assert_allclose(g2(x), c2 * np.exp(x), rtol=1e-14)
    assert g1.compiled._entries.popitem()[1].source_path != g2.compiled._entries.popitem()[1].source_path
    # the same closure after changing its constant in place: a new transformation traces the new value
    # (an existing one keeps the value it traced, as in JAX)
    c1[:] = [10.0, 20.0, 30.0]
    np.testing.assert_allclose(sg.grad(f1, signature="(n)->()")(x), c1 * np.exp(x), rtol=1e-14)
