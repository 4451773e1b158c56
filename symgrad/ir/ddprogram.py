"""Straight-line programs of double-double regions: built from SymPy, run, shown, named.

A region the stabiliser marks ``dd(u)`` (:class:`symgrad.ir.sympy_funcs.dd`) becomes one
``dd_region`` graph node whose arguments are the free symbols of ``u`` (sorted by name) and
whose parameter is ``u`` as a tuple of instructions, each referring to earlier ones by index:

* ``("input", i)``: argument ``i`` of the node;
* ``("const", hi, lo)``: the constant ``hi + lo`` (``lo`` carries the bits of 1/3, ln 2 ...
  that float64 drops);
* ``(op, a)`` / ``(op, a, b)`` for ``op`` in :data:`UNARY` / :data:`BINARY`;
* ``("powi", a, n)``: ``a ** n`` for an integer ``n``.

A region marked ``ddt(u)`` (:class:`symgrad.ir.sympy_funcs.ddt`) has the same arithmetic and,
for exp, expm1, log and log1p, the instructions of :data:`TAIL` (``exp_tail`` ...): the float64
function at the argument's high part plus the first-order term of its low part
(:func:`symgrad.ir.ddmath.dd_exp_tail`), float64-accurate at about the cost of one dd
multiplication.

The value is the last instruction's.  A program holds only names from these tables, integers
and floats (never user text), so the code printed from it (:mod:`symgrad.emit.ddregion`) is
safe by construction.  :func:`run` evaluates it with :mod:`.ddmath`, the same functions and
roundings the kernel's helper executes, so the stabiliser scores what the kernel computes.
"""
from __future__ import annotations

import hashlib
import os

import mpmath
import numpy as np
import sympy as sp

from . import ddmath as D
from .interpret import sympy_number
from .sympy_funcs import dd, ddt, expm1, hypot, log1p, sigmoid, softplus

__all__ = ["dd_regions_enabled", "OP_NAME", "UNARY", "BINARY", "TAIL", "BASE", "from_sympy_region", "region_of",
           "fold", "to_sympy", "has_tails", "marker_of", "run", "run_many", "bound_spec", "trusted_bound",
           "without_tails", "operation_count", "helper_name", "program_of", "INSTRUCTIONS"]

def dd_regions_enabled() -> bool:
    """Whether the stabiliser may choose double-double regions (``$SYMGRAD_DD_REGIONS``: ``1``, the
    default, yes; ``0``: no, float64 kernels stay in float64 arithmetic, faster where a region would
    have been chosen and less accurate there).  Part of every generated module's cache key.

    Raises:
      ValueError: the variable is set to something other than ``0`` or ``1``.
    """
    text = os.environ.get("SYMGRAD_DD_REGIONS", "").strip()
    if text in ("", "1"):
        return True
    if text == "0":
        return False
    raise ValueError(f"SYMGRAD_DD_REGIONS must be 1 (double-double regions allowed, the default) or 0; got {text!r}")


OP_NAME = "dd_region"  # the graph op of a region (symgrad.ir.rules.ddregion)
UNARY = {"neg": None, "exp": D.dd_exp, "expm1": D.dd_expm1, "log": D.dd_log, "log1p": D.dd_log1p,
         "sqrt": D.dd_sqrt, "sigmoid": D.dd_sigmoid, "softplus": D.dd_softplus, "tanh": D.dd_tanh,
         "sinh": D.dd_sinh, "cosh": D.dd_cosh, "erf": D.dd_erf, "erfc": D.dd_erfc, "sin": D.dd_sin,
         "cos": D.dd_cos, "exp_tail": D.dd_exp_tail, "expm1_tail": D.dd_expm1_tail, "log_tail": D.dd_log_tail,
         "log1p_tail": D.dd_log1p_tail}
TAIL = {"exp": "exp_tail", "expm1": "expm1_tail", "log": "log_tail", "log1p": "log1p_tail"}  # in ddt regions
BASE = {**{op: op for op in UNARY}, **{tail: op for op, tail in TAIL.items()}}  # the function an instruction computes
BINARY = {"add": D.dd_add, "sub": None, "mul": D.dd_mul, "div": D.dd_div, "hypot": D.dd_hypot,
          "maximum": D.dd_max, "minimum": D.dd_min}
_SYMPY_UNARY = {sp.exp: "exp", expm1: "expm1", sp.log: "log", log1p: "log1p", sigmoid: "sigmoid",
                softplus: "softplus", sp.tanh: "tanh", sp.sinh: "sinh", sp.cosh: "cosh", sp.erf: "erf",
                sp.erfc: "erfc", sp.sin: "sin", sp.cos: "cos"}
INSTRUCTIONS = ("input", "const", "powi", *UNARY, *BINARY)


def _split(value: sp.Expr) -> tuple[float, float]:
    with mpmath.workprec(320):
        v = mpmath.mpf(sp.Float(value, 100)._mpf_) if not value.is_Float else mpmath.mpf(value._mpf_)
        hi = float(v)
        return hi, float(v - hi)


def _is_negative(t) -> bool:  # as symgrad.ir.from_sympy: terms printed as subtractions
    return t.could_extract_minus_sign() and not t.is_Number or (t.is_Number and t < 0)


def from_sympy_region(u: sp.Expr, variables, tails: bool = False) -> tuple:
    """The program of ``u`` over ``variables`` (ordered symbols); with ``tails``, exp, expm1,
    log and log1p are the float64 functions with a first-order tail (:data:`TAIL`), the program
    of ``ddt(u)``.

    Sums are formed in :func:`symgrad.ir.from_sympy.from_sympy`'s order (positive terms by
    ``default_sort_key``, then the negative ones subtracted), products as numerator then
    one division per denominator factor.

    Raises:
      NotImplementedError: ``u`` has a node with no double-double routine (atan, a power whose
        exponent is not a multiple of 1/2, Piecewise ...; with ``tails``, sigmoid, softplus, tanh,
        sinh, cosh, erf, erfc, sin and cos).
    """
    prog: list[tuple] = []
    memo: dict = {}
    pos = {v: i for i, v in enumerate(variables)}

    def add(instr) -> int:
        if instr in memo:
            return memo[instr]
        prog.append(instr)
        memo[instr] = len(prog) - 1
        return memo[instr]

    def rec(e) -> int:
        key = ("expr", e)
        if key in memo:
            return memo[key]
        memo[key] = out = build(e)
        return out

    def build(e) -> int:
        if e in pos:
            return add(("input", pos[e]))
        if e.is_Number or e.is_NumberSymbol:
            if not e.is_real or e.is_infinite:
                raise NotImplementedError(f"double-double region: constant {e}")
            return add(("const", *_split(e)))
        if isinstance(e, sp.Symbol):
            raise NotImplementedError(f"double-double region: free symbol {e}")
        if e.is_Add:
            terms = sorted(e.args, key=sp.default_sort_key)
            plus = [rec(t) for t in terms if not _is_negative(t)]
            minus = [rec(-t) for t in terms if _is_negative(t)]
            acc = plus[0] if plus else None
            for t in plus[1:]:
                acc = add(("add", acc, t))
            for t in minus:
                acc = add(("neg", t)) if acc is None else add(("sub", acc, t))
            return acc
        if e.is_Mul:
            if e.args[0] == -1:
                return add(("neg", rec(sp.Mul(*e.args[1:]))))
            num = [f for f in e.args if not (f.is_Pow and f.exp.is_Number and f.exp < 0)]
            den = [sp.Pow(f.base, -f.exp) for f in e.args if f.is_Pow and f.exp.is_Number and f.exp < 0]
            acc = rec(num[0]) if num else add(("const", 1.0, 0.0))
            for f in num[1:]:
                acc = add(("mul", acc, rec(f)))
            for f in den:
                acc = add(("div", acc, rec(f)))
            return acc
        if e.is_Pow:
            base, ex = e.args
            if base == sp.E:
                return add((unary("exp"), rec(ex)))
            if ex == sp.Rational(1, 2):
                return add(("sqrt", rec(base)))
            if ex == sp.Rational(-1, 2):
                return add(("div", add(("const", 1.0, 0.0)), add(("sqrt", rec(base)))))
            if ex.is_Integer and abs(int(ex)) <= 64:
                return add(("powi", rec(base), int(ex)))
            if ex.is_Rational and ex.q == 2 and abs(ex.p) <= 64:  # (x^2 + y^2)^(3/2): sqrt, then powi
                return add(("powi", add(("sqrt", rec(base))), int(ex.p)))
            raise NotImplementedError(f"double-double region: power {e}")
        if isinstance(e, dd):
            return rec(e.args[0])
        if isinstance(e, hypot):
            return add(("hypot", rec(e.args[0]), rec(e.args[1])))
        if isinstance(e, (sp.Max, sp.Min)):  # Max(a, b, c) as maximum(maximum(a, b), c), arguments in SymPy's order
            op = "maximum" if isinstance(e, sp.Max) else "minimum"
            args = [rec(t) for t in e.args]
            acc = args[0]
            for t in args[1:]:
                acc = add((op, acc, t))
            return acc
        name = _SYMPY_UNARY.get(e.func)
        if name is None:
            raise NotImplementedError(f"double-double region: no routine for {e.func.__name__}")
        return add((unary(name), rec(e.args[0])))

    def unary(name: str) -> str:
        if not tails:
            return name
        if name not in TAIL:
            raise NotImplementedError(f"double-double region with first-order tails: no routine for {name}")
        return TAIL[name]

    rec(sp.sympify(u))
    return tuple(prog)


def region_of(mark: dd) -> tuple[list, tuple]:
    """``(leaves, program)`` of a marked region ``dd(u)`` or ``ddt(u)``: the free symbols of ``u``
    sorted by name (the ``dd_region`` node's arguments) and ``u``'s program over them."""
    leaves = sorted(mark.free_symbols, key=lambda s: s.name)
    return leaves, from_sympy_region(mark.args[0], leaves, tails=isinstance(mark, ddt))


def fold(program: tuple, args, *, const, neg, powi, binary, unary, every: bool = False):
    """The value of ``program``'s last instruction (with ``every``, the list of every
    instruction's), each instruction's value made by a callback from its operands' values:
    ``args[i]`` for ``("input", i)``, ``const(hi, lo)``, ``neg(a)``, ``powi(a, n)``,
    ``binary(op, a, b)`` for ``op`` in :data:`BINARY`, ``unary(op, a)`` for the others.  One walk
    for every way a program is run, shown or lowered as a plain formula."""
    vals: list = []
    for ins in program:
        op = ins[0]
        if op == "input":
            v = args[ins[1]]
        elif op == "const":
            v = const(ins[1], ins[2])
        elif op == "neg":
            v = neg(vals[ins[1]])
        elif op == "powi":
            v = powi(vals[ins[1]], ins[2])
        elif op in BINARY:
            v = binary(op, vals[ins[1]], vals[ins[2]])
        else:
            v = unary(op, vals[ins[1]])
        vals.append(v)
    return vals if every else vals[-1]


_SYMPY_OF = {**{name: cls for cls, name in _SYMPY_UNARY.items()}, "sqrt": sp.sqrt}  # instruction -> SymPy class
_SYMPY_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                 "div": lambda a, b: a / b, "hypot": hypot, "maximum": sp.Max, "minimum": sp.Min}


def _sympy_const(hi: float, lo: float) -> sp.Expr:
    return sympy_number(hi) if lo == 0.0 else sp.Float(mpmath.mpf(hi) + mpmath.mpf(lo), 34)


def to_sympy(program: tuple, args) -> sp.Expr:
    """The SymPy expression ``program`` computes from the SymPy values ``args``."""
    return fold(program, args, const=_sympy_const, neg=lambda a: -a, powi=lambda a, n: a ** n,
                binary=lambda op, a, b: _SYMPY_BINARY[op](a, b), unary=lambda op, a: _SYMPY_OF[BASE[op]](a))


def has_tails(program: tuple) -> bool:
    """Has ``program`` a first-order-tail instruction (is it the program of a ``ddt`` region)?"""
    return any(ins[0] in BASE and ins[0] != BASE[ins[0]] for ins in program)


def marker_of(program: tuple):
    """The SymPy mark of ``program``'s region: :class:`~.sympy_funcs.ddt` or :class:`~.sympy_funcs.dd`."""
    return ddt if has_tails(program) else dd


def operation_count(program: tuple) -> int:
    """Number of double-double operations (instructions other than inputs and constants)."""
    return sum(1 for ins in program if ins[0] not in ("input", "const"))


def run(program: tuple, *args: float) -> float:
    """Value of ``program`` at float64 ``args``, exactly as the kernel's helper computes it:
    :mod:`.ddmath` on every instruction, ``hi + lo`` rounded once at the end.  A program with
    first-order tails (:func:`has_tails`) also carries each value's error bound
    (:func:`bound_spec`); where the result's bound exceeds :func:`trusted_bound` times its
    magnitude, the region is computed again with the dd functions (:func:`without_tails`)."""
    return _run(program, args)[0]


def _run(program: tuple, args) -> tuple[float, bool]:
    """``(value, whether the region was computed again with dd functions)``."""
    vals = _dd_values(program, args)
    hi, lo = vals[-1]
    if not has_tails(program):
        return hi + lo, False
    bounds: list[float] = []
    for k, ins in enumerate(program):
        name, refs = bound_spec(ins, k)
        operands = [vals[j][0] if kind == "hi" else bounds[j] if kind == "s" else j for kind, j in refs]
        bounds.append(0.0 if name is None else sum(operands) if name == "sum" else
                      operands[0] if name == "copy" else getattr(D, name)(*operands))
    if hi - hi != 0.0 or bounds[-1] <= trusted_bound(program) * abs(hi):
        return hi + lo, False
    hi, lo = _dd_values(without_tails(program), args)[-1]
    return hi + lo, True


def _dd_values(program: tuple, args) -> list[tuple[float, float]]:
    """Every instruction's ``(hi, lo)`` at float64 ``args``, by :mod:`.ddmath`."""
    def binary(op, a, b):
        return D.dd_add(*a, -b[0], -b[1]) if op == "sub" else BINARY[op](*a, *b)
    return fold(program, [(float(v), 0.0) for v in args], const=lambda h, l: (h, l),  # noqa: E741
                neg=lambda a: (-a[0], -a[1]), powi=lambda a, n: D.dd_powi(*a, n), binary=binary,
                unary=lambda op, a: UNARY[op](*a), every=True)


# The error bound of each instruction of a program with tails (symgrad.ir.ddmath, "Running error
# bounds"): the ddmath function and its operands -- "v" the instruction's high part, "a"/"b" its
# operands' high parts, "sa"/"sb" their bounds, "n" the integer exponent.
_BOUND = {"mul": ("dd_err_mul", ("a", "sa", "b", "sb")), "div": ("dd_err_div", ("v", "sa", "b", "sb")),
          "hypot": ("dd_err_hypot", ("v", "a", "sa", "b", "sb")), "powi": ("dd_err_powi", ("v", "a", "sa", "n")),
          "sqrt": ("dd_err_sqrt", ("v", "sa")), "exp_tail": ("dd_err_exp_tail", ("v", "sa")),
          "expm1_tail": ("dd_err_expm1_tail", ("v", "sa")), "log_tail": ("dd_err_log_tail", ("v", "a", "sa")),
          "log1p_tail": ("dd_err_log1p_tail", ("v", "a", "sa"))}


def bound_spec(ins: tuple, k: int) -> tuple:
    """``(name, refs)``: how instruction ``k`` (``ins``) of a program with tails bounds its error.
    ``name`` is None (an input or constant: exact), ``"copy"`` (negation), ``"sum"`` (addition,
    subtraction) or a :mod:`.ddmath` ``dd_err_*`` function; ``refs`` its operands, each
    ``("hi", j)`` (instruction ``j``'s high part), ``("s", j)`` (its bound) or ``("n", n)``
    (the exponent of ``powi``, as a float).

    Raises:
      KeyError: ``ins`` is an instruction with no bound (a dd elementary function: not in a
        program with tails).
    """
    op = ins[0]
    if op in ("input", "const"):
        return None, ()
    if op == "neg":
        return "copy", (("s", ins[1]),)
    if op in ("add", "sub", "maximum", "minimum"):  # a max or min is one of its operands: the sum of bounds bounds it
        return "sum", (("s", ins[1]), ("s", ins[2]))
    name, pattern = _BOUND[op]
    refs = {"v": ("hi", k), "a": ("hi", ins[1]), "sa": ("s", ins[1])}
    if op == "powi":
        refs["n"] = ("n", float(ins[2]))
    elif op in BINARY:
        refs.update(b=("hi", ins[2]), sb=("s", ins[2]))
    return name, tuple(refs[p] for p in pattern)


def trusted_bound(program: tuple) -> float:
    """The largest error bound, in units of u = 2^-53 times the result's magnitude, at which a
    program with tails keeps its result: the bound of its libm roundings when no cancellation
    amplifies them (``2 DD_LIBM_ULPS`` per function, relative errors adding through products),
    plus 2 (one ulp).  Beyond it the roundings were amplified, and the region is recomputed
    with dd functions."""
    n_tail = sum(1 for ins in program if ins[0] in TAIL.values())
    return 2.0 * D.DD_LIBM_ULPS * n_tail + 2.0


def without_tails(program: tuple) -> tuple:
    """``program`` with each first-order-tail instruction replaced by its dd function."""
    return tuple((BASE[ins[0]], *ins[1:]) if ins[0] in BASE else ins for ins in program)


def run_many(program: tuple, columns, recomputed: list | None = None) -> np.ndarray:
    """:func:`run` at every row: ``columns`` are float64 arrays of one length (one per input).
    ``recomputed``, if given, receives the number of rows a program with tails computed again
    with dd functions (what the region costs beyond its tails)."""
    cols = [np.asarray(c, dtype=np.float64) for c in columns]
    n = len(cols[0]) if cols else 1
    out, again = np.empty(n), 0
    for i in range(n):
        out[i], fell_back = _run(program, [c[i] for c in cols])
        again += fell_back
    if recomputed is not None:
        recomputed.append(again)
    return out


_PROGRAMS: dict[str, tuple] = {}  # helper name -> program (a memo: the name is a hash of the program)


def helper_name(program: tuple) -> str:
    """``_dd_region_<12 hex digits>``: the name of the kernel helper that runs ``program``."""
    digest = hashlib.sha256(repr(program).encode()).hexdigest()[:12]
    name = f"_dd_region_{digest}"
    _PROGRAMS[name] = program
    return name


def program_of(name: str) -> tuple:
    """The program whose helper is ``name`` (given by :func:`helper_name` in this process).

    Raises:
      KeyError: no program of that name was printed.
    """
    return _PROGRAMS[name]
