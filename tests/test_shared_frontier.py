"""Several crawl processes, one crawl: the shared Redis frontier with leases.

Real Redis (db 13, ``VISDUP_TEST_REDIS``; each test's own crawl names, whose keys are deleted
before and after) and a real PostgreSQL database created and dropped per test; each skips
with the reason when its service is absent.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl_settings
from tests.sites import serve_routes
from visdup.storage.redis_frontier import RedisFrontier, key_prefix

REDIS_URL = os.environ.get("VISDUP_TEST_REDIS", "redis://127.0.0.1:6379/13")
REPO = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.redis, pytest.mark.postgres]


class Shared:
    """This test's crawls in the test Redis db: their keys are deleted before and after.

    Never the whole db: other runs of the suite (another checkout, another engineer) may crawl
    in it at the same moment, and a flush wipes their frontier mid-crawl.
    """

    def __init__(self, url: str):
        import redis

        self.url = url
        self.client = redis.Redis.from_url(url)
        self.names: list[str] = []

    def claim(self, name: str | None = None) -> str:
        """A crawl name for this test (a fresh one by default), emptied now and at the end."""
        name = name or f"test-{uuid.uuid4().hex[:12]}"
        RedisFrontier(self.client, name, worker="test", lease=1.0).clear()
        self.names.append(name)
        return name

    def frontier(self, name: str, worker: str, lease: float) -> RedisFrontier:
        return RedisFrontier(self.client, name, worker=worker, lease=lease)

    def left(self, name: str) -> tuple[int, int]:
        """(queued, leased) of a crawl."""
        prefix = key_prefix(name)
        return self.client.zcard(f"{prefix}:queue"), self.client.zcard(f"{prefix}:leases")

    def close(self) -> None:
        for name in self.names:
            RedisFrontier(self.client, name, worker="test", lease=1.0).clear()
        self.client.close()


@pytest.fixture
def shared():
    """Redis db 13 (``VISDUP_TEST_REDIS``) with this test's crawls cleaned before and after."""
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {exc.__class__.__name__}")
    finally:
        client.close()
    handle = Shared(REDIS_URL)
    yield handle
    handle.close()


# ---------------------------------------------------------------------- a generated site

TEMPLATES = ("article", "product", "listing", "forum")
WORDS = (
    "river bridge harbour lantern meadow orchard granite copper willow falcon thunder "
    "cedar marble velvet ember glacier prairie canyon summit tide quarry beacon"
).split()


def page_url(i: int) -> str:
    return "/" if i == 0 else f"/{TEMPLATES[i % 4]}/{i}.html"


def site_page(i: int, total: int) -> str | None:
    """Page ``i`` of a ``total``-page site: four templates, ten children each, two cross links.

    Every page is reachable from ``/`` (page ``i``'s children are ``10i+1 .. 10i+10``), so the
    crawl fans out fast; the cross links make many pages found several times.
    """
    if not 0 <= i < total:
        return None
    rng = random.Random(i)
    children = [c for c in range(10 * i + 1, 10 * i + 11) if c < total]
    cross = [rng.randrange(total) for _ in range(2)]
    links = "".join(f"<li><a href='{page_url(c)}'>page {c}</a></li>" for c in children + cross)
    sentences = [
        " ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + f" number {i}-{k}."
        for k in range(4)
    ]
    kind = TEMPLATES[i % 4]
    if kind == "article":
        main = (
            f"<article><h1>Article {i}</h1>"
            + "".join(f"<p>{s}</p>" for s in sentences)
            + f"</article><aside><ul>{links}</ul></aside>"
        )
    elif kind == "product":
        main = (
            f"<div class='product'><h2>Product {i}</h2><table><tr><td>Price</td><td>{i}.00</td>"
            f"</tr><tr><td>Stock</td><td>{i % 13}</td></tr></table><p>{sentences[0]}</p>"
            f"<p>{sentences[1]}</p></div><nav><ol>{links}</ol></nav>"
        )
    elif kind == "listing":
        main = f"<section><h3>Listing {i}</h3><ul class='items'>{links}</ul></section>"
    else:
        posts = "".join(
            f"<div class='post'><span>user{(i + k) % 17}</span><p>{s}</p></div>"
            for k, s in enumerate(sentences)
        )
        main = f"<div class='thread'><h1>Thread {i}</h1>{posts}<ul>{links}</ul></div>"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{kind} {i}</title></head>"
        f"<body><header><a href='/'>Home</a></header><main>{main}</main>"
        "<footer><p>Generated site</p></footer></body></html>"
    )


def site(total: int):
    def route(path: str, _query: dict[str, list[str]]) -> tuple[int, str] | None:
        if path == "/":
            i = 0
        else:
            try:
                i = int(path.rsplit("/", 1)[-1].removesuffix(".html"))
            except ValueError:
                return None
            if path != page_url(i):
                return None
        html = site_page(i, total)
        return None if html is None else (200, html)

    return serve_routes(route)


def stored(pg_url: str) -> list[tuple[str, str | None]]:
    from visdup.storage.store import Store

    store = Store.from_url(pg_url)
    try:
        return [(r.url, r.verdict) for r in store.rows("url", "verdict")]
    finally:
        store.close()


def count_stored(pg_url: str) -> int:
    import sqlalchemy

    engine = sqlalchemy.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql("SELECT count(*) FROM visdup_pages").scalar() or 0
    except sqlalchemy.exc.ProgrammingError:
        return 0  # the schema is not there yet
    finally:
        engine.dispose()


def assert_every_page_once(pg_url: str, base: str, total: int) -> None:
    rows = stored(pg_url)
    urls = [url for url, _ in rows]
    assert len(urls) == len(set(urls)), "a page was stored twice"
    expected = {base + page_url(i) for i in range(total)}
    assert set(urls) == expected, (
        f"missing {sorted(expected - set(urls))[:5]}, extra {sorted(set(urls) - expected)[:5]}"
    )
    assert all(verdict for _, verdict in rows), "a page has no verdict"
    assert_templates_single(pg_url, base)


def assert_templates_single(pg_url: str, base: str) -> None:
    """Each of the site's four page kinds is one template cluster, whichever process stored
    its pages, and every cluster a page carries has its stored row."""
    from visdup.storage.store import Store

    store = Store.from_url(pg_url)
    try:
        kinds: dict[str, set[int | None]] = {}
        for row in store.rows("url", "cluster_id"):
            path = row.url[len(base) :]
            if path != "/":
                kinds.setdefault(path.split("/")[1], set()).add(row.cluster_id)
        carried = {c for ids in kinds.values() for c in ids}
        rows = {r.id: r.size for r in store.cluster_rows()}
    finally:
        store.close()
    assert all(len(ids) == 1 and None not in ids for ids in kinds.values()), kinds
    assert len(carried) == len(kinds) == 4, kinds
    assert carried <= set(rows), "a page names a cluster that has no row"


# ---------------------------------------------------------------------- leases, unit level


def test_an_expired_lease_returns_the_request_to_the_queue(shared):
    name = shared.claim()
    client = shared.client
    dead = shared.frontier(name, "dead", 1.0)
    alive = shared.frontier(name, "alive", 30.0)
    data = {f"fp{i}": pickle.dumps({"url": f"http://x/{i}"}) for i in range(3)}
    for i, (fp, blob) in enumerate(data.items()):
        assert dead.push(fp, blob, priority=-i)
    assert not alive.push("fp0", data["fp0"]), "the seen set shares fingerprints"
    assert alive.push("fp0", data["fp0"], force=True), "dont_filter requests are queued again"
    assert dead.counts() == (3, 0)

    popped = dead.pop()
    assert popped is not None
    fp, blob, token, tries = popped
    assert (fp, blob, tries) == ("fp0", data["fp0"], 1), "highest priority first"
    assert dead.counts() == (2, 1)
    time.sleep(1.3)  # the dead worker never renews: its lease runs out
    assert alive.counts() == (3, 0), "the expired lease went back to the queue"
    assert not dead.ack(fp, token), "a late ack of an expired lease changes nothing"

    again = alive.pop()
    assert again is not None and again[0] == "fp0" and again[3] == 2, "leased a second time"
    assert alive.renew([(again[0], again[2])]) == 1
    assert dead.renew([(again[0], token)]) == 0, "a stale token renews nothing"
    assert alive.ack(again[0], again[2])
    assert alive.counts() == (2, 0)
    assert not client.hexists(alive.keys["requests"], "fp0"), "the acked request is gone"

    second = alive.pop()
    assert second is not None
    assert alive.release(second[0], second[2]), "released: back in the queue at once"
    assert alive.counts() == (2, 0)


def test_a_retry_queued_while_leased_survives_the_first_ack(shared):
    frontier = shared.frontier(shared.claim(), "w", 30.0)
    assert frontier.push("fp", b"first")
    fp, _, token, _ = frontier.pop()
    assert frontier.push("fp", b"retry", force=True)  # RetryMiddleware's dont_filter copy
    assert frontier.ack(fp, token)
    assert frontier.counts() == (1, 0)
    fp2, data, token2, tries = frontier.pop()
    assert (fp2, data, tries) == ("fp", b"retry", 2)
    assert frontier.ack(fp2, token2)
    assert frontier.counts() == (0, 0)


def test_acks_in_one_round_trip_answer_each_lease(shared):
    name = shared.claim()
    frontier = shared.frontier(name, "w", 30.0)
    for i in range(4):
        assert frontier.push(f"fp{i}", f"r{i}".encode(), priority=-i)
    leases = [frontier.pop() for _ in range(3)]
    assert all(leases)
    held = [(fp, token) for fp, _, token, _ in leases]
    assert frontier.push("fp1", b"retry", force=True)  # a retry of a leased request
    stale = (held[2][0], "999999")  # a token that lease never had
    assert frontier.ack_many([held[0], held[1], stale]) == [True, True, False]
    assert frontier.counts() == (2, 1), "fp1's retry and fp3 queued, fp2 still leased"
    assert frontier.client.hexists(frontier.keys["requests"], "fp1"), "the retry keeps its data"
    assert not frontier.client.hexists(frontier.keys["requests"], "fp0")
    assert frontier.ack_many([held[2]]) == [True]
    assert frontier.ack_many([held[2]]) == [False], "acknowledged once"
    assert frontier.ack_many([]) == []


def test_sqlite_with_a_shared_frontier_is_refused(shared, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "visdup",
            "crawl",
            "http://127.0.0.1:9/",
            "--db",
            f"sqlite:///{tmp_path / 'x.sqlite3'}",
            "--frontier",
            shared.url,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "PostgreSQL" in result.stderr and "SQLite has one writing process" in result.stderr
    assert not (tmp_path / "x.sqlite3").exists()


def test_the_addon_keeps_a_projects_own_scheduler():
    from scrapy.settings import Settings

    from visdup.addon import Addon

    settings = Settings({"VISDUP_FRONTIER_URL": "redis://127.0.0.1:6379/13"})
    Addon().update_settings(settings)
    assert settings["SCHEDULER"] == "visdup.scheduler.FrontierScheduler"
    own = Settings(
        {"VISDUP_FRONTIER_URL": "redis://127.0.0.1:6379/13", "SCHEDULER": "my.Scheduler"},
        priority="project",
    )
    Addon().update_settings(own)
    assert own["SCHEDULER"] == "my.Scheduler"
    plain = Settings()
    Addon().update_settings(plain)
    assert plain["SCHEDULER"] == "scrapy.core.scheduler.Scheduler"


# ---------------------------------------------------------------------- crawls


@deferred_f_from_coro_f
async def test_two_crawlers_share_one_crawl(shared, pg_url):
    """About 100 pages, two crawlers at once: each page fetched and stored once."""
    from scrapy.utils.test import get_crawler

    from visdup.spiders.site import SiteSpider

    total = 100
    with site(total) as base:
        shared.claim(base)  # the crawl's default name: its start URL's origin
        settings = crawl_settings(
            pg_url,
            VISDUP_FRONTIER_URL=shared.url,
            VISDUP_FRONTIER_LEASE=30,
            CONCURRENT_REQUESTS=4,
            LOG_LEVEL="WARNING",
        )
        crawlers = [get_crawler(SiteSpider, settings) for _ in range(2)]
        await asyncio.gather(*(c.crawl_async(url=base + "/") for c in crawlers))
    assert_every_page_once(pg_url, base, total)
    stats = [c.stats.get_stats() for c in crawlers]
    assert all(s["finish_reason"] == "finished" for s in stats)
    fetched = [s.get("visdup/frontier/leased", 0) for s in stats]
    assert sum(fetched) == total, fetched
    assert all(n > 0 for n in fetched), f"one crawler did all the work: {fetched}"
    assert sum(s.get("visdup/frontier/acked", 0) for s in stats) == total
    assert all(0 < s["visdup/frontier/held_max"] <= 2 * 4 for s in stats), "leases per slot"
    assert shared.left(base) == (0, 0)


@deferred_f_from_coro_f
async def test_a_released_request_whose_page_is_stored_is_not_fetched_again(shared, pg_url):
    """A worker died after storing a page (its lease ran out): the page is not fetched or
    labelled again, and the crawl re-runs the spider's start() once for links it may have lost.
    """
    from scrapy import Request
    from scrapy.utils.test import get_crawler

    from visdup.spiders.site import SiteSpider

    total = 12
    with site(total) as base:
        name = shared.claim()
        settings = crawl_settings(
            pg_url, VISDUP_FRONTIER_URL=shared.url, VISDUP_CRAWL_ID=name, LOG_LEVEL="WARNING"
        )
        first = get_crawler(SiteSpider, settings)
        await first.crawl_async(url=base + "/")
        assert first.stats.get_value("visdup/pages") == total

        dead = shared.frontier(name, "dead", 1.0)
        url = base + page_url(5)
        dead.push("stored-page", pickle.dumps(Request(url).to_dict()), force=True)
        assert dead.pop() is not None  # leased by a worker that never acknowledges it
        await asyncio.sleep(1.2)

        second = get_crawler(SiteSpider, settings)
        await second.crawl_async(url=base + "/")
    stats = second.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats.get("visdup/frontier/stored_skipped") == 1
    assert stats.get("visdup/frontier/reseeds") == 1
    assert stats.get("visdup/pages", 0) == 0, "nothing labelled twice"
    fetched = stats.get("downloader/request_count", 0) - stats.get("robotstxt/request_count", 0)
    assert fetched == 0, "the stored page was fetched again"
    assert_every_page_once(pg_url, base, total)
    assert shared.left(name) == (0, 0)


def _worker(
    base: str, pg_url: str, shared: Shared, name: str, log: Path
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "visdup",
            "crawl",
            base + "/",
            "--db",
            pg_url,
            "--frontier",
            shared.url,
            "--crawl-id",
            name,
            "-s",
            "VISDUP_FRONTIER_LEASE=6",
            "-s",
            "LOG_LEVEL=INFO",
            # the frontier and the shared clusters are under test, not the content channel:
            # the structure channel with few candidates still gives every page its verdict
            "-s",
            "VISDUP_CONTENT_ENABLED=False",
            "-s",
            "VISDUP_STORE_BODY=False",
            "-s",
            "VISDUP_CANDIDATES=4",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


@pytest.mark.slow
def test_three_processes_and_a_kill(shared, pg_url, tmp_path):
    """Three ``visdup crawl`` processes, 1,200 pages; one is killed with SIGKILL when a third
    is stored, and started again: every page stored once with a verdict, every exit 0."""
    total = 1200
    name = shared.claim()
    with site(total) as base:
        logs = [tmp_path / f"worker{i}.log" for i in range(4)]
        workers = [_worker(base, pg_url, shared, name, logs[i]) for i in range(3)]
        try:
            deadline = time.monotonic() + 1200
            while count_stored(pg_url) < total // 3:
                assert time.monotonic() < deadline, "the crawl stalled"
                assert all(w.poll() is None for w in workers), "a worker ended early"
                time.sleep(0.2)
            workers[0].send_signal(signal.SIGKILL)
            assert workers[0].wait(30) == -signal.SIGKILL
            workers.append(_worker(base, pg_url, shared, name, logs[3]))
            codes = [w.wait(max(1.0, deadline - time.monotonic())) for w in workers[1:]]
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
    tails = {str(p): p.read_text(errors="replace")[-2000:] for p in logs}
    assert codes == [0, 0, 0], tails
    assert_every_page_once(pg_url, base, total)
    assert shared.left(name) == (0, 0)


def test_two_processes_lose_no_page_to_a_store_outage(shared, pg_url, tmp_path):
    """Two ``visdup crawl`` processes on one Redis frontier; the store (PostgreSQL behind a
    TCP proxy the test cuts) goes away for 10 s once a quarter of the site is stored: no
    request is acknowledged before its page is stored, so every page is stored once and
    both processes finish (exit 0)."""
    from tests.test_store_outage import Proxy

    total = 300
    name = shared.claim()
    proxy = Proxy()
    workers: list[subprocess.Popen[bytes]] = []
    try:
        with site(total) as base:
            logs = [tmp_path / f"worker{i}.log" for i in range(2)]
            workers = [_worker(base, proxy.url(pg_url), shared, name, log) for log in logs]
            deadline = time.monotonic() + 600
            while count_stored(pg_url) < total // 4:
                assert time.monotonic() < deadline, "the crawl stalled"
                assert all(w.poll() is None for w in workers), "a worker ended early"
                time.sleep(0.2)
            proxy.cut()
            time.sleep(10)
            proxy.restore()
            codes = [w.wait(max(1.0, deadline - time.monotonic())) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        proxy.close()
    said = "".join(log.read_text(errors="replace") for log in logs)
    assert codes == [0, 0], said[-4000:]
    assert "went away" in said and "the store is back" in said
    assert_every_page_once(pg_url, base, total)
    assert shared.left(name) == (0, 0)
