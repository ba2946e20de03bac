"""Rounding at the edges: tiny brackets, bounds that meet the best value to the last bit,
one-example data sets, extreme scales (issue: every word nsopt says is true, item 1)."""
import math

import numpy as np
import pytest

from nsopt.oracle import LineFunction


class _TinyRootLine(LineFunction):
    """phi(eta) = 0.5 (eta - r)^2 with a (fake) breakpoint just above 0: the root r lies in a
    bracket [0, 1.6e-16] too narrow for Brent's relative stopping test."""

    def __init__(self, root, kink=1.6e-16):
        self.root, self.kink = root, kink

    def value(self, eta):
        return 0.5 * (eta - self.root) ** 2

    def derivative(self, eta, side=1):
        return eta - self.root

    def breakpoints(self):
        return np.array([self.kink])


@pytest.mark.parametrize("root", [1e-20, 1e-300, 5e-324, 1e-17, 1.5e-16])
def test_line_minimize_finds_a_root_in_a_tiny_bracket(root):
    # found on a fresh install: brentq(xtol=1e-300, maxiter=500) raised RuntimeError here
    eta = _TinyRootLine(root).minimize(0.0, math.inf)
    assert abs(eta - root) <= max(1e-12 * root, 1e-300)  # brentq's absolute xtol


class _JumpAtZeroLine(LineFunction):
    """phi'(0+) < 0 by rounding noise and phi' > 0 on every positive float: the minimiser is 0
    itself (to one float). Brent's relative test around a root at 0 never ends: that raised
    RuntimeError on a fresh install (squared hinge line, hypothesis 6.170: these
    numbers are that line's)."""

    def value(self, eta):
        return eta

    def derivative(self, eta, side=1):
        return -1.007451470738748e-17 if eta == 0.0 else 3.8658454801716594e-238

    def breakpoints(self):
        return np.array([6.117392252670934e-15, 9.4])


def test_line_minimize_ends_when_the_derivative_jumps_at_zero():
    eta = _JumpAtZeroLine().minimize(0.0, math.inf)
    assert 0.0 <= eta <= 5e-324 * 2
