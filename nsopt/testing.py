r"""Testing toolkit: check your own oracles, and hypothesis strategies for convex problems.

:func:`check_oracle` tests the laws every :class:`~nsopt.Oracle` must obey (the subgradient
inequality, ``sup_subgradient`` as the directional derivative, ``restrict`` consistent with
the oracle, an exact ``minimize`` no worse than a grid) on random or given points, and raises
an ``AssertionError`` naming the law, the point and the numbers when one fails.

The strategies build valid objects directly (``@st.composite``, no ``assume``), so shrinking
stays fast:

* :func:`points`, :func:`directions`: vectors (directions include exact zeros, sparse and
  axis-aligned ones, never the zero vector);
* :func:`random_scalar_loss`, :func:`random_regularized_risk`: small hinge, squared-hinge or
  logistic problems on dense or sparse data, optionally *dyadic* (data and points on grids of
  powers of two, so every product and sum is exact and kinks can be hit exactly);
* :func:`kink_points`: points on a kink: of nsopt's scalar losses (some examples exactly on
  their kink), or of a user's function described by :class:`KinkPlanes` (kinks on
  hyperplanes, e.g. the l1 norm) or :class:`MaxPieces` (a max of affine pieces);
* :func:`piecewise_linear_max`: a :class:`~nsopt.Max` of affine functions, with its data for
  brute-force checks and a point where several pieces tie.

:func:`register_hypothesis_profiles` registers the ``"ci"`` (deterministic, the default of
nsopt's own suite) and ``"explore"`` profiles.

The strategies need ``hypothesis`` (``pip install hypothesis``); :func:`check_oracle` does not.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .oracle import FunctionOracle, Max, Oracle

try:  # hypothesis is a test dependency only
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - exercised only without hypothesis
    st = None

__all__ = [
    "check_oracle",
    "register_hypothesis_profiles",
    "points",
    "directions",
    "kink_points",
    "KinkPlanes",
    "MaxPieces",
    "random_scalar_loss",
    "random_regularized_risk",
    "piecewise_linear_max",
    "PiecewiseLinearMax",
    "PassCounter",
]


def _composite(fn):
    """``st.composite`` when hypothesis is installed, else a stub that says what to install."""
    if st is not None:
        return st.composite(fn)

    def missing(*args, **kwargs):  # pragma: no cover
        raise ImportError(f"nsopt.testing.{fn.__name__} needs hypothesis: pip install hypothesis")

    missing.__name__ = missing.__qualname__ = fn.__name__
    missing.__doc__ = fn.__doc__
    return missing


def register_hypothesis_profiles() -> None:
    """Register nsopt's hypothesis profiles.

    ``"ci"``: derandomized, no example database, no deadline, 40 examples per test (the
    default of nsopt's suite: the same examples on every run and machine).
    ``"explore"``: 500 random examples per test, no deadline, for hunting bugs locally.

    Load one with ``hypothesis.settings.load_profile(name)``; nsopt's ``tests/conftest.py``
    reads the name from the environment variable ``NSOPT_HYPOTHESIS_PROFILE``.
    """
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=40)
    settings.register_profile("explore", max_examples=500, deadline=None)


# ----------------------------------------------------------------------------------------
# Strategies
# ----------------------------------------------------------------------------------------
#: Nonzero data entries of dyadic problems: powers of two, so division by them is exact.
DYADIC_DATA = (1.0, -1.0, 0.5, -0.5, 2.0, -2.0)


def _real_floats(lo: float, hi: float):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _grid(scale: float, step: float):
    """Multiples of ``step`` in ``[-scale, scale]`` (exact binary fractions for step = 2^-k)."""
    k = max(1, int(round(scale / step)))
    return st.integers(-k, k).map(lambda i: i * step)


@_composite
def points(draw, dim: int, scale: float = 10.0, dyadic: bool = False) -> np.ndarray:
    """A point of :math:`\\mathbb{R}^{dim}` with entries in ``[-scale, scale]``.

    With ``dyadic=True`` the entries are multiples of 1/8, so that with dyadic data (see
    :func:`random_scalar_loss`) every score ``<x_i, w>`` is computed exactly.
    """
    elements = _grid(scale, 0.125) if dyadic else _real_floats(-scale, scale)
    return np.array(draw(st.lists(elements, min_size=dim, max_size=dim)), dtype=np.float64)


@_composite
def directions(draw, dim: int, scale: float = 1.0, dyadic: bool = False) -> np.ndarray:
    """A nonzero direction of :math:`\\mathbb{R}^{dim}`: dense, sparse (exact zeros) or along an axis.

    Each entry is kept or zeroed by a drawn mask, then one drawn coordinate is set to a value
    of magnitude at least ``scale / 64``, so the direction is never zero. With
    ``dyadic=True`` the entries are multiples of 1/4.
    """
    elements = _grid(scale, 0.25) if dyadic else _real_floats(-scale, scale)
    values = np.array(draw(st.lists(elements, min_size=dim, max_size=dim)), dtype=np.float64)
    keep = np.array(draw(st.lists(st.booleans(), min_size=dim, max_size=dim)), dtype=bool)
    p = np.where(keep, values, 0.0)
    j = draw(st.integers(0, dim - 1))
    if dyadic:
        magnitude = draw(st.sampled_from([0.25, 0.5, 1.0, 2.0])) * max(1.0, round(scale))
    else:
        magnitude = draw(_real_floats(scale / 64, scale))
    p[j] = magnitude if draw(st.booleans()) else -magnitude
    return p


def _loss_class(loss):
    """A binary scalar loss class: ``loss`` itself, or its name in :data:`nsopt.losses.LOSSES`."""
    from . import losses

    if not isinstance(loss, str):
        return loss
    binary = {n: c for n, c in losses.LOSSES.items() if issubclass(c, losses.ScalarLoss) and c.binary}
    try:
        cls = losses.get_loss(loss)
    except ValueError:
        cls = None
    if cls not in binary.values():
        raise ValueError(f"loss must be one of {sorted(binary)} (a binary scalar loss) or a "
                         f"ScalarLoss class, got {loss!r}")
    return cls


def _size(draw, spec, name):
    lo, hi = (spec, spec) if isinstance(spec, int) else spec
    if not 1 <= lo <= hi:
        raise ValueError(f"{name} must be an int >= 1 or a range (lo, hi) with 1 <= lo <= hi, got {spec}")
    return lo if lo == hi else draw(st.integers(lo, hi))


@_composite
def random_scalar_loss(draw, loss="hinge", sparse: bool = False, m=(1, 8), d=(1, 5),
                       dyadic: bool = False, weighted: bool = False):
    """A small binary scalar loss (``Hinge``, ``SquaredHinge``, ``Logistic``, ...) on drawn data.

    Parameters
    ----------
    loss : name of a binary loss in :data:`nsopt.losses.LOSSES` ("hinge", "squared-hinge",
        "logistic", "exponential"; "squared_hinge" too) or a ScalarLoss class with binary labels
    sparse : bool
        Data as a CSR matrix with drawn zeros (else a dense array, which may hold zeros too).
    m, d : int or (lo, hi)
        Number of examples and features, fixed or drawn from the range.
    dyadic : bool
        Nonzero data entries in ``{+-1/2, +-1, +-2}``: with :func:`points` and
        :func:`directions` drawn with ``dyadic=True``, scores, line points and kinks are exact.
    weighted : bool
        Draw integer sample weights in ``[0, 4]`` (at least one positive).

    Notes
    -----
    The data is available as ``loss.data.X`` (ndarray or CSR matrix), the labels as ``loss.y``.
    """
    cls = _loss_class(loss)
    m = _size(draw, m, "m")
    d = _size(draw, d, "d")
    n = m * d
    if dyadic:
        values = draw(st.lists(st.sampled_from(DYADIC_DATA), min_size=n, max_size=n))
    else:
        values = draw(st.lists(_real_floats(-2.0, 2.0), min_size=n, max_size=n))
    X = np.array(values, dtype=np.float64).reshape(m, d)
    if sparse or dyadic:
        keep = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
        X = np.where(keep.reshape(m, d), X, 0.0)
    if sparse:
        X = sp.csr_matrix(X)
    y = np.array(draw(st.lists(st.sampled_from([1.0, -1.0]), min_size=m, max_size=m)))
    sample_weight = None
    if weighted:
        sample_weight = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=float)
        sample_weight[draw(st.integers(0, m - 1))] += 1.0
    return cls(X, y, sample_weight=sample_weight)


@_composite
def random_regularized_risk(draw, loss="hinge", sparse: bool = False, m=(1, 8), d=(1, 5),
                            lam=(1e-3, 10.0), reg=None, dyadic: bool = False,
                            weighted: bool = False):
    """A small :class:`~nsopt.RegularizedRisk` ``lam * reg + loss`` on drawn data.

    ``loss``, ``sparse``, ``m``, ``d``, ``dyadic``, ``weighted`` as in :func:`random_scalar_loss`;
    ``lam`` a float or a range drawn log-uniformly (a power of two when ``dyadic``);
    ``reg`` a regularizer instance (default ``L2()``).
    """
    from .problem import RegularizedRisk
    from .regularizers import L2

    risk = draw(random_scalar_loss(loss, sparse=sparse, m=m, d=d, dyadic=dyadic, weighted=weighted))
    if isinstance(lam, (int, float)):
        value = float(lam)
    else:
        lo, hi = math.log2(lam[0]), math.log2(lam[1])
        if dyadic and math.ceil(lo) <= math.floor(hi):
            value = 2.0 ** draw(st.integers(math.ceil(lo), math.floor(hi)))
        else:
            value = 2.0 ** draw(_real_floats(lo, hi))
    return RegularizedRisk(risk, L2() if reg is None else reg, lam=value)


class KinkPlanes(NamedTuple):
    r"""Kinks on hyperplanes: the function is smooth off :math:`\bigcup_k \{w : \langle c_k, w\rangle = t_k\}`.

    The natural description of a *sum* of kinked functions of linear forms,
    :math:`f(w) = \sum_k h_k(\langle c_k, w\rangle)` with :math:`h_k` kinked at :math:`t_k`:
    :math:`\|w\|_1` (``normals = I``, ``offsets = 0``), a hinge sum
    :math:`\sum_i \max(0, 1 - y_i\langle x_i, w\rangle)` (``normals = X``, ``offsets = y``, since
    :math:`y_i z = 1 \iff z = y_i`), nsopt's scalar losses (``normals = X``,
    ``offsets = loss.kinks()``). Returned by the ``kinks`` callable of :func:`kink_points`.

    Attributes
    ----------
    normals : array (k, dim) or scipy.sparse matrix
        The rows :math:`c_k`.
    offsets : array (k,)
        The :math:`t_k`.
    """

    normals: object
    offsets: np.ndarray


class MaxPieces(NamedTuple):
    r"""The affine pieces of a maximum: :math:`f(w) = \max_k\, \langle a_k, w\rangle + b_k`
    (near the drawn point at least), kinked where two pieces tie *at the top*. Returned by the
    ``kinks`` callable of :func:`kink_points`.

    Attributes
    ----------
    slopes : array (k, dim)
        The rows :math:`a_k`.
    intercepts : array (k,)
        The :math:`b_k`.
    """

    slopes: np.ndarray
    intercepts: np.ndarray


def _dense_rows(M) -> np.ndarray:
    return M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)


def _on_planes(draw, w, normals, offsets, max_kinks, scale):
    """Put up to ``max_kinks`` of the hyperplanes ``normals[k] @ w == offsets[k]`` through ``w``,
    each by solving for one coordinate that no plane already through ``w`` uses."""
    C = _dense_rows(normals)
    t = np.asarray(offsets, dtype=np.float64)
    if C.ndim != 2 or C.shape[1] != w.shape[0] or t.shape != (C.shape[0],):
        raise ValueError(f"KinkPlanes: normals must have shape (k, {w.shape[0]}) and offsets "
                         f"shape (k,), got {C.shape} and {t.shape}")
    if C.shape[0] == 0:
        return w
    wanted = draw(st.integers(1, max_kinks))
    order = draw(st.permutations(range(C.shape[0])))
    on_kink: list[int] = []
    for i in order:
        if len(on_kink) == wanted:
            break
        # a coordinate no plane already through w uses, with an entry not tiny (so that w
        # stays of the order of `scale`: no overflow of the scores' precision)
        big = (C[i] != 0) & (np.abs(C[i]) >= 0.25 * np.abs(C[i]).max())
        free = [j for j in np.flatnonzero(big) if not np.any(C[on_kink, j])]
        if not free:
            continue
        j = draw(st.sampled_from(free))
        rest = C[i] @ w - C[i, j] * w[j]
        wj = (t[i] - rest) / C[i, j]
        if not abs(wj) <= 64 * scale:
            continue
        w[j] = wj
        on_kink.append(i)
    return w


def _on_max_tie(draw, w, slopes, intercepts):
    r"""Move ``w`` along a drawn axis :math:`\pm e_j` to the first breakpoint of
    :math:`t \mapsto \max_k (\alpha_k + t\beta_k)`, :math:`\alpha = Aw + b`, :math:`\beta = \pm A e_j`:
    the first ``t >= 0`` where another piece catches up with the top one. Axes where that
    division is exact (a power-of-two slope difference) are preferred."""
    A = np.asarray(slopes, dtype=np.float64)
    b = np.asarray(intercepts, dtype=np.float64)
    if A.ndim != 2 or A.shape[1] != w.shape[0] or b.shape != (A.shape[0],):
        raise ValueError(f"MaxPieces: slopes must have shape (k, {w.shape[0]}) and intercepts "
                         f"shape (k,), got {A.shape} and {b.shape}")
    alpha = A @ w + b
    top = np.flatnonzero(alpha == alpha.max())
    moves, exact = [], []  # (j, signed step) to the first breakpoint along +-e_j
    for j in range(w.shape[0]):
        for direction in (1.0, -1.0):
            beta = direction * A[:, j]
            i = top[np.argmax(beta[top])]  # the piece on top just after t = 0
            faster = np.flatnonzero(beta > beta[i])
            if not faster.size:
                continue
            rise = beta[faster] - beta[i]
            t = (alpha[i] - alpha[faster]) / rise
            k = int(np.argmin(t))
            moves.append((j, direction * float(t[k])))
            # a power-of-two denominator keeps dyadic numbers exact: the tie is exact
            exact.append(math.frexp(float(rise[k]))[0] == 0.5)
    if not moves:
        return w  # all pieces parallel along every axis: no kink to reach
    if any(exact):
        moves = [m for m, e in zip(moves, exact) if e]
    j, step = draw(st.sampled_from(moves))
    w[j] += step
    return w


@_composite
def kink_points(draw, oracle, max_kinks: int = 3, scale: float = 4.0, *, kinks=None) -> np.ndarray:
    r"""A point on a kink of ``oracle``: of one of nsopt's scalar losses, or of a user's function
    described by ``kinks``.

    Random points almost never fall on a kink, where a convex function's subdifferential
    :math:`\partial f(w)` is not a singleton and ``sup_subgradient`` must pick, for each
    direction :math:`p`, the subgradient steepest along :math:`p`; these points test that.
    The strategy draws a dyadic point (:func:`points` with ``dyadic=True``) and moves it onto
    kinks in one of two ways, after what ``kinks(w)`` says about the function near ``w``:

    * :class:`KinkPlanes` ``(normals, offsets)``: the kinks lie on hyperplanes
      :math:`\langle c_k, w\rangle = t_k`, as for :math:`f(w) = \sum_k h_k(\langle c_k, w\rangle)`
      with each :math:`h_k` kinked at :math:`t_k`. For drawn planes :math:`k`, up to
      ``max_kinks`` of them, one coordinate :math:`j` that no plane already through the point
      uses is solved for, :math:`w_j = (t_k - \sum_{l \ne j} c_{kl} w_l) / c_{kj}` (skipping
      planes for which that would put :math:`|w_j|` above ``64 * scale``). Examples:
      :math:`\|w\|_1` is ``KinkPlanes(np.eye(d), np.zeros(d))``; a hinge sum
      :math:`\sum_i\max(0, 1 - y_i\langle x_i, w\rangle)` is ``KinkPlanes(X, y)``.
    * :class:`MaxPieces` ``(slopes, intercepts)``: :math:`f(w) = \max_k\,\langle a_k, w\rangle
      + b_k` (a maximum of affine functions, globally or near ``w``). Along a drawn axis
      :math:`w + t\,(\pm e_j)` the pieces are lines :math:`\alpha_k + t\beta_k`; with :math:`i`
      the piece on top just after :math:`t = 0`, the point moves to the first breakpoint of
      their upper envelope,

      .. math:: t^\star = \min_{k:\ \beta_k > \beta_i} \frac{\alpha_i - \alpha_k}{\beta_k - \beta_i} \ \ge 0,

      where piece :math:`i` and the minimising :math:`k` tie *and are the maximum*
      (:math:`\partial f \supseteq [a_i, a_k]`), whatever the other pieces do. The axis and
      its sign are drawn among those where the division is exact (a power-of-two
      :math:`\beta_k - \beta_i`) when there are any. One kink: ``max_kinks`` does not apply.
    * An ndarray of shape ``(dim,)``: the user's own point on a kink, returned as is.

    Without ``kinks``, ``oracle`` must be one of nsopt's scalar losses, which say where they
    are kinked: ``KinkPlanes(loss.data.X, loss.kinks())`` (the examples :math:`i` with
    :math:`\langle x_i, w\rangle` on the kink of :math:`l(\cdot, y_i)`); a loss without kinks
    (``loss.kinks()`` is None) gives just a dyadic point.

    Exactness: the equations hold exactly for dyadic data (entries :math:`\pm 2^k` with few
    bits, as :func:`random_scalar_loss` and :func:`piecewise_linear_max` draw them, so the
    divisions above are exact); on other data they hold up to rounding, and an oracle that
    decides ties exactly may then see no tie (see :func:`check_oracle` on points a few ulps off
    a kink).

    Parameters
    ----------
    draw
        Supplied by hypothesis (``kink_points`` is an ``@st.composite`` strategy).
    oracle : Oracle
        Its ``dim`` fixes the length of the point; without ``kinks`` it must be a scalar loss
        (with ``kinks()`` and ``data.X``).
    max_kinks : int
        With planes: put the point on between 1 and ``max_kinks`` of them.
    scale : float
        The drawn point's entries lie in ``[-scale, scale]`` before they are moved.
    kinks : callable ``kinks(w) -> KinkPlanes | MaxPieces | ndarray``, optional
        What the function's kinks are near the drawn point ``w`` (a new array; the callable may
        ignore it, or use it for a local description).

    Examples
    --------
    A user's max of affine functions, checked where two pieces tie:

    >>> import numpy as np, nsopt
    >>> from hypothesis import given, settings
    >>> from nsopt.testing import MaxPieces, check_oracle, kink_points
    >>> A = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]); b = np.array([0.0, 0.5, -1.0])
    >>> def f(w):
    ...     return float(np.max(A @ w + b))
    >>> def sup(w, p):
    ...     v = A @ w + b
    ...     tied = np.flatnonzero(v == v.max())
    ...     k = tied[np.argmax(A[tied] @ p)]
    ...     return float(A[k] @ p), A[k].copy()
    >>> oracle = nsopt.FunctionOracle(f, lambda w: A[np.argmax(A @ w + b)].copy(), dim=2,
    ...                               sup_subgradient=sup)
    >>> @settings(max_examples=20, database=None, derandomize=True)
    ... @given(kink_points(oracle, kinks=lambda w: MaxPieces(A, b)))
    ... def test(w):
    ...     v = A @ w + b
    ...     assert np.count_nonzero(v == v.max()) >= 2
    ...     check_oracle(oracle, points=w, n=6)
    >>> test()
    """
    d = oracle.dim
    if d is None:
        raise ValueError("kink_points needs oracle.dim (the number of variables), got None")
    w = draw(points(d, scale=scale, dyadic=True))
    if kinks is None:
        if not (hasattr(oracle, "kinks") and hasattr(oracle, "data")):
            raise TypeError(
                f"kink_points: {type(oracle).__name__} does not say where it is kinked (it is "
                "not one of nsopt's scalar losses): pass kinks=, a callable w -> KinkPlanes(normals, "
                "offsets) or MaxPieces(slopes, intercepts)")
        offsets = oracle.kinks()
        if offsets is None or np.ndim(offsets) != 1:
            return w
        return _on_planes(draw, w, oracle.data.X, offsets, max_kinks, scale)
    if not callable(kinks):
        raise TypeError(f"kinks must be a callable w -> KinkPlanes | MaxPieces | point, got "
                        f"{type(kinks).__name__}")
    described = kinks(w.copy())
    if isinstance(described, KinkPlanes):
        return _on_planes(draw, w, described.normals, described.offsets, max_kinks, scale)
    if isinstance(described, MaxPieces):
        return _on_max_tie(draw, w, described.slopes, described.intercepts)
    if isinstance(described, np.ndarray) and described.shape == (d,):
        return np.array(described, dtype=np.float64)
    raise TypeError(f"kinks(w) must return KinkPlanes(normals, offsets), MaxPieces(slopes, "
                    f"intercepts) or a point of shape ({d},), got {type(described).__name__}"
                    + (f" of shape {described.shape}" if isinstance(described, np.ndarray) else ""))


class PiecewiseLinearMax(NamedTuple):
    """``oracle(w) = max_j (A[j] @ w + b[j])``; pieces in ``tie`` are all equal at ``point``."""

    oracle: Max
    A: np.ndarray
    b: np.ndarray
    point: np.ndarray
    tie: np.ndarray


def _affine(a: np.ndarray, b: float) -> FunctionOracle:
    return FunctionOracle(lambda w: float(a @ w + b), lambda w: a.copy(), dim=a.shape[0])


@_composite
def piecewise_linear_max(draw, dim: int, pieces=(1, 6), ties: bool = True) -> PiecewiseLinearMax:
    """A :class:`~nsopt.Max` of affine :class:`~nsopt.FunctionOracle` pieces, with its data.

    Slopes, offsets and ``point`` are dyadic, so piece values are exact. With ``ties=True``
    a drawn set of at least one piece (``tie``) attains the max at ``point`` exactly, and the
    other pieces lie below it there (some may tie too). Brute force:
    ``f'(w; p) = max(A[I] @ p)`` over ``I = argmax(A @ w + b)`` (all maximising indices).
    """
    k = _size(draw, pieces, "pieces")
    slope = _grid(2.0, 0.25)
    A = np.array(draw(st.lists(st.lists(slope, min_size=dim, max_size=dim), min_size=k, max_size=k)))
    b = np.array(draw(st.lists(_grid(4.0, 0.25), min_size=k, max_size=k)), dtype=np.float64)
    point = draw(points(dim, scale=2.0, dyadic=True))
    if ties:
        top = draw(_grid(4.0, 0.25))
        tie = np.array(draw(st.lists(st.booleans(), min_size=k, max_size=k)), dtype=bool)
        tie[draw(st.integers(0, k - 1))] = True
        gaps = np.array(draw(st.lists(_grid(2.0, 0.25).map(abs), min_size=k, max_size=k)))
        b = top - A @ point - np.where(tie, 0.0, gaps)
    values = A @ point + b
    tie = np.flatnonzero(values == values.max())
    oracle = Max([_affine(A[j].copy(), float(b[j])) for j in range(k)])
    return PiecewiseLinearMax(oracle, A, b, point, tie)


# ----------------------------------------------------------------------------------------
# check_oracle
# ----------------------------------------------------------------------------------------
def _fmt(x) -> str:
    x = np.asarray(x)
    if x.size > 12:
        return f"<array shape {x.shape}, |.|_2={np.linalg.norm(x):.6g}, first {x.ravel()[:6].tolist()}>"
    return repr(x.tolist())


def _fail(law: str, w, p=None, **numbers) -> AssertionError:
    where = f"w={_fmt(w)}" + ("" if p is None else f", p={_fmt(p)}")
    nums = ", ".join(f"{k}={v!r}" for k, v in numbers.items())
    return AssertionError(f"check_oracle: {law} fails at {where}: {nums}")


def _as_rows(x, dim: int, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty (k, {dim}) array, got shape {np.shape(x)}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def _random_directions(rng, n: int, dim: int) -> np.ndarray:
    P = rng.standard_normal((n, dim))
    for i in range(n):
        kind = i % 3
        if kind == 1:  # sparse, with exact zeros
            P[i, rng.random(dim) < 0.5] = 0.0
        elif kind == 2:  # along an axis
            P[i] = 0.0
            P[i, rng.integers(dim)] = rng.choice([-1.0, 1.0])
        if not P[i].any():
            P[i, rng.integers(dim)] = 1.0
    return P


#: Step lengths ``eta * ||p||`` at which ``restrict`` is compared with the oracle; irregular,
#: so that they do not land on kinks of dyadic test data by accident.
_LINE_STEPS = (-0.8183, -0.0917, 0.0, 0.0613, 0.5309, 1.7321)


def check_oracle(oracle: Oracle, points=None, directions=None, n: int = 20, rtol: float = 1e-7,
                 seed: int = 0, *, dim: int | None = None, scale: float = 1.0) -> None:
    r"""Check that an oracle obeys the laws of a convex function's oracle.

    On ``n`` (point, direction) pairs, ``w`` from ``points`` and ``p`` from ``directions``
    (cycled; random normal points of standard deviation ``scale`` and random dense, sparse
    and axis directions when not given), with ``v`` the next point:

    1. *finite*: ``value(w)`` is finite, ``value_and_subgradient(w)`` agrees with ``value``
       and ``subgradient`` and has shape ``(dim,)``;
    2. *subgradient inequality*: :math:`f(v) \ge f(w) + \langle g, v - w\rangle`;
    3. *sup_subgradient*: ``(s, g_s) = sup_subgradient(w, p)`` has
       :math:`s \ge \langle g, p\rangle`, :math:`\langle g_s, p\rangle = s`, and :math:`g_s`
       satisfies the subgradient inequality;
    4. *directional derivative*: for steps :math:`h = 10^{-k}/\|p\|`, :math:`k = 0 \dots 8`,
       the difference quotient :math:`(f(w + hp) - f(w))/h` is at least :math:`s`
       (convexity: it decreases to :math:`f'(w; p)` as :math:`h \to 0`), and the closest of
       them, with smaller steps added while their rounding noise stays under half the
       tolerance (a kink within :math:`10^{-8}` of ``w``), is within :math:`\sqrt{rtol}`
       (relative) of :math:`s`;
    5. *restrict*: ``line = restrict(w, p)`` has ``line.value(eta) == value(w + eta p)``,
       ``line.derivative(eta, +1) >= line.derivative(eta, -1)``, and the right (left)
       derivative equals ``sup_subgradient(w + eta p, p)`` (``-sup_subgradient(., -p)``);
    6. *minimize*: unless ``line.minimize`` raises ``NotImplementedError``, its result on
       ``[0, T]`` and ``[0, inf)`` lies in the interval, satisfies the one-sided optimality
       conditions, and is no worse than the best of a fine grid on a bracket;
    7. *minorants* (an oracle that ``offers_minorants``): ``(G, c) = minorants(w)`` has shapes
       ``(k, dim)`` and ``(k,)``, finite entries, and every plane lies below ``f``,
       :math:`\langle G_j, y\rangle + c_j \le f(y)`, at the sampled points
       :math:`y \in \{w, v, w \pm p, 2v - w\}` (a minorant must hold everywhere, not only
       near ``w``).

    Comparisons use the relative tolerance ``rtol`` against the size of the numbers
    involved (an absolute floor of ``rtol`` too). Random points rarely fall on kinks: pass
    kink points explicitly (e.g. from :func:`kink_points`) to test the nonsmooth cases. Put
    them *exactly* on the kink: a point a few ulps off a kink fails law 4, since every usable
    step ``h`` crosses the kink and the quotients converge to the derivative beyond it.

    Parameters
    ----------
    oracle : Oracle
    points, directions : array (k, dim) or (dim,), optional
    n : int
        Number of (point, direction) pairs checked.
    rtol : float
        Relative tolerance of the comparisons.
    seed : int
        Seed of the random points and directions.
    dim : int, optional
        Needed only when ``oracle.dim`` is None and no points are given.
    scale : float
        Standard deviation of the random points.

    Raises
    ------
    AssertionError
        Naming the law that fails, the point, the direction and the numbers.

    Examples
    --------
    The l1 norm, with the subgradient steepest along ``p`` at its kinks:

    >>> import numpy as np, nsopt
    >>> from nsopt.testing import check_oracle
    >>> l1 = nsopt.FunctionOracle(
    ...     lambda w: np.abs(w).sum(), lambda w: np.sign(w), dim=3,
    ...     sup_subgradient=lambda w, p: (
    ...         float(np.where(w != 0, np.sign(w) * p, np.abs(p)).sum()),
    ...         np.where(w != 0, np.sign(w), np.sign(p))))
    >>> check_oracle(l1, points=[[0.0, 1.0, -2.0], [0.5, 0.0, 0.0]])

    Without ``sup_subgradient`` the plain subgradient is used, which is wrong at the kinks:

    >>> naive = nsopt.FunctionOracle(lambda w: np.abs(w).sum(), lambda w: np.sign(w), dim=3)
    >>> check_oracle(naive, points=[[0.0, 1.0, -2.0]])   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: check_oracle: directional derivative: ... fails at w=[0.0, 1.0, -2.0], p=...
    """
    if not isinstance(oracle, Oracle):
        raise TypeError(f"check_oracle needs an nsopt Oracle, got {type(oracle).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    dim = oracle.dim if oracle.dim is not None else dim
    if dim is None:
        if points is None:
            raise ValueError("oracle.dim is None: pass dim= or points")
        dim = np.atleast_2d(np.asarray(points)).shape[1]
    rng = np.random.default_rng(seed)
    W = _as_rows(points, dim, "points") if points is not None else scale * rng.standard_normal((n, dim))
    P = (_as_rows(directions, dim, "directions") if directions is not None
         else _random_directions(rng, n, dim))
    if not np.all(np.any(P != 0, axis=1)):
        raise ValueError("directions must be nonzero")
    for i in range(n):
        w, p = W[i % W.shape[0]], P[i % P.shape[0]]
        # v: the next point, or a random neighbour when only one point is given
        v = W[(i + 1) % W.shape[0]] if W.shape[0] > 1 else w + scale * rng.standard_normal(dim)
        _check_pair(oracle, w.copy(), p.copy(), v.copy(), rtol)


def _check_pair(oracle, w, p, v, rtol):
    def close(a, b, *scales):
        return abs(a - b) <= rtol * (1.0 + max([abs(a), abs(b), *map(abs, scales)]))

    # 1. finite values, consistent value / subgradient
    f = oracle.value(w)
    f2, g = oracle.value_and_subgradient(w)
    g = np.asarray(g)
    if not math.isfinite(f):
        raise _fail("finite value", w, value=f)
    if g.shape != w.shape or not np.isfinite(g).all():
        raise _fail("subgradient shape and finiteness", w, shape=g.shape, expected=w.shape)
    if not close(f, f2):
        raise _fail("value == value_and_subgradient()[0]", w, value=f, value_and_subgradient=f2)
    g1 = np.asarray(oracle.subgradient(w))
    if g1.shape != w.shape:
        raise _fail("subgradient shape", w, shape=g1.shape, expected=w.shape)

    # 2. subgradient inequality f(v) >= f(w) + <g, v - w>
    fv = oracle.value(v)
    _subgradient_inequality("subgradient inequality", w, v, f, fv, g, rtol)
    _subgradient_inequality("subgradient inequality (at v, g(v))", v, w, fv, f,
                            np.asarray(oracle.subgradient(v)), rtol)

    # 7. extra minorants: below f at sampled points (before law 3: cheap, and a wrong one is
    # reported as such rather than as a later law)
    if getattr(oracle, "offers_minorants", False):
        _check_minorants(oracle, w, p, v, f, fv, rtol)

    # 3. sup_subgradient
    s, gs = oracle.sup_subgradient(w, p)
    gs = np.asarray(gs)
    gp = float(g @ p)
    if not math.isfinite(s) or gs.shape != w.shape:
        raise _fail("sup_subgradient returns a finite s and g of shape (dim,)", w, p, s=s,
                    shape=gs.shape)
    scale_gp = float(np.abs(g) @ np.abs(p))
    if s < gp - rtol * (1.0 + abs(s) + scale_gp):
        raise _fail("sup_subgradient: s >= <g, p>", w, p, s=s, g_dot_p=gp)
    if not close(float(gs @ p), s, float(np.abs(gs) @ np.abs(p))):
        raise _fail("sup_subgradient: <g_s, p> == s (g_s attains s)", w, p, s=s, g_s_dot_p=float(gs @ p))
    _subgradient_inequality("subgradient inequality for sup_subgradient's g", w, v, f, fv, gs, rtol)
    wp = w + p
    _subgradient_inequality("subgradient inequality for sup_subgradient's g (at w + p)", w, wp, f,
                            oracle.value(wp), gs, rtol)

    # 4. directional derivative vs one-sided difference quotients
    # steps |h p| = 1 ... 1e-8, then smaller while the quotient's rounding noise stays under
    # half the tolerance (a kink within 1e-8 of w along p, e.g. at w = 1e-10 on a max of
    # scores, is seen only by a smaller step); a kink closer than the noise allows cannot be
    # told apart from the point by differences at all
    pn = float(np.linalg.norm(p))
    eps = np.finfo(float).eps
    fd_tol = math.sqrt(rtol) * (1.0 + abs(s) + float(np.abs(gs) @ np.abs(p)))
    quotients = []
    for k in range(0, 17):
        h = 10.0 ** (-k) / pn
        bound = 8 * eps * (2 * abs(f) + float(np.abs(w) @ np.abs(g)) + 1.0) / h
        if k > 8 and bound > fd_tol / 2:
            break
        fh = oracle.value(w + h * p)
        qh = (fh - f) / h
        noise = 8 * eps * (abs(f) + abs(fh) + float(np.abs(w) @ np.abs(g)) + 1.0) / h
        # the one-sided law is asked of the steps down to 1e-8 only: below, a sum's rounding
        # (m terms) may exceed the noise model; the smaller steps only serve the limit
        if k <= 8 and s > qh + noise + rtol * (1.0 + abs(s)):
            raise _fail("directional derivative: f'(w; p) <= (f(w + h p) - f(w)) / h", w, p,
                        h=h, s=s, quotient=qh)
        quotients.append((abs(qh - s) - noise, qh, h))
    best = min(quotients)
    if best[0] > fd_tol:
        raise _fail("directional derivative: (f(w + h p) - f(w)) / h -> sup_subgradient as h -> 0",
                    w, p, s=s, closest_quotient=best[1], h=best[2])

    # 5. restrict
    line = oracle.restrict(w, p)
    for t in _LINE_STEPS:
        eta = t / pn
        x = w + eta * p
        fx = oracle.value(x)
        lv = line.value(eta)
        if not close(lv, fx):
            raise _fail("restrict: line.value(eta) == value(w + eta p)", w, p, eta=eta,
                        line_value=lv, value=fx)
        right, left = line.derivative(eta, 1), line.derivative(eta, -1)
        dscale = float(np.abs(g) @ np.abs(p)) + abs(right) + abs(left)
        if right < left - rtol * (1.0 + dscale):
            raise _fail("restrict: derivative(eta, +1) >= derivative(eta, -1)", w, p, eta=eta,
                        right=right, left=left)
        s_right = oracle.sup_subgradient(x, p)[0]
        s_left = -oracle.sup_subgradient(x, -p)[0]
        if not close(right, s_right, dscale):
            raise _fail("restrict: derivative(eta, +1) == sup_subgradient(w + eta p, p)", w, p,
                        eta=eta, derivative=right, sup_subgradient=s_right)
        if not close(left, s_left, dscale):
            raise _fail("restrict: derivative(eta, -1) == -sup_subgradient(w + eta p, -p)", w, p,
                        eta=eta, derivative=left, minus_sup_subgradient=s_left)

    # 6. minimize, where supported
    for hi in (2.0 / pn, math.inf):
        try:
            eta = line.minimize(0.0, hi)
        except NotImplementedError:
            return
        _check_minimize(line, w, p, hi, eta, pn, rtol)


def _check_minorants(oracle, w, p, v, fw, fv, rtol):
    out = oracle.minorants(w)
    if out is None:
        return
    G, c = (np.asarray(a, dtype=np.float64) for a in out)
    if G.ndim != 2 or G.shape[1] != w.size or c.shape != (G.shape[0],):
        raise _fail("minorants: G of shape (k, dim) and c of shape (k,)", w, G_shape=G.shape,
                    c_shape=c.shape)
    if not (np.isfinite(G).all() and np.isfinite(c).all()):
        raise _fail("minorants: finite entries", w)
    for y, fy in ((w, fw), (v, fv), (w + p, None), (w - p, None), (2 * v - w, None)):
        fy = oracle.value(y) if fy is None else fy
        lin = G @ y + c
        j = int(np.argmax(lin - fy))
        scale = abs(fy) + float(np.abs(G[j]) @ np.abs(y)) + abs(float(c[j]))
        if lin[j] > fy + rtol * (1.0 + scale):
            raise _fail("minorants: <G_j, y> + c_j <= f(y) for every y", w, None, y=_fmt(y),
                        j=j, minorant=float(lin[j]), f_y=fy)


def _subgradient_inequality(law, w, v, fw, fv, g, rtol):
    lin = float(g @ (v - w))
    slack = fv - (fw + lin)
    scale = abs(fv) + abs(fw) + float(np.abs(g) @ np.abs(v - w))
    if slack < -rtol * (1.0 + scale):
        raise _fail(law + ": f(v) >= f(w) + <g, v - w>", w, None, v=_fmt(v), f_v=fv, f_w=fw,
                    g=_fmt(g), linearisation=fw + lin)


def _check_minimize(line, w, p, hi, eta, pn, rtol):
    eta = float(eta)
    if not (0.0 <= eta <= hi) or math.isnan(eta):
        raise _fail("minimize: result in [lo, hi]", w, p, lo=0.0, hi=hi, result=eta)
    if math.isinf(eta):  # unbounded below along the ray: phi must still decrease far out
        far = [line.value(2.0 ** k / pn) for k in range(0, 40, 4)]
        if not all(b <= a for a, b in zip(far, far[1:])) or line.derivative(2.0 ** 40 / pn, -1) >= 0:
            raise _fail("minimize: inf only when phi decreases without bound", w, p, far_values=far)
        return
    phi = line.value(eta)
    # optimality: phi'(eta+) >= 0 unless eta == hi, phi'(eta-) <= 0 unless eta == lo. A kink
    # computed as (kink - f) / q may sit an ulp away from where the derivative jumps, so the
    # derivatives are taken a few ulps outside the result (monotone: a weaker, robust test).
    delta = 16 * np.finfo(float).eps * max(1.0, abs(eta))
    d_right = line.derivative(min(eta + delta, hi), 1)
    d_left = line.derivative(max(eta - delta, 0.0), -1)
    d0 = abs(line.derivative(0.0, 1))
    dtol = math.sqrt(rtol) * (1.0 + d0 + abs(d_right) + abs(d_left))
    if eta < hi and d_right < -dtol:
        raise _fail("minimize: phi'(eta+) >= 0 at the result (unless eta == hi)", w, p, hi=hi,
                    result=eta, right_derivative=d_right)
    if eta > 0.0 and d_left > dtol:
        raise _fail("minimize: phi'(eta-) <= 0 at the result (unless eta == lo)", w, p, hi=hi,
                    result=eta, left_derivative=d_left)
    bracket = hi if math.isfinite(hi) else max(2.0 / pn, min(2.0 * eta, 1e300))
    grid = np.linspace(0.0, bracket, 1001)
    vals = np.array([line.value(t) for t in grid])
    j = int(np.argmin(vals))
    if phi > vals[j] + rtol * (1.0 + abs(vals[j])):
        raise _fail("minimize: no worse than a grid on the bracket", w, p, hi=hi, result=eta,
                    value=phi, grid_eta=float(grid[j]), grid_value=float(vals[j]))


class PassCounter:
    """Count the data passes of a linear-model loss: wraps the instance methods ``dot``
    (:math:`Xw`) and ``rdot`` (:math:`X^Tg`) of its ``DataMatrix`` (``loss.data``) and
    counts each call as half a pass (the loss is otherwise unchanged); ``fused`` (both in one
    read of the rows) counts as one of each.

    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(100, 10, random_state=0)
    >>> loss = nsopt.losses.Hinge(X, y)
    >>> counter = PassCounter(loss.data)
    >>> _ = loss.value_and_subgradient(np.zeros(10))
    >>> counter.passes()
    1.0
    """

    def __init__(self, data):
        self.dots = self.rdots = 0
        dot, rdot = data.dot, data.rdot

        def counted_dot(w):
            self.dots += 1
            return dot(w)

        def counted_rdot(g):
            self.rdots += 1
            return rdot(g)

        data.dot, data.rdot = counted_dot, counted_rdot
        fused = getattr(data, "fused", None)
        if fused is not None:  # the oracle call in one read: both halves of a pass

            def counted_fused(*args, **kwargs):
                self.dots += 1
                self.rdots += 1
                return fused(*args, **kwargs)

            data.fused = counted_fused

    def passes(self) -> float:
        """Passes so far: (calls of ``dot`` + calls of ``rdot``) / 2."""
        return 0.5 * (self.dots + self.rdots)

    def reset(self):
        self.dots = self.rdots = 0
