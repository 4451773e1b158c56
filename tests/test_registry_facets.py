"""One declaration per primitive: every elementwise op declares every facet, and the
tables the rest of symgrad uses (SymPy -> op, the stabiliser's float and mpmath
evaluators, the tracer's ufunc map, the printer's operators) are derived from it.

No Numba compilation here: the facets are checked against each other directly
(NumPy reference vs the float evaluator vs mpmath at 30 digits vs a SymPy round trip).
"""
import zlib

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad  # noqa: F401  (registers every op)
from symgrad.emit.prelude import helper_source
from symgrad.ir.from_sympy import from_sympy
from symgrad.ir.graph import Graph
from symgrad.ir.interpret import evaluate
from symgrad.ir.ops import REGISTRY, sympy_functions, sympy_relations
from symgrad.stabilize import numeric, reference
from symgrad.trace import numpy_api

# the double-double region has a program parameter and any number of arguments: its facets are
# checked in tests/stabilize/test_ddregion.py
ELEMENTWISE = sorted(n for n, op in REGISTRY.items() if op.elementwise and n != "dd_region")
# SymPy's own expression forms stand for these (Add, Mul, Pow, Piecewise, Max, And ...),
# which from_sympy and both evaluators handle structurally
STRUCTURAL_SYMPY = {"add", "sub", "mul", "div", "neg", "pow", "sqrt", "where", "stop_gradient",
                    "maximum", "minimum", "logical_and", "logical_or", "logical_not"}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_every_elementwise_op_declares_every_facet(name):
    op = REGISTRY[name]
    missing = [f for f in ("infer", "numpy", "numeric", "sympy", "mpmath", "emit") if getattr(op, f) is None]
    assert not missing, f"op {name!r} lacks facets {missing}"
    assert op.domain, f"op {name!r} declares no sampling domain (its arity)"
    assert op.nondiff or op.partials is not None, f"op {name!r} has no derivative"
    assert op.nondiff or op.ref, f"op {name!r} cites no source for its derivative"
    for h in op.helpers:
        assert "def " + h + "(" in helper_source(h), f"op {name!r}: emit/prelude.py has no helper {h!r}"
    if name not in STRUCTURAL_SYMPY:
        assert op.sympy in sympy_functions() or op.sympy in sympy_relations(), \
            f"op {name!r}: its SymPy form {op.sympy} maps back to no op"


def _sample(domain, rng, n=6):
    return {"real": rng.uniform(-2, 2, n), "positive": rng.uniform(0.2, 3, n), "unit": rng.uniform(-0.9, 0.9, n),
            "nonzero": rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 2, n),
            "bool": rng.uniform(-1, 1, n) > 0, "prob": rng.uniform(0.05, 0.95, n),
            "above1": rng.uniform(1.1, 4, n), "order": rng.integers(1, 4, n).astype(float)}[domain]


FLOAT_OPS = [n for n in ELEMENTWISE if REGISTRY[n].infer.__name__ != "_infer_bool" and n != "where"]


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_facets_agree(name):
    """numpy == numeric (float64) == mpmath, and SymPy form -> from_sympy -> numpy agrees."""
    op = REGISTRY[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    args = [_sample(d, rng) for d in op.domain]
    ref = np.asarray(op.numpy(*args), dtype=float)
    np.testing.assert_allclose(op.numeric(*args), ref, rtol=1e-14, err_msg=f"{name}: numeric vs numpy")
    with mpmath.workdps(30):
        mp = [float(op.mpmath(*[mpmath.mpf(float(a[k])) for a in args])) for k in range(len(args[0]))]
    # scipy's kl_div cancels (x log(x/y) - x + y near x = y): mpmath is the exact one
    np.testing.assert_allclose(mp, ref, rtol=1e-11 if name == "kl_div" else 1e-13, atol=1e-300,
                               err_msg=f"{name}: mpmath vs numpy")
    syms = sp.symbols(f"a0:{len(args)}", real=True)
    expr = op.sympy(*syms)
    # the stabiliser's evaluators, built from the registry, evaluate the SymPy form
    X = np.stack(args, axis=1)
    np.testing.assert_allclose(numeric.compile_numpy(expr, syms, "float64")(X), ref, rtol=1e-14)
    np.testing.assert_allclose(reference.reference_values(reference.compile_mpmath(expr, syms), X, "float64"),
                               mp, rtol=1e-15)
    # and the SymPy form comes back as a graph computing the same values
    g = Graph()
    leaves = {s: g.input(f"a{i}", ()) for i, s in enumerate(syms)}
    out = from_sympy(g, expr, leaves)
    vals = evaluate(g, [out], {leaves[s]: np.asarray(a) for s, a in zip(syms, args)})[0]
    np.testing.assert_allclose(np.broadcast_to(vals, ref.shape), ref, rtol=1e-14)


def test_float32_numeric_facets_stay_float32():
    x = np.array([0.5, 0.25], dtype=np.float32)
    for name in FLOAT_OPS:
        op = REGISTRY[name]
        if len(op.domain) == 1 and op.domain[0] in ("real", "positive", "unit"):
            assert np.asarray(op.numeric(x)).dtype == np.float32, name


def test_tables_are_derived_from_the_registry():
    ufuncs = numpy_api._ufunc_table()
    for op in REGISTRY.values():
        for q in op.ufuncs:
            if q.startswith("numpy."):
                assert ufuncs[getattr(np, q.split(".", 1)[1])] == op.name
    assert {o.name for o in REGISTRY.values() if o.infix} >= {"add", "sub", "mul", "div", "neg", "pow", "gt"}
    assert {o.name for o in REGISTRY.values() if o.statement} >= {
        "contract", "scatter", "eye", "transpose", "sum",   # structural
        "take", "take_add", "amax", "amin", "cumsum",       # NumPy vocabulary
        "norm_inf", "inv", "solve", "det", "cholesky"}      # linear algebra
    assert set(reference._OVERRIDES) <= set(REGISTRY), "an mpmath override names no op"
    assert set(reference._ILL_OPS) <= set(REGISTRY)


# -- lowering: every op prints, and the printing lives in emit/ ------------------------------------

def test_every_op_has_a_printer_once_emit_is_loaded():
    """symgrad.emit.lowering fills the ``emit`` facet of the non-elementwise ops (ir/ cannot import
    emit/); an op registered without a printer, elementwise or not, fails here."""
    import symgrad.emit.printer  # noqa: F401  (imports symgrad.emit.lowering)

    missing = sorted(name for name, op in REGISTRY.items() if not callable(op.emit))
    assert not missing, f"ops without a Numba printer: {missing} (add one in symgrad/emit/lowering/)"


def test_install_printer_refuses_unknown_ops_and_second_printers():
    from symgrad.ir.ops import install_printer

    with pytest.raises(ValueError, match="no op 'no_such_op' is registered"):
        install_printer("no_such_op", lambda ctx, node, a: "")
    with pytest.raises(ValueError, match="op 'sum' has a printer already"):
        import symgrad.emit.printer  # noqa: F401
        install_printer("sum", lambda ctx, node, a: "")


def test_the_ir_prints_no_loops():
    """Lowering lives in symgrad/emit: no module of symgrad/ir writes a loop header or a
    ``{out}`` statement of generated code."""
    from pathlib import Path

    root = Path(symgrad.__file__).parent / "ir"
    offenders = [str(p.relative_to(root.parent)) for p in sorted(root.rglob("*.py"))
                 if "in range({" in p.read_text() or "{{out}}" in p.read_text()]
    assert not offenders, f"Numba loop printing in the IR: {offenders}; move it to symgrad/emit/lowering/"


def test_constant_args_have_no_partial_and_are_named():
    """OpDef.constant_args: the declared positions give a None partial (no rule; the transforms refuse
    to differentiate there instead of reading it as 0), the op names every argument, and its kink
    text says so."""
    from symgrad.ir.ops import E

    declared = {n: op for n, op in REGISTRY.items() if op.constant_args}
    assert {"jv", "yv", "iv", "kv", "ive", "kve", "gammainc", "gammaincc", "polygamma"} <= set(declared)
    for name, op in declared.items():
        g = Graph()
        args = [E(g, g.input(f"a{i}", ())) for i in range(len(op.domain))]
        partials = op.partials(E(g, g.apply(name, *[a.id for a in args])), *args)
        assert len(op.arg_names) == len(op.domain), name
        for k in op.constant_args:
            assert partials[k] is None, f"{name}: constant argument {k} has a partial"
        assert "constant argument" in op.kink, name
