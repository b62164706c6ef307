"""The README section "Use it in your solver's repository": its settings block is what the project
reader accepts and its layout is what `harness init` writes. Its commands and CI snippets are run
as written by tests/project/test_project_wheel.py, with the wheel installed in a fresh venv."""
from __future__ import annotations

import re
from pathlib import Path

from harness.cli.scaffold import files

ROOT = Path(__file__).resolve().parents[2]


def section() -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Use it in your solver's repository")
    return readme[start:readme.index("<!-- getting-started:end -->", start)]


def blocks(lang: str):
    return re.findall(rf"```{lang}\n(.*?)```", section(), flags=re.S)


def test_settings_block_and_layout_are_what_the_harness_reads_and_writes(tmp_path):
    from harness.core.project import find_project

    (toml,) = blocks("toml")
    (tmp_path / "verification").mkdir()
    (tmp_path / "pyproject.toml").write_text(toml)
    project = find_project(tmp_path)
    assert project.case_dirs == ((tmp_path / "verification").resolve(),)
    assert project.outputs == (tmp_path / "outputs").resolve() and project.tracking == "local"
    (layout,) = blocks("text")
    listed = [ln.split()[0] for ln in layout.splitlines() if ln.strip()]
    assert listed == [*files(), "outputs/"]
