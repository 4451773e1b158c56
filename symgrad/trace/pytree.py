"""Flatten and rebuild nested tuples, lists and dicts of leaves (pytrees).

Dict keys are visited in sorted order so that flattening is deterministic (keys of mixed
types, which Python cannot compare, by type name and then ``repr``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TreeDef", "tree_flatten", "tree_unflatten", "LEAF"]


@dataclass(frozen=True)
class TreeDef:
    """Structure of a pytree: ``kind`` is 'leaf', 'tuple', 'list' or 'dict'."""

    kind: str
    children: tuple = ()
    keys: tuple = ()

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)


LEAF = TreeDef("leaf")


def _sorted_keys(d: dict) -> tuple:
    """Sorted keys; keys of mixed types ({1: .., 'a': ..}) are sorted by type name, then value."""
    try:
        return tuple(sorted(d))
    except TypeError:
        return tuple(sorted(d, key=lambda k: (type(k).__name__, repr(k))))


def tree_flatten(tree: Any) -> tuple[list, TreeDef]:
    """Return ``(leaves, treedef)``; anything not a tuple, list or dict is a leaf."""
    leaves: list = []

    def rec(t):
        if isinstance(t, (tuple, list)) and not hasattr(t, "_fields"):
            return TreeDef(type(t).__name__, tuple(rec(c) for c in t))
        if isinstance(t, dict):
            keys = _sorted_keys(t)
            return TreeDef("dict", tuple(rec(t[k]) for k in keys), keys)
        leaves.append(t)
        return LEAF

    return leaves, rec(tree)


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    """Inverse of :func:`tree_flatten`."""
    it = iter(leaves)

    def rec(td):
        if td.kind == "leaf":
            return next(it)
        kids = [rec(c) for c in td.children]
        if td.kind == "dict":
            return dict(zip(td.keys, kids))
        return tuple(kids) if td.kind == "tuple" else kids

    return rec(treedef)
