"""Calls of ``scipy.special``'s Python functions with traced arguments, sent to symgrad's builders.

NumPy hands traced values to symgrad through ``__array_ufunc__``/``__array_function__``, which
covers the ufuncs of ``scipy.special`` too.  ``logsumexp``, ``softmax``, ``log_softmax``,
``polygamma`` and ``multigammaln`` are Python functions instead: they convert their arguments with
``asarray`` and branch on values (SciPy's array-API dispatch, which could hand them to another namespace, is
off unless ``SCIPY_ARRAY_API=1`` is set before SciPy is imported), so they cannot run on a
:class:`~symgrad.trace.tracer.Tracer`.

symgrad intercepts them.  :func:`intercept_scipy` (called when a trace, a ``GradientTape`` or a
``ForwardAccumulator`` starts, and when :mod:`symgrad.trace` is imported) replaces the code of
each such function, once, with the forwarder of the same name and signature below, which calls
:func:`dispatch`.
The function objects stay the same, so a name bound by ``from scipy.special import logsumexp``
before or after is covered.  :func:`dispatch` sends a call that has a traced value (or a
``symgrad.Variable``) among its arguments to the builder in
:data:`symgrad.trace.scipy_special.FUNCTIONS`, and every other call to SciPy's original code
with the same arguments, so SciPy behaves as before outside traces.  A SciPy version whose
function is wrapped (a closure) is left alone; tracing it then raises the refusal of
:func:`symgrad.trace.numpy_api.untraceable_library_call`.
"""
from __future__ import annotations

import inspect
import sys
import threading
import types

import numpy as np

from . import scipy_special
from .tracer import Tracer, active_trace

__all__ = ["intercept_scipy", "dispatch", "intercepted"]

_GLOBAL = "_symgrad_dispatch"  # the name the forwarders call, set in the SciPy module's globals
_ORIGINALS: dict[str, tuple] = {}  # "scipy.special.logsumexp" -> (SciPy's function, symgrad's builder)
_LOCK = threading.Lock()
_STATE = {"done": False}


def intercepted() -> list[str]:
    """Qualified names of the functions whose calls symgrad intercepts now."""
    return sorted(_ORIGINALS)


def intercept_scipy() -> None:
    """Install the forwarders once ``scipy.special`` is imported (cheap when done or not yet)."""
    if _STATE["done"] or "scipy.special" not in sys.modules:
        return
    with _LOCK:
        if _STATE["done"]:
            return
        module = sys.modules["scipy.special"]
        for forwarder in _FORWARDERS:
            fn = getattr(module, forwarder.__name__, None)
            if isinstance(fn, types.FunctionType):
                _install(f"scipy.special.{forwarder.__name__}", fn, forwarder)
        _STATE["done"] = True


def _parameters(fn) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]


def _install(key: str, fn: types.FunctionType, forwarder) -> None:
    """Give ``fn`` the forwarder's code, keeping SciPy's code in a copy for untraced calls.

    Skipped when the signatures differ (another SciPy version) or ``fn`` is a closure (a
    decorator's wrapper): the code of a function can only be replaced by code with as many
    free variables, and a forwarder with other parameters would change SciPy's behaviour."""
    if key in _ORIGINALS or fn.__code__.co_freevars or _parameters(fn) != _parameters(forwarder):
        return
    original = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    original.__kwdefaults__ = fn.__kwdefaults__
    _ORIGINALS[key] = (original, scipy_special.FUNCTIONS[fn.__name__])
    fn.__globals__[_GLOBAL] = dispatch  # the forwarder's global, looked up in SciPy's module
    fn.__code__ = forwarder.__code__.replace(co_qualname=fn.__code__.co_qualname)


# The forwarders: SciPy's signatures (scipy 1.11-1.17), each handing its arguments to dispatch.
# Their code replaces SciPy's; SciPy's defaults stay on the function objects.

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    return _symgrad_dispatch("scipy.special.logsumexp", a=a, axis=axis, b=b, keepdims=keepdims,
                             return_sign=return_sign)


def softmax(x, axis=None):
    return _symgrad_dispatch("scipy.special.softmax", x=x, axis=axis)


def log_softmax(x, axis=None):
    return _symgrad_dispatch("scipy.special.log_softmax", x=x, axis=axis)


def polygamma(n, x):
    return _symgrad_dispatch("scipy.special.polygamma", n=n, x=x)


def multigammaln(a, d):
    return _symgrad_dispatch("scipy.special.multigammaln", a=a, d=d)


_FORWARDERS = (logsumexp, softmax, log_softmax, polygamma, multigammaln)


def _has_traced(value) -> bool:
    if isinstance(value, Tracer) or getattr(type(value), "__symgrad_variable__", False):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_traced(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return any(_has_traced(v) for v in value.reshape(-1))
    return False


def _read_variables(value):
    """Variables read as a numpy call reads them (``np.positive`` is the identity on a read):
    a Tracer of the trace being recorded, or an eager tensor under a tape."""
    if getattr(type(value), "__symgrad_variable__", False):
        return np.positive(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_read_variables(v) for v in value)
    return value


def _context(values):
    for v in values:
        if isinstance(v, Tracer):
            return v.ctx
        if isinstance(v, (list, tuple)):
            ctx = _context(v)
            if ctx is not None:
                return ctx
        if isinstance(v, np.ndarray) and v.dtype == object:
            ctx = _context(list(v.reshape(-1)))
            if ctx is not None:
                return ctx
    return active_trace()


def dispatch(key: str, **arguments):
    """Call the builder for ``key`` when an argument is traced, else SciPy's original code."""
    original, builder = _ORIGINALS[key]
    if not any(_has_traced(v) for v in arguments.values()):
        return original(**arguments)
    arguments = {k: _read_variables(v) for k, v in arguments.items()}
    return builder(_context(list(arguments.values())), **arguments)


_symgrad_dispatch = dispatch  # the name the forwarders call (in SciPy's module once installed)
