"""How NumPy ufuncs and functions map onto symgrad primitives while tracing.

Two tables: ``UFUNCS`` (ufunc -> builder) and ``FUNCTIONS`` (``np.sum``,
``np.where``, ``np.dot`` ...; the reductions of :mod:`.numpy_reductions` and the
shape functions of :mod:`.numpy_shapes` are merged into it).  A ufunc or function missing from both raises
:class:`UnsupportedOperationError` naming it, so a gap is never silent.
"""
from __future__ import annotations

import linecache
import math
import string
import sys

import numpy as np

from ..errors import SourceLoc, TraceError, UnsupportedOperationError, format_error, user_location
from ..ir.ops import REGISTRY
from .linalg_api import FUNCTIONS as LINALG_FUNCTIONS
from . import numpy_reductions, numpy_select, numpy_shapes, numpy_signal, numpy_sorting, numpy_statistics
from .numpy_core import as_tracer as _as_tracer
from .numpy_core import axes_of, concatenate, reshape, stack, traced_index_error, transpose
from .numpy_shapes import fancy_getitem, is_fancy
from .tracer import TraceContext, Tracer, register_numpy_protocol


def _ufunc_table() -> dict:
    """``{ufunc: op name}`` from each op's ``ufuncs`` facet (``"numpy.exp"``, ``"scipy.special.erf"``).

    A module that is not imported yet is skipped (a scipy ufunc reaching the tracer means
    scipy.special is imported), so tracing never imports scipy itself.
    """
    table = {}
    for op in REGISTRY.values():
        for qualified in op.ufuncs:
            module, name = qualified.rsplit(".", 1)
            mod = sys.modules.get(module)
            fn = getattr(mod, name, None) if mod is not None else None
            if fn is not None:
                table[fn] = op.name
    return table


def _direct(ufunc):
    """The op name ``ufunc`` traces to, or None (rebuilt when scipy.special gets imported)."""
    key = "scipy.special" in sys.modules
    if _DIRECT.get(None) != key:
        _DIRECT.clear()
        _DIRECT.update(_ufunc_table())
        _DIRECT[None] = key
    return _DIRECT.get(ufunc)


_DIRECT: dict = {}



def _fmax_fmin(op):
    """np.fmax/np.fmin: like maximum/minimum but a NaN argument loses (NaN only if both are NaN)."""
    def build(c, a, b):
        a_nan, b_nan = c.apply("ne", a, a), c.apply("ne", b, b)
        return c.apply("where", b_nan, a, c.apply("where", a_nan, b, c.apply(op, a, b)))
    return build
_LN2 = math.log(2.0)
_COMPOSITE = {
    np.square: lambda c, x: c.apply("mul", x, x),
    np.positive: lambda c, x: x,
    np.reciprocal: lambda c, x: c.apply("div", 1.0, x),
    np.deg2rad: lambda c, x: c.apply("mul", math.pi / 180.0, x),
    np.rad2deg: lambda c, x: c.apply("mul", 180.0 / math.pi, x),
    np.radians: lambda c, x: c.apply("mul", math.pi / 180.0, x),  # NumPy's aliases, separate ufunc objects
    np.degrees: lambda c, x: c.apply("mul", 180.0 / math.pi, x),
    np.conjugate: lambda c, x: x,  # np.conj too: symgrad's values are real, so conj is the identity
    np.fmax: _fmax_fmin("maximum"),
    np.fmin: _fmax_fmin("minimum"),
    # log2(2**a + 2**b) = logaddexp(a ln 2, b ln 2) / ln 2: the stable logaddexp, in base 2
    np.logaddexp2: lambda c, a, b: c.apply("div", c.apply("logaddexp", c.apply("mul", _LN2, a),
                                                          c.apply("mul", _LN2, b)), _LN2),
}


def _pseudo_huber(c, delta, r):
    """SciPy's ``pseudo_huber(delta, r) = delta**2 (sqrt(1 + (r/delta)**2) - 1)`` (inf for delta < 0,
    0 for delta == 0), written ``r (r / (1 + hypot(1, r/delta)))``: no cancellation for |r| << delta,
    no overflow of r**2 for |r| >> delta, and its partials in r and delta are products and quotients
    without cancellation (as written, d/d delta cancels to 1e-5 relative at delta/r = 1e5).  The
    second derivative in r, (1 + t**2)**-1.5 with t = r/delta, is the difference 1/h - t**2/h**3 of
    the product rule: within 1e-16/|t| absolutely, not relatively, for |t| >> 1 (as in JAX).
    Reference: Charbonnier et al. (1997); SciPy's ``_convex_analysis.pxd``."""
    h = c.apply("hypot", 1.0, c.apply("div", r, delta))
    value = c.apply("mul", r, c.apply("div", r, c.apply("add", 1.0, h)))
    return c.apply("where", c.apply("lt", delta, 0.0), math.inf,
                   c.apply("where", c.apply("eq", delta, 0.0), 0.0, value))


_BOXCOX_SERIES_U = 0.1  # |lmbda * log(x)| below this: the series, 1/15! * 0.1**14 below an ulp


def _boxcox(log_fn):
    """SciPy's ``boxcox(x, lmbda)`` (``log_fn`` "log") or ``boxcox1p`` ("log1p"):
    ``expm1(u) / lmbda`` with ``u = lmbda * L``, ``L = log(x)`` (or ``log1p(x)``); ``L`` at lmbda = 0.
    Where ``|u| < 0.1`` it is ``L * sum(u**k / (k + 1)!, k < 14)`` instead: the same value to
    rounding, while the derivatives in lmbda of ``expm1(u) / lmbda`` cancel there (2e-8 relative
    in the first at lmbda = 1e-8, and the second is 2.0 instead of L**3/3; JAX differentiates the
    quotient and cancels the same way).  Reference: Box & Cox (1964); SciPy's ``_boxcox.pxd``."""
    def build(c, x, lmbda):
        L = c.apply(log_fn, x)
        u = c.apply("mul", lmbda, L)
        series = 1.0 / math.factorial(14)
        for k in range(13, 0, -1):  # Horner: 1/1! + u (1/2! + u (1/3! + ...))
            series = c.apply("add", 1.0 / math.factorial(k), c.apply("mul", u, series))
        small = c.apply("lt", c.apply("abs", u), _BOXCOX_SERIES_U)
        return c.apply("where", small, c.apply("mul", L, series), c.apply("div", c.apply("expm1", u), lmbda))
    return build


# scipy.special ufuncs written exactly with primitives (by name: scipy is imported only by the user)
_SCIPY_COMPOSITE = {
    "log_expit": lambda c, x: c.apply("neg", c.apply("softplus", c.apply("neg", x))),  # -log(1 + e^-x)
    "expm1": lambda c, x: c.apply("expm1", x),
    "log1p": lambda c, x: c.apply("log1p", x),
    "exp2": lambda c, x: c.apply("exp2", x),
    "exp10": lambda c, x: c.apply("pow", 10.0, x),
    # cos(x) - 1 = -2 sin(x/2)**2: no cancellation near 0 (x/2 is exact)
    "cosm1": lambda c, x: c.apply("mul", -2.0, c.apply("mul", c.apply("sin", c.apply("mul", 0.5, x)),
                                                          c.apply("sin", c.apply("mul", 0.5, x)))),
    # the real loggamma is gammaln for x >= 0 (bit for bit: SciPy's real loggamma calls it) and NaN for
    # x < 0, where gammaln is log|Gamma|; derivative digamma (DLMF 5.15.1)
    "loggamma": lambda c, x: c.apply("where", c.apply("lt", x, 0.0), math.nan, c.apply("gammaln", x)),
    "pseudo_huber": _pseudo_huber,
    "boxcox": _boxcox("log"),
    "boxcox1p": _boxcox("log1p"),
}


def _scipy_special_name(ufunc) -> str | None:
    mod = sys.modules.get("scipy.special")
    name = getattr(ufunc, "__name__", "")
    return name if mod is not None and getattr(mod, name, None) is ufunc else None


def _scipy_public_name(ufunc) -> str | None:
    """``"zeta"`` for scipy.special's private ufunc ``_zeta`` when scipy.special has a public
    ``zeta`` (a Python wrapper that calls it), else None."""
    mod = sys.modules.get("scipy.special")
    name = getattr(ufunc, "__name__", "")
    if mod is None or not name.startswith("_") or name.startswith("__"):
        return None
    return name[1:] if callable(getattr(mod, name[1:], None)) else None


# scipy.special functions that are not ufuncs and branch on values inside: what to write instead
# if SciPy's own code meets a traced value (symgrad.trace.library_calls intercepts them first;
# this is the refusal for a SciPy version whose functions it could not intercept)
_SCIPY_PYTHON_FUNCTIONS = {
    "logsumexp": "np.logaddexp.reduce(x, axis=...) (a fold of the stable logaddexp)",
    "softmax": "np.exp(x - np.logaddexp.reduce(x, axis=..., keepdims=True))",
    "log_softmax": "x - np.logaddexp.reduce(x, axis=..., keepdims=True)",
    "multigammaln": "d * (d - 1) / 4 * np.log(np.pi) + sum(gammaln(a - j / 2) for j in range(d))",
}


def untraceable_library_call():
    """An :class:`UnsupportedOperationError` naming ``scipy.special.<f>`` when a traced value is
    used concretely inside one of the non-ufunc scipy.special functions above, else None."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if "scipy" in code.co_filename and code.co_name in _SCIPY_PYTHON_FUNCTIONS:
            caller = frame.f_back
            while caller is not None and "scipy" in caller.f_code.co_filename:
                caller = caller.f_back
            loc = None
            if caller is not None:
                c = caller.f_code
                loc = SourceLoc(c.co_qualname, c.co_filename, caller.f_lineno,
                                linecache.getline(c.co_filename, caller.f_lineno).strip())
            return UnsupportedOperationError(format_error(
                f"scipy.special.{code.co_name} cannot be traced",
                "it is not a ufunc and branches on the values of its argument internally",
                f"write {_SCIPY_PYTHON_FUNCTIONS[code.co_name]}", loc))
        frame = frame.f_back
    return None


def _unsupported(kind: str, name: str, where: str = "numpy."):
    return UnsupportedOperationError(format_error(
        f"{kind} {where}{name} has no symgrad rule", "symgrad only traces functions it can differentiate "
        "symbolically", "rewrite it with supported numpy functions (README.md, 'Traceable code'; "
        "docs/errors.md), or wrap it in symgrad.custom_gradient with your own derivative", user_location(3)))


# the ufuncs behind Python's augmented assignments (a += b calls np.add(a, b, out=(a,)) on an ndarray a)
_AUGMENTED = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/", np.floor_divide: "//",
              np.power: "**", np.remainder: "%", np.matmul: "@"}


def _out_error(ufunc, inputs, out) -> TraceError:
    """The error for a ufunc call that writes into ``out``: an augmented assignment on a NumPy
    array (``s = np.zeros(()); s += t``) is named as such, with the rebinding that replaces it."""
    outs = out if isinstance(out, tuple) else (out,)
    op = _AUGMENTED.get(ufunc)
    if op is not None and len(outs) == 1 and inputs and outs[0] is inputs[0]:
        return TraceError(format_error(
            f"`a {op}= ...` on a NumPy array a writes the traced result into it (numpy.{ufunc.__name__} "
            "with out=a)", "a NumPy array holds numbers, not traced values, and in-place writes have no "
            f"derivative rule", f"write `a = a {op} ...`, or start the accumulator as a number (`a = 0.0`)",
            user_location(4)))
    return TraceError(format_error(f"numpy.{ufunc.__name__}(..., out=...) writes into an array",
                                   "in-place writes have no derivative rule", "drop out= and use the result",
                                   user_location(4)))


def apply_ufunc(ctx: TraceContext, ufunc, method: str, inputs, kwargs):
    if kwargs.get("out") is not None:
        raise _out_error(ufunc, inputs, kwargs["out"])
    if method != "__call__":
        ctx.whole_array(f"numpy.{ufunc.__name__}.{method}")
    if method == "reduce" and ufunc is np.add:  # ufunc.reduce's axis defaults to 0, np.sum's to None
        return apply_function(ctx, np.sum, inputs, {"axis": 0, **{k: v for k, v in kwargs.items() if k != "out"}})
    if method == "reduce" and ufunc is np.logaddexp:
        return logaddexp_reduce(ctx, *inputs, **{k: v for k, v in kwargs.items() if k != "out"})
    if method != "__call__":
        raise _unsupported("ufunc method", f"{ufunc.__name__}.{method}")
    if ufunc is np.matmul:
        return matmul(ctx, *inputs)
    name = _direct(ufunc)
    if name is not None:
        return ctx.apply(name, *inputs)
    if ufunc in _COMPOSITE:
        return _COMPOSITE[ufunc](ctx, *inputs)
    scipy_name = _scipy_special_name(ufunc)
    if scipy_name in _SCIPY_COMPOSITE:
        return _SCIPY_COMPOSITE[scipy_name](ctx, *inputs)
    if getattr(np, ufunc.__name__, None) is ufunc:
        raise _unsupported("ufunc", ufunc.__name__)
    if scipy_name is not None:
        raise _unsupported("ufunc", scipy_name, where="scipy.special.")
    public = _scipy_public_name(ufunc)
    if public is not None:  # scipy.special.zeta, lambertw, ...: Python wrappers of a private ufunc
        raise _unsupported("function", f"{public} (its ufunc {ufunc.__name__})", where="scipy.special.")
    raise _unsupported("ufunc", f"{ufunc.__name__} (from outside numpy, e.g. scipy.special)", where="")


def logaddexp_reduce(ctx, x, axis=0, dtype=None, keepdims=False, **kw):
    """``np.logaddexp.reduce(x, axis)``: log(sum(exp(x))) along ``axis`` as a fold of the stable
    ``logaddexp`` primitive (each step max(a, b) + log1p(exp(-|a - b|))), the supported spelling
    of ``scipy.special.logsumexp`` (which branches on values internally and cannot be traced).

    Reference: Blanchard, Higham & Higham (2021), "Accurately computing the log-sum-exp and
    softmax functions", IMA J. Numer. Anal. 41(4) (the fold's error bound is theirs).

    Raises UnsupportedOperationError for ``initial=``, ``where=`` or a dtype other than float64.
    """
    given = [k for k, v in kw.items() if v is not None and v is not np._NoValue]
    if given or (dtype is not None and np.dtype(dtype) != np.float64):
        raise UnsupportedOperationError(format_error(
            f"numpy.logaddexp.reduce(..., {(given or ['dtype'])[0]}=...) is not supported on traced values",
            "symgrad traces the common forms of NumPy functions only (README, 'Traceable code')",
            "drop the keyword and apply it with array operations (np.where with -np.inf for a mask)",
            user_location(3)))
    x = _as_tracer(ctx, x)
    if x.ndim == 0:
        raise ValueError("np.logaddexp.reduce needs an array (a traced scalar has core shape ())")
    axes = _axes(axis, x.ndim)
    if len(axes) != 1:
        raise _unsupported("function", "logaddexp.reduce over several axes (reduce one axis at a time)")
    ax = axes[0]
    pick = [slice(None)] * x.ndim
    out = None
    for i in range(x.shape[ax]):
        pick[ax] = i
        xi = x[tuple(pick)]
        out = xi if out is None else ctx.apply("logaddexp", out, xi)
    if keepdims:
        out = reshape(ctx, out, tuple(1 if i == ax else d for i, d in enumerate(x.shape)))
    return out


# -- indexing ------------------------------------------------------------------------

def _norm_index(key, shape) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    out, dim = [], 0
    for k in key:
        if k is Ellipsis:
            fill = len(shape) - n_real
            out.extend([("s", None, None, None)] * fill)
            dim += fill
        elif k is None:
            out.append(None)
        elif isinstance(k, Tracer):
            raise traced_index_error("cannot index with a traced value", k, skip=4)
        elif isinstance(k, slice):
            for v in (k.start, k.stop, k.step):
                if v is not None and not isinstance(v, (int, np.integer)):
                    raise TypeError(f"slice bounds must be constant ints; got {v!r}")
            out.append(("s",) + tuple(None if v is None else int(v) for v in (k.start, k.stop, k.step)))
            dim += 1
        elif isinstance(k, (int, np.integer)):
            if dim >= len(shape) or not -shape[dim] <= k < shape[dim]:
                raise IndexError(format_error(f"index {k} is out of bounds for a traced array of shape {shape}",
                                              "core sizes are fixed by the signature",
                                              "check the index", user_location(4)))
            out.append(int(k) % shape[dim])
            dim += 1
        else:
            raise _unsupported("indexing with", type(k).__name__)
    return tuple(out)


def getitem(ctx: TraceContext, x: Tracer, key):
    ctx.whole_array("indexing")
    if not x.shape:
        raise IndexError(format_error("cannot index a traced scalar", "this argument has core shape () "
                                      "(the default: every argument is a scalar core)",
                                      'give a gufunc signature, e.g. signature="(n)->()"', user_location(3)))
    if type(key) is int and -x.shape[0] <= key < x.shape[0]:  # x[i] in a Python loop: the common case
        return ctx.apply("getitem", x, params=((key % x.shape[0],),))
    if is_fancy(key):  # integer arrays and constant boolean masks: a gather
        return fancy_getitem(ctx, x, key)
    return ctx.apply("getitem", x, params=(_norm_index(key, x.shape),))


# -- contractions ---------------------------------------------------------------------------

def matmul(ctx: TraceContext, a, b):
    ctx.whole_array("a matrix product")
    a, b = _as_tracer(ctx, a), _as_tracer(ctx, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: input operand does not have enough dimensions (use * for scalars)")
    letters = iter(string.ascii_lowercase)
    if a.ndim == 1 and b.ndim == 1:
        spec = "i,i->"
    elif a.ndim == 2 and b.ndim == 1:
        spec = "ij,j->i"
    elif a.ndim == 1 and b.ndim == 2:
        spec = "i,ij->j"
    elif a.ndim == b.ndim:
        batch = "".join(next(letters) for _ in range(a.ndim - 2))
        spec = f"{batch}xy,{batch}yz->{batch}xz"
    else:
        raise _unsupported("matmul of ranks", f"{a.ndim} and {b.ndim}")
    return ctx.apply("contract", a, b, params=(spec,))


def dot(ctx, a, b):
    a, b = _as_tracer(ctx, a), _as_tracer(ctx, b)
    if a.ndim == 0 or b.ndim == 0:
        return ctx.apply("mul", a, b)
    if b.ndim <= 2:
        return matmul(ctx, a, b)
    raise _unsupported("dot of ranks", f"{a.ndim} and {b.ndim}")


# -- reductions and shape functions -------------------------------------------------------------

def _axes(axis, ndim) -> tuple[int, ...]:
    return axes_of(axis, ndim)  # NumPy's AxisError for an out-of-range axis


def where(ctx, cond, x=None, y=None):
    if x is None or y is None:
        raise _unsupported("function", "where with one argument (np.nonzero)")
    return ctx.apply("where", cond, x, y)


def _checked(func: str, kw: dict, impl, *args):
    """``impl(*args)`` once ``numpy.<func>``'s other keywords are checked (:func:`reject_keywords`)."""
    numpy_reductions.reject_keywords(func, kw)
    return impl(*args)


def _like(func: str, kw: dict) -> None:
    """``np.zeros_like`` and the like take ``dtype=``/``order=``/``subok=`` (the constant's values do not
    change); ``shape=`` would change its shape and is refused."""
    numpy_reductions.reject_keywords(func, {k: v for k, v in kw.items() if k == "shape"})


def clip(ctx, x, a_min=None, a_max=None, **kw):
    """``np.clip(x, a_min, a_max)`` as maximum then minimum; ``out=``, ``where=``, ``casting=`` and a
    non-float64 ``dtype=`` are refused (:func:`numpy_reductions.reject_keywords`)."""
    numpy_reductions.reject_keywords("clip", kw)
    out = x
    if a_min is not None:
        out = ctx.apply("maximum", out, a_min)
    if a_max is not None:
        out = ctx.apply("minimum", out, a_max)
    return out


def np_round(ctx, x, decimals=0, out=None):
    """``np.round``/``np.around``: NumPy's algorithm, ``rint(x * 10**d) / 10**d`` (derivative 0, as rint)."""
    if out is not None:
        raise _unsupported("function", "round(..., out=...) (an in-place write)")
    if not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"np.round: decimals must be an int; got {decimals!r}")
    if decimals == 0:
        return ctx.apply("rint", x)
    scale = 10.0 ** int(decimals)
    return ctx.apply("div", ctx.apply("rint", ctx.apply("mul", x, scale)), scale)


_SINC_SERIES_BELOW = 1e-3  # |x| below this: 1 - (pi x)^2/6 + (pi x)^4/120, error under 1e-18 relative


def sinc(ctx, x):
    """``np.sinc``: sin(pi x) / (pi x), and its Taylor series near 0 so that every derivative is
    right there too (a bare ``where(x == 0, 1, ...)`` would give sinc''(0) = 0 instead of -pi^2/3).
    DLMF 4.14 (sine series)."""
    px = ctx.apply("mul", math.pi, x)
    p2 = ctx.apply("mul", px, px)
    series = ctx.apply("add", 1.0, ctx.apply("mul", p2, ctx.apply("sub", ctx.apply("div", p2, 120.0), 1.0 / 6.0)))
    small = ctx.apply("lt", ctx.apply("abs", x), _SINC_SERIES_BELOW)
    safe = ctx.apply("where", small, 1.0, px)  # the untaken branch never divides by 0
    return ctx.apply("where", small, series, ctx.apply("div", ctx.apply("sin", safe), safe))


FUNCTIONS = {
    np.dot: dot, np.vdot: lambda c, a, b: dot(c, np.ravel(a), np.ravel(b)),
    np.where: where, np.reshape: reshape, np.transpose: transpose,
    np.ravel: lambda c, x, order="C": reshape(c, x, (-1,), order),
    np.concatenate: lambda c, arrays, axis=0, **kw: _checked("concatenate", kw, concatenate, c, arrays, axis),
    np.stack: lambda c, arrays, axis=0, **kw: _checked("stack", kw, stack, c, arrays, axis),
    np.clip: clip, np.round: np_round, np.around: np_round, np.sinc: sinc,
    np.expand_dims: lambda c, x, axis: reshape(c, x, np.expand_dims(np.empty(_as_tracer(c, x).shape), axis).shape),
    np.broadcast_to: lambda c, x, shape, **kw: c.apply("broadcast_to", x, params=(tuple(shape),)),
    np.zeros_like: lambda c, x, **kw: _like("zeros_like", kw) or _as_tracer(c, np.zeros(_as_tracer(c, x).shape)),
    np.ones_like: lambda c, x, **kw: _like("ones_like", kw) or _as_tracer(c, np.ones(_as_tracer(c, x).shape)),
    np.full_like: lambda c, x, fill_value, **kw: _like("full_like", kw) or c.apply(
        "broadcast_to", fill_value, params=(_as_tracer(c, x).shape,)) if isinstance(fill_value, Tracer)
    else _as_tracer(c, np.full(_as_tracer(c, x).shape, float(fill_value))),
    np.shape: lambda c, x: _as_tracer(c, x).shape, np.ndim: lambda c, x: _as_tracer(c, x).ndim,
    np.size: lambda c, x: _as_tracer(c, x).size,
    # symgrad's values are real: np.real is the value, np.imag zeros (derivative 0)
    np.real: lambda c, val: _as_tracer(c, val),
    np.imag: lambda c, val: _as_tracer(c, np.zeros(_as_tracer(c, val).core_shape)),
}
FUNCTIONS.update(LINALG_FUNCTIONS)  # np.linalg.norm, det, slogdet, inv, solve, cholesky, eigh, lstsq


def _qualified(func) -> str:
    """``fft.fft`` for numpy.fft.fft, ``sort`` for numpy.sort: the name after ``numpy.``."""
    name = getattr(func, "__name__", repr(func))
    module = str(getattr(func, "__module__", None) or "numpy")
    sub = module.split(".", 1)[1] if module.startswith("numpy.") else ""
    return f"{sub}.{name}" if sub and not sub.startswith(("_", "core", "lib")) else name


FUNCTIONS.update(numpy_reductions.FUNCTIONS)
FUNCTIONS.update(numpy_shapes.FUNCTIONS)
FUNCTIONS.update(numpy_sorting.FUNCTIONS)  # np.sort, median, quantile, percentile
FUNCTIONS.update(numpy_statistics.FUNCTIONS)  # np.cov, corrcoef, nanmax, nanmin, nanvar, nanstd, nanprod
FUNCTIONS.update(numpy_signal.FUNCTIONS)  # np.convolve, correlate, trapezoid, gradient, ediff1d
FUNCTIONS.update(numpy_select.FUNCTIONS)  # np.select, piecewise

# Functions that act element by element: they keep a probe at scalar cores going (see
# symgrad.trace.tracer.NotElementwise).  Every other function needs whole arrays.
ELEMENTWISE_FUNCTIONS = {np.where, np.clip, np.round, np.around, np.sinc, np.select, np.piecewise, np.real,
                         np.imag}


def apply_function(ctx: TraceContext, func, args, kwargs):
    if func not in ELEMENTWISE_FUNCTIONS:
        ctx.whole_array(f"numpy.{_qualified(func)}")
    handler = FUNCTIONS.get(func)
    if handler is None:
        raise _unsupported("function", _qualified(func))
    return handler(ctx, *args, **kwargs)


# Tracer's dunder methods (__array_ufunc__, __array_function__, __getitem__, __matmul__, and the
# errors of float()/bool()) reach these through tracer.NUMPY_PROTOCOL: tracer.py never imports this module.
register_numpy_protocol(apply_ufunc=apply_ufunc, apply_function=apply_function, getitem=getitem, matmul=matmul,
                        untraceable_library_call=untraceable_library_call)
