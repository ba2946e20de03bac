r"""A griffe extension: nsopt's docstrings are numpydoc with Sphinx roles; the site's markdown
has neither, so the roles are rewritten when griffe loads a docstring.

* ``:math:`x``` becomes ``\(x\)`` and a ``.. math::`` block a ``$$ ... $$`` block, both
  rendered by ``pymdownx.arithmatex`` and MathJax;
* ``:class:`~nsopt.Oracle``` (``func``, ``meth``, ``mod``, ``data``, ``attr``, ``exc``, ``obj``)
  becomes an optional cross-reference: a link where the target has an entry in the reference,
  the name in code otherwise (``~`` shows the last part only); a name without a dot is looked
  up in the object's class, then its module;
* a citation ``[TVSL10]_`` becomes ``[TVSL10]`` and its target ``.. [TVSL10] text`` a
  paragraph ``[TVSL10] text``.

The tests call :func:`rst_to_markdown` directly.
"""
from __future__ import annotations

import re

from griffe import Extension

ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|data|attr|exc|obj):`(~?)([^`<>]+?)(?:\(\))?`")
INLINE_MATH = re.compile(r":math:`([^`]+)`")
MATH_DIRECTIVE = re.compile(r"^([ \t]*)\.\. math::[ \t]*(.*)$")
CITATION_REF = re.compile(r"\[([A-Za-z][\w+-]*)\]_")
CITATION = re.compile(r"^([ \t]*)\.\. \[([A-Za-z][\w+-]*)\][ \t]*")


def _math_blocks(text: str) -> str:
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        m = MATH_DIRECTIVE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent, first = m.group(1), m.group(2).strip()
        body = [first] if first else []
        i += 1
        while i < len(lines) and (not lines[i].strip()
                                  or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        depth = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
        out.append(f"{indent}$$")
        out.extend(f"{indent}{l[depth:]}" if l.strip() else "" for l in body)
        out.append(f"{indent}$$")
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out)


def rst_to_markdown(text: str, module: str = "", cls: str = "") -> str:
    """``text`` with its Sphinx roles, math and citations in markdown (see the module)."""
    text = _math_blocks(text)
    text = INLINE_MATH.sub(lambda m: r"\(" + m.group(1) + r"\)", text)

    def role(m):
        kind, short, target = m.group(1), m.group(2), m.group(3).strip()
        shown = target.rsplit(".", 1)[-1] if short else target
        if kind in ("meth", "func"):
            shown += "()"
        if "." in target:
            identifier = target
        elif cls and kind in ("meth", "attr"):
            identifier = f"{cls}.{target}"
        else:
            identifier = f"{module}.{target}" if module else target
        return f'<autoref identifier="{identifier}" optional><code>{shown}</code></autoref>'

    text = ROLE.sub(role, text)
    text = CITATION_REF.sub(r"[\1]", text)
    text = "\n".join(CITATION.sub(r"\1[\2] ", line) for line in text.split("\n"))
    return text


class RstRoles(Extension):
    """Rewrite every docstring griffe loads with :func:`rst_to_markdown`."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is None:
            return
        module = obj.module.path if not obj.is_module else obj.path
        cls = obj.parent.path if obj.parent is not None and obj.parent.is_class else ""
        if obj.is_class:
            cls = obj.path
        obj.docstring.value = rst_to_markdown(obj.docstring.value, module, cls)
