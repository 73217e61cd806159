"""The documentation site as a reader meets it: built with warnings as errors, then opened in a real headless
Chromium (Playwright), every page loaded, every image decoded, every internal link resolved.

Runs where Chromium and the docs extra are installed (``make docs`` installs the extra; ``.ci/run`` installs
Chromium). ``MARLINKIT_BROWSER_TEST=1`` (set by ``.ci/run``) turns a missing piece into a failure instead of a skip;
``MARLINKIT_BROWSER_TEST=0`` skips it, as it does the workshop's browser test.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from marlinkit import paths

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SWITCH = os.environ.get("MARLINKIT_BROWSER_TEST", "")
REQUIRED = SWITCH == "1"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _missing() -> str | None:
    if CHROMIUM is None:
        return "Chromium is not installed (Debian: apt-get install chromium)"
    for module in ("sphinx", "myst_parser", "pydata_sphinx_theme", "playwright"):
        try:
            __import__(module)
        except ImportError:
            return f"the docs extra is not installed ({module}; `make docs` installs it)"
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    reason = "MARLINKIT_BROWSER_TEST=0" if SWITCH == "0" else _missing()
    if reason:
        if REQUIRED and SWITCH != "0":
            pytest.fail(reason)
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("docs")
    result = subprocess.run([sys.executable, str(paths.REPO_ROOT / "tools" / "docs_site.py"), "--staging",
                             str(root / "src"), "--html", str(root / "html")], capture_output=True, text=True)
    assert result.returncode == 0, f"make docs failed (warnings are errors):\n{result.stdout}\n{result.stderr}"
    return root / "html"


@pytest.fixture(scope="module")
def served(site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.mark.slow
def test_every_page_loads_with_its_images_and_internal_links(site, served):
    from playwright.sync_api import sync_playwright

    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if not p.name.startswith(("genindex", "search")))
    assert {"index.html", "reproduction/marlin.html", "reproduction/maestro.html",
            "reference/configuration.html"} <= set(pages)
    broken_images, broken_links, failed = [], [], []
    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        for name in pages:
            url = urljoin(served, name)
            response = page.goto(url, wait_until="load")
            if response is None or response.status != 200:
                failed.append(f"{name}: HTTP {response.status if response else 'none'}")
                continue
            images = page.eval_on_selector_all(
                "img", "els => els.map(e => [e.getAttribute('src'), e.complete && e.naturalWidth > 0])")
            broken_images += [f"{name}: {src}" for src, ok in images if not ok]
            links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
            for link in links:
                target, _ = urldefrag(link)
                if not target.startswith(served):
                    continue
                path = site / urlparse(target).path.lstrip("/")
                if path.is_dir():
                    path = path / "index.html"
                if not path.exists():
                    broken_links.append(f"{name} -> {target}")
        browser.close()
    assert not failed, failed
    assert not broken_images, broken_images
    assert not broken_links, sorted(set(broken_links))


def test_reproduction_reports_show_the_committed_figures_and_the_claims(site):
    marlin = (site / "reproduction" / "marlin.html").read_text(encoding="utf-8")
    maestro = (site / "reproduction" / "maestro.html").read_text(encoding="utf-8")
    assert "fig3_training.png" in marlin and "Table I" in marlin
    assert "fig7_difficulty" in maestro
    for report in (marlin, maestro):
        assert "Verdict" in report and "Claims" in report


def test_configuration_reference_lists_every_config_field(site):
    from marlinkit.algos.mappo import MAPPOConfig

    text = (site / "reference" / "configuration.html").read_text(encoding="utf-8")
    assert "MAPPOConfig" in text
    for name in ("lr", "clip_coef", "generated_steps"):
        assert f">{name}<" in text, name
    assert "Adam learning rate of actor and critic" in text  # a field docstring, read from the code
