r"""The aggregated k-bundle: BMRM with at most ``k`` planes ([TVSL10]_ Sec. 3.1, Alg. 4).

When the bundle is full, every plane but the newest ``k - 2`` is replaced by their
aggregate :math:`(\hat a, \hat b) = \sum_{i \in I} \alpha_i (a_i, b_i) / \sum_{i\in I}\alpha_i`
with the last multipliers (Kiwiel), which keeps the master dual optimum; the new plane is then
added. For ``k = 2`` and :math:`\Omega = \tfrac12\|w\|^2` the master problem has the closed
form of eq. (14).
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import NamedTuple

import numpy as np

from ..bundle import PlaneBundle
from .._validation import Boolean, Interval, NoneOr, Option
from ._base import Solver
from ._cutting_plane import PLANE_OPTIONS, add_planes, intercept_reason, master_solver, new_bundle, solve_master
from ._registry import register


@register
class KBundle(Solver):
    r"""BMRM with a bundle of at most ``bundle_size`` planes kept by aggregation.

    Parameters
    ----------
    bundle_size : int >= 2 or None, default 50
        ``k``: the number of planes kept (not counting the fixed plane of the loss's lower
        bound, which keeps L1 master problems bounded). ``None`` keeps every plane and drops planes idle for
        ``remove_inactive`` iterations (BMRM's heuristic, the paper's ``k = inf``). The memory
        is ``k`` d-vectors. The default was 10 until issue 11: on a 200 x 5 three-class
        Crammer-Singer problem (15 variables) at lam = 1e-4 the aggregate of 10 planes needed
        3,036 iterations (6 s; 1e-6: not certified in 20 s) against about 150 with 30 or more
        planes (0.3 s), where BMRM needs 0.4 s.
    closed_form : bool, default True
        For ``k = 2`` with ``L2()``, use the closed-form step of [TVSL10]_ eq. (14) (no
        master solver at all); ``False`` solves the same 2-plane problem with the QP backend.
    inner, inner_rtol
        As in :class:`~nsopt.solvers.BMRM`.
    remove_inactive : int >= 1 or None, default 10
        Planes whose multiplier was 0 in the last ``remove_inactive`` master solves are dropped
        before the bundle is aggregated (their multipliers are 0, so the dual value is kept),
        and only a bundle still full is aggregated. None: the paper's policy (aggregate every
        plane but the newest ``k - 2`` as soon as the bundle is full).

    Notes
    -----
    Notation: ``a_hat, b_hat`` the aggregated plane; for ``k = 2`` and L2,
    :math:`w_{t-1} = -\hat a/\lambda` and

    .. math:: \eta = \min\Big(\max\Big(0, \frac{b_t - \hat b + w_{t-1}^T a_t +
              \lambda\|w_{t-1}\|^2}{\|a_t + \lambda w_{t-1}\|^2/\lambda}\Big), 1\Big),\quad
              w_t = (1-\eta) w_{t-1} - \tfrac{\eta}{\lambda} a_t,\quad
              \hat b \leftarrow (1-\eta)\hat b + \eta b_t .

    Certificate: the aggregated plane itself: :math:`D = \hat b - \tfrac\lambda2\|w_t\|^2`.
    Erratum E1: the printed gap of Alg. 4 subtracts :math:`\tfrac\lambda2\|w_t\|^2`; the dual
    value is :math:`\hat b - \tfrac\lambda2\|w_t\|^2`, so the gap is
    :math:`\min_i J(w_i) + \tfrac\lambda2\|w_t\|^2 - \hat b` (tested in
    ``tests/test_bundle_solvers.py::test_erratum_E1_kbundle_gap``).

    Idle planes go first (issue 11): aggregating old planes that still carry weight while the
    bundle holds idle ones throws away what the model knows. At lam = 1e-6 on
    ``benchmarks/small.py``'s 1000 x 20 piecewise-linear problems the paper's policy needed
    544-854 iterations (LAD, epsilon-insensitive, quantile, hinge); dropping idle planes first,
    289-547 (BMRM, which keeps every active plane: 331-585).
    Where the active planes outnumber k the two policies are within noise of each other. These
    are cutting-plane counts at small lam (the bound below is :math:`O(1/(\lambda\epsilon))`):
    subBFGS needs 39-80 iterations there.

    Theory: Theorems 4 and 5 hold verbatim for any ``k >= 2`` (their proof uses only the
    aggregate and the new plane), so at most :math:`8 G^2 H^*/(\lambda\epsilon)` iterations.

    References
    ----------
    .. [TVSL10] C. H. Teo et al. Bundle methods for regularized risk minimization. JMLR 2010.
       Sec. 3.1, Algorithm 4, eqs. (13)-(14).
    """

    name = "kbundle"
    requires = ("regularized_risk",)
    self_certifying = True
    history_fields = ("n_planes",)
    options = {
        **{k: v for k, v in PLANE_OPTIONS.items() if k != "max_planes"},
        "bundle_size": Option(50, NoneOr(Interval(Integral, 2, None, closed="left")),
                              doc="planes kept (None: all, with remove_inactive)"),
        "closed_form": Option(True, Boolean(), doc="closed-form step for k = 2 with L2"),
    }

    class State(NamedTuple):
        w: np.ndarray              # w_t, the master minimiser: the next query point
        fun_best: float
        lower_bound: float         # dual value of the (aggregated) model
        a_bar: np.ndarray
        b_bar: float
        evidence: object           # proof of lower_bound (nsopt.certificate.Evidence or None)
        alpha: np.ndarray | None   # multipliers (None on the closed-form path)
        bundle: PlaneBundle | None  # None on the closed-form path
        master: object
        n_planes: int
        recipe: object = None      # closed-form path: the evidence of the aggregate (_Recipe)

    @classmethod
    def unsupported_reason(cls, problem):
        reason = super().unsupported_reason(problem)
        if reason is None:
            reason = intercept_reason(problem, cls.name)
        if reason is None and problem.reg.polyhedral:
            reason = (f"kbundle aggregates planes, which converges only with a strongly convex "
                      f"regularizer; {type(problem.reg).__name__} has a polyhedral conjugate "
                      "(the aggregated model stalls): use 'bmrm', which keeps every plane")
        return reason

    def _closed_form(self, problem) -> bool:
        return (self.closed_form and self.bundle_size == 2 and problem.reg.self_conjugate
                and self.planes is None)

    def init(self, problem, x0):
        if self._closed_form(problem):
            ev = problem.evaluate(x0)                                  # [TVSL10, Alg. 4, l. 2]
            lam = problem.lam
            a1 = ev.loss_subgradient
            b1 = ev.loss_value - float(a1 @ x0)
            w1 = -a1 / lam                                             # l. 3
            recipe = _Recipe.start(ev)
            return self.State(w=w1, fun_best=ev.fun, lower_bound=b1 - 0.5 * lam * float(w1 @ w1),
                              a_bar=a1.copy(), b_bar=b1, evidence=recipe.evidence((a1, b1)),
                              alpha=None, bundle=None, master=None, n_planes=2,
                              recipe=recipe)
        # the loss's floor plane is kept apart from the k planes
        bundle = new_bundle(problem, planes=self.planes)
        empty = self.State(w=x0, fun_best=math.inf, lower_bound=-math.inf, a_bar=None, b_bar=None,
                           evidence=None, alpha=np.zeros(bundle.n), bundle=bundle,
                           master=master_solver(problem, self.inner), n_planes=bundle.n)
        return self.step(problem, empty)

    def step(self, problem, s):
        ev = problem.evaluate(s.w)
        fun_best = min(s.fun_best, ev.fun)
        if s.bundle is None:
            return self._step_closed_form(problem, s, ev, fun_best)
        k = self.bundle_size
        alpha, bundle = s.alpha, s.bundle
        if (k is not None and self.remove_inactive is not None and alpha.size == bundle.n
                and bundle.n >= k + bundle.n_fixed):
            # full: planes idle for remove_inactive solves make the room if there are any
            # (their multipliers are 0: the dual value is kept); else the aggregation does
            idle = bundle.age >= self.remove_inactive
            idle[: bundle.n_fixed] = False
            if idle.any():
                alpha = alpha[bundle.drop(idle)]
        alpha, n_new = add_planes(bundle, alpha, ev,
                                  remove_inactive=self.remove_inactive if k is None else None,
                                  max_planes=None if k is None else k + s.bundle.n_fixed,
                                  keep_newest=None if k is None else k - 2)
        del ev  # the bundle has the plane: its dense slope is not kept through the master solve
        m = solve_master(problem, s.bundle, alpha, n_new, s.master,
                         outer_gap=fun_best - s.lower_bound, inner_rtol=self.inner_rtol)
        improved = m.dual_value >= s.lower_bound
        return self.State(w=m.w, fun_best=fun_best, lower_bound=max(m.dual_value, s.lower_bound),
                          a_bar=m.a_bar if improved else s.a_bar,
                          b_bar=m.b_bar if improved else s.b_bar,
                          evidence=m.evidence if improved else s.evidence, alpha=m.alpha,
                          bundle=s.bundle, master=s.master, n_planes=s.bundle.n)

    def _step_closed_form(self, problem, s, ev, fun_best):
        lam, w = problem.lam, s.w
        a_t = ev.loss_subgradient
        b_t = ev.loss_value - float(a_t @ w)                           # l. 6
        r = a_t + lam * w
        denom = float(r @ r) / lam
        num = b_t - s.b_bar + float(w @ a_t) + lam * float(w @ w)
        eta = min(max(0.0, num / denom), 1.0) if denom > 0 else (1.0 if num > 0 else 0.0)  # (14)
        w_new = (1.0 - eta) * w - (eta / lam) * a_t                    # l. 8
        b_hat = (1.0 - eta) * s.b_bar + eta * b_t                      # l. 9
        dual = b_hat - 0.5 * lam * float(w_new @ w_new)                # E1: gap = J_best - dual
        # the aggregate (a_bar, b_bar) = (-lam w_t, b_hat) is both the model and the evidence;
        # eta = 0 is allowed, so the dual never decreases (the base keeps the best bound anyway)
        recipe = s.recipe.mix(eta, ev)
        a_hat = -lam * w_new
        return self.State(w=w_new, fun_best=fun_best, lower_bound=dual, a_bar=a_hat,
                          b_bar=b_hat, evidence=recipe.evidence((a_hat, b_hat)), alpha=None,
                          bundle=None, master=None, n_planes=2, recipe=recipe)


class _Recipe(NamedTuple):
    r"""The evidence of the closed-form path's aggregate :math:`\hat a_t = (1-\eta)\hat a_{t-1}
    + \eta a_t`: the same mix of dual points (margin losses), or of query points with weights
    (every point with a nonzero weight is kept: one d-vector per iteration until an
    :math:`\eta = 1` step resets it)."""

    t: np.ndarray | None
    points: tuple
    weights: np.ndarray

    @classmethod
    def start(cls, ev):
        if ev.loss_dual is not None:
            return cls(ev.loss_dual, (), np.zeros(0))
        return cls(None, (ev.w,), np.ones(1))

    def mix(self, eta, ev):
        if self.t is not None and ev.loss_dual is not None:
            return _Recipe((1.0 - eta) * self.t + eta * ev.loss_dual, (), self.weights)
        keep = (1.0 - eta) * self.weights
        points = tuple(p for p, c in zip(self.points, keep) if c > 0) + (ev.w,)
        return _Recipe(None, points, np.append(keep[keep > 0], eta))

    def evidence(self, plane):
        from ..certificate import DualPoint, QueryPoints

        if self.t is not None:
            return DualPoint(self.t, plane=plane)
        keep = self.weights > 0
        if not keep.any():
            return None
        points = tuple(p for p, k in zip(self.points, keep) if k)
        w = self.weights[keep]
        return QueryPoints(points, (w / w.sum())[:, None], np.zeros(1), plane=plane)
