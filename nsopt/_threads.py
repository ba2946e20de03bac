r"""BLAS threads during a run: the ``blas_threads`` option every solver takes.

OpenBLAS (numpy's and scipy's BLAS) runs a large enough call on one thread per core, and its
worker threads then busy-wait for a while for the next call. A solver loop alternates small
BLAS calls (matrix-vector products over a few hundred columns, a master problem's solve, a
30 x 30 ``eigh`` in a user's oracle) with single-threaded compiled kernels and Python: the
spinning workers take the core the next kernel needs, and threads gain nothing on small
blocks. Measured on a shared 2-core machine (``benchmarks/blas_threads.py``,
``docs/solvers.md``, "BLAS threads during a run"): with the default threads the any-oracle
runs of ``benchmarks/any_oracle.py`` took 4-20x the process CPU time they take on one
thread on the L1 fit, the largest eigenvalue and a hinge risk as a bare oracle (the
Chebyshev fit and the level method on a max of affine functions were indifferent), dense
logistic risks 1.7-5x; the sparse linear models' cells were indifferent; no case measured
gained from threads below about 2**25 dense entries.

The policy (:func:`blas_limit`), with threadpoolctl as the mechanism (a dependency of nsopt,
and of scikit-learn; should it fail to load, every setting runs BLAS as configured):

* ``"auto"`` (the default): the run on one BLAS thread, unless the problem holds a dense
  block large enough for threads to pay (:func:`auto_threads`); the solvers' own one-thread
  blocks (:func:`_one_blas_thread`: the Newton steps, the dual-point certifier) on one;
* ``"keep"`` or ``None``: BLAS as the user configured it, untouched, those blocks included;
* an integer ``n >= 1``: the run on ``n`` threads, those blocks included.

The user's setting is restored when the run ends, also on an exception or Ctrl-C:
:meth:`~nsopt.solvers.Solver.solve` holds the limit for the whole run;
:meth:`~nsopt.solvers.Solver.iterate` and :meth:`~nsopt.solvers.Solver.run` hold it while
the solver works and lift it while the caller's code runs between two states
(:func:`limited`).
"""
from __future__ import annotations

import contextlib
import threading

import scipy.sparse as sp

__all__ = ["blas_limit", "threads_for", "auto_threads", "limited", "AUTO_DENSE_ENTRIES"]

#: "auto" keeps the user's threads when the problem's data hold a dense block of at least
#: this many entries (see :func:`auto_threads`). Measured on 2 loaded cores, two BLAS threads
#: over one: ``X @ w`` with ``X.T @ g`` 1.8x the time at 2e7 entries, 1.14x at 4e7; syrk
#: ``B.T @ B`` 1.17x at 8e6 entries, 0.97x at 3e7 (docs/solvers.md)
AUTO_DENSE_ENTRIES = 1 << 26

_CONTROLLER = []   # threadpoolctl's ThreadpoolController, made on first use (None: missing)


def _controller():
    """threadpoolctl's controller (made once: it scans the loaded libraries), or None."""
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController
            _CONTROLLER.append(ThreadpoolController())
        except Exception:   # noqa: BLE001 (absent or broken: run as configured)
            _CONTROLLER.append(None)
    return _CONTROLLER[0]


class _Level:
    """One BLAS setting nsopt holds: ``n`` threads (None: as configured), for ``count``
    entered limits, restored by ``limiter`` (threadpoolctl's, None without it or for
    ``n=None``) when the last of them exits; ``explicit`` when the user chose it
    (``blas_threads="keep"`` or a count), not nsopt."""

    __slots__ = ("n", "explicit", "count", "limiter")

    def __init__(self, n, explicit: bool, limiter):
        self.n, self.explicit, self.count, self.limiter = n, explicit, 1, limiter


_LEVELS: list = []   # the settings nsopt holds, innermost last (process-wide, as BLAS's is)
_LOCK = threading.Lock()


class _Limit:
    """A context in which BLAS runs on ``n`` threads (threadpoolctl's limiter; a no-op
    without threadpoolctl), or, with ``n=None``, as configured.

    ``explicit=False`` is nsopt's own choice (``"auto"``, a solver's one-thread block): it
    gives way to a user's explicit setting in force (``blas_threads="keep"`` or a count)
    and does nothing there. Entered while nsopt already holds the same setting (each
    resumption of a run under :meth:`~nsopt.solvers.Solver.solve`, each Newton step's
    one-thread block, an overlapping run) it only counts itself: threadpoolctl's limit costs
    some 15 us an entry, and the caller's setting comes back when the *last* holder exits,
    whichever opened it (overlapping runs do not restore it under each other)."""

    __slots__ = ("n", "explicit", "level")

    def __init__(self, n, explicit: bool = False):
        self.n, self.explicit, self.level = n, explicit, None

    def __enter__(self):
        with _LOCK:
            top = _LEVELS[-1] if _LEVELS else None
            if top is not None and top.explicit and not self.explicit:
                return self                      # the user's choice holds
            if top is not None and top.n == self.n and top.explicit == self.explicit:
                top.count += 1
                self.level = top
                return self
            controller = _controller()
            try:
                # threadpoolctl's limiter, not a bare set_num_threads: it also hands back
                # OpenBLAS's "controlling thread" when done (threadpoolctl lets one Python
                # thread at a time set OpenBLAS's shared pool; a thread that set it and never
                # let go would silence every other thread's limits)
                limiter = (None if controller is None or self.n is None
                           else controller.limit(limits=self.n, user_api="blas"))
            except Exception:   # noqa: BLE001 (a library that refuses: run as configured)
                limiter = None
            self.level = _Level(self.n, self.explicit, limiter)
            _LEVELS.append(self.level)
        return self

    def __exit__(self, *exc):
        with _LOCK:
            level, self.level = self.level, None
            if level is None:
                return False
            level.count -= 1
            if level.count == 0:
                _LEVELS.remove(level)
                if level.limiter is not None:
                    level.limiter.__exit__(None, None, None)   # the setting before it
        return False


def _one_blas_thread():
    """A context in which BLAS runs on one thread (threadpoolctl's controller, made once; a
    no-op without it, and under a user's explicit ``blas_threads``): the certifier's and the
    Newton steps' products are small, and threads woken for them cost more than the
    arithmetic on a busy machine."""
    return _Limit(1)


def _dense_entries(problem) -> int:
    """The entries of the dense data matrix the problem declares (its loss's ``data.X``;
    0 for sparse data or a problem without one, e.g. a user's oracle)."""
    loss = getattr(problem, "loss", None)
    X = getattr(getattr(loss, "data", None), "X", None)
    if X is None or sp.issparse(X) or not hasattr(X, "shape") or len(X.shape) != 2:
        return 0
    return int(X.shape[0]) * int(X.shape[1])


def auto_threads(problem) -> int | None:
    """The limit ``"auto"`` puts on a run of ``problem``: 1, or None (the user's threads)
    when the problem's data hold a dense block of at least :data:`AUTO_DENSE_ENTRIES`
    entries, where a threaded matrix-vector product over the data can pay for its threads.
    A user's oracle (no data the problem declares) runs on one thread: the measured ones
    (small matrices, an ``eigh``) all lose with threads; ``blas_threads="keep"`` opts out."""
    return None if _dense_entries(problem) >= AUTO_DENSE_ENTRIES else 1


def threads_for(setting, problem) -> int | None:
    """The BLAS thread limit of a run of ``problem`` with ``blas_threads=setting`` (None: no
    limit, the user's configuration)."""
    if setting is None or setting == "keep":
        return None
    if setting == "auto":
        return auto_threads(problem)
    return int(setting)


def blas_limit(setting, problem):
    """A context manager that holds the run's BLAS limit (:func:`threads_for`) and restores
    the user's setting on exit, also on an exception or ``KeyboardInterrupt``. A user's
    explicit setting (``"keep"``, None, a count) holds inside too: nsopt's own one-thread
    blocks (:func:`_one_blas_thread`) give way to it."""
    if setting == "auto":
        n = auto_threads(problem)
        return contextlib.nullcontext() if n is None else _Limit(n)
    return _Limit(threads_for(setting, problem), explicit=True)


def limited(generator, make_limit):
    """Drive ``generator`` with a fresh ``make_limit()`` context in force while it runs, and
    lifted while the consumer holds an item: the caller's code between two items (a progress
    display, a custom stopping rule) runs with the caller's own BLAS setting. Closing this
    generator closes ``generator`` (under the limit)."""
    try:
        while True:
            with make_limit():
                try:
                    item = next(generator)
                except StopIteration:
                    return
            yield item
            # let the item go before the next one is made: a solver's State holds d-vectors,
            # and the loop builds the next state (and the result) while this name held it
            del item
    finally:
        with make_limit():
            generator.close()
