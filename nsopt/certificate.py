r"""Certificates: proven lower bounds, shared by every solver, checkable by anyone.

For :math:`J(w) = \lambda\Omega(w) + R(w)`, every oracle call at :math:`w_i` gives a cutting
plane :math:`R(v) \ge \langle a_i, v\rangle + b_i`. For multipliers :math:`\alpha` on the simplex
the aggregate plane :math:`(\bar a, \bar b) = \sum_i \alpha_i (a_i, b_i)` is again below
:math:`R`, so

.. math::  J^* \ge \min_w \lambda\Omega(w) + \langle \bar a, w\rangle + \bar b
              = \bar b - \lambda\,\Omega^*(-\bar a/\lambda),

which is the dual of the cutting-plane master problem ([TVSL10]_ Thm. 2).

A :class:`Certificate` does not carry the plane as its proof (anyone can write a plane): it
carries **evidence** from which :meth:`Certificate.check` rebuilds the plane from the problem's
own data or oracle:

* :class:`DualPoint` (margin losses: hinge, squared hinge, logistic): a dual vector :math:`t`,
  one entry per example in ``[0, loss.dual_upper]``; the plane is ``loss.dual_plane(t)``
  (Fenchel-Young per example, one data pass). The planes of dual points aggregate to the plane
  of the aggregated point (:math:`a` is linear in :math:`t`, :math:`b` concave), so every
  plane a margin loss's oracle returns carries its :math:`t` (``Evaluation.loss_dual``).
* :class:`QueryPoints` (any loss): query points :math:`w_i` and multipliers on the simplex
  (one simplex per cutting-plane model) plus the loss's floor plane; ``check`` calls the loss
  at every point (k oracle calls) and aggregates the rebuilt planes.
* :class:`SaddlePoint` (:class:`~nsopt.solvers.ExcessiveGap` on non-margin saddle losses such
  as the multiclass hinge): :math:`\alpha \in Q`, plane :math:`(-Z^T\alpha, \langle b, \alpha\rangle)`.

The certificate also holds the point ``x`` at which ``upper`` was attained and a fingerprint of
the problem (:func:`fingerprint`), so a certificate moved to another problem is rejected.

:class:`PlaneCertifier` listens to the oracle calls of any solver on a ``RegularizedRisk``,
keeps its own :class:`~nsopt.bundle.PlaneBundle` (bounded by ``max_planes``) and solves the
master dual on demand, so solvers that are not cutting-plane methods (quasi-Newton, trust
region) report a true gap with the same code.

:class:`L1DualCertifier` adds, for every solver on an L1-regularized margin loss, the bound of a
Fenchel dual point of the best iterate made feasible by a Newton-type correction: there the
plane bounds lag the objective by orders of magnitude (see its docstring).

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010.
"""
from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .oracle import frozen
from .regularizers import scaled_conjugate

__all__ = ["Certificate", "PlaneCertifier", "L1DualCertifier", "CertificateError", "Evidence",
           "DualPoint", "QueryPoints", "SaddlePoint", "fingerprint"]

#: relative rounding allowed between a claimed and a recomputed value
RTOL = 1e-9


class CertificateError(AssertionError):
    """A certificate's evidence does not support its claimed lower bound."""


# ----------------------------------------------------------------------------------------
# fingerprints
# ----------------------------------------------------------------------------------------
def _feed(h, value, depth: int = 0) -> None:
    from .losses._kernels import DataMatrix

    if isinstance(value, DataMatrix):
        value = value.X
    if value is None or isinstance(value, (bool, numbers.Number, str, np.generic)):
        h.update(repr(value).encode()); return
    if isinstance(value, np.ndarray):
        h.update(f"nd{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes()); return
    if sp.issparse(value):
        X = value.tocsr()
        h.update(f"sp{X.shape}".encode())
        for arr in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(arr).tobytes())
        return
    if isinstance(value, (tuple, list)) and len(value) <= 64 and depth < 2:
        h.update(f"seq{len(value)}".encode())
        for v in value:
            _feed(h, v, depth + 1)
        return
    h.update(type(value).__qualname__.encode())
    if depth < 2 and hasattr(value, "__dict__"):
        for name in sorted(vars(value)):
            if not name.startswith("_"):
                h.update(name.encode())
                _feed(h, vars(value)[name], depth + 1)


def fingerprint(problem) -> str:
    """A digest of what the optimum depends on: ``lam``, the regularizer's and the loss's class
    and public parameters, and the loss's data (blake2b over X's arrays, y, weights). Cost: one
    pass over the data's bytes (about 5 ms for a9a)."""
    h = hashlib.blake2b(digest_size=16)
    _feed(h, type(problem).__qualname__)
    _feed(h, float(getattr(problem, "lam", math.nan)))
    _feed(h, getattr(problem, "reg", None), 1)
    _feed(h, getattr(problem, "loss", problem), 1)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------
# evidence
# ----------------------------------------------------------------------------------------
def _fail(msg):
    raise CertificateError(msg)


def _finite_array(x, name, shape=None):
    try:
        x = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        _fail(f"{name} is not a numeric array")
    if shape is not None and x.shape != shape:
        _fail(f"{name} has shape {x.shape}, expected {shape}")
    if not np.all(np.isfinite(x)):
        _fail(f"{name} has non-finite entries (NaN or inf)")
    return x


def _plane_bound(problem, a, b, floor=None):
    r""":math:`b - \lambda\Omega^*(-a/\lambda)`. If the conjugate is infinite (an indicator, L1)
    only by rounding, the plane mixed with the floor plane ``(0, floor)`` by ``1 - tau``
    (``tau < 1`` just enough) is used: again a plane of R. Returns ``(bound, b, conjugate term)``."""
    lam = problem.lam
    with np.errstate(over="ignore", invalid="ignore"):
        conj = scaled_conjugate(problem.reg, a, lam)
    if math.isinf(conj) and floor is not None and math.isfinite(floor):
        amax = float(np.max(np.abs(a), initial=0.0))
        if amax <= lam * (1 + 1e-7):
            tau = min(1.0, lam / amax) * (1 - 1e-12)
            a, b = tau * a, tau * b + (1 - tau) * floor
            with np.errstate(over="ignore", invalid="ignore"):
                conj = scaled_conjugate(problem.reg, a, lam)
    return b - conj, b, conj


class Evidence:
    """Base of the evidence kinds. ``plane`` is the solver's aggregate ``(a_bar, b_bar)``,
    cached for speed and display, never trusted by :meth:`Certificate.check`."""

    kind = "none"
    plane: tuple | None = None

    def verify(self, problem):  # pragma: no cover - abstract
        """``(bound, a, b, scale, seen)``: the bound rebuilt from the problem, the plane,
        the magnitude of its terms (for rounding) and the J values met on the way."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class DualPoint(Evidence):
    r"""A Fenchel dual point of a margin loss: :math:`t \in [0, u]^m` (``u = loss.dual_upper``).

    Check: one data pass, :math:`(a, b) =` ``loss.dual_plane(t)`` :math:`= (-X^T(c\circ y\circ
    t), -\sum_i c_i l^*(-y_i t_i, y_i))`, bound :math:`b - \lambda\Omega^*(-a/\lambda)`."""

    t: np.ndarray
    plane: tuple | None = field(default=None, repr=False)
    kind = "dual-point"

    def verify(self, problem):
        loss = problem.loss
        upper = getattr(loss, "dual_upper", None)
        if upper is None:
            _fail(f"dual-point evidence needs a margin loss with a dual (loss.dual_upper); "
                  f"{type(loss).__name__} has none")
        t = _finite_array(self.t, "the dual point t", (loss.m,))
        if np.any(t < 0) or np.any(t > upper * (1 + 1e-12)):
            _fail(f"the dual point t leaves the box [0, {upper}] (min {t.min()!r}, max {t.max()!r})")
        t = np.clip(t, 0.0, upper)
        a, b = loss.dual_plane(t)
        floor = 0.0 if loss.lower_bound == 0.0 else None  # t = 0 is the floor plane (0, 0)
        bound, b2, conj = _plane_bound(problem, a, b, floor)
        return bound, a, b, max(abs(b), abs(conj)), []


@dataclass(frozen=True, eq=False)
class QueryPoints(Evidence):
    r"""Query points and multipliers: the plane :math:`\sum_{i,p} W_{ip}(a_{ip}, b_{ip}) +
    \sum_p f_p (0, \ell_p)` with :math:`(a_{ip}, b_{ip})` the plane of the loss part
    :math:`R_p` at ``points[i]`` (the whole loss when ``P = 1``) and :math:`\ell` the loss's
    floor (``loss.lower_bound``; 0 per part when ``P > 1``).

    ``weights`` (k x P) and ``floor`` (P) must be finite, ``>= 0`` and sum to 1 per column (to
    1e-9). Check: k oracle calls of the loss (``group_value_and_subgradients`` when P > 1)."""

    points: tuple
    weights: np.ndarray
    floor: np.ndarray
    plane: tuple | None = field(default=None, repr=False)
    kind = "query-points"

    def verify(self, problem):
        loss, lam, d = problem.loss, problem.lam, problem.dim
        W = np.asarray(self.weights, dtype=np.float64)
        if W.ndim != 2:
            _fail(f"the multipliers must be a (k, P) array, got shape {W.shape}")
        k, P = W.shape
        W = _finite_array(W, "the multipliers", (k, P))
        f = _finite_array(self.floor, "the floor multipliers", (P,))
        if len(self.points) != k:
            _fail(f"{len(self.points)} query points but {k} rows of multipliers")
        if P < 1 or np.any(W < 0) or np.any(f < 0):
            _fail("the multipliers must be >= 0")
        sums = W.sum(axis=0) + f
        if not np.all(np.abs(sums - 1.0) <= 1e-9):
            _fail(f"the multipliers are off the simplex: they sum to {sums.tolist()} (must be 1)")
        W, f = W / sums, f / sums
        if P == 1:
            floor_value = float(loss.lower_bound)
        else:
            if getattr(loss, "lower_bound", None) != 0.0 or not hasattr(loss, "group_value_and_subgradients"):
                _fail("several models need a loss with floor 0 that splits into groups")
            floor_value = 0.0
        if np.any(f > 0) and not math.isfinite(floor_value):
            _fail("the floor plane is used but the loss has no finite lower bound")
        a, b, scale, seen = np.zeros(d), 0.0, 0.0, []
        for i, w in enumerate(self.points):
            w = _finite_array(w, f"query point {i}", (d,))
            if not np.any(W[i]):
                continue
            if P == 1:
                r, g = loss.value_and_subgradient(w)
                values, grads = np.array([r]), np.asarray(g)[None, :]
            else:
                values, grads = loss.group_value_and_subgradients(w, P)
            for p in np.flatnonzero(W[i]):
                bp = float(values[p]) - float(grads[p] @ w)
                a += W[i, p] * grads[p]
                b += W[i, p] * bp
                scale = max(scale, abs(bp), abs(float(values[p])))
            seen.append(lam * float(problem.reg.value(w)) + float(np.sum(values)))
        b += float(f.sum()) * floor_value if np.any(f > 0) else 0.0
        total_floor = floor_value * P if P > 1 else floor_value
        bound, _, conj = _plane_bound(problem, a, b, total_floor)
        return bound, a, b, max(scale, abs(conj)), seen


@dataclass(frozen=True, eq=False)
class SaddlePoint(Evidence):
    r"""A dual point :math:`\alpha \in Q` of a loss in saddle form :math:`R(w) = \max_{\alpha\in
    Q}\langle\alpha, b - Zw\rangle` ([SZV09]_, :meth:`loss.saddle_form`):
    the plane :math:`(-Z^T\alpha, \langle b, \alpha\rangle)`; check: one data pass."""

    alpha: np.ndarray
    plane: tuple | None = field(default=None, repr=False)
    kind = "saddle-point"

    def verify(self, problem):
        from .saddle import saddle_form

        form = saddle_form(problem.loss)
        if form is None:
            _fail(f"saddle-point evidence needs a loss with a saddle form; "
                  f"{type(problem.loss).__name__} has none")
        alpha = _finite_array(self.alpha, "the saddle dual point", np.shape(form.center))
        proj = form.project(alpha)
        if not np.max(np.abs(proj - alpha), initial=0.0) <= 1e-9 * max(1.0, float(np.max(np.abs(alpha), initial=0.0))):
            _fail("the saddle dual point is outside its feasible set Q")
        a = -form.rmatvec(proj)
        b = float(np.sum(form.offset * proj))
        bound, _, conj = _plane_bound(problem, a, b, 0.0 if problem.loss.lower_bound == 0 else None)
        return bound, a, b, max(abs(b), abs(conj)), []


# ----------------------------------------------------------------------------------------
# the certificate
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Certificate:
    """A proven bracket ``lower <= J* <= upper`` and its evidence.

    Attributes
    ----------
    upper, lower, gap : float
    source : str
        ``"planes"`` (the plane certifier), ``"bundle-dual"`` (a cutting-plane solver's own
        master dual), ``"excessive-gap"`` (Nesterov's primal-dual gap), ``"dual-point"`` (a
        corrected Fenchel dual point, :class:`L1DualCertifier`) or ``"none"``.
    a_bar, b_bar : ndarray, float
        The aggregated plane (cached from the run; :meth:`check` verifies it against the
        evidence).
    evidence : Evidence
        :class:`DualPoint`, :class:`QueryPoints` or :class:`SaddlePoint` (None for ``"none"``).
    x : ndarray
        The point at which ``upper`` was attained.
    fingerprint : str
        :func:`fingerprint` of the problem the run solved.
    """

    upper: float
    lower: float
    gap: float
    source: str = "none"
    a_bar: np.ndarray | None = field(default=None, repr=False)
    b_bar: float | None = None
    evidence: Evidence | None = field(default=None, repr=False)
    x: np.ndarray | None = field(default=None, repr=False)
    fingerprint: str | None = None

    @classmethod
    def from_evidence(cls, problem, x, upper, lower, source, evidence) -> "Certificate":
        """The certificate of a run: ``evidence`` proves ``lower`` (None: no bound), ``x``
        attains ``upper``. Costs one :func:`fingerprint` of the problem."""
        if evidence is None or not lower > -math.inf:
            evidence, lower, source = None, -math.inf, "none"
        plane = evidence.plane if evidence is not None and evidence.plane is not None else (None, None)
        fp = fingerprint(problem) if hasattr(problem, "loss") else None
        return cls(upper=float(upper), lower=float(lower), gap=float(upper) - float(lower),
                   source=source, a_bar=plane[0], b_bar=plane[1], evidence=evidence,
                   x=None if x is None else frozen(x), fingerprint=fp)

    def recompute(self, problem) -> float:
        r"""The bound rebuilt from the evidence alone (see :meth:`check`), without checking the
        claims; ``-inf`` without evidence."""
        if self.evidence is None:
            return -math.inf
        return float(self.evidence.verify(problem)[0])

    def check(self, problem, rtol: float = RTOL) -> float:
        r"""Verify the certificate against ``problem`` and return the lower bound it proves.

        Checks, each failure a :class:`CertificateError`: ``lower``, ``upper``, ``gap`` are
        numbers with ``gap = upper - lower``; the fingerprint is the problem's (lam, regularizer,
        loss and data); ``J(x) = upper``; the evidence is well formed (finite, right lengths,
        dual points in their box, multipliers on the simplex) and rebuilds from the problem's
        data a plane :math:`(a, b)` whose bound :math:`b - \lambda\Omega^*(-a/\lambda)` is at
        least ``lower`` and at most every J value met (J(x), the query points'); the cached
        ``a_bar`` matches :math:`a` and ``b_bar <= b``. Tolerance: ``rtol`` relative to the
        magnitude of the terms (rounding). A certificate without evidence (``lower = -inf``,
        source ``"none"``) checks trivially (after the ``upper`` and ``x`` checks when given).

        Cost: one evaluation of J at ``x``, one fingerprint, and one data pass
        (:class:`DualPoint`, :class:`SaddlePoint`) or k loss oracle calls (:class:`QueryPoints`
        with k points).
        """
        lower, upper, gap = self.lower, self.upper, self.gap
        for name, v in (("lower", lower), ("upper", upper), ("gap", gap)):
            if not isinstance(v, numbers.Real) or math.isnan(v):
                _fail(f"{name} is {v!r}, not a number")
        if lower == -math.inf and self.evidence is None:
            if self.source != "none":
                _fail(f"source {self.source!r} but no evidence")
            return -math.inf
        if self.evidence is None:
            _fail(f"claims lower = {lower!r} without evidence")
        if not (math.isfinite(lower) and math.isfinite(upper)):
            _fail(f"lower {lower!r} and upper {upper!r} must be finite")
        if not abs(gap - (upper - lower)) <= rtol * max(1.0, abs(upper), abs(lower)):
            _fail(f"gap {gap!r} is not upper - lower = {upper - lower!r}")
        if not hasattr(problem, "loss") or not hasattr(problem, "lam"):
            _fail(f"check needs the RegularizedRisk the run solved, got {type(problem).__name__}")
        if self.fingerprint != fingerprint(problem):
            _fail("the certificate belongs to another problem: its fingerprint (lam, regularizer, "
                  "loss and data) differs from this problem's")
        if self.x is None:
            _fail("the certificate has no point x attaining upper")
        x = _finite_array(self.x, "x", (problem.dim,))
        fx = float(problem.value(x))
        if not abs(fx - upper) <= rtol * max(1.0, abs(fx)):
            _fail(f"upper {upper!r} is not J(x) = {fx!r}")
        bound, a, b, scale, seen = self.evidence.verify(problem)
        if not math.isfinite(bound):
            _fail(f"the evidence proves no finite bound (recomputed {bound!r})")
        tol = rtol * max(1.0, abs(bound), scale)
        if self.a_bar is not None or self.b_bar is not None:
            a_bar = _finite_array(self.a_bar, "a_bar", (problem.dim,))
            if not isinstance(self.b_bar, numbers.Real) or not math.isfinite(self.b_bar):
                _fail(f"b_bar is {self.b_bar!r}, not a finite number")
            amax = float(np.max(np.abs(a), initial=0.0))
            if not float(np.max(np.abs(a_bar - a), initial=0.0)) <= 1e-7 * max(amax, problem.lam):
                _fail("a_bar does not match the slope rebuilt from the evidence")
            if not self.b_bar <= b + 1e-7 * max(1.0, abs(b), scale):
                _fail(f"b_bar {self.b_bar!r} exceeds the offset rebuilt from the evidence, {b!r}")
        if lower > bound + tol:
            _fail(f"claimed lower bound {lower!r} exceeds the one its evidence proves, {bound!r}")
        low_seen = min([fx] + list(seen))
        if bound > low_seen + tol:
            _fail(f"the evidence's bound {bound!r} exceeds a value of J met while checking "
                  f"({low_seen!r}): the evidence is not of this problem")
        return float(bound)


class PlaneCertifier:
    """Collect the loss planes of a solver's oracle calls and turn them into a lower bound.

    Parameters
    ----------
    problem : RegularizedRisk
    inner : str
        Master-problem backend (see :func:`nsopt.inner.select`).
    max_planes : int
        Bundle capacity; when full, inactive planes are dropped and old ones aggregated,
        which keeps the bound valid (any convex combination of planes is a plane).

    Use it as a listener of :class:`~nsopt.oracle.CountingOracle`; call :meth:`bound` when a
    bound is wanted (it warm-starts from the previous multipliers). Evidence: dual points for
    margin losses (n_planes x m floats), else query points (one d-vector per point a kept
    plane references; aggregates keep theirs, see :mod:`nsopt.bundle`).
    """

    def __init__(self, problem, inner: str = "auto", max_planes: int = 100):
        from .bundle import PlaneBundle
        from .inner import select

        self.problem = problem
        loss = problem.loss
        dual = getattr(loss, "dual_upper", None) is not None
        self.bundle = PlaneBundle(problem.dim, metric=problem.reg.gram_metric,
                                  evidence="dual" if dual else "points",
                                  n_examples=loss.m if dual else None)
        floor = loss.lower_bound
        if math.isfinite(floor):
            self.bundle.add_floor(float(floor))
        self.inner = select(problem.reg, inner)
        self.max_planes = int(max_planes)
        self._alpha = None
        self._fresh = False
        self.best = (-math.inf, None)
        #: ``time.perf_counter()`` past which master solves return early (the run's max_time)
        self.deadline = None

    def __call__(self, ev) -> None:
        if ev.loss_subgradient is None:
            return
        if len(self.bundle) >= self.max_planes:
            # multipliers for exactly the current planes, then compress: the bound so far is
            # kept (best), and the compressed model keeps the dual value (aggregation)
            self._fresh = True
            self.bound()
            self._alpha = self.bundle.compress(self._alpha, self.max_planes)
        self.bundle.add_at(ev.w, ev.loss_value, ev.loss_subgradient,
                           dual=getattr(ev, "loss_dual", None))
        self._fresh = True

    def bound(self) -> tuple[float, Evidence | None]:
        """Best lower bound so far with its evidence ``(lower, evidence)``."""
        if self._fresh and len(self.bundle):
            p = self.problem
            sol = self.inner.solve(self.bundle, p.reg, p.lam, warm=self._alpha,
                                   deadline=self.deadline)
            self._alpha = sol.alpha
            self._fresh = False
            value, _, _, evidence = self.bundle.certify(p.reg, p.lam, sol.alpha)
            if value > self.best[0] and evidence is not None:
                self.best = (value, evidence)
        return self.best


class L1DualCertifier:
    r"""Lower bounds for :math:`\lambda\|w\|_1 + R(w)` from corrected Fenchel dual points.

    For a margin loss with a known conjugate (``loss.dual_upper`` set: hinge, squared hinge,
    logistic) every dual vector :math:`t` in the domain gives the plane
    :math:`R(v) \ge \langle a(t), v\rangle + b(t)` (:meth:`~nsopt.losses.ScalarLoss.dual_plane`),
    and with the L1 conjugate the bound :math:`b(t)` holds when
    :math:`\|a(t)\|_\infty \le \lambda`. The natural dual point :math:`t(w)` of a good primal
    point violates that box badly: the gradient of the risk converges much later than the
    objective in ill-conditioned directions, and scaling :math:`t` into the box loses nearly all
    of the bound (measured on a9a, logistic, :math:`\lambda = 10^{-4}`: 83% below :math:`J^*`
    when the objective is 1.4e-3 above it; the planes of the iterates: about as weak).

    The correction: with :math:`V` the violated coordinates (at most ``max_columns``, the
    largest), move :math:`t` by the least change in the metric of the risk's Hessian weights
    :math:`D` (``loss.dual_curvature``) that puts :math:`a_V` on the box,

    .. math:: \Delta t = D B (B^T D B)^{-1} e, \qquad B = \mathrm{diag}(c \circ y) X_V,\;
              e_j = a_j - \lambda\,\mathrm{sign}(a_j),

    (the dual image of a Newton step on those coordinates), clip to the domain, repeat
    ``rounds`` times, then scale by the best :math:`\tau \le \lambda/\|a\|_\infty` (a concave
    1-D maximisation of :math:`b(\tau t)`). Same run: 5e-3 below :math:`J^*`. Validity never
    rests on the correction: the evidence is the plane :math:`(\tau a, b(\tau t))`, checked by
    :meth:`Certificate.check` like any other.

    Cost: one data pass for :math:`t(w)`, per round one pass and a sparse
    :math:`|V| \times |V|` system. The solver loop calls it only while its work stays within
    ``budget`` of the run's (``budget >= 1``: at every iteration), a budget halved (down to 1/64
    of it) each time its bound did not beat the others' and restored when it does: where the
    plane bounds are good anyway (mushrooms) it costs a few percent, not a quarter.

    Work is counted in data passes (``clock="passes"``, the default: the run's are two per
    oracle call), so runs are reproducible bit for bit; ``clock="time"`` counts seconds
    instead (opt-in: the result then depends on the machine's load).

    Evidence: the corrected dual point itself (:class:`DualPoint`).
    """

    def __init__(self, problem, rounds: int = 10, max_columns: int = 500, budget: float = 0.25,
                 clock: str = "passes"):
        if clock not in ("passes", "time"):
            raise ValueError(f"clock must be 'passes' or 'time', got {clock!r}")
        self.problem = problem
        self.rounds, self.max_columns, self.budget = int(rounds), int(max_columns), float(budget)
        self.clock = clock
        self.share = self.budget
        self.spent = 0.0
        self.best = (-math.inf, None)
        self._last_w = None

    @staticmethod
    def applies(problem) -> bool:
        from .problem import RegularizedRisk

        return (isinstance(problem, RegularizedRisk) and problem.reg.l1_ratio == 1.0
                and getattr(problem.loss, "dual_upper", None) is not None)

    def due(self, work: float) -> bool:
        """Whether a call now keeps the certifier's share of the run within its budget;
        ``work``: the run's data passes so far (``clock="passes"``) or its seconds
        (``clock="time"``)."""
        return self.budget >= 1.0 or self.spent <= self.share * work

    def feedback(self, useful: bool) -> None:
        """Whether the last bound beat every other: restore the budget, or halve it."""
        self.share = self.budget if useful else max(self.share / 2.0, self.budget / 64.0)

    def bound(self, w) -> tuple[float, DualPoint | None]:
        """Best lower bound so far with its evidence ``(lower, DualPoint)``, after trying the
        dual point of ``w``."""
        import time

        if w is None or (self._last_w is not None and np.array_equal(w, self._last_w)):
            return self.best
        t0 = time.perf_counter()
        self._last_w = np.array(w, copy=True)
        lower, evidence, passes = self._from_point(w)
        if lower > self.best[0]:
            self.best = (lower, evidence)
        self.spent += (time.perf_counter() - t0) if self.clock == "time" else passes
        return self.best

    def _from_point(self, w):
        loss, lam = self.problem.loss, self.problem.lam
        X = loss.data.csc if loss.data.sparse else loss.data.X
        cy = loss.c * loss.y
        t = loss.dual_variables(w)
        a, _ = loss.dual_plane(t)
        passes = 2
        for _ in range(self.rounds):
            excess = np.abs(a) - lam
            V = np.flatnonzero(excess > 0)
            if V.size == 0:
                break
            if V.size > self.max_columns:
                V = V[np.argsort(-excess[V])[: self.max_columns]]
            e = a[V] - lam * np.sign(a[V])
            D = np.maximum(loss.dual_curvature(t), 1e-12)
            XV = X[:, V]
            if sp.issparse(XV):
                G = (XV.T @ XV.multiply((cy * cy * D)[:, None])).toarray()
            else:
                G = XV.T @ ((cy * cy * D)[:, None] * XV)
            G = np.asarray(G)
            eta = np.linalg.lstsq(G + 1e-12 * np.trace(G) / V.size * np.eye(V.size), e,
                                  rcond=None)[0]
            # a(t + dt) = a - X_V^T (c y dt) = a_V - e on V
            t = np.clip(t + D * cy * np.asarray(XV @ eta).reshape(-1), 0.0, loss.dual_upper)
            a, _ = loss.dual_plane(t)
            passes += 2
        amax = float(np.max(np.abs(a), initial=0.0))
        top = 1.0 if amax <= lam else lam / amax * (1.0 - 1e-12)
        tau = _argmax_concave(lambda s: -float(loss.c @ loss.conjugate_terms(s * t)), top)
        if tau * amax > lam:  # rounding: stay inside the box
            tau = lam / amax * (1.0 - 1e-12)
        a_bar = tau * a                                   # a is linear in t
        b_bar = -float(loss.c @ loss.conjugate_terms(tau * t))
        return b_bar, DualPoint(tau * t, plane=(a_bar, b_bar)), passes


def _argmax_concave(f, hi: float) -> float:
    """Maximiser of a concave ``f`` on ``[0, hi]`` (scipy's bounded Brent; the end ``hi``, where
    the maximiser often sits, is compared explicitly)."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda x: -f(x), bounds=(0.0, hi), method="bounded",
                          options={"xatol": 1e-10 * max(hi, 1e-300)})
    return hi if f(hi) >= -res.fun else float(res.x)
