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


def _csr_matvec_py(indptr, indices, data, w, out):
    for i in prange(out.shape[0]):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * w[indices[k]]
        out[i] = s


def _csc_rmatvec_py(indptr, indices, data, g, out):
    for j in prange(out.shape[0]):
        s = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            s += data[k] * g[indices[k]]
        out[j] = s


# one source, two compilations. Threads pay off only on large data and an idle machine: on
# a9a (451k nonzeros, 2 cores) they gained ~25% when idle but made BMRM 8x slower (9.6 s vs
# 1.1 s, benchmarks/bmrm_liblinear.py) with one other busy process, so the threshold is high.
_csr_matvec = njit(cache=True, parallel=True)(_csr_matvec_py)
_csc_rmatvec = njit(cache=True, parallel=True)(_csc_rmatvec_py)
PARALLEL_MIN_NNZ = 20_000_000


@njit(cache=True)
def dot(a, b):
    """Serial dot product: line searches call it thousands of times on O(m) vectors, where a
    threaded BLAS call costs more in wake-ups than in arithmetic (badly so on a busy machine)."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


class DataMatrix:
    """The data ``X`` with the two passes every loss needs: ``X @ w`` and ``X.T @ g``.

    Below ``PARALLEL_MIN_NNZ`` nonzeros sparse data stays one CSR matrix and the passes are
    scipy's (measured faster than a serial numba loop: 0.31 vs 0.58 ms for ``X @ w`` on a9a).
    Above it a CSC copy is kept too (twice the memory), for two threaded numba passes without
    write conflicts. Dense data is C-ordered and uses BLAS.
    """

    def __init__(self, X):
        self.sparse = sp.issparse(X)
        self.X = X
        self.shape = X.shape
        self.parallel = self.sparse and X.nnz >= PARALLEL_MIN_NNZ
        self._csc = None
        if self.sparse:
            self.csr = X

    @property
    def csc(self):
        """A CSC copy (sorted indices), made on first use: column kernels need it."""
        if self._csc is None:
            self._csc = self.X.tocsc()
            self._csc.sort_indices()
        return self._csc

    def dot(self, w: np.ndarray) -> np.ndarray:
        if not self.parallel:
            return np.asarray(self.X @ w).reshape(-1)
        out = np.empty(self.shape[0])
        X = self.csr
        _csr_matvec(X.indptr, X.indices, X.data, w, out)
        return out

    def rdot(self, g: np.ndarray) -> np.ndarray:
        if not self.parallel:
            return np.asarray(g @ self.X).reshape(-1)
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


# --------------------------------------------------------------------------------------
# Kernels with a parameter (Huber's delta, the quantile's tau, the epsilon of the
# epsilon-insensitive loss) take it as one extra trailing argument; the loss class binds it.
# At a kink the one-sided derivatives are exact: ``side > 0`` right, ``side < 0`` left,
# ``side == 0`` the default subgradient documented in the loss class.
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# exponential: l(z, y) = exp(-y z); derivative -y exp(-y z). exp overflows to +inf for
# -y z > 709.78: the value is then +inf (IEEE), as it exceeds the float range.
# --------------------------------------------------------------------------------------
@njit(cache=True)
def exponential_value(z, y, c):
    r = 0.0
    for i in range(z.shape[0]):
        r += c[i] * math.exp(-y[i] * z[i])
    return r


@njit(cache=True)
def exponential_grad(z, y, c, side, out):
    r = 0.0
    for i in range(z.shape[0]):
        e = c[i] * math.exp(-y[i] * z[i])
        r += e
        out[i] = -y[i] * e
    return r


# --------------------------------------------------------------------------------------
# Huber: l(z, y) = 0.5 r^2 if |r| <= delta else delta (|r| - delta / 2), r = z - y;
# differentiable, derivative clip(r, -delta, delta)  (erratum E7)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def huber_value(z, y, c, delta):
    s = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        a = abs(r)
        if a <= delta:
            s += c[i] * 0.5 * r * r
        else:
            s += c[i] * delta * (a - 0.5 * delta)
    return s


@njit(cache=True)
def huber_grad(z, y, c, side, out, delta):
    s = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        a = abs(r)
        if a <= delta:
            s += c[i] * 0.5 * r * r
            out[i] = c[i] * r
        else:
            s += c[i] * delta * (a - 0.5 * delta)
            out[i] = c[i] * delta if r > 0.0 else -c[i] * delta
    return s


# --------------------------------------------------------------------------------------
# least squares: l(z, y) = 0.5 (z - y)^2; derivative z - y
# --------------------------------------------------------------------------------------
@njit(cache=True)
def least_squares_value(z, y, c):
    s = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        s += c[i] * 0.5 * r * r
    return s


@njit(cache=True)
def least_squares_grad(z, y, c, side, out):
    s = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        s += c[i] * 0.5 * r * r
        out[i] = c[i] * r
    return s


# --------------------------------------------------------------------------------------
# least absolute deviation: l(z, y) = |z - y|; kink at z = y: right derivative +1, left -1,
# default sgn(0) = 0
# --------------------------------------------------------------------------------------
@njit(cache=True)
def least_absolute_deviation_value(z, y, c):
    s = 0.0
    for i in range(z.shape[0]):
        s += c[i] * abs(z[i] - y[i])
    return s


@njit(cache=True)
def least_absolute_deviation_grad(z, y, c, side, out):
    s = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        s += c[i] * abs(r)
        if r > 0.0:
            out[i] = c[i]
        elif r < 0.0:
            out[i] = -c[i]
        elif side[i] > 0.0:
            out[i] = c[i]
        elif side[i] < 0.0:
            out[i] = -c[i]
        else:
            out[i] = 0.0
    return s


# --------------------------------------------------------------------------------------
# quantile (pinball): l(z, y) = max(tau r, (tau - 1) r), r = z - y; kink at z = y: right
# derivative tau, left tau - 1, default tau - 1 ([TVSL10] Table 5: "tau if f > y, else tau - 1")
# --------------------------------------------------------------------------------------
@njit(cache=True)
def quantile_value(z, y, c, tau):
    s = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        s += c[i] * (tau * r if r > 0.0 else (tau - 1.0) * r)
    return s


@njit(cache=True)
def quantile_grad(z, y, c, side, out, tau):
    s = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        if r > 0.0:
            s += c[i] * tau * r
            out[i] = c[i] * tau
        else:
            s += c[i] * (tau - 1.0) * r
            out[i] = c[i] * (tau if (r == 0.0 and side[i] > 0.0) else tau - 1.0)
    return s


# --------------------------------------------------------------------------------------
# epsilon-insensitive: l(z, y) = max(0, |z - y| - eps); kinks at z = y - eps and z = y + eps
# (one kink at z = y when eps = 0). Right derivative: +1 if z >= y + eps, -1 if z < y - eps,
# else 0; left derivative: +1 if z > y + eps, -1 if z <= y - eps, else 0; default: 0 on the
# kinks. The score is compared with the kinks lo = fl(y - eps), hi = fl(y + eps), the values
# ``kinks()`` reports, never through |fl(z - y)| - eps: that rounds z - y to the precision of
# y, so a score 1e-127 left of the kink 0 (y = eps = 1) would count as on it, and a
# derivative at a score the line's breakpoints place off the kink would take the kink's.
# --------------------------------------------------------------------------------------
@njit(cache=True)
def epsilon_insensitive_value(z, y, c, eps):
    s = 0.0
    for i in range(z.shape[0]):
        hi = y[i] + eps
        lo = y[i] - eps
        if z[i] > hi:
            s += c[i] * (z[i] - hi)
        elif z[i] < lo:
            s += c[i] * (lo - z[i])
    return s


@njit(cache=True)
def epsilon_insensitive_grad(z, y, c, side, out, eps):
    s = 0.0
    for i in range(z.shape[0]):
        hi = y[i] + eps
        lo = y[i] - eps
        zi = z[i]
        if zi > hi:
            s += c[i] * (zi - hi)
            out[i] = c[i]
        elif zi < lo:
            s += c[i] * (lo - zi)
            out[i] = -c[i]
        elif side[i] > 0.0 and zi == hi:  # on the upper kink, going right
            out[i] = c[i]
        elif side[i] < 0.0 and zi == lo:  # on the lower kink, going left
            out[i] = -c[i]
        else:  # inside the tube, or the default subgradient 0 on a kink
            out[i] = 0.0
    return s


# --------------------------------------------------------------------------------------
# Poisson: l(z, y) = exp(z) - y z; derivative exp(z) - y. exp overflows to +inf for
# z > 709.78: the value is then +inf (IEEE), as it exceeds the float range.
# --------------------------------------------------------------------------------------
@njit(cache=True)
def poisson_value(z, y, c):
    s = 0.0
    for i in range(z.shape[0]):
        s += c[i] * (math.exp(z[i]) - y[i] * z[i])
    return s


@njit(cache=True)
def poisson_grad(z, y, c, side, out):
    s = 0.0
    for i in range(z.shape[0]):
        e = math.exp(z[i])
        s += c[i] * (e - y[i] * z[i])
        out[i] = c[i] * (e - y[i])
    return s


# --------------------------------------------------------------------------------------
# novelty: l(z, y) = max(0, y - z) with y = rho; kink at z = rho: right derivative 0,
# left -1, default 0 ([TVSL10] Table 5: "0 if f >= rho, else -1")
# --------------------------------------------------------------------------------------
@njit(cache=True)
def novelty_value(z, y, c):
    s = 0.0
    for i in range(z.shape[0]):
        e = y[i] - z[i]
        if e > 0.0:
            s += c[i] * e
    return s


@njit(cache=True)
def novelty_grad(z, y, c, side, out):
    s = 0.0
    for i in range(z.shape[0]):
        e = y[i] - z[i]
        if e > 0.0:
            s += c[i] * e
            out[i] = -c[i]
        elif e == 0.0 and side[i] < 0.0:
            out[i] = -c[i]
        else:
            out[i] = 0.0
    return s
