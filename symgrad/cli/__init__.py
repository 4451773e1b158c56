"""The ``symgrad`` command line (argparse; one module per subcommand).

``symgrad grad | hessian | jvp | vjp`` print derivatives as formulas,
``symgrad explain`` shows backpropagation step by step, ``symgrad check`` compares compiled derivatives with high-precision central
differences, ``symgrad plot`` draws the bits of error of the naive and the
stabilised derivative, and ``symgrad compile`` writes standalone modules.

Errors print one line and exit with status 2 (``--debug`` shows the traceback);
``symgrad check`` exits with status 1 when a comparison fails.
"""
from __future__ import annotations

import re
import sys
import traceback

from .common import CLIError, Parser, load_function

__all__ = ["main", "build_parser", "CLIError", "load_function"]

EPILOG = """\
Functions are named path/to/file.py:func or package.module:func.
Run `symgrad COMMAND --help` for the options of each command.

examples:
  symgrad grad examples/softplus.py:softplus
  symgrad check examples/softplus.py:lse2 --points 5
  symgrad plot examples/softplus.py:softplus --range -40:40 -o softplus.png
  symgrad compile examples/softplus.py:softplus lse2 --grad -o softplus_aot.py
  symgrad explain examples/softplus.py:lse2 --at x=1,y=2
"""


def build_parser() -> Parser:
    from . import check, compile as compile_cmd, derive, explain, plot
    from .._version import __version__

    parser = Parser(prog="symgrad", epilog=EPILOG,
                    description="Symbolic derivatives of numpy functions: print them as formulas, check "
                                "them, plot their accuracy, and compile them with Numba.")
    parser.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    parser.add_argument("--version", action="version", version=f"symgrad {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    derive.register(sub, Parser)
    check.register(sub)
    plot.register(sub)
    compile_cmd.register(sub)
    explain.register(sub)
    for name, p in sub.choices.items():  # --debug is accepted after the command too
        p.add_argument("--debug", action="store_true", default=argparse_suppress(), help="show the full traceback on errors")
    return parser


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("symgrad: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one clear line; the traceback on request
        if getattr(args, "debug", False):
            traceback.print_exc()
        else:
            text = str(exc).strip()
            lines = text.splitlines()
            msg = lines[0] if lines else ""
            if len(lines) > 1 and re.match(r"^\s+in \S+ at \S+:\d+$", lines[1]):  # symgrad's user location
                msg += f" ({lines[1].strip()})"
            prefix = "" if isinstance(exc, CLIError) else f"{type(exc).__name__}: "
            print(f"symgrad: error: {prefix}{msg}".rstrip(": "), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
