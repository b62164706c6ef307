"""Gate bands, verdicts and exit codes."""
import math

import pytest

from harness.metrics import gates as G


def test_band_pass_warn_fail_upper():
    b = G.Band(pass_max=0.01, warn_max=0.02)
    assert b.judge(0.005) == "pass"
    assert b.judge(0.01) == "pass"
    assert b.judge(0.015) == "warn"
    assert b.judge(0.021) == "fail"
    assert b.judge(math.nan) == "fail"


def test_band_two_sided_order_gate():
    b = G.Band(pass_min=1.9, pass_max=2.1, warn_min=1.8, warn_max=2.2)
    assert [b.judge(v) for v in (2.0, 1.85, 2.15, 1.7, 2.5)] == ["pass", "warn", "warn", "fail", "fail"]


def test_analytic_band_has_no_warn_zone():
    b = G.Band(pass_max=1e-10, warn_max=1e-10)
    assert b.judge(1e-11) == "pass"
    assert b.judge(2e-10) == "fail"


def test_judge_uses_default_and_fails_missing_metrics():
    bands = {"e_J": G.Band(pass_max=0.5)}
    res = G.judge({"e_F": 0.015, "e_J": 0.4}, ["e_F", "e_J", "absent"], bands,
                  G.Band(pass_max=0.01, warn_max=0.02))
    assert {k: r.verdict for k, r in res.items()} == {"e_F": "warn", "e_J": "pass", "absent": "fail"}
    with pytest.raises(ValueError, match="no band"):
        G.judge({"x": 1.0}, ["x"], {}, None)


def test_worst_and_exit_codes():
    assert G.worst([]) == "pass"
    assert G.worst(["pass", "warn"]) == "warn"
    assert G.worst(["warn", "fail", "pass"]) == "fail"
    assert G.exit_code("pass") == 0 and G.exit_code("warn") == 0 and G.exit_code("fail") == 1
