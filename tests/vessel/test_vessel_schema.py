"""Vessel data files: the shipped tanker validates; bad input gets an error naming the field."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from models.vessel.data import from_dict, load
from models.vessel.schema import VesselDataError, load_spec

ROOT = Path(__file__).resolve().parents[2]
TANKER = ROOT / "models" / "vessel" / "data" / "tanker.yaml"


@pytest.fixture(scope="module")
def raw():
    with open(TANKER) as fh:
        return yaml.safe_load(fh)


def _bad(raw, mutate):
    d = copy.deepcopy(raw)
    mutate(d)
    with pytest.raises(VesselDataError) as exc:
        from_dict(d, "tanker.yaml")
    return str(exc.value)


def test_tanker_is_valid_and_plausible():
    d = load(TANKER)
    Mt = d.total_mass
    assert np.allclose(Mt, Mt.T) and np.linalg.eigvalsh(Mt)[0] > 0
    # heave natural period of a 180 m tanker: 6-12 s; roll 10-25 s
    t_heave = 2 * math.pi * math.sqrt(Mt[2, 2] / d.restoring[2])
    t_roll = 2 * math.pi * math.sqrt(Mt[3, 3] / d.restoring[3])
    assert 6.0 < t_heave < 12.0 and 10.0 < t_roll < 25.0
    assert d.propellers[0].name == "main" and d.rudders[0].propeller == 0


def test_every_spec_field_is_in_the_tanker(raw):
    for name, spec in load_spec()["fields"].items():
        if spec.get("required", True):
            assert name in raw


@pytest.mark.parametrize("where,rule,mutate", [
    ("mass_matrix + added_mass", "positive definite",
     lambda d: d["added_mass"][2].__setitem__(2, -2.0 * d["mass_matrix"][2][2])),
    ("mass_matrix + added_mass", "singular",
     lambda d: (d["mass_matrix"][0].__setitem__(0, 1.0e-9), d["added_mass"][0].__setitem__(0, 0.0))),
    ("added_mass", "symmetric", lambda d: d["added_mass"][1].__setitem__(5, 0.0)),
    ("mass_matrix", "shape", lambda d: d["mass_matrix"].pop()),
    ("wind.coefficients.angle", "strictly increasing",
     lambda d: d["wind"]["coefficients"].__setitem__("angle", list(reversed(d["wind"]["coefficients"]["angle"])))),
    ("current.coefficients.angle", "cover [0, pi]",
     lambda d: [d["current"]["coefficients"][k].pop() for k in ("angle", "cx", "cy", "cn")]),
    ("wind.coefficients.cy", "one value per angle", lambda d: d["wind"]["coefficients"]["cy"].pop()),
    ("wind.coefficients.cx", "finite", lambda d: d["wind"]["coefficients"]["cx"].__setitem__(2, float("nan"))),
    ("linear_damping", "finite", lambda d: d["linear_damping"][0].__setitem__(0, float("nan"))),
    ("restoring", ">= 0", lambda d: d["restoring"].__setitem__(2, -1.0)),
    ("propellers[0].rotation_time", "> 0", lambda d: d["propellers"][0].__setitem__("rotation_time", 0.0)),
    ("rudders[0].rate_limit", "is missing", lambda d: d["rudders"][0].pop("rate_limit")),
    ("rudders[0].propeller", "propeller index", lambda d: d["rudders"][0].__setitem__("propeller", 5)),
    ("waves.tables.rao_amplitude", "shape", lambda d: d["waves"]["tables"]["rao_amplitude"][0].pop()),
    ("rho_water", "must be a number", lambda d: d.__setitem__("rho_water", "heavy")),
    ("hull_colour", "not a field", lambda d: d.__setitem__("hull_colour", "red")),
])
def test_bad_input_names_field_and_rule(raw, where, rule, mutate):
    msg = _bad(raw, mutate)
    assert where in msg and rule in msg, msg
    assert msg.startswith("tanker.yaml: ")


def test_load_applies_dotted_overrides():
    d = load(TANKER, {"propellers.0.diameter": 6.0, "rho_air": 1.2})
    assert d.propellers[0].diameter == 6.0 and d.rho_air == 1.2
    with pytest.raises(VesselDataError, match="rho_air"):
        load(TANKER, {"rho_air": float("nan")})


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(VesselDataError, match="file not found"):
        load(tmp_path / "nope.yaml")
