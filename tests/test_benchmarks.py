"""The benchmark scripts still run (slow: real data; tiny settings, nothing timed or compared).

They are measurement tools, not tests; this only keeps them from rotting as the API moves.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import nsopt

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(autouse=True)
def _bench_path(monkeypatch):
    if nsopt.io.find_data_dir() is None:
        pytest.skip("no data directory (../shared/data or NSOPT_DATA)")
    pytest.importorskip("sklearn")
    monkeypatch.syspath_prepend(str(BENCH))
    yield
    for name in ("solvers", "excessive_gap", "any_oracle", "_common"):
        sys.modules.pop(name, None)


def test_solvers_script_prints_a_row_per_problem(capsys):
    import solvers

    solvers.main(["--data", "mushrooms", "--lams", "1e-2", "--max-time", "1", "--no-cvxpy",
                  "--problems", "hinge-l2", "logistic-l1", "--methods", "bmrm", "sublbfgs", "owlqn"])
    out = capsys.readouterr().out
    assert "mushrooms: one raw data pass" in out
    rows = [line for line in out.splitlines() if line.split()[:1] == ["mushrooms"]]
    assert [r.split()[1] for r in rows] == ["hinge-l2", "logistic-l1"]
    assert "n/a" in rows[0]  # the OWL-QN column applies to L1 only


def test_excessive_gap_script_prints_every_method(capsys):
    import excessive_gap

    excessive_gap.main(["--data", "mushrooms", "--max-time", "0.5"])
    out = capsys.readouterr().out
    assert all(m in out for m in excessive_gap.METHODS)


def test_any_oracle_script_prints_a_row_per_function(capsys):
    import any_oracle

    any_oracle.main(["--size", "tiny", "--max-time", "0.3", "--no-scs"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    rows = [line.split()[0].rstrip(":") for line in lines if line[:1].isalpha()]
    assert [r for r in rows if r in any_oracle.FUNCTIONS] == any_oracle.FUNCTIONS
    assert "VIOLATION" not in out
    # a line per method under each function run (timings or an "n/a (...)" reason)
    n_run = sum(line.split()[:1] == ["method"] for line in lines)
    assert n_run >= len(any_oracle.FUNCTIONS) - 1  # a9a may be absent from the data folder
    for method in any_oracle.METHODS:
        assert sum(line.split()[:1] == [method] for line in lines) == n_run
    # the row with a halfspace A_ub x <= b_ub: run by the methods that take rows (and their
    # points checked against it: no VIOLATION above), refused by the others
    half = out[out.index("\nl1-fit-halfspace"):].split("\n\n")[0]
    assert "sum(x) <=" in half and half.count("A_ub]") == 2
    refused = [line.split()[0] for line in half.splitlines()
               if "n/a (refuses radius, A_ub, b_ub" in line]
    assert refused == ["subbfgs", "sublbfgs"]


def test_peers_script_prints_every_cell_and_its_claims_hold(capsys):
    """benchmarks/peers.py (issue 11): a row per solver, level and cell; every certified nsopt
    row proves its level, every other says 'not certified'; the bracket of J* holds both ways
    (no nsopt lower bound above it, no peer objective below it)."""
    pytest.importorskip("cyanure")
    pytest.importorskip("glum")
    import peers

    try:
        problems, levels = ["hinge-l2", "logistic-l1"], [1e-3, 1e-4]
        rows, summary = peers.main(
            ["--sets", "mushrooms", "--lams", "1e-2", "--problems", *problems,
             "--methods", "default", "ls-bmrm", "--max-time", "1", "--ref-time", "2", "--no-cvxpy"])
    finally:
        sys.modules.pop("peers", None)
    out = capsys.readouterr().out
    assert "VIOLATION" not in out
    assert "mushrooms: 8124 x 112, one raw pass" in out
    for p in problems:
        assert f"-- {p} mushrooms lam 0.01: J* in [" in out
        for level in levels:
            cell = [r for r in rows if r["problem"] == p and r["level"] == level]
            solvers = [r["solver"] for r in cell]
            assert solvers[0].startswith("default=") and "ls-bmrm" in solvers
            assert set(peers.PROBLEMS[p][2]) <= set(solvers)
            assert [(s["problem"], s["level"]) for s in summary].count((p, level)) == 1
            for r in cell:
                assert r["J_lower"] <= r["J_upper"]
                if r["status"].startswith("n/a"):
                    continue
                if r["kind"] == "nsopt":
                    assert r["lower_bound"] <= r["J_upper"] * (1 + 1e-9) + 1e-12
                    if r["certified"]:
                        assert r["gap"] <= level * abs(r["fun"]) * (1 + 1e-12)
                        assert r["seconds"] == r["time_run"]
                    else:
                        assert r["status"].startswith("not certified") and np.isnan(r["seconds"])
                else:
                    assert r["fun"] >= r["J_lower"] * (1 - 1e-9) - 1e-12
                    # at lam 1e-2 every peer gets there: one that does not solves another
                    # problem (its C or lambda maps lam wrongly)
                    assert r["status"].startswith("reached"), r
                    if r["status"].startswith("reached"):
                        assert r["fun"] <= r["J_upper"] / (1 - level) * (1 + 1e-12)
                    if r["solver"] == "cyanure" and r["status"].startswith("reached"):
                        assert r["proved_gap"] <= level  # it stops on a proven gap
