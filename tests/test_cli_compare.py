"""``nsopt compare`` (nsopt/cli.py): the gap-ladder table against each run's history, the
convergence plot, the built-in synthetic data and the errors, run in-process through ``main``."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nsopt
import nsopt.plot
from nsopt.cli import gap_ladder, main, reach

pytest.importorskip("matplotlib")

METHODS = ["bmrm", "proximal-bundle", "sublbfgs"]


@pytest.fixture
def data(tmp_path):
    X, y = nsopt.datasets.make_sparse_binary(300, 30, random_state=0)
    path = tmp_path / "train.svm"
    nsopt.io.dump_svmlight(X, y, path)
    return str(path)


@pytest.fixture
def captured(monkeypatch):
    """What compare passes to nsopt.plot.convergence, and the figure it got back."""
    seen = {}
    original = nsopt.plot.convergence

    def spy(results, **kwargs):
        seen["results"], seen["kwargs"] = dict(results), kwargs
        seen["figure"] = original(results, **kwargs)
        return seen["figure"]

    monkeypatch.setattr(nsopt.plot, "convergence", spy)
    return seen


def table_rows(text, methods):
    """header cells and {method: cells} of the printed table."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:1] == ["method"])
    rows = {}
    for line in lines[head + 1:]:
        cells = line.split()
        if cells and cells[0] in methods:
            rows[cells[0]] = cells[1:]
    return lines[head].split()[1:], rows


def first_reached(history, level):
    """By hand: (time, nfev) of the first row with gap <= level * |fun|."""
    for t, n, gap, fun in zip(history["time"], history["nfev"], history["gap"], history["fun"]):
        if gap <= level * abs(fun):
            return t, n
    return None


def test_compare_table_matches_each_history_and_plot(data, tmp_path, capsys, captured):
    plot = tmp_path / "runs.png"
    code = main(["compare", data, "--methods", ",".join(METHODS), "--lam", "1e-2",
                 "--rtol", "1e-3", "--plot", str(plot), "--quiet"])
    text = capsys.readouterr().out
    assert code == 0
    results = captured["results"]
    assert list(results) == METHODS and captured["kwargs"] == {"x": "time"}
    head, rows = table_rows(text, METHODS)
    ladder = [1e-1, 1e-2, 1e-3]
    assert [float(h) for h in head[:3]] == ladder and head[3] == "status"
    assert set(rows) == set(METHODS)
    for method, res in results.items():
        cells = rows[method]
        for level, cell in zip(ladder, cells[:3]):
            hit = first_reached(res.history, level)
            if hit is None:
                assert cell == "-"
            else:
                t, n = cell.split("/")
                assert int(n) == hit[1] and float(t) == pytest.approx(hit[0], rel=5e-3, abs=1e-3)
        assert cells[3] == res.status.value == "converged"  # every method certifies rtol here
        assert cells[3:] == [res.status.value, f"{res.gap / abs(res.fun):.2e}", str(res.nit),
                             str(res.nfev), f"{res.time:.3g}"]
        calls = [int(c.split("/")[1]) for c in cells[:3]]
        assert calls == sorted(calls)  # a smaller gap never comes earlier
    # the bracket line: the best lower bound and the best value of all runs
    best = max(r.lower_bound for r in results.values())
    lowest = min(r.fun for r in results.values())
    assert f"[{best:.10g}, {lowest:.10g}]" in text and best <= lowest

    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    gap_ax = captured["figure"].axes[0]
    lines = gap_ax.get_lines()
    assert [line.get_label() for line in lines] == METHODS
    for line, res in zip(lines, results.values()):
        assert np.array_equal(line.get_xdata(), res.history["time"])
    assert gap_ax.get_yscale() == "log"


def test_compare_synthetic_data_without_plot(tmp_path, monkeypatch, capsys, captured):
    """DATA 'synthetic' needs no file; --max-iter leaves rungs unreached ('-'); --no-plot
    writes nothing."""
    monkeypatch.chdir(tmp_path)
    code = main(["compare", "synthetic", "--n-samples", "300", "--methods", "bmrm,sublbfgs",
                 "--max-iter", "4", "--rtol", "1e-4", "--no-plot", "--no-live"])
    text = capsys.readouterr().out
    assert code == 0
    assert "synthetic a9a-shaped data (seed 0): 300 examples x 123 features" in text
    assert not (tmp_path / "compare.png").exists() and "results" not in captured
    head, rows = table_rows(text, ["bmrm", "sublbfgs"])
    assert [float(h) for h in head[:4]] == [1e-1, 1e-2, 1e-3, 1e-4]
    for cells in rows.values():
        assert cells[4] == "max_iter" and cells[3] == "-"
        assert int(cells[6]) == 4  # iterations


def test_compare_default_plot_name_and_multiclass(tmp_path, monkeypatch, capsys, captured):
    monkeypatch.chdir(tmp_path)
    X, y = nsopt.datasets.make_multiclass(90, 4, n_classes=3, random_state=0)
    nsopt.io.dump_svmlight(X, y, tmp_path / "mc.svm")
    assert main(["compare", "mc.svm", "--methods", "bmrm,kbundle", "--lam", "0.1",
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert (tmp_path / "compare.png").read_bytes()[:4] == b"\x89PNG"
    assert len(captured["figure"].axes[0].get_lines()) == 2
    res = captured["results"]["kbundle"]
    assert res.x.size == 4 * 3  # the multiclass hinge's d x k weights
    assert table_rows(text, ["bmrm", "kbundle"])[1]["kbundle"][3] == res.status.value


@pytest.mark.parametrize("methods, fragment", [
    ("bmrm,newton", "unknown method 'newton'; the methods are bmrm, dcd, dcd-probe, excessive-gap"),
    ("bmrm,,", None),  # empty names are skipped: this one runs
    (",", "names no method"),
    ("bmrm,bmrm", "names bmrm more than once"),
    ("level-bundle", "--methods level-bundle"),
])
def test_compare_bad_methods(data, tmp_path, capsys, methods, fragment):
    code = main(["compare", data, "--methods", methods, "--no-plot", "--quiet", "--max-iter", "2"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if fragment is None:
        assert code == 0 and "bmrm" in captured.out
    else:
        assert code == 2 and fragment in captured.err


def test_compare_bad_plot_path(data, capsys):
    code = main(["compare", data, "--plot", "/no/such/dir/c.png"])
    assert code == 2 and "--plot" in capsys.readouterr().err


@given(st.floats(1e-12, 0.9))
def test_gap_ladder(rtol):
    ladder = gap_ladder(rtol)
    assert ladder[-1] == rtol
    assert all(a > b for a, b in zip(ladder, ladder[1:]))
    powers = ladder[:-1]
    assert powers == [10.0 ** -k for k in range(1, len(powers) + 1)]
    assert all(p > rtol for p in powers)
    assert len(powers) == 0 or powers[-1] / 10 <= rtol * (1 + 1e-9)  # no power of ten skipped


def test_reach_is_the_first_row_at_or_below_the_level():
    X, y = nsopt.datasets.make_sparse_binary(200, 20, random_state=1)
    res = nsopt.minimize(nsopt.RegularizedRisk(nsopt.losses.Hinge(X, y), lam=1e-2), rtol=1e-4)
    h = res.history
    rel = h["gap"] / np.abs(h["fun"])
    for level in (0.5, 1e-2, 1e-4, 1e-9):
        hit = reach(res, level)
        rows = np.flatnonzero(rel <= level)
        if rows.size == 0:
            assert hit is None
        else:
            i = rows[0]
            assert hit == (h["time"][i], h["nfev"][i])
            assert i == 0 or rel[i - 1] > level
    assert reach(res, 1e-4) is not None and math.isfinite(reach(res, 1e-4)[0])


def test_compare_ctrl_c_stops_after_the_interrupted_run(data, tmp_path, capsys, monkeypatch,
                                                        captured):
    """KeyboardInterrupt in the 6th oracle call (inside bmrm): bmrm's best point is kept with
    status interrupted, the other methods are skipped, the table and the plot show bmrm, 130."""
    calls = {"n": 0}
    original = nsopt.losses.Hinge._value_and_subgradient

    def interrupting(self, w):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return original(self, w)

    monkeypatch.setattr(nsopt.losses.Hinge, "_value_and_subgradient", interrupting)
    plot = tmp_path / "c.png"
    code = main(["compare", data, "--methods", "bmrm,sublbfgs", "--lam", "1e-4", "--no-live",
                 "--plot", str(plot)])
    text = capsys.readouterr().out
    assert code == 130
    _, rows = table_rows(text, ["bmrm", "sublbfgs"])
    assert list(rows) == ["bmrm"] and rows["bmrm"][3] == "interrupted"
    assert list(captured["results"]) == ["bmrm"] and plot.is_file()
    assert "bmrm interrupted" in text
