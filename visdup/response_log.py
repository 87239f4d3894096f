"""The responses the crawl met that are no page, on their way to the store: written from a
worker thread a batch at a time, never on the event loop, the last ones as the crawl closes
(:mod:`visdup.responses` sees them; :mod:`visdup.storage.responses` stores them).

A store that is away loses these rows, not the crawl: they are a report's detail, and the
next crawl of the site meets the same answers again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.threads import deferToThread

from visdup.storage.outage import is_outage

if TYPE_CHECKING:
    from visdup.storage.store import Store

logger = logging.getLogger(__name__)

#: Rows kept before a write is started; the rest wait for the write in progress.
BATCH = 64


class ResponseLog:
    """The rows waiting to be stored, written from a worker thread in batches; thread-safe."""

    def __init__(self, store: Store | None, count: Callable[..., None]) -> None:
        self.store = store
        self._count = count
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []
        self._writing = False
        self._ready = False
        self._warned = False
        self.run_id: int | None = None

    def add(self, row: dict[str, Any]) -> None:
        """Queue a row; start a write when none is running and a batch waits."""
        with self._lock:
            self._rows.append(row)
            start = not self._writing and len(self._rows) >= BATCH
            if start:
                self._writing = True
        self._count(f"visdup/responses/{row['kind']}")
        if start:
            deferToThread(self._write_all).addErrback(
                lambda f: logger.error("visdup: cannot store responses: %s", f.value)
            )

    def flush(self) -> None:
        """Write every row queued (blocking: the crawl's close calls it before the store
        closes)."""
        with self._lock:
            self._writing = True
        self._write_all()

    def _write_all(self) -> None:
        while True:
            with self._lock:
                rows, self._rows = self._rows, []
                if not rows:
                    self._writing = False
                    return
            self._write(rows)

    def _write(self, rows: list[dict[str, Any]]) -> None:
        if self.store is None:
            return
        for row in rows:
            row.setdefault("run_id", self.run_id)
        try:
            if not self._ready:
                self._ready = self.store.responses_ready()
            self.store.put_responses(rows)
        except Exception as exc:
            self._count("visdup/responses/unstored", len(rows))
            if not self._warned:
                self._warned = True
                why = "the store is away" if is_outage(exc) else f"{type(exc).__name__}: {exc}"
                logger.warning(
                    "visdup: %d responses (redirects, errors) not stored: %s (further ones are "
                    "counted in visdup/responses/unstored)",
                    len(rows),
                    why,
                )
