"""Compiled kernels (numba): data passes and the element-wise math of the scalar losses.

Data passes: ``f = X w`` over CSR rows and ``a = X^T g`` over CSC columns, both parallel
(``prange``), so neither needs a per-thread accumulator. Dense data uses BLAS through numpy.

Element-wise losses are one function each, ``loss(z, y, side, *params) -> (l, d)``, from which
:func:`elementwise` compiles two kernels of one signature, so that
:class:`~nsopt.losses._base.ScalarLoss` can drive them all:

``value(z, y, c) -> float``
    :math:`\\sum_i c_i\\, l(z_i, y_i)`.
``grad(z, y, c, side, out) -> float``
    the same value, and ``out[i] = c_i * l'(z_i, y_i; side_i)``: the default subgradient when
    ``side_i == 0``, the right derivative when ``side_i > 0``, the left one when ``side_i < 0``.

Both take a last optional argument ``start`` (after the loss's parameters), the running sum's
first value: a sum continued from the shards before (:mod:`nsopt.distributed`'s ordered
reduction). ``0.0 + x`` is ``x``, so the default is the plain sum bit for bit.

From the same loss, :func:`fused_kernels` compiles the oracle call on CSR data in one read of
the rows (:data:`FUSED_KERNELS`, :meth:`DataMatrix.fused`): ``z_i = <x_i, w>``, the loss, and
``g_i x_i`` scattered into ``X^T g`` while row i is still in cache.

All kernels are ``cache=True``: the first call compiles (about 0.5 s each), later processes
load the machine code from disk.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import get_num_threads, njit, prange

from .._linalg import kernel_input

__all__ = ["DataMatrix"]


def _compressed_matvec_py(indptr, indices, data, v, out):
    """``out[i] = sum_k data[k] v[indices[k]]`` over ``indptr[i]:indptr[i + 1]``: ``X @ w``
    for CSR arrays of X, ``X.T @ g`` for CSC ones (each output from its own row or column)."""
    for i in prange(out.shape[0]):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * v[indices[k]]
        out[i] = s


# Threads pay off only on large data and an idle machine (docs/solvers.md, "Measurements"),
# so the threshold is high.
_compressed_matvec = njit(cache=True, parallel=True)(_compressed_matvec_py)
PARALLEL_MIN_NNZ = 20_000_000


@njit(cache=True)
def dot(a, b, start=0.0):
    """Serial dot product: line searches call it thousands of times on O(m) vectors, where a
    threaded BLAS call costs more in wake-ups than in arithmetic (badly so on a busy machine).
    ``start``: the running sum's first value (a sharded sum continued from the shards before,
    :mod:`nsopt.distributed`'s ordered reduction; 0.0 + x is x, so the default is the plain
    dot bit for bit)."""
    s = start
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


_POOL = None


def _thread_pool():
    """The threads of :meth:`DataMatrix.fused` (made on first use; the kernels release the
    GIL)."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        from numba import config  # numba's largest thread count, not the current setting

        _POOL = ThreadPoolExecutor(max(2, config.NUMBA_NUM_THREADS),
                                   thread_name_prefix="nsopt-fused")
    return _POOL


class DataMatrix:
    """The data ``X`` with the two passes every loss needs: ``X @ w`` and ``X.T @ g``.

    Below ``PARALLEL_MIN_NNZ`` nonzeros sparse data stays one CSR matrix and the passes are
    scipy's (faster than a serial numba loop; docs/solvers.md, "Measurements").
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
        _compressed_matvec(X.indptr, X.indices, X.data, w, out)
        return out

    def rdot(self, g: np.ndarray) -> np.ndarray:
        if not self.parallel:
            return np.asarray(g @ self.X).reshape(-1)
        out = np.empty(self.shape[1])
        X = self.csc
        _compressed_matvec(X.indptr, X.indices, X.data, g, out)
        return out

    def fused(self, kernel, w, y, c, g, params=(), start=0.0):
        r"""The value and subgradient of an element-wise loss in one read of the CSR rows:
        ``(r, a)`` with :math:`r = \mathrm{start} + \sum_i c_i l(z_i, y_i)`, :math:`a =
        X^T g`, :math:`g_i = c_i l'(z_i, y_i)` (the default subgradient, written to ``g``),
        :math:`z = Xw`. ``kernel``: the loss's entry of :data:`FUSED_KERNELS`. Sparse data only.

        Below ``PARALLEL_MIN_NNZ`` one call: bitwise the two passes (scipy's ``X @ w``, the
        grad kernel, scipy's ``g @ X``: the same operations in the same order). Above, one
        block of rows per thread (numba's thread count; blocks balanced by nonzeros), each
        block scattering into its own d-vector; the blocks' sums and vectors are added in
        block order, so the answer is deterministic for a given thread count, and equal to
        the serial one to rounding only (not bitwise; neither is the threaded ``rdot``'s
        reduction order the same)."""
        X = self.csr
        w = kernel_input(np.ascontiguousarray(w, dtype=np.float64))  # one compiled variant
        n = get_num_threads() if self.parallel else 1
        if n < 2:
            a = np.zeros(self.shape[1])
            r = kernel(X.indptr, X.indices, X.data, w, y, c, g, a, *params, float(start))
            return float(r), a
        bounds = self._row_blocks(n)
        parts = np.zeros((n, self.shape[1]))

        def block(t):
            s, e = bounds[t], bounds[t + 1]
            return kernel(X.indptr[s:e + 1], X.indices, X.data, w, y[s:e], c[s:e], g[s:e],
                          parts[t], *params, 0.0)

        sums = list(_thread_pool().map(block, range(n)))
        r = float(start)
        for t in range(n):  # block order: deterministic
            r += sums[t]
        a = parts[0]
        for t in range(1, n):
            a += parts[t]
        return float(r), a

    def _row_blocks(self, n: int) -> np.ndarray:
        """``n + 1`` row bounds splitting the nonzeros into ``n`` near-equal blocks (kept)."""
        cached = self.__dict__.get("_blocks")
        if cached is None or cached[0] != n:
            X = self.csr
            bounds = np.searchsorted(X.indptr, np.linspace(0, X.nnz, n + 1), side="left")
            bounds = np.clip(bounds, 0, self.shape[0]).astype(np.int64)
            bounds[0], bounds[-1] = 0, self.shape[0]
            cached = (n, np.maximum.accumulate(bounds))
            self.__dict__["_blocks"] = cached
        return cached[1]

    def rows(self, start: int, stop: int) -> "DataMatrix":
        """The rows ``start:stop`` (a copy of those rows only)."""
        return DataMatrix(self.X[start:stop])

    def row_norms_sq(self) -> np.ndarray:
        if self.sparse:
            return np.asarray(self.csr.multiply(self.csr).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", self.X, self.X)


# --------------------------------------------------------------------------------------
# Element-wise losses. Each is one function ``loss(z, y, side, *params) -> (l, d)``: the loss
# l(z, y) and its derivative in z, at a kink the right one for ``side > 0``, the left one for
# ``side < 0`` and the default subgradient (named in the loss class) for ``side == 0``.
# :func:`elementwise` compiles the two kernels ScalarLoss drives from it; a parameter
# (Huber's delta, the quantile's tau, the epsilon of the epsilon-insensitive loss) is one
# extra trailing argument, which the loss class binds (``kernel_params``).
# --------------------------------------------------------------------------------------
_ELEMENTWISE_SOURCE = """
def {name}_value(z, y, c{params}, start=0.0):
    r = start
    for i in range(z.shape[0]):
        r += c[i] * {name}(z[i], y[i], 0.0{params})[0]
    return r


def {name}_grad(z, y, c, side, out{params}, start=0.0):
    r = start
    for i in range(z.shape[0]):
        li, di = {name}(z[i], y[i], side[i]{params})
        r += c[i] * li
        out[i] = c[i] * di
    return r
"""


# The oracle call in one read of the rows (CSR): unsigned indices, so that numba adds no
# negative-index test to each access (with them the loops are about 2x slower than scipy's;
# without, as fast). A zero g_i skips the scatter: adding data * 0 changes no entry of a
# (a starts at +0, never becomes -0, and the data are finite), so the sums stay bitwise
# scipy's ``g @ X``.
_FUSED_SOURCE = """
def {name}_fused(indptr, indices, data, w, y, c, g, a{params}, start=0.0):
    one = np.uintp(1)
    r = start
    for i in range(np.uintp(indptr.shape[0] - 1)):
        lo = np.uintp(indptr[i])
        hi = np.uintp(indptr[i + one])
        z = 0.0
        for k in range(lo, hi):
            z += data[k] * w[np.uintp(indices[k])]
        li, di = {name}(z, y[i], 0.0{params})
        r += c[i] * li
        gi = c[i] * di
        g[i] = gi
        if gi != 0.0:
            for k in range(lo, hi):
                a[np.uintp(indices[k])] += data[k] * gi
    return r

"""


def fused_kernels(name: str, *params: str):
    r"""``fused(indptr, indices, data, w, y, c, g, a, *params, start=0.0) -> r``: the oracle
    call of the element-wise loss ``name`` on CSR data in one read of the rows, compiled from
    one template (as :func:`elementwise`): for each row i in order :math:`z_i = \langle x_i,
    w\rangle`, :math:`r \mathrel{+}= c_i l(z_i, y_i)`, :math:`g_i = c_i l'(z_i, y_i)` (the
    default subgradient, side 0, as the grad kernel's), :math:`a \mathrel{+}= g_i x_i`; ``a``
    must be zeros on entry. ``indptr`` may be a slice of rows (its offsets index the whole
    ``indices`` and ``data``) with ``y``, ``c``, ``g`` the same rows' slices: the threaded
    call runs one block of rows per thread through it (``nogil``), so no parallel kernel is
    compiled per loss (about 10 s each under load).

    Used by :meth:`DataMatrix.fused`; registered in :data:`FUSED_KERNELS` under the loss's
    grad kernel."""
    extra = "".join(", " + p for p in params)
    namespace = {"__name__": __name__, name: globals()[name], "np": np}
    exec(compile(_FUSED_SOURCE.format(name=name, params=extra), __file__, "exec"), namespace)
    return njit(cache=True, nogil=True)(namespace[name + "_fused"])


def elementwise(name: str, *params: str):
    """``(value, grad)``: the kernels ``value(z, y, c, *params, start=0.0)`` and ``grad(z, y,
    c, side, out, *params, start=0.0)`` of the element-wise loss ``name`` of this module,
    compiled (``start``: where the running sum starts). Registered in
    :data:`CONTINUABLE_KERNELS`; the loss's one-read oracle call (:func:`fused_kernels`) in
    :data:`FUSED_KERNELS`.

    The two loops are written out as source (one template) rather than closed over the loss:
    numba caches a closure over a compiled function under a key that changes in every
    process, so closures would be compiled again on each start (~0.3 s a kernel), while
    these load from the cache like hand-written kernels. The value kernel uses the loss only;
    the compiler drops the unused derivative.
    """
    extra = "".join(", " + p for p in params)
    namespace = {"__name__": __name__, name: globals()[name]}
    exec(compile(_ELEMENTWISE_SOURCE.format(name=name, params=extra), __file__, "exec"), namespace)
    kernels = tuple(njit(cache=True)(namespace[name + suffix]) for suffix in ("_value", "_grad"))
    CONTINUABLE_KERNELS.update(kernels)
    FUSED_KERNELS[kernels[1]] = fused_kernels(name, *params)
    return kernels


#: the kernels :func:`elementwise` compiled: they take ``start`` (a loss class with kernels
#: of its own may not)
CONTINUABLE_KERNELS: set = set()
#: grad kernel -> the kernel of :func:`fused_kernels`: the oracle call in one read of the CSR
#: rows, for every loss of :func:`elementwise`
FUSED_KERNELS: dict = {}


@njit(cache=True)
def hinge(z, y, side):
    """max(0, 1 - y z); kink at y z = 1, where the derivative is in the segment [-y, 0]."""
    m = 1.0 - y * z
    if m > 0.0:
        return m, -y
    if m < 0.0 or side * y >= 0.0:
        return 0.0, 0.0
    return 0.0, -y


@njit(cache=True)
def squared_hinge(z, y, side):
    """0.5 max(0, 1 - y z)^2; differentiable, derivative -y max(0, 1 - y z) (erratum E8)."""
    m = 1.0 - y * z
    if m > 0.0:
        return 0.5 * m * m, -y * m
    return 0.0, 0.0


@njit(cache=True)
def logistic(z, y, side):
    """log(1 + exp(-y z)); derivative -y / (1 + exp(y z)) (erratum E20). One exp of a
    nonpositive argument per example: no overflow."""
    t = y * z
    if t > 0.0:
        e = math.exp(-t)
        return math.log1p(e), -y * e / (1.0 + e)
    e = math.exp(t)
    return math.log1p(e) - t, -y / (1.0 + e)


@njit(cache=True)
def exponential(z, y, side):
    """exp(-y z); derivative -y exp(-y z). exp overflows to +inf for -y z > 709.78: the value
    is then +inf (IEEE), as it exceeds the float range."""
    e = math.exp(-y * z)
    return e, -y * e


@njit(cache=True)
def huber(z, y, side, delta):
    """0.5 r^2 if |r| <= delta else delta (|r| - delta / 2), r = z - y; differentiable,
    derivative clip(r, -delta, delta) (erratum E7)."""
    r = z - y
    a = abs(r)
    if a <= delta:
        return 0.5 * r * r, r
    return delta * (a - 0.5 * delta), (delta if r > 0.0 else -delta)


@njit(cache=True)
def least_squares(z, y, side):
    """0.5 (z - y)^2; derivative z - y."""
    r = z - y
    return 0.5 * r * r, r


@njit(cache=True)
def least_absolute_deviation(z, y, side):
    """|z - y|; kink at z = y: right derivative +1, left -1, default sgn(0) = 0."""
    r = z - y
    if r > 0.0 or (r == 0.0 and side > 0.0):
        return abs(r), 1.0
    if r < 0.0 or side < 0.0:
        return abs(r), -1.0
    return abs(r), 0.0  # the default sgn(0) = 0 (and a NaN score's NaN value)


@njit(cache=True)
def quantile(z, y, side, tau):
    """Pinball of level tau (Koenker's rho_tau(y - z)): max((1 - tau) r, -tau r), r = z - y;
    kink at z = y: right derivative 1 - tau, left -tau, default -tau (the left one, as
    [TVSL10] Table 5's "else" branch; its table has tau and 1 - tau swapped, see Quantile)."""
    r = z - y
    if r > 0.0:
        return (1.0 - tau) * r, 1.0 - tau
    return -tau * r, (1.0 - tau if (r == 0.0 and side > 0.0) else -tau)


@njit(cache=True)
def epsilon_insensitive(z, y, side, eps):
    """max(0, |z - y| - eps); kinks at z = y - eps and z = y + eps (one kink at z = y when
    eps = 0). Right derivative: +1 if z >= y + eps, -1 if z < y - eps, else 0; left
    derivative: +1 if z > y + eps, -1 if z <= y - eps, else 0; default: 0 on the kinks. The
    score is compared with the kinks lo = fl(y - eps), hi = fl(y + eps), the values
    ``kinks()`` reports, never through |fl(z - y)| - eps: that rounds z - y to the precision
    of y, so a score 1e-127 left of the kink 0 (y = eps = 1) would count as on it, and a
    derivative at a score the line's breakpoints place off the kink would take the kink's."""
    hi = y + eps
    lo = y - eps
    if z > hi:
        return z - hi, 1.0
    if z < lo:
        return lo - z, -1.0
    if side > 0.0 and z == hi:  # on the upper kink, going right
        return 0.0, 1.0
    if side < 0.0 and z == lo:  # on the lower kink, going left
        return 0.0, -1.0
    return 0.0, 0.0  # inside the tube, or the default subgradient 0 on a kink


@njit(cache=True)
def poisson(z, y, side):
    """exp(z) - y z; derivative exp(z) - y. exp overflows to +inf for z > 709.78: the value is
    then +inf (IEEE), as it exceeds the float range."""
    e = math.exp(z)
    return e - y * z, e - y


@njit(cache=True)
def novelty(z, y, side):
    """max(0, y - z) with y = rho; kink at z = rho: right derivative 0, left -1, default 0
    ([TVSL10] Table 5: "0 if f >= rho, else -1")."""
    e = y - z
    if e > 0.0:
        return e, -1.0
    if e == 0.0 and side < 0.0:
        return 0.0, -1.0
    return 0.0, 0.0


hinge_value, hinge_grad = elementwise("hinge")
squared_hinge_value, squared_hinge_grad = elementwise("squared_hinge")
logistic_value, logistic_grad = elementwise("logistic")
exponential_value, exponential_grad = elementwise("exponential")
huber_value, huber_grad = elementwise("huber", "delta")
least_squares_value, least_squares_grad = elementwise("least_squares")
least_absolute_deviation_value, least_absolute_deviation_grad = elementwise("least_absolute_deviation")
quantile_value, quantile_grad = elementwise("quantile", "tau")
epsilon_insensitive_value, epsilon_insensitive_grad = elementwise("epsilon_insensitive", "eps")
poisson_value, poisson_grad = elementwise("poisson")
novelty_value, novelty_grad = elementwise("novelty")


# --------------------------------------------------------------------------------------
# Line kernels: phi(eta) = sum_i c_i l(f_i + eta q_i, y_i) and phi'(eta) in one loop over the
# kept scores f, q, with no m-vector allocated. The derivative kernel uses the loss's
# derivative-only function ``{name}_slope(z, y, side, *params) -> l'`` where there is one (no
# log1p for the logistic loss), else the derivative half of ``loss``; each product is formed as
# ``(c_i l'_i) q_i`` and summed in index order, as ``ScalarLine`` did from the gradient
# kernel's output (``dot``), so the numbers are the same to the last bit.
# Scores within rounding of a kink are snapped onto it as ``ScalarLine._snap`` does
# (``kinks`` is (m, k), k = 0 without kinks; not at eta = 0).
# ``start`` (value, derivative): the running sum's first value, a sharded sum continued
# from the shards before (:mod:`nsopt.distributed`'s ordered reduction), as :func:`dot`'s;
# 0.0 + x is x, so the default is the plain kernel bit for bit.
# --------------------------------------------------------------------------------------
_LINE_SNAP = """
        if eta == 0.0:
            z = f[i]
        elif nk > 0:
            scale = abs(f[i]) + abs(eta * qi)
            for j in range(nk):
                kj = kinks[i, j]
                if abs(z - kj) <= 8.0 * 2.220446049250313e-16 * (scale + abs(kj)):
                    z = kj"""

_LINE_SOURCE = """
def {name}_line_derivative(f, q, y, c, kinks, eta, side{params}, start=0.0):
    nk = kinks.shape[1]
    s = start
    for i in range(f.shape[0]):
        qi = q[i]
        sd = side * (1.0 if qi > 0.0 else (-1.0 if qi < 0.0 else 0.0))
        z = f[i] + eta * qi{snap}
        s += (c[i] * {slope}) * qi
    return s


def {name}_line_value(f, q, y, c, eta{params}, start=0.0):
    v = start
    for i in range(f.shape[0]):
        v += c[i] * {name}(f[i] + eta * q[i], y[i], 0.0{params})[0]
    return v


def {name}_line_value_and_derivative(f, q, y, c, kinks, eta, side{params}):
    nk = kinks.shape[1]
    v = 0.0
    s = 0.0
    for i in range(f.shape[0]):
        qi = q[i]
        sd = side * (1.0 if qi > 0.0 else (-1.0 if qi < 0.0 else 0.0))
        z0 = f[i] + eta * qi
        li, di = {name}(z0, y[i], sd{params})
        v += c[i] * li
        z = z0{snap}
        if z != z0:
            di = {name}(z, y[i], sd{params})[1]
        s += (c[i] * di) * qi
    return v, s
"""


def line_kernels(name: str, *params: str):
    """``(value, derivative, value_and_derivative)``: the line kernels of the element-wise
    loss ``name``, ``value(f, q, y, c, eta, *params) -> phi`` (the value kernel's sum at
    ``f + eta q``, no scores allocated), ``derivative(f, q, y, c, kinks, eta, side, *params)
    -> phi'`` and ``value_and_derivative(...) -> (phi, phi')``, compiled (from source, as
    :func:`elementwise`). ``side`` (+1 or -1) times ``sign(q_i)`` picks example i's one-sided
    derivative; the value is the value kernel's at the unsnapped scores ``f + eta q``. The
    value and derivative kernels take the running sum's first value last (after
    ``*params``): ``start=0.0``."""
    extra = "".join(", " + p for p in params)
    slope_name = name + "_slope"
    namespace = {"__name__": __name__, name: globals()[name]}
    if slope_name in globals():
        namespace[slope_name] = globals()[slope_name]
        slope = f"{slope_name}(z, y[i], sd{extra})"
    else:
        slope = f"{name}(z, y[i], sd{extra})[1]"
    source = _LINE_SOURCE.format(name=name, params=extra, slope=slope, snap=_LINE_SNAP)
    exec(compile(source, __file__, "exec"), namespace)
    return tuple(njit(cache=True)(namespace[name + suffix])
                 for suffix in ("_line_value", "_line_derivative", "_line_value_and_derivative"))


@njit(cache=True)
def logistic_slope(z, y, side):
    """The derivative half of :func:`logistic`, the same expressions: one exp, no log1p."""
    t = y * z
    if t > 0.0:
        e = math.exp(-t)
        return -y * e / (1.0 + e)
    return -y / (1.0 + math.exp(t))


#: grad kernel -> (line value, line derivative, line value and derivative), for the
#: differentiable losses
LINE_KERNELS = {
    logistic_grad: line_kernels("logistic"),
    squared_hinge_grad: line_kernels("squared_hinge"),
    least_squares_grad: line_kernels("least_squares"),
    huber_grad: line_kernels("huber", "delta"),
    exponential_grad: line_kernels("exponential"),
    poisson_grad: line_kernels("poisson"),
}
