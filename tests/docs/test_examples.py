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
