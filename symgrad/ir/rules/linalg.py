"""Linear-algebra primitives on small core matrices: inv, solve, det, slogdet, cholesky, eigh, lstsq.

Each op is one block: shape rule, NumPy reference and derivative rules; its Numba
printer (Numba's own ``np.linalg``, which calls SciPy's LAPACK at run time) is in
:mod:`symgrad.emit.lowering.linalg`.
The rules are written with graph ops only (``contract``, ``transpose``, the
elementwise ops and the primitives of this file), so their derivatives are
again derivative rules: Hessians and forward-over-reverse work through them.

Tangents and cotangents carry ``nb`` (0 or 1) leading batch axes (the identity
seed of a Jacobian pass).  Contractions take the batch letter ``Z`` directly;
a solve with a batched right-hand side moves the batch axis into the columns
of the right-hand side (:func:`solve_batched`).

Sources: Giles, "An extended collection of matrix derivative results for
forward and reverse mode algorithmic differentiation" (2008), sections 2.2-2.3
(inverse, determinant, linear solve) and 3.1 (symmetric eigendecomposition,
distinct eigenvalues; also Magnus, "On differentiating eigenvalues and
eigenvectors", Econometric Theory 1, 1985); Murray, "Differentiation of the
Cholesky decomposition" (2016), eq. 8-10, for the Cholesky factor.

Conventions (the same as JAX's, so values and derivatives agree with it):

* ``cholesky`` and ``eigh`` read only the lower triangle of ``A`` (NumPy), and
  their derivatives treat ``A`` as symmetric: a perturbation ``dA`` enters as
  ``(dA + dA^T) / 2`` and the cotangent of ``A`` is symmetric.
* ``eigh`` derivatives need distinct eigenvalues (a repeated eigenvalue gives
  inf/NaN, as in JAX); eigenvectors are defined up to sign, so only
  sign-invariant functions of them have a derivative independent of LAPACK.
* ``det``, ``slogdet``, ``inv``, ``solve`` need an invertible ``A`` for the
  derivative (Numba raises ``numpy.linalg.LinAlgError`` otherwise, as NumPy does
  for the value).
* ``lstsq`` differentiates the solution of a full-column-rank problem
  (``m >= n``) through the normal equations ``A^T A x = A^T b``.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ...errors import UnsupportedOperationError
from ..graph import Graph
from ..ops import OpDef, register

# -- shape rules ---------------------------------------------------------------------------


def _square(op: str, node) -> int:
    if len(node.shape) != 2 or node.shape[0] != node.shape[1]:
        raise ValueError(f"{op} needs a square core matrix (n, n); got shape {node.shape}")
    return node.shape[0]


def _infer_square_same(op):
    def infer(nodes, params):
        _square(op, nodes[0])
        return nodes[0].shape, "f"
    return infer


def _infer_square_scalar(op):
    def infer(nodes, params):
        _square(op, nodes[0])
        return (), "f"
    return infer


def _infer_rhs(op, rows_of):
    """Shape rule of ``op(A, B)``: B is (m,) or (m, k) with m = ``rows_of(A)``; result (n,) or (n, k)."""
    def infer(nodes, params):
        a, b = nodes
        if len(a.shape) != 2:
            raise ValueError(f"{op} needs a core matrix A; got shape {a.shape}")
        m, n = rows_of(op, a)
        if len(b.shape) not in (1, 2) or b.shape[0] != m:
            raise ValueError(f"{op}: B must have shape ({m},) or ({m}, k) to match A {a.shape}; got {b.shape}")
        return (n,) + b.shape[1:], "f"
    return infer


def _rows_square(op, a):
    n = _square(op, a)
    return n, n


def _rows_tall(op, a):
    m, n = a.shape
    if m < n:
        raise ValueError(f"{op}: only full-column-rank problems (m >= n) have a derivative rule; A is {a.shape}")
    return m, n


# -- NumPy references (SymPy matrices for object arrays: symgrad.trace(...).expr) --------------

def _objects(*arrays) -> bool:
    return any(np.asarray(a).dtype == object for a in arrays)


def _sym(a) -> sp.Matrix:
    a = np.asarray(a)
    return sp.Matrix(a if a.ndim == 2 else a.reshape(-1, 1))


def _back(m: sp.Matrix, shape) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    out.reshape(-1)[:] = list(m)
    return out


def _np_inv(a):
    return _back(_sym(a).inv(), np.shape(a)) if _objects(a) else np.linalg.inv(a)


def _np_det(a):
    return np.array(_sym(a).det(), dtype=object) if _objects(a) else np.linalg.det(a)


def _np_sign(a):
    return np.array(sp.sign(_sym(a).det()), dtype=object) if _objects(a) else np.linalg.slogdet(a)[0]


def _np_logabs(a):
    return np.array(sp.log(sp.Abs(_sym(a).det())), dtype=object) if _objects(a) else np.linalg.slogdet(a)[1]


def _np_solve(a, b):
    return _back(_sym(a).LUsolve(_sym(b)), np.shape(b)) if _objects(a, b) else np.linalg.solve(a, b)


def _np_cholesky(a):
    if _objects(a):
        m = _sym(a)  # NumPy reads the lower triangle only
        lower = sp.Matrix(m.rows, m.cols, lambda i, j: m[max(i, j), min(i, j)])
        return _back(lower.cholesky(hermitian=False), np.shape(a))
    return np.linalg.cholesky(a)


def _np_lstsq(a, b):
    if _objects(a, b):
        m = _sym(a)
        return _back((m.T * m).LUsolve(m.T * _sym(b)), (np.shape(a)[1],) + np.shape(b)[1:])
    return np.linalg.lstsq(a, b, rcond=None)[0]


def _np_eigh(which):
    def fn(a):
        if _objects(a):
            raise UnsupportedOperationError("symgrad has no closed form of numpy.linalg.eigh to display; "
                                            "use the compiled function for values")
        return np.linalg.eigh(a)[which]
    return fn


# -- graph helpers for the rules ----------------------------------------------------------------

def _z(nb: int) -> str:
    return "Z" if nb else ""


def _c(g: Graph, spec: str, x: int, y: int) -> int:
    return g.apply("contract", x, y, params=(spec,))


def _t(g: Graph, x: int, nb: int) -> int:
    """Transpose of the two core axes of ``x`` (batch axis first, if any)."""
    return g.apply("transpose", x, params=(tuple(range(nb)) + (nb + 1, nb),))


def _sym_part(g: Graph, x: int, nb: int) -> int:
    """(X + X^T) / 2 over the core axes."""
    return g.apply("mul", g.const(0.5), g.apply("add", x, _t(g, x, nb)))


def _sandwich(g: Graph, left: int, mid: int, right: int, nb: int, lt: bool = False, rt: bool = False) -> int:
    """``L M R`` (``L^T`` if ``lt``, ``R^T`` if ``rt``) with ``M`` batched and ``L``, ``R`` not."""
    z = _z(nb)
    lm = _c(g, f"{'ji' if lt else 'ij'},{z}jk->{z}ik", left, mid)
    return _c(g, f"{z}ik,{'lk' if rt else 'kl'}->{z}il", lm, right)


def solve_batched(g: Graph, a: int, r: int, nb: int) -> int:
    """``solve(A, R)`` for ``R`` of shape ``(Z,) * nb + (n,) + rest``: batch columns become RHS columns."""
    if not nb:
        return g.apply("solve", a, r)
    shape = g.shape(r)
    rank = len(shape)
    cols = int(np.prod(shape[2:], dtype=int)) * shape[0]
    moved = g.apply("transpose", r, params=(tuple(range(1, rank)) + (0,),))
    flat = g.apply("reshape", moved, params=((shape[1], cols),))
    x = g.apply("reshape", g.apply("solve", a, flat), params=(shape[1:] + shape[:1],))
    return g.apply("transpose", x, params=((rank - 1,) + tuple(range(rank - 1)),))


def _cols(g: Graph, b: int) -> str:
    """Index letter of the right-hand side's columns: '' for a vector B, 'c' for a matrix."""
    return "c" if len(g.shape(b)) == 2 else ""


# -- inv ------------------------------------------------------------------------------------------

def _jvp_inv(g, node, t, nb):
    """d(A^-1) = -A^-1 dA A^-1 (Giles 2008, sec. 2.2)."""
    return g.apply("neg", _sandwich(g, node.id, t[0], node.id, nb))


def _vjp_inv(g, node, ct, nb):
    """A_bar = -A^-T C A^-T (Giles 2008, sec. 2.2)."""
    return (g.apply("neg", _sandwich(g, node.id, ct, node.id, nb, lt=True, rt=True)),)


register(OpDef(
    statement=True,
    name="inv", infer=_infer_square_same("inv"), numpy=_np_inv,
    jvp=_jvp_inv, vjp=_vjp_inv, ref="Giles (2008) sec. 2.2: dC = -C dA C, A_bar = -C^T C_bar C^T",
))


# -- solve ------------------------------------------------------------------------------------------

def _jvp_solve(g, node, t, nb):
    """X = A^-1 B: dX = A^-1 (dB - dA X) (Giles 2008, sec. 2.3)."""
    (a, _b), (ta, tb) = node.args, t
    z, k = _z(nb), _cols(g, node.id)
    r = tb
    if ta is not None:
        da_x = _c(g, f"{z}ij,j{k}->{z}i{k}", ta, node.id)
        r = g.apply("neg", da_x) if r is None else g.apply("sub", r, da_x)
    return solve_batched(g, a, r, nb)


def _vjp_solve(g, node, ct, nb):
    """B_bar = A^-T X_bar, A_bar = -B_bar X^T (Giles 2008, sec. 2.3)."""
    a = node.args[0]
    z, k = _z(nb), _cols(g, node.id)
    b_bar = solve_batched(g, g.apply("transpose", a, params=((1, 0),)), ct, nb)
    a_bar = g.apply("neg", _c(g, f"{z}i{k},j{k}->{z}ij", b_bar, node.id))
    return a_bar, b_bar


register(OpDef(
    statement=True,
    name="solve", infer=_infer_rhs("solve", _rows_square), numpy=_np_solve,
    jvp=_jvp_solve, vjp=_vjp_solve,
    ref="Giles (2008) sec. 2.3: dX = A^-1 (dB - dA X); B_bar = A^-T X_bar, A_bar = -B_bar X^T",
))


# -- det and slogdet ---------------------------------------------------------------------------------

def _dlogdet(g, node, t, nb):
    """d log|det A| = tr(A^-1 dA) = sum_ij (A^-1)_ji dA_ij."""
    return _c(g, f"ji,{_z(nb)}ij->{_z(nb)}", g.apply("inv", node.args[0]), t[0])


def _logdet_bar(g, node, ct, nb):
    """C log|det A| with cotangent C: A_bar = C A^-T."""
    return _c(g, f"{_z(nb)},ji->{_z(nb)}ij", ct, g.apply("inv", node.args[0]))


register(OpDef(
    statement=True,
    name="det", infer=_infer_square_scalar("det"), numpy=_np_det,
    jvp=lambda g, node, t, nb: g.apply("mul", node.id, _dlogdet(g, node, t, nb)),
    vjp=lambda g, node, ct, nb: (_logdet_bar(g, node, g.apply("mul", ct, node.id), nb),),
    ref="Giles (2008) sec. 2.2: d det A = det A tr(A^-1 dA), A_bar = C det(A) A^-T",
))

register(OpDef(
    statement=True,
    name="slogdet_sign", infer=_infer_square_scalar("slogdet"), numpy=_np_sign,
    nondiff=True,
    kink="the sign of det A is piecewise constant: derivative 0 (its jump where det A = 0 is not differentiated)",
))

register(OpDef(
    statement=True,
    name="slogdet_logabs", infer=_infer_square_scalar("slogdet"), numpy=_np_logabs,
    jvp=_dlogdet, vjp=lambda g, node, ct, nb: (_logdet_bar(g, node, ct, nb),),
    ref="Giles (2008) sec. 2.2: d log|det A| = tr(A^-1 dA), A_bar = C A^-T",
))


# -- cholesky -------------------------------------------------------------------------------------------

def _phi_mask(g: Graph, n: int) -> int:
    """Murray's Phi as a mask: the lower triangle, with the diagonal halved."""
    return g.const(np.tril(np.ones((n, n))) - 0.5 * np.eye(n))


def _jvp_cholesky(g, node, t, nb):
    """dL = L Phi(L^-1 dA L^-T) with dA symmetrised (Murray 2016, eq. 8)."""
    n = node.shape[0]
    linv = g.apply("inv", node.id)
    m = _sandwich(g, linv, _sym_part(g, t[0], nb), linv, nb, rt=True)
    return _c(g, f"ij,{_z(nb)}jk->{_z(nb)}ik", node.id, g.apply("mul", m, _phi_mask(g, n)))


def _vjp_cholesky(g, node, ct, nb):
    """A_bar = sym(L^-T Phi(L^T L_bar) L^-1), the transpose of the JVP (Murray 2016, eq. 10)."""
    n = node.shape[0]
    linv = g.apply("inv", node.id)
    p = g.apply("mul", _c(g, f"ji,{_z(nb)}jk->{_z(nb)}ik", node.id, ct), _phi_mask(g, n))
    return (_sym_part(g, _sandwich(g, linv, p, linv, nb, lt=True), nb),)


register(OpDef(
    statement=True,
    name="cholesky", infer=_infer_square_same("cholesky"), numpy=_np_cholesky,
    jvp=_jvp_cholesky, vjp=_vjp_cholesky,
    ref="Murray (2016), Differentiation of the Cholesky decomposition, eq. 8-10",
))


# -- eigh (two primitives sharing the decomposition: eigenvalues w, eigenvectors V) ---------------------------

def _eig_parts(g: Graph, a: int):
    """(w, V, F) with F_ij = 1/(w_j - w_i) off the diagonal, 0 on it (JAX's eigh_jvp form)."""
    w, v = g.apply("eigh_w", a), g.apply("eigh_v", a)
    n = g.shape(w)[0]
    diff = g.apply("sub", g.apply("reshape", w, params=((1, n),)), g.apply("reshape", w, params=((n, 1),)))
    eye = g.const(np.eye(n))
    f = g.apply("sub", g.apply("div", g.const(1.0), g.apply("add", eye, diff)), eye)
    return w, v, f


def _jvp_eigh_w(g, node, t, nb):
    """dw_i = (V^T dA V)_ii (Giles 2008, sec. 3.1)."""
    _, v, _ = _eig_parts(g, node.args[0])
    k = _sandwich(g, v, _sym_part(g, t[0], nb), v, nb, lt=True)
    return _c(g, f"{_z(nb)}ij,ij->{_z(nb)}i", k, g.const(np.eye(node.shape[0])))


def _jvp_eigh_v(g, node, t, nb):
    """dV = V (F o (V^T dA V)) (Giles 2008, sec. 3.1)."""
    _, v, f = _eig_parts(g, node.args[0])
    k = _sandwich(g, v, _sym_part(g, t[0], nb), v, nb, lt=True)
    return _c(g, f"ij,{_z(nb)}jk->{_z(nb)}ik", v, g.apply("mul", f, k))


def _vjp_eigh_w(g, node, ct, nb):
    """A_bar = V diag(w_bar) V^T (Giles 2008, sec. 3.1), symmetric."""
    _, v, _ = _eig_parts(g, node.args[0])
    vd = _c(g, f"ij,{_z(nb)}j->{_z(nb)}ij", v, ct)
    return (_c(g, f"{_z(nb)}ij,kj->{_z(nb)}ik", vd, v),)


def _vjp_eigh_v(g, node, ct, nb):
    """A_bar = sym(V (F o (V^T V_bar)) V^T) (Giles 2008, sec. 3.1)."""
    _, v, f = _eig_parts(g, node.args[0])
    inner = g.apply("mul", f, _c(g, f"ji,{_z(nb)}jk->{_z(nb)}ik", v, ct))
    return (_sym_part(g, _sandwich(g, v, inner, v, nb, rt=True), nb),)


def _infer_eigh_w(nodes, params):
    return (_square("eigh", nodes[0]),), "f"


register(OpDef(
    statement=True,
    name="eigh_w", infer=_infer_eigh_w, numpy=_np_eigh(0),
    jvp=_jvp_eigh_w, vjp=_vjp_eigh_w,
    ref="Giles (2008) sec. 3.1 (Magnus 1985): dw = diag(V^T dA V), A_bar = V diag(w_bar) V^T",
))

register(OpDef(
    statement=True,
    name="eigh_v", infer=_infer_square_same("eigh"), numpy=_np_eigh(1),
    jvp=_jvp_eigh_v, vjp=_vjp_eigh_v,
    ref="Giles (2008) sec. 3.1 (Magnus 1985): dV = V (F o V^T dA V), F_ij = 1/(w_j - w_i), distinct w",
))


# -- lstsq (the solution of a full-column-rank least-squares problem) ------------------------------------------

def _lstsq_parts(g: Graph, node):
    a, b = node.args
    k = _cols(g, b)
    ata = _c(g, "ki,kj->ij", a, a)
    resid = g.apply("sub", b, _c(g, f"ij,j{k}->i{k}", a, node.id))
    return a, ata, resid, k


def _jvp_lstsq(g, node, t, nb):
    """dX = (A^T A)^-1 (dA^T r - A^T dA X + A^T dB), r = B - A X (differentiated normal equations)."""
    a, ata, resid, k = _lstsq_parts(g, node)
    z, terms = _z(nb), []
    if t[0] is not None:
        terms.append(_c(g, f"{z}ki,k{k}->{z}i{k}", t[0], resid))
        terms.append(g.apply("neg", _c(g, f"ki,{z}k{k}->{z}i{k}", a, _c(g, f"{z}kj,j{k}->{z}k{k}", t[0], node.id))))
    if t[1] is not None:
        terms.append(_c(g, f"ki,{z}k{k}->{z}i{k}", a, t[1]))
    rhs = terms[0]
    for term in terms[1:]:
        rhs = g.apply("add", rhs, term)
    return solve_batched(g, ata, rhs, nb)


def _vjp_lstsq(g, node, ct, nb):
    """Y = (A^T A)^-1 X_bar; A_bar = r Y^T - A Y X^T, B_bar = A Y (the JVP transposed)."""
    a, ata, resid, k = _lstsq_parts(g, node)
    z = _z(nb)
    y = solve_batched(g, ata, ct, nb)
    ay = _c(g, f"ij,{z}j{k}->{z}i{k}", a, y)
    a_bar = g.apply("sub", _c(g, f"i{k},{z}j{k}->{z}ij", resid, y), _c(g, f"{z}i{k},j{k}->{z}ij", ay, node.id))
    return a_bar, ay


register(OpDef(
    statement=True,
    name="lstsq", infer=_infer_rhs("lstsq", _rows_tall), numpy=_np_lstsq,
    jvp=_jvp_lstsq, vjp=_vjp_lstsq,
    ref="normal equations A^T A x = A^T b differentiated (Giles 2008 sec. 2.3 rules for the solve); "
        "full column rank, m >= n",
))
