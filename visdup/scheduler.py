"""A frontier shared through Redis: several crawl processes, on any machines, make one crawl.

``SCHEDULER = "visdup.scheduler.FrontierScheduler"`` (the add-on sets it when
``VISDUP_FRONTIER_URL`` is set) replaces Scrapy's scheduler in every process started with the
same frontier URL and crawl name. Why not scrapy-redis: measured with scrapy-redis 0.9.1, its
pop has no lease, so a worker killed with ``kill -9`` lost its in-flight requests (9 of 3,000
pages), and their fingerprints in its shared dupefilter then blocked any re-add; its start
requests skip the dupefilter, so every process fetched the start page again. Here:

* one **seen set** of request fingerprints that start requests pass through too (other
  ``dont_filter`` requests, retries and the like, are queued again whatever it holds);
* a **queue** (a sorted set by priority, first in first out within one priority) with each
  request serialised by ``Request.to_dict`` beside it;
* a **lease** per popped request: a sorted set of in-flight fingerprints scored by expiry,
  renewed while its worker lives (from a thread of its own, so a busy event loop cannot let
  it run out); a lease that expires (its worker died) returns the request to the queue,
  inside the same Lua script that pops, so no state is ever half moved. A worker pops only
  while it holds fewer than ``LEASES_PER_SLOT * CONCURRENT_REQUESTS`` leases, so a request
  is leased shortly before it is downloaded, not hundreds of requests ahead of its turn in
  the pipelines;
* an **acknowledgement** only when the request has left the engine: downloaded, its page
  through every item pipeline (stored), every request its callback yielded in the queue. A
  worker killed at any point before loses nothing; a request it had leased is fetched again.

A re-leased request whose page is already stored is not fetched again (nothing is labelled
twice; the store's unique URL would refuse the second row anyway). Its worker may have died
between storing the page and queueing its links, and Redis itself may lose keys (a restart
without persistence, an eviction, a flush), so when the frontier runs empty one worker re-runs
the spider's ``start()`` before the crawl ends: the ``site`` spider seeds it with the links the
store holds and no process fetched, and the seen set lets only those through. When that finds
nothing the crawl ends; when it finds links, the check runs again at the next end.

Workers exit by themselves: idle with an empty queue, a worker stays while any process holds
a lease (it may still queue links, or die and hand its requests back) and closes
``finished`` when the queue is empty and nothing is in flight anywhere.

Requests are pickled (as Scrapy's own disk queues do): give the frontier's Redis only to
processes you trust. Keys are ``visdup:{CRAWL}:...``; a finished crawl keeps them, so a
process started later for the same crawl exits at once: use a new crawl name to crawl again.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
import threading
import time
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any, Self

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.request import request_from_dict

from visdup import config
from visdup.errors import ConfigError
from visdup.storage.redis_frontier import RedisFrontier, connect
from visdup.storage.urls import canonical_url, crawl_key, mask_password

if TYPE_CHECKING:
    from redis import Redis
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Seconds next_request answers "nothing" without asking Redis after the queue was found empty
#: (requests this process queues end the pause; other processes' ones wait at most this long).
EMPTY_PAUSE = 0.1

#: A worker holds at most this many leases per download slot (CONCURRENT_REQUESTS): Scrapy pulls
#: requests until its scraper holds 5 MB of responses, so without a bound one worker leased
#: hundreds of requests that then waited their turn in its pipelines (646 were in flight in
#: the worker killed by the 3,000-page test), while the others found the queue empty, and
#: all of them returned to the queue only when its leases ran out. Two per slot keep the
#: downloads and the pipelines busy.
LEASES_PER_SLOT = 2


def _setting(crawler: Crawler, name: str) -> Any:
    return config.read(crawler.settings, name)


class FrontierScheduler:
    """Scrapy's scheduler interface on a :class:`RedisFrontier` shared by every worker."""

    def __init__(self, crawler: Crawler, client: Redis, url: str, lease: float, crawl_id: str):
        self.crawler = crawler
        self.stats = crawler.stats
        self.client = client
        self.url = url
        self.lease = lease
        self.crawl_id = crawl_id
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.frontier: RedisFrontier | None = None
        self.spider: Spider | None = None
        #: Requests handed to the engine and not yet acknowledged: request → (fp, token).
        self._inflight: dict[Request, tuple[str, str]] = {}
        #: Requests that cannot be serialised: crawled by this process only.
        self._local: deque[Request] = deque()
        #: Requests Redis refused for a moment (connection lost): pushed again on the next tick.
        self._unsent: deque[Request] = deque()
        self._reseeding = False
        #: Guards _inflight against the heartbeat thread's snapshot.
        self._lock = threading.Lock()
        self._heartbeat: threading.Thread | None = None
        self._stopping = threading.Event()
        self._empty_until = 0.0
        self.max_leases = LEASES_PER_SLOT * max(1, crawler.settings.getint("CONCURRENT_REQUESTS"))
        self._warned: set[str] = set()
        self._tick: Any = None
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        url = _setting(crawler, "VISDUP_FRONTIER_URL")
        if not url:
            raise ConfigError("FrontierScheduler needs VISDUP_FRONTIER_URL (redis://HOST:PORT/DB)")
        if _setting(crawler, "VISDUP_ENABLED"):
            refuse_sqlite(_setting(crawler, "VISDUP_DATABASE_URL"))
        lease = _setting(crawler, "VISDUP_FRONTIER_LEASE")
        return cls(crawler, connect(url), url, lease, _setting(crawler, "VISDUP_CRAWL_ID"))

    # ------------------------------------------------------------------ scheduler interface
    def open(self, spider: Spider) -> None:
        self.spider = spider
        crawl = self.crawl_id or crawl_key(getattr(spider, "start_urls", None) or (), spider.name)
        self.frontier = RedisFrontier(self.client, crawl, worker=self.worker, lease=self.lease)
        if _engine_slot(self.crawler) is None:
            raise RuntimeError("visdup's frontier cannot see Scrapy's in-progress requests")
        queued, leased = self.frontier.counts()
        logger.info(
            "visdup: frontier %s, crawl %r: %d requests queued, %d in flight; worker %s",
            mask_password(self.url),
            crawl,
            queued,
            leased,
            self.worker,
        )
        for name in ("enqueued", "filtered", "leased", "acked", "late_acks", "held_max"):
            self.stats.set_value(f"visdup/frontier/{name}", 0)
        self._tick = create_looping_call(self.tick)
        self._tick.start(min(1.0, self.lease / 4), now=False)
        self._heartbeat = threading.Thread(
            target=self._renew_leases, name="visdup-frontier-leases", daemon=True
        )
        self._heartbeat.start()

    def close(self, reason: str) -> None:
        if self._tick is not None and self._tick.running:
            self._tick.stop()
        self._stopping.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        if self.frontier is None:
            return
        self._flush_unsent()
        # after "finished" every request left the engine done; after a stop, one that left
        # may have been cancelled: it goes back to the queue (a stored page is skipped)
        try:
            if reason == "finished":
                self._count_acks(self.frontier.ack_many(self._inflight.values()))
            else:
                for fp, token in self._inflight.values():
                    self.frontier.release(fp, token)
                    self._inc("released")
        except Exception as exc:  # the leases expire by themselves
            logger.warning("visdup: frontier: cannot settle the requests in flight: %s", exc)
        with self._lock:
            self._inflight.clear()
        if self._unsent or self._local:
            logger.warning(
                "visdup: frontier: %d requests never reached Redis and %d local ones were not "
                "crawled",
                len(self._unsent),
                len(self._local),
            )

    def has_pending_requests(self) -> bool:
        if self._local or self._unsent:
            return True
        assert self.frontier is not None
        try:
            return self.client.zcard(self.frontier.keys["queue"]) > 0
        except Exception as exc:
            self._warn("redis", "visdup: frontier unreachable: %s", exc)
            return True  # do not finish on a connection error

    def enqueue_request(self, request: Request) -> bool:
        assert self.frontier is not None and self.spider is not None
        fingerprint = self.crawler.request_fingerprinter.fingerprint(request).hex()
        # start requests carry dont_filter but pass the shared seen set: each worker yields them
        force = request.dont_filter and not request.meta.get("is_start_request")
        try:
            data = pickle.dumps(request.to_dict(spider=self.spider), protocol=4)
        except Exception as exc:  # a callback that is no spider method, an unpicklable meta
            return self._enqueue_local(request, fingerprint, force, exc)
        try:
            added = self.frontier.push(fingerprint, data, request.priority, force=force)
        except Exception as exc:
            self._warn("redis", "visdup: frontier unreachable, requests wait here: %s", exc)
            self._unsent.append(request)
            return True
        self._inc("enqueued" if added else "filtered")
        if added:
            self._empty_until = 0.0
        return added

    def next_request(self) -> Request | None:
        if self._local:
            return self._local.popleft()
        if time.monotonic() < self._empty_until:
            return None  # the queue was empty a moment ago: no round trip per engine wake-up
        assert self.frontier is not None and self.spider is not None
        self._sweep()  # the engine asks after each request it finished: settle those now
        if len(self._inflight) >= self.max_leases:
            return None  # its next finished request wakes the engine again
        while True:
            try:
                got = self.frontier.pop()
            except Exception as exc:
                self._warn("redis", "visdup: frontier unreachable: %s", exc)
                return None
            if got is None:
                self._empty_until = time.monotonic() + EMPTY_PAUSE
                return None
            fp, data, token, tries = got
            try:
                request = request_from_dict(pickle.loads(data), spider=self.spider)
            except Exception as exc:  # another spider's request, or a callback renamed since
                logger.error("visdup: frontier: a request this spider cannot read: %s", exc)
                self.frontier.ack(fp, token)
                self._inc("unreadable")
                continue
            if tries > 1 and self._stored(request.url):
                # leased before by a worker that died after storing the page: not again
                self.frontier.ack(fp, token)
                self.frontier.mark_reseed()
                self._inc("stored_skipped")
                continue
            if tries > 1:
                self._inc("reclaimed")
            self._inc("leased")
            with self._lock:
                self._inflight[request] = (fp, token)
            self.stats.max_value("visdup/frontier/held_max", len(self._inflight))
            return request

    def __len__(self) -> int:
        assert self.frontier is not None
        return int(self.client.zcard(self.frontier.keys["queue"])) + len(self._local)

    # ------------------------------------------------------------------ leases
    def tick(self) -> None:
        """Every second: settle finished requests the engine did not ask after, wake it."""
        try:
            self._flush_unsent()
            self._sweep()
            slot = _engine_slot(self.crawler)
            if slot is not None and slot.closing is None and self.has_pending_requests():
                slot.nextcall.schedule()  # other workers queued links: fetch them now
        except Exception as exc:
            self._warn("tick", "visdup: frontier: %s", exc)

    def _store_away(self) -> bool:
        """Whether the crawl's store is away, or was given up on: then a request that left the
        engine may have produced a page that was not stored (the crawl stops and ``close``
        releases it to the queue)."""
        from visdup.context import CrawlContext

        ctx = CrawlContext.existing(self.crawler)
        return ctx is not None and (ctx.outage.away or ctx.outage.gave_up)

    def _renew_leases(self) -> None:
        """Renew this process's leases every third of the lease, from a thread of its own.

        A lease says "this process lives", so it must not wait for the event loop: on a machine
        with 20 processes for 2 cores, a worker's loop ran its timers many seconds late, and
        renewed from the loop most 6-second leases ran out under live workers (2,453 late
        acknowledgements of 2,963 requests in one worker of the 3,000-page test).
        """
        assert self.frontier is not None
        while not self._stopping.wait(self.lease / 3):
            with self._lock:
                leases = list(self._inflight.values())
            try:
                self.frontier.renew(leases)
            except Exception as exc:  # Redis away for a moment: the next round tries again
                self._warn("renew", "visdup: frontier: cannot renew leases: %s", exc)

    def _sweep(self) -> None:
        """Acknowledge the requests that left the engine: fetched, scraped, stored, followed.

        Scrapy keeps a request in its engine slot until the download, the callback, every item
        it yielded (through the pipelines, into the store) and every request it yielded (into
        the queue) are done: the one moment a crash can no longer lose anything of it.
        """
        if not self._inflight or self._store_away():
            return  # a request whose page waits for the store, or was given up, stays leased
        slot = _engine_slot(self.crawler)
        if slot is None or slot.closing is not None:
            return  # closing: close() settles what is left
        inprogress = slot.inprogress
        done = [r for r in self._inflight if r not in inprogress]
        if not done:
            return
        assert self.frontier is not None
        try:
            answers = self.frontier.ack_many(self._inflight[r] for r in done)
        except Exception as exc:  # Redis away for a moment: settled on a later call
            self._warn("redis", "visdup: frontier unreachable: %s", exc)
            return
        with self._lock:
            for request in done:
                del self._inflight[request]
        self._count_acks(answers)

    def _count_acks(self, answers: list[bool]) -> None:
        acked = sum(answers)
        self._inc("acked", acked)
        if acked < len(answers):
            # a retry of the same request popped again, or a lease that ran out (its worker
            # stalled for longer than the lease): the request was handed out twice
            self._inc("late_acks", len(answers) - acked)

    def _flush_unsent(self) -> None:
        pending = list(self._unsent)
        self._unsent.clear()
        for request in pending:
            self.enqueue_request(request)  # back in _unsent while Redis is still away

    # ------------------------------------------------------------------ end of the crawl
    def spider_idle(self, spider: Spider) -> None:
        """Keep the worker while anything is queued or in flight anywhere; then it may finish."""
        if self.frontier is None:
            return
        self._sweep()
        if self._local or self._unsent or self._reseeding:
            raise DontCloseSpider
        try:
            queued, leased = self.frontier.counts()
            reseed = not (queued or leased) and self.frontier.take_reseed()
        except Exception as exc:
            self._warn("redis", "visdup: frontier unreachable: %s", exc)
            raise DontCloseSpider from None
        if queued or leased:
            raise DontCloseSpider
        if reseed:
            self._reseeding = True
            deferred_from_coro(self._reseed())
            raise DontCloseSpider

    async def _reseed(self) -> None:
        """Run the spider's start() again: its links the store holds and no process fetched."""
        assert self.spider is not None
        logger.info("visdup: frontier: empty; re-seeding from the links the store holds")
        self._inc("reseeds")
        before = self.stats.get_value("visdup/frontier/enqueued", 0)
        try:
            async for output in self.spider.start():
                if isinstance(output, Request):
                    # as Scrapy's StartSpiderMiddleware marks them: through the seen set
                    output.meta.setdefault("is_start_request", True)
                    self.crawler.engine.crawl(output)
        except Exception:
            logger.exception("visdup: frontier: cannot re-seed from the spider's start()")
        finally:
            found = self.stats.get_value("visdup/frontier/enqueued", 0) - before
            if found:
                logger.warning("visdup: frontier: %d requests were missing; crawling them", found)
                self._inc("reseeded", found)
                self._safe(self.frontier.mark_reseed if self.frontier else None)
            self._reseeding = False

    # ------------------------------------------------------------------ helpers
    def _stored(self, url: str) -> bool:
        from visdup.context import CrawlContext

        if not _setting(self.crawler, "VISDUP_ENABLED"):
            return False
        store = CrawlContext.of(self.crawler).store
        return store is not None and store.is_stored(canonical_url(url))

    def _enqueue_local(
        self, request: Request, fingerprint: str, force: bool, exc: Exception
    ) -> bool:
        assert self.frontier is not None
        if not force and not self.client.sadd(self.frontier.keys["seen"], fingerprint):
            self._inc("filtered")
            return False
        self._warn(
            "local",
            "visdup: frontier: %s cannot be serialised (%s); such requests are crawled by this "
            "process only (stat visdup/frontier/local)",
            request,
            exc,
        )
        self._inc("local")
        self._local.append(request)
        return True

    def _inc(self, name: str, n: int = 1) -> None:
        self.stats.inc_value(f"visdup/frontier/{name}", n)

    def _safe(self, call: Any) -> None:
        try:
            if call is not None:
                call()
        except Exception as exc:
            self._warn("redis", "visdup: frontier unreachable: %s", exc)

    def _warn(self, kind: str, message: str, *args: Any) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning(message, *args)


def refuse_sqlite(database_url: str) -> None:
    """A shared frontier needs a store several processes can write: PostgreSQL."""
    if str(database_url).split(":", 1)[0].split("+", 1)[0].lower() == "sqlite":
        raise ConfigError(
            "a shared frontier (VISDUP_FRONTIER_URL) needs a PostgreSQL store "
            "(postgresql+psycopg://...): SQLite has one writing process"
        )


def _engine_slot(crawler: Crawler) -> Any:
    """The engine's slot, whose ``inprogress`` set holds each request until it is done.

    Scrapy has no signal for "this request and all it produced are handled" (its callback's
    output, every item through the pipelines, every request into the queue), nor a public way
    to wake the engine when other workers queued links; the slot is the one place that knows
    and the one that wakes it (``_slot`` since Scrapy 2.13, ``slot`` before, each read with a
    default). The Scrapy range it is tested with is pinned in pyproject.toml; without the slot
    the frontier acknowledges each request when the crawl closes.
    """
    engine = getattr(crawler, "engine", None)
    slot = getattr(engine, "_slot", None) or getattr(engine, "slot", None)
    return slot if slot is not None and hasattr(slot, "inprogress") else None
