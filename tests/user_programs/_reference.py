"""Independent references for the user-program acceptance tests (issue 14, point 6).

Each program in ``tests/user_programs/`` is written once, with ``np`` and
``scipy.special`` names, as a user would write it.  The references run *the
same source* under another AD system:

* :func:`as_autograd` rebinds ``np`` to ``autograd.numpy`` and every
  ``scipy.special`` function to ``autograd.scipy.special`` (autograd is in the
  ``test`` extra, so these references run in CI);
* :func:`as_jax` rebinds them to ``jax.numpy`` / ``jax.scipy.special`` (x64);
  tests that use it call :func:`need_jax` first and are skipped without JAX.

Module-level helper functions the program calls are rebound too (recursively,
through one shared globals dict), so ``loss -> predict -> sigmoid`` runs
entirely under the reference.  Closures over numpy constants are kept.

:func:`assert_close` compares pytrees leaf by leaf: same structure, same shape,
the dtype the user asked for (float32 in, float32 out), and values within a
tolerance set by that dtype.  It never uses ``nan_to_num``.
"""
from __future__ import annotations

import types

import numpy as np
import pytest
import scipy.special

RTOL = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-4}


def _rebind(fun, mapping: dict, module_name: str):
    """A copy of ``fun`` whose globals map names through ``mapping``; helpers in ``module_name`` follow."""
    new_globals = dict(fun.__globals__)
    for name, value in list(new_globals.items()):
        if name in mapping:
            new_globals[name] = mapping[name]
        elif callable(value) and getattr(value, "__name__", None) in _SPECIAL_NAMES \
                and getattr(scipy.special, value.__name__, None) is value and ("special." + value.__name__) in mapping:
            new_globals[name] = mapping["special." + value.__name__]
    for name, value in list(new_globals.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == module_name:
            new_globals[name] = _copy_function(value, new_globals)
    return _copy_function(fun, new_globals)


def _copy_function(fun, new_globals):
    g = types.FunctionType(fun.__code__, new_globals, fun.__name__, fun.__defaults__, fun.__closure__)
    g.__kwdefaults__ = fun.__kwdefaults__
    return g


_SPECIAL_NAMES = {"expit", "logit", "gammaln", "digamma", "erf", "erfc", "logsumexp", "ndtr", "log_ndtr",
                  "xlogy", "softmax", "log_softmax", "log_expit", "xlog1py", "entr"}


def as_autograd(fun):
    """``fun`` with ``np`` -> ``autograd.numpy`` and scipy.special -> ``autograd.scipy.special``."""
    import autograd.numpy as anp
    import autograd.scipy.special as asp
    import autograd.scipy.stats as astats

    mapping = {"np": anp, "norm": astats.norm}
    for name in _SPECIAL_NAMES:
        if hasattr(asp, name):
            mapping["special." + name] = getattr(asp, name)
    # autograd lacks ndtr/log_ndtr/xlogy/softmax; give it compositions of its own primitives
    mapping.setdefault("special.ndtr", lambda x: 0.5 * asp.erfc(-x / np.sqrt(2.0)))
    mapping.setdefault("special.log_ndtr", lambda x: anp.log(0.5 * asp.erfc(-x / np.sqrt(2.0))))
    mapping.setdefault("special.xlogy", lambda x, y: x * anp.log(y))
    mapping.setdefault("special.softmax",
                       lambda x, axis=None: anp.exp(x - asp.logsumexp(x, axis=axis, keepdims=True)))
    mapping.setdefault("special.log_softmax",
                       lambda x, axis=None: x - asp.logsumexp(x, axis=axis, keepdims=True))
    return _rebind(fun, mapping, fun.__module__)


def need_jax():
    """Import JAX with 64-bit floats, or skip the calling test."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def as_jax(fun):
    """``fun`` with ``np`` -> ``jax.numpy`` and scipy.special -> ``jax.scipy.special`` (x64)."""
    jax = need_jax()
    import jax.numpy as jnp
    import jax.scipy.special as jsp
    import jax.scipy.stats as jstats

    mapping = {"np": jnp, "norm": jstats.norm}
    for name in _SPECIAL_NAMES:
        if hasattr(jsp, name):
            mapping["special." + name] = getattr(jsp, name)
    mapping.setdefault("special.softmax", jax.nn.softmax)
    mapping.setdefault("special.log_softmax", jax.nn.log_softmax)
    return _rebind(fun, mapping, fun.__module__)


def to_numpy(tree):
    """JAX / autograd results as float64 numpy pytrees (tuples stay tuples, lists lists, dicts dicts)."""
    if isinstance(tree, dict):
        return {k: to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(to_numpy(v) for v in tree)
    return np.asarray(tree, dtype=np.float64)


def f64(tree):
    """Inputs cast to float64 (references always run in float64)."""
    if isinstance(tree, dict):
        return {k: f64(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(f64(v) for v in tree)
    return np.asarray(tree, dtype=np.float64)


def _leaves(tree, path="out"):
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from _leaves(tree[k], f"{path}[{k!r}]")
    elif isinstance(tree, (tuple, list)):
        for i, v in enumerate(tree):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, tree


def _structure(tree):
    if isinstance(tree, dict):
        return ("dict", tuple(sorted(tree)), tuple(_structure(tree[k]) for k in sorted(tree)))
    if isinstance(tree, (tuple, list)):
        return ("seq", len(tree), tuple(_structure(v) for v in tree))
    return "leaf"


def assert_close(actual, expected, dtype=np.float64, rtol=None, atol=None, check_dtype=True):
    """Pytree comparison: structure, shapes, dtype (when ``check_dtype``) and values.

    Tolerances: relative ``RTOL[dtype]`` (1e-9 for float64, 2e-4 for float32) with an
    absolute floor of ``rtol * max|expected|`` per leaf, so entries that are exactly
    zero in the reference are compared at the scale of their neighbours.
    ``tuple`` and ``list`` count as the same sequence kind (JAX returns either).
    """
    dtype = np.dtype(dtype)
    assert _structure(actual) == _structure(expected), \
        f"result structure {_structure(actual)} differs from the reference's {_structure(expected)}"
    rtol = RTOL[dtype] if rtol is None else rtol
    for (path, a), (_, e) in zip(_leaves(actual), _leaves(expected)):
        assert a is not None, f"{path} is None; expected {e!r}"
        a_arr, e_arr = np.asarray(a), np.asarray(e, dtype=np.float64)
        assert a_arr.shape == e_arr.shape, f"{path}: shape {a_arr.shape}, expected {e_arr.shape}"
        if check_dtype:
            assert a_arr.dtype == dtype, f"{path}: dtype {a_arr.dtype}, expected {dtype}"
        scale = float(np.max(np.abs(e_arr))) if e_arr.size else 0.0
        floor = rtol * scale if atol is None else atol
        np.testing.assert_allclose(a_arr.astype(np.float64), e_arr, rtol=rtol, atol=floor, err_msg=path)


def assert_refused(excinfo, *names):
    """The refusal is a symgrad error (a typed one: TypeError/ValueError/NotImplementedError subclass)
    whose message names at least one of ``names`` (the construct the user wrote)."""
    import symgrad as sg

    err = excinfo.value
    assert isinstance(err, sg.SymgradError), f"{type(err).__name__} is not a symgrad error: {err}"
    text = str(err)
    assert any(n in text for n in names), f"message names none of {names}:\n{text}"
