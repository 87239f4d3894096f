"""visdup crawl URL...: crawl sites with the ``site`` spider into a visdup store."""

from __future__ import annotations

import argparse

from visdup.errors import InputError

HELP = "crawl one or more sites and label every page (store: --db, default ./visdup.sqlite3)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL")
    parser.add_argument(
        "--db", help="SQLAlchemy URL of the store (default sqlite:///visdup.sqlite3)"
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
    parser.add_argument("--max-pages", type=int, default=0, help="stop after this many pages")
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


def run(args: argparse.Namespace) -> int:
    from scrapy.crawler import AsyncCrawlerProcess

    from visdup.spiders.site import SiteSpider

    settings = crawl_settings(args)
    process = AsyncCrawlerProcess(settings)
    try:
        process.crawl(
            SiteSpider,
            url=",".join(args.urls),
            any_domain=args.any_domain,
            max_pages=args.max_pages or None,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    process.start()
    if args.report:
        from visdup.report.summary import build_report, render_text
        from visdup.storage.store import Store

        store = Store.from_url(str(settings.get("VISDUP_DATABASE_URL", "sqlite:///visdup.sqlite3")))
        print(render_text(build_report(store)))
    return 0
