"""The direct path of sparse Jacobians and Hessians: one kernel output per non-constant nonzero.

For scalar-level programs (:mod:`symgrad.transforms.entries`) the structural nonzeros are graph
nodes; :func:`build_direct` builds them and compiles a kernel writing the non-constant ones in CSR
order (:func:`symgrad.api.seeded.entries_kernel`); constant entries (linear terms) are stored once
and filled in by :func:`direct_data`.  Used by :mod:`symgrad.api.sparse`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..transforms.entries import jacobian_entries
from .seeded import entries_kernel

__all__ = ["Direct", "build_direct", "direct_data"]


@dataclass
class Direct:
    """The direct path of a scalar-level program (:mod:`symgrad.transforms.entries`).

    ``scalar``: the ScalarProgram whose Jacobian entries are wanted (for a Hessian, that of the
    gradient); ``variant``: "forward" or "reverse" (the cheaper); ``cost`` its multiply-adds;
    ``terms``: partial terms per compressed lane (a colouring costs about ``terms * ncolours``).
    After the build: ``var_pos``/``const_pos``/``const_vals`` place the kernel's entries and the
    constant entries in the CSR data.
    """

    scalar: object
    variant: str
    cost: int
    terms: int
    indptr: object = None
    indices: object = None
    var_pos: object = None
    const_pos: object = None
    const_vals: object = None



def build_direct(plan, what: str, finish, stabilize) -> None:
    """Build ``plan.direct``'s entry nodes and kernel into ``plan`` (``plan.kernel``).

    ``finish`` maps the Jacobian entries to the stored ones (the Hessian symmetrises them).
    Raises RuntimeError (an internal error) if the entries' structure differs from the pattern.
    """
    d, rec, g = plan.direct, plan.recovery, plan.program.graph
    entries, _ = jacobian_entries(g, d.scalar, len(d.scalar.out_refs), d.variant)
    entries = finish(entries)
    if not (np.array_equal(entries.indptr, rec.indptr) and np.array_equal(entries.indices, rec.indices)):
        raise RuntimeError(f"symgrad internal error: the direct {what} entries of {plan.program.name} "
                           "do not match its pattern; please report this (method='colouring' avoids it)")
    is_const = np.array([g[t].op == "const" for t in entries.nodes], dtype=bool)
    d.const_pos = np.flatnonzero(is_const)
    d.const_vals = np.array([float(g.consts[entries.nodes[p]]) for p in d.const_pos], dtype=np.float64)
    d.var_pos = np.flatnonzero(~is_const)
    var_nodes = [entries.nodes[p] for p in d.var_pos]
    if var_nodes:
        digest = hashlib.sha256(rec.indptr.tobytes() + rec.indices.tobytes()).hexdigest()[:16]
        plan.kernel = entries_kernel(plan.program, plan.k, what, var_nodes, (d.variant, digest, len(var_nodes)),
                                     stabilize)
    else:  # a linear function: every entry is a constant
        plan.kernel = _no_kernel


def _no_kernel(*args):
    return None


def direct_data(plan, args, dtype, nbatch: int) -> np.ndarray:
    """CSR data, shape ``(nbatch, nnz)``: the kernel's entries and the constant ones."""
    d = plan.direct
    data = np.empty((nbatch, plan.recovery.nnz), dtype=dtype)
    data[:, d.const_pos] = d.const_vals.astype(dtype)
    if len(d.var_pos):
        data[:, d.var_pos] = np.asarray(plan.kernel(*args)).reshape(nbatch, len(d.var_pos))
    return data
