"""GRI-Mech 3.0 (53 species, 325 reactions) as an ordinary numpy right-hand side, differentiated by symgrad.

The kinetics are written the way a modeller writes them, with Python loops over the reactions
(mass action, modified Arrhenius rates, third-body efficiencies, Lindemann and Troe fall-off), at a
fixed temperature and pressure.  Only the mechanism's *data* come from Cantera (the file
``gri30.yaml`` ships with the ``cantera`` package); Cantera is then the independent reference:

* ``net_production_rates(C)`` agrees with ``gas.net_production_rates``;
* ``symgrad.jacobian`` of it agrees with central differences and with Cantera's own
  ``net_production_rates_ddC`` where Cantera computes it exactly;
* an isothermal, constant-pressure integration with ``solve_ivp(method="BDF", jac=...)`` agrees
  with Cantera's ``IdealGasConstPressureReactor`` with the energy equation off.

Units are Cantera's: kmol, m^3, s, K, J/kmol.  Formulas: Kee, Coltrin and Glarborg, *Chemically
Reacting Flow* (2003), ch. 9 (mass action, third bodies); Gilbert, Luther and Troe, Ber. Bunsenges.
Phys. Chem. 87 (1983) 169 (the Troe fall-off broadening), as Cantera documents them.

Run ``python examples/grimech.py`` for the comparison and timings.
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
    """``dC/dt`` at constant T and P: ``wdot - C * sum(wdot) / C_total`` (the volume changes with the moles)."""
    def rhs(C):
        w = wdot(C)
        return w - C * (np.sum(w) / c_total)
    return rhs


def main():
    import cantera as ct
    from scipy.integrate import solve_ivp

    import symgrad as sg

    gas = ct.Solution("gri30.yaml")
    gas.TPX = T_DEFAULT, P_DEFAULT, "CH4:1, O2:2, N2:7.52"
    mech = Mechanism(gas)
    wdot = make_rhs(mech)
    rng = np.random.default_rng(0)
    C = gas.concentrations * (1 + 0.1 * rng.random(gas.n_species)) + 1e-9

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

    t0 = time.perf_counter()
    J = sg.jacobian(wdot)(C)
    print(f"jacobian {J.shape}: built and evaluated in {time.perf_counter() - t0:.2f} s")
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

    c_total = P_DEFAULT / (ct.gas_constant * T_DEFAULT)
    ode = make_isothermal_isobaric_ode(wdot, c_total)
    fode, jode = sg.jit(ode), sg.jacobian(ode)
    gas.TPX = T_DEFAULT, P_DEFAULT, "CH4:1, O2:2, N2:7.52"
    t_end = 2e-3
    sol = solve_ivp(lambda t, y: fode(y), (0.0, t_end), gas.concentrations, method="BDF",
                    jac=lambda t, y: jode(y), rtol=1e-9, atol=1e-20)
    try:
        reactor = ct.IdealGasConstPressureReactor(gas, energy="off", clone=True)
    except TypeError:  # Cantera < 3.2 has no clone argument
        reactor = ct.IdealGasConstPressureReactor(gas, energy="off")
    net = ct.ReactorNet([reactor])
    net.rtol, net.atol = 1e-12, 1e-22
    net.advance(t_end)
    ref_c = (reactor.phase if hasattr(reactor, "phase") else reactor.thermo).concentrations
    big = ref_c > 1e-12 * ref_c.max()
    err = np.max(np.abs(sol.y[:, -1] - ref_c)[big] / ref_c[big])
    print(f"BDF with symgrad's Jacobian to t = {t_end:g} s: {sol.nfev} rhs, {sol.njev} Jacobians; "
          f"max relative difference from Cantera's reactor (species above 1e-12 of the largest) {err:.1e}")


if __name__ == "__main__":
    main()
