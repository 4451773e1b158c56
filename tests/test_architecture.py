"""The package's layering (see pyproject.toml [tool.importlinter]) is enforced, not just described."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_layers_contract_is_kept():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.fail("import-linter is not installed; install the test extras: pip install -e '.[test]'")
    r = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout


# -- no import cycles -------------------------------------------------------------------------------

def _import_cycles(graph) -> list[tuple[str, ...]]:
    """One cycle (a, b, ..., a) through each direct import a -> b that b leads back from.

    Counts imports inside functions too (grimp records them), so a lazy ``from . import x``
    that closes a loop is a cycle here.
    """
    cycles = set()
    for a in sorted(graph.modules):
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            back = graph.find_shortest_chain(importer=b, imported=a)
            if back:
                loop = (a,) + tuple(back)  # a -> b -> ... -> a
                start = loop[:-1].index(min(loop[:-1]))  # one spelling per loop
                cycles.add(loop[start:-1] + loop[:start + 1])
    return sorted(cycles)


def test_cycle_finder_finds_two_module_and_longer_cycles():
    grimp = pytest.importorskip("grimp")
    g = grimp.ImportGraph()
    for m in ("p.a", "p.b", "p.c", "p.d", "p.e"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.a")  # a <-> b
    g.add_import(importer="p.c", imported="p.d")
    g.add_import(importer="p.d", imported="p.e")
    g.add_import(importer="p.e", imported="p.c")  # c -> d -> e -> c
    assert _import_cycles(g) == [("p.a", "p.b", "p.a"), ("p.c", "p.d", "p.e", "p.c")]
    g.remove_import(importer="p.e", imported="p.c")
    g.remove_import(importer="p.b", imported="p.a")
    assert _import_cycles(g) == []


def test_symgrad_has_no_import_cycles():
    grimp = pytest.importorskip("grimp")  # installed with import-linter (the test extras)
    graph = grimp.build_graph("symgrad", include_external_packages=False, cache_dir=None)
    cycles = _import_cycles(graph)
    assert not cycles, ("import cycles between symgrad modules (function-level imports count; break them "
                        "with a lower module both sides import, or a registry filled from above):\n"
                        + "\n".join(" -> ".join(c) for c in cycles))


def test_numpy_protocol_is_registered_whichever_trace_module_is_imported_first():
    # tracer.py never imports numpy_api; importing the package symgrad.trace registers it.
    code = ("import numpy as np\n"
            "from symgrad.trace import tracer\n"
            "ctx = tracer.TraceContext()\n"
            "x = ctx.wrap(ctx.graph.input('x', (3,)))\n"
            "y = np.sum(np.sin(x)[1:] @ np.ones(2))\n"
            "print(sorted(tracer.NUMPY_PROTOCOL), ctx.graph.shape(y.id), ctx.graph[y.id].op)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["['apply_function',", "'apply_ufunc',", "'getitem',", "'matmul',",
                                "'untraceable_library_call']", "()", "contract"]
