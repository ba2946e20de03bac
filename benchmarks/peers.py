r"""nsopt against its peers on linear models: seconds to a relative gap, certified or not (issue 11).

Problems (``--problems``), each ``J(w) = lam * Omega(w) + (1/m) sum_i l(y_i <x_i, w>)``, no
intercept:

* ``hinge-l2`` (a): peer scikit-learn ``LinearSVC(loss="hinge")`` (liblinear's dual coordinate
  descent), ``C = 1/(m lam)``;
* ``sqhinge-l2``, ``logistic-l2`` (b): liblinear's dual and primal solvers through scikit-learn
  (``LinearSVC(loss="squared_hinge", dual=True/False)``, ``C = 1/(2 m lam)`` since liblinear's
  squared hinge has no 1/2; ``LogisticRegression(solver="liblinear", dual=True/False)``,
  ``C = 1/(m lam)``) and Cyanure (``n_threads=1``, no intercept, ``lambda_1 = lam``; its loss is
  ``0.5 max(0, 1 - yz)^2``, nsopt's ``SquaredHinge``);
* ``logistic-l1``, ``sqhinge-l1`` (c): Cyanure, glum (``family="binomial"``, ``alpha = lam``,
  ``l1_ratio = 1``; logistic only: glum fits GLMs and has no squared hinge) and liblinear's
  primal solvers (``LogisticRegression(l1_ratio=1)``, ``LinearSVC(penalty="l1", dual=False)``).

Data sets (``--sets``): ``a9a``, ``mushrooms``, ``letter`` (``letter.scale``, class 1 against
the other 25) from the shared data folder; ``lam`` in ``--lams`` (1e-3 ... 1e-6); levels
(``--levels``) are relative gaps 1e-3 and 1e-4.

**What is timed.**

* nsopt: every applicable method (``--methods``; ``default`` is ``nsopt.minimize`` without a
  method, its choice is printed), one run per level with ``rtol = level`` and the cap
  ``--max-time``; the time is the run's own ``Result.time`` (numba's compilation is done by a
  warm-up run per data set and problem, and is left out). A run that does not *prove* the level
  within the cap is printed ``not certified`` with the gap it proved; it never counts as a time.
* liblinear and glum prove nothing: each is run with tolerances 1e-1, 1e-2, ... and the time of
  the loosest tolerance whose answer reaches the level, ``(J(w) - J*) / J(w) <= level``, is
  reported (``not reached`` if none does before the ladder ends or a fit exceeds the cap).
* Cyanure stops on a proven duality gap: it is run with ``tol = level``; its proven relative
  gap (``optimization_info_``) is printed, and its time counts when its answer reaches the level.
* Short runs are repeated (up to 3 times while the total stays under 0.5 s) and the smallest time
  is kept, for nsopt and the peers alike.

**The true optimum** ``J*`` of each cell (``problem, data set, lam``), computed once and kept in
memory: a proven bracket ``[lower, upper]`` where ``upper`` is the smallest objective any run
reached and ``lower`` the largest proven lower bound: every nsopt run's ``lower_bound`` and
:func:`nsopt.certify` of the best point any run found. When that bracket is wider than 1% of the
smallest level, nsopt's default method is run to ``rtol=1e-8`` (cap ``--ref-time``), then, if
still too wide and cvxpy is installed, cvxpy + Clarabel; the bracket's relative width is printed
per cell. Peers are judged against ``upper``. Any nsopt ``lower_bound`` above ``upper``, or any
peer objective below ``lower``, is printed as ``VIOLATION``.

**Per nsopt run**: time, iterations, oracle calls, raw passes per iteration (one raw pass =
``X @ w`` + ``X.T @ g`` with scipy, timed once per data set; passes/iteration = time per
iteration / raw-pass time) and the master problem's share of the time (``Result.info``'s
``inner_time`` or ``master_time``, where the method reports one). Per cell and level: the best
certified nsopt time over the best peer time (the ratio the issue's targets are stated in).
Column ``gap|err``: for nsopt the proven relative gap ``gap / fun``; for a peer the relative
error of its answer ``(J(w) - upper) / upper`` (and Cyanure's own proven gap beside it).

OCAS (libocas) is not installable here: its iteration counts on a9a are quoted from issue 11 in a
table of their own, clearly labelled, beside nsopt's, and never re-run.

Run on an otherwise idle machine: numba and BLAS use every core; the peers here run on one.

Usage: python benchmarks/peers.py [--quick] [--sets a9a mushrooms letter] [--lams 1e-3 1e-4 ...]
       [--problems hinge-l2 ...] [--methods default ls-bmrm ...] [--max-time 10] [--out FILE.csv|.md]
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import math
import time
import warnings

import numpy as np

import nsopt

#: the shared data sets by short name: (file name, the class kept as +1 or None when binary)
SETS = {"a9a": ("a9a", None), "mushrooms": ("mushrooms", None), "letter": ("letter.scale", 1.0)}

#: problem -> (loss class, regularizer class, peers)
PROBLEMS = {
    "hinge-l2": ("Hinge", "L2", ("liblinear-dual",)),
    "sqhinge-l2": ("SquaredHinge", "L2", ("liblinear-dual", "liblinear-primal", "cyanure")),
    "logistic-l2": ("Logistic", "L2", ("liblinear-dual", "liblinear-primal", "cyanure")),
    "logistic-l1": ("Logistic", "L1", ("cyanure", "glum", "liblinear-primal")),
    "sqhinge-l1": ("SquaredHinge", "L1", ("cyanure", "glum", "liblinear-primal")),
}

#: nsopt methods run by default ("dcd" joins when registered)
METHODS = ["default", "ls-bmrm", "bmrm", "proximal-bundle", "sublbfgs", "dcd", "newton-cg"]

#: OCAS (libocas, C) on a9a, L2 hinge without bias, as measured and printed in issue 11:
#: lam -> {level: (seconds, iterations)}. Quoted, never re-run here.
OCAS_QUOTED = {
    1e-4: {1e-3: (0.10, 32), 1e-4: (0.19, 64)},
    1e-5: {1e-3: (0.25, 73), 1e-4: (0.62, 118)},
    1e-6: {1e-3: (2.06, 153), 1e-4: (5.6, 229)},
}

TOLS = [10.0 ** -k for k in range(1, 9)]  # the peers' tolerance ladder


# ---------------------------------------------------------------- data and timing

def load(name):
    """``(X, y)`` of a shared data set, labels in {-1, +1}; None when the file is absent."""
    fname, positive = SETS[name]
    try:
        X, y = nsopt.io.load_dataset(fname)[:2]
    except FileNotFoundError as exc:
        print(f"skipped {name}: {exc}")
        return None
    if positive is None:
        labels = np.unique(y)
        positive = labels[-1]
    y = np.where(y == positive, 1.0, -1.0)
    return X.tocsr(), y


def raw_pass_seconds(X, repeat=5):
    """One raw data pass: ``X @ w`` plus ``X.T @ g`` (scipy), the smallest of ``repeat`` x 10."""
    rng = np.random.default_rng(0)
    w, g = rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[0])
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(10):
            X @ w
            X.T @ g
        best = min(best, (time.perf_counter() - t0) / 10)
    return best


def repeat_short(fn, budget=0.5, times=3):
    """Call ``fn() -> (seconds, payload)`` up to ``times`` times while the total stays under
    ``budget`` seconds; the call with the smallest seconds."""
    best = fn()
    total = best[0]
    for _ in range(times - 1):
        if total + best[0] > budget:
            break
        again = fn()
        total += again[0]
        if again[0] < best[0]:
            best = again
    return best


def problem(X, y, name, lam):
    loss_name, reg_name, _ = PROBLEMS[name]
    loss = getattr(nsopt.losses, loss_name)(X, y)
    return nsopt.RegularizedRisk(loss, getattr(nsopt.regularizers, reg_name)(), lam)


# ---------------------------------------------------------------- peers

@contextlib.contextmanager
def _quiet():
    """Silence the peers' and the solvers' warnings (convergence, deprecations) in a run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def peer_fit(peer, pname, X, y, lam, tol, max_iter=100000):
    """``(seconds, w, info)`` of one fit of ``peer`` on problem ``pname`` at tolerance ``tol``;
    ``info`` holds Cyanure's proven relative gap (``proved``)."""
    loss_name, reg_name, _ = PROBLEMS[pname]
    m = X.shape[0]
    info = {}
    if peer.startswith("liblinear"):
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        dual = peer == "liblinear-dual"
        if loss_name == "Logistic":
            est = LogisticRegression(C=1.0 / (m * lam), l1_ratio=1.0 if reg_name == "L1" else 0.0,
                                     solver="liblinear", dual=dual, fit_intercept=False, tol=tol,
                                     max_iter=max_iter)
        else:
            # liblinear: ||w||^2/2 (or ||w||_1) + C sum loss; its squared hinge has no 1/2
            C = 1.0 / (m * lam) if loss_name == "Hinge" else 1.0 / (2 * m * lam)
            est = LinearSVC(C=C, loss="hinge" if loss_name == "Hinge" else "squared_hinge",
                            penalty=reg_name.lower(), dual=dual, fit_intercept=False, tol=tol,
                            max_iter=max_iter)
        fit = lambda: est.fit(X, y)  # noqa: E731
    elif peer == "cyanure":
        from cyanure.estimators import Classifier

        est = Classifier(loss="logistic" if loss_name == "Logistic" else "sqhinge",
                         penalty=reg_name.lower(), lambda_1=lam, fit_intercept=False, tol=tol,
                         n_threads=1, verbose=False, max_iter=max(500, int(10 / tol) if tol > 1e-6 else 5000))
        fit = lambda: est.fit(X, y)  # noqa: E731
    elif peer == "glum":
        from glum import GeneralizedLinearRegressor

        # glum: (1/m) sum deviance/2 + alpha ||w||_1; binomial deviance/2 = log(1 + e^{-yz})
        est = GeneralizedLinearRegressor(family="binomial", alpha=lam, l1_ratio=1.0,
                                         fit_intercept=False, gradient_tol=tol)
        y01 = (y > 0).astype(float)
        fit = lambda: est.fit(X, y01)  # noqa: E731
    else:
        raise ValueError(f"unknown peer {peer!r}")
    with _quiet():
        t0 = time.perf_counter()
        fit()
        secs = time.perf_counter() - t0
    w = np.asarray(est.coef_, dtype=float).ravel().copy()
    if peer == "cyanure":
        gaps = est.optimization_info_[0][3]
        gaps = gaps[gaps > 0]
        info["proved"] = float(gaps[-1]) if gaps.size else float("nan")
    return secs, w, info


def peer_applies(peer, pname):
    """None, or why ``peer`` cannot run problem ``pname`` here."""
    loss_name, reg_name, _ = PROBLEMS[pname]
    if peer == "glum" and loss_name != "Logistic":
        return "glum has no squared hinge"
    mod = {"cyanure": "cyanure", "glum": "glum"}.get(peer, "sklearn")
    try:
        __import__(mod)
    except ImportError:
        return f"{mod} not installed (pip install nsopt[bench])"
    return None


def run_peer(peer, pname, X, y, lam, J, levels, max_time, budget):
    """Fits of ``peer``: Cyanure once per level (``tol = level``), the others along the
    tolerance ladder until the smallest level is reached by the reference ``upper`` known so
    far (decided later: every fit is kept). Returns a list of ``(tol, seconds, J(w), w, info)``."""
    fits = []
    if peer == "cyanure":
        for level in levels:
            secs, w, info = repeat_short(
                lambda: _pack(peer_fit(peer, pname, X, y, lam, level)), budget)[1]
            fits.append((level, secs, J.value(w), w, info))
        return fits
    spent = 0.0
    for tol in TOLS:
        secs, w, info = repeat_short(lambda: _pack(peer_fit(peer, pname, X, y, lam, tol)), budget)[1]
        fits.append((tol, secs, J.value(w), w, info))
        spent += secs
        if secs > max_time or spent > 3 * max_time:
            break
        # stop once two successive tolerances agree far below the smallest level
        if len(fits) >= 2 and abs(fits[-2][2] - fits[-1][2]) <= 1e-3 * min(levels) * abs(fits[-1][2]):
            break
    return fits


def _pack(fit):
    return fit[0], fit


# ---------------------------------------------------------------- nsopt

def make_run(method, J, level, max_time):
    """One nsopt run (``Result``) or the reason it does not apply (str)."""
    if method == "default":
        return nsopt.minimize(J, rtol=level, max_time=max_time)
    cls = nsopt.solvers.SOLVERS.get(method)
    if cls is None:
        return "not registered"
    why = cls.unsupported_reason(J)
    if why is not None:
        return f"n/a ({why})"
    return nsopt.minimize(J, method=method, rtol=level, max_time=max_time)


def master_share(res):
    """The master problem's share of ``res.time`` where the method reports it, else nan."""
    for key in ("master_time", "inner_time"):
        t = res.info.get(key) if isinstance(res.info, dict) else None
        if t is not None and res.time > 0:
            return float(t) / res.time
    return float("nan")


def warm_up(J, methods):
    """Compile every method's kernels on this problem (a two-iteration run each)."""
    for method in methods:
        cls = nsopt.solvers.SOLVERS.get(method)
        if method != "default" and (cls is None or cls.unsupported_reason(J) is not None):
            continue
        with _quiet():
            if method == "default":
                nsopt.minimize(J, max_iter=2)
            else:
                nsopt.minimize(J, method=method, max_iter=2)


# ---------------------------------------------------------------- the reference optimum

_REFERENCE = {}  # (problem, set, lam) -> dict(upper, lower, how)


def reference(key, J, points, lowers, uppers, levels, ref_time, use_cvxpy):
    """The proven bracket ``lower <= J* <= upper`` of a cell (computed once, kept)."""
    if key in _REFERENCE:
        return _REFERENCE[key]
    upper = min(uppers) if uppers else np.inf
    lower = max(lowers) if lowers else -np.inf
    how = ["runs"]
    best_w = min(points, key=J.value) if points else None
    want = 1e-2 * min(levels)

    def width():
        return (upper - lower) / abs(upper) if np.isfinite(upper) and upper != 0 else np.inf

    if best_w is not None and width() > want:
        cert = nsopt.certify(J, best_w)
        lower, upper = max(lower, cert.lower), min(upper, cert.upper)
        how.append("certify")
    if width() > want:
        with _quiet():
            r = nsopt.minimize(J, rtol=1e-8, max_time=ref_time)
        lower, upper = max(lower, r.lower_bound), min(upper, r.fun)
        how.append(f"nsopt {r.method} rtol 1e-8")
        if width() > want:
            cert = nsopt.certify(J, r.x)
            lower = max(lower, cert.lower)
    if width() > want and use_cvxpy:
        try:
            w = _cvxpy_solve(J)
        except Exception as exc:  # noqa: BLE001 - a missing or failing reference solver
            how.append(f"cvxpy failed: {type(exc).__name__}")
        else:
            if w is not None:
                cert = nsopt.certify(J, w)
                lower, upper = max(lower, cert.lower), min(upper, cert.upper)
                how.append("cvxpy+Clarabel")
    out = {"upper": upper, "lower": lower, "width": width(), "how": ", ".join(how)}
    _REFERENCE[key] = out
    return out


def _cvxpy_solve(J):
    """A minimiser of ``J`` by cvxpy + Clarabel (default tolerances), through
    :func:`nsopt.to_cvxpy`; None when Clarabel returns no point."""
    import cvxpy as cp

    prob, var = nsopt.to_cvxpy(J)
    prob.solve(solver=cp.CLARABEL)
    return None if var.value is None else np.asarray(var.value, dtype=float).ravel()


# ---------------------------------------------------------------- the run

def fmt_t(t):
    return "-" if t is None or not np.isfinite(t) else (f"{t:.3f}" if t < 10 else f"{t:.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="one data set (mushrooms), lams 1e-3 and 1e-4: for CI")
    ap.add_argument("--sets", nargs="+", default=None, choices=sorted(SETS))
    ap.add_argument("--lams", type=float, nargs="+", default=None)
    ap.add_argument("--levels", type=float, nargs="+", default=[1e-3, 1e-4])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    ap.add_argument("--methods", nargs="+", default=METHODS)
    ap.add_argument("--max-time", type=float, default=10.0,
                    help="cap of each nsopt run and of each peer fit (seconds)")
    ap.add_argument("--ref-time", type=float, default=30.0,
                    help="cap of the reference run when the bracket of J* is too wide")
    ap.add_argument("--no-cvxpy", action="store_true", help="never use cvxpy for the reference")
    ap.add_argument("--out", default=None, help="write the rows as CSV (.csv) or markdown")
    args = ap.parse_args(argv)
    sets = args.sets or (["mushrooms"] if args.quick else ["a9a", "mushrooms", "letter"])
    lams = args.lams or ([1e-3, 1e-4] if args.quick else [1e-3, 1e-4, 1e-5, 1e-6])
    levels = sorted(args.levels, reverse=True)
    methods = [m for m in args.methods if m != "dcd" or "dcd" in nsopt.solvers.SOLVERS]
    if "dcd" in args.methods and "dcd" not in methods:
        print("method dcd: not registered in nsopt.solvers.SOLVERS, left out")
    print(f"nsopt methods: {', '.join(methods)}; levels {', '.join(f'{lv:g}' for lv in levels)}; "
          f"cap {args.max_time:g} s per run")
    rows, summary = [], []
    loaded = {}
    for sname in sets:  # every set loaded and its raw pass timed once
        data = load(sname)
        if data is None:
            continue
        raw = raw_pass_seconds(data[0])
        loaded[sname] = data + (raw,)
        print(f"{sname}: {data[0].shape[0]} x {data[0].shape[1]}, one raw pass "
              f"(X @ w + X.T @ g, scipy) = {raw * 1e3:.3f} ms")
    for pname in args.problems:  # problem by problem, so that (a) is complete first
        peers = PROBLEMS[pname][2]
        print(f"\n== {pname}")
        for sname, (X, y, raw) in loaded.items():
            warm_up(problem(X, y, pname, 1e-2), methods)
            for lam in lams:
                J = problem(X, y, pname, lam)
                cell_rows = _cell(sname, pname, lam, J, X, y, raw, methods, peers, levels, args)
                rows.extend(cell_rows)
                summary.extend(_summarise(cell_rows, sname, pname, lam, levels))
    _print_summary(summary)
    _print_ocas(rows, levels)
    if args.out:
        _write(args.out, rows, summary)
    return rows, summary


def _cell(sname, pname, lam, J, X, y, raw, methods, peers, levels, args):
    key = (pname, sname, lam)
    runs = {}  # (method, level) -> Result or str
    default_name = None
    for level in levels:
        for method in methods:
            if method != "default" and default_name == method and ("default", level) in runs \
                    and not isinstance(runs[("default", level)], str):
                runs[(method, level)] = runs[("default", level)]  # the same run
                continue

            def one():
                with _quiet():
                    r = make_run(method, J, level, args.max_time)
                return (r.time if not isinstance(r, str) else 0.0), r

            r = repeat_short(one)[1]
            runs[(method, level)] = r
            if method == "default" and not isinstance(r, str):
                default_name = r.method
    peer_fits = {}
    for peer in peers:
        why = peer_applies(peer, pname)
        peer_fits[peer] = why if why else run_peer(peer, pname, X, y, lam, J, levels,
                                                    args.max_time, 0.5)
    results = [r for r in runs.values() if not isinstance(r, str)]
    uppers = [r.fun for r in results] + [f[2] for fits in peer_fits.values()
                                        if not isinstance(fits, str) for f in fits]
    lowers = [r.lower_bound for r in results]
    points = [r.x for r in results] + [f[3] for fits in peer_fits.values()
                                       if not isinstance(fits, str) for f in fits]
    ref = reference(key, J, points, lowers, uppers, levels, args.ref_time,
                    use_cvxpy=not args.no_cvxpy)
    upper, lower = ref["upper"], ref["lower"]
    print(f"\n-- {pname} {sname} lam {lam:g}: J* in [{lower:.10g}, {upper:.10g}] "
          f"(relative width {ref['width']:.1e}; {ref['how']})")
    print(f"   {'level':>6} {'solver':<22} {'seconds':>8} {'status':<16} {'it':>5} {'calls':>6} "
          f"{'pass/it':>7} {'master':>6} {'gap|err':>8}")
    out = []
    base = {"problem": pname, "data": sname, "lam": lam, "J_upper": upper, "J_lower": lower}
    for level in levels:
        for method in methods:
            r = runs[(method, level)]
            label = f"default={r.method}" if method == "default" and not isinstance(r, str) else method
            row = dict(base, level=level, solver=label, kind="nsopt")
            if isinstance(r, str):
                row.update(status=r, seconds=np.nan, fun=np.nan)
                print(f"   {level:>6g} {label:<22} {'-':>8} {r}")
                out.append(row)
                continue
            rel_gap = r.gap / abs(r.fun) if r.fun else np.inf
            certified = bool(r.success) and r.gap <= level * abs(r.fun) * (1 + 1e-12)
            status = "certified" if certified else f"not certified ({r.status.value})"
            ppi = (r.time / max(r.nit, 1)) / raw
            share = master_share(r)
            violation = r.lower_bound > upper * (1 + 1e-9) + 1e-12
            if violation:
                status += " VIOLATION: lower_bound above J*"
            row.update(status=status, certified=certified, seconds=r.time if certified else np.nan,
                       time_run=r.time, nit=r.nit, nfev=r.nfev, passes_per_it=ppi,
                       master_share=share, gap=r.gap, rel_gap=rel_gap, fun=r.fun,
                       lower_bound=r.lower_bound)
            print(f"   {level:>6g} {label:<22} {r.time:>8.3f} {status:<16} {r.nit:>5} {r.nfev:>6} "
                  f"{ppi:>7.1f} {_pct(share):>6} {rel_gap:>8.1e}")
            out.append(row)
        for peer in peers:
            fits = peer_fits[peer]
            row = dict(base, level=level, solver=peer, kind="peer")
            if isinstance(fits, str):
                row.update(status=f"n/a ({fits})", seconds=np.nan, fun=np.nan)
                print(f"   {level:>6g} {peer:<22} {'-':>8} n/a ({fits})")
                out.append(row)
                continue
            target = upper / (1 - level)
            if peer == "cyanure":
                hit = [f for f in fits if f[0] == level and f[2] <= target]
            else:
                hit = [f for f in fits if f[2] <= target][:1]
            if hit:
                tol, secs, fun, _, info = hit[0]
                status = f"reached (tol {tol:g})"
            else:
                tol, secs, fun, _, info = min(fits, key=lambda f: f[2])
                status = "not reached"
                secs_shown = secs
            violation = fun < lower * (1 - 1e-9) - 1e-12
            if violation:
                status += " VIOLATION: objective below the proven lower bound"
            err = (fun - upper) / abs(upper)
            proved = info.get("proved")
            row.update(status=status, seconds=secs if hit else np.nan, fun=fun, tol=tol,
                       rel_error=err, proved_gap=proved if proved is not None else np.nan,
                       time_run=secs)
            extra = f" proved {proved:.1e}" if proved is not None else ""
            print(f"   {level:>6g} {peer:<22} {secs if hit else secs_shown:>8.3f} {status:<16} "
                  f"{'':>5} {'':>6} {'':>7} {'':>6} {err:>8.1e}{extra}")
            out.append(row)
    return out


def _pct(x):
    return "-" if not np.isfinite(x) else f"{100 * x:.0f}%"


def _summarise(rows, sname, pname, lam, levels):
    out = []
    for level in levels:
        mine = [r for r in rows if r["level"] == level and r["kind"] == "nsopt"
                and np.isfinite(r.get("seconds", np.nan))]
        theirs = [r for r in rows if r["level"] == level and r["kind"] == "peer"
                  and np.isfinite(r.get("seconds", np.nan))]
        b_me = min(mine, key=lambda r: r["seconds"]) if mine else None
        b_peer = min(theirs, key=lambda r: r["seconds"]) if theirs else None
        ratio = (b_me["seconds"] / b_peer["seconds"]) if b_me and b_peer else np.nan
        out.append({"problem": pname, "data": sname, "lam": lam, "level": level,
                    "nsopt_best": b_me["solver"] if b_me else "not certified",
                    "nsopt_seconds": b_me["seconds"] if b_me else np.nan,
                    "nsopt_nit": b_me["nit"] if b_me else np.nan,
                    "peer_best": b_peer["solver"] if b_peer else "none reached",
                    "peer_seconds": b_peer["seconds"] if b_peer else np.nan,
                    "ratio": ratio})
    return out


def _print_summary(summary):
    print("\n== summary: best certified nsopt time / best peer time (below 1: nsopt faster)")
    print(f"{'problem':<12} {'data':<10} {'lam':>6} {'level':>6} {'nsopt best':<26} {'s':>8} "
          f"{'best peer':<18} {'s':>8} {'ratio':>7}")
    for s in summary:
        ratio = "-" if not np.isfinite(s["ratio"]) else f"{s['ratio']:.2f}x"
        print(f"{s['problem']:<12} {s['data']:<10} {s['lam']:>6g} {s['level']:>6g} "
              f"{s['nsopt_best']:<26} {fmt_t(s['nsopt_seconds']):>8} {s['peer_best']:<18} "
              f"{fmt_t(s['peer_seconds']):>8} {ratio:>7}")


def _print_ocas(rows, levels):
    cells = [r for r in rows if r["problem"] == "hinge-l2" and r["data"] == "a9a"
             and r["kind"] == "nsopt" and r["lam"] in OCAS_QUOTED]
    if not cells:
        return
    print("\n== OCAS iterations: quoted from issue 11, libocas, not re-run "
          "(a9a, L2 hinge; nsopt: this run, iterations of certified runs)")
    names = sorted({r["solver"] for r in cells}, key=lambda n: [r["solver"] for r in cells].index(n))
    print(f"{'lam':>6} {'level':>6} {'OCAS it (quoted)':>17} {'OCAS s (quoted)':>16} "
          + " ".join(f"{n[:16]:>16}" for n in names))
    for lam in sorted(OCAS_QUOTED, reverse=True):
        for level in levels:
            q = OCAS_QUOTED[lam].get(level)
            if q is None or not any(r["lam"] == lam and r["level"] == level for r in cells):
                continue
            vals = []
            for n in names:
                r = next((r for r in cells if r["lam"] == lam and r["level"] == level
                          and r["solver"] == n), None)
                if r is None or "nit" not in r:
                    vals.append("-")
                elif r.get("certified"):
                    vals.append(f"{r['nit']} it")
                else:
                    vals.append(f"({r['nit']} it, n.c.)")
            print(f"{lam:>6g} {level:>6g} {q[1]:>17} {q[0]:>16.2f} " + " ".join(f"{v:>16}" for v in vals))


def _write(path, rows, summary):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    if path.endswith(".csv"):
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
    else:
        with open(path, "w") as fh:
            fh.write("| " + " | ".join(summary[0].keys()) + " |\n" if summary else "")
            if summary:
                fh.write("|" + "---|" * len(summary[0]) + "\n")
                for s in summary:
                    fh.write("| " + " | ".join(_cellstr(v) for v in s.values()) + " |\n")
            fh.write("\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys) + "\n")
            for r in rows:
                fh.write("| " + " | ".join(_cellstr(r.get(k, "")) for k in keys) + " |\n")
    print(f"\nwrote {path}")


def _cellstr(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return str(v)


if __name__ == "__main__":
    main()
