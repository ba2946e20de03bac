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
:func:`smooth_line_search` is exact on a differentiable loss's line plus a regularizer's line
with cheap derivatives (a bracketed secant over the regularizer's breakpoints; LS-BMRM's L1 path).

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

import numpy as np

from .oracle import LineFunction, NonConvexError, WrappedLine, rounding_allowance

__all__ = ["LineSearchResult", "wolfe_line_search", "exact_line_search", "smooth_line_search"]


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


def _smooth_plus_cheap(line):
    r"""``(S, K)`` when ``line`` is :math:`\varphi = S + K` with :math:`S` the line of a
    differentiable loss (``line.lines[0].loss.differentiable``: :math:`S'` continuous, one
    O(m) pass over the scores per derivative) and :math:`K` a regularizer's line with cheap
    exact one-sided derivatives and known breakpoints (O(d), no data); else None."""
    parts = getattr(line, "lines", None)
    if parts is None or len(parts) != 2:
        return None
    s, k = parts
    if not getattr(getattr(s, "loss", None), "differentiable", False):
        return None
    if not (getattr(s, "cheap_derivative", False) and getattr(k, "cheap_derivative", False)):
        return None
    bps = k.breakpoints()
    if bps is None:
        return None
    return s, k, np.asarray(bps, dtype=np.float64)


def _model_root(a, b, s_at, k_der, bps):
    """The root in ``[a, b]`` of the nondecreasing model ``m(eta) = s_at(eta) + K'(eta)``
    (``s_at`` affine, ``K'`` the exact one-sided derivative of the cheap part, affine between
    its breakpoints ``bps`` or modelled so): a breakpoint where ``m`` changes sign, else the
    linear root on the piece between the breakpoints that bracket it."""
    lo = int(np.searchsorted(bps, a, side="right"))
    hi = int(np.searchsorted(bps, b, side="left"))
    inner = bps[lo:hi]                       # the breakpoints strictly inside (a, b)
    i, j = 0, inner.size                     # first index with m(inner[k]+) >= 0
    while i < j:
        mid = (i + j) // 2
        if s_at(inner[mid]) + k_der(inner[mid], 1) >= 0:
            j = mid
        else:
            i = mid + 1
    left = inner[i - 1] if i > 0 else a
    right = inner[i] if i < inner.size else b
    m_right = s_at(right) + k_der(right, -1)
    if right < b and m_right <= 0:           # the kink itself
        return float(right)
    m_left = s_at(left) + k_der(left, 1)
    if not (m_left < 0 < m_right):
        return float(left if m_left >= 0 else right)
    return float(left + (right - left) * (-m_left / (m_right - m_left)))


def smooth_line_search(line, guess: float = 1.0, max_evals: int = 60):
    r"""The exact minimiser over :math:`\eta \ge 0` of a line :math:`\varphi = S + K` of a
    differentiable loss :math:`S` plus a regularizer's line :math:`K` with cheap one-sided
    derivatives and breakpoints (L1, elastic net, L2), by a bracketed secant method on
    :math:`S'` combined with the exact :math:`K'`; None when the line is not of that form
    (then :func:`~nsopt.linesearch.exact_line_search` serves).

    Each trial step is the root of :math:`\hat S'(\eta) + K'(\eta)` with :math:`\hat S'` the
    line through the last evaluation of :math:`S'` with the slope of the secant of the last two
    (on a loss without kinks, the tangent of the parabola through the last three; the
    bracket's secant when the slope is not positive): found over :math:`K`'s breakpoints
    without touching the data, so a kink of the L1 norm is located exactly and the smooth
    part converges superlinearly. A step whose correction is below 1e-10 of itself (and
    crosses no breakpoint) is taken without another evaluation; three moves of one end of a
    bracket in a row are followed by a bisection. Only
    :math:`S'` costs a pass over the m scores (no data pass: the line's scores are kept);
    a step ends the search when :math:`0 \in \partial\varphi(\eta)` as computed, when the
    smooth derivative vanishes to rounding, or when the bracket has shrunk to rounding.
    The generic search ([YVGS10]_-style bisection over all breakpoints, then Brent on the
    last piece) needs about 17 derivative calls on a9a (L1 logistic); this one 4-7.

    Parameters
    ----------
    line : LineFunction
    guess : float > 0, default 1
        The first trial step (LS-BMRM passes the last step taken: successive steps are of
        one size, and a first bracket around the root makes the secant accurate at once).
    max_evals : int
        Evaluations of :math:`S'` at most (then None: the generic search takes over).

    Returns
    -------
    LineSearchResult or None
        ``exact=True`` with ``value`` :math:`\varphi(\eta)` (one value pass), ``eta = inf``
        and ``value = -inf`` when :math:`\varphi` decreases without bound.
    """
    split = _smooth_plus_cheap(line)
    if split is None:
        return None
    s_line, k_line, bps = split
    k_memo = {}

    def k_der(eta, side=1):  # O(d) each: the model roots probe the same breakpoints again
        key = (eta, side)
        v = k_memo.get(key)
        if v is None:
            v = k_memo[key] = float(k_line.derivative(eta, side))
        return v
    eps = np.finfo(np.float64).eps
    n = 0

    def s_der(eta):
        nonlocal n
        n += 1
        return float(s_line.derivative(eta, 1))  # differentiable: both sides agree

    def done(eta):
        nonlocal n
        n += 1
        return LineSearchResult(float(eta), float(line.value(eta)), n, True, True)

    a, sa = 0.0, s_der(0.0)                  # phi'(a+) < 0 throughout
    if sa + k_der(0.0, 1) >= 0:
        return done(0.0)
    b, sb = math.inf, math.nan               # phi'(b-) > 0 once finite
    x1, s1 = a, sa                           # the last evaluations of S', newest first
    # a loss without kinks (logistic) has a smooth S': three points model its curvature; a
    # piecewise-quadratic one (squared hinge) has an S' with corners, where secants do better
    smooth = getattr(s_line.loss, "kinks", lambda: ())() is None
    x2 = s2 = None
    t = float(guess) if math.isfinite(guess) and guess > 0 else 1.0
    same_side, last_side = 0, None           # a stall: one end keeps moving, the other not
    while n < max_evals:
        st = s_der(t)
        left, right = st + k_der(t, -1), st + k_der(t, 1)
        if left <= 4 * eps * (abs(st) + abs(left)) and right >= -4 * eps * (abs(st) + abs(right)):
            return done(t)                   # 0 in the subdifferential, to rounding
        moved_a = right < 0
        if moved_a:
            a, sa = t, st
        else:
            b, sb = t, st
        # regula falsi's stall (one end of a bracket keeps moving): bisect instead
        same_side = same_side + 1 if moved_a == last_side and math.isfinite(b) else 1
        last_side = moved_a
        x1, s1, x2, s2, x3, s3 = t, st, x1, s1, x2, s2
        if math.isfinite(b) and b - a <= 4 * eps * b:
            return done(b if abs(sb + k_der(b, -1)) < abs(sa + k_der(a, 1)) else a)
        if a > 1e300:
            return LineSearchResult(math.inf, -math.inf, n, False, True)
        slope = (s1 - s2) / (x1 - x2) if x1 != x2 else math.nan
        if smooth and x3 is not None and x3 != x1 and x3 != x2 and math.isfinite(slope):
            # the tangent at x1 of the parabola through three evaluations (order 1.84
            # instead of the secant's 1.62): S' is smooth, and curved over long lines
            curv = (slope - (s2 - s3) / (x2 - x3)) / (x1 - x3)
            tangent = slope + curv * (x1 - x2)
            if math.isfinite(tangent) and tangent > 0:
                slope = tangent
        if not (math.isfinite(slope) and slope > 0) and math.isfinite(b):
            x1, s1, slope = b, sb, (sb - sa) / (b - a)   # the bracket's secant
        # where the model may look: the bracket, or up to 4 times the last point beyond it
        top = b if math.isfinite(b) else 4.0 * max(x1, x2, a)
        t = math.nan
        if same_side < 4 and math.isfinite(slope) and slope > 0:
            root = _model_root(a, top, lambda e, x=x1, sx=s1, sl=slope: sx + sl * (e - x),
                               k_der, bps)
            if a < root <= top and (root < b or not math.isfinite(b)):
                t = root
                # the secant's correction below 1e-10 of the step: its error is of the
                # order of that squared (superlinear), below rounding; no more evaluations
                if abs(root - x1) <= 1e-10 * root \
                        and not np.any((bps > min(root, x1)) & (bps < max(root, x1))):
                    return done(root)
        if not math.isfinite(t):
            t = 0.5 * (a + b) if math.isfinite(b) else 4.0 * max(a, x1)
            same_side = 0
    return None
