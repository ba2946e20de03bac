r"""Master problems with unregularized intercepts (:class:`~nsopt.problem.InterceptRegularizer`).

With ``x = (w, b)`` and planes :math:`\langle a_{i,w}, w\rangle + \langle a_{i,b}, b\rangle +
c_i`, the regularizer acts on ``w`` only, so the master dual over the simplex is

.. math:: \max_{\alpha\in\Delta}\ c^T\alpha - \lambda\Omega^*(-A_w^T\alpha/\lambda)
          \quad\text{s.t.}\quad A_b^T\alpha = 0 ,

the equality the free intercept induces on the multipliers. Before the planes make it feasible
(all first planes push b the same way) the primal master is unbounded in b. The problem's
proven box :math:`\|b^*\|_\infty \le B` (:meth:`~nsopt.RegularizedRisk.intercept_bound`) makes
it bounded: the master is taken over that box, whose dual relaxes the equality into the
penalty :math:`-B\|A_b^T\alpha\|_1`,

.. math:: \max_{\alpha\in\Delta}\ c^T\alpha - \lambda\Omega^*(-A_w^T\alpha/\lambda)
          - B\,\|A_b^T\alpha\|_1 ,

which is :math:`D(\alpha) = c^T\alpha - \lambda\Omega_B^*(-A^T\alpha/\lambda)` with the
regularizer's conjugate (``reg.scaled_conjugate`` adds the box term). Why the box rather than
the bare equality: the bound is finite from the first plane on, every multiplier vector is
feasible (no projection onto the equality, whose rounding would otherwise make the exact
conjugate infinite), and a residual :math:`A_b^T\alpha` of rounding size costs only
:math:`B` times it in the bound. Once the planes admit the equality and B exceeds the
multiplier of the equality, the box is inactive and the master is the equality-constrained one.

Backends: :class:`InterceptQP` (quadratic :math:`\Omega`, by OSQP, ``reg.inner ==
"intercept-qp"``) and :class:`InterceptLP` (L1, by HiGHS, ``"intercept-lp"``). The
intercepts of the next iterate are the master's own (the multipliers of the box rows in the QP,
the LP's b columns); the reported ``dual_value`` is recomputed from the repaired multipliers.
"""
from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..regularizers import scaled_conjugate
from ._base import InnerSolution, InnerSolver, bundle_blocks, plane_values
from .lp import _MARGIN, _anchor, _repair, _unbounded_message

__all__ = ["InterceptQP", "InterceptLP"]

_ZERO = 1e-6  # multipliers below this fraction of the largest are taken as 0


def _parts(bundle, reg):
    k = reg.n_intercepts
    A = np.asarray(bundle.A, dtype=np.float64)
    return A[:, :-k], A[:, -k:], k


def _box(reg) -> float:
    B = float(reg.box)
    if not math.isfinite(B):
        raise ValueError("no proven bound on the intercept is known for this problem "
                         "(RegularizedRisk.intercept_bound() is inf): the BMRM-family master "
                         "problems need one; use subbfgs, sublbfgs or proximal-bundle")
    return B


def _finish(bundle, reg, lam, alpha, w, n_iter, blocks) -> InnerSolution:
    a_bar = bundle.rmatvec(alpha)
    dual = float(alpha @ bundle.b) - scaled_conjugate(reg, a_bar, lam)
    grad = plane_values(bundle, w)
    primal = float(blocks.maxima(grad).sum()) + lam * float(reg.value(w))
    return InnerSolution(alpha, dual, w, max(primal - dual, 0.0), int(n_iter))


def _objective(P, c, B, k):
    """The QP's ``(P, q)`` over ``(alpha, t)``: upper triangle of ``blockdiag(P, 0)``, and
    ``(-c, B 1)``."""
    n = c.size
    Pz = np.zeros((n + k, n + k))
    Pz[:n, :n] = np.triu(P)
    return sp.csc_matrix(Pz), np.concatenate((-c, np.full(k, B)))


def _best_intercept(bundle, reg, lam, coef, candidates, B, blocks):
    """The candidate intercept (clipped to the box) of smallest primal model value."""
    best, best_val = None, math.inf
    for b in candidates:
        b = np.clip(np.nan_to_num(np.asarray(b, dtype=np.float64)), -B, B)
        x = np.concatenate((coef, b))
        val = float(blocks.maxima(plane_values(bundle, x)).sum())
        if val < best_val:
            best, best_val = x, val
    return best


class InterceptQP(InnerSolver):
    r"""Master problem of a quadratic :math:`\Omega` with intercepts, by Clarabel when it is
    installed, else OSQP (see the module
    docstring): variables :math:`(\alpha, t)`,

    .. math:: \min\ \tfrac12\alpha^T(G/\lambda)\alpha - c^T\alpha + B\,1^T t
              \quad\text{s.t.}\quad \alpha\in\Delta,\ -t \le A_b^T\alpha \le t ,

    with :math:`G = A_w M A_w^T` the bundle's Gram matrix (the regularizer's metric is zero on
    the intercepts). The multipliers are repaired onto the simplex and the dual value
    recomputed exactly; the intercept of the next iterate is read from the solver's multipliers
    of the two box rows (the sign that gives the lower model value, clipped to the box).

    Parameters
    ----------
    eps : float, default 1e-10
        OSQP's tolerances (the fallback without Clarabel; Clarabel solves to 1e-10).
    max_iter : int, default 20000
        OSQP's iteration limit.
    """

    name = "intercept-qp"
    families = ("intercept-qp",)

    def __init__(self, *, eps: float = 1e-10, max_iter: int = 20000):
        self.eps = float(eps)
        self.max_iter = int(max_iter)

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None):
        B = _box(reg)
        _, Ab, k = _parts(bundle, reg)
        G = np.asarray(bundle.G, dtype=np.float64)
        c = np.asarray(bundle.b, dtype=np.float64)
        n = c.size
        blocks = bundle_blocks(bundle)
        nb = blocks.n_blocks
        sums = np.ones((1, n)) if nb == 1 else blocks.indicator().T.toarray()
        try:
            import clarabel  # noqa: F401
        except ImportError:  # pragma: no cover - clarabel comes with the test extra
            solve = self._osqp
        else:
            solve = self._clarabel
        alpha, mult, n_iter = solve(G / lam, c, Ab, sums, B, warm, deadline)
        if alpha is not None and np.all(np.isfinite(alpha)):
            # an interior point leaves every multiplier positive: the tiny ones are zeroed so
            # that inactive planes age and get dropped (any point of the simplex stays valid)
            alpha = np.where(alpha > _ZERO * float(np.max(alpha, initial=0.0)), alpha, 0.0)
            alpha = blocks.normalize(alpha) if np.all(blocks.sums(alpha) > 0) else None
        else:
            alpha = None
        if alpha is None:  # the backend failed: the start (or a vertex) is still a valid bound
            alpha = warm if warm is not None else blocks.argmax_vertex(c)
        coef = np.divide(bundle.rmatvec(alpha, metric=True), -lam)[:-k]
        candidates = [np.zeros(k)]
        if mult is not None and np.all(np.isfinite(mult)):
            candidates += [mult, -mult]
        w = _best_intercept(bundle, reg, lam, coef, candidates, B, blocks)
        return _finish(bundle, reg, lam, alpha, w, n_iter, blocks)

    def _clarabel(self, P, c, Ab, sums, B, warm, deadline):
        """Clarabel (interior point: accurate in a few dozen iterations on these small
        dense QPs, where OSQP's ADMM needs thousands)."""
        import clarabel

        n, k = Ab.shape
        nb = sums.shape[0]
        Pz, q = _objective(P, c, B, k)
        A = np.zeros((nb + n + 2 * k, n + k))  # dense, then one conversion (small problems)
        A[:nb, :n] = sums
        A[nb:nb + n, :n] = -np.eye(n)
        A[nb + n:nb + n + k, :n] = Ab.T
        A[nb + n + k:, :n] = -Ab.T
        A[nb + n:nb + n + k, n:] = -np.eye(k)
        A[nb + n + k:, n:] = -np.eye(k)
        A = sp.csc_matrix(A)
        rhs = np.concatenate((np.ones(nb), np.zeros(n + 2 * k)))
        cones = [clarabel.ZeroConeT(nb), clarabel.NonnegativeConeT(n + 2 * k)]
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
        if deadline is not None:
            settings.time_limit = max(deadline - time.perf_counter(), 1e-3)
        sol = clarabel.DefaultSolver(Pz, q, A, rhs, cones, settings).solve()
        x = np.asarray(sol.x, dtype=np.float64)
        z = np.asarray(sol.z, dtype=np.float64)
        if x.size != n + k or z.size != nb + n + 2 * k:
            return None, None, int(sol.iterations)
        mult = z[nb + n: nb + n + k] - z[nb + n + k:]
        return x[:n], mult, int(sol.iterations)

    def _osqp(self, P, c, Ab, sums, B, warm, deadline):  # pragma: no cover - without clarabel
        import osqp

        n, k = Ab.shape
        nb = sums.shape[0]
        Pz = sp.block_diag([sp.triu(sp.csc_matrix(P)), sp.csc_matrix((k, k))], format="csc")
        q = np.concatenate((-c, np.full(k, B)))
        I_k = sp.identity(k, format="csc")
        A = sp.vstack([
            sp.hstack([sp.csc_matrix(sums), sp.csc_matrix((nb, k))]),
            sp.hstack([sp.identity(n), sp.csc_matrix((n, k))]),
            sp.hstack([sp.csc_matrix(Ab.T), -I_k]),
            sp.hstack([sp.csc_matrix(Ab.T), I_k]),
        ], format="csc")
        lo = np.concatenate((np.ones(nb), np.zeros(n), np.full(k, -np.inf), np.zeros(k)))
        hi = np.concatenate((np.ones(nb), np.full(n, np.inf), np.zeros(k), np.full(k, np.inf)))
        solver = osqp.OSQP()
        settings = dict(verbose=False, eps_abs=self.eps, eps_rel=self.eps, max_iter=self.max_iter)
        if deadline is not None:
            settings["time_limit"] = max(deadline - time.perf_counter(), 1e-3)
        major = int(str(getattr(osqp, "__version__", "0")).split(".")[0] or 0)
        settings["polishing" if major >= 1 else "polish"] = True
        solver.setup(Pz, q, A, lo, hi, **settings)
        if warm is not None:
            solver.warm_start(x=np.concatenate((warm, np.abs(warm @ Ab))))
        res = solver.solve(raise_error=False) if major >= 1 else solver.solve()
        if res.x is None or res.y is None:
            return None, None, 0
        y = np.asarray(res.y, dtype=np.float64)
        return (np.asarray(res.x[:n], dtype=np.float64), y[nb + n: nb + n + k] + y[nb + n + k:],
                int(getattr(res.info, "iter", 0)))


class InterceptLP(InnerSolver):
    r"""Master problem of the L1 norm with intercepts, by HiGHS: the LP of :class:`LPSimplex`
    with the intercept columns :math:`b \in [-B, B]^k`,

    .. math:: \min\ \sum_p \xi_p + \lambda 1^T(u + v)
              \quad\text{s.t.}\quad \langle a_{i,w}, u - v\rangle + \langle a_{i,b}, b\rangle
              + c_i \le \xi_{p(i)},\ u, v \ge 0,\ |b| \le B,

    whose dual is :math:`\max c^T\alpha - B\|A_b^T\alpha\|_1` over the simplex with
    :math:`\|A_w^T\alpha\|_\infty \le \lambda`. The multipliers are repaired as in
    :class:`LPSimplex` (mixed with an anchor until the slope condition holds as computed),
    and the dual value recomputed exactly.
    """

    name = "intercept-lp"
    families = ("intercept-lp",)

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None):
        B = _box(reg)
        Aw, Ab, k = _parts(bundle, reg)
        c = np.asarray(bundle.b, dtype=np.float64)
        n, d = Aw.shape
        blocks = bundle_blocks(bundle)
        m = blocks.n_blocks
        target = lam * (1.0 - _MARGIN)
        anchor = _anchor(Aw, target, blocks)
        if anchor is None:
            raise ValueError(_unbounded_message(lam, Aw, m))
        cost = np.concatenate((np.full(2 * d, lam), np.zeros(k), np.ones(m)))
        xi = sp.csr_matrix(-np.ones((n, 1))) if m == 1 else -blocks.indicator().tocsr()
        A_ub = sp.hstack([sp.csr_matrix(Aw), sp.csr_matrix(-Aw), sp.csr_matrix(Ab), xi],
                         format="csr")
        bounds = [(0.0, None)] * (2 * d) + [(-B, B)] * k + [(None, None)] * m
        options = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
        if deadline is not None:
            options["time_limit"] = max(deadline - time.perf_counter(), 1e-3)
        res = linprog(cost, A_ub=A_ub, b_ub=-c, bounds=bounds, method="highs", options=options)
        if res.x is None or res.ineqlin is None or res.ineqlin.marginals is None:
            if deadline is None:
                raise RuntimeError(f"HiGHS failed on the L1 master problem: {res.message}")
            w, alpha = np.zeros(d + k), anchor
        else:
            w = np.concatenate((res.x[:d] - res.x[d:2 * d], res.x[2 * d:2 * d + k]))
            alpha = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
            alpha = blocks.normalize(alpha) if np.all(blocks.sums(alpha) > 0) else anchor
        alpha = _repair(Aw, alpha, anchor, target, blocks)
        return _finish(bundle, reg, lam, alpha, w, getattr(res, "nit", 0), blocks)
