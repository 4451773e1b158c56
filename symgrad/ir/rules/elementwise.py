"""Elementwise primitives: one block per op, scalar partials given once.

Each op broadcasts its arguments like the NumPy ufunc of the same name.
``partials(out, *args)`` returns one entry per argument: an :class:`E`
expression for d out / d arg (elementwise), or None for an identically zero
partial.  Rules reuse the primal output ``out`` where that is cheaper
(``exp' = out``), as JAX's ``defjvp2`` does.

Kink conventions (derivatives at points where the function is not
differentiable), chosen once and tested:

* ``abs(x)`` at 0: derivative 0 (``sign(0) = 0``), as NumPy/JAX ``sign``.
* ``maximum(a, b)`` at ``a == b``: the derivative is split, 1/2 to each
  argument; ``minimum`` likewise (JAX's convention, so ``np.clip`` has
  derivative 1/2 at its bounds).  ReLU written as ``np.maximum(x, 0)`` therefore
  has derivative 1/2 at 0, as ``jnp.maximum`` in JAX; write
  ``np.where(x > 0, x, 0)`` for derivative 0 there.
* ``where(c, a, b)``: derivative of the taken branch only; the untaken
  branch contributes an exact zero, never ``0 * nan``.
* ``sign`` and comparisons: zero derivative / not differentiable.
* ``hypot(a, b)`` at ``a = b = 0``: derivative (0, 0), so ``hypot(x, 0)`` has ``abs``'s
  derivative at 0 (JAX x64 gives 0.5, from its max/min tie split).
* ``sqrt(x*x)`` and ``sqrt(x**2)`` are ``abs(x)`` (derivative 0 at 0 instead of 0/0 = NaN;
  JAX gives NaN).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from ..graph import Graph
from ..ops import E, OpDef, broadcast_shapes, register
from .. import numpy_funcs as npf
from ..sympy_funcs import bd0, expm1, hypot, log1p, logaddexp, sigmoid, softplus

_REAL, _POS, _UNIT, _ANY_NONZERO = "real", "positive", "unit", "nonzero"


def _infer_float(nodes, params):
    first = nodes[0].shape
    same = True
    for n in nodes:
        if n.kind != "f":
            raise TypeError("a boolean value was used where a float is required")
        same = same and n.shape == first
    return (first if same else broadcast_shapes(*[n.shape for n in nodes])), "f"


def _infer_bool(nodes, params):
    return broadcast_shapes(*[n.shape for n in nodes]), "b"


def _call(fn):
    return lambda ctx, node, a: f"{fn}({', '.join(a)})"


def _vecmath_or(name, libm):
    """Emit facet of a unary op with a vecmath implementation: ``_vm_<name>_f64(x)`` (or ``_f32`` in
    float32 kernels; helpers from symgrad/emit/vecmath.py, within 1 ulp, loops over them
    vectorise) when the print context asks for vecmath, else the libm form ``<libm>(x)``.

    The vecmath functions are inlined where they are used, so that loops over arrays vectorise.
    Scalar nodes of a kernel that is not a small elementwise core (straight-line code from Python
    loops; ``ctx.vecmath_inline`` False) call them through ``_vm_<name>_<dtype>_call`` instead, a
    function compiled once: inlining a double-double ``tanh`` at each of thousands of uses would
    multiply Numba's compile time."""
    def emit(ctx, node, a):
        if getattr(ctx, "vecmath", False):
            call = "_call" if node.shape == () and not getattr(ctx, "vecmath_inline", True) else ""
            return f"_vm_{name}_{'f32' if ctx.dtype == 'float32' else 'f64'}{call}({a[0]})"
        return f"{libm}({a[0]})"
    return emit


def _vm_helpers(name, *libm_helpers):
    return tuple(libm_helpers) + tuple(f"_vm_{name}_{d}{c}" for d in ("f64", "f32") for c in ("", "_call"))


def _infix_emit(nargs, symbol):
    if nargs == 1:
        return lambda ctx, node, a: f"{symbol}{a[0]}"
    return lambda ctx, node, a: f"{a[0]} {symbol} {a[1]}"


def _numpy_ufunc_names(np_fn) -> tuple:
    """``("numpy.exp",)`` when ``np_fn`` is NumPy's ufunc of that name, else ``()``."""
    name = getattr(np_fn, "__name__", "")
    return (f"numpy.{name}",) if isinstance(np_fn, np.ufunc) and getattr(np, name, None) is np_fn else ()


def _ew(name, nargs, np_fn, sp_fn, partials=None, *, mpmath, numeric=None, ufuncs=None, emit=None,
        infix=None, helpers=(), domain=None, ref="", kink="", simplify=None, commutative=False,
        nondiff=False, infer=_infer_float, constant_args=(), arg_names=()):
    """Register one elementwise op; every facet of it is given here (see :class:`OpDef`).

    Defaults: ``numeric`` is ``np_fn`` (a ufunc keeps the dtype), ``ufuncs`` is NumPy's ufunc
    ``np_fn`` when it is one, ``emit`` calls ``np.<name>`` (or prints ``infix``).
    """
    if emit is None:
        emit = _infix_emit(nargs, infix[0]) if infix else _call(f"np.{name}")
    return register(OpDef(
        name=name, infer=infer, numpy=np_fn, sympy=sp_fn, partials=partials, emit=emit,
        elementwise=True, commutative=commutative, nondiff=nondiff, domain=domain or (_REAL,) * nargs,
        ref=ref, kink=kink, simplify=simplify, mpmath=mpmath, numeric=numeric or np_fn,
        ufuncs=_numpy_ufunc_names(np_fn) if ufuncs is None else tuple(ufuncs), infix=infix,
        helpers=tuple(helpers), constant_args=tuple(constant_args), arg_names=tuple(arg_names),
    ))


# -- simplifications shared by the arithmetic ops ----------------------------

def _where_zero_branch(g: Graph, nid: int):
    """If ``nid`` is ``where(c, u, 0)`` or ``where(c, 0, u)``: (c, u, u_is_then)."""
    n = g[nid]
    if n.op != "where":
        return None
    c, a, b = n.args
    if g.is_const(b, 0.0) and g.shape(b) == ():
        return c, a, True
    if g.is_const(a, 0.0) and g.shape(a) == ():
        return c, b, False
    return None


def _push_into_where(g: Graph, name: str, x: int, other: int, other_first: bool):
    """``where(c, u, 0) * y -> where(c, u * y, 0)``: the untaken branch stays an exact 0.

    Only while building derivatives (``g.ad_mode``): in user code NumPy gives ``0 * nan = nan``.
    """
    if not g.ad_mode:
        return None
    hit = _where_zero_branch(g, x)
    if hit is None:
        return None
    c, u, then = hit
    inner = g.apply(name, other, u) if other_first else g.apply(name, u, other)
    zero = g.const(0.0)
    return g.apply("where", c, inner, zero) if then else g.apply("where", c, zero, inner)


def _same_shape(g, nid, shape):
    return g.shape(nid) == tuple(shape)


_ADD_SPECIAL = frozenset(("const", "where"))  # ops _simp_add looks at


def _simp_add(g, args, params, shape):
    a, b = args
    if g.nodes[a].op not in _ADD_SPECIAL and g.nodes[b].op not in _ADD_SPECIAL:  # the common case
        return None
    if g.is_const(b, 0.0) and _same_shape(g, a, shape):
        return a
    if g.is_const(a, 0.0) and _same_shape(g, b, shape):
        return b
    ha, hb = _where_zero_branch(g, a), _where_zero_branch(g, b)
    if ha and hb and ha[0] == hb[0] and ha[2] != hb[2]:
        then, other = (ha[1], hb[1]) if ha[2] else (hb[1], ha[1])
        return g.apply("where", ha[0], then, other)
    return None


def _simp_sub(g, args, params, shape):
    a, b = args
    if g.is_const(b, 0.0) and _same_shape(g, a, shape):
        return a
    if g.is_const(a, 0.0) and g.shape(a) == () and _same_shape(g, b, shape):
        return g.apply("neg", b)
    return None


_MUL_SPECIAL = frozenset(("const", "div", "where"))  # ops _simp_mul looks at; other operands: nothing to do


def _simp_mul(g, args, params, shape):
    a, b = args
    nodes = g.nodes
    na, nb = nodes[a], nodes[b]
    if na.op not in _MUL_SPECIAL and nb.op not in _MUL_SPECIAL:  # the common case
        return None
    shape = tuple(shape)
    for x, y, nx, ny in ((a, b, na, nb), (b, a, nb, na)):
        if nx.op != "const":
            continue
        v = g.scalar_value(x)
        if v == 1.0 and ny.shape == shape:
            return y
        if v == -1.0 and ny.shape == shape:
            return g.apply("neg", y)
        if v == 0.0 and g.ad_mode and ny.kind == "f":  # a symbolic zero partial
            return g.zeros(shape)
    if g.ad_mode:
        for x, y, nx, ny in ((a, b, na, nb), (b, a, nb, na)):  # y * (1 / z) -> y / z: one rounding, not two
            if nx.op == "div" and g.is_const(nx.args[0], 1.0) and ny.kind == "f":
                return g.apply("div", y, nx.args[1])
    if na.op != "where" and nb.op != "where":
        return None
    return (_push_into_where(g, "mul", a, b, False)
            or _push_into_where(g, "mul", b, a, True))


def _simp_div(g, args, params, shape):
    a, b = args
    if g.is_const(b, 1.0) and _same_shape(g, a, shape):
        return a
    return _push_into_where(g, "div", a, b, False)


def _simp_neg(g, args, params, shape):
    (a,) = args
    if g[a].op == "neg":
        return g[a].args[0]
    hit = _where_zero_branch(g, a) if g.ad_mode else None
    if hit:
        c, u, then = hit
        zero, inner = g.const(0.0), g.apply("neg", u)
        return g.apply("where", c, inner, zero) if then else g.apply("where", c, zero, inner)
    return None


def _simp_pow(g, args, params, shape):
    a, b = args
    if g.is_const(b, 1.0) and _same_shape(g, a, shape):
        return a
    if g.is_const(b, 0.0):
        return g.const(np.ones(shape))
    return None


def _pow_partials(out, x, p):
    if p.g.is_const(p.id):
        return (p * x ** (p - 1.0), None)
    return (p * x ** (p - 1.0), x.log() * out)


def _sp_pow(a, b):
    return a**b


# -- arithmetic ---------------------------------------------------------------
_ew("add", 2, np.add, lambda a, b: a + b, lambda out, a, b: (E(out.g, out.g.const(1.0)),) * 2,
    mpmath=lambda a, b: a + b, infix=("+", 10), commutative=True, simplify=_simp_add, ref="linearity")
_ew("sub", 2, np.subtract, lambda a, b: a - b,
    lambda out, a, b: (E(out.g, out.g.const(1.0)), E(out.g, out.g.const(-1.0))),
    mpmath=lambda a, b: a - b, infix=("-", 10), simplify=_simp_sub, ref="linearity")
_ew("mul", 2, np.multiply, lambda a, b: a * b, lambda out, a, b: (b, a),
    mpmath=lambda a, b: a * b, infix=("*", 20), commutative=True, simplify=_simp_mul, ref="product rule")
_ew("div", 2, np.divide, lambda a, b: a / b, lambda out, a, b: (1.0 / b, -out / b),
    mpmath=lambda a, b: a / b, infix=("/", 20), simplify=_simp_div, domain=(_REAL, _ANY_NONZERO),
    ref="quotient rule")
_ew("neg", 1, np.negative, lambda a: -a, lambda out, a: (E(out.g, out.g.const(-1.0)),),
    mpmath=lambda a: -a, infix=("-", 25), simplify=_simp_neg, ref="linearity")
_ew("pow", 2, np.power, _sp_pow, _pow_partials, mpmath=mpmath.power, ufuncs=("numpy.power", "numpy.float_power"),
    infix=("**", 30), simplify=_simp_pow, domain=(_POS, _REAL),
    ref="d/dx x^p = p x^(p-1); d/dp x^p = log(x) x^p")

# -- elementary functions (DLMF ch. 4) ----------------------------------------
_ew("exp", 1, np.exp, sp.exp, lambda out, x: (out,), mpmath=mpmath.exp, ref="DLMF 4.5.1",
    emit=_vecmath_or("exp", "np.exp"), helpers=_vm_helpers("exp"))
_ew("log", 1, np.log, sp.log, lambda out, x: (1.0 / x,), mpmath=mpmath.log, domain=(_POS,), ref="DLMF 4.5.2",
    emit=_vecmath_or("log", "np.log"), helpers=_vm_helpers("log"))
_ew("log1p", 1, np.log1p, log1p, lambda out, x: (1.0 / (1.0 + x),), mpmath=mpmath.log1p, domain=(_POS,),
    emit=_vecmath_or("log1p", "np.log1p"), helpers=_vm_helpers("log1p"),
    ref="DLMF 4.5.2")
_ew("expm1", 1, np.expm1, expm1, lambda out, x: (out + 1.0,), mpmath=mpmath.expm1, ref="DLMF 4.5.1",
    emit=_vecmath_or("expm1", "np.expm1"), helpers=_vm_helpers("expm1"))
def _simp_sqrt(g, args, params, shape):
    """sqrt(a*a) -> |a| (and sqrt(a**2)): equal wherever a*a does not overflow or underflow,
    exact where it does, and differentiable at 0 with abs's convention (0 instead of 0/0)."""
    (a,) = args
    n = g[a]
    if n.op == "mul" and n.args[0] == n.args[1] or n.op == "pow" and g.is_const(n.args[1], 2.0):
        if _same_shape(g, n.args[0], shape):
            return g.apply("abs", n.args[0])
    return None


_ew("sqrt", 1, np.sqrt, sp.sqrt, lambda out, x: (0.5 / out,), mpmath=mpmath.sqrt, domain=(_POS,),
    simplify=_simp_sqrt, kink="sqrt(x*x) is |x| (derivative 0 at 0, as abs)", ref="power rule")
_ew("sin", 1, np.sin, sp.sin, lambda out, x: (x.cos(),), mpmath=mpmath.sin, ref="DLMF 4.20.1",
    emit=_vecmath_or("sin", "np.sin"), helpers=_vm_helpers("sin"))
_ew("cos", 1, np.cos, sp.cos, lambda out, x: (-x.sin(),), mpmath=mpmath.cos, ref="DLMF 4.20.2",
    emit=_vecmath_or("cos", "np.cos"), helpers=_vm_helpers("cos"))
_ew("tan", 1, np.tan, sp.tan, lambda out, x: (1.0 + out * out,), mpmath=mpmath.tan, domain=(_UNIT,),
    ref="DLMF 4.20.3")
_ew("arcsin", 1, np.arcsin, sp.asin, lambda out, x: (1.0 / (1.0 - x * x).sqrt(),), mpmath=mpmath.asin,
    domain=(_UNIT,), ref="DLMF 4.24.1")
_ew("arccos", 1, np.arccos, sp.acos, lambda out, x: (-1.0 / (1.0 - x * x).sqrt(),), mpmath=mpmath.acos,
    domain=(_UNIT,), ref="DLMF 4.24.2")
_ew("arctan", 1, np.arctan, sp.atan, lambda out, x: (1.0 / (1.0 + x * x),), mpmath=mpmath.atan,
    ref="DLMF 4.24.3")
_ew("sinh", 1, np.sinh, sp.sinh, lambda out, x: (x.cosh(),), mpmath=mpmath.sinh, ref="DLMF 4.34.1")
_ew("cosh", 1, np.cosh, sp.cosh, lambda out, x: (x.sinh(),), mpmath=mpmath.cosh, ref="DLMF 4.34.2")
_ew("tanh", 1, np.tanh, sp.tanh, lambda out, x: (1.0 - out * out,), mpmath=mpmath.tanh,
    emit=_vecmath_or("tanh", "np.tanh"), helpers=_vm_helpers("tanh"), ref="DLMF 4.34.3: tanh' = 1 - tanh^2")
_ew("arcsinh", 1, np.arcsinh, sp.asinh, lambda out, x: (1.0 / (x * x + 1.0).sqrt(),), mpmath=mpmath.asinh,
    ref="DLMF 4.38.1")
_ew("erf", 1, npf.erf, sp.erf, lambda out, x: ((2.0 / math.sqrt(math.pi)) * (-(x * x)).exp(),),
    mpmath=mpmath.erf, ufuncs=("scipy.special.erf",), emit=_call("_erf"), helpers=("_erf",), ref="DLMF 7.10.1")
_ew("abs", 1, np.abs, sp.Abs, lambda out, x: (x.sign(),), mpmath=abs, ufuncs=("numpy.absolute", "numpy.fabs"),
    kink="derivative 0 at x = 0", ref="d|x|/dx = sign(x)")
_ew("sign", 1, np.sign, sp.sign, lambda out, x: (None,), mpmath=mpmath.sign,
    kink="derivative 0 everywhere (0 at the jump)", ref="piecewise constant")
_ew("sigmoid", 1, npf.sigmoid, sigmoid, lambda out, x: (out * (-x).sigmoid(),),
    mpmath=lambda x: 1 / (1 + mpmath.exp(-x)), ufuncs=("scipy.special.expit",), emit=_vecmath_or("sigmoid", "_sigmoid"),
    helpers=_vm_helpers("sigmoid", "_sigmoid"), ref="sigma' = sigma (1 - sigma) = sigma(x) sigma(-x) (no cancellation for x >> 1)")
_ew("softplus", 1, npf.softplus, softplus, lambda out, x: (x.sigmoid(),), mpmath=lambda x: mpmath.log1p(mpmath.exp(x)),
    emit=_vecmath_or("softplus", "_softplus"), helpers=_vm_helpers("softplus", "_softplus"),
    ref="Maechler (2012): log1pexp")

# -- binary functions -------------------------------------------------------------
def _tie_split(wins, ties):
    """Partials of a two-way choice: 1 to the winner, 1/2 to each at a tie (JAX's maximum/minimum)."""
    half = ties.where(0.5, 0.0)
    return wins.where(1.0, half), wins.where(0.0, ties.where(0.5, 1.0))


_ew("maximum", 2, np.maximum, sp.Max,
    lambda out, a, b: _tie_split(a.gt(b), a.eq(b)), mpmath=max,
    kink="at a == b the derivative is split, 1/2 to each argument (as JAX)", ref="piecewise")
_ew("minimum", 2, np.minimum, sp.Min,
    lambda out, a, b: _tie_split(a.lt(b), a.eq(b)), mpmath=min,
    kink="at a == b the derivative is split, 1/2 to each argument (as JAX)", ref="piecewise")
_ew("logaddexp", 2, np.logaddexp, logaddexp,
    lambda out, a, b: ((a - b).sigmoid(), (b - a).sigmoid()), mpmath=logaddexp._mp,
    ref="Blanchard, Higham & Higham (2021): d/da log(e^a + e^b) = sigmoid(a - b)")
_ew("bd0", 2, npf.bd0, bd0, lambda out, a, b: ((a / b).log(), 1.0 - a / b), mpmath=bd0._mp,
    domain=(_POS, _POS), emit=_call("_bd0"), helpers=("_bd0",),
    ref="Loader (2000), bd0: d/da = log(a/b), d/db = 1 - a/b")
_ew("hypot", 2, np.hypot, hypot,
    lambda out, a, b: (out.eq(0.0).where(0.0, a / out), out.eq(0.0).where(0.0, b / out)), mpmath=mpmath.hypot,
    kink="derivative (0, 0) at a = b = 0, consistent with abs'(0) = 0 (hypot(x, 0) = |x|); "
         "JAX gives (0.5, 0.5) there", ref="d/da sqrt(a^2+b^2) = a / hypot")
_ew("arctan2", 2, np.arctan2, sp.atan2,
    lambda out, y, x: (x / (x * x + y * y), -y / (x * x + y * y)), mpmath=mpmath.atan2, ref="DLMF 4.24 (atan2)")

# -- comparisons and logic (not differentiable) ------------------------------------
for _name, _np_fn, _sp_fn, _sym, _mp_fn in (
    ("gt", np.greater, sp.StrictGreaterThan, ">", lambda a, b: a > b),
    ("ge", np.greater_equal, sp.GreaterThan, ">=", lambda a, b: a >= b),
    ("lt", np.less, sp.StrictLessThan, "<", lambda a, b: a < b),
    ("le", np.less_equal, sp.LessThan, "<=", lambda a, b: a <= b),
    ("eq", np.equal, sp.Eq, "==", lambda a, b: a == b),
    ("ne", np.not_equal, sp.Ne, "!=", lambda a, b: a != b),
):
    _ew(_name, 2, _np_fn, _sp_fn, mpmath=_mp_fn, infix=(_sym, 5), nondiff=True, infer=_infer_bool)

for _name, _np_fn, _sp_fn, _mp_fn in (("logical_and", np.logical_and, sp.And, lambda a, b: a and b),
                                      ("logical_or", np.logical_or, sp.Or, lambda a, b: a or b),
                                      ("logical_not", np.logical_not, sp.Not, lambda a: not a)):
    _ew(_name, 2 if _name != "logical_not" else 1, _np_fn, _sp_fn, mpmath=_mp_fn, nondiff=True, infer=_infer_bool)


def _infer_where(nodes, params):
    c, a, b = nodes
    if c.kind != "b":
        raise TypeError("the condition of where must be boolean (a comparison)")
    return broadcast_shapes(c.shape, a.shape, b.shape), "f"


def _emit_where(ctx, node, a):
    if node.shape == ():
        return f"({a[1]} if {a[0]} else {a[2]})"
    return f"np.where({a[0]}, {a[1]}, {a[2]})"


def _simp_where(g, args, params, shape):
    c, a, b = args
    if a == b and _same_shape(g, a, shape):
        return a
    if g[c].op == "bconst":
        val = g.consts[c]
        if val.all() or not val.any():
            pick = a if val.all() else b
            return pick if _same_shape(g, pick, shape) else g.apply("broadcast_to", pick, params=(tuple(shape),))
    return None


register(OpDef(
    name="where", infer=_infer_where, numpy=np.where, elementwise=True, numeric=np.where,
    mpmath=lambda c, a, b: a if c else b,
    sympy=lambda c, a, b: sp.Piecewise((a, c), (b, True)),
    partials=lambda out, c, a, b: (None, c.where(1.0, 0.0), c.where(0.0, 1.0)),
    emit=_emit_where, simplify=_simp_where, domain=("bool", _REAL, _REAL),
    kink="only the taken branch is differentiated", ref="piecewise",
))

# -- stop_gradient: identity forward, zero derivative in every mode and order ------------
_ew("stop_gradient", 1, lambda x: x, lambda x: x, lambda out, x: (None,), mpmath=lambda x: x,
    emit=lambda ctx, node, a: a[0], ref="definition (TensorFlow tf.stop_gradient, JAX lax.stop_gradient)")
