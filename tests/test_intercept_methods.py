"""Proximal BMRM and the excessive gap technique with an unregularized intercept
(``RegularizedRisk(..., fit_intercept=True)``): against cvxpy with a free bias, the prox step
with a per-coordinate metric against cvxpy, certificates that check (and an inflated claim that
does not), a shift of the data that moves only the intercept, and the refusals."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.certificate import CertificateError
from nsopt.solvers import ProblemNotSupported
from nsopt.solvers.excessive_gap import pragam_with_bias
from nsopt.solvers.proximal_bundle import (ProxBMRM, ProximalBundle, TrustRegionBundle,
                                          _prox_master)

cp = pytest.importorskip("cvxpy")

from test_intercept import LAM, binary, cvx_reference, make, reference  # noqa: E402

PROXIMAL = {"method": "proximal-bundle", "variant": "proximal"}


def _bracket(res, J, opt, rtol):
    tol = 1e-7 * max(1.0, abs(opt))
    assert res.success, (res.status, res.gap)
    assert res.lower_bound <= opt + tol
    assert opt <= res.fun + tol
    assert res.gap <= rtol * abs(res.fun) * (1 + 1e-9)
    checked = res.certificate.check(J)
    assert checked >= res.lower_bound - 1e-9 * max(1.0, abs(res.fun))
    assert res.x.shape == (J.dim,)


# --- against cvxpy with a free bias ---------------------------------------------------------
@pytest.mark.parametrize("loss_name", ["hinge", "logistic", "squared-hinge", "multiclass-hinge"])
def test_proximal_bmrm_against_cvxpy(loss_name):
    J, X, y = make(loss_name, R.L2())
    assert ProxBMRM.unsupported_reason(J) is None
    opt, _, _ = reference(loss_name, "l2")
    # a small step bound K keeps alpha > 0 for a while: the intercept prox step is exercised
    res = nsopt.minimize(J, **PROXIMAL, rtol=1e-5, max_iter=3000, max_step=0.05)
    _bracket(res, J, opt, 1e-5)
    alphas = np.asarray(res.history["alpha"])
    assert np.any(alphas > 0), "the prox step (alpha > 0) was never taken"
    # the auto variant takes proximal BMRM on this problem now
    auto = nsopt.minimize(J, method="proximal-bundle", rtol=1e-5, max_iter=3000)
    assert "n_tunes" in auto.info
    _bracket(auto, J, opt, 1e-5)


@pytest.mark.parametrize("loss_name", ["hinge", "multiclass-hinge"])
def test_proximal_bmrm_several_models_against_cvxpy(loss_name):
    """P-BMRM (one model per group of examples) with intercepts: the certificate's master is
    over a product of simplices with the intercept box."""
    J, _, _ = make(loss_name, R.L2())
    opt, _, _ = reference(loss_name, "l2")
    res = nsopt.minimize(J, **PROXIMAL, n_models=3, rtol=1e-5, max_iter=3000, max_step=0.05)
    _bracket(res, J, opt, 1e-5)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("rtol", [1e-3, 1e-6])
def test_excessive_gap_hinge_against_cvxpy(rtol, sparse):
    J, X, y = make("hinge", R.L2())
    if sparse:
        J = nsopt.RegularizedRisk(L.Hinge(sp.csr_matrix(X), y), R.L2(), LAM, fit_intercept=True)
    opt, _, intercept = reference("hinge", "l2")
    res = nsopt.minimize(J, method="excessive-gap", rtol=rtol, max_iter=20000)
    _bracket(res, J, opt, rtol)
    assert res.certificate.source == "excessive-gap"
    # the reported point is one of the problem with intercept: its bias is not forced to 0
    coef, b = J.split(res.x)
    assert abs(b[0]) > 0.1 and abs(intercept[0]) > 0.1
    assert abs(J.value(res.x) - res.fun) <= 1e-12 * abs(res.fun)


def test_excessive_gap_with_sample_weights_against_cvxpy():
    X, y = binary(m=50, seed=7, positive=0.3)
    w = np.random.default_rng(7).uniform(0.2, 3.0, y.size)
    J = nsopt.RegularizedRisk(L.Hinge(X, y, sample_weight=w), R.L2(), LAM, fit_intercept=True)
    c = w / w.sum()
    coef, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(0.5 * LAM * cp.sum_squares(coef)
                                  + c @ cp.pos(1 - cp.multiply(y, X @ coef + b))))
    prob.solve(solver=cp.CLARABEL)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-5, max_iter=20000)
    _bracket(res, J, float(prob.value), 1e-5)


def test_excessive_gap_agrees_with_pragam_with_bias():
    """The same iteration as Pragam-b on w alone: the same coefficients and bounds."""
    J, X, y = make("hinge", R.L2())
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-7, max_iter=20000)
    fit = pragam_with_bias(X, y, LAM, rtol=1e-7, max_iter=20000)
    coef, _ = J.split(res.x)
    np.testing.assert_allclose(coef, fit.coef, atol=1e-4)
    assert abs(res.lower_bound - fit.result.lower_bound) <= 1e-9
    assert abs(res.fun - fit.result.fun) <= 1e-6 * res.fun


# --- the prox master with a per-coordinate metric, against cvxpy ----------------------------
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.sampled_from([1, 3]),
       u=st.floats(1e-3, 10.0), lam=st.floats(1e-3, 1.0))
def test_prox_master_with_intercepts_matches_cvxpy(seed, k, u, lam):
    r"""``_prox_master(..., n_intercepts=k)`` minimises ``lam/2 ||w||^2 + u/2 ||x - c||^2 +
    max_i <a_i, x> + b_i`` with ``x = (w, b)``: lam + u on w, u alone on b."""
    from nsopt.bundle import PlaneBundle
    from nsopt.inner import QPSimplex
    from nsopt.problem import InterceptRegularizer

    rng = np.random.default_rng(seed)
    d, n = 4, 6
    reg = InterceptRegularizer(R.L2(), d, k)
    bundle = PlaneBundle(d + k, metric=reg.gram_metric)   # as the solver's: G = A_w A_w^T
    A = rng.standard_normal((n, d + k))
    A[:, d:] += 2.0   # the planes push the intercepts one way: the prox term holds them
    c0 = rng.standard_normal(n)
    for i in range(n):
        bundle.add(A[i], c0[i])
    centre = 3.0 * rng.standard_normal(d + k)
    sol, x = _prox_master(bundle, QPSimplex(), lam, u, centre, None, None, n_intercepts=k)
    z = cp.Variable(d + k)
    obj = (0.5 * lam * cp.sum_squares(z[:d]) + 0.5 * u * cp.sum_squares(z - centre)
           + cp.max(A @ z + c0))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL)

    def value(v):
        return 0.5 * lam * v[:d] @ v[:d] + 0.5 * u * (v - centre) @ (v - centre) + np.max(A @ v + c0)

    scale = 1.0 + abs(prob.value)
    assert value(x) <= prob.value + 1e-6 * scale
    # strongly convex: the minimiser is unique, and x is it
    np.testing.assert_allclose(x, z.value, atol=1e-4 * (1 + np.max(np.abs(z.value))))
    # the dual connection: b = c_b - A_b^T beta / u, w = (u c_w - A_w^T beta) / (lam + u)
    a_bar = A.T @ sol.alpha
    np.testing.assert_allclose(x[d:], centre[d:] - a_bar[d:] / u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(x[:d], (u * centre[:d] - a_bar[:d]) / (lam + u), rtol=1e-9,
                               atol=1e-9)


def test_prox_master_without_intercepts_is_unchanged():
    """n_intercepts=0 is the plain L2 prox step (the rescaling is the identity there)."""
    from nsopt.bundle import PlaneBundle
    from nsopt.inner import QPSimplex

    rng = np.random.default_rng(0)
    bundle = PlaneBundle(5)
    A, c0 = rng.standard_normal((4, 5)), rng.standard_normal(4)
    for i in range(4):
        bundle.add(A[i], c0[i])
    centre = rng.standard_normal(5)
    z = cp.Variable(5)
    cp.Problem(cp.Minimize(0.05 * cp.sum_squares(z) + 0.5 * cp.sum_squares(z - centre)
                           + cp.max(A @ z + c0))).solve(solver=cp.CLARABEL)
    _, x = _prox_master(bundle, QPSimplex(), 0.1, 1.0, centre, None, None)
    np.testing.assert_allclose(x, z.value, atol=1e-6)


# --- a shift of the data that moves only the intercept ------------------------------------
def test_proximal_bmrm_target_shift_moves_only_the_intercept():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(50)
    fits = []
    for shift in (0.0, 7.0):
        J = nsopt.RegularizedRisk(L.LeastSquares(X, y + shift), R.L2(), 0.1, fit_intercept=True)
        res = nsopt.minimize(J, **PROXIMAL, rtol=1e-9, max_iter=2000)
        assert res.success, (res.status, res.gap)
        res.certificate.check(J)
        fits.append(J.split(res.x))
    (c0, b0), (c1, b1) = fits
    np.testing.assert_allclose(c1, c0, atol=1e-4)
    np.testing.assert_allclose(b1 - b0, 7.0, atol=1e-4)


def test_excessive_gap_feature_shift_moves_only_the_intercept():
    """X + 1 s^T turns the scores <x, w> + b into <x, w> + (b + <s, w>): the optimum and the
    coefficients stay, and the bias absorbs -<s, w>."""
    X, y = binary(seed=3, positive=0.35)
    s = np.array([2.0, -1.0, 0.5, 3.0])
    out = []
    for Xs in (X, X + s):
        J = nsopt.RegularizedRisk(L.Hinge(Xs, y), R.L2(), LAM, fit_intercept=True)
        res = nsopt.minimize(J, method="excessive-gap", rtol=1e-7, max_iter=50000)
        assert res.success
        res.certificate.check(J)
        out.append((J, res))
    (J0, r0), (J1, r1) = out
    assert abs(r0.fun - r1.fun) <= 2e-7 * r0.fun
    c0, _ = J0.split(r0.x)
    c1, b1 = J1.split(r1.x)
    np.testing.assert_allclose(c1, c0, atol=2e-3)
    # the shifted problem's point mapped back is optimal for the unshifted one
    mapped = J0.join(c1, b1 + s @ c1)
    assert J0.value(mapped) <= r0.lower_bound + 2e-7 * r0.fun
    # a regularized constant column instead would change the coefficients (not a free bias)
    opt_free, _, _ = cvx_reference("hinge", X + s, y, R.L2(), LAM)
    assert abs(opt_free - r1.fun) <= 2e-7 * r1.fun


# --- certificates ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [PROXIMAL, {"method": "excessive-gap"}], ids=["prox", "eg"])
def test_inflated_claim_is_rejected(kw):
    J, _, _ = make("hinge", R.L2())
    res = nsopt.minimize(J, rtol=1e-6, max_iter=20000, **kw)
    cert = res.certificate
    honest = cert.check(J)
    claimed = honest + 1e-3
    forged = type(cert)(**{**cert.__dict__, "lower": claimed, "gap": cert.upper - claimed})
    with pytest.raises(CertificateError):
        forged.check(J)


# --- refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize("loss_name", ["logistic", "squared-hinge"])
def test_excessive_gap_refuses_other_losses_with_intercept(loss_name):
    J, _, _ = make(loss_name, R.L2())
    with pytest.raises(ProblemNotSupported,
                       match="binary Hinge and the Crammer-Singer MulticlassHinge only.*'bmrm'"):
        nsopt.minimize(J, method="excessive-gap")


def test_excessive_gap_multiclass_hinge_against_cvxpy():
    """One bias per class (tests/test_excessive_gap_intercept.py has the rest)."""
    J, _, _ = make("multiclass-hinge", R.L2())
    opt, _, _ = reference("multiclass-hinge", "l2")
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-5, max_iter=50000)
    _bracket(res, J, opt, 1e-5)
    assert res.certificate.source == "excessive-gap"


def test_excessive_gap_refuses_l1_with_intercept():
    J, _, _ = make("hinge", R.L1())
    with pytest.raises(ProblemNotSupported, match="fit_intercept=True needs the L2"):
        nsopt.minimize(J, method="excessive-gap")


def test_proximal_bmrm_refusals_with_intercept():
    J, _, _ = make("hinge", R.L1())
    with pytest.raises(ProblemNotSupported, match="fit_intercept=True needs the L2"):
        nsopt.minimize(J, **PROXIMAL)
    # no proven intercept bound (Poisson): refused, pointing to the trust-region variant
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    Jp = nsopt.RegularizedRisk(L.Poisson(X, rng.poisson(2.0, 30).astype(float)), R.L2(), 0.1,
                               fit_intercept=True)
    assert not math.isfinite(Jp.intercept_bound())
    refused = r"intercept_bound\(\) is inf\); use ProximalBundle\(variant=.trust-region.\)"
    with pytest.raises(ProblemNotSupported, match=refused):
        nsopt.minimize(Jp, **PROXIMAL)
    # the auto variant falls back to the trust-region bundle there (a free coordinate)
    assert isinstance(ProximalBundle().choose(Jp), TrustRegionBundle)
    # the SGD start regularizes every coordinate: refused with an intercept
    Jh, _, _ = make("hinge", R.L2())
    with pytest.raises(ValueError, match="start='sgd'"):
        nsopt.minimize(Jh, **PROXIMAL, start="sgd")
