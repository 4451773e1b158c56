"""Shared test configuration.

Every test session gets its own symgrad cache directory, set before symgrad
compiles anything, so results never depend on (or pollute) the user's
``~/.cache/symgrad``.  Subprocess tests inherit it through ``os.environ``.
"""
import os
import tempfile

os.environ["SYMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="symgrad-test-cache-")
# Under pytest-xdist (README's ``-n 2``) two workers share the machine's caches and memory bandwidth,
# and a thread's CPU seconds then buy less work: the stabiliser's default program budget of 1 s CPU
# (symgrad.api.stabilize_pass) is doubled there, as a slower machine would need, unless it is set.
# Checks of the budget itself read it (DEFAULT_BUDGET_S).  One process keeps the default.
if os.environ.get("PYTEST_XDIST_WORKER") and "SYMGRAD_STABILIZE_BUDGET" not in os.environ:
    os.environ["SYMGRAD_STABILIZE_BUDGET"] = "2.0"

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    """A fresh, fixed-seed generator for each test."""
    return np.random.default_rng(20240521)


@pytest.fixture(scope="session")
def cache_dir():
    return os.environ["SYMGRAD_CACHE_DIR"]


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` run only when asked for: ``python -m pytest -m slow``."""
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with python -m pytest -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
