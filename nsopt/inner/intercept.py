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

Backends: :class:`InterceptQP` (quadratic :math:`\Omega`, ``reg.inner == "intercept-qp"``):
with one intercept a root finding on the intercept whose every step is the ordinary simplex
QP at a fixed intercept, warm-started (:class:`~nsopt.inner.QPSimplex`); with several, or
when that falls short, the box QP by Clarabel (OSQP without it). :class:`InterceptLP` (L1, by
HiGHS, ``"intercept-lp"``). The intercepts of the next iterate are the master's own; the
reported ``dual_value`` is recomputed from the final multipliers.
"""
from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..regularizers import scaled_conjugate
from scipy.linalg import lstsq

from ._base import (InnerSolution, InnerSolver, bundle_blocks, check_int_option, default_tol,
                    past, plane_values)
from .lp import _MARGIN, _anchor, _repair, _unbounded_message
from .qp_simplex import QPSimplex

__all__ = ["InterceptQP", "InterceptLP"]

_ZERO = 1e-6  # multipliers below this fraction of the largest are taken as 0 (interior point)
_EPS = np.finfo(np.float64).eps
_QP_MAX_ITER = 5000  # pair updates per fixed-intercept solve of the path method


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


class _Offsets:
    """The planes of a bundle with other offsets (a read-only view for the simplex QP)."""

    def __init__(self, bundle, b: np.ndarray):
        self._bundle, self.b = bundle, b

    def __getattr__(self, name):
        return getattr(self._bundle, name)


class _CoefQuadratic:
    """The base quadratic regularizer acting on the coefficients of ``x = (w, b)``: the
    conjugate without the box term, for :class:`QPSimplex` at a fixed intercept (the
    bundle's metric is zero on the intercepts, so its ``w`` has a zero intercept part)."""

    inner = "qp"

    def __init__(self, reg):
        self._base, self._n = reg.base, reg.n_coef

    def scaled_conjugate(self, a, lam: float) -> float:
        return float(self._base.scaled_conjugate(np.asarray(a, dtype=np.float64)[:self._n], lam))


class _Point(tuple):
    """``(b, alpha, g)``: an intercept, the simplex QP's multipliers there, ``g = s^T alpha``."""

    b = property(lambda self: self[0])
    alpha = property(lambda self: self[1])
    g = property(lambda self: self[2])


class _PathSolve:
    r"""One master solve of :class:`InterceptQP` with one intercept, by root finding on the
    slope :math:`\varphi'(b) = s^T\alpha(b)` of the fixed-intercept master value (see there)."""

    def __init__(self, bundle, reg, lam, B, tol, deadline):
        self.bundle, self.reg, self.lam, self.B = bundle, reg, lam, B
        self.tol, self.deadline = tol, deadline
        self.s = np.ascontiguousarray(_parts(bundle, reg)[1][:, 0])
        self.c = np.asarray(bundle.b, dtype=np.float64)
        self.blocks = bundle_blocks(bundle)
        self.qp, self.proxy = QPSimplex(max_iter=_QP_MAX_ITER), _CoefQuadratic(reg)
        self.n_iter = 0
        self.gaps, self.duals = [], []  # box master gap and dual at each evaluated point

    # --- pieces ---------------------------------------------------------------------------
    def at(self, b: float, warm) -> _Point:
        r"""The fixed-intercept master at ``b`` (offsets ``c + b s``), warm-started.

        ``gap`` is the box master's gap at ``(alpha, b)``: the fixed-intercept gap plus
        :math:`b\,s^T\alpha + B|s^T\alpha|` (the two duals differ by that, the primals agree).
        """
        view = _Offsets(self.bundle, self.c + b * self.s)
        tol = None if self.tol is None else 0.25 * self.tol
        sol = self.qp.solve(view, self.proxy, self.lam, warm=warm, tol=tol,
                            deadline=self.deadline)
        self.n_iter += sol.n_iter
        g = float(self.s @ sol.alpha)
        self.gaps.append(max(sol.gap, 0.0) + b * g + self.B * abs(g))
        self.duals.append(sol.dual_value - b * g - self.B * abs(g))
        return _Point((float(b), sol.alpha, g))

    def start(self, warm) -> float:
        """The intercept at which the planes of ``warm``'s support are closest to level (the
        previous master's intercept when ``warm`` is its solution), clipped to the box."""
        if warm is None:
            return 0.0
        x = self.bundle.rmatvec(warm, metric=True) / -self.lam  # intercept part 0 (metric)
        v = plane_values(self.bundle, x)
        S = warm > 0
        a, s, v = warm[S] / warm[S].sum(), self.s[S], v[S]
        ds = s - a @ s
        var = float(a @ (ds * ds))
        if not var > 0:
            return 0.0
        b = -float(a @ (ds * (v - a @ v))) / var
        return float(np.clip(b, -self.B, self.B)) if math.isfinite(b) else 0.0

    def slope(self, alpha) -> float | None:
        r""":math:`d(s^T\alpha)/db` on the face of ``alpha``'s support (the KKT system of the
        face differentiated in b), or None when it is not positive."""
        S = np.flatnonzero(alpha > 0)
        labels = self.blocks.labels[S]
        P = self.blocks.n_blocks
        k = S.size
        K = np.zeros((k + P, k + P))
        K[:k, :k] = np.asarray(self.bundle.G)[np.ix_(S, S)] / self.lam
        K[np.arange(k), k + labels] = 1.0
        K[k + labels, np.arange(k)] = 1.0
        rhs = np.concatenate((self.s[S], np.zeros(P)))
        d = lstsq(K, rhs, lapack_driver="gelsy", check_finite=False)[0][:k]
        slope = float(self.s[S] @ d)
        return slope if math.isfinite(slope) and slope > 0 else None

    def dual(self, alpha) -> float:
        r""":math:`c^T\alpha - \alpha^T G\alpha / (2\lambda) - B|s^T\alpha|` (to rank candidates;
        the value reported is recomputed by :func:`_finish`)."""
        S = np.flatnonzero(alpha)
        a = alpha[S]
        quad = float(a @ np.asarray(self.bundle.G)[np.ix_(S, S)] @ a)
        return float(a @ self.c[S]) - 0.5 * quad / self.lam - self.B * abs(float(self.s @ alpha))

    def candidate(self, points, lo, hi):
        """The best of the last evaluated multipliers and, with a bracket, the combination of
        its ends with ``s^T alpha = 0``: ``(alpha, intercept guesses)``."""
        cands = [(p.alpha, p.b) for p in points[-2:]]
        if lo is not None and hi is not None:
            theta = hi.g / (hi.g - lo.g)
            alpha = self.blocks.normalize(theta * lo.alpha + (1.0 - theta) * hi.alpha)
            cands.append((alpha, theta * lo.b + (1.0 - theta) * hi.b))
        alpha, b = max(cands, key=lambda ab: self.dual(ab[0]))
        return alpha, [b] + [p.b for p in points[-2:]]

    def finish(self, alpha, intercepts) -> InnerSolution:
        """The solution at ``alpha``, its intercept the guess of lowest model value (one pass
        over the planes: the values at ``(coef, 0)`` plus ``b s``)."""
        x = np.divide(self.bundle.rmatvec(alpha, metric=True), -self.lam)  # intercept part 0
        v0 = plane_values(self.bundle, x)
        best = min((float(self.blocks.maxima(v0 + b * self.s).sum()), b)
                   for b in np.clip(intercepts, -self.B, self.B))[1]
        x[-1] = best
        return _finish(self.bundle, self.reg, self.lam, alpha, x, self.n_iter, self.blocks)

    # --- the root finding -----------------------------------------------------------------
    def run(self, warm, max_rounds: int) -> InnerSolution | None:
        B = self.B
        cur = self.at(self.start(warm), warm)
        points, lo, hi = [cur], None, None
        same_side = 0
        for _ in range(max_rounds):
            if cur.g < 0 and (lo is None or cur.b > lo.b):
                lo = cur
            if cur.g > 0 and (hi is None or cur.b < hi.b):
                hi = cur
            if lo is not None and hi is not None and not lo.b < hi.b:  # rounding: restart
                lo, hi = (cur, None) if cur.g < 0 else (None, cur)
            target = max(default_tol(self.tol, self.duals[-1]), 1e-13 * (1.0 + abs(self.duals[-1])))
            if (self.gaps[-1] <= target or cur.g == 0.0 or (cur.g > 0 and cur.b <= -B)
                    or (cur.g < 0 and cur.b >= B) or past(self.deadline)):
                break
            if lo is not None and hi is not None and hi.b - lo.b <= 4 * _EPS * (1 + abs(cur.b)):
                break
            slope = self.slope(cur.alpha)
            b_new = None if slope is None else cur.b - cur.g / slope
            if lo is not None and hi is not None:
                if b_new is None or not lo.b < b_new < hi.b or same_side >= 2:
                    if same_side >= 2:
                        b_new, same_side = 0.5 * (lo.b + hi.b), 0
                    else:  # regula falsi: exact on a linear piece of the slope
                        b_new = lo.b - lo.g * (hi.b - lo.b) / (hi.g - lo.g)
                        if not lo.b < b_new < hi.b:
                            b_new = 0.5 * (lo.b + hi.b)
            else:
                toward = -1.0 if cur.g > 0 else 1.0
                if b_new is None or not (b_new - cur.b) * toward > 0:
                    prev = points[-2].b if len(points) > 1 else cur.b
                    b_new = cur.b + toward * max(2.0 * abs(cur.b - prev), 1e-3 * (1.0 + abs(cur.b)))
            b_new = float(np.clip(b_new, -B, B))
            nxt = self.at(b_new, cur.alpha)
            same_side = same_side + 1 if (nxt.g > 0) == (cur.g > 0) else 0
            points.append(nxt)
            cur = nxt
        sol = self.finish(*self.candidate(points, lo, hi))
        if not (math.isfinite(sol.dual_value) and np.all(np.isfinite(sol.w))):
            return None
        target = max(default_tol(self.tol, sol.dual_value), 1e-10 * (1.0 + abs(sol.dual_value)))
        if sol.gap > target and not past(self.deadline):
            return None  # e.g. the root at a kink of the slope: the caller falls back
        return sol


class InterceptQP(InnerSolver):
    r"""Master problem of a quadratic :math:`\Omega` with intercepts (see the module docstring):

    .. math:: \max_{\alpha\in\Delta}\ c^T\alpha - \tfrac12\alpha^T(G/\lambda)\alpha
              - B\,\|A_b^T\alpha\|_1 ,

    with :math:`G = A_w M A_w^T` the bundle's Gram matrix (the regularizer's metric is zero on
    the intercepts).

    With one intercept (``method="path"``, the default) the master is solved as a convex
    problem in the intercept alone: for a fixed :math:`b` the master is the ordinary quadratic
    one over the simplex with offsets :math:`c + b\,s` (:math:`s = A_b`), solved by the
    warm-started SMO of :class:`~nsopt.inner.QPSimplex`; its value :math:`\varphi(b)` is
    convex with slope :math:`s^T\alpha(b)` (Danskin), piecewise linear in b on each support.
    Newton steps on that slope (the derivative of the face's KKT solution), safeguarded by
    a bracket and regula falsi, find the root on :math:`[-B, B]`; the multipliers returned are
    those of the root, or the convex combination of the bracket's two ends that makes
    :math:`s^T\alpha = 0` exactly (whose value is at least the same combination of theirs:
    the dual is concave). A root outside the box leaves :math:`b = \pm B` and
    :math:`\alpha(\pm B)`, the box term then exact. Each solve is warm-started from the
    previous one, so a BMRM step costs a few pair updates, and the multipliers of inactive
    planes are exactly 0 (they age and are dropped, and a warm-start plane without evidence
    leaves the support and lets the bound be certified).

    Several intercepts, ``method="ipm"``, or a path solve short of the target gap use the box QP
    in variables :math:`(\alpha, t)` by Clarabel (OSQP when Clarabel is absent),

    .. math:: \min\ \tfrac12\alpha^T(G/\lambda)\alpha - c^T\alpha + B\,1^T t
              \quad\text{s.t.}\quad \alpha\in\Delta,\ -t \le A_b^T\alpha \le t ,

    whose intercept is read from the multipliers of the two box rows; it is not
    warm-started (an interior point), and multipliers below ``1e-6`` of the largest are
    zeroed so that inactive planes age.

    Either way the multipliers are feasible, the dual value is recomputed exactly, and the
    intercept of the next iterate is the candidate (clipped to the box) of lowest model value.

    Parameters
    ----------
    method : {"auto", "path", "ipm"}, default "auto"
        ``"auto"``: ``"path"`` with one intercept, else ``"ipm"``.
    eps : float, default 1e-10
        OSQP's tolerances (the fallback without Clarabel; Clarabel solves to 1e-10).
    max_iter : int, default 20000
        OSQP's iteration limit.
    max_rounds : int, default 20
        Most simplex QP solves per master solve of the path method; when they do not reach
        the target gap (e.g. an optimal intercept at a kink of the slope, where
        :math:`\alpha(b)` jumps), the box QP is solved instead.
    """

    name = "intercept-qp"
    families = ("intercept-qp",)

    def __init__(self, *, method: str = "auto", eps: float = 1e-10, max_iter: int = 20000,
                 max_rounds: int = 20):
        if method not in ("auto", "path", "ipm"):
            raise ValueError(f"method must be 'auto', 'path' or 'ipm', got {method!r}")
        self.method = method
        self.eps = float(eps)
        self.max_iter = int(max_iter)
        self.max_rounds = check_int_option(max_rounds, "max_rounds")

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None):
        B = _box(reg)
        k = reg.n_intercepts
        if k == 1 and self.method != "ipm":
            sol = _PathSolve(bundle, reg, lam, B, tol, deadline).run(warm, self.max_rounds)
            if sol is not None:
                return sol
        return self._solve_ipm(bundle, reg, lam, warm, tol, deadline)

    def _solve_ipm(self, bundle, reg, lam, warm, tol, deadline=None):
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
