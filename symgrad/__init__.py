"""symgrad: trace numpy functions to SymPy, differentiate on the graph, emit Numba kernels."""
from ._version import __version__
from . import ir  # noqa: F401  (registers the primitives)
from .api.functions import grad, hessian, hvp, jacobian, jit, jvp, value_and_grad, vjp
from .api.traced import Traced, trace
from .api.control import stop_gradient
from .errors import (DTypeError, RuleError, ShapeError, SignatureError, SymgradError, TraceError,
                     UnsupportedOperationError)

__all__ = [
    "__version__", "trace", "Traced", "stop_gradient", "jit", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "hvp",
    "SymgradError", "TraceError", "UnsupportedOperationError", "SignatureError", "ShapeError",
    "DTypeError", "RuleError",
]
from .api.custom import custom_gradient  # noqa: E402
from .api.variables import Variable  # noqa: E402

__all__ += ["custom_gradient", "Variable"]
from .api.explain import explain  # noqa: E402

__all__ += ["explain"]
from .api.eager import EagerTensor, constant, convert_to_tensor  # noqa: E402
from .api.tape import GradientTape  # noqa: E402
from .api.accumulator import ForwardAccumulator  # noqa: E402

__all__ += ["EagerTensor", "constant", "convert_to_tensor", "GradientTape", "ForwardAccumulator"]
