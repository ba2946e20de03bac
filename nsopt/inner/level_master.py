r"""Warm master problems of the level bundle method over a box: a hot-started LP and a
compiled projection.

Two subproblems recur at every iteration of the level method ([LNN95]_ Sec. 2) with planes
:math:`\langle a_i, x\rangle + b_i` and the box :math:`Q = \{lb \le x \le ub\}`:

* the model's minimum over the box, the LP :math:`\min t` s.t. :math:`\langle a_i, x\rangle -
  t \le -b_i`, :math:`x \in Q`: :class:`BoxModelLP` keeps one HiGHS model alive across
  iterations, adds the new plane as a row and deletes dropped ones, so the dual simplex
  restarts from the last optimal basis (a few pivots per iteration instead of a solve from
  scratch through :func:`scipy.optimize.linprog`); :class:`DenseBoxLP` solves the same LP
  by a compiled dense dual simplex in row form (a basis is ``d + 1`` active planes and box
  sides), warm from the last optimal basis, without HiGHS's fixed cost per solve (the level
  method's choice up to a few hundred variables);
* the projection of the last point onto the level set, the QP :math:`\min \tfrac12\|x -
  c\|^2` s.t. :math:`\langle a_i, x\rangle \le l - b_i`, :math:`x \in Q`:
  :func:`project_level_set`, the dual active-set method of Goldfarb and Idnani ([GI83]_) with
  the identity Hessian, compiled with numba. Starting from :math:`x = c`, it adds one violated
  constraint at a time (dropping those whose multiplier would turn negative), keeping the
  factorisation :math:`J^T N = [R; 0]` of the active normals :math:`N` with :math:`J`
  orthogonal; the number of steps is about the number of constraints active at the solution.

Neither answer is trusted for a bound: the level method turns the LP's multipliers into a
bound by the exact formula of :func:`nsopt.solvers._region.box_model_minimum`, and the
projection only chooses the next query point.

References
----------
.. [LNN95] C. Lemaréchal, A. Nemirovskii, Y. Nesterov. New variants of bundle methods.
   Math. Programming 69:111-147, 1995.
.. [GI83] D. Goldfarb, A. Idnani. A numerically stable dual method for solving strictly
   convex quadratic programs. Math. Programming 27:1-33, 1983.
"""
from __future__ import annotations

import importlib
import math

import numba
import numpy as np

from .._linalg import kernel_input
from . import _level_kernels as K

__all__ = ["BoxModelLP", "DenseBoxLP", "project_level_set", "highs_available"]


def _highs_class():
    """HiGHS's object model: the copy scipy ships (``scipy.optimize._highspy``, silent), else
    ``highspy``'s; None when neither imports."""
    for module, name in (("scipy.optimize._highspy._core", "_Highs"), ("highspy._core", "_Highs"),
                         ("highspy", "Highs")):
        try:
            return getattr(importlib.import_module(module), name)
        except Exception:   # noqa: BLE001 (absent, moved or broken: try the next)
            continue
    return None


def highs_available() -> bool:
    """True when a HiGHS object model is importable (then :class:`BoxModelLP` works)."""
    return _highs_class() is not None


class BoxModelLP:
    r"""The LP :math:`\min_{x \in Q, t} t` s.t. :math:`\langle a_i, x\rangle - t \le -b_i`,
    kept alive across iterations (HiGHS, dual simplex hot-started from the last basis).

    Rows mirror a :class:`~nsopt.bundle.PlaneBundle` in order: :meth:`add` appends a plane,
    :meth:`drop` deletes rows by a mask (the bundle's :meth:`~nsopt.bundle.PlaneBundle.drop`
    keeps the order of the rest, and so does HiGHS's ``deleteRows``).

    Parameters
    ----------
    lb, ub : ndarray
        The box (finite for the level method; infinite sides are passed to HiGHS as such).
    options : dict, optional
        Further HiGHS options (name -> value), set after the defaults above.
    cost : ndarray, optional
        A cost :math:`c` on ``x``: the LP becomes :math:`\min_{x \in Q, t}\ t + c^T x`
        (default 0). The L1 master problem (:class:`~nsopt.inner.lp.LPSimplex`) is this LP
        in ``x = (u, v) >= 0`` with :math:`c = \lambda 1` and rows :math:`[a, -a]`.
    """

    def __init__(self, lb: np.ndarray, ub: np.ndarray, options: dict | None = None, *,
                 cost: np.ndarray | None = None):
        cls = _highs_class()
        if cls is None:
            raise ImportError("BoxModelLP needs HiGHS (highspy, or the copy in scipy >= 1.13)")
        self.dim = d = int(lb.size)
        h = cls()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)          # a small LP: no worker threads to wake
        h.setOptionValue("parallel", "off")
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        for name, value in (options or {}).items():
            h.setOptionValue(name, value)
        self._inf = float(h.getInfinity())
        empty_i, empty_v = np.zeros(0, dtype=np.int32), np.zeros(0)
        cost = np.zeros(d) if cost is None else np.asarray(cost, dtype=np.float64).ravel()
        if cost.size != d:
            raise ValueError(f"cost must have the box's size {d}, got {cost.size}")
        for j in range(d):
            h.addCol(float(cost[j]), float(lb[j]), float(ub[j]), 0, empty_i, empty_v)
        h.addCol(1.0, -self._inf, self._inf, 0, empty_i, empty_v)
        self._h = h
        self._index = np.arange(d + 1, dtype=np.int32)
        self.n = 0

    def add(self, a: np.ndarray, b: float) -> None:
        """Append the row of the plane :math:`\\langle a, x\\rangle + b` (dense ``a``)."""
        a = np.asarray(a, dtype=np.float64).ravel()
        nz = np.flatnonzero(a).astype(np.int32)
        idx = np.append(nz, np.int32(self.dim))
        val = np.append(a[nz], -1.0)
        self._h.addRow(-self._inf, -float(b), idx.size, idx, val)
        self.n += 1

    def drop(self, mask: np.ndarray) -> None:
        """Delete the rows where ``mask`` is True."""
        rows = np.flatnonzero(np.asarray(mask, dtype=bool)[: self.n]).astype(np.int32)
        if rows.size:
            self._h.deleteRows(rows.size, rows)
            self.n -= rows.size

    def solve(self, deadline_seconds: float | None = None):
        """``(x, t, alpha)``: a minimiser, the LP value and the multipliers of the rows (>= 0,
        summing to about 1), or None when HiGHS does not report an optimum."""
        h = self._h
        # HiGHS's time limit is on its run clock, which adds up over the calls to run(): the
        # limit is that clock now plus the seconds left (measured: a limit of 0.05 s after
        # 0.49 s of earlier solves stopped the next solve at once); none without a deadline
        limit = math.inf
        if deadline_seconds is not None:
            limit = float(h.getRunTime()) + max(float(deadline_seconds), 1e-3)
        h.setOptionValue("time_limit", limit)
        h.run()
        status = h.modelStatusToString(h.getModelStatus())
        if status != "Optimal":
            return None
        sol = h.getSolution()
        col = np.asarray(sol.col_value, dtype=np.float64)
        alpha = -np.asarray(sol.row_dual, dtype=np.float64)
        if col.size != self.dim + 1 or alpha.size != self.n:
            return None
        return col[: self.dim].copy(), float(col[self.dim]), alpha

    @property
    def iterations(self) -> int:
        """Simplex iterations of the last :meth:`solve` (0 when HiGHS does not say)."""
        try:
            return int(self._h.getInfo().simplex_iteration_count)
        except Exception:   # noqa: BLE001 (an older object model without the field)
            return 0


class DenseBoxLP:
    r"""The LP of :class:`BoxModelLP`, :math:`\min_{x \in Q, t} t` s.t. :math:`\langle a_i,
    x\rangle - t \le -b_i`, by a compiled dense dual simplex in row form, warm from the last
    optimal basis (same methods: :meth:`add`, :meth:`drop`, :meth:`solve`).

    A basis is ``d + 1`` active constraints (planes and sides of the box) with their inverse
    normal matrix (``nsopt.inner._level_kernels``). A new plane leaves the last optimal
    basis dual feasible, so the next solve starts from it: a few pivots of
    :math:`O(d^2 + n d)` each, with no per-solve set-up (HiGHS spends about 1 ms a solve
    after a model change at d = 50, 200 rows; 18 ms at d = 123, where its dense rows cost
    about 0.3 ms a pivot). A dropped plane in the basis with a zero multiplier is replaced
    by a side of the box; with a positive one, or when the basis turns singular or loses
    dual feasibility, the next solve starts cold (one plane and the box sides it points to,
    dual feasible by construction). Meant for small ``d`` (a dense ``(d+1)^2`` inverse);
    the box must be finite.

    Only the multipliers leave this class as a bound, after the caller's repair
    (:meth:`~nsopt.bundle.PlaneBundle.feasible`) and exact valuation: its accuracy costs
    tightness, never validity.

    ``rows = (A_ub, b_ub)``: fixed rows :math:`A_{ub} x \le b_{ub}` too (normals
    :math:`(A_{ub,k}, 0)` in the same kernel, never in the cold basis); :meth:`solve` then
    returns ``(x, t, alpha, y)`` with their multipliers ``y``, as
    :class:`~nsopt.solvers._region.RowsModelLP` does. An empty set ends in None (the caller
    asks HiGHS).
    """

    def __init__(self, lb: np.ndarray, ub: np.ndarray, capacity: int = 64, rows=None):
        self.lb = np.ascontiguousarray(lb, dtype=np.float64).copy()
        self.ub = np.ascontiguousarray(ub, dtype=np.float64).copy()
        if self.lb.shape != self.ub.shape or not (np.all(np.isfinite(self.lb))
                                                  and np.all(np.isfinite(self.ub))):
            raise ValueError("DenseBoxLP needs a finite box (lb, ub) of one length, got "
                             f"lb {self.lb!r}, ub {self.ub!r}")
        self.dim = d = int(self.lb.size)
        R = np.zeros((0, d)) if rows is None else np.asarray(rows[0], dtype=np.float64)
        self._m = m = R.shape[0]           # fixed rows first, then the planes
        self._rows = rows is not None
        self._A = np.zeros((m + max(int(capacity), 1), d))
        self._b = np.zeros(self._A.shape[0])
        self._tc = np.full(self._A.shape[0], -1.0)
        if m:
            self._A[:m] = R
            self._b[:m] = -np.asarray(rows[1], dtype=np.float64)
            self._tc[:m] = 0.0
        self._W = np.zeros(d + 1, dtype=np.int64)
        self._Ginv = np.zeros((d + 1, d + 1))
        self._warm = False          # W is a dual-feasible basis with Ginv its inverse
        self._refactor = False      # W changed outside the kernel: recompute Ginv
        self.n = 0
        self.iterations = 0         # pivots of the last solve

    def add(self, a: np.ndarray, b: float) -> None:
        """Append the plane :math:`\\langle a, x\\rangle + b` (dense ``a``)."""
        k = self._m + self.n
        if k == self._A.shape[0]:
            grow = 2 * self._A.shape[0]
            self._A = np.concatenate([self._A, np.zeros((grow - k, self.dim))])
            self._b = np.concatenate([self._b, np.zeros(grow - k)])
            self._tc = np.concatenate([self._tc, np.full(grow - k, -1.0)])
        self._A[k] = np.asarray(a, dtype=np.float64).ravel()
        self._b[k] = float(b)
        self.n += 1

    def add_many(self, A: np.ndarray, b: np.ndarray) -> None:
        """Append the k planes :math:`\\langle A_j, x\\rangle + b_j` (dense ``A``, k x d): the
        same rows as k calls of :meth:`add` in order, in one copy."""
        A = np.asarray(A, dtype=np.float64).reshape(-1, self.dim)
        b = np.asarray(b, dtype=np.float64).reshape(-1)
        k = b.shape[0]
        if A.shape[0] != k:
            raise ValueError(f"A must have one row per offset in b ({k}), got {A.shape[0]}")
        start = self._m + self.n
        while start + k > self._A.shape[0]:
            grow = 2 * self._A.shape[0]
            size = self._A.shape[0]
            self._A = np.concatenate([self._A, np.zeros((grow - size, self.dim))])
            self._b = np.concatenate([self._b, np.zeros(grow - size)])
            self._tc = np.concatenate([self._tc, np.full(grow - size, -1.0)])
        self._A[start: start + k] = A
        self._b[start: start + k] = b
        self.n += k

    def drop(self, mask: np.ndarray) -> None:
        """Delete the planes where ``mask`` is True (the others keep their order)."""
        mask = np.asarray(mask, dtype=bool)[: self.n]
        if not mask.any():
            return
        keep = np.concatenate([np.ones(self._m, dtype=bool), ~mask])
        total = self._m + self.n
        m = int(keep.sum())
        self._A[:m] = self._A[:total][keep]
        self._b[:m] = self._b[:total][keep]
        new_index = np.cumsum(keep) - 1
        self.n = m - self._m
        if not self._warm:
            return
        d = self.dim
        W, Ginv = self._W, self._Ginv
        in_box = set(int(c) for c in W if c < 0)
        for k in range(d + 1):
            c = int(W[k])
            if c < 0:
                continue
            if keep[c]:
                W[k] = new_index[c]
                continue
            # a dropped plane of the basis: only a zero multiplier keeps the basis dual
            # feasible when a box side with the same multiplier 0 takes its place
            if -Ginv[d, k] > 1e-12:
                self._warm = False
                return
            free = [j for j in range(d) if -(j + 1) not in in_box and -(d + j + 1) not in in_box]
            if not free:
                self._warm = False
                return
            j = max(free, key=lambda j: abs(Ginv[j, k]))
            if not abs(Ginv[j, k]) > 1e-9 * (np.abs(Ginv[:, k]).max() + 1e-300):
                self._warm = False
                return
            W[k] = -(j + 1)
            in_box.add(-(j + 1))
            self._refactor = True

    def _run(self, cold: bool):
        n, d = self._m + self.n, self.dim
        if cold:
            K.cold_basis(self._A, self._tc, self._b, n, self.lb, self.ub, self._W)
        try:
            status, z, pivots = K.dual_simplex(self._A[:n], self._tc[:n], self._b[:n], n,
                                               self.lb, self.ub,
                                               self._W, self._Ginv, cold or self._refactor,
                                               1e-11, 20 * (n + d + 1))
        except np.linalg.LinAlgError:       # a basis singular to rounding (LAPACK's LU)
            self._refactor = False
            return None
        self.iterations += int(pivots)
        self._refactor = False
        if status != 0:
            return None
        lam = -self._Ginv[d]
        if lam.min() < -1e-9 * max(1.0, lam.max()):
            return None             # a basis that is not dual feasible: not an optimum
        return z, lam

    def solve(self, deadline_seconds: float | None = None):
        """``(x, t, alpha)``: a minimiser, the LP value and the multipliers of the planes
        (>= 0, summing to about 1), or None (no plane, or the method failed twice: warm, then
        cold). ``deadline_seconds`` is accepted for :class:`BoxModelLP`'s signature; a solve
        is capped by pivots, not time."""
        if self.n == 0:
            return None
        self.iterations = 0
        out = self._run(cold=False) if self._warm else None
        if out is None:
            out = self._run(cold=True)
        self._warm = out is not None
        if out is None:
            return None
        z, lam = out
        d, m = self.dim, self._m
        alpha = np.zeros(self.n)
        planes = self._W >= m
        alpha[self._W[planes] - m] = np.maximum(lam[planes], 0.0)
        x = np.clip(z[:d], self.lb, self.ub)
        if not self._rows:
            return x, float(z[d]), alpha
        y = np.zeros(m)
        rows = (self._W >= 0) & (self._W < m)
        y[self._W[rows]] = np.maximum(lam[rows], 0.0)
        return x, float(z[d]), alpha, y


# --- the projection: Goldfarb-Idnani with the identity Hessian ---------------------------
@numba.njit(cache=True)
def _slack(A, r, lb, ub, i, x):
    """s_i(x) >= 0 is constraint i: planes r_i - <a_i, x>, then ub - x_j, then x_j - lb."""
    m, d = A.shape
    if i < m:
        s = r[i]
        for k in range(d):
            s -= A[i, k] * x[k]
        return s
    if i < m + d:
        return ub[i - m] - x[i - m]
    return x[i - m - d] - lb[i - m - d]


@numba.njit(cache=True)
def _normal(A, i, out):
    """The constraint's normal n_i (s_i(x) = <n_i, x> - const)."""
    m, d = A.shape
    if i < m:
        for k in range(d):
            out[k] = -A[i, k]
        return
    out[:] = 0.0
    if i < m + d:
        out[i - m] = -1.0
    else:
        out[i - m - d] = 1.0


@numba.njit(cache=True)
def _givens(a, b):
    h = math.hypot(a, b)
    if h == 0.0:
        return 1.0, 0.0, 0.0
    return a / h, b / h, h


@numba.njit(cache=True)
def _rotate_cols(JT, j, c, s):
    """Rotate columns j, j+1 of J, stored transposed (rows of ``JT``: contiguous)."""
    for k in range(JT.shape[1]):
        x, y = JT[j, k], JT[j + 1, k]
        JT[j, k] = c * x + s * y
        JT[j + 1, k] = -s * x + c * y


@numba.njit(cache=True)
def _drop(J, R, u, act, q, pos):
    """Remove active constraint ``pos`` (of q): R's column out, Givens back to triangular."""
    for col in range(pos, q - 1):
        for row in range(q):
            R[row, col] = R[row, col + 1]
        u[col] = u[col + 1]
        act[col] = act[col + 1]
    for row in range(q):
        R[row, q - 1] = 0.0
    for j in range(pos, q - 1):
        c, s, h = _givens(R[j, j], R[j + 1, j])
        if h == 0.0:
            continue
        for col in range(j, q - 1):
            x, y = R[j, col], R[j + 1, col]
            R[j, col] = c * x + s * y
            R[j + 1, col] = -s * x + c * y
        R[j + 1, j] = 0.0
        _rotate_cols(J, j, c, s)
    return q - 1


@numba.njit(cache=True)
def _project(A, r, lb, ub, centre, tol, max_iter):  # pragma: no cover (compiled)
    m, d = A.shape
    n_con = m + 2 * d
    x = centre.copy()
    J = np.eye(d)
    R = np.zeros((d, d))
    u = np.zeros(d + 1)
    act = np.zeros(d + 1, dtype=np.int64)
    is_act = np.zeros(n_con, dtype=np.bool_)
    npv = np.zeros(d)
    dv = np.zeros(d)
    z = np.zeros(d)
    rv = np.zeros(d)
    norms = np.empty(n_con)
    for i in range(m):
        s = 0.0
        for k in range(d):
            s += A[i, k] * A[i, k]
        norms[i] = math.sqrt(s)
    norms[m:] = 1.0
    q = 0
    it = 0
    while True:
        # step 1: the most violated constraint (relative to its normal's length)
        slack = r - A @ x if m else np.zeros(0)
        p, worst = -1, 0.0
        for i in range(n_con):
            if is_act[i] or norms[i] == 0.0:
                continue
            if i < m:
                v = slack[i] / norms[i]
            elif i < m + d:
                if not math.isfinite(ub[i - m]):
                    continue
                v = ub[i - m] - x[i - m]
            else:
                if not math.isfinite(lb[i - m - d]):
                    continue
                v = x[i - m - d] - lb[i - m - d]
            if v < worst:
                worst, p = v, i
        if p < 0 or worst >= -tol:
            return x, u, act, q, 0
        _normal(A, p, npv)
        u_new = 0.0
        while True:
            it += 1
            if it > max_iter:
                return x, u, act, q, 2
            # step 2: primal direction z = J2 J2^T n, dual direction r = R^{-1} J1^T n
            if p < m:
                dv[:] = J @ npv                              # J is stored transposed
            elif p < m + d:                                  # n = -e_j: a column of J^T,
                for k in range(d):                           # J^T n without the d^2 product
                    dv[k] = -J[k, p - m]                     # (the same numbers: exact)
            else:
                for k in range(d):
                    dv[k] = J[k, p - m - d]
            z[:] = 0.0
            for k in range(q, d):                            # rows of J^T: contiguous
                if dv[k] != 0.0:
                    z += dv[k] * J[k]
            for k in range(q - 1, -1, -1):
                s = dv[k]
                for l in range(k + 1, q):
                    s -= R[k, l] * rv[l]
                rv[k] = s / R[k, k]
            t1, pos = math.inf, -1
            for k in range(q):
                if rv[k] > 0.0 and u[k] / rv[k] < t1:
                    t1, pos = u[k] / rv[k], k
            zn = 0.0
            zz = 0.0
            for l in range(d):
                zn += z[l] * npv[l]
                zz += z[l] * z[l]
            sp_ = _slack(A, r, lb, ub, p, x)
            if math.sqrt(zz) <= 1e-13 * norms[p] or zn <= 0.0:
                t2 = math.inf
            else:
                t2 = -sp_ / zn
            t = min(t1, t2)
            if t == math.inf:
                return x, u, act, q, 1                      # infeasible
            if t2 == math.inf:                               # dual step only
                for k in range(q):
                    u[k] -= t * rv[k]
                u_new += t
                is_act[act[pos]] = False
                q = _drop(J, R, u, act, q, pos)
                continue
            for l in range(d):
                x[l] += t * z[l]
            for k in range(q):
                u[k] -= t * rv[k]
            u_new += t
            if t2 <= t1:                                     # full step: p joins
                for j in range(d - 1, q, -1):
                    c, s, h = _givens(dv[j - 1], dv[j])
                    if h == 0.0:
                        continue
                    dv[j - 1], dv[j] = h, 0.0
                    _rotate_cols(J, j - 1, c, s)
                for k in range(q + 1):
                    R[k, q] = dv[k]
                if q >= d or abs(R[q, q]) <= 1e-14 * norms[p]:
                    return x, u, act, q, 3                   # dependent normal: give up
                u[q] = u_new
                act[q] = p
                is_act[p] = True
                q += 1
                break
            is_act[act[pos]] = False                         # partial step: drop one
            q = _drop(J, R, u, act, q, pos)


@numba.njit(cache=True)
def _project_finish(A, r, lb, ub, centre, tol, max_iter):  # pragma: no cover (compiled)
    """:func:`_project`, then the answer :func:`project_level_set` returns: ``(x clipped
    onto the box, the planes' multipliers, status)``, in one compiled call (no arithmetic
    added: copies and comparisons)."""
    m = A.shape[0]
    x, u, act, q, status = _project(A, r, lb, ub, centre, tol, max_iter)
    mult = np.zeros(m)
    if status != 0:
        return x, mult, status
    for k in range(q):
        if act[k] < m:
            mult[act[k]] = u[k]
    for j in range(x.size):                         # np.clip: NaN stays NaN
        if x[j] < lb[j]:
            x[j] = lb[j]
        elif x[j] > ub[j]:
            x[j] = ub[j]
    return x, mult, status


def project_level_set(A, r, lb, ub, centre, *, tol: float = 1e-12, max_iter: int | None = None):
    r"""The projection :math:`\arg\min \tfrac12\|x - c\|^2` s.t. :math:`A x \le r`,
    :math:`lb \le x \le ub`, by Goldfarb and Idnani's dual active-set method.

    Parameters
    ----------
    A : ndarray (m, d)
        Plane slopes (dense).
    r : ndarray (m,)
        Right-hand sides (the level minus the offsets).
    lb, ub : ndarray (d,)
        The box (infinite sides allowed).
    centre : ndarray (d,)
        The point :math:`c` projected.
    tol : float
        A constraint counts violated when its slack, over its normal's length, is below
        ``-tol`` (the caller scales it).
    max_iter : int, optional
        Cap on active-set changes; default ``10 (m + 2 d)``.

    Returns
    -------
    x : ndarray (d,) or None
        The projection (None when the set is empty to the method's accuracy, a normal was
        dependent on the active ones, or the cap was hit).
    mult : ndarray (m,)
        Multipliers :math:`\ge 0` of the plane constraints at ``x`` (zeros when x is None).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 1.0]]); x, mult = project_level_set(
    ...     A, np.array([1.0]), np.full(2, -5.0), np.full(2, 5.0), np.array([2.0, 2.0]))
    >>> x.round(12).tolist(), mult.round(12).tolist()
    ([0.5, 0.5], [1.5])
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    m, d = A.shape
    r = np.ascontiguousarray(r, dtype=np.float64)
    lb = np.ascontiguousarray(lb, dtype=np.float64)
    ub = np.ascontiguousarray(ub, dtype=np.float64)
    c = np.ascontiguousarray(centre, dtype=np.float64)
    cap = 10 * (m + 2 * d) if max_iter is None else int(max_iter)
    A, r, lb, ub, c = map(kernel_input, (A, r, lb, ub, c))   # one compiled variant
    x, mult, status = _project_finish(A, r, lb, ub, c, float(tol), cap)
    return (x if status == 0 else None), mult
