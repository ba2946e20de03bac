"""ExcessiveGap ([SZV09] Alg. 1, "Pragam") and the O(n) box-plus-equality projection (App. B).

Requirements of the 001 notes Sec. 9: PG-1 weak duality, PG-2 mappings, PG-3 schedule, PG-4
the a-priori bound (eq. 26) and the excessive-gap invariant at every k from the prox-centre,
PG-7 certificate, PG-8 variants; PR-1..PR-5 for the projection; comparisons with cvxpy +
Clarabel, the O(1/k^2) decay on SVM data, and the rejection messages.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

import nsopt
from nsopt.certificate import SaddlePoint
from nsopt import regularizers as R
from nsopt.inner import project_simplex
from nsopt.inner._box_equality import (project_box_equality, project_box_equality_bisect,
                                        project_simplex_rows)
from nsopt.losses import Hinge, Logistic, SquaredHinge
from nsopt.losses.intercept import InterceptHinge
from nsopt.solvers import SOLVERS, ExcessiveGap, ProblemNotSupported
from nsopt.solvers.excessive_gap import pragam_with_bias, saddle_form

from cvxref import cvxpy_optimum, small_binary

try:
    from nsopt.losses.vector import MulticlassHinge, ScaledMulticlassHinge
except ImportError:  # pragma: no cover
    MulticlassHinge = ScaledMulticlassHinge = None
needs_multiclass = pytest.mark.skipif(MulticlassHinge is None, reason="no MulticlassHinge yet")


# ----------------------------------------------------------------------------------------
# helpers: the quantities of the notes, recomputed from the data (not from the solver)
# ----------------------------------------------------------------------------------------
def hinge_problem(m, d, lam, seed, bias=False, sparse=False):
    X, y = small_binary(m, d, seed, sparse=sparse)
    loss = InterceptHinge(X, y) if bias else Hinge(X, y)
    return nsopt.RegularizedRisk(loss, R.L2(), lam), X, y


def dual_value(X, y, lam, alpha):
    Xd = X.toarray() if sp.issparse(X) else X
    u = Xd.T @ (y * alpha)
    return alpha.sum() - u @ u / (2 * lam)


def smoothed_primal(J, form, w, mu):
    """J_mu(w) = lam/2 ||w||^2 + max_{alpha in Q} <b - Zw, alpha> - mu/2 ||alpha - alpha_c||^2."""
    r = form.offset - form.matvec(w)
    a = form.project(form.center + r / mu)
    return J.lam / 2 * w @ w + np.vdot(r, a) - mu / 2 * np.vdot(a - form.center, a - form.center)


def exact_lipschitz(X, y, lam):
    Xd = X.toarray() if sp.issparse(X) else X
    return np.linalg.norm(y[:, None] * Xd, 2) ** 2 / lam


def cvx_bias_optimum(X, y, lam, sample_weight=None):
    import cvxpy as cp

    Xd = X.toarray() if sp.issparse(X) else X
    m, d = Xd.shape
    c = np.full(m, 1 / m) if sample_weight is None else sample_weight / sample_weight.sum()
    w, b = cp.Variable(d), cp.Variable()
    obj = lam / 2 * cp.sum_squares(w) + c @ cp.pos(1 - cp.multiply(y, Xd @ w + b))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(prob.value), w.value, float(b.value)


# ----------------------------------------------------------------------------------------
# PG-3, PG-4: schedule, a-priori bound and invariant at every iteration
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("seed", range(8))
def test_a_priori_bound_every_iteration_fixed_schedule(seed, bias):
    """J(w_k) - D(alpha_k) <= 4 L D2 / ((k+1)(k+2)) with L = ||YX||^2 / lam, D2 = 1/(2m), from
    the prox-centre 0, at every k; and the excessive gap J_{mu_k}(w_k) <= D(alpha_k)."""
    rng = np.random.default_rng(seed)
    m, d, lam = int(rng.integers(5, 60)), int(rng.integers(2, 30)), 10 ** rng.uniform(-4, 0)
    J, X, y = hinge_problem(m, d, lam, seed, bias=bias)
    L = exact_lipschitz(X, y, lam)
    D2 = 1 / (2 * m)
    form = saddle_form(J.loss)
    states = list(ExcessiveGap(adaptive_lipschitz=False, lipschitz=L, rtol=1e-15, max_iter=150).iterate(J))
    assert len(states) >= 20
    for s in states:
        k = s.iteration
        D = dual_value(X, y, lam, s.alpha)
        assert D == pytest.approx(s.lower_bound, rel=1e-10, abs=1e-12)
        gap = J.value(s.w) - D
        assert -1e-12 <= gap <= 4 * L * D2 / ((k + 1) * (k + 2)) * (1 + 1e-9) + 1e-14, k
        assert smoothed_primal(J, form, s.w, s.mu) <= D + 1e-9 * max(1.0, abs(D)), k
        # PG-3: mu_k = 4L/((k+1)(k+2)), tau_k = 2/(k+3)
        assert s.mu == pytest.approx(4 * L / ((k + 1) * (k + 2)), rel=1e-12)
        if k > 0:
            assert s.tau == pytest.approx(2 / (k + 2), rel=1e-15)


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("seed", range(4))
def test_adaptive_lipschitz_keeps_the_invariant(seed, bias):
    """With the backtracking estimate the same proof gives gap_k <= mu_k D2 and the excessive gap."""
    J, X, y = hinge_problem(80, 10, 10 ** -(seed % 3 + 1), seed, bias=bias)
    form = saddle_form(J.loss)
    for s in ExcessiveGap(rtol=1e-15, max_iter=200).iterate(J):
        D = dual_value(X, y, J.lam, s.alpha)
        assert J.value(s.w) - D <= s.mu * form.radius_sq * (1 + 1e-9)
        assert smoothed_primal(J, form, s.w, s.mu) <= D + 1e-9 * max(1.0, abs(D))


@needs_multiclass
def test_a_priori_bound_multiclass():
    X, y = nsopt.datasets.make_multiclass(60, 4, n_classes=3, random_state=2)
    lam = 1e-2
    J = nsopt.RegularizedRisk(MulticlassHinge(X, y), R.L2(), lam)
    form = saddle_form(J.loss)
    Z = np.column_stack([form.matvec(e).ravel() for e in np.eye(J.dim)])
    L = np.linalg.norm(Z, 2) ** 2 / lam
    assert form.radius_sq == pytest.approx(0.5 * (1 - 1 / 3) / 60)
    for s in ExcessiveGap(adaptive_lipschitz=False, lipschitz=L, rtol=1e-15, max_iter=100).iterate(J):
        k = s.iteration
        assert J.value(s.w) - s.lower_bound <= 4 * L * form.radius_sq / ((k + 1) * (k + 2)) * (1 + 1e-9)
        assert smoothed_primal(J, form, s.w, s.mu) <= s.lower_bound + 1e-9


# ----------------------------------------------------------------------------------------
# PG-1, PG-2, PG-7: weak duality, mappings, certificate
# ----------------------------------------------------------------------------------------
def test_weak_duality_and_the_plane_evidence():
    """For any alpha in Q and any w, J(w) >= D(alpha); D(alpha) is the bound of the plane
    (-Z^T alpha, <b, alpha>) below R, which Certificate.check recomputes."""
    rng = np.random.default_rng(0)
    for bias in (False, True):
        J, X, y = hinge_problem(40, 5, 0.05, 3, bias=bias)
        form = saddle_form(J.loss)
        for _ in range(50):
            alpha = form.project(rng.uniform(-0.01, 0.05, 40))
            a_bar, b_bar = -form.rmatvec(alpha), float(form.offset @ alpha)
            D = dual_value(X, y, J.lam, alpha)
            evidence = SaddlePoint(alpha, plane=(a_bar, b_bar))
            assert evidence.verify(J)[0] == pytest.approx(D, rel=1e-12, abs=1e-14)
            for _ in range(5):
                v = rng.standard_normal(5) * 3
                assert J.loss.value(v) >= a_bar @ v + b_bar - 1e-12
                assert J.value(v) >= D - 1e-12


def test_mappings_are_the_minimisers_of_their_QPs():
    """PG-2: alpha_mu(w) and v(alpha) (box with y^T alpha = 0) against cvxpy + Clarabel."""
    import cvxpy as cp

    J, X, y = hinge_problem(30, 4, 0.1, 5, bias=True)
    form = saddle_form(J.loss)
    m = 30
    rng = np.random.default_rng(1)
    w = rng.standard_normal(4)
    alpha = form.project(rng.uniform(0, 1 / m, m))
    mu, L = 0.7, 3.0
    grad = form.offset - form.matvec(form.rmatvec(alpha)) / J.lam
    Xy = y[:, None] * X
    for target, ours in [
        (lambda a: mu / 2 * cp.sum_squares(a) + (Xy @ w) @ a - cp.sum(a),
         form.project(form.center + (form.offset - form.matvec(w)) / mu)),
        (lambda a: L / 2 * cp.sum_squares(a - alpha) - grad @ (a - alpha),
         form.project(alpha + grad / L)),
    ]:
        a = cp.Variable(m)
        prob = cp.Problem(cp.Minimize(target(a)), [a >= 0, a <= 1 / m, y @ a == 0])
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        np.testing.assert_allclose(ours, a.value, atol=1e-8)
    # w(alpha) = Z^T alpha / lam = (1/lam) sum_i alpha_i y_i x_i
    np.testing.assert_allclose(form.rmatvec(alpha) / J.lam, X.T @ (alpha * y) / J.lam, rtol=1e-12)


def test_certificate_is_checked_and_exact():
    J, X, y = hinge_problem(100, 6, 1e-2, 0)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    assert res.certificate.source == "excessive-gap"
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * (1 + abs(res.lower_bound))
    assert res.info["lipschitz"] > 0 and res.info["n_backtracks"] >= 0


# ----------------------------------------------------------------------------------------
# against cvxpy + Clarabel
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    dict(m=120, d=8, lam=1e-2, seed=0),
    dict(m=150, d=12, lam=1e-3, seed=1, sparse=True),
    dict(m=60, d=30, lam=1e-1, seed=2),
    dict(m=200, d=5, lam=1e-4, seed=3),
], ids=["dense", "sparse", "wide", "small-lam"])
def test_brackets_cvxpy_optimum_no_bias(case):
    sparse = case.get("sparse", False)
    J, X, y = hinge_problem(case["m"], case["d"], case["lam"], case["seed"], sparse=sparse)
    f_star = cvxpy_optimum(X, y, "hinge", R.L2(), case["lam"])
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    tol = 1e-7 * max(1.0, abs(f_star))
    assert res.success
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    assert res.gap <= 1e-6 * res.fun
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)


@pytest.mark.parametrize("seed,lam", [(0, 1e-2), (1, 1e-3), (4, 1e-1)])
def test_brackets_cvxpy_optimum_with_bias(seed, lam):
    X, y = small_binary(100, 6, seed)
    f_star, w_star, b_star = cvx_bias_optimum(X, y, lam)
    fit = pragam_with_bias(X, y, lam, rtol=1e-6, max_iter=50000)
    res = fit.result
    tol = 1e-7 * max(1.0, abs(f_star))
    assert res.success and res.gap <= 1e-6 * res.fun
    assert res.lower_bound - tol <= f_star <= res.fun + tol
    # the returned (w, b) attains fun in the with-bias objective
    primal = lam / 2 * fit.coef @ fit.coef + np.mean(np.maximum(0, 1 - y * (X @ fit.coef + fit.intercept)))
    assert primal == pytest.approx(res.fun, rel=1e-12)
    # strong convexity: lam/2 ||w - w*||^2 <= J(w) - J* <= gap
    assert np.linalg.norm(fit.coef - w_star) <= math.sqrt(2 * res.gap / lam) + 1e-4


def test_sample_weights():
    X, y = small_binary(80, 5, 7)
    sw = np.random.default_rng(0).uniform(0.1, 3.0, 80)
    import cvxpy as cp

    w = cp.Variable(5)
    c = sw / sw.sum()
    lam = 1e-2
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(w) + c @ cp.pos(1 - cp.multiply(y, X @ w))))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    J = nsopt.RegularizedRisk(Hinge(X, y, sample_weight=sw), lam=lam)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    assert res.lower_bound - 1e-8 <= prob.value <= res.fun + 1e-8
    f_b, _, _ = cvx_bias_optimum(X, y, lam, sw)
    fit = pragam_with_bias(X, y, lam, sample_weight=sw, rtol=1e-6, max_iter=50000)
    assert fit.result.lower_bound - 1e-8 <= f_b <= fit.result.fun + 1e-8


@needs_multiclass
@pytest.mark.parametrize("kind", ["crammer-singer", "margin", "slack"])
def test_multiclass_brackets_cvxpy_optimum(kind):
    import cvxpy as cp

    m, d, k, lam = 90, 4, 4, 1e-2
    X, y = nsopt.datasets.make_multiclass(m, d, n_classes=k, random_state=3)
    cost = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float)
    if kind == "crammer-singer":
        loss, gamma, delta = MulticlassHinge(X, y), np.ones((k, k)), 1 - np.eye(k)
    else:
        loss = ScaledMulticlassHinge(X, y, cost, rescaling=kind)
        gamma, delta = (np.ones((k, k)) if kind == "margin" else cost), cost
    W = cp.Variable((d, k))
    F = X @ W
    Fy = cp.sum(cp.multiply(F, np.eye(k)[y]), axis=1)
    pieces = cp.multiply(gamma[y], F - cp.reshape(Fy, (m, 1), order="C") @ np.ones((1, k))) + delta[y]
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(W) + cp.sum(cp.max(pieces, axis=1)) / m))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    J = nsopt.RegularizedRisk(loss, R.L2(), lam)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    tol = 1e-7 * max(1.0, abs(prob.value))
    assert res.success and res.lower_bound - tol <= prob.value <= res.fun + tol
    assert res.certificate.check(J) >= res.lower_bound - 1e-12


# ----------------------------------------------------------------------------------------
# rate on SVM data
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("adaptive", [True, False], ids=["adaptive-L", "fixed-L"])
@pytest.mark.parametrize("lam", [1e-2, 1e-3])
def test_measured_gap_decays_like_one_over_k_squared(lam, adaptive):
    """Slope of log(gap) against log(k) over the tail of the run: -2 or steeper."""
    X, y = nsopt.datasets.make_sparse_binary(1000, 60, random_state=0)
    J = nsopt.RegularizedRisk(Hinge(X, y), R.L2(), lam)
    res = ExcessiveGap(adaptive_lipschitz=adaptive, rtol=1e-12, max_iter=1500).solve(J)
    k, gap = res.history["iteration"], res.history["gap"]
    tail = (k >= 150) & (gap > 0)
    slope = np.polyfit(np.log(k[tail]), np.log(gap[tail]), 1)[0]
    assert slope <= -1.9, slope


# ----------------------------------------------------------------------------------------
# variants, options, rejections
# ----------------------------------------------------------------------------------------
def test_bias_with_one_class_gives_zero():
    """PG-8: all labels equal: the dual set is {0}, w = 0, and the bias classifies all."""
    X, _ = small_binary(30, 4, 0)
    y = np.ones(30)
    fit = pragam_with_bias(X, y, 1e-2, atol=1e-12, max_iter=10)
    assert fit.result.success and fit.result.fun == 0.0 and fit.result.lower_bound == 0.0
    np.testing.assert_array_equal(fit.coef, 0.0)
    assert np.all(y * (X @ fit.coef + fit.intercept) >= 1)


def test_intercept_hinge_oracle():
    """The bias-minimised hinge: value = min over b (checked on a fine grid and at the kinks),
    a valid subgradient (inequality at random points) whose dual meets y^T alpha = 0."""
    X, y = small_binary(50, 4, 11)
    X = np.round(X, 1)  # ties among the kinks
    loss = InterceptHinge(X, y)
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = np.round(rng.standard_normal(4), 1)
        f = X @ w
        kinks = y - f
        brute = min(np.mean(np.maximum(0, 1 - y * (f + b))) for b in kinks)
        val, g = loss.value_and_subgradient(w)
        assert val == pytest.approx(brute, rel=1e-12, abs=1e-15)
        b, _, alpha = loss._fit(f)
        assert abs(y @ alpha) <= 1e-15 and np.all((alpha >= 0) & (alpha <= 1 / 50 + 1e-18))
        for _ in range(10):
            v = rng.standard_normal(4) * 2
            assert loss.value(v) >= val + g @ (v - w) - 1e-12


def test_x0_is_an_upper_bound_not_a_start():
    J, X, y = hinge_problem(60, 5, 1e-2, 0)
    res = nsopt.minimize(J, method="excessive-gap", x0=np.full(5, 0.3), max_iter=0)
    assert res.fun == pytest.approx(J.value(np.full(5, 0.3))) and res.nit == 0
    res2 = nsopt.minimize(J, method="excessive-gap", x0=np.full(5, 0.3), max_iter=30)
    res3 = nsopt.minimize(J, method="excessive-gap", max_iter=30)
    assert res2.lower_bound == res3.lower_bound  # the iteration does not depend on x0


def test_fixed_lipschitz_below_the_curvature_is_an_error():
    J, X, y = hinge_problem(60, 5, 1e-2, 0)
    L = exact_lipschitz(X, y, 1e-2)
    with pytest.raises(ValueError, match="lipschitz=.* is below the curvature"):
        ExcessiveGap(adaptive_lipschitz=False, lipschitz=L / 100, max_iter=50).solve(J)
    # with adaptive_lipschitz it is only a first trial
    res = ExcessiveGap(lipschitz=L / 100, rtol=1e-5).solve(J)
    assert res.success and res.info["n_backtracks"] > 0


def test_fixed_schedule_computes_L():
    J, X, y = hinge_problem(60, 5, 1e-2, 0)
    s = list(ExcessiveGap(adaptive_lipschitz=False, max_iter=1).iterate(J))[0]
    assert s.lipschitz == pytest.approx(exact_lipschitz(X, y, 1e-2), rel=1e-6)
    assert s.lipschitz >= exact_lipschitz(X, y, 1e-2)


@pytest.mark.parametrize("value", [0, -1.0, math.inf, "1", True])
def test_option_checks(value):
    with pytest.raises((TypeError, ValueError)):
        ExcessiveGap(lipschitz=value)
    with pytest.raises(TypeError, match="adaptive_lipschitz=.yes.: must be True or False"):
        ExcessiveGap(adaptive_lipschitz="yes")


def _problems_without_saddle_form():
    X, y = small_binary(20, 3)
    yield nsopt.RegularizedRisk(Logistic(X, y), R.L2(), 1e-2), "got loss Logistic"
    yield nsopt.RegularizedRisk(SquaredHinge(X, y), R.L2(), 1e-2), "got loss SquaredHinge"
    yield nsopt.RegularizedRisk(Hinge(X, y), R.L1(), 1e-2), "got regularizer L1"
    yield nsopt.RegularizedRisk(Hinge(X, y), R.ElasticNet(0.5), 1e-2), "got regularizer ElasticNet"
    yield nsopt.FunctionOracle(lambda w: abs(w).sum(), lambda w: np.sign(w), dim=3), "got FunctionOracle"


@pytest.mark.parametrize("problem,why", list(_problems_without_saddle_form()),
                         ids=["logistic", "squared-hinge", "l1", "elastic-net", "function-oracle"])
def test_rejects_problems_without_a_saddle_form(problem, why):
    with pytest.raises(ProblemNotSupported) as err:
        nsopt.minimize(problem, method="excessive-gap")
    msg = str(err.value)
    assert "needs a RegularizedRisk with the L2 regularizer and a hinge-type loss with a saddle form" in msg
    assert why in msg and "methods that can solve this problem" in msg
    assert "excessive-gap" not in nsopt.solvers.methods_supporting(problem)


def test_registered():
    assert SOLVERS["excessive-gap"] is ExcessiveGap


# ----------------------------------------------------------------------------------------
# the projection (App. B): PR-1 .. PR-5
# ----------------------------------------------------------------------------------------
@st.composite
def box_equality_instances(draw):
    """Instances with many ties: values, coefficients and bounds from small grids."""
    n = draw(st.integers(1, 40))
    grid = st.sampled_from([-2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0])
    m = np.array(draw(st.lists(grid, min_size=n, max_size=n)))
    sigma = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0, 0.5, -2.0, 0.0]), min_size=n, max_size=n)))
    lower = np.array(draw(st.lists(st.sampled_from([0.0, -0.5, -math.inf]), min_size=n, max_size=n)))
    width = np.array(draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, math.inf]), min_size=n, max_size=n)))
    with np.errstate(invalid="ignore"):
        upper = np.where(np.isfinite(lower), lower + width, width)
    # a feasible total: sigma^T alpha for a point of the box (ties with the ends included)
    frac = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n)))
    lo_f = np.where(np.isfinite(lower), lower, np.minimum(upper, 0.0) - 1.0)
    hi_f = np.where(np.isfinite(upper), upper, lo_f + 1.0)
    z = float(sigma @ (lo_f + frac * (hi_f - lo_f)))
    weights = draw(st.sampled_from([None, 1.0, 2.0]))
    return m, sigma, lower, upper, z, weights


@given(box_equality_instances())
def test_projection_matches_bisection_with_ties(inst):
    m, sigma, lower, upper, z, weights = inst
    alpha, nu = project_box_equality(m, sigma, lower, upper, z, weights=weights, return_multiplier=True)
    ref = project_box_equality_bisect(m, sigma, lower, upper, z, weights=weights)
    scale = 1.0 + np.abs(ref).max()
    np.testing.assert_allclose(alpha, ref, rtol=0, atol=1e-10 * scale)
    # PR-1 feasibility, PR-2 KKT form with the returned multiplier
    assert np.all(alpha >= lower) and np.all(alpha <= upper)
    assert abs(sigma @ alpha - z) <= 1e-11 * (1 + np.abs(sigma) @ np.abs(alpha) + abs(z))
    d2 = 1.0 if weights is None else weights ** 2
    free = sigma != 0
    np.testing.assert_array_equal(alpha[free], np.clip(m + nu * sigma / d2, lower, upper)[free])


def test_projection_random_instances_against_bisection():
    rng = np.random.default_rng(0)
    for _ in range(400):
        n = int(rng.integers(1, 80))
        m = rng.standard_normal(n) * 10 ** rng.uniform(-2, 2)
        y = rng.choice([-1.0, 1.0], n)
        c = rng.uniform(0.0, 2.0, n) if rng.random() < 0.5 else np.full(n, 1 / n)
        a = project_box_equality(m, y, 0.0, c, 0.0)
        b = project_box_equality_bisect(m, y, 0.0, c, 0.0)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * (1 + np.abs(b).max()))


def test_projection_edge_cases():
    """PR-3: n = 1, a single feasible point, m already feasible (f(m) = 0), huge and tiny
    scales, all kinks equal, no finite bound."""
    np.testing.assert_array_equal(project_box_equality([3.0], [2.0], 0.0, 10.0, 4.0), [2.0])
    np.testing.assert_array_equal(project_box_equality([0.3, -0.2, 0.9], [1, 1, 1], 0.0, 0.0, 0.0), 0.0)
    np.testing.assert_allclose(project_box_equality([0.1, 0.3, 0.2], [1, -1, 1], 0, 1, 0.0), [0.1, 0.3, 0.2],
                               rtol=0, atol=1e-16)
    y = np.ones(5)
    np.testing.assert_array_equal(project_box_equality(np.arange(5.0), y, 0.0, 0.2, 0.0), 0.0)
    for scale in (1e-150, 1e150):
        m = np.array([1.0, 2.0, -1.0, 0.5]) * scale
        a = project_box_equality(m, [1, -1, 1, -1], 0.0, scale, 0.0)
        b = project_box_equality_bisect(m, [1, -1, 1, -1], 0.0, scale, 0.0)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale)
    a = project_box_equality(np.zeros(1000), np.ones(1000), 0.0, 1.0, 3.0)   # 2000 equal kinks
    np.testing.assert_allclose(a, 0.003, rtol=1e-13)
    a = project_box_equality([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], -np.inf, np.inf, 0.0)
    np.testing.assert_allclose(a, [-1.0, 0.0, 1.0], atol=1e-15)
    with pytest.raises(ValueError, match="the set is empty"):
        project_box_equality([0.0, 0.0], [1.0, 1.0], 0.0, 1.0, 3.0)
    with pytest.raises(ValueError, match="lower <= upper"):
        project_box_equality([0.0], [1.0], 1.0, 0.0, 0.5)


def test_projection_is_linear_time():
    """PR-4: index visits (kink computation, folding and evaluation passes) stay below 12 n."""
    rng = np.random.default_rng(0)
    for n in (100, 10_000, 200_000):
        for m in (rng.standard_normal(n), np.round(rng.standard_normal(n), 1)):
            count = np.zeros(1, dtype=np.int64)
            project_box_equality(m, rng.choice([-1.0, 1.0], n), 0.0, 1 / n, 0.0, _count=count)
            assert count[0] <= 12 * n, (n, count[0] / n)


def test_projection_simplex_special_case():
    """PR-5: sigma = 1, l = 0, z = 1 is the simplex (Duchi et al.), also row-wise."""
    rng = np.random.default_rng(0)
    V = rng.standard_normal((50, 7)) * 3
    totals = rng.uniform(0.0, 2.0, 50)
    totals[:3] = 0.0
    rows = project_simplex_rows(V, totals)
    for v, t, r in zip(V, totals, rows):
        if t > 0:
            np.testing.assert_allclose(project_box_equality(v, 1.0, 0.0, np.inf, t), r, atol=1e-13)
            np.testing.assert_allclose(project_simplex(v, t), r, atol=1e-13)
        else:
            np.testing.assert_array_equal(r, 0.0)
