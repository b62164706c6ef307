"""Every example script runs as the README shows it, prints its result and saves a readable PNG."""
from __future__ import annotations

import re

import matplotlib.image as mpimg
import pytest

from tests.docs.conftest import run_readme_command

EXAMPLES = {
    "python examples/dem/impact.py": "dem_impact.png",
    "python examples/beam/modes_and_reduction.py": "beam_tip.png",
    "python examples/integrators/stiff_robertson.py": "robertson.png",
    "python examples/vessel/turning_circle.py": "vessel_track.png",
    "python examples/load_transfer/pressure_to_mesh.py": "load_transfer_nodal.png",
}


def _errors(text: str) -> list:
    return [float(x) for x in re.findall(r"rel\. (?:error|diff) ([0-9.e+-]+)", text)]


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_example_runs_prints_and_saves_a_figure(command, tmp_path):
    proc = run_readme_command(command, env_extra={"HARNESS_OUTPUTS": str(tmp_path)}, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    png = tmp_path / "examples" / EXAMPLES[command]
    assert f"figure: {png}" in out
    img = mpimg.imread(png)
    assert img.ndim == 3 and img.shape[0] > 200 and img[..., :3].std() > 0.01  # a picture, not a blank
    if "dem" in command:
        errs = _errors(out)
        assert len(errs) == 3 and max(errs) < 1e-4  # Hertz closed form, 200 steps per contact
        assert re.search(r"tangential restitution -?0\.\d+", out)
    elif "beam" in command:
        errs = _errors(out)
        assert len(errs) == 4 and max(errs) < 5e-2  # reduced model bounds the full one closely
        assert "(bending)" in out
    elif "integrators" in command:
        digits = [float(x) for x in re.findall(r"scd=([0-9.]+)", out)]
        assert "success=False" not in out and len(digits) == 2 and min(digits) > 2.0
    elif "vessel" in command:
        assert "success=True" in out and "heading change" in out
    else:
        errs = _errors(out)
        assert len(errs) == 3 and max(errs) < 1e-12  # conservative: the total force is exact


def test_your_own_vessel_file_as_the_vessel_readme_shows(tmp_path):
    """cp the tanker to my_vessel.yaml (in the repository root, removed afterwards), change its
    heave stiffness, and run the example and a case on it: the case sees the changed file."""
    from tests.docs.conftest import ROOT

    readme = ROOT / "models" / "vessel" / "README.md"
    mine = ROOT / "my_vessel.yaml"
    assert not mine.exists(), "a my_vessel.yaml is already in the repository root"
    env = {"HARNESS_OUTPUTS": str(tmp_path)}
    try:
        cp = run_readme_command("cp models/vessel/data/tanker.yaml my_vessel.yaml", readme=readme)
        assert cp.returncode == 0 and mine.is_file()
        text = mine.read_text()
        K33 = "5.09680512e+7"
        assert text.count(K33) == 1
        mine.write_text(text.replace(K33, "2.03872205e+8"))  # 4 x the heave stiffness: half the period
        ex = run_readme_command("python examples/vessel/turning_circle.py my_vessel.yaml", env, readme=readme)
        assert ex.returncode == 0 and "my_vessel.yaml: success=True" in ex.stdout, ex.stderr[-2000:]
        case = run_readme_command("python -m harness +case=vessel/heave_decay source.data_file=my_vessel.yaml "
                                  "tracking=none", env, readme=readme)
        assert case.returncode == 0, case.stdout[-2000:] + case.stderr[-2000:]
        period = float(re.search(r"natural_period_s=([0-9.]+)", case.stdout).group(1))
        assert abs(period - 8.975 / 2) < 0.01  # the tanker's 8.975 s halved: the case used my file
    finally:
        mine.unlink(missing_ok=True)
