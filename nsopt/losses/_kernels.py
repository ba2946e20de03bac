"""Compiled kernels (numba): data passes and the element-wise math of the scalar losses.

Data passes: ``f = X w`` over CSR rows and ``a = X^T g`` over CSC columns, both parallel
(``prange``), so neither needs a per-thread accumulator. Dense data uses BLAS through numpy.

Element-wise loss kernels share one signature so :class:`~nsopt.losses._base.ScalarLoss`
can drive them all:

``value(z, y, c) -> float``
    :math:`\\sum_i c_i\\, l(z_i, y_i)`.
``grad(z, y, c, side, out) -> float``
    the same value, and ``out[i] = c_i * l'(z_i, y_i; side_i)``: the default subgradient when
    ``side_i == 0``, the right derivative when ``side_i > 0``, the left one when ``side_i < 0``.

All kernels are ``cache=True``: the first call compiles (about 0.5 s each), later processes
load the machine code from disk.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

__all__ = ["DataMatrix"]


@njit(cache=True, parallel=True)
def _csr_matvec(indptr, indices, data, w, out):
    for i in prange(out.shape[0]):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * w[indices[k]]
        out[i] = s


@njit(cache=True, parallel=True)
def _csc_rmatvec(indptr, indices, data, g, out):
    for j in prange(out.shape[0]):
        s = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            s += data[k] * g[indices[k]]
        out[j] = s


class DataMatrix:
    """The data ``X`` with the two passes every loss needs: ``X @ w`` and ``X.T @ g``.

    Sparse data is kept in CSR (rows, for ``X w``) and CSC (columns, for ``X^T g``): twice
    the memory of one copy, in exchange for two parallel passes without write conflicts.
    Dense data is C-ordered and uses BLAS.
    """

    def __init__(self, X):
        self.sparse = sp.issparse(X)
        self.X = X
        self.shape = X.shape
        if self.sparse:
            self.csr = X
            self.csc = X.tocsc()
            self.csc.sort_indices()

    def dot(self, w: np.ndarray) -> np.ndarray:
        if not self.sparse:
            return self.X @ w
        out = np.empty(self.shape[0])
        X = self.csr
        _csr_matvec(X.indptr, X.indices, X.data, w, out)
        return out

    def rdot(self, g: np.ndarray) -> np.ndarray:
        if not self.sparse:
            return g @ self.X
        out = np.empty(self.shape[1])
        X = self.csc
        _csc_rmatvec(X.indptr, X.indices, X.data, g, out)
        return out

    def row_norms_sq(self) -> np.ndarray:
        if self.sparse:
            return np.asarray(self.csr.multiply(self.csr).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", self.X, self.X)


# --------------------------------------------------------------------------------------
# hinge: l(z, y) = max(0, 1 - y z); kink at y z = 1
# --------------------------------------------------------------------------------------
@njit(cache=True)
def hinge_value(z, y, c):
    r = 0.0
    for i in range(z.shape[0]):
        m = 1.0 - y[i] * z[i]
        if m > 0.0:
            r += c[i] * m
    return r


@njit(cache=True)
def hinge_grad(z, y, c, side, out):
    r = 0.0
    for i in range(z.shape[0]):
        m = 1.0 - y[i] * z[i]
        if m > 0.0:
            r += c[i] * m
            out[i] = -y[i] * c[i]
        elif m < 0.0:
            out[i] = 0.0
        else:  # kink: derivative in z is in the segment between -y and 0
            s = side[i]
            out[i] = -y[i] * c[i] if (s != 0.0 and s * y[i] < 0.0) else 0.0
    return r


# --------------------------------------------------------------------------------------
# squared hinge: l(z, y) = 0.5 max(0, 1 - y z)^2; differentiable, derivative -y max(0, 1 - y z)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def squared_hinge_value(z, y, c):
    r = 0.0
    for i in range(z.shape[0]):
        m = 1.0 - y[i] * z[i]
        if m > 0.0:
            r += 0.5 * c[i] * m * m
    return r


@njit(cache=True)
def squared_hinge_grad(z, y, c, side, out):
    r = 0.0
    for i in range(z.shape[0]):
        m = 1.0 - y[i] * z[i]
        if m > 0.0:
            r += 0.5 * c[i] * m * m
            out[i] = -y[i] * m * c[i]
        else:
            out[i] = 0.0
    return r


# --------------------------------------------------------------------------------------
# logistic: l(z, y) = log(1 + exp(-y z)); derivative -y / (1 + exp(y z))  (erratum E20)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _log1pexp(t):
    if t > 0.0:
        return t + math.log1p(math.exp(-t))
    return math.log1p(math.exp(t))


@njit(cache=True)
def logistic_value(z, y, c):
    r = 0.0
    for i in range(z.shape[0]):
        r += c[i] * _log1pexp(-y[i] * z[i])
    return r


@njit(cache=True)
def logistic_grad(z, y, c, side, out):
    r = 0.0
    for i in range(z.shape[0]):
        t = y[i] * z[i]
        r += c[i] * _log1pexp(-t)
        if t > 0.0:
            e = math.exp(-t)
            out[i] = -y[i] * c[i] * e / (1.0 + e)
        else:
            out[i] = -y[i] * c[i] / (1.0 + math.exp(t))
    return r
