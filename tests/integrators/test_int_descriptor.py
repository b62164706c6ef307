"""Versioned model descriptors v1..v5: every version runs, keys are version-gated, bad input is named."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from models.integrators.descriptor import DescriptorError, load_descriptor, parse_descriptor
from models.integrators.problems import get_problem

DIR = Path(__file__).resolve().parents[2] / "models" / "integrators" / "descriptors"


@pytest.fixture(scope="module")
def reference():
    tp = get_problem("rlc6", n_out=6)
    return tp.y_ref, np.max(np.abs(tp.y_ref))


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_int_descriptor_versions_run_against_matrix_exponential(version, reference):
    y_ref, scale = reference
    d = load_descriptor(DIR / f"rlc6_v{version}.yaml")
    assert d.version == version
    sol = d.run()
    assert sol.success, sol.failure_reason
    err = np.max(np.abs(sol.y - y_ref)) / scale
    # v1/v2 fixed step h = 1e-6 s: e ~ C (h omega)^2 ~ 4e-3; v3+ adaptive at rtol 1e-4
    assert err < (5e-3 if version <= 2 else 1e-3)
    assert sol.z.shape == (6, 7) and sol.stats.n_residual_solves > 0
    if version == 2:
        assert sol.diagnostics["fd_controls"] == sol.stats.njev and sol.diagnostics["fd_control_failures"] == 0
    if version >= 3:
        assert sol.stats.n_steps == sol.stats.n_accepted + sol.stats.n_rejected
    if version == 5:
        assert sol.diagnostics["jacobian_provider"] == "sensitivity"


def _doc(version=5, **changes):
    doc = yaml.safe_load((DIR / "rlc6_v5.yaml").read_text())
    doc["ros_descriptor"] = version
    for k, v in changes.items():
        if v is None:
            doc.pop(k, None)
        else:
            doc[k] = v
    return doc


def test_int_descriptor_v4_and_v5_agree():
    # v5 (sensitivity Jacobian) and the same run with the FD provider give the same trajectory
    s5 = parse_descriptor(_doc()).run()
    s_fd = parse_descriptor(_doc(jacobian="fd")).run()
    np.testing.assert_allclose(s5.y, s_fd.y, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("key, version, needed", [("tolerances", 3, 4), ("jacobian", 4, 5), ("jacobian_fd", 1, 2)])
def test_int_descriptor_keys_are_version_gated(key, version, needed):
    doc = _doc(version)
    doc.setdefault("jacobian_fd", {"delta": 1e-6})
    if key != "tolerances" and version < 4:
        doc.pop("tolerances")
    if version < 5 and key != "jacobian":
        doc.pop("jacobian")
    with pytest.raises(DescriptorError, match=rf"{key}: needs descriptor version >= {needed}"):
        parse_descriptor(doc, "x.yaml")


def test_int_descriptor_adaptive_needs_v3():
    doc = _doc(2, tolerances=None, jacobian=None)
    with pytest.raises(DescriptorError, match=r"run.adaptive: needs descriptor version >= 3"):
        parse_descriptor(doc, "x.yaml")


@pytest.mark.parametrize("cap", ["events", "discontinuities", "restart", "continue"])
def test_int_descriptor_rejects_unsupported_capabilities(cap):
    doc = _doc()
    doc[cap] = [1.0]
    with pytest.raises(DescriptorError, match=rf"x.yaml: {cap}: unsupported capability"):
        parse_descriptor(doc, "x.yaml")


def test_int_descriptor_rejects_high_index_and_bad_fields():
    doc = _doc()
    doc["algebraic"][0]["index"] = 2
    with pytest.raises(DescriptorError, match=r"index > 1"):
        parse_descriptor(doc, "x.yaml")
    with pytest.raises(DescriptorError, match=r"tolerances.nope: unknown state"):
        parse_descriptor(_doc(tolerances={"nope": {"atol": 1.0}}), "x.yaml")
    with pytest.raises(DescriptorError, match=r"model: cannot import"):
        parse_descriptor(_doc(model="models.nothing:here"), "x.yaml")
    with pytest.raises(DescriptorError, match=r"ros_descriptor: must be an integer version 1..5"):
        parse_descriptor(_doc(version=9), "x.yaml")
    doc = _doc(1, tolerances=None, jacobian=None)
    doc["run"] = {"t_end": 1e-4}
    with pytest.raises(DescriptorError, match=r"run.step: give exactly one of run.step"):
        parse_descriptor(doc, "x.yaml")
