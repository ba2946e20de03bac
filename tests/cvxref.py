"""Independent reference optima from cvxpy (Clarabel, falling back to SCS; never HiGHS) and
small test problems shared by the solver tests.

The problem -> cvxpy translation is nsopt's public one (:func:`nsopt.to_cvxpy`,
:func:`nsopt.cvx.cvxpy_expression`, tested in ``tests/test_cvx_bridge.py``); this module keeps
the test problems and the solve settings.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import nsopt
from nsopt import losses as L


def small_binary(m=80, d=6, seed=0, sparse=False, unit_rows=False):
    """A small noisy linearly-generated binary problem (labels in {-1, +1})."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    if unit_rows:
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.5 * rng.standard_normal(m) >= 0, 1.0, -1.0)
    return (sp.csr_matrix(X) if sparse else X), y


#: the smooth binary margin losses of the Newton solvers' tests
SMOOTH_MARGIN_LOSSES = {"logistic": L.Logistic, "squared-hinge": L.SquaredHinge}


def smooth_margin_problem(loss, reg, seed=0, lam=1e-2, m=60, d=6, sparse=False, weights=False,
                          intercept=False):
    """A small logistic / squared hinge risk (:data:`SMOOTH_MARGIN_LOSSES`) with ``reg``;
    ``sparse`` zeroes ~40% of X, ``weights`` draws example weights in [0.2, 3]."""
    X, y = small_binary(m, d, seed)
    rng = np.random.default_rng(seed + 7)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.6, X, 0.0))
    w = rng.uniform(0.2, 3.0, m) if weights else None
    return nsopt.RegularizedRisk(SMOOTH_MARGIN_LOSSES[loss](X, y, sample_weight=w), reg, lam,
                                 fit_intercept=intercept)


def clarabel_optimum(J):
    """J* of an nsopt problem through its cvxpy translation, Clarabel at 1e-10."""
    import cvxpy as cp

    prob, _ = nsopt.to_cvxpy(J)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


def assert_dual_point_certified(J, res, rtol):
    """``res`` is a success with a dual-point certificate: lower_bound <= J* <= fun (Clarabel),
    gap <= rtol |fun|, fun = J(x), and ``check`` recomputes the bound from the evidence alone
    (raising if it cannot verify it) between lower_bound and fun."""
    from nsopt.certificate import DualPoint

    f_star = clarabel_optimum(J)
    slack = 1e-7 * max(1.0, abs(f_star))
    assert res.success, res.message
    assert res.lower_bound - slack <= f_star <= res.fun + slack
    assert res.gap <= rtol * abs(res.fun) + 1e-15
    assert abs(res.fun - J.value(res.x)) <= 1e-12 * max(abs(res.fun), 1e-300)
    assert res.certificate.source == "dual-point"
    assert isinstance(res.certificate.evidence, DualPoint)
    checked = res.certificate.check(J)
    scale = 1e-9 * max(1.0, abs(res.fun))
    assert res.lower_bound - scale <= checked <= res.fun + scale


def small_multiclass(m=90, d=5, k=3, seed=0):
    """A small multiclass problem, labels 0..k-1 (every class present)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    W = rng.standard_normal((d, k))
    y = np.argmax(X @ W + 0.5 * rng.standard_normal((m, k)), axis=1)
    y[:k] = np.arange(k)
    return X, y


def cvxpy_multiclass_hinge(X, y, k, reg, lam):
    """Crammer-Singer: mean_i max_j (f_ij - f_iy + [j != y_i]) + lam Omega(vec W)."""
    import cvxpy as cp

    J = nsopt.RegularizedRisk(L.MulticlassHinge(X, y, n_classes=k), reg, lam)
    prob, _ = nsopt.to_cvxpy(J)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


def cvx_regularizer(reg, w):
    """``(Omega(w), domain constraints)`` as cvxpy expressions of ``w``."""
    from nsopt.cvx import cvxpy_expression

    return cvxpy_expression(reg, w)


#: the loss names of the solver tests: a class name in lower case ("squaredhinge") or a
#: registry name of nsopt.losses.LOSSES ("squared-hinge")
_LOSS_CLASSES = {cls.__name__.lower(): cls for cls in L.LOSSES.values()}


def _loss(name, X, y):
    cls = _LOSS_CLASSES.get(name) or L.get_loss(name)
    return cls(X, y)


def cvx_loss(name, X, y, w):
    """The loss ``name`` on ``(X, y)`` as a cvxpy expression of ``w`` (mean over examples)."""
    from nsopt.cvx import cvxpy_expression

    return cvxpy_expression(_loss(name, X, y), w)[0]


def cvxpy_optimum(X, y, loss, reg, lam):
    """min_w lam * Omega(w) + loss(w) by cvxpy + Clarabel (SCS if Clarabel fails)."""
    import cvxpy as cp

    prob, _ = nsopt.to_cvxpy(nsopt.RegularizedRisk(_loss(loss, X, y), reg, lam))
    try:
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    except cp.SolverError:
        prob.solve(solver=cp.SCS, eps=1e-9, max_iters=200000)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)
