"""The cheap call paths (a scalar gradient called with Python floats, hvp with plain arrays) give
the same values as the general path and never use a stale captured value.  No timings here:
speed is measured in benchmarks/peers.py (sections 2 and 3)."""
import math

import numpy as np

import symgrad as sg

W = 2.0  # a module global read by the traced functions below


def _latency_f(x, y, z):
    return x * y * np.sin(z) + np.exp(x * z)


def _uses_global(x):
    return W * x ** 3


def test_scalar_core_keeps_the_gil_batch_kernels_release_it():
    """Scalar cores are called from Python for one point: nogil's release and re-acquire cost more
    than the core (peers.py section 2 went from 1.04x to 1.3x hand-written njit with it)."""
    g = sg.grad(_latency_f, argnums=(0, 1, 2))
    g(0.7, 1.3, 0.4)
    mod, name = g.func.__globals__, g.func.__name__
    core, batch = mod[f"{name}_f64"], mod[f"{name}_f64_batch"]
    assert not core.targetoptions.get("nogil", False)
    assert batch.targetoptions.get("nogil", False)


def test_scalar_fast_path_values():
    g = sg.grad(_latency_f, argnums=(0, 1, 2))
    a, b, c = 0.7, 1.3, 0.4
    expect = (b * math.sin(c) + c * math.exp(a * c), a * math.sin(c), a * b * math.cos(c) + a * math.exp(a * c))
    for _ in range(3):  # the first call builds; later ones take the routed fast path
        got = g(a, b, c)
        assert all(type(v) is float for v in got)
        np.testing.assert_allclose(got, expect, rtol=1e-15)
    # NumPy scalars and arrays leave the float fast path and give the same numbers
    np.testing.assert_allclose([float(v) for v in g(np.float64(a), b, c)], expect, rtol=1e-15)
    np.testing.assert_allclose([v[1] for v in g(np.array([0.0, a]), b, c)], expect, rtol=1e-15)
    assert all(v.dtype == np.float32 for v in g(np.float32(a), np.float32(b), np.float32(c)))


def test_global_changed_after_compiling_is_seen_with_float_arguments():
    global W
    g = sg.grad(_uses_global)
    assert g(1.0) == 6.0
    assert g(2.0) == 24.0  # the same entry again
    W = 5.0
    try:
        assert g(1.0) == 15.0
        assert g(np.float64(1.0)) == 15.0
        np.testing.assert_array_equal(g(np.array([1.0, 2.0])), [15.0, 60.0])
    finally:
        W = 2.0
    assert g(1.0) == 6.0
