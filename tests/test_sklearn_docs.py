"""The GridSearchCV example of docs/sklearn.md runs (on a9a; skipped without the data).

The block is marked ``<!-- skip -->`` for tests/test_docs.py (which runs every other block of
the page, on synthetic data) because it needs the real data set and a minute; it runs here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("sklearn", minversion="1.6")

import nsopt  # noqa: E402

PAGE = Path(__file__).resolve().parent.parent / "docs" / "sklearn.md"


def skipped_python_blocks(text: str) -> list[str]:
    """The ```python blocks preceded by a ``<!-- skip -->`` line."""
    return re.findall(r"<!-- skip -->\s*\n```python\n(.*?)\n```", text, re.S)


def test_the_page_has_the_gridsearch_example():
    blocks = skipped_python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 1 and "GridSearchCV" in blocks[0] and "warm_start=True" in blocks[0]


@pytest.mark.slow
def test_gridsearch_warm_start_example_runs(capsys):
    try:
        nsopt.io.load_dataset("a9a")
    except FileNotFoundError as exc:
        pytest.skip(f"a9a is absent: {exc}")
    code = skipped_python_blocks(PAGE.read_text(encoding="utf-8"))[0]
    exec(compile(code, f"{PAGE.name}:gridsearch", "exec"), {"__name__": "__doc_sklearn__"})
    out = capsys.readouterr().out
    assert "best alpha" in out and "fewer" in out
