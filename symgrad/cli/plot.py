"""``symgrad plot``: f, f' and the accuracy of the naive and the stabilised derivative.

The top panel draws f and f' (the stabilised compiled derivative) over the
range; the bottom panel draws the bits of error (Herbie's metric, log2 of the
ulp distance to the correctly rounded mpmath value) of the derivative compiled
as derived (``stabilize=False``) and as stabilised, so a reader sees where the
naive form breaks down.
"""
from __future__ import annotations

import numpy as np

from .common import CLIError, Progress, add_target, load_function, parse_range, positional_count


def _parse_at(text: str | None) -> dict[str, float]:
    out = {}
    for part in filter(None, (text or "").split(",")):
        key, _, val = part.partition("=")
        try:
            out[key.strip()] = float(val)
        except ValueError:
            raise CLIError(f"--at expects name=value pairs like y=0.5, got {part!r}") from None
    return out


def run(args) -> int:
    import symgrad
    from ..stabilize.accuracy import ulp_bits
    from ..stabilize.reference import compile_mpmath, reference_values

    fn = load_function(args.target)
    lo, hi = parse_range(args.range)
    if args.points < 2:
        raise CLIError(f"--points must be at least 2, got {args.points}")
    n = positional_count(fn)
    at = _parse_at(args.at)
    with Progress() as progress:
        with progress.stage("trace"):
            traced = symgrad.trace(fn, *([0.0] * n))
        names = traced.program.arg_names
        free = [k for k, a in enumerate(names) if a not in at]
        unknown = [a for a in at if a not in names]
        if unknown:
            raise CLIError(f"--at {','.join(unknown)}: {traced.program.name} has arguments {', '.join(names)}")
        if args.wrt:
            if args.wrt not in names:
                raise CLIError(f"--wrt {args.wrt}: {traced.program.name} has arguments {', '.join(names)}")
            k = names.index(args.wrt)
        elif len(free) == 1:
            k = free[0]
        else:
            raise CLIError(f"{traced.program.name} has {len(names)} arguments; choose the plotted one with --wrt "
                           f"and fix the others with --at (e.g. --at {names[-1]}=0)")
        others = [a for j, a in enumerate(names) if j != k and a not in at]
        if others:
            raise CLIError(f"fix the other arguments with --at, e.g. --at {others[0]}=0")
        dt = np.dtype(args.dtype)
        xs = np.linspace(lo, hi, args.points).astype(dt)
        call = [np.full_like(xs, at[a]) if j != k else xs for j, a in enumerate(names)]
        with progress.stage("compile", "f, f' naive and stabilised"):
            f = symgrad.jit(fn)(*call)
            naive = symgrad.grad(fn, argnums=k, stabilize=False)(*call)
            stable = symgrad.grad(fn, argnums=k)(*call)
        with progress.stage("check", "mpmath references"):
            dexpr = traced.grad_expr(k)[0]
            syms = [traced.symbols[j][()] for j in range(len(names))]
            X = np.stack([c.astype(np.float64) for c in call], axis=1)
            ref = reference_values(compile_mpmath(dexpr, syms), X, dt)
        bits_naive, bits_stable = ulp_bits(naive, ref), ulp_bits(stable, ref)
        with progress.stage("emit", args.output):
            _draw(args, traced, names[k], xs, f, stable, bits_naive, bits_stable, dt)
    print(f"wrote {args.output}: {traced.program.name} on [{lo:g}, {hi:g}] ({args.points} points, {dt.name}); "
          f"mean bits of error of d/d{names[k]}: naive {bits_naive.mean():.1f}, stabilised {bits_stable.mean():.1f}; "
          f"max: naive {bits_naive.max():.0f}, stabilised {bits_stable.max():.0f}")
    return 0


def _draw(args, traced, wrt, xs, f, df, bits_naive, bits_stable, dt) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    name = traced.program.name
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True,
                                      gridspec_kw={"height_ratios": [1, 1]}, constrained_layout=True)
    top.plot(xs, f, label=f"{name}", color="C0")
    top.set_ylabel(name, color="C0")
    right = top.twinx()
    right.plot(xs, df, label=f"∂{name}/∂{wrt} (stabilised)", color="C2")
    right.set_ylabel(f"∂{name}/∂{wrt}", color="C2")
    handles = top.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    top.legend(handles, [h.get_label() for h in handles], loc="best")
    top.grid(alpha=0.3)
    top.set_title(f"{name}({', '.join(traced.program.arg_names)}) = ${_latex(traced.expr)}$", fontsize=11)
    width = 64 if dt == np.float64 else 32
    bottom.plot(xs, bits_naive, label="naive derivative (stabilize=False)", color="C3", lw=1.5)
    bottom.plot(xs, bits_stable, label="stabilised derivative", color="C2", lw=1.5, ls="--")
    bottom.set_ylim(-1, width + 2)
    bottom.set_ylabel(f"bits of error ({dt.name})")
    bottom.set_xlabel(wrt)
    bottom.legend(loc="best")
    bottom.grid(alpha=0.3)
    fig.savefig(args.output, dpi=args.dpi)
    plt.close(fig)


def _latex(expr) -> str:
    import sympy as sp

    text = sp.latex(expr)
    return text if len(text) < 120 else sp.latex(sp.Symbol("\\ldots"))


def register(sub) -> None:
    p = sub.add_parser(
        "plot", help="plot f, f' and the bits of error of the naive and stabilised derivative",
        description=__doc__.split("\n\n", 1)[1] + "\nexamples:\n"
        "  symgrad plot examples/softplus.py:softplus --range -40:40 -o softplus.png\n"
        "  symgrad plot examples/softplus.py:lse2 --wrt x --at y=0 --range=-800:800 -o lse2.png")
    add_target(p)
    p.add_argument("--range", required=True, metavar="A:B", help="x range, e.g. -40:40")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png", help="image file to write")
    p.add_argument("--wrt", metavar="X", help="the plotted argument (needed when the function has several)")
    p.add_argument("--at", metavar="Y=V,...", help="values of the other arguments, e.g. y=0")
    p.add_argument("--points", type=int, default=400, metavar="N", help="number of points (default 400)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="floating-point format")
    p.add_argument("--dpi", type=int, default=120, help="image resolution (default 120)")
    p.set_defaults(func=run)
