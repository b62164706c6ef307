"""The documentation site: pages, API reference from docstrings, and the catalogue generated from conf/."""
from __future__ import annotations

import html
import re

import yaml

from tests.docs.conftest import ROOT


def _text(path) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))))


def test_every_page_is_built(docs_html):
    for page in ["index", "getting-started", "guide", "_generated/catalogue", "api/index",
                 *(f"families/{f}" for f in ("load_transfer", "load_transfer_contracts", "load_transfer_kratos",
                                             "dem", "vessel", "beam", "integrators")),
                 *(f"api/{f}" for f in ("load_transfer", "dem", "vessel", "beam", "integrators"))]:
        assert (docs_html / f"{page}.html").is_file(), page
    guide = _text(docs_html / "guide.html")
    assert "Quick start" in guide and "Config groups" in guide  # the README, included
    assert "Hertz-Mindlin damping" in _text(docs_html / "families" / "dem.html")
    start = _text(docs_html / "getting-started.html")  # the README's "Use it in your solver's repository"
    assert "Use it in your solver" in start and "harness init" in start and "Finding the project" in start


def test_api_reference_lists_every_exported_name_with_its_signature(docs_html):
    import importlib

    for fam in ("load_transfer", "dem", "vessel", "beam", "integrators"):
        mod = importlib.import_module(f"models.{fam}")
        page = (docs_html / "api" / f"{fam}.html").read_text(encoding="utf-8")
        for name in mod.__all__:
            if isinstance(getattr(mod, name), type(mod)) or not callable(getattr(mod, name)):
                continue  # submodules and constants are described in the package docstring
            assert f'id="models.{fam}.{name}"' in page, f"models.{fam}.{name} missing from the API page"
    dem = _text(docs_html / "api" / "dem.html")
    assert re.search(r"binary_impact\s*\(\s*material1", dem)
    assert "incidence_velocity" in dem and "Hertz" in dem


def test_case_catalogue_is_generated_from_conf(docs_html):
    text = _text(docs_html / "_generated" / "catalogue.html")
    for path in sorted((ROOT / "conf" / "case").rglob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        case = data.get("case") or {}
        assert case["name"] in text, case["name"]
        if case.get("description"):
            assert " ".join(case["description"].split(":")[0][:40].split()) in text, case["name"]
        for gate in case.get("gates") or []:
            assert gate in text
    for path in sorted((ROOT / "conf" / "study").rglob("*.yaml")):
        study = (yaml.safe_load(path.read_text()) or {}).get("study") or {}
        assert study["name"] in text, study["name"]
    # a band from a case file, rendered with its numbers
    assert re.search(r"e_duration \(pass ≤ 0\.0001, warn ≤ 0\.001\)", text)
