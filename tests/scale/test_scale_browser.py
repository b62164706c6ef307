"""Checked in a real browser: headless Chromium (Debian's chromium + chromium-driver, Selenium).

One test opens the MLflow UI of a loopback server holding a recorded sweep (experiment
runs page with the parent expanded, then the run comparison page); the other opens the
HTML report of the sweep and checks that every figure decoded. Screenshots are kept in
$HARNESS_TEST_ARTIFACTS (default outputs/test-artifacts) and on the sweep's parent run.
"""
from __future__ import annotations

import json
import os
import time
import urllib.parse
from pathlib import Path

import pytest

from tests.conftest import wait_text
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]


def artifacts_dir() -> Path:
    d = Path(os.environ.get("HARNESS_TEST_ARTIFACTS") or ROOT / "outputs" / "test-artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_mlflow_ui_shows_parent_children_and_metric_columns(mlflow_server, server_sweep, browser):
    out, sweep, state, _ = server_sweep
    client = MlflowClient(mlflow_server)
    parent = client.get_run(state["parent_run_id"])
    exp = parent.info.experiment_id
    children = client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert len(children) == 4

    # children are named by their overrides (n_rings=4, ...), the parent by the study and case
    names = [f"n_rings={n}" for n in (4, 8, 12, 16)]
    assert sorted(c.info.run_name for c in children) == sorted(names)
    browser.get(f"{mlflow_server}/#/experiments/{exp}/runs")
    text = wait_text(browser, [parent.info.run_name])
    assert not any(f"{n}\n" in text for n in names)  # children folded
    browser.find_element("css selector", "button[data-component-id*=runnamecellrenderer]").click()
    text = wait_text(browser, [parent.info.run_name, *(f"{n}\n" for n in names)])  # the four children under the parent
    shots = artifacts_dir()
    browser.save_screenshot(str(shots / "mlflow_experiment_runs.png"))

    ids = [parent.info.run_id, *(c.info.run_id for c in children)]
    query = urllib.parse.quote(json.dumps(ids))
    browser.get(f"{mlflow_server}/#/compare-runs?runs={query}&experiments={urllib.parse.quote(json.dumps([exp]))}")
    text = wait_text(browser, ["Comparing 5 Runs", "Metrics", "e_F", "e_J", "sign_violation", "F_M_max"])
    for rid in ids:
        assert rid[:20] in browser.page_source
    assert parent.info.run_name in text
    browser.save_screenshot(str(shots / "mlflow_compare_runs.png"))
    for name in ("mlflow_experiment_runs.png", "mlflow_compare_runs.png"):
        assert (shots / name).stat().st_size > 10_000
        client.log_artifact(parent.info.run_id, str(shots / name), artifact_path="browser")
    assert {a.path for a in client.list_artifacts(parent.info.run_id, "browser")} == {
        "browser/mlflow_experiment_runs.png", "browser/mlflow_compare_runs.png"}


def test_html_report_of_the_sweep_loads_every_figure(server_sweep, browser, sc):
    out, sweep, _, _ = server_sweep
    res = sc.harness([str(sweep)], out, module="harness.report")
    assert res.returncode == 0, res.stderr
    report = Path(res.stdout.strip())
    assert report == sweep / "report.html"
    pngs = list((sweep / "study").glob("*.png")) + list(sweep.glob("[0-9]*/*.png"))
    assert len(pngs) >= 8  # force.png and fig_force_error.png of four jobs
    browser.get(report.as_uri())
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = browser.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight])")
        if state and all(c for _, c, _, _ in state):
            break
        time.sleep(0.3)
    assert len(state) == len(pngs)
    assert sorted(alt for alt, *_ in state) == sorted(p.name for p in pngs)
    assert all(w > 100 and h > 100 for _, _, w, h in state), state  # each figure decoded
    verdicts = browser.execute_script(
        "return Array.from(document.querySelectorAll('[data-verdict]')).map(e => e.dataset.verdict)")
    assert verdicts.count("pass") == 1 + 4  # the study and its four jobs
    text = browser.find_element("tag name", "body").text
    assert "sign_violation" in text and "SHA-256" in text
    manifest = json.loads((sweep / "0" / "manifest.json").read_text())
    assert manifest["config_sha256"] in browser.page_source
    browser.save_screenshot(str(artifacts_dir() / "html_report.png"))
