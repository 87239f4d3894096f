"""Pages analysed in worker processes get the labels and clusters of pages analysed in threads."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.conftest import FIXTURES
from tests.crawling import crawl, crawl_settings
from visdup.demo.server import serve
from visdup.runtime.workers import AUTO_PROCESSES, analysis_processes
from visdup.spiders.site import SiteSpider
from visdup.storage.store import Store

SITE = FIXTURES / "sites" / "templates"


def _templated(db: str) -> set[int]:
    """Clusters whose template was built and stored (in the worker processes, when any)."""
    store = Store.from_url(db)
    try:
        return {row.id for row in store.cluster_rows() if row.template}
    finally:
        store.close()


def _labels(db: str, base: str) -> dict[str, tuple[object, ...]]:
    store = Store.from_url(db)
    try:
        # verdicts name whichever page of a group was stored first: crawl order, not compared
        rows = store.rows(
            "url", "simhash", "content_simhash", "cluster_id", "title", "term", "body"
        )
        return {r.url.replace(base, ""): tuple(r)[1:] for r in rows}
    finally:
        store.close()


@deferred_f_from_coro_f
async def test_worker_processes_give_the_same_labels(tmp_path):
    got = []
    templated = []
    for processes in (0, 2):
        db = f"sqlite:///{tmp_path / f'p{processes}.sqlite3'}"
        with serve(SITE) as server:
            crawler = await crawl(
                db, server.url_for("/"), settings={"VISDUP_ANALYSIS_PROCESSES": processes}
            )
            base = server.url
        assert crawler.stats.get_value("visdup/errors") == 0
        got.append(_labels(db, base))
        templated.append(_templated(db))
    assert len(got[0]) >= 14
    assert got[0] == got[1]
    # every cluster that reached VISDUP_TEMPLATE_MIN_PAGES has its template, either way
    assert templated[0] and templated[0] == templated[1]


class KillWorkers:
    """An item pipeline ahead of visdup's. The first page passes (its analysis starts the
    workers); the second waits for them, kills them all, and goes on to be analysed by a
    pool whose workers are dead, while the first may still be in flight. What it killed is
    counted in the crawl's stats (``test/killed``)."""

    def __init__(self, crawler):
        self.stats = crawler.stats
        self.seen = 0

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_item(self, item):
        self.seen += 1
        if self.seen != 2:
            return item
        children = []
        for _ in range(600):
            # the analysis workers, not the label process (tests/test_label_process.py)
            children = [c for c in multiprocessing.active_children() if c.name != "visdup-label"]
            if children:
                break
            await asyncio.sleep(0.05)
        for child in children:
            if child.pid is not None:
                os.kill(child.pid, signal.SIGKILL)
                self.stats.inc_value("test/killed")
        return item


class ReadPriorities:
    """An item pipeline after visdup's: once a page is analysed, the workers' priorities
    relative to the crawl's process, and the label process's, go in the crawl's stats
    (``test/worker_nice``, the smallest; ``test/label_nice``). A worker still starting has
    not lowered its own yet: up to 30 s for all of them."""

    def __init__(self, crawler):
        self.stats = crawler.stats
        self.read = False

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_item(self, item):
        if self.read:
            return item
        self.read = True
        own = os.getpriority(os.PRIO_PROCESS, 0)
        workers: list[int] = []
        for _ in range(600):
            children = multiprocessing.active_children()
            workers = [
                os.getpriority(os.PRIO_PROCESS, c.pid) - own
                for c in children
                if c.name != "visdup-label" and c.pid is not None
            ]
            if len(workers) == 2 and min(workers) > 0:
                break
            await asyncio.sleep(0.05)
        self.stats.set_value("test/worker_nice", min(workers, default=-1))
        for child in multiprocessing.active_children():
            if child.name == "visdup-label" and child.pid is not None:
                self.stats.set_value(
                    "test/label_nice", os.getpriority(os.PRIO_PROCESS, child.pid) - own
                )
        return item


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no process priorities here")
@deferred_f_from_coro_f
async def test_analysis_workers_run_below_the_crawl(tmp_path):
    """VISDUP_ANALYSIS_NICE lowers the workers alone: the crawl's process and the label
    process, which take the pages one after another, keep theirs."""
    db = f"sqlite:///{tmp_path / 'nice.sqlite3'}"
    with serve(SITE) as server:
        settings = crawl_settings(
            db,
            VISDUP_ANALYSIS_PROCESSES=2,
            VISDUP_ANALYSIS_NICE=3,
            ITEM_PIPELINES={"tests.test_analysis_processes.ReadPriorities": 1000},
        )
        crawler = get_crawler(SiteSpider, settings)
        await crawler.crawl_async(url=server.url_for("/"))
    stats = crawler.stats
    if os.getpriority(os.PRIO_PROCESS, 0) > 16:  # already near the bottom: 19 caps it
        pytest.skip("this process runs too low for a worker to go 3 lower")
    assert stats.get_value("test/worker_nice") == 3
    assert stats.get_value("test/label_nice") == 0
    assert stats.get_value("visdup/pages", 0) >= 14


@deferred_f_from_coro_f
async def test_a_killed_worker_costs_no_page(tmp_path):
    """Workers killed mid-crawl (the kernel's OOM killer does it): every page is still
    analysed and stored, the pages they were on by the new workers that take their place."""
    db = f"sqlite:///{tmp_path / 'killed.sqlite3'}"
    with serve(SITE) as server:
        settings = crawl_settings(
            db,
            VISDUP_ANALYSIS_PROCESSES=2,
            ITEM_PIPELINES={"tests.test_analysis_processes.KillWorkers": 10},
        )
        crawler = get_crawler(SiteSpider, settings)
        await crawler.crawl_async(url=server.url_for("/"))
        base = server.url
    stats = crawler.stats
    assert stats.get_value("test/killed", 0) >= 1, "no worker process to kill"
    assert stats.get_value("visdup/analysis/restarts", 0) >= 1
    assert stats.get_value("visdup/analysis/worker_died", 0) == 0
    assert stats.get_value("visdup/errors", 0) == 0
    labels = _labels(db, base)
    assert len(labels) >= 14
    store = Store.from_url(db)
    try:
        assert [r.url for r in store.rows("url", "problem") if r.problem] == []
    finally:
        store.close()


def test_worker_count_follows_the_cores():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert analysis_processes(-1) == (min(AUTO_PROCESSES, cores) if cores > 1 else 0)
    assert analysis_processes(0) == 0
    assert analysis_processes(3) == 3


SCRIPT = """
import json, sys
from pathlib import Path
from scrapy.crawler import CrawlerProcess
from visdup.spiders.site import SiteSpider

with Path("runs.txt").open("a") as runs:  # each interpreter that runs this script
    runs.write("ran\\n")

def crawl():
    process = CrawlerProcess({
        "ADDONS": {"visdup.Addon": 100}, "VISDUP_DATABASE_URL": sys.argv[1],
        "LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
    })
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, url=sys.argv[2])
    process.start()
    stats = crawler.stats
    print(json.dumps({"pages": stats.get_value("visdup/pages", 0),
                      "processes": stats.get_value("visdup/analysis/processes", 0),
                      "label_process": stats.get_value("visdup/label_process/cpu_ms", -1),
                      "serial": stats.get_value("visdup/label_process/serial_cpu_ms", -1)}))
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_crawl_from_a_script_runs_the_script_once(tmp_path, guarded):
    """Scrapy's "run from a script" starts its crawl at the top level, unguarded. A spawned
    process imports its parent's main script: visdup's workers and label process would run
    that crawl again, and import a guarded script's imports. They start without it, so either
    script gets the default workers and the label process, and runs once."""
    script = tmp_path / "run.py"
    ending = 'if __name__ == "__main__":\n    crawl()\n' if guarded else "crawl()\n"
    script.write_text(SCRIPT + ending, encoding="utf-8")
    with serve(SITE) as server:
        out = subprocess.run(
            [
                sys.executable,
                str(script),
                f"sqlite:///{tmp_path / 'x.sqlite3'}",
                server.url_for("/"),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, out.stdout[-3000:]  # one crawl
    result = json.loads(lines[0])
    assert result["pages"] >= 14
    assert result["processes"] == analysis_processes(-1)
    if result["processes"]:
        assert result["label_process"] >= 0  # the label process answered its close
        # its pages' serial work, each call read, labelled and answered, is part of all it did
        assert 0 < result["serial"] <= result["label_process"]
    assert (tmp_path / "runs.txt").read_text().splitlines() == ["ran"]
    # the main module is whole again after the processes started
    assert "Traceback" not in out.stderr, out.stderr[-3000:]


class _CountingSpider(SiteSpider):
    """The site spider, counting the pages it parses for their links itself."""

    trees = 0

    def _tree(self, response):
        self.trees += 1
        return super()._tree(response)


def _linked(db: str, base: str) -> tuple[set[str], set[str]]:
    store = Store.from_url(db)
    try:
        with store.engine.connect() as conn:
            found = {u for (u,) in conn.exec_driver_sql("SELECT url FROM visdup_links")}
        pages = {r.url for r in store.rows("url")}
    finally:
        store.close()
    return {u.replace(base, "") for u in found}, {u.replace(base, "") for u in pages}


@deferred_f_from_coro_f
async def test_with_worker_processes_the_crawl_parses_no_page_and_finds_the_same_links(tmp_path):
    """With the analysis in worker processes (which parse the bytes) the workers read each
    page's links and the spider parses no page: no response leaves its callback with a tree,
    and the crawl follows and stores the links a crawl in threads finds (a ``<base>``, image
    maps, blank hrefs and the per-page cap, its stats too)."""
    from scrapy import signals

    from tests.crawling import write_site

    names = [f"d{i % 3}/p{i}.html" for i in range(12)]
    pages = {}
    for i, name in enumerate(names):
        targets = [f"../{n}" for n in names[i : i + 4]] + ["", "#top", "/d0/p0.html?x=1"]
        anchors = "".join(f'<a href="{t}">{t}</a>' for t in targets)
        extra = '<base href="/d1/">' if i % 4 == 0 else ""
        area = f'<map><area href="/d2/p{(i * 5) % 12}.html"></map>'
        pages[name] = (
            f"<html><head>{extra}<title>Page {i}</title></head><body><h1>Page {i}</h1>"
            f"<p>{'Some words about this page. ' * (i + 3)}</p>{anchors}{area}</body></html>"
        )
    root = write_site(tmp_path / "site", pages)
    got = []
    for processes in (0, 1):
        db = f"sqlite:///{tmp_path / f'links{processes}.sqlite3'}"
        parsed: list[str] = []

        def scraped(item, response, spider, parsed=parsed):
            if getattr(response, "_cached_selector", None) is not None:
                parsed.append(response.url)

        with serve(root) as server:
            crawler = get_crawler(
                _CountingSpider,
                crawl_settings(
                    db, VISDUP_ANALYSIS_PROCESSES=processes, VISDUP_MAX_LINKS_PER_PAGE=6
                ),
            )
            crawler.signals.connect(scraped, signal=signals.item_scraped)
            await crawler.crawl_async(url=server.url_for("/d0/p0.html"))
            base = server.url
        stats = crawler.stats
        assert stats.get_value("visdup/errors") == 0
        assert stats.get_value("visdup/pages_over_link_cap", 0) >= 1
        capped = stats.get_value("visdup/links_over_page_cap")
        got.append((_linked(db, base), capped, stats.get_value("visdup/pages_over_link_cap")))
        if processes:
            assert parsed == [] and crawler.spider.trees == 0
        else:  # in threads the analysis reuses the spider's tree: it stays with the page
            assert len(parsed) == crawler.spider.trees == stats.get_value("visdup/pages")
    assert len(got[0][0][1]) >= 8
    assert got[0] == got[1]


def _spawns(monkeypatch) -> list[tuple[str, float, object]]:
    """Every process visdup spawns, with when it started."""
    import time

    import visdup.runtime.early as early
    import visdup.runtime.label_process as service
    import visdup.runtime.workers as workers

    started: list[tuple[str, float, object]] = []
    spawn = workers.spawn

    def recorded(target, args, name):
        process = spawn(target, args, name)
        started.append((name, time.monotonic(), process))
        return process

    monkeypatch.setattr(workers, "spawn", recorded)
    monkeypatch.setattr(service, "spawn", recorded)
    monkeypatch.setattr(early, "spawn", recorded)
    return started


def _crawler(settings: dict[str, object], applied: bool):
    """A crawler as ``scrapy crawl`` makes one (its settings, add-ons included, applied as it
    starts to crawl), or with its settings applied at once (``get_crawler``)."""
    from scrapy.crawler import CrawlerRunner

    if applied:
        return get_crawler(SiteSpider, settings)
    return CrawlerRunner(settings).create_crawler(SiteSpider)


@pytest.mark.parametrize("applied", [False, True], ids=["by-the-add-on", "by-the-context"])
@deferred_f_from_coro_f
async def test_the_processes_start_as_the_crawl_starts_and_serve_it(tmp_path, monkeypatch, applied):
    """The workers and the label process start before the spider opens (from the add-on as
    the crawl applies its settings, else as the first component is made), and the crawl uses
    those: no other process is started, and every page is analysed and labelled."""
    import time

    from scrapy import signals

    started = _spawns(monkeypatch)
    db = f"sqlite:///{tmp_path / 'early.sqlite3'}"
    with serve(SITE) as server:
        crawler = _crawler(crawl_settings(db, VISDUP_ANALYSIS_PROCESSES=2), applied)
        opened: list[float] = []

        def spider_opened(spider):  # a named function: signals keep weak references
            opened.append(time.monotonic())

        crawler.signals.connect(spider_opened, signals.spider_opened)
        await crawler.crawl_async(url=server.url_for("/"))
    stats = crawler.stats
    names = sorted(name for name, _at, _p in started)
    assert names == ["visdup-analysis", "visdup-analysis", "visdup-label"]
    assert all(at < opened[0] for _name, at, _p in started)
    assert stats.get_value("visdup/early_processes") == 3
    assert stats.get_value("visdup/label_process") == 1
    assert stats.get_value("visdup/errors", 0) == 0
    assert stats.get_value("visdup/pages", 0) >= 14
    for _name, _at, process in started:
        process.join(10)
        assert not process.is_alive()


def test_a_crawler_that_does_not_crawl_starts_no_process(tmp_path, monkeypatch):
    """Making a crawler applies the add-on's settings; only a crawl that starts starts
    processes (a command or a test makes crawlers it never runs)."""
    from visdup.context import CrawlContext

    started = _spawns(monkeypatch)
    db = f"sqlite:///{tmp_path / 'none.sqlite3'}"
    crawler = get_crawler(SiteSpider, crawl_settings(db, VISDUP_ANALYSIS_PROCESSES=2))
    context = CrawlContext.of(crawler)
    assert started == []
    context.store.close()


@deferred_f_from_coro_f
async def test_processes_of_a_crawl_that_fails_to_start_end(tmp_path, monkeypatch):
    """A crawl whose engine cannot be built never opens its spider: the processes the add-on
    started for it end anyway, once they have waited for it long enough."""
    import time

    import visdup.runtime.early as early

    monkeypatch.setattr(early, "EARLY_WAIT", 1.0)
    started = _spawns(monkeypatch)
    db = f"sqlite:///{tmp_path / 'failed.sqlite3'}"
    settings = crawl_settings(
        db,
        VISDUP_ANALYSIS_PROCESSES=2,
        DOWNLOADER_MIDDLEWARES={"tests.test_analysis_processes.Broken": 500},
    )
    crawler = _crawler(settings, applied=False)
    with pytest.raises(ValueError, match="cannot be built"):
        await crawler.crawl_async(url="http://127.0.0.1:9/")
    assert len(started) == 3
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(p.is_alive() for _n, _a, p in started):
        time.sleep(0.1)
    assert not any(p.is_alive() for _n, _a, p in started)


class Broken:
    @classmethod
    def from_crawler(cls, crawler):
        raise ValueError("this middleware cannot be built")
