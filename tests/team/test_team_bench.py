"""The tracking benchmark case against the README's PostgreSQL-backed server (reduced size;
full with HARNESS_FULL=1). Performance is gated by the case, not asserted here: the test checks
that the logged numbers are the ones measured and that every benchmark run reached its store once."""
from __future__ import annotations

import json
import statistics

import pytest


@pytest.mark.slow
def test_tracking_server_benchmark_logs_what_it_measured(team_stack, tmp_path, tm):
    out = tmp_path / "outputs"
    per_writer = 25 if tm.FULL else 2
    repeats = 3 if tm.FULL else 2
    res = tm.harness(["+case=bench/tracking_server", f"case.params.server_uri={team_stack.uri}",
                      f"case.params.runs_per_writer={per_writer}", f"case.params.repeats={repeats}"], out,
                     timeout=1800)
    assert res.returncode in (0, 1), res.stdout + res.stderr  # a missed target is a gate verdict, not a crash
    run_dir = next(out.glob("runs/bench/tracking_server/*"))
    doc = json.loads((run_dir / "metrics.json").read_text())
    m, gates = doc["metrics"], doc["gates"]
    bench = json.loads((run_dir / "bench.json").read_text())
    assert bench["warmup"] is True and bench["writers"] == 2 and bench["repeats"] == repeats
    rounds = bench["rounds"]  # the stores took turns; each store's best round is the one reported
    assert [(r["store"], r["round"]) for r in rounds] == [(st, k) for k in range(repeats) for st in ("sqlite", "server")]
    for store in ("sqlite", "server"):
        mine = [r for r in rounds if r["store"] == store]
        assert bench[store]["runs_per_s"] == max(r["runs_per_s"] for r in mine)
        assert bench[store] in mine
        uids = [u for r in mine for w in r["writers"] for u in w["uids"]]
        assert len(set(uids)) == len(uids) == repeats * 2 * 2 * per_writer
    for b in rounds:
        assert len(b["writers"]) == 2 and len({w["pid"] for w in b["writers"]}) == 2
        for w in b["writers"]:
            assert len(w["harness_s"]) == len(w["raw_s"]) == per_writer
        assert b["runs"] == 2 * 2 * per_writer
        assert b["runs_found"] == b["runs_expected"] == b["runs"]  # each run in the store exactly once
        wall = max(w["end"] for w in b["writers"]) - min(w["start"] for w in b["writers"])
        assert b["wall_s"] == pytest.approx(wall, rel=1e-12)
        # the two writers really overlapped in time
        (s1, e1), (s2, e2) = ((w["start"], w["end"]) for w in b["writers"])
        assert min(e1, e2) > max(s1, s2)
    assert bench["server"]["uri"] == team_stack.uri and bench["sqlite"]["uri"].startswith("sqlite:///")
    assert m["server_runs_per_s"] == pytest.approx(bench["server"]["runs"] / bench["server"]["wall_s"], rel=1e-12)
    assert m["server_to_sqlite"] == pytest.approx(m["server_runs_per_s"] / m["sqlite_runs_per_s"], rel=1e-12)
    harness_median = {store: statistics.median(t for r in rounds if r["store"] == store for w in r["writers"]
                                               for t in w["harness_s"]) for store in ("sqlite", "server")}
    assert m["server_to_sqlite_harness"] == pytest.approx(harness_median["sqlite"] / harness_median["server"], rel=1e-12)
    server_rounds = [r for r in rounds if r["store"] == "server"]
    harness_s = [t for r in server_rounds for w in r["writers"] for t in w["harness_s"]]
    raw_s = [t for r in server_rounds for w in r["writers"] for t in w["raw_s"]]
    assert m["harness_to_raw_server"] == pytest.approx(statistics.median(harness_s) / statistics.median(raw_s),
                                                       rel=1e-12)
    assert m["runs_missing_or_duplicated"] == 0.0
    for store in ("sqlite", "server"):  # the machine's CPU time per run over the store's best round
        b = bench[store]
        assert b["machine_cpu_s"] > 0 and 0 < b["cpu_busy_share"] <= 1.05
        assert m[f"{store}_machine_cpu_ms_per_run"] == pytest.approx(1000 * b["machine_cpu_s"] / b["runs"], rel=1e-12)
    assert gates["server_to_sqlite"]["band"]["pass_min"] == 0.5
    assert gates["harness_to_raw_server"]["band"]["pass_max"] == 1.2
    tm.write_artifact("team_bench_tracking_server.json", {"metrics": m, "verdicts": {k: g["verdict"] for k, g in
                                                                                     gates.items()},
                                                          "runs_per_writer": per_writer})


def test_tracking_server_benchmark_without_a_server_is_invalid_input(tmp_path, tm):
    res = tm.harness(["+case=bench/tracking_server", "tracking=none"], tmp_path / "outputs")
    assert res.returncode == 2
    assert "case.params.server_uri: must be the http(s) URI of an MLflow server on PostgreSQL" in res.stdout
