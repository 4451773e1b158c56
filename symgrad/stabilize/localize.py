"""Error localisation: which subexpression loses the bits?

For every inner node ``N = op(c_1, ..., c_k)`` we feed the *correctly rounded*
values of the children into ``op`` evaluated in floating point and compare
with the correctly rounded value of ``N`` itself.  The difference is the
error introduced locally by that one operation (Herbie's "local error"), so
rewrites can be aimed where the error is created rather than where it shows.

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating
    point expressions", PLDI, sec. 4.2 (localising error).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import sympy as sp

from .accuracy import Sample, ulp_bits
from .numeric import compile_numpy, is_constant
from .reference import compile_mpmath, reference_values, reference_values_many

__all__ = ["inner_nodes", "local_errors"]


def inner_nodes(expr: sp.Expr):
    """Distinct non-atomic nodes with free symbols, in deterministic preorder."""
    seen, out = set(), []

    def walk(e):
        if e.is_Atom or isinstance(e, sp.Piecewise) or e in seen or is_constant(e):
            for a in (e.args if isinstance(e, sp.Piecewise) else ()):
                walk(a)
            return
        if isinstance(e, sp.Expr):
            seen.add(e)
            out.append(e)
        for a in e.args:
            walk(a)
    walk(expr)
    return out


def local_errors(expr: sp.Expr, variables: Sequence[sp.Symbol], sample: Sample, point_err: np.ndarray,
                 n_points: int = 24, memo: dict | None = None) -> list[tuple[float, sp.Expr]]:
    """Local bits of error of each inner node, largest first.

    Args:
        expr: candidate expression.
        variables: input symbols.
        sample: sample of one dtype.
        point_err: bits of error of ``expr`` at ``sample`` points (used to pick
            the ``n_points`` worst points, where localisation matters).
        n_points: number of points examined.
        memo: optional ``{(node, dtype, sample index): reference}`` kept across calls on the same
            sample (a search localises several candidates that share most of their nodes); only
            the nodes with a missing point are evaluated.

    Returns:
        ``[(mean_local_bits, node), ...]`` sorted by decreasing error (ties by preorder).
    """
    if len(sample.X) == 0:
        return []
    idx = np.argsort(-point_err, kind="stable")[:n_points]
    idx = idx[point_err[idx] > 0.5]
    if len(idx) == 0:
        return []
    X = sample.X[idx]
    exact: dict = {}
    # every node and child that needs a reference, in one shared double-double pass (see
    # reference_values_many); mpmath only where that pass does not certify the rounding
    need = list(dict.fromkeys(n for node in inner_nodes(expr) for n in (node, *node.args)
                              if isinstance(n, sp.Expr) and not is_constant(n) and n not in variables))
    if memo is None:
        exact.update(zip(need, reference_values_many(need, variables, X, sample.dtype)))
    else:
        dt = str(sample.dtype)
        new = [n for n in need if any((n, dt, i) not in memo for i in idx)]
        for n, ref in zip(new, reference_values_many(new, variables, X, sample.dtype)):
            memo.update(((n, dt, i), r) for i, r in zip(idx, ref))
        exact.update((n, np.array([memo[n, dt, i] for i in idx], dtype=sample.dtype)) for n in need)

    def exact_of(node):
        if node not in exact:
            if node in variables:
                exact[node] = X[:, list(variables).index(node)]
            elif is_constant(node):
                exact[node] = compile_numpy(node, variables, sample.dtype)(X)
            else:
                exact[node] = reference_values(compile_mpmath(node, variables), X, sample.dtype)
        return exact[node]

    out = []
    for k, node in enumerate(inner_nodes(expr)):
        kids = list(node.args)
        dums = [sp.Dummy(f"c{i}", real=True) for i in range(len(kids))]
        try:
            local = node.func(*dums)
            C = np.stack([exact_of(c) for c in kids], axis=1)
            got = compile_numpy(local, dums, sample.dtype)(C)
        except Exception:  # noqa: BLE001 - unusual node kinds are simply not localised
            continue
        want = exact_of(node)
        ok = np.all(np.isfinite(C), axis=1) & np.isfinite(want)
        if ok.any():
            out.append((float(ulp_bits(got[ok], want[ok]).mean()), k, node))
    out.sort(key=lambda t: (-t[0], t[1]))
    return [(e, n) for e, _, n in out]
