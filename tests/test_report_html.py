"""The HTML report opened in headless Chromium: self-contained, inert, and true to the JSON.

Needs Debian's ``chromium`` (or ``VISDUP_CHROMIUM``) and the ``playwright`` package; the tests
skip with the reason when either is absent. The store comes from a real crawl (in a
subprocess) of the demo site plus a page whose title is markup.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from visdup.demo import SITE_ROOT
from visdup.demo.server import serve

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=\"document.title='pwned';window.__pwned=1\">"
CHROMIUM = os.environ.get("VISDUP_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def _visdup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "visdup", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """(path of the HTML report, its JSON report) after a crawl of the demo site."""
    root = tmp_path_factory.mktemp("site") / "site"
    shutil.copytree(SITE_ROOT, root)
    (root / "evil.html").write_text(
        f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{HOSTILE}</title></head>"
        f"<body><h1>Markup in a title</h1><p>{HOSTILE.replace('<', '&lt;')}</p></body></html>",
        encoding="utf-8",
    )
    index = root / "index.html"
    index.write_text(
        index.read_text(encoding="utf-8").replace(
            "</body>", '<a href="/evil.html?q=%22%3E%3Cscript%3E">evil</a></body>'
        ),
        encoding="utf-8",
    )
    out = tmp_path_factory.mktemp("report")
    db = f"sqlite:///{out / 'crawl.sqlite3'}"
    with serve(root) as server:
        _visdup("crawl", server.url_for("/"), "--db", db, "-s", "LOG_LEVEL=WARNING")
    html = out / "report.html"
    _visdup("report", "--db", db, "--html", str(html))
    return html, json.loads(_visdup("report", "--db", db, "--json").stdout)


@pytest.fixture(scope="module")
def browse(request):
    """Run ``check(page, data, seen)`` on the report open in headless Chromium.

    Playwright's sync API refuses to run beside a running asyncio loop (the test reactor's),
    so each check runs in a thread of its own, with every request, console message and page
    error recorded in ``seen``.
    """
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed"
    )
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    html, data = request.getfixturevalue("report")  # crawl only when a browser is there

    def run(check: Callable[[Any, dict, dict], None]) -> None:
        def work() -> None:
            with sync_api.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                try:
                    page = browser.new_page()
                    seen: dict[str, list[str]] = {"requests": [], "console": [], "errors": []}
                    page.on("request", lambda r: seen["requests"].append(r.url))
                    page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}"))
                    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
                    page.goto(html.as_uri())
                    page.wait_for_load_state("load")
                    check(page, data, seen)
                finally:
                    browser.close()

        with ThreadPoolExecutor(1) as pool:
            pool.submit(work).result(timeout=120)

    return run


def test_no_request_leaves_the_file_and_nothing_complains(browse, report):
    def check(page, data, seen):
        page.click("#groups details summary")
        page.click("#pages th:nth-child(5)")
        page.fill("#page-filter", "winter")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert seen["requests"] == [report[0].as_uri()]
        assert seen["console"] == [] and seen["errors"] == []

    browse(check)


def test_hostile_title_is_shown_as_text_and_fires_nothing(browse):
    def check(page, data, seen):
        cells = page.locator("#pages td", has_text="onerror=").all_inner_texts()
        assert HOSTILE in cells
        assert page.evaluate("window.__pwned") is None
        assert page.title() != "pwned"
        assert page.locator("img").count() == 0
        assert not seen["errors"]

    browse(check)


def test_every_kpi_equals_the_json(browse):
    def check(page, data, seen):
        kpis = {
            el.get_attribute("data-kpi"): int(el.inner_text())
            for el in page.locator("[data-kpi]").all()
        }
        assert kpis["pages"] == data["pages"]
        assert kpis["groups"] == len(data["groups"])
        assert kpis["templates"] == len(data.get("templates", []))
        assert kpis["duplicates"] == sum(len(g["members"]) for g in data["groups"])
        assert kpis["pages"] > 60 and kpis["groups"] > 10

    browse(check)


def test_one_picture_per_template(browse):
    def check(page, data, seen):
        ids = [
            int(x)
            for x in page.locator("svg.layout").evaluate_all(
                "els => els.map(e => e.getAttribute('data-template'))"
            )
        ]
        assert ids == [t["id"] for t in data["templates"]]
        boxes = page.locator("svg.layout path").first.bounding_box()
        assert boxes is not None and boxes["width"] > 100

    browse(check)


def test_clicking_a_group_opens_its_diff(browse):
    def check(page, data, seen):
        group = page.locator("#groups details").first
        assert not group.evaluate("e => e.open")
        diff = group.locator(".diff").first
        assert not diff.is_visible()
        group.locator("summary").click()
        assert group.evaluate("e => e.open")
        assert diff.is_visible()
        largest = max(len(g["members"]) for g in data["groups"])
        assert group.locator("tbody tr").count() == largest
        # some copy in the report differs from its original, and the differences are marked
        page.evaluate("document.querySelectorAll('#groups details').forEach(d => d.open = true)")
        paths = page.locator("table.members td:nth-child(5)").all_inner_texts()
        assert any(" › " in p for p in paths)
        # what the original has and the copy lacks is marked on the left, the reverse right
        assert page.locator(".diff mark.del, .diff mark.ins").count() > 0

    browse(check)


def test_pages_table_sorts_and_filters(browse):
    def check(page, data, seen):
        rows = page.locator("#pages tbody tr")
        assert rows.count() == data["pages"]
        page.select_option("#verdict-filter", "moved")
        visible = page.locator("#pages tbody tr:not([hidden])")
        assert visible.count() == data["verdicts"]["moved"]
        assert page.inner_text("#pages-shown") == str(data["verdicts"]["moved"])
        page.select_option("#verdict-filter", "")
        page.click("#pages th:nth-child(7)")  # layout similarity, ascending
        cells = page.locator("#pages tbody tr td:nth-child(7)")
        filled = [t for t in cells.all_inner_texts() if t]
        assert filled and filled == sorted(filled, key=float)
        page.click("#pages th:nth-child(7)")  # descending
        assert cells.first.inner_text() == "1.000"
        assert page.locator("#pages tbody tr td:nth-child(4)").first.inner_text() == "duplicate"

    browse(check)
