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
    """Why a solver stopped. Messages live in one table, ``Status.message``."""

    CONVERGED = "converged"
    MAX_ITER = "max_iter"
    MAX_TIME = "max_time"
    CALLBACK = "callback"
    INTERRUPTED = "interrupted"
    NUMERICAL_ERROR = "numerical_error"
    STALLED = "stalled"
    UNBOUNDED = "unbounded"

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    @property
    def success(self) -> bool:
        return self is Status.CONVERGED


_MESSAGES = {
    Status.CONVERGED: "Converged: gap <= max(atol, rtol * |fun|), or stationary where no bound exists.",
    Status.MAX_ITER: "Stopped at the iteration limit (max_iter) before the gap reached the tolerance.",
    Status.MAX_TIME: "Stopped at the time limit (max_time) before the gap reached the tolerance.",
    Status.CALLBACK: "The callback asked to stop (returned True or raised StopIteration).",
    Status.INTERRUPTED: "Interrupted (KeyboardInterrupt); the best point so far is returned.",
    Status.NUMERICAL_ERROR: "A non-finite value (NaN or inf) appeared; the best finite point is returned.",
    Status.STALLED: ("The solver's own stationarity test holds but the certified gap is above the "
                     "tolerance: the solver cannot make progress (see Result.info); the gap "
                     "reported is still a valid bound."),
    Status.UNBOUNDED: "The objective decreases without bound along a direction the solver found.",
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

    def __len__(self) -> int:
        return len(self._rows["iteration"])

    def last(self) -> dict[str, Any]:
        return {c: v[-1] for c, v in self._rows.items()} if len(self) else {}

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

    def __repr__(self) -> str:
        return (
            f"Result(method={self.method!r}, status={self.status.value}, fun={self.fun:.10g}, "
            f"lower_bound={self.lower_bound:.10g}, gap={self.gap:.3g}, nit={self.nit}, "
            f"nfev={self.nfev}, time={self.time:.3g}s)"
        )
