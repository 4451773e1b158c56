"""Run an example script once per test session and keep its result.

tests/test_examples.py checks that every script exits with status 0; tests/test_example_numbers.py
parses the printed numbers of the topic scripts.  Both ask this cache, so each script runs once.
Subprocesses inherit the environment (PYTHONPATH and the session's SYMGRAD_CACHE_DIR).
"""
import functools
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300


@functools.lru_cache(maxsize=None)
def run_example(script: Path):
    """``subprocess.CompletedProcess`` of ``python script``, or the ``TimeoutExpired`` raised."""
    env = dict(os.environ, MPLBACKEND="Agg")
    try:
        return subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired as exc:
        return exc
