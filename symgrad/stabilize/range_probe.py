"""Points where a rewritten form leaves the floating-point range and the formula as written does not.

A rewrite can narrow the inputs over which a formula stays in range.  ``exp(x) - exp(-x)``
is finite up to x = 710.5; its stable form ``exp(-x) * expm1(2x)`` overflows in ``expm1(2x)``
from x = 354.9 on, so ``sg.grad(lambda x: np.exp(x) - 2 + np.exp(-x))`` was inf on
(354.9, 710.5).  Such a window is one binade of the exponent range: bit patterns drawn over
every float land in it once in 2000 draws, and the never-worse check's grid of ordinary inputs
(:mod:`.accept`) has 100 and 710 on either side of it.

The probe is a sweep over every binade (a few magnitudes per binade, both signs; for several
inputs, one input swept with the others at ordinary values, and all equal), evaluated in NumPy
in each dtype, the formula as written and each candidate form: no references.  Points where a
form is inf or NaN, or 0, while the formula as written is finite and nonzero are the range
failures; a few of them, spread over the sweep, get correctly rounded references and join the
never-worse check's sample (:func:`with_range_failures`), whose repairs (a regime piece
replaced, a split with the formula as written) and per-dtype regime decisions then see them.
A point whose reference is not finite is dropped: there the form's overflow is the truth's.

References:
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", 2nd ed., sec. 27.8
    (avoiding overflow).  Panchekha et al. (2015), PLDI, sec. 6 (fresh samples).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from .accuracy import Sample
from .budget import check_deadline
from .reference import compile_mpmath, reference_values
from .result import evaluate_result
from .sampling import domain_bounds

__all__ = ["sweep_points", "range_failures", "with_range_failures"]

STEPS_ONE = 8     # magnitudes per binade for a function of one input (about 33000 points in float64)
STEPS_MANY = 2    # per binade for each swept input of a function of several
OTHERS = (0.75, -1.5)  # the values the inputs not swept take
MAX_ROWS = 40000  # rows of a sweep of several inputs at most (beyond, rows evenly spaced are kept)
MAX_POINTS = 32   # range failures per dtype that get references and join the check
TOP_BINADES = 24  # the highest binades of each dtype, left out of the sweep (see _magnitudes)


def _magnitudes(dt: np.dtype, steps: int) -> np.ndarray:
    """``2**(k/steps)`` over every binade of ``dt`` (subnormals included) but the ``TOP_BINADES``
    highest, both signs.  Those are the inputs a scaling of the input (``2*x``, ``400*x``) overflows
    for any form: the search's bit-pattern sample lands there once in 85 draws, and a branch to
    keep the Rosenbrock gradient finite beyond |x| = 4.5e307 cost its float64 kernel a quarter of
    its speed."""
    fi = np.finfo(dt)
    lo, hi = int(np.log2(float(fi.smallest_subnormal))), int(np.floor(np.log2(float(fi.max)))) - TOP_BINADES
    with np.errstate(over="ignore", under="ignore"):
        m = np.exp2(np.arange(lo * steps, (hi + 1) * steps) / steps).astype(dt)
    m = m[np.isfinite(m) & (m > 0)]
    return np.concatenate([-m[::-1], m])


def sweep_points(variables: Sequence[sp.Symbol], domain: Mapping | None, dtype) -> np.ndarray:
    """The probe's points in ``dtype``, inside ``domain``: rows of ``len(variables)`` inputs."""
    dt = np.dtype(dtype)
    k = len(variables)
    if k == 1:
        X = _magnitudes(dt, STEPS_ONE)[:, None]
    else:
        m = _magnitudes(dt, STEPS_MANY)
        blocks = [np.repeat(m[:, None], k, axis=1)]  # all inputs equal
        for j in range(k):
            for other in OTHERS:
                B = np.full((len(m), k), other, dtype=dt)
                B[:, j] = m
                blocks.append(B)
        X = np.concatenate(blocks)
        if len(X) > MAX_ROWS:  # many inputs (a scalar-loop model's region): a coarser sweep of each
            X = X[np.linspace(0, len(X) - 1, MAX_ROWS).round().astype(int)]
    bounds = [domain_bounds(v, domain, dt) for v in variables]
    ok = np.all([(X[:, j] >= lo) & (X[:, j] <= hi) for j, (lo, hi) in enumerate(bounds)], axis=0)
    return X[ok]


def range_failures(orig: sp.Expr, forms: Sequence[sp.Expr], variables: Sequence[sp.Symbol],
                   domain: Mapping | None, dtype) -> np.ndarray:
    """Rows of :func:`sweep_points` where some form of ``forms`` is inf, NaN or 0 and ``orig`` (the
    formula as written), in the same dtype's arithmetic, is finite and nonzero; at most
    ``MAX_POINTS``, spread evenly over the sweep."""
    dt = np.dtype(dtype)
    X = sweep_points(variables, domain, dt)
    if not len(X):
        return X
    check_deadline()
    with np.errstate(all="ignore"):
        base = np.broadcast_to(evaluate_result(orig, False, variables, X, dt), (len(X),))
        fine = np.isfinite(base) & (base != 0)
        bad = np.zeros(len(X), dtype=bool)
        for f in dict.fromkeys(forms):
            if f == orig:
                continue
            check_deadline()  # the program's stabiliser budget (a no-op outside one)
            v = np.broadcast_to(evaluate_result(f, False, variables, X, dt), (len(X),))
            bad |= fine & (~np.isfinite(v) | (v == 0))
    idx = np.flatnonzero(bad)
    if len(idx) > MAX_POINTS:
        idx = idx[np.linspace(0, len(idx) - 1, MAX_POINTS).round().astype(int)]
    return X[idx]


def with_range_failures(samples: dict, orig: sp.Expr, forms: Sequence[sp.Expr], variables: Sequence[sp.Symbol],
                        domain: Mapping | None) -> dict:
    """``samples`` (``{dtype: Sample}``, the never-worse check's) with the :func:`range_failures` of
    ``forms`` added in each dtype, with their correctly rounded references (only the finite ones);
    ``samples`` itself when there are none."""
    out, fn = dict(samples), None
    for dt, s in samples.items():
        X = range_failures(orig, forms, variables, domain, s.dtype)
        if not len(X):
            continue
        fn = fn or compile_mpmath(orig, variables)
        ref = reference_values(fn, X, s.dtype)
        ok = np.isfinite(ref)
        if ok.any():
            out[dt] = Sample(s.dtype, np.concatenate([s.X, X[ok]]), np.concatenate([s.ref, ref[ok]]))
    return out
