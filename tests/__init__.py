"""Test package marker: gives tests/conftest.py a unique module name (tests.conftest), so it does not
collide with tests/cli/conftest.py under pytest's --doctest-modules collection."""
