"""The numbered example scripts (examples/topic*.py) print the numbers they claim.

Each script runs once per session in a subprocess (tests/example_runner.py, shared with
test_examples.py; it inherits PYTHONPATH and the session's SYMGRAD_CACHE_DIR).  Its printed
``label: value`` lines are parsed and compared with closed forms or with computations done here
independently of symgrad.
"""
import json
import subprocess

import numpy as np
import pytest
from scipy.special import expit

from .example_runner import ROOT, TIMEOUT, run_example

# one worker runs every example once (tests/example_runner.py caches each run per process;
# README runs pytest with --dist loadgroup): on two workers half the scripts ran twice, ~90 s
pytestmark = pytest.mark.xdist_group("examples")


def run(script: str) -> str:
    r = run_example(ROOT / "examples" / script)  # shared with test_examples.py: one run per session
    if isinstance(r, subprocess.TimeoutExpired):
        pytest.fail(f"{script} did not finish within {TIMEOUT} s; partial output:\n{r.stdout}")
    assert r.returncode == 0, f"{script} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    return r.stdout


def field(out: str, label: str) -> str:
    """The text after ``label: `` on the (unique) line starting with ``label``."""
    hits = [line[len(label) + 2:] for line in out.splitlines() if line.startswith(label + ": ")]
    assert len(hits) == 1, f"expected one line starting with {label!r}, found {len(hits)} in:\n{out}"
    return hits[0].strip()


def num(out: str, label: str) -> float:
    return float(field(out, label).split()[0])


def arr(out: str, label: str) -> np.ndarray:
    text = field(out, label).replace("nan", "NaN").replace("inf", "Infinity")
    return np.array(json.loads(text), dtype=float)


def close(a, b, rtol=1e-13, atol=0.0):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# -- topic 1 -------------------------------------------------------------------------------------

def test_topic1_softplus():
    out = run("topic1_softplus.py")
    assert field(out, "numpy float32 exp(100)") == "inf"
    assert np.isnan(num(out, "numpy float32 naive derivative at x=100"))
    assert field(out, "derived df/dx") == "exp(x)/(exp(x) + 1)"
    assert field(out, "rewrite of x_bar").startswith("sigmoid_from_ratio: exp(x)/(exp(x) + 1) -> sigmoid(x)")
    before = [float(v) for v in field(out, "float32 bits of error (mean, max) before").split()]
    after = [float(v) for v in field(out, "float32 bits of error (mean, max) after").split()]
    assert before[1] == 32.0 and after[1] < 2.0 and after[0] < before[0]
    assert field(out, "rewrite of f (out)").endswith("log(exp(x) + 1) -> softplus(x)")
    assert field(out, "symgrad.grad at x=100 (float32)") == "1.0 dtype float32"
    assert np.isnan(num(out, "symgrad.grad(stabilize=False) at x=100 (float32)"))
    assert num(out, "symgrad.jit(softplus) at x=100 (float32)") == 100.0
    assert num(out, "custom gradient at x=100 (float32)") == 1.0
    xs = arr(out, "points")
    expected = expit(xs)
    for label in ("symgrad.grad", "custom gradient", "custom gradient via jvp"):
        close(arr(out, label), expected, rtol=4e-16)


# -- topic 2 -------------------------------------------------------------------------------------

def test_topic2_custom_gradients():
    out = run("topic2_custom_gradients.py")
    assert num(out, "lse(1000, 0) custom") == 1000.0
    plain = arr(out, "grad of plain lse at (1000, 0), stabilize=False")
    assert np.isnan(plain[0]) and plain[1] == 0.0
    assert arr(out, "grad of custom lse at (1000, 0)").tolist() == [1.0, 0.0]
    s = expit(0.3 - (-0.5))
    close(num(out, "sigmoid(x - y) at (0.3, -0.5) by hand"), s)
    close(arr(out, "grad of custom lse at (0.3, -0.5)"), [s, 1 - s])
    close(num(out, "jvp of custom lse with tangent (2, -1)"), 2 * s - (1 - s))
    close(arr(out, "Hessian of custom lse"), s * (1 - s) * np.array([[1, -1], [-1, 1]]), rtol=1e-12)
    assert field(out, "grad_fn received variables") == "['weights']"
    upstream, xs, w = np.array([1.0, -1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([0.5, 2.0])
    for kind in ("custom", "plain"):
        close(arr(out, f"{kind} affine(x)"), w[0] + w[1] * xs)
        close(arr(out, f"{kind} d/dx"), upstream * w[1])
        close(arr(out, f"{kind} d/dweights"), [upstream.sum(), upstream @ xs])


# -- topic 3 -------------------------------------------------------------------------------------

def test_topic3_jvp_vs_vjp():
    out = run("topic3_jvp_vs_vjp.py")
    x0, x1, x2 = 1.0, 2.0, 0.5
    e = np.exp(x1 * x2)
    close(arr(out, "f(x) at x = [1, 2, 0.5]"), [x0 * x1 * np.sin(x2), x0 + e])
    J = np.array([[x1 * np.sin(x2), x0 * np.sin(x2), x0 * x1 * np.cos(x2)],
                  [1.0, x2 * e, x1 * e]])
    for label in ("Jacobian from 3 JVPs (columns)", "Jacobian from 2 VJPs (rows)", "symgrad.jacobian"):
        assert arr(out, label).shape == (2, 3)
        close(arr(out, label), J)
    v = np.array([0.5, -1.0, 2.0])
    close(arr(out, "J v by the VJP of the VJP"), J @ v)
    close(arr(out, "J v by symgrad.jvp"), J @ v)
    assert field(out, "g: R^400 -> R^3; passes for the full Jacobian") == "JVP 400, VJP 3"
    assert num(out, "time for 400 JVPs") > 0 and num(out, "time for 3 VJPs") > 0
    assert num(out, "max |J_jvp - J_vjp|") < 1e-14


# -- topic 4 -------------------------------------------------------------------------------------

def test_topic4_higher_order():
    out = run("topic4_higher_order.py")
    x = 0.7
    close(num(out, "f(0.7)"), np.exp(x) * np.sin(x))
    close(num(out, "f'(0.7) inner accumulator"), np.exp(x) * (np.sin(x) + np.cos(x)))
    close(num(out, "f''(0.7) outer accumulator"), 2 * np.exp(x) * np.cos(x))
    close(num(out, "f''(0.7) symgrad.hessian"), 2 * np.exp(x) * np.cos(x))
    xv = np.array([0.5, -1.0, 2.0, 0.0, 1.5])
    v = np.array([1.0, 2.0, -1.0, 0.5, 0.0])
    p = np.exp(xv) / np.exp(xv).sum()
    Hv = p * v - p * (p @ v)
    for label in ("symgrad.hvp", "symgrad.hessian(f)(x) @ v", "(diag(p) - p p^T) @ v",
                  "eager forward-over-backward H v"):
        close(arr(out, label), Hv, rtol=1e-12, atol=1e-16)
    close(arr(out, "eager gradient (= p)"), p)
    assert num(out, "max |H - closed form|") < 1e-15


# -- topic 5 -------------------------------------------------------------------------------------

def test_topic5_backprop_by_hand():
    out = run("topic5_backprop_by_hand.py")
    x, y, z = 1.0, 2.0, -3.0
    assert arr(out, "forward by hand (q, Loss)").tolist() == [x + y, z * (x + y)]
    assert arr(out, "adjoints by hand (x, y, z)").tolist() == [z, z, x + y]
    assert arr(out, "symgrad.grad (x, y, z)").tolist() == [z, z, x + y]
    assert "backward pass" in out
    rng = np.random.default_rng(5)           # the script's draws, in the script's order
    m, k, n = 2, 3, 4
    A, _b = rng.standard_normal((m, k)), rng.standard_normal(k)
    G = rng.standard_normal((m, k))
    close(arr(out, "broadcast bias, G summed over rows"), G.sum(axis=0))
    close(arr(out, "broadcast bias, symgrad dL/db"), G.sum(axis=0), rtol=1e-14)
    B, G = rng.standard_normal((k, n)), rng.standard_normal((m, n))
    close(arr(out, "matmul: symgrad dL/dA"), G @ B.T, rtol=1e-13, atol=1e-15)
    close(arr(out, "matmul: symgrad dL/dB"), A.T @ G, rtol=1e-13, atol=1e-15)
    assert num(out, "matmul: max |dL/dA - G B^T|") < 1e-14
    assert num(out, "matmul: max |dL/dB - A^T G|") < 1e-14


# -- topic 6 -------------------------------------------------------------------------------------

def test_topic6_logistic_regression():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    out = run("topic6_logistic_regression.py")
    X, labels = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = 2.0 * labels - 1.0
    assert arr(out, "samples, features").tolist() == [569, 30]
    close(num(out, "J at zero"), 569 * np.log(2), rtol=1e-12)
    assert num(out, "at a random point, |J - J_hand|") < 1e-10
    assert num(out, "at a random point, max |grad - grad_hand| / max |grad_hand|") < 1e-12
    # The optimum, independently: scikit-learn's fit, scored with numpy.
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, labels)
    w, b = ref.coef_.ravel(), ref.intercept_[0]
    j_ref = np.sum(np.logaddexp(0.0, -y * (X @ w + b))) + 0.5 * w @ w
    j = num(out, "L-BFGS-B final objective")
    assert j <= j_ref * (1 + 1e-10)
    close(j, j_ref, rtol=1e-9)
    assert num(out, "L-BFGS-B final gradient norm") < 1e-4
    assert num(out, "max |theta - theta_sklearn|") < 1e-4
    close(num(out, "training accuracy"), ref.score(X, labels))
    assert num(out, "training accuracy") > 0.98


# -- topic 7 -------------------------------------------------------------------------------------

def test_topic7_robertson():
    out = run("topic7_robertson.py")
    y0, y1, y2 = 0.9, 1e-5, 0.1
    J = [[-0.04, 1e4 * y2, 1e4 * y1], [0.04, -1e4 * y2 - 6e7 * y1, -1e4 * y1], [0.0, 6e7 * y1, 0.0]]
    close(arr(out, "symgrad Jacobian at y = [0.9, 1e-5, 0.1]"), J, rtol=1e-14)
    # Reference solution at t = 40 (Hairer & Wanner; reproduced by Radau at rtol 1e-13).
    reference = np.array([0.7158270687193135, 9.185534764529634e-06, 0.2841637457458220])
    counts = {}
    for label in ("exact Jacobian", "finite differences"):
        y_end = arr(out, f"{label}: y(40)")
        close(y_end, reference, rtol=1e-8)
        assert abs(num(out, f"{label}: 1 - sum(y(40))")) < 1e-13
        counts[label] = arr(out, f"{label}: steps, rhs calls, Jacobian evaluations")
        assert counts[label][2] >= 1
    close(arr(out, "exact Jacobian: y(40)"), arr(out, "finite differences: y(40)"), rtol=1e-8)
    # finite differences spend extra right-hand-side calls on every Jacobian
    assert counts["finite differences"][1] > counts["exact Jacobian"][1]


# -- topic 8 -------------------------------------------------------------------------------------

def test_topic8_aot():
    out = run("topic8_aot.py")
    assert "wrote " in out and "gaussian_nll_grad" in out and "softplus_grad" in out
    assert field(out, "fresh process loaded sympy/symgrad") == "[]"
    for name in ("x", "mu", "log_sigma"):
        line = field(out, f"d nll / d {name}")
        aot_jit, aot_hand = (float(part.split(": ")[-1]) for part in line.split("  max |AOT - by hand|"))
        assert aot_jit <= 1e-15 and aot_hand < 1e-13, line
    assert num(out, "nll: max |AOT - JIT|") <= 1e-15
    sp_x = [-800.0, -20.0, 0.0, 1.5, 100.0, 800.0]
    close(arr(out, f"AOT softplus_grad at {sp_x}"), expit(sp_x), rtol=4e-16)
    close(arr(out, "JIT softplus grad"), expit(sp_x), rtol=4e-16)
    close(num(out, "AOT d nll/d log_sigma at x=3, mu=-1"), 1 - 16 * np.exp(-0.5))
