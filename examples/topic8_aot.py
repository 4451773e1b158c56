"""Topic 8: ahead-of-time compilation with `symgrad compile`.

`symgrad compile FILE.py:FUNC ... --grad -o OUT.py` traces, differentiates and stabilises the
functions once and writes a module that imports only numpy and numba: no SymPy, no symgrad.
This script compiles the two functions below into a temporary folder, imports the module in a
fresh Python process where importing sympy or symgrad is made to fail, evaluates the gradients
on a broadcast grid there, and compares them with symgrad.grad (the JIT path) here.
Run: python examples/topic8_aot.py
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np


def gaussian_nll(x, mu, log_sigma):
    """Negative log-likelihood of x under N(mu, exp(log_sigma)^2)."""
    return 0.5 * ((x - mu) * np.exp(-log_sigma)) ** 2 + log_sigma + 0.5 * np.log(2 * np.pi)


def softplus(x):
    return np.log(1 + np.exp(x))


X = np.linspace(-3.0, 3.0, 7)[:, None]            # shape (7, 1)
MU = np.array([-1.0, 0.0, 2.0])                    # shape (3,): broadcasts to (7, 3)
LOG_SIGMA = 0.25
SP_X = np.array([-800.0, -20.0, 0.0, 1.5, 100.0, 800.0])


def main():
    import symgrad as sg

    folder = Path(tempfile.mkdtemp(prefix="symgrad-aot-"))
    out = folder / "nll_aot.py"
    # The `symgrad` console command, run with this interpreter (same as: symgrad compile ...).
    cmd = [sys.executable, "-c", "import sys; from symgrad.cli import main; sys.exit(main())",
           "compile", f"{Path(__file__).resolve()}:gaussian_nll", "softplus", "--grad", "-o", str(out)]
    print("$ symgrad compile examples/topic8_aot.py:gaussian_nll softplus --grad -o nll_aot.py")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(textwrap.indent(r.stdout.strip(), "  "))
    if r.returncode != 0:
        sys.exit(f"symgrad compile failed:\n{r.stderr}")
    print(f"module size (lines): {len(out.read_text().splitlines())}")

    # A fresh interpreter without symgrad or sympy (PYTHONPATH dropped, imports blocked).
    child = textwrap.dedent(f"""
        import sys, json
        sys.modules["sympy"] = None; sys.modules["symgrad"] = None
        sys.path.insert(0, {str(folder)!r})
        import numpy as np
        import nll_aot
        X = np.linspace(-3.0, 3.0, 7)[:, None]; MU = np.array([-1.0, 0.0, 2.0])
        g = nll_aot.gaussian_nll_grad(X, MU, {LOG_SIGMA!r})
        print(json.dumps({{"grad": [np.broadcast_to(a, (7, 3)).tolist() for a in g],
                          "value": nll_aot.gaussian_nll(X, MU, {LOG_SIGMA!r}).tolist(),
                          "softplus_grad": nll_aot.softplus_grad(np.array({SP_X.tolist()!r})).tolist(),
                          "loaded": sorted(m for m in ("sympy", "symgrad") if sys.modules.get(m) is not None)}}))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300, env=env, cwd=folder)
    if r.returncode != 0:
        sys.exit(f"importing the compiled module failed:\n{r.stderr}")
    aot = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"fresh process loaded sympy/symgrad: {aot['loaded']}")

    jit_grad = sg.grad(gaussian_nll, argnums=(0, 1, 2))(X, MU, LOG_SIGMA)
    jit_grad = [np.broadcast_to(a, (7, 3)) for a in jit_grad]
    by_hand = [(X - MU) * np.exp(-2 * LOG_SIGMA), -(X - MU) * np.exp(-2 * LOG_SIGMA),
               1 - (X - MU) ** 2 * np.exp(-2 * LOG_SIGMA)]
    for name, a, j, h in zip(("x", "mu", "log_sigma"), aot["grad"], jit_grad, by_hand):
        print(f"d nll / d {name}: max |AOT - JIT|: {np.abs(np.array(a) - j).max():.3e}"
              f"  max |AOT - by hand|: {np.abs(np.array(a) - h).max():.3e}")
    value_jit = sg.jit(gaussian_nll)(X, MU, LOG_SIGMA)
    print(f"nll: max |AOT - JIT|: {np.abs(np.array(aot['value']) - value_jit).max():.3e}")
    print(f"AOT softplus_grad at {SP_X.tolist()}: {aot['softplus_grad']}")
    print(f"JIT softplus grad: {sg.grad(softplus)(SP_X).tolist()}")
    print(f"AOT d nll/d log_sigma at x=3, mu=-1: {aot['grad'][2][6][0]}")


if __name__ == "__main__":
    main()
