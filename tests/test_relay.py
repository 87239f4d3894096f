"""The label process's template builds, run in the crawl's analysis workers
(visdup.runtime.relay): the same results as built where they are, and a build that cannot be
relayed fails so that it is built where it is."""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import BrokenExecutor, Executor, Future, ThreadPoolExecutor
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.conftest import FIXTURES
from tests.crawling import crawl
from visdup.demo.server import serve
from visdup.runtime.relay import Relay, Relayed, RelayPool, forward, reading_answers
from visdup.storage.store import Store

SITE = FIXTURES / "sites" / "templates"


def square(x: int) -> int:
    return x * x


def fails(x: int) -> int:
    raise ValueError(f"no square of {x}")


def loopback(workers: Any) -> tuple[RelayPool, list[str]]:
    """A relay pool whose messages reach ``forward`` directly, and its counts (answers read
    by no thread in particular: any may submit)."""
    counts: list[str] = []
    box: list[RelayPool] = []

    def send(message: Any) -> None:
        assert isinstance(message, Relay)
        forward(message, workers, box[0].resolve)

    pool = RelayPool(send, lambda key, n: counts.extend([key] * n))
    pool.reader = -1
    box.append(pool)
    return pool, counts


def test_a_relayed_task_gives_its_result_and_is_counted():
    with ThreadPoolExecutor(2) as threads:
        pool, counts = loopback(lambda: threads)
        jobs = [pool.submit(square, n) for n in range(20)]
        assert [job.result(timeout=10) for job in jobs] == [n * n for n in range(20)]
    assert counts == ["visdup/label_process/relayed"] * 20
    assert pool._pending == {}


class Refusing(Executor):
    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("cannot submit to a worker pool that is shut down")


@pytest.mark.parametrize(
    ("workers", "why"),
    [
        (None, "no analysis workers"),
        (lambda: None, "no analysis workers"),
        (lambda: Refusing(), "shut down"),
    ],
)
def test_a_task_no_worker_takes_fails_to_be_run_here(workers, why):
    pool, counts = loopback(workers)
    with pytest.raises(BrokenExecutor, match=why):
        pool.submit(square, 3).result(timeout=10)
    assert counts == []


def test_a_task_that_fails_in_the_worker_fails_here_too():
    with ThreadPoolExecutor(1) as threads:
        pool, _counts = loopback(lambda: threads)
        with pytest.raises(BrokenExecutor, match="no square of 4"):
            pool.submit(fails, 4).result(timeout=10)


def test_a_task_that_does_not_pickle_is_refused_at_once():
    pool, _counts = loopback(None)
    with pytest.raises(BrokenExecutor, match="cannot relay"):
        pool.submit(lambda: 1).result(timeout=1)


def test_tasks_waiting_when_the_crawls_process_goes_fail():
    sent: list[Relay] = []
    pool = RelayPool(sent.append)
    pool.reader = -1
    waiting = pool.submit(square, 2)
    assert len(sent) == 1 and not waiting.done()
    pool.shutdown()
    with pytest.raises(BrokenExecutor, match="gone"):
        waiting.result(timeout=1)
    with pytest.raises(BrokenExecutor, match="gone"):
        pool.submit(square, 2).result(timeout=1)
    pool.resolve(Relayed(sent[0].task, True, b""))  # an answer after the end changes nothing


def test_answers_are_read_off_the_pipe_while_the_label_process_closes():
    """During the close nothing else reads the pipe: the answers' reader settles each task,
    and a pipe that closes fails the tasks still waiting."""
    mine, theirs = multiprocessing.Pipe()
    pool = RelayPool(mine.send)
    served: list[Future[Any]] = []

    def crawl_side() -> None:  # what LabelService does with the relays it reads
        with ThreadPoolExecutor(1) as threads:
            for _ in range(3):
                relay = theirs.recv()
                forward(relay, lambda: threads, lambda answer: theirs.send((0, answer)))
        time.sleep(0.2)
        theirs.close()

    side = threading.Thread(target=crawl_side)
    side.start()
    with reading_answers(mine, pool):
        served = [pool.submit(square, n) for n in (2, 3)]
        assert [job.result(timeout=10) for job in served] == [4, 9]
        last = pool.submit(square, 5)
        assert last.result(timeout=10) == 25
        late = pool.submit(square, 6)  # sent, never answered: the pipe closes
        with pytest.raises(BrokenExecutor):
            late.result(timeout=10)
    side.join()


@deferred_f_from_coro_f
async def test_templates_built_in_the_workers_are_the_ones_built_here(tmp_path):
    """The same site crawled with the label process (its builds relayed to the analysis
    worker) and without worker processes (every build made in the crawl's process): the
    same templates stored."""
    stored = []
    for processes in (1, 0):
        db = f"sqlite:///{tmp_path / f'p{processes}.sqlite3'}"
        with serve(SITE) as server:
            crawler = await crawl(
                db, server.url_for("/"), settings={"VISDUP_ANALYSIS_PROCESSES": processes}
            )
            base = server.url
        stats = crawler.stats
        assert stats.get_value("visdup/errors") == 0
        assert stats.get_value("visdup/label_process", 0) == processes
        relayed = stats.get_value("visdup/label_process/relayed", 0)
        assert (relayed > 0) if processes else relayed == 0
        store = Store.from_url(db)
        try:
            rows = [(c.id, (c.template or "").replace(base, "")) for c in store.cluster_rows()]
        finally:
            store.close()
        assert any(template for _id, template in rows), "no template built"
        stored.append(sorted(rows))
    assert stored[0] == stored[1]


def test_the_thread_that_reads_the_answers_builds_where_it_is():
    """The label process's serving thread builds a cluster's first template itself when records
    are asked for: relayed, it would wait on answers only it reads."""
    sent: list[Relay] = []
    pool = RelayPool(sent.append)
    with pytest.raises(BrokenExecutor, match="would wait"):
        pool.submit(square, 2).result(timeout=1)
    assert sent == []
    other = ThreadPoolExecutor(1)
    try:
        job = other.submit(pool.submit, square, 2).result(timeout=10)
    finally:
        other.shutdown()
    assert len(sent) == 1 and not job.done()
    mine, _theirs = multiprocessing.Pipe()
    with reading_answers(mine, pool):  # the serving thread no longer reads: it may wait
        waiting = pool.submit(square, 3)
        assert len(sent) == 2 and not waiting.done()
    with pytest.raises(BrokenExecutor, match="would wait"):
        pool.submit(square, 4).result(timeout=1)


def test_a_worker_that_dies_under_a_relayed_task_fails_it_and_the_next_runs():
    """An analysis worker killed under a relayed build (the OOM killer) fails that build, which
    is then made in the label process; the pool's new worker takes the next one."""
    import os

    from visdup.runtime.workers import WorkerPool

    workers = WorkerPool(1)
    try:
        pool, counts = loopback(lambda: workers)
        with pytest.raises(BrokenExecutor, match="WorkerDied"):
            pool.submit(os._exit, 9).result(timeout=60)
        assert pool.submit(square, 7).result(timeout=60) == 49
    finally:
        workers.shutdown()
    assert counts == ["visdup/label_process/relayed"]
