"""The label process's template builds, run in the crawl's analysis worker processes.

A template build is matching in C plus Python around it. In the label process it shares that
process's interpreter lock with the labelling, and as a crawl ends with its final pass: on two
cores the final pass, the builds and the lock's hand-overs kept both cores about two thirds
busy, and the crawl's end waited for them. The analysis workers are warm and idle by then, each
with an interpreter of its own. So the label process hands each build (:class:`RelayPool`, the
executor its template clusters build with) to the crawl's process, which runs it in a worker
(:func:`forward`) and hands the result back; the crawl's process only forwards bytes, it
unpickles neither the sample's trees nor the template.

A build that cannot be relayed (no workers, a worker that died under it, the crawl's process
gone) fails with :class:`~concurrent.futures.BrokenExecutor`, and the template clusters build it
in the label process instead (:meth:`visdup.templates.assign.CrawlClusters._build`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import pickle
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import BrokenExecutor, Executor, Future
from dataclasses import dataclass
from functools import partial
from typing import Any

from visdup.runtime.workers import run_pickled

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Relay:
    """Run ``payload`` (a pickled callable) in an analysis worker: the label process asks the
    crawl's process."""

    task: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class Relayed:
    """The answer to :class:`Relay` ``task``: the result pickled, or (``ok`` False) why it
    could not run there."""

    task: int
    ok: bool
    value: bytes | str


class RelayPool(Executor):
    """The label process's side: an executor whose tasks run in the crawl's analysis workers.

    ``send`` writes a message to the crawl's process. The answers come back on the pipe the
    label process reads its calls from; whoever reads it hands them to :meth:`resolve`.
    ``count`` counts each task that ran in a worker (``visdup/label_process/relayed``).
    A task submitted from the thread that reads the answers (the label process's serving
    thread, which builds a cluster's first template itself when records are asked for) would
    wait on its own reading: it fails at once, and is run where it is.
    """

    def __init__(
        self, send: Callable[[Any], None], count: Callable[[str, int], None] | None = None
    ):
        self._send = send
        self._count = count
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._closed = False
        #: The thread that reads the answers (the one that made the pool, until
        #: :func:`reading_answers` reads them in a thread of its own).
        self.reader = threading.get_ident()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        if threading.get_ident() == self.reader:
            future.set_exception(BrokenExecutor("the thread that reads the answers would wait"))
            return future
        try:
            payload = pickle.dumps(partial(fn, *args, **kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # the task does not pickle: run it where it is
            future.set_exception(BrokenExecutor(f"cannot relay {fn!r}: {exc}"))
            return future
        with self._lock:
            if self._closed:
                future.set_exception(BrokenExecutor("the crawl's process is gone"))
                return future
            task = next(self._ids)
            self._pending[task] = future
        try:
            self._send(Relay(task, payload))
        except Exception as exc:  # the pipe is gone
            self._fail(task, f"cannot reach the crawl's process: {exc}")
        return future

    def resolve(self, answer: Relayed) -> None:
        """Settle the task ``answer`` answers (from the thread that reads the pipe)."""
        if not answer.ok:
            self._fail(answer.task, str(answer.value))
            return
        with self._lock:
            future = self._pending.pop(answer.task, None)
        if future is None:
            return
        try:
            assert isinstance(answer.value, bytes)
            result = pickle.loads(answer.value)
        except Exception as exc:
            future.set_exception(BrokenExecutor(f"cannot read the relayed result: {exc}"))
            return
        if self._count is not None:
            self._count("visdup/label_process/relayed", 1)
        future.set_result(result)

    def _fail(self, task: int, why: str) -> None:
        with self._lock:
            future = self._pending.pop(task, None)
        if future is not None:
            future.set_exception(BrokenExecutor(why))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The crawl's process is gone: tasks waiting on it fail (and run where they are)."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(BrokenExecutor("the crawl's process is gone"))


def forward(
    relay: Relay,
    workers: Callable[[], Executor | None] | None,
    answer: Callable[[Relayed], None],
) -> None:
    """The crawl's side: run ``relay``'s task in an analysis worker; ``answer`` gets the
    result (from whichever thread finishes it). Never raises."""
    pool = None
    try:
        pool = workers() if workers is not None else None
    except Exception:
        logger.debug("visdup: no analysis workers for a relayed task", exc_info=True)
    if pool is None:
        answer(Relayed(relay.task, False, "no analysis workers"))
        return
    try:
        job = pool.submit(run_pickled, relay.payload)
    except Exception as exc:  # the pool is shut down, or its workers keep dying
        answer(Relayed(relay.task, False, f"{type(exc).__name__}: {exc}"))
        return

    def done(job: Future[bytes]) -> None:
        try:
            answer(Relayed(relay.task, True, job.result()))
        except BaseException as exc:  # the task's error, a worker that died, a cancel
            answer(Relayed(relay.task, False, f"{type(exc).__name__}: {exc}"))

    job.add_done_callback(done)


@contextlib.contextmanager
def reading_answers(conn: Any, pool: RelayPool) -> Iterator[None]:
    """While the block runs, a thread reads ``conn`` for :class:`Relayed` answers: for the
    label process's last call (its close), when nothing else reads the pipe and the final
    builds wait on their answers. Only answers may come meanwhile (the crawl's process sends
    no call after the close)."""
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                if not conn.poll(0.01):  # the close waits for this thread to see the stop
                    continue
                message = conn.recv()
            except (EOFError, OSError):
                pool.shutdown()
                return
            request = message[1] if isinstance(message, tuple) else message
            if isinstance(request, Relayed):
                pool.resolve(request)

    reader = threading.Thread(target=read, name="visdup-relay-answers", daemon=True)
    reader.start()
    assert reader.ident is not None
    serving, pool.reader = pool.reader, reader.ident  # the serving thread may wait meanwhile
    try:
        yield
    finally:
        stop.set()
        reader.join()
        pool.reader = serving
