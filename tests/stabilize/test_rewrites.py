"""Table-driven check of every identity's witness: naive wrong, rewritten right."""
import numpy as np
import pytest
import sympy as sp

from symgrad.stabilize.accuracy import ulp_bits
from symgrad.stabilize.numeric import evaluate
from symgrad.stabilize.reference import compile_mpmath, reference_values
from symgrad.stabilize.rewrites import RULES
from symgrad.stabilize.search import positions, replace_at


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_witness(rule):
    naive, point, dtype = rule.witness
    vs = sorted(point, key=str)
    X = np.array([[point[v] for v in vs]], dtype=dtype)
    ref = reference_values(compile_mpmath(naive, vs), X, dtype)
    assert np.isfinite(ref).all()
    naive_bits = ulp_bits(evaluate(naive, vs, X, dtype), ref)[0]
    assert naive_bits > 4, f"naive form is already accurate at the witness ({naive_bits})"
    best = min(ulp_bits(evaluate(replace_at(naive, path, new), vs, X, dtype), ref)[0]
               for path, node in positions(naive) for new in rule.apply(node))
    assert best <= 1.0


def test_rules_have_docs():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    for r in RULES:
        assert r.why and r.ref
