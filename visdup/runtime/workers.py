"""Worker processes for the pages' analysis: a pipe each, one reader thread for them all.

Why not :class:`concurrent.futures.ProcessPoolExecutor`: it moves every task through a
manager thread and a feeder thread, three thread hand-offs a page in the crawl's process
(about half a millisecond of its CPU a page on a manual's small pages, with the GIL passed
each time), and one worker that dies breaks the whole pool with every page in flight. Here
the thread that submits a task writes it straight into an idle worker's pipe, or queues it;
one reader thread takes each answer and gives that worker the next queued task. A worker
that dies fails only the task it was on (:class:`WorkerDied`), and a new one takes its place.

Workers are spawned: a fresh interpreter, nothing of the reactor or the store is copied,
and nothing of the program's main script runs in it (:func:`spawn`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import selectors
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import BrokenExecutor, Executor, Future, InvalidStateError
from multiprocessing.connection import Connection
from typing import Any

from visdup.engine import usable_cores

logger = logging.getLogger(__name__)

#: Workers that may die before they are ready (an interpreter or an import that fails) before
#: the pool stops starting new ones; a worker that dies once ready is always replaced.
MAX_START_FAILURES = 10

#: What a worker sends once it is ready for tasks (its initializer done).
_READY = b"ready"


#: Held while one of visdup's processes starts with the main module out of sight.
_STARTING = threading.Lock()


def spawn(target: Callable[..., object], args: tuple[Any, ...], name: str) -> Any:
    """One of visdup's processes (the analysis workers, the label process), started: a fresh
    interpreter (nothing of the reactor or the store is copied) that runs ``target(*args)``
    and nothing of the program's main script (:func:`_main_script_unseen`)."""
    process = multiprocessing.get_context("spawn").Process(
        target=target, args=args, name=name, daemon=True
    )
    with _main_script_unseen(), _numerics_on_one_thread():
        process.start()
    return process


#: Thread counts for the numerical libraries a spawned process may load, unless the program's
#: environment sets its own. numpy's BLAS starts a thread for each core as it is imported, with
#: its buffers: CPU and memory at every start of the label process and of each worker, for a
#: library visdup calls on a few thousand numbers at a time (a page's shingle weights).
SPAWNED_THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def _numerics_on_one_thread() -> Iterator[None]:
    """While one of visdup's processes starts (under :data:`_STARTING`), the environment it
    inherits sets :data:`SPAWNED_THREADS`; the program's own is put back as soon as it has."""
    added = [name for name in SPAWNED_THREADS if name not in os.environ]
    for name in added:
        os.environ[name] = SPAWNED_THREADS[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def _main_script_unseen() -> Iterator[None]:
    """While one of visdup's processes starts, the program's main module shows neither its
    file nor its spec, so the spawned interpreter does not import it again.

    A spawned process imports the parent's main script (or ``-m`` module) before it runs its
    target, for what the script defines. visdup's processes run visdup's own functions on
    plain values and need nothing of it: a script that starts its crawl at the top level, as
    Scrapy's "run from a script" example does, would start that crawl again in each of them,
    and any other would import all it imports. Only the start is covered: the process reads
    the main module's description as it starts, and it is put back as soon as it has (a
    process that another thread of the program spawns in those milliseconds would start
    without the script too).
    """
    main = sys.modules.get("__main__")
    with _STARTING:
        if main is None:
            yield
            return
        names = main.__dict__
        hidden: dict[str, Any] = {n: names[n] for n in ("__file__", "__spec__") if n in names}
        names.pop("__file__", None)
        if "__spec__" in names:
            names["__spec__"] = None
        try:
            yield
        finally:
            names.update(hidden)


class WorkerDied(BrokenExecutor):
    """The worker process ended (killed, out of memory, a crash) while on this task."""


class _Worker:
    __slots__ = ("conn", "process", "ready", "task")

    def __init__(self, process: Any, conn: Connection):
        self.process = process
        self.conn = conn
        #: Whether it said it is ready: only then does it take tasks (a send to a worker still
        #: starting would wait for its imports).
        self.ready = False
        #: The future of the task the worker is on, None when idle.
        self.task: Future[Any] | None = None


class WorkerPool(Executor):
    """``count`` worker processes, each running ``initializer(*initargs)`` first."""

    def __init__(
        self,
        count: int,
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
        died: Callable[[int | None, bool], object] | None = None,
    ):
        """``died(exitcode, replaced)``: called (in the reader thread) for each worker that
        ends while the pool runs, whether a task was on it or not, and whether a new worker
        was started in its place."""
        if count < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._context = multiprocessing.get_context("spawn")
        self._initializer = initializer
        self._initargs = initargs
        #: Called for each worker that dies (settable: a pool started early gets it later).
        self.died = died
        # reentrant: shutdown's cancel() runs done callbacks under it, which may submit again
        self._lock = threading.RLock()
        self._workers: dict[Connection, _Worker] = {}
        self._idle: list[_Worker] = []
        self._queue: deque[tuple[Future[Any], bytes]] = deque()
        self._closed = False
        self._start_failures = 0
        # wakes the reader when the workers change or the pool closes
        self._wake_in, self._wake_out = self._context.Pipe(duplex=False)
        # what the reader waits on (only the reader touches it): the wake pipe, each worker
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_in, selectors.EVENT_READ)
        self._watched: set[Connection] = set()
        with self._lock:
            try:
                for _ in range(count):
                    self._start_worker()
            except BaseException:
                for worker in self._workers.values():
                    worker.process.kill()
                raise
        self._reader = threading.Thread(target=self._read, name="visdup-workers", daemon=True)
        self._reader.start()

    @property
    def processes(self) -> list[Any]:
        """The worker processes now alive or ending (for a caller that must kill them)."""
        with self._lock:
            return [w.process for w in self._workers.values()]

    def _start_worker(self) -> None:  # under the lock
        conn, child = self._context.Pipe()
        process = spawn(_serve, (child, self._initializer, self._initargs), "visdup-analysis")
        child.close()  # the worker's end: when it dies, this pool's end reads EOF
        self._workers[conn] = _Worker(process, conn)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """``fn(*args, **kwargs)`` in a worker; never blocks on a busy one (a task that does
        not pickle fails in its future). RuntimeError: the pool takes no more tasks (shut
        down, or its workers keep dying)."""
        future: Future[Any] = Future()
        try:
            payload = pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            future.set_exception(exc)
            return future
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a worker pool that is shut down")
            if not self._workers:
                raise RuntimeError("no worker process can start: they keep dying")
            self._queue.append((future, payload))
            self._dispatch()
        return future

    def _dispatch(self) -> None:  # under the lock
        """Queued tasks to idle workers. A send blocks only while the worker reads it: an
        idle worker is ready and waits in its pipe's read."""
        while self._idle and self._queue:
            future, payload = self._queue.popleft()
            if future.cancelled():
                continue  # cancelled while it waited
            worker = self._idle.pop()
            if not worker.process.is_alive():  # killed while idle: the reader replaces it
                self._queue.appendleft((future, payload))
                continue
            try:
                worker.conn.send_bytes(payload)
            except OSError:  # it died while idle, or its pipe broke: the task waits
                worker.process.kill()  # so that the reader sees its end and replaces it
                self._queue.appendleft((future, payload))
                continue
            future.set_running_or_notify_cancel()
            worker.task = future

    def _read(self) -> None:
        # one selector for the pool's life (a new one each wait cost the crawl's process
        # about as much as the answer it read); it follows the workers as they change
        selector = self._selector
        try:
            while True:
                with self._lock:
                    if self._closed and not self._workers:
                        return  # the wake pipe closes with the pool (shutdown may still write)
                    workers = set(self._workers)
                for conn in workers - self._watched:
                    selector.register(conn, selectors.EVENT_READ)
                self._watched = workers
                for key, _events in selector.select():
                    ready = key.fileobj
                    if ready is self._wake_in:
                        with contextlib.suppress(EOFError, OSError):
                            while self._wake_in.poll():
                                self._wake_in.recv_bytes()
                        continue
                    assert isinstance(ready, Connection)
                    self._answer(ready)
        finally:
            selector.close()

    def _answer(self, conn: Connection) -> None:
        with self._lock:
            worker = self._workers.get(conn)
        if worker is None:
            return
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            self._died(worker)
            return
        if not worker.ready:
            with self._lock:
                worker.ready = data == _READY
                if not worker.ready:  # not a worker of this pool's kind: it cannot take tasks
                    worker.process.kill()
                    return
                self._start_failures = 0
                self._idle.append(worker)
                self._idle_again()
            return
        try:
            ok, value = pickle.loads(data)
        except Exception as exc:  # an answer that does not unpickle here
            ok, value = False, exc
        with self._lock:
            future, worker.task = worker.task, None
            self._idle.append(worker)
            self._idle_again()
        if future is not None:
            with contextlib.suppress(InvalidStateError):  # cancelled as it was sent
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

    def _died(self, worker: _Worker) -> None:
        with self._lock:
            self._workers.pop(worker.conn, None)
            if worker in self._idle:
                self._idle.remove(worker)
            future, worker.task = worker.task, None
            if worker.conn in self._watched:  # before it closes: a new pipe may take its fd
                self._watched.discard(worker.conn)
                with contextlib.suppress(KeyError, ValueError, OSError):
                    self._selector.unregister(worker.conn)
            with contextlib.suppress(OSError):
                worker.conn.close()
            if not worker.ready:
                self._start_failures += 1
            replaced = False
            if not self._closed and self._start_failures < MAX_START_FAILURES:
                try:
                    self._start_worker()
                    replaced = True
                except Exception:
                    logger.exception("visdup: cannot start an analysis worker process")
            elif not self._closed and not worker.ready:
                logger.error(
                    "visdup: %d analysis worker processes in a row died as they started;"
                    " no more are started",
                    self._start_failures,
                )
            failed: list[Future[Any]] = []
            if self._workers:
                self._idle_again()
            else:  # none left and none can start: nothing queued will ever run
                failed = [f for f, _payload in self._queue]
                self._queue.clear()
        worker.process.join(1)
        code = worker.process.exitcode
        if self.died is not None and not self._closed:
            try:
                self.died(code, replaced)
            except Exception:
                logger.exception("visdup: a worker's death could not be reported")
        if future is not None:
            with contextlib.suppress(InvalidStateError):
                future.set_exception(WorkerDied(f"the worker process ended (exit code {code})"))
        for waiting in failed:
            if waiting.set_running_or_notify_cancel():
                waiting.set_exception(WorkerDied("the worker processes keep dying"))

    def _idle_again(self) -> None:  # under the lock
        """A worker became idle (or the workers changed): queued tasks go out, and once a
        shut-down pool has none left, its idle workers end."""
        self._dispatch()
        if self._closed and not self._queue:
            self._retire_idle()

    def _retire_idle(self) -> None:  # under the lock
        """Idle workers are told to end; the reader sees each one's pipe close and drops it
        (only the reader closes the pipes: it may be waiting on them)."""
        for worker in self._idle:
            with contextlib.suppress(OSError):
                worker.conn.send_bytes(b"")
        self._idle.clear()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking tasks; each worker ends once its task is done (``cancel_futures``:
        queued tasks are cancelled; without it they still run first)."""
        with self._lock:
            self._closed = True
            if cancel_futures:
                for future, _payload in self._queue:
                    future.cancel()
                self._queue.clear()
            pending = [f for f, _payload in self._queue]
            pending += [w.task for w in self._workers.values() if w.task is not None]
            if not self._queue:
                self._retire_idle()
        with contextlib.suppress(OSError):
            self._wake_out.send_bytes(b"")
        if wait:
            for future in pending:
                with contextlib.suppress(Exception):
                    future.exception()
            self._reader.join()


def deaf_to_stops() -> None:
    """This process (an analysis worker, the label process) ignores Ctrl-C and SIGTERM.

    Both reach every process of a group at once (Ctrl-C in a terminal, a service manager's or
    container's stop, ``kill -- -PGID``): the crawl's process decides what they mean (Scrapy's
    graceful stop, which still needs its workers and the label process for the pages in
    flight) and ends its processes itself, or they end when it is gone. Killed by them, each
    was taken for a crash and started again as the crawl was stopping."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _serve(conn: Connection, initializer: Callable[..., object] | None, initargs: Any) -> None:
    """A worker process: tasks in, answers out, until the pool's end of the pipe closes
    (:func:`deaf_to_stops`)."""
    deaf_to_stops()
    if initializer is not None:
        initializer(*initargs)
    conn.send_bytes(_READY)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if not data:  # the pool is shutting down
            return
        try:
            fn, args, kwargs = pickle.loads(data)
            answer: tuple[bool, Any] = (True, fn(*args, **kwargs))
        except Exception as exc:  # the task's own error goes back to its future
            answer = (False, exc)
        except BaseException as exc:  # SystemExit and the like: never raised in the crawl
            answer = (False, RuntimeError(f"the task ended its worker: {exc!r}"))
        try:
            out = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a result or error that does not pickle
            text = f"{type(exc).__name__}: {exc}"
            out = pickle.dumps((False, RuntimeError(f"the answer cannot be sent: {text}")))
        try:
            conn.send_bytes(out)
        except OSError:
            return


def run_pickled(task: bytes) -> bytes:
    """Run a pickled callable and return its result pickled: a task one process hands to
    another's workers through a process that only forwards the bytes (the label process's
    template builds, through the crawl's process: :mod:`visdup.runtime.relay`)."""
    result = pickle.loads(task)()
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


# ------------------------------------------------------------------ processes started early
#: Most worker processes VISDUP_ANALYSIS_PROCESSES = -1 starts: past them the crawl's own
#: process (Scrapy and the labelling) is what limits the pace.
AUTO_PROCESSES = 4


def analysis_processes(setting: int) -> int:
    """Worker processes for VISDUP_ANALYSIS_PROCESSES (-1: by the cores this process may use)."""
    if setting >= 0:
        return setting
    cores = usable_cores()
    return min(AUTO_PROCESSES, cores) if cores > 1 else 0
