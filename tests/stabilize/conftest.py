import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` run only when asked for: ``python -m pytest -m slow``."""
    import pytest

    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow; run with python -m pytest -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
