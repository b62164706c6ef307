"""Atomic writes: an interrupted write leaves neither the target nor a temporary file."""
import pytest

from harness.core.atomic import atomic_path, atomic_write_text


def test_atomic_write_replaces_whole_file(tmp_path):
    p = tmp_path / "a.json"
    atomic_write_text(p, "one")
    atomic_write_text(p, "two")
    assert p.read_text() == "two"
    assert [x.name for x in tmp_path.iterdir()] == ["a.json"]


def test_interrupted_write_leaves_nothing(tmp_path):
    p = tmp_path / "b.h5"
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_rewrite_keeps_the_old_file(tmp_path):
    p = tmp_path / "c.txt"
    atomic_write_text(p, "recorded")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(p) as tmp:
            tmp.write_text("partial")
            raise KeyboardInterrupt
    assert p.read_text() == "recorded"
    assert [x.name for x in tmp_path.iterdir()] == ["c.txt"]
