"""``nsopt.minimize``: one entry point for every solver.

It takes an :class:`~nsopt.Oracle` (``minimize(problem, method, x0)``) or, in scipy's
convention, a plain function with its subgradient (``minimize(fun, x0, jac=True)``);
``docs/interop.md`` maps nsopt's results and statuses to scipy's and cvxpy's.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ._validation import check_callback
from .oracle import FunctionOracle, Oracle
from .result import Result
from .solvers import SOLVERS, methods_supporting
from .solvers.bmrm import LP_MASTERS

#: the method when none is named: LS-BMRM for an Oracle (it needs a RegularizedRisk, the usual
#: problem; with OCAS's query point it needs 5-10x fewer iterations than BMRM, measured in
#: benchmarks/peers.py), unless dual coordinate descent applies and is expected to win
#: (:func:`default_method`); the proximal bundle for a plain function (it takes any oracle)
DEFAULT_METHOD = "ls-bmrm"
DEFAULT_METHOD_FOR_FUNCTIONS = "proximal-bundle"
#: the method :func:`default_method` prefers where it applies and is well conditioned
DUAL_METHOD = "dcd"
#: the method for L1 with a logistic or squared hinge loss (where ``NewtonCD`` applies):
#: a9a, lam 1e-4 / 1e-5, certified 1e-3 / 1e-4 in 6-10 Newton steps against 91-281 BMRM
#: iterations, 0.16-0.25x Cyanure's time and 0.34-0.78x glum's (benchmarks/l1.py, one run,
#: docs/solvers.md)
NEWTON_METHOD = "newton-cd"
#: the method for L2 with a logistic or squared hinge loss (where ``NewtonCG`` applies) when
#: dcd's conditioning is above :data:`NEWTON_MIN_CONDITIONING` or there is a free intercept
L2_NEWTON_METHOD = "newton-cg"
#: :func:`default_method` picks :data:`L2_NEWTON_METHOD` over :data:`DUAL_METHOD` above this
#: conditioning. benchmarks/peers.py (one run, loaded machine), certified 1e-3 / 1e-4, dcd's
#: time over newton-cg's: a9a (kappa 4.3 at lam 1e-4) 0.8-1.1, letter (kappa 6.5) 0.4-1.4;
#: a9a lam 1e-5 (kappa 43) 3-10, letter lam 1e-5 (65) 1.5-4, lam 1e-6: 15-40 (dcd's epochs
#: grow with kappa, Newton's steps do not). 30, not 20, since mushrooms lam 1e-4 (kappa 26):
#: dcd 0.3-0.9x newton-cg's time, medians 0.36-0.77 (three runs, docs/solvers.md, newton-cg)
NEWTON_MIN_CONDITIONING = 30.0
#: ... except for the logistic loss, where :data:`L2_NEWTON_METHOD` is taken at every
#: conditioning: benchmarks/peers.py on an idle machine (2026-11-25), certified 1e-3 / 1e-4,
#: lam 1e-2 ... 1e-4 (kappa 0.04-26): dcd's time over newton-cg's 1.4-2.6 on a9a, 2.1-3.9 on
#: letter, 1.0-2.1 on mushrooms (ties at lam 1e-3); dcd's epochs there cost 60-130 raw passes
#: against newton-cg's 6-17 per step, and the logistic dual needs several of them
NEWTON_ALWAYS_FOR_LOGISTIC = True
#: :func:`default_method` picks :data:`DUAL_METHOD` when ``dcd_conditioning(problem)`` is at
#: most this (measured by benchmarks/default_method.py, see docs/solvers.md). 300 since dcd's
#: compiled epochs (prefetched rows, checks decided by a gap estimate): dcd / ls-bmrm CPU time
#: to rtol 1e-3 at kappa 143 was 0.44-0.79 (a9a; hinge, squared hinge, logistic), at 217
#: 0.65-0.88 (letter; logistic 1.07), at 258 0.08 (mushrooms hinge), at 430 0.75-1.22 (a9a;
#: hinge 1.22) and at 652 1.8-2.5 (letter): the crossing moved from 35-400 to 200-600
DCD_MAX_CONDITIONING = 300.0
#: above :data:`DCD_MAX_CONDITIONING` (without an intercept, where dcd applies and no Newton
#: method is taken: the hinge) :func:`default_method` picks this: dcd for a probe of five
#: epochs, then on when its proven bound has reached a tenth of the value, else LS-BMRM from
#: the probe's point (:class:`~nsopt.solvers.DCDProbe`). kappa alone cannot tell nearly
#: separable data from the rest: hinge at lam 1e-6, mushrooms (kappa 2585) certified by dcd in
#: 0.04-0.22x LS-BMRM's time, a9a (430) and letter (652) in 1.2-4x; the probe's bound share
#: (D(t) / J after five epochs) is 0.41 on mushrooms (lam 1e-5 ... 1e-7), 0.011 on a9a and
#: 0.034 on letter (docs/solvers.md, "Measurements behind some defaults"). benchmarks/peers.py,
#: hinge, lam 1e-6, default certified / liblinear, 1e-3 / 1e-4, medians of 3 alternating runs
#: (load 7-11): mushrooms 8.98 / 6.60 with ls-bmrm -> 0.68 / 0.78; a9a and letter within noise
#: (ls-bmrm after the probe: 224 / 308 and 51 / 63 iterations against 249 / 333 and 52 / 68)
PROBE_METHOD = "dcd-probe"


def dcd_conditioning(problem) -> float:
    r"""The conditioning of dual coordinate descent on ``problem``:
    :math:`\kappa = \max_i c_i \|x_i\|^2 / \lambda`.

    It is the largest curvature of the dual in one coordinate :math:`t_i` (the step of
    :class:`~nsopt.solvers.DCD` divides by :math:`q_i = c_i\|x_i\|^2/\lambda`), and, for
    uniform weights :math:`c_i = 1/m`, liblinear's :math:`C R^2 = R^2 / (\lambda m)` with
    :math:`R = \max_i \|x_i\|` and :math:`C = 1/(\lambda m)`: the number of epochs dual
    coordinate descent needs grows with it. ``inf`` when the problem has no such data (a loss
    without ``data`` rows and weights ``c``). One pass over the nonzeros of ``X``: over sparse
    rows (``data.sparse``, CSR of float64) by dcd's compiled kernel (mushrooms, 8124 x 112:
    0.13 ms against 0.70 ms for scipy's ``X.multiply(X).sum(1)``, the data's own
    ``row_norms_sq``, which any other data take).
    """
    loss = getattr(problem, "loss", None)
    data, c = getattr(loss, "data", None), getattr(loss, "c", None)
    lam = getattr(problem, "lam", None)
    if data is None or c is None or not lam:
        return np.inf
    csr = getattr(data, "csr", None) if getattr(data, "sparse", False) else None
    if (csr is not None and getattr(csr, "format", None) == "csr"
            and csr.data.dtype == np.float64 and csr.has_canonical_format):
        from .solvers._dcd_kernels import row_norms_sq
        sq = row_norms_sq(csr.indptr, csr.data)
    else:
        sq = np.asarray(data.row_norms_sq(), dtype=np.float64).reshape(-1)
    return float(np.max(np.asarray(c, dtype=np.float64) * sq, initial=0.0)) / float(lam)


#: the default with several free intercepts (one per class): the cutting-plane model is not
#: stabilised in the intercepts (they are not regularized), so BMRM's iterates there are
#: Kelley's in a box of the proven bound B; the proximal bundle's prox step weighs them.
#: letter.scale, multiclass hinge + L2 with 26 biases, certified 1e-3 (one run, loaded
#: machine): proximal-bundle 689 iterations / 13.8 s at lam 1e-3, 2647 / 43.5 s at 1e-4;
#: bmrm and ls-bmrm not certified in 240 s (J stayed at J(0) = 1)
STABLE_INTERCEPTS_METHOD = "proximal-bundle"


def _logistic(problem) -> bool:
    """The problem's loss is the logistic loss, asked of its protocol (newton-cd's kernels'
    :func:`~nsopt.solvers.newton_cd.loss_kind`: its conjugate is the kernels' logistic one)."""
    from .solvers._newton_cd_kernels import LOGISTIC
    from .solvers.newton_cd import loss_kind

    loss = getattr(problem, "loss", None)
    return loss is not None and loss_kind(loss) == LOGISTIC


def default_method(problem, **options) -> str:
    r"""The method :func:`minimize` runs on ``problem`` when none is named.

    For an :class:`~nsopt.Oracle`: :data:`DUAL_METHOD` (``"dcd"``, dual coordinate descent)
    when it can solve ``problem`` with ``options`` (``"dcd" in methods_supporting(problem,
    **options)``: the class says which problems it takes, e.g. L2 with a hinge, squared hinge
    or logistic loss) and its conditioning :func:`dcd_conditioning` is at most
    :data:`DCD_MAX_CONDITIONING`, without a free intercept (dcd's pair steps with one were
    measured 1.2-3x slower than LS-BMRM with one on a9a at lam 1e-4 and 1e-5, see
    ``benchmarks/dcd.py --intercept``), except that :data:`L2_NEWTON_METHOD` (``"newton-cg"``,
    truncated Newton) is taken instead for L2 with a logistic or squared hinge loss
    (``"newton-cg" in methods_supporting(...)``) when the conditioning is above
    :data:`NEWTON_MIN_CONDITIONING` (30) or there is a free intercept, and for the logistic
    loss at every conditioning (:data:`NEWTON_ALWAYS_FOR_LOGISTIC`);
    :data:`PROBE_METHOD` (``"dcd-probe"``: a probe of five dcd epochs decides between going
    on with dcd and LS-BMRM) where dcd applies without an intercept but its conditioning is
    above :data:`DCD_MAX_CONDITIONING` (the L2 hinge at small :math:`\lambda`; ``"dcd"``
    there when options only dcd takes are given, e.g. ``check_every``);
    :data:`STABLE_INTERCEPTS_METHOD`
    (``"proximal-bundle"``) with several free intercepts (one bias per class: BMRM's model is
    not stabilised in them); :data:`NEWTON_METHOD` (``"newton-cd"``) for L1 with a logistic
    or squared hinge loss (``"newton-cd" in methods_supporting(...)``); ``"bmrm"`` when the
    master problem is a linear program (the
    L1 norm: BMRM's stabilised path, OCAS's line search with :math:`\theta = 0.02`, which
    needs 1.4-1.7x fewer iterations there than LS-BMRM's default :math:`\theta = 0.1`); else
    :data:`DEFAULT_METHOD` (``"ls-bmrm"``), or :data:`DEFAULT_METHOD_FOR_FUNCTIONS` when options
    are given that LS-BMRM does not take (a box, rows ``A_ub``, ``b_ub``) and it does. For a
    plain function: :data:`DEFAULT_METHOD_FOR_FUNCTIONS`. Options only another method takes (e.g.
    ``query_fraction``) keep the choice to the methods that take them.

    The threshold is measured (``benchmarks/default_method.py``, ``docs/solvers.md``): the
    epochs of dual coordinate descent grow with :math:`\kappa` while LS-BMRM's iterations
    grow more slowly as :math:`\lambda` falls.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> default_method(nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2))
    'dcd'
    >>> default_method(nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-7))
    'dcd-probe'
    >>> default_method(nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-7,
    ...                                      fit_intercept=True))
    'ls-bmrm'
    >>> default_method(nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L1(),
    ...                                      lam=1e-2))
    'bmrm'
    """
    if not (isinstance(problem, Oracle) or not callable(problem)):
        return DEFAULT_METHOD_FOR_FUNCTIONS
    supported = methods_supporting(problem, **options)
    kappa = []  # dcd_conditioning(problem), computed at most once (a pass over the data)

    def conditioning():
        if not kappa:
            kappa.append(dcd_conditioning(problem))
        return kappa[0]

    if L2_NEWTON_METHOD in supported and (getattr(problem, "fit_intercept", False)
                                          or conditioning() > NEWTON_MIN_CONDITIONING
                                          or (NEWTON_ALWAYS_FOR_LOGISTIC
                                              and _logistic(problem))):
        return L2_NEWTON_METHOD  # L2 with a smooth margin loss (benchmarks/peers.py)
    if DUAL_METHOD in supported and not getattr(problem, "fit_intercept", False):
        if conditioning() <= DCD_MAX_CONDITIONING:
            return DUAL_METHOD
        if PROBE_METHOD in supported:
            return PROBE_METHOD  # the probe tells nearly separable data (benchmarks/peers.py)
        if DEFAULT_METHOD not in supported:
            return DUAL_METHOD  # options only dcd takes (check_every, shrinking) keep dcd
    if getattr(problem, "n_intercepts", 0) > 1 and STABLE_INTERCEPTS_METHOD in supported:
        return STABLE_INTERCEPTS_METHOD
    if NEWTON_METHOD in supported:
        return NEWTON_METHOD  # L1 with a smooth margin loss (benchmarks/l1.py)
    if getattr(getattr(problem, "reg", None), "inner", None) in LP_MASTERS and "bmrm" in supported:
        return "bmrm"  # its L1 path: LS-BMRM's iterations with theta 0.02
    if options and DEFAULT_METHOD not in supported:
        # options LS-BMRM does not take (a box, rows A_ub x <= b_ub) keep the choice to the
        # methods that take them: the method for any function, as methods_supporting lists it
        # (a bare oracle without options still goes to LS-BMRM, which says what it needs)
        for name in (DEFAULT_METHOD_FOR_FUNCTIONS, "level-bundle"):
            if name in supported:
                return name
    return DEFAULT_METHOD


def minimize(problem, method_or_x0=None, x0=None, *, method: str | None = None, jac=None,
             rtol: float = 1e-3, atol: float = 0.0, max_iter: int | None = None,
             max_time: float | None = None, callback: Callable | None = None,
             verbose: bool = False, **options) -> Result:
    """Minimise a convex ``problem`` with the solver named ``method``.

    Parameters
    ----------
    problem : Oracle or callable
        Usually a :class:`~nsopt.RegularizedRisk`; some methods take any Oracle. A plain
        function ``fun(x)`` is accepted in scipy's convention, with ``jac`` and ``x0`` (it is
        wrapped in a :class:`~nsopt.FunctionOracle` of dimension ``np.size(x0)``).
    method_or_x0 : str or array, optional
        The second positional argument: the method when it is a str (nsopt's order,
        ``minimize(problem, "bmrm", x0)``), else the starting point (scipy's order,
        ``minimize(fun, x0, method=..., jac=...)``). Giving either twice is a ``TypeError``.
    x0 : array, optional
        Starting point; never modified. Zeros (the regularizer's minimiser) by default for an
        Oracle; required for a plain function, whose number of variables is ``np.size(x0)``.
    method : str, optional
        One of ``nsopt.solvers.SOLVERS`` (``"bmrm"``, ...). By default
        :func:`default_method`: ``"newton-cg"`` for an L2 logistic risk; ``"dcd"`` for an
        L2 hinge or squared hinge risk it takes whose conditioning ``max_i c_i ||x_i||^2 /
        lam`` is at most :data:`DCD_MAX_CONDITIONING` (for the squared hinge only up to
        :data:`NEWTON_MIN_CONDITIONING`, above it and with an intercept ``"newton-cg"``),
        ``"dcd-probe"`` for the hinge above it (five dcd epochs decide between dcd and
        ``"ls-bmrm"``),
        ``"newton-cd"`` for L1 with a logistic or squared hinge
        loss, ``"bmrm"`` (stabilised) for another L1 risk, else
        ``"ls-bmrm"`` for an Oracle, and
        ``"proximal-bundle"`` (which takes any oracle) for a plain function.
        ``Result.method`` says which ran.
    jac : True or callable, only with a plain function
        ``True``: ``fun(x)`` returns ``(value, subgradient)``; a callable: ``jac(x)`` returns a
        subgradient. Required: a nonsmooth function has no finite-difference gradient at its
        kinks, so nsopt does not estimate one. An Oracle brings its own subgradients, so
        ``jac`` with an Oracle is a ``TypeError``.
    rtol, atol : float
        Stop when the certified gap ``fun - lower_bound <= max(atol, rtol * |fun|)``.
    max_iter, max_time : optional limits.
    callback : callable, optional
        Called after every step; returning True or raising ``StopIteration`` stops the run
        with status ``callback``. ``callback(state)`` receives the solver's ``State``; a
        callable whose only parameter is named ``intermediate_result`` (scipy's form) receives
        a :class:`scipy.optimize.OptimizeResult` with ``x`` (the best point so far, as
        ``Result.x``), ``fun``, ``nit``, ``lower_bound``, ``gap``, ``time`` and ``nfev``: the
        values of the history row of that iteration (a stop ends the run on that row).
        Anything else than None or a callable raises ``TypeError`` before the first step.
    verbose : bool
        Print a progress table.
    **options
        The method's own options (see its class); unknown ones raise ``TypeError``. For any
        oracle, a region makes the gap provable: ``bounds=(lb, ub)``, a box that constrains
        ``x`` (``"level-bundle"``, ``"proximal-bundle"``), or ``radius=r`` with ``centre=c``
        (0 by default), a ball said to hold a minimiser (every method); see
        ``docs/solvers.md``, "Any convex function".

        Every method also takes ``blas_threads``, the BLAS threads (numpy's and scipy's
        OpenBLAS, through threadpoolctl) during the run, oracle calls and callbacks
        included: ``"auto"`` (default) runs on one thread unless the problem's data hold a
        dense block of at least :data:`nsopt._threads.AUTO_DENSE_ENTRIES` (2**26) entries;
        ``"keep"`` or None leaves BLAS as configured; an integer ``n >= 1`` runs on ``n``
        threads (under either, also the solvers' own one-thread blocks, as the Newton
        steps'). OpenBLAS's idle workers spin and take the core the loop's next compiled
        kernel needs, and small blocks gain nothing from threads: the largest eigenvalue of
        ``benchmarks/any_oracle.py`` took 7-20x the CPU time with the default threads than
        on one (``docs/solvers.md``, "BLAS threads during a run"). The caller's setting is
        restored when the run ends, also on an exception or Ctrl-C.

    Returns
    -------
    Result
        The best point seen, its value, a proven lower bound, the gap and the history.
        ``Result.status`` is an :class:`~nsopt.Status`, not scipy's integer code:
        ``docs/interop.md`` gives the correspondence.

    Examples
    --------
    >>> import nsopt
    >>> X, y = nsopt.datasets.make_sparse_binary(500, 30, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2)
    >>> res = nsopt.minimize(J, method="bmrm", rtol=1e-4)
    >>> res.status.value, bool(res.gap <= 1e-4 * res.fun)
    ('converged', True)

    scipy's form: a function returning its value and a subgradient, and a starting point.
    A ball said to hold a minimiser (``radius``) lets any function's gap be proven:

    >>> import numpy as np
    >>> res = nsopt.minimize(lambda x: (abs(x).sum(), np.sign(x)), np.ones(3), jac=True,
    ...                      radius=10.0)
    >>> res.status.value, res.method, bool(res.fun <= 1e-3)
    ('converged', 'proximal-bundle', True)
    """
    if isinstance(method_or_x0, str):          # nsopt's order: minimize(problem, "bmrm", x0)
        if method is not None:
            raise TypeError(f"minimize got the method twice: {method_or_x0!r} as its second "
                            f"argument and method={method!r}")
        method = method_or_x0
    elif method_or_x0 is not None:             # scipy's order: minimize(fun, x0, ...)
        if x0 is not None:
            raise TypeError(
                f"minimize got x0 twice: a {type(method_or_x0).__name__} as its second argument "
                "(which is x0 unless it is a str, the method) and x0 as well")
        x0 = method_or_x0
    check_callback(callback)
    if isinstance(problem, Oracle) or not callable(problem):
        if jac is not None:
            raise TypeError(
                f"jac is for a plain function fun(x); the problem is a {type(problem).__name__}, "
                "which gives its own subgradients: drop jac")
        if method is None:
            method = default_method(problem, **options)
    else:
        problem, x0 = _function_oracle(problem, x0, jac)
        if method is None:
            method = DEFAULT_METHOD_FOR_FUNCTIONS
    if not isinstance(method, str) or method.lower() not in SOLVERS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(SOLVERS)}")
    solver = SOLVERS[method.lower()](rtol=rtol, atol=atol, max_iter=max_iter, max_time=max_time,
                                     verbose=verbose, **options)
    return solver.solve(problem, x0, callback=callback)


def _function_oracle(fun: Callable, x0, jac):
    """``(FunctionOracle, x0)`` for scipy's ``minimize(fun, x0, jac=...)``."""
    form = ("the problem must be an nsopt Oracle or, in scipy's form, a plain function with x0 "
            "and jac: minimize(fun, x0, jac=...); ")
    if x0 is None:
        also = "" if jac else ", and so is jac (True, or a callable giving a subgradient)"
        raise TypeError(form + "x0 is required (np.size(x0) is the number of variables)" + also)
    if jac is None or (isinstance(jac, (bool, np.bool_)) and not jac):
        raise TypeError(
            form + "nsopt needs a subgradient of fun: pass jac=True when fun(x) returns "
            "(value, subgradient), or jac=callable returning a subgradient at x. nsopt does not "
            "estimate one by finite differences: at the kinks of a nonsmooth function they give "
            "no subgradient, and the certificate would be wrong")
    if np.ndim(x0) == 0:
        x0 = np.atleast_1d(x0)  # scipy accepts a scalar start for a function of one variable
    dim = int(np.size(x0))
    if dim == 0:
        raise ValueError("x0 is empty: np.size(x0) is the number of variables, at least 1")
    if isinstance(jac, (bool, np.bool_)):
        return FunctionOracle(value_and_subgradient=fun, dim=dim), x0
    if callable(jac):
        return FunctionOracle(fun, jac, dim=dim), x0
    raise TypeError(f"jac must be True (fun returns (value, subgradient)) or a callable giving a "
                    f"subgradient, got {type(jac).__name__} {jac!r}")
