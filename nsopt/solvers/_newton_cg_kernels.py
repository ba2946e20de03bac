r"""Compiled kernel of the L2 truncated Newton solver (:class:`~.newton_cg.NewtonCG`): the
Hessian-vector product of the loss, :math:`X^T \mathrm{diag}(D)\, X v`, in two passes over the
columns (CSC; the intercept, when present, is column ``d`` of ones and is not stored). The
other kernels (scores, loss terms, gradient, dense Hessian) are newton-cd's
(:mod:`nsopt.solvers._newton_cd_kernels`).
"""
from __future__ import annotations

from numba import njit

__all__ = ["hess_vec"]


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
