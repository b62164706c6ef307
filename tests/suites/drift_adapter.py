"""A test adapter standing in for a changed solver: the load_transfer adapter, whose results
depend on the environment as they would on a code change (nothing of it is in the config).

HARNESS_TEST_DRIFT=x     F_M_max and F_M scaled by (1 + x)
HARNESS_TEST_FAIL=a,b    cases whose e_F is set to 1.0 (their gate fails)
HARNESS_TEST_CRASH=a,b   cases whose model raises
HARNESS_TEST_INVALID=a   cases whose input is rejected (HarnessInputError)
"""
import os

from harness.core.context import HarnessInputError
from harness.families import load_transfer


def _listed(var: str, case: str) -> bool:
    return case in os.environ.get(var, "").split(",")


def run(cfg, ctx):
    case = str(cfg.case.name)
    if _listed("HARNESS_TEST_CRASH", case):
        raise RuntimeError("injected crash of the model")
    if _listed("HARNESS_TEST_INVALID", case):
        raise HarnessInputError("case.params: injected invalid input")
    result = load_transfer.run(cfg, ctx)
    drift = float(os.environ.get("HARNESS_TEST_DRIFT", "0"))
    for name in ("F_M_max", "F_M"):
        if name in result.metrics:
            result.metrics[name] = result.metrics[name] * (1.0 + drift)
    if _listed("HARNESS_TEST_FAIL", case):
        result.metrics["e_F"] = 1.0
    return result
