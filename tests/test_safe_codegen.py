"""Adversarial names cannot break or hijack generated code, and still give the right numbers.

User strings reach generated source only as validated identifiers (parameter names, pytree
keys and function names pass through :func:`symgrad.trace.names.identifier`; derived names
such as ``x_bar`` come from :class:`symgrad.emit.names.Namespace`) or escaped text (comments,
docstrings).  Every test checks values against NumPy and parses the generated source.
"""
import ast
import functools
import importlib.util
import sys

import numpy
import re

import numpy as np
import pytest

import symgrad as sg
from symgrad import aot
from symgrad.emit.names import check_names, comment_lines, docstring
from symgrad.emit.prelude import HELPERS
from symgrad.trace.names import RESERVED, identifier, unique

KINDS = ("jit", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "hvp")

# strings that must never reach generated code as code
PAYLOADS = [
    "'; import os #", '"""; import os; """', "x\nimport os", "\rimport os", "a\u2028import os",
    "a\x00b", "x\\", "\"'", "#",
]
# names generated code defines or uses, and names Python reserves
CLASHES = [
    "class", "lambda", "None", "np", "numba", "math", "base64", "t0", "t1", "_sigmoid", "_softplus", "_decode",
    "_erf", "_b", "_i0", "_c0", "GufuncSpec", "gufunc_call", "x_bar", "out", "out_bar", "f_grad_f64", "range", "abs",
    "isinstance", "float", "<lambda>",
]
UNICODE = ["résumé", "α", "ﬁ", "fi", "x-y", "x_y", "x y", "1abc", "a b", "Ⅸ", "x²", ""]

FORBIDDEN_NAMES = {"os", "__import__", "system", "eval", "exec", "open", "subprocess"}


def assert_safe_source(src: str, payloads=(), aot_module: bool = False) -> ast.Module:
    """The source parses, imports only what symgrad's modules import, runs no user text as code."""
    assert all(c.isprintable() or c == "\n" for c in src), "control character in generated source"
    tree = ast.parse(src)
    allowed_imports = {"base64", "math", "numba", "numpy", "symgrad.runtime.gufunc", "symgrad.errors"}
    if aot_module:
        allowed_imports |= {"sys", "dataclasses", "importlib.util", "os"}
    else:  # JIT modules import the vecmath functions; standalone modules copy them
        allowed_imports |= {"symgrad.emit.vecmath"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= allowed_imports, ast.dump(node)
        elif isinstance(node, ast.ImportFrom):
            assert node.module in allowed_imports, ast.dump(node)
        elif isinstance(node, ast.Name) and not aot_module:
            assert node.id not in FORBIDDEN_NAMES, node.id
    top = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign)
    if aot_module:
        top += (ast.Expr, ast.ClassDef, ast.If)
    for stmt in tree.body:
        assert isinstance(stmt, top), ast.dump(stmt)[:200]
    for p in payloads:
        if any(not (c.isalnum() or c == "_") for c in p) and p not in ("#", '"""'):
            assert p not in src, f"user string {p!r} reached generated source unescaped"
    return tree


def kernel_params(tree: ast.Module) -> list[list[str]]:
    return [[a.arg for a in f.args.args] for f in tree.body if isinstance(f, ast.FunctionDef)]


# -- the name functions themselves -----------------------------------------------------------------
@pytest.mark.parametrize("text", CLASHES + UNICODE + PAYLOADS + [3, None, ("a", 1)])
def test_identifier_is_safe(text):
    name = identifier(text)
    check_names("k_jit", [name])  # raises if unsafe
    assert name.isidentifier()


def test_identifier_examples():
    assert identifier("x-y") == "x_y" and identifier("1abc") == "_1abc_"
    assert identifier("class") == "class_" and identifier("np") == "np_" and identifier("t0") == "t0_"
    assert identifier("_b") == "_b_" and identifier("ﬁ") == "fi"  # NFKC, as Python's parser does
    assert identifier("α") == "α" and identifier("résumé") == "résumé"
    assert set(HELPERS) <= RESERVED  # helpers the prelude may define are never user names


def test_unique_never_reuses_a_name_in_the_list():
    assert unique(["a", "a", "a_2"]) == ["a", "a_3", "a_2"]
    names = unique([identifier(k) for k in ["x-y", "x_y", "x y", "x_y_2"]])
    assert len(set(names)) == 4


@pytest.mark.parametrize("text", PAYLOADS + ['"""', "a\rb", "end\\"])
def test_comment_and_docstring_escape(text):
    src = "\n".join(comment_lines(f"note {text}")) + f"\ndef f():\n    {docstring(text)}\n    return 1\n"
    tree = assert_safe_source(src)
    assert ast.get_docstring(tree.body[0], clean=False) == text
    head = src[:src.index("\ndef f():")]
    assert all(line.startswith("#") for line in head.split("\n"))


# -- pytree keys --------------------------------------------------------------------------------------
def _keys():
    return sorted(set(CLASHES + UNICODE + PAYLOADS))


def weighted(d):
    """sum_k w_k * sin(d[k]) + d[k0] * d[k1]: every key has its own gradient."""
    keys = sorted(d)
    total = 0.0
    for w, k in enumerate(keys, start=1):
        total = total + w * numpy.sin(d[k])
    return total + d[keys[0]] * d[keys[1]]


def test_dict_keys_values_and_gradients():
    keys = _keys()
    d = {k: 0.1 * (i + 1) for i, k in enumerate(keys)}
    want = sum(w * np.sin(d[k]) for w, k in enumerate(keys, start=1)) + d[keys[0]] * d[keys[1]]
    assert float(sg.jit(weighted, stabilize=False)(d)) == pytest.approx(want, rel=1e-12)
    g = sg.grad(weighted, stabilize=False)(d)
    assert set(g) == set(keys)
    for w, k in enumerate(keys, start=1):
        extra = d[keys[1]] if k == keys[0] else d[keys[0]] if k == keys[1] else 0.0
        assert float(g[k]) == pytest.approx(w * np.cos(d[k]) + extra, rel=1e-12), k
    # batched: each leaf an array
    db = {k: np.linspace(-1, 1, 4) + i for i, k in enumerate(keys)}
    gb = sg.grad(weighted, stabilize=False)(db)
    np.testing.assert_allclose(gb[keys[5]], 6 * np.cos(db[keys[5]]), rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_dict_keys_source_is_safe(kind):
    keys = _keys()
    d = {k: 0.5 for k in keys}
    src = sg.trace(weighted, d).source(kind, stabilize=False)
    tree = assert_safe_source(src, keys)
    for params in kernel_params(tree):
        # part functions of a split kernel also take generated temporaries (t0, t1, ...) as parameters
        check_names("weighted_" + kind, [p for p in params if not p.startswith("_c") and not re.fullmatch(r"t\d+", p)])


def test_dict_keys_cache_file_is_safe():
    keys = _keys()
    d = {k: 0.25 for k in keys}
    g = sg.grad(weighted, stabilize=False)
    g(d)
    with open(g.compiled.entry_for((d,)).source_path) as fh:
        assert_safe_source(fh.read(), keys)


# -- parameters named like the generated code's own names ----------------------------------------------
def clash(np, numba, math, base64, t0, t1, x_bar, out_bar, GufuncSpec, gufunc_call, range, abs, max,
          isinstance, float, clash_grad, clash_grad_f64, _b, _sigmoid, _softplus, _decode, _i0, _c0, x, x_dot):
    return (np * numba + math * base64 + t0 * t1 + x_bar * out_bar + GufuncSpec * gufunc_call + range * abs
            + max * isinstance + float * clash_grad + clash_grad_f64 * _b + _sigmoid * _softplus + _decode * _i0
            + _c0 * x_dot + numpy.log1p(numpy.exp(x)))


N_CLASH = clash.__code__.co_argcount


def _clash_grad(vals):
    """Analytic gradient of clash: each product's partner, and sigmoid for the softplus term."""
    g = np.zeros(N_CLASH)
    pairs = [(2 * i, 2 * i + 1) for i in range(11)]
    for a, b in pairs:
        g[a], g[b] = vals[b], vals[a]
    g[23] = 1 / (1 + np.exp(-vals[23]))  # x
    g[22], g[24] = vals[24], vals[22]      # _c0 * x_dot
    return g


def test_parameters_named_like_generated_names():
    vals = [0.1 * (i + 1) for i in range(N_CLASH)]
    got = sg.grad(clash, argnums=tuple(range(N_CLASH)))(*vals)  # stabilised: calls _softplus/_sigmoid helpers
    np.testing.assert_allclose(np.array(got, dtype=float), _clash_grad(vals), rtol=1e-12)
    assert float(sg.jit(clash)(*vals)) == pytest.approx(clash(*[np.float64(v) for v in vals]), rel=1e-12)
    arrays = [np.full(3, v) for v in vals]
    got = sg.grad(clash, argnums=tuple(range(N_CLASH)))(*arrays)
    np.testing.assert_allclose(np.array(got)[:, 0], _clash_grad(vals), rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_parameters_named_like_generated_names_source(kind):
    vals = [0.5] * N_CLASH
    src = sg.trace(clash, *vals).source(kind, argnums=tuple(range(N_CLASH)), stabilize=kind == "grad")
    tree = assert_safe_source(src)
    defs = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert f"clash_{kind}_f64" in defs and f"clash_{kind}" in defs
    module_names = defs | {t.id for a in tree.body if isinstance(a, ast.Assign) for t in a.targets}
    for params in kernel_params(tree):
        assert len(params) == len(set(params))
        assert not set(params) & module_names, set(params) & module_names  # no parameter shadows a kernel
    if kind == "grad":  # the user's clash_grad_f64 parameter is renamed where it would shadow the kernel
        assert "def clash_grad_f64(np_, numba_," in src and "clash_grad_f64_2" in src


def test_derived_names_do_not_merge_with_user_names():
    """A parameter x_bar / x_dot / out_bar used to become x's cotangent or tangent (SyntaxError)."""
    def f(x, x_bar):
        return x * x * x_bar

    def g(out_bar):
        return out_bar ** 3

    def h(x, x_dot):
        return x * x_dot

    assert sg.grad(f, argnums=(0, 1))(2.0, 3.0) == (12.0, 4.0)
    out, vjp_fn = sg.vjp(g, 2.0)
    assert out == 8.0 and vjp_fn(1.0) == (12.0,)
    assert sg.jvp(h, (2.0, 3.0), (1.0, 0.0)) == (6.0, 3.0)
    assert float(sg.hvp(lambda x, x_dot: x ** 3 * x_dot, (2.0, 1.0), (1.0, 0.0))[0]) == 12.0
    tangents, dots = sg.trace(h, 2.0, 3.0).jvp_expr()
    # tangents of x and of x_dot are x_dot_2 and x_dot_dot: d(x * x_dot) = x_dot * x_dot_2 + x * x_dot_dot
    assert [str(t) for t in tangents] == ["x_dot_2", "x_dot_dot"]
    assert str(dots[0]) == "x*x_dot_dot + x_dot*x_dot_2"


def test_signature_dimension_names_that_are_keywords():
    def dot(a, b):
        return np.sum(a * b)

    f = sg.grad(dot, argnums=(0, 1), signature="(class),(class)->()")
    a, b = np.arange(3.0), np.arange(3.0) + 5
    ga, gb = f(a, b)
    np.testing.assert_array_equal(ga, b)
    np.testing.assert_array_equal(gb, a)
    src = sg.trace(dot, a, b, signature="(lambda),(lambda)->()").source("hessian", argnums=(0, 1))
    assert_safe_source(src)


# -- function names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CLASHES + UNICODE + PAYLOADS)
def test_function_names(name):
    def f(x):
        return x * np.sin(x)

    f.__name__ = f.__qualname__ = name
    g = sg.grad(f, stabilize=False)
    assert float(g(0.7)) == pytest.approx(np.sin(0.7) + 0.7 * np.cos(0.7), rel=1e-14)
    with open(g.compiled.entry_for((0.7,)).source_path) as fh:
        assert_safe_source(fh.read(), [name])
    assert_safe_source(sg.trace(f, 0.7).source("hessian", stabilize=False), [name])


def test_functools_partial_and_lambdas():
    def f(x, y, scale=1.0):
        return scale * x * y ** 2

    p = functools.partial(f, scale=3.0)
    assert float(sg.grad(p)(2.0, 5.0)) == 75.0
    assert float(sg.grad(functools.partial(f, 2.0))(5.0)) == 20.0
    two = [lambda x: x ** 2, lambda x: x ** 3]
    assert [float(sg.grad(fn)(2.0)) for fn in two] == [4.0, 12.0]
    assert_safe_source(sg.trace(p, 2.0, 5.0).source("grad", stabilize=False))


def test_unicode_parameters():
    ns = {"np": np}
    exec("def uni(α, β, résumé, ﬁ, Ⅸ):\n    return α * β + np.sin(résumé) * ﬁ + Ⅸ", ns)
    uni = ns["uni"]
    assert [p for p in uni.__code__.co_varnames] == ["α", "β", "résumé", "fi", "IX"]  # Python normalises
    got = sg.grad(uni, argnums=(0, 1, 2, 3, 4))(1.0, 2.0, 0.5, 3.0, 7.0)
    want = (2.0, 1.0, np.cos(0.5) * 3.0, np.sin(0.5), 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    src = sg.trace(uni, 1.0, 2.0, 0.5, 3.0, 7.0).source("grad", argnums=(0, 1, 2, 3, 4), stabilize=False)
    assert_safe_source(src)
    assert "def uni_grad_f64(α, β, résumé, fi, IX):" in src


# -- user text in comments: custom_gradient names, file names, docstrings ---------------------------------------
@pytest.mark.parametrize("name", PAYLOADS)
def test_custom_gradient_name_in_comments(name):
    def inner(x):
        return np.sin(x), lambda u: 2.0 * u * np.cos(x)

    inner.__name__ = name
    fn = sg.custom_gradient(inner)
    assert float(sg.grad(fn, stabilize=False)(0.3)) == pytest.approx(2 * np.cos(0.3), rel=1e-14)
    _, dot = sg.jvp(fn, (0.3,), (1.0,), stabilize=False)
    assert float(dot) == pytest.approx(2 * np.cos(0.3), rel=1e-14)
    for kind in ("grad", "jvp"):
        src = sg.trace(fn, 0.3).source(kind, stabilize=False)
        assert "custom_gradient:" in src
        assert_safe_source(src, [name])


@pytest.mark.parametrize("k, filename", list(enumerate(["evil\nimport os\n.py", "evil\rimport os.py", 'q"""\nimport os.py'])))
def test_file_name_and_docstring_with_code(k, filename):
    # a distinct function per case: the cache key is the program, so equal programs share a module
    src = f'def f(x):\n    """doc \\"\\"\\" with quotes\n    import os\n    """\n    return x * x + {k}.0\n'
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    f = ns["f"]
    g = sg.grad(f, stabilize=False)
    assert float(g(3.0)) == 6.0
    with open(g.compiled.entry_for((3.0,)).source_path) as fh:
        text = fh.read()
    assert_safe_source(text, [filename, f.__doc__])
    assert repr(filename) in text  # the header names the file, escaped


# -- standalone modules (symgrad compile) ---------------------------------------------------------------------
def test_aot_module_with_adversarial_names(tmp_path):
    def vec(x):
        return np.sum(x * x)

    def sca(x):
        return x * np.sin(x)

    vec.__name__ = "gufunc_call"
    sca.__name__ = "np"
    d_keys = ["class", "x-y", "out_bar"]

    def tree(d):
        return d["class"] * d["x-y"] + d["out_bar"]

    built = aot.build([aot.Target(vec, (np.ones(3),), "(n)->()"), aot.Target(sca, (1.0,)),
                       aot.Target(tree, ({k: 1.0 for k in d_keys},))], kinds=("grad", "vjp"), stabilize=False)
    src = aot.module_source(built, dtypes=("float64",))
    assert_safe_source(src, aot_module=True)
    path = tmp_path / "adversarial_aot.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("adversarial_aot", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["adversarial_aot"] = mod
    try:
        spec.loader.exec_module(mod)
        # a function named gufunc_call / np must not replace the runtime's gufunc_call or numpy
        assert mod.gufunc_call.__module__ == "adversarial_aot" and mod.np is np
        np.testing.assert_allclose(mod.gufunc_call__grad(np.arange(6.0).reshape(2, 3)), 2 * np.arange(6.0).reshape(2, 3))
        # the scalar x and the vector x are different inputs of the shared graph
        assert float(mod.np__grad(0.7)) == pytest.approx(np.sin(0.7) + 0.7 * np.cos(0.7), rel=1e-14)
        assert float(mod.tree_jit(2.0, 3.0, 4.0)) == 2.0 * 4.0 + 3.0  # leaves in sorted key order: class, out_bar, x-y
    finally:
        sys.modules.pop("adversarial_aot", None)
