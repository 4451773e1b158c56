"""Random test programs: a tiny IR, its NumPy source, and a 50-digit mpmath interpreter.

A :class:`Program` is a list of :class:`Node` s in topological order (the first
``len(input_shapes)`` are the inputs ``x0, x1, ...``).  The same program is

* rendered as Python source calling NumPy (:meth:`Program.source`), which is
  what symgrad traces and compiles, and
* interpreted with mpmath (:func:`mp_eval`) at high precision, the reference.

Every op is defined once in :data:`OPS` with its source template, its mpmath
semantics, its interval map (used by the generator to keep arguments in their
domains) and its shape rule, so the two renderings cannot drift apart.

The mpmath interpreter can also run a *perturbed* program: every node's value
(constants included) is multiplied by a fixed ``1 + delta`` (``|delta| <= u``).
The spread between exact and perturbed results, and between their finite
differences, estimates how strongly rounding errors of size ``u`` are amplified
(a Monte Carlo condition estimate); tolerances are built from it.  Every place
where the program switches branch (``abs``, ``sign``, ``maximum``, ``minimum``,
comparisons under ``where``/``clip``, ``norm`` at 0) records its *switching
value*; checks skip points where a switch is within reach of rounding errors.
"""
from __future__ import annotations

import hashlib
import linecache
import math
from dataclasses import dataclass, field

import mpmath
import numpy as np

INF = math.inf


# -- intervals -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Iv:
    lo: float
    hi: float

    def __post_init__(self):
        assert self.lo <= self.hi, (self.lo, self.hi)

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    def contains0(self, margin=0.0) -> bool:
        return self.lo <= margin and self.hi >= -margin

    def within(self, lo, hi) -> bool:
        return lo <= self.lo and self.hi <= hi


def hull(*ivs) -> Iv:
    return Iv(min(i.lo for i in ivs), max(i.hi for i in ivs))


def _mono(f):
    """Interval map of an increasing function."""
    return lambda ivs, p: Iv(f(ivs[0].lo), f(ivs[0].hi))


def _mono_dec(f):
    return lambda ivs, p: Iv(f(ivs[0].hi), f(ivs[0].lo))


def _iv_mul(a: Iv, b: Iv) -> Iv:
    ps = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return Iv(min(ps), max(ps))


def _iv_div(a: Iv, b: Iv) -> Iv:
    assert not b.contains0(), b
    return _iv_mul(a, Iv(1 / b.hi, 1 / b.lo))


def _iv_abs(a: Iv) -> Iv:
    if a.lo >= 0:
        return a
    if a.hi <= 0:
        return Iv(-a.hi, -a.lo)
    return Iv(0.0, a.mag)


def _iv_sq(a: Iv) -> Iv:
    m = _iv_abs(a)
    return Iv(m.lo * m.lo, m.hi * m.hi)


def _iv_pow(a: Iv, p: float) -> Iv:
    if float(p).is_integer():
        n = int(p)
        if n % 2 == 0:
            m = _iv_abs(a)
            vals = [m.lo ** n, m.hi ** n] if n >= 0 else [m.hi ** n, m.lo ** n]
            return Iv(min(vals), max(vals))
        vals = [a.lo ** n, a.hi ** n]
        return Iv(min(vals), max(vals))
    assert a.lo > 0
    vals = [a.lo ** p, a.hi ** p]
    return Iv(min(vals), max(vals))


def _iv_powv(ivs, p) -> Iv:
    b, e = ivs
    assert b.lo > 0
    vals = [x ** y for x in (b.lo, b.hi) for y in (e.lo, e.hi)]
    return Iv(min(vals), max(vals))


def _iv_cosh(ivs, p) -> Iv:
    m = _iv_abs(ivs[0])
    return Iv(math.cosh(m.lo), math.cosh(m.hi))


def _iv_hypot(ivs, p) -> Iv:
    a, b = _iv_abs(ivs[0]), _iv_abs(ivs[1])
    return Iv(math.hypot(a.lo, b.lo), math.hypot(a.hi, b.hi))


def _iv_lae(ivs, p) -> Iv:
    a, b = ivs
    return Iv(np.logaddexp(a.lo, b.lo), np.logaddexp(a.hi, b.hi))


def _iv_sum(ivs, p, n) -> Iv:
    return Iv(n * ivs[0].lo, n * ivs[0].hi)


# -- mpmath helpers --------------------------------------------------------------------------------

def _is_vec(v) -> bool:
    return isinstance(v, tuple)


def ew(f, *vals):
    """Apply scalar ``f`` elementwise with NumPy broadcasting of scalars against vectors."""
    n = next((len(v) for v in vals if _is_vec(v)), None)
    if n is None:
        return f(*vals)
    return tuple(f(*[v[i] if _is_vec(v) else v for v in vals]) for i in range(n))


def _elems(v):
    return v if _is_vec(v) else (v,)


def _mp_pow(a, p):
    if mpmath.mpf(p) == int(p) and abs(p) < 64:
        return mpmath.power(a, int(p))
    if a <= 0:
        raise ValueError("pow of a non-positive base")
    return mpmath.power(a, p)


def _real(f):
    def g(*a):
        r = f(*a)
        if isinstance(r, mpmath.mpc):
            raise ValueError(f"{f} left the real domain")
        return r
    return g


# -- ops -------------------------------------------------------------------------------------------

@dataclass
class OpDef:
    name: str
    arity: int
    src: object            # (arg source strings, params) -> expression source
    mp: object             # (EvalCtx, arg values, params) -> value
    iv: object = None      # (arg intervals, params) -> Iv
    shape: object = None   # (arg shapes, params) -> shape; default: broadcast of the args
    kind: str = "f"        # "f" float or "b" boolean result


OPS: dict[str, OpDef] = {}


def _op(name, arity, src, mp, iv=None, shape=None, kind="f"):
    OPS[name] = OpDef(name, arity, src, mp, iv, shape, kind)


def _bshape(shapes, p):
    out = ()
    for s in shapes:
        if s:
            assert not out or out == s, shapes
            out = s
    return out


def _unary_np(name, fn, mpf, iv):
    _op(name, 1, lambda a, p, fn=fn: f"np.{fn}({a[0]})", lambda c, v, p, mpf=mpf: ew(_real(mpf), v[0]), iv)


# arithmetic: Python operators (the tracer's dunder methods)
_op("add", 2, lambda a, p: f"{a[0]} + {a[1]}", lambda c, v, p: ew(lambda x, y: x + y, *v),
    lambda i, p: Iv(i[0].lo + i[1].lo, i[0].hi + i[1].hi))
_op("sub", 2, lambda a, p: f"{a[0]} - {a[1]}", lambda c, v, p: ew(lambda x, y: x - y, *v),
    lambda i, p: Iv(i[0].lo - i[1].hi, i[0].hi - i[1].lo))
_op("mul", 2, lambda a, p: f"{a[0]} * {a[1]}", lambda c, v, p: ew(lambda x, y: x * y, *v),
    lambda i, p: _iv_mul(i[0], i[1]))
_op("div", 2, lambda a, p: f"{a[0]} / {a[1]}", lambda c, v, p: ew(lambda x, y: x / y, *v),
    lambda i, p: _iv_div(i[0], i[1]))
_op("neg", 1, lambda a, p: f"-{a[0]}", lambda c, v, p: ew(lambda x: -x, v[0]),
    lambda i, p: Iv(-i[0].hi, -i[0].lo))
# x ** constant (params: the exponent) and x ** y
_op("powc", 1, lambda a, p: f"{a[0]} ** {p[0]!r}", lambda c, v, p: ew(lambda x: _mp_pow(x, p[0]), v[0]),
    lambda i, p: _iv_pow(i[0], p[0]))
_op("pow", 2, lambda a, p: f"np.power({a[0]}, {a[1]})",
    lambda c, v, p: ew(lambda x, y: _mp_pow(x, y), *v), _iv_powv)

_unary_np("exp", "exp", mpmath.exp, _mono(math.exp))
_unary_np("expm1", "expm1", mpmath.expm1, _mono(math.expm1))
_unary_np("exp2", "exp2", lambda x: mpmath.power(2, x), _mono(lambda x: 2.0 ** x))
_unary_np("log", "log", mpmath.log, _mono(math.log))
_unary_np("log1p", "log1p", mpmath.log1p, _mono(math.log1p))
_unary_np("log2", "log2", lambda x: mpmath.log(x, 2), _mono(math.log2))
_unary_np("log10", "log10", mpmath.log10, _mono(math.log10))
_unary_np("sqrt", "sqrt", mpmath.sqrt, _mono(math.sqrt))
_unary_np("sin", "sin", mpmath.sin, lambda i, p: Iv(-1.0, 1.0))
_unary_np("cos", "cos", mpmath.cos, lambda i, p: Iv(-1.0, 1.0))
_unary_np("tan", "tan", mpmath.tan, _mono(math.tan))
_unary_np("arcsin", "arcsin", mpmath.asin, _mono(math.asin))
_unary_np("arccos", "arccos", mpmath.acos, _mono_dec(math.acos))
_unary_np("arctan", "arctan", mpmath.atan, _mono(math.atan))
_unary_np("sinh", "sinh", mpmath.sinh, _mono(math.sinh))
_unary_np("cosh", "cosh", mpmath.cosh, _iv_cosh)
_unary_np("tanh", "tanh", mpmath.tanh, _mono(math.tanh))
_unary_np("arcsinh", "arcsinh", mpmath.asinh, _mono(math.asinh))
_unary_np("arccosh", "arccosh", mpmath.acosh, _mono(math.acosh))
_unary_np("arctanh", "arctanh", mpmath.atanh, _mono(math.atanh))
_unary_np("square", "square", lambda x: x * x, lambda i, p: _iv_sq(i[0]))
_unary_np("reciprocal", "reciprocal", lambda x: 1 / x, lambda i, p: _iv_div(Iv(1.0, 1.0), i[0]))
_unary_np("deg2rad", "deg2rad", mpmath.radians, _mono(math.radians))
_unary_np("rad2deg", "rad2deg", mpmath.degrees, _mono(math.degrees))


def _mp_abs(c, v, p):
    c.switch(v[0])
    return ew(abs, v[0])


def _mp_sign(c, v, p):
    c.switch(v[0])
    return ew(mpmath.sign, v[0])


_op("abs", 1, lambda a, p: f"np.abs({a[0]})", _mp_abs, lambda i, p: _iv_abs(i[0]))
_op("sign", 1, lambda a, p: f"np.sign({a[0]})", _mp_sign, lambda i, p: Iv(-1.0, 1.0))


def _mp_maxmin(pick):
    def f(c, v, p):
        c.switch(ew(lambda x, y: x - y, *v))
        return ew(pick, *v)
    return f


_op("maximum", 2, lambda a, p: f"np.{p[0] if p else 'maximum'}({a[0]}, {a[1]})",
    _mp_maxmin(lambda x, y: x if x >= y else y), lambda i, p: Iv(max(i[0].lo, i[1].lo), max(i[0].hi, i[1].hi)))
_op("minimum", 2, lambda a, p: f"np.{p[0] if p else 'minimum'}({a[0]}, {a[1]})",
    _mp_maxmin(lambda x, y: x if x <= y else y), lambda i, p: Iv(min(i[0].lo, i[1].lo), min(i[0].hi, i[1].hi)))


def _mp_clip(c, v, p):
    lo, hi = p
    c.switch(ew(lambda x: x - lo, v[0]))
    c.switch(ew(lambda x: x - hi, v[0]))
    return ew(lambda x: min(max(x, mpmath.mpf(lo)), mpmath.mpf(hi)), v[0])


_op("clip", 1, lambda a, p: f"np.clip({a[0]}, {p[0]!r}, {p[1]!r})", _mp_clip,
    lambda i, p: Iv(min(max(i[0].lo, p[0]), p[1]), min(max(i[0].hi, p[0]), p[1])))
_op("logaddexp", 2, lambda a, p: f"np.logaddexp({a[0]}, {a[1]})",
    lambda c, v, p: ew(lambda x, y: mpmath.log(mpmath.exp(x) + mpmath.exp(y)), *v), _iv_lae)
_op("hypot", 2, lambda a, p: f"np.hypot({a[0]}, {a[1]})", lambda c, v, p: ew(mpmath.hypot, *v), _iv_hypot)
_op("arctan2", 2, lambda a, p: f"np.arctan2({a[0]}, {a[1]})", lambda c, v, p: ew(mpmath.atan2, *v),
    lambda i, p: Iv(-math.pi / 2, math.pi / 2))  # the generator keeps the second argument positive

# comparisons: boolean nodes, consumed by where / logical ops; they record the switching value
_CMP = {"gt": (">", lambda x, y: x > y), "ge": (">=", lambda x, y: x >= y),
        "lt": ("<", lambda x, y: x < y), "le": ("<=", lambda x, y: x <= y)}
for _n, (_sym, _f) in _CMP.items():
    def _mp_cmp(c, v, p, _f=_f):
        c.switch(ew(lambda x, y: x - y, *v))
        return ew(_f, *v)
    _op(_n, 2, lambda a, p, _sym=_sym: f"{a[0]} {_sym} {a[1]}", _mp_cmp, kind="b")
_op("logical_and", 2, lambda a, p: f"np.logical_and({a[0]}, {a[1]})",
    lambda c, v, p: ew(lambda x, y: x and y, *v), kind="b")
_op("logical_or", 2, lambda a, p: f"np.logical_or({a[0]}, {a[1]})",
    lambda c, v, p: ew(lambda x, y: x or y, *v), kind="b")
_op("logical_not", 1, lambda a, p: f"np.logical_not({a[0]})", lambda c, v, p: ew(lambda x: not x, v[0]), kind="b")
_op("where", 3, lambda a, p: f"np.where({a[0]}, {a[1]}, {a[2]})",
    lambda c, v, p: ew(lambda q, x, y: x if q else y, *v), lambda i, p: hull(i[1], i[2]))


# -- vector ops ---------------------------------------------------------------------------------

def _fsum(xs):
    return mpmath.fsum(xs)


def _mp_norm_value(x):
    return mpmath.sqrt(_fsum(a * a for a in _elems(x)))


def _mp_norm(c, v, p):
    r = _mp_norm_value(v[0])
    c.switch(r)
    return r


def _mp_dot(c, v, p):
    return _fsum(x * y for x, y in zip(v[0], v[1]))


_DOT_SRC = {"dot": "np.dot({0}, {1})", "matmul": "{0} @ {1}", "inner": "np.inner({0}, {1})",
            "vdot": "np.vdot({0}, {1})", "einsum": "np.einsum('i,i->', {0}, {1})"}
_op("sum", 1, lambda a, p: f"np.sum({a[0]})", lambda c, v, p: _fsum(v[0]),
    lambda i, p: _iv_sum(i, p, p[0]), shape=lambda s, p: ())
_op("mean", 1, lambda a, p: f"np.mean({a[0]})", lambda c, v, p: _fsum(v[0]) / len(v[0]),
    lambda i, p: i[0], shape=lambda s, p: ())
_op("prod", 1, lambda a, p: f"np.prod({a[0]})", lambda c, v, p: mpmath.fprod(v[0]),
    lambda i, p: Iv(-(i[0].mag ** p[0]), i[0].mag ** p[0]), shape=lambda s, p: ())
_op("norm", 1, lambda a, p: f"np.linalg.norm({a[0]})", _mp_norm,
    lambda i, p: Iv(0.0, i[0].mag * math.sqrt(p[0])), shape=lambda s, p: ())
_op("dot", 2, lambda a, p: _DOT_SRC[p[0]].format(*a), _mp_dot,
    lambda i, p: _iv_sum([_iv_mul(i[0], i[1])], p, p[1]), shape=lambda s, p: ())


def _index_src(a, p):
    return f"{a[0]}[{p[0]}]"


_op("index", 1, _index_src, lambda c, v, p: v[0][p[0]], lambda i, p: i[0], shape=lambda s, p: ())


def _slice_src(a, p):
    start, stop, step = p
    txt = ":".join("" if x is None else str(x) for x in (start, stop)) + ("" if step is None else f":{step}")
    return f"{a[0]}[{txt}]"


def _slice_len(n, p):
    return len(range(n)[slice(*p)])


_op("slice", 1, _slice_src, lambda c, v, p: tuple(v[0][slice(*p)]), lambda i, p: i[0],
    shape=lambda s, p: (_slice_len(s[0][0], p),))


def _stack_src(a, p):
    return f"np.stack([{', '.join(a)}])"


OPS["stack"] = OpDef("stack", -1, _stack_src, lambda c, v, p: tuple(v), lambda i, p: hull(*i),
                     lambda s, p: (len(s),))
OPS["concat"] = OpDef("concat", -1, lambda a, p: f"np.concatenate([{', '.join(a)}])",
                      lambda c, v, p: tuple(x for t in v for x in t), lambda i, p: hull(*i),
                      lambda s, p: (sum(x[0] for x in s),))


def _mp_outer_mv(c, v, p):
    u, w, z = v
    if p[0] == "left":  # np.outer(u, w) @ z  ->  u * (w . z)
        return tuple(ui * _fsum(wj * zj for wj, zj in zip(w, z)) for ui in u)
    # z @ np.outer(u, w)  ->  (z . u) * w
    s = _fsum(zi * ui for zi, ui in zip(z, u))
    return tuple(s * wj for wj in w)


def _outer_src(a, p):
    return f"np.outer({a[0]}, {a[1]}) @ {a[2]}" if p[0] == "left" else f"{a[2]} @ np.outer({a[0]}, {a[1]})"


def _outer_iv(i, p):
    k = p[1]
    return _iv_mul(i[0], _iv_sum([_iv_mul(i[1], i[2])], p, k))


_op("outer_mv", 3, _outer_src, _mp_outer_mv, _outer_iv,
    shape=lambda s, p: s[0] if p[0] == "left" else s[1])
_op("bcast", 1, lambda a, p: f"np.broadcast_to({a[0]}, ({p[0]},))", lambda c, v, p: (v[0],) * p[0],
    lambda i, p: i[0], shape=lambda s, p: (p[0],))


# -- programs -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Node:
    op: str                   # key of OPS, or "input" / "const"
    args: tuple = ()
    params: tuple = ()
    shape: tuple = ()
    kind: str = "f"


@dataclass
class Program:
    input_shapes: tuple
    nodes: tuple
    output: int
    notes: tuple = ()        # generator notes (for the report), not part of the semantics
    _fn: object = field(default=None, repr=False, compare=False)

    @property
    def n_inputs(self) -> int:
        return len(self.input_shapes)

    def live(self) -> list[int]:
        """Node ids the output depends on, in order."""
        seen, stack = set(), [self.output]
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            stack.extend(self.nodes[k].args)
        return sorted(seen)

    @property
    def signature(self) -> str:
        ins = ",".join("(" + ",".join(str(d) for d in s) + ")" for s in self.input_shapes)
        return f"{ins}->({','.join(str(d) for d in self.out_shape)})"

    @property
    def out_shape(self) -> tuple:
        return self.nodes[self.output].shape

    def body(self) -> list[str]:
        names, lines = {}, []
        for k in self.live():
            n = self.nodes[k]
            if n.op == "input":
                names[k] = f"x{k}"
                continue
            if n.op == "const":
                v = n.params[0]
                names[k] = repr(v) if v >= 0 else f"({v!r})"
                continue
            expr = OPS[n.op].src([names[a] for a in n.args], n.params)
            names[k] = f"t{k}"
            lines.append(f"t{k} = {expr}")
        lines.append(f"return {names[self.output]}")
        return lines

    def source(self, name: str | None = None) -> str:
        name = name or self.name
        args = ", ".join(f"x{k}" for k in range(self.n_inputs))
        return f"def {name}({args}):\n" + "".join(f"    {line}\n" for line in self.body())

    @property
    def name(self) -> str:
        h = hashlib.sha1(("\n".join(self.body()) + repr(self.input_shapes)).encode()).hexdigest()[:10]
        return f"prog_{h}"

    @property
    def fn(self):
        """The program as a Python function calling NumPy (compiled from :meth:`source`)."""
        if self._fn is None:
            src = self.source()
            filename = f"<property-program {self.name}>"
            linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
            ns = {"np": np}
            exec(compile(src, filename, "exec"), ns)
            self._fn = ns[self.name]
        return self._fn

    def example_args(self):
        return tuple(0.0 if s == () else np.zeros(s) for s in self.input_shapes)

    def count_ops(self) -> dict:
        out: dict = {}
        for k in self.live():
            op = self.nodes[k].op
            if op not in ("input", "const"):
                out[op] = out.get(op, 0) + 1
        return out


# -- the mpmath interpreter ----------------------------------------------------------------------------

class EvalCtx:
    """State of one mpmath evaluation: perturbation factors, recorded switching values."""

    def __init__(self, deltas=None):
        self.deltas = deltas      # node id -> tuple of relative perturbations (per element), or None
        self.switches: list = []

    def switch(self, v):
        self.switches.extend(_elems(v))


# Ops whose derivative symgrad computes from the *rounded primal output* by a cancelling
# formula: tanh' = 1 - out^2 and expm1' = out + 1 lose u / |derivative| relative accuracy
# where the derivative is small, which perturbing the output alone does not show (the
# derivative of out * (1 + d) is (1 + d) out').  Their perturbed version adds the absolute
# derivative noise such a formula has, anchored at the evaluation point x0 so that the value
# there is unchanged:
#   tanh:  t (1 + d1) + ((1 + d2)^2 - 1) ((t - t0) - (x - x0)) + 2 d3 (x - x0)^2
#          (first derivative (1 + d1)(1 - t^2) - ((1 + d2)^2 - 1) t^2, i.e. 1 - t^2 from a t
#          rounded by d2; second derivative + 4 d3)
#   expm1: m (1 + d1) + d2 ((m - m0) - (x - x0)) + d3 (|m0| + 1) (x - x0)^2
FORMULA_NOISE = {"tanh", "expm1", "norm"}


def _noisy(op, x, x0, d):
    d1, d2, d3 = d
    if op == "norm":
        # Hessian of |x| is I/|x| - x x^T/|x|^3: each term is ~1/|x| and rounds with it, so the
        # computed curvature has an absolute error ~u/|x| in every direction, even along x where
        # the exact curvature is 0 (JAX's formula too).  Modelled as d3 |x - x0|^2 / |x0|.
        n, n0 = _mp_norm_value(x), _mp_norm_value(x0)
        out = n * (1 + d1)
        if n0 != 0:
            lin = _fsum((a - b) * b for a, b in zip(x, x0)) / n0
            out += d2 * ((n - n0) - lin) + d3 * _fsum((a - b) ** 2 for a, b in zip(x, x0)) / n0
        return out
    if op == "tanh":
        t, t0 = mpmath.tanh(x), mpmath.tanh(x0)
        return t * (1 + d1) + ((1 + d2) ** 2 - 1) * ((t - t0) - (x - x0)) + 2 * d3 * (x - x0) ** 2
    m, m0 = mpmath.expm1(x), mpmath.expm1(x0)
    return m * (1 + d1) + d2 * ((m - m0) - (x - x0)) + d3 * (abs(m0) + 1) * (x - x0) ** 2


def perturbations(program: Program, rng: np.random.Generator, u: float) -> dict:
    """Fixed perturbations ``u * U(-1, 1)`` (three per element) for every non-input float node."""
    out = {}
    for k in program.live():
        n = program.nodes[k]
        if n.op != "input" and n.kind == "f":
            size = int(np.prod(n.shape)) if n.shape else 1
            out[k] = tuple(tuple(mpmath.mpf(float(d)) for d in u * rng.uniform(-1.0, 1.0, 3)) for _ in range(size))
    return out


def mp_eval(program: Program, inputs, deltas=None, anchors=None, nodes_out=None):
    """(value, switching values) of ``program`` at ``inputs`` (mpf / tuples of mpf) at the
    current mpmath precision.  ``deltas`` perturbs every node's result; the first evaluation
    with a given ``anchors`` dict records the arguments of FORMULA_NOISE nodes there (x0)."""
    ctx = EvalCtx(deltas)
    vals = {}
    for k in program.live():
        n = program.nodes[k]
        if n.op == "input":
            v = inputs[k]
        elif n.op == "const":
            v = mpmath.mpf(n.params[0])
        elif deltas is not None and n.op in FORMULA_NOISE:
            x = vals[n.args[0]]
            if anchors is not None and k not in anchors:
                anchors[k] = x
            x0 = anchors[k] if anchors is not None else x
            if n.op == "norm":  # a reduction: one output, one set of deltas
                v = _noisy(n.op, _elems(x), _elems(x0), deltas[k][0])
                OPS[n.op].mp(ctx, [x], n.params)  # records the switching value
            elif _is_vec(x):
                v = tuple(_noisy(n.op, a, b, d) for a, b, d in zip(x, x0, deltas[k]))
            else:
                v = _noisy(n.op, x, x0, deltas[k][0])
            vals[k] = v
            continue
        else:
            v = OPS[n.op].mp(ctx, [vals[a] for a in n.args], n.params)
        if deltas is not None and k in deltas:
            d = deltas[k]
            v = tuple(x * (1 + e[0]) for x, e in zip(v, d)) if _is_vec(v) else v * (1 + d[0][0])
        vals[k] = v
    if nodes_out is not None:
        nodes_out.update(vals)
    return vals[program.output], ctx.switches


def to_mp(x):
    """A float or 1-d array as mpf / tuple of mpf (exactly)."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0:
        return mpmath.mpf(float(a))
    return tuple(mpmath.mpf(float(v)) for v in a)
