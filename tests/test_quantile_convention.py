"""Quantile(X, y, tau): ``tau`` is the quantile level (Koenker's pinball rho_tau, scikit-learn's
``QuantileRegressor(quantile=tau)``), not the level 1 - tau of [TVSL10] Table 5's printed loss.

Until issue 11 the loss was max(tau (f - y), (1 - tau)(y - f)) as printed, whose minimiser is
the (1 - tau)-quantile while the docstring promised the tau-quantile; every test here fails on
that code (an intercept-only fit at tau = 0.9 on 0..99 gave ~9-10, not ~89-90).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nsopt
from nsopt.losses import Quantile
from nsopt.regularizers import L1, L2


def _quantile_interval(y, tau):
    """The minimisers of c -> mean(rho_tau(y - c)): [y_(ceil(tau m)), y_(floor(tau m) + 1)]
    (order statistics, 1-based), one point when tau m is not an integer."""
    s = np.sort(y)
    m = s.size
    lo = s[math.ceil(tau * m) - 1]
    hi = s[min(math.floor(tau * m), m - 1)]
    return lo, hi


def _fit_constant(y, tau, method="ls-bmrm"):
    """The intercept-only model (X a column of ones), lam tiny."""
    J = nsopt.RegularizedRisk(Quantile(np.ones((y.size, 1)), y, tau), L2(), lam=1e-10)
    res = nsopt.minimize(J, method=method, rtol=1e-10, max_iter=5000)
    assert res.success, res.message
    return float(res.x[0])


def test_intercept_only_fit_is_the_tau_quantile_of_0_to_99():
    y = np.arange(100.0)
    c = _fit_constant(y, 0.9)
    # the minimisers are [89, 90]; the old (1 - tau) convention gave [9, 10]
    assert 89.0 - 1e-6 <= c <= 90.0 + 1e-6


@settings(max_examples=20, deadline=None)
@given(tau=st.floats(0.05, 0.95), seed=st.integers(0, 2**32 - 1),
       m=st.integers(5, 60))
def test_intercept_only_fit_is_the_empirical_tau_quantile(tau, seed, m):
    y = np.random.default_rng(seed).exponential(size=m)  # skewed: the tau and 1 - tau
    lo, hi = _quantile_interval(y, tau)                   # quantiles lie far apart
    c = _fit_constant(y, tau)
    scale = 1e-6 * (1.0 + np.abs(y).max())
    assert lo - scale <= c <= hi + scale


@pytest.mark.parametrize("tau", [0.1, 0.3, 0.75])
def test_value_and_derivative_are_the_pinball_loss(tau):
    """The value is scikit-learn's ``mean_pinball_loss(alpha=tau)``; the derivative in the
    score is 1 - tau above the target and -tau below it (Koenker's weights)."""
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 3))
    y = rng.standard_normal(40)
    w = rng.standard_normal(3)
    loss = Quantile(X, y, tau)
    f = X @ w
    assert loss.value(w) == pytest.approx(metrics.mean_pinball_loss(y, f, alpha=tau), rel=1e-12)
    g = np.where(f > y, 1.0 - tau, -tau)
    assert np.allclose(loss.subgradient(w), X.T @ g / y.size, rtol=1e-12, atol=1e-15)


def test_kink_subdifferential_is_minus_tau_to_one_minus_tau():
    """One example on its kink f = y: the default subgradient is the left end -tau, and
    sup_subgradient along +p / -p gives the one-sided derivatives 1 - tau and tau."""
    tau = 0.8
    loss = Quantile(np.array([[1.0]]), np.array([2.0]), tau)
    w = np.array([2.0])
    assert loss.subgradient(w)[0] == pytest.approx(-tau)
    s_up, g_up = loss.sup_subgradient(w, np.array([1.0]))
    s_down, _ = loss.sup_subgradient(w, np.array([-1.0]))
    assert s_up == pytest.approx(1.0 - tau) and g_up[0] == pytest.approx(1.0 - tau)
    assert s_down == pytest.approx(tau)  # f'(w; -1) = -(left derivative -tau)


@pytest.mark.parametrize("tau", [0.2, 0.9])
def test_linear_model_matches_sklearn_quantile_regressor(tau):
    """The same problem as ``QuantileRegressor(quantile=tau, alpha)`` (mean pinball +
    alpha ||w||_1, unpenalised intercept): the same coefficients (an LP with a unique solution
    on continuous data), through the loss and through the estimator."""
    pytest.importorskip("sklearn", minversion="1.6")
    from sklearn.linear_model import QuantileRegressor

    from nsopt.sklearn import LinearRegressor

    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 1.0 + rng.exponential(size=60)
    alpha = 1e-3
    ref = QuantileRegressor(quantile=tau, alpha=alpha, fit_intercept=True,
                            solver="highs").fit(X, y)

    J = nsopt.RegularizedRisk(Quantile(X, y, tau), L1(), lam=alpha, fit_intercept=True)
    res = nsopt.minimize(J, method="proximal-bundle", rtol=1e-9, max_iter=20000)
    assert res.success, res.message
    assert np.allclose(res.x[:3], ref.coef_, atol=1e-5)
    est = LinearRegressor("quantile", quantile=tau, penalty="l1", alpha=alpha,
                          fit_intercept=True, tol=1e-9, max_iter=20000).fit(X, y)
    assert np.allclose(est.coef_, ref.coef_, atol=1e-5)
    assert est.intercept_ == pytest.approx(ref.intercept_, abs=1e-5)
    # the fitted tau-quantile plane leaves a fraction ~tau of the targets on or below it
    assert abs(np.mean(y <= est.predict(X)) - tau) <= 4 / y.size


def test_to_cvxpy_is_the_pinball_loss_of_level_tau():
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 2))
    y = rng.exponential(size=30)
    J = nsopt.RegularizedRisk(Quantile(X, y, 0.85), L2(), lam=1e-2)
    translated = nsopt.to_cvxpy(J)
    for v in (np.zeros(2), rng.standard_normal(2)):
        r = y - X @ v
        pinball = np.mean(np.maximum(0.85 * r, (0.85 - 1.0) * r))  # Koenker's rho_0.85(r)
        assert translated.objective_at(v) == pytest.approx(pinball + 0.5e-2 * v @ v, rel=1e-12)
