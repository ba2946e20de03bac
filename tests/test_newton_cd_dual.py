"""newton-cd's certificate from the Newton model's dual point (option ``dual_rounds``): the point
is feasible and ``check`` accepts it; the bound at every step is at least the scaled iterate's,
so the gap is proven no later; cvxpy's optimum is bracketed; the logistic scaling's maximiser."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.certificate import DualPoint
from nsopt.solvers import _newton_cd_kernels as K

from cvxref import assert_dual_point_certified

LOSSES = {"logistic": L.Logistic, "squared-hinge": L.SquaredHinge}


def _one_hot_problem(loss="logistic", seed=0, lam=1e-3, m=300, groups=4, levels=5,
                     intercept=False):
    """Categorical columns one-hot coded (each group's columns sum to the ones vector: the flat
    valleys of a9a, where the iterate's scaled dual point lags) plus two continuous ones."""
    rng = np.random.default_rng(seed)
    cols = [np.eye(levels)[rng.integers(0, levels, m)] for _ in range(groups)]
    X = np.hstack(cols + [rng.standard_normal((m, 2))])
    y = np.where(X @ rng.standard_normal(X.shape[1]) + rng.standard_normal(m) >= 0, 1.0, -1.0)
    return nsopt.RegularizedRisk(LOSSES[loss](X, y), R.L1(), lam, fit_intercept=intercept)


def _run(J, rounds, rtol=1e-3):
    """The run and its per-step (F, bound) of the iterate (the state's, not the loop's best)."""
    steps = []
    res = nsopt.minimize(J, method="newton-cd", rtol=rtol, dual_rounds=rounds,
                         callback=lambda s: steps.append((s.fun, s.lower_bound)))
    return res, steps


def test_model_dual_point_is_feasible_and_checked():
    """On a fixed one-hot problem the model's dual point gives the final bound; its t lies in
    the dual box, its plane's slope (recomputed by the loss) in the L1 conjugate's box, and
    ``check`` recomputes the same bound from the evidence alone."""
    pytest.importorskip("cvxpy")
    J = _one_hot_problem("logistic", seed=0, lam=1e-3)
    res, _ = _run(J, 10)
    assert res.info["model_duals"] >= 1
    ev = res.certificate.evidence
    assert isinstance(ev, DualPoint)
    assert np.all(ev.t >= 0) and np.all(ev.t <= 1)
    a, b = J.loss.dual_plane(ev.t)
    assert np.max(np.abs(a)) <= J.lam
    assert res.certificate.check(J) == pytest.approx(res.lower_bound, rel=1e-10)
    assert_dual_point_certified(J, res, 1e-3)


def test_proven_earlier_on_the_fixed_problem():
    """Same iterates, a better bound: the one-hot problem's 1e-3 is proven in fewer Newton
    steps than with the scaled iterate's point alone (``dual_rounds=0``)."""
    J = _one_hot_problem("logistic", seed=0, lam=1e-3)
    new, _ = _run(J, 10)
    old, _ = _run(J, 0)
    assert old.success and new.success
    assert new.nit < old.nit
    assert old.info["model_duals"] == 0


@settings(max_examples=6, deadline=None)
@given(loss=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 10_000),
       lam=st.sampled_from([1e-4, 1e-3, 1e-2]), intercept=st.booleans(),
       rtol=st.sampled_from([1e-3, 1e-4]))
def test_never_later_never_lower_and_brackets_cvxpy(loss, seed, lam, intercept, rtol):
    """Random one-hot problems: the iterates are the same with and without the model's dual
    point (but for the last, which may stop where it started, proven there), its bound at every
    step is at least the scaled iterate's, the gap is proven no later, and the run brackets
    Clarabel's optimum with a checked certificate."""
    pytest.importorskip("cvxpy")
    J = _one_hot_problem(loss, seed, lam, m=120, groups=3, levels=4, intercept=intercept)
    new, steps_new = _run(J, 10, rtol)
    old, steps_old = _run(J, 0, rtol)
    assert new.nit <= old.nit
    # the last step may end at its start point, proven by the model's point there (no move)
    for (f_new, lb_new), (f_old, lb_old) in zip(steps_new[:-1], steps_old):
        assert f_new == f_old
        assert lb_new >= lb_old
    assert_dual_point_certified(J, new, rtol)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), share=st.floats(0.05, 1.0), top=st.floats(0.05, 0.999999),
       zeros=st.floats(0.0, 0.9))
def test_logistic_scale_is_the_maximiser(seed, share, top, zeros):
    r"""``logistic_best_scale`` returns a point of ``[0, top]`` where the concave
    :math:`-\sum_i c_i\psi(s t_i)` is within rounding of its maximum over a fine grid."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, share, 200) * (rng.uniform(size=200) >= zeros)
    c = rng.uniform(0.1, 2.0, 200) / 200
    hi = top / max(t.max(), 1e-300)
    s = K.logistic_best_scale(t, c, hi)
    assert 0.0 <= s <= hi
    grid = np.linspace(0.0, hi, 1001)
    best = max(-K.conjugate_sum(K.LOGISTIC, g, t, c) for g in grid)
    assert -K.conjugate_sum(K.LOGISTIC, s, t, c) >= best - 1e-12
