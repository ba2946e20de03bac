r"""The quadratic master problem over the simplex by a compiled SMO-type pairwise method.

For a regularizer with a quadratic conjugate :math:`\Omega^*(\mu) = \tfrac12\mu^T M\mu` (``L2``:
:math:`M = I`; ``QuadraticForm``: :math:`M = Q^{-1}`) the master dual of [TVSL10]_ (Cor. 3) is the
small dense QP

.. math:: \max_{\alpha\in\Delta_n}\ D(\alpha) = b^T\alpha - \frac{1}{2\lambda}\alpha^T G\alpha,
          \qquad G = A M A^T,\qquad w = -\frac{1}{\lambda} (MA)^T\alpha .

Why SMO
-------
BMRM adds one plane per iteration and the previous multipliers stay nearly optimal, so a
warm-started solve is typically a handful of pair updates that shift weight onto the new plane
and off a few old ones. A pairwise (SMO) method keeps the gradient
:math:`g = b - G\alpha/\lambda` current in :math:`O(n)` per update, needs no factorisation (so a
singular :math:`G`, from duplicate planes or from more planes than dimensions, costs nothing
extra), and its stopping test is a certificate: :math:`\max_i g_i - \min_{\alpha_j > 0} g_j`
bounds the Frank-Wolfe gap :math:`\max_i g_i - \alpha^T g`, which is the master duality gap. An
active-set or interior-point method would refactor an :math:`n \times n` system at every call;
OCAS loses most of its time there at small :math:`\lambda` (DESIGN.md Sec. 7).

Each update moves along :math:`e_i - e_j` with :math:`i = \arg\max_k g_k` and :math:`j`, among the
planes with :math:`\alpha_j > 0` and :math:`g_j < g_i`, maximising the second-order gain
:math:`(g_i - g_j)^2 / (G_{ii} + G_{jj} - 2G_{ij})` (the working-set selection of Fan, Chen and
Lin 2005, WSS 2, on the simplex); the step is the exact maximiser along the line, clipped at
:math:`\alpha_j = 0`.

SMO converges only linearly, and its tail to a gap of 1e-12 is most of its work. So the updates
run in rounds of a few per support plane; when a round leaves the support unchanged, a *polish*
solves the equality-constrained QP on that face exactly (a small least-squares KKT system,
:math:`O(|S|^3)`, :math:`|S|` at most about :math:`d + 1`), with up to two primal active-set drops
when a multiplier would turn negative, and is kept only if :math:`D` does not decrease. With the
right support this ends the solve at rounding level: on BMRM bundles of 500 planes a warm start
takes a few hundred pair updates and one or two polishes. Every stopping decision uses the
gradient recomputed from :math:`w` (:math:`O(nd)`), never the incrementally updated one.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010. Corollary 3.
.. [FCL05] R.-E. Fan, P.-H. Chen, C.-J. Lin. Working set selection using second order
   information for training support vector machines. JMLR 6:1889-1918, 2005. Sec. 3 (WSS 2).
.. [Pla98] J. C. Platt. Sequential minimal optimization: a fast algorithm for training support
   vector machines. Microsoft Research TR-98-14, 1998.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from scipy.linalg import lstsq

from ._base import (InnerSolution, InnerSolver, check_int_option, default_tol, frank_wolfe_gap,
                    plane_values)

__all__ = ["QPSimplex"]

_EPS = np.finfo(np.float64).eps
_MAX_DROPS = 2  # active-set drops per polish
_BUDGET_FACTOR = 2  # SMO updates per support plane between support checks


@njit(cache=True)
def _smo(G, b, lam, alpha, grad, atol, rtol, max_iter):  # pragma: no cover - compiled
    """Pair updates until ``max g - min_{alpha>0} g <= atol + rtol * (1 + |D|)``.

    ``alpha`` and ``grad`` (= b - G alpha / lam) are updated in place. Returns the number of
    updates and the final violation. ``G`` is symmetric: rows are read instead of columns.
    """
    n = b.shape[0]
    maxdiag = 0.0
    for k in range(n):
        if G[k, k] > maxdiag:
            maxdiag = G[k, k]
    tau = 1e-12 * maxdiag if maxdiag > 0.0 else 1.0
    it = 0
    viol = np.inf
    while True:
        i = 0
        gmax = grad[0]
        for k in range(1, n):
            if grad[k] > gmax:
                gmax = grad[k]
                i = k
        gii = G[i, i]
        gmin = np.inf
        dual = 0.0
        j = -1
        best = -1.0
        for k in range(n):
            ak = alpha[k]
            if ak > 0.0:
                gk = grad[k]
                dual += ak * (b[k] + gk)
                if gk < gmin:
                    gmin = gk
                d = gmax - gk
                if d > 0.0:
                    q = gii + G[k, k] - 2.0 * G[i, k]
                    if q < tau:
                        q = tau
                    score = d * d / q
                    if score > best:
                        best = score
                        j = k
        viol = gmax - gmin
        dual *= 0.5  # D = alpha^T (b + g) / 2 since G alpha / lam = b - g
        if j < 0 or viol <= atol + rtol * (1.0 + abs(dual)) or it >= max_iter:
            break
        # exact step along e_i - e_j, clipped at alpha_j = 0
        d = gmax - grad[j]
        q = gii + G[j, j] - 2.0 * G[i, j]
        aj = alpha[j]
        t = aj
        if q > 0.0:
            t = lam * d / q
            if t > aj:
                t = aj
        if t <= 0.0:
            break
        if t == aj:
            alpha[j] = 0.0
        else:
            alpha[j] = aj - t
        alpha[i] += t
        c = t / lam
        for k in range(n):
            grad[k] -= c * (G[i, k] - G[j, k])
        it += 1
    return it, viol


class QPSimplex(InnerSolver):
    r"""Master dual of a quadratic regularizer by a compiled SMO method (numba).

    .. math:: \max_{\alpha\in\Delta_n} b^T\alpha - \frac{1}{2\lambda}\alpha^T G\alpha

    Parameters
    ----------
    max_iter : int, default 100000
        Maximum number of pair updates per solve, ``>= 1``.
    polish_rounds : int, default 50
        Maximum number of exact face solves (polishes) per solve, ``>= 0``; ``0`` is pure SMO.

    Notes
    -----
    Notation: ``G = bundle.G`` (:math:`a_i^T M a_j`), ``g = b - G alpha / lam`` the gradient of
    the dual, equal to the plane values :math:`\langle a_i, w\rangle + b_i` at the dual point
    :math:`w = -(MA)^T\alpha/\lambda` ([TVSL10]_ Cor. 3).

    The bundle must be built with the regularizer's metric (``PlaneBundle(d,
    metric=reg.metric)``, or no metric for L2). The reported ``dual_value`` is recomputed as
    :math:`b^T\alpha - \lambda\Omega^*(-A^T\alpha/\lambda)` with ``reg.conjugate``, so it is a
    lower bound whatever the accuracy of the solve; a bundle whose metric does not match the
    regularizer raises ``ValueError``.

    ``n_iter`` counts pair updates plus polishes. ``tol`` below the rounding level of the plane
    values (about :math:`4\epsilon\sqrt{n + d}\,\max_i |\langle a_i, w\rangle + b_i|`) is raised
    to it.

    Cost: :math:`O(n)` per pair update, :math:`O(n d)` per check of the gap (once per round),
    :math:`O(|S|^3)` per polish.

    References
    ----------
    .. [TVSL10] Teo et al., JMLR 2010, Corollary 3.
    .. [FCL05] Fan, Chen and Lin, JMLR 2005, WSS 2.
    """

    name = "qp"
    families = ("qp",)

    def __init__(self, *, max_iter: int = 100000, polish_rounds: int = 50):
        self.max_iter = check_int_option(max_iter, "max_iter")
        self.polish_rounds = check_int_option(polish_rounds, "polish_rounds", low=0)

    def _solve(self, bundle, reg, lam, warm, tol):
        G = bundle.G
        b = np.ascontiguousarray(bundle.b)
        n = b.size
        if warm is None:
            # the best single plane: D(e_k) = b_k - G_kk / (2 lam)
            alpha = np.zeros(n)
            alpha[int(np.argmax(b - np.diag(G) / (2.0 * lam)))] = 1.0
        else:
            alpha = warm
        grad, viol, dual, target = self._measure(bundle, lam, alpha, tol)
        n_iter = polishes = 0
        while viol > target and n_iter < self.max_iter:
            # SMO pair updates, in rounds of a few per plane of the support ...
            support = alpha > 0
            budget = _BUDGET_FACTOR * (int(np.count_nonzero(support)) + 10)
            it, smo_viol = _smo(G, b, lam, alpha, grad, target, 0.0,
                                min(budget, self.max_iter - n_iter))
            n_iter += it
            stable = bool(np.array_equal(alpha > 0, support))
            can_polish = polishes < self.polish_rounds
            if not (smo_viol <= target or it == 0 or (stable and can_polish)):
                continue
            grad, viol, dual, target = self._measure(bundle, lam, alpha, tol)
            if viol <= target:
                break
            if not can_polish:
                if it == 0:
                    break
                continue
            # ... then, once the support stops changing, the exact maximiser on its face
            polished = _polish(G, b, lam, alpha)
            polishes += 1
            trial = self._measure(bundle, lam, polished, tol)
            if trial[2] >= dual - 8 * _EPS * (abs(dual) + 1.0):
                alpha = polished
                grad, viol, dual, target = trial
            elif it == 0:
                break
        n_iter += polishes
        alpha /= alpha.sum()
        return finish_quadratic(bundle, reg, lam, alpha, n_iter)

    @staticmethod
    def _measure(bundle, lam, alpha, tol):
        """``(grad, violation, D, target)`` at ``alpha``, the gradient afresh from ``w``.

        ``<a_i, w> + b_i`` in O(n d) is more accurate than ``b - G alpha / lam``, whose terms
        ``(G alpha)_k / lam`` can be much larger than the plane values they sum to. The target is
        ``tol`` (default ``1e-12 (1 + |D|)``) but no less than the rounding of the plane values.
        """
        b = bundle.b
        grad = plane_values(bundle, primal_point(bundle, lam, alpha))
        viol = float(grad.max() - grad[alpha > 0].min())
        dual = 0.5 * float(alpha @ (b + grad))  # D = alpha^T (b + g) / 2 for the quadratic
        scale = float(np.max(np.abs(b)) + np.max(np.abs(grad - b)))
        floor = 4.0 * _EPS * np.sqrt(b.size + bundle.dim) * scale
        return grad, viol, dual, max(default_tol(tol, dual), floor)


def _polish(G, b, lam, alpha, max_drops=_MAX_DROPS):
    r"""Maximise D on the face of the simplex spanned by the support of ``alpha``.

    Solves the KKT system :math:`G_{SS}\alpha_S/\lambda + \nu 1 = b_S,\ 1^T\alpha_S = 1` (least
    squares: :math:`G_{SS}` may be singular) and moves towards its solution as far as the bounds
    allow; a blocking multiplier leaves the support and the face shrinks (a primal active-set
    step, at most ``max_drops`` times: SMO is better at discarding many planes). D increases along
    the way (concave on the segment).
    """
    alpha = alpha.copy()
    support = np.flatnonzero(alpha > 0)
    for _ in range(max_drops + 1):
        if support.size <= 1:
            break
        k = support.size
        H = G[np.ix_(support, support)] / lam
        c = max(float(np.mean(np.abs(np.diag(H)))), 1e-300) ** 0.5  # balance the two blocks
        K = np.zeros((k + 1, k + 1))
        K[:k, :k] = H
        K[:k, k] = c
        K[k, :k] = c
        rhs = np.concatenate((b[support], [c]))
        target = lstsq(K, rhs, lapack_driver="gelsy", check_finite=False)[0][:k]
        current = alpha[support]
        step = target - current
        down = step < 0
        if not down.any():
            alpha[support] = np.maximum(target, 0.0)
            break
        ratios = current[down] / -step[down]
        r = int(np.argmin(ratios))
        if ratios[r] >= 1.0:
            alpha[support] = np.maximum(target, 0.0)
            break
        alpha[support] = np.maximum(current + ratios[r] * step, 0.0)
        alpha[support[np.flatnonzero(down)[r]]] = 0.0
        support = np.flatnonzero(alpha > 0)
    return alpha / alpha.sum()


def primal_point(bundle, lam, alpha):
    """``w = -(M A)^T alpha / lam``, summed over the support of ``alpha``."""
    support = np.flatnonzero(alpha)
    return -(alpha[support] @ bundle.MA[support]) / lam


def finish_quadratic(bundle, reg, lam, alpha, n_iter) -> InnerSolution:
    """``w``, the dual value (through ``reg.conjugate``) and the gap at feasible ``alpha``."""
    support = np.flatnonzero(alpha)
    a_s = alpha[support]
    w = -(a_s @ bundle.MA[support]) / lam
    a_bar = a_s @ bundle.A[support]
    b_dot = float(a_s @ bundle.b[support])
    dual = b_dot - lam * float(reg.conjugate(-a_bar / lam))
    dual_gram = b_dot + 0.5 * float(a_bar @ w)  # the same value through the bundle's metric
    if not abs(dual - dual_gram) <= 1e-8 * (1.0 + abs(b_dot) + abs(dual - b_dot)):
        raise ValueError(
            f"the bundle's metric does not match {type(reg).__name__}'s conjugate "
            f"(dual value {dual!r} by reg.conjugate, {dual_gram!r} by the Gram matrix); build the "
            "bundle as PlaneBundle(dim, metric=reg.metric) (no metric for L2)"
        )
    grad = plane_values(bundle, w)
    return InnerSolution(alpha, dual, w, frank_wolfe_gap(alpha, grad), int(n_iter))
