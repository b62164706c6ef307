"""Sphinx configuration of the documentation site (furo theme, MyST Markdown, autodoc + napoleon).

Build (warnings are errors), from the repository root:

    python -m sphinx -E -W --keep-going -b html docs docs/_build/html

The README, the family READMEs and the case catalogue are not copied: the pages include the
READMEs and ``catalogue.py`` regenerates the catalogue from ``conf/`` on every build.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))

import catalogue  # noqa: E402  (docs/catalogue.py)

project = "mechanics-harness"
author = "mechanics-harness developers"
copyright = "the mechanics-harness developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**/README.md"]
html_theme = "furo"
html_title = "mechanics-harness"
smartquotes = False  # descriptions and commands appear verbatim (a user copies them)
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "imported-members": True, "undoc-members": False,
                           "show-inheritance": False}
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_ivar = True  # dataclass fields are documented once (as members), not twice
nitpicky = False
# shapes such as "(n, n)" in numpy-style types are looked up as Python names; several
# classes have an attribute ``n``, so the lookup is ambiguous: that is not an error of ours
suppress_warnings = ["ref.python"]

# links between the included READMEs point at repository files; on the site they become pages
_README_PAGES = {
    "models/load_transfer/contracts/README.md": "families/load_transfer_contracts.md",
    "models/load_transfer/kratos/README.md": "families/load_transfer_kratos.md",
    **{f"models/{f}/README.md": f"families/{f}.md"
       for f in ("load_transfer", "dem", "vessel", "beam", "integrators")},
}


def _relink(text: str, including_doc: str) -> str:
    """Rewrite ``](models/.../README.md)`` links to the site page, relative to the including page."""
    depth = including_doc.count("/")
    prefix = "../" * depth
    for src, page in _README_PAGES.items():
        text = text.replace(f"]({src})", f"]({prefix}{page})")
        # links inside the family READMEs are relative to their own folder
        text = text.replace(f"](../{Path(src).parent.name}/README.md)", f"]({prefix}{page})")
    return text


def _promote_headings(text: str) -> str:
    """A README whose top heading is ``##`` gets every heading one level up (code fences untouched)."""
    lines, fence = text.splitlines(keepends=True), False
    first = next((ln for ln in lines if ln.startswith("#")), "")
    if not first.startswith("## "):
        return text
    out = []
    for ln in lines:
        if ln.lstrip().startswith(("```", "~~~")):
            fence = not fence
        out.append(ln[1:] if (not fence and re.match(r"#{2,6} ", ln)) else ln)
    return "".join(out)


def _include_read(app, relative_path, parent_docname, content):
    content[0] = _promote_headings(_relink(content[0], parent_docname))


_SECTION = re.compile(r"^\s*-{3,}\s*$")


def _escape_pipes(line: str) -> str:
    """``|x|`` is an absolute value in our docstrings, not an RST substitution (literals kept)."""
    parts = re.split(r"(``.*?``)", line)
    return "".join(p if p.startswith("``") else p.replace("|", "\\|") for p in parts)


def _plain_docstring(app, what, name, obj, options, lines):
    """Render the models' free-form docstrings faithfully.

    Many docstrings list fields as ``name : text`` with hanging indents (no numpy section
    header). RST would read those as definition lists or block quotes and warn; such a
    paragraph becomes a line block (line breaks and indents kept). Doctests and numpy-style
    docstrings (with ``-----`` section underlines) are left to napoleon.
    """
    if any(_SECTION.match(ln) for ln in lines):
        lines[:] = [_escape_pipes(ln) for ln in lines]
        return
    out, para = [], []

    def flush():
        if not para:
            return
        indents = {len(ln) - len(ln.lstrip()) for ln in para}
        literal = para[0].lstrip().startswith((">>>", "..")) or any(ln.rstrip().endswith("::") for ln in para)
        if len(indents) > 1 and not literal:
            base = min(indents)
            out.extend("| " + " " * (len(ln) - len(ln.lstrip()) - base) + _escape_pipes(ln.strip()) for ln in para)
        else:
            out.extend(ln if literal else _escape_pipes(ln) for ln in para)
        para.clear()

    for ln in lines:
        if ln.strip():
            para.append(ln)
        else:
            flush()
            out.append(ln)
    flush()
    lines[:] = out


def _write_catalogue(app):
    catalogue.write(DOCS / "_generated" / "catalogue.md")


def setup(app):
    app.connect("builder-inited", _write_catalogue)
    app.connect("include-read", _include_read)
    app.connect("autodoc-process-docstring", _plain_docstring)
    return {"parallel_read_safe": True}
