"""Every tutorial (tutorials/*.py, jupytext percent format) runs as a script and opens as a
notebook."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("*.py"))


def test_there_are_tutorials():
    assert TUTORIALS, "tutorials/ has no .py notebooks"


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs(path, monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    import matplotlib

    matplotlib.use("Agg", force=True)
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_is_a_percent_notebook(path):
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(path, fmt="py:percent")
    kinds = [cell.cell_type for cell in nb.cells]
    assert kinds.count("markdown") >= 2 and kinds.count("code") >= 2, kinds
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.lstrip().startswith("# ")
