"""Drift alarms from real crawls: a site re-crawled as snapshots, its product layout redesigned
at the third; the alarm comes exactly there, with the right "since", and nowhere else."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl
from tests.sites import serve_routes
from visdup.cli.app import main
from visdup.drift.aggregate import LIMIT
from visdup.drift.values import value_type
from visdup.verdicts import DUPLICATE_VERDICTS

PRODUCTS = 14
ARTICLES = 8
NAMES = ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Ivy", "Juniper"]


def _product(i: int, era: str) -> str:
    name = f"{NAMES[i % len(NAMES)]} chair model {i * 7 + 3}"
    price = f"${12 + i * 3}.{(i * 37) % 100:02d}"
    date = f"2026-{1 + i % 12:02d}-{1 + (i * 5) % 28:02d}"
    stock = f"{(i * 11) % 97 + 1} units in the warehouse"
    if era == "A":
        main = (
            f"<div class='product'><h2 class='name'>{name}</h2><table class='facts'>"
            f"<tr><th>Price:</th><td>{price}</td></tr><tr><th>Stock:</th><td>{stock}</td></tr>"
            f"<tr><th>Added:</th><td>{date}</td></tr></table>"
            f"<p class='blurb'>A sturdy seat number {i} for long evenings and early mornings.</p>"
            "</div>"
        )
    else:  # the redesign: cards and lists instead of the facts table
        main = (
            f"<section class='card'><header><h1>{name}</h1><span class='badge'>new</span>"
            f"</header><ul class='specs'><li><b>Cost</b> <i>{price}</i></li>"
            f"<li><b>Availability</b> <i>{stock}</i></li></ul><div class='gallery'>"
            "<img src='/a.png'><img src='/b.png'></div><form><button>Buy</button></form>"
            f"<article><p>A sturdy seat number {i}.</p><p>Ships in {i % 5 + 1} days.</p>"
            "</article></section>"
        )
    return _page(f"Chair {i}", main)


def _article(i: int) -> str:
    body = "".join(
        f"<p>Paragraph {k} of the journal entry {i}: the workshop notes on joinery.</p>"
        for k in range(3)
    )
    return _page(f"Journal {i}", f"<article><h2>Journal {i}</h2>{body}</article>")


def _page(title: str, main: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        "<nav><a href='/'>Shop</a> <a href='/journal/0.html'>Journal</a></nav>"
        f"<main>{main}</main><footer><p>Chairs and more</p></footer></body></html>"
    )


def _index(copies: int = 0) -> str:
    links = "".join(f"<li><a href='/product/{i}.html'>chair {i}</a></li>" for i in range(PRODUCTS))
    links += "".join(f"<li><a href='/journal/{i}.html'>entry {i}</a></li>" for i in range(ARTICLES))
    links += "".join(f"<li><a href='/copy/{i}.html'>copy {i}</a></li>" for i in range(copies))
    return _page("Shop", f"<ul class='index'>{links}</ul>")


class Site:
    """The shop, its product layout switched by ``era``."""

    def __init__(self, copies: int = 0) -> None:
        self.era = "A"
        self.copies = copies  # /copy/N.html: byte-for-byte copies of /product/N.html
        self.requests: list[str] = []

    def __call__(self, path: str, _query: dict[str, list[str]]) -> tuple[int, str] | None:
        self.requests.append(path)
        if path in {"/", "/index.html"}:
            return 200, _index(self.copies)
        stem = path.rsplit("/", 1)[-1].removesuffix(".html")
        if path.startswith("/product/") and stem.isdigit() and int(stem) < PRODUCTS:
            return 200, _product(int(stem), self.era)
        if path.startswith("/copy/") and stem.isdigit() and int(stem) < self.copies:
            return 200, _product(int(stem), self.era)
        if path.startswith("/journal/") and stem.isdigit() and int(stem) < ARTICLES:
            return 200, _article(int(stem))
        return None


def _drift_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "visdup: drift in" in r.getMessage()
    ]


def _stats_sizes(db: str) -> list[int]:
    path = db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        return [n for (n,) in conn.execute("SELECT length(stats) FROM visdup_snapshot_templates")]


@deferred_f_from_coro_f
async def test_a_redesign_alarms_exactly_at_its_snapshot(tmp_path, caplog, capsys):
    db = f"sqlite:///{tmp_path / 'drift.sqlite3'}"
    site = Site()
    per_crawl: list[tuple[list[str], dict[str, int], int]] = []
    with serve_routes(site) as base:
        for k, era in enumerate("AABB", start=1):
            site.era = era
            site.requests.clear()
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                crawler = await crawl(
                    db, base + "/", settings={"VISDUP_CRAWL_ID": f"s{k}", "LOG_LEVEL": "WARNING"}
                )
            stats = crawler.stats.get_stats()
            drift = {k: v for k, v in stats.items() if k.startswith("visdup/drift/")}
            per_crawl.append((_drift_lines(caplog), drift, len(site.requests)))
    pages = 1 + PRODUCTS + ARTICLES
    for lines, drift, fetched in per_crawl:
        # every snapshot fetched the whole site again (a new crawl id), robots.txt aside
        assert fetched == pages
        assert drift["visdup/drift/pages"] == pages
        assert drift["visdup/drift/alarms"] == len(lines)  # one WARNING line per alarm
    assert [d["visdup/drift/alarms"] for _l, d, _f in per_crawl] == [0, 0, 1, 0]
    assert per_crawl[2][1]["visdup/drift/errors"] == 1
    (line,) = per_crawl[2][0]
    assert "drift in s3 against s2" in line and "error" in line
    assert max(_stats_sizes(db)) <= LIMIT

    # the redesign seen from s2 to s4 started at s3
    capsys.readouterr()
    assert main(["drift", "--db", db, "--baseline", "s2", "--current", "s4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["baseline"] == "s2" and report["current"] == "s4"
    (alarm,) = report["alarms"]
    assert alarm["since"] == "s3" and alarm["severity"] == "error"
    assert alarm["change"] in {"replaced", "changed"}
    # where: what of the old product layout the redesigned pages miss, before and after
    assert alarm["where"]["path"].startswith("body")
    assert alarm["where"]["before"] and alarm["where"]["after"]
    assert set(alarm) >= {"template", "change", "severity", "where", "fields", "since"}
    # the default compares the last snapshot with the one before: no alarm
    assert main(["drift", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alarms"] == []
    # exit status for cron and CI
    assert main(["drift", "--db", db, "--current", "s3", "--fail-on", "error"]) == 1
    assert main(["drift", "--db", db, "--current", "s3", "--fail-on", "warning"]) == 1
    assert main(["drift", "--db", db, "--current", "s2", "--fail-on", "warning"]) == 0
    assert main(["drift", "--db", db, "--current", "s4", "--fail-on", "error"]) == 0
    text = capsys.readouterr().out
    assert "s3" in text
    assert main(["drift", "--db", db, "--current", "nope"]) == 2


def _duplicates(db: str) -> int:
    marks = ",".join("?" * len(DUPLICATE_VERDICTS))
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        query = f"SELECT count(*) FROM visdup_pages WHERE verdict IN ({marks})"
        return conn.execute(query, sorted(DUPLICATE_VERDICTS)).fetchone()[0]


@deferred_f_from_coro_f
async def test_a_crawl_id_continues_and_a_new_one_fetches_again(tmp_path):
    db = f"sqlite:///{tmp_path / 'resume.sqlite3'}"
    site = Site(copies=3)
    drop = {"LOG_LEVEL": "WARNING", "VISDUP_DUPLICATE_POLICY": "drop"}
    with serve_routes(site) as base:
        one = await crawl(db, base + "/", settings={"VISDUP_CRAWL_ID": "one", **drop})
        first = len(site.requests)
        labelled = _duplicates(db)  # as stored when the crawl ended
        site.requests.clear()
        crawler = await crawl(db, base + "/", settings={"VISDUP_CRAWL_ID": "one", **drop})
        assert site.requests == []  # the same snapshot continues: nothing left to fetch
        assert crawler.stats.get_value("visdup/drift/pages") == 0
        two = await crawl(db, base + "/", settings={"VISDUP_CRAWL_ID": "two", **drop})
        assert len(site.requests) == first  # a new snapshot fetches every page again
        assert two.stats.get_value("visdup/drift/refetched") == first
    # pages fetched again keep their stored labels: the copies are dropped again
    assert one.stats.get_value("visdup/duplicates") >= 3  # the copies at least
    assert two.stats.get_value("item_dropped_count") == labelled
    assert two.stats.get_value("item_scraped_count") == first - labelled
    path = db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
        rows = dict(
            conn.execute(
                "SELECT s.name, count(*) FROM visdup_snapshot_pages p JOIN visdup_snapshots s "
                "ON s.id = p.snapshot_id GROUP BY s.name"
            ).fetchall()
        )
        runs = conn.execute("SELECT count(*) FROM visdup_snapshot_runs").fetchone()[0]
    assert stored == first  # labelled once
    assert rows == {"one": first, "two": first}
    assert runs == 3


@deferred_f_from_coro_f
async def test_the_default_crawl_id_is_the_sites_and_the_day(tmp_path):
    db = f"sqlite:///{tmp_path / 'default.sqlite3'}"
    site = Site()
    with serve_routes(site) as base:
        await crawl(db, base + "/", settings={"LOG_LEVEL": "WARNING"}, max_pages=5)
        site.requests.clear()
        await crawl(db, base + "/", settings={"LOG_LEVEL": "WARNING"})  # continues it
        assert "/" not in site.requests
    path = db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM visdup_snapshots")]
    port = base.rsplit(":", 1)[1]
    assert len(names) == 1 and names[0].startswith(f"127.0.0.1:{port}-20")


def test_value_types():
    assert value_type(None) == value_type("  ") == "empty"
    assert value_type("304") == value_type("9780778327929") == "number"
    assert value_type("$7.99") == value_type("Online Price: $7.63") == "price"
    assert value_type("June 2010") == value_type("2026-11-30") == "date"
    assert value_type("30/11/2026") == value_type("Nov 30, 2026") == "date"
    assert value_type("https://example.com/a") == "url"
    assert value_type("Mira Books") == "short"
    assert value_type("word " * 30) == "long"


@pytest.mark.postgres
@deferred_f_from_coro_f
async def test_snapshots_on_postgresql(pg_url, capsys):
    site = Site()
    with serve_routes(site) as base:
        for name in ("pg1", "pg2"):
            crawler = await crawl(
                pg_url, base + "/", settings={"VISDUP_CRAWL_ID": name, "LOG_LEVEL": "WARNING"}
            )
            assert crawler.stats.get_value("visdup/drift/pages") == 1 + PRODUCTS + ARTICLES
            assert crawler.stats.get_value("visdup/drift/alarms") == 0
    capsys.readouterr()
    assert main(["drift", "--db", pg_url, "--json", "--fail-on", "warning"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["current"], report["baseline"], report["alarms"]) == ("pg2", "pg1", [])


def _stats(fits: list[float], coverage: float = 1.0, pages: int = 20) -> dict:
    """A template's aggregates as a snapshot writes them (visdup.drift.aggregate)."""
    n = len(fits)
    filled = round(coverage * n)
    return {
        "pages": pages,
        "fit": None,
        "patterns": {"/item/*.html": pages},
        "n": n,
        "shares": fits,
        "fields": {"price": [n - filled, 0, filled, 0, 0, 0, 0]},
        "misses": [],
    }


def test_tolerances_come_from_the_baselines_own_spread():
    from visdup.drift.compare import compare

    steady = [{1: _stats([0.99] * 12)} for _ in range(3)]
    noisy = [{1: _stats([f] * 12)} for f in (0.97, 0.86, 0.95)]
    now = {1: _stats([0.85] * 12)}
    # against steady snapshots a fall from 0.99 to 0.85 is a change...
    (alarm,) = compare(now, steady[-1], steady)
    assert (alarm.change, alarm.severity) == ("changed", "warning")
    # ...against a baseline that itself ranged over 0.86-0.97 it is within its spread
    assert compare(now, noisy[-1], noisy) == []
    # below 0.5 is an error whatever the spread
    (alarm,) = compare({1: _stats([0.4] * 12)}, noisy[-1], noisy)
    assert alarm.severity == "error"
    # a field emptied, 12 of 12 then 1 of 12: an error, said with its counts
    (alarm,) = compare({1: _stats([0.99] * 12, coverage=0.1)}, steady[-1], steady)
    assert (alarm.change, alarm.severity) == ("fields", "error")
    ((name, change, before, after),) = [
        (f["name"], f["change"], f["before"], f["after"]) for f in alarm.fields
    ]
    assert (name, change, before, after) == ("price", "emptied", "12/12", "1/12")
    assert "price emptied (filled 12/12 → 1/12, p < 0.001)" in alarm.line()
    # one that was half empty in an earlier snapshot (6 of 12): 1 of 12 is weak evidence
    uneven = [{1: _stats([0.99] * 12, coverage=c)} for c in (0.5, 1.0, 1.0)]
    (note,) = compare({1: _stats([0.99] * 12, coverage=0.1)}, uneven[-1], uneven)
    assert (note.change, note.severity) == ("fields", "note")


def _held(patterns: dict[str, int]) -> dict:
    stats = _stats([0.99] * 12, pages=sum(patterns.values()))
    stats["patterns"] = patterns
    return stats


def test_templates_replaced_split_new_and_gone():
    from visdup.drift.compare import compare

    before = {1: _held({"/item/*.html": 40}), 2: _held({"/blog/*.html": 20})}
    # an A/B test: a new layout serves half of the items beside the old one
    (alarm,) = compare(
        {
            1: _held({"/item/*.html": 20}),
            3: _held({"/item/*.html": 20}),
            2: _held({"/blog/*.html": 20}),
        },
        before,
    )
    assert (alarm.template, alarm.change, alarm.severity) == (3, "variant", "warning")
    # the new layout took most items: a replacement, "#1 → #3"
    (alarm,) = compare(
        {
            1: _held({"/item/*.html": 5}),
            3: _held({"/item/*.html": 35}),
            2: _held({"/blog/*.html": 20}),
        },
        before,
    )
    assert (alarm.template, alarm.change, alarm.replaced_by) == (1, "replaced", 3)
    # the blog is gone, a shop appeared
    alarms = compare({1: _held({"/item/*.html": 40}), 4: _held({"/shop/*.html": 30})}, before)
    assert sorted((a.template, a.change) for a in alarms) == [(2, "gone"), (4, "new")]


def test_a_snapshot_follows_a_template_that_merged_while_its_pages_were_queued(tmp_path):
    """Rows queued under a template that merged into another before they were written, rows
    written as it merged, the samples kept under it and its layout at the snapshot's start all
    go by the new id."""
    from sqlalchemy import select

    from visdup.drift.snapshot import Snapshot
    from visdup.storage.schema import snapshot_pages
    from visdup.storage.store import PageRecord, Store
    from visdup.templates.stm import page_tree
    from visdup.templates.template import build_template

    store = Store.from_url(f"sqlite:///{tmp_path / 'merge.sqlite3'}", writer=True)
    store.migrate()
    run = store.begin_run("test")
    pages = [
        f"<html><body><div><h1>Book {i}</h1><p>Price</p><p>{i}.99</p></div></body></html>"
        for i in range(4)
    ]
    trees = [page_tree(html) for html in pages]
    old, new = 7, 9
    with store.engine.begin() as conn:
        ids = [
            store.insert_page(conn, PageRecord(url=f"http://x/{i}.html", cluster_id=old), run)
            for i in range(len(pages))
        ]
        template = build_template(trees[:3], cluster=old)
        store.put_cluster(conn, old, version=1, template=template.to_dict())
    snap = Snapshot.open(store, name="s1", crawl="books", run_id=run)
    merged: dict[int, int] = {}
    snap.live = lambda cid: merged.get(cid, cid)
    for i, (page_id, tree) in enumerate(zip(ids, trees, strict=True)):
        snap.add(page_id, f"http://x/{i}.html", cluster=old, fit=1.0, body_hash=None, tree=tree)
        if i == 1:
            snap.flush()  # two rows written before the merge (as if just after its update)
    merged[old] = new  # the template merged into another before the other rows were written
    stats = snap.finish("finished")
    with store.engine.connect() as conn:
        stored = conn.execute(select(snapshot_pages.c.cluster_id)).scalars().all()
    assert stored == [new] * len(pages)
    assert set(stats) == {new}
    # its sample was measured against its layout at the start (known under the old id)
    assert stats[new]["n"] == len(pages) and min(stats[new]["shares"]) > 0.9


def test_templates_of_another_signature_version_are_not_compared(tmp_path, caplog):
    """A store crawled before the layout signature changed: its templates are other clusters
    under other ids, and comparing them would report every template replaced."""
    from sqlalchemy import update

    from visdup.drift.alarms import drift
    from visdup.drift.snapshot import Snapshot
    from visdup.storage.schema import snapshot_templates
    from visdup.storage.store import PageRecord, Store
    from visdup.templates.stm import page_tree

    store = Store.from_url(f"sqlite:///{tmp_path / 'versions.sqlite3'}", writer=True)
    store.migrate()
    run = store.begin_run("test")
    html = "<html><body><div><h1>Book {}</h1><p>Price</p><p>{}.99</p></div></body></html>"
    with store.engine.begin() as conn:
        ids = [
            store.insert_page(conn, PageRecord(url=f"http://x/{i}.html"), run) for i in range(12)
        ]
    made = {}
    for name, cluster in (("before", 7), ("after", 9)):  # the same pages, other template ids
        snap = Snapshot.open(store, name=name, crawl="books", run_id=store.begin_run("test"))
        made[name] = snap.id
        for i, page_id in enumerate(ids):
            tree = page_tree(html.format(i, i))
            snap.add(
                page_id, f"http://x/{i}.html", cluster=cluster, fit=1.0, body_hash=None, tree=tree
            )
        snap.finish("finished")
        if name == "before":
            alarms = drift(store).alarms
            assert alarms == []
    # the same two snapshots, both of this version: the ids moved, so the template is replaced
    assert [a.change for a in drift(store).alarms] == ["replaced"]
    # the first written before signatures had versions (its aggregates name none)
    before = made["before"]
    with store.engine.begin() as conn:
        for row in conn.execute(
            snapshot_templates.select().where(snapshot_templates.c.snapshot_id == before)
        ):
            stats = json.loads(row.stats)
            del stats["signature"]
            conn.execute(
                update(snapshot_templates)
                .where(
                    snapshot_templates.c.snapshot_id == before,
                    snapshot_templates.c.cluster_id == row.cluster_id,
                )
                .values(stats=json.dumps(stats))
            )
    caplog.clear()
    assert drift(store).alarms == []
    assert "different versions" in caplog.text
