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
from typing import NamedTuple

import numpy as np

from ..bundle import PlaneBundle
from .._validation import Boolean, Option, Options
from ._base import Solver
from ._cutting_plane import (PLANE_OPTIONS, intercept_reason, add_planes, bundle_planes, master_solver, new_bundle,
                             solve_master)
from ._registry import register
from .ls_bmrm import LSBMRM

#: the master-problem families where ``line_search="auto"`` stabilises (``Regularizer.inner``):
#: the L1 norm's LP, with or without intercepts (a9a, L1 logistic with an intercept, lam 1e-4,
#: one run: certified 1e-3 in 88 iterations, 2.9 CPU s; Alg. 2 had a gap of 2.0e-2 at 30 s)
LP_MASTERS = ("lp", "intercept-lp")
#: theta of the stabilised path on an LP master: the query point w_c = 0.98 w_b + 0.02 w_t.
#: Measured (a9a, certified rtol 1e-4, iterations): L1 logistic lam 1e-4: 152 (0.02), 172
#: (0.05), 235 (0.1), > 304 (0.3); L1 squared hinge lam 1e-4: 170 against 294 (0.1); L1
#: logistic lam 1e-5: 225 against > 332 (0.1, not certified in 60 s)
LP_QUERY_FRACTION = 0.02


@register
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
        half aggregated into one plane (Kiwiel), which keeps the dual optimum ([TVSL10]_
        Sec. 3.1, Alg. 4).
    line_search : {"auto", True, False}, default "auto"
        Stabilise the iterates by OCAS's line search ([TVSL10]_ Alg. 3,
        :class:`~nsopt.solvers.LSBMRM`): the oracle is queried at
        :math:`w^c_t = (1 - \theta) w^b_t + \theta w_t` near the best point :math:`w^b_t`
        instead of at the master minimiser :math:`w_t`, with :math:`\theta` =
        :data:`LP_QUERY_FRACTION` = 0.02 (measured best on L1 problems; LS-BMRM's default 0.1
        needs 1.4-1.7x more iterations there). ``"auto"`` turns it on when the master problem
        is the L1 norm's linear program, with or without intercepts (``regularizer.inner`` in
        :data:`LP_MASTERS`), and off otherwise. ``False`` is Alg. 2 as published.
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

    The L1 norm does not stabilise the master problem: its minimiser is a vertex of the LP,
    and Alg. 2 is then Kelley's cutting-plane method, whose iterates jump between far vertices
    (measured on a9a, L1 logistic, lam 1e-4: a proven gap of 6.6e-2 after 600 iterations and
    10 s, 1.6e-2 after 30 s). With ``line_search="auto"`` the L1 path takes OCAS's query point
    and certifies 1e-4 there in about 150 iterations (``benchmarks/l1.py``). The certificate is
    unchanged: the LP dual value at repaired multipliers (:mod:`nsopt.inner.lp`).

    Cost per iteration: one oracle call (O(nnz(X))), O(n d) to extend the Gram matrix for
    ``n`` planes, and the master solve. Erratum E19: the paper's Alg. 2 returns the last
    iterate; the guarantee and nsopt's result are for the best one.

    ``Result.info``: ``n_planes`` (final bundle size), ``inner_time`` (seconds in the master
    problem), ``inner_iter`` (its iterations), ``line_search`` (whether the iterates were
    stabilised) and, with it, ``line_steps``.

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
        **PLANE_OPTIONS,
        "line_search": Option("auto", Options(("auto",)), Boolean(),
                              doc="OCAS's line search and query point (auto: on for an LP "
                                  "master, the L1 norm, where Alg. 2 is Kelley's method)"),
    }

    @classmethod
    def unsupported_reason(cls, problem):
        reason = super().unsupported_reason(problem)
        return reason if reason is not None else intercept_reason(problem, cls.name)

    class State(NamedTuple):
        w: np.ndarray              # w_t, the master minimiser: the next query point
        fun_best: float            # min_{i<t} J(w_i)
        lower_bound: float         # D(alpha_t): a valid lower bound on J*
        alpha: np.ndarray          # master multipliers, one per plane
        a_bar: np.ndarray          # A^T alpha_t  (certificate evidence)
        b_bar: float               # b^T alpha_t
        evidence: object           # its proof (nsopt.certificate.Evidence; None: none)
        bundle: PlaneBundle        # the planes (mutated in place across steps)
        n_planes: int
        inner_time: float          # cumulative seconds in the master problem
        inner_iter: int            # cumulative master iterations
        master: object             # the master-problem solver (nsopt.inner), chosen at init

    # ------------------------------------------------------------------------------------
    def stabilised(self, problem) -> bool:
        """Whether this run takes OCAS's line search (option ``line_search``; ``"auto"``: the
        master problem is a linear program, where the regularizer stabilises nothing)."""
        if self.line_search != "auto":
            return bool(self.line_search)
        return (getattr(problem.reg, "inner", None) in LP_MASTERS
                and self.inner in ("auto", "lp")
                and LSBMRM.unsupported_reason(getattr(problem, "problem", problem)) is None)

    @property
    def _stable(self) -> LSBMRM:
        """The stabilised path's LS-BMRM: configuration only (this solver's plane options and
        theta 0.02), the same for every problem, so it is built once."""
        solver = self.__dict__.get("_stable_solver")
        if solver is None:
            solver = LSBMRM(query_fraction=LP_QUERY_FRACTION, line_search=True,
                            **{k: getattr(self, k) for k in PLANE_OPTIONS})
            self.__dict__["_stable_solver"] = solver
        return solver

    def init(self, problem, x0):
        if self.stabilised(problem):  # LS-BMRM's iterations, with BMRM's plane policy
            return self._stable.init(problem, x0)
        bundle = new_bundle(problem, planes=self.planes)
        empty = self.State(w=x0, fun_best=math.inf, lower_bound=-math.inf,
                           alpha=np.zeros(bundle.n), a_bar=None, b_bar=None, evidence=None, bundle=bundle,
                           n_planes=bundle.n, inner_time=0.0, inner_iter=0,
                           master=master_solver(problem, self.inner))
        return self.step(problem, empty)

    def step(self, problem, s):
        if isinstance(s, LSBMRM.State):
            return self._stable.step(problem, s)
        ev = problem.evaluate(s.w)                                   # [TVSL10, Alg. 2, l. 4]
        fun_best = min(s.fun_best, ev.fun)
        alpha, n_new = add_planes(s.bundle, s.alpha, ev,             # l. 5
                                  remove_inactive=self.remove_inactive,
                                  max_planes=self.max_planes)
        del ev  # the bundle has the plane: its dense slope is not kept through the master solve
        m = solve_master(problem, s.bundle, alpha, n_new, s.master,  # l. 6
                         outer_gap=fun_best - s.lower_bound, inner_rtol=self.inner_rtol)
        improved = m.dual_value >= s.lower_bound  # an inexact solve may not improve the bound
        return self.State(
            w=m.w, fun_best=fun_best, lower_bound=max(m.dual_value, s.lower_bound),
            alpha=m.alpha, a_bar=m.a_bar if improved else s.a_bar,
            b_bar=m.b_bar if improved else s.b_bar,
            evidence=m.evidence if improved else s.evidence, bundle=s.bundle, n_planes=s.bundle.n,
            inner_time=s.inner_time + m.seconds, inner_iter=s.inner_iter + m.n_iter,
            master=s.master,
        )

    def info(self, s):
        if isinstance(s, LSBMRM.State):
            return {**self._stable.info(s), "inner_iter": s.inner_iter, "line_search": True}
        return {"n_planes": s.n_planes, "inner_time": s.inner_time, "inner_iter": s.inner_iter,
                "planes": bundle_planes(s.bundle), "line_search": False}
