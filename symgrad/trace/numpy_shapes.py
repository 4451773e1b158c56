"""NumPy shape and structure functions while tracing: gathers, stacking, contractions.

Most rearrangements (fancy indexing, constant boolean masks, ``take``,
``take_along_axis``, ``tile``, ``repeat``, ``flip``, ``roll``, ``diagonal``,
``pad``) are one *gather*: NumPy itself applies the function to
``arange(size).reshape(shape)``, which gives the constant flat index of every
output element, and the traced array is gathered with it (the ``take``
primitive, :mod:`symgrad.ir.rules.gather`).  The result has NumPy's shape and
values by construction, costs O(1) graph nodes, and its VJP is a scatter-add.
Padding with a constant gathers from the flattened array with the fill value
appended.  Stacking uses ``concat``; products use ``contract`` pairwise.
"""
from __future__ import annotations

import operator
import string

import numpy as np

from ..errors import UnsupportedOperationError, format_error, user_location
from . import numpy_core as core
from .numpy_core import axes_of, normalize_axis_index, normalize_axis_tuple
from .numpy_reductions import check_dtype, reject_given, reject_keywords, unsupported_arg
from .tracer import Tracer


def _t(ctx, v) -> Tracer:
    return core.as_tracer(ctx, v)


def _constant_index(value, what: str):
    """A NumPy index argument that must not be traced (an int array, a bool mask, ints)."""
    arr = np.asarray(value, dtype=object) if isinstance(value, (list, tuple)) else value
    if isinstance(value, Tracer):
        raise core.traced_index_error(f"{what} is a traced value", value, skip=4)
    if isinstance(arr, np.ndarray) and arr.dtype == object:
        for v in arr.reshape(-1):
            if isinstance(v, Tracer):
                raise core.traced_index_error(f"{what} is a traced value", v, skip=4)
    return value


_MAX_GATHER = 2 ** 24  # index constants reach float32 kernels as float32


def gather(ctx, x, positions: np.ndarray) -> Tracer:
    """``x.ravel()[positions]`` with NumPy's result shape (``positions``: a constant int array)."""
    x = _t(ctx, x)
    positions = np.asarray(positions)
    if x.size > _MAX_GATHER:
        raise UnsupportedOperationError(format_error(
            f"indexing with an index array into a traced array of {x.size} elements", "index arrays are passed "
            "to the float32 kernel as float32, which holds integers exactly only up to 2**24",
            "index with slices, or split the array", user_location(4)))
    flat = core.reshape(ctx, x, (-1,)) if x.ndim != 1 else x
    idx = ctx.graph.const(positions.reshape(-1).astype(np.float64))
    out = ctx.wrap(ctx.graph.apply("take", flat.id, idx, params=(0,)))
    return core.reshape(ctx, out, positions.shape) if positions.shape != out.shape else out


def _rearrange(ctx, x, fn) -> Tracer:
    """Apply the index map ``fn`` (a NumPy function of an int array) to a traced array."""
    x = _t(ctx, x)
    positions = fn(np.arange(x.size, dtype=np.int64).reshape(x.shape))
    return gather(ctx, x, positions)


def fancy_getitem(ctx, x, key) -> Tracer:
    """``x[key]`` where ``key`` holds integer arrays or boolean masks (constants)."""
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        _constant_index(part, "an index array or mask")
    return _rearrange(ctx, x, lambda ids: ids[key])


def is_fancy(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, (list, np.ndarray, bool, np.bool_)) and not (isinstance(p, np.ndarray) and p.ndim == 0
                                                                          and p.dtype != bool)
               for p in parts)


def take(ctx, a, indices, axis=None, out=None, mode="raise"):
    """np.take with constant indices (modes raise/wrap/clip as NumPy)."""
    if out is not None:
        raise unsupported_arg("take", "out=...", "drop out= and use the result")
    _constant_index(indices, "np.take's indices")
    return _rearrange(ctx, a, lambda ids: np.take(ids, indices, axis=axis, mode=mode))


def take_along_axis(ctx, arr, indices, axis=-1):
    _constant_index(indices, "np.take_along_axis's indices")
    return _rearrange(ctx, arr, lambda ids: np.take_along_axis(ids, np.asarray(indices), axis=axis))


def pad(ctx, array, pad_width, mode="constant", **kw):
    """np.pad: ``constant`` (a scalar value, possibly traced), ``edge``, ``reflect``, ``symmetric``, ``wrap``."""
    x = _t(ctx, array)
    ids = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    if mode == "constant":
        value = kw.pop("constant_values", 0.0)
        if kw or np.ndim(value) != 0:
            raise unsupported_arg("pad", "constant_values per axis", "pad with one scalar value, or concatenate")
        positions = np.pad(ids, pad_width, mode="constant", constant_values=x.size)
        filled = core.concatenate(ctx, [core.reshape(ctx, x, (-1,)), core.reshape(ctx, _t(ctx, value), (1,))])
        return gather(ctx, filled, positions)
    if mode in ("edge", "reflect", "symmetric", "wrap") and not kw:
        return gather(ctx, x, np.pad(ids, pad_width, mode=mode))
    raise unsupported_arg("pad", f"mode={mode!r}", "use mode='constant', 'edge', 'reflect', 'symmetric' or 'wrap'")


def diag(ctx, v, k=0):
    """np.diag: a 2-D input gives its k-th diagonal; a 1-D input builds the matrix (zeros elsewhere)."""
    x = _t(ctx, v)
    if x.ndim == 2:
        return _rearrange(ctx, x, lambda ids: np.diagonal(ids, k))
    if x.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = x.shape[0] + abs(k)
    positions = np.diag(np.arange(x.shape[0], dtype=np.int64), k)
    positions = np.where(np.diag(np.ones(x.shape[0], dtype=bool), k), positions, x.shape[0])
    filled = core.concatenate(ctx, [x, _t(ctx, np.zeros(1))])
    return gather(ctx, filled, positions.reshape(n, n))


def trace(ctx, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """np.trace = sum of np.diagonal over its last axis; UnsupportedOperationError for out= or a
    dtype other than float64."""
    reject_given("trace", out=out)
    check_dtype("trace", dtype)
    d = _rearrange(ctx, a, lambda ids: np.diagonal(ids, offset, axis1, axis2))
    return core.np_sum(ctx, d, axis=-1)


def _tri(keep):
    def build(ctx, m, k=0):
        x = _t(ctx, m)
        if x.ndim < 2:
            raise unsupported_arg(keep.__name__, "a 1-D input", "give a 2-D array")
        mask = keep(np.ones(x.shape[-2:], dtype=bool), k)
        return ctx.apply("where", mask, x, 0.0)
    return build


def swapaxes(ctx, a, axis1, axis2):
    x = _t(ctx, a)
    perm = list(range(x.ndim))
    i, j = normalize_axis_index(axis1, x.ndim), normalize_axis_index(axis2, x.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return core.transpose(ctx, x, perm)


def moveaxis(ctx, a, source, destination):
    x = _t(ctx, a)
    src = normalize_axis_tuple(source, x.ndim, "source")
    dst = normalize_axis_tuple(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return core.transpose(ctx, x, order)


def squeeze(ctx, a, axis=None):
    x = _t(ctx, a)
    axes = tuple(i for i, d in enumerate(x.shape) if d == 1) if axis is None else axes_of(axis, x.ndim)
    if any(x.shape[i] != 1 for i in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return core.reshape(ctx, x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def _atleast(nd):
    def build(ctx, *arys):
        outs = []
        for a in arys:
            x = _t(ctx, a)
            shape = {1: (1,), 2: (1, 1), 3: (1, 1, 1)}[nd] if x.ndim == 0 else x.shape
            if x.ndim == 1 and nd >= 2:
                shape = (1,) + x.shape + ((1,) if nd == 3 else ())
            elif x.ndim == 2 and nd == 3:
                shape = x.shape + (1,)
            outs.append(core.reshape(ctx, x, shape) if shape != x.shape else x)
        return outs[0] if len(outs) == 1 else outs
    return build


def hstack(ctx, tup, **kw):
    reject_keywords("hstack", kw)
    arrs = [_atleast(1)(ctx, a) for a in tup]
    return core.concatenate(ctx, arrs, axis=0 if arrs[0].ndim == 1 else 1)


def vstack(ctx, tup, **kw):
    reject_keywords("vstack", kw)
    return core.concatenate(ctx, [_atleast(2)(ctx, a) for a in tup], axis=0)


def column_stack(ctx, tup):
    cols = [_t(ctx, a) for a in tup]
    cols = [core.reshape(ctx, c, (c.shape[0], 1)) if c.ndim < 2 else c for c in cols]
    return core.concatenate(ctx, cols, axis=1)


def split(ctx, ary, indices_or_sections, axis=0, *, _even=True):
    """np.split / np.array_split: a list of slices along ``axis``."""
    x = _t(ctx, ary)
    ax = normalize_axis_index(axis, x.ndim)
    pieces = (np.split if _even else np.array_split)(np.arange(x.shape[ax]), indices_or_sections)
    pre = (("s", None, None, None),) * ax
    out = []
    for p in pieces:
        start = int(p[0]) if p.size else 0
        out.append(ctx.apply("getitem", x, params=(pre + (("s", start, start + p.size, None),),)))
    return out


def tile(ctx, A, reps):
    return _rearrange(ctx, A, lambda ids: np.tile(ids, reps))


def repeat(ctx, a, repeats, axis=None):
    _constant_index(repeats, "np.repeat's repeats")
    return _rearrange(ctx, a, lambda ids: np.repeat(ids, repeats, axis=axis))


def roll(ctx, a, shift, axis=None):
    return _rearrange(ctx, a, lambda ids: np.roll(ids, shift, axis=axis))


def flip(ctx, m, axis=None):
    return _rearrange(ctx, m, lambda ids: np.flip(ids, axis=axis))


# -- products ------------------------------------------------------------------------------------

def _single(ctx, x, letters: str, keep: str):
    """One einsum operand: repeated letters take the diagonal, letters not in ``keep`` are summed."""
    while len(set(letters)) != len(letters):
        ch = next(c for c in letters if letters.count(c) > 1)
        i, j = letters.index(ch), letters.index(ch, letters.index(ch) + 1)
        x = _rearrange(ctx, x, lambda ids: np.moveaxis(np.diagonal(ids, 0, i, j), -1, i))
        letters = letters[:j] + letters[j + 1:]
    drop = tuple(k for k, c in enumerate(letters) if c not in keep)
    if drop:
        x = core.np_sum(ctx, x, axis=drop)
        letters = "".join(c for c in letters if c in keep)
    return x, letters


def einsum(ctx, subscripts, *operands, **kw):
    """np.einsum with explicit letters (``->`` optional, no ``...``): pairwise ``contract``, left to right.

    ``optimize=`` is accepted (the order is always left to right); ``out=``, a dtype other than
    float64, and NumPy's other keywords raise UnsupportedOperationError.
    """
    reject_given("einsum", **{k: v for k, v in kw.items() if k not in ("optimize", "dtype")})
    check_dtype("einsum", kw.get("dtype"))
    if not isinstance(subscripts, str) or "." in subscripts or not operands:
        raise unsupported_arg("einsum", "this form", "write explicit subscripts such as 'ij,jk->ik' (no '...')")
    spec = subscripts.replace(" ", "")
    ins, out = spec.split("->") if "->" in spec else (spec, None)
    terms = ins.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {len(terms)} subscripts for {len(operands)} operands")
    if out is None:  # NumPy's implicit output: letters seen once, sorted
        joined = "".join(terms)
        out = "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    if len(set(out)) != len(out) or not set(out) <= set("".join(terms)):
        raise ValueError(f"einsum: output subscripts {out!r} must be distinct letters that appear in the inputs")
    used = "".join(dict.fromkeys("".join(terms) + out))
    if not all(c in string.ascii_letters for c in used) or len(used) > 26:
        raise unsupported_arg("einsum", f"subscripts {subscripts!r}", "use at most 26 distinct letters")
    canon = str.maketrans(used, string.ascii_lowercase[:len(used)])  # contract's loop names are lowercase
    terms, out = [t.translate(canon) for t in terms], out.translate(canon)
    xs = [_t(ctx, o) for o in operands]
    for x, letters in zip(xs, terms):
        if x.ndim != len(letters):
            raise ValueError(f"einsum: operand of shape {x.shape} does not match subscripts {letters!r}")
    cur, cl = _single(ctx, xs[0], terms[0], "".join(terms[1:]) + out)
    for k in range(1, len(xs)):
        later = "".join(terms[k + 1:]) + out
        nxt, nl = _single(ctx, xs[k], terms[k], cl + later)
        cur, cl = _single(ctx, cur, cl, nl + later)
        res = "".join(dict.fromkeys(c for c in cl + nl if c in later))
        if not cl or not nl:
            cur = ctx.apply("mul", cur, nxt) if not cl and not nl else _pair_scalar(ctx, cur, cl, nxt, nl, res)
        else:
            cur = ctx.apply("contract", cur, nxt, params=(f"{cl},{nl}->{res}",))
        cl = res
    cur, cl = _single(ctx, cur, cl, out)
    if cl != out:
        cur = core.transpose(ctx, cur, [cl.index(c) for c in out])
    return cur


def _pair_scalar(ctx, a, al, b, bl, res):
    x, letters = (b, bl) if not al else (a, al)
    prod = ctx.apply("mul", a, b)
    return prod if letters == res else core.transpose(ctx, prod, [letters.index(c) for c in res])


def tensordot(ctx, a, b, axes=2):
    """np.tensordot as an einsum of the two operands."""
    x, y = _t(ctx, a), _t(ctx, b)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        ax_a, ax_b = ([axes[0]] if np.ndim(axes[0]) == 0 else list(axes[0]),
                      [axes[1]] if np.ndim(axes[1]) == 0 else list(axes[1]))
    ax_a = [normalize_axis_index(operator.index(i), x.ndim) for i in ax_a]
    ax_b = [normalize_axis_index(operator.index(i), y.ndim) for i in ax_b]
    if len(ax_a) != len(ax_b) or any(x.shape[i] != y.shape[j] for i, j in zip(ax_a, ax_b)):
        raise ValueError("shape-mismatch for sum")
    letters = iter(string.ascii_lowercase)
    la = [next(letters) for _ in range(x.ndim)]
    lb = [next(letters) for _ in range(y.ndim)]
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out = [c for k, c in enumerate(la) if k not in ax_a] + [c for k, c in enumerate(lb) if k not in ax_b]
    return einsum(ctx, f"{''.join(la)},{''.join(lb)}->{''.join(out)}", x, y)


def inner(ctx, a, b):
    x, y = _t(ctx, a), _t(ctx, b)
    if x.ndim == 0 or y.ndim == 0:
        return ctx.apply("mul", x, y)
    return tensordot(ctx, x, y, axes=([-1], [-1]))


def outer(ctx, a, b, out=None):
    reject_given("outer", out=out)
    x, y = core.reshape(ctx, _t(ctx, a), (-1,)), core.reshape(ctx, _t(ctx, b), (-1,))
    return einsum(ctx, "i,j->ij", x, y)


def kron(ctx, a, b):
    """np.kron: an outer product with interleaved axes, reshaped."""
    x, y = _t(ctx, a), _t(ctx, b)
    nd = max(x.ndim, y.ndim)
    x = core.reshape(ctx, x, (1,) * (nd - x.ndim) + x.shape)
    y = core.reshape(ctx, y, (1,) * (nd - y.ndim) + y.shape)
    la, lb = string.ascii_lowercase[:nd], string.ascii_lowercase[nd:2 * nd]
    prod = einsum(ctx, f"{la},{lb}->{''.join(p + q for p, q in zip(la, lb))}", x, y)
    return core.reshape(ctx, prod, tuple(p * q for p, q in zip(x.shape, y.shape)))


def cross(ctx, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross of 3-vectors: (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = moveaxis(ctx, a, axisa, -1), moveaxis(ctx, b, axisb, -1)
    if x.shape[-1] != 3 or y.shape[-1] != 3:
        raise unsupported_arg("cross", "vectors of length 2", "append a zero third component")
    ell = (Ellipsis,)
    xs = [x[ell + (i,)] for i in range(3)]
    ys = [y[ell + (i,)] for i in range(3)]
    comps = [xs[1] * ys[2] - xs[2] * ys[1], xs[2] * ys[0] - xs[0] * ys[2], xs[0] * ys[1] - xs[1] * ys[0]]
    res = core.stack(ctx, comps, axis=-1)
    return moveaxis(ctx, res, -1, axisc)


def copy(ctx, a, **kw):
    return _t(ctx, a)


def _reject_traced_function(name, advice):
    def build(ctx, *args, **kw):
        raise UnsupportedOperationError(format_error(
            f"numpy.{name} of a traced value", "its result would depend on the input's values, not only on "
            "its shape", advice, user_location(3)))
    return build


def meshgrid(ctx, *xi, copy=True, sparse=False, indexing="xy"):
    """np.meshgrid: input i (flattened) along axis i of the result, the first two axes swapped for
    ``indexing="xy"`` (NumPy's default); each broadcast to the full grid unless ``sparse``.

    Shapes: ``xy`` (len(x1), len(x0), len(x2), ...), ``ij`` (len(x0), len(x1), ...); a tuple of
    arrays.  Raises ValueError for another ``indexing`` (NumPy's message)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    out = [core.reshape(ctx, _t(ctx, x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        out[0] = core.reshape(ctx, out[0], (1, -1) + s0[2:])
        out[1] = core.reshape(ctx, out[1], (-1, 1) + s0[2:])
    if not sparse:
        shape = np.broadcast_shapes(*(o.shape for o in out))
        out = [o if o.shape == shape else ctx.apply("broadcast_to", o, params=(shape,)) for o in out]
    return tuple(out)


def count_nonzero(ctx, a, axis=None, *, keepdims=False):
    """np.count_nonzero: NumPy's count when the array folded to a constant; of a traced array it
    raises UnsupportedOperationError (an integer count of the input's values has no derivative and
    is not a traced float), naming ``np.sum(a != 0, axis=...)``, which traces (a float, derivative 0)."""
    x = _t(ctx, a)
    g = ctx.graph
    if g[x.id].op in ("bconst", "const"):
        return np.count_nonzero(g.consts[x.id], axis=axis, keepdims=keepdims)
    raise UnsupportedOperationError(format_error(
        "numpy.count_nonzero of a traced value", "it returns an integer count that depends on the input's "
        "values: it has no derivative and cannot be a traced (float) value",
        "write np.sum(a != 0, axis=...) for the count as a float (its derivative is 0), or count outside "
        "the traced function", user_location(3)))


def _truth(name):
    def build(ctx, a, axis=None, out=None, keepdims=False, **kw):
        if out is not None or kw:
            raise unsupported_arg(name, "out= or where=", f"call np.{name}(mask) on a constant mask")
        return getattr(_t(ctx, a), name)(axis=axis, keepdims=keepdims)
    return build


FUNCTIONS = {
    np.all: _truth("all"), np.any: _truth("any"),
    np.take: take, np.take_along_axis: take_along_axis, np.pad: pad, np.diag: diag, np.diagonal:
    lambda c, a, offset=0, axis1=0, axis2=1: _rearrange(c, a, lambda ids: np.diagonal(ids, offset, axis1, axis2)),
    np.trace: trace, np.triu: _tri(np.triu), np.tril: _tri(np.tril), np.swapaxes: swapaxes,
    np.moveaxis: moveaxis, np.squeeze: squeeze, np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2),
    np.atleast_3d: _atleast(3), np.hstack: hstack, np.vstack: vstack, np.column_stack: column_stack,
    np.split: split, np.array_split: lambda c, a, i, axis=0: split(c, a, i, axis, _even=False),
    np.tile: tile, np.repeat: repeat, np.roll: roll, np.flip: flip, np.fliplr: lambda c, m: flip(c, m, 1),
    np.flipud: lambda c, m: flip(c, m, 0), np.einsum: einsum, np.tensordot: tensordot, np.inner: inner,
    np.outer: outer, np.kron: kron, np.cross: cross, np.copy: copy,
    np.nonzero: _reject_traced_function("nonzero", "use a constant mask, or np.where(condition, x, other)"),
    np.argwhere: _reject_traced_function("argwhere", "use a constant mask, or np.where(condition, x, other)"),
    np.meshgrid: meshgrid, np.count_nonzero: count_nonzero,
}
