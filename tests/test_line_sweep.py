"""The sorted-free line search of piecewise-linear losses plus quadratics
(ScalarLine.jumps, SumLine.sweep, nsopt._line_search_kernels.first_crossing)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nsopt
from nsopt.losses import EpsilonInsensitive, Hinge, LeastAbsoluteDeviation, Novelty, Quantile
from nsopt.oracle import _minimize_piecewise
from nsopt.regularizers import L2

PIECEWISE_LINEAR = {
    "hinge": lambda X, y: Hinge(X, np.where(y >= 0, 1.0, -1.0)),
    "lad": LeastAbsoluteDeviation,
    "quantile": lambda X, y: Quantile(X, y, 0.3),
    "eps-insensitive": lambda X, y: EpsilonInsensitive(X, y, 0.25),
    "novelty": lambda X, y: Novelty(X),
}


def _case(draw_seed, name, m, d):
    rng = np.random.default_rng(draw_seed)
    # dyadic data: many exact ties between kinks, the hard case for running sums
    X = np.round(rng.standard_normal((m, d)) * 4) / 4
    y = np.round(rng.standard_normal(m) * 4) / 4
    w, p = np.round(rng.standard_normal(d) * 4) / 4, np.round(rng.standard_normal(d) * 4) / 4
    return PIECEWISE_LINEAR[name](X, y), w, p


@pytest.mark.parametrize("name", sorted(PIECEWISE_LINEAR))
def test_jumps_are_the_derivative_steps(name):
    loss, w, p = _case(0, name, 40, 3)
    line = loss.restrict(w, p)
    etas, steps = line.jumps()
    assert np.all(steps >= 0)
    for eta in np.unique(etas[np.isfinite(etas)])[:10]:
        expected = line.derivative(eta, 1) - line.derivative(eta, -1)
        assert steps[etas == eta].sum() == pytest.approx(expected, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(PIECEWISE_LINEAR)),
       m=st.integers(1, 40), d=st.integers(1, 4), lam=st.sampled_from([0.0, 1e-3, 1.0]),
       hi=st.sampled_from([np.inf, 0.5, 4.0]))
def test_sweep_minimiser_is_as_good_as_the_bisection(seed, name, m, d, lam, hi):
    loss, w, p = _case(seed, name, m, d)
    line = loss.restrict(w, p) if lam == 0 else nsopt.RegularizedRisk(loss, L2(), lam).restrict(w, p)
    assert line.sweep() is not None
    eta = line.minimize(0.0, hi)
    ref = _minimize_piecewise(line, np.asarray(line.breakpoints()), 0.0, hi)
    assert 0.0 <= eta <= hi
    if np.isinf(ref):
        assert np.isinf(eta)
        return
    scale = 1e-12 * max(1.0, abs(line.value(ref)))
    assert line.value(eta) <= line.value(ref) + scale


def test_a_loss_that_is_not_piecewise_linear_has_no_jumps():
    X, y = np.eye(3), np.array([1.0, -1.0, 1.0])
    line = nsopt.losses.SquaredHinge(X, y).restrict(np.zeros(3), np.ones(3))
    assert line.jumps() is None and line.sweep() is None
    assert line.affine_between_breakpoints  # the closed-form root on its piece still applies


def test_a_tiny_negative_slope_past_the_last_kink_is_followed():
    """Explore-run find (seed 5173): a hinge line whose last example has q ~ 2e-16. Past the
    kink at eta ~ 4.4e9 the derivative is -1.4e-16 (not rounding: the loss still decreases,
    by 2.4e-7 more up to the next kink). Without curvature the sweep's tolerance must not
    accept it; the exact-sign check hands the line to the generic search."""
    X = np.array([[0.0], [1.0], [2.28348030e-10], [-2.220446049250313e-16]])
    loss = Hinge(X, np.array([1.0, -1.0, -1.0, 1.0]))
    line = loss.restrict(np.array([-1.0]), np.array([-1.0]))
    eta = line.minimize(0.0, np.inf)
    grid = np.linspace(0.0, 4.0 * max(eta, 1.0), 4001)
    assert line.value(eta) <= min(line.value(t) for t in grid) + 1e-12
    assert line.derivative(eta, 1) >= 0
