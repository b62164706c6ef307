"""Shared fixtures: an isolated outputs directory with a real sqlite MLflow store."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

FULL = os.environ.get("HARNESS_FULL") == "1"


def full_size() -> bool:
    """True when slow studies and benchmarks should run at full size (HARNESS_FULL=1)."""
    return FULL


def command_env(drop=("HARNESS_OUTPUTS",), checkout_on_path: bool = True) -> dict:
    """The environment a README command runs in, as a user's shell would have it: this Python's
    bin folder first on PATH, the checkout on PYTHONPATH (``python -m harness`` from any folder),
    and none of the variables in ``drop``."""
    import sys

    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if checkout_on_path:
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop a process started with start_new_session=True and everything left in its group."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader: an unreaped leader keeps its group alive as a zombie
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


@pytest.fixture(scope="session")
def harness_env(tmp_path_factory) -> Path:
    """Point the harness at a fresh outputs directory (run dirs, sqlite store, artifacts).

    The sqlite store and its schema are created here, once, in this process, before any
    case runs. Returns the outputs directory; the store is ``sqlite:///<dir>/mlflow.db``.
    """
    out = tmp_path_factory.mktemp("outputs")
    os.environ["HARNESS_OUTPUTS"] = str(out)
    from harness.tracking import records as tracking

    tracking.ensure_experiment(f"sqlite:///{out}/mlflow.db", "harness/_init", str(out / "mlartifacts"))
    return out


@pytest.fixture(scope="session")
def tracking_uri(harness_env) -> str:
    return f"sqlite:///{harness_env}/mlflow.db"


CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"  # Debian's chromium, chromium-driver
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1600,1200"]


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium through Selenium, with a fresh profile (one per test module)."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_text(driver, needles, timeout_s: float = 90.0) -> str:
    """The page's text once it shows every one of ``needles`` (polled every 0.5 s)."""
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = driver.find_element("tag name", "body").text
        if all(n in text for n in needles):
            return text
        time.sleep(0.5)
    raise AssertionError(f"page never showed {needles}; it shows:\n{text[:3000]}")
