"""The ``nsopt`` command line: ``nsopt demo`` and ``nsopt solve DATA ...``.

Both run a solver with a live progress table (iteration, time, fun, lower bound, gap,
relative gap, planes) and end with the certificate: the value found, a proven lower bound on
the optimum and the gap between them. ``python -m nsopt`` is the same program.

Exit codes: 0 when the solve finished (whatever the status: the certificate says how good the
point is), 1 on a numerical error, 2 on bad input (options, files, labels, a method that cannot
solve the problem), 130 when stopped with Ctrl-C (the best point so far and its certificate are
printed first), 141 when the output pipe closed early.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["main", "REGULARIZERS"]



def _binary_losses() -> list[str]:
    """Names accepted by ``--loss``: the binary losses of :data:`nsopt.losses.LOSSES`."""
    from .losses import LOSSES

    return sorted(name for name, cls in LOSSES.items() if getattr(cls, "binary", False))


def _loss_name(text: str) -> str:
    """``--loss`` in the registry's spelling (``squared_hinge`` is ``squared-hinge``)."""
    return text.strip().lower().replace("_", "-")


#: Regularizer names accepted by ``--reg``: name -> (class in :mod:`nsopt.regularizers`,
#: how the command-line options build it, a short description).
REGULARIZERS = {
    "l2": ("L2", lambda cls, a: cls(), "0.5 ||w||_2^2"),
    "l1": ("L1", lambda cls, a: cls(), "||w||_1"),
    "elastic-net": ("ElasticNet", lambda cls, a: cls(a.l1_ratio),
                    "r ||w||_1 + (1 - r)/2 ||w||_2^2, r = --l1-ratio"),
    "lp": ("Lp", lambda cls, a: cls(a.p), "0.5 ||w||_p^2, p = --p"),
}

EXIT_OK, EXIT_NUMERICAL, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141


class UsageError(Exception):
    """Bad input: printed on stderr without a traceback, exit code 2."""


# ---------------------------------------------------------------------------------------------
# argument parsing


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _available_regularizers():
    from . import regularizers

    return {name: spec for name, spec in REGULARIZERS.items() if hasattr(regularizers, spec[0])}


def _add_solver_options(p, *, lam_default=1e-4):
    p.add_argument("--lam", type=_positive_float, default=lam_default, metavar="LAM",
                   help="regularization strength lam in J(w) = lam*Omega(w) + mean loss "
                        "(liblinear's C = 1/(m*lam)); default %(default)g")
    p.add_argument("--rtol", type=_positive_float, default=1e-3,
                   help="stop when the certified gap <= rtol * fun; default %(default)g")
    p.add_argument("--max-iter", type=_positive_int, default=None, metavar="N",
                   help="iteration limit (default: none)")
    p.add_argument("--max-time", type=_positive_float, default=None, metavar="S",
                   help="time limit in seconds (default: none)")
    p.add_argument("--no-live", action="store_true",
                   help="print plain progress lines instead of the live table "
                        "(automatic when stdout is not a terminal)")


def build_parser() -> argparse.ArgumentParser:
    from .solvers import SOLVERS

    parser = argparse.ArgumentParser(
        prog="nsopt",
        description="Minimize regularized risks with certified gaps: every run ends with a proven "
                    "lower bound on the optimum.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    demo = sub.add_parser(
        "demo", help="BMRM on synthetic a9a-shaped data (no files needed)",
        description="Solve hinge + L2 on synthetic sparse binary data shaped like a9a "
                    "(123 binary features) with BMRM, showing the gap shrink, then print the "
                    "certificate.")
    demo.add_argument("--n-samples", type=_positive_int, default=5000, metavar="M",
                      help="number of examples; default %(default)s")
    demo.add_argument("--seed", type=int, default=0, help="random seed; default %(default)s")
    _add_solver_options(demo)

    solve = sub.add_parser(
        "solve", help="train a linear classifier on a LIBSVM file or a known data set",
        description="Minimize lam*Omega(w) + mean loss on DATA and print the certificate.")
    solve.add_argument("data", metavar="DATA",
                       help="a LIBSVM/svmlight file (plain, .gz, .bz2, .xz) or the name of a data "
                            "set in the data folder (NSOPT_DATA, ~/.nsopt/data or ../shared/data), e.g. a9a")
    solve.add_argument("--loss", type=_loss_name, choices=_binary_losses(), default="hinge",
                       help="loss; default %(default)s")
    regs = _available_regularizers()
    solve.add_argument("--reg", choices=list(regs), default="l2",
                       help="regularizer Omega: " + "; ".join(f"{k}: {v[2]}" for k, v in regs.items())
                            + "; default %(default)s")
    solve.add_argument("--l1-ratio", type=float, default=0.5, metavar="R",
                       help="L1 weight r of --reg elastic-net, 0 <= r < 1; default %(default)s")
    solve.add_argument("--p", type=float, default=1.5,
                       help="exponent of --reg lp, 1 < p < inf; default %(default)s")
    solve.add_argument("--method", choices=sorted(SOLVERS), default="bmrm",
                       help="solver; default %(default)s")
    solve.add_argument("--bounds", nargs=2, type=float, default=None, metavar=("LB", "UB"),
                       help="the box LB <= w_j <= UB on every weight, a constraint (required by "
                            "--method level-bundle, which certifies over it; only that method "
                            "takes it)")
    _add_solver_options(solve)
    solve.add_argument("--n-features", type=_positive_int, default=None, metavar="N",
                       help="number of features (default: the largest index in DATA)")
    solve.add_argument("--test", metavar="DATA", default=None,
                       help="a test file or data set name: print the test accuracy")
    solve.add_argument("--out", metavar="FILE", default=None,
                       help="save w, the result and the options to this .npz file")
    solve.add_argument("--quiet", action="store_true",
                       help="no progress display and no notes: only the certificate")
    return parser


# ---------------------------------------------------------------------------------------------
# data


def _load(data, n_features=None):
    """(X, y, description) from a file path or a data set name; UsageError on any problem."""
    from . import io

    path = Path(data)
    try:
        if path.is_dir():
            raise UsageError(f"{data!r} is a directory; DATA must be a LIBSVM file or a data set name")
        if path.is_file():
            loaded = io.load_svmlight(path, n_features=n_features)
            where = str(path)
        else:
            if os.sep in data or "/" in data:
                raise UsageError(f"no such file: {data!r}")
            try:
                loaded = io.load_dataset(data)
            except FileNotFoundError as exc:
                raise UsageError(f"{data!r} is neither a file nor a known data set: {exc}") from None
            where = f"data set {data!r}"
    except (ValueError, OSError, EOFError) as exc:  # malformed lines, bad compression, permissions
        raise UsageError(f"cannot read {data!r}: {exc}") from None
    if len(loaded) != 2:
        raise UsageError(f"{where} is a ranking data set (it has qid); solve handles binary "
                         "classification only")
    X, y = loaded
    if y.ndim != 1:
        raise UsageError(f"{where} is multilabel; solve handles binary classification only")
    if n_features is not None and X.shape[1] != n_features:
        if X.shape[1] > n_features:
            raise UsageError(f"{where} has {X.shape[1]} features, more than --n-features {n_features}")
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    if X.shape[0] == 0:
        raise UsageError(f"{where} has no examples")
    return X, y, where


def _binary_labels(y, where):
    """Map two distinct labels to -1/+1 (the larger one becomes +1); UsageError otherwise."""
    labels = np.unique(y)
    if len(labels) != 2:
        shown = ", ".join(f"{v:g}" for v in labels[:10]) + (", ..." if len(labels) > 10 else "")
        if len(labels) < 2:
            raise UsageError(f"{where} has a single label ({shown}); a binary loss needs two classes")
        raise UsageError(
            f"{where} has {len(labels)} classes ({shown}); the losses {', '.join(_binary_losses())} "
            "are binary and need exactly two distinct labels")
    negative, positive = float(labels[0]), float(labels[1])
    return np.where(y == positive, 1.0, -1.0), (negative, positive)


def _align_features(X, d):
    """Columns of X cut or padded to d (features absent from training have weight 0)."""
    if X.shape[1] == d:
        return X
    X = sp.csr_matrix(X)
    if X.shape[1] < d:
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
    return X[:, :d]


def _accuracy(X, y, w):
    scores = np.asarray(X @ w).reshape(-1)
    return float(np.mean(np.where(scores >= 0, 1.0, -1.0) == y))


# ---------------------------------------------------------------------------------------------
# progress display


def _keep_row(it):
    """Which iterations stay in the table: 0-10, every 10th to 100, then every 100th."""
    return it <= 10 or (it <= 100 and it % 10 == 0) or it % 100 == 0


def _cells(row):
    fun, lower, gap = row["fun"], row["lower_bound"], row["gap"]
    rel = gap / abs(fun) if fun != 0 and math.isfinite(gap) else math.inf
    planes = row.get("n_planes", math.nan)
    planes = "" if planes is None or (isinstance(planes, float) and math.isnan(planes)) else str(int(planes))
    return (f"{row['iteration']}", f"{row['time']:.3f}", f"{fun:.8g}", f"{lower:.8g}",
            f"{gap:.3g}", f"{rel:.2e}", planes)


_COLUMNS = ("iter", "time (s)", "fun", "lower bound", "gap", "rel. gap", "planes")


class _PlainProgress:
    """Progress as plain lines, for logs and pipes."""

    def __init__(self, out):
        self.out = out
        self.printed = -1

    def __enter__(self):
        print(f"{_COLUMNS[0]:>6} {_COLUMNS[1]:>9} {_COLUMNS[2]:>15} {_COLUMNS[3]:>15} "
              f"{_COLUMNS[4]:>10} {_COLUMNS[5]:>9} {_COLUMNS[6]:>6}", file=self.out)
        return self

    def update(self, row, final=False):
        it = row["iteration"]
        if (final and it != self.printed) or (not final and _keep_row(it)):
            c = _cells(row)
            print(f"{c[0]:>6} {c[1]:>9} {c[2]:>15} {c[3]:>15} {c[4]:>10} {c[5]:>9} {c[6]:>6}",
                  file=self.out, flush=True)
            self.printed = it

    def __exit__(self, *exc):
        return False


class _LiveProgress:
    """A rich table redrawn in place: the kept rows (see :func:`_keep_row`, last 15) plus the
    current iteration as its last line."""

    max_rows = 15

    def __init__(self, console):
        self.console = console
        self.kept = []
        self.live = None

    def _table(self, current=None):
        from rich.table import Table

        table = Table(box=None, header_style="bold", pad_edge=False)
        for i, name in enumerate(_COLUMNS):
            table.add_column(name, justify="right", style="cyan" if i == 4 else None)
        rows = self.kept[-self.max_rows:]
        if current is not None and (not rows or rows[-1][0] != current[0]):
            rows = rows + [current]
        for r in rows:
            table.add_row(*r)
        return table

    def __enter__(self):
        from rich.live import Live

        self.live = Live(self._table(), console=self.console, refresh_per_second=8,
                         redirect_stdout=False, redirect_stderr=False)
        self.live.__enter__()
        return self

    def update(self, row, final=False):
        cells = _cells(row)
        if _keep_row(row["iteration"]) or final:
            self.kept.append(cells)
        self.live.update(self._table(cells), refresh=final)

    def __exit__(self, *exc):
        return self.live.__exit__(*exc)


class _NoProgress:
    def __enter__(self):
        return self

    def update(self, row, final=False):
        pass

    def __exit__(self, *exc):
        return False


class _CtrlC:
    """Ctrl-C during a solve: stop with the best point so far, never a traceback.

    Inside a solver step the loop itself turns KeyboardInterrupt into status ``interrupted``.
    While the display is drawing, SIGINT only sets a flag, and the solver callback (called
    after the next step) asks the loop to stop; :func:`_run_solver` then reports the run as
    interrupted.
    """

    def __init__(self):
        self.pending = False
        self.drawing = False
        self.previous = None

    def _handler(self, signum, frame):
        if self.drawing:
            self.pending = True
        else:
            raise KeyboardInterrupt

    def callback(self, state):
        return self.pending

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def _progress(args, out):
    if getattr(args, "quiet", False):
        return _NoProgress()
    isatty = hasattr(out, "isatty") and out.isatty()
    if args.no_live or not isatty:
        return _PlainProgress(out)
    from rich.console import Console

    return _LiveProgress(Console(file=out))


def _run_solver(solver, problem, progress):
    """Run ``solver`` on ``problem``, feeding each history row to ``progress``; return the
    Result. A Ctrl-C before the first iteration has finished raises KeyboardInterrupt."""
    from .result import Status

    ctrl_c = _CtrlC()
    with ctrl_c, progress:
        # Solver.run yields (state, history row, None) per iteration, then (state, Result,
        # status).
        for _, out, status in solver.run(problem, None, ctrl_c.callback):
            ctrl_c.drawing = True
            try:
                if status is None:
                    progress.update(out)
                else:
                    if ctrl_c.pending and out.status is Status.CALLBACK:
                        out = dataclasses.replace(out, status=Status.INTERRUPTED, success=False,
                                                  message=Status.INTERRUPTED.message)
                    if not len(out.history["iteration"]):  # stopped inside init: nothing to show
                        raise KeyboardInterrupt
                    last = {k: v[-1] for k, v in out.history.items()}
                    progress.update(last, final=True)
                    return out
            finally:
                ctrl_c.drawing = False
    raise AssertionError("unreachable")  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# reporting


def print_certificate(res, out, *, rtol, accuracy=None, test_accuracy=None):
    """The certificate block (:meth:`nsopt.Result.summary`), with the run's rtol and the
    accuracies."""
    extra = []
    if accuracy is not None:
        extra.append(("train accuracy", f"{100 * accuracy:.2f}%"))
    if test_accuracy is not None:
        extra.append(("test accuracy", f"{100 * test_accuracy:.2f}%"))
    print(res.summary(rtol=rtol, extra=extra), file=out, flush=True)


def _exit_code(res):
    from .result import Status

    if res.status is Status.INTERRUPTED:
        return EXIT_INTERRUPTED
    if res.status is Status.NUMERICAL_ERROR:
        return EXIT_NUMERICAL
    return EXIT_OK


def _make_solver(args, method):
    from .solvers import SOLVERS

    try:
        box = getattr(args, "bounds", None)
        options = {} if box is None else {"bounds": tuple(box)}
        return SOLVERS[method](rtol=args.rtol, max_iter=args.max_iter, max_time=args.max_time,
                               **options)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# commands


def cmd_demo(args, out):
    from . import datasets, losses, regularizers
    from .problem import RegularizedRisk

    X, y = datasets.make_sparse_binary(args.n_samples, 123, random_state=args.seed)
    try:
        problem = RegularizedRisk(losses.Hinge(X, y), regularizers.L2(), lam=args.lam)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    solver = _make_solver(args, "bmrm")
    print(f"nsopt demo: BMRM on hinge loss + lam/2 ||w||^2, lam = {args.lam:g}, "
          f"synthetic a9a-shaped data: {X.shape[0]} examples x {X.shape[1]} features "
          f"({X.nnz / X.shape[0]:.1f} nonzeros per example), stop at relative gap {args.rtol:g}",
          file=out, flush=True)
    res = _run_solver(solver, problem, _progress(args, out))
    print(file=out)
    print_certificate(res, out, rtol=args.rtol, accuracy=_accuracy(X, y, res.x))
    return _exit_code(res)


def _check_out_path(path):
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise UsageError(f"--out {path!r}: the directory {str(parent)!r} does not exist")
    if Path(path).is_dir():
        raise UsageError(f"--out {path!r} is a directory; give a file name such as model.npz")


def save_model(path, res, options, labels):
    """Write ``w``, the result fields and the options (as JSON) to an .npz file at ``path``."""
    with open(Path(path).expanduser(), "wb") as f:
        np.savez(
            f, w=res.x, fun=res.fun, lower_bound=res.lower_bound, gap=res.gap,
            status=res.status.value, nit=res.nit, nfev=res.nfev, time=res.time,
            labels=np.asarray(labels, dtype=np.float64), options=json.dumps(options),
        )


def cmd_solve(args, out):
    from . import losses, regularizers
    from .problem import RegularizedRisk
    from .solvers import ProblemNotSupported

    if args.out is not None:
        _check_out_path(args.out)
    reg_class, reg_build, _ = _available_regularizers()[args.reg]
    try:
        reg = reg_build(getattr(regularizers, reg_class), args)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--reg {args.reg}: {exc}") from None
    solver = _make_solver(args, args.method)
    note = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=out, flush=True))

    t0 = time.perf_counter()
    X, y_raw, where = _load(args.data, args.n_features)
    y, labels = _binary_labels(y_raw, where)
    note(f"{where}: {X.shape[0]} examples x {X.shape[1]} features, {X.nnz} nonzeros "
         f"(read in {time.perf_counter() - t0:.2f} s); label {labels[1]:g} -> +1, "
         f"{labels[0]:g} -> -1")
    test = None
    if args.test is not None:
        Xt, yt_raw, twhere = _load(args.test)
        unknown = np.setdiff1d(np.unique(yt_raw), labels)
        if unknown.size:
            raise UsageError(f"{twhere} has labels {unknown[:10].tolist()} not in the training "
                             f"labels {list(labels)}")
        if Xt.shape[1] > X.shape[1]:
            note(f"{twhere}: features {X.shape[1] + 1}..{Xt.shape[1]} do not occur in training "
                 "(weight 0)")
        test = (_align_features(Xt, X.shape[1]), np.where(yt_raw == labels[1], 1.0, -1.0))

    try:
        loss = losses.get_loss(args.loss)(X, y)
        problem = RegularizedRisk(loss, reg, lam=args.lam)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    try:
        solver.check_problem(problem)
    except ProblemNotSupported as exc:
        raise UsageError(f"--method {args.method}: {exc}") from None
    note(f"{solver.name}: {args.loss} + lam * {args.reg}, lam = {args.lam:g}, rtol = {args.rtol:g}")
    res = _run_solver(solver, problem, _progress(args, out))
    if not args.quiet:
        print(file=out)
    test_acc = _accuracy(test[0], test[1], res.x) if test is not None else None
    print_certificate(res, out, rtol=args.rtol, accuracy=_accuracy(X, y, res.x),
                      test_accuracy=test_acc)
    if args.out is not None:
        options = {
            "data": args.data, "loss": args.loss, "reg": args.reg, "lam": args.lam,
            "method": args.method, "rtol": args.rtol, "max_iter": args.max_iter,
            "max_time": args.max_time, "n_features": int(X.shape[1]), "test": args.test,
        }
        if args.reg == "elastic-net":
            options["l1_ratio"] = args.l1_ratio
        if args.reg == "lp":
            options["p"] = args.p
        save_model(args.out, res, options, labels)
        note(f"saved w, the result and the options to {args.out}")
    return _exit_code(res)


def main(argv=None) -> int:
    """Run the ``nsopt`` command line with ``argv`` (default ``sys.argv[1:]``); return the
    exit code."""
    out, err = sys.stdout, sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    command = {"demo": cmd_demo, "solve": cmd_solve}[args.command]
    try:
        return command(args, out)
    except UsageError as exc:
        print(f"nsopt {args.command}: error: {exc}", file=err, flush=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\ninterrupted before the first iteration finished: no result to report",
              file=err, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `nsopt demo | head`: stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
