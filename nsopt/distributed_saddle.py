r"""The saddle form of a sharded loss: excessive-gap on Dask, its dual vector on the workers.

A :class:`~nsopt.distributed.ShardedLoss` is :math:`R = \sum_k R_k` with :math:`R_k` the loss
of shard k (its rows, the whole problem's weights). When every shard's loss has a saddle form
:math:`R_k(w) = \max_{\alpha_k\in Q_k}\langle\alpha_k, b_k - Z_k w\rangle`
(:mod:`nsopt.saddle`: the hinge, the multiclass hinges), so has the sum:

.. math::
    R(w) = \max_{\alpha\in Q_1\times\dots\times Q_P} \langle\alpha, b - Zw\rangle,\qquad
    Z = \begin{pmatrix} Z_1 \\ \vdots \\ Z_P\end{pmatrix},\ b = (b_1, \dots, b_P),

with :math:`D_2 = \sum_k D_{2,k}`. For the hinge and the Crammer-Singer hinges :math:`Q` is a
product over examples already, so this is the one-machine form, row block by row block.

:func:`sharded_saddle_form` gives that form to :class:`~nsopt.solvers.ExcessiveGap`, unchanged:
its dual points are :class:`ShardedVector` handles, one block per shard kept by its actor
(never on the driver). The solver's arithmetic on them (``+``, ``-``, scalar ``*`` and ``/``,
``project``, ``matvec``) builds node definitions on the driver without a round trip; a
reduction (``rmatvec`` :math:`Z^T\alpha = \sum_k Z_k^T\alpha_k`, ``vdot``) ships the pending
definitions to every shard, which evaluates them with numpy in the driver's order (so every
block is bitwise the one-machine vector's rows) and keeps each result under its key, and the
driver sums the shards' answers in shard order. A block the driver lets go (its handle is
collected) is dropped on the shards with the next call.

Round trips per iteration of the method (adaptive step, no backtrack): ``rmatvec`` of
:math:`\alpha_\mu(w_k)`, ``rmatvec`` of :math:`v(\beta)` (which evaluates :math:`\beta`,
:math:`Z w(\beta)` and the projection), :math:`\|v - \beta\|^2`, :math:`\langle b, v\rangle`,
plus the oracle call at :math:`w_{k+1}`: 5, each moving at most one d-vector per shard each
way (:math:`w(\beta)` out, :math:`Z_k^T\alpha_k` back) and O(1) numbers otherwise; a
backtrack adds 2. The certificate's evidence is a :class:`ShardedSaddlePoint`: the key of the
last dual block, checked on the shards.

With ``loss.reduction = "ordered"`` the two reductions continue the one-machine pass shard
after shard (P round trips each instead of 1): :math:`\langle\alpha, \beta\rangle` as the
serial dot's running sum, and :math:`Z^T\alpha` on sparse shards whose form gives
``weights`` (:class:`~nsopt.saddle.SaddleForm`; the hinge: :math:`X^T(y\alpha)`) as
:func:`~nsopt.distributed._continued_rdot`; the run is then bitwise the one-machine run.
A shard rebuilt mid-run has lost its blocks: :class:`~nsopt.distributed.ShardsLost`, and the
run ends ``interrupted`` with its best point.
"""
from __future__ import annotations

import functools
import itertools
import os
import weakref
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from .certificate import Evidence, _fail
from .distributed import ShardedLoss, ShardsLost
from .saddle import SaddleForm

__all__ = ["ShardedVector", "ShardedSaddlePoint", "sharded_saddle_form"]

class ShardedVector:
    r"""A dual point of a sharded saddle form: one block per shard, kept on its worker.

    A handle: ``key`` names the blocks on the shards once they are computed; until then
    ``expr`` is the operation that makes them (``("add", u, v)``, ``("sub", u, v)``,
    ``("mul", s, u)``, ``("div", u, s)``, ``("proj", u)``, ``("matvec", w)``), evaluated
    with the next reduction that needs it. Supports ``u + v``, ``u - v``, ``s * u``,
    ``u * s`` and ``u / s`` (s a real number): exactly the arithmetic of
    :class:`~nsopt.solvers.ExcessiveGap`. ``np.asarray`` of it is refused (the blocks never
    reach the driver; :meth:`gather` does it on purpose)."""

    __slots__ = ("space", "key", "expr", "shape", "__weakref__")

    def __init__(self, space: "_DualSpace", key: str, expr=None):
        self.space, self.key, self.expr, self.shape = space, key, expr, space.shape

    def __repr__(self):
        state = "kept" if self.expr is None else f"pending {self.expr[0]}"
        return f"ShardedVector({self.key!r}, shape={self.shape}, {state})"

    def _other(self, other):
        if not isinstance(other, ShardedVector) or other.space is not self.space:
            raise TypeError(f"a ShardedVector combines with a ShardedVector of the same form, "
                            f"got {type(other).__name__}")
        return other

    @staticmethod
    def _scalar(s):
        if not isinstance(s, Real):
            raise TypeError(f"a ShardedVector is scaled by a real number, got "
                            f"{type(s).__name__}")
        return float(s)

    def __add__(self, other):
        return self.space.node(("add", self, self._other(other)))

    def __sub__(self, other):
        return self.space.node(("sub", self, self._other(other)))

    def __mul__(self, s):
        return self.space.node(("mul", self._scalar(s), self))

    __rmul__ = __mul__

    def __truediv__(self, s):
        return self.space.node(("div", self, self._scalar(s)))

    def __array__(self, *args, **kwargs):
        raise TypeError("a ShardedVector's blocks stay on the workers; use .gather() to "
                        "concatenate them on the driver")

    def gather(self) -> np.ndarray:
        """The blocks concatenated on the driver (O(m) floats: for tests and small problems)."""
        space = self.space
        space.keep(self)
        parts = space.loss._map("saddle_get", self.key)
        if any(p is None for p in parts):
            raise ShardsLost(f"the dual block {self.key!r} is gone from a shard")
        return np.concatenate(parts)


class _DualSpace:
    """The driver's side of one sharded saddle form: keys, pending definitions, drops."""

    def __init__(self, loss: ShardedLoss, facts):
        self.loss = loss
        rows = sum(f[0][0] for f in facts)
        self.shape = (rows, *facts[0][0][1:])
        self.radius_sq = float(sum(f[1] for f in facts))
        self._prefix = os.urandom(6).hex()
        self._count = itertools.count()
        # blocks let go by the driver, dropped on the shards with the next call (one list per
        # loss: a later run drops what an earlier one left)
        self._dead = loss.__dict__.setdefault("_saddle_dead", [])
        self.center = ShardedVector(self, "center")
        self.offset = ShardedVector(self, "offset")

    def node(self, expr) -> ShardedVector:
        return ShardedVector(self, f"{self._prefix}-{next(self._count)}", expr)

    def _take_dead(self) -> list:
        dead = self._dead[:]
        del self._dead[:len(dead)]
        return dead

    def _defs(self, *vectors):
        """The definitions of every pending node the ``vectors`` need, children first."""
        defs, pending, seen = [], [], set()

        def visit(v):
            if v.expr is None or v.key in seen:
                return
            seen.add(v.key)
            op, *args = v.expr
            for a in args:
                if isinstance(a, ShardedVector):
                    visit(a)
            defs.append((v.key, op, *[a.key if isinstance(a, ShardedVector) else a
                                      for a in args]))
            pending.append(v)

        for v in vectors:
            visit(v)
        return defs, pending

    def _call(self, method, vectors, *args):
        """Run ``method(drop, defs, keep, *args)`` on every shard. The pending nodes forget
        how they were made first; those still alive then (held by the solver, or by a node
        still pending) are kept on the shards, the others are temporaries of this call, and
        a kept block is dropped once its handle is collected."""
        drop = self._take_dead()  # before the cut: blocks it frees are needed by this call
        defs, pending = self._defs(*vectors)
        for node in pending:
            node.expr = None
        refs = [weakref.ref(node) for node in pending]
        pending = node = None
        alive = [v for v in (r() for r in refs) if v is not None]
        out = self.loss._map(method, drop, defs, [v.key for v in alive], *args)
        if any(o is None or o is False for o in out):
            k = next(i for i, o in enumerate(out) if o is None or o is False)
            raise ShardsLost(f"a dual block of the excessive-gap run is gone from shard {k} "
                             "(its worker was lost): the run stops with its best point")
        for v in alive:
            weakref.finalize(v, self._dead.append, v.key)
        return out

    def keep(self, v: ShardedVector) -> ShardedVector:
        if v.expr is not None:
            self._call("saddle_keep", (v,))
        return v

    # --- the form's operations ----------------------------------------------------------
    def matvec(self, w):
        return self.node(("matvec", np.array(w, dtype=np.float64)))

    def _ordered(self) -> bool:
        """Reduction ``"ordered"`` on the loss (and more than one shard): the sums continue
        the one-machine pass shard after shard."""
        loss = self.loss
        return loss.reduction == "ordered" and loss.n_shards > 1

    def _ordered_rmatvec(self) -> bool:
        if not self._ordered():
            return False
        loss = self.loss
        if loss.__dict__.get("_saddle_vector_chainable") is None:
            loss._saddle_vector_chainable = all(loss._map("saddle_vector_chainable"))
        return loss._saddle_vector_chainable

    def _chain(self, first):
        """Continue shard 0's answer ``first`` through shards 1..P-1 in order (each keeps
        what the first round left it); a shard with nothing kept was rebuilt: its blocks are
        gone, the run stops (:class:`ShardsLost`)."""
        out = first
        for k in range(1, self.loss.n_shards):
            out = self.loss._map("saddle_chain", out, only=k)[0]
            if out is None:
                raise ShardsLost(f"a dual block of the excessive-gap run is gone from shard "
                                 f"{k} (its worker was lost): the run stops with its best "
                                 "point")
        return out

    def rmatvec(self, alpha) -> np.ndarray:
        if self._ordered_rmatvec():  # bitwise the one-machine X^T (y * alpha)
            parts = self._call("saddle_rmatvec_start", (alpha,), alpha.key)
            return np.array(self._chain(parts[0]), dtype=np.float64)
        parts = self._call("saddle_rmatvec", (alpha,), alpha.key)
        out = np.zeros(self.loss.dim)
        for p in parts:  # shard order
            out += np.ravel(p)
        return out

    def project(self, v):
        return self.node(("proj", v))

    def vdot(self, a, b) -> float:
        if self._ordered():  # the serial dot's running sum, shard after shard
            parts = self._call("saddle_vdot_start", (a, b), a.key, b.key)
            return float(self._chain(parts[0]))
        total = 0.0
        for p in self._call("saddle_vdot", (a, b), a.key, b.key):  # shard order
            total += p
        return total

    def norm_sq(self) -> float:
        r"""A bound on :math:`\|Z\|_2^2 = \lambda_{\max}(\sum_k Z_k^TZ_k)`: for d <= 1000 the
        Gram matrix summed over the shards (d products on each) and its top eigenvalue,
        inflated by 1e-12 relative (as the one-machine SVD); else Lanczos (``scipy.sparse.linalg.eigsh``) on the
        product :math:`w \mapsto \sum_k Z_k^TZ_k w` (one round trip a product), inflated by
        1e-6 relative."""
        d = int(self.loss.dim)
        if d <= 1000:
            G = np.zeros((d, d))
            for g in self.loss._map("saddle_gram"):
                G += g
            return float(np.linalg.eigvalsh(0.5 * (G + G.T))[-1]) * (1 + 1e-12)
        from scipy.sparse.linalg import LinearOperator, eigsh

        def normal(w):
            out = np.zeros(d)
            for p in self.loss._map("saddle_normal", np.ravel(w)):
                out += p
            return out

        op = LinearOperator((d, d), matvec=normal, dtype=np.float64)
        top = eigsh(op, k=1, which="LA", tol=1e-10, return_eigenvectors=False,
                    v0=np.ones(d))
        return float(top[0]) * (1 + 1e-6)

    def evidence(self, alpha, plane):
        self.keep(alpha)
        return ShardedSaddlePoint(key=alpha.key, digests=tuple(s.digest for s in
                                                               self.loss._shards),
                                  plane=plane, handle=alpha)


def _facts(loss):
    """Every shard's ``(block shape, radius_sq)``, or a sentence saying why the shards have no
    common saddle form (asked once per loss)."""
    facts = loss.__dict__.get("_saddle_facts")
    if facts is None:
        try:
            facts = loss._saddle_facts = tuple(loss._map("saddle_facts"))
        except (Exception, ShardsLost) as exc:
            return f"the shards could not be asked for their saddle forms ({exc})"
    why = next((f for f in facts if isinstance(f, str)), None)
    if why is not None:
        return why
    if len({f[0][1:] for f in facts}) != 1:
        return "the shards' dual blocks have different widths"
    return facts


def _no_saddle_form_reason(loss: ShardedLoss) -> str | None:
    """``ShardedLoss.no_saddle_form_reason``: why it has no saddle form, or None."""
    facts = _facts(loss)
    return facts if isinstance(facts, str) else None


def sharded_saddle_form(loss: ShardedLoss) -> SaddleForm | None:
    r"""The saddle form of a sharded loss (module docstring): None unless every shard's loss
    has one. Its dual points are :class:`ShardedVector` handles; ``vdot``, ``evidence`` and
    ``norm_sq`` are given (:class:`~nsopt.saddle.SaddleForm`). Asks the shards once per loss."""
    facts = _facts(loss)
    if isinstance(facts, str):
        return None
    space = _DualSpace(loss, facts)
    return SaddleForm(matvec=space.matvec, rmatvec=space.rmatvec, offset=space.offset,
                      project=space.project, center=space.center, radius_sq=space.radius_sq,
                      vdot=space.vdot, evidence=space.evidence, norm_sq=space.norm_sq)


def _saddle_form_attribute(loss: ShardedLoss):
    """``ShardedLoss.saddle_form``: the method when the shards' losses have saddle forms, else
    None (so that ``callable(loss.saddle_form)`` tells, as for an in-memory loss)."""
    if isinstance(_facts(loss), str):
        return None
    return functools.partial(sharded_saddle_form, loss)


# ----------------------------------------------------------------------------------------
# the certificate's evidence: the dual point kept on the shards
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ShardedSaddlePoint(Evidence):
    r"""A dual point :math:`\alpha = (\alpha_1, \dots, \alpha_P)` of a sharded saddle form,
    its blocks :math:`\alpha_k \in Q_k` kept on the shards under ``key``.

    The driver keeps O(P) numbers: the ``key``, the shards' data ``digests`` and the solver's
    ``plane`` :math:`(-Z^T\alpha, \langle b, \alpha\rangle)` (``handle`` keeps the blocks
    alive while the evidence lives; it is not part of the evidence).

    Check (:meth:`verify`, called by :meth:`~nsopt.Certificate.check`): every shard verifies
    its block as :class:`~nsopt.certificate.SaddlePoint` does (shape, finite, in
    :math:`Q_k` within 1e-9) and rebuilds its plane :math:`(-Z_k^T\alpha_k, \langle b_k,
    \alpha_k\rangle)` from its data in one pass; the driver sums the planes in shard order and
    bounds :math:`b - \lambda\Omega^*(-a/\lambda)`: the verdict of ``SaddlePoint`` on the
    concatenated :math:`\alpha`, without moving it. A block that is gone (its worker was
    lost) fails the check naming the shard: unlike a query-point recipe, the path that made
    :math:`\alpha` cannot be replayed."""

    key: str
    digests: tuple
    plane: tuple | None = field(default=None, repr=False)
    handle: object = field(default=None, repr=False, compare=False)
    kind = "sharded-saddle-point"

    def __reduce__(self):  # the handle (and its client) does not travel
        return (type(self), (self.key, self.digests, self.plane))

    def _loss(self, problem):
        loss = getattr(problem, "loss", None)
        if not isinstance(loss, ShardedLoss):
            _fail(f"sharded saddle-point evidence needs the sharded problem the run solved "
                  f"(a RegularizedRisk of a ShardedLoss), got a loss {type(loss).__name__}")
        if len(self.digests) != loss.n_shards:
            _fail(f"the evidence has {len(self.digests)} shard digests for {loss.n_shards} "
                  "shards")
        for k, (digest, s) in enumerate(zip(self.digests, loss._shards)):
            if digest != s.digest:
                _fail(f"shard {k}'s block belongs to other data (its digest differs)")
        return loss

    def verify(self, problem):
        from .certificate import CertificateError, _plane_bound

        loss = self._loss(problem)
        try:
            replies = loss._map("saddle_check", self.key)
        except ShardsLost as exc:  # never a KeyboardInterrupt out of a check
            raise CertificateError(f"the shards holding the dual point cannot be reached: "
                                   f"{exc}") from None
        except Exception as exc:
            raise CertificateError(f"a shard refused its dual block: "
                                   f"{type(exc).__name__}: {exc}") from exc
        a, b, scale = np.zeros(problem.dim), 0.0, 0.0
        for k, reply in enumerate(replies):  # shard order
            if reply is None or reply[0] != "ok":
                _fail(f"the dual block of shard {k} "
                      f"{'is gone (its worker was lost)' if reply is None else reply[1]}")
            a += np.ravel(reply[1])
            b += float(reply[2])
            scale = max(scale, abs(float(reply[2])))
        floor = 0.0 if loss.lower_bound == 0 else None
        bound, _, conj = _plane_bound(problem, a, b, floor)
        return bound, a, b, max(abs(b), abs(conj), scale), []

    def gather(self, problem):
        """The plain :class:`~nsopt.certificate.SaddlePoint` (the blocks concatenated on the
        driver: O(m) floats; for tests and small problems)."""
        from .certificate import SaddlePoint

        loss = self._loss(problem)
        parts = loss._map("saddle_get", self.key)
        if any(p is None for p in parts):
            _fail("a dual block is gone from its shard")
        return SaddlePoint(np.concatenate(parts), plane=self.plane)
