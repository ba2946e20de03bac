r"""Structured output losses: the margin-rescaled soft-margin loss ([TVSL10]_ eq. 24).

For an example :math:`(x, y)` with a joint feature map :math:`\phi(x, y) \in \mathbb{R}^d` and a
label loss :math:`\Delta(y, y') \ge 0` with :math:`\Delta(y, y) = 0`, the loss is

.. math::
    l(x, y, w) = \max_{y'} \Delta(y, y') + \langle w, \phi(x, y') - \phi(x, y)\rangle,
    \qquad \partial_w l \ni \phi(x, \bar y) - \phi(x, y),

with :math:`\bar y` a maximiser (Danskin; [UF12]_ eqs. 3-4), and the risk is the (weighted) mean
:math:`R(w) = \sum_i c_i\, l(x_i, y_i, w)`, :math:`c_i = 1/m` without sample weights. This is
the scaling :math:`\Gamma = 1` of [TVSL10]_ eq. (24) (margin rescaling, Taskar et al.). Since
:math:`y' = y` is a candidate and :math:`\Delta(y, y) = 0`, every :math:`l \ge 0`
(``lower_bound = 0``), and :math:`l` majorises the label loss of the prediction,
:math:`l(x, y, w) \ge \Delta(y, y^*)` with :math:`y^* = \arg\max_{y'} \langle w, \phi(x, y')\rangle`
([TVSL10]_ Sec. A.2).

* :class:`StructuredHinge`: user-supplied joint features and loss-augmented inference;
* :class:`ChainHinge`: sequence labelling with a first-order chain (emission and transition
  weights, normalised Hamming loss), loss-augmented inference by a compiled Viterbi.

Both split the examples into ``P`` contiguous groups for multiple cutting-plane models
([UF12]_ Sec. 3.3): ``groups(P)`` and ``group_value_and_subgradients(w, P)`` (the scalar
losses' signature and group boundaries), one pass giving all ``P`` partial risks and
subgradients, which sum to the risk's.

Lemma 8 of [TVSL10]_ (Joachims 2005 made simple): with :math:`\Gamma = 1` the sum of per-example
maxima equals the joint maximum over all labellings of the whole data set, so this risk is
the one-slack structural SVM's; it fails for slack rescaling.

References
----------
.. [TVSL10] C. H. Teo, S. V. N. Vishwanathan, A. J. Smola, Q. V. Le. Bundle methods for
   regularized risk minimization. JMLR 11:311-365, 2010. App. A.2, eq. (24), Lemma 8.
.. [UF12] M. Uřičář, V. Franc. Efficient algorithm for regularized risk minimization.
   Computer Vision Winter Workshop, 2012. Eqs. (3)-(4), Sec. 3.3 (P-BMRM).
.. [TJHA05] I. Tsochantaridis, T. Joachims, T. Hofmann, Y. Altun. Large margin methods for
   structured and interdependent output variables. JMLR 6:1453-1484, 2005.
.. [TGK03] B. Taskar, C. Guestrin, D. Koller. Max-margin Markov networks. NIPS 2003.
.. [YVGS10] J. Yu, S. V. N. Vishwanathan, S. Günter, N. N. Schraudolph. A quasi-Newton approach
   to nonsmooth convex optimization problems in machine learning. JMLR 11, 2010. Sec. 3.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from numba import njit

from .._validation import as_real_array, canonical_csr, check_data, check_sample_weight, check_vector
from ..oracle import GenericLine, Oracle
from ._groups import contiguous_groups

__all__ = ["StructuredHinge", "ChainHinge"]


# ========================================================================================
# Shared machinery: weights, groups, the generic line
# ========================================================================================
def _check_tie_rtol(tie_rtol) -> float:
    if not isinstance(tie_rtol, numbers.Real) or isinstance(tie_rtol, bool):
        raise TypeError(f"tie_rtol must be a real number, got {type(tie_rtol).__name__}")
    tie_rtol = float(tie_rtol)
    if not (0.0 <= tie_rtol < 1e-3):
        raise ValueError(f"tie_rtol must be in [0, 1e-3), got {tie_rtol}")
    return tie_rtol


class _GroupedRisk(Oracle):
    """A mean of per-example losses, evaluated in one pass per group of examples.

    A subclass implements ``_pass(w, starts, want_grad, p=None)`` returning the group values
    ``(P,)`` and, if ``want_grad``, the group subgradients ``(P, dim)``, for the groups of
    examples ``starts[k] : starts[k + 1]``; with ``p`` given, at ties the subgradient steepest
    along ``p`` (where the subclass can find it).
    """

    lower_bound: float = 0.0
    m: int
    c: np.ndarray

    # --- decomposition -------------------------------------------------------------------
    def _starts(self, n_groups) -> np.ndarray:
        return contiguous_groups(self.m, n_groups)

    def groups(self, n_groups: int = 1) -> list[np.ndarray]:
        r"""Split the examples into ``n_groups`` contiguous groups of near-equal size
        (:func:`~nsopt.losses._groups.contiguous_groups`, as every loss does): a list of index
        arrays covering ``0 .. m - 1``."""
        s = self._starts(n_groups)
        return [np.arange(s[k], s[k + 1]) for k in range(len(s) - 1)]

    def group_value_and_subgradients(self, w, n_groups: int = 1) -> tuple[np.ndarray, np.ndarray]:
        r"""Partial risks and subgradients of the ``P = n_groups`` groups of :meth:`groups`,
        in one pass.

        Returns ``(values (P,), subgradients (P, dim))`` with
        :math:`R_k(w) = \sum_{i \in I_k} c_i\, l(x_i, y_i, w)` and row ``k`` a subgradient of
        :math:`R_k` at ``w``; they sum to :meth:`value_and_subgradient` (up to rounding). Each
        :math:`R_k` is convex and nonnegative, so each row gives its own cutting plane
        ([UF12]_ Sec. 3.3, eq. 14).
        """
        w = self._point(w)
        values, G = self._pass(w, self._starts(n_groups), True)
        return values, G

    # --- oracle --------------------------------------------------------------------------
    def _value(self, w):
        return float(self._pass(w, self._starts(1), False)[0].sum())

    def _value_and_subgradient(self, w):
        values, G = self._pass(w, self._starts(1), True)
        return float(values[0]), G[0]

    def _restrict(self, w, p):
        # GenericLine: each line evaluation is one inference pass over the data; its one-sided
        # derivatives come from _sup_subgradient. No breakpoints: the kinks of a sum of maxima
        # over exponentially many labellings are not listed, so LineFunction.minimize raises
        # NotImplementedError (LS-BMRM-type solvers then use a Wolfe search).
        return GenericLine(self, w, p)

    def _pass(self, w, starts, want_grad, p=None):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}._pass is not implemented")


# ========================================================================================
# StructuredHinge: user-supplied features and inference
# ========================================================================================
def _feature(v, dim: int, what: str):
    """A joint feature as a 1-D float64 array or a 1 x dim CSR row (sorted, no duplicates)."""
    if sp.issparse(v):
        if v.ndim == 1:
            v = sp.csr_matrix(v.reshape(1, -1))
        v = canonical_csr(v, what)  # never modifies the user's v
        if v.shape != (1, dim):
            raise ValueError(
                f"{what} returned a sparse matrix of shape {v.shape}; a joint feature must be a "
                f"vector of length dim = {dim} (a 1 x {dim} sparse row or an array of shape ({dim},))"
            )
        if not np.isfinite(v.data).all():
            raise ValueError(f"{what} returned a feature vector with NaN or inf")
        return v
    a = as_real_array(v, what, what="a real numeric vector")
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.shape != (dim,):
        raise ValueError(
            f"{what} returned an array of shape {a.shape}; a joint feature must have shape "
            f"({dim},) (dim = {dim})"
        )
    if not np.isfinite(a).all():
        raise ValueError(f"{what} returned a feature vector with NaN or inf")
    return np.ascontiguousarray(a)


def _dot(v, w) -> float:
    if sp.issparse(v):
        return float(v.data @ w[v.indices])
    return float(v @ w)


def _add(acc: np.ndarray, c: float, v) -> None:
    """``acc += c * v`` for a dense or CSR-row feature ``v``."""
    if sp.issparse(v):
        acc[v.indices] += c * v.data
    else:
        acc += c * v


def _delta(d, what: str) -> float:
    try:
        d = float(d)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be a number (the label loss Delta), got {type(d).__name__}") from exc
    if not math.isfinite(d) or d < 0:
        raise ValueError(f"{what} = {d}: the label loss Delta must be finite and >= 0")
    return d


class StructuredHinge(_GroupedRisk):
    r"""Margin-rescaled structured hinge loss for user-supplied inference ([TVSL10]_ eq. 24,
    :math:`\Gamma = 1`).

    .. math::
        R(w) = \sum_i c_i \Big[\Delta(y_i, \bar y_i)
               + \langle w, \phi(x_i, \bar y_i) - \phi(x_i, y_i)\rangle\Big],
        \qquad \bar y_i = \arg\max_{y'}\; \Delta(y_i, y') + \langle w, \phi(x_i, y')\rangle,

    with subgradient :math:`\sum_i c_i [\phi(x_i, \bar y_i) - \phi(x_i, y_i)]` and
    :math:`c_i = 1/m` (or the normalised sample weights).

    Parameters
    ----------
    joint_feature : callable ``joint_feature(x, y) -> ndarray (dim,)`` or a 1 x dim scipy.sparse row
        :math:`\phi(x, y)`.
    loss_augmented_argmax : callable ``loss_augmented_argmax(x, y, w) -> (y_hat, delta)``
        A maximiser :math:`\bar y` of :math:`\Delta(y, y') + \langle w, \phi(x, y')\rangle`
        over :math:`y'` and its label loss :math:`\Delta(y, \bar y) \ge 0`. It must be an exact
        maximiser: the value is computed from it.
    examples : sequence of pairs ``(x, y)``
        The training examples; ``x`` and ``y`` are passed to the callables unchanged.
    dim : int >= 1
        Length of the joint feature (the number of variables).
    label_loss : callable ``label_loss(y, y_prime) -> float``, optional
        :math:`\Delta`. When given, the assumption :math:`\Delta(y_i, y_i) = 0` is checked for
        every example at construction, and every ``delta`` returned by the inference is checked
        against ``label_loss(y, y_hat)`` (an error names the example on a mismatch); this
        catches inference bugs at the cost of one extra call per example and evaluation.
    all_argmax : callable ``all_argmax(x, y, w) -> list of (y_hat, delta)``, optional
        All maximisers (the tied ones) of the loss-augmented score. Makes ``sup_subgradient``
        exact at ties (see Notes).
    sample_weight : array (m,), optional
        Nonnegative weights; the risk is their weighted mean.
    tie_rtol : float in [0, 1e-3), default 1e-12
        Candidates of ``all_argmax`` whose loss-augmented scores are within ``tie_rtol`` (relative)
        of the best are treated as tied.

    Attributes
    ----------
    dim, m : int
        Number of variables and of examples.
    lower_bound : float
        0 (see Notes).

    Notes
    -----
    Assumptions: :math:`\Delta(y, y') \ge 0` and :math:`\Delta(y, y) = 0`, so that the maximum
    includes :math:`y' = y` with value 0; hence :math:`R \ge 0` (``lower_bound = 0``) and
    :math:`l(x, y, w) \ge \Delta(y, y^*)` for the prediction
    :math:`y^* = \arg\max_{y'}\langle w, \phi(x, y')\rangle` (majorization, [TVSL10]_ Sec. A.2).
    A per-example value below :math:`-10^{-9}` (relative) means that ``loss_augmented_argmax`` did
    not return a maximiser (the true label scores higher) or that :math:`\Delta(y, y) \ne 0`, and
    raises ``ValueError``: the risk would be underestimated and the certificate invalid.

    Sup-subgradient: :math:`\partial l(x_i, y_i, \cdot)(w)` is the hull of
    :math:`\phi(x_i, y') - \phi(x_i, y_i)` over the tied maximisers :math:`y'`, so
    :math:`R'(w; p) = \sum_i c_i \max_{y'\ \mathrm{tied}} \langle \phi(x_i, y') - \phi(x_i, y_i), p\rangle`.
    With ``all_argmax`` this is computed exactly. Without it, ``sup_subgradient`` returns the
    plain subgradient (``<g, p>``, a lower bound on :math:`R'(w; p)`), exact only where every
    example's maximiser is unique; ties occur in particular at ``w = 0`` when several labels
    have the largest :math:`\Delta`.

    Line restriction: the generic one (:class:`~nsopt.oracle.GenericLine`), one inference pass
    per evaluation, without exact ``minimize``.

    Cost: one call of ``loss_augmented_argmax`` and of ``joint_feature`` per example and
    evaluation (plus ``label_loss`` when given). The loop over examples is in Python because
    the inference is user code; the true-label features :math:`\phi(x_i, y_i)` are computed once
    and stored as a matrix (CSR if any is sparse), so their scores and group sums are one
    matrix product each. For a compiled model see :class:`ChainHinge`.

    Examples
    --------
    Multiclass classification as a structured problem (:math:`\phi(x, y) = e_y \otimes x`,
    0/1 loss), which is the Crammer-Singer loss:

    >>> import numpy as np, nsopt
    >>> from nsopt.losses.structured import StructuredHinge
    >>> rng = np.random.default_rng(0)
    >>> X, y, k = rng.standard_normal((32, 4)), rng.integers(0, 3, 32), 3
    >>> def phi(x, label):
    ...     out = np.zeros(4 * k); out[4 * label: 4 * label + 4] = x; return out
    >>> def argmax(x, label, w):
    ...     s = w.reshape(k, 4) @ x + (np.arange(k) != label)
    ...     j = int(np.argmax(s)); return j, float(j != label)
    >>> loss = StructuredHinge(phi, argmax, list(zip(X, y)), dim=4 * k)
    >>> loss.value(np.zeros(4 * k))
    1.0
    >>> res = nsopt.minimize(nsopt.RegularizedRisk(loss, lam=1e-2), method="bmrm", rtol=1e-4)
    >>> bool(res.success and res.lower_bound <= res.fun)
    True
    """

    def __init__(self, joint_feature: Callable, loss_augmented_argmax: Callable, examples: Sequence,
                 dim: int, label_loss: Callable | None = None, *, all_argmax: Callable | None = None,
                 sample_weight=None, tie_rtol: float = 1e-12):
        for name, f in (("joint_feature", joint_feature), ("loss_augmented_argmax", loss_augmented_argmax)):
            if not callable(f):
                raise TypeError(f"{name} must be callable, got {type(f).__name__}")
        for name, f in (("label_loss", label_loss), ("all_argmax", all_argmax)):
            if f is not None and not callable(f):
                raise TypeError(f"{name} must be callable or None, got {type(f).__name__}")
        if not isinstance(dim, numbers.Integral) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim must be a positive integer (the length of the joint feature), got {dim!r}")
        try:
            examples = list(examples)
        except TypeError as exc:
            raise TypeError(f"examples must be a sequence of (x, y) pairs, got {type(examples).__name__}") from exc
        if not examples:
            raise ValueError("examples is empty: need at least one (x, y) pair")
        for i, ex in enumerate(examples):
            if not (isinstance(ex, (tuple, list)) and len(ex) == 2):
                raise ValueError(f"examples[{i}] must be a pair (x, y), got {type(ex).__name__}"
                                 + (f" of length {len(ex)}" if hasattr(ex, "__len__") else ""))
        self.joint_feature = joint_feature
        self.loss_augmented_argmax = loss_augmented_argmax
        self.label_loss = label_loss
        self.all_argmax = all_argmax
        self.examples = examples
        self.dim = int(dim)
        self.m = len(examples)
        self.c = check_sample_weight(sample_weight, self.m)
        self.tie_rtol = _check_tie_rtol(tie_rtol)
        self.shape = (self.dim,)

        rows = [_feature(joint_feature(x, y), self.dim, f"joint_feature(x, y) for examples[{i}]")
                for i, (x, y) in enumerate(examples)]
        if any(sp.issparse(r) for r in rows):
            self._phi_true = sp.vstack([r if sp.issparse(r) else sp.csr_matrix(r[None, :]) for r in rows],
                                       format="csr")
        else:
            self._phi_true = np.ascontiguousarray(np.vstack(rows))
        if label_loss is not None:
            for i, (x, y) in enumerate(examples):
                d = _delta(label_loss(y, y), f"label_loss(y, y) for examples[{i}]")
                if d != 0.0:
                    raise ValueError(
                        f"label_loss(y, y) = {d} for examples[{i}]; the structured hinge assumes "
                        "Delta(y, y) = 0 (the true label must cost nothing)"
                    )
        self._true_sums: dict[int, np.ndarray] = {}

    def __repr__(self):
        kind = "sparse" if sp.issparse(self._phi_true) else "dense"
        return f"StructuredHinge(m={self.m}, dim={self.dim}, {kind} features)"

    # --- one pass ------------------------------------------------------------------------
    def _group_true(self, starts) -> np.ndarray:
        """``sum_{i in I_k} c_i phi(x_i, y_i)`` for each group (P, dim), cached by P."""
        P = len(starts) - 1
        if P not in self._true_sums:
            groups = np.repeat(np.arange(P), np.diff(starts))
            S = sp.csr_matrix((self.c, (groups, np.arange(self.m))), shape=(P, self.m))
            T = S @ self._phi_true
            self._true_sums[P] = np.asarray(T.toarray() if sp.issparse(T) else T)
        return self._true_sums[P]

    def _candidate(self, i, w, y_hat, delta):
        x, y = self.examples[i]
        delta = _delta(delta, f"the delta returned by the inference for examples[{i}]")
        phi = _feature(self.joint_feature(x, y_hat), self.dim, f"joint_feature(x, y_hat) for examples[{i}]")
        if self.label_loss is not None:
            ref = _delta(self.label_loss(y, y_hat), f"label_loss(y, y_hat) for examples[{i}]")
            if abs(ref - delta) > 1e-9 * max(1.0, abs(ref)):
                raise ValueError(
                    f"the inference returned delta = {delta!r} for examples[{i}] but "
                    f"label_loss(y, y_hat) = {ref!r}; they must agree"
                )
        return phi, delta

    def _inferred(self, i, w, true_score):
        x, y = self.examples[i]
        out = self.loss_augmented_argmax(x, y, w)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(
                f"loss_augmented_argmax must return a pair (y_hat, delta); for examples[{i}] it "
                f"returned {type(out).__name__}"
            )
        phi, delta = self._candidate(i, w, out[0], out[1])
        hat_score = _dot(phi, w)
        value = delta + hat_score - true_score
        if value < -1e-9 * (1.0 + delta + abs(hat_score) + abs(true_score)):
            raise ValueError(
                f"examples[{i}]: the label returned by loss_augmented_argmax has loss-augmented "
                f"score {delta + hat_score!r}, below the true label's {true_score!r}; the "
                "inference must return an exact maximiser (and Delta(y, y) must be 0)"
            )
        return phi, value

    def _tied_steepest(self, i, w, p, true_score):
        """The maximiser steepest along ``p`` among ``all_argmax``'s tied candidates."""
        x, y = self.examples[i]
        cands = self.all_argmax(x, y, w)
        try:
            cands = list(cands)
        except TypeError as exc:
            raise TypeError(f"all_argmax must return a list of (y_hat, delta) pairs; got "
                            f"{type(cands).__name__} for examples[{i}]") from exc
        if not cands:
            raise ValueError(f"all_argmax returned no maximiser for examples[{i}]")
        scored = []
        for cand in cands:
            if not (isinstance(cand, (tuple, list)) and len(cand) == 2):
                raise TypeError(f"all_argmax must return (y_hat, delta) pairs; got "
                                f"{type(cand).__name__} for examples[{i}]")
            phi, delta = self._candidate(i, w, cand[0], cand[1])
            scored.append((delta + _dot(phi, w), _dot(phi, p), phi))
        top = max(s[0] for s in scored)
        if top - true_score < -1e-9 * (1.0 + abs(top) + abs(true_score)):
            raise ValueError(
                f"examples[{i}]: the best label returned by all_argmax has loss-augmented score "
                f"{top!r}, below the true label's {true_score!r}; all_argmax must return the maximisers"
            )
        tol = self.tie_rtol * max(1.0, abs(top))
        best = max((s for s in scored if s[0] >= top - tol), key=lambda s: s[1])
        return best[2], best[0] - true_score

    def _pass(self, w, starts, want_grad, p=None):
        true_scores = np.asarray(self._phi_true @ w).reshape(-1)
        P = len(starts) - 1
        values = np.zeros(P)
        G = np.zeros((P, self.dim)) if want_grad else None
        for k in range(P):
            acc = G[k] if want_grad else None
            total = 0.0
            for i in range(starts[k], starts[k + 1]):
                if p is None:
                    phi, value = self._inferred(i, w, true_scores[i])
                else:
                    phi, value = self._tied_steepest(i, w, p, true_scores[i])
                total += self.c[i] * value
                if want_grad:
                    _add(acc, self.c[i], phi)
            values[k] = total
        if want_grad:
            G -= self._group_true(starts)
        return values, G

    def _sup_subgradient(self, w, p):
        if self.all_argmax is None:
            # plain subgradient: <g, p> <= R'(w; p), exact where every maximiser is unique
            g = self._value_and_subgradient(w)[1]
            return float(g @ p), g
        _, G = self._pass(w, self._starts(1), True, p=p)
        g = G[0]
        return float(g @ p), g


# ========================================================================================
# Chain model: compiled Viterbi
# ========================================================================================
@njit(cache=True)
def _chain_viterbi(U, A, Up, Ap, y, offsets, augment, lex, tie_rtol, out):  # pragma: no cover - numba
    """Viterbi on every sequence ``offsets[i] : offsets[i + 1]`` of the score table ``U``
    (positions x states) with transition scores ``A[r, s]`` (r -> s).

    Maximises ``sum_t U[t, s_t] + sum_t A[s_{t-1}, s_t]`` plus, with ``augment``, the
    normalised Hamming loss ``(1/T) sum_t [s_t != y_t]``. With ``lex`` the order is
    lexicographic: among the maximisers (scores within ``tie_rtol`` times a bound on the path
    scores' magnitude) the one with the largest secondary score ``Up``, ``Ap`` (the
    directional derivative) wins. Writes the labels to ``out``.
    """
    n_states = U.shape[1]
    m = offsets.shape[0] - 1
    max_len = 0
    for i in range(m):
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    back = np.zeros((max_len, n_states), dtype=np.int64)
    score = np.empty(n_states)
    new_score = np.empty(n_states)
    sec = np.zeros(n_states)
    new_sec = np.zeros(n_states)
    a_max = 0.0
    for r in range(n_states):
        for s in range(n_states):
            a_max = max(a_max, abs(A[r, s]))
    for i in range(m):
        start = offsets[i]
        length = offsets[i + 1] - start
        gain = 1.0 / length if augment else 0.0
        tol = 0.0
        if lex:
            scale = 1.0 + gain * length + a_max * (length - 1)
            for t in range(start, start + length):
                u_max = 0.0
                for s in range(n_states):
                    u_max = max(u_max, abs(U[t, s]))
                scale += u_max
            tol = tie_rtol * scale
        for s in range(n_states):
            score[s] = U[start, s]
            if augment and s != y[start]:
                score[s] += gain
            if lex:
                sec[s] = Up[start, s]
        for t in range(1, length):
            pos = start + t
            for s in range(n_states):
                best_r = 0
                best = score[0] + A[0, s]
                best_sec = 0.0
                if lex:
                    best_sec = sec[0] + Ap[0, s]
                for r in range(1, n_states):
                    cand = score[r] + A[r, s]
                    if lex:
                        cand_sec = sec[r] + Ap[r, s]
                        if cand > best + tol or (cand >= best - tol and cand_sec > best_sec):
                            best, best_sec, best_r = cand, cand_sec, r
                    elif cand > best:
                        best, best_r = cand, r
                back[t, s] = best_r
                new_score[s] = best + U[pos, s]
                if augment and s != y[pos]:
                    new_score[s] += gain
                if lex:
                    new_sec[s] = best_sec + Up[pos, s]
            for s in range(n_states):
                score[s] = new_score[s]
                sec[s] = new_sec[s]
        last = 0
        for s in range(1, n_states):
            if lex:
                if score[s] > score[last] + tol or (score[s] >= score[last] - tol and sec[s] > sec[last]):
                    last = s
            elif score[s] > score[last]:
                last = s
        out[start + length - 1] = last
        for t in range(length - 1, 0, -1):
            last = back[t, last]
            out[start + t - 1] = last


@njit(cache=True)
def _chain_values(U, A, y, y_hat, offsets, out):  # pragma: no cover - numba
    """Per-sequence loss ``Delta(y, y_hat) + score(y_hat) - score(y)``, summing only the terms
    where the labellings differ (so that ``y_hat == y`` gives exactly 0)."""
    m = offsets.shape[0] - 1
    for i in range(m):
        start = offsets[i]
        length = offsets[i + 1] - start
        wrong = 0
        diff = 0.0
        for t in range(start, start + length):
            if y_hat[t] != y[t]:
                wrong += 1
                diff += U[t, y_hat[t]] - U[t, y[t]]
            if t > start and (y_hat[t - 1] != y[t - 1] or y_hat[t] != y[t]):
                diff += A[y_hat[t - 1], y_hat[t]] - A[y[t - 1], y[t]]
        out[i] = wrong / length + diff


def _as_sequence_features(x, name: str):
    if sp.issparse(x):
        x = canonical_csr(x, name)
        if x.shape[0] == 0:
            raise ValueError(f"{name} is empty: every sequence needs at least one position")
        return check_data(x, name)
    x = as_real_array(x, name, what="a 2-D array (positions x features) or a scipy.sparse matrix")
    if x.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (positions x features), got shape {x.shape}; "
            "a sequence of scalar features is x.reshape(-1, 1)"
        )
    if x.shape[0] == 0:
        raise ValueError(f"{name} is empty: every sequence needs at least one position")
    return check_data(x, name)


def _as_labels(y, length: int, n_states: int, name: str) -> np.ndarray:
    try:
        a = np.asarray(y)
        f = a.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of integer state labels") from exc
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one label per position), got shape {a.shape}")
    if a.shape[0] != length:
        raise ValueError(f"{name} has {a.shape[0]} labels but the sequence has {length} positions; they must match")
    bad = ~np.isfinite(f) | (f != np.round(f))
    if bad.any():
        raise ValueError(
            f"{name} must hold integer state labels 0 .. {n_states - 1}; found {np.unique(f[bad])[:5].tolist()}"
        )
    out_of_range = (f < 0) | (f >= n_states)
    if out_of_range.any():
        raise ValueError(
            f"{name} has labels outside 0 .. {n_states - 1} (n_states = {n_states}): "
            f"{np.unique(f[out_of_range])[:5].astype(np.int64).tolist()}"
        )
    return f.astype(np.int64)


class ChainHinge(_GroupedRisk):
    r"""Structured hinge loss of a first-order chain (sequence labelling, M3N-style).

    For a sequence :math:`x = (x_1, \dots, x_T)`, :math:`x_t \in \mathbb{R}^F`, and states
    :math:`y = (y_1, \dots, y_T)`, :math:`y_t \in \{0, \dots, S-1\}`:

    .. math::
        \langle w, \phi(x, y)\rangle = \sum_{t=1}^T \langle E_{y_t}, x_t\rangle
            + \sum_{t=2}^T A_{y_{t-1} y_t},
        \qquad \Delta(y, y') = \frac1T \sum_{t=1}^T [y_t \ne y'_t],

    with emission weights :math:`E` (S x F) and transition scores :math:`A` (S x S); the loss is
    the margin-rescaled :class:`StructuredHinge`, averaged over sequences (``sample_weight``
    optional). The Hamming loss is normalised per sequence (divided by its length ``T``), so
    :math:`0 \le \Delta \le 1` and long sequences do not dominate the mean. The scores, however,
    are sums over the ``T`` positions, so the margin asked of each position is about
    :math:`1/T`: on separable data the optimum :math:`J^*` can be tiny, and a relative
    tolerance ``rtol`` then asks for a tiny absolute gap (pass ``atol``, or scale the features).

    Parameters
    ----------
    X_seqs : sequence of arrays (T_i, F) or scipy.sparse matrices
        The feature vectors of each position, one matrix per sequence, all with F columns.
    Y_seqs : sequence of integer arrays (T_i,)
        The state of each position, in ``0 .. n_states - 1``.
    n_states : int >= 2
        S.
    sample_weight : array (m,), optional
        One nonnegative weight per sequence.
    tie_rtol : float in [0, 1e-3), default 1e-12
        Relative tolerance deciding ties between paths in ``sup_subgradient``.

    Attributes
    ----------
    dim : int
        ``S F + S^2``: ``w = concatenate([E.ravel(), A.ravel()])`` (C order); see
        :meth:`split_weights`.
    m, n_states, n_features, n_positions : int
    lower_bound : float
        0.

    Notes
    -----
    Loss-augmented inference is Viterbi on the scores :math:`\langle E_s, x_t\rangle + [s \ne
    y_t]/T` (the Hamming loss decomposes over positions and enters the unary scores), compiled
    with numba, O(T S^2) per sequence; the unary scores of all positions are one product
    ``X_all @ E.T`` (BLAS for dense data, CSR for sparse), the subgradient's emission block is
    one product of a sparse matrix with a nonzero per mislabelled position with ``X_all``, and its
    transition block a ``bincount``. No Python loop over sequences.

    Sup-subgradient (exact): the Viterbi runs in the lexicographic order (loss-augmented
    score, then the score along ``p``), so among the tied maximising paths it returns one
    steepest along ``p``, which attains :math:`R'(w; p)` ([YVGS10]_ Sec. 3). Paths tie when
    their scores agree within ``tie_rtol`` times a bound on the magnitudes along the sequence.
    Line restriction: the generic one (each evaluation one Viterbi pass), exact derivatives,
    no exact ``minimize``.

    Examples
    --------
    >>> import numpy as np, nsopt
    >>> from nsopt.losses.structured import ChainHinge
    >>> rng = np.random.default_rng(0)
    >>> Y = [rng.integers(0, 3, 6) for _ in range(20)]
    >>> X = [np.eye(3)[y] + 0.1 * rng.standard_normal((6, 3)) for y in Y]
    >>> loss = ChainHinge(X, Y, n_states=3)
    >>> res = nsopt.minimize(nsopt.RegularizedRisk(loss, lam=1e-2), method="bmrm", rtol=1e-4)
    >>> all((p == y).all() for p, y in zip(loss.predict(X, res.x), Y))
    True
    """

    def __init__(self, X_seqs, Y_seqs, n_states: int, *, sample_weight=None, tie_rtol: float = 1e-12):
        if not isinstance(n_states, numbers.Integral) or isinstance(n_states, bool) or n_states < 2:
            raise ValueError(f"n_states must be an integer >= 2, got {n_states!r}")
        S = int(n_states)
        try:
            X_seqs, Y_seqs = list(X_seqs), list(Y_seqs)
        except TypeError as exc:
            raise TypeError("X_seqs and Y_seqs must be sequences (one entry per sequence)") from exc
        if not X_seqs:
            raise ValueError("X_seqs is empty: need at least one sequence")
        if len(X_seqs) != len(Y_seqs):
            raise ValueError(f"X_seqs has {len(X_seqs)} sequences but Y_seqs has {len(Y_seqs)}; they must match")
        xs = [_as_sequence_features(x, f"X_seqs[{i}]") for i, x in enumerate(X_seqs)]
        F = xs[0].shape[1]
        for i, x in enumerate(xs):
            if x.shape[1] != F:
                raise ValueError(f"X_seqs[{i}] has {x.shape[1]} features but X_seqs[0] has {F}; all must match")
        ys = [_as_labels(y, x.shape[0], S, f"Y_seqs[{i}]") for i, (x, y) in enumerate(zip(xs, Y_seqs))]
        self.n_states, self.n_features = S, F
        self.m = len(xs)
        self.c = check_sample_weight(sample_weight, self.m)
        self.tie_rtol = _check_tie_rtol(tie_rtol)
        lengths = np.array([x.shape[0] for x in xs], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.n_positions = int(self.offsets[-1])
        self._sparse = any(sp.issparse(x) for x in xs)
        if self._sparse:
            self.X_all = sp.vstack([sp.csr_matrix(x) for x in xs], format="csr")
        else:
            self.X_all = np.ascontiguousarray(np.vstack(xs))
        self.y_all = np.concatenate(ys)
        self._seq_of_pos = np.repeat(np.arange(self.m), lengths)
        self._pos_weight = self.c[self._seq_of_pos]
        self._not_first = np.ones(self.n_positions, dtype=bool)
        self._not_first[self.offsets[:-1]] = False
        self.dim = S * F + S * S
        self.emission_shape, self.transition_shape = (S, F), (S, S)

    def __repr__(self):
        kind = "sparse" if self._sparse else "dense"
        return (f"ChainHinge(m={self.m}, positions={self.n_positions}, n_states={self.n_states}, "
                f"n_features={self.n_features}, {kind})")

    # --- parameters ----------------------------------------------------------------------
    def split_weights(self, w) -> tuple[np.ndarray, np.ndarray]:
        """``(E, A)``: emission weights (n_states x n_features) and transition scores
        (n_states x n_states, ``A[r, s]`` for r -> s), views of ``w``."""
        w = check_vector(w, self.dim, "w")
        k = self.n_states * self.n_features
        return w[:k].reshape(self.emission_shape), w[k:].reshape(self.transition_shape)

    def _unary(self, E, X=None) -> np.ndarray:
        X = self.X_all if X is None else X
        return np.ascontiguousarray(np.asarray(X @ E.T), dtype=np.float64)

    def _viterbi(self, U, A, offsets, y=None, Up=None, Ap=None) -> np.ndarray:
        out = np.empty(U.shape[0], dtype=np.int64)
        augment, lex = y is not None, Up is not None
        if y is None:
            y = np.zeros(U.shape[0], dtype=np.int64)
        if Up is None:
            Up, Ap = U, A
        _chain_viterbi(U, np.ascontiguousarray(A), Up, np.ascontiguousarray(Ap), y, offsets,
                       augment, lex, self.tie_rtol, out)
        return out

    # --- one pass --------------------------------------------------------------------------
    def _group_gradients(self, y_hat, starts) -> np.ndarray:
        """Rows ``sum_{i in group} c_i (phi(x_i, y_hat_i) - phi(x_i, y_i))``, (P, dim)."""
        S, F, P = self.n_states, self.n_features, len(starts) - 1
        y = self.y_all
        group_of_seq = np.repeat(np.arange(P), np.diff(starts))
        gpos = group_of_seq[self._seq_of_pos]
        wrong = np.flatnonzero(y_hat != y)
        cw = self._pos_weight[wrong]
        rows = np.concatenate([gpos[wrong] * S + y_hat[wrong], gpos[wrong] * S + y[wrong]])
        D = sp.csr_matrix((np.concatenate([cw, -cw]), (rows, np.concatenate([wrong, wrong]))),
                          shape=(P * S, self.n_positions))
        emission = D @ self.X_all
        emission = np.asarray(emission.toarray() if sp.issparse(emission) else emission).reshape(P, S * F)
        t = np.flatnonzero(self._not_first & ((y_hat != y) | (np.roll(y_hat, 1) != np.roll(y, 1))))
        cw = self._pos_weight[t]
        base = gpos[t] * (S * S)
        idx = np.concatenate([base + y_hat[t - 1] * S + y_hat[t], base + y[t - 1] * S + y[t]])
        transition = np.bincount(idx, weights=np.concatenate([cw, -cw]), minlength=P * S * S)
        return np.hstack([emission, transition.reshape(P, S * S)])

    def _pass(self, w, starts, want_grad, p=None):
        E, A = self.split_weights(w)
        U = self._unary(E)
        if p is None:
            y_hat = self._viterbi(U, A, self.offsets, y=self.y_all)
        else:
            Ep, Ap = self.split_weights(p)
            y_hat = self._viterbi(U, A, self.offsets, y=self.y_all, Up=self._unary(Ep), Ap=Ap)
        values = np.empty(self.m)
        _chain_values(U, np.ascontiguousarray(A), self.y_all, y_hat, self.offsets, values)
        P = len(starts) - 1
        group_values = np.bincount(np.repeat(np.arange(P), np.diff(starts)), weights=self.c * values,
                                   minlength=P)
        return group_values, (self._group_gradients(y_hat, starts) if want_grad else None)

    def _sup_subgradient(self, w, p):
        _, G = self._pass(w, self._starts(1), True, p=p)
        g = G[0]
        return float(g @ p), g

    # --- the model, one sequence at a time ------------------------------------------------------
    def _check_x(self, x, name="x"):
        x = _as_sequence_features(x, name)
        if x.shape[1] != self.n_features:
            raise ValueError(f"{name} has {x.shape[1]} features but the model was built with {self.n_features}")
        return x

    def joint_feature(self, x, y) -> np.ndarray:
        r""":math:`\phi(x, y)` of one sequence, a dense vector of length ``dim`` (the emission
        block :math:`\sum_t e_{y_t} \otimes x_t`, then the transition counts)."""
        x = self._check_x(x)
        y = _as_labels(y, x.shape[0], self.n_states, "y")
        S, T = self.n_states, x.shape[0]
        onehot = sp.csr_matrix((np.ones(T), (y, np.arange(T))), shape=(S, T))
        emission = onehot @ x
        emission = np.asarray(emission.toarray() if sp.issparse(emission) else emission).ravel()
        transition = np.bincount(y[:-1] * S + y[1:], minlength=S * S).astype(np.float64)
        return np.concatenate([emission, transition])

    def label_loss(self, y, y_prime) -> float:
        r"""The normalised Hamming loss :math:`\Delta(y, y') = \frac1T\sum_t [y_t \ne y'_t]`."""
        y = np.asarray(y)
        y_prime = np.asarray(y_prime)
        if y.shape != y_prime.shape or y.ndim != 1 or y.size == 0:
            raise ValueError(
                f"label sequences must be non-empty and of equal length, got shapes {y.shape} and {y_prime.shape}"
            )
        return float(np.count_nonzero(y != y_prime) / y.size)

    def loss_augmented_argmax(self, x, y, w) -> tuple[np.ndarray, float]:
        r"""``(y_hat, delta)``: a maximiser of :math:`\Delta(y, y') + \langle w, \phi(x, y')\rangle`
        for one sequence (the signature :class:`StructuredHinge` expects)."""
        x = self._check_x(x)
        y = _as_labels(y, x.shape[0], self.n_states, "y")
        E, A = self.split_weights(w)
        y_hat = self._viterbi(self._unary(E, x), A, np.array([0, x.shape[0]], dtype=np.int64), y=y)
        return y_hat, self.label_loss(y, y_hat)

    def predict(self, X_seqs, w) -> list[np.ndarray]:
        r"""The most likely state sequences :math:`\arg\max_y \langle w, \phi(x, y)\rangle` (plain
        Viterbi, no loss augmentation; ties go to the smallest state), one array per sequence."""
        xs = [self._check_x(x, f"X_seqs[{i}]") for i, x in enumerate(X_seqs)]
        if not xs:
            return []
        E, A = self.split_weights(w)
        lengths = np.array([x.shape[0] for x in xs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        X = (sp.vstack([sp.csr_matrix(x) for x in xs], format="csr") if any(sp.issparse(x) for x in xs)
             else np.vstack(xs))
        labels = self._viterbi(self._unary(E, X), A, offsets)
        return [labels[offsets[i]:offsets[i + 1]] for i in range(len(xs))]
