"""Every solver on a9a and mushrooms: seconds and oracle calls to a certified relative gap.

Problems: hinge + L2, logistic + L2, logistic + L1, for lam in {1e-4, 1e-5, 1e-6}. Each method
runs to a certified relative gap of ``--rtol`` (1e-3), capped by ``--max-time``; a capped run
prints ">" before its numbers. Peers in the same run: liblinear (scikit-learn LinearSVC for the
hinge, LogisticRegression with liblinear for logistic; C = 1/(m lam), no intercept, tolerance
shrunk until its objective is within rtol of the best lower bound any method proved) and
cvxpy + Clarabel (default tolerances).

Usage: python benchmarks/solvers.py [--data a9a mushrooms] [--lams 1e-4 1e-5 1e-6]
       [--problems hinge-l2 logistic-l2 logistic-l1] [--max-time 60] [--no-cvxpy]
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import nsopt
from _common import load

PROBLEMS = {
    "hinge-l2": (nsopt.losses.Hinge, nsopt.regularizers.L2),
    "logistic-l2": (nsopt.losses.Logistic, nsopt.regularizers.L2),
    "logistic-l1": (nsopt.losses.Logistic, nsopt.regularizers.L1),
}


def liblinear(X, y, lam, problem, J, target, max_tries=8):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    C = 1.0 / (X.shape[0] * lam)
    tol = 1e-1
    for _ in range(max_tries):
        if problem == "hinge-l2":
            clf = LinearSVC(C=C, loss="hinge", dual=True, fit_intercept=False, tol=tol,
                            max_iter=100000)
        else:
            penalty = "l1" if problem.endswith("l1") else "l2"
            # liblinear's L1 logistic objective is ||w||_1 + C sum log(...): with J = lam ||w||_1
            # + mean log(...), C = 1/(m lam) matches; for L2 it is 0.5||w||^2 + C sum
            clf = LogisticRegression(C=C, penalty=penalty, solver="liblinear", fit_intercept=False,
                                     tol=tol, max_iter=100000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            clf.fit(X, y)
            secs = time.perf_counter() - t0
        if J.value(clf.coef_.ravel()) <= target:
            return secs
        tol /= 10
    return float("nan")


def cvxpy_time(X, y, lam, problem, J, target):
    import cvxpy as cp

    w = cp.Variable(X.shape[1])
    z = cp.multiply(y, X @ w)
    loss = (cp.sum(cp.pos(1 - z)) if problem == "hinge-l2" else cp.sum(cp.logistic(-z))) / X.shape[0]
    reg = cp.norm1(w) if problem.endswith("l1") else 0.5 * cp.sum_squares(w)
    t0 = time.perf_counter()
    cp.Problem(cp.Minimize(lam * reg + loss)).solve(solver=cp.CLARABEL)
    secs = time.perf_counter() - t0
    return secs if J.value(np.asarray(w.value).ravel()) <= target else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "mushrooms"])
    ap.add_argument("--lams", type=float, nargs="+", default=[1e-4, 1e-5, 1e-6])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--max-time", type=float, default=60.0)
    ap.add_argument("--no-cvxpy", action="store_true")
    args = ap.parse_args(argv)
    methods = sorted(nsopt.solvers.SOLVERS)
    print(f"certified relative gap {args.rtol:g}, cap {args.max_time:g} s; cells: seconds/oracle calls")
    print(f"{'data':>10} {'problem':>12} {'lam':>6} " + " ".join(f"{m:>16}" for m in methods)
          + f" {'liblinear':>10} {'cvxpy':>8}")
    for name in args.data:
        X, y = load(name)
        for problem in args.problems:
            loss_cls, reg_cls = PROBLEMS[problem]
            loss = loss_cls(X, y)
            nsopt.minimize(nsopt.RegularizedRisk(loss, reg_cls(), 1e-2), max_iter=2)  # compile
            for lam in args.lams:
                J = nsopt.RegularizedRisk(loss, reg_cls(), lam)
                cells, best_lower = [], -np.inf
                for method in methods:
                    reason = nsopt.solvers.SOLVERS[method]().unsupported_reason(J)
                    if reason is not None:
                        cells.append("n/a")
                        continue
                    res = nsopt.minimize(J, method=method, rtol=args.rtol, max_time=args.max_time)
                    best_lower = max(best_lower, res.lower_bound)
                    mark = "" if res.success else ">"
                    cells.append(f"{mark}{res.time:.2f}/{res.nfev}")
                target = best_lower * (1 + args.rtol) if np.isfinite(best_lower) else np.inf
                lib = liblinear(X, y, lam, problem, J, target)
                cvx = float("nan") if args.no_cvxpy else cvxpy_time(X, y, lam, problem, J, target)
                print(f"{name:>10} {problem:>12} {lam:>6.0e} " + " ".join(f"{c:>16}" for c in cells)
                      + f" {lib:>10.2f} {cvx:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
