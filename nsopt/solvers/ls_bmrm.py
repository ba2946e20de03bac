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
from ..linesearch import LineSearchResult, exact_line_search


#: a step on kept scores may amplify their rounding to this much of their size (relative)
_SCORES_RTOL = 1e-13


def _amplified(eta, f_t, f_b) -> bool:
    r"""Whether the step ``eta`` on the line of kept scores :math:`f_b + \eta (f_t - f_b)`
    amplifies the rounding of :math:`f_t - f_b` (about :math:`4\epsilon(|f_t| + |f_b|)`
    per entry) beyond :data:`_SCORES_RTOL` of the scores' size (found by hypothesis: a step
    of 3.5e13 along a direction of size 1e-16 moved the kept scores by 7.5e-3)."""
    if not (math.isfinite(eta) and eta > 1.0) or f_b.size == 0:
        return False
    size = float(np.max(np.abs(f_t))) + float(np.max(np.abs(f_b)))
    return eta * 4.0 * np.finfo(np.float64).eps * size > _SCORES_RTOL * (1.0 + size)


def _line_search(line, guess: float = 1.0) -> LineSearchResult:
    """The step on ``line``: :func:`smooth_line_search` where the line is a differentiable
    loss's plus a cheap regularizer's, else :func:`~nsopt.linesearch.exact_line_search`."""
    res = smooth_line_search(line, guess)
    return res if res is not None else exact_line_search(line, lo=0.0)


def _plane_scores(s):
    """The kept scores of the query point when its plane may be taken from them: only where
    the certificate is a dual point (``bundle.evidence_kind == "dual"``: margin losses, whose
    bound is rebuilt from ``t`` alone, any ``t`` in the box being valid). Where the evidence
    is the query points themselves (:class:`~nsopt.certificate.QueryPoints`: every other
    loss), :meth:`~nsopt.certificate.Certificate.check` re-evaluates the loss at the stored
    point, so the plane must be the one the data give there: kept scores differ from
    :math:`Xw_c` by rounding, which at a kink (a LAD residual of zero at an LP vertex) flips
    the subgradient, and with L1 the rebuilt aggregate then leaves the conjugate's domain
    (found: 4 of 36 small LAD + L1 runs, at least 12 of 36 with an intercept: bounds that
    ``check`` recomputed as -inf)."""
    return s.scores_query if s.bundle.evidence_kind == "dual" else None


def _smooth_plus_cheap(line):
    r"""``(S, K)`` when ``line`` is :math:`\varphi = S + K` with :math:`S` the line of a
    differentiable loss (``line.lines[0].loss.differentiable``: :math:`S'` continuous, one
    O(m) pass over the scores per derivative) and :math:`K` a regularizer's line with cheap
    exact one-sided derivatives and known breakpoints (O(d), no data); else None."""
    parts = getattr(line, "lines", None)
    if parts is None or len(parts) != 2:
        return None
    s, k = parts
    if not getattr(getattr(s, "loss", None), "differentiable", False):
        return None
    if not (getattr(s, "cheap_derivative", False) and getattr(k, "cheap_derivative", False)):
        return None
    bps = k.breakpoints()
    if bps is None:
        return None
    return s, k, np.asarray(bps, dtype=np.float64)


def _model_root(a, b, s_at, k_der, bps):
    """The root in ``[a, b]`` of the nondecreasing model ``m(eta) = s_at(eta) + K'(eta)``
    (``s_at`` affine, ``K'`` the exact one-sided derivative of the cheap part, affine between
    its breakpoints ``bps`` or modelled so): a breakpoint where ``m`` changes sign, else the
    linear root on the piece between the breakpoints that bracket it."""
    lo = int(np.searchsorted(bps, a, side="right"))
    hi = int(np.searchsorted(bps, b, side="left"))
    inner = bps[lo:hi]                       # the breakpoints strictly inside (a, b)
    i, j = 0, inner.size                     # first index with m(inner[k]+) >= 0
    while i < j:
        mid = (i + j) // 2
        if s_at(inner[mid]) + k_der(inner[mid], 1) >= 0:
            j = mid
        else:
            i = mid + 1
    left = inner[i - 1] if i > 0 else a
    right = inner[i] if i < inner.size else b
    m_right = s_at(right) + k_der(right, -1)
    if right < b and m_right <= 0:           # the kink itself
        return float(right)
    m_left = s_at(left) + k_der(left, 1)
    if not (m_left < 0 < m_right):
        return float(left if m_left >= 0 else right)
    return float(left + (right - left) * (-m_left / (m_right - m_left)))


def smooth_line_search(line, guess: float = 1.0, max_evals: int = 60):
    r"""The exact minimiser over :math:`\eta \ge 0` of a line :math:`\varphi = S + K` of a
    differentiable loss :math:`S` plus a regularizer's line :math:`K` with cheap one-sided
    derivatives and breakpoints (L1, elastic net, L2), by a bracketed secant method on
    :math:`S'` combined with the exact :math:`K'`; None when the line is not of that form
    (then :func:`~nsopt.linesearch.exact_line_search` serves).

    Each trial step is the root of :math:`\hat S'(\eta) + K'(\eta)` with :math:`\hat S'` the
    line through the last evaluation of :math:`S'` with the slope of the secant of the last two
    (on a loss without kinks, the tangent of the parabola through the last three; the
    bracket's secant when the slope is not positive): found over :math:`K`'s breakpoints
    without touching the data, so a kink of the L1 norm is located exactly and the smooth
    part converges superlinearly. A step whose correction is below 1e-10 of itself (and
    crosses no breakpoint) is taken without another evaluation; three moves of one end of a
    bracket in a row are followed by a bisection. Only
    :math:`S'` costs a pass over the m scores (no data pass: the line's scores are kept);
    a step ends the search when :math:`0 \in \partial\varphi(\eta)` as computed, when the
    smooth derivative vanishes to rounding, or when the bracket has shrunk to rounding.
    The generic search ([YVGS10]_-style bisection over all breakpoints, then Brent on the
    last piece) needs about 17 derivative calls on a9a (L1 logistic); this one 4-7.

    Parameters
    ----------
    line : LineFunction
    guess : float > 0, default 1
        The first trial step (LS-BMRM passes the last step taken: successive steps are of
        one size, and a first bracket around the root makes the secant accurate at once).
    max_evals : int
        Evaluations of :math:`S'` at most (then None: the generic search takes over).

    Returns
    -------
    LineSearchResult or None
        ``exact=True`` with ``value`` :math:`\varphi(\eta)` (one value pass), ``eta = inf``
        and ``value = -inf`` when :math:`\varphi` decreases without bound.
    """
    split = _smooth_plus_cheap(line)
    if split is None:
        return None
    s_line, k_line, bps = split
    k_memo = {}

    def k_der(eta, side=1):  # O(d) each: the model roots probe the same breakpoints again
        key = (eta, side)
        v = k_memo.get(key)
        if v is None:
            v = k_memo[key] = float(k_line.derivative(eta, side))
        return v
    eps = np.finfo(np.float64).eps
    n = 0

    def s_der(eta):
        nonlocal n
        n += 1
        return float(s_line.derivative(eta, 1))  # differentiable: both sides agree

    def done(eta):
        nonlocal n
        n += 1
        return LineSearchResult(float(eta), float(line.value(eta)), n, True, True)

    a, sa = 0.0, s_der(0.0)                  # phi'(a+) < 0 throughout
    if sa + k_der(0.0, 1) >= 0:
        return done(0.0)
    b, sb = math.inf, math.nan               # phi'(b-) > 0 once finite
    x1, s1 = a, sa                           # the last evaluations of S', newest first
    # a loss without kinks (logistic) has a smooth S': three points model its curvature; a
    # piecewise-quadratic one (squared hinge) has an S' with corners, where secants do better
    smooth = getattr(s_line.loss, "kinks", lambda: ())() is None
    x2 = s2 = None
    t = float(guess) if math.isfinite(guess) and guess > 0 else 1.0
    same_side, last_side = 0, None           # a stall: one end keeps moving, the other not
    while n < max_evals:
        st = s_der(t)
        left, right = st + k_der(t, -1), st + k_der(t, 1)
        if left <= 4 * eps * (abs(st) + abs(left)) and right >= -4 * eps * (abs(st) + abs(right)):
            return done(t)                   # 0 in the subdifferential, to rounding
        moved_a = right < 0
        if moved_a:
            a, sa = t, st
        else:
            b, sb = t, st
        # regula falsi's stall (one end of a bracket keeps moving): bisect instead
        same_side = same_side + 1 if moved_a == last_side and math.isfinite(b) else 1
        last_side = moved_a
        x1, s1, x2, s2, x3, s3 = t, st, x1, s1, x2, s2
        if math.isfinite(b) and b - a <= 4 * eps * b:
            return done(b if abs(sb + k_der(b, -1)) < abs(sa + k_der(a, 1)) else a)
        if a > 1e300:
            return LineSearchResult(math.inf, -math.inf, n, False, True)
        slope = (s1 - s2) / (x1 - x2) if x1 != x2 else math.nan
        if smooth and x3 is not None and x3 != x1 and x3 != x2 and math.isfinite(slope):
            # the tangent at x1 of the parabola through three evaluations (order 1.84
            # instead of the secant's 1.62): S' is smooth, and curved over long lines
            curv = (slope - (s2 - s3) / (x2 - x3)) / (x1 - x3)
            tangent = slope + curv * (x1 - x2)
            if math.isfinite(tangent) and tangent > 0:
                slope = tangent
        if not (math.isfinite(slope) and slope > 0) and math.isfinite(b):
            x1, s1, slope = b, sb, (sb - sa) / (b - a)   # the bracket's secant
        # where the model may look: the bracket, or up to 4 times the last point beyond it
        top = b if math.isfinite(b) else 4.0 * max(x1, x2, a)
        t = math.nan
        if same_side < 4 and math.isfinite(slope) and slope > 0:
            root = _model_root(a, top, lambda e, x=x1, sx=s1, sl=slope: sx + sl * (e - x),
                               k_der, bps)
            if a < root <= top and (root < b or not math.isfinite(b)):
                t = root
                # the secant's correction below 1e-10 of the step: its error is of the
                # order of that squared (superlinear), below rounding; no more evaluations
                if abs(root - x1) <= 1e-10 * root \
                        and not np.any((bps > min(root, x1)) & (bps < max(root, x1))):
                    return done(root)
        if not math.isfinite(t):
            t = 0.5 * (a + b) if math.isfinite(b) else 4.0 * max(a, x1)
            same_side = 0
    return None

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
    line, the secant search :func:`smooth_line_search` (5-7 O(m) derivatives of the loss
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
                                                         scores=_plane_scores(s)))

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
                            f_b = np.add(np.multiply(q, eta, out=q), f_b, out=q)
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
            if f_t is not None:
                f_c = lincomb(1.0 - theta, f_b, theta, f_t, out=f_t)
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
