"""symgrad.emit.lowering: the printed loops of the non-elementwise ops, and the one loop-nest helper.

The expected lines are the loop orders the interpreter tier (symgrad/emit/tape.py) mirrors; a
change here changes rounding, so it must change both (tests/test_tiers.py checks they agree).
Printing only, no Numba compilation; values are checked by executing the printed lines with
NumPy against np.einsum / np.add.at / np.cumsum.
"""
import numpy as np
import pytest

from symgrad.emit.loops import element_loops, index_vars, loop_nest
from symgrad.emit.printer import PrintContext
from symgrad.ir.graph import Graph
from symgrad.ir.ops import REGISTRY


def test_loop_nest_text():
    assert loop_nest([]) == ([], "")
    assert loop_nest([("_j", 2), ("_k", 5)], "    ") == (
        ["    for _j in range(2):", "        for _k in range(5):"], "            ")
    assert element_loops((3, 4)) == (["for _i0 in range(3):", "    for _i1 in range(4):"], "        ")
    assert index_vars(3) == ["_i0", "_i1", "_i2"]


def _lines(g, nid, names):
    node = g[nid]
    return REGISTRY[node.op].emit(PrintContext(g, "float64"), node, names)


def _run(lines, **env):
    """Execute printed statements (``{out}`` -> ``out``) with NumPy; returns ``out``."""
    env = dict(env, np=np)
    exec("\n".join(line.replace("{out}", "out") for line in lines), env)  # noqa: S102 - our own printed code
    return env["out"]


def test_sum_accumulates_in_memory_order():
    g = Graph()
    x = g.input("x", (2, 3))
    s = g.apply("sum", x, params=((1,),))
    assert _lines(g, s, ["x"]) == ["{out} = np.zeros((2,), dtype=np.float64)",
                                   "for _i0 in range(2):", "    for _i1 in range(3):",
                                   "        {out}[_i0] += x[_i0, _i1]"]


@pytest.mark.parametrize("spec,sa,sb", [("ij,j->i", (3, 4), (4,)), ("nh,ni->hi", (5, 2), (5, 3)),
                                        ("i,i->", (4,), (4,)), ("ij,jk->ik", (2, 3), (3, 2))])
def test_contract_prints_the_einsum(spec, sa, sb):
    g = Graph()
    a, b = g.input("a", sa), g.input("b", sb)
    c = g.apply("contract", a, b, params=(spec,))
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal(sa), rng.standard_normal(sb)
    np.testing.assert_allclose(_run(_lines(g, c, ["a", "b"]), a=A, b=B), np.einsum(spec, A, B), rtol=1e-14)


def test_contract_outer_product_form_streams_rows():
    g = Graph()
    a, b = g.input("a", (5, 2)), g.input("b", (5, 3))
    c = g.apply("contract", a, b, params=("nh,ni->hi",))
    assert _lines(g, c, ["a", "b"]) == ["{out} = np.zeros((2, 3), dtype=np.float64)",
                                        "for _n in range(5):", "    for _h in range(2):",
                                        "        for _i in range(3):",
                                        "            {out}[_h, _i] += a[_n, _h] * b[_n, _i]"]


def test_take_add_accumulates_repeated_indices_like_add_at():
    g = Graph()
    v = g.input("v", (2, 4))
    idx = g.const(np.array([0.0, 2.0, 2.0, 1.0]))
    t = g.apply("take_add", v, idx, params=(1, 3))
    V = np.arange(8.0).reshape(2, 4)
    want = np.zeros((2, 3))
    np.add.at(want, (slice(None), [0, 2, 2, 1]), V)
    np.testing.assert_array_equal(_run(_lines(g, t, ["v", "c"]), v=V, c=np.array([0.0, 2.0, 2.0, 1.0])), want)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_lines_give_numpy_cumsum(reverse):
    g = Graph()
    x = g.input("x", (2, 3))
    c = g.apply("cumsum", x, params=(1, reverse))
    X = np.arange(6.0).reshape(2, 3)
    want = np.flip(np.cumsum(np.flip(X, 1), axis=1), 1) if reverse else np.cumsum(X, axis=1)
    np.testing.assert_array_equal(_run(_lines(g, c, ["x"]), x=X), want)


def test_amax_keeps_a_nan_once_seen():
    g = Graph()
    x = g.input("x", (4,))
    m = g.apply("amax", x, params=((0,),))
    assert np.isnan(_run(_lines(g, m, ["x"]), x=np.array([1.0, np.nan, 3.0, 2.0])))
    assert _run(_lines(g, m, ["x"]), x=np.array([1.0, 5.0, 3.0, 2.0])) == 5.0


def test_scatter_writes_the_slice():
    g = Graph()
    v = g.input("v", (2,))
    s = g.apply("scatter", v, params=((("s", 1, 5, 2),), (5,)))
    np.testing.assert_array_equal(_run(_lines(g, s, ["v"]), v=np.array([7.0, 8.0])), [0, 7, 0, 8, 0])


def test_scatter_chain_with_its_scatter_first_is_one_chain():
    """A chain the stabiliser rebuilt holds some scatters as the first operand of their add (the
    graph orders a commutative op's operands by node id): still one chain of assignments, one
    instruction per element on the tape, not a full-length add per term (a 2453-entry sparse
    Jacobian's tape had 4.3 million instructions instead of 11 thousand)."""
    from symgrad.emit.printer import KernelIO, scatter_sums
    from symgrad.emit.tape import build_tape

    g = Graph()
    xs = [g.input(f"x{k}", ()) for k in range(3)]
    s2 = g.apply("scatter", g.apply("exp", xs[2]), params=((2,), (3,)))  # made first: the lowest id
    s0 = g.apply("scatter", g.apply("exp", xs[0]), params=((0,), (3,)))
    s1 = g.apply("scatter", g.apply("exp", xs[1]), params=((1,), (3,)))
    inner = g.apply("add", s0, s1)
    top = g.apply("add", inner, s2)
    assert g[top].args == (s2, inner)
    order = g.ancestors([top])
    uses = {}
    for nid in order:
        for a in g[nid].args:
            uses[a] = uses.get(a, 0) + 1
    sums, absorbed = scatter_sums(g, order, uses)
    assert sums == {top: [s0, s1, s2]} and {s0, s1, s2, inner} <= absorbed
    tape = build_tape(g, [KernelIO(f"x{k}", x, ()) for k, x in enumerate(xs)], [KernelIO("out", top, (3,))])
    assert tape.size <= 6, tape.code  # three exps and at most one write per element
