r"""LS-BMRM: BMRM with a line search ([TVSL10]_ Alg. 3; OCAS generalised).

.. math::
    w_t &= \arg\min_w \lambda\Omega(w) + \max_{i\le t} \langle a_i, w\rangle + b_i
          \quad (a_t \in \partial R(w^c_{t-1})),\\
    \eta_t &= \arg\min_{\eta \ge 0} J(w^b_{t-1} + \eta (w_t - w^b_{t-1})),\qquad
    w^b_t = w^b_{t-1} + \eta_t (w_t - w^b_{t-1}),\\
    w^c_t &= (1 - \theta) w^b_t + \theta w_t .
"""
from __future__ import annotations

import math
from numbers import Real
from typing import NamedTuple

import numpy as np

from ..bundle import PlaneBundle
from .._linalg import lincomb
from ..oracle import freeze
from .._validation import Boolean, Interval, Option
from ._base import Solver
from ._cutting_plane import (PLANE_OPTIONS, intercept_reason, add_planes, bundle_planes, master_solver, new_bundle,
                             solve_master)
from ._registry import register
from ..linesearch import LineSearchResult, exact_line_search, smooth_line_search


#: a step on kept scores may amplify their rounding to this much of their size (relative)
_SCORES_RTOL = 1e-13


def _amplified(eta, f_t, f_b) -> bool:
    r"""Whether the step ``eta`` on the line of kept scores :math:`f_b + \eta (f_t - f_b)`
    amplifies the rounding of :math:`f_t - f_b` (about :math:`4\epsilon(|f_t| + |f_b|)`
    per entry) beyond :data:`_SCORES_RTOL` of the scores' size (found by hypothesis: a step
    of 3.5e13 along a direction of size 1e-16 moved the kept scores by 7.5e-3)."""
    if not (math.isfinite(eta) and eta > 1.0) or f_b.size == 0:
        return False
    size = _max_abs(f_t) + _max_abs(f_b)
    return eta * 4.0 * np.finfo(np.float64).eps * size > _SCORES_RTOL * (1.0 + size)


def _max_abs(f) -> float:
    r""":math:`\max_i |f_i|` of kept scores: an array's, or the scores' own ``max_abs`` where
    they are kept elsewhere (:mod:`nsopt.distributed`: on the shards)."""
    own = getattr(f, "max_abs", None)
    return float(own()) if own is not None else float(np.max(np.abs(f)))


def _combine(a, x, b, y, out=None):
    """:math:`a x + b y` of kept scores: :func:`~nsopt._linalg.lincomb`, or the scores' own
    ``lincomb`` where they are kept elsewhere (:mod:`nsopt.distributed`: combined on the
    shards, by the same operations)."""
    own = getattr(x, "lincomb", None)
    return lincomb(a, x, b, y, out=out) if own is None else own(a, b, y, out=out)


def _line_search(line, guess: float = 1.0) -> LineSearchResult:
    """The step on ``line``: :func:`~nsopt.linesearch.smooth_line_search` where the line is a differentiable
    loss's plus a cheap regularizer's, else :func:`~nsopt.linesearch.exact_line_search`."""
    res = smooth_line_search(line, guess)
    return res if res is not None else exact_line_search(line, lo=0.0)


def _plane_scores(problem, s):
    """The kept scores of the query point when its plane may be taken from them: only where
    the certificate is a dual point (``bundle.evidence_kind == "dual"``: margin losses, whose
    bound is rebuilt from ``t`` alone, any ``t`` in the box being valid). Where the evidence
    is the query points themselves (:class:`~nsopt.certificate.QueryPoints`: every other
    loss), :meth:`~nsopt.certificate.Certificate.check` re-evaluates the loss at the stored
    point, so the plane must be the one the data give there: kept scores differ from
    :math:`Xw_c` by rounding, which at a kink (a LAD residual of zero at an LP vertex) flips
    the subgradient, and with L1 the rebuilt aggregate then leaves the conjugate's domain
    (found: 4 of 36 small LAD + L1 runs, at least 12 of 36 with an intercept: bounds that
    ``check`` recomputed as -inf). A loss whose query-point evidence becomes a dual point in
    the certificate (``certifies_by_dual_point``: a sharded margin loss) counts as dual."""
    return s.scores_query if _takes_planes_from_scores(problem, s.bundle) else None


def _takes_planes_from_scores(problem, bundle) -> bool:
    """Whether the query point's plane may come from its kept scores (:func:`_plane_scores`)."""
    return (bundle.evidence_kind == "dual"
            or bool(getattr(problem.loss, "certifies_by_dual_point", False)))


@register
class LSBMRM(Solver):
    r"""BMRM with a line search between the best point and the master minimiser.

    The oracle is queried at :math:`w^c_t = (1-\theta) w^b_t + \theta w_t`, near the best point
    :math:`w^b_t`, which is found by an exact line search on :math:`J` from :math:`w^b_{t-1}`
    towards the master minimiser :math:`w_t`. The cutting-plane model, and so the certificate,
    is BMRM's: the gap is :math:`J(w^b_t) - J_t(w_t)` ([TVSL10]_ Alg. 3).

    Parameters
    ----------
    query_fraction : float in (0, 1], default 0.1
        :math:`\theta`: how far from the best point towards the master minimiser the oracle
        is queried. Formerly ``theta`` (deprecated alias). **Erratum**: [TVSL10]_ (after Alg. 3)
        says :math:`\theta = 0.9` "works well in practice", citing OCAS; but OCAS places its cut
        at :math:`t + 0.1(1 - t)` along the segment from the best point, i.e.
        :math:`w^c = 0.9\,w^b + 0.1\,w_t`: :math:`\theta = 0.1` in this convention. Measured
        (L2 hinge, certified rtol 1e-3, one run): a9a at lam 1e-4 / 1e-5 / 1e-6 needs 52 / 119 /
        239 iterations with 0.1 against 466 / 1792 / >1954 (20 s cap) with 0.9; mushrooms 161 /
        177 / 194 against 765 / 831 / 783. 0.9 stays available.
    line_search : bool, default True
        ``False`` takes :math:`\eta_t = 1`, which reproduces BMRM's iterates ([TVSL10]_ Alg. 3 with
        :math:`\eta_t = 1` is Alg. 2).
    reuse_scores : bool, default True
        Keep the loss's scores :math:`f^b = Xw^b_t` and :math:`f_t = Xw_t` (linear-model
        losses, :meth:`~nsopt.RegularizedRisk.scores`), as OCAS keeps its outputs
        ([FS08]_): the scores of :math:`w^c_t` and of every point of the line are their
        linear combinations, so an iteration makes one data pass (:math:`Xw_t` and the new
        plane's :math:`X^Tg`) instead of three. ``False`` recomputes them (the same iterates
        up to rounding); ignored when the problem has no scores.
    inner, inner_rtol, remove_inactive, max_planes
        As in :class:`~nsopt.solvers.BMRM`.

    Notes
    -----
    Notation: ``w_best`` is :math:`w^b_t`, ``w_query`` is :math:`w^c_t` ([TVSL10]_ Alg. 3).
    The master minimiser :math:`w_t = (w^c_t - (1 - \theta) w^b_t) / \theta` is not kept in
    the state (one d-vector less: 8 MB at :math:`d = 10^6`).

    Line search: on a differentiable loss (logistic, squared hinge) plus a regularizer's
    line, the secant search :func:`~nsopt.linesearch.smooth_line_search` (5-7 O(m) derivatives of the loss
    instead of about 17; issue 11); otherwise exact when the problem's line function knows
    its breakpoints (hinge-type losses: ``LineFunction.minimize``), else a subgradient Wolfe
    search (:func:`nsopt.linesearch.exact_line_search`). Its first trial is the last step.
    The exact searches return :math:`J` at the step, which becomes the best value without
    another evaluation. The step is taken
    over :math:`\eta \ge 0` as in OCAS (the paper writes :math:`\eta \in \mathbb{R}`; a
    negative step is never needed for the guarantee, Theorem 7). With ``reuse_scores`` the
    line's scores are :math:`f^b + \eta (f_t - f^b)`: it touches no data (O(m) work plus
    O(d) for the regularizer); otherwise it costs two passes (``X w_b`` and ``X d``).

    Certificate: the master dual value, as BMRM (source ``"bundle-dual"``).

    ``Result.info``: ``n_planes``, ``inner_time``, ``line_steps`` (steps with
    :math:`\eta_t > 0`).

    References
    ----------
    .. [TVSL10] C. H. Teo et al. Bundle methods for regularized risk minimization. JMLR 2010.
    .. [FS08] V. Franc, S. Sonnenburg. Optimized cutting plane algorithm for support vector
       machines. ICML 2008.
    """

    name = "ls-bmrm"
    requires = ("regularized_risk", "restrict")
    self_certifying = True
    history_fields = ("n_planes", "inner_time", "eta")
    options = {
        **PLANE_OPTIONS,
        "query_fraction": Option(0.1, Interval(Real, 0, 1, closed="right"),
                                 doc="theta: where to query between the best point (0) and "
                                     "the master minimiser (1)", renamed_from="theta"),
        "line_search": Option(True, Boolean(), doc="False: BMRM's iterates (eta = 1)"),
        "reuse_scores": Option(True, Boolean(),
                               doc="keep the loss's scores X w of the best and master points "
                                   "(one data pass an iteration); False: recompute them"),
    }

    @classmethod
    def unsupported_reason(cls, problem):
        reason = super().unsupported_reason(problem)
        return reason if reason is not None else intercept_reason(problem, cls.name)

    class State(NamedTuple):
        w_best: np.ndarray         # w_t^b, the line-search point (what the Result returns)
        fun_best: float            # J(w_t^b)
        w_query: np.ndarray        # w_t^c, where the oracle is called next
        lower_bound: float         # master dual value: a valid lower bound
        alpha: np.ndarray
        a_bar: np.ndarray
        b_bar: float
        evidence: object           # proof of lower_bound (nsopt.certificate.Evidence or None)
        bundle: PlaneBundle
        master: object
        eta: float                 # the last line-search step
        n_planes: int
        inner_time: float
        line_steps: int
        inner_iter: int = 0              # cumulative master iterations
        scores_best: np.ndarray = None   # X w_b (None: not kept, see reuse_scores)
        scores_query: np.ndarray = None  # X w_c

    def _scores(self, problem, w):
        """The problem's scores at ``w`` when they are reused, else None."""
        return problem.scores(w) if self.reuse_scores else None

    def init(self, problem, x0):
        bundle = new_bundle(problem, planes=self.planes)
        f0 = self._scores(problem, x0)
        ev = problem.evaluate(x0, scores=f0)
        s = self.State(w_best=x0, fun_best=ev.fun, w_query=x0,
                       lower_bound=-math.inf, alpha=np.zeros(bundle.n), a_bar=None, b_bar=None,
                       evidence=None,
                       bundle=bundle, master=master_solver(problem, self.inner), eta=0.0,
                       n_planes=bundle.n, inner_time=0.0, line_steps=0, inner_iter=0,
                       scores_best=f0, scores_query=f0)
        return self._update(problem, s, ev)

    def step(self, problem, s):                                          # [TVSL10, Alg. 3, l. 4]
        return self._update(problem, s, problem.evaluate(s.w_query,
                                                         scores=_plane_scores(problem, s)))

    def _update(self, problem, s, ev):
        w_b, fun_b, f_b = s.w_best, s.fun_best, s.scores_best
        if ev.fun < fun_b:  # the query point itself may be the best so far
            w_b, fun_b, f_b = ev.w, ev.fun, s.scores_query
        alpha, n_new = add_planes(s.bundle, s.alpha, ev,                 # l. 5
                                  remove_inactive=self.remove_inactive,
                                  max_planes=self.max_planes)
        del ev  # the bundle has the plane: its dense slope is not kept through the master solve
        m = solve_master(problem, s.bundle, alpha, n_new, s.master,      # l. 6
                         outer_gap=fun_b - s.lower_bound, inner_rtol=self.inner_rtol)
        w_t, m = m.w, m._replace(w=None)  # w_t serves only the line and w_c below
        # the scores of w_t (the iteration's one pass X w), when w_b's are known
        f_t = None if f_b is None else self._scores(problem, w_t)
        if f_t is None:
            f_b = None
        eta = 1.0
        if self.line_search:                                             # l. 7-8
            d = w_t - w_b
            if np.any(d):
                q = None
                if f_b is None:
                    line = problem.restrict(w_b, d)
                else:  # the line's scores f_b + eta q: no data pass
                    q = f_t - f_b
                    line = problem.restrict_scores(w_b, d, f_b, q)
                guess = s.eta if 0 < s.eta < 1 else 1.0  # the last step: the same size
                res = _line_search(line, guess)
                eta = res.eta
                if f_b is not None and _amplified(eta, f_t, f_b):
                    # q = f_t - f_b carries rounding of f's size (cancellation when w_t is
                    # near w_b) and a long step multiplies it: this line afresh from the data
                    f_b, q = None, None
                    line = problem.restrict(w_b, d)
                    res = _line_search(line, guess)
                    eta = res.eta
                if math.isfinite(eta) and eta > 0:
                    # the exact searches return phi(eta) (one value pass): not computed twice
                    fun_new = res.value if res.exact else line.value(eta)
                    if fun_new < fun_b:  # w_b + eta d, with no d-sized temporary
                        w_new = np.multiply(d, eta, out=d)
                        w_b, fun_b = freeze(np.add(w_new, w_b, out=w_new)), fun_new
                        if q is not None:  # the same combination of the scores
                            f_b = _combine(eta, q, 1.0, f_b, out=q)
                if f_b is None and f_t is not None:  # the fresh line: w_b's scores again
                    f_b = self._scores(problem, w_b)
                del d, line  # no longer needed (d's buffer may now be w_b's)
            else:
                eta = 0.0
        else:
            w_b, f_b = w_t, f_t
            fun_b = math.inf  # unknown until queried: BMRM's iterate
        theta = self.query_fraction
        w_c, f_c = w_t, f_t                                              # l. 9
        if self.line_search:  # (1 - theta) w_b + theta w_t, in w_t's buffer
            # w_t is the master's fresh array, used only here (the master's copy was let go)
            w_t.flags.writeable = True
            w_c = lincomb(1.0 - theta, w_b, theta, w_t, out=w_t)
            if f_t is not None and _takes_planes_from_scores(problem, s.bundle):
                f_c = _combine(1.0 - theta, f_b, theta, f_t, out=f_t)
            else:  # the query point's plane comes from the data: its scores serve nothing
                f_c = None
        del w_t, f_t
        freeze(w_c)  # read-only: the oracle keeps it without a copy
        improved = m.dual_value >= s.lower_bound
        return self.State(
            w_best=w_b if math.isfinite(fun_b) else None, fun_best=fun_b,
            w_query=w_c, lower_bound=max(m.dual_value, s.lower_bound), alpha=m.alpha,
            a_bar=m.a_bar if improved else s.a_bar, b_bar=m.b_bar if improved else s.b_bar,
            evidence=m.evidence if improved else s.evidence, bundle=s.bundle, master=s.master, eta=float(eta), n_planes=s.bundle.n,
            inner_time=s.inner_time + m.seconds,
            line_steps=s.line_steps + int(self.line_search and eta > 0),
            inner_iter=s.inner_iter + m.n_iter,
            scores_best=f_b, scores_query=f_c,
        )

    def info(self, s):
        return {"n_planes": s.n_planes, "inner_time": s.inner_time, "line_steps": s.line_steps,
                "planes": bundle_planes(s.bundle)}
