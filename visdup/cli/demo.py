"""visdup demo: serve the embedded demo site on 127.0.0.1, crawl it into SQLite, report."""

from __future__ import annotations

import argparse

from visdup.cli.crawl import CRAWL_FAILED, check_store, crawl_settings
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve

HELP = "crawl the embedded demo site into a SQLite store and print the report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default="sqlite:///visdup-demo.sqlite3", help="store URL")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from scrapy.crawler import AsyncCrawlerProcess

    from visdup import config
    from visdup.cli.output import error
    from visdup.escape import one_line, terminal
    from visdup.report.summary import build_report, render_json, render_text
    from visdup.spiders.site import SiteSpider
    from visdup.storage.store import Store

    settings = crawl_settings(args)
    if not any(s.startswith("LOG_LEVEL=") for s in args.set):
        settings["LOG_LEVEL"] = "WARNING"
    db = config.resolve(settings)["VISDUP_DATABASE_URL"]
    release = check_store(db)
    try:
        with serve(SITE_ROOT) as server:
            print(
                f"Serving the demo site at {server.url}/ and crawling it into {one_line(db)}",
                flush=True,
            )
            process = AsyncCrawlerProcess(settings)
            crawler = process.create_crawler(SiteSpider)
            process.crawl(crawler, url=server.url_for("/"))
            process.start()
    finally:
        release()
    try:
        reason = crawler.stats.get_value("finish_reason")
    except RuntimeError:  # never started: a component refused it (logged)
        reason = None
    if reason != "finished":
        error(f"the demo crawl failed: {reason or 'it could not start'}")
        return CRAWL_FAILED
    store = Store.from_url(db)
    try:
        report = build_report(store)
    finally:
        store.close()
    print(render_json(report) if args.json else terminal(render_text(report)))
    return 0
