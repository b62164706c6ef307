"""Timed comparisons exclude JIT compilation: a cold numba cache gives the ratio of a warm one.

On an empty NUMBA_CACHE_DIR the first call of a compiled step loop compiles it (seconds); before
the warm-up the beam benchmark charged that to the full model (ratios of 3e-4 instead of ~0.05).
The two runs share one fresh cache directory: the first compiles into it, the second loads it.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASE = ["+case=bench/beam_reduction", "tracking=none", "case.params.t_end=1.0", "case.params.repeats=5",
        "case.params.solvers=[schur]"]


def _run(outputs: Path, cache: Path) -> dict:
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs), NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    res = subprocess.run([sys.executable, "-m", "harness", *CASE], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode in (0, 1), res.stdout + res.stderr  # a gate may fail on a loaded machine
    runs = sorted((outputs / "runs" / "bench" / "beam_reduction").iterdir())
    data = json.loads((runs[-1] / "metrics.json").read_text())
    return data.get("metrics", data)


@pytest.mark.slow
def test_cold_numba_cache_ratio_matches_the_warm_one(tmp_path):
    cache = tmp_path / "numba_cache"
    cache.mkdir()
    cold = _run(tmp_path / "cold", cache)
    assert any(cache.rglob("*.nbi")), "the cold run compiled nothing into the empty cache"
    warm = _run(tmp_path / "warm", cache)
    for m in (cold, warm):
        assert m["jit_warmup"] == 1.0
    # compiling (cold) costs far more than loading the cache (warm): the warm-up saw both
    assert cold["jit_warmup_s"] > warm["jit_warmup_s"]
    r_cold, r_warm = cold["time_ratio_schur"], warm["time_ratio_schur"]
    assert 0.5 < r_cold / r_warm < 2.0, (cold, warm)
