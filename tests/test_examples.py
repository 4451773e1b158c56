"""Every script in examples/ runs to completion (exit status 0) within 300 s.

The list is globbed at collection time.  Subprocesses inherit the session's
SYMGRAD_CACHE_DIR (set in conftest.py), so functions compiled by other tests
with identical graphs are reused from the disk cache.  Each script runs once
per session (tests/example_runner.py); test_example_numbers.py reuses the output.
"""
import subprocess

import pytest

from .example_runner import ROOT, TIMEOUT, run_example

# one worker runs every example once (tests/example_runner.py caches each run per process;
# README runs pytest with --dist loadgroup): on two workers half the scripts ran twice, ~90 s
pytestmark = pytest.mark.xdist_group("examples")

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# real-size models whose compiled Jacobian takes minutes to build, and the examples that take 10-16 s
# each (CI's default run stays well inside its 20 minutes): run with python -m pytest -m slow
SLOW = {"grimech.py", "gaussian_loglik.py", "negbin_mle.py", "dask_logistic_regression.py"}


def test_examples_found():
    assert EXAMPLES, "examples/ has no scripts"


@pytest.mark.parametrize("script", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW else p
                                    for p in EXAMPLES], ids=[p.name for p in EXAMPLES])
def test_example_runs(script):
    r = run_example(script)
    if isinstance(r, subprocess.TimeoutExpired):  # a timeout is a failure, not a skip
        pytest.fail(f"{script.name} did not finish within {TIMEOUT} s; partial output:\n{r.stdout}")
    assert r.returncode == 0, f"{script.name} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
