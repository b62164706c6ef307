"""harness.node_copy and harness.fast_yaml: the faster copies and YAML of job configs equal OmegaConf's own.

Checked against ``copy.deepcopy`` and ``OmegaConf.to_yaml`` (the plain implementations) on composed
job configs of every family, node by node: type, metadata (reference and object types, flags),
value, parent, and no node shared with the original."""
from __future__ import annotations

import copy
import pickle
import sys
import types
from dataclasses import dataclass

import pytest
from omegaconf import DictConfig, ListConfig, OmegaConf

from harness.launch import fast_yaml
from harness.launch import node_copy

CASES = ["dem/energy_conservation", "vessel/surge_quadratic_decay", "load_transfer/uniform_pressure",
         "integrators/hires_ros2", "beam/cantilever_modes", "examples/pendulum"]


@pytest.fixture(scope="module")
def job_configs():
    """Composed job configs with their ``hydra`` node, as a suite job gets them."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from harness.core.compose import CONF_DIR, CONFIG_NAME, register_resolvers
    from harness.core.configs import register_all

    register_resolvers()
    register_all()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="harness"):
        cfgs = [compose(CONFIG_NAME, [f"+case={c}", "suite=fast"], return_hydra_config=True) for c in CASES]
    GlobalHydra.instance().clear()
    return cfgs


def _walk(node, path=()):
    yield path, node
    content = node.__dict__.get("_content")
    if isinstance(node, DictConfig) and isinstance(content, dict):
        for key, child in content.items():
            yield from _walk(child, path + (key,))
    elif isinstance(node, ListConfig) and isinstance(content, list):
        for i, child in enumerate(content):
            yield from _walk(child, path + (i,))


def _assert_same_tree(original, copied):
    a, b = dict(_walk(original)), dict(_walk(copied))
    assert a.keys() == b.keys()
    ids_a = {id(n) for n in a.values()}
    for path, node in a.items():
        other = b[path]
        assert type(other) is type(node), path
        assert other._metadata == node._metadata, path
        assert id(other) not in ids_a, f"{path}: a node of the original is in the copy"
        if "_val" in node.__dict__:
            assert other._val is node._val or (other._val == node._val and type(other._val) is type(node._val)), path
        if path:
            assert other._get_parent() is b[path[:-1]], f"{path}: parent is not its container in the copy"
    assert copied._get_parent() is original._get_parent()  # retained, as OmegaConf's __deepcopy__ does
    assert OmegaConf.to_yaml(copied) == OmegaConf.to_yaml(original)


def test_copy_equals_deepcopy_on_job_configs(job_configs):
    for cfg in job_configs:
        _assert_same_tree(cfg, node_copy.copy_node(cfg))
        _assert_same_tree(cfg, copy.deepcopy(cfg))  # the reference passes the same checks
        for key in ("case", "gate", "hydra"):  # a child: its parent is retained, its subtree copied
            child = cfg._get_node(key)
            copied = node_copy.copy_node(child)
            _assert_same_tree(child, copied)
            assert copied._get_parent() is cfg
        copied = node_copy.copy_node(cfg)
        copied.case.name = "changed"
        assert cfg.case.name != "changed"


def test_copy_keeps_the_class_of_a_module_executed_again():
    module = types.ModuleType("harness_probe_schema")
    sys.modules[module.__name__] = module
    try:
        @dataclass
        class Probe:
            n: int = 3

        Probe.__module__, Probe.__qualname__ = module.__name__, "Probe"
        module.Probe = Probe
        cfg = OmegaConf.create({"probe": OmegaConf.structured(Probe)})

        @dataclass
        class Probe:  # noqa: F811 - the same name bound anew, as a re-executed module does
            n: int = 3

        Probe.__module__, Probe.__qualname__ = module.__name__, "Probe"
        module.Probe = Probe
        with pytest.raises(pickle.PicklingError):
            pickle.dumps(cfg)
        copied = node_copy.copy_node(cfg)
        assert copied is not None
        assert OmegaConf.get_type(copied, "probe") is OmegaConf.get_type(cfg, "probe")
        assert OmegaConf.get_type(copied, "probe") is not Probe
        _assert_same_tree(cfg, copied)
    finally:
        del sys.modules[module.__name__]


def test_a_child_with_a_foreign_parent_is_copied_the_plain_way():
    cfg = OmegaConf.create({"hydra": {"job": {"name": "x"}}, "a": 1})
    masked = OmegaConf.masked_copy(cfg, "hydra")
    masked.hydra._set_parent(cfg)  # what HydraConfig.set_config does
    assert node_copy.copy_node(masked) is None
    node_copy.install()
    try:
        copied = copy.deepcopy(masked)
    finally:
        for cls in (DictConfig, ListConfig):
            cls.__deepcopy__ = cls.__deepcopy__.plain
    assert copied.hydra._get_parent() is copied  # as OmegaConf's own copy: not the whole job config
    assert OmegaConf.to_container(copied) == {"hydra": {"job": {"name": "x"}}}


def test_objects_held_as_values_are_shared_as_omegaconfs_copy_shares_them():
    """``allow_objects`` values (a local function pickle cannot name, a mutable array) are the same
    objects in the copy, as in ``copy.deepcopy``; the tree around them is new."""
    import numpy as np

    def local_function():
        return 1

    arr = np.arange(3.0)
    cfg = OmegaConf.create({"f": local_function, "a": arr, "n": 2, "sub": {"m": [1, 2]}}, flags={"allow_objects": True})
    plain = copy.deepcopy(cfg)
    copied = node_copy.copy_node(cfg)
    assert copied is not None
    for c in (plain, copied):
        assert c.f is local_function and c.a is arr and c.n == 2
        assert c._get_node("sub") is not cfg._get_node("sub") and c.sub.m == [1, 2]
    _assert_same_tree(cfg, copied)
    copied.sub.m.append(3)
    assert cfg.sub.m == [1, 2]


def test_fast_yaml_reads_back_as_omegaconfs_yaml(job_configs):
    for cfg in job_configs:
        fast, plain = fast_yaml.to_yaml(cfg), OmegaConf.to_yaml(cfg)
        assert OmegaConf.to_container(OmegaConf.create(fast)) == OmegaConf.to_container(OmegaConf.create(plain))
        task = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
        assert OmegaConf.to_container(OmegaConf.create(fast_yaml.to_yaml(task))) == OmegaConf.to_container(task)
    # strings that would read back as another type stay quoted, as OmegaConf writes them
    tricky = OmegaConf.create({"a": "1.0", "b": "true", "c": "10", "d": "x: y", "e": [1.5, "null", "~"], "f": None,
                               "g": "${a}", "h": "line\nbreak"})
    assert fast_yaml.to_yaml(tricky) == OmegaConf.to_yaml(tricky)
    assert OmegaConf.to_container(OmegaConf.create(fast_yaml.to_yaml(tricky))) == OmegaConf.to_container(tricky)
