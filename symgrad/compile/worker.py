"""Child process of a background compile: ``python -m symgrad.compile.worker NAME KEY PATH``.

Loads the generated module stored at PATH (checksum verified, as every cached module) and
compiles its kernels for the calls :func:`warm` makes; Numba writes the machine code to its
on-disk cache, where the parent process then finds it.  Never imports SymPy or the tracer.
"""
from __future__ import annotations

import sys

import numpy as np


def warm(module, name: str) -> None:
    """Call entry point ``name`` of ``module`` the ways a user's calls reach its kernels: one
    unbatched call and one batched call per dtype.  Values are zeros; errors a kernel raises on
    them (a singular matrix) are ignored, since compiling happened before they were raised."""
    from ..emit.names import spec_name

    entry = getattr(module, name)
    spec = getattr(module, spec_name(name))
    for dtype in ("float64", "float32"):
        core = [np.zeros(c, dtype=dtype) for c in spec.in_cores]
        batch = [np.zeros((2,) + tuple(c), dtype=dtype) for c in spec.in_cores]
        calls = [core, batch]
        if dtype == "float64" and all(c == () for c in spec.in_cores):
            calls.append([0.0] * len(spec.in_cores))  # Python floats: the scalar fast path
        for args in calls:
            try:
                entry(*args)
            except Exception:
                pass


def main(argv: list[str]) -> int:
    name, key, path = argv
    from .cache import cached_module

    module = cached_module(name, key)
    if module is None:
        print(f"symgrad worker: no intact module {path}", file=sys.stderr)
        return 2
    warm(module, name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
