"""Acceptance tests: programs as users write them, from public tutorials and library docs (issue 14, point 6).

Every program names its source and is compared with an independent reference (autograd or
JAX x64 running the same source, SciPy, closed forms, mpmath).  See ``_reference.py``.
"""
