"""User derivative rules (``custom_gradient``) as a graph primitive.

A call to a ``custom_gradient`` function records:

* the forward nodes ``y_k`` of the user's function;
* the user's ``grad_fn`` traced once with symbolic upstream placeholders
  ``u_k``: nodes ``x_bar_i = L_i(u)``, a linear map u -> J^T u;
* one ``custom_gradient`` node per output, ``custom(y_k, x_1, ..., x_n)``,
  equal to ``y_k`` in value; derivatives never flow through ``y_k``.

Reverse mode substitutes the cotangent for ``u_k`` (zeros for the other
placeholders; valid because L is linear).  Forward mode uses the transpose:
``J v = grad_u <L(u), v>``, the VJP of the rule's subgraph with respect to the
placeholders with cotangent ``v``.  This is ``Rop(f, x, v) = Lop(Lop(f, x, w), w, v)``
evaluated once, symbolically, so the dummy ``u`` disappears from the result; if
it does not, ``grad_fn`` was not linear in its upstream values and a
:class:`RuleError` says so.
"""
from __future__ import annotations

from dataclasses import dataclass


from ..errors import RuleError, format_error
from ..ir.graph import Graph
from ..ir.ops import OpDef, register
from ..trace.names import identifier
from .vjp import vjp_nodes


@dataclass
class CustomRule:
    """One traced ``custom_gradient`` call."""

    name: str
    placeholders: list[int]   # u_k, one per output leaf
    x_bars: list[int | None]  # L_i(u), one per input leaf (None: zero)
    inputs: list[int]


def _shown(name: str) -> str:
    """A user's function name as it appears in generated comments: the identifier symgrad makes of it."""
    return identifier(name.replace("<lambda>", "lambda_fn"), default="fn")


def rules_of(g: Graph) -> list[CustomRule]:
    if not hasattr(g, "custom_rules"):
        g.custom_rules = []
    return g.custom_rules


def substitute(g: Graph, roots: list[int | None], mapping: dict[int, int]) -> list[int | None]:
    """Rebuild ``roots`` with node ``k`` replaced by ``mapping[k]`` (others shared)."""
    new: dict[int, int] = dict(mapping)
    for nid in g.ancestors([r for r in roots if r is not None]):
        if nid in new:
            continue
        node = g[nid]
        if any(a in new for a in node.args):
            new[nid] = g.apply(node.op, *[new.get(a, a) for a in node.args], params=node.params)
    return [None if r is None else new.get(r, r) for r in roots]


def _vjp(g: Graph, node, ct, nb):
    rule = rules_of(g)[node.params[0]]
    k = node.params[1]
    if nb:
        if any(g[n].op in ("sum", "contract", "getitem", "scatter", "reshape", "transpose", "concat",
                          "take", "take_add", "cumsum", "amax", "amin")
               for n in g.ancestors([x for x in rule.x_bars if x is not None])):
            raise NotImplementedError(
                f"custom_gradient {rule.name}: reverse-mode Jacobians of vector outputs through a rule with "
                "array operations; use symgrad.jacobian in forward mode (fewer inputs) or vjp per output")
    mapping = {u: (ct if j == k else g.const(0.0)) for j, u in enumerate(rule.placeholders)}
    bars = substitute(g, rule.x_bars, mapping)
    out = []
    for b, x in zip(bars, rule.inputs):
        if b is not None and g.shape(b) != g.shape(ct)[:nb] + g.shape(x):
            b = g.apply("broadcast_to", b, params=(g.shape(ct)[:nb] + g.shape(x),))
        if b is not None:
            g.notes[b] = f"custom_gradient: user rule of {_shown(rule.name)} replaces the derived VJP"
        out.append(b)
    return (None, *out)


def _jvp(g: Graph, node, tangents, nb):
    rule = rules_of(g)[node.params[0]]
    k = node.params[1]
    pairs = [(b, t) for b, t in zip(rule.x_bars, tangents[1:]) if b is not None and t is not None]
    if not pairs:
        return None
    u_bar = vjp_nodes(g, [b for b, _ in pairs], [t for _, t in pairs], rule.placeholders, nb=nb)[k]
    if u_bar is None:
        return None
    leaked = set(rule.placeholders) & set(g.ancestors([u_bar]))
    if leaked:
        raise RuleError(format_error(
            f"custom gradient of {rule.name} is not linear in its upstream gradient",
            "forward mode transposes grad_fn, which requires grad_fn(upstream) to be linear in upstream",
            "make grad_fn multiply upstream by the local derivative (no upstream**2, exp(upstream), ...)"))
    target = g.shape(tangents[1] if tangents[1] is not None else u_bar)[:nb] + node.shape
    if g.shape(u_bar) != target:
        u_bar = g.apply("broadcast_to", u_bar, params=(target,))
    g.notes[u_bar] = f"custom_gradient: JVP of {_shown(rule.name)} = transpose of the user's rule"
    return u_bar


register(OpDef(
    name="custom_gradient", infer=lambda nodes, p: (nodes[0].shape, "f"), emit=lambda ctx, node, a: a[0],
    numpy=lambda y, *rest: y, jvp=_jvp, vjp=_vjp,
    ref="user rule; forward mode by transposition (seed article: Rop via two Lops)",
))
