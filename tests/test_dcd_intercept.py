"""Dual coordinate descent (method "dcd") with an unregularized intercept
(``RegularizedRisk(..., fit_intercept=True)``): against cvxpy with a free bias (hinge, squared
hinge, logistic; sample weights; unbalanced classes), one class only, certificates that check
and dual points off the equality that prove no more than their box slack, every stop
bracketing the optimum."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.certificate import CertificateError, DualPoint
from nsopt.solvers import DCD
from nsopt.solvers.dcd import _balance

LOSSES = {"hinge": L.Hinge, "squared-hinge": L.SquaredHinge, "logistic": L.Logistic}


def binary(m=80, d=5, seed=0, positive=0.5, shift=0.0):
    """A small noisy binary problem with a share ``positive`` of +1 labels."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    z = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(m)
    y = np.where(z >= np.quantile(z, 1 - positive), 1.0, -1.0)
    return X + shift, y


def cvx_free_bias(loss_name, X, y, lam, sample_weight=None):
    """(J*, coef, b) of ``lam/2 ||w||^2 + sum_i c_i l(<x_i, w> + b, y_i)`` by Clarabel, with
    ``c`` the normalised weights (1/m without)."""
    cp = pytest.importorskip("cvxpy")
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    m, d = X.shape
    c = np.full(m, 1.0 / m) if sample_weight is None else sample_weight / sample_weight.sum()
    w, b = cp.Variable(d), cp.Variable()
    margin = cp.multiply(y, X @ w + b)
    if loss_name == "hinge":
        terms = cp.pos(1 - margin)
    elif loss_name == "squared-hinge":
        terms = 0.5 * cp.square(cp.pos(1 - margin))
    else:
        terms = cp.logistic(-margin)
    prob = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(w) + c @ terms))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value), np.asarray(w.value), float(b.value)


def _bracket(res, J, opt, rtol):
    tol = 1e-7 * max(1.0, abs(opt))
    assert res.success, (res.status, res.gap)
    assert res.lower_bound <= opt + tol
    assert opt <= res.fun + tol
    assert res.gap <= rtol * abs(res.fun) * (1 + 1e-9)
    assert res.certificate.source == "dual-point"
    assert isinstance(res.certificate.evidence, DualPoint)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * max(1.0, abs(res.fun))
    assert res.x.shape == (J.dim,)
    assert res.fun == pytest.approx(J.value(res.x), rel=1e-12)


# --- against cvxpy with a free bias ---------------------------------------------------------
@pytest.mark.parametrize("positive", [0.5, 0.15], ids=["balanced", "unbalanced"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_against_cvxpy_with_free_bias(loss_name, weighted, positive):
    X, y = binary(seed=len(loss_name) + 3 * weighted, positive=positive, shift=0.7)
    sw = None
    if weighted:
        sw = np.random.default_rng(1).uniform(0.2, 3.0, y.size)
        sw[:4] = 0.0   # examples without weight take no part
    lam, rtol = 0.02, 1e-6
    J = nsopt.RegularizedRisk(LOSSES[loss_name](X, y, sample_weight=sw), R.L2(), lam,
                              fit_intercept=True)
    assert DCD.unsupported_reason(J) is None
    opt, coef, b = cvx_free_bias(loss_name, X, y, lam, sw)
    res = nsopt.minimize(J, method="dcd", rtol=rtol, max_iter=5000)
    _bracket(res, J, opt, rtol)
    w, (b_dcd,) = J.split(res.x)
    # w is unique (strongly convex); so is b for the smooth losses here
    np.testing.assert_allclose(w, coef, atol=2e-3 * (1 + np.abs(coef).max()))
    if loss_name != "hinge":
        assert abs(b_dcd - b) <= 2e-3 * (1 + abs(b))
    # the bias is free: far from 0 on this shifted, unbalanced data, and within the proven box
    assert abs(b) <= J.intercept_bound()
    # the dual point's residual of the equality is of rounding size
    t = res.certificate.evidence.t
    c, yy = J.loss.c, J.loss.y
    assert abs(float(c * yy @ t)) <= 1e-14 * max(1.0, float(c @ t))
    if weighted:
        assert np.all(t[:4] == 0.0)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("check_every", [None, 1, 4])
def test_options_change_the_path_not_the_answer(shrinking, check_every, sparse):
    X, y = binary(m=120, seed=11, positive=0.3, shift=1.0)
    if sparse:
        X = sp.csr_matrix(np.where(np.random.default_rng(2).random(X.shape) < 0.6, X, 0.0))
    J = nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), 1e-3, fit_intercept=True)
    res = nsopt.minimize(J, method="dcd", rtol=1e-5, shrinking=shrinking,
                         check_every=check_every, max_iter=20000)
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-8, max_iter=5000)
    assert res.success and ref.success
    assert res.lower_bound <= ref.fun + 1e-12 and ref.lower_bound <= res.fun + 1e-12
    if check_every is not None:
        assert res.info["epochs"] == check_every * res.nit
    res.certificate.check(J)


def test_feature_shift_moves_only_the_intercept():
    """X + 1 s^T turns <x, w> + b into <x, w> + (b + <s, w>): same optimum and coefficients,
    the bias absorbs -<s, w>; a regularized constant column (liblinear's bias) would not."""
    X, y = binary(m=100, seed=5, positive=0.35)
    s = np.array([2.0, -1.0, 0.5, 3.0, 0.0])
    out = []
    for Xs in (X, X + s):
        J = nsopt.RegularizedRisk(L.Logistic(Xs, y), R.L2(), 0.05, fit_intercept=True)
        res = nsopt.minimize(J, method="dcd", rtol=1e-8, max_iter=5000)
        assert res.success
        out.append((J, res))
    (J0, r0), (J1, r1) = out
    assert abs(r0.fun - r1.fun) <= 1e-7 * r0.fun
    (c0, b0), (c1, b1) = J0.split(r0.x), J1.split(r1.x)
    np.testing.assert_allclose(c1, c0, atol=1e-3)
    assert abs(b1[0] + s @ c1 - b0[0]) <= 1e-3
    column = nsopt.RegularizedRisk(L.Logistic(np.hstack([X + s, np.ones((100, 1))]), y),
                                   R.L2(), 0.05)
    assert nsopt.minimize(column, method="dcd", rtol=1e-8).lower_bound > r1.fun + 1e-4


# --- one class only -------------------------------------------------------------------------
@pytest.mark.parametrize("label", [1.0, -1.0])
@pytest.mark.parametrize("loss_name", ["hinge", "squared-hinge"])
def test_one_class_margin_losses_reach_zero(loss_name, label):
    """All labels alike: the dual's equality forces t = 0, so J* >= D(0) = 0, and w = 0 with
    the intercept at the margin (b = y) attains it."""
    X, _ = binary(m=30, seed=2)
    y = np.full(30, label)
    J = nsopt.RegularizedRisk(LOSSES[loss_name](X, y), R.L2(), 0.1, fit_intercept=True)
    res = nsopt.minimize(J, method="dcd", rtol=1e-6)
    assert res.success and res.fun == 0.0 and res.lower_bound == 0.0
    w, b = J.split(res.x)
    assert np.all(w == 0.0) and label * b[0] >= 1.0
    assert res.certificate.check(J) == 0.0


def test_one_class_with_weight_logistic_is_a_clear_error():
    """The logistic loss of one class has infimum 0 at b -> +-inf and no minimiser: refused
    with the reason (an example of the other class without weight does not count)."""
    X, _ = binary(m=30, seed=2)
    y = np.ones(30)
    y[0] = -1.0
    sw = np.ones(30)
    sw[0] = 0.0
    J = nsopt.RegularizedRisk(L.Logistic(X, y, sample_weight=sw), R.L2(), 0.1, fit_intercept=True)
    with pytest.raises(ValueError, match=r"no minimiser.*\+inf"):
        nsopt.minimize(J, method="dcd")
    # with its weight back the problem has a minimiser and is solved
    J2 = nsopt.RegularizedRisk(L.Logistic(X, y), R.L2(), 0.1, fit_intercept=True)
    res = nsopt.minimize(J2, method="dcd", rtol=1e-6)
    assert res.success and J2.split(res.x)[1][0] > 1.0


# --- certificates ---------------------------------------------------------------------------
@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_dual_point_off_the_equality_proves_no_more_than_its_box_slack(loss_name):
    """A dual point with a residual r = sum c y t != 0 bounds J* only over the box |b| <= B:
    the check subtracts B |r| (the InterceptRegularizer's conjugate), so a claim of the bound
    without that term is rejected, and the honest one is exactly B |r| lower."""
    X, y = binary(seed=4, positive=0.3, shift=0.5)
    J = nsopt.RegularizedRisk(LOSSES[loss_name](X, y), R.L2(), 0.05, fit_intercept=True)
    res = nsopt.minimize(J, method="dcd", rtol=1e-8, max_iter=5000)
    cert = res.certificate
    cert.check(J)
    t = np.array(cert.evidence.t)
    neg = y < 0
    t[neg] *= 0.8   # the negatives' multipliers lowered: sum c y t > 0
    a, b = J.loss.dual_plane(t)
    r = -a[-1]
    assert r > 1e-3
    unboxed = b - J.base_reg.scaled_conjugate(a[:-1], J.lam)
    B = J.intercept_bound()
    assert math.isfinite(B)
    honest = b - J.reg.scaled_conjugate(a, J.lam)
    assert honest == pytest.approx(unboxed - B * r, rel=1e-12, abs=1e-12)
    assert honest < res.fun    # a true lower bound
    for claim in (unboxed, honest + 1e-6 * abs(honest) + 1e-9):
        forged = dataclasses.replace(cert, evidence=DualPoint(t), lower=claim,
                                     gap=cert.upper - claim, a_bar=None, b_bar=None)
        with pytest.raises(CertificateError, match="exceeds"):
            forged.check(J)
    fair = dataclasses.replace(cert, evidence=DualPoint(t), lower=honest, gap=cert.upper - honest,
                               a_bar=None, b_bar=None)
    assert fair.check(J) == pytest.approx(honest, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(t=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=30), seed=st.integers(0, 999))
def test_balance_repairs_the_equality_inside_the_box(t, seed):
    rng = np.random.default_rng(seed)
    t = np.array(t)
    y = np.where(rng.random(t.size) < 0.5, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    c = rng.uniform(0.1, 2.0, t.size)
    before = t.copy()
    _balance(t, c, y)
    assert np.all((0.0 <= t) & (t <= before))   # scaled toward 0: in the box
    assert abs(float(c * y @ t)) <= 1e-13 * max(1.0, float(c @ before))
    # only the class with the excess moved
    moved = t != before
    assert len(set(y[moved])) <= 1


# --- every stop brackets the optimum ------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(loss_name=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 10_000),
       lam=st.floats(1e-3, 1.0), positive=st.floats(0.1, 0.9), weighted=st.booleans(),
       max_iter=st.integers(0, 8), shift=st.floats(-2.0, 2.0))
def test_every_stop_brackets_the_optimum_with_a_valid_certificate(loss_name, seed, lam, positive,
                                                                  weighted, max_iter, shift):
    X, y = binary(m=50, d=4, seed=seed, positive=positive, shift=shift)
    sw = np.random.default_rng(seed).uniform(0.2, 3.0, y.size) if weighted else None
    J = nsopt.RegularizedRisk(LOSSES[loss_name](X, y, sample_weight=sw), R.L2(), lam,
                              fit_intercept=True)
    rtol = 1e-4
    res = nsopt.minimize(J, method="dcd", max_iter=max_iter, rtol=rtol, check_every=1)
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-8, max_iter=5000)
    tol = 1e-9 * max(1.0, abs(ref.fun))
    assert res.lower_bound <= ref.fun + tol and ref.lower_bound <= res.fun + tol
    assert res.certificate.check(J) >= res.lower_bound - tol
    assert np.all(np.diff(res.history["lower_bound"]) >= 0)
    if res.success:
        assert res.gap <= rtol * abs(res.fun) * (1 + 1e-9)
    t = res.certificate.evidence.t
    assert np.all((t >= 0) & (t <= J.loss.dual_upper))
    # the same dual point pushed off the equality proves no more than its B |r| slack
    t = np.array(t)
    t[y < 0] *= 0.5
    a, b = J.loss.dual_plane(t)
    r = abs(float(a[-1]))
    if r > 0.0:
        unboxed = b - J.base_reg.scaled_conjugate(a[:-1], J.lam)
        honest = b - J.reg.scaled_conjugate(a, J.lam)
        B = J.intercept_bound()
        assert honest == pytest.approx(unboxed - B * r, rel=1e-9, abs=1e-12)
        assert honest <= ref.fun + tol
        cert = res.certificate
        if B * r > 1e-6 * max(1.0, abs(unboxed)):
            forged = dataclasses.replace(cert, evidence=DualPoint(t), lower=unboxed,
                                         gap=cert.upper - unboxed, a_bar=None, b_bar=None)
            with pytest.raises(CertificateError):
                forged.check(J)


# --- the pair steps ---------------------------------------------------------------------------
@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_pair_epochs_keep_the_equality_the_box_and_w(loss_name):
    """The epochs alone (no check repairs them): sum c y t stays 0 up to rounding, t stays in
    its box (strictly inside (0, 1) for the logistic loss), w stays X^T(c y t)/lam, and the dual
    value never decreases from one epoch to the next."""
    from nsopt.oracle import CountingOracle

    X, y = binary(m=120, seed=8, positive=0.25, shift=0.5)
    X[:3] = 0.0   # empty rows
    X = sp.csr_matrix(X)
    sw = np.random.default_rng(8).uniform(0.01, 10.0, y.size)
    lam = 1e-3
    J = nsopt.RegularizedRisk(LOSSES[loss_name](X, y, sample_weight=sw), R.L2(), lam,
                              fit_intercept=True)
    s = DCD(check_every=1).init(CountingOracle(J), np.zeros(J.dim))
    wk = s.work
    c, upper = J.loss.c, J.loss.dual_upper

    def dual(t):
        a, b = J.base_loss.dual_plane(t)
        return b - 0.5 * float(a @ a) / lam

    previous = dual(wk.t)
    for _ in range(15):
        wk.kernel(*wk.args, 1, wk.rng, *wk.tail)
        t = wk.t
        assert abs(float(c * y @ t)) <= 1e-13 * max(1.0, float(c @ t))
        if loss_name == "logistic":
            assert np.all((t > 0) & (t < 1)) and np.allclose(wk.tc, 1 - t, rtol=0, atol=1e-15)
        else:
            assert np.all((t >= 0) & (t <= upper))
        np.testing.assert_allclose(wk.w, X.T @ (c * y * t) / lam, atol=1e-10)
        now = dual(t)
        assert now >= previous - 1e-12 * max(1.0, abs(now))
        previous = now


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_separable_sparse_data_with_empty_rows_and_wide_weights(loss_name):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((150, 6))
    y = np.where(X @ rng.standard_normal(6) + 2.0 > 0, 1.0, -1.0)   # separable, unbalanced
    X[:8] = 0.0
    sw = 10.0 ** rng.uniform(-2, 2, y.size)
    J = nsopt.RegularizedRisk(LOSSES[loss_name](sp.csr_matrix(X), y, sample_weight=sw), R.L2(),
                              1e-2, fit_intercept=True)
    res = nsopt.minimize(J, method="dcd", rtol=1e-6, max_iter=3000)
    opt, _, b = cvx_free_bias(loss_name, X, y, 1e-2, sw)
    _bracket(res, J, opt, 1e-6)
    assert J.split(res.x)[1][0] > 0.5 and b > 0.5   # the bias carries the class prior
