"""Structural (linear) primitives: reductions, contractions, indexing, reshapes.

Each op gives ``jvp(g, node, tangents, nb)`` and ``vjp(g, node, ct, nb)``
directly.  Tangents and cotangents may carry ``nb`` (0 or 1) extra *leading*
batch axes: forward-mode Jacobians push an identity seed through once instead
of once per basis vector (JAX's ``jacfwd = vmap(jvp)``, done statically).

``contract`` is a two-operand Einstein summation (``"ij,j->i"``); its rules are
the matrix-calculus identities dL/dA = G B^T and dL/dB = A^T G written in index
form (Giles, "An extended collection of matrix derivative results", 2008).
It is printed as explicit loops, which Numba compiles quickly and which need
no BLAS.  How each op here prints as Numba code is in :mod:`symgrad.emit.lowering.structural`.
"""
from __future__ import annotations

import numpy as np

from ..graph import Graph
from ..ops import OpDef, register

BATCH = "Z"  # index letter of the tangent batch axis in contract specs


# -- helpers used by the rules and by the transforms ---------------------------------

def expand_batched(g: Graph, t: int, nb: int, rank: int) -> int:
    """Insert size-1 axes after the ``nb`` batch axes so ``t`` broadcasts to ``rank`` core dims."""
    shape = g.shape(t)
    core = shape[nb:]
    if not nb or len(core) >= rank:
        return t
    return g.apply("reshape", t, params=(shape[:nb] + (1,) * (rank - len(core)) + core,))


def unbroadcast(g: Graph, v: int, shape: tuple, nb: int) -> int:
    """Sum ``v`` (batch + broadcast shape) down to batch + ``shape``: the VJP of broadcasting."""
    vshape = g.shape(v)
    if not nb and vshape == shape:  # nothing was broadcast (every scalar node): the common case
        return v
    core = vshape[nb:]
    lead = len(core) - len(shape)
    axes = list(range(nb, nb + lead))
    axes += [nb + lead + i for i, d in enumerate(shape) if d == 1 and core[lead + i] != 1]
    if axes:
        v = g.apply("sum", v, params=(tuple(axes),))
    target = vshape[:nb] + tuple(shape)
    if g.shape(v) != target:
        v = g.apply("reshape", v, params=(target,))
    return v


def index_to_python(index: tuple):
    """Params form of an index (ints, ('s', start, stop, step), None) -> a numpy index."""
    return tuple(slice(*i[1:]) if isinstance(i, tuple) else i for i in index)


def _batch_index(index, nb):
    return (("s", None, None, None),) * nb + tuple(index)


# -- sum ------------------------------------------------------------------------------

def _infer_sum(nodes, params):
    (x,), (axes,) = nodes, params
    return tuple(d for i, d in enumerate(x.shape) if i not in axes), "f"


def _vjp_sum(g, node, ct, nb):
    (x,) = node.args
    xshape = g.shape(x)
    axes = node.params[0]
    keep = tuple(1 if i in axes else d for i, d in enumerate(xshape))
    batch = g.shape(ct)[:nb]
    if g.shape(ct) != batch + keep:
        ct = g.apply("reshape", ct, params=(batch + keep,))
    return (g.apply("broadcast_to", ct, params=(batch + xshape,)),)


register(OpDef(
    name="sum", statement=True, infer=_infer_sum, numpy=lambda x, axes: np.sum(x, axis=axes),
    jvp=lambda g, node, t, nb: g.apply("sum", t[0], params=(tuple(a + nb for a in node.params[0]),)),
    vjp=_vjp_sum, ref="linearity: the VJP of a sum broadcasts the cotangent",
))


# -- reshape, transpose, broadcast_to -----------------------------------------------------

register(OpDef(
    name="reshape", infer=lambda nodes, p: (tuple(p[0]), "f"),
    numpy=lambda x, shape: np.reshape(x, shape),
    jvp=lambda g, node, t, nb: g.apply("reshape", t[0], params=(g.shape(t[0])[:nb] + node.params[0],)),
    vjp=lambda g, node, ct, nb: (g.apply("reshape", ct, params=(g.shape(ct)[:nb] + g.shape(node.args[0]),)),),
    simplify=lambda g, args, p, shape: args[0] if g.shape(args[0]) == tuple(shape) else None,
    ref="linear",
))


def _batch_perm(perm, nb):
    return tuple(range(nb)) + tuple(p + nb for p in perm)


register(OpDef(
    name="transpose", statement=True, infer=lambda nodes, p: (tuple(nodes[0].shape[i] for i in p[0]), "f"),
    numpy=lambda x, perm: np.transpose(x, perm),
    jvp=lambda g, node, t, nb: g.apply("transpose", t[0], params=(_batch_perm(node.params[0], nb),)),
    vjp=lambda g, node, ct, nb: (g.apply("transpose", ct, params=(_batch_perm(tuple(np.argsort(node.params[0]).tolist()), nb),)),),
    simplify=lambda g, args, p, shape: args[0] if tuple(p[0]) == tuple(range(len(p[0]))) else None,
    ref="linear",
))


register(OpDef(
    name="broadcast_to", infer=lambda nodes, p: (tuple(p[0]), "f"),
    numpy=lambda x, shape: np.broadcast_to(x, shape),
    jvp=lambda g, node, t, nb: g.apply("broadcast_to", expand_batched(g, t[0], nb, len(node.shape)),
                                       params=(g.shape(t[0])[:nb] + node.shape,)),
    vjp=lambda g, node, ct, nb: (unbroadcast(g, ct, g.shape(node.args[0]), nb),),
    simplify=lambda g, args, p, shape: args[0] if g.shape(args[0]) == tuple(shape) else None,
    ref="linear; its VJP sums over the broadcast axes",
))


# -- indexing -----------------------------------------------------------------------------

def _infer_getitem(nodes, params):
    index, shape = params[0], nodes[0].shape
    if len(index) <= len(shape) and all(type(i) is int for i in index):  # x[i, j]: the common case
        return tuple(shape[len(index):]), "f"
    probe = np.empty(shape, dtype=np.int8)[index_to_python(index)]
    return tuple(np.shape(probe)), "f"


register(OpDef(
    name="getitem", infer=_infer_getitem,
    numpy=lambda x, index: np.asarray(x)[index_to_python(index)],
    jvp=lambda g, node, t, nb: g.apply("getitem", t[0], params=(_batch_index(node.params[0], nb),)),
    vjp=lambda g, node, ct, nb: (g.apply("scatter", ct, params=(
        _batch_index(node.params[0], nb), g.shape(ct)[:nb] + g.shape(node.args[0]))),),
    ref="linear; its VJP scatters the cotangent into zeros",
))


def _numpy_scatter(v, index, shape):
    out = np.zeros(shape, dtype=np.asarray(v).dtype)
    out[index_to_python(index)] = v
    return out


register(OpDef(
    name="scatter", statement=True, infer=lambda nodes, p: (tuple(p[1]), "f"), numpy=_numpy_scatter,
    jvp=lambda g, node, t, nb: g.apply("scatter", t[0], params=(
        _batch_index(node.params[0], nb), g.shape(t[0])[:nb] + node.params[1])),
    vjp=lambda g, node, ct, nb: (g.apply("getitem", ct, params=(_batch_index(node.params[0], nb),)),),
    ref="linear; transpose of getitem",
))


# -- contraction ----------------------------------------------------------------------------

def parse_spec(spec: str):
    ins, out = spec.split("->")
    a, b = ins.split(",")
    return a, b, out


def _infer_contract(nodes, params):
    a, b, out = parse_spec(params[0])
    sizes: dict[str, int] = {}
    for letters, node in ((a, nodes[0]), (b, nodes[1])):
        if len(letters) != len(node.shape):
            raise ValueError(f"contract {params[0]}: operand of shape {node.shape} does not match {letters!r}")
        for ch, d in zip(letters, node.shape):
            if sizes.setdefault(ch, d) != d:
                raise ValueError(f"contract {params[0]}: index {ch} has sizes {sizes[ch]} and {d}")
    return tuple(sizes[ch] for ch in out), "f"


def _batched_spec(spec, which, nb):
    """Add the batch letter to operand ``which`` (0 or 1) and to the output."""
    a, b, out = parse_spec(spec)
    if not nb:
        return spec
    a, b = (BATCH + a, b) if which == 0 else (a, BATCH + b)
    return f"{a},{b}->{BATCH}{out}"


def _jvp_contract(g, node, t, nb):
    (x, y), spec = node.args, node.params[0]
    terms = []
    if t[0] is not None:
        terms.append(g.apply("contract", t[0], y, params=(_batched_spec(spec, 0, nb),)))
    if t[1] is not None:
        terms.append(g.apply("contract", x, t[1], params=(_batched_spec(spec, 1, nb),)))
    return terms[0] if len(terms) == 1 else g.apply("add", *terms)


def _vjp_contract(g, node, ct, nb):
    (x, y), spec = node.args, node.params[0]
    a, b, out = parse_spec(spec)
    z = BATCH if nb else ""
    for letters, other in ((a, b + out), (b, a + out)):
        missing = set(letters) - set(other)
        if missing:
            raise NotImplementedError(f"contract {spec}: index {sorted(missing)} is summed in one operand only")
    x_bar = g.apply("contract", ct, y, params=(f"{z}{out},{b}->{z}{a}",))
    y_bar = g.apply("contract", x, ct, params=(f"{a},{z}{out}->{z}{b}",))
    return x_bar, y_bar


def _aligned(g, x, letters, out):
    """``x`` (indexed by ``letters``) transposed and reshaped to broadcast against ``out``."""
    if not letters:
        return x
    order = sorted(range(len(letters)), key=lambda i: out.index(letters[i]))
    if order != list(range(len(letters))):
        x = g.apply("transpose", x, params=(tuple(order),))
        letters = "".join(letters[i] for i in order)
    shape = g.shape(x)
    full = tuple(shape[letters.index(ch)] if ch in letters else 1 for ch in out)
    return g.apply("reshape", x, params=(full,)) if full != shape else x


def _simp_contract(g, args, params, shape):
    """A contraction that sums over nothing is a (broadcast) product: emit it as ``mul``."""
    a, b, out = parse_spec(params[0])
    if set(a + b) != set(out) or len(set(a)) != len(a) or len(set(b)) != len(b):
        return None
    x, y = _aligned(g, args[0], a, out), _aligned(g, args[1], b, out)
    prod = g.apply("mul", x, y)
    return prod if g.shape(prod) == tuple(shape) else g.apply("broadcast_to", prod, params=(tuple(shape),))


register(OpDef(
    name="contract", statement=True, infer=_infer_contract, simplify=_simp_contract, numpy=lambda x, y, spec: np.einsum(spec, x, y),
    jvp=_jvp_contract, vjp=_vjp_contract,
    ref="bilinear: dL/dA = G B^T, dL/dB = A^T G (Giles 2008)",
))


# -- concatenation ------------------------------------------------------------------------------

def _infer_concat(nodes, params):
    axis = params[0]
    shape = list(nodes[0].shape)
    shape[axis] = sum(n.shape[axis] for n in nodes)
    return tuple(shape), "f"


def _jvp_concat(g, node, t, nb):
    batch = next(g.shape(x)[:nb] for x in t if x is not None)
    parts = [g.instantiate_zeros(x, batch + g.shape(a)) for x, a in zip(t, node.args)]
    return g.apply("concat", *parts, params=(node.params[0] + nb,))


def _vjp_concat(g, node, ct, nb):
    axis, out, start = node.params[0], [], 0
    for a in node.args:
        size = g.shape(a)[axis]
        index = (("s", None, None, None),) * (axis + nb) + (("s", start, start + size, None),)
        out.append(g.apply("getitem", ct, params=(index,)))
        start += size
    return tuple(out)


register(OpDef(
    name="concat", infer=_infer_concat, numpy=lambda *xs: np.concatenate(xs[:-1], axis=xs[-1]),
    jvp=_jvp_concat, vjp=_vjp_concat, ref="linear",
))


# -- identity seeds ---------------------------------------------------------------------------

register(OpDef(
    name="eye", statement=True, infer=lambda nodes, p: (tuple(p[0]), "f"), nondiff=True,
    numpy=lambda shape: np.eye(shape[0]).reshape(shape), ref="constant seed of a Jacobian pass",
))


# -- leaves -------------------------------------------------------------------------------------
register(OpDef(name="input", infer=lambda nodes, p: ((), "f")))
register(OpDef(name="const", infer=lambda nodes, p: ((), "f")))
register(OpDef(name="bconst", infer=lambda nodes, p: ((), "b")))
