"""The solver's clock: wall time minus the time numba spends compiling kernels.

The first run in a process compiles nsopt's kernels (or loads them from the on-disk cache)
inside the oracle's first calls. That is a cost of the process, not of the method: left in
``Result.time`` it would make the first of several runs look seconds slower and put a step in
its history. :class:`RunClock` listens to numba's ``"numba:compile"`` events (numba's
documented event API, ``numba.core.event``) and subtracts their duration; it also moves the
run's deadlines (``max_time``) by the same amount, so a run is not stopped for time it did not
spend.

Caveats: numba's listeners are process-wide, so a compilation started by another thread
during the run is subtracted too; loading a kernel from the disk cache is not an event (it
stays in the time, a few milliseconds per kernel).
"""
from __future__ import annotations

import time

from numba.core import event

__all__ = ["RunClock"]


class RunClock(event.Listener):
    """Seconds since :meth:`start` excluding numba compilations, as a context manager that
    registers the listener for the duration of a run.

    ``deadline_holders`` are objects with a ``deadline`` attribute (a ``time.perf_counter()``
    value or None) that the clock pushes back by each compilation's duration.

    Examples
    --------
    >>> with RunClock() as clock:
    ...     clock.start()
    ...     elapsed = clock()
    >>> elapsed >= 0 and clock.compiling == 0.0
    True
    """

    def __init__(self, deadline_holders=()):
        self.t0 = time.perf_counter()
        self.compiling = 0.0          # seconds spent in finished compilations
        self.holders = list(deadline_holders)
        self._depth = 0
        self._since = 0.0

    def start(self) -> float:
        """Restart at zero (the run's ``t0``) and return the ``perf_counter()`` reading."""
        self.t0 = time.perf_counter()
        self.compiling = 0.0
        return self.t0

    def __call__(self) -> float:
        now = time.perf_counter()
        ongoing = now - self._since if self._depth else 0.0
        return now - self.t0 - self.compiling - ongoing

    def on_start(self, ev) -> None:
        if self._depth == 0:
            self._since = time.perf_counter()
        self._depth += 1

    def on_end(self, ev) -> None:
        self._depth -= 1
        if self._depth == 0:
            spent = time.perf_counter() - self._since
            self.compiling += spent
            for holder in self.holders:
                if getattr(holder, "deadline", None) is not None:
                    holder.deadline += spent

    def __enter__(self) -> "RunClock":
        event.register("numba:compile", self)
        return self

    def __exit__(self, *exc) -> None:
        event.unregister("numba:compile", self)
