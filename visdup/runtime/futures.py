"""A thread's result, awaited on the crawl's event loop."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import TypeVar

from scrapy.utils.asyncio import is_asyncio_available
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

T = TypeVar("T")


async def awaited(future: Future[T]) -> T:
    """A concurrent future's result, awaited in a Scrapy coroutine under any reactor (or
    none): the thread that completes the future hands the result to the event loop."""
    if is_asyncio_available():
        return await asyncio.wrap_future(future)
    from twisted.internet import reactor

    settled: Deferred[T] = Deferred()

    def settle(done: Future[T]) -> None:
        try:
            value = done.result()
        except BaseException as exc:
            settled.errback(Failure(exc))
        else:
            settled.callback(value)

    future.add_done_callback(lambda done: reactor.callFromThread(settle, done))  # type: ignore[attr-defined]
    return await maybe_deferred_to_future(settled)
