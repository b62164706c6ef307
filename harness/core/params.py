"""Helpers for family adapters: typed ``case.params`` and instantiation with clear errors."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Type, TypeVar

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from harness.core.context import HarnessInputError

T = TypeVar("T")


def case_params(cfg: DictConfig, schema: Type[T]) -> T:
    """``case.params`` merged onto the dataclass ``schema`` and returned as an instance.

    An unknown key or a wrong type raises HarnessInputError naming ``case.params.<key>``.
    """
    raw = OmegaConf.select(cfg, "case.params")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), raw if raw is not None else {})
        return OmegaConf.to_object(merged)  # type: ignore[return-value]
    except Exception as exc:  # omegaconf ValidationError / ConfigKeyError / MissingMandatoryValue
        key = getattr(exc, "full_key", None) or "?"
        raise HarnessInputError(f"case.params.{key}: {str(exc).splitlines()[0]}") from exc


def check_rules(params: Any, rules: Sequence[Tuple[str, bool, str]]) -> None:
    """Raise HarnessInputError for the first ``(key, ok, rule)`` that does not hold, naming
    ``case.params.<key>``, the rule and the value ``params`` (a case-params dataclass) holds there."""
    for name, ok, rule in rules:
        if not ok:
            got = OmegaConf.select(OmegaConf.structured(params), name)
            raise HarnessInputError(f"case.params.{name}: {rule}, got {got!r}")


def build(node: Optional[DictConfig], what: str, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate(node, **kwargs)``; a ValueError/TypeError of the target
    (a bad value, an unknown keyword) or OSError (an input file that is a directory, not HDF5, ...)
    becomes HarnessInputError naming the group ``what``."""
    if node is None:
        raise HarnessInputError(f"{what}: missing (select an option of the {what} group)")
    try:
        return instantiate(node, **kwargs)
    except Exception as exc:
        cause = exc.__cause__ or exc
        if isinstance(cause, (ValueError, TypeError, OSError)):  # OSError: an input file that cannot be read
            raise HarnessInputError(f"{what}: {str(cause).splitlines()[0]}") from exc
        raise
