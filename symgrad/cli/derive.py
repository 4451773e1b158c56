"""``symgrad grad | hessian | jvp | vjp``: derivatives printed as closed-form formulas.

Each command traces the function, builds the same kernel the compiled API would
(:func:`symgrad.api.build.build_kernel`), runs the numerical stabiliser on it
(:func:`symgrad.api.stabilize_pass.stabilize_kernel`) and prints, per output,
the derived closed form, the stable rewrites with their bits of error before and
after, and the stable form that the generated code computes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .common import CLIError, Progress, add_derive_options, example_args, parse_dims, render, resolve_wrt
from .named import definitions, user_variables

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass
class Rewrite:
    name: str
    change: str
    bits: str  # "float64 10.3 -> 0.1, float32 6.2 -> 0.1"
    regime: str = ""
    cost: str = ""  # "double-double region: 7 dd operations (1 elementary functions)"


@dataclass
class Output:
    name: str        # kernel output name: x_bar, out_dot, d2_out_d_x_d_y, ...
    label: str       # what the reader sees: ∂f/∂x, ...
    derived: object  # SymPy closed form as differentiated
    stable: object = None  # SymPy form after stabilisation (None when unchanged)
    rewrites: list = field(default_factory=list)


@dataclass
class Derivation:
    name: str
    arg_names: list
    function: object          # SymPy expression(s) of the function
    outputs: list
    notes: list               # stabiliser notes (budget, regions not searched)
    inputs: list              # (name, SymPy symbol or array) of the kernel's extra inputs (x_dot, out_bar)
    source: str | None = None
    definitions: list = field(default_factory=list)  # (user variable name, SymPy value) used in the formulas


def _rewrites(kernel, named) -> dict:
    """Output name -> its :class:`Rewrite` s, from the kernel's rewrite records (``named``: the
    user's variables put back into an expression, see :func:`_with_names`)."""
    out: dict[str, list[Rewrite]] = {}
    for name, r in kernel.rewrites:
        bits = ", ".join(f"{dt} {r.bits[dt][0]:.1f} -> {r.bits[dt][2]:.1f}" for dt in ("float64", "float32")
                         if dt in r.bits)
        before, after = (named(e) if hasattr(e, "subs") else e for e in (r.before, r.after))
        out.setdefault(name, []).append(Rewrite(r.name, f"{before} -> {after}", bits, r.regime or "",
                                                 getattr(r, "cost", None) or ""))
    return out


def _with_names(expr, defs, sp):
    """``expr`` with the user's named values (``inner = ...``; ``defs`` in definition order) written
    as their names again, also where the stabiliser expanded or scaled them (``-2*inner``): the
    formulas read in the user's variables, as the function does."""
    if not defs or not hasattr(expr, "subs"):
        return expr
    full, syms = {}, {}
    for name, value in defs:  # each value in terms of the arguments only
        syms[name] = sp.Symbol(name, real=True)
        full[name] = value.subs({syms[n]: full[n] for n in full}) if hasattr(value, "subs") else value
    for name in reversed(list(full)):  # later (larger) values first
        value = full[name]
        if not hasattr(value, "free_symbols") or not value.free_symbols:
            continue
        for k in (1, -1, 2, -2):
            expanded = sp.expand(k * value)
            for form in dict.fromkeys((k * value, expanded, sp.factor_terms(expanded))):
                expr = expr.subs(form, k * syms[name])
    return expr


def _label(kind: str, fname: str, out: str, order: int, tangents=()) -> str:
    if kind == "grad" and order == 1:
        return f"∂{fname}/∂{out.removesuffix('_bar')}"
    if kind in ("hessian", "grad"):
        parts = out.split("_d_")[1:]  # d2_out_d_x_d_y / dN_out_d_x_d_x_d_y
        n = len(parts)
        return f"∂{str(n).translate(SUPERSCRIPT)}{fname}/" + "".join(f"∂{p}" for p in parts)
    if kind == "vjp":
        return f"{out} = (∂{fname}/∂{out.removesuffix('_bar')})ᵀ·out_bar"
    if kind == "jvp":
        return f"{out} = J·({', '.join(tangents)})" if out.endswith("_dot") else out
    return out


def derive(fn, kind: str, *, wrt: str | None = None, signature: str | None = None, dims=None, order: int = 1,
           stabilize: bool = True, simplify: bool = True, show_code: bool = False, budget: float = 2.0,
           progress: Progress | None = None) -> Derivation:
    """Build ``kind`` (grad, hessian, jvp, vjp) of ``fn`` and collect its formulas."""
    import sympy as sp

    from ..api.pipeline import build, build_higher_order
    from ..api.traced import Traced, symbols_for, to_sympy
    from ..ir.interpret import evaluate

    progress = progress or Progress(enabled=False)
    dims = dims or {}
    if order < 1:
        raise CLIError(f"--order must be at least 1, got {order}")
    with progress.stage("trace"):
        traced = Traced(fn, *example_args(fn, signature, dims), signature=signature)
    p, g = traced.program, traced.program.graph
    wrt_idx = resolve_wrt(wrt, p.arg_names, p.name)
    if kind == "grad" and order == 2:
        kind = "hessian"
    if kind in ("grad", "hessian") and (len(p.outputs) != 1 or g.shape(p.outputs[0]) != ()):
        shapes = [g.shape(o) for o in p.outputs]
        raise CLIError(f"{kind} needs one scalar output; {p.name} returns core shape(s) {shapes} "
                       f"(use symgrad jvp / vjp for vector outputs)")
    with progress.stage("differentiate and stabilise" if stabilize else "differentiate"):
        if kind == "grad" and order > 2:
            if any(g.shape(p.inputs[k]) != () for k in wrt_idx):
                raise CLIError(f"--order {order} needs scalar arguments; use --order 1 or 2 for array arguments")
            b = build_higher_order(p, wrt_idx, order, stabilize=budget if stabilize else False)
        else:
            b = build(p, kind, wrt_idx, stabilize=budget if stabilize else False)
    g, kernel = b.program.graph, b.kernel
    derived_nodes = b.derived
    notes = [line.removeprefix("stabilize: ") for line in b.stabilizer_notes]
    if stabilize:
        notes.insert(0, f"{kernel.stabilize_cpu_s:.2f} s CPU spent (budget {budget:g} s)")
    env = {a.node: symbols_for(a.name, a.shape) for a in kernel.args}
    extra = [(a.name, to_sympy(env[a.node])) for a in kernel.args if a.node not in p.inputs]
    # the user's variables (`inner = ...`) stay names in the formulas and are printed once
    named = {n: v for n, v in user_variables(g, p.outputs, p.arg_names).items() if n not in p.outputs}
    names = {n: sp.Symbol(v, real=True) for n, v in named.items()}
    defs = [(v, _simplify(e, sp) if simplify else e) for v, e in definitions(g, named, env, names)]
    rewrites = _rewrites(kernel, lambda e: _with_names(e, defs, sp))

    def closed(nodes, rename=False):
        vals = [to_sympy(v) for v in evaluate(g, nodes, {**env, **names}, mode="sympy")]
        if rename:  # nodes the stabiliser rebuilt: the user's names put back, before and after simplifying
            vals = [_with_names(v, defs, sp) for v in vals]
        if simplify:
            vals = [_simplify(v, sp) for v in vals]
        return [_with_names(v, defs, sp) for v in vals] if rename else vals

    outputs = []
    with progress.stage("differentiate", "closed forms"):
        derived = closed(derived_nodes)
        stable_nodes = [o.node for o in kernel.outputs]
        changed = [i for i, (d, st) in enumerate(zip(derived_nodes, stable_nodes)) if d != st]
        stable = dict(zip(changed, closed([stable_nodes[i] for i in changed], rename=True)))
        for i, o in enumerate(kernel.outputs):
            if kind == "jvp" and not o.name.endswith("_dot"):
                continue  # the primal output; printed as the function
            if kind == "hessian" and i % len(wrt_idx) < i // len(wrt_idx):
                continue  # symmetric: the block (j, i) is the transpose of (i, j)
            outputs.append(Output(o.name, _label(kind, p.name, o.name, order, [n for n, _ in extra]), derived[i],
                                  stable.get(i), rewrites.get(o.name, [])))
    source = None
    if show_code:
        with progress.stage("emit"):
            source = b.source()
    function = traced.expr
    if named:
        function = closed(list(p.outputs))
        function = function[0] if len(function) == 1 else function
    return Derivation(p.name, list(p.arg_names), function, outputs, notes, extra, source, defs)


def _simplify(v, sp):
    def one(e):
        if sp.count_ops(e) > 400:  # simplify is super-linear; big forms print as derived
            return e
        return sp.simplify(e)
    return v.applyfunc(one) if isinstance(v, sp.NDimArray) else one(v)


# -- printing --------------------------------------------------------------------------------------
def _block(label: str, expr, fmt: str) -> str:
    text = render(expr, fmt)
    if "\n" in text or len(label) + len(text) > 78:
        return f"{label} =\n" + "\n".join("    " + line for line in text.splitlines())
    return f"{label} = {text}"


def print_derivation(d: Derivation, fmt: str, kind: str) -> None:
    fun = d.function if not isinstance(d.function, list) else tuple(d.function)
    print(_block(f"{d.name}({', '.join(d.arg_names)})", fun, fmt))
    if d.definitions:
        print("  where")
        for name, value in d.definitions:
            print("    " + _block(name, value, fmt).replace("\n", "\n    "))
    if d.inputs and kind in ("jvp", "vjp"):
        which = "tangents" if kind == "jvp" else "cotangents"
        print(f"{which}: " + ", ".join(n for n, _ in d.inputs))
    for o in d.outputs:
        print()
        print(_block(o.label, o.derived, fmt))
        if o.rewrites:
            print("  stable rewrites:")
            for r in o.rewrites:
                print(f"    {r.name}: {r.change}")
                print(f"      bits of error {r.bits}" + (f"  (regime: {r.regime})" if r.regime else "")
                      + (f"  (cost: {r.cost})" if r.cost else ""))
        if o.stable is not None:
            print(_block("  stable form", o.stable, fmt).replace("\n    ", "\n      "))
    for note in d.notes:
        print(f"\nnote: stabiliser: {note}")
    if d.source is not None:
        print("\n" + d.source, end="")


def run(args, kind: str) -> int:
    from .common import load_function

    fn = load_function(args.target)
    with Progress() as progress:
        d = derive(fn, kind, wrt=args.wrt, signature=args.signature, dims=parse_dims(args.dims),
                   order=getattr(args, "order", 1), stabilize=not args.no_stabilize,
                   simplify=not args.no_simplify, show_code=args.show_code, budget=args.budget,
                   progress=progress)
    print_derivation(d, args.format, kind)
    return 0


DESCRIPTIONS = {
    "grad": ("print a function and its partial derivatives as formulas",
             "Trace FUNC, differentiate it on its expression graph (reverse mode), and print the\n"
             "function and each partial derivative as a simplified closed form.  The numerical\n"
             "stabiliser then looks for accurate floating-point forms; every rewrite it applies\n"
             "is listed with the bits of error (float64, float32) before and after.\n\n"
             "examples:\n"
             "  symgrad grad examples/softplus.py:softplus\n"
             "  symgrad grad model.py:loss --wrt w --signature '(n),(n)->()' --dims n=2\n"
             "  symgrad grad f.py:f --order 3 --format latex"),
    "hessian": ("print the second partial derivatives as formulas",
                "Print every second partial derivative d2 f / dx dy of a scalar function\n"
                "(forward over reverse on the graph) as a closed form, with stable rewrites.\n\n"
                "examples:\n  symgrad hessian examples/softplus.py:lse2"),
    "jvp": ("print the Jacobian-vector product (forward mode) as formulas in the tangents",
            "Print out_dot = J(x) x_dot, the forward-mode linear map, as a formula in the\n"
            "tangent symbols <arg>_dot (one per argument).\n\n"
            "examples:\n  symgrad jvp examples/softplus.py:lse2"),
    "vjp": ("print the vector-Jacobian product (reverse mode) as formulas in the cotangent",
            "Print x_bar = J(x)^T out_bar, the reverse-mode linear map, as a formula in the\n"
            "cotangent symbol out_bar (out0_bar, out1_bar, ... for several outputs).\n\n"
            "examples:\n  symgrad vjp examples/softplus.py:softplus"),
}


def register(sub, parser_class) -> None:
    for kind, (help_text, desc) in DESCRIPTIONS.items():
        p = sub.add_parser(kind, help=help_text, description=desc)
        add_derive_options(p, order=(kind == "grad"))
        p.set_defaults(func=lambda args, kind=kind: run(args, kind))
