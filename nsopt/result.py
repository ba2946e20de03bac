"""The one result type of every solver, its status vocabulary and the per-step history."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .certificate import Certificate

__all__ = ["Status", "Result", "History"]


class Status(enum.Enum):
    """Why a solver stopped, and what that proves. Messages live in one table,
    ``Status.message``; ``docs/solvers.md`` has the table of what each status proves and which
    solvers can return it.

    One rule decides success: ``success`` is True exactly when the status is ``converged``, and
    ``converged`` is returned exactly when a proven gap ``fun - lower_bound <= max(atol, rtol *
    |fun|)`` holds. Every other status leaves the certificate valid (``lower_bound <= J*``) but
    proves no more than its gap.
    """

    CONVERGED = "converged"
    STATIONARY = "stationary"
    MAX_ITER = "max_iter"
    MAX_TIME = "max_time"
    CALLBACK = "callback"
    INTERRUPTED = "interrupted"
    NUMERICAL_ERROR = "numerical_error"
    NONCONVEX = "nonconvex"
    UNBOUNDED = "unbounded"
    #: the name of ``STATIONARY`` before nsopt 0.2
    STALLED = "stationary"

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    @property
    def success(self) -> bool:
        return self is Status.CONVERGED


_MESSAGES = {
    Status.CONVERGED: "Converged: the proven gap fun - lower_bound is <= max(atol, rtol * |fun|).",
    Status.STATIONARY: (
        "Approximately stationary, not proven optimal: the solver cannot make progress and its "
        "aggregate subgradient g (norm Result.subgradient_norm) and linearization error eps "
        "(Result.linearization_error) prove f(x) - f(y) <= eps + ||g|| ||x - y|| for every y. "
        "A bound on ||x - x*|| turns this into a gap (pass bounds or radius where the method "
        "supports them); the reported lower_bound is still valid."),
    Status.MAX_ITER: "Stopped at the iteration limit (max_iter) before the gap reached the tolerance.",
    Status.MAX_TIME: "Stopped at the time limit (max_time) before the gap reached the tolerance.",
    Status.CALLBACK: "The callback asked to stop (returned True or raised StopIteration).",
    Status.INTERRUPTED: "Interrupted (KeyboardInterrupt); the best point so far is returned.",
    Status.NUMERICAL_ERROR: ("The oracle returned NaN or inf (or a non-finite subgradient); "
                             "the best finite point is returned, see Result.info['numerical_error']."),
    Status.NONCONVEX: ("The oracle contradicts convexity: a value below one of its own cutting "
                       "planes or lower bounds (the function is not convex, its subgradients are "
                       "wrong, or its stated lower_bound is wrong); the two points and values "
                       "that prove it are in Result.info['nonconvex']. No bound is claimed."),
    Status.UNBOUNDED: ("The objective kept decreasing along a ray (by more than max(1, |f|) with "
                       "its slope still negative at step 1e20): the problem is probably "
                       "unbounded below. This is evidence, not a proof."),
}


class History:
    """One row per step: iteration, time, fun, lower_bound, gap, nfev plus solver fields.

    Stored as growing Python lists while running; :meth:`as_arrays` gives a dict of numpy
    arrays, which is what ``Result.history`` holds.
    """

    base_columns = ("iteration", "time", "fun", "lower_bound", "gap", "nfev")

    def __init__(self, extra: tuple[str, ...] = ()):
        self.columns = self.base_columns + tuple(extra)
        self._rows: dict[str, list] = {c: [] for c in self.columns}

    def append(self, **row) -> None:
        for c in self.columns:
            self._rows[c].append(row.get(c, math.nan))

    def replace_last(self, **row) -> None:
        """Overwrite the last row (a step that ended the run changed its bound or value)."""
        for c in self.columns:
            self._rows[c][-1] = row.get(c, math.nan)

    def __len__(self) -> int:
        return len(self._rows["iteration"])

    def as_arrays(self) -> dict[str, np.ndarray]:
        return {c: np.asarray(v) for c, v in self._rows.items()}


@dataclass(frozen=True)
class Result:
    """What every solver returns.

    Attributes
    ----------
    x : ndarray
        The best point seen (smallest ``fun``), never a worse last iterate.
    fun : float
        The objective at ``x``.
    lower_bound : float
        A proven lower bound on the optimal value (``-inf`` if none is known).
    gap : float
        ``fun - lower_bound``: ``x`` is ``gap``-optimal.
    nit, nfev : int
        Iterations and oracle calls.
    status : Status
    success : bool
    message : str
    time : float
        Wall-clock seconds.
    history : dict of ndarray
        One row per iteration (``iteration, time, fun, lower_bound, gap, nfev`` and the
        solver's own columns).
    certificate : Certificate
        The evidence behind ``lower_bound``; ``certificate.check(problem)`` recomputes it.
    info : dict
        Solver-specific diagnostics, documented by each solver.
    subgradient_norm, linearization_error : float
        For status ``stationary`` (NaN otherwise): the norm of an aggregate subgradient ``g`` and
        its linearization error ``eps >= 0`` at ``x``, so ``g`` is an ``eps``-subgradient:
        ``f(y) >= f(x) + <g, y - x> - eps`` for every ``y``.
    """

    x: np.ndarray
    fun: float
    lower_bound: float
    gap: float
    nit: int
    nfev: int
    status: Status
    success: bool
    message: str
    time: float
    history: dict
    certificate: Certificate
    method: str = ""
    info: dict = field(default_factory=dict)
    subgradient_norm: float = math.nan
    linearization_error: float = math.nan

    def __repr__(self) -> str:
        return (
            f"Result(method={self.method!r}, status={self.status.value}, fun={self.fun:.10g}, "
            f"lower_bound={self.lower_bound:.10g}, gap={self.gap:.3g}, nit={self.nit}, "
            f"nfev={self.nfev}, time={self.time:.3g}s)"
        )
