"""Lower a kernel to an instruction tape for the interpreter tier (issue 15).

A *tape* is the kernel's computation as a flat list of scalar instructions over one
register file: ``regs[out] = op(regs[a], regs[b], regs[c])``.  One Numba-compiled
interpreter (:mod:`symgrad.emit.interpreter`) runs every tape, so a new program needs no
LLVM compile before its first result; CasADi's SX virtual machine works the same way
(Andersson et al., "CasADi: a software framework for nonlinear optimization and optimal
control", Math. Prog. Comp. 2019, section 4).

The tape computes exactly what the compiled kernel computes, bit for bit:

* elementwise ops run the same code as the kernel, because the interpreter's case for each
  opcode is printed from the op's own ``emit`` facet (:data:`OPCODES`);
* data movement (indexing, reshapes, transposes, broadcasts, concatenation, scatters into
  zeros, gathers) costs no instruction: it only rearranges which register each element is;
* accumulating ops (sums, contractions, scatter-adds, cumulative sums, running max/min) add
  in the order of the loops :mod:`symgrad.emit.lowering` prints for them, starting from the same
  zero, so the rounding is the same.  ``tests/test_tiers.py`` checks the two tiers agree on
  random programs and inputs.

Programs with an op the tape does not lower (the linear-algebra ops, a max-shift over an
array) get no tape; they wait for the compiled kernel, as before.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..ir.graph import Graph
from ..ir.ops import REGISTRY
from ..ir.ddprogram import BASE, OP_NAME as DD_REGION, fold as fold_dd
from ..ir.rules.structural import index_to_python, parse_spec
from . import tape_dd

# Exponents (and bases) for which LLVM rewrites pow with a literal constant operand (pow(x, 2.0)
# becomes x * x, pow(x, 0.5) a square root): the interpreter has one opcode per such literal, so
# that it runs the code the compiled kernel runs.  Other constants go through the generic pow.
POW_EXPONENTS = (2.0, 3.0, 4.0, 0.5, -0.5, -1.0, -2.0, 1.5, 1.0 / 3.0, -1.5, 0.25)
POW_BASES = (2.0, 10.0)

MAX_INSTRUCTIONS = 20_000_000  # a longer tape is not worth building: the kernel is array-level code


def _opcode_names() -> list[str]:
    """Every opcode, the frequent ones first (the interpreter tests them in this order)."""
    first = ["mov", "add", "mul", "sub", "div", "neg", "where", "amax_step", "amin_step", "shift_clamp"]
    names = list(first)
    names += [f"pow_x^{p!r}" for p in POW_EXPONENTS] + [f"pow_{b!r}^x" for b in POW_BASES]
    names += sorted(n for n, op in REGISTRY.items()
                    if op.elementwise and n not in names and n not in ("stop_gradient", DD_REGION))
    names += tape_dd.FUNCTION_OPCODES  # the dd functions of double-double regions, one opcode per part
    return names


OPCODES: list[str] = _opcode_names()
OPCODE = {name: k for k, name in enumerate(OPCODES)}
# elementwise ops whose scalar nodes are one instruction on their arguments' registers as they are
_PLAIN_SCALAR = {name: OPCODE[name] for name in OPCODES if name in REGISTRY and name != "pow"}


class NotLowerable(Exception):
    """The kernel uses an op the tape cannot express (internal: the caller then has no tape)."""


@dataclass
class Tape:
    """A kernel as interpreter input.

    Attributes:
      code: ``(n, 5)`` int32 instructions ``(opcode, out, a, b, c)`` (unused operands 0).
      consts: float64 values of registers ``0 .. len(consts) - 1`` (the other registers start
        as garbage and are written before they are read).
      n_regs: size of the register file.
      in_slots: register of each input element, the kernel's arguments flattened in order.
      out_slots: register of each output element, the outputs flattened in order.
      in_shapes / out_shapes: the kernel's argument and output core shapes.
      widen_float32: the float32 kernel computes in float64 and rounds once (scalar cores).
      float32: the float32 kernel's own tape when its core computes other nodes (a regime split
        kept in one dtype only, :meth:`symgrad.emit.module.KernelDef.outputs_for`) or prints a
        double-double region as its plain formula; None: this tape serves both dtypes.
      double_double: the tape runs a double-double region in double-double (float64 kernels).
    """

    code: np.ndarray
    consts: np.ndarray
    n_regs: int
    in_slots: np.ndarray
    out_slots: np.ndarray
    in_shapes: tuple
    out_shapes: tuple
    widen_float32: bool = False
    float32: "Tape | None" = None
    double_double: bool = False  # a double-double region was lowered (float64 only: see kernel_tape)

    @property
    def size(self) -> int:
        return int(self.code.shape[0])

    def for_dtype(self, dtype: str) -> "Tape":
        """The tape the ``dtype`` kernel runs (``"float64"`` or ``"float32"``)."""
        return self.float32 if dtype == "float32" and self.float32 is not None else self


def kernel_tape(g: Graph, kernel) -> Tape | None:
    """The tape of ``kernel`` (a :class:`~symgrad.emit.module.KernelDef`): its float64 core's, with
    the float32 core's own tape attached when the two cores compute different nodes; None if
    either does not lower (see :func:`build_tape`)."""
    tape = build_tape(g, kernel.args, kernel.outputs_for("float64"), kernel.widen_float32)
    if tape is None or ("float32" not in kernel.dtype_nodes and not tape.double_double):
        return tape
    tape32 = build_tape(g, kernel.args, kernel.outputs_for("float32"), kernel.widen_float32,
                        double_double=False)
    if tape32 is None:
        return None
    tape.float32 = tape32
    return tape


class _Builder:
    """Instructions and registers while lowering.  Constant registers are numbered -1, -2, ...
    and work registers 0, 1, ...; :meth:`finish` puts the constants first."""

    def __init__(self, double_double: bool = True):
        self.double_double = double_double  # dd_region nodes in double-double (else their plain formula)
        self.lowered_dd = False
        self.code: list[tuple[int, int, int, int, int]] = []
        self.const_values: list[float] = []
        self.const_reg: dict[bytes, int] = {}
        self.n_work = 0

    def const(self, value: float) -> int:
        key = np.float64(value).tobytes()  # 0.0 and -0.0 (and NaN payloads) stay distinct
        reg = self.const_reg.get(key)
        if reg is None:
            self.const_values.append(float(value))
            reg = self.const_reg[key] = -len(self.const_values)
        return reg

    def fresh(self, n: int = 1) -> int:
        start = self.n_work
        self.n_work += n
        return start

    def emit(self, opname: str, a: int, b: int = 0, c: int = 0) -> int:
        out = self.fresh()
        self.code.append((OPCODE[opname], out, a, b, c))
        return out

    def finish(self, regs: np.ndarray) -> np.ndarray:
        """Final register ids: constants ``0 .. k-1``, work registers after them."""
        k = len(self.const_values)
        regs = np.asarray(regs, dtype=np.int64)
        return np.where(regs < 0, -regs - 1, regs + k)


def build_tape(g: Graph, args, outputs, widen_float32: bool = False, double_double: bool = True) -> Tape | None:
    """The tape of the kernel computing ``outputs`` from ``args`` (lists of
    :class:`~symgrad.emit.printer.KernelIO`); None if the kernel uses an op the tape does
    not lower or would need more than :data:`MAX_INSTRUCTIONS` instructions.

    ``double_double``: run double-double regions in double-double, as float64 kernels do
    (:mod:`symgrad.emit.tape_dd`); False: as their plain formula, as float32 kernels do."""
    from .printer import scatter_sums

    b = _Builder(double_double)
    order = g.ancestors([o.node for o in outputs])
    uses: dict[int, int] = {}
    for nid in order:
        for a in g[nid].args:
            uses[a] = uses.get(a, 0) + 1
    sums, absorbed = scatter_sums(g, order, uses)  # the printer's += chains, lowered in its order
    regs: dict[int, object] = {}  # node -> register id (scalar node) or ndarray of ids
    in_slots = []
    for a in args:
        size = math.prod(a.shape)
        start = b.fresh(size)
        block = np.arange(start, start + size, dtype=np.int64)
        in_slots.append(block)
        regs[a.node] = start if a.shape == () else block.reshape(a.shape)
    nodes, code = g.nodes, b.code
    try:
        for nid in order:
            if nid in regs or nid in absorbed:
                continue
            node = nodes[nid]
            opcode = _PLAIN_SCALAR.get(node.op)
            if opcode is not None and node.shape == ():  # the common case, inline: one instruction
                out = b.n_work
                b.n_work += 1
                ops = [regs[a] for a in node.args]
                code.append((opcode, out, *ops, *(0,) * (3 - len(ops))))
                regs[nid] = out
                continue
            if nid in sums:
                regs[nid] = _scatter_sum(b, g, node, sums[nid], regs)
            else:
                regs[nid] = _lower(b, g, node, regs)
            if len(b.code) > MAX_INSTRUCTIONS:
                return None
    except (NotLowerable, tape_dd.NotLowerable):
        return None
    in_flat = b.finish(np.concatenate(in_slots)) if in_slots else np.zeros(0, dtype=np.int64)
    outs = [b.finish(np.broadcast_to(np.asarray(regs[o.node], dtype=np.int64), o.shape)).reshape(-1)
            for o in outputs]
    code = np.array(b.code, dtype=np.int64).reshape(-1, 5)
    k = len(b.const_values)
    for col in (1, 2, 3, 4):  # operands and results to final ids (unused operands read register 0)
        code[:, col] = np.where(code[:, col] < 0, -code[:, col] - 1, code[:, col] + k)
    return Tape(code.astype(np.int32), np.array(b.const_values, dtype=np.float64), k + b.n_work,
                in_flat, np.concatenate(outs) if outs else np.zeros(0, dtype=np.int64),
                tuple(tuple(a.shape) for a in args), tuple(tuple(o.shape) for o in outputs), widen_float32,
                double_double=b.lowered_dd)


# -- lowering one node ---------------------------------------------------------------------------
def _arr(r) -> np.ndarray:
    return np.asarray(r, dtype=np.int64)


def _scalar_or_array(arr: np.ndarray):
    return int(arr) if arr.ndim == 0 else arr


def _lower(b: _Builder, g: Graph, node, regs):
    op = node.op
    if op == "const" or op == "bconst":
        vals = np.asarray(g.consts[node.id], dtype=np.float64)
        if vals.ndim == 0:
            return b.const(float(vals))
        return np.array([b.const(v) for v in vals.reshape(-1)], dtype=np.int64).reshape(vals.shape)
    if op == "input":
        raise NotLowerable(f"graph input {node.params[0]!r} is not an argument of the kernel")
    if op == "stop_gradient":
        return regs[node.args[0]]
    if op == DD_REGION:
        return _dd_region(b, g, node, regs)
    opdef = REGISTRY[op]
    if opdef.elementwise and op not in OPCODE:
        raise NotLowerable(op)
    if opdef.elementwise:
        return _elementwise(b, g, node, regs)
    lower = _STRUCTURAL.get(op)
    if lower is None:
        raise NotLowerable(op)
    return lower(b, g, node, [regs[a] for a in node.args])


def _opcode_for(g: Graph, node) -> str:
    if node.op == "pow":
        base, expo = node.args
        value = g.scalar_value(expo)
        if value is not None and value in POW_EXPONENTS:
            return f"pow_x^{value!r}"
        value = g.scalar_value(base)
        if value is not None and value in POW_BASES:
            return f"pow_{value!r}^x"
    return node.op


def _elementwise(b: _Builder, g: Graph, node, regs):
    name = _opcode_for(g, node)
    args = [regs[a] for a in node.args]
    if name.startswith("pow_x^"):
        args = args[:1]
    elif name.startswith("pow_") and name.endswith("^x"):
        args = args[1:]
    if node.shape == ():
        return b.emit(name, *args)
    arrays = np.broadcast_arrays(*[_arr(a) for a in args], np.empty(node.shape, dtype=np.int8))[:-1]
    out = np.empty(node.shape, dtype=np.int64)
    flat = [a.reshape(-1) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1) for a in arrays]
    res = out.reshape(-1)
    for i in range(res.size):  # the compiled kernel's element loop runs in C order too
        res[i] = b.emit(name, *[int(f[i]) for f in flat])
    return out


def _pow_literal(b: _Builder, x: int, n: float) -> int:
    """``x ** n`` for a literal ``n``, as the kernel's ``x ** <literal>`` (see :data:`POW_EXPONENTS`)."""
    if n in POW_EXPONENTS:
        return b.emit(f"pow_x^{n!r}", x)
    return b.emit("pow", x, b.const(n))


def _dd_plain(b: _Builder, program: tuple, args: list[int]) -> int:
    """A double-double region's program as the plain formula float32 kernels print for it
    (:func:`symgrad.ir.rules.ddregion._plain`): one instruction per program instruction."""
    def unary(op, a):
        op = BASE[op]  # exp for the exp_tail of a ddt region, as the kernel prints it
        if op not in OPCODE:
            raise NotLowerable(op)
        return b.emit(op, a)
    return fold_dd(program, args, const=lambda hi, lo: b.const(hi), neg=lambda a: b.emit("neg", a),
                   powi=lambda a, n: _pow_literal(b, a, float(n)), binary=lambda op, a, c: b.emit(op, a, c),
                   unary=unary)


def _dd_region(b: _Builder, g: Graph, node, regs):
    """A ``dd_region`` node, element by element in C order: double-double on a float64 tape
    (:func:`symgrad.emit.tape_dd.lower_dd`), else its plain formula."""
    program = node.params[0]

    def one(arg_regs: list[int]) -> int:
        if b.double_double:
            b.lowered_dd = True
            return tape_dd.lower_dd(program, arg_regs, b.emit, b.const)
        return _dd_plain(b, program, arg_regs)

    args = [regs[a] for a in node.args]
    if node.shape == ():
        return one(args)
    arrays = np.broadcast_arrays(*[_arr(a) for a in args], np.empty(node.shape, dtype=np.int8))[:-1]
    out = np.empty(node.shape, dtype=np.int64)
    flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    res = out.reshape(-1)
    for i in range(res.size):
        res[i] = one([int(f[i]) for f in flat])
    return out


# -- structural ops: data movement (no instruction) ----------------------------------------------
def _getitem(b, g, node, a):
    return _scalar_or_array(np.array(_arr(a[0])[index_to_python(node.params[0])]))


def _reshape(b, g, node, a):
    return _scalar_or_array(np.array(np.broadcast_to(_arr(a[0]), g.shape(node.args[0])).reshape(node.params[0])))


def _broadcast(b, g, node, a):
    return _scalar_or_array(np.array(np.broadcast_to(_arr(a[0]), node.params[0])))


def _transpose(b, g, node, a):
    return np.ascontiguousarray(_arr(a[0]).transpose(node.params[0]))


def _concat(b, g, node, a):
    return np.concatenate([np.broadcast_to(_arr(x), g.shape(n)) for x, n in zip(a, node.args)],
                          axis=node.params[0])


def _scatter(b, g, node, a):
    index, shape = node.params
    out = np.full(shape, b.const(0.0), dtype=np.int64)
    out[index_to_python(index)] = _arr(a[0])
    return out


def _eye(b, g, node, a):
    shape = node.params[0]
    n = shape[0]
    out = np.full((n, n), b.const(0.0), dtype=np.int64)
    out[np.arange(n), np.arange(n)] = b.const(1.0)
    return out.reshape(shape)


def _const_index(g: Graph, nid: int) -> np.ndarray:
    if g[nid].op != "const":
        raise NotLowerable("gather with a computed index")
    return np.array([int(v) for v in np.asarray(g.consts[nid]).reshape(-1)], dtype=np.int64)


def _take(b, g, node, a):
    (axis,) = node.params
    x = np.broadcast_to(_arr(a[0]), g.shape(node.args[0]))
    return np.ascontiguousarray(np.take(x, _const_index(g, node.args[1]), axis=axis))


# -- structural ops that accumulate: the printed loop orders (symgrad/emit/lowering) -----------
def _add_into(b: _Builder, acc: np.ndarray, pos: tuple, value: int) -> None:
    acc[pos] = b.emit("add", int(acc[pos]), int(value))


def _sum(b, g, node, a):
    """``emit.lowering.structural._sum``: zeros (or 0.0), then ``out[kept] += x[idx]`` over x in C order."""
    (axes,) = node.params
    shape = g.shape(node.args[0])
    x = np.broadcast_to(_arr(a[0]), shape)
    acc = np.full(node.shape, b.const(0.0), dtype=np.int64)
    keep = [k for k in range(len(shape)) if k not in axes]
    for idx in np.ndindex(*shape):
        _add_into(b, acc, tuple(idx[k] for k in keep), x[idx])
    return _scalar_or_array(acc)


def _contract(b, g, node, a):
    """``emit.lowering.structural._contract``: the outer-product form (accumulate into zeros) or the dot form
    (a ``0.0`` accumulator per output element), with its loop order."""
    sa, sb, out = parse_spec(node.params[0])
    shape_a, shape_b = g.shape(node.args[0]), g.shape(node.args[1])
    xa, xb = np.broadcast_to(_arr(a[0]), shape_a), np.broadcast_to(_arr(a[1]), shape_b)
    sizes = dict(zip(sa, shape_a))
    sizes.update(zip(sb, shape_b))
    summed = [ch for ch in dict.fromkeys(sa + sb) if ch not in out]
    big = sb if int(np.prod(shape_b)) >= int(np.prod(shape_a)) and sb else sa
    inner = big[-1] if big else None
    zero = b.const(0.0)

    def product(env):
        return b.emit("mul", int(xa[tuple(env[ch] for ch in sa)]), int(xb[tuple(env[ch] for ch in sb)]))

    result = np.full(tuple(sizes[ch] for ch in out), zero, dtype=np.int64)
    if out and summed and inner in out:
        loop = [ch for ch in summed + list(out) if ch != inner] + [inner]
        for combo in itertools.product(*[range(sizes[ch]) for ch in loop]):
            env = dict(zip(loop, combo))
            _add_into(b, result, tuple(env[ch] for ch in out), product(env))
        return _scalar_or_array(result)
    if inner in summed:
        summed = [ch for ch in summed if ch != inner] + [inner]
    for ocombo in itertools.product(*[range(sizes[ch]) for ch in out]):
        env = dict(zip(out, ocombo))
        acc = zero
        for scombo in itertools.product(*[range(sizes[ch]) for ch in summed]):
            env.update(zip(summed, scombo))
            acc = b.emit("add", acc, product(env))
        result[ocombo] = acc
    return _scalar_or_array(result)


def _take_add(b, g, node, a):
    """``emit.lowering.gather._take_add``: zeros, then ``out[.., idx[k], ..] += v[.., k, ..]`` over v in C order."""
    axis, _ = node.params
    vshape = g.shape(node.args[0])
    v = np.broadcast_to(_arr(a[0]), vshape)
    idx = _const_index(g, node.args[1])
    acc = np.full(node.shape, b.const(0.0), dtype=np.int64)
    for pos in np.ndindex(*vshape):
        target = list(pos)
        target[axis] = idx[pos[axis]]
        _add_into(b, acc, tuple(target), v[pos])
    return acc


def _cumsum(b, g, node, a):
    """``emit.lowering.reductions._cumsum``: along the axis each element adds its predecessor."""
    axis, reverse = node.params
    shape = node.shape
    x = np.broadcast_to(_arr(a[0]), shape)
    out = np.empty(shape, dtype=np.int64)
    n = shape[axis]
    for idx in np.ndindex(*shape):
        p = n - 1 - idx[axis] if reverse else idx[axis]
        here = idx[:axis] + (p,) + idx[axis + 1:]
        if idx[axis] == 0:
            out[here] = x[here]
        else:
            before = idx[:axis] + (p + 1 if reverse else p - 1,) + idx[axis + 1:]
            out[here] = b.emit("add", int(out[before]), int(x[here]))
    return out


def _chooser(step: str, start: float, axes_of, absolute: bool = False):
    """``amax``/``amin`` (``emit.lowering.reductions._reduce``) and ``norm_inf`` (``_norm_inf``): a running value replaced unless
    ``v <= acc`` (``>=``); a NaN, once stored, stays."""
    def lower(b, g, node, a):
        shape = g.shape(node.args[0])
        axes = axes_of(node)
        x = np.broadcast_to(_arr(a[0]), shape)
        acc = np.full(node.shape, b.const(start), dtype=np.int64)
        keep = [k for k in range(len(shape)) if k not in axes]
        for idx in np.ndindex(*shape):
            v = int(x[idx])
            if absolute:
                v = b.emit("abs", v)
            pos = tuple(idx[k] for k in keep)
            acc[pos] = b.emit(step, int(acc[pos]), v)
        return _scalar_or_array(acc)
    return lower


def _norm_inf(b, g, node, a):
    axis, kind = node.params
    step, start = ("amax_step", -1.0) if kind == "max" else ("amin_step", math.inf)
    return _chooser(step, start, lambda n: (axis,), absolute=True)(b, g, node, a)


def _shift_max(b, g, node, a):
    if g.shape(node.args[0]) != ():
        raise NotLowerable("shift_max over an array")  # np.max's own loop: left to the compiled tier
    return b.emit("shift_clamp", a[0])


_STRUCTURAL = {
    "getitem": _getitem, "reshape": _reshape, "broadcast_to": _broadcast, "transpose": _transpose,
    "concat": _concat, "scatter": _scatter, "eye": _eye, "take": _take,
    "sum": _sum, "contract": _contract, "take_add": _take_add, "cumsum": _cumsum,
    "amax": _chooser("amax_step", -math.inf, lambda n: n.params[0]),
    "amin": _chooser("amin_step", math.inf, lambda n: n.params[0]),
    "norm_inf": _norm_inf, "shift_max": _shift_max,
}


def _scatter_sum(b: _Builder, g: Graph, node, scatters: list[int], regs):
    """The printer's ``_scatter_sum``: zeros, then ``+=`` each scatter's value at its positions,
    scatter by scatter in the chain's order, each over its value in C order."""
    acc = np.full(node.shape, b.const(0.0), dtype=np.int64)
    positions = np.arange(acc.size).reshape(node.shape)
    flat = acc.reshape(-1)
    add = OPCODE["add"]
    for sid in scatters:
        s = g[sid]
        index, shape = s.params
        if len(index) == len(shape) and all(type(i) is int for i in index):  # one element: x_bar[i] += v
            pos = int(np.ravel_multi_index(tuple(i % d for i, d in zip(index, shape)), shape))
            out = b.fresh()
            b.code.append((add, out, int(flat[pos]), int(regs[s.args[0]]), 0))
            flat[pos] = out
            continue
        where = np.array(positions[index_to_python(index)])
        value = np.broadcast_to(_arr(regs[s.args[0]]), where.shape)
        for pos, v in zip(where.reshape(-1), value.reshape(-1)):
            flat[pos] = b.emit("add", int(flat[pos]), int(v))
    return acc
