r"""PlaneBundle: the one place where cutting planes are stored.

A cutting plane of the risk :math:`R` at :math:`w_i` is :math:`R(v) \ge \langle a_i, v\rangle + b_i`
with :math:`a_i \in \partial R(w_i)` and :math:`b_i = R(w_i) - \langle a_i, w_i\rangle`
([TVSL10]_ Alg. 2, l. 4). The bundle keeps the slopes, their offsets ``b``, an inactivity
counter ``age`` per plane and the Gram matrix :math:`G_{ij} = a_i^T M a_j` (dense, n x n) kept
current at O(n d) per :meth:`add`, where ``M`` is the metric of a quadratic regularizer
(identity for L2, :math:`Q^{-1}` for ``QuadraticForm``).

Storage follows the size: while ``capacity x d`` doubles fit in ``dense_limit`` bytes (32 MB)
the slopes are rows of one preallocated array; beyond, a list of per-plane rows, each kept
sparse (indices and values) when at most a quarter of it is nonzero. So d = 10^6 sparse
features with 10^4 nonzeros per slope cost about 160 kB per plane, not 8 MB, and nothing is
preallocated. Readers use :meth:`combine` / :meth:`rmatvec` (:math:`A^T\alpha`) and
:meth:`matvec` (:math:`Aw`); ``A`` and ``MA`` materialise dense copies (the LP and smooth
backends only).

Evidence ([DESIGN.md sec. 5, "Certificates are shared"]): with ``evidence="dual"`` (margin
losses) every plane carries the dual vector :math:`t` (one value per example) whose
:meth:`~nsopt.losses.ScalarLoss.dual_plane` it is; with ``evidence="points"`` a recipe, a sparse
weight vector over a store of query points (key ``-1``: the loss's floor plane). Both are
combined, aggregated, dropped and permuted exactly like the slopes, so :meth:`evidence` turns
multipliers into a :class:`~nsopt.certificate.DualPoint` or
:class:`~nsopt.certificate.QueryPoints` that :meth:`~nsopt.certificate.Certificate.check`
verifies from the data. Cost: ``dual``, n x m floats; ``points``, one d-vector per query point
still referenced by some plane (an aggregate references every point it absorbed, so under
aggregation the store grows by one d-vector per iteration; freed when no plane references it).

Multiple cutting-plane models ([UF12]_ Sec. 3.3, P-BMRM): when the risk is a sum
:math:`R = \sum_{p=1}^P R_p` (e.g. one part per group of examples), every plane carries the index
``block`` of the part :math:`R_p` it bounds, and the model is
:math:`\sum_p \max_{i:\ \mathrm{block}_i = p} \langle a_i, w\rangle + b_i`, tighter than the single
model over the summed planes. Its master dual is over a product of ``n_blocks`` simplices, one per
model (each block's multipliers are ``>= 0`` and sum to 1); the backends of :mod:`nsopt.inner`
read ``bundle.block`` and ``bundle.n_blocks``. With ``n_blocks=1`` (the default) everything is the
single model of [TVSL10]_.

Every solver of the BMRM family, and the plane certifier, uses this class; none indexes its
arrays directly.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010.
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   CVWW 2012. Sec. 3.3 (multiple cutting-plane models).
"""
from __future__ import annotations

import math
import numbers
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .certificate import DualPoint
from .regularizers import own_scaled_conjugate, scaled_conjugate

__all__ = ["PlaneBundle"]

#: dense row storage while capacity x d floats fit in this many bytes
DENSE_LIMIT = 32 * 2 ** 20
#: in list storage, a slope with at most this fraction of nonzeros is kept sparse
SPARSE_DENSITY = 0.25


class _Sparse:
    """A sparse d-vector: sorted unique ``idx`` and ``val``."""

    __slots__ = ("idx", "val", "size")

    def __init__(self, idx, val, size):
        self.idx, self.val, self.size = idx, val, size

    def toarray(self):
        out = np.zeros(self.size)
        out[self.idx] = self.val
        return out


def _as_row(a, size, sparse_ok):
    if sp.issparse(a):
        a = a.tocsr() if a.shape[0] == 1 else a.T.tocsr()
        a.sum_duplicates()
        idx, val = a.indices.astype(np.int64), a.data.astype(np.float64)
        order = np.argsort(idx)
        row = _Sparse(idx[order], val[order], size)
        return row if sparse_ok else row.toarray()
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    if sparse_ok:
        idx = np.flatnonzero(a)
        if idx.size <= SPARSE_DENSITY * size:
            return _Sparse(idx, a[idx], size)
    return np.array(a, dtype=np.float64)


def _dot(r, s) -> float:
    if isinstance(r, _Sparse):
        if isinstance(s, _Sparse):
            _, i, j = np.intersect1d(r.idx, s.idx, assume_unique=True, return_indices=True)
            return float(r.val[i] @ s.val[j])
        return float(r.val @ s[r.idx])
    if isinstance(s, _Sparse):
        return float(s.val @ r[s.idx])
    return float(r @ s)


def _axpy(out, c, r) -> None:
    if isinstance(r, _Sparse):
        out[r.idx] += c * r.val
    else:
        out += c * r


class PlaneBundle:
    """Cutting planes ``(a_i, b_i)`` with their Gram matrix, inactivity counters, models and
    evidence.

    Parameters
    ----------
    dim : int
        Dimension of the planes' slopes.
    metric : callable ``a -> M a``, optional
        The metric of the Gram matrix; identity when omitted.
    capacity : int
        Initial storage; it doubles when full (a hard cap is the solver's ``max_planes``).
        Rows of d floats are preallocated only while ``capacity * d * 8 <= dense_limit``.
    n_blocks : int, default 1
        Number of cutting-plane models ``P`` ([UF12]_ Sec. 3.3): plane ``i`` belongs to model
        ``block[i]`` in ``[0, n_blocks)``, and the multipliers of the master dual sum to 1 within
        each model. ``1`` is the single model.
    evidence : {None, "dual", "points"}
        What each plane carries to prove itself (module docstring); ``"dual"`` needs
        ``n_examples``.
    n_examples : int, optional
        Length of the dual vectors (``evidence="dual"``).
    dense_limit : int
        Bytes of preallocated dense rows before switching to list storage.
    gram : bool, default True
        Keep the Gram matrix :attr:`G` (the master QPs read it). False: no Gram matrix at all
        (a method that reads only slopes and offsets, such as the level bundle's LP and
        projection, saves its O(n d) per plane and the O(n^2) copy per drop); :attr:`G` then
        raises ``AttributeError``.

    Attributes
    ----------
    n : int
        Number of planes.
    n_fixed : int
        Leading planes that :meth:`drop`, :meth:`aggregate` and :meth:`compress` never remove
        (e.g. the loss's floor, one per model).
    n_blocks : int
        Number of models.
    """

    def __init__(self, dim: int, metric: Callable[[np.ndarray], np.ndarray] | None = None,
                 capacity: int = 32, n_blocks: int = 1, evidence: str | None = None,
                 n_examples: int | None = None, dense_limit: int = DENSE_LIMIT,
                 gram: bool = True):
        if not isinstance(n_blocks, numbers.Integral) or isinstance(n_blocks, bool) or n_blocks < 1:
            raise ValueError(f"n_blocks must be an integer >= 1, got {n_blocks!r}")
        if evidence not in (None, "dual", "points"):
            raise ValueError(f"evidence must be None, 'dual' or 'points', got {evidence!r}")
        if evidence == "dual" and n_examples is None:
            raise ValueError("evidence='dual' needs n_examples (the length of the dual vectors)")
        self.dim = int(dim)
        self.metric = metric
        self.n_blocks = int(n_blocks)
        self.evidence_kind = evidence
        self.n_examples = None if n_examples is None else int(n_examples)
        self.dense_limit = int(dense_limit)
        capacity = max(int(capacity), 2)
        if capacity * self.dim * 8 <= self.dense_limit:
            self._A = np.zeros((capacity, self.dim))
            self._MA = self._A if metric is None else np.zeros((capacity, self.dim))
            self._rows = self._mrows = None
        else:
            self._A = self._MA = None
            self._rows, self._mrows = [], ([] if metric is not None else None)
        self._b = np.zeros(capacity)
        self._age = np.zeros(capacity, dtype=np.int64)
        self._block = np.zeros(capacity, dtype=np.int64)
        self._G = np.zeros((capacity, capacity)) if gram else None
        self._ev: list = []          # per plane: dual vector, recipe {point id: weight}, or None
        self._points: dict = {}      # query-point store (evidence="points")
        self._refs: dict = {}
        self._next_id = 0
        self._dense = None           # cached dense (A, MA) in list storage
        self.n = 0
        self.n_fixed = 0  # leading planes that drop/compress never remove (e.g. the loss's floor)

    # --- views (read-only by convention) ------------------------------------------------
    @property
    def sparse_storage(self) -> bool:
        """True when the slopes are kept as a list of (possibly sparse) rows."""
        return self._A is None

    def _dense_views(self):
        if self._dense is None:
            A = np.zeros((self.n, self.dim))
            for i, r in enumerate(self._rows):
                _axpy(A[i], 1.0, r)
            if self.metric is None:
                MA = A
            else:
                MA = np.zeros((self.n, self.dim))
                for i, r in enumerate(self._mrows):
                    _axpy(MA[i], 1.0, r)
            self._dense = (A, MA)
        return self._dense

    @property
    def A(self) -> np.ndarray:
        """Slopes, one plane per row (n x d; a dense copy in list storage: prefer
        :meth:`matvec` / :meth:`rmatvec`)."""
        return self._A[: self.n] if self._A is not None else self._dense_views()[0]

    @property
    def MA(self) -> np.ndarray:
        """Slopes mapped by the metric, ``M a_i`` per row (n x d; see :attr:`A`)."""
        return self._MA[: self.n] if self._MA is not None else self._dense_views()[1]

    @property
    def b(self) -> np.ndarray:
        return self._b[: self.n]

    @property
    def age(self) -> np.ndarray:
        return self._age[: self.n]

    @property
    def block(self) -> np.ndarray:
        """Model index of every plane (int, length n, values in ``[0, n_blocks)``)."""
        return self._block[: self.n]

    @property
    def G(self) -> np.ndarray:
        """Gram matrix ``A M A^T`` (n x n)."""
        if self._G is None:
            raise AttributeError("this PlaneBundle keeps no Gram matrix (gram=False)")
        return self._G[: self.n, : self.n]

    def __len__(self) -> int:
        return self.n

    def rows(self, start: int = 0):
        """Copies of the slopes of planes ``start..n-1``: a dense array in row storage, a
        scipy.sparse CSR matrix in list storage (no dense n x d copy)."""
        if self._A is not None:
            return self._A[start: self.n].copy()
        data, indices, indptr = [], [], [0]
        for r in self._rows[start:]:
            if isinstance(r, _Sparse):
                idx, val = r.idx, r.val
            else:
                idx = np.flatnonzero(r)
                val = r[idx]
            indices.append(idx); data.append(val); indptr.append(indptr[-1] + idx.size)
        cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
        return sp.csr_matrix((cat(data, np.float64), cat(indices, np.int64), np.array(indptr)),
                             shape=(self.n - start, self.dim))

    # --- products ---------------------------------------------------------------------
    def matvec(self, w: np.ndarray) -> np.ndarray:
        """``A w`` (length n)."""
        if self._A is not None:
            return self._A[: self.n] @ w
        return np.array([_dot(r, w) for r in self._rows], dtype=np.float64).reshape(self.n)

    def rmatvec(self, alpha: np.ndarray, metric: bool = False) -> np.ndarray:
        """``A^T alpha`` (or ``(M A)^T alpha`` with ``metric=True``), a dense d-vector,
        summed over the support of ``alpha``."""
        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        support = alpha.nonzero()[0]
        if self._A is not None:
            M = self._MA if metric else self._A
            return alpha[support] @ M[support] if support.size else np.zeros(self.dim)
        rows = self._mrows if (metric and self.metric is not None) else self._rows
        out = np.zeros(self.dim)
        for i in support:
            _axpy(out, alpha[i], rows[i])
        return out

    # --- mutation -----------------------------------------------------------------------
    def _check_block(self, block) -> int:
        if (not isinstance(block, numbers.Integral) or isinstance(block, bool)
                or not 0 <= block < self.n_blocks):
            raise ValueError(
                f"block must be an integer in [0, {self.n_blocks}) (the bundle has n_blocks = "
                f"{self.n_blocks} models), got {block!r}"
            )
        return int(block)

    def _grow(self) -> None:
        cap = 2 * self._b.shape[0]
        n = self.n
        if self._A is not None:
            if cap * self.dim * 8 <= self.dense_limit:
                A = np.zeros((cap, self.dim)); A[:n] = self.A
                if self.metric is None:
                    MA = A
                else:
                    MA = np.zeros((cap, self.dim)); MA[:n] = self.MA
                self._A, self._MA = A, MA
            else:  # switch to list storage
                self._rows = [_as_row(self._A[i], self.dim, True) for i in range(n)]
                if self.metric is not None:
                    self._mrows = [_as_row(self._MA[i], self.dim, True) for i in range(n)]
                self._A = self._MA = None
        b = np.zeros(cap); b[:n] = self.b
        age = np.zeros(cap, dtype=np.int64); age[:n] = self.age
        block = np.zeros(cap, dtype=np.int64); block[:n] = self.block
        if self._G is not None:
            G = np.zeros((cap, cap)); G[:n, :n] = self.G
            self._G = G
        self._b, self._age, self._block = b, age, block

    def _ref(self, recipe, step: int) -> None:
        if not isinstance(recipe, dict):
            return
        for key in recipe:
            if key < 0:
                continue
            left = self._refs[key] + step
            if left <= 0:
                del self._refs[key], self._points[key]
            else:
                self._refs[key] = left

    def add(self, a, b: float, block: int = 0, evidence=None) -> int:
        """Append the plane ``<a, v> + b`` of model ``block``; return its index.

        ``a`` may be dense or a scipy.sparse vector. ``evidence`` is the plane's proof (a dual
        vector with ``evidence="dual"``, a recipe ``{point id: weight}`` with ``"points"``;
        None: the plane is unproven, e.g. a user's warm-start plane). Costs O(n nnz(a)) for the
        Gram row. ``block`` outside ``[0, n_blocks)`` is a ``ValueError``.
        """
        block = self._check_block(block)
        if self.n == self._b.shape[0]:
            self._grow()
        i = self.n
        if self._A is not None:
            self._A[i] = a.toarray().reshape(-1) if sp.issparse(a) else a
            if self.metric is not None:
                self._MA[i] = self.metric(np.array(self._A[i]))
            row = self._A[: i + 1] @ self._MA[i] if self._G is not None else None
        else:
            r = _as_row(a, self.dim, True)
            self._rows.append(r)
            if self.metric is not None:
                dense = r.toarray() if isinstance(r, _Sparse) else r
                self._mrows.append(_as_row(self.metric(dense), self.dim, True))
                mr = self._mrows[i]
            else:
                mr = r
            row = (np.array([_dot(s, mr) for s in self._rows]) if self._G is not None
                   else None)
            self._dense = None
        self._b[i] = b
        self._age[i] = 0
        self._block[i] = block
        if row is not None:
            self._G[i, : i + 1] = row
            self._G[: i + 1, i] = row
        if self.evidence_kind == "dual" and evidence is not None:
            evidence = np.asarray(evidence, dtype=np.float64)
        self._ev.append(evidence)
        self._ref(evidence, +1)
        self.n = i + 1
        return i

    def add_many(self, A: np.ndarray, b: np.ndarray, block: int = 0,
                 evidence: list | None = None) -> np.ndarray:
        """Append the k planes ``<A_j, v> + b_j`` of model ``block`` at once (dense ``A``,
        k x d); return their indices. The same bundle as k calls of :meth:`add` in order
        (the same slopes, offsets, evidence, and Gram entries computed by the same products),
        without k times the per-call overhead. ``evidence``: one entry per plane (None: all
        unproven). In list storage it is :meth:`add` in a loop."""
        block = self._check_block(block)
        A = np.asarray(A, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64).reshape(-1)
        k = b.shape[0]
        if A.shape != (k, self.dim):
            raise ValueError(f"A must have shape ({k}, {self.dim}) (one row per offset in b), "
                             f"got {A.shape}")
        if evidence is None:
            evidence = [None] * k
        elif len(evidence) != k:
            raise ValueError(f"evidence must have one entry per plane ({k}), got {len(evidence)}")
        if self.evidence_kind == "dual":
            evidence = [None if ev is None else np.asarray(ev, dtype=np.float64)
                        for ev in evidence]
        while self._A is not None and self.n + k > self._b.shape[0]:
            self._grow()
        if self._A is None:
            return np.array([self.add(A[j], float(b[j]), block, evidence[j]) for j in range(k)],
                            dtype=np.int64)
        n = self.n
        self._A[n: n + k] = A
        if self.metric is not None:
            for j in range(k):
                self._MA[n + j] = self.metric(np.array(self._A[n + j]))
        for j in range(k if self._G is not None else 0):
            i = n + j           # add()'s product per row: the same Gram entries, bit for bit
            row = self._A[: i + 1] @ self._MA[i]
            self._G[i, : i + 1] = row
            self._G[: i + 1, i] = row
        self._b[n: n + k] = b
        self._age[n: n + k] = 0
        self._block[n: n + k] = block
        self._ev.extend(evidence)
        for ev in evidence:
            self._ref(ev, +1)
        self.n = n + k
        return np.arange(n, n + k)

    def add_fixed(self, a: np.ndarray, b: float, block: int = 0, evidence=None) -> int:
        """Add a plane of model ``block`` that is never dropped or aggregated (only before any
        ordinary plane; with several models, typically one floor plane per model)."""
        if self.n != self.n_fixed:
            raise RuntimeError("fixed planes must be added before any other plane")
        i = self.add(a, b, block, evidence)
        self.n_fixed += 1
        return i

    def add_floor(self, value: float, block: int = 0, fixed: bool = True) -> int:
        """The loss's floor plane :math:`R \\ge` ``value`` (slope 0), with its evidence: the
        dual point 0 (margin losses, whose floor is 0 = b(0)) or the recipe ``{-1: 1}``."""
        ev = None
        if self.evidence_kind == "dual" and value == 0.0:
            ev = np.zeros(self.n_examples)
        elif self.evidence_kind == "points":
            ev = {-1: 1.0}
        zero = np.zeros(self.dim) if self._A is not None else sp.csr_matrix((1, self.dim))
        if fixed:
            return self.add_fixed(zero, float(value), block, ev)
        return self.add(zero, float(value), block, ev)

    def add_at(self, w: np.ndarray, value: float, a: np.ndarray, block: int = 0,
               dual: np.ndarray | None = None) -> int:
        """Add the plane of model ``block`` of a function with ``value`` and subgradient ``a``
        at ``w``; ``dual``: its dual vector (``evidence="dual"``). With ``evidence="points"``,
        ``w`` is kept (by reference: do not mutate it) as the plane's query point."""
        ev = None
        if self.evidence_kind == "dual":
            ev = dual
        elif self.evidence_kind == "points":
            key = self._next_id
            self._next_id += 1
            self._points[key] = w
            self._refs[key] = 0
            ev = {key: 1.0}
        slope_w = float(a @ w) if not sp.issparse(a) else float((a @ w).sum())
        return self.add(a, float(value) - slope_w, block, ev)

    def add_minorant(self, w: np.ndarray, row: int, a: np.ndarray, b: float) -> int:
        """Add row ``row`` of the oracle's extra minorants at ``w``, the plane ``<a, v> + b``
        (:meth:`nsopt.Oracle.minorants`); with ``evidence="points"`` its query point is kept as
        the pair ``(w, row)``, which :meth:`nsopt.certificate.OraclePlanes.tagged` reads."""
        ev = None
        if self.evidence_kind == "points":
            key = self._next_id
            self._next_id += 1
            self._points[key] = (w, int(row))
            self._refs[key] = 0
            ev = {key: 1.0}
        return self.add(a, float(b), 0, ev)

    def add_minorants(self, w: np.ndarray, rows, A: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Rows ``rows`` of the oracle's extra minorants at ``w``, the planes ``<A_j, v> + b_j``,
        at once (:meth:`add_many`): the same bundle as :meth:`add_minorant` per row in order."""
        rows = [int(j) for j in rows]
        ev = None
        if self.evidence_kind == "points":
            ev = []
            for j in rows:
                key = self._next_id
                self._next_id += 1
                self._points[key] = (w, j)
                self._refs[key] = 0
                ev.append({key: 1.0})
        return self.add_many(A, b, 0, ev)

    def _take(self, order: np.ndarray, k: int) -> None:
        """Keep planes ``order`` (old indices) as the first ``k``; release dropped evidence."""
        dropped = np.ones(self.n, dtype=bool)
        dropped[order] = False
        for j in np.flatnonzero(dropped).tolist():
            self._ref(self._ev[j], -1)
        self._ev = [self._ev[j] for j in order]
        if self._A is not None:
            self._A[:k] = self._A[order]
            if self.metric is not None:
                self._MA[:k] = self._MA[order]
        else:
            self._rows = [self._rows[j] for j in order]
            if self.metric is not None:
                self._mrows = [self._mrows[j] for j in order]
            self._dense = None
        self._b[:k] = self._b[order]
        self._age[:k] = self._age[order]
        self._block[:k] = self._block[order]
        if self._G is not None:
            self._G[:k, :k] = self._G[np.ix_(order, order)]
        self.n = k

    def drop(self, mask: np.ndarray) -> np.ndarray:
        """Remove the planes where ``mask`` is True; return the kept indices (old numbering)."""
        mask = np.array(mask, dtype=bool)
        mask[: self.n_fixed] = False
        keep = np.flatnonzero(~mask)
        if keep.size == self.n:
            return keep
        self._take(keep, keep.size)
        return keep

    def _combine_evidence(self, weights: np.ndarray, index: np.ndarray):
        """The evidence of ``sum_k weights_k plane_{index_k}`` (None if a weighted plane has
        none)."""
        if self.evidence_kind is None:
            return None
        parts = [(float(c), self._ev[int(i)]) for c, i in zip(weights, index) if c != 0.0]
        if any(ev is None for _, ev in parts):
            return None
        if self.evidence_kind == "dual":
            t = np.zeros(self.n_examples)
            for c, ev in parts:
                t += c * ev
            return t
        recipe: dict = {}
        for c, ev in parts:
            for key, v in ev.items():
                recipe[key] = recipe.get(key, 0.0) + c * v
        return recipe

    def aggregate(self, alpha: np.ndarray, index=None) -> tuple[np.ndarray, float, float]:
        r"""Kiwiel's aggregation ([TVSL10]_ Sec. 3.1): the planes in ``index`` (all when None)
        become one plane :math:`(\hat a, \hat b) = \sum_{i \in I} \alpha_i (a_i, b_i) / \hat\alpha`.

        Returns ``(a_hat, b_hat, alpha_hat)``; the aggregated plane is stored last, and the
        matching multiplier vector (for a warm start) is the old one restricted to the kept
        planes followed by ``alpha_hat``. Any convex combination of cutting planes is a
        cutting plane, so the model stays a lower bound; its evidence is the same combination
        of the planes' evidence.

        With several models the planes in ``index`` must all belong to one model (a
        ``ValueError`` otherwise): the weights :math:`\alpha_i / \hat\alpha` are then renormalised
        within that model, the aggregate is a cutting plane of that model's part :math:`R_p` and
        belongs to the same block, and ``alpha_hat`` keeps the block's multipliers summing to 1.
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        idx = np.arange(self.n) if index is None else np.asarray(index)
        if idx.size == 0:
            raise ValueError("aggregate needs at least one plane in index")
        labels = np.unique(self._block[idx])
        if labels.size > 1:
            raise ValueError(
                f"aggregate combines planes of one model only; index holds planes of models "
                f"{labels.tolist()} (a convex combination across models is not a plane of either)"
            )
        weights = np.maximum(alpha[idx], 0.0)
        alpha_hat = float(alpha[idx].sum())
        total = float(weights.sum())
        weights = np.full(idx.size, 1.0 / idx.size) if total <= 0 else weights / total
        full = np.zeros(self.n)
        full[idx] = weights
        a_hat = self.rmatvec(full)
        b_hat = float(weights @ self._b[idx])
        ev = self._combine_evidence(weights, idx)
        # add first (the aggregate takes its references), then drop the parts
        self.add(a_hat, b_hat, int(labels[0]), ev)
        mask = np.zeros(self.n, dtype=bool)
        mask[idx] = True
        self.drop(mask)
        return a_hat, b_hat, alpha_hat

    def compress(self, alpha: np.ndarray, max_planes: int, keep_newest: int | None = None,
                 block: int = 0) -> np.ndarray:
        """Make room for one more plane when the bundle is full, keeping the dual value.

        ``max_planes`` is the capacity of the whole bundle when ``n_blocks == 1`` and of EACH
        model when ``n_blocks > 1``: room is then made in model ``block`` (that of the plane
        about to be added), which is full when it holds ``max_planes`` planes (fixed ones
        included); only its planes are dropped or aggregated, the other models are untouched.

        With ``keep_newest=None`` (BMRM's policy) planes with zero multiplier are dropped first
        (they do not enter ``D(alpha)``) and, if still full, the older half of the non-fixed
        planes is aggregated into one. With ``keep_newest=k`` (the k-bundle policy, [TVSL10]_
        Sec. 3.1) every non-fixed plane but the ``k`` newest is aggregated into one, placed
        first (at the place of the oldest plane it replaces). Either way ``D`` at the returned
        multipliers equals ``D(alpha)`` ([TVSL10]_ Sec. 3.1, Alg. 4), those multipliers are
        aligned with the new planes, and each model's multipliers keep their sum.
        """
        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        block = self._check_block(block)
        multi = self.n_blocks > 1
        in_block = (self.block == block) if multi else np.ones(self.n, dtype=bool)
        if int(np.count_nonzero(in_block)) < max_planes:
            return alpha
        fixed = np.arange(self.n) < self.n_fixed
        if keep_newest is None:
            keep = self.drop(in_block & (alpha <= 0.0))
            alpha = alpha[keep]
            in_block = in_block[keep]
            fixed = fixed[keep]
            if int(np.count_nonzero(in_block)) < max_planes:
                return alpha
            movable = np.flatnonzero(in_block & ~fixed)
            n_old = max(2, movable.size // 2)
            if movable.size < 2:
                raise ValueError(
                    f"cannot make room in model {block}: it has {movable.size} non-fixed plane(s) "
                    f"and max_planes = {max_planes}")
        else:
            movable = np.flatnonzero(in_block & ~fixed)
            n_old = movable.size - int(keep_newest)
            if n_old < 1:
                raise ValueError("nothing to aggregate: keep_newest leaves no old plane")
        index = movable[:n_old]
        rest = np.ones(self.n, dtype=bool)
        rest[index] = False
        _, _, alpha_hat = self.aggregate(alpha, index)
        alpha = np.concatenate([alpha[rest], [alpha_hat]])
        # move the aggregate (stored last) to where the oldest plane it replaces was
        first = int(np.count_nonzero(rest[: index[0]]))
        order = np.concatenate([np.arange(first), [self.n - 1], np.arange(first, self.n - 1)])
        self._permute(order)
        return alpha[order]

    def _permute(self, order: np.ndarray) -> None:
        self._take(np.asarray(order), self.n)

    def update_ages(self, alpha: np.ndarray, tol: float = 0.0) -> None:
        """Reset the age of planes with multiplier > tol, increment the others'."""
        active = np.asarray(alpha)[: self.n] > tol
        self._age[: self.n] = np.where(active, 0, self._age[: self.n] + 1)

    # --- evaluation ---------------------------------------------------------------------
    def combine(self, alpha: np.ndarray) -> tuple[np.ndarray, float]:
        r"""The combination ``(a_bar, b_bar) = (A^T alpha, b^T alpha)`` over all planes.

        For ``alpha`` on the simplex it is a convex combination of planes of :math:`R`, hence a
        plane of :math:`R`. With several models and ``alpha`` in the product of simplices it is
        :math:`\sum_p \sum_{i \in p} \alpha_i (a_i, b_i)`: each inner sum is a convex combination
        of planes of :math:`R_p`, hence a plane of :math:`R_p`, and the sum over ``p`` is a plane
        of :math:`R = \sum_p R_p`: the plain sum is right in both cases.
        """
        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        support = alpha.nonzero()[0]
        weights = alpha[support]
        if self._A is not None:     # rmatvec's product, on the support found once
            a_bar = weights @ self._A[support] if support.size else np.zeros(self.dim)
        else:
            a_bar = self.rmatvec(alpha)
        return a_bar, float(weights @ self.b[support])

    def model(self, w: np.ndarray) -> float:
        r"""The cutting-plane model at ``w``: :math:`\max_i \langle a_i, w\rangle + b_i`, or with
        several models :math:`\sum_p \max_{i \in p} \langle a_i, w\rangle + b_i` (``-inf`` when
        a model has no plane)."""
        if self.n == 0:
            return -np.inf
        values = self.matvec(w) + self.b
        if self.n_blocks == 1:
            return float(np.max(values))
        maxima = np.full(self.n_blocks, -np.inf)
        np.maximum.at(maxima, self.block, values)
        return float(maxima.sum())

    def lower_bound(self, reg, lam: float, alpha: np.ndarray) -> float:
        r"""The dual value :math:`\bar b - \lambda \Omega^*(-\bar a / \lambda)` at multipliers
        ``alpha`` on the simplex: a lower bound on :math:`\min_w \lambda\Omega(w) + R(w)` by weak
        duality, whatever the quality of ``alpha`` ([TVSL10]_ Thm. 2).

        With several models ``alpha`` must lie in the product of simplices (each model's
        multipliers ``>= 0``, summing to 1). The formula is unchanged: :meth:`combine` gives a
        plane :math:`(\bar a, \bar b)` of :math:`R = \sum_p R_p` (a sum over ``p`` of convex
        combinations of planes of :math:`R_p`), so :math:`\lambda\Omega(w) + R(w) \ge
        \lambda\Omega(w) + \langle\bar a, w\rangle + \bar b \ge \bar b - \lambda\Omega^*(-\bar
        a/\lambda)` for every ``w`` (Fenchel-Young).
        """
        a_bar, b_bar = self.combine(alpha)
        return b_bar - scaled_conjugate(reg, a_bar, lam)

    def feasible(self, alpha: np.ndarray) -> np.ndarray:
        """``alpha`` made exactly feasible: negatives clipped, each model's multipliers
        renormalised to sum 1 (a master solver's rounding would otherwise leak into bounds)."""
        alpha = np.maximum(np.asarray(alpha, dtype=np.float64)[: self.n], 0.0)
        sums = np.bincount(self.block, weights=alpha, minlength=self.n_blocks)
        if self.n_blocks == 1:  # one total: the same quotients without the n-vector of sums
            total = sums[0]
            return alpha / total if not total <= 0 else np.full(self.n, 1.0 / max(self.n, 1))
        if np.any(sums <= 0):
            return alpha
        return alpha / sums[self.block]

    def certify(self, reg, lam: float, alpha: np.ndarray):
        r"""The lower bound proven by ``alpha`` and its evidence: ``(value, a_bar, b_bar,
        evidence)``.

        ``alpha`` is first made feasible (:meth:`feasible`). With a conjugate that is an
        indicator (L1) and :math:`\bar a` outside the box by rounding, the plane is mixed with
        the floor plane (multiplier moved to the fixed planes), which keeps the bound finite.
        ``evidence`` is a :class:`~nsopt.certificate.DualPoint` or
        :class:`~nsopt.certificate.QueryPoints` (None without evidence or a planes' proof).
        ``a_bar`` is a 1 x d sparse row when the bundle stores sparse rows and it is sparse
        (:meth:`_compact`); the certificate makes it dense.
        """
        alpha = self.feasible(alpha)
        a_bar, b_bar = self.combine(alpha)
        with np.errstate(over="ignore", invalid="ignore"):
            value = float(b_bar - own_scaled_conjugate(reg, a_bar, lam))
        if not value > -math.inf and self.n_fixed and self.n_blocks == 1:
            n_coef = getattr(reg, "n_coef", None)  # intercepts: Omega acts on coef only
            amax = float(np.max(np.abs(a_bar if n_coef is None else a_bar[:n_coef]), initial=0.0))
            if amax > 0:
                tau = min(1.0, lam / amax) * (1.0 - 1e-12)
                alpha = tau * alpha
                alpha[0] += 1.0 - tau  # the floor plane (fixed, slope 0)
                a_bar, b_bar = self.combine(alpha)
                with np.errstate(over="ignore", invalid="ignore"):
                    value = float(b_bar - own_scaled_conjugate(reg, a_bar, lam))
        a_bar = self._compact(a_bar)
        if not value > -math.inf:
            return -math.inf, a_bar, b_bar, None
        return value, a_bar, b_bar, self.evidence(alpha, plane=(a_bar, b_bar))

    def _compact(self, a: np.ndarray):
        """``a`` as a 1 x d sparse row (``scipy.sparse.csr_array``) when the bundle keeps
        sparse rows and ``a`` is sparse enough: solvers keep their aggregate between steps
        (and the evidence keeps it as the certificate's plane), 8 MB dense at d = 10^6 where
        its support is that of the data's columns met. Else ``a`` itself."""
        if self._A is None:
            idx = np.flatnonzero(a)
            if idx.size <= SPARSE_DENSITY * self.dim:
                return sp.csr_array((a[idx], idx, np.array([0, idx.size])), shape=(1, self.dim))
        return a

    def query_point(self, i: int):
        """The query point whose own plane plane ``i`` is (``evidence="points"``: the plane
        :meth:`add_at` added there, so its slope is that point's subgradient as the oracle
        returned it), or None for an aggregate, a floor or a plane without evidence."""
        ev = self._ev[int(i)]
        if isinstance(ev, dict) and len(ev) == 1:
            (key, weight), = ev.items()
            if key >= 0 and weight == 1.0:
                return self._points[key]
        return None

    def query_points(self, index) -> list:
        """:meth:`query_point` of each plane in ``index`` (a list of ints), in one pass."""
        evs, points = self._ev, self._points
        out = []
        for i in index:
            ev, point = evs[i], None
            if isinstance(ev, dict) and len(ev) == 1:
                (key, weight), = ev.items()
                if key >= 0 and weight == 1.0:
                    point = points[key]
            out.append(point)
        return out

    def evidence(self, alpha: np.ndarray, plane=None):
        """The evidence of the combination ``alpha`` (feasible), or None when a plane with a
        positive multiplier has none. A dual point is returned deferred
        (:class:`_DeferredDualPoint`): its ``t``, O(n m) to form, is combined on first read
        (a certificate built or checked), not at every iteration's bound."""
        from .certificate import QueryPoints

        alpha = np.asarray(alpha, dtype=np.float64)[: self.n]
        index = alpha.nonzero()[0]
        if self.evidence_kind == "dual":
            # the sum over planes of n_examples-vectors costs about a data pass: deferred to
            # the first read of ``t`` (a certificate built or checked), the parts kept
            evs = self._ev
            parts = [(c, evs[i]) for c, i in zip(alpha[index].tolist(), index.tolist())]
            if any(ev is None for _, ev in parts):
                return None
            return _DeferredDualPoint(parts, self.n_examples, plane)
        ev = self._combine_evidence(alpha[index], index)
        if ev is None:
            return None
        keys = sorted(k for k in ev if k >= 0)
        where = {k: j for j, k in enumerate(keys)}
        weights = np.zeros((len(keys), self.n_blocks))
        floor = np.zeros(self.n_blocks)
        for c, i in zip(alpha[index], index):
            p = int(self._block[i])
            for k, v in self._ev[int(i)].items():
                if k < 0:
                    floor[p] += c * v
                else:
                    weights[where[k], p] += c * v
        return QueryPoints(tuple(self._points[k] for k in keys), weights, floor, plane=plane)



def _combine_dual(parts, n_examples: int) -> np.ndarray:
    """``sum_k c_k t_k`` over ``parts = [(c_k, t_k)]``, in their order (the same sums as
    :meth:`PlaneBundle._combine_evidence`)."""
    t = np.zeros(n_examples)
    for c, ev in parts:
        if c != 0.0:
            t += c * ev
    return t


class _DeferredDualPoint(DualPoint):
    """A :class:`~nsopt.certificate.DualPoint` whose ``t``, the multipliers' combination of
    the planes' dual vectors (O(n m), about a data pass), is formed on first read: a solver
    proves a bound every iteration, a certificate reads one. It keeps references to the
    planes' vectors until then (they are never mutated), and pickles or copies as the plain
    ``DualPoint`` it stands for."""

    def __init__(self, parts, n_examples, plane=None):  # noqa: the dataclass init is not run
        object.__setattr__(self, "_parts", tuple(parts))
        object.__setattr__(self, "_n_examples", int(n_examples))
        object.__setattr__(self, "plane", plane)

    @property
    def t(self) -> np.ndarray:
        t = self.__dict__.get("_t")
        if t is None:
            t = _combine_dual(self._parts, self._n_examples)
            object.__setattr__(self, "_t", t)
            object.__setattr__(self, "_parts", ())  # the planes' vectors are let go
        return t

    def __reduce__(self):
        return (DualPoint, (self.t, self.plane))

    def resolved(self) -> DualPoint:
        return DualPoint(self.t, self.plane)
