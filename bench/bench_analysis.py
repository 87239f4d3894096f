"""One page's analysis as the crawl runs it: on the response's tree (copied) or from bytes.

    .venv/bin/python bench/bench_analysis.py [--set python|postgres] [--pages 100]

Prints, per page: Scrapy's parse of the response, the copy of its tree the analysis works
on, the whole analysis on that tree and from the bytes alone; and on how many pages the two
ways give the same term, structural SimHash, text print and template input. Prints figures
only.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy.http import HtmlResponse  # noqa: E402

from bench._data import debian_docs, html_files  # noqa: E402
from visdup.dedup.analysis import AnalysisOptions, analyse  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="python", choices=["python", "postgres"])
    ap.add_argument("--pages", type=int, default=100)
    args = ap.parse_args()
    root = debian_docs(args.set)
    bodies = [p.read_bytes() for p in html_files(root, args.pages)]
    options = AnalysisOptions(content=True, template=True)
    t = {"scrapy parse": 0.0, "tree copy": 0.0, "analysis on tree": 0.0, "from bytes": 0.0}
    same = 0
    for i, body in enumerate(bodies):
        url = f"http://127.0.0.1/{i}.html"
        response = HtmlResponse(url, body=body, headers={"Content-Type": "text/html"})
        t0 = time.perf_counter()
        tree = response.selector.root
        t1 = time.perf_counter()
        copy.deepcopy(tree)
        t2 = time.perf_counter()
        on_tree = analyse(
            body,
            url=url,
            content_type="text/html",
            tree=tree,
            encoding=response.encoding,
            options=options,
        )
        t3 = time.perf_counter()
        fresh = analyse(body, url=url, content_type="text/html", options=options)
        t4 = time.perf_counter()
        t["scrapy parse"] += t1 - t0
        t["tree copy"] += t2 - t1
        t["analysis on tree"] += t3 - t2
        t["from bytes"] += t4 - t3
        a, b = on_tree, fresh
        same += (
            str(a.term) == str(b.term)
            and a.simhash == b.simhash
            and (a.content.to_json() if a.content else None)
            == (b.content.to_json() if b.content else None)
            and (a.template_input.layout.labels if a.template_input else None)
            == (b.template_input.layout.labels if b.template_input else None)
        )
    n = len(bodies)
    print(f"{args.set}: {n} pages")
    for name, seconds in t.items():
        print(f"  {name:18} {seconds / n * 1e3:7.2f} ms/page")
    print(f"  copy / parse       {t['tree copy'] / t['scrapy parse']:.2f}")
    print(f"  same results both ways: {same}/{n}")


if __name__ == "__main__":
    main()
