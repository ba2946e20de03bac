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
