"""Every solver on a9a and mushrooms: time and oracle calls to a certified relative gap.

Problems: hinge + L2, logistic + L2, logistic + L1, for lam in {1e-4, 1e-5, 1e-6}. Each method
runs once, to a certified relative gap of ``--rtol`` (1e-3) or the cap ``--max-time``. A cell
reads ``t_obj / t_cert / calls``:

* ``t_obj``: seconds until the method's best objective is within ``rtol`` of the reference
  ``J_ref`` (the smallest objective any method or peer reached): ``(fun - J_ref) / fun <=
  rtol``, the objective a certified run has; what liblinear and cvxpy are timed on, since
  they give no lower bound;
* ``t_cert``: seconds until the method *proved* the gap (``>cap`` if it did not);
* ``calls``: oracle calls at ``t_cert`` (or at the cap).

Besides the registered methods, column ``owlqn`` is ``SubLBFGS(owlqn_variant="owlqn")`` (plain
OWL-QN, [AG07]) on the L1 problems, next to ``sublbfgs`` (the paper's OWL-QN*), and column
``trust-region`` is ``ProximalBundle(variant="trust-region")`` where the proximal variant
(L2 only) does not apply. The last two
columns give the paper's own measure ([YVGS10] Fig. 16): seconds to within 2% of the optimum
for BMRM over subLBFGS (above 1: subLBFGS faster).

Peers in the same run: liblinear (scikit-learn LinearSVC for the hinge, LogisticRegression with
liblinear for logistic; C = 1/(m lam), no intercept; its tolerance is shrunk by 10 until its
objective meets the same target; the time of that successful fit is reported) and cvxpy +
Clarabel (default tolerances; ``nan`` if it stops above the target).

Usage: python benchmarks/solvers.py [--data a9a mushrooms] [--lams 1e-4 1e-5 1e-6]
       [--problems hinge-l2 logistic-l2 logistic-l1] [--max-time 30] [--no-cvxpy]
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import nsopt
from _common import load, raw_pass_seconds

PROBLEMS = {
    "hinge-l2": (nsopt.losses.Hinge, nsopt.regularizers.L2),
    "logistic-l2": (nsopt.losses.Logistic, nsopt.regularizers.L2),
    "logistic-l1": (nsopt.losses.Logistic, nsopt.regularizers.L1),
}


def liblinear_fit(X, y, lam, problem, tol):
    """(seconds, w) of one liblinear fit with C = 1/(m lam) and no intercept."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    C = 1.0 / (X.shape[0] * lam)
    if problem == "hinge-l2":
        clf = LinearSVC(C=C, loss="hinge", dual=True, fit_intercept=False, tol=tol,
                        max_iter=100000)
    else:
        # liblinear's objectives are ||w||_1 + C sum log(...) and 0.5||w||^2 + C sum log(...):
        # J = lam Omega + mean log(...) times 1/lam, so C = 1/(m lam) gives the same minimiser
        l1_ratio = 1.0 if problem.endswith("l1") else 0.0
        clf = LogisticRegression(C=C, l1_ratio=l1_ratio, solver="liblinear", fit_intercept=False,
                                 tol=tol, max_iter=100000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", UserWarning)
        t0 = time.perf_counter()
        clf.fit(X, y)
        secs = time.perf_counter() - t0
    return secs, clf.coef_.ravel().copy()


def liblinear_time(X, y, lam, problem, J, target, max_tries=8):
    """Seconds of the first liblinear fit (tol 1e-1, 1e-2, ...) whose objective <= target."""
    tol = 1e-1
    for _ in range(max_tries):
        secs, w = liblinear_fit(X, y, lam, problem, tol)
        if J.value(w) <= target:
            return secs
        tol /= 10
    return float("nan")


def cvxpy_run(X, y, lam, problem):
    """(seconds, objective J(w)) of cvxpy + Clarabel with default tolerances."""
    import cvxpy as cp

    w = cp.Variable(X.shape[1])
    z = cp.multiply(y, X @ w)
    loss = (cp.sum(cp.pos(1 - z)) if problem == "hinge-l2" else cp.sum(cp.logistic(-z))) / X.shape[0]
    reg = cp.norm1(w) if problem.endswith("l1") else 0.5 * cp.sum_squares(w)
    t0 = time.perf_counter()
    try:
        cp.Problem(cp.Minimize(lam * reg + loss)).solve(solver=cp.CLARABEL)
    except cp.SolverError:
        return time.perf_counter() - t0, np.inf
    secs = time.perf_counter() - t0
    return secs, (np.asarray(w.value).ravel() if w.value is not None else None)


def first_time(history, target):
    """Seconds at the first history row whose best objective is <= target (nan if none)."""
    hit = np.flatnonzero(history["fun"] <= target)
    return float(history["time"][hit[0]]) if hit.size else float("nan")


#: extra columns: a registered method with options, and the problems it is run on
VARIANTS = {
    "owlqn": ("sublbfgs", {"owlqn_variant": "owlqn"}, ("logistic-l1",)),
    "trust-region": ("proximal-bundle", {"variant": "trust-region"}, ("logistic-l1",)),
}


def make_solver(method, problem, rtol, max_time):
    """The solver of a column, or None where the column does not apply."""
    base, options, problems = VARIANTS.get(method, (method, {}, None))
    if problems is not None and problem not in problems:
        return None
    # through the constructor, so the options are checked and reach the variant that
    # ProximalBundle(variant="auto") builds at solve time (a config edited afterwards does not)
    return nsopt.solvers.SOLVERS[base](rtol=rtol, max_time=max_time, **options)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "mushrooms"])
    ap.add_argument("--lams", type=float, nargs="+", default=[1e-4, 1e-5, 1e-6])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    ap.add_argument("--methods", nargs="+", default=sorted(nsopt.solvers.SOLVERS) + list(VARIANTS))
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--max-time", type=float, default=30.0)
    ap.add_argument("--no-cvxpy", action="store_true")
    args = ap.parse_args(argv)
    methods = args.methods
    print(f"relative gap {args.rtol:g}, cap {args.max_time:g} s; cells: t_obj/t_cert/oracle calls "
          "(seconds; '>' = not certified within the cap)")
    width = 20
    print(f"{'data':>9} {'problem':>11} {'lam':>5} " + " ".join(f"{m:>{width}}" for m in methods)
          + f" {'liblinear':>9} {'cvxpy':>7} {'2%: bmrm':>8} {'/sublbfgs':>9}")
    for name in args.data:
        X, y = load(name)
        raw = raw_pass_seconds(X)
        print(f"{name}: one raw data pass (X @ w + X.T @ g, scipy) = {raw * 1e3:.3f} ms; "
              "per-call cost of a cell = t_cert / calls / raw pass")
        for problem in args.problems:
            loss_cls, reg_cls = PROBLEMS[problem]
            loss = loss_cls(X, y)
            nsopt.minimize(nsopt.RegularizedRisk(loss, reg_cls(), 1e-2), max_iter=2)  # compile
            for lam in args.lams:
                J = nsopt.RegularizedRisk(loss, reg_cls(), lam)
                runs = {}
                for method in methods:
                    solver = make_solver(method, problem, args.rtol, args.max_time)
                    if solver is not None and solver.unsupported_reason(J) is None:
                        runs[method] = solver.solve(J)
                # the reference optimum: the best objective of any run, a tight liblinear fit
                # and cvxpy; every certified lower bound must lie below it
                _, w_tight = liblinear_fit(X, y, lam, problem, 1e-10)
                cvx_secs, w_cvx = (np.nan, None) if args.no_cvxpy else cvxpy_run(X, y, lam, problem)
                cvx_fun = J.value(w_cvx) if w_cvx is not None else np.inf
                J_ref = min([J.value(w_tight), cvx_fun] + [r.fun for r in runs.values()])
                assert all(r.lower_bound <= J_ref * (1 + 1e-9) + 1e-12 for r in runs.values())
                # the objective a certified run has: gap <= rtol fun  <=>  fun <= J* / (1 - rtol)
                target = J_ref / (1 - args.rtol)
                cells = []
                for method in methods:
                    r = runs.get(method)
                    if r is None:
                        cells.append("n/a")
                        continue
                    t_cert = f"{r.time:.2f}" if r.success else f">{args.max_time:g}"
                    cells.append(f"{first_time(r.history, target):.2f}/{t_cert}/{r.nfev}")
                lib = liblinear_time(X, y, lam, problem, J, target)
                cvx = cvx_secs if cvx_fun <= target else float("nan")
                two = [first_time(runs[k].history, J_ref * 1.02) if k in runs else np.nan
                       for k in ("bmrm", "sublbfgs")]
                print(f"{name:>9} {problem:>11} {lam:>5.0e} " + " ".join(f"{c:>{width}}" for c in cells)
                      + f" {lib:>9.2f} {cvx:>7.2f} {two[0]:>8.2f} {two[0] / two[1]:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
