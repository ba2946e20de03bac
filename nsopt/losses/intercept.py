r"""The hinge risk with an unregularized bias minimised inside, as a loss on :math:`w` alone.

:class:`InterceptHinge` is the loss of Pragam-b ([SZV09]_ eq. 20 and App. C): the binary hinge
with the bias :math:`b` minimised out, a convex function of :math:`w` with a saddle form whose
dual set is the box :math:`[0, c]` cut by :math:`y^T\alpha = 0`.
:func:`nsopt.solvers.excessive_gap.pragam_with_bias` solves
``RegularizedRisk(InterceptHinge(X, y), L2(), lam)`` with the excessive gap technique.

Not in ``nsopt.losses.__all__``: its ``sup_subgradient`` is the default (the subgradient of
``value_and_subgradient``, exact only where the risk is differentiable) and its ``restrict``
the generic line, not the exact ones every catalogue loss has (DESIGN.md Sec. 4). Import it
from this module.

References
----------
.. [SZV09] A. Saha, X. Zhang, S. V. N. Vishwanathan. Lower bounds for BMRM and faster rates for
   training SVMs. arXiv:0909.1334, 2009. Sec. 4, eqs. (20)-(22), App. B, C.
"""
from __future__ import annotations

import numpy as np

from ..oracle import Oracle
from ..saddle import SaddleForm
from .scalar import Hinge

__all__ = ["InterceptHinge"]


class InterceptHinge(Oracle):
    r"""The hinge risk minimised over an unregularized bias, a convex function of :math:`w`:

    .. math:: R_b(w) = \min_{b\in\mathbb{R}} \sum_i c_i\,[1 - y_i(\langle x_i, w\rangle + b)]_+
              = \max_{\alpha\in[0, c],\ y^T\alpha = 0} \sum_i \alpha_i (1 - y_i\langle x_i, w\rangle)

    ([SZV09]_ eq. 20 and App. C), with example weights :math:`c_i` (:math:`1/m`, or the
    normalised ``sample_weight``, as :class:`~nsopt.losses.Hinge`). The inner minimum is a
    weighted quantile of the kinks :math:`y_i - \langle x_i, w\rangle`; the subgradient is
    :math:`-X^T(y\circ\alpha)` with the dual :math:`\alpha` balanced at the tied kinks so that
    :math:`y^T\alpha = 0` (Danskin for a partial minimum needs the b-component of the
    subgradient to vanish). :meth:`intercept` gives the optimal bias at a point.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> from nsopt.losses.intercept import InterceptHinge
    >>> X, y = nsopt.datasets.make_sparse_binary(100, 5, random_state=0)
    >>> loss = InterceptHinge(X, y)
    >>> bool(loss.value(np.zeros(5)) <= nsopt.losses.Hinge(X, y).value(np.zeros(5)))
    True
    """

    lower_bound = 0.0

    def __init__(self, X, y, sample_weight=None):
        self.hinge = Hinge(X, y, sample_weight)
        self.data, self.y, self.c = self.hinge.data, self.hinge.y, self.hinge.c
        self.dim, self.m = self.hinge.dim, self.hinge.m

    def intercept(self, w) -> float:
        """The optimal bias at ``w``."""
        return self._fit(self.data.dot(self._point(w)))[0]

    def _fit(self, f):
        y, c = self.y, self.c
        kinks = y - f
        order = np.argsort(kinks, kind="stable")
        target = float(c[y > 0].sum())
        cum = np.cumsum(c[order])
        j = min(int(np.searchsorted(cum, target * (1 - 1e-15), side="left")), kinks.size - 1)
        b = float(kinks[order[j]])
        margin = y * (kinks - b)            # 1 - y_i (f_i + b)
        alpha = np.where(margin > 0, c, 0.0)
        tied = kinks == b
        need = -float(y @ alpha)            # what the tied examples must bring to y^T alpha
        pos, neg = tied & (y > 0), tied & (y < 0)
        wp, wn = float(c[pos].sum()), float(c[neg].sum())
        if need > 0 and wp > 0:
            alpha[pos] = c[pos] * min(1.0, need / wp)
        elif need < 0 and wn > 0:
            alpha[neg] = c[neg] * min(1.0, -need / wn)
        return b, float(c @ np.maximum(margin, 0.0)), alpha

    def _value(self, w):
        return self._fit(self.data.dot(w))[1]

    def _value_and_subgradient(self, w):
        _, r, alpha = self._fit(self.data.dot(w))
        return r, -self.data.rdot(self.y * alpha)

    def saddle_form(self) -> SaddleForm:
        """The hinge's form (:meth:`Hinge.saddle_form <nsopt.losses.Hinge.saddle_form>`: the
        same :math:`Z`, :math:`b` and centre) with :math:`Q` cut by :math:`y^T\\alpha = 0`,
        projected in O(m) (:func:`nsopt.inner._box_equality.project_box_equality`)."""
        from ..inner._box_equality import project_box_equality  # as vector.py: inner is above losses

        y, c = self.y, self.c
        return self.hinge.saddle_form()._replace(
            project=lambda v: project_box_equality(v, y, 0.0, c, 0.0))
