"""Every case and study under conf/ composes, resolves and names a loadable adapter."""
import pytest
from omegaconf import OmegaConf

from harness.core.compose import CONF_DIR, available_cases, compose, group_options
from harness.core.runner import load_adapter


@pytest.fixture(scope="module")
def composed():
    out = {}
    for case in available_cases():
        cfg = compose([f"+case={case}"])
        out[case] = cfg
    return out


def test_there_are_cases():
    assert "load_transfer/uniform_pressure" in available_cases()


def test_every_case_composes_and_resolves(composed, tmp_path):
    for case, cfg in composed.items():
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        assert resolved["case"]["name"] == case, f"{case}: case.name must equal its path"
        assert callable(load_adapter(cfg.case.adapter)), case
        assert cfg.case.gates, f"{case}: no gated metric"
        assert set(cfg.case.key_metrics), f"{case}: no key metric"


def test_every_study_composes():
    for study in group_options("study"):
        cfg = compose([f"+study={study}"])
        assert cfg.study.name, study
        assert cfg.study.parameter and cfg.study.metric
