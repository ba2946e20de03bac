r"""Losses of one linear score :math:`f = \langle w, x\rangle` per example ([TVSL10]_ Table 5).

Each class gives :math:`l(f, y)`, its derivative and its kink convention; the chain rule,
sup-subgradient and line restriction come from :class:`~nsopt.losses._base.ScalarLoss`.

References
----------
.. [TVSL10] C. H. Teo et al. Bundle methods for regularized risk minimization. JMLR 2010.
.. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton approach
   to nonsmooth convex optimization problems in machine learning. JMLR 2010.
"""
from __future__ import annotations

import numpy as np

from . import _kernels as k
from ._base import ScalarLoss

__all__ = ["Hinge", "SquaredHinge", "Logistic"]


class Hinge(ScalarLoss):
    r"""Hinge loss :math:`l(f, y) = \max(0, 1 - y f)`, :math:`y \in \{-1, +1\}`.

    Derivative :math:`-y` where :math:`yf < 1`, :math:`0` where :math:`yf > 1`; at the kink
    :math:`yf = 1` the subdifferential is the segment between them: the default subgradient is
    0, and ``sup_subgradient`` picks the end steepest along the direction.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(100, 10, random_state=0)
    >>> nsopt.losses.Hinge(X, y).value(np.zeros(10))
    1.0
    """

    binary = True
    piecewise_quadratic = True
    _value_kernel = staticmethod(k.hinge_value)
    _grad_kernel = staticmethod(k.hinge_grad)

    def kinks(self):
        return self.y.copy()  # y z = 1  <=>  z = y for y = +-1

    def predict(self, X, w):
        return np.where(self.decision_function(X, w) >= 0, 1.0, -1.0)


class SquaredHinge(ScalarLoss):
    r"""Squared hinge :math:`l(f, y) = \tfrac12 \max(0, 1 - y f)^2` (differentiable).

    Derivative :math:`-y \max(0, 1 - yf)` (erratum E8: the printed "f - y" holds only for
    :math:`y = \pm 1`). Piecewise quadratic with a breakpoint of the second derivative at
    :math:`yf = 1`, so line searches are exact.
    """

    binary = True
    piecewise_quadratic = True
    _value_kernel = staticmethod(k.squared_hinge_value)
    _grad_kernel = staticmethod(k.squared_hinge_grad)

    def kinks(self):
        return self.y.copy()

    predict = Hinge.predict


class Logistic(ScalarLoss):
    r"""Logistic loss :math:`l(f, y) = \log(1 + e^{-y f})` (smooth).

    Derivative :math:`-y / (1 + e^{y f})` (erratum E20: the printed :math:`-y/(1 + e^{-yf})` is
    wrong); both evaluated without overflow.
    """

    binary = True
    _value_kernel = staticmethod(k.logistic_value)
    _grad_kernel = staticmethod(k.logistic_grad)

    predict = Hinge.predict

    def predict_proba(self, X, w):
        """Probability of the positive class, :math:`1 / (1 + e^{-f})`."""
        f = self.decision_function(X, w)
        return 0.5 * (1.0 + np.tanh(0.5 * f))
