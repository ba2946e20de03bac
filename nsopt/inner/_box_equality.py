r"""Euclidean projection onto a box intersected with one hyperplane, in O(n) ([SZV09]_ App. B).

.. math::
    \min_\alpha\ \tfrac12 \sum_i d_i^2 (\alpha_i - m_i)^2 \quad\text{s.t.}\quad
    l_i \le \alpha_i \le u_i,\qquad \sum_i \sigma_i \alpha_i = z .

KKT ([SZV09]_ App. B, eqs. 27-30, with the multiplier :math:`\nu` of the equality): the solution is
:math:`\alpha_i(\nu) = \mathrm{clip}(m_i + \nu\sigma_i / d_i^2,\ l_i,\ u_i)` where :math:`\nu`
is a root of the nondecreasing piecewise-linear function
:math:`f(\nu) = \sum_i \sigma_i\alpha_i(\nu) - z`, whose kinks are
:math:`\nu = d_i^2 (l_i - m_i)/\sigma_i` and :math:`d_i^2 (u_i - m_i)/\sigma_i`.

:func:`project_box_equality` finds the root by median search over the kinks ([SZV09]_ Alg. 2,
after Pardalos and Kovoor) with the slope/offset aggregation that makes it O(n): the bracket
``(a, b)`` of the root shrinks to one side of the median kink; an index whose kinks both lie
outside the open bracket contributes a constant or an affine term on the whole bracket and is
folded into ``C + S nu`` and never visited again; only kinks *strictly inside* the bracket are
candidates, so repeated kinks (ties) cannot stall the loop (the printed Alg. 2 can loop forever
on them). The pivot is the median of the candidate kinks, exact
when there are few and otherwise of a random sample of them (randomized selection), so each
round costs O(candidates), the expected fraction left after a round is bounded away from 1,
and the expected total work is O(n) (about 2-3 visits per index in practice).

:func:`project_box_equality_bisect` is the plain bisection on :math:`f` used as the reference
by the tests, and :func:`project_simplex_rows` projects each row of a matrix onto a scaled
simplex (the special case :math:`\sigma = 1, l = 0, z = c_i`, sort-based per row).

References
----------
.. [SZV09] A. Saha, X. Zhang, S. V. N. Vishwanathan. Lower bounds for BMRM and faster rates for
   training SVMs. arXiv:0909.1334, 2009. Appendix B, Algorithm 2.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._linalg import kernel_input

__all__ = ["project_box_equality", "project_box_equality_bisect", "project_simplex_rows"]


# ----------------------------------------------------------------------------------------
# compiled core
# ----------------------------------------------------------------------------------------
@njit(cache=True)
def _xorshift(state):
    x = state[0]
    x ^= (x << np.uint64(13)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x ^= x >> np.uint64(7)
    x ^= (x << np.uint64(17)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    state[0] = x
    return x


@njit(cache=True)
def _clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


_SAMPLE = 63  # kinks per round sampled for the pivot (all of them below twice this)


@njit(cache=True)
def _root(m, r, lower, upper, sigma, z, count):
    """The multiplier nu with sum_i sigma_i clip(m_i + nu r_i, l_i, u_i) = z (r_i = sigma_i / d_i^2,
    every sigma_i != 0).

    Median search with aggregation. Each round (1) folds every index without a kink strictly
    inside the bracket (a, b) into ``C + S nu`` and compacts the others to the front of the
    work arrays (sequential passes, no gathers); (2) takes as pivot the median of the kinks
    inside the bracket, exactly when there are few, else of a random sample of them
    (randomized selection: the expected fraction of candidates left is bounded away from 1,
    so the expected total work is O(n)); (3) evaluates f at the pivot and keeps the side of
    the bracket holding the root. The pivot is itself a candidate and leaves the open bracket,
    so repeated kinks cannot stall the loop. ``count[0]`` accumulates index visits.
    """
    n = m.shape[0]
    lo_k = np.empty(n)
    hi_k = np.empty(n)
    mm = m.copy()
    rr = r.copy()
    ll = lower.copy()
    uu = upper.copy()
    ss = sigma.copy()
    for i in range(n):
        t1 = (ll[i] - mm[i]) / rr[i]
        t2 = (uu[i] - mm[i]) / rr[i]
        lo_k[i] = min(t1, t2)
        hi_k[i] = max(t1, t2)
    count[0] += n
    n_act = n
    sample = np.empty(4 * _SAMPLE + 2)
    state = np.ones(1, dtype=np.uint64)
    state[0] = np.uint64(0x9E3779B97F4A7C15)
    a, b = -math.inf, math.inf
    C, S = 0.0, 0.0
    while True:
        # (1) fold every index without a kink strictly inside (a, b) into C + S nu
        keep = 0
        n_k = 0
        for i in range(n_act):
            lo, hi = lo_k[i], hi_k[i]
            if hi <= a:    # both kinks left of the bracket: at its upper end on (a, b)
                C += max(ss[i] * ll[i], ss[i] * uu[i])
            elif lo >= b:  # both right of it: at its lower end
                C += min(ss[i] * ll[i], ss[i] * uu[i])
            elif lo <= a and hi >= b:  # free on the whole bracket: affine
                C += ss[i] * mm[i]
                S += ss[i] * rr[i]
            else:
                if keep != i:
                    lo_k[keep] = lo
                    hi_k[keep] = hi
                    mm[keep] = mm[i]
                    rr[keep] = rr[i]
                    ll[keep] = ll[i]
                    uu[keep] = uu[i]
                    ss[keep] = ss[i]
                keep += 1
                n_k += (a < lo) + (hi < b)
        count[0] += n_act
        n_act = keep
        if n_k == 0:
            break
        # (2) pivot: a median of the candidate kinks (all of them, or a random sample)
        n_s = 0
        if n_act <= 2 * _SAMPLE:
            for i in range(n_act):
                if a < lo_k[i]:
                    sample[n_s] = lo_k[i]
                    n_s += 1
                if hi_k[i] < b:
                    sample[n_s] = hi_k[i]
                    n_s += 1
        else:
            for _ in range(_SAMPLE):
                i = np.int64(_xorshift(state) % np.uint64(n_act))
                if a < lo_k[i]:
                    sample[n_s] = lo_k[i]
                    n_s += 1
                if hi_k[i] < b:
                    sample[n_s] = hi_k[i]
                    n_s += 1
        srt = np.sort(sample[:n_s])
        p = srt[n_s // 2]
        # (3) f(p) and the new bracket
        fp = C + S * p - z
        for i in range(n_act):
            fp += ss[i] * _clip(mm[i] + p * rr[i], ll[i], uu[i])
        count[0] += n_act
        if fp == 0.0:
            return p
        if fp > 0.0:
            b = p
        else:
            a = p
    # f is affine on (a, b): C + S nu - z
    if S > 0.0:
        nu = (z - C) / S
        return min(max(nu, a), b)
    # flat at zero on (a, b): any point of it is a root
    if math.isfinite(a):
        return a
    if math.isfinite(b):
        return b
    return 0.0


@njit(cache=True)
def _project(m, sigma, dinv2, lower, upper, z, out, count):
    n = m.shape[0]
    idx = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if sigma[i] == 0.0:
            out[i] = _clip(m[i], lower[i], upper[i])
        else:
            idx[k] = i
            k += 1
    if k == 0:
        return 0.0
    mm = np.empty(k)
    rr = np.empty(k)
    ll = np.empty(k)
    uu = np.empty(k)
    ss = np.empty(k)
    for j in range(k):
        i = idx[j]
        mm[j] = m[i]
        rr[j] = sigma[i] * dinv2[i]
        ll[j] = lower[i]
        uu[j] = upper[i]
        ss[j] = sigma[i]
    nu = _root(mm, rr, ll, uu, ss, z, count)
    for j in range(k):
        i = idx[j]
        out[i] = _clip(mm[j] + nu * rr[j], ll[j], uu[j])
    return nu


@njit(cache=True)
def _simplex_rows(V, totals, out):
    m, k = V.shape
    for i in range(m):
        z = totals[i]
        if z <= 0.0:
            for j in range(k):
                out[i, j] = 0.0
            continue
        u = np.sort(V[i])[::-1]
        css = 0.0
        theta = 0.0
        for j in range(k):
            css += u[j]
            t = (css - z) / (j + 1)
            if u[j] - t > 0.0:
                theta = t
        for j in range(k):
            x = V[i, j] - theta
            out[i, j] = x if x > 0.0 else 0.0


# ----------------------------------------------------------------------------------------
# public functions
# ----------------------------------------------------------------------------------------
def _arrays(m, sigma, lower, upper, weights):
    m = np.ascontiguousarray(m, dtype=np.float64).ravel()
    n = m.size
    if n == 0:
        raise ValueError("cannot project an empty vector")
    full = lambda v, name: np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)))
    sigma, lower, upper = full(sigma, "sigma"), full(lower, "lower"), full(upper, "upper")
    d = np.ones(n) if weights is None else full(weights, "weights")
    if not np.isfinite(m).all():
        raise ValueError("the point to project must be finite")
    if not np.isfinite(sigma).all():
        raise ValueError("sigma must be finite")
    if np.isnan(lower).any() or np.isnan(upper).any() or (lower > upper).any():
        raise ValueError("need lower <= upper elementwise (no NaN)")
    if (lower == np.inf).any() or (upper == -np.inf).any():
        raise ValueError("lower must be < +inf and upper > -inf")
    if not (np.isfinite(d).all() and (d != 0).all()):
        raise ValueError("weights must be finite and nonzero")
    return m, sigma, lower, upper, 1.0 / (d * d)


def _check_feasible(sigma, lower, upper, z):
    with np.errstate(invalid="ignore"):
        s1, s2 = sigma * lower, sigma * upper
    s1 = np.where(sigma == 0, 0.0, s1)
    s2 = np.where(sigma == 0, 0.0, s2)
    lo, hi = np.minimum(s1, s2).sum(), np.maximum(s1, s2).sum()
    tol = 1e-12 * (1.0 + np.abs(s1[np.isfinite(s1)]).sum() + np.abs(s2[np.isfinite(s2)]).sum())
    if not (lo - tol <= z <= hi + tol):
        raise ValueError(
            f"the set is empty: sum_i sigma_i alpha_i ranges over [{lo}, {hi}] on the box, "
            f"which does not contain z = {z}"
        )


def project_box_equality(m, sigma, lower, upper, total=0.0, *, weights=None,
                         return_multiplier=False, _count=None):
    r"""Project ``m`` onto :math:`\{l \le \alpha \le u,\ \sum_i \sigma_i\alpha_i = z\}` in O(n).

    .. math:: \arg\min_\alpha \tfrac12\sum_i d_i^2(\alpha_i - m_i)^2 \ \text{ s.t. }\
              l \le \alpha \le u,\ \sigma^T\alpha = z

    Parameters
    ----------
    m : array (n,)
        The point to project (finite).
    sigma : array (n,) or float
        Coefficients of the equality; ``sigma_i = 0`` decouples ``alpha_i`` (plain clipping).
    lower, upper : array (n,) or float
        Bounds, ``lower <= upper``; infinite bounds are allowed.
    total : float
        :math:`z`; the set must be nonempty (else ``ValueError``).
    weights : array (n,) or float, optional
        :math:`d_i \ne 0` of the weighted norm (default 1).
    return_multiplier : bool
        Also return :math:`\nu` with :math:`\alpha_i = \mathrm{clip}(m_i + \nu\sigma_i/d_i^2,
        l_i, u_i)` (the KKT certificate).

    Returns
    -------
    alpha : ndarray (n,) [, nu : float]

    Notes
    -----
    Median search over the kinks with slope/offset aggregation ([SZV09]_ Alg. 2, corrected for
    repeated kinks): O(n) expected (pivot: median of a random sample of the kinks), a few
    dozen rounds at most; about 6-7 index visits per element in total.

    Examples
    --------
    >>> import numpy as np
    >>> a = project_box_equality([0.9, 0.2, 0.5], sigma=[1, -1, -1], lower=0, upper=0.5)
    >>> a.round(12).tolist(), round(float(a @ [1, -1, -1]), 12)
    ([0.5, 0.1, 0.4], 0.0)
    """
    m, sigma, lower, upper, dinv2 = _arrays(m, sigma, lower, upper, weights)
    z = float(total)
    if not math.isfinite(z):
        raise ValueError(f"total must be finite, got {z}")
    _check_feasible(sigma, lower, upper, z)
    out = np.empty_like(m)
    count = np.zeros(1, dtype=np.int64) if _count is None else _count
    m, sigma, dinv2, lower, upper = map(kernel_input, (m, sigma, dinv2, lower, upper))
    nu = _project(m, sigma, dinv2, lower, upper, z, out, count)
    return (out, float(nu)) if return_multiplier else out


def project_box_equality_bisect(m, sigma, lower, upper, total=0.0, *, weights=None,
                                max_iter=2000):
    """Reference projection by plain bisection on the multiplier (for tests): same problem
    and return value as :func:`project_box_equality`, O(n) per bisection step."""
    m, sigma, lower, upper, dinv2 = _arrays(m, sigma, lower, upper, weights)
    z = float(total)
    _check_feasible(sigma, lower, upper, z)
    r = sigma * dinv2
    free = sigma != 0
    out = np.clip(m, lower, upper)
    if not free.any():
        return out
    m_, r_, l_, u_, s_ = m[free], r[free], lower[free], upper[free], sigma[free]

    def f(nu):
        return float(s_ @ np.clip(m_ + nu * r_, l_, u_)) - z

    with np.errstate(invalid="ignore", divide="ignore"):
        kinks = np.concatenate([(l_ - m_) / r_, (u_ - m_) / r_])
    kinks = kinks[np.isfinite(kinks)]
    if kinks.size == 0:  # no finite bound: f is affine
        return np.where(free, m + ((z - s_ @ m_) / (s_ @ r_)) * r, out)
    a, b = kinks.min() - 1.0, kinks.max() + 1.0
    for _ in range(64):  # beyond the finite kinks f is affine (constant without infinite bounds)
        if not f(a) > 0:
            break
        a -= 2 * (b - a)
    for _ in range(64):
        if not f(b) < 0:
            break
        b += 2 * (b - a)
    for _ in range(max_iter):
        mid = 0.5 * (a + b)
        if not a < mid < b:
            break
        if f(mid) > 0:
            b = mid
        else:
            a = mid
    nu = 0.5 * (a + b)
    out[free] = np.clip(m_ + nu * r_, l_, u_)
    return out


def project_simplex_rows(V, totals) -> np.ndarray:
    r"""Project each row :math:`v_i` of ``V`` (m x k) onto :math:`\{\alpha \ge 0,\ \sum_j
    \alpha_j = t_i\}` (``totals`` :math:`t_i \ge 0`; a zero total gives a zero row).

    Sort-based per row (Held, Wolfe and Crowder 1974; Duchi et al. 2008), O(m k log k);
    compiled, for the per-example dual sets of multiclass hinge losses.
    """
    V = np.ascontiguousarray(V, dtype=np.float64)
    if V.ndim != 2:
        raise ValueError(f"V must be a matrix (m x k), got shape {V.shape}")
    totals = np.ascontiguousarray(np.broadcast_to(np.asarray(totals, dtype=np.float64), (V.shape[0],)))
    if (totals < 0).any():
        raise ValueError("totals must be nonnegative")
    out = np.empty_like(V)
    _simplex_rows(V, totals, out)
    return out
