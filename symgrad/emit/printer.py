"""Print the body of one kernel: the nodes an output list needs, as Numba code.

Walks nodes in id (topological) order.  A node used once by an elementwise
consumer is inlined into it, so ``log(1 + exp(x))`` prints as one expression;
nodes used more than once become named temporaries (the graph is already
hash-consed, so this *is* common-subexpression elimination).

Array-valued elementwise expressions are emitted as one fused loop nest that
indexes every operand at its broadcast position; Numba compiles such loops
several times faster than NumPy array expressions, they allocate no
intermediate arrays, and a ``where`` inside them evaluates only the taken
branch per element (the conditional expression ``a if c else b``).  Operators
get parentheses by precedence and are never re-associated.
"""
from __future__ import annotations

import linecache
import math
import re
from dataclasses import dataclass, field

from ..ir.graph import Graph, Node
from ..ir.ops import REGISTRY
from . import lowering  # noqa: F401  (installs the printers of the non-elementwise ops)
from .loops import element_loops, index_vars
from .names import NODE_REF, TempNamer, comment_lines, float_literal
from .prelude import vecmath_enabled

ATOM = 100
_INLINE_MAX_DEPTH = 24  # deeper inline expressions get a temporary: printing and Python's parser recurse


def _is_statement(op_name: str) -> bool:
    """The op prints as statements (its ``statement`` facet); its arguments must be names."""
    op = REGISTRY.get(op_name)
    return op is not None and op.statement


@dataclass
class KernelIO:
    """One argument or output of a kernel: identifier, node id, core shape."""

    name: str
    node: int
    shape: tuple[int, ...]


@dataclass
class PrintContext:
    """What op ``emit`` functions may ask: the graph, the dtype, constants, and whether to call
    the vectorisable vecmath helpers (``_vm_exp_f64`` ...) instead of libm (``np.exp``)."""

    graph: Graph
    dtype: str
    const_names: dict[int, str] = field(default_factory=dict)
    vecmath: bool = field(default_factory=vecmath_enabled)
    vecmath_inline: bool = True  # scalar nodes inline vecmath too (else they call ``_vm_*_call``)
    double_double: bool = True  # dd_region nodes call their double-double helper (float64 kernels only;
    # float32 kernels, widened to float64 or not, print the region's plain formula: symgrad.ir.rules.ddregion)

    @property
    def dtype_expr(self) -> str:
        return f"np.{self.dtype}"

    def literal(self, value: float) -> str:
        return float_literal(value, self.dtype)

    def const(self, node: Node) -> str:
        arr = self.graph.consts[node.id]
        if node.op == "bconst":
            return repr(bool(arr.reshape(-1)[0])) if arr.ndim == 0 else self.const_names[node.id]
        if arr.ndim == 0:
            return self.literal(float(arr))
        if node.id not in self.const_names:  # uniform array: no data to store
            return f"np.full({arr.shape!r}, {self.literal(float(arr.reshape(-1)[0]))})"
        return self.const_names[node.id]


def array_constants(g: Graph, outputs: list[int]) -> list[int]:
    """Ids of the non-uniform array constants the outputs need (passed as hidden arguments)."""
    out = []
    for n in g.ancestors(outputs):
        if g[n].op == "bconst" and g[n].shape != ():
            out.append(n)
        elif g[n].op == "const" and g[n].shape != () and g.scalar_value(n) is None:
            out.append(n)
    return out


def _comment_lines(comments, nid, name_of=str) -> list[str]:
    if not comments or nid not in comments:
        return []
    text = _NODE_REF.sub(lambda m: name_of(int(m.group(1))), comments[nid])
    return comment_lines(text)


_NODE_REF = re.compile(re.escape(NODE_REF).replace(re.escape("{}"), r"(\d+)"))


def _wrap(item: tuple[str, int], need: int) -> str:
    s, prec = item
    return s if prec >= need else f"({s})"


class _Body:
    """State of one body being printed."""

    def __init__(self, g: Graph, ctx: PrintContext, names: dict[int, str], comments: dict[int, str]):
        self.g, self.ctx, self.comments = g, ctx, comments
        self.new_temp = TempNamer()  # t0, t1, ...: never a user-derived name
        self.names = dict(names)           # node -> identifier (args, temporaries, outputs)
        self.inline: dict[int, bool] = {}  # node -> rendered inside its consumer
        self.lines: list[str] = []
        self.loop_count = 0
        self.scatter_sums: dict[int, list[int]] = {}  # add chain -> its scatters (see scatter_sums)
        self.group = None  # (file, line) of the statements being printed, "gradient", or None

    # -- rendering an expression tree ------------------------------------------------
    def render(self, nid: int, shape: tuple | None) -> tuple[str, int]:
        """Text of node ``nid``; with ``shape``, as one element of a loop over ``shape``."""
        g = self.g
        node = g[nid]
        if nid in self.names:
            return self._indexed(self.names[nid], node.shape, shape), ATOM
        if node.op in ("const", "bconst"):
            if node.op == "const" and shape is not None and g.scalar_value(nid) is not None:
                s = self.ctx.literal(g.scalar_value(nid))
            else:
                s = self.ctx.const(node)
                if node.shape and s in self.ctx.const_names.values():
                    s = self._indexed(s, node.shape, shape)
            return s, (25 if s.startswith("-") else ATOM)
        op = REGISTRY[node.op]
        if not op.elementwise:  # inlined structural op (scalar-valued, e.g. x[3])
            items = [self.render(a, None) for a in node.args]
            return op.emit(self.ctx, node, [_wrap(it, ATOM) for it in items]), ATOM
        items = [self.render(a, shape) for a in node.args]
        return self._elementwise(node, items, scalar=shape is not None or node.shape == ())

    def _elementwise(self, node: Node, items, scalar: bool) -> tuple[str, int]:
        infix = REGISTRY[node.op].infix
        if infix:
            symbol, prec = infix
            if len(items) == 1:
                return f"-{_wrap(items[0], prec)}", prec
            left_need = prec + 1 if node.op == "pow" else prec
            right_need = prec if node.op == "pow" else prec + 1  # never re-associate floats
            return f"{_wrap(items[0], left_need)} {symbol} {_wrap(items[1], right_need)}", prec
        if node.op == "where" and scalar:  # a nested conditional needs parentheses in every slot
            c, a, b = (_wrap(item, 2) for item in items)
            return f"{a} if {c} else {b}", 1
        if node.op == "stop_gradient":
            return items[0]
        strs = [s for s, _ in items]
        return REGISTRY[node.op].emit(self.ctx, node, strs), ATOM

    @staticmethod
    def _indexed(name: str, own: tuple, loop: tuple | None) -> str:
        if loop is None or not own:
            return name
        offset = len(loop) - len(own)
        idx = ["0" if d == 1 and loop[offset + k] != 1 else f"_i{offset + k}" for k, d in enumerate(own)]
        return f"{name}[{', '.join(idx)}]"

    # -- statements ------------------------------------------------------------------------
    def assign(self, nid: int, target: str, is_output_array: bool = False) -> None:
        """Emit statements computing ``nid`` into ``target`` (a new name or an output array)."""
        node = self.g[nid]
        op = REGISTRY.get(node.op)
        self.source_line(nid)
        self.lines += _comment_lines(self.comments, nid, self.code_name)
        if nid in self.scatter_sums:
            self._scatter_sum(nid, target, is_output_array)
            return
        if op is not None and op.statement:
            items = [_wrap(self.render(a, None), ATOM) for a in node.args]
            body = op.emit(self.ctx, node, items)
            if is_output_array and node.op == "contract":  # write straight into the output array
                body = [line if not line.startswith("{out} = np.zeros(") else
                        f"{target}[...] = {self.ctx.literal(0.0)}"  # outer-product form accumulates
                        for line in body if not line.startswith("{out} = np.empty(")]
            elif is_output_array:
                tmp = self.new_temp()
                self.lines += [line.replace("{out}", tmp) for line in body]
                self.copy(target, tmp, node.shape)
                return
            self.lines += [line.replace("{out}", target) for line in body]
            return
        if op is not None and op.elementwise and node.shape != ():
            self._loop(nid, target, is_output_array)
            return
        text, _ = self.render(nid, None) if nid not in self.names else (self.names[nid], ATOM)
        if is_output_array:
            self.write_output(target, nid, text)
        else:
            self.lines.append(f"{target} = {text}")

    def code_name(self, nid: int) -> str:
        """What the code calls node ``nid`` (for comments): its name, else its printed expression."""
        if nid in self.names:
            return self.names[nid]
        if nid >= len(self.g.nodes):
            return "?"
        if self.g[nid].op == "const" and self.g.scalar_value(nid) is not None:  # np.full((3,), 100.0): 100.0
            return self.ctx.literal(self.g.scalar_value(nid))
        text, prec = self.render(nid, None)
        if not isinstance(text, str):  # a statement-printed op (a gather, a linalg op) not named yet
            return "(an array value)"
        return text if prec >= ATOM else f"({text})"

    def source_line(self, nid: int) -> None:
        """``# line N: <source>`` above the first statement of each group traced from one user line;
        ``# gradient`` above statements the transforms (or the stabiliser) added after such a group."""
        loc = self.g.lines.get(nid)
        if loc is None and self.group is None:  # no primal statement of its own: still cite the user's source
            self.group = "gradient"
            traced = sorted(set(self.g.lines.values()))
            if len(traced) == 1:
                self.lines += comment_lines(f"gradient of {self._cite(traced[0])}")
            elif traced and len({f for f, _ in traced}) == 1:
                self.lines.append(f"# gradient of lines {traced[0][1]}-{traced[-1][1]} of {traced[0][0]}")
            return
        if loc == self.group or (loc is None and self.group == "gradient"):
            return
        self.group = loc if loc is not None else "gradient"
        if loc is None:
            self.lines.append("# gradient")
            return
        self.lines += comment_lines(self._cite(loc))

    @staticmethod
    def _cite(loc) -> str:
        """``line N: <source text>`` (or ``line N of <file>`` when the text is not available)."""
        text = linecache.getline(loc[0], loc[1]).strip()
        return f"line {loc[1]}: {text}" if text else f"line {loc[1]} of {loc[0]}"

    def _scatter_sum(self, nid: int, target: str, is_output_array: bool) -> None:
        """``s1 + s2 + ... + sk`` of scatters into zeros as one array of zeros and ``+=`` per
        scatter, in the chain's order (the same additions on the same operands as the
        element loop over k arrays, without allocating them: a reverse sweep over
        ``p[0], ..., p[n-1]`` would otherwise add n arrays of length n).

        When every scatter writes one scalar to its own element (:func:`distinct_points`: the
        direct sparse Jacobians write each entry once), each element receives exactly one
        addition ``0 + v``, printed as the assignment ``out[i] = v + 0.0`` (the same IEEE sum:
        -0.0 still becomes +0.0); the zeros are skipped when the points cover the array.
        Numba types and lowers an assignment faster than ``+=`` (a load, an in-place add whose
        typing tries and formats failing templates, and a store): the GRI-Mech 3.0 direct
        Jacobian kernel (2453 entries) compiled as a Numba module in 16% less CPU time
        (benchmarks/results/sparse.md; direct kernels now run native code from their tape
        where they lower to one, so this matters for the Numba modules: gradients of
        loop-written functions, and kernels the tape does not lower).
        """
        node = self.g[nid]
        scatters = self.scatter_sums[nid]
        points = distinct_points(self.g, scatters)
        if points is not None and len(points) == math.prod(node.shape):
            if not is_output_array:
                self.lines.append(f"{target} = np.empty({node.shape!r}, dtype={self.ctx.dtype_expr})")
        elif is_output_array:
            self.copy(target, self.ctx.literal(0.0), node.shape, scalar=True)
        else:
            self.lines.append(f"{target} = np.zeros({node.shape!r}, dtype={self.ctx.dtype_expr})")
        for sid in scatters:
            scatter = self.g[sid]
            value = _wrap(self.render(scatter.args[0], None), ATOM)
            lines = REGISTRY["scatter"].emit(self.ctx, scatter, [value])[1:]  # without the zeros line
            head, _, rhs = lines[-1].partition("] = ")
            if points is None:
                lines[-1] = f"{head}] += {rhs}"
            else:
                lines[-1] = f"{head}] = {rhs} + {self.ctx.literal(0.0)}"
            self.lines += _comment_lines(self.comments, sid, self.code_name)
            self.lines += [line.replace("{out}", target) for line in lines]

    def write_output(self, target: str, nid: int, text: str) -> None:
        """Store node ``nid`` (printed as ``text``) into output array ``target``."""
        node = self.g[nid]
        if node.op == "const" and self.g.scalar_value(nid) is not None:
            self.copy(target, self.ctx.literal(self.g.scalar_value(nid)), node.shape, scalar=True)
            return
        if not text.isidentifier():
            tmp = self.new_temp()
            self.lines.append(f"{tmp} = {text}")
            text = tmp
        self.copy(target, text, node.shape, scalar=node.shape == ())

    def copy(self, target: str, source: str, shape: tuple, scalar: bool = False) -> None:
        """Element loop ``target[i...] = source[i...]`` (Numba compiles slice assignment slowly)."""
        loops, pad = element_loops(shape)
        idx = ", ".join(index_vars(len(shape)))
        self.lines += loops + [f"{pad}{target}[{idx}] = {source if scalar else f'{source}[{idx}]'}"]

    def _loop(self, nid: int, target: str, is_output_array: bool) -> None:
        node = self.g[nid]
        shape = node.shape
        dtype = "np.bool_" if node.kind == "b" else self.ctx.dtype_expr
        if not is_output_array:
            self.lines.append(f"{target} = np.empty({shape!r}, dtype={dtype})")
        loops, pad = element_loops(shape)
        self.lines += loops
        items = [self.render(a, shape) for a in node.args]
        text, _ = self._elementwise(node, items, scalar=True)
        idx = ", ".join(index_vars(len(shape)))
        self.lines.append(f"{pad}{target}[{idx}] = {text}")


def print_body(g: Graph, args: list[KernelIO], outputs: list[KernelIO], dtype: str,
               const_names: dict[int, str], comments: dict[int, str] | None = None,
               vecmath_inline: bool = True, double_double: bool = True) -> list[str]:
    """Source lines (unindented) computing ``outputs`` from ``args``.

    Scalar outputs are assigned to their names; array outputs are written into
    the output arrays of the same name.  ``double_double=False`` prints double-double
    regions as their plain formulas (the float32 kernels).
    """
    ctx = PrintContext(g, dtype, const_names, vecmath_inline=vecmath_inline, double_double=double_double)
    comments = {**g.notes, **(comments or {})}
    order = g.ancestors([o.node for o in outputs])
    body = _Body(g, ctx, {a.node: a.name for a in args}, comments)
    uses: dict[int, int] = {}
    consumer: dict[int, int] = {}
    for nid in order:
        for a in g[nid].args:
            uses[a] = uses.get(a, 0) + 1
            consumer[a] = nid
    out_nodes = {o.node for o in outputs}
    first_out = {}
    for o in outputs:
        first_out.setdefault(o.node, o)
    new_temp = body.new_temp
    depth: dict[int, int] = {}  # nesting depth of the expression a node prints as, when inlined
    sums, absorbed = scatter_sums(g, order, uses)
    body.scatter_sums = sums
    for nid in order:
        node = g[nid]
        if nid in body.names or node.op in ("const", "bconst") or nid in absorbed:
            continue
        op = REGISTRY[node.op]
        if nid in out_nodes:
            o = first_out[nid]
            if o.shape == () or (uses.get(nid, 0) == 0 and o.node not in body.names):
                body.assign(nid, o.name, is_output_array=o.shape != ())
                body.names[nid] = o.name
                continue
        if nid in sums:
            name = new_temp()
            body.assign(nid, name)
            body.names[nid] = name
            depth[nid] = 0
            continue
        depth[nid] = 1 + max((depth.get(a, 0) for a in node.args), default=0)
        if depth[nid] < _INLINE_MAX_DEPTH and _can_inline(g, nid, op, uses, consumer, comments):
            continue
        depth[nid] = 0
        name = new_temp()
        body.assign(nid, name)
        body.names[nid] = name
    for o in outputs:  # outputs not yet written (duplicates, inputs, constants, inlined into a consumer)
        if body.names.get(o.node) == o.name:
            continue
        node = g[o.node]
        if o.shape != () and o.node not in body.names and node.op not in ("const", "bconst") \
                and REGISTRY[node.op].elementwise:
            # an array output also used by another node was inlined there: its own loop (printed as one
            # array expression, a vecmath call would get an array: 3.6 * t24 * _vm_cos_f64(t1))
            body.assign(o.node, o.name, is_output_array=True)
            body.names[o.node] = o.name
            continue
        text, _ = body.render(o.node, None)
        if o.shape == ():
            body.lines.append(f"{o.name} = {text}")
        else:
            body.write_output(o.name, o.node, text)
    return body.lines


def scatter_sums(g: Graph, order: list[int], uses: dict[int, int]) -> tuple[dict[int, list[int]], set[int]]:
    """Left-nested sums of two or more single-use scatters, ``((s1 + s2) + s3) + ...`` (either
    operand of each add may be the scatter: the stabiliser rebuilds chains with new node ids, and
    the graph orders a commutative op's operands by id).

    Returns ``({root add: [s1, s2, ...]}, ids printed inside their root)``.  Only chains
    whose every term is a scatter without batch broadcasting qualify (same shape as the
    sum), and every inner add must be used once, so no value is lost by not naming it.
    """
    sums: dict[int, list[int]] = {}
    absorbed: set[int] = set()

    def is_scatter(a: int, shape) -> bool:
        return g[a].op == "scatter" and uses.get(a, 0) == 1 and g[a].shape == shape

    for nid in reversed(order):
        node = g[nid]
        if nid in absorbed or node.op != "add" or node.shape == () or len(node.args) != 2:
            continue
        terms, cur, inner = [], nid, []
        while True:
            left, right = g[cur].args
            if not is_scatter(right, node.shape) and is_scatter(left, node.shape):
                left, right = right, left  # add is commutative: a rebuilt chain may hold its scatter first
            if not is_scatter(right, node.shape):
                break
            terms.append(right)
            if is_scatter(left, node.shape):
                terms.append(left)
                cur = None
                break
            if not (g[left].op == "add" and len(g[left].args) == 2 and uses.get(left, 0) == 1
                    and g[left].shape == node.shape):
                break
            inner.append(left)
            cur = left
        if cur is None and len(terms) >= 2:
            sums[nid] = terms[::-1]
            absorbed.update(terms)
            absorbed.update(inner)
    return sums, absorbed


def distinct_points(g: Graph, scatters: list[int]) -> set | None:
    """The elements written by ``scatters`` if each writes one scalar to one element and no two
    write the same one (a full integer index, a scalar value); otherwise None."""
    points = set()
    for sid in scatters:
        index, shape = g[sid].params
        if g.shape(g[sid].args[0]) != () or len(index) != len(shape):
            return None
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in index):
            return None
        point = tuple(i % n for i, n in zip(index, shape))
        if point in points:
            return None
        points.add(point)
    return points


def _can_inline(g: Graph, nid: int, op, uses, consumer, comments) -> bool:
    """A single-use node is printed inside its consumer when that stays cheap and readable."""
    if uses.get(nid, 0) != 1 or nid in comments or _is_statement(g[nid].op):
        return False
    user = g[consumer[nid]]
    if _is_statement(user.op):
        return False
    if op.elementwise:
        user_op = REGISTRY[user.op]
        # elementwise into elementwise fuses; into structural ops only as a scalar
        return user_op.elementwise or g[nid].shape == ()
    # structural ops: inline scalar-valued ones (x[3], np.sum(t)) into scalar consumers only
    return g[nid].shape == () and user.shape == () and REGISTRY[user.op].elementwise
