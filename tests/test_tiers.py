"""The interpreter and native tiers (issue 15 points 2 and 3): the compiled module's values, bit for bit.

Random programs (the property-test generator, :mod:`tests.property.strategies`) are traced,
differentiated in every mode (jit, grad, jvp, vjp, hvp, hessian: one combined kernel),
stabilised, then run on the three tiers (generated Numba module, interpreter, native code from
LLVM IR) in float64 and float32 at random points.  Results must be identical bits (signed zeros
and NaNs included).  The public API's tiered path is checked too: first calls answer from the
interpreter while LLVM compiles the native code in a thread, then the native code takes over
with the same values, and the generated module, when asked for, gives them too.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import symgrad as sg
from symgrad.api.build import build_kernel
from symgrad.api.stabilize_pass import stabilize_kernel
from symgrad.compile.cache import cache_key, load_module
from symgrad.compile.interpreter import tape_spec
from symgrad.compile.native import native_spec
from symgrad.emit.module import KernelDef, emit_module
from symgrad.emit.printer import KernelIO
from symgrad.emit.tape import build_tape, kernel_tape
from symgrad.ir.ops import REGISTRY
from symgrad.ir.ddprogram import OP_NAME as DD_REGION
from symgrad.runtime.gufunc import gufunc_call
from symgrad.trace.trace import trace_program

from .property.strategies import BOXES, programs
from .test_buildtime import make_mlp

KINDS = ("jit", "grad", "jvp", "vjp", "hvp", "hessian")


def _both_tiers(program, stabilize: bool):
    p = trace_program(program.fn, program.example_args(), [tuple(s) for s in program.input_shapes])
    wrt = list(range(len(p.inputs)))
    ins, outs, seen = [], [], set()
    for kind in KINDS:
        k = build_kernel(p, kind, wrt).kernel
        for a in k.args:
            if a.node not in seen:
                seen.add(a.node)
                ins.append(KernelIO(a.name, a.node, a.shape))
        outs += [KernelIO(f"{kind}__{o.name}", o.node, o.shape) for o in k.outputs]
    kd = KernelDef(f"{p.name}_tiers", "tier test kernel", ins, outs)
    if stabilize:
        stabilize_kernel(p.graph, kd, 0.25)
    tape = kernel_tape(p.graph, kd)
    if tape is None and any(p.graph[n].op == DD_REGION for n in p.graph.ancestors([o.node for o in kd.outputs])):
        pytest.skip("the stabiliser chose a double-double region with hypot: no tape, "
                    "the program waits for Numba")
    assert tape is not None, "every op the generator draws has a tape lowering"
    key = cache_key(p.fingerprint(), "tier-test", stabilize)
    module = load_module(kd.name, key, emit_module(p.graph, [kd], ["tier test"]))
    return getattr(module, kd.name), (tape_spec(kd.name, tape), native_spec(kd.name, tape, key)), kd


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))))


def _points(program, ins, rng, n=7):
    """``n`` points per input (batched), in each program input's box; tangents/cotangents normal."""
    args = []
    for k, io in enumerate(ins):
        if k < program.n_inputs:
            box = BOXES[program.notes[k]]
            args.append(rng.uniform(box.lo, box.hi, (n,) + tuple(io.shape)))
        else:
            args.append(rng.standard_normal((n,) + tuple(io.shape)))
    return args


def _check(program, stabilize, seed):
    compiled, specs, kd = _both_tiers(program, stabilize)
    rng = np.random.default_rng(seed)
    args = _points(program, kd.args, rng)
    for dtype in ("float64", "float32"):
        xs = [a.astype(dtype) for a in args]
        want = compiled(*xs)
        for tier, spec in zip(("interpreter", "native"), specs):
            got = gufunc_call(spec, tuple(xs))
            want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
            for name, w, g in zip([o.name for o in kd.outputs], want, got):
                assert _same_bits(w, g), f"{dtype} {name}: compiled {w!r} {tier} {g!r}\n{program.source()}"


_SETTINGS = dict(deadline=None, derandomize=True, database=None)  # each example compiles a Numba module


@settings(max_examples=3, **_SETTINGS)  # ~2 s each
@given(programs(max_ops=8), st.integers(0, 2**31 - 1))
def test_random_scalar_programs_bit_identical(program, seed):
    _check(program, stabilize=False, seed=seed)


# ~10 s per example (array kernels on every tier); fixed array programs (MLP, Jacobian, Hessian) run by default below
@pytest.mark.slow
@settings(max_examples=2, **_SETTINGS)
@given(programs(max_ops=6, vectors=True), st.integers(0, 2**31 - 1))
def test_random_vector_programs_bit_identical(program, seed):
    _check(program, stabilize=False, seed=seed)


@settings(max_examples=6, **_SETTINGS)
@given(programs(max_ops=6), st.integers(0, 2**31 - 1))
def test_random_stabilised_programs_bit_identical(program, seed):
    """Stable rewrites bring regimes (conditional expressions) and helpers (_sigmoid, _softplus)."""
    _check(program, stabilize=True, seed=seed)


_SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 1e-310, -1e-310, 1e300, -1e300, 700.0, -750.0,
                     np.inf, -np.inf, np.nan, 1e-8, 0.9999999, 30.0, -30.0])


def _all_ops_program(x, y, n):
    """Every elementwise op applied to ``x`` (and ``y``; ``n`` for an integer order and for an argument
    without a derivative rule, ``OpDef.constant_args``: ``n`` is not differentiated)."""
    out = []
    for name in ELEMENTWISE:
        op = REGISTRY[name]
        args = [n if d == "order" or k in op.constant_args else (x if k == 0 else y)
                for k, d in enumerate(op.domain)]
        out.append(x.ctx.apply(name, *args))
    return tuple(out)


# (a double-double region is not a user op: it has a program parameter and no opcode; the tape
# expands it, test_double_double_regions_run_on_the_tape_bit_identical below)
ELEMENTWISE = sorted(n for n, op in REGISTRY.items()
                     if op.elementwise and op.domain and "bool" not in op.domain and n != DD_REGION
                     and not (op.nondiff and (op.infix or n.startswith("logical_"))))


def test_every_elementwise_op_bit_identical_including_special_values():
    """Each op's value and JVP on both tiers, at ordinary points and at +-0, subnormals, huge values,
    +-inf and NaN (outside an op's domain both tiers must give the same NaN or inf)."""
    _every_elementwise_op_bit_identical()


@pytest.mark.slow
def test_every_elementwise_op_bit_identical_with_vecmath(monkeypatch):
    """The same with ``SYMGRAD_VECMATH=1``: kernels inline the vecmath helpers (exp ... sin, cos), the
    interpreter calls them as ``_vm_*_call`` functions (one minute: the interpreter module is compiled
    with every helper)."""
    monkeypatch.setenv("SYMGRAD_VECMATH", "1")
    _every_elementwise_op_bit_identical()


def _every_elementwise_op_bit_identical():
    p = trace_program(_all_ops_program, (0.0, 0.0, 0.0), [(), (), ()])
    wrt = [0, 1]
    jit = build_kernel(p, "jit", wrt).kernel
    jvp = build_kernel(p, "jvp", wrt).kernel
    outs = [*jit.outputs, *[KernelIO(f"d_{o.name}", o.node, o.shape) for o in jvp.outputs]]
    kd = KernelDef("tier_all_ops", "tier test: every elementwise op", list(jvp.args), outs)
    tape = build_tape(p.graph, kd.args, kd.outputs)
    assert tape is not None
    module = load_module(kd.name, cache_key(p.fingerprint(), "tier-op-test"), emit_module(p.graph, [kd], ["t"]))
    rng = np.random.default_rng(0)
    base = np.concatenate([_SPECIAL, rng.uniform(-4, 4, 30)])
    x, y = np.meshgrid(base, rng.permutation(base))
    cols = [x.ravel(), y.ravel(), rng.integers(0, 4, x.size).astype(float)]
    cols += [rng.standard_normal(x.size) for _ in kd.args[3:]]  # tangents (n's tangent included)
    specs = {"interpreter": tape_spec(kd.name, tape),
             "native": native_spec(kd.name, tape, cache_key(p.fingerprint(), "tier-op-test"))}
    names = [f"{n}" for n in ELEMENTWISE] + [f"d {n}" for n in ELEMENTWISE]
    for dtype in ("float64", "float32"):
        for tier, spec in specs.items():
            with np.errstate(all="ignore"):
                xs = [c.astype(dtype) for c in cols]
                want = getattr(module, kd.name)(*xs)
                got = gufunc_call(spec, tuple(xs))
            for w, g, name in zip(want, got, names):
                bad = ~(np.isnan(w) & np.isnan(g) | ((w == g) & (np.signbit(w) == np.signbit(g))))
                assert not bad.any(), (f"{name} {dtype} at x={xs[0][bad][:3]}, y={xs[1][bad][:3]}: compiled "
                                       f"{w[bad][:3]} {tier} {g[bad][:3]}")


def test_double_double_regions_run_on_the_tape_bit_identical():
    """Double-double regions of arithmetic (sums that cancel, products, quotients, integer powers,
    constants with a low part) lower to tape instructions that repeat symgrad.ir.ddmath operation
    by operation: the interpreter and native tiers give the helper's float64 bits, and the float32
    tape the plain formula the float32 kernel prints; special values and the splitting limit
    (|a| > 2^996) included.  A region with hypot (four operands) has no tape."""
    import sympy as sp

    from symgrad.ir.from_sympy import from_sympy
    from symgrad.ir.graph import Graph
    from symgrad.ir.sympy_funcs import dd

    a, b, c = sp.symbols("a b c", real=True)
    regions = [a + b + c - a * b, a * b - c * c + sp.Rational(1, 3), (a - b) / (c + 2) - a / 3,
               (a + b) ** 3 - c ** -2, -(a * a) + b ** 2 * c, a / b + b / a - 2,
               sp.Max(a, b, c) * sp.Min(a, b) - a * b + sp.Min(b, c) / 3]  # maximum/minimum: selections, NaN first
    g = Graph()
    leaves = {s: g.input(s.name, ()) for s in (a, b, c)}
    outs = [KernelIO(f"r{k}", from_sympy(g, dd(u), leaves), ()) for k, u in enumerate(regions)]
    assert all(g[o.node].op == DD_REGION for o in outs)
    ins = [KernelIO(s.name, leaves[s], ()) for s in (a, b, c)]
    kd = KernelDef("tier_dd", "tier test: double-double regions", ins, outs)
    tape = kernel_tape(g, kd)
    assert tape is not None and tape.double_double and tape.float32 is not None
    key = cache_key(g.fingerprint([o.node for o in outs]), "tier-dd-test")
    module = load_module(kd.name, key, emit_module(g, [kd], ["t"]))
    rng = np.random.default_rng(5)
    base = np.concatenate([_SPECIAL, [6.7e299, -6.7e299, 1e308], rng.uniform(-3, 3, 20)])
    grid = np.meshgrid(base, rng.permutation(base), rng.permutation(base))
    cols = [v.ravel() for v in grid]
    near = rng.uniform(-2, 2, 200)  # cancelling points: b close to a, c close to -(a + b - a b)
    cols = [np.concatenate([cols[0], near]), np.concatenate([cols[1], near * (1 + 1e-12)]),
            np.concatenate([cols[2], -(near + near * (1 + 1e-12) - near * near * (1 + 1e-12))])]
    _assert_tiers_give_the_compiled_bits(module, kd, tape, key, cols, regions)
    with np.errstate(all="ignore"):  # and the double-double values are the accurate ones
        from symgrad.ir.ddprogram import run
        r0 = module.tier_dd(*[col[-200:] for col in cols])[0]
        program = g[outs[0].node].params[0]
        np.testing.assert_array_equal(r0, [run(program, *p) for p in zip(*[col[-200:] for col in cols])])
    x, y = sp.symbols("x y", real=True)
    xi, yi = g.input("x", ()), g.input("y", ())
    with_hypot = from_sympy(g, dd(1 / _hypot(x, y)), {x: xi, y: yi})
    assert build_tape(g, [KernelIO("x", xi, ()), KernelIO("y", yi, ())], [KernelIO("out", with_hypot, ())]) is None


def _hypot(a, b):
    from symgrad.ir.sympy_funcs import hypot

    return hypot(a, b)


@pytest.mark.slow  # 19 s (CI time); the dd arithmetic regions above run on every tier by default
def test_regions_with_functions_and_first_order_tails_run_on_the_tape_bit_identical():
    """Regions holding dd functions (exp, log1p, sqrt, tanh, erfc, sin ...) and ddt regions (functions with
    first-order tails, an error bound, and the same program with dd functions where the bound
    shows cancellation): the interpreter and native tiers give the compiled helper's bits, at
    cancelling points (next to x + e^x + 1 = 0, where a ddt region recomputes), ordinary ones
    and special values, so a kernel with such a region answers from the tape while Numba
    compiles."""
    import sympy as sp

    from symgrad.ir.from_sympy import from_sympy
    from symgrad.ir.graph import Graph
    from symgrad.ir.sympy_funcs import dd, ddt, expm1, log1p

    a, b = sp.symbols("a b", real=True)
    regions = [dd(a + sp.exp(a) + 1), ddt(a + sp.exp(a) + 1), ddt(sp.exp(-a / b) * expm1(a * (b - a) / (a * b))),
               dd(sp.log(a * a + 1) - log1p(b * b)), ddt(sp.log(a * a + 1) - log1p(b * b) + sp.sqrt(a * a + b * b)),
               ddt(a ** 3 / (sp.exp(b) - 1)), dd(sp.sinh(a) - a * sp.cosh(b) + a ** 2 * sp.tanh(b) / 3),
               dd(sp.erfc(-a / sp.sqrt(2)) / 2 + a * sp.exp(-a ** 2 / 2) / sp.sqrt(2 * sp.pi) - sp.erf(b) / 7),
               dd(sp.sin(a) - a * sp.cos(b))]
    g = Graph()
    leaves = {s: g.input(s.name, ()) for s in (a, b)}
    outs = [KernelIO(f"r{k}", from_sympy(g, u, leaves), ()) for k, u in enumerate(regions)]
    assert all(g[o.node].op == DD_REGION for o in outs)
    ins = [KernelIO(s.name, leaves[s], ()) for s in (a, b)]
    kd = KernelDef("tier_ddf", "tier test: regions with functions", ins, outs)
    tape = kernel_tape(g, kd)
    assert tape is not None and tape.double_double
    key = cache_key(g.fingerprint([o.node for o in outs]), "tier-ddf-test")
    module = load_module(kd.name, key, emit_module(g, [kd], ["t"]))
    rng = np.random.default_rng(7)
    base = np.concatenate([_SPECIAL, rng.uniform(-5, 5, 12)])
    grid = np.meshgrid(base, rng.permutation(base))
    root = -1.2784645427610738 + np.linspace(-1e-9, 1e-9, 60)
    cols = [np.concatenate([grid[0].ravel(), root]), np.concatenate([grid[1].ravel(), rng.uniform(0.5, 3, 60)])]
    _assert_tiers_give_the_compiled_bits(module, kd, tape, key, cols, regions)


def _assert_tiers_give_the_compiled_bits(module, kd, tape, key, cols, regions):
    """The interpreter and native tiers give the compiled module's bits for every output, in
    float64 and float32, at the rows of ``cols`` (one array per input)."""
    specs = {"interpreter": tape_spec(kd.name, tape), "native": native_spec(kd.name, tape, key)}
    for dtype in ("float64", "float32"):
        with np.errstate(all="ignore"):
            xs = [col.astype(dtype) for col in cols]
            want = getattr(module, kd.name)(*xs)
            for tier, spec in specs.items():
                got = gufunc_call(spec, tuple(xs))
                for k, (w, gv) in enumerate(zip(want, got)):
                    bad = ~((w == gv) | (np.isnan(w) & np.isnan(gv)))
                    assert _same_bits(w, gv), (f"region {regions[k]} {dtype} {tier}: at "
                                               f"{[x[bad][:3] for x in xs]} compiled {w[bad][:3]} tape {gv[bad][:3]}")


def test_public_api_answers_from_the_interpreter_then_native_code_then_the_module():
    loss, grad_ref, n = make_mlp(6, 5)
    g = sg.grad(loss, signature="(n)->()", tiered=True)
    p = np.random.default_rng(3).standard_normal(n) * 0.5
    first = g(p)
    entry = next(iter(g.compiled._entries.values()))
    np.testing.assert_allclose(first, grad_ref(p), rtol=1e-12, atol=1e-14)
    assert "def mlp_loss_grad_f64" in g.source(p)  # the source is there before the compile ends
    P = np.random.default_rng(4).standard_normal((5, n))
    batch_interp = g(P)  # batches and float32 on the interpreter (or already compiled: same bits)
    f32_interp = g(P.astype(np.float32))
    g.wait_compiled()
    assert entry.tier == "native"
    for _ in range(2):  # native code, then the generated Numba module (compiled on request)
        assert _same_bits(g(p), first)
        assert _same_bits(g(P), batch_interp)
        assert _same_bits(g(P.astype(np.float32)), f32_interp)
        entry.promote(wait=True, module=True)
        assert entry.tier == "compiled"
    assert f32_interp.dtype == np.float32


def test_tiered_jacobian_hessian_and_value_and_grad_match_the_compiled_tier():
    def f(x):
        return np.array([np.sin(x[0]) * x[1], np.exp(x[1] - x[2]), x[0] * x[1] * x[2]])

    def s(x):
        return np.sum(np.log1p(np.exp(x))) + x[0] * x[2]

    x = np.array([0.3, -1.2, 2.0])
    for make, fn in ((sg.jacobian, f), (sg.hessian, s), (sg.value_and_grad, s)):
        tiered = make(fn, tiered=True)
        direct = make(fn, tiered=False)
        got, want = tiered(x), direct(x)
        for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert _same_bits(np.asarray(a), np.asarray(b))
        tiered.wait_compiled()


def test_tiered_false_and_environment_compile_in_the_calling_thread(monkeypatch):
    loss, _, n = make_mlp(2, 2)
    g = sg.grad(loss, signature="(n)->()", tiered=False)
    g(np.zeros(n))
    assert next(iter(g.compiled._entries.values())).tier == "compiled"
    monkeypatch.setenv("SYMGRAD_TIERED", "0")
    loss, _, n = make_mlp(3, 2)
    g = sg.grad(loss, signature="(n)->()")
    g(np.zeros(n))
    assert next(iter(g.compiled._entries.values())).tiered is None


def test_a_failed_native_compile_falls_back_on_the_module():
    from symgrad.compile import native

    loss, grad_ref, n = make_mlp(2, 3, seed=8)
    p = np.linspace(-1, 1, n)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(native, "native_spec", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("simulated LLVM crash")))
        g = sg.grad(loss, signature="(n)->()", tiered=True)
        first = g(p)
        entry = next(iter(g.compiled._entries.values()))
        entry.tiered.native.wait()
        g.wait_compiled()  # the native compile failed: waits for the module instead
    assert entry.tier == "compiled"
    assert _same_bits(g(p), first)


def test_a_failed_background_compile_warns_and_keeps_answering(monkeypatch):
    from symgrad.compile import background, native

    def broken(*args, **kwargs):
        raise RuntimeError("simulated compiler crash")

    monkeypatch.setattr(background, "_compile_in_child", broken)
    monkeypatch.setattr(native, "native_spec", broken)
    loss, grad_ref, n = make_mlp(2, 3, seed=7)
    g = sg.grad(loss, signature="(n)->()", tiered=True)
    p = np.linspace(-1, 1, n)
    g(p)
    entry = next(iter(g.compiled._entries.values()))
    entry.tiered.native.wait()
    entry.tiered.module_job().wait()
    with pytest.warns(sg.SymgradWarning, match="simulated compiler crash"):
        value = g(p)
    np.testing.assert_allclose(value, grad_ref(p), rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="could not compile"):
        g.wait_compiled()


def test_programs_the_tape_cannot_lower_wait_for_the_compiled_tier():
    """A linear-algebra op has no tape lowering: the build compiles as before."""
    def logdet(a):
        return np.linalg.slogdet(a)[1]

    g = sg.grad(logdet, tiered=True)
    a = np.array([[2.0, 0.3], [0.1, 1.5]])
    np.testing.assert_allclose(g(a), np.linalg.inv(a).T, rtol=1e-12)
    assert next(iter(g.compiled._entries.values())).tiered is None


def test_collected_native_kernels_are_disposed_at_the_next_compile_engine_first(monkeypatch):
    """Native kernels collected by ``gc.collect()`` in a reference cycle keep their llvmlite engine and
    context alive until the next native compile, which closes each engine, then its context, under
    the module's lock.  Left to the collector, a context could be disposed first and the engine's own
    disposal then freed a module of a freed context: a segfault inside ``gc.collect()`` (seen once in
    a test run, while a background thread compiled)."""
    import gc

    import llvmlite.binding as llvm

    from symgrad.compile import native

    closed = []
    for cls in (llvm.ExecutionEngine, llvm.context.ContextRef):
        close = cls.close
        monkeypatch.setattr(cls, "close", lambda self, close=close: (closed.append(id(self)), close(self))[1])
    p = trace_program(lambda x: np.sin(x) * x + 1.0, [np.float64(0.5)], [()])
    kd = build_kernel(p, "jit", [0]).kernel
    tape = kernel_tape(p.graph, kd)
    x, out = np.linspace(0, 1, 4), np.empty(4)
    made = []
    for k in range(3):
        kern = native.native_kernel(tape, kd.name, "float64", cache_key("gc-cycle-test", k))
        kern(x, out)
        np.testing.assert_array_equal(out, np.sin(x) * x + 1.0)
        made.append((id(kern._engine), id(kern._context)))
        kern.cycle = kern  # garbage only the cycle collector finds
        del kern
    with native._LLVM_LOCK:  # no compile in another thread (a tiered background one) disposes meanwhile
        del closed[:]
        gc.collect()
        assert not any(i in closed for pair in made for i in pair), "disposed of inside the collector"
        assert {tuple(map(id, r)) for r in native._RETIRED} >= set(made)
    native.native_kernel(tape, kd.name, "float64", cache_key("gc-cycle-test", 3))(x, out)  # disposes of them
    for engine, context in made:
        assert engine in closed and context in closed and closed.index(engine) < closed.index(context)
