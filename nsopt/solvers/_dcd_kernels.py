r"""Compiled kernels of dual coordinate descent without an intercept (:class:`~.dcd.DCD`).

The epochs follow liblinear's dual solvers ([HCLKS08]_): a random permutation of the active
examples per epoch, one sparse dot and at most one sparse axpy per example over CSR rows, and
shrinking of the dual variables at a bound. What differs is the memory layout and what is
tracked for the certificate:

* **one cache line per example.** The per-example numbers the step reads and writes live in
  one row of an ``(m, 8)`` array (:data:`EX_Y` ... :data:`EX_Z`): a visit touches one line of
  it, not seven arrays;
* **software prefetch.** A random order defeats the hardware prefetcher: every row is a cache
  miss (measured on a9a, a shuffled pass of dots costs 3-4x a sequential one). While example
  ``s`` is processed, the row pointer of example ``s + 2 D`` and the data, indices and
  per-example line of example ``s + D`` are requested (``llvm.prefetch``; a no-op where the
  intrinsic is not available), which brings a shuffled epoch within about 1.2x of a
  sequential one;
* **a running estimate of the duality gap.** Each example keeps :math:`z_i = y_i\langle x_i,
  w\rangle` as of its last visit, *before* its own step (after it, the hinge's margin of an
  example strictly inside its box is exactly 1 and its loss 0, which made the estimate
  negative: measured on a9a, the margins before the step give an estimate within 0.6-1.5x of
  the exact gap once it is below 10%). The sums :math:`\hat R = \sum_i c_i
  \phi(z_i)` (the loss at those margins) and :math:`\hat D = \sum_i c_i \psi(t_i)`
  (:math:`\psi(t) = -l^*(-yt, y)`) are kept up to date in O(1) per visit, so that
  :math:`\hat G = \hat R - \hat D + \lambda\|w\|^2` costs O(d) per epoch. It proves
  nothing (the margins are of different ``w``): it only says when the exact check, a data
  pass (:func:`check_pass`), is worth making.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["EX_Y", "EX_SCALE", "EX_Q", "EX_C", "EX_T", "EX_TC", "EX_Z", "pack_examples",
           "epochs", "check_pass", "resync", "row_norms_sq", "prefetch", "best_scale"]

#: on a shrunk problem, an estimate within this multiple of its target is made exact on the
#: active examples (one pass over their rows) before it decides
_REFRESH = 4.0

#: columns of the per-example array: label, step of w per unit of t (c y / lam), curvature
#: (c ||x||^2 / lam), weight c, the dual variable t, its complement 1 - t, the margin z
EX_Y, EX_SCALE, EX_Q, EX_C, EX_T, EX_TC, EX_Z = range(7)
_EX_COLS = 8  # 64 bytes: one cache line


def _make_prefetch():
    """``prefetch(array, i)``: ask the CPU for the cache line of ``array[i]`` (no fault on any
    address, no effect on results). A no-op if numba's extension API or LLVM's intrinsic is
    missing."""
    try:
        from llvmlite import binding as llvm_binding
        from llvmlite import ir
        from numba import types
        from numba.core import cgutils
        from numba.extending import intrinsic
    except ImportError:  # pragma: no cover - numba without its extension API
        intrinsic = None

    if intrinsic is not None:
        name = ("llvm.prefetch.p0" if llvm_binding.llvm_version_info[0] >= 15
                else "llvm.prefetch.p0i8")

        @intrinsic
        def _prefetch(typingctx, arr, idx):
            if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
                return None

            def codegen(context, builder, signature, args):
                arrty = signature.args[0]
                ary = context.make_array(arrty)(context, builder, args[0])
                ptr = cgutils.get_item_pointer(context, builder, arrty, ary, [args[1]],
                                               wraparound=False)
                i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
                fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
                fn = cgutils.get_or_insert_function(builder.module, fnty, name)
                # read, high locality, data cache
                builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
                return context.get_dummy_value()

            return types.void(arr, idx), codegen

        return _prefetch

    @njit(inline="always")  # pragma: no cover
    def _noop(arr, i):
        pass

    return _noop  # pragma: no cover


prefetch = _make_prefetch()


@njit(cache=True)
def _next(rng):
    """xorshift64*: the next pseudo-random 64-bit integer (state ``rng[0]``, nonzero)."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return x * np.uint64(2685821657736338717)


@njit(cache=True)
def _shuffle(index, n, rng):
    """Fisher-Yates on ``index[:n]``; the position ``j`` in ``[0, k]`` is Lemire's
    multiply-shift of the high 32 random bits (no 64-bit division: a shuffle of a9a's 32561
    examples cost 0.37 ms with a modulo; the bias, below ``k / 2^32``, is immaterial here)."""
    for k in range(n - 1, 0, -1):
        j = int(((_next(rng) >> np.uint64(32)) * np.uint64(k + 1)) >> np.uint64(32))
        tmp = index[k]
        index[k] = index[j]
        index[j] = tmp


@njit(cache=True)
def _logistic_root(a, s, b):
    r"""The root :math:`z \in (0, 1/2]` of :math:`g(z) = \log\frac{z}{1-z} + a(z - s) + b`, known
    to lie there (``g(1/2) >= 0``). ``g`` is increasing and concave on (0, 1/2]: Newton from
    the left of the root climbs to it monotonically; a step that leaves (0, 1/2] is replaced
    by ``z / 10`` ([YHL11]_ Alg. 4, :math:`\xi = 0.1`)."""
    z = s if s < 0.5 else 0.5
    if z <= 0.0:
        z = 1e-20
    for _ in range(100):
        g = math.log(z) - math.log1p(-z) + a * (z - s) + b
        if abs(g) <= 1e-12:
            break
        dg = 1.0 / z + 1.0 / (1.0 - z) + a
        zn = z - g / dg
        if zn <= 0.0:
            zn = 0.1 * z
        elif zn > 0.5:
            zn = 0.5
        if zn == z:
            break
        z = zn
    return z


@njit(cache=True, inline="always")
def _phi(kind, z):
    r"""The margin loss :math:`\phi(z)`: hinge :math:`\max(0, 1 - z)`, squared hinge
    :math:`\tfrac12\max(0, 1 - z)^2`, logistic :math:`\log(1 + e^{-z})`."""
    if kind == 0:
        return 1.0 - z if z < 1.0 else 0.0
    if kind == 1:
        return 0.5 * (1.0 - z) * (1.0 - z) if z < 1.0 else 0.0
    if z > 0.0:
        return math.log1p(math.exp(-z))
    return -z + math.log1p(math.exp(z))


@njit(cache=True, inline="always")
def _psi(kind, t, tc):
    r""":math:`\psi(t) = -l^*(-yt, y)`: hinge :math:`t`, squared hinge :math:`t - t^2/2`,
    logistic :math:`-t\log t - (1-t)\log(1-t)` (``tc = 1 - t``)."""
    if kind == 0:
        return t
    if kind == 1:
        return t - 0.5 * t * t
    out = 0.0
    if t > 0.0:
        out -= t * math.log(t)
    if tc > 0.0:
        out -= tc * math.log(tc)
    return out


@njit(cache=True)
def row_norms_sq(indptr, data):
    r""":math:`\|x_i\|^2` of the CSR rows."""
    m = indptr.shape[0] - 1
    out = np.empty(m)
    for i in range(m):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * data[k]
        out[i] = acc
    return out


def pack_examples(y, c, sq, lam, t, tc):
    """The ``(m, 8)`` per-example array (columns :data:`EX_Y` ...), margins 0, its rows on
    64-byte boundaries (one cache line each)."""
    buf = np.empty(y.size * _EX_COLS + _EX_COLS)
    skip = (-buf.ctypes.data % 64) // 8
    ex = buf[skip:skip + y.size * _EX_COLS].reshape(y.size, _EX_COLS)
    _fill_examples(ex, y, c, sq, lam, t, tc)
    return ex


@njit(cache=True)
def _fill_examples(ex, y, c, sq, lam, t, tc):
    """The rows of :func:`pack_examples`, one cache line at a time (the same values as
    column-wise numpy: ``c * y / lam`` and ``c * sq / lam`` in that order; measured on letter,
    six strided column writes and the zeroing of the buffer were 4% of a dcd run at lam
    1e-3)."""
    for i in range(y.shape[0]):
        ex[i, EX_Y] = y[i]
        ex[i, EX_SCALE] = c[i] * y[i] / lam
        ex[i, EX_Q] = c[i] * sq[i] / lam
        ex[i, EX_C] = c[i]
        ex[i, EX_T] = t[i]
        ex[i, EX_TC] = tc[i]
        ex[i, EX_Z] = 0.0
        ex[i, _EX_COLS - 1] = 0.0


@njit(cache=True, inline="always")
def _prefetch_row(indptr, indices, data, ex, j):
    """Prefetch example ``j``: its line of ``ex`` and the first lines of its row."""
    prefetch(ex, j)  # one index into a 2-D array: the start of row j
    a, b = indptr[j], indptr[j + 1]
    if b > a + 32:
        b = a + 32  # longer rows: the hardware prefetcher follows the stream
    for k in range(a, b, 8):
        prefetch(data, k)
    for k in range(a, b, 16):
        prefetch(indices, k)


@njit(cache=True)
def epochs(kind, indptr, indices, data, ex, w, index, shrink, sums, v, lam, rng, max_epochs,
           max_work, target_rel, target_abs, prefetch_distance):
    r"""Epochs of dual coordinate descent until the gap estimate reaches its target, or
    ``max_epochs`` epochs, or ``max_work`` nonzeros visited.

    Parameters
    ----------
    kind : int
        0 hinge, 1 squared hinge, 2 logistic.
    indptr, indices, data : CSR arrays of X (float64 data).
    ex : array (m, 8), updated in place
        Per example: label, :math:`c_i y_i/\lambda`, :math:`q_i = c_i\|x_i\|^2/\lambda`,
        :math:`c_i`, :math:`t_i`, :math:`1 - t_i`, the margin :math:`z_i` at the last visit
        (before the step).
    w : array (d,), updated in place
        :math:`w(t) = \frac1\lambda\sum_i c_i y_i t_i x_i`, kept by the steps.
    index : int array
        The examples to visit (those with :math:`c_i > 0`); ``shrink[0]`` of them active, the
        shrunk ones moved behind ([HCLKS08]_ Sec. 3.2).
    shrink : float array [n_active, PGmax_old, PGmin_old, eps, use]
        The shrinking state, carried across calls; ``use = 0`` turns shrinking off.
    sums : float array [R_hat, D_hat, ||w||^2, Z_up]
        :math:`\sum_i c_i\phi(z_i)`, :math:`\sum_i c_i\psi(t_i)` (kept per visit),
        :math:`\|w\|^2` at the end of the last epoch, and :math:`\sum_{i \in U} c_i z_i` over
        the set U of examples shrunk at the upper bound (their margins when shrunk).
    v : array (d,), updated in place
        :math:`\sum_{i \in U} c_i y_i x_i`. A hinge example shrunk at :math:`t_i = 1` has
        :math:`z_i < 1`: its loss :math:`1 - z_i` is linear in w, so the loss of U at the
        current w is :math:`\sum_U c_i - \langle v, w\rangle`, and the estimate uses it
        instead of the old margins (O(d) per epoch; shrunk problems' estimates otherwise
        lag: measured on a9a at lam 1e-3, 2e-3 against an exact 2e-4).
    lam : float
    rng : uint64 array (1,)
        The permutations' random state.
    max_epochs, max_work : int
        Caps of this call (epochs, nonzeros visited).
    target_rel, target_abs : float
        Stop after an epoch whose estimate :math:`\hat G = \hat R - \hat D + \lambda\|w\|^2`
        is at most ``max(target_abs, target_rel * P)`` in absolute value (:math:`P = \hat R +
        \tfrac\lambda2\|w\|^2`, the primal estimate; a gap is never negative, so a
        negative estimate only measures the estimate's error). Both ``-inf``: never on the
        estimate.
    prefetch_distance : int
        How many examples ahead the rows are prefetched (0: none).

    Returns
    -------
    n_epochs, n_active, work, estimate
    """
    n_all = index.shape[0]
    work = 0
    n_active = int(shrink[0])
    pg_max_old, pg_min_old, eps = shrink[1], shrink[2], shrink[3]
    use = shrink[4] != 0.0 and kind != 2
    keep_full = shrink[4] == 2.0
    upper = 1.0 if kind == 0 else np.inf
    diag = 1.0 if kind == 1 else 0.0
    r_hat, d_hat, z_up = sums[0], sums[1], sums[3]
    dist = prefetch_distance
    n_ep = 0
    estimate = np.inf
    while n_ep < max_epochs and work < max_work:
        n_ep += 1
        pg_max, pg_min = -np.inf, np.inf
        _shuffle(index, n_active, rng)
        if dist > 0:
            for s in range(min(2 * dist, n_active)):
                prefetch(indptr, index[s])
            for s in range(min(dist, n_active)):
                _prefetch_row(indptr, indices, data, ex, index[s])
        s = 0
        while s < n_active:
            if dist > 0:
                if s + 2 * dist < n_active:
                    prefetch(indptr, index[s + 2 * dist])
                if s + dist < n_active:
                    _prefetch_row(indptr, indices, data, ex, index[s + dist])
            i = index[s]
            start, end = indptr[i], indptr[i + 1]
            work += end - start
            wx = 0.0
            for k in range(start, end):
                wx += data[k] * w[indices[k]]
            yi, q, ci, ti = ex[i, EX_Y], ex[i, EX_Q], ex[i, EX_C], ex[i, EX_T]
            z = yi * wx
            if kind == 2:
                # g(1/2) >= 0: the root is at most 1/2, solve for t; else for 1 - t
                tci = ex[i, EX_TC]
                if q * (0.5 - ti) + z >= 0.0:
                    r = _logistic_root(q, ti, z)
                    t_new, tc_new = r, 1.0 - r
                else:
                    r = _logistic_root(q, tci, -z)
                    t_new, tc_new = 1.0 - r, r
                delta = t_new - ti
                d_hat += ci * (_psi(2, t_new, tc_new) - _psi(2, ti, tci))
                ex[i, EX_T], ex[i, EX_TC] = t_new, tc_new
                if delta != 0.0:
                    step = delta * ex[i, EX_SCALE]
                    for k in range(start, end):
                        w[indices[k]] += step * data[k]
                r_hat += ci * (_phi(2, z) - _phi(2, ex[i, EX_Z]))
                ex[i, EX_Z] = z
                s += 1
                continue
            g = z - 1.0 + diag * ti
            pg = 0.0
            if ti == 0.0:
                if use and g > pg_max_old:
                    r_hat += ci * (_phi(kind, z) - _phi(kind, ex[i, EX_Z]))
                    ex[i, EX_Z] = z
                    n_active -= 1
                    index[s], index[n_active] = index[n_active], index[s]
                    continue
                elif g < 0.0:
                    pg = g
            elif ti == upper:
                if use and g < pg_min_old:
                    r_hat += ci * (_phi(kind, z) - _phi(kind, ex[i, EX_Z]))
                    ex[i, EX_Z] = z
                    z_up += ci * z
                    cy = ci * yi
                    for k in range(start, end):
                        v[indices[k]] += cy * data[k]
                    n_active -= 1
                    index[s], index[n_active] = index[n_active], index[s]
                    continue
                elif g > 0.0:
                    pg = g
            else:
                pg = g
            if pg > pg_max:
                pg_max = pg
            if pg < pg_min:
                pg_min = pg
            if pg > 1e-12 or pg < -1e-12:
                h = q + diag
                if h > 0.0:
                    t_new = min(max(ti - g / h, 0.0), upper)
                else:  # an empty row of the hinge: the dual is linear in t_i, g < 0 here
                    t_new = upper if g < 0.0 else 0.0
                delta = t_new - ti
                if delta != 0.0:
                    ex[i, EX_T] = t_new
                    d_hat += ci * (_psi(kind, t_new, 0.0) - _psi(kind, ti, 0.0))
                    step = delta * ex[i, EX_SCALE]
                    for k in range(start, end):
                        w[indices[k]] += step * data[k]
            r_hat += ci * (_phi(kind, z) - _phi(kind, ex[i, EX_Z]))
            ex[i, EX_Z] = z
            s += 1
        wsq, vw = 0.0, 0.0
        for j in range(w.shape[0]):
            wsq += w[j] * w[j]
            vw += v[j] * w[j]
        r_now = r_hat + z_up - vw  # the losses of U at the current w
        estimate = r_now - d_hat + lam * wsq
        target = max(target_abs, target_rel * abs(r_now + 0.5 * lam * wsq))
        if abs(estimate) <= _REFRESH * target and 2 * n_active < n_all:
            # near the target on a shrunk problem: the active margins, exact at this w (a
            # pass over the active rows only; the old ones err by the gap's own size)
            for s in range(n_active):
                i = index[s]
                wx = 0.0
                for k in range(indptr[i], indptr[i + 1]):
                    wx += data[k] * w[indices[k]]
                z = ex[i, EX_Y] * wx
                r_hat += ex[i, EX_C] * (_phi(kind, z) - _phi(kind, ex[i, EX_Z]))
                ex[i, EX_Z] = z
                work += indptr[i + 1] - indptr[i]
            r_now = r_hat + z_up - vw
            estimate = r_now - d_hat + lam * wsq
            target = max(target_abs, target_rel * abs(r_now + 0.5 * lam * wsq))
        if use:
            if pg_max - pg_min <= eps and (n_active < n_all or not keep_full):
                if n_active == n_all:
                    eps *= 0.1  # the whole problem meets eps: ask more of the next shrinking
                n_active = n_all  # the shrunk problem is solved: visit everything again
                pg_max_old, pg_min_old = np.inf, -np.inf
                z_up = 0.0
                v[:] = 0.0
            else:
                if pg_max - pg_min <= eps:
                    # the whole problem meets eps: this full epoch's own bounds are the next
                    # thresholds (every example was visited), no epoch without shrinking
                    eps *= 0.1
                pg_max_old = pg_max if pg_max > 0.0 else np.inf
                pg_min_old = pg_min if pg_min < 0.0 else -np.inf
        if abs(estimate) <= target:  # a gap is >= 0: an estimate below -target is noise
            break
    shrink[0], shrink[1], shrink[2], shrink[3] = n_active, pg_max_old, pg_min_old, eps
    sums[0], sums[1], sums[3] = r_hat, d_hat, z_up
    sums[2] = 0.0
    for j in range(w.shape[0]):
        sums[2] += w[j] * w[j]
    return n_ep, n_active, work, estimate


@njit(cache=True)
def check_pass(kind, indptr, indices, data, ex, w, a, t):
    r"""One pass over the rows for the exact check: the dual plane of ``t`` and the loss at
    ``w``.

    Writes ``t`` (the dual point, clipped into its box: hinge and logistic [0, 1], squared
    hinge [0, inf)) and ``a = -X^T(c\circ y\circ t)`` (``a`` zeroed first), refreshes the
    margins :math:`z_i = y_i\langle x_i, w\rangle` of ``ex``; returns ``(b, R(w))`` with
    :math:`b = \sum_i c_i\psi(t_i)` (the plane is :math:`R(v) \ge \langle a, v\rangle + b`)
    and :math:`R(w) = \sum_i c_i\phi(z_i)`. The conjugate terms are computed from ``t`` alone
    (:math:`1 - t` for the logistic loss, as ``loss.dual_plane`` does), so that the bound is
    the one :meth:`~nsopt.Certificate.check` recomputes.
    """
    m = ex.shape[0]
    upper = 1.0 if kind != 1 else np.inf
    a[:] = 0.0
    b = 0.0
    risk = 0.0
    for i in range(m):
        ci = ex[i, EX_C]
        ti = min(max(ex[i, EX_T], 0.0), upper)
        t[i] = ti
        start, end = indptr[i], indptr[i + 1]
        wx = 0.0
        coef = -ci * ex[i, EX_Y] * ti
        if coef != 0.0:
            for k in range(start, end):
                j = indices[k]
                wx += data[k] * w[j]
                a[j] += coef * data[k]
        else:  # t_i = 0 (most examples of the hinge at the end): the dot alone
            for k in range(start, end):
                wx += data[k] * w[indices[k]]
        z = ex[i, EX_Y] * wx
        ex[i, EX_Z] = z
        if ci != 0.0:
            b += ci * _psi(kind, ti, 1.0 - ti)
            risk += ci * _phi(kind, z)
    return b, risk


@njit(cache=True)
def resync(kind, ex, sums, w, index, n_active):
    r"""The estimate's sums recomputed from ``ex`` and ``w`` (after :func:`check_pass`, whose
    margins are those of every example): :math:`\hat R`, :math:`\hat D`, :math:`\|w\|^2`
    and the margins' sum over the examples shrunk at the upper bound (``index[n_active:]``
    with :math:`t_i = 1`, the hinge's)."""
    r_hat, d_hat = 0.0, 0.0
    for i in range(ex.shape[0]):
        ci = ex[i, EX_C]
        if ci != 0.0:
            r_hat += ci * _phi(kind, ex[i, EX_Z])
            d_hat += ci * _psi(kind, ex[i, EX_T], ex[i, EX_TC])
    z_up = 0.0
    if kind == 0:
        for s in range(n_active, index.shape[0]):
            i = index[s]
            if ex[i, EX_T] == 1.0:
                z_up += ex[i, EX_C] * ex[i, EX_Z]
    wsq = 0.0
    for j in range(w.shape[0]):
        wsq += w[j] * w[j]
    sums[0], sums[1], sums[2], sums[3] = r_hat, d_hat, wsq, z_up


@njit(cache=True)
def _scale_terms(kind, z, c, s):
    r""":math:`(R(sx), \frac{d}{ds}R(sx), \frac{d^2}{ds^2}R(sx))` from the margins
    :math:`z_i` of ``x`` and the weights (the hinge's second derivative is 0 between kinks)."""
    r, d1, d2 = 0.0, 0.0, 0.0
    for i in range(z.shape[0]):
        ci, zi = c[i], z[i]
        u = s * zi
        if kind == 0:
            if u < 1.0:
                r += ci * (1.0 - u)
                d1 -= ci * zi
        elif kind == 1:
            if u < 1.0:
                r += 0.5 * ci * (1.0 - u) * (1.0 - u)
                d1 -= ci * zi * (1.0 - u)
                d2 += ci * zi * zi
        else:
            r += ci * _phi(2, u)
            if u > 0.0:
                e = math.exp(-u)
                p = e / (1.0 + e)          # sigma(-u)
            else:
                p = 1.0 / (1.0 + math.exp(u))
            d1 -= ci * zi * p
            d2 += ci * zi * zi * p * (1.0 - p)
    return r, d1, d2


@njit(cache=True)
def best_scale(kind, ex, lam, wsq, lo, hi, max_iter):
    r"""The scale :math:`s \in [lo, hi]` minimising :math:`J(sx) = \tfrac\lambda2 s^2\|x\|^2
    + \sum_i c_i\phi(s z_i)` (convex in s) from the margins :math:`z_i` of ``x`` kept in
    ``ex`` by :func:`check_pass` (``wsq`` = :math:`\|x\|^2`): no data pass; the margins and
    weights are gathered once, then O(m) per trial. Newton from s = 1 safeguarded by
    bisection on the sign of the derivative (for the hinge, Newton's point is the minimiser of
    the current quadratic piece), at most ``max_iter`` trials, stopped when the bracket proves
    :math:`J(sx)` within :math:`10^{-12}` relative of the minimum. Returns ``(s, R(sx))``;
    ``(1, R(x))`` when no trial improves on s = 1."""
    m = ex.shape[0]
    z = np.empty(m)
    c = np.empty(m)
    n = 0
    for i in range(m):
        if ex[i, EX_C] != 0.0:
            z[n] = ex[i, EX_Z]
            c[n] = ex[i, EX_C]
            n += 1
    z, c = z[:n], c[:n]
    r1, d1, d2 = _scale_terms(kind, z, c, 1.0)
    g = lam * wsq + d1
    best_s, best_r = 1.0, r1
    best_j = 0.5 * lam * wsq + r1
    if g == 0.0:
        return best_s, best_r
    s = 1.0
    if g > 0.0:
        hi = 1.0
    else:
        lo = 1.0
    for _ in range(max_iter):
        h = lam * wsq + d2
        sn = s - g / h if h > 0.0 else 0.5 * (lo + hi)
        if not (lo < sn < hi):
            sn = 0.5 * (lo + hi)
        if sn == s or hi - lo <= 1e-12 * hi:
            break
        s = sn
        r, d1, d2 = _scale_terms(kind, z, c, s)
        j = 0.5 * lam * s * s * wsq + r
        if j < best_j:
            best_s, best_r, best_j = s, r, j
        g = lam * s * wsq + d1
        if g == 0.0:
            break
        if g > 0.0:
            hi = s
        else:
            lo = s
        if abs(g) * (hi - lo) <= 1e-12 * best_j:
            break
    return best_s, best_r
