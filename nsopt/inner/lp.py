r"""The L1 master problem as a linear program (HiGHS through scipy), with a certified dual.

The master problem of :math:`\Omega(w) = \|w\|_1` ([TVSL10]_ App. C, eq. (37)) is the LP

.. math:: \min_{\xi, u, v}\ \xi + \lambda 1^T(u + v)
          \quad\text{s.t.}\quad \langle a_i, u - v\rangle + b_i \le \xi\ (i = 1..n),
          \quad u, v \ge 0,

with :math:`w = u - v`. Its LP dual is the master dual over the simplex, with the conjugate of
the L1 norm turned into the constraint :math:`\|A^T\alpha\|_\infty \le \lambda`:

.. math:: \max_{\alpha \in \Delta_n}\ b^T\alpha
          \quad\text{s.t.}\quad \|A^T\alpha\|_\infty \le \lambda .

HiGHS's multipliers satisfy that constraint only to about 1e-9, and :math:`b^T\alpha` is a lower
bound only at a feasible :math:`\alpha`. So the multipliers are repaired: mixed with a strictly
feasible anchor :math:`\alpha^0` (normally the zero-slope plane of the loss's lower bound),
:math:`\alpha' = (1 - s)\alpha + s\alpha^0` with the smallest :math:`s` that gives
:math:`\|A^T\alpha'\|_\infty \le \lambda(1 - 10^{-12})`. The bound loses :math:`s\,b^T(\alpha -
\alpha^0)`, with :math:`s` of the order of the LP's feasibility error.

Without a plane of slope smaller than :math:`\lambda` (in the max norm) the model is unbounded
below: one plane :math:`\langle a, w\rangle + b` with :math:`\|a\|_\infty > \lambda` sends
:math:`\lambda\|w\|_1 + \langle a, w\rangle` to :math:`-\infty` (DESIGN.md Sec. 6). The fix is the
plane :math:`\xi \ge` ``loss.lower_bound`` (slope 0) in the bundle, or a box on ``w``.

Several cutting-plane models
----------------------------
With ``bundle.n_blocks = P > 1`` ([UF12]_ Sec. 3.3) the LP has one epigraph variable per model,

.. math:: \min\ \sum_p \xi_p + \lambda 1^T(u + v)
          \quad\text{s.t.}\quad \langle a_i, u - v\rangle + b_i \le \xi_{p(i)},\quad u, v \ge 0,

and its dual is :math:`\max b^T\alpha` over the product of ``P`` simplices (one equality per
model: the column of :math:`\xi_p`) with :math:`\|A^T\alpha\|_\infty \le \lambda`. The repair is
the same mix, with an anchor :math:`\alpha^0` in the product: in every block the plane of
smallest slope, normally that model's own zero-slope floor plane (the solvers add one per model),
so that :math:`A^T\alpha^0 = \sum_p a_{j_p} = 0`; failing that, the point of the product with the
smallest :math:`\|A^T\alpha^0\|_\infty` (a small LP). Why one mixing weight ``s`` for all blocks
is sound: :math:`\alpha` and :math:`\alpha^0` both have every block summing to 1, so their convex
combination does too (the mix never moves weight between blocks), and by convexity of the norm
:math:`\|A^T\alpha'\|_\infty \le (1-s)\|A^T\alpha\|_\infty + s\|A^T\alpha^0\|_\infty`, so the same
formula for ``s`` reaches the target; per-block weights would not obey such a bound, because the
constraint couples the blocks through the sum :math:`\sum_p A_p^T\alpha_p`. Mixing block ``p``
toward its own floor costs :math:`s\,(b_p^T\alpha_p - b_{j_p})` of the bound, of the order of the
LP's feasibility error as for one model.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010. Appendix C.
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   CVWW 2012. Sec. 3.3.
"""
from __future__ import annotations

import math
import time
import weakref

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ._base import InnerSolution, InnerSolver, bundle_blocks, plane_values
from ._simplex import Blocks
from .level_master import BoxModelLP, highs_available
from ..regularizers import scaled_conjugate

__all__ = ["LPSimplex"]

_MARGIN = 1e-12  # relative margin kept inside the dual-feasible set


class LPSimplex(InnerSolver):
    r"""Master problem of the L1 norm by HiGHS, with dual multipliers repaired to feasibility.

    Notes
    -----
    Returns ``w = u - v`` from the LP primal (``conjugate_grad`` of the L1 norm carries no
    information), ``alpha`` the repaired LP multipliers (exactly on the simplex and with
    :math:`\|A^T\alpha\|_\infty \le \lambda(1 - 10^{-12})`), ``dual_value`` :math:`= b^T\alpha -
    \lambda\Omega^*(-A^T\alpha/\lambda) = b^T\alpha` (a valid lower bound), and ``gap`` the primal
    model value at ``w`` minus ``dual_value``.

    With ``bundle.n_blocks > 1`` the LP has one epigraph variable per model and ``alpha`` lies in
    the product of simplices (see the module docstring for the repair).

    Hot start (``hot_start=True``, the default, one model): the LP is kept alive across the
    calls of one run, in HiGHS's object model (:class:`~nsopt.inner.level_master.BoxModelLP`
    in ``x = (u, v) >= 0`` with cost :math:`\lambda`): the planes added since the last call
    become rows, dropped ones are deleted, and the dual simplex restarts from the last optimal
    basis instead of a solve from scratch through :func:`scipy.optimize.linprog` (a9a, L1
    master of 80 planes: 84 pivots, 8 ms, against 202 pivots, 31 ms, from scratch; fewer where
    the model moves less). The rows are matched to the bundle's planes by their offsets and
    slopes, in order (a bundle drops planes keeping the order of the rest); planes that were
    permuted or aggregated are deleted and added again. Several models, a
    missing HiGHS object model, or a hot solve that ends without an optimum fall back to
    ``linprog``. The certificate is the same either way: the repaired multipliers' dual value.

    ``warm`` and ``tol`` are not used: HiGHS solves to its own tolerances (1e-10 here).

    Raises ``ValueError`` when the master problem is unbounded below (no plane of the bundle has
    a slope of max-norm below ``lam``; with several models, no combination with one unit of
    weight per model): the loss must declare ``loss.lower_bound`` (a zero-slope plane, one per
    model) or the solver needs a box.

    References
    ----------
    .. [TVSL10] Teo et al., JMLR 2010, Appendix C.
    """

    name = "lp"
    families = ("lp",)

    def __init__(self, *, hot_start: bool = True):
        if not isinstance(hot_start, bool):
            raise TypeError(f"hot_start must be True or False, got {hot_start!r}")
        self.hot_start = hot_start
        # per bundle (one run's), its live LP; the bundle going away frees it
        self._models: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _solve(self, bundle, reg, lam, warm, tol, deadline=None):
        A = np.asarray(bundle.A, dtype=np.float64)
        b = np.asarray(bundle.b, dtype=np.float64)
        n, d = A.shape
        blocks = bundle_blocks(bundle)
        m = blocks.n_blocks
        target = lam * (1.0 - _MARGIN)
        anchor = _anchor(A, target, blocks)
        if anchor is None:
            raise ValueError(_unbounded_message(lam, A, m))
        hot = None
        if self.hot_start and m == 1 and d > 0 and highs_available():
            hot = self._hot_solve(bundle, A, b, lam, deadline)
        if hot is not None:
            w, alpha, nit = hot
            alpha = np.maximum(alpha, 0.0)
            alpha = blocks.normalize(alpha) if np.all(blocks.sums(alpha) > 0) else anchor
            return self._finish(bundle, reg, lam, A, b, w, alpha, anchor, target, blocks, nit)
        # variables x = (u, v, xi_1..xi_P): A u - A v - xi_{p(i)} <= -b
        c = np.concatenate((np.full(2 * d, lam), np.ones(m)))
        xi = sp.csr_matrix(-np.ones((n, 1))) if m == 1 else -blocks.indicator().tocsr()
        A_ub = sp.hstack([sp.csr_matrix(A), sp.csr_matrix(-A), xi], format="csr")
        bounds = [(0.0, None)] * (2 * d) + [(None, None)] * m
        options = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
        if deadline is not None:  # HiGHS stops at its time limit; the multipliers are repaired
            options["time_limit"] = max(deadline - time.perf_counter(), 1e-3)
        res = linprog(c, A_ub=A_ub, b_ub=-b, bounds=bounds, method="highs", options=options)
        if res.status == 3:  # pragma: no cover - excluded by the anchor above
            raise ValueError(_unbounded_message(lam, A, m))
        if res.x is None or res.ineqlin is None or res.ineqlin.marginals is None:
            if deadline is None:
                raise RuntimeError(f"HiGHS failed on the L1 master problem: {res.message}")
            # stopped at the deadline without a point: the anchor is feasible, its bound valid
            w, alpha = np.zeros(d), anchor
        else:
            w = res.x[:d] - res.x[d:2 * d]
            alpha = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
            alpha = blocks.normalize(alpha) if np.all(blocks.sums(alpha) > 0) else anchor
        return self._finish(bundle, reg, lam, A, b, w, alpha, anchor, target, blocks,
                            int(getattr(res, "nit", 0)))

    def _finish(self, bundle, reg, lam, A, b, w, alpha, anchor, target, blocks, nit):
        """The repaired multipliers, their dual value and the primal point's model gap."""
        alpha = _repair(A, alpha, anchor, target, blocks)
        a_bar = alpha @ A
        dual = float(alpha @ b) - scaled_conjugate(reg, a_bar, lam)
        if not math.isfinite(dual):
            raise ValueError(
                f"{type(reg).__name__}'s conjugate is infinite at the repaired LP multipliers: "
                "LPSimplex solves the master problem of the L1 norm only"
            )
        grad = plane_values(bundle, w)
        primal = float(blocks.maxima(grad).sum()) + lam * float(reg.value(w))
        return InnerSolution(alpha, dual, w, primal - dual, nit)

    def _hot_solve(self, bundle, A, b, lam, deadline):
        """``(w, multipliers, iterations)`` from the bundle's live LP, brought in line with
        its planes first; None when HiGHS gives no optimum (the caller solves afresh)."""
        n, d = A.shape
        model = self._models.get(bundle)
        if model is None or model.lam != lam or model.dim != d:
            model = _HotModel(d, lam)
            self._models[bundle] = model
        model.sync(A, b)
        left = None if deadline is None else deadline - time.perf_counter()
        out = model.lp.solve(left)
        if out is None:
            del self._models[bundle]   # a fresh model next time
            return None
        x, _, alpha = out
        return x[:d] - x[d:], alpha, model.lp.iterations


class _HotModel:
    r"""The L1 master LP of one bundle, alive across iterations: a
    :class:`~nsopt.inner.level_master.BoxModelLP` in :math:`x = (u, v) \ge 0` with cost
    :math:`\lambda` and the row :math:`[a_i, -a_i]` per plane, and a copy of the planes its
    rows hold (to match them with the bundle's)."""

    def __init__(self, d: int, lam: float):
        self.dim, self.lam = d, lam
        self.lp = BoxModelLP(np.zeros(2 * d), np.full(2 * d, np.inf), cost=np.full(2 * d, lam))
        self.A = np.zeros((0, d))
        self.b = np.zeros(0)

    def sync(self, A: np.ndarray, b: np.ndarray) -> None:
        """Make the rows the planes ``(A, b)``: the longest prefix of the bundle found, in
        order, among the rows is kept (a bundle drops planes keeping the order of the rest),
        the other rows are deleted and the remaining planes appended."""
        old_A, old_b = self.A, self.b
        keep, i = self._match(old_b, b, lambda j, k: True)   # by the offsets alone, then
        if i and not np.array_equal(old_A[keep], A[:i]):      # the slopes checked at once
            keep, i = self._match(old_b, b, lambda j, k: np.array_equal(old_A[j], A[k]))
        if not keep.all():
            self.lp.drop(~keep)
        for r in range(i, b.size):
            self.lp.add(np.concatenate((A[r], -A[r])), float(b[r]))
        self.A, self.b = A.copy(), b.copy()

    @staticmethod
    def _match(old_b, b, same):
        """Greedy in-order match of the planes ``b`` to the rows ``old_b`` (equal offsets and
        ``same(row, plane)``): the rows kept and the number of planes matched."""
        keep = np.zeros(old_b.size, dtype=bool)
        old, new = old_b.tolist(), b.tolist()
        j = i = 0
        while i < len(new):
            while j < len(old) and not (old[j] == new[i] and same(j, i)):
                j += 1
            if j == len(old):
                break
            keep[j] = True
            i, j = i + 1, j + 1
        return keep, i


def _anchor(A, target, blocks=None):
    """Multipliers on the simplex (on the product of simplices of ``blocks``) with
    ``||A^T alpha||_inf <= target`` as computed, or ``None``.

    The plane of smallest slope (the zero-slope plane of ``loss.lower_bound`` when the bundle has
    one; with several models, that of every block); failing that, the combination of smallest
    ``||A^T alpha||_inf`` (a small LP).
    """
    n, d = A.shape
    if blocks is None:
        blocks = Blocks.single(n)
    if d == 0:
        return blocks.argmax_vertex(np.zeros(n))
    slopes = np.abs(A).max(axis=1)
    if not blocks.multi:
        j = int(np.argmin(slopes))
        if slopes[j] <= target:
            return np.eye(1, n, j).ravel()
    else:
        vertex = blocks.argmax_vertex(-slopes)
        if float(np.abs(vertex @ A).max()) <= target:
            return vertex
    # min t  s.t.  -t <= A^T alpha <= t,  E^T alpha = 1 (one row per block),  alpha >= 0
    At = sp.csr_matrix(A.T)
    ones = sp.csr_matrix(-np.ones((d, 1)))
    if blocks.multi:
        A_eq = sp.hstack([blocks.indicator().T, sp.csr_matrix((blocks.n_blocks, 1))], format="csr")
        b_eq = np.ones(blocks.n_blocks)
    else:
        A_eq = np.concatenate((np.ones(n), [0.0]))[None, :]
        b_eq = [1.0]
    res = linprog(np.concatenate((np.zeros(n), [1.0])),
                  A_ub=sp.vstack([sp.hstack([At, ones]), sp.hstack([-At, ones])], format="csr"),
                  b_ub=np.zeros(2 * d), A_eq=A_eq, b_eq=b_eq,
                  bounds=[(0.0, None)] * n + [(None, None)], method="highs")
    if res.x is None:  # pragma: no cover
        return None
    alpha = np.maximum(res.x[:n], 0.0)
    if not np.all(blocks.sums(alpha) > 0):  # pragma: no cover - HiGHS keeps the equalities
        return None
    alpha = blocks.normalize(alpha)
    return alpha if float(np.abs(alpha @ A).max()) <= target else None


def _repair(A, alpha, anchor, target, blocks=None):
    """Mix ``alpha`` with ``anchor`` until ``||A^T alpha||_inf <= target`` (checked as computed).

    Both must lie on the simplex (on the product of simplices of ``blocks``); so does every mix,
    renormalised block by block against rounding.
    """
    if blocks is None:
        blocks = Blocks.single(alpha.size)
    if A.shape[1] == 0:
        return alpha
    a0 = float(np.abs(anchor @ A).max())
    va = float(np.abs(alpha @ A).max())
    s = 0.0
    for _ in range(60):
        mixed = blocks.normalize((1.0 - s) * alpha + s * anchor)
        if float(np.abs(mixed @ A).max()) <= target:
            return mixed
        # (1 - s) ||A^T alpha||_inf + s ||A^T anchor||_inf <= target, plus slack for rounding
        s_new = (va - target) / (va - a0) if va > a0 else 1.0
        s = min(1.0, max(s_new, 2.0 * s, 1e-16) * (1.0 + 1e-9))
    return anchor  # pragma: no cover - s reaches 1 first


def _unbounded_message(lam: float, A, n_blocks: int = 1) -> str:
    smallest = float(np.abs(A).max(axis=1).min())
    if n_blocks > 1:
        return (
            "the L1 master problem of the bundle's "
            f"{n_blocks} cutting-plane models is unbounded below (or has no strictly feasible "
            "dual): no choice of one convex combination of planes per model has a summed slope "
            f"with ||a||_inf < lam = {lam!r}, so lam*||w||_1 + sum_p max_(i in p) <a_i, w> + b_i "
            "has no minimum. Each model needs a lower bound (its zero-slope floor plane, "
            "bundle.add_fixed(0, floor, block=p)) or the solver needs a box on w"
        )
    return (
        "the L1 master problem is unbounded below (or has no strictly feasible dual): every plane "
        f"has a slope with ||a||_inf >= lam = {lam!r} (smallest {smallest!r}), so lam*||w||_1 + "
        "<a, w> has no minimum. The loss must declare a lower bound (loss.lower_bound, added to "
        "the bundle as the zero-slope plane (0, lower_bound)) or the solver needs a box on w"
    )
