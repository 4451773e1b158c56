import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FUNCS = str(HERE / "funcs.py")


def run_cli(*args, timeout=120):
    """Run ``python -m symgrad ARGS`` in a subprocess; returns the CompletedProcess."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8", COLUMNS="160")
    return subprocess.run([sys.executable, "-m", "symgrad", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def funcs():
    return FUNCS
