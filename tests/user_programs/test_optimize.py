"""scipy.optimize tutorials and docs, with symgrad supplying jac / hess / hessp.

References: SciPy's own analytic derivatives (rosen_der, rosen_hess, rosen_hess_prod),
the closed forms printed in the SciPy tutorials, and the documented optima.
"""
import numpy as np
import pytest
from scipy import optimize

import symgrad as sg

from ._reference import assert_close


def rosen(x):
    """scipy.optimize tutorial ("Unconstrained minimization"): the Rosenbrock function."""
    return sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


def rosen_np(x):
    """The same with np.sum (the README's form)."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


X0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])   # the tutorial's starting point


def test_rosen_grad_with_signature_matches_rosen_der():
    assert_close(sg.grad(rosen_np, signature="(n)->()")(X0), optimize.rosen_der(X0))


def test_rosen_builtin_sum_grad_without_signature():
    """The tutorial's exact code (Python's builtin sum over a slice) with JAX habits: no signature."""
    assert_close(sg.grad(rosen)(X0), optimize.rosen_der(X0))


def test_rosen_hessian_without_signature_matches_rosen_hess():
    assert_close(sg.hessian(rosen_np)(X0), optimize.rosen_hess(X0))


def test_rosen_hvp_matches_rosen_hess_prod():
    p = np.array([0.5, -1.0, 2.0, 0.25, 1.5])
    assert_close(sg.hvp(rosen_np, (X0,), (p,)), optimize.rosen_hess_prod(X0, p))


def test_rosen_value_and_grad_float32():
    x = X0.astype(np.float32)
    val, g = sg.value_and_grad(rosen_np, signature="(n)->()")(x)
    assert_close((val, g), (optimize.rosen(X0), optimize.rosen_der(X0)), dtype=np.float32)


def test_rosen_batched_grad_under_signature():
    """A batch of 4 starting points: leading dimension looped, one gradient per row."""
    xs = np.random.default_rng(0).uniform(-2, 2, size=(4, 5))
    assert_close(sg.grad(rosen_np, signature="(n)->()")(xs), np.stack([optimize.rosen_der(x) for x in xs]))


def test_minimize_bfgs_newton_cg_with_symgrad_derivatives():
    """Tutorial: minimize(rosen, x0, method='BFGS', jac=rosen_der) and Newton-CG with hess;
    symgrad supplies jac and hess.  Reference: the documented optimum x = ones(5)."""
    res = optimize.minimize(rosen_np, X0, method="BFGS", jac=sg.grad(rosen_np), options={"gtol": 1e-8})
    assert res.success
    assert_close(res.x, np.ones(5), rtol=1e-6, atol=1e-6)
    res = optimize.minimize(rosen_np, X0, method="Newton-CG", jac=sg.grad(rosen_np),
                            hess=sg.hessian(rosen_np), options={"xtol": 1e-10})
    assert res.success
    assert_close(res.x, np.ones(5), rtol=1e-6, atol=1e-6)


def cons_f(x):
    """scipy.optimize tutorial, trust-constr: nonlinear constraint function (returns a list)."""
    return [x[0] ** 2 + x[1], x[0] ** 2 - x[1]]


def test_trust_constr_constraint_jacobian_and_hessian():
    """Tutorial: cons_J = [[2 x0, 1], [2 x0, -1]] and cons_H(x, v) = v0 [[2,0],[0,0]] + v1 [[2,0],[0,0]]."""
    x, v = np.array([0.4, -0.3]), np.array([0.7, 1.3])
    jac = sg.jacobian(lambda x: np.stack(cons_f(x)))(x)
    assert_close(jac, np.array([[2 * x[0], 1.0], [2 * x[0], -1.0]]))
    hess = sg.hessian(lambda x: np.dot(v, np.stack(cons_f(x))))(x)
    assert_close(hess, (v[0] + v[1]) * np.array([[2.0, 0.0], [0.0, 0.0]]), atol=1e-12)


def slsqp_objective(x):
    """scipy.optimize tutorial (SLSQP): fun = lambda x: (x[0] - 1)**2 + (x[1] - 2.5)**2."""
    return (x[0] - 1) ** 2 + (x[1] - 2.5) ** 2


def test_slsqp_example_with_symgrad_jac():
    """The tutorial's constrained problem; documented solution x = (1.4, 1.7)."""
    cons = ({"type": "ineq", "fun": lambda x: x[0] - 2 * x[1] + 2},
            {"type": "ineq", "fun": lambda x: -x[0] - 2 * x[1] + 6},
            {"type": "ineq", "fun": lambda x: -x[0] + 2 * x[1] + 2})
    x = np.array([2.0, 0.0])
    assert_close(sg.grad(slsqp_objective)(x), np.array([2.0, -5.0]))  # 2 (x - (1, 2.5))
    res = optimize.minimize(slsqp_objective, x, method="SLSQP", jac=sg.grad(slsqp_objective),
                            bounds=((0, None), (0, None)), constraints=cons)
    assert_close(res.x, np.array([1.4, 1.7]), rtol=1e-6, atol=1e-6)


def root_fun(x):
    """scipy.optimize tutorial, root finding: the system with its Jacobian `jac` given in the docs."""
    return [x[0] + 0.5 * (x[0] - x[1]) ** 3 - 1.0,
            0.5 * (x[1] - x[0]) ** 3 + x[1]]


def root_jac(x):
    return np.array([[1 + 1.5 * (x[0] - x[1]) ** 2, -1.5 * (x[0] - x[1]) ** 2],
                     [-1.5 * (x[1] - x[0]) ** 2, 1 + 1.5 * (x[1] - x[0]) ** 2]])


def test_root_hybr_with_symgrad_jacobian():
    """Tutorial: root(fun, [0, 0], jac=jac, method='hybr'); documented root (0.8411639, 0.1588361)."""
    f = lambda x: np.asarray(root_fun(x))  # noqa: E731  (users wrap the list with np.asarray)
    x = np.array([0.3, -0.2])
    assert_close(sg.jacobian(f)(x), root_jac(x))
    sol = optimize.root(f, [0.0, 0.0], jac=sg.jacobian(f), method="hybr")
    assert_close(sol.x, np.array([0.8411639, 0.1588361]), rtol=1e-6, atol=1e-7)


def enzyme_model(x, u):
    """scipy.optimize.least_squares docs: Kowalik-Osborne enzyme reaction model."""
    return x[0] * (u ** 2 + x[1] * u) / (u ** 2 + x[2] * u + x[3])


U = np.array([4.0, 2.0, 1.0, 5.0e-1, 2.5e-1, 1.67e-1, 1.25e-1, 1.0e-1, 8.33e-2, 7.14e-2, 6.25e-2])


def enzyme_jac(x, u):
    """The docs' hand-written Jacobian."""
    J = np.empty((u.size, x.size))
    den = u ** 2 + x[2] * u + x[3]
    num = u ** 2 + x[1] * u
    J[:, 0] = num / den
    J[:, 1] = x[0] * u / den
    J[:, 2] = -x[0] * num * u / den ** 2
    J[:, 3] = -x[0] * num / den ** 2
    return J


@pytest.mark.parametrize("signature", [None, "(k),(m)->(m)"])
def test_least_squares_enzyme_jacobian(signature):
    x = np.array([2.5, 3.9, 4.15, 3.9])
    assert_close(sg.jacobian(enzyme_model, signature=signature)(x, U), enzyme_jac(x, U))


def curve_fit_model(x, a, b, c):
    """scipy.optimize.curve_fit docs: a * exp(-b x) + c."""
    return a * np.exp(-b * x) + c


def test_curve_fit_model_parameter_jacobians_elementwise():
    """Elementwise in every argument, so signature=None keeps ufunc broadcasting: one partial per x."""
    xdata = np.linspace(0, 4, 50)
    a, b, c = 2.5, 1.3, 0.5
    ga, gb, gc = sg.grad(curve_fit_model, argnums=(1, 2, 3))(xdata, a, b, c)
    e = np.exp(-b * xdata)
    assert_close((ga, gb, gc), (e, -a * xdata * e, np.ones_like(xdata)))


def test_rosen_batched_hessian_and_jvp_under_signature():
    """Batch of 3 points under "(n)->()": Hessians (3, n, n) and JVPs of the gradient (HVPs) per row."""
    xs = np.random.default_rng(5).uniform(-1.5, 1.5, size=(3, 4))
    assert_close(sg.hessian(rosen_np, signature="(n)->()")(xs), np.stack([optimize.rosen_hess(x) for x in xs]))
    ps = np.random.default_rng(6).standard_normal((3, 4))
    assert_close(sg.hvp(rosen_np, (xs,), (ps,), signature="(n)->()"),
                 np.stack([optimize.rosen_hess_prod(x, p) for x, p in zip(xs, ps)]))


def test_least_squares_enzyme_jacobian_float32_batched():
    """Two parameter vectors at once under "(k),(m)->(m)", float32: Jacobians (2, m, k)."""
    xs = np.array([[2.5, 3.9, 4.15, 3.9], [0.19, 0.19, 0.12, 0.14]])
    J = sg.jacobian(enzyme_model, signature="(k),(m)->(m)")(xs.astype(np.float32), U.astype(np.float32))
    assert_close(J, np.stack([enzyme_jac(x, U) for x in xs]), dtype=np.float32)
