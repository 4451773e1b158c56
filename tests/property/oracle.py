"""High-precision references for a program at a point, with rounding-error estimates.

:func:`reference` evaluates a :class:`~programs.Program` with mpmath at 70 digits:

* the value ``f(x)``;
* directional first derivatives ``D1[d] = (f(x + h d) - f(x - h d)) / 2h`` and second
  derivatives ``D2[d] = (f(x + h d) - 2 f(x) + f(x - h d)) / h^2`` (central differences
  with ``h = 1e-20`` at 70 digits: the truncation error ``h^2 f''' / 6`` stays far below
  float64 rounding even where a chain such as ``exp(10 sin(10 sin(10 tanh(57 x))))`` makes
  ``f'''`` ~1e17 (with ``h = 1e-12`` the reference itself was off by 5e-14 relative there),
  and cancellation costs ~1e-30 relative);
* the same quantities for ``K`` *perturbed* programs, whose every node (constants
  included) is multiplied by a fixed ``1 + delta``, ``|delta| <= u`` (``u`` the unit
  roundoff of the dtype under test).  ``err[q] = max_k |q_k - q|`` is a Monte Carlo
  estimate of how much rounding errors of size ``u`` can move ``q``; tolerances are a
  multiple of it (see :func:`tolerance`).
* ``near_switch``: True when a branch switch (abs/sign at 0, maximum/minimum/comparison
  at a tie, norm at 0) is close enough that rounding could flip it: the program is
  re-evaluated with every node and input perturbed by ``probe`` (relative) and any
  switching value that moves by more than a tenth of its size marks the point.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import mpmath
import numpy as np

from .programs import Program, mp_eval, perturbations

U64 = 2.0 ** -53
U32 = 2.0 ** -24
DPS = 70
H = mpmath.mpf("1e-20")
SAFETY = 32.0   # tolerance = SAFETY * Monte Carlo spread + ...
# Derivative checks also allow FLOOR ulps of the magnitudes of the derivative's terms (the
# cancelling derivative formulas of tanh and expm1 are modelled in the perturbed programs, see
# programs.FORMULA_NOISE; this floor covers what is left, e.g. summation order).
FLOOR = 64.0


def flatten(point) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(p, dtype=np.float64)) for p in point]) if len(point) else np.zeros(0)


def unflatten_mp(program: Program, flat) -> list:
    out, i = [], 0
    for s in program.input_shapes:
        if s == ():
            out.append(flat[i])
            i += 1
        else:
            out.append(tuple(flat[i:i + s[0]]))
            i += s[0]
    return out


def unflatten_np(program: Program, flat: np.ndarray, dtype=np.float64) -> list:
    out, i = [], 0
    for s in program.input_shapes:
        if s == ():
            out.append(dtype(flat[i]))
            i += 1
        else:
            out.append(np.asarray(flat[i:i + s[0]], dtype=dtype))
            i += s[0]
    return out


@dataclass
class Ref:
    f: float
    d1: dict
    d2: dict
    err: dict = field(default_factory=dict)   # "f", ("d1", name), ("d2", name) -> spread
    # name -> sum over intermediate nodes of |second directional derivative| (the size of the
    # terms a computed Hessian combines; they may cancel to ~0, as for u/u)
    terms2: dict = field(default_factory=dict)
    near_switch: bool = False
    nan: bool = False

    def tol(self, key, value, u) -> float:
        return tolerance(self.err[key], value, u)


def tolerance(spread: float, value: float, u: float) -> float:
    """Allowed |computed - exact|: SAFETY x the Monte Carlo rounding spread, plus a few ulps of
    the value itself (libm functions are accurate to ~1 ulp, and the estimate is random)."""
    return SAFETY * spread + 8.0 * u * abs(value)


def _scalar(value, weights):
    """A vector output is checked through the weighted sum w . F (weights exact in mpmath)."""
    if isinstance(value, tuple):
        return mpmath.fsum(mpmath.mpf(float(w)) * v for w, v in zip(weights, value))
    return value


def _run(program, X, dirs, deltas, want_d2, weights=None, terms2=None):
    """f, {name: D1}, {name: D2} at flat point X (mpf list) along directions ``dirs``; with a
    ``terms2`` dict, also the summed |second difference| of every non-input node per direction."""
    anchors = {}

    def ev(x, nodes=None):
        return _scalar(mp_eval(program, unflatten_mp(program, x), deltas, anchors, nodes)[0], weights)

    n0: dict = {}
    f0 = ev(X, n0)
    d1, d2 = {}, {}
    for name, d in dirs.items():
        xp = [x + H * di for x, di in zip(X, d)]
        xm = [x - H * di for x, di in zip(X, d)]
        npl: dict = {}
        nmi: dict = {}
        fp, fm = ev(xp, npl), ev(xm, nmi)
        d1[name] = (fp - fm) / (2 * H)
        if want_d2:
            d2[name] = (fp - 2 * f0 + fm) / (H * H)
            if terms2 is not None:
                tot = mpmath.mpf(0)
                for k, v0 in n0.items():
                    if program.nodes[k].op in ("input", "const") or program.nodes[k].kind != "f":
                        continue
                    for a, b, c in zip(_elems_of(npl[k]), _elems_of(v0), _elems_of(nmi[k])):
                        tot += abs((a - 2 * b + c) / (H * H))
                terms2[name] = float(tot)
    return f0, d1, d2


def _elems_of(v):
    return v if isinstance(v, tuple) else (v,)


def reference(program: Program, point, dirs: dict, *, u=U64, probe=1e-6, runs=2, seed=0,
              want_d2=True, weights=None) -> Ref:
    """The reference at ``point`` (a tuple of floats/arrays) along flat directions ``dirs``;
    a vector-valued program is scalarised as ``weights . F``."""
    rng = np.random.default_rng(seed)
    flat = flatten(point)
    with mpmath.workdps(DPS):
        X = [mpmath.mpf(float(v)) for v in flat]
        dmp = {k: [mpmath.mpf(float(v)) for v in d] for k, d in dirs.items()}
        try:
            f0, sw0 = mp_eval(program, unflatten_mp(program, X))
        except (ValueError, ZeroDivisionError):
            return Ref(float("nan"), {}, {}, nan=True)
        # branch switches within reach of rounding errors
        near = False
        for _ in range(2):
            Xp = [x + mpmath.mpf(probe) * (1 + abs(x)) * mpmath.mpf(float(r))
                  for x, r in zip(X, rng.uniform(-1, 1, len(X)))]
            _, swp = mp_eval(program, unflatten_mp(program, Xp), perturbations(program, rng, probe))
            if any(abs(a) <= 10 * abs(b - a) for a, b in zip(sw0, swp)):
                near = True
                break
        terms2: dict = {}
        f, d1, d2 = _run(program, X, dmp, None, want_d2, weights, terms2)
        ref = Ref(float(f), {k: float(v) for k, v in d1.items()}, {k: float(v) for k, v in d2.items()},
                  near_switch=near, terms2=terms2)
        spreads = {"f": 0.0, **{("d1", k): 0.0 for k in d1}, **{("d2", k): 0.0 for k in d2}}
        for _ in range(runs):
            fk, d1k, d2k = _run(program, X, dmp, perturbations(program, rng, u), want_d2, weights)
            spreads["f"] = max(spreads["f"], float(abs(fk - f)))
            for k in d1:
                spreads[("d1", k)] = max(spreads[("d1", k)], float(abs(d1k[k] - d1[k])))
            for k in d2:
                spreads[("d2", k)] = max(spreads[("d2", k)], float(abs(d2k[k] - d2[k])))
        ref.err = spreads
    return ref
