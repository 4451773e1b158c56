"""docs/tutorial.md is a doctest: every ``>>>`` example runs and its printed output must match.

Run alone with ``python -m pytest -q tests/test_tutorial.py``.  The compiled kernels go to the
session's SYMGRAD_CACHE_DIR (conftest.py).
"""
import doctest
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"


def test_tutorial_doctests():
    result = doctest.testfile(str(TUTORIAL), module_relative=False, verbose=False, report=True,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 50, f"only {result.attempted} examples found in {TUTORIAL}"
    assert result.failed == 0, f"{result.failed} of {result.attempted} tutorial examples failed (see the report above)"
