"""One verdict per page from both channels: duplicate, same template, moved content, novel."""

from __future__ import annotations

import json

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FIXTURES
from tests.crawling import crawl
from visdup.cli import main
from visdup.dedup.offline import label_files
from visdup.demo.server import serve
from visdup.report.summary import build_report
from visdup.storage.store import Store

BASIC = FIXTURES / "sites" / "basic"
CONTENT = FIXTURES / "content"


def _rows(db: str, base: str) -> dict[str, object]:
    return {r.url.replace(base, ""): r for r in Store.from_url(db).rows()}


def original_and_copy(a, b, verdict: str):
    """(original, copy) of a pair, whichever the crawl stored first: exactly one names the other."""
    names = [
        (x, y)
        for x, y in ((a, b), (b, a))
        if y.verdict == verdict and x.id in {y.duplicate_of, y.content_duplicate_of}
    ]
    assert len(names) == 1, [(r.url, r.verdict, r.duplicate_of, r.id) for r in (a, b)]
    return names[0]


@deferred_f_from_coro_f
async def test_same_template_pages_are_not_duplicates_and_a_mirror_is(tmp_path):
    """Exact copies and a print mirror are found whichever page of a pair is stored first."""
    expected = json.loads((BASIC / "EXPECTED.json").read_text())
    db = f"sqlite:///{tmp_path / 'v.sqlite3'}"
    with serve(BASIC) as server:
        await crawl(db, server.url_for("/"))
        rows = _rows(db, server.url)
    paired = set()
    for a, b in expected["exact"]:
        original, copy = original_and_copy(rows[a], rows[b], "duplicate")
        assert copy.kind == "exact" and copy.duplicate_of == original.id
        assert original.verdict in {"novel", "same_template"}, (a, b, original.verdict)
        paired |= {a, b}
    for a, b in expected["mirrors"]:
        original, copy = original_and_copy(rows[a], rows[b], "moved")
        assert copy.content_duplicate_of == original.id, "same content in another template"
        assert original.verdict in {"novel", "same_template"}, (a, b, original.verdict)
        paired |= {a, b}
    for name, paths in expected["templates"].items():
        for path in paths:
            if path not in paired:  # pages of pairs are checked above
                assert rows[path].verdict in {"novel", "same_template"}, (name, path)
    # 13 pages in two templates: one novel original each, two exact copies, one moved mirror
    assert sum(r.verdict == "same_template" for r in rows.values()) >= 6
    report = build_report(Store.from_url(db))
    kinds = {m["kind"] for g in report["groups"] for m in g["members"]}
    assert kinds == {"exact", "content"}
    assert set(report["verdicts"]) >= {"duplicate", "moved", "same_template", "novel"}


@deferred_f_from_coro_f
async def test_drop_policy_never_drops_for_structure_alone(tmp_path):
    db = f"sqlite:///{tmp_path / 'v.sqlite3'}"
    with serve(BASIC) as server:
        crawler = await crawl(db, server.url_for("/"), settings={"VISDUP_DUPLICATE_POLICY": "drop"})
        rows = _rows(db, server.url)
    stats = crawler.stats.get_stats()
    acted = [r for r in rows.values() if r.verdict in {"duplicate", "moved"}]
    assert len(acted) == 3
    # a page dropped on arrival stays a copy; an original a better one replaced later was kept
    replaced = stats.get("visdup/originals_replaced", 0)
    assert stats.get("item_dropped_count", 0) == stats["visdup/duplicates"] - replaced
    assert stats["visdup/duplicates"] == 3
    assert stats.get("item_scraped_count", 0) == len(rows) - 3 + replaced


def test_offline_dups_on_content_fixtures(capsys):
    assert main(["dups", "--json", str(CONTENT)]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    by_original = {g["original"].rsplit("/", 1)[-1]: g["members"] for g in groups}
    members = {m["path"].rsplit("/", 1)[-1]: m for ms in by_original.values() for m in ms}
    # the same article in another site's template, and with one changed sentence
    assert {"article_x_site1_changed.html", "article_x_site2.html"} <= set(members) | set(
        by_original
    )
    assert all(m["kind"] == "content" for m in members.values())
    # another article, the boilerplate-only page and the CJK article join no group
    grouped = set(members) | set(by_original)
    assert not grouped & {"article_y_site1.html", "boilerplate_only.html", "cjk_article.html"}


def test_offline_labels_match_verdict_semantics(tmp_path):
    pages = [(p.name, p.read_bytes()) for p in sorted(CONTENT.glob("article_*.html"))]
    store, tmp = label_files(pages)
    try:
        rows = {r.url: r for r in store.rows()}
    finally:
        store.close()
        if tmp:
            tmp.unlink()
    assert rows["article_x_site1.html"].verdict == "novel"
    assert rows["article_x_site1_changed.html"].verdict == "duplicate"
    assert rows["article_x_site2.html"].verdict == "moved"
    assert rows["article_y_site1.html"].verdict == "same_template"
