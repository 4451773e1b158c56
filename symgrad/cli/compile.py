"""``symgrad compile``: derivative kernels written to a standalone module.

The module imports numpy and numba only (no SymPy, no symgrad).  It holds, for
each function, ``<func>_jit`` (alias ``<func>``) and the requested derivatives
``<func>_grad``, ``<func>_vjp``, ``<func>_jvp``, ``<func>_hessian``; each entry
point broadcasts batch dimensions like the JIT path.  Its docstring lists every
kernel's arguments, outputs and formula.  Without a derivative flag, --grad is
implied.

--shared compiles the kernels ahead of time with numba.pycc into an extension
module (OUT_kernels.<ext>) beside OUT.py; then OUT.py imports with numpy alone.
Limits: fixed signatures (the chosen dtypes and the traced core shapes; batch
dimensions stay free), no parallel variant, and the extension only runs on the
platform, Python and NumPy ABI it was built with.
"""
from __future__ import annotations

from .common import CLIError, Progress, add_shape_options, example_args, load_function, parse_dims


def _resolve_targets(targets: list[str]) -> list:
    """``file.py:f g h`` or ``file.py:f other.py:g``: bare names reuse the previous location."""
    fns, where = [], None
    for t in targets:
        if ":" in t:
            where = t.rsplit(":", 1)[0]
            fns.append(load_function(t))
        elif where is None:
            raise CLIError(f"expected FILE.py:FUNC or package.module:FUNC first, got {t!r}")
        else:
            fns.append(load_function(f"{where}:{t}"))
    return fns


def run(args) -> int:
    from .. import aot

    if not args.output.endswith(".py"):
        raise CLIError(f"-o {args.output}: the output must be a .py file")
    dtypes = tuple(d.strip() for d in args.dtype.split(",") if d.strip())
    kinds = tuple(k for k in aot.DERIVATIVES if getattr(args, k)) or ("grad",)
    if args.shared:
        ok, why = aot.shared_available()
        if not ok:
            raise CLIError(f"--shared is unavailable: {why}")
    dims = parse_dims(args.dims)
    fns = _resolve_targets(args.target)
    try:
        with Progress() as progress:
            targets = [aot.Target(fn, tuple(example_args(fn, args.signature, dims, default=None)), args.signature)
                       for fn in fns]
            aot._check_dtypes(dtypes)
            built = aot.build(targets, kinds, stabilize=not args.no_stabilize, budget=args.budget, progress=progress)
            if args.shared:
                paths = aot.build_shared(built, args.output, dtypes, progress=progress)
            else:
                with progress.stage("emit", args.output):
                    paths = [aot.write(args.output, aot.module_source(built, dtypes))]
    except aot.AOTError as exc:
        raise CLIError(str(exc)) from exc
    names = ", ".join(k.name for k in built.kernels)
    print(f"wrote {', '.join(map(str, paths))}: {names} ({', '.join(dtypes)})")
    rewrites = [line for line in built.header if ": rewrite " in line]
    for line in rewrites:
        print(f"  {line}")
    if len(built.header) > len(rewrites):
        print(f"  ({len(built.header) - len(rewrites)} stabiliser note(s) in the module header)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("compile", help="write derivative kernels to a standalone module (numpy + numba)",
                       description=__doc__.split("\n\n", 1)[1] + "\nexamples:\n"
                       "  symgrad compile examples/softplus.py:softplus lse2 --grad --vjp -o softplus_aot.py\n"
                       "  symgrad compile f.py:loss --signature '(n)->()' --dims n=8 --hessian -o loss_aot.py\n"
                       "  symgrad compile examples/softplus.py:softplus --dtype float64 --shared -o sp.py")
    p.add_argument("target", nargs="+", metavar="FILE.py:FUNC",
                   help="functions to compile; later bare names (FUNC) are looked up in the previous file")
    p.add_argument("-o", "--output", required=True, metavar="OUT.py", help="module to write")
    p.add_argument("--grad", action="store_true", help="gradient kernels <func>_grad (default when no flag)")
    p.add_argument("--vjp", action="store_true", help="vector-Jacobian products <func>_vjp(args..., out_bar)")
    p.add_argument("--jvp", action="store_true", help="Jacobian-vector products <func>_jvp(args..., tangents...)")
    p.add_argument("--hessian", action="store_true", help="Hessian blocks <func>_hessian")
    p.add_argument("--dtype", default="float64,float32", metavar="DT,...",
                   help="kernel dtypes (default float64,float32); other inputs are converted")
    add_shape_options(p)
    p.add_argument("--no-stabilize", action="store_true", help="skip the numerical stabiliser")
    p.add_argument("--budget", type=float, default=1.0, metavar="SECONDS",
                   help="the stabiliser's CPU-time budget per compiled function (default 1)")
    p.add_argument("--shared", action="store_true",
                   help="compile ahead of time (numba.pycc) into an extension; OUT.py then needs numpy only")
    p.set_defaults(func=run)
