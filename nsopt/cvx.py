r"""cvxpy, both ways: an nsopt problem as a ``cvxpy.Problem``, a cvxpy expression as an Oracle.

* :func:`to_cvxpy` writes :math:`J(w) = \lambda\Omega(w) + R(w)` (or a bare loss, a sum,
  a nonnegative multiple, an affine pre-composition or a pointwise max of such pieces) as a
  ``cvxpy.Problem`` in one vector variable laid out as nsopt's ``w`` (a multiclass
  :math:`W`, d x k, flattened in C order), so that a result can be cross-checked by an
  independent conic solver in two lines (NDCG and the chain hinge through the LP dual of
  their inner maximisation, with auxiliary variables). :data:`SUPPORTED` and
  :data:`UNSUPPORTED` say, per loss and regularizer class, what the translation is or why
  there is none; :func:`cvxpy_support` lists them as rows (the table of ``docs/interop.md``).
* :func:`from_cvxpy` turns a scalar convex cvxpy expression of one variable into an
  :class:`~nsopt.Oracle` (value by ``expr.value``, subgradient by cvxpy's own ``expr.grad``),
  so a CVX model can be handed to a bundle method.

cvxpy is imported on first use only: ``import nsopt`` and ``import nsopt.cvx`` never import it.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from . import regularizers as R
from .losses import multivariate as MV
from .losses import scalar as S
from .losses import structured as ST
from .losses import vector as V
from .losses.intercept import InterceptHinge
from .oracle import Composed, FunctionOracle, Max, Oracle, Scaled, Sum
from .problem import RegularizedRisk

__all__ = ["to_cvxpy", "from_cvxpy", "cvxpy_expression", "CvxpyProblem", "CvxpyOracle", "SUPPORTED",
           "UNSUPPORTED", "AUXILIARY", "cvxpy_support"]


def _cp():
    try:
        import cvxpy
    except ImportError as exc:  # pragma: no cover - cvxpy is in the test extra
        raise ImportError("the cvxpy bridge needs cvxpy: pip install 'cvxpy>=1.4' clarabel") \
            from exc
    return cvxpy


# ----------------------------------------------------------------------------------------
# nsopt -> cvxpy
# ----------------------------------------------------------------------------------------
class CvxpyProblem(NamedTuple):
    """What :func:`to_cvxpy` returns: unpacks as ``problem, variable = to_cvxpy(J)``.

    Attributes
    ----------
    problem : cvxpy.Problem
        ``Minimize(J(variable))`` subject to the domain constraints of the regularizer
        (``sum(w) == 1`` for the normalized entropy and KL; ``w >= 0`` is the domain of
        ``cp.entr``).
    variable : cvxpy.Variable
        Shape ``(dim,)``, nsopt's layout of ``w``.
    """

    problem: Any
    variable: Any

    def objective_at(self, w) -> float:
        """:math:`J(w)` as cvxpy computes it (sets ``variable.value = w``). With auxiliary
        variables (:data:`AUXILIARY` losses) it minimises over them with ``w`` fixed, by
        Clarabel: exact to the solver's tolerance."""
        cp = _cp()
        w = np.asarray(w, dtype=np.float64).reshape(self.variable.shape)
        self.variable.value = w
        if all(v is self.variable for v in self.problem.variables()):
            return float(self.problem.objective.value)
        fixed = cp.Problem(self.problem.objective, [*self.problem.constraints, self.variable == w])
        fixed.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        self.variable.value = w
        return float(fixed.value)


def _data(loss):
    X = loss.data.X
    return X.tocsr() if sp.issparse(X) else np.asarray(X)


def _weighted(c, terms):
    """:math:`\\sum_i c_i\\, l_i`: the mean (or normalised sample weights) of nsopt's losses."""
    cp = _cp()
    return cp.sum(cp.multiply(c, terms))


def _scores(loss, w):
    return _data(loss) @ w


def _margin(loss, w):
    cp = _cp()
    return cp.multiply(loss.y, _scores(loss, w))


# scalar losses: l(z, y) with z = X w, weighted by the normalised c
def _hinge(loss, w):
    return _weighted(loss.c, _cp().pos(1 - _margin(loss, w)))


def _squared_hinge(loss, w):
    cp = _cp()
    return _weighted(loss.c, 0.5 * cp.square(cp.pos(1 - _margin(loss, w))))


def _logistic(loss, w):
    return _weighted(loss.c, _cp().logistic(-_margin(loss, w)))


def _exponential(loss, w):
    return _weighted(loss.c, _cp().exp(-_margin(loss, w)))


def _huber(loss, w):
    # cp.huber(r, M) = r^2 (|r| <= M), 2M|r| - M^2 beyond: twice nsopt's Huber
    return _weighted(loss.c, 0.5 * _cp().huber(_scores(loss, w) - loss.y, loss.delta))


def _least_squares(loss, w):
    return _weighted(loss.c, 0.5 * _cp().square(_scores(loss, w) - loss.y))


def _lad(loss, w):
    return _weighted(loss.c, _cp().abs(_scores(loss, w) - loss.y))


def _quantile(loss, w):
    r = _scores(loss, w) - loss.y
    return _weighted(loss.c, _cp().maximum((1.0 - loss.tau) * r, -loss.tau * r))


def _epsilon_insensitive(loss, w):
    cp = _cp()
    return _weighted(loss.c, cp.pos(cp.abs(_scores(loss, w) - loss.y) - loss.epsilon))


def _poisson(loss, w):
    cp = _cp()
    z = _scores(loss, w)
    return _weighted(loss.c, cp.exp(z) - cp.multiply(loss.y, z))


def _novelty(loss, w):
    return _weighted(loss.c, _cp().pos(loss.rho - _scores(loss, w)))


# vector losses: F = X W, W = reshape(w, (d, k)) in C order
def _class_scores(loss, w):
    cp = _cp()
    d, k = loss.shape
    return _data(loss) @ cp.reshape(w, (d, k), order="C")


def _true_class_score(F, y, k):
    cp = _cp()
    m = y.size
    return cp.reshape(cp.sum(cp.multiply(np.eye(k)[y], F), axis=1), (m, 1), order="C")


def _margin_hinge(loss, w):
    cp = _cp()
    k = loss.n_outputs
    F = _class_scores(loss, w)
    gamma, delta = loss.gamma[loss.y], loss.delta[loss.y]
    pieces = cp.multiply(gamma, F - _true_class_score(F, loss.y, k)) + delta
    return _weighted(loss.c, cp.max(pieces, axis=1))


def _softmax(loss, w):
    cp = _cp()
    F = _class_scores(loss, w)
    fy = _true_class_score(F, loss.y, loss.n_outputs)
    return _weighted(loss.c, cp.log_sum_exp(F, axis=1) - cp.reshape(fy, (loss.y.size,), order="C"))


def _multilabel_hinge(loss, w):
    # rows grouped by their label set Z: max(0, 1 + max_{z' not in Z} f_z' - min_{z in Z} f_z)
    cp = _cp()
    d, k = loss.shape
    W = cp.reshape(w, (d, k), order="C")
    X = _data(loss)
    patterns, inverse = np.unique(loss.Y, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    terms = []
    for p, pattern in enumerate(patterns):
        relevant = np.flatnonzero(pattern)
        if relevant.size in (0, k):
            continue  # no (relevant, irrelevant) pair: the row contributes 0
        rows = np.flatnonzero(inverse == p)
        F = X[rows] @ W
        eye = np.eye(k)
        top_irrelevant = cp.max(F @ eye[:, pattern == 0], axis=1)
        low_relevant = cp.min(F @ eye[:, relevant], axis=1)
        terms.append(_weighted(loss.c[rows], cp.pos(1 + top_irrelevant - low_relevant)))
    return cp.sum(cp.hstack(terms)) if terms else cp.Constant(0.0)


# multivariate losses: f = X w
def _pair_hinge(f, lower, upper, cost, m, scale):
    """:math:`s\\sum_p C_p \\max(0, 1 + f_{i_p} - f_{j_p})` via one sparse difference matrix."""
    cp = _cp()
    n = lower.size
    D = sp.csr_matrix((np.r_[np.ones(n), -np.ones(n)], (np.r_[np.arange(n), np.arange(n)],
                                                          np.r_[lower, upper])), shape=(n, m))
    return scale * cp.sum(cp.multiply(cost, cp.pos(1 + D @ f)))


def _roc_area(loss, w):
    neg, pos = np.flatnonzero(~loss.positive), np.flatnonzero(loss.positive)
    lower, upper = np.repeat(neg, pos.size), np.tile(pos, neg.size)
    return _pair_hinge(_scores(loss, w), lower, upper, np.ones(lower.size), loss.m, loss._scale)


def _ordinal(loss, w):
    lower, upper = np.nonzero(loss.y[:, None] < loss.y[None, :])
    cost = (np.ones(lower.size) if loss.cost == "constant" else loss.y[upper] - loss.y[lower])
    return _pair_hinge(_scores(loss, w), lower, upper, cost, loss.m, 1.0 / loss.n_pairs)


def _preference_pairs(loss, w):
    return _pair_hinge(_scores(loss, w), loss.lower, loss.upper, loss.cost, loss.m,
                       1.0 / loss.n_pairs)


def _sum_largest(x, k):
    cp = _cp()
    return cp.sum_largest(x, k) if k > 0 else cp.Constant(0.0)


def _table_terms(loss, w):
    r"""Over the tables :math:`(a, b)` (``a`` positives, ``b`` negatives labelled correctly),
    the best labelling's margin term: :math:`2\,\mathrm{sum\_largest}(-f_+, m_+ - a) +
    2\,\mathrm{sum\_largest}(f_-, m_- - b)` (mislabel the lowest positives, the highest
    negatives), as two stacked vectors of lengths :math:`m_+ + 1` and :math:`m_- + 1`."""
    cp = _cp()
    f = _scores(loss, w)
    f_pos, f_neg = f[np.flatnonzero(loss.positive)], f[np.flatnonzero(~loss.positive)]
    p, n = loss.n_pos, loss.n_neg
    pos_terms = cp.hstack([2 * _sum_largest(-f_pos, p - a) for a in range(p + 1)])
    neg_terms = (cp.hstack([2 * _sum_largest(f_neg, n - b) for b in range(n + 1)]) if n
                 else cp.Constant(np.zeros(1)))
    return pos_terms, neg_terms


def _fbeta(loss, w):
    cp = _cp()
    p, n = loss.n_pos, loss.n_neg
    pos_terms, neg_terms = _table_terms(loss, w)
    a, b = np.arange(p + 1)[:, None], np.arange(n + 1)[None, :]
    b2 = loss.beta ** 2
    delta = 1.0 - (1.0 + b2) * a / (a + n - b + b2 * p)
    table = (cp.reshape(pos_terms, (p + 1, 1), order="C")
             + cp.reshape(neg_terms, (1, n + 1), order="C") + delta)
    return cp.max(table)


def _prbep(loss, w):
    cp = _cp()
    p, n = loss.n_pos, loss.n_neg
    pos_terms, neg_terms = _table_terms(loss, w)
    # as many predicted positives as true ones: a + (n - b) = p
    a = np.arange(max(0, p - n), p + 1)
    b = a + n - p
    return cp.max(pos_terms[a] + neg_terms[b] + (1.0 - a / p))


def _ndcg(loss, w):
    r"""Per query, the dual of the assignment LP :math:`\max_{P} \langle P, C(f)\rangle` over
    the doubly stochastic matrices (whose vertices are the rankings):
    :math:`\min \{\textstyle\sum u + \sum v : u_i + v_j \ge c_i f_j - a_i b_j\}`."""
    cp = _cp()
    f = _scores(loss, w)
    terms, constraints = [], []
    for rows, c, c_bar, a, b in loss._queries:
        n = rows.size
        u, v = cp.Variable(n), cp.Variable(n)
        fq = f[rows]
        constraints.append(cp.reshape(u, (n, 1), order="C") + cp.reshape(v, (1, n), order="C")
                           >= cp.outer(c, fq) - np.outer(a, b))
        terms.append(cp.sum(u) + cp.sum(v) - c_bar @ fq + float(a @ b))
    return cp.sum(cp.hstack(terms)) / loss.n_queries, constraints


def _chain_hinge(loss, w):
    r"""Per sequence, Viterbi as an LP: the loss-augmented best path score is the least
    :math:`\max_s V_T(s)` with :math:`V_1 \ge U_1`,
    :math:`V_t(s) \ge V_{t-1}(r) + A_{rs} + U_t(s)`, where
    :math:`U_t(s) = \langle E_s, x_t\rangle + [s \ne y_t]/T`; minus the true path's score."""
    cp = _cp()
    S, F = loss.n_states, loss.n_features
    E = cp.reshape(w[:S * F], (S, F), order="C")
    X = loss.X_all.tocsr() if sp.issparse(loss.X_all) else np.asarray(loss.X_all)
    scores = X @ E.T                                     # (positions, S)
    y = loss.y_all
    A = cp.reshape(w[S * F:], (S, S), order="C")
    true_emission = cp.sum(cp.multiply(np.eye(S)[y], scores), axis=1)
    terms, constraints = [], []
    for i, (start, stop) in enumerate(zip(loss.offsets[:-1], loss.offsets[1:])):
        T = int(stop - start)
        hamming = (np.arange(S)[None, :] != y[start:stop, None]) / T
        U = scores[start:stop] + hamming
        V = cp.Variable((T, S))
        constraints.append(V[0] >= U[0])
        true = cp.sum(true_emission[start:stop])
        for t in range(1, T):
            constraints.append(cp.reshape(V[t - 1], (S, 1), order="C") + A
                               + cp.reshape(U[t], (1, S), order="C")
                               <= cp.reshape(V[t], (1, S), order="C"))
            true = true + w[S * F + y[start + t - 1] * S + y[start + t]]
        terms.append(loss.c[i] * (cp.max(V[T - 1]) - true))
    return cp.sum(cp.hstack(terms)), constraints


_LOSSES = {
    S.Hinge: (_hinge, "mean of pos(1 - y * (X @ w))"),
    S.SquaredHinge: (_squared_hinge, "mean of 0.5 * square(pos(1 - y * (X @ w)))"),
    S.Logistic: (_logistic, "mean of logistic(-y * (X @ w))"),
    S.Exponential: (_exponential, "mean of exp(-y * (X @ w))"),
    S.Huber: (_huber, "mean of 0.5 * huber(X @ w - y, delta)"),
    S.LeastSquares: (_least_squares, "mean of 0.5 * square(X @ w - y)"),
    S.LeastAbsoluteDeviation: (_lad, "mean of abs(X @ w - y)"),
    S.Quantile: (_quantile, "mean of maximum((1 - tau) * r, -tau * r), r = X @ w - y"),
    S.EpsilonInsensitive: (_epsilon_insensitive, "mean of pos(abs(X @ w - y) - epsilon)"),
    S.Poisson: (_poisson, "mean of exp(X @ w) - y * (X @ w)"),
    S.Novelty: (_novelty, "mean of pos(rho - X @ w)"),
    V.MulticlassHinge: (_margin_hinge, "mean of max(F - F_y + 1[j != y], axis=1), F = X @ W"),
    V.ScaledMulticlassHinge: (_margin_hinge,
                              "mean of max(Gamma_y * (F - F_y) + cost_y, axis=1), F = X @ W"),
    V.Softmax: (_softmax, "mean of log_sum_exp(F, axis=1) - F_y, F = X @ W"),
    V.MultilabelHinge: (_multilabel_hinge,
                        "per label set: pos(1 + max(F[:, irrelevant]) - min(F[:, relevant]))"),
    MV.ROCArea: (_roc_area, "mean over (negative, positive) pairs of pos(1 + f_i - f_j)"),
    MV.OrdinalRegression: (_ordinal, "pairs y_i < y_j: sum C_ij pos(1 + f_i - f_j) / M"),
    MV.PreferencePairs: (_preference_pairs, "sum over pairs of C_ij pos(1 + f_i - f_j) / |P|"),
    MV.FBeta: (_fbeta, "max over the (m+ + 1)(m- + 1) contingency tables of Delta + "
                       "2 sum_largest(-f+, .) + 2 sum_largest(f-, .)"),
    MV.PRBEP: (_prbep, "max over the tables with m+ predicted positives, as FBeta"),
    MV.NDCG: (_ndcg, "per query, the dual of the assignment LP over rankings: "
                     "min sum(u) + sum(v) s.t. u_i + v_j >= c_i f_j - a_i b_j (auxiliary u, v)"),
    ST.ChainHinge: (_chain_hinge, "per sequence, Viterbi as an LP: max(V_T) - true path score, "
                                  "V_t >= V_{t-1} + A + U_t (auxiliary V)"),
}

#: losses whose cvxpy form has auxiliary variables (an LP dual of their inner maximisation)
AUXILIARY = frozenset({MV.NDCG, ST.ChainHinge})

_UNSUPPORTED_LOSSES = {
    ST.StructuredHinge: ("a max over a user-defined output space known only through its "
                         "loss-augmented argmax oracle; cvxpy needs the function in closed form"),
    InterceptHinge: ("the bias is minimised inside the loss; write the hinge with a free bias "
                     "variable in cvxpy instead"),
    FunctionOracle: ("user callables are a black box: cvxpy needs the function built from its "
                     "atoms (use nsopt.from_cvxpy for the other direction)"),
}


def _l2(reg, w):
    return 0.5 * _cp().sum_squares(w), []


def _lp(reg, w):
    cp = _cp()
    return 0.5 * cp.square(cp.pnorm(w, reg.p)), []


def _quadratic_form(reg, w):
    cp = _cp()
    return 0.5 * cp.quad_form(w, cp.psd_wrap(reg.Q)), []


def _l1(reg, w):
    return _cp().norm1(w), []


def _elastic_net(reg, w):
    cp = _cp()
    r = reg.l1_ratio
    return r * cp.norm1(w) + 0.5 * (1 - r) * cp.sum_squares(w), []


def _neg_entropy(reg, w):
    cp = _cp()
    return -cp.sum(cp.entr(w)), ([cp.sum(w) == 1] if reg.normalized else [])


def _kl(reg, w):
    cp = _cp()
    # sum w log(w / prior) = -sum entr(w) - <w, log prior>, exact at every w of the orthant
    return -cp.sum(cp.entr(w)) - reg._log_prior @ w, [cp.sum(w) == 1]


_REGULARIZERS = {
    R.L2: (_l2, "0.5 * sum_squares(w)"),
    R.Lp: (_lp, "0.5 * square(pnorm(w, p))"),
    R.QuadraticForm: (_quadratic_form, "0.5 * quad_form(w, psd_wrap(Q))"),
    R.L1: (_l1, "norm1(w)"),
    R.ElasticNet: (_elastic_net, "r * norm1(w) + 0.5 * (1 - r) * sum_squares(w)"),
    R.NegEntropy: (_neg_entropy, "-sum(entr(w)) (w >= 0 by entr's domain); "
                                 "normalized: and sum(w) == 1"),
    R.KL: (_kl, "-sum(entr(w)) - log(prior) @ w, with sum(w) == 1"),
}

#: class -> the cvxpy form of its translation (losses weight by the normalised sample weights)
SUPPORTED: dict[type, str] = {cls: form for cls, (_, form) in {**_LOSSES, **_REGULARIZERS}.items()}

#: class -> why :func:`to_cvxpy` cannot translate it (it raises ``NotImplementedError``)
UNSUPPORTED: dict[type, str] = dict(_UNSUPPORTED_LOSSES)


def cvxpy_support() -> list[tuple[str, str, bool, str]]:
    """Rows ``(class name, kind, supported, form or reason)`` of every loss in
    ``nsopt.losses.LOSSES`` and every regularizer, for documentation and tests."""
    from .losses import LOSSES

    rows = []
    for cls in LOSSES.values():
        ok = cls in SUPPORTED
        rows.append((cls.__name__, "loss", ok, SUPPORTED[cls] if ok else UNSUPPORTED[cls]))
    for cls in _REGULARIZERS:
        rows.append((cls.__name__, "regularizer", True, SUPPORTED[cls]))
    return rows


def cvxpy_expression(oracle: Oracle, w) -> tuple[Any, list]:
    """``(expression, constraints)``: ``oracle`` as a cvxpy expression of the affine cvxpy
    expression ``w`` (shape ``(dim,)``, nsopt's layout), with the domain constraints of its
    regularizers, to build a larger cvxpy model (a free bias, extra constraints) around it.

    Translates what :func:`to_cvxpy` translates (a regularizer needs no fixed ``dim`` here);
    raises ``NotImplementedError`` likewise.

    Examples
    --------
    The hinge with a free (unregularized) bias, through a constant feature:

    >>> import cvxpy as cp, numpy as np, nsopt
    >>> from nsopt.cvx import cvxpy_expression
    >>> X, y = nsopt.datasets.make_dense_binary(40, 3, random_state=0)
    >>> w, b = cp.Variable(3), cp.Variable()
    >>> Xb = np.hstack([X, np.ones((40, 1))])
    >>> loss, _ = cvxpy_expression(nsopt.losses.Hinge(Xb, y), cp.hstack([w, b]))
    >>> omega, _ = cvxpy_expression(nsopt.regularizers.L2(), w)
    >>> with_bias = cp.Problem(cp.Minimize(0.1 * omega + loss)).solve(solver="CLARABEL")
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=0.1)
    >>> without = nsopt.to_cvxpy(J).problem.solve(solver="CLARABEL")
    >>> bool(with_bias <= without + 1e-8)   # a free bias can only lower the optimum
    True
    """
    return _translate(oracle, w)


def _with_ones_column(loss):
    """A shallow copy of the linear-model ``loss`` on the data ``[X 1]`` (for cvxpy only:
    nsopt itself shifts the scores instead of copying X)."""
    import copy

    from .losses._kernels import DataMatrix

    X = loss.data.X
    ones = np.ones((X.shape[0], 1))
    aug = copy.copy(loss)
    aug.data = DataMatrix(sp.hstack([X, ones], format="csr") if sp.issparse(X)
                          else np.hstack([np.asarray(X), ones]))
    if len(getattr(loss, "shape", ())) == 2:
        d, k = loss.shape
        aug.shape, aug.dim = (d + 1, k), (d + 1) * k
    else:
        aug.dim = loss.dim + 1
        aug.shape = (aug.dim,)
    return aug


def _translate(oracle: Oracle, w) -> tuple[Any, list]:
    cp = _cp()
    kind = type(oracle)
    if kind is RegularizedRisk:
        if getattr(oracle, "fit_intercept", False):
            # the loss on [X 1] (one column of ones; for a vector loss, x is the (d+1) x k
            # matrix whose last row holds the intercepts), Omega on the coefficients only
            n = oracle.base_loss.dim
            omega, cons = _translate(oracle.base_reg, w[:n])
            loss, more = _translate(_with_ones_column(oracle.base_loss), w)
            return oracle.lam * omega + loss, cons + more
        omega, cons = _translate(oracle.reg, w)
        loss, more = _translate(oracle.loss, w)
        return oracle.lam * omega + loss, cons + more
    if kind in _REGULARIZERS:
        return _REGULARIZERS[kind][0](oracle, w)
    if kind in _LOSSES:
        out = _LOSSES[kind][0](oracle, w)
        return out if kind in AUXILIARY else (out, [])
    if kind is Sum:
        parts = [_translate(t, w) for t in oracle.terms]
        return cp.sum(cp.hstack([e for e, _ in parts])), [c for _, cs in parts for c in cs]
    if kind is Scaled:
        e, cons = _translate(oracle.f, w)
        return oracle.c * e, cons
    if kind is Composed:
        A = oracle.A
        if not (sp.issparse(A) or isinstance(A, np.ndarray)):
            raise NotImplementedError(
                f"to_cvxpy: f.compose(A) with A a {type(A).__name__}: cvxpy needs A as a dense "
                "array or a scipy.sparse matrix")
        return _translate(oracle.f, A @ w + oracle.b)
    if kind is Max:
        parts = [_translate(t, w) for t in oracle.pieces]
        pieces = [e for e, _ in parts]
        return (cp.maximum(*pieces) if len(pieces) > 1 else pieces[0],
                [c for _, cs in parts for c in cs])
    if kind in UNSUPPORTED:
        raise NotImplementedError(
            f"to_cvxpy: {kind.__name__} has no cvxpy form: {UNSUPPORTED[kind]}")
    raise NotImplementedError(
        f"to_cvxpy: {kind.__name__} has no cvxpy form: an oracle is known only through its "
        "values and subgradients; to_cvxpy translates RegularizedRisk, the losses and "
        "regularizers of nsopt.cvx.SUPPORTED, and their sums, nonnegative multiples, "
        "affine pre-compositions and maxima")


def to_cvxpy(problem: Oracle) -> CvxpyProblem:
    r"""An equivalent ``cvxpy.Problem`` for an nsopt problem, to cross-check a result.

    .. math:: \min_w\ \lambda\,\Omega(w) + \sum_i c_i\, l(x_i, y_i, w)
              \quad\text{s.t. the domain of } \Omega,

    with the loss's example weights :math:`c` (:math:`1/m`, or the normalised
    ``sample_weight``) and labels as nsopt stores them (binary labels :math:`\pm1`, class
    labels ``0 .. k-1``); the multivariate losses keep their own scaling.

    Parameters
    ----------
    problem : Oracle
        A :class:`~nsopt.RegularizedRisk`, a bare loss or regularizer (with a fixed ``dim``),
        or a sum, nonnegative multiple, ``compose(A, b)`` or :class:`~nsopt.Max` of them.
        :data:`SUPPORTED` lists the classes translated, :data:`UNSUPPORTED` the ones that
        are not, with the reason.

    Returns
    -------
    CvxpyProblem
        A named pair ``(problem, variable)``: ``problem`` a ``cvxpy.Problem`` whose objective
        at ``variable.value = w`` equals ``problem.value(w)`` (on the regularizer's domain),
        ``variable`` a ``cvxpy.Variable`` of shape ``(dim,)`` in nsopt's layout (a
        multiclass :math:`W` flattened in C order). ``objective_at(w)`` evaluates it. The
        :data:`AUXILIARY` losses (NDCG, ChainHinge) are LP duals with auxiliary variables:
        their objective equals :math:`J(w)` once minimised over those, which
        ``objective_at`` does.

    Raises
    ------
    NotImplementedError
        For a loss or oracle cvxpy cannot express (StructuredHinge with user inference, user
        callables, oracles of unknown form), naming it and saying why.

    Notes
    -----
    Sizes: a pairwise loss becomes one hinge per pair (:math:`m_+ m_-` for
    :class:`~nsopt.losses.ROCArea`, up to :math:`m^2/2` for ordinal regression); FBeta a max
    over :math:`(m_+ + 1)(m_- + 1)` tables; NDCG :math:`n^2` constraints per query of ``n``
    documents; ChainHinge :math:`T S^2` per sequence of length ``T``. Fine for cross-checks
    on small data, not a way to solve large problems.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_dense_binary(40, 3, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=0.1)
    >>> prob, w = nsopt.to_cvxpy(J)
    >>> v = np.array([0.5, -1.0, 2.0])
    >>> bool(np.isclose(nsopt.to_cvxpy(J).objective_at(v), J.value(v)))
    True
    """
    cp = _cp()
    if isinstance(problem, CvxpyOracle):
        return CvxpyProblem(cp.Problem(cp.Minimize(problem.expression)), problem.variable)
    if not isinstance(problem, Oracle):
        raise TypeError(f"to_cvxpy needs an nsopt Oracle (e.g. RegularizedRisk), got "
                        f"{type(problem).__name__}")
    if problem.dim is None:
        raise ValueError(f"to_cvxpy: {type(problem).__name__} has no fixed dimension (dim is "
                         "None); wrap it in a RegularizedRisk with a loss")
    w = cp.Variable(problem.dim, name="w")
    expr, constraints = _translate(problem, w)
    return CvxpyProblem(cp.Problem(cp.Minimize(expr), constraints), w)


# ----------------------------------------------------------------------------------------
# cvxpy -> nsopt
# ----------------------------------------------------------------------------------------
def _failing_atoms(expr) -> list[str]:
    """Names of the atoms of ``expr`` without a gradient at the current variable values."""
    names = []
    for arg in getattr(expr, "args", []):
        names.extend(_failing_atoms(arg))
    if not names and hasattr(expr, "_grad") and expr.args:
        try:
            g = expr.grad
            missing = g is None or any(v is None for v in g.values())
        except NotImplementedError:
            missing = True
        if missing:
            names.append(type(expr).__name__)
    return names


class CvxpyOracle(Oracle):
    r"""An :class:`~nsopt.Oracle` for a scalar convex cvxpy expression of one variable.

    .. math:: f(w) = \texttt{expr}(\texttt{variable} = w)

    Built by :func:`from_cvxpy` (see there for the conventions). ``expression`` and
    ``variable`` are the cvxpy objects; each call sets ``variable.value`` and restores the
    previous value afterwards.
    """

    def __init__(self, expression, variable, missing_grad: str = "raise"):
        self.expression, self.variable = expression, variable
        self.missing_grad = missing_grad
        self.dim = int(variable.size)
        self.lower_bound = 0.0 if expression.is_nonneg() else -math.inf
        # the domain constraints that involve the variable (constant ones always hold)
        self._domain = [c for c in expression.domain if c.variables()]
        self.finite = not self._domain
        self._dual = None  # the fallback problem, built on first use

    def __repr__(self):
        return f"CvxpyOracle({self.expression}, dim={self.dim})"

    def _set(self, w):
        previous = self.variable.value
        self.variable.value = w.reshape(self.variable.shape) if self.variable.ndim else float(w[0])
        return previous

    def _in_domain(self) -> bool:
        return all(bool(c.value()) for c in self._domain)

    def _current_value(self) -> float:
        if self._domain and not self._in_domain():
            return math.inf
        with np.errstate(all="ignore"):
            value = self.expression.value
        return math.inf if value is None else float(np.asarray(value).reshape(()))

    def _value(self, w):
        previous = self._set(w)
        try:
            return self._current_value()
        finally:
            self.variable.value = previous

    def _value_and_subgradient(self, w):
        previous = self._set(w)
        try:
            value = self._current_value()
            if not math.isfinite(value):
                raise ValueError(f"w is outside the domain of {self.expression} (value {value}): "
                                 "there is no subgradient there")
            try:
                grad = self.expression.grad.get(self.variable)
                missing = grad is None
            except NotImplementedError:
                grad, missing = None, True
            if missing:
                atoms = ", ".join(_failing_atoms(self.expression)) or str(self.expression)
                if self.missing_grad == "raise":
                    raise ValueError(
                        f"cvxpy gives no gradient of {self.expression} at this point (atoms "
                        f"without one: {atoms}); pass missing_grad='dual' to from_cvxpy to "
                        "take a subgradient from a small conic problem instead")
                return value, self._dual_subgradient(w)
            if sp.issparse(grad):
                grad = grad.toarray()
            return value, np.asarray(grad, dtype=np.float64).reshape(-1).copy()
        finally:
            self.variable.value = previous

    def _dual_subgradient(self, w):
        r"""A subgradient from duality: :math:`f(w) = \min_x \{f(x) : x = w\}`, and minus the
        multiplier of :math:`x = w` is a subgradient of the value function at ``w``
        (accurate to the conic solver's tolerance)."""
        cp = _cp()
        if self._dual is None:
            point = cp.Parameter(self.variable.shape)
            constraint = self.variable == point
            self._dual = (cp.Problem(cp.Minimize(self.expression), [constraint]), point, constraint)
        problem, point, constraint = self._dual
        point.value = w.reshape(self.variable.shape) if self.variable.ndim else float(w[0])
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        if problem.status not in ("optimal", "optimal_inaccurate") or constraint.dual_value is None:
            raise ValueError(f"the dual subgradient of {self.expression} failed: cvxpy status "
                             f"{problem.status}")
        return -np.asarray(constraint.dual_value, dtype=np.float64).reshape(-1)


_DOMAIN_ATTRIBUTES = ("nonneg", "nonpos", "pos", "neg", "bounds", "integer", "boolean",
                      "complex", "imag", "symmetric", "diag", "PSD", "NSD", "hermitian", "sparsity")


def from_cvxpy(expr, *, missing_grad: str = "raise") -> CvxpyOracle:
    r"""An :class:`~nsopt.Oracle` for a scalar convex cvxpy expression of one variable.

    .. math:: f(w) = \texttt{expr}\big|_{\texttt{variable} = w},
              \qquad g = \nabla\texttt{expr} \text{ by cvxpy's chain rule (``expr.grad``)}

    Parameters
    ----------
    expr : cvxpy Expression or cvxpy.Minimize
        Scalar, convex by cvxpy's DCP rules (``expr.is_convex()``), in exactly one vector or
        scalar ``cvxpy.Variable`` without attributes (``nonneg=True``, bounds, ...: pass a
        box to the solver as ``bounds=`` instead), every ``cvxpy.Parameter`` with a value.
    missing_grad : {"raise", "dual"}, default "raise"
        What to do where cvxpy has no gradient (an atom without ``_grad``, such as
        ``norm_inf``, or ``grad`` None at a point): ``"raise"`` a ``ValueError`` naming the
        atoms; ``"dual"`` solve :math:`\min_x f(x)` s.t. :math:`x = w` with Clarabel and
        return minus the multiplier of the constraint, a subgradient accurate to the
        solver's tolerance (about 1e-9), at the cost of a conic solve per call.

    Returns
    -------
    CvxpyOracle
        ``dim`` the variable's size; ``lower_bound`` 0 when cvxpy's sign analysis proves
        ``expr >= 0``, else ``-inf``; ``value`` is ``+inf`` outside ``expr.domain`` (then
        ``finite`` is False).

    Raises
    ------
    TypeError
        ``expr`` is not a cvxpy expression.
    ValueError
        ``expr`` is not scalar, not convex by DCP, has no or several variables, a variable
        with attributes or of more than one dimension, or a parameter without a value.

    Notes
    -----
    ``sup_subgradient`` is the Oracle default: :math:`\langle g, p\rangle` with the one
    gradient cvxpy gives, the exact directional derivative wherever ``expr`` is
    differentiable (almost everywhere), not at its kinks: cvxpy's ``grad`` returns one
    element of the subdifferential (``abs`` at 0 gives 0, ``max`` the first maximiser), never
    the one steepest along a direction. So :func:`nsopt.testing.check_oracle` passes at points
    off the kinks (random points), and the solvers that rely on ``sup_subgradient``
    (``subbfgs``) get a plain subgradient at a kink; the bundle methods need only
    subgradients and keep their certificates.

    Examples
    --------
    >>> import cvxpy as cp, numpy as np, nsopt
    >>> x = cp.Variable(3)
    >>> f = nsopt.from_cvxpy(cp.norm1(x - np.array([1.0, 2.0, 3.0])) + cp.sum_squares(x))
    >>> f.value(np.zeros(3)), f.subgradient(np.array([1.0, 1.0, 1.0])).tolist()
    (6.0, [2.0, 1.0, 1.0])
    """
    cp = _cp()
    if isinstance(expr, cp.Minimize):
        expr = expr.expr
    if isinstance(expr, cp.Maximize):
        raise ValueError("from_cvxpy needs a convex expression to minimise, got a Maximize "
                         "objective; pass -expr (convex when expr is concave)")
    if not isinstance(expr, cp.Expression):
        raise TypeError(f"from_cvxpy needs a cvxpy expression, got {type(expr).__name__}")
    if missing_grad not in ("raise", "dual"):
        raise ValueError(f"missing_grad must be 'raise' or 'dual', got {missing_grad!r}")
    if not expr.is_scalar():
        raise ValueError(f"from_cvxpy needs a scalar expression, got shape {expr.shape}: "
                         "reduce it, e.g. with cp.sum or cp.max")
    variables = expr.variables()
    if len(variables) != 1:
        names = ", ".join(v.name() for v in variables) or "none"
        raise ValueError(f"from_cvxpy needs an expression of exactly one variable, got "
                         f"{len(variables)} ({names}): stack them into one vector variable "
                         "and slice it")
    variable = variables[0]
    if variable.ndim > 1:
        raise ValueError(f"from_cvxpy needs a vector or scalar variable, got {variable.name()} "
                         f"of shape {variable.shape}: use a vector variable and cp.reshape it")
    set_attributes = [a for a in _DOMAIN_ATTRIBUTES if variable.attributes.get(a)]
    if set_attributes:
        raise ValueError(f"variable {variable.name()} has attributes {set_attributes}: the "
                         "oracle is the expression alone; declare the variable without them "
                         "and give the solver the region (bounds=(lb, ub))")
    unset = [p.name() for p in expr.parameters() if p.value is None]
    if unset:
        raise ValueError(f"parameters {unset} of the expression have no value: set "
                         "parameter.value before from_cvxpy")
    if not expr.is_convex():
        raise ValueError(f"from_cvxpy needs a convex expression (cvxpy's DCP rules); "
                         f"{expr} has curvature {expr.curvature}")
    return CvxpyOracle(expr, variable, missing_grad)
