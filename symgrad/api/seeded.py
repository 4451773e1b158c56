"""Compiled kernels for compressed derivatives: ``J S``, ``S^T J`` and ``H S`` for seeds ``S``.

A sparse Jacobian or Hessian needs the product of the derivative with the
``ncolours`` seed vectors of its colouring (:mod:`symgrad.transforms.colouring`).
The kernel built here takes the function's arguments plus ``seeds`` (core shape
``(ncolours,) + I``) and pushes all seeds through one forward pass with a batch
axis (``jvp_nodes(..., nb=1)``, as dense Jacobians do with an identity seed), so
the primal (and, for Hessians, the gradient) is computed once per call, not once
per colour.  Row colourings use the reverse pass instead (``vjp_nodes(..., nb=1)``
with seeds shaped like the output).  Output: ``batch + (ncolours,) + core``.  Reference: forward-over-reverse Hessian-vector products, Pearlmutter,
Neural Computation 6 (1994).
"""
from __future__ import annotations

from ..compile.cache import cache_key
from ..emit.printer import KernelIO
from ..trace.trace import TracedProgram
from ..transforms import jvp_nodes, vjp_nodes
from ..transforms.higher import gradient_nodes
from .pipeline import build_outputs, cached_or_built, native_or_module
from .primal_pass import primal_rewrites


MODES = ("jvp", "vjp", "hvp")


def seeded_kernel(program: TracedProgram, k: int, ncolours: int, mode: str, stabilize=True):
    """The gufunc entry point computing ``J S``, ``S^T J`` or ``H S`` for input leaf ``k``.

    Args:
      program: the traced function (its graph grows by the derivative nodes).
      k: index of the differentiated leaf in ``program.inputs``.
      ncolours: number of seed vectors.
      mode: ``"jvp"`` (``J S``: seeds shaped like the input, one forward pass), ``"vjp"``
        (``S^T J``: seeds shaped like the output, one reverse pass) or ``"hvp"`` (``H S`` of the
        scalar output, forward over reverse).
      stabilize: as in :func:`symgrad.jit`.
    Returns:
      ``fn(*args, seeds)`` returning an array of shape ``batch + (ncolours,) + core``, with the
      output core for ``jvp`` and the input core for ``vjp`` and ``hvp``.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}")
    kind = f"{mode}_seeded"
    key = cache_key(program.fingerprint(), program.arg_names, kind, k, ncolours, stabilize)

    def outputs(g, fresh):
        x, y = program.inputs[k], program.outputs[0]
        if stabilize:  # before the derivative is formed, as pipeline.build
            y = primal_rewrites(g, [y])[0][0]
        seed_name = fresh("seeds")
        seed = g.input(seed_name, (ncolours,) + g.shape(y if mode == "vjp" else x))
        if mode == "vjp":
            (dot,) = vjp_nodes(g, [y], [seed], [x], nb=1)
            shape = (ncolours,) + g.shape(x)
        else:
            target = gradient_nodes(g, y, [x])[0] if mode == "hvp" else y
            (dot,) = jvp_nodes(g, [x], [seed], [target], nb=1)
            shape = (ncolours,) + g.shape(target)
        doc = {"jvp": f"Jacobian of {program.name} times {ncolours} seed vectors ({seed_name})",
               "vjp": f"{ncolours} seed vectors ({seed_name}) times the Jacobian of {program.name}",
               "hvp": f"Hessian of {program.name} times {ncolours} seed vectors ({seed_name})"}[mode]
        return doc, [KernelIO(seed_name, seed, g.shape(seed))], [
            KernelIO(fresh("compressed"), g.instantiate_zeros(dot, shape), shape)]

    module = cached_or_built(f"{program.name}_{kind}", key,
                             lambda: build_outputs(program, kind, [k], outputs, stabilize=stabilize))
    return getattr(module, f"{program.name}_{kind}")


def entries_kernel(program: TracedProgram, k: int, what: str, entry_nodes: list, key_parts: tuple,
                   stabilize=True):
    """The entry point computing the given scalar entry nodes into one vector: native code from
    the kernel's instruction tape (:func:`symgrad.api.pipeline.native_or_module`).

    For the direct path of scalar-level programs (:mod:`symgrad.transforms.entries`): the nodes
    are the non-constant structural nonzeros of a Jacobian or Hessian of input leaf ``k``, and
    the kernel writes them, in the given order, into an output of core shape
    ``(len(entry_nodes),)`` (one ``out[e] = ...`` statement each, from a chain of scalar
    scatters: no intermediate arrays and no colour seeds).

    Args:
      program: the traced function whose graph holds ``entry_nodes``.
      k: index of the differentiated leaf (for the cache key and the docstring).
      what: ``"jacobian"`` or ``"hessian"``.
      entry_nodes: scalar node ids, at least one.
      key_parts: what identifies the entry list in the cache key (the CSR structure).
      stabilize: as in :func:`symgrad.jit`.
    Returns:
      ``fn(*args)`` returning an array of shape ``batch + (len(entry_nodes),)``.
    """
    kind = f"{what}_entries"
    ne = len(entry_nodes)
    key = cache_key(program.fingerprint(), program.arg_names, kind, k, key_parts, stabilize)

    def outputs(g, fresh):
        data = None
        with g.derivative_mode():
            for e, t in enumerate(entry_nodes):
                s = g.apply("scatter", t, params=((e,), (ne,)))
                data = s if data is None else g.apply("add", data, s)
        doc = (f"the {ne} non-constant structural nonzeros of the {what} of {program.name} w.r.t. "
               f"{program.arg_names[k]}, in CSR order")
        return doc, [], [KernelIO(fresh("data"), data, (ne,))]

    return native_or_module(f"{program.name}_{kind}", key,
                            lambda: build_outputs(program, kind, [k], outputs, stabilize=stabilize))
