r"""Compiled kernels of the L2 truncated Newton solver (:class:`~.newton_cg.NewtonCG`): the
Hessian-vector product of the loss, :math:`X^T \mathrm{diag}(D)\, X v`, in two passes over the
columns (CSC; the intercept, when present, is column ``d`` of ones and is not stored), and the
per-example terms at the scores with the dual point's conjugate sum from the same
exponentials (:func:`margin_terms_conj`, :func:`line_terms`), and the scores, the
gradient and the dense Hessian from the rows (CSR: :func:`row_scores`, :func:`row_gradient`,
:func:`row_gram`) for the sparse dense-Hessian model. The other kernels (the columns' scores
and gradient) are newton-cd's (:mod:`nsopt.solvers._newton_cd_kernels`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._newton_cd_kernels import SQUARED_HINGE

__all__ = ["hess_vec", "margin_terms_conj", "line_terms", "row_scores", "row_gradient",
           "row_gram"]


@njit(cache=True, inline="always")
def _terms(kind, u, ci):
    r"""At the margin :math:`u = y_i z_i`: ``(c phi(u), t, c phi''(u), c psi(t))`` with
    :math:`t = -\phi'(u)` and :math:`\psi(t) = \phi^*(-t)`. Logistic, :math:`e =
    e^{-|u|}`, :math:`L = \log(1 + e)`: :math:`\phi = L + \max(-u, 0)`, :math:`t =
    \sigma(-u)`, and :math:`\psi(t) = t\log t + (1-t)\log(1-t)` is :math:`-tu - L`
    (:math:`u \ge 0`: :math:`\log t = -u - L`, :math:`\log(1-t) = -L`) or
    :math:`(1-t)u - L` (:math:`u < 0`): no logarithm of ``t`` itself."""
    if kind == SQUARED_HINGE:
        r = 1.0 - u
        if r > 0.0:
            return ci * 0.5 * r * r, r, ci, ci * (0.5 * r * r - r)
        return 0.0, 0.0, 0.0, 0.0
    if u >= 0.0:
        e = math.exp(-u)
        L = math.log1p(e)
        t = e / (1.0 + e)
        return ci * L, t, ci * t * (1.0 - t), ci * (-t * u - L)
    e = math.exp(u)
    L = math.log1p(e)
    t = 1.0 / (1.0 + e)
    return ci * (-u + L), t, ci * t * (1.0 - t), ci * ((1.0 - t) * u - L)


@njit(cache=True)
def margin_terms_conj(kind, z, y, c, t, D):
    r"""newton-cd's ``margin_terms`` (writes ``t``, ``D``; the loss :math:`\sum_i c_i
    \phi(y_i z_i)`), also returning :math:`\sum_i c_i\psi(t_i)` (what ``conjugate_sum``
    computes from ``t``) from the same exponentials: ``(loss, conj)``. O(m)."""
    empty = np.zeros(0)
    return line_terms(kind, z, empty, 0.0, y, c, empty, t, D)


@njit(cache=True)
def line_terms(kind, z, q, beta, y, c, z_out, t, D):
    r"""One line-search trial: ``z_out`` :math:`= z + \beta q` with its terms as
    :func:`margin_terms_conj` (kept for the next iterate when the trial is accepted: no second
    pass over the exponentials); with an empty ``q`` the terms at ``z`` itself. Returns
    ``(loss, conj)``. O(m)."""
    trial = q.size > 0
    loss = 0.0
    conj = 0.0
    for i in range(z.size):
        zi = z[i]
        if trial:
            zi += beta * q[i]
            z_out[i] = zi
        f, ti, di, p = _terms(kind, y[i] * zi, c[i])
        loss += f
        conj += p
        t[i] = ti
        D[i] = di
    return loss, conj


@njit(cache=True)
def hess_vec(indptr, indices, data, D, v, has_b, u, out):
    r"""``out`` :math:`= X^T(D \circ Xv)` (the generalised Hessian of :math:`\sum_i c_i
    \phi(y_i z_i)` at the scores whose weights are :math:`D_i = c_i\phi''`, times ``v``);
    ``u`` (length m) is scratch. Two passes over the nonzeros."""
    d = indptr.size - 1
    m = D.size
    b = v[d] if has_b else 0.0
    for i in range(m):
        u[i] = b
    for j in range(d):
        vj = v[j]
        if vj != 0.0:
            for k in range(indptr[j], indptr[j + 1]):
                u[indices[k]] += data[k] * vj
    sb = 0.0
    for i in range(m):
        u[i] *= D[i]
        sb += u[i]
    for j in range(d):
        acc = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            acc += data[k] * u[indices[k]]
        out[j] = acc
    if has_b:
        out[d] = sb


@njit(cache=True)
def row_scores(indptr, indices, data, w, has_b, z):
    r"""``z`` :math:`= Xw` (+ b, ``w[d]``) from the rows (CSR): one gather per row, the
    dense-Hessian model's layout (the columns' scatter of
    :func:`~nsopt.solvers._newton_cd_kernels.scores` writes all over ``z``)."""
    m = indptr.size - 1
    b = w[w.size - 1] if has_b else 0.0
    for i in range(m):
        acc = b
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * w[indices[k]]
        z[i] = acc


@njit(cache=True)
def row_gradient(indptr, indices, data, v, has_b, out):
    r"""``out`` :math:`= -X^T v` (the intercept's entry, last, :math:`-\sum_i v_i`) from the
    rows (CSR): the loss gradient at :math:`v = c\circ y\circ t`."""
    m = indptr.size - 1
    for j in range(out.size):
        out[j] = 0.0
    sb = 0.0
    for i in range(m):
        vi = v[i]
        if vi != 0.0:
            sb += vi
            for k in range(indptr[i], indptr[i + 1]):
                out[indices[k]] -= data[k] * vi
    if has_b:
        out[out.size - 1] = -sb


@njit(cache=True)
def row_gram(indptr, indices, data, D, has_b, unit, H):
    r"""``H`` :math:`= X^T \mathrm{diag}(D)\, X` (the intercept's column of ones last when
    ``has_b``), dense and symmetric, from the rows (CSR without duplicate indices in a row,
    as :func:`~nsopt.solvers.newton_cd.prepare` makes), rows of weight 0 skipped: each
    row's pairs of nonzeros, :math:`\sum_i n_i(n_i+1)/2` scattered adds, as
    :func:`~nsopt.solvers._newton_cd_kernels.gram` (every column active) and bitwise its
    result: the same products are added to the same entries in the same order. Faster
    (mushrooms, 8124 x 112, 21 nonzeros a row: 0.61x its time; a9a 0.62x): one flat row
    offset per nonzero and unsigned offsets (numba's negative-index wraparound is not
    generated), and with ``unit`` (every stored value is 1: one-hot data) no value is read
    in the inner loop (:math:`1 \cdot v = v` exactly, so still bitwise). A pair lands on
    the side its order in the row gives; the two triangles are summed at the end (one side
    is 0)."""
    n = H.shape[0]
    m = indptr.size - 1
    Hf = H.reshape(n * n)
    Hf[:] = 0.0
    un = np.uint64(n)
    ub = np.uint64(n - 1)
    for i in range(m):
        di = D[i]
        if di == 0.0:
            continue
        lo, hi = indptr[i], indptr[i + 1]
        for u in range(lo, hi):
            ju = np.uint64(indices[u])
            base = ju * un
            v = di if unit else di * data[u]
            if unit:
                for t in range(u, hi):
                    Hf[base + np.uint64(indices[t])] += v
            else:
                for t in range(u, hi):
                    Hf[base + np.uint64(indices[t])] += v * data[t]
            if has_b:
                Hf[base + ub] += v
        if has_b:
            Hf[ub * un + ub] += di
    for a in range(n):
        for b in range(a + 1, n):
            s = Hf[a * n + b] + Hf[b * n + a]
            Hf[a * n + b] = s
            Hf[b * n + a] = s
