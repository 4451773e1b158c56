"""Small neural networks as in autograd's examples/neural_net.py, JAX's MLP tutorial, cs231n and
micrograd.  References: autograd (or JAX x64) on the same source, closed forms."""
import autograd
import numpy as np
import pytest
from scipy.special import expit, logsumexp

import symgrad as sg

from ._reference import as_autograd, as_jax, assert_close, need_jax, to_numpy

RNG = np.random.default_rng(6)


def init_params(sizes, rng, scale=0.5):
    return [(scale * rng.standard_normal((m, n)), scale * rng.standard_normal(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def neural_net_predict(params, inputs):
    """autograd examples/neural_net.py: tanh layers, log-softmax outputs (logsumexp with keepdims)."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    """autograd examples/neural_net.py: squared L2 norm over all weights (a loop over the pytree)."""
    total = 0.0
    for W, b in params:
        total = total + np.sum(W ** 2) + np.sum(b ** 2)
    return total


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


INPUTS = RNG.standard_normal((6, 4))
TARGETS = np.eye(3)[[0, 2, 1, 1, 0, 2]]


def test_autograd_neural_net_gradient_over_parameter_pytree():
    params = init_params([4, 5, 3], RNG)
    ref = autograd.grad(as_autograd(log_posterior))(params, INPUTS, TARGETS, 0.1)
    assert_close(sg.grad(log_posterior)(params, INPUTS, TARGETS, 0.1), ref)


def relu(x):
    return np.maximum(0, x)


def predict(params, image):
    """JAX tutorial 'Training a simple neural network': per-example MLP with ReLU, log-softmax output."""
    activations = image
    for w, b in params[:-1]:
        outputs = np.dot(w, activations) + b
        activations = relu(outputs)
    final_w, final_b = params[-1]
    logits = np.dot(final_w, activations) + final_b
    return logits - logsumexp(logits)


def jax_mlp_params(rng):
    sizes = [4, 6, 3]
    return [(0.5 * rng.standard_normal((n, m)), 0.5 * rng.standard_normal(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def test_jax_mlp_tutorial_per_example_gradients_with_signature():
    """JAX uses vmap for per-example gradients; symgrad batches one image per row under a signature
    (one core per pytree leaf: image, then w1, b1, w2, b2)."""
    params = jax_mlp_params(np.random.default_rng(3))
    images = RNG.standard_normal((5, 4))

    def loss(image, params):
        return -predict(params, image)[1]
    per_ex = sg.grad(loss, signature="(d),(n,d),(n),(k,n),(k)->()")(images, params)
    ref = np.stack([autograd.grad(as_autograd(loss))(im, params) for im in images])
    assert_close(per_ex, ref)


def test_jax_mlp_tutorial_parameter_gradient_without_signature():
    """grad of the mean loss over a batch (a Python loop over examples), params a list of tuples."""
    params = jax_mlp_params(np.random.default_rng(4))
    images, labels = RNG.standard_normal((3, 4)), np.eye(3)[[2, 0, 1]]

    def batch_loss(params):
        total = 0.0
        for image, label in zip(images, labels):
            total = total - np.sum(predict(params, image) * label)
        return total / len(images)
    assert_close(sg.grad(batch_loss)(params), autograd.grad(as_autograd(batch_loss))(params))


def mse_mlp(w1, b1, w2, x, y):
    """Two-layer tanh regression network, mean squared error (a typical first-NN tutorial)."""
    h = np.tanh(x @ w1 + b1)
    return np.mean((h @ w2 - y) ** 2)


def test_mse_mlp_float32_gradients():
    x, y = RNG.standard_normal((8, 2)), RNG.standard_normal(8)
    w1, b1, w2 = RNG.standard_normal((2, 5)), RNG.standard_normal(5), RNG.standard_normal(5)
    args32 = [a.astype(np.float32) for a in (w1, b1, w2, x, y)]
    ref = autograd.grad(as_autograd(mse_mlp), argnum=0)(w1, b1, w2, x, y), \
        autograd.grad(as_autograd(mse_mlp), argnum=1)(w1, b1, w2, x, y), \
        autograd.grad(as_autograd(mse_mlp), argnum=2)(w1, b1, w2, x, y)
    assert_close(sg.grad(mse_mlp, argnums=(0, 1, 2))(*args32), ref, dtype=np.float32)


def neuron(w, b, x):
    """micrograd's Neuron: tanh(w . x + b)."""
    return np.tanh(np.dot(w, x) + b)


def test_micrograd_neuron_batched_over_inputs():
    """Signature "(n),(),(n)->()" with a batch of 5 inputs: grad w.r.t. w has shape (5, n)."""
    w, b, xs = np.array([0.5, -0.3, 0.8]), 0.1, RNG.standard_normal((5, 3))
    t = np.tanh(xs @ w + b)
    assert_close(sg.grad(neuron, signature="(n),(),(n)->()")(w, b, xs), (1 - t ** 2)[:, None] * xs)


def dense_sigmoid(x, W, b):
    """A sigmoid layer (scipy.special.expit)."""
    return expit(W @ x + b)


def test_sigmoid_layer_jacobian_closed_form():
    W, b, x = RNG.standard_normal((3, 4)), RNG.standard_normal(3), RNG.standard_normal(4)
    s = expit(W @ x + b)
    assert_close(sg.jacobian(dense_sigmoid)(x, W, b), (s * (1 - s))[:, None] * W)


def test_logistic_unit_hessian_matches_autograd():
    """Hessian of a one-layer loss w.r.t. its weight vector, against autograd.hessian."""
    X, y = RNG.standard_normal((7, 3)), (RNG.random(7) > 0.5).astype(float)

    def loss(w):
        z = X @ w
        return np.sum(np.logaddexp(0.0, z) - y * z)
    w = np.array([0.2, -0.4, 0.1])
    assert_close(sg.hessian(loss)(w), autograd.hessian(as_autograd(loss))(w))


def layer_norm(x, eps=1e-5):
    """Layer normalisation (Ba, Kiros & Hinton 2016) of one feature vector."""
    return (x - np.mean(x)) / np.sqrt(np.var(x) + eps)


def test_layer_norm_jacobian_against_jax():
    jax = need_jax()
    x = RNG.standard_normal(5)
    assert_close(sg.jacobian(layer_norm)(x), to_numpy(jax.jacrev(as_jax(layer_norm))(x)))


def attention(q, k, v):
    """Scaled dot-product attention (Vaswani et al. 2017) with a row softmax, .T and @."""
    s = q @ k.T / np.sqrt(q.shape[-1])
    p = np.exp(s - np.max(s, axis=-1, keepdims=True))
    p = p / np.sum(p, axis=-1, keepdims=True)
    return p @ v


def test_attention_gradient_against_jax():
    jax = need_jax()
    q, k, v = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4)), RNG.standard_normal((5, 2))
    f = lambda q, k, v: np.sum(attention(q, k, v) ** 2)  # noqa: E731
    ref = jax.grad(as_jax(f), argnums=(0, 1, 2))(q, k, v)
    assert_close(sg.grad(f, argnums=(0, 1, 2))(q, k, v), to_numpy(tuple(ref)))


def rnn_loss(W, U, xs, h0):
    """Elman RNN unrolled over a fixed sequence (Python loop over rows of xs), squared final state."""
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def test_rnn_gradient_against_autograd():
    W, U = 0.5 * RNG.standard_normal((3, 3)), 0.5 * RNG.standard_normal((3, 2))
    xs, h0 = RNG.standard_normal((4, 2)), np.zeros(3)
    ref = autograd.grad(as_autograd(rnn_loss), argnum=0)(W, U, xs, h0), \
        autograd.grad(as_autograd(rnn_loss), argnum=1)(W, U, xs, h0)
    assert_close(sg.grad(rnn_loss, argnums=(0, 1))(W, U, xs, h0), ref)


def conv1d_loss(w, x):
    """A 1-D 'valid' convolution written with slices (cs231n style), then a squared loss."""
    m = x.shape[0] - w.shape[0] + 1
    out = sum(w[j] * x[j:j + m] for j in range(w.shape[0]))
    return np.sum(out ** 2)


def test_conv1d_gradient_against_autograd():
    w, x = np.array([0.2, -0.5, 0.3]), RNG.standard_normal(8)
    assert_close(sg.grad(conv1d_loss)(w, x), autograd.grad(as_autograd(conv1d_loss))(w, x))


def einsum_layer(W, x):
    """A linear layer written with np.einsum (JAX/NumPy einsum docs)."""
    return np.einsum("ij,j->i", W, x)


def test_einsum_layer_jacobian_wrt_weights():
    """d(Wx)_i / dW_jk = delta_ij x_k: shape (3, 3, 4)."""
    W, x = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    assert_close(sg.jacobian(einsum_layer)(W, x), np.einsum("ij,k->ijk", np.eye(3), x))


def test_training_loop_matches_autograd_trajectory():
    """Ten steps of gradient descent on the tanh MLP regression; parameters in a dict (pytree)."""
    x, y = RNG.standard_normal((8, 2)), RNG.standard_normal(8)
    params = {"w1": 0.5 * RNG.standard_normal((2, 4)), "b1": np.zeros(4), "w2": 0.5 * RNG.standard_normal(4)}

    def loss(p):
        return mse_mlp(p["w1"], p["b1"], p["w2"], x, y)
    g, g_ref = sg.grad(loss), autograd.grad(as_autograd(loss))
    ours, ref = dict(params), dict(params)
    for _ in range(10):
        d, d_ref = g(ours), g_ref(ref)
        ours = {k: ours[k] - 0.1 * d[k] for k in ours}
        ref = {k: ref[k] - 0.1 * d_ref[k] for k in ref}
    assert_close(ours, ref)
