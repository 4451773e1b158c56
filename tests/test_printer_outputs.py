"""An array output that another node also uses is printed as its own element loop.

In one kernel holding ``jit`` and ``grad`` of a program with a vector input, the gradient of
that input, ``3.6 * x2_bar_seed * cos(x2 - x0*x1)``, is both an output and a term of the other
inputs' gradients; it was inlined into that consumer's loop and then written out as one array
expression, ``3.6 * t24 * _vm_cos_f32(t1)``: the vecmath functions are scalar, so the float32
kernel did not compile (property test ``test_float32``).  Checked against ``sg.grad``.
"""
import numpy as np

import symgrad as sg
from symgrad.api.build import build_kernel
from symgrad.compile.cache import cache_key, load_module
from symgrad.emit.module import KernelDef, emit_module
from symgrad.emit.printer import KernelIO
from symgrad.trace.trace import trace_program


def _program(x0, x1, x2):
    t3 = x0 * x1
    t8 = np.prod(3.6 * np.sin(x2 - t3))
    return np.clip(t8, -0.5, 1.5) + np.cos(np.arcsin(0.81 * np.sin(t3)))


def test_array_output_used_by_another_output_compiles_in_both_dtypes():
    p = trace_program(_program, (0.0, 0.0, np.zeros(3)), [(), (), (3,)])
    ins, outs, seen = [], [], set()
    for kind in ("jit", "grad"):
        k = build_kernel(p, kind, [0, 1, 2]).kernel
        for a in k.args:
            if a.node not in seen:
                seen.add(a.node)
                ins.append(KernelIO(a.name, a.node, a.shape))
        outs += [KernelIO(f"{kind}__{o.name}", o.node, o.shape) for o in k.outputs]
    kd = KernelDef("printer_outputs", "printer test kernel", ins, outs)
    source = emit_module(p.graph, [kd], ["printer test"])
    module = load_module(kd.name, cache_key(p.fingerprint(), "printer-outputs-test"), source)
    x0, x1, x2 = 0.4, 0.7, np.array([0.3, -0.2, 0.5])
    want = sg.grad(_program, argnums=(0, 1, 2), signature="(),(),(n)->()", stabilize=False)(x0, x1, x2)
    for dt, tol in ((np.float64, 1e-14), (np.float32, 1e-5)):
        out = getattr(module, kd.name)(dt(x0), dt(x1), x2.astype(dt))
        got = [np.asarray(o, dtype=np.float64) for o in out[1:]]
        assert out[3].dtype == dt
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
