"""ExcessiveGap with one unregularized bias per class (Crammer-Singer hinge, L2): the dual set
is a transportation polytope (rows on simplices of total c_i, columns summing to the class
weights), projected by :func:`project_class_balance`.

Against cvxpy (Clarabel) with free per-class biases on small random problems (K = 2, 3, 5,
unbalanced classes, a class with one example, sample weights): the bracket lower <= J* <= fun,
the gap at success, certificates that check and forged dual points that do not; a hypothesis
property; the projection against cvxpy (KKT residual, feasibility); the refusals.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nsopt
from nsopt import losses as L
from nsopt import regularizers as R
from nsopt.certificate import CertificateError, SaddlePoint
from nsopt.saddle import saddle_form
from nsopt.solvers import ProblemNotSupported
from nsopt.solvers.excessive_gap import ExcessiveGap, project_class_balance

cp = pytest.importorskip("cvxpy")


# ----------------------------------------------------------------------------------------
# problems and the independent reference
# ----------------------------------------------------------------------------------------
def multiclass(m, d, k, seed, *, skew=0.0, singleton=None):
    """Random multiclass data; ``skew`` > 0 makes class 0 dominant, ``singleton`` a class
    with exactly one example."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    W = rng.standard_normal((d, k))
    shift = np.zeros(k)
    shift[0] = skew
    y = np.argmax(X @ W + 0.7 * rng.standard_normal((m, k)) + shift, axis=1)
    y[:k] = np.arange(k)
    if singleton is not None:
        others = [j for j in range(k) if j != singleton]
        rest = y[k:]
        rest[rest == singleton] = rng.choice(others, size=int((rest == singleton).sum()))
    return X, y


def cvx_optimum(X, y, k, lam, c=None):
    """J* of lam/2 ||W||^2 + sum_i c_i max_j (f_ij + b_j - f_iy - b_y + [j != y_i]) with free b."""
    m, d = X.shape
    c = np.full(m, 1.0 / m) if c is None else c / c.sum()
    W, b = cp.Variable((d, k)), cp.Variable(k)
    onehot = np.eye(k)[y]
    F = X @ W + np.ones((m, 1)) @ cp.reshape(b, (1, k), order="C")
    loss = cp.max(F + 1 - onehot, axis=1) - cp.sum(cp.multiply(onehot, F), axis=1)
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(W) + c @ loss))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def problem(X, y, lam, c=None, n_classes=None):
    loss = L.MulticlassHinge(X, y, n_classes=n_classes, sample_weight=c)
    return nsopt.RegularizedRisk(loss, R.L2(), lam, fit_intercept=True)


def assert_bracket(res, J, opt, rtol):
    tol = 1e-7 * max(1.0, abs(opt))
    assert res.success, (res.status, res.gap, res.message)
    assert res.certificate.source == "excessive-gap"
    assert res.lower_bound <= opt + tol
    assert opt <= res.fun + tol
    assert res.gap <= rtol * abs(res.fun) * (1 + 1e-9)
    assert res.x.shape == (J.dim,)
    assert J.value(res.x) == pytest.approx(res.fun, rel=1e-12)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * max(1.0, abs(res.fun))
    assert isinstance(res.certificate.evidence, SaddlePoint)


CASES = {
    "k2": dict(m=40, d=3, k=2, seed=0),
    "k3": dict(m=60, d=4, k=3, seed=1),
    "k5": dict(m=80, d=4, k=5, seed=2),
    "k3-unbalanced": dict(m=70, d=3, k=3, seed=3, skew=3.0),
    "k4-singleton": dict(m=50, d=3, k=4, seed=4, singleton=2),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("lam", [0.05, 1e-3])
def test_against_cvxpy(name, lam):
    kw = dict(CASES[name])
    k = kw.pop("k")
    X, y = multiclass(kw.pop("m"), kw.pop("d"), k, kw.pop("seed"), **kw)
    if name == "k4-singleton":
        assert np.sum(y == 2) == 1
    if name == "k3-unbalanced":
        assert np.bincount(y).max() >= 3 * np.bincount(y).min()
    J = problem(X, y, lam)
    opt = cvx_optimum(X, y, k, lam)
    rtol = 1e-6 if lam >= 0.01 else 1e-4   # small lam: L ~ ||Z||^2 / lam, more iterations
    res = nsopt.minimize(J, method="excessive-gap", rtol=rtol, max_iter=50000)
    assert_bracket(res, J, opt, rtol)
    # free biases can only help: the bias-free problem's proven bound is above J* (ls-bmrm
    # proves 1e-7 in 20-40 iterations where excessive-gap needed 40,000 at lam 1e-3)
    J0 = nsopt.RegularizedRisk(L.MulticlassHinge(X, y), R.L2(), lam)
    free = nsopt.minimize(J0, method="ls-bmrm", rtol=1e-7)
    assert free.success and free.lower_bound > opt - 1e-9
    assert res.info["newton_steps"] > 0


def test_sample_weights_against_cvxpy():
    X, y = multiclass(50, 3, 3, 5)
    c = np.random.default_rng(5).uniform(0.1, 3.0, size=50)
    J = problem(X, y, 0.02, c=c)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    assert_bracket(res, J, cvx_optimum(X, y, 3, 0.02, c=c), 1e-6)


def test_sparse_data_same_bracket():
    import scipy.sparse as sp

    X, y = multiclass(40, 4, 3, 6)
    X[np.abs(X) < 0.6] = 0.0
    dense = nsopt.minimize(problem(X, y, 0.02), method="excessive-gap", rtol=1e-5)
    sparse = nsopt.minimize(problem(sp.csr_matrix(X), y, 0.02), method="excessive-gap",
                            rtol=1e-5)
    assert dense.success and sparse.success
    assert abs(dense.nit - sparse.nit) <= 2          # the same iteration up to rounding
    assert sparse.lower_bound <= dense.fun and dense.lower_bound <= sparse.fun
    np.testing.assert_allclose(sparse.x, dense.x, rtol=1e-3, atol=1e-4)


# ----------------------------------------------------------------------------------------
# certificates: checked from the dual point, a forged one rejected
# ----------------------------------------------------------------------------------------
def _forge(cert, alpha, lower):
    a_bar, b_bar = None, None
    return type(cert)(**{**cert.__dict__, "evidence": SaddlePoint(alpha), "a_bar": a_bar,
                         "b_bar": b_bar, "lower": lower, "gap": cert.upper - lower})


def test_forged_dual_point_violating_the_equalities_is_rejected():
    X, y = multiclass(60, 3, 3, 7, skew=2.0)
    J = problem(X, y, 0.01)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    cert = res.certificate
    honest = cert.check(J)
    form = saddle_form(J.loss)
    lam, m = J.lam, X.shape[0]
    c = np.full(m, 1.0 / m)
    # the dual point of the problem WITHOUT the equalities: the best alpha on the product of
    # simplices for the bias-free loss at the intercept problem's coefficients
    n = J.base_loss.dim
    w = res.x[:n]
    F = X @ w.reshape(-1, 3)
    onehot = np.eye(3)[y]
    top = np.argmax(F + 1 - onehot - (F * onehot).sum(1, keepdims=True), axis=1)
    alpha = c[:, None] * np.eye(3)[top]
    slope_b = -form.rmatvec(alpha)[n:]
    assert np.abs(slope_b).sum() > 1e-3           # it violates the equalities
    # its bias-free dual value (what one would claim ignoring the equalities)
    zt = form.rmatvec(alpha)[:n]
    claimed = float(np.sum(form.offset * alpha)) - zt @ zt / (2 * lam)
    B = J.intercept_bound()
    proven = claimed - B * np.abs(slope_b).sum()
    assert proven < claimed
    forged = _forge(cert, alpha, min(claimed, cert.upper))
    with pytest.raises(CertificateError):
        forged.check(J)
    # with the B-term paid it is a valid (weak) certificate
    paid = _forge(cert, alpha, proven)
    assert paid.check(J) == pytest.approx(proven, rel=1e-9, abs=1e-12)
    assert proven <= honest
    # and the honest dual point, nudged off the equalities, proves less by B times the residual
    shifted = np.array(cert.evidence.alpha, copy=True)
    i = int(np.flatnonzero(shifted[:, 0] > 0)[0])
    j = 1
    moved = 0.5 * shifted[i, 0]
    shifted[i, 0] -= moved
    shifted[i, j] += moved
    nudged = _forge(cert, shifted, cert.lower)
    with pytest.raises(CertificateError):
        nudged.check(J)
    assert SaddlePoint(shifted).verify(J)[0] <= honest - B * moved  # two columns off by `moved`


def test_inflated_claim_rejected():
    X, y = multiclass(40, 3, 3, 8)
    J = problem(X, y, 0.05)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    cert = res.certificate
    claimed = cert.check(J) + 1e-4
    forged = type(cert)(**{**cert.__dict__, "lower": claimed, "gap": cert.upper - claimed})
    with pytest.raises(CertificateError):
        forged.check(J)


def test_certificate_for_another_problem_rejected():
    X, y = multiclass(40, 3, 3, 9)
    res = nsopt.minimize(problem(X, y, 0.05), method="excessive-gap", rtol=1e-5)
    with pytest.raises(CertificateError, match="another problem"):
        res.certificate.check(problem(X, y, 0.06))


# ----------------------------------------------------------------------------------------
# a property over random small problems
# ----------------------------------------------------------------------------------------
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(6, 30), d=st.integers(1, 4), k=st.integers(2, 4),
       seed=st.integers(0, 2**16), lam=st.sampled_from([1e-2, 0.1, 0.3]),
       skew=st.sampled_from([0.0, 2.0]))
def test_property_bracket_random_problems(m, d, k, seed, lam, skew):
    X, y = multiclass(max(m, k), d, k, seed, skew=skew)
    J = problem(X, y, lam)
    opt = cvx_optimum(X, y, k, lam)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-4, max_iter=50000)
    tol = 1e-7 * max(1.0, abs(opt))
    assert res.lower_bound <= opt + tol <= res.fun + 2 * tol
    if res.success:
        assert res.gap <= 1e-4 * abs(res.fun) * (1 + 1e-9)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * max(1.0, abs(res.fun))


# ----------------------------------------------------------------------------------------
# the projection onto the transportation polytope
# ----------------------------------------------------------------------------------------
def cvx_projection(V, rows, cols):
    m, k = V.shape
    A = cp.Variable((m, k))
    prob = cp.Problem(cp.Minimize(cp.sum_squares(A - V)),
                      [A >= 0, cp.sum(A, axis=1) == rows, cp.sum(A, axis=0) == cols])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return A.value


def check_kkt(V, rows, cols, p):
    """Feasibility and the KKT conditions with the returned multipliers: alpha_i is the
    projection of v_i + nu onto its simplex, i.e. alpha_ij = max(v_ij + nu_j - theta_i, 0)
    with one theta_i per row."""
    a = p.alpha
    assert np.all(a >= 0)
    np.testing.assert_allclose(a.sum(axis=1), rows, rtol=0, atol=2e-16 * V.shape[1])
    np.testing.assert_allclose(a.sum(axis=0) - cols, p.residual, rtol=0, atol=1e-15)
    assert np.abs(p.residual).sum() <= 1e-12
    U = V + p.nu
    for i in range(V.shape[0]):
        if rows[i] == 0:
            assert not a[i].any()
            continue
        S = a[i] > 0
        theta = np.mean(U[i, S] - a[i, S])
        np.testing.assert_allclose(a[i, S], U[i, S] - theta, atol=1e-9 * (1 + np.abs(U[i]).max()))
        assert np.all(U[i, ~S] <= theta + 1e-9 * (1 + np.abs(U[i]).max()))


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 25), k=st.integers(2, 6), seed=st.integers(0, 2**16),
       scale=st.sampled_from([1e-3, 1.0, 100.0]), zero_row=st.booleans())
def test_projection_against_cvxpy(m, k, seed, scale, zero_row):
    rng = np.random.default_rng(seed)
    V = scale * rng.standard_normal((m, k))
    rows = rng.uniform(0.1, 1.0, m)
    if zero_row and m > 1:
        rows[0] = 0.0
    rows /= rows.sum()
    # column totals of a feasible point: any labels (some classes may get no mass)
    y = rng.integers(0, k, m)
    cols = np.bincount(y, weights=rows, minlength=k)
    p = project_class_balance(V, rows, cols)
    check_kkt(V, rows, cols, p)
    ref = cvx_projection(V, rows, cols)
    np.testing.assert_allclose(p.alpha, ref, atol=1e-7 * max(1.0, np.abs(ref).max()))
    # it is the nearest point: no feasible reference point is closer
    assert np.sum((p.alpha - V) ** 2) <= np.sum((ref - V) ** 2) + 1e-9 * (1 + np.sum(V ** 2))


def test_projection_warm_start_and_fixed_point():
    rng = np.random.default_rng(0)
    m, k = 300, 5
    V = rng.standard_normal((m, k))
    rows = np.full(m, 1.0 / m)
    cols = np.bincount(rng.integers(0, k, m), weights=rows, minlength=k)
    p = project_class_balance(V, rows, cols)
    check_kkt(V, rows, cols, p)
    # a point of the polytope is its own projection
    q = project_class_balance(p.alpha, rows, cols)
    np.testing.assert_allclose(q.alpha, p.alpha, atol=1e-13)
    # warm-started at the answer: no work left
    again = project_class_balance(V, rows, cols, p.nu)
    assert again.iterations <= 1
    np.testing.assert_allclose(again.alpha, p.alpha, atol=1e-13)


def test_projection_errors():
    V = np.zeros((3, 2))
    with pytest.raises(ValueError, match="equal sums"):
        project_class_balance(V, np.full(3, 1 / 3), np.array([0.5, 0.6]))
    with pytest.raises(ValueError, match="cols must have 2 entries"):
        project_class_balance(V, np.full(3, 1 / 3), np.full(3, 1 / 3))
    with pytest.raises(ValueError, match="nonnegative"):
        project_class_balance(V, np.array([0.5, 0.6, -0.1]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="m x k matrix"):
        project_class_balance(np.zeros(3), np.full(3, 1 / 3), np.full(3, 1 / 3))


# ----------------------------------------------------------------------------------------
# saddle form with intercepts, primal point, refusals
# ----------------------------------------------------------------------------------------
def test_intercept_saddle_form_is_the_loss():
    """max over Q of <alpha, b - Z x> is the loss with intercept at x (the form the
    certificate checks), and Z_b^T alpha = C - alpha^T 1."""
    X, y = multiclass(30, 3, 3, 10)
    J = problem(X, y, 0.1)
    form = saddle_form(J.loss)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(J.dim)
    r = form.offset - form.matvec(x)
    c = np.full(30, 1 / 30)
    best = (c[:, None] * np.eye(3)[np.argmax(r, axis=1)])
    assert np.sum(best * r) == pytest.approx(J.loss.value(x), rel=1e-12)
    alpha = form.project(rng.random((30, 3)))
    C = np.bincount(y, weights=c, minlength=3)
    np.testing.assert_allclose(form.rmatvec(alpha)[-3:], C - alpha.sum(axis=0), atol=1e-15)
    # the adjoint
    assert np.sum(alpha * form.matvec(x)) == pytest.approx(form.rmatvec(alpha) @ x, rel=1e-12)


def test_primal_point_is_problem_join():
    X, y = multiclass(50, 3, 4, 11, skew=2.0)
    J = problem(X, y, 0.02)
    res = nsopt.minimize(J, method="excessive-gap", rtol=1e-6, max_iter=50000)
    coef, b = J.split(res.x)
    assert b.shape == (4,)
    np.testing.assert_array_equal(J.join(coef, b), res.x)
    # the biases matter: predicting with them differs from predicting without
    assert np.ptp(b) > 1e-3


def test_iterate_states_bounds_are_monotone_valid():
    X, y = multiclass(40, 3, 3, 12)
    J = problem(X, y, 0.05)
    opt = cvx_optimum(X, y, 3, 0.05)
    states = list(ExcessiveGap(max_iter=40).iterate(J))
    for s in states:
        assert s.lower_bound <= opt + 1e-8
        assert np.abs(s.alpha.sum(axis=1) - 1 / 40).max() <= 1e-15
    # the intercepts' equalities hold at every dual iterate to rounding
    assert max(np.abs(s.a_bar[-3:]).sum() for s in states) <= 1e-12


def test_refuses_a_class_without_examples():
    X, y = multiclass(30, 3, 3, 13)
    J = problem(X, y, 0.1, n_classes=4)
    assert not math.isfinite(J.intercept_bound())
    with pytest.raises(ProblemNotSupported, match=r"intercept_bound\(\) is inf"):
        nsopt.minimize(J, method="excessive-gap")


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_refuses_scaled_multiclass_hinge(rescaling):
    X, y = multiclass(30, 3, 3, 14)
    cost = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float)
    J = nsopt.RegularizedRisk(L.ScaledMulticlassHinge(X, y, cost, rescaling), R.L2(), 0.1,
                              fit_intercept=True)
    with pytest.raises(ProblemNotSupported, match="Crammer-Singer MulticlassHinge only"):
        nsopt.minimize(J, method="excessive-gap")


def test_refuses_l1_with_multiclass_intercept():
    X, y = multiclass(30, 3, 3, 15)
    J = nsopt.RegularizedRisk(L.MulticlassHinge(X, y), R.L1(), 0.1, fit_intercept=True)
    with pytest.raises(ProblemNotSupported, match="fit_intercept=True needs the L2"):
        nsopt.minimize(J, method="excessive-gap")
    assert "excessive-gap" in nsopt.solvers.methods_supporting(problem(X, y, 0.1))


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_fixed_schedule_with_intercepts(kind):
    """adaptive_lipschitz=False with intercepts: L = ||Z||^2 / lam with Z acting on w only
    (it passed the problem's dimension, d + biases, and crashed); the bracket holds."""
    if kind == "binary":
        X, y = nsopt.datasets.make_sparse_binary(80, 6, random_state=0)
        X = X.toarray()
        J = nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), 0.05, fit_intercept=True)
        opt = nsopt.minimize(J, method="proximal-bundle", rtol=1e-10)
        lo, hi = opt.lower_bound, opt.fun
    else:
        X, y = multiclass(50, 3, 3, 7)
        J = problem(X, y, 0.05)
        lo = hi = cvx_optimum(X, y, 3, 0.05)
    res = nsopt.minimize(J, method="excessive-gap", adaptive_lipschitz=False, rtol=1e-5,
                         max_iter=50000)
    assert res.success, (res.status, res.message)
    tol = 1e-7 * max(1.0, abs(hi))
    assert res.lower_bound <= hi + tol and lo <= res.fun + tol
    assert res.gap <= 1e-5 * abs(res.fun) * (1 + 1e-9)
    assert res.info["lipschitz"] > 0
