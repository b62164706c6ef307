"""What a Slurm job is sent: its config composed by the launching process, without Hydra's config store.

Unpickling the config store made every job import every family module and sympy (about 0.4 s
per job, harness.launch.slurm_launcher); a job's pickle now names only what its own config uses.
"""
from __future__ import annotations

import json
import subprocess
import sys

CASE = "+case=integrators/linear_ros2"

PROBE = """
import pickle, sys
job = pickle.load(open(sys.argv[1], "rb"))
launcher, args = job.function, job.args
cfg = args[5]
print(json.dumps({"composed_n_steps": cfg.integrator.n_steps,
                  "config_loader": launcher.hydra_context.config_loader is not None,
                  "config_store": any(c.__name__ == "ConfigStore" for c in args[4]["instances"]),
                  "modules": sorted(m for m in sys.modules if m == "sympy" or m.startswith("harness.families."))}))
"""


def test_a_job_gets_its_composed_config_and_imports_only_what_it_names(tmp_path, sl, empty_queue):
    out = tmp_path / "out"
    res = sl.harness(["-m", CASE, "integrator.n_steps=50,100", "hydra/launcher=slurm"], out, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    sweep = sl.latest_sweep(out)
    for num, n_steps in ((0, 50), (1, 100)):  # each job ran with its own value and recorded it
        outcome = json.loads((sweep / str(num) / "outcome.json").read_text())
        assert outcome["mlflow_run_id"] and outcome["metrics"]["n_steps"] == n_steps
    pickles = sorted(sweep.glob(".submitit/*_1/*_submitted.pkl"))
    assert len(pickles) == 1, sorted(p.name for p in sweep.glob(".submitit/*/*"))
    probe = subprocess.run([sys.executable, "-c", "import json\n" + PROBE, str(pickles[0])], capture_output=True,
                           text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-3000:]
    got = json.loads(probe.stdout)
    assert got["composed_n_steps"] == 100
    assert not got["config_loader"] and not got["config_store"]
    # the case's family (and the metric kinds it names), no other family, no sympy
    assert set(got["modules"]) == {"harness.families.integrators", "harness.families.metric_kinds"}, got["modules"]
