r"""The level bundle method of Lemaréchal, Nemirovskii and Nesterov, for any convex oracle on a box.

Every iteration minimises the cutting-plane model over the box (an LP: its value is a proven
lower bound, its multipliers the evidence), sets a level between that bound and the best value,
and projects the last query point onto the part of the box where the model is below the level
(a QP). The box ``bounds=(lb, ub)`` is a constraint: every query point, and the returned ``x``,
lie in it, and the certificate bounds the minimum of ``f`` over it.
"""
from __future__ import annotations

import math
import time
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..bundle import PlaneBundle
from ..certificate import OraclePlanes
from ..oracle import OracleNumericalError, freeze
from .._validation import Boolean, Interval, NoneOr, Option, Satisfies, check_box
from ._base import ProblemNotSupported, Solver
from ..inner.level_master import BoxModelLP, DenseBoxLP, highs_available, project_level_set
from ._region import (HOT_LP_OPTIONS, MasterLPError, ModelMinimum, add_oracle_minorants,
                      box_min, box_model_minimum, planes_evidence, polish_multipliers,
                      region_from_options)
from ._region import ROW_OPTIONS
from ._registry import register

__all__ = ["LevelBundle"]


#: when the bundle is full, room is made for ``max_planes // DROP_SHARE`` planes at once
DROP_SHARE = 10
#: up to this dimension the LP is solved by the compiled dense dual simplex
#: (:class:`~nsopt.inner.level_master.DenseBoxLP`), above it by HiGHS (:class:`BoxModelLP`)
DENSE_LP_MAX_DIM = 300


def _finite_box(value):
    return check_box(value, "bounds", finite=True)


def _points_evidence(points, alpha, floor_value, plane, lb, ub):
    """The :class:`~nsopt.certificate.OraclePlanes` of the feasible multipliers ``alpha``
    from the run's list of query points, one per plane (None for the floor, the one fixed
    plane; ``(x, j)`` for row ``j`` of the oracle's extra minorants at ``x``): what
    :func:`~nsopt.solvers._region.planes_evidence` builds, read off by index."""
    index = alpha.nonzero()[0].tolist()
    floor = 0.0
    if index and points[index[0]] is None:          # the floor plane (index 0) is weighted
        floor = float(alpha[index[0]])
        index = index[1:]
    return OraclePlanes(tuple([points[i] for i in index]), alpha[index], floor=floor,
                        floor_value=floor_value, plane=plane, lb=lb, ub=ub).tagged()


#: relative gap :math:`(f^{up} - \text{bound}) / |f^{up}|` below which a bound's multipliers
#: are refined (:func:`~nsopt.solvers._region.polish_multipliers`): the LP's rounding cost up to
#: 3.7e-8 relative on a Chebyshev fit with nearly parallel minorants, so 1e-6 leaves room
POLISH_BELOW = 1e-6
#: ... and only when the residual slopes cost more than this share of the gap (what a round
#: could gain): on the largest eigenvalue they cost 1e-12 of the value against gaps of 1e-8,
#: and the least squares took more than the rest of an iteration
POLISH_WORTH = 1e-2


@register
class LevelBundle(Solver):
    r"""Level bundle method ([LNN95]_) for any convex :class:`~nsopt.Oracle` on a finite box.

    With the planes :math:`f(x_i) + \langle g_i, x - x_i\rangle` of the points evaluated so far,
    the model :math:`\check f_k(x) = \max_i \langle g_i, x\rangle + b_i` (and the oracle's own
    ``lower_bound`` :math:`\ell` as the plane of slope 0, when finite) and the box
    :math:`Q = \{lb \le x \le ub\}`, iteration :math:`k` ([LNN95]_ Sec. 2, the level method):

    .. math::

        f^{up}_k = \min_{i \le k} f(x_i), \qquad
        f^{low}_k = \min_{x \in Q} \check f_k(x), \qquad
        l_k = f^{low}_k + \lambda\,(f^{up}_k - f^{low}_k),

        x_{k+1} = \operatorname{proj}_{\{x \in Q:\ \check f_k(x) \le l_k\}}(x_k).

    :math:`f^{low}_k` is the LP :math:`\min t` s.t. :math:`\langle g_i, x\rangle + b_i \le t`,
    :math:`x \in Q`, kept warm across iterations, its rows mirroring the bundle: up to
    ``DENSE_LP_MAX_DIM`` (300) variables a compiled dense dual simplex restarted from the last
    optimal basis (:class:`~nsopt.inner.level_master.DenseBoxLP`), above it one HiGHS model
    (:class:`~nsopt.inner.level_master.BoxModelLP`); :func:`scipy.optimize.linprog` from
    scratch when the warm LP is unavailable or fails; the
    projection is a QP solved exactly by Goldfarb and Idnani's dual active-set method,
    compiled (:func:`~nsopt.inner.level_master.project_level_set`). The gap :math:`f^{up}_k - f^{low}_k` shrinks to any :math:`\epsilon` within
    :math:`O((L D / \epsilon)^2)` iterations, :math:`L` the Lipschitz constant of :math:`f` on
    :math:`Q` and :math:`D` its diameter ([LNN95]_ Thm. 2.1), a bound independent of the
    dimension; in practice far fewer.

    Parameters
    ----------
    bounds : pair (lb, ub) or scipy.optimize.Bounds
        The box :math:`Q`, scipy's convention: ``lb`` and ``ub`` numbers or arrays of length
        ``dim``; every entry finite (the LP needs a bounded set) with ``lb <= ub``. Wrong
        shapes, NaN, ``lb > ub`` or an infinite side raise ``ValueError`` naming ``bounds``.
        ``bounds`` or ``radius`` is required.
    A_ub, b_ub : array (m, dim) and (m,), optional
        Rows :math:`A_{ub} x \le b_{ub}` that constrain x with the box (scipy.optimize.linprog's
        names): the LP and the projection carry them and the certificate holds their
        multipliers (:class:`~nsopt.solvers._polyhedral.PolyhedralLevelBundle`). A given
        ``x0`` that violates a row is a ``ValueError`` naming the row and the amount; the
        default start is projected onto the set (a QP); an empty set is a ``ValueError``.
        ``A_eq, b_eq``: equalities, kept as pairs of rows (the projection works in their
        null space).
    radius, centre
        The common options: a ball :math:`\|x - c\| \le r` said to hold a minimiser (not a
        constraint). Without ``bounds`` the method runs over the smallest box around the
        ball, :math:`Q = [c - r, c + r]`, whose minimum is :math:`f^*` when the statement is
        true; the certificate's region is that box (it contains the ball, so
        ``Certificate.check(f, radius=r, centre=c)`` accepts it).
    level_fraction : float in (0, 1), default 0.29
        :math:`\lambda`; [LNN95]_ recommend :math:`1 - 1/\sqrt 2 \approx 0.29`.
    lp_every : int >= 1 or None, default 2
        Solve the LP every this many iterations (and whenever the level set is empty); None:
        only when the level set is empty (fewer LPs, more iterations: 760 against 459 on the
        L1 fit of the benchmark); 1: every iteration, as in [LNN95]_.
    minorants : bool, default True
        Add the oracle's extra minorants (:meth:`~nsopt.Oracle.minorants`, when its
        ``offers_minorants``) to the model beside each evaluation's plane: several planes per
        oracle call. A minorant equal to a plane already in the bundle is skipped; when the
        bundle is nearly full, only as many as fit (the oracle's first rows). The certificate
        records each as (query point, row), which :meth:`~nsopt.certificate.Certificate.check`
        rebuilds through the oracle. With rows ``A_ub`` / ``A_eq`` as well.
    max_planes : int >= 3 or None, default 200
        Planes kept in the model. When the bundle is full, a tenth of ``max_planes`` go at
        once (one drop, not one per iteration: each copies the bundle and changes the LP):
        planes inactive in the last LP and QP first (the longest inactive first), then
        planes active only in the QP;
        planes with a positive LP multiplier (the evidence of the current bound, at most
        ``dim + 1`` of them at a vertex) are never dropped, so the bundle can hold up to
        ``max(max_planes, dim + 2)`` planes. None: keep every plane (the paper's method).

    Notes
    -----
    Notation: :math:`g_i, b_i` slope and offset of plane :math:`i`, :math:`\alpha_i` its LP
    multiplier, :math:`\alpha_0` the floor's; ``fun_up``, ``lower_bound`` and ``level`` are
    :math:`f^{up}_k, f^{low}_k, l_k`.

    Certificate (source ``"level-lp"``): the LP's dual multipliers :math:`\alpha \ge 0` on the
    plane constraints (and :math:`\alpha_0` on the floor), clipped at 0 and renormalised to sum
    exactly 1, give the plane :math:`f(y) \ge \bar b + \langle\bar a, y\rangle` with
    :math:`\bar a = \sum_i \alpha_i g_i`, :math:`\bar b = \sum_i \alpha_i b_i + \alpha_0 \ell`,
    hence

    .. math:: \min_Q f \ \ge\ \bar b + \sum_j \min(\bar a_j\,lb_j,\ \bar a_j\,ub_j),

    valid for *any* multipliers on the simplex, so the LP's inaccuracy costs tightness, never
    validity. The reported bound is this value computed from the repaired multipliers (not
    the LP's objective), with an :class:`~nsopt.certificate.OraclePlanes` evidence (query
    points, multipliers, floor, the box): :meth:`~nsopt.certificate.Certificate.check` with
    ``bounds=(lb, ub)`` rebuilds the planes through the oracle (one call per point with a
    positive multiplier, at most ``dim + 1``) and recomputes the bound. It bounds the minimum
    over the box, which is :math:`f^*` when a minimiser lies in the box. On a
    :class:`~nsopt.RegularizedRisk` the loop's plane certifier runs as well (a bound over the
    whole space, also valid over the box); the better one is reported.

    Start: ``x0`` (zeros by default, the regularizer's minimiser on a RegularizedRisk) outside
    the box is projected onto it (clipped coordinate-wise) before the first evaluation.

    When the LP runs (``lp_every``): not at every iteration. Between LPs the level is set
    from the best bound proven so far, and the projection's own multipliers :math:`\mu \ge
    0` on the planes, normalised to the simplex, prove the bound above (any multipliers on the
    simplex do), usually close to the level. The LP runs every ``lp_every`` iterations, and
    whenever the projection fails: an empty level set means :math:`\min_Q \check f_k > l_k`,
    so the LP raises the bound (and the level) and the projection is tried again. On the
    max of 500 affine pieces in d = 50 this takes 157 iterations where one LP per iteration
    took 172, with half the LPs.

    Degenerate cases: when :math:`f^{up}_k - f^{low}_k \le 0` (a gap closed up to rounding)
    the loop stops with status ``converged``. A projection that fails even after the LP (a
    normal dependent on the active ones, the active-set cap, or a point whose model value is
    not within half the distance from the level to :math:`f^{up}_k`) is replaced by the LP's
    point, which lies in the level set (a Kelley step: progress, not validity, is at stake);
    ``Result.info["n_qp_fallbacks"]`` counts them.
    A query point is always clipped onto the box (HiGHS's answers are feasible only to its
    tolerances). An LP
    that HiGHS cannot solve ends the run with status ``numerical_error``
    (``Result.info["numerical_error"]`` says why) and the bound proven so far.

    Cost per iteration: one oracle call, the projection (about one active-set step per
    constraint active at its solution, each :math:`O((n_{planes} + d)\,d)`), and every
    ``lp_every`` iterations a warm LP with ``n_planes`` rows and ``dim + 1`` columns (a few
    dual simplex pivots of :math:`O(d^2 + n_{planes} d)` each with
    :class:`~nsopt.inner.level_master.DenseBoxLP`; HiGHS costs about 1 ms a solve after a
    model change at d = 50 whatever the pivots, 18 ms at d = 123).

    ``Result.info``: ``n_planes``, ``level`` (the last :math:`l_k`), ``n_qp_fallbacks``.

    References
    ----------
    .. [LNN95] C. Lemaréchal, A. Nemirovskii, Y. Nesterov. New variants of bundle methods.
       Math. Programming 69:111-147, 1995. Sec. 2 (the level method), Thm. 2.1.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> A = np.array([[1.0, 2.0], [3.0, -1.0], [-1.0, 1.0]]); b = np.array([1.0, 0.0, 2.0])
    >>> f = nsopt.FunctionOracle(lambda x: np.abs(A @ x - b).sum(),
    ...                          lambda x: A.T @ np.sign(A @ x - b), dim=2)
    >>> res = nsopt.minimize(f, method="level-bundle", bounds=(-5, 5), rtol=1e-8)
    >>> res.status.value, bool(res.gap <= 1e-8 * res.fun)
    ('converged', True)
    >>> bool(res.certificate.check(f, bounds=(-5, 5)) >= res.lower_bound - 1e-9)
    True
    """

    name = "level-bundle"
    requires = ()
    required_options = (("bounds", "radius"),)
    region_certifying = True
    certificate_source = "level-lp"
    history_fields = ("n_planes", "level")
    options = {
        "bounds": Option(None, NoneOr(Satisfies(
            _finite_box, "a pair (lb, ub) of finite numbers or arrays with lb <= ub, or a "
                         "scipy.optimize.Bounds")),
            doc="the box lb <= x <= ub (required, finite): a constraint"),
        "level_fraction": Option(0.29, Interval(Real, 0, 1, closed="neither"),
                                 doc="lambda: the level's place between the bounds"),
        "lp_every": Option(2, NoneOr(Interval(Integral, 1, None, closed="left")),
                           doc="solve the LP every this many iterations (None: only when the "
                               "level set is empty)"),
        "minorants": Option(True, Boolean(),
                            doc="add the oracle's extra minorants to the model"),
        "max_planes": Option(200, NoneOr(Interval(Integral, 3, None, closed="left")),
                             doc="planes kept (never those of the current evidence)"),
        **ROW_OPTIONS,
    }

    #: the class that runs with rows ``A_ub x <= b_ub`` (set by :mod:`._polyhedral`)
    rows_variant = None

    def __new__(cls, **options):
        rows = options.get("A_ub") is not None or options.get("A_eq") is not None
        if cls is LevelBundle and rows and cls.rows_variant:
            cls = cls.rows_variant      # rows: the polyhedral variant (nsopt.solvers._polyhedral)
        return super().__new__(cls)

    class State(NamedTuple):
        x: np.ndarray              # x_k, the last query point (the projection's centre)
        fun_up: float              # f_up: the best value seen
        lower_bound: float         # f_low: the best bound proven (max over iterations)
        evidence: object           # its proof (OraclePlanes over the box)
        level: float               # l_k
        x_next: np.ndarray         # x_k+1: the projection (the LP's point on a QP fallback)
        alpha: np.ndarray          # LP multipliers of the planes (repaired), for dropping
        active: np.ndarray         # planes active in the LP or the last QP
        bundle: PlaneBundle
        lb: np.ndarray
        ub: np.ndarray
        n_planes: int
        n_qp_fallbacks: int
        lp: object = None          # the warm LP (DenseBoxLP or BoxModelLP, rows = the bundle's) or None
        k: int = 0                 # iterations (steps) so far
        points: list | None = None  # per plane its query point (None: the floor; (x, j): row j
        #                             of the minorants at x); None: unkept
        n_extra: int = 0           # minorants added with the last evaluation

    def check_problem(self, problem):  # required_options says so up front
        """Any oracle, but only with a bounded set: a finite box ``bounds`` (a constraint), or
        a ball ``radius`` (a statement that a minimiser lies in it: the run is then over the
        smallest box around the ball, whose minimum is :math:`f^*`). Without either the run
        cannot start (:class:`~nsopt.solvers.ProblemNotSupported`, naming the options); a box
        of the wrong length is a ``ValueError`` naming ``bounds``."""
        super().check_problem(problem)
        if self.bounds is None and self.radius is None:
            raise ProblemNotSupported(
                "method 'level-bundle' needs a bounded set: pass bounds=(lb, ub) (finite numbers "
                "or arrays of length dim, lb <= ub), e.g. bounds=(-10, 10), a box that constrains "
                "x; or radius=r (and centre=c), a ball you know holds a minimiser; its lower bound "
                "is the minimum of the cutting-plane model over that set")
        region_from_options(self.config, problem.dim)

    def _box(self, problem):
        """The box the run is over: ``bounds``, or the smallest box around the ball."""
        return region_from_options(self.config, problem.dim).enclosing_box()

    # --- the two subproblems --------------------------------------------------------------
    def _model_minimum(self, problem, bundle, lb, ub, lp=None):
        """The LP: warm in ``lp`` (:class:`~nsopt.inner.level_master.DenseBoxLP` or
        :class:`~nsopt.inner.level_master.BoxModelLP`),
        else (or when it reports no optimum) from scratch by
        :func:`~nsopt.solvers._region.box_model_minimum`, whose failure ends the run. Either
        way the bound is computed from the multipliers made feasible, never the LP's value."""
        if lp is not None:
            left = (None if problem.deadline is None
                    else problem.deadline - time.perf_counter())
            out = lp.solve(left)
            if out is not None and np.isfinite(out[2]).all():
                x, _, alpha = out
                alpha = bundle.feasible(alpha)
                a_bar, b_bar = bundle.combine(alpha)
                return ModelMinimum(np.clip(x, lb, ub), b_bar + box_min(a_bar, lb, ub), alpha,
                                    a_bar, b_bar)
        try:
            return box_model_minimum(bundle, lb, ub, problem.deadline)
        except MasterLPError as exc:
            if problem.deadline is not None and time.perf_counter() >= problem.deadline:
                # cut by max_time: no new bound this step; the loop stops on the time limit
                x = bundle.query_point(bundle.n - 1)
                x = x[0] if type(x) is tuple else x     # a minorant's (point, row)
                return ModelMinimum(x, -math.inf, np.zeros(bundle.n), None, -math.inf)
            raise OracleNumericalError(f"level-bundle: {exc}", None, "the master LP") from None

    def _project(self, bundle, centre, level, slack, lb, ub):
        """:math:`\\arg\\min \\|x - c\\|^2` s.t. :math:`A x + b \\le l`, :math:`x \\in Q`
        (:func:`~nsopt.inner.level_master.project_level_set`, Goldfarb-Idnani, compiled);
        ``(x, multipliers of the planes)``, or ``(None, None)`` when it fails or its point's
        model value is not within ``slack`` of the level."""
        A = bundle.A        # a view of the rows (a dense copy in list storage), not a copy
        scale = 1.0 + float(np.abs(centre).max(initial=0.0))
        x, mult = project_level_set(A, level - bundle.b, lb, ub, centre, tol=1e-12 * scale)
        if x is None or not np.isfinite(x).all():
            return None, None
        if not bundle.model(x) <= level + slack:
            return None, None
        return x, mult

    def _offer(self, problem, bundle, alpha, lower, evidence, lb, ub, points=None,
               fun_up=math.inf):
        """The bound :math:`\\bar b + \\min_Q\\langle\\bar a, y\\rangle` of the multipliers
        ``alpha`` (made feasible), with its evidence, when it beats ``lower``. ``points``: the
        query point of every plane (None for the floor), kept by the run, so that the
        evidence is read off without asking the bundle plane by plane. Within
        :data:`POLISH_BELOW` (relative) of ``fun_up`` the multipliers are first refined
        (:func:`~nsopt.solvers._region.polish_multipliers`): there the solves' rounding, not
        the model, decides the last digits of the bound."""
        alpha = bundle.feasible(alpha)
        a_bar, b_bar = bundle.combine(alpha)
        value = b_bar + box_min(a_bar, lb, ub)
        if math.isfinite(value) and fun_up - value <= POLISH_BELOW * abs(fun_up):
            value, alpha, (a_bar, b_bar) = polish_multipliers(
                bundle, alpha, lb, ub, plane=(a_bar, b_bar),
                worth=POLISH_WORTH * (fun_up - value))
        if value > lower:
            if points is None:
                ev = planes_evidence(bundle, alpha, problem.lower_bound, (a_bar, b_bar),
                                     lb=lb, ub=ub)
            else:
                ev = _points_evidence(points, alpha, problem.lower_bound, (a_bar, b_bar), lb, ub)
            if ev is not None:
                return value, ev
        return lower, evidence

    def _iterate(self, problem, bundle, x, fun_up, lower, evidence, lb, ub, fallbacks, lp=None,
                 alpha=None, points=None):
        """Bound, level and next point for the current bundle (the state after an evaluation).

        ``alpha``: the last LP's multipliers, aligned with the bundle (None: solve the LP now).
        The LP is solved when the projection fails (the level set is empty, or the projection
        did not converge) or ``lp_every`` iterations have passed; the projection's own
        multipliers give a bound every iteration."""
        solved = False
        point = None
        if alpha is None:
            m = self._model_minimum(problem, bundle, lb, ub, lp)
            lower, evidence = self._offer(problem, bundle, m.alpha, lower, evidence, lb, ub,
                                          points, fun_up) if m.bound > lower else (lower, evidence)
            alpha, point, solved = m.alpha, m.point, True
        nxt, mult, level = None, None, lower
        while True:
            level = lower + self.level_fraction * (fun_up - lower)             # [LNN95, Sec. 2]
            if not (fun_up - lower > 0 and lower > -math.inf):
                break               # closed up to rounding: the loop stops on this state
            nxt, mult = self._project(bundle, x, level, 0.5 * (fun_up - level), lb, ub)
            if nxt is not None or solved:
                break
            # an empty level set (the model's minimum is above the level), or a failed
            # projection: the LP raises the bound, and the level with it
            m = self._model_minimum(problem, bundle, lb, ub, lp)
            lower, evidence = self._offer(problem, bundle, m.alpha, lower, evidence, lb, ub,
                                          points, fun_up) if m.bound > lower else (lower, evidence)
            alpha, point, solved = m.alpha, m.point, True
        active = alpha > 0
        if nxt is None:             # point is None only when the gap is closed: the run stops
            nxt = point if point is not None else x
            if fun_up - lower > 0 and lower > -math.inf:
                fallbacks += 1
        elif mult is not None and mult.sum() > 0:
            active = active | (mult > 0)
            if not solved:
                # after an LP on this bundle no weights can do better: the LP's dual is the
                # best bound over the simplex (so the offer is only made between LPs)
                lower, evidence = self._offer(problem, bundle, mult, lower, evidence, lb, ub,
                                              points, fun_up)
        bundle.update_ages(active)      # True > 0: the ages of the active planes reset
        return self.State(x=x, fun_up=fun_up, lower_bound=lower, evidence=evidence, level=level,
                          x_next=freeze(nxt), alpha=alpha, active=active, bundle=bundle,
                          lb=lb, ub=ub, n_planes=bundle.n, n_qp_fallbacks=fallbacks, lp=lp,
                          points=points)

    # --- init and step -----------------------------------------------------------------------
    def init(self, problem, x0):
        lb, ub = self._box(problem)
        x0 = freeze(np.clip(x0, lb, ub))            # a start outside the box is projected
        # no Gram matrix: the LP and the projection read the slopes and offsets only
        bundle = PlaneBundle(problem.dim, evidence="points", gram=False)
        lp = self._hot_lp(lb, ub)
        points = []                                 # the query point of each plane
        if math.isfinite(problem.lower_bound):
            bundle.add_floor(problem.lower_bound)   # the oracle's floor: a plane of slope 0
            self._mirror(bundle, lp)
            points.append(None)
        ev = problem.evaluate(x0)
        bundle.add_at(ev.w, ev.fun, ev.subgradient)
        self._mirror(bundle, lp)
        points.append(ev.w)
        extra = self._add_minorants(problem, bundle, ev.w, lp, points)
        return self._iterate(problem, bundle, ev.w, float(ev.fun), -math.inf, None, lb, ub, 0, lp,
                             points=points)._replace(n_extra=extra)

    def _add_minorants(self, problem, bundle, w, lp, points):
        """Add the oracle's extra minorants at ``w`` (the point just evaluated) to the bundle
        and the LP, each new one only (not equal to a plane kept), as many as fit under
        ``max_planes``; returns how many were added. ``points`` (None: unkept) gets their
        ``(w, row)`` pairs."""
        if not self.minorants:
            return 0
        room = None if self.max_planes is None else self.max_planes - bundle.n

        def added(rows, A, b):
            if lp is None:
                pass
            elif hasattr(lp, "add_many"):       # DenseBoxLP: the k rows in one copy
                lp.add_many(A, b)
            else:
                for j in range(len(rows)):
                    lp.add(A[j], b[j])
            if points is not None:
                points.extend([(w, j) for j in rows])

        return add_oracle_minorants(problem, bundle, w, room, added)

    @staticmethod
    def _hot_lp(lb, ub):
        """The warm LP of the run: the compiled dense dual simplex up to
        ``DENSE_LP_MAX_DIM`` variables, HiGHS's hot-started model above (None without it)."""
        if lb.size <= DENSE_LP_MAX_DIM:
            return DenseBoxLP(lb, ub)
        return BoxModelLP(lb, ub, HOT_LP_OPTIONS) if highs_available() else None

    @staticmethod
    def _mirror(bundle, lp):
        """The bundle's newest plane as a row of the hot-started LP."""
        if lp is not None:
            rows = bundle.rows(bundle.n - 1)
            a = rows.toarray()[0] if sp.issparse(rows) else rows[0]
            lp.add(a, float(bundle.b[bundle.n - 1]))

    def step(self, problem, s):
        if not s.fun_up - s.lower_bound > 0:
            return s
        bundle = s.bundle
        alpha = s.alpha
        points = s.points
        need = 1 + s.n_extra        # room for this call's planes, as many as the last's
        if self.max_planes is not None and bundle.n + need > self.max_planes:
            keep = self._make_room(bundle, s.alpha, s.active, s.lp, need)
            alpha = alpha[keep]
            if points is not None:
                points = [points[i] for i in keep.tolist()]
        ev = problem.evaluate(s.x_next)
        bundle.add_at(ev.w, ev.fun, ev.subgradient)
        self._mirror(bundle, s.lp)
        if points is not None:
            points.append(ev.w)
        extra = self._add_minorants(problem, bundle, ev.w, s.lp, points)
        alpha = np.append(alpha, np.zeros(1 + extra))
        lazy = s.lp is not None and (self.lp_every is None or (s.k + 1) % self.lp_every)
        return self._iterate(problem, bundle, ev.w, min(s.fun_up, float(ev.fun)), s.lower_bound,
                             s.evidence, s.lb, s.ub, s.n_qp_fallbacks, s.lp,
                             alpha if lazy else None, points)._replace(k=s.k + 1,
                                                                       n_extra=extra)

    def _make_room(self, bundle, alpha, active, lp=None, need=1):
        """Drop planes until ``need`` more fit: inactive ones first (longest idle first), then
        those active in the QP only; never the fixed floor or a plane with a positive LP
        multiplier (the current evidence)."""
        n = bundle.n
        # room for a tenth of the bundle at once: dropping rows costs a copy of the bundle
        # (its Gram matrix) and a change of the LP, whatever their number
        excess = max(n - self.max_planes + need, self.max_planes // DROP_SHARE)
        protected = np.zeros(n, dtype=bool)
        protected[: bundle.n_fixed] = True
        protected |= alpha[:n] > 0
        protected[n - 1] = True                     # the newest plane
        free = np.flatnonzero(~protected)
        # inactive before active, then the longest idle first, then the oldest
        order = free[np.lexsort((free, -bundle.age[free], active[free]))]
        mask = np.zeros(n, dtype=bool)
        mask[order[:excess]] = True
        keep = bundle.drop(mask)
        if lp is not None:
            lp.drop(mask)
        return keep

    def info(self, s):
        return {"n_planes": s.n_planes, "level": s.level, "n_qp_fallbacks": s.n_qp_fallbacks}
