r"""The regularized risk :math:`J(w) = \lambda\Omega(w) + R(w)`, the problem every BMRM-type
solver understands; any other solver sees it as a plain :class:`~nsopt.Oracle`."""
from __future__ import annotations

import math

import numpy as np

from ._validation import check_positive
from .oracle import Evaluation, Oracle
from .regularizers import L2, Regularizer

__all__ = ["RegularizedRisk", "as_problem"]


class RegularizedRisk(Oracle):
    r"""Regularized risk :math:`J(w) = \lambda\,\Omega(w) + R(w)` ([TVSL10]_ eq. 1).

    Parameters
    ----------
    loss : Oracle
        The empirical risk :math:`R(w)`, usually a loss from :mod:`nsopt.losses` (mean over
        examples). Its ``lower_bound`` (0 for the nonnegative losses) bounds the cutting-plane
        model from below, which is what makes L1 master problems bounded.
    reg : Regularizer, default ``L2()``
        :math:`\Omega`, known through its conjugate.
    lam : float > 0, default 1e-4
        Regularization strength; liblinear's ``C`` is ``1 / (m * lam)``.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(200, 20, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
    >>> J.value(np.zeros(20))
    1.0
    """

    def __init__(self, loss: Oracle, reg: Regularizer | None = None, lam: float = 1e-4):
        if not isinstance(loss, Oracle):
            raise TypeError(f"loss must be an nsopt Oracle, got {type(loss).__name__}")
        reg = L2() if reg is None else reg
        if not isinstance(reg, Regularizer):
            raise TypeError(
                f"reg must be an nsopt Regularizer (see nsopt.regularizers), got {type(reg).__name__}"
            )
        self.lam = check_positive(
            lam, "lam", hint="to minimise a bare loss use ProximalBundle on the loss itself"
        )
        if loss.dim is None:
            raise ValueError("the loss must have a fixed dimension (loss.dim)")
        if reg.dim is not None and reg.dim != loss.dim:
            raise ValueError(f"the regularizer has dimension {reg.dim} but the loss {loss.dim}")
        self.loss, self.reg = loss, reg
        self.dim = loss.dim
        floor = loss.lower_bound + self.lam * reg.lower_bound
        self.lower_bound = floor if math.isfinite(floor) else -math.inf
        self.finite = bool(loss.finite and reg.finite)

    def __repr__(self):
        return f"RegularizedRisk({self.loss!r}, {self.reg!r}, lam={self.lam:g})"

    def _value(self, w):
        return self.lam * self.reg._value(w) + self.loss._value(w)

    def _evaluate(self, w):
        with_dual = getattr(self.loss, "_value_subgradient_dual", None)
        if with_dual is not None:  # margin losses: the plane's dual point (certificates)
            r, a, t = with_dual(w)
        else:
            (r, a), t = self.loss._value_and_subgradient(w), None
        omega, s = self.reg._value_and_subgradient(w)
        return Evaluation(w, self.lam * omega + r, None, float(r), a, t, parts=(self.lam, s))

    def _value_and_subgradient(self, w):
        ev = self._evaluate(w)
        return ev.fun, ev.subgradient

    def _evaluate_groups(self, w, n_groups: int):
        """One evaluation with the risk split over ``n_groups`` groups of examples:
        ``(Evaluation, values (P,), subgradients (P, d))`` (for multiple cutting-plane models)."""
        split = getattr(self.loss, "group_value_and_subgradients", None)
        if split is None:
            raise TypeError(f"{type(self.loss).__name__} does not decompose into groups of "
                            "examples (no group_value_and_subgradients)")
        with_dual = getattr(self.loss, "_group_evaluate", None)
        if with_dual is not None:
            values, subgradients, t = with_dual(w, n_groups)
        else:
            (values, subgradients), t = split(w, n_groups), None
        r, a = float(values.sum()), subgradients.sum(axis=0)
        omega, s = self.reg._value_and_subgradient(w)
        return (Evaluation(w, self.lam * omega + r, None, r, a, t, parts=(self.lam, s)), values,
                subgradients)

    def _sup_subgradient(self, w, p):
        s1, g1 = self.loss._sup_subgradient(w, p)
        s2, g2 = self.reg._sup_subgradient(w, p)
        return s1 + self.lam * s2, g1 + self.lam * g2

    def _restrict(self, w, p):
        return self.loss._restrict(w, p) + self.lam * self.reg._restrict(w, p)


def as_problem(problem) -> Oracle:
    """Accept an Oracle as the problem; reject anything else with a message saying what to do."""
    if isinstance(problem, Oracle):
        if problem.dim is None:
            raise ValueError("the problem must have a fixed dimension (problem.dim)")
        return problem
    raise TypeError(
        f"the problem must be an nsopt Oracle (e.g. RegularizedRisk(loss, reg, lam) or "
        f"FunctionOracle(fun, subgradient, dim)), got {type(problem).__name__}"
    )
