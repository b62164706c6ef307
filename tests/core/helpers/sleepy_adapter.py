"""A test adapter: the real load-transfer case, or (case.params.sleep_s > 0) a run that
writes ``started`` in its run directory and then sleeps, for a test to signal it mid-run."""
import copy
import time

from omegaconf import OmegaConf, open_dict


def run(cfg, ctx):
    sleep_s = float(OmegaConf.select(cfg, "case.params.sleep_s", default=0.0) or 0.0)
    if sleep_s <= 0:
        from harness.families.load_transfer import run as real

        plain = copy.deepcopy(cfg)
        with open_dict(plain):
            del plain.case.params["sleep_s"]
        return real(plain, ctx)
    (ctx.run_dir / "started").write_text("1")
    time.sleep(sleep_s)
    raise AssertionError("the test should have interrupted this run")
