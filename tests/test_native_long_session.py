"""The native tier in a long session (regression: the CI run of 2026-11-24 aborted the process).

With LLVM's default (small) code model, the native tier's calls to opcode functions and libm were
32-bit PC-relative; once the JIT's memory and the callee were more than 2 GB apart (many Numba
compiles in one process), LLVM's linker failed an assertion and aborted Python
(``RuntimeDyldELF ... isInt<32>(RealOffset)``).  The child process below compiles Numba
functions in a thread while the public API builds tiered kernels and waits for each one's native
code; before the fix it aborted within 3 to 15 s on this machine, after a few thousand
background compiles.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SESSION = textwrap.dedent("""
    import threading, time
    import numpy as np, numba
    import symgrad as sg

    def compile_numba(stop):  # keeps Numba allocating code memory, as a long session does
        k = 0
        while not stop.is_set():
            k += 1
            ns = {}
            exec(f"def f(x):\\n    return x * {k}.5 + {k}\\n", ns)
            numba.njit(ns["f"])(1.0)

    stop = threading.Event()
    threading.Thread(target=compile_numba, args=(stop,), daemon=True).start()
    ops = [np.sin, np.exp, np.tanh, np.log1p, np.cos, np.arctan, np.sinh, np.expm1]
    t0, n, worst, built = time.time(), 0, 0.0, []
    x = np.linspace(0.1, 0.5, 4)
    try:
        while time.time() - t0 < SECONDS:  # many native compiles run at once, in background threads
            n += 1
            a, b, c = ops[n % 8], ops[(n // 8) % 8], 1.0 + (n % 5) * 0.25 + n * 1e-6
            f = lambda x, a=a, b=b, c=c: a(x * c) * b(x) + x ** 3
            g = sg.grad(f, stabilize=False)
            built.append((f, g, g(x)))  # the first call answers from the interpreter tier
        for f, g, first in built:
            g.wait_compiled()
            again = g(x)  # native code
            h = 1e-6
            fd = (f(x + h) - f(x - h)) / (2 * h)
            worst = max(worst, float(np.max(np.abs(again - fd) / (1 + np.abs(fd)))))
            assert np.array_equal(first, again), (first, again)
    finally:
        stop.set()
    print("programs", n, "worst", worst)
""")


@pytest.mark.slow  # 17 s: a child process compiles Numba functions for thousands of rounds (CI time)
def test_native_code_links_after_many_numba_compiles(tmp_path):
    env = dict(os.environ, SYMGRAD_TIERED="1", SYMGRAD_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", "SECONDS = 15\n" + SESSION], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    programs, worst = proc.stdout.split()[1], float(proc.stdout.split()[3])
    assert int(programs) >= 3 and worst < 1e-6, proc.stdout
