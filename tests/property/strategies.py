"""Hypothesis strategies: random programs over symgrad's primitives, and points to test them at.

:func:`programs` builds a :class:`~programs.Program` op by op.  Each step draws an
op (simplest first, so shrinking simplifies) and operands among *all* earlier
float nodes (so intermediate results are reused: the programs are DAGs, not
trees), up to ``max_depth`` op levels deep.  Arguments are kept in each op's
domain by interval arithmetic: an argument whose interval leaves the domain is
wrapped first (``|a| + c``, ``a * a + c``, ``exp(tanh a)``, ``cosh`` for
positivity; ``tanh``, ``sin``, ``arctan``, ``a / (1 + a*a)`` scaled into a
bounded range).  Every argument is kept within +-1e3, so values stay moderate in
float32 too.  Wrappers do not count towards the depth.

Inputs are 1 to ``max_inputs`` scalars or small vectors (``(2,)``, ``(3,)``,
signature such as ``"(3),()->()"``), each with a box ([-2, 2] or [0.1, 4]); the
output is one scalar (a vector result is reduced).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .programs import INF, OPS, Iv, Node, Program, _bshape

DEFAULT_BOUND = 1e3
CONSTS = [0.5, 2.0, 1.0, -1.0, 0.25, 3.0, -0.75, 1.5, -2.5, 0.1]
BOXES = {"sym": Iv(-2.0, 2.0), "pos": Iv(0.1, 4.0)}

# op -> domain of its (every) argument (lo, hi); arguments are also kept within +-DEFAULT_BOUND
UNARY_DOMAIN = {
    "neg": (-DEFAULT_BOUND, DEFAULT_BOUND), "abs": (-DEFAULT_BOUND, DEFAULT_BOUND),
    "sign": (-DEFAULT_BOUND, DEFAULT_BOUND), "square": (-30.0, 30.0),
    "exp": (-20.0, 8.0), "expm1": (-20.0, 8.0), "exp2": (-25.0, 11.0),
    "log": (0.05, INF), "log2": (0.05, INF), "log10": (0.05, INF), "log1p": (-0.8, INF), "sqrt": (0.05, INF),
    "sin": (-100.0, 100.0), "cos": (-100.0, 100.0), "tan": (-1.2, 1.2),
    "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9), "arccosh": (1.1, INF),
    "arctan": (-DEFAULT_BOUND, DEFAULT_BOUND), "arcsinh": (-DEFAULT_BOUND, DEFAULT_BOUND),
    "tanh": (-DEFAULT_BOUND, DEFAULT_BOUND), "sinh": (-8.0, 8.0), "cosh": (-8.0, 8.0),
    "reciprocal": (0.25, INF), "deg2rad": (-DEFAULT_BOUND, DEFAULT_BOUND), "rad2deg": (-10.0, 10.0),
}

# op families, drawn first (repeats weight them); hypothesis shrinks towards the first entries
FAMILIES = ["arith", "unary", "arith", "unary", "where", "kink", "binary", "vector", "unary", "nested", "vector"]
FAMILY_OPS = {
    "arith": ["add", "mul", "sub", "div", "powc", "pow"],
    # a - (b op c) and a / (b op c) with a fresh, single-use inner node, which symgrad's printer
    # inlines: the parenthesisation (no re-association) is then visible in the values
    "nested": ["sub_nested", "div_nested"],
    "binary": ["logaddexp", "hypot", "arctan2", "maximum", "minimum"],
    "kink": ["abs", "maximum", "minimum", "clip", "sign"],
    "where": ["where"],
    "vector": ["sum", "dot", "index", "stack", "mean", "norm", "prod", "slice", "concat", "outer_mv", "bcast"],
}
UNARY_OPS = ["exp", "log", "sin", "tanh", "sqrt", "cos", "neg", "square", "log1p", "expm1", "arctan",
             "arcsinh", "sinh", "cosh", "tan", "arcsin", "arccos", "arctanh", "arccosh", "exp2", "log2",
             "log10", "reciprocal", "deg2rad", "rad2deg"]
POWERS = [2.0, 3.0, 0.5, -1.0, 1.5, -0.5, 2.5, -2.0]
VECTOR_OPS = {"sum", "dot", "index", "mean", "norm", "prod", "slice", "concat", "outer_mv"}


class Builder:
    def __init__(self, draw, input_shapes, boxes, max_depth):
        self.draw, self.max_depth = draw, max_depth
        self.nodes: list[Node] = []
        self.iv: list[Iv] = []
        self.depth: list[int] = []
        self.main: list[int] = []
        for s, b in zip(input_shapes, boxes):
            self._append(Node("input", shape=tuple(s)), BOXES[b], 0)

    def _append(self, node, iv, depth) -> int:
        self.nodes.append(node)
        self.iv.append(iv)
        self.depth.append(depth)
        return len(self.nodes) - 1

    # -- nodes ----------------------------------------------------------------------------
    def const(self, v: float) -> int:
        return self._append(Node("const", params=(float(v),)), Iv(v, v), 0)

    def add(self, op, args, params=(), iv=None, wrapper=False) -> int:
        od = OPS[op]
        shapes = [self.nodes[a].shape for a in args]
        shape = tuple(od.shape(shapes, params)) if od.shape else _bshape(shapes, params)
        if iv is None and od.kind == "f":
            iv = od.iv([self.iv[a] for a in args], params)
        if iv is not None:
            assert np.isfinite(iv.lo) and np.isfinite(iv.hi), (op, params, [self.iv[a] for a in args])
        depth = max((self.depth[a] for a in args), default=0) + (0 if wrapper else 1)
        return self._append(Node(op, tuple(args), tuple(params), shape, od.kind), iv, depth)

    def is_float(self, k) -> bool:
        return self.nodes[k].kind == "f" and self.nodes[k].op != "const"

    def shape(self, k):
        return self.nodes[k].shape

    # -- operand choice ---------------------------------------------------------------------------
    def pick(self, pred=lambda k: True):
        """A float node (not a constant) below the depth limit satisfying ``pred``, or None."""
        cands = [k for k in range(len(self.nodes))
                 if self.is_float(k) and self.depth[k] < self.max_depth and pred(k)]
        if not cands:
            return None
        mode = self.draw(st.integers(0, 2))
        if mode == 1 and self.main and self.main[-1] in cands:
            return self.main[-1]  # chain on the latest result
        if mode == 2:  # a recent node, often used once so far: the printer inlines it into its
            recent = cands[-3:]  # consumer, which exercises parenthesisation (x - (y + z), x / (y * z))
            return recent[self.draw(st.integers(0, len(recent) - 1))]
        return cands[self.draw(st.integers(0, len(cands) - 1))]

    def pick_compatible(self, shape, allow_const=True):
        """A second operand broadcastable against ``shape``: a node, or a constant."""
        if allow_const and self.draw(st.integers(0, 2)) == 2:
            return self.const(self.draw_const())
        k = self.pick(lambda k: self.shape(k) in ((), shape) or shape == ())
        return k if k is not None else self.const(self.draw_const())

    def draw_const(self) -> float:
        if self.draw(st.booleans()):
            return self.draw(st.sampled_from(CONSTS))
        return round(self.draw(st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)), 3)

    # -- domain fitting ---------------------------------------------------------------------------
    def fit(self, a, lo=-DEFAULT_BOUND, hi=DEFAULT_BOUND) -> int:
        """``a``, or ``a`` wrapped so that its interval lies within [lo, hi] (and +-DEFAULT_BOUND)."""
        lo, hi = max(lo, -DEFAULT_BOUND), min(hi, DEFAULT_BOUND)
        if self.iv[a].within(lo, hi):
            return a
        if hi == DEFAULT_BOUND and lo > -DEFAULT_BOUND:  # a lower bound: positivity-type wrappers
            kind = self.draw(st.sampled_from(["abs", "square", "exp", "cosh"]))
            c = lo + self.draw(st.sampled_from([0.25, 0.5, 1.0]))
            if kind == "abs":
                t = self.add("abs", [self.fit(a, -DEFAULT_BOUND / 2, DEFAULT_BOUND / 2)], wrapper=True)
            elif kind == "square":
                b = self.fit(a, -30.0, 30.0)
                t = self.add("mul", [b, b], iv=Iv(0.0, self.iv[b].mag ** 2), wrapper=True)
            elif kind == "exp":
                t = self.add("exp", [self.squash(a)], wrapper=True)
                if lo < 0.3:
                    return t
            else:
                t = self.add("cosh", [self.fit(a, -3.0, 3.0)], wrapper=True)
                if lo < 0.9:
                    return t
            return self.add("add", [t, self.const(c)], wrapper=True)
        s = self.squash(a)
        mid, half = (lo + hi) / 2, min((hi - lo) / 2 * 0.9, 10.0)
        t = s if half == 1.0 else self.add("mul", [self.const(half), s], wrapper=True)
        if mid != 0.0:
            t = self.add("add", [t, self.const(mid)], wrapper=True)
        assert self.iv[t].within(lo, hi), (self.iv[t], lo, hi)
        return t

    def squash(self, a) -> int:
        """``a`` mapped smoothly into [-1, 1]."""
        kind = self.draw(st.sampled_from(["tanh", "sin", "arctan", "rational"]))
        if kind == "tanh":
            return self.add("tanh", [a], wrapper=True)
        if kind == "sin":
            return self.add("sin", [self.fit(a, -100.0, 100.0)], wrapper=True)
        if kind == "arctan":
            t = self.add("arctan", [a], wrapper=True)
            return self.add("mul", [self.const(0.6), t], wrapper=True)
        b = self.fit(a, -30.0, 30.0)
        den = self.add("add", [self.add("mul", [b, b], iv=Iv(0.0, self.iv[b].mag ** 2), wrapper=True),
                               self.const(1.0)], wrapper=True)
        return self.add("div", [b, den], iv=Iv(-0.5, 0.5), wrapper=True)

    def _compatible(self, a, b) -> bool:
        return _compatible(self.shape(a), self.shape(b))

    def nonzero(self, b, margin=0.25) -> int:
        iv = self.iv[b]
        if iv.lo >= margin or iv.hi <= -margin:
            return self.fit(b)
        return self.fit(b, margin, INF)

    # -- one main op ---------------------------------------------------------------------------------
    def step(self, vectors=True) -> int | None:
        fam = self.draw(st.sampled_from(FAMILIES if vectors else [f for f in FAMILIES if f != "vector"]))
        op = self.draw(st.sampled_from(FAMILY_OPS[fam])) if fam != "unary" else "unary"
        has_vec = any(self.is_float(k) and self.shape(k) and self.depth[k] < self.max_depth
                      for k in range(len(self.nodes)))
        if op in VECTOR_OPS and not has_vec:
            op = "stack"
        a = self.pick() if op not in ("stack", "concat", "outer_mv", "dot", "bcast") else None
        if op in ("add", "sub", "mul", "maximum", "minimum", "logaddexp"):
            b = self.pick_compatible(self.shape(a))
            if op in ("maximum", "minimum"):
                b = b if b != a else self.const(self.draw_const())  # not a permanent tie
                alias = self.draw(st.sampled_from(["", "", "fmax" if op == "maximum" else "fmin"]))
                return self.add(op, [self.fit(a), self.fit(b)], (alias,) if alias else ())
            return self.add(op, [self.fit(a), self.fit(b)])
        if op == "div":
            b = self.pick_compatible(self.shape(a))
            if self.draw(st.booleans()):  # constant numerators too
                a, b = b, a
            return self.add("div", [self.fit(a), self.nonzero(b)])
        if op == "sub_nested":
            inner = self.draw(st.sampled_from(["add", "sub", "mul", "div"]))
            b, c = self.pick(), self.pick()
            c = c if self._compatible(b, c) else self.const(self.draw_const())
            if inner in ("add", "sub"):
                args = [self.fit(b, -100.0, 100.0), self.fit(c, -100.0, 100.0)]
            elif inner == "mul":
                args = [self.fit(b, -30.0, 30.0), self.fit(c, -30.0, 30.0)]
            else:
                args = [self.fit(b, -100.0, 100.0), self.nonzero(c)]
            t = self.add(inner, args)
            a = a if self._compatible(a, t) else self.const(self.draw_const())
            return self.add("sub", [self.fit(a), t])
        if op == "div_nested":
            inner = self.draw(st.sampled_from(["mul", "div"]))
            b, c = self.pick(), self.pick()
            c = c if self._compatible(b, c) else self.const(self.draw_const())
            t = self.add(inner, [self.nonzero(self.fit(b, -30.0, 30.0)), self.nonzero(self.fit(c, -30.0, 30.0))])
            a = a if self._compatible(a, t) else self.const(self.draw_const())
            return self.add("div", [self.fit(a), t])
        if op == "unary":
            name = self.draw(st.sampled_from(UNARY_OPS))
            lo, hi = UNARY_DOMAIN[name]
            if name == "reciprocal":
                return self.add(name, [self.nonzero(a)])
            return self.add(name, [self.fit(a, lo, hi)])
        if op in ("abs", "sign"):
            return self.add(op, [self.fit(a)])
        if op == "powc":
            p = self.draw(st.sampled_from(POWERS))
            b = self.fit(a, -30.0, 30.0) if p in (2.0, 3.0) else self.fit(a, 0.1, 100.0)
            return self.add("powc", [b], (p,))
        if op == "pow":
            b = self.pick_compatible(self.shape(a))
            return self.add("pow", [self.fit(a, 0.1, 100.0), self.fit(b, -2.0, 2.0)])
        if op == "hypot":
            b = self.pick_compatible(self.shape(a))
            return self.add("hypot", [self.fit(a), self.nonzero(b, 0.1)])
        if op == "arctan2":
            b = self.pick_compatible(self.shape(a))
            return self.add("arctan2", [self.fit(a), self.fit(b, 0.1, INF)])
        if op == "clip":
            lo = self.draw(st.sampled_from([-1.0, -0.5, 0.0, 0.25]))
            hi = lo + self.draw(st.sampled_from([0.5, 1.0, 2.0]))
            return self.add("clip", [self.fit(a)], (lo, hi))
        if op == "where":
            return self.where(a)
        if op in ("sum", "mean", "norm", "prod"):
            v = self.pick(lambda k: self.shape(k) != ())
            if v is None:
                return None
            n = self.shape(v)[0]
            v = self.fit(v, -4.0, 4.0) if op == "prod" else self.fit(v)
            return self.add(op, [v], (n,))
        if op == "dot":
            u = self.pick(lambda k: self.shape(k) != ())
            w = self.pick(lambda k: self.shape(k) == self.shape(u))
            style = self.draw(st.sampled_from(["dot", "matmul", "inner", "vdot", "einsum"]))
            return self.add("dot", [self.fit(u), self.fit(w)], (style, self.shape(u)[0]))
        if op == "index":
            v = self.pick(lambda k: self.shape(k) != ())
            n = self.shape(v)[0]
            return self.add("index", [v], (self.draw(st.integers(-n, n - 1)),))
        if op == "slice":
            v = self.pick(lambda k: self.shape(k) != () and self.shape(k)[0] >= 2)
            if v is None:
                return None
            sl = self.draw(st.sampled_from([(1, None, None), (None, -1, None), (None, None, -1),
                                            (None, None, 2), (0, 2, None)]))
            return self.add("slice", [v], sl)
        if op == "stack":
            k = self.draw(st.integers(2, 3))
            parts = [self.pick(lambda j: self.shape(j) == ()) for _ in range(k)]
            parts = [p if p is not None else self.const(self.draw_const()) for p in parts]
            return self.add("stack", parts)
        if op == "concat":
            u = self.pick(lambda k: self.shape(k) != ())
            w = self.pick(lambda k: self.shape(k) != () and self.shape(k)[0] + self.shape(u)[0] <= 5)
            if w is None:
                return None
            return self.add("concat", [u, w])
        if op == "outer_mv":
            u = self.pick(lambda k: self.shape(k) != ())
            w = self.pick(lambda k: self.shape(k) != ())
            side = self.draw(st.sampled_from(["left", "right"]))
            k = self.shape(w)[0] if side == "left" else self.shape(u)[0]
            z = self.pick(lambda j: self.shape(j) == (k,))
            if z is None:
                return None
            return self.add("outer_mv", [self.fit(u, -30.0, 30.0), self.fit(w, -30.0, 30.0),
                                         self.fit(z, -30.0, 30.0)], (side, k))
        if op == "bcast":
            s = self.pick(lambda k: self.shape(k) == ())
            if s is None:
                return None
            return self.add("bcast", [s], (self.draw(st.sampled_from([2, 3])),))
        raise AssertionError(op)

    def condition(self, shape_hint):
        a = self.pick()
        b = self.pick_compatible(self.shape(a))
        b = b if b != a else self.const(self.draw_const())  # not a permanent tie
        cmp = self.draw(st.sampled_from(["gt", "lt", "ge", "le"]))
        c = self.add(cmp, [self.fit(a), self.fit(b)])
        logic = self.draw(st.sampled_from(["", "", "not", "and", "or"]))
        if logic == "not":
            c = self.add("logical_not", [c])
        elif logic in ("and", "or"):
            a2 = self.pick(lambda k: self.shape(k) in ((), self.shape(c)) or self.shape(c) == ())
            c2 = self.add(self.draw(st.sampled_from(["gt", "lt"])),
                          [self.fit(a2), self.const(self.draw_const())])
            c = self.add("logical_" + logic, [c, c2])
        return c

    def where(self, a):
        c = self.condition(self.shape(a))
        cs = self.shape(c)
        x = self.pick(lambda k: self.shape(k) in ((), cs) or cs == ())
        ok = lambda k: _compatible(cs, self.shape(x), self.shape(k))  # noqa: E731
        y = self.pick(ok) if self.draw(st.booleans()) else None
        y = y if y is not None else self.const(self.draw_const())
        if self.draw(st.booleans()):
            x, y = y, x
        return self.add("where", [c, self.fit(x), self.fit(y)])

    def reduce(self, out: int) -> int:
        if self.shape(out) == ():
            return out
        n = self.shape(out)[0]
        how = self.draw(st.sampled_from(["sum", "index", "norm", "mean", "prod"]))
        if how == "index":
            return self.add("index", [out], (0,))
        if how == "prod":
            return self.add("prod", [self.fit(out, -4.0, 4.0)], (n,))
        return self.add(how, [self.fit(out)], (n,))

    def finish(self, vector_output=False) -> int:
        """The output: the sum of every main result no later node uses, each reduced to a scalar
        (with ``vector_output``, the last result is kept as a vector when it is one)."""
        used = {a for n in self.nodes for a in n.args}
        dangling = [k for k in self.main if k not in used]
        keep = vector_output and self.shape(dangling[-1]) != ()
        parts = [self.reduce(k) for k in dangling[:-1]] + [dangling[-1] if keep else self.reduce(dangling[-1])]
        out = parts[-1]
        for k in reversed(parts[:-1]):
            out = self.add("add", [self.fit(k), self.fit(out)], wrapper=True)
        return out


def _compatible(*shapes) -> bool:
    vecs = {s for s in shapes if s}
    return len(vecs) <= 1


@st.composite
def programs(draw, max_inputs=4, max_ops=8, max_depth=6, vectors=False, min_ops=1, vector_output=False):
    """A random :class:`Program` with 1..max_inputs inputs and min_ops..max_ops main ops.

    ``vectors=False``: scalar inputs and scalar ops only.  ``vectors=True``: at least one input
    is a vector (length 2 or 3) and the vector ops (sum, dot/@/einsum, indexing, slicing, stack,
    concatenate, outer products, broadcast_to, norm, prod, mean) are drawn too.
    ``vector_output=True``: the output is a vector when the last op's result is one.
    """
    n_in = draw(st.integers(1, max_inputs))
    shapes = [()] * n_in
    if vectors:
        for i in sorted(set(draw(st.lists(st.integers(0, n_in - 1), min_size=1, max_size=n_in)))):
            shapes[i] = (draw(st.sampled_from([2, 3])),)
    boxes = [draw(st.sampled_from(["sym", "pos"])) for _ in range(n_in)]
    b = Builder(draw, shapes, boxes, max_depth)
    n_ops = draw(st.integers(min_ops, max_ops))
    for _ in range(n_ops):
        k = b.step(vectors)
        if k is not None:
            b.main.append(k)
    if not b.main:
        b.main.append(b.add("sin", [b.fit(0)]))
    out = b.finish(vector_output)
    return Program(tuple(shapes), tuple(b.nodes), out, notes=tuple(boxes))


def point_strategy(program: Program):
    """One point in the program's input boxes: a tuple of floats / float arrays."""
    parts = []
    for s, box in zip(program.input_shapes, program.notes):
        iv = BOXES[box]
        fl = st.floats(iv.lo, iv.hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)
        if s == ():
            parts.append(fl)
        else:
            parts.append(st.lists(fl, min_size=s[0], max_size=s[0]).map(np.array))
    return st.tuples(*parts)
