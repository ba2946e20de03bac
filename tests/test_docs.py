"""The documentation runs and tells the truth.

Every ```python block of README.md and docs/*.md is executed, in order, in one fresh
namespace per file; a block preceded by a ``<!-- skip -->`` line is not run. mkdocs.yml's nav
must list existing pages (and every page), README's solver table must match
``nsopt.solvers.SOLVERS``, and .ci/run must run the README's two commands.

The site is built with ``mkdocs build --strict`` (``test_site``): the API reference must hold
every public name of the modules of ``docs/hooks.py``'s ``REFERENCE_MODULES`` (driven by their
``__all__``), the option and status tables generated from the code must be in it, and every
tutorial must be a page, run, with its outputs and figures.
"""
from __future__ import annotations

import html
import importlib
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import nsopt

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def _load(name):
    """docs/<name>.py as a module (they are not a package)."""
    spec = importlib.util.spec_from_file_location(f"nsopt_docs_{name}", ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _load("hooks")  # the generator of the reference pages, the tables, the tutorial pages


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


#: mkdocs plugin (or mkdocstrings handler) -> the distribution that provides it
PLUGIN_DISTRIBUTIONS = {"search": "mkdocs", "mkdocstrings": "mkdocstrings",
                        "python": "mkdocstrings-python", "mkdocs-jupyter": "mkdocs-jupyter"}


def extra_requirements(name):
    """The distribution names of extra ``name`` in pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(rf"^{name} = \[(.*?)^\]", text, re.M | re.S)
    assert block, f"pyproject.toml has no extra {name!r}"
    return {re.split(r"[\[<>=~! ]", r, maxsplit=1)[0].lower()
            for r in re.findall(r'^\s*"([^"]+)"', block.group(1), re.M)}


def test_mkdocs_plugins_come_with_the_test_and_docs_extras():
    """Every plugin mkdocs.yml names is installed by ``.[test]`` (CI builds the site) and by
    ``.[docs]``; the plain mkdocs theme; nothing fetched at build time (no inventories)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^theme:\s*\n\s+name:\s*mkdocs\s*$", text, re.M)
    plugins = text.split("\nplugins:", 1)[1]
    plugins = re.split(r"\n\S", plugins, maxsplit=1)[0]
    names = re.findall(r"^  - ([\w-]+):?\s*$", plugins, re.M)
    handlers = re.findall(r"^        (\w+):\s*$", plugins, re.M)
    assert {"mkdocstrings", "mkdocs-jupyter"} <= set(names) and "python" in handlers
    needed = {PLUGIN_DISTRIBUTIONS[n] for n in names + handlers}
    if re.search(r"^  - pymdownx\.", text, re.M):
        needed.add("pymdown-extensions")
    for extra in ("test", "docs"):
        missing = needed - extra_requirements(extra)
        assert not missing, f"mkdocs.yml needs {sorted(missing)}, not in the {extra!r} extra"
    assert "inventories" not in text and "import:" not in text, "the build must not fetch"


def test_links_between_pages_resolve():
    generated = {hooks.reference_page_uri(m) for m in hooks.REFERENCE_MODULES}
    for path in DOC_FILES:
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if path.parent.name == "docs" and target in generated:
                continue
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


def table_first_cells(markdown):
    """The code names in the first cell of each markdown table row."""
    return set(re.findall(r"^\| `([^`]+)` \|", markdown, re.M))


def expanded(name):
    return hooks.expand_tables((ROOT / "docs" / name).read_text(encoding="utf-8"), name)


def test_bmrm_options_documented():
    """Every option BMRM accepts has a row in a table of docs/solvers.md (its own options,
    generated) or of docs/options.md (the common ones, generated)."""
    from nsopt.solvers._base import COMMON_OPTIONS

    on_solvers = table_first_cells(expanded("solvers.md"))
    assert set(nsopt.solvers.BMRM.options) <= on_solvers, sorted(set(nsopt.solvers.BMRM.options) - on_solvers)
    assert set(COMMON_OPTIONS) <= table_first_cells(expanded("options.md"))


def test_options_page_has_every_option_of_every_solver():
    from nsopt.solvers._base import COMMON_OPTIONS

    text = expanded("options.md")
    assert "nsopt-table" not in text
    sections = re.split(r"^### `(\w+)`$", text, flags=re.M)
    common = table_first_cells(sections[0])
    assert common == set(COMMON_OPTIONS)
    own = dict(zip(sections[1::2], sections[2::2]))
    classes = hooks.solver_classes()
    assert {c.__name__ for c in classes} == set(own)
    assert {"BMRM", "SubLBFGS", "LevelBundle"} <= set(own)
    for cls in classes:
        assert table_first_cells(own[cls.__name__]) == set(cls.options), cls.__name__
        for name, opt in cls.options.items():
            row = next(r for r in own[cls.__name__].splitlines() if r.startswith(f"| `{name}` |"))
            assert repr(opt.default).replace("|", "\\|") in row, (cls.__name__, name, row)


def test_renamed_options_table_lists_every_former_name():
    rows = set(re.findall(r"^\| `(\w+)` \(`[\w-]+`\) \| `(\w+)` \| `(\w+)` \|$",
                          hooks.renamed_options_table(), re.M))
    want = {(c.__name__, old, name) for c in hooks.solver_classes()
            for name, opt in c.options.items() for old in opt.renamed_from}
    assert want and rows == want


def test_status_table_is_the_status_enum():
    rows = re.findall(r"^\| `(\w+)` \| `\"(\w+)\"` \| (yes|no) \| (.+) \|$",
                      hooks.status_table(), re.M)
    assert [r[:2] for r in rows] == [(s.name, s.value) for s in nsopt.Status]
    assert [r[1] for r in rows if r[2] == "yes"] == ["converged"]
    for name, _, _, meaning in rows:
        assert meaning.replace("\\|", "|") == " ".join(nsopt.Status[name].message.split())
    # the hand-written table of what each status proves has one row per status, no more
    text = (ROOT / "docs" / "solvers.md").read_text(encoding="utf-8")
    proves = text[text.index("| `Status` | when |"):]
    proves = proves[:proves.index("\n\n")]
    assert re.findall(r"^\| `(\w+)` \|", proves, re.M)[1:] == [s.value for s in nsopt.Status]


def test_expand_tables_rejects_an_unknown_table():
    with pytest.raises(ValueError, match="unknown table 'colours'"):
        hooks.expand_tables("text\n<!-- nsopt-table: colours -->\n", "x.md")
    with pytest.raises(ValueError, match="not a solver class"):
        hooks.expand_tables("<!-- nsopt-table: options Solver -->\n", "x.md")


def test_docstring_roles_become_markdown():
    pytest.importorskip("griffe", reason="griffe comes with mkdocstrings-python (docs extra)")
    rst_to_markdown = _load("griffe_rst").rst_to_markdown

    text = rst_to_markdown(
        "See :class:`~nsopt.Oracle`, :meth:`bound` and :func:`nsopt.minimize`, where\n"
        ":math:`\\|x\\|_2 \\le r` [TVSL10]_.\n\n"
        "    .. math::\n\n        J(w) = \\lambda \\Omega(w)\n            + R(w)\n\n"
        "    After.\n\n.. [TVSL10] Teo et al.", module="nsopt.certificate",
        cls="nsopt.certificate.PlaneCertifier")
    assert ('<autoref identifier="nsopt.Oracle" optional><code>Oracle</code></autoref>' in text)
    assert ('<autoref identifier="nsopt.certificate.PlaneCertifier.bound" optional>'
            "<code>bound()</code></autoref>") in text
    assert '<autoref identifier="nsopt.minimize" optional><code>nsopt.minimize()</code>' in text
    assert "\\(\\|x\\|_2 \\le r\\) [TVSL10]." in text
    assert "    $$\n    J(w) = \\lambda \\Omega(w)\n        + R(w)\n    $$\n\n    After." in text
    assert text.endswith("\n[TVSL10] Teo et al.")
    assert ":math:" not in text and ".. " not in text and "]_" not in text


# --- the API reference ------------------------------------------------------------------
#: the modules the reference must cover whatever else it covers (issue 14)
REQUIRED_REFERENCE = {"nsopt", "nsopt.losses", "nsopt.regularizers", "nsopt.solvers", "nsopt.io",
                      "nsopt.datasets", "nsopt.plot", "nsopt.testing", "nsopt.certificate",
                      "nsopt.path"}


def public_modules():
    """nsopt's submodules that are not private and declare ``__all__``."""
    found = set()
    for info in pkgutil.iter_modules(nsopt.__path__):
        if info.name.startswith("_"):
            continue
        name = f"nsopt.{info.name}"
        if hasattr(importlib.import_module(name), "__all__"):
            found.add(name)
    return found


def test_every_public_module_has_a_reference_page():
    pages = list(hooks.REFERENCE_MODULES)
    assert len(pages) == len(set(pages))
    assert REQUIRED_REFERENCE <= set(pages), sorted(REQUIRED_REFERENCE - set(pages))
    exported = {f"nsopt.{n}" for n in nsopt.__all__
                if isinstance(getattr(nsopt, n), types.ModuleType)}
    assert exported <= set(pages), sorted(exported - set(pages))
    undecided = public_modules() - set(pages) - set(hooks.NOT_IN_REFERENCE)
    assert not undecided, (f"public modules {sorted(undecided)} have no reference page: add them "
                           "to REFERENCE_MODULES (or NOT_IN_REFERENCE, with the reason) in "
                           "docs/hooks.py")
    assert not set(pages) & set(hooks.NOT_IN_REFERENCE)
    stale = set(hooks.NOT_IN_REFERENCE) - public_modules()
    assert not stale, f"NOT_IN_REFERENCE names modules that are not public modules: {stale}"


def documented_ids(module, name):
    """The anchors under which ``module.name`` may be rendered: its path through ``module``
    and, for a name mkdocstrings reads as a submodule, where it is defined."""
    obj = getattr(importlib.import_module(module), name)
    ids = {f"{module}.{name}"}
    if hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
        ids.add(f"{obj.__module__}.{obj.__qualname__}")
    return ids


@pytest.mark.parametrize("module", hooks.REFERENCE_MODULES)
def test_reference_page_asks_for_every_public_name(module):
    """The generated page names every name of ``__all__`` (a mkdocstrings member or block), or
    links the submodule's own page, or (a name provided lazily by a module with its own page)
    links that page under the name's anchor."""
    text = hooks.reference_page(module)
    for name in importlib.import_module(module).__all__:
        obj = getattr(importlib.import_module(module), name)
        if isinstance(obj, types.ModuleType):
            assert f"({hooks.reference_link(f'{module}.{name}')})" in text, name
        else:
            asked = re.findall(r"^        - (\w+)$", text, re.M) + [
                p.rsplit(".", 1)[-1] for p in re.findall(r"^::: (\S+)$", text, re.M)[1:]] + [
                a.rsplit(".", 1)[-1] for a in re.findall(r'^<a id="([\w.]+)"></a>', text, re.M)]
            assert name in asked, f"{module}.{name} is not on its reference page"


# --- the built site ---------------------------------------------------------------------
def build_site(site_dir, cwd):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed: pip install '.[docs]' (it is in the test extra, "
                    "so CI builds the site)")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    # The tutorials are not executed here: tests/test_tutorials.py runs each one as a notebook
    # (in parallel, one test per tutorial) and checks its outputs and inline figures; executing
    # them again inside the build took 70% of this test's time (the CI budget is 15 minutes).
    env["NSOPT_DOCS_EXECUTE"] = "false"
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                          str(ROOT / "mkdocs.yml"), "-d", str(site_dir)],
                         cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    log = run.stdout + run.stderr
    problems = [l for l in log.splitlines() if l.startswith(("WARNING", "ERROR"))]
    assert run.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(problems or [log[-3000:]])
    return log


def anchors(page):
    return set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))


def check_reference(site):
    missing = []
    for module in hooks.REFERENCE_MODULES:
        page = site / "reference" / module / "index.html"
        if not page.is_file():
            missing.append(f"{module} (no page)")
            continue
        ids = anchors(page)
        for name in importlib.import_module(module).__all__:
            obj = getattr(importlib.import_module(module), name)
            if isinstance(obj, types.ModuleType):
                if not (site / "reference" / f"{module}.{name}" / "index.html").is_file():
                    missing.append(f"{module}.{name} (a module without its page)")
            elif not documented_ids(module, name) & ids:
                missing.append(f"{module}.{name}")
    assert not missing, f"public names missing from the API reference: {missing}"


def table_codes(page):
    """The ``<code>`` names in the first cell of every table row of a built page."""
    text = page.read_text(encoding="utf-8")
    return set(re.findall(r"<tr>\s*<td><code>([^<]+)</code></td>", text))


def check_tables(site):
    from nsopt.solvers._base import COMMON_OPTIONS

    everything = set(COMMON_OPTIONS).union(*(c.options for c in hooks.solver_classes()))
    options = table_codes(site / "options" / "index.html")
    assert everything <= options, f"options missing from the built page: {everything - options}"
    solvers_page = site / "solvers" / "index.html"
    assert set(nsopt.solvers.BMRM.options) <= table_codes(solvers_page)
    assert {s.name for s in nsopt.Status} <= table_codes(solvers_page)
    for page in site.rglob("*.html"):
        assert "nsopt-table" not in page.read_text(encoding="utf-8"), page


def check_tutorials(site):
    import jupytext

    paths = hooks.tutorial_paths()
    assert paths, "no tutorials"
    for path in paths:
        page = site / "tutorials" / path.stem / "index.html"
        assert page.is_file(), f"tutorial {path.name} has no page"
        text = page.read_text(encoding="utf-8")
        nb = jupytext.read(path, fmt="py:percent")
        title = nb.cells[0].source.lstrip().splitlines()[0].lstrip("# ").strip()
        assert html.escape(title, quote=False) in text or title in text, (path.name, title)
        # every code cell's source is on the page (built without execution: the outputs and
        # figures are checked by tests/test_tutorials.py on the executed notebooks)
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.source.strip():
                first = cell.source.strip().splitlines()[0].strip()
                assert html.escape(first, quote=False) in text or first in text, (path.name, first)


def test_site(tmp_path):
    """``mkdocs build --strict`` (tutorials not executed), then: every public name in the
    reference, the generated tables, every tutorial a page with its code. One test, so that
    pytest-xdist builds the site once."""
    build_site(tmp_path / "site", tmp_path)
    site = tmp_path / "site"
    failures = []
    for check in (check_reference, check_tables, check_tutorials):
        try:
            check(site)
        except AssertionError as exc:
            failures.append(f"{check.__name__}: {exc}")
    assert not failures, "\n".join(failures)


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
