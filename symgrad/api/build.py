"""Turn a traced program plus a transformation into kernel definitions.

``build_kernel`` is the single place where each public transformation is
mapped onto graph transforms and kernel inputs/outputs:

=============  =========================================  =============================
kind           kernel inputs                               kernel outputs
=============  =========================================  =============================
jit            primals                                     outputs
grad           primals                                     x_bar for the argnums leaves
value_and_grad primals                                     output, then x_bar
vjp            primals, out_bar per output                 x_bar for every primal leaf
jvp            primals, x_dot per primal leaf              outputs, then out_dot
jacobian       primals                                     d_out_d_x per (output, argnums leaf)
hessian        primals                                     d2_out_d_x_d_y per pair of leaves
hvp            primals, x_dot per argnums leaf             hvp per argnums leaf
=============  =========================================  =============================
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..emit.module import KernelDef
from ..emit.names import Namespace, kernel_names
from ..emit.printer import KernelIO
from ..errors import SignatureError, format_error
from ..trace.trace import TracedProgram
from ..transforms import hessian_nodes, hvp_nodes, jacobian_nodes, jvp_nodes, vjp_nodes
from ..transforms.higher import gradient_nodes

KINDS = ("jit", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "hvp")


@dataclass
class BuiltKernel:
    kernel: KernelDef
    wrt: list[int]  # positions (in program.inputs) of the differentiated leaves


def _scalar_output(p: TracedProgram, kind: str) -> int:
    if len(p.outputs) != 1 or p.graph.shape(p.outputs[0]) != ():
        shapes = [p.graph.shape(o) for o in p.outputs]
        raise SignatureError(format_error(
            f"{kind} needs a function with one scalar core output; {p.name} returns core shape(s) {shapes}",
            "a gradient is defined for a real-valued (scalar) function",
            "reduce the output (np.sum), or use symgrad.jacobian / symgrad.vjp for vector outputs"))
    return p.outputs[0]


def _out_names(p: TracedProgram, ns: Namespace) -> list[str]:
    return [ns.fresh("out")] if len(p.outputs) == 1 else [ns.fresh(f"out{i}") for i in range(len(p.outputs))]


def build_kernel(p: TracedProgram, kind: str, wrt: list[int], parallel: bool = False) -> BuiltKernel:
    """Append the derivative nodes for ``kind`` to ``p.graph``; describe the kernel.

    Args:
      p: the traced program (its graph grows).
      kind: one of :data:`KINDS`.
      wrt: indices into ``p.inputs`` of the leaves to differentiate.
    """
    g = p.graph
    kname = f"{p.name}_{kind}"
    # every name of the kernel: the user's (made unique and safe by the tracer; renamed here only
    # if one equals a function of this kernel, e.g. a parameter `f_grad_f64` of f), then derived ones
    ns = Namespace(kernel_names(kname))
    arg_names = [ns.fresh(n) for n in p.arg_names]
    ins = [KernelIO(n, i, g.shape(i)) for n, i in zip(arg_names, p.inputs)]
    xs = [p.inputs[k] for k in wrt]
    xnames = [arg_names[k] for k in wrt]
    outs: list[KernelIO] = []
    onames = _out_names(p, ns)

    def new_input(base: str, shape) -> tuple[str, int]:
        """A new kernel argument (cotangent or tangent).  Its name differs from every input of
        ``p`` (all in ``ns``), so it is a new graph node, never the user's ``x_bar`` argument."""
        name = ns.fresh(base)
        nid = g.input(name, shape)
        assert nid not in p.inputs, name
        return name, nid
    if kind == "jit":
        outs = [KernelIO(n, o, g.shape(o)) for n, o in zip(onames, p.outputs)]
        doc = f"{p.name}({', '.join(p.arg_names)})"
    elif kind in ("grad", "value_and_grad"):
        y = _scalar_output(p, kind)
        grads = gradient_nodes(g, y, xs)
        outs = [KernelIO(onames[0], y, ())] if kind == "value_and_grad" else []
        outs += [KernelIO(ns.fresh(f"{n}_bar"), gid, g.shape(x)) for n, gid, x in zip(xnames, grads, xs)]
        doc = f"Gradient of {p.name} w.r.t. ({', '.join(xnames)})"
    elif kind == "vjp":
        ct_ins = [new_input(f"{n}_bar", g.shape(o)) for n, o in zip(onames, p.outputs)]
        cts = [c for _, c in ct_ins]
        ins += [KernelIO(n, c, g.shape(c)) for n, c in ct_ins]
        bars = vjp_nodes(g, p.outputs, cts, xs)
        outs = [KernelIO(ns.fresh(f"{n}_bar"), _zero(g, b, x), g.shape(x)) for n, b, x in zip(xnames, bars, xs)]
        doc = (f"VJP of {p.name}: cotangents ({', '.join(n for n, _ in ct_ins)}) -> "
               f"({', '.join(o.name for o in outs)})")
    elif kind == "jvp":
        tan_ins = [new_input(f"{n}_dot", g.shape(x)) for n, x in zip(xnames, xs)]
        tans = [t for _, t in tan_ins]
        ins += [KernelIO(n, t, g.shape(t)) for n, t in tan_ins]
        dots = jvp_nodes(g, xs, tans, p.outputs)
        outs = [KernelIO(n, o, g.shape(o)) for n, o in zip(onames, p.outputs)]
        outs += [KernelIO(ns.fresh(f"{n}_dot"), _zero(g, d, o), g.shape(o)) for n, d, o in zip(onames, dots, p.outputs)]
        doc = f"JVP of {p.name}: tangents ({', '.join(n for n, _ in tan_ins)}) -> outputs and their tangents"
    elif kind == "jacobian":
        blocks = jacobian_nodes(g, xs, p.outputs)
        for on, row, o in zip(onames, blocks, p.outputs):
            for xn, j, x in zip(xnames, row, xs):
                outs.append(KernelIO(ns.fresh(f"d_{on}_d_{xn}"), j, g.shape(o) + g.shape(x)))
        doc = f"Jacobian of {p.name} w.r.t. ({', '.join(xnames)})"
    elif kind == "hessian":
        y = _scalar_output(p, kind)
        blocks = hessian_nodes(g, y, xs)
        for an, row, a in zip(xnames, blocks, xs):
            for bn, h, b in zip(xnames, row, xs):
                outs.append(KernelIO(ns.fresh(f"d2_out_d_{an}_d_{bn}"), h, g.shape(a) + g.shape(b)))
        doc = f"Hessian of {p.name} w.r.t. ({', '.join(xnames)})"
    elif kind == "hvp":
        y = _scalar_output(p, kind)
        tan_ins = [new_input(f"{n}_dot", g.shape(x)) for n, x in zip(xnames, xs)]
        tans = [t for _, t in tan_ins]
        ins += [KernelIO(n, t, g.shape(t)) for n, t in tan_ins]
        hv = hvp_nodes(g, y, xs, tans)
        outs = [KernelIO(ns.fresh(f"hvp_{n}"), h, g.shape(x)) for n, h, x in zip(xnames, hv, xs)]
        doc = f"Hessian-vector product of {p.name} w.r.t. ({', '.join(xnames)})"
    else:
        raise ValueError(f"unknown transformation {kind!r}; expected one of {KINDS}")
    return BuiltKernel(KernelDef(kname, doc, ins, outs, parallel=parallel), list(wrt))


def _zero(g, nid, like):
    """``nid``, or a zero constant shaped like node ``like`` when the derivative is identically zero."""
    return g.const(np.zeros(g.shape(like))) if nid is None else nid
