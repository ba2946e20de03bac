"""Independent reference optima from cvxpy (Clarabel, falling back to SCS; never HiGHS) and
small test problems shared by the solver tests."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from nsopt import regularizers as R


def small_binary(m=80, d=6, seed=0, sparse=False, unit_rows=False):
    """A small noisy linearly-generated binary problem (labels in {-1, +1})."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    if unit_rows:
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.5 * rng.standard_normal(m) >= 0, 1.0, -1.0)
    return (sp.csr_matrix(X) if sparse else X), y


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

    X = X.toarray() if sp.issparse(X) else X
    m, d = X.shape
    W = cp.Variable((d, k))
    onehot = np.eye(k)[y]
    scores = X @ W
    loss = cp.sum(cp.max(scores + 1 - onehot, axis=1) - cp.sum(cp.multiply(onehot, scores), axis=1)) / m
    omega, cons = cvx_regularizer(reg, cp.vec(W, order="C"))
    prob = cp.Problem(cp.Minimize(lam * omega + loss), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)


def cvx_regularizer(reg, w):
    import cvxpy as cp

    if isinstance(reg, R.L2):
        return 0.5 * cp.sum_squares(w), []
    if isinstance(reg, R.L1):
        return cp.norm1(w), []
    if isinstance(reg, R.Lp):
        return 0.5 * cp.square(cp.pnorm(w, reg.p)), []
    if isinstance(reg, R.QuadraticForm):
        return 0.5 * cp.quad_form(w, cp.psd_wrap(reg.Q)), []
    if isinstance(reg, R.ElasticNet):
        r = reg.l1_ratio
        return r * cp.norm1(w) + 0.5 * (1 - r) * cp.sum_squares(w), []
    if isinstance(reg, R.KL):
        return cp.sum(cp.kl_div(w, reg.prior)), [cp.sum(w) == 1]
    if isinstance(reg, R.NegEntropy):
        cons = [cp.sum(w) == 1] if reg.normalized else []
        return -cp.sum(cp.entr(w)), cons
    raise NotImplementedError(type(reg).__name__)


def cvx_loss(name, X, y, w):
    import cvxpy as cp

    X = X.toarray() if sp.issparse(X) else X
    m = X.shape[0]
    z = cp.multiply(y, X @ w)
    if name == "hinge":
        return cp.sum(cp.pos(1 - z)) / m
    if name == "logistic":
        return cp.sum(cp.logistic(-z)) / m
    if name == "squaredhinge":
        return 0.5 * cp.sum_squares(cp.pos(1 - z)) / m
    raise NotImplementedError(name)


def cvxpy_optimum(X, y, loss, reg, lam):
    """min_w lam * Omega(w) + loss(w) by cvxpy + Clarabel (SCS if Clarabel fails)."""
    import cvxpy as cp

    w = cp.Variable(X.shape[1])
    omega, cons = cvx_regularizer(reg, w)
    prob = cp.Problem(cp.Minimize(lam * omega + cvx_loss(loss, X, y, w)), cons)
    try:
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    except cp.SolverError:
        prob.solve(solver=cp.SCS, eps=1e-9, max_iters=200000)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status
    return float(prob.value)
