"""Textbook likelihoods (maximum likelihood as in Casella & Berger, Bishop, Murphy) and the
autograd/JAX logistic-regression examples.  References: closed-form scores and Hessians,
autograd/JAX on the same source, SciPy's distributions for values."""
import autograd
import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma, expit, gammaln, log_ndtr, logsumexp, ndtr, xlogy

import symgrad as sg

from ._reference import as_autograd, as_jax, assert_close, need_jax, to_numpy

RNG = np.random.default_rng(14)
DATA = RNG.normal(1.5, 2.0, size=20)


def gaussian_nll(mu, log_sigma, x):
    """Gaussian negative log-likelihood in (mu, log sigma) (Bishop, PRML eq. 1.54)."""
    sigma = np.exp(log_sigma)
    return np.sum(0.5 * ((x - mu) / sigma) ** 2 + log_sigma + 0.5 * np.log(2 * np.pi))


def test_gaussian_nll_value_and_score_without_signature():
    """Reduces over the data argument, so signature=None has JAX semantics: scalar value, scalar scores."""
    mu, ls = 1.0, 0.5
    s2 = np.exp(2 * ls)
    n = DATA.size
    val, (g_mu, g_ls) = sg.value_and_grad(gaussian_nll, argnums=(0, 1))(mu, ls, DATA)
    expected = (-stats.norm.logpdf(DATA, mu, np.exp(ls)).sum(),
                (-np.sum(DATA - mu) / s2, n - np.sum((DATA - mu) ** 2) / s2))
    assert_close((val, (g_mu, g_ls)), (expected[0], expected[1]))


def test_gaussian_nll_batched_over_mu_with_signature():
    mus = np.array([0.0, 1.0, 2.0])
    g = sg.grad(gaussian_nll, signature="(),(),(n)->()")(mus, 0.0, DATA)
    assert_close(g, np.array([-np.sum(DATA - m) for m in mus]))


def test_gaussian_nll_float32_hessian():
    """Observed information at (mu, log sigma): [[n/s2, 2 sum(x-mu)/s2], [., 2 sum((x-mu)^2)/s2]]."""
    mu, ls, x = 1.0, 0.25, DATA[:8]
    s2 = np.exp(2 * ls)
    H = sg.hessian(lambda p: gaussian_nll(p[0], p[1], x.astype(np.float32)))(np.array([mu, ls], np.float32))
    r = x - mu
    expected = np.array([[x.size / s2, 2 * r.sum() / s2], [2 * r.sum() / s2, 2 * np.sum(r ** 2) / s2]])
    assert_close(H, expected, dtype=np.float32)


X_POIS = RNG.normal(size=(12, 3)) * 0.5
Y_POIS = RNG.poisson(2.0, size=12).astype(float)


def poisson_loglik(beta):
    """Poisson regression log-likelihood (McCullagh & Nelder, GLMs, ch. 6)."""
    eta = X_POIS @ beta
    return np.sum(Y_POIS * eta - np.exp(eta) - gammaln(Y_POIS + 1))


def test_poisson_regression_score_and_information():
    """Score X^T (y - mu); Hessian -X^T diag(mu) X."""
    beta = np.array([0.2, -0.1, 0.3])
    mu = np.exp(X_POIS @ beta)
    assert_close(sg.grad(poisson_loglik)(beta), X_POIS.T @ (Y_POIS - mu))
    assert_close(sg.hessian(poisson_loglik)(beta), -(X_POIS.T * mu) @ X_POIS)


def sigmoid(x):
    """autograd README: sigmoid via tanh."""
    return 0.5 * (np.tanh(x / 2.0) + 1)


def logistic_predictions(weights, inputs):
    """autograd README: outputs probability of a label being true according to logistic model."""
    return sigmoid(np.dot(inputs, weights))


INPUTS = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
TARGETS = np.array([True, True, False, True])


def training_loss(weights):
    """autograd README: training loss is the negative log-likelihood of the training labels."""
    preds = logistic_predictions(weights, INPUTS)
    label_probabilities = preds * TARGETS + (1 - preds) * (1 - TARGETS)
    return -np.sum(np.log(label_probabilities))


def test_autograd_readme_logistic_regression_gradient_and_training():
    """The README's loop: weights -= grad * 0.01, 100 steps; compare with autograd's trajectory."""
    w0 = np.array([0.0, 0.0, 0.0])
    t = TARGETS.astype(float)
    p = expit(INPUTS @ w0)
    assert_close(sg.grad(training_loss)(w0), INPUTS.T @ (p - t))
    ours, ref = w0.copy(), w0.copy()
    g, g_ref = sg.grad(training_loss), autograd.grad(as_autograd(training_loss))
    for _ in range(100):
        ours -= g(ours) * 0.01
        ref -= g_ref(ref) * 0.01
    assert_close(ours, ref)


def logistic_nll_expit(w, X, y):
    """Logistic regression with scipy.special.expit and xlogy (scikit-learn-style loss)."""
    p = expit(X @ w)
    return -np.sum(xlogy(y, p) + xlogy(1 - y, 1 - p))


def test_logistic_expit_hvp_closed_form():
    """Hessian X^T diag(p(1-p)) X; the HVP must match it without forming it."""
    X, y = INPUTS, TARGETS.astype(float)
    w, v = np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -1.0])
    p = expit(X @ w)
    assert_close(sg.hvp(lambda w: logistic_nll_expit(w, X, y), (w,), (v,)), X.T @ ((p * (1 - p)) * (X @ v)))


def bce_expit_log1p(w, X, y):
    """Binary cross-entropy as tutorials write it: expit, log and log1p(-p) (the user-program
    sweep of 2026-11-29: its Hessian was 1e79 off at logits of +-50)."""
    z = X @ w
    return -np.mean(y * np.log(expit(z)) + (1 - y) * np.log1p(-expit(z)))


def _logistic_density(z):
    """sigmoid(z) sigmoid(-z) in 40-digit arithmetic, rounded."""
    import mpmath
    with mpmath.workdps(40):
        return np.array([float(1 / ((1 + mpmath.exp(-v)) * (1 + mpmath.exp(v)))) for v in z])


@pytest.mark.parametrize("w", [[50.0, -60.0, 40.0], [0.3, -0.2, 0.1], [5.0, 3.0, -4.0]])
def test_bce_hessian_at_large_logits_matches_the_closed_form(w):
    """H = X^T diag(s(-z) s(z)) X / n for every label: with labels in {0, 1} the derived form
    divides by 1 - s = 0 or cancels (y = 1), and reverse mode must reduce it to s(z) s(-z)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = (rng.uniform(size=12) > 0.5).astype(float)
    w = np.array(w)
    want = (X.T * _logistic_density(X @ w)) @ X / len(y)
    np.testing.assert_allclose(sg.hessian(bce_expit_log1p)(w, X, y), want, rtol=1e-13, atol=1e-15 * np.abs(want).max())
    z = np.array([15.0, 20.0, 37.0, -37.0, 0.3])
    for label in (0.0, 1.0):  # one sample per logit: a 1 x 1 Hessian, exact to a few ulps in either label
        got = [sg.hessian(bce_expit_log1p)(np.array([v]), np.ones((1, 1)), np.array([label]))[0, 0] for v in z]
        np.testing.assert_allclose(got, _logistic_density(z), rtol=4e-16 * 8)


def bce_exp_ratio(z, y):
    """The same loss per sample with the probability written exp(z)/(1 + exp(z)), elementwise."""
    p = np.exp(z) / (1 + np.exp(z))
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


@pytest.mark.parametrize("second", ["grad_of_grad", "hessian"])
def test_bce_second_derivative_with_exp_ratio_probability(second):
    """d2/dz2 = s(z) s(-z) for either label: JAX's x64 second derivative of this source is NaN
    from z ~ 37 on (1 - p rounds to 0), and symgrad's was NaN too, and -4.8e-4 at z = 28.4 where the
    truth is 4.6e-13, before its reduction of the rational function of exp(z) (sigmoid_identity)."""
    d2 = sg.grad(sg.grad(bce_exp_ratio)) if second == "grad_of_grad" else sg.hessian(bce_exp_ratio)
    z = np.array([-152.9, -44.3, -9.8, 0.3, 9.79, 28.4, 39.8, 122.3])
    for label in (0.0, 1.0):
        np.testing.assert_allclose(d2(z, label), _logistic_density(z), rtol=4e-16 * 8)


def test_log1p_of_minus_expit_is_finite_and_returns_within_the_budget():
    """np.log1p(-expit(z)) = -softplus(z): -40 at z = 40 (as written, expit rounds to 1 there and
    log1p(-1) = -inf); the program pass once never returned on it (SymPy's series at infinity)."""
    z = np.array([-180.0, -3.0, 0.5, 40.0, 800.0])
    got = sg.jit(lambda z: np.log1p(-expit(z)))(z)
    np.testing.assert_allclose(got, -np.logaddexp(0.0, z), rtol=4e-16)


def binomial_loglik(p, k, n):
    """Binomial log-likelihood in p (constant term dropped), elementwise in all arguments."""
    return xlogy(k, p) + xlogy(n - k, 1 - p)


def test_binomial_score_elementwise_over_a_grid():
    """signature=None and an elementwise function: one derivative per grid point, k/p - (n-k)/(1-p)."""
    p = np.linspace(0.05, 0.95, 7)
    assert_close(sg.grad(binomial_loglik)(p, 3.0, 10.0), 3 / p - 7 / (1 - p))


def student_t_nll(nu, x):
    """Student-t negative log-likelihood in the degrees of freedom nu (unit scale)."""
    return -np.sum(gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
                   - (nu + 1) / 2 * np.log1p(x ** 2 / nu))


def test_student_t_nll_value_and_grad_in_nu():
    """Value vs scipy.stats.t.logpdf; d/dnu uses digamma (closed form)."""
    nu, x = 4.5, DATA - 1.5
    val, g = sg.value_and_grad(student_t_nll)(nu, x)
    dterm = (0.5 * digamma((nu + 1) / 2) - 0.5 * digamma(nu / 2) - 0.5 / nu
             - 0.5 * np.log1p(x ** 2 / nu) + (nu + 1) / 2 * x ** 2 / (nu ** 2 + nu * x ** 2))
    assert_close((val, g), (-stats.t.logpdf(x, nu).sum(), -np.sum(dterm)))


def exponential_loglik(lam, x):
    """Exponential-distribution log-likelihood (Casella & Berger ex. 7.2.7)."""
    return x.size * np.log(lam) - lam * np.sum(x)


def test_exponential_mle_score():
    x = np.abs(DATA)
    assert_close(sg.grad(exponential_loglik)(0.8, x), x.size / 0.8 - x.sum())


def mvn_logpdf(x, mu, S):
    """Multivariate normal log-density via Cholesky (Rasmussen & Williams, GPML, alg. 2.1)."""
    L = np.linalg.cholesky(S)
    z = np.linalg.solve(L, x - mu)
    return -0.5 * z @ z - np.sum(np.log(np.diag(L))) - 0.5 * x.size * np.log(2 * np.pi)


def test_mvn_logpdf_value_and_gradient_in_mu():
    S = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
    x, mu = np.array([0.5, -1.0, 0.3]), np.array([0.1, 0.2, -0.1])
    val, g = sg.value_and_grad(mvn_logpdf, argnums=1)(x, mu, S)
    assert_close((val, g), (stats.multivariate_normal(mu, S).logpdf(x), np.linalg.solve(S, x - mu)))


def mixture_loglik(means, x):
    """Two-component Gaussian mixture log-likelihood with logsumexp (Bishop, PRML eq. 9.14)."""
    logw = np.log(np.array([0.3, 0.7]))
    comp = -0.5 * (x[:, None] - means[None, :]) ** 2 - 0.5 * np.log(2 * np.pi)
    return np.sum(logsumexp(logw + comp, axis=1))


def test_mixture_loglik_gradient_against_autograd():
    means = np.array([-1.0, 2.0])
    ref = autograd.grad(as_autograd(mixture_loglik))(means, DATA)
    assert_close(sg.grad(mixture_loglik)(means, DATA), ref)


def probit_loglik(beta, X, y):
    """Probit regression log-likelihood with log_ndtr (Albert & Chib 1993 model)."""
    q = 2 * y - 1
    return np.sum(log_ndtr(q * (X @ beta)))


def test_probit_gradient_closed_form():
    """d/dbeta = X^T (q phi(q eta) / Phi(q eta))."""
    X, y = INPUTS, TARGETS.astype(float)
    beta = np.array([0.4, 0.1, -0.3])
    q = 2 * y - 1
    eta = q * (X @ beta)
    expected = X.T @ (q * stats.norm.pdf(eta) / ndtr(eta))
    assert_close(sg.grad(probit_loglik)(beta, X, y), expected)


def softmax_cross_entropy(logits, labels):
    """Multiclass cross-entropy with a max shift (cs231n notes), rows are examples."""
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=1))


def test_softmax_cross_entropy_gradient_closed_form():
    """d/dlogits = (softmax(logits) - labels) / batch."""
    logits = RNG.normal(size=(5, 4))
    labels = np.eye(4)[[0, 3, 1, 1, 2]]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    assert_close(sg.grad(softmax_cross_entropy)(logits, labels), (e / e.sum(axis=1, keepdims=True) - labels) / 5)


def var_std_programs():
    return [lambda x: np.var(x), lambda x: np.std(x), lambda x: x.var() + x.std()]


@pytest.mark.parametrize("k", range(3))
def test_variance_and_std_gradients_against_jax(k):
    """np.var / np.std / array methods (population form, ddof=0): JAX x64 on the same source."""
    jax = need_jax()
    f = var_std_programs()[k]
    x = DATA[:6]
    assert_close(sg.grad(f)(x), to_numpy(jax.grad(as_jax(f))(x)))


def gamma_nll(k, x):
    """Gamma-distribution negative log-likelihood in the shape k (unit scale)."""
    return -np.sum((k - 1) * np.log(x) - x - gammaln(k))


def test_gamma_shape_score_uses_digamma():
    x = np.abs(DATA) + 0.1
    assert_close(sg.grad(gamma_nll)(2.5, x), -np.sum(np.log(x) - digamma(2.5)))
