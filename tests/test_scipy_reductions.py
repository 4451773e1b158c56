"""scipy.special.logsumexp, softmax, log_softmax and polygamma called from traced code (issue 14, point 2).

symgrad intercepts these Python functions (symgrad/trace/library_calls.py) and traces them as
max-shifted graph forms (symgrad/trace/scipy_special.py).  References:

* values: SciPy itself (the same call on NumPy arrays), and mpmath at 50 digits where SciPy
  and symgrad differ in accuracy;
* derivatives: JAX in x64 (``jax.scipy.special.logsumexp``, ``jax.nn.softmax``,
  ``jax.nn.log_softmax``; skipped without JAX), mpmath for polygamma, and the dot-product
  identity <w, J v> = <J^T w, v> between ``sg.jvp`` and ``sg.vjp``.

Inputs include logits near +-1000 and -inf entries, where the unshifted formulas overflow
or give NaN.  To keep Numba compilations few, one traced program often returns every
axis/keepdims variant at once.
"""
import inspect

import mpmath
import numpy as np
import pytest
import scipy.special as ss
from numpy.exceptions import AxisError
from scipy.special import log_softmax, logsumexp, polygamma, softmax

import symgrad as sg
from symgrad.errors import UnsupportedOperationError

AXES = [(None, False), (None, True), (0, False), (1, True), (-1, False), ((0, 1), False), ((1, 0), True)]


def need_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def logits(kind: str) -> np.ndarray:
    """(3, 4) logits: standard normal, or rows shifted to +1000 / -1000 with -inf entries."""
    x = np.random.default_rng(5).standard_normal((3, 4))
    if kind == "extreme":
        x[0] += 1000.0
        x[1] -= 1000.0
        x[1, 2] = -np.inf
        x[2, 0] = -np.inf
    return x


def assert_values(actual, expected, rtol=2e-15):
    """Same shape; same inf/NaN positions; finite values within ``rtol`` relative."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(actual), np.isinf(expected))
    fin = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~fin & ~np.isnan(expected)], expected[~fin & ~np.isnan(expected)])
    np.testing.assert_allclose(actual[fin], expected[fin], rtol=rtol, atol=0)


# -- values against SciPy ---------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["normal", "extreme"])
def test_values_match_scipy_for_every_axis_and_keepdims(kind):
    x = logits(kind)

    def every_variant(x):
        return tuple([logsumexp(x, axis=a, keepdims=k) for a, k in AXES]
                     + [softmax(x, axis=a) for a, _ in AXES] + [log_softmax(x, axis=a) for a, _ in AXES])
    got = sg.jit(every_variant)(x)
    with np.errstate(invalid="ignore"):
        want = every_variant(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_values(g, w)
    assert all(np.isfinite(g).all() for g in got[len(AXES):2 * len(AXES)])  # softmax: finite at +-1000, -inf


def test_logsumexp_keeps_the_digits_of_small_results_as_scipy():
    """[0, -40]: the result is 4.25e-18; log(sum(exp(x - max))) would round it to 0 (SciPy's
    log1p of the terms below the maximum keeps it, and so does symgrad).  log_softmax keeps the
    digits too (SciPy's own log_softmax gives -0.0 there); mpmath decides."""
    v = np.array([0.0, -40.0, -45.0])
    with mpmath.workdps(50):
        lse = mpmath.log(sum(mpmath.exp(mpmath.mpf(t)) for t in v))
    val, ls = sg.jit(lambda x: (logsumexp(x), log_softmax(x)))(v)
    assert val == pytest.approx(float(lse), rel=1e-15)
    assert val == pytest.approx(float(logsumexp(v)), rel=1e-15)
    np.testing.assert_allclose(ls, [float(t - lse) for t in v], rtol=1e-15)


def test_all_minus_inf_and_plus_inf_and_nan_slices_give_scipys_values():
    x = np.array([[-np.inf, -np.inf, -np.inf], [1.0, np.inf, 0.0], [np.nan, 1.0, 2.0], [-np.inf, 3.0, -np.inf]])
    f = sg.jit(lambda x: (logsumexp(x, axis=1), log_softmax(x, axis=1), softmax(x, axis=1)), stabilize=False)
    with np.errstate(invalid="ignore"):
        want = (logsumexp(x, axis=1), log_softmax(x, axis=1), softmax(x, axis=1))
    for got, ref in zip(f(x), want):
        assert_values(got[[0, 2, 3]], ref[[0, 2, 3]])
    assert f(x)[0][1] == np.inf  # +inf present: the log-sum-exp is +inf, as SciPy


def test_zero_d_and_list_arguments_follow_scipy():
    got = sg.jit(lambda s, t: (logsumexp(s), logsumexp(s, keepdims=True), logsumexp([s, t]), softmax(s),
                               log_softmax(s)))(0.7, -1.2)
    want = (logsumexp(0.7), logsumexp(0.7, keepdims=True), logsumexp([0.7, -1.2]), softmax(0.7), log_softmax(0.7))
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-15)


# -- weights b and return_sign ------------------------------------------------------------------

B_CASES = {
    "positive": lambda rng: np.abs(rng.standard_normal((3, 4))) + 0.1,
    "signed": lambda rng: rng.standard_normal((3, 4)),
    "row": lambda rng: np.array([1.0, -0.5, 0.0, 2.0]),   # broadcast; one column all zero (log 0 = -inf)
    "scalar": lambda rng: 2.5,
}


@pytest.mark.parametrize("case", sorted(B_CASES))
def test_weights_and_return_sign_match_scipy(case):
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((3, 4)), B_CASES[case](rng)
    if case == "signed":
        b[0, 0] = 0.0
        a[0, 0] = np.inf  # a term with b == 0 is left out even where a is inf (SciPy)

    def f(a, b):
        outs = []
        for axis, keepdims in AXES[1::2]:  # (None, True), (1, True), ((0, 1), False)
            outs.append(logsumexp(a, axis=axis, b=b, keepdims=keepdims))
            outs.extend(logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True))
        return tuple(outs)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = f(a, b)
    got = sg.jit(f)(a, b)
    for g, w in zip(got, want):
        assert_values(g, w, rtol=3e-15)


@pytest.mark.parametrize("case", ["positive", "signed", "row"])
def test_weight_gradients_match_jax(case):
    """Gradients in a and in a traced b (whose sign varies for "signed") through return_sign=True."""
    jax = need_jax()
    import jax.numpy as jnp
    import jax.scipy.special as jsp

    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((3, 4)), np.broadcast_to(B_CASES[case](rng), (3, 4)).copy()
    w = rng.standard_normal(4)

    def f(a, b, lse=logsumexp, xp=np):
        out, sign = lse(a, axis=0, b=b, return_sign=True)
        return xp.sum(w * sign * xp.tanh(out))
    ref = jax.grad(lambda a, b: f(a, b, jsp.logsumexp, jnp), argnums=(0, 1))(a, b)
    got = sg.grad(f, argnums=(0, 1))(a, b)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, np.asarray(r), rtol=1e-13, atol=1e-15)


# -- derivatives against JAX --------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["normal", "extreme"])
def test_logsumexp_gradient_matches_jax_for_every_axis(kind):
    jax = need_jax()
    import jax.numpy as jnp
    import jax.scipy.special as jsp

    x = logits(kind)
    weights = [np.random.default_rng(k).standard_normal(np.shape(logsumexp(x, axis=a, keepdims=kd)))
               for k, (a, kd) in enumerate(AXES)]

    def f(x, lse=logsumexp, xp=np):
        return sum(xp.sum(c * lse(x, axis=a, keepdims=kd)) for c, (a, kd) in zip(weights, AXES))
    got = sg.grad(f)(x)
    ref = np.asarray(jax.grad(lambda x: f(x, jsp.logsumexp, jnp))(x))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("kind", ["normal", "extreme"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_jacobians_match_jax(name, kind):
    jax = need_jax()
    x = logits(kind)
    ours, theirs = {"softmax": (softmax, jax.nn.softmax), "log_softmax": (log_softmax, jax.nn.log_softmax)}[name]
    for axis in (None, 1, (0, 1)):
        got = sg.jacobian(lambda x: ours(x, axis=axis))(x)
        ref = np.asarray(jax.jacobian(lambda x: theirs(x, axis=axis))(x))
        assert got.shape == (3, 4, 3, 4) and np.isfinite(got).all()
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15)


def test_logsumexp_hessian_matches_jax_at_extreme_logits():
    jax = need_jax()
    import jax.scipy.special as jsp

    x = np.array([1000.0, 999.0, -np.inf, 998.5, -1000.0])
    got = sg.hessian(lambda x: logsumexp(x))(x)
    ref = np.asarray(jax.hessian(jsp.logsumexp)(x))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15)


def test_batched_rows_with_a_signature_match_jax():
    """One core vector per row (signature "(n)->()"); the user's program as written, as in the
    JAX tutorials: softmax-weighted sum plus log-sum-exp."""
    jax = need_jax()
    import jax.numpy as jnp
    import jax.scipy.special as jsp

    X = np.random.default_rng(21).standard_normal((5, 4))
    X[1] += 1000.0
    X[2, 3] = -np.inf
    w = np.array([1.0, -1.0, 0.5, 2.0])

    def f(x, sm=softmax, lse=logsumexp, xp=np):
        return xp.dot(sm(x), w) + lse(x, keepdims=True)[0]
    got = sg.grad(f, signature="(n)->()")(X)
    ref = np.stack([np.asarray(jax.grad(lambda x: f(x, jax.nn.softmax, jsp.logsumexp, jnp))(x)) for x in X])
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15)
    vals = sg.jit(f, signature="(n)->()")(X)
    np.testing.assert_allclose(vals, [f(x) for x in X], rtol=1e-15)


def test_without_signature_the_whole_array_is_the_core():
    """JAX semantics with no signature: logsumexp reduces every element; its gradient is the
    softmax over all of them (not an elementwise identity)."""
    x = logits("normal")
    np.testing.assert_allclose(sg.grad(lambda x: logsumexp(x))(x), softmax(x), rtol=1e-14)
    assert sg.trace(lambda x: logsumexp(x), x).signature == "(3,4)->()"


@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax"])
def test_jvp_is_the_transpose_of_vjp(name):
    rng = np.random.default_rng(3)
    x, v = logits("extreme"), rng.standard_normal((3, 4))
    fn = {"logsumexp": lambda x: logsumexp(x, axis=1), "softmax": lambda x: softmax(x, axis=0),
          "log_softmax": lambda x: log_softmax(x, axis=1)}[name]
    out, jv = sg.jvp(fn, (x,), (v,))
    w = rng.standard_normal(np.shape(out))
    _, vjp_fn = sg.vjp(fn, x)
    (jtw,) = vjp_fn(w)
    assert np.isfinite(jv).all() and np.isfinite(jtw).all()
    assert float(np.sum(w * jv)) == pytest.approx(float(np.sum(jtw * v)), rel=1e-13)


def test_float32_in_gives_float32_out_with_finite_gradients():
    x = logits("extreme").astype(np.float32)
    x64 = x.astype(np.float64)  # the float32 logits, exactly
    vals = sg.jit(lambda x: (logsumexp(x, axis=1), softmax(x, axis=1), log_softmax(x, axis=1)))(x)
    for got, want in zip(vals, (logsumexp(x64, axis=1), softmax(x64, axis=1), log_softmax(x64, axis=1))):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
    g = sg.grad(lambda x: np.sum(logsumexp(x, axis=1)))(x)
    assert g.dtype == np.float32 and np.isfinite(g).all()
    np.testing.assert_allclose(g, softmax(x64, axis=1), rtol=1e-6, atol=1e-30)


# -- polygamma ------------------------------------------------------------------------------------

def test_polygamma_values_match_scipy_and_derivatives_match_mpmath():
    x = np.array([0.3, 1.0, 2.5, 7.0, 31.0, -1.5])
    f = sg.jit(lambda x: tuple(polygamma(n, x) for n in range(5)))
    for n, got in enumerate(f(x)):
        np.testing.assert_allclose(got[x > 0], ss.polygamma(n, x[x > 0]), rtol=1e-13)
        with mpmath.workdps(40):  # at x < 0 SciPy itself is off by 2e-13 (n = 4); mpmath decides
            np.testing.assert_allclose(got, [float(mpmath.polygamma(n, float(t))) for t in x], rtol=1e-13)
    # every order's derivative from one forward-mode kernel (elementwise: tangent 1 everywhere)
    _, derivs = sg.jvp(lambda x: tuple(polygamma(n, x) for n in range(4)), (x,), (np.ones_like(x),),
                       stabilize=False)
    for n, d in enumerate(derivs):
        with mpmath.workdps(40):
            ref = [float(mpmath.diff(lambda t: mpmath.polygamma(n, t), mpmath.mpf(float(t)))) for t in x]
        np.testing.assert_allclose(d, ref, rtol=1e-12)


def test_polygamma_with_an_array_of_orders_broadcasts_as_scipy():
    n, x = np.array([0, 1, 2, 3]), np.array([0.5, 1.5, 4.0, 9.0])
    np.testing.assert_allclose(sg.jit(lambda x: polygamma(n, x))(x), ss.polygamma(n, x), rtol=1e-13)


# -- untraced calls, tapes ------------------------------------------------------------------------

def test_untraced_calls_run_scipys_code_unchanged():
    sg.jit(lambda x: logsumexp(x))(np.ones(2))  # interception installed
    params = list(inspect.signature(logsumexp).parameters)
    assert params == ["a", "axis", "b", "keepdims", "return_sign"]
    assert logsumexp([1.0, 2.0], b=[1.0, -1.0], return_sign=True) == pytest.approx(
        (float(np.log(np.e ** 2 - np.e)), -1.0), rel=1e-15)
    assert softmax(np.array([1.0, 1.0])).tolist() == [0.5, 0.5]
    assert polygamma(1, 1.0) == pytest.approx(np.pi ** 2 / 6, rel=1e-15)
    assert ss.logsumexp is logsumexp


def test_constant_arguments_inside_a_trace_use_scipy():
    c = np.array([0.1, 0.2, 0.3])
    got = sg.jit(lambda x: x * logsumexp(c))(2.0)
    assert got == pytest.approx(2.0 * float(logsumexp(c)), rel=1e-15)


def test_gradient_tape_keeps_variables_through_logsumexp():
    w = sg.Variable(np.array([1.0, 2.0, -3.0]))
    with sg.GradientTape() as tape:
        loss = logsumexp(w)
    np.testing.assert_allclose(tape.gradient(loss, w), softmax(w.numpy()), rtol=1e-15)
    x = sg.constant(np.array([0.5, -0.5]))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(softmax(x) * np.array([1.0, 3.0]))
    s = softmax(np.array([0.5, -0.5]))
    np.testing.assert_allclose(tape.gradient(y, x), s * (np.array([1.0, 3.0]) - s @ [1.0, 3.0]), rtol=1e-14)


# -- errors -----------------------------------------------------------------------------------------

def test_bad_arguments_raise_typed_errors_naming_them():
    x = np.ones((2, 3))
    with pytest.raises(AxisError, match="out of bounds"):
        sg.jit(lambda x: logsumexp(x, axis=2))(x)
    with pytest.raises(TypeError, match=r"logsumexp: axis must be None, an int or a tuple of ints; got 1\.0"):
        sg.jit(lambda x: logsumexp(x, axis=1.0))(x)
    with pytest.raises(TypeError, match="softmax: axis must be None"):
        sg.jit(lambda x: softmax(x, axis=x))(x)
    with pytest.raises(TypeError, match="keepdims must be True or False"):
        sg.jit(lambda x: logsumexp(x, keepdims=x[0, 0] > 0))(x)
    with pytest.raises(TypeError, match="return_sign must be True or False"):
        sg.jit(lambda x: logsumexp(x, return_sign="yes"))(x)
    with pytest.raises(ValueError, match=r"a of core shape \(2, 3\) and b of core shape \(4,\) do not broadcast"):
        sg.jit(lambda x: logsumexp(x, b=np.ones(4)))(x)
    with pytest.raises(TypeError, match=r"traced order n[\s\S]*constant int"):
        sg.jit(lambda n, x: polygamma(n, x))(1.0, 2.0)
    for n in (-1, 1.5):
        with pytest.raises(ValueError, match="non-negative integer order"):
            sg.jit(lambda x: polygamma(n, x))(2.0)


def test_scipys_own_code_on_a_traced_value_is_refused_naming_the_spelling():
    """The fallback when the interception is not installed (a SciPy whose functions are wrapped):
    SciPy's code meets a traced value and the refusal names the traceable spelling."""
    from symgrad.trace import library_calls

    sg.jit(lambda x: logsumexp(x))(np.ones(2))
    original = library_calls._ORIGINALS["scipy.special.logsumexp"][0]
    with pytest.raises(UnsupportedOperationError, match=r"scipy\.special\.logsumexp cannot be traced"):
        sg.jit(lambda v: original(v), signature="(n)->()")(np.ones(3))
