"""Reading the built documentation site (``docs/_build/html``): its pages, their internal links and
anchors, the notebooks' stored outputs, and a headless Chromium that renders every page with
formulas. The checks themselves are in ``test_site.py``; this module only reads."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import shutil
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "docs" / "_build" / "html"


class _Page(HTMLParser):
    """The ids, the link targets and the count of a few classes of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []
        self.classes: dict[str, int] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])
        for name in (attrs.get("class") or "").split():
            self.classes[name] = self.classes.get(name, 0) + 1


@functools.cache
def parsed(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def pages(site: Path = SITE) -> list[Path]:
    """Every HTML page of the site, the search and index pages of Sphinx included."""
    return sorted(site.rglob("*.html"))


def broken_links(site: Path = SITE) -> list[str]:
    """``page -> target`` for every internal link whose file, or whose ``#anchor`` in that file, is missing."""
    broken = []
    for page in pages(site):
        for href in parsed(page).links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith("mailto:"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {href}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in parsed(target).ids:
                broken.append(f"{page.relative_to(site)} -> {href} (no such anchor)")
    return broken


def math_pages(site: Path = SITE) -> list[Path]:
    """The pages with at least one formula (Sphinx marks each with the class ``math``)."""
    return [page for page in pages(site) if parsed(page).classes.get("math", 0)]


HARNESS = """<!DOCTYPE html><html><body><pre id="result">pending</pre><script>
const pages = %s;
function check(url) {
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.style.width = "1200px"; frame.style.height = "800px";
    frame.onload = async () => {
      const win = frame.contentWindow, doc = frame.contentDocument;
      const formulas = doc.querySelectorAll(".math").length;
      if (formulas > 0) {
        try { await win.MathJax.startup.promise; } catch (e) { resolve({url, error: "formulas but no MathJax: " + e}); return; }
      }
      resolve({url, formulas, rendered: doc.querySelectorAll("mjx-container").length,
               errors: doc.querySelectorAll("mjx-merror").length, title: doc.title});
    };
    frame.src = url;
    document.body.appendChild(frame);
  });
}
(async () => {
  const results = [];
  for (const url of pages) {
    const response = await fetch(url);
    results.push(response.ok ? await check(url) : {url, error: "HTTP " + response.status});
  }
  document.getElementById("result").textContent = JSON.stringify(results);
})();
</script></body></html>"""


@contextlib.contextmanager
def served(site: Path):
    """The site on a local HTTP server (one origin, so the harness page can read each page's DOM)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def rendered(site: Path, relative: list[str], timeout: float = 600) -> list[dict]:
    """Each page opened by headless Chromium from a harness page on a local server: whether it
    loaded, how many formulas it has, how many MathJax rendered and how many it could not parse."""
    harness = site / "_site_check.html"
    harness.write_text(HARNESS % json.dumps(["/" + name for name in relative]))
    try:
        with served(site) as url:
            command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                       "--no-first-run", "--disable-extensions", "--virtual-time-budget=120000", "--dump-dom",
                       f"{url}/{harness.name}"]
            dom = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True).stdout
    finally:
        harness.unlink()
    start = dom.index('<pre id="result">') + len('<pre id="result">')
    text = dom[start:dom.index("</pre>", start)]
    import html

    return json.loads(html.unescape(text))
