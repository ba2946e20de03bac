r"""Certificates: proven lower bounds, shared by every solver.

For :math:`J(w) = \lambda\Omega(w) + R(w)`, every oracle call at :math:`w_i` gives a cutting
plane :math:`R(v) \ge \langle a_i, v\rangle + b_i`. For multipliers :math:`\alpha` on the simplex
the aggregate plane :math:`(\bar a, \bar b) = \sum_i \alpha_i (a_i, b_i)` is again below
:math:`R`, so

.. math::  J^* \ge \min_w \lambda\Omega(w) + \langle \bar a, w\rangle + \bar b
              = \bar b - \lambda\,\Omega^*(-\bar a/\lambda),

which is the dual of the cutting-plane master problem ([TVSL10]_ Thm. 2). A
:class:`Certificate` carries :math:`(\bar a, \bar b)` as its evidence, and
:meth:`Certificate.check` recomputes the bound in O(d) without trusting the solver.

:class:`PlaneCertifier` listens to the oracle calls of any solver on a ``RegularizedRisk``,
keeps its own :class:`~nsopt.bundle.PlaneBundle` (bounded by ``max_planes``) and solves the
master dual on demand, so solvers that are not cutting-plane methods (quasi-Newton, trust
region) report a true gap with the same code.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Certificate", "PlaneCertifier", "CertificateError", "no_certificate"]


class CertificateError(AssertionError):
    """A certificate's evidence does not support its claimed lower bound."""


@dataclass(frozen=True)
class Certificate:
    """A proven bracket ``lower <= J* <= upper`` and its evidence.

    Attributes
    ----------
    upper, lower, gap : float
    source : str
        ``"planes"`` (the plane certifier), ``"bundle-dual"`` (a cutting-plane solver's own
        master dual), ``"excessive-gap"`` (Nesterov's primal-dual gap, whose dual point also
        gives a plane: ``a_bar = -Z^T alpha``, ``b_bar = <b, alpha>``) or ``"none"``.
    a_bar, b_bar : ndarray, float
        The aggregated plane proving ``lower`` for plane-based sources.
    """

    upper: float
    lower: float
    gap: float
    source: str = "none"
    a_bar: np.ndarray | None = field(default=None, repr=False)
    b_bar: float | None = None

    def recompute(self, problem) -> float:
        r"""The bound :math:`\bar b - \lambda\Omega^*(-\bar a/\lambda)` from the evidence alone."""
        if self.a_bar is None:
            return -math.inf
        lam = problem.lam
        return float(self.b_bar - lam * problem.reg.conjugate(-np.asarray(self.a_bar) / lam))

    def check(self, problem, rtol: float = 1e-9) -> float:
        """Recompute the lower bound from the evidence; raise :class:`CertificateError` if the
        claimed ``lower`` exceeds it (beyond ``rtol`` relative rounding). Returns the bound."""
        if self.lower == -math.inf:
            return -math.inf
        bound = self.recompute(problem)
        if self.lower > bound + rtol * max(1.0, abs(bound)):
            raise CertificateError(
                f"claimed lower bound {self.lower!r} exceeds the one its evidence proves, {bound!r}"
            )
        return bound


def no_certificate(upper: float) -> Certificate:
    return Certificate(upper=upper, lower=-math.inf, gap=math.inf, source="none")


class PlaneCertifier:
    """Collect the loss planes of a solver's oracle calls and turn them into a lower bound.

    Parameters
    ----------
    problem : RegularizedRisk
    inner : str
        Master-problem backend (see :func:`nsopt.inner.select`).
    max_planes : int
        Bundle capacity; when full, inactive planes are dropped and old ones aggregated,
        which keeps the bound valid (any convex combination of planes is a plane).

    Use it as a listener of :class:`~nsopt.oracle.CountingOracle`; call :meth:`bound` when a
    bound is wanted (it warm-starts from the previous multipliers).
    """

    def __init__(self, problem, inner: str = "auto", max_planes: int = 100):
        from .bundle import PlaneBundle
        from .inner import select

        self.problem = problem
        self.bundle = PlaneBundle(problem.dim, metric=problem.reg.gram_metric)
        floor = problem.loss.lower_bound
        if math.isfinite(floor):
            self.bundle.add_fixed(np.zeros(problem.dim), float(floor))
        self.inner = select(problem.reg, inner)
        self.max_planes = int(max_planes)
        self._alpha = None
        self._fresh = False
        self.best = (-math.inf, None, None)

    def __call__(self, ev) -> None:
        if ev.loss_subgradient is None:
            return
        if len(self.bundle) >= self.max_planes:
            # multipliers for exactly the current planes, then compress: the bound so far is
            # kept (best), and the compressed model keeps the dual value (aggregation)
            self._fresh = True
            self.bound()
            self._alpha = self.bundle.compress(self._alpha, self.max_planes)
        self.bundle.add_at(ev.w, ev.loss_value, ev.loss_subgradient)
        self._fresh = True

    def bound(self) -> tuple[float, np.ndarray | None, float | None]:
        """Best lower bound so far with its evidence ``(lower, a_bar, b_bar)``."""
        if self._fresh and len(self.bundle):
            p = self.problem
            sol = self.inner.solve(self.bundle, p.reg, p.lam, warm=self._alpha)
            self._alpha = sol.alpha
            self._fresh = False
            if sol.dual_value > self.best[0]:
                a_bar, b_bar = self.bundle.combine(sol.alpha)
                self.best = (sol.dual_value, a_bar, b_bar)
        return self.best
