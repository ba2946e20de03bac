r"""Multivariate performance losses: risks of all scores at once, not sums over examples.

Each loss here is a convex function of the score vector :math:`f = Xw` that does not split
into one term per example ([TVSL10]_ App. A.3): the ROC area, ordinal regression, explicit
preference pairs, ranking by NDCG (per query), and the contingency-table scores
:math:`F_\beta` and PRBEP (Joachims 2005). All are piecewise linear in :math:`f`, all are
maxima of affine functions of :math:`f`, and all are nonnegative (``lower_bound = 0``).

Common structure (:class:`MultivariateLoss`), the chain rule written once:

* value and subgradient: a compiled kernel computes :math:`R(f)` and a gradient
  :math:`g \in \partial_f R(f)`; the subgradient in ``w`` is :math:`X^T g`;
* ``sup_subgradient(w, p)``: with :math:`q = Xp`, :math:`R'(w; p) = R'(f; q)`, computed in score
  space: at ties (kinks) the kernels break them by :math:`q`, which picks the element of
  :math:`\partial_f R` steepest along :math:`q` ([YVGS10]_ Sec. 3);
* ``restrict(w, p)``: a :class:`ScoreLine` on the precomputed :math:`f = Xw`, :math:`q = Xp`, so
  a line evaluation never touches ``X`` again; its right (left) derivative is the directional
  derivative along :math:`+q` (:math:`-q`). ``minimize`` is exact to rounding: a bisection on
  the sign of the right derivative down to adjacent floating-point numbers
  (:func:`bisect_minimize`), the line function being piecewise linear. Losses that can list
  their line breakpoints cheaply do (``breakpoints()``), for sums of lines.

``groups(n_groups=None)`` returns the row index arrays over which the loss decomposes (the
queries of :class:`NDCG`; one group of all rows for the others), merged into ``n_groups``
consecutive blocks when asked, and ``group_value_and_subgradients(w, n_groups=None)`` the
per-group values and subgradients, which sum to the total: the pieces of a
multiple-cutting-plane model (the scalar, vector and structured losses' interface, so P-BMRM
runs on NDCG with one model per block of queries).

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11, 2010. App. A.3, Algorithms 7-11.
.. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton
   approach to nonsmooth convex optimization problems in machine learning. JMLR 11, 2010.
.. [J05] T. Joachims. A support vector method for multivariate performance measures.
   ICML 2005.
.. [LS07] Q. V. Le, A. J. Smola. Direct optimization of ranking measures. arXiv:0704.3359, 2007.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from .._validation import check_binary_labels, check_data, check_lengths, check_targets, check_vector
from ..oracle import LineFunction, Oracle, bisect_minimize
from . import _multivariate_kernels as kern
from ._groups import contiguous_groups
from ._kernels import DataMatrix

__all__ = [
    "MultivariateLoss",
    "ScoreLine",
    "ROCArea",
    "OrdinalRegression",
    "PreferencePairs",
    "FBeta",
    "PRBEP",
    "NDCG",
    "ndcg_at_k",
    "bisect_minimize",
]

_EPS = np.finfo(float).eps


def _order(primary: np.ndarray, secondary: np.ndarray | None = None) -> np.ndarray:
    """Indices sorting ``primary`` ascending, ties broken by ``secondary`` ascending.

    Every evaluation of the sorting losses calls this once (tests count the calls to check
    the O(m log m) work per evaluation): one argsort, plus one lexicographic sort only when
    ``secondary`` is given and ``primary`` has ties.
    """
    order = np.argsort(primary)
    if secondary is None:
        return order
    ranked = primary[order]
    if np.any(ranked[1:] == ranked[:-1]):  # ties (rare off kinks): sort again, by both keys
        order = np.lexsort((secondary, primary))
    return order


# ----------------------------------------------------------------------------------------
# Base class and the line function
# ----------------------------------------------------------------------------------------
class MultivariateLoss(Oracle):
    r"""Base class of the losses :math:`R(w) = \rho(Xw)` with :math:`\rho` a multivariate,
    piecewise-linear convex function of the score vector.

    A subclass implements, in score space (``f``, ``q`` of length ``m``):

    ``_score_pass(f, q=None) -> (r, g)``: :math:`r = \rho(f)` and :math:`g \in \partial\rho(f)`,
    the default one for ``q=None``, else one steepest along ``q`` (ties broken by ``q``), so
    that :math:`\rho'(f; q) = \langle g, q\rangle`; optionally ``_score_value(f) -> float``
    (a cheaper value) and ``_score_breakpoints(f, q)`` (the kinks of
    :math:`\eta \mapsto \rho(f + \eta q)`, or None when listing them costs too much).
    """

    lower_bound: float = 0.0

    def __init__(self, X):
        X = check_data(X)
        self.data = DataMatrix(X)
        self.m, self.dim = X.shape
        self.shape = (self.dim,)

    def __repr__(self):
        kind = "sparse" if self.data.sparse else "dense"
        return f"{type(self).__name__}(m={self.m}, d={self.dim}, {kind})"

    # --- what a subclass implements ----------------------------------------------------
    def _score_pass(self, f, q=None):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}._score_pass is not implemented")

    def _score_grad(self, f):
        return self._score_pass(f)

    def _score_sup(self, f, q):
        _, g = self._score_pass(f, q)
        return float(g @ q), g

    def _score_value(self, f) -> float:
        return self._score_grad(f)[0]

    def _score_breakpoints(self, f, q):
        return None

    # --- oracle --------------------------------------------------------------------------
    def _value(self, w):
        return float(self._score_value(self.data.dot(w)))

    def _value_and_subgradient(self, w):
        r, g = self._score_grad(self.data.dot(w))
        return float(r), self.data.rdot(g)

    def _sup_subgradient(self, w, p):
        s, g = self._score_sup(self.data.dot(w), self.data.dot(p))
        return float(s), self.data.rdot(g)

    def _restrict(self, w, p):
        return ScoreLine(self, self.data.dot(w), self.data.dot(p))

    # --- decomposition -------------------------------------------------------------------
    def _natural_groups(self) -> list[np.ndarray]:
        """Row index arrays over which the loss decomposes (here: one group, all rows)."""
        return [np.arange(self.m)]

    def _merge(self, natural: list, n_groups) -> tuple[list, np.ndarray | None]:
        """The natural groups, or ``n_groups`` blocks of consecutive ones with boundaries
        ``floor(k G / P)`` (as the scalar losses split examples): ``(groups, bounds)``."""
        if n_groups is None:
            return natural, None
        G = len(natural)
        if not isinstance(n_groups, numbers.Integral) or isinstance(n_groups, bool):
            raise TypeError(f"n_groups must be an integer or None, got {type(n_groups).__name__}")
        if not 1 <= n_groups <= G:
            what = "queries" if G > 1 else "group: it does not decompose over examples"
            raise ValueError(f"{type(self).__name__} splits into 1 .. {G} groups ({G} {what}), "
                             f"got n_groups={n_groups}")
        bounds = contiguous_groups(G, n_groups)
        return [np.concatenate(natural[a:b]) for a, b in zip(bounds[:-1], bounds[1:])], bounds

    def groups(self, n_groups: int | None = None) -> list[np.ndarray]:
        """Row index arrays of the groups: the natural ones (``n_groups=None``) or ``n_groups``
        blocks of consecutive natural groups."""
        return self._merge(self._natural_groups(), n_groups)[0]

    def _score_group_grad(self, f):
        """Per-group values and score gradients: ``(values (G,), g (m,))``, each row in at
        most one group. Default: one group."""
        r, g = self._score_grad(f)
        return np.array([r]), g

    def group_value_and_subgradients(self, w, n_groups: int | None = None
                                     ) -> tuple[np.ndarray, np.ndarray]:
        """Per-group values ``(P,)`` and subgradients ``(P, d)``, summing to the loss's.

        Group ``k`` is :meth:`groups` ``(n_groups)[k]``; each piece is a convex function of
        ``w`` and its row is a subgradient of it, so each gives its own cutting plane.
        """
        w = self._point(w)
        groups, bounds = self._merge(self._natural_groups(), n_groups)
        values, g = self._score_group_grad(self.data.dot(w))
        if bounds is not None:
            values = np.add.reduceat(values, bounds[:-1])
        if len(groups) == 1:
            return values, self.data.rdot(g)[None, :]
        rows = np.concatenate(groups)
        cols = np.concatenate([np.full(len(ix), k) for k, ix in enumerate(groups)])
        G = sp.csr_matrix((g[rows], (cols, rows)), shape=(len(groups), self.m))
        X = self.data.X
        A = G @ X
        return values, np.asarray(A.toarray() if sp.issparse(A) else A)

    # --- predictions ---------------------------------------------------------------------
    def decision_function(self, X, w) -> np.ndarray:
        """Scores ``X w`` for new data ``X``."""
        X = check_data(X)
        if X.shape[1] != self.dim:
            raise ValueError(f"X has {X.shape[1]} features but the loss was built with {self.dim}")
        return np.asarray(X @ check_vector(w, self.dim, "w")).reshape(-1)


class ScoreLine(LineFunction):
    r""":math:`\varphi(\eta) = \rho(f + \eta q)` for fixed :math:`f = Xw`, :math:`q = Xp`.

    Each evaluation costs one score-space evaluation of the loss (O(m log m) for the sorting
    losses), never a pass over ``X``. The right derivative is :math:`\rho'(f + \eta q; q)`, the
    left one :math:`-\rho'(f + \eta q; -q)`; a derivative within rounding of 0 (below 1e-12
    of :math:`\sum_i |g_i q_i|`) is returned as 0, so that a flat line is seen as flat.
    ``minimize`` is :func:`bisect_minimize`: the smallest minimiser to one floating-point
    spacing (exact to rounding for these piecewise-linear functions), at most 64 derivative
    evaluations after bracketing, consistent with :meth:`derivative` by construction.
    :meth:`breakpoints` (listed when the loss can do it cheaply) serves sums of lines, e.g.
    the line of a :class:`~nsopt.RegularizedRisk`, whose ``minimize`` needs them.
    """

    cheap_derivative = True

    def __init__(self, loss: MultivariateLoss, f: np.ndarray, q: np.ndarray):
        self.loss, self.f, self.q = loss, f, q
        qmax = float(np.abs(q).max()) if q.size else 0.0
        self._step = 1.0 / qmax if qmax > 0 else 1.0  # eta moving some score by 1

    def value(self, eta):
        return float(self.loss._score_value(self.f + eta * self.q))

    def derivative(self, eta, side=1):
        if side not in (1, -1):
            raise ValueError(f"side must be +1 (right derivative) or -1 (left derivative), got {side}")
        s, g = self.loss._score_sup(self.f + eta * self.q, side * self.q)
        if abs(s) <= 1e-12 * float(np.abs(g) @ np.abs(self.q)):
            return 0.0  # zero up to the rounding of <g, q> (e.g. a shift of all scores)
        return float(side * s)

    def breakpoints(self):
        return self.loss._score_breakpoints(self.f, self.q)

    def minimize(self, lo=0.0, hi=math.inf):
        if not np.any(self.q):
            if not lo <= hi:
                raise ValueError(f"need lo <= hi, got [{lo}, {hi}]")
            return float(lo)  # constant along the line
        return bisect_minimize(self, lo, hi, self._step)


# ----------------------------------------------------------------------------------------
# Validation helpers
# ----------------------------------------------------------------------------------------
def _class_counts(y):
    n_pos = int(np.count_nonzero(y > 0))
    return n_pos, y.shape[0] - n_pos


#: Above this many pairs the pairwise losses (ROCArea, OrdinalRegression) do not list their
#: line breakpoints (8 bytes each): ``breakpoints()`` returns None. Their own lines minimise
#: by bisection either way; a sum of lines (a RegularizedRisk's) needs the breakpoints.
MAX_BREAKPOINT_PAIRS = 1_000_000


# ----------------------------------------------------------------------------------------
# ROC area
# ----------------------------------------------------------------------------------------
class ROCArea(MultivariateLoss):
    r"""Convex surrogate of one minus the area under the ROC curve ([TVSL10]_ eq. 27).

    .. math::
        R(w) = \frac{1}{m_+ m_-} \sum_{y_i < y_j} \max(0,\; 1 + f_i - f_j), \qquad f = Xw,

    the pairs running over every negative ``i`` and positive ``j``: the mean hinge loss of the
    pairs, which upper-bounds the fraction of misordered pairs, 1 - AUC.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of -1 / +1
        Both classes must be present.

    Notes
    -----
    Algorithm: [TVSL10]_ Alg. 7 (Joachims 2005). With :math:`c = f - y/2`,
    :math:`c_i - c_j = 1 + f_i - f_j` for a negative ``i`` and a positive ``j``; one sort of
    ``c`` and one pass give, for every negative, the number of positives below it and, for
    every positive, the number of negatives above it: value and gradient in O(m log m).

    Ties: a pair with :math:`c_i = c_j` sits on its kink and contributes 0 to the value
    whatever the order the sort leaves it in, so the value is exact with ties in ``f``; the
    gradient counts it or not (both are subgradients). ``sup_subgradient`` sorts by
    :math:`(c, q)` with :math:`q = Xp`, so a tied pair is counted exactly when
    :math:`q_i > q_j`, which gives :math:`R'(w; p) = \frac{1}{m_+m_-}\big[\sum_{c_i > c_j}
    (q_i - q_j) + \sum_{c_i = c_j} \max(0, q_i - q_j)\big]` with one lexicographic sort.

    Line search: each value or one-sided derivative of the line costs one sort, O(m log m),
    and ``minimize`` bisects on the derivative to adjacent floats (at most 64 derivative
    evaluations after bracketing), exact to rounding. The line's breakpoints are the
    :math:`m_+ m_-` pair kinks; ``breakpoints()`` lists them only up to
    :data:`MAX_BREAKPOINT_PAIRS` pairs (else None, and the line of a ``RegularizedRisk``,
    a sum of lines, has no exact ``minimize``).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(200, 20, random_state=0)
    >>> nsopt.losses.multivariate.ROCArea(X, y).value(np.zeros(20))
    1.0
    """

    def __init__(self, X, y):
        super().__init__(X)
        self.y = check_binary_labels(y, self.m)
        self.positive = self.y > 0
        self.n_pos, self.n_neg = _class_counts(self.y)
        if self.n_pos == 0 or self.n_neg == 0:
            which = "positive (+1)" if self.n_pos == 0 else "negative (-1)"
            raise ValueError(
                f"ROCArea needs both classes, but y has no {which} example: the ROC area "
                "ranks positives above negatives"
            )
        self._scale = 1.0 / (float(self.n_pos) * float(self.n_neg))
        self._shift = -0.5 * self.y

    def _score_pass(self, f, q=None):
        c = f + self._shift
        order = _order(c, q)
        g = np.empty(self.m)
        r = kern.roc_sweep(c, self.positive, order, self.n_neg, g)
        g *= self._scale
        return r * self._scale, g

    def _score_breakpoints(self, f, q):
        if self.n_pos * self.n_neg > MAX_BREAKPOINT_PAIRS:
            return None
        c = f + self._shift
        cn, cp = c[~self.positive], c[self.positive]
        dq = q[~self.positive][:, None] - q[self.positive][None, :]
        num = cp[None, :] - cn[:, None]
        nz = dq != 0
        return np.sort(num[nz] / dq[nz])


# ----------------------------------------------------------------------------------------
# Ordinal regression
# ----------------------------------------------------------------------------------------
class OrdinalRegression(MultivariateLoss):
    r"""Ordinal regression by pairwise ranking ([TVSL10]_ App. A.3.2).

    .. math::
        R(w) = \frac{1}{M} \sum_{y_i < y_j} C(y_i, y_j)\, \max(0,\; 1 + f_i - f_j), \qquad
        M = \tfrac12\big(m^2 - \textstyle\sum_k m_k^2\big),

    with :math:`m_k` the number of examples of label ``k``, so ``M`` counts the pairs with
    different labels (the same ``M`` for both costs).

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of integers
        Ordinal labels (any integers, e.g. 1..n); at least two distinct values.
    cost : {"constant", "difference"}, default "constant"
        :math:`C = 1` (Joachims 2006) or :math:`C(y_i, y_j) = y_j - y_i` (on the label values).

    Notes
    -----
    Algorithm: [TVSL10]_ Alg. 8, corrected (erratum E3: the printed box
    misses the ``else`` between the two copies, mixes ``y_i`` and ``y_j`` and uses ``pi_i < m``;
    tested in ``test_losses_multivariate.py::test_erratum_E3_ordinal_matches_brute_force``).
    Each example gets a lower copy :math:`f_j - 1/2` and an upper copy :math:`f_i + 1/2`; a
    pair :math:`y_i < y_j` is active when the lower copy of ``j`` sorts before the upper copy
    of ``i``. One sort of the 2m copies and one pass, with the per-label counts kept in Fenwick
    trees (both costs are :math:`\alpha + \beta(v_l - v_k)`, so prefix sums suffice): O(m log m
    + m log n) for n labels, instead of the paper's O(m log m + m n).

    Ties: as for :class:`ROCArea`, ``sup_subgradient`` sorts the copies by
    :math:`(c, q)`, counting a tied pair exactly when :math:`q_i > q_j`. The line is a
    :class:`ScoreLine` (one sort per evaluation, ``minimize`` by bisection, exact to rounding);
    its breakpoints are listed up to :data:`MAX_BREAKPOINT_PAIRS` candidate pairs (``m^2``).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X = np.array([[0.0], [1.0], [2.0]]); y = np.array([1, 2, 3])
    >>> nsopt.losses.multivariate.OrdinalRegression(X, y).value(np.array([1.0]))
    0.0
    """

    def __init__(self, X, y, cost="constant"):
        super().__init__(X)
        y = check_targets(y, self.m)
        if not np.all(y == np.round(y)):
            bad = np.unique(y[y != np.round(y)])[:5]
            raise ValueError(
                f"OrdinalRegression needs integer labels (ordered levels); found {bad.tolist()}"
                " (map ordered categories to 1..n first)"
            )
        self.y = y
        self.levels, level = np.unique(y, return_inverse=True)
        if self.levels.size < 2:
            raise ValueError(
                f"OrdinalRegression needs at least two distinct labels, got only {self.levels.tolist()}:"
                " with one level there is no pair to order"
            )
        self.level = level.astype(np.int64)
        counts = np.bincount(self.level).astype(np.float64)
        self.counts = counts
        self.n_pairs = 0.5 * (float(self.m) ** 2 - float(counts @ counts))
        if cost == "constant":
            self._alpha, self._beta = 1.0, 0.0
        elif cost == "difference":
            self._alpha, self._beta = 0.0, 1.0
        else:
            raise ValueError(f'cost must be "constant" (C = 1) or "difference" (C = y_j - y_i), got {cost!r}')
        self.cost = cost

    def _score_pass(self, f, q=None):
        keys = np.concatenate([f - 0.5, f + 0.5])
        order = _order(keys, None if q is None else np.concatenate([q, q]))
        g = np.empty(self.m)
        r = kern.ordinal_sweep(f, self.level, self.levels, self.counts, self._alpha, self._beta,
                               order, g)
        g /= self.n_pairs
        return r / self.n_pairs, g

    def _score_breakpoints(self, f, q):
        if self.m * self.m > MAX_BREAKPOINT_PAIRS:
            return None
        i, j = np.nonzero(self.y[:, None] < self.y[None, :])
        dz = q[i] - q[j]
        nz = dz != 0
        return np.sort(-(1.0 + f[i[nz]] - f[j[nz]]) / dz[nz])


# ----------------------------------------------------------------------------------------
# Preference pairs
# ----------------------------------------------------------------------------------------
class PreferencePairs(MultivariateLoss):
    r"""Hinge loss of explicit preference pairs ([TVSL10]_ App. A.3.3).

    .. math::
        R(w) = \frac{1}{|P|} \sum_{(i, j) \in P} C_{ij}\, \max(0,\; 1 + f_i - f_j),

    where a pair ``(i, j)`` says that example ``i`` should score *below* example ``j``
    (the paper's convention: :math:`f_j \ge f_i + 1` costs nothing).

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    pairs : int array (n, 2)
        Rows ``(i, j)``: 0-based row indices of ``X``, ``i != j``; repeated pairs count twice.
    cost : array (n,), optional (keyword)
        Nonnegative pair costs :math:`C_{ij}`; default 1.

    Notes
    -----
    Algorithm: [TVSL10]_ Alg. 9 in one compiled pass over the pairs, O(|P|) plus the two
    products with ``X``. Erratum E17: the printed box omits the :math:`1/|P|` of the formula
    above it; it is applied here (the mean over pairs, not divided by the sum of costs); tested
    in ``test_losses_multivariate.py::test_erratum_E17_preference_pairs_mean_over_pairs``.
    At a kink (:math:`f_j - f_i = 1` exactly) ``sup_subgradient`` counts the pair when
    :math:`q_i > q_j`. The line function is a sum of hinges in :math:`\eta`: its |P|
    breakpoints are always listed (so the line of a ``RegularizedRisk`` minimises exactly
    too); ``minimize`` bisects, exact to rounding.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X = np.eye(3); pairs = [[0, 1], [1, 2]]
    >>> nsopt.losses.multivariate.PreferencePairs(X, pairs).value(np.array([0.0, 1.0, 3.0]))
    0.0
    """

    def __init__(self, X, pairs, *, cost=None):
        super().__init__(X)
        try:
            P = np.asarray(pairs)
        except (TypeError, ValueError) as exc:  # pragma: no cover - ragged input
            raise TypeError("pairs must be an integer array of shape (n, 2)") from exc
        if P.size == 0:
            raise ValueError("pairs is empty: PreferencePairs needs at least one pair (i, j)")
        if P.ndim != 2 or P.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n, 2) (rows (i, j): i below j), got {P.shape}")
        if not np.issubdtype(P.dtype, np.integer):
            if not (np.issubdtype(P.dtype, np.floating) and np.all(P == np.round(P))):
                raise ValueError("pairs must hold integer row indices of X")
        P = P.astype(np.int64)
        bad = (P < 0) | (P >= self.m)
        if bad.any():
            r = int(np.argwhere(bad)[0][0])
            raise ValueError(
                f"pairs[{r}] = {P[r].tolist()} is out of range: indices must be in [0, {self.m}) (rows of X)")
        same = P[:, 0] == P[:, 1]
        if same.any():
            r = int(np.flatnonzero(same)[0])
            raise ValueError(f"pairs[{r}] = {P[r].tolist()} compares an example with itself")
        self.pairs = np.ascontiguousarray(P)
        self.lower = np.ascontiguousarray(P[:, 0])
        self.upper = np.ascontiguousarray(P[:, 1])
        n = P.shape[0]
        if cost is None:
            self.cost = np.ones(n)
        else:
            self.cost = check_vector(cost, n, "cost")
            if (self.cost < 0).any():
                raise ValueError("cost must be nonnegative (one cost per pair)")
        self.n_pairs = n

    def _pass(self, f, q, side):
        g = np.empty(self.m)
        r = kern.pairs_gradient(f, q, self.lower, self.upper, self.cost, side, g)
        g /= self.n_pairs
        return r / self.n_pairs, g

    def _score_value(self, f):
        z = 1.0 + f[self.lower] - f[self.upper]
        return float(self.cost @ np.maximum(z, 0.0)) / self.n_pairs

    def _score_pass(self, f, q=None):
        return self._pass(f, f, 0.0) if q is None else self._pass(f, q, 1.0)

    def _score_breakpoints(self, f, q):
        dz = q[self.lower] - q[self.upper]
        nz = dz != 0
        z = 1.0 + f[self.lower[nz]] - f[self.upper[nz]]
        return np.sort(-z / dz[nz])


# ----------------------------------------------------------------------------------------
# Contingency-table losses: F_beta and PRBEP
# ----------------------------------------------------------------------------------------
class _ContingencyLoss(MultivariateLoss):
    """Shared part of FBeta and PRBEP: sorting, the labelling y' of a table, the gradient."""

    def __init__(self, X, y):
        super().__init__(X)
        self.y = check_binary_labels(y, self.m)
        self.positive = self.y > 0
        self.n_pos, self.n_neg = _class_counts(self.y)
        if self.n_pos == 0:
            raise ValueError(
                f"{type(self).__name__} needs at least one positive (+1) example: precision and "
                "recall of the positive class are undefined without one"
            )

    def _search(self, f_pos, f_neg, q_pos, q_neg, tol, use_direction):  # pragma: no cover
        raise NotImplementedError

    def _score_pass(self, f, q=None):
        # one sort of all scores by (f, q) ascending: negatives in that order, positives reversed
        order = _order(f, q)
        pos_sorted = order[self.positive[order]][::-1]
        neg_sorted = order[~self.positive[order]]
        f_pos = np.ascontiguousarray(f[pos_sorted])
        f_neg = np.ascontiguousarray(f[neg_sorted])
        if q is None:
            q_pos, q_neg = np.zeros(0), np.zeros(0)
        else:
            q_pos = np.ascontiguousarray(q[pos_sorted])
            q_neg = np.ascontiguousarray(q[neg_sorted])
        # ties between tables: values equal up to the rounding of the sums of scores
        tol = 64 * _EPS * (1.0 + 2.0 * float(np.abs(f).sum()))
        r, a, b, _ = self._search(f_pos, f_neg, q_pos, q_neg, tol, q is not None)
        g = np.zeros(self.m)
        g[pos_sorted[a:]] = -2.0  # positives labelled negative: y' - y = -2
        g[neg_sorted[b:]] = 2.0   # negatives labelled positive: y' - y = +2
        return float(r), g

    def labelling(self, w) -> np.ndarray:
        r"""The maximising labelling :math:`y^* \in \{-1, +1\}^m` of the loss at ``w``."""
        _, g = self._score_pass(self.data.dot(self._point(w)))
        return self.y + g


class FBeta(_ContingencyLoss):
    r"""Structured hinge loss of the :math:`F_\beta` score ([TVSL10]_ App. A.3.5, [J05]_).

    .. math::
        R(w) = \max_{y' \in \{-1,+1\}^m} \Big[\Delta(y, y') + \sum_{i=1}^m (y'_i - y_i) f_i\Big],
        \qquad \Delta = 1 - F_\beta(T_+, T_-),\quad
        F_\beta = \frac{(1 + \beta^2)\, T_+}{T_+ + m_- - T_- + \beta^2 m_+},

    with :math:`T_+` (:math:`T_-`) the positives (negatives) that :math:`y'` labels correctly.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of -1 / +1
        At least one positive.
    beta : float > 0, default 1.0

    Notes
    -----
    Scaling: as in the paper (and SVMperf), the loss is **not** divided by ``m``: the margin
    term :math:`(y' - y)^T f` is a sum over examples and :math:`\Delta \in [0, 1]`. Choose
    ``lam`` accordingly (``lam`` of a mean loss times ``m``). :math:`R \ge 0` (take
    :math:`y' = y`) and :math:`R(w) \ge \Delta(y, \mathrm{sign}(Xw))`.

    Algorithm: [TVSL10]_ Alg. 11 with the corrected indexing (erratum E2: the printed
    :math:`p_0 = 0,\ p_i = 2\sum_{k=i}^{m_+}` are off by one; here
    :math:`p_a = 2\sum_{k > a} f_{\pi^+_k}` over the positives outside the top ``a``, and
    :math:`n_b` likewise, so :math:`p_0` is twice the sum over all positives and
    :math:`p_{m_+} = 0`; tested in
    ``tests/test_losses_multivariate.py::test_erratum_E2_fbeta_matches_brute_force``). For table :math:`(T_+, T_-) = (a, b)` the best labelling calls the
    ``a`` highest-scoring positives and the ``b`` lowest-scoring negatives correctly, with value
    :math:`\Delta(a, b) - p_a + n_b`. Instead of the paper's O(m^2) double loop, for each ``a``
    the best ``b`` is found by binary search (the value is concave in ``b``): O(m log m) in all.
    Subgradient :math:`X^T (y^* - y)`.

    ``sup_subgradient``: the directional derivative is the largest :math:`(y' - y)^T q` over
    the maximising labellings. The kernel scans every maximising table (within rounding) and,
    within a table, breaks ties in ``f`` by ``q`` (one lexicographic sort), which is exact over
    all tied labellings. Its cost grows with the number of maximising tables (all ``b`` at
    ``w = 0``: O(m)); a pathological point with many tied tables for many ``a`` costs up to
    O(m_+ m_-). ``restrict`` is a :class:`ScoreLine` (no pass over ``X`` per evaluation); its
    ``minimize`` bisects on the derivative (exact to rounding; no breakpoint list).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(200, 20, random_state=0)
    >>> nsopt.losses.multivariate.FBeta(X, y).value(np.zeros(20))
    1.0
    """

    def __init__(self, X, y, beta=1.0):
        super().__init__(X, y)
        if not isinstance(beta, numbers.Real) or isinstance(beta, bool) or not math.isfinite(beta) or beta <= 0:
            raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
        self.beta = float(beta)

    def _search(self, f_pos, f_neg, q_pos, q_neg, tol, use_direction):
        return kern.fbeta_search(f_pos, f_neg, q_pos, q_neg, self.beta ** 2, tol, use_direction)


class PRBEP(_ContingencyLoss):
    r"""Structured hinge loss of the precision/recall break-even point ([J05]_).

    .. math::
        R(w) = \max_{y' :\ \#\{y'_i = +1\} = m_+} \Big[\Delta(y, y') + \sum_{i=1}^m (y'_i - y_i) f_i\Big],
        \qquad \Delta = 1 - \frac{T_+}{m_+},

    over the labellings with as many predicted positives as true ones, where precision equals
    recall (:math:`T_+ / m_+`): the break-even point.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,) of -1 / +1
        At least one positive.

    Notes
    -----
    Not in [TVSL10]_; the definition is Joachims' (2005)
    PRBEP loss, with the scaling of :class:`FBeta` (not divided by ``m``). It has the structure
    of :class:`FBeta` with the table ``(a, b)`` tied by :math:`a + (m_- - b) = m_+`, so one loop
    over ``a`` after the sort: O(m log m). Ties and ``sup_subgradient`` as in :class:`FBeta`
    (exact: every maximising ``a`` is scanned, ties in ``f`` broken by ``q``).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(200, 20, random_state=0)
    >>> nsopt.losses.multivariate.PRBEP(X, y).value(np.zeros(20))
    1.0
    """

    def _search(self, f_pos, f_neg, q_pos, q_neg, tol, use_direction):
        return kern.prbep_search(f_pos, f_neg, q_pos, q_neg, tol, use_direction)


# ----------------------------------------------------------------------------------------
# Ranking: NDCG
# ----------------------------------------------------------------------------------------
def _discount(n: int, k: int | None) -> np.ndarray:
    """DCG position discounts 1 / log2(1 + i), i = 1..n, zero beyond position k."""
    a = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    if k is not None and k < n:
        a[k:] = 0.0
    return a


def _check_k(k):
    if k is None:
        return None
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer (NDCG@k) or None (no truncation), got {k!r}")
    return int(k)


def _check_ranking(relevance, qid, m):
    relevance = check_targets(relevance, m, "relevance")
    if (relevance < 0).any():
        bad = np.unique(relevance[relevance < 0])[:5]
        raise ValueError(f"relevance grades must be >= 0 (gain 2^rel - 1); found {bad.tolist()}")
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be 1-D (one query id per row), got shape {qid.shape}")
    check_lengths(m, qid, "qid")
    return relevance, qid


_MAX_MERGE_STATES = 1 << 22  # states of the grade merge per query (kern.ndcg_merge), else LSA
_MAX_TAIL_PREFIX = 1 << 22  # entries of the merge's tail prefix sums per query, else a sweep
_MERGE_PRUNE = 2  # forced orders of the merge: 2 by position (suffix ranges), 1 one range, 0 none


class NDCG(MultivariateLoss):
    r"""Structured hinge loss of NDCG@k, per query ([TVSL10]_ App. A.3.4 eq. 28, [LS07]_).

    For a query with ``n`` documents, numbered by decreasing relevance, scores :math:`f` and a
    ranking :math:`\pi` (position ``i`` holds document :math:`\pi(i)`):

    .. math::
        l_q(f) = \max_\pi \Big[ c^T f(\pi) - \bar c^T f + 1 - a^T b(\pi) \Big],
        \qquad R(w) = \frac{1}{Q} \sum_{q=1}^Q l_q(f_q),

    with :math:`f(\pi)_i = f_{\pi(i)}`, :math:`b(\pi)_i = b_{\pi(i)}`, the discounts
    :math:`a_i = 1/\log_2(1 + i)` for :math:`i \le k` (0 beyond), the gains
    :math:`b_j = (2^{rel_j} - 1)/\mathrm{DCG}^{max}_k`, so that :math:`a^T b(\pi)` is the
    NDCG@k of :math:`\pi` and :math:`\Delta(\pi) = 1 - a^T b(\pi)`, the decreasing position
    weights :math:`c_i = 1/\sqrt{i}`, and :math:`\bar c` the reference weights (below). The
    mean runs over the ``Q`` queries kept (below).

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    relevance : array (m,)
        Graded relevance, >= 0 (LETOR: 0, 1, 2).
    qid : array (m,)
        Query id of every row; a query's rows need not be contiguous.
    k : int >= 1 or None
        Truncation of the DCG (NDCG@k); None: all positions.

    Notes
    -----
    Algorithm: [TVSL10]_ Alg. 10 per query, a linear assignment of positions ``i`` to documents
    ``j`` maximised by ``scipy.optimize.linear_sum_assignment`` with

    .. math:: C_{ij} = c_i f_j - a_i b_j,

    value :math:`c^T f(\pi) - \bar c^T f + a^T(b - b(\pi))` and score gradient
    :math:`c(\pi^{-1}) - \bar c`. An optimal assignment places the documents of one grade in
    decreasing ``f`` (swapping two of them changes only :math:`c^T f(\pi)`, and ``c``
    decreases), so the value and gradient are computed, for all queries in one compiled pass,
    as the best merge of the grades' sorted lists (a dynamic programme over the counts placed,
    at most :math:`\prod_g (n_g + 1)` states per query; ``kern.ndcg_merge``). Exact cuts keep
    it small: with ``k`` only the first ``k`` positions are searched (past them the discounts
    vanish and the rest go by decreasing ``f``), and a swap across grades that gains whatever
    the positions still to fill fixes the order of that pair: a document ``x`` precedes ``y``
    (at position ``i`` or later) when :math:`f_x - f_y > \rho\,(b_x - b_y)` for every ratio
    :math:`\rho` of the position weights' decrements past ``i``, or when ``x`` has the lower
    gain and a score at least ``f_y`` (see the kernel). A query with more than ``2**22``
    states goes to ``linear_sum_assignment``, O(n^3). One ``X @ w`` and one ``X.T @ g`` per
    oracle call; ``sup_subgradient`` keeps the per-query assignment (below). OHSUMED Fold 1
    (62 queries, 9,219 documents), one oracle call in raw data passes (CPU time, ``w`` from 0
    to 10 N(0, 1), ``benchmarks/small.py --ndcg``; 360 before issue 11): 3-5 at ``k = 10``
    and untruncated at every spread. With one range of the ratios for all positions (the rule
    before) the untruncated call cost 13-22 raw passes where the scores spread like the gains
    (``w`` ~ 0.001-0.01 N(0, 1)): the ratios range over 0.62-1.26, about 5 times wider than
    past the first few positions, and the states searched fell from 78,754 to 12,661 (9,177
    positions).

    Erratum E4: the printed :math:`C_{ij} = c_i f_i - b_i a_j` must read :math:`c_i f_j`. A
    correction that keeps :math:`b_i a_j`, which takes eq. (28)'s :math:`a(\pi)_i = a_{\pi(i)}`
    literally; then the gain term is the DCG of :math:`\pi^{-1}` while the score term ranks by
    :math:`\pi`, and the loss changes when rows of equal relevance are reordered. Here both
    terms use the same ranking (position ``i``, document ``j``: :math:`a_i b_j`), which makes
    :math:`1 - a^T b(\pi)` the NDCG loss of the ranking the scores induce; tested against
    brute force over all permutations in
    ``test_losses_multivariate.py::test_erratum_E4_ndcg_matches_brute_force_permutations``.

    Reference weights: the paper subtracts :math:`c^T f`, the score of *the* ideal ranking; with
    ties in relevance that ranking is arbitrary (the row order). Here :math:`\bar c_j` is the
    mean of :math:`c` over the positions of document ``j``'s relevance grade in the ideal
    ranking, i.e. :math:`\bar c^T f` is the mean score over all ideal rankings. The loss is then
    invariant to the order of the rows, still convex, still nonnegative (the max over
    :math:`\pi` is at least the mean over ideal rankings, where :math:`\Delta = 0`), and it
    bounds the NDCG loss of the predicted ranking: taking :math:`\pi` = sort by ``f``,
    :math:`c^T f(\pi) \ge \bar c^T f` (rearrangement), so :math:`l_q \ge 1 - \mathrm{NDCG@k}`.

    ``sup_subgradient``: the directional derivative is the largest :math:`c^T q(\pi)` (minus
    :math:`\bar c^T q`) over *all* maximising assignments. They are the perfect matchings on
    the tight edges of any optimal dual (complementary slackness): the kernel computes dual
    potentials of the found assignment (Bellman-Ford, O(n^3)) and solves a second assignment
    on the tight edges for the largest :math:`c^T q(\pi)`. O(n^3) per query. Exact at exact
    ties; "tight" means a reduced cost within the rounding of the potentials,
    :math:`4(n + 2)\,\epsilon\,(1 + \max|C|)`, so within that distance of a kink the
    directional derivative may already be the one past it (the line's ``minimize`` is exact
    to that tolerance, not to one spacing).

    Queries skipped: a query whose documents all have the same relevance (this includes a
    query with a single document) has a constant NDCG; its loss would only penalise spread
    scores, so it is left out of the loss and of ``Q`` (``n_skipped_queries`` counts them). A
    data set with no query left is an error.

    Caveat: like every structured hinge, the loss is only useful when some ``w`` brings
    :math:`R(w)` below :math:`R(0) = \max_\pi \Delta(\pi)`. That needs the top-ranked
    documents to be separated from the rest by more than the spread of the scores within a
    grade; on noisy data (LETOR OHSUMED with a linear model) the certified minimiser is
    ``w = 0`` for every ``lam`` (see the slow test), and a pairwise loss
    (:class:`PreferencePairs` on the query's pairs) is the practical choice.

    Decomposition: ``groups()`` returns the row indices of each kept query;
    ``group_value_and_subgradients`` the per-query terms :math:`l_q / Q`.
    ``restrict`` is a :class:`ScoreLine`; its ``minimize`` bisects on the derivative (exact to
    rounding; two assignments per query and evaluation).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, rel, qid = nsopt.datasets.make_ranking(4, 10, 3, random_state=0)
    >>> loss = nsopt.losses.multivariate.NDCG(X, rel, qid, k=5)
    >>> loss.value(np.zeros(3)) > 0, len(loss.groups())
    (True, 4)
    """

    def __init__(self, X, relevance, qid, k=None):
        super().__init__(X)
        self.relevance, self.qid = _check_ranking(relevance, qid, self.m)
        self.k = _check_k(k)
        ids, inverse = np.unique(self.qid, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.flatnonzero(np.diff(inverse[order])) + 1
        self._queries = []  # (rows by decreasing relevance, c, c_bar, a, b)
        self.query_ids = []
        skipped = 0
        for qi, rows in zip(ids, np.split(order, bounds)):
            rel = self.relevance[rows]
            if rel.min() == rel.max():
                skipped += 1
                continue
            rows = rows[np.argsort(-rel, kind="stable")]
            rel = self.relevance[rows]
            n = rows.size
            gain = np.exp2(rel) - 1.0
            a = _discount(n, self.k)
            c = 1.0 / np.sqrt(np.arange(1, n + 1, dtype=np.float64))
            # mean of c over the block of positions of each grade in the ideal ranking
            starts = np.flatnonzero(np.r_[True, rel[1:] != rel[:-1]])
            lengths = np.diff(np.r_[starts, n])
            c_bar = np.repeat(np.add.reduceat(c, starts) / lengths, lengths)
            self._queries.append((rows, c, c_bar, a, gain / float(a @ gain)))
            self.query_ids.append(qi)
        self.n_skipped_queries = skipped
        if not self._queries:
            raise ValueError(
                "NDCG: every query has documents of a single relevance grade (or a single "
                "document), so no query can be ranked; check relevance and qid"
            )
        self.n_queries = len(self._queries)
        self._pack()

    def _pack(self):
        """The queries concatenated for :func:`kern.ndcg_merge`: rows, offsets, grades."""
        qs = self._queries
        self._rows = np.concatenate([q[0] for q in qs])
        self._c, self._c_bar, self._a = (np.concatenate([q[i] for q in qs]) for i in (1, 2, 3))
        self._ab = np.array([float(q[3] @ q[4]) for q in qs])
        self._qptr = np.r_[0, np.cumsum([q[0].size for q in qs])].astype(np.int64)
        gptr, qg, b_grade = [0], [0], []
        for (rows, _, _, _, b), lo in zip(qs, self._qptr[:-1]):
            starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])  # b is constant on a grade
            gptr.extend((lo + np.r_[starts[1:], rows.size]).tolist())
            b_grade.extend(b[starts].tolist())
            qg.append(qg[-1] + starts.size)
        self._gptr = np.asarray(gptr, dtype=np.int64)
        self._qg = np.asarray(qg, dtype=np.int64)
        self._b_grade = np.asarray(b_grade, dtype=np.float64)
        # range of the ratios (a_l - a_{l+1}) / (c_l - c_{l+1}) over the positions l >= i of
        # each query (the merge's forced orders; 0 at its last position)
        lo_parts, hi_parts = [], []
        for _, c, _, a, _ in qs:
            rho = np.diff(a) / np.diff(c)  # c strictly decreases
            lo_parts.append(np.r_[np.minimum.accumulate(rho[::-1])[::-1], 0.0])
            hi_parts.append(np.r_[np.maximum.accumulate(rho[::-1])[::-1], 0.0])
        self._rho_lo = np.concatenate(lo_parts)
        self._rho_hi = np.concatenate(hi_parts)

    def _natural_groups(self):
        """Row indices of each kept query, documents by decreasing relevance."""
        return [rows.copy() for rows, *_ in self._queries]

    @staticmethod
    def _query(fq, c, c_bar, a, b, qq=None):
        """(value, score gradient) of one query, in relevance order; with ``qq`` the gradient
        is the one steepest along ``qq`` among the maximising assignments."""
        C = np.outer(c, fq) - np.outer(a, b)  # position i, document j
        _, perm = linear_sum_assignment(C, maximize=True)
        value = float(c @ fq[perm] - c_bar @ fq + a @ (b - b[perm]))
        if qq is not None:
            u, v = kern.assignment_potentials(C, perm)
            reduced = u[:, None] + v[None, :] - C
            # tight within the rounding of the potentials (paths of up to n edges)
            tol = 4.0 * (perm.size + 2) * _EPS * (1.0 + float(np.abs(C).max()))
            cost = np.where(reduced <= tol, -np.outer(c, qq), np.inf)
            _, perm = linear_sum_assignment(cost)
        g = -c_bar.copy()
        g[perm] += c  # document perm[i] sits at position i
        return value, g

    def _score_group_grad(self, f, q=None):
        values = np.empty(self.n_queries)
        g = np.zeros(self.m)
        if q is None:  # every query in one compiled pass (a merge of its grades)
            g_cat = np.empty(self._rows.size)
            done = np.zeros(self.n_queries, dtype=np.bool_)
            fq = np.ascontiguousarray(f[self._rows], dtype=np.float64)
            kern.ndcg_merge(fq, np.argsort(-fq), self._qptr, self._gptr, self._qg,
                            self._b_grade, self._c, self._a, self._c_bar, self._ab, self._rho_lo,
                            self._rho_hi, _MAX_MERGE_STATES, _MAX_TAIL_PREFIX, _MERGE_PRUNE,
                            values, g_cat, done)
            g[self._rows] = g_cat
            todo = np.flatnonzero(~done)
        else:
            todo = range(self.n_queries)
        for t in todo:
            rows, c, c_bar, a, b = self._queries[t]
            values[t], g[rows] = self._query(f[rows], c, c_bar, a, b,
                                             None if q is None else q[rows])
        values /= self.n_queries
        g /= self.n_queries
        return values, g

    def _score_pass(self, f, q=None):
        values, g = self._score_group_grad(f, q)
        return float(values.sum()), g


def ndcg_at_k(scores, relevance, qid, k=10) -> float:
    r"""Mean NDCG@k over queries of a ranking by decreasing ``scores``.

    .. math::
        \mathrm{NDCG@k} = \frac{\sum_{i \le k} (2^{rel_{(i)}} - 1) / \log_2(1 + i)}
                               {\max_\pi \sum_{i \le k} (2^{rel_{\pi(i)}} - 1) / \log_2(1 + i)}

    Parameters
    ----------
    scores, relevance, qid : arrays (m,)
    k : int >= 1 or None, default 10
        None: all positions.

    Returns
    -------
    float
        The mean over the queries with at least one relevant document (grade > 0); queries
        without one (ideal DCG 0) are skipped, as NDCG is undefined for them.

    Notes
    -----
    Ties in ``scores`` are averaged: a group of tied documents gets the mean of the discounts
    of the positions it occupies, which is the expected NDCG over random orders of the ties.
    So a constant scorer gets the NDCG of a random ranking, never an optimistic one.

    Examples
    --------
    >>> ndcg_at_k([3.0, 2.0, 1.0], [2, 1, 0], [1, 1, 1], k=2)
    1.0
    """
    scores = check_vector(scores, None, "scores")
    relevance, qid = _check_ranking(relevance, qid, scores.shape[0])
    k = _check_k(k)
    ids, inverse = np.unique(qid, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    total, count = 0.0, 0
    for rows in np.split(order, bounds):
        gain = np.exp2(relevance[rows]) - 1.0
        n = rows.size
        a = _discount(n, k)
        ideal = float(a @ np.sort(gain)[::-1])
        if ideal <= 0:
            continue
        s = scores[rows]
        by_score = np.argsort(-s, kind="stable")
        s_sorted = s[by_score]
        # mean discount over each run of tied scores
        starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
        sums = np.add.reduceat(a, starts)
        lengths = np.diff(np.r_[starts, n])
        mean_a = np.repeat(sums / lengths, lengths)
        total += float(mean_a @ gain[by_score]) / ideal
        count += 1
    if count == 0:
        raise ValueError("ndcg_at_k: no query has a relevant document (grade > 0)")
    return total / count
