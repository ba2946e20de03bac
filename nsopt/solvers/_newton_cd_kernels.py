r"""Compiled kernels of the L1 Newton coordinate-descent solver (:class:`~.newton_cd.NewtonCD`).

The problem is :math:`F(w) = \lambda\sum_j p_j|w_j| + \sum_i c_i\,\phi(y_i z_i)`,
:math:`z = Xw` (plus an unpenalised intercept column of ones, :math:`p = 0`, when asked for),
with a margin loss of kind :data:`SQUARED_HINGE` (:math:`\phi(u) = \tfrac12\max(0, 1-u)^2`,
its generalised second derivative :math:`1[u < 1]`) or :data:`LOGISTIC`
(:math:`\phi(u) = \log(1 + e^{-u})`). Per example the kernels keep the dual variable
:math:`t_i = -\phi'(y_i z_i)` (the certificate's dual point) and the Hessian weight
:math:`D_i = c_i\phi''(y_i z_i)`; per column (CSC) the gradient :math:`\nabla_j =
-\sum_i x_{ij} c_i y_i t_i` and the Hessian diagonal :math:`H_{jj} = \sum_i x_{ij}^2 D_i + \nu`.
The intercept, when present, is column ``d`` and is not stored: its entries are all 1.

Written for nsopt from the paper's description ([YHL12]_ Alg. 3, Sec. 5-6), not from
liblinear's source.

.. [YHL12] G.-X. Yuan, C.-H. Ho, C.-J. Lin. An improved GLMNET for L1-regularized logistic
   regression. JMLR 13:1999-2030, 2012.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._dcd_kernels import _shuffle  # Fisher-Yates on a xorshift state (shared with dcd)

__all__ = ["SQUARED_HINGE", "LOGISTIC", "margin_terms", "loss_sum", "line_loss", "grad_hess",
           "inner_cd", "dual_slope", "conjugate_sum", "penalty", "scores", "gram", "dense_cd",
           "violations", "column_products", "weighted_moments"]

#: the loss kinds (the numbering of :func:`nsopt.solvers.newton_cd.loss_kind`)
SQUARED_HINGE, LOGISTIC = 1, 2


@njit(cache=True, inline="always")
def _phi(kind, u):
    """:math:`\\phi(u)` without overflow."""
    if kind == SQUARED_HINGE:
        r = 1.0 - u
        return 0.5 * r * r if r > 0.0 else 0.0
    if u >= 0.0:
        return math.log1p(math.exp(-u))
    return -u + math.log1p(math.exp(u))


@njit(cache=True)
def margin_terms(kind, z, y, c, t, D):
    r"""At the scores ``z``: writes :math:`t_i = -\phi'(y_i z_i)` and :math:`D_i = c_i
    \phi''(y_i z_i)`; returns the loss :math:`\sum_i c_i \phi(y_i z_i)`. O(m)."""
    total = 0.0
    for i in range(z.size):
        u = y[i] * z[i]
        if kind == SQUARED_HINGE:
            r = 1.0 - u
            if r > 0.0:
                total += c[i] * 0.5 * r * r
                t[i] = r
                D[i] = c[i]
            else:
                t[i] = 0.0
                D[i] = 0.0
        else:
            if u >= 0.0:
                e = math.exp(-u)
                total += c[i] * math.log1p(e)
                s = e / (1.0 + e)          # sigma(-u)
            else:
                e = math.exp(u)
                total += c[i] * (-u + math.log1p(e))
                s = 1.0 / (1.0 + e)
            t[i] = s
            D[i] = c[i] * s * (1.0 - s)
    return total


@njit(cache=True)
def loss_sum(kind, z, y, c):
    r""":math:`\sum_i c_i \phi(y_i z_i)`. O(m)."""
    total = 0.0
    for i in range(z.size):
        total += c[i] * _phi(kind, y[i] * z[i])
    return total


@njit(cache=True)
def line_loss(kind, z, q, beta, y, c):
    r""":math:`\sum_i c_i \phi(y_i (z_i + \beta q_i))`: the loss along the Newton direction
    (``q = X d``), no data pass. O(m)."""
    total = 0.0
    for i in range(z.size):
        total += c[i] * _phi(kind, y[i] * (z[i] + beta * q[i]))
    return total


@njit(cache=True)
def penalty(w, pen):
    r""":math:`\sum_j p_j |w_j|`."""
    total = 0.0
    for j in range(w.size):
        if pen[j] != 0.0:
            total += pen[j] * abs(w[j])
    return total


@njit(cache=True)
def grad_hess(indptr, indices, data, cyt, D, has_b, nu, grad, hdiag):
    r"""One pass over the columns: :math:`\nabla_j = -\sum_i x_{ij} (c y t)_i` and
    :math:`H_{jj} = \sum_i x_{ij}^2 D_i + \nu` for every column (and the intercept's, column
    ``d``, when ``has_b``)."""
    d = indptr.size - 1
    for j in range(d):
        g = 0.0
        h = nu
        for k in range(indptr[j], indptr[j + 1]):
            i = indices[k]
            x = data[k]
            g -= x * cyt[i]
            h += x * x * D[i]
        grad[j] = g
        hdiag[j] = h
    if has_b:
        g = 0.0
        h = nu
        for i in range(cyt.size):
            g -= cyt[i]
            h += D[i]
        grad[d] = g
        hdiag[d] = h


@njit(cache=True)
def scores(indptr, indices, data, w, has_b, m):
    """:math:`z = Xw` (+ b) over the nonzero entries of ``w`` (CSC columns)."""
    d = indptr.size - 1
    z = np.full(m, w[d] if has_b else 0.0)
    for j in range(d):
        wj = w[j]
        if wj != 0.0:
            for k in range(indptr[j], indptr[j + 1]):
                z[indices[k]] += data[k] * wj
    return z


@njit(cache=True)
def inner_cd(indptr, indices, data, D, grad, hdiag, w, wpd, q, active, n_active, pen, lam,
             nu, tol, max_sweeps, max_step, rng):
    r"""Cyclic coordinate descent on the quadratic model of :math:`F` at ``w``
    ([YHL12]_ eq. (13)),

    .. math:: q(v) = \nabla^T(v - w) + \tfrac12 (v - w)^T (X^T D X + \nu I)(v - w)
              + \lambda\sum_j p_j |v_j|,

    over the columns ``active[:n_active]`` in a random order per sweep, from ``wpd`` (= ``w``
    on entry, the model's minimiser on exit) with ``q = X(wpd - w)`` kept up to date. Each
    coordinate takes the exact minimiser of its 1-D piece (soft thresholding), clipped to
    ``max_step``. Shrinking ([YHL12]_ Sec. 5.2): a zero coordinate whose model gradient lies
    inside :math:`(-\lambda p_j + M/m, \lambda p_j - M/m)` (M: last sweep's largest
    violation) leaves the sweep; the sweeps stop when the violations sum to at most ``tol``
    on the whole active set (a shrunk set that meets it is enlarged again once).

    Returns the number of sweeps."""
    d = indptr.size - 1
    m = q.size
    n_qp = n_active
    m_old = math.inf
    sweeps = 0
    while sweeps < max_sweeps:
        m_new = 0.0
        total = 0.0
        _shuffle(active, n_qp, rng)
        s = 0
        while s < n_qp:
            j = active[s]
            h = hdiag[j]
            g = grad[j] + (wpd[j] - w[j]) * nu
            if j == d:            # the intercept: a column of ones
                for i in range(m):
                    g += D[i] * q[i]
            else:
                for k in range(indptr[j], indptr[j + 1]):
                    i = indices[k]
                    g += data[k] * D[i] * q[i]
            L = lam * pen[j]
            gp = g + L
            gn = g - L
            v = 0.0
            x = wpd[j]
            if x == 0.0 and L > 0.0:
                if gp < 0.0:
                    v = -gp
                elif gn > 0.0:
                    v = gn
                elif gp > m_old / m and gn < -m_old / m:
                    n_qp -= 1
                    active[s] = active[n_qp]
                    active[n_qp] = j
                    continue
            elif x > 0.0:
                v = abs(gp)
            elif x < 0.0:
                v = abs(gn)
            else:
                v = abs(g)
            if v > m_new:
                m_new = v
            total += v
            if gp < h * x:
                step = -gp / h
            elif gn > h * x:
                step = -gn / h
            else:
                step = -x
            if abs(step) < 1e-12:
                s += 1
                continue
            if step > max_step:
                step = max_step
            elif step < -max_step:
                step = -max_step
            wpd[j] = x + step
            if j == d:
                for i in range(m):
                    q[i] += step
            else:
                for k in range(indptr[j], indptr[j + 1]):
                    q[indices[k]] += data[k] * step
            s += 1
        sweeps += 1
        if total <= tol:
            if n_qp == n_active:
                break
            n_qp = n_active
            m_old = math.inf
            continue
        m_old = m_new
    return sweeps


@njit(cache=True)
def conjugate_sum(kind, s, t, c):
    r""":math:`\sum_i c_i \psi(s t_i)` with :math:`\psi(t) = \phi^*(-t)`: :math:`\tfrac12 t^2 - t`
    (squared hinge), :math:`t\log t + (1-t)\log(1-t)` (logistic). The dual value at
    :math:`s t` is its negative."""
    total = 0.0
    for i in range(t.size):
        u = s * t[i]
        if kind == SQUARED_HINGE:
            total += c[i] * (0.5 * u * u - u)
        else:
            e = 0.0
            if u > 0.0:
                e += u * math.log(u)
            if u < 1.0:
                e += (1.0 - u) * math.log1p(-u)
            total += c[i] * e
    return total


@njit(cache=True)
def dual_slope(kind, s, t, c):
    r""":math:`\frac{d}{ds}\big(-\sum_i c_i \psi(s t_i)\big) = -\sum_i c_i t_i \psi'(s t_i)`,
    decreasing in s (the dual value is concave along the ray)."""
    total = 0.0
    for i in range(t.size):
        u = s * t[i]
        if u == 0.0:
            continue
        if kind == SQUARED_HINGE:
            total -= c[i] * t[i] * (u - 1.0)
        else:
            if u >= 1.0:
                return -math.inf
            total -= c[i] * t[i] * (math.log(u) - math.log1p(-u))
    return total


@njit(cache=True)
def gram(indptr, indices, data, D, pos, n, b_pos, nu):
    r"""The model's Hessian on the active columns, dense: :math:`H = X_A^T \mathrm{diag}(D) X_A
    + \nu I` (``pos[j]``: column j's place in A, or -1; ``b_pos``: the intercept's place,
    or -1), from the rows (CSR), :math:`\sum_i n_i^2/2` multiply-adds: each row's active
    entries are gathered first, then their products added to one triangle."""
    H = np.zeros((n, n))
    m = indptr.size - 1
    width = 1
    for i in range(m):
        width = max(width, indptr[i + 1] - indptr[i])
    where = np.empty(width + 1, dtype=np.int64)
    value = np.empty(width + 1)
    for i in range(m):
        di = D[i]
        if di == 0.0:
            continue
        cnt = 0
        for k in range(indptr[i], indptr[i + 1]):
            a = pos[indices[k]]
            if a >= 0:
                where[cnt] = a
                value[cnt] = data[k]
                cnt += 1
        if b_pos >= 0:
            where[cnt] = b_pos
            value[cnt] = 1.0
            cnt += 1
        for u in range(cnt):
            a = where[u]
            v = di * value[u]
            for t in range(u, cnt):
                H[a, where[t]] += v * value[t]
    for a in range(n):
        for b in range(a + 1, n):
            s = H[a, b] + H[b, a]       # each pair landed on one side
            H[a, b] = s
            H[b, a] = s
        H[a, a] += nu
    return H


@njit(cache=True)
def dense_cd(H, r, x, L, tol, max_sweeps, max_step, order, rng):
    r"""Coordinate descent on the dense model :math:`r_0^T\delta + \tfrac12\delta^T H\delta
    + \sum_j L_j|x_j|` (``r``: its gradient at ``x``, kept up to date in place): O(n) per
    coordinate. Stops when the violations sum to at most ``tol``; returns the sweeps made."""
    n = x.size
    sweeps = 0
    while sweeps < max_sweeps:
        total = 0.0
        _shuffle(order, n, rng)
        for s in range(n):
            j = order[s]
            g = r[j]
            h = H[j, j]
            Lj = L[j]
            gp = g + Lj
            gn = g - Lj
            xj = x[j]
            if xj > 0.0:
                v = abs(gp)
            elif xj < 0.0:
                v = abs(gn)
            elif Lj > 0.0:
                v = max(gn, -gp, 0.0)
            else:
                v = abs(g)
            total += v
            if v == 0.0:
                continue
            if gp < h * xj:
                step = -gp / h
            elif gn > h * xj:
                step = -gn / h
            else:
                step = -xj
            if step > max_step:
                step = max_step
            elif step < -max_step:
                step = -max_step
            if step == 0.0:
                continue
            x[j] = xj + step
            for k in range(n):
                r[k] += H[j, k] * step
        sweeps += 1
        if total <= tol:
            break
    return sweeps


@njit(cache=True)
def violations(r, x, L):
    """Sum of the violations of the model's optimality conditions at ``x``."""
    total = 0.0
    for j in range(x.size):
        g = r[j]
        if x[j] > 0.0:
            total += abs(g + L[j])
        elif x[j] < 0.0:
            total += abs(g - L[j])
        elif L[j] > 0.0:
            total += max(g - L[j], -g - L[j], 0.0)
        else:
            total += abs(g)
    return total


@njit(cache=True)
def column_products(indptr, indices, data, delta, cols, has_b, m):
    """:math:`q = X\\delta` for the columns ``cols`` (``delta`` indexed like them; the
    intercept is column ``d``)."""
    d = indptr.size - 1
    q = np.zeros(m)
    for a in range(cols.size):
        j = cols[a]
        v = delta[a]
        if v == 0.0:
            continue
        if j == d:
            for i in range(m):
                q[i] += v
        else:
            for k in range(indptr[j], indptr[j + 1]):
                q[indices[k]] += data[k] * v
    return q


@njit(cache=True)
def weighted_moments(t, c):
    r""":math:`(\sum_i c_i t_i, \sum_i c_i t_i^2)` in one loop (no BLAS call: a threaded dot
    product over m entries costs milliseconds of wake-ups on a busy machine)."""
    s1 = 0.0
    s2 = 0.0
    for i in range(t.size):
        ct = c[i] * t[i]
        s1 += ct
        s2 += ct * t[i]
    return s1, s2


@njit(cache=True)
def logistic_best_scale(t, c, top):
    r"""The maximiser of the concave :math:`h(s) = -\sum_i c_i \psi(s t_i)` on ``[0, top]``,
    :math:`\psi(u) = u\log u + (1-u)\log(1-u)` (the logistic loss's conjugate; ``top * max(t)
    < 1``): ``top`` when :math:`h'(\mathrm{top}) \ge 0`, else the root of the decreasing
    :math:`h'(s) = -\sum_i c_i t_i \log\frac{s t_i}{1 - s t_i}` by Newton's method,
    :math:`h''(s) = -\sum_i c_i t_i^2 / (s t_i (1 - s t_i))`, safeguarded by the bracket
    (bisection when a step leaves it). Each iteration is one loop over ``t``; a handful
    suffice (the bisection it replaces took up to 60). Returns a point of the bracket's
    increasing side (any ``s`` in ``[0, top]`` gives a valid dual point; only the bound's value
    depends on how close to the maximiser it is)."""
    lo = 0.0
    hi = top
    s = top
    for it in range(60):
        g = 0.0
        h = 0.0
        for i in range(t.size):
            u = s * t[i]
            if u <= 0.0:
                continue
            ct = c[i] * t[i]
            g -= ct * (math.log(u) - math.log1p(-u))
            h -= ct * t[i] / (u * (1.0 - u)) if u < 1.0 else math.inf
        if g >= 0.0:
            if it == 0:
                return top
            lo = s
        else:
            hi = s
        if hi - lo <= 1e-12 * hi:
            break
        nxt = s - g / h if h < 0.0 and math.isfinite(h) else 0.5 * (lo + hi)
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi)
        s = nxt
    return lo
