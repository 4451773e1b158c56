"""The structured result of :func:`symgrad.explain`, and its text and Graphviz renderings.

An :class:`Explanation` holds one record per graph node for the forward pass
(:class:`NodeStep`), then either one record per adjoint for the backward pass
(:class:`AdjointStep`, each made of :class:`Contribution` s from the node's
consumers) or one record per tangent for forward mode (:class:`TangentStep`).
``str(explanation)`` is what ``symgrad explain`` prints; ``to_dot()`` is the
graph in Graphviz's DOT language with values and adjoints on the nodes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np


def fmt(value) -> str:
    """A value for display: 6 significant digits for scalars, a short array otherwise."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.6g}"
    return np.array2string(arr, precision=4, threshold=8, separator=" ").replace("\n", "")


def _shape(shape: tuple) -> str:
    return "" if not shape else f"  shape {shape}"


@dataclass(frozen=True)
class NodeStep:
    """One node of the forward pass: ``name = formula = value``.

    ``formula`` is written in terms of earlier node names; ``op`` is the primitive,
    ``args`` the names of its operands and ``shape`` the node's shape (``()`` = scalar).
    """

    name: str
    op: str
    formula: str
    args: tuple[str, ...]
    shape: tuple[int, ...]
    value: np.ndarray


@dataclass(frozen=True)
class Contribution:
    """What one consumer sends back to a node in the backward pass.

    Attributes:
      consumer: the node whose adjoint flows back (``t1`` in ``t1_bar * dt1/dt0``).
      upstream: that consumer's accumulated adjoint value.
      local: the local partial derivative ``d consumer / d node`` as a formula, or, for an
        array primitive (sum, matrix product, indexing), the rule that maps the upstream
        gradient back (e.g. ``t1_bar @ B.T``).
      local_value: the value of the local partial where it is elementwise, else None.
      value: the contribution itself, already in the node's shape.
      shape_note: how the contribution gets the node's shape: empty, or e.g.
        ``sum over broadcast axes (0,)`` or ``G Bᵀ`` for a matrix product.
    """

    consumer: str
    upstream: np.ndarray
    local: str
    local_value: np.ndarray | None
    value: np.ndarray
    shape_note: str = ""


@dataclass(frozen=True)
class AdjointStep:
    """The adjoint ``name_bar``: the sum of the contributions of every consumer."""

    name: str
    shape: tuple[int, ...]
    contributions: tuple[Contribution, ...]
    value: np.ndarray

    @property
    def merged(self) -> bool:
        """True where paths merge: the node feeds several consumers (or one consumer twice)."""
        return len(self.contributions) > 1


@dataclass(frozen=True)
class TangentStep:
    """The tangent ``name_dot`` in forward mode: ``formula`` in earlier tangents, and its value."""

    name: str
    shape: tuple[int, ...]
    formula: str
    terms: tuple[tuple[str, str], ...]  # (operand name, local partial) for elementwise nodes
    value: np.ndarray
    shape_note: str = ""


@dataclass
class Explanation:
    """Forward pass and derivative pass of a function at a point, node by node.

    Attributes:
      function: the function's name.
      mode: ``"reverse"`` (backpropagation) or ``"forward"`` (tangent propagation).
      output: name of the output node.
      forward: the forward pass, inputs first, in topological order.
      backward: reverse mode: adjoints in reverse topological order (else empty).
      tangents: forward mode: tangents in topological order (else empty).
      seed: forward mode: the input tangents ``{name: value}``.
      gradient: reverse mode: ``{input name: d output / d input}``; forward mode:
        ``{"output_dot": directional derivative}``.
    """

    function: str
    mode: str
    output: str
    forward: list[NodeStep]
    backward: list[AdjointStep] = field(default_factory=list)
    tangents: list[TangentStep] = field(default_factory=list)
    seed: dict = field(default_factory=dict)
    gradient: dict = field(default_factory=dict)

    def step(self, name: str):
        """The forward step called ``name`` (KeyError if there is none)."""
        for s in self.forward:
            if s.name == name:
                return s
        raise KeyError(f"no node called {name!r}; nodes are {[s.name for s in self.forward]}")

    def adjoint(self, name: str) -> AdjointStep:
        """The backward step of ``name`` (KeyError if ``name`` gets no adjoint)."""
        for s in self.backward:
            if s.name == name:
                return s
        raise KeyError(f"{name!r} has no adjoint; adjoints exist for {[s.name for s in self.backward]}")

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def _repr_pretty_(self, p, cycle) -> None:  # IPython
        p.text(str(self))

    def _lines(self) -> list[str]:
        lines = [f"forward pass of {self.function}:"]
        for s in self.forward:
            rhs = "(input)" if s.op == "input" else f"{s.formula} = {fmt(s.value)}"
            value = f"{fmt(s.value)}   " if s.op == "input" else ""
            lines.append(f"  {s.name:>8} = {value}{rhs}{_shape(s.shape)}")
        if self.mode == "forward":
            lines += self._forward_mode_lines()
        else:
            lines += self._reverse_mode_lines()
        return lines

    def _reverse_mode_lines(self) -> list[str]:
        lines = ["", f"backward pass ({self.output}_bar = 1), reverse topological order:"]
        for a in self.backward:
            sum_text = " + ".join(_term(c) for c in a.contributions) or "0"
            lines.append(f"  {a.name + '_bar':>10} = {sum_text} = {fmt(a.value)}{_shape(a.shape)}")
            for c in a.contributions:
                if c.local_value is None:  # an array primitive: its VJP rule
                    local = f"rule {c.local}"
                else:
                    value = f" (= {fmt(c.local_value)})" if c.local != "1" else ""
                    local = f"local d{c.consumer}/d{a.name} = {c.local}{value}"
                note = f"; {c.shape_note}" if c.shape_note else ""
                lines.append(f"  {'':>10}   from {c.consumer}: upstream {c.consumer}_bar = {fmt(c.upstream)}, "
                             f"{local}{note} -> {fmt(c.value)}")
            if a.merged:
                lines.append(f"  {'':>10}   paths merge at {a.name}: "
                             f"{a.name}_bar sums the {len(a.contributions)} contributions")
        lines += ["", "gradient: " + ", ".join(f"d{self.output}/d{k} = {fmt(v)}" for k, v in self.gradient.items())]
        return lines

    def _forward_mode_lines(self) -> list[str]:
        seeds = ", ".join(f"{k}_dot = {fmt(v)}" for k, v in self.seed.items())
        lines = ["", f"forward-mode tangents (seed {seeds}), topological order:"]
        for t in self.tangents:
            note = f"   [{t.shape_note}]" if t.shape_note else ""
            lines.append(f"  {t.name + '_dot':>10} = {t.formula} = {fmt(t.value)}{_shape(t.shape)}{note}")
        value = self.gradient.get("output_dot", 0.0)
        lines += ["", f"directional derivative: {self.output}_dot = {fmt(value)} "
                      "(one forward pass per seed direction; reverse mode gives every input at once)"]
        return lines

    def to_dot(self) -> str:
        """The graph in Graphviz's DOT language: one box per node with its value and derivative."""
        derivs = ({a.name: a.value for a in self.backward} if self.mode == "reverse"
                  else {t.name: t.value for t in self.tangents})
        suffix = "_bar" if self.mode == "reverse" else "_dot"
        if self.mode == "reverse":
            derivs.setdefault(self.output, np.float64(1.0))
        else:
            derivs.update(self.seed)
        out = ["digraph symgrad_explain {", "  rankdir=LR;", '  node [shape=record, fontname="Helvetica"];']
        for s in self.forward:
            label = [f"{s.name} = {s.formula}" if s.op != "input" else f"{s.name} (input)",
                     f"value {fmt(s.value)}"]
            if s.name in derivs:
                label.append(f"{s.name}{suffix} {fmt(derivs[s.name])}")
            out.append(f'  {_dot_id(s.name)} [label="{{{" | ".join(_dot_escape(x) for x in label)}}}"];')
        known = {s.name for s in self.forward}
        for s in self.forward:
            for a in dict.fromkeys(x for x in s.args if x in known):  # constants are in the labels
                out.append(f"  {_dot_id(a)} -> {_dot_id(s.name)};")
        out.append("}")
        return "\n".join(out) + "\n"


def _term(c: Contribution) -> str:
    return f"{c.consumer}_bar" if c.local == "1" else (
        c.local if c.consumer + "_bar" in c.local else f"{c.consumer}_bar * {_paren(c.local)}")


def _paren(text: str) -> str:
    """``text`` as a factor: unchanged if it is a name, a number or one call ``f(...)``."""
    if re.fullmatch(r"[\w.]+", text):
        return text
    m = re.match(r"\w+\(", text)
    if m and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text[m.end() - 1:], start=m.end() - 1):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                return text if i == len(text) - 1 else f"({text})"
    return f"({text})"


def _dot_id(name: str) -> str:
    return '"' + _dot_escape(name) + '"'


def _dot_escape(text: str) -> str:
    """Escape a label for DOT record labels (quotes, backslashes and record punctuation)."""
    out = []
    for ch in str(text):
        if ch in '\\"{}|<> ':
            out.append("\\" + ch if ch != " " else " ")
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
    return "".join(out)
