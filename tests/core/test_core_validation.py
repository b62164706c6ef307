"""The validation study kind (ASME V&V 20): reference data contract, Latin hypercube samples,
and a small sweep end to end (DEM contact time on CONSTRUCTED test data, not measurements)."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from harness.studies import validation
from harness.core.context import HarnessInputError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "validation" / "dem_contact_time_constructed.csv"


def multirun(args, outputs):
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs))
    return subprocess.run([sys.executable, "-m", "harness", "-m", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def write_data(tmp_path: Path, csv: str, meta: dict) -> Path:
    f = tmp_path / "ref.csv"
    f.write_text(csv)
    (tmp_path / "ref.meta.yaml").write_text(yaml.safe_dump(meta))
    return f


def test_latin_hypercube_samples_are_stratified_and_seeded():
    inputs = {"a.b": {"dist": "uniform", "low": 2.0, "high": 4.0},
              "c.d": {"dist": "normal", "mean": 1.0, "std": 0.1}}
    s = validation.lhs_samples(inputs, 5, seed=7)
    u = (s["a.b"] - 2.0) / 2.0
    assert sorted(np.floor(u * 5).astype(int)) == [0, 1, 2, 3, 4]  # one sample per stratum
    from scipy.stats import norm

    assert sorted(np.floor(norm.cdf((s["c.d"] - 1.0) / 0.1) * 5).astype(int)) == [0, 1, 2, 3, 4]
    again = validation.lhs_samples(inputs, 5, seed=7)
    assert np.array_equal(s["a.b"], again["a.b"]) and np.array_equal(s["c.d"], again["c.d"])
    assert not np.array_equal(s["a.b"], validation.lhs_samples(inputs, 5, seed=8)["a.b"])
    with pytest.raises(HarnessInputError, match=r"study.validation.inputs.x.dist: must be normal, uniform or lognormal"):
        validation.lhs_samples({"x": {"dist": "beta"}}, 3, 0)
    with pytest.raises(HarnessInputError, match=r"study.validation.inputs.x: std: required for dist normal"):
        validation.lhs_samples({"x": {"dist": "normal", "mean": 1.0}}, 3, 0)


def test_reference_data_contract(tmp_path):
    ref, meta, cond = validation.load_reference(str(DATA))
    assert cond == ["case.params.v_n"] and meta["constructed"] is True and list(ref["point"]) == ["v1", "v2"]
    good_meta = {"source": "a paper", "constructed": False, "citation": "A. Author (2000), J. 1:1"}
    f = write_data(tmp_path, "point,quantity,D,u_D\np,q,1.0,-0.1\n", good_meta)
    with pytest.raises(HarnessInputError, match=r"ref.csv: column 'u_D': .*greater_than\(0.0\)"):
        validation.load_reference(str(f))
    f = write_data(tmp_path, "point,quantity,D\np,q,1.0\n", good_meta)
    with pytest.raises(HarnessInputError, match=r"ref.csv: column 'u_D': required"):
        validation.load_reference(str(f))
    f = write_data(tmp_path, "point,quantity,D,u_D,v\np,q,1.0,0.1,2\n", good_meta)
    with pytest.raises(HarnessInputError, match=r"column 'v': a condition column must be a dotted config key"):
        validation.load_reference(str(f))
    f = write_data(tmp_path, "point,quantity,D,u_D,a.b\np,q,1.0,0.1,2\np,r,1.0,0.1,3\n", good_meta)
    with pytest.raises(HarnessInputError, match=r"column 'a.b': must be constant within a point"):
        validation.load_reference(str(f))
    f = write_data(tmp_path, "point,quantity,D,u_D\np,q,1.0,0.1\n", {"source": "x", "constructed": False})
    with pytest.raises(HarnessInputError, match=r"ref.meta.yaml: citation: required for measured data"):
        validation.load_reference(str(f))


@pytest.mark.slow
def test_validation_study_end_to_end(harness_env, tracking_uri):
    # 1. solution verification of the contact time in the time step (the README's command)
    res = multirun(["+case=dem/hertz_sphere_wall", "+study=dem/contact_time_steps"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    steps = sorted((harness_env / "sweeps" / "dem" / "hertz_sphere_wall").iterdir())[-1]
    sv = json.loads((steps / "study" / "study.json").read_text())
    assert sv["verdict"] == "pass" and abs(sv["metrics"]["observed_order"] - 2.0) < 0.05
    d = sv["verification"]["duration"]
    t_ref = pd.read_csv(steps / "study" / "table.csv")["duration_ref"].iloc[0]  # Hertz closed form
    assert d["convergence"] == "monotonic" and abs(d["f_extrapolated"] - t_ref) <= d["u_num"]
    cfg = yaml.safe_load((ROOT / "conf" / "study" / "dem" / "contact_time_validation.yaml").read_text())
    # the validation study's u_num_relative is this study's u_num / |f1| (to the 2 digits written)
    assert cfg["study"]["validation"]["u_num_relative"]["contact_time"] == pytest.approx(d["u_num"] / d["f1"], rel=0.02)
    assert cfg["integrator"]["steps_per_contact"] == max(pd.read_csv(steps / "study" / "table.csv")["parameter"])
    from omegaconf import OmegaConf

    v = OmegaConf.create({"u_num_relative": {}, "u_num_study": str(steps)})
    assert validation._u_num_relative(v, "contact_time", "duration")[0] == pytest.approx(d["u_num"] / d["f1"], rel=1e-12)

    # 2. the V&V 20 comparison (the README's command)
    n = 3
    # the README's command, as written
    res = multirun(["+case=dem/hertz_sphere_wall", "+study=dem/contact_time_validation"], harness_env)
    sweep = sorted((harness_env / "sweeps" / "dem" / "hertz_sphere_wall").iterdir())[-1]
    study = json.loads((sweep / "study" / "study.json").read_text())
    assert study["n_jobs"] == 2 * n and study["n_failed"] == 0, res.stdout + res.stderr
    table = pd.read_csv(sweep / "study" / "table.csv")
    val = pd.read_csv(sweep / "study" / "validation.csv")
    ref, meta, _ = validation.load_reference(str(DATA))
    cfg = cfg["study"]["validation"]
    assert cfg["n_samples"] == n
    samples = validation.lhs_samples(cfg["inputs"], n, cfg["seed"])
    band = validation.G.Band.from_mapping(cfg["band"])
    verdicts = []
    for _, r in ref.iterrows():
        jobs = []
        for job in table["job"]:
            c = yaml.safe_load((sweep / str(job) / "config.yaml").read_text())
            if c["validation_sample"]["point"] == r["point"]:
                i = c["validation_sample"]["index"]
                # the job ran at its point's condition and its own Latin hypercube sample
                assert c["case"]["params"]["v_n"] == r["case.params.v_n"]
                assert c["integrator"]["steps_per_contact"] == 400.0
                assert c["source"]["E"] == pytest.approx(samples["source.E"][i], rel=1e-15)
                assert c["case"]["params"]["radius"] == pytest.approx(samples["case.params.radius"][i], rel=1e-15)
                jobs.append(job)
        assert len(jobs) == n
        S = table[table["job"].isin(jobs)]["duration"].to_numpy()
        row = val[val["point"] == r["point"]].iloc[0]
        u_num = cfg["u_num_relative"]["contact_time"] * abs(S.mean())
        u_val = math.sqrt(u_num**2 + S.std(ddof=1) ** 2 + r["u_D"] ** 2)
        E = S.mean() - r["D"]
        assert row["S"] == pytest.approx(S.mean(), rel=1e-12) and row["E"] == pytest.approx(E, rel=1e-9)
        assert row["u_input"] == pytest.approx(S.std(ddof=1), rel=1e-9) and S.std(ddof=1) > 0
        assert row["u_val"] == pytest.approx(u_val, rel=1e-9)
        assert row["E_lo"] == pytest.approx(E - 2.0 * u_val, rel=1e-9) and row["E_hi"] == pytest.approx(E + 2.0 * u_val, rel=1e-9)
        assert row["verdict"] == band.judge(abs(E) / u_val)
        verdicts.append(row["verdict"])
        # the sampled contact times scatter around the Hertz scaling t ~ E^-2/5 R v^-1/5: S within 3 %
        # of the nominal closed form (D / (1 + offset) of the constructed data)
        assert abs(S.mean() / r["D"] - 1.0) < 0.03
    assert study["verdict"] == validation.G.worst(verdicts)
    assert res.returncode == (1 if study["verdict"] == "fail" else 0), res.stdout + res.stderr
    assert study["validation"]["metadata"]["constructed"] is True
    assert (sweep / "study" / "validation.png").stat().st_size > 5000
    assert not (sweep / "study" / "study_metrics.png").exists()
    parent = MlflowClient(tracking_uri).get_run(json.loads((sweep / "study_state.json").read_text())["parent_run_id"])
    assert parent.data.metrics["val_contact_time_v2_E"] == pytest.approx(val.iloc[1]["E"], rel=1e-9)
    assert parent.data.tags["verdict"] == study["verdict"]
    from harness.studies import report

    html = report.build(sweep)
    assert "validation (ASME V&V 20)" in html and "CONSTRUCTED data for tests, not measurements" in html


def test_validation_study_with_bad_data_exits_2_before_any_job(harness_env, tmp_path):
    f = write_data(tmp_path, "point,quantity,D,u_D,case.params.v_n\nv1,contact_time,3e-5,0.0,0.5\n",
                   {"source": "x", "constructed": True})
    res = multirun(["+case=dem/hertz_sphere_wall", "+study=dem/contact_time_validation",
                    f"study.validation.data={f}"], harness_env)
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [l for l in res.stderr.splitlines() if l.startswith("harness: error:")]
    assert len(errors) == 1 and str(f) in errors[0] and "column 'u_D'" in errors[0] and "greater_than(0.0)" in errors[0]
    assert "Launching" not in res.stdout + res.stderr
