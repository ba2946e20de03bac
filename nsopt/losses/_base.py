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

A subclass gives two compiled kernels (see :mod:`nsopt.losses._kernels`), the kink positions
and the label check; about 30 lines of element-wise math.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_binary_labels, check_data, check_targets, check_vector
from ..oracle import LineFunction, Oracle
from ._kernels import DataMatrix

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

    @staticmethod
    def _value_kernel(z, y, c):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def _grad_kernel(z, y, c, side, out):  # pragma: no cover - abstract
        raise NotImplementedError

    def kinks(self) -> np.ndarray | None:
        """Score values ``z`` (shape (m,) or (m, k)) where ``l(., y_i)`` is not smooth, or None."""
        return None

    def __init__(self, X, y, sample_weight=None):
        X = check_data(X)
        m, d = X.shape
        self.data = DataMatrix(X)
        self.y = check_binary_labels(y, m) if self.binary else check_targets(y, m)
        if sample_weight is None:
            self.c = np.full(m, 1.0 / m)
        else:
            s = check_vector(sample_weight, m, "sample_weight")
            if (s < 0).any() or s.sum() <= 0:
                raise ValueError("sample_weight must be nonnegative with a positive sum")
            self.c = s / s.sum()
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

    # --- predictions --------------------------------------------------------------------
    def decision_function(self, X, w) -> np.ndarray:
        """Scores ``X w`` for new data ``X``."""
        X = check_data(X)
        return np.asarray(X @ check_vector(w, self.dim, "w")).reshape(-1)


class ScalarLine(LineFunction):
    r""":math:`\varphi(\eta) = \sum_i c_i\, l(f_i + \eta q_i, y_i)` for fixed :math:`f = Xw`,
    :math:`q = Xp`: each evaluation is O(m), independent of the number of features."""

    def __init__(self, loss: ScalarLoss, f: np.ndarray, q: np.ndarray):
        self.loss, self.f, self.q = loss, f, q
        self._sign = np.sign(q)
        self._buf = np.empty_like(f)

    def value(self, eta):
        return float(self.loss._value_kernel(self.f + eta * self.q, self.loss.y, self.loss.c))

    def derivative(self, eta, side=1):
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side}")
        z = self.f + eta * self.q
        self.loss._grad_kernel(z, self.loss.y, self.loss.c, side * self._sign, self._buf)
        return float(self._buf @ self.q)

    def breakpoints(self):
        kinks = self.loss.kinks()
        if kinks is None:
            return np.empty(0)
        nz = self.q != 0
        k = kinks[nz]
        f, q = self.f[nz], self.q[nz]
        if k.ndim == 2:
            f, q = f[:, None], q[:, None]
        return np.sort(((k - f) / q).ravel())
