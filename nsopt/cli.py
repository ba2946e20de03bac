"""The ``nsopt`` command line: ``nsopt demo``, ``nsopt solve DATA ...``, ``nsopt compare DATA
...`` and ``nsopt predict MODEL DATA``.

``demo`` and ``solve`` run a solver with a live progress table (iteration, time, fun, lower
bound, gap, relative gap, planes) and end with the certificate: the value found, a proven lower
bound on the optimum and the gap between them. ``solve`` handles binary, multiclass, multilabel
and regression data and writes a model file (``--model``, an ``.npz`` without pickles) that
``predict`` reads back. ``compare`` runs several methods on one problem and prints the time and
oracle calls each needs to reach each certified relative gap, and draws their convergence.
``python -m nsopt`` is the same program.

Exit codes: 0 when the command finished (whatever the status: the certificate says how good the
point is), 1 on a numerical error, 2 on bad input (options, files, labels, a method that cannot
solve the problem), 130 when stopped with Ctrl-C (the best point so far and its certificate are
printed first), 141 when the output pipe closed early.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import os
import signal
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["main", "REGULARIZERS", "LOSS_KINDS", "LinearModel", "load_model", "save_model",
           "gap_ladder", "reach"]


def _binary_losses() -> list[str]:
    """The binary losses of :data:`nsopt.losses.LOSSES` (their ``binary`` flag)."""
    from .losses import LOSSES

    return sorted(name for name, cls in LOSSES.items() if getattr(cls, "binary", False))


#: The losses ``--loss`` offers beyond the binary ones, by the kind of task they solve. The
#: binary losses are those of :data:`nsopt.losses.LOSSES` flagged ``binary``.
LOSS_KINDS = {
    "multiclass": ("multiclass-hinge", "softmax"),
    "multilabel": ("multilabel-hinge",),
    "regression": ("least-squares", "least-absolute-deviation", "huber"),
}

#: The loss a kind of data gets when ``--loss`` is not given (regression must be asked for).
DEFAULT_LOSS = {"binary": "hinge", "multiclass": "multiclass-hinge",
                "multilabel": "multilabel-hinge"}


def _loss_kinds() -> dict[str, str]:
    """``--loss`` name -> the kind of task it solves: binary, multiclass, multilabel or
    regression (only names registered in :data:`nsopt.losses.LOSSES`)."""
    from .losses import LOSSES

    kinds = {name: "binary" for name in _binary_losses()}
    for kind, names in LOSS_KINDS.items():
        kinds.update({name: kind for name in names if name in LOSSES})
    return kinds


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


def _nonnegative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _add_solver_options(p, *, lam_default=1e-4):
    p.add_argument("--lam", type=_positive_float, default=lam_default, metavar="LAM",
                   help="regularization strength lam in J(w) = lam*Omega(w) + mean loss "
                        "(liblinear's C = 1/(m*lam)); default %(default)g")
    p.add_argument("--rtol", type=_positive_float, default=1e-3,
                   help="stop when the certified gap <= rtol * fun; default %(default)g")
    p.add_argument("--atol", type=_nonnegative_float, default=0.0,
                   help="or when the certified gap <= atol; default %(default)g")
    p.add_argument("--max-iter", type=_positive_int, default=None, metavar="N",
                   help="iteration limit (default: none)")
    p.add_argument("--max-time", type=_positive_float, default=None, metavar="S",
                   help="time limit in seconds (default: none)")
    p.add_argument("--no-live", action="store_true",
                   help="print plain progress lines instead of the live table "
                        "(automatic when stdout is not a terminal)")


SYNTHETIC = "synthetic"


def _add_data_argument(p, what="train on"):
    p.add_argument("data", metavar="DATA",
                   help=f"the data to {what}: a LIBSVM/svmlight file (plain, .gz, .bz2, .xz), the "
                        "name of a data set in the data folder (NSOPT_DATA, ~/.nsopt/data or ../shared/data), e.g. "
                        f"a9a, or {SYNTHETIC!r}: nsopt demo's a9a-shaped binary data (no files "
                        "needed; see --n-samples, --seed)")


def _add_problem_options(p):
    """The options that define the problem: data reading, loss, regularizer, bias."""
    kinds = _loss_kinds()
    by_kind = {}
    for name, kind in kinds.items():
        by_kind.setdefault(kind, []).append(name)
    p.add_argument("--loss", type=_loss_name, choices=list(kinds), default=None, metavar="LOSS",
                   help="the loss; " + "; ".join(f"{kind}: {', '.join(names)}"
                                             for kind, names in by_kind.items())
                        + ". Default: hinge for two classes, multiclass-hinge for more, "
                          "multilabel-hinge for multilabel data (regression losses must be asked for)")
    regs = _available_regularizers()
    p.add_argument("--reg", choices=list(regs), default="l2",
                   help="regularizer Omega: " + "; ".join(f"{k}: {v[2]}" for k, v in regs.items())
                        + "; default %(default)s")
    p.add_argument("--l1-ratio", type=float, default=0.5, metavar="R",
                   help="L1 weight r of --reg elastic-net, 0 <= r < 1; default %(default)s")
    p.add_argument("--p", type=float, default=1.5,
                   help="exponent of --reg lp, 1 < p < inf; default %(default)s")
    p.add_argument("--bias", type=_positive_float, default=None, metavar="B",
                   help="append a constant feature of value B to every example, as liblinear's "
                        "-B: its weight is the bias, and it is regularized like the others "
                        "(default: no bias)")
    p.add_argument("--n-features", type=_positive_int, default=None, metavar="N",
                   help="number of features (default: the largest index in DATA)")
    p.add_argument("--multilabel", action="store_true",
                   help="read DATA as multilabel (labels like 1,3). Detected when a label has a "
                        "comma; needed when every example has exactly one label")
    p.add_argument("--n-samples", type=_positive_int, default=5000, metavar="M",
                   help=f"DATA {SYNTHETIC}: number of examples; default %(default)s")
    p.add_argument("--seed", type=int, default=0,
                   help=f"DATA {SYNTHETIC}: random seed; default %(default)s")


def build_parser() -> argparse.ArgumentParser:
    from .solvers import SOLVERS

    parser = argparse.ArgumentParser(
        prog="nsopt",
        description="Minimize regularized risks with certified gaps: every run ends with a proven "
                    "lower bound on the optimum.",
        epilog="examples:\n"
               "  nsopt demo\n"
               "  nsopt solve a9a --lam 1e-4 --test a9a.t --model a9a.npz\n"
               "  nsopt predict a9a.npz a9a.t --output a9a.pred\n"
               "  nsopt compare synthetic --methods bmrm,proximal-bundle,sublbfgs --max-time 30\n"
               "\n'nsopt COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "solve", help="train a linear model (binary, multiclass, multilabel or regression)",
        description="Minimize lam*Omega(w) + mean loss on DATA, print the certificate and "
                    "optionally save the model for nsopt predict.")
    _add_data_argument(solve)
    _add_problem_options(solve)
    solve.add_argument("--method", choices=sorted(SOLVERS), default=None, metavar="METHOD",
                       help="the solver: " + ", ".join(sorted(SOLVERS)) + "; default: the one "
                            "nsopt.minimize picks for the problem (nsopt.minimize."
                            "default_method: dcd where it is well conditioned, bmrm for L1, "
                            "else ls-bmrm)")
    solve.add_argument("--bounds", nargs=2, type=float, default=None, metavar=("LB", "UB"),
                       help="the box LB <= w_j <= UB on every weight, a constraint (required by "
                            "--method level-bundle, which certifies over it; only that method "
                            "takes it)")
    _add_solver_options(solve)
    solve.add_argument("--test", metavar="DATA", default=None,
                       help="a test file or data set name: print the test accuracy (or Hamming "
                            "loss, RMSE)")
    solve.add_argument("--model", "--out", dest="model", metavar="FILE", default=None,
                       help="save the model (weights, loss, classes, bias, options, certificate) "
                            "to this .npz file, for nsopt predict (--out is the old name)")
    solve.add_argument("--quiet", action="store_true",
                       help="no progress display and no notes: only the certificate")
    solve.add_argument("--dask", nargs="?", const="local", default=None, metavar="ADDRESS",
                       help="evaluate the loss on a Dask cluster (pip install 'nsopt[dask]'): "
                            "the scheduler's ADDRESS, or without one a local cluster of one "
                            "single-threaded process per CPU. A DATA file or data set name "
                            "with a binary or regression loss is read only on the workers "
                            "(--shards byte ranges of it; a compressed file is one shard) and "
                            "the training metrics are computed there; so is --test data (no "
                            "AUC for either); synthetic data and multiclass or multilabel data "
                            "are read here, split into --shards row blocks and scattered once")
    solve.add_argument("--shards", type=_positive_int, default=None, metavar="N",
                       help="with --dask: the number of row blocks; default one per worker")

    compare = sub.add_parser(
        "compare", help="run several methods on one problem: a table and a convergence plot",
        description="Run each method of --methods on the same problem and print one table: the "
                    "time and oracle calls each needed to reach each certified relative gap "
                    "(1e-1, 1e-2, ... down to --rtol), and how it ended; then draw the "
                    "convergence of all runs into one figure.")
    _add_data_argument(compare, "solve")
    compare.add_argument("--methods", default="bmrm,proximal-bundle,sublbfgs", metavar="M1,M2,...",
                         help="comma-separated methods, any of " + ", ".join(sorted(SOLVERS))
                              + "; default %(default)s")
    _add_problem_options(compare)
    _add_solver_options(compare)
    compare.add_argument("--plot", metavar="FILE", default="compare.png",
                         help="where to write the convergence plot (the format follows the "
                              "extension: .png, .pdf, .svg); default %(default)s")
    compare.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    compare.add_argument("--quiet", action="store_true",
                         help="no progress display and no notes: only the table")

    predict = sub.add_parser(
        "predict", help="predict with a model saved by nsopt solve --model",
        description="Read a model written by nsopt solve --model, predict DATA and, when DATA "
                    "has labels, print accuracy (and AUC for binary models), the Hamming loss "
                    "(multilabel) or the RMSE (regression). Features beyond the model's are "
                    "ignored, as liblinear does.")
    predict.add_argument("model_file", metavar="MODEL", help="an .npz written by nsopt solve --model")
    _add_data_argument(predict, "predict")
    predict.add_argument("--output", "-o", metavar="FILE", default=None,
                         help="write one prediction per line to FILE ('-' for stdout): a label, a "
                              "comma-separated label list (multilabel) or a number (regression)")
    predict.add_argument("--n-samples", type=_positive_int, default=5000, metavar="M",
                         help=f"DATA {SYNTHETIC}: number of examples; default %(default)s")
    predict.add_argument("--seed", type=int, default=0,
                         help=f"DATA {SYNTHETIC}: random seed; default %(default)s")
    return parser


# ---------------------------------------------------------------------------------------------
# data


def _read(data, n_features, multilabel, n_labels):
    """``(X, y, description)`` read from a file path or a data set name, as io returns them."""
    from . import io

    path = Path(data)
    if path.is_dir():
        raise UsageError(f"{data!r} is a directory; DATA must be a LIBSVM file or a data set name")
    if path.is_file():
        options = {"multilabel": True, "n_labels": n_labels} if multilabel else {}
        return io.load_svmlight(path, n_features=n_features, **options), str(path)
    if os.sep in data or "/" in data:
        raise UsageError(f"no such file: {data!r}")
    try:
        return io.load_dataset(data), f"data set {data!r}"
    except FileNotFoundError as exc:
        raise UsageError(f"{data!r} is neither a file nor a known data set: {exc}") from None


def _load(data, n_features=None, *, multilabel=False, n_labels=None, synthetic=(5000, 0)):
    """(X, y, description) from a file path, a data set name or :data:`SYNTHETIC`; UsageError
    on any problem.

    ``y`` is 1-D, or an m x k 0/1 matrix for multilabel data: read as such with
    ``multilabel=True``, or when a label has a comma (or is empty). X gets ``n_features``
    columns (padded; more is an error). ``synthetic`` is ``(n_samples, seed)`` for
    :func:`nsopt.datasets.make_sparse_binary`, the data of ``nsopt demo``.
    """
    from . import io

    if data == SYNTHETIC and not Path(data).exists():
        from .datasets import make_sparse_binary

        n_samples, seed = synthetic
        X, y = make_sparse_binary(n_samples, 123, random_state=seed)
        loaded, where = (X, y), f"synthetic a9a-shaped data (seed {seed})"
    else:
        try:
            try:
                loaded, where = _read(data, None, multilabel, n_labels)
            except io.SvmlightFormatError as exc:
                # a comma-separated or empty label: read the file again as multilabel
                if multilabel or not ("multilabel=True" in exc.problem
                                      or "must start with its label" in exc.problem):
                    raise
                try:
                    loaded, where = _read(data, None, True, n_labels)
                except ValueError:
                    raise exc from None
        except (ValueError, OSError, EOFError) as exc:  # malformed lines, compression, permissions
            raise UsageError(f"cannot read {data!r}: {exc}") from None
    if len(loaded) != 2:
        raise UsageError(f"{where} is a ranking data set (it has qid); nsopt solves classification "
                         "and regression from the command line")
    X, y = loaded
    X = sp.csr_matrix(X)
    if n_features is not None and X.shape[1] != n_features:
        if X.shape[1] > n_features:
            raise UsageError(f"{where} has {X.shape[1]} features, more than --n-features {n_features}")
        X = _align_features(X, n_features)
    if X.shape[0] == 0:
        raise UsageError(f"{where} has no examples")
    return X, y, where


def _or(names):
    """``a, b or c``."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _show_labels(labels, limit=10):
    return ", ".join(f"{v:g}" for v in labels[:limit]) + (", ..." if len(labels) > limit else "")


def _binary_labels(y, where):
    """Map two distinct labels to -1/+1 (the larger one becomes +1); UsageError otherwise."""
    labels = np.unique(y)
    if len(labels) != 2:
        shown = _show_labels(labels)
        if len(labels) < 2:
            raise UsageError(f"{where} has a single label ({shown}); a binary loss needs two classes")
        raise UsageError(
            f"{where} has {len(labels)} classes ({shown}); the losses {', '.join(_binary_losses())} "
            "are binary and need exactly two distinct labels; for more classes use "
            f"--loss {_or(LOSS_KINDS['multiclass'])}")
    negative, positive = float(labels[0]), float(labels[1])
    return np.where(y == positive, 1.0, -1.0), (negative, positive)


def _task_kind(loss, y, where):
    """(kind, loss name) for labels ``y``: the kind of ``loss`` if given, else the kind of the
    labels and its :data:`DEFAULT_LOSS`."""
    if y.ndim == 2:
        if loss is not None and _loss_kinds()[loss] != "multilabel":
            raise UsageError(f"{where} is multilabel (comma-separated labels); --loss {loss} is not "
                             f"a multilabel loss: use {_or(LOSS_KINDS['multilabel'])}")
        return "multilabel", loss or DEFAULT_LOSS["multilabel"]
    if loss is not None:
        kind = _loss_kinds()[loss]
        if kind == "multilabel":
            raise UsageError(f"--loss {loss} needs multilabel data (labels like 1,3; pass "
                             "--multilabel when every example has a single label)")
        return kind, loss
    labels = np.unique(y)
    if len(labels) > 2 and not np.all(labels == np.round(labels)):
        raise UsageError(
            f"{where} has {len(labels)} distinct labels, not all integers ({_show_labels(labels)}): "
            f"for regression pass --loss {_or(LOSS_KINDS['regression'])}")
    kind = "multiclass" if len(labels) > 2 else "binary"
    return kind, DEFAULT_LOSS[kind]


def _encode(kind, y, classes, where):
    """The targets the losses take: -1/+1 (binary, ``classes[1]`` is +1), class indices
    (multiclass), the 0/1 matrix (multilabel) or ``y`` itself (regression). A label outside
    ``classes`` is an error."""
    if kind in ("binary", "multiclass"):
        unknown = np.setdiff1d(np.unique(y), classes)
        if unknown.size:
            raise UsageError(f"{where} has labels {unknown[:10].tolist()} not in the training "
                             f"labels {classes.tolist()}")
        if kind == "binary":
            return np.where(y == classes[1], 1.0, -1.0)
        return np.searchsorted(classes, y).astype(np.int64)
    if kind == "multilabel":
        Y = y.toarray() if sp.issparse(y) else np.asarray(y, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[1] > len(classes):
            raise UsageError(f"{where} has labels beyond the {len(classes)} of training")
        return np.pad(Y, ((0, 0), (0, len(classes) - Y.shape[1])))
    return np.asarray(y, dtype=np.float64)


@dataclasses.dataclass
class _Task:
    """One problem's data as the command line prepared it."""

    kind: str               # binary, multiclass, multilabel or regression
    loss: str               # the --loss name
    X: sp.csr_matrix        # with the bias column when bias > 0 (None: read on the workers)
    target: np.ndarray      # what the loss takes (see _encode; None: on the workers)
    y: np.ndarray           # the labels as read (None: on the workers)
    classes: np.ndarray     # original labels (binary: [negative, positive]); label indices
                            # (multilabel); empty (regression)
    where: str
    n_features: int         # without the bias column
    bias: float             # -1: none (liblinear's convention)

    def describe(self):
        text = (f"{self.where}: {self.X.shape[0]} examples x {self.n_features} features, {self.X.nnz} nonzeros"
                + (f" (+ a bias feature of value {self.bias:g})" if self.bias > 0 else ""))
        if self.kind == "binary":
            return (text + f"; label {self.classes[1]:g} -> +1, {self.classes[0]:g} -> -1")
        if self.kind == "multiclass":
            return text + f"; {len(self.classes)} classes ({_show_labels(self.classes)})"
        if self.kind == "multilabel":
            return text + f"; multilabel, {len(self.classes)} labels"
        return text + "; regression"


def _with_bias(X, bias):
    """X with a last column of value ``bias`` (liblinear's ``-B``), or X when ``bias <= 0``."""
    if bias <= 0:
        return X
    return sp.hstack([X, sp.csr_matrix(np.full((X.shape[0], 1), bias))], format="csr")


def _prepare(args, data):
    """Read DATA and decide the task: the kind, the loss, the targets, the bias column."""
    X, y, where = _load(data, args.n_features, multilabel=args.multilabel,
                        synthetic=(args.n_samples, args.seed))
    kind, loss = _task_kind(args.loss, y, where)
    if kind == "binary":
        _, classes = _binary_labels(y, where)
    elif kind == "multiclass":
        classes = np.unique(y)
        if len(classes) < 2:
            raise UsageError(f"{where} has a single label ({_show_labels(classes)}); "
                             "a classifier needs two classes")
    elif kind == "multilabel":
        classes = np.arange(y.shape[1])
    else:
        classes = np.empty(0)
    classes = np.asarray(classes, dtype=np.float64)
    bias = -1.0 if args.bias is None else float(args.bias)
    return _Task(kind=kind, loss=loss, X=_with_bias(X, bias), target=_encode(kind, y, classes, where),
                 y=y, classes=classes, where=where, n_features=X.shape[1], bias=bias)


def _regularizer(args):
    """The regularizer of ``--reg`` (and its options); UsageError on bad options."""
    from . import regularizers

    reg_class, reg_build, _ = _available_regularizers()[args.reg]
    try:
        return reg_build(getattr(regularizers, reg_class), args)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--reg {args.reg}: {exc}") from None


def _build_problem(args, task):
    """The RegularizedRisk of ``task`` with ``--reg`` and ``--lam``; UsageError on bad options."""
    from . import losses
    from .problem import RegularizedRisk

    reg = _regularizer(args)
    try:
        cls = losses.get_loss(task.loss)
        if task.kind == "multiclass":
            loss = cls(task.X, task.target, n_classes=len(task.classes))
        else:
            loss = cls(task.X, task.target)
        return RegularizedRisk(loss, reg, lam=args.lam)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--loss {task.loss}: {exc}") from None


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
# models: what solve writes and predict reads


_MODEL_FORMAT, _MODEL_VERSION = "nsopt-linear-model", 1


@dataclasses.dataclass(frozen=True)
class LinearModel:
    r"""A linear model as ``nsopt solve --model`` saves it: scores :math:`f = W^T [x; B]`.

    Attributes
    ----------
    kind : {"binary", "multiclass", "multilabel", "regression"}
    loss : str
        The ``--loss`` it was trained with.
    weights : ndarray
        ``(n_features + b,)`` for binary and regression models, ``(n_features + b, k)`` for
        multiclass (k classes) and multilabel (k labels) ones, with ``b = 1`` when there is a
        bias feature (its weight last), else 0.
    classes : ndarray
        The labels as they appear in the data: ``[negative, positive]`` (binary), the sorted
        classes (multiclass), the label indices ``0 .. k-1`` (multilabel); empty (regression).
    bias : float
        ``B`` of ``--bias``: every example gets a last feature of value ``B``; -1 when there is
        none (liblinear's convention).
    n_features : int
        Features of the training data (without the bias feature).
    lam : float
    reg : str
    info : dict
        The options and the certificate of the run (fun, lower_bound, gap, status, ...).
    """

    kind: str
    loss: str
    weights: np.ndarray
    classes: np.ndarray
    bias: float
    n_features: int
    lam: float
    reg: str
    info: dict = dataclasses.field(default_factory=dict)

    def features(self, X):
        """X as the model reads it: ``n_features`` columns (extra ones dropped, missing ones
        zero, as liblinear does) and the bias column."""
        return _with_bias(_align_features(sp.csr_matrix(X), self.n_features), self.bias)

    def decision_function(self, X):
        """Scores: ``(m,)`` for binary and regression models, ``(m, k)`` otherwise."""
        return np.asarray(self.features(X) @ self.weights)

    def predict(self, X, scores=None):
        r"""Predicted labels: ``classes[1]`` where the score is :math:`\ge 0` else
        ``classes[0]`` (binary); the class of largest score (multiclass); a 0/1 matrix of the
        labels scoring above the example's mean score, the rule of
        :meth:`nsopt.losses.MultilabelHinge.predict`; the score itself (regression)."""
        f = self.decision_function(X) if scores is None else scores
        if self.kind == "binary":
            return np.where(f >= 0, self.classes[1], self.classes[0])
        if self.kind == "multiclass":
            return self.classes[np.argmax(f, axis=1)]
        if self.kind == "multilabel":
            return (f > f.mean(axis=1, keepdims=True)).astype(np.float64)
        return f


def _check_out_path(path, option="--model"):
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise UsageError(f"{option} {path!r}: the directory {str(parent)!r} does not exist")
    if Path(path).is_dir():
        raise UsageError(f"{option} {path!r} is a directory; give a file name")


def save_model(path, model, res):
    """Write ``model`` and the certificate of ``res`` to an ``.npz`` file at ``path``.

    Every entry is a plain array (strings as unicode arrays), readable with
    ``numpy.load(path, allow_pickle=False)``; :func:`load_model` reads it back.
    """
    from .result import relative_gap

    info = dict(model.info)
    with open(Path(path).expanduser(), "wb") as f:
        np.savez(
            f, format=_MODEL_FORMAT, version=_MODEL_VERSION, kind=model.kind, loss=model.loss,
            weights=model.weights, w=np.asarray(res.x).reshape(-1), classes=model.classes,
            labels=model.classes, bias=model.bias, n_features=model.n_features, lam=model.lam,
            reg=model.reg, method=res.method, fun=res.fun, lower_bound=res.lower_bound,
            gap=res.gap, relative_gap=float(relative_gap(res.gap, res.fun)),
            status=res.status.value, nit=res.nit, nfev=res.nfev, time=res.time,
            options=json.dumps(info),
        )


def load_model(path) -> LinearModel:
    """Read a model written by ``nsopt solve --model`` (or ``--out`` of earlier versions, which
    wrote binary models without a bias); UsageError naming what is wrong."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UsageError(f"no such model file: {str(path)!r}" if not path.is_dir() else
                         f"{str(path)!r} is a directory, not a model file")
    if not zipfile.is_zipfile(path):
        raise UsageError(f"{str(path)!r} is not an nsopt model file (not an .npz archive); write "
                         "one with nsopt solve --model FILE")
    try:
        with np.load(path, allow_pickle=False) as z:
            entries = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError) as exc:
        raise UsageError(f"{str(path)!r} is not an nsopt model file (not a readable .npz: "
                         f"{exc})") from None
    if "nsopt_result" in entries:
        raise UsageError(f"{str(path)!r} is a saved Result (read it with nsopt.load_result), not a "
                         "model; write a model with nsopt solve --model FILE")
    try:
        options = json.loads(str(entries["options"])) if "options" in entries else {}
        if "format" not in entries:  # nsopt solve --out before models had a format
            w, labels = entries["w"], entries["labels"]
            entries.update(format=_MODEL_FORMAT, version=_MODEL_VERSION, kind="binary",
                           loss=options.get("loss", "hinge"), weights=w, classes=labels,
                           bias=-1.0, n_features=options.get("n_features", w.size),
                           lam=options.get("lam", math.nan), reg=options.get("reg", "l2"))
        if str(entries["format"]) != _MODEL_FORMAT:
            raise UsageError(f"{str(path)!r} is not an nsopt model file (format "
                             f"{str(entries['format'])!r})")
        if int(entries["version"]) > _MODEL_VERSION:
            raise UsageError(f"{str(path)!r} is a model of version {int(entries['version'])}, newer "
                             f"than this nsopt reads ({_MODEL_VERSION}); upgrade nsopt")
        model = LinearModel(
            kind=str(entries["kind"]), loss=str(entries["loss"]),
            weights=np.asarray(entries["weights"], dtype=np.float64),
            classes=np.asarray(entries["classes"], dtype=np.float64),
            bias=float(entries["bias"]), n_features=int(entries["n_features"]),
            lam=float(entries["lam"]), reg=str(entries["reg"]),
            info={**options, **{k: entries[k].item() for k in
                                ("method", "fun", "lower_bound", "gap", "status", "nit", "nfev")
                                if k in entries}})
    except KeyError as exc:
        raise UsageError(f"{str(path)!r} is not an nsopt model file: it has no {exc.args[0]!r} "
                         f"entry (it has {sorted(entries)})") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{str(path)!r} is not a valid nsopt model file: {exc}") from None
    rows = model.n_features + (model.bias > 0)
    shapes = {"binary": (rows,), "regression": (rows,),
              "multiclass": (rows, len(model.classes)), "multilabel": (rows, len(model.classes))}
    if model.kind not in shapes:
        raise UsageError(f"{str(path)!r}: unknown model kind {model.kind!r}")
    if model.weights.shape != shapes[model.kind]:
        raise UsageError(f"{str(path)!r} is damaged: a {model.kind} model with {model.n_features} "
                         f"features{', a bias' if model.bias > 0 else ''} and "
                         f"{len(model.classes)} classes needs weights of shape "
                         f"{shapes[model.kind]}, not {model.weights.shape}")
    return model


def _model_of(task, res, lam, reg, options):
    shape = (task.n_features + (task.bias > 0), len(task.classes)) if task.kind in ("multiclass", "multilabel") else (-1,)
    return LinearModel(kind=task.kind, loss=task.loss, weights=np.asarray(res.x).reshape(shape),
                       classes=task.classes, bias=task.bias, n_features=task.n_features, lam=lam,
                       reg=reg, info=options)


# ---------------------------------------------------------------------------------------------
# metrics


def _auc(scores, positive):
    """Area under the ROC curve of ``scores`` for the 0/1 (or bool) labels ``positive``: the
    probability that a random positive scores above a random negative, ties counting one half
    (the Mann-Whitney statistic from mid-ranks). NaN when a class is absent."""
    from scipy.stats import rankdata

    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = rankdata(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _metrics(model, X, y, scores=None):
    """``{name: value}`` of ``model`` on labelled data ``(X, y)`` (``y`` as read): accuracy
    (and AUC for binary models; labels outside the model's classes count as errors), the
    Hamming loss and the exact-match ratio (multilabel), or RMSE and MAE (regression)."""
    f = model.decision_function(X) if scores is None else scores
    predicted = model.predict(X, scores=f)
    if model.kind == "multilabel":
        Y = _encode("multilabel", y, model.classes, "DATA")
        return {"Hamming loss": float(np.mean(predicted != Y)),
                "exact match": float(np.mean(np.all(predicted == Y, axis=1)))}
    if model.kind == "regression":
        return {"RMSE": math.sqrt(float(np.mean((predicted - y) ** 2))),
                "MAE": float(np.mean(np.abs(predicted - y)))}
    out = {"accuracy": float(np.mean(predicted == y))}
    if model.kind == "binary":
        known = np.isin(y, model.classes)
        auc = _auc(f[known], y[known] == model.classes[1])
        if math.isfinite(auc):
            out["AUC"] = auc
    return out


def _metric_text(name, value):
    return f"{100 * value:.2f}%" if name in ("accuracy", "exact match") else f"{value:.6g}"


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


def print_certificate(res, out, *, rtol, accuracy=None, test_accuracy=None, extra=()):
    """The certificate block (:meth:`nsopt.Result.summary`), with the run's rtol, the
    accuracies and any ``extra`` (name, value) lines."""
    lines = []
    if accuracy is not None:
        lines.append(("train accuracy", f"{100 * accuracy:.2f}%"))
    if test_accuracy is not None:
        lines.append(("test accuracy", f"{100 * test_accuracy:.2f}%"))
    print(res.summary(rtol=rtol, extra=lines + list(extra)), file=out, flush=True)


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
        return SOLVERS[method](rtol=args.rtol, atol=args.atol, max_iter=args.max_iter,
                               max_time=args.max_time, **options)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def _checked_solver(args, method, problem, option="--method"):
    """The solver of ``method`` for ``problem``; UsageError naming the methods that can."""
    from .solvers import ProblemNotSupported

    solver = _make_solver(args, method)
    try:
        solver.check_problem(problem)
    except ProblemNotSupported as exc:
        raise UsageError(f"{option} {method}: {exc}") from None
    return solver


def _notes(args, out):
    """print for the notes around a run, silent with --quiet."""
    if getattr(args, "quiet", False):
        return lambda *a: None
    return lambda msg: print(msg, file=out, flush=True)


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


def _metric_lines(metrics, prefix):
    """Certificate lines ``(prefix name, value)`` of the metrics other than accuracy (which
    print_certificate shows)."""
    return [(f"{prefix} {name}", _metric_text(name, v)) for name, v in metrics.items()
            if name != "accuracy"]


def _dask_client(args):
    """``(client, workers, owns)`` of ``--dask``; UsageError without Dask or a cluster."""
    try:
        from . import distributed
        distributed._require_dask()
    except ImportError as exc:
        raise UsageError(f"--dask: {exc}") from None
    try:
        return distributed._client_and_workers(None if args.dask == "local" else args.dask)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--dask {args.dask}: {exc}") from None


def _file_for_workers(data, multilabel=False):
    """``(path, where, n_features)`` when ``--dask`` can read DATA on the workers: a file, or
    a data set name resolved here to its file (``nsopt.io.dataset_path``: only looked up, not
    read) unless the data set is multilabel or ranking data; None otherwise (synthetic data,
    a name that is not found: the driver's reader then says why). ``n_features`` is the data
    set's known width (None for a file)."""
    from . import io

    path = Path(data)
    if multilabel:
        return None
    if path.is_file():
        return path, str(path), None
    if data == SYNTHETIC or os.sep in data or "/" in data:
        return None
    try:
        path, options = io.dataset_path(data)
    except FileNotFoundError:
        return None
    if options.get("multilabel") or options.get("query_id"):
        return None
    return path, f"data set {data!r} ({path})", options.get("n_features")


def _workers_read_training(args):
    """The ``_file_for_workers`` answer for the training DATA, when its loss (if given) is a
    binary or regression loss; else None (read here and scattered)."""
    if args.loss is not None and _loss_kinds()[args.loss] not in ("binary", "regression"):
        return None
    return _file_for_workers(args.data, args.multilabel)


def _load_on_workers(args, found, note):
    """``(task, problem)`` with DATA read only on the Dask workers (nsopt.distributed.
    load_svmlight: ``--shards`` byte ranges of the file, one per worker by default; one shard
    for a compressed file); the task has no data (``X``, ``y`` None). None when the labels turn
    out multiclass without ``--loss`` (then DATA is read here, as before)."""
    from . import distributed, losses

    path, where, known_features = found
    kind = "binary" if args.loss is None else _loss_kinds()[args.loss]
    name = args.loss or DEFAULT_LOSS["binary"]
    reg = _regularizer(args)
    client, workers, owns = _dask_client(args)
    n_shards = args.shards if args.shards is not None else _default_parts(path, workers)
    t0 = time.perf_counter()
    try:
        problem = distributed.load_svmlight(
            str(path.resolve()), loss=losses.get_loss(name), reg=reg, lam=args.lam,
            client=client, n_features=args.n_features or known_features, n_shards=n_shards,
            binary_labels=kind == "binary", bias=args.bias)
    except ValueError as exc:
        labels = getattr(exc, "labels", None)
        if owns:
            client.close()
        if args.loss is None and labels is not None and len(labels) > 2:
            note(f"{where} has more than two labels: multiclass, read here and scattered")
            return None
        if labels is not None:
            raise UsageError(f"{where}: {exc}; for more classes use "
                             f"--loss {_or(LOSS_KINDS['multiclass'])} (read here and scattered)"
                             if len(labels) > 2 else f"{where}: {exc}") from None
        raise UsageError(f"--dask {args.dask} --shards {n_shards}: {exc}") from None
    except BaseException:
        if owns:
            client.close()
        raise
    loss = problem.loss
    loss._owns_client = owns  # closed with the loss, as when load_svmlight starts it
    classes = np.asarray(loss.classes if kind == "binary" else (), dtype=np.float64)
    bias = -1.0 if args.bias is None else float(args.bias)
    n_features = loss.dim - (bias > 0)
    task = _Task(kind=kind, loss=name, X=None, target=None, y=None, classes=classes,
                 where=where, n_features=n_features, bias=bias)
    text = (f"{where}: {loss.m} examples x {n_features} features"
            + (f" (+ a bias feature of value {bias:g})" if bias > 0 else ""))
    if kind == "binary":
        text += f"; label {classes[1]:g} -> +1, {classes[0]:g} -> -1"
    note(text + f"; read on the workers in {time.perf_counter() - t0:.2f} s")
    note(f"dask: {_count(loss.n_shards, 'shard')} on {_count(len(workers), 'worker')} "
         f"({'a local cluster' if args.dask == 'local' else args.dask}); DATA never read here")
    return task, problem


def _sharded_metrics(loss, kind, w):
    """The training metrics of ``_metrics`` that are sums over examples, from the shards'
    O(1) sums (``ShardedLoss.metric_sums``): accuracy (binary), RMSE and MAE (regression).
    The AUC needs every score in one place: not computed here."""
    if kind == "binary":
        m, correct = loss.metric_sums(w, "binary")
        return {"accuracy": correct / m}
    m, squares, absolute = loss.metric_sums(w, "regression")
    return {"RMSE": math.sqrt(squares / m), "MAE": absolute / m}


def _default_parts(path, workers):
    """One byte range per worker; one part for a compressed file (not entered mid-stream)."""
    return 1 if path.suffix.lower() in (".gz", ".bz2", ".xz", ".lzma") else len(workers)


def _test_facts(classes, X, y):
    """Run on a worker, on a block of the --test data: ``(rows, columns, labels not in the
    training classes (at most 10))``; ``classes`` is empty for regression."""
    unknown = np.setdiff1d(np.unique(y), classes)[:10] if len(classes) else np.empty(0)
    return X.shape[0], X.shape[1], [float(v) for v in unknown]


def _test_sums(model, X, y):
    """Run on a worker, on a block of the --test data: the sums of ``_metrics`` (O(1)
    numbers): ``(rows, correct)`` for a classifier, ``(rows, squared errors, absolute
    errors)`` for a regression model, from the model's own ``predict``."""
    predicted = model.predict(X)
    if model.kind == "regression":
        r = predicted - y
        return X.shape[0], float(np.dot(r, r)), float(np.sum(np.abs(r)))
    return X.shape[0], int(np.count_nonzero(predicted == y))


def _test_on_workers(args, task, client, note):
    """``(path, where, n_parts)`` of ``--test`` to be read and scored on the Dask workers
    (``nsopt.distributed.map_svmlight``, one byte range per worker), after a first pass on
    them that checks its labels against training's and counts its features; None when it is
    read here (synthetic data, multilabel data, a name not found)."""
    from . import distributed

    found = None if task.kind == "multilabel" else _file_for_workers(args.test)
    if found is None:
        return None
    path, where, _ = found
    workers = sorted(client.scheduler_info()["workers"])
    parts = _default_parts(path, workers)
    try:
        facts = distributed.map_svmlight(str(path.resolve()),
                                         functools.partial(_test_facts, task.classes),
                                         client=client, n_shards=parts)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--test {args.test}: {exc}") from None
    if sum(rows for rows, _, _ in facts) == 0:
        raise UsageError(f"{where} has no examples")
    unknown = sorted(set().union(*(labels for _, _, labels in facts)))
    if unknown:
        raise UsageError(f"{where} has labels {unknown[:10]} not in the training labels "
                         f"{task.classes.tolist()}")
    width = max(columns for _, columns, _ in facts)
    if width > task.n_features:
        note(f"{where}: features {task.n_features + 1}..{width} do not occur in training "
             "(weight 0)")
    note(f"{where}: read and scored on the workers ({parts} part{'s' * (parts > 1)}); "
         "--test DATA never read here")
    return path, where, parts


def _sharded_test_metrics(client, test, model):
    """``_metrics`` of ``model`` on the --test data read on the workers: the parts' sums
    (:func:`_test_sums`) added in the parts' order; no AUC."""
    from . import distributed

    path, _, parts = test
    sums = distributed.map_svmlight(str(path.resolve()), functools.partial(_test_sums, model),
                                    client=client, n_shards=parts)
    m = sum(part[0] for part in sums)
    if model.kind == "regression":
        squares = absolute = 0.0
        for _, sq, ab in sums:  # the parts' order: deterministic rounding
            squares += sq
            absolute += ab
        return {"RMSE": math.sqrt(squares / m), "MAE": absolute / m}
    return {"accuracy": sum(part[1] for part in sums) / m}


def _sharded(args, problem, note):
    """``problem`` with its examples split over the Dask cluster of ``--dask`` (nsopt.distributed.shard)."""
    from .losses._base import ScalarLoss
    from .losses._vector_base import VectorLoss

    if not isinstance(problem.loss, (ScalarLoss, VectorLoss)):  # pragma: no cover - all CLI losses are
        raise UsageError(f"--dask takes losses of linear scores per example; "
                         f"{type(problem.loss).__name__} is not one: drop --dask")
    try:
        from . import distributed
        distributed._require_dask()
    except ImportError as exc:
        raise UsageError(f"--dask: {exc}") from None
    client = None if args.dask == "local" else args.dask
    try:
        sharded = distributed.shard(problem, n_shards=args.shards, client=client)
    except (TypeError, ValueError, OSError) as exc:
        raise UsageError(f"--dask {args.dask} --shards {args.shards}: {exc}") from None
    loss = sharded.loss
    n_workers = len(loss.client.scheduler_info()["workers"])
    note(f"dask: {_count(loss.n_shards, 'shard')} on {_count(n_workers, 'worker')} "
         f"({'a local cluster' if client is None else client})")
    return sharded


def _count(n: int, noun: str) -> str:
    """``"1 shard"``, ``"2 shards"``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def cmd_solve(args, out):
    if args.model is not None:
        _check_out_path(args.model)
    if args.shards is not None and args.dask is None:
        raise UsageError(f"--shards {args.shards} needs --dask (the row blocks live on a Dask "
                         "cluster)")
    note = _notes(args, out)

    on_workers = None
    if args.dask is not None and (found := _workers_read_training(args)) is not None:
        on_workers = _load_on_workers(args, found, note)
    if on_workers is not None:
        task, problem = on_workers
    else:
        t0 = time.perf_counter()
        task = _prepare(args, args.data)
        note(task.describe() + f" (read in {time.perf_counter() - t0:.2f} s)")
    if on_workers is None:
        problem = _build_problem(args, task)
        if args.dask is not None:
            problem = _sharded(args, problem, note)
    test = test_on_workers = None
    try:
        if args.test is not None and args.dask is not None:
            test_on_workers = _test_on_workers(args, task, problem.loss.client, note)
        if args.test is not None and test_on_workers is None:
            test = _read_test(args, task, note)
        if args.dask is not None and task.kind == "binary" and (
                on_workers is not None or test_on_workers is not None):
            note("dask: no AUC for the data read on the workers (the AUC ranks every score "
                 "together: they would all come to the driver); accuracy only")
        if args.method is None:
            from .minimize import default_method
            args.method = default_method(problem)
        solver = _checked_solver(args, args.method, problem)
        note(f"{solver.name}: {task.loss} + lam * {args.reg}, lam = {args.lam:g}, "
             f"rtol = {args.rtol:g}")
        res = _run_solver(solver, problem, _progress(args, out))
        model = _model_of(task, res, args.lam, args.reg, _solve_options(args, task))
        if on_workers is not None:  # on the shards, before they go
            train = _sharded_metrics(problem.loss, task.kind, np.asarray(res.x).reshape(-1))
        if test_on_workers is not None:
            tested = _sharded_test_metrics(problem.loss.client, test_on_workers, model)
    finally:
        if args.dask is not None:
            problem.loss.close()
    if not args.quiet:
        print(file=out)
    if on_workers is None:
        # the model reads X without its bias column: the training data as it was read
        train = _metrics(model, task.X[:, :task.n_features], task.y)
    if test is not None:
        tested = _metrics(model, *test)
    extra, accuracy, test_accuracy = _metric_lines(train, "train"), train.get("accuracy"), None
    if args.test is not None:
        extra += _metric_lines(tested, "test")
        test_accuracy = tested.get("accuracy")
    print_certificate(res, out, rtol=args.rtol, accuracy=accuracy, test_accuracy=test_accuracy,
                      extra=extra)
    if args.model is not None:
        save_model(args.model, model, res)
        note(f"saved the model ({task.kind}, {task.loss}) and its certificate to {args.model}; "
             f"predict with: nsopt predict {args.model} DATA")
    return _exit_code(res)


def _read_test(args, task, note):
    """``(X, y)`` of ``--test`` read here, its labels checked against training's."""
    Xt, yt, twhere = _load(args.test, multilabel=task.kind == "multilabel",
                           n_labels=len(task.classes) if task.kind == "multilabel" else None,
                           synthetic=(args.n_samples, args.seed))
    if (yt.ndim == 2) != (task.kind == "multilabel"):
        raise UsageError(f"{twhere} is {'' if yt.ndim == 2 else 'not '}multilabel, the "
                         f"training data is {task.kind}")
    _encode(task.kind, yt, task.classes, twhere)  # labels unknown to training: an error
    if Xt.shape[1] > task.n_features:
        note(f"{twhere}: features {task.n_features + 1}..{Xt.shape[1]} do not occur in "
             "training (weight 0)")
    return Xt, yt


def _solve_options(args, task):
    """The options ``nsopt solve`` saves with the model."""
    options = {
        "data": args.data, "loss": task.loss, "reg": args.reg, "lam": args.lam,
        "method": args.method, "rtol": args.rtol, "atol": args.atol, "max_iter": args.max_iter,
        "max_time": args.max_time, "n_features": task.n_features, "bias": task.bias,
        "test": args.test,
    }
    if args.reg == "elastic-net":
        options["l1_ratio"] = args.l1_ratio
    if args.reg == "lp":
        options["p"] = args.p
    return options


# --- compare


def gap_ladder(rtol):
    """The relative gaps ``compare`` reports: 1e-1, 1e-2, ... while above ``rtol``, then
    ``rtol`` itself (``[rtol]`` when ``rtol >= 0.1``)."""
    ladder, k = [], 1
    while 10.0 ** -k > rtol * (1 + 1e-9):
        ladder.append(10.0 ** -k)
        k += 1
    return ladder + [float(rtol)]


def reach(result, level):
    """``(time, nfev)`` of the first history row of ``result`` whose certified relative gap
    ``gap / |fun|`` is ``<= level``, or None when the run never got there."""
    from .result import relative_gap

    h = result.history
    rel = relative_gap(np.asarray(h["gap"], dtype=np.float64), np.asarray(h["fun"], dtype=np.float64))
    hit = np.flatnonzero(rel <= level)
    if hit.size == 0:
        return None
    i = hit[0]
    return float(h["time"][i]), int(h["nfev"][i])


def _parse_methods(text):
    from .solvers import SOLVERS

    methods = [m.strip().lower() for m in text.split(",") if m.strip()]
    if not methods:
        raise UsageError(f"--methods {text!r} names no method; the methods are "
                         f"{', '.join(sorted(SOLVERS))}")
    unknown = [m for m in methods if m not in SOLVERS]
    if unknown:
        raise UsageError(f"--methods: unknown method{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; the methods are "
                         f"{', '.join(sorted(SOLVERS))}")
    repeated = sorted({m for m in methods if methods.count(m) > 1})
    if repeated:
        raise UsageError(f"--methods names {', '.join(repeated)} more than once")
    return methods


def comparison_table(results, ladder):
    """The table ``nsopt compare`` prints: one row per method, one column per relative gap of
    ``ladder`` with ``time/calls`` at which the run first certified it (``-``: never), then the
    final status, relative gap, iterations, calls and time."""
    from .result import relative_gap

    head = (["method"] + [f"{level:.0e}" for level in ladder]
            + ["status", "rel. gap", "iters", "calls", "time (s)"])
    rows = []
    for method, res in results.items():
        cells = []
        for level in ladder:
            hit = reach(res, level)
            cells.append("-" if hit is None else f"{hit[0]:.3g}/{hit[1]}")
        rows.append([method] + cells + [res.status.value, f"{relative_gap(res.gap, res.fun):.2e}",
                                        str(res.nit), str(res.nfev), f"{res.time:.3g}"])
    widths = [max(len(r[j]) for r in [head] + rows) for j in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) if j == 0 else c.rjust(w)  # noqa: E731
                              for j, (c, w) in enumerate(zip(r, widths))).rstrip()
    title = ("time (s) / oracle calls to a certified relative gap (fun - lower bound) / |fun| <= "
             "each column's value ('-': not reached)")
    return "\n".join([title, fmt(head)] + [fmt(r) for r in rows])


def _pyplot_for_files():
    """pyplot drawing to files (the Agg backend unless pyplot is already in use)."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("the convergence plot needs matplotlib: pip install nsopt[plot] "
                         "(or pass --no-plot)") from None
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def cmd_compare(args, out):
    from . import plot
    from .result import Status

    methods = _parse_methods(args.methods)
    plot_path = None if args.no_plot else args.plot
    if plot_path is not None:
        _check_out_path(plot_path, "--plot")
        plt = _pyplot_for_files()
    note = _notes(args, out)
    task = _prepare(args, args.data)
    note(task.describe())
    problem = _build_problem(args, task)
    solvers = {m: _checked_solver(args, m, problem, option="--methods") for m in methods}
    note(f"{task.loss} + lam * {args.reg}, lam = {args.lam:g}, rtol = {args.rtol:g}: "
         f"{', '.join(methods)}")

    # one oracle call first, so that compiling the loss's kernels (numba, on a first use)
    # is not charged to whichever method runs first
    problem.value_and_subgradient(np.zeros(problem.dim))
    results = {}
    for method, solver in solvers.items():
        note(f"\n{method}")
        results[method] = res = _run_solver(solver, problem, _progress(args, out))
        if res.status is Status.INTERRUPTED:
            note(f"{method} interrupted: the table shows the runs so far")
            break
    if not args.quiet:
        print(file=out)
    print(comparison_table(results, gap_ladder(args.rtol)), file=out, flush=True)
    best = max(results.values(), key=lambda r: r.lower_bound)
    lowest = min(results.values(), key=lambda r: r.fun)
    print(f"the optimum lies in [{best.lower_bound:.10g}, {lowest.fun:.10g}] (best lower bound, "
          "best value of all runs)", file=out, flush=True)
    if plot_path is not None:
        fig = plot.convergence(results, x="time")
        fig.savefig(Path(plot_path).expanduser())
        plt.close(fig)
        note(f"convergence plot of {len(results)} runs written to {plot_path}")
    codes = {_exit_code(r) for r in results.values()}
    return next((c for c in (EXIT_INTERRUPTED, EXIT_NUMERICAL) if c in codes), EXIT_OK)


# --- predict


def _format_labels(values):
    """Numbers as nsopt.io writes labels: the shortest repr, integral values without ``.0``."""
    return [s[:-2] if s.endswith(".0") else s
            for s in map(repr, np.asarray(values, dtype=np.float64).tolist())]


def cmd_predict(args, out):
    model = load_model(args.model_file)
    if args.output is not None and args.output != "-":
        _check_out_path(args.output, "--output")
    multilabel = model.kind == "multilabel"
    X, y, where = _load(args.data, multilabel=multilabel,
                        n_labels=len(model.classes) if multilabel else None,
                        synthetic=(args.n_samples, args.seed))
    err = sys.stderr
    print(f"{args.model_file}: {model.kind} model, loss {model.loss}, {model.n_features} features"
          + (f", bias {model.bias:g}" if model.bias > 0 else "")
          + (f", {len(model.classes)} {'labels' if multilabel else 'classes'}" if len(model.classes) else "")
          + f"; {where}: {X.shape[0]} examples", file=err)
    if multilabel and y.ndim == 2 and y.shape[1] > len(model.classes):
        raise UsageError(f"{where} has labels up to {y.shape[1] - 1}, the model only "
                         f"{len(model.classes)} (0..{len(model.classes) - 1})")
    if y.ndim == 2 and not multilabel:
        raise UsageError(f"{where} is multilabel, the model {args.model_file!r} is {model.kind}")
    if X.shape[1] > model.n_features:
        ignored = int(X[:, model.n_features:].nnz)
        print(f"{where} has {X.shape[1]} features, the model {model.n_features}: features "
              f"{model.n_features + 1}..{X.shape[1]} are ignored, as liblinear does "
              f"({ignored} nonzero values)", file=err)

    scores = model.decision_function(X)
    predicted = model.predict(X, scores=scores)
    metrics = {}
    if model.kind in ("binary", "multiclass"):
        known = np.isin(y, model.classes)
        if not known.any():
            print(f"no label of {where} is a class of the model ({_show_labels(model.classes)}): "
                  "taken as unlabelled, no accuracy", file=err)
        else:
            if not known.all():
                print(f"{int((~known).sum())} examples of {where} have labels the model does not "
                      "know: they count as errors", file=err)
            metrics = _metrics(model, X, y, scores=scores)
    else:
        metrics = _metrics(model, X, y, scores=scores)
    for name, value in metrics.items():
        print(f"{name:<14} {_metric_text(name, value)}", file=out, flush=True)

    if args.output is not None:
        if multilabel:
            lines = [",".join(str(j) for j in np.flatnonzero(row)) for row in predicted]
        else:
            lines = _format_labels(predicted)
        text = "".join(line + "\n" for line in lines)
        if args.output == "-":
            out.write(text)
            out.flush()
        else:
            Path(args.output).expanduser().write_text(text)
            print(f"{len(lines)} predictions written to {args.output}", file=err)
    return EXIT_OK


COMMANDS = {"demo": cmd_demo, "solve": cmd_solve, "compare": cmd_compare, "predict": cmd_predict}


def main(argv=None) -> int:
    """Run the ``nsopt`` command line with ``argv`` (default ``sys.argv[1:]``); return the
    exit code."""
    out, err = sys.stdout, sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    command = COMMANDS[args.command]
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
