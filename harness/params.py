"""Helpers for family adapters: typed ``case.params`` and instantiation with clear errors."""
from __future__ import annotations

from typing import Any, Optional, Type, TypeVar

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from harness.context import HarnessInputError

T = TypeVar("T")


def case_params(cfg: DictConfig, schema: Type[T]) -> T:
    """``case.params`` merged onto the dataclass ``schema`` and returned as an instance.

    An unknown key or a wrong type raises HarnessInputError naming ``case.params.<key>``.
    """
    raw = OmegaConf.select(cfg, "case.params")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), raw if raw is not None else {})
    except Exception as exc:  # omegaconf ValidationError / ConfigKeyError
        key = getattr(exc, "full_key", None) or "?"
        raise HarnessInputError(f"case.params.{key}: {str(exc).splitlines()[0]}") from exc
    return OmegaConf.to_object(merged)  # type: ignore[return-value]


def build(node: Optional[DictConfig], what: str, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate(node, **kwargs)``; a ValueError/TypeError of the target
    (a bad value, an unknown keyword) becomes HarnessInputError naming the group ``what``."""
    if node is None:
        raise HarnessInputError(f"{what}: missing (select an option of the {what} group)")
    try:
        return instantiate(node, **kwargs)
    except Exception as exc:
        cause = exc.__cause__ or exc
        if isinstance(cause, (ValueError, TypeError)):
            raise HarnessInputError(f"{what}: {str(cause).splitlines()[0]}") from exc
        raise
