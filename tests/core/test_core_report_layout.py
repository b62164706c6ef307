"""The study part of the HTML report in a real headless Chromium: the solution-verification table
(u_num, asymptotic ratio, convergence type) is shown and a wide job table scrolls inside its own
box, not the page."""
from __future__ import annotations

import json
from pathlib import Path

from harness.studies import report


def _sweep(tmp_path: Path) -> Path:
    """A sweep directory as the study callback leaves it: 3 jobs with 40 metrics of long names."""
    sweep = tmp_path / "sweep"
    (sweep / "study").mkdir(parents=True)
    (sweep / "study_state.json").write_text(json.dumps({"sweep_dir": str(sweep)}))
    names = [f"a_rather_long_metric_name_number_{i:02d}" for i in range(40)]
    jobs = [{"job": j, "case": "load_transfer/inscribed_surface", "status": "ok", "verdict": "pass",
             "mlflow_run_id": f"{j:032x}", "parameter": 4.0 * 2**j, **{n: 1e-3 * (j + 1) for n in names}}
            for j in range(3)]
    study = {"name": "load_transfer/mesh_refinement", "verdict": "pass", "n_jobs": 3, "n_failed": 0,
             "metrics": {"observed_order": 1.999},
             "error_metric": {"name": "e_disk", "at_round_off": False, "pairwise": [1.996, 1.999],
                              "least_squares": 1.998, "order_gate": {"expected": 2.0, "tolerance": 0.2, "verdict": "pass"}},
             "verification": {"F_M_max": {"convergence": "monotonic", "R": 0.2508, "p": 1.9954, "f1": 313935.0203,
                                          "f_extrapolated": 314160.0362, "gci_fine": 8.959e-4, "asymptotic_ratio": 1.00215,
                                          "u_num": 225.016, "coverage": "GCI (Fs = 1.25): about 95 % coverage"},
                              "peak": {"convergence": "oscillatory", "R": -0.5, "note": "oscillatory: no GCI"}},
             "jobs": jobs}
    (sweep / "study" / "study.json").write_text(json.dumps(study))
    return sweep


def test_report_states_u_num_and_keeps_the_job_table_inside_the_page(tmp_path, request):
    html = report.build(_sweep(tmp_path))
    assert "solution verification" in html and "314160.0362" in html and "225.016" in html
    assert '<td class="convergence">oscillatory</td>' in html and "about 95 % coverage" in html
    driver = request.getfixturevalue("browser")  # the shared headless Chromium (skips without it)
    out = tmp_path / "report.html"
    out.write_text(html)
    driver.set_window_size(1024, 800)
    driver.get(out.as_uri())
    page = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    box = driver.execute_script("const t = document.querySelector('table.jobs');"
                                "return [t.parentElement.className, t.parentElement.scrollWidth,"
                                " t.parentElement.clientWidth, t.scrollWidth]")
    cells = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.verification td')).map(td => td.innerText)")
    assert page[0] <= page[1], page  # the page itself does not scroll sideways
    assert box[0] == "scroll" and box[1] > box[2], box  # the 40-column table scrolls inside its box
    assert "monotonic" in cells and "1.00215" in cells and "225.016" in cells and "oscillatory" in cells
