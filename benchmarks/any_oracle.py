r"""Any convex function, certified: nsopt's any-oracle methods against cvxpy on bare oracles.

Every function is a bare :class:`nsopt.FunctionOracle` built by ``tests/catalogue.py`` (the
solvers see values and subgradients only, never the formula), with the same function written
as a cvxpy expression:

* ``l1-fit``: :math:`\|Ax - b\|_1`, A 2000 x 100 Gaussian, ``b = A x_true + 0.1 N(0, 1)``;
* ``l1-fit-halfspace``: the same function with one more constraint, the halfspace
  :math:`1^T x \le 1^T x_{ref} - 1` (binding: it cuts off the unconstrained minimiser
  ``x_ref``), given as ``A_ub, b_ub`` (a row of ones) to the methods that take rows and as a
  constraint to cvxpy; the methods that take no rows (subbfgs, sublbfgs) read ``n/a
  (refuses ...)``;
* ``max-affine``: :math:`\max_i (Ax + b)_i + \tfrac{0.005}{2}\|x\|^2`, 500 pieces, d = 50;
* ``chebyshev``: minimax fit of :math:`|t|` at 2000 Chebyshev points of [-1, 1] by a
  polynomial of degree 20 in the Chebyshev basis, :math:`\max_j |(Vc - y)_j|`;
* ``max-eigenvalue``: :math:`\lambda_{\max}(A_0 + \sum_i x_i A_i)`, 30 x 30 symmetric
  Gaussian matrices, 20 variables;
* ``hinge-synthetic``, ``hinge-a9a``: :math:`\tfrac\lambda2\|w\|^2 + \text{mean}(\max(0, 1 -
  y_i\langle x_i, w\rangle))`, lam = 1e-4, on a9a-like data (``make_sparse_binary``, 5000 x
  123) and on a9a itself when the shared data folder has it (else that row is skipped).

What is measured, for each function, all in the same run:

* the region: the unconstrained minimiser ``x_ref`` (cvxpy + Clarabel, not timed) sizes a box
  ``[-h, h]^d`` with ``h = 2 ||x_ref||_inf + 1`` (``--region box``) or a ball ``||x|| <= R``
  with ``R = 2 ||x_ref||_2 + 1`` (``--region ball``). Either contains the unconstrained
  minimiser with room to spare, so the optimum over the region is the unconstrained f*;
* cvxpy + Clarabel (default tolerances, 1e-8) and cvxpy + SCS (default tolerances) on the
  same function over the same region: wall seconds of ``Problem.solve`` (canonicalisation
  included; Clarabel's own solver time in parentheses). ``f*`` is Clarabel's optimum; SCS's
  column gives its relative error ``(f(x_scs) - f*) / |f*|`` (SCS proves no such accuracy);
* each nsopt method (``--methods``) runs ONCE with ``rtol = min(--tols)`` and the cap
  ``--max-time``; from its history (columns iteration, time, fun, lower_bound, gap, nfev),
  the seconds and oracle calls until the *certified* relative gap ``gap / |fun|`` first
  reaches each tolerance, and the seconds at the smallest tolerance over Clarabel's seconds.
  A tolerance not reached reads ``n/a (why)``: the run's end status and its last certified
  relative gap, or ``refuses <option>`` when the method does not take the region's option;
* a check that each run's lower bound is at most ``f_ref = min(f(x_clarabel), f(x_ref), the
  runs' best values)`` (values of the oracle at points of the region: upper bounds on the
  optimum) up to rounding, and that its certificate passes ``Certificate.check`` with the
  region stated (its evidence rebuilt through the oracle; not timed); a violation prints
  ``VIOLATION`` and the script exits with status 1 at the end.

The region each method is given (``REGION_OPTIONS``, method -> region -> options): with
``--region box`` a method that keeps its iterates in a box gets ``bounds=(-h, h)`` (a
constraint: level-bundle, proximal-bundle), and subbfgs / sublbfgs, which take no constraint,
get ``radius = h sqrt(d)``, the ball around the box (a statement that a minimiser lies in it,
true since the box holds one); with ``--region ball`` every method gets ``radius=R`` (a
statement, not a constraint; level-bundle runs over the smallest box around the ball). The last
column of a row names the option given. A method that refuses its option (``TypeError`` or
``ProblemNotSupported``) is not run and reads ``n/a (refuses ...)``.

Run with ``OPENBLAS_NUM_THREADS=1`` (and ``OMP_NUM_THREADS=1``): the oracles' small BLAS and
LAPACK calls (the 30 x 30 ``eigh`` of ``max-eigenvalue``) woke threads that cost more than the
arithmetic; on 2 cores that row took 3.4-3.9 s instead of 0.13-0.52 s with the same 153 calls.
nsopt's runs now hold one BLAS thread themselves (``blas_threads="auto"``, the default:
``docs/solvers.md``, "BLAS threads during a run"); the variable gives cvxpy's solvers the same
setting, so the ratios compare like with like.

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/any_oracle.py [--functions ...] [--methods level-bundle
       proximal-bundle subbfgs sublbfgs] [--tols 1e-3 1e-6 1e-8] [--max-time 20]
       [--region box|ball] [--no-scs] [--size full|tiny] [--minorants K] [--clock wall|cpu]
       [--repeats N]

``--minorants K`` (default ``MINORANTS``: 16 for max-affine, 8 for max-eigenvalue, 0 for
Chebyshev and the L1 fits, where the oracle costs less than the planes; 0: none): the extra
affine minorants per oracle call that ``max-affine``, ``chebyshev``, ``max-eigenvalue`` and the
L1 fits offer
(:meth:`nsopt.Oracle.minorants`: near-active pieces, next eigenvectors); the bundle methods that
take them (level-bundle) add them to their model.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

import nsopt
from nsopt.solvers import SOLVERS, ProblemNotSupported

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import catalogue as C  # noqa: E402  (the functions are built once, in tests/catalogue.py)

METHODS = ["level-bundle", "proximal-bundle", "subbfgs", "sublbfgs"]
FUNCTIONS = ["l1-fit", "l1-fit-halfspace", "max-affine", "chebyshev", "max-eigenvalue", "hinge-synthetic", "hinge-a9a"]

#: (full, tiny) instance sizes
SIZES = {
    "l1-fit": ({"m": 2000, "d": 100}, {"m": 60, "d": 5}),
    "l1-fit-halfspace": ({"m": 2000, "d": 100}, {"m": 60, "d": 5}),
    "max-affine": ({"n_pieces": 500, "d": 50}, {"n_pieces": 30, "d": 4}),
    "chebyshev": ({"n_points": 2000, "degree": 20}, {"n_points": 50, "degree": 4}),
    "max-eigenvalue": ({"n": 30, "k": 20}, {"n": 6, "k": 3}),
    "hinge-synthetic": ({"n_samples": 5000, "n_features": 123}, {"n_samples": 200, "n_features": 20}),
    "hinge-a9a": ({}, {}),
}
#: extra minorants per call the max-type oracles offer by default (``--minorants`` overrides):
#: the fewest calls for the least CPU, measured (docs/solvers.md): past 8 the eigenvalue's
#: planes of far eigenvectors cost more LP and projection time than they save calls.
#: Chebyshev 0: its oracle (one 2000 x 21 product) costs less than the model's work for 16
#: more planes a call; level-bundle to a certified 1e-6 took 0.18-0.26x Clarabel's time
#: without them against 0.35-0.68x with (84 calls against 54; three runs each, alternating,
#: 2026-11-25 12:17-12:21 UTC, load 11-15; 0.21x against 0.42-0.58x idle the session before)
MINORANTS = {"max-affine": 16, "chebyshev": 0, "max-eigenvalue": 8, "l1-fit": 0}
LAM = 1e-4   # hinge
MU = 0.005   # max-affine ridge


def build(name, size, minorants=None):
    """``(oracle, cvxpy expression of x)`` of a function, or None (a9a absent); ``minorants``:
    how many extra minorants per call the max-type oracles offer (0: none; None: the
    function's default, ``MINORANTS``)."""
    s = SIZES[name][size == "tiny"]
    if minorants is None:
        minorants = MINORANTS.get(name, 0)
    if name in ("l1-fit", "l1-fit-halfspace"):
        A, b, _ = C.l1_fit_data(s["m"], s["d"], noise=0.1, seed=0)
        return C.l1_fit(A, b, minorants=minorants)
    if name == "max-affine":
        return C.max_affine_ridge(*C.max_affine_data(s["n_pieces"], s["d"], seed=1), mu=MU,
                                  minorants=minorants)
    if name == "chebyshev":
        return C.chebyshev_fit(*C.chebyshev_data(s["n_points"], "abs"), degree=s["degree"],
                               minorants=minorants)
    if name == "max-eigenvalue":
        return C.max_eigenvalue(*C.max_eigenvalue_data(s["n"], s["k"], seed=2),
                                minorants=minorants)
    if name == "hinge-synthetic":
        X, y = nsopt.datasets.make_sparse_binary(s["n_samples"], s["n_features"], random_state=0)
        return C.hinge_oracle(X, y, LAM)
    if name == "hinge-a9a":
        if nsopt.io.find_data_dir() is None:
            return None
        from _common import load
        try:
            X, y = load("a9a")
        except SystemExit:  # load() says "skipped" when the file is absent
            return None
        if size == "tiny":
            X, y = X[:300, :20], y[:300]
        return C.hinge_oracle(X, y, LAM)
    raise ValueError(name)


class Region:
    """A box ``[-h, h]^d`` or a ball ``||x|| <= R`` around 0, sized from ``x_ref``; with
    ``halfspace``, also the constraint ``1^T x <= 1^T x_ref - 1`` (``rows``: A_ub, b_ub)."""

    def __init__(self, kind, x_ref, halfspace=False):
        self.kind, self.d = kind, x_ref.size
        self.h = 2.0 * float(np.abs(x_ref).max()) + 1.0
        self.R = 2.0 * float(np.linalg.norm(x_ref)) + 1.0
        self.rows = ((np.ones((1, self.d)), np.array([float(x_ref.sum()) - 1.0]))
                     if halfspace else None)

    def __str__(self):
        text = f"box |x_i| <= {self.h:.3g}" if self.kind == "box" else f"ball ||x|| <= {self.R:.3g}"
        return text + (f", sum(x) <= {self.rows[1][0]:.4g}" if self.rows is not None else "")

    def cvxpy_constraints(self, x):
        import cvxpy as cp
        out = [x >= -self.h, x <= self.h] if self.kind == "box" else [cp.norm(x, 2) <= self.R]
        if self.rows is not None:
            out.append(self.rows[0] @ x <= self.rows[1])
        return out

    def row_options(self):
        return {} if self.rows is None else {"A_ub": self.rows[0], "b_ub": self.rows[1]}

    def stated(self):
        """The region as ``Certificate.check`` takes it."""
        return ({"bounds": (-self.h, self.h)} if self.kind == "box"
                else {"radius": self.R}) | self.row_options()

    def project(self, x):
        """A point of the region near x (the halfspace's projection, then the box's or the
        ball's, which keep it: the points projected lie well inside the box)."""
        if self.rows is not None:
            a, t = self.rows[0][0], self.rows[1][0]
            x = x - max(0.0, float(a @ x) - t) / float(a @ a) * a
            x = x - 1e-12 * (1.0 + abs(t)) * a / float(a @ a)   # strictly inside, to rounding
        if self.kind == "box":
            return np.clip(x, -self.h, self.h)
        n = np.linalg.norm(x)
        return x if n <= self.R else x * (self.R / n)


def _box(r):
    return {"bounds": (-r.h, r.h)}


def _ball(r):
    return {"radius": r.R}


def _ball_around_box(r):
    # the corners lie on the sphere h sqrt(d): 1e-9 more, so that Certificate.check's
    # rounding-safe containment test accepts that the ball holds the box
    return {"radius": r.h * math.sqrt(r.d) * (1 + 1e-9)}


#: how each method is told the region (method -> region kind -> options); others: DEFAULT
REGION_OPTIONS = {
    "subbfgs": {"box": _ball_around_box, "ball": _ball},   # no constraint: a ball statement
    "sublbfgs": {"box": _ball_around_box, "ball": _ball},
}
DEFAULT_REGION_OPTIONS = {"box": _box, "ball": _ball}


def region_options(method, region):
    return REGION_OPTIONS.get(method, DEFAULT_REGION_OPTIONS)[region.kind](region) \
        | region.row_options()


def given(method, region):
    """The region option a method gets, in words."""
    opts = region_options(method, region)
    rows = ", A_ub" if "A_ub" in opts else ""
    if "bounds" in opts:
        return f"bounds +-{opts['bounds'][1]:.3g}{rows}"
    return f"radius {opts['radius']:.3g}{rows}"


def cvxpy_solve(f, expression, region, solver, **settings):
    """(wall seconds, solver seconds, x or None) of cvxpy on ``expression`` over ``region``."""
    import cvxpy as cp

    x = cp.Variable(f.dim)
    constraints = region.cvxpy_constraints(x) if region is not None else []
    problem = cp.Problem(cp.Minimize(expression(x)), constraints)
    t0 = time.perf_counter()
    try:
        problem.solve(solver=solver, **settings)
    except cp.SolverError:
        return time.perf_counter() - t0, math.nan, None
    seconds = time.perf_counter() - t0
    stats = problem.solver_stats
    solver_seconds = stats.solve_time if stats is not None and stats.solve_time else math.nan
    value = None if x.value is None else np.asarray(x.value, dtype=float).ravel()
    return seconds, solver_seconds, value


class CpuClock:
    """A callback (scipy's ``intermediate_result`` form) that records the process CPU seconds
    since the run's start at every step: ``--clock cpu`` reads the seconds to a tolerance from
    it (the run's own ``time`` column is wall time, inflated by the load of a shared machine)."""

    def __init__(self):
        self.start = time.process_time()
        self.rows = {"time": [], "gap": [], "fun": [], "nfev": []}

    def __call__(self, intermediate_result):
        r = intermediate_result
        for key, value in (("time", time.process_time() - self.start), ("gap", r.gap),
                           ("fun", r.fun), ("nfev", r.nfev)):
            self.rows[key].append(value)


#: the CPU clock's rows of each run (``--clock cpu``), by ``id`` of its Result
CPU_ROWS: dict = {}


def run_method(f, method, region, rtol, max_time, clock="wall"):
    """``(Result, None)`` of one run, or ``(why, exception)`` when the method refuses the
    region's option. With ``clock="cpu"``, ``CPU_ROWS[id(result)]`` holds the CPU seconds of
    every step (:class:`CpuClock`)."""
    options = region_options(method, region)
    try:
        solver = SOLVERS[method](rtol=rtol, max_time=max_time, **options)
    except TypeError as exc:  # an unknown option
        return f"refuses {', '.join(options)}", exc
    try:
        if clock == "cpu":
            recorder = CpuClock()
            res = solver.solve(f, callback=recorder)
            CPU_ROWS[id(res)] = recorder.rows   # a Result is frozen: kept beside it
            return res, None
        return solver.solve(f), None
    except ProblemNotSupported as exc:
        return f"refuses {', '.join(options)}", exc
    except TypeError as exc:  # e.g. the proximal-bundle variant chosen at run time
        if any(o in str(exc) for o in options):
            return f"refuses {', '.join(options)}", exc
        raise


def first_reached(history, tol):
    """(seconds, oracle calls) at the first history row with gap <= tol |fun|, or None."""
    gap, fun = np.asarray(history["gap"], float), np.asarray(history["fun"], float)
    hit = np.flatnonzero(gap <= tol * np.abs(fun))
    if not hit.size:
        return None
    i = hit[0]
    return float(history["time"][i]), int(history["nfev"][i])


def why_not(res):
    """Why a run did not reach a tolerance: its end status and last certified relative gap."""
    rel = res.gap / abs(res.fun) if res.fun != 0 else math.inf
    bound = "no lower bound" if not math.isfinite(res.lower_bound) else f"gap {rel:.1e}"
    return f"n/a ({res.status.value} at {res.time:.1f} s, {bound})"


def warm_up(methods):
    """One tiny untimed run of every method and of cvxpy (imports, first-call costs)."""
    import cvxpy as cp

    f, expression = build("l1-fit", "tiny")
    cvxpy_solve(f, expression, None, cp.CLARABEL)
    for method in methods:
        for kind in ("box", "ball"):
            run_method(f, method, Region(kind, np.zeros(f.dim)), 1e-3, 0.5)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", nargs="+", default=FUNCTIONS, choices=FUNCTIONS)
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--tols", type=float, nargs="+", default=[1e-3, 1e-6, 1e-8])
    ap.add_argument("--max-time", type=float, default=20.0)
    ap.add_argument("--region", choices=["box", "ball"], default="box")
    ap.add_argument("--no-scs", action="store_true")
    ap.add_argument("--size", choices=["full", "tiny"], default="full")
    ap.add_argument("--minorants", type=int, default=None,
                    help="extra minorants per oracle call offered by max-affine, chebyshev, "
                         "max-eigenvalue and the L1 fits (Oracle.minorants; 0: none; default "
                         f"{MINORANTS})")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="seconds to a tolerance: the run's wall time, or the process CPU time "
                         "recorded by a callback at every step (Clarabel's column stays wall, "
                         "with its CPU seconds added); on a shared machine the CPU ratio is the "
                         "steadier one")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of every method (and of Clarabel) per function, alternating")
    args = ap.parse_args(argv)
    if args.minorants is not None and args.minorants < 0:
        ap.error(f"--minorants must be >= 0, got {args.minorants}")
    import cvxpy as cp

    tols = sorted(args.tols, reverse=True)
    rtol = tols[-1]
    warm_up(args.methods)
    print(f"certified relative gap gap/|fun| in {', '.join(f'{t:g}' for t in tols)}, from one run "
          f"per method with rtol={rtol:g} and max_time={args.max_time:g} s; region: {args.region}; "
          f"extra minorants per call: {MINORANTS if args.minorants is None else args.minorants}")
    print("cells: seconds / oracle calls until the certified gap first reaches the tolerance; "
          f"t({rtol:g})/Clarabel: the seconds to {rtol:g} over Clarabel's")
    head = "".join(f"{f't({t:g}) s':>11}{'calls':>8}" for t in tols)
    violations = []
    for name in args.functions:
        built = build(name, args.size, args.minorants)
        if built is None:
            print(f"{name}: skipped (no a9a in the shared data folder)")
            continue
        f, expression = built
        _, _, x_ref = cvxpy_solve(f, expression, None, cp.CLARABEL)
        region = Region(args.region, x_ref, halfspace=name.endswith("-halfspace"))
        cpu0 = time.process_time()
        clar_s, clar_solver_s, x_cl = cvxpy_solve(f, expression, region, cp.CLARABEL)
        clar_cpu = time.process_time() - cpu0
        f_star = f.value(region.project(x_cl))
        if args.no_scs:
            scs = "SCS not run"
        else:
            scs_s, _, x_scs = cvxpy_solve(f, expression, region, cp.SCS,
                                          time_limit_secs=args.max_time)
            if x_scs is None:
                scs = "SCS failed"
            else:
                err = (f.value(region.project(x_scs)) - f_star) / abs(f_star)
                scs = f"SCS {scs_s:.2f} s (rel. err {err:.1e})"
        print(f"\n{name}  d={f.dim}  f*={f_star:.10g}  Clarabel {clar_s:.2f} s "
              f"(solver {clar_solver_s:.2f} s, CPU {clar_cpu:.2f} s)  {scs}  {region}", flush=True)
        print(f"  {'method':<16}{head}{f't({rtol:g})/Clarabel':>18}   end of run"
              + ("   (CPU seconds, ratio to Clarabel's CPU seconds of the same round)"
                 if args.clock == "cpu" else ""))
        runs = {}
        for method, rep in [(m, r) for r in range(args.repeats) for m in args.methods]:
            if rep and method == args.methods[0]:   # Clarabel again, in the same round
                cpu0 = time.process_time()
                clar_s = cvxpy_solve(f, expression, region, cp.CLARABEL)[0]
                clar_cpu = time.process_time() - cpu0
                print(f"  round {rep + 1}: Clarabel {clar_s:.2f} s (CPU {clar_cpu:.2f} s)")
            res, exc = run_method(f, method, region, rtol, args.max_time, args.clock)
            runs[method] = res
            if isinstance(res, str):
                print(f"  {method:<16}  n/a ({res}; {type(exc).__name__})", flush=True)
                continue
            cells, reached = "", None
            for tol in tols:
                reached = first_reached(CPU_ROWS.get(id(res), res.history), tol)
                cells += (f"{reached[0]:>11.2f}{reached[1]:>8d}" if reached else f"  {why_not(res)}")
                if reached is None:
                    break
            base = clar_cpu if args.clock == "cpu" else clar_s
            ratio = f"{reached[0] / base:>18.2f}" if reached else ""
            end = f"   {res.status.value}, {res.time:.1f} s, {res.nfev} calls" if reached else ""
            print(f"  {method:<16}{cells}{ratio}{end}  [{given(method, region)}]", flush=True)
        # every lower bound below the best value seen at a point of the region
        results = [r for r in runs.values() if not isinstance(r, str)]
        f_ref = min([f_star, f.value(region.project(x_ref))] + [r.fun for r in results])
        if region.rows is not None:     # every run's point must satisfy the rows
            for method, res in runs.items():
                excess = (0.0 if isinstance(res, str)
                          else float((region.rows[0] @ res.x - region.rows[1]).max()))
                if excess > 1e-9 * (1.0 + abs(region.rows[1][0])):
                    violations.append((name, method, "row", excess))
                    print(f"  VIOLATION: {method}'s x violates A_ub x <= b_ub by {excess:.3g}")
        for method, res in runs.items():
            if isinstance(res, str):
                continue
            if res.lower_bound > f_ref + 1e-9 * max(1.0, abs(f_ref)):
                violations.append((name, method, res.lower_bound, f_ref))
                print(f"  VIOLATION: {method} lower_bound {res.lower_bound!r} > f_ref {f_ref!r} "
                      f"(by {res.lower_bound - f_ref:.3g})", flush=True)
            try:  # the evidence, rebuilt through the oracle, over the region (not timed)
                res.certificate.check(f, **region.stated())
            except nsopt.CertificateError as exc:
                violations.append((name, method, "certificate", str(exc)))
                print(f"  VIOLATION: {method}'s certificate fails its check: {exc}", flush=True)
    if violations:
        print(f"\nVIOLATION: {len(violations)} lower bound(s) above the optimum: {violations}")
        sys.exit(1)


if __name__ == "__main__":
    main()
