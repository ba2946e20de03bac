"""Every tutorial (tutorials/*.py, jupytext percent format) executes as a notebook, in a
python3 Jupyter kernel with matplotlib's inline backend, and its figures are in the notebook.

Needs ``jupytext``, ``nbformat``, ``nbclient`` and ``ipykernel`` (the tests skip without them).
The kernel runs with ``NSOPT_TUTORIAL_SMALL=1``, which a tutorial may read to shrink its sizes
(the default sizes are small already).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("*.py"))
INLINE = "module://matplotlib_inline.backend_inline"
#: a cell that shows a figure: ``plt.show()``, or a figure as the cell's last expression
SHOWS = re.compile(r"plt\.show\(\)|^(fig|figure|\w+\.plot\(.*\))\s*$", re.MULTILINE)


def test_there_are_tutorials():
    assert TUTORIALS, "tutorials/ has no .py notebooks"


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_is_a_percent_notebook(path):
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(path, fmt="py:percent")
    kinds = [cell.cell_type for cell in nb.cells]
    assert kinds.count("markdown") >= 2 and kinds.count("code") >= 2, kinds
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.lstrip().startswith("# ")


def test_no_tutorial_forces_a_backend():
    for path in TUTORIALS:
        text = path.read_text()
        assert "matplotlib.use(" not in text, f"{path.name} forces a matplotlib backend"
        assert "savefig" not in text, f"{path.name} saves its figures instead of showing them"


def _execute(path, tmp_path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib_inline")
    # the kernel inherits this process's environment
    monkeypatch.setenv("MPLBACKEND", INLINE)
    monkeypatch.setenv("NSOPT_TUTORIAL_SMALL", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    nb = jupytext.read(path, fmt="py:percent")
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def _outputs(cell, kind):
    return [out for out in cell.get("outputs", []) if kind in out.get("data", {})]


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_executes_as_a_notebook_with_its_figures(path, tmp_path, monkeypatch):
    nb = _execute(path, tmp_path, monkeypatch)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.get("execution_count") for cell in code), "a code cell was not executed"
    showing = [cell for cell in code if SHOWS.search(cell.source)]
    for cell in showing:  # each cell that shows a figure has it inline, as a PNG
        assert _outputs(cell, "image/png"), f"no image/png output in the cell:\n{cell.source}"
    n_png = sum(len(_outputs(cell, "image/png")) for cell in code)
    draws = "plt." in path.read_text() or "nsopt.plot" in path.read_text()
    if draws:
        assert n_png >= 1, f"{path.name} draws but its notebook has no image/png output"
    assert n_png >= len(showing)
    for cell in code:  # no figure written to a file instead of shown
        for out in cell.get("outputs", []):
            assert not re.search(r"saved .*\.png", out.get("text", "")), out["text"]
