r"""BMRM: the bundle method for regularized risk minimization ([TVSL10]_ Alg. 2).

.. math::
    w_t = \arg\min_w\; J_t(w) := \lambda\Omega(w) + \max_{i \le t}\,\langle a_i, w\rangle + b_i,

with :math:`a_t \in \partial R(w_{t-1})` and :math:`b_t = R(w_{t-1}) - \langle a_t, w_{t-1}\rangle`.
The master problem is solved in the dual over the simplex (:mod:`nsopt.inner`):
:math:`\max_\alpha b^T\alpha - \lambda\Omega^*(-A^T\alpha/\lambda)`, whose value at the returned
multipliers is a lower bound on :math:`J^*` at every iteration; the gap is
:math:`\min_{i \le t} J(w_i) - D(\alpha_t)`.
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from ..bundle import PlaneBundle
from ..inner import select
from ._base import Option, Solver, in_range, positive_int


def _inactive_limit(v):
    if v is None:
        return None
    return positive_int("remove_inactive")(v)


def _max_planes(v):
    if v is None:
        return None
    return positive_int("max_planes", 3)(v)


def _inner_choice(v):
    choices = ("auto", "qp", "osqp", "lp", "smooth")
    if v not in choices:
        raise ValueError(f"inner must be one of {choices}, got {v!r}")
    return v


class BMRM(Solver):
    r"""Bundle Method for Regularized Risk Minimization.

    Minimises :math:`J(w) = \lambda\Omega(w) + R(w)` (a :class:`~nsopt.RegularizedRisk` with any
    regularizer of :mod:`nsopt.regularizers`) by cutting planes of :math:`R` only; the
    regularizer stabilises the master problem, so there is no parameter to tune.

    Parameters
    ----------
    inner : {"auto", "qp", "osqp", "lp", "smooth"}
        Master-problem backend; ``"auto"`` picks by regularizer: a warm-started compiled SMO
        QP for L2 / quadratic forms, HiGHS LP for L1, accelerated projected gradient for
        smooth conjugates (Lp, entropies, KL, elastic net).
    inner_rtol : float in [0, 1), default 1e-2
        The master problem is solved to a duality gap of ``inner_rtol`` times the current
        outer gap (and at least to rounding, 1e-12 relative). 0 means solve to rounding.
        An inexact solve never weakens validity: the reported bound is the dual value.
    remove_inactive : int or None, default 10
        Drop a plane whose multiplier has been 0 for this many consecutive iterations
        ([TVSL10]_ Sec. 5.1.1); None keeps every plane.
    max_planes : int or None
        Hard cap on the bundle; when full, zero-multiplier planes are dropped and the older
        half aggregated into one plane (Kiwiel), which keeps the dual optimum (C8).
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`).

    Notes
    -----
    Notation: ``a, b`` slope and offset of a cutting plane of :math:`R`, ``alpha`` the master
    multipliers, :math:`w_t` the master minimiser ([TVSL10]_ Alg. 2).

    Certificate: :math:`D(\alpha_t) = \bar b - \lambda\Omega^*(-\bar a/\lambda)` with
    :math:`(\bar a, \bar b) = \sum_i \alpha_i (a_i, b_i)` (source ``"bundle-dual"``); with a
    finite ``loss.lower_bound`` the plane :math:`R \ge` lower bound is in the bundle from the
    start, which keeps L1 master problems bounded ([TLSV07]_).

    Cost per iteration: one oracle call (O(nnz(X))), O(n d) to extend the Gram matrix for
    ``n`` planes, and the master solve. Erratum E19: the paper's Alg. 2 returns the last
    iterate; the guarantee and nsopt's result are for the best one.

    ``Result.info``: ``n_planes`` (final bundle size), ``inner_time`` (seconds in the master
    problem), ``inner_iter`` (its iterations).

    References
    ----------
    .. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
       regularized risk minimization. JMLR 11:311-365, 2010. Algorithm 2.
    .. [TLSV07] C. H. Teo, Q. V. Le, A. J. Smola, S. V. N. Vishwanathan. A scalable modular
       convex solver for regularized risk minimization. KDD 2007.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> res = nsopt.solvers.BMRM(rtol=1e-4).solve(J)
    >>> bool(res.success and res.lower_bound <= res.fun)
    True
    """

    name = "bmrm"
    requires = ("regularized_risk",)
    self_certifying = True
    history_fields = ("n_planes", "inner_time", "inner_iter")
    options = {
        "inner": Option("auto", _inner_choice),
        "inner_rtol": Option(1e-2, in_range("inner_rtol", 0.0, 1.0, hi_open=True)),
        "remove_inactive": Option(10, _inactive_limit),
        "max_planes": Option(None, _max_planes),
    }

    class State(NamedTuple):
        w: np.ndarray              # w_t, the master minimiser: the next query point
        fun_best: float            # min_{i<t} J(w_i)
        lower_bound: float         # D(alpha_t): a valid lower bound on J*
        alpha: np.ndarray          # master multipliers, one per plane
        a_bar: np.ndarray          # A^T alpha_t  (certificate evidence)
        b_bar: float               # b^T alpha_t
        bundle: PlaneBundle        # the planes (mutated in place across steps)
        n_planes: int
        inner_time: float          # cumulative seconds in the master problem
        inner_iter: int            # cumulative master iterations
        master: object             # the master-problem solver (nsopt.inner), chosen at init

    # ------------------------------------------------------------------------------------
    def init(self, problem, x0):
        reg = problem.reg
        bundle = PlaneBundle(problem.dim, metric=reg.metric if reg.inner == "qp" else None)
        floor = problem.loss.lower_bound
        if math.isfinite(floor):
            bundle.add_fixed(np.zeros(problem.dim), float(floor))
        empty = self.State(w=x0, fun_best=math.inf, lower_bound=-math.inf,
                           alpha=np.zeros(bundle.n), a_bar=None, b_bar=None, bundle=bundle,
                           n_planes=bundle.n, inner_time=0.0, inner_iter=0,
                           master=select(reg, self.inner))
        return self.step(problem, empty)

    def step(self, problem, s):
        bundle = s.bundle
        ev = problem.evaluate(s.w)                                   # [TVSL10, Alg. 2, l. 4]
        fun_best = min(s.fun_best, ev.fun)
        alpha = s.alpha
        if self.remove_inactive is not None and bundle.n > bundle.n_fixed:
            idle = bundle.age >= self.remove_inactive
            alpha = alpha[bundle.drop(idle)]
        if self.max_planes is not None and bundle.n >= self.max_planes:
            alpha = bundle.compress(alpha, self.max_planes)
        bundle.add_at(ev.w, ev.loss_value, ev.loss_subgradient)     # l. 5: R_t^CP
        warm = np.append(alpha, 0.0) if alpha.sum() > 0 else None
        outer_gap = fun_best - s.lower_bound
        tol = self.inner_rtol * outer_gap if math.isfinite(outer_gap) and self.inner_rtol > 0 else None
        t0 = time.perf_counter()
        sol = s.master.solve(bundle, problem.reg, problem.lam, warm=warm, tol=tol)  # l. 6
        inner_time = s.inner_time + time.perf_counter() - t0
        bundle.update_ages(sol.alpha)
        a_bar, b_bar = bundle.combine(sol.alpha)
        lower = max(sol.dual_value, s.lower_bound)
        keep_old = sol.dual_value < s.lower_bound  # an inexact solve may not improve the bound
        return self.State(
            w=sol.w, fun_best=fun_best, lower_bound=lower, alpha=sol.alpha,
            a_bar=s.a_bar if keep_old else a_bar, b_bar=s.b_bar if keep_old else b_bar,
            bundle=bundle, n_planes=bundle.n, inner_time=inner_time,
            inner_iter=s.inner_iter + sol.n_iter, master=s.master,
        )

    def info(self, s):
        return {"n_planes": s.n_planes, "inner_time": s.inner_time, "inner_iter": s.inner_iter}
