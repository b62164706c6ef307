"""Small, in-process checks of the scale helpers: progress, figures, pins, job count, report."""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from harness.core import figures
from harness.core import progress
from harness.studies import report
from harness.studies import aggregate as studies

PNG = b"\x89PNG\r\n\x1a\n"


def test_progress_is_quiet_in_ci_and_forced_on_by_the_variable(monkeypatch):
    monkeypatch.delenv("HARNESS_PROGRESS", raising=False)
    monkeypatch.setenv("CI", "1")
    assert not progress.enabled(io.StringIO())
    monkeypatch.setenv("HARNESS_PROGRESS", "1")
    buf = io.StringIO()
    with progress.Bar(10, "steps", stream=buf, min_interval_s=0.0) as bar:
        bar.update(5)
    assert "[" + "#" * 14 + "." * 14 + "]  5/10" in buf.getvalue() and buf.getvalue().endswith("\n")
    monkeypatch.setenv("HARNESS_PROGRESS", "0")
    quiet = io.StringIO()
    with progress.Bar(10, "steps", stream=quiet) as bar:
        bar.update(10)
    assert quiet.getvalue() == ""


def test_loglog_slope_recovers_a_power_law():
    h = np.array([0.4, 0.2, 0.1, 0.05])
    assert figures.loglog_slope(h, 3.0 * h ** 2.0) == pytest.approx(2.0, abs=1e-12)
    assert figures.loglog_slope(1.0 / h, 7.0 * h ** 1.5) == pytest.approx(-1.5, abs=1e-12)
    assert np.isnan(figures.loglog_slope([1.0], [1.0]))


def test_load_transfer_figure_from_the_run_directory(tmp_path):
    edges = np.linspace(0.0, 1.0, 6)
    F_B = np.sin(edges[1:]) + 1.0
    (tmp_path / "forces.json").write_text(json.dumps({"t_edges": edges.tolist(), "F_M": (F_B * (1 + 1e-9)).tolist(),
                                                      "F_B": F_B.tolist()}))
    written = figures.for_run("load_transfer", tmp_path)
    assert written == [tmp_path / "fig_force_error.png"]
    assert written[0].read_bytes()[:8] == PNG
    (tmp_path / "empty").mkdir()
    assert figures.for_run("load_transfer", tmp_path / "empty") == []


def test_study_figure_and_no_figure_without_parameter(tmp_path):
    n = np.array([4.0, 8.0, 16.0])
    table = pd.DataFrame({"job": [0, 1, 2], "case": "c", "status": "ok", "verdict": "pass", "mlflow_run_id": "",
                          "parameter": n, "e_F": 2.0 / n ** 2})
    study = OmegaConf.create({"name": "s", "metric": "e_F", "parameter": "source.n_rings"})
    assert figures.for_study(table, study, tmp_path, gated=["e_F"]) == [tmp_path / "study_metrics.png"]
    assert (tmp_path / "study_metrics.png").read_bytes()[:8] == PNG
    assert figures.for_study(table.drop(columns="parameter"), study, tmp_path / "x") == []


def test_pins_reach_the_job_composition_and_jobs_are_counted():
    cfg = OmegaConf.create({"hydra": {"overrides": {"task": ["+case=x", "a=1,2,3", "b=range(4)"], "hydra": []},
                                      "sweeper": {"params": {"c": "5,6"}}}})
    OmegaConf.set_readonly(cfg, True)
    assert studies.count_jobs(cfg) == 3 * 4 * 2
    studies.pin_for_workers(cfg, {"tracking.uri": "http://127.0.0.1:5000", "paths.outputs": "/tmp/a b",
                                  "hydra.job.env_set.HARNESS_PARENT_RUN_ID": "abc"})
    assert list(cfg.hydra.overrides.hydra) == ["++tracking.uri=http://127.0.0.1:5000", "++paths.outputs='/tmp/a b'",
                                               "++hydra.job.env_set.HARNESS_PARENT_RUN_ID=abc"]
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(cfg.hydra.overrides.hydra))
    assert [o.value() for o in parsed] == ["http://127.0.0.1:5000", "/tmp/a b", "abc"]


def test_report_of_a_run_directory_is_self_contained(tmp_path):
    (tmp_path / "metrics.json").write_text(json.dumps({
        "case": "fam/<case>", "verdict": "warn", "status": "ok", "metrics": {"e_F": 0.015, "n": 3.0},
        "gates": {"e_F": {"verdict": "warn", "band": {"pass_max": 0.01, "warn_max": 0.02}}}}))
    (tmp_path / "manifest.json").write_text(json.dumps({"config_sha256": "f" * 64, "git": {"commit": "abc"},
                                                        "outputs": [{"path": "metrics.json", "size": 1,
                                                                     "sha256": "e" * 64}], "timings_s": {"run": 0.5}}))
    (tmp_path / "a.png").write_bytes(PNG + b"0" * 10)
    text = report.build(tmp_path)
    assert "fam/&lt;case&gt;" in text and 'data-verdict="warn"' in text
    assert 'src="data:image/png;base64,' in text and "a.png" in text
    assert "f" * 64 in text and "e" * 64 in text and "not judged" in text
    assert "http" not in text.replace("http-equiv", "")  # nothing fetched from anywhere
    with pytest.raises(FileNotFoundError):
        report.build(tmp_path / "nothing")


def test_vessel_trajectory_and_work_precision_figures(tmp_path):
    t = np.linspace(0.0, 10.0, 50)
    q = np.stack([2.0 * t, np.sin(t), np.zeros_like(t)], axis=1)
    (tmp_path / "trajectory.json").write_text(json.dumps({"t": t.tolist(), "q": q.tolist()}))
    (tmp_path / "metrics.json").write_text(json.dumps({"metrics": {}}))  # records are not trajectories
    assert figures.for_run("vessel", tmp_path) == [tmp_path / "fig_trajectory.png"]
    rows = [{"problem": "hires", "variant": v, "rtol": r, "wall": w, "scd": s}
            for v in ("ros2", "radau") for r, w, s in ((1e-3, 0.01, 3.0), (1e-6, 0.1, 6.0))]
    (tmp_path / "bench.json").write_text(json.dumps(rows))
    assert figures.for_run("integrators", tmp_path) == [tmp_path / "fig_work_precision.png"]
    assert (tmp_path / "fig_work_precision.png").read_bytes()[:8] == PNG
