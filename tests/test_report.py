"""The report of a crawl of the demo site: groups, verdicts, templates, canonical links."""

from __future__ import annotations

import json

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl
from visdup.cli import main
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve


def _url(member: dict) -> str:
    return member["url"]


def _audit_columns(rows: list[dict]) -> None:
    """The columns an auditor filters on, read off the demo site's planted copies."""
    for row in rows:
        link = row["canonical_url"]
        assert (row["canonical"] == "missing") == (link == "")
        if row["canonical"] == "self":
            assert link == row["url"]
        if row["indexability"] != "noindex":  # the demo's print copies say noindex
            assert (row["indexability"] == "canonicalised") == (link not in ("", row["url"]))
        assert (row["cause"] != "") == (row["duplicate_of"] != "")
        assert (row["severity"] != "") == (row["near_duplicates"] > 0)
        if "?utm_" in row["url"] and row["duplicate_of"]:
            assert row["cause"] == "tracking parameters"
        if ("jsessionid" in row["url"] or "sid=" in row["url"]) and row["duplicate_of"]:
            assert row["cause"] == "session id"
        if row["url"].endswith("/print.html") and row["duplicate_of"]:
            assert row["cause"] == "print copy"
    causes = {r["cause"] for r in rows}
    assert {"tracking parameters", "session id", "print copy"} <= causes
    noindex = {r["url"].split("/", 3)[3] for r in rows if r["indexability"] == "noindex"}
    # the print copies, and the deep shop page the demo marks noindex
    assert noindex and all(
        u.endswith("/print.html") or u.startswith("shop/page/3.html") for u in noindex
    )
    assert any(u.startswith("shop/page/3.html") for u in noindex)
    assert {r["severity"] for r in rows} >= {"error", "info"}
    # the tag page with no posts, and only it, has few words for its template
    assert all(r["words"] for r in rows)
    low = [r["url"] for r in rows if r["low_content"] == "yes"]
    assert [u.split("/", 3)[3] for u in low] == ["tags/tandems.html"]


@deferred_f_from_coro_f
async def test_demo_report(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    with serve(SITE_ROOT) as server:
        await crawl(db, server.url_for("/"))
        base = server.url
    assert main(["report", "--db", db, "--json"]) == 0
    report = json.loads(capsys.readouterr().out.replace(base, ""))
    assert set(report) >= {"pages", "groups", "verdicts", "templates", "undeclared"}
    assert report["pages"] >= 60
    assert set(report["verdicts"]) == {"original", "duplicate", "moved", "same_template"}
    by_member = {m["url"]: (g, m) for g in report["groups"] for m in g["members"]}
    partner = "/partners/cityride/winter-riding-tips.html"
    (group,) = [g for g in report["groups"] if partner in {g["original"], *map(_url, g["members"])}]
    # the group agrees, through rel=canonical, on the clean article URL
    assert group["canonical"] == "/articles/winter-riding-tips.html"
    # the syndicated copy names no canonical; the winter print version names its article
    if partner in by_member:  # same text in another layout, or the byte twin of such a copy
        assert by_member[partner][1]["kind"] in {"content", "exact"}
        assert not by_member[partner][1]["declared"]
    printed = "/articles/winter-riding-tips/print.html"
    if printed in by_member:
        assert by_member[printed][1]["declared"]
    # the robots.txt-disallowed page was never fetched
    assert not any("/private/" in u for u in by_member)
    assert report["undeclared"] == sum(
        not m["declared"] for g in report["groups"] for m in g["members"]
    )
    assert main(["report", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "duplicate groups" in text and "templates" in text and "canonical" in text


# --------------------------------------------------------------------- per-page table, HTML


@deferred_f_from_coro_f
async def test_pages_table_csv_and_jsonl(tmp_path, capsys):
    import csv

    db = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    with serve(SITE_ROOT) as server:
        await crawl(db, server.url_for("/"))
    assert main(["report", "--db", db, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    jsonl, table = tmp_path / "pages.jsonl", tmp_path / "pages.csv"
    assert main(["report", "--db", db, "--pages", str(jsonl)]) == 0
    assert main(["report", "--db", db, "--pages", str(table)]) == 0
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    with table.open(encoding="utf-8", newline="") as f:
        from_csv = list(csv.DictReader(f))
    assert len(rows) == len(from_csv) == report["pages"]
    assert list(rows[0]) == list(from_csv[0]) == [
        "url", "status", "title", "verdict", "kind", "duplicate_of", "content_similarity",
        "layout_similarity", "near_duplicates", "template", "canonical", "canonical_url",
        "indexability", "cause", "severity", "template_id", "words", "low_content",
    ]  # fmt: skip
    assert [r["url"] for r in rows] == sorted(r["url"] for r in rows)
    assert [r["url"] for r in rows] == [r["url"] for r in from_csv]
    by_url = {r["url"]: r for r in rows}
    # every copy names its group's original; the original and the others count each other
    for group in report["groups"]:
        size = len(group["members"]) + 1
        assert by_url[group["original"]]["near_duplicates"] == size - 1
        assert by_url[group["original"]]["duplicate_of"] == ""
        for m in group["members"]:
            row = by_url[m["url"]]
            assert row["kind"] == m["kind"] and row["near_duplicates"] == size - 1
            repeats = row["verdict"] in {"duplicate", "moved"}
            assert row["duplicate_of"] == (group["original"] if repeats else "")
    grouped = {g["original"] for g in report["groups"]} | {
        m["url"] for g in report["groups"] for m in g["members"]
    }
    for row in rows:
        if row["url"] not in grouped:
            assert row["duplicate_of"] == "" and row["near_duplicates"] == 0
        assert row["status"] == 200 and row["verdict"] in report["verdicts"]
    assert sum(r["verdict"] == "moved" for r in rows) == report["verdicts"]["moved"]
    assert {r["template_id"] for r in rows} == {t["id"] for t in report["templates"]}
    # a template's name stands for it alone: as many names as ids, one per id
    names = {(r["template_id"], r["template"]) for r in rows}
    assert len(names) == len({r["template"] for r in rows}) == len(report["templates"])
    assert all(r["title"] for r in rows)

    def rounded(value):
        return None if value is None else round(value, 4)

    for group in report["groups"]:  # a copy's own measures against its group's original
        assert by_url[group["original"]]["verdict"] == "original"
        for m in group["members"]:
            row = by_url[m["url"]]
            assert row["content_similarity"] == rounded(m["content_similarity"])
            assert row["layout_similarity"] == rounded(m["layout_similarity"])
            assert row["layout_similarity"] is not None
            if row["kind"] == "exact":
                assert row["layout_similarity"] == row["content_similarity"] == 1.0
    for row in rows:  # pages that copy nothing carry no similarity
        if row["verdict"] not in {"duplicate", "moved"}:
            assert row["content_similarity"] is None and row["layout_similarity"] is None
    _audit_columns(rows)
    assert main(["report", "--db", db, "--pages", str(tmp_path / "pages.xlsx")]) == 2
    assert "jsonl or .csv" in capsys.readouterr().err


@deferred_f_from_coro_f
async def test_html_report_is_self_contained_and_escaped(tmp_path, capsys):
    from tests.crawling import article, write_site
    from visdup.report.html import csp

    hostile = '<img src=x onerror="alert(1)">'
    site = write_site(
        tmp_path / "site",
        {
            "index.html": article(
                "Home", ["Welcome to a small site about nothing much at all today."],
                ["/a.html", "/b.html", "/evil.html", "/a.html?copy=1"],
            ),
            "a.html": article("A", ["First paragraph of the article A here.",
                                    "Second paragraph of it, also quite long enough.",
                                    "Third paragraph, so the content channel takes part."], []),
            "b.html": article("B", ["Another text entirely, on other matters of note.",
                                    "It goes on with more words than before, as usual.",
                                    "And ends with a closing remark that says goodbye."], []),
            "evil.html": article(hostile.replace("<", "&lt;"), ["Hostile title page."], []),
        },
    )  # fmt: skip
    db = f"sqlite:///{tmp_path / 'x.sqlite3'}"
    with serve(site) as server:
        await crawl(db, server.url_for("/index.html"))
    out = tmp_path / "report.html"
    assert main(["report", "--db", db, "--html", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    text = out.read_text(encoding="utf-8")
    assert csp_value(text).startswith(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-"
    )
    script = text.split("<script>", 1)[1].split("</script>", 1)[0]
    assert csp(script) == csp_value(text)  # the one script is the one the policy allows
    # one script runs; the other is the pages' data, which no browser runs
    assert text.count("<script") == 2 and text.count('<script type="application/json"') == 1
    assert "src=x" not in text.replace("src=x onerror", "")
    # the title is in the pages' data, without a "<" (the script writes it as text)
    assert '\\u003cimg src=x onerror=\\"alert(1)\\">' in text
    assert f'data-kpi="pages">{report["pages"]}<' in text
    assert f'data-kpi="groups">{len(report["groups"])}<' in text
    # nothing the browser would fetch: no external source, stylesheet or image
    for needle in ("<link", "<img", 'src="http', "url(", "@import"):
        assert needle not in text
    assert text.count('class="layout"') == len(report["templates"])


def csp_value(text: str) -> str:
    """The policy as the browser reads it (the attribute is escaped like every other)."""
    import html

    raw = text.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    return html.unescape(raw)


@deferred_f_from_coro_f
async def test_reanalysis_from_the_store(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    with serve(SITE_ROOT) as server:
        await crawl(db, server.url_for("/"))
    assert main(["report", "--db", db, "--json"]) == 0
    crawled = json.loads(capsys.readouterr().out)
    # at the crawl's own thresholds, the store's terms and prints give the crawl's verdicts
    assert main(["report", "--db", db, "--json", "--threshold", "0.95"]) == 0
    captured = capsys.readouterr()
    same = json.loads(captured.out)
    assert "re-analysis" in captured.err and "unchanged" in captured.err

    # The same copies and groups. Which copies are "moved" rather than "duplicate" may differ
    # where a page stored later took a group over as its original: the crawl labelled the
    # group anew against it, by measures no stored comparison holds, and the replay elects no
    # original (1 full run in 4: duplicate 24 / moved 5 against 23 / 6).
    def copies(verdicts: dict[str, int]) -> dict[str, int]:
        out = dict(verdicts)
        out["copies"] = out.pop("duplicate", 0) + out.pop("moved", 0)
        return out

    assert copies(same["verdicts"]) == copies(crawled["verdicts"])
    assert len(same["groups"]) == len(crawled["groups"])
    # a content threshold of 1.0 leaves only mirrors and exact copies as duplicates
    assert main(["report", "--db", db, "--json", "--content-threshold", "1.0"]) == 0
    strict = json.loads(capsys.readouterr().out)
    assert strict["verdicts"].get("moved", 0) <= crawled["verdicts"]["moved"]
    assert sum(len(g["members"]) for g in strict["groups"]) < sum(
        len(g["members"]) for g in crawled["groups"]
    )
    # structure alone at a low threshold: nothing was fetched, the stored verdicts stay
    assert main(["report", "--db", db, "--json", "--threshold", "0.3"]) == 0
    capsys.readouterr()
    assert main(["report", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == crawled
    # --save stores the re-analysed labels in place of the crawl's
    assert main(["report", "--db", db, "--content-threshold", "1.0", "--save"]) == 0
    assert "saved" in capsys.readouterr().err
    assert main(["report", "--db", db, "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    # the histogram splits the stored comparisons at the thresholds the crawl recorded
    assert saved.pop("similarities")["content"]["threshold"] == 0.8
    assert strict.pop("similarities")["content"]["threshold"] == 1.0
    assert saved == strict
    assert main(["report", "--db", db, "--save"]) == 2
    with pytest.raises(SystemExit):
        main(["report", "--db", db, "--threshold", "1.5"])


# --------------------------------------------------------------------- pictures and diffs


def test_differing_subtree_names_the_path_and_marks_tokens():
    from visdup.report.diff import differing_subtree, marked_tokens
    from visdup.structure.term import Term

    a = Term.parse("grp(row(text,text),grp(row,[3]col(text)),row(text))")
    b = Term.parse("grp(row(text,text),grp(row,[4]col(text)),row(text))")
    d = differing_subtree(a, b)
    assert d.path == ["grp", "grp#2", "[3]col#2"]
    assert (d.left, d.right) == ("[3]col(…)", "[4]col(…)")  # the same children, elided
    left, right = marked_tokens(d.left, d.right)
    assert ("[3]", True) in left and ("[4]", True) in right and ("col(…)", False) in left
    # a whole subtree that differs is shown, long ones cut
    f = Term.parse("grp(row(text,text),grp(row,[3]row(text,col)),row(text))")
    d = differing_subtree(a, f)
    assert d.path == ["grp", "grp#2", "children #2"] and (d.left, d.right) == (
        "[3]col(text)",
        "[3]row(text,col)",
    )
    # an inserted child: the region between the shared first and last children
    c = Term.parse("grp(row(text,text),grp(row,[3]col(text),text),row(text))")
    d = differing_subtree(a, c)
    assert d.path == ["grp", "grp#2", "children #3"] and (d.left, d.right) == ("∅", "text")
    assert differing_subtree(a, a).identical
    # different roots: the whole terms
    e = Term.parse("row(text)")
    assert differing_subtree(a, e).path == ["grp|row"]


def test_layout_picture_is_bounded():
    import re

    from visdup.report.svg import layout
    from visdup.structure.term import Term

    wide = Term.parse(
        "grp(" + ",".join(f"row({','.join(['text'] * (i % 7 + 1))})" for i in range(200)) + ")"
    )
    svg = layout(wide)
    boxes = len(re.findall(r"[Mm]-?\d+ -?\d+h", svg))  # absolute or relative moves
    # 800 leaves on 640 px: texts (0.8 px) and rows of one or two (under 2 px) are left out
    assert boxes == 1 + 200 - 2 * 29
    small = Term.parse("grp([2]row([4]text),col(text))")
    svg = layout(small)
    assert svg.count('class="lg"') == 1 and svg.count('class="lr"') == 1
    assert len(re.findall(r"[Mm]-?\d+ -?\d+h", svg)) == 5 and "row ×2" in svg


# --------------------------------------------------------------------- crawl progress


class _Terminal:
    """A stderr that says it is a terminal, and keeps what was written."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


@deferred_f_from_coro_f
async def test_progress_line_and_recorded_settings(tmp_path, monkeypatch):
    from visdup.storage.store import Store

    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    db = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    with serve(SITE_ROOT) as server:
        crawler = await crawl(
            db, server.url_for("/"), {"VISDUP_SIMILARITY_THRESHOLD": "0.9", "LOG_LEVEL": "INFO"}
        )
    monkeypatch.undo()
    pages = crawler.stats.get_value("visdup/pages")
    # one line rewritten in place, ending with the final counts and a newline
    assert terminal.text.startswith("\rvisdup: ") and terminal.text.endswith("\n")
    last = terminal.text.rstrip("\n").split("\r")[-1].rstrip()
    duplicates = crawler.stats.get_value("visdup/duplicates")
    templates = crawler.stats.get_value("visdup/clusters")
    assert last.startswith(
        f"visdup: {pages} pages, {duplicates} duplicates, {templates} templates, "
    )
    assert "pages/s" in last
    # the run keeps the settings its verdicts were computed with, and the report shows them
    (run,) = Store.from_url(db).run_rows()
    stats = json.loads(run.stats)
    assert stats["visdup/settings/VISDUP_SIMILARITY_THRESHOLD"] == "0.9"
    assert stats["visdup/settings/VISDUP_HAMMING_K"] == 6
    out = tmp_path / "r.html"
    assert main(["report", "--db", db, "--html", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<th>VISDUP_SIMILARITY_THRESHOLD</th><td>0.9</td>" in text


def test_progress_logs_a_line_off_a_terminal(caplog):
    import io
    import logging

    from scrapy.utils.test import get_crawler

    from visdup.progress import Progress

    crawler = get_crawler(settings_dict={"LOGSTATS_INTERVAL": 30})
    crawler.stats = crawler._create_stats() if hasattr(crawler, "_create_stats") else crawler.stats
    stream = io.StringIO()
    progress = Progress(crawler, stream)
    assert not progress.live and progress.interval == 30
    crawler.stats.set_value("visdup/pages", 12)
    crawler.stats.set_value("visdup/duplicates", 3)
    with caplog.at_level(logging.INFO, logger="visdup.progress"):
        progress.show()
    assert stream.getvalue() == ""
    assert caplog.messages[-1].startswith("visdup: 12 pages, 3 duplicates, 0 templates, ")


@pytest.mark.parametrize(
    ("url", "original", "cause"),
    [
        (
            "https://a.example/p.html?utm_source=x",
            "https://a.example/p.html",
            "tracking parameters",
        ),
        (
            "https://a.example/p.html?gclid=1&b=2",
            "https://a.example/p.html?b=2",
            "tracking parameters",
        ),
        ("https://a.example/p.html;jsessionid=AB12", "https://a.example/p.html", "session id"),
        ("https://a.example/p.html?sid=5e1d", "https://a.example/p.html", "session id"),
        ("https://a.example/p/print.html", "https://a.example/p.html", "print copy"),
        ("https://a.example/p.html?print=1", "https://a.example/p.html", "print copy"),
        ("https://a.example/p/", "https://a.example/p", "trailing slash"),
        ("https://a.example/P.html", "https://a.example/p.html", "letter case"),
        ("https://a.example/p?b=2&a=1", "https://a.example/p?a=1&b=2", "parameter order"),
        ("https://a.example/d/index.html", "https://a.example/d/", "index file"),
        ("https://a.example/p?colour=red", "https://a.example/p", "other parameters"),
        ("http://a.example/p", "https://a.example/p", "protocol or host"),
        ("https://a.example/partners/p.html", "https://a.example/p.html", "another path"),
    ],
)
def test_the_cause_of_a_copy_is_read_from_its_url(url, original, cause):
    from visdup.report.causes import CAUSES, duplicate_cause

    assert duplicate_cause(url, original) == cause and cause in CAUSES


SENTENCES = [
    "The harbour path runs for six miles beside the old sea wall and the boatyards.",
    "Riders on the evening loop pass the lighthouse just as its lamp comes on.",
    "A short climb past the chapel gives the only view of the whole bay from above.",
    "The cafe at the far end opens early and keeps a pump and a stand for visitors.",
    "Coming back with the wind behind you takes half the time the way out took.",
]


def _one_word_site(root):
    from tests.crawling import article, write_site

    edited = [s.replace("six miles", "seven miles") for s in SENTENCES]
    return write_site(
        root,
        {
            "index.html": article(
                "Rides", ["Our favourite rides."], ["harbour.html", "copy.html", "private.html"]
            ),
            "harbour.html": article("The harbour loop", SENTENCES, []),
            "copy.html": article("The harbour loop", edited, []),
            "private.html": article("Staff only", ["Not for search engines."], []).replace(
                "<head>", '<head><meta name="robots" content="noindex, follow">'
            ),
        },
    )


@pytest.mark.parametrize("store_body", [True, False])
@deferred_f_from_coro_f
async def test_a_group_shows_the_word_that_changed(tmp_path, capsys, store_body):
    """A copy with one word edited shows that word deleted beside the original and inserted
    in the copy; without stored bodies the group says why it cannot."""
    site = _one_word_site(tmp_path / "site")
    db = f"sqlite:///{tmp_path / 'x.sqlite3'}"
    with serve(site) as server:
        await crawl(db, server.url_for("/index.html"), {"VISDUP_STORE_BODY": store_body})
    out, table = tmp_path / "report.html", tmp_path / "pages.jsonl"
    assert main(["report", "--db", db, "--html", str(out), "--json", "--pages", str(table)]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {
        r["url"].rsplit("/", 1)[1]: r
        for r in map(json.loads, table.read_text(encoding="utf-8").splitlines())
    }
    # its robots meta tag keeps a page out of the index: read from its body, when stored
    assert rows["private.html"]["indexability"] == ("noindex" if store_body else "indexable")
    assert rows["harbour.html"]["indexability"] == "indexable"
    assert len(report["groups"]) == 1 and report["groups"][0]["members"][0]["kind"] == "content"
    text = out.read_text(encoding="utf-8")
    if store_body:
        # the final pass chooses which of the two is the original: the word shows either way
        one_way = "<del>six</del>" in text and "<ins>seven</ins>" in text
        assert one_way or ("<del>seven</del>" in text and "<ins>six</ins>" in text)
        assert "VISDUP_STORE_BODY" not in text.split('id="groups"')[1].split("</section>")[0]
    else:
        assert "<del>" not in text and "not stored (VISDUP_STORE_BODY = False)" in text


def test_the_html_report_orders_groups_by_size_then_url_not_page_id():
    """Two crawls store the same pages under other ids: the groups of the HTML report come in
    one order all the same (the largest first, then by their original's URL)."""
    from visdup.report.summary import Group, Member, largest_first

    def group(page_id: int, url: str, copies: int) -> Group:
        members = [
            Member(page_id + i + 1, f"{url}?c={i}", 1.0, "exact", None) for i in range(copies)
        ]
        return Group(page_id, url, None, members)

    first = [group(1, "http://x/b", 1), group(5, "http://x/a", 1), group(9, "http://x/c", 2)]
    again = [group(7, "http://x/b", 1), group(3, "http://x/a", 1), group(1, "http://x/c", 2)]
    for groups in (first, again):
        ordered = [g.original for g in sorted(groups, key=largest_first)]
        assert ordered == ["http://x/c", "http://x/a", "http://x/b"]
