r"""The oracle protocol: what a solver may ask about a convex function.

An :class:`Oracle` answers four questions about a convex function :math:`f: \mathbb{R}^d \to
\mathbb{R}`:

* ``value(w)``: :math:`f(w)`;
* ``subgradient(w)``: any :math:`g \in \partial f(w)`;
* ``sup_subgradient(w, p)``: the directional derivative
  :math:`f'(w; p) = \sup_{g \in \partial f(w)} \langle g, p \rangle` and a :math:`g` attaining it;
* ``restrict(w, p)``: the line function :math:`\varphi(\eta) = f(w + \eta p)`.

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
from typing import Callable, NamedTuple, Sequence

import numpy as np
import scipy.sparse as sp

from ._validation import check_vector

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
]


class Evaluation(NamedTuple):
    """One oracle call at ``w``: the function value and a subgradient.

    For a :class:`~nsopt.RegularizedRisk` the loss part is reported too (``loss_value``,
    ``loss_subgradient``): it is a cutting plane of the risk, which certificates collect. A
    margin loss (``loss.dual_upper`` set) also reports ``loss_dual``, the dual point :math:`t`
    (one entry per example) whose ``loss.dual_plane(t)`` is that plane: the evidence
    :meth:`~nsopt.Certificate.check` verifies.
    """

    w: np.ndarray
    fun: float
    subgradient: np.ndarray
    loss_value: float | None = None
    loss_subgradient: np.ndarray | None = None
    loss_dual: np.ndarray | None = None


class Oracle:
    """Base class of every convex function nsopt can minimise.

    Attributes
    ----------
    dim : int or None
        Number of variables (``None`` for dimension-free functions such as regularizers).
    lower_bound : float
        A known lower bound on the function value (``-inf`` when none is known).
    """

    dim: int | None = None
    lower_bound: float = -math.inf

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

    # --- what a subclass implements ---------------------------------------------------
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
    ka, kb = _float_key(a), _float_key(b)
    while kb - ka > 1:
        km = (ka + kb) // 2
        if line.derivative(_key_float(km), 1) >= 0:
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
    if math.isfinite(right) and line.derivative(right, -1) <= 0:
        return float(right)  # the minimiser is the kink itself (or hi)
    if not math.isfinite(right):  # bracket the root on the last, unbounded piece
        step = max(1.0, abs(left))
        right = left + step
        while line.derivative(right, -1) < 0:
            step *= 2.0
            right = left + step
            if step > 1e300:
                return math.inf  # phi decreases without bound along the ray
    d = lambda eta: line.derivative(eta, 1)
    scale = max(1.0, abs(left), abs(right))
    # absolute xtol tiny: the relative rtol governs (a bracket far wider than the root is common)
    return float(brentq(d, left, right, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))


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
    def __init__(self, lines: Sequence[LineFunction]):
        self.lines = list(lines)
        self.cheap_derivative = all(line.cheap_derivative for line in self.lines)

    def value(self, eta):
        return float(sum(line.value(eta) for line in self.lines))

    def derivative(self, eta, side=1):
        return float(sum(line.derivative(eta, side) for line in self.lines))

    def breakpoints(self):
        parts = [line.breakpoints() for line in self.lines]
        if any(p is None for p in parts):
            return None
        merged = np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])
        merged.sort()
        return merged


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
    """Wrap user callables as an :class:`Oracle`.

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
        A known lower bound on ``fun``.
    """

    def __init__(self, fun: Callable | None = None, subgradient: Callable | None = None,
                 dim: int | None = None, sup_subgradient: Callable | None = None,
                 value_and_subgradient: Callable | None = None, lower_bound: float = -math.inf):
        if value_and_subgradient is None and (fun is None or subgradient is None):
            raise TypeError("FunctionOracle needs fun and subgradient, or value_and_subgradient")
        for name, f in (("fun", fun), ("subgradient", subgradient),
                        ("sup_subgradient", sup_subgradient),
                        ("value_and_subgradient", value_and_subgradient)):
            if f is not None and not callable(f):
                raise TypeError(f"{name} must be callable, got {type(f).__name__}")
        if dim is not None:
            if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
                raise ValueError(f"dim must be a positive integer or None, got {dim!r}")
            dim = int(dim)
        self._fun, self._sub, self._vas, self._sup = fun, subgradient, value_and_subgradient, sup_subgradient
        self.dim = dim
        self.lower_bound = float(lower_bound)

    def _value(self, w):
        if self._fun is not None:
            return float(self._fun(w))
        return float(self._vas(w)[0])

    def _value_and_subgradient(self, w):
        if self._vas is not None:
            f, g = self._vas(w)
        else:
            f, g = self._fun(w), self._sub(w)
        g = np.asarray(g, dtype=np.float64).reshape(-1)
        if g.shape != w.shape:
            raise ValueError(f"the user subgradient has shape {g.shape}, expected {w.shape}")
        return float(f), g

    def _sup_subgradient(self, w, p):
        if self._sup is None:
            return super()._sup_subgradient(w, p)
        s, g = self._sup(w, p)
        g = np.asarray(g, dtype=np.float64).reshape(-1)
        if g.shape != w.shape:
            raise ValueError(f"the user sup_subgradient returned g of shape {g.shape}, expected {w.shape}")
        return float(s), g


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
class CountingOracle(Oracle):
    """Wrap an oracle for a solver run: count calls, cache the last point, notify listeners.

    ``nfev`` counts calls that reach the wrapped oracle (value, value-and-subgradient and
    sup-subgradient evaluations; a repeated point is served from the cache and not counted).
    Line evaluations through ``restrict`` are cheap by design and are not counted.

    Every full evaluation is passed to the ``listeners`` (callables taking an
    :class:`Evaluation`); the plane certifier is one.
    """

    def __init__(self, oracle: Oracle):
        self.oracle = oracle
        self.dim = oracle.dim
        self.lower_bound = oracle.lower_bound
        self.nfev = 0
        self.listeners: list[Callable[[Evaluation], None]] = []
        self._last: Evaluation | None = None
        self._last_value: tuple[np.ndarray, float] | None = None

    def __getattr__(self, name):  # expose the problem's parts (loss, reg, lam, ...)
        if name == "oracle":
            raise AttributeError(name)
        return getattr(self.oracle, name)

    def evaluate(self, w: np.ndarray) -> Evaluation:
        last = self._last
        if last is not None and (last.w is w or np.array_equal(last.w, w)):
            return last
        w = np.array(w, dtype=np.float64)  # own copy: callers may mutate theirs
        self.nfev += 1
        ev = self.oracle._evaluate(w)
        if not isinstance(ev, Evaluation):
            ev = Evaluation(w, *ev)
        self._last = ev
        for listener in self.listeners:
            listener(ev)
        return ev

    def evaluate_groups(self, w: np.ndarray, n_groups: int):
        """Like :meth:`evaluate`, with the loss split into ``n_groups`` parts (one oracle call);
        returns ``(Evaluation, values, subgradients)``."""
        w = np.array(w, dtype=np.float64)
        self.nfev += 1
        ev, values, subgradients = self.oracle._evaluate_groups(w, n_groups)
        self._last = ev
        for listener in self.listeners:
            listener(ev)
        return ev, values, subgradients

    def _value_and_subgradient(self, w):
        ev = self.evaluate(w)
        return ev.fun, ev.subgradient

    def _value(self, w):
        last = self._last
        if last is not None and np.array_equal(last.w, w):
            return last.fun
        cached = self._last_value
        if cached is not None and np.array_equal(cached[0], w):
            return cached[1]
        self.nfev += 1
        f = self.oracle._value(w)
        self._last_value = (np.array(w, dtype=np.float64), f)
        return f

    def _sup_subgradient(self, w, p):
        self.nfev += 1
        return self.oracle._sup_subgradient(w, p)

    def _restrict(self, w, p):
        return self.oracle._restrict(w, p)

    def _evaluate(self, w):
        return self.evaluate(w)
