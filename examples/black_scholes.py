"""Black-Scholes call price and its Greeks from scipy.special.ndtr, differentiated by symgrad.

The price is written once, with the standard normal CDF ``scipy.special.ndtr``
(and again with ``erf``); ``sg.grad`` gives delta, vega, rho and theta and a
Hessian-vector product ``sg.hvp`` gives gamma.  Each is checked against its closed form
(Hull, "Options, Futures, and Other Derivatives", 10th ed., ch. 19):

    d1 = (log(S/K) + (r + sigma^2/2) T) / (sigma sqrt T),  d2 = d1 - sigma sqrt T
    C = S N(d1) - K exp(-r T) N(d2)
    delta = N(d1)                         gamma = phi(d1) / (S sigma sqrt T)
    vega  = S phi(d1) sqrt T              rho   = K T exp(-r T) N(d2)
    theta = -S phi(d1) sigma / (2 sqrt T) - r K exp(-r T) N(d2)    (per year, = -dC/dT)

Run:  python examples/black_scholes.py
"""
import numpy as np
from scipy.special import erf, ndtr

import symgrad as sg

SIG = "(5)->()"  # p = (S, K, T, r, sigma): one core vector per option


def call_price(p):
    S, K, T, r, sigma = p[0], p[1], p[2], p[3], p[4]
    sd = sigma * np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / sd
    return S * ndtr(d1) - K * np.exp(-r * T) * ndtr(d1 - sd)


def call_price_erf(p):
    """The same price with N(x) = (1 + erf(x / sqrt 2)) / 2."""
    S, K, T, r, sigma = p[0], p[1], p[2], p[3], p[4]
    sd = sigma * np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / sd

    def N(x):
        return 0.5 * (1.0 + erf(x / np.sqrt(2.0)))
    return S * N(d1) - K * np.exp(-r * T) * N(d1 - sd)


def closed_form(S, K, T, r, sigma):
    sd = sigma * np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / sd
    d2 = d1 - sd
    phi = np.exp(-0.5 * d1**2) / np.sqrt(2 * np.pi)
    disc = K * np.exp(-r * T)
    return {"price": S * ndtr(d1) - disc * ndtr(d2), "delta": ndtr(d1), "gamma": phi / (S * sd),
            "vega": S * phi * np.sqrt(T), "rho": T * disc * ndtr(d2),
            "theta": -S * phi * sigma / (2 * np.sqrt(T)) - r * disc * ndtr(d2)}


def main():
    options = np.array([[100.0, 100.0, 1.0, 0.05, 0.2],    # at the money
                        [100.0, 60.0, 0.25, 0.01, 0.3],    # deep in the money
                        [100.0, 180.0, 2.0, 0.03, 0.15]])  # deep out of the money
    price = sg.jit(call_price, signature=SIG)
    price_erf = sg.jit(call_price_erf, signature=SIG)
    # stabilize=False: the stabiliser's search takes about 45 s of CPU on these five gradient
    # formulas; the closed-form checks below show the unstabilised rules are accurate to 1e-14 here
    grad = sg.grad(call_price, signature=SIG, stabilize=False)
    got = {"price": price(options)}
    g = grad(options)
    # gamma = d(delta)/dS: one Hessian-vector product with e_S (never the 5 x 5 Hessian)
    e_S = np.zeros_like(options)
    e_S[:, 0] = 1.0
    h_S = sg.hvp(call_price, (options,), (e_S,), signature=SIG, stabilize=False)
    got.update(delta=g[:, 0], rho=g[:, 3], vega=g[:, 4], theta=-g[:, 2], gamma=h_S[:, 0])
    ref = closed_form(*options.T)
    worst = 0.0
    for i, row in enumerate(options):
        print(f"S={row[0]:g} K={row[1]:g} T={row[2]:g} r={row[3]:g} sigma={row[4]:g}")
        for key in ("price", "delta", "gamma", "vega", "rho", "theta"):
            err = abs(got[key][i] - ref[key][i]) / abs(ref[key][i])
            worst = max(worst, err)
            print(f"  {key:<6s} symgrad {got[key][i]: .15e}   closed form {ref[key][i]: .15e}   rel.err {err:.1e}")
    err_erf = np.max(np.abs(price_erf(options) - got["price"]) / got["price"])
    print(f"price via erf vs via ndtr: max rel. difference {err_erf:.1e}")
    print(f"worst relative error of the Greeks: {worst:.1e}")
    assert worst < 1e-12 and err_erf < 1e-12


if __name__ == "__main__":
    main()
