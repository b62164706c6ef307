"""The README's MLflow section, as a user follows it: run a case, start `mlflow ui` on the
embedded store with the README's command as written, open the README's runs URL in headless
Chromium, and find the runs under "Model training" from the GenAI overview too.

The screenshot of the runs page goes to $HARNESS_TEST_ARTIFACTS (default outputs/test-artifacts)
and, with HARNESS_UPDATE_DOCS=1, to docs/mlflow-runs.png, the image the README shows.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port, wait_text

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("### Looking at runs in MLflow")
    return text[start:text.index("\n### ", start + 10)]


def readme_commands() -> list:
    block = re.search(r"```\n(.*?)```", readme_section(), re.S).group(1)
    return [ln for ln in block.splitlines() if ln.strip()]



@pytest.fixture(scope="module")
def readme_ui(tmp_path_factory):
    """The README's two commands, as written, in a fresh directory: (url, launch dir, case line)."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver")
    run_cmd, ui_cmd = readme_commands()
    assert run_cmd == "python -m harness +case=load_transfer/uniform_pressure"
    assert ui_cmd == "mlflow ui --backend-store-uri sqlite:///$PWD/outputs/mlflow.db"
    launch = tmp_path_factory.mktemp("readme_mlflow")
    bindir = Path(sys.executable).parent  # `python` and `mlflow` of this environment
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_OUTPUTS"}
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}", MLFLOW_PORT=str(free_port()))
    res = subprocess.run(["bash", "-c", run_cmd], cwd=launch, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    log = open(launch / "ui.log", "w")
    proc = subprocess.Popen(["bash", "-c", ui_cmd], cwd=launch, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{env['MLFLOW_PORT']}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (launch / "ui.log").read_text()[-2000:]
                time.sleep(0.5)
        yield url, launch, res.stdout.strip().splitlines()[-1]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_readme_runs_url_shows_the_run_and_model_training_leads_there(readme_ui, browser):
    from mlflow.tracking import MlflowClient

    url, launch, line = readme_ui
    run_id = re.search(r"run=([0-9a-f]{32})", line).group(1)
    client = MlflowClient(f"sqlite:///{launch}/outputs/mlflow.db")
    exp = client.get_experiment_by_name("harness/load_transfer")
    assert client.get_run(run_id).info.experiment_id == exp.experiment_id
    # every experiment of the store keeps its artifacts under outputs/ (Default included)
    for e in client.search_experiments():
        assert e.artifact_location.startswith((launch / "outputs").as_uri() + "/"), (e.name, e.artifact_location)

    documented = re.search(r"^(http://127\.0\.0\.1:5000/\S+)$", readme_section(), re.M).group(1)
    assert documented == "http://127.0.0.1:5000/#/experiments/1/runs?workflowType=machine_learning"
    assert exp.experiment_id == "1"  # the first family recorded in a new store, as the README says
    browser.get(documented.replace("http://127.0.0.1:5000", url))
    text = wait_text(browser, ["load_transfer/uniform_pressure", "matching run", "Model training"])
    assert "harness/load_transfer" in text and re.search(r"\b1 matching runs?\b", text), text[:2000]
    shots = Path(os.environ.get("HARNESS_TEST_ARTIFACTS") or ROOT / "outputs" / "test-artifacts")
    shots.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shots / "mlflow-runs.png"))
    assert (shots / "mlflow-runs.png").stat().st_size > 10_000
    if os.environ.get("HARNESS_UPDATE_DOCS") == "1":
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copy(shots / "mlflow-runs.png", ROOT / "docs" / "mlflow-runs.png")

    # the experiment's default page is the GenAI overview ("No data"); "Model training" shows the runs
    browser.get(f"{url}/#/experiments/{exp.experiment_id}")
    wait_text(browser, ["No data", "Model training"])
    assert "load_transfer/uniform_pressure" not in browser.find_element("tag name", "body").text
    toggle = browser.find_element("xpath", "//*[normalize-space(text())='Model training']")
    browser.execute_script("arguments[0].click()", toggle)  # an assistant popover may cover it
    wait_text(browser, ["load_transfer/uniform_pressure", "matching run"])
    assert f"/experiments/{exp.experiment_id}/runs" in browser.current_url
