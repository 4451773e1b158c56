"""The expression IR: graph nodes, the op registry and its rules."""
from . import rules  # noqa: F401  (registers every op)
from .graph import Graph, Node
from .ops import REGISTRY, E, OpDef

__all__ = ["Graph", "Node", "REGISTRY", "E", "OpDef"]
