"""``numpy.linalg`` functions while tracing: norm, det, slogdet, inv, solve, cholesky, eigh, lstsq.

Each builder maps one NumPy call onto the primitives of :mod:`symgrad.ir.rules.linalg`
and :mod:`symgrad.ir.rules.norms`.  Arguments are one core matrix each (give a
gufunc signature such as ``"(n,n)->()"``; NumPy's stacked ``(..., n, n)`` inputs
are the batch axes of that signature).  Options NumPy has but symgrad cannot
differentiate raise :class:`UnsupportedOperationError` naming them.

Shapes (core shapes; float32 or float64): ``det``/``slogdet`` (n, n) -> () and ((), ());
``inv``/``cholesky`` (n, n) -> (n, n); ``solve`` (n, n), (n,) or (n, k) -> like b; ``eigh``
(n, n) -> ((n,), (n, n)), eigenvalues ascending; ``lstsq`` (m, n), (m,) or (m, k) with m >= n ->
(n,) or (n, k) and three placeholders for the residuals, rank and singular values.

Raises:
  UnsupportedOperationError: a core that is not one matrix (e.g. the default scalar cores), an
    option symgrad does not differentiate (``eigh(UPLO='U')``, ``lstsq(rcond=...)``,
    ``cholesky(upper=True)``, matrix norms other than Frobenius, vector ``ord`` other than
    None/1/2/inf/-inf), or a use of ``lstsq``'s residuals, rank or singular values.
  ValueError: shapes that do not match (``solve`` with a b of the wrong length; ``lstsq`` with
    m < n, whose minimum-norm solution has no rule here).
  numpy.linalg.LinAlgError: at run time, from the compiled kernel, for a singular matrix (or, for
    cholesky, one not positive definite) and for NaN or inf entries.

``norm`` conventions at kinks (JAX's values where JAX is finite):

* ``ord=None/2/'fro'`` at ``x = 0``: gradient 0 (JAX gives NaN there; 0 is the
  minimum-norm subgradient).  Every higher derivative at 0 is 0 too.
* ``ord=1``: ``d|x_i|/dx_i = +1`` at ``x_i = 0`` (JAX's ``abs``).
* ``ord=inf/-inf``: see :mod:`symgrad.ir.rules.norms` (ties split equally).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..errors import UnsupportedOperationError, format_error, user_location
from .numpy_core import as_tracer
from .tracer import Tracer

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


def _unsupported(what: str, do_instead: str):
    return UnsupportedOperationError(format_error(
        f"numpy.linalg.{what} has no symgrad rule", "symgrad differentiates only the forms listed in "
        "symgrad.trace.linalg_api", do_instead, user_location(3)))


def _matrix(ctx, a, name: str) -> Tracer:
    a = as_tracer(ctx, a)
    if a.ndim != 2:
        raise _unsupported(f"{name} of a core of shape {a.shape}",
                           f'give {name} one (n, n) matrix per core, e.g. signature="(n,n)->()"; stacked '
                           "matrices are the signature's batch axes")
    return a


def _rhs(ctx, b, name: str) -> Tracer:
    b = as_tracer(ctx, b)
    if b.ndim not in (1, 2):
        raise _unsupported(f"{name} with a right-hand side of core shape {b.shape}",
                           "pass b of core shape (n,) or (n, k)")
    return b


def _reject(name: str, given: dict, **defaults) -> None:
    for key, value in given.items():
        if key not in defaults or not _same(value, defaults[key]):
            raise _unsupported(f"{name}(..., {key}={value!r})", f"call numpy.linalg.{name} without {key}=")


def _same(a, b) -> bool:
    return a is b or (isinstance(a, str) and a == b)


def det(ctx, a):
    return ctx.apply("det", _matrix(ctx, a, "det"))


def slogdet(ctx, a):
    a = _matrix(ctx, a, "slogdet")
    return SlogdetResult(ctx.apply("slogdet_sign", a), ctx.apply("slogdet_logabs", a))


def inv(ctx, a):
    return ctx.apply("inv", _matrix(ctx, a, "inv"))


def matrix_power(ctx, a, n):
    """``np.linalg.matrix_power(a, n)`` for a constant integer ``n``: binary powering with ``@``
    (as NumPy computes it), the inverse first for ``n < 0``; ``n = 0`` is the identity.

    Raises:
      TypeError: ``n`` is not an integer.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(format_error(f"np.linalg.matrix_power: the exponent must be a constant integer; got {n!r}",
                                     "a matrix power is defined here by repeated products",
                                     "pass an int (a traced or fractional power has no rule)", user_location(3)))
    a = _matrix(ctx, a, "matrix_power")
    n = int(n)
    if n == 0:
        return as_tracer(ctx, np.eye(a.shape[0]))
    base = inv(ctx, a) if n < 0 else a
    result, n = None, abs(n)
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def solve(ctx, a, b):
    return ctx.apply("solve", _matrix(ctx, a, "solve"), _rhs(ctx, b, "solve"))


def cholesky(ctx, a, **kw):
    _reject("cholesky", kw, upper=False)
    return ctx.apply("cholesky", _matrix(ctx, a, "cholesky"))


def eigh(ctx, a, UPLO="L"):
    if UPLO != "L":
        raise _unsupported(f"eigh(..., UPLO={UPLO!r})", "symmetrise the matrix and use the default UPLO='L'")
    a = _matrix(ctx, a, "eigh")
    return EighResult(ctx.apply("eigh_w", a), ctx.apply("eigh_v", a))


def eigvalsh(ctx, a, UPLO="L"):
    return eigh(ctx, a, UPLO).eigenvalues


def lstsq(ctx, a, b, rcond=None):
    """Only the solution is traced: ``lstsq(A, b)[0]``; the residuals, rank and singular values are not."""
    if rcond is not None:
        raise _unsupported(f"lstsq(..., rcond={rcond!r})", "use the default rcond=None")
    a, b = _matrix(ctx, a, "lstsq"), _rhs(ctx, b, "lstsq")
    x = ctx.apply("lstsq", a, b)
    return (x, _NotTraced("residuals"), _NotTraced("rank"), _NotTraced("singular values"))


class _NotTraced:
    """A placeholder for an lstsq result symgrad does not compute; using it raises."""

    def __init__(self, what: str):
        self.what = what

    def _fail(self, *args, **kwargs):
        raise _unsupported(f"lstsq's {self.what}", "use only the solution, lstsq(A, b)[0]; compute the "
                           "residuals as np.sum((A @ x - b) ** 2)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __getitem__ = _fail
    __array_ufunc__ = __array_function__ = _fail
    __float__ = __index__ = __bool__ = __len__ = __iter__ = _fail


# -- norm -------------------------------------------------------------------------------------

def _sum(ctx, x: Tracer, axes: tuple[int, ...]) -> Tracer:
    return ctx.apply("sum", x, params=(axes,))


def _two_norm(ctx, x: Tracer, axes) -> Tracer:
    """sqrt(sum x^2), with value and every derivative 0 at x = 0 (the untaken sqrt branch is never differentiated)."""
    s = _sum(ctx, ctx.apply("mul", x, x), axes)
    return ctx.apply("where", ctx.apply("eq", s, 0.0), 0.0, ctx.apply("sqrt", s))  # NaN stays NaN


def _vector_norm(ctx, x: Tracer, ord, axis: int) -> Tracer:
    if ord is None or (ord == 2 and not isinstance(ord, str)):
        return _two_norm(ctx, x, (axis,))
    if ord == 1 and not isinstance(ord, str):
        return _sum(ctx, ctx.apply("where", ctx.apply("ge", x, 0.0), x, ctx.apply("neg", x)), (axis,))
    if ord in (np.inf, -np.inf):
        return ctx.apply("norm_inf", x, params=(axis, "max" if ord > 0 else "min"))
    raise _unsupported(f"norm(..., ord={ord!r}) of a vector", "use ord=None, 1, 2, inf or -inf, or write the "
                       "p-norm as np.sum(np.abs(x) ** p) ** (1 / p)")


def norm(ctx, x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``: vector ord None/1/2/inf/-inf, matrix ord None/'fro'; ``axis`` and ``keepdims``."""
    x = as_tracer(ctx, x)
    if x.ndim == 0:
        raise _unsupported("norm of a scalar core", 'give a gufunc signature, e.g. signature="(n)->()"')
    if axis is None:
        axes = tuple(range(x.ndim))
        if ord is not None and x.ndim > 2:
            raise ValueError("norm: improper number of dimensions to norm (ord needs a 1-D or 2-D array)")
    else:
        axes = tuple(int(a) % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    if ord is None and axis is None:
        out = _two_norm(ctx, x, axes)
    elif len(axes) == 1:
        out = _vector_norm(ctx, x, ord, axes[0])
    elif len(axes) == 2 and axes[0] != axes[1] and (ord is None or ord == "fro"):
        out = _two_norm(ctx, x, tuple(sorted(axes)))
    elif len(axes) == 2:
        raise _unsupported(f"norm(..., ord={ord!r}) of a matrix", "use ord='fro' (or None), or a vector "
                           "norm along one axis")
    else:
        raise ValueError(f"norm: axis {axis!r} names more than two axes")
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        out = ctx.apply("reshape", out, params=(shape,))
    return out


FUNCTIONS = {
    np.linalg.norm: norm, np.linalg.det: det, np.linalg.slogdet: slogdet, np.linalg.inv: inv,
    np.linalg.solve: solve, np.linalg.cholesky: cholesky, np.linalg.eigh: eigh,
    np.linalg.eigvalsh: eigvalsh, np.linalg.lstsq: lstsq, np.linalg.matrix_power: matrix_power,
}
