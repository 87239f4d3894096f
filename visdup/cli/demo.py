"""visdup demo: serve the embedded demo site on 127.0.0.1, crawl it into SQLite, report."""

from __future__ import annotations

import argparse
import logging

from visdup.cli.crawl import crawl_settings
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve

HELP = "crawl the embedded demo site into a SQLite store and print the report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default="sqlite:///visdup-demo.sqlite3", help="store URL")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from scrapy.crawler import AsyncCrawlerProcess

    from visdup.report.summary import build_report, render_json, render_text
    from visdup.spiders.site import SiteSpider
    from visdup.storage.store import Store

    args.any_domain = False
    settings = crawl_settings(args)
    settings.setdefault("LOG_LEVEL", "INFO")
    settings["LOG_LEVEL"] = (
        settings.get("LOG_LEVEL")
        if any(s.startswith("LOG_LEVEL=") for s in args.set)
        else "WARNING"
    )
    with serve(SITE_ROOT) as server:
        print(f"Serving the demo site at {server.url}/ and crawling it into {args.db}", flush=True)
        process = AsyncCrawlerProcess(settings)
        process.crawl(SiteSpider, url=server.url_for("/"))
        process.start()
    logging.getLogger("visdup").info("demo crawl finished")
    report = build_report(Store.from_url(args.db))
    print(render_json(report) if args.json else render_text(report))
    return 0
