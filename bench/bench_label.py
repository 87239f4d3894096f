"""The labelling alone, as the label process runs it: every page analysed once first, then
labelled in order against the pages before it (candidates, bounds, exact measures, verdict,
the page's transaction), then the final pass over the whole set (visdup.dedup.settle).

    python bench/bench_label.py [--sets python,postgres,warpcore,aeb,swde] [--rounds 2]
                                [--db postgresql+psycopg://postgres@127.0.0.1:5432/postgres]

Prints, per set and round, the labelling's CPU per page (the thread's own, the analysis left
out) and its wall time (with the waits on the store's file), how many candidates each channel
ranked, refined and measured, and a digest of every label and comparison stored, as labelled
and after the final pass: two versions of visdup that differ only in how fast they label must
print the same digests. ``--db`` labels into PostgreSQL instead of a SQLite file: a database
of its own for each run, made on that server and dropped after (the URL names the database to
connect to for that); the digests read the same rows, so they match SQLite's. The label
process of a crawl
spends this plus the template clusters and the drift snapshot; on a machine with a core for
each of visdup's processes its serial work bounds the crawl's pace (``bench/bench_crawl.py``
prints that estimate).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import new_store_url
from bench.bench_recall import load_set
from visdup.dedup.analysis import analyse
from visdup.dedup.offline import FileLabeller
from visdup.storage.store import Store

#: What the digest reads of the store: the labels, then every comparison measured.
PAGES = (
    "SELECT url, verdict, kind, similarity, duplicate_of, content_similarity,"
    " content_duplicate_of, content_kind FROM visdup_pages ORDER BY id"
)
COMPARISONS = (
    "SELECT page_id, other_id, channel, similarity FROM visdup_comparisons"
    " ORDER BY page_id, other_id, channel"
)


def digest(url: str, root: str) -> str:
    """A hash of every label and comparison the store holds, in page order; pages are named
    by their path under ``root``, so that the digest does not depend on where the set lies."""
    h = hashlib.sha256()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            for query in (PAGES, COMPARISONS):
                for row in conn.execute(text(query)):
                    values = tuple(row)
                    if query is PAGES:
                        values = (os.path.relpath(values[0], root), *values[1:])
                    h.update(repr(values).encode())
    finally:
        engine.dispose()
    return h.hexdigest()[:16]


def run(which: str, pages: list[tuple[str, bytes]], server: str | None = None) -> str:
    root = os.path.commonpath([name for name, _body in pages])
    with new_store_url(server) as url:
        store = Store.from_url(url)
        try:
            labeller = FileLabeller(store)
            analyses = [analyse(body, url=name, options=labeller.options) for name, body in pages]
            started, clock = time.thread_time(), time.perf_counter()
            for (name, body), page in zip(pages, analyses, strict=True):
                labeller.add(name, body, page)
            spent, waited = time.thread_time() - started, time.perf_counter() - clock
            online = digest(url, root)
            started = time.thread_time()
            labeller.settle()
            final = time.thread_time() - started
        finally:
            store.close()
        counts = labeller.counts
        line = (
            f"{which}: {len(pages)} pages, labelling {1000 * spent / len(pages):.2f} ms CPU a page"
            f" ({1000 * waited / len(pages):.2f} ms wall),"
            f" final pass {1000 * final / len(pages):.2f} ms;"
            f" candidates {counts.get('visdup/candidates', 0)},"
            f" structure bounds refined {counts.get('visdup/ted_bounds', 0)},"
            f" exact TEDs {counts.get('visdup/ted_calls', 0)},"
            f" measured again {counts.get('visdup/settled/measured', 0)};"
            f" digest {online}, final {digest(url, root)}"
        )
    return line


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="python,postgres,warpcore")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--db", default=None, help="a PostgreSQL server's URL (default: SQLite)")
    args = ap.parse_args()
    for which in args.sets.split(","):
        pages = load_set(which, 0, 0)  # every page of the set, in path order
        if not pages:
            print(f"{which}: skipped (data absent)")
            continue
        for _ in range(args.rounds):
            print(run(which, pages, args.db), flush=True)


if __name__ == "__main__":
    main()
