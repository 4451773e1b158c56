"""Regime inference (symgrad.stabilize.regimes): the segment search and the choice of pieces.

The dynamic program over segments is checked against an exhaustive search over every cut
and every assignment of candidates; the splits it builds are checked on closed-form errors.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp

from symgrad.stabilize.accuracy import Sample
from symgrad.stabilize.regimes import MAX_SEGMENTS, _segmentations, best_split

x = sp.Symbol("x", real=True)


def _exhaustive(P, valid, s):
    """Lowest cost of ``s`` contiguous segments, adjacent ones served by different candidates."""
    K, n1 = P.shape
    best = None
    for cuts in itertools.combinations([i for i in range(n1) if valid[i]], s - 1):
        b = [0, *cuts, n1 - 1]
        for ids in itertools.product(range(K), repeat=s):
            if any(ids[i] == ids[i + 1] for i in range(s - 1)):
                continue
            cost = sum(P[k, b[i + 1]] - P[k, b[i]] for i, k in enumerate(ids))
            best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_segment_program_matches_the_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        K, n = int(rng.integers(2, 5)), int(rng.integers(3, 9))
        C = rng.random((K, n)) * rng.integers(1, 4, (K, n))
        P = np.concatenate([np.zeros((K, 1)), np.cumsum(C, axis=1)], axis=1)
        valid = np.concatenate([[False], rng.random(n - 1) < 0.8, [False]])
        got = _segmentations(P, valid, MAX_SEGMENTS)
        for s in range(2, MAX_SEGMENTS + 1):
            want, hit = _exhaustive(P, valid, s), got[s - 2]
            if want is None:
                assert hit is None
                continue
            cost, ids, cuts = hit
            assert cost == pytest.approx(want, abs=1e-12)
            bounds = [0, *cuts, n]  # the reconstruction is a split of that cost
            assert sum(P[k, bounds[i + 1]] - P[k, bounds[i]] for i, k in enumerate(ids)) == pytest.approx(cost)
            assert all(valid[c] for c in cuts) and list(cuts) == sorted(set(cuts))
            assert all(ids[i] != ids[i + 1] for i in range(s - 1))


def _sample(xs):
    xs = np.asarray(xs, dtype=np.float64)
    return {"float64": Sample(np.dtype(np.float64), xs[:, None], np.zeros(len(xs)))}


def test_four_segments_when_one_form_serves_two_separate_intervals():
    """A serves x < -2 and -1 < x < 1, B the rest: four pieces, which two or three cannot express."""
    xs = np.linspace(-4, 4, 81)
    a_bits = np.where((xs < -2) | ((xs > -1) & (xs < 1)), 0.0, 20.0)
    b_bits = np.where(a_bits > 0, 0.0, 20.0)
    A, B = sp.sin(x), sp.sin(x / 2) * sp.cos(x / 2) * 2  # the bits are given; thresholds are refined on these
    pw, cond, gain = best_split([(A, {"float64": a_bits}), (B, {"float64": b_bits})], _sample(xs), [x], A)
    assert [p.expr for p in pw.args] == [A, B, A, B]
    thresholds = [float(p.cond.rhs) for p in pw.args[:-1]]
    for t, want in zip(thresholds, (-2, -1, 1)):  # within the bracket of the neighbouring sample points
        assert abs(t - want) <= 0.1 + 1e-12
    assert gain > 5  # every point within its form's 0 bits, against 20 bits on a third or more of them
