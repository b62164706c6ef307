"""Every load-transfer case under conf/case/load_transfer runs and meets its gates."""
import pytest

from harness import run_case
from harness.core.compose import CONF_DIR, available_cases

# the analytic transfer cases: those run by the family's main adapter
CASES = [c for c in available_cases() if c.startswith("load_transfer/")
         and "adapter: harness.families.load_transfer:run" in (CONF_DIR / "case" / f"{c}.yaml").read_text()]


@pytest.mark.parametrize("case", CASES)
def test_case_passes(harness_env, case):
    out = run_case(case, overrides=["tracking=none"])
    assert out.status == "ok", out.message
    assert out.verdict == "pass", {k: (out.metrics.get(k), v) for k, v in out.gates.items()}
    assert out.metrics["nan_count"] == 0.0


def test_closed_forms_are_met_to_round_off(harness_env):
    import math

    uni = run_case("load_transfer/uniform_pressure", overrides=["tracking=none"])
    assert uni.metrics["F_M_max"] == pytest.approx(1e5 * math.pi, rel=1e-12)
    par = run_case("load_transfer/parabolic_pressure", overrides=["tracking=none"])
    assert par.metrics["F_M_max"] == pytest.approx(1e5 * math.pi / 2, rel=1e-12)
    tri = run_case("load_transfer/triangular_pulse", overrides=["tracking=none"])
    assert tri.metrics["J_M"] == pytest.approx(1e5 * math.pi * (0.8897 - 0.013) / 2, rel=1e-12)
    rect = run_case("load_transfer/rectangular_pulse", overrides=["tracking=none"])
    assert rect.metrics["J_M"] == pytest.approx(1e5 * math.pi * (0.6789 - 0.1234), rel=1e-12)


def test_analytic_gate_fails_a_polygon_deficit(harness_env):
    # The inscribed polygon misses part of the disk: exact on the common area (e_F), but its
    # deficit to the disk force is far above 1e-10, so gating e_disk must fail the run.
    out = run_case("load_transfer/inscribed_surface", overrides=["tracking=none", "case.gates=[e_F,e_disk]"])
    assert out.gates == {"e_F": "pass", "e_disk": "fail"} and out.verdict == "fail" and out.exit_code == 1
    assert 1e-4 < out.metrics["e_disk"] < 0.2
