"""How a lowering attaches itself to the op it prints."""
from __future__ import annotations

from typing import Callable

from ...ir.ops import install_printer

__all__ = ["lowers"]


def lowers(*names: str) -> Callable:
    """Decorator: install the function as the ``emit`` facet of the ops ``names``.

    The function has the facet's signature ``emit(ctx, node, args)``: ``ctx`` a
    :class:`~symgrad.emit.printer.PrintContext`, ``node`` the graph node, ``args`` its printed
    arguments (names, for ``statement`` ops).  It returns the expression text, or for
    ``statement`` ops the lines computing ``{out}``.

    Raises:
      ValueError: from :func:`symgrad.ir.ops.install_printer` (no such op, or a second printer).
    """
    def install(fn: Callable) -> Callable:
        for name in names:
            install_printer(name, fn)
        return fn
    return install
