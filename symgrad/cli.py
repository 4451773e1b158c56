"""The ``symgrad`` command line (argparse).

``symgrad grad FILE.py:FUNC`` prints the function and its partial derivatives
as formulas; ``--show-code`` adds the generated Numba source.  Errors print one
line and exit with status 2 (``--debug`` shows the traceback).
"""
from __future__ import annotations

import argparse
import importlib
import runpy
import sys
import traceback

import numpy as np
import sympy as sp

FORMATS = ("pretty", "unicode", "latex", "python", "text")


class CLIError(Exception):
    """A user error the CLI reports in one line (exit status 2)."""


def load_function(target: str):
    """Resolve ``path/to/file.py:func`` or ``package.module:func``."""
    if ":" not in target:
        raise CLIError(f"expected FILE.py:FUNC or module:FUNC, got {target!r}")
    where, name = target.rsplit(":", 1)
    if where.endswith(".py"):
        try:
            namespace = runpy.run_path(where)
        except FileNotFoundError:
            raise CLIError(f"no such file: {where}") from None
        except SyntaxError as exc:
            raise CLIError(f"syntax error in {where}:{exc.lineno}: {exc.msg}") from None
    else:
        try:
            namespace = vars(importlib.import_module(where))
        except ImportError as exc:
            raise CLIError(f"cannot import module {where!r}: {exc}") from None
    if name not in namespace or not callable(namespace[name]):
        raise CLIError(f"{where} defines no function {name!r}")
    return namespace[name]


def _parse_dims(text: str | None) -> dict[str, int]:
    dims: dict[str, int] = {}
    for part in filter(None, (text or "").split(",")):
        key, _, val = part.partition("=")
        if not val.strip().isdigit():
            raise CLIError(f"--dims expects name=size pairs like n=3, got {part!r}")
        dims[key.strip()] = int(val)
    return dims


def _example_args(fn, signature: str | None, dims: dict[str, int]):
    import inspect

    from .trace.signature import parse_signature

    nparams = len([p for p in inspect.signature(fn).parameters.values()
                   if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    sig = parse_signature(signature, fn.__name__)
    if sig is None:
        return [0.0] * nparams
    return [np.zeros(tuple(dims.get(d, 3) for d in core)) for core in sig.inputs]


def render(expr, fmt: str) -> str:
    if fmt == "latex":
        return sp.latex(expr)
    if fmt == "python":
        return sp.pycode(expr) if not isinstance(expr, sp.NDimArray) else str(expr.tolist())
    if fmt == "text":
        return str(expr)
    return sp.pretty(expr, use_unicode=(fmt == "unicode"))


def cmd_grad(args) -> int:
    from .api.traced import trace

    fn = load_function(args.target)
    traced = trace(fn, *_example_args(fn, args.signature, _parse_dims(args.dims)), signature=args.signature)
    names = traced.program.arg_names
    wrt = names if not args.wrt else [w.strip() for w in args.wrt.split(",")]
    unknown = [w for w in wrt if w not in names]
    if unknown:
        raise CLIError(f"--wrt {','.join(unknown)}: {fn.__name__} has arguments {', '.join(names)}")
    argnums = tuple(names.index(w) for w in wrt)
    print(f"{traced.program.name}({', '.join(names)}) =")
    print(render(traced.expr, args.format))
    grads = traced.grad_expr(argnums, simplify=not args.no_simplify)
    for name, expr in zip(wrt, grads):
        print(f"\nd {traced.program.name} / d {name} =")
        print(render(expr, args.format))
    if args.show_code:
        print("\n" + traced.source("grad", argnums))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="symgrad", description="Symbolic derivatives of numpy functions, "
                                     "compiled with Numba.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grad", help="print a function and its partial derivatives as formulas",
                       description="Trace FUNC, differentiate it on its expression graph, and print the "
                                   "function and each partial derivative as a closed form.")
    g.add_argument("target", metavar="FILE.py:FUNC", help="function to differentiate (or package.module:FUNC)")
    g.add_argument("--wrt", help="comma-separated argument names (default: all)")
    g.add_argument("--signature", help='gufunc signature, e.g. "(n)->()" (default: scalar arguments)')
    g.add_argument("--dims", help="core sizes for display, e.g. n=3 (default 3)")
    g.add_argument("--format", choices=FORMATS, default="pretty", help="formula output format")
    g.add_argument("--no-simplify", action="store_true", help="print derivatives as derived, unsimplified")
    g.add_argument("--show-code", action="store_true", help="also print the generated Numba module")
    g.set_defaults(func=cmd_grad)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CLIError, Exception) as exc:  # one clear line; the traceback on request
        if args.debug:
            traceback.print_exc()
        else:
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            print(f"symgrad: error: {type(exc).__name__}: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
