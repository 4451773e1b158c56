"""GRI-Mech 3.0 (53 species, 325 reactions) as an ordinary numpy right-hand side, differentiated by symgrad.

The kinetics are written the way a modeller writes them, with Python loops over the reactions
(mass action, modified Arrhenius rates, third-body efficiencies, Lindemann and Troe fall-off), at a
fixed temperature and pressure.  Only the mechanism's *data* come from Cantera (the file
``gri30.yaml`` ships with the ``cantera`` package); Cantera is then the independent reference:

* ``net_production_rates(C)`` agrees with ``gas.net_production_rates``;
* ``symgrad.jacobian(..., sparse=True)`` of it (a ``scipy.sparse.csr_array`` built entry by entry
  from the graph) agrees with central differences and with Cantera's own
  ``net_production_rates_ddCi`` where Cantera computes it exactly;
* an isothermal, constant-pressure ignition to near equilibrium with
  ``solve_ivp(method="BDF", jac=<sparse Jacobian>)`` agrees with Cantera's
  ``IdealGasConstPressureReactor`` with the energy equation off, and with BDF using finite
  differences over the same pattern (``jac_sparsity``).

Units are Cantera's: kmol, m^3, s, K, J/kmol.  Formulas: Kee, Coltrin and Glarborg, *Chemically
Reacting Flow* (2003), ch. 9 (mass action, third bodies); Gilbert, Luther and Troe, Ber. Bunsenges.
Phys. Chem. 87 (1983) 169 (the Troe fall-off broadening), as Cantera documents them.

Run ``python examples/grimech.py`` for the comparison and timings; ``benchmarks/bench_grimech_bdf.py``
compares BDF with symgrad's sparse and dense Jacobians of the whole equation and finite differences.
"""
from __future__ import annotations

import math
import time

import numpy as np

T_DEFAULT, P_DEFAULT = 1500.0, 101325.0


class Mechanism:
    """Reaction data at a fixed temperature, read once from a Cantera ``Solution``.

    Attributes:
      reactions: one dict per reaction: ``reactants``/``products`` (lists of (species index,
        stoichiometric coefficient)), ``kind`` ("elementary", "three-body", "lindemann", "troe"),
        rate constants at T (``k``, or ``k0``/``kinf`` for fall-off, in Cantera's units), the reverse
        factor ``1/Kc`` (0 for irreversible reactions), third-body ``efficiencies`` (species index
        -> efficiency) with ``default`` efficiency, and the Troe centre ``fcent``.
    """

    def __init__(self, gas, T: float = T_DEFAULT, P: float = P_DEFAULT):
        import cantera as ct

        self.T, self.P, self.gas = T, P, gas
        self.n = gas.n_species
        gas.TP = T, P
        kc = gas.equilibrium_constants
        index = gas.species_index
        rt = ct.gas_constant * T

        def arrhenius(rate):
            return rate.pre_exponential_factor * T ** rate.temperature_exponent * math.exp(
                -rate.activation_energy / rt)

        self.reactions = []
        for i, r in enumerate(gas.reactions()):
            d = {"reactants": [(index(s), nu) for s, nu in r.reactants.items()],
                 "products": [(index(s), nu) for s, nu in r.products.items()],
                 "reverse": 1.0 / kc[i] if r.reversible else 0.0, "efficiencies": {}, "default": 1.0}
            tb = r.third_body
            if tb is not None:
                if tb.name == "M":
                    d["efficiencies"] = {index(s): e for s, e in tb.efficiencies.items()}
                    d["default"] = tb.default_efficiency
                else:  # an explicit collision partner, e.g. H + O2 + O2 <=> HO2 + O2
                    d["efficiencies"], d["default"] = {index(tb.name): 1.0}, 0.0
            kind = r.reaction_type
            if kind.startswith("falloff"):
                d["kind"] = "troe" if kind == "falloff-Troe" else "lindemann"
                d["k0"], d["kinf"] = arrhenius(r.rate.low_rate), arrhenius(r.rate.high_rate)
                if d["kind"] == "troe":
                    a, t3, t1, *t2 = r.rate.falloff_coeffs
                    fcent = (1 - a) * math.exp(-T / t3) + a * math.exp(-T / t1)
                    if t2 and t2[0] != 0.0:
                        fcent += math.exp(-t2[0] / T)
                    d["fcent"] = fcent
            else:
                d["kind"] = "three-body" if kind == "three-body-Arrhenius" else "elementary"
                d["k"] = arrhenius(r.rate)
            self.reactions.append(d)


def make_rhs(mech: Mechanism):
    """The net molar production rates ``wdot(C)`` [kmol/m^3/s] of concentrations ``C`` [kmol/m^3], shape (53,).

    Written with loops over reactions and species, as a model is written by hand.
    """
    reactions, n = mech.reactions, mech.n

    def net_production_rates(C):
        wdot = [0.0] * n
        for r in reactions:
            fwd = 1.0
            for k, nu in r["reactants"]:
                fwd = fwd * C[k] ** nu if nu != 1 else fwd * C[k]
            rev = 1.0
            for k, nu in r["products"]:
                rev = rev * C[k] ** nu if nu != 1 else rev * C[k]
            if r["kind"] == "elementary":
                kf = r["k"]
            else:
                m = 0.0
                for k in range(n):
                    eff = r["efficiencies"].get(k, r["default"])
                    if eff != 0.0:
                        m = m + eff * C[k]
                if r["kind"] == "three-body":
                    kf = r["k"] * m
                else:
                    pr = r["k0"] * m / r["kinf"]
                    kf = r["kinf"] * pr / (1.0 + pr)
                    if r["kind"] == "troe":
                        log_fc = math.log10(r["fcent"])
                        c = -0.4 - 0.67 * log_fc
                        nn = 0.75 - 1.27 * log_fc
                        lpr = np.log10(pr) + c
                        f1 = lpr / (nn - 0.14 * lpr)
                        kf = kf * 10.0 ** (log_fc / (1.0 + f1 * f1))
            rop = kf * (fwd - r["reverse"] * rev)
            for k, nu in r["reactants"]:
                wdot[k] = wdot[k] - nu * rop
            for k, nu in r["products"]:
                wdot[k] = wdot[k] + nu * rop
        return np.stack(wdot)

    return net_production_rates


def make_isothermal_isobaric_ode(wdot, c_total: float):
    """``dC/dt`` at constant T and P: ``wdot - C * sum(wdot) / C_total`` (the volume changes with the moles).

    Written element by element (``w[k]``, a Python sum, ``np.stack``) so the whole right-hand side
    is scalar-level and ``sg.jacobian(rhs, sparse=True)`` takes the direct path.  Its Jacobian is
    ``dW - diag(s) - C (1^T dW) / C_total`` with ``s = sum(wdot) / C_total``: the rank-one term
    fills every column on which some rate depends: in GRI-Mech 3.0 every species is a collision
    partner of some third-body reaction, so it is dense (53 x 53) although ``dW`` has 87% of its entries.
    """
    def rhs(C):
        w = wdot(C)
        n = C.shape[0]
        total = 0.0
        for k in range(n):
            total = total + w[k]
        s = total / c_total
        return np.stack([w[k] - C[k] * s for k in range(n)])
    return rhs


MIXTURE = "CH4:1, O2:2, N2:7.52"  # stoichiometric methane-air
T_END = 0.1  # s: ignition at about 1.5 ms; by 0.1 s the major species are within 0.5% of equilibrium
MAJOR = 1e-3  # "major species": concentration above this fraction of the largest one


def initial_state(gas, T: float = T_DEFAULT, P: float = P_DEFAULT, X: str = MIXTURE):
    """Set ``gas`` to (T, P, X); return its concentrations [kmol/m^3] and total concentration P/(R T)."""
    import cantera as ct

    gas.TPX = T, P, X
    return gas.concentrations.copy(), P / (ct.gas_constant * T)


def cantera_reference(gas, t_end: float, T: float = T_DEFAULT, P: float = P_DEFAULT, X: str = MIXTURE,
                      rtol: float = 1e-12, atol: float = 1e-22):
    """Concentrations at ``t_end`` from Cantera's ``IdealGasConstPressureReactor`` with the energy
    equation off, started from (T, P, X) (Cantera >= 3.2 integrates a clone of ``gas``; older versions
    advance ``gas`` itself)."""
    import cantera as ct

    gas.TPX = T, P, X
    try:
        reactor = ct.IdealGasConstPressureReactor(gas, energy="off", clone=True)
    except TypeError:  # Cantera < 3.2 has no clone argument
        reactor = ct.IdealGasConstPressureReactor(gas, energy="off")
    net = ct.ReactorNet([reactor])
    net.rtol, net.atol = rtol, atol
    net.advance(t_end)
    return (reactor.phase if hasattr(reactor, "phase") else reactor.thermo).concentrations.copy()


def integrate(rhs, y0, t_end: float, rtol: float = 1e-9, atol: float = 1e-20, **jac):
    """``solve_ivp(method="BDF")`` of ``dy/dt = rhs(y)`` from 0 to ``t_end``; ``jac`` is ``jac=`` (a callable
    of y, dense or sparse) or ``jac_sparsity=`` (finite differences).  The result has ``.wall`` seconds."""
    from scipy.integrate import solve_ivp

    if callable(jac.get("jac")):
        j = jac["jac"]
        jac = {"jac": lambda t, y: j(y)}
    t = time.perf_counter()
    sol = solve_ivp(lambda t, y: rhs(y), (0.0, t_end), y0, method="BDF", rtol=rtol, atol=atol, **jac)
    sol.wall = time.perf_counter() - t
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol


def max_relative_difference(c, ref, floor: float = MAJOR) -> float:
    """``max |c - ref| / ref`` over the species whose ``ref`` exceeds ``floor`` of the largest."""
    big = ref > floor * ref.max()
    return float(np.max(np.abs(c - ref)[big] / ref[big]))


def main():
    import cantera as ct

    import symgrad as sg

    gas = ct.Solution("gri30.yaml")
    initial_state(gas)
    mech = Mechanism(gas)
    wdot = make_rhs(mech)
    rng = np.random.default_rng(0)
    C = gas.concentrations * (1 + 0.1 * rng.random(gas.n_species)) + 1e-9
    n = gas.n_species

    t0 = time.perf_counter()
    f = sg.jit(wdot)
    mine = f(C)
    t_first = time.perf_counter() - t0
    gas.TP = T_DEFAULT, P_DEFAULT
    gas.concentrations = C
    ref = gas.net_production_rates
    scale = np.max(np.abs(ref))
    print(f"net production rates: max |symgrad - Cantera| / max|wdot| = {np.max(np.abs(mine - ref)) / scale:.2e}"
          f"  (first result {t_first:.2f} s)")

    # the sparse Jacobian, entry by entry from the graph (the program is scalar-level: no colouring).
    # Its 2456 entries are scalar expressions printed as one instruction tape and compiled by LLVM
    # (the native tier): built, stabiliser included, in about 2 s.
    t0 = time.perf_counter()
    jw = sg.jacobian(wdot, sparse=True)
    J = jw(C).toarray()
    nnz = jw.info(C)["nnz"]
    print(f"sparse jacobian {J.shape}: {nnz} of {n * n} entries ({nnz / n ** 2:.1%}), "
          f"{jw.info(C)['mode']} path; built and evaluated in {time.perf_counter() - t0:.2f} s")
    fd = np.empty_like(J)
    for j in range(len(C)):  # central differences of the same model
        h = 1e-6 * C[j]
        e = np.zeros_like(C)
        e[j] = h
        fd[:, j] = (wdot(C + e) - wdot(C - e)) / (2 * h)
    print(f"jacobian vs central differences: max |diff| / max|J| = {np.max(np.abs(J - fd)) / np.max(np.abs(J)):.1e}")
    gas.derivative_settings = {"skip-third-bodies": False, "skip-falloff": False}  # exact in Cantera
    ddc = gas.net_production_rates_ddCi  # d wdot / d C at fixed T and the other concentrations
    ddc = ddc.toarray() if hasattr(ddc, "toarray") else np.asarray(ddc)
    print(f"jacobian vs Cantera's net_production_rates_ddCi: max |diff| / max|J| = "
          f"{np.max(np.abs(J - ddc)) / np.max(np.abs(J)):.1e}")

    # isothermal, isobaric ignition to near equilibrium: BDF with symgrad's sparse Jacobian of the whole
    # equation (direct path), and with finite differences over its pattern; Cantera's reactor as the reference
    c0, c_total = initial_state(gas)
    ode = make_isothermal_isobaric_ode(wdot, c_total)
    fode = sg.jit(ode)
    t0 = time.perf_counter()
    ode_jacobian = sg.jacobian(ode, sparse=True)
    jc = ode_jacobian(C).toarray()
    print(f"constant-pressure equation's sparse jacobian: built and evaluated in {time.perf_counter() - t0:.2f} s")
    chain = J - (f(C).sum() / c_total) * np.eye(n) - np.outer(C, J.sum(axis=0)) / c_total  # dW - s I - C 1^T dW / C_total
    print(f"  vs the chain rule from d wdot / dC: max |diff| / max|J| = {np.abs(jc - chain).max() / np.abs(chain).max():.1e}")
    pattern = sg.jacobian_sparsity(ode, c0)  # structural, from the graph
    print(f"  pattern: {pattern.nnz} of {n * n} entries ({pattern.nnz / n ** 2:.1%}): the rank-one term fills every "
          "column some rate depends on, and every species is a collision partner")
    fode(c0)
    runs = {"symgrad sparse jac": integrate(fode, c0, T_END, jac=ode_jacobian),
            "finite differences + jac_sparsity": integrate(fode, c0, T_END, jac_sparsity=pattern)}
    ref_c = cantera_reference(gas, T_END)
    base = runs["symgrad sparse jac"].y[:, -1]
    for name, sol in runs.items():
        print(f"BDF to t = {T_END:g} s, {name}: {sol.wall:.2f} s, {sol.nfev} rhs, {sol.njev} Jacobians, "
              f"{sol.nlu} LU; max rel. difference from Cantera's reactor (major species) "
              f"{max_relative_difference(sol.y[:, -1], ref_c):.1e}, (species above 1e-12 of the largest) "
              f"{max_relative_difference(sol.y[:, -1], ref_c, 1e-12):.1e}, from the sparse-jac run "
              f"{max_relative_difference(sol.y[:, -1], base, 1e-12):.1e}")


if __name__ == "__main__":
    main()
