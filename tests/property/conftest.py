"""Hypothesis profiles for the property tests, and a summary of what they ran.

``SYMGRAD_PROPERTY_PROFILE=fast`` (default) runs in CI; ``long`` runs >= 10,000
examples (see README.md).  Both are deterministic (``derandomize=True``, no
example database) and have no per-example deadline (Numba compiles are slow).
"""
import os

from hypothesis import HealthCheck, Phase, settings

PROFILE = os.environ.get("SYMGRAD_PROPERTY_PROFILE", "fast")

_COMMON = dict(deadline=None, derandomize=True, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much, HealthCheck.large_base_example])
if os.environ.get("SYMGRAD_PROPERTY_NOSHRINK"):  # development: report failures without shrinking
    _COMMON["phases"] = [Phase.explicit, Phase.generate]
settings.register_profile("fast", **_COMMON)
# the long profile runs in chunks (run_long.py), each a separate process with its own
# --hypothesis-seed, so the chunks draw different examples and memory stays bounded
settings.register_profile("long", **{**_COMMON, "derandomize": False})
settings.load_profile(PROFILE if PROFILE in ("fast", "long") else "fast")

# examples per test and profile (per chunk for "long"; run_long.py runs 10 chunks)
EXAMPLES = {
    # fast: CI's share (about 70 s of its 20 minutes on a quiet machine; 160 s on 2026-11-28 under load,
    # when the whole default run took 22 minutes here); the long profile is where programs are hunted
    "fast": {"scalar": 36, "vector": 10, "float32": 25, "forward": 24, "stabilised": 7, "public": 6,
             "aot": 1},
    "long": {"scalar": 450, "vector": 150, "float32": 200, "forward": 100, "stabilised": 60, "public": 40,
             "aot": 2},
}[PROFILE if PROFILE in ("fast", "long") else "fast"]
for _k in list(EXAMPLES):  # development override, e.g. SYMGRAD_PROPERTY_N_SCALAR=20
    EXAMPLES[_k] = int(os.environ.get(f"SYMGRAD_PROPERTY_N_{_k.upper()}", EXAMPLES[_k]))

RUN = {}  # test name -> examples run (counted by the tests)


def pytest_sessionfinish(session):
    """With SYMGRAD_PROPERTY_REPORT=path, write what ran as JSON (run_long.py collects it)."""
    path = os.environ.get("SYMGRAD_PROPERTY_REPORT")
    if not path or not RUN:
        return
    import json

    from .kernels import STATS

    with open(path, "w") as fh:
        json.dump({"examples": RUN, "programs": sorted(STATS["programs"]), "kernels": STATS["kernels"],
                   "events": STATS.get("events", {}), "time": STATS.get("time", {}), "ops": STATS["ops"],
                   "sizes": list(STATS["sizes"].values()),
                   "failed": session.testsfailed}, fh, indent=1)


def pytest_terminal_summary(terminalreporter):
    if not RUN:
        return
    from .kernels import STATS

    tr = terminalreporter
    tr.section(f"symgrad property tests (profile {PROFILE})")
    for name, n in sorted(RUN.items()):
        tr.write_line(f"{name}: {n} examples")
    tr.write_line(f"total {sum(RUN.values())} examples; {len(STATS['programs'])} distinct programs compiled "
                  f"({STATS['kernels']} combined kernels, {STATS.get('public_kernels', 0)} public-API "
                  f"entry points, {STATS.get('aot_programs', 0)} programs in AOT modules)")
    sizes = list(STATS["sizes"].values())
    if sizes:
        tr.write_line(f"program sizes (live nodes incl. inputs and constants): mean {sum(sizes) / len(sizes):.1f}, "
                      f"max {max(sizes)}")
        ops = sorted(STATS["ops"].items(), key=lambda kv: -kv[1])
        tr.write_line("ops in distinct programs: " + ", ".join(f"{k} {v}" for k, v in ops))
    for k, v in sorted(STATS.get("events", {}).items()):
        tr.write_line(f"  {k}: {v}")
    for k, v in sorted(STATS.get("time", {}).items()):
        tr.write_line(f"  time in {k}: {v:.1f} s")
