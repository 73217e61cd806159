"""The documentation site as a reader meets it: built with warnings as errors, then opened in a real headless
Chromium (Playwright): every page loaded, every image decoded, every internal link resolved; the shape of the site
(a left navigation tree, a top bar on one row, the verdict summary on the index, one page per figure or table with
what it must say, long tables folded, nothing cut off at the right); and the generator's pure parts, without a
browser.

Runs where Chromium and the docs extra are installed (``make docs`` installs the extra; ``.ci/run`` installs
Chromium). ``MARLINKIT_BROWSER_TEST=1`` (set by ``.ci/run``) turns a missing piece into a failure instead of a skip;
``MARLINKIT_BROWSER_TEST=0`` skips it, as it does the workshop's browser test.
"""

from __future__ import annotations

import functools
import html
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

import pandas as pd

from marlinkit import catalog, claims, paths

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SWITCH = os.environ.get("MARLINKIT_BROWSER_TEST", "")
REQUIRED = SWITCH == "1"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]



def _load_docs_site():
    spec = importlib.util.spec_from_file_location("docs_site", paths.REPO_ROOT / "tools" / "docs_site.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


docs_site = _load_docs_site()
#: Widths at which the top bar must stay on one row.
WIDTHS = (1280, 1400, 1920)


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
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def _plain(text: object) -> str:
    """Text as compared with a page: whitespace collapsed, typographic quotes and dashes (docutils' smart quotes)
    as typed."""
    text = " ".join(str(text).split())
    for typographic, typed in (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"'),
                               ("\u2013", "--"), ("\u2014", "---"), ("\u2026", "...")):
        text = text.replace(typographic, typed)
    return text


def _pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not p.name.startswith(("genindex", "search")) and not p.relative_to(site).parts[0].startswith("_"))


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as play:
        chromium = play.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _figure_pages() -> dict[str, list]:
    entries = catalog.load()
    return {slug: docs_site.figure_pages(paper, entries) for paper, slug in docs_site.REPORT_PAPERS.items()}


@pytest.mark.slow
def test_every_page_loads_with_its_images_and_internal_links(site, served, browser):
    pages = _pages(site)
    assert {"index.html", "reproduction/marlin/index.html", "reproduction/maestro/index.html",
            "reference/configuration/index.html", "reference/configuration/algos.html"} <= set(pages)
    broken_images, broken_links, failed = [], [], []
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
    page.close()
    assert not failed, failed
    assert not broken_images, broken_images
    assert not broken_links, sorted(set(broken_links))


#: Measured in the page: the left tree; the page's and the article's overflow; the tables, other elements and text
#: that pass the article's right edge outside a scrolling box (a line box more than 8 px past it: an inline code
#: box's padding at the end of a line reaches a few px past it); the longest table shown unfolded; the page's
#: height; any raw Sphinx role in the text.
SHAPE_JS = """() => {
  const nav = document.querySelector('.bd-sidebar-primary nav.site-nav');
  const navBox = nav ? nav.getBoundingClientRect() : null;
  const article = document.querySelector('article.bd-article');
  const right = article.getBoundingClientRect().right;
  const container = article.parentElement;
  const scrolls = el => { for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true; } return false; };
  const tables = [...article.querySelectorAll('table')];
  const far = rects => Math.max(0, ...[...rects].filter(r => r.width > 0).map(r => r.right));
  const texts = [], walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) texts.push(n);
  return {
    nav_links: nav ? nav.querySelectorAll('a[href]').length : 0,
    nav_visible: !!navBox && navBox.width > 100 && navBox.left < 400 && getComputedStyle(nav).visibility !== 'hidden',
    overflow: Math.max(document.documentElement.scrollWidth - document.documentElement.clientWidth,
                       container.scrollWidth - container.clientWidth),
    cut_tables: tables.filter(t => !scrolls(t) && t.getBoundingClientRect().right > right + 1).length,
    cut_elements: [...article.querySelectorAll('*')].filter(e => far(e.getClientRects()) > right + 8 && !scrolls(e))
      .map(e => e.tagName + ' ' + e.innerText.slice(0, 40)).concat(texts.filter(n => {
        const range = document.createRange(); range.selectNodeContents(n);
        return far(range.getClientRects()) > right + 8 && !scrolls(n); }).map(n => n.textContent.slice(0, 40))),
    unfolded_rows: Math.max(0, ...tables.filter(t => !t.closest('details'))
                                      .map(t => t.tBodies.length ? t.tBodies[0].rows.length : 0)),
    folded_open: [...article.querySelectorAll('details')].filter(d => d.open).length,
    height: document.documentElement.scrollHeight,
    claim_sections: article.querySelectorAll('h3 code').length,
    roles: (article.innerText.match(/:(?:py:)?(?:data|mod|meth|func|class|attr|obj|exc|const):/g) || []).length,
  };
}"""
#: A report page longer than this (px at 1280 px wide) is the one-page report the site must not have.
MAX_REPORT_HEIGHT = 16000
#: A paper's claims ledger page shows every claim's section with its primary rows (what a reader checks a verdict
#: by), so its length follows its claims: at most this many px per claim section, beyond MAX_REPORT_HEIGHT.
MAX_CLAIM_SECTION_HEIGHT = 1000


@pytest.mark.slow
def test_every_page_has_the_left_tree_no_overflow_and_folded_long_tables(site, served, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = []
    for name in _pages(site):
        page.goto(urljoin(served, name), wait_until="load")
        shape = page.evaluate(SHAPE_JS)
        if not shape["nav_visible"] or shape["nav_links"] < 10:
            problems.append(f"{name}: no left navigation tree ({shape['nav_links']} links)")
        if shape["overflow"] > 0 or shape["cut_tables"] or shape["cut_elements"]:
            problems.append(f"{name}: cut off at the right ({shape['overflow']} px, {shape['cut_tables']} tables, "
                            f"{shape['cut_elements'][:3]})")
        if shape["unfolded_rows"] > docs_site.FOLD_ROWS and name.startswith("reproduction/"):
            problems.append(f"{name}: a table of {shape['unfolded_rows']} rows is not folded")
        if shape["folded_open"]:
            problems.append(f"{name}: a folded table opens by itself")
        limit = max(MAX_REPORT_HEIGHT, MAX_CLAIM_SECTION_HEIGHT * shape["claim_sections"]
                    if name.endswith("/claims-ledger.html") else 0)
        if name.startswith("reproduction/") and shape["height"] > limit:
            problems.append(f"{name}: {shape['height']} px long ({shape['claim_sections']} claim sections)")
        if shape["roles"]:
            problems.append(f"{name}: {shape['roles']} raw Sphinx roles")
    page.close()
    assert not problems, problems


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_the_top_bar_is_one_row(served, browser, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    for name in ("index.html", "reproduction/marlin/index.html", "reference/configuration/index.html"):
        page.goto(urljoin(served, name), wait_until="load")
        tops = page.eval_on_selector_all(
            ".bd-header .navbar-header-items a, .bd-header .navbar-header-items button, .bd-header .navbar-brand",
            "els => els.filter(e => e.offsetParent !== null).map(e => { const r = e.getBoundingClientRect();"
            " return [e.innerText.trim(), r.top + r.height / 2]; })")
        header = page.eval_on_selector(".bd-header", "e => e.getBoundingClientRect().height")
        assert len(tops) >= 4, tops
        centres = [centre for _, centre in tops]
        assert max(centres) - min(centres) < 12, f"{name} at {width} px: the top bar wraps: {tops}"
        assert header < 100, f"{name} at {width} px: the top bar is {header} px high"
    page.close()


def _ledger() -> pd.DataFrame:
    return pd.read_csv(claims.LEDGER_PATH, keep_default_na=False, na_values=[""])


def _verdict_counts(ledger: pd.DataFrame) -> dict[tuple[str, str], int]:
    """Claims per paper and summary verdict: one count per claim, not per row of the ledger."""
    heads = docs_site.claim_heads(ledger)
    return {(paper, verdict): int(n) for (paper, verdict), n in
            heads.assign(v=heads.summary.map(docs_site.base_verdict)).groupby(["paper", "v"]).size().items()}


@pytest.mark.slow
def test_the_index_shows_the_verdicts_with_links_to_the_claims_pages(site, served, browser):
    ledger = _ledger()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(urljoin(served, "index.html"), wait_until="load")
    table = page.eval_on_selector(
        "#verdicts table", "t => [...t.rows].map(r => [...r.cells].map(c => c.innerText.trim()))")
    papers = table[0][1:]
    assert papers == list(docs_site.REPORT_PAPERS), papers
    shown = {(paper, row[0]): int(cell) for row in table[1:] if row[0] != "claims"
             for paper, cell in zip(papers, row[1:]) if int(cell)}
    assert shown == _verdict_counts(ledger)
    totals = [int(cell) for row in table[1:] if row[0] == "claims" for cell in row[1:]]
    assert totals == [ledger[ledger.paper == p].claim_id.nunique() for p in papers]
    assert sum(totals) == ledger.claim_id.nunique()
    top = page.eval_on_selector("#verdicts table", "t => t.getBoundingClientRect().top")
    assert top < 900, f"the verdict summary starts at {top} px, below the first screen"
    links = page.eval_on_selector_all("#verdicts li a", "els => els.map(e => [e.innerText.trim(), e.href])")
    items = page.eval_on_selector_all("#verdicts li", "els => els.map(e => e.innerText)")
    page.close()
    linked = dict(links)
    assert len(items) == ledger.claim_id.nunique()
    for head in docs_site.claim_heads(ledger).itertuples():
        assert head.claim_id in linked, f"the index does not link the claim {head.claim_id!r}"
        url = urlparse(linked[head.claim_id])
        path = site / url.path.lstrip("/")
        assert path.exists() and path.parent.parent.name == "reproduction", linked[head.claim_id]
        assert url.fragment == head.claim_id and f'id="{head.claim_id}"' in path.read_text(encoding="utf-8")
        lead = f"{docs_site.base_verdict(head.summary)} {head.claim_id}: "
        assert any(_plain(i).startswith(lead) for i in items), f"the index does not show {lead!r}"


@pytest.mark.slow
def test_one_page_per_figure_with_figure_numbers_deviations_command_and_claim(site, served, browser):
    ledger = _ledger()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = []
    for slug, figure_pages in _figure_pages().items():
        for fp in figure_pages:
            name = f"reproduction/{slug}/{fp.name}.html"
            response = page.goto(urljoin(served, name), wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{name}: missing")
                continue
            ids = set(page.eval_on_selector_all("article section[id]", "els => els.map(e => e.id)"))
            text = _plain(page.inner_text("article"))
            for section in ("the-paper-beside-ours", "deviations-from-the-paper", "remake-it"):
                if section not in ids:
                    problems.append(f"{name}: no section {section}")
            e = fp.entry
            for what, value in (("title", e.title), ("claim", e.claim), ("deviations", e.deviations),
                                ("command", e.command)):
                if value and _plain(value) not in text:
                    problems.append(f"{name}: its {what} is not shown")
            committed = [o for o in fp.outputs if (paths.FIGURES_DIR / o).exists()]
            images = page.eval_on_selector_all("article img", "els => els.map(e => e.getAttribute('src'))")
            for output in committed:
                shown = re.compile(re.escape(Path(output).stem) + r"\d*\.png$")  # Sphinx numbers a repeated name
                if output.endswith(".png") and not any(shown.match(Path(src).name) for src in images):
                    problems.append(f"{name}: {output} not shown")
            # every figure on a page is its own paper's: a file named after the other paper never is
            other = "maestro" if slug == "marlin" else "marlin"
            problems += [f"{name}: shows {src}" for src in images if other in Path(src).name]
            own = ledger[ledger.paper == {v: k for k, v in docs_site.REPORT_PAPERS.items()}[slug]]
            on = docs_site.claims_pages(own, figure_pages)
            bearing = own if e.label == "Claims ledger" else own[own.claim_id.map(lambda c: fp in on[c])]
            heads = docs_site.claim_heads(bearing)
            if e.label != "Claims ledger" and len(heads) > docs_site.CLAIM_SECTIONS_MAX:
                # many claims: one table, a claim a row, each linked to its section of the claims ledger page
                links = page.eval_on_selector_all("article a[href*='claims-ledger.html#']",
                                                  "els => els.map(e => e.getAttribute('href').split('#')[1])")
                problems += [f"{name}: {c} not linked" for c in heads.claim_id if c not in links]
                continue
            for head in heads.itertuples():
                if head.claim_id not in ids:
                    problems.append(f"{name}: no section for the claim {head.claim_id} it bears on")
                if _plain(head.claim) not in text:
                    problems.append(f"{name}: the paper's words of {head.claim_id} are not shown")
                if _plain(docs_site.base_verdict(head.summary)) not in text:
                    problems.append(f"{name}: the summary verdict of {head.claim_id} is not shown")
                # one row per stand-in (run set) of the primary protocol, unfolded, in the claim's own section
                rows = page.eval_on_selector(f"section[id='{head.claim_id}']",
                                             "s => [...s.querySelectorAll('table')].filter(t => !t.closest('details'))"
                                             ".map(t => t.tBodies[0].rows.length)")
                primary = bearing[(bearing.claim_id == head.claim_id) & (bearing.protocol == head.protocol)]
                if docs_site.base_verdict(head.summary) == "not testable":  # why, instead of rows that say so
                    primary = []
                if rows != ([len(primary)] if len(primary) else []):
                    problems.append(f"{name}: {head.claim_id} shows {rows} rows, not {len(primary)}")
            if e.label == "Claims ledger" and len(bearing) == 0:
                problems.append(f"{name}: no claim")
    page.close()
    assert not problems, problems


def test_every_report_section_comes_from_its_own_papers_files(site):
    """The MARLIN audit shows MARLIN's audit table; the MAESTRO audit MAESTRO's; each claims ledger page its own
    paper's rows only."""
    marlin = (site / "reproduction" / "marlin" / "audit.html").read_text(encoding="utf-8")
    maestro = (site / "reproduction" / "maestro" / "audit.html").read_text(encoding="utf-8")
    assert "paper_audit_marlin_table1" in marlin and "paper_audit_maestro" not in marlin
    assert "paper_audit_maestro" in maestro and "paper_audit_marlin" not in maestro
    heads = docs_site.claim_heads(_ledger())
    for paper, slug in docs_site.REPORT_PAPERS.items():
        text = _plain((site / "reproduction" / slug / "claims-ledger.html").read_text(encoding="utf-8"))
        for row in heads.itertuples():
            claim = _plain(html.escape(str(row.claim), quote=False))
            assert (claim in text) == (row.paper == paper), (slug, row.claim_id)
            assert (f'id="{row.claim_id}"' in text) == (row.paper == paper), (slug, row.claim_id)


def test_configuration_reference_lists_every_config_field(site):
    from marlinkit.algos.mappo import MAPPOConfig

    pages = sorted((site / "reference" / "configuration").glob("*.html"))
    text = "".join(p.read_text(encoding="utf-8") for p in pages).replace("<wbr>", "")  # break points in names
    assert "MAPPOConfig" in text and ">GridConfig<" in text
    for name in ("lr", "clip_coef", "generated_steps"):
        assert f">{name}<" in text, name
    assert "Adam learning rate of actor and critic" in text  # a field docstring, read from the code
    assert not re.search(r":(?:data|mod|meth|func|class|attr):", text)


# ----- the generator's parts, no browser ---------------------------------------------------------------------

def test_plain_roles_turns_sphinx_roles_into_code():
    assert docs_site.plain_roles("see :data:`README_BEGIN` and :meth:`~a.B.c`") == "see `README_BEGIN` and `a.B.c`"
    assert docs_site.plain_roles(":mod:`the audit <marlinkit.paper_audit>`") == "`marlinkit.paper_audit`"
    assert docs_site.plain_roles("no role: `x`") == "no role: `x`"


def test_references_expand_ranges_and_lists():
    assert docs_site.references("Fig. 3-5, Tables 1-2") == {"Fig. 3", "Fig. 4", "Fig. 5", "Table 1", "Table 2"}
    assert docs_site.references("Table I, episode 100") == {"Table I"}
    assert docs_site.references("Fig. 3-8, Tables 1-4, 6, 7") >= {"Fig. 8", "Table 4", "Table 6", "Table 7"}
    assert "Table 5" not in docs_site.references("Fig. 3-8, Tables 1-4, 6, 7")


def test_a_ledger_row_links_to_its_figure_page_by_evidence_or_location():
    pages = docs_site.figure_pages("MARLIN", catalog.load())
    by_evidence = pd.Series({"claim": "c", "evidence": "figures/paper/marlin/table1_ttests.csv", "paper_value": ""})
    assert docs_site.claim_pages(by_evidence, pages)[0].entry.label == "Table I"
    by_location = pd.Series({"claim": "c", "evidence": "figures/x.csv", "paper_location": "Fig. 5"})
    assert [p.entry.label for p in docs_site.claim_pages(by_location, pages)] == ["Fig. 5"]
    nowhere = pd.Series({"claim": "c", "evidence": "figures/x.csv", "paper_location": "Section 4"})
    assert docs_site.claim_pages(nowhere, pages) == []
    several = pd.Series({"claim": "c", "paper_location": "Sec. IV",
                         "evidence": "data/results/*.csv; figures/paper/marlin/table1_ttests.csv; figures/y.csv"})
    assert [p.entry.label for p in docs_site.claim_pages(several, pages)] == ["Table I"]


def test_an_entry_of_both_papers_gives_each_report_its_own_files():
    entry = catalog.Entry(paper="both", label="Audit", title="t", claim="c", deviations="d", command="",
                          outputs=("paper/maestro/paper_audit_maestro.png", "paper/maestro/paper_audit_marlin.md",
                                   "claims.csv"))
    assert docs_site.own_outputs(entry, "marlin") == ("paper/maestro/paper_audit_marlin.md", "claims.csv")
    assert docs_site.own_outputs(entry, "maestro") == ("paper/maestro/paper_audit_maestro.png", "claims.csv")


def test_the_verdict_summary_counts_claims_by_their_summary():
    """One count per claim (its summary verdict), not per row: a claim's rows changed together move one count."""
    ledger = _ledger()
    entries = catalog.load()
    before = docs_site.verdict_summary(ledger, entries)
    assert f"**{ledger[ledger.paper == 'MARLIN'].claim_id.nunique()}**" in before
    changed = ledger.copy()
    changed.loc[changed.claim_id == changed.claim_id[0], "summary"] = "pending"
    after = docs_site.verdict_summary(changed, entries)
    assert before != after and "pending</span> | 1 | 0 |" in after and "pending" not in before
    changed.loc[0, "verdict"] = "holds"  # a row's verdict alone does not change a count
    assert docs_site.verdict_summary(changed, entries) == after


def test_a_claim_is_grouped_under_its_summary_with_a_row_per_stand_in(tmp_path):
    ledger = _ledger()
    pages = docs_site.report_pages("MARLIN", catalog.load(), ledger, tmp_path)
    rows = ledger[ledger.claim_id == "marlin-ahead-at-100"]
    section = pages["claims-ledger"].split("### `marlin-ahead-at-100`")[1].split("\n### ")[0]
    assert docs_site.verdict_badge(rows.summary.iloc[0]) in section and rows.claim.iloc[0] in section
    primary, folded = section.split("<details>")
    for r in rows.itertuples():
        assert r.stand_in in folded and r.protocol in folded
        assert r.protocol != rows.protocol.iloc[0] or r.stand_in in primary
    assert primary.count("\n| ") - 1 == (rows.protocol == rows.protocol.iloc[0]).sum()  # the header row aside
    index = pages["index"]
    assert f"{ledger[ledger.paper == 'MARLIN'].claim_id.nunique()} claims" in index
    assert "[`marlin-ahead-at-100`](" in index


def test_long_tables_are_folded_and_short_ones_are_not(tmp_path):
    def table(rows: int) -> Path:
        path = tmp_path / f"t{rows}.md"
        path.write_text("Caption.\n\n| a |\n|---|\n" + "".join(f"| {i} |\n" for i in range(rows)), encoding="utf-8")
        return path

    assert "<details>" in docs_site._table_markdown(table(docs_site.FOLD_ROWS + 1))
    assert "<details>" not in docs_site._table_markdown(table(docs_site.FOLD_ROWS))


def test_notes_split_into_topics_at_bold_openings():
    text = ("**First.** one\nline\n\n**Second topic** (detail) two\n**Third: more.** three\n"
            "a line with **bold** inside\n**not a topic** because it continues a sentence\n")
    topics = docs_site.notes_topics(text)
    assert [t for t, _ in topics] == ["First", "Second topic", "Third"]
    assert topics[2][1].endswith("continues a sentence")


def test_a_verdict_keeps_its_reason_in_tables_and_drops_it_in_counts():
    verdict = "not testable (every run's first window already reaches the target)"
    assert docs_site.base_verdict(verdict) == "not testable"
    assert "every run" in docs_site.verdict_badge(verdict, reason=True)
    assert "every run" not in docs_site.verdict_badge(verdict)
    assert docs_site.base_verdict("not testable: held-out evaluation missing") == "not testable"
    assert docs_site.base_verdict("depends on the stand-in: a: holds; b: inconclusive (cells: 1)") == (
        "depends on the stand-in")
    assert docs_site.base_verdict("inconclusive (cells: 3 contradicted, 2 inconclusive)") == "inconclusive"
    assert docs_site.verdict_badge("not testable: runs missing", reason=True).endswith("</span> runs missing")
    assert "verdict-contradicted" in docs_site.verdict_badge("contradicted, not significant")
