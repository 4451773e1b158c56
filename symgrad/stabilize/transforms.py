"""Algebraic transformations and series applied at high-error subexpressions.

These are the non-local moves of the search: SymPy's ``together``, ``cancel``,
``expand``, ``factor`` (never the heuristic, version-dependent ``simplify``)
and truncated series around 0 and infinity.  Series are only approximations;
they become useful inside a regime (see :mod:`regimes`) and are verified there.

References:
    Panchekha et al. (2015), "Automatically improving accuracy for floating
    point expressions", PLDI, sec. 4.3 (rewriting, series expansion).
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", sec. 1.14.
"""
from __future__ import annotations

import contextlib

import sympy as sp

from symgrad.ir.rules.special import cbrt

from .budget import cpu_clock, interrupted_past

__all__ = ["algebraic_variants", "series_variants", "split_powers", "adaptive_series", "series_source",
           "series_variable", "parametric_terms", "horner"]

_ALG = (("together", sp.together), ("cancel", sp.cancel), ("expand", sp.expand),
        ("factor", sp.factor), ("expand_trig", sp.expand_trig))


def _ok(e) -> bool:
    return not e.has(sp.I, sp.zoo, sp.nan, sp.oo, sp.Order, sp.LambertW, sp.polar_lift)


MAX_EXPANDED_POWER = 8  # (a + b)**n with n above this is not expanded, cancelled or factored


def _high_power_of_sum(node: sp.Expr) -> bool:
    return any(p.base.is_Add and p.exp.is_Integer and abs(int(p.exp)) > MAX_EXPANDED_POWER
               for p in node.atoms(sp.Pow))


def algebraic_variants(node: sp.Expr) -> list[tuple[str, sp.Expr]]:
    """``[(name, new_node)]`` for each transformation that changes ``node``.

    A node holding ``(a + b)**n`` with ``n > MAX_EXPANDED_POWER`` is not expanded, cancelled or
    factored: the binomial expansion of ``(1 + x)**100 - 1`` has coefficients up to 1e29 that
    cancel, and factoring it took 0.4 s of the program's 1 s budget, which then ran out before
    the rule ``pow_minus_one`` (expm1(100 log1p(x))) was scored."""
    out, seen = [], {node}
    high = _high_power_of_sum(node)
    for name, f in _ALG:
        if high and name in ("expand", "cancel", "factor"):
            continue
        try:
            new = f(node)
        except Exception:  # noqa: BLE001 - polys can refuse some inputs
            continue
        if new not in seen and _ok(new):
            seen.add(new)
            out.append((name, new))
    return out


def series_variants(node: sp.Expr, orders=(2, 4, 6), at_infinity: bool = True) -> list[tuple[str, sp.Expr]]:
    """Truncated series of a univariate ``node`` around 0 (several orders) and infinity.

    The expansion at 0 is computed once at the highest order and truncated to
    the lower ones (keeping the terms whose exponent is below ``lead + n``);
    the expansion at infinity (expensive in SymPy) is computed once at order 3, unless
    ``at_infinity`` is False (the caller's inputs are bounded: a series in ``1/x`` serves
    nowhere).  Results are cached per node.
    """
    key = (node, tuple(orders), at_infinity)
    if key in _SERIES:
        return list(_SERIES[key])
    try:
        out = _series_variants(node, orders, at_infinity)
    except _CutShort as cut:  # the variants built before the deadline; not cached (another run may finish)
        return list(cut.variants)
    if len(_SERIES) > 5000:
        _SERIES.clear()
    _SERIES[key] = tuple(out)
    return out


class _CutShort(Exception):
    """The deadline stopped a series step; ``variants`` are those it had built."""

    def __init__(self, variants):
        super().__init__("series variants cut at the stabiliser's deadline")
        self.variants = variants


_SERIES: dict = {}


def _series_variants(node, orders, at_infinity=True):
    syms = sorted(node.free_symbols, key=str)
    if node.has(sp.Piecewise, sp.Max, sp.Min, sp.Abs, sp.sign):
        return []
    if len(syms) > 1:
        return _parametric_variants(node, syms)
    if len(syms) != 1 or sp.count_ops(node) > 25:
        return []
    v = syms[0]
    base = node.rewrite(sp.exp) if any(node.has(f) for f in _custom()) else node
    # np.cbrt as the power it is for a positive argument: SymPy expands a power in closed form, and
    # cbrt only through its derivatives (1.9 s for d/dx of cbrt(x + 1) - cbrt(x), beyond a program's
    # budget); a series is a candidate like any other, scored where it is finite
    base = base.replace(cbrt, lambda u: u ** sp.Rational(1, 3)) if base.has(cbrt) else base
    out = []
    try:
        s0 = sp.expand(_series_at(base, v, 0, max(orders)))
    except Exception:  # noqa: BLE001 - no expansion exists, or it would overrun the budget
        s0 = None
    if s0 is not None and s0.free_symbols and _ok(s0):
        try:
            ad = adaptive_series(base, v, SERIES_RADIUS)
        except Exception:  # noqa: BLE001 - no usable expansion: keep the fixed orders only
            ad = None
        if ad is not None and ad[0] != node:
            out.append((f"series_at_0_r{ad[1]:.3g}", ad[0]))
        terms = sp.Add.make_args(s0)
        exps = [t.as_coeff_exponent(v)[1] for t in terms]
        if all(e.is_Number for e in exps):
            lead = min(exps)
            seen = set()
            for n in orders:
                t = sp.Add(*[term for term, e in zip(terms, exps) if e < lead + n])
                if t not in seen and t.free_symbols:
                    seen.add(t)
                    out.append((f"series_at_0_n{n}", t))
        else:
            out.append((f"series_at_0_n{max(orders)}", s0))
    if at_infinity:
        try:
            si = sp.expand(_series_at(base, v, sp.oo, 3))
            if si.free_symbols and _ok(si) and _plausible_at_inf(base, si, v):
                out.append(("series_at_inf_n3", si))
        except Exception:  # noqa: BLE001 - no expansion exists
            pass
    out = [(name, s) for name, s in out if s != node and not s.has(sp.log(v))]
    res = []
    for name, s in out:
        if name.startswith("series_at_0_r"):
            res.append((name, s))
            continue
        s = split_powers(s)
        if name.startswith("series_at_0"):
            _SOURCE[s] = (base, v)
        res.append((name, s))
    return res


PARAMETRIC_ORDERS = (2, 4, 6, 10, 16)  # exponent spans kept from a parametric series
PARAMETRIC_MAX_OPS = 400               # larger expressions are not expanded
PARAMETRIC_MAX_VARS = 4                # nor functions of more inputs (one expansion per input)
PARAMETRIC_WORK = 50_000               # coefficient operations per expansion (deterministic cap)


def _parametric_variants(node, syms) -> list[tuple[str, sp.Expr]]:
    """Series at 0 in each input with the others as parameters (:mod:`.jet`), several orders.

    ``d/dt`` of Hamming's ``t (e^{(a+b)t} - 1)/((e^{at} - 1)(e^{bt} - 1))`` cancels to
    ``(a+b) t/6 + O(t^3)`` from terms of size ``1/t``: no rearrangement of the formula
    recovers it for ``t`` near 0, its series does.  A series is only an approximation;
    scoring on the samples (and the regime split) decides where it serves.
    """
    from .jet import Unsupported

    if len(syms) > PARAMETRIC_MAX_VARS or sp.count_ops(node) > PARAMETRIC_MAX_OPS:
        return []
    if len(_PARAMETRIC) > 5000:
        _PARAMETRIC.clear()
    out = []
    # One expansion and its factored coefficients take 0.1-0.2 s for Hamming's expq3 in three inputs:
    # unbounded, the step ran past the search's deadline into the program's, and the region lost
    # its whole search.  Past the deadline (plus SERIES_GRACE_S) the step stops with what it built.
    stop = _DEADLINE[0] + SERIES_GRACE_S if _DEADLINE[0] is not None else None
    for v in syms:
        if _would_overrun(0.0):
            raise _CutShort(out)
        try:
            with interrupted_past(stop, SeriesBudgetExceeded):
                made = _parametric_in(node, v)
        except Unsupported:
            continue
        except SeriesBudgetExceeded:
            raise _CutShort(out) from None
        for name, s, source in made:
            _PARAMETRIC[s] = source
            out.append((name, s))
    return out


def _parametric_in(node, v) -> list:
    """``[(name, series, (v, leading term, last term))]``: the truncations of ``node``'s series in
    ``v`` at 0 (:data:`PARAMETRIC_ORDERS`), its other inputs as parameters.

    Raises:
        jet.Unsupported: no Taylor-mode rule for some part of ``node``.
    """
    from .jet import parametric_series

    terms = parametric_series(node, v, max(PARAMETRIC_ORDERS), ops=PARAMETRIC_WORK)
    if not terms:
        return []
    lead, seen, made = terms[0][1], set(), []
    for n in PARAMETRIC_ORDERS:
        kept = [_factored(t, v) for t, e in terms if e < lead + n]
        s = sp.Add(*kept)
        if s in seen or s == node or not s.has(v) or not _ok(s):
            continue
        seen.add(s)
        made.append((f"series_in_{v}_at_0_n{n}", split_powers(s), (v, kept[0], kept[-1])))
    return made


_PARAMETRIC: dict = {}  # parametric series -> (variable, leading term, last term kept)


def parametric_terms(expr):
    """``(variable, leading term, last term)`` of a parametric series candidate, or None."""
    return _PARAMETRIC.get(expr)


def series_variable(expr):
    """The variable a series candidate is a truncated series at 0 in, or None (not a series)."""
    if expr in _SOURCE:
        return _SOURCE[expr][1]
    hit = _PARAMETRIC.get(expr)
    return hit[0] if hit is not None else None


def _factored(term, v):
    """``c(params) * v**e`` with the coefficient factored (fewer cancelling operations)."""
    c, rest = term.as_independent(v, as_Add=False)
    try:
        c = sp.factor(c)
    except SeriesBudgetExceeded:  # the deadline's interruption (see _parametric_variants) is not a refusal
        raise
    except Exception:  # noqa: BLE001 - keep the coefficient as expanded
        pass
    return c * rest


# -- series at 0 sized for the interval they serve --------------------------------
SERIES_TOL = 2.0 ** -54  # half an ulp of float64, relative: bound on the first omitted terms
SERIES_RADIUS = 4.0      # radius aimed at by the candidate series (regimes then trim it)
SERIES_MAX_N = 40        # cap on the expansion order (exponent span from the leading term)
HORNER_COND = 3.0        # sum|c_k x^k| / |p(x)| allowed at the ends (rounding of the alternating sum)
_SOURCE: dict = {}       # series expression -> (function, variable) it approximates around 0
_EXP: dict = {}


def series_source(expr):
    """``(function, variable)`` a series-at-0 candidate was derived from, or None."""
    return _SOURCE.get(expr)


def _expansion(base, v, n):
    """``[(coeff, exponent)]`` of the series of ``base`` at 0 up to O(v**n), by exponent (cached)."""
    key = (base, v, n)
    if key not in _EXP:
        s = sp.expand(_series_at(base, v, 0, n))
        terms = []
        for t in sp.Add.make_args(s):
            c, e = t.as_coeff_exponent(v)
            if not (e.is_Rational and c.is_number and not c.has(v)):
                raise ValueError("not a power series")
            terms.append((c, e))
        terms.sort(key=lambda ce: ce[1])
        if len(_EXP) > 500:
            _EXP.clear()
        _EXP[key] = terms
    return _EXP[key]


_MPC: dict = {}


def _term_values(terms, r):
    import mpmath
    with mpmath.workprec(80):
        out = []
        for c, e in terms:
            key = (c, e)
            if key not in _MPC:
                _MPC[key] = (mpmath.mpf(str(sp.N(c, 25))), mpmath.mpf(str(sp.N(e, 25))))
            mc, me = _MPC[key]
            out.append(mc * mpmath.power(mpmath.mpf(r), me) if r > 0 else mpmath.mpf(0))
        return out


def _good(terms, k, r, two_sided) -> bool:
    """Truncation to ``terms[:k]`` accurate to half an ulp at |v| = r (next two terms checked)."""
    if k + 2 > len(terms):
        return False
    for rr in ((r, -r) if two_sided else (r,)):
        for frac in (1.0, 0.5):
            x = rr * frac
            vals = _term_values(terms[:k + 2], abs(x))
            sgn = [1 if (e.is_Integer and int(e) % 2 == 0) or x > 0 else -1 for _, e in terms[:k + 2]]
            vals = [a * s for a, s in zip(vals, sgn)]
            head = vals[:k]
            tot = abs(sum(head))
            absum = sum(abs(a) for a in head)
            ref = min(abs(head[0]), tot)
            if ref == 0 or absum > HORNER_COND * tot:
                return False
            if any(abs(a) > SERIES_TOL * ref for a in vals[k:k + 2]):
                return False
    return True


_DEADLINE: list = [None]  # cpu_clock() (CPU seconds of this thread) by which series work must stop (set by stabilize)


@contextlib.contextmanager
def deadline(t: float | None):
    """Bound the time spent in series expansions (SymPy cannot be interrupted mid-call, so each
    step predicts its own cost from the previous one and is skipped if it would overrun)."""
    saved, _DEADLINE[0] = _DEADLINE[0], t
    try:
        yield
    finally:
        _DEADLINE[0] = saved


def _would_overrun(predicted: float) -> bool:
    return _DEADLINE[0] is not None and cpu_clock() + predicted > _DEADLINE[0]


class SeriesBudgetExceeded(ValueError):
    """A series expansion was skipped: it is predicted to pass the stabiliser's deadline."""


_COST: dict = {}          # (base, v, point) -> {order: CPU seconds} of the expansions measured so far
PROBE_ORDERS = {0: (2, 4), sp.oo: (1, 2)}  # cheap expansions whose costs predict the higher orders
GROWTH = 4.0              # cost ~ a + b*n**GROWTH (nested compositions grow faster than cubically)


def _predicted_cost(key, n: int) -> float:
    """CPU seconds predicted for the order-``n`` expansion ``key = (base, v, point)`` from the
    orders already expanded.

    The model is ``cost(n) = a + b*n**g``, fitted to the two largest measured orders
    below ``n``, with g fitted to the last three when three are measured (:func:`_fitted_growth`),
    else ``GROWTH``: a fixed overhead dominates simple functions (their order-12 expansion costs
    what the order-2 one does), while the coefficients of nested functions such as
    tan(exp(exp(x))) grow with the order (0.02 s at order 2, 3 s at order 12).
    """
    seen = sorted((m, c) for m, c in _COST.get(key, {}).items() if m < n)
    if not seen:
        return 0.0
    if len(seen) == 1:
        n1, c1 = seen[0]
        return c1 * (n / n1) ** GROWTH
    g = _fitted_growth(seen[-3:]) if len(seen) >= 3 else GROWTH
    (n1, c1), (n2, c2) = seen[-2], seen[-1]
    slope = max(c2 - c1, 0.0) / (n2 ** g - n1 ** g)
    return c2 + slope * (n ** g - n2 ** g)


GROWTH_RANGE = (2.0, 6.0)  # exponents a three-point fit may give (quadratic at least: a guard against noise)


def _fitted_growth(three) -> float:
    """The exponent g of ``cost(n) = a + b*n**g`` through three measured ``(order, seconds)``
    points, clamped to ``GROWTH_RANGE``; ``GROWTH`` when the increments are not both positive
    (timer noise).

    The increments' ratio ``(c3 - c2)/(c2 - c1) = (n3**g - n2**g)/(n2**g - n1**g)`` grows with g,
    so g is found by bisection.  A fixed g = 4 over-predicts the simple compositions whose
    coefficients grow quadratically (the derivative of (x - sin x)/(x - tan x): 0.20 s at order 6,
    0.35 s at order 12, predicted 0.8 s), and their series -- the only accurate form near 0 --
    were skipped although they fitted the budget.
    """
    (n1, c1), (n2, c2), (n3, c3) = three
    d1, d2 = c2 - c1, c3 - c2
    if d1 <= 0 or d2 <= 0:
        return GROWTH
    ratio = lambda g: (n3 ** g - n2 ** g) / (n2 ** g - n1 ** g)  # noqa: E731 - increasing in g
    lo, hi = GROWTH_RANGE
    want = d2 / d1
    if want <= ratio(lo):
        return lo
    if want >= ratio(hi):
        return hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(mid) < want else (lo, mid)
    return 0.5 * (lo + hi)


def _series_at(base, v, point, n: int):
    """``series(base, v, point, n)`` without its O term, unless it is predicted to overrun the
    deadline (``point`` is 0 or ``oo``).

    SymPy cannot be interrupted mid-call, so the deadline is kept by prediction: an expansion of
    order ``n`` is preceded by cheap ones of orders ``PROBE_ORDERS[point]``, and the measured
    costs extrapolate to the next (``_predicted_cost``).  Raises SeriesBudgetExceeded when the
    expansion would overrun.  Expansions that :func:`.jet.power_series` supports (at 0: most
    of the search's, in milliseconds) skip SymPy and the prediction.
    """
    fast = _jet_series(base, v, point, n)
    if fast is not None:
        return fast
    if point == sp.oo and _no_expansion_at_infinity(base, v):
        raise sp.PoleError(f"no asymptotic expansion of {base} at infinity")
    key = (base, v, point)
    probes = PROBE_ORDERS[point]
    if _DEADLINE[0] is not None:
        for m in probes:
            if m < n and m not in _COST.get(key, {}):
                _series_at(base, v, point, m)
    if n in probes:  # probes are cheap; only a deadline already passed stops them
        if _would_overrun(0.0):
            raise SeriesBudgetExceeded("stabiliser budget reached before a series could be expanded")
    elif _would_overrun(_predicted_cost(key, n)):
        raise SeriesBudgetExceeded(f"series of order {n} predicted to overrun the stabiliser budget")
    t0 = cpu_clock()
    s = _float_coefficients(_interrupted_series(base, v, point, n), v)
    if len(_COST) > 5000:
        _COST.clear()
    _COST.setdefault(key, {})[n] = cpu_clock() - t0
    return s


SERIES_CAP_S = 5.0   # CPU seconds any one SymPy expansion may take when no deadline is set
SERIES_GRACE_S = 0.05  # past the deadline, a running expansion is stopped (its cost was mispredicted)


def _interrupted_series(base, v, point, n: int):
    """``sp.series(base, v, point, n).removeO()``, stopped (SeriesBudgetExceeded) once this thread's
    CPU clock passes the deadline by ``SERIES_GRACE_S``, or ``SERIES_CAP_S`` from now without one:
    the cost predictions of :func:`_series_at` extrapolate from cheap orders, and SymPy's expansion of
    ``log(1 - 1/(1 + exp(-z)))`` at infinity never returns at any order (the program pass hung)."""
    t = (_DEADLINE[0] + SERIES_GRACE_S) if _DEADLINE[0] is not None else cpu_clock() + SERIES_CAP_S
    try:
        with interrupted_past(t, SeriesBudgetExceeded):
            return sp.series(base, v, point, n=n).removeO()
    except SeriesBudgetExceeded:
        raise SeriesBudgetExceeded(f"series of {base} at {v} = {point} stopped at the stabiliser's deadline") \
            from None


def _jet_series(base, v, point, n: int):
    """``series(base, v, point, n)`` without its O term (``point`` 0 or ``oo``; at ``oo`` in
    powers of ``1/v`` for ``v > 0``) by Taylor-mode propagation (:func:`.jet.power_series`, with
    the logarithmic terms of :func:`_log_power_series`), or None where that has no rule (SymPy
    then expands)."""
    from .jet import Unsupported

    try:
        if point == 0:
            return _float_coefficients(_log_power_series(base, v, n), v)
        u = sp.Dummy("u", positive=True)  # v = 1/u, as SymPy expands at +oo
        return _float_coefficients(_log_power_series(base.subs(v, 1 / u), u, n).subs(u, 1 / v), v)
    except Unsupported:
        return None


def _log_power_series(e, u, n: int):
    """The terms of ``e``'s expansion at ``u = 0`` below ``u**n``, with powers of ``log(u)``
    (:func:`.jet.power_series` has none): each ``log(A)`` whose argument starts ``c u**k (1 + O(u))``
    is ``log(A/(c u**k)) + k log(u) + log(c)``; ``e`` is then a polynomial in ``log(u)`` and the
    ``log(c)`` whose coefficients are power series.  ``(x + 1) log(x + 1) - x log(x) - 1`` at infinity
    (``u = 1/x``) is ``(1/u + 1) log(1 + u) - log(u) - 1``: ``1/(2x) - 1/(6x^2) + ... - log(1/x)``,
    as ``sympy.series`` gives it at some 60 ms per order, here in a few.

    Raises:
      Unsupported: a logarithm's argument starts with a coefficient other than a positive
        rational, ``log(u)`` inside another function, or a coefficient with no power series.
    """
    from .jet import Unsupported, parametric_series, power_series

    L = sp.Dummy("L")
    swap, consts = {}, {}  # consts: dummy -> log(c), the constant log of a leading coefficient c > 0
    for lg in sorted(e.atoms(sp.log), key=sp.default_sort_key):
        arg = lg.args[0]
        if not arg.has(u):
            continue
        (lead, k), = parametric_series(arg, u, 1)
        c = lead / u**k  # the term's coefficient: SymPy cancels the power
        if k == 0 and c == 1:
            continue
        if c != 1 and not (c.is_Rational and c > 0):
            raise Unsupported(f"log of an argument starting {lead}")
        swap[lg] = sp.log(sp.expand(arg / lead)) + k * L
        if c != 1:
            C = sp.Dummy("C")
            consts[C] = sp.log(c)
            swap[lg] += C
    if not swap:
        return power_series(e, u, n)
    gens = [L, *consts]
    try:
        poly = sp.Poly(sp.expand(e.xreplace(swap)), *gens)
    except sp.PolynomialError as err:
        raise Unsupported("log(u) inside a function") from err
    if any(c.has(*gens) for c in poly.coeffs()):
        raise Unsupported("log(u) inside a function")
    logs = [sp.log(u), *consts.values()]
    return sp.Add(*[power_series(c, u, n) * sp.Mul(*[g**m for g, m in zip(logs, ms)]) for ms, c in poly.terms()])


def _float_coefficients(s, v):
    """``s`` with every coefficient that is a number but not rational (``tan(E)*exp(2)/3``) as a
    30-digit Float: a series is an approximation anyway, and the symbolic coefficients of nested
    functions grow with the order until scoring and code generation dominate the search."""
    terms = []
    for t in sp.Add.make_args(sp.expand(s)):
        c, rest = t.as_independent(v, as_Add=False)
        if c.is_number and not c.is_Rational and not c.is_Float:
            c = sp.Float(sp.N(c, 30), 30)
        terms.append(c * rest)
    return sp.Add(*terms)


def adaptive_series(base, v, radius: float, two_sided: bool = True):
    """Series of ``base`` at 0 in Horner form, with enough terms for |v| <= radius.

    Terms are added until the next two terms at the interval end are below half
    an ulp (float64) relative to the leading term and to the truncated sum; the
    expansion order is capped at ``SERIES_MAX_N``.  When even the cap does not
    reach ``radius`` (or the alternating sum would lose more than
    ``log2(HORNER_COND)`` bits to rounding) the radius is reduced.

    Returns:
        ``(horner_expr, achieved_radius)``.
    """
    has_odd = True
    r = float(radius)
    terms = None
    for n in (12, 24, SERIES_MAX_N):
        try:
            terms = _expansion(base, v, n)
        except SeriesBudgetExceeded:
            if terms is None:
                raise
            break  # use the order already expanded
        if not terms:
            raise ValueError("empty expansion")
        has_odd = any(not (e.is_Integer and int(e) % 2 == 0) for _, e in terms)
        if not all(e.is_Integer for _, e in terms):
            two_sided = False  # fractional powers: the series only exists for v > 0
        lead = terms[0][1]
        terms = [t for t in terms if t[1] < lead + n - 1] if n < SERIES_MAX_N else terms
        for k in range(1, len(terms) - 1):
            if _good(terms, k, r, two_sided and has_odd):
                return _register(horner(terms[:k], v), base, v), r
    # cap reached: shrink the radius until the capped series is accurate
    k = len(terms) - 2
    while r > 1e-6:
        r *= 0.9
        if _good(terms, k, r, two_sided and has_odd):
            kk = next(j for j in range(1, k + 1) if _good(terms, j, r, two_sided and has_odd))
            return _register(horner(terms[:kk], v), base, v), r
    raise ValueError("series not accurate anywhere")


def _register(expr, base, v):
    _SOURCE[expr] = (base, v)
    return expr


def horner(terms, v):
    """``c0 v**e0 + c1 v**e1 + ...`` as ``v**e0*(c0 + v**(e1-e0)*(c1 + ...))`` (unevaluated).

    The nesting is kept by the code generator, so each coefficient is added to a
    product that is small relative to it near 0 (low rounding error).  A negative
    leading power divides by ``v`` one factor at a time (no overflow of ``v**n``).
    """
    h = terms[-1][0]
    for i in range(len(terms) - 2, -1, -1):
        gap = terms[i + 1][1] - terms[i][1]
        h = sp.Add(terms[i][0], sp.Mul(v if gap == 1 else sp.Pow(v, gap), h, evaluate=False), evaluate=False)
    e0 = terms[0][1]
    if e0 == 0:
        return h
    if e0 > 0:
        return sp.Mul(v if e0 == 1 else sp.Pow(v, e0), h, evaluate=False)
    acc = h
    for _ in range(int(-e0)):
        acc = sp.Mul(acc, sp.Pow(v, -1), evaluate=False)
    if not e0.is_Integer:
        acc = sp.Mul(acc, sp.Pow(sp.sqrt(v), -1), evaluate=False)
    return acc


def split_powers(expr: sp.Expr) -> sp.Expr:
    """``c*v**-n`` -> ``((c/v)/v)...`` in every term: no ``v**n`` is formed.

    Series at infinity have terms like ``1/(2*x**2)``; ``x**2`` overflows for
    |x| > 1.3e154 although the term is representable (as a subnormal) up to
    |x| ~ 1e308.  Dividing by one factor at a time (nested unevaluated products,
    whose order the emitted code preserves) keeps every intermediate in range.
    Half-integer powers divide by ``sqrt(v)`` last.
    """
    terms = sp.Add.make_args(expr)
    new = [_split_term(t) for t in terms]
    if all(a is b for a, b in zip(new, terms)):
        return expr
    return sp.Add(*new, evaluate=False) if len(new) > 1 else new[0]


def _split_term(t):
    num, dens = [], []
    for f in sp.Mul.make_args(t):
        b, e = f.as_base_exp()
        if e.is_Rational and e < -1 and (2 * e).is_Integer and not b.is_Number:
            dens.append((b, -e))
        else:
            num.append(f)
    if not dens:
        return t
    acc = sp.Mul(*num)
    for b, e in dens:
        for _ in range(int(e)):
            acc = sp.Mul(acc, sp.Pow(b, -1), evaluate=False)
        if not e.is_Integer:
            acc = sp.Mul(acc, sp.Pow(sp.sqrt(b), -1), evaluate=False)
    return acc


def _no_expansion_at_infinity(f: sp.Expr, v: sp.Symbol) -> bool:
    """Is an expansion of ``f`` at ``v = +oo`` out of SymPy's reach, or too costly to try?

    True when ``f`` applies, to an argument that grows without bound there,

    * a function SymPy cannot expand at infinity: ``series(f, v, oo)`` ends in PoleError after
      up to 0.35 s of SymPy work (``tanh``, ``sin``, ``cosh``, ``acosh``, ``gamma``; SymPy expands
      powers, ``log`` and the functions that define ``_eval_aseries``: ``atan``, ``erf``,
      ``loggamma``...), or
    * ``exp`` of an argument that grows faster than linearly: SymPy's expansion in powers of
      ``exp(-v)`` (``log(1 + exp(v)) ~ v + exp(-v) - exp(-2v)/2``, kept) has no scale for
      ``exp(-v**3)``, and took 0.38 s to fail with a TypeError on GELU''s sigmoid form, half of a
      1 s program budget.

    "Grows" is judged numerically at ``v = 1e8`` (float64, :func:`_grows`): ``|u| > 1e3``, and
    faster than linearly for exp, ``|u| > 1e10``.
    """
    base = sp.Function._eval_aseries
    for app in f.atoms(sp.Function):
        if v not in app.free_symbols or isinstance(app, sp.log):
            continue
        if not isinstance(app, sp.exp) and getattr(type(app), "_eval_aseries", base) is not base:
            continue
        limit = 1e10 if isinstance(app, sp.exp) else 1e3
        if any(_grows(a, v, limit) for a in app.args):
            return True
    return False


def _grows(a: sp.Expr, v: sp.Symbol, limit: float) -> bool:
    """``|a| > limit`` at ``v = 1e8`` in float64 (an overflow counts as growing; anything else the
    math module cannot evaluate does not).  Not mpmath: ``exp(exp(1e8))`` would take it forever."""
    try:
        return abs(complex(sp.lambdify(v, a, modules="math")(1e8))) > limit
    except OverflowError:
        return True
    except Exception:  # noqa: BLE001 - no float value there (a custom function, a complex root): unknown
        return False


def _plausible_at_inf(f, s, v) -> bool:
    """Reject a series at infinity that does not track ``f`` at v = 64 and 256.

    SymPy drops exponentially small terms (``x**3*exp(-x)``) and can return a
    polynomial unrelated to the function; such a "series" must never reach a regime.
    """
    try:
        for p in (64, 256):
            a, b = complex(sp.N(f.subs(v, p), 30)), complex(sp.N(s.subs(v, p), 30))
            if not (abs(a - b) <= 1e-2 * abs(a) or (a == 0 and abs(b) < 1e-300)):
                return False
    except Exception:  # noqa: BLE001 - cannot evaluate: do not trust the series
        return False
    return True


def _custom():
    from symgrad.ir import sympy_funcs as sf
    return tuple(sf.CUSTOM_FUNCTIONS.values())
