"""Prescribed (rheonomic) slider laws s(t) [m] with ṡ [m/s] and s̈ [m/s²], vectorised in t."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class SliderLaw:
    """Base: ``position``, ``velocity``, ``acceleration`` of t [s] (arrays in, arrays out)."""

    def position(self, t):  # pragma: no cover - interface
        raise NotImplementedError

    def velocity(self, t):  # pragma: no cover - interface
        raise NotImplementedError

    def acceleration(self, t):  # pragma: no cover - interface
        raise NotImplementedError

    def check_on_beam(self, t: np.ndarray, length: float) -> None:
        """Raise ValueError if s(t) leaves (0, length] at any of the times ``t``."""
        s = self.position(np.asarray(t, dtype=np.float64))
        tol = 1e-12 * length
        bad = (~np.isfinite(s)) | (s <= tol) | (s > length * (1.0 + 1e-12))
        if np.any(bad):
            i = int(np.argmax(bad))
            raise ValueError(f"slider law leaves the beam: s(t={float(np.asarray(t)[i]):.6g} s) = "
                             f"{float(s[i]):.6g} m, must lie in (0, {length}] m")


@dataclass(frozen=True)
class FixedSlider(SliderLaw):
    """A support at a fixed position ``s0`` [m]."""

    s0: float

    def position(self, t):
        return np.full(np.shape(t), float(self.s0))

    def velocity(self, t):
        return np.zeros(np.shape(t))

    def acceleration(self, t):
        return np.zeros(np.shape(t))


@dataclass(frozen=True)
class SinusoidalSlider(SliderLaw):
    """``s(t) = center + amplitude · sin(2π frequency t)`` [m]."""

    center: float
    amplitude: float
    frequency: float  # [Hz]

    def position(self, t):
        w = 2.0 * math.pi * self.frequency
        return self.center + self.amplitude * np.sin(w * np.asarray(t, dtype=np.float64))

    def velocity(self, t):
        w = 2.0 * math.pi * self.frequency
        return self.amplitude * w * np.cos(w * np.asarray(t, dtype=np.float64))

    def acceleration(self, t):
        w = 2.0 * math.pi * self.frequency
        return -self.amplitude * w * w * np.sin(w * np.asarray(t, dtype=np.float64))


@dataclass(frozen=True)
class CosineStroke(SliderLaw):
    """Smooth stroke from ``start`` to ``end`` [m] over ``duration`` [s], then at rest:
    ``s = start + (end − start)(1 − cos(π t/T))/2`` for 0 ≤ t ≤ T."""

    start: float
    end: float
    duration: float

    def _tau(self, t):
        return np.clip(np.asarray(t, dtype=np.float64), 0.0, self.duration)

    def position(self, t):
        return self.start + 0.5 * (self.end - self.start) * (1.0 - np.cos(math.pi * self._tau(t) / self.duration))

    def velocity(self, t):
        t = np.asarray(t, dtype=np.float64)
        k = math.pi / self.duration
        v = 0.5 * (self.end - self.start) * k * np.sin(k * self._tau(t))
        return np.where((t >= 0.0) & (t <= self.duration), v, 0.0)

    def acceleration(self, t):
        t = np.asarray(t, dtype=np.float64)
        k = math.pi / self.duration
        a = 0.5 * (self.end - self.start) * k * k * np.cos(k * self._tau(t))
        return np.where((t >= 0.0) & (t <= self.duration), a, 0.0)


def make_slider(kind: str, center: float = 0.0, amplitude: float = 0.0, frequency: float = 0.0,
                start: float = 0.0, end: float = 0.0, duration: float = 1.0) -> SliderLaw | None:
    """Slider law by name: ``none``, ``fixed`` (at center), ``sinusoidal``, ``cosine_stroke``."""
    if kind == "none":
        return None
    if kind == "fixed":
        return FixedSlider(float(center))
    if kind == "sinusoidal":
        if frequency < 0.0:
            raise ValueError(f"slider frequency must be >= 0 Hz, got {frequency!r}")
        return SinusoidalSlider(float(center), float(amplitude), float(frequency))
    if kind == "cosine_stroke":
        if not duration > 0.0:
            raise ValueError(f"slider duration must be > 0 s, got {duration!r}")
        return CosineStroke(float(start), float(end), float(duration))
    raise ValueError(f"slider kind must be one of none, fixed, sinusoidal, cosine_stroke; got {kind!r}")
