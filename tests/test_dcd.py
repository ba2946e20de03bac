"""Dual coordinate descent (method "dcd"): certified against cvxpy, refusals, forged evidence."""
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
from nsopt.solvers import DCD, ProblemNotSupported

from cvxref import small_binary

LOSSES = {"hinge": L.Hinge, "squared-hinge": L.SquaredHinge, "logistic": L.Logistic}


def _problem(loss, sparse, seed=0, lam=1e-2, m=150, d=8, weights=True):
    X, y = small_binary(m, d, seed, sparse=False)
    rng = np.random.default_rng(seed + 100)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.6, X, 0.0))
    w = rng.uniform(0.2, 3.0, m) if weights else None
    if weights:
        w[:5] = 0.0  # examples without weight take no part
    return nsopt.RegularizedRisk(LOSSES[loss](X, y, sample_weight=w), R.L2(), lam)


def _cvxpy_optimum(J):
    import cvxpy as cp

    prob, _ = nsopt.to_cvxpy(J)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_certified_bracket_against_cvxpy(loss, sparse):
    pytest.importorskip("cvxpy")
    J = _problem(loss, sparse, seed=len(loss) + sparse)
    rtol = 1e-6
    res = nsopt.minimize(J, method="dcd", rtol=rtol, max_iter=5000)
    f_star = _cvxpy_optimum(J)
    slack = 1e-7 * max(1.0, abs(f_star))
    assert res.success, res.message
    assert res.lower_bound - slack <= f_star <= res.fun + slack
    assert res.gap <= rtol * abs(res.fun)
    assert res.certificate.source == "dual-point"
    assert isinstance(res.certificate.evidence, DualPoint)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * max(1.0, abs(res.lower_bound))
    t = res.certificate.evidence.t
    assert np.all(t >= 0) and np.all(t <= J.loss.dual_upper)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_forged_certificates_are_rejected(loss):
    J = _problem(loss, sparse=True, seed=3)
    res = nsopt.minimize(J, method="dcd", rtol=1e-4)
    cert = res.certificate
    cert.check(J)
    # a claim above what the dual point proves
    higher = dataclasses.replace(cert, lower=cert.lower + 1e-3 * abs(cert.upper),
                                 gap=cert.gap - 1e-3 * abs(cert.upper))
    with pytest.raises(CertificateError):
        higher.check(J)
    # a dual point outside its box, below or above
    outside = [-0.5] + ([2.0 * J.loss.dual_upper] if math.isfinite(J.loss.dual_upper) else [])
    for value in outside:
        t = np.array(cert.evidence.t)
        t[0] = value
        with pytest.raises(CertificateError, match="leaves the box"):
            dataclasses.replace(cert, evidence=DualPoint(t), a_bar=None, b_bar=None).check(J)
    # the certificate of another problem (other lam)
    other = nsopt.RegularizedRisk(J.loss, R.L2(), J.lam * 2)
    with pytest.raises(CertificateError):
        cert.check(other)


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("check_every", [None, 1, 3])
def test_options_change_the_path_not_the_answer(shrinking, check_every):
    J = _problem("hinge", sparse=True, seed=5, lam=1e-3)
    res = nsopt.minimize(J, method="dcd", rtol=1e-5, shrinking=shrinking,
                         check_every=check_every, max_iter=5000)
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-8)
    assert res.success
    assert res.lower_bound <= ref.fun + 1e-12 and ref.lower_bound <= res.fun + 1e-12
    if check_every is not None:
        assert res.info["epochs"] == check_every * res.nit
    assert 0 < res.info["n_active"] <= J.loss.m


def test_runs_are_reproducible_and_seeded():
    J = _problem("logistic", sparse=False, seed=7)
    a = nsopt.minimize(J, method="dcd", max_iter=3, check_every=1)
    b = nsopt.minimize(J, method="dcd", max_iter=3, check_every=1)
    c = nsopt.minimize(J, method="dcd", max_iter=3, check_every=1, random_state=1)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.lower_bound == b.lower_bound
    assert not np.array_equal(a.x, c.x)


@pytest.mark.parametrize("make,what", [
    (lambda X, y: nsopt.RegularizedRisk(L.Hinge(X, y), R.L1(), 1e-2), "L2 regularizer"),
    (lambda X, y: nsopt.RegularizedRisk(L.Hinge(X, y), R.L1(), 1e-2, fit_intercept=True),
     "L2 regularizer (lam/2)||w||^2 on the coefficients (with or without an intercept)"),
    (lambda X, y: nsopt.RegularizedRisk(L.Huber(X, y), R.L2(), 1e-2), "Hinge, SquaredHinge or Logistic"),
    (lambda X, y: nsopt.RegularizedRisk(L.Exponential(X, y), R.L2(), 1e-2),
     "Hinge, SquaredHinge or Logistic"),
])
def test_refusals_name_the_reason_and_the_alternatives(make, what):
    X, y = small_binary(40, 4, 0)
    J = make(X, y)
    reason = DCD.unsupported_reason(J)
    assert reason is not None and what in reason and "ls-bmrm" in reason
    with pytest.raises(ProblemNotSupported, match="methods that can solve"):
        nsopt.minimize(J, method="dcd")
    assert "dcd" not in nsopt.solvers.methods_supporting(J)


def test_a_subclass_with_another_conjugate_is_refused():
    class HalfHinge(L.Hinge):
        def conjugate_terms(self, t):
            return -0.5 * np.asarray(t, dtype=np.float64)

    X, y = small_binary(40, 4, 0)
    assert DCD.unsupported_reason(nsopt.RegularizedRisk(HalfHinge(X, y), R.L2(), 1e-2))
    assert DCD.unsupported_reason(nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), 1e-2)) is None


@settings(max_examples=15, deadline=None)
@given(loss=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 10_000),
       lam=st.floats(1e-4, 1.0), max_iter=st.integers(0, 6), sparse=st.booleans())
def test_every_stop_brackets_the_optimum_with_a_valid_certificate(loss, seed, lam, max_iter,
                                                                  sparse):
    J = _problem(loss, sparse, seed=seed, lam=lam, m=60, d=5)
    res = nsopt.minimize(J, method="dcd", max_iter=max_iter, rtol=1e-9, check_every=1)
    ref = nsopt.minimize(J, method="ls-bmrm", rtol=1e-7)
    tol = 1e-9 * max(1.0, abs(ref.fun))
    assert res.lower_bound <= ref.fun + tol and ref.lower_bound <= res.fun + tol
    assert res.certificate.check(J) >= res.lower_bound - tol
    assert np.all(np.diff(res.history["lower_bound"]) >= 0)
