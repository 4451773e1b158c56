"""Property-based tests: random programs compiled by symgrad vs 50-digit mpmath references.

See README.md in this directory for the generator, the oracle, the profiles and
the example counts.  Every compiled function runs as Numba machine code (the
kernels assert it).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import symgrad as sg
from symgrad.emit.names import spec_name
from numba.core.dispatcher import Dispatcher
from hypothesis import given, note, settings, strategies as st

from .checks import Checker, count, timed
from .conftest import EXAMPLES, RUN
from .kernels import STATS, combined, register_program
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


def scalar_inputs(program) -> bool:
    return all(s == () for s in program.input_shapes)


@settings(max_examples=EXAMPLES["scalar"])
@given(data=st.data())
def test_scalar_programs_f64(data):
    """f, grad, jvp, vjp, hvp and the Hessian of scalar programs from one float64 kernel, at 5
    points, against mpmath values and central differences; the JVP/VJP dot-product identity;
    Hessian symmetry and hvp = H @ v."""
    _combined_f64(data, data.draw(programs(), label="program"), "test_scalar_programs_f64")


@settings(max_examples=EXAMPLES["vector"])
@given(data=st.data())
def test_vector_programs_f64(data):
    """The same checks for programs with vector inputs and vector ops (signatures such as
    "(3),()->()"), except the full Hessian (its kernel costs seconds of Numba compile for vector
    inputs; hvp is checked, and test_public_api checks sg.hessian of small vector programs)."""
    _combined_f64(data, data.draw(programs(vectors=True, max_ops=6), label="program"),
                  "test_vector_programs_f64")


def _combined_f64(data, prog, name):
    note(prog.source())
    points = data.draw(st.lists(point_strategy(prog), min_size=5, max_size=5), label="points")
    seed = data.draw(st.integers(0, 2**31), label="seed")
    _bump(name)
    check_combined_f64(prog, points, seed)


def check_combined_f64(prog, points, seed):
    """The checks of test_scalar_programs_f64 / test_vector_programs_f64 for one program."""
    kinds = ("jit", "grad", "jvp", "vjp", "hvp") + (("hessian",) if scalar_inputs(prog) else ())
    with timed("trace+build+emit"):
        comb = combined(prog, kinds)
    with timed("numba compile (first call)"):
        comb.call("float64", *_zero_call(prog))
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
        # second-derivative terms of the intermediate nodes: a Hessian that cancels them to ~0 (as
        # for u/u) still carries their rounding (found by the long profile, seed 5)
        t2 = max(ref.terms2.values(), default=0.0)
        s2 = s1 + float(np.abs(hv) @ (np.abs(v) + np.abs(w))) + t2
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
            t2n = max((ref.terms2[k] / float(dirs[k] @ dirs[k]) for k in ref.terms2), default=0.0)
            floor = FLOOR * U64 * (1.0 + abs(ref.f) + float(np.abs(g).max()) + float(np.abs(H).max()) + t2n)
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


# -- larger programs, forward only ------------------------------------------------------------------

@settings(max_examples=EXAMPLES["forward"])
@given(data=st.data())
def test_forward_large_programs(data):
    """Larger programs (up to 16 ops, scalar or vector) compiled by the forward kernel alone
    (cheap to compile), their values against mpmath at 4 points."""
    vec = data.draw(st.booleans(), label="vectors")
    prog = data.draw(programs(max_ops=16, min_ops=6, vectors=vec), label="program")
    note(prog.source())
    points = data.draw(st.lists(point_strategy(prog), min_size=4, max_size=4), label="points")
    with timed("trace+build+emit"):
        comb = combined(prog, ("jit",))
    _bump("test_forward_large_programs")
    chk = Checker(prog, "forward kernel vs mpmath")
    for i, point in enumerate(points):
        with timed("mpmath reference"):
            ref = reference(prog, point, {}, u=U64, seed=i, want_d2=False)
        if ref.near_switch:
            count("forward: point skipped (branch switch within rounding reach)")
            continue
        with timed("numba compile (first call)" if i == 0 else "calls"):
            out = comb.call("float64", point)
        chk.close("f", out["jit__out"], ref.f, ref.tol("f", ref.f, U64), f"at {point!r}")
    chk.done()


# -- float32 ------------------------------------------------------------------------------------------

def _to32(point):
    return tuple(np.float32(p).astype(np.float64) if np.ndim(p) == 0 else np.asarray(p, np.float32).astype(np.float64)
                 for p in point)


@settings(max_examples=EXAMPLES["float32"])
@given(data=st.data())
def test_float32(data):
    """float32 kernels (f, grad) against mpmath within float32 tolerances scaled by the
    conditioning, and against the float64 kernel at the same (float32) inputs; results are float32."""
    vec = data.draw(st.sampled_from([False, False, False, True]), label="vectors")
    prog = data.draw(programs(vectors=vec, max_ops=6 if vec else 8), label="program")
    note(prog.source())
    points = [_to32(p) for p in data.draw(st.lists(point_strategy(prog), min_size=3, max_size=3), label="points")]
    seed = data.draw(st.integers(0, 2**31), label="seed")
    with timed("trace+build+emit"):
        comb = combined(prog, ("jit", "grad"))
    with timed("numba compile (first call)"):
        comb.call("float32", _zero_call(prog)[0])
        comb.call("float64", _zero_call(prog)[0])
    _bump("test_float32")
    chk = Checker(prog, "float32 kernel vs mpmath and the float64 kernel")
    n = prog.n_inputs
    for i, point in enumerate(points):
        rng = np.random.default_rng([seed, i])
        flat = flatten(point)
        v = rng.standard_normal(flat.size).astype(np.float32).astype(np.float64)
        with timed("mpmath reference"):
            ref = reference(prog, point, {"v": v}, u=U32, probe=3e-4, seed=seed + i, want_d2=False)
        if ref.near_switch:
            count("float32: point skipped (branch switch within float32 rounding reach)")
            continue
        o32 = comb.call("float32", point)
        o64 = comb.call("float64", point)
        ctx = f"at {point!r}"
        f32, f64 = o32["jit__out"], o64["jit__out"]
        # Numba boxes a float32 scalar as a Python float: it must be a float32 value
        chk.equal("f (float32) is a float32 number", np.float64(np.float32(f32)), np.float64(f32), ctx)
        tol_f = ref.tol("f", ref.f, U32)
        chk.close("f (float32)", f32, ref.f, tol_f, ctx)
        chk.close("f (float32) vs f (float64)", f32, f64, tol_f, ctx)
        g32 = flatten([np.asarray(o32[f"grad__x{k}_bar"], np.float64) for k in range(n)])
        g64 = flatten([o64[f"grad__x{k}_bar"] for k in range(n)])
        s1 = 1.0 + abs(ref.f) + float(np.abs(g64) @ np.abs(v))
        tol_d = ref.tol(("d1", "v"), ref.d1["v"], U32) + FLOOR * U32 * s1
        chk.close("grad (float32) . v", g32 @ v, ref.d1["v"], tol_d + 8 * U32 * np.sum(np.abs(g32 * v)), ctx)
        chk.close("grad (float32) . v vs float64", g32 @ v, g64 @ v, tol_d + 8 * U32 * np.sum(np.abs(g32 * v)), ctx)
    chk.done()


# -- the public entry points ---------------------------------------------------------------------------

def _batch(points):
    """Points stacked along a leading batch axis, one array per argument."""
    return tuple(np.stack([np.asarray(p[k], dtype=np.float64) for p in points]) for k in range(len(points[0])))


def _assert_compiled(chk, public, what):
    """Every entry built for ``public`` ran Numba-compiled code (no Python execution path)."""
    entries = list(public.compiled._entries.values())
    if not entries:
        chk.failures.append(f"{what}: nothing was compiled")
    for e in entries:
        spec = e.fn.__globals__[spec_name(e.fn.__name__)]
        dispatchers = list(spec.kernels.values()) + list(spec.cores.values())
        if not all(isinstance(d, Dispatcher) for d in dispatchers) or not any(d.signatures for d in dispatchers):
            chk.failures.append(f"{what}: no Numba-compiled kernel ran ({dispatchers})")
    STATS["public_kernels"] = STATS.get("public_kernels", 0) + len(entries)


@settings(max_examples=EXAMPLES["public"])
@given(data=st.data())
def test_public_api(data):
    """The public entry points on a batch of 3 points (gufunc broadcasting; some arguments may be
    passed without the batch axis) and on single points, which must agree exactly, against mpmath.

    Scalar outputs: sg.jit, grad (random argnums: a subset, or one int), jvp, vjp, hvp, and one of
    value_and_grad / jacobian / hessian / grad nested in jit.  Vector outputs (signature
    "...->(k)"): sg.jit, jvp, vjp and jacobian, checked through a random weighting w . F."""
    vec = data.draw(st.booleans(), label="vectors")
    vout = vec  # the output is a vector when the program's last op gives one
    prog = data.draw(programs(vectors=vec, max_ops=5, vector_output=vout), label="program")
    note(prog.source())
    n, sig = prog.n_inputs, prog.signature
    points = data.draw(st.lists(point_strategy(prog), min_size=3, max_size=3), label="points")
    unbatched = data.draw(st.sets(st.integers(0, n - 1), max_size=n - 1), label="unbatched arguments")
    points = [tuple(points[0][k] if k in unbatched else p[k] for k in range(n)) for p in points]
    seed = data.draw(st.integers(0, 2**31), label="seed")
    register_program(prog)
    _bump("test_public_api")
    f, kw = prog.fn, dict(signature=sig, stabilize=False)
    nb, k_out = len(points), int(np.prod(prog.out_shape)) if prog.out_shape else 1
    allargs = tuple(range(n))
    rng = np.random.default_rng(seed)
    P = tuple(np.asarray(points[0][k], dtype=np.float64) if k in unbatched else arr
              for k, arr in enumerate(_batch(points)))
    flats = [flatten(p) for p in points]
    V = np.stack([rng.standard_normal(x.size) for x in flats])
    W = np.stack([rng.standard_normal(x.size) for x in flats])
    C = rng.choice([1.0, -0.5, 3.0], size=(nb,) + prog.out_shape)  # cotangents / output weights
    T = _batch([unflatten_np(prog, v) for v in V])
    scalar_out = prog.out_shape == ()
    if not scalar_out:
        count("public: vector-valued program (jit, jvp, vjp, jacobian)")
    if unbatched:
        count("public: some arguments passed without the batch axis")
    if scalar_out:
        sub = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1), label="argnums"))
        argnums = sub[0] if len(sub) == 1 and data.draw(st.booleans(), label="int argnums") else tuple(sub)
        extra = data.draw(st.sampled_from(["value_and_grad", "jacobian", "nested", "hessian"]), label="extra")
        if extra == "hessian" and not with_hessian(prog):
            extra = "jacobian"
    else:
        sub, argnums, extra = list(allargs), allargs, "jacobian"
    jit = sg.jit(f, **kw)
    publics = [("jit", jit)]
    if scalar_out:
        grad = sg.grad(f, argnums=argnums, **kw)
        publics.append(("grad", grad))
    if extra == "value_and_grad":
        publics.append((extra, sg.value_and_grad(f, argnums=allargs, **kw)))
    elif extra == "jacobian":
        publics.append((extra, sg.jacobian(f, argnums=allargs, **kw)))
    elif extra == "nested":
        inner = sg.grad(f, argnums=allargs, **kw)
        out_sig = sig.replace("->()", "->" + sig.split("->")[0])
        publics.append((extra, sg.jit(lambda *xs: inner(*xs), signature=out_sig, stabilize=False)))
    with timed("public API (compile and run)"):
        y = jit(*P)
        gs = grad(*P) if scalar_out else None
        extra_out = publics[-1][1](*P) if extra != "hessian" else None
        y2, ydot = sg.jvp(f, P, T, **kw)
        y3, vjp_fn = sg.vjp(f, *P, **kw)
        bars = vjp_fn(C)
        # per batch element cotangents: every argument given the batch axis (an argument passed
        # without it gets the sum of those over the batch, as jax.vjp gives; checked below)
        bars_full = sg.vjp(f, *_batch(points), **kw)[1](C) if unbatched else bars
        hv = sg.hvp(f, P, T, **kw) if scalar_out else None
        H = sg.hessian(f, argnums=allargs, **kw)(*P) if extra == "hessian" else None
    chk = Checker(prog, "public API vs mpmath")
    for what, pub in publics:
        _assert_compiled(chk, pub, what)
    chk.equal("jit output dtype", str(np.asarray(y).dtype), "float64")
    chk.equal("batched jit output shape", np.shape(y), (nb,) + prog.out_shape)
    for name, other in (("jvp primal", y2), ("vjp primal", y3)):
        chk.equal(f"{name} == jit", other, y)

    def rows(parts, shapes=None):
        """Per batch element, the parts flattened into one vector (a part may lack the batch axis)."""
        parts = parts if isinstance(parts, tuple) else (parts,)
        shapes = shapes or [prog.input_shapes[k] for k in range(len(parts))]
        out = []
        for b in range(nb):
            out.append(flatten([np.asarray(p)[b] if np.ndim(p) > len(s) else np.asarray(p)
                                for p, s in zip(parts, shapes)]))
        return np.stack(out)

    B = rows(bars_full)
    for k in sorted(unbatched):
        chk.equal(f"vjp cotangent of unbatched argument {k} has its shape", np.shape(bars[k]), np.shape(P[k]))
        summed = np.sum(np.asarray(bars_full[k]), axis=0)
        if not np.allclose(bars[k], summed, rtol=1e-13, atol=1e-300, equal_nan=True):
            chk.failures.append(f"vjp cotangent of unbatched argument {k}: got {bars[k]!r}, want the batch sum "
                                f"{summed!r}")
    mask = np.concatenate([np.full(int(np.prod(s)) if s else 1, k in sub) for k, s in enumerate(prog.input_shapes)])
    if scalar_out:
        gparts = gs if isinstance(gs, tuple) else (gs,)
        chk.equal("grad returns one value per argnum", len(gparts), 1 if isinstance(argnums, int) else len(sub))
        G = rows(gparts, [prog.input_shapes[k] for k in sub])
        HV = rows(hv if isinstance(hv, tuple) else (hv,))
    GX = None
    if extra == "value_and_grad":
        GX = rows(extra_out[1])
    elif extra == "nested":
        GX = rows(extra_out)
    elif extra == "jacobian" and scalar_out:
        GX = rows(extra_out)
    for b, point in enumerate(points):
        single = jit(*point)
        chk.equal(f"jit at a single point == batch element {b}", single, np.asarray(y)[b])
        if scalar_out:
            gsingle = grad(*point)
            chk.equal(f"grad at a single point == batch element {b}",
                      flatten(gsingle if isinstance(gsingle, tuple) else (gsingle,)), G[b])
        v, w = V[b], W[b]
        vs = np.where(mask, v, 0.0)
        c = C[b]
        weights = None if scalar_out else np.ravel(c)
        with timed("mpmath reference"):
            ref = reference(prog, point, {"v": v, "w": w, "vw": v + w, "vs": vs}, u=U64, seed=seed + b,
                            weights=weights, want_d2=scalar_out)
        if ref.near_switch:
            count("public: point skipped (branch switch within rounding reach)")
            continue
        ctx = f"at {point!r}"
        yb = np.ravel(np.asarray(y)[b])
        ydb = np.ravel(np.asarray(ydot)[b])
        cw = np.ravel(c) if not scalar_out else np.ones(1)
        if scalar_out:
            s1 = 1.0 + abs(ref.f) + float(np.abs(G[b]) @ np.abs(vs[mask]) + np.abs(B[b]) @ (np.abs(v) + np.abs(w)))
        else:
            s1 = 1.0 + abs(ref.f) + float(np.abs(B[b]) @ (np.abs(v) + np.abs(w)))
        tol_v = ref.tol(("d1", "v"), ref.d1["v"], U64) + FLOOR * U64 * s1
        fval = float(cw @ yb)
        chk.close("f" if scalar_out else "w . F", fval, ref.f,
                  ref.tol("f", ref.f, U64) + 8 * U64 * float(np.abs(cw) @ np.abs(yb)), ctx)
        jv = float(cw @ ydb)
        chk.close("jvp(v)" if scalar_out else "w . jvp(v)", jv, ref.d1["v"],
                  tol_v + 8 * U64 * float(np.abs(cw) @ np.abs(ydb)), ctx)
        cs = float(np.ravel(c)[0]) if scalar_out else 1.0  # scalar output: the cotangent scales F
        want = cs * ref.d1["v"]
        chk.close("vjp(c) . v", B[b] @ v, want, abs(cs) * tol_v + 8 * U64 * np.sum(np.abs(B[b] * v)), ctx)
        chk.close("dot-product test <c, Jv> vs <J^T c, v>", cs * jv, B[b] @ v,
                  2 * abs(cs) * tol_v + 8 * U64 * (np.sum(np.abs(B[b] * v)) + abs(cs * jv)), ctx)
        if extra == "value_and_grad":
            chk.close("value_and_grad value", np.asarray(extra_out[0])[b], ref.f, ref.tol("f", ref.f, U64), ctx)
        if GX is not None:
            chk.close(f"{extra} . v", GX[b] @ v, ref.d1["v"], _dot_tol(ref, ("d1", "v"), GX[b], v, U64, s1), ctx)
        if extra == "jacobian" and not scalar_out:
            J = [np.asarray(extra_out[k]) for k in range(n)]
            Jb = np.concatenate([(J[k][b] if k not in unbatched or J[k].ndim > len(prog.out_shape + prog.input_shapes[k])
                                  else J[k]).reshape(k_out, -1) for k in range(n)], axis=1)
            chk.close("w . jacobian . v", cw @ Jb @ v, ref.d1["v"],
                      tol_v + 8 * U64 * float(np.abs(cw) @ np.abs(Jb) @ np.abs(v)), ctx)
        if scalar_out:
            tol_vs = ref.tol(("d1", "vs"), ref.d1["vs"], U64) + FLOOR * U64 * s1
            chk.close(f"grad(argnums={argnums}) . v", G[b] @ vs[mask], ref.d1["vs"],
                      tol_vs + 8 * U64 * np.sum(np.abs(G[b] * vs[mask])), ctx)
            s2 = s1 + float(np.abs(HV[b]) @ (np.abs(v) + np.abs(w)))
            chk.close("v . hvp(v)", HV[b] @ v, ref.d2["v"], _dot_tol(ref, ("d2", "v"), HV[b], v, U64, s2), ctx)
        if H is not None:
            Hm = _hessian_matrix({f"hessian__d2_out_d_x{i}_d_x{j}": np.asarray(H[i][j])[b]
                                  for i in range(n) for j in range(n)}, prog)
            chk.close("v . H . v", v @ Hm @ v, ref.d2["v"],
                      _dot_tol(ref, ("d2", "v"), Hm @ v, v, U64, s2) + 8 * U64 * np.sum(np.abs(Hm * np.outer(v, v))), ctx)
    chk.done()


# -- the stabiliser ----------------------------------------------------------------------------------------

STAB_BUDGET = 0.25   # seconds per expression (the default is 2 s)
STAB_TIMEOUT = 120   # a stabilised compile that takes longer is a bug (the budget is per expression)


class _Timeout(BaseException):  # not an Exception: the stabiliser's `except Exception` must not swallow it
    pass


def _with_timeout(seconds, fn, *args):
    if sys.gettrace() is not None:
        # hypothesis traces every line while it explains a failure already found (sys.settrace on
        # Python < 3.12); pure-Python mpmath and SymPy then run ~20x slower, and a timeout here
        # would replace the real failure in the report
        return fn(*args)

    def handler(signum, frame):
        raise _Timeout(f"took more than {seconds} s")
    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        return fn(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@settings(max_examples=EXAMPLES["stabilised"])
@given(data=st.data())
def test_stabilised_vs_unstabilised(data):
    """The public jit and grad with the stabiliser (budget 0.25 s per expression) and without:
    both accurate against mpmath, hence close to each other; the stabilised compile finishes."""
    vec = data.draw(st.sampled_from([False, False, False, True]), label="vectors")
    prog = data.draw(programs(vectors=vec, max_ops=6), label="program")
    note(prog.source())
    points = data.draw(st.lists(point_strategy(prog), min_size=3, max_size=3), label="points")
    seed = data.draw(st.integers(0, 2**31), label="seed")
    register_program(prog)
    _bump("test_stabilised_vs_unstabilised")
    f, n, sig = prog.fn, prog.n_inputs, prog.signature
    P = _batch(points)
    res = {}
    with timed("stabilised compile (public API)"):
        for stab in (False, STAB_BUDGET):
            jit = sg.jit(f, signature=sig, stabilize=stab)
            grad = sg.grad(f, argnums=tuple(range(n)), signature=sig, stabilize=stab)
            res[stab] = _with_timeout(STAB_TIMEOUT, lambda: (jit(*P), grad(*P)))
    chk = Checker(prog, "stabilised vs unstabilised vs mpmath")
    rng = np.random.default_rng(seed)
    for b, point in enumerate(points):
        flat = flatten(point)
        v = rng.standard_normal(flat.size)
        with timed("mpmath reference"):
            ref = reference(prog, point, {"v": v}, u=U64, seed=seed + b, want_d2=False)
        if ref.near_switch:
            count("stabilised: point skipped (branch switch within rounding reach)")
            continue
        ctx = f"at {point!r}"
        tol_f = ref.tol("f", ref.f, U64)
        ys, gs = {}, {}
        for stab, (y, g) in res.items():
            tag = "stabilised" if stab else "unstabilised"
            ys[stab] = np.asarray(y)[b]
            gs[stab] = np.stack([flatten([np.asarray(p)[b] for p in g])])[0] @ v
            g_abs = np.abs(flatten([np.asarray(p)[b] for p in g]))
            s1 = 1.0 + abs(ref.f) + float(g_abs @ np.abs(v))
            chk.close(f"f ({tag})", ys[stab], ref.f, tol_f, ctx)
            chk.close(f"grad . v ({tag})", gs[stab], ref.d1["v"],
                      ref.tol(("d1", "v"), ref.d1["v"], U64) + 8 * U64 * float(g_abs @ np.abs(v))
                      + FLOOR * U64 * s1, ctx)
        chk.close("f stabilised vs unstabilised", ys[STAB_BUDGET], ys[False], 2 * tol_f, ctx)
    chk.done()


# -- ahead-of-time modules (`symgrad compile`) ----------------------------------------------------------

_AOT_EVAL = r"""
import sys, json
for m in ("sympy", "symgrad"):
    sys.modules[m] = None
sys.path.insert(0, FOLDER)
import importlib
import numpy as np
out = {}
for name, P, T, C, hess in JOBS:
    m = importlib.import_module(name + "_aot")
    P = [np.array(p) for p in P]
    T = [np.array(t) for t in T]
    C = np.array(C)
    def flat(r):
        r = r if isinstance(r, tuple) else (r,)
        return [np.asarray(a).tolist() for a in r]
    res = {"jit": flat(getattr(m, name)(*P)), "grad": flat(getattr(m, name + "_grad")(*P)),
           "jvp": flat(getattr(m, name + "_jvp")(*P, *T)), "vjp": flat(getattr(m, name + "_vjp")(*P, C))}
    if hess:
        res["hessian"] = flat(getattr(m, name + "_hessian")(*P))
    res["grad32"] = flat(getattr(m, name + "_grad")(*[p.astype(np.float32) for p in P]))
    res["grad32_dtype"] = str(np.asarray(getattr(m, name + "_grad")(*[p.astype(np.float32) for p in P])
                              if len(P) == 1 else getattr(m, name + "_grad")(*[p.astype(np.float32) for p in P])[0]).dtype)
    res["mods"] = sorted(k for k, v in sys.modules.items() if v is not None and k.split(".")[0] in ("sympy", "symgrad"))
    out[name] = res
print(json.dumps(out))
"""


def _flat_list(r):
    r = r if isinstance(r, tuple) else (r,)
    return [np.asarray(a) for a in r]


@settings(max_examples=EXAMPLES["aot"])
@given(data=st.data())
def test_aot_module_vs_jit(data, tmp_path_factory):
    """Modules written by the `symgrad compile` CLI (f, grad, jvp, vjp, Hessian; float64 and
    float32) for several programs, imported without SymPy and symgrad in a fresh interpreter,
    give results bitwise identical to the JIT path (stabilize=False in both)."""
    progs = data.draw(st.lists(programs(max_ops=5, vectors=False), min_size=2, max_size=2)
                      .flatmap(lambda ps: st.tuples(st.just(ps), programs(max_ops=4, vectors=True, max_inputs=2))),
                      label="programs")
    progs = list({p.name: p for p in progs[0] + [progs[1]]}.values())
    folder = tmp_path_factory.mktemp("aot")
    jobs, expected = [], {}
    rng = np.random.default_rng(0)
    for prog in progs:
        note(prog.source())
        points = data.draw(st.lists(point_strategy(prog), min_size=3, max_size=3), label=f"points {prog.name}")
        register_program(prog)
        path = folder / f"{prog.name}_src.py"
        path.write_text("import numpy as np\n\n\n" + prog.source())
        with timed("aot: symgrad compile CLI"):
            r = subprocess.run([sys.executable, "-m", "symgrad", "compile", f"{path}:{prog.name}", "--grad", "--jvp",
                                "--vjp", "--hessian", "--no-stabilize", "--signature", prog.signature,
                                "-o", str(folder / f"{prog.name}_aot.py")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        P = _batch(points)
        T = _batch([unflatten_np(prog, rng.standard_normal(flatten(p).size)) for p in points])
        C = rng.standard_normal(len(points))
        hess = with_hessian(prog)
        jobs.append((prog.name, [p.tolist() for p in P], [t.tolist() for t in T], C.tolist(), hess))
        f, n, kw = prog.fn, prog.n_inputs, dict(signature=prog.signature, stabilize=False)
        with timed("aot: JIT path"):
            _, vjp_fn = sg.vjp(f, *P, **kw)
            exp = {"jit": _flat_list(sg.jit(f, **kw)(*P)),
                   "grad": _flat_list(sg.grad(f, argnums=tuple(range(n)), **kw)(*P)),
                   "jvp": _flat_list(sg.jvp(f, P, T, **kw)), "vjp": _flat_list(vjp_fn(C)),
                   "grad32": _flat_list(sg.grad(f, argnums=tuple(range(n)), **kw)(*[p.astype(np.float32) for p in P]))}
            if hess:
                H = sg.hessian(f, argnums=tuple(range(n)), **kw)(*P)
                exp["hessian"] = [np.asarray(H[i][j]) for i in range(n) for j in range(n)]
        expected[prog.name] = exp
    code = f"FOLDER = {str(folder)!r}\nJOBS = {jobs!r}\n" + _AOT_EVAL
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with timed("aot: standalone modules (subprocess)"):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=folder,
                           timeout=900)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    _bump("test_aot_module_vs_jit")
    STATS["aot_programs"] = STATS.get("aot_programs", 0) + len(progs)
    for prog in progs:
        res, exp = got[prog.name], expected[prog.name]
        assert res["mods"] == [], f"the AOT module imported {res['mods']}"
        assert res["grad32_dtype"] == "float32"
        for kind, arrays in exp.items():
            assert len(res[kind]) == len(arrays), (prog.name, kind)
            for a, b in zip(res[kind], arrays):
                np.testing.assert_array_equal(np.asarray(a, dtype=b.dtype), b,
                                              err_msg=f"{kind} of\n{prog.source()}")
