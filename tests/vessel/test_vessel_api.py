"""models.vessel as a library: exports, and chi_change recorded only where waves act."""
from __future__ import annotations

import models.integrators as integrators
import models.vessel as vessel_pkg
from models.vessel import build_vessel

TANKER = "models/vessel/data/tanker.yaml"


def _cvode():
    return integrators.get("cvode_bdf")(rtol=1e-8, atol=1e-10)


def test_every_exported_name_is_documented():
    for name in vessel_pkg.__all__:
        assert (getattr(vessel_pkg, name).__doc__ or "").strip(), name


def test_chi_change_only_where_waves_act():
    demands = {"rotation": {"main": [[0.0, 1.2]]}, "rudder": {"rudder": [[0.0, 0.0], [3.0, 0.35]]}}
    calm = build_vessel(TANKER, wave_amplitude=0.0, demands=demands).simulate(_cvode(), 4.0, 0.1)
    assert calm.success and "chi_change" not in calm.stats  # formerly ~3.14 rad, a meaningless residual
    no_wave_model = build_vessel(TANKER, forces=["restoring", "linear_damping"], wave_amplitude=1.0)
    assert "chi_change" not in no_wave_model.simulate(_cvode(), 2.0, 0.1).stats
    waves = build_vessel(TANKER, wave_amplitude=1.0, wave_direction=0.35, demands=demands).simulate(_cvode(), 4.0, 0.1)
    assert waves.success and 0.0 <= waves.stats["chi_change"] <= 1e-9  # the passes settled to pass_tol
