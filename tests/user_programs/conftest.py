"""The ``slow`` marker for this directory: such tests run only when selected with ``-m slow``
(``python -m pytest -m slow tests/user_programs``), so the default ``python -m pytest -q`` stays
within its time budget.  Registered here, not in pyproject.toml, to keep this suite self-contained."""
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: many compiled kernels; run with `python -m pytest -m slow`")


def pytest_collection_modifyitems(config, items):
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow (many kernels): run with `python -m pytest -m slow`")
    for item in items:
        if "slow" in item.keywords and _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)
