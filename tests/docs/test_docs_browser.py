"""The built documentation opened in headless Chromium: title, navigation, a function signature."""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from tests.docs.conftest import ROOT

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,1000"]


@pytest.fixture(scope="module")
def browser():
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-docs-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(DRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_index_and_an_api_page_render(docs_html, browser):
    shots = ROOT / "outputs" / "test-artifacts"
    shots.mkdir(parents=True, exist_ok=True)
    browser.get((docs_html / "index.html").as_uri())
    assert "mechanics-harness" in browser.title
    nav = browser.find_element("css selector", ".sidebar-tree").text
    for entry in ("API reference", "models.dem", "Case catalogue", "DEM family"):
        assert entry in nav, f"navigation lacks {entry!r}: {nav[:500]}"
    browser.save_screenshot(str(shots / "docs_index.png"))

    browser.get((docs_html / "api" / "dem.html").as_uri())
    assert "models.dem" in browser.title
    sig = browser.find_element("id", "models.dem.binary_impact").text
    assert sig.startswith("models.dem.binary_impact(") and "v_n" in sig and "wall_material" in sig, sig
    # the stylesheet applied: furo's sidebar is laid out beside the content, not above it
    sidebar = browser.find_element("css selector", ".sidebar-drawer")
    content = browser.find_element("css selector", ".content")
    assert sidebar.location["x"] < content.location["x"] and sidebar.size["width"] > 100
    browser.save_screenshot(str(shots / "docs_api_dem.png"))
