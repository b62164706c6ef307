"""Acceptance of the installed harness in a user's repository, through the commands of the README
section "Use it in your solver's repository" as written.

The sdist is built from a copy of the checkout, the wheel from the sdist, and the wheel installed (not editable) into a fresh virtual
environment; its runtime dependencies come from this interpreter's site directories through a
``.pth`` path line (no download; ``.pth`` files there are not run, so this checkout's editable
install stays invisible). From an empty directory outside the checkout: ``harness init``, the
scaffolded case, its refinement study (observed order gated), ``--list``, ``suite=project`` with
its JUnit XML read back by junitparser, ``baseline accept latest`` and an unchanged rerun with no
regression, ``compare``; every output under the user's directory, nothing written into
site-packages or the checkout; and ``run_case(..., project=...)`` gives the CLI's metrics.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns(".git", "outputs", "build", "dist", "*.egg-info", "__pycache__", ".venv",
                              ".*_cache", ".pytest_cache", "_build")


def readme_blocks(lang: str):
    """The fenced blocks of language ``lang`` in the README section "Use it in your solver's repository"."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Use it in your solver's repository")
    section = readme[start:readme.index("<!-- getting-started:end -->", start)]
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)


def files_under(root: Path, skip=(".git", "__pycache__", ".pytest_cache")) -> set:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        out.update(os.path.join(dirpath, f) for f in filenames)
    return out


def run(cmd, cwd, env, timeout=600):
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{cmd}\n{res.stdout}\n{res.stderr}"
    return res


def test_wheel_in_a_fresh_venv_runs_a_user_project(tmp_path):
    checkout_before = files_under(ROOT)
    src = tmp_path / "checkout"
    shutil.copytree(ROOT, src, ignore=SKIP)
    # the sdist first, then the wheel built from the sdist: both carry conf/ and the examples
    run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path / "dist"), str(src)],
        tmp_path, dict(os.environ))
    sdist = next((tmp_path / "dist").glob("mechanics_harness-*.tar.gz"))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(sdist)],
        tmp_path, dict(os.environ))
    wheel = next((tmp_path / "dist").glob("mechanics_harness-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"harness/_shipped/conf/config.yaml", "harness/_shipped/conf/suite/project.yaml",
            "harness/_shipped/examples/heat1d/heat1d.c", "schemas/wall-loads-v1.yaml",
            "models/vessel/data/tanker.yaml"} <= names

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, dict(os.environ))
    py = venv / "bin" / "python"
    purelib = Path(run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       tmp_path, dict(os.environ)).stdout.strip())
    deps = [*site.getsitepackages(), site.getusersitepackages(), sysconfig.get_paths()["purelib"]]
    (purelib / "_harness_test_deps.pth").write_text("\n".join(dict.fromkeys(d for d in deps if Path(d).is_dir())) + "\n")
    start = time.perf_counter()
    run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
        tmp_path, dict(os.environ))
    print(f"wheel install (no deps): {time.perf_counter() - start:.1f} s")

    user = tmp_path / "solver_repo"  # outside the checkout
    user.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "HARNESS_OUTPUTS", "HARNESS_CASES", "HARNESS_PROJECT", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = run(["python", "-c", "import harness; print(harness.__file__)"], user, env).stdout.strip()
    assert Path(where).is_relative_to(purelib), where  # the installed wheel, not this checkout
    site_before = files_under(purelib)

    # the commands of the README section "Use it in your solver's repository", as written
    (console,) = readme_blocks("console")
    commands = [ln[2:] for ln in console.splitlines() if ln.startswith("$ ")]
    assert commands == ["harness init", "harness +case=heat/ftcs",
                        "harness -m +case=heat/ftcs +study=heat/ftcs_refinement", "harness --list suite=project",
                        "harness suite=project", "harness baseline accept latest", "harness suite=project",
                        "harness compare baseline:project latest"]
    out = []
    for cmd in commands:
        start = time.perf_counter()
        out.append(run(["bash", "-c", cmd], user, env).stdout)
        print(f"{cmd}: {time.perf_counter() - start:.1f} s")
    init, single, study, listing, suite1, accept, suite2, compared = out
    assert "wrote harness.yaml" in init
    assert re.match(r"heat/ftcs  PASS  e_u=0\.002851  u_center=0\.3716  run=\w{32}$", single.strip()), single
    assert re.search(r"^study heat/ftcs_refinement  PASS  jobs=3 failed=0", study, re.M), study
    doc = json.loads(next((user / "outputs/sweeps/heat/ftcs").glob("*/study/study.json")).read_text())
    assert doc["verdict"] == "pass" and abs(doc["metrics"]["observed_order_1_2"] - 2.0) < 0.05, doc["metrics"]
    assert doc["error_metric"]["order_gate"] == {"expected": 2.0, "tolerance": 0.1, "verdict": "pass"}
    assert listing.splitlines()[1].split() == ["heat/ftcs", "[fast]"], listing

    from junitparser import JUnitXml

    first = sorted((user / "outputs/suites/project").iterdir())[0]
    cases = [c for s in JUnitXml.fromfile(str(first / "junit.xml")) for c in s]
    assert [(c.classname, c.name) for c in cases] == [("heat", "ftcs")] and all(c.is_passed for c in cases)
    assert (first / "dashboard.html").is_file() and "pass=1 " in suite1
    assert "accepted baseline project: 1 case runs" in accept
    assert "regressions=0" in suite2 and re.search(r"^heat/ftcs +PASS +ok ", suite2, re.M), suite2
    assert "metrics: identical" in compared and "input files: identical hashes" in compared, compared
    # the README's CI snippets (the generated GitHub workflow, the GitLab job) find this suite's reports
    ci = yaml.safe_load((user / ".github/workflows/verification.yml").read_text())
    steps = ci["jobs"]["verify"]["steps"]
    junit = next(s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report"))
    assert len(list(user.glob(junit["with"]["report_paths"]))) == 2
    assert any(s.get("run") == "harness suite=project" for s in steps)
    (gitlab,) = readme_blocks("yaml")
    job = yaml.safe_load(gitlab)["verify"]
    assert "harness suite=project" in job["script"]
    assert len(list(user.glob(job["artifacts"]["reports"]["junit"]))) == 2

    # every output under the user's directory; nothing written into site-packages or the checkout
    assert (user / "outputs/mlflow.db").is_file()
    assert files_under(purelib) == site_before
    assert files_under(ROOT) == checkout_before
    written = {Path(p).relative_to(user).parts[0] for p in files_under(user)}
    assert written == {"harness.yaml", "verification", ".github", "outputs"}, written

    # the same project through the API (this checkout's harness) gives the CLI's metrics
    from harness import run_case

    cli_run = sorted((user / "outputs/runs/heat/ftcs").iterdir())[0]
    cli_metrics = json.loads((cli_run / "metrics.json").read_text())["metrics"]
    out = run_case("heat/ftcs", overrides=["tracking=none"], project=str(user))
    assert out.verdict == "pass" and out.metrics == cli_metrics
