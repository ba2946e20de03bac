r"""Proximal and trust-region bundle methods.

``ProximalBundle(variant="proximal")`` is Uřičář & Franc's proximal BMRM ([UF12]_ Alg. 2) for
:math:`J(w) = \tfrac\lambda2\|w\|^2 + R(w)`, optionally with one cutting-plane model per group of
examples (``n_models=P``, P-BMRM); ``ProximalBundle(variant="trust-region")`` is a classical
proximal bundle method with serious and null steps for ANY convex :class:`~nsopt.Oracle`.
Both store their planes in :class:`~nsopt.bundle.PlaneBundle` and solve their master problems
with the QP backend of :mod:`nsopt.inner`: a prox term :math:`\tfrac u2\|w - c\|^2` around a
centre :math:`c` is the L2 master problem with offsets :math:`b_i + \langle a_i, c\rangle` in the
variable :math:`w - c` (:func:`_prox_master`).
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..bundle import PlaneBundle
from ..certificate import OraclePlanes, zero_aggregate
from ..inner import QPSimplex, select
from ..problem import RegularizedRisk, as_problem
from ..regularizers import L2
from .._linalg import distance
from .._validation import Boolean, Interval, NoneOr, Option, Options, Satisfies, check_box
from ._base import Solver, bare_oracle
from ._region import (ROW_OPTIONS, ROW_TOLERANCE, MasterLPError, Region,
                      add_oracle_minorants, box_model_minimum, planes_evidence,
                      region_from_options)
from ._polyhedral import rows_prox_master
from ._start import sgd_start
from ..oracle import OracleNumericalError, freeze
from ._cutting_plane import (PLANE_OPTIONS, add_and_solve, add_planes, bundle_planes, master_solver,
                             new_bundle, solve_master)
from ._registry import register

_L2 = L2()


def _n_intercepts(problem) -> int:
    """The problem's number of intercepts (0 without), through the loop's counting wrapper."""
    return int(getattr(getattr(problem, "problem", problem), "n_intercepts", 0))


class _ShiftedPlanes:
    """The planes of a bundle with other offsets (a read-only view for the master solver).

    A view lives for one master solve, during which the bundle does not change: an attribute
    read from the bundle is kept on the view (a solve reads ``n``, ``G``, ``matvec`` ... a few
    dozen times)."""

    def __init__(self, bundle: PlaneBundle, b: np.ndarray):
        self._bundle, self.b = bundle, b

    def __getattr__(self, name):
        value = getattr(self._bundle, name)
        self.__dict__[name] = value
        return value


class _ScaledInterceptPlanes(_ShiftedPlanes):
    r"""The planes of a bundle with other offsets and their last ``k`` slope coordinates (the
    intercepts) multiplied by ``sigma``: the slopes :math:`(a_{i,w}, \sigma a_{i,b})` seen by an
    L2 master problem (identity metric) in the variable :math:`(w, \beta)`, :math:`b = \sigma
    \beta`. Read-only; the Gram matrix is :math:`A_w A_w^T + \sigma^2 A_b A_b^T`, with
    :math:`A_b` read through ``k`` products with unit vectors (any storage)."""

    def __init__(self, bundle: PlaneBundle, b: np.ndarray, k: int, sigma: float):
        super().__init__(bundle, b)
        self._k, self._sigma = int(k), float(sigma)
        d = bundle.dim
        units = np.zeros((d, self._k))
        units[d - self._k:, :] = np.eye(self._k)
        self._Ab = np.column_stack([bundle.matvec(units[:, j]) for j in range(self._k)])
        # bundle.G is A_w A_w^T: the intercept regularizer's metric is zero on the intercepts
        self.G = bundle.G + (self._sigma ** 2) * (self._Ab @ self._Ab.T)
        self.metric = None

    def _scale(self, x):
        x = np.array(x, dtype=np.float64, copy=True)
        x[..., -self._k:] *= self._sigma
        return x

    @property
    def A(self):
        return self._scale(self._bundle.A)

    def matvec(self, v):
        return self._bundle.matvec(self._scale(v))

    def rmatvec(self, alpha, metric=False):
        out = self._bundle.rmatvec(alpha)   # the plain slopes: L2 on the coefficients
        out[-self._k:] *= self._sigma
        return out


def _prox_master(bundle, master, lam, u, centre, warm, tol, deadline=None, n_intercepts=0):
    r"""Solve :math:`\min_w \tfrac\lambda2\|w\|^2 + \tfrac u2\|w - c\|^2 + \max_i \langle a_i,
    w\rangle + b_i` in the dual.

    With :math:`\lambda' = \lambda + u` and :math:`s = (u/\lambda') c` the objective is
    :math:`\tfrac{\lambda'}2\|v\|^2 + \max_i \langle a_i, v\rangle + b_i + \langle a_i, s\rangle`
    + const in :math:`v = w - s` ([UF12]_ eq. 13 with :math:`u = 2\alpha`), an ordinary L2
    master problem; returns ``(sol, w)``.

    With ``n_intercepts = k > 0`` the last k coordinates (the intercepts :math:`b`) are not
    regularized: the objective is :math:`\tfrac\lambda2\|w\|^2 + \tfrac u2\|(w, b) - c\|^2 +
    \max_i \ldots`, a per-coordinate metric with weight :math:`\lambda + u` on the coefficients
    and :math:`u > 0` on the intercepts. With :math:`s = ((u/\lambda')c_w, c_b)` and :math:`b -
    c_b = \sigma\beta`, :math:`\sigma = \sqrt{\lambda'/u}`, it is again the L2 master
    problem :math:`\tfrac{\lambda'}2\|v\|^2 + \max_i\langle\tilde a_i, v\rangle + b_i +
    \langle a_i, s\rangle` in :math:`v = (w - s_w, \beta)`, with slopes :math:`\tilde a_i =
    (a_{i,w}, \sigma a_{i,b})` (:class:`_ScaledInterceptPlanes`); its dual
    :math:`\max_{\alpha\in\Delta} \sum_i\alpha_i(b_i + \langle a_i, s\rangle) -
    \tfrac{1}{2\lambda'}\|A_w^T\alpha\|^2 - \tfrac1{2u}\|A_b^T\alpha\|^2` gives
    :math:`w = s_w - A_w^T\alpha/\lambda'`, :math:`b = c_b - A_b^T\alpha/u`.
    """
    lam2 = lam + u
    if n_intercepts:
        k = int(n_intercepts)
        if not u > 0:
            raise ValueError(f"the proximal master with intercepts needs a prox weight u > 0 "
                             f"(the intercept is unregularized), got u={u!r}")
        sigma = math.sqrt(lam2 / u)
        shift = np.array(centre, dtype=np.float64, copy=True)
        shift[:-k] *= u / lam2
        view = _ScaledInterceptPlanes(bundle, bundle.b + bundle.matvec(shift), k, sigma)
        sol = master.solve(view, _L2, lam2, warm=warm, tol=tol, deadline=deadline)
        v = np.asarray(sol.w, dtype=np.float64)
        w = shift + v
        w[-k:] = shift[-k:] + sigma * v[-k:]
        return sol._replace(w=None), w
    shift = (u / lam2) * centre
    view = _ShiftedPlanes(bundle, bundle.b + bundle.matvec(shift))
    sol = master.solve(view, _L2, lam2, warm=warm, tol=tol, deadline=deadline)
    # sol.w (v) is not needed past w = v + s: w is formed in its buffer when the master
    # solver handed over its own array (one d-vector per candidate less)
    v = sol.w
    w = np.add(v, shift, out=v) if v.flags.writeable and v.base is None else v + shift
    return sol._replace(w=None), w


class _DensePlanes:
    """Planes given by a dense slope matrix ``A`` (n x k) and offsets ``b``, with the Gram
    matrix ``G``: the read-only face of a bundle the simplex QP backend reads (no metric, one
    model), built at once from arrays (no plane-by-plane :class:`PlaneBundle` rebuild)."""

    metric = None
    n_blocks = 1

    def __init__(self, A: np.ndarray, b: np.ndarray, G: np.ndarray):
        self.A, self.b, self.G = A, b, G
        self.n, self.dim = A.shape
        self.block = np.zeros(self.n, dtype=np.int64)

    @property
    def MA(self):
        return self.A

    def matvec(self, w):
        return self.A @ w

    def rmatvec(self, alpha, metric=False):
        return self.A.T @ alpha


#: the box and rows masters' solver once a coordinate is fixed or a row held (SMO and polish,
#: without the active-set phase: with it a half-infinite box stalled the trust region on a max
#: of affine pieces, tests/test_any_oracle.py::test_half_infinite_box_for_the_trust_region_bundle)
_SMO = QPSimplex()


def _box_prox_master(bundle, master, u, centre, lb, ub, warm, deadline=None, max_rounds=30):
    r"""The proximal master over a box, :math:`\min_{lb \le x \le ub} \max_i \langle a_i,
    x\rangle + b_i + \tfrac u2\|x - c\|^2`, by an active set on the coordinates.

    With the coordinates ``F`` fixed at a bound (``x_F``), the rest is the unconstrained master
    in the free coordinates with offsets :math:`b_i + \langle a_{iF}, x_F\rangle`, solved
    exactly by the simplex QP backend (:func:`_prox_master`); then the unclipped minimiser
    :math:`c - \bar a/u` of the Lagrangian says which free coordinates leave the box (fixed
    next) and which fixed ones want back in (freed). When nothing changes, ``(x, alpha)`` is a
    saddle point (the KKT conditions of the box hold). Usually two or three rounds; after
    ``max_rounds`` the last multipliers serve (a worse step, never a wrong bound: bounds are
    computed from the multipliers by the exact formula). Returns the multipliers (feasible)
    and :math:`x = \mathrm{clip}(c - \bar a/u, lb, ub)`."""
    A = None        # the dense planes, formed once a coordinate is fixed
    n, d = bundle.n, bundle.dim
    at_lb = np.zeros(d, dtype=bool)
    at_ub = np.zeros(d, dtype=bool)
    alpha = warm
    for _ in range(max_rounds):
        free = ~(at_lb | at_ub)
        if free.all():  # the bundle's own Gram matrix (kept up to date plane by plane)
            sol, _ = _prox_master(bundle, master, 0.0, u, centre, alpha, None, deadline)
            alpha = bundle.feasible(sol.alpha)
            x = centre - bundle.rmatvec(alpha) / u
            new_lb, new_ub = x < lb, x > ub
            if not (new_lb.any() or new_ub.any()):
                break
            at_lb, at_ub = new_lb, new_ub
            continue
        if A is None:
            rows = bundle.rows()
            A = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        x_fixed = np.where(at_lb, lb, ub)[~free]
        offsets = bundle.b + A[:, ~free] @ x_fixed
        if free.any():
            Af = A[:, free]
            sub = _DensePlanes(np.ascontiguousarray(Af), offsets, Af @ Af.T)
            sol, _ = _prox_master(sub, _SMO, 0.0, u, centre[free], alpha, None, deadline)
            alpha = bundle.feasible(sol.alpha)
        else:   # every coordinate at a bound: the highest plane there
            alpha = np.zeros(n)
            alpha[int(np.argmax(offsets))] = 1.0
        x = centre - (A.T @ alpha) / u
        new_lb = (free & (x < lb)) | (at_lb & (x <= lb))
        new_ub = (free & (x > ub)) | (at_ub & (x >= ub))
        if np.array_equal(new_lb, at_lb) and np.array_equal(new_ub, at_ub):
            break
        at_lb, at_ub = new_lb, new_ub
    return alpha, np.clip(x, lb, ub)


#: the trust-region master with rows runs the dense active set (:func:`_rows_prox_master`) up
#: to this many variables (a dense n x d copy of the planes and an SVD of the active rows per
#: round); HiGHS's QP (:func:`~nsopt.solvers._polyhedral.rows_prox_master`) above it
DENSE_ROWS_MAX_DIM = 2000


def _one_row_per_equality(A_ub, b_ub, n_eq: int):
    """``(A, b, m_ub)``: the rows with each equality pair of the last ``2 n_eq`` rows kept
    once (its ``A_eq x <= b_eq`` half), the first ``m_ub`` rows being the inequalities."""
    m_ub = A_ub.shape[0] - 2 * n_eq
    if not n_eq:
        return A_ub, b_ub, m_ub
    return A_ub[: m_ub + n_eq], b_ub[: m_ub + n_eq], m_ub


class RowSet(NamedTuple):
    """The active set of :func:`_rows_prox_master`: coordinates at their lower and upper
    bounds, and the rows held as equalities (boolean masks); the next solve starts from it."""

    at_lb: np.ndarray
    at_ub: np.ndarray
    active: np.ndarray


def _rows_prox_master(bundle, master, u, centre, lb, ub, A_ub, b_ub, warm=None, start=None,
                      deadline=None, max_rounds=40, n_eq=0):
    r"""The proximal master over the box and the rows,

    .. math:: \min_{lb \le x \le ub,\ A_{ub}x \le b_{ub}} \max_i \langle a_i, x\rangle + b_i
              + \tfrac u2\|x - c\|^2,

    by an active set on the box's coordinates *and* the rows, each subproblem solved exactly
    by the simplex QP backend (as :func:`_box_prox_master` does for the box alone).

    With coordinates ``B`` fixed at a side and the rows ``W`` held as equalities, the free
    coordinates are :math:`x_F = x_p + N z`, :math:`x_p` the least-norm solution of
    :math:`R_{WF} x_F = r_W - R_{WB} x_B` and :math:`N` an orthonormal basis of the null space
    of :math:`R_{WF}` (one SVD). Since :math:`N^T x_p = 0`, :math:`\|x_F - c_F\|^2 = \|z -
    N^T(c_F - x_p)\|^2` + const: the subproblem is the unconstrained proximal master in
    :math:`z` with slopes :math:`N^T a_{iF}` (:func:`_prox_master`), whose plane multipliers
    :math:`\alpha` give :math:`x`; the rows' multipliers solve the stationarity :math:`R_{WF}^T y
    = -(A_F^T\alpha + u(x_F - c_F))` (least squares; the right-hand side lies in the range by
    construction). Then, as a primal-dual active-set step: free coordinates outside the box
    are fixed, fixed ones whose unclipped minimiser :math:`c - (A^T\alpha + A_{ub}^T y)/u`
    points inside are freed, the most violated row joins ``W`` (when its normal is independent
    of ``W``'s), and otherwise the row of most negative :math:`y` leaves. When nothing changes
    the KKT conditions hold: ``(x, alpha, y)`` is the saddle point.

    Returns ``(alpha, y, x, RowSet)`` (``alpha`` feasible, ``y >= 0``, ``x`` in the box and
    within :data:`~._region.ROW_TOLERANCE` of the rows), or None when the rounds run out,
    the held rows turn dependent or inconsistent, or the answer misses a row: the caller then
    asks HiGHS (:func:`~nsopt.solvers._polyhedral.rows_prox_master`). ``start``: a
    :class:`RowSet` to begin from (the last solve's), ``warm``: plane multipliers.

    ``n_eq``: the last ``2 n_eq`` rows of ``A_ub`` are equality pairs :math:`E x \le e`,
    :math:`-E x \le -e` (:func:`~nsopt.solvers._region.constraint_rows`' layout). Each pair is
    one row of ``W`` from the start and never leaves it; its multiplier may take either sign
    and is returned as the pair's :math:`(\max(y, 0), \max(-y, 0))`."""
    rows = bundle.rows()
    A = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
    n, d = A.shape
    A_ub, b_ub, m_ub = _one_row_per_equality(A_ub, b_ub, n_eq)
    m = A_ub.shape[0]                           # the inequalities, then one row per equality
    is_eq = np.arange(m) >= m_ub
    c = np.asarray(centre, dtype=np.float64)
    if start is not None and start.active.size == m and start.at_lb.size == d:
        at_lb, at_ub, act = start.at_lb.copy(), start.at_ub.copy(), start.active.copy()
    else:
        at_lb, at_ub, act = (np.zeros(d, dtype=bool), np.zeros(d, dtype=bool),
                             is_eq.copy())
    alpha = warm if warm is not None and np.size(warm) == n else None
    row_scale = 1.0 + np.abs(b_ub)
    for _ in range(max_rounds):
        free = ~(at_lb | at_ub)
        x = np.where(at_lb, lb, ub)
        x[free] = 0.0
        F = np.flatnonzero(free)
        AF = A[:, F]
        offsets = bundle.b + A @ x              # the fixed coordinates' share (x_F = 0 here)
        W = np.flatnonzero(act)
        cF = c[F]
        if W.size:
            Rw = A_ub[np.ix_(W, F)]
            rw = b_ub[W] - A_ub[W] @ x
            if F.size == 0:
                return None
            Uw, sv, Vt = np.linalg.svd(Rw, full_matrices=True)
            rank = int(np.sum(sv > 1e-10 * max(float(sv[0]), 1e-300)))
            if rank < W.size:                   # dependent held rows: HiGHS decides
                return None
            xp = Vt[:rank].T @ ((Uw[:, :rank].T @ rw) / sv[:rank])
            if np.any(np.abs(Rw @ xp - rw) > 1e-9 * (1.0 + np.abs(rw))):
                return None
            N = Vt[rank:].T
        else:
            xp, N, Uw, sv, Vt, rank = np.zeros(F.size), None, None, None, None, 0
        if F.size - rank > 0:
            B = AF @ N if N is not None else AF
            cz = N.T @ (cF - xp) if N is not None else cF
            sub = _DensePlanes(np.ascontiguousarray(B), offsets + AF @ xp, B @ B.T)
            sol, _ = _prox_master(sub, _SMO, 0.0, u, cz, alpha, None, deadline)
            alpha = bundle.feasible(sol.alpha)
            z = cz - (B.T @ alpha) / u
            xF = xp + (N @ z if N is not None else z)
        else:                                   # no freedom left: the highest plane there
            xF = xp
            alpha = np.zeros(n)
            alpha[int(np.argmax(offsets + AF @ xp))] = 1.0
        x[F] = xF
        y = np.zeros(m)
        if W.size:
            g = AF.T @ alpha + u * (xF - cF)    # in the range of Rw^T: y from it
            y[W] = -(Uw[:, :rank] @ ((Vt[:rank] @ g) / sv[:rank]))
        grad = A.T @ alpha + A_ub.T @ y         # the Lagrangian's slope; x' its box-free minimiser
        x_free = c - grad / u
        new_lb = (free & (x < lb)) | (at_lb & (x_free <= lb))
        new_ub = (free & (x > ub)) | (at_ub & (x_free >= ub))
        xc = np.clip(x, lb, ub)
        excess = (A_ub @ xc - b_ub) / (row_scale + np.abs(A_ub) @ np.abs(xc))
        excess[act] = -np.inf
        new_act = act.copy()
        k = int(np.argmax(excess)) if m else -1
        changed_box = not (np.array_equal(new_lb, at_lb) and np.array_equal(new_ub, at_ub))
        y_ub = np.where(is_eq, np.inf, y)           # an equality's sign is free: never dropped
        if m and excess[k] > 1e-13:     # relative to the row's terms: not rounding
            new_act[k] = True
        elif (not changed_box and W.size > n_eq
              and y_ub.min() < -1e-12 * (1.0 + float(np.abs(y).max()))):
            new_act[int(np.argmin(y_ub))] = False
        if not changed_box and np.array_equal(new_act, act):
            x = np.clip(x, lb, ub)
            ex = A_ub @ x - b_ub
            ex[is_eq] = np.abs(ex[is_eq])
            if np.any(ex > ROW_TOLERANCE * (1.0 + np.abs(b_ub) + np.abs(A_ub) @ np.abs(x))):
                return None
            y = np.concatenate((np.maximum(y[:m_ub], 0.0), np.maximum(y[m_ub:], 0.0),
                                np.maximum(-y[m_ub:], 0.0)))
            return alpha, y, x, RowSet(at_lb, at_ub, act)
        at_lb, at_ub, act = new_lb, new_ub, new_act
    return None


_VARIANT = Option("auto", Options(("auto", "proximal", "trust-region")),
                  doc="which proximal bundle method (auto: from the problem)")


@register
class ProximalBundle(Solver):
    """Proximal bundle methods: ``variant="auto"`` (default), ``"proximal"`` or ``"trust-region"``.

    ``ProximalBundle(variant=..., **options)`` returns a :class:`ProxBMRM` or a
    :class:`TrustRegionBundle`; see those classes for the options of each variant. With
    ``"auto"`` the variant is chosen from the problem at solve time: proximal BMRM on a
    ``RegularizedRisk`` with the L2 regularizer, the trust-region bundle otherwise, so
    ``method="proximal-bundle"`` solves every problem that ``methods_supporting`` says it can.
    """

    name = "proximal-bundle"

    def __new__(cls, variant: str = "auto", **options):
        if cls is ProximalBundle:
            variant = _VARIANT.validate(variant, "ProximalBundle", "variant")
            cls = {"auto": _AutoProximalBundle, "proximal": ProxBMRM,
                   "trust-region": TrustRegionBundle}[variant]
        return super().__new__(cls)

    def __init__(self, variant: str = "auto", **options):
        super().__init__(**options)
        self.config["variant"] = variant

    @classmethod
    def unsupported_reason(cls, problem):
        # the registry entry: some variant handles any oracle
        return TrustRegionBundle.unsupported_reason(problem)


# ----------------------------------------------------------------------------------------
class ProxBMRM(ProximalBundle):
    r"""Proximal BMRM of Uřičář & Franc, with multiple cutting-plane models.

    .. math:: w_{t+1} = \arg\min_w \tfrac\lambda2\|w\|^2 + \sum_{p=1}^P R_{t,p}(w)
              + \alpha_t \|w - w_t\|^2

    The prox weight :math:`\alpha_t` is kept while the objective decreases by at least
    :math:`\gamma`; otherwise it is re-tuned to the smallest :math:`\alpha \in \{0\} \cup
    \{\lambda 2^k\}` whose step stays within :math:`K` (``max_step``) of :math:`w_t`, and
    :math:`\gamma` is reset to :math:`J(w_{t+1})/T - J_t(w^0_{t+1})/(T(1-\epsilon))` with
    :math:`T` = ``retune_every`` ([UF12]_ Alg. 2, eq. 11).

    Parameters
    ----------
    n_models : int, default 1
        ``P``: one cutting-plane model per contiguous group of examples ([UF12]_ Sec. 3.3,
        P-BMRM): the model :math:`\sum_p \max_i` is finer than :math:`\max_i \sum_p` for
        the same points, the master dual is over a product of P simplices, and the memory is
        P times larger. Needs a loss with ``group_value_and_subgradients``: scalar, vector and
        structured losses split their examples, :class:`~nsopt.losses.NDCG` its queries (P at
        most the number of queries); one oracle call still gives all P planes.
    max_step : float > 0 or None
        :math:`K`, the step bound of the re-tuning; None: ``0.01 ||w_1||``, or 0.4 when
        ``w_1 = 0`` (SHOGUN's rule). Formerly ``K`` (deprecated alias).
    retune_every : int >= 1, default 100
        :math:`T`: the decrease threshold :math:`\gamma` asks for a :math:`1/T` share of the
        objective per iteration, so after about ``retune_every`` iterations without re-tuning
        the decrease rule forces one. Formerly ``T`` (deprecated alias).
    start : {"zeros", "sgd"}, default "zeros"
        Starting point when ``x0`` is not given: the regularizer's minimiser, or the best
        of ``sgd_passes`` passes of mini-batch SGD ([UF12]_ Sec. 3.2). Formerly ``init``
        (deprecated alias).
    sgd_passes : int >= 1, default 10
        Passes of SGD for ``start="sgd"``.
    alpha_max : float > 0, default 2**40
        The largest prox weight :math:`\alpha` the re-tuning's doubling tries.
    inner : {"auto", "qp", "osqp", "smooth"}, default "auto"
        Backend of both master problems (the prox one and the :math:`\alpha = 0` one of the
        certificate), which are L2 quadratic programs whatever the backend: ``"auto"`` and
        ``"qp"`` are :class:`~nsopt.inner.QPSimplex`, ``"osqp"`` OSQP, ``"smooth"`` projected
        FISTA (see :mod:`nsopt.inner`).
    inner_rtol, remove_inactive, max_planes, planes
        As in :class:`~nsopt.solvers.BMRM` (``inner_rtol`` applies to the certificate's
        master problem; the prox master is solved to the backend's default accuracy).

    Notes
    -----
    Variant chosen: the one-oracle-call-per-iteration variant of SHOGUN's ``libppbm``: every
    iteration takes the step and evaluates it; the decrease test decides whether the NEXT
    iteration re-tunes :math:`\alpha`. The paper's literal Alg. 2 evaluates a rejected
    candidate and the re-tuned point in one iteration (two oracle calls); with an oracle that
    dominates the cost, one call per iteration is the better trade, and every evaluated point
    adds a valid plane either way. Unlike SHOGUN, :math:`J` in the decrease test is the true
    objective (no prox term).

    Scaling: the paper's grid :math:`\alpha \in \{0, 1, 2, 4, \dots\}` assumes its sum-loss
    scaling (:math:`\lambda \ge 1`); with nsopt's mean loss (:math:`\lambda` = the paper's
    :math:`\lambda / m`) a fixed :math:`\alpha \ge 1` would swamp :math:`\lambda` and freeze
    the iterates, so the grid is :math:`\{0\} \cup \{\lambda 2^k, k \ge -10\}`, searched by
    doubling from the previous value, then halving while the step stays within ``max_step``
    (SHOGUN's search).

    Certificate: the :math:`\alpha = 0` master problem (plain BMRM over the same planes) is
    solved every iteration; its dual value is a valid lower bound (source ``"bundle-dual"``).
    The prox master's value is never used as a bound.

    An unregularized intercept (``RegularizedRisk(..., fit_intercept=True)``, :math:`x = (w,
    b)`). The step is the prox step in a per-coordinate metric,

    .. math:: x_{t+1} = \arg\min_{w, b}\ \tfrac\lambda2\|w\|^2 + \sum_p R_{t,p}(w, b)
              + \alpha_t\|w - w_t\|^2 + \alpha_t\|b - b_t\|^2 ,

    weight :math:`\lambda + 2\alpha_t` on the coefficients and :math:`2\alpha_t` (the prox
    term alone) on the intercepts. Rescaling the intercepts, :math:`b - b_t = \sigma\beta`
    with :math:`\sigma^2 = (\lambda + 2\alpha_t)/(2\alpha_t)`, makes it the plain L2 master
    problem with weight :math:`\lambda + 2\alpha_t` over slopes :math:`(a_{i,w}, \sigma
    a_{i,b})`, solved by the same backend (:func:`_prox_master`); its dual is

    .. math:: \max_{\beta\in\Delta}\ \sum_i\beta_i(b_i + \langle a_i, s\rangle)
              - \tfrac{1}{2(\lambda + 2\alpha_t)}\|A_w^T\beta\|^2
              - \tfrac{1}{4\alpha_t}\|A_b^T\beta\|^2 ,

    and :math:`w = s_w - A_w^T\beta/(\lambda + 2\alpha_t)`, :math:`b = b_t - A_b^T\beta /
    (2\alpha_t)`. The prox weight keeps the intercept bounded (no box is needed in the step),
    and the grid of :math:`\alpha` is unchanged: its floor :math:`\lambda 2^{-10}` is positive.
    The :math:`\alpha = 0` candidate is the BMRM step, the minimiser of the certificate's
    master problem. That master (the certificate) is the intercept master of the BMRM family
    (:class:`~nsopt.inner.InterceptQP`): the model minimised over the proven box
    :math:`\|b\|_\infty \le B` (:meth:`~nsopt.RegularizedRisk.intercept_bound`), whose dual
    :math:`\bar b - \lambda\Omega^*(-\bar a_w/\lambda) - B\|\bar a_b\|_1` bounds :math:`J^*`
    and is what :meth:`~nsopt.Certificate.check` recomputes. Problems without a finite
    :math:`B` are refused (use ``variant="trust-region"``); ``inner`` then selects the
    prox master's backend only, and ``start="sgd"`` is not available.

    ``Result.info``: ``n_planes``, ``n_tunes`` (re-tunings of alpha), ``alpha`` (final).

    References
    ----------
    .. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
       CVWW 2012. Algorithm 2, eqs. (11)-(13); Sec. 3.2-3.3.
    """

    requires = ("regularized_risk",)
    self_certifying = True
    history_fields = ("n_planes", "alpha")
    options = {
        **PLANE_OPTIONS,
        # both master problems (the prox one and the alpha = 0 one) are L2 quadratic programs
        "inner": PLANE_OPTIONS["inner"].replace(
            constraints=(Options(("auto", "qp", "osqp", "smooth")),),
            doc="backend of the (L2) master problems"),
        "n_models": Option(1, Interval(Integral, 1, None, closed="left"),
                           doc="cutting-plane models, one per group of examples (P-BMRM)"),
        "max_step": Option(None, NoneOr(Interval(Real, 0, None, closed="neither")),
                           doc="step bound K (None: 0.01 ||w_1||, or 0.4 when w_1 = 0)",
                           renamed_from="K"),
        "retune_every": Option(100, Interval(Integral, 1, None, closed="left"),
                               doc="T: iterations after which the decrease rule forces a re-tune",
                               renamed_from="T"),
        "start": Option("zeros", Options(("zeros", "sgd")),
                        doc="start without x0: the regularizer's minimiser or SGD",
                        renamed_from="init"),
        "sgd_passes": Option(10, Interval(Integral, 1, None, closed="left"),
                             doc="SGD passes for the sgd start"),
        "alpha_max": Option(2.0 ** 40, Interval(Real, 0, None, closed="neither"),
                            doc="largest prox weight alpha the re-tuning tries"),
    }

    class State(NamedTuple):
        w: np.ndarray              # w_t: the prox centre, the last evaluated point
        fun: float                 # J(w_t)
        fun_best: float
        lower_bound: float         # alpha = 0 master dual value
        a_bar: np.ndarray
        b_bar: float
        evidence: object           # proof of lower_bound (nsopt.certificate.Evidence or None)
        alpha: float               # prox weight alpha_t (the paper's; prox term alpha ||w - w_t||^2)
        gamma: float               # decrease threshold
        retune: bool               # re-tune alpha at this iteration
        beta0: np.ndarray          # multipliers of the alpha = 0 master (warm start)
        beta: np.ndarray | None    # multipliers of the prox master (warm start)
        K: float
        bundle: PlaneBundle
        master: object
        n_planes: int
        n_tunes: int
        prox_master: object = None        # backend of the prox master (L2 in scaled coordinates)
        w_master: np.ndarray | None = None  # the alpha = 0 master's minimiser (intercepts only)

    @classmethod
    def unsupported_reason(cls, problem):
        if not isinstance(problem, RegularizedRisk):
            return ("proximal BMRM needs a RegularizedRisk(loss, L2(), lam); for any other "
                    "convex function use ProximalBundle(variant='trust-region')")
        if not problem.base_reg.self_conjugate:
            what = " with fit_intercept=True" if problem.fit_intercept else ""
            return (f"proximal BMRM{what} needs the L2 regularizer, got "
                    f"{type(problem.base_reg).__name__}; use variant='trust-region', or method "
                    "'bmrm'")
        if problem.fit_intercept and not math.isfinite(problem.intercept_bound()):
            return ("proximal BMRM with fit_intercept=True certifies through the intercept "
                    "master problem, which needs a proven bound on the optimal intercept, and "
                    f"none is known for {type(problem.base_loss).__name__} "
                    "(RegularizedRisk.intercept_bound() is inf); use "
                    "ProximalBundle(variant='trust-region') (the intercept a free coordinate), "
                    "'subbfgs' or 'sublbfgs'")
        return None

    def init(self, problem, x0):
        k = _n_intercepts(problem)
        if self.start == "sgd" and not np.any(x0):
            if k:
                raise ValueError("start='sgd' does not take fit_intercept=True (the SGD start "
                                 "regularizes every coordinate); use start='zeros' or pass x0")
            x0 = sgd_start(problem, passes=self.sgd_passes)
        bundle = new_bundle(problem, planes=self.planes, n_models=self.n_models)
        norm = float(np.linalg.norm(x0))
        K = self.max_step if self.max_step is not None else (0.01 * norm if norm > 0 else 0.4)
        ev, groups = self._evaluate(problem, x0)
        if k:   # the certificate's master carries the intercept box; the prox master is L2
            master, prox_master = master_solver(problem, "auto"), select(_L2, self.inner)
        else:
            master = prox_master = master_solver(problem, self.inner)
        m = add_and_solve(problem, bundle, np.zeros(bundle.n), ev, master,
                          outer_gap=math.inf, inner_rtol=self.inner_rtol, groups=groups)
        return self.State(w=x0, fun=ev.fun, fun_best=ev.fun, lower_bound=m.dual_value,
                          a_bar=m.a_bar, b_bar=m.b_bar, evidence=m.evidence, alpha=0.0,
                          gamma=math.inf, retune=True,
                          beta0=m.alpha, beta=None, K=K, bundle=bundle, master=master,
                          n_planes=bundle.n, n_tunes=0, prox_master=prox_master,
                          w_master=m.w if k else None)

    def _evaluate(self, problem, w):
        """One oracle call; with ``n_models > 1`` also the partial risks of the groups."""
        if self.n_models == 1:
            return problem.evaluate(w), None
        ev, values, subgradients = problem.evaluate_groups(w, self.n_models)
        return ev, (values, subgradients)

    def _prox(self, problem, s, alpha, warm):
        return _prox_master(s.bundle, s.prox_master, problem.lam, 2.0 * alpha, s.w, warm, None,
                            problem.deadline, n_intercepts=_n_intercepts(problem))

    def _tune(self, problem, s, alpha):
        r"""The re-tuning's search ([UF12]_ Alg. 2, l. 7, SHOGUN's order): from the previous
        :math:`\alpha` (at least the grid's floor :math:`\lambda 2^{-10}`), double until the prox
        step stays within ``K`` of the centre (or :math:`\alpha` reaches ``alpha_max``), else
        halve while it still does; ``(alpha, sol, w)`` of the value taken.

        After a doubling nothing is halved: :math:`\alpha/2` is the candidate just rejected
        (the search before solved it again, warm-started from :math:`\alpha`'s multipliers,
        and rejected it again: one master solve per such re-tune, the same iterates).
        """
        lam, c, K = problem.lam, s.w, s.K
        floor = lam * 2.0 ** -10  # the smallest nonzero alpha of the scaled grid
        alpha = max(alpha, floor)
        sol, w_new = self._prox(problem, s, alpha, None)
        if distance(w_new, c) > K:
            while alpha < self.alpha_max:                                # double
                alpha *= 2.0
                w_new = None  # the rejected candidate is let go before the next is formed
                sol, w_new = self._prox(problem, s, alpha, sol.alpha)
                if distance(w_new, c) <= K:
                    break
            return alpha, sol, w_new
        while alpha > floor:                                             # halve while feasible
            sol2, w2 = self._prox(problem, s, alpha / 2.0, sol.alpha)
            if distance(w2, c) > K:
                break
            alpha, sol, w_new = alpha / 2.0, sol2, w2
            w2 = None
        return alpha, sol, w_new

    def step(self, problem, s):
        lam, c, K = problem.lam, s.w, s.K
        w0 = None
        if _n_intercepts(problem):
            # the alpha = 0 step is the master's own minimiser (over the intercept box)
            w0 = s.w_master
        elif s.beta0.size == s.bundle.n:  # -A^T beta0 / lam, in the buffer rmatvec returns
            w0 = s.bundle.rmatvec(s.beta0)
            w0 = np.divide(w0, -lam, out=w0)
        alpha, beta, tuned = s.alpha, s.beta, False
        if s.retune:                                                     # [UF12, Alg. 2, l. 7]
            tuned = True
            if w0 is not None and distance(w0, c) <= K:
                alpha, beta, w_new = 0.0, s.beta0, w0
            else:
                w0 = None  # not taken: let go before the candidates are formed
                alpha, sol, w_new = self._tune(problem, s, alpha)
                beta = sol.alpha
        elif alpha == 0.0:
            beta, w_new = s.beta0, w0
        else:
            warm = beta if beta is not None and beta.size == s.bundle.n else None
            sol, w_new = self._prox(problem, s, alpha, warm)             # l. 3
            beta = sol.alpha
        ev, groups = self._evaluate(problem, freeze(w_new))  # read-only: kept without a copy
        del w0, w_new
        fun_new, w_evaluated = ev.fun, ev.w
        fun_best = min(s.fun_best, fun_new)
        # add the plane(s) and re-solve the alpha = 0 master: the certificate (l. 10)
        n_before = s.bundle.n
        beta0, n_new = add_planes(s.bundle, s.beta0, ev, remove_inactive=self.remove_inactive,
                                  max_planes=self.max_planes, groups=groups)
        del ev, groups  # the bundle has the planes: their dense slopes are let go
        m = solve_master(problem, s.bundle, beta0, n_new, s.master,
                         outer_gap=fun_best - s.lower_bound, inner_rtol=self.inner_rtol)
        if beta is not None and beta.size != s.bundle.n:
            added = s.bundle.n - n_before
            beta = np.append(beta, np.zeros(added)) if beta.size == n_before and added > 0 else None
        gamma = s.gamma
        if tuned:                                                        # eq. (11)
            eps = self.rtol
            T = self.retune_every
            gamma = fun_new / T - m.dual_value / (T * (1.0 - eps))
        retune = (s.fun - fun_new) < gamma                               # l. 4
        return self.State(w=w_evaluated, fun=fun_new, fun_best=fun_best, lower_bound=m.dual_value,
                          a_bar=m.a_bar, b_bar=m.b_bar, evidence=m.evidence, alpha=alpha,
                          gamma=gamma, retune=retune,
                          beta0=m.alpha, beta=beta, K=K, bundle=s.bundle, master=s.master,
                          n_planes=s.bundle.n, n_tunes=s.n_tunes + int(tuned),
                          prox_master=s.prox_master,
                          w_master=m.w if _n_intercepts(problem) else None)

    def info(self, s):
        return {"n_planes": s.n_planes, "n_tunes": s.n_tunes, "alpha": s.alpha,
                "planes": bundle_planes(s.bundle)}


# ----------------------------------------------------------------------------------------
class TrustRegionBundle(ProximalBundle):
    r"""A classical proximal bundle method with serious and null steps, for any convex oracle.

    .. math:: x_{t+1} = \arg\min_x \max_{i \in B} f(x_i) + \langle g_i, x - x_i\rangle
              + \tfrac u2 \|x - \hat x\|^2

    The new point becomes the centre :math:`\hat x` (serious step) when
    :math:`f(x_{t+1}) \le f(\hat x) - m\,\delta` with :math:`\delta = f(\hat x) -
    \text{model}(x_{t+1})` the predicted decrease; otherwise it only adds a plane (null step).
    The step length :math:`\|x_{t+1} - \hat x\| = \|\hat g\|/u` is the trust region, set
    by Kiwiel's proximity control ([Kiw90]_, ``proximity="kiwiel"``, the default): with
    :math:`r` the actual decrease over the predicted one, :math:`u_{int} = 2u(1 - r)` (the
    weight of the quadratic interpolating :math:`f` along the step); after a serious step
    with :math:`r \ge 1/2` following another serious step :math:`u` becomes :math:`u_{int}`
    (after more than three serious steps in a row, at least :math:`u/2`), never below
    :math:`u/10`; after a null step, once more than three null steps came in a row and the new
    plane's linearization error at the centre exceeds both :math:`10\delta` and the variation
    estimate :math:`\epsilon_v` (the smallest :math:`\|\hat g\| + \hat\epsilon` seen since
    the last serious step), :math:`u` becomes :math:`u_{int}`, at most :math:`10u`.
    ``proximity="doubling"`` is the former rule: ``u`` halved after a serious step with
    :math:`r \ge 1/2`, doubled after a null step whose new plane is off by more than
    :math:`\delta` at the centre (Schramm & Zowe's BT-style control). Kiwiel's took 178
    oracle calls against 190 to a certified 1e-6 on the max of 500 affine pieces (d = 50),
    and reached 2.7e-4 against 8.6e-4 in 20 s on the synthetic hinge risk (d = 123).

    The master is solved in the dual by :class:`~nsopt.inner.QPSimplex` with its warm-started
    active-set phase (``active_set=True``: an updated Cholesky factor of the support's face,
    :math:`O(|B|^2)` per plane entering or leaving), which made the L1 fit (d = 100) 5-6x
    cheaper in CPU time to a certified 1e-8 (``docs/solvers.md``).

    Parameters
    ----------
    initial_step : float > 0, default 1.0
        Length of the first step (``u_0 = ||g_0|| / initial_step``). Formerly ``step0``
        (deprecated alias).
    descent : float in (0, 1), default 0.1
        ``m`` of the serious-step test.
    proximity : {"kiwiel", "doubling"}, default "kiwiel"
        The rule that updates the proximity weight ``u`` (above).
    bounds : pair (lb, ub) or scipy.optimize.Bounds, optional
        A box (scipy's convention, infinite sides allowed) that *constrains* the problem:
        the master problem carries it (:func:`_box_prox_master`, an active set on the
        coordinates over the simplex QP), every trial point lies in it, ``x0`` is projected
        onto it, and the certificate bounds :math:`\min_{box} f`.
    A_ub, b_ub : array (m, dim) and (m,), optional
        Rows :math:`A_{ub} x \le b_{ub}` constraining x with the box (linprog's names; the box
        may be omitted, then its sides are infinite): the master problem is then a QP over
        the box and the rows, solved by an active set on the coordinates and the rows over
        the simplex QP (:func:`_rows_prox_master`; HiGHS,
        :func:`~nsopt.solvers._polyhedral.rows_prox_master`, above ``DENSE_ROWS_MAX_DIM``
        variables or when the active set gives up), and every bound is the
        weak-duality one of the planes' and rows' multipliers (:mod:`nsopt.solvers._polyhedral`).
        A finite bound needs a finite box (or a reduced cost exactly zero on the infinite
        sides). A given ``x0`` violating a row is a ``ValueError`` naming it. ``A_eq, b_eq``:
        equalities, kept as pairs of rows (the active set holds each pair as one row
        throughout; the region certifier's LP takes them through HiGHS).
    radius, centre
        The common options (see :func:`nsopt.minimize`): a ball that holds a minimiser.
        With either region the aggregate plane gives the bound
        :math:`\bar b + \min_{C}\langle\hat g, y\rangle` and the loop's
        :class:`~nsopt.solvers._region.RegionCertifier` the model's minimum over it (an LP).
    minorants : bool, default True
        On a bare oracle that ``offers_minorants``, add its extra minorants at each trial
        point (:meth:`~nsopt.Oracle.minorants`) to the model beside the point's plane (new ones
        only, within ``max_planes``); the certificate records each as (point, row).
    max_planes : int or None, default None
        Bundle cap; when full, zero-multiplier planes go and old ones are aggregated (Kiwiel's
        aggregation keeps the convergence proof). None: ``max(50, 2 dim + 2)``. A polyhedral
        ``f`` needs ``dim + 1`` planes around a minimiser; a cap below that aggregates planes
        the model needs at every step (the former default 50 took 402 oracle calls to a
        certified 1e-6 on a max of 500 affine pieces in d = 50, against 236 with room for
        them).
    remove_inactive : int or None, default None
        As in :class:`~nsopt.solvers.BMRM`, but off by default: a plane of a polyhedral
        ``f`` idle for ten iterations is often one the model needs again near the minimiser
        (dropping them took 236 oracle calls where keeping them to the cap took 190, max of
        500 affine pieces, d = 50).

    Notes
    -----
    Certificate: the aggregate subgradient :math:`\hat g = \sum_i \beta_i g_i` and the
    linearization error :math:`\hat\epsilon = f(\hat x) - \sum_i \beta_i (f(x_i) + \langle g_i,
    \hat x - x_i\rangle) \ge 0` prove :math:`\hat g \in \partial_{\hat\epsilon} f(\hat x)`, i.e.
    :math:`f(x) \ge f(\hat x) + \langle\hat g, x - \hat x\rangle - \hat\epsilon` for all x. On a
    ``RegularizedRisk`` the shared plane certifier turns the oracle calls into a true gap. On
    any other oracle (source ``"eps-subgradient"``, evidence
    :class:`~nsopt.certificate.OraclePlanes`, which ``Certificate.check`` rebuilds through the
    oracle: one call per query point the aggregate plane references): with a region (``bounds``
    or ``radius``) the inequality over it gives a bound; a *flat* aggregate
    (:math:`\hat g = 0`) gives :math:`f \ge f(\hat x) - \hat\epsilon` everywhere, claimed only
    when the combination of the oracle's own subgradients is exactly zero (rational arithmetic)
    and no aggregated plane enters it (an aggregate's slope is that combination only up to
    rounding); ``problem.lower_bound`` is used when finite. The query points are kept for the
    evidence (one d-vector per point a plane, or an aggregate, still references). Without any
    of these there is no finite lower bound and the run stops on the stationarity
    test :math:`\delta = \hat\epsilon + \|\hat g\|^2/u \le \max(\text{atol}, \text{rtol}|f(\hat
    x)|)`, or when the next trial point is one already evaluated (no new information: the model
    cannot improve), with status ``stationary`` (not success): ``Result.subgradient_norm`` is
    :math:`\|\hat g\|` and ``Result.linearization_error`` is :math:`\hat\epsilon`.

    ``Result.info``: ``n_serious``, ``n_null``, ``eps_subgradient`` (:math:`\hat\epsilon`),
    ``aggregate_norm`` (:math:`\|\hat g\|`), ``stationary``.

    References
    ----------
    .. [SZ92] H. Schramm, J. Zowe. A version of the bundle idea for minimizing a nonsmooth
       function. SIAM J. Optim. 2(1), 1992.
    .. [Kiw90] K. C. Kiwiel. Proximity control in bundle methods for convex nondifferentiable
       minimization. Math. Programming 46, 1990.
    """

    requires = ()
    self_certifying = False
    certificate_source = "eps-subgradient"  # radius bound, or a flat aggregate plane
    history_fields = ("n_planes", "u", "serious")
    options = {
        "remove_inactive": PLANE_OPTIONS["remove_inactive"].replace(default=None),
        "max_planes": PLANE_OPTIONS["max_planes"].replace(
            doc="planes kept (None: max(50, 2 dim + 2), room for dim + 1 around a minimiser)"),
        "initial_step": Option(1.0, Interval(Real, 0, None, closed="neither"),
                               doc="length of the first step", renamed_from="step0"),
        "descent": Option(0.1, Interval(Real, 0, 1, closed="neither"),
                          doc="m of the serious-step test"),
        "proximity": Option("kiwiel", Options(("kiwiel", "doubling")),
                            doc="the rule that updates u (Kiwiel's, or halve/double)"),
        "bounds": Option(None, NoneOr(Satisfies(
            check_box, "a pair (lb, ub) of numbers or arrays with lb <= ub (infinite sides "
                       "allowed), or a scipy.optimize.Bounds")),
            doc="the box lb <= x <= ub: a constraint every query point keeps"),
        "minorants": Option(True, Boolean(), doc="add the oracle's extra minorants to the model"),
        **ROW_OPTIONS,
    }

    class State(NamedTuple):
        centre: np.ndarray         # x-hat, the stability centre
        fun_centre: float          # f(x-hat)
        x: np.ndarray              # the next trial point (master minimiser)
        queried: np.ndarray        # the last point evaluated (its plane is in the model)
        u: float                   # proximity weight (inverse trust radius)
        delta: float               # predicted decrease at x
        linearization_error: float  # of the aggregate g-hat at the centre
        subgradient_norm: float    # ||g-hat||
        lower_bound: float         # best proven so far (radius, flat plane, lower_bound) or -inf
        evidence: object           # its proof (OraclePlanes; None on a RegularizedRisk)
        stationary: bool           # stationarity test (used when no bound is known)
        beta: np.ndarray
        bundle: PlaneBundle
        master: object
        region: Region | None      # the box (a constraint) or the ball (a statement), or None
        serious: bool              # was the last step serious
        n_serious: int
        n_null: int
        n_kelley: int              # LP (Kelley) steps taken when the prox step repeated a point
        n_planes: int
        i_u: int = 0               # Kiwiel's counter: + serious steps, - null steps in a row
        eps_v: float = math.inf    # Kiwiel's variation estimate
        row_set: RowSet | None = None  # the rows master's last active set (with A_ub)
        n_extra: int = 0           # the oracle's minorants added with the last evaluation

    @classmethod
    def unsupported_reason(cls, problem):
        return None

    def init(self, problem, x0):
        # on a bare oracle the planes keep their query points: the evidence of the bound
        bundle = PlaneBundle(problem.dim, evidence="points" if bare_oracle(problem) else None)
        region = region_from_options(self.config, problem.dim)
        ev = problem.evaluate(x0)   # x0 is in the box: the loop projected it
        bundle.add_at(ev.w, ev.fun, ev.subgradient)
        gnorm = float(np.linalg.norm(ev.subgradient))
        u = max(gnorm, 1e-12) / self.initial_step
        s = self.State(centre=ev.w, fun_centre=ev.fun, x=ev.w, queried=ev.w, u=u, delta=math.inf,
                       linearization_error=0.0, subgradient_norm=gnorm, lower_bound=-math.inf,
                       evidence=None, stationary=False, beta=np.ones(1), bundle=bundle,
                       master=QPSimplex(active_set=True),
                       region=region, serious=True, n_serious=0, n_null=0, n_kelley=0,
                       n_planes=1)
        return self._trial(problem, s, s.u, s.beta)

    def _trial(self, problem, s, u, warm, converged_ok=True):
        """Solve the proximal master at the centre: the next trial point and the certificate."""
        bundle, region = s.bundle, s.region
        warm = warm if warm is not None and warm.size == bundle.n else None
        y = None                    # the rows' multipliers (with rows A_ub x <= b_ub)
        row_set = s.row_set
        if region is not None and region.A_ub is not None:
            out = None
            if bundle.dim <= DENSE_ROWS_MAX_DIM:
                out = _rows_prox_master(bundle, s.master, u, s.centre, region.lb, region.ub,
                                        region.A_ub, region.b_ub, warm, row_set,
                                        problem.deadline, n_eq=region.n_eq)
                if out is None and row_set is not None:     # a cold start, then HiGHS
                    out = _rows_prox_master(bundle, s.master, u, s.centre, region.lb,
                                            region.ub, region.A_ub, region.b_ub, warm, None,
                                            problem.deadline, n_eq=region.n_eq)
            if out is not None:
                beta, y, x, row_set = out
            else:
                out = rows_prox_master(bundle, u, s.centre, region.lb, region.ub, region.rows,
                                       region.n_eq)
                if out is None:
                    raise OracleNumericalError("proximal-bundle: HiGHS could not solve the "
                                               "master QP over the box and the rows", None,
                                               "the master QP")
                beta, y, x = out
                row_set = None
        elif region is not None and region.kind == "box":
            beta, x = _box_prox_master(bundle, s.master, u, s.centre, region.lb, region.ub, warm,
                                       problem.deadline)
        else:
            sol, x = _prox_master(bundle, s.master, 0.0, u, s.centre, warm, None, problem.deadline)
            beta = sol.alpha
        g_hat = bundle.rmatvec(beta)
        lin = float(beta @ (bundle.b + bundle.matvec(s.centre)))   # aggregate linearization at centre
        eps = max(s.fun_centre - lin, 0.0)
        gnorm = float(np.linalg.norm(g_hat))
        if region is not None and region.kind == "box":
            delta = max(s.fun_centre - bundle.model(x), 0.0)   # the decrease the model predicts
        else:
            delta = eps + gnorm ** 2 / u
        if bare_oracle(problem):
            lower, evidence = self._certify(problem, bundle, beta, gnorm, region, s.lower_bound,
                                            s.evidence, y)
        else:  # a RegularizedRisk: the plane certifier's evidence serves; this is not offered
            lower, evidence = problem.lower_bound, None
            if region is not None:
                lower = max(lower, region.plane_minimum(g_hat, lin - float(g_hat @ s.centre), y))
            elif gnorm == 0.0:
                lower = max(lower, lin)
        tol = max(self.atol, self.rtol * abs(s.fun_centre))
        return s._replace(x=freeze(x), u=u, delta=delta, linearization_error=eps,
                          subgradient_norm=gnorm, lower_bound=lower, evidence=evidence,
                          stationary=delta <= tol and not math.isfinite(lower),
                          beta=beta, n_planes=bundle.n, row_set=row_set)

    def _certify(self, problem, bundle, beta, gnorm, region, best=-math.inf, best_evidence=None,
                 y=None):
        """The best bound proven on a bare oracle, with its evidence: the oracle's
        ``lower_bound`` (no evidence here: the loop offers that floor for every method), the
        aggregate plane over the region (the box or the ball), or a flat aggregate
        plane (``gnorm``, the norm of the master's aggregate, is exactly 0) whose slope is
        exactly zero. The multipliers are made exactly feasible first. The evidence (a pass over
        the planes' recipes) is built only when the bound beats ``best``, the bound carried so
        far with ``best_evidence``, which is returned otherwise. ``y``: the multipliers of the
        region's rows ``A_ub x <= b_ub`` (weak duality, :func:`~._region.rows_bound`)."""
        d, stated = bundle.dim, problem.lower_bound
        lower, evidence = best, best_evidence
        if stated > lower:  # the value steers the stopping test; the loop certifies the floor
            lower, evidence = stated, None
        alpha = bundle.feasible(beta)
        a_bar, b_bar = bundle.combine(alpha)
        value = None if region is None else region.plane_minimum(a_bar, b_bar, y)
        if value is not None:
            proof = (planes_evidence(bundle, alpha, stated, (a_bar, b_bar), y,
                                     **region.evidence_fields()) if value > lower else None)
            if proof is not None:
                lower, evidence = value, proof.tagged()     # (x, j): a minorant row
        elif gnorm == 0.0 and b_bar > lower:
            index = np.flatnonzero(alpha)
            points = [bundle.query_point(i) for i in index]
            if all(p is not None for p in points):
                rows = bundle.rows()[index]
                rows = rows.toarray() if hasattr(rows, "toarray") else rows
                if zero_aggregate(alpha[index], rows):
                    lower, evidence = b_bar, OraclePlanes(
                        tuple(points), alpha[index], floor_value=stated,
                        plane=(np.zeros(d), b_bar)).tagged()
        return lower, evidence

    def step(self, problem, s):
        if s.stationary:
            return s
        if s.x is s.queried or np.array_equal(s.x, s.queried):
            # the trial point was evaluated before: its plane is in the model already, so the
            # next master problem would be the same one (the loop that never returned). With
            # a region, the model's minimiser over it (an LP, Kelley's step) is a point the
            # model is wrong at while the gap is open: evaluating there cuts the model
            x = self._kelley_point(problem, s)
            if x is None:
                return s._replace(stationary=True)
            s = s._replace(x=freeze(x), n_kelley=s.n_kelley + 1)
        ev = problem.evaluate(s.x)
        s = s._replace(queried=ev.w)
        bundle, u, beta = s.bundle, s.u, s.beta
        if self.remove_inactive is not None:
            beta = beta[bundle.drop(bundle.age >= self.remove_inactive)]
        cap = self.max_planes if self.max_planes is not None else max(50, 2 * bundle.dim + 2)
        need = 1 + s.n_extra        # room for this call's planes, as many as the last's
        if bundle.n + need > cap:
            beta = bundle.compress(beta, max(cap - need + 1, 3))
        bundle.add_at(ev.w, ev.fun, ev.subgradient)
        extra = 0
        if self.minorants and problem.offers_minorants and bare_oracle(problem):
            extra = add_oracle_minorants(problem, bundle, ev.w, cap - bundle.n)
        s = s._replace(n_extra=extra)
        beta = np.append(beta, np.zeros(1 + extra))
        decrease = s.fun_centre - ev.fun
        # error of the new plane at the centre: the model was far off there
        err = s.fun_centre - (ev.fun + float(ev.subgradient @ (s.centre - ev.w)))
        serious = decrease >= self.descent * s.delta
        if self.proximity == "kiwiel":
            u, i_u, eps_v = self._kiwiel(s, u, decrease, err, serious)
            s = s._replace(i_u=i_u, eps_v=eps_v)
        elif serious and decrease >= 0.5 * s.delta:
            u = max(u / 2.0, 1e-12)
        elif not serious and err > s.delta:
            u = min(2.0 * u, 1e12)
        if serious:                                                      # serious step
            s = s._replace(centre=ev.w, fun_centre=ev.fun, serious=True, n_serious=s.n_serious + 1)
        else:                                                            # null step
            s = s._replace(serious=False, n_null=s.n_null + 1)
        s = self._trial(problem, s, u, beta)
        bundle.update_ages(s.beta)
        return s

    @staticmethod
    def _kiwiel(s, u, decrease, err, serious):
        """Kiwiel's proximity control ([Kiw90]_ Sec. 2, procedure for updating u): ``(u,
        i_u, eps_v)`` after a step with actual ``decrease`` against the predicted ``s.delta``
        and the new plane's linearization error ``err`` at the centre."""
        delta = s.delta if math.isfinite(s.delta) and s.delta > 0 else max(decrease, 1e-300)
        ratio = decrease / delta
        u_int = 2.0 * u * (1.0 - ratio)        # the quadratic interpolating f along the step
        i_u, eps_v = s.i_u, s.eps_v
        if serious:
            new = u
            if ratio >= 0.5 and i_u > 0:
                new = u_int
            elif i_u > 3:
                new = u / 2.0
            new = max(new, u / 10.0, 1e-12)
            eps_v = max(eps_v, 2.0 * delta) if math.isfinite(eps_v) else 2.0 * delta
            i_u = 1 if new != u else max(i_u + 1, 1)
        else:
            eps_v = min(eps_v, s.subgradient_norm + s.linearization_error)
            new = u
            if err > max(eps_v, 10.0 * delta) and i_u < -3:
                new = u_int
            new = min(new, 10.0 * u, 1e12)
            i_u = -1 if new != u else min(i_u - 1, -1)
        return new, i_u, eps_v

    @staticmethod
    def _kelley_point(problem, s):
        """The minimiser of the model over the region (the box, or the box around the ball),
        or None without a region, when the LP fails, or when it is a point already evaluated."""
        if s.region is None:
            return None
        try:
            m = box_model_minimum(s.bundle, *s.region.enclosing_box(), problem.deadline,
                                  s.region.rows)
        except MasterLPError:
            return None
        if m is None or m.point is None or np.array_equal(m.point, s.queried):
            return None
        return m.point

    def info(self, s):
        return {"n_serious": s.n_serious, "n_null": s.n_null, "n_kelley": s.n_kelley,
                "eps_subgradient": s.linearization_error, "aggregate_norm": s.subgradient_norm,
                "stationary": bool(s.stationary),
                "n_planes": s.n_planes}


# ----------------------------------------------------------------------------------------
class _AutoProximalBundle(ProximalBundle):
    """``ProximalBundle(variant="auto")``: picks the variant from the problem in :meth:`run`
    (proximal BMRM where it applies, the trust-region bundle otherwise) and runs it with the
    options given; an option the chosen variant does not have is an error, never ignored."""

    options = {**TrustRegionBundle.options, **ProxBMRM.options}  # validation of either's
    _label = "ProximalBundle"

    def choose(self, problem) -> Solver:
        """The solver of the variant that fits ``problem``, configured with the given options."""
        proximal = (ProxBMRM.unsupported_reason(as_problem(problem)) is None
                    and self.config.get("bounds") is None    # a box: the trust-region variant
                    and self.config.get("A_ub") is None      # rows, too
                    and self.config.get("A_eq") is None)
        cls = ProxBMRM if proximal else TrustRegionBundle
        table = cls.option_table()
        foreign = sorted(set(self._options) - set(table))
        if foreign:
            variant = "proximal" if cls is ProxBMRM else "trust-region"
            raise TypeError(f"option(s) {foreign} do not apply to the {variant!r} variant that "
                            f"this problem takes; its options: {sorted(table)}")
        return cls(**self._options)

    def run(self, problem, x0=None, callback=None):
        return self.choose(problem).run(problem, x0, callback)



#: the registry entry's options: those of either variant (``nsopt.path`` reads "planes" here)
ProximalBundle.options = _AutoProximalBundle.options
