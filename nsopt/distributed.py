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
each shard on its worker; each value or derivative of the line moves one float per shard.

:class:`ShardedLoss` is an :class:`~nsopt.Oracle` (a loss); :func:`shard` and
:func:`load_svmlight` wrap it in an unchanged :class:`~nsopt.RegularizedRisk`, so every solver
that uses the oracle protocol runs on it.

Certificates. A :class:`ShardedLoss` presents itself as a loss *without* a dual interface
(no ``dual_upper``): the solvers then certify with query-point evidence
(:class:`~nsopt.certificate.QueryPoints`), which :meth:`~nsopt.Certificate.check` verifies by
calling the sharded loss again (k oracle calls, run on the workers); no per-example dual vector
ever reaches the driver. The problem's fingerprint covers the data through a digest of every
shard, computed on its worker when the shard is built.

Lost workers. Every call that fails because a shard's data is gone (a worker killed,
restarted or disconnected) rebuilds that shard from its source and repeats the call, up to
``max_rebuilds`` times per call: the answer is the same numbers, so the run continues as if
nothing happened. The source of a shard of :func:`shard` is the caller's in-memory problem (the
driver keeps a reference to it, which the caller holds anyway; pass ``rebuild=False`` to drop
it); that of :func:`load_svmlight` is the file, read again by another worker. A shard that
cannot be rebuilt raises :class:`ShardsLost`, a ``KeyboardInterrupt``: the solver loop stops
with status ``interrupted`` and returns the best point with a certificate made only of
evidence that was checked before the loss, never a wrong one.
"""
from __future__ import annotations

import copy
import hashlib
import numbers
import os
import weakref
from typing import Callable, Sequence

import numpy as np

from .losses._base import ScalarLoss
from .losses._vector_base import VectorLoss
from .losses._groups import contiguous_groups
from .losses._kernels import DataMatrix
from .oracle import LineFunction, Oracle
from .problem import RegularizedRisk

__all__ = ["ShardedLoss", "ShardedLine", "ShardError", "ShardsLost", "shard", "load_svmlight",
           "from_builders", "from_dask", "local_client"]


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


def local_client(n_workers: int | None = None, **cluster_options):
    """A client of a new ``LocalCluster`` of ``n_workers`` processes with one thread each
    (default: the number of CPUs); extra keyword arguments go to ``LocalCluster``."""
    distributed = _require_dask()
    n_workers = (os.cpu_count() or 1) if n_workers is None else int(n_workers)
    options = dict(n_workers=n_workers, processes=True, threads_per_worker=1,
                   dashboard_address=None)
    options.update(cluster_options)
    cluster = distributed.LocalCluster(**options)
    return distributed.Client(cluster)


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


def _read_svmlight(path, index, n_features=None):
    from .io import CorruptFileError, SvmlightFormatError, load_svmlight as _load

    try:
        return _load(path, n_features=n_features)
    except SvmlightFormatError as exc:
        raise ShardError(f"shard {index} ({exc.source}), line {exc.lineno}: {exc.problem}",
                         index, str(exc.source), exc.lineno) from None
    except (CorruptFileError, OSError) as exc:
        raise ShardError(f"shard {index} ({path}): {exc}", index, str(path)) from None


def _loss_of_file(X, y, cls, n_features, weight, options, index, source):
    import scipy.sparse as sp

    if X.shape[1] < n_features:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    try:
        loss = cls(X, y, **options)
    except (TypeError, ValueError) as exc:
        raise ShardError(f"shard {index} ({source}): {exc}", index, source) from None
    loss.c = np.full(X.shape[0], weight)  # the whole problem's weights: 1/m of all shards
    return _check_shard(loss, index, source)


class _ShardActor:
    """A shard on its worker (a Dask actor: calls go straight to the worker, not through the
    scheduler). Holds the shard's loss and its open lines; answers with O(d) or O(1) numbers."""

    def __init__(self, index, source, loss=None, file=None, make=None):
        # never raises: an actor whose construction fails was seen to leave its worker's
        # actor calls hanging (dask 2026.8); the checks run in ``start``
        self.index, self.source = index, source
        self.loss, self._raw, self._file, self._make = loss, None, file, make
        self._lines = {}

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
        path, n_features = self._file
        self._raw = _read_svmlight(path, self.index, n_features)
        return self._raw[0].shape

    def build(self, cls, n_features, weight, options):
        X, y = self._raw
        self.loss = _loss_of_file(X, y, cls, n_features, weight, options, self.index,
                                  self.source)
        self._raw = None
        return self.info()

    def info(self):
        return {"m": int(self.loss.m), "dim": int(self.loss.dim), "digest": _digest(self.loss)}

    def ping(self):
        return self.loss is not None

    def kind(self):
        return type(self.loss)

    # oracle
    def value(self, w):
        return float(self.loss._value(w))

    def value_and_subgradient(self, w):
        r, a = self.loss._value_and_subgradient(w)
        return float(r), a

    def sup_subgradient(self, w, p):
        s, g = self.loss._sup_subgradient(w, p)
        return float(s), g

    # lines, kept here by key
    def open_line(self, key, w, p, drop=()):
        for k in drop:  # lines the driver no longer holds
            self._lines.pop(k, None)
        self._lines[key] = [self.loss._restrict(w, p), None]
        return True

    def line_value(self, key, eta):
        return float(self._lines[key][0].value(eta))

    def line_derivative(self, key, eta, side):
        return float(self._lines[key][0].derivative(eta, side))

    def line_breakpoints(self, key):
        entry = self._lines[key]
        if entry[1] is None:
            bps = entry[0].breakpoints()
            entry[1] = None if bps is None else np.asarray(bps, dtype=np.float64)
        return entry[1]



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
    """

    lower_bound = 0.0
    #: how many times one call may rebuild lost shards before giving up (:class:`ShardsLost`)
    max_rebuilds = 3
    #: seconds a live shard has to answer a ping after a failed call
    ping_timeout = 30.0

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

    @property
    def n_rebuilds(self) -> int:
        return self._n_rebuilds

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
    def _map(self, method: str, *args):
        """``[shard_k.method(*args) for k]`` run on the workers in parallel, returned in
        shard order; lost shards are rebuilt and the call repeated (:class:`ShardsLost` when
        that is impossible)."""
        error = None
        for _ in range(self.max_rebuilds + 1):
            self._n_calls += 1
            pending = [getattr(s.actor, method)(*args) for s in self._shards]
            try:
                return _results(pending)
            except ShardError:
                raise
            except Exception as exc:  # a lost worker, or an error of the loss itself
                error = exc
            if not self._rebuild_lost():
                raise error  # every shard is alive: the loss itself failed
        raise ShardsLost(f"shards were lost {self.max_rebuilds + 1} times in one call; "
                         f"last: {type(error).__name__}: {error}") from error

    def _alive(self, s: _Shard) -> bool:
        try:
            return bool(s.actor.ping().result(timeout=self.ping_timeout))
        except Exception:
            return False

    def _rebuild_lost(self) -> bool:
        """Build again every shard that does not answer; False if all answer."""
        gone = [s for s in self._shards if not self._alive(s)]
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
            for key, line in list(self._open_lines.items()):  # reopen the live lines
                s.actor.open_line(key, line.w, line.p).result()
            self._n_rebuilds += 1
        return True

    # --- oracle ----------------------------------------------------------------------------
    def _value(self, w):
        return _ordered_sum(self._map("value", w))

    def _value_and_subgradient(self, w):
        parts = self._map("value_and_subgradient", w)
        r, a = 0.0, np.zeros(self.dim)
        for rk, ak in parts:  # shard order
            r += rk
            a += ak
        return r, a

    def _sup_subgradient(self, w, p):
        parts = self._map("sup_subgradient", w, p)
        s, g = 0.0, np.zeros(self.dim)
        for sk, gk in parts:
            s += sk
            g += gk
        return s, g

    def _restrict(self, w, p):
        self._next_line += 1
        return ShardedLine(self, w, p, self._next_line)

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


class ShardedLine(LineFunction):
    r""":math:`\varphi(\eta) = \sum_k \varphi_k(\eta)`, each :math:`\varphi_k` kept on the worker
    of shard ``k`` with its :math:`X_k w` and :math:`X_k p`: a value or a one-sided derivative
    moves one float per shard. ``breakpoints`` gathers the shards' kinks once (O(m) floats;
    the exact line search of :meth:`LineFunction.minimize` then bisects over them with
    O(log m) derivative round trips)."""

    cheap_derivative = True

    def __init__(self, loss: ShardedLoss, w: np.ndarray, p: np.ndarray, key: int):
        self.loss, self.key = loss, key
        # the driver keeps w and p only to reopen the line on a rebuilt shard
        self.w, self.p = np.array(w, dtype=np.float64), np.array(p, dtype=np.float64)
        self._bps = None
        # lines the driver dropped are closed on the workers with the next opening (no
        # finalizer: one could run on the client's event-loop thread and block it)
        live = set(loss._open_lines.keys())
        drop = [k for k in loss._opened if k not in live]
        loss._map("open_line", key, self.w, self.p, drop)
        loss._opened = [k for k in loss._opened if k in live] + [key]
        loss._open_lines[key] = self

    def value(self, eta):
        return _ordered_sum(self.loss._map("line_value", self.key, float(eta)))

    def derivative(self, eta, side=1):
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side}")
        return _ordered_sum(self.loss._map("line_derivative", self.key, float(eta),
                                           int(side)))

    def breakpoints(self):
        if self._bps is None:
            parts = self.loss._map("line_breakpoints", self.key)
            if any(b is None for b in parts):
                return None
            merged = np.concatenate(parts)
            merged.sort()
            self._bps = merged
        return self._bps


# ----------------------------------------------------------------------------------------
# builders
# ----------------------------------------------------------------------------------------
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
        raise ValueError("the Dask cluster has no workers")
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


def load_svmlight(paths, loss="Hinge", reg=None, lam: float = 1e-4, client=None, *,
                  n_features: int | None = None, **loss_options) -> RegularizedRisk:
    r"""A sharded regularized risk read from svmlight files on the workers, one shard per file.

    Parameters
    ----------
    paths : str, os.PathLike or a sequence of them
        The files (any compression :func:`nsopt.io.load_svmlight` reads), one shard each, in
        this order; every worker must see them at the same path. The driver never reads them.
    loss : str or ScalarLoss subclass, default "Hinge"
        The loss of each example (``"Hinge"``, ``"Logistic"``, ``nsopt.losses.SquaredHinge``...).
    reg : Regularizer, default L2()
    lam : float > 0
    client : distributed.Client or str, optional
        As in :func:`shard`.
    n_features : int, optional
        Number of features; default: the largest index over all files (agreed after every
        file is read: each shard is then widened to it).
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
        refuses), naming the shard, the file and, for a line, its number.
    """
    cls = _loss_class(loss)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("paths is empty: give at least one svmlight file")
    client, workers, owns = _client_and_workers(client)
    try:
        actors = [_start_actor(client, workers[k % len(workers)], k, p, file=(p, n_features))
                  for k, p in enumerate(paths)]
        shapes = _results([a.read() for a in actors])
        m_total = sum(m for m, _ in shapes)
        d = n_features if n_features is not None else max(dk for _, dk in shapes)
        weight = 1.0 / m_total
        infos = _results([a.build(cls, d, weight, loss_options) for a in actors])
        shards = [_Shard(k, a, _read_again(client, paths[k], k, n_features, cls, d, weight,
                                           loss_options), info["m"], info["digest"], paths[k])
                  for k, (a, info) in enumerate(zip(actors, infos))]
    except BaseException:
        if owns:
            client.close()
        raise
    sharded = ShardedLoss(client, shards, d, cls, owns_client=owns)
    for name, value in loss_options.items():
        setattr(sharded, name, value)
    return RegularizedRisk(sharded, reg, lam)


def _read_again(client, path, k, n_features, cls, d, weight, options):
    def remake():
        actor = _start_actor(client, None, k, path, file=(path, n_features))
        actor.read().result()
        return actor, actor.build(cls, d, weight, options).result()
    return remake


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
