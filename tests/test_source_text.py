"""The repository's text files hold no ASCII control characters besides newline and tab.

An escape written through a non-raw string (``"\\alpha"`` in an editing script, or in a
docstring without ``r``) becomes a control character (BEL, backspace, vertical tab, form
feed): ``\\alpha`` turned into "<BEL>lpha" in three docstrings before this test; the rendered
API reference then shows garbage instead of the formula. The import test compiles with
``-W error`` (invalid escapes), but a *valid* escape like ``\\a`` or ``\\b`` passes it.
"""
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".md", ".toml", ".cfg", ".txt", ".yml", ".yaml", ".ini", ".rst"}
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _text_files():
    skip = {".git", ".venv", "venv", "build", "dist", "site", "__pycache__", ".hypothesis",
            "node_modules", ".pytest_cache"}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip and not d.endswith(".egg-info")]
        for name in files:
            if os.path.splitext(name)[1] in SUFFIXES:
                yield pathlib.Path(folder, name)


def test_the_scan_sees_the_sources():
    names = {p.relative_to(ROOT).as_posix() for p in _text_files()}
    assert "nsopt/__init__.py" in names and "README.md" in names


def test_no_control_characters_in_text_files():
    found = []
    for path in _text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            m = CONTROL.search(line)
            if m:
                found.append(f"{path.relative_to(ROOT)}:{n}: {ord(m.group()):#04x} in {line.strip()[:60]!r}")
    assert not found, "control characters (an escape in a non-raw string?):\n" + "\n".join(found)


@pytest.mark.parametrize("escape", ["\a", "\b", "\v", "\f"])
def test_the_pattern_catches_the_escapes_that_compile(escape):
    assert CONTROL.search(f":math:`{escape}eta`")
