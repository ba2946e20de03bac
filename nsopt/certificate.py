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

:class:`L1DualCertifier` adds, for every solver on an L1-regularized margin loss, the bound of a
Fenchel dual point of the best iterate made feasible by a Newton-type correction: there the
plane bounds lag the objective by orders of magnitude (see its docstring).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["Certificate", "PlaneCertifier", "L1DualCertifier", "CertificateError", "no_certificate"]


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
        gives a plane: ``a_bar = -Z^T alpha``, ``b_bar = <b, alpha>``), ``"dual-point"`` (a
        corrected Fenchel dual point, :class:`L1DualCertifier`) or ``"none"``.
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


class L1DualCertifier:
    r"""Lower bounds for :math:`\lambda\|w\|_1 + R(w)` from corrected Fenchel dual points.

    For a margin loss with a known conjugate (``loss.dual_upper`` set: hinge, squared hinge,
    logistic) every dual vector :math:`t` in the domain gives the plane
    :math:`R(v) \ge \langle a(t), v\rangle + b(t)` (:meth:`~nsopt.losses.ScalarLoss.dual_plane`),
    and with the L1 conjugate the bound :math:`b(t)` holds when
    :math:`\|a(t)\|_\infty \le \lambda`. The natural dual point :math:`t(w)` of a good primal
    point violates that box badly: the gradient of the risk converges much later than the
    objective in ill-conditioned directions, and scaling :math:`t` into the box loses nearly all
    of the bound (measured on a9a, logistic, :math:`\lambda = 10^{-4}`: 83% below :math:`J^*`
    when the objective is 1.4e-3 above it; the planes of the iterates: about as weak).

    The correction: with :math:`V` the violated coordinates (at most ``max_columns``, the
    largest), move :math:`t` by the least change in the metric of the risk's Hessian weights
    :math:`D` (``loss.dual_curvature``) that puts :math:`a_V` on the box,

    .. math:: \Delta t = D B (B^T D B)^{-1} e, \qquad B = \mathrm{diag}(c \circ y) X_V,\;
              e_j = a_j - \lambda\,\mathrm{sign}(a_j),

    (the dual image of a Newton step on those coordinates), clip to the domain, repeat
    ``rounds`` times, then scale by the best :math:`\tau \le \lambda/\|a\|_\infty` (a concave
    1-D maximisation of :math:`b(\tau t)`). Same run: 5e-3 below :math:`J^*`. Validity never
    rests on the correction: the evidence is the plane :math:`(\tau a, b(\tau t))`, checked by
    :meth:`Certificate.check` like any other.

    Cost: one data pass for :math:`t(w)`, per round one pass and a sparse
    :math:`|V| \times |V|` system; the solver loop calls it only while its time stays within
    ``budget`` of the run's (``budget >= 1``: at every iteration), a budget halved (down to 1/64 of it) each time its bound did not
    beat the others' and restored when it does: where the plane bounds are good anyway
    (mushrooms) it costs a few percent, not a quarter.
    """

    def __init__(self, problem, rounds: int = 10, max_columns: int = 500, budget: float = 0.25):
        self.problem = problem
        self.rounds, self.max_columns, self.budget = int(rounds), int(max_columns), float(budget)
        self.share = self.budget
        self.spent = 0.0
        self.best = (-math.inf, None, None)
        self._last_w = None

    @staticmethod
    def applies(problem) -> bool:
        from .problem import RegularizedRisk
        from .regularizers import L1

        return (isinstance(problem, RegularizedRisk) and type(problem.reg) is L1
                and getattr(problem.loss, "dual_upper", None) is not None)

    def due(self, elapsed: float) -> bool:
        """Whether a call now keeps the certifier's share of the run within its budget."""
        return self.budget >= 1.0 or self.spent <= self.share * elapsed

    def feedback(self, useful: bool) -> None:
        """Whether the last bound beat every other: restore the budget, or halve it."""
        self.share = self.budget if useful else max(self.share / 2.0, self.budget / 64.0)

    def bound(self, w) -> tuple[float, np.ndarray | None, float | None]:
        """Best lower bound so far with its evidence, after trying the dual point of ``w``."""
        import time

        if w is None or (self._last_w is not None and np.array_equal(w, self._last_w)):
            return self.best
        t0 = time.perf_counter()
        self._last_w = np.array(w, copy=True)
        lower, a_bar, b_bar = self._from_point(w)
        if lower > self.best[0]:
            self.best = (lower, a_bar, b_bar)
        self.spent += time.perf_counter() - t0
        return self.best

    def _from_point(self, w):
        loss, lam = self.problem.loss, self.problem.lam
        X = loss.data.csc if loss.data.sparse else loss.data.X
        cy = loss.c * loss.y
        t = loss.dual_variables(w)
        a, _ = loss.dual_plane(t)
        for _ in range(self.rounds):
            excess = np.abs(a) - lam
            V = np.flatnonzero(excess > 0)
            if V.size == 0:
                break
            if V.size > self.max_columns:
                V = V[np.argsort(-excess[V])[: self.max_columns]]
            e = a[V] - lam * np.sign(a[V])
            D = np.maximum(loss.dual_curvature(t), 1e-12)
            XV = X[:, V]
            if sp.issparse(XV):
                G = (XV.T @ XV.multiply((cy * cy * D)[:, None])).toarray()
            else:
                G = XV.T @ ((cy * cy * D)[:, None] * XV)
            G = np.asarray(G)
            eta = np.linalg.lstsq(G + 1e-12 * np.trace(G) / V.size * np.eye(V.size), e,
                                  rcond=None)[0]
            # a(t + dt) = a - X_V^T (c y dt) = a_V - e on V
            t = np.clip(t + D * cy * np.asarray(XV @ eta).reshape(-1), 0.0, loss.dual_upper)
            a, _ = loss.dual_plane(t)
        amax = float(np.max(np.abs(a), initial=0.0))
        top = 1.0 if amax <= lam else lam / amax * (1.0 - 1e-12)
        tau = _argmax_concave(lambda s: -float(loss.c @ loss.conjugate_terms(s * t)), top)
        if tau * amax > lam:  # rounding: stay inside the box
            tau = lam / amax * (1.0 - 1e-12)
        a_bar = tau * a                                   # a is linear in t
        b_bar = -float(loss.c @ loss.conjugate_terms(tau * t))
        return b_bar, a_bar, b_bar


def _argmax_concave(f, hi: float) -> float:
    """Maximiser of a concave ``f`` on ``[0, hi]`` (scipy's bounded Brent; the end ``hi``, where
    the maximiser often sits, is compared explicitly)."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda x: -f(x), bounds=(0.0, hi), method="bounded",
                          options={"xatol": 1e-10 * max(hi, 1e-300)})
    return hi if f(hi) >= -res.fun else float(res.x)
