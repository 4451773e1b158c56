"""The double-double region: a small formula evaluated in double-double, rounded once.

``dd_region(*leaves; program)`` computes the straight-line ``program``
(:mod:`symgrad.ir.ddprogram`) of its arguments with about 106 significant bits
(:mod:`symgrad.ir.ddmath`: Dekker 1971; Knuth, TAOCP 4.2.2; Joldes, Muller & Popescu 2017)
and rounds the result once to float64.  The stabiliser puts one where a float64 formula
cannot reach its accuracy target because the region cancels (a function near its root, such
as ``x + exp(x) + 1`` in the derivative of ``x * sigmoid(x)`` at x = -1.2785); see
:mod:`symgrad.stabilize.ddregion`.

Printing: float64 kernels call a helper generated for the program
(``_dd_region_<hash>(...)``, :mod:`symgrad.emit.ddregion`); float32 kernels, which take
their float64 route (:mod:`symgrad.stabilize.widen`) or stay in float32, print the region
as the plain formula it stands for, with each op's own ``emit`` facet (``exp`` for the
``exp_tail`` of a ``ddt`` region), so they compute
exactly what they computed before the region was marked.  The derivative is that of the
formula (the region is the identity on values), built with :func:`symgrad.ir.from_sympy`.
The interpreter tier runs a region as the tape instructions of the same double-double
operations, its elementary functions as interpreter opcodes calling :mod:`symgrad.ir.ddmath`
(:mod:`symgrad.emit.tape_dd`, bit for bit); a region with ``hypot`` has no tape and waits for the
compiled kernel.
"""
from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from ..ddprogram import BASE, BINARY, OP_NAME, fold, helper_name, marker_of, run_many, to_sympy
from ..ops import E, OpDef, REGISTRY, broadcast_shapes, register

NAME = OP_NAME


def _infer(nodes, params):
    for n in nodes:
        if n.kind != "f":
            raise TypeError("a boolean value was used where a float is required")
    return broadcast_shapes(*[n.shape for n in nodes]), "f"


def _numpy(*args_and_program):
    """Reference values: the kernel's double-double evaluation at every element (float64)."""
    *args, program = args_and_program
    arrays = np.broadcast_arrays(*[np.asarray(a, dtype=np.float64) for a in args])
    shape = arrays[0].shape if arrays else ()
    out = run_many(program, [a.reshape(-1) for a in arrays])
    return out.reshape(shape) if shape else np.float64(out[0])


def _sympy(*args_and_program):
    *args, program = args_and_program
    return marker_of(program)(to_sympy(program, list(args)))


def _mpmath(*args_and_program):
    *args, program = args_and_program
    syms = sp.symbols(f"a0:{len(args)}", real=True)
    expr = to_sympy(program, list(syms))
    return sp.lambdify(syms, expr, "mpmath")(*args) if args else mpmath.mpf(float(expr))


def _partials(out: E, *args: E):
    """d region / d leaf_i: the derivative of the formula, as graph nodes (plain float64)."""
    from ..from_sympy import from_sympy  # its class table is built from the full registry

    g = out.g
    program = g[out.id].params[0]
    syms = sp.symbols(f"a0:{len(args)}", real=True)
    expr = to_sympy(program, list(syms))
    leaves = {s: a.id for s, a in zip(syms, args)}
    return tuple(E(g, from_sympy(g, sp.diff(expr, s), leaves)) for s in syms)


def _plain(ctx, program, args: list[str]) -> str:
    """The program as one plain expression in the kernel's dtype (each op's own emit facet)."""
    return fold(program, args, const=lambda hi, lo: ctx.literal(hi), neg=lambda a: f"(-{a})",
                powi=lambda a, n: f"({a} ** {ctx.literal(float(n))})",
                binary=lambda op, a, b: f"({a} {REGISTRY[op].infix[0]} {b})" if REGISTRY[op].infix
                else REGISTRY[op].emit(ctx, _Scalar(op), [a, b]),
                unary=lambda op, a: REGISTRY[BASE[op]].emit(ctx, _Scalar(BASE[op]), [a]))


class _Scalar:
    """The node an op's emit facet sees for one scalar instruction of a program."""

    def __init__(self, op: str):
        self.op, self.shape, self.params, self.args = op, (), (), (0, 1) if op in BINARY else (0,)


def _emit(ctx, node, args):
    program = node.params[0]
    if ctx.dtype == "float64" and getattr(ctx, "double_double", True):
        return f"{helper_name(program)}({', '.join(args)})"
    return _plain(ctx, program, args)


register(OpDef(
    name=NAME, infer=_infer, numpy=_numpy, sympy=_sympy, mpmath=_mpmath, partials=_partials, emit=_emit,
    elementwise=True, domain=("real",),
    ref="the region is the identity on values: the derivative of its formula (sympy.diff)",
))
