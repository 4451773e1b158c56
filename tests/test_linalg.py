"""numpy.linalg on core matrices: det, slogdet, inv, solve, cholesky, eigh, lstsq and norm.

References: JAX in x64 (values, JVP, VJP, Jacobians, Hessians), mpmath at 50 digits
(directional derivatives by ``mpmath.diff``), NumPy (values), the identity
<w, J v> = <J^T w, v>, and central differences.

Most derivative checks run on the traced graph evaluated with NumPy (the ops' reference
implementations), which tests the *rules* at first and second order and with the tangent
batch axis of Jacobian passes, without compiling.  A few tests compile: every op in one
program (values in float64 and float32, a batched VJP), the norms at their kinks, and the
Gaussian log-likelihood example (gradient and Hessian, batched).
"""
import importlib.util
from pathlib import Path

import mpmath
import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.interpret import evaluate
from symgrad.trace.trace import trace_program
from symgrad.transforms import hessian_nodes, jvp_nodes, vjp_nodes
from symgrad.transforms.higher import jacobian_fwd, jacobian_rev

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

N = 3
SIG = "(n,n),(n,n),(n,k),(n),(m,n)->(p)"


def _all_ops(xp):
    """Every linalg op in one program: A general, S symmetric positive definite, T tall."""
    la = xp.linalg

    def all_ops(A, S, B, b, T):
        sign, logabs = la.slogdet(A)
        w, V = la.eigh(S)
        outs = [xp.reshape(la.det(A), (1,)), xp.reshape(sign * logabs, (1,)), xp.ravel(la.inv(A)),
                xp.ravel(la.solve(A, B)), la.solve(A, b), xp.ravel(la.cholesky(S)), w,
                xp.ravel(V ** 2),                           # eigenvectors up to sign
                xp.ravel((V * xp.sin(w)) @ V.T),            # a matrix function sin(S)
                la.lstsq(T, T @ b + 0.1 * xp.sin(T[:, 0]), rcond=None)[0],
                xp.ravel(la.lstsq(T, xp.cos(T[:, :2]), rcond=None)[0])]
        return xp.concatenate(outs)
    return all_ops


all_ops, all_ops_jax = _all_ops(np), _all_ops(jnp)


def _args(seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((N, N))
    return (rng.standard_normal((N, N)) + 3.0 * np.eye(N), m @ m.T + N * np.eye(N),
            rng.standard_normal((N, 2)), rng.standard_normal(N), rng.standard_normal((5, N)))


def _sym_tangents(rng, args):
    """Random tangents; the one for S is symmetric (cholesky/eigh read its lower triangle)."""
    tans = [rng.standard_normal(np.shape(a)) for a in args]
    tans[1] = tans[1] + tans[1].T
    return tuple(tans)


class Graph:
    """A function traced once; derivative graphs built by the transforms, evaluated with NumPy."""

    def __init__(self, fn, args):
        self.args = args
        self.p = trace_program(fn, args, [np.shape(a) for a in args])
        self.g = self.p.graph
        self.env = dict(zip(self.p.inputs, args))

    def const(self, value):
        return self.g.const(value)

    def eval(self, nodes, extra=None):
        return evaluate(self.g, nodes, {**self.env, **(extra or {})})

    def jvp(self, tangents):
        t = jvp_nodes(self.g, self.p.inputs, [self.const(v) for v in tangents], self.p.outputs)
        return self.eval([self.p.outputs[0], t[0]])

    def vjp(self, w):
        bars = vjp_nodes(self.g, self.p.outputs, [self.const(w)], self.p.inputs)
        return self.eval(bars)


@pytest.fixture(scope="module")
def graph():
    return Graph(all_ops, _args())


# -- derivative rules on the graph (no compilation) ------------------------------------------------------

@pytest.fixture(scope="module")
def jax_jacobian(graph):
    """JAX's Jacobian blocks of ``all_ops`` (one compiled JAX program serves every reference)."""
    return [np.asarray(b) for b in jax.jit(jax.jacobian(all_ops_jax, argnums=(0, 1, 2, 3, 4)))(*graph.args)]


def _apply(jac, tans):
    return sum(np.tensordot(b, t, axes=np.ndim(t)) for b, t in zip(jac, tans))


def test_values_match_numpy_and_jax(graph):
    (out,) = graph.eval(graph.p.outputs)
    np.testing.assert_allclose(out, all_ops(*graph.args), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(out, jax.jit(all_ops_jax)(*graph.args), rtol=1e-12, atol=1e-13)


def test_jvp_and_vjp_match_jax(graph, jax_jacobian):
    rng = np.random.default_rng(1)
    tans = _sym_tangents(rng, graph.args)
    _, jv = graph.jvp(tans)
    np.testing.assert_allclose(jv, _apply(jax_jacobian, tans), rtol=1e-11, atol=1e-12)
    w = rng.standard_normal(jv.shape)
    bars = graph.vjp(w)
    for k, (got, block) in enumerate(zip(bars, jax_jacobian)):
        ref = np.tensordot(w, block, axes=1)
        if k == 1:  # JAX, like symgrad, differentiates S as symmetric: compare the symmetric parts
            got, ref = got + got.T, ref + ref.T
        np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-12)


def test_dot_product_identity(graph):
    """<w, J v> = <J^T w, v> with symmetric v for S (the cotangent of S is symmetric)."""
    rng = np.random.default_rng(2)
    tans = _sym_tangents(rng, graph.args)
    _, jv = graph.jvp(tans)
    w = rng.standard_normal(jv.shape)
    bars = graph.vjp(w)
    lhs, rhs = float(w @ jv), sum(float(np.sum(b * t)) for b, t in zip(bars, tans))
    assert abs(lhs - rhs) <= 1e-12 * (abs(lhs) + np.linalg.norm(w) * np.linalg.norm(jv))
    np.testing.assert_allclose(bars[1], bars[1].T, rtol=1e-12, atol=1e-14)


def test_jvp_matches_central_difference(graph):
    rng = np.random.default_rng(3)
    tans = _sym_tangents(rng, graph.args)
    h = 1e-6
    plus = all_ops(*[a + h * t for a, t in zip(graph.args, tans)])
    minus = all_ops(*[a - h * t for a, t in zip(graph.args, tans)])
    _, jv = graph.jvp(tans)
    np.testing.assert_allclose(jv, (plus - minus) / (2 * h), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_jacobian_with_batched_tangents_matches_jax(graph, jax_jacobian, mode):
    """Jacobians push an identity seed with one leading batch axis through every rule (nb = 1)."""
    jac = jacobian_fwd if mode == "fwd" else jacobian_rev
    blocks = jac(graph.g, graph.p.inputs, graph.p.outputs)[0]
    got = graph.eval(blocks)
    ref = jax_jacobian
    sym = ref[1] + np.swapaxes(ref[1], -1, -2)  # JAX, like symgrad, differentiates S as symmetric:
    np.testing.assert_allclose(got[1] + np.swapaxes(got[1], -1, -2), sym, rtol=1e-11, atol=1e-12)
    for k in (0, 2, 3, 4):
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-11, atol=1e-12)


def _scalar_all(xp):
    ops = _all_ops(xp)

    def scalar(A, S, B, b, T):
        return xp.sum(xp.sin(ops(A, S, B, b, T)))
    return scalar


def test_hessian_forward_over_reverse_matches_difference_of_gradients():
    """Second-order rules (the batched JVP of every VJP rule): H v against a central difference of
    the gradient graph (itself checked against JAX above)."""
    args = _args(4)
    gr = Graph(_scalar_all(np), args)
    grads = vjp_nodes(gr.g, gr.p.outputs, [gr.const(1.0)], gr.p.inputs)
    blocks = hessian_nodes(gr.g, gr.p.outputs[0], gr.p.inputs)
    rng = np.random.default_rng(6)
    v = _sym_tangents(rng, args)
    h = 1e-5

    def grads_at(step):
        return evaluate(gr.g, grads, dict(zip(gr.p.inputs, [a + step * t for a, t in zip(args, v)])))

    fd = [(p - m) / (2 * h) for p, m in zip(grads_at(h), grads_at(-h))]
    for i in range(5):
        hv = sum(np.tensordot(gr.eval([blocks[i][j]])[0], v[j], axes=np.ndim(v[j])) for j in range(5))
        np.testing.assert_allclose(hv, fd[i], rtol=1e-6, atol=1e-6, err_msg=f"(H v)[{i}]")


@pytest.mark.slow  # skipped unless -m slow (tests/conftest.py)
def test_hessian_matches_jax():
    args = _args(4)
    gr = Graph(_scalar_all(np), args)
    blocks = hessian_nodes(gr.g, gr.p.outputs[0], gr.p.inputs)
    ref = jax.jit(jax.hessian(_scalar_all(jnp), argnums=(0, 1, 2, 3, 4)))(*args)
    for i in (0, 2, 3, 4):
        for j in (0, 2, 3, 4):
            got = gr.eval([blocks[i][j]])[0]
            np.testing.assert_allclose(got, ref[i][j], rtol=1e-9, atol=1e-10, err_msg=f"H[{i}][{j}]")
    s_block = gr.eval([blocks[1][1]])[0]  # symmetrised in both S slots, as JAX's eigh/cholesky rules

    def sym(h):
        return h + np.swapaxes(h, 0, 1) + np.swapaxes(h, 2, 3) + np.swapaxes(np.swapaxes(h, 0, 1), 2, 3)
    np.testing.assert_allclose(sym(s_block), sym(ref[1][1]), rtol=1e-9, atol=1e-10)


# -- mpmath at 50 digits --------------------------------------------------------------------------------

def _mp_ops(t, args, tans):
    """``all_ops`` at ``args + t * tans`` in mpmath arithmetic (without the eigenvector terms)."""
    mp = mpmath.mp
    Am, Sm, Bm, bm, Tm = (mpmath.matrix(a.tolist()) + t * mpmath.matrix(d.tolist()) for a, d in zip(args, tans))
    det = mp.det(Am)
    inv = mp.inverse(Am)
    lower = mpmath.matrix(N, N)  # NumPy's cholesky and eigh read the lower triangle
    for i in range(N):
        for j in range(N):
            lower[i, j] = Sm[max(i, j), min(i, j)]
    w, _ = mp.eigsy(lower)
    rhs1 = Tm * bm + mpmath.matrix([mpmath.sin(Tm[i, 0]) / 10 for i in range(Tm.rows)])
    rhs2 = mpmath.matrix([[mpmath.cos(Tm[i, j]) for j in range(2)] for i in range(Tm.rows)])
    normal = Tm.T * Tm
    flat = lambda m: [m[i, j] for i in range(m.rows) for j in range(m.cols)]
    solve2 = lambda a, r: [v for row in zip(*[list(mp.lu_solve(a, r.column(j))) for j in range(r.cols)]) for v in row]
    return ([det, mpmath.log(abs(det)) * mpmath.sign(det)] + flat(inv) + solve2(Am, Bm) + list(mp.lu_solve(Am, bm))
            + flat(mp.cholesky(lower)) + sorted(w[i] for i in range(N))
            + list(mp.lu_solve(normal, Tm.T * rhs1)) + solve2(normal, Tm.T * rhs2))


def _mp_index():
    """Positions of the ``_mp_ops`` outputs in ``all_ops``' result (the eigenvector terms are skipped)."""
    head = 2 + N * N + 2 * N + N + N * N + N
    return list(range(head)) + list(range(head + 2 * N * N, head + 2 * N * N + N + 2 * N))


def test_value_and_jvp_match_mpmath(graph):
    """Values, and directional derivatives by a central difference at 50 digits (step 1e-20)."""
    rng = np.random.default_rng(5)
    tans = _sym_tangents(rng, graph.args)
    out, jv = graph.jvp(tans)
    idx = _mp_index()
    with mpmath.workdps(50):
        h = mpmath.mpf("1e-20")
        value = _mp_ops(0, graph.args, tans)
        plus, minus = _mp_ops(h, graph.args, tans), _mp_ops(-h, graph.args, tans)
        deriv = [float((p - m) / (2 * h)) for p, m in zip(plus, minus)]
    np.testing.assert_allclose(out[idx], [float(v) for v in value], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(jv[idx], deriv, rtol=1e-12, atol=1e-13)


# -- compiled kernels (Numba's np.linalg) ---------------------------------------------------------------

def _batched_args():
    return tuple(np.stack(pair) for pair in zip(_args(0), _args(7)))


def test_compiled_values_batched():
    args = _batched_args()
    out = sg.jit(all_ops, signature=SIG)(*args)
    ref = np.stack([all_ops(*[a[k] for a in args]) for k in range(2)])
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-13)


@pytest.mark.slow  # skipped unless -m slow (tests/conftest.py)
def test_compiled_values_float32():
    args = _batched_args()
    ref = np.stack([all_ops(*[a[k] for a in args]) for k in range(2)])
    out32 = sg.jit(all_ops, signature=SIG)(*[a.astype(np.float32) for a in args])
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, ref, rtol=2e-4, atol=2e-4)  # condition numbers here are below 30


def test_compiled_vjp_batched_matches_jax(graph, jax_jacobian):
    """Batch element 0 is ``graph.args`` (JAX reference), element 1 another point (graph reference)."""
    args = _batched_args()
    rng = np.random.default_rng(8)
    w = rng.standard_normal((2, jax_jacobian[0].shape[0]))
    _, vjp_fn = sg.vjp(all_ops, *args, signature=SIG)
    bars = vjp_fn(w)
    other = Graph(all_ops, tuple(a[1] for a in args)).vjp(w[1])
    for k, (got, block) in enumerate(zip(bars, jax_jacobian)):
        ref = np.tensordot(w[0], block, axes=1)
        g0 = got[0]
        if k == 1:
            g0, ref = g0 + g0.T, ref + ref.T
        np.testing.assert_allclose(g0, ref, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(got[1], other[k], rtol=1e-11, atol=1e-12)


@pytest.mark.slow  # skipped unless -m slow (tests/conftest.py)
def test_compiled_jacobian_matches_jax(graph, jax_jacobian):
    """Compiled kernels with the tangent batch axis (nb = 1) through every linalg rule."""
    jac = sg.jacobian(all_ops, argnums=(0, 1, 2, 3, 4), signature=SIG)(*graph.args)
    for k, (got, ref) in enumerate(zip(jac, jax_jacobian)):
        if k == 1:
            got, ref = got + np.swapaxes(got, -1, -2), ref + np.swapaxes(ref, -1, -2)
        np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-12)


def _loglik(xp):
    def loglik(mu, S, Y):
        sign, logdet = xp.linalg.slogdet(S)
        R = Y - mu
        return -0.5 * (Y.shape[0] * logdet + xp.sum(R.T * xp.linalg.solve(S, R.T)) + Y.size * np.log(2 * np.pi))
    return loglik


@pytest.mark.slow  # skipped unless -m slow (tests/conftest.py)
def test_gaussian_loglik_hessian_batched_matches_jax():
    rng = np.random.default_rng(9)
    n, m, batch = 3, 6, 2
    a = rng.standard_normal((batch, n, n))
    S = a @ np.swapaxes(a, 1, 2) + n * np.eye(n)
    mu, Y = rng.standard_normal((batch, n)), rng.standard_normal((batch, m, n))
    H = sg.hessian(_loglik(np), argnums=(0, 1), signature="(n),(n,n),(m,n)->()")(mu, S, Y)
    ref = jax.jit(jax.vmap(jax.hessian(_loglik(jnp), argnums=(0, 1))))(mu, S, Y)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j], ref[i][j], rtol=1e-12, atol=1e-13, err_msg=f"H[{i}][{j}]")


# runs examples/gaussian_loglik.py (15 s; slow in tests/test_examples.py too); its Hessian is checked above
@pytest.mark.slow
def test_gaussian_loglik_example_numbers():
    from .example_runner import ROOT, run_example

    r = run_example(ROOT / "examples" / "gaussian_loglik.py")
    assert getattr(r, "returncode", None) == 0, getattr(r, "stderr", r)
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert float(lines["log-likelihood"]) == pytest.approx(float(lines["scipy logpdf sum"]), rel=1e-13)
    for key in ("grad mu", "grad S", "hessian mu,mu", "hessian mu,S", "hessian S,S"):
        assert float(lines[f"{key} rel error"]) < 1e-13, key


# -- np.linalg.norm ------------------------------------------------------------------------------------------

def _norms(xp):
    la = xp.linalg

    def norms(x):
        return xp.stack([la.norm(x), la.norm(x, 1), la.norm(x, 2), la.norm(x, xp.inf), la.norm(x, -xp.inf)])
    return norms


norms, norms_jax = _norms(np), _norms(jnp)
KINKS = np.array([
    [0.0, 0.0, 0.0, 0.0],        # every norm at 0: JAX's values where finite, else 0
    [1.0, -1.0, 0.5, -0.5],      # ties in max |x| and min |x|
    [0.0, -0.0, 2.0, -3.0],      # zeros (ord=1 kink, -inf tie at 0), signed zero
    [0.3, -1.2, 2.5, 0.7],       # smooth
])


def test_norm_gradients_at_kinks_match_jax_compiled():
    """One compiled JVP with basis tangents gives values and full Jacobians at every point."""
    n = KINKS.shape[1]
    x = np.repeat(KINKS, n, axis=0)
    eye = np.tile(np.eye(n), (len(KINKS), 1))
    out, jac = sg.jvp(norms, (x,), (eye,), signature="(n)->(p)")
    got = jac.reshape(len(KINKS), n, -1).transpose(0, 2, 1)
    ref = np.array(jax.jit(jax.vmap(jax.jacfwd(norms_jax)))(KINKS))  # jacrev spreads the NaN to every row
    ref[0, [0, 2]] = 0.0  # JAX: NaN for the 2-norm at 0; symgrad: 0 (documented)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(out.reshape(len(KINKS), n, -1)[:, 0], [norms(k) for k in KINKS], rtol=1e-15)
    assert got[0, 3].tolist() == [1 / 8] * 4  # 1/(2n) at 0 for inf: JAX's max(0, max|x|) tie


def test_norm_values_nan_inf_and_float32_compiled():
    f = sg.jit(norms, signature="(n)->(p)")
    x = np.array([[1.0, np.nan, 2.0, 0.0], [1.0, -np.inf, 2.0, 0.5], [3.0, -4.0, 0.0, 1.0]])
    with np.errstate(invalid="ignore"):
        ref = np.array([norms(v) for v in x])
    np.testing.assert_array_equal(np.isnan(f(x)), np.isnan(ref))
    np.testing.assert_allclose(f(x), ref, rtol=1e-15)
    out32 = f(x[2:].astype(np.float32))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, ref[2:], rtol=1e-6)


@pytest.mark.parametrize("kw", [dict(), dict(ord="fro"), dict(axis=0), dict(axis=1, ord=1),
                                dict(axis=-1, ord=np.inf, keepdims=True), dict(axis=(1, 0), keepdims=True),
                                dict(axis=0, ord=-np.inf)], ids=str)
def test_matrix_and_axis_norms_on_graph(kw):
    """Values vs NumPy and gradients (of a weighted sum) vs JAX, on the traced graph."""
    x = np.array([[0.5, -2.0, 1.5], [3.0, 0.25, -1.0]])
    weights = np.arange(1.0, 1.0 + np.size(np.linalg.norm(x, **kw))).reshape(np.shape(np.linalg.norm(x, **kw)))
    gr = Graph(lambda x: np.linalg.norm(x, **kw), (x,))
    (val,) = gr.eval(gr.p.outputs)
    np.testing.assert_allclose(val, np.linalg.norm(x, **kw), rtol=1e-15)
    (bar,) = gr.vjp(weights)
    ref = jax.grad(lambda x: jnp.sum(jnp.linalg.norm(x, **kw) * weights))(x)
    np.testing.assert_allclose(bar, ref, rtol=1e-14, atol=1e-15)


def test_norm_hessian_at_zero_is_finite():
    gr = Graph(lambda x: np.linalg.norm(x), (np.zeros(3),))
    (h,) = gr.eval([hessian_nodes(gr.g, gr.p.outputs[0], gr.p.inputs)[0][0]])
    assert np.array_equal(h, np.zeros((3, 3)))


@pytest.mark.parametrize("call, message", [
    (lambda x: np.linalg.norm(x, 3), "norm(..., ord=3) of a vector"),
    (lambda x: np.linalg.norm(np.reshape(x, (2, 2)), 2), "norm(..., ord=2) of a matrix"),
    (lambda x: np.linalg.eigh(np.reshape(x, (2, 2)), UPLO="U"), "UPLO='U'"),
    (lambda x: np.linalg.det(x), "det of a core of shape (4,)"),
    (lambda x: np.linalg.lstsq(np.reshape(x, (2, 2)), x[:2])[1] + 1.0, "lstsq's residuals"),
])
def test_unsupported_forms_raise(call, message):
    with pytest.raises(sg.UnsupportedOperationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        trace_program(call, (np.ones(4),), [(4,)])


def test_stabiliser_treats_linalg_ops_as_leaves():
    """The elementwise region under slogdet is rewritten (its gradient's exp(u)/(1 + exp(u)) becomes
    sigmoid(u)); slogdet stays one call, computed once, not inside the loop over the gradient's elements."""
    def f(A):
        return np.log(1.0 + np.exp(np.linalg.slogdet(A)[1]))

    t = sg.trace(f, np.eye(2), signature="(n,n)->()")
    source = t.source()
    assert ("_sigmoid(" in source or "_vm_sigmoid_f64" in source) and "np.linalg.slogdet(" in source
    for line in source.splitlines():
        if "np.linalg.slogdet(" in line and not line.lstrip().startswith("#"):  # not the source-line comment
            assert line.startswith("    t") and " = " in line, line  # a top-level temporary
    assert any("sigmoid" in str(r) for r in t.rewrites())
