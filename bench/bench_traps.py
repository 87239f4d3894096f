"""Crawl traps with and without visdup's limits: a page with many links and an endless calendar.

Prints, for each configuration, the seconds the crawl ran, the pages fetched and the requests
left queued when it stopped: with ``VISDUP_MAX_LINKS_PER_PAGE`` and ``VISDUP_TEMPLATE_BUDGET``
the crawl ends by itself; without them it runs until ``--seconds`` closes it.

    .venv/bin/python bench/bench_traps.py [--links 100000] [--seconds 30] [--budget 50]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from scrapy.crawler import AsyncCrawlerProcess

from visdup.spiders.site import SiteSpider


def make_handler(links: int) -> type[BaseHTTPRequestHandler]:
    class Trap(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/":
                body = "<a href='/big.html'>big</a> <a href='/calendar/2026/1/'>calendar</a>"
            elif path == "/big.html":
                body = "".join(f"<a href='/item/{i}.html'>item {i}</a> " for i in range(links))
            elif path.startswith("/item/"):
                body = f"<h1>{path}</h1><p>An item.</p><a href='/'>home</a>"
            elif m := re.fullmatch(r"/calendar/(\d+)/(\d+)/", path):
                y, mo = int(m[1]), int(m[2])
                body = (
                    f"<h1>{y}-{mo:02d}</h1><table><tr><td>1</td><td>2</td></tr></table>"
                    f"<a href='/calendar/{y + mo // 12}/{mo % 12 + 1}/'>next</a>"
                    f"<a href='/calendar/{y - (mo == 1)}/{(mo - 2) % 12 + 1}/'>previous</a>"
                )
            else:
                self.send_error(404)
                return
            raw = f"<!DOCTYPE html><html><body>{body}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Trap


CONFIGS = ("limits", "no-limits")


def crawl_once(args: argparse.Namespace) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args.links))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    limits = {
        "limits": {"VISDUP_MAX_LINKS_PER_PAGE": args.cap, "VISDUP_TEMPLATE_BUDGET": args.budget},
        "no-limits": {"VISDUP_MAX_LINKS_PER_PAGE": 0, "VISDUP_TEMPLATE_BUDGET": 0},
    }[args.config]
    with tempfile.TemporaryDirectory() as tmp:
        process = AsyncCrawlerProcess(
            {
                "ADDONS": {"visdup.Addon": 100},
                "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
                "LOG_LEVEL": "ERROR",
                "ROBOTSTXT_OBEY": False,
                "TELNETCONSOLE_ENABLED": False,
                "CLOSESPIDER_TIMEOUT": args.seconds,
                "CONCURRENT_REQUESTS": 16,
                "VISDUP_DATABASE_URL": f"sqlite:///{Path(tmp) / 'v.sqlite3'}",
                **limits,
            }
        )
        crawler = process.create_crawler(SiteSpider)
        started = time.monotonic()
        process.crawl(crawler, url=url)
        process.start()
        stats = crawler.stats.get_stats()
    server.shutdown()
    queued = stats.get("scheduler/enqueued", 0) - stats.get("scheduler/dequeued", 0)
    print(
        f"{args.config:>9}: {time.monotonic() - started:6.1f} s, "
        f"{stats.get('response_received_count', 0):5d} pages fetched, "
        f"{queued:6d} requests left queued, closed: {stats.get('finish_reason')}, "
        f"links over the page cap {stats.get('visdup/links_over_page_cap', 0)}, "
        f"over the budget {stats.get('visdup/links_over_budget', 0)}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--budget", type=int, default=50)
    parser.add_argument("--cap", type=int, default=1000)
    parser.add_argument("--config", choices=CONFIGS, help="run one configuration only")
    args = parser.parse_args()
    if args.config:
        crawl_once(args)
        return
    for config in CONFIGS:  # one process each (a crawler process starts once), in turn
        subprocess.run([sys.executable, __file__, *sys.argv[1:], "--config", config], check=True)


if __name__ == "__main__":
    main()
