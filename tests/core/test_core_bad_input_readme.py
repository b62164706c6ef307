"""The README section "Bad input: one line, exit 2, and the limits": every command run exactly as
written (in a fresh directory), its output as shown, and the limits table equal to the code's."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from tests.conftest import command_env

ROOT = Path(__file__).resolve().parents[2]
TITLE = "### Bad input: one line, exit 2, and the limits"


def _section() -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index(TITLE)
    return readme[start:readme.index("\n## ", start)]


def _env():
    return command_env()


def test_commands_run_as_written_with_the_output_shown(tmp_path):
    (block,) = re.findall(r"```console\n(.*?)```", _section(), flags=re.S)
    steps = []  # (command, expected output lines)
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    assert len(steps) == 4
    codes = []
    for command, expected in steps:
        res = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                             timeout=300)
        got = [ln for ln in (res.stdout + res.stderr).splitlines()
               if ln.strip() and not ln.startswith(("WARNING", "INFO"))]
        assert got == expected, (command, res.stdout, res.stderr)
        codes.append(res.returncode)
    assert codes == [0, 0, 2, 2]  # "The last two exit with 2."
    assert "The last two exit with 2." in _section()


def test_limits_table_matches_the_code():
    from harness.core.limits import MAX_ARGUMENT_CHARS, MAX_EXPORT_STEPS, MAX_NAME_CHARS, PARAM_LIMITS, SIZE_LIMITS
    from harness.generic import expression_limits, expressions
    from models.load_transfer.contracts import probe, validator

    text = _section()
    for key, (limit, _) in SIZE_LIMITS.items():
        env = "HARNESS_LIMIT_" + key.replace(".", "_").upper()
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| `{key}`"))
        assert f"| {limit:,}".replace(",", " ") in row and f"`{env}`" in row, row
    for kind, (limit, _) in PARAM_LIMITS.items():
        row = next(ln for ln in text.splitlines() if f"`HARNESS_LIMIT_CASE_PARAMS_{kind.upper()}`" in ln)
        assert f"| {limit:,} |".replace(",", " ") in row, row
    assert f"| `cavitation-kratos-export --steps` | {MAX_EXPORT_STEPS:,} |".replace(",", " ") in text
    assert f"| {MAX_ARGUMENT_CHARS} characters |" in text and f"| {MAX_NAME_CHARS} characters |" in text
    assert f"{expressions.MAX_LENGTH} characters, syntax tree {expression_limits.MAX_DEPTH} levels deep" in text
    assert expression_limits.DEFAULT_MAX_ELEMENTS == 10**8 and "| 10^8 elements |" in text
    assert validator.MAX_READ_BYTES == 2 * 2**30 and "| 2 GiB |" in text
    assert probe.PROBE_TIMEOUT_S == 10.0 and "| 10 s |" in text
