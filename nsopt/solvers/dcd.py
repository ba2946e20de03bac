r"""Dual coordinate descent for L2-regularized margin losses ([HCLKS08]_, [YHL11]_).

For :math:`J(w) = \tfrac\lambda2\|w\|^2 + \sum_i c_i\, l(\langle x_i, w\rangle, y_i)` with a
margin loss whose conjugate is known (hinge, squared hinge, logistic), the Fenchel dual over
the dual point :math:`t` (one entry per example, in ``[0, loss.dual_upper]``) is

.. math::
    D(t) = -\sum_i c_i\, l^*(-y_i t_i, y_i) - \frac{1}{2\lambda}\Big\|\sum_i c_i y_i t_i x_i\Big\|^2,
    \qquad w(t) = \frac1\lambda \sum_i c_i y_i t_i x_i,

and :math:`D(t) \le J^* \le J(w(t))` for every feasible ``t``. Coordinate ascent on one
:math:`t_i` at a time is a one-dimensional problem with a closed form (hinge, squared hinge) or
a short Newton solve (logistic), at the cost of two sparse row operations
(:math:`\langle x_i, w\rangle` and :math:`w \mathrel{+}= \delta x_i`).
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.special import xlogy

from .._validation import Boolean, Interval, NoneOr, Option
from ..certificate import DualPoint
from ..regularizers import scaled_conjugate
from ._base import Solver
from ._registry import register

__all__ = ["DCD"]

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
    """Fisher-Yates on ``index[:n]``."""
    for k in range(n - 1, 0, -1):
        j = int(_next(rng) % np.uint64(k + 1))
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


@njit(cache=True)
def _epochs(kind, indptr, indices, data, y, scale, qa, t, tc, w, index, shrink, n_epochs, rng):
    r"""Run ``n_epochs`` passes of coordinate descent over the CSR rows ``indptr, indices,
    data``; returns the number of active examples and the nonzeros visited.

    Parameters
    ----------
    kind : int
        0 hinge, 1 squared hinge, 2 logistic.
    y, scale, qa : arrays (m,)
        Labels, :math:`c_i y_i / \lambda` (the step of ``w`` per unit of :math:`t_i`) and
        :math:`c_i \|x_i\|^2 / \lambda` (the curvature of the dual in :math:`t_i`).
    t, tc, w : arrays, updated in place
        The dual point, its complement ``1 - t`` (logistic only) and the primal point.
    index : int array
        The examples to visit (those with :math:`c_i > 0`); ``shrink[0]`` of them active, the
        shrunk ones moved behind ([HCLKS08]_ Sec. 3.2).
    shrink : float array [n_active, PGmax_old, PGmin_old, eps, use]
        The shrinking state, carried across calls; ``use = 0`` turns shrinking off.
    rng : uint64 array (1,)
        The permutation's random state.
    """
    n_all = index.shape[0]
    work = 0
    n_active = int(shrink[0])
    pg_max_old, pg_min_old, eps = shrink[1], shrink[2], shrink[3]
    use = shrink[4] != 0.0 and kind != 2
    upper = 1.0 if kind == 0 else np.inf
    diag = 1.0 if kind == 1 else 0.0
    for _ in range(n_epochs):
        pg_max, pg_min = -np.inf, np.inf
        _shuffle(index, n_active, rng)
        s = 0
        while s < n_active:
            i = index[s]
            start, end = indptr[i], indptr[i + 1]
            work += end - start
            wx = 0.0
            for k in range(start, end):
                wx += data[k] * w[indices[k]]
            if kind == 2:
                a, b = qa[i], y[i] * wx
                # g(1/2) >= 0: the root is at most 1/2, solve for t; else for 1 - t
                if a * (0.5 - t[i]) + b >= 0.0:
                    z = _logistic_root(a, t[i], b)
                    t_new, tc_new = z, 1.0 - z
                else:
                    z = _logistic_root(a, tc[i], -b)
                    t_new, tc_new = 1.0 - z, z
                delta = t_new - t[i]
                t[i], tc[i] = t_new, tc_new
                if delta != 0.0:
                    step = delta * scale[i]
                    for k in range(start, end):
                        w[indices[k]] += step * data[k]
                s += 1
                continue
            g = y[i] * wx - 1.0 + diag * t[i]
            pg = 0.0
            if t[i] == 0.0:
                if use and g > pg_max_old:
                    n_active -= 1
                    index[s], index[n_active] = index[n_active], index[s]
                    continue
                elif g < 0.0:
                    pg = g
            elif t[i] == upper:
                if use and g < pg_min_old:
                    n_active -= 1
                    index[s], index[n_active] = index[n_active], index[s]
                    continue
                elif g > 0.0:
                    pg = g
            else:
                pg = g
            pg_max = max(pg_max, pg)
            pg_min = min(pg_min, pg)
            if abs(pg) > 1e-12:
                h = qa[i] + diag
                if h > 0.0:
                    t_new = min(max(t[i] - g / h, 0.0), upper)
                else:  # an empty row of the hinge: the dual is linear in t_i, g < 0 here
                    t_new = upper if g < 0.0 else 0.0
                delta = t_new - t[i]
                t[i] = t_new
                step = delta * scale[i]
                for k in range(start, end):
                    w[indices[k]] += step * data[k]
            s += 1
        if not use:
            continue
        if pg_max - pg_min <= eps:
            if n_active == n_all:
                eps *= 0.1      # the whole problem meets eps: ask more of the next shrinking
            n_active = n_all    # the shrunk problem is solved: visit everything again
            pg_max_old, pg_min_old = np.inf, -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    shrink[0], shrink[1], shrink[2], shrink[3] = n_active, pg_max_old, pg_min_old, eps
    return n_active, work


_OTHERS = "'ls-bmrm', 'bmrm' or 'proximal-bundle'"
_PROBE = np.array([0.0, 0.125, 0.25, 0.5, 0.75, 1.0])
#: the kernel's kinds, known by their dual: (dual_upper, t -> l^*(-y t, y)); a margin loss is
#: determined by its conjugate, so a loss with these is the kernel's loss
_CONJUGATES = (
    (1.0, lambda t: -t),                                           # 0: hinge
    (math.inf, lambda t: 0.5 * t * t - t),                         # 1: squared hinge
    (1.0, lambda t: xlogy(t, t) + xlogy(1.0 - t, 1.0 - t)),        # 2: logistic
)


def _kind(loss) -> int | None:
    """The kernel's kind for ``loss`` (0 hinge, 1 squared hinge, 2 logistic), asked of the
    loss's dual (``dual_upper``, ``conjugate_terms``), not of its class; None for others."""
    upper = getattr(loss, "dual_upper", None)
    if upper is None or not getattr(loss, "binary", False):
        return None
    try:
        conj = np.asarray(loss.conjugate_terms(_PROBE.copy()), dtype=np.float64)
    except Exception:  # a conjugate that takes no probe is not one of the kernel's
        return None
    for kind, (u, f) in enumerate(_CONJUGATES):
        if upper == u and conj.shape == _PROBE.shape and np.allclose(conj, f(_PROBE), rtol=0,
                                                                      atol=1e-14):
            return kind
    return None


@register
class DCD(Solver):
    r"""Dual coordinate descent (liblinear's dual solvers), certified by its own dual point.

    Minimises :math:`J(w) = \tfrac\lambda2\|w\|^2 + \sum_i c_i\, l(\langle x_i, w\rangle,
    y_i)` for the hinge, squared hinge ([HCLKS08]_) and logistic ([YHL11]_) losses, with sample
    weights :math:`c` (:class:`~nsopt.RegularizedRisk` with :class:`~nsopt.regularizers.L2`, no
    intercept), by maximising the Fenchel dual

    .. math::
        D(t) = -\sum_i c_i\, l^*(-y_i t_i, y_i) - \frac{\lambda}{2}\|w(t)\|^2, \qquad
        w(t) = \frac1\lambda\sum_i c_i y_i t_i x_i,

    one coordinate :math:`t_i` at a time, in a random order each pass (epoch). The dual point
    is the certificate: every ``check_every`` epochs :math:`t` (kept in its box
    ``[0, loss.dual_upper]``) gives the proven bound :math:`D(t) \le J^*` and
    :math:`w(t)` the value :math:`J(w(t)) \ge J^*`; the run stops when the gap is within
    ``max(atol, rtol |J|)``.

    Parameters
    ----------
    check_every : int or None, default None
        Epochs between two checks (one check: the dual plane of :math:`t`, one data pass, and
        one oracle call at :math:`w(t)`, two passes; an epoch costs about two passes over the
        examples it visits). None: as many epochs as it takes to visit three times the
        nonzeros of X (with shrinking an epoch may visit a small share of them), so that
        checks cost at most about a third of the run whatever the active set.
    shrinking : bool, default True
        Hinge and squared hinge: skip examples whose :math:`t_i` sits at a bound with a
        gradient pushing it out ([HCLKS08]_ Sec. 3.2); visit all again once the shrunk problem
        is solved to the projected-gradient spread ``eps`` (1, then divided by 10 each time the
        whole problem meets it). The certificate is always of the whole problem.
    random_state : int, default 0
        Seed of the permutations (runs are reproducible).
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`); one
        iteration is ``check_every`` epochs and one check.

    Notes
    -----
    The step in :math:`t_i` with :math:`G = y_i\langle x_i, w\rangle - 1` and
    :math:`q_i = c_i\|x_i\|^2/\lambda` (liblinear's :math:`\alpha_i = c_i t_i/\lambda`,
    :math:`C_i = c_i / \lambda`):

    * hinge, :math:`t_i \in [0, 1]`: :math:`t_i \leftarrow \mathrm{clip}_{[0,1]}(t_i - G/q_i)`;
    * squared hinge :math:`\tfrac12\max(0, 1 - yz)^2`, :math:`t_i \ge 0`:
      :math:`t_i \leftarrow \max(0, t_i - (G + t_i)/(q_i + 1))`;
    * logistic, :math:`t_i \in (0, 1)`: the root of
      :math:`\log\frac{z}{1-z} + q_i(z - t_i) + y_i\langle x_i, w\rangle`, by Newton on the
      half of (0, 1) that holds it, in :math:`z` or in :math:`1 - z` (both kept, so that
      :math:`t_i` near 1 loses no precision; [YHL11]_ Sec. 3).

    Each step changes :math:`w` by :math:`(c_i y_i \delta/\lambda) x_i`. At a check the dual
    plane :math:`(a, b)` = ``loss.dual_plane(t)`` is recomputed from :math:`t` and :math:`w`
    reset to :math:`-a/\lambda` (no drift from the incremental updates). Start: :math:`t = 0`
    (logistic: :math:`10^{-8}`, inside the domain of :math:`\log`); ``x0`` is evaluated (the
    answer if no later point is better) but does not seed :math:`t`.

    Cost: O(nnz(X)) per epoch (less with shrinking), O(m) memory beyond the data; no master
    problem. Certificate source ``"dual-point"``, evidence :class:`~nsopt.certificate.DualPoint`.
    Fast where :math:`\lambda` is large (few epochs); at small :math:`\lambda` the number
    of epochs grows roughly like :math:`1/\lambda` and the cutting-plane methods catch up.

    ``Result.info``: ``epochs`` (passes made), ``n_active`` (examples not shrunk at the end).

    References
    ----------
    .. [HCLKS08] C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi, S. Sundararajan. A dual
       coordinate descent method for large-scale linear SVM. ICML 2008.
    .. [YHL11] H.-F. Yu, F.-L. Huang, C.-J. Lin. Dual coordinate descent methods for logistic
       regression and maximum entropy models. Machine Learning 85:41-75, 2011.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> res = nsopt.solvers.DCD(rtol=1e-6).solve(J)
    >>> bool(res.success and res.lower_bound <= res.fun), res.certificate.source
    (True, 'dual-point')
    """

    name = "dcd"
    requires = ("regularized_risk",)
    self_certifying = True
    certificate_source = "dual-point"
    history_fields = ("epochs", "n_active")
    options = {
        "check_every": Option(None, NoneOr(Interval(Integral, 1, None, closed="left")),
                              doc="epochs between two certificate checks (None: by work, "
                                  "checks at most about a third of it)"),
        "shrinking": Option(True, Boolean(), doc="skip examples at a bound of their box "
                                                 "(hinge, squared hinge)"),
        "random_state": Option(0, Interval(Integral, 0, None, closed="left"),
                               doc="seed of the random order of the examples"),
    }

    @classmethod
    def unsupported_reason(cls, problem):
        reason = super().unsupported_reason(problem)
        if reason is not None:
            return reason
        if problem.fit_intercept:
            return (f"method {cls.name!r} does not fit an intercept (its dual would carry the "
                    f"equality sum_i c_i y_i t_i = 0, which single-coordinate steps cannot keep); "
                    f"add a constant feature to X, or use {_OTHERS}")
        if not problem.reg.self_conjugate:
            return (f"method {cls.name!r} needs the L2 regularizer (lam/2)||w||^2, got "
                    f"{type(problem.reg).__name__}; use {_OTHERS}, which take any regularizer")
        if _kind(problem.loss) is None:
            return (f"method {cls.name!r} needs a Hinge, SquaredHinge or Logistic loss (a margin "
                    f"loss whose conjugate it steps along), got {type(problem.loss).__name__}; "
                    f"use {_OTHERS}")
        return None

    class State(NamedTuple):
        w: np.ndarray              # w(t) at the last check (the point evaluated)
        t: np.ndarray              # the dual point, updated in place by the epochs
        lower_bound: float         # D(t) at the best check: a valid lower bound on J*
        evidence: object           # its proof: DualPoint(t) (a copy)
        epochs: int                # passes made
        n_active: int              # examples not shrunk
        work: tuple                # the kernel's arrays (mutated in place across steps)

    # ------------------------------------------------------------------------------------
    def init(self, problem, x0):
        problem.evaluate(x0)                           # the fallback answer: J(x0)
        loss, lam = problem.loss, problem.lam
        kind = _kind(loss)
        m, d = loss.m, loss.dim
        dm = loss.data
        # dense rows are copied to CSR once (1.5x their memory): one kernel, no branch per row
        csr = dm.csr if dm.sparse else sp.csr_matrix(np.asarray(dm.X, dtype=np.float64))
        sq = np.asarray(csr.multiply(csr).sum(axis=1), dtype=np.float64).reshape(-1)
        c, y = loss.c, loss.y
        index = np.flatnonzero(c > 0).astype(np.int64)
        t = np.zeros(m)
        tc = np.ones(m)
        if kind == 2:
            t[index], tc[index] = 1e-8, 1.0 - 1e-8
        shrink = np.array([index.size, math.inf, -math.inf, 1.0, float(self.shrinking)])
        seed = (self.random_state * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) % 2**64
        rng = np.array([seed or 1], dtype=np.uint64)
        work = (kind, csr.indptr, csr.indices, csr.data,
                np.ascontiguousarray(y, dtype=np.float64), c * y / lam, c * sq / lam,
                t, tc, np.zeros(d), index, shrink, rng)
        empty = self.State(w=None, t=t, lower_bound=-math.inf, evidence=None, epochs=0,
                           n_active=index.size, work=work)
        return self._check(problem, empty, evaluate=False)

    def step(self, problem, s):
        args, rng = s.work[:12], s.work[12]
        if self.check_every is not None:
            n_active, _ = _epochs(*args, self.check_every, rng)
            n = self.check_every
        else:  # epochs until their nonzeros visited reach those of a check's three passes
            need, n = max(3 * int(s.work[1][-1]), 1), 0
            while need > 0:
                n_active, visited = _epochs(*args, 1, rng)
                need -= max(visited, 1)
                n += 1
        return self._check(problem, s._replace(epochs=s.epochs + n, n_active=int(n_active)))

    def _check(self, problem, s, evaluate=True):
        """The bound of ``t`` made exactly feasible, ``w(t)`` reset from it and valued."""
        loss, lam = problem.loss, problem.lam
        t = np.clip(s.t, 0.0, loss.dual_upper)             # a copy: the evidence's own
        a, b = loss.dual_plane(t)
        lower = b - scaled_conjugate(problem.reg, a, lam)
        w_run = s.work[9]
        np.multiply(a, -1.0 / lam, out=w_run)              # w(t), without the epochs' drift
        w = w_run.copy()
        if evaluate:
            problem.evaluate(w)                            # the loop keeps the best value
        if lower >= s.lower_bound:
            return s._replace(w=w, lower_bound=float(lower),
                              evidence=DualPoint(t, plane=(a, float(b))))
        return s._replace(w=w)

    def info(self, s):
        return {"epochs": s.epochs, "n_active": s.n_active}
