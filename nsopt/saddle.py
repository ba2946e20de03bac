r"""Losses in saddle form, :math:`R(w) = \max_{\alpha\in Q}\langle\alpha, b - Zw\rangle`.

A loss that can be written so answers ``loss.saddle_form()`` with a :class:`SaddleForm`
(the hinge, the multiclass hinges, a user's own loss); Nesterov's excessive-gap method
(:class:`~nsopt.solvers.ExcessiveGap`, [SZV09]_) and saddle-point certificates ask for it,
never for the loss's class.

References
----------
.. [SZV09] X. Zhang, A. Saha, S. V. N. Vishwanathan. Smoothing multivariate performance
   measures. JMLR 13, 2012 (arXiv 2009).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

__all__ = ["SaddleForm", "saddle_form"]


class SaddleForm(NamedTuple):
    r"""A loss written as :math:`R(w) = \max_{\alpha\in Q}\langle\alpha, b - Zw\rangle`.

    ``matvec(w)`` is :math:`Zw` and ``rmatvec(alpha)`` is :math:`Z^T\alpha` (a vector of the
    problem's dimension); dual points have any fixed shape (``(m,)`` or ``(m, k)``).
    ``project`` is the Euclidean projection onto :math:`Q`, ``center`` the prox-centre
    :math:`\alpha_c \in Q` and ``radius_sq`` a bound :math:`D_2 \ge \max_Q \tfrac12\|\alpha -
    \alpha_c\|^2`. Every :math:`\alpha\in Q` gives the loss plane
    :math:`R(v) \ge \langle -Z^T\alpha, v\rangle + \langle b, \alpha\rangle`.
    """

    matvec: Callable[[np.ndarray], np.ndarray]
    rmatvec: Callable[[np.ndarray], np.ndarray]
    offset: np.ndarray
    project: Callable[[np.ndarray], np.ndarray]
    center: np.ndarray
    radius_sq: float


def saddle_form(loss) -> SaddleForm | None:
    """``loss.saddle_form()``, or None when the loss has none."""
    own = getattr(loss, "saddle_form", None)
    return own() if callable(own) else None
