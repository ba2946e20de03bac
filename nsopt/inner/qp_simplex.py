r"""The quadratic master problem over the simplex by a compiled SMO-type pairwise method.

For a regularizer with a quadratic conjugate :math:`\Omega^*(\mu) = \tfrac12\mu^T M\mu` (``L2``:
:math:`M = I`; ``QuadraticForm``: :math:`M = Q^{-1}`) the master dual of [TVSL10]_ (Cor. 3) is the
small dense QP

.. math:: \max_{\alpha\in\Delta_n}\ D(\alpha) = b^T\alpha - \frac{1}{2\lambda}\alpha^T G\alpha,
          \qquad G = A M A^T,\qquad w = -\frac{1}{\lambda} (MA)^T\alpha .

Why SMO
-------
BMRM adds one plane per iteration and the previous multipliers stay nearly optimal, so a
warm-started solve is typically a handful of pair updates that shift weight onto the new plane
and off a few old ones. A pairwise (SMO) method keeps the gradient
:math:`g = b - G\alpha/\lambda` current in :math:`O(n)` per update, needs no factorisation (so a
singular :math:`G`, from duplicate planes or from more planes than dimensions, costs nothing
extra), and its stopping test is a certificate: :math:`\max_i g_i - \min_{\alpha_j > 0} g_j`
bounds the Frank-Wolfe gap :math:`\max_i g_i - \alpha^T g`, which is the master duality gap. An
active-set or interior-point method would refactor an :math:`n \times n` system at every call;
OCAS loses most of its time there at small :math:`\lambda` (DESIGN.md Sec. 7).

Each update moves along :math:`e_i - e_j` with :math:`i = \arg\max_k g_k` and :math:`j`, among the
planes with :math:`\alpha_j > 0` and :math:`g_j < g_i`, maximising the second-order gain
:math:`(g_i - g_j)^2 / (G_{ii} + G_{jj} - 2G_{ij})` (the working-set selection of Fan, Chen and
Lin 2005, WSS 2, on the simplex); the step is the exact maximiser along the line, clipped at
:math:`\alpha_j = 0`.

SMO converges only linearly, and its tail to a gap of 1e-12 is most of its work. So the updates
run in rounds of a few per support plane; when a round leaves the support unchanged, a *polish*
solves the equality-constrained QP on that face exactly (a small least-squares KKT system,
:math:`O(|S|^3)`, :math:`|S|` at most about :math:`d + 1`), with up to two primal active-set drops
when a multiplier would turn negative, and is kept only if :math:`D` does not decrease. With the
right support this ends the solve at rounding level: on BMRM bundles of 500 planes a warm start
takes a few hundred pair updates and one or two polishes. Every stopping decision uses the
gradient recomputed from :math:`w` (:math:`O(nd)`), never the incrementally updated one.

Near the rounding level the two gradients disagree: SMO's incremental one says the target is
met after a single update while the recomputed one says it is not, and each round is one
update plus an :math:`O(nd)` check, up to ``max_iter`` of them (a 200 x 5 LAD problem at
:math:`\lambda = 10^{-6}` spent 10 s in such rounds, 100,000 of them in one solve). So a solve
also ends when ``_MAX_STALLS`` checks in a row (after SMO rounds or polishes) have not raised
:math:`D` by more than its rounding (the plane values' rounding plus :math:`8\epsilon(1 + |D|)`):
the reported gap is then the one reached, still certified, since ``dual_value`` is recomputed.

Several cutting-plane models
----------------------------
With ``bundle.n_blocks = P > 1`` ([UF12]_ Sec. 3.3) the feasible set is a product of ``P``
simplices, and the constraints are decoupled: a pair update along :math:`e_i - e_j` keeps the
block sums when :math:`i` and :math:`j` are in the same block. So :math:`i_p` is the argmax of
:math:`g` within each block :math:`p`, and :math:`j` is chosen, over all planes with
:math:`\alpha_j > 0`, by the same second-order gain against :math:`i_{p(j)}` (one pass,
:math:`O(n + P)`). The stopping test becomes
:math:`\max_p(\max_{i\in p} g_i - \min_{i\in p,\ \alpha_i>0} g_i) \le` tol, the polish solves the
KKT system with one equality (and one multiplier) per block, and the gap is
:math:`\sum_p(\max_{i\in p} g_i - \alpha_p^T g_p)`, the master duality gap. A maximiser over
``P`` simplices may have up to :math:`d + P` active planes, so SMO's support often spans a face on
which :math:`G_{SS}` is singular and :math:`D` is unbounded along a null direction (the KKT
system is inconsistent); the polish then follows that direction to the first multiplier that
reaches 0 (:func:`_unbounded_ray`), and allows ``2 + 4P`` drops. Both also apply with one
block, where they cure rare stalls of plain SMO plus polish on degenerate bundles (on random
bundles, 5 of 300 hit the update limit without them, none with them).

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010. Corollary 3.
.. [FCL05] R.-E. Fan, P.-H. Chen, C.-J. Lin. Working set selection using second order
   information for training support vector machines. JMLR 6:1889-1918, 2005. Sec. 3 (WSS 2).
.. [Pla98] J. C. Platt. Sequential minimal optimization: a fast algorithm for training support
   vector machines. Microsoft Research TR-98-14, 1998.
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   CVWW 2012. Sec. 3.3 (the dual over a product of simplices).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.linalg import get_lapack_funcs
from scipy.linalg.lapack import _compute_lwork

from ..regularizers import own_scaled_conjugate
from ._base import (InnerSolution, past, InnerSolver, bundle_blocks, check_int_option, default_tol,
                    plane_values)

__all__ = ["QPSimplex"]

_EPS = np.finfo(np.float64).eps
_MAX_DROPS = 2  # active-set drops per polish (one block; see _max_drops)
_BUDGET_FACTOR = 2  # SMO updates per support plane between support checks
_MAX_STALLS = 3  # checks in a row without an increase of D beyond rounding end a solve


def _c_block(G, buffer=None):
    """A C-contiguous array whose leading ``n x n`` block is ``G`` (n x n): ``G`` itself, the
    array it is a leading block of (the bundle's Gram buffer: ``G`` is a view of it), or a copy.
    ``buffer``: a C-contiguous array known to have ``G`` as its leading block (a
    :class:`~nsopt.bundle.PlaneBundle`'s ``_G``, whose ``G`` is ``_G[:n, :n]``), returned
    without the layout checks when it is ``G``'s base.

    So :func:`_smo` sees one array layout and is compiled once: passed as is, the bundle's
    view (layout 'A') and the full buffer once the bundle is at capacity (layout 'C') were two
    signatures, the second compiled mid-run (~0.6 s in the run's time).
    """
    if G.flags.c_contiguous:
        return G
    base = G.base
    if base is buffer:  # the bundle's own Gram buffer, G = buffer[:n, :n] (checked by the caller)
        return base
    if (isinstance(base, np.ndarray) and base.ndim == 2 and base.flags.c_contiguous
            and base.dtype == G.dtype and base.strides == G.strides
            and base.shape[0] >= G.shape[0] and base.shape[1] >= G.shape[1]
            and base.__array_interface__["data"][0] == G.__array_interface__["data"][0]):
        return base
    return np.ascontiguousarray(G)


_PLANE_BUNDLE = None


def _gram_buffer(bundle):
    """The C-contiguous buffer whose leading ``n x n`` block is ``bundle.G``, for a
    :class:`~nsopt.bundle.PlaneBundle` (its ``_G``), else None."""
    global _PLANE_BUNDLE
    if _PLANE_BUNDLE is None:  # imported on first use: no import-order tie between the modules
        from ..bundle import PlaneBundle as _PLANE_BUNDLE
    if type(bundle) is _PLANE_BUNDLE:
        buffer = bundle._G
        if buffer.flags.c_contiguous and buffer.dtype == np.float64:
            return buffer
    return None


@njit(cache=True)
def _smo(G, b, lam, alpha, grad, block, n_blocks, atol, rtol, max_iter):  # pragma: no cover
    """Pair updates until ``max_p (max_{i in p} g - min_{i in p, alpha>0} g) <= atol + rtol *
    (1 + |D|)``, each pair within one block ``p`` (``block[k]`` is plane k's block).

    ``alpha`` and ``grad`` (= b - G alpha / lam) are updated in place. Returns the number of
    updates and the final violation. ``G`` is symmetric: rows are read instead of columns.
    Only its leading ``n x n`` block is read (``n = b.shape[0]``; see :func:`_c_block`).
    """
    n = b.shape[0]
    maxdiag = 0.0
    for k in range(n):
        if G[k, k] > maxdiag:
            maxdiag = G[k, k]
    tau = 1e-12 * maxdiag if maxdiag > 0.0 else 1.0
    gmax = np.empty(n_blocks)
    gmin = np.empty(n_blocks)
    imax = np.zeros(n_blocks, dtype=np.int64)
    it = 0
    viol = np.inf
    while True:
        for p in range(n_blocks):
            gmax[p] = -np.inf
            gmin[p] = np.inf
            imax[p] = -1
        for k in range(n):
            p = block[k]
            if imax[p] < 0 or grad[k] > gmax[p]:
                gmax[p] = grad[k]
                imax[p] = k
        dual = 0.0
        j = -1
        best = -1.0
        for k in range(n):
            ak = alpha[k]
            if ak > 0.0:
                p = block[k]
                gk = grad[k]
                dual += ak * (b[k] + gk)
                if gk < gmin[p]:
                    gmin[p] = gk
                d = gmax[p] - gk
                if d > 0.0:
                    i = imax[p]
                    q = G[i, i] + G[k, k] - 2.0 * G[i, k]
                    if q < tau:
                        q = tau
                    score = d * d / q
                    if score > best:
                        best = score
                        j = k
        viol = -np.inf
        for p in range(n_blocks):
            v = gmax[p] - gmin[p]
            if v > viol:
                viol = v
        dual *= 0.5  # D = alpha^T (b + g) / 2 since G alpha / lam = b - g
        if j < 0 or viol <= atol + rtol * (1.0 + abs(dual)) or it >= max_iter:
            break
        # exact step along e_i - e_j (i, j in one block), clipped at alpha_j = 0
        p = block[j]
        i = imax[p]
        d = gmax[p] - grad[j]
        q = G[i, i] + G[j, j] - 2.0 * G[i, j]
        aj = alpha[j]
        t = aj
        if q > 0.0:
            t = lam * d / q
            if t > aj:
                t = aj
        if t <= 0.0:
            break
        if t == aj:
            alpha[j] = 0.0
        else:
            alpha[j] = aj - t
        alpha[i] += t
        c = t / lam
        for k in range(n):
            grad[k] -= c * (G[i, k] - G[j, k])
        it += 1
    return it, viol


@njit(cache=True)
def _forward(L, k, rhs):  # pragma: no cover - compiled
    """``L[:k, :k]^{-1} rhs[:k]`` (forward substitution)."""
    y = np.empty(k)
    for r in range(k):
        acc = rhs[r]
        for c in range(r):
            acc -= L[r, c] * y[c]
        y[r] = acc / L[r, r]
    return y


@njit(cache=True)
def _backward(L, k, y):  # pragma: no cover - compiled
    """``L[:k, :k]^{-T} y`` (back substitution), in ``y``'s place."""
    for r in range(k - 1, -1, -1):
        acc = y[r]
        for c in range(r + 1, k):
            acc -= L[c, r] * y[c]
        y[r] = acc / L[r, r]
    return y


@njit(cache=True)
def _chol_append(L, k, col, diag):  # pragma: no cover - compiled
    """Row ``k`` of the Cholesky factor of ``M`` bordered by ``col`` (``M[S, i]``) and ``diag``
    (``M[i, i]``): ``(l, d2)`` with ``L[:k, :k] l = col`` and ``d2 = diag - l^T l``, the squared
    new pivot (``<= 0`` up to rounding when the new row is dependent). ``L`` is not written."""
    l = _forward(L, k, col)
    d2 = diag
    for r in range(k):
        d2 -= l[r] * l[r]
    return l, d2


@njit(cache=True)
def _support_add(G, inv, rho, dep, L, S, inS, k, i, col):  # pragma: no cover - compiled
    """Let plane ``i`` join the support ``S[:k]`` when its lifted slope is independent of
    theirs (the new pivot of ``M = G / lam + rho 11^T`` above ``dep`` of its diagonal): the
    factor ``L`` gains row ``k``. Returns ``(k', l)``: ``k + 1``, or ``k`` (not added) with
    ``l = L^{-1} M[S, i]`` for the caller's pivot."""
    for r in range(k):
        col[r] = G[S[r], i] * inv + rho
    diag = G[i, i] * inv + rho
    l, d2 = _chol_append(L, k, col, diag)
    if not d2 > dep * diag or k == L.shape[0]:   # dependent, or no room (k = d + 1 already)
        return k, l
    for c in range(k):
        L[k, c] = l[c]
    L[k, k] = math.sqrt(d2)
    S[k] = i
    inS[i] = True
    return k + 1, l


@njit(cache=True)
def _support_remove(L, S, inS, k, r):  # pragma: no cover - compiled
    """Plane ``S[r]`` leaves the support ``S[:k]`` (its factor row and column go); ``k - 1``."""
    inS[S[r]] = False
    _chol_delete(L, k, r)
    for t in range(r, k - 1):
        S[t] = S[t + 1]
    return k - 1


@njit(cache=True)
def _normalize_support(alpha, S, k):  # pragma: no cover - compiled
    """Scale ``alpha`` on ``S[:k]`` to sum 1; returns the sum before (not scaled when <= 0)."""
    total = 0.0
    for r in range(k):
        total += alpha[S[r]]
    if total > 0.0:
        for r in range(k):
            alpha[S[r]] /= total
    return total


@njit(cache=True)
def _chol_delete(L, k, r):  # pragma: no cover - compiled
    """Remove row and column ``r`` from the ``k x k`` lower Cholesky factor ``L`` in place
    (``L L^T`` loses row and column ``r``): the rows below shift up and Givens rotations of
    columns ``(i, i + 1)`` restore the triangle, :math:`O(k^2)` (Golub and Van Loan, Sec. 6.5)."""
    for i in range(r, k - 1):
        for c in range(i + 2):
            L[i, c] = L[i + 1, c]
    for i in range(r, k - 1):
        a = L[i, i]
        e = L[i, i + 1]
        h = math.hypot(a, e)
        if h == 0.0:
            continue
        cs = a / h
        sn = e / h
        for row in range(i, k - 1):
            x = L[row, i]
            y = L[row, i + 1]
            L[row, i] = cs * x + sn * y
            L[row, i + 1] = cs * y - sn * x
        L[i, i + 1] = 0.0
    for c in range(k):
        L[k - 1, c] = 0.0
        L[c, k - 1] = 0.0


@njit(cache=True)
def _chol_solve(L, k, rhs):  # pragma: no cover - compiled
    """``(L L^T)^{-1} rhs`` for the leading ``k x k`` block of ``L``."""
    return _backward(L, k, _forward(L, k, rhs))


@njit(cache=True)
def _active_set(G, b, lam, alpha, atol, max_iter, cap):  # pragma: no cover - compiled
    r"""A primal active-set method for :math:`\min_{\alpha\in\Delta_n} \tfrac1{2\lambda}
    \alpha^TG\alpha - b^T\alpha` (one simplex), warm-started from ``alpha`` (updated in place).

    The face of the support ``S`` is solved exactly through the Cholesky factor of
    :math:`M_{SS}`, :math:`M = G/\lambda + \rho 11^T`: on :math:`1^T\alpha = 1` the term
    :math:`\rho 11^T` only adds a constant, and it makes :math:`M_{SS}` positive definite
    exactly when the lifted slopes :math:`(a_i, 1)` of ``S`` are independent, which the method
    keeps (so ``|S| <= d + 1``, and the faces of a polyhedral model with ``d + 1`` active planes,
    singular in :math:`G`, are not). Then, as in Nocedal and Wright's Alg. 16.3: move towards
    the face's minimiser until a multiplier reaches 0 (it leaves ``S``), or, at the face's
    minimiser, let the plane of largest value :math:`b_i - (G\alpha)_i/\lambda` above the
    support's common value enter; a plane whose lifted slope depends on ``S``'s enters by a
    pivot along the null direction (a ratio test, as in the simplex method). The factor is
    updated by one row per entering plane and by Givens rotations per leaving one,
    :math:`O(|S|^2)` each (Kiwiel's QP method for bundle subproblems works on the same faces).

    ``cap``: the most planes a support can hold, ``min(n, d + 1)`` (the factor is
    ``cap x cap``).

    Returns ``(iterations, violation, status)``: the last violation
    :math:`\max_i g_i - \alpha^Tg` seen, status 0 (stopped at ``atol``), 1 (``max_iter``),
    2 (a numerical failure: the caller's SMO and polish take over from ``alpha``, which is
    always feasible).
    """
    n = b.shape[0]
    maxdiag = 0.0
    for i in range(n):
        if G[i, i] > maxdiag:
            maxdiag = G[i, i]
    inv = 1.0 / lam
    rho = maxdiag * inv if maxdiag > 0.0 else 1.0
    dep = 1e-11
    cap = max(min(cap, n), 1)
    L = np.zeros((cap, cap))
    S = np.empty(cap, dtype=np.int64)
    inS = np.zeros(n, dtype=np.bool_)
    k = 0
    col = np.empty(cap)
    order = np.argsort(-alpha)
    for t in range(n):
        i = order[t]
        if not alpha[i] > 0.0:
            break
        k = _support_add(G, inv, rho, dep, L, S, inS, k, i, col)[0]
    for i in range(n):
        if not inS[i]:
            alpha[i] = 0.0
    if not _normalize_support(alpha, S, k) > 0.0:
        return 0, np.inf, 2
    rhs_b = np.empty(cap)
    ones = np.ones(cap)
    grad = np.empty(n)
    viol = np.inf
    it = 0
    at_face = False
    while it < max_iter:
        it += 1
        if not at_face:
            for r in range(k):
                rhs_b[r] = b[S[r]]
            y1 = _chol_solve(L, k, rhs_b)
            y2 = _chol_solve(L, k, ones)
            s1 = 0.0
            s2 = 0.0
            for r in range(k):
                s1 += y1[r]
                s2 += y2[r]
            if not (s2 > 0.0 and math.isfinite(s1)):
                return it, viol, 2
            nu = (s1 - 1.0) / s2
            step = 1.0
            block = -1
            for r in range(k):
                p = y1[r] - nu * y2[r]
                a = alpha[S[r]]
                if p < a and p <= 0.0:
                    ratio = a / (a - p)
                    if ratio < step:
                        step = ratio
                        block = r
            for r in range(k):
                p = y1[r] - nu * y2[r]
                a = alpha[S[r]]
                alpha[S[r]] = max(a + step * (p - a), 0.0)
            if block >= 0:
                alpha[S[block]] = 0.0
                k = _support_remove(L, S, inS, k, block)
                if not _normalize_support(alpha, S, k) > 0.0:
                    return it, viol, 2
                continue
            _normalize_support(alpha, S, k)
            at_face = True
        # at the face's minimiser: the values b - G alpha / lam and the entering plane
        for i in range(n):
            acc = 0.0
            for r in range(k):
                acc += G[i, S[r]] * alpha[S[r]]
            grad[i] = b[i] - acc * inv
        common = 0.0
        for r in range(k):
            common += alpha[S[r]] * grad[S[r]]
        best = -np.inf
        enter = -1
        for i in range(n):
            if not inS[i] and grad[i] > best:
                best = grad[i]
                enter = i
        viol = best - common if enter >= 0 else 0.0
        if enter < 0 or viol <= atol:
            return it, max(viol, 0.0), 0
        k_new, l = _support_add(G, inv, rho, dep, L, S, inS, k, enter, col)
        if k_new > k:
            k = k_new
            at_face = False
            continue
        # dependent: z_enter = sum_r c_r z_S[r]; pivot along e_enter - sum_r c_r e_S[r]
        cvec = _backward(L, k, l.copy())
        step = np.inf
        block = -1
        for r in range(k):
            if cvec[r] > 0.0:
                ratio = alpha[S[r]] / cvec[r]
                if ratio < step:
                    step = ratio
                    block = r
        if block < 0:
            return it, viol, 2
        for r in range(k):
            alpha[S[r]] = max(alpha[S[r]] - step * cvec[r], 0.0)
        alpha[S[block]] = 0.0
        alpha[enter] = step
        k = _support_remove(L, S, inS, k, block)
        k_new = _support_add(G, inv, rho, dep, L, S, inS, k, enter, col)[0]
        if k_new == k:
            return it, viol, 2
        k = k_new
        _normalize_support(alpha, S, k)
        at_face = False
    return it, viol, 1


class QPSimplex(InnerSolver):
    r"""Master dual of a quadratic regularizer by a compiled SMO method (numba).

    .. math:: \max_{\alpha\in\Delta_n} b^T\alpha - \frac{1}{2\lambda}\alpha^T G\alpha

    (over the product of ``bundle.n_blocks`` simplices when the bundle has several models).

    Parameters
    ----------
    max_iter : int, default 100000
        Maximum number of pair updates per solve, ``>= 1``.
    polish_rounds : int, default 50
        Maximum number of exact face solves (polishes) per solve, ``>= 0``; ``0`` is pure SMO.
    active_set : bool, default False
        Start with the compiled primal active-set method (:func:`_active_set`): exact face
        solves through an updated Cholesky factor, :math:`O(|S|^2)` per entering or leaving
        plane, warm from ``warm``; SMO and the polish then finish what rounding leaves (one
        block only). The trust-region bundle's master uses it: on its faces of ~d + 1 planes
        the polishes' least-squares solves cost ~20 ms a master solve at d = 100.

    Notes
    -----
    Notation: ``G = bundle.G`` (:math:`a_i^T M a_j`), ``g = b - G alpha / lam`` the gradient of
    the dual, equal to the plane values :math:`\langle a_i, w\rangle + b_i` at the dual point
    :math:`w = -(MA)^T\alpha/\lambda` ([TVSL10]_ Cor. 3).

    The bundle must be built with the regularizer's metric (``PlaneBundle(d,
    metric=reg.metric)``, or no metric for L2). The reported ``dual_value`` is recomputed as
    :math:`b^T\alpha - \lambda\Omega^*(-A^T\alpha/\lambda)` with ``reg.conjugate``, so it is a
    lower bound whatever the accuracy of the solve; a bundle whose metric does not match the
    regularizer raises ``ValueError``.

    ``n_iter`` counts pair updates plus polishes. ``tol`` below the rounding level of the plane
    values (about :math:`4\epsilon\sqrt{n + d}\,\max_i |\langle a_i, w\rangle + b_i|`) is raised
    to it.

    Cost: :math:`O(n)` per pair update, :math:`O(n d)` per check of the gap (once per round),
    :math:`O(|S|^3)` per polish.

    References
    ----------
    .. [TVSL10] Teo et al., JMLR 2010, Corollary 3.
    .. [FCL05] Fan, Chen and Lin, JMLR 2005, WSS 2.
    .. [UF12] Uřičář and Franc, CVWW 2012, Sec. 3.3.
    """

    name = "qp"
    families = ("qp",)

    def __init__(self, *, max_iter: int = 100000, polish_rounds: int = 50,
                 active_set: bool = False):
        self.max_iter = check_int_option(max_iter, "max_iter")
        self.polish_rounds = check_int_option(polish_rounds, "polish_rounds", low=0)
        if not isinstance(active_set, (bool, np.bool_)):
            raise TypeError(f"active_set must be a bool, got {active_set!r}")
        self.active_set = bool(active_set)

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None):
        G = bundle.G
        b = np.ascontiguousarray(bundle.b)
        n = b.size
        blocks = bundle_blocks(bundle)
        if warm is None:
            # the best single plane: D(e_k) = b_k - G_kk / (2 lam) (in every block)
            alpha = np.zeros(n)
            score = b - np.diag(G) / (2.0 * lam)
            if blocks.multi:
                alpha = blocks.argmax_vertex(score)
            else:
                alpha[int(np.argmax(score))] = 1.0
        else:
            alpha = warm
        b_max = float(np.abs(b).max())  # |b|'s part of the rounding floor, fixed in the solve
        G_smo = _c_block(G, _gram_buffer(bundle))
        n_active = 0
        if self.active_set and not blocks.multi:
            # the exact face solves first (warm: a few entering / leaving planes); SMO and
            # the polish below only finish what rounding leaves
            n_active, _, status = _active_set(G_smo, b, lam, alpha,
                                              0.5 * default_tol(tol, b_max), self.max_iter,
                                              min(n, int(bundle.dim) + 1))
            if status == 2:
                alpha = blocks.normalize(np.maximum(alpha, 0.0))
        grad, viol, dual, target, noise, a = self._measure(bundle, lam, alpha, tol, blocks, b_max)
        # the multipliers last measured with (MA)^T alpha and the plane values, while fresh (no
        # pair update since: _smo moves alpha and grad in place)
        last, fresh = (alpha, a, grad), True
        n_iter = polishes = stalls = 0
        best = dual
        while viol > target and n_iter < self.max_iter and not past(deadline):
            # SMO pair updates, in rounds of a few per plane of the support ...
            support = alpha > 0
            budget = _BUDGET_FACTOR * (int(np.count_nonzero(support)) + 10)
            it, smo_viol = _smo(G_smo, b, lam, alpha, grad, blocks.labels, blocks.n_blocks,
                                target, 0.0, min(budget, self.max_iter - n_iter))
            n_iter += it
            fresh = fresh and it == 0
            stable = not ((alpha > 0) != support).any()
            can_polish = polishes < self.polish_rounds
            if not (smo_viol <= target or it == 0 or (stable and can_polish)):
                continue
            grad, viol, dual, target, noise, a = self._measure(bundle, lam, alpha, tol, blocks,
                                                               b_max)
            last, fresh = (alpha, a, grad), True
            if viol <= target:
                break
            # stalled at the rounding level: SMO's rounds (and polishes) no longer raise D
            if dual > best + noise:
                best, stalls = dual, 0
            else:
                stalls += 1
                if stalls >= _MAX_STALLS:
                    break
            if not can_polish:
                if it == 0:
                    break
                continue
            # ... then, once the support stops changing, the exact maximiser on its face
            polished = _polish(G, b, lam, alpha, blocks, _max_drops(blocks.n_blocks))
            polishes += 1
            trial = self._measure(bundle, lam, polished, tol, blocks, b_max)
            if trial[2] >= dual - 8 * _EPS * (abs(dual) + 1.0):
                alpha = polished
                grad, viol, dual, target, noise, a = trial
                last, fresh = (alpha, a, grad), True
                if dual > best + noise:
                    best, stalls = dual, 0
            elif it == 0:
                break
        n_iter += polishes + n_active
        measured = last if fresh and last[0] is alpha else None
        normalized = blocks.normalize(alpha)
        if measured is not None and not np.array_equal(normalized, alpha):
            measured = None  # the rescaling moved alpha: w and the plane values are re-formed
        return finish_quadratic(bundle, reg, lam, normalized, n_iter, blocks, measured)

    @staticmethod
    def _measure(bundle, lam, alpha, tol, blocks, b_max=None):
        """``(grad, violation, D, target, noise, a)`` at ``alpha``, the gradient afresh from ``w``
        (``a = (MA)^T alpha``, ``w = -a / lam``).

        ``<a_i, w> + b_i`` in O(n d) is more accurate than ``b - G alpha / lam``, whose terms
        ``(G alpha)_k / lam`` can be much larger than the plane values they sum to. The target is
        ``tol`` (default ``1e-12 (1 + |D|)``) but no less than the rounding of the plane values.
        The violation is the largest over the blocks. ``noise`` is the change of ``D`` taken
        for rounding when deciding whether the solve still makes progress: that floor plus
        ``8 eps (1 + |D|)``. ``b_max``: ``max |b_i|`` when the caller has it (it is fixed during
        a solve).
        """
        b = bundle.b
        a = bundle.rmatvec(alpha, metric=True)
        grad = plane_values(bundle, -a / lam)  # w = -(MA)^T alpha / lam, as primal_point forms it
        dual = 0.5 * float(alpha @ (b + grad))  # D = alpha^T (b + g) / 2 for the quadratic
        if b_max is None:
            b_max = float(np.abs(b).max())
        fused = _fused_extremes(alpha, grad, b, blocks)
        if fused is not None:
            viol, dev = fused
        else:
            viol = blocks.violation(alpha, grad)
            dev = np.abs(grad - b).max()
        scale = float(b_max + dev)
        floor = 4.0 * _EPS * math.sqrt(b.size + bundle.dim) * scale
        noise = floor + 8.0 * _EPS * (1.0 + abs(dual))
        return grad, viol, dual, max(default_tol(tol, dual), floor), noise, a


@njit(cache=True)
def _extremes(alpha, grad, b):  # pragma: no cover - compiled
    """``(max g - min_{alpha>0} g, max |g - b|, clean)`` in one pass; ``clean`` is False when
    ``g`` or ``g - b`` holds a NaN or ``alpha`` has no positive entry (the caller then uses numpy's
    reductions, which treat those cases their own way)."""
    gmax = -np.inf
    gmin = np.inf
    dev = 0.0
    support = False
    for k in range(grad.shape[0]):
        g = grad[k]
        if g != g:
            return 0.0, 0.0, False
        if g > gmax:
            gmax = g
        if alpha[k] > 0.0:
            support = True
            if g < gmin:
                gmin = g
        e = abs(g - b[k])
        if e != e:  # inf - inf
            return 0.0, 0.0, False
        if e > dev:
            dev = e
    return gmax - gmin, dev, support


def _fused_extremes(alpha, grad, b, blocks):
    """``(blocks.violation(alpha, grad), max |grad - b|)`` by one compiled pass for one block and
    C-contiguous float64 vectors (the values are exact, so the same as numpy's), else None."""
    if blocks.n_blocks != 1:
        return None
    for v in (alpha, grad, b):
        if type(v) is not np.ndarray or v.dtype != np.float64 or not v.flags.c_contiguous:
            return None
    viol, dev, clean = _extremes(alpha, grad, b)
    return (viol, dev) if clean else None


_GELSY, _GELSY_LWORK = get_lapack_funcs(("gelsy", "gelsy_lwork"), (np.zeros((1, 1)), np.zeros(1)))
_LWORK: dict[int, int] = {}


def _lstsq(K, rhs):
    """``scipy.linalg.lstsq(K, rhs, lapack_driver="gelsy", check_finite=False)[0]`` for a
    square float64 ``K`` (k x k, ``k >= 1``) and a k-vector ``rhs``: the same LAPACK call with the
    same workspace and ``cond`` (so the same bits), without the wrapper's per-call checks and
    workspace query (about 15 us of the ~25 us a polish round spent there on a 10 x 10 system).
    """
    k = K.shape[0]
    lwork = _LWORK.get(k)
    if lwork is None:
        lwork = _LWORK[k] = _compute_lwork(_GELSY_LWORK, k, k, 1, _EPS)
    jptv = np.zeros((k, 1), dtype=np.int32)
    x, info = _GELSY(K, rhs, jptv, _EPS, lwork, False, False)[1::3]
    if info < 0:  # pragma: no cover - a malformed call, never a property of the data
        raise ValueError(f"illegal value in argument {-info} of LAPACK gelsy")
    return x


def _max_drops(n_blocks: int) -> int:
    """Active-set drops per polish: a maximiser over P simplices has up to ``d + P`` active
    planes and SMO's support carries extra planes in every block, so allow more drops."""
    return _MAX_DROPS + 4 * n_blocks


def _polish(G, b, lam, alpha, blocks, max_drops=_MAX_DROPS):
    r"""Maximise D on the face of the simplex spanned by the support of ``alpha``.

    Solves the KKT system :math:`G_{SS}\alpha_S/\lambda + \nu 1 = b_S,\ 1^T\alpha_S = 1` (least
    squares: :math:`G_{SS}` may be singular) and moves towards its solution as far as the bounds
    allow; a blocking multiplier leaves the support and the face shrinks (a primal active-set
    step, at most ``max_drops`` times: SMO is better at discarding many planes). D increases along
    the way (concave on the segment). With several blocks there is one equality
    :math:`E_p^T\alpha_S = 1` and one multiplier :math:`\nu_p` per block (a face of the product).
    """
    start, alpha = alpha, alpha.copy()
    labels = blocks.labels
    support = (alpha > 0).nonzero()[0]
    for _ in range(max_drops + 1):
        if support.size <= blocks.n_blocks:  # one plane per block: the face is a point
            break
        k = support.size
        H = G[support[:, None], support] / lam
        # the mean of |diag H| as np.mean forms it (a sum divided by k), without its wrapper
        c = max(float(np.add.reduce(np.abs(H.diagonal()))) / k, 1e-300) ** 0.5  # balance the blocks
        P = blocks.n_blocks
        K = np.zeros((k + P, k + P))
        K[:k, :k] = H
        if P == 1:
            K[:k, k] = c
            K[k, :k] = c
        else:
            rows = np.arange(k)
            K[rows, k + labels[support]] = c
            K[k + labels[support], rows] = c
        rhs = np.empty(k + P)
        rhs[:k] = b[support]
        rhs[k:] = c
        solution = _lstsq(K, rhs)
        target = solution[:k]
        current = alpha[support]
        step = target - current
        ray = _unbounded_ray(K, rhs, solution, k, labels[support], P)  # singular face?
        if ray is not None:  # D grows without bound on the face: follow it to a bound
            if not float((b[support] - H @ current) @ ray) > 0:
                break
            down = (ray < 0).nonzero()[0]
            ratios = current[down] / -ray[down]
            r = int(ratios.argmin())
            alpha[support] = np.maximum(current + ratios[r] * ray, 0.0)
            alpha[support[down[r]]] = 0.0
            support = (alpha > 0).nonzero()[0]
            continue
        down = step < 0
        if not down.any():
            alpha[support] = np.maximum(target, 0.0)
            break
        ratios = current[down] / -step[down]
        r = int(ratios.argmin())
        if ratios[r] >= 1.0:
            alpha[support] = np.maximum(target, 0.0)
            break
        alpha[support] = np.maximum(current + ratios[r] * step, 0.0)
        alpha[support[down.nonzero()[0][r]]] = 0.0
        support = (alpha > 0).nonzero()[0]
    if blocks.multi and not np.all(blocks.sums(alpha) > 0):  # pragma: no cover - rounding guard
        return start.copy()  # a block lost all its weight: keep the start (a rejected polish)
    return blocks.normalize(alpha)


def _unbounded_ray(K, rhs, solution, k, labels, n_blocks):
    r"""A direction along which D grows linearly on the face, when the KKT system is inconsistent.

    With several blocks the support often spans a face of dimension above ``d`` (up to ``d + P``
    planes are active at a maximiser), where :math:`G_{SS}` is singular. Then the KKT system may
    have no solution: D is unbounded above on the face's affine hull, along some :math:`v` with
    :math:`G_{SS} v = 0`, :math:`E^T v = 0` and :math:`b_S^T v > 0`. The least-squares residual
    :math:`r = \text{rhs} - K x` lies in :math:`\ker K`, and its first ``k`` entries are such a
    :math:`v` (its multiplier part vanishes when every block has a plane in the support); moving
    along it until a multiplier reaches 0 is the primal active-set step. ``None`` when the system
    is consistent (to about :math:`\sqrt\epsilon` relative).
    """
    residual = rhs - K @ solution
    # the Euclidean norms as np.linalg.norm computes them (sqrt of the dot), without its wrapper
    if not (math.sqrt(float(residual @ residual))
            > math.sqrt(_EPS) * (math.sqrt(float(rhs @ rhs)) + 1e-300)):
        return None
    ray = residual[:k]
    counts = np.maximum(np.bincount(labels, minlength=n_blocks), 1)
    ray = ray - (np.bincount(labels, weights=ray, minlength=n_blocks) / counts)[labels]
    return ray if np.any(ray < 0) else None


def primal_point(bundle, lam, alpha):
    """``w = -(M A)^T alpha / lam``, summed over the support of ``alpha``."""
    return -bundle.rmatvec(alpha, metric=True) / lam


def finish_quadratic(bundle, reg, lam, alpha, n_iter, blocks=None, measured=None) -> InnerSolution:
    r"""``w``, the dual value (through ``reg.conjugate``) and the gap at feasible ``alpha``
    (``blocks``: the bundle's block structure, read from it when None).

    ``measured``: ``(alpha, a, grad)`` of :meth:`QPSimplex._measure` at these very multipliers:
    without a metric (``M = I``) ``a = (MA)^T alpha`` is :math:`\bar a = A^T\alpha` and ``grad``
    the plane values at ``w = -a / lam``, taken instead of formed again (the same operations,
    so the same bits)."""
    if blocks is None:
        blocks = bundle_blocks(bundle)
    grad = None
    if measured is not None and bundle.metric is None:
        _, a_bar, grad = measured
    else:
        a_bar = bundle.rmatvec(alpha)
    support = alpha.nonzero()[0]
    b_dot = float(alpha[support] @ bundle.b[support])
    dual = b_dot - own_scaled_conjugate(reg, a_bar, lam)  # a_bar is ours: no re-check
    if bundle.metric is not None:
        w = np.divide(bundle.rmatvec(alpha, metric=True), -lam)
        dual_gram = b_dot + 0.5 * float(a_bar @ w)  # the same value through the bundle's metric
    else:
        # w = -a_bar / lam in a_bar's buffer (a_bar is not needed past here: one d-vector less)
        dual_gram = b_dot - 0.5 * float(a_bar @ a_bar) / lam
        w = np.divide(a_bar, -lam, out=a_bar)
    del a_bar
    if grad is None:
        grad = plane_values(bundle, w)
    if not abs(dual - dual_gram) <= 1e-8 * (1.0 + abs(b_dot) + abs(dual - b_dot)):
        raise ValueError(
            f"the bundle's metric does not match {type(reg).__name__}'s conjugate "
            f"(dual value {dual!r} by reg.conjugate, {dual_gram!r} by the Gram matrix); build the "
            "bundle as PlaneBundle(dim, metric=reg.metric) (no metric for L2)"
        )
    return InnerSolution(alpha, dual, w, blocks.gap(alpha, grad), int(n_iter))
