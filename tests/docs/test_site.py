"""The built documentation site, opened as a reader would (``make docs`` builds it and runs these,
marker ``site``): every page that should be there is, every internal link and anchor resolves,
headless Chromium loads each page and MathJax, served from the site itself, renders every
formula with no network, and each gallery notebook shows its stored outputs."""

from __future__ import annotations

import json
import re

import pytest

from tests.docs import site_check

pytestmark = pytest.mark.site


@pytest.fixture(scope="module")
def site():
    if not (site_check.SITE / "index.html").is_file():
        pytest.fail("no built site in docs/_build/html: run `make docs`, which builds it and then runs these checks")
    return site_check.SITE


def expected_pages() -> list[str]:
    """The pages the repository says the site has: its own pages, one per card, notebook and API page."""
    source = (site_check.ROOT / "docs" / "conf.py").read_text()
    api = re.search(r"^API_PAGES = \{(.*?)^\}", source, flags=re.S | re.M).group(1)
    api_pages = re.findall(r'^    "(\w+)": \(', api, flags=re.M)
    assert len(api_pages) >= 7, api_pages
    own = [p.stem for p in (site_check.ROOT / "docs").glob("*.md")]
    cards = [f"_copied/models/{p.stem}" for p in (site_check.ROOT / "models").glob("*.md")]
    notebooks = [f"_copied/notebooks/{p.stem}" for p in (site_check.ROOT / "notebooks").glob("*.ipynb")]
    return sorted(f"{name}.html" for name in own + cards + notebooks + [f"_copied/api/{p}" for p in api_pages + ["index"]])


def test_every_page_is_there(site):
    missing = [page for page in expected_pages() if not (site / page).is_file()]
    assert not missing, f"pages missing from the built site: {missing}"


def test_every_internal_link_and_anchor_resolves(site):
    broken = site_check.broken_links(site)
    assert not broken, "broken internal links:\n" + "\n".join(broken[:40])


def test_every_page_loads_in_chromium_and_every_formula_renders(site):
    if site_check.chromium() is None:
        pytest.fail("no chromium on PATH: `apt-get install chromium` (.ci/run installs it)")
    math = {str(p.relative_to(site)) for p in site_check.math_pages(site)}
    assert len(math) >= 10, math  # the cards have formulas: an empty set would be a parser fault
    results = site_check.rendered(site, expected_pages())
    assert len(results) == len(expected_pages())
    failed = [r for r in results if "error" in r]
    assert not failed, failed
    unrendered = [r for r in results if r["url"].lstrip("/") in math and (r["rendered"] < r["formulas"] or r["errors"])]
    assert not unrendered, f"formulas MathJax did not render: {unrendered}"
    assert sum(r["formulas"] for r in results) > 500


def test_each_gallery_notebook_shows_its_stored_outputs(site):
    gallery = site_check.parsed(site / "gallery.html")
    for notebook in sorted((site_check.ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        stored = sum(1 for cell in cells if cell.get("outputs"))
        images = sum(1 for cell in cells for out in cell.get("outputs", []) if "image/png" in out.get("data", {}))
        page = site_check.parsed(site / "_copied" / "notebooks" / f"{notebook.stem}.html")
        assert stored and page.classes.get("cell_output", 0) >= stored, (notebook.name, stored, page.classes.get("cell_output"))
        assert len(page.images) >= images, f"{notebook.name}: {images} stored figures, {len(page.images)} shown"
        assert any(notebook.stem in link for link in gallery.links), f"{notebook.name} is not in the gallery"
    thumbnails = [src for src in gallery.images if (site / src).is_file()]
    assert len(thumbnails) == len(list((site_check.ROOT / "notebooks").glob("*.ipynb"))), gallery.images
