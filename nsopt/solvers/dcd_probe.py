r"""Dual coordinate descent probed: a few epochs decide whether it goes on or LS-BMRM takes over.

The number of epochs dual coordinate descent needs is not told by its conditioning
:math:`\kappa = \max_i c_i\|x_i\|^2/\lambda` alone: on nearly separable data (mushrooms, hinge,
:math:`\lambda = 10^{-6}`, :math:`\kappa = 2585`) it certifies in a few hundred cheap (shrunk)
epochs, 0.04-0.22x LS-BMRM's time, while on a9a and letter at the same :math:`\lambda`
(:math:`\kappa` 430 and 652) it needs thousands and loses to LS-BMRM. What tells them apart
is how fast the dual bound climbs: after five epochs from :math:`t = 0` the proven bound
:math:`D(t)` is 41% of :math:`J(w(t))` on mushrooms, 1.1% on a9a and 3.4% on letter (the
same at :math:`\lambda = 10^{-7}`; docs/solvers.md, "Measurements behind some defaults").
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from .._validation import Interval, Option
from ..certificate import DualPoint
from ._base import Solver
from ._registry import register
from .dcd import DCD
from .ls_bmrm import LSBMRM

__all__ = ["DCDProbe"]

#: the phases' names, as ``Result.info["finisher"]`` reports them
_DCD, _LS_BMRM = DCD.name, LSBMRM.name


@register
class DCDProbe(Solver):
    r"""Dual coordinate descent for ``probe_epochs`` epochs, then on, or LS-BMRM from its point.

    The probe is :class:`~nsopt.solvers.DCD` for ``probe_epochs`` epochs from :math:`t = 0` and
    one exact check (a data pass: the proven bound :math:`D(t)` and :math:`J(x)` at its point
    :math:`x = w(t)`). When the bound has reached ``probe_share`` of the value,

    .. math:: D(t) \ge \text{probe\_share}\cdot J(x),

    the same dual coordinate descent goes on from its state (nothing is redone: its later
    checks are decided by its gap estimate as in ``DCD``); else :class:`~nsopt.solvers.LSBMRM`
    runs from :math:`x` (``x0 = x``; its first oracle call is at :math:`x`).

    Parameters
    ----------
    probe_epochs : int, default 5
        Epochs of the probe (each O(nnz(X)), less with shrinking).
    probe_share : float in (0, 1), default 0.1
        The share of :math:`J(x)` the probe's bound must reach for dual coordinate descent to
        go on. Measured (hinge, five epochs): 0.41 on mushrooms (:math:`\lambda` 1e-5 ...
        1e-7), where dcd wins; 0.011-0.048 on a9a and 0.034-0.14 on letter at
        :math:`\lambda \le 10^{-6}`, where LS-BMRM wins.
    random_state : int, default 0
        Seed of dual coordinate descent's permutations.
    **common
        ``rtol, atol, max_iter, max_time, verbose`` (see :func:`nsopt.minimize`); one
        iteration is one of the running method's (the probe is the first).

    Notes
    -----
    Certificate: the running method's own. The probe's and dcd's bounds are their dual points'
    (source ``"dual-point"``, :class:`~nsopt.certificate.DualPoint`); after the hand-over,
    LS-BMRM's master dual over its planes (source ``"bundle-dual"``). The loop keeps the best
    proven bound of either, so the reported bound is never below the probe's; a ``success``
    is a gap proven by one of them. The cost of a probe that hands over: ``probe_epochs``
    epochs and a check, about ``probe_epochs + 1`` data passes (on a9a and letter at
    :math:`\lambda = 10^{-6}`, LS-BMRM's 50-330 iterations cost 3-20 passes each).

    ``Result.info``: ``finisher`` (``"dcd"`` or ``"ls-bmrm"``), ``probe_share`` (the probe's
    :math:`D(t)/J(x)`), and the finishing method's own entries.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> res = nsopt.minimize(J, method="dcd-probe", rtol=1e-4)
    >>> res.success, res.info["finisher"], res.certificate.source
    (True, 'dcd', 'dual-point')
    """

    name = "dcd-probe"
    requires = ("regularized_risk", "restrict")
    self_certifying = True
    certificate_source = DCD.certificate_source
    options = {
        "probe_epochs": Option(5, Interval(Integral, 1, None, closed="left"),
                               doc="epochs of dual coordinate descent before the probe's check"),
        "probe_share": Option(0.1, Interval(Real, 0, 1, closed="neither"),
                              doc="dcd goes on when its proven bound is at least this share of "
                                  "the value after the probe; else LS-BMRM takes over"),
        "random_state": DCD.options["random_state"],
    }

    @classmethod
    def unsupported_reason(cls, problem):
        reason = DCD.unsupported_reason(problem)
        return reason if reason is not None else LSBMRM.unsupported_reason(problem)

    class State(NamedTuple):
        phase: str                 # the running method: "dcd" or "ls-bmrm"
        inner: object              # its State
        lower_bound: float         # the running method's proven bound ...
        evidence: object           # ... and its proof
        w_best: np.ndarray | None  # the running method's point valued without an oracle call
        fun_best: float
        probe_share: float         # D(t) / J(x) after the probe

    def __init__(self, **options):
        super().__init__(**options)
        # the probe's dcd (probe_epochs epochs to its check), dcd as it goes on, LS-BMRM: the
        # tolerances of this run (only their init and step run, in this run's loop)
        self._common = common = {k: self.config[k]
                                 for k in ("rtol", "atol", "max_iter", "max_time")}
        self._probe = DCD(check_every=self.probe_epochs, random_state=self.random_state,
                          **common)
        self._phases = {_DCD: DCD(random_state=self.random_state, **common),
                        _LS_BMRM: LSBMRM(**common)}

    def _wrap(self, phase, inner, share):
        return self.State(phase=phase, inner=inner, lower_bound=inner.lower_bound,
                          evidence=inner.evidence, w_best=inner.w_best, fun_best=inner.fun_best,
                          probe_share=share)

    def init(self, problem, x0):
        probe = self._probe
        s = probe.step(problem, probe.init(problem, x0))        # the probe: epochs, one check
        fun = s.fun_best
        share = s.lower_bound / fun if fun > 0 and math.isfinite(fun) else 1.0
        if share >= self.probe_share:
            return self._wrap(_DCD, s, share)
        # LS-BMRM from the probe's point (its first oracle call is there)
        start = s.w if s.w is not None else x0
        ls = self._phases[_LS_BMRM]
        if s.evidence is not None and s.evidence.plane is not None:
            # and with the probe's dual plane R(v) >= <a, v> + b in its bundle: its first
            # master bound is at least the probe's D(t)
            a, b = s.evidence.plane
            ls = LSBMRM(planes=(np.asarray(a)[None, :], np.array([float(b)])), **self._common)
        return self._wrap(_LS_BMRM, ls.init(problem, start), share)

    def step(self, problem, s):
        inner = self._phases[s.phase].step(problem, s.inner)
        return self._wrap(s.phase, inner, s.probe_share)

    def source_of(self, evidence):
        # dcd's evidence is the DualPoint its check made; LS-BMRM's is its bundle's (a
        # DualPoint too on these margin losses, of a subclass that defers its sums)
        return DCD.certificate_source if type(evidence) is DualPoint else \
            LSBMRM.certificate_source

    def info(self, s):
        inner = self._phases[s.phase].info(s.inner)
        return {"finisher": s.phase, "probe_share": s.probe_share, **inner}
