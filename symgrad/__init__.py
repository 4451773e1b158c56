"""symgrad: trace numpy functions into SymPy, differentiate on the graph, emit Numba kernels.

Public API (JAX's names): :func:`jit`, :func:`grad`, :func:`value_and_grad`, :func:`vjp`,
:func:`jvp`, :func:`jacobian`, :func:`hessian`, :func:`hvp`, :func:`trace`; a compiled Hessian-vector
product callable: :func:`hessian_vector_product`; derivative control:
:func:`custom_gradient`, :func:`stop_gradient`; TensorFlow-style front ends:
:class:`GradientTape`, :class:`ForwardAccumulator`, :func:`constant`, :class:`Variable`;
teaching: :func:`explain`.  Errors derive from :class:`SymgradError`.
"""
import sys as _sys
import types as _types

from ._version import __version__
from .errors import (ArgumentError, CacheWarning, DTypeError, RuleError, ShapeError, SignatureError,
                     SymgradError, SymgradWarning, TraceError, UnsupportedOperationError)

__all__ = [
    "__version__",
    "jit", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "jacfwd", "jacrev", "hessian", "hvp",
    "hessian_vector_product", "trace", "Traced",
    "custom_gradient", "stop_gradient", "Variable",
    "GradientTape", "ForwardAccumulator", "EagerTensor", "constant", "convert_to_tensor",
    "explain", "Explanation",
    "jacobian_sparsity", "hessian_sparsity",
    "SymgradError", "TraceError", "UnsupportedOperationError", "SignatureError", "ShapeError",
    "DTypeError", "RuleError", "ArgumentError", "CacheWarning", "SymgradWarning",
]


class _Package(_types.ModuleType):
    """symgrad's module type: a subpackage named like an API function (``symgrad.trace``) is
    not bound over that function when it is imported before the API is loaded."""

    def __setattr__(self, name, value):
        if name in __all__ and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name):
    """Load the API on first use (PEP 562), so that importing ``symgrad.runtime`` or
    ``symgrad.compile.recipe`` alone (as Dask workers do) pulls in neither SymPy nor the tracer."""
    if name.startswith("__") or _API_STATE["loading"]:  # (submodules are being imported by _load_api)
        raise AttributeError(f"module 'symgrad' has no attribute {name!r}")
    _load_api()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module 'symgrad' has no attribute {name!r}") from None


def __dir__():
    _load_api()
    return sorted(globals())


_API_STATE = {"loading": False}


def _load_api():
    if _API_STATE["loading"]:
        return
    _API_STATE["loading"] = True
    try:
        _import_api()
    finally:
        _API_STATE["loading"] = False


def _import_api():
    from . import ir  # noqa: F401  (registers the primitives)
    from .api.accumulator import ForwardAccumulator
    from .api.control import stop_gradient
    from .api.custom import custom_gradient
    from .api.eager import EagerTensor, constant, convert_to_tensor
    from .api.explain import explain
    from .api.explanation import Explanation
    from .api.functions import (grad, hessian, hessian_vector_product, hvp, jacfwd, jacobian, jacrev, jit, jvp,
                                value_and_grad, vjp)
    from .api.sparse import hessian_sparsity, jacobian_sparsity
    from .api.tape import GradientTape
    from .api.traced import Traced, trace
    from .api.variables import Variable
    globals().update({k: v for k, v in locals().items()})
