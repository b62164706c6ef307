"""Gates: pass / warn / fail bands per metric, the run verdict and exit codes."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, Mapping, Optional

PASS, WARN, FAIL = "pass", "warn", "fail"
_RANK = {PASS: 0, WARN: 1, FAIL: 2}

EXIT_OK = 0  # pass or warn
EXIT_FAIL = 1  # a gate failed (or the model crashed)
EXIT_INPUT = 2  # invalid config or input


@dataclass(frozen=True)
class Band:
    """pass if pass_min <= v <= pass_max; warn if warn_min <= v <= warn_max; else fail."""

    pass_max: Optional[float] = None
    warn_max: Optional[float] = None
    pass_min: Optional[float] = None
    warn_min: Optional[float] = None

    @classmethod
    def from_mapping(cls, m: Mapping) -> "Band":
        return cls(**{k: (None if m.get(k) is None else float(m[k]))
                      for k in ("pass_max", "warn_max", "pass_min", "warn_min")})

    def judge(self, value: float) -> str:
        v = float(value)
        if math.isnan(v):
            return FAIL
        if _inside(v, self.pass_min, self.pass_max):
            return PASS
        warn_min = self.pass_min if self.warn_min is None else self.warn_min
        warn_max = self.pass_max if self.warn_max is None else self.warn_max
        if _inside(v, warn_min, warn_max):
            return WARN
        return FAIL

    def as_dict(self) -> Dict[str, Optional[float]]:
        return {"pass_max": self.pass_max, "warn_max": self.warn_max,
                "pass_min": self.pass_min, "warn_min": self.warn_min}


def _inside(v: float, lo: Optional[float], hi: Optional[float]) -> bool:
    return (lo is None or v >= lo) and (hi is None or v <= hi)


@dataclass(frozen=True)
class GateResult:
    metric: str
    value: float
    band: Optional[Band]
    verdict: str  # pass / warn / fail; "fail" also when the metric is missing

    def as_dict(self) -> dict:
        return {"value": self.value, "verdict": self.verdict,
                "band": None if self.band is None else self.band.as_dict()}


def worst(verdicts: Iterable[str]) -> str:
    """The worst verdict (pass < warn < fail); pass for an empty set."""
    out = PASS
    for v in verdicts:
        if _RANK[v] > _RANK[out]:
            out = v
    return out


def judge(metrics: Mapping[str, float], gated: Iterable[str], bands: Mapping[str, Band],
          default: Optional[Band]) -> Dict[str, GateResult]:
    """Judge each gated metric with its band (or the default band).

    A gated metric that the case did not produce fails; a gated metric with neither a band
    nor a default is a configuration error (ValueError).
    """
    results: Dict[str, GateResult] = {}
    for name in gated:
        band = bands.get(name, default)
        if band is None:
            raise ValueError(f"gate: metric {name!r} is gated but has no band and the gate has no default")
        if name not in metrics:
            results[name] = GateResult(name, math.nan, band, FAIL)
            continue
        results[name] = GateResult(name, float(metrics[name]), band, band.judge(metrics[name]))
    return results


def exit_code(verdict: str) -> int:
    return EXIT_FAIL if verdict == FAIL else EXIT_OK
