"""Pages labelled in a process of their own (visdup.runtime.label_process): the same labels, and a
label process that dies costs no page."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.conftest import FIXTURES
from tests.crawling import crawl, crawl_settings
from visdup.context import CrawlContext
from visdup.demo.server import serve
from visdup.runtime.label_process import Label
from visdup.runtime.labeller import Labeller
from visdup.spiders.site import SiteSpider
from visdup.storage.store import Store

SITE = FIXTURES / "sites" / "templates"


def _stored(db: str, base: str) -> dict[str, tuple[object, ...]]:
    store = Store.from_url(db)
    try:
        # verdicts name whichever page of a group was stored first: crawl order, not compared
        rows = store.rows("url", "simhash", "content_simhash", "term", "body", "problem")
        return {r.url.replace(base, ""): tuple(r)[1:] for r in rows}
    finally:
        store.close()


@deferred_f_from_coro_f
async def test_labels_from_the_label_process_match_labels_made_here(tmp_path):
    got = []
    for label_process in (False, True):
        db = f"sqlite:///{tmp_path / f'l{label_process}.sqlite3'}"
        with serve(SITE) as server:
            crawler = await crawl(
                db,
                server.url_for("/"),
                settings={"VISDUP_ANALYSIS_PROCESSES": 1, "VISDUP_LABEL_PROCESS": label_process},
            )
            base = server.url
        stats = crawler.stats
        assert stats.get_value("visdup/errors") == 0
        assert stats.get_value("visdup/label_process", 0) == int(label_process)
        if label_process:  # it ended by itself once its store was closed, and not killed
            service = CrawlContext.of(crawler).labeller.service
            assert service is not None and service.process.exitcode == 0
        # counts made in the label process reach the crawl's stats
        assert stats.get_value("visdup/pages") == stats.get_value("item_scraped_count") >= 14
        assert stats.get_value("visdup/candidates", 0) > 0
        assert stats.get_value("visdup/drift/pages", 0) == stats.get_value("visdup/pages")
        got.append(_stored(db, base))
        # bodies are kept (VISDUP_STORE_BODY), packed by the worker that analysed the page
        assert sum(body is not None for _s, _c, _t, body, _p in got[-1].values()) >= 14
        store = Store.from_url(db)
        try:
            runs = store.run_rows()
            assert [r.reason for r in runs] == ["finished"]
            templated = [c for c in store.cluster_rows() if c.template]
            assert templated, "no template was built and stored"
        finally:
            store.close()
    assert got[0] == got[1]


class KillLabelProcess:
    """An item pipeline after visdup's: once ten pages are labelled and stored it kills the
    label process (the OOM killer's way), with the pages behind them in flight; counted in
    ``test/killed``."""

    def __init__(self, crawler):
        self.crawler = crawler
        self.seen = 0

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_item(self, item):
        self.seen += 1
        if self.seen == 10:
            service = CrawlContext.of(self.crawler).labeller.service
            assert service is not None, "no label process"
            os.kill(service.process.pid, signal.SIGKILL)
            self.crawler.stats.inc_value("test/killed")
        return item


async def _crawl(db: str, **settings: object) -> tuple[Any, str]:
    """The site crawled with one analysis worker and the label process; (crawler, base URL)."""
    with serve(SITE) as server:
        crawler = get_crawler(
            SiteSpider, crawl_settings(db, VISDUP_ANALYSIS_PROCESSES=1, **settings)
        )
        await crawler.crawl_async(url=server.url_for("/"))
        return crawler, server.url


@deferred_f_from_coro_f
async def test_a_killed_label_process_costs_no_page(tmp_path):
    db = f"sqlite:///{tmp_path / 'killed.sqlite3'}"
    crawler, base = await _crawl(
        db, ITEM_PIPELINES={"tests.test_label_process.KillLabelProcess": 1000}
    )
    stats = crawler.stats
    assert stats.get_value("test/killed") == 1
    assert stats.get_value("visdup/label_process/restarts") == 1
    assert stats.get_value("visdup/errors", 0) == 0
    pages = _stored(db, base)
    assert len(pages) >= 14 and len(pages) == stats.get_value("item_scraped_count")
    assert all(problem is None for *_rest, problem in pages.values())
    # every page labelled once, with its verdict, whichever process labelled it
    verdicts = sum(v for k, v in stats.get_stats().items() if k.startswith("visdup/verdict/"))
    assert verdicts == stats.get_value("visdup/pages") == len(pages)
    # the snapshot holds every page, those the dead process had not written yet too
    assert _snapshot(db) == (len(pages), "finished")
    assert stats.get_value("visdup/drift/pages") == len(pages)
    context = CrawlContext.of(crawler)
    assert context.labeller.service is not None and not context.labeller.service.process.is_alive()


def _snapshot(db: str) -> tuple[int, str | None]:
    """Pages the crawl's snapshot holds, and how it ended."""
    path = db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        (held,) = conn.execute("SELECT count(*) FROM visdup_snapshot_pages").fetchone()
        (reason,) = conn.execute("SELECT reason FROM visdup_snapshots").fetchone()
    return held, reason


class KillAtClose:
    """An extension whose spider_closed handler (it runs before visdup's) kills the label
    process: it dies with the crawl's end still to write."""

    def __init__(self, crawler):
        self.crawler = crawler
        crawler.signals.connect(self.closing, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def closing(self, spider, reason):
        service = CrawlContext.of(self.crawler).labeller.service
        assert service is not None, "no label process"
        os.kill(service.process.pid, signal.SIGKILL)
        service.process.join(10)
        self.crawler.stats.inc_value("test/killed")


@deferred_f_from_coro_f
async def test_a_label_process_dead_at_the_end_still_closes_the_crawl(tmp_path):
    db = f"sqlite:///{tmp_path / 'end.sqlite3'}"
    crawler, _base = await _crawl(db, EXTENSIONS={"tests.test_label_process.KillAtClose": 10})
    stats = crawler.stats
    assert stats.get_value("test/killed") == 1
    assert stats.get_value("visdup/label_process/restarts") == 1
    pages = stats.get_value("visdup/pages")
    assert pages >= 14
    # a new label process closed the snapshot: every page in it, its end written
    assert _snapshot(db) == (pages, "finished")
    store = Store.from_url(db)
    try:
        assert [r.reason for r in store.run_rows()] == ["finished"]
    finally:
        store.close()


def test_a_page_sent_again_after_a_death_keeps_what_was_stored(tmp_path):
    """The label process stored a page, then died before answering: the page comes back to a
    new one, which answers with the stored labels; the snapshot row that the new one
    recovered gets the page's fit, and the page is counted once."""
    from visdup.config import resolve
    from visdup.dedup.analysis import AnalysisOptions, analyse
    from visdup.dedup.jobs import PageJob
    from visdup.dedup.labelling import Labelling
    from visdup.drift.snapshot import Snapshot

    db = f"sqlite:///{tmp_path / 'retry.sqlite3'}"
    config = resolve({"VISDUP_DATABASE_URL": db, "VISDUP_CLUSTER_CAP": 10})
    html = (SITE / "index.html").read_bytes()
    url = "http://example.test/index.html"
    analysis = analyse(html, url=url, options=AnalysisOptions(template=True))
    job = PageJob(url=url, status=200, links=["http://example.test/a.html"], cluster=7, fit=0.9)
    store = Store.from_url(db, writer=True)
    try:
        run = store.begin_run("site", crawl="example.test")
        opened = Snapshot.open(store, name="s", crawl="example.test", run_id=run)
        held_at_start = opened.held()

        def labelling(snapshot: Snapshot) -> Labelling:
            return Labelling(store, config, run_id=run, snapshot=snapshot, count=lambda *_: None)

        first = labelling(opened).label(job, analysis)  # stored; its row still unwritten
        assert first.page_id is not None and first.verdict == "novel"
        again = Snapshot(store, opened.info, resumed=False, start_templates=opened.start_templates)
        again.recover(run, held_at_start)
        assert again.added == 1
        retried = labelling(again).label(job, analysis, retry=True)
        assert (retried.page_id, retried.verdict, retried.group_size) == (first.page_id, "novel", 1)
        assert again.added == 1
        assert [r.url for r in store.rows("url")] == [url]
        with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
            rows = conn.execute("SELECT page_id, cluster_id, fit FROM visdup_snapshot_pages")
            assert rows.fetchall() == [(first.page_id, 7, 0.9)]
    finally:
        store.close()


#: What tells three variants of one article layout apart (each a signature of its own).
_EXTRAS = ("", "<aside><p>A note beside it.</p></aside>", "<figure><img src='/i.png'></figure>")


def _article(extra: str, words: str = "Words of the article body. ") -> bytes:
    items = "".join(f"<li><a href='/p{n}'>Item {n}</a></li>" for n in range(6))
    return (
        f"<html><body><header><nav><ul>{items}</ul></nav></header><main><article>"
        f"<h1>A title</h1><p>{words * 30}</p>{extra}</article>"
        "</main><footer><p>Footer</p></footer></body></html>"
    ).encode()


def _renaming(bodies: list[bytes]) -> list[tuple[bytes, Any]]:
    """The pages with their template inputs, largest signature key first: placed in this
    order, each renames the template the ones before it made."""
    from visdup.templates.signature import page_input

    inputs = [page_input(b, url=f"http://example.test/v{n}.html") for n, b in enumerate(bodies)]
    assert len({i.layout.key for i in inputs}) == len(inputs)
    return sorted(zip(bodies, inputs, strict=True), key=lambda pair: -pair[1].layout.key)


@contextmanager
def _threaded_labelling(tmp_path: Path) -> Iterator[tuple[Store, Any]]:
    """A store and the labelling a crawl without a label process runs in its threads."""
    from visdup.config import resolve
    from visdup.dedup.labelling import Labelling

    db = f"sqlite:///{tmp_path / 'merge.sqlite3'}"
    store = Store.from_url(db, writer=True)
    try:
        run = store.begin_run("site", crawl="example.test")
        config = resolve({"VISDUP_DATABASE_URL": db})
        yield store, Labelling(store, config, run_id=run, snapshot=None, count=lambda *_: None)
    finally:
        store.close()


def _label(labelling: Any, url: str, body: bytes, cluster: int) -> Any:
    from visdup.dedup.analysis import AnalysisOptions, analyse
    from visdup.dedup.jobs import PageJob

    analysis = analyse(body, url=url, options=AnalysisOptions(template=True))
    outcome = labelling.label(PageJob(url=url, status=200, links=[], cluster=cluster), analysis)
    assert outcome.page_id is not None
    return outcome


def test_a_page_whose_template_merges_while_it_is_labelled_follows_the_merge(tmp_path):
    """Labelled in threads (no label process), another page's placing can merge the page's
    template after the page read its id and before it was inserted: that merge moves the
    template's stored pages without this one, so the page must follow on its own."""
    (first_html, first), (_, second) = _renaming([_article(e) for e in _EXTRAS[:2]])
    with _threaded_labelling(tmp_path) as (store, labelling):
        placed = labelling.assign("http://example.test/a.html", first)
        commit = labelling.labeller.commit

        def late_commit(*args: Any, **kwargs: Any) -> Any:
            # another thread places the second page between the id's reading and the insert
            moved = labelling.assign("http://example.test/b.html", second)
            assert moved.cluster != placed.cluster and placed.cluster in moved.merged
            return commit(*args, **kwargs)

        labelling.labeller.commit = late_commit
        _label(labelling, "http://example.test/a.html", first_html, placed.cluster)
        rows = {r.id: r.size for r in store.cluster_rows()}
        [stored] = [r.cluster_id for r in store.rows("cluster_id")]
        assert stored == labelling.live(placed.cluster) != placed.cluster
        assert rows.get(stored) == 1 and placed.cluster not in rows


def test_a_page_follows_a_merge_that_lands_while_it_moves(tmp_path):
    """The page's template merges twice: after the page read its id and before its insert,
    then again after it saw the first merge and before it moved. The second merge's update
    ran before the move, so a move to the id seen first left the page under a dead template
    (a blog crawl: 3 runs in 40)."""
    (first_html, first), (_, second), (_, third) = _renaming([_article(e) for e in _EXTRAS])
    with _threaded_labelling(tmp_path) as (store, labelling):
        placed = labelling.assign("http://example.test/a.html", first)
        commit, move = labelling.labeller.commit, store.move_page_cluster

        def late_commit(*args: Any, **kwargs: Any) -> Any:
            moved = labelling.assign("http://example.test/b.html", second)
            assert placed.cluster in moved.merged
            return commit(*args, **kwargs)

        def late_move(*args: Any, **kwargs: Any) -> Any:
            moved = labelling.assign("http://example.test/c.html", third)
            assert moved.merged  # the template the page was about to move to is gone
            return move(*args, **kwargs)

        labelling.labeller.commit = late_commit
        store.move_page_cluster = late_move  # type: ignore[method-assign]
        _label(labelling, "http://example.test/a.html", first_html, placed.cluster)
        rows = {r.id: r.size for r in store.cluster_rows()}
        [stored] = [r.cluster_id for r in store.rows("cluster_id")]
        assert stored == labelling.live(placed.cluster) in rows
        assert rows[stored] == 1


def test_a_renamed_template_keeps_counting_the_pages_it_had(tmp_path):
    """A page whose signature key is smaller than any in its template renames the template:
    the new id had no row yet when the merge counted its pages, and the row then written
    started from 0 (the demo's 15 article pages: size 5)."""
    bodies = [_article(e, f"Words of article {n}. ") for n, e in enumerate(_EXTRAS)]
    with _threaded_labelling(tmp_path) as (store, labelling):
        ids = set()
        for n, (body, found) in enumerate(_renaming(bodies)):
            url = f"http://example.test/{n}.html"
            placed = labelling.assign(url, found)
            ids.add(placed.cluster)
            _label(labelling, url, body, placed.cluster)
        assert len(ids) == 3  # renamed twice
        [row] = store.cluster_rows()
        assert row.id == labelling.live(placed.cluster) and row.size == 3


@deferred_f_from_coro_f
async def test_a_label_process_that_cannot_start_leaves_the_labelling_here(
    tmp_path, monkeypatch, caplog
):
    """The label process starts beside the crawl's first fetches; one that never comes up
    (here: its start reports failure) leaves the labelling to the crawl's process, every
    page still stored once, and the first pages, which waited for it, labelled too."""
    import logging

    caplog.set_level(logging.INFO)
    started = []

    def no_service(self):
        started.append(1)
        return None

    monkeypatch.setattr(Labeller, "_start_service", no_service)
    db = f"sqlite:///{tmp_path / 'here.sqlite3'}"
    crawler, base = await _crawl(db)
    stats = crawler.stats
    assert started == [1]
    assert stats.get_value("visdup/label_process", 0) == 0
    assert stats.get_value("visdup/errors", 0) == 0
    pages = _stored(db, base)
    assert len(pages) >= 14 and len(pages) == stats.get_value("visdup/pages")
    assert all(problem is None for *_rest, problem in pages.values())
    opened = [r.getMessage() for r in caplog.records if "pages already known" in r.getMessage()]
    assert len(opened) == 1


@deferred_f_from_coro_f
async def test_a_page_crosses_to_the_label_process_once(tmp_path, monkeypatch):
    """With the cluster and label pipelines both on, one call places and labels a page: the
    template input is sent once, and every stored page still names its template."""
    from visdup.runtime.label_process import LabelService

    ops: list[str] = []
    submit = LabelService.submit  # every call, blocking or awaited, is submitted

    def counted(self, request):
        ops.append(type(request).__name__.lower())
        return submit(self, request)

    monkeypatch.setattr(LabelService, "submit", counted)
    db = f"sqlite:///{tmp_path / 'once.sqlite3'}"
    crawler, _base = await _crawl(db)
    stats = crawler.stats
    assert stats.get_value("visdup/label_process") == 1
    assert stats.get_value("visdup/errors", 0) == 0
    pages = stats.get_value("visdup/pages")
    assert pages >= 14
    assert ops.count("label") == pages and "assign" not in ops
    assert stats.get_value("visdup/clusters", 0) >= 2
    store = Store.from_url(db)
    try:
        rows = [r for r in store.rows() if r.term is not None]
        assert len(rows) == pages and all(r.cluster_id is not None for r in rows)
        assert {r.cluster_id for r in rows} <= {c.id for c in store.cluster_rows()}
    finally:
        store.close()


def test_a_page_that_cannot_be_placed_is_still_labelled(tmp_path):
    from visdup.dedup.analysis import AnalysisOptions, analyse
    from visdup.dedup.jobs import PageJob

    counted: list[str] = []
    with _threaded_labelling(tmp_path) as (store, labelling):
        labelling.count = lambda key, n=1: counted.append(key)

        def broken(url, page):
            raise RuntimeError("no template for you")

        labelling.assign = broken
        url = "http://example.test/a.html"
        analysis = analyse(_article(_EXTRAS[0]), url=url, options=AnalysisOptions(template=True))
        assert analysis.template_input is not None
        outcome = labelling.label(PageJob(url=url, status=200, links=[]), analysis, place=True)
        assert outcome.page_id is not None and outcome.assignment is None
        assert counted.count("visdup/errors") == 1
        [row] = store.rows()
        assert row.cluster_id is None and row.term is not None


@deferred_f_from_coro_f
async def test_a_page_placed_then_refused_by_the_store_keeps_its_placing(tmp_path):
    """The label process places a page, then its page row is refused (here by a trigger in
    the database): the page is dropped with an error, but the crawl still learns where it
    was placed, and the other pages are stored."""
    from sqlalchemy import text

    db = f"sqlite:///{tmp_path / 'refused.sqlite3'}"
    store = Store.from_url(db)
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TRIGGER refuse BEFORE INSERT ON visdup_pages"
                " WHEN NEW.url LIKE '%/venues.html'"
                " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )
        )
    store.close()
    dropped: list[Any] = []

    def on_dropped(item: Any, **_: Any) -> None:  # held here: signals keep weak references
        dropped.append(item)

    with serve(SITE) as server:
        crawler = get_crawler(SiteSpider, crawl_settings(db, VISDUP_ANALYSIS_PROCESSES=1))
        crawler.signals.connect(on_dropped, signals.item_dropped)
        await crawler.crawl_async(url=server.url_for("/"))
        base = server.url
    stats = crawler.stats
    assert stats.get_value("visdup/label_process") == 1
    assert stats.get_value("visdup/errors") == 1
    [refused] = [item for item in dropped if item.url.endswith("/venues.html")]
    assert refused.cluster is not None and refused.page_id is None
    pages = _stored(db, base)
    assert "/venues.html" not in pages and len(pages) == stats.get_value("visdup/pages") >= 13
    store = Store.from_url(db)
    try:
        assert refused.cluster in {c.id for c in store.cluster_rows()} | {
            r.cluster_id for r in store.rows()
        }
    finally:
        store.close()


def test_labelling_that_fails_after_placing_says_where_the_page_was_placed(tmp_path):
    from visdup.dedup.analysis import AnalysisOptions, analyse
    from visdup.dedup.jobs import PageJob
    from visdup.dedup.labelling import LabelFailed

    with _threaded_labelling(tmp_path) as (store, labelling):

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("disk full")

        labelling.labeller.commit = refused
        url = "http://example.test/a.html"
        analysis = analyse(_article(_EXTRAS[0]), url=url, options=AnalysisOptions(template=True))
        job = PageJob(url=url, status=200, links=[])
        try:
            labelling.label(job, analysis, place=True)
        except LabelFailed as exc:
            assert exc.assignment.cluster == job.cluster is not None
            assert "disk full" in str(exc)
        else:
            raise AssertionError("the labelling did not fail")
        assert store.rows() == [] and [c.id for c in store.cluster_rows()] == [job.cluster]


def test_a_page_the_label_process_dies_under_twice_is_labelled_without_its_template(
    tmp_path, monkeypatch
):
    """Two deaths under a call that places and labels a page: the placing may be what kills
    it, so the page is sent once more to be labelled alone; a third death leaves it
    unlabelled. The label process here stands in for one that dies (a crash in a kernel)."""
    from visdup.dedup.jobs import Outcome, PageJob
    from visdup.runtime.label_process import ServiceGone

    class Dying:
        def __init__(self, dies_unplaced: bool):
            self.calls: list[tuple[bool, bool]] = []
            self.dies_unplaced = dies_unplaced

        def call(self, request: Label, **_: Any):
            assert isinstance(request, Label)
            self.calls.append((request.place, request.retry))
            if request.place or self.dies_unplaced:
                raise ServiceGone("killed", suspect=True)
            return Outcome(7)

    crawler = get_crawler(SiteSpider, crawl_settings(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    context = CrawlContext.of(crawler)
    monkeypatch.setattr(context.labeller, "_restart_service", lambda dead: None)
    job = PageJob(url="http://example.test/a.html")
    context.labeller.service = survives = Dying(dies_unplaced=False)
    assert context.labeller._call(Label(job, None, True)).page_id == 7
    assert survives.calls == [(True, False), (True, True), (False, True)]
    assert crawler.stats.get_value("visdup/errors") == 1
    context.labeller.service = dies = Dying(dies_unplaced=True)
    try:
        context.labeller._call(Label(job, None, True))
    except ServiceGone:
        pass
    else:
        raise AssertionError("a page that keeps killing the label process was labelled")
    assert dies.calls == [(True, False), (True, True), (False, True)]
    context.store.close()


@deferred_f_from_coro_f
async def test_pages_are_analysed_and_labelled_on_the_event_loop(tmp_path, monkeypatch):
    """With the workers and the label process up, the crawl's process hands a page over and
    awaits the answer on the event loop: no thread of its own waits for it. A call that does
    not pickle fails alone; a label process found dead there sends the page the blocking way
    (a thread: a new process, the page sent again), and it is stored once."""
    import threading

    from scrapy.utils.asyncio import run_in_thread

    import visdup.runtime.labeller as context_module
    from visdup.items import Page

    db = f"sqlite:///{tmp_path / 'loop.sqlite3'}"
    crawler = get_crawler(SiteSpider, crawl_settings(db, VISDUP_ANALYSIS_PROCESSES=1))
    context = CrawlContext.of(crawler)
    await run_in_thread(context.open)
    await run_in_thread(context.labeller.up.result)
    assert context.labeller.service is not None and context.analysis.pool is not None
    threads: list[str] = []

    async def counted(func, *args, **kwargs):
        threads.append(func.__name__)
        return await run_in_thread(func, *args, **kwargs)

    monkeypatch.setattr(context_module, "run_in_thread", counted)

    def page(name: str) -> Page:
        url = f"http://example.test/{name}"
        item = Page(url=url, final_url=url, status=200, content_type="text/html")
        item.body = (SITE / name).read_bytes()
        return item

    first, second = page("index.html"), page("venues.html")
    analyses = [
        await context.analysis.analysed(first, context.options),
        await context.analysis.analysed(second, context.options),
    ]
    assert all(a.term is not None and a.template_input is not None for a in analyses)
    outcome = await context.labelled(first, analyses[0], True)
    assert outcome.page_id is not None and outcome.assignment is not None
    assert threads == []
    unpicklable = context.labeller.service.submit(Label(threading.Lock(), None))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pickle"):  # its own error, not ServiceGone
        unpicklable.result(timeout=30)
    assert context.labeller.service.process.is_alive()

    dead = context.labeller.service
    os.kill(dead.process.pid, signal.SIGKILL)
    dead.process.join(10)
    again = await context.labelled(second, analyses[1], True)
    assert threads == ["_label_again"]
    assert context.labeller.service is not dead and context.labeller.service.process.is_alive()
    assert crawler.stats.get_value("visdup/label_process/restarts") == 1
    assert again.page_id is not None and again.page_id != outcome.page_id
    await context.spider_closed(None, "finished")
    store = Store.from_url(db)
    try:
        rows = store.rows("url", "cluster_id")
        assert sorted(r.url for r in rows) == [first.url, second.url]
        assert all(r.cluster_id is not None for r in rows)
    finally:
        store.close()


@deferred_f_from_coro_f
async def test_pages_that_come_while_the_label_process_starts_keep_their_order(
    tmp_path, monkeypatch
):
    """Pages wait on the event loop for a label process that is still starting, and are sent
    in the order they came: the first stored is the first that came (it is the original of
    the others), not whichever thread woke first."""
    import asyncio
    import time

    from scrapy.utils.asyncio import run_in_thread

    from visdup.dedup.analysis import AnalysisOptions, analyse
    from visdup.items import Page
    from visdup.runtime.label_process import LabelService

    warmed = LabelService.warmed

    def slow_start(self):
        time.sleep(1.0)  # the pages below all come before the label process is up
        return warmed(self)

    monkeypatch.setattr(LabelService, "warmed", slow_start)
    sent: list[str] = []
    submit = LabelService.submit

    def recorded(self, request):
        if isinstance(request, Label):
            sent.append(request.job.url)
        return submit(self, request)

    monkeypatch.setattr(LabelService, "submit", recorded)
    body = (SITE / "index.html").read_bytes()
    items = []
    for n in range(12):
        url = f"http://example.test/copy{n}.html"
        item = Page(url=url, final_url=url, status=200, content_type="text/html")
        item.body = body
        items.append((item, analyse(body, url=url, options=AnalysisOptions(template=True))))
    db = f"sqlite:///{tmp_path / 'order.sqlite3'}"
    crawler = get_crawler(SiteSpider, crawl_settings(db, VISDUP_ANALYSIS_PROCESSES=1))
    context = CrawlContext.of(crawler)
    await run_in_thread(context.open)
    assert not context.labeller.up.done()  # every page below waits for it
    outcomes = await asyncio.gather(*(context.labelled(i, a, True) for i, a in items))
    urls = [item.url for item, _a in items]
    assert sent == urls
    first = outcomes[0].page_id
    assert first is not None and outcomes[0].verdict == "novel"
    assert all(o.duplicate_of == first for o in outcomes[1:])
    await context.spider_closed(None, "finished")
