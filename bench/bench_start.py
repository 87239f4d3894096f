"""How soon a crawl labels its first page, with visdup's default processes.

    python bench/bench_start.py [--rounds 7] [--processes 2]

Each round crawls the embedded demo site in a fresh Python process (as ``scrapy crawl``
would: nothing imported beforehand) with worker processes and the label process, and prints
three intervals: from the crawl's start (``Crawler.crawl``) to the spider's opening, from
the opening to the first page labelled (its item scraped), and from the start to that page.
Then the median of each. The processes start as the crawl starts so that the first page does
not wait for their imports; this is the figure that shows whether they still do.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ONE = r"""
import json, sys, time
t_import = time.perf_counter()
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from visdup.demo.server import serve
from visdup.spiders.site import SiteSpider

marks = {}
def mark(name):
    marks.setdefault(name, time.perf_counter())

server = serve(sys.argv[1])
process = CrawlerProcess({
    "ADDONS": {"visdup.Addon": 100},
    "VISDUP_DATABASE_URL": "sqlite:///" + sys.argv[2],
    "VISDUP_ANALYSIS_PROCESSES": int(sys.argv[3]),
    "LOG_LEVEL": "ERROR",
    "TELNETCONSOLE_ENABLED": False,
})
crawler = process.create_crawler(SiteSpider)
def opened(spider):
    mark("opened")
def scraped(item, response, spider):
    mark("first")
crawler.signals.connect(opened, signal=signals.spider_opened)
crawler.signals.connect(scraped, signal=signals.item_scraped)
mark("start")
process.crawl(crawler, url=server.url)
process.start()
server.close()
print(json.dumps({k: v - marks["start"] for k, v in marks.items()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    site = Path(__file__).resolve().parent.parent / "visdup" / "demo" / "site"
    rows: list[dict[str, float]] = []
    print(f"{'round':>5} {'start→open':>11} {'open→first':>11} {'start→first':>12}")
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            began = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", ONE, str(site), f"{tmp}/v.sqlite3", str(args.processes)],
                capture_output=True,
                text=True,
                check=True,
            )
            marks = json.loads(out.stdout.strip().splitlines()[-1])
            row = {
                "open": marks["opened"],
                "first": marks["first"] - marks["opened"],
                "total": marks["first"],
                "wall": time.perf_counter() - began,
            }
            rows.append(row)
            print(f"{n:>5} {row['open']:>10.3f}s {row['first']:>10.3f}s {row['total']:>11.3f}s")
    med = {k: statistics.median(r[k] for r in rows) for k in ("open", "first", "total")}
    print(f"{'med':>5} {med['open']:>10.3f}s {med['first']:>10.3f}s {med['total']:>11.3f}s")


if __name__ == "__main__":
    main()
