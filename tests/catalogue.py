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
def l1_fit(A, b, lower_bound=0.0, minorants=0):
    r""":math:`f(x) = \|Ax - b\|_1` as a FunctionOracle, with its cvxpy expression.

    Extra minorants (``minorants`` = k, 0: none, the default): :math:`\langle s', Ay -
    b\rangle` for the sign vector :math:`s = \operatorname{sign}(Aw - b)` with one sign
    flipped, at each of the k residuals nearest zero (:math:`|s'_i| \le 1` makes it a minorant
    everywhere; each costs O(d) from the subgradient)."""
    def vs(x):
        r = A @ x - b
        return float(np.abs(r).sum()), A.T @ np.sign(r)

    def planes(x):
        r = A @ x - b
        s = np.sign(r)
        g, sb = A.T @ s, float(s @ b)
        k = min(minorants, r.size)
        near = np.argpartition(np.abs(r), k - 1)[:k]
        near = near[np.lexsort((near, np.abs(r[near])))]
        flip = np.where(s[near] > 0, -1.0, 1.0) - s[near]      # s'_j - s_j
        return g + flip[:, None] * A[near], -sb - flip * b[near]

    import cvxpy as cp
    return (nsopt.FunctionOracle(value_and_subgradient=vs, dim=A.shape[1], lower_bound=lower_bound,
                                 minorants=planes if minorants else None),
            lambda x: cp.norm1(A @ x - b))


#: extra minorants the catalogue's max-type oracles offer per call (``minorants=`` of the
#: builders): the near-active pieces, or eigenvectors, next after the one of the subgradient
MINORANTS = 16


def _top(values, k, first):
    """Indices of the ``k`` largest ``values`` other than ``first``, largest first (ties by
    index: deterministic)."""
    k = min(k, values.size - 1)
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    part = np.argpartition(-values, k)[: k + 1]
    part = part[part != first][:k]
    return part[np.lexsort((part, -values[part]))]


def max_affine_ridge(A, b, mu, lower_bound=-np.inf, minorants=MINORANTS):
    r""":math:`f(x) = \max_i (Ax + b)_i + \tfrac\mu2\|x\|^2` as a FunctionOracle, with its cvxpy
    expression.

    Extra minorants at :math:`w` (``minorants`` = k of them, 0: none): the k near-active pieces
    :math:`i` (largest :math:`(Aw + b)_i` after the subgradient's) with the quadratic's tangent,
    :math:`f(y) \ge \langle A_i + \mu w, y\rangle + b_i - \tfrac\mu2\|w\|^2` for every y
    (:math:`\tfrac\mu2\|y\|^2 \ge \mu\langle w, y\rangle - \tfrac\mu2\|w\|^2`)."""
    def vs(x):
        v = A @ x + b
        i = int(np.argmax(v))
        return float(v[i] + 0.5 * mu * (x @ x)), A[i] + mu * x

    def planes(x):
        v = A @ x + b
        top = _top(v, minorants, int(np.argmax(v)))
        return A[top] + mu * x, b[top] - 0.5 * mu * float(x @ x)

    import cvxpy as cp
    return (nsopt.FunctionOracle(value_and_subgradient=vs, dim=A.shape[1], lower_bound=lower_bound,
                                 minorants=planes if minorants else None),
            lambda x: cp.max(A @ x + b) + 0.5 * mu * cp.sum_squares(x))



def chebyshev_fit(t, y, degree, lower_bound=0.0, minorants=MINORANTS):
    r""":math:`f(c) = \max_j |\sum_{k=0}^{n} c_k T_k(t_j) - y_j|`, the minimax (Chebyshev)
    polynomial fit of degree ``n = degree`` to the points :math:`(t_j, y_j)` in the Chebyshev
    basis :math:`T_k`, as a FunctionOracle, with its cvxpy expression.

    With :math:`V` the Chebyshev-Vandermonde matrix (``chebvander(t, degree)``) and
    :math:`r = Vc - y`, a subgradient is :math:`\operatorname{sign}(r_{j^*}) V_{j^*}` at any
    :math:`j^* \in \arg\max_j |r_j|`. Extra minorants (``minorants`` = k, 0: none): the
    pieces :math:`\operatorname{sign}(r_j)(V_j c - y_j)` of the k next largest :math:`|r_j|`."""
    V = np.polynomial.chebyshev.chebvander(np.asarray(t, dtype=float), degree)
    y = np.asarray(y, dtype=float)

    def vs(c):
        r = V @ c - y
        j = int(np.argmax(np.abs(r)))
        return float(abs(r[j])), (1.0 if r[j] >= 0 else -1.0) * V[j]

    def planes(c):
        r = V @ c - y
        a = np.abs(r)
        top = _top(a, minorants, int(np.argmax(a)))
        sign = np.where(r[top] >= 0, 1.0, -1.0)
        return sign[:, None] * V[top], -sign * y[top]

    import cvxpy as cp
    return (nsopt.FunctionOracle(value_and_subgradient=vs, dim=V.shape[1], lower_bound=lower_bound,
                                 minorants=planes if minorants else None),
            lambda x: cp.norm_inf(V @ x - y))


def max_eigenvalue(A0, As, lower_bound=-np.inf, minorants=MINORANTS):
    r""":math:`f(x) = \lambda_{\max}(A_0 + \sum_i x_i A_i)` for symmetric :math:`n \times n`
    matrices :math:`A_0` and ``As[i]`` :math:`= A_i`, as a FunctionOracle, with its cvxpy
    expression.

    A subgradient is :math:`g_i = v^\top A_i v` for a unit eigenvector :math:`v` of the largest
    eigenvalue (``numpy.linalg.eigh``); the subdifferential is the hull of these over the top
    eigenspace.

    Extra minorants (``minorants`` = r, 0: none): for the unit eigenvectors :math:`v` of the r
    next largest eigenvalues, :math:`f(y) \ge v^\top A(y) v = v^\top A_0 v + \sum_i y_i
    v^\top A_i v` (true for any unit :math:`v`); they reuse the last call's eigendecomposition
    (kept with its point)."""
    A0 = np.asarray(A0, dtype=float)
    As = np.asarray(As, dtype=float)
    k = As.shape[0]
    last = {}

    def eig(x):
        if last.get("x") is None or not np.array_equal(last["x"], x):
            last["x"] = np.array(x, copy=True)
            last["eig"] = np.linalg.eigh(A0 + np.tensordot(x, As, axes=1))
        return last["eig"]

    flat = As.reshape(k, -1)                # v^T A_i v = <A_i, v v^T>: one product for all i

    def vs(x):
        eigenvalues, vectors = eig(x)
        v = vectors[:, -1]
        return float(eigenvalues[-1]), flat @ np.outer(v, v).ravel()

    def planes(x):
        vectors = eig(x)[1]
        n = vectors.shape[0]
        Vr = vectors[:, max(n - 1 - minorants, 0): n - 1][:, ::-1]   # the next r, largest first
        outer = (Vr[:, None, :] * Vr[None, :, :]).reshape(n * n, -1)
        return (flat @ outer).T, A0.ravel() @ outer

    import cvxpy as cp
    # a sum of scalar multiples of symmetric constants: cvxpy knows the argument is symmetric
    return (nsopt.FunctionOracle(value_and_subgradient=vs, dim=k, lower_bound=lower_bound,
                                 minorants=planes if minorants else None),
            lambda x: cp.lambda_max(A0 + sum(x[i] * As[i] for i in range(k))))


def hinge_oracle(X, y, lam, lower_bound=0.0):
    r""":math:`f(w) = \tfrac\lambda2\|w\|^2 + \frac1m\sum_i \max(0, 1 - y_i\langle x_i,
    w\rangle)` (``lam`` :math:`= \lambda`), the L2-regularized hinge risk as a *bare*
    FunctionOracle (not a :class:`~nsopt.RegularizedRisk`: solvers see only values and
    subgradients), with its cvxpy expression. ``X`` dense or scipy sparse, ``y`` in {-1, +1}.

    A subgradient is :math:`\lambda w - \frac1m X^\top (y \odot [y \odot Xw < 1])`."""
    y = np.asarray(y, dtype=float)
    m = X.shape[0]

    def vs(w):
        margin = y * (X @ w)
        active = margin < 1.0
        value = 0.5 * lam * float(w @ w) + float(np.maximum(0.0, 1.0 - margin).sum()) / m
        return value, lam * w - X.T @ np.where(active, y, 0.0) / m

    import cvxpy as cp
    return (nsopt.FunctionOracle(value_and_subgradient=vs, dim=X.shape[1], lower_bound=lower_bound),
            lambda x: 0.5 * lam * cp.sum_squares(x) + cp.sum(cp.pos(1 - cp.multiply(y, X @ x))) / m)


# --- random instances of the bare-oracle functions (data only: the builders stay pure) -----
def l1_fit_data(m=60, d=8, noise=0.1, seed=0):
    """``(A, b, x_true)``: Gaussian ``A`` (m x d), ``b = A x_true + noise * N(0, 1)``."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, d))
    x_true = rng.standard_normal(d)
    return A, A @ x_true + noise * rng.standard_normal(m), x_true


def max_affine_data(n_pieces=40, d=6, seed=0):
    """``(A, b)``: ``n_pieces`` Gaussian affine functions of ``d`` variables (``max_i (Ax + b)_i``
    is bounded below when 0 lies inside the hull of the rows, almost sure for n_pieces >> d)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n_pieces, d)), rng.standard_normal(n_pieces)


def chebyshev_data(n_points=200, target="abs"):
    """``(t, y)``: ``n_points`` Chebyshev points of [-1, 1] and a nonsmooth target, ``|t|``
    (``"abs"``) or the step ``sign(t - 0.1)`` (``"step"``)."""
    t = np.cos(np.pi * (np.arange(n_points) + 0.5) / n_points)
    y = {"abs": np.abs(t), "step": np.where(t >= 0.1, 1.0, -1.0)}[target]
    return t, y


def max_eigenvalue_data(n=8, k=4, seed=0):
    """``(A0, As)``: symmetric Gaussian matrices, ``A0`` n x n and ``As`` k x n x n."""
    rng = np.random.default_rng(seed)

    def sym(M):
        return 0.5 * (M + M.swapaxes(-1, -2))

    return sym(rng.standard_normal((n, n))), sym(rng.standard_normal((k, n, n)))


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
