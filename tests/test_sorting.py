"""np.sort, np.median, np.quantile and np.percentile on traced arrays (symgrad/trace/numpy_sorting.py):
values bit-equal to NumPy's, derivatives the permutation (closed form) and JAX's."""
import itertools

import numpy as np
import pytest

import symgrad as sg
from symgrad.trace.numpy_sorting import merge_sort_rounds


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 31, 64, 100])
def test_merge_sort_network_sorts_every_zero_one_input_and_random_values(n):
    """Knuth's zero-one principle (TAOCP 5.3.4, Theorem Z): a comparator network that sorts every
    0/1 sequence sorts every sequence.  Exhaustive up to n = 13, random beyond."""
    rounds = merge_sort_rounds(n)
    for lo, hi in rounds:  # the pairs of a round are disjoint: one vectorised minimum/maximum
        assert len(set(lo.tolist()) | set(hi.tolist())) == 2 * len(lo) and np.all(lo < hi)

    def apply(v):
        v = np.array(v, dtype=float)
        for lo, hi in rounds:
            a, b = v[lo].copy(), v[hi].copy()
            v[lo], v[hi] = np.minimum(a, b), np.maximum(a, b)
        return v
    inputs = itertools.product((0.0, 1.0), repeat=n) if n <= 13 else np.random.default_rng(n).normal(size=(200, n))
    for v in inputs:
        np.testing.assert_array_equal(apply(v), np.sort(v))


def test_sort_median_quantile_values_are_numpys():
    rng = np.random.default_rng(1)
    x, M = rng.normal(size=7), rng.normal(size=(3, 4))

    def stats(a, m):
        return (np.sort(a), np.sort(m, axis=0), np.sort(m, axis=None), np.median(a), np.median(m, axis=1),
                np.median(m, axis=0, keepdims=True), np.quantile(a, [0.0, 0.1, 0.25, 0.9, 1.0]),
                np.percentile(m, [[10.0, 20.0], [30.0, 77.0]], axis=1))
    for got, want in zip(sg.jit(stats)(x, M), stats(x, M)):
        np.testing.assert_array_equal(got, want)


def test_derivative_of_a_sort_is_the_permutation():
    """d/dx_i sum_k w_k sort(x)_k = w_(rank of x_i); the Jacobian of sort is a permutation matrix."""
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=7), np.arange(1.0, 8.0)
    g = sg.grad(lambda a: np.sum(np.sort(a) * np.arange(1.0, 8.0)))(x)
    np.testing.assert_array_equal(g, w[np.argsort(np.argsort(x))])
    J = sg.jacobian(lambda a: np.sort(a))(x[:5])
    np.testing.assert_array_equal(J, np.eye(5)[np.argsort(x[:5])])


def test_median_and_trimmed_mean_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def loss(a, np=np):
        return np.median(a) ** 2 + np.mean(np.sort(a)[1:-1]) + np.percentile(a, 37.0)
    x = np.random.default_rng(3).normal(size=6)
    np.testing.assert_allclose(sg.grad(loss)(x), jax.grad(lambda a: loss(a, np=jnp))(x), rtol=1e-14, atol=1e-15)


def test_unsupported_sort_and_quantile_arguments_are_named():
    x = np.linspace(0.0, 1.0, 5)
    with pytest.raises(sg.UnsupportedOperationError, match="method='nearest'"):
        sg.jit(lambda a: np.quantile(a, 0.3, method="nearest"))(x)
    with pytest.raises(ValueError, match=r"range \[0, 1\]"):
        sg.jit(lambda a: np.quantile(a, 1.5))(x)
    with pytest.raises(sg.UnsupportedOperationError, match="a traced q"):
        sg.grad(lambda q, a: np.quantile(a, q))(0.5, x)


def test_order_statistics_of_an_empty_axis_are_refused_and_short_axes_pass_through():
    x = np.array([1e308, -2.0, 0.5])
    with pytest.raises(ValueError, match="no elements along the axis"):
        sg.jit(lambda a: np.median(a[:0]))(x)
    got = sg.jit(lambda a: (np.sort(a[:1]) * 2.0, np.sum(np.sort(a[:0]))))(x)
    np.testing.assert_array_equal(got[0], [np.inf])
    assert got[1] == 0.0
