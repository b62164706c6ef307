"""Deep copies of OmegaConf configs by a pickle round trip, 1.7x faster than ``copy.deepcopy``.

Composing one job's config and starting it copies OmegaConf nodes many times: Hydra's
``run_job`` copies the whole config twice, ``HydraConfig.set_config`` copies the ``hydra``
node twice, every group config is copied when it is embedded at its package and merges copy
what they insert. OmegaConf's ``__deepcopy__`` walks the tree in Python, a call per node and per
metadata field: in ``suite=fast`` over 2 joblib workers these copies were a quarter of what the
workers spent between cases. A pickle round trip makes the same tree in C: 2.7 ms against
4.7 ms for a whole job config here, 0.024 ms against 0.040 ms for a one-key node.

:func:`copy_node` is that copy, with what ``__deepcopy__`` guarantees kept:

* the copy's own parent is the original's (retained, not copied), its descendants are new;
* classes (a structured config's dataclass, an enum's class) are the same objects, not looked up
  by name again: a plugin module that Hydra's plugin scan executed a second time holds a new class
  of the same name, which plain pickling refuses;
* a node whose direct children have another parent (``HydraConfig.cfg``, whose ``hydra`` child
  points at the whole job config) is not copied this way: pickle would copy that other tree too.

:func:`install` makes ``DictConfig`` and ``ListConfig`` deep copies use it, falling back to
OmegaConf's own copy whenever :func:`copy_node` declines or pickling fails.
"""
from __future__ import annotations

import io
import pickle
from typing import Any, List, Optional

_PROTOCOL = pickle.HIGHEST_PROTOCOL


class _ClassKeepingPickler(pickle.Pickler):
    """Pickles classes as indices into ``classes``, so the copy refers to the very same class objects."""

    def __init__(self, stream, classes: List[type]) -> None:
        super().__init__(stream, _PROTOCOL)
        self.classes = classes

    def persistent_id(self, obj: Any) -> Optional[int]:
        if isinstance(obj, type):
            self.classes.append(obj)
            return len(self.classes) - 1
        return None


class _ClassKeepingUnpickler(pickle.Unpickler):
    def __init__(self, stream, classes: List[type]) -> None:
        super().__init__(stream)
        self.classes = classes

    def persistent_load(self, pid: int) -> type:
        return self.classes[pid]


def _children(node) -> Any:
    content = node.__dict__.get("_content")
    if isinstance(content, dict):
        return content.values()
    if isinstance(content, list):
        return content
    return ()


def pickle_copy(obj: Any) -> Any:
    """A deep copy of ``obj`` by a pickle round trip that keeps class objects; raises what pickle raises."""
    stream, classes = io.BytesIO(), []
    _ClassKeepingPickler(stream, classes).dump(obj)
    stream.seek(0)
    return _ClassKeepingUnpickler(stream, classes).load()


def copy_node(node) -> Any:
    """A deep copy of an OmegaConf container (module docstring), or None where it cannot be made
    this way (a child with a foreign parent, something pickle refuses)."""
    if any(child.__dict__.get("_parent") is not node for child in _children(node)):
        return None
    parent = node.__dict__.get("_parent")
    node.__dict__["_parent"] = None
    try:
        copied = pickle_copy(node)
    except Exception:  # noqa: BLE001 - anything pickle refuses: the caller copies the plain way
        return None
    finally:
        node.__dict__["_parent"] = parent
    copied.__dict__["_parent"] = parent
    return copied


def deep_copy(obj: Any) -> Any:
    """``copy.deepcopy(obj)``, by :func:`copy_node` for OmegaConf containers where it applies."""
    import copy

    from omegaconf import DictConfig, ListConfig

    if isinstance(obj, (DictConfig, ListConfig)):
        copied = copy_node(obj)
        if copied is not None:
            return copied
    return copy.deepcopy(obj)


def install() -> bool:
    """Route ``copy.deepcopy`` of ``DictConfig`` and ``ListConfig`` through :func:`copy_node` in this
    process; True when newly installed."""
    from omegaconf import DictConfig, ListConfig

    installed = False
    for cls in (DictConfig, ListConfig):
        plain = cls.__deepcopy__
        if getattr(plain, "harness_pickle", False):
            continue

        def deepcopy_by_pickle(self, memo, _plain=plain):
            copied = copy_node(self)
            return copied if copied is not None else _plain(self, memo)

        deepcopy_by_pickle.harness_pickle = True
        deepcopy_by_pickle.plain = plain
        cls.__deepcopy__ = deepcopy_by_pickle
        installed = True
    return installed
