"""The plastic-law options of the Kratos MPM spec (issue 15; the plasticity stage that uses them:
tests/load_transfer/test_lt_kratos_plasticity.py): bad values are refused with the field named."""
import math

import pytest

from models.load_transfer.kratos.builder import MPMSpec, project_parameters
from models.load_transfer.fe.base import ElasticBody


@pytest.mark.parametrize("kw, field", [({"law": "j2"}, "law"), ({"law": "tresca"}, "yield_stress"),
                                       ({"law": "tresca", "yield_stress": -1.0}, "yield_stress"),
                                       ({"law": "tresca", "yield_stress": math.inf}, "yield_stress")])
def test_bad_plastic_spec_is_refused_naming_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        MPMSpec(**kw)


def test_non_linear_runs_use_a_residual_criterion_the_mpm_solver_accepts():
    body = ElasticBody(radius=0.01, height=0.02, E=2e9, nu=0.3, rho=1200.0, nr=2, nz=2)
    spec = MPMSpec(solver="dynamic", dt=1e-6, n_steps=2, analysis_type="non_linear", law="tresca", yield_stress=1e5)
    s = project_parameters(body, spec)["solver_settings"]
    assert s["convergence_criterion"] == "residual_criterion" and s["residual_relative_tolerance"] <= 1e-8
    assert "convergence_criterion" not in project_parameters(body, MPMSpec())["solver_settings"]


def test_grid_margin_rows_must_be_non_negative():
    with pytest.raises(ValueError, match="grid_margin_rows"):
        MPMSpec(grid_margin_rows=-1)
