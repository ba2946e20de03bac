r"""The oracle protocol: what a solver may ask about a convex function.

An :class:`Oracle` answers four questions about a convex function :math:`f: \mathbb{R}^d \to
\mathbb{R}`:

* ``value(w)``: :math:`f(w)`;
* ``subgradient(w)``: any :math:`g \in \partial f(w)`;
* ``sup_subgradient(w, p)``: the directional derivative
  :math:`f'(w; p) = \sup_{g \in \partial f(w)} \langle g, p \rangle` and a :math:`g` attaining it;
* ``restrict(w, p)``: the line function :math:`\varphi(\eta) = f(w + \eta p)`.

Optionally, ``minorants(w)``: extra affine minorants of :math:`f` found at ``w`` (global, not
only planes at ``w``), which cutting-plane models add beside the subgradient's plane (several
planes per oracle call); ``None`` (the default) when none is offered.

A subclass implements ``_value_and_subgradient`` (the hot path) and may override ``_value``,
``_sup_subgradient`` and ``_restrict``; the public methods check their arguments once and call
the private ones (the pattern of ``scipy.sparse.linalg.LinearOperator``).

Oracles compose: ``f + g``, ``c * f`` (c >= 0), ``f.compose(A, b)`` for :math:`f(Aw + b)` and
:class:`Max` for the pointwise maximum; each composition has the exact subdifferential calculus
of convex analysis, so ``sup_subgradient`` and ``restrict`` stay correct.
"""
from __future__ import annotations

import math
import struct
import weakref
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from ._validation import (check_dim, check_lower_bound, check_vector, user_pair,
                          user_scalar, user_vector)

__all__ = [
    "Oracle",
    "LineFunction",
    "FunctionOracle",
    "Sum",
    "Scaled",
    "Composed",
    "Max",
    "CountingOracle",
    "Evaluation",
    "GenericLine",
    "NonConvexError",
    "OracleNumericalError",
]


class NonConvexError(ValueError):
    """Observed values contradict convexity (or a stated lower bound) beyond rounding.

    Attributes
    ----------
    evidence : dict
        The points and values that prove it: for a plane, ``w1, f1, g1`` (the plane
        ``f(v) >= f1 + <g1, v - w1>``) and ``w2, f2`` (a value below it); for a directional
        derivative, ``w, p, sup`` and ``g`` with ``<g, p> > sup``; for a lower bound, ``w, f``
        and ``lower_bound``.
    """

    def __init__(self, message: str, evidence: dict):
        super().__init__(message)
        self.evidence = evidence


class OracleNumericalError(FloatingPointError):
    """The oracle returned NaN, -inf, +inf where the function is finite everywhere, or a
    non-finite subgradient. ``point`` is where, ``what`` says which answer."""

    def __init__(self, message: str, point: np.ndarray, what: str):
        super().__init__(message)
        self.point, self.what = point, what


class Evaluation:
    r"""One oracle call at ``w``: the function value and a subgradient.

    For a :class:`~nsopt.RegularizedRisk` the loss part is reported too (``loss_value``,
    ``loss_subgradient``): it is a cutting plane of the risk, which certificates collect. A
    margin loss (``loss.dual_upper`` set) also reports ``loss_dual``, the dual point :math:`t`
    (one entry per example) whose ``loss.dual_plane(t)`` is that plane: the evidence
    :meth:`~nsopt.Certificate.check` verifies.

    ``subgradient`` may be given as its parts, ``parts=(lam, s)``: the subgradient is then
    :math:`\lambda s + a` with :math:`a` = ``loss_subgradient``, formed on first access (and
    kept). Solvers that use only the loss's planes (BMRM) never form it, and
    :meth:`subgradient_dot` and :meth:`subgradient_norm` read it from the parts: at
    :math:`d = 10^6` each d-vector is 8 MB. The fields are read-only.
    """

    __slots__ = ("w", "fun", "_subgradient", "loss_value", "loss_subgradient", "loss_dual",
                 "parts", "__weakref__")

    def __init__(self, w: np.ndarray, fun: float, subgradient: np.ndarray | None = None,
                 loss_value: float | None = None, loss_subgradient: np.ndarray | None = None,
                 loss_dual: np.ndarray | None = None, *, parts: tuple | None = None):
        if subgradient is None and (parts is None or loss_subgradient is None):
            raise ValueError("an Evaluation needs a subgradient, or its parts with the loss's")
        self.w, self.fun, self._subgradient = w, fun, subgradient
        self.loss_value, self.loss_subgradient, self.loss_dual = (loss_value, loss_subgradient,
                                                                  loss_dual)
        self.parts = None if subgradient is not None else parts

    @property
    def subgradient(self) -> np.ndarray:
        """The subgradient at ``w`` (formed from ``parts`` on first access)."""
        if self._subgradient is None:
            lam, s = self.parts
            g = np.multiply(s, lam)
            g += self.loss_subgradient
            self._subgradient = g
        return self._subgradient

    def subgradient_dot(self, p: np.ndarray) -> float:
        r""":math:`\langle g, p\rangle` without forming ``g`` when it is given by parts."""
        if self._subgradient is not None:
            return float(self._subgradient @ p)
        lam, s = self.parts
        return lam * float(s @ p) + float(self.loss_subgradient @ p)

    def subgradient_norm(self) -> float:
        r""":math:`\|g\|_2` (from the parts' dot products when ``g`` is not formed)."""
        if self._subgradient is not None:
            return float(np.linalg.norm(self._subgradient))
        lam, s = self.parts
        a = self.loss_subgradient
        sq = lam * lam * float(s @ s) + 2.0 * lam * float(s @ a) + float(a @ a)
        return math.sqrt(max(sq, 0.0))

    def subgradient_is_finite(self) -> bool:
        """Whether every entry of the subgradient is finite (checked on the parts)."""
        if self._subgradient is not None:
            return _all_finite(self._subgradient)
        lam, s = self.parts
        return (math.isfinite(lam) and _all_finite(s) and _all_finite(self.loss_subgradient))

    def __repr__(self):
        return f"Evaluation(fun={self.fun!r}, dim={np.size(self.w)})"


def _checked_minorants(out, dim: int, who: str):
    """``(G, c)`` as float arrays of shapes ``(k, dim)`` and ``(k,)`` (None, or k = 0: None);
    a wrong shape is a ``ValueError`` naming ``who``. Non-finite entries pass through (the
    counting oracle reports them)."""
    if out is None:
        return None
    try:
        G, c = out
    except (TypeError, ValueError):
        raise TypeError(f"{who}.minorants must return (G, c) or None, got "
                        f"{type(out).__name__}") from None
    G = np.asarray(G.toarray() if sp.issparse(G) else G, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64).reshape(-1)
    if G.ndim == 1 and G.size == dim:
        G = G.reshape(1, dim)
    if G.ndim != 2 or G.shape[1] != dim or c.shape != (G.shape[0],):
        raise ValueError(f"{who}.minorants returned G of shape {G.shape} and c of shape "
                         f"{c.shape}: expected (k, {dim}) and (k,)")
    return None if G.shape[0] == 0 else (G, c)


def _all_finite(v) -> bool:
    # the sum is one pass without a d-sized boolean temporary; it overflows only for huge
    # finite entries, which the exact test then settles (an array's own sum: no dispatch)
    total = v.sum() if type(v) is np.ndarray else np.sum(v)
    return bool(np.isfinite(total) or np.isfinite(v).all())


class Oracle:
    r"""Base class of every convex function nsopt can minimise.

    Attributes
    ----------
    dim : int or None
        Number of variables (``None`` for dimension-free functions such as regularizers).
    lower_bound : float
        A known lower bound on the function value (``-inf`` when none is known).
    offers_minorants : bool
        Whether :meth:`minorants` may return planes (False: it always returns None, and
        solvers do not ask).

    Notes
    -----
    Extra minorants (optional). ``minorants(w) -> (G, c)`` or ``None``: ``G`` an array ``(k, dim)``, ``c`` an array
    ``(k,)``, with

    .. math:: f(y) \ge \langle G_j, y\rangle + c_j \qquad \text{for every } y
              \text{ and every } j,

    *global* affine minorants that the oracle finds cheaply at ``w`` beside the subgradient
    of ``value_and_subgradient(w)`` (whose own plane need not be repeated): e.g. for
    :math:`\lambda_{\max}(A(y))` the planes :math:`v^\top A(y) v` of the eigenvectors
    :math:`v` whose eigenvalues are near the top (a valid minorant for any unit :math:`v`),
    for a maximum of affine pieces the near-active pieces. A bundle method adds them to its
    model, so one call gives several planes (the subdifferential at a repeated eigenvalue is a
    set that one plane per call only samples). The answer must be a function of ``w`` alone
    (deterministic): a certificate records a minorant as (query point, row ``j``) and
    :meth:`~nsopt.Certificate.check` rebuilds it by calling ``minorants`` again.
    :class:`CountingOracle` counts it as part of the evaluation at ``w`` (no call of its own)
    and checks each plane against the values seen; :func:`nsopt.testing.check_oracle` tests
    the inequality at sampled points. The combinators pass them on exactly: ``c * f`` scales
    them, ``f.compose(A, b)`` maps them (:math:`G A`, :math:`c + G b`), ``Max`` offers its
    pieces' minorants and the planes of its other active pieces, ``f + g`` adds to each
    term's minorant the other terms' planes at ``w``.
    """

    dim: int | None = None
    lower_bound: float = -math.inf
    #: False when ``value`` may be ``+inf`` (outside a domain, e.g. the entropies); when True a
    #: ``+inf`` value is reported as a numerical error by the solvers
    finite: bool = True
    #: True when the function is differentiable everywhere (every subgradient is the gradient):
    #: solvers that need a gradient (OWL-QN) ask this, not the class
    differentiable: bool = False
    #: True when :meth:`minorants` may offer planes (see the Notes above)
    offers_minorants: bool = False

    # --- public API: argument checks, then the private implementation -------------------
    def value(self, w) -> float:
        return float(self._value(self._point(w)))

    def subgradient(self, w) -> np.ndarray:
        return self._value_and_subgradient(self._point(w))[1]

    def value_and_subgradient(self, w) -> tuple[float, np.ndarray]:
        f, g = self._value_and_subgradient(self._point(w))
        return float(f), g

    def sup_subgradient(self, w, p) -> tuple[float, np.ndarray]:
        """Return ``(s, g)`` with ``s = sup_{g in df(w)} <g, p> = f'(w; p)`` and ``g`` attaining it."""
        w = self._point(w)
        p = check_vector(p, w.shape[0], "p")
        s, g = self._sup_subgradient(w, p)
        return float(s), g

    def restrict(self, w, p) -> "LineFunction":
        """The function on the line through ``w`` along ``p``: ``phi(eta) = f(w + eta p)``."""
        w = self._point(w)
        p = check_vector(p, w.shape[0], "p")
        return self._restrict(w, p)

    def minorants(self, w) -> tuple[np.ndarray, np.ndarray] | None:
        r"""Extra global affine minorants found at ``w``: ``(G, c)`` with
        :math:`f(y) \ge \langle G_j, y\rangle + c_j` for every ``y``, ``G`` of shape
        ``(k, dim)`` and ``c`` of shape ``(k,)``; None when none is offered (the default)."""
        if not self.offers_minorants:
            return None
        w = self._point(w)
        return _checked_minorants(self._minorants(w), w.shape[0], type(self).__name__)

    # --- what a subclass implements ---------------------------------------------------
    def _minorants(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        return None

    def _value_and_subgradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError(f"{type(self).__name__}._value_and_subgradient is not implemented")

    def _value(self, w: np.ndarray) -> float:
        return self._value_and_subgradient(w)[0]

    def _sup_subgradient(self, w: np.ndarray, p: np.ndarray) -> tuple[float, np.ndarray]:
        # exact only where f is differentiable; subclasses with kinks override
        g = self._value_and_subgradient(w)[1]
        return float(g @ p), g

    def _restrict(self, w: np.ndarray, p: np.ndarray) -> "LineFunction":
        return GenericLine(self, w, p)

    def _evaluate(self, w: np.ndarray) -> Evaluation:
        f, g = self._value_and_subgradient(w)
        return Evaluation(w, float(f), g)

    # --- helpers ------------------------------------------------------------------------
    def _point(self, w) -> np.ndarray:
        return check_vector(w, self.dim, "w")

    # --- composition --------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, Oracle):
            return Sum([self, other])
        return NotImplemented

    def __mul__(self, c):
        if isinstance(c, (int, float, np.floating, np.integer)) and not isinstance(c, bool):
            return Scaled(self, float(c))
        return NotImplemented

    __rmul__ = __mul__

    def compose(self, A, b=None) -> "Composed":
        """The function ``w -> f(A w + b)`` (A dense, sparse or a LinearOperator-like object)."""
        return Composed(self, A, b)


# ----------------------------------------------------------------------------------------
# Line functions
# ----------------------------------------------------------------------------------------
class LineFunction:
    r"""A convex function of one variable, :math:`\varphi(\eta) = f(w + \eta p)`.

    ``derivative(eta, side=+1)`` is the right derivative :math:`\varphi'(\eta^+)`, ``side=-1``
    the left one. ``minimize(lo, hi)`` returns an exact minimiser on ``[lo, hi]`` where the
    function's structure allows one, else raises ``NotImplementedError``.

    A piecewise-linear line gives its kinks either all at once (:meth:`jumps`) or, when they
    are costly to find, per window from ``lo`` (:meth:`jumps_from`, ``reach`` at least the
    asked horizon): :meth:`minimize` asks for the window it needs only, so binary lines and
    other callers, which answer with all their kinks, are unaffected.
    """

    def value(self, eta: float) -> float:
        raise NotImplementedError(f"{type(self).__name__}.value is not implemented")

    def derivative(self, eta: float, side: int = 1) -> float:
        raise NotImplementedError(f"{type(self).__name__}.derivative is not implemented")

    #: one-sided derivatives are exact and cheap (no oracle call): without breakpoints,
    #: ``minimize`` then bisects on their sign (:func:`bisect_minimize`)
    cheap_derivative: bool = False

    def breakpoints(self) -> np.ndarray | None:
        """Sorted points where ``phi`` may fail to be smooth (twice differentiable), or
        ``None`` if unknown. Between breakpoints ``phi'`` is continuous and nondecreasing."""
        return None

    #: ``phi'`` is affine between consecutive breakpoints (``phi`` piecewise quadratic):
    #: ``minimize`` then takes the root on the minimiser's piece in closed form
    affine_between_breakpoints: bool = False

    def jumps(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(etas, jumps)``, unsorted, when ``phi'`` is piecewise constant and jumps by
        ``jumps[i] >= 0`` at ``etas[i]`` (a piecewise-linear ``phi``), else None."""
        return None

    def affine_derivative(self) -> tuple[float, float] | None:
        """``(c1, c2)`` when ``phi'(eta) = c1 + c2 eta`` everywhere (a quadratic), else None."""
        return None

    def sweep(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """``(etas, jumps, slope)`` when ``phi'(eta+) = phi'(lo+) + sum of jumps[i] over
        lo < etas[i] <= eta + slope (eta - lo)``: ``minimize`` then finds the minimiser with
        one derivative call and a compiled selection, no sort. None otherwise."""
        j = self.jumps()
        return None if j is None else (j[0], j[1], 0.0)

    def jumps_from(self, lo: float, horizon: float) -> tuple[np.ndarray, np.ndarray, float] | None:
        r"""``(etas, jumps, reach)``: at least the kinks of a piecewise-linear ``phi`` in
        ``(lo, reach]``, with ``reach >= horizon`` (``inf``: all of them), unsorted, and the
        jumps of ``phi'`` there; entries outside ``(lo, reach]`` may be present and are ignored.
        None when :meth:`jumps` is None.

        A line whose kinks are costly to find all at once (a multiclass line: one upper
        envelope per example) finds those of the window only, so a search that stops early
        touches a fraction of them; a ``horizon <= lo`` asks for none (``reach = lo`` and
        empty arrays are a valid answer). The default is :meth:`jumps` with ``reach = inf``."""
        j = self.jumps()
        return None if j is None else (j[0], j[1], math.inf)

    def sweep_from(self, lo: float, horizon: float) -> tuple[np.ndarray, np.ndarray, float, float] | None:
        r"""``(etas, jumps, slope, reach)``: :meth:`sweep` over the window ``(lo, reach]``
        (:meth:`jumps_from`'s contract), so that
        :math:`\varphi'(\eta^+) = \varphi'(lo^+) + \sum_{lo < \eta_i \le \eta} j_i + s\,(\eta - lo)`
        for :math:`\eta \le` ``reach``. The default is :meth:`sweep` with ``reach = inf``."""
        sw = self.sweep()
        return None if sw is None else (sw[0], sw[1], sw[2], math.inf)

    def minimize(self, lo: float = 0.0, hi: float = math.inf) -> float:
        """An exact minimiser of ``phi`` on ``[lo, hi]``.

        Needs :meth:`breakpoints`: a bisection over the breakpoints on the sign of the
        one-sided derivatives finds the piece holding the minimiser (O(log n) derivative
        evaluations), then Brent's method finds the root of the continuous derivative on that
        piece, exactly (to rounding) for piecewise-quadratic functions, whose derivative is
        affine there. Without breakpoints, a line with ``cheap_derivative`` is minimised by
        bisection on the sign of its right derivative (exact to one float spacing); otherwise
        ``NotImplementedError`` is raised.
        """
        eta = _minimize_by_jumps(self, lo, hi)
        if eta is not None:
            return eta
        bps = self.breakpoints()
        if bps is not None:
            return _minimize_piecewise(self, np.asarray(bps, dtype=np.float64), lo, hi)
        if self.cheap_derivative:
            return bisect_minimize(self, lo, hi)
        raise NotImplementedError(
            f"{type(self).__name__}.minimize: no exact line search for this function; "
            "use a Wolfe line search on value/derivative instead"
        )

    def __add__(self, other):
        if isinstance(other, LineFunction):
            return SumLine([self, other])
        return NotImplemented

    def __mul__(self, c):
        if isinstance(c, (int, float, np.floating)):
            return ScaledLine(self, float(c))
        return NotImplemented

    __rmul__ = __mul__


def _check_side(side: int) -> int:
    if side not in (1, -1):
        raise ValueError(f"side must be +1 (right derivative) or -1 (left derivative), got {side}")
    return side


def _float_key(x: float) -> int:
    """An integer with the order of the floats (adjacent floats get adjacent integers)."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _key_float(k: int) -> float:
    bits = k if k >= 0 else ((-k) | 0x8000000000000000) - (1 << 64)
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def bisect_minimize(line: LineFunction, lo: float = 0.0, hi: float = math.inf,
                    step: float = 1.0) -> float:
    r"""Minimise a convex line function by bisection on the sign of its right derivative.

    Returns the smallest minimiser,
    :math:`\eta^* = \inf\{\eta \in [lo, hi] : \varphi'(\eta^+) \ge 0\}` (``hi`` if there is
    none), to within one floating-point spacing: the bisection runs on the
    integers that order the floats, so it ends, after at most 64 halvings, with adjacent
    floats ``a < b``, :math:`\varphi'(a^+) < 0 \le \varphi'(b^+)`, and returns ``b``. For a
    piecewise-linear :math:`\varphi` the minimiser is a kink in ``(a, b]``: the result is
    exact to rounding. On an unbounded interval a bracket is found by doubling from ``step``;
    ``inf`` is returned if the derivative stays negative beyond 1e300.
    """
    if not lo <= hi:
        raise ValueError(f"need lo <= hi, got [{lo}, {hi}]")
    if not math.isfinite(lo):
        raise ValueError("minimize needs a finite lower end lo")
    if lo == hi or line.derivative(lo, 1) >= 0:
        return float(lo)
    a = float(lo)
    if math.isfinite(hi):
        if line.derivative(hi, -1) < 0:
            return float(hi)
        b = float(hi)
    else:
        step = float(step) if step > 0 and math.isfinite(step) else 1.0
        b = lo + step
        while line.derivative(b, 1) < 0:
            a = b
            step *= 2.0
            if step > 1e300:
                return math.inf
            b = lo + step
    return _bisect_floats(lambda eta: line.derivative(eta, 1), a, b)


def _bisect_floats(derivative, a: float, b: float) -> float:
    """The smallest float ``eta`` in ``(a, b]`` with ``derivative(eta) >= 0``, given a
    nondecreasing ``derivative`` with ``derivative(a) < 0``: bisection on the integers that order
    the floats, so at most 64 halvings, whatever the width or position of the bracket."""
    ka, kb = _float_key(a), _float_key(b)
    while kb - ka > 1:
        km = (ka + kb) // 2
        if derivative(_key_float(km)) >= 0:
            kb = km
        else:
            ka = km
    return _key_float(kb)


def _minimize_piecewise(line: LineFunction, bps: np.ndarray, lo: float, hi: float) -> float:
    from scipy.optimize import brentq

    if not lo <= hi:
        raise ValueError(f"need lo <= hi, got [{lo}, {hi}]")
    if not math.isfinite(lo):
        raise ValueError("minimize needs a finite lower end lo")
    if lo == hi or line.derivative(lo, 1) >= 0:
        return float(lo)
    bps = bps[(bps > lo) & (bps < hi)]  # sorted by contract; duplicates are harmless
    # smallest j with phi'(bps[j]+) >= 0 (phi' is nondecreasing)
    a, b = 0, bps.size
    while a < b:
        mid = (a + b) // 2
        if line.derivative(bps[mid], 1) >= 0:
            b = mid
        else:
            a = mid + 1
    left = bps[a - 1] if a > 0 else lo
    right = bps[a] if a < bps.size else hi
    right_slope = line.derivative(right, -1) if math.isfinite(right) else math.nan
    if right_slope <= 0:
        return float(right)  # the minimiser is the kink itself (or hi)
    if line.affine_between_breakpoints and math.isfinite(right):
        # phi' is affine on (left, right), negative at left+ and positive at right-: its
        # root in closed form (Brent below would need a few more derivative calls)
        left_slope = line.derivative(left, 1)
        if left_slope < 0 < right_slope:
            root = left + (right - left) * (-left_slope / (right_slope - left_slope))
            return float(min(max(root, left), right))
    if not math.isfinite(right):  # bracket the root on the last, unbounded piece
        step = max(1.0, abs(left))
        right = left + step
        while line.derivative(right, -1) < 0:
            step *= 2.0
            right = left + step
            if step > 1e300:
                return math.inf  # phi decreases without bound along the ray
    # scipy's brentq wraps its function in a closure that refers to itself (its call count,
    # scipy.optimize._zeros_py._wrap_nan_raise): a reference cycle, freed only by the cyclic
    # garbage collector. The line (and the d-vectors it holds: 8 MB each at d = 10^6) is
    # therefore reached through a holder that is emptied once the root is found
    holder = [line]
    d = lambda eta: holder[0].derivative(eta, 1)
    # Absolute xtol tiny: the relative rtol governs (a bracket far wider than the root is
    # common). Near 0 the relative test can need more than ``maxiter`` halvings (a root at
    # 1e-20 in [0, 1e-16]); then bisection on the float order finishes in <= 64 steps.
    try:
        root, info = brentq(d, left, right, xtol=1e-300, rtol=4 * np.finfo(float).eps,
                            maxiter=200, full_output=True, disp=False)
        if info.converged:
            return float(root)
        return _bisect_floats(d, float(left), float(right))
    finally:
        holder.clear()


def _minimize_by_jumps(line, lo, hi):
    r"""A minimiser on ``[lo, hi]`` of a line with :meth:`~LineFunction.sweep_from`, or None
    (then the generic search runs) if it has none or the numbers are not finite.

    The kinks are asked for from ``lo`` on only: first none (the slope :math:`s` alone), then
    up to the bound :math:`lo - \varphi'(lo^+)/s` past which :math:`\varphi'` is
    nonnegative (the jumps are), or all of them when :math:`s = 0`. A crossing found before
    the window's end is the minimiser; a window whose end is reached with
    :math:`\varphi'` still negative (rounding at the bound) is doubled."""
    from ._line_search_kernels import first_crossing

    if not lo <= hi:
        raise ValueError(f"need lo <= hi, got [{lo}, {hi}]")
    if not math.isfinite(lo):
        raise ValueError("minimize needs a finite lower end lo")
    lo, hi = float(lo), float(hi)
    sw = line.sweep_from(lo, lo)  # the slope (a lazy line finds no kink yet)
    if sw is None:
        return None
    d0 = line.derivative(lo, 1)
    if lo == hi or d0 >= 0:
        return lo
    etas, steps, slope, reach = sw
    if not (math.isfinite(d0) and math.isfinite(slope) and slope >= 0):
        return None
    horizon = min(hi, lo - d0 / slope) if slope > 0 else hi
    while True:
        if reach < horizon:
            etas, steps, slope, reach = line.sweep_from(lo, horizon)
        etas = np.asarray(etas, dtype=np.float64)
        steps = np.asarray(steps, dtype=np.float64)
        if not np.isfinite(steps).all():
            return None
        # the running sums round: the result must pass the true one-sided derivatives (two
        # calls), else the generic search decides
        tol = 64 * np.finfo(np.float64).eps * (abs(d0) + float(np.abs(steps).sum()))
        top = min(hi, reach)
        eta = float(first_crossing(etas, steps, lo, top, float(d0), float(slope), tol))
        if eta < top or top >= hi or not math.isfinite(eta):
            break
        # phi' still negative at the window's end: a wider one (all kinks past 2^1000)
        horizon = lo + 2.0 * (reach - lo)
        if not horizon < 2.0 ** 1000:
            horizon = math.inf
    if not math.isfinite(eta):
        return None
    scale = tol + 64 * np.finfo(np.float64).eps * slope * abs(eta - lo)
    right = line.derivative(eta, 1) if eta < hi else 0.0
    # without curvature a slightly negative slope may go on far (a kink of a tiny q_i):
    # exact sign then; with curvature the minimiser is within rounding of eta
    if right < (0.0 if slope == 0 else -scale):
        return None
    if eta > lo and line.derivative(eta, -1) > scale:
        return None
    return eta


class GenericLine(LineFunction):
    """Line restriction by calling the oracle at ``w + eta p`` (O(oracle) per evaluation).

    The one-sided derivatives come from ``sup_subgradient``:
    ``phi'(eta+) = f'(x; p)`` and ``phi'(eta-) = -f'(x; -p)`` at ``x = w + eta p``.
    """

    def __init__(self, oracle: Oracle, w: np.ndarray, p: np.ndarray):
        self.oracle, self.w, self.p = oracle, np.array(w, dtype=np.float64), np.array(p, dtype=np.float64)

    def value(self, eta):
        return float(self.oracle._value(self.w + eta * self.p))

    def derivative(self, eta, side=1):
        side = _check_side(side)
        x = self.w + eta * self.p
        s, _ = self.oracle._sup_subgradient(x, side * self.p)
        return float(side * s)


class SumLine(LineFunction):
    """The sum of line functions (a loss's line plus the regularizer's, for instance).

    ``minimize`` of a piecewise-linear line (:meth:`~LineFunction.jumps`) plus quadratics
    (:meth:`~LineFunction.affine_derivative`), the line of an L2-regularized hinge-type risk,
    needs no sort and one derivative call: a compiled selection over the breakpoints finds
    the first where the derivative turns nonnegative (:func:`nsopt._line_search_kernels.
    first_crossing`, O(n) expected), the search OCAS (Franc & Sonnenburg, 2009) does
    with a sort.
    """

    def __init__(self, lines: Sequence[LineFunction]):
        self.lines = list(lines)
        self.cheap_derivative = all(line.cheap_derivative for line in self.lines)
        self.affine_between_breakpoints = all(line.affine_between_breakpoints
                                              for line in self.lines)

    def value(self, eta):
        return float(sum(line.value(eta) for line in self.lines))

    def derivative(self, eta, side=1):
        return float(sum(line.derivative(eta, side) for line in self.lines))

    def breakpoints(self):
        parts = [line.breakpoints() for line in self.lines]
        if any(p is None for p in parts):
            return None
        parts = [np.asarray(p, dtype=np.float64) for p in parts]
        nonempty = [p for p in parts if p.size]
        if len(nonempty) <= 1:  # each part's are sorted: nothing to merge
            return nonempty[0] if nonempty else np.empty(0)
        merged = np.concatenate(nonempty)
        merged.sort()
        return merged

    def affine_derivative(self):
        parts = [line.affine_derivative() for line in self.lines]
        if any(p is None for p in parts):
            return None
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def sweep(self):
        jumps = [line.jumps() for line in self.lines]
        if sum(j is not None for j in jumps) != 1:
            return None
        slope = 0.0
        for line, j in zip(self.lines, jumps):
            if j is None:
                a = line.affine_derivative()
                if a is None:
                    return None
                slope += a[1]
        etas, steps = next(j for j in jumps if j is not None)
        return etas, steps, slope

    def sweep_from(self, lo, horizon):
        """:meth:`sweep` of the one part with jumps over its window (its
        :meth:`~LineFunction.jumps_from`); the other parts' jumps are not asked for."""
        slope, lazy = 0.0, None
        for line in self.lines:
            a = line.affine_derivative()
            if a is not None:
                slope += a[1]
            elif lazy is None:
                lazy = line
            else:
                return None
        if lazy is None:
            return None
        j = lazy.jumps_from(lo, horizon)
        return None if j is None else (j[0], j[1], slope, j[2])


class ScaledLine(LineFunction):
    def __init__(self, line: LineFunction, c: float):
        self.line, self.c = line, c
        self.cheap_derivative = line.cheap_derivative

    def value(self, eta):
        return self.c * self.line.value(eta)

    def derivative(self, eta, side=1):
        return self.c * self.line.derivative(eta, side)

    def breakpoints(self):
        return self.line.breakpoints()

    @property
    def affine_between_breakpoints(self):
        return self.line.affine_between_breakpoints

    def jumps(self):
        j = self.line.jumps() if self.c > 0 else None
        return None if j is None else (j[0], self.c * j[1])

    def affine_derivative(self):
        a = self.line.affine_derivative()
        return None if a is None else (self.c * a[0], self.c * a[1])

    def sweep(self):
        sw = self.line.sweep() if self.c > 0 else None
        return None if sw is None else (sw[0], self.c * sw[1], self.c * sw[2])

    def jumps_from(self, lo, horizon):
        j = self.line.jumps_from(lo, horizon) if self.c > 0 else None
        return None if j is None else (j[0], self.c * j[1], j[2])

    def sweep_from(self, lo, horizon):
        sw = self.line.sweep_from(lo, horizon) if self.c > 0 else None
        return None if sw is None else (sw[0], self.c * sw[1], self.c * sw[2], sw[3])

    def minimize(self, lo=0.0, hi=math.inf):
        if self.c == 0:
            return float(lo)
        return self.line.minimize(lo, hi)


def _active(values: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Indices of the pieces attaining the max (ties up to a relative rounding tolerance)."""
    top = values.max()
    return np.flatnonzero(values >= top - rtol * max(1.0, abs(top)))


class MaxLine(LineFunction):
    """Pointwise max of line functions: right derivative = max over active pieces, left = min."""

    def __init__(self, lines: Sequence[LineFunction]):
        self.lines = list(lines)

    def value(self, eta):
        return float(max(line.value(eta) for line in self.lines))

    def derivative(self, eta, side=1):
        side = _check_side(side)
        vals = np.array([line.value(eta) for line in self.lines])
        ders = [self.lines[i].derivative(eta, side) for i in _active(vals)]
        return float(max(ders) if side == 1 else min(ders))


# ----------------------------------------------------------------------------------------
# User functions and combinators
# ----------------------------------------------------------------------------------------
class FunctionOracle(Oracle):
    r"""Wrap user callables as an :class:`Oracle`.

    Parameters
    ----------
    fun : callable ``fun(w) -> float``
    subgradient : callable ``subgradient(w) -> ndarray``, optional if ``value_and_subgradient``
        is given.
    dim : int, optional
        Number of variables; checked on every call when given.
    sup_subgradient : callable ``(w, p) -> (s, g)``, optional
        Without it, ``sup_subgradient`` uses the returned subgradient, which is exact only
        where ``fun`` is differentiable.
    value_and_subgradient : callable ``w -> (float, ndarray)``, optional
        Used for the hot path when given (saves shared work).
    lower_bound : float, optional
        A known lower bound on ``fun``: a real number < inf; ``-inf`` (the default) when none
        is known. NaN and +inf raise ``ValueError``.
    minorants : callable ``w -> (G, c)`` or None, optional
        Extra global affine minorants found at ``w`` (:meth:`Oracle.minorants`: ``G`` of
        shape ``(k, dim)``, ``c`` of shape ``(k,)``, :math:`f(y) \ge \langle G_j,
        y\rangle + c_j` for all ``y``); it is called right after ``value_and_subgradient``
        at the same point, so it may reuse that call's work (e.g. an eigendecomposition kept
        by the closure). Must be deterministic in ``w``.

    Raises
    ------
    TypeError, ValueError
        When a user callable returns something of the wrong type (None, str, list, complex,
        an array of the wrong size, a pair that is not a pair), naming the callable, what it
        returned and the point. NaN or inf values pass through: the solvers report them as
        status ``numerical_error``.
    """

    def __init__(self, fun: Callable | None = None, subgradient: Callable | None = None,
                 dim: int | None = None, sup_subgradient: Callable | None = None,
                 value_and_subgradient: Callable | None = None, lower_bound: float = -math.inf,
                 minorants: Callable | None = None):
        if value_and_subgradient is None and (fun is None or subgradient is None):
            raise TypeError("FunctionOracle needs fun and subgradient, or value_and_subgradient")
        for name, f in (("fun", fun), ("subgradient", subgradient),
                        ("sup_subgradient", sup_subgradient),
                        ("value_and_subgradient", value_and_subgradient),
                        ("minorants", minorants)):
            if f is not None and not callable(f):
                raise TypeError(f"{name} must be callable, got {type(f).__name__}")
        self._fun, self._sub, self._vas, self._sup = fun, subgradient, value_and_subgradient, sup_subgradient
        self.dim = check_dim(dim)
        self.lower_bound = check_lower_bound(lower_bound)
        self._minor = minorants
        self.offers_minorants = minorants is not None

    def _minorants(self, w):
        return None if self._minor is None else self._minor(w)

    # What the user callables return is converted by user_scalar / user_vector: a wrong type or
    # size is an error naming the callable, what it returned and the point; NaN / inf values
    # pass through (the solver loop reports them as numerical_error).
    def _value(self, w):
        if self._fun is not None:
            return user_scalar(self._fun(w), "fun", w)
        f, _ = user_pair(self._vas(w), "value_and_subgradient", w)
        return user_scalar(f, "value_and_subgradient (first element)", w)

    def _value_and_subgradient(self, w):
        if self._vas is not None:
            f, g = user_pair(self._vas(w), "value_and_subgradient", w)
            return (user_scalar(f, "value_and_subgradient (first element)", w),
                    user_vector(g, "value_and_subgradient (second element)", w))
        f = user_scalar(self._fun(w), "fun", w)
        return f, user_vector(self._sub(w), "subgradient", w)

    def _sup_subgradient(self, w, p):
        if self._sup is None:
            return super()._sup_subgradient(w, p)
        s, g = user_pair(self._sup(w, p), "sup_subgradient", w)
        return (user_scalar(s, "sup_subgradient (first element)", w),
                user_vector(g, "sup_subgradient (second element)", w))


def _common_dim(oracles) -> int | None:
    dims = {o.dim for o in oracles if o.dim is not None}
    if len(dims) > 1:
        raise ValueError(f"cannot combine oracles of different dimensions {sorted(dims)}")
    return dims.pop() if dims else None


class Sum(Oracle):
    r"""Sum of convex functions; :math:`\partial(f + g) = \partial f + \partial g`, so the
    directional derivatives add."""

    def __init__(self, terms: Sequence[Oracle]):
        flat = []
        for t in terms:
            flat.extend(t.terms if isinstance(t, Sum) else [t])
        self.terms = flat
        self.dim = _common_dim(flat)
        self.lower_bound = float(sum(t.lower_bound for t in flat))
        self.finite = all(t.finite for t in flat)
        self.offers_minorants = any(t.offers_minorants for t in flat)

    def _minorants(self, w):
        # a minorant of one term plus the other terms' planes at w (f_s(w) + <g_s, y - w>)
        offers = [t._minorants(w) if t.offers_minorants else None for t in self.terms]
        offers = [_checked_minorants(o, w.shape[0], type(t).__name__)
                  for o, t in zip(offers, self.terms)]
        if all(o is None for o in offers):
            return None
        planes = []
        for t in self.terms:
            f, g = t._value_and_subgradient(w)
            planes.append((np.asarray(g, dtype=np.float64), float(f) - float(g @ w)))
        a_all = sum(p[0] for p in planes)
        b_all = sum(p[1] for p in planes)
        Gs, cs = [], []
        for (a, b), o in zip(planes, offers):
            if o is not None:
                Gs.append(o[0] + (a_all - a))
                cs.append(o[1] + (b_all - b))
        return np.vstack(Gs), np.concatenate(cs)

    def _value(self, w):
        return sum(t._value(w) for t in self.terms)

    def _value_and_subgradient(self, w):
        f, g = 0.0, np.zeros_like(w)
        for t in self.terms:
            ft, gt = t._value_and_subgradient(w)
            f += ft
            g += gt
        return f, g

    def _sup_subgradient(self, w, p):
        s, g = 0.0, np.zeros_like(w)
        for t in self.terms:
            st, gt = t._sup_subgradient(w, p)
            s += st
            g += gt
        return s, g

    def _restrict(self, w, p):
        return SumLine([t._restrict(w, p) for t in self.terms])


class Scaled(Oracle):
    """``c * f`` with ``c >= 0`` (a negative multiple of a convex function is not convex)."""

    def __init__(self, f: Oracle, c: float):
        if not np.isfinite(c) or c < 0:
            raise ValueError(f"c * f is convex only for c >= 0, got c = {c}")
        self.f, self.c = f, float(c)
        self.dim = f.dim
        self.lower_bound = self.c * f.lower_bound if self.c > 0 else 0.0
        self.finite = f.finite or self.c == 0
        self.offers_minorants = f.offers_minorants and self.c > 0

    def _minorants(self, w):
        out = _checked_minorants(self.f._minorants(w), w.shape[0], type(self.f).__name__)
        return None if out is None else (self.c * out[0], self.c * out[1])

    def _value(self, w):
        return self.c * self.f._value(w)

    def _value_and_subgradient(self, w):
        f, g = self.f._value_and_subgradient(w)
        return self.c * f, self.c * g

    def _sup_subgradient(self, w, p):
        s, g = self.f._sup_subgradient(w, p)
        return self.c * s, self.c * g

    def _restrict(self, w, p):
        return ScaledLine(self.f._restrict(w, p), self.c)


class Composed(Oracle):
    r"""Affine pre-composition :math:`h(w) = f(Aw + b)`: :math:`\partial h(w) = A^T \partial f(Aw+b)`,
    so :math:`h'(w; p) = f'(Aw + b; Ap)` and the line function is ``f``'s on the image line."""

    def __init__(self, f: Oracle, A, b=None):
        if not (sp.issparse(A) or hasattr(A, "shape")):
            A = np.asarray(A, dtype=np.float64)
        if len(A.shape) != 2:
            raise ValueError(f"A must be 2-D, got shape {A.shape}")
        n, d = A.shape
        if f.dim is not None and f.dim != n:
            raise ValueError(f"A has {n} rows but f takes {f.dim} variables")
        self.f, self.A = f, A
        self.b = np.zeros(n) if b is None else check_vector(b, n, "b")
        self.dim = d
        self.lower_bound = f.lower_bound
        self.finite = f.finite
        self.offers_minorants = f.offers_minorants

    def _minorants(self, w):
        # f(Ay + b) >= <G_j, Ay + b> + c_j = <A^T G_j, y> + c_j + <G_j, b>
        out = _checked_minorants(self.f._minorants(self._image(w)), self.A.shape[0],
                                 type(self.f).__name__)
        if out is None:
            return None
        G, c = out
        return np.asarray(self.A.T @ G.T).T.reshape(G.shape[0], -1), c + G @ self.b

    def _image(self, w):
        return np.asarray(self.A @ w).reshape(-1) + self.b

    def _pull(self, g):
        return np.asarray(self.A.T @ g).reshape(-1)

    def _value(self, w):
        return self.f._value(self._image(w))

    def _value_and_subgradient(self, w):
        f, g = self.f._value_and_subgradient(self._image(w))
        return f, self._pull(g)

    def _sup_subgradient(self, w, p):
        s, g = self.f._sup_subgradient(self._image(w), np.asarray(self.A @ p).reshape(-1))
        return s, self._pull(g)

    def _restrict(self, w, p):
        return self.f._restrict(self._image(w), np.asarray(self.A @ p).reshape(-1))


class Max(Oracle):
    r"""Pointwise maximum :math:`f(w) = \max_j f_j(w)`.

    :math:`\partial f(w)` is the convex hull of :math:`\partial f_j(w)` over the active pieces
    :math:`j \in I(w)`, hence :math:`f'(w; p) = \max_{j \in I(w)} f_j'(w; p)`. Pieces tie when
    they agree up to a relative rounding tolerance of 1e-12.
    """

    def __init__(self, pieces: Sequence[Oracle]):
        pieces = list(pieces)
        if not pieces:
            raise ValueError("Max needs at least one function")
        self.pieces = pieces
        self.dim = _common_dim(pieces)
        self.lower_bound = max(p.lower_bound for p in pieces)
        self.finite = all(p.finite for p in pieces)
        # the active pieces' planes join the pieces' own minorants (alone they are rare ties:
        # not worth a second pass over the pieces at every call)
        self.offers_minorants = any(p.offers_minorants for p in pieces)

    def _minorants(self, w):
        # any minorant of a piece is one of the max: the pieces' own, and the planes of the
        # active pieces other than the one whose subgradient _value_and_subgradient returns
        vals = self._values(w)
        top = int(np.argmax(vals))
        Gs, cs = [], []
        for j in _active(vals):
            if j != top:
                f, g = self.pieces[j]._value_and_subgradient(w)
                g = np.asarray(g, dtype=np.float64)
                Gs.append(g.reshape(1, -1))
                cs.append(np.array([float(f) - float(g @ w)]))
        for piece in self.pieces:
            if piece.offers_minorants:
                out = _checked_minorants(piece._minorants(w), w.shape[0], type(piece).__name__)
                if out is not None:
                    Gs.append(out[0])
                    cs.append(out[1])
        return (np.vstack(Gs), np.concatenate(cs)) if Gs else None

    def _values(self, w):
        return np.array([f._value(w) for f in self.pieces])

    def _value(self, w):
        return float(self._values(w).max())

    def _value_and_subgradient(self, w):
        vals = self._values(w)
        j = int(np.argmax(vals))
        return float(vals[j]), self.pieces[j]._value_and_subgradient(w)[1]

    def _sup_subgradient(self, w, p):
        vals = self._values(w)
        best = None
        for j in _active(vals):
            s, g = self.pieces[j]._sup_subgradient(w, p)
            if best is None or s > best[0]:
                best = (s, g)
        return best

    def _restrict(self, w, p):
        return MaxLine([f._restrict(w, p) for f in self.pieces])


# ----------------------------------------------------------------------------------------
# Counting and caching, seen by solvers
# ----------------------------------------------------------------------------------------
def rounding_allowance(*magnitudes: float, rel: float = 1e-9) -> float:
    """How far two computations of one quantity may differ by rounding when they involve these
    magnitudes: ``rel`` times the largest (plus an absolute floor for values that are exactly
    0). The one yardstick of the convexity checks, the line search's tangent test and the
    solver loop's bound-versus-value test."""
    return rel * max(max(map(abs, magnitudes)), 1e-300) + 1e-300


def frozen(w) -> np.ndarray:
    """``w`` as a read-only float64 array the caller cannot change: ``w`` itself when it
    already is one that owns its data (a solver's iterate, frozen by :func:`freeze`), else a
    read-only copy. Evaluations keep their point, so this saves one d-vector per kept point."""
    if (isinstance(w, np.ndarray) and w.dtype == np.float64 and w.base is None
            and not w.flags.writeable):
        return w
    w = np.array(w, dtype=np.float64)
    w.flags.writeable = False
    return w


def freeze(w: np.ndarray) -> np.ndarray:
    """Mark a freshly computed float64 iterate read-only, so the counting oracle can keep it
    without a copy (see :func:`frozen`); returns ``w``. Anything else is returned as is."""
    if isinstance(w, np.ndarray) and w.dtype == np.float64 and w.base is None:
        w.flags.writeable = False
    return w


def _none():
    return None


class CountingOracle(Oracle):
    r"""Wrap an oracle for a solver run: count calls, cache the last point, notify listeners,
    and check every answer.

    ``nfev`` counts calls that reach the wrapped oracle (value, value-and-subgradient and
    sup-subgradient evaluations; a repeated point is served from the cache and not counted).
    Line evaluations of specialised lines (losses keep ``X w`` and ``X p``) are cheap by design
    and are not counted; a generic line (:class:`GenericLine`: user functions, ``Max``,
    structured losses) calls the oracle, and those calls are counted.

    Every full evaluation is passed to the ``listeners`` (callables taking an
    :class:`Evaluation`); the plane certifier is one.

    The wrapped problem is ``problem`` (``oracle`` is the same object, the earlier name): a
    solver that needs the problem itself (e.g. to ask whether it is a ``RegularizedRisk``)
    reads it there, explicitly. Through the wrapper only the problem's parts in
    :attr:`PARTS` (``loss``, ``reg``, ``lam``: what a solver may use of a ``RegularizedRisk``)
    are forwarded, with ``dim``, ``lower_bound`` and ``finite`` copied at construction;
    anything else of the problem, its methods above all (which would escape the count), is an
    ``AttributeError`` that says to read it from ``problem``. ``deadline`` (None, or a
    ``time.perf_counter()`` value) is the run's time limit, set by the solver loop.

    Checks (a solver never sees a bad answer silently):

    * NaN, ``-inf``, a non-finite subgradient, or ``+inf`` from an oracle with ``finite = True``
      raise :class:`OracleNumericalError` (from full evaluations, values, sup-subgradients and
      line evaluations alike);
    * with ``check_convexity`` (default), the plane of each new evaluation is compared with
      the lowest value seen, :math:`f(w_*) \ge f(w) + \langle g, w_* - w\rangle` (the point
      w_* is the best point, which the solver keeps anyway: no d-vector is kept for the
      check, and a plane above the lowest value is the contradiction that would spoil a
      lower bound), a
      ``sup_subgradient`` at the last evaluated point with its subgradient,
      :math:`f'(w; p) \ge \langle g, p\rangle`, and every value with the oracle's stated
      ``lower_bound``; a violation beyond rounding raises :class:`NonConvexError` with the
      points and values. Rounding is judged as :math:`10^{-9}` of the magnitudes that enter
      the comparison, including the largest value and subgradient norm seen so far (an
      oracle computes its slopes as sums of terms of that size, which cancel near a
      minimiser). O(d) per call.
    """

    #: the parts of the wrapped problem readable through the wrapper (RegularizedRisk's)
    PARTS = ("loss", "reg", "lam")

    def __init__(self, oracle: Oracle, check_convexity: bool = True):
        self.problem = oracle
        self.oracle = oracle  # the same object: the name before ``problem``
        self.deadline: float | None = None
        self.dim = oracle.dim
        self.lower_bound = oracle.lower_bound
        self.finite = oracle.finite
        self.offers_minorants = bool(getattr(oracle, "offers_minorants", False))
        self.check_convexity = bool(check_convexity)
        self.nfev = 0
        self.listeners: list[Callable[[Evaluation], None]] = []
        self._last_ref: Callable[[], Evaluation | None] = _none  # weak: see _last
        self._last_value: tuple[np.ndarray, float] | None = None
        self._lowest: tuple[np.ndarray, float] | None = None  # (w_*, f(w_*)): the plane check
        self._fmax = 0.0   # largest |value| seen
        self._gmax = 0.0   # largest subgradient norm seen

    def __getstate__(self):  # a weak reference does not pickle: the cache starts empty
        return {**self.__dict__, "_last_ref": _none}

    @property
    def _last(self) -> Evaluation | None:
        """The last evaluation, while a solver still holds it (a weak reference): repeated
        calls at its point are answered from it, and once the solver lets it go its
        subgradients (d-vectors: 8 MB each at d = 10^6) are freed, not kept by the cache."""
        return self._last_ref()

    def __getattr__(self, name):  # only for names not set in __init__: the problem's parts
        problem = self.__dict__.get("problem")  # absent while unpickling: no recursion
        if name in CountingOracle.PARTS and problem is not None:
            return getattr(problem, name)
        raise AttributeError(
            f"CountingOracle has no attribute {name!r}: it forwards only the problem's parts "
            f"{CountingOracle.PARTS}; read anything else from .problem (calls made there are "
            "not counted)")

    # --- checks -------------------------------------------------------------------------
    def _check_value(self, f, w, what="value") -> float:
        f = float(f)
        if math.isnan(f) or f == -math.inf or (f == math.inf and self.finite):
            raise OracleNumericalError(
                f"the oracle's {what} is {f} at a point with |w|_inf = "
                f"{float(np.max(np.abs(w), initial=0.0)):.3g}", np.array(w, copy=True), what)
        if self.check_convexity and f < self.lower_bound - rounding_allowance(f, self.lower_bound, self._fmax):
            raise NonConvexError(
                f"the oracle's {what} {f!r} is below its stated lower_bound {self.lower_bound!r}",
                {"w": np.array(w, copy=True), "f": f, "lower_bound": self.lower_bound})
        return f

    def _check_vector(self, g, w, what="subgradient") -> None:
        if not np.isfinite(np.sum(g)) and not np.isfinite(g).all():
            raise OracleNumericalError(
                f"the oracle's {what} has non-finite entries (first at index "
                f"{int(np.flatnonzero(~np.isfinite(g))[0])})", np.array(w, copy=True), what)

    def _check_plane(self, new: Evaluation) -> None:
        """``f(w_*) >= f(w) + <g, w_* - w>``: the new plane at the lowest point seen."""
        if self._lowest is None or self._lowest[0] is new.w or not math.isfinite(new.fun):
            return
        w_old, f_old = self._lowest
        # no d-sized temporaries (d may be 1e6): <g, w1 - w2> and ||w1 - w2|| from dot products
        g_old, g_new = new.subgradient_dot(w_old), new.subgradient_dot(new.w)
        plane = new.fun + (g_old - g_new)
        dist = math.sqrt(max(float(new.w @ new.w) + float(w_old @ w_old)
                             - 2.0 * float(new.w @ w_old), 0.0))
        if f_old < plane - rounding_allowance(f_old, new.fun, self._fmax, g_new, g_old,
                                              self._gmax * dist):
            raise NonConvexError(
                f"f(w2) = {f_old!r} lies below the plane of w1, f(w1) + <g1, w2 - w1> = "
                f"{plane!r}: the function is not convex or g1 is not a subgradient",
                {"w1": new.w, "f1": new.fun, "g1": new.subgradient, "w2": w_old, "f2": f_old})

    def _note_value(self, w: np.ndarray, f: float) -> None:
        if math.isfinite(f) and (self._lowest is None or f < self._lowest[1]):
            self._lowest = (w, f)

    def forget(self) -> None:
        """Drop the cached last evaluation (its point and subgradients): the plane check and
        the cache start afresh."""
        self._last_ref = _none
        self._last_value = None
        self._lowest = None

    # --- calls --------------------------------------------------------------------------
    def scores(self, w: np.ndarray) -> np.ndarray | None:
        """The problem's scores at ``w`` (``RegularizedRisk.scores``: half a data pass, not an
        oracle call, not counted in ``nfev``), or None when the problem has none."""
        fn = getattr(self.problem, "scores", None)
        return None if fn is None else fn(w)

    def restrict_scores(self, w, p, f, q) -> "LineFunction":
        """``restrict(w, p)`` given the scores ``f`` of ``w`` and ``q`` of ``p``
        (``RegularizedRisk.restrict_scores``), checked like :meth:`restrict`'s lines."""
        return _GuardedLine(self.problem.restrict_scores(w, p, f, q), self, w, p)

    def evaluate(self, w: np.ndarray, scores: np.ndarray | None = None) -> Evaluation:
        """One counted, checked evaluation at ``w``; ``scores``: the problem's scores at ``w``
        when the caller knows them (:meth:`scores`), which spares the evaluation a pass."""
        last = self._last
        if last is not None and (last.w is w or np.array_equal(last.w, w)):
            return last
        del last  # no reference to the previous evaluation while the next one allocates its own
        w = frozen(w)
        self.nfev += 1
        ev = (self.problem._evaluate(w) if scores is None
              else self.problem._evaluate(w, scores=scores))
        if not isinstance(ev, Evaluation):
            ev = Evaluation(w, *ev)
        self._accept(ev)
        return ev

    def _accept(self, ev: Evaluation) -> None:
        self._check_value(ev.fun, ev.w)
        if not ev.subgradient_is_finite():
            self._check_vector(ev.subgradient, ev.w)
        if math.isfinite(ev.fun):
            self._fmax = max(self._fmax, abs(ev.fun))
        self._gmax = max(self._gmax, ev.subgradient_norm())
        if self.check_convexity:
            self._check_plane(ev)
        self._note_value(ev.w, ev.fun)
        self._last_ref = weakref.ref(ev)
        for listener in self.listeners:
            listener(ev)

    def evaluate_groups(self, w: np.ndarray, n_groups: int):
        """Like :meth:`evaluate`, with the loss split into ``n_groups`` parts (one oracle call);
        returns ``(Evaluation, values, subgradients)``."""
        w = frozen(w)
        self.nfev += 1
        ev, values, subgradients = self.problem._evaluate_groups(w, n_groups)
        self._accept(ev)
        return ev, values, subgradients

    def _value_and_subgradient(self, w):
        ev = self.evaluate(w)
        return ev.fun, ev.subgradient

    def _minorants(self, w):
        r"""The problem's extra minorants at ``w`` (:meth:`Oracle.minorants`), part of the
        evaluation at ``w``: not counted in ``nfev``. Checked: finite entries
        (:class:`OracleNumericalError`), and with ``check_convexity`` every plane against the
        values known, :math:`\langle G_j, v\rangle + c_j \le f(v)` at ``w`` (when it was
        the last evaluation) and at the lowest point seen (:class:`NonConvexError`, with the
        plane and the point)."""
        out = _checked_minorants(self.problem._minorants(w), w.shape[0],
                                 type(self.problem).__name__)
        if out is None:
            return None
        G, c = out
        if not (_all_finite(G) and _all_finite(c)):
            raise OracleNumericalError("the oracle's minorants have non-finite entries",
                                       np.array(w, copy=True), "minorants")
        if self.check_convexity:
            last = self._last
            known = [] if self._lowest is None else [self._lowest]
            if last is not None and np.array_equal(last.w, w):
                known.append((last.w, last.fun))
            for v, fv in known:
                lin = G @ v + c
                j = int(np.argmax(lin))
                allowed = rounding_allowance(fv, float(lin[j]), self._fmax,
                                             float(np.abs(G[j]) @ np.abs(v)) + abs(float(c[j])))
                if lin[j] > fv + allowed:
                    raise NonConvexError(
                        f"the oracle's minorant {j} at w exceeds f at a point where f = {fv!r}: "
                        f"<G_j, v> + c_j = {float(lin[j])!r} (a minorant must lie below f "
                        "everywhere)", {"w": np.array(w, copy=True), "G_j": G[j].copy(),
                                        "c_j": float(c[j]), "v": np.array(v, copy=True),
                                        "f_v": fv})
        return G, c

    def _value(self, w):
        last = self._last
        if last is not None and np.array_equal(last.w, w):
            return last.fun
        cached = self._last_value
        if cached is not None and np.array_equal(cached[0], w):
            return cached[1]
        self.nfev += 1
        f = self._check_value(self.problem._value(w), w)
        self._last_value = (frozen(w), f)
        self._note_value(self._last_value[0], f)
        return f

    def _sup_subgradient(self, w, p):
        self.nfev += 1
        s, g = self.problem._sup_subgradient(w, p)
        s = self._check_value(s, w, "directional derivative") if not math.isfinite(s) else float(s)
        self._check_vector(g, w, "sup-subgradient")
        last = self._last
        if self.check_convexity and last is not None and np.array_equal(last.w, w):
            lin = last.subgradient_dot(p)
            if lin > s + rounding_allowance(s, lin, self._gmax * float(np.linalg.norm(p))):
                raise NonConvexError(
                    f"the directional derivative f'(w; p) = {s!r} is below <g, p> = {lin!r} for "
                    "the subgradient g the oracle returned at w: g is not a subgradient or the "
                    "sup is wrong (or the function is not convex)",
                    {"w": last.w, "p": np.array(p, copy=True), "sup": s, "g": last.subgradient})
        return s, g

    def _restrict(self, w, p):
        line = self.problem._restrict(w, p)
        if type(line) is GenericLine:
            # a generic line calls the oracle at every evaluation: route those calls through
            # this wrapper, so they are counted (nfev), cached and checked like any other
            line = GenericLine(self, w, p)
        return _GuardedLine(line, self, w, p)

    def _evaluate(self, w):
        return self.evaluate(w)


class WrappedLine(LineFunction):
    """Base of lines that watch another line's ``value`` and ``derivative`` (checking,
    counting): breakpoints pass through, and ``minimize`` runs the generic bisection through
    the wrapper (so it is watched too) unless the inner line has a closed form of its own."""

    def __init__(self, line: LineFunction):
        self.line = line
        self.cheap_derivative = line.cheap_derivative

    def value(self, eta):
        return self.line.value(eta)

    def derivative(self, eta, side=1):
        return self.line.derivative(eta, side)

    def breakpoints(self):
        return self.line.breakpoints()

    @property
    def affine_between_breakpoints(self):
        return self.line.affine_between_breakpoints

    def jumps(self):
        return self.line.jumps()

    def affine_derivative(self):
        return self.line.affine_derivative()

    def sweep(self):
        return self.line.sweep()

    def jumps_from(self, lo, horizon):
        return self.line.jumps_from(lo, horizon)

    def sweep_from(self, lo, horizon):
        return self.line.sweep_from(lo, horizon)

    def minimize(self, lo=0.0, hi=math.inf):
        if type(self.line).minimize is LineFunction.minimize:
            return LineFunction.minimize(self, lo, hi)
        return self.line.minimize(lo, hi)


class _GuardedLine(WrappedLine):
    """A line of a :class:`CountingOracle`: values and derivatives are checked for NaN/inf
    like the oracle's own answers (a line search must never swallow them)."""

    def __init__(self, line: LineFunction, owner: CountingOracle, w, p):
        super().__init__(line)
        self.owner, self.w, self.p = owner, w, p
        self.check_convexity = owner.check_convexity

    @property
    def value_scale(self) -> float:
        """The largest |value| the oracle has returned: the scale of rounding in line values."""
        return self.owner._fmax

    def _point(self, eta):
        return self.w + eta * self.p if math.isfinite(eta) else self.w

    def value(self, eta):
        f = self.line.value(eta)
        if not math.isfinite(f):
            self.owner._check_value(f, self._point(eta), "line value")
        return f

    def derivative(self, eta, side=1):
        d = self.line.derivative(eta, side)
        if math.isnan(d):
            raise OracleNumericalError(f"the line derivative at eta = {eta!r} is NaN",
                                       self._point(eta), "line derivative")
        return d

    def __getattr__(self, name):  # line-specific extras (margins, ...)
        if name == "line":
            raise AttributeError(name)
        return getattr(self.line, name)
