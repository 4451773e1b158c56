"""Property-based tests: random programs compiled by symgrad vs 50-digit mpmath references.

See README.md in this directory for the generator, the oracle, the profiles and
the example counts.  Every compiled function runs as Numba machine code (the
kernels assert it).
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, note, settings, strategies as st

from .checks import Checker, count, timed
from .conftest import EXAMPLES, RUN
from .kernels import combined
from .oracle import FLOOR, U32, U64, flatten, reference, tolerance, unflatten_np
from .strategies import point_strategy, programs


def _bump(name):
    RUN[name] = RUN.get(name, 0) + 1


def _directions(rng, d):
    v = rng.standard_normal(d)
    w = rng.standard_normal(d)
    return {"v": v, "w": w, "vw": v + w}


def _flat_out(out, prefix, n, fmt):
    return flatten([out[prefix + fmt.format(k)] for k in range(n)])


def _zero_call(prog):
    args = list(prog.example_args())
    return args, args, 1.0


def _hessian_matrix(out, program):
    sizes = [int(np.prod(s)) if s else 1 for s in program.input_shapes]
    d = sum(sizes)
    H = np.zeros((d, d))
    offs = np.cumsum([0] + sizes)
    for i in range(program.n_inputs):
        for j in range(program.n_inputs):
            block = np.asarray(out[f"hessian__d2_out_d_x{i}_d_x{j}"], dtype=np.float64)
            H[offs[i]:offs[i + 1], offs[j]:offs[j + 1]] = block.reshape(sizes[i], sizes[j])
    return H


def _dot_tol(ref, key, a, b, u, scale=0.0):
    """Tolerance for a float dot product a . b against the reference quantity ``key``."""
    return ref.tol(key, float(np.dot(a, b)), u) + 8 * u * float(np.sum(np.abs(a * b))) + FLOOR * u * scale


# -- f, grad, jvp, vjp, hvp, Hessian: one combined kernel per program ---------------------------------

def with_hessian(program) -> bool:
    """The full Hessian kernel of vector inputs costs seconds of Numba compile: it is built for
    programs with at most 3 input elements (hvp, checked everywhere, covers the rest)."""
    return len(flatten(program.example_args())) <= 3


@settings(max_examples=EXAMPLES["scalar"])
@given(data=st.data())
def test_scalar_programs_f64(data):
    """f, grad, jvp, vjp, hvp and the Hessian of scalar programs from one float64 kernel, at 3
    points, against mpmath values and central differences; the JVP/VJP dot-product identity;
    Hessian symmetry and hvp = H @ v."""
    _combined_f64(data, data.draw(programs(), label="program"), "test_scalar_programs_f64")


@settings(max_examples=EXAMPLES["vector"])
@given(data=st.data())
def test_vector_programs_f64(data):
    """The same checks for programs with vector inputs and vector ops (signatures such as
    "(3),()->()"); the full Hessian only for at most 3 input elements."""
    _combined_f64(data, data.draw(programs(vectors=True, max_ops=6), label="program"),
                  "test_vector_programs_f64")


def _combined_f64(data, prog, name):
    note(prog.source())
    points = data.draw(st.lists(point_strategy(prog), min_size=3, max_size=3), label="points")
    seed = data.draw(st.integers(0, 2**31), label="seed")
    kinds = ("jit", "grad", "jvp", "vjp", "hvp") + (("hessian",) if with_hessian(prog) else ())
    with timed("trace+build+emit"):
        comb = combined(prog, kinds)
    with timed("numba compile (first call)"):
        comb.call("float64", *_zero_call(prog))
    _bump(name)
    chk = Checker(prog, "combined float64 kernel vs mpmath")
    n = prog.n_inputs
    for i, point in enumerate(points):
        rng = np.random.default_rng([seed, i])
        flat = flatten(point)
        dirs = _directions(rng, flat.size)
        c = float(rng.choice([1.0, -0.5, 3.0]))
        with timed("mpmath reference"):
            ref = reference(prog, point, dirs, u=U64, seed=seed + i)
        if ref.near_switch:
            count("combined: point skipped (branch switch within rounding reach)")
            continue
        out = comb.call("float64", point, unflatten_np(prog, dirs["v"]), c)
        ctx = f"at {point!r}"
        f = out["jit__out"]
        chk.close("f", f, ref.f, ref.tol("f", ref.f, U64), ctx)
        chk.equal("jvp primal output == jit output", out["jvp__out"], f, ctx)
        g = _flat_out(out, "grad__", n, "x{}_bar")
        v, w = dirs["v"], dirs["w"]
        hv = _flat_out(out, "hvp__", n, "hvp_x{}")
        # magnitudes of the derivatives' terms, for the formula-conditioning floor (see oracle.FLOOR)
        s1 = 1.0 + abs(ref.f) + float(np.abs(g) @ (np.abs(v) + np.abs(w)))
        s2 = s1 + float(np.abs(hv) @ (np.abs(v) + np.abs(w)))
        chk.close("grad . v", g @ v, ref.d1["v"], _dot_tol(ref, ("d1", "v"), g, v, U64, s1), ctx)
        chk.close("grad . w", g @ w, ref.d1["w"], _dot_tol(ref, ("d1", "w"), g, w, U64, s1), ctx)
        jv = out["jvp__out_dot"]
        tol_jv = ref.tol(("d1", "v"), ref.d1["v"], U64) + FLOOR * U64 * s1
        chk.close("jvp(v)", jv, ref.d1["v"], tol_jv, ctx)
        bars = _flat_out(out, "vjp__", n, "x{}_bar")
        chk.close("vjp(c) . v", bars @ v, c * ref.d1["v"], abs(c) * tol_jv + 8 * U64 * np.sum(np.abs(bars * v)), ctx)
        # <c, J v> == <J^T c, v> (both sides computed by symgrad)
        chk.close("dot-product test <c, Jv> vs <J^T c, v>", c * jv, bars @ v,
                  2 * abs(c) * tol_jv + 8 * U64 * np.sum(np.abs(bars * v)), ctx)
        vhw = (ref.d2["vw"] - ref.d2["v"] - ref.d2["w"]) / 2
        vhw_tol = sum(ref.tol(("d2", k), ref.d2[k], U64) for k in ("v", "w", "vw")) / 2 + FLOOR * U64 * s2
        chk.close("v . hvp(v)", hv @ v, ref.d2["v"], _dot_tol(ref, ("d2", "v"), hv, v, U64, s2), ctx)
        chk.close("w . hvp(v)", hv @ w, vhw, vhw_tol + 8 * U64 * np.sum(np.abs(hv * w)), ctx)
        if "hessian" in kinds:
            H = _hessian_matrix(out, prog)
            e2 = max(ref.err[("d2", k)] / float(dirs[k] @ dirs[k]) for k in ("v", "w", "vw"))
            floor = FLOOR * U64 * (1.0 + abs(ref.f) + float(np.abs(g).max()) + float(np.abs(H).max()))
            for a in range(H.shape[0]):
                for b in range(a + 1, H.shape[0]):
                    chk.close(f"Hessian symmetry H[{a},{b}] vs H[{b},{a}]", H[a, b], H[b, a],
                              4 * tolerance(e2, 0.0, U64) + 16 * U64 * (abs(H[a, b]) + abs(H[b, a])) + floor, ctx)
            Hv = H @ v
            for a in range(H.shape[0]):
                chk.close(f"hvp(v)[{a}] vs (H @ v)[{a}]", hv[a], Hv[a],
                          (4 * tolerance(e2, 0.0, U64) + floor) * np.sum(np.abs(v))
                          + 16 * U64 * np.sum(np.abs(H[a] * v)), ctx)
            chk.close("v . H . v", v @ H @ v, ref.d2["v"],
                      _dot_tol(ref, ("d2", "v"), Hv, v, U64, s2) + 8 * U64 * np.sum(np.abs(H * np.outer(v, v))), ctx)
    chk.done()
