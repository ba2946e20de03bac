r"""Losses in saddle form, :math:`R(w) = \max_{\alpha\in Q}\langle\alpha, b - Zw\rangle`.

A loss that can be written so answers ``loss.saddle_form()`` with a :class:`SaddleForm`
(the hinge, the multiclass hinges, a user's own loss); Nesterov's excessive-gap method
(:class:`~nsopt.solvers.ExcessiveGap`, [SZV09]_) and saddle-point certificates ask for it,
never for the loss's class.

A loss with an unregularized intercept (``RegularizedRisk(..., fit_intercept=True)``, the loss
of :func:`nsopt.losses._intercept.with_intercept` on :math:`x = (w, b)`) has the form of its
base loss with one more block of :math:`Z` for the intercepts (:func:`saddle_form`), the same
:math:`Q`: a dual point then proves the plane of the loss with intercept, whose intercept slope
:math:`-Z_b^T\alpha` is zero exactly on the dual set of the bias-minimised loss.

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

    Dual points need not be numpy arrays (:mod:`nsopt.distributed_saddle`: handles to blocks
    kept on Dask workers, with ``+``, ``-``, scalar ``*`` and ``/``); such a form gives the
    three optional helpers, None for arrays: ``vdot(alpha, beta)`` the inner product of two
    dual points, ``evidence(alpha, plane)`` the checkable evidence (:mod:`nsopt.certificate`)
    of :math:`\alpha\in Q` with the solver's ``plane`` :math:`(-Z^T\alpha, \langle b,
    \alpha\rangle)`, and ``norm_sq()`` a bound on :math:`\|Z\|_2^2`. ``weights(alpha)``, when
    given, is the vector :math:`g` with ``rmatvec(alpha)`` computed as ``data.rdot(g)`` on the
    loss's own data (:class:`~nsopt.losses._kernels.DataMatrix`): sharded sums then continue
    the one-machine pass (:mod:`nsopt.distributed_saddle`, reduction ``"ordered"``).
    """

    matvec: Callable[[np.ndarray], np.ndarray]
    rmatvec: Callable[[np.ndarray], np.ndarray]
    offset: np.ndarray
    project: Callable[[np.ndarray], np.ndarray]
    center: np.ndarray
    radius_sq: float
    vdot: Callable | None = None
    evidence: Callable | None = None
    norm_sq: Callable | None = None
    weights: Callable | None = None


def saddle_form(loss) -> SaddleForm | None:
    r"""``loss.saddle_form()``, or None when the loss has none.

    For a loss with intercepts (``with_intercept``: ``loss.base_loss``, ``loss.n_intercepts``
    :math:`= k`, scores :math:`XW + 1b^T`, as if :math:`X` had a column of ones) the form on
    :math:`x = (w, b)` is :math:`Z = [Z_w\ Z_b]` with :math:`Z_w` the base loss's and
    :math:`Z_b` the base loss's form on the data :math:`1` (one column of ones), the same
    offsets, :math:`Q` and centre: :math:`R(w, b) = \max_{\alpha\in Q}\langle\alpha, b_0 -
    Z_w w - Z_b b\rangle`. For the Crammer-Singer hinge :math:`Z_b^T\alpha = C -
    \alpha^T 1` (class weights :math:`C_j = \sum_{y_i = j} c_i` minus the dual mass on class
    :math:`j`), for the binary hinge :math:`Z_b^T\alpha = y^T\alpha`."""
    base = getattr(loss, "base_loss", None)
    k = int(getattr(loss, "n_intercepts", 0) or 0)
    if base is not None and k > 0 and base is not loss:
        return _intercept_form(base, k)
    own = getattr(loss, "saddle_form", None)
    return own() if callable(own) else None


def _ones_loss(base, k: int):
    """A shallow copy of ``base`` whose data is one column of ones (k variables): its saddle
    form's :math:`Z` is the intercepts' block :math:`Z_b` (the losses build their forms from
    ``self.data`` and ``self.dim``)."""
    import copy

    from .losses._kernels import DataMatrix

    ones = copy.copy(base)
    ones.__dict__.pop("_group_parts", None)
    ones.data = DataMatrix(np.ones((base.data.shape[0], 1)))
    ones.dim = k
    if hasattr(base, "shape"):
        ones.shape = (1, k) if len(base.shape) == 2 else (1,)
    return ones


def _intercept_form(base, k: int) -> SaddleForm | None:
    own = getattr(base, "saddle_form", None)
    if not callable(own):
        return None
    form_w = own()
    form_b = _ones_loss(base, k).saddle_form()
    n = int(base.dim)

    def matvec(x):
        x = np.asarray(x, dtype=np.float64)
        return form_w.matvec(x[:n]) + form_b.matvec(x[n:])

    def rmatvec(alpha):
        return np.concatenate((np.ravel(form_w.rmatvec(alpha)), np.ravel(form_b.rmatvec(alpha))))

    return form_w._replace(matvec=matvec, rmatvec=rmatvec, weights=None)
