"""``symgrad.trace``: the traced program as an object you can read.

It exposes the SymPy expressions of the outputs and of requested derivatives
(inlined from the graph into closed forms for display only; the compiled code
keeps the shared DAG) and the generated source.  The CLI, the docs and the
teaching examples are built on it.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..emit.names import Namespace
from ..ir.interpret import evaluate
from ..trace.pytree import tree_flatten
from ..trace.signature import parse_signature
from ..trace.trace import TracedProgram, trace_default, trace_program
from ..transforms import hessian_nodes, jacobian_nodes, jvp_nodes, vjp_nodes
from ..transforms.higher import gradient_nodes
from .argnums import leaf_ranges, normalize_argnums
from .transformations import scalar_output, transformation
from .pipeline import Build, build


def symbols_for(name: str, shape: tuple) -> np.ndarray:
    """A real SymPy symbol ``name`` (shape ``()``), else an array of ``name[i, ...]`` indexed symbols."""
    if shape == ():
        return np.array(sp.Symbol(name, real=True), dtype=object)
    base = sp.IndexedBase(name, real=True)
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        out[idx] = base[idx if len(idx) > 1 else idx[0]]
    return out


def to_sympy(arr):
    """An object array of SymPy values as one SymPy value (a scalar or an N-dim array)."""
    arr = np.asarray(arr, dtype=object)
    if arr.ndim == 0:
        return arr[()]
    return sp.ImmutableDenseNDimArray(arr.tolist(), arr.shape)


class Traced:
    """A function traced at fixed core shapes.

    Args:
      fun: the Python function.
      *example_args: example arguments (only structure and, with a signature, shapes are used).
      signature: gufunc signature; None means every argument is a scalar core.

    Attributes:
      program: the :class:`~symgrad.trace.trace.TracedProgram` (graph, inputs, outputs).
      symbols: one SymPy symbol (or array of indexed symbols) per input leaf.
    """

    def __init__(self, fun, *example_args, signature: str | None = None):
        self.fun = fun
        self.args = example_args
        self._signature = signature
        leaves, _ = tree_flatten(example_args)
        sig = parse_signature(signature, getattr(fun, "__name__", "function"))
        if sig is None:
            self.program: TracedProgram = trace_default(fun, example_args, [np.shape(l) for l in leaves])
        else:
            cores = sig.bind([np.shape(l) for l in leaves], fun.__name__)[0]
            self.program = trace_program(fun, example_args, [tuple(c) for c in cores])
        g = self.program.graph
        self.symbols = [symbols_for(n, g.shape(i)) for n, i in zip(self.program.arg_names, self.program.inputs)]
        self._env = dict(zip(self.program.inputs, self.symbols))
        self._kernels: dict = {}

    @property
    def signature(self) -> str | None:
        """The gufunc signature the function was traced with.

        With an explicit signature, that text.  With none, the rule inferred while tracing: None for a
        function found elementwise (ufunc broadcasting over scalar cores), else the whole shapes at
        the example arguments written as fixed-size core dimensions, e.g. ``"(3)->()"``.
        """
        if self._signature is not None:
            return self._signature
        return None if self.program.elementwise else self.program.signature_text()

    # -- expressions ---------------------------------------------------------------
    def _sympy(self, nodes, extra_env=None, simplify=False):
        env = dict(self._env)
        env.update(extra_env or {})
        vals = [to_sympy(v) for v in evaluate(self.program.graph, nodes, env, mode="sympy")]
        if simplify:
            vals = [v.applyfunc(sp.simplify) if isinstance(v, sp.NDimArray) else sp.simplify(v) for v in vals]
        return vals

    def _wrt(self, argnums):
        nums, _ = normalize_argnums(argnums, len(self.args), self.program.name)
        return transformation("grad").wrt(len(self.program.inputs), nums, leaf_ranges(self.program.in_tree))

    @property
    def expr(self):
        """SymPy expression of the output (a list if several output leaves)."""
        vals = self._sympy(self.program.outputs)
        return vals[0] if len(vals) == 1 else vals

    def grad_expr(self, argnums=0, simplify: bool = False) -> list:
        """Closed forms of d out / d x for each differentiated input leaf (scalar output)."""
        p = self.program
        xs = [p.inputs[k] for k in self._wrt(argnums)]
        return self._sympy(gradient_nodes(p.graph, self._scalar_out(), xs), simplify=simplify)

    def jacobian_expr(self, argnums=0, simplify: bool = False) -> list:
        p = self.program
        xs = [p.inputs[k] for k in self._wrt(argnums)]
        blocks = jacobian_nodes(p.graph, xs, p.outputs)
        return [self._sympy(row, simplify=simplify) for row in blocks]

    def hessian_expr(self, argnums=0, simplify: bool = False) -> list:
        p = self.program
        xs = [p.inputs[k] for k in self._wrt(argnums)]
        return [self._sympy(row, simplify=simplify) for row in hessian_nodes(p.graph, self._scalar_out(), xs)]

    def jvp_expr(self, simplify: bool = False):
        """(tangent symbols, output tangents) as linear forms in ``<x>_dot``."""
        p, g = self.program, self.program.graph
        ns = Namespace(p.arg_names)  # a parameter named x_dot must not become x's tangent
        names = [ns.fresh(f"{n}_dot") for n in p.arg_names]
        tans = [g.input(n, g.shape(x)) for n, x in zip(names, p.inputs)]
        env = {t: symbols_for(n, g.shape(t)) for n, t in zip(names, tans)}
        dots = jvp_nodes(g, p.inputs, tans, p.outputs)
        dots = [g.instantiate_zeros(d, g.shape(o)) for d, o in zip(dots, p.outputs)]
        return [to_sympy(env[t]) for t in tans], self._sympy(dots, env, simplify)

    def vjp_expr(self, simplify: bool = False):
        """(cotangent symbols, input cotangents) as linear forms in ``out_bar``."""
        p, g = self.program, self.program.graph
        ns = Namespace(p.arg_names)
        names = [ns.fresh("out_bar")] if len(p.outputs) == 1 else [ns.fresh(f"out{i}_bar")
                                                                     for i in range(len(p.outputs))]
        cts = [g.input(n, g.shape(o)) for n, o in zip(names, p.outputs)]
        env = {c: symbols_for(n, g.shape(c)) for n, c in zip(names, cts)}
        bars = vjp_nodes(g, p.outputs, cts, p.inputs)
        bars = [g.instantiate_zeros(b, g.shape(x)) for b, x in zip(bars, p.inputs)]
        return [to_sympy(env[c]) for c in cts], self._sympy(bars, env, simplify)

    def _scalar_out(self) -> int:
        return scalar_output(self.program, "gradient")

    # -- generated code --------------------------------------------------------------
    def build(self, kind: str = "grad", argnums=0, stabilize: bool = True) -> Build:
        """Transformation ``kind`` of this trace, built (:class:`symgrad.api.pipeline.Build`: kernel,
        rewrite records, source); on a copy of the program, so the trace itself stays as traced."""
        key = (kind, argnums if isinstance(argnums, int) else tuple(argnums), stabilize)
        cached = self._kernels.get(key)
        if cached is None:
            p = self.program
            wrt = list(range(len(p.inputs))) if transformation(kind).all_leaves else self._wrt(argnums)
            cached = self._kernels[key] = build(p, kind, wrt, stabilize=stabilize, copy=True)
        return cached

    def source(self, kind: str = "grad", argnums=0, stabilize: bool = True) -> str:
        """The module symgrad generates for transformation ``kind`` of this trace."""
        return self.build(kind, argnums, stabilize).source()

    def rewrites(self, kind: str = "grad", argnums=0) -> "Rewrites":
        """Stable rewrites chosen for ``kind``: a list of ``(output name, RewriteRecord)``.

        Each record gives the expression before and after, bits of error before and after
        in float64 and float32 (mean, max), and the regime (branch condition) if any.  The
        list's ``cpu_s`` is the stabiliser's CPU time for the whole program (seconds, within
        the ``$SYMGRAD_STABILIZE_BUDGET`` budget) and ``notes`` its summary lines.
        """
        b = self.build(kind, argnums, True)
        kernel = b.kernel
        notes = [h.removeprefix("stabilize: ") for h in b.header if h.startswith("stabilize: ")]
        if kernel.stabilize_cpu_s is not None:
            notes.insert(0, f"{kernel.stabilize_cpu_s:.2f} s CPU spent")
        return Rewrites(kernel.rewrites, kernel.stabilize_cpu_s, notes)

    # -- display -------------------------------------------------------------------------
    def __str__(self) -> str:
        args = ", ".join(self.program.arg_names)
        return f"{self.program.name}({args}) = {self.expr}"

    def __repr__(self) -> str:
        sig = self.signature
        how = f"signature {sig!r}" if sig is not None else "elementwise (ufunc broadcasting)"
        return f"<symgrad.Traced {self.program.name}({', '.join(self.program.arg_names)}), {how}>"

    def _repr_latex_(self) -> str:
        """Jupyter: the function and, for a scalar output, its gradient, as LaTeX."""
        name = "\\operatorname{" + self.program.name.replace("_", "\\_") + "}"
        args = ", ".join(sp.latex(sp.Symbol(a)) for a in self.program.arg_names)
        expr = self.expr
        lines = [f"{name}({args}) &= {sp.latex(tuple(expr) if isinstance(expr, list) else expr)}"]
        for arg, d in self._display_grads():
            lines.append(f"\\frac{{\\partial {name}}}{{\\partial {sp.latex(sp.Symbol(arg))}}} &= "
                         f"{sp.latex(d)}")
        if len(lines) == 1:
            return f"$\\displaystyle {lines[0].replace('&=', '=')}$"
        return "$\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}$"

    def _repr_pretty_(self, p, cycle) -> None:
        """IPython terminal: the function and its gradient as 2-D (unicode) formulas."""
        if cycle:
            p.text(f"Traced({self.program.name})")
            return
        args = ", ".join(self.program.arg_names)
        expr = self.expr
        blocks = [(f"{self.program.name}({args})", tuple(expr) if isinstance(expr, list) else expr)]
        blocks += [(f"∂{self.program.name}/∂{name}", d) for name, d in self._display_grads()]
        out = []
        for label, e in blocks:
            art = sp.pretty(e, use_unicode=True).splitlines()
            if len(art) == 1:
                out.append(f"{label} = {art[0]}")
            else:
                out += [f"{label} ="] + ["    " + line for line in art]
        p.text("\n".join(out))

    def _display_grads(self) -> list:
        """(argument name, closed-form gradient) pairs for display; empty unless one scalar output."""
        g = self.program.graph
        if len(self.program.outputs) != 1 or g.shape(self.program.outputs[0]) != ():
            return []
        try:
            grads = self.grad_expr(tuple(range(len(self.args))))
        except Exception:  # display must never raise
            return []
        names = [n for k in range(len(self.args)) for n in [self.program.arg_names[j] for j in self._wrt(k)]]
        return list(zip(names, grads))


class Rewrites(list):
    """A list of ``(output name, RewriteRecord)`` with the stabiliser's CPU seconds for the
    program (``cpu_s``) and its notes (``notes``: budget, regions not searched)."""

    def __init__(self, items, cpu_s: float | None, notes: list[str]):
        super().__init__(items)
        self.cpu_s = cpu_s
        self.notes = notes


def trace(fun, *example_args, signature: str | None = None) -> Traced:
    """Trace ``fun`` at the example arguments' structure (and core shapes, with a signature).

    >>> import numpy as np, symgrad
    >>> t = symgrad.trace(lambda x: np.log(1 + np.exp(x)), 0.0)
    >>> t.expr
    log(exp(x) + 1)
    >>> t.grad_expr()[0]
    exp(x)/(exp(x) + 1)
    """
    return Traced(fun, *example_args, signature=signature)
