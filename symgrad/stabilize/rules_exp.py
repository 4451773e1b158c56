"""Identities for the exp/log family: softplus, sigmoid, log-sum-exp, softmax.

All rules are written against SymPy's canonical trees and generic in the
matched subexpressions.  Sums of exponentials are recognised through
:func:`rules_util.exp_terms`, which also accepts ``k*exp(w)`` and positive
constants, so ``1 + exp(u)`` is the two-term sum ``exp(0) + exp(u)``.

References:
    Blanchard, Higham & Higham (2021), "Accurately computing the log-sum-exp
    and softmax functions", IMA J. Numer. Anal. 41(4) (max shift, softmax).
    Maechler (2012), "Accurately computing log(1 - exp(-|a|))" (log1pexp).
    Goldberg (1991), sec. 1.4 (catastrophic cancellation).
"""
from __future__ import annotations

import sympy as sp

from symgrad.ir.sympy_funcs import expm1, logaddexp, sigmoid, softplus
from symgrad.ir.sympy_funcs import log1p as sf_log1p
from .rules_util import Rewrite, coeff_and_rest, constant_minus, exp_factor_pairs, exp_terms, offset_terms, x, y

__all__ = ["EXP_RULES", "lse"]


def lae(a, b):
    """logaddexp(a, b), written as softplus when one argument is 0."""
    if a == 0:
        return softplus(b)
    if b == 0:
        return softplus(a)
    return logaddexp(a, b)


def lse(ws):
    """Stable log(sum(exp(w))) as a logaddexp chain (softplus(lse(rest)) when one exponent is 0)."""
    ws = list(ws)
    rest = [w for w in ws if w != 0]
    if len(rest) == len(ws) - 1 and rest:
        return softplus(lse(rest))
    acc = ws[0]
    for w in ws[1:]:
        acc = lae(acc, w)
    return acc


def _softplus(node):
    if node.func is sf_log1p and node.args[0].func is sp.exp:
        return [softplus(node.args[0].args[0])]
    if node.func is not sp.log:
        return []
    ws = exp_terms(node.args[0])
    if ws and len(ws) == 2 and 0 in ws:
        return [softplus(ws[1] if ws[0] == 0 else ws[0])]
    return []


def _recip(node):
    if not (node.is_Pow and node.exp.is_Integer and node.exp < 0):
        return []
    ws = exp_terms(node.base)
    if ws and len(ws) == 2 and 0 in ws:
        u = ws[1] if ws[0] == 0 else ws[0]
        return [sigmoid(-u) ** (-node.exp)]
    return []


def _without(node, *factors):
    """Product of ``node``'s Mul arguments with one occurrence of each of ``factors`` removed.

    (``node / f`` does not cancel ``exp(u) / exp(u)``: SymPy keeps
    ``exp(-u)*exp(u)``, which overflows.)
    """
    args = list(node.args)
    for f in factors:
        args.remove(f)
    return sp.Mul(*args)


def _ratio(node):
    """exp(u) * (exp(u) + exp(v))**-n -> sigmoid(u - v) * (exp(u) + exp(v))**-(n-1)."""
    if not node.is_Mul:
        return []
    out = []
    for f in node.args:
        if not (f.is_Pow and f.exp.is_Integer and f.exp < 0):
            continue
        ws = exp_terms(f.base)
        if not ws or len(ws) != 2:
            continue
        for g in node.args:
            if g.func is sp.exp and g.args[0] in ws:
                u = g.args[0]
                v = ws[1] if ws[0] == u else ws[0]
                out.append(_without(node, g, f) * sigmoid(u - v) * f.base ** (f.exp + 1))
    return out


def _complement(node):
    return constant_minus(node, {sigmoid: lambda k, u: k * sigmoid(-u)})


MAX_IDENTITY_OPS = 250  # larger nodes are not reduced by _sigmoid_identity (SymPy's factor grows with them)


def _logistic_count(node) -> int:
    """How many sigmoid and exp nodes ``node`` holds (repeats counted)."""
    return sum(1 for a in sp.preorder_traversal(node) if isinstance(a, (sigmoid, sp.exp)))


def _logistic_arguments(node) -> list:
    """The arguments u (sign-normalised) of the node's sigmoid(+-u) and exp(k u), k an integer."""
    out = []
    for f in node.atoms(sigmoid, sp.exp):
        c, u = f.args[0].as_coeff_Mul()
        if not c.is_Integer or u.is_Number:
            continue
        u = -u if u.could_extract_minus_sign() else u
        if u not in out:
            out.append(u)
    return out


def _sigmoid_identity(node):
    """A rational function of s = sigmoid(u), sigmoid(-u) = 1 - s and exp(k u) = (s/(1 - s))**k
    (other symbols as parameters) -> its reduced form, factored, each factor 1 - s written sigmoid(-u).

    Reverse mode leaves such functions unreduced: the Hessian of binary cross-entropy in the logit
    w, ``(-y/s - (y - 1)/(1 - s)) s sigmoid(-w)``, is ``s sigmoid(-w)`` for every label y, while the
    derived form divides by 1 - s = 0 for w > 37 and any form with y in it cancels where y = 1; with
    the probability written ``exp(w)/(1 + exp(w))`` its terms are ratios of exponentials that
    overflow.  The identities of the logistic function (its complement, e^u = s/(1 - s)) and an exact
    cancellation of the rational function find the product.
    """
    if node.is_Atom or not (node.is_Add or node.is_Mul or node.is_Pow) or _logistic_count(node) < 2 \
            or not node.atoms(sp.Add) or sp.count_ops(node) > MAX_IDENTITY_OPS:
        return []  # one logistic atom, or no sum: nothing cancels (and SymPy's factor is not cheap)
    out = []
    for u in _logistic_arguments(node):
        S = sp.Dummy("s")
        swap = {}
        for f in node.atoms(sigmoid, sp.exp):
            k = sp.cancel(f.args[0] / u)
            if not k.is_Integer:
                continue
            if f.func is sp.exp:
                swap[f] = (S / (1 - S)) ** k
            elif abs(k) == 1:
                swap[f] = S if k == 1 else 1 - S
        e = node.xreplace(swap)
        if not swap or any(e.has(f) for f in swap) or not e.is_rational_function(S) \
                or any(f.has(*u.free_symbols) for f in e.atoms(sp.Function)):
            continue  # u also inside another function (expm1(u), log(...)): not a rational function of s
        num, den = sp.fraction(sp.cancel(sp.together(e)))
        back = {S - 1: -sigmoid(-u), 1 - S: sigmoid(-u)}
        parts = []
        for poly, sign in ((num, 1), (den, -1)):
            c, factors = sp.factor_list(poly)
            parts.append(c ** sign)
            parts += [back.get(g, g.xreplace({S: sigmoid(u)})) ** (sign * k) for g, k in factors]
        cand = sp.Mul(*parts)  # products of sigmoids cost an operation or two more than s - s**2; the
        if cand != node and sp.count_ops(cand) <= sp.count_ops(node) + 2:  # search scores their accuracy
            out.append(cand)
    return out


def _exp_sigmoid(node):
    return [_without(node, g, f) * b ** (e - 1) * sigmoid(g.args[0])
            for g, f, b, e in exp_factor_pairs(node)
            if b.func is sigmoid and e.is_Integer and e > 0 and sp.expand(b.args[0] + g.args[0]) == 0]


def _log_sigmoid(node):
    """log(sigmoid(u)) -> -softplus(-u), and log1p(-sigmoid(u)) = log(sigmoid(-u)) -> -softplus(u): the
    log-probabilities of a logistic model (binary cross-entropy written with scipy.special.expit and
    np.log1p(-p)); sigmoid(40) rounds to 1 and log1p(-1) is -inf where the truth is -40."""
    a = node.args[0] if node.func in (sp.log, sf_log1p) else None
    if node.func is sp.log and a.func is sigmoid:
        return [-softplus(-a.args[0])]
    if node.func is sf_log1p and (-a).func is sigmoid:
        return [-softplus((-a).args[0])]
    return []


def _log_expm1(node):
    """log(expm1(u)) -> u + log1p(-exp(-u)): expm1(u) overflows for u > 709.78 while its logarithm
    is about u; the factored form never forms e^u (Maechler 2012, log1mexp: log1p(-exp(-u)) is
    accurate for u > log 2, where the regimes hand it the points; log(expm1(u)) keeps the rest).
    (u + log(-expm1(-u)), accurate for every u > 0, is not offered: its logarithm of 1 - e^-u cannot be
    evaluated exactly for huge u, so the equivalence check could not verify it.)"""
    if node.func is not sp.log or node.args[0].func is not expm1:
        return []
    u = node.args[0].args[0]
    return [u + sf_log1p(-sp.exp(-u))]


def _logaddexp(node):
    if node.func is not sp.log:
        return []
    ws = exp_terms(node.args[0])
    if not ws:
        return []
    out = [lse(ws), lse(sorted(ws, key=sp.default_sort_key))]
    if len(ws) == 2 and 0 not in ws:
        # log(exp(u) + exp(v)) = u + softplus(v - u): the shift by one exponent (Blanchard, Higham & Higham
        # 2021, eq. (2.2) with the max replaced by u) lets a surrounding -u cancel symbolically, as in the
        # log-softmax u - log(exp(u) + exp(v)) = -softplus(v - u) (0 in floating point for u >> v)
        out += [u + softplus(sp.expand(v - u)) for u, v in (ws, ws[::-1])]
    return out


def _max_shift(node):
    if node.func is not sp.log:
        return []
    ws = exp_terms(node.args[0])
    if not ws:
        return []
    m = sp.Max(*ws)
    return [m + sp.log(sp.Add(*[sp.exp(w - m) for w in ws]))]


def _absorb(node):
    """T + log(sum exp(w)) -> log(sum exp(w + T)); T + logaddexp(a, b), T + softplus(u) likewise."""
    if not node.is_Add:
        return []
    out = []
    for t in node.args:
        T = node - t
        if t.func is sp.log:
            ws = exp_terms(t.args[0])
            if ws:
                out.append(sp.log(sp.Add(*[sp.exp(sp.expand(w + T)) for w in ws])))
        elif t.func is logaddexp:
            out.append(lae(*[sp.expand(a + T) for a in t.args]))
        elif t.func is softplus:
            out.append(lae(T, sp.expand(t.args[0] + T)))
    return out


def _softplus_shift(node):
    """softplus(u) + R -> softplus(-u) + (R + u) when R + u is simpler (cancels)."""
    if not node.is_Add:
        return []
    out = []
    for t in node.args:
        c, r = coeff_and_rest(t)
        if r.func is softplus and c in (1, -1):
            R = node - t
            R2 = sp.expand(R + c * r.args[0])
            if sp.count_ops(R2) < sp.count_ops(R):
                out.append(c * softplus(-r.args[0]) + R2)
    return out


def _shift_sum(e, m):
    if e.func is sp.exp:
        return sp.exp(e.args[0] - m)
    ws = exp_terms(e)
    return sp.Add(*[sp.exp(w - m) for w in ws]) if ws else None


def _softmax(node):
    """prod(N_i) / sum exp(w) -> N_1 exp(-m) prod(N_i, i > 1) / sum exp(w - m), m = max of all exponents,
    for each factor N_1 that is an exponential or a sum of exponentials (not yet shifted)."""
    if not node.is_Mul:
        return []
    den = [f for f in node.args if f.is_Pow and f.exp == -1 and exp_terms(f.base)]
    if len(den) > 1:  # a sum already shifted stays as it is: (X) exp(a) / (S * S_shifted), a step of the search
        den = [f for f in den if not f.base.has(sp.Max)]
    if len(den) != 1:
        return []
    ws = exp_terms(den[0].base)
    if sum(1 for w in ws if w.free_symbols) < 2:
        return []
    m = sp.Max(*ws)
    num = [f for f in node.args if f is not den[0]]
    rest = sp.Mul(*num)
    out = []
    # one numerator factor takes the denominator's exp(-m) (shifting two would divide by exp(m) twice); a
    # factor already shifted is left alone
    for f in sorted(num, key=lambda f: (f.func is not sp.exp, sp.default_sort_key(f))):
        if f.has(sp.Max):
            continue
        s = _shift_sum(f, m)
        if s is not None:
            out.append(_without(rest, f) * s / _shift_sum(den[0].base, m) if rest.is_Mul else
                       s / _shift_sum(den[0].base, m))
    return out


def _exponent(r):
    """``u`` with ``r == exp(u)``, ``r`` an exp or a product of exps (``exp(-x)*exp(-x - exp(-x))``, as
    the chain rule leaves the derivative of a Gumbel density), or None."""
    factors = sp.Mul.make_args(r)
    if not all(f.func is sp.exp for f in factors):
        return None
    return sp.Add(*[f.args[0] for f in factors])


def _exp_diff(node):
    """c*exp(a) - c*exp(b) -> c*exp(b)*expm1(a - b), a - b formed symbolically; each term may be a
    product of exps (their exponents are added)."""
    if not node.is_Add:
        return []
    ex = [((c, _exponent(r)), t) for (c, r), t in ((coeff_and_rest(t), t) for t in node.args)]
    ex = [((c, u), t) for (c, u), t in ex if u is not None]
    out = []
    for (c1, a), t1 in ex:
        for (c2, b), t2 in ex:
            if t1 != t2 and c1 == -c2 and c1 > 0:
                out.append(node - t1 - t2 + c1 * sp.exp(b) * expm1(sp.expand(a - b)))
    return out


def _exp_with_cofactor(t):
    """``(c, P, u)`` with ``t == c*P*exp(u)`` (c numeric, P free of exp; several exp factors are one
    exp of the sum of their exponents), or None."""
    c, r = coeff_and_rest(t)
    exps = [f for f in sp.Mul.make_args(r) if f.func is sp.exp]
    if not exps:
        return None
    P = _without(r, *exps) if r.is_Mul else sp.S.One
    return c, P, _exponent(sp.Mul(*exps))


def _exp_diff_cofactor(node):
    """c*P*exp(u) - c*Q*exp(v) -> c*exp(v)*(P*expm1(u - v) + (P - Q)), P - Q formed symbolically.

    The generic form of :func:`_exp_diff` when the exponentials carry different cofactors
    (``exp(-a/y)/y - exp(-a/x)/x`` for x ~ y): both differences ``u - v`` and ``P - Q`` are
    taken exactly (``together``), so the cancellation is left to expm1 and the algebra.
    Both orientations (factoring exp(u) or exp(v)) are offered.
    """
    if not node.is_Add:
        return []
    ex = [(_exp_with_cofactor(t), t) for t in node.args]
    ex = [(e, t) for e, t in ex if e is not None]
    out = []
    for i, ((c1, P, u), t1) in enumerate(ex):
        for (c2, Q, v), t2 in ex[i + 1:]:
            if c1 != -c2 or P == Q:
                continue
            rest = node - t1 - t2
            dPQ = sp.together(P - Q)
            duv = sp.together(sp.expand(u - v))  # a/x - a/y -> a*(y - x)/(x*y): the inputs subtracted first
            out.append(rest + c1 * sp.exp(v) * (P * expm1(duv) + dPQ))
            out.append(rest + c1 * sp.exp(u) * (dPQ - Q * expm1(-duv)))
    return out


def _log_units(f):
    """Split a factor into units ``[(ws, k), ...]`` with ``f == prod (sum_i exp(ws_i))**k``, or None.

    ``exp(k*w)`` (integer 1 < k <= 4) gives ``([w], k)``; ``S**k`` with ``S`` a
    sum of exponentials gives ``(ws, k)``; a positive power of another sum is split
    by ``factor_terms`` (``exp(a)*exp(b) + exp(a)*exp(c) -> exp(a)*(exp(b) + exp(c))``).
    """
    if f.func is sp.exp:
        k, w = f.args[0].as_coeff_Mul()
        if k.is_Integer and 1 < k <= 4:
            return [([w], int(k))]
        return [([f.args[0]], 1)]
    b, e = f.as_base_exp()
    if not (b.is_Add and e.is_Integer and e != 0 and abs(e) <= 4):
        return None
    ws = exp_terms(b)
    if ws:
        return [(ws, int(e))]
    if e < 0:
        return None
    ft = sp.factor_terms(b)
    if not ft.is_Mul:
        return None
    c, rest = ft.as_coeff_Mul()
    if c != 1:
        return None
    out = []
    for g in sp.Mul.make_args(rest):
        u = _log_units(g)
        if u is None or any(k < 0 for _, k in u):
            return None
        out += [(w, k * int(e)) for w, k in u]
    return out


def _pair_max(p, q):
    """sum exp(p_i) / sum exp(q_j) as shifted sums (max of q), or sigmoid for a 2-term q."""
    if len(p) == 1 and len(q) == 2 and p[0] in q:
        return sigmoid(sp.expand(p[0] - (q[1] if q[0] == p[0] else q[0])))
    m = sp.Max(*q)
    return sp.Add(*[sp.exp(w - m) for w in p]) / sp.Add(*[sp.exp(w - m) for w in q])


def _pair_lse(p, q):
    """sum exp(p_i) / sum exp(q_j) as exp(lse(p) - lse(q))."""
    return sp.exp(lse(p) - lse(q))


def _log_domain_ratio(node):
    """prod (sum exp(p))**k / prod (sum exp(q))**n -> prod of ratios <= 1: softmax products.

    Every numerator unit (an exponential or a positive power of a sum of
    exponentials) is paired with one copy of a denominator sum of exponentials
    ``T`` and evaluated as a shifted softmax ``exp(u - m)/sum exp(w - m)`` (m =
    max w; a sigmoid for two terms) or as ``exp(u - lse(T))``, so no intermediate
    overflows (``exp(a)*exp(b)/(exp(a) + exp(b) + exp(c))**2``).  Unpaired
    factors are kept as they are.
    """
    if not node.is_Mul or not any(f.is_Pow and f.exp < 0 and f.base.is_Add for f in node.args):
        return []  # no sum in a denominator (checked first: splitting the factors costs factor_terms)
    coeff, others, pos, neg = sp.S.One, [], [], []
    for f in node.args:
        if f.is_Number:
            coeff *= f
            continue
        u = _log_units(f)
        if u is None:
            others.append(f)
            continue
        for ws, k in u:
            (pos if k > 0 else neg).extend([ws] * abs(k))
    if not pos or not neg:
        return []
    n = min(len(pos), len(neg))
    out = []
    for pair in (_pair_max, _pair_lse):
        paired = [pair(p, q) for p, q in zip(pos[:n], neg[:n])]
        rest = [sp.Add(*[sp.exp(w) for w in p]) for p in pos[n:]] + [1 / sp.Add(*[sp.exp(w) for w in q])
                                                                     for q in neg[n:]]
        out.append(sp.Mul(coeff, *others, *paired, *rest))
    return out


def _signed_exp_pair(s):
    """``(s1, u, s2, v)`` with ``s == s1*exp(u) + s2*exp(v)``, s_i = +-1 (constants +-1 as exp(0))."""
    if not (s.is_Add and len(s.args) == 2):
        return None
    out = []
    for t in s.args:
        c, r = coeff_and_rest(t)
        if c not in (1, -1):
            return None
        if r == 1:
            out += [int(c), sp.S.Zero]
        elif r.func is sp.exp:
            out += [int(c), r.args[0]]
        else:
            return None
    return tuple(out)


def _tanh(node):
    """(exp(u) - exp(v))**k / (exp(u) + exp(v))**n -> tanh((u - v)/2)**k (k <= n).

    The naive quotient is inf/inf for large |u - v| and cancels for small.
    """
    if not node.is_Mul:
        return []
    for f in node.args:
        b, n = f.as_base_exp()
        if not (n.is_Integer and n < 0):
            continue
        pr = _signed_exp_pair(b)
        if pr is None or pr[0] != 1 or pr[2] != 1:
            continue
        u, v = pr[1], pr[3]
        left, out_f, sign = -int(n), [], 1
        for g in node.args:
            if g is f:
                continue
            gb, k = g.as_base_exp()
            q = _signed_exp_pair(gb) if (k.is_Integer and 0 < k <= left) else None
            if q is None or q[0] == q[2] or {q[1], q[3]} != {u, v}:
                out_f.append(g)
                continue
            s1 = q[0] if q[1] == u else q[2]  # coefficient of exp(u)
            sign *= s1 ** int(k)
            left -= int(k)
            out_f.append(sp.tanh(sp.expand((u - v) / 2)) ** k)
        if left == -int(n):
            continue
        return [sign * sp.Mul(*out_f) * b ** (-left)]
    return []


def _sech2(node):
    """k - k*tanh(u)**2 -> 4k*sigmoid(2u)*sigmoid(-2u) and k/cosh(u)**2 (= k*sech(u)**2), no cancellation.

    sech(u) = (1 - tanh(u)**2)**(1/2) (DLMF Table 4.30.1); it is tanh' (DLMF 4.34.3), so every
    derivative of a tanh carries it, often in several terms at once (the search rewrites all
    occurrences of a repeated subexpression in one candidate, :meth:`.search.Search.children`).
    For |u| > 19 the difference is 0 in float64 while sech(u)**2 ~ 4 exp(-2|u|) is representable.
    """
    if not node.is_Add:
        return []
    k, rest = node.as_coeff_Add()
    out = []
    for t in sp.Add.make_args(rest):
        c, r = coeff_and_rest(t)
        if k != 0 and c == -k and r.is_Pow and r.exp == 2 and r.base.func is sp.tanh:
            u = r.base.args[0]
            out.append(node - t - k + 4 * k * sigmoid(2 * u) * sigmoid(-2 * u))
            out.append(node - t - k + k / sp.cosh(u) ** 2)
    return out


def _exp_over_expm1(node):
    """exp(u) * expm1(u)**-n -> -expm1(u)**-(n-1) / expm1(-u): e^u/(e^u - 1) = 1/(1 - e^-u), no inf/inf."""
    return [-_without(node, g, f) * b ** (n + 1) / expm1(-g.args[0])
            for g, f, b, n in exp_factor_pairs(node)
            if b.func is expm1 and n.is_Integer and n < 0 and b.args[0] == g.args[0]]


def _tanh_from_sigmoid(node):
    """k - 2k*sigmoid(u) -> -k*tanh(u/2): 1 - 2*sigmoid(u) cancels for small u, tanh(u/2) does not."""
    return [node - t - k - k * sp.tanh(r.args[0] / 2)
            for k, t, c, r in offset_terms(node) if c == -2 * k and r.func is sigmoid]


def _exp_from_expm1(node):
    """k + k*expm1(u) + rest -> k*exp(u) + rest: adding the 1 back rounds away exp(u) when it is tiny."""
    return [node - t - k + k * sp.exp(r.args[0])
            for k, t, c, r in offset_terms(node) if c == k and r.func is expm1]


def _pow_minus_one(node):
    """k - k*B**p + rest -> -k*expm1(p*log(B)) + rest, with log1p(u) for B = 1 + u (SciPy's powm1).

    B**p rounds to 1 when p*log(B) is below an ulp, and the difference keeps only the rounding:
    (1 + x)**100 - 1 is 0 at x = 1e-18 (the truth 1e-16).  The form is valid for B > 0 (log(B) is
    NaN below 0, where the regime split keeps the original).
    """
    out = []
    for k, t, c, r in offset_terms(node):
        if c != -k or not r.is_Pow or r.base == sp.E or not r.base.free_symbols:
            continue
        base, p = r.base, r.exp
        if p.is_Number and abs(p) <= 1:
            continue
        one, u = base.as_coeff_Add()
        lg = sf_log1p(u) if one == 1 and u != 0 else sp.log(base)
        out.append(node - t - k + c * expm1(p * lg))
    return out


def _tanh_from_sinh_cosh(node):
    """sinh(u)**a * cosh(u)**-b -> tanh(u)**k * sinh(u)**(a-k) * cosh(u)**(k-b), k = min(a, b).

    Both factors overflow for |u| > 710 (inf/inf = NaN) and their ratio rounds twice;
    tanh(u) is bounded and computed directly.
    """
    if not node.is_Mul:
        return []
    pw = {}
    for f in node.args:
        bse, e = f.as_base_exp()
        if bse.func in (sp.sinh, sp.cosh) and e.is_Integer:
            pw[(bse.func, bse.args[0])] = (f, int(e))
    out = []
    for (fn, u), (f, a) in pw.items():
        if fn is not sp.sinh or a <= 0 or (sp.cosh, u) not in pw:
            continue
        g, b = pw[(sp.cosh, u)]
        if b >= 0:
            continue
        k = min(a, -b)
        rest = sp.Mul(*[h for h in node.args if h is not f and h is not g])
        out.append(rest * sp.tanh(u) ** k * sp.sinh(u) ** (a - k) * sp.cosh(u) ** (b + k))
    return out


def _sigmoid_from_tanh(node):
    """k +- k*tanh(u) + rest -> 2k*sigmoid(+-2u) + rest: 1 + tanh(u) cancels for u << 0 (GELU)."""
    return [node - t - k + 2 * k * sigmoid(2 * r.args[0] * sp.sign(c * k))
            for k, t, c, r in offset_terms(node) if abs(c) == abs(k) and r.func is sp.tanh]


def _log_cosh(node):
    """log(cosh(u)) -> |u| + softplus(-2|u|) - log(2): cosh overflows for |u| > 710."""
    if node.func is sp.log and node.args[0].func is sp.cosh:
        u = sp.Abs(node.args[0].args[0])
        return [u + softplus(-2 * u) - sp.log(2)]
    return []


EXP_RULES = [
    Rewrite("softplus_from_log1pexp", _softplus, "exp(u) overflows for large u although log(1+exp(u)) ~ u",
            "Maechler 2012", (sp.log(1 + sp.exp(x)), {x: 1000.0}, "float64")),
    Rewrite("sigmoid_from_reciprocal", _recip, "1/(1+exp(u)) underflows to 0 via exp overflow",
            "Maechler 2012", (1 / (1 + sp.exp(-x)), {x: -720.0}, "float64")),
    Rewrite("sigmoid_from_ratio", _ratio, "exp(u)/(exp(u)+exp(v)) is inf/inf = NaN for large u",
            "Blanchard, Higham & Higham 2021", (sp.exp(x) / (1 + sp.exp(x)), {x: 1000.0}, "float64")),
    Rewrite("sigmoid_complement", _complement, "1 - sigmoid(u) cancels for large u; sigmoid(-u) does not",
            "Goldberg 1991, sec. 1.4", (1 - sigmoid(x), {x: 40.0}, "float64")),
    Rewrite("sigmoid_identity", _sigmoid_identity,
            "s - s**2 and the other rational functions of s = sigmoid(u) that reverse mode leaves unreduced "
            "cancel (1 - s rounds to 0 for u > 37); reduced with sigmoid(-u) = 1 - s they are products such "
            "as s*sigmoid(-u)", "Goldberg 1991, sec. 1.4; the logistic function's identities",
            (sigmoid(x) - sigmoid(x) ** 2, {x: 40.0}, "float64")),
    Rewrite("sigmoid_from_exp_product", _exp_sigmoid, "exp(u)*sigmoid(-u) is inf*0 for large u",
            "Maechler 2012", (sp.exp(x) * sigmoid(-x), {x: 1000.0}, "float64")),
    Rewrite("log_sigmoid", _log_sigmoid, "sigmoid(u) underflows to 0 so log gives -inf",
            "Maechler 2012", (sp.log(sigmoid(x)), {x: -1000.0}, "float64")),
    Rewrite("log_expm1", _log_expm1, "expm1(u) overflows for u > 709.78 while log(expm1(u)) ~ u",
            "Maechler 2012 (log1mexp)", (sp.log(expm1(x)), {x: 1000.0}, "float64")),
    Rewrite("logaddexp_from_log_sum_exp", _logaddexp,
            "exp overflows inside the sum; logaddexp shifts by max (two terms: u + softplus(v - u) too)",
            "Blanchard, Higham & Higham 2021, sec. 2",
            (sp.log(sp.exp(x) + sp.exp(y)), {x: 1000.0, y: 1000.0}, "float64")),
    Rewrite("lse_max_shift", _max_shift, "log(sum exp(w)) = m + log(sum exp(w - m)), m = max w: no overflow",
            "Blanchard, Higham & Higham 2021, eq. (2.2)",
            (sp.log(sp.exp(x) + sp.exp(y)), {x: 1000.0, y: 1000.0}, "float64")),
    Rewrite("absorb_into_log_sum_exp", _absorb,
            "T + log(sum exp(w)) cancels when T ~ -max w; moving T inside subtracts exact inputs",
            "Blanchard, Higham & Higham 2021, sec. 4 (softmax cross-entropy)",
            (-x + sp.log(sp.exp(x) + sp.exp(y)), {x: 1000.0, y: 0.0}, "float64")),
    Rewrite("softplus_shift", _softplus_shift, "softplus(u) - u cancels for large u; equals softplus(-u)",
            "Maechler 2012", (softplus(x) - x, {x: 50.0}, "float64")),
    Rewrite("softmax_max_shift", _softmax, "exp(a)/sum exp(w) overflows to inf/inf; shift all exponents by max",
            "Blanchard, Higham & Higham 2021, sec. 3",
            (sp.exp(x) / (sp.exp(x) + sp.exp(y) + 1), {x: 1000.0, y: 1000.0}, "float64")),
    Rewrite("exp_difference", _exp_diff, "exp(a) - exp(b) cancels for a ~ b; exp(b)*expm1(a - b) does not",
            "Higham 2002, sec. 1.14.1", (sp.exp(x) - sp.exp(y), {x: 2e-10, y: 1e-10}, "float64")),
    Rewrite("exp_difference_cofactor", _exp_diff_cofactor,
            "P*exp(u) - Q*exp(v) cancels for u ~ v and P ~ Q; exp(v)*(P*expm1(u - v) + (P - Q)) takes both "
            "differences exactly", "Higham 2002, sec. 1.14.1; Goldberg 1991, sec. 1.4",
            (sp.exp(-1 / y) / y - sp.exp(-1 / x) / x, {x: 2.0, y: 2.0 + 2.0**-30}, "float64")),
    Rewrite("log_domain_ratio", _log_domain_ratio,
            "exp(a)*exp(b)/(sum exp)**2 overflows to inf/inf; pairing each numerator exponential with one "
            "denominator copy as exp(a - lse) keeps every factor <= 1",
            "Blanchard, Higham & Higham 2021, sec. 3 (softmax via exp(x - lse))",
            (sp.exp(x) * sp.exp(y) / (sp.exp(x) + sp.exp(y) + 1) ** 2, {x: 710.0, y: 300.0}, "float64")),
    Rewrite("tanh_from_exp", _tanh, "(exp(u) - exp(v))/(exp(u) + exp(v)) is inf/inf for large u - v",
            "Higham 2002, sec. 1.14", ((sp.exp(x) - sp.exp(-x)) / (sp.exp(x) + sp.exp(-x)), {x: 800.0},
                                       "float64")),
    Rewrite("sech2_from_tanh", _sech2, "1 - tanh(u)**2 cancels for large |u|; 4*sigmoid(2u)*sigmoid(-2u) does not",
            "DLMF Table 4.30.1, 4.34.3; Goldberg 1991, sec. 1.4", (1 - sp.tanh(x) ** 2, {x: 20.0}, "float64")),
    Rewrite("tanh_from_sigmoid", _tanh_from_sigmoid,
            "1 - 2*sigmoid(u) cancels for small |u| (both terms ~1); it equals -tanh(u/2), computed directly",
            "DLMF 4.35.4 (tanh in terms of exp); Goldberg 1991, sec. 1.4",
            (1 - 2 * sigmoid(x), {x: 1e-9}, "float64")),
    Rewrite("sigmoid_from_tanh", _sigmoid_from_tanh,
            "1 + tanh(u) cancels for u << 0 (tanh(u) ~ -1); it equals 2*sigmoid(2u), computed without cancellation",
            "DLMF 4.35.4; Goldberg 1991, sec. 1.4", (1 + sp.tanh(x), {x: -15.0}, "float64")),
    Rewrite("log_cosh", _log_cosh,
            "cosh(u) overflows for |u| > 710 although log(cosh(u)) ~ |u| - log 2; "
            "cosh(u) = exp(|u|) (1 + exp(-2|u|)) / 2 keeps every term bounded",
            "DLMF 4.28.2 (cosh in terms of exp); Maechler 2012 (softplus)",
            (sp.log(sp.cosh(x)), {x: 800.0}, "float64")),
    Rewrite("exp_from_expm1", _exp_from_expm1,
            "1 + expm1(u) rounds exp(u) away when exp(u) < eps (the derivative of expm1 from its output)",
            "Higham 2002, sec. 1.14.1", (1 + expm1(x), {x: -40.0}, "float64")),
    Rewrite("pow_minus_one", _pow_minus_one,
            "B**p - 1 keeps only the rounding of B**p when p*log(B) is tiny; expm1(p*log1p(B - 1)) does not",
            "scipy.special.powm1; Higham 2002, sec. 1.14.1", ((1 + x) ** 100 - 1, {x: 1e-10}, "float64")),
    Rewrite("tanh_from_sinh_cosh", _tanh_from_sinh_cosh,
            "sinh(u)/cosh(u) is inf/inf for |u| > 710 and rounds twice; tanh(u) is bounded",
            "DLMF 4.28.4 (tanh = sinh/cosh)", (sp.sinh(x) / sp.cosh(x), {x: 800.0}, "float64")),
    Rewrite("exp_over_expm1", _exp_over_expm1, "exp(u)/expm1(u)**n is inf/inf for large u; -1/expm1(-u) is not",
            "Goldberg 1991, sec. 1.4", (sp.exp(x) / expm1(x) ** 2, {x: 400.0}, "float64")),
]
