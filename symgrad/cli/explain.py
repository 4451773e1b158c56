"""``symgrad explain``: backpropagation step by step, with numbers (for teaching)."""
from __future__ import annotations

import ast
import shutil
import subprocess

import numpy as np

from .common import CLIError, add_target, load_function, positional_count


def _parse_point(text: str | None, names: list[str], default: float = 1.0) -> list:
    values = dict.fromkeys(names, default)
    for part in filter(None, _split_top(text or "")):
        key, _, val = part.partition("=")
        key = key.strip()
        if key not in values:
            raise CLIError(f"--at {key}: the function has arguments {', '.join(names)}")
        try:
            values[key] = np.asarray(ast.literal_eval(val.strip()), dtype=float)
        except (ValueError, SyntaxError):
            raise CLIError(f"--at expects name=value pairs like x=0.5 or v=[1,2]; got {part!r}") from None
    return [values[n] for n in names]


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets: ``x=1,v=[1,2]`` -> ['x=1', 'v=[1,2]']."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[(" and 1 or (ch in "])" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + ([cur] if cur else [])


def run(args) -> int:
    import inspect

    import symgrad

    fn = load_function(args.target)
    names = [p.name for p in inspect.signature(fn).parameters.values()][:positional_count(fn)]
    point = _parse_point(args.at, names)
    tangents = None
    if args.tangent:
        if args.mode != "forward":
            raise CLIError("--tangent sets the seed of forward mode; add --mode forward")
        tangents = _parse_point(args.tangent, names, default=0.0)
    e = symgrad.explain(fn, *point, signature=args.signature, mode=args.mode, tangents=tangents)
    print(e)
    if args.dot:
        _write(args.dot, e.to_dot())
        print(f"\nwrote the graph in DOT to {args.dot}")
    if args.png:
        _render_png(e.to_dot(), args.png)
        print(f"\nwrote the graph drawing to {args.png}")
    return 0


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror}") from None


def _render_png(dot_text: str, path: str) -> None:
    """Draw with Graphviz's ``dot`` program (a clear message when it is not installed)."""
    exe = shutil.which("dot")
    if exe is None:
        raise CLIError("--png needs Graphviz's `dot` program, which is not installed "
                       "(apt install graphviz, brew install graphviz or conda install graphviz); "
                       "--dot FILE writes the graph as text without it")
    r = subprocess.run([exe, "-Tpng", "-o", path], input=dot_text, text=True, capture_output=True, timeout=60)
    if r.returncode != 0:
        raise CLIError(f"Graphviz's dot failed to draw {path}: {r.stderr.strip().splitlines()[0] if r.stderr else r.returncode}")


def register(sub) -> None:
    p = sub.add_parser("explain", help="show the forward and backward pass step by step, with numbers",
                       description="Evaluate FUNC at a point and print every node of its graph with its value "
                                   "(forward pass). Then, in reverse mode, every adjoint in reverse topological "
                                   "order: the upstream gradient, the local partial derivative, how the result gets "
                                   "its shape (sums over broadcast axes, G B^T and A^T G for matrix products) and "
                                   "where paths merge. In forward mode, every tangent in topological order.",
                       epilog="examples:\n  symgrad explain examples/softplus.py:lse2 --at x=1,y=2\n"
                              "  symgrad explain FILE.py:loss --at x=2,y=3,z=6 --mode forward --tangent x=1\n"
                              "  symgrad explain examples/main_job.py:rosenbrock --at 'x=[1,2,3]' --signature '(n)->()'"
                              " --dot graph.dot --png graph.png")
    add_target(p)
    p.add_argument("--at", help="point, e.g. x=1,y=2 or v=[1,2] (default: 1 for every argument)")
    p.add_argument("--signature", help='gufunc signature for array arguments, e.g. "(n)->()"')
    p.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                   help="reverse: adjoints (backpropagation, the default); forward: tangents")
    p.add_argument("--tangent", help="forward mode's seed, e.g. x=1,y=0 (default: 1 for the first argument, "
                                     "0 for the others)")
    p.add_argument("--dot", metavar="OUT.dot", help="also write the graph with values and derivatives as Graphviz DOT")
    p.add_argument("--png", metavar="OUT.png", help="also draw the graph to a PNG (needs Graphviz's dot program)")
    p.set_defaults(func=run)
