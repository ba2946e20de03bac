r"""Dual coordinate descent for L2-regularized margin losses ([HCLKS08]_, [YHL11]_).

For :math:`J(w) = \tfrac\lambda2\|w\|^2 + \sum_i c_i\, l(\langle x_i, w\rangle, y_i)` with a
margin loss whose conjugate is known (hinge, squared hinge, logistic), the Fenchel dual over
the dual point :math:`t` (one entry per example, in ``[0, loss.dual_upper]``) is

.. math::
    D(t) = -\sum_i c_i\, l^*(-y_i t_i, y_i) - \frac{1}{2\lambda}\Big\|\sum_i c_i y_i t_i x_i\Big\|^2,
    \qquad w(t) = \frac1\lambda \sum_i c_i y_i t_i x_i,

and :math:`D(t) \le J^* \le J(w(t))` for every feasible ``t``. Coordinate ascent on one
:math:`t_i` at a time is a one-dimensional problem with a closed form (hinge, squared hinge) or
a short Newton solve (logistic), at the cost of two sparse row operations
(:math:`\langle x_i, w\rangle` and :math:`w \mathrel{+}= \delta x_i`).

With a free intercept :math:`b` (``fit_intercept=True``) the dual gains the equality
:math:`\sum_i c_i y_i t_i = 0` (b is its multiplier), which single coordinates cannot keep:
the steps move pairs :math:`(t_a, t_b)` along it instead (SMO, [Pla98]_; [NNG17]_ for
coordinate descent under a linear coupling constraint), and ``b`` is the minimiser of the
primal in ``b`` at :math:`w(t)`.
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.special import xlogy

from .._validation import Boolean, Interval, NoneOr, Option
from ..certificate import DualPoint
from ..regularizers import scaled_conjugate
from . import _dcd_kernels as K
from ._base import Solver
from ._dcd_kernels import _shuffle
from ._registry import register

__all__ = ["DCD"]

@njit(cache=True)
def _dphi(kind, t, tc):
    r""":math:`\varphi'(t)` of the dual term :math:`\varphi(t) = l^*(-yt, y)`: hinge -1, squared
    hinge :math:`t - 1`, logistic :math:`\log(t / (1 - t))` (``tc = 1 - t`` kept apart)."""
    if kind == 0:
        return -1.0
    if kind == 1:
        return t - 1.0
    return math.log(t) - math.log(tc)


@njit(cache=True)
def _is_up(kind, yi, ti):
    """Whether :math:`t_i` may move by :math:`+y_i` (the first member of a pair)."""
    if kind == 2:
        return True
    if yi > 0:
        return kind == 1 or ti < 1.0
    return ti > 0.0


@njit(cache=True)
def _is_low(kind, yi, ti):
    """Whether :math:`t_i` may move by :math:`-y_i` (the second member of a pair)."""
    if kind == 2:
        return True
    if yi > 0:
        return ti > 0.0
    return kind == 1 or ti < 1.0


@njit(cache=True)
def _weakest(cand, side, cache, kind, y, t):
    """The weakest score among the candidates of ``side`` (the largest of the up list, the
    smallest of the low list); an empty slot, or one holding an example no longer in the set,
    is weakest of all (+inf, -inf)."""
    worst = -np.inf if side == 0 else np.inf
    for k in range(cand.shape[1]):
        j = cand[side, k]
        if j < 0 or not (_is_up(kind, y[j], t[j]) if side == 0 else _is_low(kind, y[j], t[j])):
            return np.inf if side == 0 else -np.inf
        v = cache[j]
        if (v > worst) if side == 0 else (v < worst):
            worst = v
    return worst


@njit(cache=True)
def _offer(cand, weak, side, i, si, cache, kind, y, t):
    """Keep ``i`` (score ``si``) among the candidates of ``side`` (0: the smallest scores of the
    up set, 1: the largest of the low set): into a free slot (empty, or holding an example no
    longer in the set), else in place of the weakest if ``si`` beats it. ``weak[side]`` is the
    weakest score as last seen (refreshed here and by :func:`_best`): most offers end on it in
    O(1)."""
    if (si >= weak[side]) if side == 0 else (si <= weak[side]):
        return
    free, slot, slot_val = -1, -1, 0.0
    for k in range(cand.shape[1]):
        j = cand[side, k]
        if j == i:
            return
        if j < 0 or not (_is_up(kind, y[j], t[j]) if side == 0 else _is_low(kind, y[j], t[j])):
            free = k
            continue
        v = cache[j]
        if slot < 0 or (v > slot_val if side == 0 else v < slot_val):
            slot, slot_val = k, v
    if free >= 0:
        cand[side, free] = i
    elif slot >= 0 and (si < slot_val if side == 0 else si > slot_val):
        cand[side, slot] = i
    weak[side] = _weakest(cand, side, cache, kind, y, t)


@njit(cache=True)
def _best(cand, weak, side, i, cache, kind, y, t):
    """The candidate of ``side`` other than ``i`` with the most extreme cached score (-1: none);
    refreshes ``weak[side]``."""
    best, best_val = -1, 0.0
    worst = -np.inf if side == 0 else np.inf
    for k in range(cand.shape[1]):
        j = cand[side, k]
        if j < 0 or not (_is_up(kind, y[j], t[j]) if side == 0 else _is_low(kind, y[j], t[j])):
            worst = np.inf if side == 0 else -np.inf
            continue
        v = cache[j]
        if (v > worst) if side == 0 else (v < worst):
            worst = v
        if j == i:
            continue
        if best < 0 or (v < best_val if side == 0 else v > best_val):
            best, best_val = j, v
    weak[side] = worst
    return best


@njit(cache=True)
def _pair_logistic(ya, yb, ta, tca, tb, tcb, ca, cb, base, h, u_max):
    r"""The step :math:`u \in (0, u_{max})` of a logistic pair: the root of the increasing
    :math:`F'(u) = base + h u + y_a\varphi'(t_a + y_a u/c_a) - y_b\varphi'(t_b - y_b u/c_b)`
    (:math:`F'(0) < 0`), by Newton safeguarded by bisection on the bracket; a trial point that
    leaves the open box counts as :math:`F' = +\infty`. Returns the last point known to have
    :math:`F' \le 0` unless the last Newton point solved :math:`F' = 0` to rounding."""
    lo, hi = 0.0, u_max
    u = 0.0
    for _ in range(60):
        da, db = ya * u / ca, -yb * u / cb
        na, nca, nb, ncb = ta + da, tca - da, tb + db, tcb - db
        if na <= 0.0 or nca <= 0.0 or nb <= 0.0 or ncb <= 0.0:
            hi = u
            u = 0.5 * (lo + hi)
            if hi - lo <= 1e-16 * hi:
                break
            continue
        g = (base + h * u + ya * (math.log(na) - math.log(nca))
             - yb * (math.log(nb) - math.log(ncb)))
        if g <= 0.0:
            lo = u
        else:
            hi = u
        if abs(g) <= 1e-12 * (1.0 + abs(base)):
            return u
        dg = h + 1.0 / (ca * na * nca) + 1.0 / (cb * nb * ncb)
        un = u - g / dg
        if not (lo < un < hi):
            un = 0.5 * (lo + hi)
        if un == u or hi - lo <= 1e-16 * hi:
            break
        u = un
    return lo


@njit(cache=True)
def _pair_epochs(kind, indptr, indices, data, y, c, sq, lam, t, tc, w, index, shrink, n_epochs,
                 rng, cache, cand, weak, scratch):
    r"""``n_epochs`` passes of pair coordinate descent on the dual with the equality
    :math:`\sum_i c_i y_i t_i = 0` (a free intercept); returns the number of active examples
    and the nonzeros visited.

    A pair (a, b) moves :math:`t_a \mathrel{+}= y_a u/c_a`, :math:`t_b \mathrel{-}= y_b u/c_b`
    (the equality is kept) and :math:`w \mathrel{+}= (u/\lambda)(x_a - x_b)`; the dual's
    derivative along it is :math:`s_a - s_b` with the scores :math:`s_i = \langle x_i,
    w\rangle + y_i\varphi'(t_i)`. The visited example ``i`` (a random order per pass) is paired
    with the candidate of the opposite set (``cand``: the few up-set examples with the
    smallest cached scores, low-set ones with the largest; ``weak`` their weakest scores) that
    violates the optimality
    :math:`\min_{up} s \ge \max_{low} s` most with it. ``cache`` holds the last scores seen,
    ``scratch`` is a zero vector of length d (the visited row scattered in it gives
    :math:`\langle x_a, x_b\rangle` in the partner's pass). ``shrink``: as :func:`~._dcd_kernels.epochs`,
    with :math:`\max_{low} s` and :math:`\min_{up} s` of the last pass as the thresholds.
    """
    n_all = index.shape[0]
    work = 0
    n_active = int(shrink[0])
    low_max_old, up_min_old, eps = shrink[1], shrink[2], shrink[3]
    use = shrink[4] != 0.0 and kind != 2
    upper = 1.0 if kind != 1 else np.inf
    inv_lam = 1.0 / lam
    for _ in range(n_epochs):
        low_max, up_min = -np.inf, np.inf
        _shuffle(index, n_active, rng)
        s = 0
        while s < n_active:
            i = index[s]
            start, end = indptr[i], indptr[i + 1]
            work += end - start
            wx_i = 0.0
            for k in range(start, end):       # <x_i, w>, and the row of i into scratch
                wx_i += data[k] * w[indices[k]]
                scratch[indices[k]] += data[k]
            s_i = wx_i + y[i] * _dphi(kind, t[i], tc[i])
            cache[i] = s_i
            up_i, low_i = _is_up(kind, y[i], t[i]), _is_low(kind, y[i], t[i])
            if use and ((up_i and not low_i and s_i > low_max_old)
                        or (low_i and not up_i and s_i < up_min_old)):
                for k in range(start, end):
                    scratch[indices[k]] = 0.0
                n_active -= 1
                index[s], index[n_active] = index[n_active], index[s]
                continue
            if up_i:
                up_min = min(up_min, s_i)
                _offer(cand, weak, 0, i, s_i, cache, kind, y, t)
            if low_i:
                low_max = max(low_max, s_i)
                _offer(cand, weak, 1, i, s_i, cache, kind, y, t)
            s += 1
            # the partner: the candidate most violating optimality with i
            j_low = _best(cand, weak, 1, i, cache, kind, y, t) if up_i else -1
            j_up = _best(cand, weak, 0, i, cache, kind, y, t) if low_i else -1
            v_low = cache[j_low] - s_i if j_low >= 0 else 0.0
            v_up = s_i - cache[j_up] if j_up >= 0 else 0.0
            if v_low <= 1e-12 and v_up <= 1e-12:
                for k in range(start, end):
                    scratch[indices[k]] = 0.0
                continue
            p = j_low if v_low >= v_up else j_up
            i_is_a = v_low >= v_up
            # the partner's pass gives <x_p, w> and <x_i, x_p> (the row of i is in scratch)
            ps, pe = indptr[p], indptr[p + 1]
            work += pe - ps
            wx_p, xip = 0.0, 0.0
            for k in range(ps, pe):
                wx_p += data[k] * w[indices[k]]
                xip += data[k] * scratch[indices[k]]
            s_p = wx_p + y[p] * _dphi(kind, t[p], tc[p])
            cache[p] = s_p
            if i_is_a:
                a, b, wx_a, wx_b, s_a, s_b = i, p, wx_i, wx_p, s_i, s_p
            else:
                a, b, wx_a, wx_b, s_a, s_b = p, i, wx_p, wx_i, s_p, s_i
            viol = s_b - s_a
            u = 0.0
            if viol > 1e-12:
                ya, yb, ca, cb = y[a], y[b], c[a], c[b]
                cap_a = ca * (upper - t[a]) if ya > 0 else ca * t[a]
                cap_b = cb * t[b] if yb > 0 else cb * (upper - t[b])
                u_max = min(cap_a, cap_b)
                h = max(sq[a] + sq[b] - 2.0 * xip, 0.0) * inv_lam
                if kind == 2:
                    u = _pair_logistic(ya, yb, t[a], tc[a], t[b], tc[b], ca, cb,
                                       wx_a - wx_b, h, u_max)
                else:
                    if kind == 1:
                        h += 1.0 / ca + 1.0 / cb
                    u = viol / h if h > 0.0 else np.inf
                    if u >= u_max:
                        u = u_max
                if u > 0.0 and math.isfinite(u):
                    da, db = ya * u / ca, -yb * u / cb
                    t[a] += da
                    tc[a] -= da
                    t[b] += db
                    tc[b] -= db
                    if kind != 2:  # a clipped step lands exactly on the bound
                        if u == cap_a:
                            t[a] = upper if ya > 0 else 0.0
                        if u == cap_b:
                            t[b] = 0.0 if yb > 0 else upper
                        for q in (a, b):
                            t[q] = min(max(t[q], 0.0), upper)
                    step = u * inv_lam
                    sa_ = 1.0 if a == i else -1.0  # the sign of i's row in the step
                    for k in range(start, end):
                        w[indices[k]] += sa_ * step * data[k]
                        scratch[indices[k]] = 0.0
                    for k in range(ps, pe):
                        w[indices[k]] -= sa_ * step * data[k]
                    cache[a] = wx_a + step * (sq[a] - xip) + ya * _dphi(kind, t[a], tc[a])
                    cache[b] = wx_b + step * (xip - sq[b]) + yb * _dphi(kind, t[b], tc[b])
                else:
                    u = 0.0
            if u > 0.0:
                work += (end - start) + (pe - ps)
            else:
                for k in range(start, end):
                    scratch[indices[k]] = 0.0
        if not use:
            continue
        if low_max - up_min <= eps:
            if n_active == n_all:
                eps *= 0.1
            n_active = n_all
            low_max_old, up_min_old = np.inf, -np.inf
            continue
        low_max_old = low_max if low_max > up_min else np.inf
        up_min_old = up_min if low_max > up_min else -np.inf
    shrink[0], shrink[1], shrink[2], shrink[3] = n_active, low_max_old, up_min_old, eps
    return n_active, work


#: candidates kept per side for the partner of a pair (measured: see the class's Notes)
_N_CANDIDATES = 8


class _Plain(NamedTuple):
    """Without an intercept: the arrays of :func:`~._dcd_kernels.epochs`, mutated in place."""
    kind: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    ex: np.ndarray      # (m, 8) per example: y, c y / lam, q, c, t, 1 - t, margin
    w: np.ndarray       # w(t), kept by the epochs
    index: np.ndarray   # the examples of positive weight, the active ones first
    shrink: np.ndarray  # the shrinking state
    sums: np.ndarray    # the gap estimate's sums
    v: np.ndarray       # sum of c y x over the examples shrunk at the upper bound
    rng: np.ndarray     # the permutations' random state
    nnz: int            # nonzeros of X
    lam: float
    adapt: np.ndarray   # [factor, best value, gain]: a check when the estimate is within factor *
    #                     tolerance; the best value of the checks so far
    own_value: bool     # J at a check from the check's pass (else an oracle call: a loss whose
    #                     oracle is overridden, scores_supported False)


#: without ``check_every``, a check at the latest after epochs visiting this many times nnz(X)
_CHECK_PERIOD = 20
#: a check is made when the gap estimate is within this share of the tolerance ...
_ESTIMATE_FACTOR = 0.9
#: ... multiplied by this after a check the estimate called too early ...
_ESTIMATE_BACKOFF = 0.7
#: ... down to this; raised (up to this) by the gain of the scaled point at a check made by
#: the work cap (see ``_SCALE_PRIMAL``)
_ESTIMATE_FACTOR_MIN = 1e-3
_ESTIMATE_FACTOR_MAX = 10.0
#: below this many nonzeros a check costs its Python overhead more than its pass: a check
#: every 3 nnz(X) of epochs, no estimate
_ESTIMATE_MIN_NNZ = 2**16
#: examples ahead whose rows are prefetched
_PREFETCH = 4
#: a check that does not close the gap offers the best multiple s x of its point x instead
#: of x when it is better (:func:`~._dcd_kernels.best_scale`, s in this range, at most this
#: many trials of O(m) each): measured on mushrooms (hinge, lam 1e-4) J(s x) - J* is 4-10x
#: smaller than J(x) - J* where the primal lags the dual, on a9a about the same
_SCALE_PRIMAL = True
_SCALE_RANGE = (0.5, 2.0)
_SCALE_TRIALS = 30
_NO_CAP = 2**62
#: a full epoch that meets the shrinking tolerance keeps its own bounds as the next thresholds
#: (as liblinear's every epoch does) instead of a following epoch without shrinking
_KEEP_FULL = True
#: the first shrinking tolerance (liblinear's eps: its stopping tolerance; here divided by 10
#: each time the whole problem meets it)
_SHRINK_EPS0 = 0.01


#: small problems (below :data:`_ESTIMATE_MIN_NNZ` nonzeros): the k-th check comes after
#: epochs visiting ``3 nnz(X) * _SMALL_GROWTH**max(k - _SMALL_FLAT, 0)`` nonzeros, at most
#: :data:`_SMALL_MAX_WORK` (about a millisecond of epochs, the Python overhead of one check):
#: the first checks come as before (a problem at large lam is solved by them, on the same
#: path), at small lam (10^5 epochs and more) the checks no longer take nearly all the time
_SMALL_GROWTH = 1.5
_SMALL_FLAT = 4
_SMALL_MAX_WORK = 2**20


def _small_check_work(nnz, k):
    """The nonzeros the epochs visit before the ``k``-th check of a small problem."""
    base = 3 * nnz
    if base >= _SMALL_MAX_WORK:
        return base
    return int(min(base * _SMALL_GROWTH ** min(max(k - _SMALL_FLAT, 0), 200), _SMALL_MAX_WORK))


#: the exact finish (option ``exact_finish``): tried when d is at most this, the free set at
#: most this, and the sets of the dual point (at 0, at the upper bound, between) are those of
#: the previous check and not yet tried; its cost, a bounded least squares on the free
#: examples (O(|F|^2 d)) and a pass, is that of a few epochs
_EXACT_MAX_DIM = 256
_EXACT_MAX_FREE = 1024
#: ... and while the tries' estimated cost, ``_EXACT_COST |F|^3`` nonzero visits each (the
#: bounded least squares measured at about 1.2 s for |F| = 1000 against 7 ns a visit of the
#: epochs), stays within the epochs' visits so far plus one try of ``_EXACT_FREE_TRY``
#: examples: at most about twice the epochs' time in all
_EXACT_COST = 0.2
_EXACT_FREE_TRY = 64


def _exact_free(kind, A_F, c_F, g_U, lam):
    r"""The free examples' multipliers :math:`u_F = c_F t_F` that maximise the dual with the
    other examples fixed (at 0, or at the upper bound: their sum :math:`g_U = \sum_U c_i y_i
    x_i`), or None.

    With ``A_F`` the rows :math:`y_i x_i`, :math:`\lambda w = g_U + A_F^T u_F`, and the dual
    restricted to ``F`` is the box QP
    :math:`\min_u \tfrac12 u^T M u - r^T u` over :math:`[0, c_F]` (squared hinge
    :math:`[0, \infty)`), :math:`M = A_F A_F^T/\lambda` (:math:`+\,\mathrm{diag}(1/c_F)`),
    :math:`r = 1 - A_F g_U/\lambda`: a free example's margin :math:`\langle y_i x_i, w\rangle`
    is 1 (squared hinge :math:`1 - t_i`), one at 0 has it at least 1, one at the upper bound
    at most 1. With the Cholesky factor :math:`M + \delta I = LL^T` (``delta`` 1e-11 of M's
    largest diagonal entry: M has rank at most d, and more free examples than dimensions
    are common on tied data) it is the bounded least squares
    :math:`\min \tfrac12\|L^T u - L^{-1} r\|^2`, solved by scipy's ``lsq_linear``
    (``method="bvls"``, an active-set method that ends on an exact solution of its active
    set). Whether it is optimal for the whole problem is for the certificate to say."""
    from scipy.linalg import cho_factor, solve_triangular
    from scipy.optimize import lsq_linear

    M = (A_F @ A_F.T) / lam
    if kind == 1:
        M[np.diag_indices_from(M)] += 1.0 / c_F
        upper = np.full(c_F.size, np.inf)
    else:
        upper = c_F
    r = 1.0 - (A_F @ g_U) / lam
    if not (np.all(np.isfinite(M)) and np.all(np.isfinite(r))):
        return None
    top = float(np.max(np.diag(M))) if M.size else 0.0
    if not top > 0.0:
        return None
    Md = M.copy()
    Md[np.diag_indices_from(Md)] += 1e-11 * top
    try:
        L, _ = cho_factor(Md, lower=True)
        L = np.tril(L)
        q = solve_triangular(L, r, lower=True)
        sol = lsq_linear(L.T, q, bounds=(np.zeros(c_F.size), upper), method="bvls",
                         tol=1e-14)
        u = np.clip(sol.x, 0.0, upper)
        # polish: the multipliers strictly inside solved again on M itself (no delta; the
        # least-squares solution of least norm where M is singular), kept if in the box
        inner = (u > 0.0) & (u < upper)
        if np.any(inner):
            rest = ~inner
            rhs = r[inner] - M[np.ix_(inner, rest)] @ u[rest]
            v = np.linalg.lstsq(M[np.ix_(inner, inner)], rhs, rcond=None)[0]
            if np.all(v >= 0.0) and np.all(v <= upper[inner]):
                u[inner] = v
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - degenerate input
        return None
    return u


class _Work(NamedTuple):
    """With an intercept: the pair kernel and its arrays, mutated in place across steps."""
    kernel: object      # _pair_epochs
    args: tuple         # its arguments before (n_epochs, rng)
    rng: np.ndarray     # the permutations' random state
    tail: tuple         # its arguments after rng (pairs: cache, candidates, weakest, scratch)
    w: np.ndarray       # w(t), kept by the epochs
    nnz: int            # nonzeros of X (the default check period is three times this)
    t: np.ndarray       # the dual point
    tc: np.ndarray      # 1 - t (logistic)


def _balance(t, c, y):
    r"""Repair ``t`` (in its box) in place onto :math:`\sum_i c_i y_i t_i = 0`: the class with
    the excess is scaled down by the factor that removes it exactly (in real arithmetic; what
    rounding leaves costs the certificate :math:`B|r|`). Scaling toward 0 keeps the box and
    keeps logistic entries inside (0, 1)."""
    ct = c * t
    r = float(ct @ y)
    if r == 0.0:
        return
    mass = 0.5 * (float(ct.sum()) + abs(r))       # sum of c t over the class with the excess
    if mass > 0.0:
        f = max(1.0 - abs(r) / mass, 0.0)
        t *= np.where(y > 0 if r > 0 else y < 0, f, 1.0)


def _with_best_intercept(problem, w):
    r"""``(x, scores)``: ``x = (w, b)`` with b a minimiser of the convex :math:`b \mapsto
    R(w, b)` (the regularizer does not see b), by the loss's exact line search along the
    intercept axis (breakpoints for the hinge, pieces for the squared hinge, bisection on the
    derivative for the logistic), from the scores :math:`Xw` (half a data pass)."""
    loss, risk = problem.loss, problem.problem
    x = risk.join(w, 0.0)
    e = risk.join(np.zeros(w.size), 1.0)
    f = problem.scores(x)
    if f is None or not getattr(loss, "scores_supported", False):
        line, f = loss.restrict(x, e), None
    else:
        line = loss.restrict_scores(f, np.ones(f.size))
    if line.derivative(0.0, 1) < 0:
        b = line.minimize(0.0, math.inf)
    else:
        back = loss.restrict(x, -e) if f is None else loss.restrict_scores(f, -np.ones(f.size))
        b = -back.minimize(0.0, math.inf) if back.derivative(0.0, 1) < 0 else 0.0
    if not math.isfinite(b):  # pragma: no cover - both classes present: R grows both ways
        raise FloatingPointError(f"the best intercept at w(t) is {b}")
    x[-1] = b
    return x, (None if f is None else f + b)


_OTHERS = "'ls-bmrm', 'bmrm' or 'proximal-bundle'"
_PROBE = np.array([0.0, 0.125, 0.25, 0.5, 0.75, 1.0])
#: the kernel's kinds, known by their dual: (dual_upper, t -> l^*(-y t, y)); a margin loss is
#: determined by its conjugate, so a loss with these is the kernel's loss
_CONJUGATES = (
    (1.0, lambda t: -t),                                           # 0: hinge
    (math.inf, lambda t: 0.5 * t * t - t),                         # 1: squared hinge
    (1.0, lambda t: xlogy(t, t) + xlogy(1.0 - t, 1.0 - t)),        # 2: logistic
)


def _kind(loss) -> int | None:
    """The kernel's kind for ``loss`` (0 hinge, 1 squared hinge, 2 logistic), asked of the
    loss's dual (``dual_upper``, ``conjugate_terms``), not of its class; None for others."""
    upper = getattr(loss, "dual_upper", None)
    if upper is None or not getattr(loss, "binary", False):
        return None
    try:
        conj = np.asarray(loss.conjugate_terms(_PROBE.copy()), dtype=np.float64)
    except Exception:  # a conjugate that takes no probe is not one of the kernel's
        return None
    if conj.shape != _PROBE.shape:
        return None
    for kind, (u, f) in enumerate(_CONJUGATES):
        # |conj - f| <= 1e-14 everywhere (np.allclose with atol 1e-14, at a tenth of its
        # cost: it ran 2-4 times a run); NaN compares False
        if upper == u and float(np.max(np.abs(conj - f(_PROBE)))) <= 1e-14:
            return kind
    return None


@register
class DCD(Solver):
    r"""Dual coordinate descent (liblinear's dual solvers), certified by its own dual point.

    Minimises :math:`J(w) = \tfrac\lambda2\|w\|^2 + \sum_i c_i\, l(\langle x_i, w\rangle,
    y_i)` for the hinge, squared hinge ([HCLKS08]_) and logistic ([YHL11]_) losses, with sample
    weights :math:`c` (:class:`~nsopt.RegularizedRisk` with :class:`~nsopt.regularizers.L2`,
    with or without an unregularized intercept, see below), by maximising the Fenchel dual

    .. math::
        D(t) = -\sum_i c_i\, l^*(-y_i t_i, y_i) - \frac{\lambda}{2}\|w(t)\|^2, \qquad
        w(t) = \frac1\lambda\sum_i c_i y_i t_i x_i,

    one coordinate :math:`t_i` at a time, in a random order each pass (epoch). The dual point
    is the certificate: every ``check_every`` epochs :math:`t` (kept in its box
    ``[0, loss.dual_upper]``) gives the proven bound :math:`D(t) \le J^*` and
    :math:`w(t)` the value :math:`J(w(t)) \ge J^*`; the run stops when the gap is within
    ``max(atol, rtol |J|)``.

    Parameters
    ----------
    check_every : int or None, default None
        Epochs between two checks. None: without an intercept, a check when the running
        estimate of the duality gap (see Notes; O(1) per visit, O(d) per epoch) is within
        ``0.9 max(atol, rtol |J|)`` (a share multiplied by 0.7 after each check it called too
        early), at the latest after epochs visiting 20 times the nonzeros of X; with an
        intercept, after epochs visiting three times the nonzeros of X (with shrinking an epoch
        may visit a small share of them); below :data:`_ESTIMATE_MIN_NNZ` nonzeros, the k-th
        check after epochs visiting :math:`3\,\mathrm{nnz}(X)\cdot 1.5^{\max(k-4, 0)}`
        nonzeros, at most :math:`2^{20}` (about a millisecond of epochs, one check's Python
        overhead: on 200 x 5 at lam 1e-5, 18 checks to a proven 1e-2 instead of about 400).
    shrinking : bool, default True
        Hinge and squared hinge: skip examples whose :math:`t_i` sits at a bound with a
        gradient pushing it out ([HCLKS08]_ Sec. 3.2); visit all again once the shrunk problem
        is solved to the projected-gradient spread ``eps`` (0.01, then divided by 10 each time
        the whole problem meets it; a whole epoch that meets it keeps its own bounds as the
        next thresholds, as liblinear's epochs do, so that no epoch goes without shrinking).
        Measured on letter (hinge, lam 1e-3 ... 1e-5, ratios of medians in one run): a start
        at 0.01 instead of 1 took 0.44-0.8x the time (1 unshrank the problem after a few
        epochs, solved to a spread that says nothing); mushrooms unchanged. The certificate is
        always of the whole problem.
    random_state : int, default 0
        Seed of the permutations (runs are reproducible).
    exact_finish : bool, default True
        Hinge and squared hinge without an intercept, d at most 256: when the dual point's
        sets (examples at 0, at the upper bound, between) are those of the previous check,
        the free examples and those at a bound whose margin points out of it are solved
        exactly for them, the others fixed (a box QP on at most 1024 examples by Cholesky
        and bounded-variable least squares, :func:`_exact_free`), and the result is offered
        only when one exact check pass proves the gap (finite termination once the sets are
        right; a wrong guess changes no iterate). Tries are bounded by the epochs' work.
        Measured (``benchmarks/small.py``, 200 x 5 integer hinge at lam 1e-6): not certified
        in 3 s without it (1.4e6 epochs), 2,672 epochs and one try (0.07 s) with it.
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`); one
        iteration is the epochs up to a check, and the check.

    Notes
    -----
    The step in :math:`t_i` with :math:`G = y_i\langle x_i, w\rangle - 1` and
    :math:`q_i = c_i\|x_i\|^2/\lambda` (liblinear's :math:`\alpha_i = c_i t_i/\lambda`,
    :math:`C_i = c_i / \lambda`):

    * hinge, :math:`t_i \in [0, 1]`: :math:`t_i \leftarrow \mathrm{clip}_{[0,1]}(t_i - G/q_i)`;
    * squared hinge :math:`\tfrac12\max(0, 1 - yz)^2`, :math:`t_i \ge 0`:
      :math:`t_i \leftarrow \max(0, t_i - (G + t_i)/(q_i + 1))`;
    * logistic, :math:`t_i \in (0, 1)`: the root of
      :math:`\log\frac{z}{1-z} + q_i(z - t_i) + y_i\langle x_i, w\rangle`, by Newton on the
      half of (0, 1) that holds it, in :math:`z` or in :math:`1 - z` (both kept, so that
      :math:`t_i` near 1 loses no precision; [YHL11]_ Sec. 3).

    Each step changes :math:`w` by :math:`(c_i y_i \delta/\lambda) x_i`. Without an intercept
    the epochs are :func:`~nsopt.solvers._dcd_kernels.epochs` (liblinear's loop: a random
    permutation per epoch, one sparse dot and at most one sparse axpy per example over CSR
    rows, shrinking; the rows of the examples a few places ahead prefetched, the per-example
    numbers in one cache line: measured on a9a, a shuffled epoch costs about 1.4x a
    sequential one instead of 2-4x). A check is one pass over the rows
    (:func:`~nsopt.solvers._dcd_kernels.check_pass`): the dual plane :math:`(a, b)` of
    :math:`t` (what ``loss.dual_plane(t)`` and :meth:`~nsopt.Certificate.check` compute, its
    bound :math:`b - \lambda\Omega^*(-a/\lambda)`) and, in the same pass, :math:`J` at the
    running :math:`w` (the point offered to the loop, which settles it by one oracle call
    before it reports it; at the check whose value closes the gap, the oracle is called at once
    with the pass's scores instead: half a data pass, no settling call); then :math:`w` is reset
    to :math:`-a/\lambda` (no drift from the incremental updates). A check that does not close
    the gap offers instead of its point :math:`x` the best multiple :math:`sx`,
    :math:`s \in [1/2, 2]`, when it is better (:func:`~nsopt.solvers._dcd_kernels.best_scale`:
    :math:`J(sx) = \tfrac\lambda2 s^2\|x\|^2 + \sum_i c_i\phi(s z_i)` from the pass's
    margins, Newton on s, no data pass). Any point is a valid upper bound, and the dual path is
    unchanged. Where the primal value of :math:`w(t)` lags the dual bound (the hinge on nearly
    separable data: on mushrooms at lam 1e-4, :math:`J(x) - J^*` is 50-190 times
    :math:`J^* - D(t)`), :math:`J(sx) - J^*` is 4-10 times smaller than :math:`J(x) - J^*`;
    the share it leaves of x's gap raises the estimate's factor (up to 10) after a check made
    by the work cap, so that the next check comes when the scaled point may close the gap
    (mushrooms, hinge, lam 1e-4: 238 epochs to a proven 1e-4 before, 160 with it; a9a
    unchanged; the squared hinge and logistic loss, whose primal does not lag, unchanged). A loss whose oracle is overridden (``scores_supported`` False) is
    valued by an oracle call instead. The gap estimate that decides when to check keeps, per
    example, its margin :math:`z_i` at its last visit (before its step), and
    :math:`\hat G = \sum_i c_i l(z_i) - \sum_i c_i \psi(t_i) + \lambda\|w\|^2`
    (:math:`\psi(t) = -l^*(-yt)`), updated in O(1) per visit; the hinge's examples shrunk at
    :math:`t_i = 1` enter by their exact loss :math:`\sum c_i - \langle v, w\rangle`
    (:math:`v = \sum c_i y_i x_i` over them, linear in w), and near the target a shrunk
    problem's active margins are recomputed (one pass over the active rows). The estimate
    proves nothing; the check does. Start: :math:`t = 0` (logistic: :math:`10^{-8}`, inside
    the domain of :math:`\log`); ``x0`` is evaluated (the answer if no later point is better;
    at ``x0 = 0`` from the scores 0, without the pass :math:`Xx_0`) but does not seed
    :math:`t`.

    **A free intercept** (``fit_intercept=True``, :math:`J(w, b)` with the scores
    :math:`\langle x_i, w\rangle + b`, b not regularized). Minimising over b turns the dual
    into the same :math:`D(t)` under the equality :math:`\sum_i c_i y_i t_i = 0` (its
    multiplier is b). A step moves a pair, :math:`t_a \mathrel{+}= y_a u/c_a`,
    :math:`t_b \mathrel{-}= y_b u/c_b` (the equality is kept), :math:`w \mathrel{+}=
    (u/\lambda)(x_a - x_b)`; along it the dual's derivative is :math:`s_b - s_a` with the scores
    :math:`s_i = \langle x_i, w\rangle + y_i\varphi'(t_i)` (:math:`\varphi(t) = l^*(-yt, y)`),
    and :math:`t` is optimal when :math:`\min_{up} s \ge \max_{low} s` over the examples that
    may move by :math:`+y_i` (up) and by :math:`-y_i` (low) in their box ([Pla98]_, LIBSVM's
    maximal violating pair). The step is the clipped minimiser of a 1-D quadratic (curvature
    :math:`\|x_a - x_b\|^2/\lambda`, plus :math:`1/c_a + 1/c_b` for the squared hinge), or
    for the logistic loss the root of its derivative by Newton safeguarded by bisection, both
    multipliers kept strictly inside (0, 1). Pairs: each example ``i`` of the random pass is
    paired with the most violating of a few candidates of the opposite set (the
    ``_N_CANDIDATES = 8`` examples with the most extreme scores seen so far on each side,
    kept up to date in O(8) per visit), so an epoch costs O(nnz) (about 2.8 row passes per
    example on a9a against 1 for the plain method; on a9a 8 candidates need half the epochs of 1 at
    lam = 1e-4, 20% fewer at 1e-5, for the same time). Shrinking as above, with
    :math:`\max_{low} s` and :math:`\min_{up} s` of the last pass as the thresholds. At a
    check the residual of the equality that rounding left is removed by scaling the class
    with the excess toward 0 (in the box), :math:`w(t)` is reset, and b is the exact minimiser
    of :math:`R(w(t), \cdot)` (the loss's line search along the intercept axis: breakpoints
    for the hinge); the point is ``problem.join(w, b)``. The bound is the same
    :class:`~nsopt.certificate.DualPoint` check, whose conjugate term
    (:class:`~nsopt.problem.InterceptRegularizer`) subtracts :math:`B|r|` for a residual
    :math:`r = \sum_i c_i y_i t_i` (B = ``problem.intercept_bound()``), so it stays a proven
    bound. All labels of positive weight alike: the equality forces :math:`t = 0`, hinge and
    squared hinge end at :math:`J^* = 0` (w = 0, b = y); the logistic loss has no minimiser
    there (b runs to infinity) and ``ValueError`` says so.

    Cost: O(nnz(X)) per epoch (less with shrinking), O(m + d) memory beyond the data (and a
    CSR copy of dense data); no master problem; one data pass per check. Certificate source ``"dual-point"``, evidence :class:`~nsopt.certificate.DualPoint`.
    Fast where :math:`\lambda` is large (few epochs); at small :math:`\lambda` the number
    of epochs grows roughly like :math:`1/\lambda` and the cutting-plane methods catch up.

    ``Result.info``: ``epochs`` (passes made), ``n_active`` (examples not shrunk at the end).

    References
    ----------
    .. [HCLKS08] C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi, S. Sundararajan. A dual
       coordinate descent method for large-scale linear SVM. ICML 2008.
    .. [YHL11] H.-F. Yu, F.-L. Huang, C.-J. Lin. Dual coordinate descent methods for logistic
       regression and maximum entropy models. Machine Learning 85:41-75, 2011.
    .. [Pla98] J. C. Platt. Sequential minimal optimization: a fast algorithm for training
       support vector machines. Microsoft Research MSR-TR-98-14, 1998.
    .. [NNG17] I. Necoara, Y. Nesterov, F. Glineur. Random block coordinate descent methods for
       linearly constrained optimization over networks. J. Optim. Theory Appl. 173:227-254, 2017.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> res = nsopt.solvers.DCD(rtol=1e-6).solve(J)
    >>> bool(res.success and res.lower_bound <= res.fun), res.certificate.source
    (True, 'dual-point')
    >>> Jb = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2, fit_intercept=True)
    >>> rb = nsopt.solvers.DCD(rtol=1e-6).solve(Jb)
    >>> bool(rb.success and rb.certificate.check(Jb) <= rb.fun), Jb.split(rb.x)[1].shape
    (True, (1,))
    """

    name = "dcd"
    requires = ("regularized_risk",)
    self_certifying = True
    certificate_source = "dual-point"
    history_fields = ("epochs", "n_active")
    options = {
        "check_every": Option(None, NoneOr(Interval(Integral, 1, None, closed="left")),
                              doc="epochs between two certificate checks (None: by work, "
                                  "checks at most about a third of it)"),
        "shrinking": Option(True, Boolean(), doc="skip examples at a bound of their box "
                                                 "(hinge, squared hinge; with or without an "
                                                 "intercept)"),
        "random_state": Option(0, Interval(Integral, 0, None, closed="left"),
                               doc="seed of the random order of the examples"),
        "exact_finish": Option(True, Boolean(), doc="hinge and squared hinge without an "
                                                    "intercept, small d: when the dual point's "
                                                    "sets stop changing, solve the free "
                                                    "examples exactly and offer the result"),
    }

    @classmethod
    def unsupported_reason(cls, problem):
        reason = super().unsupported_reason(problem)
        if reason is not None:
            return reason
        reg = problem.base_reg if problem.fit_intercept else problem.reg
        if not reg.self_conjugate:
            what = (" on the coefficients (with or without an intercept)"
                    if problem.fit_intercept else "")
            return (f"method {cls.name!r} needs the L2 regularizer (lam/2)||w||^2{what}, got "
                    f"{type(reg).__name__}; use {_OTHERS}, which take any regularizer")
        if _kind(problem.loss) is None:
            return (f"method {cls.name!r} needs a Hinge, SquaredHinge or Logistic loss (a margin "
                    f"loss whose conjugate it steps along), got {type(problem.loss).__name__}; "
                    f"use {_OTHERS}")
        return None

    class State(NamedTuple):
        w: np.ndarray              # x = w(t) (and b) at the last check (the point evaluated)
        t: np.ndarray              # the dual point, updated in place by the epochs
        lower_bound: float         # D(t) at the best check: a valid lower bound on J*
        evidence: object           # its proof: DualPoint(t) (a copy)
        epochs: int                # passes made
        n_active: int              # examples not shrunk
        work: object               # _Plain or _Work: the kernel's arrays (mutated in place)
        w_best: np.ndarray | None  # without an intercept: the point of the last check, ...
        fun_best: float            # ... valued by the check's own pass (settled by the loop)
        nit_checks: int = 0        # checks made (the small problems' check period grows with it)
        sets: bytes | None = None  # the exact finish: the sets of the dual point at the last
        tried: bytes | None = None  # check, and the sets last tried
        n_exact: int = 0           # exact finishes tried
        visits: float = 0.0        # nonzeros the epochs visited, ...
        exact_cost: float = 0.0    # ... and the exact finishes' estimated cost in visits

    # ------------------------------------------------------------------------------------
    def init(self, problem, x0):
        loss, lam = problem.loss, problem.lam
        # the fallback answer J(x0); at the usual x0 = 0 the scores are 0 without the pass X x0
        if getattr(loss, "scores_supported", False) and not np.any(x0):
            problem.evaluate(x0, scores=np.zeros(loss.m))
        else:
            problem.evaluate(x0)
        risk = problem.problem                         # behind the loop's counting wrapper
        kind = _kind(loss)
        m = loss.m
        d = loss.dim - risk.n_intercepts
        dm = risk.base_loss.data if risk.fit_intercept else loss.data
        # dense rows are copied to CSR once (1.5x their memory): one kernel, no branch per row
        csr = dm.csr if dm.sparse else sp.csr_matrix(np.asarray(dm.X, dtype=np.float64))
        if csr.data.dtype != np.float64:
            csr = csr.astype(np.float64)
        sq = K.row_norms_sq(csr.indptr, csr.data)
        c, y = loss.c, np.ascontiguousarray(loss.y, dtype=np.float64)
        index = np.flatnonzero(c > 0).astype(np.int64)
        t = np.zeros(m)
        tc = np.ones(m)
        shrink = np.array([index.size, math.inf, -math.inf, _SHRINK_EPS0,
                           (2.0 if _KEEP_FULL else 1.0) if self.shrinking else 0.0])
        seed = (self.random_state * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) % 2**64
        rng = np.array([seed or 1], dtype=np.uint64)
        w = np.zeros(d)
        nnz = max(int(csr.indptr[-1]), 1)
        if not risk.fit_intercept:
            if kind == 2:
                t[index], tc[index] = 1e-8, 1.0 - 1e-8
                w = np.asarray(csr.T @ (c * y * t), dtype=np.float64).reshape(-1) / lam  # w(t)
            ex = K.pack_examples(y, np.asarray(c, dtype=np.float64), sq, float(lam), t, tc)
            sums = np.zeros(4)
            K.resync(kind, ex, sums, w, index, index.size)
            work = _Plain(kind, csr.indptr, csr.indices, csr.data, ex, w, index, shrink, sums,
                          np.zeros(d), rng, nnz, float(lam),
                          np.array([_ESTIMATE_FACTOR, math.inf, 1.0]),
                          bool(getattr(loss, "scores_supported", False)))
            # t = 0 (logistic: 1e-8) proves little: the first bound is the first check's
            return self.State(w=None, t=ex[:, K.EX_T], lower_bound=-math.inf, evidence=None,
                              epochs=0, n_active=index.size, work=work, w_best=None,
                              fun_best=math.inf)
        pos, neg = float(c[y > 0].sum()), float(c[y < 0].sum())
        if kind == 2 and (pos == 0.0 or neg == 0.0):
            raise ValueError(
                "the logistic loss with fit_intercept=True has no minimiser when every "
                "example of positive weight has the same label (the intercept runs to "
                f"{'+' if neg == 0.0 else '-'}inf and J to its infimum 0): give examples "
                "of both classes, or fit_intercept=False")
        if kind == 2:  # inside (0, 1) and on the equality: t_i = 1e-8 min(pos, neg) / C_{y_i}
            t[index] = 1e-8 * min(pos, neg) / np.where(y[index] > 0, pos, neg)
            tc[index] = 1.0 - t[index]
        args = (kind, csr.indptr, csr.indices, csr.data, y, np.asarray(c, dtype=np.float64),
                sq, float(lam), t, tc, w, index, shrink)
        tail = (np.zeros(m), np.full((2, _N_CANDIDATES), -1, dtype=np.int64),
                np.array([np.inf, -np.inf]), np.zeros(d))
        work = _Work(_pair_epochs, args, rng, tail, w, nnz, t, tc)
        empty = self.State(w=None, t=t, lower_bound=-math.inf, evidence=None, epochs=0,
                           n_active=index.size, work=work, w_best=None, fun_best=math.inf)
        return self._check(problem, empty, evaluate=False)

    def step(self, problem, s):
        wk = s.work
        if isinstance(wk, _Plain):
            return self._step_plain(problem, s)
        if self.check_every is not None:
            n_active, _ = wk.kernel(*wk.args, self.check_every, wk.rng, *wk.tail)
            n = self.check_every
        else:  # epochs until their nonzeros visited reach those of a check's three passes
            need, n = 3 * wk.nnz, 0
            while need > 0:
                n_active, visited = wk.kernel(*wk.args, 1, wk.rng, *wk.tail)
                need -= max(visited, 1)
                n += 1
        return self._check(problem, s._replace(epochs=s.epochs + n, n_active=int(n_active)))

    def _step_plain(self, problem, s):
        """Epochs until the gap estimate says a check may succeed (or ``check_every`` epochs),
        then the check: one fused pass."""
        pk = s.work
        if self.check_every is not None:
            max_epochs, max_work, rel, abs_ = self.check_every, _NO_CAP, -math.inf, -math.inf
        elif pk.nnz < _ESTIMATE_MIN_NNZ:  # small: a check costs its Python overhead, not a pass
            max_epochs, rel, abs_ = _NO_CAP, -math.inf, -math.inf
            max_work = _small_check_work(pk.nnz, s.nit_checks)
        else:
            f = float(pk.adapt[0])
            max_epochs, max_work = _NO_CAP, _CHECK_PERIOD * pk.nnz
            rel, abs_ = f * self.rtol, f * self.atol
        n, n_active, visited, estimate = K.epochs(
            pk.kind, pk.indptr, pk.indices, pk.data, pk.ex, pk.w, pk.index, pk.shrink, pk.sums,
            pk.v, pk.lam, pk.rng, max_epochs, max_work, rel, abs_, _PREFETCH)
        s = self._check_plain(problem, s._replace(epochs=s.epochs + int(n),
                                                  n_active=int(n_active),
                                                  nit_checks=s.nit_checks + 1,
                                                  visits=s.visits + float(visited)))
        pk.adapt[1] = min(pk.adapt[1], s.fun_best)
        if self.exact_finish and pk.kind != 2 and pk.own_value and pk.w.size <= _EXACT_MAX_DIM:
            s = self._exact_finish(problem, s)
            pk.adapt[1] = min(pk.adapt[1], s.fun_best)
        if rel > -math.inf:
            best = float(pk.adapt[1])   # the loop's view: the best value, the best bound
            triggered = abs(estimate) <= max(abs_, rel * abs(best))
            if triggered and best - s.lower_bound > max(self.atol, self.rtol * abs(best)):
                # the estimate was optimistic: ask more of it before the next check
                pk.adapt[0] = max(pk.adapt[0] * _ESTIMATE_BACKOFF, _ESTIMATE_FACTOR_MIN)
            elif not triggered and pk.adapt[2] < 1.0:
                # a check by the work cap found the scaled point's gap (what the check offers)
                # a share ``gain`` of x's (what the estimate follows): ask that much less of it
                pk.adapt[0] = max(pk.adapt[0], min(_ESTIMATE_FACTOR / pk.adapt[2],
                                                   _ESTIMATE_FACTOR_MAX))
        return s

    def _check_plain(self, problem, s):
        r"""The exact check without an intercept, in one pass over the rows: the dual plane of
        ``t`` (clipped into its box: a copy, the evidence's own), its bound
        :math:`b - \lambda\Omega^*(-a/\lambda)`, and :math:`J` at the running ``w``
        (the epochs' :math:`w(t)` up to rounding: any point is a valid upper bound); then
        ``w`` is reset to :math:`-a/\lambda` (no drift carried on)."""
        pk, lam = s.work, problem.lam
        t = np.empty(pk.ex.shape[0])
        a = np.empty(pk.w.size)
        b, risk = K.check_pass(pk.kind, pk.indptr, pk.indices, pk.data, pk.ex, pk.w, a, t)
        x = pk.w.copy()
        lower = float(b) - scaled_conjugate(problem.reg, a, lam)
        closing = False
        if pk.own_value:
            fun = float(risk) + lam * float(problem.reg.value(x))
            tol = max(self.atol, self.rtol * abs(fun))
            scale = 1.0
            if _SCALE_PRIMAL and fun - max(lower, s.lower_bound) > tol:
                # the best multiple of x, from the pass's margins (no data pass)
                sc, r_sc = K.best_scale(pk.kind, pk.ex, float(lam), float(x @ x),
                                        _SCALE_RANGE[0], _SCALE_RANGE[1], _SCALE_TRIALS)
                if sc != 1.0:
                    x_sc = x * sc
                    fun_sc = float(r_sc) + lam * float(problem.reg.value(x_sc))
                    if fun_sc < fun:
                        below = max(lower, s.lower_bound)
                        pk.adapt[2] = max(fun_sc - below, 0.0) / (fun - below)
                        x, fun, scale = x_sc, fun_sc, sc
                        tol = max(self.atol, self.rtol * abs(fun))
            # the check that closes the gap: x is the answer, valued by the oracle now from
            # the pass's scores <x_i, x> = y_i z_i (half a pass: X^T g) instead of the loop's
            # settling call at the end (a whole one)
            closing = fun <= pk.adapt[1] and fun - max(lower, s.lower_bound) <= tol
            if closing:
                scores = pk.ex[:, K.EX_Y] * pk.ex[:, K.EX_Z]
                if scale != 1.0:
                    scores *= scale
        np.multiply(a, -1.0 / lam, out=pk.w)
        K.resync(pk.kind, pk.ex, pk.sums, pk.w, pk.index, int(pk.shrink[0]))
        if closing:
            fun = float(problem.evaluate(x, scores=scores).fun)
            s = s._replace(w=x, w_best=None, fun_best=fun)
        elif pk.own_value:
            s = s._replace(w=x, w_best=x, fun_best=fun)
        else:  # a loss that overrides its oracle: valued by the oracle, not by the kernel's phi
            fun = float(problem.evaluate(x).fun)
            s = s._replace(w=x, w_best=None, fun_best=fun)
        if lower >= s.lower_bound:
            return s._replace(lower_bound=lower, evidence=DualPoint(t, plane=(a, float(b))))
        return s

    def _exact_finish(self, problem, s):
        r"""Finite termination at small d: when the dual point's sets (at 0, at the upper
        bound, between) are those of the previous check and not tried yet, and the gap is
        open, the free examples' multipliers are solved exactly for these sets
        (:func:`_exact_free`) and the resulting dual point is checked by one exact pass (the
        same :func:`~._dcd_kernels.check_pass` as every check: its bound is the one
        :meth:`~nsopt.Certificate.check` recomputes). Offered only when it closes the gap;
        the epochs' state is left as it was either way. Without this, at small lam
        coordinate descent approaches the optimal free multipliers linearly with a rate near
        1 long after the sets are right (200 x 5 Gaussian hinge, lam 1e-6: the sets of the
        end are those of epoch 361,690 of 851,032)."""
        pk, lam = s.work, problem.lam
        tol = max(self.atol, self.rtol * abs(float(pk.adapt[1])))
        if float(pk.adapt[1]) - s.lower_bound <= tol:
            return s
        ex = pk.ex
        t = ex[:, K.EX_T]
        c = ex[:, K.EX_C]
        upper = 1.0 if pk.kind == 0 else math.inf
        status = np.where(t <= 0.0, 0, np.where(t >= upper, 2, 1)).astype(np.int8)
        status[c <= 0.0] = 3
        sets = status.tobytes()
        same = sets == s.sets
        s = s._replace(sets=sets)
        if not same or sets == s.tried:
            return s
        # the free examples, and those at a bound whose last margin z (the check's pass)
        # points out of it: the box QP decides where each of them ends
        z = ex[:, K.EX_Z]
        free = np.flatnonzero((status == 1) | ((status == 0) & (z < 1.0))
                              | ((status == 2) & (z > 1.0)))
        cost = _EXACT_COST * float(free.size) ** 3
        if (free.size == 0 or free.size > _EXACT_MAX_FREE
                or s.exact_cost + cost > s.visits + _EXACT_COST * _EXACT_FREE_TRY ** 3):
            return s
        s = s._replace(tried=sets, n_exact=s.n_exact + 1, exact_cost=s.exact_cost + cost)
        csr = sp.csr_matrix((pk.data, pk.indices, pk.indptr), shape=(t.size, pk.w.size))
        y = ex[:, K.EX_Y]
        at_up = (status == 2).astype(np.float64)
        at_up[free] = 0.0
        g_U = np.asarray(csr.T @ (c * y * at_up), dtype=np.float64).reshape(-1)
        A_F = csr[free].toarray() * y[free, None]
        u = _exact_free(pk.kind, A_F, c[free], g_U, float(lam))
        if u is None:
            return s
        ex2 = ex.copy()
        t_new = np.where(status == 2, 1.0, 0.0)
        t_new[free] = u / c[free]
        ex2[:, K.EX_T] = t_new
        ex2[:, K.EX_TC] = 1.0 - t_new
        w = np.asarray(csr.T @ (c * y * t_new), dtype=np.float64).reshape(-1) / lam
        a = np.empty(w.size)
        tt = np.empty(t.size)
        b, risk = K.check_pass(pk.kind, pk.indptr, pk.indices, pk.data, ex2, w, a, tt)
        lower = float(b) - scaled_conjugate(problem.reg, a, lam)
        if pk.kind == 0:
            # w(t) carries the multipliers' rounding times 1/lam: the point that puts the
            # free examples' margins back on the kink (least-norm correction) is valued too,
            # and the better kept (any point is an upper bound; the bound is t's alone)
            inner = np.flatnonzero((t_new > 0.0) & (t_new < 1.0))
            if inner.size:
                A_in = csr[inner].toarray() * y[inner, None]
                w2 = w + np.linalg.lstsq(A_in, 1.0 - A_in @ w, rcond=None)[0]
                if np.all(np.isfinite(w2)):
                    ex3 = ex2.copy()
                    _, risk2 = K.check_pass(pk.kind, pk.indptr, pk.indices, pk.data, ex3, w2,
                                            np.empty(w.size), np.empty(t.size))
                    if (float(risk2) + lam * float(problem.reg.value(w2))
                            < float(risk) + lam * float(problem.reg.value(w))):
                        w, risk, ex2 = w2, risk2, ex3
        fun = float(risk) + lam * float(problem.reg.value(w))
        if not (math.isfinite(fun) and math.isfinite(lower)):
            return s
        tol = max(self.atol, self.rtol * abs(fun))
        if fun - max(lower, s.lower_bound) > tol:
            return s          # not these sets: the epochs go on from where they were
        fun = float(problem.evaluate(w, scores=ex2[:, K.EX_Y] * ex2[:, K.EX_Z]).fun)
        s = s._replace(w=w, w_best=None, fun_best=fun)
        if lower >= s.lower_bound:
            s = s._replace(lower_bound=lower, evidence=DualPoint(tt, plane=(a, float(b))))
        return s

    def _check(self, problem, s, evaluate=True):
        """With an intercept: the bound of ``t`` made exactly feasible, ``w(t)`` reset from it
        and valued with the best intercept for that ``w``."""
        loss, lam = problem.loss, problem.lam
        wk = s.work
        t = np.clip(s.t, 0.0, loss.dual_upper)             # a copy: the evidence's own
        _balance(t, loss.c, loss.y)
        # the running point takes the repair too (it moves by rounding only)
        np.add(wk.tc, s.t - t, out=wk.tc)
        s.t[:] = t
        a, b = loss.dual_plane(t)
        lower = b - scaled_conjugate(problem.reg, a, lam)  # - B |a_b|
        w_run = wk.w
        np.multiply(a[:w_run.size], -1.0 / lam, out=w_run)  # w(t), without the epochs' drift
        x, scores = _with_best_intercept(problem, w_run.copy())
        if evaluate:
            problem.evaluate(x, scores=scores)       # the loop keeps the best value
        if lower >= s.lower_bound:
            return s._replace(w=x, lower_bound=float(lower),
                              evidence=DualPoint(t, plane=(a, float(b))))
        return s._replace(w=x)

    def info(self, s):
        return {"epochs": s.epochs, "n_active": s.n_active, "n_exact": s.n_exact}
