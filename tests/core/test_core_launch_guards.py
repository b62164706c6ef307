"""harness.launch: every use of another library's internals is checked before it is made.

For each module: with its check failing (what it touches taken away, or ``HARNESS_PLAIN_PATHS``)
the library is left as it is and one DEBUG line says so, however often it is asked; with the check
passing the change is in place. A patch stays for the life of its process, so each of these runs
in a fresh interpreter; the joblib launcher with every plain path forced runs the real CLI.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAIN = "the library's plain path is used"

PRELUDE = '''
import importlib, inspect, json, logging, os, sys
records = []

class _Keep(logging.Handler):
    def emit(self, record):
        records.append([record.levelname, record.getMessage()])

_g = logging.getLogger("harness.launch.guard")
_g.setLevel(logging.DEBUG)
_g.addHandler(_Keep())
_g.propagate = False
from harness.launch import guard
out = {}

def lines():
    got = list(records)
    records.clear()
    return got

def snapshot(touched):
    """What each (object, attribute) holds, as stored (a staticmethod as itself)."""
    return [id(inspect.getattr_static(o, n)) for o, n in touched]

def three_ways(name, install, touched, take_away):
    """install() twice with HARNESS_PLAIN_PATHS=name, twice with take_away() in effect, once plainly."""
    res, before = {}, snapshot(touched)
    os.environ["HARNESS_PLAIN_PATHS"] = name
    res["env"] = [install(), install()]
    res["env_untouched"] = snapshot(touched) == before
    res["env_lines"] = lines()
    del os.environ["HARNESS_PLAIN_PATHS"]
    guard._REFUSED.clear()  # as a new process would start
    undo = take_away()
    res["check"] = [install(), install()]
    undo()
    res["check_untouched"] = snapshot(touched) == before
    res["check_lines"] = lines()
    guard._REFUSED.clear()
    res["applied"] = install()
    res["changed"] = [a != b for a, b in zip(snapshot(touched), before)]
    res["applied_lines"] = lines()
    return res
'''


def probe(*bodies: str) -> dict:
    """Run ``bodies`` after PRELUDE in a fresh interpreter; its ``out`` dict."""
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_PLAIN_PATHS"}
    code = PRELUDE + "".join(textwrap.dedent(b) for b in bodies) + "\nprint(json.dumps(out))\n"
    res = subprocess.run([sys.executable, "-c", code],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def assert_guarded(res: dict, name: str, reason: str) -> None:
    """Refused twice each way with the library untouched and one DEBUG line; then applied."""
    for way, why in (("env", "HARNESS_PLAIN_PATHS asks for the plain path"), ("check", reason)):
        assert res[way] == [False, False], way
        assert res[f"{way}_untouched"] is True, way
        assert len(res[f"{way}_lines"]) == 1, res[f"{way}_lines"]
        level, message = res[f"{way}_lines"][0]
        assert level == "DEBUG" and message.startswith(f"{name}: {PLAIN} (") and why in message, message
    assert res["applied"] is True
    assert res["changed"] and all(res["changed"]), res["changed"]
    assert res["applied_lines"] == []


def test_hydra_reuse_is_checked_before_it_patches_hydra():
    out = probe('''
        from hydra._internal import config_repository as cr, defaults_list as dl
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from hydra.core.singleton import Singleton
        from omegaconf import _utils, base
        from harness.launch import fast_yaml, hydra_reuse, node_copy
        node_copy.install = fast_yaml.install = lambda: False  # their own checks: tested below
        touched = [(cr.ConfigRepository, "load_config"), (cr.CachingConfigRepository, "__init__"),
                   (Singleton, "set_state"), (OverridesParser, "parse_rule"), (dl, "_create_interpolation_map"),
                   (base, "parse"), (_utils, "parse")]

        def take_away():
            kept = dl._create_interpolation_map
            del dl._create_interpolation_map
            return lambda: setattr(dl, "_create_interpolation_map", kept)

        out.update(three_ways("hydra_reuse", hydra_reuse.install, touched, take_away))
        out["again"] = hydra_reuse.install()
    ''')
    assert_guarded(out, "hydra_reuse", "has no attribute '_create_interpolation_map'")
    assert out["again"] is False  # installed once per process


def test_hydra_reuse_refuses_a_changed_signature():
    out = probe('''
        from hydra._internal import config_repository as cr
        from harness.launch import fast_yaml, hydra_reuse, node_copy
        node_copy.install = fast_yaml.install = lambda: False
        plain = cr.ConfigRepository.load_config
        cr.ConfigRepository.load_config = lambda self, config_path, strict: plain(self, config_path)
        changed = cr.ConfigRepository.load_config
        out["installed"] = hydra_reuse.install()
        out["untouched"] = cr.ConfigRepository.load_config is changed
        out["lines"] = lines()
    ''')
    assert out["installed"] is False and out["untouched"] is True
    assert len(out["lines"]) == 1 and "load_config(self, config_path, strict) is not (self, config_path)" in \
        out["lines"][0][1]


def test_node_copy_is_checked_before_it_patches_omegaconf():
    out = probe('''
        from omegaconf import DictConfig, ListConfig, OmegaConf, base
        from harness.launch import node_copy

        def take_away():
            kept = base.Metadata
            del base.Metadata
            return lambda: setattr(base, "Metadata", kept)

        out.update(three_ways("node_copy", node_copy.install, [(DictConfig, "__deepcopy__"),
                                                               (ListConfig, "__deepcopy__")], take_away))
        out["by_pickle"] = getattr(DictConfig.__deepcopy__, "harness_pickle", False)
    ''')
    assert_guarded(out, "node_copy", "omegaconf.base has no Metadata")
    assert out["by_pickle"] is True


def test_fast_yaml_is_checked_before_it_patches_hydra():
    out = probe('''
        import yaml
        from hydra.core import utils
        from harness.launch import fast_yaml

        def take_away():  # a PyYAML built without libyaml
            yaml.__with_libyaml__ = False
            return lambda: setattr(yaml, "__with_libyaml__", True)

        out.update(three_ways("fast_yaml", fast_yaml.install, [(utils, "_save_config")], take_away))
        out["ours"] = utils._save_config is fast_yaml._save_config
    ''')
    assert_guarded(out, "fast_yaml", "PyYAML has no libyaml")
    assert out["ours"] is True


def test_worker_gc_is_checked_before_it_sets_lokys_interval():
    out = probe('''
        from harness.launch import worker_gc
        out["not_a_worker"] = [worker_gc.space_loky_collections(), lines()]  # loky not imported: nothing to do
        import joblib.externals.loky.process_executor as pe

        def take_away():
            kept = pe._MEMORY_LEAK_CHECK_DELAY
            del pe._MEMORY_LEAK_CHECK_DELAY
            return lambda: setattr(pe, "_MEMORY_LEAK_CHECK_DELAY", kept)

        out["before"] = pe._MEMORY_LEAK_CHECK_DELAY
        out.update(three_ways("worker_gc", worker_gc.space_loky_collections,
                              [(pe, "_MEMORY_LEAK_CHECK_DELAY")], take_away))
        out["after"] = pe._MEMORY_LEAK_CHECK_DELAY
    ''')
    assert out["not_a_worker"] == [False, []]
    assert_guarded(out, "worker_gc", "_MEMORY_LEAK_CHECK_DELAY is None, not a number of seconds")
    assert out["before"] == 1.0 and out["after"] == 60.0


JOBLIB = '''
from harness.launch import joblib_shared
CORE = joblib_shared.CORE

def launch_after_import():
    """Import the joblib launcher's module anew with the hook in place: is its launch ours?"""
    sys.modules.pop(CORE, None)
    out.setdefault("hooked", []).append(joblib_shared.install())
    core = importlib.import_module(CORE)
    return bool(getattr(core.launch, "harness_shared", False)) and core.launch.__module__ == joblib_shared.__name__

def hydras_own(core):
    return core.launch.__module__ == CORE and core.launch.__code__.co_filename.endswith("_core.py")

def hide(*names):
    """Make modules unimportable (as if not installed), from their parent package too; returns the undo."""
    kept = []
    for name in names:
        parent, _, leaf = name.rpartition(".")
        holder = sys.modules.get(parent) if parent else None
        kept.append((name, sys.modules.get(name), holder, getattr(holder, leaf, None)))
        sys.modules[name] = None
        if holder is not None and hasattr(holder, leaf):
            delattr(holder, leaf)

    def undo():
        for name, module, holder, attr in kept:
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module
            if attr is not None:
                setattr(holder, name.rpartition(".")[2], attr)
    return undo
'''


def test_joblib_shared_is_checked_when_the_launcher_is_imported():
    out = probe(JOBLIB, '''
        os.environ["HARNESS_PLAIN_PATHS"] = "joblib_shared"
        out["env"] = [launch_after_import(), launch_after_import()]
        out["env_plain"] = hydras_own(sys.modules[CORE])
        out["env_lines"] = lines()
        del os.environ["HARNESS_PLAIN_PATHS"]
        guard._REFUSED.clear()
        undo = hide("cloudpickle", "joblib.externals.cloudpickle")  # neither importable
        out["check"] = [launch_after_import(), launch_after_import()]
        out["check_plain"] = hydras_own(sys.modules[CORE])
        out["check_installed_again"] = joblib_shared.install()  # the module is there: checked now
        out["check_lines"] = lines()
        undo()
        guard._REFUSED.clear()
        out["applied"] = launch_after_import()
        out["applied_lines"] = lines()
    ''')
    assert out["hooked"] == [True] * 5  # the import hook is in place each time; the check decides
    assert out["env"] == [False, False] and out["env_plain"] is True
    assert out["check"] == [False, False] and out["check_plain"] is True and out["check_installed_again"] is False
    for way, why in (("env", "HARNESS_PLAIN_PATHS asks"), ("check", "neither the cloudpickle package nor")):
        assert len(out[f"{way}_lines"]) == 1, out[f"{way}_lines"]
        level, message = out[f"{way}_lines"][0]
        assert level == "DEBUG" and message.startswith(f"joblib_shared: {PLAIN} (") and why in message, message
    assert out["applied"] is True and out["applied_lines"] == []


def test_joblib_shared_takes_cloudpickle_from_its_own_package():
    """joblib >= 1.6 ships no ``joblib.externals.cloudpickle``: the package is used, joblib's copy
    only where the package is missing, and the shared state is pickled all the same."""
    out = probe(JOBLIB, '''
        import cloudpickle, joblib  # joblib < 1.6 imports its own copy with itself
        out["own"] = joblib_shared._cloudpickle() is cloudpickle
        undo = hide("joblib.externals.cloudpickle")  # as joblib 1.6
        out["joblib16"] = joblib_shared._cloudpickle() is cloudpickle
        out["joblib16_applied"] = launch_after_import()
        state = joblib_shared.SharedState.pack({"a": 1}, None, lambda x: x + 1, {"instances": {}})
        out["round_trip"] = state.unpack()[2](1)
        undo()
        hide("cloudpickle")  # no package: joblib < 1.6's own copy
        out["vendored"] = joblib_shared._cloudpickle().__name__
        out["lines"] = lines()
    ''')
    assert out["own"] is True and out["joblib16"] is True and out["joblib16_applied"] is True
    assert out["round_trip"] == 2
    assert out["vendored"] == "joblib.externals.cloudpickle"
    assert out["lines"] == []


def test_suite_sweeper_falls_back_to_hydras_basic_sweeper():
    """Refused, :func:`register` names Hydra's basic sweeper (what the config had) and enters nothing
    in Hydra's plugin registry; applied, the registry holds the subclass under its name."""
    out = probe('''
        from hydra.core.plugins import Plugins
        from harness.launch import hydra_sweeps, suite_sweeper
        registry = Plugins.instance().class_name_to_class
        Basic = hydra_sweeps.basic_sweeper()
        names = out.setdefault("names", [])

        class Entry:  # the registry's entry for the suite sweeper, as an attribute three_ways can watch
            pass

        def install():
            names.append(suite_sweeper.register())
            Entry.value = registry.get(suite_sweeper.NAME)
            return names[-1] == suite_sweeper.NAME

        def take_away():  # a Hydra whose sweep no longer validates through validate_batch_is_legal
            kept = Basic.sweep
            Basic.sweep = lambda self, arguments: None
            return lambda: setattr(Basic, "sweep", kept)

        Entry.value = registry.get(suite_sweeper.NAME)
        out.update(three_ways("suite_sweeper", install, [(Entry, "value")], take_away))
        out["registered"] = registry.get(suite_sweeper.NAME) is suite_sweeper.SuiteSweeper
        out["subclass"] = issubclass(suite_sweeper.SuiteSweeper, Basic)
    ''')
    assert_guarded(out, "suite_sweeper", "BasicSweeper.sweep no longer calls split_arguments, validate_batch_is_legal")
    assert out["names"] == ["hydra._internal.core_plugins.basic_sweeper.BasicSweeper"] * 4 + \
        ["hydra_plugins.harness_suite_sweeper.SuiteSweeper"]
    assert out["registered"] is True and out["subclass"] is True


def test_suite_sweeper_leaves_the_registry_alone_when_refused():
    out = probe('''
        from hydra.core.plugins import Plugins
        from harness.launch import suite_sweeper
        os.environ["HARNESS_PLAIN_PATHS"] = "suite_sweeper"
        before = dict(Plugins.instance().class_name_to_class)
        out["name"] = suite_sweeper.register()
        out["same_registry"] = Plugins.instance().class_name_to_class == before
        out["lines"] = lines()
    ''')
    assert out["name"] == "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
    assert out["same_registry"] is True and len(out["lines"]) == 1


def test_sample_sweeper_names_the_hydra_it_cannot_extend():
    """A validation study has no plain path: a changed basic sweeper is an error naming the installed
    hydra-core, the registry untouched; ``HARNESS_PLAIN_PATHS`` does not concern it."""
    out = probe('''
        from importlib.metadata import version
        from hydra.core.plugins import Plugins
        from harness.launch import hydra_sweeps, sample_sweeper
        registry = Plugins.instance().class_name_to_class
        Basic = hydra_sweeps.basic_sweeper()
        kept = inspect.getattr_static(Basic, "split_overrides_to_chunks")
        Basic.split_overrides_to_chunks = staticmethod(lambda lst, n, m: lst)
        try:
            sample_sweeper.register()
            out["error"] = None
        except sample_sweeper.SweeperUnavailable as exc:
            out["error"] = str(exc)
        out["untouched"] = sample_sweeper.NAME not in registry
        Basic.split_overrides_to_chunks = kept
        out["hydra"] = version("hydra-core")
        os.environ["HARNESS_PLAIN_PATHS"] = "all"
        out["name"] = sample_sweeper.register()
        out["registered"] = registry.get(sample_sweeper.NAME) is sample_sweeper.SampleSweeper
        sweeper = sample_sweeper.SampleSweeper(max_batch_size=None, params=None, samples=[["s=1"], ["s=2"]])
        from hydra.core.override_parser.overrides_parser import OverridesParser
        parsed = OverridesParser.create().parse_overrides(["a=1,2"])
        out["jobs"] = sweeper.split_arguments(parsed, None)
        out["lines"] = lines()
    ''')
    assert out["error"] is not None and f"hydra-core {out['hydra']}" in out["error"]
    assert "split_overrides_to_chunks(lst, n, m) is not (lst, n)" in out["error"]
    assert out["untouched"] is True
    assert out["name"] == "hydra_plugins.harness_sample_sweeper.SampleSweeper" and out["registered"] is True
    assert out["jobs"] == [[["a=1", "s=1"], ["a=1", "s=2"], ["a=2", "s=1"], ["a=2", "s=2"]]]
    assert out["lines"] == []


@pytest.fixture
def fresh_guard(monkeypatch, caplog):
    """The guard as in a new process, its DEBUG lines captured."""
    from harness.launch import guard

    monkeypatch.setattr(guard, "_REFUSED", {})
    monkeypatch.delenv("HARNESS_PLAIN_PATHS", raising=False)
    caplog.set_level(logging.DEBUG, logger="harness.launch.guard")
    return caplog


def _guard_lines(caplog):
    return [r for r in caplog.records if r.name == "harness.launch.guard"]


def test_count_jobs_uses_the_basic_sweeper_or_says_it_cannot_tell(fresh_guard, monkeypatch):
    from harness.launch import hydra_sweeps

    overrides = ["+case=x", "a=1,2,3", "b=range(4)"]
    assert hydra_sweeps.count_jobs(overrides) == 12
    assert _guard_lines(fresh_guard) == []
    monkeypatch.setattr(hydra_sweeps.basic_sweeper(), "split_arguments", staticmethod(lambda overrides: [[]]))
    assert hydra_sweeps.count_jobs(overrides) is None
    assert hydra_sweeps.count_jobs(overrides) is None
    lines = _guard_lines(fresh_guard)
    assert len(lines) == 1 and lines[0].levelno == logging.DEBUG
    assert lines[0].getMessage().startswith(f"hydra_sweeps: {PLAIN} (BasicSweeper.split_arguments(overrides)")


def test_count_jobs_of_a_study_is_unknown_on_the_plain_path(fresh_guard, monkeypatch):
    from omegaconf import OmegaConf

    from harness.studies.aggregate import count_jobs

    cfg = OmegaConf.create({"hydra": {"overrides": {"task": ["+case=x", "a=1,2,3"]}, "sweeper": {"params": {"c": "5,6"}}}})
    assert count_jobs(cfg) == 6
    monkeypatch.setenv("HARNESS_PLAIN_PATHS", "hydra_sweeps")
    assert count_jobs(cfg) is None
    assert len(_guard_lines(fresh_guard)) == 1


def test_ray_worker_answer_without_ray(fresh_guard, monkeypatch):
    import types

    from harness.launch import ray_worker

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    assert ray_worker.in_ray_worker() is False
    fake = types.ModuleType("ray")
    fake.is_initialized = lambda: False
    monkeypatch.setitem(sys.modules, "ray", fake)
    assert ray_worker.in_ray_worker() is False and ray_worker.plain_in_ray_worker() is False
    assert _guard_lines(fresh_guard) == []  # nothing to ask Ray: no check, no line
    fake.is_initialized = lambda: True  # a Ray without ray._private.worker: the environment decides
    monkeypatch.delitem(sys.modules, "ray._private", raising=False)
    monkeypatch.delitem(sys.modules, "ray._private.worker", raising=False)
    monkeypatch.setenv("RAY_RAYLET_PID", "12345")
    assert ray_worker.in_ray_worker() is True
    monkeypatch.delenv("RAY_RAYLET_PID")
    assert ray_worker.in_ray_worker() is False
    lines = _guard_lines(fresh_guard)
    assert len(lines) == 1 and lines[0].getMessage().startswith(f"ray_worker: {PLAIN} (")


RAY = '''
import os, shutil, tempfile, ray
tmp = tempfile.mkdtemp(prefix="rayg", dir="/tmp")  # short: Ray's socket paths are length-limited
try:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False, _temp_dir=tmp)

    def answers():
        import os
        from harness.launch import guard, ray_worker
        private = ray_worker.in_ray_worker()
        os.environ["HARNESS_PLAIN_PATHS"] = "ray_worker"
        plain = ray_worker.in_ray_worker()
        del os.environ["HARNESS_PLAIN_PATHS"]
        return [private, plain, sorted(guard.refused())]

    out["driver"] = answers()
    out["worker"] = ray.get(ray.remote(answers).remote())
    ray.shutdown()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
'''


def test_ray_worker_private_and_public_answers_agree_in_a_real_ray(tmp_path, monkeypatch):
    """A local Ray (one CPU, no dashboard, a private home and temp dir): the driver is no worker and
    a task's process is one, by Ray's private worker mode and by the public fallback alike."""
    pytest.importorskip("ray")
    monkeypatch.setenv("HOME", str(tmp_path))  # nothing of Ray's in the real home
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = probe(RAY)
    assert out["driver"] == [False, False, ["ray_worker"]]
    assert out["worker"] == [True, True, ["ray_worker"]]


# -- the joblib launcher with every plain path forced: Hydra's own launcher, the same results -----

SWEEP = ["-m", "+case=load_transfer/sign", "operator.surface.resolution=4", "source.n_rings=4,5",
         "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "tracking=none", "hydra.verbose=harness.launch.guard"]
GUARDED = ("hydra_reuse", "node_copy", "fast_yaml", "worker_gc")  # what each job's process checks
TIMES = ("assembly_seconds",)  # wall-clock metrics: differ between any two runs


def _sweep(outputs: Path, plain: bool):
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_PLAIN_PATHS"}
    env["HARNESS_OUTPUTS"] = str(outputs)
    if plain:
        env["HARNESS_PLAIN_PATHS"] = "all"
    res = subprocess.run([sys.executable, "-m", "harness", *SWEEP], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    sweep = next((outputs / "sweeps" / "load_transfer" / "sign").iterdir())
    jobs = []
    for j in (0, 1):
        o = json.loads((sweep / str(j) / "outcome.json").read_text())
        jobs.append({"verdict": o["verdict"], "status": o["status"], "gates": o["gates"],
                     "metrics": {k: v for k, v in o["metrics"].items() if k not in TIMES}})
    logs = [(sweep / str(j) / "main.log").read_text() for j in (0, 1)]
    return res.stdout + res.stderr, jobs, logs, json.loads((sweep / "study" / "study.json").read_text())


def test_joblib_sweep_on_the_plain_paths_runs_hydras_launcher_with_the_same_results(tmp_path):
    """``HARNESS_PLAIN_PATHS=all``: Hydra's own joblib launcher (its log line has no shared state),
    every job's process on Hydra's and OmegaConf's plain paths; verdicts and metrics as with them."""
    fast_log, fast_jobs, fast_job_logs, fast_study = _sweep(tmp_path / "fast", plain=False)
    plain_log, plain_jobs, plain_job_logs, plain_study = _sweep(tmp_path / "plain", plain=True)

    assert "is launching 2 jobs (shared state" in fast_log and PLAIN not in fast_log
    assert not any(PLAIN in log for log in fast_job_logs)
    assert "is launching 2 jobs\n" in plain_log and "shared state" not in plain_log
    assert plain_log.count(f"joblib_shared: {PLAIN} (HARNESS_PLAIN_PATHS") == 1
    for name in GUARDED:  # once per worker process that ran a job, in that job's log
        counts = [log.count(f"{name}: {PLAIN} (HARNESS_PLAIN_PATHS") for log in plain_job_logs]
        assert counts[0] == 1 and counts[1] <= 1, (name, counts)

    assert [j["verdict"] for j in fast_jobs] == ["pass", "pass"] and plain_jobs == fast_jobs
    assert fast_jobs[0]["metrics"] != fast_jobs[1]["metrics"]  # the two jobs really differ
    assert plain_study["verdict"] == fast_study["verdict"] == "pass"
