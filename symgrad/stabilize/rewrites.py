"""Library of accuracy-improving identities.

Every identity is a :class:`Rewrite` record whose ``apply`` function inspects
*one* node and returns the equivalent replacements it can offer (possibly
none).  Matching is structural (walking ``Add``/``Mul``/``Pow`` arguments), so
the rules work on SymPy's canonical forms: ``exp(u)/(1 + exp(u))`` is
``Mul(exp(u), Pow(Add(1, exp(u)), -1))``, ``1 - 1/(1 + exp(u))`` stays an
``Add`` and so on.  Rules are generic in the matched subexpressions ``u, a, b``;
the search applies them at every position of every candidate.

References:
    Goldberg (1991), "What every computer scientist should know about
    floating-point arithmetic", Thm. 4 (log1p) and sec. 1.4 (cancellation).
    Higham (2002), "Accuracy and Stability of Numerical Algorithms", sec. 1.7-1.14.
    Maechler (2012), "Accurately computing log(1 - exp(-|a|))", Rmpfr vignette.
    Blanchard, Higham & Higham (2021), "Accurately computing the log-sum-exp and
    softmax functions", IMA J. Numer. Anal. 41(4).
"""
from __future__ import annotations

import sympy as sp

from symgrad.ir.rules.special import cbrt
from symgrad.ir.sympy_funcs import bd0, expm1, hypot, log1p
from .rules_erf import ERF_RULES
from .rules_exp import EXP_RULES, _log_domain_ratio
from .rules_util import Rewrite, a, b, coeff_and_rest, constant_minus, offset_terms, x, y

__all__ = ["Rewrite", "RULES", "x", "y"]


def _log1p(node):
    if node.func is not sp.log or not node.args[0].is_Add:
        return []
    c, u = node.args[0].as_coeff_Add()
    if c == 1:
        return [log1p(u)]
    if c.is_Number and c > 0:
        return [sp.log(c) + log1p(u / c)]
    return []


def _log1p_shift(node):
    """log(A) -> log1p(A - 1) for a sum A with no constant term (log(x + sqrt(x**2 - 1)) near x = 1).

    One candidate per input ``t`` among A's terms: ``log1p((t - 1) + rest)``, the inner difference kept
    as its own (unevaluated) sum so it is computed first -- exact (Sterbenz) where t ~ 1 --
    instead of rounding ``t + rest`` before the 1 is taken away.
    """
    if node.func is not sp.log or not node.args[0].is_Add:
        return []
    A = node.args[0]
    c, _ = A.as_coeff_Add()
    if c != 0 or len(A.args) > 3:
        return []
    # only inputs (symbols) as ``t``: ``t - 1`` is then exact near 1; other terms (exp(u) ~ 1)
    # are already served by expm1 and would only widen the search
    return [log1p(sp.Add(sp.Add(t, -1, evaluate=False), A - t, evaluate=False)) for t in A.args if t.is_Symbol]


def _expm1(node):
    return [node - t - k + c * expm1(r.args[0]) for k, t, c, r in offset_terms(node) if r.func is sp.exp and c == -k]


def _conjugate(node):
    """k*sqrt(P) + T -> k*(P - S**2)/(sqrt(P) + S) with S = -T/k (also k/sqrt(P))."""
    if not node.is_Add or len(node.args) < 2:
        return []
    out = []
    for t in node.args:
        k, r = coeff_and_rest(t)
        if not (r.is_Pow and r.exp in (sp.S.Half, -sp.S.Half)):
            continue
        P = r.base if r.exp == sp.S.Half else 1 / r.base
        S = -(node - t) / k
        num = sp.together(sp.expand(P - S**2))
        if sp.count_ops(num) < sp.count_ops(P) + sp.count_ops(S**2):
            out.append(k * num / (sp.sqrt(P) + S))
    return out


def _fractions(node):
    """a/A + b/B -> (a*B + b*A)/(A*B) with the numerator expanded (differences of reciprocals)."""
    if not node.is_Add:
        return []
    terms = [t for t in node.args if sp.fraction(t)[1] != 1]
    out = []
    for i in range(len(terms)):
        for j in range(i + 1, len(terms)):
            n, d = sp.fraction(sp.together(terms[i] + terms[j]))
            n2 = sp.expand(n)
            if sp.count_ops(n2) <= sp.count_ops(n):
                out.append(node - terms[i] - terms[j] + n2 / d)
    return out


def _complement_fraction(node):
    """R + N/D -> (R*D + N)/D when expanding the numerator cancels terms exactly.

    The generic form of ``1 - exp(a)/(exp(a) + exp(b)) -> exp(b)/(exp(a) + exp(b))``
    (1 - softmax) and ``1 - x/(x + 1) -> 1/(x + 1)``: the difference of nearly
    equal quantities is done symbolically instead of in floating point.
    """
    if not node.is_Add:
        return []
    out = []
    for t in node.args:
        n, d = sp.fraction(t)
        if d == 1 or not (d.is_Add or (d.is_Pow and d.base.is_Add and d.exp in (2, 3))):
            continue
        R = node - t
        num = sp.expand(R * d + n)
        if len(sp.Add.make_args(num)) < len(sp.Add.make_args(sp.expand(R * d))) + len(sp.Add.make_args(n)):
            out.append(num / d)
            ft = sp.factor_terms(num)
            if ft != num:
                out.append(ft / d)
            out += _log_domain_ratio(ft / d)  # complement of a softmax: straight to the stable product
    return out


def _one_minus_cos(node):
    return constant_minus(node, {sp.cos: lambda k, u: 2 * k * sp.sin(u / 2) ** 2,
                                 sp.cosh: lambda k, u: -2 * k * sp.sinh(u / 2) ** 2})


def _log_diff(node):
    if not node.is_Add:
        return []
    logs = [(coeff_and_rest(t), t) for t in node.args]
    logs = [((c, r), t) for (c, r), t in logs if r.func is sp.log]
    out = []
    for i in range(len(logs)):
        for j in range(len(logs)):
            (c1, a), t1 = logs[i]
            (c2, b), t2 = logs[j]
            if i != j and c1 == -c2 and c1 > 0:
                A, B = a.args[0], b.args[0]
                rest = node - t1 - t2
                out.append(rest + c1 * sp.log(A / B))
                out.append(rest + c1 * log1p(sp.together(sp.expand(A - B)) / B))
    return out


def _log1p_pairs(node):
    """c*log1p(u) + c*log1p(w) -> c*log1p(u + w + u*w); c*log1p(u) - c*log1p(w) ->
    c*log1p((u - w)/(1 + w)), every such pair of the sum at once (greedily, in order).

    ``(1 + x) log1p(x) + (1 - x) log1p(-x)`` (the numerator of d/dx log1p(-x)/log1p(x)) is
    ``x**2 + O(x**4)`` from terms of size ``x``; paired it is ``log1p(-x**2) + x log1p(2x/(1 - x))``,
    whose terms are ``-x**2`` and ``2x**2``.  The arguments are formed symbolically
    (``x + (-x) - x**2`` is ``-x**2`` exactly)."""
    if not node.is_Add:
        return []
    terms = []
    for t in node.args:
        logs = [f for f in sp.Mul.make_args(t) if isinstance(f, log1p)]
        terms.append((sp.Mul(*[f for f in sp.Mul.make_args(t) if f is not logs[0]]), logs[0].args[0])
                     if len(logs) == 1 else None)
    return [out for out in (_paired(node, terms, False), _paired(node, terms, True)) if out is not None]


def _paired(node, terms, flip: bool):
    """One pairing of ``_log1p_pairs``; ``flip`` writes each difference the other way round,
    c*log1p(u) - c*log1p(w) = -c*log1p((w - u)/(1 + u)), better conditioned where 1 + w is small."""
    used, new = set(), []
    for i, ti in enumerate(terms):
        if ti is None or i in used:
            continue
        for j in range(i + 1, len(terms)):
            tj = terms[j]
            if tj is None or j in used:
                continue
            (c1, u), (c2, w) = ti, tj
            if sp.expand(c1 - c2) == 0:
                arg = sp.expand(u + w + u * w)
            elif sp.expand(c1 + c2) == 0:
                if flip:
                    c1, u, w = c2, w, u
                arg = sp.together(sp.expand(u - w) / (1 + w))
            else:
                continue
            used |= {i, j}
            new.append(c1 * log1p(arg))
            break
    if not new:
        return None
    rest = [t for k, t in enumerate(node.args) if k not in used]
    return sp.Add(*(new + rest))


def _sum_to_product(node):
    """c*sin(A) - c*sin(B) -> 2c*cos((A+B)/2)*sin((A-B)/2), c*cos(A) - c*cos(B) -> -2c*sin((A+B)/2)*sin((A-B)/2).

    The difference of nearly equal sines (A ~ B) cancels; ``(A - B)/2`` is formed
    symbolically (``(x + e) - x`` is ``e`` exactly), so no cancellation is left.
    """
    if not node.is_Add:
        return []
    terms = [(t.as_coeff_Mul(), t) for t in node.args]
    out = []
    for i, ((c1, r1), t1) in enumerate(terms):
        for (c2, r2), t2 in terms[i + 1:]:
            if r1.func is not r2.func or r1.func not in (sp.sin, sp.cos) or c1 != -c2:
                continue
            A, B = r1.args[0], r2.args[0]
            half_sum, half_diff = (A + B) / 2, sp.expand(A - B) / 2
            rest = node - t1 - t2
            if r1.func is sp.sin:
                out.append(rest + 2 * c1 * sp.cos(half_sum) * sp.sin(half_diff))
            else:
                out.append(rest - 2 * c1 * sp.sin(half_sum) * sp.sin(half_diff))
    return out


def _atan_difference(node):
    """c*atan(A) - c*atan(B) -> c*atan((A - B)/(1 + A*B)), A - B formed symbolically.

    Exact where 1 + A*B > 0 (the two angles then differ by less than pi/2); elsewhere the
    identity is off by +-pi, which the equivalence check (:mod:`.verify`) rejects on the
    sampled domain.
    """
    if not node.is_Add:
        return []
    terms = [(t.as_coeff_Mul(), t) for t in node.args]
    out = []
    for i, ((c1, r1), t1) in enumerate(terms):
        for (c2, r2), t2 in terms[i + 1:]:
            if r1.func is sp.atan and r2.func is sp.atan and c1 == -c2:
                A, B = r1.args[0], r2.args[0]
                out.append(node - t1 - t2 + c1 * sp.atan(sp.expand(A - B) / (1 + sp.expand(A * B))))
    return out


def _split_quotient(node):
    """N/(A**2*B) -> ((N/A)/A)/B, one denominator factor at a time (kept unevaluated).

    Distinct factors are already divided one at a time by the emitter, but a power of a
    polynomial is formed first: (x**2 + 1)**2 overflows at x > 1e77 long before the
    quotient does.  Dividing by each copy keeps every intermediate near the size of the
    result (the generic form of ``hypot_scaled_quotient``).  A bare power ``1/(|x| + 1)**2``
    (softsign') is the quotient with N = 1.
    """
    if not (node.is_Mul or node.is_Pow):
        return []
    num, dens, powered = [], [], False
    for f in (node.args if node.is_Mul else (node,)):
        b, e = f.as_base_exp()
        if b.is_Add and e.is_Integer and -4 <= e < 0:
            dens += [b] * int(-e)
            powered = powered or e < -1
        else:
            num.append(f)
    if not powered:
        return []
    acc = sp.Mul(*num)
    for d in dens:
        acc = sp.Mul(acc, sp.Pow(d, -1), evaluate=False)
    return [acc]


def _divide_early(node):
    """a*b*.../d**k -> (a/d**k)*b*...: one numerator factor is divided before the others multiply in.

    Products are evaluated numerator first, denominators last (``a*b/d**k``), so ``a*b`` can
    overflow (inf/inf = NaN, inf*0 = NaN) although ``a/d**k`` is small and the result is
    representable: ``x**2*P(x)/cosh(u)**2`` with ``x**2*P(x) > 3.4e38`` in float32 while
    ``1/cosh(u)**2`` is 0.  The inner quotient is an unevaluated product (kept in this order
    by the evaluator and the emitter); the numeric coefficient stays in front, a ``-1`` goes
    last (a leading ``-1`` is re-evaluated as a negation).
    """
    if not node.is_Mul:
        return []
    c, rest = node.as_coeff_Mul()
    facs = list(sp.Mul.make_args(rest))
    # a sum in the denominator ((exp(x) + 1)**4, x**2 + 1) is served by the rules that rewrite the
    # quotient itself (sigmoid_from_ratio, log_domain_ratio, split_quotient); reordering it too would
    # only multiply the candidates
    den = [i for i, f in enumerate(facs) if f.is_Pow and f.exp.is_Number and f.exp < 0 and not f.base.is_Add]
    num = [i for i in range(len(facs)) if i not in den]
    if not den or len(num) < 2 or len(facs) > 6:
        return []
    out = []
    for j in den:
        for i in num:
            inner = sp.Mul(facs[i], facs[j], evaluate=False)
            others = [f for k, f in enumerate(facs) if k not in (i, j)]
            args = [inner] + others + [c] if c == -1 else ([c] if c != 1 else []) + [inner] + others
            out.append(sp.Mul(*args, evaluate=False))
    return out


def _squares(t):
    """Return ``a`` with ``t == a**2`` (a**2, k*a**2 with k > 0, positive constants)."""
    c, r = coeff_and_rest(t)
    if r == 1 and c > 0:
        return sp.sqrt(c)
    if c > 0 and r.is_Pow and r.exp == 2:
        return sp.sqrt(c) * r.base
    return None


def _hypot(node):
    if not (node.is_Pow and node.exp in (sp.S.Half, -sp.S.Half, sp.Rational(3, 2),
                                         -sp.Rational(3, 2), -1) and node.base.is_Add):
        return []
    if len(node.base.args) != 2:
        return []
    a, b = (_squares(t) for t in node.base.args)
    if a is None or b is None:
        return []
    return [hypot(a, b) ** (2 * node.exp)]


def _hypot_scaled(node):
    """R/hypot(a, b)**n -> ((R/h)/h)/.../h (n >= 2), kept unevaluated so no power of h is formed.

    ``hypot(a, b)**3`` overflows for h > 5.6e102 although ``x/h**3`` is representable
    down to h ~ 1e154 (the quotients ``x/h`` are <= 1 in magnitude).
    """
    if not node.is_Mul:
        return []
    for f in node.args:
        b, e = f.as_base_exp()
        if b.func is not hypot:
            cand = _hypot(f) if f.is_Pow else []
            if not cand:
                continue
            b, e = cand[0].as_base_exp()
        if not (b.func is hypot and e.is_Integer and e <= -2):
            continue
        c, R = sp.Mul(*[g for g in node.args if g is not f]).as_coeff_Mul()
        if R == 1:
            continue
        acc = R
        for _ in range(-int(e)):
            acc = sp.Mul(acc, sp.Pow(b, -1), evaluate=False)
        return [acc if c == 1 else sp.Mul(c, acc, evaluate=False)]
    return []


def _denominator_copies(f):
    """``f = d**-k`` (k a positive integer or half-integer) as k copies of ``d`` (``sqrt`` of a
    base for half-integers; a sum of two squares under a root as ``hypot``), else None."""
    base, e = f.as_base_exp()
    if not (e.is_Rational and e < 0 and e.q in (1, 2) and -e.p <= 4 * e.q):
        return None
    d = base if e.q == 1 else sp.sqrt(base)
    if d.is_Pow and d.exp == sp.S.Half:
        d = next(iter(_hypot(d)), d)
    return [d] * int(-e.p)


def _spread(factors, dens):
    """Divide each numerator factor by the denominators sharing most of its inputs (a sum by
    dividing each of its terms), the rest one at a time at the end; every product unevaluated."""
    factors = _power_copies(factors, dens)
    got: list = [[] for _ in factors]
    left = []
    for d in dens:
        ds = d.free_symbols
        pick = [i for i, f in enumerate(factors) if f.free_symbols & ds]
        if not pick:
            left.append(d)
            continue
        got[min(pick, key=lambda i: (len(got[i]), -len(factors[i].free_symbols & ds), i))].append(d)
    pieces = []
    for f, ds in zip(factors, got):
        if f.is_Add and ds:
            f = sp.Add(*[_spread(sp.Mul.make_args(t), ds) for t in f.args], evaluate=False)
        else:
            for d in ds:
                f = sp.Mul(f, sp.Pow(d, -1), evaluate=False)
        pieces.append(f)
    acc = pieces[0] if len(pieces) == 1 else sp.Mul(*pieces, evaluate=False)
    for d in left:
        acc = sp.Mul(acc, sp.Pow(d, -1), evaluate=False)
    return acc


def _power_copies(factors, dens) -> list:
    """Numerator powers ``u**k`` (k = 2..4) sharing inputs with a denominator as k copies of
    ``u``: ``b**2/(h*h)`` as ``(b/h)*(b/h)``, where ``b**2`` alone underflows for |b| < 1e-154."""
    out = []
    for f in factors:
        if f.is_Pow and f.exp.is_Integer and 2 <= f.exp <= 4 and not f.base.is_Number \
                and any(f.base.free_symbols & d.free_symbols for d in dens):
            out += [f.base] * int(f.exp)
        else:
            out.append(f)
    return out


def _pair_divide(node):
    """N/(D1*...*Dk) -> each factor of N divided by the D_j that share its inputs.

    ``(a*x + b*y)/(hypot(a, b)*hypot(x, y))`` (cosine similarity) forms ``a*x`` and the product
    of norms first: both underflow (0/0) or overflow (inf/inf) where every ratio ``a/hypot(a, b)``
    is at most 1 and the result is representable.  Pairing each input with the norm it is
    scaled by -- recursively through sums, ``(a/ha)*(x/hx) + (b/ha)*(y/hx)`` -- keeps every
    intermediate near the size of the result.  A generalisation of ``divide_early`` (one pair)
    to several denominators and sums.
    """
    if not node.is_Mul:
        return []
    c, rest = node.as_coeff_Mul()
    num, dens = [], []
    for f in sp.Mul.make_args(rest):
        copies = _denominator_copies(f) if f.is_Pow else None
        if copies is None:
            num.append(f)
        else:
            dens += copies
    if len(dens) < 2 or not num or not any(f.is_Add for f in num) or len(num) + len(dens) > 8:
        return []
    new = _spread(num, dens)
    return [new if c == 1 else sp.Mul(c, new, evaluate=False)]


def _as_bd0(t):
    """``c*log(a/b)`` with ``c = k*a`` or ``c = k*b`` (k a number): (bd0 form, its linear part),
    else None.  a log(a/b) = bd0(a, b) + a - b and b log(a/b) = -bd0(b, a) + a - b."""
    c, logs = sp.S.One, []
    for f in sp.Mul.make_args(t):
        if f.func is sp.log:
            logs.append(f)
        else:
            c = c * f
    if len(logs) != 1:
        return None
    num, den = sp.fraction(sp.together(logs[0].args[0]))
    if den == 1:
        return None
    for k, form in ((sp.cancel(c / num), bd0(num, den)), (sp.cancel(c / den), -bd0(den, num))):
        if k.is_Number and k != 0:
            return k * form, k * (num - den)
    return None


def _deviance_terms(node):
    """sum a_i log(a_i/b_i) + rest -> sum bd0(a_i, b_i) + (sum (a_i - b_i) + rest), simplified,
    when the linear part cancels (to 0 or to fewer operations than ``rest``).

    The Kullback-Leibler divergence of Bernoulli laws m log(m/t) + (1 - m) log((1 - m)/(1 - t))
    and the Poisson deviance y log(y/mu) - (y - mu) are sums of values of size |a - b| that cancel
    to a value of size (a - b)^2: bd0 (Loader 2000) computes each deviance term without that
    cancellation, and the linear parts cancel symbolically (sum (a_i - b_i) = 0 for KL).
    """
    if not node.is_Add:
        return []
    forms, lin, rest = [], [], []
    for t in node.args:
        hit = _as_bd0(t)
        if hit is None:
            rest.append(t)
        else:
            forms.append(hit[0])
            lin.append(hit[1])
    if not forms or len(forms) > 4:
        return []
    rest_sum = sp.Add(*rest)
    left = sp.cancel(sp.Add(*lin) + rest_sum)
    if not (left == 0 or sp.count_ops(left) < sp.count_ops(rest_sum)):
        return []
    return [sp.Add(*forms) + left]


def _pow_diff(node):
    """(a)**2 - (b)**2 -> (a - b)*(a + b): exact-ish factorisation avoiding cancellation."""
    if not node.is_Add or len(node.args) != 2:
        return []
    (c1, r1), (c2, r2) = (coeff_and_rest(t) for t in node.args)
    sq = lambda c, r: sp.sqrt(abs(c)) * r.base if (r.is_Pow and r.exp == 2) else (
        sp.sqrt(abs(c)) if r == 1 else None)
    a, b = sq(c1, r1), sq(c2, r2)
    if a is None or b is None or c1 * c2 >= 0:
        return []
    if c1 < 0:
        a, b = b, a
    h = sp.S.Half
    # scaled variant: a - b or a + b may overflow although a**2 - b**2 does not (a = +-b near
    # the overflow threshold gives inf*0 = nan); halving is exact, and the product of the
    # halves times 4 (unevaluated: multiplied last) only overflows when the result does
    scaled = sp.Mul(sp.Mul(h * a - h * b, h * a + h * b, evaluate=False), 4, evaluate=False)
    return [(a - b) * (a + b), scaled]


def _pow_exponent_offset(node):
    """b**(u + k) -> b**k * exp(u log b) for an integer k != 0 and a non-constant u.

    The exponent ``u + k`` is rounded before the power is taken, and the power turns the
    exponent's absolute error into a relative error ``|log b|`` times larger: ``x**(x - 1)``
    at x = 1e-6 (log x = -13.8) loses 14 ulps to the rounding of ``x - 1``.  ``b**k`` is an
    integer power and ``u log b`` has no offset to round away.  (A plain ``b**u * b**k`` would be
    merged back into ``b**(u + k)`` by SymPy.)"""
    if not node.is_Pow or not node.exp.is_Add or node.base.is_Number or node.base is sp.E:
        return []
    k, u = node.exp.as_coeff_Add()
    if not (k.is_Integer and k != 0) or u.is_Number:
        return []
    return [node.base ** k * sp.exp(u * sp.log(node.base))]


def _geometric(k, u, v):
    """``sum_{j<k} u**(k-1-j) * v**j`` (so that ``u**k - v**k == (u - v)*_geometric(k, u, v)``)."""
    return sp.Add(*[u ** (k - 1 - j) * v ** j for j in range(k)])


def _pow_pair(t):
    """``(c, P, A, p, root)`` with ``t == c*P*A**p``, p a non-integer rational other than +-1/2, one per such
    factor; ``root`` is :func:`_real_root` for a power of ``cbrt(A)`` (``np.cbrt``: ``p`` in thirds), else
    :func:`_principal_root`."""
    c, r = coeff_and_rest(t)
    out = []
    for f in sp.Mul.make_args(r):
        A, p = f.as_base_exp()
        root = _principal_root
        if isinstance(A, cbrt) and p.is_Integer:  # cbrt(A)**k = A**(k/3), for every real A
            A, p, root = A.args[0], sp.Rational(p, 3), _real_root
        # +-1/2 is the square root of the conjugate rule (_conjugate): not offered twice
        if p.is_Rational and not p.is_Integer and abs(p) != sp.S.Half and abs(p.p) <= 8 and p.q <= 8 \
                and not A.is_Number:
            out.append((c, _without_factor(r, f), A, p, root))
    return out


def _principal_root(A, k, n):
    """``A**(k/n)`` (SymPy's principal power: NaN in real arithmetic for A < 0)."""
    return A ** sp.Rational(k, n)


def _real_root(A, k, n):
    """``cbrt(A)**k`` (``n == 3``): the real cube root, odd, defined for every real A."""
    return cbrt(A) ** k


def _without_factor(r, f):
    args = list(sp.Mul.make_args(r))
    args.remove(f)
    return sp.Mul(*args)


def _simplifies(A, B, D) -> bool:
    """Has ``D``, the expanded ``A - B``, fewer terms than ``A`` and ``B`` together (``(x + 1) - x = 1``)?"""
    return len(sp.Add.make_args(D)) < len(sp.Add.make_args(sp.expand(A))) + len(sp.Add.make_args(sp.expand(B)))


def _power_difference(node):
    """c*A**p - c*B**p -> (A - B) times a sum of positive terms, p = m/n rational, A - B formed symbolically.

    With u = A**(1/n), v = B**(1/n): ``u**m - v**m = (u - v)*S_m(u, v)`` and
    ``u - v = (A - B)/S_n(u, v)``, S_k(u, v) = sum u**(k-1-j) v**j (the factorisation of a
    difference of powers), so ``A**q - B**q = (A - B)*S_m/S_n`` without cancellation when A, B > 0;
    a negative exponent goes through ``A**-q - B**-q = (B**q - A**q)/(A**q*B**q)``, dividing by one
    power at a time.  A second form divides S_m and S_n by their leading powers
    (ratio r = v/u <= 1 terms: no intermediate overflows where A**q would).  The square-root
    case is :func:`_conjugate`; this one serves cube roots, x**(-3/2) and the like
    ((x + 1)**(1/3) - x**(1/3), the derivative of 1/sqrt(x) - 1/sqrt(x + 1)), and powers of
    ``np.cbrt`` the same way with its real roots (``np.cbrt(x + 1) - np.cbrt(x)`` and its
    derivative ``1/(3 cbrt(x + 1)**2) - 1/(3 cbrt(x)**2)``, for negative arguments too).
    """
    if not node.is_Add or len(node.args) < 2:
        return []
    terms = [(pp, t) for t in node.args for pp in _pow_pair(t)]
    out = []
    for i, ((c1, P1, A, p1, root), t1) in enumerate(terms):
        for (c2, P2, B, p2, root2), t2 in terms[i + 1:]:
            if t1 is t2 or c1 != -c2 or p1 != p2 or P1 != P2 or A == B or root is not root2:
                continue
            D = sp.expand(A - B)
            if not _simplifies(A, B, D):
                continue  # nothing is gained by forming A - B exactly
            rest, coef = node - t1 - t2, c1 * P1
            for form in _power_difference_forms(A, B, D, p1, root):
                term = form if coef == 1 else sp.Mul(coef, form, evaluate=False)  # the divisions stay nested
                out.append(term if rest == 0 else sp.Add(rest, term, evaluate=False))
    return out


def _power_difference_forms(A, B, D, p, root=_principal_root):
    """``A**p - B**p`` as (A - B)*S_m/S_n (see :func:`_power_difference`), plain and ratio-scaled;
    ``root(A, k, n)`` is ``A**(k/n)`` (:func:`_principal_root` or :func:`_real_root`)."""
    q = abs(p)
    m, n = int(q.p), int(q.q)
    u, v = root(A, 1, n), root(B, 1, n)
    r = v / u
    forms = []
    if p > 0:
        forms.append(D * _geometric(m, u, v) / _geometric(n, u, v))
        # S_m/S_n = u**(m-n) * T_m(r)/T_n(r), T_k(r) = S_k(1, r)
        forms.append(D * root(A, m - n, n) * _geometric(m, 1, r) / _geometric(n, 1, r))
    else:
        # A**-q - B**-q = -(A**q - B**q)/(A**q*B**q): divide by one power at a time (no A**q*B**q)
        plain = -D * _geometric(m, u, v) / _geometric(n, u, v)
        acc = sp.Mul(sp.Mul(plain, sp.Pow(root(A, m, n), -1), evaluate=False), sp.Pow(root(B, m, n), -1),
                     evaluate=False)
        forms.append(acc)
        # u**(m-n)/A**q = 1/A: -(A - B)*T_m(r)/T_n(r)/A/B**q
        scaled = sp.Mul(sp.Mul(-D * _geometric(m, 1, r) / _geometric(n, 1, r), sp.Pow(A, -1), evaluate=False),
                        sp.Pow(root(B, m, n), -1), evaluate=False)
        forms.append(scaled)
    return forms


def _symbolic_pow_pair(t):
    """``(c, P, A, p)`` with ``t == c*P*A**p`` for each factor whose exponent ``p`` is not a rational
    number (a symbol such as the ``1/n`` of an n-th root, or a float such as 0.2), ``A`` not a number."""
    c, r = coeff_and_rest(t)
    out = []
    for f in sp.Mul.make_args(r):
        A, p = f.as_base_exp()
        if not p.is_Rational and not A.is_Number and A is not sp.E:
            out.append((c, _without_factor(r, f), A, p))
    return out


def _cofactor_difference(P, Q, A, B, ratio):
    """``(P - Q, logs)`` for the cofactors of ``A**p`` and ``B**p``: ``K*log1p((A - B)/B)`` (``ratio``)
    when they are ``K*log(A)`` and ``K*log(B)`` (either spelt as a log1p), the logs a derivative with
    respect to the exponent brings, so the bases' difference is taken exactly there too (``logs``
    True); otherwise ``together(P - Q)``."""
    la, lb = _log_factor(P, A), _log_factor(Q, B)
    if la is not None and lb is not None:
        K = _without_factor(P, la)
        if K == _without_factor(Q, lb):
            return K * ratio, True
    return sp.together(P - Q), False


def _log_factor(P, A):
    """The factor of ``P`` that is ``log(A)``, spelt ``log(A)`` or ``log1p(A - 1)`` (None if none is)."""
    for f in sp.Mul.make_args(P):
        if f == sp.log(A) or (isinstance(f, log1p) and sp.expand(f.args[0] + 1 - A) == 0):
            return f
    return None


def _power_difference_any_exponent(node):
    """c*P*A**p - c*Q*B**p -> c*B**p*(P*expm1(t) + (P - Q)), t = p*log1p((A - B)/B), for an exponent p
    that is not a rational number, A - B formed symbolically.

    ``A**p - B**p = B**p (exp(p log(A/B)) - 1)`` and ``log(A/B) = log1p((A - B)/B)``: the difference
    of the bases is taken exactly, and the cancellation is left to expm1.  The form offered first
    branches on the sign of ``t`` so that the factor is always the larger power and expm1's
    argument is never positive: ``-A**p*expm1(-t)`` where ``t > 0`` (``x**(1/n)`` underflows at
    x = 6e-10, n = 1/128 while ``expm1(t)`` overflows; no intermediate leaves the range unless
    the result does).  Each branch alone is offered too.  The factored
    difference of powers (:func:`_power_difference`) needs a rational exponent; this serves
    ``(x + 1)**(1/n) - x**(1/n)`` with a symbolic ``n`` (Hamming's problem 3.4.6), powers with a
    float exponent, and their derivatives, whose cofactors differ (``log(x + 1)*(x + 1)**(1/n) -
    log(x)*x**(1/n)`` in the n-partial: ``P - Q`` is then ``log1p((A - B)/B)``, see
    :func:`_cofactor_difference`).  With such log cofactors the first form keeps the terms as
    written where ``log A`` and ``log B`` differ in sign (0 < x < 1 there): the two terms then have
    one sign and do not cancel, while ``P*expm1(t)`` and ``P - Q`` would, and ``x**(1/n)*expm1(t)``
    is ``0*inf`` at x = 1e-200, n = 1/2.
    """
    if not node.is_Add or len(node.args) < 2:
        return []
    terms = [(pp, t) for t in node.args for pp in _symbolic_pow_pair(t)]
    out = []
    for i, ((c1, P, A, p), t1) in enumerate(terms):
        for (c2, Q, B, p2), t2 in terms[i + 1:]:
            if t1 is t2 or c1 != -c2 or p != p2 or A == B:
                continue
            D = sp.expand(A - B)
            if not _simplifies(A, B, D):
                continue  # nothing is gained by forming A - B exactly
            rest, c = node - t1 - t2, c1
            if D.is_number and D < 0:  # the smaller base below: log1p of a positive ratio never cancels
                A, B, P, Q, c, D = B, A, Q, P, -c1, -D  # (log1p(-1/(x + 1)) is log1p(-1) = -inf at x = 1e-176)
            ratio = log1p(sp.Mul(D, sp.Pow(B, -1), evaluate=False))  # log(A/B)
            t = p * ratio
            dPQ, logs = _cofactor_difference(P, Q, A, B, ratio)
            below = B ** p * (P * expm1(t) + dPQ)  # A**p <= B**p: expm1(t) in [-1, 0]
            above = -(A ** p) * (Q * expm1(-t) - dPQ)  # A**p > B**p: the larger power is the factor
            pieces = [(below, t <= 0), (above, True)]
            if logs:  # log A and log B of opposite signs: the written terms have one sign, no cancellation
                written = sp.Add(P * A ** p, -Q * B ** p, evaluate=False)
                pieces.insert(0, (written, sp.expand(A - 1) * sp.expand(B - 1) <= 0))
            for term in (sp.Piecewise(*pieces), below, above):
                term = c * term
                out.append(term if rest == 0 else sp.Add(rest, term, evaluate=False))
    return out


def _sign_abs(node):
    """u*sign(u) -> Abs(u) and Abs(u)*sign(u) -> u (exact for every real u, 0 included).

    Derivatives of ``Abs`` bring ``sign``; SymPy leaves ``x*sign(x)`` as it is, so
    ``1/(|x| + 1) - x*sign(x)/(|x| + 1)**2`` keeps a cancellation that ``|x|`` in place of
    ``x*sign(x)`` turns into an exact symbolic one (softsign').
    """
    if not node.is_Mul:
        return []
    facs = list(node.args)
    out = []
    for f in facs:
        if f.func is not sp.sign:
            continue
        u = f.args[0]
        for g, new in ((u, sp.Abs(u)), (sp.Abs(u), u)):
            if g in facs:
                rest = list(facs)
                rest.remove(f)
                rest.remove(g)
                out.append(sp.Mul(new, *rest))
    return out


def _log_of_power(t):
    """log|t| for a term ``t = c*u**k`` (c > 0 numeric): ``log(c) + k*log(Abs(u))`` for an even k,
    ``log(c) + k*log(u)`` otherwise (needs u > 0; the equivalence check decides); None when not a power."""
    c, r = coeff_and_rest(t)
    if not (c.is_Number and c > 0) or r == 1:
        return None
    b, k = r.as_base_exp()
    if not k.is_Rational or (k == 1 and not b.is_Symbol):
        return None
    lb = sp.log(sp.Abs(b)) if (k.is_Integer and int(k) % 2 == 0) else sp.log(b)
    return sp.log(c) + k * lb


def _log_dominant(node):
    """log(t + rest) -> log|t| + log1p(rest/t) for a power term t of the sum (log(x**2 + 1) for large |x|).

    ``t`` overflows long before its logarithm does (x**2 at |x| > 1.3e154 while log(x**2 + 1) ~ 2 log|x|
    is ~ 709); taking the log of the dominant term analytically (``2*log|x|``) and adding
    ``log1p`` of the small ratio keeps every intermediate in range.  Useful only where ``t``
    dominates: the regimes decide where.
    """
    if node.func is not sp.log or not node.args[0].is_Add:
        return []
    S = node.args[0]
    out = []
    for t in S.args:
        lt = _log_of_power(t)
        if lt is None:
            continue
        out.append(lt + log1p(sp.expand((S - t) / t)))
    return out


def _cos_complement(node):
    """rest + c*R*cos(u) -> (rest + c*R) - 2*c*R*sin(u/2)**2 (cosh: + 2*c*R*sinh(u/2)**2), rest + c*R factored.

    The generic form of :func:`_one_minus_cos` with a non-constant cofactor: the law of cosines
    ``a**2 + b**2 - 2*a*b*cos(t) = (a - b)**2 + 4*a*b*sin(t/2)**2`` (Kahan's form for needle-like
    triangles) and ``a - b*cos(t) = (a - b) + 2*b*sin(t/2)**2``: the part that cancels as u -> 0
    is formed symbolically (and factored: a square, an exact difference of inputs).
    """
    if not node.is_Add or len(node.args) < 2:
        return []
    out = []
    for t in node.args:
        c, r = coeff_and_rest(t)
        fs = [f for f in sp.Mul.make_args(r) if f.func in (sp.cos, sp.cosh)]
        if len(fs) != 1:
            continue
        f = fs[0]
        R = _without_factor(r, f)
        u = f.args[0]
        base = sp.expand(node - t + c * R)
        fb = sp.factor(base) if base.free_symbols else base
        base = fb if not fb.is_Add else base
        half = -2 * c * R * sp.sin(u / 2) ** 2 if f.func is sp.cos else 2 * c * R * sp.sinh(u / 2) ** 2
        # unevaluated: the difference (rest + c*R) is formed first, exact for a - b, then the small term added
        out.append(sp.Add(base, half, evaluate=False) if base != 0 else half)
    return out


RULES: list[Rewrite] = [
    Rewrite("log1p_from_log", _log1p, "log(1+u) loses the low bits of u when |u| << 1; log1p keeps them",
            "Goldberg 1991, Thm. 4", (sp.log(1 + x), {x: 1e-10}, "float64")),
    Rewrite("log1p_shift", _log1p_shift,
            "log(A) of a sum A ~ 1 rounds away A - 1; log1p(A - 1) with the 1 folded into A's terms keeps it",
            "Goldberg 1991, Thm. 4; Sterbenz 1974 (exact subtraction)",
            (sp.log(x + sp.sqrt((x - 1) * (x + 1))), {x: 1 + 2.0**-40}, "float64")),
    Rewrite("expm1_from_exp", _expm1, "exp(u) - 1 cancels catastrophically for |u| << 1",
            "Higham 2002, sec. 1.14.1", (sp.exp(x) - 1, {x: 1e-10}, "float64")),
    Rewrite("conjugate_sqrt", _conjugate,
            "sqrt(P) - S cancels when sqrt(P) ~ S; multiplying by the conjugate moves the difference "
            "into P - S**2, which simplifies exactly", "Goldberg 1991, sec. 1.4; Higham 2002, sec. 1.8",
            (sp.sqrt(x + 1) - sp.sqrt(x), {x: 1e12}, "float64")),
    Rewrite("combine_fractions", _fractions,
            "1/a - 1/b cancels when a ~ b; (b - a)/(a*b) subtracts the exact inputs instead",
            "Higham 2002, sec. 1.7", (1 / x - 1 / (x + 1), {x: 1e9}, "float64")),
    Rewrite("complement_fraction", _complement_fraction,
            "R + N/D cancels when N/D ~ -R (1 - softmax); (R*D + N)/D cancels the terms symbolically",
            "Goldberg 1991, sec. 1.4; Blanchard, Higham & Higham 2021, sec. 3",
            (1 - x / (x + 1), {x: 1e12}, "float64")),
    Rewrite("one_minus_cos", _one_minus_cos, "1 - cos(u) cancels for small u; 2 sin(u/2)^2 does not",
            "Goldberg 1991, sec. 1.4; Higham 2002, sec. 1.8", ((1 - sp.cos(x)) / x**2, {x: 1e-5}, "float64")),
    Rewrite("log_difference", _log_diff,
            "log(a) - log(b) cancels when a ~ b; log(a/b) or log1p((a-b)/b) evaluates the small ratio",
            "Higham 2002, sec. 1.14", (sp.log(x + 1) - sp.log(x), {x: 1e12}, "float64")),
    Rewrite("log1p_pairs", _log1p_pairs,
            "log1p(u) + log1p(w) and log1p(u) - log1p(w) cancel when the sum is much smaller than "
            "its terms; one log1p of the symbolically combined argument does not",
            "log addition identity, DLMF 4.8.2; Goldberg 1991, sec. 1.4",
            (sp.expand((1 + x) * log1p(x) + (1 - x) * log1p(-x)), {x: 1e-6}, "float64")),
    Rewrite("sum_to_product", _sum_to_product,
            "sin(A) - sin(B) cancels for A ~ B; 2 cos((A+B)/2) sin((A-B)/2) takes the difference symbolically",
            "DLMF 4.21.14-4.21.16 (sum-to-product); Goldberg 1991, sec. 1.4",
            (sp.sin(x + y) - sp.sin(x), {x: 1.0, y: 1e-9}, "float64")),
    Rewrite("atan_difference", _atan_difference,
            "atan(A) - atan(B) cancels for A ~ B (and for large A, B both near pi/2); "
            "atan((A - B)/(1 + AB)) takes the difference symbolically",
            "DLMF 4.24.15 (atan addition); Goldberg 1991, sec. 1.4",
            (sp.atan(x + 1) - sp.atan(x), {x: 1e8}, "float64")),
    Rewrite("split_quotient", _split_quotient,
            "N/(A*B) overflows in A*B although N/A/B is representable; dividing one factor at a time does not",
            "Higham 2002, sec. 27.8 (scaling to avoid overflow)",
            ((2 * x + 1) / (x**2 + 1) ** 2, {x: 1e100}, "float64")),
    Rewrite("divide_early", _divide_early,
            "a*b/d overflows in a*b although a/d is small and the result representable; dividing "
            "one factor first keeps the intermediate in range",
            "Higham 2002, sec. 27.8 (scaling to avoid overflow)",
            (x**2 * (x**3 + 1) / sp.cosh(x) ** 2, {x: 1e10}, "float32"), overflow_only=True),
    Rewrite("pair_divide", _pair_divide,
            "a*x/(|a|*|x|) forms a*x and the product of norms first, both out of range where every "
            "ratio a/|a| is <= 1; dividing each factor by the norm of its own inputs is not",
            "Higham 2002, sec. 27.8 (scaling to avoid overflow)",
            ((x * a + y * b) / (sp.sqrt(x**2 + y**2) * sp.sqrt(a**2 + b**2)), {x: 1e-200, y: 1e-200, a: 1e-200,
                                                                               b: 1e-200}, "float64"),
            overflow_only=True),
    Rewrite("deviance_terms", _deviance_terms,
            "a log(a/b) terms whose linear parts cancel (KL divergence, Poisson deviance) lose every bit "
            "near a = b; Loader's bd0 does not",
            "Loader 2000 (bd0)",
            (x * sp.log(x / y) + (1 - x) * sp.log((1 - x) / (1 - y)), {x: 0.3, y: 0.3 + 3e-9}, "float64")),
    Rewrite("hypot_from_sqrt", _hypot, "a**2 + b**2 overflows/underflows long before sqrt of it does",
            "Higham 2002, sec. 27.8 (hypot); Goldberg 1991", (sp.sqrt(x**2 + y**2), {x: 1e200, y: 1e200},
                                                             "float64")),
    Rewrite("hypot_scaled_quotient", _hypot_scaled,
            "x/hypot(x, y)**3 overflows in hypot**3 although the result is representable; dividing by "
            "hypot one factor at a time keeps every intermediate <= |x|",
            "Higham 2002, sec. 27.8 (scaling to avoid overflow)",
            (x / (x**2 + y**2) ** sp.Rational(3, 2), {x: 1e120, y: 1e120}, "float64")),
    Rewrite("pow_exponent_offset", _pow_exponent_offset,
            "b**(u + k) rounds u + k before the power multiplies its error by |log b|; b**k exp(u log b) "
            "has no offset to round", "Higham 2002, sec. 1.12 (error propagation through a power); "
            "Goldberg 1991, sec. 1.4", (x ** (y + 1), {x: 1e-300, y: 1e-17}, "float64")),
    Rewrite("power_difference", _power_difference,
            "A**p - B**p cancels for A ~ B; (A - B)*S_m/S_n (a difference of powers factored) forms A - B "
            "exactly", "Goldberg 1991, sec. 1.4; Hamming 1973, ch. 3 (rationalising differences of roots)",
            ((x + 1) ** sp.Rational(3, 2) - x ** sp.Rational(3, 2), {x: 1e12}, "float64")),
    Rewrite("power_difference_any_exponent", _power_difference_any_exponent,
            "A**p - B**p cancels for A ~ B; B**p*expm1(p*log1p((A - B)/B)) forms A - B exactly and leaves the "
            "cancellation to expm1, for any exponent p", "Hamming 1973, ch. 3, problem 3.4.6; Higham 2002, sec. 1.14.1",
            ((x + 1) ** (1 / y) - x ** (1 / y), {x: 1e12, y: 4.0}, "float64")),
    Rewrite("sign_times_abs", _sign_abs,
            "u*sign(u) is |u|: left unsimplified it hides a symbolic cancellation (|u| - u*sign(u))",
            "DLMF 1.1 (sign and absolute value); Goldberg 1991, sec. 1.4",
            (sp.Abs(x) + 1 - x * sp.sign(x), {x: 1e20}, "float64")),
    Rewrite("log_dominant_term", _log_dominant,
            "log(t + rest) overflows in t (x**2 at |x| > 1e154); log|t| + log1p(rest/t) does not",
            "Higham 2002, sec. 27.8 (scaling to avoid overflow); Goldberg 1991, Thm. 4 (log1p)",
            (sp.log(x**2 + 1), {x: 1e200}, "float64")),
    Rewrite("cos_complement", _cos_complement,
            "rest + c*R*cos(u) cancels for small u when rest ~ -c*R; (rest + c*R) - 2*c*R*sin(u/2)**2 forms "
            "the cancelling part symbolically (law of cosines)",
            "Kahan 2014, 'Miscalculating area and angles of a needle-like triangle', sec. 2; "
            "Goldberg 1991, sec. 1.4", (1 - y * sp.cos(x), {x: 1e-5, y: 1.0}, "float64")),
    Rewrite("difference_of_squares", _pow_diff, "a^2 - b^2 cancels; (a-b)(a+b) subtracts exact inputs",
            "Goldberg 1991, sec. 1.4 (Thm. 2)", (x**2 - y**2, {x: 1e15 + 1, y: 1e15}, "float64")),
] + EXP_RULES + ERF_RULES
