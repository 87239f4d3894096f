"""Where batch work runs: in this process, or on a Dask cluster.

Batch commands (``visdup dups``, ``cluster``, ``extract``) spend most of their time on work that
is independent per page: parsing, the visual term, main content and fingerprints. An engine
maps that work over the pages and returns the results **in input order**; the decisions that
depend on order (labelling, clustering) then run in this process exactly as with the local
engine, so ``--engine dask`` gives the same answers as ``--engine local``, only sooner on
several cores or machines.

Dask is an optional extra (``pip install 'visdup[dask]'``); the local engine needs nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Protocol, TypeVar

from visdup.errors import InputError

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

ENGINES = ("local", "dask")
#: Pages sent to a worker per task: large enough that scheduling costs little against parsing
#: (about 10 ms a page), small enough that results stream back while workers go on.
BATCH = 32
#: Batches in flight at once per worker thread: bounds memory on a large input.
WINDOW = 4


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


class Engine(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn`` over ``items``, results in input order."""
        ...

    def close(self) -> None: ...


class LocalEngine:
    """Everything in this process, one page after another."""

    name = "local"

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        for item in items:
            yield fn(item)

    def close(self) -> None:
        pass


def _apply(fn: Callable[[Any], Any], batch: Sequence[Any]) -> list[Any]:
    return [fn(item) for item in batch]


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


class DaskEngine:
    """Batches of pages as Dask tasks; a local cluster on this machine's cores by default."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, *, batch: int = BATCH):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise InputError("--engine dask needs Dask: pip install 'visdup[dask]'") from None
        self.batch = batch
        self._cluster = None
        try:
            if scheduler:
                self.client = Client(scheduler, timeout="10s")
            else:
                # processes, not threads: the Python parts of the analysis hold the GIL
                self._cluster = LocalCluster(
                    processes=True, threads_per_worker=1, dashboard_address=None
                )
                self.client = Client(self._cluster)
        except OSError as exc:  # unreachable or refused scheduler
            raise InputError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        workers = len(self.client.scheduler_info().get("workers", {}))
        logger.info("visdup: Dask engine with %d workers (%s)", workers, scheduler or "local")
        self._window = max(1, workers) * WINDOW

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        from collections import deque

        pending: deque[Any] = deque()
        for batch in _batches(items, self.batch):
            pending.append(self.client.submit(_apply, fn, batch, pure=False))
            if len(pending) >= self._window:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_engine(name: str = "local", scheduler: str | None = None) -> Engine:
    if name == "local":
        if scheduler:
            raise InputError("--scheduler goes with --engine dask")
        return LocalEngine()
    if name == "dask":
        return DaskEngine(scheduler)
    raise InputError(f"--engine must be one of {', '.join(ENGINES)}, not {name!r}")
