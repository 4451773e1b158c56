"""Step-by-step differentiation, for teaching: ``symgrad.explain(f, *point)``.

Reverse mode is the loop of a small autodiff engine (cf. micrograd's
``backward`` and the seed article on backprop for a graph engine), run on the
traced graph: visit nodes in reverse topological order; every consumer ``c`` of
a node ``t`` sends back ``c_bar * dc/dt``, reduced to ``t``'s shape (a sum over
broadcast axes; ``G Bᵀ`` and ``Aᵀ G`` for a matrix product ``A B``), and
``t_bar`` is the sum of what arrives.  Forward mode pushes tangents the other
way: ``t_dot = sum_i dt/da_i * a_i_dot``.  Both are the compiled transforms' own passes
(:func:`~symgrad.transforms.vjp.vjp_nodes`, :func:`~symgrad.transforms.jvp.jvp_nodes`), narrated
through their ``on_step`` callbacks and evaluated with NumPy.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..ir.interpret import evaluate, sympy_number
from ..ir.ops import REGISTRY
from ..emit.lowering.structural import index_to_source
from ..ir.rules.structural import parse_spec
from ..transforms import jvp_nodes, vjp_nodes
from ..trace.pytree import tree_flatten
from .explanation import AdjointStep, Contribution, Explanation, NodeStep, TangentStep
from .traced import Traced

__all__ = ["explain", "Explanation"]


def explain(fun, *args, signature: str | None = None, mode: str = "reverse", tangents=None) -> Explanation:
    """Forward pass and backward (or forward-mode) pass of ``fun`` at ``args``, node by node.

    Args:
      fun: a traceable function with one scalar core output (reverse mode) or one output
        of any core shape (forward mode).
      *args: the point: numbers or arrays (pytrees allowed) matching ``signature``.
      signature: gufunc signature for array arguments, e.g. ``"(n)->()"``.
      mode: ``"reverse"`` (adjoints, backpropagation) or ``"forward"`` (tangents).
      tangents: forward mode only: the seed direction, shaped like ``args``; default 1 for
        (every element of) the first argument and 0 for the others.
    Returns:
      An :class:`~symgrad.api.explanation.Explanation`; ``print`` it for the text that
      ``symgrad explain`` shows, ``.to_dot()`` for Graphviz, or read its records
      (``.forward``, ``.backward``, ``.tangents``, ``.gradient``).
    Raises:
      ValueError: unknown ``mode``, or ``tangents`` that do not match ``args``.
      TraceError / SignatureError: as for :func:`symgrad.trace`.

    >>> import numpy as np, symgrad
    >>> e = symgrad.explain(lambda x, y, z: z * (x + y), -2.0, 5.0, -4.0)
    >>> {k: float(v) for k, v in e.gradient.items()}
    {'x': -4.0, 'y': -4.0, 'z': 3.0}
    >>> print(e)  # doctest: +ELLIPSIS
    forward pass of <lambda>:
    ...
    """
    if mode not in ("reverse", "forward"):
        raise ValueError(f"explain: mode must be 'reverse' or 'forward', got {mode!r}")
    t = Traced(fun, *args, signature=signature)
    p, g = t.program, t.program.graph
    if mode == "reverse" or len(p.outputs) != 1:
        out = t._scalar_out()
    else:
        out = p.outputs[0]
    order = [n for n in g.ancestors([out]) if g[n].op not in ("const", "bconst", "eye")]
    names = dict(zip(p.inputs, p.arg_names))
    for k, nid in enumerate(n for n in order if n not in names):
        names[nid] = f"t{k}"
    env = {i: np.asarray(a, dtype=float) for i, a in zip(p.inputs, tree_flatten(args)[0])}
    values = dict(zip(order, evaluate(g, order, env)))
    ref = _Refs(g, names)
    forward = [NodeStep(names[n], g[n].op, ref.formula(n), tuple(ref.name(a) for a in g[n].args),
                        g.shape(n), values[n]) for n in order]
    fname = getattr(fun, "__name__", type(fun).__name__)
    result = Explanation(fname, mode, names[out], forward)
    if mode == "reverse":
        _reverse(g, p, out, order, ref, env, result)
    else:
        _forward(g, p, out, order, ref, env, _seed(p, args, tangents), result)
    return result


class _Refs:
    """Display names and formulas of graph nodes."""

    def __init__(self, g, names):
        self.g, self.names = g, names
        self.syms = {nid: sp.Symbol(n) for nid, n in names.items()}

    def name(self, nid) -> str:
        if nid in self.names:
            return self.names[nid]
        arr = self.g.consts.get(nid)
        return str(sympy_number(float(arr))) if arr is not None and arr.ndim == 0 else f"c{nid}"

    def sym(self, nid):
        return self.syms.get(nid) or sp.Symbol(self.name(nid))

    def formula(self, nid, arg_names=None) -> str:
        """``nid``'s formula in its operands' names (or in ``arg_names`` when given)."""
        node = self.g[nid]
        op = REGISTRY[node.op]
        a = list(arg_names) if arg_names is not None else [self.name(x) for x in node.args]
        if op.elementwise and op.sympy is not None:
            with sp.evaluate(False):  # keep x*x as written, not x**2
                return str(op.sympy(*(sp.Symbol(s) for s in a)))
        return structural_formula(self.g, node, a)

    def partial_text(self, pe_id) -> str:
        env = {n: np.array(s, dtype=object) for n, s in self.syms.items()}
        try:
            return str(evaluate(self.g, [pe_id], env, mode="sympy")[0][()])
        except (IndexError, TypeError, ValueError):
            return "(local partial)"


def structural_formula(g, node, a: list[str]) -> str:
    """NumPy-like text of an array primitive applied to operand names ``a``."""
    op, prm = node.op, node.params
    if op == "sum":
        full = tuple(range(len(g.shape(node.args[0]))))
        return f"sum({a[0]})" if tuple(prm[0]) == full else f"sum({a[0]}, axis={tuple(prm[0])})"
    if op == "contract":
        return _contract_formula(prm[0], a)
    if op == "getitem":
        return f"{a[0]}[{index_to_source(prm[0])}]"
    if op in ("reshape", "broadcast_to"):
        return f"{op}({a[0]}, {prm[0]})"
    if op == "transpose":
        return f"transpose({a[0]}, {prm[0]})"
    if op == "concat":
        return f"concatenate([{', '.join(a)}], axis={prm[0]})"
    if op == "custom_gradient":
        return f"{a[0]}  [custom_gradient rule]"
    return f"{op}({', '.join(a)})"


def _contract_formula(spec: str, a: list[str]) -> str:
    x, y, out = parse_spec(spec)
    matmul = len(x) == 2 and len(y) == 2 and x[1] == y[0] and out == x[0] + y[1]
    matvec = len(x) == 2 and y == x[1] and out == x[0]
    vecmat = len(y) == 2 and x == y[0] and out == y[1]
    if matmul or matvec or vecmat or (x == y and len(x) == 1 and out == ""):
        return f"{a[0]} @ {a[1]}"
    if not set(x) & set(y) and out == x + y:
        return f"outer({a[0]}, {a[1]})"
    return f"einsum('{spec}', {a[0]}, {a[1]})"


def _contract_rule(spec: str, which: int, ct: str, a: list[str]) -> tuple[str, str]:
    """(rule, note) mapping the upstream gradient ``ct`` of ``contract`` back to operand ``which``."""
    x, y, out = parse_spec(spec)
    if len(x) == 2 and len(y) == 2 and x[1] == y[0] and out == x[0] + y[1]:
        return ((f"{ct} @ {a[1]}.T", f"matrix product: G Bᵀ, G = {ct}") if which == 0 else
                (f"{a[0]}.T @ {ct}", f"matrix product: Aᵀ G, G = {ct}"))
    if len(x) == 2 and y == x[1] and out == x[0]:
        return ((f"outer({ct}, {a[1]})", f"matrix-vector product: G vᵀ, G = {ct}") if which == 0 else
                (f"{a[0]}.T @ {ct}", f"matrix-vector product: Aᵀ G, G = {ct}"))
    if len(y) == 2 and x == y[0] and out == y[1]:
        return ((f"{a[1]} @ {ct}", f"vector-matrix product: B G, G = {ct}") if which == 0 else
                (f"outer({a[0]}, {ct})", f"vector-matrix product: v Gᵀ, G = {ct}"))
    if x == y and out == "":
        return f"{ct} * {a[1 - which]}", "dot product: G times the other operand"
    rule = (f"einsum('{out},{y}->{x}', {ct}, {a[1]})" if which == 0 else
            f"einsum('{x},{out}->{y}', {a[0]}, {ct})")
    return rule, "contraction: contract the upstream gradient with the other operand"


def _structural_rule(g, node, which: int, ct: str, a: list[str]) -> tuple[str, str]:
    """(rule, note) of an array primitive's VJP, in words and names."""
    op, shape = node.op, g.shape(node.args[which])
    if op == "contract":
        return _contract_rule(node.params[0], which, ct, a)
    if op == "sum":
        return f"broadcast_to({ct}, {shape})", f"a sum sends its gradient back to every summand: shape {shape}"
    if op == "broadcast_to":
        return f"sum({ct}) over broadcast axes", f"sum over the broadcast axes back to shape {shape}"
    if op == "getitem":
        return (f"zeros({shape}) with [{index_to_source(node.params[0])}] = {ct}",
                f"scatter into zeros of shape {shape}")
    if op == "reshape":
        return f"reshape({ct}, {shape})", ""
    if op == "transpose":
        return f"transpose({ct}, {tuple(np.argsort(node.params[0]).tolist())})", "inverse permutation"
    if op == "custom_gradient":
        return f"user rule({ct})", "custom_gradient: the user's grad_fn replaces the derived VJP"
    return f"{op}_vjp({ct})", ""


def _broadcast_note(arg_shape, out_shape) -> str:
    if tuple(arg_shape) == tuple(out_shape):
        return ""
    lead = len(out_shape) - len(arg_shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(arg_shape) if d == 1 and out_shape[lead + i] != 1]
    return f"sum over broadcast axes {tuple(axes)} back to shape {tuple(arg_shape)}"


def _reverse(g, p, out, order, ref, env, result: Explanation) -> None:
    """Narrate :func:`~symgrad.transforms.vjp.vjp_nodes` (the compiled reverse pass) step by step."""
    pending: dict[int, list[tuple]] = {}  # node -> [(consumer, upstream id, local, local id, contrib id, note)]
    final: dict[int, int] = {}            # node -> its complete adjoint

    def step(nid, ct, sent):
        final[nid] = ct
        node = g[nid]
        arg_names = [ref.name(a) for a in node.args]
        for k, a, c, partial in sent:
            if partial is not None:
                local, note = ref.partial_text(partial), _broadcast_note(g.shape(a), node.shape)
            else:
                local, note = _structural_rule(g, node, k, f"{ref.name(nid)}_bar", arg_names)
            pending.setdefault(a, []).append((ref.name(nid), ct, local, partial, c, note))

    bars = vjp_nodes(g, [out], [g.const(np.ones(g.shape(out)))], p.inputs, on_step=step)
    final.update({i: b for i, b in zip(p.inputs, bars) if b is not None})
    ids = sorted({i for lst in pending.values() for e in lst for i in (e[1], e[3], e[4]) if i is not None}
                 | set(final.values()))
    val = dict(zip(ids, evaluate(g, ids, env)))
    for nid in reversed(order):
        if nid == out or nid not in pending:
            continue
        contribs = tuple(Contribution(cons, val[up], local, None if lid is None else val[lid], val[c], note)
                         for cons, up, local, lid, c, note in pending[nid])
        result.backward.append(AdjointStep(ref.name(nid), g.shape(nid), contribs, val[final[nid]]))
    result.gradient = {n: (val[final[i]] if i in final else np.zeros(g.shape(i)))
                       for i, n in zip(p.inputs, p.arg_names)}


def _seed(p, args, tangents) -> list[np.ndarray]:
    g = p.graph
    if tangents is None:
        return [np.ones(g.shape(i)) if k == 0 else np.zeros(g.shape(i)) for k, i in enumerate(p.inputs)]
    leaves = tree_flatten(tangents)[0]
    if len(leaves) != len(p.inputs):
        raise ValueError(f"explain: tangents must match the arguments ({len(p.inputs)} leaves: "
                         f"{', '.join(p.arg_names)}); got {len(leaves)}")
    seeds = []
    for leaf, i, n in zip(leaves, p.inputs, p.arg_names):
        arr = np.asarray(leaf, dtype=float)
        try:
            seeds.append(np.broadcast_to(arr, g.shape(i)).copy())
        except ValueError:
            raise ValueError(f"explain: tangent for {n} has shape {arr.shape}, "
                             f"but {n} has shape {g.shape(i)}") from None
    return seeds


def _forward(g, p, out, order, ref, env, seeds, result: Explanation) -> None:
    """Narrate :func:`~symgrad.transforms.jvp.jvp_nodes` (the compiled forward pass) step by step."""
    env = dict(env)
    tangents = []
    for i, n, s in zip(p.inputs, p.arg_names, seeds):
        t = g.input(f"{n}_dot", g.shape(i))
        env[t] = s
        result.seed[n] = s
        tangents.append(t)
    has_tangent = set(p.inputs)
    records = []

    def step(nid, tangent, terms):
        node = g[nid]
        dots = [f"{ref.name(a)}_dot" if a in has_tangent else "0" for a in node.args]
        has_tangent.add(nid)
        note = ""
        if REGISTRY[node.op].elementwise:
            shown, texts = [], []
            for k, a, partial in terms:
                local = ref.partial_text(partial)
                shown.append((ref.name(a), local))
                texts.append(dots[k] if local == "1" else f"{_factor(local)} * {dots[k]}")
                if g.shape(a) != node.shape:
                    note = f"{dots[k]} broadcasts from {g.shape(a)} to {node.shape}"
            records.append((nid, tangent, " + ".join(texts), tuple(shown), note))
        else:
            flags = [True if a in has_tangent else None for a in node.args]
            records.append((nid, tangent, _linear_formula(ref, g, nid, flags, dots), (), note))

    (out_dot,) = jvp_nodes(g, p.inputs, tangents, [out], on_step=step)
    ids = [t for _, t, *_ in records]
    val = dict(zip(ids, evaluate(g, ids, env)))
    for nid, t, formula, terms, note in records:
        result.tangents.append(TangentStep(ref.name(nid), g.shape(nid), formula, terms, val[t], note))
    result.gradient = {"output_dot": val[out_dot] if out_dot is not None else np.zeros(g.shape(out))}


def _linear_formula(ref, g, nid, arg_t, dots) -> str:
    """Tangent of an array primitive: the op on the tangents, with the product rule for products."""
    node = g[nid]
    names = [ref.name(a) for a in node.args]
    if node.op == "custom_gradient":  # the user's grad_fn, transposed, applied to the input tangents
        return f"grad_fn transposed({', '.join(d for d in dots[1:] if d != '0')})  [custom_gradient rule]"
    if node.op == "contract":  # bilinear: A_dot B + A B_dot
        parts = []
        for k in range(2):
            if arg_t[k] is not None:
                parts.append(_contract_formula(node.params[0], [dots[0], names[1]] if k == 0 else [names[0], dots[1]]))
        return " + ".join(parts)
    return ref.formula(nid, dots)


def _factor(text: str) -> str:
    return text if text.replace("_", "").replace(".", "").isalnum() else f"({text})"
