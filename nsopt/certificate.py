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
* :class:`OraclePlanes` (any other problem: a bare :class:`~nsopt.Oracle` such as a
  :class:`~nsopt.FunctionOracle`): query points, multipliers (plus one on the oracle's own
  ``lower_bound``) and the region the bound holds over (everywhere, a ball, a box); ``check``
  rebuilds the planes of ``f`` itself through the oracle (k oracle calls) and bounds
  :math:`\bar b + \min_{y \in C}\langle\bar a, y\rangle` with the rounding of its own
  arithmetic subtracted.

The certificate also holds the point ``x`` at which ``upper`` was attained and, for a
``RegularizedRisk``, a fingerprint of the problem (:func:`fingerprint`), so a certificate moved
to another problem is rejected. No fingerprint of an arbitrary callable is possible: on a bare
oracle the evidence rebuilt through the oracle passed to ``check`` is the proof.

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

import dataclasses
import hashlib
import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ._digest import array_digest
from ._threads import _one_blas_thread
from .oracle import frozen
from .regularizers import scaled_conjugate

__all__ = ["Certificate", "PlaneCertifier", "L1DualCertifier", "CertificateError", "Evidence",
           "DualPoint", "QueryPoints", "SaddlePoint", "OraclePlanes", "fingerprint",
           "zero_aggregate"]

#: relative rounding allowed between a claimed and a recomputed value
RTOL = 1e-9


class CertificateError(AssertionError):
    """A certificate's evidence does not support its claimed lower bound."""


# ----------------------------------------------------------------------------------------
# fingerprints
# ----------------------------------------------------------------------------------------
def _array_bytes(arr, legacy):
    """What the fingerprint reads of an array: its XXH64 (:mod:`nsopt._digest`: the values
    themselves, read in place), or (``legacy``, and arrays of Python objects) its raw bytes."""
    if legacy or arr.dtype.hasobject:
        return np.ascontiguousarray(arr).tobytes()
    return array_digest(arr)


def _feed(h, value, depth: int = 0, legacy: bool = False) -> None:
    from .losses._kernels import DataMatrix

    if isinstance(value, DataMatrix):
        value = value.X
    if value is None or isinstance(value, (bool, numbers.Number, str, np.generic)):
        h.update(repr(value).encode()); return
    if isinstance(value, np.ndarray):
        h.update(f"nd{value.dtype.str}{value.shape}".encode())
        h.update(_array_bytes(value, legacy)); return
    if sp.issparse(value):
        X = value.tocsr()
        h.update(f"sp{X.shape}".encode())
        for arr in (X.indptr, X.indices, X.data):
            h.update(_array_bytes(arr, legacy))
        return
    if isinstance(value, (tuple, list)) and len(value) <= 64 and depth < 2:
        h.update(f"seq{len(value)}".encode())
        for v in value:
            _feed(h, v, depth + 1, legacy)
        return
    h.update(type(value).__qualname__.encode())
    if depth < 2 and hasattr(value, "__dict__"):
        for name in sorted(vars(value)):
            if not name.startswith("_"):
                h.update(name.encode())
                _feed(h, vars(value)[name], depth + 1, legacy)


#: the prefix of the fingerprints whose arrays are read through XXH64 (:func:`fingerprint`);
#: a fingerprint without it is the earlier form (blake2b over the raw bytes), still checkable
FINGERPRINT_VERSION = "2:"


def fingerprint(problem, *, legacy: bool = False) -> str:
    """A digest of what the optimum depends on: ``lam``, the regularizer's and the loss's class
    and public parameters, and the loss's data: blake2b over the structure (classes, dtypes,
    shapes, parameters) and the XXH64 of every array (X's arrays, y, weights; see
    :mod:`nsopt._digest` for why a 64-bit non-cryptographic digest suffices here). Any change of
    a value, in place or not, changes it. Cost: one read of the data's bytes at memory speed
    (about 1 ms for a9a; ``legacy``, the earlier form without the prefix
    :data:`FINGERPRINT_VERSION`: blake2b over copies of the raw bytes, about 12 ms)."""
    h = hashlib.blake2b(digest_size=16)
    _feed(h, type(problem).__qualname__, 0, legacy)
    _feed(h, float(getattr(problem, "lam", math.nan)), 0, legacy)
    _feed(h, getattr(problem, "reg", None), 1, legacy)
    _feed(h, getattr(problem, "loss", problem), 1, legacy)
    return h.hexdigest() if legacy else FINGERPRINT_VERSION + h.hexdigest()


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
        n_coef = getattr(problem.reg, "n_coef", None)  # intercepts: Omega acts on coef only
        amax = float(np.max(np.abs(a if n_coef is None else a[:n_coef]), initial=0.0))
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
        the magnitude of its terms (for rounding) and the J values met on the way; a sixth
        entry, when present, is the magnitude of the slope's terms (for comparing ``a_bar``)."""
        raise NotImplementedError

    def resolved(self) -> "Evidence":
        """The evidence in its final, plain form (a solver may hold a lazy stand-in, formed
        on first read; the certificate keeps the plain one)."""
        return self


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
# bare oracles: planes rebuilt through the oracle, over a region
# ----------------------------------------------------------------------------------------
_U = 2.0 ** -53      # unit roundoff of float64
_TINY = 5e-324       # smallest subnormal: the absolute error of one operation that underflows


def _gamma(n: int) -> float:
    r"""Higham's :math:`\gamma_n = nu/(1 - nu)`: a sum of n products computed in floating point,
    in any order, with or without FMA, is off by at most :math:`\gamma_{n+1}` times the sum of
    the products' magnitudes (N. J. Higham, *Accuracy and Stability of Numerical Algorithms*,
    2nd ed., eq. (3.5))."""
    nu = n * _U
    return nu / (1.0 - nu) if nu < 0.5 else math.inf


def _exact_sign(weights, column) -> int:
    """The sign of ``sum_i weights_i * column_i`` in exact rational arithmetic (floats convert
    to fractions exactly)."""
    from fractions import Fraction

    total = Fraction(0)
    for w, g in zip(weights, column):
        if w != 0.0 and g != 0.0:
            total += Fraction(float(w)) * Fraction(float(g))
    return (total > 0) - (total < 0)


def _aggregate(weights, rows):
    """``(a_hat, err)``: the float aggregate ``sum_i weights_i rows_i`` and a bound ``err`` on
    its distance to the exact one, coordinate by coordinate."""
    W = np.asarray(weights, dtype=np.float64)
    G = np.asarray(rows, dtype=np.float64)
    return W @ G, _aggregate_error(W.size, W @ np.abs(G))


def _aggregate_error(n, abs_sum):
    r"""Bound on ``|fl(sum_i w_i g_ij) - sum_i w_i g_ij|`` from the float ``abs_sum`` of the
    ``w_i |g_ij|`` over ``n`` terms: :math:`\gamma_{n+1}` times the exact magnitude, doubled
    because ``abs_sum`` is itself rounded, plus one subnormal per operation."""
    return 2.0 * _gamma(n + 2) * abs_sum + (n + 2) * _TINY  # plus what underflow may lose


def zero_aggregate(weights, rows) -> bool:
    """Whether ``sum_i weights_i rows_i`` is exactly the zero vector (rational arithmetic where
    the float sum cannot decide). A solver asks this before it claims the bound of a flat
    aggregate plane over the whole space: a slope zero only after rounding bounds nothing."""
    W = np.asarray(weights, dtype=np.float64)
    G = np.asarray(rows, dtype=np.float64).reshape(W.size, -1)
    a_hat, err = _aggregate(W, G)
    if np.any(np.abs(a_hat) > err):
        return False
    support = np.flatnonzero(((W != 0)[:, None] & (G != 0)).any(axis=0))
    return all(_exact_sign(W, G[:, j]) == 0 for j in support)  # rational arithmetic


def _vector_or_inf(v, name, d, fill):
    if v is None:
        return np.full(d, fill)
    try:
        a = np.broadcast_to(np.asarray(v, dtype=np.float64), (d,)).copy()
    except (TypeError, ValueError):
        _fail(f"{name} must be a number or an array of length {d}")
    if np.any(np.isnan(a)):
        _fail(f"{name} has NaN entries")
    return a


def _region_parts(radius, bounds, d, centre=None):
    """The regions a caller states to :meth:`Certificate.check`: a ball ``||x - centre|| <=
    radius`` (centre 0 by default) and / or a box ``bounds = (lb, ub)`` (scipy's convention;
    None is unbounded)."""
    parts = []
    if centre is not None and radius is None:
        raise ValueError("centre is the centre of the ball of radius: give radius too")
    if radius is not None:
        if not isinstance(radius, numbers.Real) or not 0.0 <= radius < math.inf:
            raise ValueError(f"radius must be a finite number >= 0, got {radius!r}")
        c = np.zeros(d) if centre is None else np.asarray(centre, dtype=np.float64)
        if c.shape != (d,) or not np.all(np.isfinite(c)):
            raise ValueError(f"centre must be a finite vector of length {d}, got shape {c.shape}")
        parts.append(("ball", c, float(radius)))
    if bounds is not None:
        lb, ub = bounds
        lb = _vector_or_inf(lb, "bounds[0]", d, -math.inf)
        ub = _vector_or_inf(ub, "bounds[1]", d, math.inf)
        parts.append(("box", lb, ub))
    return parts


def _contains(outer, inner) -> bool:
    """Whether region ``outer`` contains region ``inner`` (each ``("all",)``, ``("ball", c, r)``
    or ``("box", lb, ub)``), decided with a margin on the safe side of rounding (distances are
    inflated by twice Higham's gamma of the dimension, shifted ends by 4u of their terms)."""
    if outer[0] == "all":
        return True
    if inner[0] == "all":
        return False
    grow = 1.0 + 2.0 * _gamma(outer[1].size + 4)
    if outer[0] == "ball":
        c, r = outer[1], outer[2]
        if inner[0] == "ball":
            if np.array_equal(inner[1], c):
                return inner[2] <= r
            return (float(np.linalg.norm(inner[1] - c)) + inner[2]) * grow <= r
        lb, ub = inner[1], inner[2]
        if not (np.all(np.isfinite(lb)) and np.all(np.isfinite(ub))):
            return False
        corner = np.maximum(np.abs(lb - c), np.abs(ub - c))  # the farthest corner, per axis
        return float(np.linalg.norm(corner)) * grow <= r
    lb, ub = outer[1], outer[2]
    if inner[0] == "ball":
        c, r = inner[1], inner[2]
        slack = 0.0 if not np.any(c) else 4 * _U * (np.abs(c) + r)  # c - r is exact for c = 0
        return bool(np.all(lb <= c - r - slack) and np.all(c + r + slack <= ub))
    return bool(np.all(lb <= inner[1]) and np.all(inner[2] <= ub))


def _stated_rows(A_ub, b_ub, d):
    """The rows a caller states to :meth:`Certificate.check` (None when neither is given)."""
    if A_ub is None and b_ub is None:
        return None
    if A_ub is None or b_ub is None:
        raise ValueError("A_ub and b_ub go together: give both, or neither")
    A = np.asarray(A_ub.toarray() if sp.issparse(A_ub) else A_ub, dtype=np.float64)
    A = A.reshape(1, -1) if A.ndim == 1 else A
    b = np.asarray(b_ub, dtype=np.float64).reshape(-1)
    if A.ndim != 2 or A.shape[1] != d or b.shape != (A.shape[0],):
        raise ValueError(f"A_ub must have shape (m, {d}) and b_ub (m,), got {A.shape} and "
                         f"{b.shape}")
    return A, b


def _rows_contain(evidence_rows, stated) -> bool:
    """Whether the set of the evidence's rows contains the set of the ``stated`` rows
    (``(A, b)`` or None): every evidence row is a stated row, with a right-hand side at least
    the stated one (a sufficient test, exact in floating point)."""
    if stated is None:
        return False
    A, b = evidence_rows[0], evidence_rows[1]
    SA, Sb = stated
    for k in range(A.shape[0]):
        same = np.all(SA == A[k], axis=1)
        if not np.any(same & (Sb <= b[k])):
            return False
    return True


def _describe(region) -> str:
    if region[0] == "all":
        return "the whole space"
    if region[0] == "ball":
        where = "0" if not np.any(region[1]) else "a centre c"
        return f"the ball ||x - {where}|| <= {region[2]!r}"
    return "the box lb <= x <= ub"


@dataclass(frozen=True, eq=False)
class OraclePlanes(Evidence):
    r"""Planes of any convex oracle, rebuilt through it, and the region they bound ``f`` over.

    For query points :math:`x_i` with subgradients :math:`g_i \in \partial f(x_i)`, multipliers
    :math:`w_i \ge 0` and a floor multiplier :math:`w_0 \ge 0` on the oracle's own stated
    ``lower_bound`` :math:`\ell`, with :math:`s = w_0 + \sum_i w_i = 1`, every :math:`y` satisfies

    .. math:: f(y) \ge \bar b + \langle \bar a, y\rangle, \qquad
              \bar a = \sum_i w_i g_i, \quad \bar b = \sum_i w_i (f(x_i) - \langle g_i, x_i\rangle)
              + w_0 \ell,

    so over a region :math:`C`: :math:`\min_C f \ge \bar b + \min_{y \in C}\langle\bar a, y\rangle`:

    * no region (``radius`` and ``lb``/``ub`` None): the bound is :math:`\bar b` when
      :math:`\bar a = 0` *exactly* and :math:`-\infty` otherwise (a slope zero only after
      rounding bounds nothing over the whole space): the sign of every coordinate of
      :math:`\bar a` that the float sum cannot decide is computed in rational arithmetic;
    * a ball ``||y - centre|| <= radius`` (the ``radius`` and ``centre`` options of a run):
      :math:`\bar b + \langle\bar a, c\rangle - r\|\bar a\|`;
    * a box ``lb <= y <= ub`` (entries may be infinite; scipy's ``bounds``): :math:`\bar b +
      \sum_j \min(\bar a_j lb_j, \bar a_j ub_j)` (a coordinate with an infinite side needs the
      exact sign of :math:`\bar a_j`, as above).

    * a box and rows ``A_ub y <= b_ub`` with multipliers ``y_ub`` :math:`= \eta \ge 0`
      (the ``bounds``, ``A_ub``, ``b_ub`` options of a run): weak duality,
      :math:`\bar b - \eta^T b_{ub} + \sum_j \min(r_j lb_j,\ r_j ub_j)` with
      :math:`r = \bar a + A_{ub}^T\eta`, valid for *any* :math:`\eta \ge 0`, so forged
      multipliers can only lower it (coordinates with an infinite side need the exact sign of
      :math:`r_j`, computed as above over the planes and the rows).

    The bound is a lower bound on :math:`f^*` when :math:`f^*` is the minimum over the region: a
    box constrains the problem (then the certificate's ``x`` must lie in it), a ball states where
    a minimiser lies (``||x*|| <= radius``), which no check can verify: pass
    ``Certificate.check(problem, radius=...)`` to require the evidence's region to contain yours.

    ``directions[i]`` (None by default) says which subgradient: None is the one
    ``problem.value_and_subgradient(x_i)`` returns, a vector :math:`p` the one
    ``problem.sup_subgradient(x_i, p)`` returns (quasi-Newton aggregates at kinks combine
    several subgradients of one point). ``minorants[i]`` (None by default) says which plane
    instead: None is the point's own plane (as above), an integer :math:`j` the row :math:`j`
    of the oracle's extra minorants at :math:`x_i`, ``(G, c) = problem.minorants(x_i)``
    (:meth:`~nsopt.Oracle.minorants`), the plane :math:`\langle G_j, y\rangle + c_j` in
    place of :math:`f(x_i) + \langle g_i, y - x_i\rangle`: rebuilt by calling the oracle
    again, so a forged row (out of range, or an oracle that offers none) is rejected and a
    bound the rebuilt planes do not prove fails the check. A point cannot have both a
    direction and a minorant row. ``floor_value`` must be the oracle's own
    ``lower_bound``: it is re-read from the problem, so a forged floor is rejected.

    Rounding: the bound is computed in floating point, then an a priori bound on the error of
    that arithmetic (Higham's :math:`\gamma_n` for the sums and dot products, doubled) is
    subtracted, and :math:`s` is divided out, so the returned bound holds for the exact
    function the oracle computes; the oracle's own rounding is its own (the planes are taken
    to be exact, as every solver takes them). Multipliers must sum to 1 within ``1e-9``.

    Check: one oracle call per query point with a positive multiplier
    (``value_and_subgradient``), or two for a point with a direction (``value``, once per
    distinct point, and ``sup_subgradient``), or one ``minorants`` call per distinct point
    with minorant rows; O(d) arithmetic per point, plus rational
    arithmetic on the coordinates whose sign matters and rounding cannot decide.
    """

    points: tuple
    weights: np.ndarray
    directions: tuple | None = None
    floor: float = 0.0
    floor_value: float = -math.inf
    centre: np.ndarray | None = None
    radius: float | None = None
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None
    plane: tuple | None = field(default=None, repr=False)
    A_ub: np.ndarray | None = field(default=None, repr=False)
    b_ub: np.ndarray | None = None
    y_ub: np.ndarray | None = None
    #: last, so that the fields before keep their positions (evidence built positionally)
    minorants: tuple | None = None
    kind = "oracle-planes"

    def tagged(self) -> "OraclePlanes":
        """This evidence with its query points read as a solver keeps them: a pair ``(x, j)``
        stands for row ``j`` of the oracle's minorants at ``x`` (moved to ``minorants``), any
        other entry for the point's own plane. Returns ``self`` when no point is a pair."""
        if not any(type(p) is tuple for p in self.points):
            return self
        if self.directions is not None:
            _fail("minorant rows and directions cannot be combined in one evidence")
        rows = tuple(p[1] if type(p) is tuple else None for p in self.points)
        points = tuple(p[0] if type(p) is tuple else p for p in self.points)
        return dataclasses.replace(self, points=points, minorants=rows)

    def rows(self, d: int):
        r"""The validated rows ``(A_ub, b_ub, y_ub)`` (None without): the region is then
        :math:`\{lb \le x \le ub,\ A_{ub} x \le b_{ub}\}` and ``y_ub >= 0`` are the rows'
        multipliers (one per row)."""
        if self.A_ub is None and self.b_ub is None and self.y_ub is None:
            return None
        if self.A_ub is None or self.b_ub is None or self.y_ub is None:
            _fail("rows need A_ub, b_ub and their multipliers y_ub together")
        if self.lb is None or self.ub is None:
            _fail("rows A_ub x <= b_ub come with a box lb, ub (infinite entries allowed)")
        A = _finite_array(self.A_ub, "A_ub")
        if A.ndim != 2 or A.shape[1] != d:
            _fail(f"A_ub has shape {A.shape}, expected (m, {d})")
        m = A.shape[0]
        b = _finite_array(self.b_ub, "b_ub", (m,))
        y = _finite_array(self.y_ub, "the row multipliers y_ub", (m,))
        if np.any(y < 0):
            _fail("the row multipliers y_ub must be >= 0")
        return A, b, y

    def region(self, d: int):
        """The validated region: ``("all",)``, ``("ball", centre, radius)`` or ``("box", lb, ub)``."""
        ball = self.radius is not None or self.centre is not None
        box = self.lb is not None or self.ub is not None
        if ball and box:
            _fail("the evidence states both a ball and a box: one region only")
        if ball:
            r = self.radius
            if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Real) or not 0.0 <= r < math.inf:
                _fail(f"the radius is {r!r}: it must be a finite number >= 0")
            if self.centre is None:
                _fail("a ball needs its centre")
            return ("ball", _finite_array(self.centre, "the centre", (d,)), float(r))
        if box:
            if self.lb is None or self.ub is None:
                _fail("a box needs both lb and ub (infinite entries for unbounded sides)")
            lb, ub = (np.asarray(v, dtype=np.float64) for v in (self.lb, self.ub))
            for name, v in (("lb", lb), ("ub", ub)):
                if v.shape != (d,):
                    _fail(f"{name} has shape {v.shape}, expected {(d,)}")
                if np.any(np.isnan(v)):
                    _fail(f"{name} has NaN entries")
            if np.any(lb > ub) or np.any(lb == math.inf) or np.any(ub == -math.inf):
                _fail("the box is empty (lb > ub somewhere, or an infinite bound on the wrong side)")
            return ("box", lb, ub)
        return ("all",)

    def verify(self, problem):
        """``(bound, a, b, scale, seen, slope_scale)``; ``seen`` are the values of f met at query
        points (in the box, for a box)."""
        d = getattr(problem, "dim", None)
        W = np.asarray(self.weights, dtype=np.float64) if not isinstance(self.weights, (str, bytes)) else None
        if W is None or W.ndim != 1:
            _fail("the multipliers must be a 1-D array, one per query point")
        k = W.size
        if not isinstance(self.points, (tuple, list)) or len(self.points) != k:
            _fail(f"{len(self.points) if hasattr(self.points, '__len__') else '?'} query points "
                  f"but {k} multipliers")
        W = _finite_array(W, "the multipliers", (k,))
        dirs = self.directions
        if dirs is not None and (not isinstance(dirs, (tuple, list)) or len(dirs) != k):
            _fail(f"the directions must be a tuple of {k} entries (None or a vector), one per point")
        rows_of = self.minorants
        if rows_of is not None and (not isinstance(rows_of, (tuple, list)) or len(rows_of) != k):
            _fail(f"the minorant rows must be a tuple of {k} entries (None or an int), one per "
                  "point")
        w0 = self.floor
        if isinstance(w0, (bool, np.bool_)) or not isinstance(w0, numbers.Real) or not math.isfinite(w0):
            _fail(f"the floor multiplier is {w0!r}, not a finite number")
        w0 = float(w0)
        if np.any(W < 0) or w0 < 0:
            _fail("the multipliers must be >= 0")
        total = math.fsum(list(W) + [w0])
        if not abs(total - 1.0) <= 1e-9:
            _fail(f"the multipliers are off the simplex: they sum to {total!r} (must be 1)")
        ell = self.floor_value
        if isinstance(ell, (bool, np.bool_)) or not isinstance(ell, numbers.Real) or math.isnan(ell):
            _fail(f"the floor value is {ell!r}, not a number")
        stated = float(getattr(problem, "lower_bound", -math.inf))
        if float(ell) != stated:
            _fail(f"the floor value {ell!r} is not the oracle's own lower_bound ({stated!r}): a "
                  "floor is trusted only as the oracle's statement")
        if w0 > 0 and not math.isfinite(stated):
            _fail("the floor plane is used but the oracle states no finite lower_bound")
        if d is None:
            d = int(np.size(self.points[0])) if k else 0
        region = self.region(d)
        lb = ub = None
        if region[0] == "box":
            lb, ub = region[1], region[2]
        elif region[0] == "all":
            lb, ub = np.full(d, -math.inf), np.full(d, math.inf)
        keep_rows = lb is not None and not (np.all(np.isfinite(lb)) and np.all(np.isfinite(ub)))
        cons = self.rows(d)
        if cons is not None and region[0] != "box":
            _fail("rows A_ub x <= b_ub come with a box, not a ball")

        a_hat, abs_a = np.zeros(d), np.zeros(d)
        used_w, b_terms, rows = [], [], []
        mag_b, slope2, seen, values = 0.0, 0.0, [], {}
        for i, x in enumerate(self.points):
            x = _finite_array(x, f"query point {i}", (d,))
            p = None if dirs is None else dirs[i]
            if p is not None:
                p = _finite_array(p, f"direction {i}", (d,))
            if W[i] == 0.0:
                continue
            j = None if rows_of is None else rows_of[i]
            if j is not None:
                if isinstance(j, (bool, np.bool_)) or not isinstance(j, numbers.Integral):
                    _fail(f"the minorant row of query point {i} is {j!r}, not an int")
                if p is not None:
                    _fail(f"query point {i} names both a direction and a minorant row")
                f, g = self._minorant(problem, x, int(j), i, d, values)
                b_terms.append(f)
                used_w.append(W[i])
                a_hat += W[i] * g
                abs_a += W[i] * np.abs(g)
                mag_b += W[i] * abs(f)
                slope2 += W[i] * float(np.linalg.norm(g))
                if keep_rows:
                    rows.append(g)
                continue
            try:
                if p is None:
                    f, g = problem.value_and_subgradient(x)
                else:
                    key = x.tobytes()
                    if key not in values:
                        values[key] = problem.value(x)
                    f = values[key]
                    g = problem.sup_subgradient(x, p)[1]
            except CertificateError:
                raise
            except Exception as exc:  # the oracle refuses the point: not evidence
                raise CertificateError(f"the oracle raised at query point {i}: {exc!r}") from exc
            f = float(f)
            g = np.asarray(g.toarray() if sp.issparse(g) else g, dtype=np.float64).reshape(-1)
            if not math.isfinite(f):
                _fail(f"the oracle's value at query point {i} is {f!r}")
            g = _finite_array(g, f"the subgradient at query point {i}", (d,))
            gx = np.abs(g) @ np.abs(x)
            b_terms.append(f - float(g @ x))
            used_w.append(W[i])
            a_hat += W[i] * g
            abs_a += W[i] * np.abs(g)
            mag_b += W[i] * (abs(f) + gx)
            slope2 += W[i] * float(np.linalg.norm(g))
            if keep_rows:
                rows.append(g)
            inside = region[0] != "box" or (np.all(lb <= x) and np.all(x <= ub))
            if inside and cons is not None:
                inside = bool(np.all(cons[0] @ x <= cons[1]))
            if inside:
                seen.append(f)  # a value outside a box (a constraint) contradicts nothing
        n = len(used_w)
        # exact aggregate and offset are within these of the float ones (Higham's gamma_n)
        err_a = _aggregate_error(n, abs_a)
        b_hat = float(np.dot(used_w, b_terms)) if n else 0.0
        if w0 > 0:
            b_hat += w0 * stated
            mag_b += w0 * abs(stated)
        weights = used_w
        if cons is not None:
            # weak duality on the rows: f >= <a + A^T y, x> + b - y^T b_ub on the set
            A, bv, yv = cons
            a_rows = A.T @ yv
            abs_rows = np.abs(A).T @ yv
            err_a = (err_a + 2.0 * _gamma(A.shape[0] + 2) * abs_rows
                     + 2.0 * _U * (np.abs(a_hat) + abs_rows) + (A.shape[0] + 2) * _TINY)
            abs_a = abs_a + abs_rows
            a_plane, a_hat = a_hat, a_hat + a_rows
            shift = float(yv @ bv)
            mag_b += float(yv @ np.abs(bv))
            if keep_rows:
                rows = list(rows) + list(A)
                weights = list(used_w) + list(yv)
            n += A.shape[0]
        err = _gamma(d + n + 4) * mag_b
        if region[0] == "ball":
            c, r = region[1], region[2]
            norm_a = float(np.linalg.norm(a_hat))
            m_hat = float(a_hat @ c) - r * norm_a
            mag_m = float(np.abs(a_hat) @ np.abs(c)) + r * norm_a
            err += float(err_a @ np.abs(c)) + r * float(err_a.sum()) + _gamma(d + 4) * mag_m
            mag_m = max(mag_m, float(abs_a @ np.abs(c)) + r * slope2)
        else:
            m_hat, mag_m = self._box_min(a_hat, err_a, lb, ub, weights, rows)
            if cons is not None:
                a_hat = a_plane             # the planes' slope: what a_bar is checked against
                m_hat -= shift              # the rows' offset -y^T b_ub joins the box minimum
            if m_hat == -math.inf:
                return -math.inf, a_hat, b_hat, mag_b, seen, float(np.max(abs_a, initial=0.0))
            err += mag_m[1] + _gamma(d + 1) * mag_m[0]
            mag_m = mag_m[0]
        n_hat = b_hat + m_hat
        err += (n * (d + 4) + 4 * d + 8) * _TINY
        bound = n_hat / total - 2.0 * (err + 4 * _U * abs(n_hat)) / total
        return (bound, a_hat, b_hat, max(mag_b, mag_m), seen,
                float(np.max(abs_a, initial=0.0)))

    @staticmethod
    def _minorant(problem, x, j, i, d, cache):
        """``(c_j, G_j)``: row ``j`` of ``problem.minorants(x)``, called once per distinct
        point (``cache``), validated."""
        key = ("minorants", x.tobytes())
        if key not in cache:
            fn = getattr(problem, "minorants", None)
            if not callable(fn):
                _fail(f"query point {i} names minorant row {j}, but the problem offers no "
                      "minorants")
            try:
                out = fn(x)
            except CertificateError:
                raise
            except Exception as exc:
                raise CertificateError(f"the oracle raised at query point {i} (minorants): "
                                       f"{exc!r}") from exc
            cache[key] = out
        out = cache[key]
        if out is None:
            _fail(f"query point {i} names minorant row {j}, but the oracle offers no minorants "
                  "there")
        G = np.asarray(out[0], dtype=np.float64)
        c = np.asarray(out[1], dtype=np.float64).reshape(-1)
        if G.ndim != 2 or G.shape[1] != d or c.shape != (G.shape[0],):
            _fail(f"the oracle's minorants at query point {i} have shapes {G.shape} and "
                  f"{c.shape}")
        if not 0 <= j < G.shape[0]:
            _fail(f"query point {i} names minorant row {j}, but the oracle offers "
                  f"{G.shape[0]} there")
        g = _finite_array(G[j], f"minorant {j} at query point {i}", (d,))
        cj = float(c[j])
        if not math.isfinite(cj):
            _fail(f"the offset of minorant {j} at query point {i} is {cj!r}")
        return cj, g

    @staticmethod
    def _box_min(a_hat, err_a, lb, ub, weights, rows):
        r""":math:`\min_{lb \le y \le ub} \langle a, y\rangle` for the exact :math:`a` within
        ``err_a`` of ``a_hat``: ``(value, (magnitude, error))``, value ``-inf`` when unbounded."""
        finite = np.isfinite(lb) & np.isfinite(ub)
        phi = np.zeros(a_hat.size)
        err = np.zeros(a_hat.size)
        # both sides finite: phi(t) = min(t lb, t ub) is Lipschitz with constant max(|lb|, |ub|)
        f = finite
        phi[f] = np.minimum(a_hat[f] * lb[f], a_hat[f] * ub[f])
        err[f] = err_a[f] * np.maximum(np.abs(lb[f]), np.abs(ub[f]))
        # an infinite side: the sign of the exact a_j decides which side, and whether -inf
        inf_cols = np.flatnonzero(~finite)
        if inf_cols.size:
            sign = np.zeros(inf_cols.size, dtype=int)
            t, e = a_hat[inf_cols], err_a[inf_cols]
            sign[t > e] = 1
            sign[t < -e] = -1
            undecided = np.flatnonzero(sign == 0)
            if undecided.size and len(rows):
                G = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
                W = np.asarray(weights, dtype=np.float64)
                support = (G[:, inf_cols[undecided]] != 0).any(axis=0)
                for u in undecided[support]:  # rational arithmetic, where rounding cannot tell
                    sign[u] = _exact_sign(W, G[:, inf_cols[u]])
            side = np.where(sign > 0, lb[inf_cols], ub[inf_cols])
            if np.any(np.isinf(side[sign != 0])):
                return -math.inf, (math.inf, math.inf)
            nz = sign != 0
            cols = inf_cols[nz]
            phi[cols] = a_hat[cols] * side[nz]
            err[cols] = err_a[cols] * np.abs(side[nz])
        return float(phi.sum()), (float(np.abs(phi).sum()), float(err.sum()))


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
        corrected Fenchel dual point, :class:`L1DualCertifier`), ``"eps-subgradient"`` (the
        trust-region bundle's aggregate plane over its ``radius`` ball, a flat aggregate plane,
        or the oracle's ``lower_bound``), ``"zero-subgradient"`` (subBFGS / subLBFGS: an exactly
        zero aggregate subgradient), ``"level-lp"`` (the level bundle's LP dual over its box)
        or ``"none"``.
    a_bar, b_bar : ndarray, float
        The aggregated plane (cached from the run; :meth:`check` verifies it against the
        evidence).
    evidence : Evidence
        :class:`DualPoint`, :class:`QueryPoints`, :class:`SaddlePoint` or
        :class:`OraclePlanes` (None for ``"none"``).
    x : ndarray
        The point at which ``upper`` was attained.
    fingerprint : str or None
        :func:`fingerprint` of the problem the run solved (None on a bare oracle: no
        fingerprint of an arbitrary callable is possible).
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
        attains ``upper``. Costs one :func:`fingerprint` of the problem. A loss with an
        ``adopt_evidence(evidence, problem)`` method keeps the evidence in its own form
        (:class:`nsopt.distributed.ShardedDualPoint`: a dual point kept on the shards)."""
        if evidence is None or not lower > -math.inf:
            evidence, lower, source = None, -math.inf, "none"
        if evidence is not None:
            evidence = evidence.resolved()
            # a loss may keep its evidence elsewhere (nsopt.distributed: on its shards)
            adopt = getattr(getattr(problem, "loss", None), "adopt_evidence", None)
            if adopt is not None:
                evidence = adopt(evidence, problem)
        plane = evidence.plane if evidence is not None and evidence.plane is not None else (None, None)
        if sp.issparse(plane[0]):  # a solver's compact aggregate (large sparse d): dense here
            plane = (plane[0].toarray().reshape(-1), plane[1])
        fp = fingerprint(problem) if hasattr(problem, "loss") and hasattr(problem, "lam") else None
        return cls(upper=float(upper), lower=float(lower), gap=float(upper) - float(lower),
                   source=source, a_bar=plane[0], b_bar=plane[1], evidence=evidence,
                   x=None if x is None else frozen(x), fingerprint=fp)

    def recompute(self, problem) -> float:
        r"""The bound rebuilt from the evidence alone (see :meth:`check`), without checking the
        claims; ``-inf`` without evidence."""
        if self.evidence is None:
            return -math.inf
        return float(self.evidence.verify(problem)[0])

    def check(self, problem, rtol: float = RTOL, *, radius=None, bounds=None,
              centre=None, A_ub=None, b_ub=None, A_eq=None, b_eq=None) -> float:
        r"""Verify the certificate against ``problem`` and return the lower bound it proves.

        Checks, each failure a :class:`CertificateError`: ``lower``, ``upper``, ``gap`` are
        numbers with ``gap = upper - lower``; the certificate belongs to ``problem`` (below);
        ``J(x) = upper``; the evidence is well formed (finite, right lengths, dual points in
        their box, multipliers on the simplex) and rebuilds from the problem's data or oracle a
        bound that is at least ``lower`` and at most every value of J met (J(x), the query
        points'); the cached ``a_bar`` matches the rebuilt slope and ``b_bar`` is at most the
        rebuilt offset. Tolerance: ``rtol`` relative to the magnitude of the terms (rounding).
        A certificate without evidence (``lower = -inf``, source ``"none"``) checks trivially.

        *RegularizedRisk* (:class:`DualPoint`, :class:`QueryPoints`, :class:`SaddlePoint`, or
        :class:`OraclePlanes`): the fingerprint (lam, regularizer, loss and data) must be the
        problem's, so a certificate moved to another problem is rejected; the plane
        :math:`(a, b)` gives the bound :math:`b - \lambda\Omega^*(-a/\lambda)`. With an
        intercept (``fit_intercept=True``) :math:`\Omega^*` is that of ``problem.reg``
        (:class:`~nsopt.problem.InterceptRegularizer`): the coefficients' conjugate plus
        :math:`B\|a_b\|_1`, with the box B recomputed from the problem (never read from the
        certificate), so a dual point or multipliers that violate the intercept's equality
        :math:`\sum_i c_i y_i t_i = 0` (:math:`\sum_i \alpha_i a_{i,b} = 0`) pay for it in the
        bound, and a certificate issued with a smaller box is rejected.

        *Any other Oracle* (a :class:`~nsopt.FunctionOracle`, a combination, a user class):
        no fingerprint of an arbitrary callable is possible, so none is taken; the only evidence
        accepted is :class:`OraclePlanes`, rebuilt through ``problem``'s own oracle (its
        values, subgradients and stated ``lower_bound``): the bound returned is therefore a
        bound for the function passed in, whichever run the certificate came from, and a
        certificate moved to another function fails on ``J(x) = upper``, on a rebuilt bound
        above a value met, or on the floor. Its bound holds over the evidence's region
        (:meth:`OraclePlanes.region`): everywhere, a box (a constraint: ``x`` must lie in it)
        or a ball (a statement about where a minimiser lies, which no check can verify).

        Parameters
        ----------
        problem : RegularizedRisk or Oracle
            The problem the run solved.
        rtol : float
            Relative rounding allowed between claimed and rebuilt values.
        radius, bounds, centre : optional
            The region *you* know a minimiser lies in (``||x* - centre|| <= radius``, centre 0
            by default) or constrain the problem to (``bounds = (lb, ub)``, scipy's
            convention): the evidence's region must contain it, or the certificate is
            rejected. Without them, the evidence's own region is taken as stated.
        A_ub, b_ub : optional
            Rows :math:`A_{ub} x \le b_{ub}` that constrain the problem with ``bounds``
            (scipy.optimize.linprog's names): every row of the evidence must be one of yours
            (the same row, a right-hand side at least yours), so its set contains yours. An
            evidence with rows is rejected when you state a region without them. ``x`` must
            satisfy the evidence's rows to ``1e-9`` relative (HiGHS's tolerances: a
            minimiser on a face is feasible to rounding).
        A_eq, b_eq : optional
            Equalities :math:`A_{eq} x = b_{eq}`, stated as the pairs of rows
            :math:`A_{eq} x \le b_{eq}`, :math:`-A_{eq} x \le -b_{eq}` (how a run keeps them).

        Notes
        -----
        Cost: one evaluation of J at ``x``; for a RegularizedRisk one fingerprint, and one
        data pass (:class:`DualPoint`, :class:`SaddlePoint`) or k loss oracle calls
        (:class:`QueryPoints` with k points); k oracle calls for :class:`OraclePlanes` with k
        query points (two for a point with a direction; one ``minorants`` call per distinct
        point with minorant rows).
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
        risk = hasattr(problem, "loss") and hasattr(problem, "lam")
        if risk:
            legacy = not str(self.fingerprint).startswith(FINGERPRINT_VERSION)
            if self.fingerprint != fingerprint(problem, legacy=legacy):
                _fail("the certificate belongs to another problem: its fingerprint (lam, "
                      "regularizer, loss and data) differs from this problem's")
        else:
            if not (callable(getattr(problem, "value_and_subgradient", None))
                    and callable(getattr(problem, "value", None))):
                _fail(f"check needs the problem the run solved (a RegularizedRisk or an Oracle), "
                      f"got {type(problem).__name__}")
            if self.fingerprint is not None:
                _fail("the certificate belongs to another problem: it was issued for a "
                      "RegularizedRisk (it carries its fingerprint), and this is a bare oracle")
            if not isinstance(self.evidence, OraclePlanes):
                _fail(f"{self.evidence.kind} evidence needs the RegularizedRisk the run solved "
                      f"(its loss and lam); on a bare oracle only oracle-planes evidence is "
                      f"accepted, got a {type(problem).__name__}")
        if self.x is None:
            _fail("the certificate has no point x attaining upper")
        d = getattr(problem, "dim", None)
        d = d if d is not None else int(np.size(self.x))
        x = _finite_array(self.x, "x", (d,))
        fx = float(problem.value(x))
        if not abs(fx - upper) <= rtol * max(1.0, abs(fx)):
            _fail(f"upper {upper!r} is not J(x) = {fx!r}")
        region = self.evidence.region(d) if isinstance(self.evidence, OraclePlanes) else ("all",)
        stated = _region_parts(radius, bounds, d, centre)
        if stated and not any(_contains(region, part) for part in stated):
            _fail(f"the evidence bounds f over {_describe(region)}, which does not contain "
                  f"the region you state ({' and '.join(_describe(p) for p in stated)})")
        if region[0] == "box" and not (np.all(region[1] <= x) and np.all(x <= region[2])):
            _fail("x lies outside the box the evidence bounds f over: upper is not a value "
                  "of the constrained problem")
        cons = self.evidence.rows(d) if isinstance(self.evidence, OraclePlanes) else None
        mine = _stated_rows(A_ub, b_ub, d)
        eq = _stated_rows(A_eq, b_eq, d)
        if eq is not None:
            pairs = (np.vstack([eq[0], -eq[0]]), np.concatenate([eq[1], -eq[1]]))
            mine = pairs if mine is None else (np.vstack([mine[0], pairs[0]]),
                                               np.concatenate([mine[1], pairs[1]]))
        if cons is not None:
            if (stated or mine is not None) and not _rows_contain(cons, mine):
                _fail("the evidence bounds f over a box and rows A_ub x <= b_ub that are not "
                      "among the rows you state: its set does not contain yours (pass the "
                      "problem's A_ub and b_ub to check)")
            A, bv = cons[0], cons[1]
            excess = A @ x - bv
            scale = 1.0 + np.abs(bv) + np.abs(A) @ np.abs(x)
            if np.any(excess > 1e-9 * scale):
                k = int(np.argmax(excess / scale))
                _fail(f"x violates row {k} of A_ub x <= b_ub by {float(excess[k])!r}: upper "
                      "is not a value of the constrained problem")
        out = self.evidence.verify(problem)
        bound, a, b, scale, seen = out[:5]
        slope_scale = out[5] if len(out) > 5 else 0.0
        if not math.isfinite(bound):
            _fail(f"the evidence proves no finite bound (recomputed {bound!r})")
        tol = rtol * max(1.0, abs(bound), scale)
        if self.a_bar is not None or self.b_bar is not None:
            a_bar = _finite_array(self.a_bar, "a_bar", (d,))
            if not isinstance(self.b_bar, numbers.Real) or not math.isfinite(self.b_bar):
                _fail(f"b_bar is {self.b_bar!r}, not a finite number")
            amax = float(np.max(np.abs(a), initial=0.0))
            slack = max(amax, problem.lam if risk else 0.0, slope_scale)
            if not float(np.max(np.abs(a_bar - a), initial=0.0)) <= 1e-7 * slack:
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
    r"""Collect the loss planes of a solver's oracle calls and turn them into a lower bound.

    Parameters
    ----------
    problem : RegularizedRisk
    inner : str
        Master-problem backend (see :func:`nsopt.inner.select`).
    max_planes : int
        Bundle capacity; when full, inactive planes are dropped and old ones aggregated,
        which keeps the bound valid (any convex combination of planes is a plane).

    Notes
    -----
    Use it as a listener of :class:`~nsopt.oracle.CountingOracle`; call :meth:`bound` when a
    bound is wanted (it warm-starts from the previous multipliers). Evidence: dual points for
    margin losses (n_planes x m floats), else query points (one d-vector per point a kept
    plane references; aggregates keep theirs, see :mod:`nsopt.bundle`).

    With an intercept (``problem.fit_intercept``) the master problem is that of
    :mod:`nsopt.inner.intercept` (the planes' intercept slopes against the proven box
    :math:`\|b\|_\infty \le B`); where there is none (a regularizer other than quadratic or
    L1, or no proven B) the certifier stays idle and proves nothing (``-inf``): the solver's
    own bound, if any, is all there is.
    """

    #: the certificate source of its bounds
    source = "planes"

    def __init__(self, problem, inner: str = "auto", max_planes: int = 100):
        from .bundle import PlaneBundle
        from .inner import select

        self.problem = problem
        self.best = (-math.inf, None)
        self.deadline = None
        self.idle = bool(getattr(problem, "fit_intercept", False)) and (
            problem.reg.inner is None or not math.isfinite(problem.intercept_bound()))
        if self.idle:
            return
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
        if self.idle or ev.loss_subgradient is None:
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

    def bound(self, final: bool = False) -> tuple[float, Evidence | None]:
        """Best lower bound so far with its evidence ``(lower, evidence)`` (``final``: the
        loop's last call; this certifier solves whenever a plane came in, final or not)."""
        if self.idle:
            return self.best
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

    Cost: one data pass for :math:`t(w)`, per round one pass, the Gram matrix
    :math:`B^T D B` (:math:`\sum_i n_i^2` flops, :math:`n_i` the nonzeros of row i in
    :math:`X_V`) and a Cholesky solve of the :math:`|V| \times |V|` system, then about a dozen
    evaluations of the conjugate for the scaling. The solver loop calls it only while its work,
    this call's included (estimated by the last call's), stays within ``budget`` of the run's
    (``budget >= 1``: at every iteration), a budget halved (down to 1/64 of it) each time its
    bound did not beat the others' and restored when it does: where the plane bounds are good
    anyway (mushrooms; BMRM's LP bound on L1 problems) it costs a few percent, not a quarter.
    Its linear algebra runs on one BLAS thread (``threadpoolctl`` when installed): on a busy
    2-core machine a threaded dot product over the m examples took 13 ms instead of 1.

    Work is counted in data passes (``clock="passes"``, the default: the run's are two per
    oracle call; the Gram matrix counts its flops over a pass's :math:`2\,\mathrm{nnz}(X)`,
    a conjugate evaluation one pass), so runs are reproducible bit for bit; ``clock="time"``
    counts seconds instead (opt-in: the result then depends on the machine's load).

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
        self._expected = 0.0 if clock == "time" else self._first_estimate()  # next call's work

    def _first_estimate(self) -> float:
        r"""The first call's work in data passes, before any is measured: ``t(w)`` and a plane
        per round, a Gram matrix over at most every column (:math:`\sum_i n_i^2` flops over a
        pass's :math:`2\,\mathrm{nnz}(X)`) per round, and the scaling's conjugates (12)."""
        data = getattr(self.problem.loss, "data", None)
        X = getattr(data, "X", None)
        gram = 0.0
        if sp.issparse(X):
            per_row = np.diff(X.tocsr().indptr).astype(np.float64)
            gram = float(per_row @ per_row) / (2.0 * max(X.nnz, 1))
        elif X is not None:
            gram = 0.5 * min(X.shape[1], self.max_columns)
        return 2.0 + self.rounds * (2.0 + gram) + 12.0

    @staticmethod
    def applies(problem) -> bool:
        from .problem import RegularizedRisk

        return (isinstance(problem, RegularizedRisk) and problem.reg.l1_ratio == 1.0
                and getattr(problem.loss, "dual_upper", None) is not None)

    def due(self, work: float) -> bool:
        """Whether a call now keeps the certifier's share of the run within its budget;
        ``work``: the run's data passes so far (``clock="passes"``) or its seconds
        (``clock="time"``)."""
        return self.budget >= 1.0 or self.spent + self._expected <= self.share * work

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
        with _one_blas_thread():
            lower, evidence, passes = self._from_point(w)
        if lower > self.best[0]:
            self.best = (lower, evidence)
        cost = (time.perf_counter() - t0) if self.clock == "time" else passes
        self.spent += cost
        self._expected = cost
        return self.best

    def _from_point(self, w):
        loss, lam = self.problem.loss, self.problem.lam
        X = loss.data.csc if loss.data.sparse else loss.data.X
        cy = loss.c * loss.y
        t = loss.dual_variables(w)
        a, _ = loss.dual_plane(t)
        passes = 2.0
        nnz = max(_nnz(X), 1)
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
            weight = cy * cy * D
            if sp.issparse(XV):
                per_row = np.bincount(XV.indices, minlength=XV.shape[0]).astype(np.float64)
                flops = float(per_row @ per_row)
                if XV.shape[0] * V.size <= _DENSE_GRAM_ENTRIES:
                    # B^T B with B = sqrt(weight) X_V dense (BLAS syrk): on a9a's 123 columns
                    # about half the time of scipy's sparse X_V^T (w X_V) and its format
                    # conversions (L1 logistic, 52 bounds: 13.5 s to 10.0 s CPU in all)
                    B = np.sqrt(weight)[:, None] * XV.toarray()
                    G = B.T @ B
                else:
                    G = (XV.T @ XV.multiply(weight[:, None])).toarray()
            else:
                G = XV.T @ (weight[:, None] * XV)
                flops = float(XV.shape[0]) * V.size * V.size
            eta = _solve_psd(np.asarray(G), e)
            # a(t + dt) = a - X_V^T (c y dt) = a_V - e on V
            t = np.clip(t + D * cy * np.asarray(XV @ eta).reshape(-1), 0.0, loss.dual_upper)
            a, _ = loss.dual_plane(t)
            passes += 2.0 + (flops + V.size ** 3 / 3.0) / (2.0 * nnz)
        amax = float(np.max(np.abs(a), initial=0.0))
        top = 1.0 if amax <= lam else lam / amax * (1.0 - 1e-12)
        calls = [0]

        def dual_value(s):
            calls[0] += 1
            return -float(np.sum(loss.c * loss.conjugate_terms(s * t)))

        tau = _argmax_concave(dual_value, top)
        passes += calls[0]
        if tau * amax > lam:  # rounding: stay inside the box
            tau = lam / amax * (1.0 - 1e-12)
        a_bar = tau * a                                   # a is linear in t
        b_bar = -float(loss.c @ loss.conjugate_terms(tau * t))
        return b_bar, DualPoint(tau * t, plane=(a_bar, b_bar)), passes


#: the dual-point certifier densifies the selected columns X_V for its Gram matrix up to this
#: many entries (64 MB of float64)
_DENSE_GRAM_ENTRIES = 1 << 23


def _argmax_concave(f, hi: float) -> float:
    """Maximiser of a concave ``f`` on ``[0, hi]`` (scipy's bounded Brent; the end ``hi``, where
    the maximiser often sits, is tried first: when ``f`` does not decrease towards it over the
    last 1e-9 of the interval, concavity puts the maximiser within that much of it)."""
    from scipy.optimize import minimize_scalar

    f_hi = f(hi)
    if f_hi >= f(hi * (1.0 - 1e-9)):
        return hi
    res = minimize_scalar(lambda x: -f(x), bounds=(0.0, hi), method="bounded",
                          options={"xatol": 1e-10 * max(hi, 1e-300)})
    return hi if f_hi >= -res.fun else float(res.x)


def _nnz(X) -> int:
    """Stored entries of the data (sparse) or its size (dense)."""
    return int(X.nnz) if sp.issparse(X) else int(np.size(X))


def _solve_psd(G: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``(G + r I)^{-1} e`` for a positive semidefinite ``G`` with a ridge ``r`` of 1e-12 of its
    mean diagonal: Cholesky, or least squares when the factorisation fails (rounding)."""
    import scipy.linalg

    n = e.size
    ridged = G + (1e-12 * np.trace(G) / n) * np.eye(n)
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(ridged, check_finite=False), e,
                                      check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
        return np.linalg.lstsq(ridged, e, rcond=None)[0]
