r"""Losses of one score per class, :math:`f = W^T x \in \mathbb{R}^k` ([TVSL10]_ Table 6).

The variable is :math:`W` (d x k) flattened in C order; ``loss.shape == (d, k)``. Each class
gives the per-example loss and its score-subdifferential; :class:`~nsopt.losses._vector_base.VectorLoss`
does the chain rule (:math:`F = XW`, subgradient :math:`X^T G`), the sup-subgradient and the
line restriction.

* :class:`MulticlassHinge`: Crammer-Singer, :math:`\max_{y'} f_{y'} - f_y + 1[y' \ne y]`;
* :class:`ScaledMulticlassHinge`: a cost matrix, with margin or slack rescaling (erratum E9);
* :class:`Softmax`: :math:`\log\sum_{y'} e^{f_{y'}} - f_y` (smooth);
* :class:`MultilabelHinge`: :math:`\max(0, 1 + \max_{z' \notin Z} f_{z'} - \min_{z \in Z} f_z)`.

The hinge-type losses are maxima of finitely many affine functions of the scores: at a tie the
score-subdifferential is the hull of the tied pieces' gradients, ``sup_subgradient`` picks the
steepest one along the direction ([YVGS10]_ Sec. 6), and the line restriction knows its kinks
(the per-example upper envelope of lines, [YVGS10]_ Alg. 4), so exact line search is available.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010. Table 6, eq. (16), App. A.4.1.
.. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton approach
   to nonsmooth convex optimization problems in machine learning. JMLR 11:1145-1200, 2010.
   Sec. 6 (eqs. 42-57), Algorithms 4 and 5.
.. [CS01] K. Crammer, Y. Singer. On the algorithmic implementation of multiclass kernel-based
   vector machines. JMLR 2:265-292, 2001.
.. [TJHA05] I. Tsochantaridis, T. Joachims, T. Hofmann, Y. Altun. Large margin methods for
   structured and interdependent output variables. JMLR 6:1453-1484, 2005.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _vector_kernels as vk
from .._validation import as_real_array, check_data
from ._vector_base import VectorLoss, check_class_labels

__all__ = ["MulticlassHinge", "ScaledMulticlassHinge", "Softmax", "MultilabelHinge"]


class _MarginLoss(VectorLoss):
    r"""Shared machinery of :math:`l(f, y) = \max_{y'} \Gamma(y, y')(f_{y'} - f_y) + \Delta(y, y')`
    ([TVSL10]_ eq. 29), given the k x k matrices ``gamma`` (:math:`\Gamma \ge 0`) and ``delta``
    (:math:`\Delta \ge 0`, zero diagonal), so that the :math:`y' = y` piece is 0."""

    pair_gradient = True
    piecewise_linear = True
    _example_arrays = ("y",)

    def saddle_form(self):
        r""":math:`\max_j \Gamma_{yj}(f_j - f_y) + \Delta_{yj}`: per example a simplex of total
        :math:`c_i`, :math:`b_{ij} = \Delta_{y_i j}`, :math:`(ZW)_{ij} = -\Gamma_{y_i j}(F_{ij} -
        F_{iy_i})` with :math:`F = XW` (:class:`~nsopt.saddle.SaddleForm`, [SZV09]_ Sec. 4)."""
        from ..inner._box_equality import project_simplex_rows
        from ..saddle import SaddleForm

        X, y, c = self.data.X, self.y, self.c
        k = int(self.n_classes)
        d = self.dim // k
        gamma, offset = self.gamma[y], self.delta[y]
        rows = np.arange(y.size)

        def matvec(w):
            F = np.asarray(X @ w.reshape(d, k))
            return -gamma * (F - F[rows, y][:, None])

        def rmatvec(a):
            T = -gamma * a
            T[rows, y] -= T.sum(axis=1)
            return np.asarray(X.T @ T).reshape(-1)

        return SaddleForm(
            matvec=matvec, rmatvec=rmatvec, offset=offset,
            project=lambda v: project_simplex_rows(v, c),
            center=np.repeat(c[:, None] / k, k, axis=1), radius_sq=0.5 * (1 - 1 / k) * float(c @ c),
        )

    def _set_margins(self, y, gamma, delta):
        self.y = y
        self.gamma = np.ascontiguousarray(gamma, dtype=np.float64)
        self.delta = np.ascontiguousarray(delta, dtype=np.float64)

    def _kernel_value(self, F, Q, eta):
        return vk.margin_value(F, Q, eta, self.y, self.gamma, self.delta, self.c)

    def _kernel_pairs(self, F, Q, eta, side, plus, minus, coef):
        return vk.margin_pairs(F, Q, eta, self.y, self.gamma, self.delta, self.c, side,
                               self.tie_rtol, plus, minus, coef)


    def _kernel_events(self, F, Q):
        size = F.shape[0] * max(F.shape[1] - 1, 1)
        kinks, jumps = np.empty(size), np.empty(size)
        n, base = vk.margin_events(F, Q, self.y, self.gamma, self.delta, self.c, kinks, jumps,
                                   self.tie_rtol)
        return kinks[:n], jumps[:n], base

    def _kernel_events_window(self, F, Q, lo, hi):
        size = F.shape[0] * max(F.shape[1] - 1, 1)
        kinks, jumps = np.empty(size), np.empty(size)
        n, base = vk.margin_events_window(F, Q, self.y, self.gamma, self.delta, self.c,
                                          float(lo), float(hi), kinks, jumps, self.tie_rtol)
        return kinks[:n], jumps[:n], base

    def _tie_scale(self):
        return float(self.gamma.max()), float(self.delta.max())

    @property
    def n_classes(self) -> int:
        return self.n_outputs

    def predict(self, X, w) -> np.ndarray:
        """The class of largest score, ``argmax_j (X W)_j``, for each row of ``X`` (int64)."""
        return np.argmax(self.decision_function(X, w), axis=1).astype(np.int64)


class MulticlassHinge(_MarginLoss):
    r"""Crammer-Singer multiclass hinge loss ([TVSL10]_ eq. 16, [CS01]_).

    .. math:: l(f, y) = \max_{y'} \big(f_{y'} - f_y + \Delta(y, y')\big),
              \qquad \Delta(y, y') = 1[y \ne y'],

    with :math:`f = W^T x`; the :math:`y' = y` term makes :math:`l \ge 0`.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,)
        Integer class labels ``0 .. n_classes - 1``.
    n_classes : int >= 2, optional
        Number of classes k. Default ``max(y) + 1``, and then every class must have an
        example (a gap usually means 1-based labels); pass it to allow empty classes.
    sample_weight : array (m,), optional
        Nonnegative weights; the risk is their weighted mean.

    Notes
    -----
    Subgradient in the scores: :math:`e_{y^*} - e_y` with :math:`y^*` a maximiser (0 when the
    max is attained by :math:`y' = y`): every row of :math:`G` has at most two nonzero classes
    ([TVSL10]_ App. A.4.1). At ties the score-subdifferential is the hull of the tied
    :math:`e_{y'} - e_y`; ``sup_subgradient`` takes the tied :math:`y'` with the largest
    :math:`q_{y'} - q_y` ([YVGS10]_ after eq. 46). Ties are decided up to
    ``tie_rtol`` (1e-12) relative to the size of the scores.

    Line restriction: per example a max of k lines in :math:`\eta` ([YVGS10]_ eq. 48);
    ``breakpoints()`` are the kinks of their upper envelopes ([YVGS10]_ Alg. 4, parallel lines
    handled), O(m k log k), so the exact line search of ``LineFunction.minimize`` applies.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_multiclass(200, 5, n_classes=3, random_state=0)
    >>> loss = nsopt.losses.MulticlassHinge(X, y)
    >>> loss.shape, round(loss.value(np.zeros(15)), 12)   # at W = 0 every class ties: loss 1
    ((5, 3), 1.0)
    """

    def __init__(self, X, y, n_classes=None, *, sample_weight=None):
        X = check_data(X)
        m = X.shape[0]
        labels, k = check_class_labels(y, m, n_classes)
        super().__init__(X, k, sample_weight)
        self._set_margins(labels, np.ones((k, k)), 1.0 - np.eye(k))


class ScaledMulticlassHinge(_MarginLoss):
    r"""Multiclass hinge with a cost matrix, margin or slack rescaling ([TJHA05]_).

    .. math::
        \text{margin:}\quad l(f, y) = \max_{y'} \big(f_{y'} - f_y + \Delta(y, y')\big), \qquad
        \text{slack:}\quad l(f, y) = \max_{y'} \Delta(y, y')\big(f_{y'} - f_y + 1\big),

    with :math:`\Delta` = ``cost`` (k x k, nonnegative, zero diagonal, so the :math:`y' = y`
    term is 0 and :math:`l \ge 0`).

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,)
        Integer class labels ``0 .. k - 1``; classes without examples are allowed.
    cost : array (k, k)
        :math:`\Delta(y, y')`, the cost of predicting :math:`y'` for :math:`y`.
    rescaling : {"margin", "slack"}, default "margin"
    sample_weight : array (m,), optional

    Notes
    -----
    Both are the general form :math:`\max_{y'} \Gamma(y, y')(f_{y'} - f_y) + \Delta(y, y')` of
    [TVSL10]_ eqs. 24 and 29 (:math:`\Gamma` on the score difference only): margin rescaling is
    :math:`\Gamma = 1`, slack rescaling :math:`\Gamma = \Delta`. Subgradient in the scores:
    :math:`\Gamma(y, y^*)(e_{y^*} - e_y)`, at most two nonzero classes.

    Erratum E9: [TVSL10]_ Table 6 prints
    :math:`\max_{y'} \Gamma(y,y')(f_{y'} - f_y + \Delta(y,y'))`, with :math:`\Gamma` around the
    whole margin violation, while eq. (24) applies :math:`\Gamma` to the score difference only.
    They differ in general; with :math:`\Gamma` = ``cost`` and the 0/1 margin inside, Table 6
    is exactly slack rescaling (and eq. 24/29 with :math:`\Gamma = \Delta` = ``cost`` is the
    same function), while eq. 24/29 with :math:`\Gamma = 1` is margin rescaling. nsopt offers
    both, tested in ``test_losses_vector.py::test_erratum_E9_scaled_hinge_both_readings``.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_multiclass(100, 4, n_classes=3, random_state=0)
    >>> cost = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float)
    >>> loss = nsopt.losses.ScaledMulticlassHinge(X, y, cost, rescaling="slack")
    >>> bool(np.isclose(loss.value(np.zeros(12)), np.mean(cost[y].max(axis=1))))
    True
    """

    def __init__(self, X, y, cost, rescaling="margin", *, sample_weight=None):
        if rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack', got {rescaling!r}")
        cost = as_real_array(cost, "cost", what="a k x k array of real numbers", copy=True)
        if cost.ndim != 2 or cost.shape[0] != cost.shape[1] or cost.shape[0] < 2:
            raise ValueError(f"cost must be a square k x k matrix with k >= 2, got shape {cost.shape}")
        if not np.isfinite(cost).all():
            raise ValueError("cost contains NaN or inf")
        if (cost < 0).any():
            i, j = np.argwhere(cost < 0)[0]
            raise ValueError(f"cost must be nonnegative; cost[{i}, {j}] = {cost[i, j]}")
        if (np.diag(cost) != 0).any():
            i = int(np.flatnonzero(np.diag(cost) != 0)[0])
            raise ValueError(f"cost must have a zero diagonal (no cost for the true class); "
                             f"cost[{i}, {i}] = {cost[i, i]}")
        k = cost.shape[0]
        X = check_data(X)
        m = X.shape[0]
        labels, _ = check_class_labels(y, m, k)
        super().__init__(X, k, sample_weight)
        self.cost, self.rescaling = cost, rescaling
        gamma = np.ones((k, k)) if rescaling == "margin" else cost
        self._set_margins(labels, gamma, cost)


class Softmax(VectorLoss):
    r"""Softmax (multinomial logistic) loss ([TVSL10]_ Table 6).

    .. math:: l(f, y) = \log\sum_{y'} e^{f_{y'}} - f_y, \qquad
              \nabla_f l = \mathrm{softmax}(f) - e_y,

    evaluated stably (shifted by :math:`\max_{y'} f_{y'}`). Smooth: ``sup_subgradient`` is the
    gradient, and the line restriction has no breakpoints, so ``LineFunction.minimize`` finds
    the root of the derivative on the one smooth piece. The gradient rows are dense in the
    classes.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,)
        Integer class labels ``0 .. n_classes - 1``.
    n_classes : int >= 2, optional
        As for :class:`MulticlassHinge`.
    sample_weight : array (m,), optional

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_multiclass(100, 4, n_classes=3, random_state=0)
    >>> bool(np.isclose(nsopt.losses.Softmax(X, y).value(np.zeros(12)), np.log(3)))
    True
    """

    differentiable = True

    _example_arrays = ("y",)

    def __init__(self, X, y, n_classes=None, *, sample_weight=None):
        X = check_data(X)
        m = X.shape[0]
        self.y, k = check_class_labels(y, m, n_classes)
        super().__init__(X, k, sample_weight)

    @property
    def n_classes(self) -> int:
        return self.n_outputs

    def _kernel_value(self, F, Q, eta):
        return vk.softmax_value(F, Q, eta, self.y, self.c)

    def _kernel_grad(self, F, Q, eta, side, G):
        return vk.softmax_grad(F, Q, eta, self.y, self.c, G)

    def _kernel_slope(self, F, Q, eta, side):
        return vk.softmax_slope(F, Q, eta, self.y, self.c)

    def _kernel_breakpoints(self, F, Q):
        return np.empty(0)

    predict = _MarginLoss.predict

    def predict_proba(self, X, w) -> np.ndarray:
        """Class probabilities ``softmax(X W)`` (m x k)."""
        f = self.decision_function(X, w)
        f = f - f.max(axis=1, keepdims=True)
        e = np.exp(f)
        return e / e.sum(axis=1, keepdims=True)


class MultilabelHinge(VectorLoss):
    r"""Multilabel hinge loss with uniform margin ([YVGS10]_ eq. 54, :math:`\tau = 1`).

    .. math:: l(f, Z) = \max\Big(0,\; 1 + \max_{z' \notin Z} f_{z'} - \min_{z \in Z} f_z\Big)
              = \max_{z \in Z,\; z' \in (\mathcal{Z} \setminus Z) \cup \{z\}}
                \big(\Delta(z', z) + f_{z'} - f_z\big),

    with :math:`Z` the relevant labels of the example (the ones of row ``Y[i]``), the second
    form [YVGS10]_ eq. 55 with :math:`\Delta(z', z) = 1[z' \ne z]`: the worst pair of a relevant
    and an irrelevant label must be ranked with a margin of 1, the :math:`z' = z` pairs give 0.
    A row with no relevant label, or with every label relevant, has no pair and contributes 0.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    Y : array (m, k) of 0/1
        ``Y[i, z] = 1`` when label ``z`` is relevant for example ``i`` (a dense array or a
        scipy.sparse matrix, as :func:`nsopt.io.load_svmlight` returns with ``multilabel=True``).
    sample_weight : array (m,), optional

    Notes
    -----
    Subgradient in the scores: :math:`e_{z'} - e_z` for a worst pair when the loss is positive,
    else 0. ``sup_subgradient`` takes the worst pair steepest along :math:`q` ([YVGS10]_ Sec. 6.4);
    as the pair slope :math:`q_{z'} - q_z` is separable, that is the tied
    irrelevant maximiser of largest :math:`q_{z'}` and the tied relevant minimiser of smallest
    :math:`q_z`, O(k) per example. At a tie with 0 the zero piece competes.

    Line restriction: [YVGS10]_ eq. 57 has :math:`|Z|(k - |Z|) + 1` lines per example; nsopt
    finds the same kinks from the upper envelope of the irrelevant labels' lines, the lower
    envelope of the relevant ones and the zero line (O(k log k) per example).

    The loss only ranks labels: it is unchanged when a constant is added to every score of an
    example, so there is no built-in threshold for a label set; see :meth:`predict`.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, Y = nsopt.datasets.make_multilabel(100, 6, n_labels=4, random_state=0)
    >>> loss = nsopt.losses.MultilabelHinge(X, Y)
    >>> loss.shape
    (6, 4)
    >>> res = nsopt.minimize(nsopt.RegularizedRisk(loss, lam=1e-2), method="bmrm", rtol=1e-4)
    >>> loss.predict(X[:2], res.x, n_labels=1).sum(axis=1)
    array([1., 1.])
    """

    def __init__(self, X, Y, *, sample_weight=None):
        if sp.issparse(Y):
            Y = Y.toarray()
        Y = as_real_array(Y, "Y", what="an m x k 0/1 matrix of numbers")
        if Y.ndim != 2:
            raise ValueError(
                f"Y must be an m x k 0/1 indicator matrix, got shape {Y.shape}; for class labels "
                "use MulticlassHinge"
            )
        if Y.shape[1] < 2:
            raise ValueError(f"Y must have at least 2 label columns, got {Y.shape[1]}")
        bad = (Y != 0) & (Y != 1)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(
                f"Y must contain only 0 and 1; found {np.unique(Y[bad])[:5].tolist()} "
                f"(first at row {i}, column {j})"
            )
        X = check_data(X)
        m = X.shape[0]
        if Y.shape[0] != m:
            raise ValueError(f"X has {m} rows but Y has {Y.shape[0]}; they must match")
        super().__init__(X, Y.shape[1], sample_weight)
        self.Y = np.ascontiguousarray(Y, dtype=np.uint8)

    pair_gradient = True
    piecewise_linear = True
    _example_arrays = ("Y",)

    @property
    def n_labels(self) -> int:
        return self.n_outputs

    def _kernel_value(self, F, Q, eta):
        return vk.multilabel_value(F, Q, eta, self.Y, self.c)

    def _kernel_pairs(self, F, Q, eta, side, plus, minus, coef):
        return vk.multilabel_pairs(F, Q, eta, self.Y, self.c, side, self.tie_rtol, plus, minus,
                                   coef)


    def _kernel_events(self, F, Q):
        size = F.shape[0] * F.shape[1]
        kinks, jumps = np.empty(size), np.empty(size)
        n, base = vk.multilabel_events(F, Q, self.Y, self.c, kinks, jumps, self.tie_rtol)
        return kinks[:n], jumps[:n], base

    def predict(self, X, w, n_labels=None) -> np.ndarray:
        """A 0/1 label matrix (m x k) for the rows of ``X``.

        With ``n_labels`` the ``n_labels`` labels of largest score. Without it, the labels scoring
        above the example's mean score: the loss is invariant to shifting all scores of an
        example, and the L2-regularized solution has class-mean zero (:math:`W\\mathbf{1} = 0`),
        so this is the labels with positive score.
        """
        f = self.decision_function(X, w)
        if n_labels is None:
            return (f > f.mean(axis=1, keepdims=True)).astype(np.float64)
        n_labels = int(n_labels)
        if not 0 <= n_labels <= self.n_outputs:
            raise ValueError(f"n_labels must be in 0 .. {self.n_outputs}, got {n_labels}")
        out = np.zeros_like(f)
        if n_labels:
            top = np.argpartition(-f, n_labels - 1, axis=1)[:, :n_labels]
            np.put_along_axis(out, top, 1.0, axis=1)
        return out
