r"""The chain rule for losses of linear scores, written once.

A scalar loss is :math:`R(w) = \sum_i c_i\, l(\langle x_i, w\rangle, y_i)` with weights
:math:`c_i = s_i / \sum_j s_j` (the mean when there are no sample weights). With
:math:`f = Xw`:

* value and subgradient: :math:`a = X^T g`, :math:`g_i = c_i\, l'(f_i, y_i)`
  ([TVSL10]_ Alg. 6);
* sup-subgradient along :math:`p`, with :math:`q = Xp`: :math:`R'(w; p) = \sum_i c_i\,
  l'(f_i, y_i; \mathrm{sign}(q_i))\, q_i`, the right derivative where :math:`q_i > 0` and the left
  one where :math:`q_i < 0`; the subgradient built from those one-sided derivatives attains it
  ([YVGS10]_ Sec. 3);
* restriction to a line: :math:`\varphi(\eta) = \sum_i c_i\, l(f_i + \eta q_i, y_i)`, O(m) per
  evaluation after the two products :math:`f = Xw`, :math:`q = Xp`; its breakpoints are where
  some :math:`f_i + \eta q_i` hits a kink of :math:`l`.

A subclass gives two compiled kernels (see :mod:`nsopt.losses._kernels`) with the names of
their extra parameters, the kink positions and the label check; about 30 lines of element-wise
math.
"""
from __future__ import annotations

import numpy as np

from .._validation import (check_binary_labels, check_data, check_sample_weight,
                           check_targets, check_vector)
from ..oracle import LineFunction, Oracle
from ._kernels import DataMatrix
from ._kernels import dot as _dot

__all__ = ["ScalarLoss", "ScalarLine"]


class ScalarLoss(Oracle):
    """Base class of losses of one linear score per example, ``l(<x_i, w>, y_i)``.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,)
    sample_weight : array (m,), optional
        Nonnegative weights; the risk is their weighted mean.
    """

    binary: bool = False
    lower_bound: float = 0.0
    piecewise_quadratic: bool = False

    #: compiled element-wise kernels (:mod:`nsopt.losses._kernels`), set by each subclass:
    #: ``value_kernel(z, y, c, *params) -> sum_i c_i l(z_i, y_i)`` and
    #: ``grad_kernel(z, y, c, side, out, *params)`` (writes ``c_i l'(z_i, y_i; side_i)``)
    value_kernel = None
    grad_kernel = None
    #: names of the attributes passed to both kernels after their common arguments
    kernel_params: tuple[str, ...] = ()

    def _value_kernel(self, z, y, c):
        return self.value_kernel(z, y, c, *[getattr(self, n) for n in self.kernel_params])

    def _grad_kernel(self, z, y, c, side, out):
        return self.grad_kernel(z, y, c, side, out, *[getattr(self, n) for n in self.kernel_params])

    def kinks(self) -> np.ndarray | None:
        """Score values ``z`` (shape (m,) or (m, k)) where ``l(., y_i)`` is not smooth, or None."""
        return None

    def __init__(self, X, y, sample_weight=None):
        X = check_data(X)
        m, d = X.shape
        self.data = DataMatrix(X)
        self.y = check_binary_labels(y, m) if self.binary else check_targets(y, m)
        self.c = check_sample_weight(sample_weight, m)
        self.m, self.dim = m, d
        self.shape = (d,)

    def __repr__(self):
        kind = "sparse" if self.data.sparse else "dense"
        return f"{type(self).__name__}(m={self.m}, d={self.dim}, {kind})"

    # --- oracle -------------------------------------------------------------------------
    def _value(self, w):
        return self._value_kernel(self.data.dot(w), self.y, self.c)

    def _value_and_subgradient(self, w):
        z = self.data.dot(w)
        g = np.empty(self.m)
        r = self._grad_kernel(z, self.y, self.c, np.zeros(self.m), g)
        return r, self.data.rdot(g)

    def _sup_subgradient(self, w, p):
        z = self.data.dot(w)
        q = self.data.dot(p)
        g = np.empty(self.m)
        self._grad_kernel(z, self.y, self.c, np.sign(q), g)
        return float(g @ q), self.data.rdot(g)

    def _restrict(self, w, p):
        return ScalarLine(self, self.data.dot(w), self.data.dot(p))

    def group_value_and_subgradients(self, w: np.ndarray, n_groups: int):
        """The risk split over ``n_groups`` contiguous groups of examples, in one data pass.

        Returns ``(values, subgradients)`` of shapes ``(P,)`` and ``(P, d)`` with
        ``values.sum() == R(w)`` and ``subgradients.sum(0)`` a subgradient of ``R`` at ``w``:
        the partial risks :math:`R_p` of P-BMRM ([UF12]_ Sec. 3.3).
        """
        return self._group_evaluate(w, n_groups)[:2]

    def _group_evaluate(self, w: np.ndarray, n_groups: int):
        """:meth:`group_value_and_subgradients` and the dual point of the whole risk (None
        unless a margin loss): part ``p``'s plane is that of ``t`` restricted to its rows."""
        bounds = np.linspace(0, self.m, int(n_groups) + 1).astype(np.int64)
        if np.any(np.diff(bounds) == 0):
            raise ValueError(f"cannot split {self.m} examples into {n_groups} non-empty groups")
        parts = self.__dict__.get("_group_data")
        if parts is None or len(parts) != n_groups:
            X = self.data.X
            parts = [DataMatrix(X[s:e]) for s, e in zip(bounds[:-1], bounds[1:])]
            self.__dict__["_group_data"] = parts
        z = self.data.dot(w)
        g = np.empty(self.m)
        self._grad_kernel(z, self.y, self.c, np.zeros(self.m), g)
        values = np.empty(n_groups)
        subgradients = np.empty((n_groups, self.dim))
        for p, (s, e) in enumerate(zip(bounds[:-1], bounds[1:])):
            values[p] = self._value_kernel(z[s:e], self.y[s:e], self.c[s:e])
            subgradients[p] = parts[p].rdot(g[s:e])
        return values, subgradients, self._dual_of_gradient(g)

    def _value_subgradient_dual(self, w):
        """``(R(w), a, t)``: value and subgradient as :meth:`value_and_subgradient`, and for a
        margin loss the dual point :math:`t_i = -y_i g_i / c_i` (:math:`g_i = c_i l'(z_i, y_i)`
        the kernel's derivative), whose ``dual_plane(t)`` is the plane ``(a, R(w) - <a, w>)``
        (Fenchel-Young with equality at :math:`t`); None for other losses. Same data passes.
        A subclass or instance that overrides ``_value_and_subgradient`` is honoured (no dual
        point then: its planes are not known to be those of a dual point)."""
        if ("_value_and_subgradient" in self.__dict__
                or type(self)._value_and_subgradient is not ScalarLoss._value_and_subgradient):
            r, a = self._value_and_subgradient(w)
            return r, a, None
        z = self.data.dot(w)
        g = np.empty(self.m)
        r = self._grad_kernel(z, self.y, self.c, np.zeros(self.m), g)
        return r, self.data.rdot(g), self._dual_of_gradient(g)

    def _dual_of_gradient(self, g):
        if self.dual_upper is None:
            return None
        c = np.where(self.c > 0, self.c, 1.0)
        return np.clip(-self.y * g / c, 0.0, self.dual_upper)

    def batch_subgradient(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """A subgradient of the unweighted mean loss over the examples ``rows`` (for SGD)."""
        Xb = self.data.X[rows]
        z = np.asarray(Xb @ w).reshape(-1)
        g = np.empty(z.size)
        self._grad_kernel(z, self.y[rows], np.full(z.size, 1.0 / z.size), np.zeros(z.size), g)
        return np.asarray(Xb.T @ g).reshape(-1)

    # --- Fenchel dual (margin losses with a known conjugate) ----------------------------
    #: For a margin loss :math:`l(z, y) = \phi(yz)` with :math:`\phi' \le 0`, the dual
    #: variable of example i is :math:`t_i = -y_i\, l'(z_i, y_i) \in [0,` ``dual_upper`` :math:`]`
    #: and :math:`l^*(-y t, y) =` ``conjugate_terms(t)``. None: no dual interface.
    dual_upper: float | None = None

    def conjugate_terms(self, t: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """:math:`l^*(-y_i t_i, y_i)` per example, for ``t`` in the dual domain."""
        raise NotImplementedError

    def dual_curvature(self, t: np.ndarray) -> np.ndarray:
        """Metric for moving dual variables: :math:`l''` at the score matching ``t`` (the
        Hessian weights of the risk), 1 where the loss is piecewise linear."""
        return np.ones_like(t)

    def dual_variables(self, w: np.ndarray) -> np.ndarray:
        r""":math:`t_i = -y_i\, l'(\langle x_i, w\rangle, y_i)` (default subgradient), one
        data pass."""
        g = np.empty(self.m)
        self._grad_kernel(self.data.dot(w), self.y, self.c, np.zeros(self.m), g)
        c = np.where(self.c > 0, self.c, 1.0)
        return np.clip(-self.y * g / c, 0.0, self.dual_upper)

    def dual_plane(self, t: np.ndarray) -> tuple[np.ndarray, float]:
        r"""The plane of the dual point ``t``: :math:`R(v) \ge \langle a, v\rangle + b` for all
        v, with :math:`a = -X^T(c \circ y \circ t)`, :math:`b = -\sum_i c_i\, l^*(-y_i t_i,
        y_i)`, valid for every ``t`` in the domain (Fenchel-Young, example by example). One
        data pass."""
        t = np.clip(t, 0.0, self.dual_upper)
        return self.data.rdot(-self.c * self.y * t), -float(self.c @ self.conjugate_terms(t))

    # --- predictions --------------------------------------------------------------------
    def decision_function(self, X, w) -> np.ndarray:
        """Scores ``X w`` for new data ``X``."""
        X = check_data(X)
        return np.asarray(X @ check_vector(w, self.dim, "w")).reshape(-1)


class ScalarLine(LineFunction):
    r""":math:`\varphi(\eta) = \sum_i c_i\, l(f_i + \eta q_i, y_i)` for fixed :math:`f = Xw`,
    :math:`q = Xp`: each evaluation is O(m), independent of the number of features."""

    cheap_derivative = True

    def __init__(self, loss: ScalarLoss, f: np.ndarray, q: np.ndarray):
        self.loss, self.f, self.q = loss, f, q
        self._sign = np.sign(q)
        self._buf = np.empty_like(f)
        kinks = loss.kinks()
        self._kinks = None if kinks is None else np.asarray(kinks, dtype=np.float64)

    def _snap(self, z: np.ndarray, eta: float) -> np.ndarray:
        """Put scores within rounding of a kink exactly on it: at a computed breakpoint
        ``eta = (k - f_i)/q_i``, ``f_i + eta q_i`` may miss ``k`` by an ulp, and the one-sided
        derivatives would then describe the wrong side of the kink."""
        k = self._kinks
        if k is None or eta == 0:  # at eta = 0 the scores are exact: no rounding to undo
            return z
        scale = np.abs(self.f) + np.abs(eta * self.q)
        cols = k[:, None] if k.ndim == 1 else k
        for j in range(cols.shape[1]):
            kj = cols[:, j]
            near = np.abs(z - kj) <= 8 * np.finfo(np.float64).eps * (scale + np.abs(kj))
            z = np.where(near, kj, z)
        return z

    def value(self, eta):
        return float(self.loss._value_kernel(self.f + eta * self.q, self.loss.y, self.loss.c))

    def derivative(self, eta, side=1):
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side}")
        z = self._snap(self.f + eta * self.q, eta)
        self.loss._grad_kernel(z, self.loss.y, self.loss.c, side * self._sign, self._buf)
        return float(_dot(self._buf, self.q))

    def breakpoints(self):
        kinks = self.loss.kinks()
        if kinks is None:
            return np.empty(0)
        nz = self.q != 0
        k = kinks[nz]
        f, q = self.f[nz], self.q[nz]
        if k.ndim == 2:
            f, q = f[:, None], q[:, None]
        # a kink beyond the float range (|k - f| / |q| > 1.8e308, q subnormal) is +-inf: no
        # finite eta reaches it, and minimize drops it; no overflow warning for that
        with np.errstate(over="ignore"):
            return np.sort(((k - f) / q).ravel())


# ========================================================================================
# Vector losses: one score per class, f_i = W^T x_i
# ========================================================================================
import copy  # noqa: E402
import numbers  # noqa: E402

from . import _vector_kernels as _vk  # noqa: E402
from . import _kernels as _scalar_kernels  # noqa: E402

#: threaded sparse passes only from this many multiply-adds on (the scalar losses' threshold)
_PARALLEL_MIN_WORK = getattr(_scalar_kernels, "PARALLEL_MIN_NNZ", 200_000)

__all__ += ["VectorLoss", "VectorLine", "check_class_labels"]


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

    # --- data passes ------------------------------------------------------------------
    def _scores(self, w: np.ndarray) -> np.ndarray:
        """``F = X W`` (m x k, C order) for flattened ``w``."""
        W = w.reshape(self.shape)
        dm = self.data
        if not dm.sparse:
            return np.ascontiguousarray(dm.X @ W)
        out = np.empty((self.m, self.n_outputs))
        X = dm.csr
        self._matmat(X.indptr, X.indices, X.data, W, out)
        return out

    def _pull_pairs(self, plus, minus, coef) -> np.ndarray:
        """``X^T G`` flattened, for ``G_i = coef_i (e_plus_i - e_minus_i)``, in O(nnz)."""
        dm = self.data
        out = np.empty(self.shape)
        if dm.sparse:
            X = dm.csc
            self._pull_pairs_kernel(X.indptr, X.indices, X.data, plus, minus, coef, out)
        else:
            _vk.dense_pull_pairs(dm.X, plus, minus, coef, out)
        return out.reshape(-1)

    def _pull(self, G: np.ndarray) -> np.ndarray:
        """``X^T G`` flattened in C order."""
        dm = self.data
        if not dm.sparse:
            return np.ascontiguousarray(dm.X.T @ G).reshape(-1)
        out = np.empty(self.shape)
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

    # --- parts of the risk (SGD warm starts, one model per group of examples) -----------
    def _subset(self, rows, c) -> "VectorLoss":
        """The same loss on the examples ``rows`` with weights ``c`` (not renormalised)."""
        sub = copy.copy(self)
        sub.__dict__.pop("_group_losses", None)
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
        bounds = np.linspace(0, self.m, int(n_groups) + 1).astype(np.int64)
        if np.any(np.diff(bounds) == 0):
            raise ValueError(f"cannot split {self.m} examples into {n_groups} non-empty groups")
        parts = self.__dict__.get("_group_losses")
        if parts is None or len(parts) != n_groups:
            parts = [self._subset(slice(s, e), self.c[s:e]) for s, e in zip(bounds[:-1], bounds[1:])]
            self.__dict__["_group_losses"] = parts
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
    cheap_derivative = True
    r""":math:`\varphi(\eta) = \sum_i c_i\, l(F_i + \eta Q_i, y_i)` for fixed :math:`F = XW`,
    :math:`Q = XP`: each value is O(m k), independent of the number of features.

    For a piecewise-linear (hinge-type) loss the kinks of every example's upper envelope of
    lines ([YVGS10]_ Alg. 4) and the slope jumps there are found once, O(m k log k) on the
    first ``derivative`` or ``breakpoints`` call; the one-sided derivative at any
    :math:`\eta` is then the slope at :math:`-\infty` plus the jumps at the kinks left of
    :math:`\eta` (right: kinks :math:`\le \eta`, left: :math:`< \eta`), a binary search, as in
    the event walk of [YVGS10]_ Alg. 5. ``breakpoints()`` are those kinks, so the generic
    :meth:`LineFunction.minimize` (also on the sum with a regularizer's line) is exact and
    costs O(log) derivative evaluations. A smooth loss has no breakpoints and O(m k)
    derivatives.
    """

    def __init__(self, loss: VectorLoss, F: np.ndarray, Q: np.ndarray):
        self.loss, self.F, self.Q = loss, F, Q
        self._events = None

    def value(self, eta):
        return float(self.loss._kernel_value(self.F, self.Q, float(eta)))

    def _event_table(self):
        if self._events is None:
            loss = self.loss
            kinks, jumps, base = loss._kernel_events(self.F, self.Q)
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
        kinks, cum, base, r0, r1 = self._event_table()
        r = r0 + r1 * abs(eta)
        if kinks.size and (np.searchsorted(kinks, eta + r, side="right")
                           > np.searchsorted(kinks, eta - r, side="left")):
            # a kink within the tie tolerance of eta: which side of it eta lies on is decided
            # by rounding, so decide the tie as the oracle does (steepest tied piece, R8)
            plus, minus, coef, _ = self.loss._pairs(self.F, self.Q, eta, int(side))
            rows = np.arange(self.F.shape[0])
            return float(coef @ (self.Q[rows, plus] - self.Q[rows, minus]))
        j = int(np.searchsorted(kinks, eta, side="right" if side == 1 else "left"))
        return base + float(cum[j - 1]) if j else base

    def breakpoints(self):
        if self.loss.piecewise_linear:
            return self._event_table()[0]
        return self.loss._kernel_breakpoints(self.F, self.Q)
