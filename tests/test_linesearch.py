"""Line searches of nsopt.linesearch: the subgradient Wolfe conditions ([YVGS10] eqs. 23-24)
and the exact search (requirements R19-R21, R34 of the 002 notes)."""
import math

import numpy as np
import pytest

import nsopt
from nsopt.linesearch import LineSearchResult, exact_line_search, wolfe_line_search
from nsopt.oracle import LineFunction
from nsopt.regularizers import L1, L2


def _toy_line():
    """phi(eta) = 10 |1 - 10 eta| + |1 - eta|: the first line of the toy f = 10|x| + |y| from
    (1, 1) along -grad f (notes 002, Sec. 2.8); minimiser 0.1, phi(0) = 11, phi'(0+) = -101."""
    f = L1().compose(np.diag([10.0, 1.0]))
    return f.restrict(np.ones(2), np.array([-10.0, -1.0]))


def _wolfe_ok(line, res, f0, slope0, c1=1e-4, c2=0.9):
    return (line.value(res.eta) <= f0 + c1 * res.eta * slope0
            and line.derivative(res.eta, 1) >= c2 * slope0)


def test_toy_line_exact_and_wolfe():
    line = _toy_line()
    ex = exact_line_search(line)
    assert ex.exact and ex.success and ex.eta == pytest.approx(0.1, abs=1e-15)
    assert ex.value == pytest.approx(0.9, abs=1e-14)
    wo = wolfe_line_search(line, 11.0, -101.0)
    assert wo.success and not wo.exact and wo.n_evals >= 2
    assert _wolfe_ok(line, wo, 11.0, -101.0)
    # eta0 = 1 violates sufficient decrease (phi(1) = 90): the search had to zoom
    assert 0 < wo.eta < 1


def test_smooth_quadratic_accepts_unit_step():
    line = L2().restrict(np.array([3.0]), np.array([-1.0]))          # 0.5 (3 - eta)^2
    res = wolfe_line_search(line, 4.5, -3.0)
    assert res.success and res.eta == 1.0 and res.n_evals == 2
    # a long first trial is pulled back into the Wolfe interval
    res = wolfe_line_search(line, 4.5, -3.0, eta0=100.0)
    assert res.success and _wolfe_ok(line, res, 4.5, -3.0)
    # a tiny first trial is expanded
    res = wolfe_line_search(line, 4.5, -3.0, eta0=1e-6)
    assert res.success and res.eta > 0.3 and _wolfe_ok(line, res, 4.5, -3.0)


def test_not_a_descent_direction_gives_zero_step():
    """R21: with sup dPhi(0) >= 0 no step is taken (what ls-BMRM needs)."""
    f = L1().compose(np.eye(2))
    line = f.restrict(np.zeros(2), np.array([1.0, -1.0]))             # |eta| + |eta|
    assert wolfe_line_search(line, 0.0, 2.0) == LineSearchResult(0.0, 0.0, 0, False)
    ex = exact_line_search(line)
    assert ex.eta == 0.0 and ex.exact
    assert wolfe_line_search(line, 0.0, math.nan).eta == 0.0         # NaN slope: no step


def test_unbounded_ray_is_reported_not_looped():
    """R34: Phi -> -inf is reported as eta = inf, value = -inf, within max_iter trials."""
    f = nsopt.FunctionOracle(lambda w: -w[0], lambda w: np.array([-1.0]), dim=1)
    line = f.restrict(np.zeros(1), np.ones(1))
    res = wolfe_line_search(line, 0.0, -1.0)
    assert res.eta == math.inf and res.value == -math.inf and not res.success
    assert res.n_evals <= 2 * 60
    ex = exact_line_search(line)                                     # GenericLine: Wolfe fallback
    assert ex.eta == math.inf and not ex.exact
    capped = exact_line_search(line, hi=5.0)                          # a finite cap is not "unbounded"
    assert capped.eta == 5.0 and capped.value == -5.0
    # an exact line (piecewise linear with known breakpoints) that decreases forever
    g = L1().compose(np.eye(1))
    ex = exact_line_search(g.restrict(np.array([1.0]), np.array([-1.0])) * 1.0 + _Linear(-2.0))
    assert ex.eta == math.inf and ex.value == -math.inf


class _Linear(LineFunction):
    def __init__(self, slope):
        self.slope = slope

    def value(self, eta):
        return self.slope * eta

    def derivative(self, eta, side=1):
        return self.slope

    def breakpoints(self):
        return np.empty(0)


def test_exact_falls_back_to_wolfe_on_a_generic_line():
    f = nsopt.FunctionOracle(lambda w: float(np.abs(w - 3).sum() + 0.5 * w @ w),
                             lambda w: np.sign(w - 3) + w, dim=2)
    w, p = np.zeros(2), np.array([1.0, 2.0])
    line = f.restrict(w, p)
    res = exact_line_search(line)
    assert not res.exact and res.success
    f0, s0 = line.value(0.0), line.derivative(0.0, 1)
    assert _wolfe_ok(line, res, f0, s0)
    # f0 and slope0 may be passed instead of computed
    again = exact_line_search(line, f0=f0, slope0=s0)
    assert again.eta == res.eta and again.n_evals == res.n_evals - 2


def test_exact_search_respects_the_interval():
    line = _toy_line()
    assert exact_line_search(line, 0.0, 0.05).eta == pytest.approx(0.05)
    res = exact_line_search(line, 0.2, 1.0)
    assert res.eta == pytest.approx(0.2) and res.success


def test_exact_search_matches_a_grid_on_a_hinge_risk():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.where(rng.standard_normal(40) > 0, 1.0, -1.0)
    J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), L2(), 0.05)
    w, p = rng.standard_normal(3), rng.standard_normal(3)
    line = J.restrict(w, p)
    res = exact_line_search(line)
    grid = np.linspace(0, 3 * max(res.eta, 1.0), 30001)
    assert res.exact and res.value <= min(J.value(w + t * p) for t in grid) + 1e-12
    assert line.derivative(res.eta, -1) <= 1e-12 and line.derivative(res.eta, 1) >= -1e-12


@pytest.mark.parametrize("c1,c2", [(0.0, 0.9), (0.5, 0.5), (0.9, 0.1), (1e-4, 1.0)])
def test_constants_are_checked(c1, c2):
    with pytest.raises(ValueError, match="c1 < c2"):
        wolfe_line_search(_toy_line(), 11.0, -101.0, c1=c1, c2=c2)


def test_eta0_is_checked():
    with pytest.raises(ValueError, match="eta0"):
        wolfe_line_search(_toy_line(), 11.0, -101.0, eta0=0.0)
