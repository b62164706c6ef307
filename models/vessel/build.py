"""Build a :class:`Vessel` from plain arguments (what a source option file holds)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from models.vessel.data import load
from models.vessel.forces import FORCE_MODELS, Environment
from models.vessel.vessel import Demands, Vessel

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def resolve_data_file(path: str | Path) -> Path:
    """A relative data-file path is taken from the working directory if the file is there,
    else from the project root (where the shipped ``models/vessel/data/*.yaml`` live).

    >>> resolve_data_file("models/vessel/data/tanker.yaml").name
    'tanker.yaml'
    """
    p = Path(path)
    if p.is_absolute():
        return p
    return p.resolve() if p.is_file() else PROJECT_ROOT / p


def build_vessel(data_file: str, data_overrides: Optional[Mapping[str, Any]] = None,
                 forces: Sequence[str] = FORCE_MODELS, lag_form: str = "exp", ema_tau: float = 16.5,
                 current_speed: float = 0.0, current_direction: float = 0.0, wind_speed: float = 0.0,
                 wind_direction: float = 0.0, wave_amplitude: float = 0.0, wave_direction: float = 0.0,
                 demands: Optional[Mapping[str, Any]] = None, track_work: bool = False,
                 jacobian: str = "analytic") -> Vessel:
    """Vessel from a vessel-v1 file (dotted-key overrides), enabled loads, environment, demands.

    Speeds m/s, directions rad (nautical; current flows to, wind and waves come from),
    wave amplitude m; ``demands`` maps rotation / azimuth / pitch_ratio / rudder to
    ``{actuator name: [[t, value], ...]}`` (t in s; rotation 1/s, angles rad). ``forces`` picks
    load models from ``FORCE_MODELS``; ``jacobian``: ``analytic`` (the compiled Jacobian goes to
    the integrators) or ``none`` (they form difference quotients). The file is validated against
    ``schemas/vessel-v1.yaml`` (a bad file raises :class:`VesselDataError` naming the file, the
    field and the rule).

    >>> import models.integrators as integrators
    >>> v = build_vessel("models/vessel/data/tanker.yaml", wind_speed=12.0, wind_direction=0.5,
    ...                  demands={"rotation": {"main": [[0.0, 1.2]]}})
    >>> res = v.simulate(integrators.get("cvode_bdf")(rtol=1e-8, atol=1e-10), 10.0, 0.1)
    >>> res.success, res.q.shape            # positions (x N, y E, z down, roll, pitch, yaw) per output
    (True, (101, 6))
    """
    data = load(resolve_data_file(data_file), dict(data_overrides or {}))
    env = Environment(current_speed, current_direction, wind_speed, wind_direction, wave_amplitude, wave_direction)
    dem = dict(demands or {})
    unknown = sorted(set(dem) - {"rotation", "azimuth", "pitch_ratio", "rudder"})
    if unknown:
        raise ValueError(f"demands: unknown kind(s) {unknown}; known: rotation, azimuth, pitch_ratio, rudder")
    return Vessel(data, forces=list(forces), environment=env, demands=Demands(**{k: dict(v or {}) for k, v in dem.items()}),
                  lag_form=lag_form, ema_tau=ema_tau, track_work=track_work, jacobian=jacobian)
