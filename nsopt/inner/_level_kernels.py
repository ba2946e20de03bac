r"""Compiled kernels of :class:`~nsopt.inner.level_master.DenseBoxLP` (numba only).

The LP :math:`\min t` s.t. :math:`\langle a_i, x\rangle + \tau_i t \le -b_i` (``i < n``: planes
with :math:`\tau_i = -1`, fixed rows :math:`A_{ub} x \le b_{ub}` with :math:`\tau_i = 0`),
:math:`x_j \le ub_j`, :math:`-x_j \le -lb_j`, in :math:`z = (x, t) \in \mathbb R^{d+1}`, by the
dual simplex method in its row (active-set) form: a basis is a set :math:`W` of ``d + 1``
constraints with linearly independent normals :math:`G_W`, its vertex :math:`z = G_W^{-1}
h_W` and its multipliers :math:`\lambda = -G_W^{-T} e_t \ge 0` (dual feasible). A violated
constraint :math:`p` enters, the ratio test :math:`\min_{u_k > 0} \lambda_k / u_k` with
:math:`u = G_W^{-T} g_p` picks the one that leaves; :math:`G_W^{-1}` is updated by
Sherman-Morrison (replacing row ``k`` by :math:`g_p`: :math:`G'^{-1} = G^{-1} - G^{-1}e_k
(u - e_k)^T / u_k`) and recomputed by LAPACK every ``REFACTOR`` pivots. Degenerate pivots
(ties in the ratio test) take the largest :math:`u_k`; a run that cycles stops at a pivot
cap and the caller starts cold, then falls back to HiGHS. Each pivot costs
:math:`O(d^2 + n d)`, against HiGHS's fixed cost per solve of a changed model.

Codes of constraints in ``W``: ``i >= 0`` plane ``i``; ``-(j + 1)`` the upper bound of
``x_j``; ``-(d + j + 1)`` its lower bound.
"""
from __future__ import annotations

import math

import numba
import numpy as np

#: pivots between two recomputations of the basis inverse from scratch (LAPACK, O(d^3))
REFACTOR = 100


@numba.njit(cache=True)
def _normal(A, tc, d, code, out):
    """Normal g of constraint ``code`` (g . z <= h); ``tc``: the coefficients of t."""
    out[:] = 0.0
    if code >= 0:
        for j in range(d):
            out[j] = A[code, j]
        out[d] = tc[code]
    elif code >= -d:
        out[-code - 1] = 1.0
    else:
        out[-code - d - 1] = -1.0


@numba.njit(cache=True)
def _rhs(b, lb, ub, d, code):
    if code >= 0:
        return -b[code]
    if code >= -d:
        return ub[-code - 1]
    return -lb[-code - d - 1]


@numba.njit(cache=True)
def _refactor(A, tc, b, lb, ub, W, Ginv):
    """Ginv = G_W^{-1} from scratch (LAPACK's LU; it raises ``LinAlgError`` when G_W is
    exactly singular); False, Ginv unchanged, when G_W is singular to rounding
    (``max|G_W^{-1}| max|G_W| >= 1e13``, a cheap estimate of its condition number)."""
    d1 = W.size
    d = d1 - 1
    G = np.zeros((d1, d1))
    g = np.zeros(d1)
    for k in range(d1):
        _normal(A, tc, d, W[k], g)
        G[k, :] = g
    inv = np.linalg.inv(G)
    # the inverse of a basis singular to rounding has huge entries: 1 / smallest pivot
    big = 0.0
    for r in range(d1):
        for k in range(d1):
            big = max(big, abs(inv[r, k]))
    scale = 0.0
    for r in range(d1):
        for k in range(d1):
            scale = max(scale, abs(G[r, k]))
    if not big * scale < 1e13:
        return False
    Ginv[:, :] = inv
    return True


@numba.njit(cache=True)
def cold_basis(A, tc, b, n, lb, ub, W):
    r"""A dual-feasible basis: the plane :math:`r` of largest :math:`b_r + \min_Q \langle a_r,
    x\rangle` (a lower bound on the LP) and, for each :math:`j`, the side of the box where
    :math:`a_{rj} x_j` is least (multipliers :math:`\lambda_r = 1`, :math:`|a_{rj}|`; fixed
    rows, ``tc == 0``, start outside the basis with multiplier 0)."""
    d = A.shape[1]
    best, r = -math.inf, 0
    for i in range(n):
        if tc[i] == 0.0:
            continue
        v = b[i]
        for j in range(d):
            v += min(A[i, j] * lb[j], A[i, j] * ub[j])
        if v > best:
            best, r = v, i
    W[0] = r
    for j in range(d):
        W[j + 1] = -(d + j + 1) if A[r, j] > 0 else -(j + 1)


@numba.njit(cache=True)
def dual_simplex(A, tc, b, n, lb, ub, W, Ginv, refactor, tol, max_pivots):
    r"""Run the dual simplex from the dual-feasible basis ``W`` (its inverse ``Ginv``, or
    recomputed when ``refactor``). Returns ``(status, z, pivots)``: status 0 optimal (no
    constraint violated by more than ``tol`` times its normal's length and the scale of
    the right-hand sides), 1 primal infeasible to rounding (no ratio), 2 the pivot cap, 3 a
    singular basis. ``W`` and ``Ginv`` are updated in place."""
    d = A.shape[1]
    d1 = d + 1
    z = np.zeros(d1)
    h = np.zeros(d1)
    u = np.zeros(d1)
    col = np.zeros(d1)
    in_w = np.zeros(n, dtype=np.bool_)
    box_w = np.zeros(2 * d, dtype=np.bool_)
    norms = np.sqrt(tc * tc + (A * A).sum(axis=1))  # of the normals (a_i, tc_i)
    scale = 1.0
    for i in range(n):
        scale = max(scale, abs(b[i]))
    for j in range(d):
        scale = max(scale, abs(lb[j]), abs(ub[j]))
    for k in range(d1):
        c = W[k]
        if c >= 0:
            in_w[c] = True
        else:
            box_w[-c - 1] = True
    if refactor and not _refactor(A, tc, b, lb, ub, W, Ginv):
        return 3, z, 0
    since = 0
    pivots = 0
    while True:
        for k in range(d1):
            h[k] = _rhs(b, lb, ub, d, W[k])
        z[:] = Ginv @ h
        # the most violated constraint, relative to its normal's length (BLAS: A @ x)
        viol = A @ z[:d]
        worst, p = tol * scale, n + 2 * d
        for i in range(n):
            if in_w[i]:
                continue
            v = (viol[i] + b[i] + tc[i] * z[d]) / norms[i]
            if v > worst:
                worst, p = v, i
        for j in range(d):
            if not box_w[j] and z[j] - ub[j] > worst:
                worst, p = z[j] - ub[j], -(j + 1)
            if not box_w[d + j] and lb[j] - z[j] > worst:
                worst, p = lb[j] - z[j], -(d + j + 1)
        if p == n + 2 * d:
            return 0, z, pivots
        if pivots >= max_pivots:
            return 2, z, pivots
        # u = G_W^{-T} g_p: a row of Ginv for a side of the box, one product for a plane
        if p >= 0:
            u[:] = A[p] @ Ginv[:d]
            for k in range(d1):
                u[k] += tc[p] * Ginv[d, k]
        elif p >= -d:
            u[:] = Ginv[-p - 1]
        else:
            for k in range(d1):
                u[k] = -Ginv[-p - d - 1, k]
        umax = 0.0
        for k in range(d1):
            umax = max(umax, abs(u[k]))
        theta, leave, ubest = math.inf, -1, 0.0
        for k in range(d1):
            if u[k] > 1e-9 * umax:
                lam = max(-Ginv[d, k], 0.0)
                ratio = lam / u[k]
                if ratio < theta - 1e-14 or (ratio <= theta + 1e-14 and u[k] > ubest):
                    theta, leave, ubest = ratio, k, u[k]
        if leave < 0:
            return 1, z, pivots
        # Sherman-Morrison: row `leave` of G_W becomes g_p
        uk = u[leave]
        for r in range(d1):
            col[r] = Ginv[r, leave]
        u[leave] -= 1.0
        for r in range(d1):
            f = col[r] / uk
            if f != 0.0:
                for k in range(d1):
                    Ginv[r, k] -= f * u[k]
        old = W[leave]
        if old >= 0:
            in_w[old] = False
        else:
            box_w[-old - 1] = False
        W[leave] = p
        if p >= 0:
            in_w[p] = True
        else:
            box_w[-p - 1] = True
        pivots += 1
        since += 1
        if since >= REFACTOR:
            since = 0
            if not _refactor(A, tc, b, lb, ub, W, Ginv):
                return 3, z, pivots


@numba.njit(cache=True)
def offset_matches(b, c):  # pragma: no cover (compiled)
    """For the offsets ``c`` (k,) of new planes against the offsets ``b`` (n,) of a bundle:
    ``(hit, repeated)``, ``hit[j]`` whether ``c[j]`` equals some ``b[i]`` and ``repeated``
    whether some ``c[t]`` equals an earlier ``c[s]`` (exact ``==``: NaN matches nothing).
    The cheap first test of :func:`nsopt.solvers._region._new_planes`, without the k x n
    temporary."""
    k, n = c.shape[0], b.shape[0]
    hit = np.zeros(k, dtype=np.bool_)
    repeated = False
    for j in range(k):
        cj = c[j]
        for i in range(n):
            if b[i] == cj:
                hit[j] = True
                break
        if not repeated:
            for s in range(j):
                if c[s] == cj:
                    repeated = True
                    break
    return hit, repeated
