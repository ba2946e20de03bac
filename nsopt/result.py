"""The one result type of every solver, its status vocabulary and the per-step history;
how a result shows itself (text, HTML), and how it is saved and loaded."""
from __future__ import annotations

import enum
import html
import json
import math
import numbers
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .certificate import Certificate

__all__ = ["Status", "Result", "History", "load_result"]


class Status(enum.Enum):
    """Why a solver stopped, and what that proves. Messages live in one table,
    ``Status.message``; ``docs/solvers.md`` has the table of what each status proves and which
    solvers can return it.

    One rule decides success: ``success`` is True exactly when the status is ``converged``, and
    ``converged`` is returned exactly when a proven gap ``fun - lower_bound <= max(atol, rtol *
    |fun|)`` holds (the tolerance is never less than the rounding of the values met, 1e-12 of
    the largest ``|f|``, so that ``f* = 0`` can stop). Every other status leaves the certificate valid (``lower_bound <= J*``) but
    proves no more than its gap.
    """

    CONVERGED = "converged"
    STATIONARY = "stationary"
    MAX_ITER = "max_iter"
    MAX_TIME = "max_time"
    CALLBACK = "callback"
    INTERRUPTED = "interrupted"
    NUMERICAL_ERROR = "numerical_error"
    NONCONVEX = "nonconvex"
    UNBOUNDED = "unbounded"
    #: the name of ``STATIONARY`` before nsopt 0.2
    STALLED = "stationary"

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    @property
    def success(self) -> bool:
        return self is Status.CONVERGED


_MESSAGES = {
    Status.CONVERGED: ("Converged: the proven gap fun - lower_bound is <= max(atol, rtol * |fun|) "
                       "(or zero up to the rounding of the values met, 1e-12 of the largest |f|)."),
    Status.STATIONARY: (
        "Approximately stationary, not proven optimal: the solver cannot make progress and its "
        "aggregate subgradient g (norm Result.subgradient_norm) and linearization error eps "
        "(Result.linearization_error) prove f(x) - f(y) <= eps + ||g|| ||x - y|| for every y. "
        "A bound on ||x - x*|| turns this into a gap (pass bounds or radius where the method "
        "supports them); the reported lower_bound is still valid."),
    Status.MAX_ITER: "Stopped at the iteration limit (max_iter) before the gap reached the tolerance.",
    Status.MAX_TIME: "Stopped at the time limit (max_time) before the gap reached the tolerance.",
    Status.CALLBACK: "The callback asked to stop (returned True or raised StopIteration).",
    Status.INTERRUPTED: "Interrupted (KeyboardInterrupt); the best point so far is returned.",
    Status.NUMERICAL_ERROR: ("The oracle returned NaN or inf (or a non-finite subgradient); "
                             "the best finite point is returned, see Result.info['numerical_error']."),
    Status.NONCONVEX: ("The oracle contradicts convexity: a value below one of its own cutting "
                       "planes or lower bounds (the function is not convex, its subgradients are "
                       "wrong, or its stated lower_bound is wrong); the two points and values "
                       "that prove it are in Result.info['nonconvex']. No bound is claimed."),
    Status.UNBOUNDED: ("The objective kept decreasing along a ray (by more than max(1, |f|) with "
                       "its slope still negative at step 1e20): the problem is probably "
                       "unbounded below. This is evidence, not a proof."),
}


class History:
    """One row per step: iteration, time, fun, lower_bound, gap, nfev plus solver fields.

    Stored as growing Python lists while running; :meth:`as_arrays` gives a dict of numpy
    arrays, which is what ``Result.history`` holds.
    """

    base_columns = ("iteration", "time", "fun", "lower_bound", "gap", "nfev")

    def __init__(self, extra: tuple[str, ...] = ()):
        self.columns = self.base_columns + tuple(extra)
        self._rows: dict[str, list] = {c: [] for c in self.columns}

    def append(self, **row) -> None:
        for c in self.columns:
            self._rows[c].append(row.get(c, math.nan))

    def replace_last(self, **row) -> None:
        """Overwrite the last row (a step that ended the run changed its bound or value)."""
        for c in self.columns:
            self._rows[c][-1] = row.get(c, math.nan)

    def __len__(self) -> int:
        return len(self._rows["iteration"])

    def as_arrays(self) -> "HistoryColumns":
        return HistoryColumns({c: np.asarray(v) for c, v in self._rows.items()})


class HistoryColumns(dict):
    """``Result.history``: a dict of equal-length columns (``history["gap"]`` is an array),
    with :meth:`table` (a numpy structured array) and :meth:`to_pandas`."""

    def table(self) -> np.ndarray:
        """The rows as a numpy structured array, one record per iteration."""
        columns = {c: np.asarray(v) for c, v in self.items()}
        n = len(next(iter(columns.values()))) if columns else 0
        table = np.empty(n, dtype=[(c, v.dtype) for c, v in columns.items()])
        for c, v in columns.items():
            table[c] = v
        return table

    def to_pandas(self):
        """The rows as a :class:`pandas.DataFrame` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("history.to_pandas needs pandas: pip install pandas "
                              "(history.table() gives a numpy structured array without it)") from exc
        return pd.DataFrame({c: np.asarray(v) for c, v in self.items()})


@dataclass(frozen=True)
class Result:
    """What every solver returns.

    Attributes
    ----------
    x : ndarray
        The best point seen (smallest ``fun``), never a worse last iterate.
    fun : float
        The objective at ``x``.
    lower_bound : float
        A proven lower bound on the optimal value (``-inf`` if none is known).
    gap : float
        ``fun - lower_bound``: ``x`` is ``gap``-optimal.
    nit, nfev : int
        Iterations and oracle calls.
    status : Status
    success : bool
    message : str
    time : float
        Wall-clock seconds of the run, less numba's compilation of kernels (in
        ``info["compile_time"]``: a cost of the process's first runs, not of the method).
    history : HistoryColumns (a dict of ndarray)
        One row per iteration (``iteration, time, fun, lower_bound, gap, nfev`` and the
        solver's own columns); ``history.table()`` and ``history.to_pandas()``.
    certificate : Certificate
        The evidence behind ``lower_bound``; ``certificate.check(problem)`` recomputes it.
    info : dict
        Solver-specific diagnostics, documented by each solver.
    subgradient_norm, linearization_error : float
        For status ``stationary`` (NaN otherwise): the norm of an aggregate subgradient ``g`` and
        its linearization error ``eps >= 0`` at ``x``, so ``g`` is an ``eps``-subgradient:
        ``f(y) >= f(x) + <g, y - x> - eps`` for every ``y``.
    """

    x: np.ndarray
    fun: float
    lower_bound: float
    gap: float
    nit: int
    nfev: int
    status: Status
    success: bool
    message: str
    time: float
    history: dict
    certificate: Certificate
    method: str = ""
    info: dict = field(default_factory=dict)
    subgradient_norm: float = math.nan
    linearization_error: float = math.nan

    def __repr__(self) -> str:
        return (
            f"Result(method={self.method!r}, status={self.status.value}, fun={self.fun:.10g}, "
            f"lower_bound={self.lower_bound:.10g}, gap={self.gap:.3g}, nit={self.nit}, "
            f"nfev={self.nfev}, time={self.time:.3g}s)"
        )

    # -- display ------------------------------------------------------------------------------
    @property
    def relative_gap(self) -> float:
        """``gap / |fun|``, the quantity ``rtol`` is compared with (0 when the gap is 0, ``inf``
        when ``fun`` is 0 and the gap is not)."""
        return float(relative_gap(self.gap, self.fun))

    def summary(self, rtol: float | None = None, extra=()) -> str:
        """The certificate block: what was found, what is proven, how far apart.

        ``str(result)`` is ``result.summary()``; the command line prints the same block.

        Parameters
        ----------
        rtol : float, optional
            The tolerance the run was given, shown beside the relative gap.
        extra : sequence of (name, value) pairs of str
            More lines, printed after the run's own (the command line adds its accuracies).

        Returns
        -------
        str

        Examples
        --------
        >>> import nsopt
        >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
        >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
        >>> res = nsopt.minimize(J, method="bmrm", rtol=1e-4)
        >>> print(res.summary().splitlines()[5])           # doctest: +ELLIPSIS
          status                 converged   Converged: the proven gap ...
        """
        lines = ["certificate"]
        for name, value, note in self._rows(rtol) + [(n, v, "") for n, v in extra]:
            lines.append(f"  {name:<16}{value:>16}   {note}".rstrip())
        lines.append(self._conclusion())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _where(self) -> str:
        """The region the bound holds over, as the end of a sentence ("" for everywhere)."""
        evidence = getattr(self.certificate, "evidence", None)
        if getattr(evidence, "lb", None) is not None:
            return " in the box lb <= v <= ub (a constraint)"
        if getattr(evidence, "radius", None) is not None:
            return (f" with ||v - centre|| <= {evidence.radius:.4g} (a bound on J* if a "
                    "minimiser lies in that ball)")
        return ""

    def _rows(self, rtol=None):
        """``(name, value, note)`` of every line of the certificate block, values as text."""
        finite = math.isfinite(self.lower_bound)
        source = getattr(self.certificate, "source", "none")
        proven = (f"proven ({source}): J(v) >= this for every v{self._where()}" if finite
                  else "no lower bound is known")
        return [
            ("fun", _fmt(self.fun), "J(x) at the returned x"),
            ("lower bound", _fmt(self.lower_bound), proven),
            ("gap", f"{self.gap:.4g}", "fun - lower bound"),
            ("relative gap", f"{self.relative_gap:.4g}",
             "gap / |fun|" + ("" if rtol is None else f" (rtol {rtol:g})")),
            ("status", self.status.value, self.status.message),
            ("iterations", str(self.nit), f"({self.nfev} oracle calls, method {self.method})"),
            ("time", f"{self.time:.3f}s", self._compile_note()),
        ]

    def _compile_note(self) -> str:
        seconds = self.info.get("compile_time", 0.0) if isinstance(self.info, dict) else 0.0
        return f"(and {seconds:.2f} s compiling kernels)" if seconds >= 0.005 else ""

    def _conclusion(self) -> str:
        if math.isfinite(self.lower_bound):
            return (f"the optimum lies in [lower bound, fun] = [{_fmt(self.lower_bound)}, "
                    f"{_fmt(self.fun)}]: no x does better than the returned one by more than "
                    f"{self.gap:.3g}.")
        return "no lower bound is known: the optimum is at most fun, how far below is unknown."

    def _repr_html_(self) -> str:
        """The certificate block as a small HTML table (shown by Jupyter)."""
        e = html.escape
        source = getattr(self.certificate, "source", "none")
        rows = [
            ("bracket", f"[{_fmt(self.lower_bound)}, {_fmt(self.fun)}]",
             "lower_bound <= J* <= fun" if math.isfinite(self.lower_bound)
             else "no lower bound is known"),
            ("gap", f"{self.gap:.4g}", "fun - lower_bound"),
            ("relative gap", f"{self.relative_gap:.4g}", "gap / |fun|"),
            ("status", self.status.value, self.status.message),
            ("time", f"{self.time:.3f} s", ("wall clock " + self._compile_note()).strip()),
            ("iterations", str(self.nit), ""),
            ("oracle calls", str(self.nfev), ""),
            ("method", self.method, ""),
            ("certificate", source, "where the lower bound comes from"),
        ]
        body = "".join(
            f"<tr><th style=\"text-align:left\">{e(name)}</th>"
            f"<td style=\"text-align:right\"><code>{e(value)}</code></td>"
            f"<td style=\"text-align:left\">{e(note)}</td></tr>"
            for name, value, note in rows)
        return (f"<table class=\"nsopt-result\"><caption>nsopt Result: {e(self.status.value)}"
                f"</caption><tbody>{body}</tbody></table>")

    # -- history ------------------------------------------------------------------------------
    def history_table(self) -> np.ndarray:
        """The history as a numpy structured array, one record per row of ``history``.

        Examples
        --------
        >>> import nsopt
        >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
        >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
        >>> table = nsopt.minimize(J, method="bmrm").history_table()
        >>> table.dtype.names[:6]
        ('iteration', 'time', 'fun', 'lower_bound', 'gap', 'nfev')
        """
        return HistoryColumns(self.history).table()

    def to_pandas(self):
        """The history as a :class:`pandas.DataFrame` (one row per iteration).

        Raises
        ------
        ImportError
            When pandas is not installed.
        """
        return HistoryColumns(self.history).to_pandas()

    def plot(self, **kwargs):
        """Plot the run's convergence: :func:`nsopt.plot.convergence` of this result.

        Returns the matplotlib Figure; needs matplotlib (``pip install nsopt[plot]``).
        """
        from .plot import convergence

        return convergence(self, **kwargs)

    # -- saving -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The result as plain Python values, ready for :func:`json.dumps`.

        Arrays become lists (``x``; ``history``, a dict of lists), ``status`` its value,
        ``certificate`` a summary (``source, lower, upper, gap, b_bar, a_bar, fingerprint`` and
        ``evidence``, the evidence's kind: the evidence itself is not included). ``info`` keeps
        numbers, strings, booleans, None, and lists and dicts of them; entries holding anything
        else (numpy arrays such as BMRM's ``planes``, objects) are left out and named in
        ``info_dropped`` (nested keys joined by dots). Non-finite floats stay floats: ``json``
        writes them as ``NaN``, ``Infinity`` and ``-Infinity``.

        Examples
        --------
        >>> import json, nsopt
        >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
        >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
        >>> d = nsopt.minimize(J, method="bmrm").to_dict()
        >>> d["status"], d["certificate"]["source"], d["info_dropped"]
        ('converged', 'bundle-dual', ['planes'])
        >>> text = json.dumps(d)
        """
        out = self._scalars()
        out["x"] = np.asarray(self.x).tolist()
        out["history"] = {c: np.asarray(v).tolist() for c, v in self.history.items()}
        a_bar = getattr(self.certificate, "a_bar", None)
        out["certificate"]["a_bar"] = None if a_bar is None else np.asarray(a_bar).tolist()
        return out

    def _scalars(self) -> dict:
        """Everything but the arrays, as plain Python values."""
        dropped: list[str] = []
        info = _json_safe(self.info, "", dropped)
        cert = self.certificate
        evidence = getattr(cert, "evidence", None)
        b_bar = getattr(cert, "b_bar", None)
        return {
            "method": str(self.method), "status": self.status.value, "success": bool(self.success),
            "message": str(self.message), "fun": float(self.fun),
            "lower_bound": float(self.lower_bound), "gap": float(self.gap), "nit": int(self.nit),
            "nfev": int(self.nfev), "time": float(self.time),
            "subgradient_norm": float(self.subgradient_norm),
            "linearization_error": float(self.linearization_error),
            "certificate": {
                "source": str(getattr(cert, "source", "none")),
                "lower": float(getattr(cert, "lower", self.lower_bound)),
                "upper": float(getattr(cert, "upper", self.fun)),
                "gap": float(getattr(cert, "gap", self.gap)),
                "b_bar": None if b_bar is None else float(b_bar),
                "fingerprint": getattr(cert, "fingerprint", None),
                "evidence": None if evidence is None else str(getattr(evidence, "kind", "")),
            },
            "info": info, "info_dropped": dropped,
        }

    def save(self, path) -> None:
        """Write the result to an ``.npz`` file at exactly ``path`` (no suffix is added).

        Arrays are stored as arrays (``x``, each ``history`` column, the certificate's
        ``a_bar``) and everything else as one JSON string (:meth:`to_dict` without the arrays),
        all readable with ``numpy.load(path, allow_pickle=False)``; nothing is pickled.
        :func:`nsopt.load_result` reads it back.

        What is not saved: ``info`` entries that are not plain data (see :meth:`to_dict`), and
        the certificate's evidence (the dual or query points), so a loaded result's
        ``certificate.check(problem)`` raises :class:`~nsopt.CertificateError` (a bound
        claimed without evidence) unless there is no bound (``lower_bound = -inf``).

        Examples
        --------
        >>> import nsopt, tempfile, os
        >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
        >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
        >>> res = nsopt.minimize(J, method="bmrm")
        >>> path = os.path.join(tempfile.mkdtemp(), "run.npz")
        >>> res.save(path)
        >>> nsopt.load_result(path).gap == res.gap
        True
        """
        meta = self._scalars()
        arrays = {"x": np.asarray(self.x, dtype=np.float64)}
        columns = []
        for c, v in self.history.items():
            v = np.asarray(v)
            if v.dtype.kind not in "biuf":
                try:
                    v = v.astype(np.float64)
                except (TypeError, ValueError):
                    meta["info_dropped"].append(f"history.{c}")
                    continue
            arrays[f"history.{c}"] = v
            columns.append(c)
        meta["history_columns"] = columns
        a_bar = getattr(self.certificate, "a_bar", None)
        if a_bar is not None:
            arrays["certificate.a_bar"] = np.asarray(a_bar, dtype=np.float64)
        meta["format"], meta["version"] = _FORMAT, _VERSION
        with open(Path(path).expanduser(), "wb") as f:
            np.savez(f, **arrays, **{_META: np.array(json.dumps(meta))})


# ------------------------------------------------------------------------------------------
# helpers: display, JSON, loading
_FORMAT, _VERSION, _META = "nsopt.Result", 1, "nsopt_result"


def _fmt(v) -> str:
    return f"{v:.10g}"


def relative_gap(gap, fun):
    """``gap / |fun|`` elementwise: 0 where the gap is 0, ``inf`` where only ``fun`` is 0."""
    gap = np.asarray(gap, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = gap / np.abs(np.asarray(fun, dtype=np.float64))
    return np.where(gap == 0, 0.0, rel)


def _json_safe(value, key, dropped):
    """``value`` as JSON data, or ``_DROP`` (with ``key`` added to ``dropped``)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, enum.Enum):
        return _json_safe(value.value, key, dropped)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                dropped.append(f"{key}{k!r}")
                continue
            v = _json_safe(v, f"{key}{k}.", dropped)
            if v is not _DROP:
                out[k] = v
        return out
    if isinstance(value, (list, tuple)):
        trial: list[str] = []
        items = [_json_safe(v, key, trial) for v in value]
        if not trial and all(v is not _DROP for v in items):
            return items
    dropped.append(key.rstrip("."))
    return _DROP


_DROP = object()


def load_result(path) -> Result:
    """Read a result written by :meth:`Result.save`.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Result
        With ``x, fun, lower_bound, gap, nit, nfev, status, success, message, time, history,
        method, info, subgradient_norm, linearization_error`` as saved (``info`` without the
        entries :meth:`Result.to_dict` leaves out). Its ``certificate`` is a
        :class:`~nsopt.Certificate` with ``source, lower, upper, gap, a_bar, b_bar,
        fingerprint`` and ``x`` but no evidence: ``certificate.check(problem)`` raises
        :class:`~nsopt.CertificateError` for any finite bound. Re-solve to re-check.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When ``path`` is not a result saved by :meth:`Result.save` (the message names it).

    Examples
    --------
    >>> import nsopt, tempfile, os
    >>> X, y = nsopt.datasets.make_sparse_binary(300, 20, random_state=0)
    >>> J = nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), nsopt.regularizers.L2(), lam=1e-2)
    >>> path = os.path.join(tempfile.mkdtemp(), "run.npz")
    >>> nsopt.minimize(J, method="sublbfgs").save(path)
    >>> res = nsopt.load_result(path)
    >>> res.method, res.status
    ('sublbfgs', <Status.CONVERGED: 'converged'>)
    """
    path = Path(os.fspath(path)).expanduser()
    not_ours = f"{str(path)!r} is not an nsopt result file (one written by Result.save)"
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):  # a single .npy array
            raise ValueError(not_ours)
        with data:
            if _META not in data.files:
                raise ValueError(not_ours)
            meta = json.loads(str(data[_META]))
            if meta.get("format") != _FORMAT:
                raise ValueError(not_ours)
            if meta.get("version", 0) > _VERSION:
                raise ValueError(f"{str(path)!r} was written by a newer nsopt (result format "
                                 f"version {meta['version']}; this one reads {_VERSION})")
            x = np.array(data["x"])
            history = HistoryColumns({c: np.array(data[f"history.{c}"])
                                      for c in meta["history_columns"]})
            a_bar = np.array(data["certificate.a_bar"]) if "certificate.a_bar" in data.files else None
    except ValueError as exc:
        if str(path) in str(exc):
            raise
        raise ValueError(f"{not_ours}: {exc}") from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise ValueError(f"{not_ours}: {type(exc).__name__}: {exc}") from None
    try:
        cert = meta["certificate"]
        certificate = Certificate(
            upper=float(cert["upper"]), lower=float(cert["lower"]), gap=float(cert["gap"]),
            source=str(cert["source"]), a_bar=a_bar, b_bar=cert["b_bar"], evidence=None, x=x,
            fingerprint=cert["fingerprint"])
        return Result(
            x=x, fun=float(meta["fun"]), lower_bound=float(meta["lower_bound"]),
            gap=float(meta["gap"]), nit=int(meta["nit"]), nfev=int(meta["nfev"]),
            status=Status(meta["status"]), success=bool(meta["success"]),
            message=str(meta["message"]), time=float(meta["time"]), history=history,
            certificate=certificate, method=str(meta["method"]), info=dict(meta["info"]),
            subgradient_norm=float(meta["subgradient_norm"]),
            linearization_error=float(meta["linearization_error"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{not_ours}: its fields are incomplete or wrong "
                         f"({type(exc).__name__}: {exc})") from None
