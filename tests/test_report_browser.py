"""The HTML report in a real headless browser (Debian's chromium driven by playwright).

Every page must load without a console error, every link between pages must reach a file of
the site (and the element its #fragment names), hostile names must show as text and never
run, and the index's filter must hide rows and columns. A screenshot of the index is saved in
the test's tmp dir and at /tmp/proofbench-index.png.

Needs /usr/bin/chromium (apt-get install chromium) and the playwright Python package (no
`playwright install`: the system chromium is used). Without them the tests skip, saying
which is missing; under CI ($CI set) they fail instead.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from test_report_site import HOSTILE_COMMIT, HOSTILE_MACHINE, HOSTILE_SUBJECT, make_site

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOT = Path("/tmp/proofbench-index.png")


def _missing() -> str | None:
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return f"{CHROMIUM} not found (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright; no `playwright install`)"
    return None


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for the module."""
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests must run under CI: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists()
                                     else shutil.which("chromium"), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return make_site(tmp_path_factory.mktemp("browser"))


@pytest.fixture
def page(browser):
    """A fresh page that records console errors and uncaught exceptions."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.errors = []
    tab.on("console", lambda m: tab.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    tab.on("pageerror", lambda e: tab.errors.append(f"page error: {e}"))
    tab.on("requestfailed", lambda r: tab.errors.append(f"request failed: {r.url}"))
    yield tab
    context.close()


def _html_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.html"))


def test_every_page_loads_without_console_errors_and_nothing_hostile_runs(site, page):
    for path in _html_files(site):
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        assert page.errors == [], f"{path.relative_to(site)}: {page.errors}"
        assert page.evaluate("window.__pwned") is None, path
        assert page.evaluate("document.querySelectorAll('img').length") == 0, path
        scripts = page.evaluate("document.querySelectorAll('script').length")
        assert scripts == (1 if path.name == "index.html" else 0), path


def test_every_link_between_pages_resolves(site, page):
    ids: dict[Path, set[str]] = {}
    links: list[tuple[Path, str]] = []
    for path in _html_files(site):
        page.goto(path.as_uri())
        ids[path] = set(page.evaluate("[...document.querySelectorAll('[id]')].map(e => e.id)"))
        links += [(path, href) for href in page.evaluate("[...document.links].map(a => a.href)")]
    assert len(links) > 50
    for source, href in links:
        parts = urlsplit(href)
        assert parts.scheme == "file", f"{source.name}: link leaves the site: {href}"
        target = Path(unquote(parts.path))
        assert target.is_file() and site in target.parents, f"{source.name}: broken link {href}"
        if parts.fragment:
            assert unquote(parts.fragment) in ids[target], f"{source.name}: no #{parts.fragment} in {target.name}"


def test_hostile_names_and_commit_messages_show_as_text(site, page):
    page.goto((site / "index.html").as_uri())
    text = page.inner_text("body")
    assert HOSTILE_SUBJECT in text and HOSTILE_MACHINE in text
    page.goto((site / "commits.html").as_uri())
    assert HOSTILE_COMMIT in page.inner_text("body")


def test_index_filter_hides_other_areas_and_machines_and_screenshot(site, page, tmp_path):
    page.goto((site / "index.html").as_uri())
    visible_rows = "[...document.querySelectorAll('tr.subject-row')].filter(r => r.offsetParent !== null).length"
    visible_cells = "[...document.querySelectorAll('td.cell')].filter(c => c.offsetParent !== null).length"
    assert page.evaluate(visible_rows) == 3 and page.evaluate(visible_cells) == 6
    page.select_option("#f-area", "loading")
    assert page.evaluate(visible_rows) == 1
    assert "1 subject(s) shown" in page.inner_text("#f-count")
    page.select_option("#f-machine", label="ci-box")
    assert page.evaluate(visible_cells) == 1
    page.select_option("#f-area", "")
    page.select_option("#f-machine", "")
    assert page.evaluate(visible_cells) == 6
    page.screenshot(path=str(tmp_path / "index.png"), full_page=True)
    shutil.copyfile(tmp_path / "index.png", SHOT)
    assert (tmp_path / "index.png").stat().st_size > 10_000


def test_every_point_of_a_plain_benchmark_has_a_tooltip(site, page):
    from test_report_site import COMMITS, PLAIN

    page.goto((site / "benchmarks" / f"{PLAIN}.html").as_uri())
    tips = page.evaluate("[...document.querySelectorAll('circle.tip > title')].map(t => t.textContent)")
    assert len(tips) == 2 * 4 * COMMITS
    assert all(" · " in t and t.split(" · ")[-1].endswith("s") for t in tips)  # commit · date · subject · value
