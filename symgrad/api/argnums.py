"""Which arguments a transformation differentiates: ``argnums`` and the pytree leaves behind them."""
from __future__ import annotations

import numpy as np

from ..errors import format_error
from ..trace.pytree import TreeDef

__all__ = ["normalize_argnums", "leaf_ranges"]


def normalize_argnums(argnums, nargs: int, fn_name: str) -> tuple[tuple[int, ...], bool]:
    """(tuple of argnums, whether the user gave a single int)."""
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in nums):
        raise TypeError(f"argnums must be an int or a tuple of ints; got {argnums!r} (for {fn_name}).\n"
                        f"  Do instead: argnums=0, or argnums=(0, 1) for several arguments.")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(format_error(
                f"argnums {a} is out of range for {fn_name} called with {nargs} positional argument(s)",
                "argnums counts positional arguments from 0", f"use argnums between 0 and {nargs - 1}"))
        if int(a) % nargs in out:
            raise ValueError(format_error(
                f"argnums {tuple(nums)!r} names argument {int(a) % nargs} of {fn_name} twice",
                "each differentiated argument gets one gradient", "list each argument once"))
        out.append(int(a) % nargs)
    return tuple(out), single


def leaf_ranges(in_tree: TreeDef) -> list[range]:
    """The flattened leaves of each positional argument."""
    ranges, start = [], 0
    for child in in_tree.children:
        ranges.append(range(start, start + child.num_leaves))
        start += child.num_leaves
    return ranges
