"""Issue 16, point 2: log-sum-exp, softmax and softmax cross-entropy across a reduction.

Written as the issue writes them (``np.log(np.sum(np.exp(z)))``, ``np.exp(z) /
np.sum(np.exp(z))``, ``-np.log(np.exp(z[k]) / np.sum(np.exp(z)))``), over a core axis,
at logits near 1000 and near -1000: values, gradients, Jacobians and Hessians must be
finite and accurate.  References: closed forms in mpmath at 50 digits (lse, softmax,
cross-entropy and their derivatives: grad lse = softmax, Hessian = diag(p) - p p^T);
JAX in x64 for the same calls (``jax.nn.logsumexp`` shifts by the max as well).
"""
import mpmath
import numpy as np
import pytest

import symgrad as sg
from symgrad.stabilize.accuracy import ulp_bits

Z = [np.array([1000.0, 999.0, 998.5, -5.0]), np.array([-1000.0, -1001.0, -1003.0, -999.5]),
     np.array([0.3, -0.2, 0.1, 0.0])]
ULPS = np.log2(5) + 1e-9  # a few roundings: shift, exp, sum, divide (Blanchard et al. 2021, Thm. 2.2/3.1)


def lse(z):
    return np.log(np.sum(np.exp(z)))


def softmax(z):
    return np.exp(z) / np.sum(np.exp(z))


def xent(z):
    return -np.log(np.exp(z[1]) / np.sum(np.exp(z)))


def _mp_softmax(z):
    with mpmath.workdps(50):
        e = [mpmath.exp(mpmath.mpf(float(v))) for v in z]
        s = sum(e)
        return [v / s for v in e], s


def _close(got, ref, what):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert np.all(np.isfinite(got)), (what, got)
    big = np.abs(ref) > 1e-300  # entries that underflow in the truth are compared absolutely
    assert np.all(ulp_bits(got[big], ref[big]) <= ULPS), (what, got, ref)
    assert np.all(np.abs(got[~big]) <= 1e-290), (what, got)


@pytest.mark.parametrize("z", Z, ids=["near1000", "near-1000", "moderate"])
def test_values_gradients_jacobians(z):
    p, s = _mp_softmax(z)
    with mpmath.workdps(50):
        ref_lse = float(mpmath.log(s))
        ref_xent = float(mpmath.log(s) - mpmath.mpf(float(z[1])))
        jac = [[float(p[i] * ((i == j) - p[j])) for j in range(len(z))] for i in range(len(z))]
    pf = [float(v) for v in p]
    _close(sg.jit(lse, signature="(n)->()")(z), ref_lse, "lse")
    _close(sg.grad(lse, signature="(n)->()")(z), pf, "grad lse")
    _close(sg.jit(softmax, signature="(n)->(n)")(z), pf, "softmax")
    _close(sg.jacobian(softmax, signature="(n)->(n)")(z), jac, "jacobian softmax")
    _close(sg.jit(xent, signature="(n)->()")(z), ref_xent, "cross-entropy")
    g = pf.copy()
    g[1] -= 1.0
    _close(sg.grad(xent, signature="(n)->()")(z), g, "grad cross-entropy")
    _close(sg.hessian(lse, signature="(n)->()")(z), jac, "hessian lse")
    # composed transformations, as JAX users write the Hessian: the inner gradient was formed from the
    # unshifted graph (NaN at logits near 1000) until the primal rewrites ran inside the nested call
    _close(sg.jacobian(sg.grad(lse))(z), jac, "jacobian(grad(lse))")
    _close(sg.jacobian(sg.grad(xent))(z), jac, "jacobian(grad(cross-entropy))")


def test_matches_jax_x64():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    z = Z[0]
    ref = np.asarray(jax.grad(lambda v: jax.nn.logsumexp(v))(jnp.asarray(z)))
    got = sg.grad(lse, signature="(n)->()")(z)
    assert np.all(ulp_bits(got, ref) <= ULPS), (got, ref)


def test_shift_is_reported_and_not_applied_without_stabilize():
    z = Z[0]
    assert np.isnan(sg.jit(lse, signature="(n)->()", stabilize=False)(z)) or \
        np.isinf(sg.jit(lse, signature="(n)->()", stabilize=False)(z))
    src = sg.jit(lse, signature="(n)->()").source(z)
    assert "lse_max_shift" in src and "np.max(" in src


def test_float32_near_logit_100():
    z = np.array([100.0, 99.0, 98.5, -5.0], dtype=np.float32)
    got = sg.grad(lse, signature="(n)->()")(z)
    assert got.dtype == np.float32 and np.all(np.isfinite(got))
    p, _ = _mp_softmax(z.astype(np.float64))
    ref = np.array([float(v) for v in p], dtype=np.float32)
    ok = np.abs(ref) > 1e-30
    assert np.all(ulp_bits(got[ok], ref[ok]) <= ULPS), (got, ref)


def test_infinite_logits_keep_numpy_values():
    f = sg.jit(lse, signature="(n)->()")
    assert f(np.array([-np.inf, -np.inf])) == -np.inf
    assert f(np.array([np.inf, 0.0])) == np.inf
    assert np.isnan(f(np.array([np.nan, 0.0])))
