"""Sparse Jacobians of the GRI-Mech 3.0 kinetics of examples/grimech.py (issue 17, point 4).

References are independent of symgrad: Cantera's own ``net_production_rates_ddCi`` (exact with
its third-body and fall-off derivatives switched on), central differences of the numpy model, the
structure the constant-pressure equation implies (``dW - diag(s) - C (1^T dW) / C_total``), and
Cantera's ``IdealGasConstPressureReactor`` with the energy equation off.  The fast tests use
sub-mechanisms of 3 and 4 reactions over the species they name (a few seconds, most of it one
small kernel's compile); the full mechanism is behind ``slow``.
"""
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import symgrad as sg

# one reaction of each kind: 2 O + M <=> O2 + M (a squared concentration); H2 + O <=> H + OH;
# CO + O (+M) <=> CO2 (+M) (Lindemann); CH2 + H (+M) <=> CH3 (+M) (Troe)
KINDS = ((0, 2, 11, 49), ("H2", "H", "O", "O2", "OH", "H2O", "CH2", "CH3", "CH4", "C2H6", "CO", "CO2", "AR", "N2"))
# H2 + O <=> H + OH; H + O2 + M <=> HO2 + M (efficiency 0 for AR, H2O, N2, O2); H + O2 + N2 <=> HO2 + N2
# (an explicit collision partner): AR and H2O neither react nor collide, so their columns are empty
ZEROS = ((2, 32, 35), ("H2", "H", "O", "O2", "OH", "HO2", "H2O", "C2H6", "CO", "CO2", "AR", "N2"))


def grimech():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import grimech
    return grimech


def central_differences(f, x, rel=1e-6):
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = rel * x[j]
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * e[j]))
    return np.stack(cols, axis=-1)


def sub_mechanism(reactions, species):
    """(gas, the example module, wdot, C with every species present, C_total) of a sub-mechanism of GRI-Mech."""
    ct = pytest.importorskip("cantera")
    full = ct.Solution("gri30.yaml")
    reactions = [full.reaction(i) for i in reactions]
    assert all(set(r.third_body.efficiencies) <= set(species) for r in reactions if r.third_body is not None)
    gas = ct.Solution(thermo="ideal-gas", kinetics="gas", species=[full.species(s) for s in species],
                      reactions=reactions)
    ex = grimech()
    c0, c_total = ex.initial_state(gas, X="H2:1, O2:1, CO:0.5, N2:3.76, AR:0.2")
    c = c0 * (1 + 0.1 * np.random.default_rng(3).random(gas.n_species)) + 1e-6
    return gas, ex, ex.make_rhs(ex.Mechanism(gas)), c, c_total


def cantera_ddc(gas, ex, c):
    """Cantera's d wdot / dC at (T, P, C), with its exact third-body and fall-off derivatives."""
    gas.TP = ex.T_DEFAULT, ex.P_DEFAULT
    gas.concentrations = c
    gas.derivative_settings = {"skip-third-bodies": False, "skip-falloff": False}
    ddc = gas.net_production_rates_ddCi
    return ddc.toarray() if hasattr(ddc, "toarray") else np.asarray(ddc)


def test_sub_mechanism_sparse_jacobian_against_cantera():
    gas, ex, wdot, c, _ = sub_mechanism(*KINDS)
    jac = sg.jacobian(wdot, sparse=True, stabilize=False)
    assert jac.info(c)["mode"] == "direct"
    j = jac(c)
    assert isinstance(j, sp.csr_array)
    ddc = cantera_ddc(gas, ex, c)
    scale = np.abs(ddc).max()
    np.testing.assert_allclose(j.toarray(), ddc, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(j.toarray(), central_differences(wdot, c), rtol=0, atol=1e-6 * scale)
    # the pattern is exactly the nonzeros of Cantera's dense Jacobian at a point where every species
    # is present: the rows of the third-body reactions' species are coupled to every collider
    pattern = jac.pattern(c).toarray()
    np.testing.assert_array_equal(pattern, np.abs(ddc) > 0)
    assert pattern.sum() == j.nnz < c.size ** 2
    assert pattern[gas.species_index("CH3"), gas.species_index("N2")]  # N2 collides with the default efficiency


def test_sub_mechanism_constant_pressure_pattern():
    """dW - diag(s) - C (1^T dW) / C_total: the diagonal, and every row of each column dW depends on
    (dW's nonzeros from Cantera).  Patterns only: the values are checked at full size under slow."""
    gas, ex, wdot, c, c_total = sub_mechanism(*ZEROS)
    ode = ex.make_isothermal_isobaric_ode(wdot, c_total)
    ddc = cantera_ddc(gas, ex, c)
    empty = [gas.species_names[k] for k in np.flatnonzero(~(np.abs(ddc) > 0).any(axis=0))]
    assert empty == ["H2O", "AR"]
    expected = np.eye(c.size, dtype=bool) | (np.abs(ddc) > 0).any(axis=0)[None, :]
    jac = sg.jacobian(ode, sparse=True, stabilize=False)
    assert jac.info(c)["mode"] == "direct"  # planned (entry nodes built), not compiled
    np.testing.assert_array_equal(jac.pattern(c).toarray(), expected)
    np.testing.assert_array_equal(sg.jacobian_sparsity(ode, c).toarray(), expected)


# -- slow: the full mechanism (python -m pytest -m slow; the dense Jacobian's kernel takes minutes) ------

@pytest.mark.slow
def test_grimech_bdf_with_sparse_jacobian_matches_dense_and_cantera():
    ct = pytest.importorskip("cantera")
    ex = grimech()
    gas = ct.Solution("gri30.yaml")
    c0, c_total = ex.initial_state(gas)
    ode = ex.make_isothermal_isobaric_ode(ex.make_rhs(ex.Mechanism(gas)), c_total)
    rhs = sg.jit(ode, stabilize=False)
    sparse = sg.jacobian(ode, sparse=True, stabilize=False)
    dense = sg.jacobian(ode, stabilize=False)
    np.testing.assert_allclose(sparse(c0).toarray(), dense(c0), rtol=1e-13, atol=1e-13 * np.abs(dense(c0)).max())
    t_end = 2e-3  # through ignition (at about 1.5 ms)
    with_sparse = ex.integrate(rhs, c0, t_end, jac=sparse)
    with_dense = ex.integrate(rhs, c0, t_end, jac=dense)
    ref = ex.cantera_reference(gas, t_end)
    assert ex.max_relative_difference(with_sparse.y[:, -1], ref) < 1e-6
    assert ex.max_relative_difference(with_dense.y[:, -1], ref) < 1e-6
    assert ex.max_relative_difference(with_sparse.y[:, -1], with_dense.y[:, -1], 1e-12) < 1e-6
    assert with_sparse.njev < with_sparse.nlu < with_sparse.nfev  # Jacobians reused across steps
