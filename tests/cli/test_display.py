"""Notebook and terminal display of traced functions."""
import numpy as np
import pytest

pretty = pytest.importorskip("IPython.lib.pretty").pretty

import symgrad


def lse(x, y):
    return np.log(np.exp(x) + np.exp(y))


def test_latex_and_text_display():
    t = symgrad.trace(lse, 0.0, 0.0)
    assert str(t) == "lse(x, y) = log(exp(x) + exp(y))"
    latex = t._repr_latex_()
    assert latex.startswith("$\\begin{aligned}\\operatorname{lse}(x, y) &= \\log{\\left(e^{x} + e^{y} \\right)}")
    assert "\\frac{\\partial \\operatorname{lse}}{\\partial x} &= \\frac{e^{x}}{e^{x} + e^{y}}" in latex
    text = pretty(t)
    assert text.splitlines()[0] == "lse(x, y) =" and "∂lse/∂y =" in text


def test_vector_output_display_has_no_gradient():
    t = symgrad.trace(np.exp, np.zeros(2), signature="(n)->(n)")
    assert t._repr_latex_().startswith("$\\displaystyle \\operatorname{exp}(x) = ")
    assert "∂" not in pretty(t)
