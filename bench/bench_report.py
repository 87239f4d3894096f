"""Size and speed of the HTML report at audit scale: 1,000 duplicate groups, 200 templates.

Synthetic but shaped like a crawl: 200 templates whose representative terms have the sizes
of real compressed terms (median 150 nodes, up to 1,500), 1,000 groups of 2-7 pages whose
copies differ from their original in one subtree, and enough same-template pages to reach
``--pages``; each group's pages have an article's text, the copies that are not exact with
one word changed (the report shows it in its text differences). Prints the file size, the
time to render it, and (when playwright and Chromium are there) the time Chromium takes to open it.

With ``--comparisons DIR`` it also labels the pages under DIR into a SQLite store (as
``visdup dups --db`` does) and prints what the stored comparisons (visdup_comparisons, every
candidate measured) cost: rows and bytes per page, table and index, from SQLite's dbstat.

    .venv/bin/python bench/bench_report.py [--pages 8000] [--groups 1000] [--templates 200]
    .venv/bin/python bench/bench_report.py --comparisons ../shared/data/warpcore/site
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from visdup.report import MAX_ROWS
from visdup.report.data import ClusterRow, PageRow, Similarities, StoreData
from visdup.report.html import render_html
from visdup.report.responses import ResponseRow, Responses
from visdup.structure.term import Term


def random_term(rng: random.Random, nodes: int) -> Term:
    """A page-like term: nested groups and rows, rows of columns, text leaves, some marks."""
    labels, marks, parents, depth = ["grp"], [1], [-1], [0]
    open_nodes = [0]
    while len(labels) < nodes:
        parent = rng.choice(open_nodes[-12:])
        label = rng.choices(["grp", "row", "col", "text"], [3, 3, 2, 4])[0]
        labels.append(label)
        marks.append(rng.choice([1, 1, 1, 2, 3, 5, 12]))
        parents.append(parent)
        depth.append(depth[parent] + 1)
        if label != "text" and depth[-1] < 14:  # compressed terms of real pages: depth 8-20
            open_nodes.append(len(labels) - 1)
    return _from_parents(labels, marks, parents)


def _from_parents(labels: list[str], marks: list[int], parents: list[int]) -> Term:
    kids: list[list[int]] = [[] for _ in labels]
    for i, p in enumerate(parents):
        if p >= 0:
            kids[p].append(i)
    out_l: list[str] = []
    out_m: list[int] = []
    out_s: list[int] = []
    stack = [(0, False)]
    start: dict[int, int] = {}
    while stack:
        i, done = stack.pop()
        if done:
            out_s[start[i]] = len(out_l) - start[i]
            continue
        start[i] = len(out_l)
        out_l.append(labels[i])
        out_m.append(marks[i])
        out_s.append(1)
        stack.append((i, True))
        stack.extend((k, False) for k in reversed(kids[i]))
    return Term(out_l, out_m, out_s)


def variant(rng: random.Random, term: Term) -> Term:
    """The same term with one node's mark changed: a copy that differs in one subtree."""
    marks = list(term.marks)
    i = rng.randrange(1, term.nodes)
    marks[i] += rng.choice([1, 2, 5])
    return Term(term.labels, marks, term.sizes)


WORDS = (
    "frame wheel brake chain saddle tyre light rider road gravel city cargo winter spring "
    "service fit commute lock pump helmet battery motor gear shift rim spoke hub pedal"
).split()


def article_words(rng: random.Random) -> list[list[str]]:
    """An article's sentences as words: eight paragraphs' worth, as a blog post or product."""
    return [[rng.choice(WORDS) for _ in range(rng.randint(8, 20))] for _ in range(24)]


def one_word_edited(rng: random.Random, sentences: list[list[str]]) -> list[list[str]]:
    edited = [list(s) for s in sentences]
    line = rng.choice(edited)
    line[rng.randrange(len(line))] = "changed"
    return edited


def article(sentences: list[list[str]]) -> bytes:
    paragraphs = [
        "<p>" + " ".join(" ".join(s).capitalize() + "." for s in sentences[i : i + 3]) + "</p>"
        for i in range(0, len(sentences), 3)
    ]
    return (
        "<!DOCTYPE html><html><head><title>Item</title></head><body><nav><a href=/>Home</a>"
        "</nav><main><article><h1>Item</h1>" + "".join(paragraphs) + "</article></main></body>"
        "</html>"
    ).encode()


def build(pages: int, groups: int, templates: int, answers: int = 0, seed: int = 7):
    rng = random.Random(seed)
    # compressed terms of real pages: median 124 nodes on the Python manual, 81 on warpcore
    # (p90 170, largest 1,173); drawn here with median 150 and a long tail to 1,500
    sizes = [
        min(1500, max(20, int(rng.lognormvariate(math.log(150), 0.8)))) for _ in range(templates)
    ]
    reps = [random_term(rng, n) for n in sizes]
    rows: list[PageRow] = []
    terms: dict[int, Term] = {}
    clusters = []
    bodies: dict[int, bytes] = {}
    for t in range(templates):
        url = f"https://shop.example/t{t}/index.html"
        rows.append(PageRow(len(rows) + 1, url, f"Template {t} <home>", 200, "novel", cluster_id=t))
        terms[len(rows)] = reps[t]
        clusters.append(ClusterRow(t, url, ["title", "price", "body"]))
    for g in range(groups):
        t = rng.randrange(templates)
        original = len(rows) + 1
        rows.append(
            PageRow(
                original,
                f"https://shop.example/t{t}/item-{g}.html",
                f"Item {g} & friends",
                200,
                "same_template",
                similarity=0.9,
                cluster_id=t,
            )
        )
        terms[original] = variant(rng, reps[t])
        words = article_words(rng)
        bodies[original] = article(words)
        for m in range(rng.randint(1, 6)):
            page_id = len(rows) + 1
            exact = m == 0
            rows.append(
                PageRow(
                    page_id,
                    f"https://shop.example/t{t}/item-{g}.html?utm_source={m}",
                    f"Item {g} & friends",
                    200,
                    "duplicate",
                    kind="exact" if exact else "structural",
                    duplicate_of=original,
                    similarity=1.0 if exact else 0.97,
                    content_duplicate_of=None if exact else original,
                    content_similarity=None if exact else 0.93,
                    content_kind=None if exact else "partial",
                    cluster_id=t,
                    canonical=f"https://shop.example/t{t}/item-{g}.html",
                )
            )
            terms[page_id] = terms[original] if exact else variant(rng, terms[original])
            bodies[page_id] = bodies[original] if exact else article(one_word_edited(rng, words))
    while len(rows) < pages:
        t = rng.randrange(templates)
        rows.append(
            PageRow(
                len(rows) + 1,
                f"https://shop.example/t{t}/p{len(rows)}.html",
                f"Page {len(rows)}",
                200,
                "same_template",
                similarity=0.85,
                cluster_id=t,
            )
        )
    sims = Similarities(
        structure_accepted=[rng.uniform(0.95, 1) for _ in range(3000)],
        structure_rejected=[rng.uniform(0.3, 0.95) for _ in range(12000)],
        content_accepted=[rng.uniform(0.8, 1) for _ in range(3000)],
        content_rejected=[rng.uniform(0, 0.8) for _ in range(5000)],
        complete=True,
        source="every candidate compared (synthetic)",
    )
    settings = {"VISDUP_SIMILARITY_THRESHOLD": 0.95, "VISDUP_TEMPLATE_THRESHOLD": 0.8}
    data = StoreData("sqlite:///bench.sqlite3", rows, clusters, [], "crawl", settings)
    data.bodies = lambda ids: {i: bodies.get(i) for i in ids}
    data.responses = responses(rng, rows, answers)
    return data, terms, sims


def responses(rng: random.Random, pages: list[PageRow], count: int) -> Responses:
    """``count`` URLs that gave no page, each linked from a page: a shop's broken "print"
    links, moved pages, robots.txt's private area."""
    kinds = [("client_error", 404), ("redirect", 301), ("robots", None), ("server_error", 503)]
    found = []
    for i in range(count):
        kind, status = kinds[i % len(kinds)]
        url = f"https://shop.example/products/item-{i}/print.html"
        target = f"https://shop.example/products/item-{i}.html" if kind == "redirect" else None
        found.append(ResponseRow(url, kind, status, target, None, rng.choice(pages).url))
    order = {k: n for n, (k, _) in enumerate(kinds)}
    found.sort(key=lambda r: (order[r.kind], r.url))
    return Responses(found)


def open_in_chromium(path: Path) -> float | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("chromium: playwright is not installed")
        return None
    exe = os.environ.get("VISDUP_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(exe).exists():
        print(f"chromium: not found at {exe}")
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto("about:blank")
        best = None
        for _ in range(3):
            start = time.perf_counter()
            page.goto(path.as_uri(), wait_until="load")
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(1)))")
            took = time.perf_counter() - start
            best = took if best is None else min(best, took)
        browser.close()
    return best


def comparisons_cost(folder: Path, cap: int) -> None:
    """Rows and on-disk bytes of visdup_comparisons (with its index) per labelled page."""
    import sqlite3

    from visdup.dedup.offline import label_files
    from visdup.page.files import PageFiles

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.sqlite3"
        overrides = {"VISDUP_COMPARISONS_MAX": cap, "VISDUP_STORE_BODY": False}
        start = time.perf_counter()
        store, _tmp = label_files(
            PageFiles([str(folder)]), db=f"sqlite:///{path}", overrides=overrides
        )
        took = time.perf_counter() - start
        store.close()
        conn = sqlite3.connect(path)
        conn.execute("VACUUM")
        pages = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
        rows = dict(
            conn.execute("SELECT channel, count(*) FROM visdup_comparisons GROUP BY channel")
        )
        try:
            size = dict(
                conn.execute(
                    "SELECT name, sum(pgsize) FROM dbstat "
                    "WHERE name IN ('visdup_comparisons', 'visdup_comparisons_page') GROUP BY name"
                )
            )
        except sqlite3.OperationalError:
            size = {}
        conn.close()
    total = sum(rows.values())
    print(
        f"comparisons of {folder.name} ({pages} pages, labelled in {took:.1f} s, at most {cap} "
        f"per page and channel): {total} rows ({rows}), {total / max(1, pages):.1f} a page"
    )
    if size:
        table, index = size.get("visdup_comparisons", 0), size.get("visdup_comparisons_page", 0)
        print(
            f"  on disk: table {table / max(1, pages):.0f} + index {index / max(1, pages):.0f} "
            f"bytes a page ({(table + index) / max(1, total):.0f} bytes a row)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=8000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--templates", type=int, default=200)
    ap.add_argument("--responses", type=int, default=120, help="URLs that gave no page")
    ap.add_argument("--rows", type=int, default=MAX_ROWS, help="HTML table rows (report --rows)")
    ap.add_argument("--comparisons", type=Path, metavar="DIR", help="label DIR, measure the table")
    ap.add_argument("--max", type=int, default=16, help="VISDUP_COMPARISONS_MAX for --comparisons")
    args = ap.parse_args()
    if args.comparisons:
        comparisons_cost(args.comparisons, args.max)
        return
    data, terms, sims = build(args.pages, args.groups, args.templates, args.responses)
    print(
        f"{len(data.pages)} pages, {args.groups} groups, {args.templates} templates, "
        f"{args.responses} responses that are no page"
    )
    times, cpu = [], []
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        text = render_html(
            data,
            load_terms=lambda ids: {i: terms[i] for i in ids if i in terms},
            similarities=sims,
            max_rows=args.rows,
            version="bench",
        )
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    size = len(text.encode("utf-8"))
    print(f"HTML size: {size / 1e6:.2f} MB ({size / 1024:.0f} KiB; the budget is 2 MB)")
    for section in ("templates", "groups", "responses", "pages-table"):
        start = text.index(f'<section id="{section}"')
        end = text.index("</section>", start)
        print(f"  {section}: {(end - start) / 1e6:.2f} MB")
    print(
        f"render: best {min(times):.3f} s, median {sorted(times)[1]:.3f} s wall; "
        f"CPU best {min(cpu):.3f} s (the wall time of a busy machine is not the work)"
    )
    counts = {
        "layout pictures": text.count('class="layout"'),
        "groups": text.count('<details id="group-'),
    }
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        path.write_text(text, encoding="utf-8")
        took = open_in_chromium(path)
        if took is not None:
            print(f"chromium: loaded and painted in {took:.3f} s (best of 3)")


if __name__ == "__main__":
    main()
