r"""A regularized risk whose examples live on the workers of a Dask cluster.

The risk of a linear model is a sum over examples, so it splits over contiguous row blocks
(shards) :math:`S_1, \dots, S_P`:

.. math::  R(w) = \sum_i c_i\, l(\langle x_i, w\rangle, y_i)
                = \sum_{k=1}^{P} R_k(w), \qquad R_k(w) = \sum_{i \in S_k} c_i\, l(\langle x_i,
                w\rangle, y_i),

with the example weights :math:`c_i` of the whole problem (they sum to 1 over all shards, so
the sum is the mean of the one-machine loss, not a mean of means). A subgradient of :math:`R`
is the sum of the shards' subgradients, and so are the directional derivative
(``sup_subgradient``) and the line restriction
:math:`\varphi(\eta) = \sum_k \varphi_k(\eta)`.

Each shard's loss object is built once and stays on a worker (``client.scatter`` of its rows,
or parsed there from an svmlight file). One oracle call ships :math:`w` to every shard and
gathers :math:`P` pairs ``(R_k(w), a_k)``; the driver adds them **in shard order**, so the
result, and hence every iterate, is deterministic. A line keeps :math:`Xw` and :math:`Xp` of
each shard on its worker; each value or derivative of the line moves one float per shard,
and its exact minimiser is found by a distributed selection over the kinks each shard keeps
sorted (:func:`_select_minimize`: O(1) numbers per shard per round, never the kinks; a
shard of a hinge-type or squared hinge loss answers its derivatives at the pivots from
running sums of the jumps of its line's first or second derivative), or, for the smooth
logistic loss, by Newton's method on :math:`(\varphi', \varphi'')` summed over the shards
(:func:`_newton_minimize`: two floats per shard per step).

Summation order. The one-machine kernels sum the loss over all examples in one running sum;
the shards' partial sums added in shard order round differently (1e-16 relative, up to
1e-12 for many equal terms). With ``ShardedLoss.reduction = "ordered"`` each shard continues
the running sum of the shards before it, and the loss values are bitwise the one-machine
ones (P - 1 more round trips of one float per value); on sparse data the subgradients too
(:meth:`ShardedLoss._ordered_subgradient`: the d-vector :math:`X^Tg` continued shard after
shard, P - 1 more round trips of a d-vector); a line's values and one-sided derivatives too
(:func:`_continued_line_value`, :func:`_continued_line_derivative`: the fused line kernels'
``start``), and with ``line_search="gather"`` a piecewise-linear line runs the one-machine
sweep over its gathered kinks (:meth:`ShardedLine.jumps`). What reproduces a one-machine
run's iterates where the path amplifies rounding (ls-bmrm on a9a, bitwise with its default
``reuse_scores=True``, whose scores the shards keep and combine where they live,
:meth:`ShardedLoss.scores`, and with ``reuse_scores=False``; subBFGS on the hinge, whose
exact steps land on kinks: one ulp of a subgradient moves its path by 1e-4 in two
iterations; excessive-gap, whose sums :mod:`nsopt.distributed_saddle` continues the same way).

:class:`ShardedLoss` is an :class:`~nsopt.Oracle` (a loss); :func:`shard` and
:func:`load_svmlight` wrap it in an unchanged :class:`~nsopt.RegularizedRisk`, so every solver
that uses the oracle protocol runs on it.

Certificates. A :class:`ShardedLoss` presents itself to the solvers as a loss *without* a
dual interface (no ``dual_upper``): they certify with query-point evidence
(:class:`~nsopt.certificate.QueryPoints`: points and multipliers, small). For a margin loss
(hinge, squared hinge, logistic) the certificate then adopts
(:meth:`ShardedLoss.adopt_evidence`, called by :meth:`nsopt.Certificate.from_evidence`) a
:class:`ShardedDualPoint`: each shard forms its piece of the Fenchel dual point from the
query points and keeps it; :meth:`~nsopt.Certificate.check` asks each shard to verify its
piece and rebuild its plane, and adds the planes in shard order. No per-example vector ever
reaches the driver. The problem's fingerprint covers the data through a digest of every
shard, computed on its worker when the shard is built.

Lost workers. Every call that fails because a shard's data is gone (a worker killed,
restarted or disconnected) rebuilds that shard from its source and repeats the call, up to
``max_rebuilds`` times per call: the answer is the same numbers, so the run continues as if
nothing happened (kept scores, :meth:`ShardedLoss.scores`, are recomputed from their points:
equal up to rounding). The source of a shard of :func:`shard` is the caller's in-memory
problem (the driver keeps a reference to it, which the caller holds anyway; pass
``rebuild=False`` to drop it); that of :func:`load_svmlight` is the file, read again by
another worker. A shard that cannot be rebuilt raises :class:`ShardsLost`, a
``KeyboardInterrupt``: the solver loop stops with status ``interrupted`` and returns the
best point with a certificate made only of evidence that was checked before the loss,
never a wrong one.
"""
from __future__ import annotations

import copy
import hashlib
import math
import numbers
import os
import weakref
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from numba import njit

from .certificate import CertificateError, DualPoint, Evidence, _fail, _finite_array
from .losses._base import ScalarLoss
from .losses._vector_base import VectorLoss
from .losses._groups import contiguous_groups
from .losses._kernels import CONTINUABLE_KERNELS, DataMatrix
from .losses._kernels import dot as _serial_dot
from ._linalg import lincomb
from .oracle import LineFunction, Oracle, SumLine, _minimize_piecewise
from .problem import RegularizedRisk

__all__ = ["ShardedLoss", "ShardedLine", "ShardedDualPoint", "ShardError", "ShardsLost", "shard",
           "load_svmlight", "map_svmlight", "from_builders", "from_dask", "local_client"]


class ShardError(ValueError):
    """Bad input on one shard (a malformed svmlight line, a NaN, a label out of range).

    Attributes
    ----------
    shard : int
        The shard's index (0-based).
    source : str
        Where the shard came from (a file name, or ``"rows s:e"`` of an in-memory problem).
    lineno : int or None
        The 1-based line of the file, when the error is about one line.
    """

    def __init__(self, message: str, shard: int | None = None, source: str | None = None,
                 lineno: int | None = None):
        super().__init__(message)
        self.shard, self.source, self.lineno = shard, source, lineno

    def __reduce__(self):  # crosses process boundaries (raised on a worker)
        return (type(self), (self.args[0], self.shard, self.source, self.lineno))


class ShardsLost(KeyboardInterrupt):
    """A shard's data is gone and cannot be rebuilt (no source, or every rebuild failed).

    A ``KeyboardInterrupt`` on purpose: nsopt's solver loop treats it as an interruption and
    returns the best point so far with status ``interrupted`` and a certificate built only from
    evidence gathered before the loss.
    """


def _require_dask():
    try:
        import distributed  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("nsopt.distributed needs Dask: pip install 'nsopt[dask]' "
                          "(or 'dask[distributed]')") from exc
    return distributed


#: Dask settings of the clusters nsopt starts itself (:func:`local_client`): the periodic
#: work of every process (a statistical profiler sampling each worker's threads every 10 ms,
#: event-loop health checks every 20 ms, system and memory monitors) is idle CPU that a
#: worker computing a shard on a shared core pays for; measured on 2 cores, 2 workers: the
#: driver's idle CPU 57 -> 6 ms/s, each worker's 40 -> 3 ms/s (docs/distributed.md, "Cost
#: per iteration"). The memory monitor still checks every second.
QUIET_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def local_client(n_workers: int | None = None, **cluster_options):
    """A client of a new ``LocalCluster`` of ``n_workers`` processes with one thread each
    (default: the number of CPUs); extra keyword arguments go to ``LocalCluster``.

    The client calls the shards' actors directly (``direct_to_workers=True``: one TCP round
    trip driver-worker; through the scheduler each call makes two, at about twice the
    driver's CPU per call), and the cluster runs with :data:`QUIET_CONFIG` (no profiler,
    slower health checks and monitors)."""
    distributed = _require_dask()
    import dask

    n_workers = (os.cpu_count() or 1) if n_workers is None else int(n_workers)
    options = dict(n_workers=n_workers, processes=True, threads_per_worker=1,
                   dashboard_address=None)
    options.update(cluster_options)
    with dask.config.set(QUIET_CONFIG):  # read when the scheduler and the nannies start
        cluster = distributed.LocalCluster(**options)
    return distributed.Client(cluster, direct_to_workers=True)


# ----------------------------------------------------------------------------------------
# what runs on the workers
# ----------------------------------------------------------------------------------------
def _digest(loss) -> str:
    from .certificate import _feed

    h = hashlib.blake2b(digest_size=16)
    _feed(h, loss, 1)
    return h.hexdigest()


def _check_shard(loss, index: int, source: str):
    """Refuse a shard whose data has non-finite entries, naming the shard and the row."""
    X = loss.data.X
    dense = isinstance(X, np.ndarray)
    values = X if dense else X.data
    if not np.all(np.isfinite(values)):
        if dense:
            row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        else:
            bad = np.flatnonzero(~np.isfinite(X.data))[0]
            row = int(np.searchsorted(X.indptr, bad, side="right") - 1)
        raise ShardError(f"shard {index} ({source}): row {row} of the shard has a non-finite "
                         "feature value (NaN or inf)", index, source)
    y = np.asarray(loss.y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        row = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ShardError(f"shard {index} ({source}): row {row} of the shard has a non-finite "
                         "label", index, source)
    return loss


def _read_svmlight(path, index, n_features=None, span=None, empty_ok=False):
    """``(X, y)`` of a file, or of the lines of the byte range ``span = (start, stop)`` of an
    uncompressed file (:class:`nsopt.io.LineRange`); bad input raises a ShardError naming
    the shard, the file and the file's line number; so does a range in which no line starts,
    unless ``empty_ok``."""
    from .io import (CorruptFileError, LineRange, SvmlightFormatError,
                     load_svmlight as _load)

    source = path if span is None else f"{path}, bytes {span[0]}-{span[1]}"
    try:
        if span is None:
            return _load(path, n_features=n_features)
        with LineRange(path, *span) as lines:
            try:
                X, y = _load(lines, n_features=n_features)
            except SvmlightFormatError as exc:  # the file's line number, not the range's
                raise SvmlightFormatError(path, exc.lineno + lines.lines_before(),
                                          exc.problem) from None
        if X.shape[0] == 0 and not empty_ok:
            raise ShardError(f"shard {index} ({source}): no line starts in this byte range "
                             "(fewer lines than shards: use fewer shards)", index, source)
        return X, y
    except SvmlightFormatError as exc:
        raise ShardError(f"shard {index} ({source}), line {exc.lineno}: {exc.problem}",
                         index, str(exc.source), exc.lineno) from None
    except (CorruptFileError, OSError) as exc:
        raise ShardError(f"shard {index} ({source}): {exc}", index, str(path)) from None


def _few_labels(y, limit=3):
    """The shard's smallest ``limit`` distinct labels (O(1) numbers for the driver)."""
    return [float(v) for v in np.unique(y)[:limit]]


def _loss_of_file(X, y, cls, n_features, weight, options, index, source, classes=None,
                  bias=None):
    import scipy.sparse as sp

    if X.shape[1] < n_features:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    if classes is not None:  # two labels: the larger +1, the other -1
        y = np.where(y == classes[1], 1.0, -1.0)
    if bias is not None:  # liblinear's -B: a last column of value bias
        X = sp.hstack([X, sp.csr_matrix(np.full((X.shape[0], 1), float(bias)))], format="csr")
    try:
        loss = cls(X, y, **options)
    except (TypeError, ValueError) as exc:
        raise ShardError(f"shard {index} ({source}): {exc}", index, source) from None
    loss.c = np.full(X.shape[0], weight)  # the whole problem's weights: 1/m of all shards
    return _check_shard(loss, index, source)


def _curvature(line) -> str | None:
    """Which closed-form curvature a shard's line has: ``"squared-hinge"`` (piecewise
    quadratic, :func:`_squared_hinge_jumps`), ``"logistic"`` (smooth,
    :func:`_logistic_curvature`) or None. Only plain :class:`~nsopt.losses.ScalarLine`s of
    the loss classes themselves (no intercept, no subclass that changes the loss)."""
    from .losses import Logistic, SquaredHinge
    from .losses._base import ScalarLine

    if type(line) is not ScalarLine:
        return None
    kind = type(line.loss)
    if kind is SquaredHinge and np.all(np.abs(line.loss.y) == 1.0):
        return "squared-hinge"
    if kind is Logistic and np.all(np.abs(line.loss.y) == 1.0):
        return "logistic"
    return None


def _squared_hinge_jumps(line):
    r"""``(etas, dB)``: the kinks of a squared hinge line (``line._kink_etas``, the numbers of
    its ``breakpoints()``) and the jump of :math:`\varphi''` at each. Example i is active
    (curvature :math:`c_i q_i^2`) while :math:`y_i z_i < 1`; along :math:`\eta` it leaves that
    region at its kink when :math:`y_i q_i > 0`, enters it when :math:`y_i q_i < 0`."""
    loss = line.loss
    nz = np.flatnonzero(line.q != 0)
    q = line.q[nz]
    dB = -np.sign(loss.y[nz] * q) * loss.c[nz] * q * q
    return np.asarray(line._kink_etas(nz), dtype=np.float64), dB


def _squared_hinge_curvature(line, eta: float) -> float:
    r""":math:`\varphi''(\eta^+) = \sum c_i q_i^2` over the examples active just right of
    :math:`\eta` (:math:`y_i z_i < 1`, or on the kink and entering)."""
    loss = line.loss
    t = loss.y * (line.f + eta * line.q)
    active = (t < 1.0) | ((t == 1.0) & (loss.y * line.q < 0))
    return float(np.sum(loss.c[active] * line.q[active] ** 2))


def _logistic_curvature(line, eta: float) -> float:
    r""":math:`\varphi''(\eta) = \sum_i c_i q_i^2\, e^{-|t_i|} / (1 + e^{-|t_i|})^2`,
    :math:`t_i = y_i (f_i + \eta q_i)` (:math:`\sigma(t)(1 - \sigma(t))` without overflow)."""
    loss = line.loss
    e = np.exp(-np.abs(loss.y * (line.f + eta * line.q)))
    return float(np.sum(loss.c * line.q * line.q * (e / ((1.0 + e) * (1.0 + e)))))


def _prefix_example(loss, prefix: float):
    """``(z0, y0, c0)``: one pseudo-example whose term :math:`c_0 l(z_0, y_0)`, as the loss's
    kernel computes it, is exactly ``prefix`` (so that the kernel's running sum, which starts
    at 0, continues from ``prefix``). Its label is the shard's first; the score is tried from
    a fixed list; ValueError if none gives ``prefix`` exactly."""
    y0 = float(loss.y[0])
    one = np.ones(1)
    for z0 in (0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 0.25, 3.0, -0.5, 4.0):
        zz, yy = np.array([z0]), np.array([y0])
        L = float(loss._value_kernel(zz, yy, one))
        if not (math.isfinite(L) and L != 0.0):
            continue
        c0 = prefix / L
        if math.isfinite(c0) and float(loss._value_kernel(zz, yy, np.array([c0]))) == prefix:
            return z0, y0, c0
    raise ValueError(f"no pseudo-example of {type(loss).__name__} carries the prefix {prefix!r}")


def _continued_sum(loss, z, prefix: float, kernel: str) -> float:
    r"""The loss's kernel sum :math:`\sum_i c_i l(z_i, y_i)` over this shard, its running sum
    started at ``prefix`` instead of 0: the very rounding of the one-machine kernel, which
    runs through the examples of every shard in order. ``kernel``: ``"value"`` or
    ``"grad"`` (the kernel the one-machine evaluation uses for this sum). The kernels of
    :func:`~nsopt.losses._kernels.elementwise` (every loss of nsopt) take the prefix as their
    ``start``; a loss with kernels of its own continues through a pseudo-example carrying
    the prefix (:func:`_prefix_example`)."""
    prefix = float(prefix)
    y, c = loss.y, loss.c
    value, grad = loss.kernels
    if (grad if kernel == "grad" else value) in CONTINUABLE_KERNELS:  # the kernel's start
        params = [getattr(loss, n) for n in loss.kernel_params]
        if kernel == "grad":
            return float(grad(z, y, c, np.zeros(z.size), np.empty(z.size), *params, prefix))
        return float(value(z, y, c, *params, prefix))
    if prefix != 0.0:  # 0 + t = t: a zero prefix is the kernel's own start
        z0, y0, c0 = _prefix_example(loss, prefix)
        z, y, c = (np.concatenate([[z0], z]), np.concatenate([[y0], y]),
                   np.concatenate([[c0], c]))
    if kernel == "grad":
        return float(loss._grad_kernel(z, y, c, np.zeros(z.size), np.empty(z.size)))
    return float(loss._value_kernel(z, y, c))


def _continued_line_derivative(line, eta: float, side: int, prefix: float) -> float:
    r"""This shard's line derivative :math:`\sum_i (c_i l'_i) q_i` as
    :meth:`ScalarLine.derivative <nsopt.losses._base.ScalarLine.derivative>` computes it,
    with its running sum started at ``prefix``: the fused line kernel's ``start`` where the
    loss has line kernels; else (the hinge) the gradient kernel and a serial dot continued
    from ``prefix``, ``ScalarLine``'s own path."""
    prefix, eta = float(prefix), float(eta)
    fused = getattr(line, "_fused", None)
    if fused is not None:
        _, der, _, args, params = fused
        return float(der(*args, eta, float(side), *params, prefix))
    z = line._scores_at(eta)
    if line._sign is None:
        line._sign, line._buf = np.sign(line.q), np.empty_like(line.f)
    line.loss._grad_kernel(z, line.loss.y, line.loss.c, side * line._sign, line._buf)
    return float(_serial_dot(line._buf, np.ascontiguousarray(line.q, dtype=np.float64), prefix))


def _continued_line_value(line, eta: float, prefix: float) -> float:
    r"""This shard's line value :math:`\sum_i c_i l(f_i + \eta q_i, y_i)` as
    :meth:`ScalarLine.value <nsopt.losses._base.ScalarLine.value>` computes it, its running
    sum started at ``prefix``: the fused line kernel's ``start``; else (the hinge) the value
    kernel at ``f + eta q`` continued by :func:`_continued_sum`."""
    fused = getattr(line, "_fused", None)
    if fused is not None:
        val, _, _, args, params = fused
        return float(val(*args[:4], float(eta), *params, float(prefix)))
    return _continued_sum(line.loss, line.f + eta * line.q, prefix, "value")


def _continued_rdot(data, g: np.ndarray, prefix) -> np.ndarray:
    r"""This shard's :math:`X_k^T g` continued from ``prefix`` (the partial vector of the shards
    before it; None: from 0): for every feature j the running sum
    :math:`\mathrm{prefix}_j + \sum_{i} x_{ij} g_i` over this shard's rows in order, the very
    rounding of the one-machine ``DataMatrix.rdot`` on CSR data (scipy's ``g @ X`` and the
    threaded CSC pass both add, per feature, the rows in increasing order from 0). Sparse
    data only: dense data's BLAS product has its own blocking, which cannot be continued."""
    out = np.zeros(data.shape[1]) if prefix is None else np.array(prefix, dtype=np.float64)
    X = data.csr
    _rdot_into(X.indptr, X.indices, X.data, np.ascontiguousarray(g, dtype=np.float64), out)
    return out


@njit(cache=True)
def _rdot_into(indptr, indices, data, g, out):  # out[j] += x_ij g_i, rows in order
    for i in range(indptr.shape[0] - 1):
        gi = g[i]
        for k in range(indptr[i], indptr[i + 1]):
            out[indices[k]] += data[k] * gi


class _ShardActor:
    """A shard on its worker (a Dask actor: with a client made with
    ``direct_to_workers=True``, as :func:`local_client` makes it, calls go straight to the
    worker; otherwise the scheduler relays them). Holds the shard's loss and its open lines;
    answers with O(d) or O(1) numbers."""

    def __init__(self, index, source, loss=None, file=None, make=None):
        # never raises: an actor whose construction fails was seen to leave its worker's
        # actor calls hanging (dask 2026.8); the checks run in ``start``
        self.index, self.source = index, source
        self.loss, self._raw, self._file, self._make = loss, None, file, make
        self._lines = {}
        self._duals = {}
        self._scores = {}  # kept scores X_k v by key (ShardedLoss.scores: ls-bmrm's reuse)
        self._derivatives = None  # value_and_subgradient's g, kept between calls (_fused)

    def start(self):
        """Build (from ``make``) and check the shard; its facts, or a ShardError."""
        if self._make is not None:
            loss = self._make()
            if not isinstance(loss, ScalarLoss):
                raise ShardError(f"shard {self.index} ({self.source}): the builder returned a "
                                 f"{type(loss).__name__}, not a scalar loss of "
                                 f"nsopt.losses",
                                 self.index, self.source)
            self.loss = loss
        if self.loss is not None:
            _check_shard(self.loss, self.index, self.source)
            return self.shape()
        return None

    def shape(self):
        return (int(self.loss.m), int(self.loss.dim))

    def reweight(self, scale):
        self.loss.c = self.loss.c * scale
        return self.info()

    # building from a file: read (shape back), then build with the agreed n_features
    def read(self):
        """Read the shard's file (or byte range); ``(rows, columns, its smallest 3 labels)``."""
        path, n_features, span = self._file
        self._raw = _read_svmlight(path, self.index, n_features, span)
        return (*self._raw[0].shape, _few_labels(self._raw[1]))

    def build(self, cls, n_features, weight, options, classes=None, bias=None):
        X, y = self._raw
        self.loss = _loss_of_file(X, y, cls, n_features, weight, options, self.index,
                                  self.source, classes, bias)
        self._raw = None
        return self.info()

    def metric_sums(self, w, kind):
        """O(1) sums of the training metrics of the scores ``X_k w`` on this shard (the
        command line's, :func:`nsopt.cli._metrics`): ``kind = "binary"``: ``(rows, correct)``
        (sign of the score against the -1/+1 labels); ``"regression"``: ``(rows, sum of
        squared errors, sum of absolute errors)``."""
        f = np.asarray(self.loss.data.dot(w)).reshape(-1)
        y = self.loss.y
        if kind == "binary":
            return (int(f.size), int(np.count_nonzero(np.where(f >= 0, 1.0, -1.0) == y)))
        r = f - y
        return (int(f.size), float(np.dot(r, r)), float(np.sum(np.abs(r))))

    def info(self):
        return {"m": int(self.loss.m), "dim": int(self.loss.dim), "digest": _digest(self.loss)}

    def ping(self):
        return self.loss is not None

    def timed(self, method, *args):
        """``(wall, cpu)`` seconds of ``method(*args)`` on this worker, its answer dropped: the
        per-shard kernel time without Dask's round trip (``benchmarks/distributed.py``); cpu
        is this process's, every thread."""
        import time

        wall, cpu = time.perf_counter(), time.process_time()
        getattr(self, method)(*args)
        return time.perf_counter() - wall, time.process_time() - cpu

    def cpu(self):
        """This worker process's CPU seconds so far (every thread: the event loop's too)."""
        import time

        return time.process_time()

    def kind(self):
        return type(self.loss)

    # oracle
    def value(self, w):
        return float(self.loss._value(w))

    def value_and_subgradient(self, w):
        fused = self._fused()
        if fused is None:
            r, a = self.loss._value_and_subgradient(w)
            return float(r), a
        loss = self.loss
        g = self._derivatives
        if g is None or g.shape != (loss.m,):
            g = self._derivatives = np.empty(loss.m)
        params = [getattr(loss, n) for n in loss.kernel_params]
        r, a = loss.data.fused(fused, w, loss.y, loss.c, g, params)
        return float(r), a

    def _fused(self):
        r"""The loss's one-read kernel when ``loss._value_and_subgradient`` is
        ``ScalarLoss``'s own and would call it (``ScalarLoss._evaluate_once``); else None.
        :meth:`value_and_subgradient` then makes the same call with its derivative buffer
        :math:`g` (m_k floats) kept between calls: the same numbers, bitwise, without a new
        m_k-vector per call. Why: a Dask worker runs with ``MALLOC_TRIM_THRESHOLD_`` set
        (``distributed.nanny.pre-spawn-environ``), which keeps glibc from reusing a freed
        large block, so each new 8 MB vector (10^6 rows) was mapped afresh: 421-933 minor
        page faults and 2-4 ms of system CPU per call on a shard of the benchmark (1e7
        nonzeros, a call of ~25-37 ms), 0-7 faults now (docs/distributed.md, "The
        1-worker iteration by CPU clock")."""
        loss = self.loss
        if (not isinstance(loss, ScalarLoss)
                or type(loss)._value_and_subgradient is not ScalarLoss._value_and_subgradient
                or type(loss)._evaluate_once is not ScalarLoss._evaluate_once
                or "_value_and_subgradient" in vars(loss) or "_evaluate_once" in vars(loss)):
            return None
        return loss._fused_kernels()

    def sup_subgradient(self, w, p):
        s, g = self.loss._sup_subgradient(w, p)
        return float(s), g

    # the ordered reduction (ShardedLoss.reduction == "ordered"): this shard's sum of
    # c_i l(z_i, y_i) continued from the running sum of the shards before it
    def chainable(self):
        """Whether this shard's loss is evaluated from its scores by the kernels of
        :class:`~nsopt.losses._base.ScalarLoss` (its sums can then be continued)."""
        return isinstance(self.loss, ScalarLoss) and bool(self.loss.scores_supported)

    def value_keep(self, w):
        """:meth:`value`, keeping the scores for :meth:`chain`."""
        z = self.loss.scores(w)
        self._kept = (w, z, "value")
        return float(self.loss._value_kernel(z, self.loss.y, self.loss.c))

    def value_and_subgradient_keep(self, w, key=None):
        """:meth:`value_and_subgradient` as ``ScalarLoss._value_and_subgradient`` computes it
        (scores, the kernel's sum and derivatives, ``X^T g``), keeping the scores; ``key``:
        from the kept scores ``key`` instead of :math:`X_k w` (as ``_value_subgradient_dual``
        with ``scores``)."""
        loss = self.loss
        z = loss.scores(w) if key is None else self._scores[key]
        g = np.empty(loss.m)
        r = loss._grad_kernel(z, loss.y, loss.c, np.zeros(loss.m), g)
        self._kept = (w, z, "grad")
        return float(r), loss.data.rdot(g)

    def chain(self, prefix, w=None):
        """The kept evaluation's sum continued from ``prefix`` (:func:`_continued_sum`); None
        when the scores are not here (a rebuilt shard) and ``w`` is not given."""
        kept = getattr(self, "_kept", None)
        if kept is None or (w is not None and not np.array_equal(kept[0], w)):
            if w is None:
                return None
            self.value_keep(w)
            kept = self._kept
        return _continued_sum(self.loss, kept[1], prefix, kept[2])

    def line_value_from(self, key, eta, prefix):
        """:meth:`line_value` continued from ``prefix`` (the line of scores ``f + eta q``)."""
        return _continued_line_value(self._lines[key][0], eta, prefix)

    def line_jumps(self, key):
        """The line's kinks and jumps of its derivative, unsorted (``ScalarLine.jumps``), or
        None."""
        j = self._lines[key][0].jumps()
        return None if j is None else (np.asarray(j[0]), np.asarray(j[1]))

    def line_derivatives_from(self, key, pivots, prefixes):
        """The one-sided derivatives ``(+, -)`` at each pivot continued from the shards
        before (``prefixes``: one pair a pivot; :func:`_continued_line_derivative`)."""
        line = self._lines[key][0]
        return [tuple(_continued_line_derivative(line, v, side, pre[i])
                      for i, side in enumerate((1, -1)))
                for v, pre in zip(pivots, prefixes)]

    def line_chainable(self, key):
        from .losses._base import ScalarLine

        line = self._lines[key][0]
        return type(line) is ScalarLine and line.loss is self.loss

    # the ordered subgradient: X^T g continued along the chain of shards (CSR rows in order)
    def vector_chainable(self):
        """Whether this shard's ``X^T g`` can be continued (:func:`_continued_rdot`)."""
        data = getattr(self.loss, "data", None)
        return self.chainable() and type(data) is DataMatrix and bool(data.sparse)

    def _keep_derivatives(self, w, p=None, key=None):
        r"""The kernel's derivatives :math:`g_i = c_i l'(z_i, y_i)` at ``w`` (with ``p``: the
        side of each kink that of :math:`\mathrm{sign}(x_i^T p)`, as ``_sup_subgradient``),
        kept for :meth:`chain_subgradient`; the kernel's loss sum. ``key``: the scores are
        the kept ones of that key, not :math:`X_k w`."""
        loss = self.loss
        z = loss.scores(w) if key is None else self._scores[key]
        side = np.zeros(loss.m) if p is None else np.sign(loss.data.dot(p))
        g = np.empty(loss.m)
        r = loss._grad_kernel(z, loss.y, loss.c, side, g)
        self._kept_g = (w, p, z, g)
        if p is None:
            self._kept = (w, z, "grad")
        return float(r)

    def ordered_start(self, w, p=None, key=None):
        """First round of an ordered subgradient (every shard in parallel): keep the
        derivatives; shard 0, the head of the chain, also answers its ``X^T g`` from 0."""
        r = self._keep_derivatives(w, p, key)
        a = _continued_rdot(self.loss.data, self._kept_g[3], None) if self.index == 0 else None
        return r, a

    def chain_subgradient(self, prefix_r, prefix_a, w=None, p=None):
        """``(loss sum, X^T g)`` continued from the shards before (``prefix_r`` None: no sum);
        None when the derivatives are not here (a rebuilt shard) and ``w`` is not given."""
        kept = getattr(self, "_kept_g", None)
        if kept is None or w is not None:
            if w is None:
                return None
            self._keep_derivatives(w, p)
            kept = self._kept_g
        _, _, z, g = kept
        r = None if prefix_r is None else _continued_sum(self.loss, z, prefix_r, "grad")
        return r, _continued_rdot(self.loss.data, g, prefix_a)

    # kept scores (ShardedLoss.scores): X_k v under a key, combined where they live
    def scores_drop(self, keys):
        for k in keys:  # scores the driver no longer holds
            self._scores.pop(k, None)

    def scores_keep(self, key, w, drop=()):
        """Keep :math:`X_k w` (``ScalarLoss.scores``) under ``key``."""
        self.scores_drop(drop)
        self._scores[key] = self.loss.scores(w)

    def scores_combine(self, out, a, x, b, y, drop=()):
        """Keep :math:`a x + b y` of the kept scores ``x``, ``y`` under ``out`` (a new array:
        a line may still hold the old one), by :func:`nsopt._linalg.lincomb`, the one-machine
        solver's own operations element by element (``a = 1, b = -1``: ``x - y`` bitwise)."""
        self.scores_drop(drop)
        self._scores[out] = lincomb(a, self._scores[x], b, self._scores[y])

    def scores_max_abs(self, key):
        z = self._scores[key]
        return float(np.max(np.abs(z))) if z.size else 0.0

    # lines, kept here by key
    def open_line(self, key, w, p, drop=(), drop_duals=()):
        """Open line ``key``; its facts ``(has breakpoints, affine between them)``."""
        return self._open(key, lambda: self.loss._restrict(w, p), drop, drop_duals)

    def open_line_scores(self, key, f_key, q_key, drop=(), drop_duals=(), drop_scores=()):
        """Open line ``key`` through the kept scores ``f_key`` along the kept ``q_key``
        (``ScalarLoss.restrict_scores``: no data pass); its facts, as :meth:`open_line`."""
        f, q = self._scores[f_key], self._scores[q_key]
        self.scores_drop(drop_scores)
        return self._open(key, lambda: self.loss.restrict_scores(f, q), drop, drop_duals)

    def _open(self, key, make, drop, drop_duals):
        for k in drop:  # lines the driver no longer holds
            self._lines.pop(k, None)
        self._drop_duals(drop_duals)
        line = make()
        self._lines[key] = [line, None, None, None]  # line, sorted kinks, jump sums, (lo, d0)
        return (type(line).breakpoints is not LineFunction.breakpoints,
                bool(getattr(line, "affine_between_breakpoints", False)),
                type(line).jumps is not LineFunction.jumps
                and bool(getattr(self.loss, "piecewise_linear", False)),
                _curvature(line) == "squared-hinge", _curvature(line) == "logistic",
                self.line_chainable(key))

    def _quad(self, key):
        r"""The squared hinge line's sorted kinks with the running sums of the jumps of
        :math:`\varphi_k''` there and of those jumps times the kinks (kept with the line)."""
        entry = self._lines[key]
        if len(entry) == 4:
            line = entry[0]
            etas, dB = _squared_hinge_jumps(line)
            order = np.argsort(etas, kind="stable")
            etas, dB = etas[order], dB[order]
            entry.append((etas, np.cumsum(dB), np.cumsum(dB * etas)))
        return entry[4]

    def line_select_quad(self, key, pivots, lo, hi, n_samples, origin):
        r""":meth:`line_select` for a squared hinge line, its derivatives read from running
        sums: :math:`\varphi_k'` is continuous and :math:`\varphi_k''` piecewise constant,
        jumping by :math:`\Delta B_j` at the kink :math:`\eta_j`, so

        .. math:: \varphi_k'(v) = \varphi_k'(o) + B_o (v - o)
                  + \sum_{o < \eta_j \le v} \Delta B_j (v - \eta_j),

        :math:`o` the search's ``origin``, :math:`B_o = \varphi_k''(o^+)` (both computed once
        per line and origin, one pass over the line's scores): O(log m_k) per pivot, no pass.
        The gaps are those of the kinks (:func:`_gap_samples`)."""
        entry = self._lines[key]
        etas, cB, cE = self._quad(key)
        if entry[3] is None or entry[3][0] != origin or len(entry[3]) < 3:
            line = entry[0]
            entry[3] = (origin, float(line.derivative(origin, 1)),
                        _squared_hinge_curvature(line, origin))
        _, d0, B0 = entry[3]

        def upto(v):  # (sum of dB, sum of dB * eta) over the kinks <= v
            i = int(np.searchsorted(etas, v, side="right"))
            return (float(cB[i - 1]), float(cE[i - 1])) if i > 0 else (0.0, 0.0)

        b0, e0 = upto(origin)
        ders = []
        for v in pivots:
            b, e = upto(v)
            d = d0 + B0 * (v - origin) + ((b - b0) * v - (e - e0))
            ders.append((d, d))  # continuous: both sides
        return ders, _gap_samples(etas, [lo, *pivots, hi], n_samples)

    def line_newton(self, key, eta):
        r""":math:`(\varphi_k'(\eta^+), \varphi_k''(\eta))` of a logistic line: the true
        derivative (the loss's kernel) and the curvature
        :math:`\sum_i c_i q_i^2 \sigma(t_i)(1 - \sigma(t_i))`, :math:`t_i = y_i z_i`."""
        line = self._lines[key][0]
        return (float(line.derivative(eta, 1)), _logistic_curvature(line, eta))

    def line_value(self, key, eta):
        return float(self._lines[key][0].value(eta))

    def line_derivative(self, key, eta, side):
        return float(self._lines[key][0].derivative(eta, side))

    def line_breakpoints(self, key):
        """The line's breakpoints, sorted (kept here: :meth:`line_select` reads them)."""
        entry = self._lines[key]
        if entry[1] is None:
            jumps = entry[0].jumps()
            if jumps is not None:  # piecewise linear: the kinks with the running jump sums
                etas = np.asarray(jumps[0], dtype=np.float64)
                order = np.argsort(etas, kind="stable")
                entry[1] = etas[order]
                entry[2] = np.cumsum(np.asarray(jumps[1], dtype=np.float64)[order])
            else:
                bps = entry[0].breakpoints()
                entry[1] = None if bps is None else np.sort(np.asarray(bps, dtype=np.float64))
        return entry[1]

    def line_select_jumps(self, key, pivots, lo, hi, n_samples, origin):
        r""":meth:`line_select` for a piecewise-linear line, its derivatives read from the
        running sums of the jumps: :math:`\varphi_k'(v^\pm) = \varphi_k'(o^+) + \sum` of the
        jumps at the kinks in :math:`(o, v]` (``+``) or :math:`(o, v)` (``-``), :math:`o` the
        search's ``origin``: O(log m_k) per pivot, no pass over the shard (the derivative at
        the origin is computed once per line). None for ``gaps`` when the line is not
        piecewise linear."""
        entry = self._lines[key]
        bps = self.line_breakpoints(key)
        cum = entry[2]
        if cum is None:
            return [], None
        if entry[3] is None or entry[3][0] != origin:
            entry[3] = (origin, float(entry[0].derivative(origin, 1)))
        d0 = entry[3][1]

        def before(i):
            return float(cum[i - 1]) if i > 0 else 0.0

        base = before(int(np.searchsorted(bps, origin, side="right")))
        ders = [(d0 + (before(int(np.searchsorted(bps, v, side="right"))) - base),
                 d0 + (before(int(np.searchsorted(bps, v, side="left"))) - base))
                for v in pivots]
        return ders, _gap_samples(bps, [lo, *pivots, hi], n_samples)

    def line_select(self, key, pivots, lo, hi, n_samples):
        """One round of the distributed breakpoint search (:func:`_select_minimize`).

        Returns ``(derivatives, gaps)``: ``derivatives[j] = (phi_k'(v_j+), phi_k'(v_j-))`` at
        the pivots ``v_1 < ... < v_K``, and for each of the K + 1 open gaps ``(lo, v_1), ...,
        (v_K, hi)`` the number of this shard's breakpoints inside and at most ``n_samples``
        of them, evenly spaced in rank (all of them when there are that few): O(K n_samples)
        numbers, whatever the shard's size; None for ``gaps`` if the line has no breakpoints.
        """
        entry = self._lines[key]
        line = entry[0]
        ders = [(float(line.derivative(v, 1)), float(line.derivative(v, -1))) for v in pivots]
        if len(pivots) == 1 and pivots[0] == lo:  # a search's first round: its origin's slope
            entry[3] = (lo, ders[0][0])
        bps = self.line_breakpoints(key)
        if bps is None:
            return ders, None
        return ders, _gap_samples(bps, [lo, *pivots, hi], n_samples)

    # dual points of certificates, kept here by token (ShardedDualPoint)
    def _drop_duals(self, tokens):
        for k in tokens:
            self._duals.pop(k, None)

    def _form_dual(self, points, weights, floor, n_models):
        r""":math:`t_k = \sum_i W_{i} t(w_i)` on this shard's rows, with :math:`W` the column of
        this shard's model (the only one when ``n_models == 1``) normalised with its floor
        multiplier to sum 1, clipped into the dual box."""
        loss = self.loss
        upper = loss.dual_upper
        col = 0 if n_models == 1 else self.index
        W = np.asarray(weights, dtype=np.float64)[:, col]
        total = float(W.sum()) + float(np.asarray(floor, dtype=np.float64)[col])
        if not (math.isfinite(total) and total > 0):
            raise ValueError(f"the multipliers of model {col} sum to {total!r}")
        t = np.zeros(loss.m)
        for i in np.flatnonzero(W):
            t += (W[i] / total) * loss.dual_variables(np.asarray(points[i], dtype=np.float64))
        return np.clip(t, 0.0, upper, out=t)

    def dual_form(self, token, points, weights, floor, n_models, drop=()):
        """Form and keep the dual point ``token`` of a query-point recipe; ``(a_k, b_k)``."""
        self._drop_duals(drop)
        t = self._form_dual(points, weights, floor, n_models)
        self._duals[token] = t
        a, b = self.loss.dual_plane(t)
        return a, float(b)

    def dual_check(self, token, recipe=None):
        """Verify the kept dual point ``token``: ``None`` if it is not here (a rebuilt shard)
        and no ``recipe`` to form it again is given, ``("bad", why)`` if it is not a dual
        point of this shard's loss (length, finite, in ``[0, loss.dual_upper]``), else
        ``("ok", a_k, b_k)``, its plane rebuilt from the shard's data."""
        t = self._duals.get(token)
        if t is None:
            if recipe is None:
                return None
            t = self._form_dual(*recipe)
            self._duals[token] = t
        loss = self.loss
        upper = getattr(loss, "dual_upper", None)
        if upper is None:
            return ("bad", f"belongs to no margin loss ({type(loss).__name__} has no dual)")
        t = np.asarray(t, dtype=np.float64)
        if t.shape != (loss.m,):
            return ("bad", f"has shape {t.shape}, expected ({loss.m},) (the shard's examples)")
        if not np.all(np.isfinite(t)):
            return ("bad", "has non-finite entries (NaN or inf)")
        if np.any(t < 0) or np.any(t > upper * (1 + 1e-12)):
            return ("bad", f"leaves the box [0, {upper}] (min {float(t.min())!r}, "
                           f"max {float(t.max())!r})")
        a, b = loss.dual_plane(np.clip(t, 0.0, upper))
        return ("ok", a, float(b))

    def dual_vector(self, token):
        """The kept dual point ``token`` itself (O(m_k) floats: for tests and small problems)."""
        return self._duals.get(token)

    def dual_put(self, token, t):
        """Keep ``t`` as the dual point ``token`` (evidence is untrusted: ``dual_check``
        verifies whatever is kept)."""
        self._duals[token] = np.array(t, dtype=np.float64)
        return True

    # --- the sharded saddle form (nsopt.distributed_saddle): dual blocks kept by key -------
    def _saddle(self, drop=()):
        """This shard's saddle form (None: its loss has none) and its store of dual blocks,
        made on first use; the blocks named in ``drop`` (let go by the driver) are removed."""
        state = self.__dict__.get("_saddle_state")
        if state is None or state[2] is not self.loss:
            own = getattr(self.loss, "saddle_form", None)
            state = self._saddle_state = (own() if callable(own) else None, {}, self.loss)
        for key in drop:
            state[1].pop(key, None)
        return state[0], state[1]

    def saddle_facts(self):
        """``(shape of the dual block, radius_sq)`` of this shard's saddle form, or why it has
        none (a string)."""
        form, _ = self._saddle()
        name = type(self.loss).__name__
        if form is None and int(getattr(self.loss, "n_intercepts", 0) or 0) > 0:
            return (f"the shards hold a {name} loss with an intercept (fit_intercept=True): "
                    "excessive-gap's dual set with free biases (y^T alpha = 0, or the class "
                    "balance) couples the shards, which the sharded saddle form does not do; "
                    "shard the problem without fit_intercept, or use 'bmrm' or "
                    "'proximal-bundle'")
        if form is None:
            return f"the shards hold a {name} loss, which has no saddle form"
        return tuple(int(n) for n in np.shape(form.center)), float(form.radius_sq)

    def _saddle_eval(self, drop, defs, keep):
        r"""Evaluate the driver's node definitions ``(key, op, *args)`` in order (children
        first), keeping the results whose keys are in ``keep`` (the handles the driver still
        holds; the others are temporaries of this call); the form and a lookup by key, or
        None if a block a node names is not here (a rebuilt shard). The operations are
        numpy's, in the driver's order, so a block is bitwise the one-machine vector's rows."""
        form, store = self._saddle(drop)
        keep, temp = set(keep), {}

        def get(key):
            if key == "center":
                return form.center
            if key == "offset":
                return form.offset
            x = temp.get(key)
            return store[key] if x is None else x

        try:
            for key, op, *args in defs:
                if key in store:
                    continue
                if op == "add":
                    x = get(args[0]) + get(args[1])
                elif op == "sub":
                    x = get(args[0]) - get(args[1])
                elif op == "mul":
                    x = args[0] * get(args[1])
                elif op == "div":
                    x = get(args[0]) / args[1]
                elif op == "proj":
                    x = form.project(get(args[0]))
                elif op == "matvec":
                    x = form.matvec(args[0])
                else:
                    raise ValueError(f"unknown operation {op!r} of dual block {key!r}")
                (store if key in keep else temp)[key] = x
            return form, get
        except KeyError:
            return None

    def saddle_keep(self, drop, defs, keep):
        """Evaluate ``defs`` (:meth:`_saddle_eval`); False if a block is gone."""
        return self._saddle_eval(drop, defs, keep) is not None

    def saddle_rmatvec(self, drop, defs, keep, key):
        r""":math:`Z_k^T\alpha_k` of the block ``key`` (evaluated first); None if gone."""
        out = self._saddle_eval(drop, defs, keep)
        return None if out is None else out[0].rmatvec(out[1](key))

    def saddle_vdot(self, drop, defs, keep, a, b):
        r""":math:`\langle\alpha_k, \beta_k\rangle` of the blocks ``a`` and ``b`` (serial sum,
        as the one-machine solver's); None if gone."""
        from .losses._kernels import dot

        out = self._saddle_eval(drop, defs, keep)
        if out is None:
            return None
        return float(dot(np.ravel(out[1](a)), np.ravel(out[1](b)), 0.0))

    # the ordered reduction of the saddle form's sums (nsopt.distributed_saddle)
    def saddle_vector_chainable(self):
        r"""Whether this shard's :math:`Z_k^T\alpha_k` can be continued: its form gives
        ``weights`` (:class:`~nsopt.saddle.SaddleForm`) and its data is sparse
        (:func:`_continued_rdot`)."""
        form, _ = self._saddle()
        data = getattr(self.loss, "data", None)
        return (form is not None and form.weights is not None and type(data) is DataMatrix
                and bool(data.sparse))

    def saddle_rmatvec_start(self, drop, defs, keep, key):
        r"""First round of an ordered :math:`Z^T\alpha` (every shard in parallel): evaluate
        ``defs``, keep this block's weights :math:`g_k` for :meth:`saddle_chain`; shard 0
        (the head) answers :math:`X_0^T g_0` from 0, the others 0. None if a block is gone."""
        out = self._saddle_eval(drop, defs, keep)
        if out is None:
            return None
        g = np.ascontiguousarray(np.ravel(out[0].weights(out[1](key))), dtype=np.float64)
        if self.index == 0:  # the head: nothing to keep (the chain starts after it)
            return _continued_rdot(self.loss.data, g, None)
        self._saddle_chain = ("rmatvec", g)
        return 0

    def saddle_vdot_start(self, drop, defs, keep, a, b):
        r"""First round of an ordered :math:`\langle\alpha, \beta\rangle`: evaluate ``defs``,
        keep the two blocks; shard 0 answers its serial sum from 0, the others 0. None if a
        block is gone."""
        out = self._saddle_eval(drop, defs, keep)
        if out is None:
            return None
        pair = (np.ascontiguousarray(np.ravel(out[1](a)), dtype=np.float64),
                np.ascontiguousarray(np.ravel(out[1](b)), dtype=np.float64))
        if self.index == 0:
            return float(_serial_dot(*pair, 0.0))
        self._saddle_chain = ("vdot", pair)
        return 0

    def saddle_chain(self, prefix):
        r"""The kept reduction continued from ``prefix`` (the shards before this one): the
        running sums of the one-machine pass (:func:`_continued_rdot`, or the serial dot
        :func:`nsopt.losses._kernels.dot` from ``prefix``); None if nothing is kept (a
        rebuilt shard: its blocks are gone too)."""
        kept = self.__dict__.pop("_saddle_chain", None)
        if kept is None:
            return None
        if kept[0] == "rmatvec":
            return _continued_rdot(self.loss.data, kept[1], prefix)
        return float(_serial_dot(*kept[1], float(prefix)))

    def saddle_normal(self, w):
        r""":math:`Z_k^T Z_k w` (one product of the shard's part of :math:`Z^TZ`)."""
        form, _ = self._saddle()
        return form.rmatvec(form.matvec(np.asarray(w, dtype=np.float64)))

    def saddle_gram(self):
        r""":math:`Z_k^T Z_k` (d x d, d products: for small d)."""
        form, _ = self._saddle()
        d = int(self.loss.dim)
        return np.column_stack([form.rmatvec(form.matvec(e)) for e in np.eye(d)])

    def saddle_check(self, key):
        r"""Verify the kept block ``key`` as a point of this shard's :math:`Q_k` (shape,
        finite, its projection equal to it within 1e-9 as
        :class:`~nsopt.certificate.SaddlePoint`): ``("ok", -Z_k^T\alpha_k, \langle b_k,
        \alpha_k\rangle)`` rebuilt from the data, ``("bad", why)``, or None if gone."""
        form, store = self._saddle()
        if form is None:
            return ("bad", f"belongs to no saddle form ({type(self.loss).__name__} has none)")
        alpha = store.get(key)
        if alpha is None:
            return None
        alpha = np.asarray(alpha, dtype=np.float64)
        if alpha.shape != np.shape(form.center):
            return ("bad", f"has shape {alpha.shape}, expected {np.shape(form.center)}")
        if not np.all(np.isfinite(alpha)):
            return ("bad", "has non-finite entries (NaN or inf)")
        proj = form.project(alpha)
        scale = max(1.0, float(np.max(np.abs(alpha), initial=0.0)))
        if not float(np.max(np.abs(proj - alpha), initial=0.0)) <= 1e-9 * scale:
            return ("bad", "is outside the shard's dual set Q_k")
        return ("ok", -form.rmatvec(proj), float(np.sum(form.offset * proj)))

    def saddle_count(self):
        """How many dual blocks this shard keeps (a diagnostic: the driver's drops work)."""
        return len(self._saddle()[1])

    def saddle_get(self, key):
        """The kept block ``key`` itself (O(m_k) floats: for tests and small problems)."""
        return self._saddle()[1].get(key)

    def saddle_put(self, key, alpha):
        """Keep ``alpha`` as the block ``key`` (evidence is untrusted: ``saddle_check``
        verifies whatever is kept)."""
        self._saddle()[1][key] = np.array(alpha, dtype=np.float64)
        return True



# ----------------------------------------------------------------------------------------
# the driver's side
# ----------------------------------------------------------------------------------------
class _Shard:
    """One shard as the driver knows it: its actor on a worker, how to build it again, and
    O(1) facts (rows, digest)."""

    __slots__ = ("index", "actor", "rebuild", "m", "digest", "source")

    def __init__(self, index, actor, rebuild, m, digest, source):
        self.index, self.actor, self.rebuild = index, actor, rebuild
        self.m, self.digest, self.source = m, digest, source


def _results(pending):
    """The results of actor calls in shard order, after every call has ended: the first
    error (in shard order) is raised once no call is still running."""
    out, error = [], None
    for f in pending:
        try:
            out.append(f.result())
        except Exception as exc:
            out.append(None)
            error = error or exc
    if error is not None:
        raise error
    return out


async def _call_every(actors, method, args):
    """Runs on the client's event loop: ``actor.method(*args)`` of every actor, issued at
    once, each awaited; the answers (or the exceptions) in the actors' order."""
    import asyncio

    calls = [getattr(a, method)(*args) for a in actors]
    return await asyncio.gather(*calls, return_exceptions=True)


def _call_all(client, actors, method, args):
    """``[actor.method(*args) for actor]`` in one hand-over to the client's event loop and one
    back (:func:`_call_every`), instead of one per actor call and one per answer (an
    ``ActorFuture.result()`` each); the first error in the actors' order is raised once every
    call has ended, as :func:`_results` does. Without a client (shards in this process, as
    tests build them), each call's future is asked in turn."""
    if client is None:
        return _results([getattr(a, method)(*args) for a in actors])
    out = client.sync(_call_every, actors, method, args)
    for x in out:
        if isinstance(x, BaseException):
            raise x
    return out


async def _reachable(address: str, timeout: float) -> bool:
    """Runs on the client's event loop: whether ``address`` accepts a Dask connection within
    ``timeout`` seconds (a refused connection is retried until then)."""
    from distributed.comm import connect

    try:
        comm = await connect(address, timeout=timeout)
    except (OSError, TimeoutError):
        return False
    await comm.close()
    return True


def _payload(x) -> int:
    """Bytes of numbers in ``x`` (arrays' buffers, 8 per scalar; objects other than numbers,
    arrays and their containers count 0): what :attr:`ShardedLoss.traffic` adds up."""
    if isinstance(x, np.ndarray):
        return int(x.nbytes)
    if isinstance(x, (numbers.Number, np.generic)):
        return 8
    if isinstance(x, (tuple, list)):
        return sum(_payload(v) for v in x)
    if isinstance(x, dict):
        return sum(_payload(v) for v in x.values())
    if isinstance(x, str):
        return len(x)
    return 0


def _ordered_sum(values) -> float:
    total = 0.0
    for v in values:  # shard order, fixed: deterministic rounding
        total += v
    return total


class ShardedLoss(Oracle):
    r"""A loss :math:`R(w) = \sum_k R_k(w)` whose parts live on Dask workers.

    Built by :func:`shard` or :func:`load_svmlight`, not directly. Each oracle call sends
    :math:`w` to the shards and sums their answers in shard order (deterministic).

    Attributes
    ----------
    client : distributed.Client
    n_shards : int
    m : int
        Number of examples over all shards.
    bounds : ndarray of int, shape (n_shards + 1,)
        Shard ``k`` holds the examples ``bounds[k]:bounds[k+1]`` (in file order for
        :func:`load_svmlight`).
    digest : str
        A digest of every shard's data and parameters, computed on the workers (it enters the
        problem's certificate fingerprint).
    kind : str
        The class name of the per-shard loss.
    n_rebuilds : int
        Shards rebuilt after their worker was lost.
    n_calls : int
        Round trips to the shards so far (one per oracle call or line evaluation).
    traffic : dict
        Round trips and payload bytes moved so far (``calls``, ``bytes_out``, ``bytes_in``).
    line_search : {"select", "gather"}
        How exact line searches find their breakpoint (:func:`_select_minimize`).
    line_pivots, jump_pivots, line_samples : int
        Pivots per round of that search (with true derivatives; with derivatives read from
        jump sums, piecewise-linear losses and squared hinge), and breakpoints each shard
        samples per gap.
    curvature_search : bool
        Squared hinge: derivatives from the curvature's jump sums; logistic: Newton's method
        (:func:`_newton_minimize`). False: true derivatives only (the searches before).
    reduction : {"parallel", "ordered"}
        How loss values are summed over the shards (``"ordered"``: bitwise the one-machine
        sum, P - 1 more round trips per value).
    """

    lower_bound = 0.0
    #: how many times one call may rebuild lost shards before giving up (:class:`ShardsLost`)
    max_rebuilds = 3
    #: seconds a live shard has to answer a ping after a failed call
    ping_timeout = 30.0
    #: seconds a shard's worker, still listed by the scheduler, has to accept a connection
    #: after a failed call (direct clients; Dask's client retries a refused connection until
    #: its ``distributed.comm.timeouts.connect``, 30 s by default: the wait for every killed
    #: worker before)
    ping_connect_timeout = 3.0
    #: pivots per round of the distributed breakpoint search (:func:`_select_minimize`)
    line_pivots = 3
    #: breakpoints each shard samples per gap in a round of that search
    line_samples = 8
    #: pivots per round when the shards read derivatives from jump sums (piecewise linear)
    jump_pivots = 7

    def __init__(self, client, shards: Sequence[_Shard], dim: int, kind: type, *,
                 owns_client: bool = False):
        self.client = client
        self._shards = list(shards)
        self.n_shards = len(self._shards)
        self.dim = int(dim)
        self.shape = (self.dim,)
        self.m = int(sum(s.m for s in self._shards))
        self.bounds = np.concatenate([[0], np.cumsum([s.m for s in self._shards])]).astype(np.int64)
        self.kind = kind.__name__
        self.lower_bound = float(kind.lower_bound)
        self.differentiable = bool(kind.differentiable)
        self.binary = bool(getattr(kind, "binary", False))
        self.digest = hashlib.blake2b("".join(s.digest for s in self._shards).encode(),
                                      digest_size=16).hexdigest()
        # counters are private (properties): the certificate's fingerprint reads the public
        # attributes, which must not change while the problem is used
        self._n_rebuilds = 0
        self._n_calls = 0
        self._owns_client = owns_client
        self._next_line = 0
        self._open_lines = weakref.WeakValueDictionary()
        self._opened = []
        self._line_search = "select"
        self._bytes_out = self._bytes_in = 0
        # the per-example dual of the shards' margin loss (None: no dual, query points only);
        # private, like the counters: the fingerprint reads the public attributes
        self._dual_upper = getattr(kind, "dual_upper", None)
        self._dead_duals = []  # tokens of dual points the driver let go (dropped lazily)
        self._reduction = "parallel"
        self._curvature_search = True
        self._chainable = None  # every shard's sums can be continued (asked on first use)
        self._chain_w = None
        # kept scores (scores(): handles the driver holds, keys the shards keep arrays under)
        self._next_scores = 0
        self._live_scores = weakref.WeakValueDictionary()
        self._dead_scores = []  # keys of kept scores the driver let go (dropped lazily)
        self._classes = None  # load_svmlight(binary_labels=True): the labels mapped to -1/+1

    @property
    def n_rebuilds(self) -> int:
        return self._n_rebuilds

    @property
    def line_search(self) -> str:
        """How an exact line search finds its breakpoint: ``"select"`` (default: on the
        shards, O(1) numbers per shard per round, :func:`_select_minimize`) or ``"gather"``
        (every breakpoint to the driver, then the one-machine bisection: O(m) floats per line;
        kept for comparison)."""
        return self._line_search

    @line_search.setter
    def line_search(self, value: str) -> None:
        if value not in ("select", "gather"):
            raise ValueError(f"line_search must be 'select' or 'gather', got {value!r}")
        self._line_search = value

    @property
    def traffic(self) -> dict:
        """What the driver moved so far: ``calls`` (round trips), ``bytes_out`` and
        ``bytes_in`` (payload: the float64 arrays and numbers of the calls' arguments, once
        per shard, and of the answers; Dask's own framing not included)."""
        return {"calls": self._n_calls, "bytes_out": self._bytes_out,
                "bytes_in": self._bytes_in}

    @property
    def n_calls(self) -> int:
        return self._n_calls

    def __repr__(self):
        return (f"ShardedLoss({self.kind}, m={self.m}, d={self.dim}, "
                f"n_shards={self.n_shards})")

    def close(self) -> None:
        """Release the shards (and the cluster, when :func:`shard` started it)."""
        self._shards = []
        if self._owns_client:
            cluster = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster is not None:
                cluster.close()

    # --- the one primitive: call a method of every shard, gather in shard order ----------
    def _map(self, method: str, *args, only: int | None = None):
        """``[shard_k.method(*args) for k]`` run on the workers in parallel, returned in
        shard order (``only``: shard ``only`` alone, a one-element list); lost shards are
        rebuilt and the call repeated (:class:`ShardsLost` when that is impossible)."""
        error = None
        for _ in range(self.max_rebuilds + 1):
            shards = self._shards if only is None else [self._shards[only]]
            self._n_calls += 1
            self._bytes_out += len(shards) * _payload(args)
            try:
                out = _call_all(self.client, [s.actor for s in shards], method, args)
                self._bytes_in += _payload(out)
                return out
            except ShardError:
                raise
            except Exception as exc:  # a lost worker, or an error of the loss itself
                error = exc
            if not self._rebuild_lost():
                raise error  # every shard is alive: the loss itself failed
        raise ShardsLost(f"shards were lost {self.max_rebuilds + 1} times in one call; "
                         f"last: {type(error).__name__}: {error}") from error

    def _listed_workers(self) -> set | None:
        """The addresses of the workers the scheduler lists now (one round trip to the
        scheduler), or None when it cannot be asked."""
        if self.client is None:
            return None
        try:
            return set(self.client.scheduler_info()["workers"])
        except Exception:
            return None

    def _alive(self, s: _Shard, listed: set | None = None) -> bool:
        """Whether shard ``s`` answers. A shard whose worker the scheduler no longer lists
        (``listed``: :meth:`_listed_workers`) is lost without a ping: a call to a killed
        worker's address is retried until the client's connect timeout (Dask's
        ``distributed.comm.timeouts.connect``, 30 s by default, fixed when the client was
        made). With a client that calls the workers directly, a worker still listed must
        accept a connection within :attr:`ping_connect_timeout` seconds (:func:`_reachable`);
        then a ping, run on the worker's event loop (not queued behind the shard's calls),
        must answer within :attr:`ping_timeout`. A live shard taken for lost is rebuilt (the
        same data: its digest is compared) or, without a source, ends the run
        ``interrupted``: never a wrong answer."""
        address = getattr(s.actor, "_address", None)
        if listed is not None and address is not None and address not in listed:
            return False
        if self.client is None:  # shards in this process (tests): a plain call
            try:
                return bool(s.actor.ping().result(timeout=self.ping_timeout))
            except Exception:
                return False
        try:
            if (address is not None and getattr(self.client, "direct_to_workers", False)
                    and not self.client.sync(_reachable, address, self.ping_connect_timeout)):
                return False
            return bool(s.actor.ping(separate_thread=False).result(timeout=self.ping_timeout))
        except Exception:
            return False

    def _rebuild_lost(self) -> bool:
        """Build again every shard that does not answer; False if all answer."""
        listed = self._listed_workers()
        gone = [s for s in self._shards if not self._alive(s, listed)]
        if not gone:
            return False
        for s in gone:
            if s.rebuild is None:
                raise ShardsLost(f"shard {s.index} ({s.source}) was lost with its worker and "
                                 "has no source to rebuild it from")
            try:
                s.actor, info = s.rebuild()
            except ShardError:
                raise
            except Exception as exc:
                raise ShardsLost(f"shard {s.index} ({s.source}) was lost and rebuilding it "
                                 f"failed: {type(exc).__name__}: {exc}") from exc
            if info["digest"] != s.digest:  # a source that changed is not the same problem
                raise ShardError(f"shard {s.index} ({s.source}) rebuilt from its source has "
                                 "different data: the source changed during the run",
                                 s.index, s.source)
            for key, kept in list(self._live_scores.items()):  # the kept scores, from w
                s.actor.scores_keep(key, kept.w).result()
            for key, line in list(self._open_lines.items()):  # reopen the live lines
                s.actor.open_line(key, line.w, line.p).result()
            self._n_rebuilds += 1
        return True

    @property
    def curvature_search(self) -> bool:
        r"""The exact line search of squared hinge shards reads derivatives from the jump sums
        of the curvature, that of logistic shards runs Newton's method on
        :math:`(\varphi', \varphi'')` summed over the shards (default True); False: the
        searches with true derivatives only (for comparison). A property, like
        :attr:`line_search`: a setting, not part of the problem's fingerprint."""
        return self._curvature_search

    @curvature_search.setter
    def curvature_search(self, value: bool) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"curvature_search must be True or False, got {value!r}")
        self._curvature_search = bool(value)

    # --- the ordered reduction ------------------------------------------------------------
    @property
    def reduction(self) -> str:
        r"""How the shards' sums of loss values are added: ``"parallel"`` (default: every
        shard sums its examples from 0 in the same round trip, the driver adds the P partial
        sums in shard order) or ``"ordered"`` (the one-machine order: shard k continues the
        running sum of shards 0..k-1, so the value is **bitwise** the one-machine kernel's
        :math:`\sum_i c_i l(z_i, y_i)`, at the price of P - 1 more round trips of one float
        per oracle call and line value, one shard after the other). On sparse data the
        subgradients of ``value_and_subgradient`` and ``sup_subgradient`` are continued the
        same way (:meth:`_ordered_subgradient`: bitwise, a d-vector along the chain); so are
        line derivatives (P round trips each; the breakpoint selection's jump sums stay
        parallel, they only bracket), and excessive-gap's :math:`Z^T\alpha` and inner
        products (:mod:`nsopt.distributed_saddle`).

        Why it matters: the one-machine kernel's running sum of m terms is rounded once per
        example; at :math:`w = 0` every hinge term is :math:`c = 1/m`, and on a9a the sum of
        32561 of them misses 1 by -5.8e-13 on one machine, +2.7e-13 as two shards' sums. That
        first plane's offset enters the master problem, and ls-bmrm's path amplifies it to
        1e-10 in 30 iterations; with the ordered values the drift is that of the
        subgradients' sums alone (docs/distributed.md, "Identical iterates")."""
        return self._reduction

    @reduction.setter
    def reduction(self, value: str) -> None:
        if value not in ("parallel", "ordered"):
            raise ValueError(f"reduction must be 'parallel' or 'ordered', got {value!r}")
        if value == "ordered" and self._chainable is None:
            self._chainable = all(self._map("chainable"))
        self._reduction = value

    def _ordered(self) -> bool:
        return self._reduction == "ordered" and bool(self._chainable) and self.n_shards > 1

    def _chain(self, first: float, method: str, *args) -> float:
        """Continue ``first`` (shard 0's sum from 0) through shards 1..P-1 in order."""
        r = float(first)
        for k in range(1, self.n_shards):
            out = self._map(method, *args, r, only=k)[0]
            if out is None and method == "chain":  # a rebuilt shard: scores again from w
                out = self._map(method, r, self._chain_w, only=k)[0]
            r = float(out)
        return r

    def _ordered_vectors(self) -> bool:
        """The ordered reduction covers the subgradients too (every shard's data sparse)."""
        if not self._ordered():
            return False
        if getattr(self, "_vector_chainable", None) is None:
            self._vector_chainable = all(self._map("vector_chainable"))
        return self._vector_chainable

    def _ordered_subgradient(self, w, p=None, key=None):
        """``(R(w), X^T g)`` (``p`` None) or ``(None, X^T g)`` at the kinks' side of ``p``,
        both bitwise the one-machine ones: one parallel round (every shard keeps its
        derivatives, shard 0 answers its part), then shards 1..P-1 one after the other,
        each continuing the loss sum and the d-vector of the shards before it. Cost: P
        round trips, 2 (P - 1) d-vectors moved, the ``X^T g`` passes in sequence. ``key``:
        from the kept scores ``key`` (:meth:`scores`) instead of :math:`X_k w`."""
        parts = self._map("ordered_start", w, p, key)
        r, a = parts[0]
        k0 = 1
        if a is None:  # shard 0 is not the head (never seen): chain it too
            r, a, k0 = 0.0, None, 0
        r = None if p is not None else r
        for k in range(k0, self.n_shards):
            out = self._map("chain_subgradient", r, a, only=k)[0]
            if out is None:  # a rebuilt shard: its derivatives again from w
                out = self._map("chain_subgradient", r, a, w, p, only=k)[0]
            r, a = out
        return r, a

    # --- oracle ----------------------------------------------------------------------------
    def _value(self, w):
        if self._ordered():
            parts = self._map("value_keep", w)
            self._chain_w = w
            return self._chain(parts[0], "chain")
        return _ordered_sum(self._map("value", w))

    def _value_and_subgradient(self, w, key=None):
        if self._ordered_vectors():
            return self._ordered_subgradient(w, None, key)
        ordered = self._ordered()
        parts = (self._map("value_and_subgradient_keep", w, key) if ordered
                 else self._map("value_and_subgradient", w))
        r, a = 0.0, np.zeros(self.dim)
        for rk, ak in parts:  # shard order
            r += rk
            a += ak
        if ordered:
            self._chain_w = w
            r = self._chain(parts[0][0], "chain")
        return r, a

    def _sup_subgradient(self, w, p):
        if self._ordered_vectors():  # the slope as one machine's: a^T p (ScalarLoss)
            a = self._ordered_subgradient(w, p)[1]
            return float(a @ p), a
        parts = self._map("sup_subgradient", w, p)
        s, g = 0.0, np.zeros(self.dim)
        for sk, gk in parts:
            s += sk
            g += gk
        return s, g

    def _restrict(self, w, p):
        self._next_line += 1
        return ShardedLine(self, w, p, self._next_line)

    # --- kept scores: ls-bmrm's reuse_scores on the shards ------------------------------
    @property
    def scores_supported(self) -> bool:
        r"""Whether :meth:`scores` keeps the shards' scores (with ``reduction = "ordered"``,
        whose point is the one-machine numbers: a solver that reuses scores, ls-bmrm's
        default, then forms its lines' :math:`q = f_t - f_b`, the next scores and the query
        point's plane from kept scores as one machine does). Otherwise False: a solver
        recomputes from the data (the lines' :math:`X_k p` on the workers)."""
        return self._ordered()

    @property
    def certifies_by_dual_point(self) -> bool:
        """A margin loss: query-point evidence becomes a :class:`ShardedDualPoint`
        (:meth:`adopt_evidence`), rebuilt from the dual point alone, so a plane may be taken
        from kept scores (ls-bmrm's ``_plane_scores``, as for a one-machine dual point)."""
        return self._dual_upper is not None and self.lower_bound == 0.0

    def scores(self, w: np.ndarray) -> "_KeptScores":
        r""":math:`X_k w` kept on every shard (one round trip, ``w`` out, nothing back); the
        driver holds a :class:`_KeptScores` handle, never the m-vector."""
        w = np.array(w, dtype=np.float64)
        key = self._scores_key()
        self._map("scores_keep", key, w, self._take_dead_scores())
        return _KeptScores(self, key, w)

    def restrict_scores(self, f: "_KeptScores", q: "_KeptScores") -> "ShardedLine":
        """The line through the point of the kept scores ``f`` along that of ``q``
        (``ScalarLoss.restrict_scores`` on every shard: no data pass)."""
        for h in (f, q):
            if not (isinstance(h, _KeptScores) and h.loss is self):
                raise TypeError(f"restrict_scores takes scores kept by this loss (scores()), "
                                f"got {type(h).__name__}")
        self._next_line += 1
        return ShardedLine(self, f.w, q.w, self._next_line, scores=(f.key, q.key))

    def _value_subgradient_dual(self, w, scores=None):
        """``(R(w), a, None)``: the oracle (no dual point reaches the driver); ``scores``
        (kept by :meth:`scores`, ordered reduction): from those instead of :math:`X_k w`,
        as ``ScalarLoss._value_subgradient_dual``."""
        key = scores.key if isinstance(scores, _KeptScores) and scores.loss is self else None
        r, a = self._value_and_subgradient(w, key if self._ordered() else None)
        return r, a, None

    def _scores_key(self) -> int:
        self._next_scores += 1
        return self._next_scores

    def _take_dead_scores(self) -> list:
        dead = self._dead_scores[:]  # the list itself is the finalizers' (appended to)
        del self._dead_scores[:len(dead)]
        return dead

    # --- certificates: dual points kept on the shards ----------------------------------
    def _take_dead_duals(self) -> list:
        dead = self._dead_duals[:]  # the list itself is the finalizers' (appended to)
        del self._dead_duals[:len(dead)]
        return dead

    def adopt_evidence(self, evidence, problem):
        r"""The evidence a certificate of ``problem`` (whose loss this is) keeps: for a margin
        loss (hinge, squared hinge, logistic), query-point evidence becomes a
        :class:`ShardedDualPoint` whose per-shard dual vectors stay on the shards; any other
        evidence, or when forming it fails (a shard lost for good), is kept as it is.

        Called once per run by :meth:`nsopt.Certificate.from_evidence`. Cost: per query point
        with a positive multiplier, one pass :math:`X_k w` on every shard (in parallel); the
        driver receives one plane ``(a_k, b_k)`` per shard."""
        from .certificate import QueryPoints

        if (self._dual_upper is None or not isinstance(evidence, QueryPoints)
                or getattr(problem, "loss", None) is not self or self.lower_bound != 0.0):
            return evidence
        W = np.asarray(evidence.weights, dtype=np.float64)
        floor = np.asarray(evidence.floor, dtype=np.float64)
        if W.ndim != 2 or W.shape[1] not in (1, self.n_shards) or floor.shape != (W.shape[1],):
            return evidence
        if not (np.all(np.isfinite(W)) and np.all(W >= 0) and np.all(np.isfinite(floor))):
            return evidence
        token = os.urandom(12).hex()
        keep = np.flatnonzero(W.any(axis=1))  # only the points that weigh: shipped once
        points = [np.asarray(evidence.points[i], dtype=np.float64) for i in keep]
        recipe = (points, W[keep], floor, W.shape[1])
        try:
            pieces = self._map("dual_form", token, *recipe, self._take_dead_duals())
        except (Exception, ShardsLost):  # a lost shard: the query points stay the evidence
            return evidence
        a, b = np.zeros(self.dim), 0.0
        for a_k, b_k in pieces:  # shard order
            a += a_k
            b += b_k
        out = ShardedDualPoint(token=token, digests=tuple(s.digest for s in self._shards),
                               offsets=tuple(float(b_k) for _, b_k in pieces), recipe=recipe,
                               plane=(a, b))
        weakref.finalize(out, self._dead_duals.append, token)  # dropped on the next call
        return out

    @property
    def classes(self):
        """``(negative, positive)``: the labels ``load_svmlight(..., binary_labels=True)``
        mapped to -1/+1, else None."""
        return self._classes

    def metric_sums(self, w: np.ndarray, kind: str) -> tuple:
        """The shards' training-metric sums at ``w`` (``_ShardActor.metric_sums``), added in
        shard order: ``(rows, correct)`` for ``kind="binary"``, ``(rows, squared errors,
        absolute errors)`` for ``"regression"``. One round trip, O(1) numbers per shard."""
        if kind not in ("binary", "regression"):
            raise ValueError(f"kind must be 'binary' or 'regression', got {kind!r}")
        parts = self._map("metric_sums", np.asarray(w, dtype=np.float64), kind)
        return tuple(_ordered_sum(column) if isinstance(column[0], float) else sum(column)
                     for column in zip(*parts))

    def group_value_and_subgradients(self, w: np.ndarray, n_groups: int):
        """The shards' partial risks ``(values (P,), subgradients (P, d))`` for
        ``n_groups == n_shards`` (one cutting-plane model per shard, ``n_models=P``)."""
        if n_groups != self.n_shards:
            raise ValueError(f"a ShardedLoss splits into its {self.n_shards} shards only; "
                             f"got n_groups={n_groups} (use n_models={self.n_shards})")
        parts = self._map("value_and_subgradient", w)
        values = np.array([r for r, _ in parts])
        subgradients = np.stack([a for _, a in parts])
        return values, subgradients


class _KeptScores:
    r"""Scores :math:`f_k = X_k v` kept on every shard under ``key`` (:meth:`ShardedLoss.scores`):
    what a solver that reuses scores (ls-bmrm) holds in place of the m-vector. It combines
    them where they live, by the one-machine operations element by element: ``x - y`` and
    :meth:`lincomb` (one round trip, nothing back), :meth:`max_abs` (one float per shard),
    ``size``. The driver keeps ``w``, the point whose scores these are up to rounding (the
    same combinations of the points, O(d)): a rebuilt shard recomputes :math:`X_k w` from it
    (:meth:`ShardedLoss._rebuild_lost`). The shards drop the arrays of handles let go."""

    def __init__(self, loss: ShardedLoss, key: int, w: np.ndarray):
        self.loss, self.key, self.w, self.size = loss, key, w, loss.m
        loss._live_scores[key] = self
        weakref.finalize(self, loss._dead_scores.append, key)

    def lincomb(self, a: float, b: float, y: "_KeptScores", out: "_KeptScores | None" = None):
        r""":math:`a\,\mathrm{self} + b y` (:func:`nsopt._linalg.lincomb` on every shard), kept
        under ``out``'s key (``out`` returned, its point updated) or a new one."""
        loss = self.loss
        if not (isinstance(y, _KeptScores) and y.loss is loss):
            raise TypeError(f"kept scores combine with scores of the same loss, got "
                            f"{type(y).__name__}")
        w = lincomb(float(a), self.w, float(b), y.w)
        key = out.key if out is not None else loss._scores_key()
        loss._map("scores_combine", key, float(a), self.key, float(b), y.key,
                  loss._take_dead_scores())
        if out is None:
            return _KeptScores(loss, key, w)
        out.w = w
        return out

    def __sub__(self, other):
        if not isinstance(other, _KeptScores):
            return NotImplemented
        return self.lincomb(1.0, -1.0, other)  # x + (-1) y: x - y bitwise

    def max_abs(self) -> float:
        r""":math:`\max_i |f_i|` over every shard (NaN if any is NaN)."""
        return float(np.max(np.array(self.loss._map("scores_max_abs", self.key))))


class ShardedLine(LineFunction):
    r""":math:`\varphi(\eta) = \sum_k \varphi_k(\eta)`, each :math:`\varphi_k` kept on the worker
    of shard ``k`` with its :math:`X_k w` and :math:`X_k p`: a value or a one-sided derivative
    moves one float per shard.

    :meth:`minimize` (and that of the line of the whole risk, this line plus the
    regularizer's) searches the breakpoints **where they live**: each shard keeps its sorted
    kinks and a round of the search moves O(1) numbers per shard (:func:`_select_minimize`),
    so an exact line search moves O(shards x rounds) numbers, not O(m). ``breakpoints()``
    still gathers every kink to the driver (O(m) floats), for callers that ask for them."""

    cheap_derivative = True

    def __init__(self, loss: ShardedLoss, w: np.ndarray, p: np.ndarray, key: int,
                 scores=None):
        self.loss, self.key = loss, key
        # the driver keeps w and p only to reopen the line on a rebuilt shard
        self.w, self.p = np.array(w, dtype=np.float64), np.array(p, dtype=np.float64)
        self._bps = None
        self._last_value = None  # ((eta, ordered), value) of the last value asked
        # lines the driver dropped are closed on the workers with the next opening (no
        # finalizer: one could run on the client's event-loop thread and block it)
        live = set(loss._open_lines.keys())
        drop = [k for k in loss._opened if k not in live]
        if scores is None:
            facts = loss._map("open_line", key, self.w, self.p, drop, loss._take_dead_duals())
        else:  # through kept scores (ShardedLoss.restrict_scores): a rebuilt shard reopens
            # it from w and p (_rebuild_lost)
            facts = loss._map("open_line_scores", key, *scores, drop, loss._take_dead_duals(),
                              loss._take_dead_scores())
        loss._opened = [k for k in loss._opened if k in live] + [key]
        loss._open_lines[key] = self
        #: the shards' lines know their breakpoints (hinge-type and smooth scalar losses)
        self.has_breakpoints = all(f[0] for f in facts)
        self.affine_between_breakpoints = all(f[1] for f in facts)
        #: piecewise linear (hinge-type): the search reads derivatives from jump sums
        self.piecewise_linear = all(f[2] for f in facts)
        #: squared hinge: derivatives from running sums of the curvature's jumps
        self.quadratic_jumps = all(f[3] for f in facts)
        #: logistic: Newton's method on (phi', phi'') summed over the shards
        self.newton = all(f[4] for f in facts)
        #: the shards' line values continue a running sum (reduction "ordered")
        self._chainable = all(f[5] for f in facts)

    def value(self, eta):
        r""":math:`\varphi(\eta)`; the last value is remembered (a caller asking twice at the
        same step, as ls-bmrm after ``exact_line_search`` does, pays one round trip)."""
        loss, eta = self.loss, float(eta)
        ordered = loss._ordered() and self._chainable
        key = (eta, ordered)
        if self._last_value is not None and self._last_value[0] == key:
            return self._last_value[1]
        if ordered:
            first = loss._map("line_value", self.key, eta, only=0)[0]
            out = loss._chain(first, "line_value_from", self.key, eta)
        else:
            out = _ordered_sum(loss._map("line_value", self.key, eta))
        self._last_value = (key, out)
        return out

    def derivative(self, eta, side=1):
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side}")
        loss = self.loss
        if loss._ordered() and self._chainable:  # the one-machine kernel's running sum
            first = loss._map("line_derivative", self.key, float(eta), int(side), only=0)[0]
            # both sides travel along the chain; only the asked one's prefix is true
            ders = _chain_line_derivatives(loss, self.key, [float(eta)], [(first, first)])
            return ders[0][0 if side == 1 else 1]
        return _ordered_sum(loss._map("line_derivative", self.key, float(eta), int(side)))

    def jumps(self):
        r"""With ``line_search="gather"`` and ``reduction="ordered"`` on piecewise-linear
        shards: every shard's kinks and jumps of :math:`\varphi'` (unsorted, its examples'
        order) concatenated in shard order, the one-machine line's arrays themselves
        (O(m) floats to the driver, as the gathered breakpoints), so that ``minimize`` runs
        the one-machine sweep (:func:`~nsopt.oracle._minimize_by_jumps`) on the same numbers:
        with the ordered derivatives, bitwise the one-machine step. Else None (the
        selection on the shards, or the bisection over the gathered breakpoints)."""
        loss = self.loss
        if not (loss.line_search == "gather" and loss._ordered() and self._chainable
                and self.piecewise_linear):
            return None
        parts = loss._map("line_jumps", self.key)
        if any(p is None for p in parts):
            return None
        return (np.concatenate([np.asarray(p[0], dtype=np.float64) for p in parts]),
                np.concatenate([np.asarray(p[1], dtype=np.float64) for p in parts]))

    def breakpoints(self):
        if self._bps is None:
            parts = self.loss._map("line_breakpoints", self.key)
            if any(b is None for b in parts):
                return None
            merged = np.concatenate(parts)
            merged.sort()
            self._bps = merged
        return self._bps

    def minimize(self, lo=0.0, hi=math.inf):
        eta = _select_minimize(self, [self], self, lo, hi)
        return LineFunction.minimize(self, lo, hi) if eta is None else eta

    def __add__(self, other):
        if isinstance(other, LineFunction):
            return _ShardedSumLine([self, other], self)
        return NotImplemented


class _ShardedSumLine(SumLine):
    """A sum of lines one of which is a :class:`ShardedLine` (the risk's: the loss's line plus
    the regularizer's): ``minimize`` by the distributed breakpoint search, the other lines'
    breakpoints (an L1 regularizer's) joining it as one more source, kept on the driver."""

    def __init__(self, lines, sharded: ShardedLine):
        super().__init__(lines)
        self.sharded = sharded

    def minimize(self, lo=0.0, hi=math.inf):
        eta = _select_minimize(self, self.lines, self.sharded, lo, hi)
        return SumLine.minimize(self, lo, hi) if eta is None else eta

    def __add__(self, other):
        if isinstance(other, LineFunction):
            return _ShardedSumLine([*self.lines, other], self.sharded)
        return NotImplemented


def _gap_samples(bps: np.ndarray, edges, n_samples: int):
    """For each pair of consecutive ``edges`` ``(a, b)``: the number of the sorted ``bps`` in
    the open interval ``(a, b)`` and at most ``n_samples`` of them, evenly spaced in rank."""
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        i0 = int(np.searchsorted(bps, a, side="right"))
        i1 = int(np.searchsorted(bps, b, side="left"))
        n = max(i1 - i0, 0)
        if n <= n_samples:
            sample = np.array(bps[i0:i0 + n])
        else:
            sample = bps[i0 + ((np.arange(n_samples) + 0.5) * (n / n_samples)).astype(np.int64)]
        out.append((n, sample))
    return out


def _pivots(gap, k: int) -> list:
    """Up to ``k`` distinct pivots in one gap: the weighted ``j/(k+1)`` quantiles of the
    sources' samples, a sample of a source with ``n`` points in ``s`` samples weighing
    ``n / s`` (exact quantiles once every source sends all its points)."""
    values = [np.asarray(s, dtype=np.float64) for n, s in gap if n and len(s)]
    weights = [np.full(len(s), n / len(s)) for n, s in gap if n and len(s)]
    v, w = np.concatenate(values), np.concatenate(weights)
    order = np.argsort(v, kind="stable")
    v, cum = v[order], np.cumsum(w[order])
    idx = np.searchsorted(cum, cum[-1] * np.arange(1, k + 1) / (k + 1), side="left")
    return [float(x) for x in np.unique(v[np.minimum(idx, v.size - 1)])]


class _MemoLine(LineFunction):
    """``line`` with the one-sided derivatives found by the search remembered: the last
    piece's closed form re-reads them without another round trip."""

    cheap_derivative = True

    def __init__(self, line, memo, affine):
        self.line, self.memo, self.affine_between_breakpoints = line, memo, affine

    def value(self, eta):
        return self.line.value(eta)

    def derivative(self, eta, side=1):
        key = (float(eta), side)
        if key not in self.memo:
            self.memo[key] = self.line.derivative(eta, side)
        return self.memo[key]


def _chain_line_derivatives(loss, key, pivots, first):
    """Continue shard 0's one-sided derivatives ``first`` (a ``(+, -)`` pair a pivot)
    through shards 1..P-1 in order (P - 1 round trips of 2K floats)."""
    out = [tuple(float(x) for x in pair) for pair in first]
    for k in range(1, loss.n_shards):
        out = loss._map("line_derivatives_from", key, list(pivots), out, only=k)[0]
    return out


def _select_minimize(line, lines, sharded: ShardedLine, lo, hi):
    r"""An exact minimiser of ``line`` (:math:`\sum` of ``lines``, one of them ``sharded``) on
    ``[lo, hi]`` by a distributed selection over the breakpoints, or None when the shards'
    lines have none (then the generic search runs).

    The one-machine search (:meth:`LineFunction.minimize`) bisects the sorted breakpoints for
    the smallest :math:`b` with :math:`\varphi'(b^+) \ge 0`, then solves on the piece
    :math:`(b^-, b]`. Here the breakpoints stay on the shards, sorted. A round sends
    :math:`K` pivots inside the bracket :math:`(L, R)`; each shard answers its one-sided
    derivatives at them and, for each of the :math:`K + 1` gaps, its count of breakpoints
    there and ``loss.line_samples`` of them spaced in rank. The driver adds the derivatives
    in shard order (then the other lines', as the one-machine line does), keeps the gap
    where :math:`\varphi'` turns nonnegative, and takes the next pivots at the weighted
    quantiles of the samples in it: each round cuts the bracket's breakpoints by about
    :math:`K + 1`, and the pivots are breakpoints, so the search ends (no breakpoint left
    between :math:`L` and :math:`R`) after about :math:`\log_{K+1}` (kinks) rounds with the
    bracket of the bisection; the last piece is then solved as there, from the true
    derivatives already known (closed form where :math:`\varphi'` is affine).

    Piecewise-linear shard lines (hinge-type losses): the shards read their derivatives at
    the pivots from running sums of the jumps (``line_select_jumps``: O(log m_k) a pivot, no
    pass over the data), with ``loss.jump_pivots`` pivots a round; one more round takes the
    true derivatives at the final bracket's ends and confirms it (as the one-machine
    ``first_crossing`` search does); a bracket the true derivatives contradict (rounding)
    sends the search again with true derivatives (``loss.line_pivots`` a round, each a pass
    over the shard's line). Per round: :math:`O(K \cdot` ``line_samples``:math:`)` floats
    per shard, whatever its size."""
    loss = sharded.loss
    if loss.line_search != "select" or not sharded.has_breakpoints:
        return None
    if not lo <= hi:
        raise ValueError(f"need lo <= hi, got [{lo}, {hi}]")
    if not math.isfinite(lo):
        raise ValueError("minimize needs a finite lower end lo")
    lo, hi = float(lo), float(hi)
    if lo == hi:
        return lo
    if sharded.newton and loss.curvature_search:
        eta = _newton_minimize(lines, sharded, lo, hi)
        if eta is not None:
            return eta
    local = []
    for other in lines:
        if other is not sharded:
            bps = other.breakpoints()
            if bps is None:
                return None
            local.append(np.sort(np.asarray(bps, dtype=np.float64)))
    q = int(loss.line_samples)

    def ask(method, pivots, L, R):
        """One round: the total one-sided derivatives at the pivots, and the shards' gaps."""
        extra = (lo,) if method != "line_select" else ()  # the running sums' origin
        replies = loss._map(method, sharded.key, pivots, L, R, q, *extra)
        if any(gaps is None for _, gaps in replies):
            return None, None
        chained = None
        if method == "line_select" and loss._ordered() and sharded._chainable:
            # the true derivatives as one machine sums them (the last piece is solved
            # from them): shard 0's from 0, continued through the others in order
            chained = _chain_line_derivatives(loss, sharded.key, pivots, replies[0][0])
        ders = {}
        for j, v in enumerate(pivots):
            for i, side in enumerate((1, -1)):
                part = (_ordered_sum(r[0][j][i] for r in replies) if chained is None
                        else chained[j][i])
                acc = 0  # SumLine.derivative's sum, term by term in the lines' order
                for other in lines:
                    acc = acc + (part if other is sharded else other.derivative(v, side))
                ders[(v, side)] = float(acc)
        return ders, [gaps for _, gaps in replies]

    def search(method, k, pivots, ders, gaps, L, R):
        """Narrow ``(L, R)`` round by round until no breakpoint is left inside."""
        while True:
            j = next((j for j, v in enumerate(pivots) if ders[(v, 1)] >= 0), len(pivots))
            edges = [L, *pivots, R]
            L, R = edges[j], edges[j + 1]
            gap = [g[j] for g in gaps] + [_gap_samples(b, [L, R], q)[0] for b in local]
            if sum(n for n, _ in gap) == 0:
                return L, R
            pivots = _pivots(gap, k)
            ders, gaps = ask(method, pivots, L, R)
            if ders is None:
                return None
            found.update(ders)

    memo, found = ask("line_select", [lo], lo, hi)  # true derivatives at lo, gaps of (lo, hi)
    if memo is None:
        return None
    if memo[(lo, 1)] >= 0:
        return lo
    first = (dict(memo), found)
    bracket = None
    fast = ("line_select_jumps" if sharded.piecewise_linear
            else "line_select_quad" if sharded.quadratic_jumps and loss.curvature_search
            else None)
    if fast is not None:
        found = dict(memo)
        bracket = search(fast, int(loss.jump_pivots), [lo], *first, lo, hi)
        if bracket is not None:  # confirm with the true derivatives at its ends
            L, R = bracket
            ends = [v for v in (L, R) if v != lo and math.isfinite(v)]
            if ends:
                ders, _ = ask("line_select", ends, L, R)
                memo.update(ders or {})
            if not ((L == lo or memo.get((L, 1), 0.0) < 0)
                    and (R == hi or memo.get((R, 1), -1.0) >= 0)):
                bracket = None
    if bracket is None:
        found = memo
        bracket = search("line_select", int(loss.line_pivots), [lo], *first, lo, hi)
        if bracket is None:
            return None
    L, R = bracket
    affine = bool(getattr(line, "affine_between_breakpoints", False))
    return _minimize_piecewise(_MemoLine(line, memo, affine), np.empty(0), L, R)


def _newton_minimize(lines, sharded: ShardedLine, lo: float, hi: float,
                     max_rounds: int = 100):
    r"""The minimiser on ``[lo, hi]`` of :math:`\varphi = \sum` ``lines`` (one of them
    ``sharded``, a logistic line; the others with an ``affine_derivative``: an L2
    regularizer's) by a safeguarded Newton method, or None when another line is not affine
    in its derivative (then the breakpoint search runs).

    One round trip per step: every shard answers :math:`(\varphi_k'(\eta), \varphi_k''(\eta))`
    (two floats, :meth:`_ShardActor.line_newton`), added in shard order. The driver keeps a
    bracket :math:`a < \eta^* \le b` (:math:`\varphi'(a) < 0 \le \varphi'(b)`, :math:`b`
    possibly ``hi = inf``), takes the Newton step :math:`\eta - \varphi'/\varphi''` when it
    falls inside, else Newton's step from :math:`a` (:math:`\varphi'` is concave past an
    inflection: a step from the right may overshoot), else the bracket's secant, else its
    midpoint (or, with :math:`b = \infty`, twice the distance from ``lo``), and stops when
    the next step would move :math:`\eta` by at most 4 ulps, or the bracket is that narrow: the root of the continuous, increasing :math:`\varphi'` to the precision
    of the one-machine search (Brent's method to ``rtol = 4 eps``), in about 5-8 round trips
    instead of Brent's and its bracketing doubling's one per derivative."""
    affine = []
    for other in lines:
        if other is not sharded:
            a = other.affine_derivative()
            if a is None:
                return None
            affine.append((other, float(a[1])))
    loss = sharded.loss
    eps = np.finfo(np.float64).eps

    def both(eta):
        parts = loss._map("line_newton", sharded.key, float(eta))
        d = _ordered_sum(r[0] for r in parts)
        acc = 0.0  # SumLine.derivative's sum, term by term in the lines' order
        for other in lines:
            acc = acc + (d if other is sharded else other.derivative(eta, 1))
        dd = _ordered_sum(r[1] for r in parts) + sum(c2 for _, c2 in affine)
        return float(acc), float(dd)

    d, dd = both(lo)
    if d >= 0 or lo == hi:
        return float(lo)
    if not (math.isfinite(d) and math.isfinite(dd)):
        return None
    a, da, dda = float(lo), d, dd   # phi'(a) < 0
    b, db = float(hi), None         # phi'(b) >= 0 once evaluated (hi = inf: not yet)
    if math.isfinite(hi):
        db, _ = both(hi)
        if db < 0:
            return float(hi)
    eta = a
    for _ in range(max_rounds):
        step = -d / dd if dd > 0 else math.inf
        if abs(step) <= 4 * eps * abs(eta):  # converged: the next step is below 4 ulps
            return float(eta)
        new = eta + step
        if not a < new < b and dda > 0:  # Newton from the left end (phi' < 0 there)
            new = a - da / dda
        if not a < new < b:
            if db is not None and math.isfinite(b):  # the secant of the bracket
                new = a - da * (b - a) / (db - da)
            if not a < new < b:
                new = 0.5 * (a + b) if math.isfinite(b) else lo + 2.0 * max(a - lo, abs(lo), 1.0)
        eta = new
        d, dd = both(eta)
        if not (math.isfinite(d) and math.isfinite(dd)):
            return None
        if d == 0:
            return float(eta)
        if d < 0:
            a, da, dda = eta, d, dd
        else:
            b, db = eta, d
        if math.isfinite(b) and b - a <= 4 * eps * max(abs(a), abs(b)):
            return float(b)
    return None


# ----------------------------------------------------------------------------------------
# certificates: the dual point of a sharded margin loss, kept on the shards
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ShardedDualPoint(Evidence):
    r"""A Fenchel dual point :math:`t = (t_1, \dots, t_P)` of a sharded margin loss whose
    pieces :math:`t_k \in [0, u]^{m_k}` stay on the shards (``u = loss.dual_upper``).

    The driver keeps O(P) numbers: the ``token`` under which every shard keeps its piece, the
    shards' data ``digests``, the claimed ``offsets`` :math:`b_k(t_k) = -\sum_{i \in S_k} c_i
    l^*(-y_i t_{k,i}, y_i)` and the ``plane`` :math:`(\bar a, \bar b)`; plus the ``recipe``
    the pieces were formed from (the run's query points and multipliers, already on the
    driver): :math:`t_k = \sum_i W_i\, t(w_i)` restricted to shard k (the column of shard k's
    model with ``n_models = P``), :math:`t(w)` the dual point of the subgradient the oracle
    returns at :math:`w`, so the plane is at least the query points' (equal slope, offset
    larger by the concavity of :math:`b`).

    Check (:meth:`verify`, called by :meth:`~nsopt.Certificate.check`): every shard
    re-verifies its piece (length, finite, in the box of its own loss) and rebuilds its plane
    :math:`(a_k, b_k) =` ``loss.dual_plane(t_k)`` from its data, in one pass; the driver
    compares each rebuilt :math:`b_k` with the claimed offset (a forged piece or aggregate is
    named by its shard), sums the planes in shard order and bounds
    :math:`b - \lambda\Omega^*(-a/\lambda)`: the verdict of :class:`~nsopt.certificate.DualPoint`
    on the concatenated :math:`t`, without moving it. A piece that is gone (its worker was
    lost, the shard rebuilt, or the certificate outlived the run's driver objects) is formed
    again from the recipe on the shard and verified like any other; without a recipe the
    check fails naming the shard."""

    token: str
    digests: tuple
    offsets: tuple
    recipe: tuple | None = field(default=None, repr=False)
    plane: tuple | None = field(default=None, repr=False)
    kind = "sharded-dual-point"

    def _loss(self, problem):
        loss = getattr(problem, "loss", None)
        if not isinstance(loss, ShardedLoss):
            _fail(f"sharded dual-point evidence needs the sharded problem the run solved "
                  f"(a RegularizedRisk of a ShardedLoss), got a loss "
                  f"{type(loss).__name__}")
        if loss._dual_upper is None:
            _fail(f"sharded dual-point evidence needs a margin loss with a dual; the shards "
                  f"hold {loss.kind}")
        if len(self.digests) != loss.n_shards or len(self.offsets) != loss.n_shards:
            _fail(f"the evidence has {len(self.digests)} shard digests and "
                  f"{len(self.offsets)} offsets for {loss.n_shards} shards")
        for k, (digest, s) in enumerate(zip(self.digests, loss._shards)):
            if digest != s.digest:
                _fail(f"shard {k}'s piece belongs to other data (its digest differs)")
        return loss

    def _pieces(self, loss):
        try:
            replies = loss._map("dual_check", self.token, None)
            gone = [k for k, r in enumerate(replies) if r is None]
            if gone:
                if self.recipe is None:
                    _fail(f"the dual point of shard {gone[0]} is gone (its worker was lost) "
                          "and the evidence has no recipe to form it again")
                replies = loss._map("dual_check", self.token, self.recipe)
        except ShardsLost as exc:  # never a KeyboardInterrupt out of a check
            raise CertificateError(f"the shards holding the dual point cannot be reached: "
                                   f"{exc}") from None
        except CertificateError:
            raise
        except Exception as exc:
            raise CertificateError(f"a shard refused its dual point: "
                                   f"{type(exc).__name__}: {exc}") from exc
        return replies

    def verify(self, problem):
        from .certificate import _plane_bound

        loss = self._loss(problem)
        offsets = _finite_array(self.offsets, "the shards' offsets", (loss.n_shards,))
        replies = self._pieces(loss)
        a, b, scale = np.zeros(problem.dim), 0.0, 0.0
        for k, reply in enumerate(replies):  # shard order
            if reply is None or reply[0] != "ok":
                _fail(f"the dual point of shard {k} "
                      f"{'is gone' if reply is None else reply[1]}")
            a_k, b_k = reply[1], float(reply[2])
            if not abs(offsets[k] - b_k) <= 1e-9 * max(1.0, abs(b_k)):
                _fail(f"shard {k}'s offset b_k is claimed {offsets[k]!r} but its dual point "
                      f"rebuilds {b_k!r}")
            a += a_k
            b += b_k
            scale = max(scale, abs(b_k))
        bound, _, conj = _plane_bound(problem, a, b, 0.0)  # t = 0 is the floor plane (0, 0)
        return bound, a, b, max(abs(b), abs(conj), scale), []

    def gather(self, problem) -> DualPoint:
        """The plain :class:`~nsopt.certificate.DualPoint` (the pieces concatenated on the
        driver: O(m) floats; for tests and small problems)."""
        loss = self._loss(problem)
        parts = loss._map("dual_vector", self.token)
        if any(p is None for p in parts):
            self._pieces(loss)  # formed again from the recipe where gone
            parts = loss._map("dual_vector", self.token)
        return DualPoint(np.concatenate(parts), plane=self.plane)


# ----------------------------------------------------------------------------------------
# builders
# ----------------------------------------------------------------------------------------
#: seconds a builder waits for a worker when the cluster has none running
WORKER_WAIT_SECONDS = 30.0


def _client_and_workers(client):
    _require_dask()
    owns = False
    if client is None:
        client, owns = local_client(), True
    elif isinstance(client, str):
        import distributed

        client, owns = distributed.Client(client), True
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        # a cluster that is starting, or restarting its workers after a loss, may have none
        # running for a moment (seen in CI: a LocalCluster between two tests)
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        except TimeoutError as exc:  # distributed's WorkerStartTimeoutError
            raise ValueError(f"the Dask cluster has no workers (none came within "
                             f"WORKER_WAIT_SECONDS = {WORKER_WAIT_SECONDS:g} s)") from exc
        workers = sorted(client.scheduler_info()["workers"])
    return client, workers, owns


def _check_n_shards(n_shards, m, default):
    if n_shards is None:
        n_shards = default
    if not isinstance(n_shards, numbers.Integral) or isinstance(n_shards, bool):
        raise TypeError(f"n_shards must be an integer, got {type(n_shards).__name__}")
    if not 1 <= n_shards <= m:
        raise ValueError(f"n_shards must be in 1 .. {m} (the number of examples), got {n_shards}")
    return int(n_shards)


def _slice_loss(loss, s: int, e: int):
    """A copy of ``loss`` on the rows ``s:e``, keeping the whole problem's weights ``c``."""
    if isinstance(loss, VectorLoss):  # it knows its per-example arrays (labels)
        return loss._subset(np.arange(s, e), loss.c[s:e])
    part = copy.copy(loss)
    part.__dict__.pop("_group_parts", None)
    part.data = DataMatrix(loss.data.X[s:e])
    part.y = np.array(loss.y[s:e])
    part.c = np.array(loss.c[s:e])
    part.m = e - s
    return part


def _start_actor(client, worker, index, source, **kw):
    """Create a shard's actor (on ``worker`` when given) and return its handle."""
    workers = None if worker is None else [worker]
    actor = client.submit(_ShardActor, index, source, pure=False, actor=True, workers=workers,
                          **kw).result()
    actor.start().result()
    return actor


def _scatter_shard(client, loss, k, s, e, worker):
    try:
        return _scatter_shard_to(client, loss, k, s, e, worker)
    except KeyError:
        # the worker left between listing the workers and scattering (a kill or a restart
        # racing with us: the scheduler raises KeyError for an unknown worker); only then let
        # the scheduler place the shard
        if worker is None or worker in client.scheduler_info()["workers"]:
            raise
        return _scatter_shard_to(client, loss, k, s, e, None)


def _scatter_shard_to(client, loss, k, s, e, worker):
    source = f"rows {s}:{e}"
    data = client.scatter(_slice_loss(loss, s, e), workers=None if worker is None else [worker],
                          hash=False)
    try:
        return _start_actor(client, worker, k, source, loss=data)
    finally:
        data.release()  # the actor holds the loss now


def shard(problem: RegularizedRisk, n_shards: int | None = None, client=None, *,
          rebuild: bool = True) -> RegularizedRisk:
    r"""Split a regularized risk's examples over the workers of a Dask cluster.

    Parameters
    ----------
    problem : RegularizedRisk
        In memory, with a loss of one linear score per example (:class:`~nsopt.losses.Hinge`,
        :class:`~nsopt.losses.SquaredHinge`, :class:`~nsopt.losses.Logistic`,
        :class:`~nsopt.losses.LeastSquares` and the other scalar losses).
    n_shards : int, optional
        Number of contiguous row blocks (the split of ``n_models``,
        :func:`nsopt.losses._groups.contiguous_groups`); default: one per worker. Shard ``k``
        goes to worker ``k mod n_workers`` (workers sorted by address).
    client : distributed.Client or str, optional
        The cluster to use, unchanged (or its scheduler's address). Default: a new
        ``LocalCluster`` with one single-threaded process per CPU, closed by
        ``problem.loss.close()``.
    rebuild : bool, default True
        Keep a reference to ``problem`` so that a shard lost with its worker is scattered
        again (to any worker); False: a lost shard ends the run with status ``interrupted``.

    Returns
    -------
    RegularizedRisk
        ``RegularizedRisk(ShardedLoss(...), problem.reg, problem.lam)``: the same function
        (values equal ``problem``'s to rounding: the sum is taken shard by shard).

    Examples
    --------
    >>> import nsopt, nsopt.distributed                              # doctest: +SKIP
    >>> X, y = nsopt.datasets.make_sparse_binary(1000, 50, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-3)
    >>> Js = nsopt.distributed.shard(J, n_shards=4)
    >>> res = nsopt.minimize(Js, method="bmrm")
    >>> res.certificate.check(Js)
    """
    if not isinstance(problem, RegularizedRisk):
        raise TypeError(f"problem must be an nsopt RegularizedRisk, got {type(problem).__name__}")
    loss = problem.loss
    if not isinstance(loss, (ScalarLoss, VectorLoss)):
        raise TypeError(f"shard supports losses of linear scores per example (the scalar and "
                        f"vector losses of nsopt.losses); got {type(loss).__name__}")
    client, workers, owns = _client_and_workers(client)
    try:
        n_shards = _check_n_shards(n_shards, loss.m, len(workers))
        bounds = contiguous_groups(loss.m, n_shards)
        shards = []
        for k in range(n_shards):
            s, e = int(bounds[k]), int(bounds[k + 1])
            actor = _scatter_shard(client, loss, k, s, e, workers[k % len(workers)])
            shards.append((k, actor, s, e))
        infos = _results([a.info() for _, a, _, _ in shards])
        shards = [_Shard(k, actor, _rescatter(client, loss, k, s, e) if rebuild else None,
                         info["m"], info["digest"], f"rows {s}:{e}")
                  for (k, actor, s, e), info in zip(shards, infos)]
    except BaseException:
        if owns:
            client.close()
        raise
    sharded = ShardedLoss(client, shards, loss.dim, type(loss), owns_client=owns)
    for name in getattr(loss, "kernel_params", ()):  # the loss's own parameters (Huber's delta, ...)
        setattr(sharded, name, getattr(loss, name))
    if isinstance(loss, VectorLoss):  # W is d x k, flattened (row-major) as in the loss
        sharded.n_features, sharded.n_outputs = loss.n_features, loss.n_outputs
    return RegularizedRisk(sharded, problem.reg, problem.lam)


def _rescatter(client, loss, k, s, e):
    def remake():
        actor = _scatter_shard(client, loss, k, s, e, None)
        return actor, actor.info().result()
    return remake


def _loss_class(loss):
    from . import losses

    if isinstance(loss, str):
        cls = getattr(losses, loss, None)
        if cls is None:
            raise ValueError(f"loss {loss!r} is not a loss of nsopt.losses")
        loss = cls
    if not (isinstance(loss, type) and issubclass(loss, ScalarLoss)):
        raise TypeError(f"loss must be a scalar loss class of nsopt.losses (e.g. Hinge) or its "
                        f"name, got {loss!r}")
    return loss


def _svmlight_paths(paths, n_shards) -> list:
    """``paths`` (one path or several) as a list of strings, checked with ``n_shards`` (None,
    or an integer of at least the number of files)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("paths is empty: give at least one svmlight file")
    if n_shards is not None:
        if isinstance(n_shards, bool) or not isinstance(n_shards, (int, np.integer)):
            raise TypeError(f"n_shards must be an integer or None, got {n_shards!r}")
        if n_shards < len(paths):
            raise ValueError(f"n_shards must be at least the number of files ({len(paths)}), "
                             f"got {n_shards}")
    return paths


def _svmlight_parts(client, paths, n_shards) -> list:
    """``[(path, byte span or None)]``: one part per file, or ``n_shards`` byte ranges whose
    sizes a worker reads (the driver need not see the files)."""
    if n_shards is None:
        return [(p, None) for p in paths]
    sizes = client.submit(_file_sizes, paths, pure=False).result()
    return _file_ranges(paths, sizes, int(n_shards))


def load_svmlight(paths, loss="Hinge", reg=None, lam: float = 1e-4, client=None, *,
                  n_features: int | None = None, n_shards: int | None = None,
                  binary_labels: bool = False, bias: float | None = None,
                  **loss_options) -> RegularizedRisk:
    r"""A sharded regularized risk read from svmlight files on the workers: one shard per
    file, or ``n_shards`` byte ranges of the files.

    Parameters
    ----------
    paths : str, os.PathLike or a sequence of them
        The files (any compression :func:`nsopt.io.load_svmlight` reads), in this order;
        every worker must see them at the same path. The driver never reads them.
    loss : str or ScalarLoss subclass, default "Hinge"
        The loss of each example (``"Hinge"``, ``"Logistic"``, ``nsopt.losses.SquaredHinge``...).
    reg : Regularizer, default L2()
    lam : float > 0
    client : distributed.Client or str, optional
        As in :func:`shard`.
    n_features : int, optional
        Number of features; default: the largest index over all files (agreed after every
        file is read: each shard is then widened to it).
    n_shards : int, optional
        Default: one shard per file. Otherwise at least ``len(paths)``: the files are cut
        into this many byte ranges (each file into a number of ranges proportional to its
        size, at least one), and every worker reads and parses only the lines that start in
        its range (:class:`nsopt.io.LineRange`): one large file spread over a cluster. Needs
        uncompressed files where a file gets more than one range. The examples keep the
        files' order, so the problem is the same as with one shard per file.
    binary_labels : bool, default False
        Map the two distinct labels found over all files to -1/+1, the larger to +1 (the
        command line's rule; e.g. 0/1 or 1/2 labels), on the workers. The two labels read are
        then ``loss.classes`` (``(negative, positive)``). Any other number of distinct labels
        is a ValueError whose ``labels`` attribute holds the (at most 3 smallest) labels found.
    bias : float > 0, optional
        Append a constant feature of this value to every example, on the workers (liblinear's
        ``-B``): its weight, last, is the bias. The problem then has ``n_features + 1``
        columns.
    **loss_options
        Passed to the loss class (e.g. ``delta`` for Huber).

    Returns
    -------
    RegularizedRisk
        The mean loss over all examples of all files: the function of one ``load_svmlight``
        of their concatenation. A shard lost with its worker is read again from its file.

    Raises
    ------
    ShardError
        Bad input in one file (a malformed line, a value that is not finite, labels the loss
        refuses), naming the shard, the file (and byte range) and, for a line, its number
        in the file; a byte range in which no line starts.
    ValueError
        ``n_shards`` smaller than the number of files, or more than one range asked of a
        compressed file.
    """
    cls = _loss_class(loss)
    paths = _svmlight_paths(paths, n_shards)
    client, workers, owns = _client_and_workers(client)
    try:
        parts = _svmlight_parts(client, paths, n_shards)
        paths = [p for p, _ in parts]
        sources = [p if span is None else f"{p}, bytes {span[0]}-{span[1]}"
                   for p, span in parts]
        actors = [_start_actor(client, workers[k % len(workers)], k, sources[k],
                               file=(p, n_features, span))
                  for k, (p, span) in enumerate(parts)]
        shapes = _results([a.read() for a in actors])
        m_total = sum(m for m, _, _ in shapes)
        d = n_features if n_features is not None else max(dk for _, dk, _ in shapes)
        weight = 1.0 / m_total
        classes = _two_labels(shapes) if binary_labels else None
        make = (cls, d, weight, loss_options, classes, bias)
        infos = _results([a.build(*make) for a in actors])
        shards = [_Shard(k, a, _read_again(client, parts[k], sources[k], k, n_features, make),
                         info["m"], info["digest"], sources[k])
                  for k, (a, info) in enumerate(zip(actors, infos))]
    except BaseException:
        if owns:
            client.close()
        raise
    sharded = ShardedLoss(client, shards, d + (bias is not None), cls, owns_client=owns)
    sharded._classes = classes
    for name, value in loss_options.items():
        setattr(sharded, name, value)
    return RegularizedRisk(sharded, reg, lam)


def _two_labels(shapes):
    """``(negative, positive)``: the two distinct labels of every shard's few labels (the
    answers of ``_ShardActor.read``); a ValueError with ``labels`` otherwise."""
    found = sorted(set().union(*(labels for _, _, labels in shapes)))
    if len(found) != 2:
        shown = ", ".join(f"{v:g}" for v in found[:3]) + (", ..." if len(found) > 3 else "")
        what = ("no label" if not found else "a single label" if len(found) == 1
                else "more than two distinct labels")
        exc = ValueError(f"binary_labels=True needs exactly two distinct labels over all "
                         f"files; found {what} ({shown})")
        exc.labels = found
        raise exc
    return (found[0], found[1])


def _read_again(client, part, source, k, n_features, make):
    path, span = part

    def remake():
        actor = _start_actor(client, None, k, source, file=(path, n_features, span))
        actor.read().result()
        return actor, actor.build(*make).result()
    return remake


def _file_sizes(paths):
    """Sizes in bytes (run on a worker: the files are where the workers are)."""
    return [os.path.getsize(p) for p in paths]


def _file_ranges(paths, sizes, n_shards):
    """``[(path, (start, stop) or None)]``: ``n_shards`` byte ranges over the files, each
    file getting a number of ranges proportional to its size (largest remainders), at
    least one; a file with one range is read whole (any compression)."""
    from .io import _COMPRESSORS, byte_ranges

    total = sum(sizes)
    extra = n_shards - len(paths)  # ranges beyond the one every file gets
    share = [extra * s / total if total else 0.0 for s in sizes]
    counts = [1 + int(x) for x in share]
    order = sorted(range(len(paths)), key=lambda i: (int(share[i]) - share[i], i))
    for i in order[:n_shards - sum(counts)]:
        counts[i] += 1
    out = []
    for path, size, r in zip(paths, sizes, counts):
        if r == 1:
            out.append((path, None))
            continue
        if os.path.splitext(path)[1].lower() in _COMPRESSORS:
            raise ValueError(f"n_shards={n_shards} needs {r} byte ranges of {path}, which is "
                             "compressed: a compressed stream cannot be entered at a byte "
                             "offset; decompress it, or use one shard per file")
        out.extend((path, span) for span in byte_ranges(size, r))
    return out


def _map_part(path, index, n_features, span, fn):
    """Run on a worker: ``fn(X, y)`` of one part (a file or a byte range of one)."""
    X, y = _read_svmlight(path, index, n_features, span, empty_ok=True)
    return fn(X, y)


def map_svmlight(paths, fn: Callable, client=None, *, n_shards: int | None = None,
                 n_features: int | None = None) -> list:
    """``[fn(X_k, y_k) for every part k]`` of svmlight files, each part read, and ``fn``
    run, on a worker; the answers in the files' order. For data used once, such as test
    data scored by a fitted model (``nsopt solve --test DATA --dask``): nothing is kept on the
    workers, and the driver receives only what ``fn`` answers (O(1) numbers per part for
    metric sums), never the data.

    Parameters
    ----------
    paths : str, os.PathLike or a sequence of them
        As in :func:`load_svmlight`: every worker sees them at the same path.
    fn : callable ``(X csr_matrix, y ndarray) -> answer``
        Picklable (a module-level function or a ``functools.partial`` of one).
    client : distributed.Client or str, optional
        As in :func:`shard`.
    n_shards : int, optional
        Default: one part per file. Otherwise the files' byte ranges, as in
        :func:`load_svmlight`; a range in which no line starts is a part of no rows (``fn``
        gets an empty ``X``), not an error.
    n_features : int, optional
        Passed to the reader: every part then has this many columns (a part's default is its
        own largest index).

    Raises
    ------
    ShardError
        A malformed line, naming the part, the file and the line number.
    """
    paths = _svmlight_paths(paths, n_shards)
    client, workers, owns = _client_and_workers(client)
    try:
        parts = _svmlight_parts(client, paths, n_shards)
        futures = [client.submit(_map_part, p, k, n_features, span, fn, pure=False,
                                 workers=[workers[k % len(workers)]], allow_other_workers=True)
                   for k, (p, span) in enumerate(parts)]
        return _results(futures)
    finally:
        if owns:
            client.close()

def from_builders(builders: Sequence[Callable], reg=None, lam: float = 1e-4, client=None
                  ) -> RegularizedRisk:
    r"""A sharded regularized risk whose shards are built on the workers by ``builders``.

    Parameters
    ----------
    builders : sequence of callables
        ``builders[k]()`` runs on a worker and returns shard ``k``'s loss (a scalar loss of
        :mod:`nsopt.losses`, e.g. ``Hinge(X_k, y_k)`` on data generated or read there). It must
        be picklable (a module-level function or a ``functools.partial`` of one) and
        deterministic: a shard lost with its worker is built again by calling it again.
    reg, lam, client
        As in :func:`load_svmlight`.

    Returns
    -------
    RegularizedRisk
        :math:`R(w) = \sum_k (m_k / m) R_k(w)`: each shard's risk (its own weighted mean)
        weighted by its share of the examples, i.e. the mean over all examples when the shards
        have no sample weights.
    """
    builders = list(builders)
    if not builders or not all(callable(b) for b in builders):
        raise TypeError("builders must be a non-empty sequence of callables returning losses")
    client, workers, owns = _client_and_workers(client)
    try:
        actors = [_start_actor(client, workers[k % len(workers)], k, f"builder {k}", make=b)
                  for k, b in enumerate(builders)]
        shapes = _results([a.shape() for a in actors])
        dims = {d for _, d in shapes}
        if len(dims) != 1:
            raise ValueError(f"the shards disagree on the number of features: {sorted(dims)}")
        m_total = sum(m for m, _ in shapes)
        infos = _results([a.reweight(m_k / m_total) for a, (m_k, _) in zip(actors, shapes)])
        kinds = _results([a.kind() for a in actors])
        cls = kinds[0]
        shards = [_Shard(k, a, _make_again(client, builders[k], k, m_k / m_total),
                         info["m"], info["digest"], f"builder {k}")
                  for k, (a, info, (m_k, _)) in enumerate(zip(actors, infos, shapes))]
    except BaseException:
        if owns:
            client.close()
        raise
    return RegularizedRisk(ShardedLoss(client, shards, dims.pop(), cls, owns_client=owns),
                           reg, lam)


def _make_again(client, builder, k, scale):
    def remake():
        actor = _start_actor(client, None, k, f"builder {k}", make=builder)
        return actor, actor.reweight(scale).result()
    return remake


# ----------------------------------------------------------------------------------------
# dask collections: one shard per row block, computed on the worker that keeps it
# ----------------------------------------------------------------------------------------
def _block_loss(X_block, y_block, label, cls, options, index):
    """Shard builder (runs on a worker): compute one row block of a dask collection there,
    with the synchronous scheduler (the block's own graph: its source, not the driver's data),
    and build the loss ``cls(X, y, **options)``."""
    import dask

    if label is None:
        X, y = dask.compute(X_block, y_block, scheduler="sync")
    else:  # one partition of a dask.dataframe, the label a column of it
        part = dask.compute(X_block, scheduler="sync")[0]
        y = part[label].to_numpy(dtype=np.float64)
        X = part.drop(columns=[label]).to_numpy(dtype=np.float64)
    if not isinstance(X, np.ndarray):
        import scipy.sparse as sp

        if not sp.issparse(X):
            X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    try:
        return cls(X, y, **options)
    except (TypeError, ValueError) as exc:
        raise ShardError(f"shard {index} (block {index}): {exc}", index, f"block {index}") from None


def _dask_blocks(X, y):
    """``(X blocks, y blocks, label)`` as lists of culled ``dask.delayed`` objects, one per row
    block, for :func:`from_dask`; TypeError / ValueError naming the argument."""
    import dask.array as da

    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover - dask without its dataframe extra
        dd = None
    if dd is not None and isinstance(X, dd.DataFrame):
        if not isinstance(y, str) or y not in X.columns:
            raise ValueError(f"with a dask DataFrame X, y must be the name of its label column, "
                             f"one of {list(X.columns)}; got {y!r}")
        parts = list(X.to_delayed(optimize_graph=True))
        return parts, [None] * len(parts), y
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask.array.Array or a dask.dataframe.DataFrame, got "
                        f"{type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (examples x features), got shape {X.shape}")
    if X.numblocks[1] != 1:
        raise ValueError(f"X must be chunked along rows only (one block of its {X.shape[1]} "
                         f"columns), got column chunks {X.chunks[1]}; use X.rechunk({{1: -1}})")
    if not isinstance(y, da.Array) or y.ndim != 1:
        raise TypeError(f"y must be a 1-d dask.array.Array chunked like X's rows, got "
                        f"{type(y).__name__}")
    if y.chunks[0] != X.chunks[0]:
        raise ValueError(f"y's chunks {y.chunks[0]} must equal X's row chunks {X.chunks[0]}; "
                         f"use y.rechunk((X.chunks[0],))")
    xs = list(X.to_delayed(optimize_graph=True).ravel())
    ys = list(y.to_delayed(optimize_graph=True).ravel())
    return xs, ys, None


def from_dask(X, y, loss="Hinge", reg=None, lam: float = 1e-4, client=None, **loss_options
              ) -> RegularizedRisk:
    r"""A sharded regularized risk with one shard per row block of a Dask collection.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame
        The examples: a 2-d array chunked along rows only (blocks of numpy arrays or of
        scipy.sparse matrices, e.g. from ``map_blocks``), or a data frame whose partitions
        hold the features and the label column ``y``.
    y : dask.array.Array or str
        The targets, a 1-d array chunked like ``X``'s rows; with a data frame, the name of
        its label column.
    loss, reg, lam, client, **loss_options
        As in :func:`load_svmlight`.

    Returns
    -------
    RegularizedRisk
        The mean loss over all examples, as :func:`from_builders` builds it: block ``k`` is
        computed **on the worker of shard k** from its own (culled) task graph with the
        synchronous scheduler, so blocks defined by a file reader are read there, and a shard
        lost with its worker is computed again from the graph. The collection should not be
        persisted (a persisted block lives in the cluster's memory, not in a graph that a
        worker can run alone).

    Examples
    --------
    >>> import dask.array as da, nsopt.distributed as nd                  # doctest: +SKIP
    >>> X = da.random.random((10**6, 50), chunks=(250_000, 50))
    >>> y = da.sign(X[:, 0] - 0.5)
    >>> J = nd.from_dask(X, y, loss="Hinge", lam=1e-4)
    >>> nsopt.minimize(J, method="ls-bmrm").certificate.check(J)
    """
    import functools

    cls = _loss_class(loss)
    xs, ys, label = _dask_blocks(X, y)
    builders = [functools.partial(_block_loss, xb, yb, label, cls, dict(loss_options), k)
                for k, (xb, yb) in enumerate(zip(xs, ys))]
    return from_builders(builders, reg=reg, lam=lam, client=client)


# ----------------------------------------------------------------------------------------
# the saddle form of a sharded loss (excessive-gap on shards): nsopt.distributed_saddle
# ----------------------------------------------------------------------------------------
def _saddle_form_of(loss):
    from .distributed_saddle import _saddle_form_attribute  # it imports this module
    return _saddle_form_attribute(loss)


def _no_saddle_form_reason_of(loss):
    from .distributed_saddle import _no_saddle_form_reason
    return _no_saddle_form_reason(loss)


ShardedLoss.no_saddle_form_reason = property(
    _no_saddle_form_reason_of,
    doc="Why the shards' losses have no saddle form (a sentence), or None when they have.")
ShardedLoss.saddle_form = property(
    _saddle_form_of,
    doc="The sharded saddle form's factory (``loss.saddle_form()``, "
        ":func:`nsopt.distributed_saddle.sharded_saddle_form`: dual blocks kept on the "
        "shards) when every shard's loss has a saddle form (hinge, multiclass hinges), "
        "else None.")
