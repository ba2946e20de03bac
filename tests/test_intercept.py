"""An unregularized intercept (``RegularizedRisk(..., fit_intercept=True)``) for every solver:
against cvxpy (Clarabel) with a free bias, certificates that check and forged ones that do not,
the intercept really unregularized, the oracle consistent, clear errors."""
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
from nsopt.certificate import CertificateError, DualPoint, QueryPoints
from nsopt.solvers import SOLVERS, ProblemNotSupported
from nsopt.testing import check_oracle

cp = pytest.importorskip("cvxpy")

LAM = 0.05


def binary(m=60, d=4, seed=0, positive=0.5, shift=0.0):
    """A small noisy binary problem whose labels are imbalanced by ``shift`` (labels +-1)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    w = rng.standard_normal(d)
    z = X @ w + 0.5 * rng.standard_normal(m)
    y = np.where(z >= np.quantile(z, 1 - positive), 1.0, -1.0)
    return X + shift, y


def multiclass(m=60, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    W = rng.standard_normal((d, k))
    y = np.argmax(X @ W + 0.5 * rng.standard_normal((m, k)) + np.array([1.0, 0, -0.5]), axis=1)
    y[:k] = np.arange(k)
    return X, y


# --- cvxpy with a free bias (kept here, independent of nsopt's own translators) --------------
def cvx_reference(loss_name, X, y, reg, lam):
    """(J*, coef, intercept) of ``lam Omega(coef) + mean loss`` with a free bias, by Clarabel."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    m, d = X.shape
    if loss_name in ("multiclass-hinge", "softmax"):
        k = int(y.max()) + 1
        W, b = cp.Variable((d, k)), cp.Variable(k)
        onehot = np.eye(k)[y]
        F = X @ W + np.ones((m, 1)) @ cp.reshape(b, (1, k), order="C")
        top = cp.max(F + 1 - onehot, axis=1) if loss_name == "multiclass-hinge" else cp.log_sum_exp(F, axis=1)
        risk = cp.sum(top - cp.sum(cp.multiply(onehot, F), axis=1)) / m
        coef = cp.vec(W, order="C")
    else:
        w, b = cp.Variable(d), cp.Variable()
        z = X @ w + b
        if loss_name == "hinge":
            risk = cp.sum(cp.pos(1 - cp.multiply(y, z))) / m
        elif loss_name == "squared-hinge":
            risk = 0.5 * cp.sum_squares(cp.pos(1 - cp.multiply(y, z))) / m
        elif loss_name == "logistic":
            risk = cp.sum(cp.logistic(-cp.multiply(y, z))) / m
        elif loss_name == "least-squares":
            risk = 0.5 * cp.sum_squares(z - y) / m
        else:  # pragma: no cover
            raise ValueError(loss_name)
        coef = w
    omega = 0.5 * cp.sum_squares(coef) if isinstance(reg, R.L2) else cp.norm1(coef)
    prob = cp.Problem(cp.Minimize(lam * omega + risk))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal", prob.status
    return float(prob.value), np.asarray(coef.value).ravel(), np.atleast_1d(b.value).astype(float)


LOSSES = {"hinge": L.Hinge, "squared-hinge": L.SquaredHinge, "logistic": L.Logistic,
          "multiclass-hinge": L.MulticlassHinge}


def make(loss_name, reg, seed=0):
    X, y = multiclass(seed=seed) if loss_name == "multiclass-hinge" else binary(seed=seed, positive=0.3)
    J = nsopt.RegularizedRisk(LOSSES[loss_name](X, y), reg, LAM, fit_intercept=True)
    return J, X, y


_REF = {}


def reference(loss_name, reg_name):
    key = (loss_name, reg_name)
    if key not in _REF:
        reg = R.L2() if reg_name == "l2" else R.L1()
        J, X, y = make(loss_name, reg)
        _REF[key] = cvx_reference(loss_name, X, y, reg, LAM)
    return _REF[key]


def supports(method, J):
    return SOLVERS[method].unsupported_reason(J) is None


METHODS = ["bmrm", "ls-bmrm", "kbundle", "proximal-bundle", "subbfgs", "sublbfgs", "dcd",
           "newton-cd", "newton-cg"]


@pytest.mark.parametrize("reg_name", ["l2", "l1"])
@pytest.mark.parametrize("loss_name", list(LOSSES))
@pytest.mark.parametrize("method", METHODS)
def test_against_cvxpy_with_free_bias(method, loss_name, reg_name):
    reg = R.L2() if reg_name == "l2" else R.L1()
    J, X, y = make(loss_name, reg)
    if not supports(method, J):
        with pytest.raises(ProblemNotSupported):
            nsopt.minimize(J, method=method)
        # the only combinations refused here: kbundle with L1, dcd off L2 binary margin losses,
        # newton-cd off L1 logistic / squared hinge, newton-cg off L2 logistic / squared hinge
        assert ((method, reg_name) == ("kbundle", "l1")
                or (method == "dcd" and (reg_name == "l1" or loss_name == "multiclass-hinge"))
                or (method == "newton-cd" and (reg_name == "l2"
                                               or loss_name not in ("logistic", "squared-hinge")))
                or (method == "newton-cg" and (reg_name == "l1"
                                               or loss_name not in ("logistic", "squared-hinge"))))
        return
    opt, coef, intercept = reference(loss_name, reg_name)
    res = nsopt.minimize(J, method=method, rtol=1e-4, max_iter=3000)
    tol = 1e-6 * max(1.0, abs(opt))
    assert res.success, (res.status, res.gap)
    assert res.lower_bound <= opt + tol
    assert opt <= res.fun + tol
    assert res.gap <= 1e-4 * abs(res.fun) * (1 + 1e-9)
    assert res.certificate.check(J) >= res.lower_bound - 1e-9 * abs(res.fun)
    # the box the certificates use contains cvxpy's intercept
    assert np.max(np.abs(intercept)) <= J.intercept_bound()
    # cvxpy's point has cvxpy's value under J (the same problem; the minimiser need not be unique)
    assert abs(J.value(J.join(coef, intercept)) - opt) <= 1e-5 * max(1.0, abs(opt))


@pytest.mark.parametrize("method", ["bmrm", "sublbfgs"])
def test_softmax_with_intercepts_against_cvxpy(method):
    X, y = multiclass(seed=4)
    J = nsopt.RegularizedRisk(L.Softmax(X, y), R.L2(), LAM, fit_intercept=True)
    opt, coef, intercept = cvx_reference("softmax", X, y, R.L2(), LAM)
    res = nsopt.minimize(J, method=method, rtol=1e-5)
    assert res.success
    assert res.lower_bound <= opt + 1e-7 <= res.fun + 2e-7
    res.certificate.check(J)
    # softmax is shift invariant in b: compare the intercepts' differences
    b = J.split(res.x)[1]
    np.testing.assert_allclose(b - b.mean(), intercept - intercept.mean(), atol=2e-2)
    assert np.max(np.abs(intercept - intercept.max())) <= J.intercept_bound()


def test_every_solver_solves_or_refuses_clearly():
    X, y = binary()
    for reg in (R.L2(), R.L1(), R.Lp(1.5)):
        J = nsopt.RegularizedRisk(L.Hinge(X, y), reg, LAM, fit_intercept=True)
        for name, cls in SOLVERS.items():
            if getattr(cls, "required_options", ()):  # level-bundle: a box of the user's
                res = nsopt.minimize(J, method=name, bounds=(-50.0, 50.0), max_iter=200)
                res.certificate.check(J, bounds=(-50.0, 50.0))
                continue
            reason = cls.unsupported_reason(J)
            if reason is not None:
                assert "intercept" in reason or "bounds" in reason or "polyhedral" in reason, reason
                with pytest.raises(ProblemNotSupported):
                    nsopt.minimize(J, method=name, max_iter=5)
                continue
            res = nsopt.minimize(J, method=name, max_iter=400)
            assert res.lower_bound <= res.fun
            res.certificate.check(J)


def test_bmrm_refuses_regularizer_without_intercept_master():
    X, y = binary()
    J = nsopt.RegularizedRisk(L.Logistic(X, y), R.Lp(1.5), LAM, fit_intercept=True)
    with pytest.raises(ProblemNotSupported, match="subbfgs"):
        nsopt.minimize(J, method="bmrm")
    res = nsopt.minimize(J, method="subbfgs", rtol=1e-3)  # a free coordinate there
    assert math.isfinite(res.fun)


# --- certificates ----------------------------------------------------------------------
def _hinge_problem():
    X, y = binary(positive=0.25)
    return nsopt.RegularizedRisk(L.Hinge(X, y), R.L2(), LAM, fit_intercept=True)


def _unboxed_bound(J, a, b):
    coef_a = a[:-J.n_intercepts]
    return b - J.base_reg.scaled_conjugate(coef_a, J.lam)


def test_forged_dual_point_violating_the_equality_is_rejected():
    J = _hinge_problem()
    res = nsopt.minimize(J, method="bmrm", rtol=1e-6)
    cert = res.certificate
    assert isinstance(cert.evidence, DualPoint)
    cert.check(J)
    # raise the negatives' dual variables: sum c y t != 0, the plane's intercept slope is not 0
    t = cert.evidence.t.copy()
    y = J.loss.y
    t[y < 0] = np.minimum(1.0, 1.5 * t[y < 0])
    a, b = J.loss.dual_plane(t)
    assert abs(a[-1]) > 1e-3
    # ignoring the equality (b fixed at 0) this dual point would "prove" more than J(x) >= J*
    assert _unboxed_bound(J, a, b) > res.fun
    honest = b - J.reg.scaled_conjugate(a, J.lam)  # with the box term B |a_b|
    claimed = res.fun - 1e-6
    assert honest < claimed
    forged = type(cert)(upper=cert.upper, lower=claimed, gap=cert.upper - claimed,
                        source=cert.source, evidence=DualPoint(t), x=cert.x,
                        fingerprint=cert.fingerprint)
    with pytest.raises(CertificateError, match="exceeds"):
        forged.check(J)
    # the same dual point with an honest claim checks
    fair = type(cert)(upper=cert.upper, lower=honest, gap=cert.upper - honest,
                      source=cert.source, evidence=DualPoint(t), x=cert.x,
                      fingerprint=cert.fingerprint)
    assert fair.check(J) == pytest.approx(honest, rel=1e-9)


def test_tampered_bias_box_is_rejected():
    J = _hinge_problem()
    res = nsopt.minimize(J, method="bmrm", rtol=1e-6)
    # a problem whose box pretends the bias is 0: its "bound" is the optimum with b = 0, above J*
    fake = nsopt.RegularizedRisk(J.base_loss, R.L2(), LAM, fit_intercept=True)
    fake._intercept_bound = 0.0
    fres = nsopt.minimize(fake, method="bmrm", rtol=1e-8)
    assert fres.lower_bound > res.fun + 1e-3  # b = 0 is far from optimal on imbalanced data
    with pytest.raises(CertificateError):
        fres.certificate.check(J)


def test_query_points_evidence_with_intercept():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 3))
    y = X @ np.array([1.0, 0.0, -1.0]) + 5.0 + 0.1 * rng.standard_normal(40)
    J = nsopt.RegularizedRisk(L.LeastAbsoluteDeviation(X, y), R.L2(), 0.1, fit_intercept=True)
    res = nsopt.minimize(J, method="bmrm", rtol=1e-4)
    assert res.success and abs(J.split(res.x)[1][0] - 5.0) < 0.5
    ev = res.certificate.evidence
    assert isinstance(ev, QueryPoints)  # not a margin loss: the planes' query points
    res.certificate.check(J)
    # moving the query points' intercepts changes the rebuilt plane: the cached one fails
    pts = tuple(np.concatenate((p[:-1], p[-1:] + 3.0)) for p in ev.points)
    forged = type(res.certificate)(**{**res.certificate.__dict__,
                                      "evidence": QueryPoints(pts, ev.weights, ev.floor)})
    with pytest.raises(CertificateError):
        forged.check(J)


# --- the intercept is not regularized --------------------------------------------------
def test_shifting_targets_shifts_only_the_intercept():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(50)
    fits = []
    for shift in (0.0, 7.0):
        J = nsopt.RegularizedRisk(L.LeastSquares(X, y + shift), R.L2(), 0.1, fit_intercept=True)
        res = nsopt.minimize(J, method="bmrm", rtol=1e-10, max_iter=500)
        assert res.success
        fits.append(J.split(res.x))
    (c0, b0), (c1, b1) = fits
    np.testing.assert_allclose(c1, c0, atol=1e-4)
    np.testing.assert_allclose(b1 - b0, 7.0, atol=1e-4)
    # a regularized constant column would shrink the shift
    Xc = np.hstack([X, np.ones((50, 1))])
    Jc = nsopt.RegularizedRisk(L.LeastSquares(Xc, y + 7.0), R.L2(), 0.1)
    shrunk = nsopt.minimize(Jc, method="bmrm", rtol=1e-10).x[-1]
    assert shrunk < b1[0] - 0.5


def test_imbalanced_classes_give_a_large_bias():
    X, y = binary(m=80, positive=0.9, seed=2)
    J = nsopt.RegularizedRisk(L.Logistic(X, y), R.L2(), 1.0, fit_intercept=True)
    res = nsopt.minimize(J, method="sublbfgs", rtol=1e-8)
    coef, b = J.split(res.x)
    opt, _, b_ref = cvx_reference("logistic", X, y, R.L2(), 1.0)
    assert b[0] > 1.5  # strong regularization: the bias carries the class prior (log 9 = 2.2)
    assert abs(b[0] - b_ref[0]) < 1e-3
    assert res.lower_bound <= opt + 1e-9


# --- the oracle --------------------------------------------------------------------------
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 1000), kind=st.sampled_from(
    ["hinge", "logistic", "squared-hinge", "multiclass-hinge", "softmax", "least-squares"]),
    sparse=st.booleans(), l1=st.booleans())
def test_check_oracle_with_intercept(seed, kind, sparse, l1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((20, 3))
    Xs = sp.csr_matrix(X) if sparse else X
    if kind in ("multiclass-hinge", "softmax"):
        y = rng.integers(0, 3, 20)
        y[:3] = np.arange(3)
        loss = (L.MulticlassHinge if kind == "multiclass-hinge" else L.Softmax)(Xs, y)
    elif kind == "least-squares":
        loss = L.LeastSquares(Xs, rng.standard_normal(20))
    else:
        y = np.where(rng.standard_normal(20) > 0, 1.0, -1.0)
        loss = LOSSES[kind](Xs, y)
    J = nsopt.RegularizedRisk(loss, R.L1() if l1 else R.L2(), 0.1, fit_intercept=True)
    check_oracle(J, seed=seed)
    # the loss on x is that of the data with a column of ones (per class)
    x = rng.standard_normal(J.dim)
    coef, b = J.split(x)
    if loss.shape == (loss.dim,):
        plain = L.LeastSquares if kind == "least-squares" else LOSSES[kind]
        ref = plain(np.hstack([X, np.ones((20, 1))]), loss.y)
        assert abs(J.loss.value(x) - ref.value(x)) <= 1e-12 * (1 + abs(ref.value(x)))
    else:
        k = loss.shape[1]
        ref_loss = type(loss)(np.hstack([X, np.ones((20, 1))]), loss.y)
        assert abs(J.loss.value(x) - ref_loss.value(x)) <= 1e-12 * (1 + abs(ref_loss.value(x)))
        assert b.size == k


# --- shapes and errors --------------------------------------------------------------------
def test_split_join_and_dimensions():
    X, y = multiclass()
    J = nsopt.RegularizedRisk(L.MulticlassHinge(X, y), fit_intercept=True)
    assert J.n_intercepts == 3 and J.dim == 4 * 3 + 3
    coef, b = np.arange(12.0), np.array([7.0, 8.0, 9.0])
    x = J.join(coef, b)
    c2, b2 = J.split(x)
    np.testing.assert_array_equal(c2, coef)
    np.testing.assert_array_equal(b2, b)
    # x is the flattened (d+1) x k matrix whose last row holds the intercepts
    np.testing.assert_array_equal(x.reshape(5, 3)[-1], b)
    # the intercept is not regularized: Omega sees the coefficients only
    for big in ([5.0, -3.0, 1.0], [500.0, 0.0, -70.0]):
        x = J.join(coef, big)
        assert J.reg.value(x) == J.base_reg.value(coef)
        assert J.value(x) == pytest.approx(J.lam * J.base_reg.value(coef) + J.loss.value(x))
    Jplain = nsopt.RegularizedRisk(L.MulticlassHinge(X, y))
    assert Jplain.n_intercepts == 0 and Jplain.dim == 12 and not Jplain.fit_intercept


def test_clear_errors():
    X, y = binary()
    with pytest.raises(ValueError, match="cancels out"):
        nsopt.RegularizedRisk(L.ROCArea(X, y), fit_intercept=True)
    J = nsopt.RegularizedRisk(L.Hinge(X, y), fit_intercept=True)
    with pytest.raises(ValueError, match="length"):
        J.value(np.zeros(X.shape[1]))
    with pytest.raises(ValueError, match="length"):
        J.split(np.zeros(X.shape[1]))
    with pytest.raises(ValueError, match="intercept must have 1"):
        J.join(np.zeros(X.shape[1]), [1.0, 2.0])
    with pytest.raises(TypeError, match="fit_intercept"):
        nsopt.RegularizedRisk(L.Hinge(X, y), fit_intercept="yes")
    with pytest.raises(ValueError, match="rho"):
        nsopt.RegularizedRisk(L.Novelty(X), fit_intercept=True)


# --- the master problems with intercepts, against cvxpy ------------------------------------
class _Box:
    def __init__(self, B):
        self.B = B

    def intercept_bound(self):
        return self.B


@pytest.mark.parametrize("n_blocks", [1, 2])
@pytest.mark.parametrize("kind", ["qp", "lp"])
@pytest.mark.parametrize("k", [1, 2])
def test_intercept_masters_match_the_box_primal(kind, n_blocks, k):
    """The dual value of InterceptQP / InterceptLP is the minimum of the cutting-plane model
    over the box |b| <= B (one model per block), and the returned x attains it."""
    from nsopt.bundle import PlaneBundle
    from nsopt.inner import select
    from nsopt.problem import InterceptRegularizer

    rng = np.random.default_rng(k + 10 * n_blocks)
    d, n, B, lam = 3, 7, 2.5, 0.3
    reg = InterceptRegularizer(R.L2() if kind == "qp" else R.L1(), d, k, _Box(B))
    bundle = PlaneBundle(d + k, metric=reg.gram_metric, n_blocks=n_blocks)
    A = rng.standard_normal((n, d + k))
    A[:, d:] += 1.0  # the planes push the intercept mostly one way: the box is active
    c = rng.standard_normal(n)
    blocks = np.arange(n) % n_blocks
    for p in range(n_blocks):  # a zero-slope floor per model (as the solvers add)
        bundle.add_floor(-3.0, block=p)
    for i in range(n):
        bundle.add(A[i], c[i], block=int(blocks[i]))
    sol = select(reg).solve(bundle, reg, lam)
    w, b = cp.Variable(d), cp.Variable(k)
    x = cp.hstack([w, b])
    model = sum(cp.max(cp.hstack([A[blocks == p] @ x + c[blocks == p], np.array([-3.0])]))
                for p in range(n_blocks))
    omega = 0.5 * cp.sum_squares(w) if kind == "qp" else cp.norm1(w)
    prob = cp.Problem(cp.Minimize(lam * omega + model), [cp.abs(b) <= B])
    prob.solve(solver=cp.CLARABEL)
    assert sol.dual_value <= prob.value + 1e-7
    assert sol.dual_value >= prob.value - 1e-6
    assert sol.gap <= 1e-6
    assert np.all(np.abs(sol.w[d:]) <= B)


def test_predictions_and_batch_subgradients_use_the_intercept():
    X, y = binary()
    J = nsopt.RegularizedRisk(L.Hinge(X, y), fit_intercept=True)
    x = np.arange(1.0, J.dim + 1)
    coef, b = J.split(x)
    np.testing.assert_allclose(J.loss.decision_function(X[:5], x), X[:5] @ coef + b[0])
    rows = np.arange(10)
    ref = L.Hinge(np.hstack([X, np.ones((len(y), 1))]), y).batch_subgradient(x, rows)
    np.testing.assert_allclose(J.loss.batch_subgradient(x, rows), ref)
    Xm, ym = multiclass()
    Jm = nsopt.RegularizedRisk(L.MulticlassHinge(Xm, ym), fit_intercept=True)
    xm = np.linspace(-1, 1, Jm.dim)
    cm, bm = Jm.split(xm)
    np.testing.assert_allclose(Jm.loss.decision_function(Xm[:4], xm), Xm[:4] @ cm.reshape(4, 3) + bm)
    np.testing.assert_array_equal(Jm.loss.predict(Xm[:4], xm),
                                  np.argmax(Xm[:4] @ cm.reshape(4, 3) + bm, axis=1))
    refm = L.MulticlassHinge(np.hstack([Xm, np.ones((len(ym), 1))]), ym).batch_subgradient(xm, rows)
    np.testing.assert_allclose(Jm.loss.batch_subgradient(xm, rows), refm, atol=1e-12)


@pytest.mark.parametrize("make_loss", [
    lambda X, y, w: L.LeastSquares(X, y, sample_weight=w),
    lambda X, y, w: L.LeastAbsoluteDeviation(X, y, sample_weight=w),
    lambda X, y, w: L.Huber(X, y, delta=0.5, sample_weight=w),
    lambda X, y, w: L.Quantile(X, y, 0.8, sample_weight=w),
    lambda X, y, w: L.EpsilonInsensitive(X, y, 0.3, sample_weight=w),
], ids=["ls", "lad", "huber", "quantile", "eps"])
@pytest.mark.parametrize("reg", [R.L2(), R.L1()], ids=["l2", "l1"])
def test_regression_box_contains_the_fitted_intercept(make_loss, reg):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 3))
    y = X @ np.array([0.5, -1.0, 2.0]) - 30.0 + 0.3 * rng.standard_normal(40)
    w = rng.uniform(0.5, 2.0, 40)
    J = nsopt.RegularizedRisk(make_loss(X, y, w), reg, 0.1, fit_intercept=True)
    B = J.intercept_bound()
    assert 25.0 < B < math.inf
    res = nsopt.minimize(J, method="bmrm", rtol=1e-6, max_iter=2000)
    assert res.success
    b = J.split(res.x)[1][0]
    assert abs(b) <= B and b < -25.0
    res.certificate.check(J)
