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
        assert original.verdict == "original", (a, b, original.verdict)
        paired |= {a, b}
    for a, b in expected["mirrors"]:
        original, copy = original_and_copy(rows[a], rows[b], "moved")
        assert copy.content_duplicate_of == original.id, "same content in another template"
        assert original.verdict == "original", (a, b, original.verdict)
        paired |= {a, b}
    for name, paths in expected["templates"].items():
        for path in paths:
            if path not in paired:  # pages of pairs are checked above
                assert rows[path].verdict in {"novel", "same_template"}, (name, path)
    # pages of two templates: three originals, their three copies (one a moved mirror); every
    # other page has a peer of its template, none is novel
    assert sum(r.verdict == "original" for r in rows.values()) == 3
    assert sum(r.verdict in {"duplicate", "moved"} for r in rows.values()) == 3
    assert sum(r.verdict == "same_template" for r in rows.values()) == len(rows) - 6
    report = build_report(Store.from_url(db))
    kinds = {m["kind"] for g in report["groups"] for m in g["members"]}
    assert kinds == {"exact", "content"}
    assert set(report["verdicts"]) == {"original", "duplicate", "moved", "same_template"}


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
    assert rows["article_x_site1.html"].verdict == "original"
    assert rows["article_x_site1_changed.html"].verdict == "duplicate"
    assert rows["article_x_site2.html"].verdict == "moved"
    assert rows["article_y_site1.html"].verdict == "same_template"


def _labelled_with_a_late_twin(tmp_path, near: str, body: str):
    """``near`` stored, then a page prepared and caught up, then its byte-identical copy
    stored under a deeper URL (by another thread, before the page takes the lock): the page's
    structure channel never measured its twin."""
    from visdup.config import defaults
    from visdup.dedup.analysis import AnalysisOptions, analyse
    from visdup.dedup.label import build_labeller

    store = Store.from_url(f"sqlite:///{tmp_path / 'takeover.sqlite3'}")
    labeller = build_labeller(store, defaults().__getitem__, count=lambda _k, _n=1: None)
    run_id = store.begin_run("test")

    def prepared(url: str, html: str):
        page = analyse(html.encode(), url=url, options=AnalysisOptions(template=False))
        content = page.content
        return page.record(keep_body=False), {
            "structure": labeller.prepare("structure", page.simhash, page.term),
            "content": labeller.prepare("content", content and content.simhash, content),
        }

    try:
        labeller.commit(*prepared("http://h/other/near.html", near), run_id)
        record, pending = prepared("http://h/a.html", body)
        labeller.catch_up(pending)
        labeller.commit(*prepared("http://h/archive/2020/copy/a.html", body), run_id)
        labeller.catch_up = lambda _prepared: None  # the twin came after this page's catch-up
        page_id = labeller.commit(record, pending, run_id)
        rows = {r.url.removeprefix("http://h/"): r for r in store.rows()}
        compared = {
            channel: sim for pid, _o, channel, sim in store.comparison_rows() if pid == page_id
        }
    finally:
        store.close()
    assert rows["a.html"].id == page_id
    return rows, compared


def _article(words: str, extra: str = "") -> str:
    sections = "".join(
        f"<section><h2>Part {i}</h2><p>{words}, part {i}.</p><ul><li>{words}</li><li>{i}</li>"
        f"</ul><table><tr><td>{i}</td><td>{words}</td></tr></table></section>"
        for i in range(5)
    )
    return (
        "<html><body><header><h1>Site</h1><nav><a href='/'>home</a><a href='/b'>b</a></nav>"
        f"</header><main>{sections}{extra}</main><footer><p>Footer</p></footer></body></html>"
    )


def test_a_copy_that_takes_over_keeps_a_similarity_it_measured(tmp_path):
    """The page ranks before its twin (a shorter URL) and becomes the group's original: its
    similarity is the one its structure channel measured and stored, not the twin's 1.0; the
    twin is its byte-identical duplicate."""
    near = _article("granite canyons meet the quiet prairie", "<div><h3>x</h3><p>y</p></div>")
    rows, compared = _labelled_with_a_late_twin(tmp_path, near, _article("harbour lanterns"))
    mine, twin = rows["a.html"], rows["archive/2020/copy/a.html"]
    assert (twin.verdict, twin.kind, twin.duplicate_of, twin.similarity) == (
        "duplicate",
        "exact",
        mine.id,
        1.0,
    )
    assert mine.duplicate_of is None and mine.kind is None
    assert mine.similarity is not None and 0.8 <= mine.similarity < 0.95
    assert mine.similarity == compared["structure"]


def test_a_copy_that_takes_over_a_group_gives_the_original_what_its_twin_was(tmp_path):
    """The twin was a content duplicate of another page, the group's original, which the new
    page outranks: that original becomes a content duplicate of the page (what it was to the
    twin), never a byte-identical copy of it."""
    near = _article("harbour lanterns", "<p>A line more.</p>")
    rows, _compared = _labelled_with_a_late_twin(tmp_path, near, _article("harbour lanterns"))
    mine, twin, old = rows["a.html"], rows["archive/2020/copy/a.html"], rows["other/near.html"]
    assert twin.kind == "content" and old.kind == "content"
    assert old.verdict == twin.verdict and old.duplicate_of == mine.id == twin.duplicate_of
    assert old.content_duplicate_of == mine.id
    assert old.similarity != 1.0 or old.term == mine.term
    assert mine.duplicate_of is None and mine.kind is None
