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
settings.register_profile("long", **_COMMON)
settings.load_profile(PROFILE if PROFILE in ("fast", "long") else "fast")

# examples per test and profile (the totals are what the README states)
EXAMPLES = {
    "fast": {"scalar": 200, "vector": 60, "float32": 120, "forward": 60, "stabilised": 30, "public": 24,
             "aot": 2},
    "long": {"scalar": 4500, "vector": 1500, "float32": 2000, "forward": 1000, "stabilised": 600,
             "public": 400, "aot": 20},
}[PROFILE if PROFILE in ("fast", "long") else "fast"]

for _k in list(EXAMPLES):  # development override, e.g. SYMGRAD_PROPERTY_N_SCALAR=20
    EXAMPLES[_k] = int(os.environ.get(f"SYMGRAD_PROPERTY_N_{_k.upper()}", EXAMPLES[_k]))

RUN = {}  # test name -> examples run (counted by the tests)


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
    for k, v in sorted(STATS.get("events", {}).items()):
        tr.write_line(f"  {k}: {v}")
    for k, v in sorted(STATS.get("time", {}).items()):
        tr.write_line(f"  time in {k}: {v:.1f} s")
