"""Compiled kernels (numba) of the multivariate losses in :mod:`nsopt.losses.multivariate`.

Every kernel works in *score space*: it takes the scores ``f = X w`` (and, for the
directional derivative, an order that breaks ties by the direction ``q = X p``), and returns
the loss value and the gradient with respect to ``f``; the loss class forms ``X^T g``.
Sorting is done by the caller (numpy), once per evaluation, so that the kernels are single
linear passes (``roc_sweep``, ``ordinal_sweep``) or searches over the contingency tables
(``fbeta_search``, ``prbep_search``).

All kernels are ``cache=True``: the first call compiles, later processes load from disk.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_EPS = np.finfo(np.float64).eps

__all__ = [
    "roc_sweep",
    "ordinal_sweep",
    "fbeta_search",
    "prbep_search",
    "assignment_potentials",
    "pairs_gradient",
    "ndcg_merge",
]


# --------------------------------------------------------------------------------------
# ROC area ([TVSL10] Alg. 7): one pass over the examples sorted by c = f - y/2
# --------------------------------------------------------------------------------------
@njit(cache=True)
def roc_sweep(c, positive, order, n_neg, out):
    """``out[i]`` = (number of active pairs of i), signed; returns ``<out, c>``.

    ``order`` sorts ``c`` ascending (ties broken as the caller wants them counted). A negative
    is in an active pair with every positive before it (``out = s_+``), a positive with every
    negative after it (``out = -s_-``). Unnormalized: the caller divides by ``m_+ m_-``.
    """
    s_minus = n_neg
    s_plus = 0
    r = 0.0
    for t in range(order.shape[0]):
        i = order[t]
        if positive[i]:
            out[i] = -float(s_minus)
            s_plus += 1
        else:
            out[i] = float(s_plus)
            s_minus -= 1
        r += out[i] * c[i]
    return r


# --------------------------------------------------------------------------------------
# Ordinal regression ([TVSL10] Alg. 8, corrected: erratum E3), with Fenwick
# trees over the label levels so the pass is O(m log n) for any number n of levels.
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _fenwick_add(tree, k, v):
    k += 1
    n = tree.shape[0]
    while k < n:
        tree[k] += v
        k += k & (-k)


@njit(cache=True)
def _fenwick_prefix(tree, k):
    """Sum of the entries 0..k-1."""
    s = 0.0
    while k > 0:
        s += tree[k]
        k -= k & (-k)
    return s


@njit(cache=True)
def ordinal_sweep(f, level, values, counts, alpha, beta, order, out):
    r"""Value (unnormalized) and score gradient of
    :math:`\sum_{y_i < y_j} C(y_i, y_j)\max(0, 1 + f_i - f_j)` with
    :math:`C(k, l) = \alpha + \beta (v_l - v_k)`.

    ``order`` sorts the 2m copies ``[f - 1/2, f + 1/2]`` ascending; copy ``p < m`` is the lower
    copy of example ``p``, copy ``p >= m`` the upper copy of example ``p - m``. A pair
    ``y_i < y_j`` is active when the lower copy of ``j`` comes before the upper copy of ``i``:
    ``(f_i + 1/2) - (f_j - 1/2) = 1 + f_i - f_j``.
    """
    m = f.shape[0]
    n = values.shape[0]
    u1 = np.zeros(n + 1)  # upper copies not yet seen, per level
    uv = np.zeros(n + 1)  # the same weighted by the level value
    l1 = np.zeros(n + 1)  # lower copies seen, per level
    lv = np.zeros(n + 1)
    for k in range(n):
        _fenwick_add(u1, k, counts[k])
        _fenwick_add(uv, k, counts[k] * values[k])
    total_l1 = 0.0
    total_lv = 0.0
    for i in range(m):
        out[i] = 0.0
    r = 0.0
    for t in range(order.shape[0]):
        p = order[t]
        if p < m:  # lower copy of j = p: j is the higher-label member of its pairs
            j = p
            k = level[j]
            cnt = _fenwick_prefix(u1, k)  # levels < k
            wsum = _fenwick_prefix(uv, k)
            s = alpha * cnt + beta * (values[k] * cnt - wsum)
            r -= s * (f[j] - 0.5)
            out[j] -= s
            _fenwick_add(l1, k, 1.0)
            _fenwick_add(lv, k, values[k])
            total_l1 += 1.0
            total_lv += values[k]
        else:  # upper copy of i = p - m: i is the lower-label member of its pairs
            i = p - m
            k = level[i]
            cnt = total_l1 - _fenwick_prefix(l1, k + 1)  # levels > k
            wsum = total_lv - _fenwick_prefix(lv, k + 1)
            s = alpha * cnt + beta * (wsum - values[k] * cnt)
            r += s * (f[i] + 0.5)
            out[i] += s
            _fenwick_add(u1, k, -1.0)
            _fenwick_add(uv, k, -values[k])
    return r


# --------------------------------------------------------------------------------------
# Contingency-table losses ([TVSL10] Alg. 11 with the corrected indexing, erratum E2)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _suffix_twice(x):
    """``s[a] = 2 * sum_{k >= a} x[k]`` for a = 0..len(x) (so ``s[len(x)] = 0``)."""
    n = x.shape[0]
    s = np.zeros(n + 1)
    for a in range(n - 1, -1, -1):
        s[a] = s[a + 1] + 2.0 * x[a]
    return s


@njit(cache=True)
def _fbeta_value(a, b, n_pos, n_neg, beta2, P, N):
    # Delta(a, b) - p_a + n_b with Delta = 1 - F_beta(T+ = a, T- = b)
    fb = (1.0 + beta2) * a / (a + n_neg - b + beta2 * n_pos)
    return 1.0 - fb - P[a] + N[b]


@njit(cache=True)
def fbeta_search(f_pos, f_neg, q_pos, q_neg, beta2, tol, use_direction):
    r"""Maximise :math:`\Delta(a, b) - p_a + n_b` over the contingency tables.

    ``f_pos`` are the positives' scores sorted descending, ``f_neg`` the negatives' ascending
    (ties broken by the direction, descending / ascending ``q``, by the caller): the labelling
    of table ``(a, b)`` calls the first ``a`` positives and the first ``b`` negatives correctly.
    With :math:`p_a = 2\sum_{k > a} f^+_k` and :math:`n_b = 2\sum_{k > b} f^-_k` (1-based,
    erratum E2), :math:`b \mapsto \Delta(a, b) + n_b` is concave (:math:`F_\beta` is convex in
    ``b``, :math:`n_b` has nonincreasing increments), so a binary search finds the best ``b``
    for each ``a``: O(m_+ log m_-) in all instead of the O(m_+ m_-) double loop.

    With ``use_direction`` the maximisers within ``tol`` of the maximum are scanned (each a
    contiguous run of ``b`` around the best one) for the largest :math:`(y' - y)^T q`, the
    directional derivative.

    Returns ``(r, a, b, s)``: the maximum, the chosen table and ``(y' - y)^T q`` there.
    """
    n_pos = f_pos.shape[0]
    n_neg = f_neg.shape[0]
    P = _suffix_twice(f_pos)
    N = _suffix_twice(f_neg)
    best_b = np.empty(n_pos + 1, dtype=np.int64)
    best_v = np.empty(n_pos + 1)
    r = -math.inf
    a_star = 0
    for a in range(n_pos + 1):
        lo = 0
        hi = n_neg
        while lo < hi:  # smallest b with h(b + 1) - h(b) <= 0
            mid = (lo + hi) // 2
            d = _fbeta_value(a, mid + 1, n_pos, n_neg, beta2, P, N) - _fbeta_value(
                a, mid, n_pos, n_neg, beta2, P, N)
            if d <= 0.0:
                hi = mid
            else:
                lo = mid + 1
        best_b[a] = lo
        v = _fbeta_value(a, lo, n_pos, n_neg, beta2, P, N)
        best_v[a] = v
        if v > r:
            r = v
            a_star = a
    b_star = best_b[a_star]
    if not use_direction:
        return r, a_star, b_star, 0.0
    QP = _suffix_twice(q_pos)  # -QP[a] = sum over positives labelled negative of (y' - y) q
    QN = _suffix_twice(q_neg)
    s_best = -math.inf
    for a in range(n_pos + 1):
        if best_v[a] < r - tol:
            continue
        b0 = best_b[a]
        b = b0
        while b >= 0 and _fbeta_value(a, b, n_pos, n_neg, beta2, P, N) >= r - tol:
            s = -QP[a] + QN[b]
            if s > s_best:
                s_best, a_star, b_star = s, a, b
            b -= 1
        b = b0 + 1
        while b <= n_neg and _fbeta_value(a, b, n_pos, n_neg, beta2, P, N) >= r - tol:
            s = -QP[a] + QN[b]
            if s > s_best:
                s_best, a_star, b_star = s, a, b
            b += 1
    return r, a_star, b_star, s_best


@njit(cache=True)
def prbep_search(f_pos, f_neg, q_pos, q_neg, tol, use_direction):
    r"""The PRBEP analogue of :func:`fbeta_search`: only labellings with as many predicted
    positives as true ones, :math:`a + (m_- - b) = m_+`; then precision = recall = a / m_+ and
    :math:`\Delta = 1 - a / m_+`. O(m_+) after sorting. Returns ``(r, a, b, s)``."""
    n_pos = f_pos.shape[0]
    n_neg = f_neg.shape[0]
    P = _suffix_twice(f_pos)
    N = _suffix_twice(f_neg)
    a_lo = max(0, n_pos - n_neg)
    r = -math.inf
    a_star = n_pos
    for a in range(a_lo, n_pos + 1):
        b = n_neg - (n_pos - a)
        v = 1.0 - a / n_pos - P[a] + N[b]
        if v > r:
            r = v
            a_star = a
    b_star = n_neg - (n_pos - a_star)
    if not use_direction:
        return r, a_star, b_star, 0.0
    QP = _suffix_twice(q_pos)
    QN = _suffix_twice(q_neg)
    s_best = -math.inf
    for a in range(a_lo, n_pos + 1):
        b = n_neg - (n_pos - a)
        v = 1.0 - a / n_pos - P[a] + N[b]
        if v >= r - tol:
            s = -QP[a] + QN[b]
            if s > s_best:
                s_best, a_star, b_star = s, a, b
    return r, a_star, b_star, s_best


# --------------------------------------------------------------------------------------
# Ranking ([TVSL10] Alg. 10): dual potentials of an optimal assignment, to find all of them
# --------------------------------------------------------------------------------------
@njit(cache=True)
def assignment_potentials(C, perm):
    r"""Optimal dual potentials ``(u, v)`` of the max-weight assignment ``perm`` of ``C``.

    The dual is :math:`\min \sum u + \sum v` s.t. :math:`u_i + v_j \ge C_{ij}`. With
    :math:`u_i = C_{i\pi(i)} - v_{\pi(i)}` feasibility reads
    :math:`v_{\pi(i)} \le v_j + C_{i\pi(i)} - C_{ij}`: shortest-path constraints, solved by
    Bellman-Ford from a virtual source (no negative cycle since ``perm`` is optimal); at most
    n rounds of O(n^2). By complementary slackness the optimal assignments are exactly the
    perfect matchings on the tight edges :math:`u_i + v_j = C_{ij}`.
    """
    n = C.shape[0]
    v = np.zeros(n)
    for _ in range(n + 1):
        changed = False
        for i in range(n):
            t = perm[i]
            base = C[i, t]
            best = v[t]
            for j in range(n):
                cand = v[j] + base - C[i, j]
                if cand < best:
                    best = cand
            if best < v[t]:
                v[t] = best
                changed = True
        if not changed:
            break
    u = np.empty(n)
    for i in range(n):
        u[i] = C[i, perm[i]] - v[perm[i]]
    return u, v


# --------------------------------------------------------------------------------------
# Preference pairs ([TVSL10] Alg. 9, with the 1/|P| of the formula, erratum E17)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def pairs_gradient(f, q, lower, upper, cost, side, out):
    r"""Value and score gradient of :math:`\sum_k C_k \max(0, 1 + f_{i_k} - f_{j_k})`
    (unnormalized). At a kink (margin exactly 0) the pair is active when
    ``side * (q_i - q_j) > 0`` (``side = 0``: inactive), which gives the one-sided
    derivative along ``q``."""
    for t in range(out.shape[0]):
        out[t] = 0.0
    r = 0.0
    for k in range(lower.shape[0]):
        i = lower[k]
        j = upper[k]
        z = 1.0 + f[i] - f[j]
        active = z > 0.0 or (z == 0.0 and side * (q[i] - q[j]) > 0.0)
        if active:
            r += cost[k] * z
            out[i] += cost[k]
            out[j] -= cost[k]
    return r


# --------------------------------------------------------------------------------------
# NDCG ([TVSL10] Alg. 10): the assignment of every query by a merge of its grades
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _programme_arrays(hist_n, cand_n, G_max):
    """The merge's history (``hist_n`` entries: state, value, parent, grade, ``G_max`` counts)
    and candidate arrays (``cand_n``: state, value, parent), see :func:`_merge_layers`."""
    return (np.empty(hist_n, dtype=np.int64), np.empty(hist_n), np.empty(hist_n, dtype=np.int64),
            np.empty(hist_n, dtype=np.int64), np.empty(hist_n * G_max, dtype=np.int64),
            np.empty(cand_n, dtype=np.int64), np.empty(cand_n), np.empty(cand_n, dtype=np.int64))


@njit(cache=True)
def _merge_layers(fs, base, count, cap, stride, b, c, a, lo, K, n_grades, rho_lo, rho_hi, prune,
                  fmax, off, hist_s, hist_v, hist_p, hist_c, hist_k, G_max, cand_s, cand_v, cand_p,
                  head, stop, rd, mg, lower):
    r"""The merge's programme of one query by layers (see :func:`ndcg_merge`), in the given
    arrays, which it never reallocates (arrays reassigned in a hot loop cost reference
    counting on every pass: 2-3 raw data passes per call on OHSUMED).

    Layer ``p`` (``p`` documents placed) is ``hist_*[off[p]:off[p + 1]]``, sorted by state
    index ``hist_s``; an entry has its value, its parent entry, the grade it placed last and
    its counts ``hist_k[e * G_max + h]``. The candidates of a layer are made grade by grade
    (``head[h]:stop[h]``, each sorted by state index as the layer is), then merged; equal
    states keep the larger value, the one from the earlier parent on a tie. ``fs[base[h] + r
    + 1]`` is the score of the ``r``-th document of grade ``h`` by decreasing score, ``b`` the
    grades' gains. Returns 0 (done), 1 (a layer left empty by the forced orders: rounding) or
    2 (out of room: the caller grows ``hist_*`` or ``cand_*`` and calls again).
    """
    for h in range(n_grades):
        for gg in range(n_grades):
            lower[h, gg] = b[gg] < b[h]
    hist_s[0] = 0
    hist_v[0] = 0.0
    hist_p[0] = -1
    hist_c[0] = -1
    for h in range(n_grades):
        hist_k[h] = 0
    off[0] = 0
    off[1] = 1
    r_lo = r_hi = np.nan  # the range the thresholds rd, mg were made for
    for placed in range(1, K + 1):
        i = lo + placed - 1  # the position filled now
        ci = c[i]
        ai = a[i]
        at_l = i if prune == 2 else lo
        if prune > 0 and not (rho_lo[at_l] == r_lo and rho_hi[at_l] == r_hi):
            r_lo, r_hi = rho_lo[at_l], rho_hi[at_l]
            for h in range(n_grades):
                for gg in range(n_grades):
                    db = b[gg] - b[h]
                    rho = r_hi if db > 0.0 else r_lo
                    rd[h, gg] = rho * db
                    mg[h, gg] = 64.0 * _EPS * (fmax + abs(rho * db) + 1.0)
        p0, p1 = off[placed - 1], off[placed]
        if n_grades * (p1 - p0) > cand_s.shape[0]:
            return 2
        n_cand = 0
        for h in range(n_grades):
            head[h] = n_cand
            vh = ai * b[h]
            for e in range(p0, p1):
                kb = e * G_max
                r = hist_k[kb + h]
                if r == cap[h]:
                    continue
                fy = fs[base[h] + r + 1]
                if prune > 0:
                    # an unplaced document x of another grade forced before y = (h, r): by the
                    # range of ratios, or (exactly) a lower gain and a score at least f_y
                    ok = True
                    for gg in range(n_grades):
                        if gg != h:
                            kg = hist_k[kb + gg]
                            if kg < count[gg]:
                                fx = fs[base[gg] + kg + 1]
                                if fx > fy + rd[h, gg] + mg[h, gg] or (lower[h, gg] and fx >= fy):
                                    ok = False
                                    break
                    if not ok:
                        continue
                cand_s[n_cand] = hist_s[e] + stride[h]
                cand_v[n_cand] = hist_v[e] + ci * fy - vh
                cand_p[n_cand] = e
                n_cand += 1
            stop[h] = n_cand
        if n_cand == 0:
            return 1
        top = p1
        if top + n_cand > hist_s.shape[0]:
            return 2
        # merge the grades' runs by (state, parent); equal states keep the larger value
        first = top
        while True:
            hb = -1
            for h in range(n_grades):
                q = head[h]
                if q < stop[h] and (hb < 0 or cand_s[q] < cand_s[head[hb]] or (
                        cand_s[q] == cand_s[head[hb]] and cand_p[q] < cand_p[head[hb]])):
                    hb = h
            if hb < 0:
                break
            q = head[hb]
            head[hb] += 1
            if top > first and hist_s[top - 1] == cand_s[q]:
                if cand_v[q] > hist_v[top - 1]:
                    hist_v[top - 1] = cand_v[q]
                    hist_p[top - 1] = cand_p[q]
                    hist_c[top - 1] = hb
            else:
                hist_s[top] = cand_s[q]
                hist_v[top] = cand_v[q]
                hist_p[top] = cand_p[q]
                hist_c[top] = hb
                kb = top * G_max
                pb = cand_p[q] * G_max
                for h in range(n_grades):
                    hist_k[kb + h] = hist_k[pb + h]
                hist_k[kb + hb] += 1
                top += 1
        off[placed + 1] = top
    return 0


@njit(cache=True)
def ndcg_merge(f, f_order, qptr, gptr, qg, b_grade, c, a, c_bar, ab, rho_lo, rho_hi,
               max_states, max_prefix, prune, values, g, done):
    r"""Values and score gradients of the NDCG hinge of every query, one compiled pass.

    Query ``t`` holds entries ``qptr[t]:qptr[t + 1]`` of the concatenated arrays (its rows by
    decreasing relevance); its grades are the segments ``gptr[qg[t]]:gptr[qg[t] + 1]``, ...,
    with gains ``b_grade``; ``ab[t]`` is :math:`a^T b` of the query. The assignment
    :math:`\max_\pi \sum_i c_i f_{\pi(i)} - a_i b_{\pi(i)}` has an optimum where the documents
    of each grade take their positions in decreasing ``f`` (exchange argument: swapping two
    documents of one grade changes only :math:`c^T f(\pi)`, and ``c`` decreases), so it is a
    merge of the grades' sorted lists: a dynamic programme over the counts
    :math:`(k_1, \dots, k_G)` placed so far,
    :math:`V(k) = \max_{g: k_g > 0} V(k - e_g) + c_i F_g[k_g - 1] - a_i b_g` with
    :math:`i = \sum k - 1`.

    Truncation (NDCG@k): past the first ``K`` positions the discounts vanish (:math:`a_i = 0`
    for :math:`i \ge K`), so the documents left after position ``K`` take the remaining
    positions in decreasing ``f`` whatever their grades (the same exchange argument). The
    programme then runs over the states with :math:`\sum k \le K` only (each count capped at
    ``K``), and a state with :math:`\sum k = K` adds the value of its tail, one sweep of the
    query's documents in decreasing ``f``: :math:`\prod_g(\min(n_g, K) + 1)` states instead of
    :math:`\prod_g(n_g + 1)`. ``K = n`` (no truncation) is the plain merge.

    Forced orders (pruning). Swapping document ``y`` at position ``i`` with ``x`` at
    ``i' > i`` changes the objective by :math:`(c_i - c_{i'})(f_x - f_y - \rho\,(b_x - b_y))`
    with :math:`\rho = (a_i - a_{i'})/(c_i - c_{i'})`, a mediant of the adjacent ratios
    :math:`\rho_l = (a_l - a_{l+1})/(c_l - c_{l+1})`, :math:`i \le l < i'`, so within their
    range over :math:`l \ge i`, :math:`[\rho^{lo}_i, \rho^{hi}_i]`. When
    :math:`f_x - f_y` exceeds :math:`\rho\,(b_x - b_y)` for every such :math:`\rho` (plus a
    rounding margin), every ranking with ``y`` at ``i`` and ``x`` after it gains strictly by the
    swap, so none is optimal: the programme never places ``y`` at ``i`` while ``x`` is unplaced.
    Within a grade the unplaced documents come in decreasing ``f``, so only the next one of each
    other grade is checked: O(G) per transition. ``prune = 2`` takes the range over
    :math:`l \ge i` (it narrows with ``i``: for :math:`c_i = 1/\sqrt{i}` and the log discounts
    :math:`\rho_l` falls from 1.26 to 0.62 over the first 40 positions and then rises slowly,
    so past the first few positions the band of unforced score differences is about 5 times
    narrower than with one range for all positions); ``prune = 1`` one range over all
    positions (the rule before issue 11's high-spread fix); ``prune = 0`` none (the whole
    merge). OHSUMED Fold 1, untruncated, at the score spread where most was left (a random
    ``w`` of entries ~0.003): 78,754 states with one range, 12,661 with the suffix ranges,
    against 9,177 positions (one state per layer is the least).

    The programme runs by layers (documents placed) over the states the forced orders allow,
    kept sorted by state index (ties in value keep the first), each state with its counts, its
    parent and its last grade, so the back-track is O(K). A query with more than
    ``max_states`` states in its index space :math:`\prod_g(\min(n_g, K) + 1)`, or whose forced
    orders leave a layer empty (rounding), is left to the caller (``done[t] = False``). A tail
    costs :math:`O(K)` from prefix sums of the documents by decreasing ``f`` shifted by
    :math:`d = 0, \dots, K` places (between the d-th and the (d+1)-th of the placed documents
    in that order, the tail's documents sit ``d`` places higher than their rank), built in
    :math:`O(Kn)` when :math:`(K + 1)(n + 1) \le` ``max_prefix``, else :math:`O(n)` by a sweep.

    ``values[t]`` gets :math:`c^T f(\pi) - \bar c^T f + a^T(b - b(\pi))` and ``g`` (aligned
    with ``f``) :math:`c(\pi^{-1}) - \bar c`.
    """
    n_queries = qptr.shape[0] - 1
    # every query's entries by decreasing f: f_order (any order of ties) bucketed by query
    m = f.shape[0]
    query_of = np.empty(m, dtype=np.int64)
    fill_q = np.empty(n_queries, dtype=np.int64)
    for t in range(n_queries):
        fill_q[t] = qptr[t]
        for j in range(qptr[t], qptr[t + 1]):
            query_of[j] = t
    by_f_all = np.empty(m, dtype=np.int64)  # local entries j - lo, query by query
    for r in range(m):
        e = f_order[r]
        t = query_of[e]
        by_f_all[fill_q[t]] = e - qptr[t]
        fill_q[t] += 1
    # scratch for the largest query, shared by all of them
    n_max = 1
    G_max = 1
    for t in range(n_queries):
        n_max = max(n_max, qptr[t + 1] - qptr[t])
        G_max = max(G_max, qg[t + 1] - qg[t])
    order = np.empty(n_max, dtype=np.int64)  # entries grade by grade, each by decreasing f
    fs = np.empty(n_max)  # f in that order
    rank = np.empty(n_max, dtype=np.int64)  # rank within its grade, by local entry j - lo
    grade = np.empty(n_max, dtype=np.int64)
    grank = np.empty(n_max, dtype=np.int64)  # rank by f of local entry j
    gone = np.empty(n_max + 2, dtype=np.int64)
    off = np.empty(n_max + 2, dtype=np.int64)
    stride = np.empty(G_max, dtype=np.int64)
    count = np.empty(G_max, dtype=np.int64)  # documents of the grade
    cap = np.empty(G_max, dtype=np.int64)  # of them placed within the first K
    fill = np.empty(G_max, dtype=np.int64)
    base = np.empty(G_max, dtype=np.int64)
    head = np.empty(G_max, dtype=np.int64)  # the merge's runs of candidates, one per grade
    stop = np.empty(G_max, dtype=np.int64)
    rd = np.empty((G_max, G_max))  # rho (b_x - b_y) of the layer, y of grade h, x of grade gg
    mg = np.empty((G_max, G_max))  # its rounding margin
    lower = np.empty((G_max, G_max), dtype=np.bool_)
    hist_n = 4 * n_max + 64  # grown (doubled) when a query needs more
    cand_n = 8 * G_max
    hist_s, hist_v, hist_p, hist_c, hist_k, cand_s, cand_v, cand_p = _programme_arrays(
        hist_n, cand_n, G_max)
    for t in range(n_queries):
        lo, hi = qptr[t], qptr[t + 1]
        n = hi - lo
        K = n  # positions with a nonzero discount (a is zero past NDCG@k's k)
        while K > 0 and a[lo + K - 1] == 0.0:
            K -= 1
        g0, g1 = qg[t], qg[t + 1]
        n_grades = g1 - g0
        states = 1
        for h in range(n_grades):
            stride[h] = states
            count[h] = gptr[g0 + h + 1] - gptr[g0 + h]
            cap[h] = min(count[h], K)
            states *= cap[h] + 1
            if states > max_states:
                break
        if states > max_states:
            done[t] = False
            continue
        done[t] = True
        # all documents by decreasing f (ties: the row order, an insertion sort of the runs
        # of equal f), and from it each grade's documents by decreasing f, with their ranks
        # within the grade
        by_f = by_f_all[lo:hi]
        for r in range(1, n):
            j = by_f[r]
            fj = f[lo + j]
            at = r
            while at > 0 and f[lo + by_f[at - 1]] == fj and by_f[at - 1] > j:
                by_f[at] = by_f[at - 1]
                at -= 1
            by_f[at] = j
        for h in range(n_grades):
            fill[h] = 0
            base[h] = gptr[g0 + h] - lo - 1
            for j in range(gptr[g0 + h] - lo, gptr[g0 + h + 1] - lo):
                grade[j] = h
        for r in range(n):
            j = by_f[r]
            h = grade[j]
            at = gptr[g0 + h] - lo + fill[h]
            order[at] = lo + j
            fs[at] = f[lo + j]
            rank[j] = fill[h]
            grank[j] = r
            fill[h] += 1
        tail = K < n
        # the tails by prefix sums: P[d, r] = sum_{r' < r} c[K + r' - d] f(by_f[r']), the
        # documents ranked r' by f shifted up by the d removed before them (see below)
        prefix = tail and (K + 1) * (n + 1) <= max_prefix
        P = np.zeros((K + 1, n + 1) if prefix else (0, 0))
        if prefix:
            for d in range(K + 1):
                acc = 0.0
                for r in range(n):
                    p_at = K + r - d
                    if 0 <= p_at < n:
                        acc += c[lo + p_at] * f[lo + by_f[r]]
                    P[d, r + 1] = acc
        fmax = 0.0
        for j in range(lo, hi):
            fmax = max(fmax, abs(f[j]))
        # the programme (grown and run again when out of room)
        while True:
            status = _merge_layers(fs, base, count, cap, stride, b_grade[g0:g1], c, a, lo, K,
                                   n_grades, rho_lo, rho_hi, prune, fmax, off, hist_s, hist_v,
                                   hist_p, hist_c, hist_k, G_max, cand_s, cand_v, cand_p, head,
                                   stop, rd, mg, lower)
            if status != 2:
                break
            hist_n *= 2
            cand_n *= 2
            hist_s, hist_v, hist_p, hist_c, hist_k, cand_s, cand_v, cand_p = _programme_arrays(
                hist_n, cand_n, G_max)
        if status == 1:  # forced orders in conflict (rounding): leave it to the caller
            done[t] = False
            continue
        best_end = -np.inf
        end = off[K]
        for e in range(off[K], off[K + 1]):
            kb = e * G_max
            total = hist_v[e]
            if prefix:  # the rest in decreasing f at positions K, K + 1, ...: between
                # the d-th and (d+1)-th placed documents (by f rank) the shift is d
                m_gone = 0
                for h2 in range(n_grades):
                    for r in range(hist_k[kb + h2]):
                        q_r = grank[order[gptr[g0 + h2] - lo + r] - lo]
                        at = m_gone  # insertion sort (K is small)
                        while at > 0 and gone[at - 1] > q_r:
                            gone[at] = gone[at - 1]
                            at -= 1
                        gone[at] = q_r
                        m_gone += 1
                prev = -1
                for d in range(K + 1):
                    nxt_q = gone[d] if d < K else n
                    total += P[d, nxt_q] - P[d, prev + 1]
                    prev = nxt_q
            elif tail:
                pos = lo + K
                for r in range(n):
                    j = by_f[r]
                    if rank[j] >= hist_k[kb + grade[j]]:
                        total += c[pos] * f[lo + j]
                        pos += 1
            if total > best_end:
                best_end = total
                end = e
        value = ab[t]
        for j in range(lo, hi):
            g[j] = -c_bar[j]
            value -= c_bar[j] * f[j]
        if tail:
            kb = end * G_max
            pos = lo + K
            for r in range(n):
                j = by_f[r]
                if rank[j] >= hist_k[kb + grade[j]]:
                    g[lo + j] += c[pos]
                    value += c[pos] * f[lo + j]
                    pos += 1
        # back-track: the entry of layer pos + 1 placed its grade's last counted document at pos
        e = end
        for pos in range(K - 1, -1, -1):
            h = hist_c[e]
            doc = order[gptr[g0 + h] - lo + hist_k[e * G_max + h] - 1]
            i = lo + pos
            g[doc] += c[i]
            value += c[i] * f[doc] - a[i] * b_grade[g0 + h]
            e = hist_p[e]
        values[t] = value
