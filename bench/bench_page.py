"""Per-page analysis cost by stage, and a digest of every stage's output.

    .venv/bin/python bench/bench_page.py [--set python|aeb|warpcore|readability] [--pages 150]

Stages: clean (title + invisible nodes), main_content, content_print, dom_tree on a cleaned
page. Parsing is done before the clock starts. The digest line lets two versions of the code
be compared on the same pages: equal digests mean equal results. Prints figures only.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import SHARED, debian_docs, html_files  # noqa: E402
from visdup.content import main_content  # noqa: E402
from visdup.content.textprint import content_print  # noqa: E402
from visdup.dedup.analysis import clean  # noqa: E402
from visdup.page.parse import parse_html  # noqa: E402
from visdup.templates.stm import dom_tree  # noqa: E402


def pages(which: str, limit: int) -> list[bytes]:
    if which == "python":
        return [p.read_bytes() for p in html_files(debian_docs("python"), limit)]
    if which == "aeb":
        files = sorted((SHARED / "aeb" / "html").glob("*.html.gz"))[:limit]
        return [gzip.decompress(p.read_bytes()) for p in files]
    if which == "warpcore":
        files = sorted((SHARED / "warpcore" / "site").rglob("*.html"))[:limit]
        return [p.read_bytes() for p in files]
    if which == "readability":  # one page of each of 130 sites: their own style sheets
        files = sorted((SHARED / "readability-pages" / "pages").glob("*/source.html"))[:limit]
        return [p.read_bytes() for p in files]
    raise SystemExit(f"unknown set {which}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="python")
    ap.add_argument("--pages", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    bodies = pages(args.set, args.pages)
    timing = {"clean": 0.0, "main_content": 0.0, "content_print": 0.0, "dom_tree": 0.0}
    digest = hashlib.sha1()
    for rnd in range(args.rounds):
        for body in bodies:
            doc = parse_html(body)
            if doc.root is None:
                continue
            t0 = time.perf_counter()
            clean(doc)
            t1 = time.perf_counter()
            tree = dom_tree(doc.root, denoise=False)
            t2 = time.perf_counter()
            content = main_content(doc.root, cleaned=True, title=doc.title)
            t3 = time.perf_counter()
            cp = content_print(content.blocks, listing=content.listing)
            t4 = time.perf_counter()
            timing["clean"] += t1 - t0
            timing["dom_tree"] += t2 - t1
            timing["main_content"] += t3 - t2
            timing["content_print"] += t4 - t3
            if rnd == 0:
                node = content.node
                where = node.getroottree().getpath(node) if node is not None else None
                out = [tree.to_dict(), content.title, where, content.text, content.blocks]
                digest.update(json.dumps(out).encode())
                digest.update(cp.to_json().encode())
    n = len(bodies) * args.rounds
    total = sum(timing.values())
    print(f"{args.set}: {len(bodies)} pages x {args.rounds} rounds")
    for name, t in timing.items():
        print(f"  {name:14} {t / n * 1e3:7.2f} ms/page")
    print(f"  {'total':14} {total / n * 1e3:7.2f} ms/page")
    print(f"  digest {digest.hexdigest()}")


if __name__ == "__main__":
    main()
