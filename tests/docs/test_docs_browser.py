"""The built documentation opened in headless Chromium: title, navigation, a function signature."""
from __future__ import annotations


import pytest

from tests.docs.conftest import ROOT



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
