"""Every script in examples/ runs to completion (exit status 0) within 300 s.

The list is globbed at collection time.  Subprocesses inherit the session's
SYMGRAD_CACHE_DIR (set in conftest.py), so functions compiled by other tests
with identical graphs are reused from the disk cache.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
TIMEOUT = 300


def test_examples_found():
    assert EXAMPLES, "examples/ has no scripts"


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script):
    env = dict(os.environ, MPLBACKEND="Agg")
    try:
        r = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                           timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired as exc:  # a timeout is a failure, not a skip
        pytest.fail(f"{script.name} did not finish within {TIMEOUT} s; partial output:\n{exc.stdout}")
    assert r.returncode == 0, f"{script.name} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
