"""Suite selection, listing, per-case overrides, regression bands, run names: in process."""
from __future__ import annotations

import math

import pytest
from omegaconf import OmegaConf

from harness.suites.catalogue import KNOWN_TAGS, CaseInfo, catalogue
from harness.core.context import HarnessInputError


def suite_cfg(**select):
    from harness.core.configs import SuiteConf

    cfg = OmegaConf.structured(SuiteConf(name="t"))
    for k, v in select.items():
        if k == "overrides":
            cfg.overrides = v
        else:
            cfg.select[k] = v
    return cfg


CATALOGUE = [CaseInfo("a/one", "a", ("fast", "analytic")), CaseInfo("a/two", "a", ("slow", "peer")),
             CaseInfo("b/sub/three", "b", ("fast", "peer")), CaseInfo("bench/four", "bench", ("bench", "slow"))]


def names(cases):
    return [c.name for c in cases]


def test_every_case_file_carries_tags_from_the_vocabulary():
    cases = catalogue()
    assert len(cases) >= 70
    for c in cases:
        assert set(c.tags) & set(KNOWN_TAGS), c.name
        assert not ({"fast", "slow"} <= set(c.tags)), c.name
        if c.name.startswith("bench/"):
            assert {"bench", "slow"} <= set(c.tags), c.name
        if "kratos" in c.name:
            assert "kratos" in c.tags, c.name


@pytest.mark.parametrize("select, expected", [
    ({}, ["a/one", "a/two", "b/sub/three", "bench/four"]),
    ({"tags": ["fast"]}, ["a/one", "b/sub/three"]),
    ({"tags": ["fast", "peer"]}, ["b/sub/three"]),
    ({"any_tags": ["analytic", "bench"]}, ["a/one", "bench/four"]),
    ({"exclude_tags": ["slow"]}, ["a/one", "b/sub/three"]),
    ({"families": ["a"]}, ["a/one", "a/two"]),
    ({"cases": ["b/*"]}, ["b/sub/three"]),  # * spans the nested folder
    ({"cases": ["a/two", "bench/four"], "exclude": ["bench/*"]}, ["a/two"]),
])
def test_selection_rules(select, expected):
    from harness.suites.suite import select as sel

    assert names(sel(suite_cfg(**select), CATALOGUE)) == expected


@pytest.mark.parametrize("select, message", [
    ({"tags": ["fsat"]}, "conf/suite/t.yaml: suite.select.tags: unknown tag 'fsat'"),
    ({"families": ["c"]}, "suite.select.families: unknown family 'c' (families: a, b, bench)"),
    ({"cases": ["a/three"]}, "suite.select.cases: 'a/three' matches no case"),
    ({"tags": ["kratos"]}, "suite.select: selects no case"),
    ({"overrides": {"c/*": ["x=1"]}}, "suite.overrides: 'c/\\*' matches no case"),
])
def test_bad_selection_is_one_clear_error(select, message):
    from harness.suites.suite import select as sel

    with pytest.raises(HarnessInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sel(suite_cfg(**select), CATALOGUE)


def test_shipped_suites(capsys):
    from harness.cli.main import main
    from harness.core.compose import compose
    from harness.suites.suite import select

    all_cases = catalogue()
    picked = {s: names(select(compose([f"suite={s}"]).suite)) for s in ("default", "fast", "all", "nightly", "smoke")}
    # every case but the ones that need a running tracking server (README, Team set-up) or a Slurm
    # cluster, and the one that needs an accepted baseline of another case in the store
    needs = {"bench/tracking_server", "bench/slurm_overhead", "examples/pendulum_regression"}
    assert picked["all"] == picked["nightly"] == [n for n in names(all_cases) if n not in needs]
    assert "examples/pendulum_regression" not in picked["fast"]
    assert len(picked["default"]) == 10 and set(picked["default"]) <= set(picked["fast"])
    assert all("fast" in c.tags and "bench" not in c.tags for c in all_cases if c.name in picked["fast"])
    assert main(["--list", "suite=smoke"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("suite smoke: 3 cases")
    assert out[1].split() == ["dem/linear_spring_impact", "[fast,", "analytic]"]
    assert main(["--list", "suite=fast", "suite.select.tags=[fsat]"]) == 2
    assert "unknown tag 'fsat'" in capsys.readouterr().err


def test_per_case_overrides_apply_values_and_refuse_the_rest():
    from harness.core.compose import compose
    from harness.suites.suite import _apply_overrides, case_overrides

    cfg = compose(["+case=load_transfer/sign", "suite=all"])
    cfg.suite.overrides = {"load_transfer/*": ["source.n_rings=7"], "load_transfer/sign": ["+case.params.extra=1"]}
    ov = case_overrides(cfg.suite, "load_transfer/sign")
    assert ov == ["source.n_rings=7", "+case.params.extra=1"] and case_overrides(cfg.suite, "dem/x") == []
    _apply_overrides(cfg, ov, "load_transfer/sign")
    assert cfg.source.n_rings == 7 and cfg.case.params.extra == 1
    for bad, words in [("source.n_ringz=3", "source.n_ringz: no such key"), ("source.n_rings=abc", "source.n_rings:"),
                       ("operator=conservative_matrix", "config group or mapping"), ("source.n_rings=1,2", "single key=value")]:
        with pytest.raises(HarnessInputError, match=words):
            _apply_overrides(cfg, [bad], "load_transfer/sign")


def test_case_overrides_of_a_suite_run_in_each_job_only():
    from harness.suites.suite import per_job

    assert per_job("source.n_rings=8") == "source.n_rings=choice(8)"
    assert per_job("+case.params.x=[1,2]") == "+case.params.x=choice([1,2])"
    for kept in ("tracking=none", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "suite.budget_s=10",
                 "source.n_rings=4,8", "tracking.uri=sqlite:////x.db", "integrator=ros2"):
        assert per_job(kept) == kept


def test_regression_bands_closed_form():
    from harness.core.regression import compare_metrics, rel_change

    reg = {"rel": 1e-6, "abs": 0.0, "analytic_rel": 1e-12, "analytic_abs": 1e-14,
           "timing_patterns": ["*wall*"], "bands": {"wall_time": {"rel": 0.5}}}
    base = {"F": 100.0, "e": 2e-16, "wall_time": 1.0, "other_wall": 1.0, "gone": 3.0}
    # analytic: |dF| = 1e-10 <= 1e-12*100 + 1e-14 = 1.0001e-10 passes; 2e-10 does not
    got = compare_metrics({"F": 100.0 + 1e-10, "e": 9e-15, "wall_time": 1.4, "other_wall": 9.0, "new": 1.0}, base, reg, True)
    assert got["F"]["verdict"] == "pass" and got["e"]["verdict"] == "pass"  # 8.8e-15 <= 1e-14 + ~0
    assert set(got) == {"F", "e", "wall_time"}  # other_wall is a timing, new has no baseline
    assert got["wall_time"]["verdict"] == "pass"  # 0.4 <= 0.5 * 1.0 (its own band)
    assert compare_metrics({"F": 100.0 + 2e-10}, base, reg, True)["F"]["verdict"] == "regression"
    # otherwise a relative band of 1e-6
    assert compare_metrics({"F": 100.0 * (1 + 0.9e-6)}, base, reg, False)["F"]["verdict"] == "pass"
    hit = compare_metrics({"F": 100.0 * (1 + 1.1e-6)}, base, reg, False)["F"]
    assert hit["verdict"] == "regression" and hit["rel_change"] == pytest.approx(1.1e-6, rel=1e-9)
    assert compare_metrics({"F": 1.0}, base, reg, False, bench=True) == {}  # a benchmark: no band, no comparison
    assert compare_metrics({"F": math.nan}, base, reg, False)["F"]["verdict"] == "regression"
    assert rel_change(1.0, 0.0) == math.inf and rel_change(0.0, 0.0) == 0.0 and rel_change(3.0, -2.0) == 2.5


def test_child_run_names_from_overrides():
    from harness.tracking.notes import child_run_name

    assert child_run_name("lt/x", ["+case=lt/x", "+study=lt/s", "operator.surface.resolution=16"]) == "resolution=16"
    assert child_run_name("lt/x", ["+case=lt/x"]) == "lt/x"
    assert child_run_name("lt/x", ["a.n=1", "b.n=2", "c.k=3"]) == "a.n=1 b.n=2 k=3"
    assert child_run_name("lt/x", ["+case=lt/x", "op.res=4", "src.n_rings=8"], {"src.n_rings"}) == "n_rings=8"


def test_swept_keys_from_the_multirun_record(tmp_path):
    from harness.tracking.notes import swept_keys

    (tmp_path / "multirun.yaml").write_text(
        "hydra:\n  overrides:\n    task: ['+case=lt/x', 'op.res=4', 'src.n_rings=4,8', '+p.k=range(1,3)']\n")
    assert swept_keys(tmp_path) == {"src.n_rings", "p.k"}
    assert swept_keys(tmp_path / "nowhere") is None


def test_suite_sweeper_validates_one_job_per_family_and_override_list():
    from harness.launch.suite_sweeper import representatives, validation_key

    batch = [["suite=fast", "+case=a/one", "x=choice(1)"], ["suite=fast", "+case=a/two", "x=choice(1)"],
             ["suite=fast", "+case=b/sub/three", "x=choice(1)"], ["suite=fast", "+case=a/one", "x=choice(2)"]]
    assert validation_key(batch[2]) == ("b", ("suite=fast", "x=choice(1)"))
    assert list(representatives(batch).values()) == [batch[0], batch[2], batch[3]]


def test_an_override_one_family_cannot_take_stops_the_suite_before_any_case(tmp_path, cli):
    """Validated per family, the vessel job (no source group) still refuses source.n_rings:
    exit 2, one line naming the key, no job directory, no case line."""
    res = cli(["suite=fast", "suite.select.cases=[load_transfer/sign,load_transfer/axis,vessel/frames]",
               "source.n_rings=8", "tracking=none"], tmp_path)
    assert res.returncode == 2, res.stderr
    assert "n_rings" in res.stderr and "Traceback" not in res.stderr
    sweep = next((tmp_path / "suites" / "fast").iterdir())
    assert not [p for p in sweep.iterdir() if p.is_dir()]
    assert "PASS" not in res.stdout
