"""The regime split's optimiser (``regimes._best_segments``) against exhaustive search.

A split hands each candidate form a run of consecutive points (sorted by one key's values) and may
cut only between distinct key values; its cost is the sum of the chosen candidates' per-point costs.
The optimiser finds the cheapest split into two or three runs with prefix sums; here every cut
position and every candidate assignment is tried on small problems, and the costs must agree.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from symgrad.stabilize.regimes import _best_segments


def _exhaustive(keys, costs):
    """The cheapest 2- or 3-run split over every key, by trying every cut and assignment."""
    K, best = costs.shape[0], np.inf
    for _, vals in keys:
        order = np.argsort(vals, kind="stable")
        sv, C = vals[order], costs[:, order]
        n = len(sv)
        cuts = [i for i in range(1, n) if sv[i] > sv[i - 1]]
        for i in cuts:
            for a, b in itertools.permutations(range(K), 2):
                best = min(best, C[a, :i].sum() + C[b, i:].sum())
        for i, k in itertools.combinations(cuts, 2):
            for a, b, c in itertools.product(range(K), repeat=3):
                if a != b and b != c:
                    best = min(best, C[a, :i].sum() + C[b, i:k].sum() + C[c, k:].sum())
    return best


def _split_cost(keys, costs, found):
    """The cost of the split ``found`` describes, recomputed from its pieces."""
    _, j, ids, cuts = found
    order = np.argsort(keys[j][1], kind="stable")
    C = costs[:, order]
    bounds = [0, *cuts, C.shape[1]]
    return sum(C[k, bounds[n]:bounds[n + 1]].sum() for n, k in enumerate(ids))


@pytest.mark.parametrize("seed", range(40))
def test_best_segments_is_the_cheapest_split(seed):
    rng = np.random.default_rng(seed)
    K, n = int(rng.integers(2, 5)), int(rng.integers(3, 12))
    costs = rng.integers(0, 4, size=(K, n)).astype(float) if seed % 2 else rng.random((K, n))
    # keys with repeated values: no cut may fall between equal values
    keys = [(None, rng.integers(0, 6, size=n).astype(float)) for _ in range(int(rng.integers(1, 3)))]
    found = _best_segments(keys, costs)
    best = _exhaustive(keys, costs)
    if not np.isfinite(best):
        assert found is None
        return
    assert found is not None
    assert found[0] == pytest.approx(best, abs=1e-9)
    assert _split_cost(keys, costs, found) == pytest.approx(best, abs=1e-9)  # the pieces it names cost that
    _, j, ids, cuts = found
    sv = np.sort(keys[j][1], kind="stable")
    assert all(sv[c] > sv[c - 1] for c in cuts)  # cuts between distinct values
    assert all(a != b for a, b in zip(ids, ids[1:]))  # neighbouring runs use different candidates


def test_best_segments_prefers_two_runs_and_the_first_key_on_ties():
    """Ties within 1e-12 go to the first key, and two runs before three."""
    costs = np.array([[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    keys = [("x", np.array([0.0, 1.0, 2.0, 3.0])), ("y", np.array([0.0, 1.0, 2.0, 3.0]))]
    cost, j, ids, cuts = _best_segments(keys, costs)
    assert (cost, j, ids, cuts) == (0.0, 0, (0, 1), (2,))
    assert _best_segments([("x", np.array([1.0, 1.0, 1.0, 1.0]))], costs) is None  # no cut possible
