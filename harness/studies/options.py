"""A study's own options, checked when the sweep is composed, before any job runs.

:func:`check_study` raises :class:`HarnessInputError` (one line: the key, the rule, the valid
choices; the CLI exits 2) for

* ``study.kind``: built in (convergence, validation, table) or a function the harness can
  import (``module:function``, or a bare name in ``harness.families.<family>``);
* ``study.spacing``: inverse | direct;
* a convergence study's ``parameter`` and ``metric`` (set), its levels (the values the sweep
  gives ``parameter``: numbers, > 0 with inverse spacing, != 0 with direct spacing), its
  ``quantities`` (names, never the error metric itself), and its numeric settings
  (``order_tolerance`` >= 0, ``gci_safety_factor`` > 0, ``roundoff_factor`` > 0,
  ``u_num_divisor`` > 0, ``asymptotic_tolerance`` >= 0);
* a validation study's settings (``n_samples`` >= 1, ``k`` > 0, ``u_num_relative`` >= 0, the
  ``band``, ``u_num_study`` an existing study.json or sweep directory).
"""
from __future__ import annotations

import math
from typing import Any, Callable, List, Optional

from omegaconf import DictConfig, OmegaConf

from harness.core.context import HarnessInputError

BUILT_IN = ("convergence", "validation", "table")
SPACINGS = ("inverse", "direct")


def _is_set(study: DictConfig, key: str) -> bool:
    return key in study and not OmegaConf.is_missing(study, key) and study.get(key) not in (None, "")


def _number(where: str, value: Any, rule: str, ok) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)) \
            or not ok(float(value)):
        raise HarnessInputError(f"{where}: must be {rule}, got {value!r}")


def check_kind(study: DictConfig, family: str, study_function: Callable[[str, str], Any]) -> None:
    """``study_function(kind, family)``: the aggregation's own lookup of a custom kind (ValueError)."""
    kind = str(study.get("kind") or "convergence")
    if kind in BUILT_IN:
        return
    try:
        study_function(kind, family)
    except ValueError as exc:
        raise HarnessInputError(f"{exc} (valid: {', '.join(BUILT_IN)}, module:function, or a function of "
                                f"harness.families.{family})") from None


def sweep_levels(config: DictConfig, key: str) -> Optional[List[Any]]:
    """The values the sweep gives ``key`` (command line first, then the study's own), or None."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    task = [str(o) for o in (OmegaConf.select(config, "hydra.overrides.task") or [])]
    own = [f"{k}={v}" for k, v in (OmegaConf.select(config, "hydra.sweeper.params") or {}).items()]
    try:
        parsed = OverridesParser.create().parse_overrides(task + own)
    except Exception:  # noqa: BLE001 - a syntax only another sweeper knows: its levels are not ours to check
        return None
    for o in parsed:
        if o.key_or_group.lstrip("+~") == key:
            if o.is_sweep_override():
                return list(o.sweep_iterator())
            return [o.value()]
    return None


def check_levels(config: DictConfig, study: DictConfig) -> None:
    levels = sweep_levels(config, str(study.parameter))
    if not levels:
        return
    spacing = str(study.get("spacing") or "inverse")
    for v in levels:
        where = f"study levels: {study.parameter}={v!r}"
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise HarnessInputError(f"{where}: a convergence level must be a finite number")
        if spacing == "inverse" and not float(v) > 0.0:
            raise HarnessInputError(f"{where}: must be > 0 with spacing inverse (h = 1/value)")
        if spacing == "direct" and float(v) == 0.0:
            raise HarnessInputError(f"{where}: must be != 0 with spacing direct (h = value)")


def check_convergence(config: DictConfig, study: DictConfig) -> None:
    for key in ("parameter", "metric"):
        if not _is_set(study, key):
            raise HarnessInputError(f"study.{key}: a convergence study needs it (the swept key / the error metric)")
    _number("study.order_tolerance", study.get("order_tolerance"), ">= 0", lambda x: x >= 0.0)
    _number("study.expected_order", study.get("expected_order"), "a finite number", lambda x: True)
    _number("study.gci_safety_factor", study.get("gci_safety_factor"), "> 0", lambda x: x > 0.0)
    _number("study.roundoff_factor", study.get("roundoff_factor"), "> 0", lambda x: x > 0.0)
    _number("study.u_num_divisor", study.get("u_num_divisor"), "> 0", lambda x: x > 0.0)
    _number("study.asymptotic_tolerance", study.get("asymptotic_tolerance"), ">= 0", lambda x: x >= 0.0)
    for q in study.get("quantities") or []:
        if not isinstance(q, str) or not q:
            raise HarnessInputError(f"study.quantities: {q!r}: each must be a metric name")
        if q == str(study.metric):
            raise HarnessInputError(f"study.quantities: {q!r} is the error metric (study.metric); a GCI goes on "
                                    "solution quantities only")
    check_levels(config, study)


def check_validation(study: DictConfig) -> None:
    from harness.metrics import gates as G
    from harness.studies.validation import resolve_path

    v = study.get("validation")
    if v is None:
        raise HarnessInputError("study.validation: required by study.kind=validation")
    _number("study.validation.n_samples", v.get("n_samples"), "an integer >= 1",
            lambda x: x >= 1 and float(x).is_integer())
    _number("study.validation.k", v.get("k"), "> 0", lambda x: x > 0.0)
    for q, rel in (v.get("u_num_relative") or {}).items():
        _number(f"study.validation.u_num_relative.{q}", rel, ">= 0", lambda x: x >= 0.0)
    try:
        G.Band.from_mapping(OmegaConf.to_container(v.band, resolve=True) or {})
    except (TypeError, ValueError) as exc:
        raise HarnessInputError(f"study.validation.band: {exc}") from None
    if v.get("u_num_study"):
        p = resolve_path(str(v.u_num_study))
        f = p / "study" / "study.json" if p.is_dir() else p
        if not f.is_file():
            raise HarnessInputError(f"study.validation.u_num_study: {v.u_num_study}: no such study.json or sweep "
                                    "directory (a solution-verification sweep's directory or its study/study.json)")


def check_study(config: DictConfig, family: str, study_function: Callable[[str, str], Any]) -> None:
    """Check the options of ``config.study`` (no study: nothing to check); ``study_function``
    resolves a custom kind (harness.studies.aggregate.study_function)."""
    study = OmegaConf.select(config, "study")
    if study is None:
        return
    check_kind(study, family, study_function)
    spacing = study.get("spacing")
    if spacing is not None and str(spacing) not in SPACINGS:
        raise HarnessInputError(f"study.spacing: {spacing!r} is not one of {', '.join(SPACINGS)}")
    kind = str(study.get("kind") or "convergence")
    if kind == "convergence":
        check_convergence(config, study)
    elif kind == "validation":
        check_validation(study)
