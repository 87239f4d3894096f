"""Labelling a crawl's pages: in the crawl's process, or in a process of its own.

:class:`Labelling` holds what placing and labelling a page needs (the store, the labeller's
indexes, the template clusters, the site's title affixes, the drift snapshot) and does both
steps for one page at a time: :meth:`Labelling.assign` (its template cluster) and
:meth:`Labelling.label` (candidates, confirmation, verdict, one transaction), or both in one
call (``label(place=True)``: what a crawl with both pipelines sends, so a page crosses once).

With analysis in worker processes, what is left in the crawl's process is Scrapy and this
labelling, and the labelling alone costs about as much as Scrapy's own work on a page: the
crawl's pace halves, however many cores it has. So, by default, a crawl that analyses in
worker processes also labels in a process of its own (:func:`serve`), the *label process*.
The crawl's process sends it each page's analysis and its facts (:class:`PageJob`), and gets
back a small :class:`Outcome`: the verdict, what the spider middlewares and the stats need.

The label process is the crawl's only writer of pages: the store, the indexes and the
template clusters live there, in one process, as in a crawl without it. Pages are labelled in
the order they arrive, one transaction each, as before. If it dies (killed, out of memory), a
new one starts and warms its indexes from the store, as a resumed crawl does; the page in
flight is sent again once. It ends by itself when the crawl's process is gone (SIGKILL).
Its log records go to the crawl's log.
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
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from visdup.content.titles import SiteTitles
from visdup.dedup.analysis import PageAnalysis, worker_started
from visdup.dedup.label import Labeller, build_labeller
from visdup.dedup.settle import settle_labels
from visdup.drift.crawl import close_crawl_snapshot, record_page
from visdup.errors import VisdupError
from visdup.storage.store import Store
from visdup.templates.assign import Assignment, CrawlClusters
from visdup.templates.signature import TemplateInput
from visdup.verdicts import NOVEL
from visdup.workers import spawn

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from visdup.drift.snapshot import Snapshot, SnapshotInfo
    from visdup.early import LabelStart

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PageJob:
    """What labelling reads of a page item, besides its analysis (it crosses to the label
    process; the names are the item's, so the snapshot reads either)."""

    url: str
    final_url: str | None = None
    status: int | None = None
    depth: int | None = None
    referer: str | None = None
    content_type: str | None = None
    encoding: str | None = None
    links: list[str] = field(default_factory=list)
    body: bytes | None = None
    cluster: int | None = None
    fit: float | None = None

    #: The fetch's own facts, as the store's page record names them.
    FETCH = ("final_url", "status", "depth", "referer", "content_type", "encoding", "links")

    @classmethod
    def of(cls, item: Any, body: bytes | None) -> PageJob:
        """The job of a page item (``body``: what the store is to keep, or None)."""
        fields = {name: getattr(item, name) for name in cls.FETCH}
        fields["links"] = list(fields["links"])
        return cls(url=item.url, body=body, cluster=item.cluster, fit=item.fit, **fields)

    def fetch(self) -> dict[str, Any]:
        facts = {name: getattr(self, name) for name in self.FETCH}
        facts["links"] = list(facts["links"])
        return facts


@dataclass(slots=True)
class Outcome:
    """What labelling tells the crawl of a page."""

    #: The new page row; None when the URL was stored before (its stored labels follow).
    page_id: int | None
    problem: str | None = None
    truncated: bool = False
    verdict: str | None = None
    kind: str | None = None
    similarity: float | None = None
    duplicate_of: int | None = None
    #: Pages in the page's group when it joined it (only with VISDUP_CLUSTER_CAP).
    group_size: int | None = None
    #: Its template cluster, when the call placed it there too (``label(place=True)``).
    assignment: Assignment | None = None


class Labelling:
    """Assign and label pages against one store (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        config: dict[str, Any],
        *,
        run_id: int | None,
        snapshot: Snapshot | None,
        count: Callable[[str, int], None],
        processes: Callable[[], Executor | None] | None = None,
        durable_snapshot: bool = False,
    ):
        """``durable_snapshot``: write the snapshot's row of a page fetched again at once (a
        label process: one that dies leaves nothing a new one could not recover)."""
        self.store = store
        self.durable_snapshot = durable_snapshot
        self.config = config
        self.run_id = run_id
        self.snapshot = snapshot
        self.count = count
        self.processes = processes
        self.store_body: bool = config["VISDUP_STORE_BODY"]
        self.cluster_cap: int = config["VISDUP_CLUSTER_CAP"]
        #: Title affixes the crawled sites' pages share (visdup.content.titles).
        self.titles = SiteTitles()
        self.labeller: Labeller = build_labeller(store, config.__getitem__, count=count)
        #: Pages the indexes hold from earlier runs.
        self.warmed = self.labeller.warm()
        self._clusters: CrawlClusters | None = None
        self._lock = threading.Lock()
        if snapshot is not None:  # its rows follow templates that merge, from the first page on
            snapshot.live = self.live

    def clusters(self) -> CrawlClusters:
        """The crawl's online template clusters (built on first use, thread-safe)."""
        with self._lock:
            if self._clusters is None:
                get = self.config
                self._clusters = CrawlClusters(
                    self.store,
                    threshold=get["VISDUP_CLUSTER_THRESHOLD"],
                    template_min_pages=get["VISDUP_TEMPLATE_MIN_PAGES"],
                    template_max_pages=get["VISDUP_TEMPLATE_MAX_PAGES"],
                    min_fit=get["VISDUP_EXTRACT_MIN_FIT"],
                    extract=get["VISDUP_EXTRACT_ITEMS"],
                    processes=self.processes,
                )
            return self._clusters

    def live(self, cluster_id: int) -> int:
        """The id a template goes by now (see :meth:`CrawlClusters.live`)."""
        clusters = self._clusters
        return cluster_id if clusters is None else clusters.live(cluster_id)

    def assign(self, url: str, page: TemplateInput) -> Assignment:
        return self.clusters().assign(url, page)

    def label(
        self, job: PageJob, analysis: PageAnalysis, place: bool = False, retry: bool = False
    ) -> Outcome:
        """Label the page and store it with its links, in one transaction.

        ``place``: first place it in its template cluster (a page crosses to the label process
        once for both); a page that cannot be placed is still labelled, without a cluster.
        ``retry``: sent again after a label process died under it, which may have stored it
        first: then the stored labels are its outcome, as if that process had answered.
        """
        assignment = self._place(job, analysis) if place else None
        try:
            outcome = self._label(job, analysis, retry)
        except Exception as exc:
            if assignment is None:
                raise
            # the placing is stored: the crawl still counts it and gets the records it made
            raise LabelFailed(f"{type(exc).__name__}: {exc}", assignment) from exc
        outcome.assignment = assignment
        return outcome

    def _place(self, job: PageJob, analysis: PageAnalysis) -> Assignment | None:
        if analysis.template_input is None:
            return None
        try:
            assignment = self.assign(job.url, analysis.template_input)
        except Exception:
            logger.exception("visdup: cannot cluster %s", job.url)
            self.count("visdup/errors", 1)
            return None
        job.cluster, job.fit = assignment.cluster, assignment.fit
        return assignment

    def _label(self, job: PageJob, analysis: PageAnalysis, retry: bool) -> Outcome:
        record = analysis.record(keep_body=self.store_body, body=job.body or b"", **job.fetch())
        # the template it was placed in, by the id it goes by now: one that merged into another
        # since (or was renamed by a smaller signature key) has no row left to count the page
        record.cluster_id = self.live(job.cluster) if job.cluster is not None else None
        title = record.title
        record.title = self.titles.own(job.url, title)  # without the site's affixes
        snapshot = self.snapshot
        if retry:
            mine = self.store.stored_page(job.url)
            if mine is not None and mine.run_id == self.run_id:
                if snapshot is not None:  # its row came back with the new process (recover)
                    tree = analysis.template_input.tree if analysis.template_input else None
                    snapshot.refit(mine.id, job.url, cluster=job.cluster, fit=job.fit, tree=tree)
                size = None
                if self.cluster_cap:
                    size = self.labeller.group_size_then(mine.id, mine.duplicate_of)
                return Outcome(
                    mine.id,
                    problem=mine.problem,
                    truncated=bool(mine.truncated),
                    verdict=mine.verdict or NOVEL,
                    kind=mine.kind,
                    similarity=mine.similarity,
                    duplicate_of=mine.duplicate_of,
                    group_size=size,
                )
        stored = snapshot.stored_labels(job.url) if snapshot is not None else None
        if snapshot is not None and stored is not None:
            # fetched again for a new snapshot: recorded there, its labels stay as they are
            record_page(snapshot, job, record, analysis, stored.id, self.run_id, refetched=True)
            if self.durable_snapshot:  # no page row of this run says it was fetched: write now
                snapshot.flush()
            self.count("visdup/drift/refetched", 1)
            return Outcome(
                None,
                problem=record.problem,
                truncated=record.truncated,
                verdict=stored.verdict,
                kind=stored.kind,
                similarity=stored.similarity,
                duplicate_of=stored.duplicate_of,
            )
        if record.problem:
            self.store.add_error(self.run_id, job.url, "parse", record.problem)
        labeller = self.labeller
        prepared = {"structure": labeller.prepare("structure", analysis.simhash, analysis.term)}
        if analysis.content is not None and labeller.channels.get("content") is not None:
            prepared["content"] = labeller.prepare(
                "content", record.content_simhash, analysis.content
            )
        page_id = labeller.commit(record, prepared, self.run_id)
        if page_id is not None:  # its title is set again at the end, by the whole crawl
            self.titles.remember(page_id, job.url, title, record.title)
        # Labelled in threads (no label process), another page's placing may have merged or
        # renamed the template after this page read its id and before it was inserted: that
        # merge moved the template's stored pages without this one. A merge after the insert
        # moves it, so one look now settles it; the move reads the id to go to under the
        # clusters' lock (one more merge may land before it takes the lock).
        if (
            page_id is not None
            and job.cluster is not None
            and record.cluster_id is not None
            and self.live(job.cluster) != record.cluster_id
        ):
            record.cluster_id = self.store.move_page_cluster(page_id, record.cluster_id, self.live)
        if snapshot is not None:  # None: another process stored the URL a moment ago
            held = page_id if page_id is not None else snapshot.page_id(job.url)
            record_page(snapshot, job, record, analysis, held, self.run_id, refetched=False)
        outcome = Outcome(page_id, problem=record.problem, truncated=record.truncated)
        if page_id is None:
            return outcome
        outcome.verdict = record.verdict or NOVEL
        outcome.kind = record.kind  # only a duplicate has a kind and an original
        outcome.similarity = record.similarity
        outcome.duplicate_of = record.duplicate_of
        if self.cluster_cap:
            # pages in the group when this one joined it, whichever of them is its original
            outcome.group_size = labeller.group_size_at(page_id)
        return outcome

    def close(self, reason: str | None) -> dict[str, Any]:
        """Queued template builds stored, the snapshot closed: its totals for the stats."""
        if self._clusters is not None:  # templates still queued are built and stored
            self._clusters.finish()
        retitled = self.titles.stale()
        if retitled:  # titles given before the site's affixes were known as they are now
            self.store.update_pages({page_id: {"title": t} for page_id, t in retitled.items()})
            self.count("visdup/titles_retitled", len(retitled))
        settle_labels(self.store, self.labeller, self.count)
        if self.snapshot is None:
            return {}
        return close_crawl_snapshot(self.snapshot, reason)


# ------------------------------------------------------------------------- the label process
@dataclass
class ServiceSetup:
    """All the label process starts from (it crosses to the new process)."""

    config: dict[str, Any]
    database_url: str
    run_id: int | None
    #: The snapshot the crawl's process opened: its row, whether it was resumed, the templates
    #: as the run found them, and the pages it held when the run began.
    snapshot: tuple[SnapshotInfo, bool, dict[int, str], int] | None
    parent: int
    log_level: int = logging.INFO


class ServiceError(VisdupError):
    """A step failed in the label process (its message names the error)."""


class LabelFailed(VisdupError):
    """A page was placed in its template cluster, then its labelling failed: the placing is
    stored, and ``assignment`` carries what it gave (the cluster, the records it made)."""

    def __init__(self, message: str, assignment: Assignment):
        super().__init__(message)
        self.assignment = assignment


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
            self._send(("log", record.name, record.levelno, message))
        except Exception:  # the crawl's process is gone: nothing to tell
            pass


def serve(conn: Any, setup: ServiceSetup) -> None:
    """The label process: answer calls in the order they come until told to close."""
    worker_started(setup.parent)
    send_lock = threading.Lock()

    def send(message: Any) -> None:
        with send_lock:
            conn.send(message)

    root = logging.getLogger()
    root.handlers[:] = [_ToParent(send)]
    root.setLevel(setup.log_level)
    counter = _Counter()
    try:
        labelling = _open(setup, counter)
    except BaseException as exc:
        logger.exception("visdup: the label process cannot start")
        send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    send(("ready", labelling.warmed, counter.drain()))
    serial = 0.0
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the crawl's process is gone
        call, op, args = message
        started = time.thread_time()
        try:
            if op == "assign":
                value: Any = labelling.assign(*args)
            elif op == "label":
                value = labelling.label(*args)
            elif op == "close":
                # the pages' own work, one after another: what bounds the crawl's pace once
                # the cores are enough for the rest (template builds run in a thread beside it)
                counter("visdup/label_process/serial_cpu_ms", round(1000 * serial))
                value = labelling.close(*args)
                labelling.store.close()
                used = resource.getrusage(resource.RUSAGE_SELF)
                counter(
                    "visdup/label_process/cpu_ms", round(1000 * (used.ru_utime + used.ru_stime))
                )
            else:
                raise ValueError(f"no such call {op!r}")
            if op != "close":
                serial += time.thread_time() - started
            reply = (call, True, value, counter.drain())
        except Exception as exc:
            # the crawl's process logs it (once): the reply carries the traceback
            logger.debug("visdup: %s failed in the label process", op, exc_info=True)
            where = "".join(traceback.format_exception(exc)[:-1]).rstrip()  # its last line: below
            text = f"{type(exc).__name__}: {exc}\n{where}"
            placed = exc.assignment if isinstance(exc, LabelFailed) else None
            reply = (call, False, (text, placed), counter.drain())
        send(reply)
        if op == "close":
            _leave()


def serve_when_set_up(conn: Any) -> None:
    """A label process started before its crawl opened (:class:`visdup.early.LabelStart`):
    what the labelling needs is imported first, then it waits for its setup. A closed pipe
    (the crawl did not need it, or is gone) ends it."""
    for module in _LABEL_MODULES:
        importlib.import_module(module)
    try:
        setup = conn.recv()
    except (EOFError, OSError):
        return
    if isinstance(setup, ServiceSetup):
        serve(conn, setup)


#: What the label process imports as it opens its labelling (beside this module's own).
_LABEL_MODULES = (
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


def _open(setup: ServiceSetup, counter: _Counter) -> Labelling:
    from visdup.drift.snapshot import Snapshot

    store = Store.from_url(setup.database_url)  # the crawl's process holds the writer lock
    store.index_layout = setup.config["VISDUP_INDEX_LAYOUT"]
    snapshot = None
    if setup.snapshot is not None:
        info, resumed, start_templates, held_at_start = setup.snapshot
        snapshot = Snapshot(
            store,
            info,
            resumed=resumed,
            sample_size=setup.config["VISDUP_DRIFT_SAMPLE"],
            min_fit=setup.config["VISDUP_EXTRACT_MIN_FIT"],
            start_templates=start_templates,
        )
        # after a label process died: the rows it had not written yet, and its count
        snapshot.recover(setup.run_id, held_at_start)
    return Labelling(
        store,
        setup.config,
        run_id=setup.run_id,
        snapshot=snapshot,
        count=counter,
        durable_snapshot=True,
    )


class LabelService:
    """The crawl's side of the label process: calls from any thread, answered as futures.

    One thread sends the calls in the order they were made (it pickles them, and its send
    blocks while the label process works and its pipe is full), one reads the answers; so a
    caller, the event loop included, only ever queues a call and waits on its future.
    """

    #: Seconds the label process may take to warm its indexes before the crawl gives up.
    START_TIMEOUT = 600.0

    def __init__(
        self,
        setup: ServiceSetup,
        counts: Callable[[dict[str, int]], None],
        started: LabelStart | None = None,
    ):
        """``started``: a label process started before the setup existed (it takes it now)."""
        self.setup = setup
        self._counts = counts
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._outbox: queue.SimpleQueue[tuple[int, str, tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
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

    def call(self, op: str, *args: Any, timeout: float | None = None) -> Any:
        """``op``'s answer (blocking)."""
        return self.submit(op, *args).result(timeout=timeout)

    def submit(self, op: str, *args: Any) -> Future[Any]:
        """``op`` queued for the label process; never blocks. Its future carries the answer,
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
            self._outbox.put((call, op, args))
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

    def _read(self) -> None:
        try:
            while True:
                try:
                    message = self._conn.recv()
                except (EOFError, OSError):
                    return
                tag = message[0]
                if tag == "log":
                    _, name, level, text = message
                    logging.getLogger(name).log(level, "%s", text)
                elif tag == "ready":
                    self._counts(message[2])
                    self._ready.set_result(message[1])
                elif tag == "failed":
                    self._ready.set_exception(ServiceError(message[1]))
                    return
                else:
                    call, ok, value, counts = message
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
