"""``symgrad explain``: backpropagation step by step, with numbers (for teaching)."""
from __future__ import annotations

import ast

import numpy as np

from .common import CLIError, add_target, load_function, positional_count


def _parse_point(text: str | None, names: list[str]) -> list:
    values = dict.fromkeys(names, 1.0)
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
    print(symgrad.explain(fn, *_parse_point(args.at, names), signature=args.signature))
    return 0


def register(sub) -> None:
    p = sub.add_parser("explain", help="show the forward and backward pass step by step, with numbers",
                       description="Evaluate FUNC at a point and print every node of its graph (forward pass), "
                                   "then every adjoint in reverse topological order (backward pass), as a small "
                                   "autodiff engine computes them.",
                       epilog="examples:\n  symgrad explain examples/softplus.py:lse2 --at x=1,y=2\n"
                              "  symgrad explain examples/main_job.py:rosenbrock --at 'x=[1,2,3]' --signature '(n)->()'")
    add_target(p)
    p.add_argument("--at", help="point, e.g. x=1,y=2 or v=[1,2] (default: 1 for every argument)")
    p.add_argument("--signature", help='gufunc signature for array arguments, e.g. "(n)->()"')
    p.set_defaults(func=run)
