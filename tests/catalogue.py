"""The problem catalogue every solver is run on (tests/test_solvers_common.py and the
benchmarks): small problems with a known optimum (cvxpy + Clarabel), RegularizedRisk and bare
oracles. A module, not conftest.py, so that test files can import it by name."""
from __future__ import annotations

import numpy as np

import nsopt
from nsopt import regularizers as R
from nsopt.losses import Hinge, Logistic, MulticlassHinge, SquaredHinge

from cvxref import cvxpy_multiclass_hinge, cvxpy_optimum, small_binary, small_multiclass


# --- bare-oracle functions: (FunctionOracle, cvxpy expression of x) ------------------------
def l1_fit(A, b, lower_bound=0.0):
    r""":math:`f(x) = \|Ax - b\|_1` as a FunctionOracle, with its cvxpy expression."""
    def vs(x):
        r = A @ x - b
        return float(np.abs(r).sum()), A.T @ np.sign(r)

    import cvxpy as cp
    return (nsopt.FunctionOracle(value_and_subgradient=vs, dim=A.shape[1], lower_bound=lower_bound),
            lambda x: cp.norm1(A @ x - b))


def max_affine_ridge(A, b, mu, lower_bound=-np.inf):
    r""":math:`f(x) = \max_i (Ax + b)_i + \tfrac\mu2\|x\|^2` as a FunctionOracle, with its cvxpy
    expression."""
    def vs(x):
        v = A @ x + b
        i = int(np.argmax(v))
        return float(v[i] + 0.5 * mu * (x @ x)), A[i] + mu * x

    import cvxpy as cp
    return (nsopt.FunctionOracle(value_and_subgradient=vs, dim=A.shape[1], lower_bound=lower_bound),
            lambda x: cp.max(A @ x + b) + 0.5 * mu * cp.sum_squares(x))


class Case:
    def __init__(self, name, loss_cls, reg, lam, sparse=False, m=120, d=8, seed=0):
        self.name, self.loss_cls, self.reg, self.lam = name, loss_cls, reg, lam
        self.sparse, self.m, self.d, self.seed = sparse, m, d, seed

    def __str__(self):
        return self.name

    def data(self):
        if self.loss_cls is MulticlassHinge:
            return small_multiclass(self.m, self.d, 3, self.seed)
        return small_binary(self.m, self.d, self.seed, sparse=self.sparse)

    def problem(self):
        X, y = self.data()
        return nsopt.RegularizedRisk(self.loss_cls(X, y), self.reg, self.lam)

    def f_star(self, _cache={}):
        key = self.name
        if key not in _cache:
            X, y = self.data()
            if self.loss_cls is MulticlassHinge:
                _cache[key] = cvxpy_multiclass_hinge(X, y, 3, self.reg, self.lam)
            else:
                _cache[key] = cvxpy_optimum(X, y, self.loss_cls.__name__.lower(), self.reg, self.lam)
        return _cache[key]


CATALOGUE = [
    Case("hinge-l2", Hinge, R.L2(), 1e-2),
    Case("hinge-l2-sparse", Hinge, R.L2(), 1e-3, sparse=True, seed=1),
    Case("logistic-l2", Logistic, R.L2(), 1e-2, seed=2),
    Case("squared-hinge-l2", SquaredHinge, R.L2(), 1e-2, seed=3),
    Case("hinge-l1", Hinge, R.L1(), 1e-2, seed=4),
    Case("logistic-l1", Logistic, R.L1(), 1e-2, seed=5),
    Case("multiclass-hinge-l2", MulticlassHinge, R.L2(), 1e-2, m=90, d=5, seed=6),
    Case("multiclass-hinge-l1", MulticlassHinge, R.L1(), 1e-2, m=90, d=5, seed=7),
]


class OracleCase:
    r"""A bare :class:`~nsopt.FunctionOracle`: :math:`f(x) = \|Ax - b\|_1 + 1` with ``b = A x_0``
    (so :math:`f^* = 1`, attained at :math:`x_0`) and the stated ``lower_bound = 1``: the floor
    the any-oracle solvers certify with (OraclePlanes evidence)."""

    def __init__(self, name, m=40, d=6, seed=0):
        self.name, self.m, self.d, self.seed = name, m, d, seed

    def __str__(self):
        return self.name

    def problem(self):
        rng = np.random.default_rng(self.seed)
        A = rng.standard_normal((self.m, self.d))
        b = A @ rng.standard_normal(self.d)
        return nsopt.FunctionOracle(
            lambda x: float(np.abs(A @ x - b).sum()) + 1.0,
            lambda x: A.T @ np.sign(A @ x - b), dim=self.d, lower_bound=1.0)

    def f_star(self):
        return 1.0


CATALOGUE.append(OracleCase("l1-regression-oracle", seed=8))
