"""Program transformations on the traced graph: JVP, VJP and their compositions."""
from .higher import hessian_nodes, hvp_nodes, jacobian_nodes
from .jvp import jvp_nodes
from .vjp import vjp_nodes

__all__ = ["jvp_nodes", "vjp_nodes", "jacobian_nodes", "hessian_nodes", "hvp_nodes"]
