"""Tracing: run a user's function on symbolic values (:mod:`.tracer`) and record its graph.

Importing the package installs the NumPy protocol (:mod:`.numpy_api` registers its handlers in
``tracer.NUMPY_PROTOCOL``), so it is in place before any Tracer exists, whichever submodule is
imported first; ``tracer.py`` itself never imports the NumPy tables (no import cycle).
It also intercepts scipy.special's Python functions (:mod:`.library_calls`) if SciPy is imported.
"""
from . import numpy_api  # noqa: F401  (registers the NumPy protocol)
from .library_calls import intercept_scipy

intercept_scipy()  # if scipy.special is imported already; traces and tapes call it again
