"""The one loop every solver runs in.

A solver class holds configuration only and implements two methods, ``init(problem, x0) ->
State`` and ``step(problem, state) -> State`` (the jaxopt pattern). The loop here owns the
rest, once for all solvers: argument checks, the counting/caching oracle, the best point
seen, the certificate (the solver's own bound or the shared plane certifier), stopping on
``gap <= max(atol, rtol * |fun|)``, ``max_iter`` and ``max_time``, the callback
(``True`` or ``StopIteration`` stops), Ctrl-C, the NaN check, the history and the
:class:`~nsopt.result.Result`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from numbers import Integral, Real
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from .._threads import blas_limit, limited
from .._validation import (Boolean, Interval, NoneOr, Option, Options, Satisfies,
                           check_callback, check_vector, validate_options)
from ..certificate import Certificate, L1DualCertifier, OraclePlanes, PlaneCertifier
from ..oracle import (CountingOracle, Evaluation, NonConvexError, Oracle, OracleNumericalError, freeze,
                      rounding_allowance)
from ..problem import RegularizedRisk, as_problem
from ..result import History, Result, Status
from ._clock import RunClock
from ._region import RegionCertifier, feasible_start, region_from_options
from ._registry import methods_supporting
from ._start import default_start

__all__ = ["Solver", "Option", "ProblemNotSupported", "BestPoint", "BestBound", "StateFacts",
           "state_facts", "bare_oracle"]


class ProblemNotSupported(TypeError):
    """The solver cannot handle this problem; the message says what it needs."""


def _time_share(v):
    """``("time", share)``: a share of the run time for the dual certifier."""
    if not isinstance(v, tuple):
        raise TypeError
    if len(v) != 2 or not isinstance(v[0], str) or v[0] != "time":
        raise ValueError
    return ("time", _SHARE.check(v[1]))


_SHARE = Interval(Real, 0, 1, closed="right")


def _centre(v):
    """A centre: a 1-D array of finite reals (its length is checked against the problem's)."""
    if not isinstance(v, (list, tuple, np.ndarray)):
        raise TypeError
    try:
        a = np.array(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError from None
    if a.ndim != 1 or not np.all(np.isfinite(a)):
        raise ValueError
    return a

COMMON_OPTIONS = {
    "rtol": Option(1e-3, Interval(Real, 0, None, closed="left"),
                   doc="stop when gap <= rtol * |fun|"),
    "atol": Option(0.0, Interval(Real, 0, None, closed="left"), doc="stop when gap <= atol"),
    "max_iter": Option(None, NoneOr(Interval(Integral, 0, None, closed="left")),
                       doc="iteration limit"),
    "max_time": Option(None, NoneOr(Interval(Real, 0, math.inf, closed="right")),
                       doc="time limit in seconds (wall clock, less numba compilation)"),
    "verbose": Option(False, Boolean(), doc="print a progress table"),
    "check_convexity": Option(True, Boolean(),
                              doc="compare every oracle answer with the previous plane, the "
                                  "directional derivative and the stated lower_bound; a "
                                  "contradiction stops the run with status nonconvex"),
    "radius": Option(None, NoneOr(Interval(Real, 0, math.inf, closed="left")),
                     doc="a minimiser lies within radius of centre (a statement, not a "
                         "constraint): the cutting-plane model's minimum over that ball is a "
                         "lower bound for any oracle"),
    "centre": Option(None, NoneOr(Satisfies(_centre, "a 1-D array of finite numbers")),
                     doc="the centre of the radius ball (None: the origin)"),
    "blas_threads": Option("auto", NoneOr(Options(("auto", "keep"))),
                           Interval(Integral, 1, None, closed="left"),
                           doc="BLAS threads during the run (nsopt._threads): 'auto' (one, "
                               "unless the data hold a large dense block), 'keep' or None "
                               "(as configured), or this many; the caller's setting is "
                               "restored after the run"),
    "certify_every": Option(1, Interval(Integral, 1, None, closed="left"),
                            doc="solve the certifier's master dual every this many iterations"),
    "certify_planes": Option(100, Interval(Integral, 2, None, closed="left"),
                             doc="planes kept by the plane certifier"),
    "certify_dual": Option(True, Boolean(), _SHARE,
                           Satisfies(_time_share, "('time', share) with share in (0, 1]"),
                           doc="on L1 + margin losses, also bound by corrected Fenchel dual points "
                               "(L1DualCertifier): True (at most a quarter of the run's data "
                               "passes), False, the largest share of the passes in (0, 1] "
                               "(1 = every iteration), or ('time', share) for a share of the run "
                               "time (not reproducible)"),
}


#: The capabilities a solver may list in ``requires``: name -> (test, what it means). The base
#: class checks them for every solver, so a declared requirement is never silently ignored.
CAPABILITIES = {
    "regularized_risk": (lambda p: isinstance(p, RegularizedRisk),
                         "a RegularizedRisk(loss, reg, lam) (it uses the loss and the regularizer apart)"),
    "sup_subgradient": (lambda p: callable(getattr(p, "sup_subgradient", None)),
                        "an oracle with sup_subgradient(w, p)"),
    "restrict": (lambda p: callable(getattr(p, "restrict", None)),
                 "an oracle with restrict(w, p) (line restrictions)"),
}


class BestPoint:
    """Listener of the counting oracle that remembers the best point ever evaluated.

    ``exact`` says whether ``fun`` came from the oracle at ``w`` (a solver may offer a point it
    valued itself, e.g. on a line, whose value can differ from the oracle's by rounding: such a
    point is re-evaluated by :meth:`settle` before it is reported). ``scale`` is the largest
    magnitude of a value seen: the scale of rounding in bounds built from those values.
    """

    def __init__(self):
        self.w: np.ndarray | None = None
        self.fun = math.inf
        self.exact = True
        self.scale = 0.0

    def __call__(self, ev: Evaluation) -> None:
        self.offer(ev.w, ev.fun)

    def offer(self, w: np.ndarray, fun: float, exact: bool = True) -> None:
        if not math.isfinite(fun):
            return
        self.scale = max(self.scale, abs(fun))
        if fun < self.fun:
            self.fun, self.w, self.exact = fun, w, exact

    def settle(self, oracle) -> None:
        """Make ``fun`` the oracle's value at ``w`` (one oracle call when it is not already)."""
        if self.w is not None and not self.exact:
            ev = oracle.evaluate(self.w)
            self.w, self.fun, self.exact = ev.w, float(ev.fun), True


class BestBound:
    """The best proven lower bound offered so far, with its evidence and its source (the twin of
    :class:`BestPoint`): the solver's own bound, the plane certifier's, a dual point's."""

    def __init__(self):
        self.value = -math.inf
        self.evidence = None
        self.source = "none"

    def offer(self, value: float, evidence, source: str) -> bool:
        """Keep ``value`` if it beats the best so far; say whether it did."""
        if value > self.value:  # NaN never wins
            self.value, self.evidence, self.source = float(value), evidence, source
            return True
        return False


class StateFacts(NamedTuple):
    """The facts a solver's ``State`` may state to the loop, each with the value the loop
    takes when the State has no such field.

    A State (a NamedTuple) *provides* a fact by having a field of that name, with this
    meaning; its solver class lists them in ``Solver.state_facts`` (derived from
    ``State._fields`` when the class is defined). The loop reads them through
    :func:`state_facts` and nothing else of a State (besides ``history_fields``)."""

    #: a lower bound on the optimum the solver proved itself (-inf: none)
    lower_bound: float = -math.inf
    #: its proof, an :class:`~nsopt.certificate.Evidence` (a bound without one is not reported)
    evidence: Any = None
    #: a point the solver valued exactly without an oracle call (e.g. on a line), or None
    w_best: np.ndarray | None = None
    #: its value (read only with ``w_best``)
    fun_best: float = math.inf
    #: the objective was found to decrease without bound (status ``unbounded``)
    unbounded: bool = False
    #: the solver's own stationarity test holds (status ``stationary``)
    stationary: bool = False
    #: with ``stationary``: the norm of the eps-subgradient at the point (``Result.subgradient_norm``)
    subgradient_norm: float = math.nan
    #: with ``stationary``: its eps (``Result.linearization_error``)
    linearization_error: float = math.nan


_NO_FACTS = StateFacts()


def _state_fields(state_type: type) -> tuple[str, ...]:
    """The fields a State type declares: a NamedTuple's ``_fields`` (or a dataclass's)."""
    fields = getattr(state_type, "_fields", None)
    if fields is None and dataclasses.is_dataclass(state_type):
        fields = tuple(f.name for f in dataclasses.fields(state_type))
    if fields is None:
        raise TypeError(f"a solver's State must declare its fields (a NamedTuple, as every nsopt "
                        f"solver's State is); got {state_type.__name__}")
    return tuple(fields)


@functools.lru_cache(maxsize=None)
def _provided_facts(state_type: type) -> tuple[str, ...]:
    """The :class:`StateFacts` fields a State type declares (``fun_best`` only with
    ``w_best``: alone it is the solver's own bookkeeping, not a fact for the loop)."""
    fields = _state_fields(state_type)
    return tuple(f for f in StateFacts._fields
                 if f in fields and (f != "fun_best" or "w_best" in fields))


def state_facts(state) -> StateFacts:
    """What ``state`` states to the loop: the facts its type declares, the defaults of
    :class:`StateFacts` for the rest (all of them for no state: a run stopped inside
    ``init``)."""
    if state is None:
        return _NO_FACTS
    return StateFacts(**{name: getattr(state, name) for name in _provided_facts(type(state))})


def bare_oracle(problem: CountingOracle) -> bool:
    """Whether the run's problem (``problem.problem``, behind the loop's counting wrapper) is
    not a :class:`~nsopt.RegularizedRisk`: then no plane certifier runs, and a solver's own
    stationarity test or bound is all there is."""
    return not isinstance(problem.problem, RegularizedRisk)


#: what a step may raise that ends the run with a status instead of an exception
_STOPS = (KeyboardInterrupt, OracleNumericalError, NonConvexError)


def _tolerance(cfg, fun: float, lower: float, scale: float) -> float:
    """The gap that counts as closed: ``max(atol, rtol * |fun|)``, and never less than the
    rounding of the values the bound is computed from (1e-12 of the largest ``|f|`` met): a
    smaller gap is zero to that arithmetic, so a problem with ``f* = 0`` (where ``rtol * |fun|``
    vanishes) still stops once its gap is closed up to rounding."""
    return max(cfg["atol"], cfg["rtol"] * abs(fun),
               rounding_allowance(fun, lower if math.isfinite(lower) else 0.0, scale, rel=1e-12))


def takes_intermediate_result(callback) -> bool:
    """scipy's test for its callback form: the only parameter is named
    ``intermediate_result``."""
    import inspect

    try:
        parameters = inspect.signature(callback).parameters
    except (TypeError, ValueError):  # builtins without a signature: nsopt's form
        return False
    return set(parameters) == {"intermediate_result"}


def _ask_intermediate(callback, row: dict, x) -> Status | None:
    """Call a scipy-form callback on one history row (``x``: the best point): the status it
    asks for (``callback`` on True or ``StopIteration``, ``interrupted`` on Ctrl-C) or None."""
    from scipy.optimize import OptimizeResult

    res = OptimizeResult(x=None if x is None else np.array(x), fun=float(row["fun"]),
                         nit=int(row["iteration"]), lower_bound=float(row["lower_bound"]),
                         gap=float(row["gap"]), time=float(row["time"]), nfev=int(row["nfev"]))
    try:
        return Status.CALLBACK if callback(intermediate_result=res) else None
    except StopIteration:
        return Status.CALLBACK
    except KeyboardInterrupt:
        return Status.INTERRUPTED


def _stop_status(exc: BaseException, info: dict) -> Status:
    if isinstance(exc, KeyboardInterrupt):
        return Status.INTERRUPTED
    if isinstance(exc, OracleNumericalError):
        info["numerical_error"] = {"message": str(exc), "what": exc.what, "point": exc.point}
        return Status.NUMERICAL_ERROR
    info["nonconvex"] = {"message": str(exc), **exc.evidence}
    return Status.NONCONVEX


class Solver:
    """Base class of all solvers. Subclasses set ``name``, ``requires``, ``options`` and a
    ``State`` (a NamedTuple), and implement ``init`` and ``step``; see
    :mod:`nsopt.solvers._base`.

    What a ``State`` tells the loop are its facts (:class:`StateFacts`), each optional, each
    provided by a field of its name, listed per solver in ``state_facts``:

    * ``lower_bound`` (a valid lower bound proven by the solver itself) and ``evidence`` (its
      proof, an :class:`~nsopt.certificate.Evidence`, e.g.
      :class:`~nsopt.certificate.OraclePlanes` on a bare oracle: a bound without evidence is
      not reported);
    * ``w_best`` and ``fun_best`` (a point the solver valued exactly without an oracle call,
      e.g. by a line search);
    * ``unbounded`` (True when the objective was found to decrease without bound);
    * ``stationary`` (True when the solver's own stationarity test holds, for problems where
      no lower bound is known), with ``subgradient_norm`` and ``linearization_error`` (the
      eps-subgradient it rests on, reported in the ``Result``).

    The columns ``history_fields`` are State fields too (checked when the class is defined).
    ``self_certifying = True`` means the solver's bound is the certificate and the shared
    plane certifier is not attached.
    """

    name: str = ""
    requires: tuple[str, ...] = ()
    #: options without which the solver cannot run (level-bundle: ``bounds``):
    #: :func:`~nsopt.solvers.methods_supporting` lists it only when they are given
    required_options: tuple[str, ...] = ()
    options: dict[str, Option] = {}
    history_fields: tuple[str, ...] = ()
    self_certifying: bool = False
    #: the solver minimises the model over the stated region itself (no RegionCertifier)
    region_certifying: bool = False
    certificate_source: str = "bundle-dual"

    #: the :class:`StateFacts` this solver's ``State`` provides (derived from its fields)
    state_facts: tuple[str, ...] = ()

    #: the name in option messages (None: the class name)
    _label: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # options are read as attributes (self.tol): one named like a method or attribute of
        # the class (``step``, ``name``) would be shadowed by it
        clash = sorted(o for o in getattr(cls, "options", {}) if hasattr(cls, o))
        if clash:
            raise TypeError(f"{cls.__name__}.options {clash} are named like attributes of the "
                            "class, which would hide them: rename the options")
        state = getattr(cls, "State", None)
        if state is None:
            return
        cls.state_facts = _provided_facts(state)
        fields = _state_fields(state)
        missing = [f for f in cls.history_fields if f not in fields]
        if missing:
            raise TypeError(f"{cls.__name__}.history_fields names {missing}, which "
                            f"{cls.__name__}.State does not have")
        if "w_best" in cls.state_facts and "fun_best" not in cls.state_facts:
            raise TypeError(f"{cls.__name__}.State has w_best without fun_best (its value)")

    def __init__(self, **options):
        if options.get("bounds") is not None and "bounds" not in self.option_table():
            from ._registry import SOLVERS
            able = [n for n, c in SOLVERS.items() if "bounds" in c.option_table()]
            raise TypeError(
                f"{self._label or type(self).__name__} cannot keep its iterates in a box: bounds "
                f"is a constraint, taken by {able}; to certify an unconstrained run, state a "
                f"ball that holds a minimiser instead (radius=..., centre=...)")
        rows = [o for o in ("A_ub", "b_ub", "A_eq", "b_eq") if options.get(o) is not None]
        if rows and rows[0] not in self.option_table():
            from ._registry import SOLVERS
            able = [n for n, c in SOLVERS.items() if rows[0] in c.option_table()]
            raise TypeError(
                f"{self._label or type(self).__name__} cannot keep its iterates in a polyhedron: "
                f"{', '.join(rows)} (rows A_ub x <= b_ub, A_eq x = b_eq) constrain x, taken by "
                f"{able}")
        # self._options: the options given, validated, under their current names
        self.config, self._options = validate_options(
            self._label or type(self).__name__, self.option_table(), options)
        cfg = self.config
        if cfg["rtol"] == 0 and cfg["atol"] == 0 and cfg["max_iter"] is None and cfg["max_time"] is None:
            raise ValueError("rtol and atol are both 0 and neither max_iter nor max_time is set: "
                             "the run could never stop; set a tolerance or a limit")

    @classmethod
    def option_table(cls) -> dict[str, Option]:
        """Every option this solver takes: the common ones and its own (``options``)."""
        return {**COMMON_OPTIONS, **cls.options}

    def __getattr__(self, key):
        config = self.__dict__.get("config", {})
        if key in config:
            return config[key]
        raise AttributeError(f"{type(self).__name__} has no attribute {key!r}")

    def __repr__(self):
        own = ", ".join(f"{k}={self.config[k]!r}" for k in self.options)
        return f"{type(self).__name__}({own})"

    # --- to implement -------------------------------------------------------------------
    def init(self, problem: CountingOracle, x0: np.ndarray):  # pragma: no cover - abstract
        raise NotImplementedError

    def step(self, problem: CountingOracle, state):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def unsupported_reason(cls, problem: Oracle) -> str | None:
        """Why this solver cannot handle ``problem`` (None if it can): every capability named
        in ``requires`` (see :data:`CAPABILITIES`) is checked here, for every solver.
        Subclasses with requirements beyond those extend this."""
        for need in cls.requires:
            if need not in CAPABILITIES:
                raise ValueError(f"{cls.__name__}.requires names {need!r}, which is not a capability "
                                 f"nsopt knows; known: {sorted(CAPABILITIES)}")
            test, meaning = CAPABILITIES[need]
            if not test(problem):
                return f"method {cls.name!r} needs {meaning}, got {type(problem).__name__}"
        return None

    def check_problem(self, problem: Oracle) -> None:
        """Raise :class:`ProblemNotSupported` naming what is missing and which methods can."""
        reason = self.unsupported_reason(problem)
        if reason is not None:
            raise ProblemNotSupported(
                f"{reason}; methods that can solve this problem: {methods_supporting(problem)}"
            )

    # --- the loop -----------------------------------------------------------------------
    def _prepare(self, problem, x0, callback=None):
        problem = as_problem(problem)
        self.check_problem(problem)
        check_callback(callback)
        given = x0 is not None
        if x0 is None:
            x0 = default_start(problem)
        else:
            x0 = check_vector(x0, problem.dim, "x0", copy=True)
        region = region_from_options(self.config, problem.dim)
        if region is not None and region.kind == "box":
            x0 = np.clip(x0, region.lb, region.ub)  # a start outside the box: projected
        if region is not None and region.A_ub is not None:
            x0 = feasible_start(region, x0, given)  # rows: a given x0 must satisfy them
        freeze(x0)  # our own copy, read-only: the oracle keeps it without another copy
        oracle = CountingOracle(problem, check_convexity=self.config["check_convexity"])
        best = BestPoint()
        oracle.listeners.append(best)
        # the certifiers listen to the oracle calls and offer bounds with their evidence
        certifiers = []
        if isinstance(problem, RegularizedRisk) and not self.self_certifying:
            certifiers.append(PlaneCertifier(problem, max_planes=self.config["certify_planes"]))
        if region is not None and not self.region_certifying:
            certifiers.append(RegionCertifier(problem, region,
                                              max_planes=self.config["certify_planes"]))
        oracle.listeners.extend(certifiers)
        return problem, x0, oracle, best, certifiers

    def _dual_certifier(self, problem):
        """The L1 dual-point certifier where it applies (any solver: it adds to their bound)."""
        share = self.config["certify_dual"]
        if share is not False and L1DualCertifier.applies(problem):
            clock = "passes"
            if isinstance(share, tuple):
                clock, share = share
            return L1DualCertifier(problem, budget=0.25 if share is True else share, clock=clock)
        return None

    def _collect_bounds(self, facts, bound, certifiers, dual, best, *, due_planes, final, work,
                        proven=False):
        """Offer every available lower bound to ``bound``: the solver's own (from the state's
        ``facts``), the plane certifier's, the dual point's (a KeyboardInterrupt inside
        propagates to the caller). A bound without evidence is never offered: every reported
        bound is checkable. ``work`` is what the dual certifier's budget is counted in (data
        passes by default)."""
        if facts.lower_bound > -math.inf and facts.evidence is not None:
            bound.offer(facts.lower_bound, facts.evidence, self.source_of(facts.evidence))
        for c in certifiers if due_planes or final else ():
            value, evidence = c.bound(final)
            if evidence is not None:
                bound.offer(value, evidence, c.source)
        # the dual point's last try is skipped once the gap is proven (``proven``): it could
        # only tighten a bound that already certifies, at the price of its Newton rounds
        if dual is not None and ((final and not proven) or dual.due(work)):
            value, evidence = dual.bound(best.w)
            dual.feedback(bound.offer(value, evidence, "dual-point"))

    def run(self, problem, x0=None, callback=None) -> Iterator[tuple[Any, Any, Status | None]]:
        """The loop itself, for progress displays: yields ``(state, row, None)`` after init and
        after each step, where ``row`` is the history row (iteration, time, fun, lower_bound,
        gap, nfev and the solver's columns: the certified values), then once
        ``(state, result, status)`` when the run has stopped. :meth:`solve` and
        :meth:`iterate` are thin wrappers of it.

        The status follows one rule (see :class:`~nsopt.result.Status`): ``converged`` exactly
        when the proven gap is within ``max(atol, rtol * |fun|)``. A lower bound above the best
        value by more than rounding is a contradiction (status ``nonconvex``); by rounding
        alone it is clamped to the value (gap 0). ``fun`` is always the oracle's value at ``x``.
        Times (the rows' ``time``, ``Result.time``, ``max_time``) leave out numba's compilation
        of kernels (:class:`~nsopt.solvers._clock.RunClock`).
        """
        # the BLAS limit holds while the loop works, not while the caller holds a state
        yield from limited(self._run(problem, x0, callback),
                           lambda: blas_limit(self.config["blas_threads"], problem))

    def _run(self, problem, x0, callback):
        with RunClock() as clock:
            yield from self._loop(problem, x0, callback, clock)

    def _loop(self, problem, x0, callback, clock):
        problem, x0, oracle, best, certifiers = self._prepare(problem, x0, callback)
        # scipy's form, callback(intermediate_result): called on each row (best x, bounds)
        rows_callback = callback is not None and takes_intermediate_result(callback)
        dual = self._dual_certifier(problem)
        cfg = self.config
        history = History(self.history_fields)
        printer = _Printer() if cfg["verbose"] else None
        t0 = clock.start()
        oracle.deadline = None if cfg["max_time"] is None else t0 + cfg["max_time"]
        for c in certifiers:
            c.deadline = oracle.deadline
        clock.holders = [oracle, *certifiers]   # deadlines move past compilations
        # the best bound with its evidence (nsopt.certificate.Evidence): every problem, a
        # RegularizedRisk or a bare oracle, gets a certificate that Certificate.check verifies
        bound = BestBound()
        stated = getattr(problem, "lower_bound", -math.inf)
        if not isinstance(problem, RegularizedRisk) and math.isfinite(stated):
            # the oracle's own floor: every method certifies with it (checked by re-reading it)
            bound.offer(stated, OraclePlanes((), np.zeros(0), floor=1.0, floor_value=stated),
                        "lower-bound")
        info: dict = {}
        nit = 0
        status = None
        state = None
        stepped = True          # whether the row for ``nit`` is still to be written
        try:
            state = self.init(oracle, x0)
        except _STOPS as exc:
            status = _stop_status(exc, info)
        facts = state_facts(state)
        if best.w is not None:
            x0 = None  # the start is only the fallback answer when no finite value was seen
        while True:
            final = status is not None
            try:
                self._collect_bounds(facts, bound, certifiers, dual, best, final=final,
                                     proven=status is Status.CONVERGED,
                                     due_planes=nit % cfg["certify_every"] == 0,
                                     work=(2 * oracle.nfev if dual is not None and dual.clock == "passes"
                                           else clock()))
            except KeyboardInterrupt:
                status = status or Status.INTERRUPTED
            fun, lower = best.fun, bound.value
            # bounds are sums of plane values of magnitude up to best.scale (the largest value seen)
            if status is None and lower > fun + rounding_allowance(fun, lower, best.scale, rel=1e-12):
                status = Status.NONCONVEX
                info["nonconvex"] = {
                    "message": f"the proven lower bound {lower!r} ({bound.source}) exceeds the value "
                               f"{fun!r} observed at x: the oracle's planes contradict its values",
                    "w": best.w, "f": fun, "lower_bound": lower, "source": bound.source}
            if status is None:
                tol = _tolerance(cfg, fun, lower, best.scale)
                if max(fun - lower, 0.0) <= tol and not best.exact:
                    try:
                        best.settle(oracle)    # decide on the oracle's value at x, not a line's
                    except _STOPS as exc:
                        status = _stop_status(exc, info)
                    fun = best.fun
                    tol = _tolerance(cfg, fun, lower, best.scale)
            if status is None:
                if not math.isfinite(fun):
                    status = Status.NUMERICAL_ERROR
                    info.setdefault("numerical_error", {"message": "no finite value was observed"})
                elif max(fun - lower, 0.0) <= tol:
                    status = Status.CONVERGED
                elif facts.unbounded:
                    status = Status.UNBOUNDED
                elif facts.stationary:
                    status = Status.STATIONARY
                elif cfg["max_iter"] is not None and nit >= cfg["max_iter"]:
                    status = Status.MAX_ITER
                elif cfg["max_time"] is not None and clock() >= cfg["max_time"]:
                    status = Status.MAX_TIME
            if status is not None and status is not Status.NONCONVEX:
                try:
                    best.settle(oracle)
                except _STOPS as exc:
                    if status is Status.CONVERGED:
                        status = _stop_status(exc, info)
                fun = best.fun
            if status is not Status.NONCONVEX:
                lower = min(lower, fun)  # a bound above fun by rounding only: clamped, gap 0
            row = dict(iteration=nit, time=clock(), fun=fun, lower_bound=lower,
                       gap=fun - lower, nfev=oracle.nfev)
            if state is not None:
                for f in self.history_fields:
                    row[f] = getattr(state, f)     # a State field (checked at class definition)
            if state is None:
                pass  # stopped inside init: no iteration to record
            elif stepped:
                history.append(**row)
            else:
                history.replace_last(**row)
            if printer:
                printer(row, final=status is not None)
            if (rows_callback and state is not None and nit >= 1
                    and status not in (Status.CALLBACK, Status.INTERRUPTED)):
                asked = _ask_intermediate(callback, row, best.w)
                if asked is not None and status is None:
                    status, stepped = asked, False
                    continue  # the top again: final bound, this row replaced, then stop
            if status is not None:
                break
            yield state, row, None
            try:
                state = self.step(oracle, state)
            except _STOPS as exc:
                status, stepped = _stop_status(exc, info), False
                continue  # one more pass through the top: final bound and final row
            nit += 1
            facts = state_facts(state)
            # a point the solver valued without an oracle call (e.g. on a line)
            if facts.w_best is not None:
                best.offer(facts.w_best, facts.fun_best, exact=False)
            if callback is not None and not rows_callback:
                try:
                    if callback(state):
                        status = Status.CALLBACK
                except StopIteration:
                    status = Status.CALLBACK
                except KeyboardInterrupt:
                    status = Status.INTERRUPTED
        if printer:
            printer.finish(status)
        if status is Status.NONCONVEX:
            lower, bound.evidence, bound.source = -math.inf, None, "none"
        x = best.w if best.w is not None else freeze(np.array(x0, dtype=np.float64))
        oracle.forget()  # the last evaluation's vectors are not needed past here (memory at large d)
        cert = Certificate.from_evidence(problem, x, best.fun, lower, bound.source, bound.evidence)
        if state is not None:
            info = {**self.info(state), **info}
        info["compile_time"] = clock.compiling  # numba's compilations, left out of time
        stationary = status is Status.STATIONARY
        result = Result(
            x=np.array(x), fun=float(best.fun), lower_bound=float(lower),
            gap=float(best.fun - lower), nit=nit, nfev=oracle.nfev, status=status,
            success=status.success, message=status.message, time=clock(),
            history=history.as_arrays(), certificate=cert, method=self.name, info=info,
            subgradient_norm=float(facts.subgradient_norm) if stationary else math.nan,
            linearization_error=float(facts.linearization_error) if stationary else math.nan,
        )
        yield state, result, status

    def source_of(self, evidence) -> str:
        """The certificate source to report for the solver's own ``evidence``
        (``certificate_source`` unless a solver has bounds of several kinds)."""
        return self.certificate_source

    def info(self, state) -> dict:
        """Solver-specific diagnostics for ``Result.info`` (documented by each solver)."""
        return {}

    def solve(self, problem, x0=None, callback: Callable | None = None) -> Result:
        """Minimise ``problem`` from ``x0`` (zeros by default) and return a :class:`Result`.

        ``callback(state)`` is called after every step; returning True (or raising
        ``StopIteration``) stops the run with status ``callback``. A callback whose only
        parameter is named ``intermediate_result`` (scipy's form) is called instead with a
        ``scipy.optimize.OptimizeResult`` of the step's history row and the best point
        (``x, fun, nit, lower_bound, gap, time, nfev``), after the step's bounds are
        collected, on every step including the last.
        """
        # the BLAS limit (option blas_threads) for the whole run, the user's setting restored
        # on the way out, also on an exception or Ctrl-C
        with blas_limit(self.config["blas_threads"], problem):
            run = self.run(problem, x0, callback)   # its own limit is then already in force
            try:
                for state, out, status in run:
                    if status is not None:
                        return out
                    # let the yielded state go: after the last step the loop builds the result
                    # while this name would still hold the state before it (d-vectors at large d)
                    del state
            finally:
                run.close()   # under the limit: the clock's listener goes now, not at collection
        raise AssertionError("unreachable")  # pragma: no cover

    def iterate(self, problem, x0=None) -> Iterator:
        """Yield the solver's ``State`` after init and after every step (the final one
        included), for teaching and custom stopping rules; stops on the solver's own
        stopping rules."""
        last = None
        for state, _, status in self.run(problem, x0):
            if status is not None and state is last:
                return  # stopped inside a step: this state was already yielded
            yield state
            last = state


class _Printer:
    """Plain-text progress table for ``verbose=True`` (rows at 0-10, then sparser)."""

    def __init__(self):
        self.header = f"{'iter':>6} {'time':>8} {'fun':>14} {'lower_bound':>14} {'gap':>10} {'rel.gap':>9} {'nfev':>6}"
        self.n = 0

    def __call__(self, row, final=False):
        it = row["iteration"]
        if not (final or it <= 10 or (it <= 100 and it % 10 == 0) or it % 100 == 0):
            return
        if self.n % 20 == 0:
            print(self.header)
        self.n += 1
        rel = row["gap"] / max(abs(row["fun"]), 1e-300)
        print(f"{it:>6} {row['time']:>8.3f} {row['fun']:>14.8g} {row['lower_bound']:>14.8g} "
              f"{row['gap']:>10.3g} {rel:>9.2e} {row['nfev']:>6}")

    def finish(self, status):
        print(f"status: {status.value}: {status.message}")
