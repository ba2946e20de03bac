r"""The chain rule for losses of one score per class, :math:`l(W^T x_i, y_i)`, written once.

:class:`VectorLoss` forms :math:`F = XW`, asks the subclass's per-example kernels
(:mod:`nsopt.losses._vector_kernels`) for the value and a score-(sub)gradient, and pulls it back
with :math:`X^T G`; :class:`VectorLine` restricts the risk to a line in O(m k) per evaluation.
"""
from __future__ import annotations

import copy
import math
import numbers

import numpy as np

from .._validation import check_data, check_sample_weight, check_vector
from ..oracle import LineFunction, Oracle
from . import _vector_kernels as _vk
from ._groups import cached_group_parts
from ._kernels import PARALLEL_MIN_NNZ, DataMatrix

__all__ = ["VectorLoss", "VectorLine", "check_class_labels"]

#: threaded sparse passes only from this many multiply-adds on (the scalar losses' threshold)
_PARALLEL_MIN_WORK = PARALLEL_MIN_NNZ


def check_class_labels(y, m: int, n_classes=None, name="y") -> tuple[np.ndarray, int]:
    """Class labels ``0 .. n_classes - 1`` as int64, and the number of classes.

    Non-integer, negative or too large labels are errors naming the values. Without
    ``n_classes`` it is ``max(y) + 1`` and every class ``0 .. max(y)`` must occur (a missing
    one usually means 1-based or non-contiguous labels); pass ``n_classes`` to allow classes
    without examples.
    """
    y = check_vector(y, None, name)
    if len(y) != m:
        raise ValueError(f"X has {m} rows but {name} has {len(y)} entries; they must match")
    bad = y != np.round(y)
    if bad.any():
        raise ValueError(
            f"{name} must hold integer class labels 0 .. n_classes - 1; found non-integer values "
            f"{np.unique(y[bad])[:5].tolist()}"
        )
    if (y < 0).any():
        raise ValueError(
            f"{name} must hold class labels 0 .. n_classes - 1; found negative labels "
            f"{np.unique(y[y < 0])[:5].tolist()} (map labels with np.unique(y, return_inverse=True))"
        )
    labels = y.astype(np.int64)
    if n_classes is not None:
        if not isinstance(n_classes, numbers.Integral) or isinstance(n_classes, bool) or n_classes < 2:
            raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
        n_classes = int(n_classes)
        if (labels >= n_classes).any():
            raise ValueError(
                f"{name} must hold class labels 0 .. {n_classes - 1} (n_classes = {n_classes}); "
                f"found {np.unique(labels[labels >= n_classes])[:5].tolist()}"
            )
        return labels, n_classes
    k = int(labels.max()) + 1
    if k < 2:
        raise ValueError(
            f"{name} has a single class (0); a multiclass loss needs n_classes >= 2 "
            "(pass n_classes explicitly if the other classes have no examples)"
        )
    missing = np.setdiff1d(np.arange(k), labels)
    if missing.size:
        raise ValueError(
            f"{name} has labels up to {k - 1} but classes {missing[:5].tolist()} have no examples; "
            "labels must be 0 .. n_classes - 1 (1-based labels: pass y - 1; other labels: "
            f"np.unique(y, return_inverse=True)), or pass n_classes={k} if the empty classes "
            "are intended"
        )
    return labels, k


class VectorLoss(Oracle):
    r"""Base class of losses of one score per class, :math:`l(W^T x_i, y_i)`, :math:`W` d x k.

    The variable is :math:`W` flattened in C order (``w.reshape(loss.shape)``), ``dim = d k``.
    With :math:`F = XW` (m x k, formed once per call: numba over CSR rows for sparse data,
    BLAS for dense):

    * value and subgradient: :math:`R = \sum_i c_i\, l(F_i, y_i)`,
      :math:`\partial R \ni X^T G` with row :math:`G_i = c_i\, \partial_f l(F_i, y_i)`
      ([TVSL10]_ App. A.4.1: "the gradient is :math:`G^T X`");
    * sup-subgradient along :math:`P`, with :math:`Q = XP`: per example the sup of
      :math:`\langle g_i, q_i\rangle` over the score-subdifferential (for max-type losses, the
      steepest piece among the tied maximisers, [YVGS10]_ Sec. 6.1), then :math:`X^T G`;
    * restriction to a line: :class:`VectorLine` keeps :math:`F` and :math:`Q`, so each
      evaluation is O(m k), independent of the number of features; max-type losses give its
      kinks (per-example upper envelopes), so ``LineFunction.minimize`` is exact.

    A subclass gives the per-example kernels (see :mod:`nsopt.losses._vector_kernels`), the
    scores being :math:`F + \eta Q`: ``_kernel_value(F, Q, eta)``, and either
    ``_kernel_grad(F, Q, eta, side, G)`` (a dense score-gradient matrix) or, with
    ``pair_gradient = True``, ``_kernel_pairs(F, Q, eta, side, plus, minus, coef)`` (rows
    :math:`G_i = \mathrm{coef}_i(e_{\mathrm{plus}_i} - e_{\mathrm{minus}_i})`, as for every
    hinge-type loss, so that :math:`X^T G` costs O(nnz) instead of O(nnz k)); a
    ``piecewise_linear`` loss gives ``_kernel_events(F, Q) -> (kinks, jumps, base)`` (its line's
    kinks, the slope jumps there and the slope at :math:`-\infty`), a smooth one
    ``_kernel_slope(F, Q, eta, side)`` and ``_kernel_breakpoints(F, Q)`` (empty).

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    n_outputs : int
        k, the number of classes or labels.
    sample_weight : array (m,), optional
        Nonnegative weights; the risk is their weighted mean.

    Attributes
    ----------
    shape : (d, k)
    dim : d * k
    tie_rtol : float
        Relative tolerance deciding ties between pieces (oracle and line search alike).
    """

    lower_bound: float = 0.0
    tie_rtol: float = 1e-12
    pair_gradient: bool = False
    piecewise_linear: bool = False
    #: names of the per-example attributes (labels), sliced with the rows of X by _subset
    _example_arrays: tuple = ()

    def __init__(self, X, n_outputs: int, sample_weight=None):
        X = check_data(X)
        m, d = X.shape
        self.data = DataMatrix(X)
        self.c = check_sample_weight(sample_weight, m)
        self.m, self.n_features, self.n_outputs = m, d, int(n_outputs)
        self.shape = (d, self.n_outputs)
        self.dim = d * self.n_outputs
        self._select_passes()

    def _select_passes(self):
        """Threaded sparse passes only when they have enough work (see _vector_kernels)."""
        dm = self.data
        if dm.sparse:
            nnz = dm.csr.nnz
            many = nnz * self.n_outputs >= _PARALLEL_MIN_WORK
            self._matmat = _vk.csr_matmat if many else _vk.csr_matmat_serial
            self._rmatmat = _vk.csc_rmatmat if many else _vk.csc_rmatmat_serial
            self._pull_pairs_kernel = (_vk.csc_pull_pairs if nnz >= _PARALLEL_MIN_WORK
                                       else _vk.csc_pull_pairs_serial)

    def __repr__(self):
        kind = "sparse" if self.data.sparse else "dense"
        return f"{type(self).__name__}(m={self.m}, d={self.n_features}, k={self.n_outputs}, {kind})"

    # --- what a subclass gives --------------------------------------------------------
    def _kernel_value(self, F, Q, eta) -> float:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}._kernel_value is not implemented")

    def _kernel_pairs(self, F, Q, eta, side, plus, minus, coef) -> float:  # pragma: no cover
        raise NotImplementedError(f"{type(self).__name__}._kernel_pairs is not implemented")

    def _kernel_grad(self, F, Q, eta, side, G) -> float:
        if not self.pair_gradient:  # pragma: no cover - abstract
            raise NotImplementedError(f"{type(self).__name__}._kernel_grad is not implemented")
        plus, minus, coef, r = self._pairs(F, Q, eta, side)
        G[:] = 0.0
        rows = np.arange(F.shape[0])
        np.add.at(G, (rows, plus), coef)
        np.add.at(G, (rows, minus), -coef)
        return r

    def _pairs(self, F, Q, eta, side):
        m = F.shape[0]
        plus = np.empty(m, dtype=np.int64)
        minus = np.empty(m, dtype=np.int64)
        coef = np.empty(m)
        r = self._kernel_pairs(F, Q, eta, side, plus, minus, coef)
        return plus, minus, coef, float(r)

    def _kernel_slope(self, F, Q, eta, side) -> float:
        G = np.empty_like(F)
        self._kernel_grad(F, Q, eta, side, G)
        return float(np.vdot(G, Q))

    def _kernel_breakpoints(self, F, Q) -> np.ndarray | None:
        """Sorted kinks in eta of a smooth loss's line (empty); None if unknown."""
        return None

    def _tie_scale(self):
        """``(gmax, dmax)`` of the tie tolerance ``tie_rtol (1 + dmax + 2 gmax big)`` of the
        per-example kernels (``big`` the largest score magnitude of the example)."""
        return 1.0, 0.0

    def _kernel_events(self, F, Q):  # pragma: no cover - abstract
        """``(kinks, jumps, base)`` of a piecewise-linear loss's line (see VectorLine)."""
        raise NotImplementedError(f"{type(self).__name__}._kernel_events is not implemented")

    def _kernel_events_window(self, F, Q, lo, hi):
        """``(kinks, jumps, slope at lo+)`` of the kinks in ``(lo, hi]`` only (finite
        ``lo < hi``), the same numbers as :meth:`_kernel_events`'s there; None if the loss
        finds its kinks only all at once."""
        return None

    # --- data passes ------------------------------------------------------------------
    #: with an intercept (:func:`nsopt.losses._intercept.with_intercept`) the variable is
    #: ``(W, b)`` flattened, ``W`` d x k then ``b`` (k): the scores are ``X W + 1 b^T``
    _intercept: bool = False

    def _scores(self, w: np.ndarray) -> np.ndarray:
        """``F = X W`` (m x k, C order) for flattened ``w`` (``X W + 1 b^T`` with an
        intercept: ``w`` is then ``(W, b)``, the last k entries the intercepts)."""
        W = w.reshape(self.shape)
        if self._intercept:
            W, b = W[:-1], W[-1]
        dm = self.data
        if not dm.sparse:
            out = np.ascontiguousarray(dm.X @ W)
        else:
            out = np.empty((self.m, self.n_outputs))
            X = dm.csr
            self._matmat(X.indptr, X.indices, X.data, np.ascontiguousarray(W), out)
        if self._intercept:
            out += b
        return out

    def _pull_pairs(self, plus, minus, coef) -> np.ndarray:
        """``X^T G`` flattened, for ``G_i = coef_i (e_plus_i - e_minus_i)``, in O(nnz)."""
        dm = self.data
        out = np.empty(self.shape)
        body = out[:-1] if self._intercept else out
        if dm.sparse:
            X = dm.csc
            self._pull_pairs_kernel(X.indptr, X.indices, X.data, plus, minus, coef, body)
        else:
            _vk.dense_pull_pairs(dm.X, plus, minus, coef, body)
        if self._intercept:  # the intercepts' column of ones: sum_i coef_i (e_plus - e_minus)
            k = self.n_outputs
            out[-1] = (np.bincount(plus, weights=coef, minlength=k)
                       - np.bincount(minus, weights=coef, minlength=k))
        return out.reshape(-1)

    def _pull(self, G: np.ndarray) -> np.ndarray:
        """``X^T G`` flattened in C order."""
        dm = self.data
        if self._intercept:
            return np.concatenate((self._pull_body(G), G.sum(axis=0)))
        return self._pull_body(G)

    def _pull_body(self, G: np.ndarray) -> np.ndarray:
        dm = self.data
        if not dm.sparse:
            return np.ascontiguousarray(dm.X.T @ G).reshape(-1)
        out = np.empty((self.n_features, self.n_outputs))
        X = dm.csc
        self._rmatmat(X.indptr, X.indices, X.data, G, out)
        return out.reshape(-1)

    # --- oracle -------------------------------------------------------------------------
    def _value(self, w):
        F = self._scores(w)
        return float(self._kernel_value(F, F, 0.0))

    def _value_and_subgradient(self, w):
        F = self._scores(w)
        if self.pair_gradient:
            plus, minus, coef, r = self._pairs(F, F, 0.0, 0)
            return r, self._pull_pairs(plus, minus, coef)
        G = np.empty_like(F)
        r = self._kernel_grad(F, F, 0.0, 0, G)
        return float(r), self._pull(G)

    def _sup_subgradient(self, w, p):
        F = self._scores(w)
        Q = self._scores(p)
        if self.pair_gradient:
            plus, minus, coef, _ = self._pairs(F, Q, 0.0, 1)
            rows = np.arange(F.shape[0])
            s = float(coef @ (Q[rows, plus] - Q[rows, minus]))
            return s, self._pull_pairs(plus, minus, coef)
        G = np.empty_like(F)
        self._kernel_grad(F, Q, 0.0, 1, G)
        return float(np.vdot(G, Q)), self._pull(G)

    def _restrict(self, w, p):
        return VectorLine(self, self._scores(w), self._scores(p))

    # --- evaluation from known scores (LS-BMRM's kept scores, issue 11) ------------------
    @property
    def scores_supported(self) -> bool:
        r"""True when the loss's line is a function of its scores :math:`F = XW` alone
        (:meth:`scores`, :meth:`restrict_scores`); False when a subclass or an instance
        overrides ``_scores``, ``_restrict`` or ``_value_and_subgradient``."""
        for name in ("_scores", "_value_and_subgradient", "_restrict"):
            if name in self.__dict__ or getattr(type(self), name) is not getattr(VectorLoss, name):
                return False
        return True

    def scores(self, w: np.ndarray) -> np.ndarray:
        r"""The scores :math:`F = XW` (m x k; with intercepts :math:`XW + 1 b^T`): one
        ``X W`` pass. Linear in ``w``: the scores of :math:`\alpha w_1 + \beta w_2` are
        :math:`\alpha F_1 + \beta F_2` (O(m k), no pass), so a solver that keeps two points'
        scores restricts the loss to the line through them without the data
        (:meth:`restrict_scores`)."""
        return self._scores(w)

    def restrict_scores(self, F: np.ndarray, Q: np.ndarray) -> "VectorLine":
        r"""The line :math:`\varphi(\eta) = \sum_i c_i\, l(F_i + \eta Q_i, y_i)` through the
        point whose scores are ``F`` along the direction whose scores are ``Q`` (:math:`Q =
        XP`): :meth:`restrict` without its two ``X W`` passes. The arrays are kept, not
        copied: do not mutate them while the line is in use."""
        return VectorLine(self, F, Q)

    # --- parts of the risk (SGD warm starts, one model per group of examples) -----------
    def _subset(self, rows, c) -> "VectorLoss":
        """The same loss on the examples ``rows`` with weights ``c`` (not renormalised)."""
        sub = copy.copy(self)
        sub.__dict__.pop("_group_parts", None)
        sub.data = DataMatrix(self.data.X[rows])
        sub.m = len(c)
        sub.c = np.ascontiguousarray(c, dtype=np.float64)
        for name in self._example_arrays:
            setattr(sub, name, np.ascontiguousarray(getattr(self, name)[rows]))
        sub._select_passes()
        return sub

    def batch_subgradient(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """A subgradient of the unweighted mean loss over the examples ``rows`` (for SGD)."""
        rows = np.asarray(rows, dtype=np.int64)
        sub = self._subset(rows, np.full(rows.size, 1.0 / rows.size))
        return sub._value_and_subgradient(check_vector(w, self.dim, "w"))[1]

    def group_value_and_subgradients(self, w: np.ndarray, n_groups: int):
        """The risk split over ``n_groups`` contiguous groups of examples.

        Returns ``(values, subgradients)`` of shapes ``(P,)`` and ``(P, dim)`` with
        ``values.sum() == R(w)`` and ``subgradients.sum(0)`` a subgradient of ``R`` at ``w``:
        the partial risks :math:`R_p` of P-BMRM ([UF12]_ Sec. 3.3).
        """
        w = check_vector(w, self.dim, "w")
        _, parts = cached_group_parts(
            self, n_groups, lambda s, e: self._subset(slice(s, e), self.c[s:e]))
        n_groups = len(parts)
        values = np.empty(n_groups)
        subgradients = np.empty((n_groups, self.dim))
        for p, part in enumerate(parts):
            values[p], subgradients[p] = part._value_and_subgradient(w)
        return values, subgradients

    # --- predictions --------------------------------------------------------------------
    def decision_function(self, X, w) -> np.ndarray:
        """Scores ``X W`` (m x k) for new data ``X``."""
        X = check_data(X)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features but the loss was built with {self.n_features}")
        W = check_vector(w, self.dim, "w").reshape(self.shape)
        return np.asarray(X @ W)


class VectorLine(LineFunction):
    r""":math:`\varphi(\eta) = \sum_i c_i\, l(F_i + \eta Q_i, y_i)` for fixed :math:`F = XW`,
    :math:`Q = XP`: each value is O(m k), independent of the number of features.

    For a piecewise-linear (hinge-type) loss the kinks of every example's upper envelope of
    lines ([YVGS10]_ Alg. 4) and the slope jumps there are found once, O(m k log k) on the
    first ``derivative`` or ``breakpoints`` call; the one-sided derivative at any
    :math:`\eta` is then the slope at :math:`-\infty` plus the jumps at the kinks left of
    :math:`\eta` (right: kinks :math:`\le \eta`, left: :math:`< \eta`), a binary search, as in
    the event walk of [YVGS10]_ Alg. 5. ``jumps()`` gives the kinks and jumps unsorted, so the
    sum with a regularizer's line is minimised by one compiled selection and two derivative
    checks (:meth:`LineFunction.minimize`); ``breakpoints()`` are the sorted kinks, for lines
    without that sweep (O(log) derivative evaluations). A smooth loss has no breakpoints and
    O(m k) derivatives.

    ``jumps_from(lo, horizon)`` gives the kinks in ``(lo, horizon]`` only, where the loss can
    find them per window (margin losses: each example's envelope on the window,
    :func:`~nsopt.losses._vector_kernels.margin_events_window`, O(k) for an example without a
    kink there): the exact search asks for the window up to the quadratic's bound
    (:func:`nsopt.oracle._minimize_by_jumps`), and ls-BMRM's steps stop at 1-5 % of it. Until
    all kinks are known, a one-sided derivative is one pass over the scores with the oracle's
    tie rule (O(m k), a tenth of a full envelope on letter); after
    ``_PASSES_BEFORE_TABLE`` such passes (a Wolfe search) the full table is built.
    """

    #: derivative passes over the scores after which the whole event table is built
    _PASSES_BEFORE_TABLE = 4

    cheap_derivative = True

    def __init__(self, loss: VectorLoss, F: np.ndarray, Q: np.ndarray):
        self.loss, self.F, self.Q = loss, F, Q
        self._raw = None
        self._events = None
        self._window = None
        self._passes = 0

    def value(self, eta):
        return float(self.loss._kernel_value(self.F, self.Q, float(eta)))

    def _raw_events(self):
        """``(kinks, jumps, base)`` of the loss's envelope walk, unsorted, computed once."""
        if self._raw is None:
            self._raw = self.loss._kernel_events(self.F, self.Q)
        return self._raw

    def jumps(self):
        r"""For a piecewise-linear loss, every example's envelope kinks (unsorted) and the
        jump of :math:`\varphi'` at each (the events of [YVGS10]_ Alg. 5): the sum with an
        L2 regularizer's line is then minimised by one compiled selection
        (:func:`nsopt._line_search_kernels.first_crossing`) and two derivative checks, instead
        of a bisection whose every step lands on a kink, where the tie rule needs a pass
        over the scores. None for a smooth loss."""
        if not self.loss.piecewise_linear:
            return None
        kinks, jumps, _ = self._raw_events()
        return kinks, jumps

    def jumps_from(self, lo, horizon):
        r"""The kinks in ``(lo, reach]`` and the jumps there (:meth:`LineFunction.jumps_from`):
        the window ``(lo, horizon]`` for a loss that finds kinks per window, unless all are
        known already; all of them (``reach = inf``) otherwise. None for a smooth loss."""
        if not self.loss.piecewise_linear:
            return None
        lo, horizon = float(lo), float(horizon)
        if self._raw is None and math.isfinite(lo):
            if not horizon > lo:
                return np.empty(0), np.empty(0), lo
            if math.isfinite(horizon):
                w = self._window
                if w is None or w[0] != lo or w[1] < horizon:
                    found = self.loss._kernel_events_window(self.F, self.Q, lo, horizon)
                    if found is not None:
                        w = self._window = (lo, horizon, found[0], found[1])
                if w is not None and w[0] == lo and w[1] >= horizon:
                    return w[2], w[3], w[1]
        kinks, jumps = self.jumps()
        return kinks, jumps, math.inf

    def _event_table(self):
        if self._events is None:
            loss = self.loss
            kinks, jumps, base = self._raw_events()
            order = np.argsort(kinks)
            # tie radius in eta: the oracle ties pieces within tol(eta) = tie_rtol (1 + dmax
            # + 2 gmax (max|F| + |eta| max|Q|)) in value; two pieces meeting at a kink with
            # slope difference >= min(jumps) / max(c) are that close within tol / that of it
            r0 = r1 = 0.0
            if kinks.size:
                gmax, dmax = loss._tie_scale()
                slope = float(jumps.min()) / float(loss.c.max())
                if slope > 0.0:
                    t = 2.0 * loss.tie_rtol / slope  # 2: margin for the rounded kink location
                    r0 = t * (1.0 + dmax + 2.0 * gmax * float(np.abs(self.F).max()))
                    r1 = t * 2.0 * gmax * float(np.abs(self.Q).max())
                else:
                    r0 = np.inf
            self._events = (kinks[order], np.cumsum(jumps[order]), float(base), r0, r1)
        return self._events

    def derivative(self, eta, side=1):
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side}")
        eta = float(eta)
        if not self.loss.piecewise_linear:
            return float(self.loss._kernel_slope(self.F, self.Q, eta, int(side)))
        if self._raw is None and self._passes < self._PASSES_BEFORE_TABLE:
            # the kinks are not all known (a search walks a window of them): one pass over
            # the scores with the oracle's tie rule, instead of every example's envelope
            self._passes += 1
            return self._tie_rule_derivative(eta, side)
        kinks, cum, base, r0, r1 = self._event_table()
        r = r0 + r1 * abs(eta)
        if kinks.size and (np.searchsorted(kinks, eta + r, side="right")
                           > np.searchsorted(kinks, eta - r, side="left")):
            # a kink within the tie tolerance of eta: which side of it eta lies on is decided
            # by rounding, so decide the tie as the oracle does (steepest tied piece,
            # [YVGS10] Sec. 6.1)
            return self._tie_rule_derivative(eta, side)
        j = int(np.searchsorted(kinks, eta, side="right" if side == 1 else "left"))
        return base + float(cum[j - 1]) if j else base

    def _tie_rule_derivative(self, eta, side):
        """The one-sided derivative from the steepest tied pieces (the oracle's rule)."""
        plus, minus, coef, _ = self.loss._pairs(self.F, self.Q, eta, int(side))
        rows = np.arange(self.F.shape[0])
        return float(coef @ (self.Q[rows, plus] - self.Q[rows, minus]))

    def breakpoints(self):
        if self.loss.piecewise_linear:
            return self._event_table()[0]
        return self.loss._kernel_breakpoints(self.F, self.Q)
