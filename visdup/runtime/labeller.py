"""The crawl's labelling as its process sees it: in the label process, or here.

:class:`Labeller` is the one door to :class:`visdup.dedup.labelling.Labelling` for a crawl:
it starts the label process (or labels in the crawl's process when there is none, or when
it cannot start), sends each page to it, starts a new one when it dies, and ends it with the
crawl. The crawl's wiring (:mod:`visdup.context`) only builds it and forwards pages.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from scrapy.utils.asyncio import run_in_thread

from visdup.errors import StoreError
from visdup.runtime.futures import awaited
from visdup.runtime.label_process import (
    Assign,
    Close,
    Label,
    LabelService,
    LabelStart,
    Request,
    ServiceGone,
    ServiceSetup,
    answer,
)
from visdup.storage.outage import is_outage
from visdup.storage.urls import mask_password

if TYPE_CHECKING:
    from visdup.config import Options
    from visdup.dedup.analysis import PageAnalysis
    from visdup.dedup.jobs import Outcome, PageJob
    from visdup.dedup.labelling import Labelling
    from visdup.drift.snapshot import Snapshot
    from visdup.runtime.analysis import Analysis
    from visdup.storage.store import Store
    from visdup.templates.assign import Assignment
    from visdup.templates.signature import TemplateInput

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabellerHooks:
    """What the labeller reports to, and takes from, the crawl around it."""

    #: Count a stat (any thread).
    count: Callable[[str, int], None]
    #: Add the label process's stat increments (its reader thread).
    add_counts: Callable[[dict[str, int]], None]
    #: Read a stat.
    get_stat: Callable[[str, int], int]
    #: Set a stat.
    set_stat: Callable[[str, Any], None]
    #: The label process started as the crawl started, if there is one (taken once).
    take_started: Callable[[], LabelStart | None]


class Labeller:
    """One crawl's labelling: :meth:`open` as the spider opens, then :meth:`label` (or
    :meth:`labelled`, :meth:`assign`) per page, :meth:`close` at the end."""

    #: Times the label process is started again in one crawl before the crawl gives up on it.
    MAX_RESTARTS = 5

    def __init__(
        self,
        store: Store,
        config: Options,
        analysis: Analysis,
        hooks: LabellerHooks,
        lock: threading.Lock,
    ):
        self.store = store
        self.config = config
        self.analysis = analysis
        self.hooks = hooks
        #: Taken to start, restart and give up on the label process (shared with the crawl's
        #: opening, which the analysis pool's start takes too).
        self.lock = lock
        #: Labelling in this process (None until opened, or with a label process).
        self.labelling: Labelling | None = None
        #: The label process, when pages are labelled in one.
        self.service: LabelService | None = None
        #: Done once the labelling is up (the label process starts in a thread, see open):
        #: threads wait for it (_call), the event loop awaits it (labelled).
        self.up: Future[None] = Future()
        self.up.set_result(None)
        #: Pages awaiting ``up`` on the event loop (touched there only).
        self._awaiting = 0
        self._setup: ServiceSetup | None = None
        self._warmed = 0
        self.run_id: int | None = None
        self.snapshot: Snapshot | None = None
        #: Pages the crawl's snapshot held when the run began (a restart counts from it).
        self._held_at_start = 0

    @property
    def opened(self) -> bool:
        # a label process being started (its setup is made just before) counts as opened
        return self.labelling is not None or self.service is not None or self._setup is not None

    def open(self, run_id: int, snapshot: Snapshot | None) -> None:
        """Start labelling for this run (under :attr:`lock`): in the label process when the
        crawl analyses in worker processes and VISDUP_LABEL_PROCESS allows, else here."""
        self.run_id, self.snapshot = run_id, snapshot
        self._held_at_start = snapshot.held() if snapshot is not None else 0
        if self.config.label_process and self.analysis.workers:
            self._setup = ServiceSetup(
                config=self.config,
                database_url=self.config.database_url,
                run_id=run_id,
                snapshot=(
                    (snapshot.info, snapshot.resumed, snapshot.start_templates, self._held_at_start)
                    if snapshot is not None
                    else None
                ),
                parent=os.getpid(),
                log_level=logging.getLogger("visdup").getEffectiveLevel(),
            )
            # the label process warms up while the first pages are fetched and analysed: the
            # first call to it waits (see _call), the crawl's start does not
            self.up = Future()
            self.up.set_running_or_notify_cancel()  # one page's cancel: not all
            threading.Thread(
                target=self._first_service, name="visdup-label-start", daemon=True
            ).start()
            return
        self._open_here()

    def _first_service(self) -> None:
        try:
            service = self._start_service()
            if service is not None:
                self.service = service
                self.hooks.set_stat("visdup/label_process", 1)
                self._opened_log(self._warmed)
            else:
                self._open_here()
        except Exception:
            logger.exception("visdup: cannot start the labelling")
        finally:
            self.up.set_result(None)

    def _open_here(self) -> None:
        labelling = self._labelling_here()
        self.labelling = labelling
        self._opened_log(labelling.warmed)

    def _opened_log(self, warmed: int) -> None:
        logger.info(
            "visdup: store %s (%d pages already known), run %d",
            mask_password(self.config.database_url),
            warmed,
            self.run_id,
        )

    def _start_service(self) -> LabelService | None:
        """A label process, up and warm; None (logged) when it cannot start."""
        assert self._setup is not None
        service = None
        try:
            started = self.hooks.take_started()
            service = LabelService(
                self._setup, self.hooks.add_counts, started=started, workers=self.analysis.start
            )
            if started is not None and service.process is started.process:
                self.hooks.count("visdup/early_processes", 1)
            self._warmed = service.warmed()
        except Exception as exc:  # it could not start: label here, as without it
            logger.warning("visdup: no label process (%s); labelling in this process", exc)
            if service is not None:
                service.stop(wait=1.0)
            return None
        return service

    def _labelling_here(self) -> Labelling:
        # imported here: with a label process, this process never labels, and the labelling
        # (its indexes, numpy) is a tenth of a second and tens of megabytes it need not load
        from visdup.dedup.labelling import Labelling

        return Labelling(
            self.store,
            self.config,
            run_id=self.run_id,
            snapshot=self.snapshot,
            count=self.hooks.count,
            processes=self.analysis.start,
        )

    # ---------------------------------------------------------------- per page
    def assign(self, url: str, page: TemplateInput) -> Assignment:
        """The page's template cluster (blocking: call it in a worker thread)."""
        result: Assignment = self._call(Assign(url, page))
        return result

    def label(
        self, job: PageJob, analysis: PageAnalysis, place: bool = False, retry: bool = False
    ) -> Outcome:
        """Label the page and store it (blocking: call it in a worker thread); ``place``:
        first place it in its template cluster, in the same call (``Outcome.assignment``);
        ``retry``: an earlier try may have stored it."""
        result: Outcome = self._call(Label(job, analysis, place, retry))
        return result

    async def labelled(
        self, job: PageJob, analysis: PageAnalysis, place: bool = False, retry: bool = False
    ) -> Outcome:
        """:meth:`label`, awaited on the event loop: with a label process up, no thread of
        the crawl's process waits for the answer (a thread per page costs the crawl's pace).
        Pages that come while the label process starts wait for it here, on the event loop,
        and are sent in the order their waits began, ahead of the pages that come after it is
        up (one that comes in the instant it finishes starting may pass some of them). A label
        process that dies under the call takes the blocking path in a thread."""
        if self._awaiting or not self.up.done():
            self._awaiting += 1
            try:  # each resumes in turn, the order their waits began
                await awaited(self.up)
            finally:
                self._awaiting -= 1
        service = self.service
        if service is None:
            return await run_in_thread(self.label, job, analysis, place, retry)
        try:
            return await awaited(service.submit(Label(job, analysis, place, retry)))
        except ServiceGone as exc:
            return await run_in_thread(self._label_again, service, exc, job, analysis, place)

    def _label_again(
        self,
        dead: LabelService,
        gone: ServiceGone,
        job: PageJob,
        analysis: PageAnalysis,
        place: bool,
    ) -> Outcome:
        """A label call :meth:`labelled` saw the label process die under: as in :meth:`_call`
        once that has seen it die."""
        self._restart_service(dead)
        request = Label(job, analysis, place, retry=True)
        result: Outcome = self._call(request, suspected=int(gone.suspect))
        return result

    def _call(self, request: Request, suspected: int = 0) -> Any:
        """The answer to ``request``, from the :class:`Labelling` here or in the label process.

        When that process dies, a new one starts and the call is sent again. A page it had
        stored before dying is then found stored with its labels (``retry``): none is lost or
        stored twice. Only the call it was working on counts against the page (twice and the
        page goes unlabelled, with an error; a page it was placing and labelling is first sent
        once more to be labelled without its template, since the placing may be what kills
        it); the calls queued behind it are sent again freely.
        """
        self.up.result()
        if self.service is None and self.labelling is None:
            raise StoreError("visdup could not start its labelling (see the log)")
        for _attempt in range(2 * self.MAX_RESTARTS + 2):
            service = self.service
            if service is None:
                assert self.labelling is not None
                return answer(self.labelling, request)
            try:
                # the end builds what is queued: long, but not endless
                return service.call(request, timeout=3600.0 if isinstance(request, Close) else None)
            except ServiceGone as exc:
                self._restart_service(service)
                if isinstance(request, Label):
                    request = replace(request, retry=True)
                suspected += exc.suspect
                if suspected >= 2 and isinstance(request, Label) and request.place:
                    # it may be the placing that kills it: the page is labelled without it
                    logger.error(
                        "visdup: the label process died twice under %s; labelling it without"
                        " its template",
                        request.job.url,
                    )
                    self.hooks.count("visdup/errors", 1)
                    request = replace(request, place=False)
                elif suspected >= 2:
                    raise ServiceGone(
                        f"the label process died twice under this call ({type(request).__name__})"
                    ) from exc
        raise ServiceGone("the label process keeps dying")

    def _restart_service(self, dead: LabelService) -> None:
        with self.lock:
            if self.service is not dead:
                return  # another thread saw it die first and started the new one
            dead.stop(wait=1.0)
            restarts = self.hooks.get_stat("visdup/label_process/restarts", 0)
            service = None
            if restarts < self.MAX_RESTARTS:
                self.hooks.count("visdup/label_process/restarts", 1)
                logger.warning("visdup: the label process died; starting a new one")
                service = self._start_service()
            if service is not None:
                self.service = service
                return
            logger.error(
                "visdup: no new label process (it died %d times, or cannot start); labelling in"
                " this process",
                restarts + 1,
            )
            labelling = self._labelling_here()
            if self.snapshot is not None:  # take over what the label process left unwritten
                self.snapshot.recover(self.run_id, self._held_at_start)
            self.labelling = labelling
            self.service = None

    # ---------------------------------------------------------------- the end
    def close(self, reason: str) -> dict[str, Any]:
        """Finish the run's labelling: templates still queued built and stored, the final
        pass, the snapshot's aggregates (through a new label process, or here, if the last one
        died meanwhile); the label process ends. Returns the stats the end computed."""
        totals: dict[str, Any] = {}
        if not self.opened:
            return totals
        try:
            totals = self._call(Close(reason))
        except Exception as exc:
            if not is_outage(exc):
                logger.exception("visdup: cannot finish the templates and the snapshot")
            else:  # said once already: the store went away and stayed away
                logger.warning(
                    "visdup: the store is away: the run's final labels, templates and snapshot "
                    "are made by the next run"
                )
        if self.service is not None:
            self.service.stop()
        return totals
