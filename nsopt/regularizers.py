r"""Regularizers known through their Fenchel conjugates.

Each regularizer :math:`\Omega` is an :class:`~nsopt.Oracle` (value, subgradient,
sup-subgradient, restriction to a line) and also gives its conjugate
:math:`\Omega^*(\mu) = \sup_w \langle w, \mu\rangle - \Omega(w)`, the dual connection
``conjugate_grad(mu)`` (a :math:`w` attaining the sup, :math:`w = \nabla\Omega^*(\mu)`), and
``curvature_bound``, the constant :math:`H^*` bounding :math:`\|\nabla^2\Omega^*\|` (spectral
norm) used by the theory of [TVSL10]_ (``None`` where none exists). ``inner`` names the family of
master-problem solver that fits the conjugate: ``"qp"`` (quadratic conjugate,
``metric(a) = M a``), ``"lp"`` (polyhedral) or ``"smooth"`` (differentiable conjugate).

Every pair satisfies Fenchel-Young, :math:`\Omega(w) + \Omega^*(\mu) \ge \langle w, \mu\rangle`
with equality at ``w = conjugate_grad(mu)``; ``tests/properties/test_regularizers.py`` checks it.

Conventions shared by all regularizers:

* ``value`` is ``+inf`` outside the domain (the entropies and :class:`KL`); ``conjugate`` is
  ``+inf`` where the sup is infinite (:class:`L1` outside the unit ``inf``-ball, overflow).
* ``conjugate`` and ``conjugate_grad`` accept any 1-D array-like of finite numbers and return a
  Python ``float`` and a new float64 array.
* ``restrict`` returns an exact line (:class:`QuadraticLine`, :class:`PiecewiseQuadraticLine`,
  with an exact ``minimize``) for :class:`L2`, :class:`QuadraticForm`, :class:`L1` and
  :class:`ElasticNet`; the others use :class:`~nsopt.oracle.GenericLine`.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010. Sec. 2.3 (Fenchel duality, Thm 2,
   Thm 4), Remark 6, App. B.1.
"""
from __future__ import annotations

import math
import numbers
import sys

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.special import logsumexp, softmax, xlogy

from ._validation import as_real_array, check_vector
from .oracle import LineFunction, Oracle, _check_side

__all__ = [
    "Regularizer",
    "QuadraticLine",
    "PiecewiseQuadraticLine",
    "L2",
    "Lp",
    "QuadraticForm",
    "L1",
    "ElasticNet",
    "NegEntropy",
    "KL",
]

#: Tolerance on ``|sum(w) - 1|`` for membership of the probability simplex.
SIMPLEX_TOL = 1e-9


# ----------------------------------------------------------------------------------------
# Base class
# ----------------------------------------------------------------------------------------
def scaled_conjugate(reg, a, lam: float) -> float:
    r""":math:`\lambda\Omega^*(-a/\lambda)` through ``reg.scaled_conjugate`` when ``reg`` has it
    (every :class:`Regularizer`), else through ``reg.conjugate`` (a duck-typed regularizer)."""
    own = getattr(reg, "scaled_conjugate", None)
    if own is not None:
        return float(own(a, lam))
    return lam * float(reg.conjugate(-np.asarray(a, dtype=np.float64) / lam))


def own_scaled_conjugate(reg, a: np.ndarray, lam: float) -> float:
    r""":func:`scaled_conjugate` of a vector the caller built itself: a float64 1-D array of
    ``reg``'s dimension (a master solver's :math:`\bar a = A^T\alpha`), which is not checked
    again. The checks belong at the boundaries (``reg.scaled_conjugate``, ``Certificate.check``);
    a master problem asks for this term two or three times an iteration, and the check of
    ``a`` cost more than the term itself (:class:`L2`: one dot product).

    A :class:`Regularizer` whose public ``scaled_conjugate`` is the base class's gives it by its
    ``_scaled_conjugate``; any other (a wrapper with its own ``scaled_conjugate``, a duck-typed
    regularizer) goes through :func:`scaled_conjugate`."""
    if getattr(type(reg), "scaled_conjugate", None) is Regularizer.scaled_conjugate:
        return float(reg._scaled_conjugate(a, lam))
    return scaled_conjugate(reg, a, lam)


class Regularizer(Oracle):
    """Base class: a convex regularizer with a computable conjugate.

    A subclass implements the :class:`~nsopt.Oracle` methods (``_value_and_subgradient`` and,
    where :math:`\\Omega` has kinks, ``_sup_subgradient``) and ``_conjugate(mu)``,
    ``_conjugate_grad(mu)`` on a checked float64 vector; the public ``conjugate`` and
    ``conjugate_grad`` check ``mu`` once and convert the result.

    Attributes
    ----------
    dim : int or None
        Fixed number of variables, or ``None`` when any dimension is accepted.
    lower_bound : float
        A lower bound on :math:`\\Omega` (``-inf`` when none is known without ``dim``).
    inner : {"qp", "lp", "smooth"}
        The master-problem family that fits the conjugate.
    curvature_bound : float or None
        :math:`H^*` with :math:`\\|\\nabla^2\\Omega^*(\\mu)\\|_2 \\le H^*` for all :math:`\\mu`
        (for a conjugate that is only :math:`C^1`, the Lipschitz constant of its gradient), or
        ``None`` when the Hessian is unbounded (or the conjugate is not smooth).

    The facts solvers ask about (instead of testing the class, as cvxpy's atoms answer
    ``is_pwl()``):

    strong_convexity : float
        The largest :math:`\\mu \\ge 0` with :math:`\\Omega - \\tfrac\\mu2\\|\\cdot\\|_2^2` convex
        (0: not strongly convex in the Euclidean norm).
    self_conjugate : bool
        :math:`\\Omega = \\Omega^* = \\tfrac12\\|\\cdot\\|_2^2`: the dual connection is the identity,
        :math:`w = \\mu` (closed forms of k-bundle, proximal BMRM and Nesterov's method).
    polyhedral : bool
        :math:`\\Omega` is polyhedral, so :math:`\\Omega^*` is an indicator and the master problem
        is an LP; aggregated cutting-plane models stall on it.
    l1_ratio : float or None
        :math:`\\Omega = r\\|w\\|_1 + \\tfrac{1-r}2\\|w\\|_2^2` with this :math:`r` (``None`` when
        :math:`\\Omega` is not of that form): 1 is the L1 norm (OWL-QN's setting, the L1
        dual-point certificate), 0 is L2.
    """

    dim = None
    lower_bound = 0.0
    inner: str = "smooth"
    curvature_bound: float | None = None
    strong_convexity: float = 0.0
    self_conjugate: bool = False
    polyhedral: bool = False
    l1_ratio: float | None = None

    # --- public API -----------------------------------------------------------------------
    def conjugate(self, mu) -> float:
        r"""The Fenchel conjugate :math:`\Omega^*(\mu) = \sup_w \langle w, \mu\rangle - \Omega(w)`
        (``+inf`` where the sup is infinite)."""
        return float(self._conjugate(self._dual_point(mu)))

    def scaled_conjugate(self, a, lam: float) -> float:
        r""":math:`\lambda\Omega^*(-a/\lambda)`, the conjugate term of the bound
        :math:`b - \lambda\Omega^*(-a/\lambda)` that a plane :math:`(a, b)` of the risk proves on
        :math:`\lambda\Omega + R` (Fenchel-Young). A regularizer may compute it without the
        d-vector :math:`-a/\lambda` (L2: :math:`\|a\|^2/(2\lambda)`): a subclass overrides
        ``_scaled_conjugate``, which receives ``a`` checked (as ``conjugate``'s ``mu``)."""
        return float(self._scaled_conjugate(self._dual_point(a, "a"), lam))

    def conjugate_grad(self, mu) -> np.ndarray:
        r"""The dual connection :math:`w = \nabla\Omega^*(\mu)`, a maximiser of
        :math:`\langle w, \mu\rangle - \Omega(w)` (a new float64 array)."""
        return np.asarray(self._conjugate_grad(self._dual_point(mu)), dtype=np.float64)

    def metric(self, a) -> np.ndarray:
        """``M a`` for a quadratic conjugate ``0.5 mu^T M mu`` (``inner == "qp"`` only)."""
        raise NotImplementedError(f"{type(self).__name__} has no quadratic conjugate (metric)")

    def _restrict(self, w, p):
        line = getattr(self, "_line", None)
        if line is None:
            return super()._restrict(w, p)
        s = max(float(p.max()), -float(p.min())) if p.size else 0.0  # max |p_i|, no temporary
        if s == 0.0 or 1e-100 <= s <= 1e100:
            return line(w, p)
        # |p| so small or large that p @ p under- or overflows: restrict along p / s
        return _RescaledLine(line(w, p / s), s)

    @property
    def gram_metric(self):
        """The metric of the master problem's Gram matrix ``A M A^T`` for a plane bundle:
        ``self.metric`` for a quadratic conjugate, None for the identity or when the master
        problem needs no Gram matrix."""
        return self.metric if self.inner == "qp" else None

    # --- what a subclass implements ---------------------------------------------------------
    def _conjugate(self, mu: np.ndarray) -> float:
        raise NotImplementedError(f"{type(self).__name__}.conjugate is not implemented")

    def _conjugate_grad(self, mu: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}.conjugate_grad is not implemented")

    def _scaled_conjugate(self, a: np.ndarray, lam: float) -> float:
        """``scaled_conjugate`` on a checked float64 vector ``a``."""
        return lam * float(self._conjugate(-a / lam))

    def _params(self) -> dict:
        """Constructor parameters shown by ``repr``."""
        return {}

    # --- helpers ----------------------------------------------------------------------------
    def _dual_point(self, mu, name: str = "mu") -> np.ndarray:
        return check_vector(mu, self.dim, name)

    def __repr__(self):
        args = ", ".join(f"{k}={v}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"


def _array_repr(a: np.ndarray, max_size: int = 25) -> str:
    if a.size > max_size:
        return f"<{'x'.join(map(str, a.shape))} array>"
    return np.array2string(a, separator=", ", precision=6, suppress_small=False).replace("\n", "")


def _real(value, name: str) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must be a number, got nan")
    return value


# ----------------------------------------------------------------------------------------
# Exact line functions
# ----------------------------------------------------------------------------------------
def _check_interval(lo, hi) -> tuple[float, float]:
    lo, hi = float(lo), float(hi)
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ValueError(f"minimize needs an interval lo <= hi, got [{lo}, {hi}]")
    return lo, hi


def _pick(a: float, b: float, lo: float, hi: float) -> float:
    """A minimiser on ``[lo, hi]`` of a convex function whose minimiser set on R is ``[a, b]``.

    ``a = b = +inf`` (``-inf``) means the function decreases for ever to the right (left).
    Clipping ``[a, b]`` to ``[lo, hi]`` gives the constrained minimiser set; return its smallest
    finite point (``0.0`` when it is the whole real line, ``+-inf`` when no minimiser exists).
    """
    x = min(max(a, lo), hi)
    if math.isfinite(x):
        return float(x)
    y = min(max(b, lo), hi)
    if math.isfinite(y):
        return float(y)
    return float(x) if x == y else 0.0


class _RescaledLine(LineFunction):
    """``phi(eta) = psi(s eta)``: a line along ``p`` given by the line ``psi`` along ``p / s``."""

    cheap_derivative = True

    def __init__(self, line: LineFunction, s: float):
        self.line, self.s = line, float(s)

    def value(self, eta):
        return self.line.value(self.s * eta)

    def derivative(self, eta, side=1):
        return self.s * self.line.derivative(self.s * eta, side)

    def breakpoints(self):
        bps = self.line.breakpoints()
        return None if bps is None else np.asarray(bps) / self.s

    @property
    def affine_between_breakpoints(self):
        return self.line.affine_between_breakpoints

    def affine_derivative(self):  # phi'(eta) = s psi'(s eta)
        a = self.line.affine_derivative()
        return None if a is None else (self.s * a[0], self.s * self.s * a[1])

    def minimize(self, lo=0.0, hi=math.inf):
        t = self.line.minimize(self.s * lo, self.s * hi)
        eta = t / self.s
        if math.isinf(eta) and math.isfinite(t):
            # a minimiser beyond the float range (t = 2 along p / s, s = 2.2e-309): phi
            # decreases up to the largest float, which is the best eta there is, not +-inf
            # ("no minimiser", as for a line unbounded below)
            eta = math.copysign(sys.float_info.max, eta)
        # (s hi) / s may round past hi: a clipped minimiser stays in [lo, hi]
        return min(max(eta, lo), hi)


class QuadraticLine(LineFunction):
    """``phi(eta) = c0 + c1 eta + 0.5 c2 eta^2`` with ``c2 >= 0``; exact minimisation.

    ``minimize(lo, hi)`` returns the clipped stationary point; when ``c2 == 0`` it returns the
    end of ``[lo, hi]`` towards which ``phi`` decreases (``+-inf`` if that end is infinite), and
    ``lo`` (or ``0.0`` on the whole line) when ``phi`` is constant.
    """

    cheap_derivative = True

    def __init__(self, c0: float, c1: float, c2: float):
        self.c0, self.c1, self.c2 = float(c0), float(c1), float(c2)
        if self.c2 < 0:
            raise ValueError(f"QuadraticLine needs c2 >= 0 (a convex parabola), got c2 = {self.c2}")

    def __repr__(self):
        return f"QuadraticLine(c0={self.c0!r}, c1={self.c1!r}, c2={self.c2!r})"

    def value(self, eta):
        return self.c0 + eta * (self.c1 + 0.5 * self.c2 * eta)

    def derivative(self, eta, side=1):
        _check_side(side)
        return self.c1 + self.c2 * eta

    def breakpoints(self):
        return np.empty(0)

    affine_between_breakpoints = True

    def affine_derivative(self):
        return self.c1, self.c2

    def minimize(self, lo=0.0, hi=math.inf):
        lo, hi = _check_interval(lo, hi)
        if self.c2 > 0:
            a = b = -self.c1 / self.c2
        elif self.c1 > 0:
            a = b = -math.inf
        elif self.c1 < 0:
            a = b = math.inf
        else:
            a, b = -math.inf, math.inf
        return _pick(a, b, lo, hi)


class PiecewiseQuadraticLine(LineFunction):
    r"""``phi(eta) = c0 + c1 eta + 0.5 c2 eta^2 + scale * sum_i |w_i + eta p_i|`` (``c2, scale >= 0``).

    The restriction of :class:`L1` and :class:`ElasticNet` to a line. Its derivative is
    piecewise linear and nondecreasing, with upward jumps of ``2 scale |p_i|`` at the
    breakpoints :math:`\eta_i = -w_i / p_i`; ``derivative`` treats a breakpoint within rounding
    (4 ulps, or a few subnormal spacings below the normal range) of ``eta`` as active, so the
    one-sided derivatives at a computed breakpoint have the right signs. ``minimize(lo, hi)``
    is exact: it sorts the breakpoints (``O(d log d)``), locates where the one-sided
    derivatives change sign and, on a flat stretch of minimisers, returns the smallest one in
    ``[lo, hi]``.
    """

    cheap_derivative = True

    def __init__(self, c0: float, c1: float, c2: float, scale: float, w: np.ndarray, p: np.ndarray):
        self.c1, self.c2, self.scale = float(c1), float(c2), float(scale)
        if self.c2 < 0 or self.scale < 0:
            raise ValueError(f"PiecewiseQuadraticLine needs c2 >= 0 and scale >= 0, got {c2}, {scale}")
        w = np.asarray(w, dtype=np.float64)
        p = np.asarray(p, dtype=np.float64)
        moving = p != 0
        # coordinates with p_i = 0 contribute the constant scale * |w_i|
        self.c0 = float(c0) + self.scale * float(np.abs(w[~moving]).sum())
        self.w, self.p = w[moving], p[moving]
        self._breaks = None

    def value(self, eta):
        return float(self.c0 + eta * (self.c1 + 0.5 * self.c2 * eta)
                     + self.scale * np.abs(self.w + eta * self.p).sum())

    def derivative(self, eta, side=1):
        side = _check_side(side)
        step = eta * self.p
        z = self.w + step
        # a kink within rounding of eta counts as active: at a computed breakpoint
        # eta = -w_i / p_i, w_i + eta p_i is rarely exactly 0. Below the normal range the
        # rounding is absolute: eta (e.g. 2.2e-313 / 1.8) is off by up to half a subnormal
        # spacing u, which p_i scales, and the product and the sum add u / 2 each
        tiny = np.finfo(np.float64).smallest_subnormal
        at_kink = np.abs(z) <= (4 * np.finfo(np.float64).eps * (np.abs(self.w) + np.abs(step))
                                + (np.abs(self.p) + 1.0) * tiny)
        s = np.where(at_kink, side * np.sign(self.p), np.sign(z))
        return float(self.c1 + self.c2 * eta + self.scale * (s @ self.p))

    def _first_nonnegative(self, c1: float, t: np.ndarray, jumps: np.ndarray) -> float:
        """``inf {eta : phi'(eta+) >= 0}`` for slope ``c1``, sorted breakpoints ``t`` and jumps."""
        c2 = self.c2
        # slope offsets on the intervals (-inf, t0), (t0, t1), ..., (t_{n-1}, inf)
        a = (c1 - 0.5 * jumps.sum()) + np.concatenate(([0.0], np.cumsum(jumps)))
        # right derivative at each breakpoint (monotone); c2 = 0 leaves no 0 * inf at a
        # breakpoint beyond the float range
        right = a[1:] + (c2 * t if c2 > 0 else 0.0)
        hits = np.flatnonzero(right >= 0)
        k = int(hits[0]) if hits.size else t.size
        left_end = t[k - 1] if k > 0 else -math.inf
        right_end = t[k] if k < t.size else math.inf
        s0 = a[k]                        # phi'(eta) = s0 + c2 eta on (left_end, right_end)
        if c2 > 0:
            return float(min(max(-s0 / c2, left_end), right_end))
        return float(left_end if s0 >= 0 else right_end)

    def breakpoints(self):
        with np.errstate(over="ignore"):  # |w_i / p_i| > 1.8e308 (p_i subnormal): +-inf
            return np.sort(-self.w / self.p)

    def minimize(self, lo=0.0, hi=math.inf):
        lo, hi = _check_interval(lo, hi)
        if self._breaks is None:
            with np.errstate(over="ignore"):  # as in breakpoints: no finite eta reaches +-inf
                t = -self.w / self.p
            order = np.argsort(t, kind="stable")
            self._breaks = (t[order], 2.0 * self.scale * np.abs(self.p[order]))
        t, jumps = self._breaks
        a = self._first_nonnegative(self.c1, t, jumps)
        # the right end of the minimiser set is the left end for phi(-eta)
        b = -self._first_nonnegative(-self.c1, -t[::-1], jumps[::-1])
        return _pick(a, b, lo, hi)


# ----------------------------------------------------------------------------------------
# Quadratic regularizers
# ----------------------------------------------------------------------------------------
class L2(Regularizer):
    r"""Squared Euclidean norm, the default regularizer.

    .. math:: \Omega(w) = \tfrac12\|w\|_2^2, \qquad \Omega^*(\mu) = \tfrac12\|\mu\|_2^2,
              \qquad \nabla\Omega^*(\mu) = \mu

    Notes
    -----
    Domain :math:`\mathbb{R}^d`. :math:`H^* = 1` exactly ([TVSL10]_ Remark 6). ``inner = "qp"``
    with ``metric(a) = a``; ``restrict`` gives an exact :class:`QuadraticLine`.

    Examples
    --------
    >>> from nsopt.regularizers import L2
    >>> L2().value([3.0, 4.0]), L2().conjugate([3.0, 4.0])
    (12.5, 12.5)
    """

    inner = "qp"
    curvature_bound = 1.0
    strong_convexity = 1.0
    self_conjugate = True
    l1_ratio = 0.0

    def _value(self, w):
        return 0.5 * float(w @ w)

    def _value_and_subgradient(self, w):
        # the gradient is w itself: a read-only w (a solver's frozen iterate) is shared, not
        # copied (8 MB at d = 10^6)
        return 0.5 * float(w @ w), (w if not w.flags.writeable else w.copy())

    def _line(self, w, p):
        return QuadraticLine(0.5 * float(w @ w), float(w @ p), float(p @ p))

    def _conjugate(self, mu):
        return 0.5 * float(mu @ mu)

    def _scaled_conjugate(self, a, lam: float) -> float:
        return float(a @ a) / (2.0 * lam)

    def _conjugate_grad(self, mu):
        return mu.copy()

    def metric(self, a):
        """``M a`` with ``M = I``: returns ``a`` as a float64 array (1-D or 2-D)."""
        return np.asarray(a, dtype=np.float64)

    gram_metric = None  # the identity: the bundle keeps no second copy of the planes


def _norm(x: np.ndarray, p: float) -> float:
    """``||x||_p`` computed with scaling (no overflow or underflow of ``|x_i|^p``)."""
    if x.size == 0:
        return 0.0
    ax = np.abs(x)
    m = float(ax.max())
    if m == 0.0 or not math.isfinite(m):
        return m
    return m * float(np.sum((ax / m) ** p)) ** (1.0 / p)


def _norm_grad(x: np.ndarray, p: float) -> tuple[float, np.ndarray]:
    r"""``(||x||_p, grad 0.5 ||x||_p^2)``, the gradient being
    :math:`\mathrm{sign}(x_i)|x_i|^{p-1}\|x\|_p^{2-p}
    = \mathrm{sign}(x_i)(|x_i|/\|x\|_p)^{p-1}\|x\|_p`."""
    n = _norm(x, p)
    if n == 0.0:
        return 0.0, np.zeros_like(x)
    return n, np.sign(x) * (np.abs(x) / n) ** (p - 1.0) * n


class Lp(Regularizer):
    r"""Squared :math:`\ell_p` norm, :math:`1 < p < \infty`.

    .. math:: \Omega(w) = \tfrac12\|w\|_p^2, \qquad \Omega^*(\mu) = \tfrac12\|\mu\|_q^2,
              \qquad \frac1p + \frac1q = 1,

    .. math:: \nabla\Omega^*(\mu)_i = \mathrm{sign}(\mu_i)\,|\mu_i|^{q-1}\,\|\mu\|_q^{2-q}
              \quad (0 \text{ at } \mu = 0).

    Parameters
    ----------
    p : float, 1 < p < inf
        The norm's exponent; ``p = 2`` is :class:`L2`.

    Attributes
    ----------
    q : float
        The dual exponent ``p / (p - 1)``.

    Notes
    -----
    Domain :math:`\mathbb{R}^d`. :math:`\Omega` is differentiable everywhere, with gradient
    :math:`\mathrm{sign}(w_i)|w_i|^{p-1}\|w\|_p^{2-p}` (``0`` at ``w = 0``), so
    ``sup_subgradient`` is the plain directional derivative. Both gradients are computed as
    :math:`\mathrm{sign}(x_i)(|x_i|/\|x\|)^{r-1}\|x\|`, which neither overflows nor divides by
    a power of a small norm.

    Curvature: for :math:`q \ge 2` (:math:`p \le 2`), :math:`\tfrac12\|\mu\|_q^2` is
    :math:`(q-1)`-smooth with respect to :math:`\|\cdot\|_q`, and since
    :math:`\|v\|_2 \le \|v\|_p` and :math:`\|v\|_q \le \|v\|_2` its gradient is
    :math:`(q-1)`-Lipschitz in the Euclidean norm: ``curvature_bound = q - 1`` ([TVSL10]_
    App. B.1). For :math:`q < 2` (:math:`p > 2`) the Hessian has entries of order
    :math:`|\mu_i|^{q-2}\|\mu\|_q^{2-q}`, unbounded as :math:`\mu_i \to 0` with
    :math:`\mu \ne 0`: no :math:`H^*` exists and ``curvature_bound`` is ``None``.
    ``inner = "smooth"``.

    Examples
    --------
    >>> from nsopt.regularizers import Lp
    >>> reg = Lp(3)
    >>> reg.q
    1.5
    >>> round(reg.value([1.0, -2.0]), 6)  # 0.5 * 9 ** (2 / 3)
    2.163374
    """

    inner = "smooth"

    def __init__(self, p: float):
        p = _real(p, "p")
        if not (1.0 < p < math.inf):
            hint = ""
            if p == 1.0:
                hint = "; 0.5 ||w||_1^2 is not smooth: for the L1 norm use L1()"
            elif p == math.inf:
                hint = "; 0.5 ||w||_inf^2 is not smooth and not supported"
            raise ValueError(f"Lp needs 1 < p < inf, got p = {p}{hint}")
        self.p = p
        self.q = p / (p - 1.0)
        self.curvature_bound = self.q - 1.0 if self.q >= 2.0 else None
        # 0.5 ||w||_p^2 is (p - 1)-strongly convex in ||.||_p, and ||.||_p >= ||.||_2 for p <= 2
        self.strong_convexity = p - 1.0 if p <= 2.0 else 0.0

    def _params(self):
        return {"p": repr(self.p)}

    def _value(self, w):
        return 0.5 * _norm(w, self.p) ** 2

    def _value_and_subgradient(self, w):
        n, g = _norm_grad(w, self.p)
        return 0.5 * n * n, g

    def _conjugate(self, mu):
        return 0.5 * _norm(mu, self.q) ** 2

    def _conjugate_grad(self, mu):
        return _norm_grad(mu, self.q)[1]


class QuadraticForm(Regularizer):
    r"""Quadratic form of a symmetric positive definite matrix.

    .. math:: \Omega(w) = \tfrac12 w^\top Q w, \qquad \Omega^*(\mu) = \tfrac12\mu^\top Q^{-1}\mu,
              \qquad \nabla\Omega^*(\mu) = Q^{-1}\mu

    Parameters
    ----------
    Q : (d, d) array_like or scipy.sparse matrix
        Symmetric positive definite (checked: symmetry to a relative 1e-10, definiteness by a
        Cholesky factorization). It is copied and symmetrized as ``(Q + Q^T) / 2``.

    Attributes
    ----------
    Q : ndarray
        The (symmetrized) matrix.
    dim : int
        ``Q.shape[0]``; points of another length are rejected.
    curvature_bound : float
        :math:`H^* = 1 / \lambda_{\min}(Q)`, the largest eigenvalue of :math:`Q^{-1}`.

    Notes
    -----
    Domain :math:`\mathbb{R}^d`. :math:`Q^{-1}` is applied through the Cholesky factor
    (``scipy.linalg.cho_solve``), never formed. ``inner = "qp"`` with ``metric(a) = Q^{-1} a``;
    ``restrict`` gives an exact :class:`QuadraticLine`. Convergence depends on the extreme
    eigenvalues of :math:`Q` and :math:`Q^{-1}` ([TVSL10]_ Remark 6).

    Examples
    --------
    >>> from nsopt.regularizers import QuadraticForm
    >>> reg = QuadraticForm([[2.0, 0.0], [0.0, 4.0]])
    >>> reg.value([1.0, 1.0]), reg.conjugate([2.0, 4.0]), reg.curvature_bound
    (3.0, 3.0, 0.5)
    """

    inner = "qp"

    def __init__(self, Q):
        if sp.issparse(Q):
            Q = Q.toarray()
        Q = as_real_array(Q, "Q", what="a square matrix of real numbers", copy=True)
        if Q.ndim != 2 or Q.shape[0] != Q.shape[1] or Q.shape[0] == 0:
            raise ValueError(f"Q must be a non-empty square (d, d) matrix, got shape {Q.shape}")
        if not np.isfinite(Q).all():
            raise ValueError("Q contains NaN or inf")
        asym = np.abs(Q - Q.T)
        scale = float(np.abs(Q).max())
        if asym.max() > 1e-10 * scale:
            i, j = np.unravel_index(int(np.argmax(asym)), Q.shape)
            raise ValueError(
                f"Q is not symmetric: Q[{i}, {j}] = {float(Q[i, j])!r} but "
                f"Q[{j}, {i}] = {float(Q[j, i])!r}; "
                "0.5 w^T Q w only sees (Q + Q.T) / 2, so pass that if it is what you mean"
            )
        Q = 0.5 * (Q + Q.T)
        try:
            self._cho = scipy.linalg.cho_factor(Q, lower=True, check_finite=False)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                "Q is not positive definite (its Cholesky factorization failed); a singular or "
                "indefinite Q has no finite conjugate: add a ridge, e.g. Q + 1e-6 * np.eye(d)"
            ) from exc
        lam_min = float(scipy.linalg.eigvalsh(Q, subset_by_index=[0, 0], check_finite=False)[0])
        if not lam_min > 0:
            raise ValueError(
                f"Q is not positive definite (smallest eigenvalue {lam_min:.3g}); "
                "add a ridge, e.g. Q + 1e-6 * np.eye(d)"
            )
        self.Q = Q
        self.dim = Q.shape[0]
        self.curvature_bound = 1.0 / lam_min
        self.strong_convexity = float(lam_min)

    def _params(self):
        return {"Q": _array_repr(self.Q)}

    def _value(self, w):
        return 0.5 * float(w @ (self.Q @ w))

    def _value_and_subgradient(self, w):
        g = self.Q @ w
        return 0.5 * float(w @ g), g

    def _line(self, w, p):
        Qp = self.Q @ p
        return QuadraticLine(0.5 * float(w @ (self.Q @ w)), float(w @ Qp), max(float(p @ Qp), 0.0))

    def _conjugate(self, mu):
        return 0.5 * float(mu @ self._solve(mu))

    def _conjugate_grad(self, mu):
        return self._solve(mu)

    def _solve(self, a):
        return scipy.linalg.cho_solve(self._cho, a, check_finite=False)

    def metric(self, a):
        """``Q^{-1} a`` for ``a`` of shape ``(d,)`` or ``(d, k)`` (columns solved at once)."""
        a = np.asarray(a, dtype=np.float64)
        if a.shape[:1] != (self.dim,):
            raise ValueError(f"metric needs an array with {self.dim} rows, got shape {a.shape}")
        return self._solve(a)


# ----------------------------------------------------------------------------------------
# Polyhedral and mixed regularizers
# ----------------------------------------------------------------------------------------
def _sup_sign(w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The element of the subdifferential of ||.||_1 at ``w`` steepest along ``p``."""
    return np.where(w != 0, np.sign(w), np.sign(p))


class L1(Regularizer):
    r"""The L1 norm.

    .. math:: \Omega(w) = \|w\|_1, \qquad
              \Omega^*(\mu) = \begin{cases} 0 & \|\mu\|_\infty \le 1 \\ +\infty & \text{else}\end{cases}

    Notes
    -----
    Domain :math:`\mathbb{R}^d`. The conjugate is the indicator of the unit
    :math:`\infty`-ball: it is not smooth, ``curvature_bound`` is ``None`` and the theory of
    [TVSL10]_ Thm 4 does not apply; the master problem is an LP (``inner = "lp"``, [TVSL10]_
    App. C). ``conjugate_grad`` returns ``0``, which attains the sup wherever the conjugate is
    finite (it is a subgradient of the indicator there).

    The subdifferential at :math:`w_i = 0` is :math:`[-1, 1]`, so
    :math:`\Omega'(w; p) = \sum_{w_i \ne 0} \mathrm{sign}(w_i) p_i + \sum_{w_i = 0} |p_i|`,
    attained by :math:`g_i = \mathrm{sign}(p_i)` on the zeros. ``restrict`` gives a
    :class:`PiecewiseQuadraticLine` with an exact ``minimize``.

    Examples
    --------
    >>> from nsopt.regularizers import L1
    >>> L1().sup_subgradient([0.0, 2.0], [-3.0, 1.0])[0]
    4.0
    >>> L1().conjugate([0.5, -1.0]), L1().conjugate([0.5, -1.5])
    (0.0, inf)
    """

    inner = "lp"
    polyhedral = True
    l1_ratio = 1.0
    curvature_bound = None

    def _value(self, w):
        return float(np.abs(w).sum())

    def _value_and_subgradient(self, w):
        return float(np.abs(w).sum()), np.sign(w)

    def _sup_subgradient(self, w, p):
        g = _sup_sign(w, p)
        return float(g @ p), g

    def _line(self, w, p):
        return PiecewiseQuadraticLine(0.0, 0.0, 0.0, 1.0, w, p)

    def _conjugate(self, mu):
        return 0.0 if (mu.size == 0 or float(np.max(np.abs(mu))) <= 1.0) else math.inf

    def _conjugate_grad(self, mu):
        return np.zeros_like(mu)


class ElasticNet(Regularizer):
    r"""Elastic net: a mix of the L1 norm and the squared L2 norm.

    .. math:: \Omega(w) = r\|w\|_1 + \frac{1-r}{2}\|w\|_2^2, \qquad
              \Omega^*(\mu) = \frac{1}{2(1-r)}\sum_i \max(|\mu_i| - r, 0)^2,

    .. math:: \nabla\Omega^*(\mu) = \frac{1}{1-r}\,\mathrm{sign}(\mu)\max(|\mu| - r, 0)
              \quad \text{(soft thresholding at } r\text{)}.

    Parameters
    ----------
    l1_ratio : float in [0, 1), default 0.5
        :math:`r`, the weight of the L1 part. ``0`` is :class:`L2`; ``1`` (pure L1) is rejected:
        use :class:`L1`, whose conjugate is not smooth.

    Notes
    -----
    Domain :math:`\mathbb{R}^d`. At :math:`w_i = 0` the subdifferential is
    :math:`r[-1, 1]`, handled by ``sup_subgradient`` as in :class:`L1`. The conjugate is
    differentiable with a :math:`1/(1-r)`-Lipschitz gradient (coordinate-wise, the soft
    threshold is 1-Lipschitz), so ``inner = "smooth"`` and ``curvature_bound = 1 / (1 - r)``
    (the conjugate is :math:`C^1`, not :math:`C^2`: the bound is on the gradient's Lipschitz
    constant, which is what [TVSL10]_ Thm 4 uses). ``restrict`` gives a
    :class:`PiecewiseQuadraticLine` with an exact ``minimize``. Not in [TVSL10]_; the conjugate
    follows coordinate-wise from :math:`\sup_t t m - r|t| - \tfrac{1-r}{2}t^2`.

    Examples
    --------
    >>> from nsopt.regularizers import ElasticNet
    >>> reg = ElasticNet(0.5)
    >>> reg.conjugate_grad([2.0, 0.25, -1.0])
    array([ 3.,  0., -1.])
    """

    inner = "smooth"

    def __init__(self, l1_ratio: float = 0.5):
        r = _real(l1_ratio, "l1_ratio")
        if r == 1.0:
            raise ValueError(
                "l1_ratio = 1 is the pure L1 norm, whose conjugate is not smooth: use L1() instead "
                "(ElasticNet needs 0 <= l1_ratio < 1)"
            )
        if not (0.0 <= r < 1.0):
            raise ValueError(f"ElasticNet needs 0 <= l1_ratio < 1, got l1_ratio = {r}")
        self.l1_ratio = r
        self.strong_convexity = 1.0 - r
        self.curvature_bound = 1.0 / (1.0 - r)

    def _params(self):
        return {"l1_ratio": repr(self.l1_ratio)}

    def _value(self, w):
        r = self.l1_ratio
        return r * float(np.abs(w).sum()) + 0.5 * (1.0 - r) * float(w @ w)

    def _value_and_subgradient(self, w):
        r = self.l1_ratio
        return self._value(w), r * np.sign(w) + (1.0 - r) * w

    def _sup_subgradient(self, w, p):
        r = self.l1_ratio
        g = r * _sup_sign(w, p) + (1.0 - r) * w
        return float(g @ p), g

    def _line(self, w, p):
        c = 1.0 - self.l1_ratio
        return PiecewiseQuadraticLine(0.5 * c * float(w @ w), c * float(w @ p), c * float(p @ p),
                                      self.l1_ratio, w, p)

    def _conjugate(self, mu):
        excess = np.maximum(np.abs(mu) - self.l1_ratio, 0.0)
        return float(excess @ excess) / (2.0 * (1.0 - self.l1_ratio))

    def _conjugate_grad(self, mu):
        excess = np.maximum(np.abs(mu) - self.l1_ratio, 0.0)
        return np.sign(mu) * excess / (1.0 - self.l1_ratio)


# ----------------------------------------------------------------------------------------
# Entropies
# ----------------------------------------------------------------------------------------
class _Entropy(Regularizer):
    r"""Shared code of :class:`NegEntropy` and :class:`KL`:
    :math:`\Omega(w) = \sum_i w_i \log w_i - \langle w, \log \pi\rangle`, on the nonnegative
    orthant or (``_simplex``) on the probability simplex; ``+inf`` outside."""

    finite = False  # +inf outside the domain

    inner = "smooth"
    _simplex: bool = False
    _log_prior: np.ndarray | float = 0.0

    def _in_domain(self, w: np.ndarray) -> bool:
        if w.size and float(w.min()) < 0.0:
            return False
        return not self._simplex or abs(float(w.sum()) - 1.0) <= SIMPLEX_TOL

    def _domain_text(self) -> str:
        if self._simplex:
            return f"the probability simplex (w >= 0, |sum(w) - 1| <= {SIMPLEX_TOL:g})"
        return "the nonnegative orthant (w >= 0)"

    def _value(self, w):
        if not self._in_domain(w):
            return math.inf
        return float(xlogy(w, w).sum() - np.sum(w * self._log_prior))

    def _interior_point(self, w: np.ndarray) -> None:
        """Raise unless ``w`` is where the subdifferential is non-empty (``w > 0`` in the domain)."""
        name = type(self).__name__
        if not self._in_domain(w):
            raise ValueError(
                f"w is outside the domain of {name}, {self._domain_text()}: "
                f"the value is +inf and there is no subgradient"
            )
        zeros = np.flatnonzero(w == 0)
        if zeros.size:
            raise ValueError(
                f"w[{zeros[0]}] = 0: {name} has no subgradient where a coordinate is 0 (the "
                "derivative log w_i + 1 tends to -inf); keep w strictly positive, as "
                "conjugate_grad(mu) does"
            )

    def _value_and_subgradient(self, w):
        self._interior_point(w)
        logw = np.log(w)
        g = logw + 1.0 - self._log_prior
        return float(w @ logw - np.sum(w * self._log_prior)), g

    def _sup_subgradient(self, w, p):
        g = self._value_and_subgradient(w)[1]
        if self._simplex and abs(float(p.sum())) > SIMPLEX_TOL * max(1.0, float(np.abs(p).sum())):
            # p leaves the affine hull of the simplex: the subdifferential is g + R * 1 and
            # sup_c <g + c 1, p> = +inf; no element attains it, g is returned
            return math.inf, g
        return float(g @ p), g


class NegEntropy(_Entropy):
    r"""Negative entropy :math:`\Omega(w) = \sum_i w_i \log w_i` (with :math:`0 \log 0 = 0`).

    Unnormalized (default), on the nonnegative orthant :math:`w \ge 0`:

    .. math:: \Omega^*(\mu) = \sum_i e^{\mu_i - 1}, \qquad \nabla\Omega^*(\mu) = e^{\mu - 1}.

    Normalized, on the probability simplex :math:`\{w \ge 0, \sum_i w_i = 1\}`:

    .. math:: \Omega^*(\mu) = \log\sum_i e^{\mu_i}, \qquad
              \nabla\Omega^*(\mu) = \mathrm{softmax}(\mu).

    Parameters
    ----------
    normalized : bool, default False
        Restrict :math:`\Omega` to the probability simplex.

    Notes
    -----
    ``value`` is ``+inf`` outside the domain; simplex membership allows
    ``|sum(w) - 1| <= 1e-9`` (``SIMPLEX_TOL``) and no negative entry. The subgradient
    :math:`\log w + 1` exists only where every :math:`w_i > 0`: ``subgradient`` and
    ``sup_subgradient`` raise ``ValueError`` at a point with a zero or outside the domain.
    ``conjugate_grad`` is strictly positive (barring underflow), so dual iterates are fine. On
    the simplex the subdifferential is :math:`\log w + 1 + \mathbb{R}\mathbf{1}`:
    ``sup_subgradient`` returns ``+inf`` for a direction with ``sum(p) != 0`` (it leaves the
    simplex) and the plain directional derivative for a tangent one. The conjugates are computed
    stably (``logsumexp``, ``softmax``); the unnormalized one overflows to ``+inf`` for
    :math:`\mu_i \gtrsim 710`.

    ``lower_bound`` is ``-inf`` because the bound depends on the dimension, which a regularizer
    does not fix: :math:`\Omega \ge -d/e` on the orthant and :math:`\Omega \ge -\log d` on the
    simplex.

    Curvature: unnormalized, :math:`\nabla^2\Omega^* = \mathrm{diag}(e^{\mu - 1})` is unbounded,
    ``curvature_bound = None``. Normalized, :math:`\nabla^2\Omega^*(\mu) = \mathrm{diag}(s) -
    ss^\top` with :math:`s = \mathrm{softmax}(\mu)`, so :math:`v^\top\nabla^2\Omega^* v` is the
    variance of :math:`v` under :math:`s`, at most :math:`\|v\|_\infty^2 \le \|v\|_2^2`:
    ``curvature_bound = 1.0``, the :math:`\|\cdot\|_\infty`-based bound of [TVSL10]_ App. B.1,
    which holds a fortiori in the Euclidean norm. ``inner = "smooth"``.

    Erratum: [TVSL10]_ prints :math:`\Omega^*(\mu) = \sum_i e^{\mu_i}` for the unnormalized
    entropy; that is the conjugate of :math:`\sum_i (w_i\log w_i - w_i)`, not of
    :math:`\sum_i w_i \log w_i` (erratum E6). The corrected pair is used here,
    tested in ``tests/properties/test_regularizers.py::test_erratum_E6_entropy_conjugate``.

    Examples
    --------
    >>> import numpy as np
    >>> from nsopt.regularizers import NegEntropy
    >>> reg = NegEntropy(normalized=True)
    >>> reg.conjugate_grad([0.0, 0.0, np.log(2.0)])
    array([0.25, 0.25, 0.5 ])
    >>> reg.value([0.5, 0.7])
    inf
    """

    def __init__(self, normalized: bool = False):
        if not isinstance(normalized, (bool, np.bool_)):
            raise TypeError(f"normalized must be True or False, got {normalized!r}")
        self.normalized = bool(normalized)
        self._simplex = self.normalized
        self.lower_bound = -math.inf
        self.curvature_bound = 1.0 if self.normalized else None
        # on the simplex: 1-strongly convex in ||.||_1 (Pinsker), so in ||.||_2 as well
        self.strong_convexity = 1.0 if self.normalized else 0.0

    def _params(self):
        return {"normalized": repr(self.normalized)}

    def _conjugate(self, mu):
        if self.normalized:
            return float(logsumexp(mu)) if mu.size else -math.inf
        with np.errstate(over="ignore"):
            return float(np.exp(mu - 1.0).sum())

    def _conjugate_grad(self, mu):
        if self.normalized:
            return softmax(mu) if mu.size else mu.copy()
        with np.errstate(over="ignore"):
            return np.exp(mu - 1.0)


class KL(_Entropy):
    r"""Kullback-Leibler divergence to a prior on the probability simplex.

    .. math:: \Omega(w) = \sum_i w_i \log\frac{w_i}{\pi_i}, \qquad
              \Omega^*(\mu) = \log\sum_i \pi_i e^{\mu_i}, \qquad
              \nabla\Omega^*(\mu) = \frac{\pi \odot e^{\mu}}{\sum_j \pi_j e^{\mu_j}}

    Parameters
    ----------
    prior : (d,) array_like
        :math:`\pi`, a probability vector with every entry > 0 (sum 1 within 1e-9).

    Attributes
    ----------
    prior : ndarray
    dim : int
        ``len(prior)``.

    Notes
    -----
    Domain: the probability simplex (``|sum(w) - 1| <= 1e-9``, no negative entry), ``+inf``
    outside; subgradient :math:`\log(w / \pi) + 1` where every :math:`w_i > 0`, with the same
    conventions as ``NegEntropy(normalized=True)`` (which is ``KL`` to the uniform prior minus
    :math:`\log d`). ``lower_bound = 0`` (Gibbs' inequality). The conjugate and its gradient are
    computed as ``logsumexp(mu + log(prior))`` and ``softmax(mu + log(prior))``. Its Hessian is a
    covariance matrix under the tilted distribution, so ``curvature_bound = 1.0`` as for the
    normalized entropy. ``inner = "smooth"``. Not in [TVSL10]_.

    Examples
    --------
    >>> from nsopt.regularizers import KL
    >>> reg = KL([0.25, 0.75])
    >>> reg.value([0.25, 0.75]), round(reg.conjugate([0.0, 0.0]), 12)
    (0.0, 0.0)
    """

    _simplex = True
    curvature_bound = 1.0

    def __init__(self, prior):
        prior = check_vector(prior, None, "prior", copy=True)
        if prior.size == 0:
            raise ValueError("prior must have at least one entry")
        if (prior <= 0).any():
            i = int(np.flatnonzero(prior <= 0)[0])
            raise ValueError(
                f"prior must be strictly positive (a probability vector), but prior[{i}] = "
                f"{float(prior[i])!r}; a zero prior entry forces w_i = 0: drop that coordinate"
            )
        total = float(prior.sum())
        if abs(total - 1.0) > SIMPLEX_TOL:
            raise ValueError(
                f"prior must be a probability vector summing to 1, got sum {total!r}; "
                "pass prior / prior.sum()"
            )
        self.prior = prior
        self._log_prior = np.log(prior)
        self.dim = prior.shape[0]
        self.lower_bound = 0.0
        self.strong_convexity = 1.0  # on the simplex (Pinsker)

    def _params(self):
        return {"prior": _array_repr(self.prior)}

    def _conjugate(self, mu):
        return float(logsumexp(mu + self._log_prior))

    def _conjugate_grad(self, mu):
        return softmax(mu + self._log_prior)
