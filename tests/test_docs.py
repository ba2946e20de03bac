"""The documentation runs and tells the truth.

Every ```python block of README.md and docs/*.md is executed, in order, in one fresh
namespace per file; a block preceded by a ``<!-- skip -->`` line is not run. mkdocs.yml's nav
must list existing pages (and every page), README's solver table must match
``nsopt.solvers.SOLVERS``, and .ci/run must run the README's two commands.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import nsopt

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def code_blocks(path):
    """``(first line number, language, code, skipped)`` for every fenced block of a file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        previous = next((l.strip() for l in reversed(lines[:i]) if l.strip()), "")
        j = i + 1
        while j < len(lines) and not FENCE.match(lines[j]):
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path.name}:{i + 1}: unclosed code fence")
        body = "\n".join(l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j])
        blocks.append((i + 2, lang, body, previous == "<!-- skip -->"))
        i = j + 1
    return blocks


def test_doc_files_exist():
    names = {p.name for p in DOC_FILES}
    assert {"README.md", "index.md", "oracles.md", "regularizers.md", "solvers.md", "cli.md"} <= names


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_python_blocks_run(path, monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    blocks = [b for b in code_blocks(path) if b[1] in ("python", "py") and not b[3]]
    if path.name != "regularizers.md":
        assert blocks, f"{path.name} has no runnable python example"
    namespace = {"__name__": f"__doc_{path.stem}__"}
    for line, _, code, _ in blocks:
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"the python block at {path.name} line {line} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc


def test_skip_marker_is_honoured(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("text\n\n<!-- skip -->\n```python\nraise SystemExit\n```\n\n```python\nx = 1\n```\n")
    assert [(b[1], b[3]) for b in code_blocks(doc)] == [("python", True), ("python", False)]


def mkdocs_nav():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^docs_dir:\s*docs\s*$", text, re.M), "mkdocs.yml must set docs_dir: docs"
    nav = text.split("\nnav:", 1)[1]
    nav = re.split(r"\n\S", nav, maxsplit=1)[0]  # up to the next top-level key
    return re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?(\S+\.md)\s*$", nav, re.M)


def test_mkdocs_nav_lists_existing_pages():
    pages = mkdocs_nav()
    assert pages, "mkdocs.yml has no nav entries"
    missing = [p for p in pages if not (ROOT / "docs" / p).is_file()]
    assert not missing, f"mkdocs.yml nav lists missing pages: {missing}"
    orphans = sorted({p.name for p in (ROOT / "docs").glob("*.md")} - set(pages))
    assert not orphans, f"pages not in mkdocs.yml nav: {orphans}"


def test_mkdocs_theme_needs_no_plugins():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "plugins:" not in text
    assert re.search(r"^theme:\s*\n\s+name:\s*mkdocs\s*$", text, re.M)


def test_links_between_pages_resolve():
    for path in DOC_FILES:
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            assert (path.parent / target).is_file(), f"{path.name} links to missing {target}"


def readme_commands():
    first = code_blocks(ROOT / "README.md")[0]
    return [l.strip() for l in first[2].splitlines() if l.strip()]


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("# nsopt\n")
    assert readme_commands() == ['pip install . && nsopt demo',
                                 'pip install ".[test]" && python -m pytest']


def test_ci_runs_the_readme_commands():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
    assert "set -euo pipefail" in script
    positions = []
    for command in readme_commands():
        i = script.find(command)
        assert i >= 0, f".ci/run does not run the README command {command!r}"
        positions.append(i)
    assert positions == sorted(positions), ".ci/run runs the README commands out of order"
    assert not re.search(r"-m\s+['\"]?not slow", script), "CI must run the slow tests"


@pytest.mark.parametrize("name", ["README.md", "docs/solvers.md"])
def test_solver_table_matches_registry(name):
    """The rows marked available are exactly the registered methods; the rest say planned."""
    text = (ROOT / name).read_text(encoding="utf-8")
    available, planned = set(), set()
    for row in re.findall(r"^\|(.+)\|\s*$", text, re.M):
        cells = [c.strip() for c in row.split("|")]
        methods = re.findall(r'`"([a-z-]+)"`', cells[0])
        if methods and cells[-1] in ("available", "planned"):
            (available if cells[-1] == "available" else planned).update(methods)
    assert available == set(nsopt.solvers.SOLVERS), (
        f"{name} marks {sorted(available)} available but nsopt.solvers.SOLVERS has "
        f"{sorted(nsopt.solvers.SOLVERS)}")
    assert not planned & available


LOSS_BASES = {"ScalarLoss", "VectorLoss", "MultivariateLoss"}


def exported_losses():
    return {n for n in nsopt.losses.__all__ if n not in LOSS_BASES
            and isinstance(getattr(nsopt.losses, n), type)
            and issubclass(getattr(nsopt.losses, n), nsopt.Oracle)}


def claimed_losses(name):
    """The loss class names the page claims are available."""
    text = (ROOT / name).read_text(encoding="utf-8")
    if name == "README.md":
        part = text[text.index("- **Losses**"):]
        part = part[:part.index("- **Regularizers**")]
    else:
        part = next(l for l in text.splitlines() if l.startswith("| losses |")).split("|")[2]
    return set(re.findall(r"`([A-Z][A-Za-z]+)`", part))


@pytest.mark.parametrize("name", ["README.md", "docs/index.md"])
def test_loss_list_matches_package(name):
    claimed, exported = claimed_losses(name), exported_losses()
    assert claimed == exported, (f"{name} lists {sorted(claimed - exported)} that nsopt.losses does "
                                 f"not export and misses {sorted(exported - claimed)}")


def test_bmrm_options_documented():
    """Every option BMRM accepts has a row in the options table of docs/solvers.md."""
    from nsopt.solvers._base import COMMON_OPTIONS

    text = (ROOT / "docs" / "solvers.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z_]+)`", text))
    accepted = set(nsopt.solvers.BMRM.options) | set(COMMON_OPTIONS)
    assert accepted <= documented, f"undocumented BMRM options: {sorted(accepted - documented)}"


def test_readme_layout_names_existing_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("## Layout"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    names = re.findall(r"[\w./]+(?:\.py|\.toml|\.md|\.yml|/run|/)(?=\s|$)", block)
    assert len(names) > 15
    missing = []
    for name in names:
        candidates = [ROOT / name, ROOT / "nsopt" / name]
        if not any(c.exists() for c in candidates):
            missing.append(name)
    assert not missing, f"README layout names files that do not exist: {missing}"
