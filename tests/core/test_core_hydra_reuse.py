"""harness.hydra_reuse: a job's config is the same with Hydra's file loads memoised per process.

The comparison runs in a fresh interpreter: the memo patches Hydra's repository for the whole
process, so the reference compositions must come before it is installed."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent('''
    import json, random, sys, time
    from pathlib import Path
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import OmegaConf
    from harness.cli.main import CONFIG_NAME, register_resolvers
    from harness.core.configs import register_all

    conf, cases, edited, probe = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    register_resolvers(); register_all()
    from hydra import compose
    from hydra.core.config_store import ConfigStore

    def interpolated(choice):  # a default written as an interpolation of another group's choice
        with initialize_config_dir(version_base="1.3", config_dir=str(probe)):
            return OmegaConf.to_container(compose("probe", [f"a={choice}"]))
    out = {"interpolated_plain": [interpolated("one"), interpolated("two")]}
    jobs = [[f"+case={c}", "suite=fast"] for c in cases] + [[f"+case={cases[0]}", "gate=production"]]
    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        loader = GlobalHydra.instance().config_loader()
        base = loader.load_configuration(CONFIG_NAME, ["suite=fast"], RunMode.MULTIRUN)
        text = lambda job: OmegaConf.to_yaml(loader.load_sweep_config(base, job))
        t0 = time.perf_counter()
        out["plain"] = [text(j) for j in jobs]
        out["plain_s"] = (time.perf_counter() - t0) / len(jobs)
        from harness.launch.hydra_reuse import install
        out["installed"] = install()
        out["installed_again"] = install()
        stored = []  # a ConfigStore entry stored again while the process lives is read again
        for value in (1.5, 2.5):
            ConfigStore.instance().store(group="case", name="stored_probe", package="_global_", node={"case": {"params": {"probe": value}}})
            stored.append(OmegaConf.select(loader.load_sweep_config(base, ["+case=stored_probe"]), "case.params.probe"))
            stored.append(OmegaConf.select(loader.load_sweep_config(base, ["+case=stored_probe"]), "case.params.probe"))
        out["stored"] = stored
        from hydra.core.plugins import Plugins
        from hydra.core.singleton import Singleton
        state = Singleton.get_state()  # what the joblib launcher sends with every job
        registry = Plugins.instance()
        order = list(range(len(jobs))) * 2
        random.Random(7).shuffle(order)
        t0 = time.perf_counter()
        memo = {}
        for k in order:  # every job twice, interleaved: no job may see what another one changed
            Singleton.set_state(state)  # as the launcher does before each job
            memo.setdefault(k, []).append(text(jobs[k]))
        out["registry_kept"] = Plugins.instance() is registry
        out["launchers"] = sorted(n for n in Plugins.instance().class_name_to_class if "Launcher" in n)
        out["memo_s"] = (time.perf_counter() - t0) / len(order)
        out["memo"] = [memo[k] for k in range(len(jobs))]
        path = conf / "case" / (edited + ".yaml")  # a file changed while the process lives is read again
        path.write_text(path.read_text().replace("description:", "description: EDITED", 1))
        out["edited"] = text([f"+case={edited}", "suite=fast"])
    out["interpolated_memo"] = [interpolated("one"), interpolated("two")]
    print(json.dumps(out))
''')


def test_memoised_compositions_equal_hydras_own(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    cases = ["dem/energy_conservation", "vessel/surge_quadratic_decay", "load_transfer/uniform_pressure",
             "integrators/hires_ros2", "beam/cantilever_modes", "examples/pendulum"]
    assert all((conf / "case" / f"{c}.yaml").is_file() for c in cases)
    probe = tmp_path / "probe"
    for group, name, body in (("a", "one", "va: 1"), ("a", "two", "va: 2"),
                              ("b", "one_b", "vb: 1"), ("b", "two_b", "vb: 2")):
        (probe / group).mkdir(parents=True, exist_ok=True)
        (probe / group / f"{name}.yaml").write_text(body + "\n")
    (probe / "probe.yaml").write_text("defaults:\n  - a: one\n  - b: ${a}_b\n  - _self_\n")
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(conf), json.dumps(cases), cases[1], str(probe)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["installed"] is True and out["installed_again"] is False
    for k, plain in enumerate(out["plain"]):
        assert out["memo"][k] == [plain, plain], f"job {k}: memoised composition differs from Hydra's"
    assert len(set(out["plain"])) == len(out["plain"])  # the jobs really differ
    assert out["registry_kept"] is True
    assert "hydra._internal.core_plugins.basic_launcher.BasicLauncher" in out["launchers"]
    assert any("JoblibLauncher" in n for n in out["launchers"])
    assert "description: EDITED" in out["edited"] and "description: EDITED" not in out["plain"][1]
    assert out["stored"] == [1.5, 1.5, 2.5, 2.5]
    want = [{"a": {"va": 1}, "b": {"vb": 1}}, {"a": {"va": 2}, "b": {"vb": 2}}]
    assert out["interpolated_plain"] == want and out["interpolated_memo"] == want
    print(f"compose per job: {out['plain_s']:.3f} s plain, {out['memo_s']:.3f} s memoised")
