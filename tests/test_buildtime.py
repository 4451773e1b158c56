"""Build time at any size (issue 15): the stabiliser's program budget, its shared triage,
chunked emission and the fused scatter sums of scalar-loop gradients.

Speed itself is measured in benchmarks/bench_buildtime.py (BENCHMARKS.md), never here: these
tests check the budget through the CPU time the stabiliser reports, and values against
independent references (a hand-written gradient, float64 and mpmath).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.api.build import build_kernel
from symgrad.api.stabilize_pass import DEFAULT_BUDGET_S
from symgrad.compile.cache import cache_key, load_module
from symgrad.emit.chunk import split_body
from symgrad.emit.module import emit_module
from symgrad.stabilize.budget import StabilizeBudgetExceeded, cpu_clock, hard_deadline
from symgrad.stabilize.triage import triage
from symgrad.trace.trace import trace_program


def make_mlp(H, D, seed=0):
    """The issue's scalar-loop MLP loss over a flat parameter vector, and its gradient by hand."""
    rng = np.random.default_rng(seed)
    xd, yd = rng.standard_normal(D), 0.3

    def mlp_loss(p):
        out = 0.0
        for h in range(H):
            a = p[H * D + h]
            for d in range(D):
                a = a + p[h * D + d] * xd[d]
            out = out + p[H * D + H + h] * np.tanh(a)
        r = out - yd
        return r * r

    def grad_ref(p):
        W, b, v = p[:H * D].reshape(H, D), p[H * D:H * D + H], p[H * D + H:]
        t = np.tanh(W @ xd + b)
        r = v @ t - yd
        da = 2 * r * v * (1 - t * t)
        return np.concatenate([np.outer(da, xd).ravel(), da, 2 * r * t])

    return mlp_loss, grad_ref, H * D + 2 * H


def test_mlp_stabiliser_stays_within_its_program_budget():
    """At (4, 4) the 25 outputs used to cost ~60 s of mpmath references (2 s cap per expression,
    sampling outside it); the whole program now gets one CPU budget, sampling included."""
    loss, _, n = make_mlp(4, 4)
    rw = sg.trace(loss, np.zeros(n), signature="(n)->()").rewrites()
    assert rw.cpu_s is not None
    assert rw.cpu_s <= DEFAULT_BUDGET_S + 0.5  # one reference point past the deadline at most
    assert any("program budget" in note for note in rw.notes) and "s CPU spent" in rw.notes[0], rw.notes
    assert any("region(s) triaged" in note for note in rw.notes), rw.notes


def test_budget_of_zero_searches_nothing_and_keeps_values():
    """A spent budget keeps the derived forms: the values are the unstabilised kernel's."""
    f = lambda x: np.log(1 + np.exp(x))  # noqa: E731
    x = np.array([-3.0, 0.5, 20.0])
    got = sg.grad(f, stabilize=1e-9)(x)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-x)), rtol=1e-15)
    rw = sg.trace(f, 0.0).rewrites()  # the default budget still finds the stable form
    assert rw, rw.notes


def test_triage_flags_only_inaccurate_expressions():
    x, y = sp.symbols("x y", real=True)
    exprs = [sp.log(1 + sp.exp(x)), x * y, sp.exp(x) - 1, x + y]
    res = triage(exprs, [[x], [x, y], [x], [x, y]])
    assert res.needs_search == [True, False, True, False]
    assert res.mean_bits[0] > res.mean_bits[1]


def test_triage_raises_past_the_hard_deadline():
    x = sp.Symbol("x", real=True)
    with hard_deadline(cpu_clock() - 1.0), pytest.raises(StabilizeBudgetExceeded):
        triage([sp.log(1 + sp.exp(x))], [[x]])


def test_split_body_passes_live_values():
    lines = ["t0 = x + 1.0", "# a comment", "t1 = t0 * 2.0", "for _i0 in range(3):",
             "    out[_i0] = t1 + _i0", "t2 = t0 - t1", "y = t2 * t0"]
    parts, calls = split_body(lines, ["x", "out"], ["y"], "k_part", 4)  # 2 + 2 | 4 | 2 + 2 operations
    assert [p[0] for p in parts] == ["k_part0", "k_part1", "k_part2"]
    assert parts[0][1:3] == (["x"], ["t0", "t1"])
    assert parts[1][1:3] == (["out", "t1"], [])
    assert parts[2][1:3] == (["t0", "t1"], ["y"])
    assert calls == ["t0, t1 = k_part0(x)", "k_part1(out, t1)", "y = k_part2(t0, t1)"]
    assert split_body(lines, ["x", "out"], ["y"], "k_part", 12) == ([], lines)
    assert len(split_body(lines, ["x", "out"], ["y"], "k_part", 11)[0]) == 2


def _module(fn, args, max_ops, tag):
    p = trace_program(fn, args, [np.shape(a) for a in args])
    built = build_kernel(p, "grad", [0])
    src = emit_module(p.graph, [built.kernel], [], max_ops=max_ops)
    key = cache_key(p.fingerprint(), "test-buildtime", tag)
    return getattr(load_module(built.kernel.name, key, src), built.kernel.name), src


def test_chunked_kernel_is_bit_identical_to_the_whole_one():
    loss, grad_ref, n = make_mlp(2, 3, seed=1)
    rng = np.random.default_rng(2)
    p = rng.standard_normal(n)
    whole, src_whole = _module(loss, (p,), 10**6, "whole")
    split, src_split = _module(loss, (p,), 3, "split")
    assert "_part" not in src_whole and "_f64_part0(" in src_split
    P = rng.standard_normal((4, n)) * np.array([1.0, 10.0, 1e-3, 300.0])[:, None]
    a, b = whole(P), split(P)
    assert a.tobytes() == b.tobytes()
    np.testing.assert_allclose(a[0], grad_ref(P[0]), rtol=1e-12, atol=1e-14)
    a32, b32 = whole(P.astype(np.float32)), split(P.astype(np.float32))
    assert a32.dtype == np.float32 and a32.tobytes() == b32.tobytes()


def test_scalar_loop_gradient_is_one_array_not_a_sum_of_scatters():
    """d/dp of sum_k f(p[k]) used to add n arrays of length n (one scatter per p[k])."""
    loss, grad_ref, n = make_mlp(3, 2, seed=3)
    g = sg.grad(loss, signature="(n)->()", stabilize=False)
    p = np.random.default_rng(4).standard_normal(n)
    np.testing.assert_allclose(g(p), grad_ref(p), rtol=1e-12, atol=1e-14)
    src = g.source(p)
    core = src[src.index("def mlp_loss_grad_f64("):src.index("def mlp_loss_grad_f64_batch")]
    # each p[k] is written once: an assignment per element (v + 0.0: the same IEEE sum as 0 + v), no zeros
    assert core.count("np.zeros") == 0 and core.count("+= ") == 0 and "= 0.0" not in core
    assert len(re.findall(r"^    p_bar\[\d+\] = \w+ \+ 0\.0$", core, flags=re.MULTILINE)) == n


def test_scatter_assignments_keep_the_sum_of_zeros_bits_and_zero_the_rest():
    """``out[k] = v + 0.0`` is the IEEE sum ``0 + v`` the ``+=`` form computed: -0.0 becomes +0.0;
    elements no scatter writes keep their zeros."""
    def loss(x):  # gradient (x[1], x[0], 0, 2 x[3]): x[2] is never read
        return x[0] * x[1] + x[3] ** 2

    g = sg.grad(loss, signature="(n)->()", stabilize=False)
    x = np.array([1.5, -0.0, 7.0, -0.0])
    got = g(x)
    want = np.zeros(4) + np.array([-0.0, 1.5, 0.0, -0.0])  # 0 + v, elementwise
    assert got.tobytes() == want.tobytes() and not np.signbit(got).any()
    core = g.source(x)
    core = core[core.index("def loss_grad_f64("):core.index("def loss_grad_f64_batch")]
    assert "+= " not in core and core.count(" + 0.0\n") == 3 and "x_bar[_i0] = 0.0" in core


def _gmm_loglik(theta, xs=tuple(np.concatenate([np.random.default_rng(1).normal(-2, 0.5, 20),
                                                   np.random.default_rng(2).normal(1.5, 1.0, 20)]))):
    """Log-likelihood of 40 points under 3 Gaussians, scalar loops (benchmarks/bench_buildtime.py)."""
    lw = [theta[k] for k in range(3)]
    m = np.logaddexp(np.logaddexp(lw[0], lw[1]), lw[2])
    total = 0.0
    for x in xs:
        acc = None
        for k in range(3):
            z = (x - theta[3 + k]) * np.exp(-theta[6 + k])
            term = lw[k] - m - theta[6 + k] - 0.5 * z * z - 0.9189385332046727
            acc = term if acc is None else np.logaddexp(acc, term)
        total = total + acc
    return total


def test_mixture_hessian_with_a_double_double_region_answers_from_the_interpreter():
    """The Gaussian-mixture Hessian (issue 15, point 6): its stabiliser makes a cancelling sum a
    double-double region; the tape runs it (symgrad.emit.tape_dd), so the first result comes from
    the interpreter instead of waiting a minute for Numba.  Values: the same as stabilize=False
    to 1e-9 and central differences of the exact gradient to 1e-6."""
    theta = np.array([0.1, -0.2, 0.3, -2.0, 0.0, 1.5, -0.5, 0.0, 0.2])
    h = sg.hessian(_gmm_loglik, signature="(n)->()", tiered=True)
    got = h(theta)
    entry = next(iter(h.compiled._entries.values()))
    assert entry.tier in ("interpreter", "native")  # never the Numba module before the first result
    names = [r.name for _, r in sg.trace(_gmm_loglik, theta, signature="(n)->()").rewrites("hessian")]
    assert "double_double" in names, names
    plain = sg.hessian(_gmm_loglik, signature="(n)->()", stabilize=False)(theta)
    np.testing.assert_allclose(got, plain, rtol=1e-9, atol=1e-9)
    g = sg.grad(_gmm_loglik, signature="(n)->()")
    eps = 1e-6
    fd = np.array([(g(theta + eps * e) - g(theta - eps * e)) / (2 * eps) for e in np.eye(9)])
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)
    h.wait_compiled()
    np.testing.assert_array_equal(h(theta), got)  # the native tier's bits
