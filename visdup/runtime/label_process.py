"""The label process: a crawl's labelling in a process of its own.

With analysis in worker processes, what is left in the crawl's process is Scrapy and the
labelling (:class:`visdup.dedup.labelling.Labelling`), and the labelling alone costs about as
much as Scrapy's own work on a page: the crawl's pace halves, however many cores it has. So, by
default, a crawl that analyses in worker processes also labels in a process of its own
(:func:`serve`), the *label process*. The crawl's process sends it each page's analysis and its
facts (:class:`~visdup.dedup.jobs.PageJob`), and gets back a small
:class:`~visdup.dedup.jobs.Outcome`.

The label process is the crawl's only writer of pages: the store, the indexes and the
template clusters live there, in one process, as in a crawl without it. Pages are labelled in
the order they arrive, one transaction each. If it dies (killed, out of memory), a new one
starts and warms its indexes from the store, as a resumed crawl does; the page in flight is
sent again once. It ends by itself when the crawl's process is gone (SIGKILL). Its log records
go to the crawl's log.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import logging
import multiprocessing
import os
import queue
import resource
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from visdup.dedup.analysis import worker_started
from visdup.dedup.jobs import LabelFailed
from visdup.errors import VisdupError
from visdup.runtime.relay import Relay, Relayed, RelayPool, forward, reading_answers
from visdup.runtime.workers import deaf_to_stops, spawn
from visdup.storage.store import Store

if TYPE_CHECKING:
    from visdup.config import Options
    from visdup.dedup.analysis import PageAnalysis
    from visdup.dedup.jobs import PageJob
    from visdup.dedup.labelling import Labelling
    from visdup.drift.snapshot import SnapshotInfo
    from visdup.templates.signature import TemplateInput


class LabelStart(Protocol):
    """A label process started before its setup existed (made by
    :class:`visdup.runtime.early.LabelStart`, which imports this module only in the process it
    starts, so that the crawl's process starts it before importing the labelling)."""

    conn: Any
    process: Any

    def discard(self) -> None: ...


logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------- the label process
@dataclass
class ServiceSetup:
    """All the label process starts from (it crosses to the new process)."""

    config: Options
    database_url: str
    run_id: int | None
    #: The snapshot the crawl's process opened: its row, whether it was resumed, the templates
    #: as the run found them, and the pages it held when the run began.
    snapshot: tuple[SnapshotInfo, bool, dict[int, str], int] | None
    parent: int
    log_level: int = logging.INFO


@dataclass(frozen=True, slots=True)
class Assign:
    """Place a page in its template cluster (:meth:`Labelling.assign`)."""

    url: str
    page: TemplateInput


@dataclass(frozen=True, slots=True)
class Label:
    """Label a page and store it (:meth:`Labelling.label`); ``place``: first place it in its
    template cluster; ``retry``: it may be stored already (sent again after a death)."""

    job: PageJob
    analysis: PageAnalysis | None
    place: bool = False
    retry: bool = False


@dataclass(frozen=True, slots=True)
class Close:
    """End the run's labelling (:meth:`Labelling.close`): the label process then ends."""

    reason: str | None


#: What the crawl's process asks of the label process.
Request = Assign | Label | Close


@dataclass(frozen=True, slots=True)
class Ready:
    """The label process is up: the pages its indexes hold, the stats it counted so far."""

    warmed: int
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class Failed:
    """The label process could not start (the error, in one line)."""

    error: str


@dataclass(frozen=True, slots=True)
class Log:
    """A log record of the label process, for the crawl's log."""

    logger: str
    level: int
    text: str


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to call ``call``: its value, or (``ok`` False) its error's text and where a
    page was placed before it failed; the stats counted since the last message."""

    call: int
    ok: bool
    value: Any
    counts: dict[str, int]


class ServiceError(VisdupError):
    """A step failed in the label process (its message names the error)."""


class ServiceGone(VisdupError):
    """The label process ended before it answered.

    ``suspect``: the call was the one it was working on (it answers in order), so the page may
    be what killed it; the calls queued behind it are not to blame.
    """

    def __init__(self, message: str, *, suspect: bool = True):
        super().__init__(message)
        self.suspect = suspect


class _Counter:
    """Stat increments made in the label process, sent back with the next answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def __call__(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + n

    def drain(self) -> dict[str, int]:
        with self._lock:
            counts, self._counts = self._counts, {}
        return counts


class _ToParent(logging.Handler):
    """Log records of the label process, sent to the crawl's log."""

    def __init__(self, send: Callable[[Any], None]):
        super().__init__()
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + "".join(traceback.format_exception(*record.exc_info))
            self._send(Log(record.name, record.levelno, message))
        except Exception:  # the crawl's process is gone: nothing to tell
            pass


def serve(conn: Any, setup: ServiceSetup) -> None:
    """The label process: answer calls in the order they come until told to close."""
    deaf_to_stops()
    worker_started(setup.parent)
    send_lock = threading.Lock()

    def send(message: Any) -> None:
        with send_lock:
            conn.send(message)

    root = logging.getLogger()
    root.handlers[:] = [_ToParent(send)]
    root.setLevel(setup.log_level)
    counter = _Counter()
    builds = RelayPool(send, counter)  # template builds, run in the crawl's analysis workers
    try:
        labelling = _open(setup, counter, builds)
    except BaseException as exc:
        logger.exception("visdup: the label process cannot start")
        send(Failed(f"{type(exc).__name__}: {exc}"))
        return
    send(Ready(labelling.warmed, counter.drain()))
    serial = 0.0
    while True:
        # a page's serial work counts its call's reading (the analysis unpickled) and its
        # answer's sending as well as its labelling: this thread does each one in turn
        started = time.thread_time()
        try:
            message = conn.recv()
        except (EOFError, OSError):
            builds.shutdown()
            return  # the crawl's process is gone
        call, request = message
        if isinstance(request, Relayed):
            builds.resolve(request)
            continue
        try:
            closing = isinstance(request, Close)  # nothing else reads the pipe while it closes
            with reading_answers(conn, builds) if closing else contextlib.nullcontext():
                value = _answer(labelling, request, counter, serial)
            reply = Reply(call, True, value, counter.drain())
        except Exception as exc:
            # the crawl's process logs it (once): the reply carries the traceback
            logger.debug("visdup: %r failed in the label process", request, exc_info=True)
            where = "".join(traceback.format_exception(exc)[:-1]).rstrip()  # its last line: below
            text = f"{type(exc).__name__}: {exc}\n{where}"
            placed = exc.assignment if isinstance(exc, LabelFailed) else None
            reply = Reply(call, False, (text, placed), counter.drain())
        send(reply)
        if isinstance(request, Close):
            _leave()
        serial += time.thread_time() - started


def answer(labelling: Labelling, request: Request) -> Any:
    """What ``labelling`` answers ``request`` (in the label process, or in the crawl's)."""
    match request:
        case Assign(url, page):
            return labelling.assign(url, page)
        case Label(job, analysis, place, retry):
            return labelling.label(job, analysis, place, retry)  # type: ignore[arg-type]
        case Close(reason):
            return labelling.close(reason)
    raise ValueError(f"no such request {request!r}")


def _answer(labelling: Labelling, request: Request, counter: _Counter, serial: float) -> Any:
    """:func:`answer`, and at the end the label process's own figures."""
    if not isinstance(request, Close):
        return answer(labelling, request)
    # the pages' own work, one after another: what bounds the crawl's pace once the cores are
    # enough for the rest (template builds run in the analysis workers, or in a thread)
    counter("visdup/label_process/serial_cpu_ms", round(1000 * serial))
    totals = answer(labelling, request)
    labelling.store.close()
    used = resource.getrusage(resource.RUSAGE_SELF)
    counter("visdup/label_process/cpu_ms", round(1000 * (used.ru_utime + used.ru_stime)))
    return totals


def serve_when_set_up(conn: Any) -> None:
    """A label process started before its crawl opened (:class:`visdup.runtime.early.LabelStart`):
    what the labelling needs is imported first, then it waits for its setup. A closed pipe
    (the crawl did not need it, or is gone) ends it."""
    deaf_to_stops()
    for module in _LABEL_MODULES:
        importlib.import_module(module)
    try:
        setup = conn.recv()
    except (EOFError, OSError):
        return
    if isinstance(setup, ServiceSetup):
        serve(conn, setup)


#: What the label process imports as it opens its labelling (beside this module's own, which
#: leaves the labelling to it: the crawl's process imports this module too).
_LABEL_MODULES = (
    "visdup.dedup.labelling",
    "visdup.drift.snapshot",
    "visdup.structure.distance",
    "visdup.structure.fingerprint",
    "visdup.content.textprint",
    "sqlalchemy.dialects.sqlite",
)


def _leave() -> None:
    """End the label process once its last reply is sent: its store is closed and nothing
    is left to write, so the interpreter's teardown (freeing every object of the indexes
    and caches, a fifth of a second on a manual's crawl) would only hold the crawl's end."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _open(setup: ServiceSetup, counter: _Counter, builds: Executor) -> Labelling:
    from visdup.drift.snapshot import Snapshot

    store = Store.from_url(setup.database_url)  # the crawl's process holds the writer lock
    store.index_layout = setup.config.index_layout
    snapshot = None
    if setup.snapshot is not None:
        info, resumed, start_templates, held_at_start = setup.snapshot
        snapshot = Snapshot(
            store,
            info,
            resumed=resumed,
            sample_size=setup.config.drift_sample,
            min_fit=setup.config.extract_min_fit,
            start_templates=start_templates,
        )
        # after a label process died: the rows it had not written yet, and its count
        snapshot.recover(setup.run_id, held_at_start)
    from visdup.dedup.labelling import Labelling  # this process labels

    return Labelling(
        store,
        setup.config,
        run_id=setup.run_id,
        snapshot=snapshot,
        count=counter,
        processes=lambda: builds,
        durable_snapshot=True,
    )


def _state(pid: int) -> tuple[str, int | None]:
    """A process's state letter (``T``: stopped) and CPU ticks used, from /proc (``?`` and
    None where there is none: not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return "?", None


class LabelService:
    """The crawl's side of the label process: calls from any thread, answered as futures.

    One thread sends the calls in the order they were made (it pickles them, and its send
    blocks while the label process works and its pipe is full), one reads the answers; so a
    caller, the event loop included, only ever queues a call and waits on its future.
    """

    #: Seconds the label process may take to warm its indexes before the crawl gives up.
    START_TIMEOUT = 600.0
    #: Seconds without a word from the label process, with calls waiting, before the crawl
    #: says so (:meth:`_silent`): stopped (SIGSTOP, a debugger), it stalled the crawl quietly.
    SILENCE = 60.0

    def __init__(
        self,
        setup: ServiceSetup,
        counts: Callable[[dict[str, int]], None],
        started: LabelStart | None = None,
        workers: Callable[[], Executor | None] | None = None,
    ):
        """``started``: a label process started before the setup existed (it takes it now);
        ``workers``: the crawl's analysis workers, which run the label process's template
        builds (:mod:`visdup.runtime.relay`)."""
        self.setup = setup
        self._counts = counts
        self._workers = workers
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._outbox: queue.SimpleQueue[tuple[int, Request | Relayed] | None] = queue.SimpleQueue()
        self._ready: Future[int] = Future()
        self._gone = False
        self._conn, self.process = self._early(started, setup) or self._spawn(setup)
        self._reader = threading.Thread(target=self._read, name="visdup-label-reader", daemon=True)
        self._reader.start()
        self._sender = threading.Thread(target=self._send, name="visdup-label-sender", daemon=True)
        self._sender.start()

    @staticmethod
    def _spawn(setup: ServiceSetup) -> tuple[Any, Any]:
        conn, child = multiprocessing.get_context("spawn").Pipe()
        process = spawn(serve, (child, setup), "visdup-label")
        child.close()
        return conn, process

    @staticmethod
    def _early(started: LabelStart | None, setup: ServiceSetup) -> tuple[Any, Any] | None:
        """The early process with its setup sent; None when there is none or it is gone."""
        if started is None:
            return None
        try:
            started.conn.send(setup)
        except OSError:  # it died as it started: a new one is spawned
            started.discard()
            return None
        return started.conn, started.process

    def warmed(self) -> int:
        """Pages the label process's indexes hold from earlier runs (waits until it is up)."""
        return self._ready.result(timeout=self.START_TIMEOUT)

    def call(self, request: Request, timeout: float | None = None) -> Any:
        """The answer to ``request`` (blocking)."""
        return self.submit(request).result(timeout=timeout)

    def submit(self, request: Request) -> Future[Any]:
        """``request`` queued for the label process; never blocks. Its future carries the answer,
        or :class:`ServiceGone`, or the call's own error (one that does not pickle); it cannot
        be cancelled (the call may be on its way). ServiceGone is raised here when the label
        process is known to be gone."""
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()  # an awaiter's cancel leaves the call alone
        # Ids are taken and queued under one lock, so the process receives calls in id order
        # and answers them so: when it dies, the oldest call still waiting is the one it was on.
        with self._lock:
            if self._gone:
                raise ServiceGone("the label process has ended", suspect=False)
            call = next(self._ids)
            self._pending[call] = future
            self._outbox.put((call, request))
        return future

    def _send(self) -> None:
        while (message := self._outbox.get()) is not None:
            call = message[0]
            try:
                self._conn.send(message)
            except BaseException as exc:
                with self._lock:
                    future = self._pending.pop(call, None)
                if future is None:  # answered already: the process is gone (see _read)
                    continue
                if isinstance(exc, OSError) or not self.process.is_alive():
                    exc = ServiceGone(f"the label process has ended: {exc}", suspect=False)
                # else the call itself cannot be sent (it does not pickle): its own error
                with contextlib.suppress(InvalidStateError):
                    future.set_exception(exc)

    def _heard(self) -> None:
        """Returns once the label process has said something (or its pipe closed). While calls
        wait on it without a word for :attr:`SILENCE` seconds and it uses no CPU (stopped, or
        stuck: a long final pass at work is left alone), the crawl's log says so, once."""
        silent_since: float | None = None
        cpu: int | None = None
        warned = False
        while not self._conn.poll(min(self.SILENCE, 5.0)):
            with self._lock:
                waiting = len(self._pending)
            now = time.monotonic()
            if not waiting:
                silent_since = None
            elif silent_since is None:
                silent_since, cpu = now, _state(self.process.pid)[1]
            elif not warned and now - silent_since >= self.SILENCE:
                state, used = _state(self.process.pid)
                if state not in {"T", "t"} and used is not None and used != cpu:
                    silent_since, cpu = now, used  # at work: silence counts from here
                    continue
                warned = True
                self._silent(waiting, now - silent_since, state)
        if warned:
            logger.warning("visdup: the label process answers again")

    def _silent(self, waiting: int, seconds: float, state: str) -> None:
        pid = self.process.pid
        if state in {"T", "t"}:
            what = (
                f"it is stopped (SIGSTOP, a debugger); `kill -CONT {pid}` resumes it, "
                f"`kill -9 {pid}` makes the crawl start a new one"
            )
        else:
            what = (
                f"it uses no CPU (waiting on the store's locks?); `kill -9 {pid}` makes the "
                "crawl start a new one (the pages in flight are sent to it again)"
            )
        logger.warning(
            "visdup: the label process (pid %d) has not answered for %.0f s, %d calls waiting, "
            "and the crawl waits for it: %s",
            pid,
            seconds,
            waiting,
            what,
        )

    def _read(self) -> None:
        try:
            while True:
                try:
                    self._heard()
                    message = self._conn.recv()
                except (EOFError, OSError):
                    return
                match message:
                    case Log(name, level, text):
                        logging.getLogger(name).log(level, "%s", text)
                    case Ready(warmed, counts):
                        self._counts(counts)
                        self._ready.set_result(warmed)
                    case Failed(error):
                        self._ready.set_exception(ServiceError(error))
                        return
                    case Relay():
                        forward(message, self._workers, self._relayed)
                    case Reply(call, ok, value, counts):
                        self._counts(counts)
                        with self._lock:
                            future = self._pending.pop(call, None)
                        if future is None:
                            continue
                        if ok:
                            future.set_result(value)
                        else:
                            text, placed = value
                            future.set_exception(
                                ServiceError(text) if placed is None else LabelFailed(text, placed)
                            )
        finally:
            with self._lock:
                self._gone = True
                pending, self._pending = self._pending, {}
            if not self._ready.done():
                self._ready.set_exception(ServiceGone("the label process ended as it started"))
            for call in sorted(pending):
                future = pending[call]
                if not future.done():
                    suspect = call == min(pending)
                    future.set_exception(
                        ServiceGone("the label process ended before it answered", suspect=suspect)
                    )

    def _relayed(self, answer: Relayed) -> None:
        """A relayed build's answer, sent after the calls queued before it (any thread)."""
        self._outbox.put((0, answer))

    def stop(self, wait: float = 10.0) -> None:
        """End the process now (it is killed when it does not end within ``wait``)."""
        self.process.join(wait)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self._reader.join(5)  # it sees the pipe's end once the process is gone
        with self._lock:  # no call queued behind the end
            self._gone = True
            self._outbox.put(None)  # after what is queued, which fails on the closed pipe
        self._sender.join(5)
        with contextlib.suppress(OSError):
            self._conn.close()
