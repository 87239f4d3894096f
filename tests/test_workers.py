"""The analysis worker processes (visdup.runtime.workers): real spawned processes, killed for
real."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import CancelledError, wait

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.crawling import crawl_settings
from visdup.context import CrawlContext
from visdup.items import Page
from visdup.runtime.workers import WorkerDied, WorkerPool
from visdup.spiders.site import SiteSpider


def square(x: int) -> int:
    return x * x


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def fails() -> None:
    raise ValueError("the task's own error")


def blas_threads() -> str | None:
    """The thread count the worker's BLAS reads as numpy loads."""
    return os.environ.get("OPENBLAS_NUM_THREADS")


def dies() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _busy(pool: WorkerPool, count: int) -> list[int]:
    """Pids of the workers that were sent a task, once ``count`` of them were (a worker is
    sent one only once it is ready)."""
    for _ in range(400):
        busy = [w.process.pid for w in list(pool._workers.values()) if w.task is not None]
        if len(busy) >= count:
            return busy
        time.sleep(0.01)
    raise AssertionError("the workers never took their tasks")


def test_tasks_answers_and_their_own_errors():
    pool = WorkerPool(2)
    try:
        assert [f.result(30) for f in [pool.submit(square, n) for n in range(50)]] == [
            n * n for n in range(50)
        ]
        with pytest.raises(ValueError, match="own error"):
            pool.submit(fails).result(30)
        with pytest.raises(TypeError, match="pickle"):
            pool.submit(square, threading.Lock()).result(30)  # never leaves this process
        assert pool.submit(square, 7).result(30) == 49
        assert len({p.pid for p in pool.processes}) == 2
    finally:
        pool.shutdown()


def test_workers_load_numerical_libraries_on_one_thread(monkeypatch):
    """A worker does not start a BLAS thread for each core for a library it hardly uses; a
    setting of the program's own is kept, and the program's environment is left as it was."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    pool = WorkerPool(1)
    try:
        setting = pool.submit(blas_threads).result(60)
    finally:
        pool.shutdown()
    assert setting == "1"
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    pool = WorkerPool(1)
    try:
        assert pool.submit(blas_threads).result(60) == "3"
    finally:
        pool.shutdown()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"


def test_a_worker_that_dies_fails_only_its_task_and_is_replaced():
    deaths: list[tuple[int | None, bool]] = []
    pool = WorkerPool(2, died=lambda code, replaced: deaths.append((code, replaced)))
    try:
        slow = pool.submit(pid_after, 1.0)
        killed = pool.submit(pid_after, 30.0)
        _busy(pool, 2)
        [victim] = [w.process.pid for w in pool._workers.values() if w.task is killed]
        os.kill(victim, signal.SIGKILL)
        done, _ = wait([slow, killed], timeout=30, return_when="ALL_COMPLETED")
        assert len(done) == 2
        outcomes = sorted([type(f.exception()).__name__ for f in (slow, killed)])
        assert outcomes == ["NoneType", "WorkerDied"]
        assert deaths == [(-signal.SIGKILL, True)]
        # the dead worker's place is taken: two workers again, and they work
        assert len(pool.processes) == 2 and all(p.is_alive() for p in pool.processes)
        assert sorted(f.result(30) for f in [pool.submit(square, n) for n in range(6)]) == [
            0,
            1,
            4,
            9,
            16,
            25,
        ]
        # a task that kills its worker fails alone, the next ones run
        with pytest.raises(WorkerDied, match="exit code -9"):
            pool.submit(dies).result(30)
        assert pool.submit(square, 3).result(30) == 9
        # an idle worker that dies is replaced too
        os.kill(pool.processes[0].pid, signal.SIGKILL)
        for _ in range(3000):
            if len(deaths) == 3:
                break
            time.sleep(0.01)
        assert len(deaths) == 3
        assert [pool.submit(square, 2).result(30) for _ in range(4)] == [4] * 4
    finally:
        pool.shutdown()


def test_workers_that_die_one_after_another_are_each_replaced():
    # each replacement's pipe tends to take the dead one's file descriptors: the reader must
    # wait on the new pipe, never on the closed one
    deaths: list[tuple[int | None, bool]] = []
    pool = WorkerPool(1, died=lambda code, replaced: deaths.append((code, replaced)))
    try:
        for n in range(6):
            with pytest.raises(WorkerDied):
                pool.submit(dies).result(30)
            assert pool.submit(square, n).result(30) == n * n
        assert deaths == [(-signal.SIGKILL, True)] * 6
        assert len(pool.processes) == 1
    finally:
        pool.shutdown()


def test_shutdown_ends_every_worker_and_takes_no_more_tasks():
    pool = WorkerPool(1)
    running = pool.submit(pid_after, 0.5)
    queued = pool.submit(square, 5)
    _busy(pool, 1)
    processes = pool.processes
    pool.shutdown(wait=True, cancel_futures=True)
    assert running.result(0) > 0  # the task a worker was on is finished first
    with pytest.raises(CancelledError):
        queued.result(0)
    assert not pool._reader.is_alive()
    for process in processes:
        process.join(10)
        assert not process.is_alive()
    with pytest.raises(RuntimeError):
        pool.submit(square, 1)


@deferred_f_from_coro_f
async def test_a_page_that_kills_its_worker_twice_is_stored_unanalysed(tmp_path, monkeypatch):
    """Once a worker dies under a page, a new one analyses it again; dying under it again,
    the page gets the problem and the crawl's workers go on."""
    crawler = get_crawler(SiteSpider, crawl_settings(f"sqlite:///{tmp_path / 'w.sqlite3'}"))
    context = CrawlContext.of(crawler)
    context.analysis.workers = 1
    pool = context.analysis.start()
    assert pool is not None
    try:
        page = Page(
            url="http://example.test/a.html", final_url="http://example.test/a.html", status=200
        )
        page.body = b"<html><body><p>Killer</p></body></html>"
        monkeypatch.setattr(context.analysis, "_job", lambda item, options: dies)
        analysis = await context.analysis.analysed(page, context.options)
        assert analysis.problem == "analysis worker died" and analysis.term is None
        stats = crawler.stats
        assert stats.get_value("visdup/analysis/retried") == 1
        assert stats.get_value("visdup/analysis/worker_died") == 1
        assert stats.get_value("visdup/analysis/restarts") == 2
        monkeypatch.undo()
        analysis = await context.analysis.analysed(page, context.options)
        assert analysis.problem is None and analysis.term is not None
    finally:
        pool.shutdown()
        context.store.close()


def test_workers_that_die_as_they_start_take_no_task_and_are_not_started_forever(monkeypatch):
    """A worker that cannot start (its initializer fails: a broken install) is never sent a
    task, so no page is blamed for it; after a few, the pool starts no more and says so to its
    callers (RuntimeError), who then analyse elsewhere."""
    import visdup.runtime.workers as workers

    monkeypatch.setattr(workers, "MAX_START_FAILURES", 3)
    deaths: list[tuple[int | None, bool]] = []
    pool = WorkerPool(
        1, initializer=fails, died=lambda code, replaced: deaths.append((code, replaced))
    )
    try:
        waiting = pool.submit(square, 4)
        with pytest.raises(WorkerDied, match="keep dying"):
            waiting.result(60)
        assert [replaced for _code, replaced in deaths] == [True, True, False]
        with pytest.raises(RuntimeError):
            pool.submit(square, 1)
    finally:
        pool.shutdown()
