"""Public transformations with JAX's names: jit, grad, vjp, jvp, jacobian, hessian, hvp (and
autograd's hessian_vector_product, a compiled HVP callable).

With ``signature=None`` the rule is decided while tracing
(:func:`symgrad.trace.trace.trace_default`): a function that is elementwise in
all its arguments has scalar cores and broadcasts over arrays of any shape, like
a ufunc; any other function gets JAX's semantics, each argument's core being its
whole shape at the call.  With a signature such as ``"(n)->()"`` arguments have
the declared core dimensions and any extra leading dimensions are batch
dimensions, looped over inside compiled code.  float32 inputs compute in
float32, float64 in float64; integer inputs are converted to float64.
"""
from __future__ import annotations

import numpy as np

from ..errors import format_error
from ..trace.pytree import same_structure, tree_flatten, tree_text, tree_unflatten
from ..emit.module import c_strides
from ..emit.names import spec_name
from .compiled import Compiled, run_entry
from .hvp_callable import HvpCallable


def _fn_name(fun) -> str:
    return str(getattr(fun, "__name__", "function"))


def _check_tangents(what: str, fun, primals: tuple, tangents: tuple) -> None:
    """``tangents`` must have the pytree structure of ``primals`` (one tangent per primal leaf)."""
    if len(primals) != len(tangents):
        raise ValueError(format_error(
            f"{what} of {_fn_name(fun)}: got {len(primals)} primal(s) but {len(tangents)} tangent(s)",
            "a tangent is a direction for each primal argument", "give one tangent per primal"))
    _, p_tree = tree_flatten(primals)
    _, t_tree = tree_flatten(tangents)
    if not same_structure(p_tree, t_tree):
        raise ValueError(format_error(
            f"{what} of {_fn_name(fun)}: tangents have pytree structure {tree_text(t_tree)} but primals have "
            f"{tree_text(p_tree)}", "each primal leaf needs a tangent leaf in the same place",
            "give tangents the same nesting of tuples, lists and dicts as the primals"))


def jit(fun, signature: str | None = None, *, stabilize: bool = True, parallel: bool = False,
        tiered: bool | None = None):
    """Compile ``fun`` (traced once per argument structure and core shapes).

    Args:
      fun: Python function of numpy-style arrays/scalars (pytrees allowed).
      signature: gufunc signature such as ``"(n),()->()"``; None: scalar cores (ufunc broadcasting) if
        ``fun`` is elementwise, else each argument's whole shape is its core (JAX's semantics).
      stabilize: rewrite expressions into numerically stable forms (True, False, or a budget
        in CPU seconds for the whole program; default 1 s or ``$SYMGRAD_STABILIZE_BUDGET``).
      parallel: loop over large batches on all cores (``numba.prange``).
      tiered: answer first calls from the interpreter tier while LLVM compiles the kernel's
        instruction tape to native code in a background thread (same values, bit for bit;
        :mod:`symgrad.emit.tape`, :mod:`symgrad.compile.native`).  None (default):
        ``$SYMGRAD_TIERED`` (``1`` always, ``0`` never), else for programs of at least 1000
        operations.  False: the first call waits for the generated Numba module.
        ``f.wait_compiled()`` blocks until a compiled tier serves calls.
    Returns:
      A callable with ``fun``'s arguments; outputs have ``batch + core`` shapes.
    Raises:
      TraceError: ``fun`` branches on, or converts to float, a traced value.
      UnsupportedOperationError: ``fun`` calls a numpy function with no rule.
      SignatureError, ShapeError, DTypeError: at call time, for bad arguments.

    >>> import numpy as np, symgrad
    >>> f = symgrad.jit(lambda x: np.log1p(np.exp(x)))
    >>> float(f(0.0))
    0.6931471805599453
    """
    return Compiled(fun, "jit", signature, stabilize=stabilize, parallel=parallel, tiered=tiered).public


def grad(fun, argnums=0, signature: str | None = None, *, has_aux: bool = False, stabilize: bool = True,
         parallel: bool = False, tiered: bool | None = None):
    """Gradient of a function with one scalar core output.

    Args:
      fun: function whose (only) output has core shape ``()``; with ``has_aux=True``, a function
        returning a pair ``(output, aux)``: ``output`` is differentiated, ``aux`` (any pytree of
        arrays: predictions, metrics) is computed by the same kernel and returned as it is.
      argnums: int, or tuple of ints (then a tuple of gradients is returned).
      signature: gufunc signature; None: for an elementwise ``fun``, ``grad(f)(x)`` on an array
        returns the elementwise derivatives; for any other ``fun`` (``np.sum(x) ** 2``), the
        gradient of the scalar output with respect to the whole array, as ``jax.grad``.
      has_aux: as ``jax.grad``'s: the result is ``(gradient, aux)``.
      stabilize, parallel, tiered: as for :func:`jit`.
    Returns:
      Callable returning d out / d x with the shape of x (batch + core); units of out / x;
      ``(d out / d x, aux)`` with ``has_aux=True``.
    Raises:
      SignatureError: the output is not a scalar core (use ``jacobian``).
      TypeError / ValueError: argnums is not an int/tuple of ints, or out of range; with
        ``has_aux=True``, ``fun`` does not return a pair.

    Reference: reverse accumulation, Griewank & Walther, *Evaluating Derivatives* (2008), ch. 3.

    >>> import numpy as np, symgrad
    >>> float(symgrad.grad(lambda x: x ** 3.5)(1.1))
    4.44170547...
    """
    kind = "grad_with_aux" if has_aux else "grad"
    return Compiled(fun, kind, signature, argnums, stabilize, parallel, tiered).public


def value_and_grad(fun, argnums=0, signature: str | None = None, *, has_aux: bool = False,
                   stabilize: bool = True, parallel: bool = False, tiered: bool | None = None):
    """Like :func:`grad` but returns ``(value, gradient)``, both from one compiled pass;
    ``((value, aux), gradient)`` with ``has_aux=True`` (as ``jax.value_and_grad``)."""
    kind = "value_and_grad_with_aux" if has_aux else "value_and_grad"
    return Compiled(fun, kind, signature, argnums, stabilize, parallel, tiered).public


def jacobian(fun, argnums=0, signature: str | None = None, *, stabilize: bool = True, sparse: bool = False,
             format: str = "csr_array", method: str = "auto", tiered: bool | None = None):
    """Jacobian of ``fun``: for output core shape O and input core shape I, shape ``batch + O + I``.

    Forward accumulation is used when the inputs have fewer elements than the
    outputs, reverse accumulation otherwise; both push one identity seed
    through the graph (no per-column loop in generated code).

    With ``sparse=True`` the callable returns a ``scipy.sparse`` CSR matrix of shape
    ``(prod(O), prod(I))`` holding only the structural nonzeros, read from the traced graph;
    ``signature=None`` then means each argument's whole shape is its core (an elementwise
    function gives a diagonal matrix).  See
    :class:`symgrad.api.sparse.SparseJacobian` (``format``: ``"csr_array"`` or ``"csr_matrix"``;
    ``method``: ``"auto"``, ``"direct"`` (scalar-level programs: each nonzero straight from the graph)
    or ``"colouring"``).
    """
    if sparse:
        from .sparse import SparseJacobian

        return SparseJacobian(fun, argnums, signature, stabilize=stabilize, format=format, method=method)
    return Compiled(fun, "jacobian", signature, argnums, stabilize, tiered=tiered).public


def jacfwd(fun, argnums=0, signature: str | None = None, **options):
    """``jax.jacfwd``'s name for :func:`jacobian` (same arguments and result).

    symgrad builds the Jacobian symbolically and picks forward or reverse accumulation by the
    input and output sizes, so ``jacfwd`` and ``jacrev`` are the same transformation.

    One difference from JAX, as for :func:`jacobian`: with no signature, a function that is
    elementwise in all its arguments follows NumPy's ufunc model, so ``jacfwd(lambda v: v**2)(x)``
    gives the elementwise derivatives ``2 x`` (the Jacobian's diagonal, shape of ``x``) where JAX
    gives the ``(n, n)`` diagonal matrix; pass ``signature="(n)->(n)"`` for the matrix."""
    return jacobian(fun, argnums, signature, **options)


def jacrev(fun, argnums=0, signature: str | None = None, **options):
    """``jax.jacrev``'s name for :func:`jacobian` (see :func:`jacfwd`)."""
    return jacobian(fun, argnums, signature, **options)


def hessian(fun, argnums=0, signature: str | None = None, *, stabilize: bool = True, sparse: bool = False,
            format: str = "csr_array", method: str = "auto", colouring: str = "star", tiered: bool | None = None):
    """Hessian of a scalar-output function, forward-over-reverse; shape ``batch + I + I``.

    With a tuple ``argnums`` the result is a nested tuple ``H[i][j]``.  With ``sparse=True``, a
    ``scipy.sparse`` CSR matrix of the structural nonzeros (:class:`symgrad.api.sparse.SparseHessian`;
    ``method`` as in :func:`jacobian`; ``colouring``: ``"star"`` or ``"acyclic"``).
    """
    if sparse:
        from .sparse import SparseHessian

        return SparseHessian(fun, argnums, signature, stabilize=stabilize, format=format, method=method,
                             colouring=colouring)
    return Compiled(fun, "hessian", signature, argnums, stabilize, tiered=tiered).public


def _cached(fun, kind, signature, stabilize, argnums=0):
    """One :class:`Compiled` per (function, transformation, options), kept on the function,
    so repeated ``vjp``/``jvp``/``hvp`` calls reuse traces and kernels."""
    cache = _table(fun, "__symgrad_cache__")
    key = (kind, signature, stabilize, argnums)
    if key not in cache:
        cache[key] = Compiled(fun, kind, signature, argnums=argnums, stabilize=stabilize)
    return cache[key]


def _sum_to_shape(ct, primal):
    """``ct`` summed over the axes along which ``primal`` was broadcast, so it has ``primal``'s shape.

    A primal that broadcast against the others (a scalar ``a`` in ``a * x``, a batch of size 1,
    a missing leading batch axis) receives the sum of its cotangents over those axes, as
    ``jax.vjp`` gives; a 0-d or Python-number primal gets a NumPy scalar of the kernel's dtype.
    """
    shape = np.shape(primal)
    if np.shape(ct) == shape:
        return ct
    if not hasattr(ct, "sum"):  # a Python number; NumPy and Dask arrays are summed as they are
        ct = np.asarray(ct)
    lead = ct.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and ct.shape[lead + i] != 1)
    summed = ct.sum(axis=axes, keepdims=True).reshape(shape)
    return summed[()] if summed.ndim == 0 and isinstance(summed, np.ndarray) else summed


def vjp(fun, *primals, signature: str | None = None, stabilize: bool = True):
    """Value and vector-Jacobian product function at ``primals``.

    Args:
      fun: as for :func:`jit`.
      *primals: the point (pytrees of arrays and numbers).
      signature: as for :func:`jit`.
    Returns:
      ``(out, vjp_fn)``; ``vjp_fn(out_bar)`` returns a tuple with one cotangent
      per primal, shaped like it: a primal that was broadcast against the others (the scalar
      ``a`` in ``a * x``, or a batch axis it lacks) gets its cotangents summed over the
      broadcast axes, as ``jax.vjp`` gives. ``out_bar`` has the structure and shape of ``out``.
    Raises:
      ValueError: ``out_bar``'s pytree structure differs from ``out``'s.
      ShapeError: ``out_bar``'s shape does not fit ``out``'s core shape.
      and what :func:`jit` raises for ``fun`` and ``primals``.
    """
    fwd = _cached(fun, "jit", signature, stabilize)
    back = _cached(fun, "vjp", signature, stabilize)
    out = fwd(*primals)
    leaves, in_tree = tree_flatten(primals)

    def vjp_fn(out_bar):
        ct_leaves, ct_tree = tree_flatten(out_bar)
        entry = back.entry_for(primals)
        if not same_structure(ct_tree, entry.program.out_tree):
            raise ValueError(format_error(
                f"vjp of {_fn_name(fun)}: the cotangent has pytree structure {tree_text(ct_tree)} but the output "
                f"has {tree_text(entry.program.out_tree)}", "vjp_fn(out_bar) takes one cotangent per output, "
                "in the output's structure", "pass a cotangent shaped like the output"))
        flat = run_entry(entry, [*leaves, *ct_leaves], _fn_name(fun))
        flat = [flat] if len(leaves) == 1 else list(flat)
        flat = [_sum_to_shape(ct, primal) for ct, primal in zip(flat, leaves)]
        return tuple(tree_unflatten(in_tree, flat))

    return out, vjp_fn


def jvp(fun, primals, tangents, signature: str | None = None, stabilize: bool = True):
    """``(out, out_dot)``: value and Jacobian-vector product in one compiled pass.

    Args:
      primals, tangents: tuples (or lists) with matching structure; each tangent has its primal's
        shape, as in ``jax.jvp``.  A tangent with batch axes its primal lacks (a per-element
        direction for a broadcast scalar or an argument passed without the batch axis) broadcasts
        as the arguments do, giving one directional derivative per batch element.
    Returns:
      ``(out, out_dot)``, both with ``out``'s structure and shapes (batch + core).
    Raises:
      ValueError: the counts or pytree structures of ``primals`` and ``tangents`` differ.
      ShapeError: a tangent does not broadcast against the batch shape.
      and what :func:`jit` raises for ``fun`` and ``primals``.
    """
    primals, tangents = tuple(primals), tuple(tangents)
    _check_tangents("jvp", fun, primals, tangents)
    kern = _cached(fun, "jvp", signature, stabilize)
    entry = kern.entry_for(primals)
    p_leaves, _ = tree_flatten(primals)
    t_leaves, t_tree = tree_flatten(tangents)
    flat = run_entry(entry, [*p_leaves, *t_leaves], _fn_name(fun))
    n = len(entry.program.outputs)
    flat = list(flat)
    outs, dots = flat[:n], flat[n:]
    tree = entry.program.out_tree
    return tree_unflatten(tree, outs), tree_unflatten(tree, dots)


_ONE_PRIMAL = (0,)  # the argnums of the HVP kernel of a one-argument call


def hvp(fun, primals, tangents, signature: str | None = None, stabilize: bool = True):
    """Hessian-vector product H(primals) @ tangents, forward-over-reverse, never forming H.

    Returns one array per primal, shaped like it (a tuple if several primals).  The kernel is
    compiled once per function and options and kept on ``fun``.  A call with one float64 array
    primal and a tangent of its shape (tuples, as in the signature) finds it in two dictionary
    lookups and runs the compiled core directly (a captured global that changed is still seen, and
    traced again).  To call the same product many times, :func:`hessian_vector_product` gives a
    callable of ``(x, v)`` built once, as ``jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])``
    is in JAX.
    Reference: Pearlmutter, "Fast exact multiplication by the Hessian" (1994).
    """
    if type(primals) is tuple and type(tangents) is tuple and len(primals) == 1 == len(tangents):
        x, t = primals[0], tangents[0]  # the common call: one plain array
        shape = x.shape if type(x) is _ndarray else None
        if shape is not None and type(t) is _ndarray and t.shape == shape:
            kern = getattr(fun, "__symgrad_hvp1__", _NO_KERNELS).get(signature) if stabilize is True else None
            if kern is not None:
                captures = kern._captures
                if captures is not None and captures.items:
                    kern.refresh()  # a global or closure value the trace read changed: trace again
                plain = kern.plain_entries.get(shape)
                if plain is not None:
                    entry, core, strides = plain
                    if core is not None and x.dtype is _F64 and t.dtype is _F64 and x.strides == strides \
                            and t.strides == strides:  # the entry point's fast path, its tests made here
                        out = _empty(shape)
                        core(x, t, out)
                        return out
                    return entry.fn(x, t)
    primals, tangents = tuple(primals), tuple(tangents)
    kern = _cached(fun, "hvp", signature, stabilize, argnums=tuple(range(len(primals))))
    if len(primals) == len(tangents) and all(
            type(p) is np.ndarray and type(t) is np.ndarray and p.shape == t.shape
            for p, t in zip(primals, tangents)):  # plain arrays: no pytree to check or rebuild
        kern.refresh()
        if len(primals) == 1:
            if stabilize is True:  # found by the lookup above from now on
                _remember(fun, "__symgrad_hvp1__", signature, kern)
            shape = primals[0].shape
            plain = kern.plain_entries.get(shape)
            if plain is None:
                plain = kern.plain_entries[shape] = _plain_call(kern.entry_for(primals), shape)
            return plain[0].fn(*primals, *tangents)
        key = tuple(p.shape for p in primals)
        entry = kern.plain_entries.get(key)
        if entry is None:
            entry = kern.plain_entries[key] = kern.entry_for(primals)
        return entry.fn(*primals, *tangents)
    _check_tangents("hvp", fun, primals, tangents)
    entry = kern.entry_for(primals)
    p_leaves, in_tree = tree_flatten(primals)
    t_leaves, _ = tree_flatten(tangents)
    flat = run_entry(entry, [*p_leaves, *t_leaves], _fn_name(fun))
    flat = [flat] if len(p_leaves) == 1 else list(flat)
    out = tree_unflatten(in_tree, flat)
    return out[0] if len(primals) == 1 else out


_ndarray, _empty = np.ndarray, np.empty
_F64 = np.dtype(np.float64)  # the dtype object of every native float64 array
_NO_KERNELS: dict = {}


def _table(fun, attr: str) -> dict:
    """The dict kept on ``fun`` as ``fun.<attr>`` (created on first use); a dict kept nowhere for a
    callable that takes no attributes (a bound method: its calls then compile again)."""
    table = getattr(fun, attr, None)
    if type(table) is not dict:
        table = {}
        try:
            setattr(fun, attr, table)
        except (AttributeError, TypeError):
            pass
    return table


def _remember(fun, attr: str, key, value) -> None:
    """``fun.<attr>[key] = value`` (see :func:`_table`)."""
    _table(fun, attr)[key] = value


def _plain_call(entry, shape: tuple) -> tuple:
    """``(entry, core, strides)`` for ``hvp``'s calls with one float64 array of ``shape``.

    ``core`` is the generated module's ``<name>_f64_entry`` (the float64 core's compiled overload for
    C-contiguous arrays, see ``symgrad.emit.module._array_fast_path``), called as ``core(x, v, out)``,
    when that is exactly what the entry point's fast path does for these arguments: ``shape`` is
    the kernel's core shape (no batch), the kernel takes no constants and returns one array, and
    the module serves calls itself (not a tier still compiling); else None, and calls go to
    ``entry.fn``.  ``strides`` are those of a C-contiguous float64 array of ``shape``.
    """
    core, fn = None, entry.fn
    module = getattr(fn, "__globals__", None)
    if entry.tiered is None and module is not None and shape != ():
        spec = module.get(spec_name(fn.__name__))
        if (spec is not None and not spec.consts and tuple(spec.in_cores) == (tuple(shape),) * 2
                and tuple(spec.out_cores) == (tuple(shape),)):
            core = module.get(f"{fn.__name__}_f64_entry")
            core = getattr(core, "resolve", lambda: core)()  # compiled on first use (compile.cache)
    return entry, core, c_strides(shape)


def hessian_vector_product(fun, argnums=0, signature: str | None = None, *, stabilize: bool = True,
                           tiered: bool | None = None):
    """A compiled Hessian-vector product of ``fun``, built once and called many times.

    ``h = hessian_vector_product(f)`` gives ``h(x, v) = H_f(x) @ v``, the same numbers as
    ``hvp(f, (x,), (v,))`` without looking the kernel up on every call: what a JAX user writes
    as ``jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])``, with autograd's calling
    convention (``autograd.hessian_vector_product``): the function's arguments, then one tangent
    per differentiated argument.

    Args:
      fun: function with one scalar core output.
      argnums: int, or tuple of ints: the arguments the Hessian is taken with respect to.
        ``h(*args, v)`` for an int; ``h(*args, v_0, v_1, ...)`` (one tangent per argnum, shaped
        like that argument, pytrees allowed) for a tuple, which then returns a tuple.
      signature, stabilize, tiered: as for :func:`jit`.
    Returns:
      Callable returning, per differentiated argument, the product shaped like that argument
      (``batch + core`` with a signature: one product per batch element).
    Raises:
      TypeError: ``argnums`` is not an int or tuple of ints; at call time, no tangents were given.
      ValueError: a tangent's pytree structure differs from its argument's.

    Reference: Pearlmutter, "Fast exact multiplication by the Hessian" (1994): forward over
    reverse, a small constant times the cost of ``fun``; the Hessian is never formed.

    >>> import numpy as np, symgrad
    >>> h = symgrad.hessian_vector_product(lambda x: np.sum(x ** 3), signature="(n)->()")
    >>> h(np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    return HvpCallable(fun, argnums, signature, stabilize=stabilize, tiered=tiered).public
