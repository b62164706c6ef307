"""Rigid planar walls: fixed, moving at a prescribed velocity, or servo-controlled to a force.

A wall is the plane through ``point`` with unit ``normal`` pointing into the domain. It acts
on particles whose centre lies in front of it (0 < distance < radius); an optional extent
``bounds = (lo, hi)`` along coordinate axis ``axis`` (relative to the wall point) limits the
wall to a strip, e.g. the side walls of the two halves of a shear box.
A servo wall moves along its normal at ``v = gain (F_target - F)``, clipped to ``v_max``,
where ``F`` (N) is the total normal force the particles exert on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

import numpy as np

from models.dem.materials import DEMInputError, Material


@dataclass
class Servo:
    """Force control: target normal force (N), gain (m/(N s)), maximum speed (m/s)."""

    target_force: float
    gain: float
    v_max: float = np.inf


@dataclass
class Wall:
    """A plane; ``velocity`` (m/s) is prescribed unless ``servo`` is set.

    ``material=None`` makes the wall rigid; a Material makes it deformable (E* of the pair).
    """

    point: Sequence[float]
    normal: Sequence[float]
    material: Optional[Material] = None  # None: rigid (E* = E/(1 - nu^2) of the particle)
    velocity: Sequence[float] = (0.0, 0.0, 0.0)
    axis: Optional[int] = None
    bounds: Tuple[float, float] = (-np.inf, np.inf)
    servo: Optional[Servo] = None
    name: str = "wall"
    p: np.ndarray = field(init=False)
    n: np.ndarray = field(init=False)
    v: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.p = np.array(self.point, dtype=np.float64).reshape(3)
        n = np.array(self.normal, dtype=np.float64).reshape(3)
        norm = np.linalg.norm(n)
        if not np.isfinite(norm) or norm == 0.0:
            raise DEMInputError(f"walls[{self.name}].normal: must be a non-zero vector, got {self.normal!r}")
        self.n = n / norm
        self.v = np.array(self.velocity, dtype=np.float64).reshape(3)
        if self.axis is not None and self.axis not in (0, 1, 2):
            raise DEMInputError(f"walls[{self.name}].axis: must be 0, 1 or 2, got {self.axis!r}")
        if self.servo is not None and self.servo.gain <= 0:
            raise DEMInputError(f"walls[{self.name}].servo.gain: must be > 0, got {self.servo.gain!r}")
