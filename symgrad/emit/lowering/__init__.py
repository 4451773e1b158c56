"""Lowering: how the non-elementwise ops print as Numba code.

Each op is declared once in :mod:`symgrad.ir.rules` (shape rule, NumPy reference,
derivatives, ``statement`` flag); its printer lives here, one module per op family, and is
installed into the op's ``emit`` facet when this package is imported
(:func:`symgrad.emit.lowering.base.lowers`), because ``ir`` sits below ``emit`` and cannot
import it.  :mod:`symgrad.emit.printer` imports this package, so every printed kernel sees
every printer; ``tests/test_registry_facets.py`` fails if an op is left without one.
Elementwise ops keep their (one-line) printers in their declarations.
"""
from . import gather, linalg, reductions, structural  # noqa: F401  (each installs its printers)
