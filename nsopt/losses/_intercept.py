r"""A loss of linear scores with an unregularized intercept, on the variable ``x = (coef, b)``.

:func:`with_intercept` returns a shallow copy of a linear-model loss whose scores are
:math:`f = Xw + b` (scalar losses) or :math:`F = XW + 1 b^T` (vector losses, one intercept per
class or output), as if ``X`` had a column of ones (one per class), without copying ``X``: the
scores get ``+= b`` after the usual pass and the subgradient's intercept part is the sum of
the per-example derivatives, :math:`a_b = \sum_i g_i` (:math:`G^T 1` for vector losses). The
data passes per evaluation are the same as without the intercept, and so are the losses'
kernels, exact line searches, ``sup_subgradient`` and dual points (a margin loss's dual plane
:math:`-[X\ 1]^T(c\circ y\circ t)` gets the intercept component :math:`-\sum_i c_i y_i t_i`).

Ranking and pairwise losses (:mod:`nsopt.losses.multivariate`) compare scores of examples with
each other, so a common bias cancels out: they are refused, as are :class:`Novelty` (its
offset is its own ``rho``) and user oracles (no scores to shift).
"""
from __future__ import annotations

import copy

import numpy as np

from .._validation import check_vector
from ._base import ScalarLoss
from ._kernels import DataMatrix
from ._vector_base import VectorLoss

__all__ = ["with_intercept", "InterceptData", "intercept_support"]


class InterceptData(DataMatrix):
    """``[X 1]`` for the two passes of :class:`DataMatrix`, without forming it:
    ``dot(x) = X x[:-1] + x[-1]``, ``rdot(g) = (X^T g, sum(g))`` (``X`` is the data without
    the column of ones, what a fingerprint hashes)."""

    def __init__(self, base: DataMatrix):  # noqa: super().__init__ not called: no copy of X
        self.base = base
        self.sparse = base.sparse
        self.X = base.X
        self.shape = (base.shape[0], base.shape[1] + 1)

    def dot(self, w: np.ndarray) -> np.ndarray:
        out = self.base.dot(w[:-1])
        out += w[-1]
        return out

    def rdot(self, g: np.ndarray) -> np.ndarray:
        return np.append(self.base.rdot(g), g.sum())

    def rows(self, start: int, stop: int) -> "InterceptData":
        return InterceptData(DataMatrix(self.X[start:stop]))


def intercept_support(loss) -> str | None:
    """None when ``loss`` can take an intercept, else the reason it cannot."""
    from . import multivariate
    from .scalar import Novelty

    if isinstance(loss, Novelty):
        return ("Novelty has its own offset rho (a free intercept would make every example "
                "an inlier): fit_intercept=True is not meaningful for it")
    if isinstance(loss, (ScalarLoss, VectorLoss)):
        return None
    if type(loss).__module__ == multivariate.__name__:
        return (f"{type(loss).__name__} is a ranking/pairwise loss: it depends only on "
                "differences of scores, so a common bias cancels out; use fit_intercept=False")
    return (f"fit_intercept=True needs a linear-model loss of nsopt.losses (a scalar or vector "
            f"loss of scores X w), got {type(loss).__name__}")


def with_intercept(loss):
    """The loss on ``x = (coef, intercepts)`` (see the module docstring); the intercepts are the
    last ``n_intercepts`` entries (1 for a scalar loss, k for a vector loss)."""
    reason = intercept_support(loss)
    if reason is not None:
        raise ValueError(reason)
    new = copy.copy(loss)
    new.__dict__.pop("_group_parts", None)
    new.base_loss = loss
    if isinstance(loss, ScalarLoss):
        new.data = InterceptData(loss.data)
        new.dim = loss.dim + 1
        new.shape = (new.dim,)
        new.n_intercepts = 1
    else:
        d, k = loss.shape
        new._intercept = True
        new.shape = (d + 1, k)
        new.dim = (d + 1) * k
        new.n_intercepts = k
    # the saddle forms (excessive gap) are those of the loss without intercept
    new.saddle_form = None
    k = new.n_intercepts

    def decision_function(X, x):
        """Scores of new data ``X`` at ``x = (coef, intercept)``: ``X coef + intercept``."""
        x = check_vector(x, new.dim, "x")
        return loss.decision_function(X, x[:-k]) + x[-k:]

    new.decision_function = decision_function
    if isinstance(loss, ScalarLoss):
        def batch_subgradient(x, rows):
            """A subgradient of the unweighted mean loss over ``rows`` at ``x``, intercept last."""
            x = check_vector(x, new.dim, "x")
            Xb = loss.data.X[rows]
            z = np.asarray(Xb @ x[:-1]).reshape(-1) + x[-1]
            g = np.empty(z.size)
            loss._grad_kernel(z, loss.y[rows], np.full(z.size, 1.0 / z.size), np.zeros(z.size), g)
            return np.append(np.asarray(Xb.T @ g).reshape(-1), g.sum())

        new.batch_subgradient = batch_subgradient
    return new
