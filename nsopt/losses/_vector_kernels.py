r"""Compiled kernels (numba) of the vector losses: matrix data passes and per-example math.

Data passes (sparse data; dense data uses BLAS through numpy), each also compiled serially
(``*_serial``): :class:`~nsopt.losses._vector_base.VectorLoss` uses the threaded ones only when the
pass has at least ``PARALLEL_MIN_NNZ`` (of :mod:`nsopt.losses._kernels`) multiply-adds:

``csr_matmat(indptr, indices, data, W, out)``
    ``out = X @ W`` (m x k) over CSR rows, parallel over rows;
``csc_rmatmat(indptr, indices, data, G, out)``
    ``out = X.T @ G`` (d x k) over CSC columns, parallel over columns (no write conflicts);
``csc_pull_pairs``, ``dense_pull_pairs``
    ``X.T @ G`` when every row of ``G`` is ``coef_i (e_plus_i - e_minus_i)``.

Per-example kernels. The scores on a line are :math:`Z = F + \eta Q` (``F = XW``,
``Q = XP``; ``eta = 0`` and ``Q = F`` give the scores at ``W``). Each loss has:

``value(F, Q, eta, ...) -> float``
    :math:`\sum_i c_i\, l(z_i, y_i)`;
``grad(F, Q, eta, ..., G) -> float`` (smooth losses)
    the same value, and row ``i`` of ``G`` is :math:`c_i \nabla_z l(z_i, y_i)`;
``pairs(F, Q, eta, ..., side, tie_rtol, plus, minus, coef) -> float`` (hinge-type losses)
    the same value, and an element :math:`G_i = \mathrm{coef}_i (e_{\mathrm{plus}_i} -
    e_{\mathrm{minus}_i})` of :math:`c_i\,\partial_z l(z_i, y_i)`, at most two nonzero classes
    ([TVSL10]_ App. A.4.1): the default one for ``side == 0``, the one steepest along
    :math:`+q_i` (``side == 1``, attaining the right derivative) or :math:`-q_i`
    (``side == -1``, attaining the left derivative); ``X^T G`` then costs O(nnz), not O(nnz k);
``slope(F, Q, eta, ...) -> float`` (smooth losses)
    :math:`\sum_i c_i\, \partial_\eta l(z_i(\eta), y_i)`, without forming ``G``;
``events(F, Q, ..., c, kinks, jumps) -> (n, base)`` (hinge-type losses)
    writes the kinks of :math:`\eta \mapsto l(f_i + \eta q_i, y_i)` for every example of
    positive weight into ``kinks[:n]`` (unsorted across examples, sorted within one) and the
    jump of :math:`c_i\,\partial_\eta l` there into ``jumps[:n]``; ``base`` is the slope of the
    whole sum at :math:`\eta \to -\infty`. The line's derivative at any :math:`\eta` is then
    ``base`` plus the jumps at the kinks left of it: a binary search instead of an O(m k)
    pass ([YVGS10]_ Alg. 5 walks the same events);
``events_window(F, Q, ..., c, lo, hi, kinks, jumps) -> (n, slope at lo+)`` (margin losses)
    the same for the kinks in ``(lo, hi]`` only, counted from the oracle's right derivative at
    ``lo``: an exact search that stops early needs no more.

Max-type losses are a pointwise maximum of lines in :math:`\eta`; the kinks are those of the
per-example upper envelope, found by :func:`upper_envelope` ([YVGS10]_ Alg. 4 on the whole
real line: sort by slope, keep the highest of parallel lines, one stack pass).

Ties (several pieces attaining the max) are decided with one relative tolerance ``tie_rtol``
times the size of the scores of the example, shared by the oracle and the line search
([YVGS10]_'s exact line searches land iterates on hinges, where rounding decides which
pieces tie).

All kernels are ``cache=True``.
"""
from __future__ import annotations

import math
import types

import numpy as np
from numba import njit, prange

_EPS = float(np.finfo(np.float64).eps)

__all__ = [
    "csr_matmat",
    "csc_rmatmat",
    "csc_pull_pairs",
    "csr_matmat_serial",
    "csc_rmatmat_serial",
    "csc_pull_pairs_serial",
    "dense_pull_pairs",
    "hull_order",
    "upper_envelope",
    "margin_value",
    "margin_pairs",
    "margin_events",
    "margin_events_window",
    "multilabel_value",
    "multilabel_pairs",
    "multilabel_events",
    "softmax_value",
    "softmax_grad",
    "softmax_slope",
]


# --------------------------------------------------------------------------------------
# data passes
# --------------------------------------------------------------------------------------
def _compressed_matmat_py(indptr, indices, data, W, out):
    """``out[i] = sum_p data[p] W[indices[p]]`` over ``indptr[i]:indptr[i + 1]``: ``X @ W``
    for CSR arrays of X, ``X.T @ G`` for CSC ones (each output row from its own row/column)."""
    k = out.shape[1]
    for i in prange(out.shape[0]):
        row = out[i]  # contiguous row views let numba vectorise the inner loop
        for j in range(k):
            row[j] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = data[p]
            src = W[indices[p]]
            for j in range(k):
                row[j] += v * src[j]


def _csc_pull_pairs_py(indptr, indices, data, plus, minus, coef, out):
    """``out = X.T @ G`` for ``G[i] = coef[i] (e_plus[i] - e_minus[i])``: O(nnz), not O(nnz k)."""
    k = out.shape[1]
    for col in prange(out.shape[0]):
        row = out[col]
        for j in range(k):
            row[j] = 0.0
        for p in range(indptr[col], indptr[col + 1]):
            i = indices[p]
            g = coef[i]
            if g != 0.0:
                v = g * data[p]
                row[plus[i]] += v
                row[minus[i]] -= v


def _renamed(f, suffix):
    """``f`` under the name ``f.__name__ + suffix`` (same code, globals and line).

    numba's disk cache files a compiled function under its module, qualified name and first
    line, and keys the entries by signature and bytecode, not by the compile options: the
    serial and the parallel compilation of one function would share entries, and whichever
    compiled first would be loaded by the other in every later process (the serial pass
    then runs threaded, or the parallel one serially). A second name keeps them apart.
    """
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + suffix, f.__defaults__,
                           f.__closure__)
    g.__qualname__ = f.__qualname__ + suffix
    g.__doc__ = f.__doc__
    return g


# one source, two compilations: threads pay off only on enough work (on small data, or a busy
# machine, an OpenMP launch costs more than the pass)
csr_matmat = csc_rmatmat = njit(cache=True, parallel=True)(
    _renamed(_compressed_matmat_py, "_parallel"))
csc_pull_pairs = njit(cache=True, parallel=True)(_renamed(_csc_pull_pairs_py, "_parallel"))
csr_matmat_serial = csc_rmatmat_serial = njit(cache=True)(
    _renamed(_compressed_matmat_py, "_serial"))
csc_pull_pairs_serial = njit(cache=True)(_renamed(_csc_pull_pairs_py, "_serial"))


@njit(cache=True)
def dense_pull_pairs(X, plus, minus, coef, out):
    """The same for dense ``X`` (C order), O(m d) instead of the O(m d k) of ``X.T @ G``."""
    d = X.shape[1]
    out[:, :] = 0.0
    for i in range(X.shape[0]):
        g = coef[i]
        if g == 0.0:
            continue
        a = plus[i]
        b = minus[i]
        for col in range(d):
            v = g * X[i, col]
            out[col, a] += v
            out[col, b] -= v


# --------------------------------------------------------------------------------------
# upper envelope of lines b_j + eta a_j on the whole real line ([YVGS10] Alg. 4)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def hull_order(a, n, buf):
    """Write the indices ``0 .. n-1`` sorted by ``a`` (stable insertion sort) into ``buf``
    and return it: for the few lines of one example this beats a general sort, which
    allocates."""
    for t in range(n):
        v = a[t]
        j = t - 1
        while j >= 0 and a[buf[j]] > v:
            buf[j + 1] = buf[j]
            j -= 1
        buf[j + 1] = t
    return buf


@njit(cache=True)
def upper_envelope(a, b, n, hull, kinks, stol=0.0, vtol=0.0, vtol_eta=0.0):
    """Upper envelope of the lines ``b[j] + eta a[j]``, ``j < n``, over all real ``eta``.

    Slopes within ``stol`` of each other count as parallel: a slope difference at the
    rounding level of ``Q = XP`` (dense BLAS and sparse passes round differently) is no kink.
    Likewise three lines count as concurrent when the middle one tops the other two, where
    they cross at ``eta*``, by at most ``vtol + vtol_eta |eta*|`` (the rounding of the line
    values there) or by less than the rounding of that comparison itself: a line on top over
    an interval one ulp long (lines through one point, rounded) makes no pair of kinks.

    Writes the indices of the lines on the envelope into ``hull[:h]`` (ascending slope: from
    ``eta = -inf`` to ``+inf``) and the ``h - 1`` kinks between consecutive ones, ascending,
    into ``kinks``; returns ``h``.

    [YVGS10]_ Alg. 4 sorts by value at the left end ``L``; on the whole line that order is the
    order of the slopes. Parallel lines (the printed Alg. 4 divides by zero on them)
    keep only the highest; a line that tops the envelope at a single point only (three lines
    through one point) is dropped, so every kink is a true one. Each line is pushed and popped
    at most once: O(n log n) with the sort.
    """
    if n <= 32:
        # sorted in place in hull: the pass below reads order[t] before it writes hull[h],
        # h <= t, so the stack overwrites only consumed entries
        order = hull_order(a, n, hull)
    else:
        order = np.argsort(a[:n], kind="mergesort")
    h = 0
    for t in range(n):
        l = order[t]
        if h > 0 and a[l] - a[hull[h - 1]] <= stol:  # parallel guard: keep the higher line
            if b[l] <= b[hull[h - 1]]:
                continue
            h -= 1
        while h >= 2:
            u = hull[h - 1]
            v = hull[h - 2]
            # u is never strictly on top if l overtakes u no later than u overtakes v:
            # (b_u - b_l) / (a_l - a_u) <= (b_v - b_u) / (a_u - a_v), both denominators > 0.
            # The difference of the two products is (a_l - a_v) times the excess of u over v
            # and l where they cross (at eta*, |eta*| (a_l - a_v) = |b_v - b_l|): an excess
            # within vtol + vtol_eta |eta*| is rounding, and so is a difference within the
            # rounding of the products (4 eps their size)
            lhs = (b[u] - b[l]) * (a[u] - a[v])
            rhs = (b[v] - b[u]) * (a[l] - a[u])
            slack = (vtol * (a[l] - a[v]) + vtol_eta * abs(b[v] - b[l])
                     + 4.0 * _EPS * (abs(lhs) + abs(rhs)))
            if lhs - rhs <= slack:
                h -= 1
            else:
                break
        hull[h] = l
        h += 1
    for j in range(h - 1):
        u = hull[j]
        v = hull[j + 1]
        kinks[j] = (b[u] - b[v]) / (a[v] - a[u])
    return h


# --------------------------------------------------------------------------------------
# margin losses: l(z, y) = max_j gamma[y, j] (z_j - z_y) + delta[y, j]
#   (Crammer-Singer: gamma = 1, delta = 1 - I; margin rescaling: gamma = 1, delta = cost;
#    slack rescaling: gamma = delta = cost). The j = y line is identically 0.
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _emit_kinks(a, hull, kinks, h, ci, kinks_out, jumps_out, n):
    """Append the ``h - 1`` kinks of an upper envelope (:func:`upper_envelope`'s ``hull`` of
    the lines with slopes ``a``) and the jumps of ``ci`` times its slope there at
    ``kinks_out[n:]``, ``jumps_out[n:]``; returns the new count."""
    for t in range(h - 1):
        kinks_out[n] = kinks[t]
        jumps_out[n] = ci * (a[hull[t + 1]] - a[hull[t]])
        n += 1
    return n


@njit(cache=True)
def _margin_row(F, Q, eta, i, yi, gamma, delta, gmax, dmax, side, tie_rtol):
    """(value, j*) of example i: j* is the default maximiser (side 0; y itself when the max is
    0) or the active piece of largest (side 1) or smallest (side -1) slope along q_i."""
    k = F.shape[1]
    zy = F[i, yi] + eta * Q[i, yi]
    top = 0.0  # the j = y line
    jtop = yi
    big = 0.0
    for j in range(k):
        z = F[i, j] + eta * Q[i, j]
        if j == yi:
            continue
        v = gamma[yi, j] * (z - zy) + delta[yi, j]
        if v > top:
            top = v
            jtop = j
        az = abs(F[i, j]) + abs(eta * Q[i, j])
        if az > big:
            big = az
    if side == 0:
        return top, jtop
    big = max(big, abs(F[i, yi]) + abs(eta * Q[i, yi]))
    tol = tie_rtol * (1.0 + 2.0 * gmax * big + dmax)
    qy = Q[i, yi]
    best = 0.0  # slope of the j = y line, always active when top <= tol
    jbest = yi
    if top > tol:
        jbest = -1
    for j in range(k):
        if j == yi:
            continue
        z = F[i, j] + eta * Q[i, j]
        v = gamma[yi, j] * (z - zy) + delta[yi, j]
        if v >= top - tol:
            s = gamma[yi, j] * (Q[i, j] - qy)
            if jbest < 0 or (side > 0 and s > best) or (side < 0 and s < best):
                best = s
                jbest = j
    return top, jbest


@njit(cache=True)
def margin_value(F, Q, eta, y, gamma, delta, c):
    r = 0.0
    for i in range(F.shape[0]):
        v, _ = _margin_row(F, Q, eta, i, y[i], gamma, delta, 0.0, 0.0, 0, 0.0)
        r += c[i] * v
    return r


@njit(cache=True)
def margin_pairs(F, Q, eta, y, gamma, delta, c, side, tie_rtol, plus, minus, coef):
    gmax = np.max(gamma)
    dmax = np.max(delta)
    r = 0.0
    for i in range(F.shape[0]):
        yi = y[i]
        v, j = _margin_row(F, Q, eta, i, yi, gamma, delta, gmax, dmax, side, tie_rtol)
        r += c[i] * v
        # gradient gamma[y, j*] (e_j* - e_y): at most two nonzero classes
        plus[i] = j
        minus[i] = yi
        coef[i] = c[i] * gamma[yi, j] if j != yi else 0.0
    return r


@njit(cache=True)
def margin_events(F, Q, y, gamma, delta, c, kinks_out, jumps_out, tie_rtol=0.0):
    """Kinks of the line and the jumps of its slope there; returns ``(n, slope at -inf)``.
    Slopes within ``tie_rtol (1 + 2 gmax max_j |q_j|)`` are parallel (no kink); lines through
    one point up to the rounding of their values are concurrent (one kink, not two an ulp
    apart)."""
    m, k = F.shape
    gmax = np.max(gamma)
    dmax = np.max(delta)
    a = np.empty(k)
    b = np.empty(k)
    hull = np.empty(k, dtype=np.int64)
    kinks = np.empty(k)
    n = 0
    base = 0.0
    for i in range(m):
        ci = c[i]
        if ci == 0.0:  # a zero-weight example puts no kink into the sum
            continue
        yi = y[i]
        bigq = 0.0
        bigf = 0.0
        for j in range(k):
            bigq = max(bigq, abs(Q[i, j]))
            bigf = max(bigf, abs(F[i, j]))
            g = gamma[yi, j]
            if j == yi:
                a[j] = 0.0
                b[j] = 0.0
            else:
                a[j] = g * (Q[i, j] - Q[i, yi])
                b[j] = g * (F[i, j] - F[i, yi]) + delta[yi, j]
        # b_j and a_j each carry a few roundings of scores of size bigf, bigq: three lines
        # within 8 eps of that of concurrent are concurrent
        h = upper_envelope(a, b, k, hull, kinks, tie_rtol * (1.0 + 2.0 * gmax * bigq),
                           8.0 * _EPS * (1.0 + dmax + 2.0 * gmax * bigf),
                           8.0 * _EPS * 2.0 * gmax * bigq)
        base += ci * a[hull[0]]
        n = _emit_kinks(a, hull, kinks, h, ci, kinks_out, jumps_out, n)
    return n, base


@njit(cache=True)
def margin_events_window(F, Q, y, gamma, delta, c, lo, hi, kinks_out, jumps_out, tie_rtol=0.0):
    r"""The kinks of the line in ``(lo, hi]`` (``lo < hi`` finite) and the jumps of its slope
    there, as :func:`margin_events` finds them, counted from the oracle's right derivative at
    ``lo``; returns ``(n, slope at lo+)``.

    Each example's envelope on ``[lo, hi]`` only: with :math:`A` a line on top at ``lo``
    and :math:`B` one on top at ``hi`` (:math:`a_A \le a_B`), a line :math:`l` is on the
    envelope somewhere in ``[lo, hi]`` only if :math:`l \ge \max(A, B)` there, and since
    :math:`l - \max(A, B)` is concave, only if that holds at ``lo``, at ``hi`` or where
    :math:`A` and :math:`B` cross. The lines failing all three by more than the rounding of
    their values, the tie tolerance and ``tie_rtol``'s parallel slopes over the window are
    dropped; the envelope of the rest (:func:`upper_envelope`, the tolerances of
    :func:`margin_events`) equals the whole envelope on the window, and its kinks are the same
    numbers. An example with one line left has no kink there: O(k), no sort.

    The slope at ``lo+`` of each example is the oracle's (:func:`_margin_row`, ``side = 1``):
    the steepest line within ``tie_rtol (1 + dmax + 2 gmax big)`` of the top at ``lo``. A
    kink that rounding put just right of ``lo`` (an iterate of an exact search sits on a
    hinge: the next line has a kink at ``eta = 1e-16``) is then counted once, in that slope,
    and not again as a jump: the jumps of the kinks in ``(lo, eta]`` added to the oracle's
    :math:`\varphi'(lo^+)` give :math:`\varphi'(\eta^+)` ([YVGS10]_ Alg. 5 walks the events
    from the left end in the same way)."""
    m, k = F.shape
    gmax = np.max(gamma)
    dmax = np.max(delta)
    a = np.empty(k)
    b = np.empty(k)
    vlo = np.empty(k)
    vhi = np.empty(k)
    a2 = np.empty(k)
    b2 = np.empty(k)
    hull = np.empty(k, dtype=np.int64)
    kinks = np.empty(k)
    big_eta = max(abs(lo), abs(hi))
    n = 0
    base = 0.0
    for i in range(m):
        ci = c[i]
        if ci == 0.0:
            continue
        yi = y[i]
        bigq = 0.0
        bigf = 0.0
        big = 0.0  # _margin_row's score size at lo
        top_lo = -np.inf
        top_hi = -np.inf
        ja = 0
        jb = 0
        zy = F[i, yi] + lo * Q[i, yi]
        for j in range(k):
            bigq = max(bigq, abs(Q[i, j]))
            bigf = max(bigf, abs(F[i, j]))
            big = max(big, abs(F[i, j]) + abs(lo * Q[i, j]))
            g = gamma[yi, j]
            if j == yi:
                a[j] = 0.0
                b[j] = 0.0
                v = 0.0
            else:
                a[j] = g * (Q[i, j] - Q[i, yi])
                b[j] = g * (F[i, j] - F[i, yi]) + delta[yi, j]
                v = g * ((F[i, j] + lo * Q[i, j]) - zy) + delta[yi, j]  # as _margin_row
            vlo[j] = v
            if v > top_lo:
                top_lo = v
                ja = j
            v = b[j] + hi * a[j]
            vhi[j] = v
            if v > top_hi or (v == top_hi and a[j] < a[jb]):
                top_hi = v
                jb = j
        tol = tie_rtol * (1.0 + 2.0 * gmax * big + dmax)
        stol = tie_rtol * (1.0 + 2.0 * gmax * bigq)
        vtol = 8.0 * _EPS * (1.0 + dmax + 2.0 * gmax * bigf)
        vtol_eta = 8.0 * _EPS * 2.0 * gmax * bigq
        # a dropped line is below the envelope by more than this everywhere on the window:
        # many times the rounding of the values, the ties at lo, and parallel slopes' drift
        slack = 16.0 * (vtol + vtol_eta * big_eta) + 4.0 * stol * (1.0 + big_eta) + 2.0 * tol
        if a[jb] > a[ja]:
            cross = min(max((b[ja] - b[jb]) / (a[jb] - a[ja]), lo), hi)
        else:
            cross = lo
        top_c = max(b[ja] + cross * a[ja], b[jb] + cross * a[jb])
        p = 0
        s = -np.inf  # the oracle's slope at lo+: the steepest tied line
        for j in range(k):
            if vlo[j] >= top_lo - tol and a[j] > s:
                s = a[j]
            if (vlo[j] >= top_lo - slack or vhi[j] >= top_hi - slack
                    or b[j] + cross * a[j] >= top_c - slack):
                a2[p] = a[j]
                b2[p] = b[j]
                p += 1
        base += ci * s
        if p == 1:  # one line on top over the whole window: no kink
            continue
        h = upper_envelope(a2, b2, p, hull, kinks, stol, vtol, vtol_eta)
        for t in range(h - 1):
            e = kinks[t]
            after = a2[hull[t + 1]]
            if e > lo and e <= hi and after > s:
                kinks_out[n] = e
                jumps_out[n] = ci * (after - max(a2[hull[t]], s))
                n += 1
    return n, base


# --------------------------------------------------------------------------------------
# multilabel hinge: l(z, Y) = max(0, 1 + max_{j irrelevant} z_j - min_{j relevant} z_j)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _multilabel_row(F, Q, eta, i, Y, side, tie_rtol):
    """(value, j_irrelevant, j_relevant) of example i; (value, -1, -1) for the zero piece."""
    k = F.shape[1]
    hi = -np.inf
    lo = np.inf
    jhi = -1
    jlo = -1
    big = 0.0
    for j in range(k):
        z = F[i, j] + eta * Q[i, j]
        if Y[i, j]:
            if z < lo:
                lo = z
                jlo = j
        else:
            if z > hi:
                hi = z
                jhi = j
        az = abs(F[i, j]) + abs(eta * Q[i, j])
        if az > big:
            big = az
    if jhi < 0 or jlo < 0:  # no relevant or no irrelevant label: no pair, loss 0
        return 0.0, -1, -1
    h = 1.0 + hi - lo
    val = h if h > 0.0 else 0.0
    if side == 0:
        if h > 0.0:
            return val, jhi, jlo
        return val, -1, -1
    tol = tie_rtol * (1.0 + 2.0 * big)
    if h < -tol:
        return val, -1, -1
    # steepest pair among the tied irrelevant maximisers and relevant minimisers:
    # the pair slope q_j' - q_j is separable, so pick each end on its own
    jhi = -1
    jlo = -1
    shi = 0.0
    slo = 0.0
    for j in range(k):
        z = F[i, j] + eta * Q[i, j]
        q = Q[i, j]
        if Y[i, j]:
            if z <= lo + tol and (jlo < 0 or (side > 0 and q < slo) or (side < 0 and q > slo)):
                slo = q
                jlo = j
        else:
            if z >= hi - tol and (jhi < 0 or (side > 0 and q > shi) or (side < 0 and q < shi)):
                shi = q
                jhi = j
    if h > tol:
        return val, jhi, jlo
    # the pair ties with the zero piece: keep the steeper of the two
    s = shi - slo
    if (side > 0 and s > 0.0) or (side < 0 and s < 0.0):
        return val, jhi, jlo
    return val, -1, -1


@njit(cache=True)
def multilabel_value(F, Q, eta, Y, c):
    r = 0.0
    for i in range(F.shape[0]):
        v, _, _ = _multilabel_row(F, Q, eta, i, Y, 0, 0.0)
        r += c[i] * v
    return r


@njit(cache=True)
def multilabel_pairs(F, Q, eta, Y, c, side, tie_rtol, plus, minus, coef):
    r = 0.0
    for i in range(F.shape[0]):
        v, jhi, jlo = _multilabel_row(F, Q, eta, i, Y, side, tie_rtol)
        r += c[i] * v
        if jhi >= 0:  # gradient e_z' - e_z of the worst pair
            plus[i] = jhi
            minus[i] = jlo
            coef[i] = c[i]
        else:
            plus[i] = 0
            minus[i] = 0
            coef[i] = 0.0
    return r


@njit(cache=True)
def multilabel_events(F, Q, Y, c, kinks_out, jumps_out, tie_rtol=0.0):
    """Kinks of :math:`\\eta \\mapsto \\max(0, 1 + U(\\eta) - L(\\eta))` per example, with
    :math:`U` the upper envelope of the irrelevant labels' lines and :math:`L` the lower
    envelope of the relevant ones: ``U - L`` is convex piecewise linear, the maximum of the
    extensions of its pieces, so the envelope of those pieces and the zero line is exactly the
    envelope of the pair lines of [YVGS10]_ eq. 57, with O(k) lines instead of
    :math:`|Z_i|(k - |Z_i|) + 1`. Writes the kinks and the slope jumps there; returns
    ``(n, slope at -inf)``."""
    m, k = F.shape
    a1 = np.empty(k)
    b1 = np.empty(k)
    a2 = np.empty(k)
    b2 = np.empty(k)
    a3 = np.empty(k + 1)
    b3 = np.empty(k + 1)
    hull1 = np.empty(k, dtype=np.int64)
    hull2 = np.empty(k, dtype=np.int64)
    hull3 = np.empty(k + 1, dtype=np.int64)
    k1 = np.empty(k)
    k2 = np.empty(k)
    k3 = np.empty(k + 1)
    n = 0
    base = 0.0
    for i in range(m):
        ci = c[i]
        if ci == 0.0:
            continue
        n1 = 0
        n2 = 0
        bigq = 0.0
        bigf = 0.0
        for j in range(k):
            bigq = max(bigq, abs(Q[i, j]))
            bigf = max(bigf, abs(F[i, j]))
            if Y[i, j]:  # relevant: lower envelope = -(upper envelope of the negated lines)
                a2[n2] = -Q[i, j]
                b2[n2] = -F[i, j]
                n2 += 1
            else:
                a1[n1] = Q[i, j]
                b1[n1] = F[i, j]
                n1 += 1
        if n1 == 0 or n2 == 0:
            continue
        stol = tie_rtol * (1.0 + 2.0 * bigq)  # slopes that close are parallel
        vtol = 8.0 * _EPS * (1.0 + 2.0 * bigf)  # lines that close to one point are concurrent
        vtol_eta = 8.0 * _EPS * 2.0 * bigq
        h1 = upper_envelope(a1, b1, n1, hull1, k1, stol, vtol, vtol_eta)
        h2 = upper_envelope(a2, b2, n2, hull2, k2, stol, vtol, vtol_eta)
        # pieces of 1 + U - L, from eta = -inf to +inf
        u = 0
        v = 0
        p = 0
        while True:
            a3[p] = a1[hull1[u]] + a2[hull2[v]]
            b3[p] = 1.0 + b1[hull1[u]] + b2[hull2[v]]
            p += 1
            more_u = u < h1 - 1
            more_v = v < h2 - 1
            if more_u and (not more_v or k1[u] <= k2[v]):
                if more_v and k1[u] == k2[v]:
                    v += 1
                u += 1
            elif more_v:
                v += 1
            else:
                break
        a3[p] = 0.0  # the zero line (z' = z in eq. 55)
        b3[p] = 0.0
        p += 1
        h3 = upper_envelope(a3, b3, p, hull3, k3, stol, vtol, vtol_eta)
        base += ci * a3[hull3[0]]
        n = _emit_kinks(a3, hull3, k3, h3, ci, kinks_out, jumps_out, n)
    return n, base


# --------------------------------------------------------------------------------------
# softmax: l(z, y) = log sum_j exp(z_j) - z_y (smooth)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _softmax_row(F, Q, eta, i):
    """(max score, sum of exp(z - max)) of example i."""
    k = F.shape[1]
    top = -np.inf
    for j in range(k):
        z = F[i, j] + eta * Q[i, j]
        if z > top:
            top = z
    s = 0.0
    for j in range(k):
        s += math.exp(F[i, j] + eta * Q[i, j] - top)
    return top, s


@njit(cache=True)
def softmax_value(F, Q, eta, y, c):
    r = 0.0
    for i in range(F.shape[0]):
        top, s = _softmax_row(F, Q, eta, i)
        r += c[i] * (top + math.log(s) - (F[i, y[i]] + eta * Q[i, y[i]]))
    return r


@njit(cache=True)
def softmax_grad(F, Q, eta, y, c, G):
    k = F.shape[1]
    r = 0.0
    for i in range(F.shape[0]):
        top, s = _softmax_row(F, Q, eta, i)
        yi = y[i]
        r += c[i] * (top + math.log(s) - (F[i, yi] + eta * Q[i, yi]))
        for j in range(k):
            G[i, j] = c[i] * math.exp(F[i, j] + eta * Q[i, j] - top) / s
        G[i, yi] -= c[i]
    return r


@njit(cache=True)
def softmax_slope(F, Q, eta, y, c):
    r""":math:`\sum_i c_i \sum_j p_{ij} (q_{ij} - q_{iy_i})`, the softmax weights ``p`` times the
    slopes relative to the label's: exactly 0 along a direction that shifts all scores of an
    example alike (the loss is invariant to it), where ``E_p[q] - q_y`` leaves rounding noise
    whose sign a line search would follow (to eta = 2^51 on a constant line)."""
    k = F.shape[1]
    r = 0.0
    for i in range(F.shape[0]):
        top, s = _softmax_row(F, Q, eta, i)
        qy = Q[i, y[i]]
        e = 0.0
        for j in range(k):
            e += math.exp(F[i, j] + eta * Q[i, j] - top) * (Q[i, j] - qy)
        r += c[i] * (e / s)
    return r
