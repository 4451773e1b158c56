"""symgrad: trace numpy functions into SymPy, differentiate on the graph, emit Numba kernels.

Public API (JAX's names): :func:`jit`, :func:`grad`, :func:`value_and_grad`, :func:`vjp`,
:func:`jvp`, :func:`jacobian`, :func:`hessian`, :func:`hvp`, :func:`trace`; derivative control:
:func:`custom_gradient`, :func:`stop_gradient`; TensorFlow-style front ends:
:class:`GradientTape`, :class:`ForwardAccumulator`, :func:`constant`, :class:`Variable`;
teaching: :func:`explain`.  Errors derive from :class:`SymgradError`.
"""
from ._version import __version__
from . import ir  # noqa: F401  (registers the primitives)
from .api.accumulator import ForwardAccumulator
from .api.control import stop_gradient
from .api.custom import custom_gradient
from .api.eager import EagerTensor, constant, convert_to_tensor
from .api.explain import explain
from .api.explanation import Explanation
from .api.functions import grad, hessian, hvp, jacobian, jit, jvp, value_and_grad, vjp
from .api.sparse import hessian_sparsity, jacobian_sparsity
from .api.tape import GradientTape
from .api.traced import Traced, trace
from .api.variables import Variable
from .errors import (ArgumentError, CacheWarning, DTypeError, RuleError, ShapeError, SignatureError,
                     SymgradError, SymgradWarning, TraceError, UnsupportedOperationError)

__all__ = [
    "__version__",
    "jit", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "hvp", "trace", "Traced",
    "custom_gradient", "stop_gradient", "Variable",
    "GradientTape", "ForwardAccumulator", "EagerTensor", "constant", "convert_to_tensor",
    "explain", "Explanation",
    "jacobian_sparsity", "hessian_sparsity",
    "SymgradError", "TraceError", "UnsupportedOperationError", "SignatureError", "ShapeError",
    "DTypeError", "RuleError", "ArgumentError", "CacheWarning", "SymgradWarning",
]
