"""Hydra composition shared by the CLI and the API: config dir, resolvers, error lines."""
from __future__ import annotations

import difflib
import os
import re
import uuid
from pathlib import Path
from typing import List, Optional, Sequence

from omegaconf import OmegaConf

from harness.core.manifest import PROJECT_ROOT

CONF_DIR = PROJECT_ROOT / "conf"
CONFIG_NAME = "config"


def default_outputs() -> str:
    """Absolute outputs directory: $HARNESS_OUTPUTS, else ./outputs of the working directory."""
    return str(Path(os.environ.get("HARNESS_OUTPUTS") or Path.cwd() / "outputs").resolve())


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("harness_outputs"):
        OmegaConf.register_new_resolver("harness_outputs", default_outputs)
    if not OmegaConf.has_resolver("harness_launchers"):
        from harness.launch.launchers import help_text

        OmegaConf.register_new_resolver("harness_launchers", help_text)
    if not OmegaConf.has_resolver("harness_uid"):
        OmegaConf.register_new_resolver("harness_uid", lambda: uuid.uuid4().hex[:8], use_cache=True)


def available_cases() -> List[str]:
    root = CONF_DIR / "case"
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.yaml"))


def group_options(group: str) -> List[str]:
    root = CONF_DIR / group
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.yaml"))


def _missing_config_line(text: str) -> Optional[str]:
    m = re.search(r"Could not find '([^']+)'", text)
    if not m:
        return None
    path = m.group(1)
    group, _, name = path.partition("/")
    if group in ("case", "study", "source", "operator", "integrator", "tolerance", "gate", "tracking"):
        options = available_cases() if group == "case" else group_options(group)
        close = difflib.get_close_matches(name, options, n=3, cutoff=0.6)
        hint = f"; did you mean: {', '.join(close)}" if close else f"; see `python -m harness --help`"
        return f"unknown {group} {name!r}{hint}"
    return f"config not found: {path!r}"


def describe_config_error(exc: BaseException, overrides: Sequence[str] = ()) -> str:
    """One line naming what is wrong with a composed config (file, key and rule).

    ``overrides``: the command line's overrides; with them an unknown key or a wrong type
    names the option file the user chose (see :mod:`harness.core.config_errors`).
    """
    from harness.core.config_errors import describe_key_error

    keyed = describe_key_error(exc, overrides, CONF_DIR)
    if keyed:
        return keyed
    chain: List[BaseException] = []
    e: Optional[BaseException] = exc
    while e is not None and len(chain) < 6:
        chain.append(e)
        e = e.__cause__ or e.__context__
    texts = [str(x) for x in chain]
    for t in texts:
        line = _missing_config_line(t)
        if line:
            return line
    full_key = None
    for x in chain:
        fk = getattr(x, "full_key", None)
        if fk:
            full_key = fk
            break
    if full_key is None:
        for t in texts:
            m = re.search(r"full_key: (\S+)", t)
            if m:
                full_key = m.group(1)
                break
    where = None
    for t in texts:
        m = re.search(r"(?:In|in) '([^']+)'", t) or re.search(r"Error merging '([^']+)'", t)
        if m:
            where = m.group(1)
            break
    reasons = []
    for t in texts:
        for raw in t.splitlines():
            ln = raw.strip()
            if not ln or ln.startswith(("full_key", "object_type", "reference_type", "To append",
                                        "Set the environment")):
                continue
            ln = ln.rstrip(".;: ")
            if ln not in reasons and "$VALUE" not in ln:
                reasons.append(ln)
    reason = "; ".join(reasons[:3]) if reasons else type(exc).__name__
    parts = []
    if where and (CONF_DIR / f"{where}.yaml").exists():
        parts.append(f"conf/{where}.yaml")
    if full_key:
        parts.append(str(full_key))
    parts.append(reason)
    return ": ".join(parts)


def is_config_error(exc: BaseException) -> bool:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from harness.core.context import HarnessInputError

    return isinstance(exc, (HydraException, OmegaConfBaseException, HarnessInputError))


def compose(overrides: Sequence[str] = ()):
    """Compose the root config with ``overrides`` through Hydra's compose API."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from harness.core.configs import register_all
    from harness.core.context import HarnessInputError

    register_resolvers()
    register_all()
    gh = GlobalHydra.instance()
    if gh.is_initialized():
        gh.clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="harness"):
            return hydra_compose(config_name=CONFIG_NAME, overrides=list(overrides))
    except Exception as exc:
        if is_config_error(exc):
            raise HarnessInputError(describe_config_error(exc, overrides)) from exc
        raise
