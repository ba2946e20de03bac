"""mkdocs hooks: the parts of the site generated from the code at build time.

* **API reference**: one page per module of :data:`REFERENCE_MODULES`, ``reference/<module>.md``,
  holding a mkdocstrings ``::: <module>`` block that renders every name of the module's
  ``__all__`` from its numpydoc docstrings. A new public module is one more line there
  (``tests/test_docs.py`` fails while a public module has no page).
* **Tables**: a line ``<!-- nsopt-table: KIND [ARG] -->`` in a page is replaced by a table made
  from the code (:func:`expand_tables`): ``common-options``, ``options CLASS`` (a solver's own
  options), ``all-options`` (every solver of ``nsopt.solvers.__all__``), ``renamed-options``
  and ``statuses`` (``nsopt.Status``). An unknown kind fails the build.
* **Tutorials**: every numbered ``tutorials/NN_*.py`` (jupytext percent notebooks) becomes a page
  ``tutorials/<name>/`` rendered by mkdocs-jupyter, listed in the nav in file-name order, so
  a new tutorial needs no edit here or in ``mkdocs.yml``.

The nav entries for the reference and the tutorials are appended to ``mkdocs.yml``'s nav.
The functions that build tables and pages are plain functions, so the tests call them
without building the site.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS_DIR = ROOT / "tutorials"

#: The modules of the API reference, one page each, in nav order. Every name of each module's
#: ``__all__`` gets an entry; a name that is a module links to that module's page.
REFERENCE_MODULES = [
    "nsopt",
    "nsopt.losses",
    "nsopt.regularizers",
    "nsopt.solvers",
    "nsopt.certificate",
    "nsopt.path",
    "nsopt.io",
    "nsopt.datasets",
    "nsopt.plot",
    "nsopt.testing",
    "nsopt.cvx",
    "nsopt.distributed",
    "nsopt.distributed_saddle",
    "nsopt.sklearn",
]

#: The modules of nsopt without a page, and why. ``tests/test_docs.py`` fails on a module of
#: nsopt (not private, with an ``__all__``) in neither list: a new public module needs a line
#: in one of them.
NOT_IN_REFERENCE = {
    "nsopt.oracle": "its public classes are nsopt's (Oracle, FunctionOracle, Max, ...)",
    "nsopt.problem": "RegularizedRisk is nsopt's",
    "nsopt.result": "Result, Status and load_result are nsopt's",
    "nsopt.cli": "the command line, documented in cli.md",
    "nsopt.grade": "certify is nsopt's",
    "nsopt.bundle": "internal: the cutting-plane bundle of the solvers",
    "nsopt.linesearch": "internal: the solvers' line searches",
    "nsopt.saddle": "internal: the saddle forms of excessive-gap",
    "nsopt.inner": "internal: the master-problem backends (the solvers' `inner` option)",
}

REFERENCE_DIR = "reference"
TABLE_LINE = re.compile(r"^<!--\s*nsopt-table:\s*([a-z-]+)(?:\s+(\S+))?\s*-->\s*$", re.M)


# --- the API reference ------------------------------------------------------------------
def reference_page_uri(module: str) -> str:
    return f"{REFERENCE_DIR}/{module}.md"


def reference_page(module: str) -> str:
    """The markdown of ``module``'s reference page: its docstring and every name of its
    ``__all__``, rendered by mkdocstrings."""
    mod = importlib.import_module(module)
    names, submodules, shadowed, linked = [], [], [], []
    for n in public_names(module):
        obj = getattr(mod, n, None)
        if _is_module(obj):
            submodules.append(n)
        elif ((hasattr(mod, "__path__") and importlib.util.find_spec(f"{module}.{n}") is not None)
              or n not in vars(mod)):
            # a function named like its submodule (nsopt.minimize, nsopt.path), which
            # mkdocstrings would take for the module, or one the package provides lazily
            # (nsopt.to_cvxpy: module __getattr__), which static analysis cannot see: both
            # are rendered from where they are defined
            if obj.__module__ in REFERENCE_MODULES and obj.__module__ != module:
                linked.append((n, obj.__module__))  # rendered on its module's page
            else:
                shadowed.append(f"{obj.__module__}.{obj.__qualname__}")
        else:
            names.append(n)
    text = f"# `{module}`\n\n"
    if submodules:
        text += "Modules, each on its own page:\n\n" + "".join(
            f"- [`{module}.{n}`]({reference_link(module + '.' + n)})\n" for n in submodules) + "\n"
    text += (f"::: {module}\n"
             "    options:\n"
             "      show_root_heading: false\n"
             "      show_root_toc_entry: false\n"
             "      members:\n" + "".join(f"        - {n}\n" for n in names))
    for path in shadowed:
        text += f"\n::: {path}\n    options:\n      show_root_full_path: false\n"
    for n, home in linked:
        text += (f'\n<a id="{module}.{n}"></a>`{module}.{n}` is '
                 f"[`{home}.{n}`]({reference_link(home)}#{home}.{n}), documented there.\n")
    return text


def reference_link(module: str) -> str:
    """The link from a reference page to ``module``'s page (pages are siblings)."""
    return f"{module}.md"


def _is_module(obj) -> bool:
    return isinstance(obj, types.ModuleType)


def public_names(module: str) -> list[str]:
    """The names of ``module.__all__`` (imported, so names added at import time count)."""
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if not names:
        raise RuntimeError(f"{module} has no __all__: its reference page would be empty")
    return list(names)


# --- tables from the code ---------------------------------------------------------------
def _cell(text) -> str:
    """``text`` safe inside a markdown table cell (one line, pipes escaped)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(value) -> str:
    return "`" + _cell(repr(value)).replace("`", "'") + "`"


def option_table(options) -> str:
    """A markdown table of ``{name: nsopt.solvers.Option}``: name, default, allowed values,
    meaning and the former names that still work."""
    from nsopt._validation import _alternatives

    rows = ["| option | default | allowed | meaning |", "|---|---|---|---|"]
    for name, opt in options.items():
        meaning = _cell(opt.doc) or "(undocumented)"
        if opt.renamed_from:
            meaning += " (former name " + ", ".join(f"`{r}`" for r in opt.renamed_from) + ")"
        rows.append(f"| `{name}` | {_code(opt.default)} | {_cell(_alternatives(opt.constraints))} "
                    f"| {meaning} |")
    return "\n".join(rows)


def solver_classes() -> list[type]:
    """The solver classes of ``nsopt.solvers.__all__`` (not the base class), in its order."""
    import nsopt.solvers as solvers

    return [obj for obj in (getattr(solvers, n) for n in solvers.__all__)
            if isinstance(obj, type) and issubclass(obj, solvers.Solver)
            and obj is not solvers.Solver]


def _solver_class(name: str) -> type:
    by_name = {cls.__name__: cls for cls in solver_classes()}
    if name not in by_name:
        raise ValueError(f"nsopt-table options {name}: not a solver class of nsopt.solvers "
                         f"(one of {sorted(by_name)})")
    return by_name[name]


def own_options_table(name: str) -> str:
    """The table of the options solver class ``name`` adds to the common ones."""
    cls = _solver_class(name)
    if not cls.options:
        return f"`{name}` has no options beyond the common ones."
    return option_table(cls.options)


def all_options_tables() -> str:
    """One section per solver class: its method name, the variants it stands for, its own
    options."""
    from nsopt.solvers._base import COMMON_OPTIONS

    parts = []
    for cls in solver_classes():
        common = [o for o in cls.options if o in COMMON_OPTIONS]
        head = f"### `{cls.__name__}`\n\n`method=\"{cls.name}\"`"
        if cls.required_options:
            needs = [" or ".join(f"`{o}`" for o in ((r,) if isinstance(r, str) else r))
                     for r in cls.required_options]
            head += "; needs " + ", ".join(needs)
        head += ". " + _first_sentence(cls.__doc__)
        if common:
            head += " Redefines the common " + ", ".join(f"`{o}`" for o in common) + "."
        parts.append(head + "\n\n" + own_options_table(cls.__name__))
    return "\n\n".join(parts)


def _first_sentence(doc) -> str:
    text = " ".join((doc or "").split()).replace("``", "`")
    m = re.match(r"(.+?)([.:])(\s|$)", text)
    return _cell(m.group(1) + "." if m else text)


def renamed_options_table() -> str:
    """Options renamed to say what they mean: solver class, former name, option."""
    rows = ["| solver | former name | option |", "|---|---|---|"]
    for cls in solver_classes():
        for name, opt in cls.options.items():
            for old in opt.renamed_from:
                rows.append(f"| `{cls.__name__}` (`{cls.name}`) | `{old}` | `{name}` |")
    return "\n".join(rows)


def status_table() -> str:
    """``nsopt.Status``: value, whether it is success, its message; then the aliases."""
    from nsopt import Status

    rows = ["| `Status` | value | `success` | meaning |", "|---|---|---|---|"]
    for s in Status:
        rows.append(f"| `{s.name}` | `\"{s.value}\"` | {'yes' if s.success else 'no'} "
                    f"| {_cell(s.message)} |")
    aliases = [(n, s) for n, s in Status.__members__.items() if n != s.name]
    if aliases:
        rows.append("")
        rows.append("Former names that still work: " + ", ".join(
            f"`Status.{n}` (now `Status.{s.name}`)" for n, s in aliases) + ".")
    return "\n".join(rows)


TABLES = {
    "common-options": lambda arg: _common_options(),
    "options": own_options_table,
    "all-options": lambda arg: all_options_tables(),
    "renamed-options": lambda arg: renamed_options_table(),
    "statuses": lambda arg: status_table(),
}


def _common_options() -> str:
    from nsopt.solvers._base import COMMON_OPTIONS

    return option_table(COMMON_OPTIONS)


def expand_tables(markdown: str, page: str = "page") -> str:
    """``markdown`` with each ``<!-- nsopt-table: KIND [ARG] -->`` line replaced by its table."""
    def replace(m):
        kind, arg = m.group(1), m.group(2)
        if kind not in TABLES:
            raise ValueError(f"{page}: unknown table {kind!r} (known: {sorted(TABLES)})")
        return TABLES[kind](arg)

    return TABLE_LINE.sub(replace, markdown)


# --- the tutorials ----------------------------------------------------------------------
def tutorial_paths() -> list[Path]:
    return sorted(TUTORIALS_DIR.glob("[0-9]*.py"))


def tutorial_uri(path: Path) -> str:
    return f"tutorials/{path.name}"


# --- mkdocs events ----------------------------------------------------------------------
def on_config(config):
    nav = config.nav
    if nav is not None:
        nav.append({"Tutorials": [tutorial_uri(p) for p in tutorial_paths()]})
        nav.append({"API reference": [{m: reference_page_uri(m)} for m in REFERENCE_MODULES]})
    return config


def on_files(files, config):
    from mkdocs.structure.files import File

    for module in REFERENCE_MODULES:
        files.append(File.generated(config, reference_page_uri(module),
                                    content=reference_page(module)))
    for path in tutorial_paths():
        # a file of its own source folder (the repository), so that mkdocs-jupyter, which
        # reads the notebook from abs_src_path, finds it
        files.append(File(tutorial_uri(path), src_dir=str(ROOT), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files


# run before mkdocs-jupyter's on_files, which wraps the tutorial files as notebooks
on_files.mkdocs_priority = 100


def on_page_markdown(markdown, page, config, files):
    return expand_tables(markdown, page.file.src_uri)


def on_serve(server, config, builder):
    """``mkdocs serve`` rebuilds when a tutorial or a docstring changes, too."""
    for folder in (TUTORIALS_DIR, ROOT / "nsopt"):
        server.watch(str(folder))
    return server
