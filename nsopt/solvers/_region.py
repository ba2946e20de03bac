r"""A region the user states, and the minimum of a cutting-plane model over it.

Any convex oracle becomes certifiable once the user says where to look:

* a **box** ``bounds=(lb, ub)`` (scipy's convention) is a *constraint*: the problem is
  :math:`\min_{lb \le x \le ub} f(x)`; the methods that take it (``level-bundle``,
  ``proximal-bundle``) keep every query point in it;
* a **ball** ``radius=r`` around ``centre=c`` (0 by default) is a *statement*: some minimiser
  of :math:`f` lies in :math:`\|x - c\| \le r`. It constrains nothing; no run can verify it, and
  ``Certificate.check(problem, radius=r, centre=c)`` makes the checker state it too.

With planes :math:`f \ge \langle a_i, \cdot\rangle + b_i` from the oracle calls, every
:math:`\alpha` in the simplex gives :math:`f \ge \langle\bar a, \cdot\rangle + \bar b` with
:math:`(\bar a, \bar b) = \sum_i \alpha_i (a_i, b_i)`, hence

.. math::

    \min_{\text{box}} f \ \ge\ \bar b + \sum_j \min(\bar a_j lb_j,\ \bar a_j ub_j), \qquad
    \min_{\|x - c\| \le r} f \ \ge\ \bar b + \langle\bar a, c\rangle - r\,\|\bar a\|.

The best :math:`\alpha` for a box is the dual of the LP :math:`\min t` s.t.
:math:`\langle a_i, x\rangle + b_i \le t`, :math:`x` in the box (HiGHS, :func:`box_model_minimum`).
For a ball, :func:`region_model_minimum` takes the multipliers of the LP over the smallest box
around it and values them by the ball's formula. Why an LP and not the exact conic problem
:math:`\max_\alpha \beta^T\alpha - r\|A^T\alpha\|` (a sequence of simplex QPs in a scalar
search, tried first): at 1e-8 the bound needs :math:`r\|\bar a\|` below 1e-8 of the value, i.e.
:math:`\bar a` zero to rounding, which an LP vertex gives (it solves a linear system) and an
iterative QP's multipliers do not; and one LP costs less than the dozens of QPs.

:class:`RegionCertifier` keeps the planes of a run's oracle calls (with their query points, the
:class:`~nsopt.certificate.OraclePlanes` evidence) and offers that bound to the solver loop,
for every method that takes any oracle.
"""
from __future__ import annotations

import math
import numbers
import time
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import linprog

from ..bundle import PlaneBundle
from ..certificate import OraclePlanes
from ..inner.level_master import _highs_class
from ..inner._level_kernels import offset_matches
from .._validation import NoneOr, Option, Satisfies, box_for_dim, check_vector

__all__ = ["Region", "region_from_options", "planes_evidence", "box_model_minimum",
           "polish_multipliers",
           "add_oracle_minorants", "polish_rows_multipliers",
           "region_model_minimum", "rows_for_dim", "rows_bound", "rows_model_minimum",
           "feasible_start", "ROW_OPTIONS", "RowsModelLP", "constraint_rows",
           "RegionCertifier", "ModelMinimum", "MasterLPError"]

_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
#: HiGHS options of the hot-started model LPs (:class:`~nsopt.inner.level_master.BoxModelLP`):
#: Devex pricing, whose weights survive a new row, where the default dual steepest edge
#: recomputes its weights after every change of the model (measured on the L1 fit of
#: ``benchmarks/any_oracle.py``, d = 100, 200 dense rows: 27% less CPU time for the run)
HOT_LP_OPTIONS = {"simplex_dual_edge_weight_strategy": 1}
#: :class:`RegionCertifier`: an LP that raised the bound by at least this share of the gap is
#: solved again at the next call; otherwise its interval doubles
USEFUL_GAIN = 0.01


class MasterLPError(RuntimeError):
    """HiGHS could not solve the model-minimum LP (its status and message are in the text)."""


class Region(NamedTuple):
    """``kind`` is ``"box"`` (``lb``, ``ub``: the constraint) or ``"ball"`` (``centre``,
    ``radius``: where a minimiser lies)."""

    kind: str
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None
    centre: np.ndarray | None = None
    radius: float | None = None
    #: rows ``A_ub x <= b_ub`` on top of a box (:func:`rows_for_dim`), or None
    A_ub: np.ndarray | None = None
    b_ub: np.ndarray | None = None
    #: the last ``2 n_eq`` rows are the pairs ``A_eq x <= b_eq``, ``-A_eq x <= -b_eq``
    n_eq: int = 0

    def evidence_fields(self) -> dict:
        """The region's fields of :class:`~nsopt.certificate.OraclePlanes`."""
        if self.kind == "box":
            if self.A_ub is not None:
                return {"lb": self.lb, "ub": self.ub, "A_ub": self.A_ub, "b_ub": self.b_ub}
            return {"lb": self.lb, "ub": self.ub}
        return {"centre": self.centre, "radius": self.radius}

    @property
    def rows(self):
        """``(A_ub, b_ub)``, or None without rows."""
        return None if self.A_ub is None else (self.A_ub, self.b_ub)

    def enclosing_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The box itself, or the smallest box around the ball, widened by a few units of
        rounding so that it contains the ball in floating point too (``c - r`` is rounded)."""
        if self.kind == "box":
            return self.lb, self.ub
        c, r = self.centre, self.radius
        pad = 4.0 * np.finfo(np.float64).eps * (np.abs(c) + r)
        return (c - r) - pad, (c + r) + pad

    def plane_minimum(self, a_bar, b_bar: float, y=None) -> float:
        r""":math:`\min_C \langle\bar a, y\rangle + \bar b` over the region ``C``: the
        bound a plane of ``f`` proves there (the formulas of the module docstring). With rows,
        ``y >= 0`` are their multipliers (None: 0), and the bound is the weak-duality one of
        :func:`rows_bound`."""
        if self.kind == "box" and self.A_ub is not None:
            return rows_bound(a_bar, b_bar, y, self.A_ub, self.b_ub, self.lb, self.ub)
        if self.kind == "box":
            return b_bar + box_min(a_bar, self.lb, self.ub)
        return (b_bar + float(a_bar @ self.centre)
                - self.radius * float(np.linalg.norm(a_bar)))


def planes_evidence(bundle: PlaneBundle, alpha, floor_value: float, plane, y=None, **region):
    """The :class:`~nsopt.certificate.OraclePlanes` of the combination ``alpha`` (feasible) of
    a bundle kept with ``evidence="points"`` (one model): its query points and weights, the
    floor's weight, the plane ``(a_bar, b_bar)`` and the region's fields (``lb``/``ub`` or
    ``centre``/``radius``); None when a weighted plane has no evidence.

    Fast path (every iteration of the level method offers a bound): when each weighted plane
    is a query point's own plane (:meth:`~nsopt.bundle.PlaneBundle.query_point`) or a fixed
    plane at the floor (the only fixed planes the any-oracle solvers add:
    :meth:`~nsopt.bundle.PlaneBundle.add_floor`), the fields are read off directly, without
    merging recipes; else :meth:`~nsopt.bundle.PlaneBundle.evidence` merges them. Either way
    :meth:`~nsopt.certificate.Certificate.check` rebuilds every plane through the oracle.
    ``y``: the multipliers of the rows ``A_ub x <= b_ub`` when ``region`` has them."""
    if region.get("A_ub") is not None:
        region["y_ub"] = np.zeros(len(region["b_ub"])) if y is None else np.asarray(y, float)
    alpha = np.asarray(alpha, dtype=np.float64)[: bundle.n]
    index = np.flatnonzero(alpha)
    points, weights, floor = [], [], 0.0
    index = index.tolist()
    for i, point in zip(index, bundle.query_points(index)):
        if point is not None:
            points.append(point)
            weights.append(alpha[i])
        elif i < bundle.n_fixed and bundle.b[i] == floor_value and math.isfinite(floor_value):
            floor += float(alpha[i])
        else:
            break
    else:
        return OraclePlanes(tuple(points), np.array(weights, dtype=np.float64), floor=floor,
                            floor_value=floor_value, plane=plane, **region)
    q = bundle.evidence(alpha)
    if q is None:
        return None
    return OraclePlanes(q.points, q.weights[:, 0], floor=float(q.floor[0]),
                        floor_value=floor_value, plane=plane, **region)


def region_from_options(config: dict, dim: int) -> Region | None:
    """The region a solver's options state: ``bounds`` (validated already, a pair of arrays),
    or ``radius`` with ``centre`` (None: the origin); None when neither is given. Both at once
    is a ``ValueError``: one region only (a box is a constraint, a ball a statement)."""
    bounds, radius = config.get("bounds"), config.get("radius")
    centre = config.get("centre")
    if bounds is not None and radius is not None:
        raise ValueError("give bounds (a box that constrains x) or radius (a ball a minimiser "
                         "lies in), not both")
    if centre is not None and radius is None:
        raise ValueError("centre is the centre of the ball of radius: give radius too")
    rows = constraint_rows(config, dim)
    if rows is not None:
        if radius is not None:
            raise ValueError("A_ub, b_ub (and A_eq, b_eq) constrain x, with bounds=(lb, ub) or "
                             "alone; radius (a ball a minimiser lies in) cannot be combined "
                             "with them")
        if bounds is None:
            inf = np.full(dim, math.inf)
            inf.setflags(write=False)
            return Region("box", lb=-inf, ub=inf, A_ub=rows[0], b_ub=rows[1], n_eq=rows[2])
    if bounds is not None:
        lb, ub = box_for_dim(bounds, dim)
        if rows is not None:
            return Region("box", lb=lb, ub=ub, A_ub=rows[0], b_ub=rows[1], n_eq=rows[2])
        return Region("box", lb=lb, ub=ub)
    if radius is not None:
        c = np.zeros(dim) if centre is None else check_vector(centre, dim, "centre", copy=True)
        c.setflags(write=False)      # check_vector refuses NaN and inf, naming centre
        return Region("ball", centre=c, radius=float(radius))
    return None


def box_min(a: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> float:
    r""":math:`\min_{lb \le y \le ub}\langle a, y\rangle`; ``-inf`` when a nonzero :math:`a_j`
    meets an infinite side (0 times an infinite side counts 0)."""
    a = np.asarray(a, dtype=np.float64)
    nz = a != 0
    with np.errstate(invalid="ignore"):
        terms = np.minimum(a[nz] * lb[nz], a[nz] * ub[nz])
    return float(terms.sum())


class ModelMinimum(NamedTuple):
    """The model's minimum over a region: a minimising point (None for a ball), the bound the
    multipliers prove, the multipliers (feasible, one per plane) and their plane."""

    point: np.ndarray | None
    bound: float
    alpha: np.ndarray
    a_bar: np.ndarray
    b_bar: float
    y: np.ndarray | None = None    # multipliers of the rows A_ub x <= b_ub (None without)



def _lstsq(M, rhs) -> np.ndarray:
    """The minimum-norm least-squares solution of ``M x = rhs`` (LAPACK ``gelsy``); NaN when
    LAPACK fails (the caller then stops refining)."""
    try:
        return scipy.linalg.lstsq(M, rhs, lapack_driver="gelsy", check_finite=False)[0]
    except (np.linalg.LinAlgError, ValueError):
        return np.full(M.shape[1], np.nan)


def polish_multipliers(bundle: PlaneBundle, alpha, lb, ub, rounds: int = 2, plane=None,
                       worth: float = 0.0):
    r"""Multipliers on the simplex whose box bound :math:`\bar b + \min_{lb \le y \le ub}
    \langle\bar a, y\rangle` is at least that of ``alpha``: ``(value, alpha')``.

    An LP's (or a projection's) multipliers cancel the planes' slopes on the coordinates
    strictly inside the box only up to the solve's rounding, and each residual
    :math:`\bar a_j` costs :math:`|\bar a_j|(ub_j - lb_j)` of bound. With nearly parallel
    planes (an oracle offering the neighbouring pieces of a max as minorants) the basis is
    ill-conditioned and that loss reached a relative 3.7e-8 of the value, so that a run asked
    for 1e-8 stalled (a Chebyshev fit, ``tests/test_level_bundle.py``). Each round is one step
    of iterative refinement on the support S of ``alpha``: the least-squares correction
    :math:`\delta` with :math:`\sum_{i \in S}\delta_i a_{ij} = -\bar a_j` on the coordinates
    where :math:`|\bar a_j|` is at rounding level, and :math:`\sum_S \delta_i = 0`; the result
    is clipped and renormalised onto the simplex, and kept only when its bound, computed
    from the multipliers as every bound is, is higher. Any multipliers on the simplex prove
    their bound, so the certificate needs no trust in this step. One model only (else
    ``alpha`` made feasible, unchanged). ``plane``: ``(a_bar, b_bar)`` of ``alpha`` when the
    caller has it (``alpha`` is then taken as feasible already). ``worth``: no round when
    the residuals' cost :math:`\sum_{free} |\bar a_j|(ub_j - lb_j)`, about what a round can
    gain, is at most this (the level method passes a hundredth of its gap: on the largest
    eigenvalue the residuals cost 1e-12 of the value, and each least-squares solve cost more
    than the rest of an iteration). The least squares are LAPACK's ``gelsy`` (a pivoted QR,
    minimum-norm), 2-4 times faster than numpy's SVD-based ``gelsd`` at these sizes. Returns
    ``(value, alpha, (a_bar, b_bar))``."""
    if plane is None:
        alpha = bundle.feasible(alpha)
        plane = bundle.combine(alpha)
    d = plane[0].shape[0]
    value, alpha, _, plane = _refine(bundle, alpha, np.empty(0), plane, np.empty((0, d)),
                                     np.empty(0), lb, ub, 0, rounds, worth)
    return value, alpha, plane


def _model_lp(M, rhs, lb, ub, deadline):
    r""":func:`scipy.optimize.linprog` (HiGHS) on :math:`\min t` s.t. :math:`M (x, t) \le
    rhs`, :math:`lb \le x \le ub`, t free, within the time left before ``deadline``."""
    d = len(lb)
    c = np.zeros(d + 1)
    c[-1] = 1.0
    box = np.column_stack([np.append(lb, -np.inf), np.append(ub, np.inf)])
    options = dict(_LP_OPTIONS)
    if deadline is not None:
        options["time_limit"] = max(deadline - time.perf_counter(), 1e-3)
    return linprog(c, A_ub=M, b_ub=rhs, bounds=box, method="highs", options=options)


def box_model_minimum(bundle: PlaneBundle, lb, ub, deadline=None, constraints=None
                      ) -> ModelMinimum | None:
    r"""The LP :math:`\min t` s.t. :math:`A x - t \le -b`, :math:`lb \le x \le ub` (HiGHS), and
    the bound its multipliers prove (made exactly feasible first). None when the LP is
    unbounded (an infinite side the model does not close); :class:`MasterLPError` when HiGHS
    fails otherwise. ``constraints = (A_ub, b_ub)``: rows :math:`A_{ub} x \le b_{ub}` too
    (:func:`rows_model_minimum`)."""
    if constraints is not None:
        return rows_model_minimum(bundle, lb, ub, constraints, deadline)
    n, d = bundle.n, bundle.dim
    rows = bundle.rows()
    if sp.issparse(rows):
        A_ub = sp.hstack([rows, sp.csr_matrix(-np.ones((n, 1)))], format="csr")
    else:
        A_ub = np.hstack([rows, -np.ones((n, 1))])
    res = _model_lp(A_ub, -bundle.b, lb, ub, deadline)
    if res.status == 3:
        return None
    if res.status != 0 or res.x is None or res.ineqlin is None or res.ineqlin.marginals is None:
        raise MasterLPError(f"HiGHS could not solve the master LP (the minimum of the "
                            f"cutting-plane model over the box): linprog status {res.status}, "
                            f"{res.message}")
    point = np.clip(np.asarray(res.x[:d], dtype=np.float64), lb, ub)
    alpha = bundle.feasible(-np.asarray(res.ineqlin.marginals, dtype=np.float64))
    a_bar, b_bar = bundle.combine(alpha)
    return ModelMinimum(point, b_bar + box_min(a_bar, lb, ub), alpha, a_bar, b_bar)


def region_model_minimum(bundle: PlaneBundle, region: Region, deadline=None) -> ModelMinimum | None:
    r"""The model's minimum over ``region``, proven by multipliers: for a box,
    :func:`box_model_minimum`; for a ball, the LP over the smallest box around it, its
    multipliers valued by the ball's formula :math:`\bar b + \langle\bar a, c\rangle -
    r\|\bar a\|` (at least the box's value, since :math:`\|\bar a\|_2 \le \|\bar a\|_1`;
    exact when the model's minimiser lies inside the ball, where the LP's vertex makes
    :math:`\bar a` vanish to rounding, which no quadratic program's iterate does)."""
    m = box_model_minimum(bundle, *region.enclosing_box(), deadline, region.rows)
    if m is None or region.kind == "box":
        return m
    return m._replace(point=None, bound=region.plane_minimum(m.a_bar, m.b_bar))


class RegionCertifier:
    """Lower bounds on :math:`\\min f` over a :class:`Region` from a run's oracle calls.

    A listener of :class:`~nsopt.oracle.CountingOracle`: every evaluation adds the plane
    :math:`f(w) + \\langle g, \\cdot - w\\rangle` (with ``w`` as evidence). :meth:`bound`
    minimises the model over the region (:func:`box_model_minimum` or
    :func:`region_model_minimum`) and returns ``(value, OraclePlanes)``, the best so far. When
    ``max_planes`` planes are held, the planes with zero multiplier in the last bound go first,
    the longest idle first, a tenth of ``max_planes`` at once; then the bundle is aggregated
    (a convex combination of planes is a plane: the bound so far stays provable).

    The LP lives on between bounds (new planes are added as rows, dropped ones deleted, and
    the dual simplex restarts from the last basis; an aggregation rebuilds it): the compiled
    :class:`~nsopt.inner.level_master.DenseBoxLP` up to 300 variables (with the rows
    ``A_ub x <= b_ub`` too, not with equalities), else
    HiGHS's :class:`~nsopt.inner.level_master.BoxModelLP` when its object model is
    importable; otherwise, or when it reports no optimum, it is solved from scratch.

    Parameters
    ----------
    problem : Oracle
        The oracle (its ``lower_bound``, when finite, is a plane of slope 0).
    region : Region
    max_planes : int
        Planes kept (the loop's ``certify_planes``), at least ``min(2 dim + 2, 1000)``: a
        polyhedral ``f`` needs ``dim + 1`` planes around a minimiser to prove its minimum.
    """

    #: the certificate source of its bounds
    source = "region-planes"

    def __init__(self, problem, region: Region, max_planes: int = 100):
        self.region = region
        self.floor_value = float(getattr(problem, "lower_bound", -math.inf))
        self.bundle = PlaneBundle(problem.dim, evidence="points")
        if math.isfinite(self.floor_value):
            self.bundle.add_floor(self.floor_value)
        # a polyhedral f needs dim + 1 planes around a minimiser to close the gap
        self.max_planes = max(int(max_planes), min(2 * problem.dim + 2, 1000))
        self.best = (-math.inf, None)
        self.deadline = None
        self._alpha = None
        self._fresh = False
        self.upper = math.inf           # the best value seen (the gap the schedule reads)
        self._lp = None                 # hot-started LP whose rows mirror the bundle, or None
        self._calls = self._due = 0
        self._interval = 1

    def __call__(self, ev) -> None:
        if not (math.isfinite(ev.fun) and ev.subgradient_is_finite()):
            return
        self.upper = min(self.upper, float(ev.fun))
        bundle = self.bundle
        if bundle.n >= self.max_planes:
            self.bound(final=True)      # multipliers for exactly these planes, then make room
            alpha = self._alpha if self._alpha is not None else np.zeros(bundle.n)
            idle = alpha <= 0
            idle[: bundle.n_fixed] = False
            # room for a tenth at once (a drop copies the bundle and changes the LP), or
            # at least for the new plane
            excess = bundle.n - self.max_planes + 1
            excess = max(excess, min(self.max_planes // 10, np.count_nonzero(idle)))
            if np.count_nonzero(idle) >= excess:
                order = np.flatnonzero(idle)[np.argsort(-bundle.age[np.flatnonzero(idle)], kind="stable")]
                mask = np.zeros(bundle.n, dtype=bool)
                mask[order[:excess]] = True
                self._alpha = alpha[bundle.drop(mask)]
                if self._lp is not None:
                    self._lp.drop(mask)
            else:
                self._alpha = bundle.compress(bundle.feasible(alpha), self.max_planes)
                self._lp = None         # aggregated rows: rebuilt at the next bound
        bundle.add_at(ev.w, ev.fun, ev.subgradient)
        if self._lp is not None:
            self._lp.add(_dense_row(bundle, bundle.n - 1), float(bundle.b[bundle.n - 1]))
        if self._alpha is not None:
            self._alpha = np.append(self._alpha[: bundle.n - 1], 0.0)
        self._fresh = True

    def bound(self, final: bool = False):
        """``(value, evidence)``: the best bound over the region proven so far.

        The LP is solved on a schedule: after one that raised the bound by at least 1% of the
        gap to the best value seen it is due again at the next call; otherwise the interval
        doubles (at most 16 calls). ``final=True`` solves it whenever a plane came in since."""
        if not (self._fresh and self.bundle.n):
            return self.best
        self._calls += 1
        if not final and self._calls < self._due:
            return self.best
        self._fresh = False
        before = self.best[0]
        bundle, r = self.bundle, self.region
        m = self._hot_minimum()
        if m is None:
            try:
                m = region_model_minimum(bundle, r, self.deadline)
            except MasterLPError:
                return self.best        # no new bound this time; the next call tries again
        if m is None:
            return self.best
        self._alpha = m.alpha
        bundle.update_ages(m.alpha)
        if m.bound > self.best[0]:
            evidence = planes_evidence(bundle, m.alpha, self.floor_value, (m.a_bar, m.b_bar),
                                       m.y, **r.evidence_fields())
            if evidence is not None:
                self.best = (m.bound, evidence)
        gain = self.best[0] - before        # nan while no bound is proven: not useful
        useful = gain > 0 and (not math.isfinite(before)
                               or gain >= USEFUL_GAIN * (self.upper - before))
        self._interval = 1 if useful else min(2 * self._interval, 16)
        self._due = self._calls + self._interval
        return self.best

    def _hot_minimum(self) -> ModelMinimum | None:
        """The model's minimum through the warm LP over the region's enclosing box, built
        from the bundle on first use and after an aggregation: up to ``DENSE_LP_MAX_DIM``
        variables and without equalities the compiled dense dual simplex
        (:class:`~nsopt.inner.level_master.DenseBoxLP`, as level-bundle, with the rows as
        fixed constraints), else HiGHS's hot-started model
        (:class:`~nsopt.inner.level_master.BoxModelLP`, :class:`RowsModelLP` with rows); None when neither applies or it reports no optimum
        (the caller solves from scratch). The bound is computed from the multipliers made
        feasible, never the LP's value."""
        from ..inner.level_master import BoxModelLP, DenseBoxLP, highs_available
        from .level_bundle import DENSE_LP_MAX_DIM

        bundle, region = self.bundle, self.region
        lb, ub = region.enclosing_box()
        if not (np.all(np.isfinite(lb)) and np.all(np.isfinite(ub))):
            return None
        # equality pairs (opposite normals) make a dense basis singular: HiGHS takes them
        dense = not region.n_eq and lb.size <= DENSE_LP_MAX_DIM
        if not (dense or highs_available()):
            return None
        if self._lp is None:
            self._lp = (DenseBoxLP(lb, ub, rows=region.rows) if dense
                        else BoxModelLP(lb, ub, HOT_LP_OPTIONS) if region.A_ub is None
                        else RowsModelLP(lb, ub, region.A_ub, region.b_ub, HOT_LP_OPTIONS))
            rows = bundle.rows()
            rows = rows.toarray() if sp.issparse(rows) else rows
            for i in range(bundle.n):
                self._lp.add(rows[i], float(bundle.b[i]))
        left = None if self.deadline is None else self.deadline - time.perf_counter()
        out = self._lp.solve(left)
        if out is None or not np.all(np.isfinite(out[2])):
            return None
        x, _, alpha = out[:3]
        y = None
        if region.A_ub is not None:     # the rows' multipliers, scaled like the planes'
            total = float(np.maximum(alpha, 0.0).sum())
            y = np.maximum(out[3], 0.0) / (total if total > 0 else 1.0)
            if not np.all(np.isfinite(y)):
                return None
        alpha = bundle.feasible(alpha)
        a_bar, b_bar = bundle.combine(alpha)
        if region.kind == "box":
            return ModelMinimum(np.clip(x, lb, ub), region.plane_minimum(a_bar, b_bar, y), alpha,
                                a_bar, b_bar, y)
        return ModelMinimum(None, region.plane_minimum(a_bar, b_bar), alpha, a_bar, b_bar)


def _dense_row(bundle: PlaneBundle, i: int) -> np.ndarray:
    """Slope ``i`` of the bundle as a dense vector."""
    row = bundle.rows(i)[:1]
    return row.toarray()[0] if sp.issparse(row) else row[0]


# --- rows A_ub x <= b_ub on top of the box ------------------------------------------------
def _matrix(value):
    if sp.issparse(value):
        value = value.toarray()
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise TypeError(f"got {type(value).__name__}")
    a = np.array(value, dtype=np.float64)
    if a.ndim not in (1, 2) or a.size == 0:
        raise ValueError(f"got shape {a.shape}")
    return a


def _vector(value):
    if not isinstance(value, (list, tuple, np.ndarray, numbers.Real)) or isinstance(value, bool):
        raise TypeError(f"got {type(value).__name__}")
    a = np.array(value, dtype=np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("got an empty vector")
    return a


#: the options of the methods that keep rows ``A_ub x <= b_ub`` (level-bundle, proximal-bundle)
ROW_OPTIONS = {
    "A_ub": Option(None, NoneOr(Satisfies(_matrix, "a 2-D array (m, dim) or scipy.sparse "
                                                   "matrix")),
                   doc="rows A_ub x <= b_ub constraining x (with bounds): linprog's name"),
    "b_ub": Option(None, NoneOr(Satisfies(_vector, "a 1-D array of m numbers")),
                   doc="right-hand sides of the rows A_ub x <= b_ub"),
    "A_eq": Option(None, NoneOr(Satisfies(_matrix, "a 2-D array (k, dim) or scipy.sparse "
                                                   "matrix")),
                   doc="rows A_eq x = b_eq constraining x (kept as two rows each)"),
    "b_eq": Option(None, NoneOr(Satisfies(_vector, "a 1-D array of k numbers")),
                   doc="right-hand sides of the rows A_eq x = b_eq"),
}


def constraint_rows(config: dict, dim: int):
    """``(A, b, n_eq)``: the rows of the options ``A_ub``, ``b_ub``, ``A_eq``, ``b_eq`` as one
    system ``A x <= b``, each equality as the pair ``A_eq x <= b_eq``, ``-A_eq x <= -b_eq``
    (last, ``2 n_eq`` rows: multipliers of either sign are a pair of nonnegative ones); None
    without rows."""
    parts, n_eq = [], 0
    if config.get("A_ub") is not None or config.get("b_ub") is not None:
        parts.append(rows_for_dim(config.get("A_ub"), config.get("b_ub"), dim))
    if config.get("A_eq") is not None or config.get("b_eq") is not None:
        A, b = rows_for_dim(config.get("A_eq"), config.get("b_eq"), dim, ("A_eq", "b_eq"))
        parts.append((np.vstack([A, -A]), np.concatenate([b, -b])))
        n_eq = A.shape[0]
    if not parts:
        return None
    A = np.vstack([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    A.setflags(write=False)
    b.setflags(write=False)
    return A, b, n_eq


def rows_for_dim(A_ub, b_ub, dim: int, names=("A_ub", "b_ub")):
    """``(A_ub, b_ub)`` validated for a problem of dimension ``dim``: a dense read-only
    ``(m, dim)`` float64 matrix (scipy.sparse accepted, made dense) and an ``(m,)`` vector, both
    finite (scipy.optimize.linprog's names, or ``names``: ``("A_eq", "b_eq")``). ``ValueError``
    naming the argument for one without the other, a wrong shape, NaN or an infinite entry."""
    na, nb = names
    if A_ub is None or b_ub is None:
        given, missing = (na, nb) if b_ub is None else (nb, na)
        raise ValueError(f"{given} is given without {missing}: the rows need both")
    A = A_ub.toarray() if sp.issparse(A_ub) else A_ub
    try:
        A = np.array(A, dtype=np.float64)
        b = np.array(b_ub, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{na} and {nb} must be numeric arrays, got {type(A_ub).__name__} and "
                         f"{type(b_ub).__name__}") from None
    if A.ndim == 1 and A.size == dim:
        A = A.reshape(1, dim)                       # one row
    b = b.reshape(-1) if b.ndim == 0 else b
    if A.ndim != 2 or A.shape[1] != dim:
        raise ValueError(f"{na} must have shape (m, {dim}) (one row per constraint, dim "
                         f"columns), got shape {A.shape}")
    if b.ndim != 1 or b.size != A.shape[0]:
        raise ValueError(f"{nb} must have shape ({A.shape[0]},), one entry per row of {na}, "
                         f"got shape {b.shape}")
    for name, v in ((na, A), (nb, b)):
        bad = np.flatnonzero(~np.isfinite(v.reshape(-1)))
        if bad.size:
            at = np.unravel_index(int(bad[0]), v.shape)
            raise ValueError(f"{name} has a non-finite entry at index "
                             f"{tuple(int(i) for i in at) if v.ndim > 1 else int(at[0])} "
                             f"({v.reshape(-1)[bad[0]]!r})")
    A.setflags(write=False)
    b.setflags(write=False)
    return A, b


def rows_bound(a_bar, b_bar: float, y, A_ub, b_ub, lb, ub) -> float:
    r"""Weak duality over :math:`P = \{lb \le x \le ub,\ A_{ub} x \le b_{ub}\}`: for the plane
    :math:`f \ge \langle\bar a, x\rangle + \bar b` and any :math:`y \ge 0`, every
    :math:`x \in P` has :math:`y^T(A_{ub}x - b_{ub}) \le 0`, so

    .. math:: \min_P f \ \ge\ \bar b - y^T b_{ub} + \sum_j \min(r_j lb_j,\ r_j ub_j), \qquad
              r = \bar a + A_{ub}^T y,

    the box handled exactly (its multipliers are the parts of :math:`r` at a side). ``y``:
    None is 0; negatives are clipped (the bound holds for any nonnegative multipliers)."""
    y = np.zeros(len(b_ub)) if y is None else np.maximum(np.asarray(y, dtype=np.float64), 0.0)
    r = np.asarray(a_bar, dtype=np.float64) + A_ub.T @ y
    return float(b_bar) - float(y @ b_ub) + box_min(r, lb, ub)


def polish_rows_multipliers(bundle: PlaneBundle, alpha, y, A_ub, b_ub, lb, ub, n_eq: int = 0,
                            rounds: int = 2, worth: float = 0.0):
    r""":func:`polish_multipliers` with rows: multipliers :math:`\alpha` on the simplex and
    :math:`y \ge 0` whose bound :func:`rows_bound` is at least that of ``(alpha, y)``:
    ``(value, alpha', y', (a_bar, b_bar))``.

    The residual slopes are those of :math:`r = \bar a + A_{ub}^T y`; each round is the
    least-squares correction :math:`(\delta, \eta)` on the supports of ``alpha`` and of the
    inequality rows' ``y`` (and the net multiplier :math:`\lambda = y^+ - y^-` of every
    equality pair, the last ``2 n_eq`` rows, of either sign) with :math:`\sum_S \delta_i
    a_{ij} + \sum_T \eta_k A_{kj} = -r_j` on the coordinates where :math:`|r_j|` is at
    rounding level and :math:`\sum_S \delta_i = 0`. The result is made feasible (``alpha``
    clipped and divided by its sum s, ``y`` clipped and divided by s, a pair's
    :math:`\lambda` split into :math:`(\max(\lambda, 0), \max(-\lambda, 0))`) and kept only
    when its bound, recomputed by :func:`rows_bound`, is higher: any such multipliers prove
    their bound. One model only (else the input, made feasible, unchanged). ``worth``: as
    in :func:`polish_multipliers`, with the residuals of :math:`r`."""
    A_ub = np.asarray(A_ub, dtype=np.float64)
    b_ub = np.asarray(b_ub, dtype=np.float64)
    raw = np.maximum(np.asarray(alpha, dtype=np.float64)[: bundle.n], 0.0)
    total = float(raw.sum())
    y = (np.zeros(b_ub.shape[0]) if y is None
         else np.maximum(np.asarray(y, dtype=np.float64), 0.0) / (total if total > 0 else 1.0))
    alpha = bundle.feasible(raw)
    return _refine(bundle, alpha, y, bundle.combine(alpha), A_ub, b_ub, lb, ub, n_eq, rounds,
                   worth)


def _refine(bundle, alpha, y, plane, A_ub, b_ub, lb, ub, n_eq, rounds, worth):
    """The rounds of :func:`polish_rows_multipliers` (and of :func:`polish_multipliers`: no
    rows) from feasible ``alpha``, ``y`` and ``plane`` = ``(a_bar, b_bar)`` of ``alpha``:
    ``(value, alpha, y, plane)``, the best bound seen and its multipliers."""
    m = b_ub.shape[0]
    m_ub = m - 2 * n_eq
    a_bar, b_bar = plane
    best = (rows_bound(a_bar, b_bar, y, A_ub, b_ub, lb, ub), alpha, y, (a_bar, b_bar))
    if bundle.n_blocks != 1 or not np.isfinite(best[0]):
        return best
    A = bundle.A
    for _ in range(rounds):
        S = np.flatnonzero(alpha > 0)
        T = np.flatnonzero(y[:m_ub] > 0)
        if S.size + T.size + n_eq < 2:   # an equality pair's multiplier moves either way
            break
        # the columns: planes on S, inequality rows on T, equality pairs by their first row
        C = np.vstack([np.asarray(A[S], dtype=np.float64), A_ub[T], A_ub[m_ub: m_ub + n_eq]])
        r = a_bar + A_ub.T @ y
        scale = float(np.abs(C).max(initial=0.0))
        free = np.flatnonzero(np.abs(r) <= 1e-7 * scale)
        if free.size == 0 or not np.any(r[free]):
            break
        if float(np.abs(r[free]) @ (ub[free] - lb[free])) <= worth:
            break
        M = np.vstack([C[:, free].T,
                       np.concatenate([np.ones(S.size), np.zeros(C.shape[0] - S.size)])])
        rhs = np.concatenate([-r[free], [0.0]])
        step = _lstsq(M, rhs)
        if not np.isfinite(step).all():
            break
        trial = alpha.copy()
        trial[S] += step[: S.size]
        trial = np.maximum(trial, 0.0)
        s = float(trial.sum())
        if not s > 0:
            break
        ny = y.copy()
        ny[T] += step[S.size: S.size + T.size]
        lam = ny[m_ub: m_ub + n_eq] - ny[m_ub + n_eq:] + step[S.size + T.size:]
        ny[m_ub: m_ub + n_eq] = np.maximum(lam, 0.0)
        ny[m_ub + n_eq:] = np.maximum(-lam, 0.0)
        alpha = bundle.feasible(trial)
        y = np.maximum(ny, 0.0) / s
        a_bar, b_bar = bundle.combine(alpha)
        value = rows_bound(a_bar, b_bar, y, A_ub, b_ub, lb, ub)
        if value > best[0]:
            best = (value, alpha, y, (a_bar, b_bar))
    return best


def rows_model_minimum(bundle: PlaneBundle, lb, ub, constraints, deadline=None
                       ) -> ModelMinimum | None:
    r"""The LP :math:`\min t` s.t. :math:`\langle a_i, x\rangle + b_i \le t`, :math:`A_{ub} x
    \le b_{ub}`, :math:`lb \le x \le ub` (HiGHS through :func:`scipy.optimize.linprog`) and the
    bound its multipliers prove (:func:`rows_bound`): the planes' multipliers made exactly
    feasible (clipped, divided by their sum s), the rows' clipped and divided by s too. None
    when the LP is unbounded; :class:`MasterLPError` when HiGHS fails (an empty set
    included: the message says so)."""
    A_ub, b_ub = constraints
    n, d, m = bundle.n, bundle.dim, len(b_ub)
    rows = bundle.rows()
    rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
    M = np.zeros((n + m, d + 1))
    M[:n, :d], M[:n, d] = rows, -1.0
    M[n:, :d] = A_ub
    res = _model_lp(M, np.concatenate([-bundle.b, b_ub]), lb, ub, deadline)
    if res.status == 3:
        return None
    if res.status == 2:
        raise MasterLPError("the feasible set {lb <= x <= ub, A_ub x <= b_ub} is empty "
                            f"(HiGHS: {res.message})")
    if res.status != 0 or res.x is None or res.ineqlin is None or res.ineqlin.marginals is None:
        raise MasterLPError(f"HiGHS could not solve the master LP (the minimum of the "
                            f"cutting-plane model over the box and the rows): linprog status "
                            f"{res.status}, {res.message}")
    duals = -np.asarray(res.ineqlin.marginals, dtype=np.float64)
    total = float(np.maximum(duals[:n], 0.0).sum())
    alpha = bundle.feasible(duals[:n])
    y = np.maximum(duals[n:], 0.0) / (total if total > 0 else 1.0)
    a_bar, b_bar = bundle.combine(alpha)
    point = np.clip(np.asarray(res.x[:d], dtype=np.float64), lb, ub)
    return ModelMinimum(point, rows_bound(a_bar, b_bar, y, A_ub, b_ub, lb, ub), alpha, a_bar,
                        b_bar, y)


def _row_excess(A_ub, b_ub, x):
    """``(excess, scale)`` of the rows at ``x``: ``A x - b`` and the magnitude of its terms."""
    return A_ub @ x - b_ub, 1.0 + np.abs(b_ub) + np.abs(A_ub) @ np.abs(x)


#: a row counts satisfied when its excess is at most this times the magnitude of its terms
ROW_TOLERANCE = 1e-9


def feasible_start(region: Region, x0: np.ndarray, given: bool) -> np.ndarray:
    r"""The start of a run over a box with rows: ``x0`` (already in the box) when it satisfies
    every row to :data:`ROW_TOLERANCE`; else, when ``x0`` is the user's (``given``), a
    ``ValueError`` naming the most violated row and by how much (a start is the user's choice:
    nsopt does not move it silently); when it is the default start, its projection onto the
    set, the QP :math:`\min \|x - x_0\|^2` s.t. :math:`A_{ub} x \le b_{ub}`, :math:`lb \le x
    \le ub` (Goldfarb-Idnani, :func:`~nsopt.inner.level_master.project_level_set`), or a
    vertex from HiGHS when that fails. An empty set is a ``ValueError`` saying so (HiGHS's
    phase 1)."""
    from ..inner.level_master import project_level_set

    A_ub, b_ub = region.rows
    excess, scale = _row_excess(A_ub, b_ub, x0)
    if np.all(excess <= ROW_TOLERANCE * scale):
        return x0
    lb, ub = region.lb, region.ub
    box = np.column_stack([lb, ub])
    feas = linprog(np.zeros(x0.size), A_ub=A_ub, b_ub=b_ub, bounds=box, method="highs",
                   options=dict(_LP_OPTIONS))
    if feas.status == 2:
        raise ValueError("the feasible set {lb <= x <= ub, A_ub x <= b_ub} is empty (HiGHS "
                         f"finds no point: {feas.message}); check A_ub, b_ub and bounds")
    if given:
        k = int(np.argmax(excess / scale))
        m_ub = len(b_ub) - 2 * region.n_eq
        if k < m_ub:
            what = (f"row {k} of A_ub x <= b_ub by {float(excess[k]):.6g} (A_ub[{k}] @ x0 = "
                    f"{float(A_ub[k] @ x0):.6g} > b_ub[{k}] = {float(b_ub[k]):.6g})")
        else:
            j = (k - m_ub) % region.n_eq
            what = (f"row {j} of A_eq x = b_eq by {float(excess[k]):.6g} (A_eq[{j}] @ x0 = "
                    f"{float(A_ub[m_ub + j] @ x0):.6g}, b_eq[{j}] = "
                    f"{float(b_ub[m_ub + j]):.6g})")
        raise ValueError(f"x0 violates {what}; pass a feasible x0, or none: the default "
                         f"start is projected onto the set")
    tol = 1e-12 * (1.0 + float(np.max(np.abs(x0), initial=0.0)))
    x, _ = project_level_set(A_ub, b_ub, lb, ub, x0, tol=tol)
    if x is not None:
        excess, scale = _row_excess(A_ub, b_ub, x)
        if np.all(excess <= ROW_TOLERANCE * scale):
            return x
    if feas.status != 0 or feas.x is None:
        raise ValueError(f"HiGHS could not find a point of {{lb <= x <= ub, A_ub x <= b_ub}} "
                         f"(linprog status {feas.status}: {feas.message})")
    return np.clip(np.asarray(feas.x, dtype=np.float64), lb, ub)


class RowsModelLP:
    r"""The LP :math:`\min_{x \in Q, t} t` s.t. :math:`A_{ub} x \le b_{ub}` (fixed rows, first)
    and :math:`\langle a_i, x\rangle - t \le -b_i` (the planes, after them, mirroring a
    :class:`~nsopt.bundle.PlaneBundle`), kept alive across iterations in one HiGHS model (the
    dual simplex restarts from the last basis), as
    :class:`~nsopt.inner.level_master.BoxModelLP` does for the box alone. ``add``, ``drop``
    and ``solve`` take the same arguments as there; ``solve`` returns ``(x, t, alpha, y)``
    with the rows' multipliers ``y`` too (both >= 0 up to HiGHS's tolerances)."""

    def __init__(self, lb, ub, A_ub, b_ub, options=None):
        cls = _highs_class()
        if cls is None:
            raise ImportError("RowsModelLP needs HiGHS (highspy, or the copy in scipy >= 1.13)")
        self.dim = d = int(np.size(lb))
        h = cls()
        for name, value in (("output_flag", False), ("threads", 1), ("parallel", "off"),
                            ("primal_feasibility_tolerance", 1e-10),
                            ("dual_feasibility_tolerance", 1e-10), *(options or {}).items()):
            h.setOptionValue(name, value)
        self._inf = inf = float(h.getInfinity())
        empty_i, empty_v = np.zeros(0, dtype=np.int32), np.zeros(0)
        for j in range(d):
            lo = float(lb[j]) if math.isfinite(lb[j]) else -inf
            hi = float(ub[j]) if math.isfinite(ub[j]) else inf
            h.addCol(0.0, lo, hi, 0, empty_i, empty_v)
        h.addCol(1.0, -inf, inf, 0, empty_i, empty_v)
        for k in range(A_ub.shape[0]):
            nz = np.flatnonzero(A_ub[k]).astype(np.int32)
            h.addRow(-inf, float(b_ub[k]), nz.size, nz, A_ub[k, nz])
        self._h, self.m, self.n = h, int(A_ub.shape[0]), 0

    def add(self, a, b: float) -> None:
        a = np.asarray(a, dtype=np.float64).ravel()
        nz = np.flatnonzero(a).astype(np.int32)
        self._h.addRow(-self._inf, -float(b), nz.size + 1, np.append(nz, np.int32(self.dim)),
                       np.append(a[nz], -1.0))
        self.n += 1

    def drop(self, mask) -> None:
        rows = np.flatnonzero(np.asarray(mask, dtype=bool)[: self.n]).astype(np.int32)
        if rows.size:
            self._h.deleteRows(rows.size, rows + np.int32(self.m))
            self.n -= rows.size

    def solve(self, deadline_seconds=None):
        h = self._h
        limit = math.inf     # HiGHS's clock adds up over runs: the limit is that clock + left
        if deadline_seconds is not None:
            limit = float(h.getRunTime()) + max(float(deadline_seconds), 1e-3)
        h.setOptionValue("time_limit", limit)
        h.run()
        if h.modelStatusToString(h.getModelStatus()) != "Optimal":
            return None
        sol = h.getSolution()
        col = np.asarray(sol.col_value, dtype=np.float64)
        duals = -np.asarray(sol.row_dual, dtype=np.float64)
        if col.size != self.dim + 1 or duals.size != self.m + self.n:
            return None
        return col[: self.dim].copy(), float(col[self.dim]), duals[self.m:], duals[: self.m]


def add_oracle_minorants(problem, bundle, w, room=None, added=None) -> int:
    """Add the oracle's extra minorants at ``w`` (:meth:`~nsopt.Oracle.minorants`, asked right
    after the evaluation at ``w``) to ``bundle``, in the oracle's order, at most ``room`` of
    them (None: all), each only if no plane of the bundle (nor an earlier row of this call)
    equals it: the planes :meth:`~nsopt.bundle.PlaneBundle.add_minorant` would add row by row,
    added in one :meth:`~nsopt.bundle.PlaneBundle.add_minorants` (one array operation, not k
    calls). ``added(rows, A, b)`` is then called once with the rows added (a list of the
    oracle's row indices) and their planes ``<A_j, x> + b_j``. Returns how many were."""
    if not problem.offers_minorants or (room is not None and room <= 0):
        return 0
    out = problem.minorants(w)
    if out is None:
        return 0
    G, c = out
    G = np.asarray(G, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64).reshape(-1)
    keep = _new_planes(bundle, G, c)
    if room is not None:
        keep = keep[:room]
    if not keep.size:
        return 0
    A, b = G[keep], c[keep]
    rows = keep.tolist()
    bundle.add_minorants(w, rows, A, b)
    if added is not None:
        added(rows, A, b)
    return len(rows)


def _new_planes(bundle, G, c) -> np.ndarray:
    """Indices of the rows ``(G_j, c_j)`` equal neither to a plane of ``bundle`` nor to an
    earlier row (exact equality: offsets first, the slopes only where an offset matches).

    The usual case, no offset matched or repeated (offsets are values of the function's
    pieces at a new point), is one compiled pass over the offsets
    (:func:`~nsopt.inner._level_kernels.offset_matches`); the slopes are read (``bundle.A``:
    a dense copy in list storage) only for the offsets that match."""
    k = c.shape[0]
    b = bundle.b
    hit, repeated = offset_matches(np.ascontiguousarray(b, dtype=np.float64),
                                   np.ascontiguousarray(c, dtype=np.float64))
    if not repeated and not hit.any():
        return np.arange(k)
    dup = np.zeros(k, dtype=bool)
    if hit.any():
        A = bundle.A
        for j in np.flatnonzero(hit).tolist():
            twins = np.flatnonzero(b == c[j])
            dup[j] = bool((A[twins] == G[j]).all(axis=1).any())
    if repeated:                                    # an offset repeats within the call
        for t in range(1, k):
            if not dup[t]:
                earlier = np.flatnonzero(c[:t] == c[t])
                if earlier.size:
                    dup[t] = bool((G[earlier] == G[t]).all(axis=1).any())
    return np.flatnonzero(~dup)
