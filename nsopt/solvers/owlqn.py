r"""OWL-QN and OWL-QN*: orthant-wise quasi-Newton for a differentiable loss plus
:math:`\lambda\|w\|_1` ([AG07]_; [YVGS10]_ Sec. 7.1.1, 8.4).

A :class:`~nsopt.solvers._quasi_newton.QuasiNewtonVariant`: :class:`OrthantWiseStep` is the
iteration :class:`~nsopt.solvers.SubLBFGS` plugs into the quasi-Newton loop on
``RegularizedRisk(loss, L1, lam)`` with a differentiable loss (option ``owlqn_variant``). Plain
OWL-QN takes :math:`p = -B g^{ow}` from the pseudo-gradient :math:`g^{ow}`; OWL-QN* is OWL-QN
with that direction replaced by a direction finder passed in (Algorithm 2,
:func:`nsopt.solvers.subbfgs.descent_direction`, started from :math:`g^{ow}`). Both then take
OWL-QN's projected step; the details are in :class:`~nsopt.solvers.SubLBFGS`'s Notes.

References
----------
.. [AG07] G. Andrew, J. Gao. Scalable training of L1-regularized log-linear models.
   ICML 2007.
.. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton
   approach to nonsmooth convex optimization problems in machine learning. JMLR
   11:1145-1200, 2010.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..problem import RegularizedRisk

__all__ = ["OrthantWiseStep", "pseudo_gradient", "applies"]


def pseudo_gradient(w, loss_grad, lam):
    """OWL-QN's pseudo-gradient (Andrew & Gao 2007, eq. 4): the minimum-norm element of
    :math:`\\nabla L(w) + \\lambda\\,\\partial\\|w\\|_1`."""
    g = loss_grad + lam * np.sign(w)
    zero = w == 0
    gz = loss_grad[zero]
    g[zero] = np.where(gz + lam < 0, gz + lam, np.where(gz - lam > 0, gz - lam, 0.0))
    return g


def applies(problem) -> bool:
    """Whether ``problem`` is what OWL-QN solves: a ``RegularizedRisk`` whose regularizer is
    :math:`\\|w\\|_1` (``reg.l1_ratio == 1``) and whose loss is differentiable (the facts the
    parts state, not their classes). ``problem`` is the problem itself, not a wrapper."""
    return (isinstance(problem, RegularizedRisk) and problem.reg.l1_ratio == 1.0
            and problem.loss.differentiable)


class OrthantWiseStep:
    r"""One OWL-QN iteration ([AG07]_), or OWL-QN*'s ([YVGS10]_ Sec. 7.1.1) with ``direction``.

    Parameters
    ----------
    direction : callable or None
        None: OWL-QN's direction :math:`p = -B g^{ow}`. Else a direction finder
        ``direction(problem, w, g1, store, epsilon, k_max)`` returning a
        :class:`~nsopt.solvers.subbfgs.DescentDirection` (``p``, ``g_sup``, ``n_inner``,
        ``success``): OWL-QN* passes Algorithm 2, started from :math:`g^{ow}`, whose argsup
        oracle applies the sign rule at zero coordinates.
    """

    def __init__(self, direction: Callable | None = None):
        self.direction = direction
        self.name = "owlqn" if direction is None else "owlqn*"

    def __repr__(self):
        return f"OrthantWiseStep({self.name!r})"

    def step(self, solver, problem, s):
        lam, w = problem.lam, s.w
        g_ow = pseudo_gradient(w, s.loss_grad, lam)
        snap = solver.kink_tol * max(1.0, float(np.abs(w).max(initial=0.0)))
        counts = dict(n_inner=s.n_inner, n_failures=s.n_failures, n_restarts=s.n_restarts)
        for store in (s.store, s.store.reset()):      # quasi-Newton, then a restart from B = I
            if store is not s.store:
                counts["n_failures"] += 1
            if self.direction is None:
                p = -store.dot(g_ow)
            else:                                                      # Alg. 2 from g_ow
                d = self.direction(problem, w, g_ow, store, solver.epsilon,
                                   solver.max_direction_iter)
                counts["n_inner"] += d.n_inner
                p = d.p
            # [AG07] projection pi: keep p_j only where it agrees in sign with -g_ow; then
            # J'(w; p) = g_ow^T p, and the orthant is sign(w), or -sign(g_ow) at zeros
            projected = np.where(p * g_ow < 0, p, 0.0)
            ok, slope_g = float(g_ow @ projected) < 0, g_ow
            orthant = np.where(w != 0, np.sign(w), -np.sign(g_ow))
            if self.direction is not None and not ok and d.success:
                # pi destroyed descent: keep Alg. 2's direction, orthant by its signs at zeros
                projected, ok, slope_g = p, True, d.g_sup
                orthant = np.where(w != 0, np.sign(w), np.sign(p))
            p = projected
            if not ok:
                continue
            ev, eta = self._projected_backtracking(
                solver, problem, s.fun, w, p, slope_g, orthant, snap,
                eta=1.0 if store.n_pairs else 1.0 / float(np.linalg.norm(p)))
            if ev is not None:
                break
        else:                                                          # stationary: stop
            # for L1 + a smooth loss the pseudo-gradient is the least-norm subgradient at w
            return s._replace(stationary=True, subgradient_norm=float(np.linalg.norm(g_ow)),
                              linearization_error=0.0, **counts)
        if store is not s.store:
            counts["n_restarts"] += 1
        step, y = ev.w - w, ev.loss_subgradient - s.loss_grad
        store, skipped, shifted = solver.curvature_update(store, step, y)
        return s._replace(w=ev.w, fun=ev.fun, g=ev.subgradient, g_origin=(ev.w, None),
                          loss_grad=ev.loss_subgradient,
                          store=store, eta=eta,
                          n_skipped_updates=s.n_skipped_updates + skipped,
                          n_shifts=s.n_shifts + shifted, **counts)

    @staticmethod
    def _projected_backtracking(solver, problem, f0, w, p, slope_g, orthant, snap, eta):
        """[AG07]'s line search on the path P(w + eta p), P zeroing the coordinates that leave
        the orthant (and, nsopt's addition, those within ``kink_tol`` of 0: a coordinate that
        lands 1e-20 from 0 is a kink in all but rounding). Armijo with ``c1`` on
        ``slope_g^T (x - w)``; halving, 50 trials. Returns (evaluation, eta), or (None, 0)
        if no trial decreases J."""
        for _ in range(50):
            x = w + eta * p
            x[(np.sign(x) != orthant) | (np.abs(x) <= snap)] = 0.0
            ev = problem.evaluate(x)
            if ev.fun <= f0 + solver.c1 * float(slope_g @ (x - w)) and ev.fun < f0:
                return ev, eta
            eta *= 0.5
        return None, 0.0
