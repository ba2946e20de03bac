r"""Grade anyone's answer: a checkable certificate for a point that came from anywhere.

:func:`certify` takes a :class:`~nsopt.RegularizedRisk` and a point ``w`` (a scikit-learn
``coef_``, a cvxpy solution, a checkpoint, another library's answer) and returns a
:class:`~nsopt.Certificate` with ``upper = J(w)``, a proven ``lower`` bound on the optimum
and ``gap = upper - lower``, without running a solver: the bound comes from dual points and
a few oracle calls, and :meth:`~nsopt.Certificate.check` verifies it from the problem's own
data.

Converting another library's parameters (scikit-learn's ``C``, an intercept) is not done
here: build the matching problem (``docs/interop.md``, "Grade anyone's answer").
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp

from ._validation import check_vector
from .certificate import Certificate, DualPoint, L1DualCertifier, _argmax_concave, _plane_bound
from .problem import RegularizedRisk

__all__ = ["certify"]


def certify(problem, w, *, steps: int | None = None, kink_width: float = 0.05,
            kink_iter: int = 500) -> Certificate:
    r"""A proven bracket :math:`\mathrm{lower} \le J^* \le J(w)` for any point ``w``.

    Every lower bound here is weak duality. For :math:`J(w) = \lambda\Omega(w) + R(w)` and a
    plane :math:`R(v) \ge \langle a, v\rangle + b` of the risk,

    .. math:: J^* \ge \min_v \lambda\Omega(v) + \langle a, v\rangle + b
                   = b - \lambda\,\Omega^*(-a/\lambda).

    **Margin losses** (``loss.dual_upper`` set: hinge, squared hinge, logistic) have a plane
    for every dual point :math:`t \in [0, u]^m` (``loss.dual_plane``), which gives the Fenchel
    dual bound

    .. math:: D(t) = -\sum_i c_i\, l^*(-y_i t_i, y_i)
                     - \lambda\,\Omega^*\!\big(X^T(c\circ y\circ t)/\lambda\big),

    concave in :math:`t`, with :math:`D(t) \le J^* \le J(w)` for every :math:`t`. The search
    starts at the dual point induced by ``w`` (:math:`t_i = -y_i\, l'(\langle x_i, w\rangle,
    y_i)`, the subgradient's; at the optimum of a smooth loss it is the optimal dual point) and
    improves it by cheap steps, keeping the best :math:`t` met:

    1. *Kinks* (losses with kinks, e.g. the hinge, whose dual point jumps from 0 to 1 at the
       margin, so that the :math:`t` of a near-optimal ``w`` is far from the optimal one): the
       examples whose score lies within ``kink_width`` of a kink get their :math:`t_i` freed
       and :math:`D` is maximised over them (the others fixed) by L-BFGS-B (scipy), at most
       ``kink_iter`` iterations, each touching only those rows of X.
    2. *Scaling*: the best :math:`s` in :math:`t \to s\,t` (a concave 1-D maximisation;
       :math:`a` is linear in :math:`t`, so no data pass).
    3. ``steps`` times: the primal point of :math:`t`, :math:`v = \nabla\Omega^*(-a/\lambda)`
       (the dual connection), its own dual point :math:`t'` (one oracle call), and the best
       point of the segment :math:`[t, t']` (concave 1-D, no data pass).

    With the L1 regularizer :math:`\Omega^*` is the indicator of
    :math:`\|\cdot\|_\infty \le 1`, so :math:`D(t)` is finite only when
    :math:`\|a(t)\|_\infty \le \lambda`: the dual point of ``w`` is corrected into that box by
    :class:`~nsopt.certificate.L1DualCertifier` (Newton-type rounds, then the best scaling);
    for a loss with a linear conjugate (the hinge) the dual variables of the examples within
    ``kink_width`` of the kink are then re-optimised exactly: :math:`D` is linear there and the
    box a linear constraint, so it is a linear program (scipy's HiGHS) in those variables (from
    ``w``'s own dual point and from the corrected one); the planes below are tried too, and the best bound is kept. Evidence: the dual point (:class:`~nsopt.certificate.DualPoint`), source ``"dual-point"``.

    **Other losses** (least absolute deviation, multiclass, ranking, ...): the subgradient
    plane at ``w``, the loss's floor plane ``R >= loss.lower_bound`` and ``steps`` more planes
    at the minimisers of the cutting-plane model (one oracle call each); the best convex
    combination of those planes is found by the master-problem solver of
    :mod:`nsopt.inner`. Evidence: the query points and their multipliers
    (:class:`~nsopt.certificate.QueryPoints`), source ``"planes"``. With one plane and L2 the
    bound is :math:`J(w) - \|g\|^2/(2\lambda)` for the subgradient :math:`g` of J at ``w``:
    exact at an optimum where the loss is differentiable.

    ``upper`` is always :math:`J(w)`, the value of the point you gave, even when a point met on
    the way is better.

    Parameters
    ----------
    problem : RegularizedRisk
        The problem ``w`` is an answer to (with the other library's parameters converted:
        ``docs/interop.md``).
    w : array_like, shape (problem.dim,)
        The point to grade (flattened in C order for a matrix of weights).
    steps : int >= 0, optional
        Oracle calls beyond the one at ``w``: step 3 above (default 2), or the planes of other
        losses (default 10: measured at a 1e-10-optimal point, least absolute deviation and
        the multiclass hinge prove relative gaps 1e-2 / 5e-3 with 2 planes, 1.4e-3 / 7e-4
        with 10, 6e-5 / 5e-6 with 20).
    kink_width : float >= 0, default 0.05
        Distance of a score to a kink within which its dual variable is re-optimised (step 1);
        0 turns step 1 off.
    kink_iter : int >= 0, default 500
        Iteration cap of step 1.

    Returns
    -------
    Certificate
        ``x = w``, ``upper = J(w)``, ``lower`` (``-inf`` with source ``"none"`` when no finite
        bound was found), ``gap``; ``certificate.check(problem)`` verifies it.

    Raises
    ------
    TypeError
        If ``problem`` is not a :class:`~nsopt.RegularizedRisk` (a bare oracle's planes bound
        nothing over the whole space: run a solver with ``radius`` or ``bounds`` instead).
    ValueError
        If ``w`` is not a finite vector of length ``problem.dim``, or an option is out of range.

    Notes
    -----
    Cost, in data passes (one pass: :math:`Xv` or :math:`X^T g`, 0.76 ms on a9a): margin
    losses about ``4 + 2 * steps`` plus step 1, whose iterations each touch the ``|K|`` rows
    near a kink (two products with them, ``2 |K| / m`` passes) plus L-BFGS-B's own work.
    Measured on a9a (hinge, L2, C = 1, one thread; a data pass 0.58 ms) for LinearSVC's
    answers at tol 1e-1 and 1e-4 (fitted in 160 and 230 ms): ``certify`` took about 220 ms
    (some 380 passes, mostly step 1's 500 L-BFGS-B iterations), about LinearSVC's own time,
    and proved relative gaps 8.5e-5 and 1.2e-6 for true errors 8.2e-5 and 1.1e-7.
    ``kink_iter=100``: 70 ms, gaps 1.9e-4 and 1.3e-4; ``kink_iter=1000, kink_width=0.1``:
    480 ms, gaps equal to the true errors (8.2e-5, 1.1e-7). L1: about ``2 + 2 * rounds``
    passes (10 rounds) and a small dense system per round, for the hinge a linear program in
    the ``|K|`` variables near the kink, plus the planes below; other losses
    ``2 * (1 + steps)`` passes and ``steps + 1`` master problems of at most ``steps + 2``
    planes.
    :meth:`~nsopt.Certificate.check` costs about one data pass more (a fingerprint of the
    data and :math:`J(w)`).

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
    >>> cert = nsopt.certify(J, np.zeros(20))          # grade the zero vector
    >>> bool(cert.lower <= cert.upper == J.value(np.zeros(20)))
    True
    >>> cert.check(J) == cert.lower
    True
    """
    if not isinstance(problem, RegularizedRisk):
        raise TypeError(
            f"certify needs a RegularizedRisk(loss, reg, lam), got {type(problem).__name__}; "
            "a bare oracle's planes bound nothing over the whole space: run "
            "nsopt.minimize(oracle, ..., radius=... or bounds=...) for a certificate")
    w = check_vector(w, problem.dim, "w", copy=True)
    margin = getattr(problem.loss, "dual_upper", None) is not None
    steps = (2 if margin else 10) if steps is None else _count(steps, "steps")
    kink_iter = _count(kink_iter, "kink_iter")
    if (not isinstance(kink_width, numbers.Real) or isinstance(kink_width, bool)
            or not 0.0 <= kink_width < math.inf):
        raise ValueError(f"kink_width must be a finite number >= 0, got {kink_width!r}")

    loss = problem.loss
    ev = problem._evaluate(w)
    upper = float(ev.fun)
    if margin:
        source = "dual-point"
        if getattr(problem, "fit_intercept", False) and problem.base_reg.inner == "lp":
            # L1 with an intercept: the corrected dual point has no intercept's equality;
            # the planes (with the proven box on the intercept) prove the bound
            (lower, evidence), source = _plane_steps(problem, ev, steps), "planes"
        elif L1DualCertifier.applies(problem):
            lower, evidence = L1DualCertifier(problem).bound(w)
            if kink_width > 0:
                starts = [s for s in (ev.loss_dual, getattr(evidence, "t", None)) if s is not None]
                for t in starts:  # w's own dual point (exact away from the kinks), corrected
                    lp = _l1_kink_lp(problem, w, t, float(kink_width))
                    if lp[0] > lower:
                        lower, evidence = lp
            planes = _plane_steps(problem, ev, steps)
            if planes[0] > lower:
                (lower, evidence), source = planes, "planes"
        else:
            t = ev.loss_dual if ev.loss_dual is not None else loss.dual_variables(w)
            lower, evidence = _DualSearch(problem).run(w, t, steps, float(kink_width), kink_iter)
    else:
        lower, evidence = _plane_steps(problem, ev, steps)
        source = "planes"
    if evidence is None or not math.isfinite(lower):
        return Certificate.from_evidence(problem, w, upper, -math.inf, "none", None)
    return Certificate.from_evidence(problem, w, upper, min(lower, upper), source, evidence)


def _count(value, name: str) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


class _DualSearch:
    r"""The Fenchel dual bound :math:`D(t)` of a margin loss and its cheap improvements.

    A candidate is kept as ``(D, t, a)`` with ``a = a(t)``: since :math:`a` is linear in
    :math:`t`, the bound along a segment or a scaling costs O(m + d) per evaluation and no
    data pass."""

    def __init__(self, problem):
        self.problem = problem
        self.loss, self.reg, self.lam = problem.loss, problem.reg, problem.lam
        self.upper_t = float(self.loss.dual_upper)
        self.floor = 0.0 if self.loss.lower_bound == 0.0 else None
        self.best = (-math.inf, None, None)

    def value(self, t, a) -> float:
        """:math:`D(t)` given :math:`a = a(t)`: O(m) for the conjugate terms, O(d) for
        :math:`\\Omega^*`."""
        loss = self.loss
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            b = -float(loss.c @ loss.conjugate_terms(t))
            bound = _plane_bound(self.problem, a, b, self.floor)[0]
        return bound if math.isfinite(bound) else -math.inf

    def offer(self, t, a) -> float:
        value = self.value(t, a)
        if value > self.best[0]:
            self.best = (value, t, a)
        return value

    def run(self, w, t, steps, kink_width, kink_iter):
        loss = self.loss
        t = np.clip(np.asarray(t, dtype=np.float64), 0.0, self.upper_t)
        a = loss.dual_plane(t)[0]
        self.offer(t, a)
        if kink_width > 0 and kink_iter > 0 and loss.kinks() is not None:
            self.offer(*self._free_kinks(w, t, a, kink_width, kink_iter))
        self.offer(*self._scaled(*self.best[1:]))
        for _ in range(steps):
            _, t, a = self.best
            v = self.reg.conjugate_grad(-a / self.lam)
            if not np.all(np.isfinite(v)):
                break
            t2 = np.clip(loss.dual_variables(v), 0.0, self.upper_t)
            a2 = loss.dual_plane(t2)[0]
            self.offer(*self._segment(t, a, t2, a2))
        value, t, _ = self.best
        if not math.isfinite(value):
            return -math.inf, None
        # the bound exactly as Certificate.check recomputes it (one data pass)
        evidence = DualPoint(t)
        bound, a, b = evidence.verify(self.problem)[:3]
        return float(bound), DualPoint(t, plane=(a, b))

    def _scaled(self, t, a):
        """The best :math:`s\\,t`, :math:`0 \\le s \\le` the largest step inside the box."""
        tmax = float(np.max(t, initial=0.0))
        if tmax <= 0.0:
            return t, a
        hi = self.upper_t / tmax if math.isfinite(self.upper_t) else 4.0
        s = _argmax_concave(lambda s: self.value(s * t, s * a), hi)
        return np.clip(s * t, 0.0, self.upper_t), s * a

    def _segment(self, t, a, t2, a2):
        """The best point of the segment from ``(t, a)`` to ``(t2, a2)``."""
        eta = _argmax_concave(lambda e: self.value(t + e * (t2 - t), a + e * (a2 - a)), 1.0)
        return np.clip(t + eta * (t2 - t), 0.0, self.upper_t), a + eta * (a2 - a)

    def _free_kinks(self, w, t, a, width, max_iter):
        r"""Maximise :math:`D` over the dual variables of the examples whose score lies within
        ``width`` of a kink, the others fixed (L-BFGS-B on a box). With :math:`a = u - X_K^T
        (c\circ y\circ t)_K` and :math:`v(t) = \nabla\Omega^*(-a/\lambda)`, the gradient is
        :math:`\partial D/\partial t_i = -c_i\, \partial_t l^*_i - c_i y_i \langle x_i, v\rangle`
        (the first term by a central difference of ``conjugate_terms``, exact for the hinge's
        linear and the squared hinge's quadratic conjugate)."""
        from scipy.optimize import minimize

        loss, lam = self.loss, self.lam
        z = loss.data.dot(w)
        kinks = np.asarray(loss.kinks(), dtype=np.float64)
        dist = np.abs(z[:, None] - kinks.reshape(z.size, -1)).min(axis=1)
        K = np.flatnonzero(dist <= width)
        if K.size == 0:
            return t, a
        XK = _data_rows(loss.data, K)
        cyK = (loss.c * loss.y)[K]
        cK = loss.c[K]
        t0 = t[K].copy()
        u = a + np.asarray(XK.T @ (cyK * t0)).reshape(-1)  # a without the rows K
        c_rest = float(loss.c @ loss.conjugate_terms(t)) - float(cK @ loss.conjugate_terms(t0))
        hi = self.upper_t if math.isfinite(self.upper_t) else None
        h = 1e-6
        probe = np.linspace(0.0, min(self.upper_t, 1.0), 7)[np.arange(K.size) % 7]
        elementwise = np.array_equal(_conj_at(loss, probe, K, True), _conj_at(loss, probe, K, False))

        def negative_dual(tK):
            aK = u - np.asarray(XK.T @ (cyK * tK)).reshape(-1)
            conj = _conj_at(loss, tK, K, elementwise)
            with np.errstate(over="ignore", invalid="ignore"):
                value = -(c_rest + float(cK @ conj)) - _scaled_conj(self, aK)
                v = self.reg.conjugate_grad(-aK / lam)
            slope = (_conj_at(loss, tK + h, K, elementwise)
                     - _conj_at(loss, tK - h, K, elementwise)) / (2 * h)
            grad = -cK * slope - cyK * np.asarray(XK @ v).reshape(-1)
            if not (math.isfinite(value) and np.all(np.isfinite(grad))):
                return math.inf, np.zeros_like(tK)
            return -value / scale, -grad / scale

        # D is a mean over examples: measured in units of one example's weight, so that
        # L-BFGS-B's stopping tests (absolute on the gradient) do not stop it at the start
        scale = float(np.max(cK, initial=0.0)) or 1.0

        res = minimize(negative_dual, t0, jac=True, method="L-BFGS-B",
                       bounds=[(0.0, hi)] * K.size,
                       options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-12})
        t_new = t.copy()
        t_new[K] = np.clip(res.x, 0.0, self.upper_t)
        return t_new, u - np.asarray(XK.T @ (cyK * t_new[K])).reshape(-1)


def _data_rows(data, K):
    """The rows ``K`` of the loss's data matrix as the loss sees it: with an intercept
    (``fit_intercept=True``) the stored ``X`` lacks the column of ones the scores add."""
    XK = data.X[K]
    if data.shape[1] > XK.shape[1]:
        ones = np.ones((len(K), data.shape[1] - XK.shape[1]))
        XK = sp.hstack([XK, ones]) if sp.issparse(XK) else np.hstack([np.asarray(XK), ones])
    return XK.tocsr() if sp.issparse(XK) else np.ascontiguousarray(XK)


def _scaled_conj(search, a) -> float:
    from .regularizers import scaled_conjugate

    return scaled_conjugate(search.reg, a, search.lam)


def _conj_at(loss, tK, K, elementwise):
    """``conjugate_terms`` of the examples ``K`` at ``tK``: on ``tK`` alone when the loss's
    conjugate depends on ``t`` only (hinge, squared hinge, logistic), else through the full
    vector (a conjugate that reads the labels)."""
    if elementwise:
        return np.asarray(loss.conjugate_terms(tK))
    full = np.zeros(loss.m)
    full[K] = tK
    return np.asarray(loss.conjugate_terms(full))[K]


def _l1_kink_lp(problem, w, t, width):
    r"""For a loss with a linear conjugate (:math:`l^*(-y t) = \kappa t`, the hinge's
    :math:`\kappa = -1`) and L1: maximise :math:`D(t) = -\kappa\sum_i c_i t_i` over the
    :math:`t_i` of the examples within ``width`` of a kink, the others fixed, subject to
    :math:`\|a(t)\|_\infty \le \lambda` and the box: a linear program (HiGHS). From the
    L1 dual certifier's ``t`` it is feasible; from ``w``'s own it may not be (then nothing is
    returned). Returns ``(lower, DualPoint)`` or ``(-inf, None)``."""
    from scipy.optimize import linprog

    loss, lam = problem.loss, problem.lam
    upper = float(loss.dual_upper)
    kinks = loss.kinks()
    if kinks is None or not math.isfinite(upper):
        return -math.inf, None
    probe = np.array([0.0, 0.5 * upper, upper])
    conj = np.asarray(loss.conjugate_terms(probe), dtype=np.float64)
    kappa = (conj[2] - conj[0]) / upper
    if conj[1] != conj[0] + 0.5 * (conj[2] - conj[0]):  # not linear: no LP
        return -math.inf, None
    z = loss.data.dot(w)
    dist = np.abs(z[:, None] - np.asarray(kinks, dtype=np.float64).reshape(z.size, -1)).min(axis=1)
    K = np.flatnonzero(dist <= width)
    if K.size == 0:
        return -math.inf, None
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, upper)
    XK = loss.data.X[K]
    XK = sp.csr_matrix(XK) if sp.issparse(XK) else sp.csr_matrix(np.asarray(XK))
    cyK = (loss.c * loss.y)[K]
    a = loss.dual_plane(t)[0]
    u = a + np.asarray(XK.T @ (cyK * t[K])).reshape(-1)      # a without the rows K
    B = (XK.multiply(cyK[:, None])).T.tocsr()                # a = u - B t_K
    rows = np.flatnonzero(np.diff(B.indptr) > 0)             # coordinates the rows K touch
    if np.any(np.abs(np.delete(u, rows)) > lam):
        return -math.inf, None
    Br = B[rows]
    # a little inside the box, so that rounding of the recomputed slope stays inside
    margin = lam * (1.0 - 1e-9)
    res = linprog(kappa * loss.c[K], A_ub=sp.vstack([Br, -Br]).tocsr(),
                  b_ub=np.concatenate([u[rows] + margin, margin - u[rows]]),
                  bounds=(0.0, upper), method="highs")
    if res.status != 0 or res.x is None:
        return -math.inf, None
    t_new = t.copy()
    t_new[K] = np.clip(res.x, 0.0, upper)
    evidence = DualPoint(t_new)
    try:
        bound, a_new, b_new = evidence.verify(problem)[:3]
    except Exception:  # rounding put it outside the box: keep the certifier's point
        return -math.inf, None
    if not math.isfinite(bound):
        return -math.inf, None
    return float(bound), DualPoint(t_new, plane=(a_new, b_new))


def _plane_steps(problem, ev, steps):
    """The best convex combination of the planes at ``w``, the floor and ``steps`` model
    minimisers (a few cutting-plane iterations from ``w``): ``(lower, QueryPoints)``."""
    from .bundle import PlaneBundle
    from .inner import select

    loss, reg, lam = problem.loss, problem.reg, problem.lam
    bundle = PlaneBundle(problem.dim, metric=reg.gram_metric, evidence="points")
    if math.isfinite(loss.lower_bound):
        bundle.add_floor(float(loss.lower_bound))
    bundle.add_at(ev.w, ev.loss_value, ev.loss_subgradient)
    inner = select(reg, "auto")
    best, alpha = (-math.inf, None), None
    for k in range(steps + 1):
        try:
            sol = inner.solve(bundle, reg, lam, warm=alpha)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            break  # e.g. an unbounded model (L1 without a floor): keep what was proven
        alpha = sol.alpha
        value, _, _, evidence = bundle.certify(reg, lam, alpha)
        if evidence is not None and value > best[0]:
            best = (float(value), evidence)
        if k == steps or not np.all(np.isfinite(sol.w)):
            break
        v = np.array(sol.w, dtype=np.float64)
        ev_k = problem._evaluate(v)
        bundle.add_at(v, ev_k.loss_value, ev_k.loss_subgradient)
    return best
