"""Sparse Jacobians and Hessians whose pattern is read from the traced graph.

``jacobian_sparsity`` / ``hessian_sparsity`` return the exact structural
pattern (no sampling: see :mod:`symgrad.transforms.sparsity`).
``jacobian(f, sparse=True)`` / ``hessian(f, sparse=True)`` return callables
giving ``scipy.sparse.csr_array`` results that compute only the structural
nonzeros: the pattern's columns are coloured (:mod:`symgrad.transforms.colouring`)
and one compiled JVP (Jacobians) or Hessian-vector product (Hessians) is called
once with a batch of ``ncolours`` seed vectors; the nonzeros are read out of the
compressed product with precomputed index arrays (Curtis, Powell & Reid 1974;
Gebremedhin, Manne & Pothen, SIAM Review 47, 2005).  Programs written with scalar loops skip
the colouring: each nonzero is its own node (:mod:`symgrad.transforms.entries`).

Shapes: the differentiated argument (``argnums``, one array) has core shape I
and the (single) output core shape O; matrices have shape
``(prod(O), prod(I))`` with both cores flattened in C order.  With
``signature=None`` every argument's core is its whole shape (JAX's model),
since a sparse Jacobian of an elementwise map over scalar cores is just a
vector of derivatives; with a gufunc signature extra leading dimensions are
batch dimensions and the result is a list of matrices, one per batch element
in C order.  Patterns and colourings are computed once per core shapes and
cached on the callable.

SciPy is needed (``pip install scipy``); it is imported on first use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import SignatureError, format_error
from ..trace.pytree import tree_flatten
from ..trace.signature import parse_signature
from ..trace.captures import Captures
from ..trace.trace import trace_program
from ..transforms.colouring import SYMMETRIC, Recovery, colour_columns, colour_symmetric
from ..transforms.entries import (forward_cost, gradient_program, pattern_of, reverse_cost,
                                  scalar_program, symmetrised)
from ..transforms.sparsity import hessian_pattern, jacobian_pattern
from .argnums import normalize_argnums
from .seeded import seeded_kernel
from .sparse_direct import Direct, build_direct, direct_data

__all__ = ["jacobian_sparsity", "hessian_sparsity", "SparseJacobian", "SparseHessian"]

FORMATS = ("csr_array", "csr_matrix")
METHODS = ("auto", "direct", "colouring")


def _sparse():
    try:
        import scipy.sparse as sparse
    except ImportError as exc:  # pragma: no cover - scipy is in the test extra
        raise ImportError("symgrad's sparse Jacobians and Hessians need SciPy: pip install scipy") from exc
    return sparse


@dataclass
class _Plan:
    """Everything computed once per core shapes: pattern, colouring, recovery, traced program, kernel."""

    pattern: object
    recovery: Recovery
    program: object
    cores: list
    k: int  # position of the differentiated argument
    mode: str  # seeded kernel: "jvp" (column colours), "vjp" (row colours) or "hvp"
    kernel: object = None  # compiled ``fn(*args, seeds)`` (``fn(*args)`` for "direct"), built on first use
    seeds: dict = field(default_factory=dict)  # dtype -> seed vectors, shape (ncolours,) + core
    direct: object = None  # Direct when the program is scalar-level (mode "direct" if chosen)


def _float_dtype(a):
    """float32 for float32 arguments, float64 otherwise (symgrad's dtype rule)."""
    return np.float32 if np.asarray(a).dtype == np.float32 else np.float64


def _name(fun) -> str:
    return str(getattr(fun, "__name__", "function"))


def _check_args(fun, args, argnums, what):
    args = tuple(args)
    for i, a in enumerate(args):
        _, tree = tree_flatten(a)
        if tree.kind != "leaf":
            raise TypeError(format_error(
                f"{what} of {_name(fun)}: argument {i} is a {tree.kind}, not an array",
                "sparse Jacobians and Hessians are matrices over one array argument",
                "pass each argument as one numpy array (np.concatenate the parts, then split inside)"))
    if not isinstance(argnums, (int, np.integer)) or isinstance(argnums, bool):
        raise TypeError(format_error(
            f"{what} of {_name(fun)}: argnums must be one int for sparse results; got {argnums!r}",
            "a sparse result is one matrix, over one argument", "call once per argument"))
    (k,), _ = normalize_argnums(argnums, len(args), _name(fun))
    return args, k


def _cores(fun, args, signature, what):
    shapes = [np.shape(a) for a in args]
    sig = parse_signature(signature, _name(fun))
    if sig is None:
        return shapes
    cores, _ = sig.bind(shapes, _name(fun))
    return [tuple(c) for c in cores]


def _trace(fun, args, cores, what):
    program = trace_program(fun, args, cores)
    if len(program.outputs) != 1:
        raise SignatureError(format_error(
            f"{what} of {_name(fun)}: the function returns {len(program.outputs)} outputs",
            "a sparse result is one matrix, for one output array",
            "return one array (np.concatenate the outputs)"))
    return program


def jacobian_sparsity(fun, *example_args, argnums: int = 0, signature: str | None = None):
    """The exact structural pattern of the Jacobian of ``fun`` w.r.t. argument ``argnums``.

    Args:
      fun: function of arrays returning one array.
      *example_args: arguments; only their shapes are used (nothing is evaluated).
      argnums: index of the differentiated argument (one array).
      signature: gufunc signature giving the core shapes; None: each argument's whole shape.
    Returns:
      ``scipy.sparse.csr_array`` of dtype bool, shape ``(prod(out_core), prod(in_core))``
      (C order). ``True`` marks a structural nonzero: an entry that is zero there is zero at
      every input; a marked entry may still be zero at some inputs.
    Raises:
      TypeError: an argument is a pytree, or ``argnums`` is not one int.
      SignatureError: ``fun`` returns several outputs, or a bad signature.
      TraceError, UnsupportedOperationError: from tracing ``fun``.

    >>> import numpy as np, symgrad as sg
    >>> sg.jacobian_sparsity(lambda x: x[1:] * x[:-1], np.zeros(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    args, k = _check_args(fun, example_args, argnums, "jacobian_sparsity")
    cores = _cores(fun, args, signature, "jacobian_sparsity")
    program = _trace(fun, args, cores, "jacobian_sparsity")
    return jacobian_pattern(program.graph, [program.inputs[k]], program.outputs)[0]


def hessian_sparsity(fun, *example_args, argnums: int = 0, signature: str | None = None):
    """The exact structural pattern of the Hessian of scalar-valued ``fun`` (symmetric).

    Read from the gradient program symgrad builds, so ``stop_gradient`` and
    ``custom_gradient`` rules are honoured.  Arguments as in :func:`jacobian_sparsity`.

    Returns:
      ``scipy.sparse.csr_array`` of dtype bool, shape ``(n, n)`` with ``n = prod(in_core)``.
    Raises:
      SignatureError: the output is not a scalar core.
      As :func:`jacobian_sparsity` otherwise.

    >>> import numpy as np, symgrad as sg
    >>> rosen = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> sg.hessian_sparsity(rosen, np.zeros(4), signature="(n)->()").toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    args, k = _check_args(fun, example_args, argnums, "hessian_sparsity")
    cores = _cores(fun, args, signature, "hessian_sparsity")
    program = _trace(fun, args, cores, "hessian_sparsity")
    return _hessian_pattern_of(program, k, "hessian_sparsity")


def _hessian_pattern_of(program, k, what):
    _check_scalar_output(program, what)
    return hessian_pattern(program.graph, program.outputs[0], [program.inputs[k]])


def _check_scalar_output(program, what):
    g, y = program.graph, program.outputs[0]
    if g.shape(y) != ():
        raise SignatureError(format_error(
            f"{what} of {program.name}: the output has core shape {g.shape(y)}, not ()",
            "a Hessian is defined for a scalar function", "reduce the output (np.sum), or give a signature "
            "whose output core is ()"))


class _SparseDerivative:
    """Shared machinery of :class:`SparseJacobian` and :class:`SparseHessian`."""

    what = ""

    def __init__(self, fun, argnums=0, signature=None, *, stabilize=True, format="csr_array", method="auto"):
        if not callable(fun):
            raise TypeError(f"expected a callable to differentiate; got {type(fun).__name__}")
        if format not in FORMATS:
            raise ValueError(format_error(f"{self.what}: unknown format {format!r}",
                                          "sparse results are SciPy CSR arrays or matrices",
                                          f"use one of {FORMATS}"))
        if method not in METHODS:
            raise ValueError(format_error(f"{self.what}: unknown method {method!r}",
                                          "entries come from the graph directly or from a colouring",
                                          f"use one of {METHODS}"))
        self.fun, self.argnums, self.signature = fun, argnums, signature
        self.stabilize, self.format, self.method = stabilize, format, method
        parse_signature(signature, _name(fun))  # report a bad signature now
        self._plans: dict = {}
        self._captures: Captures | None = None  # what the traces read from outside the arguments
        self.__doc__ = f"symgrad.{self.what} of {_name(fun)} (sparse; compiled on first call)"

    def plan(self, *args) -> _Plan:
        """Pattern, colouring and recovery arrays for arguments shaped like ``args`` (cached)."""
        args, k = _check_args(self.fun, args, self.argnums, self.what)
        cores = _cores(self.fun, args, self.signature, self.what)
        key = tuple(cores)
        if self._captures is not None and self._captures.changed():  # a global the trace read changed
            self._plans.clear()
        plan = self._plans.get(key)
        if plan is None:
            if not self._plans:
                self._captures = Captures(self.fun)
            program = _trace(self.fun, args, cores, self.what)
            direct, pattern = self._direct(program, k)
            if pattern is None:
                pattern = self._pattern(program, k)
            recovery, mode = self._colour(pattern)
            if direct is not None and (self.method == "direct" or direct.cost <= direct.terms * recovery.ncolours):
                mode = "direct"
            plan = self._plans[key] = _Plan(pattern, recovery, program, cores, k, mode, direct=direct)
        return plan

    def _direct(self, program, k):
        """``(Direct, pattern)`` when the program is scalar-level (``method`` allowing), else ``(None, None)``."""
        if self.method == "colouring":
            return None, None
        g, x, y = program.graph, program.inputs[k], program.outputs[0]
        scalar, why = scalar_program(g, x, y)
        if scalar is None:
            if self.method == "direct":
                raise ValueError(format_error(
                    f"{self.what}(method='direct') of {program.name}: the program is not scalar-level: it has {why}",
                    "the direct path needs every value computed from the argument to be a scalar "
                    "(loops over x[i]) or an element rearrangement (indexing, reshape, stack)",
                    "use method='auto' or 'colouring' (compressed sweeps), or write the function with scalar loops"))
            return None, None
        scalar, pattern = self._scalar_structure(g, scalar, y)
        cols = scalar.column_sets()
        fwd, rev = forward_cost(scalar, cols), reverse_cost(scalar)
        terms = sum(len(t) for t in scalar.terms.values())
        direct = Direct(scalar, "forward" if fwd <= rev else "reverse", min(fwd, rev), terms)
        return direct, self._direct_pattern(pattern_of(scalar, len(scalar.out_refs), cols))

    def _scalar_structure(self, g, scalar, y):
        return scalar, None

    @staticmethod
    def _direct_pattern(pattern):
        return pattern

    def pattern(self, *args):
        """The structural pattern (bool ``csr_array``) used for arguments shaped like ``args``."""
        return self.plan(*args).pattern

    def info(self, *args) -> dict:
        """``{"shape", "nnz", "ncolours", "mode"}`` for arguments shaped like ``args``.

        ``mode``: ``"direct"`` (entries computed one by one from the graph, no colours: ``ncolours`` is
        0), ``"jvp"``/``"vjp"`` (column/row colouring, compressed forward/reverse sweep) or ``"hvp"``.
        """
        plan = self.plan(*args)
        rec = plan.recovery
        return {"shape": rec.shape, "nnz": rec.nnz, "ncolours": 0 if plan.mode == "direct" else rec.ncolours,
                "mode": plan.mode}

    def __call__(self, *args):
        plan = self.plan(*args)
        rec, k = plan.recovery, plan.k
        x = np.asarray(args[k])
        dtype = _float_dtype(x)
        core = plan.cores[k]
        batch = x.shape[:x.ndim - len(core)]
        nbatch = math.prod(batch)
        if plan.mode == "direct":
            if plan.kernel is None:
                self._build_direct(plan)
            return self._direct_result(plan, args, dtype, nbatch, batch)
        if rec.ncolours == 0:
            compressed = np.zeros((nbatch, 0, 0), dtype=dtype)
        else:
            if plan.kernel is None:
                self._build_kernel(plan)
                rec = plan.recovery
            seeds = plan.seeds.get(dtype)
            if seeds is None:
                seed_core = plan.program.graph.shape(plan.program.outputs[0]) if plan.mode == "vjp" else core
                seeds = plan.seeds[dtype] = rec.seeds(dtype).reshape((rec.ncolours,) + seed_core)
            size = rec.shape[1] if plan.mode == "vjp" else rec.shape[0]
            compressed = np.asarray(plan.kernel(*args, seeds)).reshape(nbatch, rec.ncolours, size)
        mats = [self._matrix(rec, compressed[b]) for b in range(nbatch)]
        return mats if batch else mats[0]

    def _build_kernel(self, plan: _Plan) -> None:
        try:
            plan.kernel = seeded_kernel(plan.program, plan.k, plan.recovery.ncolours, plan.mode, self.stabilize)
        except NotImplementedError:  # a reverse pass this program cannot take (custom_gradient rules)
            if plan.mode != "vjp":
                raise
            plan.recovery, plan.mode = Recovery(plan.pattern, colour_columns(plan.pattern)), "jvp"
            plan.kernel = seeded_kernel(plan.program, plan.k, plan.recovery.ncolours, "jvp", self.stabilize)

    def _build_direct(self, plan: _Plan) -> None:
        """Build the entry nodes (sparse forward or reverse over the scalar nodes) and their kernel."""
        build_direct(plan, self.what, self._direct_entries, self.stabilize)

    @staticmethod
    def _direct_entries(entries):
        return entries

    def _direct_result(self, plan: _Plan, args, dtype, nbatch, batch):
        sparse = _sparse()
        cls = sparse.csr_array if self.format == "csr_array" else sparse.csr_matrix
        mats = [cls((d, plan.recovery.indices, plan.recovery.indptr), shape=plan.recovery.shape)
                for d in direct_data(plan, args, dtype, nbatch)]
        return mats if batch else mats[0]

    def _matrix(self, rec: Recovery, compressed_t):
        sparse = _sparse()
        cls = sparse.csr_array if self.format == "csr_array" else sparse.csr_matrix
        return cls((rec.data(compressed_t), rec.indices, rec.indptr), shape=rec.shape)


class SparseJacobian(_SparseDerivative):
    """``jacobian(fun, sparse=True)``: callable returning the Jacobian as a SciPy CSR matrix.

    Calling it with the function's arguments returns a ``csr_array`` (or ``csr_matrix`` with
    ``format="csr_matrix"``) of shape ``(prod(out_core), prod(in_core))``, or a list of them (one per
    batch element, C order) when the arguments have batch dimensions under a gufunc signature.
    Only structural nonzeros are computed: one compiled forward pass carrying one seed per colour
    of the columns, or one reverse pass carrying one seed per colour of the rows when that needs
    fewer colours (a dense row, such as a sum over all unknowns, puts every column in one conflict);
    see :mod:`symgrad.api.seeded`.
    A scalar-level program (written with scalar loops over ``x[i]``) instead gets one compiled
    statement per structural nonzero, straight from the graph, with no colouring (``mode``
    ``"direct"``; :mod:`symgrad.transforms.entries`): chosen by ``method="auto"`` when its
    multiply-adds do not exceed the colouring's (terms x ncolours), forced by ``method="direct"``
    (a ``ValueError`` naming the first array operation if the program is not scalar-level) or
    avoided by ``method="colouring"``.
    ``.pattern(*args)`` and ``.info(*args)`` give the pattern and ``{"shape", "nnz", "ncolours",
    "mode"}`` (mode ``"direct"``, ``"jvp"`` or ``"vjp"``).
    Raises as :func:`jacobian_sparsity`, and at call time as compiled functions do
    (``ShapeError``, ``DTypeError``).
    """

    what = "jacobian"

    def _pattern(self, program, k):
        return jacobian_pattern(program.graph, [program.inputs[k]], program.outputs)[0]

    @staticmethod
    def _colour(pattern):
        """Column colours (forward passes) unless colouring the rows (reverse passes) needs fewer."""
        cols = colour_columns(pattern)
        rows = colour_columns(pattern.T)
        if len(rows) and (not len(cols) or rows.max() < cols.max()):
            return Recovery(pattern, rows, by="rows"), "vjp"
        return Recovery(pattern, cols), "jvp"


class SparseHessian(_SparseDerivative):
    """``hessian(fun, sparse=True)``: callable returning the Hessian as a SciPy CSR matrix.

    Like :class:`SparseJacobian` for a scalar-core output; the compressed product is one compiled
    forward-over-reverse pass (Pearlmutter 1994) carrying ``ncolours`` tangents.
    The pattern is symmetric and so is the result up to rounding (each entry is computed once,
    from its column's colour).  ``colouring="star"`` (default: direct recovery, each entry read
    from one place of the product) or ``"acyclic"`` (fewer or as many colours, entries recovered
    by substitution along two-coloured trees; Gebremedhin, Tarafdar, Manne & Pothen, SIAM J. Sci.
    Comput. 29, 2007); either falls back to the distance-2 column colouring when that needs fewer
    colours or the recovery check fails.  Scalar-level programs take the direct path
    (``method``) and use no colouring.
    """

    what = "hessian"

    def __init__(self, fun, argnums=0, signature=None, *, stabilize=True, format="csr_array", method="auto",
                 colouring="star"):
        if colouring not in SYMMETRIC:
            raise ValueError(format_error(f"hessian: unknown colouring {colouring!r}",
                                          "a Hessian's symmetric pattern is star or acyclic coloured",
                                          f"use one of {SYMMETRIC}"))
        self.colouring = colouring
        super().__init__(fun, argnums, signature, stabilize=stabilize, format=format, method=method)

    def _pattern(self, program, k):
        return _hessian_pattern_of(program, k, self.what)

    def _direct(self, program, k):
        _check_scalar_output(program, self.what)
        return super()._direct(program, k)

    def _scalar_structure(self, g, scalar, y):
        return gradient_program(g, scalar), None

    @staticmethod
    def _direct_pattern(pattern):
        sym = (pattern + pattern.T).tocsr().astype(bool)
        sym.sort_indices()
        return sym

    @staticmethod
    def _direct_entries(entries):
        return symmetrised(entries)

    def _colour(self, pattern):
        return colour_symmetric(pattern, self.colouring)[1], "hvp"
