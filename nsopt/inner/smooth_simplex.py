r"""The master dual of a smooth conjugate by accelerated projected gradient on the simplex.

For Lp norms, entropies, KL and the elastic net the master dual of [TVSL10]_ (eq. (10))

.. math:: \max_{\alpha\in\Delta_n} D(\alpha) = b^T\alpha - \lambda\Omega^*(-A^T\alpha/\lambda),
          \qquad \nabla_i D(\alpha) = \langle a_i, w\rangle + b_i,\quad
          w = \nabla\Omega^*(-A^T\alpha/\lambda),

is a smooth concave maximisation over the simplex. It is solved by FISTA (Beck and Teboulle
2009) with Euclidean projection onto the simplex, a backtracking estimate of the Lipschitz
constant of :math:`\nabla D` (allowed to shrink again between iterations) and the gradient
restart of O'Donoghue and Candès (2015), which recovers linear convergence where :math:`D`
grows quadratically away from its maximisers. The stopping test is the Frank-Wolfe gap
:math:`\max_i \nabla_i D - \alpha^T\nabla D`, the master duality gap.

With several cutting-plane models (``bundle.n_blocks = P > 1``, [UF12]_ Sec. 3.3) the feasible
set is the product of ``P`` simplices: the projection is done block by block (the product's
projection is the product of the projections), the gap is
:math:`\sum_p \max_{i\in p} \nabla_i D - \alpha^T\nabla D`, and the cold start takes in every
block the plane with the best single-plane value.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010. Theorem 2.
.. [BT09] A. Beck, M. Teboulle. A fast iterative shrinkage-thresholding algorithm for linear
   inverse problems. SIAM J. Imaging Sci. 2(1):183-202, 2009.
.. [OC15] B. O'Donoghue, E. Candès. Adaptive restart for accelerated gradient schemes. Found.
   Comput. Math. 15:715-732, 2015.
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   CVWW 2012. Sec. 3.3.
"""
from __future__ import annotations

import math

import numpy as np

from ._base import InnerSolution, InnerSolver, bundle_blocks, check_int_option, default_tol, past

__all__ = ["SmoothSimplex"]

_EPS = np.finfo(np.float64).eps


def _floor(p, b) -> float:
    """The rounding level of the plane values at ``p``: no gap below it can be certified."""
    scale = float(np.max(np.abs(b)) + np.max(np.abs(p.grad - b)))
    return 4.0 * _EPS * math.sqrt(b.size + p.w.size) * scale


class _Point:
    """``alpha`` with its dual value, primal point and gradient (lazily)."""

    __slots__ = ("alpha", "value", "mu", "w", "grad")

    def __init__(self, alpha, value, mu):
        self.alpha, self.value, self.mu = alpha, value, mu
        self.w = self.grad = None


class SmoothSimplex(InnerSolver):
    r"""Master dual of a regularizer with a differentiable conjugate, by restarted FISTA.

    .. math:: \max_{\alpha\in\Delta_n} b^T\alpha - \lambda\Omega^*(-A^T\alpha/\lambda)

    (over the product of ``bundle.n_blocks`` simplices when the bundle has several models).

    Parameters
    ----------
    max_iter : int, default 5000
        Maximum number of accepted gradient steps, ``>= 1``.

    Notes
    -----
    Needs ``reg.conjugate`` and ``reg.conjugate_grad`` finite everywhere (``reg.inner`` in
    ``{"smooth", "qp"}``); each step costs two products with ``A`` and one or two conjugate
    evaluations, plus :math:`O(n\log n)` for the projection. The returned ``alpha`` is the best
    (highest :math:`D`) feasible point seen, with its own ``w`` and gap; iterates whose conjugate
    overflows count as :math:`D = -\infty` and only shorten the step.

    References
    ----------
    .. [BT09] Beck and Teboulle, SIAM J. Imaging Sci. 2009 (FISTA with backtracking).
    .. [OC15] O'Donoghue and Candès, Found. Comput. Math. 2015 (gradient restart).
    """

    name = "smooth"
    families = ("smooth", "qp")

    def __init__(self, *, max_iter: int = 5000):
        self.max_iter = check_int_option(max_iter, "max_iter")

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None):
        A = np.asarray(bundle.A, dtype=np.float64)
        b = np.asarray(bundle.b, dtype=np.float64)
        n = b.size
        blocks = bundle_blocks(bundle)
        project = blocks.project

        def point(alpha, mu=None):
            if mu is None:
                mu = -(alpha @ A) / lam
            with np.errstate(over="ignore", invalid="ignore"):
                conj = float(reg.conjugate(mu))
            value = float(alpha @ b) - lam * conj
            return _Point(alpha, value if math.isfinite(value) else -math.inf, mu)

        def gradient(p):
            if p.grad is None:
                with np.errstate(over="ignore", invalid="ignore"):
                    p.w = np.asarray(reg.conjugate_grad(p.mu), dtype=np.float64)
                    p.grad = A @ p.w + b
            return p.grad

        x = None if warm is None else point(warm)
        if (x is None or not math.isfinite(x.value)) and not blocks.multi:
            # the best single plane, O(d) each: D(e_k) = b_k - lam Omega*(-a_k / lam)
            x = max((point(np.eye(1, n, k).ravel(), -A[k] / lam) for k in range(n)),
                    key=lambda p: p.value)
        elif x is None or not math.isfinite(x.value):
            # in every block the plane with the best single-plane value, else the centre
            single = np.array([point(np.eye(1, n, k).ravel(), -A[k] / lam).value
                               for k in range(n)])
            x = point(blocks.argmax_vertex(single))
            if not math.isfinite(x.value):
                x = point(blocks.normalize(np.ones(n)))
        if not math.isfinite(x.value):
            raise ValueError(
                f"{type(reg).__name__}'s conjugate is infinite at every plane: SmoothSimplex "
                "needs a conjugate that is finite everywhere (use select(reg) to pick a backend)"
            )
        best = x
        g = gradient(x)
        gap = blocks.gap(x.alpha, g)
        if n == blocks.n_blocks or not np.all(np.isfinite(g)):  # a single feasible point
            return self._result(best, gradient, 0, blocks)
        # initial Lipschitz estimate from a secant along the projected gradient
        step = 1.0 / (float(np.max(np.abs(g))) + 1.0)
        z = point(project(x.alpha + step * g))
        dz = z.alpha - x.alpha
        L = 1.0
        if z.value > -math.inf and float(dz @ dz) > 0:
            L = max(float(np.linalg.norm(gradient(z) - g) / np.linalg.norm(dz)), 1e-12)
        y, t = x, 1.0
        n_iter = 0
        while n_iter < self.max_iter and not past(deadline):
            if gap <= max(default_tol(tol, best.value), _floor(best, b)) or not math.isfinite(gap):
                break
            gy = gradient(y)
            if not np.all(np.isfinite(gy)):  # an extrapolated point overflowed: restart at x
                t, y = 1.0, x
                gy = gradient(y)
            L *= 0.8  # let the estimate shrink again; backtracking below restores it
            for _ in range(100):
                x_new = point(project(y.alpha + gy / L))
                dx = x_new.alpha - y.alpha
                model = y.value + float(gy @ dx) - 0.5 * L * float(dx @ dx)
                slack = 10 * _EPS * (abs(y.value) + abs(float(gy @ dx)) + 1.0)
                if x_new.value >= model - slack:
                    break
                L *= 2.0
            n_iter += 1
            gx = gradient(x_new)
            if not np.all(np.isfinite(gx)):
                break
            # near the maximiser D is flat to rounding while the gap still shrinks: among values
            # equal to rounding, the point with the smaller gap is the better one
            noise = 8 * _EPS * (abs(best.value) + 1.0)
            gap_new = blocks.gap(x_new.alpha, gx)
            if x_new.value > best.value + noise or (x_new.value >= best.value - noise
                                                    and gap_new < gap):
                best, gap = x_new, gap_new
            # restart [OC15]: the momentum points against the step just taken, or D went down
            if (float((y.alpha - x_new.alpha) @ (x_new.alpha - x.alpha)) > 0
                    or x_new.value < x.value - noise):
                t, y = 1.0, x_new
            else:
                t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
                y = point(x_new.alpha + ((t - 1.0) / t_next) * (x_new.alpha - x.alpha))
                t = t_next
                if y.value == -math.inf:
                    t, y = 1.0, x_new
            x = x_new
        return self._result(best, gradient, n_iter, blocks)

    @staticmethod
    def _result(best, gradient, n_iter, blocks):
        g = gradient(best)
        return InnerSolution(best.alpha, best.value, best.w, blocks.gap(best.alpha, g), n_iter)
