"""Apply the numerical stabiliser to every output of a kernel before emission.

For each output, the *elementwise region* above it is collected: the nodes
reachable through elementwise ops, stopping at inputs, constants and
non-elementwise nodes (sums, contractions, indexing), which become the
region's free symbols.  The region is converted to one scalar SymPy
expression (elementwise ops act the same on every array element), handed to
:func:`symgrad.stabilize.stabilize`, and a better expression is built back into
the graph.  Each accepted rewrite becomes one comment above the statement it
changed, naming the region's leaves as the code names them (see :func:`node_refs`).
"""
from __future__ import annotations

import functools
import os
import re

import numpy as np
import sympy as sp

from ..emit.module import KernelDef
from ..emit.names import NODE_REF
from ..ir.from_sympy import from_sympy
from ..ir.graph import Graph
from ..ir.interpret import sympy_number
from ..ir.sympy_funcs import strip_dd
from ..ir.ops import REGISTRY
from ..ir.ddprogram import OP_NAME as DD_REGION
from ..stabilize.canonical import cancel_negated_factors
from ..stabilize.constants import exact_constants
from ..stabilize.budget import StabilizeBudgetExceeded, collector_paused, cpu_clock, hard_deadline
from ..stabilize.search import _tree_size

MAX_REGION_NODES = 60
DEFAULT_BUDGET_S = float(os.environ.get("SYMGRAD_STABILIZE_BUDGET", "1.0"))  # CPU seconds per program
ACCURATE_MEAN_BITS = 1.5  # regions this accurate on average, and within 2 ulps everywhere probed, are not searched
# A region's search may use at most the remaining budget over this many (or over the regions left
# to search, if fewer): one expensive region cannot starve the rest (the 24-input regions of a
# scalar-loop MLP take ~0.3 s each uncut), and a program with one losing region gets it all.
SHARE_OF_REGIONS = 4
# A region is searched as ``stabilize()`` alone searches it (on its own ``n_points`` sample per dtype,
# checked on its own check sample) when that sample's estimated cost is at most OWN_SAMPLE_FRACTION
# of the region's share of the budget; otherwise on the triage's shared points and the shared check.
# The shared points (32 per dtype, fewer where the reference is not finite) are free but few: too few
# to rank close candidates (sqrt(x+1) - sqrt(x)'s derivative: 20/13 finite points picked a 2-ulp
# form; mish'' and the logistic density'' lost accuracy at a 10 s budget).  The estimate is
# SAMPLE_COST_S per tree node and point, times (1 + inputs / 8): measured here, 2 x 256 points cost
# 0.05-0.25 s for one-input regions of 13-97 nodes (1.5-13 us per node and point, ~5 typical) and
# ~0.9 s for the 98-node, 24-input regions of a (4, 4) scalar-loop MLP (~18 us).
OWN_SAMPLE_FRACTION = 0.25
# The last part of the budget is kept for building the regions searched so far into the graph: a
# region whose check passed just before the deadline is kept (see stabilize()), and building a
# 24-input regime split takes up to ~0.1 s at a 3 s budget.
APPLY_SHARE = 0.05
SAMPLE_COST_S = 5e-6
# A derivative region its own search leaves inaccurate (above ACCURATE_MEAN_BITS on the mean in float64)
# is searched again, shortly (SEEDED_WORK units: the seeds ranked, split and checked with the first
# search's form), from the seeds of stabilize_kernel's ``seeds``, when at least MIN_SEEDED_S CPU seconds
# of its share are left, and that result is kept when it is better by MIN_SEED_GAIN bits on the mean
# (see _seeded); the primal region's search that makes the seeds (once per kernel) may spend
# PRIMAL_SHARE of what is left.  Tried before the region's own search, the seeds took time from regions
# that search repairs with all of it (the Bernoulli KL gradient lost its double-double step, GELU'' its form).
PRIMAL_SHARE = 0.4
MIN_SEEDED_S = 0.2
SEEDED_WORK = 100
MIN_SEED_GAIN = 0.1


def _own_sample_cost(expr, variables, n_points: int = 256, dtypes: int = 2) -> float:
    """Estimated CPU seconds of the search's own sample of ``expr`` (see ``SAMPLE_COST_S``)."""
    return SAMPLE_COST_S * _tree_size(expr, 10**5) * n_points * dtypes * (1 + len(variables) / 8)


def _own_sample_size(expr, variables, allowance: float) -> int:
    """Points per dtype of a region's own search sample: 256, or 128, or the first 64 alone,
    the most that the first 64 show to cost at most ``allowance`` CPU seconds.

    The static estimate (:func:`_own_sample_cost`) cannot see how much precision the references
    need: d/dx of log(1 - x)/log(1 + x) cancels about log2(1/|x|) bits, so at the tiny inputs of a
    bit-pattern sample 256 points per dtype took 0.33 s, a third of a default program budget,
    against 0.07 s estimated.  The 64 points are drawn anyway (a 256-point sample begins with
    them, :func:`symgrad.stabilize.accuracy.make_sample`), so the probe costs nothing extra.  Their
    cost is the one recorded when they were made (``Sample.cpu_s``), so a second build of the same
    program in the process, which finds them cached, decides the same way.
    """
    from ..stabilize.accuracy import make_sample

    spent = sum(make_sample(expr, variables, dt, n=64).cpu_s for dt in ("float64", "float32"))
    return next((n for n in (256, 128) if n / 64 * spent <= allowance), 64)


def _region_size(g: Graph, root: int, limit: int) -> int:
    """Number of elementwise ops in the region at ``root``, counting stops past ``limit``.

    Iterative, so a long chain (``for _ in range(1000): x = np.sin(x)``) cannot overflow
    Python's recursion limit before the size check rejects it.
    """
    seen, stack, size = set(), [root], 0
    nodes = g.nodes
    while stack and size <= limit:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        node = nodes[nid]
        if node.op not in _REGION_OPS:
            continue
        size += 1
        stack.extend(node.args)
    return size


def region_sizes(g: Graph, roots: list[int], limit: int) -> dict[int, int]:
    """``{root: number of elementwise ops in its region}`` (as :func:`_region_size`, sizes past
    ``limit`` reported as ``limit + 1``), for many roots in one bottom-up pass: a node's region is
    itself and its region-op arguments' regions, kept as sets while they have at most ``limit``
    ops, so each node is visited once however many regions contain it."""
    nodes = g.nodes
    regions: dict[int, frozenset | None] = {}  # None: more than ``limit`` ops
    for nid in g.ancestors(roots):
        node = nodes[nid]
        if node.op not in _REGION_OPS:
            continue
        acc = {nid}
        for a in node.args:
            if nodes[a].op in _REGION_OPS:
                sub = regions[a]
                if sub is None:
                    acc = None
                    break
                acc |= sub
                if len(acc) > limit:
                    acc = None
                    break
        regions[nid] = None if acc is None else frozenset(acc)
    return {r: (limit + 1 if regions.get(r, frozenset()) is None else len(regions.get(r, ()))) for r in roots}


# ops a stabiliser region is made of: elementwise, with a SymPy form (a double-double region the
# stabiliser made is a leaf: its value is final)
_NOT_REGION = frozenset({"stop_gradient", DD_REGION})
_REGION_OPS = frozenset(name for name, op in REGISTRY.items()
                        if op.elementwise and op.sympy is not None and name not in _NOT_REGION)


_COMPARISONS = {"gt", "ge", "lt", "le", "eq", "ne", "where"}


def _compares(g: Graph, root: int, leaves: set) -> bool:
    """The region at ``root`` compares or selects: SymPy folds ``x != x`` to False, so its canonical
    form would drop NumPy's NaN semantics (``np.fmax``'s NaN test) and must not replace the graph."""
    stack, seen = [root], set()
    while stack:
        nid = stack.pop()
        if nid in seen or nid in leaves:
            continue
        seen.add(nid)
        if g[nid].op in _COMPARISONS:
            return True
        stack.extend(g[nid].args)
    return False


def _use_canonical(g: Graph, root: int, name: str, expr, leaves: dict, header: list, mapping: dict) -> None:
    """An accurate region whose SymPy canonical form is shorter than the traced form ((expm1(x) + 1) - 1
    is expm1(x)) is rebuilt from the canonical form: the graph would still compute the longer one."""
    size = _region_size(g, root, MAX_REGION_NODES)
    if sp.count_ops(expr) < size and not _compares(g, root, set(leaves.values())):
        new = from_sympy(g, expr, leaves)
        if root not in g.ancestors([new]):
            mapping[root] = new
            header.append(f"{name}: canonical form {expr} ({size} ops as traced)")


def _region_expr(g: Graph, root: int):
    """(SymPy expression of the elementwise region at ``root``, {symbol: node id}, size)."""
    leaves: dict = {}
    memo: dict[int, sp.Expr] = {}
    size = 0

    def leaf(nid: int) -> sp.Expr:
        node = g[nid]
        name = node.params[0] if node.op == "input" else f"t{nid}"
        sym = sp.Symbol(name, real=True)
        leaves[sym] = nid
        return sym

    def rec(nid: int) -> sp.Expr:
        nonlocal size
        if nid in memo:
            return memo[nid]
        node = g[nid]
        op = REGISTRY[node.op]
        if node.op == "const" and node.shape == ():
            out = sympy_number(float(g.consts[nid]))
        elif node.op == "bconst" and node.shape == ():
            out = sp.true if bool(g.consts[nid]) else sp.false
        elif node.op in _REGION_OPS:
            size += 1
            out = op.sympy(*[rec(a) for a in node.args])
        else:
            out = leaf(nid)
        memo[nid] = out
        return out

    expr = exact_constants(rec(root))  # x/np.sqrt(2.0) in erf(...) as x*sqrt(2)/2 (see that function)
    expr = cancel_negated_factors(expr)  # (x - 1)/(1 - x) is -1 (see that function)
    return expr, leaves, size


def budget_of(stabilize) -> float:
    """The per-program budget (CPU seconds) meant by a ``stabilize=`` argument (True or seconds)."""
    if stabilize is True:
        return DEFAULT_BUDGET_S
    return float(stabilize)


def _stabilizable(g: Graph, nid: int) -> bool:
    node = g[nid]
    return node.kind == "f" and node.op in _REGION_OPS


def region_roots(g: Graph, outputs: list[int]) -> list[int]:
    """Roots of the elementwise regions of a kernel, in topological order.

    The kernel's elementwise outputs, and every elementwise node that feeds an array
    primitive (a sum, contraction, index or reshape): ``X.T @ (y * sigmoid(-y * X @ w))``
    has an elementwise region under the contraction whose NaN at large logits only a
    rewrite *there* removes.
    """
    needed = g.ancestors(outputs)
    roots = {o for o in outputs if _stabilizable(g, o)}
    for nid in needed:
        node = g[nid]
        if not REGISTRY[node.op].elementwise:
            roots.update(a for a in node.args if _stabilizable(g, a))
    return sorted(roots)


def rebuild(g: Graph, outputs: list[int], mapping: dict[int, int]) -> dict[int, int]:
    """New ids of ``outputs`` (and of every node rebuilt on the way) with ``mapping`` applied.

    ``mapping`` replaces nodes by equivalent ones built from the *original* graph; consumers
    are re-applied with their new operands (iteratively, so deep graphs cannot overflow).
    """
    memo: dict[int, int] = {}
    stack = list(outputs)
    while stack:
        nid = stack[-1]
        if nid in memo:
            stack.pop()
            continue
        if nid in mapping:
            target = mapping[nid]
            if target not in memo:
                stack.append(target)
                continue
            memo[nid] = memo[target]
            stack.pop()
            continue
        node = g[nid]
        todo = [a for a in node.args if a not in memo]
        if todo:
            stack.extend(todo)
            continue
        args = tuple(memo[a] for a in node.args)
        memo[nid] = nid if args == node.args else g.apply(node.op, *args, params=node.params)
        stack.pop()
    return memo


def _candidates(g: Graph, roots: list[int], names: dict, header: list[str], deadline: float, notes: dict):
    """(root, name, expr, leaves) of every searchable region; notes the others in ``header`` (outputs)
    or above their statement (intermediates, which have no name a reader could find in a header)."""
    out, big = [], []
    sizes = region_sizes(g, roots, MAX_REGION_NODES)
    for root in roots:
        name = names.get(root, f"an intermediate (graph node {root})")
        if sizes[root] > MAX_REGION_NODES:
            if root in names:
                big.append(name)
            else:
                notes.setdefault(root, []).append(f"stabilize: not searched (region of more than {MAX_REGION_NODES} ops)")
            continue
        if cpu_clock() > deadline:
            raise StabilizeBudgetExceeded("budget spent while collecting regions")
        expr, leaves, size = _region_expr(g, root)
        if size and expr.has(sp.nan):  # np.where(c, np.nan, x): SymPy cannot order a product with NaN in it
            if root in names:
                header.append(f"stabilize: {name} not searched (it holds a NaN constant)")
            else:
                notes.setdefault(root, []).append("stabilize: not searched (the region holds a NaN constant)")
            continue
        if size:
            out.append((root, name, expr, leaves))
    if big:
        shown = ", ".join(big[:3]) + (f" and {len(big) - 3} more" if len(big) > 3 else "")
        header.append(f"stabilize: {shown} not searched (region{'s' if len(big) > 1 else ''} of more than "
                      f"{MAX_REGION_NODES} ops)")
    return out


def stabilize_kernel(g: Graph, kernel: KernelDef, budget_s: float | None = None, seeds=None) -> list[str]:
    """Rewrite ``kernel``'s elementwise regions into stable forms in place; return header lines.

    The whole kernel gets one budget of ``budget_s`` CPU seconds (default
    ``$SYMGRAD_STABILIZE_BUDGET``, else 1 s), sampling and references included: a cheap
    triage (:func:`symgrad.stabilize.triage.triage`, one small sample shared by every
    region) picks the regions that lose accuracy, and those are searched worst first (largest mean
    error, then largest max), on the triage's own points and references, and checked on one
    shared set of fresh points (:meth:`symgrad.stabilize.triage.TriageResult.check_samples`); each
    region gets at most the remaining budget over ``SHARE_OF_REGIONS`` (or over the losing regions
    left, if fewer).  With budget left, the other regions get the finer
    per-region probe
    (:func:`symgrad.stabilize.needs_search`) and a search if it finds error.  The CPU time
    spent is stored in ``kernel.stabilize_cpu_s`` (not in the header lines, which go into
    the generated source and stay deterministic; the first one summarises triage and
    search).  Raises nothing for a spent budget: unsearched regions keep their derived
    forms (which are what an unstabilised kernel computes).  Where a region's regime split gains
    in one dtype only (:mod:`symgrad.stabilize.dtype_regimes`), ``kernel.outputs`` hold the float64
    core's nodes and ``kernel.dtype_nodes`` the other dtype's (see ``KernelDef.outputs_for``).
    ``seeds``: optional ``seeds(expr, budget_s) -> [form]``, forms equal to a region (a derivative
    kernel's :class:`.primal_seeds.PrimalSeeds`): a region its own search leaves inaccurate is
    searched again, shortly, from them and the first search's form, in what is left of its share.
    """
    budget_s = DEFAULT_BUDGET_S if budget_s is None else budget_s
    from ..stabilize import stabilize
    from ..stabilize.triage import triage

    t0 = cpu_clock()
    deadline = t0 + budget_s * (1 - APPLY_SHARE)  # searches and checks end here; the rest builds
    header: list[str] = []
    mapping: dict[int, int] = {}  # node -> replacement; consumers are rebuilt on it
    direct: dict[int, int] = {}   # output node -> replacement that contains the node (outputs only)
    notes: dict[int, list[str]] = {}
    # dtype -> (mapping, direct) entries of that dtype's core where it computes another form than
    # float64's (a regime split kept in one dtype only); None: that dtype keeps the derived node
    per_dtype: dict[str, tuple[dict, dict]] = {}
    names = {o.node: o.name for o in kernel.outputs}
    roots = region_roots(g, [o.node for o in kernel.outputs])
    searched, flagged, stopped, order = 0, 0, None, []
    with hard_deadline(deadline), collector_paused():  # other code's garbage is not this budget's
        cands, tri = [], None
        try:
            cands = _candidates(g, roots, names, header, deadline, notes)
            tri = triage([c[2] for c in cands], [sorted(c[3], key=lambda s: s.name) for c in cands])
        except NotImplementedError as exc:  # an op the wide evaluator cannot handle: check one by one
            header.append(f"stabilize: shared triage unavailable ({exc}); regions checked one by one")
        except StabilizeBudgetExceeded:
            cands, stopped = [], 0
        order = list(range(len(cands)))
        cost = [_own_sample_cost(c[2], c[3]) for c in cands]
        if tri is not None:  # the shared check sample: references for the regions likely to use it
            first = (deadline - cpu_clock()) / max(1, min(sum(tri.needs_search), SHARE_OF_REGIONS))
            tri.check_rows = [n and c > OWN_SAMPLE_FRACTION * first for n, c in zip(tri.needs_search, cost)]
        if tri is not None:  # losing regions worst first, then the others get the finer probe
            flagged = sum(tri.needs_search)
            order.sort(key=lambda i: (not tri.needs_search[i], -tri.mean_bits[i], -tri.max_bits[i]))
        left = flagged if tri is not None else len(order)  # regions still to search (for the share)
        for rank, i in enumerate(order):
            root, name, expr, leaves = cands[i]
            variables = sorted(leaves, key=lambda s: s.name)
            if cpu_clock() >= deadline:
                stopped = rank
                break
            try:
                if (tri is None or not tri.needs_search[i]) and not _needs_search(expr, variables):
                    _use_canonical(g, root, name, expr, leaves, header, mapping)
                    continue
                t_share = cpu_clock()
                share = (deadline - t_share) / max(1, min(left, SHARE_OF_REGIONS))
                left -= 1
                shared = tri is not None and cost[i] > OWN_SAMPLE_FRACTION * share
                n_points = 256 if shared else _own_sample_size(expr, variables, OWN_SAMPLE_FRACTION * share)
                search = functools.partial(stabilize, expr, variables, n_points=n_points,
                                           widen_float32=root in names and _scalar_cores(kernel),
                                           samples=tri.samples(i) if shared else None,
                                           check=(lambda i=i: tri.check_samples(i)) if shared else None)
                res = search(budget_s=share - (cpu_clock() - t_share))
                if seeds is not None and share - (cpu_clock() - t_share) > MIN_SEEDED_S:
                    res = _seeded(res, search, seeds, expr, variables, t_share + share,
                                  tri.samples(i).get("float64") if shared else None, n_points)
            except NotImplementedError as exc:  # an op the error model cannot sample: keep the derived form
                if root in names:
                    header.append(f"stabilize: {name} kept as derived ({exc})")
                else:
                    notes.setdefault(root, []).append(f"stabilize: kept as derived ({exc})")
                continue
            except StabilizeBudgetExceeded:
                stopped = rank
                break
            searched += 1
            _apply(g, kernel, root, name, expr, leaves, res, names, header, mapping, direct, notes, per_dtype)
    spent = cpu_clock() - t0
    kernel.stabilize_cpu_s = spent
    # no times in the header: the generated source stays deterministic (the time is in the kernel)
    summary = (f"stabilize: program budget {budget_s:g} s CPU; {len(cands)} region(s) triaged, "
               f"{flagged} losing accuracy, {searched} searched")
    if stopped is not None:
        summary += f"; budget spent, {len(order) - stopped} region(s) not searched"
    header.insert(0, summary)
    derived = [o.node for o in kernel.outputs]
    for dt, (more_map, more_direct) in per_dtype.items():  # each dtype's core from the same derived nodes
        m = {k: v for k, v in {**mapping, **more_map}.items() if v is not None}
        d = {k: v for k, v in {**direct, **more_direct}.items() if v is not None}
        memo = rebuild(g, derived + list(d.values()), m)
        kernel.dtype_nodes[dt] = [memo[d.get(n, n)] for n in derived]
    if mapping or notes or direct:
        # nothing replaced (only notes): every node keeps its id, no need to walk the graph
        memo = (rebuild(g, [o.node for o in kernel.outputs] + list(notes) + list(direct.values()), mapping)
                if mapping or direct else {})
        for out in kernel.outputs:
            out.node = memo.get(direct.get(out.node, out.node), out.node)
        marked: dict[str, str] = {}  # node_refs of each distinct line: many intermediates share one note
        for nid, lines in notes.items():
            new = memo.get(nid, nid)
            lines = [marked[line] if line in marked else marked.setdefault(line, node_refs(line, memo))
                     for line in lines]
            kernel.comments[new] = "\n".join(filter(None, [kernel.comments.get(new), *lines]))
    for dt in list(kernel.dtype_nodes):  # the same nodes as float64's after all: one core
        if kernel.dtype_nodes[dt] == [o.node for o in kernel.outputs]:
            del kernel.dtype_nodes[dt]
    return header


def _seeded(res, search, seeds, expr, variables, end: float, sample, n_points: int):
    """``res``, or the result of a short search (``SEEDED_WORK`` units) from ``seeds``' forms and
    ``res``'s form when ``res`` leaves the region above ``ACCURATE_MEAN_BITS`` on the float64
    search sample (``sample``, else the region's own ``n_points``) and that result is better there by
    ``MIN_SEED_GAIN`` bits; ``end``: the CPU time the region's share ends at."""
    from ..stabilize.accuracy import make_sample

    try:
        sample = sample if sample is not None else make_sample(expr, variables, "float64", n=n_points)
        if not len(sample.X):
            return res
        before = _mean_bits(res.form("float64"), variables, sample)
        if before <= ACCURATE_MEAN_BITS or not np.isfinite(before):
            return res
        forms = seeds(expr, PRIMAL_SHARE * (end - cpu_clock()))
        # a seed no better than the form found leaves the short search nothing to build on (GELU': 0.3 s)
        if not any(_mean_bits(f, variables, sample) < before - MIN_SEED_GAIN for f in forms) \
                or end - cpu_clock() <= 0:
            return res
        again = search(budget_s=end - cpu_clock(), work=SEEDED_WORK, seeds=[strip_dd(res.expr), *forms])
        after = _mean_bits(again.form("float64"), variables, sample)
    except (StabilizeBudgetExceeded, NotImplementedError):  # the first search's result stands
        return res
    return again if after < before - MIN_SEED_GAIN else res


def _mean_bits(form, variables, sample) -> float:
    """Mean bits of error of ``form`` on ``sample`` (inf where it cannot be evaluated)."""
    from ..stabilize.accuracy import point_bits

    try:
        return float(point_bits(form, variables, sample).mean())
    except Exception:  # noqa: BLE001 - a form the evaluator cannot handle is no candidate
        return float("inf")


def _needs_search(expr, variables) -> bool:
    from ..stabilize import needs_search
    return needs_search(expr, variables, ACCURATE_MEAN_BITS)


COMMENT_EXPR_CHARS = 72  # longer expressions are shortened in code comments (the CLI and .rewrites() give them whole)


def _short(text: str) -> str:
    if len(text) <= COMMENT_EXPR_CHARS:
        return text
    half = (COMMENT_EXPR_CHARS - 5) // 2
    # cut between names, never inside one: a leaf ``t19`` must not become ``t1`` (see node_refs)
    head, tail = re.sub(r"[\w.]+$", "", text[:half]), re.sub(r"^[\w.]+", "", text[-half:])
    return f"{head} ... {tail}"


def _comment(r) -> str:
    """One rewrite as a code comment: ``name: before -> after  [bits]  (regime)``, with long
    expressions shortened to their ends (a regime split shows its conditions, not the branches;
    a dtype that computes one form instead, ``regime_not_in_<dtype>``, shows that form)."""
    whole = r.one_line()
    bits = whole[whole.rindex("  ["):] if "  [" in whole else ""
    after = "piecewise by regime" if r.regime else _short(str(r.after))
    before = "piecewise by regime" if isinstance(r.before, sp.Piecewise) else _short(str(r.before))
    return f"{r.name}: {before} -> {after}{bits}"


def node_refs(text: str, memo: dict | None = None) -> str:
    """``text`` with each region leaf ``t<node id>`` (see :func:`_region_expr`) replaced by
    :data:`symgrad.emit.names.NODE_REF` marks, which the printer turns into the names the
    code uses (graph ids mean nothing to a reader).  Input leaves keep their own names,
    which are never ``t<digits>`` (see :func:`symgrad.emit.names.check_names`)."""
    memo = memo or {}
    return re.sub(r"\bt(\d+)\b", lambda m: NODE_REF.format(memo.get(int(m.group(1)), int(m.group(1)))), text)


def _apply(g, kernel, root, name, expr, leaves, res, names, header, mapping, direct, notes, per_dtype) -> None:
    """Record the search result ``res`` of the region at ``root`` (rewrites, float32 widening).

    The float64 form goes into ``mapping`` (consumers rewired) or ``direct`` (an output that
    contains the derived node replaced); another dtype's own form (``res.dtype_exprs``) into
    ``per_dtype[dtype]``, the same way.  Notes on an output go in the header; notes on an
    intermediate go above its statement."""
    def say(text: str) -> None:
        if root in names:
            header.append(f"stabilize: {name}: {text}")
        else:
            notes.setdefault(root, []).append(f"stabilize: {text}")

    if res.budget_exhausted:
        say("search stopped at its work budget")
    if res.skipped:
        say(f"budget spent before the optional {', '.join(res.skipped)} step(s); the checked form is kept")
    if res.acceptance:
        say(res.acceptance)
    records = list(res.records)
    if res.widen_float32:  # asked for scalar-core outputs only (stabilize(widen_float32=...))
        kernel.widen_float32 = True
    if not records:
        return

    def place(form, into_map: dict, into_direct: dict) -> bool:
        """Build ``form`` for the region; False when it cannot replace the derived node."""
        new = from_sympy(g, form, leaves)
        if root in g.ancestors([new]):  # e.g. a regime that keeps the derived form on one branch
            if root not in names:  # consumers cannot be rewired to a form that contains the node itself
                return False
            into_direct[root] = new
        else:
            into_map[root] = new
        return True

    main = res.form("float64")
    if main != expr and not place(main, mapping, direct):
        say("rewrite keeps the derived form inside; not applied")
        return
    if main == expr:  # only float32 widening (or another dtype's form): the canonical form as for any region
        _use_canonical(g, root, name, expr, leaves, header, mapping)
    for dt in sorted({"float32", *res.dtype_exprs} - {"float64"}):
        form = res.form(dt)
        if form == main:
            continue
        more_map, more_direct = per_dtype.setdefault(dt, ({}, {}))
        if form == expr:  # this dtype computes the derived form: no replacement
            more_map[root] = more_direct[root] = None
        elif not place(form, more_map, more_direct):
            say(f"{dt} form keeps the derived form inside; {dt} computes the float64 form")
    kernel.rewrites += [(name, r) for r in records]
    lines = [f"rewrite {_comment(r)}" for r in records]
    notes.setdefault(mapping.get(root, direct.get(root, root)), []).extend(lines)  # printed at the statement


def _scalar_cores(kernel: KernelDef) -> bool:
    return all(a.shape == () for a in kernel.args) and all(o.shape == () for o in kernel.outputs)
