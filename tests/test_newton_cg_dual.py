"""newton-cg's certificate from the Newton model's dual point (``model_dual``): the point is
feasible and ``check`` recomputes its bound, the bound at each step is at least the iterate's
own dual point's, the proof comes no later, and the result brackets cvxpy's optimum."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import regularizers as R
from nsopt.certificate import DualPoint

from cvxref import assert_dual_point_certified, smooth_margin_problem


def _problem(loss, seed, lam, **kw):
    return smooth_margin_problem(loss, R.L2(), seed, lam, **kw)


def _separable(intercept=False):
    """Squared hinge at a small lam on separable sparse data: the iterate's own dual point
    lags there."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1000, 30))
    X[rng.random(X.shape) < 0.6] = 0.0
    y = np.where(X @ rng.standard_normal(30) >= 0, 1.0, -1.0)
    return nsopt.RegularizedRisk(nsopt.losses.SquaredHinge(X, y), R.L2(), 1e-6,
                                 fit_intercept=intercept)


@pytest.mark.parametrize("intercept", [False, True])
def test_model_dual_point_is_feasible_and_checked(intercept):
    """Stopped after each step: the kept evidence (the model's point or a combination of the
    step's points) lies in the dual's box and ``check`` recomputes the claimed bound."""
    J = _separable(intercept)
    full = nsopt.minimize(J, method="newton-cg", rtol=1e-3, model_dual=True, continuation=False)
    assert full.info["model_duals"] > 0
    for k in range(full.nit - 4, full.nit + 1):
        res = nsopt.minimize(J, method="newton-cg", rtol=1e-3, max_iter=k, model_dual=True,
                             continuation=False)
        ev = res.certificate.evidence
        assert isinstance(ev, DualPoint)
        assert np.all(ev.t >= 0) and np.all(np.isfinite(ev.t))
        checked = res.certificate.check(J)
        assert checked == pytest.approx(res.lower_bound, rel=1e-9, abs=1e-14)
        assert checked <= full.fun + 1e-12


@settings(max_examples=6, deadline=None)
@given(loss=st.sampled_from(["squared-hinge", "logistic"]), seed=st.integers(0, 10_000),
       lam=st.sampled_from([1e-5, 1e-3]), intercept=st.booleans(),
       model=st.sampled_from(["auto", "cg"]))
def test_bound_at_least_the_iterates_own(loss, seed, lam, intercept, model):
    """The iterates are the same with and without the model's dual point; at every step the
    proven bound is at least the one of the iterate's own dual point, so the proof comes no
    later."""
    J = _problem(loss, seed, lam, intercept=intercept)
    old = nsopt.minimize(J, method="newton-cg", rtol=1e-7, model=model, model_dual=False)
    new = nsopt.minimize(J, method="newton-cg", rtol=1e-7, model=model, model_dual=True)
    assert old.success and new.success
    assert new.nit <= old.nit
    k = new.nit + 1                       # history rows: the start, then one per step
    np.testing.assert_allclose(new.history["fun"], old.history["fun"][:k], rtol=1e-12)
    scale = 1e-12 * max(1.0, abs(old.fun))
    assert np.all(new.history["lower_bound"] >= old.history["lower_bound"][:k] - scale)


def test_pinned_model_proves_earlier_on_a_separable_problem():
    """The model's pinned dual point proves 1e-3 in fewer steps (20 against 13 when
    written)."""
    J = _separable()
    old = nsopt.minimize(J, method="newton-cg", rtol=1e-3, model_dual=False)
    new = nsopt.minimize(J, method="newton-cg", rtol=1e-3, model_dual=True)
    assert old.success and new.success
    assert new.nit < old.nit


def test_brackets_cvxpy():
    """The certified answer (the combined dual point's bound) brackets Clarabel's optimum."""
    pytest.importorskip("cvxpy")
    J = _problem("squared-hinge", 11, 1e-5, weights=True, intercept=True)
    res = nsopt.minimize(J, method="newton-cg", rtol=1e-6, model_dual=True)
    assert_dual_point_certified(J, res, 1e-6)


def test_default_takes_the_model_point_for_the_logistic_loss_only():
    """``model_dual=None`` (the default): on for the logistic loss, off for the squared hinge
    (its saved late steps cost less than the pinned rounds: 0.97-1.26x the CPU time)."""
    sq = _separable()
    assert nsopt.minimize(sq, method="newton-cg", rtol=1e-3).info["model_duals"] == 0
    lg = _problem("logistic", 3, 1e-5)
    default = nsopt.minimize(lg, method="newton-cg", rtol=1e-7)
    on = nsopt.minimize(lg, method="newton-cg", rtol=1e-7, model_dual=True)
    assert default.nit == on.nit and default.lower_bound == on.lower_bound
