"""``symgrad check``: compiled derivatives against high-precision references.

At random points the compiled gradient (``symgrad.grad``, or ``symgrad.jacobian``
for array outputs) is compared, by relative error, with SymPy's derivative of the
traced expression evaluated in mpmath at 50 significant digits (central
differences, ``mpmath.diff``, where SymPy cannot evaluate one), and the JVP and
VJP kernels are checked against each other through ``<w, J v> = <J^T w, v>``
for random ``v`` and ``w``.  Any failure makes the exit status 1.
"""
from __future__ import annotations

import numpy as np

from .common import CLIError, Progress, add_shape_options, add_target, core_shapes, load_function, parse_dims, parse_range

DPS = 50


def _flat_symbols(traced):
    """(list of scalar SymPy symbols over all input elements, substitution Indexed -> Symbol)."""
    import sympy as sp

    syms, subs = [], {}
    for name, s in zip(traced.program.arg_names, traced.symbols):
        arr = np.asarray(s, dtype=object)
        for idx in np.ndindex(*arr.shape):
            e = arr[idx]
            if not isinstance(e, sp.Symbol):
                new = sp.Symbol(f"{name}_{'_'.join(map(str, idx))}", real=True)
                subs[e] = new
                e = new
            syms.append(e)
    return syms, subs


def _reference_jacobian(out_exprs, syms, point):
    """d out_i / d x_j at ``point`` (float64 array) as floats, and whether each entry is exact.

    Each entry is SymPy's derivative of the traced expression (``sympy.diff``, independent of
    symgrad's derivative graph) evaluated by mpmath at 50 digits; where that cannot be evaluated
    (a derivative SymPy leaves unevaluated), mpmath central differences of the expression
    (``mpmath.diff``), whose absolute error is about 1e-25 of the function's scale, so such an
    entry is compared with the absolute tolerance too.
    """
    import mpmath
    import sympy as sp

    from ..stabilize.reference import compile_mpmath

    jac = np.empty((len(out_exprs), len(syms)))
    exact = np.zeros(jac.shape, dtype=bool)
    with mpmath.workdps(DPS):
        x0 = [mpmath.mpf(float(v)) for v in point]
        for i, e in enumerate(out_exprs):
            f = None
            for j in range(len(syms)):
                try:
                    d = compile_mpmath(sp.diff(e, syms[j]), syms)(x0)
                    exact[i, j] = True
                except Exception:  # noqa: BLE001 - any failure of the symbolic route: fall back
                    f = f or compile_mpmath(e, syms)

                    def fj(t, j=j):
                        args = list(x0)
                        args[j] = t
                        return f(args)
                    d = mpmath.diff(fj, x0[j])
                d = d.real if isinstance(d, mpmath.mpc) else d
                jac[i, j] = float(d) if mpmath.isfinite(d) else np.nan
    return jac, exact


def run(args) -> int:
    import symgrad

    fn = load_function(args.target)
    lo, hi = parse_range(args.range)
    if args.points < 1:
        raise CLIError(f"--points must be at least 1, got {args.points}")
    dims = parse_dims(args.dims)
    sig, shapes = core_shapes(fn, args.signature, dims)
    rng = np.random.default_rng(args.seed)
    with Progress() as progress:
        with progress.stage("trace"):
            traced = symgrad.trace(fn, *[np.zeros(s) if s else 0.0 for s in shapes], signature=args.signature)
        p, g = traced.program, traced.program.graph
        if len(p.outputs) != 1:
            raise CLIError(f"check handles functions with one output; {p.name} returns {len(p.outputs)}")
        out_shape = g.shape(p.outputs[0])
        syms, subs = _flat_symbols(traced)
        expr = traced.expr
        out_exprs = [expr.xreplace(subs)] if out_shape == () else [
            e.xreplace(subs) for e in np.asarray(expr.tolist(), dtype=object).reshape(-1)]
        nargs = len(shapes)
        stab = not args.no_stabilize
        argnums = tuple(range(nargs))
        with progress.stage("compile", "gradient" if out_shape == () else "jacobian"):
            if out_shape == ():
                deriv = symgrad.grad(fn, argnums=argnums, signature=args.signature, stabilize=stab)
            else:
                deriv = symgrad.jacobian(fn, argnums=argnums, signature=args.signature, stabilize=stab)
        rows, failures = [], 0
        sizes = [int(np.prod(s)) for s in shapes]
        for k in range(args.points):
            point = [rng.uniform(lo, hi, size=s) if s else float(rng.uniform(lo, hi)) for s in shapes]
            flat = np.concatenate([np.ravel(v) for v in point]) if point else np.zeros(0)
            with progress.stage("compile" if k == 0 else "check", f"point {k + 1}"):
                comp = deriv(*point)
            with progress.stage("check", f"mpmath differences at point {k + 1}"):
                ref, exact = _reference_jacobian(out_exprs, syms, flat)
            start = 0
            for a, (name, size, shape) in enumerate(zip(p.arg_names, sizes, shapes)):
                c = np.asarray(comp[a], dtype=float).reshape(len(out_exprs), size)
                r = ref[:, start:start + size]
                ok, err = _compare(c, r, args.rtol, args.atol, exact[:, start:start + size])
                start += size
                failures += not ok
                rows.append((str(k + 1), _fmt_point(point), f"d{p.name}/d{name}", _fmt_vals(c), _fmt_vals(r),
                             f"{err:.1e}", ok))
        with progress.stage("check", "jvp/vjp identity"):
            for k in range(args.points):
                point = [rng.uniform(lo, hi, size=s) if s else float(rng.uniform(lo, hi)) for s in shapes]
                v = [rng.standard_normal(size=s) if s else float(rng.standard_normal()) for s in shapes]
                w = rng.standard_normal(size=out_shape) if out_shape else float(rng.standard_normal())
                _, jv = symgrad.jvp(fn, point, v, signature=args.signature, stabilize=stab)
                _, vjp_fn = symgrad.vjp(fn, *point, signature=args.signature, stabilize=stab)
                jtw = vjp_fn(w)
                lhs = float(np.sum(np.asarray(w) * np.asarray(jv)))
                rhs = float(sum(np.sum(np.asarray(a) * np.asarray(b)) for a, b in zip(jtw, v)))
                scale = float(np.sum(np.abs(np.asarray(w) * np.asarray(jv)))) + float(
                    sum(np.sum(np.abs(np.asarray(a) * np.asarray(b))) for a, b in zip(jtw, v))) + 1e-300
                err = abs(lhs - rhs) / scale
                ok = bool(np.isfinite(lhs) and np.isfinite(rhs) and err <= 1e-12)
                failures += not ok
                rows.append((str(k + 1), _fmt_point(point), "<w,Jv> vs <Jᵀw,v>", f"{lhs:.10g}", f"{rhs:.10g}",
                             f"{err:.1e}", ok))
    _print_table(f"symgrad check {p.name}: {args.points} random point(s) in [{lo:g}, {hi:g}], "
                 f"references by mpmath central differences at {DPS} digits", rows)
    total = len(rows)
    print(f"{total - failures}/{total} checks passed" + ("" if not failures else f"; {failures} FAILED"))
    return 1 if failures else 0


def _compare(c, r, rtol, atol, exact):
    """(ok, largest relative error) of compiled ``c`` against reference ``r``.

    The error is relative, ``|c - r| / |r|``, so a wrong derivative of size 1e-79 fails like one of
    size 1; where the reference is exactly 0 it is the absolute error.  ``atol`` forgives only
    entries whose reference is 0 or came from finite differences (``exact`` False).
    """
    finite = np.isfinite(r)
    if not finite.all():  # the reference itself is not finite: the compiled value must not be finite either
        same = ~np.isfinite(c) == ~finite
        if not same.all():
            return False, float("inf")
    c, r, exact = c[finite], r[finite], np.broadcast_to(exact, finite.shape)[finite]
    if not np.all(np.isfinite(c)):
        return False, float("inf")
    diff = np.abs(c - r)
    scale = np.abs(r)
    rel = np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), diff)
    forgiven = (~exact | (scale == 0)) & (diff <= atol)
    ok = bool(np.all((rel <= rtol) | forgiven))
    return ok, float(np.max(rel)) if rel.size else 0.0


def _fmt_vals(a) -> str:
    a = np.ravel(a)
    if a.size <= 3:
        return ", ".join(f"{v:.10g}" for v in a)
    return ", ".join(f"{v:.4g}" for v in a[:3]) + f", ... ({a.size})"


def _fmt_point(point) -> str:
    parts = []
    for v in point:
        a = np.ravel(v)
        parts.append(f"{a[0]:.4g}" if np.ndim(v) == 0 else "[" + ", ".join(f"{x:.3g}" for x in a[:3]) +
                     (", ...]" if a.size > 3 else "]"))
    return ", ".join(parts)


def _print_table(title, rows) -> None:
    headers = ("#", "point", "quantity", "compiled", "reference", "rel. error", "ok")
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        Console = None
    if Console is not None:
        table = Table(title=title, title_justify="left")
        for h in headers:
            table.add_column(h, justify="right" if h in ("#", "rel. error") else "left")
        for row in rows:
            table.add_row(*row[:-1], "[green]ok[/green]" if row[-1] else "[bold red]FAIL[/bold red]")
        Console(width=max(120, Console().width)).print(table)
        return
    print(title)
    cells = [headers] + [row[:-1] + ("ok" if row[-1] else "FAIL",) for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def register(sub) -> None:
    p = sub.add_parser(
        "check", help="compare compiled derivatives with high-precision central differences",
        description=__doc__.split("\n\n", 1)[1] + "\nexamples:\n  symgrad check examples/softplus.py:lse2\n"
                    "  symgrad check f.py:norm --signature '(n)->()' --dims n=4 --points 3")
    add_target(p)
    add_shape_options(p)
    p.add_argument("--points", type=int, default=5, metavar="N", help="number of random points (default 5)")
    p.add_argument("--range", default="-3:3", metavar="A:B", help="sample each input uniformly in [A, B] (default -3:3)")
    p.add_argument("--no-stabilize", action="store_true", help="check the derivatives as derived, not stabilised")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--rtol", type=float, default=1e-7, help="relative tolerance (default 1e-7)")
    p.add_argument("--atol", type=float, default=1e-10, help="absolute tolerance, only where the reference is 0 or a finite difference (default 1e-10)")
    p.set_defaults(func=run)
