"""Where a crawl's pages are analysed: in the analysis worker processes, else in a thread.

A worker that dies (killed, out of memory, a crash in a parser) fails only the page it was on,
and a new worker takes its place and analyses the page once more. The page that kills that one
too is stored with its problem; the crawl goes on. A pool that takes no page (no worker can
start) leaves the analysis to a thread, but never that of a page that just killed a worker.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from scrapy.utils.asyncio import run_in_thread

from visdup.dedup.analysis import (
    OUT_OF_MEMORY,
    AnalysisOptions,
    PageAnalysis,
    analyse,
    analyse_bytes,
    body_digest,
    worker_started,
)
from visdup.runtime.futures import awaited
from visdup.runtime.workers import WorkerDied, WorkerPool, analysis_processes

logger = logging.getLogger(__name__)


class PageBytes(Protocol):
    """What the analysis reads of a page item."""

    url: str
    final_url: str | None
    content_type: str | None
    encoding: str | None
    body: bytes
    tree: Any


class Analysis:
    """The crawl's analysis workers (``VISDUP_ANALYSIS_PROCESSES``), started on first use or
    taken from the crawl's early start (``take_pool``)."""

    def __init__(
        self,
        processes: int,
        nice: int,
        *,
        memory_mb: int = 0,
        count: Callable[[str, int], None],
        set_stat: Callable[[str, Any], None],
        take_pool: Callable[[int, int, int], WorkerPool | None],
        lock: threading.Lock,
    ):
        """``lock``: the one the crawl's labelling starts under (a label process's restart
        holds it while it asks for the pool); ``memory_mb``: each worker's address space
        (VISDUP_ANALYSIS_MEMORY_MB, 0: no limit)."""
        self.workers = analysis_processes(processes)
        self.nice = nice
        self.memory_mb = memory_mb
        self._count = count
        self._set_stat = set_stat
        self._take_pool = take_pool
        self._lock = lock
        self._pool: WorkerPool | None = None

    @property
    def pool(self) -> WorkerPool | None:
        """The pool if it started (never starts it)."""
        return self._pool

    def start(self) -> WorkerPool | None:
        """The worker processes, started on first use (None: analysis in threads)."""
        if not self.workers:
            return None
        with self._lock:
            if self._pool is None:
                pool = self._take_pool(self.workers, self.nice, self.memory_mb)
                if pool is None:
                    started = (os.getpid(), self.nice, self.memory_mb)
                    pool = WorkerPool(self.workers, worker_started, started)
                else:
                    self._count("visdup/early_processes", self.workers)
                pool.died = self._replaced
                self._pool = pool
                self._set_stat("visdup/analysis/processes", self.workers)
            return self._pool

    def warm(self) -> None:
        """Start every worker now, not as pages come (each imports the analysis as it starts,
        and takes pages once it is ready)."""
        try:
            self.start()
        except Exception:  # the system refuses processes now: the first page tries again
            logger.warning("visdup: cannot start the analysis workers yet", exc_info=True)

    async def analysed(self, item: PageBytes, options: AnalysisOptions) -> PageAnalysis:
        """The page item's analysis: in a worker process, awaited on the event loop (no thread
        of the crawl's process waits for it), or in a thread without workers. A page too big
        to analyse is counted (:meth:`_oversized`)."""
        result = await self._analysed(item, options)
        if result.problem is not None and result.problem.startswith("oversized:"):
            self._oversized(result.problem)
        return result

    def _oversized(self, problem: str) -> None:
        if problem == OUT_OF_MEMORY:
            self._count("visdup/analysis/out_of_memory", 1)
        else:
            self._count("visdup/pages_over_element_cap", 1)

    async def _analysed(self, item: PageBytes, options: AnalysisOptions) -> PageAnalysis:
        pool = self._pool  # not under the lock: a label process's restart may hold it
        if pool is None and self.workers:
            pool = await run_in_thread(self.start)
        if pool is None:
            return await run_in_thread(_analyse_here, item, options)
        job = self._job(item, options)
        for attempt in range(2):
            try:
                future = pool.submit(job)
            except RuntimeError:  # shut down, or no worker can start
                if attempt:
                    self._died_under(item.url, attempt)
                    break
                return await run_in_thread(_analyse_here, item, options)
            try:
                return await awaited(future)
            except WorkerDied:
                self._died_under(item.url, attempt)
        return PageAnalysis(
            url=item.url, body_hash=body_digest(item.body), problem="analysis worker died"
        )

    def _job(self, item: PageBytes, options: AnalysisOptions) -> Callable[[], PageAnalysis]:
        """The page's analysis as a worker runs it: from its bytes (no tree crosses)."""
        return partial(
            analyse_bytes,
            item.body,
            item.url,
            item.final_url,
            item.content_type,
            item.encoding,
            options,
        )

    def _replaced(self, exitcode: int | None, replaced: bool) -> None:
        if replaced:
            self._count("visdup/analysis/restarts", 1)
        logger.warning(
            "visdup: an analysis worker process died (exit code %s)%s",
            exitcode,
            "; a new one takes its place" if replaced else "",
        )

    def _died_under(self, url: str, attempt: int) -> None:
        if attempt == 0:
            self._count("visdup/analysis/retried", 1)
            logger.warning(
                "visdup: an analysis worker process died under %s; a new one analyses it again",
                url,
            )
        else:
            self._count("visdup/analysis/worker_died", 1)
            logger.error("visdup: %s kills the analysis worker process; stored unanalysed", url)

    def stop(self, wait: float = 10.0) -> None:
        """Stop the workers without waiting forever: one still on a page is killed at the end."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        pool.shutdown(wait=False, cancel_futures=True)
        processes = pool.processes  # after: none is started once it is shut down
        deadline = time.monotonic() + wait
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()


def _analyse_here(item: PageBytes, options: AnalysisOptions) -> PageAnalysis:
    return analyse(
        item.body,
        url=item.url,
        final_url=item.final_url,
        content_type=item.content_type,
        tree=item.tree,
        encoding=item.encoding,
        options=options,
    )
