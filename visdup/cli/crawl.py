"""visdup crawl URL...: crawl sites with the ``site`` spider into a visdup store.

Everything is checked before the first request: the URLs (http or https), every VISDUP_
setting (``-s`` included), the database URL, its driver and the connection (the store is
opened, and on SQLite its one-writer lock tried). Exit status: 0 the crawl finished (or reached
``--max-pages``), 1 the crawl failed (it closed for another reason, the store failed, or more
than ``--max-errors`` callback and pipeline errors), 2 bad input (nothing was fetched).
"""

from __future__ import annotations

import argparse
from typing import Any

from visdup import config
from visdup.errors import InputError, StoreError, VisdupError

HELP = "crawl one or more sites and label every page (store: --db, default ./visdup.sqlite3)"

#: Exit status of a crawl that ran and failed.
CRAWL_FAILED = 1
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
    """``-s NAME=VALUE`` options as a dict (values stay text; settings convert them)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"-s takes NAME=VALUE, not {item!r}")
        out[name.strip()] = value
    return out


def check_store(url: str) -> None:
    """Open the store once (create or migrate it, connect, claim SQLite's writer lock) and close.

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
    store.close()


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


def check(args: argparse.Namespace) -> dict[str, Any]:
    """The crawl's settings, with every check that needs no page done; InputError otherwise."""
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
    resolved = config.resolve(settings)
    if resolved["VISDUP_FRONTIER_URL"]:
        from visdup.scheduler import refuse_sqlite
        from visdup.storage.redis_frontier import connect

        if resolved["VISDUP_ENABLED"]:
            refuse_sqlite(resolved["VISDUP_DATABASE_URL"])
        connect(resolved["VISDUP_FRONTIER_URL"]).close()
    if resolved["VISDUP_ENABLED"]:
        check_store(resolved["VISDUP_DATABASE_URL"])
    return settings


class _Errors:
    """Callback and pipeline errors of one crawl (Scrapy counts the first only in its log)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


def outcome(reason: str | None, errors: int, max_errors: int) -> int:
    """The exit status of a crawl that closed for ``reason`` with ``errors`` errors."""
    from visdup.spiders.site import BAD_INPUT_REASON, MAX_PAGES_REASON

    if reason == BAD_INPUT_REASON:
        return 2
    if reason not in {"finished", MAX_PAGES_REASON}:
        return CRAWL_FAILED
    return CRAWL_FAILED if errors > max_errors else 0


def run(args: argparse.Namespace) -> int:
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerProcess

    from visdup.cli.output import error
    from visdup.spiders.site import SiteSpider

    settings = check(args)
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
    process.start()
    try:
        stats = crawler.stats.get_stats()
    except RuntimeError:  # the crawl never started: a component refused it (logged)
        stats = {}
    reason = stats.get("finish_reason")
    status = outcome(reason, errors.count, args.max_errors)
    if status == CRAWL_FAILED:
        if reason is None:
            why = "it could not start (see the log above)"
        elif reason not in {"finished", "max_pages"}:
            why = f"it closed: {reason}"
        else:
            why = f"{errors.count} callback and pipeline errors (more than --max-errors)"
        error(f"the crawl failed: {why}")
        return status
    if args.report:
        from visdup.escape import terminal
        from visdup.report.summary import build_report, render_text
        from visdup.storage.store import Store

        store = Store.from_url(config.resolve(settings)["VISDUP_DATABASE_URL"])
        try:
            print(terminal(render_text(build_report(store))))
        finally:
            store.close()
    return status
