"""The HTML report opened in headless Chromium: self-contained, inert, and true to the JSON.

Needs Debian's ``chromium`` (or ``VISDUP_CHROMIUM``) and the ``playwright`` package; the tests
skip with the reason when either is absent. The store comes from a real crawl (in a
subprocess) of the demo site plus a page whose title is markup.
"""

from __future__ import annotations

import csv
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

from tests.crawling import article, write_site
from tests.test_report import SENTENCES
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
    # a page and its copy with one word edited: the group shows that word
    edited = [s.replace("six miles", "seven miles") for s in SENTENCES]
    write_site(
        root,
        {
            "rides/harbour.html": article("The harbour loop", SENTENCES, []),
            "rides/harbour-loop.html": article("The harbour loop", edited, []),
        },
    )
    index = root / "index.html"
    index.write_text(
        index.read_text(encoding="utf-8").replace(
            "</body>",
            '<a href="/evil.html?q=%22%3E%3Cscript%3E">evil</a>'
            '<a href="/rides/harbour.html">h</a><a href="/rides/harbour-loop.html">l</a></body>',
        ),
        encoding="utf-8",
    )
    out = tmp_path_factory.mktemp("report")
    db = f"sqlite:///{out / 'crawl.sqlite3'}"
    with serve(root) as server:
        _visdup("crawl", server.url_for("/"), "--db", db, "-s", "LOG_LEVEL=WARNING")
    html = out / "report.html"
    _visdup("report", "--db", db, "--html", str(html))
    # the same report whose table holds only its first rows (filters and export hold all)
    _visdup("report", "--db", db, "--html", str(out / "short.html"), "--rows", "10")
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
                    # a laptop's window, as an auditor has it
                    page = browser.new_page(
                        viewport={"width": 1400, "height": 900}, accept_downloads=True
                    )
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
                "els => els.map(e => e.getAttribute('data-template-id'))"
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
        paths = page.locator("table.members td:nth-child(6)").all_inner_texts()
        assert any(" › " in p for p in paths)
        # what the original has and the copy lacks is marked on the left, the reverse right
        assert page.locator(".diff mark.del, .diff mark.ins").count() > 0

    browse(check)


def test_pages_table_sorts_and_filters(browse):
    def check(page, data, seen):
        rows = page.locator("#pages tbody tr")
        assert rows.count() == data["pages"]
        page.select_option("select[data-filter=verdict]", "moved")
        visible = page.locator("#pages tbody tr:not([hidden])")
        assert visible.count() == data["verdicts"]["moved"]
        assert page.inner_text("#pages-shown") == str(data["verdicts"]["moved"])
        page.select_option("select[data-filter=verdict]", "")
        page.click("#pages th[data-col=layout_similarity]")  # ascending
        cells = page.locator("#pages tbody tr td:nth-child(8)")
        filled = [t for t in cells.all_inner_texts() if t]
        assert filled and filled == sorted(filled, key=float)
        page.click("#pages th[data-col=layout_similarity]")  # descending
        assert cells.first.inner_text() == "1.000"
        assert page.locator("#pages tbody tr").first.get_attribute("data-verdict") == "duplicate"

    browse(check)


COLUMNS = [
    "url", "status", "title", "verdict", "kind", "duplicate_of", "content_similarity",
    "layout_similarity", "near_duplicates", "template", "canonical", "canonical_url",
    "indexability", "cause",
]  # fmt: skip
FILTERS = ["verdict", "kind", "template", "canonical", "cause", "status"]


def test_every_column_is_in_the_table_and_fits_a_laptop(browse):
    def check(page, data, seen):
        cols = page.locator("#pages th[data-col]").evaluate_all(
            "els => els.map(e => e.getAttribute('data-col'))"
        )
        assert cols == COLUMNS
        values = page.locator("#pages tbody tr").evaluate_all(
            "rows => rows.map(r => Object.assign({}, r.dataset))"
        )
        assert len(values) == data["pages"]
        assert all(set(COLUMNS) <= set(v) for v in values)
        grouped = {m["url"]: g["original"] for g in data["groups"] for m in g["members"]}
        for v in values:
            if v["verdict"] in ("duplicate", "moved"):
                assert v["duplicate_of"] == grouped[v["url"]]
        # a copy's original is a link to it
        dup = page.locator("#pages tr[data-verdict=duplicate] td:nth-child(6) a").first
        assert dup.get_attribute("href").startswith("http://")
        # at 1,400 px the table shows its last column without scrolling sideways
        box = page.locator("#pages-table .scroll")
        assert box.evaluate("e => e.scrollWidth <= e.clientWidth")
        last = page.locator("#pages th[data-col=cause]").bounding_box()
        assert last is not None and last["x"] + last["width"] <= 1400
        assert not seen["errors"]

    browse(check)


def _count(option_text: str) -> int:
    return int(option_text.rsplit("(", 1)[1].rstrip(")"))


def test_each_filter_counts_its_pages_and_they_combine(browse):
    def check(page, data, seen):
        for col in FILTERS:
            select = page.locator(f"select[data-filter={col}]")
            options = select.locator("option").evaluate_all(
                "os => os.map(o => [o.value, o.textContent])"
            )
            assert options[0][0] == "" and _count(options[0][1]) == data["pages"]
            assert len(options) > 1, col
            for value, text in options[1:]:
                select.select_option(value)
                visible = page.locator("#pages tbody tr:not([hidden])")
                assert visible.count() == _count(text) == int(page.inner_text("#pages-matching"))
                got = visible.evaluate_all(f"rs => rs.map(r => r.getAttribute('data-{col}'))")
                assert set(got) == {value}
            select.select_option("")
        # two filters at once: the session-id copies among the duplicates, counted by both
        page.select_option("select[data-filter=verdict]", "duplicate")
        page.select_option("select[data-filter=cause]", "session id")
        both = page.locator("#pages tbody tr:not([hidden])")
        assert both.count() > 0
        cause = page.locator("select[data-filter=cause] option[value='session id']")
        assert _count(cause.inner_text()) == both.count()
        for row in both.all():
            assert row.get_attribute("data-verdict") == "duplicate"
            assert row.get_attribute("data-cause") == "session id"
        assert not seen["errors"]

    browse(check)


def _download(page, selector: str) -> list[dict[str, str]]:
    with page.expect_download() as info:
        page.click(selector)
    path = info.value.path()
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_the_export_links_write_every_page_and_group(browse, report):
    def check(page, data, seen):
        # the short report's table holds ten rows: filters and export still cover every page
        page.goto((report[0].parent / "short.html").as_uri())
        assert page.locator("#pages tbody tr").count() == 10
        assert page.locator("a[download]").count() == 2
        verdict = page.locator("select[data-filter=verdict] option[value=duplicate]")
        assert _count(verdict.inner_text()) == data["verdicts"]["duplicate"]
        rows = _download(page, "a[download='pages.csv']")
        assert len(rows) == data["pages"]
        assert set(COLUMNS) <= set(rows[0])
        assert sorted(r["url"] for r in rows) == [r["url"] for r in rows]
        groups = _download(page, "a[download='groups.csv']")
        assert len({r["group"] for r in groups}) == len(data["groups"])
        assert len(groups) == sum(len(g["members"]) + 1 for g in data["groups"])
        page.select_option("select[data-filter=verdict]", "duplicate")
        assert page.inner_text("#pages-matching") == str(data["verdicts"]["duplicate"])
        only = _download(page, "a[download='pages.csv']")
        assert len(only) == data["verdicts"]["duplicate"]
        assert {r["verdict"] for r in only} == {"duplicate"}
        assert seen["requests"] == [report[0].as_uri(), (report[0].parent / "short.html").as_uri()]

    browse(check)


def test_groups_say_their_severity_and_cause_and_roll_up_by_cause(browse):
    def check(page, data, seen):
        groups = page.locator("#groups details")
        assert groups.count() == len(data["groups"])
        origin = "/".join(data["groups"][0]["original"].split("/")[:3])
        by_original = {g["original"]: g for g in data["groups"]}
        for details in groups.all():
            g = by_original[origin + details.locator("summary").inner_text().split()[-1]]
            undeclared = [m for m in g["members"] if not m["declared"]]
            want = (
                "error"
                if any(m["kind"] == "exact" for m in undeclared)
                else "warning"
                if undeclared
                else "info"
            )
            assert details.get_attribute("data-severity") == want
        # a copy made by a session id and named by no canonical is an error, a copy that
        # names its original as canonical is information; the group says so in words
        error = page.locator("#groups details[data-severity=error]").first
        error.locator("summary").click()
        assert "exact copy without canonical" in error.inner_text()
        assert error.get_attribute("data-cause") == "session id"
        info = page.locator("#groups details[data-severity=info]").first
        info.locator("summary").click()
        assert "resolved" in info.inner_text()
        # the roll-up counts every copy once, by the cause of its URL
        rollup = page.locator("#causes tbody tr")
        copies = sum(int(c) for c in rollup.locator("td:nth-child(3)").all_inner_texts())
        assert copies == sum(len(g["members"]) for g in data["groups"])
        causes = rollup.evaluate_all("rs => rs.map(r => r.getAttribute('data-cause'))")
        assert {"session id", "tracking parameters", "print copy"} <= set(causes)

    browse(check)


def test_a_group_shows_the_sentence_and_word_that_changed(browse):
    def check(page, data, seen):
        group = page.locator("#groups details", has_text="/rides/harbour").first
        text = group.locator(".textdiff")
        assert not text.is_visible()
        group.locator("summary").click()
        assert text.is_visible()
        removed = text.locator("del").all_inner_texts()
        added = text.locator("ins").all_inner_texts()
        assert (removed, added) in ((["six"], ["seven"]), (["seven"], ["six"]))
        # the sentence around the word is there, on both sides; the layout path comes after
        assert "The harbour path runs for" in text.inner_text()
        box = group.locator(".textdiff").bounding_box()
        assert box is not None and box["width"] > 600
        # an exact copy needs no text: its group says its copies are byte for byte the same
        exact = page.locator("#groups details[data-cause='session id']").first
        exact.locator("summary").click()
        assert "byte for byte" in exact.inner_text()

    browse(check)


def test_templates_are_named_by_their_url_pattern(browse):
    def check(page, data, seen):
        heads = page.locator("#templates h3[data-template]")
        assert heads.count() == len(data["templates"])
        names = heads.evaluate_all("els => els.map(e => e.getAttribute('data-template'))")
        assert len(set(names)) == len(names)  # a name stands for one template
        for name, t in zip(names, data["templates"], strict=True):
            # the name is the template's most common URL pattern; its id comes second
            base = name.split(" #")[0]
            assert any(p.startswith(base) for p in t["url_patterns"]), (name, t["url_patterns"])
            assert f"#{t['id']}" in heads.nth(names.index(name)).inner_text()
        assert "/shop/products/*.html" in names
        # the pages table names each page's template the same way
        row = page.locator("#pages tr[data-url$='/shop/products/volt-e-city.html']")
        assert row.get_attribute("data-template") == "/shop/products/*.html"

    browse(check)


def test_the_overview_leads_with_the_worst_problems_and_the_crawl_budget(browse):
    def check(page, data, seen):
        sections = page.locator("main > section").evaluate_all("s => s.map(e => e.id)")
        assert sections[0] == "overview"
        members = [m for g in data["groups"] for m in g["members"]]
        exact = [m for m in members if m["kind"] == "exact" and not m["declared"]]
        first = page.locator("#problems li").first
        assert first.get_attribute("data-severity") == "error"
        assert first.locator("b").inner_text() == str(len(exact))
        errors = page.locator("[data-kpi=errors]").inner_text()
        assert int(errors) == sum(
            any(m["kind"] == "exact" and not m["declared"] for m in g["members"])
            for g in data["groups"]
        )
        low = page.locator("#problems li", has_text="low-content")
        assert "/tags/tandems.html" in low.inner_text() and "median" in low.inner_text()
        budget = page.locator("#budget")
        assert budget.get_attribute("data-duplicates") == str(len(members))
        assert "estimate" in budget.inner_text() and "session id" in budget.inner_text()
        # the settings are folded away until asked for
        settings = page.locator("#overview details.settings")
        assert not settings.evaluate("e => e.open")
        assert not page.get_by_text("VISDUP_SIMILARITY_THRESHOLD").is_visible()
        settings.locator("summary").click()
        assert page.get_by_text("VISDUP_SIMILARITY_THRESHOLD").is_visible()

    browse(check)


def test_the_responses_section_lists_what_gave_no_page_with_the_page_linking_there(browse):
    def check(page, data, seen):
        page.locator("nav.toc a", has_text="Responses").click()
        section = page.locator("[data-section=responses]")
        assert section.is_visible()
        heads = section.locator("th[data-col]").evaluate_all("hs => hs.map(h => h.dataset.col)")
        assert heads == ["url", "kind", "answer", "linked_from"]
        rows = section.locator("tbody tr")
        kinds = rows.evaluate_all("rs => rs.map(r => r.dataset.kind)")
        assert kinds == [u["kind"] for u in data["responses"]["urls"]]
        assert kinds == ["client_error", "redirect", "not_html", "robots"]  # most serious first
        broken = section.locator("tr[data-kind=client_error]")
        assert "/about/route-map-2019.html" in broken.inner_text()
        assert broken.get_attribute("data-status") == "404"
        assert "/about.html" in broken.locator("td").nth(3).inner_text()
        moved = section.locator("tr[data-kind=redirect]").inner_text()
        assert "301" in moved and "/articles/choosing-a-commuter-bike.html" in moved
        assert "robots.txt" in section.locator("tr[data-kind=robots]").inner_text()
        # the overview counts the broken link among the errors, and links here
        problem = page.locator("#problems li", has_text="4xx")
        assert problem.get_attribute("data-severity") == "error"
        problem.locator("a").click()
        assert page.evaluate("location.hash") == "#responses"
        # the table fits a laptop's window
        width = section.locator("table").evaluate("t => t.getBoundingClientRect().right")
        assert width <= 1400

    browse(check)


def test_a_tab_link_scrolls_its_section_heading_into_view_below_the_bar(browse):
    def check(page, data, seen):
        links = page.locator("nav.toc a").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))"
        )
        assert links
        for href in links:
            target = page.locator(href)
            if not target.count():
                continue  # a section the demo's store has nothing for
            page.click(f"nav.toc a[href='{href}']")
            page.wait_for_timeout(50)
            bar = page.locator("nav.toc").bounding_box()
            heading = target.locator("h2").first
            box = heading.bounding_box() if heading.count() else target.bounding_box()
            assert bar is not None and box is not None
            if page.evaluate(
                "() => window.scrollY + window.innerHeight >= document.body.scrollHeight - 2"
            ):
                continue  # the page's end: the section cannot scroll up to the bar
            assert box["y"] >= bar["y"] + bar["height"] - 1, (href, box, bar)
        assert not seen["errors"]

    browse(check)
