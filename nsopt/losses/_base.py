r"""The chain rule for losses of linear scores, written once.

A scalar loss is :math:`R(w) = \sum_i c_i\, l(\langle x_i, w\rangle, y_i)` with weights
:math:`c_i = s_i / \sum_j s_j` (the mean when there are no sample weights). With
:math:`f = Xw`:

* value and subgradient: :math:`a = X^T g`, :math:`g_i = c_i\, l'(f_i, y_i)`
  ([TVSL10]_ Alg. 6);
* sup-subgradient along :math:`p`, with :math:`q = Xp`: :math:`R'(w; p) = \sum_i c_i\,
  l'(f_i, y_i; \mathrm{sign}(q_i))\, q_i`, the right derivative where :math:`q_i > 0` and the left
  one where :math:`q_i < 0`; the subgradient built from those one-sided derivatives attains it
  ([YVGS10]_ Sec. 3);
* restriction to a line: :math:`\varphi(\eta) = \sum_i c_i\, l(f_i + \eta q_i, y_i)`, O(m) per
  evaluation after the two products :math:`f = Xw`, :math:`q = Xp`; its breakpoints are where
  some :math:`f_i + \eta q_i` hits a kink of :math:`l`.

A subclass gives ``kernels``, the value and gradient kernels that
:func:`nsopt.losses._kernels.elementwise` compiles from one element-wise function
``loss(z, y, side, *params) -> (l, l')``, the names of their extra parameters, the kink
positions and the label check; about 30 lines of element-wise math.
"""
from __future__ import annotations

import numpy as np

from .._validation import (check_binary_labels, check_data, check_sample_weight,
                           check_targets, check_vector)
from ..oracle import LineFunction, Oracle
from ._groups import cached_group_parts
from ._kernels import CONTINUABLE_KERNELS, FUSED_KERNELS, LINE_KERNELS, DataMatrix
from ._kernels import dot as _dot
# the vector losses' base lives in its own module; imported here for the old import path
from ._vector_base import VectorLine, VectorLoss, check_class_labels  # noqa: F401

__all__ = ["ScalarLoss", "ScalarLine"]


class ScalarLoss(Oracle):
    """Base class of losses of one linear score per example, ``l(<x_i, w>, y_i)``.

    Parameters
    ----------
    X : array (m, d) or scipy.sparse matrix
    y : array (m,)
    sample_weight : array (m,), optional
        Nonnegative weights; the risk is their weighted mean.
    """

    binary: bool = False
    lower_bound: float = 0.0

    #: ``(value, grad)``, the compiled kernels of the element-wise loss
    #: (:func:`nsopt.losses._kernels.elementwise`), set by each subclass:
    #: ``value(z, y, c, *params) -> sum_i c_i l(z_i, y_i)`` and
    #: ``grad(z, y, c, side, out, *params)`` (the same sum; writes ``c_i l'(z_i, y_i; side_i)``)
    kernels: tuple = ()
    #: names of the attributes passed to both kernels after their common arguments
    kernel_params: tuple[str, ...] = ()

    def _kernel_params(self, kernel) -> list:
        """The loss's parameters for ``kernel``, and ``start = 0.0`` where the kernel takes
        one: given always, as the sharded sums give it, numba compiles one variant of the
        kernel rather than a second for the omitted default."""
        params = [getattr(self, n) for n in self.kernel_params]
        if kernel in CONTINUABLE_KERNELS:
            params.append(0.0)
        return params

    def _value_kernel(self, z, y, c):
        kernel = self.kernels[0]
        return kernel(z, y, c, *self._kernel_params(kernel))

    def _grad_kernel(self, z, y, c, side, out):
        kernel = self.kernels[1]
        return kernel(z, y, c, side, out, *self._kernel_params(kernel))

    def kinks(self) -> np.ndarray | None:
        """Score values ``z`` (shape (m,) or (m, k)) where ``l(., y_i)`` is not smooth, or None."""
        return None

    #: ``l(., y)`` is piecewise linear (its derivative only jumps, at :meth:`kinks`): a line
    #: then finds its minimiser without sorting the kinks (:meth:`ScalarLine.jumps`)
    piecewise_linear: bool = False
    #: ``l(., y)`` is piecewise quadratic between its kinks (squared hinge, Huber)
    piecewise_quadratic: bool = False

    def __init__(self, X, y, sample_weight=None):
        X = check_data(X)
        m, d = X.shape
        self.data = DataMatrix(X)
        self.y = check_binary_labels(y, m) if self.binary else check_targets(y, m)
        self.c = check_sample_weight(sample_weight, m)
        self.m, self.dim = m, d
        self.shape = (d,)

    def __repr__(self):
        kind = "sparse" if self.data.sparse else "dense"
        return f"{type(self).__name__}(m={self.m}, d={self.dim}, {kind})"

    # --- oracle -------------------------------------------------------------------------
    def _value(self, w):
        return self._value_kernel(self.data.dot(w), self.y, self.c)

    def _value_and_subgradient(self, w):
        return self._evaluate_once(w)[:2]

    def _fused_kernels(self):
        """The loss's one-read oracle call (:data:`~nsopt.losses._kernels.FUSED_KERNELS`) when
        it applies: sparse data in a :class:`DataMatrix` whose passes are not replaced (an
        intercept's ``[X 1]`` is; an instance's ``dot`` wrapped without ``fused``, as
        :class:`~nsopt.testing.PassCounter` wraps both, is honoured), the kernels of
        :func:`~nsopt.losses._kernels.elementwise` not overridden; else None."""
        data = self.data
        if not (getattr(data, "sparse", False) and type(data).fused is DataMatrix.fused
                and type(data).dot is DataMatrix.dot and type(data).rdot is DataMatrix.rdot):
            return None
        if ("dot" in vars(data) or "rdot" in vars(data)) and "fused" not in vars(data):
            return None
        if "_grad_kernel" in vars(self) or type(self)._grad_kernel is not ScalarLoss._grad_kernel:
            return None
        if len(self.kernels) < 2:
            return None
        return FUSED_KERNELS.get(self.kernels[1])

    def _evaluate_once(self, w):
        r"""``(R(w), a, g)``: value, subgradient :math:`a = X^T g` and the kernel's derivatives
        :math:`g_i = c_i l'(z_i, y_i)`, in one read of the rows where the loss has a fused
        kernel (sparse data: :meth:`DataMatrix.fused`, bitwise the two passes below
        ``PARALLEL_MIN_NNZ``), else the two passes :math:`z = Xw`, :math:`X^T g`."""
        g = np.empty(self.m)
        fused = self._fused_kernels()
        if fused is not None:
            params = [getattr(self, n) for n in self.kernel_params]
            r, a = self.data.fused(fused, w, self.y, self.c, g, params)
            return r, a, g
        z = self.data.dot(w)
        r = self._grad_kernel(z, self.y, self.c, np.zeros(self.m), g)
        return r, self.data.rdot(g), g

    def _sup_subgradient(self, w, p):
        z = self.data.dot(w)
        q = self.data.dot(p)
        g = np.empty(self.m)
        self._grad_kernel(z, self.y, self.c, np.sign(q), g)
        a = self.data.rdot(g)
        # the slope a^T p (= g^T X p): O(d), and what a sharded loss gets bitwise from the
        # same a (nsopt.distributed, reduction "ordered"), where g^T q's O(m) sum is not
        return float(a @ p), a

    def _restrict(self, w, p):
        return ScalarLine(self, self.data.dot(w), self.data.dot(p))

    # --- evaluation from known scores (one data pass saved per score vector) -------------
    @property
    def scores_supported(self) -> bool:
        r"""True when the loss is evaluated and restricted from its scores :math:`f = Xw`
        alone (:meth:`scores`, :meth:`_value_subgradient_dual` with ``scores``,
        :meth:`restrict_scores`); False when a subclass or an instance overrides
        ``_value_and_subgradient`` or ``_restrict`` (its answers are then not known to be
        functions of the scores)."""
        for name in ("_value_and_subgradient", "_restrict", "_value_subgradient_dual"):
            if name in self.__dict__ or getattr(type(self), name) is not getattr(ScalarLoss, name):
                return False
        return True

    def scores(self, w: np.ndarray) -> np.ndarray:
        r"""The scores :math:`f = Xw` (with an intercept, :math:`Xw + b`): half a data pass.

        They are linear in ``w``, so a solver that keeps the scores of two points has those
        of every combination :math:`\alpha w_1 + \beta w_2` for free (:math:`\alpha f_1 +
        \beta f_2`, O(m)), and can then evaluate (:meth:`_value_subgradient_dual` with
        ``scores``: one pass :math:`X^T g` instead of two) and restrict
        (:meth:`restrict_scores`: no pass) there."""
        return self.data.dot(w)

    def restrict_scores(self, f: np.ndarray, q: np.ndarray) -> "ScalarLine":
        r"""The line :math:`\varphi(\eta) = \sum_i c_i l(f_i + \eta q_i, y_i)` through the
        point whose scores are ``f`` along the direction whose scores are ``q`` (:math:`q =
        Xp`; with an intercept :math:`Xp_w + p_b`): :meth:`restrict` without its two passes.
        The arrays are kept, not copied: do not mutate them while the line is in use."""
        return ScalarLine(self, f, q)

    def group_value_and_subgradients(self, w: np.ndarray, n_groups: int):
        """The risk split over ``n_groups`` contiguous groups of examples, in one data pass.

        Returns ``(values, subgradients)`` of shapes ``(P,)`` and ``(P, d)`` with
        ``values.sum() == R(w)`` and ``subgradients.sum(0)`` a subgradient of ``R`` at ``w``:
        the partial risks :math:`R_p` of P-BMRM ([UF12]_ Sec. 3.3).
        """
        return self._group_evaluate(w, n_groups)[:2]

    def _group_evaluate(self, w: np.ndarray, n_groups: int):
        """:meth:`group_value_and_subgradients` and the dual point of the whole risk (None
        unless a margin loss): part ``p``'s plane is that of ``t`` restricted to its rows."""
        bounds, parts = cached_group_parts(self, n_groups, self.data.rows)
        n_groups = len(parts)
        z = self.data.dot(w)
        g = np.empty(self.m)
        self._grad_kernel(z, self.y, self.c, np.zeros(self.m), g)
        values = np.empty(n_groups)
        subgradients = np.empty((n_groups, self.dim))
        for p, (s, e) in enumerate(zip(bounds[:-1], bounds[1:])):
            values[p] = self._value_kernel(z[s:e], self.y[s:e], self.c[s:e])
            subgradients[p] = parts[p].rdot(g[s:e])
        return values, subgradients, self._dual_of_gradient(g)

    def _value_subgradient_dual(self, w, scores=None):
        """``(R(w), a, t)``: value and subgradient as :meth:`value_and_subgradient`, and for a
        margin loss the dual point :math:`t_i = -y_i g_i / c_i` (:math:`g_i = c_i l'(z_i, y_i)`
        the kernel's derivative), whose ``dual_plane(t)`` is the plane ``(a, R(w) - <a, w>)``
        (Fenchel-Young with equality at :math:`t`); None for other losses. Same data passes.
        A subclass or instance that overrides ``_value_and_subgradient`` is honoured (no dual
        point then: its planes are not known to be those of a dual point).

        ``scores``: the scores :math:`Xw` when the caller knows them (:meth:`scores`; a
        linear combination of known scores): only the pass :math:`X^T g` is made. Ignored
        when :attr:`scores_supported` is False."""
        if ("_value_and_subgradient" in self.__dict__
                or type(self)._value_and_subgradient is not ScalarLoss._value_and_subgradient):
            r, a = self._value_and_subgradient(w)
            return r, a, None
        if scores is None:  # one read of the rows where the loss has a fused kernel
            r, a, g = self._evaluate_once(w)
            return r, a, self._dual_of_gradient(g)
        g = np.empty(self.m)
        r = self._grad_kernel(scores, self.y, self.c, np.zeros(self.m), g)
        return r, self.data.rdot(g), self._dual_of_gradient(g)

    def _dual_of_gradient(self, g):
        if self.dual_upper is None:
            return None
        c = self.__dict__.get("_c_positive")
        if c is None or c[0] is not self.c:  # the weights with 0 replaced by 1, kept
            c = (self.c, np.where(self.c > 0, self.c, 1.0))
            self.__dict__["_c_positive"] = c
        t = np.multiply(self.y, g)
        np.negative(t, out=t)
        t /= c[1]
        return np.clip(t, 0.0, self.dual_upper, out=t)

    def batch_subgradient(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """A subgradient of the unweighted mean loss over the examples ``rows`` (for SGD)."""
        Xb = self.data.X[rows]
        z = np.asarray(Xb @ w).reshape(-1)
        g = np.empty(z.size)
        self._grad_kernel(z, self.y[rows], np.full(z.size, 1.0 / z.size), np.zeros(z.size), g)
        return np.asarray(Xb.T @ g).reshape(-1)

    # --- Fenchel dual (margin losses with a known conjugate) ----------------------------
    #: For a margin loss :math:`l(z, y) = \phi(yz)` with :math:`\phi' \le 0`, the dual
    #: variable of example i is :math:`t_i = -y_i\, l'(z_i, y_i) \in [0,` ``dual_upper`` :math:`]`
    #: and :math:`l^*(-y t, y) =` ``conjugate_terms(t)``. None: no dual interface.
    dual_upper: float | None = None

    def conjugate_terms(self, t: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """:math:`l^*(-y_i t_i, y_i)` per example, for ``t`` in the dual domain."""
        raise NotImplementedError

    def dual_curvature(self, t: np.ndarray) -> np.ndarray:
        """Metric for moving dual variables: :math:`l''` at the score matching ``t`` (the
        Hessian weights of the risk), 1 where the loss is piecewise linear."""
        return np.ones_like(t)

    def dual_variables(self, w: np.ndarray) -> np.ndarray:
        r""":math:`t_i = -y_i\, l'(\langle x_i, w\rangle, y_i)` (default subgradient), one
        data pass."""
        g = np.empty(self.m)
        self._grad_kernel(self.data.dot(w), self.y, self.c, np.zeros(self.m), g)
        c = np.where(self.c > 0, self.c, 1.0)
        return np.clip(-self.y * g / c, 0.0, self.dual_upper)

    def dual_plane(self, t: np.ndarray) -> tuple[np.ndarray, float]:
        r"""The plane of the dual point ``t``: :math:`R(v) \ge \langle a, v\rangle + b` for all
        v, with :math:`a = -X^T(c \circ y \circ t)`, :math:`b = -\sum_i c_i\, l^*(-y_i t_i,
        y_i)`, valid for every ``t`` in the domain (Fenchel-Young, example by example). One
        data pass."""
        t = np.clip(t, 0.0, self.dual_upper)
        return self.data.rdot(-self.c * self.y * t), -float(self.c @ self.conjugate_terms(t))

    # --- predictions --------------------------------------------------------------------
    def decision_function(self, X, w) -> np.ndarray:
        """Scores ``X w`` for new data ``X``."""
        X = check_data(X)
        return np.asarray(X @ check_vector(w, self.dim, "w")).reshape(-1)


class ScalarLine(LineFunction):
    r""":math:`\varphi(\eta) = \sum_i c_i\, l(f_i + \eta q_i, y_i)` for fixed :math:`f = Xw`,
    :math:`q = Xp`: each evaluation is O(m), independent of the number of features."""

    cheap_derivative = True

    def __init__(self, loss: ScalarLoss, f: np.ndarray, q: np.ndarray):
        self.loss, self.f, self.q = loss, f, q
        self._sign = None
        self._buf = None
        self._last = None
        kinks = loss.kinks()
        self._kinks = None if kinks is None else np.asarray(kinks, dtype=np.float64)
        self._fused = self._line_kernels()

    def _line_kernels(self):
        """``(value, derivative, value_and_derivative, args, params)`` of the loss's line
        kernels (:data:`~nsopt.losses._kernels.LINE_KERNELS`: one loop over ``f``, ``q``, no
        scores allocated), or None: for a loss without them, or one whose gradient kernel is
        overridden (the line then goes through :meth:`ScalarLoss._grad_kernel`)."""
        loss = self.loss
        if "_grad_kernel" in vars(loss) or type(loss)._grad_kernel is not ScalarLoss._grad_kernel:
            return None
        if len(loss.kernels) < 2 or "_value_kernel" in vars(loss) \
                or type(loss)._value_kernel is not ScalarLoss._value_kernel:
            return None
        kernels = LINE_KERNELS.get(loss.kernels[1])
        if kernels is None:
            return None
        f, q = np.asarray(self.f), np.asarray(self.q)
        if f.dtype != np.float64 or q.dtype != np.float64 or f.ndim != 1 or q.shape != f.shape:
            return None
        k = self._kinks
        if k is None:
            k = np.empty((f.size, 0))
        elif k.ndim == 1:
            k = k[:, None]
        if k.shape[0] != f.size:
            return None
        params = tuple(float(getattr(loss, n)) for n in loss.kernel_params)
        return (*kernels, (f, q, loss.y, loss.c, np.ascontiguousarray(k)), params)

    def _snap(self, z: np.ndarray, eta: float) -> np.ndarray:
        """Put scores within rounding of a kink exactly on it: at a computed breakpoint
        ``eta = (k - f_i)/q_i``, ``f_i + eta q_i`` may miss ``k`` by an ulp, and the one-sided
        derivatives would then describe the wrong side of the kink."""
        k = self._kinks
        if k is None or eta == 0:  # at eta = 0 the scores are exact: no rounding to undo
            return z
        scale = np.abs(self.f) + np.abs(eta * self.q)
        cols = k[:, None] if k.ndim == 1 else k
        for j in range(cols.shape[1]):
            kj = cols[:, j]
            near = np.abs(z - kj) <= 8 * np.finfo(np.float64).eps * (scale + np.abs(kj))
            z = np.where(near, kj, z)
        return z

    def value(self, eta):
        if self._fused is not None:
            val, _, _, args, params = self._fused
            return float(val(*args[:4], float(eta), *params, 0.0))
        return float(self.loss._value_kernel(self.f + eta * self.q, self.loss.y, self.loss.c))

    def _scores_at(self, eta) -> np.ndarray:
        """The snapped scores at ``eta``; the last ones are kept (a search asks for both
        one-sided derivatives at the same step)."""
        last = self._last
        if last is not None and last[0] == eta:
            return last[1]
        z = self.f if eta == 0 else self._snap(self.f + eta * self.q, eta)
        self._last = (eta, z)
        return z

    def derivative(self, eta, side=1):
        r"""The one-sided derivative :math:`\varphi'(\eta; \pm) = \sum_i c_i q_i\,
        l'(f_i + \eta q_i, y_i; \pm\mathrm{sign}(q_i))` (``side`` +1: right, -1: left), in one
        compiled loop where the loss has line kernels (no log1p for the logistic loss),
        else from the gradient kernel."""
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side}")
        if self._fused is not None:
            _, der, _, args, params = self._fused
            return float(der(*args, float(eta), float(side), *params, 0.0))
        z = self._scores_at(float(eta))
        if self._sign is None:
            self._sign, self._buf = np.sign(self.q), np.empty_like(self.f)
        self.loss._grad_kernel(z, self.loss.y, self.loss.c, side * self._sign, self._buf)
        return float(_dot(self._buf, self.q, 0.0))

    def value_and_derivative(self, eta, side=1):
        r"""``(value(eta), derivative(eta, side))`` in one pass over the scores where the loss
        has line kernels (one exp and one log1p an example for the logistic loss), else by the
        two calls; the same numbers either way."""
        if side not in (1, -1):
            raise ValueError(f"side must be +1 or -1, got {side}")
        if self._fused is not None:
            _, _, both, args, params = self._fused
            v, d = both(*args, float(eta), float(side), *params)
            return float(v), float(d)
        return self.value(eta), self.derivative(eta, side)

    def breakpoints(self):
        kinks = self._kinks
        if kinks is None:
            return np.empty(0)
        return np.sort(self._kink_etas(np.flatnonzero(self.q != 0)))

    @property
    def affine_between_breakpoints(self) -> bool:
        return self.loss.piecewise_linear or self.loss.piecewise_quadratic

    def _kink_etas(self, nz):
        """The steps ``eta`` at which the examples ``nz`` (with ``q_i != 0``) reach their
        kinks, raveled example by example."""
        k = self._kinks[nz]
        f, q = self.f[nz], self.q[nz]
        if k.ndim == 2:
            f, q = f[:, None], q[:, None]
        # a kink beyond the float range (|k - f| / |q| > 1.8e308, q subnormal) is +-inf: no
        # finite eta reaches it, and minimize drops it; no overflow warning for that
        with np.errstate(over="ignore"):
            return ((k - f) / q).ravel()

    def jumps(self):
        r"""For a piecewise-linear loss, the breakpoints (unsorted) and the jump of
        :math:`\varphi'` at each: example i's kink :math:`k` is reached at
        :math:`\eta = (k - f_i) / q_i`, where :math:`\varphi'` grows by
        :math:`q_i (g^+ - g^-)`, :math:`g^\pm` the one-sided derivatives of
        :math:`c_i l(\cdot, y_i)` at :math:`k` in the directions :math:`\pm\mathrm{sign}(q_i)`
        (two element-wise passes, no data pass). None for other losses."""
        if not self.loss.piecewise_linear or self._kinks is None:
            return None
        nz = np.flatnonzero(self.q != 0)
        # q_i (g+ - g-) with g+- taken in the directions +-sign(q_i) is |q_i| times the jump
        # of c_i l'(., y_i) at its kink (negating a difference is exact): the same numbers,
        # from per-example jumps computed once per loss
        size = _kink_jump_sizes(self.loss, self._kinks)[nz]
        q = np.abs(self.q[nz])
        steps = size * (q if size.ndim == 1 else q[:, None])
        return self._kink_etas(nz), steps.ravel()


def _kink_jump_sizes(loss: ScalarLoss, kinks: np.ndarray) -> np.ndarray:
    """``c_i (l'(k_i+, y_i) - l'(k_i-, y_i))`` at every kink ``k_i`` (the shape of
    ``kinks``): two element-wise passes, once per loss (kept on it, with the kinks, labels
    and weights it was computed for)."""
    cached = loss.__dict__.get("_kink_jumps")
    if (cached is not None and cached[1] is loss.y and cached[2] is loss.c
            and np.array_equal(cached[0], kinks)):
        return cached[3]
    cols = kinks[:, None] if kinks.ndim == 1 else kinks
    up, down = np.empty(loss.m), np.empty(loss.m)
    ones = np.ones(loss.m)
    size = np.empty(cols.shape)
    for j in range(cols.shape[1]):
        z = np.ascontiguousarray(cols[:, j])
        loss._grad_kernel(z, loss.y, loss.c, ones, up)
        loss._grad_kernel(z, loss.y, loss.c, -ones, down)
        size[:, j] = up - down
    size = size[:, 0] if kinks.ndim == 1 else size
    loss.__dict__["_kink_jumps"] = (kinks, loss.y, loss.c, size)
    return size
