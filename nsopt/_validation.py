"""Every input check of nsopt, in one place.

The checks run at the boundaries only (oracle and loss constructors, ``RegularizedRisk``,
``Solver.__init__`` and ``Solver.solve``), never inside an iteration. Messages say what is
wrong and what to do about it.

Numbers are real: complex input (any complex dtype, even with a zero imaginary part),
strings, bytes, dates and object arrays holding anything but real numbers are rejected with a
``TypeError`` naming the argument, never truncated (numpy's cast to float64 would drop the
imaginary part with only a ``ComplexWarning``). Booleans and integers are accepted as numbers.
User data is never modified: a scipy matrix that needs canonicalising (duplicate entries,
unsorted indices) is copied first, and only then.
"""
from __future__ import annotations

import math
import numbers
import os
import sys
import warnings
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

__all__ = [
    "as_real_array",
    "check_vector",
    "check_data",
    "canonical_csr",
    "check_binary_labels",
    "check_targets",
    "check_positive",
    "check_lengths",
    "check_callback",
    "check_lower_bound",
    "check_box",
    "box_for_dim",
    "check_dim",
    "user_scalar",
    "user_vector",
    "user_pair",
    "Constraint",
    "Interval",
    "Options",
    "Boolean",
    "NoneOr",
    "Satisfies",
    "Option",
    "validate_options",
    "check_planes",
]


def _all_finite(a: np.ndarray) -> bool:
    # cheap test first (one reduction), element-wise pass only to explain a failure
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.sum(a))) or bool(np.isfinite(a).all())


_REAL_KINDS = frozenset("biuf")  # bool, signed and unsigned integers, floats


def _real_dtype_error(arr: np.ndarray, name: str, what: str) -> TypeError | None:
    """The error for an array whose dtype is not real-numeric, or None when it is fine."""
    kind = arr.dtype.kind
    if kind in _REAL_KINDS:
        return None
    if kind == "c":
        return TypeError(
            f"{name} has complex dtype {arr.dtype}; nsopt works over the reals and does not "
            f"drop imaginary parts silently: pass {name}.real if that is what you mean"
        )
    if kind == "O":
        if arr.ndim == 0:  # not an array at all: None, a dict, a sparse matrix ...
            v = arr.item()
            return TypeError(f"{name} must be {what}, got {type(v).__name__} {_short(v)}")
        for pos, v in enumerate(arr.flat):
            if isinstance(v, numbers.Real) and not isinstance(v, (str, bytes)):
                continue
            at = np.unravel_index(pos, arr.shape) if arr.ndim > 1 else (pos,)
            at = ", ".join(str(int(i)) for i in at)
            if isinstance(v, numbers.Complex):
                return TypeError(
                    f"{name} holds a complex number {v!r} at [{at}]; nsopt works over the reals "
                    "(pass the real part if that is what you mean)"
                )
            return TypeError(
                f"{name} must be {what}, but {name}[{at}] is {type(v).__name__} {_short(v)}"
            )
        return None
    return TypeError(f"{name} must be {what}, got an array of dtype {arr.dtype}")


def _short(v, limit=40) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def as_real_array(x, name="x", *, what="an array of real numbers", copy=False) -> np.ndarray:
    """``x`` as a float64 ndarray (shape kept), rejecting complex, string and other non-real
    input with a ``TypeError`` naming ``name``. Never modifies ``x``; copies only when asked or
    when a conversion is needed."""
    try:
        arr = x if isinstance(x, np.ndarray) else np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nested lists, unconvertible objects
        raise TypeError(f"{name} must be {what}, got {type(x).__name__} ({exc})") from exc
    err = _real_dtype_error(arr, name, what)
    if err is not None:
        raise err
    try:
        return np.array(arr, dtype=np.float64, copy=True) if copy else arr.astype(np.float64, copy=False)
    except (TypeError, ValueError) as exc:  # pragma: no cover - object arrays of odd numbers
        raise TypeError(f"{name} must be {what}, got {type(x).__name__}") from exc


def check_vector(x, dim=None, name="x", *, copy=False, finite=True) -> np.ndarray:
    """Return ``x`` as a 1-D float64 C-contiguous array, checking length and finiteness."""
    arr = as_real_array(x, name, what="a 1-D array of real numbers", copy=copy)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D, got an array of shape {arr.shape}; "
            "matrix variables are passed flattened in C order (see the loss's .shape)"
        )
    if dim is not None and arr.shape[0] != dim:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {dim}")
    if finite and not _all_finite(arr):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{name} contains NaN or inf (first at index {bad[0]})")
    return np.ascontiguousarray(arr)


def canonical_csr(X, name="X") -> sp.csr_matrix:
    """A float64 CSR matrix with sorted indices and no duplicates, equal to the sparse ``X``.

    The caller's matrix is never modified: when ``X`` is already canonical float64 CSR its
    arrays are shared (no copy on the fast path); otherwise the canonical form is built on a
    copy."""
    err = _real_dtype_error(np.empty(0, dtype=X.dtype), name, "a matrix of real numbers")
    if err is not None:
        raise err
    out = sp.csr_matrix(X, dtype=np.float64)  # may share data/indices/indptr with X
    if not out.has_canonical_format:
        out = out.copy()  # the arrays may be the caller's: canonicalise a copy
        out.sum_duplicates()  # sorts the indices too
        out.sort_indices()
    return out


def check_data(X, name="X"):
    """Return ``X`` as a C-ordered float64 ndarray or a CSR matrix, checking 2-D and finiteness.

    The caller's ``X`` is never modified (see :func:`canonical_csr`)."""
    if sp.issparse(X):
        X = canonical_csr(X, name)
        data = X.data
        shape = X.shape
    else:
        X = as_real_array(X, name, what="a 2-D array of real numbers or a scipy.sparse matrix")
        if X.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D (examples x features), got shape {X.shape}; "
                "reshape a single feature with X.reshape(-1, 1)"
            )
        X = np.ascontiguousarray(X)
        data = X
        shape = X.shape
    if shape[0] == 0:
        raise ValueError(f"{name} has no rows (examples)")
    if shape[1] == 0:
        raise ValueError(f"{name} has no columns (features)")
    if not _all_finite(data):
        if sp.issparse(X):
            k = int(np.flatnonzero(~np.isfinite(X.data))[0])
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            where = f"row {row}, column {X.indices[k]}"
        else:
            r, c = np.argwhere(~np.isfinite(X))[0]
            where = f"row {r}, column {c}"
        raise ValueError(f"{name} contains NaN or inf (first at {where})")
    return X


def check_lengths(m: int, y, name="y") -> None:
    if len(y) != m:
        raise ValueError(f"X has {m} rows but {name} has {len(y)} entries; they must match")


def check_targets(y, m: int, name="y") -> np.ndarray:
    """Real-valued targets: 1-D, finite, one per example."""
    y = check_vector(y, None, name)
    check_lengths(m, y, name)
    return y


def check_binary_labels(y, m: int, name="y") -> np.ndarray:
    """Binary labels in {-1, +1} as float64; anything else is an error naming the bad values."""
    y = check_targets(y, m, name)
    bad = (y != 1.0) & (y != -1.0)
    if bad.any():
        vals = np.unique(y[bad])[:5]
        raise ValueError(
            f"{name} must contain only -1 and +1 for a binary loss; found {vals.tolist()}"
            " (map two-class labels with np.where(y == positive, 1.0, -1.0))"
        )
    return y


def check_sample_weight(sample_weight, m: int) -> np.ndarray:
    """Example weights normalised to sum 1 (the uniform ``1/m`` when None): nonnegative, finite,
    length ``m``, with a positive sum."""
    if sample_weight is None:
        return np.full(m, 1.0 / m)
    s = check_vector(sample_weight, m, "sample_weight")
    if (s < 0).any():
        i = int(np.flatnonzero(s < 0)[0])
        raise ValueError(f"sample_weight must be nonnegative; sample_weight[{i}] = {s[i]}")
    if s.sum() <= 0:
        raise ValueError("sample_weight must have a positive sum; all weights are 0")
    return s / s.sum()


def check_positive(value, name: str, *, strict=True, hint: str = "") -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (strict and value == 0):
        op = ">" if strict else ">="
        raise ValueError(f"{name} must be {op} 0, got {value}" + (f"; {hint}" if hint else ""))
    return value


def check_callback(callback):
    """``callback`` must be None or callable; checked before the first step, not after it."""
    if callback is not None and not callable(callback):
        raise TypeError(
            f"callback must be None or a callable callback(state), got {type(callback).__name__} "
            f"{_short(callback)}"
        )
    return callback


def check_lower_bound(value, name="lower_bound") -> float:
    """A known lower bound on a function: a real number < +inf; ``-inf`` means none known."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number (or -inf when none is known), "
                        f"got {type(value).__name__}")
    value = float(value)
    if math.isnan(value) or value == math.inf:
        raise ValueError(f"{name} must be a real number < inf (-inf when none is known), got {value}")
    return value


def check_box(bounds, name="bounds", *, finite=False) -> tuple[np.ndarray, np.ndarray]:
    """A box ``lb <= x <= ub`` in scipy's convention: a pair ``(lb, ub)`` of numbers or 1-D
    arrays (broadcast against each other), or a ``scipy.optimize.Bounds``. Returns ``(lb, ub)``
    as float64 arrays (0-d or 1-d; the dimension is checked by :func:`box_for_dim`).

    ``TypeError`` for anything else (a list of d ``(min, max)`` pairs included: pass
    ``(lb, ub)``); ``ValueError`` for NaN, ``lb > ub``, ``lb = +inf`` or ``ub = -inf``, and
    with ``finite=True`` for any infinite side. Messages name ``name`` and the entry."""
    lb_ub = None
    if hasattr(bounds, "lb") and hasattr(bounds, "ub") and not isinstance(bounds, (tuple, list)):
        lb_ub = (bounds.lb, bounds.ub)          # scipy.optimize.Bounds (keep_feasible ignored)
    elif isinstance(bounds, (tuple, list)) and len(bounds) == 2:
        lb_ub = tuple(bounds)
    if lb_ub is None:
        raise TypeError(f"{name} must be a pair (lb, ub) of numbers or 1-D arrays, or a "
                        f"scipy.optimize.Bounds, got {type(bounds).__name__} {_short(bounds)}")
    out = []
    for side, v in zip(("lb", "ub"), lb_ub):
        if v is None:
            raise TypeError(f"{name}: {side} is None; give -inf / inf for an unbounded side")
        a = as_real_array(v, f"{name} {side}", what="a number or a 1-D array of real numbers",
                          copy=True)
        if a.ndim > 1:
            raise ValueError(f"{name}: {side} must be a number or a 1-D array, got shape {a.shape}")
        if np.any(np.isnan(a)):
            raise ValueError(f"{name}: {side} has NaN at index {int(np.flatnonzero(np.isnan(a.reshape(-1)))[0])}")
        out.append(a)
    lb, ub = out
    try:
        np.broadcast_shapes(lb.shape, ub.shape)
    except ValueError:
        raise ValueError(f"{name}: lb has shape {lb.shape} and ub {ub.shape}; they must have "
                         "the same length (or one be a number)") from None
    bad = np.flatnonzero(np.broadcast_to(lb > ub, np.broadcast_shapes(lb.shape, ub.shape)).reshape(-1))
    if bad.size:
        i = int(bad[0])
        lo, hi = np.broadcast_arrays(lb, ub)
        raise ValueError(f"{name} is empty: lb > ub at index {i} ({float(lo.reshape(-1)[i])!r} > "
                         f"{float(hi.reshape(-1)[i])!r})")
    if np.any(lb == math.inf) or np.any(ub == -math.inf):
        raise ValueError(f"{name} is empty: an infinite bound on the wrong side (lb = +inf or "
                         "ub = -inf)")
    if finite and not (np.all(np.isfinite(lb)) and np.all(np.isfinite(ub))):
        side = "lb" if not np.all(np.isfinite(lb)) else "ub"
        raise ValueError(f"{name}: {side} has an infinite entry; this method needs a finite box")
    return lb, ub


def box_for_dim(box, d: int, name="bounds") -> tuple[np.ndarray, np.ndarray]:
    """The box of :func:`check_box` as two read-only float64 arrays of length ``d``."""
    out = []
    for side, a in zip(("lb", "ub"), box):
        if a.ndim == 1 and a.size not in (1, d):
            raise ValueError(f"{name}: {side} has {a.size} entries but the problem has dim {d}")
        v = np.array(np.broadcast_to(a, (d,)), dtype=np.float64)
        v.setflags(write=False)
        out.append(v)
    return out[0], out[1]


def check_dim(dim, name="dim") -> int | None:
    """A number of variables: a positive integer, or None (unknown)."""
    if dim is None:
        return None
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {_short(dim)} "
                         f"({type(dim).__name__})")
    return int(dim)


def _point_repr(w) -> str:
    return np.array2string(np.asarray(w), precision=4, threshold=6, edgeitems=2, separator=", ")


def _returned(v) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape} and dtype {v.dtype}"
    if isinstance(v, (list, tuple)):
        return f"a {type(v).__name__} of length {len(v)}"
    return f"{type(v).__name__} {_short(v)}"


def user_scalar(v, who: str, w) -> float:
    """The number a user callable ``who`` returned at ``w``, as a float.

    Accepts real numbers and real arrays of size 1; anything else (None, str, list, complex,
    arrays of other sizes) is a ``TypeError`` naming ``who``, what it returned and the point.
    NaN and inf pass through unchanged: they are values, not input errors (the solvers turn
    them into status ``numerical_error``)."""
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, (np.ndarray, np.generic)) and v.size == 1 and v.dtype.kind in "iuf":
        return float(v.reshape(-1)[0])
    raise TypeError(f"the user callable {who} returned {_returned(v)} at w = {_point_repr(w)}; "
                    "it must return a real number")


def user_vector(g, who: str, w) -> np.ndarray:
    """The vector a user callable ``who`` returned at ``w``, as 1-D float64 of ``w``'s length.

    Any shape with ``w.size`` entries is accepted and flattened in C order (matrix variables).
    A non-numeric, boolean or complex result is a ``TypeError``, a wrong size a ``ValueError``;
    both name ``who``, what it returned and the point. NaN and inf entries pass through."""
    if isinstance(g, np.ndarray) and g.dtype == np.float64 and g.shape == w.shape:
        return g  # the fast path
    arr = g
    if not isinstance(g, np.ndarray):
        try:
            arr = np.asarray(g)
        except (TypeError, ValueError):
            arr = None
    if arr is None or arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise TypeError(f"the user callable {who} returned {_returned(g)} at w = {_point_repr(w)}; "
                        f"it must return a real vector of length {w.shape[0]}")
    if arr.size != w.shape[0]:
        raise ValueError(f"the user callable {who} returned {_returned(g)} at w = {_point_repr(w)}; "
                         f"it must return a vector of length {w.shape[0]} (the number of variables)")
    return np.ascontiguousarray(arr.astype(np.float64, copy=False).reshape(-1))


def user_pair(out, who: str, w) -> tuple:
    """The ``(number, vector)`` pair a user callable ``who`` returned at ``w`` (unconverted)."""
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return out
    raise TypeError(f"the user callable {who} returned {_returned(out)} at w = {_point_repr(w)}; "
                    "it must return a pair (number, vector)")



# ----------------------------------------------------------------------------------------
# Solver options: one declarative vocabulary (the idea of scikit-learn's
# ``_parameter_constraints``: ``Interval(Real, 0, None, closed="neither")``, ``"boolean"``)
# ----------------------------------------------------------------------------------------
class Constraint:
    """A set of allowed values for an option.

    :meth:`check` returns the value to store (converted: ``float``, ``int``, ``bool``) or
    raises ``TypeError`` when the value is of the wrong kind (a string for a number, ``1`` or
    ``"no"`` for a boolean) and ``ValueError`` when it is of the right kind but outside the set
    (``-1.0`` for a nonnegative number, ``"fast"`` for a choice). The exception's text, if any,
    is a detail appended to the option's message. ``str(constraint)`` names the set in words,
    for messages and docs."""

    def check(self, value):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__}: {self}>"


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _is_integer(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _endpoint(x) -> str:
    if x is None:
        return "inf"
    if isinstance(x, float):
        return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:g}"
    return str(x)


class Interval(Constraint):
    """Numbers of one kind between two bounds: ``Interval(Real, 0, None, closed="left")`` is
    :math:`[0, \\infty)`, ``Interval(Integral, 1, None, closed="left")`` the positive integers.

    ``kind`` is ``numbers.Real`` (any real number but booleans; stored as ``float``; NaN is
    never inside) or ``numbers.Integral`` (integers, numpy's included, but booleans and floats;
    stored as ``int``). A bound ``None`` is infinite and never included; an infinite bound
    given as ``math.inf`` follows ``closed`` (``Interval(Real, 0, math.inf, closed="right")``
    accepts ``inf``). ``closed`` is one of ``"both"``, ``"left"``, ``"right"``, ``"neither"``.
    """

    _CLOSED = ("both", "left", "right", "neither")

    def __init__(self, kind, low, high, *, closed: str):
        if kind not in (numbers.Real, numbers.Integral):
            raise TypeError(f"Interval kind must be numbers.Real or numbers.Integral, got {kind!r}")
        if closed not in self._CLOSED:
            raise ValueError(f"closed must be one of {self._CLOSED}, got {closed!r}")
        if low is not None and high is not None and not low <= high:
            raise ValueError(f"empty interval: low={low} > high={high}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def _inside(self, v) -> bool:
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is None:
            ok_low = v > -math.inf
        else:
            ok_low = v >= self.low if left else v > self.low
        if self.high is None:
            ok_high = v < math.inf
        else:
            ok_high = v <= self.high if right else v < self.high
        return bool(ok_low and ok_high)

    def check(self, value):
        integral = self.kind is numbers.Integral
        if not (_is_integer(value) if integral else _is_real(value)):
            raise TypeError
        if not self._inside(value):
            raise ValueError
        return int(value) if integral else float(value)

    def __str__(self):
        left = "[" if self.low is not None and self.closed in ("both", "left") else "("
        right = "]" if self.high is not None and self.closed in ("both", "right") else ")"
        what = "an integer" if self.kind is numbers.Integral else "a real number"
        low = "-inf" if self.low is None else _endpoint(self.low)
        return f"{what} in {left}{low}, {_endpoint(self.high)}{right}"


class Options(Constraint):
    """One of a few strings: ``Options(("auto", "exact", "wolfe"))`` (kept in the given order,
    which messages follow; pass the default first)."""

    def __init__(self, choices):
        self.choices = tuple(choices)
        if not self.choices or not all(isinstance(c, str) for c in self.choices):
            raise TypeError(f"Options needs a non-empty collection of strings, got {choices!r}")

    def check(self, value):
        if not isinstance(value, str):
            raise TypeError
        if value not in self.choices:
            raise ValueError
        return value

    def __str__(self):
        return "one of " + ", ".join(repr(c) for c in self.choices)


class Boolean(Constraint):
    """``True`` or ``False`` (Python's or numpy's bool), stored as ``bool``. Nothing else:
    ``"no"`` is not False, ``1`` and ``1.0`` are not True (``Option(True, bool)`` used to
    accept ``line_search="no"`` as True)."""

    def check(self, value):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError
        return bool(value)

    def __str__(self):
        return "True or False"


class NoneOr(Constraint):
    """``None`` (usually "not set: use the rule the docstring gives") or a value of
    ``constraint``."""

    def __init__(self, constraint: Constraint):
        if not isinstance(constraint, Constraint):
            raise TypeError(f"NoneOr needs a Constraint, got {constraint!r}")
        self.constraint = constraint

    def check(self, value):
        return None if value is None else self.constraint.check(value)

    def __str__(self):
        return f"None or {self.constraint}"


class Satisfies(Constraint):
    """A structured value the other constraints cannot say (a pair of arrays, a tagged
    tuple): ``convert(value)`` returns the value to store, or raises ``TypeError`` (wrong
    kind) or ``ValueError`` (right kind, wrong content) with a detail; ``description`` names
    the set."""

    def __init__(self, convert: Callable[[Any], Any], description: str):
        self.convert, self.description = convert, description

    def check(self, value):
        return self.convert(value)

    def __str__(self):
        return self.description


def _alternatives(constraints) -> str:
    words = [str(c) for c in constraints]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


class Option:
    """One solver option: ``Option(default, *constraints, doc="", renamed_from=())``.

    A value is valid when one of ``constraints`` takes it (e.g. ``Option(True, Boolean(),
    Interval(Real, 0, 1, closed="right"))``); the default must be valid (checked here, so a
    table cannot declare what it would refuse). ``renamed_from`` lists former names that
    still work, with a ``DeprecationWarning`` naming this option (see
    :func:`validate_options`).
    """

    __slots__ = ("default", "constraints", "doc", "renamed_from")

    def __init__(self, default, *constraints: Constraint, doc: str = "", renamed_from=()):
        if not constraints or not all(isinstance(c, Constraint) for c in constraints):
            raise TypeError(f"Option needs one or more Constraint objects, got {constraints!r}")
        self.constraints = constraints
        self.doc = doc
        self.renamed_from = ((renamed_from,) if isinstance(renamed_from, str)
                             else tuple(renamed_from))
        self.default = self.validate(default, "Option", "default")

    def validate(self, value, owner: str, name: str):
        """The value to store for option ``name`` of ``owner`` (a solver's name), or a
        ``TypeError`` (no constraint takes its kind) / ``ValueError`` (outside every set of
        its kind) naming the owner, the option, the value and what is allowed."""
        kind, details = TypeError, []
        for c in self.constraints:
            try:
                return c.check(value)
            except ValueError as exc:
                kind = ValueError
                details.append(str(exc))
            except TypeError as exc:
                details.append(str(exc))
        detail = "; ".join(d for d in details if d)
        allowed = _alternatives(self.constraints)
        raise kind(f"{owner} option {name}={_short(value)}: must be {allowed}"
                   + (f" ({detail})" if detail else ""))

    def replace(self, **changes) -> "Option":
        """A copy with some fields changed (e.g. another ``default``)."""
        fields = {k: getattr(self, k) for k in self.__slots__ if k != "constraints"}
        fields.update(changes)
        constraints = fields.pop("constraints", self.constraints)
        default = fields.pop("default")
        return Option(default, *constraints, **fields)

    def __repr__(self):
        return f"Option({self.default!r}, {_alternatives(self.constraints)!r})"


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _outside_package_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by the caller of this function that
    points at the first frame outside nsopt (the user's line, however deep the call)."""
    frame, level = sys._getframe(1), 1  # the frame that calls warnings.warn is level 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def validate_options(owner: str, table: dict, given: dict) -> tuple[dict, dict]:
    """Check the options ``given`` to ``owner`` against ``table`` (name -> :class:`Option`).

    A former name of an option (``Option.renamed_from``) is translated with one
    ``DeprecationWarning`` naming the new one; passing both is a ``TypeError``, as is an
    unknown name (the message lists the valid ones). Returns ``(config, checked)``: every
    option's value (the default where none was given) and the given ones alone, under their
    current names.
    """
    renamed = {old: new for new, opt in table.items() for old in opt.renamed_from}
    given = dict(given)
    for old in [k for k in given if k in renamed and k not in table]:
        new = renamed[old]
        if new in given:
            raise TypeError(f"{owner} got both {old}= and {new}=; {old!r} is the former name "
                            f"of {new!r}: pass {new} only")
        warnings.warn(f"{owner} option {old!r} is deprecated and will be removed: use "
                      f"{new}={_short(given[old])} instead", DeprecationWarning,
                      stacklevel=_outside_package_stacklevel())
        given[new] = given.pop(old)
    unknown = sorted(set(given) - set(table))
    if unknown:
        raise TypeError(f"{owner} got unknown option(s) {unknown}; valid options: {sorted(table)}")
    checked = {key: table[key].validate(value, owner, key) for key, value in given.items()}
    config = {key: checked[key] if key in checked else opt.default for key, opt in table.items()}
    return config, checked


def check_planes(value):
    """Warm-start cutting planes ``(A, b)``: slopes ``A`` (n x d, dense or scipy.sparse,
    returned as float64 2-D or CSR) and offsets ``b`` (n,), all finite."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"got {type(value).__name__}, not a pair")
    A, b = value
    try:
        A = (sp.csr_matrix(A, dtype=np.float64) if sp.issparse(A)
             else np.atleast_2d(as_real_array(A, "A")))
        b = as_real_array(b, "b").reshape(-1)
    except (TypeError, ValueError) as exc:
        raise TypeError(str(exc)) from exc
    if A.ndim != 2:
        raise ValueError(f"A has shape {A.shape}, not (n, d)")
    if A.shape[0] != b.shape[0]:
        raise ValueError(f"A has {A.shape[0]} rows and b {b.shape[0]} entries")
    values = A.data if sp.issparse(A) else A
    if not (_all_finite(values) and _all_finite(b)):
        raise ValueError("A or b contains NaN or inf")
    return A, b
