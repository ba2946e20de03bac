r"""Polyhedral constraints :math:`A_{ub} x \le b_{ub}` on top of a box, for the any-oracle
bundle methods (``level-bundle``, the trust-region ``proximal-bundle``).

The problem is :math:`\min f(x)` over :math:`P = \{lb \le x \le ub,\ A_{ub} x \le b_{ub}\}`
(scipy.optimize.linprog's names). Both methods minimise over :math:`P` (their master
problems carry the rows) and certify by LP duality: for planes :math:`f \ge \langle a_i,
\cdot\rangle + b_i`, multipliers :math:`\alpha` on the simplex and :math:`y \ge 0` on the rows,

.. math::

    \min_P f \ \ge\ \bar b - y^T b_{ub} + \sum_j \min(r_j\,lb_j,\ r_j\,ub_j), \qquad
    r = \bar a + A_{ub}^T y,\quad (\bar a, \bar b) = \textstyle\sum_i \alpha_i (a_i, b_i),

(weak duality, :func:`~nsopt.solvers._region.rows_bound`): valid for *any* such
multipliers, so the LP's inaccuracy costs tightness, never validity, and
:meth:`~nsopt.certificate.Certificate.check` recomputes it from the multipliers alone
(:class:`~nsopt.certificate.OraclePlanes` with ``A_ub``, ``b_ub``, ``y_ub``). The best
multipliers are the duals of the LP :math:`\min t` s.t. :math:`\langle a_i, x\rangle + b_i
\le t`, :math:`x \in P` (:func:`~nsopt.solvers._region.rows_model_minimum`).

Why rows and not a user's projection or support function: a projection gives feasible
points but no bound, and a support function :math:`\sigma_P` is exact only where the user
computes it exactly; rows keep the certificate checkable from data the check can read.
"""
from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ..inner.level_master import _highs_class, project_level_set
from ..oracle import OracleNumericalError, freeze
from ..bundle import PlaneBundle
from ._region import (HOT_LP_OPTIONS, ROW_TOLERANCE, MasterLPError, ModelMinimum, RowsModelLP,
                      constraint_rows, planes_evidence, polish_rows_multipliers,
                      rows_bound, rows_for_dim, rows_model_minimum)
from .level_bundle import POLISH_BELOW, POLISH_WORTH, LevelBundle

__all__ = ["PolyhedralLevelBundle", "rows_prox_master"]


class _PlaneMultipliers(np.ndarray):
    """Plane multipliers that carry the rows' multipliers of the same solve (``rows_y``) to
    :meth:`PolyhedralLevelBundle._offer`; any array derived from it (a slice, a copy) drops
    them (``rows_y`` is then None, and the rows count with ``y = 0``: a weaker, valid bound)."""

    rows_y = None


def _tag(alpha, y) -> np.ndarray:
    out = np.asarray(alpha, dtype=np.float64).view(_PlaneMultipliers)
    out.rows_y = None if y is None else np.asarray(y, dtype=np.float64)
    return out


class PolyhedralLevelBundle(LevelBundle):
    r"""``method="level-bundle"`` with rows ``A_ub x <= b_ub`` (what ``LevelBundle(A_ub=...,
    b_ub=...)`` returns): the level method ([LNN95]_) over :math:`P = \{x \in Q,\ A_{ub} x
    \le b_{ub}\}`.

    * The LP :math:`f^{low}_k = \min_P \check f_k` is solved from scratch by HiGHS
      (:func:`~nsopt.solvers._region.rows_model_minimum`); its plane and row duals prove the
      bound (module docstring).
    * The projection onto the level set :math:`\{x \in P: \check f_k(x) \le l_k\}` is the same
      compiled Goldfarb-Idnani QP with the rows stacked under the planes; its multipliers
      :math:`(\mu, \nu)` prove a bound too, with :math:`\alpha = \mu/\sum\mu`, :math:`y =
      \nu/\sum\mu`.
    * With ``minorants=True`` (the default) the oracle's extra minorants join the model as in
      :class:`LevelBundle`; the evidence records each as (query point, row).
    * The certificate's evidence holds the query points, the multipliers of both kinds, the
      box and the rows; ``Certificate.check(f, bounds=(lb, ub), A_ub=A, b_ub=b)`` recomputes
      the bound from them.
    """

    _label = "LevelBundle"              # the name the user asked for, in option messages

    def __init__(self, **options):
        super().__init__(**options)
        self._rows, self._n_eq = None, 0  # (A, b): validated rows; checked against dim at init
        given = self.config["A_ub"] if self.config["A_ub"] is not None else self.config["A_eq"]
        if given is not None:
            A, b, self._n_eq = constraint_rows(self.config, given.shape[-1])
            self._rows = (A, b)

    def init(self, problem, x0):
        if self._rows is None:
            raise ValueError("PolyhedralLevelBundle needs its rows: pass A_ub and b_ub, or A_eq "
                             "and b_eq (or use LevelBundle, which picks this class when they "
                             "are given)")
        lb, ub = self._box(problem)
        x0 = freeze(np.clip(x0, lb, ub))       # feasible: the loop checked (or projected) it
        bundle = PlaneBundle(problem.dim, evidence="points", gram=False)  # no QP reads G
        lp = (RowsModelLP(lb, ub, *self._rows, HOT_LP_OPTIONS) if _highs_class() is not None
              else None)
        if math.isfinite(problem.lower_bound):
            bundle.add_floor(problem.lower_bound)
            self._mirror(bundle, lp)
        ev = problem.evaluate(x0)
        bundle.add_at(ev.w, ev.fun, ev.subgradient)
        self._mirror(bundle, lp)
        extra = self._add_minorants(problem, bundle, ev.w, lp, None)   # option minorants
        return self._iterate(problem, bundle, ev.w, float(ev.fun), -math.inf, None, lb, ub, 0,
                             lp)._replace(n_extra=extra)

    def _model_minimum(self, problem, bundle, lb, ub, lp=None):
        """The LP over the box and the rows: hot-started in ``lp`` (:class:`RowsModelLP`), else
        (or when it reports no optimum) from scratch; the bound is computed from the
        multipliers (made feasible), never the LP's value."""
        if lp is not None:
            left = None if problem.deadline is None else problem.deadline - time.perf_counter()
            out = lp.solve(left)
            if out is not None and np.all(np.isfinite(out[2])) and np.all(np.isfinite(out[3])):
                x, _, alpha, y = out
                total = float(np.maximum(alpha, 0.0).sum())
                alpha = bundle.feasible(alpha)
                y = np.maximum(y, 0.0) / (total if total > 0 else 1.0)
                a_bar, b_bar = bundle.combine(alpha)
                A_ub, b_ub = self._rows
                return ModelMinimum(np.clip(x, lb, ub),
                                    rows_bound(a_bar, b_bar, y, A_ub, b_ub, lb, ub),
                                    _tag(alpha, y), a_bar, b_bar, y)
        try:
            m = rows_model_minimum(bundle, lb, ub, self._rows, problem.deadline)
        except MasterLPError as exc:
            if problem.deadline is not None and time.perf_counter() >= problem.deadline:
                x = bundle.query_point(bundle.n - 1)
                x = x[0] if type(x) is tuple else x     # a minorant's (point, row)
                return ModelMinimum(x, -math.inf, np.zeros(bundle.n), None, -math.inf)
            raise OracleNumericalError(f"level-bundle: {exc}", None, "the master LP") from None
        return m._replace(alpha=_tag(m.alpha, m.y))

    def _project(self, bundle, centre, level, slack, lb, ub):
        """The projection onto the level set within the rows: ``(x, plane multipliers carrying
        the rows' ones)`` or ``(None, None)``."""
        rows = bundle.rows()
        A = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        n = A.shape[0]
        x, mult = project_polyhedron(self._rows, self._n_eq, lb, ub, centre,
                                     (A, level - bundle.b))
        if x is None or not np.all(np.isfinite(x)) or not bundle.model(x) <= level + slack:
            return None, None
        y = mult[n:]
        if self._n_eq:      # the equalities' multipliers: any sign will do (least squares)
            y = _equality_multipliers(self._rows, self._n_eq, bundle.rmatvec(mult[:n]), y)
        return x, _tag(mult[:n], y)

    def _offer(self, problem, bundle, alpha, lower, evidence, lb, ub, points=None,
               fun_up=math.inf):
        """The weak-duality bound of the plane multipliers ``alpha`` and the rows' multipliers
        they carry (scaled like ``alpha`` when it is made feasible), when it beats ``lower``.
        Within :data:`~nsopt.solvers.level_bundle.POLISH_BELOW` (relative) of ``fun_up`` both
        kinds are first refined together
        (:func:`~nsopt.solvers._region.polish_rows_multipliers`), as without rows."""
        y = getattr(alpha, "rows_y", None)
        raw = np.maximum(np.asarray(alpha, dtype=np.float64)[: bundle.n], 0.0)
        total = float(raw.sum())
        A_ub, b_ub = self._rows
        if y is not None:
            y = np.maximum(y, 0.0) / (total if total > 0 else 1.0)
        alpha = bundle.feasible(np.asarray(alpha, dtype=np.float64))
        a_bar, b_bar = bundle.combine(alpha)
        value = rows_bound(a_bar, b_bar, y, A_ub, b_ub, lb, ub)
        if math.isfinite(value) and fun_up - value <= POLISH_BELOW * abs(fun_up):
            polished = polish_rows_multipliers(bundle, alpha, y, A_ub, b_ub, lb, ub, self._n_eq,
                                               worth=POLISH_WORTH * (fun_up - value))
            if polished[0] > value:
                value, alpha, y, (a_bar, b_bar) = polished
        if value > lower:
            ev = planes_evidence(bundle, alpha, problem.lower_bound, (a_bar, b_bar), y, lb=lb,
                                 ub=ub, A_ub=A_ub, b_ub=b_ub)
            if ev is not None:
                return value, ev.tagged()       # (x, j): row j of the minorants at x
        return lower, evidence


LevelBundle.rows_variant = PolyhedralLevelBundle


#: HiGHS's active-set QP was seen to cycle without end on a random degenerate master (a
#: hypothesis draw): its work is bounded, and a solve that hits a bound is a failed solve
#: (OSQP takes over, as after HiGHS's "solve error"). The iteration bound is deterministic
#: (an active-set solve changes the active set about once per constraint it meets); the
#: time bound is the backstop
HIGHS_QP_ITERATIONS_PER_CONSTRAINT = 50
HIGHS_QP_SECONDS = 60.0


def highs_qp_limits(n_planes: int, n_rows: int, dim: int) -> dict:
    """HiGHS options bounding one master QP's work (see
    :data:`HIGHS_QP_ITERATIONS_PER_CONSTRAINT`)."""
    constraints = n_planes + n_rows + dim + 1
    return {"qp_iteration_limit": int(HIGHS_QP_ITERATIONS_PER_CONSTRAINT * constraints + 1000),
            "time_limit": float(HIGHS_QP_SECONDS)}


def rows_prox_master(bundle: PlaneBundle, u: float, centre, lb, ub, constraints, n_eq=0):
    r"""The trust-region bundle's master problem over :math:`P`,

    .. math:: \min_{x \in P} \max_i \langle a_i, x\rangle + b_i + \tfrac u2\|x - c\|^2,

    as the QP :math:`\min_{x, t}\ t + \tfrac u2\|x\|^2 - u\,c^T x` s.t. :math:`\langle a_i,
    x\rangle - t \le -b_i`, :math:`A_{ub} x \le b_{ub}`, :math:`lb \le x \le ub`, solved by
    HiGHS's QP solver (an active-set method; the model is rebuilt at each call; its work
    bounded by :func:`highs_qp_limits`, OSQP when HiGHS fails or hits a bound). Returns
    ``(beta, y, x)``: the planes' multipliers (made feasible), the rows' (clipped and
    scaled alike) and the minimiser; None when HiGHS reports no optimum. ``n_eq``: the last
    ``2 n_eq`` rows are equality pairs (:func:`~nsopt.solvers._region.constraint_rows`)."""
    cls = _highs_class()
    if cls is None:
        raise ImportError("the trust-region bundle with rows needs HiGHS (highspy, or scipy "
                          ">= 1.13)")
    A_ub, b_ub = constraints
    rows = bundle.rows()
    A = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
    n, d = A.shape
    h = cls()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.setOptionValue("dual_feasibility_tolerance", 1e-10)
    for name, value in highs_qp_limits(n, A_ub.shape[0], d).items():
        h.setOptionValue(name, value)
    inf = float(h.getInfinity())
    empty_i, empty_v = np.zeros(0, dtype=np.int32), np.zeros(0)
    c = np.asarray(centre, dtype=np.float64)
    for j in range(d):
        lo = float(lb[j]) if math.isfinite(lb[j]) else -inf
        hi = float(ub[j]) if math.isfinite(ub[j]) else inf
        h.addCol(float(-u * c[j]), lo, hi, 0, empty_i, empty_v)
    h.addCol(1.0, -inf, inf, 0, empty_i, empty_v)
    for i in range(n):
        nz = np.flatnonzero(A[i]).astype(np.int32)
        h.addRow(-inf, float(-bundle.b[i]), nz.size + 1, np.append(nz, np.int32(d)),
                 np.append(A[i, nz], -1.0))
    for k in range(A_ub.shape[0]):
        nz = np.flatnonzero(A_ub[k]).astype(np.int32)
        h.addRow(-inf, float(b_ub[k]), nz.size, nz, A_ub[k, nz])
    start = np.append(np.arange(d + 1, dtype=np.int32), np.int32(d))
    h.passHessian(d + 1, d, 1, start, np.arange(d, dtype=np.int32), np.full(d, float(u)))
    h.run()
    col = duals = None
    if h.modelStatusToString(h.getModelStatus()) == "Optimal":
        sol = h.getSolution()
        col = np.asarray(sol.col_value, dtype=np.float64)
        duals = -np.asarray(sol.row_dual, dtype=np.float64)
    if (col is None or col.size != d + 1 or duals.size != n + A_ub.shape[0]
            or not np.all(np.isfinite(duals))):
        # HiGHS's active-set QP fails now and then on this semidefinite QP ("solve error",
        # about one call in ten on the random instances of tests/test_polyhedral.py): OSQP
        # (ADMM, then its polishing step) takes over
        col, duals = _osqp_prox(A, bundle.b, u, c, lb, ub, A_ub, b_ub)
        if col is None:
            return None
    total = float(np.maximum(duals[:n], 0.0).sum())
    beta = bundle.feasible(duals[:n])
    y = np.maximum(duals[n:], 0.0) / (total if total > 0 else 1.0)
    x = np.clip(col[:d], lb, ub)
    excess = A_ub @ x - b_ub
    if np.any(excess > ROW_TOLERANCE * (1.0 + np.abs(b_ub) + np.abs(A_ub) @ np.abs(x))):
        # a QP answer feasible only to its solver's tolerance (OSQP's): its projection onto
        # P (exact, Goldfarb-Idnani) keeps every query point in the set
        z, _ = project_polyhedron((A_ub, b_ub), n_eq, lb, ub, x)
        if z is None:
            return None
        x = z
    return beta, y, x


def _osqp_prox(A, b, u, c, lb, ub, A_ub, b_ub):
    """The QP of :func:`rows_prox_master` by OSQP: ``(x and t, duals of the plane rows and
    A_ub rows)``, or ``(None, None)``."""
    import osqp   # a dependency, loaded on first use only (as nsopt.inner.osqp does)

    n, d = A.shape
    m = A_ub.shape[0]
    P = sp.diags(np.append(np.full(d, float(u)), 0.0), format="csc")
    q = np.append(-u * c, 1.0)
    M = sp.vstack([sp.hstack([sp.csc_matrix(A), sp.csc_matrix(-np.ones((n, 1)))]),
                   sp.hstack([sp.csc_matrix(A_ub), sp.csc_matrix((m, 1))]),
                   sp.hstack([sp.identity(d), sp.csc_matrix((d, 1))])], format="csc")
    lo = np.concatenate([np.full(n + m, -np.inf), lb])
    hi = np.concatenate([-np.asarray(b, dtype=np.float64), b_ub, ub])
    solver = osqp.OSQP()
    major = int(str(getattr(osqp, "__version__", "0")).split(".")[0] or 0)
    settings = dict(verbose=False, eps_abs=1e-10, eps_rel=1e-10, max_iter=20000)
    settings["polishing" if major >= 1 else "polish"] = True
    solver.setup(P, q, M, lo, hi, **settings)
    res = solver.solve(raise_error=False) if major >= 1 else solver.solve()
    if res.x is None or res.y is None or not np.all(np.isfinite(res.x)):
        return None, None
    return np.asarray(res.x, dtype=np.float64), np.asarray(res.y[: n + m], dtype=np.float64)


def project_polyhedron(rows, n_eq, lb, ub, centre, extra=None):
    r"""The projection of ``centre`` onto :math:`\{A x \le b,\ lb \le x \le ub,\ E x \le
    r\}` (``rows = (A, b)``, ``extra = (E, r)`` or None: the level set's planes), by the
    compiled Goldfarb-Idnani QP (:func:`~nsopt.inner.level_master.project_level_set`).
    ``(x, multipliers of the extra rows then of A's)``, or ``(None, None)``.

    The last ``2 n_eq`` rows of A are equality pairs: Goldfarb-Idnani stops on a pair (two
    opposite normals are dependent), so the projection runs in their null space, :math:`x =
    x_p + N z` (:math:`x_p` the least-norm solution, N an orthonormal basis of the null space,
    both by an SVD): :math:`\|x - c\| = \|z - N^T(c - x_p)\|`, the other rows and the box
    become rows in z; the pairs' multipliers are returned as 0."""
    A, b = rows
    d = centre.size
    E, r = extra if extra is not None else (np.zeros((0, d)), np.zeros(0))
    scale = 1.0 + float(np.max(np.abs(centre), initial=0.0))
    if not n_eq:
        x, mult = project_level_set(np.vstack([E, A]), np.concatenate([r, b]), lb, ub, centre,
                                    tol=1e-12 * scale)
        return (None, None) if x is None else (x, mult)
    m_ub = A.shape[0] - 2 * n_eq
    Aeq, beq = A[m_ub: m_ub + n_eq], b[m_ub: m_ub + n_eq]
    _, sv, Vt = np.linalg.svd(Aeq)
    rank = int(np.sum(sv > 1e-12 * max(float(sv[0]) if sv.size else 0.0, 1e-300)))
    xp = np.linalg.lstsq(Aeq, beq, rcond=None)[0]
    N = Vt[rank:].T                                    # d x (d - rank)
    fin_u, fin_l = np.isfinite(ub), np.isfinite(lb)
    M = np.vstack([E @ N, A[:m_ub] @ N, N[fin_u], -N[fin_l]])
    rhs = np.concatenate([r - E @ xp, b[:m_ub] - A[:m_ub] @ xp, (ub - xp)[fin_u],
                          (xp - lb)[fin_l]])
    k = N.shape[1]
    z, mult = project_level_set(M, rhs, np.full(k, -np.inf), np.full(k, np.inf),
                                N.T @ (centre - xp), tol=1e-12 * scale)
    if z is None:
        return None, None
    x = np.clip(xp + N @ z, lb, ub)
    out = np.zeros(E.shape[0] + A.shape[0])
    out[: E.shape[0] + m_ub] = mult[: E.shape[0] + m_ub]
    return x, out


def _equality_multipliers(rows, n_eq, a_planes, y):
    r"""``y`` with the equality pairs' multipliers set by least squares: :math:`\lambda`
    minimising :math:`\|r + A_{eq}^T\lambda\|` for the reduced cost :math:`r` of the planes'
    aggregate ``a_planes`` and the inequality rows, split into the pair :math:`(\lambda^+,
    \lambda^-)`. Any :math:`\lambda` gives a valid bound; this one makes the box's share small."""
    A, _ = rows
    m_ub = A.shape[0] - 2 * n_eq
    y = np.array(y, dtype=np.float64, copy=True)
    r = np.asarray(a_planes, dtype=np.float64) + A[:m_ub].T @ np.maximum(y[:m_ub], 0.0)
    lam = -np.linalg.lstsq(A[m_ub: m_ub + n_eq].T, r, rcond=None)[0]
    y[m_ub: m_ub + n_eq] = np.maximum(lam, 0.0)
    y[m_ub + n_eq:] = np.maximum(-lam, 0.0)
    return y
