"""Flatten and rebuild nested tuples, lists and dicts of leaves (pytrees).

Dict keys are visited in sorted order so that flattening is deterministic (keys of mixed
types, which Python cannot compare, by type name and then ``repr``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TreeDef", "tree_flatten", "tree_unflatten", "LEAF", "same_structure", "tree_text"]


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


def same_structure(a: TreeDef, b: TreeDef) -> bool:
    """Equal pytree structure, a tuple and a list of the same length counting as the same."""
    seq = ("tuple", "list")
    if a.kind != b.kind and not (a.kind in seq and b.kind in seq):
        return False
    return a.keys == b.keys and len(a.children) == len(b.children) and all(
        same_structure(x, y) for x, y in zip(a.children, b.children))


def tree_text(tree: TreeDef) -> str:
    """The structure as text for messages: ``(*, [*, *])``, ``{'w': *}``, one ``*`` per leaf."""
    if tree.kind == "leaf":
        return "*"
    inner = [f"{k!r}: {tree_text(c)}" for k, c in zip(tree.keys, tree.children)] if tree.kind == "dict" else \
        [tree_text(c) for c in tree.children]
    text = ", ".join(inner)
    return {"dict": f"{{{text}}}", "list": f"[{text}]"}.get(tree.kind, f"({text}{',' if len(inner) == 1 else ''})")
