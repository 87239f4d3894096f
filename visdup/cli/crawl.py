"""visdup crawl URL...: crawl sites with the ``site`` spider into a visdup store.

Everything is checked before the first request: the URLs (http or https), every VISDUP_
setting (``-s`` included: a name that is no setting is refused with the nearest one), the
database URL, its driver and the connection (the store is opened, and on SQLite its one-writer
lock taken and kept for the crawl, so a second crawl on the file is refused at once).

Exit status: 0 the crawl finished (or reached ``--max-pages``); 1 it ran but lost work (it
stopped early, more than ``--max-errors`` callback and pipeline errors, or a start URL gave no
page while others did), with one line saying how much and what to run next; 2 it could not
start or did nothing (bad input; or no start URL gave a page, because it could not be fetched
or is not HTML, and nothing was stored).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from visdup import config
from visdup.errors import InputError, StoreError, VisdupError

HELP = "crawl one or more sites and label every page (store: --db, default ./visdup.sqlite3)"

#: Exit status of a crawl that ran and failed.
CRAWL_FAILED = 1
#: Exit status of a crawl that could not start or did nothing.
CRAWL_NOTHING = 2
#: Callback and pipeline errors a crawl may have and still count as done.
DEFAULT_MAX_ERRORS = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL")
    parser.add_argument(
        "--db", help=f"SQLAlchemy URL of the store (default {config.VISDUP_DATABASE_URL})"
    )
    parser.add_argument(
        "--frontier",
        metavar="redis://HOST:PORT/DB",
        help="share the crawl with every process started with the same frontier (PostgreSQL --db)",
    )
    parser.add_argument(
        "--crawl-id",
        metavar="NAME",
        help=(
            "the crawl's snapshot: a new name fetches every page again, a known one continues "
            "(default: the last unfinished snapshot of these sites, else HOSTS-YYYY-MM-DD); "
            "with --frontier also the shared crawl's name"
        ),
    )
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy/visdup setting",
    )
    parser.add_argument("--any-domain", action="store_true", help="follow links to other domains")
    parser.add_argument(
        "--max-pages",
        type=int,
        default=0,
        metavar="N",
        help="fetch and store N pages, then stop (0: no limit); a later run continues",
    )
    parser.add_argument(
        "--max-errors",
        type=int,
        default=DEFAULT_MAX_ERRORS,
        metavar="N",
        help=(
            "exit with status 1 when callbacks and pipelines raised more than N errors "
            f"(default {DEFAULT_MAX_ERRORS})"
        ),
    )
    parser.add_argument(
        "--report", action="store_true", help="print the report when the crawl ends"
    )


def crawl_settings(args: argparse.Namespace) -> dict[str, object]:
    from visdup import project_settings

    settings: dict[str, object] = {
        k: getattr(project_settings, k) for k in dir(project_settings) if k.isupper()
    }
    if args.db:
        settings["VISDUP_DATABASE_URL"] = args.db
    if getattr(args, "frontier", None):
        settings["VISDUP_FRONTIER_URL"] = args.frontier
    if getattr(args, "crawl_id", None):
        settings["VISDUP_CRAWL_ID"] = args.crawl_id
    settings.update(parse_overrides(args.set))
    return settings


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``-s NAME=VALUE`` options as a dict (values stay text; settings convert them).

    A ``VISDUP_*`` name that is no setting is refused with the nearest one.
    """
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"-s takes NAME=VALUE, not {item!r}")
        out[name.strip()] = value
    config.check_known(out)
    return out


def check_store(url: str) -> Callable[[], None]:
    """Open the store once (create or migrate it, connect, claim SQLite's writer lock) and close
    it, keeping the writer lock for the crawl's store; the callable given back releases the
    lock when the crawl never took it (call it once the crawl is over).

    A wrong URL, a missing driver, an unreachable server or a live crawl on the same SQLite
    file is found here, before anything is fetched; messages never show the password.
    """
    from visdup.storage.store import Store
    from visdup.storage.urls import mask_password

    try:
        store = Store.from_url(url, writer=True)
    except VisdupError:
        raise  # the store's own errors name the problem without the password
    except Exception as exc:  # a driver's own error
        raise StoreError(
            f"cannot open the store {mask_password(url)}: {_without_password(str(exc), url)}"
        ) from None
    return store.close_handing_over()


def _without_password(message: str, url: str) -> str:
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if password and len(password) >= 4:  # a shorter one would mask ordinary words
        for secret in {password, unquote(password)}:
            message = message.replace(secret, "***")
    return message


def _no_lock() -> None:
    pass


def check(args: argparse.Namespace) -> tuple[dict[str, Any], Callable[[], None]]:
    """The crawl's settings, with every check that needs no page done; InputError otherwise.

    Also the release of SQLite's writer lock, which the check keeps for the crawl: call it
    once the crawl is over.
    """
    from visdup.spiders.site import start_url_problem

    for url in args.urls:
        problem = start_url_problem(url)
        if problem:
            raise InputError(problem)
    if args.max_pages < 0:
        raise InputError(f"--max-pages must be 0 or more, not {args.max_pages}")
    if args.max_errors < 0:
        raise InputError(f"--max-errors must be 0 or more, not {args.max_errors}")
    settings = crawl_settings(args)
    config.check_known(settings)
    resolved = config.resolve(settings)
    if resolved["VISDUP_FRONTIER_URL"]:
        from visdup.scheduler import refuse_sqlite
        from visdup.storage.redis_frontier import connect

        if resolved["VISDUP_ENABLED"]:
            refuse_sqlite(resolved["VISDUP_DATABASE_URL"])
        connect(resolved["VISDUP_FRONTIER_URL"]).close()
    if resolved["VISDUP_ENABLED"]:
        return settings, check_store(resolved["VISDUP_DATABASE_URL"])
    return settings, _no_lock


class _Errors:
    """Callback and pipeline errors of one crawl (Scrapy counts the first only in its log)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


def outcome(
    reason: str | None,
    errors: int,
    max_errors: int,
    *,
    stored: int = 0,
    start_problems: Mapping[str, str] | None = None,
    starts: int = 1,
) -> tuple[int, str | None]:
    """The exit status of a crawl, and the one line that says why when it is not 0.

    ``reason``: why it closed (None: it never started); ``stored``: pages it stored (or
    handed on, with visdup off); ``start_problems``: why start URLs gave no page, by URL.
    """
    from visdup.spiders.site import BAD_INPUT_REASON, MAX_PAGES_REASON

    problems = dict(start_problems or {})
    if reason is None:
        return CRAWL_NOTHING, "the crawl could not start (the ERROR above says why)"
    if reason == BAD_INPUT_REASON:
        return CRAWL_NOTHING, None  # the spider logged the one line
    if problems and not stored:
        url, why = next(iter(problems.items()))
        more = f" (and {len(problems) - 1} more start URLs)" if len(problems) > 1 else ""
        return CRAWL_NOTHING, f"nothing stored: {url} {why}{more}"
    lost = []
    if reason not in {"finished", MAX_PAGES_REASON}:
        lost.append(f"it stopped early ({reason})")
    if errors > max_errors:
        lost.append(f"{errors} callback and pipeline errors (more than --max-errors {max_errors})")
    if problems:
        url, why = next(iter(problems.items()))
        lost.append(f"{len(problems)} of {starts} start URLs gave no page ({url} {why})")
    if not lost:
        return 0, None
    then = (
        "Fix or drop that start URL, then run the same command again"
        if len(lost) == 1 and problems
        else "Run the same command again to fetch the pages not stored"
    )
    return CRAWL_FAILED, (
        f"the crawl lost work: {'; '.join(lost)}; {stored} pages stored. {then} "
        "(stored pages are not fetched again)"
    )


def _stored(stats: Mapping[str, Any], enabled: bool) -> int:
    """Pages the crawl stored, new or fetched again (with visdup off: pages it handed on)."""
    if not enabled:
        return int(stats.get("item_scraped_count", 0) or 0)
    return int(stats.get("visdup/pages", 0) or 0) + int(stats.get("visdup/already_stored", 0) or 0)


def run(args: argparse.Namespace) -> int:
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerProcess

    from visdup.cli.output import error
    from visdup.spiders.failures import no_network_tracebacks
    from visdup.spiders.site import SiteSpider

    settings, release = check(args)
    try:
        process = AsyncCrawlerProcess(settings)
        crawler = process.create_crawler(SiteSpider)
        errors = _Errors()
        crawler.signals.connect(errors, signal=signals.spider_error)
        crawler.signals.connect(errors, signal=signals.item_error)
        process.crawl(
            crawler,
            url=",".join(args.urls),
            any_domain=args.any_domain,
            max_pages=args.max_pages or None,
        )
        with no_network_tracebacks():
            process.start()
    finally:
        release()
    try:
        stats = crawler.stats.get_stats()
    except RuntimeError:  # the crawl never started: a component refused it (logged)
        stats = {}
    resolved = config.resolve(settings)
    status, why = outcome(
        stats.get("finish_reason"),
        errors.count,
        args.max_errors,
        stored=_stored(stats, resolved["VISDUP_ENABLED"]),
        start_problems=getattr(crawler.spider, "start_problems", None),
        starts=len(args.urls),
    )
    if why is not None:
        error(why)
    if status:
        return status
    if args.report:
        from visdup.escape import terminal
        from visdup.report.summary import build_report, render_text
        from visdup.storage.store import Store

        store = Store.from_url(resolved["VISDUP_DATABASE_URL"], create=False, migrate=False)
        try:
            print(terminal(render_text(build_report(store))))
        finally:
            store.close()
    return status
