"""visdup's processes of a crawl started as the crawl starts, before its spider opens.

Each of them (the analysis workers, the label process) takes about as long to start as the
crawl's own process takes from there to the spider's opening (Scrapy's engine and components,
the store), and both were spent one after the other on the same cores: a crawl's first page
waited for its analysis worker and its label process, and nothing past the first page could be
fetched until its links were read. Started early, they import what they need while the crawl's
process builds its engine (the add-on starts them as Scrapy applies the crawl's settings; a
crawl wired without it, as its first visdup component is made). The crawl takes them as its
spider opens; what it never takes ends when it closes, after :data:`EARLY_WAIT`, or when its
crawler is gone.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import weakref
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from visdup.dedup.analysis import worker_started
from visdup.runtime.workers import WorkerPool, analysis_processes, spawn

if TYPE_CHECKING:
    from visdup.config import Options


class LabelStart:
    """A label process started before its setup exists (the crawl's run and snapshot, made
    as the spider opens): it imports the labelling meanwhile, then waits for the setup
    (:class:`visdup.runtime.label_process.LabelService` sends it)."""

    def __init__(self) -> None:
        self.conn, child = multiprocessing.get_context("spawn").Pipe()
        self.process = spawn(_label_process, (child,), "visdup-label")
        child.close()

    def discard(self) -> None:
        """Not needed after all: its pipe closes, so it ends without a setup."""
        with contextlib.suppress(OSError):
            self.conn.close()
        self.process.join(1.0)
        if self.process.is_alive():
            self.process.kill()


def _label_process(conn: Connection) -> None:
    """The label process's entry when it starts early; its imports are made here, in the
    process, so the crawl's process has nothing to import before it starts it."""
    from visdup.runtime.label_process import serve_when_set_up

    serve_when_set_up(conn)


class EarlyStart:
    """The early processes of one crawl, until it takes them (:func:`take_pool`,
    :func:`take_label`)."""

    def __init__(self, count: int, nice: int, label: bool, memory_mb: int = 0):
        self.count = count
        self.nice = nice
        self.memory_mb = memory_mb
        self.pool: WorkerPool | None = None
        self.label: LabelStart | None = None
        if count:
            self.pool = WorkerPool(count, worker_started, (os.getpid(), nice, memory_mb))
        if label and count:  # a label process runs beside worker processes only
            self.label = LabelStart()
        # a crawl that fails before its spider opens takes nothing, and says nothing
        self._timer = threading.Timer(EARLY_WAIT, self.discard)
        self._timer.daemon = True
        self._timer.start()

    def taken(self) -> None:  # under _early_lock
        if self.pool is None and self.label is None:
            self._timer.cancel()

    def discard(self) -> None:
        """End what was not taken."""
        self._timer.cancel()
        with _early_lock:
            pool, self.pool = self.pool, None
            label, self.label = self.label, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if label is not None:
            label.discard()


#: Seconds a crawl's early processes wait for the crawl to take them before they end: its
#: spider opens a second or two after they start, unless the crawl failed to start.
EARLY_WAIT = 120.0


_early: weakref.WeakKeyDictionary[Any, EarlyStart] = weakref.WeakKeyDictionary()
_early_lock = threading.Lock()


def start_early(crawler: Any, opts: Options) -> None:
    """Start the crawl's worker processes and label process now (once per crawler), from
    its VISDUP_ settings. Only for a crawl
    that is starting (``crawler.crawling``): a crawler made and never crawled (a test's, a
    command's) starts nothing."""
    if not getattr(crawler, "crawling", False):
        return
    with _early_lock:
        if crawler in _early:
            return
        count = analysis_processes(opts.analysis_processes)
        if not count:
            return
        early = EarlyStart(count, opts.analysis_nice, opts.label_process, opts.analysis_memory_mb)
        _early[crawler] = early
    weakref.finalize(crawler, early.discard)


def _take(crawler: Any, part: str) -> tuple[EarlyStart, Any] | None:
    """One of the crawl's early processes (``pool`` or ``label``), taken once."""
    with _early_lock:
        early = _early.get(crawler)
        taken = getattr(early, part, None)
        if early is None or taken is None:
            return None
        setattr(early, part, None)
        early.taken()
    return early, taken


def take_pool(crawler: Any, count: int, nice: int, memory_mb: int = 0) -> WorkerPool | None:
    """The crawl's early worker processes, if they were started with these settings."""
    found = _take(crawler, "pool")
    if found is None:
        return None
    early, pool = found
    if early.count == count and early.nice == nice and early.memory_mb == memory_mb:
        return pool
    pool.shutdown(wait=False, cancel_futures=True)  # settings changed since: started anew
    return None


def take_label(crawler: Any) -> LabelStart | None:
    """The crawl's early label process (once), if one was started and is still alive."""
    found = _take(crawler, "label")
    if found is None:
        return None
    label = found[1]
    if label.process.is_alive():
        return label
    label.discard()
    return None


def discard_early(crawler: Any) -> None:
    """What the crawl did not take of its early processes ends (the crawl closes)."""
    with _early_lock:
        early = _early.pop(crawler, None)
    if early is not None:
        early.discard()
