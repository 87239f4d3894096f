"""What a failed fetch says: one line per reason, and no traceback for a network error.

A crawl whose start URL cannot be fetched stores nothing, and its user needs one line saying
so. Scrapy's robots.txt middleware logs a download error of ``robots.txt`` with its whole
traceback (two chained tracebacks, ~60 lines, for a refused connection), although the line
it logs already names the error: a network failure is no bug, and the traceback only buries
the line that matters.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

#: Loggers whose records carry a traceback for a failed download.
DOWNLOAD_LOGGERS = ("scrapy.downloadermiddlewares.robotstxt",)

#: Modules whose exceptions are failed downloads (refused, reset, timed out, unresolved...).
_NETWORK_MODULES = (
    "scrapy.exceptions",
    "twisted.internet.error",
    "twisted.web._newclient",
    "twisted.web.error",
    "OpenSSL.SSL",
)


def is_network_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed download rather than a failure of code."""
    if isinstance(exc, OSError | TimeoutError):
        return True
    module = type(exc).__module__ or ""
    return module.startswith(_NETWORK_MODULES)


def failure_reason(failure: Any) -> str:
    """Why a request gave no response, in words after its URL ("cannot be fetched (...)")."""
    exc = getattr(failure, "value", failure)
    response = getattr(exc, "response", None)
    status = getattr(response, "status", None)
    if status is not None:
        return f"answered HTTP {status}"
    text = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
    return f"cannot be fetched ({text})"


class NoNetworkTracebacks(logging.Filter):
    """Drops the traceback of a record about a failed download; its message stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        if info and info[1] is not None and is_network_error(info[1]):
            record.exc_info = None
            record.exc_text = None
        return True


@contextlib.contextmanager
def no_network_tracebacks() -> Iterator[None]:
    """While the block runs, Scrapy's download error lines come without their traceback."""
    found = NoNetworkTracebacks()
    loggers = [logging.getLogger(name) for name in DOWNLOAD_LOGGERS]
    for logger in loggers:
        logger.addFilter(found)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(found)
