"""Vessel data: the validated content of a vessel-v1 file as typed objects (SI units)."""
from __future__ import annotations

import bisect
import copy
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
import yaml

from models.vessel.schema import VesselDataError, validate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoefficientTable:
    """Load coefficients against the relative angle (rad, [0, pi]); Cx even, Cy, Cn odd."""

    angle: np.ndarray
    cx: np.ndarray
    cy: np.ndarray
    cn: np.ndarray
    frontal_area: float  # m^2
    lateral_area: float  # m^2
    length: float  # m

    def __post_init__(self) -> None:
        object.__setattr__(self, "_angles", self.angle.tolist())
        object.__setattr__(self, "_cols", np.column_stack([self.cx, self.cy, self.cn]))

    def coefficients(self, gamma: float) -> np.ndarray:
        """(Cx, Cy, Cn) at the flow angle gamma (rad, (-pi, pi]), linear in the angle."""
        a = abs(gamma)
        ang = self._angles
        i = min(max(bisect.bisect_right(ang, a) - 1, 0), len(ang) - 2)
        th = (a - ang[i]) / (ang[i + 1] - ang[i])
        c = self._cols[i] + th * (self._cols[i + 1] - self._cols[i])
        if gamma < 0:
            c = c * _ODD3
        return c


_ODD3 = np.array([1.0, -1.0, -1.0])


@dataclass(frozen=True)
class WaveTable:
    """First-order wave data at one frequency against the relative heading (rad, 0 head seas)."""

    frequency: float  # rad/s
    heading: np.ndarray  # (k,)
    force_amplitude: np.ndarray  # (k, 6) N/m, N m/m
    force_phase: np.ndarray  # (k, 6) rad
    rao_amplitude: np.ndarray  # (k, 6) m/m, rad/m
    rao_phase: np.ndarray  # (k, 6) rad

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stack", np.stack([self.force_amplitude, self.force_phase, self.rao_amplitude,
                                                     self.rao_phase]))  # (4, k, 6)

    def at(self, chi: float):
        """(force amplitude, force phase, RAO amplitude, RAO phase), each (6,), at heading chi (rad)."""
        a = abs(chi)
        h = self.heading
        i = min(max(int(np.searchsorted(h, a, side="right")) - 1, 0), h.size - 2)
        th = (a - h[i]) / (h[i + 1] - h[i])
        v = self._stack[:, i] + th * (self._stack[:, i + 1] - self._stack[:, i])
        sgn = 1.0 if chi >= 0 else -1.0
        odd = np.array([1.0, sgn, 1.0, sgn, 1.0, sgn]) if chi != 0 else np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
        return v[0] * odd, v[1], v[2] * odd, v[3]


@dataclass(frozen=True)
class PropellerData:
    name: str
    position: np.ndarray  # (3,) m, body frame
    diameter: float  # m
    max_rotation: float  # 1/s
    rotation_time: float  # s
    azimuth_time: float  # s
    pitch_time: float  # s
    wake_fraction: float
    kt_pitch: float
    kt_advance: float
    pitch_ratio: float
    azimuth: float  # rad


@dataclass(frozen=True)
class RudderData:
    name: str
    position: np.ndarray  # (3,) m
    area: float  # m^2
    lift_slope: float  # 1/rad
    max_angle: float  # rad
    rate_limit: float  # rad/s
    propeller: int = -1


@dataclass(frozen=True)
class VesselData:
    """Everything a vessel-v1 file holds, validated."""

    name: str
    rho_water: float
    rho_air: float
    mass_matrix: np.ndarray
    added_mass: np.ndarray
    restoring: np.ndarray
    linear_damping: np.ndarray
    quadratic_damping: np.ndarray
    wind: CoefficientTable
    current: CoefficientTable
    waves: WaveTable
    propellers: List[PropellerData] = field(default_factory=list)
    rudders: List[RudderData] = field(default_factory=list)
    source: str = "<memory>"

    @property
    def total_mass(self) -> np.ndarray:
        return self.mass_matrix + self.added_mass


def _coef(tab: Mapping[str, Any]) -> CoefficientTable:
    c = tab["coefficients"]
    return CoefficientTable(c["angle"], c["cx"], c["cy"], c["cn"], tab["frontal_area"], tab["lateral_area"], tab["length"])


def from_dict(raw: Mapping[str, Any], where: str = "<vessel data>") -> VesselData:
    """Validate a parsed vessel-v1 mapping and build :class:`VesselData`."""
    d = validate(raw, where)
    w = d["waves"]["tables"]
    waves = WaveTable(d["waves"]["frequency"], w["heading"], w["force_amplitude"], w["force_phase"],
                      w["rao_amplitude"], w["rao_phase"])
    props = [PropellerData(**{**p, "azimuth": p.get("azimuth", 0.0)}) for p in d.get("propellers", [])]
    ruds = [RudderData(**r) for r in d.get("rudders", [])]
    return VesselData(d["name"], d["rho_water"], d["rho_air"], d["mass_matrix"], d["added_mass"], d["restoring"],
                      d["linear_damping"], d["quadratic_damping"], _coef(d["wind"]), _coef(d["current"]), waves,
                      props, ruds, where)


def apply_overrides(raw: Mapping[str, Any], overrides: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """A deep copy of ``raw`` with dotted keys replaced, e.g. ``{"propellers.0.diameter": 6.0}``."""
    out = copy.deepcopy(dict(raw))
    for key, value in (overrides or {}).items():
        node: Any = out
        parts = str(key).split(".")
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return out


def load(path: str | Path, overrides: Optional[Mapping[str, Any]] = None) -> VesselData:
    """Read, override (dotted keys) and validate a vessel-v1 YAML file.

    >>> from models.vessel.build import resolve_data_file
    >>> d = load(resolve_data_file("models/vessel/data/tanker.yaml"), {"rho_water": 1000.0})
    >>> d.name, d.rho_water
    ('tanker180', 1000.0)
    """
    p = Path(path)
    try:
        with open(p, "r", encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
    except FileNotFoundError:
        raise VesselDataError(f"{p}: file not found") from None
    except yaml.YAMLError as exc:
        raise VesselDataError(f"{p}: not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise VesselDataError(f"{p}: <root>: must be a mapping")
    try:
        raw = apply_overrides(raw, overrides)
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise VesselDataError(f"{p}: overrides: cannot apply {dict(overrides or {})!r}: {exc}") from None
    data = from_dict(raw, str(p))
    log.debug("loaded vessel %s from %s", data.name, p)
    return data
