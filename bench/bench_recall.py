"""Recall of the prefilter + confirmation against exhaustive confirmation, per channel.

For every page, in several shuffled orders, the truth is exhaustive: does *any* earlier page
reach the channel's threshold with the channel's own measure (TED similarity for structure,
the layered text fingerprints for content)? visdup's answer is what its labeller found through
the SimHash index, the other candidate sources and the confirmation. Channels:

- structure: an earlier page at >= VISDUP_SIMILARITY_THRESHOLD (a structural near-duplicate);
- template: an earlier page at >= VISDUP_TEMPLATE_THRESHOLD (same template);
- content: an earlier page whose content the content measure calls the same.

The structure channel's recall is printed by size band too (terms under 50 nodes, 50-200,
over 200): a band with fewer than ``--band-pages`` qualifying pages (another page at the
threshold) is filled with generated ones (bench/_variants.py: a site of small pages, and
copies of the set's own pages with one edit). With the content channel off
(``-s VISDUP_CONTENT_ENABLED=false``) the final labels are checked as well: after each order,
:func:`visdup.dedup.settle.settle` groups the whole set, and a page counts when *any* other
page is at the threshold; a grouped page without one is a wrong grouping.

Also printed, per page and quarter of each order (so a cost that grows with the number of
stored pages shows): the structure channel's time (candidate search and confirmation, without
parsing), its candidates (both channels'), the sequence bounds it computed and its exact TED
runs, and the content channel's time (candidate search and confirmation) and exact text
comparisons (those of the catch-up in ``commit`` included). ``--unbounded`` labels each order
a second time with the content channel's bound taken out (every candidate measured, as
before the bound), and prints its figures beside, from the same run.

    .venv/bin/python bench/bench_recall.py [--sets python,postgres,warpcore,aeb,swde]
        [--pages 300] [--orders 3] [--band-pages 30] [--unbounded] [-s NAME=VALUE ...]

The Debian manuals come from ``bash ../shared/data/get-debian-docs.sh debian-docs``; the
other sets from ../shared/data. A set that is absent is skipped.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import REPO, SHARED  # noqa: E402
from bench._variants import mutate, small_site  # noqa: E402
from visdup.config import defaults, flag  # noqa: E402
from visdup.dedup.analysis import AnalysisOptions, analyse  # noqa: E402
from visdup.dedup.label import EXACT, build_labeller  # noqa: E402
from visdup.dedup.settle import settle  # noqa: E402
from visdup.storage.store import Store  # noqa: E402
from visdup.structure.distance import similarity  # noqa: E402
from visdup.verdicts import ORIGINAL  # noqa: E402

DEBIAN = {
    "python": "usr/share/doc/python3.11/html",
    "postgres": "usr/share/doc/postgresql-doc-15/html",
}


def load_set(name: str, limit: int, seed: int) -> list[tuple[str, bytes]]:
    """(name, body) of up to ``limit`` pages of one set, a random sample when it has more."""
    if name in DEBIAN:
        base = Path(os.environ.get("VISDUP_DEBIAN_DOCS", REPO / "debian-docs")) / DEBIAN[name]
        files = sorted(base.rglob("*.html")) if base.is_dir() else []
        read = Path.read_bytes
    elif name == "warpcore":
        files = sorted((SHARED / "warpcore" / "site").rglob("*.html"))
        read = Path.read_bytes
    elif name in ("aeb", "swde"):
        folder = SHARED / ("aeb/html" if name == "aeb" else "swde-booksamillion/pages")
        files = sorted(folder.glob("*.gz"))

        def read(p: Path) -> bytes:
            return gzip.decompress(p.read_bytes())
    else:
        raise SystemExit(f"unknown set {name}")
    if limit and len(files) > limit:
        files = sorted(random.Random(seed).sample(files, limit))
    return [(str(p), read(p)) for p in files]


#: Size bands of the structure channel's recall: (name, fewest nodes, most nodes).
BANDS = (("<50", 0, 49), ("50-200", 50, 200), (">200", 201, 1 << 30))


def band_of(page: Analysed) -> int:
    nodes = page.term.nodes if page.term is not None else 0
    return next(b for b, (_n, low, high) in enumerate(BANDS) if low <= nodes <= high)


def fill_bands(
    raw: list[tuple[str, bytes]], get: Any, need: int, seed: int
) -> tuple[list[Analysed], int]:
    """The set's pages and generated ones, so that each band has ``need`` qualifying pages
    (another page at the structure threshold); and how many were generated."""
    theta = float(get("VISDUP_SIMILARITY_THRESHOLD"))
    max_nodes = int(get("VISDUP_MAX_TERM_NODES"))
    pages = analyse_all(raw, get)
    near = exhaustive(pages, get, content=False)["structure"]
    rng = random.Random(seed)
    made = 0
    for band in range(len(BANDS)):
        have = sum(1 for i, p in enumerate(pages[: len(near)]) if near[i] and band_of(p) == band)
        sources = [
            p
            for p in pages
            if p.term is not None and p.term.nodes <= max_nodes and band_of(p) == band
        ]
        if have >= need:
            continue
        if band == 0 and len(sources) < need:  # too few small pages: a site of them
            small = analyse_all(small_site(seed, 5 * need), get)
            pages += small
            made += len(small)
            sources += [p for p in small if p.term is not None and band_of(p) == 0]
        tries = 0
        while have < need and sources and tries < 40 * need:
            tries += 1
            source = rng.choice(sources)
            body = mutate(source.body, rng, edits=1 + rng.randrange(2 + (band == 2)))
            url = f"{source.record.url}?variant={tries}"
            copy = analyse_all([(url, body)], get)[0]
            if copy.term is None or band_of(copy) != band:
                continue
            sim = similarity(source.term, copy.term, at_least=theta - 0.02, max_nodes=max_nodes)
            if sim < theta - 0.02 or sim >= 1.0:
                continue
            pages.append(copy)
            made += 1
            have += sim >= theta
    return pages, made


@dataclasses.dataclass
class Analysed:
    record: Any
    term: Any
    content: Any
    body: bytes = b""


def analyse_all(pages: list[tuple[str, bytes]], get: Any) -> list[Analysed]:
    options = AnalysisOptions(content=flag(get("VISDUP_CONTENT_ENABLED")), template=False)
    out = []
    for name, body in pages:
        page = analyse(body, url=name, options=options)
        out.append(Analysed(page.record(keep_body=False), page.term, page.content, body))
    return out


def exhaustive(pages: list[Analysed], get: Any, content: bool = True) -> dict[str, list[set[int]]]:
    """For each channel and page, every other page at or above the channel's threshold
    (``content``: the content channel's too)."""
    theta = float(get("VISDUP_SIMILARITY_THRESHOLD"))
    template = min(theta, float(get("VISDUP_TEMPLATE_THRESHOLD")))
    max_nodes = int(get("VISDUP_MAX_TERM_NODES"))
    n = len(pages)
    near: dict[str, list[set[int]]] = {c: [set() for _ in range(n)] for c in CHANNELS}
    for i in range(n):
        a = pages[i].term
        if a is None or a.nodes > max_nodes:
            continue
        for j in range(i + 1, n):
            b = pages[j].term
            if b is None or b.nodes > max_nodes:
                continue
            same_bytes = pages[i].record.body_hash == pages[j].record.body_hash
            sim = 1.0 if same_bytes else similarity(a, b, at_least=template, max_nodes=max_nodes)
            if sim >= template:
                near["template"][i].add(j)
                near["template"][j].add(i)
            if sim >= theta:
                near["structure"][i].add(j)
                near["structure"][j].add(i)
    if not content:
        return near
    # the content measure is the labeller's own, built from the same settings
    scratch, path = _store()
    try:
        channel = build_labeller(scratch, get, count=lambda _k, _n=1: None).channels.get("content")
    finally:
        scratch.close()
        path.unlink(missing_ok=True)
    if channel is not None:
        ok = [p.content is not None and channel.accepts(p.content) for p in pages]
        for i in range(n):
            if not ok[i]:
                continue
            for j in range(i + 1, n):
                if not ok[j]:
                    continue
                _score, kind = channel.measure(pages[i].content, pages[j].content, None)
                if kind is not None:
                    near["content"][i].add(j)
                    near["content"][j].add(i)
    return near


CHANNELS = ("structure", "template", "content")


def _store() -> tuple[Store, Path]:
    handle, name = tempfile.mkstemp(prefix="visdup-recall-", suffix=".sqlite3")
    os.close(handle)
    return Store.from_url(f"sqlite:///{name}"), Path(name)


def run_order(
    pages: list[Analysed], order: list[int], get: Any, unbounded: bool = False
) -> dict[str, Any]:
    """Label the pages in ``order`` with the real labeller; what it found, and its cost.

    ``unbounded``: without the content channel's bound, every candidate measured.
    """
    counts: dict[str, int] = {}

    def count(key: str, n: int = 1) -> None:
        counts[key] = counts.get(key, 0) + n

    theta = float(get("VISDUP_SIMILARITY_THRESHOLD"))
    template = min(theta, float(get("VISDUP_TEMPLATE_THRESHOLD")))
    store, path = _store()
    found: dict[str, list[bool]] = {c: [False] * len(pages) for c in CHANNELS}
    cost: list[tuple[float, float, int, int, int, int]] = []
    keys = ("visdup/candidates", "visdup/ted_calls", "visdup/ted_bounds", "content/measures")
    try:
        labeller = build_labeller(store, get, count=count)
        channel = labeller.channels.get("content")
        if channel is not None and unbounded:
            channel.summarise = channel.bound = None
            channel.exact_bound = False
        if channel is not None:  # every exact text comparison, whichever confirm asked for it
            exact = channel.measure

            def measure(a: Any, b: Any, budget: Any) -> tuple[float, str | None]:
                count("content/measures")
                return exact(a, b, budget)

            channel.measure = measure
        run_id = store.begin_run("bench")
        for i in order:
            page = pages[i]
            record = dataclasses.replace(page.record)
            before = [counts.get(key, 0) for key in keys]
            t0 = time.perf_counter()
            prepared = {"structure": labeller.prepare("structure", record.simhash, page.term)}
            t1 = time.perf_counter()
            if page.content is not None and "content" in labeller.channels:
                prepared["content"] = labeller.prepare(
                    "content", record.content_simhash, page.content
                )
            t2 = time.perf_counter()
            labeller.commit(record, prepared, run_id)
            candidates, teds, bounds, texts = (
                counts.get(key, 0) - b for key, b in zip(keys, before, strict=True)
            )
            cost.append((t1 - t0, t2 - t1, candidates, teds, bounds, texts))
            match = prepared["structure"].match
            best = 1.0 if record.kind == EXACT else (match.similarity if match else 0.0)
            found["structure"][i] = best >= theta
            found["template"][i] = best >= template
            content = prepared.get("content")
            found["content"][i] = content is not None and content.match is not None
        # structure alone: the final labels group the whole set, whatever the order
        final = [False] * len(pages)
        if "content" not in labeller.channels:
            settle(store, labeller)
            grouped = {
                r.url
                for r in store.rows("url", "verdict", "duplicate_of")
                if r.duplicate_of is not None or r.verdict == ORIGINAL
            }
            final = [p.record.url in grouped for p in pages]
        # what the report reads: the page's verdict and content match, its content comparisons
        columns = ("verdict", "kind", "duplicate_of", "content_duplicate_of", "content_similarity")
        labels = {r.id: tuple(getattr(r, c) for c in columns) for r in store.rows("id", *columns)}
        stored = sorted(
            (r.page_id, r.other_id, r.similarity)
            for r in store.comparison_rows()
            if r.channel == "content"
        )
    finally:
        store.close()
        path.unlink(missing_ok=True)
    return {
        "found": found,
        "final": final,
        "cost": cost,
        "counts": counts,
        "labels": labels,
        "stored": stored,
    }


def by_band(
    pages: list[Analysed],
    near: list[set[int]],
    position: dict[int, int],
    result: dict[str, Any],
    totals: list[list[int]],
) -> str:
    """The structure channel's recall per size band: against an earlier page as labelled,
    and (structure alone) against any other page in the final labels."""
    parts = []
    for band, (label, _low, _high) in enumerate(BANDS):
        members = [i for i in range(len(pages)) if band_of(pages[i]) == band]
        want = [i for i in members if any(position[j] < position[i] for j in near[i])]
        got = sum(result["found"]["structure"][i] for i in want)
        text = f"{label}: {got}/{len(want)}"
        totals[band][0] += got
        totals[band][1] += len(want)
        if any(result["final"]):
            anyone = [i for i in members if near[i]]
            final = sum(result["final"][i] for i in anyone)
            wrong = sum(result["final"][i] and not near[i] for i in members)
            text += f", final {final}/{len(anyone)} ({wrong} wrong)"
            totals[band][2] += final
            totals[band][3] += len(anyone)
            totals[band][4] += wrong
        parts.append(text)
    return "structure by size: " + "; ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="python,postgres,warpcore,aeb,swde")
    ap.add_argument("--pages", type=int, default=300, help="pages per set (0: all)")
    ap.add_argument("--orders", type=int, default=3, help="shuffled orders per set")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--band-pages", type=int, default=30, help="qualifying pages per size band (0: no fill)"
    )
    ap.add_argument("--unbounded", action="store_true", help="also label without the content bound")
    ap.add_argument("-s", dest="overrides", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    over = dict(o.split("=", 1) for o in args.overrides)
    base = defaults()
    get = lambda name: over.get(name, base[name])  # noqa: E731

    totals: dict[str, list[int]] = {c: [0, 0] for c in CHANNELS}
    bands = [[0, 0, 0, 0, 0] for _ in BANDS]
    for name in args.sets.split(","):
        raw = load_set(name, args.pages, args.seed)
        if not raw:
            print(f"{name}: no pages (absent), skipped")
            continue
        t0 = time.perf_counter()
        pages, made = fill_bands(raw, get, args.band_pages, args.seed)
        t1 = time.perf_counter()
        near = exhaustive(pages, get)
        t2 = time.perf_counter()
        print(
            f"\n{name}: {len(pages)} pages, {made} of them generated (analysis {t1 - t0:.1f} s, "
            f"exhaustive confirmation {t2 - t1:.1f} s)"
        )
        for o in range(args.orders):
            order = list(range(len(pages)))
            random.Random(args.seed * 1000 + o).shuffle(order)
            result = run_order(pages, order, get)
            plain = run_order(pages, order, get, unbounded=True) if args.unbounded else None
            position = {page: at for at, page in enumerate(order)}
            parts = []
            for channel in CHANNELS:
                # qualifying: some page earlier in this order reaches the threshold
                want = [
                    i for i in order if any(position[j] < position[i] for j in near[channel][i])
                ]
                got = sum(result["found"][channel][i] for i in want)
                wrong = sum(result["found"][channel][i] and i not in want for i in order)
                totals[channel][0] += got
                totals[channel][1] += len(want)
                recall = got / len(want) if want else 1.0
                extra = f", {wrong} not confirmed exhaustively" if wrong else ""
                parts.append(f"{channel} {recall:.3f} ({got}/{len(want)}{extra})")
            cost = result["cost"]
            q = max(1, len(cost) // 4)

            def summary(rows: list[tuple[float, float, int, int, int, int]]) -> str:
                ms = statistics.mean(r[0] for r in rows) * 1000
                worst = max(r[0] for r in rows) * 1000
                content = statistics.mean(r[1] for r in rows) * 1000
                cands, teds, bounds, texts = (
                    statistics.mean(r[k] for r in rows) for k in (2, 3, 4, 5)
                )
                return (
                    f"structure {ms:5.1f} ms (max {worst:4.0f}), {cands:5.1f} cand, "
                    f"{bounds:5.1f} bounds, {teds:4.1f} TED; content {content:5.1f} ms, "
                    f"{texts:5.1f} measures"
                )

            print(f"  order {o}: " + "; ".join(parts))
            print("    " + by_band(pages, near["structure"], position, result, bands))
            for quarter in range(4):
                cut = slice(quarter * q, (quarter + 1) * q if quarter < 3 else len(cost))
                line = f"    per page, stored pages {quarter * q:4d}+: {summary(cost[cut])}"
                if plain is not None:
                    rows = plain["cost"][cut]
                    line += (
                        f" (unbounded {statistics.mean(r[1] for r in rows) * 1000:5.1f} ms, "
                        f"{statistics.mean(r[5] for r in rows):5.1f} measures)"
                    )
                print(line)
            if plain is not None:
                differ = sum(
                    a != b
                    for a, b in zip(
                        result["found"]["content"], plain["found"]["content"], strict=True
                    )
                )
                labels = sum(plain["labels"].get(k) != v for k, v in result["labels"].items())
                mine, theirs = set(result["stored"]), set(plain["stored"])
                print(
                    f"    with and without the content bound: {differ} pages found differently, "
                    f"{labels} labels differ; stored content comparisons "
                    f"{len(mine)} and {len(theirs)}, {len(mine ^ theirs)} not in both"
                )
            skipped = result["counts"].get("visdup/ted_skipped", 0)
            if skipped:
                print(f"    comparisons skipped by the work budget: {skipped}")
    print("\nall sets and orders:")
    for channel in CHANNELS:
        got, want = totals[channel]
        print(f"  {channel:9s} recall {got / want if want else 1.0:.4f} ({got}/{want})")
    for (label, _low, _high), (got, want, final, anyone, wrong) in zip(BANDS, bands, strict=True):
        recall = got / want if want else 1.0
        line = f"  structure {label:>6s} nodes: recall {recall:.4f} ({got}/{want})"
        if anyone:
            line += f", final {final / anyone:.4f} ({final}/{anyone}, {wrong} wrong)"
        print(line)


if __name__ == "__main__":
    main()
