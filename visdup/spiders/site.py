"""``site``: crawl one or more sites whole and hand every HTML page to visdup.

    scrapy crawl site -a url=https://example.com/[,https://other.example/] [-a any_domain=1]
        [-a max_pages=N]

Scope is the start URLs' scheme, host (and its subdomains) and port. Links are canonicalised
(fragment dropped, w3lib's canonical form) before they are followed or stored, so a resumed
crawl finds them again. Two limits keep crawl traps small, each with a stat:
``VISDUP_MAX_LINKS_PER_PAGE`` (links taken from one page) and ``VISDUP_TEMPLATE_BUDGET``
(pages followed per URL pattern, e.g. ``/calendar/N/N/``: an endless calendar or a faceted
listing stops there). ``max_pages`` fetches and hands exactly N pages to visdup
(:mod:`visdup.spiders.budget`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.selector import Selector
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.asyncio import run_in_thread
from scrapy.utils.misc import load_object
from scrapy.utils.response import get_base_url

from visdup import config
from visdup.items import Page
from visdup.page.links import PageLinks, read_links
from visdup.page.urlpatterns import url_shape as path_pattern
from visdup.spiders.budget import GOVERNED, PageBudget, PageBudgetMiddleware
from visdup.spiders.failures import failure_reason
from visdup.spiders.links import DEFAULT_PORTS, LinkResolver, canonical
from visdup.storage.urls import crawl_key

logger = logging.getLogger(__name__)

#: Close reasons of a crawl that did what it was asked.
MAX_PAGES_REASON = "max_pages"
BAD_INPUT_REASON = "bad_input"


def _split_urls(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return [u.strip() for u in value if u and u.strip()]


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, default ports filled in; None for others."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname, port or DEFAULT_PORTS[scheme]


def start_url_problem(url: str) -> str | None:
    """Why ``url`` cannot start a crawl, or None."""
    if origin(url) is None:
        scheme = urlsplit(url).scheme
        if scheme in DEFAULT_PORTS:
            return f"not a usable URL: {url!r}"
        return f"not an http(s) URL: {url!r}" if scheme else f"not a URL: {url!r}"
    return None


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(
        self,
        url: str | None = None,
        urls: str | None = None,
        any_domain: str | bool = False,
        max_pages: str | int | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        #: Why the spider cannot crawl (no or bad URL, bad max_pages): one ERROR, then it closes.
        self.input_error: str | None = None
        raw = _split_urls(url) + _split_urls(urls)
        self.start_urls = [canonical(u) for u in raw]
        if not raw:
            self.input_error = "the site spider needs a start URL: -a url=https://..."
        for start in raw:
            self.input_error = self.input_error or start_url_problem(start)
        self.any_domain = config.flag(any_domain)
        origins = [o for o in map(origin, self.start_urls) if o is not None]
        self.origins = frozenset(origins)
        self.allowed_domains = [] if self.any_domain else sorted({o[1] for o in origins})
        try:
            limit = int(max_pages) if max_pages not in (None, "") else 0
        except (TypeError, ValueError):
            limit = -1
        if limit < 0:
            self.input_error = self.input_error or (
                f"max_pages must be a whole number >= 0, not {max_pages!r}"
            )
            limit = 0
        self.max_pages = limit
        self.page_budget = PageBudget(limit) if limit else None
        #: URLs stored by earlier runs (VISDUP_RESUME): not fetched again.
        self.stored: set[str] = set()
        self.max_links = int(config.VISDUP_MAX_LINKS_PER_PAGE)
        self.pattern_budget = int(config.VISDUP_TEMPLATE_BUDGET)
        #: Pages followed per URL pattern, and the URLs counted (each once).
        self.pattern_pages: Counter[tuple[str, str, int, str]] = Counter()
        self._counted: set[str] = set()
        #: URLs this spider has asked Scrapy for (see _follow).
        self._requested: set[str] = set()
        #: Links resolved on earlier pages.
        self._resolver = LinkResolver(self._in_scope, None if self.any_domain else self.origins)
        #: visdup analyses the pages in worker processes: no tree is kept here (see _tree).
        self._parse_apart = False
        #: Why a start URL gave no page (it could not be fetched, or is no HTML page), by
        #: start URL: a crawl that stored nothing says which and why (``visdup crawl``).
        self.start_problems: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.max_links = spider._setting("VISDUP_MAX_LINKS_PER_PAGE")
        spider.pattern_budget = spider._setting("VISDUP_TEMPLATE_BUDGET")
        return spider

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        """Install the page budget's downloader middleware (a project's own entry wins).

        Set at spider priority, so that a runner merging its settings into the crawler later
        (``AsyncCrawlerProcess.crawl(crawler)``) keeps it.
        """
        super().update_settings(settings)
        name = "DOWNLOADER_MIDDLEWARES"
        components = settings.getdict(name)
        if any(load_object(c) is PageBudgetMiddleware for c in components):
            return
        components[PageBudgetMiddleware] = 920
        settings.set(
            name, components, max(settings.getpriority(name) or 0, SETTINGS_PRIORITIES["spider"])
        )

    def _setting(self, name: str) -> Any:
        return config.read(self.crawler.settings, name)

    # ------------------------------------------------------------------ start
    async def start(self) -> AsyncIterator[Any]:
        if self.input_error:
            logger.error("visdup: %s", self.input_error)
            raise CloseSpider(BAD_INPUT_REASON)
        for name in ("visdup/links_over_page_cap", "visdup/links_over_budget"):
            self.crawler.stats.set_value(name, 0)
        frontier = await run_in_thread(self._resume_frontier)
        self._parse_apart = self._analysed_apart()
        for url in self.start_urls:
            if url not in self.stored and self._within_budget(url):
                yield self._request(url)
        for url, depth in frontier:  # a start URL may be one too: asked for above
            if url not in self._requested and self._within_budget(url):
                yield self._request(url, depth=depth)

    def _request(self, url: str, depth: int | None = None) -> scrapy.Request:
        """The spider's one way to ask Scrapy for a URL: it remembers having asked (_follow)."""
        self._requested.add(url)
        meta: dict[str, Any] = {GOVERNED: True}
        if depth is not None:
            meta["depth"] = depth
        return scrapy.Request(url, callback=self.parse, errback=self._failed, meta=meta)

    def _analysed_apart(self) -> bool:
        """Whether visdup analyses this crawl's pages in worker processes (from their bytes)."""
        from visdup.context import CrawlContext

        ctx = CrawlContext.existing(self.crawler)
        return ctx is not None and ctx.analyses_apart

    def _resume_frontier(self) -> list[tuple[str, int]]:
        """Resume what earlier runs left: skip the pages they stored, fetch the links they found.

        Writing each page with its links in one transaction makes the stored links a frontier
        that survives ``kill -9`` (Scrapy's JOBDIR does not: its request queue is buffered).
        Only links in this crawl's scope are taken, so crawls of other sites in the same store
        do not leak in; stored pages count toward their URL pattern's budget.
        """
        if not self._setting("VISDUP_ENABLED") or not self._setting("VISDUP_RESUME"):
            return []
        from visdup.context import CrawlContext

        ctx = CrawlContext.of(self.crawler)
        ctx.open()
        if ctx.store is None:
            return []
        # a snapshot (visdup.drift) holds the pages its runs fetched: a new one fetches all again
        snapshot = ctx.snapshot
        self.stored = snapshot.urls() if snapshot is not None else ctx.store.stored_urls()
        for url in self.stored:
            if self._in_scope(url):
                self._count(url)
        found = ctx.store.unfetched_links(crawl_key(self.start_urls, self.name))
        if snapshot is not None:
            found += snapshot.revisit()  # continued: the stored pages it has not fetched yet
        frontier = [
            (canonical(u), d)
            for u, d in found
            if self._in_scope(u) and canonical(u) not in self.stored
        ]
        if self.stored:
            logger.info(
                "visdup: resuming: %d pages stored by earlier runs, %d links left to fetch",
                len(self.stored),
                len(frontier),
            )
            self.crawler.stats.set_value("visdup/resumed_links", len(frontier))
        return frontier

    # ------------------------------------------------------------------ scope and limits
    def _in_scope(self, url: str) -> bool:
        """Same scheme and port as a start URL, on its host or a subdomain; or any_domain."""
        found = origin(url)
        if found is None:
            return False
        if self.any_domain:
            return True
        scheme, host, port = found
        return any(
            scheme == s and port == p and (host == h or host.endswith("." + h))
            for s, h, p in self.origins
        )

    def _pattern(self, url: str) -> tuple[str, str, int, str]:
        scheme, host, port = origin(url) or ("", "", 0)
        return scheme, host, port, path_pattern(url)

    def _count(self, url: str) -> None:
        if url not in self._counted:
            self._counted.add(url)
            self.pattern_pages[self._pattern(url)] += 1

    def _within_budget(self, url: str) -> bool:
        """Count ``url`` toward its URL pattern; False once the pattern's budget is spent."""
        if not self.pattern_budget or url in self._counted:
            return True
        key = self._pattern(url)
        if self.pattern_pages[key] >= self.pattern_budget:
            self.crawler.stats.inc_value("visdup/links_over_budget")
            if self.pattern_pages[key] == self.pattern_budget:
                self.pattern_pages[key] += 1  # log each pattern once
                self.crawler.stats.inc_value("visdup/patterns_over_budget")
                logger.warning(
                    "visdup: URL pattern %s://%s:%d%s reached VISDUP_TEMPLATE_BUDGET (%d pages);"
                    " links into it are no longer followed",
                    *key,
                    self.pattern_budget,
                )
            return False
        self._count(url)
        return True

    def _links(self, response: HtmlResponse, found: PageLinks | None = None) -> list[str]:
        """Canonical http(s) links of <a> and <area> elements: in scope, unique, read from the
        first VISDUP_MAX_LINKS_PER_PAGE elements, none past its pattern's budget.

        ``found``: the hrefs visdup's analysis read from the page (read here if None).
        Links to pages stored by earlier runs stay in the list, and are only not fetched
        again: a page is stored with every link, the frontier a killed crawl resumes from. A
        page whose link target was stored before it, by a crawl killed in between, is
        fetched again and must still be stored with that link.
        """
        base = get_base_url(response)
        resolve = self._resolver.for_page(base, response.encoding)
        if found is None:
            found = read_links(self._tree(response), self.max_links)
        seen: set[str] = set()
        links: list[str] = []
        for href in found.hrefs:
            url = resolve(href)
            if url is None or url in seen:
                continue
            seen.add(url)
            if url in self.stored or self._within_budget(url):
                links.append(url)
        if found.total is not None:
            self._capped(response, found.total, len(found.hrefs))
        return links

    def _tree(self, response: HtmlResponse) -> Any:
        """The page's tree for its links, when visdup's analysis did not read them. Where
        visdup analyses pages in worker processes, it is parsed as ``response.selector`` would
        be but not kept on the response: the crawl's process then holds no page's tree while
        the page waits for its analysis and labels (a Page item takes a tree only if cached)."""
        if self._parse_apart:
            return Selector(response=response).root
        return response.selector.root

    def _capped(self, response: HtmlResponse, total: int, read: int) -> None:
        self.crawler.stats.inc_value("visdup/links_over_page_cap", max(0, total - read))
        self.crawler.stats.inc_value("visdup/pages_over_link_cap")
        logger.info(
            "visdup: %s has %d links; the first %d are read (VISDUP_MAX_LINKS_PER_PAGE)",
            response.url,
            total,
            read,
        )

    # ------------------------------------------------------------------ callbacks
    def parse(self, response: Response, **kwargs: Any) -> Iterable[Any] | AsyncIterator[Any]:
        if not isinstance(response, HtmlResponse):
            self._settle(response, page=False)
            kind = "text" if isinstance(response, TextResponse) else "binary"
            self.crawler.stats.inc_value("visdup/non_html")
            self.crawler.stats.inc_value(f"visdup/non_html/{kind}")
            content_type = response.headers.get("Content-Type")
            logger.debug("Skipping non-HTML response %s (%s)", response.url, content_type)
            shown = (content_type or b"no Content-Type").decode("latin-1").split(";")[0].strip()
            self._start_failed(response.request, f"is not an HTML page ({shown})")
            return ()
        if not self._settle(response, page=True):
            return ()  # fetched while the budget was being spent: not taken
        if self._parse_apart:
            return self._analysed_page(response)
        return self._page(response)

    def _page(self, response: HtmlResponse) -> Iterable[Any]:
        links = self._page_links(response, None)  # parsed first: the item takes its tree
        yield from self._follow(Page.from_response(response, links=links))

    async def _analysed_page(self, response: HtmlResponse) -> AsyncIterator[Any]:
        """A page analysed in a worker process before its links are followed: the worker
        read its links from the tree it parsed, so this process parses none (a page the
        analysis could not read is parsed here for its links, as without visdup)."""
        from visdup.context import CrawlContext

        page = Page.from_response(response)
        found = None
        ctx = CrawlContext.existing(self.crawler)
        try:
            if ctx is not None:
                found = (await ctx.analyse_item(page, links=self.max_links)).links
        except Exception:  # the pipelines analyse it again, and report what fails
            logger.exception("visdup: cannot analyse %s before its links", response.url)
        page.links = self._page_links(response, found)
        for output in self._follow(page):
            yield output

    def _page_links(self, response: HtmlResponse, found: PageLinks | None) -> list[str]:
        try:
            return self._links(response, found)
        except Exception as exc:
            logger.warning("Cannot extract links from %s: %s", response.url, exc)
            return []

    def _follow(self, page: Page) -> Iterable[Any]:
        """The page item, then the requests for its links not stored yet, each URL once.

        Pages link to the same menus: on the Python manual ~31 links a page, of which Scrapy's
        duplicate filter would drop all but one, after building each request, passing it
        through every spider middleware and hashing its canonical URL (~20 % of the bare
        crawl's CPU). Links already asked for are not asked for again; the filter still
        decides the rest (other spellings of one URL, other processes of a shared frontier).
        """
        yield page
        stored, requested = self.stored, self._requested
        for link in page.links:
            if link not in stored and link not in requested:
                yield self._request(link)
        if self.page_budget is not None and self.page_budget.spent:
            raise CloseSpider(MAX_PAGES_REASON)

    def _settle(self, response: Response, *, page: bool) -> bool:
        if self.page_budget is None:
            return page
        return self.page_budget.settle(response.request, page=page) if response.request else page

    def _failed(self, failure: Any) -> None:
        request = getattr(failure, "request", None)
        if request is None:
            request = getattr(getattr(failure, "value", None), "request", None)
        if request is None:
            response = getattr(getattr(failure, "value", None), "response", None)
            request = getattr(response, "request", None)
        if self.page_budget is not None and request is not None:
            self.page_budget.settle(request, page=False)
        logger.debug("Request failed: %s", failure.getErrorMessage())
        self._start_failed(request, failure_reason(failure))

    def _start_failed(self, request: scrapy.Request | None, why: str) -> None:
        """Note that a start URL (or a redirect from one) gave no page, and why."""
        if request is None:
            return
        first = (request.meta.get("redirect_urls") or [request.url])[0]
        url = canonical(first)
        if url not in self.start_urls or url in self.start_problems:
            return
        self.start_problems[url] = why
        self.crawler.stats.inc_value("visdup/start_urls_failed")
        logger.warning("visdup: start URL %s %s: nothing is crawled from it", url, why)
