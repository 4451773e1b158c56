"""ODE right-hand sides from the solve_ivp / odeint tutorials, differentiated for stiff solvers
and sensitivities.  References: the closed-form Jacobians, autograd on the same source."""
import autograd
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import symgrad as sg

from ._reference import as_autograd, assert_close


def lotkavolterra(t, z, a, b, c, d):
    """solve_ivp docs: Lotka-Volterra predator-prey (unpacks the state)."""
    x, y = z
    return [a * x - b * x * y, -c * y + d * x * y]


def lv_array(t, z, a, b, c, d):
    return np.array(lotkavolterra(t, z, a, b, c, d))


def test_lotka_volterra_jacobian_and_vjp():
    z, (a, b, c, d) = np.array([10.0, 5.0]), (1.5, 1.0, 3.0, 1.0)
    x, y = z
    expected = np.array([[a - b * y, -b * x], [d * y, -c + d * x]])
    assert_close(sg.jacobian(lv_array, argnums=1)(0.0, z, a, b, c, d), expected)
    w = np.array([0.3, -0.7])
    _, vjp_fn = sg.vjp(lambda z: lv_array(0.0, z, a, b, c, d), z)
    assert_close(vjp_fn(w), (w @ expected,))


def test_lotka_volterra_parameter_jacobian_against_autograd():
    """d f / d (a, b, c, d) at one state: four columns, from a tuple argnums."""
    z, p = np.array([10.0, 5.0]), (1.5, 1.0, 3.0, 1.0)
    ref = tuple(autograd.jacobian(as_autograd(lv_array), argnum=k)(0.0, z, *p) for k in (2, 3, 4, 5))
    assert_close(sg.jacobian(lv_array, argnums=(2, 3, 4, 5))(0.0, z, *p), ref)


def robertson(t, y):
    """Robertson's stiff chemical kinetics (Hairer & Wanner; the solve_ivp BDF example)."""
    y1, y2, y3 = y
    return np.array([-0.04 * y1 + 1e4 * y2 * y3,
                     0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 ** 2,
                     3e7 * y2 ** 2])


def robertson_jac(t, y):
    y1, y2, y3 = y
    return np.array([[-0.04, 1e4 * y3, 1e4 * y2],
                     [0.04, -1e4 * y3 - 6e7 * y2, -1e4 * y2],
                     [0.0, 6e7 * y2, 0.0]])


def test_robertson_bdf_with_symgrad_jacobian():
    """solve_ivp(method='BDF', jac=sg.jacobian(rhs, argnums=1)) gives the hand-written Jacobian's solution."""
    jac = sg.jacobian(robertson, argnums=1)
    y = np.array([0.7, 3e-5, 0.29])
    assert_close(jac(0.0, y), robertson_jac(0.0, y))
    kw = dict(method="BDF", rtol=1e-8, atol=1e-12)
    ours = solve_ivp(robertson, (0, 40.0), [1.0, 0.0, 0.0], jac=jac, **kw)
    ref = solve_ivp(robertson, (0, 40.0), [1.0, 0.0, 0.0], jac=robertson_jac, **kw)
    assert ours.success and ref.success
    assert_close(ours.y[:, -1], ref.y[:, -1], rtol=1e-10)


def exponential_decay(t, y):
    """solve_ivp docs: exponential decay, elementwise in y."""
    return -0.5 * y


def test_exponential_decay_jacobian_with_signature():
    y = np.array([2.0, 4.0, 8.0])
    assert_close(sg.jacobian(exponential_decay, argnums=1, signature="(),(n)->(n)")(0.0, y), -0.5 * np.eye(3))


def vdp(t, y, mu):
    """Van der Pol oscillator (scipy cookbook / solve_ivp examples)."""
    return np.stack([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])


def test_van_der_pol_jacobian_and_jvp():
    y, mu = np.array([1.5, -0.4]), 3.0
    J = np.array([[0.0, 1.0], [-2 * mu * y[0] * y[1] - 1.0, mu * (1 - y[0] ** 2)]])
    assert_close(sg.jacobian(vdp, argnums=1)(0.0, y, mu), J)
    v = np.array([0.25, 2.0])
    out, out_dot = sg.jvp(lambda y: vdp(0.0, y, mu), (y,), (v,))
    assert_close((out, out_dot), (vdp(0.0, y, mu), J @ v))


def lorenz(state, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    """Lorenz system (JAX and autograd examples; Lorenz 1963)."""
    x, y, z = state
    return np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def lorenz_jac(s, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    x, y, z = s
    return np.array([[-sigma, sigma, 0.0], [rho - z, -1.0, -x], [y, x, -beta]])


def test_lorenz_jacobian_without_signature():
    s = np.array([1.0, 2.0, 20.0])
    assert_close(sg.jacobian(lorenz)(s), lorenz_jac(s))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lorenz_batched_jacobian_under_signature(dtype):
    """A batch of 4 states (4, 3) -> Jacobians (4, 3, 3), float64 and float32."""
    states = np.random.default_rng(1).normal(0, 5, size=(4, 3))
    jac = sg.jacobian(lorenz, signature="(3)->(3)")(states.astype(dtype))
    assert_close(jac, np.stack([lorenz_jac(s) for s in states]), dtype=dtype)


def pendulum(y, t, b, c):
    """scipy.integrate.odeint docs: damped pendulum, y = (theta, omega)."""
    theta, omega = y
    dydt = [omega, -b * omega - c * np.sin(theta)]
    return dydt


def test_pendulum_jacobian_of_list_output():
    """odeint's rhs returns a Python list; the user wraps it with np.array for the Jacobian."""
    y, b, c = np.array([np.pi - 0.1, 0.0]), 0.25, 5.0
    J = sg.jacobian(lambda y: np.array(pendulum(y, 0.0, b, c)))(y)
    assert_close(J, np.array([[0.0, 1.0], [-c * np.cos(y[0]), -b]]))


def sir(t, y, beta, gamma):
    """SIR epidemic model (a standard solve_ivp tutorial)."""
    S, I, R = y
    N = S + I + R
    return np.array([-beta * S * I / N, beta * S * I / N - gamma * I, gamma * I])


def test_sir_jacobian_against_autograd():
    y = np.array([990.0, 10.0, 0.0])
    ref = autograd.jacobian(as_autograd(sir), argnum=1)(0.0, y, 0.3, 0.1)
    assert_close(sg.jacobian(sir, argnums=1)(0.0, y, 0.3, 0.1), ref)


def euler_decay(k, y0=1.0, h=0.05, steps=20):
    """Sensitivity of an explicit Euler integration (a loop over a fixed range) to the rate k."""
    y = y0
    for _ in range(steps):
        y = y + h * (-k * y)
    return y


def test_euler_loop_sensitivity_closed_form():
    """y_N = y0 (1 - h k)^N, so dy_N/dk = -N h y0 (1 - h k)^(N-1); elementwise in k (batch of rates)."""
    ks = np.array([0.5, 1.0, 2.0])
    assert_close(sg.grad(euler_decay)(ks), -20 * 0.05 * (1 - 0.05 * ks) ** 19)


def two_body(t, s):
    """Kepler two-body problem in the plane (classic solve_ivp example)."""
    x, y, vx, vy = s
    r = np.sqrt(x ** 2 + y ** 2)
    return np.array([vx, vy, -x / r ** 3, -y / r ** 3])


def test_two_body_jacobian_against_autograd_and_hessian_of_energy():
    s = np.array([0.8, 0.3, -0.2, 1.1])
    assert_close(sg.jacobian(two_body, argnums=1)(0.0, s), autograd.jacobian(as_autograd(two_body), argnum=1)(0.0, s))

    def energy(s):
        """Kepler energy (1/2)|v|^2 - 1/|r|."""
        return 0.5 * (s[2] ** 2 + s[3] ** 2) - 1.0 / np.sqrt(s[0] ** 2 + s[1] ** 2)
    x, y = s[:2]
    r = np.hypot(x, y)
    H = np.zeros((4, 4))
    H[:2, :2] = (np.eye(2) * r ** 2 - 3 * np.outer(s[:2], s[:2])) / r ** 5
    H[2:, 2:] = np.eye(2)
    assert_close(sg.hessian(energy)(s), H)
