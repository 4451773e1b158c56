"""Black-Scholes and Monte Carlo Greeks (Hull, *Options, Futures and Other Derivatives*, ch. 15 and 19).
References: the closed-form Greeks; scipy.stats.norm for values."""
import numpy as np
from scipy import stats
from scipy.special import erf, ndtr

import symgrad as sg

from ._reference import assert_close


def bs_call(S, K, T, r, sigma):
    """Black-Scholes call price with scipy.special.ndtr (elementwise in every argument)."""
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * ndtr(d1) - K * np.exp(-r * T) * ndtr(d2)


def bs_call_erf(S, K, T, r, sigma):
    """The same written with erf, as many tutorials do: N(x) = (1 + erf(x / sqrt 2)) / 2."""
    N = lambda x: 0.5 * (1.0 + erf(x / np.sqrt(2.0)))  # noqa: E731
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    return S * N(d1) - K * np.exp(-r * T) * N(d1 - sigma * np.sqrt(T))


STRIKES = np.array([80.0, 95.0, 100.0, 105.0, 120.0])
S0, T, R, SIG = 100.0, 0.75, 0.03, 0.25


def closed_form(S, K, T, r, sigma):
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    price = S * stats.norm.cdf(d1) - K * np.exp(-r * T) * stats.norm.cdf(d2)
    delta = stats.norm.cdf(d1)
    vega = S * stats.norm.pdf(d1) * np.sqrt(T)
    rho = K * T * np.exp(-r * T) * stats.norm.cdf(d2)
    gamma = stats.norm.pdf(d1) / (S * sigma * np.sqrt(T))
    return price, delta, vega, rho, gamma


def test_black_scholes_price_and_greeks_over_strikes():
    """Elementwise: signature=None broadcasts over the strikes; argnums=(0, 3, 4) gives delta, rho, vega."""
    price, delta, vega, rho, _ = closed_form(S0, STRIKES, T, R, SIG)
    assert_close(sg.jit(bs_call)(S0, STRIKES, T, R, SIG), price)
    g = sg.grad(bs_call, argnums=(0, 3, 4))(S0, STRIKES, T, R, SIG)
    assert_close(g, (delta, rho, vega))


def test_black_scholes_gamma_with_scalar_signature_batched():
    """Gamma = d2C/dS2 under an explicit all-scalar signature, batched over strikes."""
    _, _, _, _, gamma = closed_form(S0, STRIKES, T, R, SIG)
    H = sg.hessian(bs_call, signature="(),(),(),(),()->()")(np.full(5, S0), STRIKES, T, R, SIG)
    assert_close(H, gamma, rtol=1e-8)


def test_black_scholes_erf_form_float32_delta():
    _, delta, _, _, _ = closed_form(S0, STRIKES, T, R, SIG)
    f32 = np.float32
    g = sg.grad(bs_call_erf)(f32(S0), STRIKES.astype(f32), f32(T), f32(R), f32(SIG))
    assert_close(g, delta, dtype=np.float32)


def test_implied_volatility_by_newton_with_symgrad_vega():
    """Newton's method on sigma with vega from sg.value_and_grad recovers the volatility used."""
    target = closed_form(S0, 105.0, T, R, 0.31)[0]
    price_and_vega = sg.value_and_grad(bs_call, argnums=4)
    sigma = 0.2
    for _ in range(20):
        p, v = price_and_vega(S0, 105.0, T, R, sigma)
        sigma = sigma - (p - target) / v
    assert abs(sigma - 0.31) < 1e-12


Z = np.random.default_rng(19).standard_normal(2000)


def mc_call(S):
    """Monte Carlo call price over fixed normal draws (Glasserman, *Monte Carlo Methods*, 7.2)."""
    ST = S * np.exp((R - 0.5 * SIG ** 2) * T + SIG * np.sqrt(T) * Z)
    return np.exp(-R * T) * np.mean(np.maximum(ST - 100.0, 0.0))


def test_monte_carlo_pathwise_delta():
    """Pathwise estimator: e^{-rT} mean(ST/S * 1[ST > K]) (reduces over a constant array)."""
    growth = np.exp((R - 0.5 * SIG ** 2) * T + SIG * np.sqrt(T) * Z)
    expected = np.exp(-R * T) * np.mean(growth * (S0 * growth > 100.0))
    assert_close(sg.grad(mc_call)(S0), expected)
