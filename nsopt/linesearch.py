r"""Line searches on a :class:`~nsopt.LineFunction`: the subgradient Wolfe search and the exact one.

For a convex :math:`J`, a point :math:`w` and a direction :math:`p`, the line function is
:math:`\Phi(\eta) = J(w + \eta p)`. Its right derivative at 0 is the directional derivative
:math:`\Phi'(0^+) = \sup_{g \in \partial J(w)} g^T p` (what ``oracle.sup_subgradient(w, p)``
returns), and :math:`p` is a descent direction iff it is negative ([YVGS10]_ eq. 16).

The **subgradient Wolfe conditions** ([YVGS10]_ Sec. 3.3, eqs. 23-24), with
:math:`0 < c_1 < c_2 < 1`:

.. math::
    J(w + \eta p) &\le J(w) + c_1\,\eta\,\sup_{g \in \partial J(w)} g^T p
        && \text{(sufficient decrease, 23)}\\
    \sup_{g' \in \partial J(w + \eta p)} g'^T p &\ge c_2 \sup_{g \in \partial J(w)} g^T p
        && \text{(curvature, 24)}

that is :math:`\Phi(\eta) \le \Phi(0) + c_1 \eta \Phi'(0^+)` and
:math:`\Phi'(\eta^+) \ge c_2 \Phi'(0^+)`: the ordinary Wolfe conditions with every derivative
replaced by the *right* derivative, the sup over the subdifferential. If :math:`p` is a descent
direction and :math:`\Phi` is bounded below, steps satisfying both exist ([YVGS10]_ Thm. 11).

:func:`wolfe_line_search` finds one by bracketing and zoom with safeguarded interpolation;
:func:`exact_line_search` returns :math:`\eta^* = \arg\min_{\eta \ge 0}\Phi(\eta)` where the line
knows its breakpoints (``LineFunction.minimize``), else falls back to the Wolfe search.

References
----------
.. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton approach
   to nonsmooth convex optimization problems in machine learning. JMLR 11:1145-1200, 2010.
   Sec. 3.3 (eqs. 23-24), Theorem 11, Appendix C.
.. [NW06] J. Nocedal, S. J. Wright. Numerical Optimization, 2nd ed. Springer, 2006.
   Algorithms 3.5-3.6 (bracketing and zoom), eq. 3.59 (cubic interpolation).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from .oracle import LineFunction, NonConvexError, WrappedLine, rounding_allowance

__all__ = ["LineSearchResult", "wolfe_line_search", "exact_line_search"]


class LineSearchResult(NamedTuple):
    """What a line search returns.

    Attributes
    ----------
    eta : float
        The step; ``0.0`` when no acceptable step was found and ``inf`` when :math:`\\Phi`
        decreases without bound along the ray (then ``value`` is ``-inf``).
    value : float
        :math:`\\Phi(\\eta)`.
    n_evals : int
        Evaluations of the line function (values and one-sided derivatives) made by the search.
    success : bool
        True when ``eta`` satisfies the conditions the search enforces (both Wolfe conditions,
        or exact minimality); False on a non-descent direction, an unbounded ray, or when
        ``max_iter`` ran out (then ``eta`` is the largest step found with sufficient decrease).
    exact : bool
        True when the step came from ``line.minimize`` (an exact line search).
    """

    eta: float
    value: float
    n_evals: int
    success: bool
    exact: bool = False


class _Counted(WrappedLine):
    """Counts the value/derivative calls made through it (also those of the generic
    breakpoint-bisection ``minimize``; a specialised closed-form ``minimize`` is not counted)."""

    def __init__(self, line: LineFunction):
        super().__init__(line)
        self.n = 0

    def value(self, eta):
        self.n += 1
        return self.line.value(eta)

    def derivative(self, eta, side=1):
        self.n += 1
        return self.line.derivative(eta, side)


class _Shifted(LineFunction):
    """``eta -> line(lo + eta)``."""

    def __init__(self, line: LineFunction, lo: float):
        self.line, self.lo = line, lo

    def value(self, eta):
        return self.line.value(self.lo + eta)

    def derivative(self, eta, side=1):
        return self.line.derivative(self.lo + eta, side)


def _interpolate(lo, f_lo, d_lo, hi, f_hi, d_hi, sigma=0.1):
    """A trial step in ``(lo, hi)``: the minimiser of the cubic Hermite interpolant of the two
    end values and one-sided slopes ([NW06]_ eq. 3.59) when it exists, else the crossing of the
    two tangent lines (exact for a piecewise-linear function with one kink in between), else the
    midpoint; always kept at least ``sigma * (hi - lo)`` from either end."""
    width = hi - lo
    eta = math.nan
    if math.isfinite(f_hi) and math.isfinite(d_hi):
        d1 = d_lo + d_hi - 3.0 * (f_lo - f_hi) / (lo - hi)
        disc = d1 * d1 - d_lo * d_hi
        if disc >= 0.0:
            d2 = math.sqrt(disc)
            den = d_hi - d_lo + 2.0 * d2
            if den != 0.0:
                eta = hi - width * (d_hi + d2 - d1) / den
        if not math.isfinite(eta) and d_hi != d_lo:
            eta = (f_hi - f_lo + d_lo * lo - d_hi * hi) / (d_lo - d_hi)
    if not math.isfinite(eta):
        eta = lo + 0.5 * width
    return min(max(eta, lo + sigma * width), hi - sigma * width)


def wolfe_line_search(line: LineFunction, f0: float, slope0: float, c1: float = 1e-4,
                      c2: float = 0.9, eta0: float = 1.0, max_iter: int = 60,
                      eta_max: float = 1e20) -> LineSearchResult:
    r"""A step satisfying the subgradient Wolfe conditions ([YVGS10]_ eqs. 23-24).

    .. math::
        \Phi(\eta) \le \Phi(0) + c_1\eta\,\Phi'(0^+), \qquad \Phi'(\eta^+) \ge c_2\,\Phi'(0^+)

    Parameters
    ----------
    line : LineFunction
        :math:`\Phi`, with ``value`` and one-sided ``derivative``; any line works (a generic
        ``oracle.restrict`` line included).
    f0 : float
        :math:`\Phi(0)`.
    slope0 : float
        :math:`\Phi'(0^+) = \sup_{g\in\partial J(w)} g^T p`, the *sup*-directional derivative
        (an arbitrary subgradient's slope would not do: [YVGS10]_ Sec. 3.3). Must be < 0.
    c1, c2 : float, 0 < c1 < c2 < 1
        Sufficient-decrease and curvature constants. ``c1 = 1e-4`` is the paper's suggestion
        (Sec. 3.3); the paper gives no ``c2``: 0.9 is the usual quasi-Newton value ([NW06]_ 3.1).
    eta0 : float > 0
        First trial step (1 for quasi-Newton directions).
    max_iter : int
        Trial steps at most.
    eta_max : float
        When a step this large still satisfies sufficient decrease but not curvature and the
        value fell by more than ``max(1, |f0|)``, the ray is declared unbounded: ``eta = inf``,
        ``value = -inf``, ``success = False`` (with less decrease: that step, ``success =
        False``).

    Returns
    -------
    LineSearchResult

    Notes
    -----
    Bracketing and zoom ([NW06]_ Algs. 3.5-3.6, for the weak conditions): ``lo`` always
    satisfies sufficient decrease but not curvature, ``hi`` violates sufficient decrease. A
    trial that satisfies both is returned; one with sufficient decrease only becomes ``lo``
    (expansion by 4 while ``hi`` is unknown); one without becomes ``hi``. Inside a bracket the
    trial is the safeguarded interpolant of :func:`_interpolate`, which uses the right slope at
    ``lo`` and the left slope at ``hi``. Because :math:`\Phi` is convex, the points with
    sufficient decrease form an interval :math:`[0, \eta_a]` and those with the curvature
    condition a ray :math:`[\eta_c, \infty)` with :math:`\eta_c \le \eta_a` (Thm. 11), so the
    bracket always holds acceptable steps and the search terminates.
    """
    if not (0.0 < c1 < c2 < 1.0):
        raise ValueError(f"need 0 < c1 < c2 < 1, got c1={c1}, c2={c2}")
    if not eta0 > 0:
        raise ValueError(f"eta0 must be > 0, got {eta0}")
    if not slope0 < 0:  # not a descent direction (or NaN): no step
        return LineSearchResult(0.0, float(f0), 0, False)
    lo, f_lo, d_lo = 0.0, float(f0), float(slope0)
    hi, f_hi, d_hi = math.inf, math.nan, math.nan
    check_tangent = getattr(line, "check_convexity", True)
    scale = float(getattr(line, "value_scale", 0.0))
    eta, n = min(float(eta0), eta_max), 0
    for _ in range(max_iter):
        f = float(line.value(eta))
        n += 1
        if check_tangent:
            _check_tangent(f0, slope0, eta, f, scale)
        if not f <= f0 + c1 * eta * slope0:        # (23) fails (or NaN): eta brackets from above
            hi, f_hi = eta, f
            d_hi = float(line.derivative(eta, -1)) if math.isfinite(f) else math.nan
            n += math.isfinite(f)
        else:
            d = float(line.derivative(eta, 1))
            n += 1
            if d >= c2 * slope0:                     # (24) holds too
                return LineSearchResult(eta, f, n, True)
            lo, f_lo, d_lo = eta, f, d
        if math.isinf(hi):
            if lo >= eta_max:
                # decreasing all the way to eta_max is evidence of an unbounded ray only if the
                # decrease is real: a promised decrease c1 eta slope0 below the rounding of f0
                # "holds" with f == f0 (a flat line at a minimiser, seen on a quadratic)
                if f_lo < f0 - max(1.0, abs(f0)):
                    return LineSearchResult(math.inf, -math.inf, n, False)
                return LineSearchResult(lo, f_lo, n, False)
            eta = min(4.0 * lo, eta_max)
        else:
            if hi - lo <= 4 * 2.2e-16 * hi:          # bracket below rounding: give up
                break
            eta = _interpolate(lo, f_lo, d_lo, hi, f_hi, d_hi)
    return LineSearchResult(lo, f_lo, n, False)


def _check_tangent(f0: float, slope0: float, eta: float, f: float, scale: float) -> None:
    r"""A convex line lies above its tangent at 0: :math:`\Phi(\eta) \ge \Phi(0) +
    \eta\,\Phi'(0^+)`. Below it beyond rounding, the function is not convex (or the
    directional derivative is wrong): :class:`~nsopt.oracle.NonConvexError`. Rounding is
    judged against ``scale``, the largest value the oracle has returned (values near a
    minimiser are sums of terms of that size)."""
    tangent = f0 + eta * slope0
    if f < tangent - rounding_allowance(f0, f, eta * slope0, scale):
        raise NonConvexError(
            f"the function on the line is below its tangent at 0: phi({eta!r}) = {f!r} < "
            f"phi(0) + eta phi'(0+) = {tangent!r}",
            {"eta": eta, "f": f, "f0": f0, "slope0": slope0})


def exact_line_search(line: LineFunction, lo: float = 0.0, hi: float = math.inf, *,
                      f0: float | None = None, slope0: float | None = None,
                      **wolfe_options) -> LineSearchResult:
    r"""An exact minimiser :math:`\eta^* \in \arg\min_{lo \le \eta \le hi}\Phi(\eta)`, via
    ``line.minimize`` ([YVGS10]_ Algs. 3 and 5 for the hinge losses; nsopt's lines bisect
    over their breakpoints).

    Where the line has no exact minimiser (``minimize`` raises ``NotImplementedError``) this
    falls back to :func:`wolfe_line_search` started at ``lo`` (with ``eta_max`` capped by
    ``hi - lo``); ``f0`` and ``slope0`` (:math:`\Phi(lo)`, :math:`\Phi'(lo^+)`) are computed
    from the line when not given.

    The exact step always satisfies the curvature condition (24) for a descent direction,
    since :math:`0 \in \partial\Phi(\eta^*)`; it may violate sufficient decrease (23) for
    large ``c1`` ([YVGS10]_ Sec. 3.3), which callers may check. A direction that is not a
    descent direction gives ``eta = lo`` (what ls-BMRM needs); an unbounded ray gives
    ``eta = inf`` and ``value = -inf`` (``success = False``). ``success`` is True otherwise.
    """
    counted = _Counted(line)
    try:
        eta = float(counted.minimize(lo, hi))
    except NotImplementedError:
        extra = (f0 is None) + (slope0 is None)
        f0 = float(line.value(lo)) if f0 is None else float(f0)
        slope0 = float(line.derivative(lo, 1)) if slope0 is None else float(slope0)
        opts = dict(wolfe_options)
        if math.isfinite(hi):
            opts["eta_max"] = min(opts.get("eta_max", 1e20), hi - lo)
        shifted = line if lo == 0.0 else _Shifted(line, lo)
        res = wolfe_line_search(shifted, f0, slope0, **opts)
        res = res._replace(eta=lo + res.eta, n_evals=res.n_evals + extra)
        if math.isinf(res.eta) and math.isfinite(hi):  # the cap hi, not an unbounded ray
            res = res._replace(eta=hi, value=float(line.value(hi)), n_evals=res.n_evals + 1)
        return res
    if math.isinf(eta):
        return LineSearchResult(math.inf, -math.inf, counted.n, False, True)
    value = float(counted.value(eta))
    return LineSearchResult(eta, value, counted.n, True, True)
