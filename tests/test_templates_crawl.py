"""Template clusters during a crawl, records as items, and the --db variants of the commands."""

from __future__ import annotations

import json

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FIXTURES
from tests.crawling import crawl
from visdup.cli import main
from visdup.demo.server import serve
from visdup.report.summary import build_report
from visdup.storage.store import Store
from visdup.templates.assign import CrawlClusters
from visdup.templates.signature import make_layout

SITE = FIXTURES / "sites" / "templates"


@deferred_f_from_coro_f
async def test_crawl_sorts_pages_into_templates_and_streams_records(tmp_path, capsys):
    expected = json.loads((SITE / "EXPECTED.json").read_text())["templates"]
    db = f"sqlite:///{tmp_path / 'v.sqlite3'}"
    out = tmp_path / "records.jsonl"
    feeds = {str(out): {"format": "jsonlines", "item_classes": ["visdup.items.Record"]}}
    with serve(SITE) as server:
        crawler = await crawl(
            db,
            server.url_for("/"),
            settings={"VISDUP_EXTRACT_ITEMS": True, "FEEDS": feeds, "VISDUP_TEMPLATE_MIN_PAGES": 3},
        )
        base = server.url
    store = Store.from_url(db)
    cluster_of = {r.url.replace(base, ""): r.cluster_id for r in store.rows("url", "cluster_id")}
    assert None not in cluster_of.values()
    event = {cluster_of[p] for p in expected["event"]}
    person = {cluster_of[p] for p in expected["person"]}
    assert len(event) == 1 and len(person) == 1 and event != person
    stats = crawler.stats.get_stats()
    assert stats["visdup/clusters"] == len(store.cluster_rows()) >= 2
    # every event and person page became a record of its template, early pages included
    records = [json.loads(line) for line in out.read_text().splitlines()]
    urls = {r["url"].replace(base, "") for r in records}
    assert set(expected["event"]) | set(expected["person"]) <= urls
    event_rows = [r for r in records if r["url"].replace(base, "") in expected["event"]]
    assert all(r["fits"] for r in event_rows)
    # the article's text is one field of its own, whole, and that page's only
    film = next(r for r in event_rows if r["url"].endswith("film-night.html"))
    assert "Three short silent comedies" in film["main_text"]
    assert "intertitles will be read aloud" in film["main_text"]
    assert all("silent comedies" not in r["main_text"] for r in event_rows if r is not film)
    fields = set(event_rows[0]) - {"url", "cluster", "fits", "main_text"}
    assert fields, "the event template has fields"
    varying = [f for f in fields if len({r[f] for r in event_rows}) == len(event_rows)]
    assert varying, "at least one field differs on every event page (its title, say)"
    assert any(row.template for row in store.cluster_rows())
    # the report lists templates with sizes and URL patterns
    templates = build_report(store)["templates"]
    sizes = sorted(t["size"] for t in templates)
    assert sizes[-2:] == [5, 5]
    assert any("/events/*.html (5)" in t["url_patterns"] for t in templates)

    # a signature another visdup version stored (its key is not its labels' digest): a crawl
    # does not use it, and the batch below replaces it
    with store.engine.begin() as conn:
        store.put_layout(conn, 12345, cluster_id=1, labels=["body"], sizes=[1], version=99)

    # batch re-clustering of the stored pages, and extraction from the store
    assert main(["cluster", "--db", db, "--json"]) == 0
    clusters = json.loads(capsys.readouterr().out)["clusters"]
    assert sum(c["size"] for c in clusters) == len(cluster_of)
    # the crawl's clusters and the batch ones: the same partition, under the same ids
    batch = {m.replace(base, ""): c["id"] for c in clusters for m in c["members"]}
    assert batch == cluster_of
    # the batch's signatures replaced the stored ones: a crawl starts from its clusters
    with store.engine.connect() as conn:
        stored = store.changed_layouts(conn, 0)
    assert stored and all(make_layout(labels, sizes).key == key for key, labels, sizes in stored)
    warm = CrawlClusters(store, background=False)
    assert {warm.clusterer.cluster_of(key) for key, _l, _s in stored} == set(batch.values())
    csv_out = tmp_path / "data.csv"
    assert main(["extract", "--db", db, "--out", str(csv_out)]) == 0
    header = csv_out.read_text().splitlines()[0].split(",")
    assert header[:3] == ["url", "cluster", "fits"]
    store = Store.from_url(db)
    assert all(r.cluster_id is not None for r in store.rows("cluster_id"))


def test_cluster_and_extract_need_a_source(tmp_path):
    assert main(["cluster"]) == 2
    assert main(["extract", "--out", str(tmp_path / "x.csv")]) == 2
    assert main(["cluster", "--db", f"sqlite:///{tmp_path / 'absent.sqlite3'}"]) == 2


def test_extract_from_files_names_rows_by_path(tmp_path):
    out = tmp_path / "rows.jsonl"
    assert main(["extract", str(SITE / "events"), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all("path" in r and "url" not in r for r in rows)


@deferred_f_from_coro_f
async def test_a_blogs_posts_archives_and_home_pages_are_apart(tmp_path, capsys):
    # A post without comments and a day archive of one post differ in ~4 of 50 skeleton nodes:
    # without the marks of their <body> (single-post, archive date, home blog) links of single
    # pages joined post, day and home pages into one template.
    from bench.blogs import make_blog

    blog = make_blog("twentytwentyone", posts=36, seed=1)
    site = tmp_path / "site"
    for path, html in blog.pages.items():
        target = site / path.strip("/") / "index.html" if path.endswith("/") else site / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'v.sqlite3'}"
    with serve(site) as server:
        await crawl(db, server.url_for(blog.start))
        base = server.url
    store = Store.from_url(db)
    cluster_of = {r.url.replace(base, ""): r.cluster_id for r in store.rows("url", "cluster_id")}
    kinds = {p: k for p, k in blog.kinds.items() if p in cluster_of}
    assert len(kinds) == len(blog.pages)
    by_cluster: dict[int, set[str]] = {}
    for path, kind in kinds.items():
        by_cluster.setdefault(cluster_of[path], set()).add(kind)
    assert all(len(found) == 1 for found in by_cluster.values()), by_cluster
    largest = max(by_cluster, key=lambda c: sum(cluster_of[p] == c for p in kinds))
    assert by_cluster[largest] == {"post"}
    # the batch reads the same marks from the stored pages: the same partition, the same ids
    assert main(["cluster", "--db", db, "--json"]) == 0
    clusters = json.loads(capsys.readouterr().out)["clusters"]
    assert {m.replace(base, ""): c["id"] for c in clusters for m in c["members"]} == cluster_of
