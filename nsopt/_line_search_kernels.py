r"""Compiled line search of a piecewise-linear function plus a quadratic, without a sort.

The line of an L2-regularized hinge-type risk, :math:`\varphi(\eta) = R(w + \eta p) +
\lambda\Omega(w + \eta p)`, has a derivative that is a step function (a jump at each
example's kink) plus an affine part. Its minimiser on :math:`[lo, hi]` is where that
nondecreasing derivative turns nonnegative. OCAS (Franc & Sonnenburg, 2009) sorts the
breakpoints and sweeps them; :func:`first_crossing` finds the same breakpoint by a
selection (quickselect on the breakpoints, tracking the jumps below the pivot), O(n)
expected, and then the root on its piece in closed form.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["first_crossing"]


@njit(cache=True)
def _partition3(b, s, lo, hi, pivot):
    """Reorder ``b[lo:hi]`` (and ``s`` alongside) into ``< pivot``, ``== pivot``, ``> pivot``;
    return the two borders and the sums of ``s`` over the first two parts."""
    i, lt, gt = lo, lo, hi
    sum_lt, sum_eq = 0.0, 0.0
    while i < gt:
        v = b[i]
        if v < pivot:
            b[i], b[lt] = b[lt], b[i]
            s[i], s[lt] = s[lt], s[i]
            sum_lt += s[lt]
            lt += 1
            i += 1
        elif v > pivot:
            gt -= 1
            b[i], b[gt] = b[gt], b[i]
            s[i], s[gt] = s[gt], s[i]
        else:
            sum_eq += s[i]
            i += 1
    return lt, gt, sum_lt, sum_eq


@njit(cache=True)
def first_crossing(etas, jumps, lo, hi, d0, slope, tol):  # pragma: no cover - compiled
    r"""A minimiser on ``[lo, hi]`` of the convex :math:`\varphi` with

    .. math:: \varphi'(\eta^+) = d_0 + \sum_{lo < \eta_i \le \eta} j_i + s\,(\eta - lo),
              \qquad d_0 = \varphi'(lo^+) < 0,\ j_i \ge 0,\ s \ge 0.

    The smallest breakpoint :math:`v` with :math:`\varphi'(v^+) \ge -tol` (``tol``: the
    rounding of the running sums, so that a derivative that is 0 past the last kink in exact
    arithmetic is not taken for negative) is found by
    quickselect (pivots from a fixed pseudo-random sequence: reproducible); the minimiser is
    :math:`v` if :math:`\varphi'(v^-) \le 0`, else the root :math:`v - \varphi'(v^-)/s` of the
    affine piece before it. Past the last breakpoint, the root of the last piece, or ``hi``
    (``inf`` on an unbounded ray along which :math:`\varphi` decreases)."""
    n = etas.shape[0]
    b = np.empty(n)
    s = np.empty(n)
    k = 0
    for i in range(n):
        e = etas[i]
        if e > lo and e < hi:  # NaN and out-of-range breakpoints are not reached
            b[k] = e
            s[k] = jumps[i]
            k += 1
    first, last = 0, k          # candidates b[first:last]; all below them are passed
    below = d0                  # d0 + jumps of the passed breakpoints
    best = math.inf             # smallest v with phi'(v+) >= 0 so far
    best_left = 0.0             # phi'(best-)
    state = np.uint64(0x9E3779B97F4A7C15)
    while first < last:
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        pivot = b[first + int(state % np.uint64(last - first))]
        lt, gt, sum_lt, sum_eq = _partition3(b, s, first, last, pivot)
        at_pivot = below + sum_lt + sum_eq + slope * (pivot - lo)
        if at_pivot >= -tol:
            best, best_left = pivot, at_pivot - sum_eq
            last = lt
        else:
            below += sum_lt + sum_eq
            first = gt
    # every breakpoint below ``best`` is passed: on the piece before it (after the last
    # breakpoint, if there is no best) phi'(eta) = below + slope (eta - lo), whose root is
    # taken from lo's side (best - phi'(best-)/slope cancels catastrophically at a far kink)
    if best < math.inf and (best_left <= 0 or slope <= 0):
        return best
    if slope > 0:
        return min(max(lo - below / slope, lo), best, hi)
    return hi
