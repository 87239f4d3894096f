"""What the crawl met that is no page: redirects, 4xx and 5xx answers, other content, requests
robots.txt forbade and requests that failed, each stored as one small row with the page that
linked to it (``visdup_responses``, read by the report's responses section).

Scrapy drops most of these before any callback (``HttpErrorMiddleware`` a 404,
``RobotsTxtMiddleware`` a forbidden URL, ``RedirectMiddleware`` a 301 it follows), so they are
seen from the downloader's side, in two places:

- :class:`RedirectsMiddleware` sits between the downloader and ``RedirectMiddleware`` (600):
  it sees a 3xx before it becomes a new request, which the duplicate filter may then drop.
- :class:`ResponsesMiddleware` sits below ``RetryMiddleware`` (550): it sees the last answer
  after the retries (a 503 that answers 200 on its second try is no error), and, like every
  downloader middleware, the exceptions of the others (robots.txt's ``IgnoreRequest``, a
  connection that failed after its retries).

Both work for any spider (the site spider and a user's ``CrawlSpider`` alike): they only
look, every response and exception goes on as it came. Rows are written in a worker thread,
a batch at a time, and the last ones as the crawl closes
(:class:`visdup.response_log.ResponseLog`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse

from visdup.context import CrawlContext, check_enabled
from visdup.spiders.failures import is_network_error

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from visdup.response_log import ResponseLog

#: The message of Scrapy's ``IgnoreRequest`` for a URL robots.txt disallows.
ROBOTS_MESSAGE = "Forbidden by robots.txt"


def classify(status: int, html: bool) -> str | None:
    """The kind of a final answer (:data:`visdup.storage.responses.KINDS`); None: a page."""
    if 300 <= status < 400:
        return "redirect"
    if 400 <= status < 500:
        return "client_error"
    if status >= 500:
        return "server_error"
    if html:
        return None if 200 <= status < 300 else "other"
    return "not_html" if 200 <= status < 300 else "other"


def _header(headers: Any, name: str) -> str | None:
    value = headers.get(name)
    return value.decode("latin-1") if value else None


def _skipped(request: Request) -> bool:
    """Requests that are not the site's pages: robots.txt itself."""
    return request.url.split("?", 1)[0].endswith("/robots.txt")


class _Looking:
    """A middleware that only looks; not configured where visdup is off."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._log: ResponseLog | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        check_enabled(crawler)
        return cls(crawler)

    @property
    def log(self) -> ResponseLog:
        if self._log is None:
            self._log = CrawlContext.of(self.crawler).responses
        return self._log


class RedirectsMiddleware(_Looking):
    """Records each 3xx answer with its target before ``RedirectMiddleware`` follows it."""

    def process_response(self, request: Request, response: Response) -> Response:
        location = _header(response.headers, "Location")
        if 300 <= response.status < 400 and location and not _skipped(request):
            self.log.add(
                {
                    "url": request.url,
                    "kind": "redirect",
                    "status": response.status,
                    "target": response.urljoin(location),
                    "referer": _header(request.headers, "Referer"),
                }
            )
        return response


class ResponsesMiddleware(_Looking):
    """Records the last answer of a URL that gave no HTML page, and requests that got none."""

    def process_response(self, request: Request, response: Response) -> Response:
        kind = classify(response.status, isinstance(response, HtmlResponse))
        if kind is None or _skipped(request):
            return response
        location = _header(response.headers, "Location")
        self.log.add(
            {
                "url": request.url,
                "kind": kind,
                "status": response.status,
                "target": response.urljoin(location) if location else None,
                "content_type": _header(response.headers, "Content-Type"),
                "referer": _header(request.headers, "Referer"),
            }
        )
        return response

    def process_exception(self, request: Request, exception: BaseException) -> None:
        if _skipped(request):
            return None
        if isinstance(exception, IgnoreRequest):
            if str(exception) != ROBOTS_MESSAGE:
                return None  # dropped by the crawl's own rules (stored already, offsite)
            kind, reason = "robots", "disallowed by robots.txt"
        elif is_network_error(exception):
            kind = "failed"
            reason = " ".join(str(exception).split()) or type(exception).__name__
        else:
            return None
        self.log.add(
            {
                "url": request.url,
                "kind": kind,
                "reason": reason[:500],
                "referer": _header(request.headers, "Referer"),
            }
        )
        return None
