"""Template clustering on real pages: DOM trees vs visual terms, ARI/purity, online cost;
layout signatures on every development set.

    .venv/bin/python bench/bench_cluster.py [--thresholds 0.1,0.2,0.3]
    .venv/bin/python bench/bench_cluster.py --layouts [--sets warpcore,python,aeb,blog,...]
    .venv/bin/python bench/bench_cluster.py --layouts --sets path/to/a/site  (any directory)
    .venv/bin/python bench/bench_cluster.py --cost [--sets python] [--limit 200]

Reads ../shared/data (warpcore, AEB) and the Debian manuals (skips what is absent). ``ARI``:
against warpcore's labels with Scaladoc class/trait/object as one, AEB's sites (host names),
the test site's three templates, the generated WordPress blogs' posts, day archives and home
pages (``bench/blogs.py``: Twenty Twenty-One, and Twenty Seventeen as ``blog17``), and the
generated sites' page types (``bench/typed_sites.py``: shop, forum, tblog, news, and eras, a
news site's articles by redesign; ``bench/news_variety.py``: newsvar, the same with articles of
one design as varied as real ones; seeds 0-4, or ``shop@5-9``; each site clustered alone).
Sets: warpcore, python, postgres, aeb, swde, fixture, blog, blog17 (by default), demo, the
typed ones. ``--variants 0`` measures the crawl's signature only, ``--layout-thresholds``
the cuts. Prints figures only.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.partition import adjusted_rand_index, purity  # noqa: E402
from visdup.templates.cluster import (  # noqa: E402
    DEFAULT_SHRINK,
    DEFAULT_THRESHOLD,
    OnlineClusterer,
    cluster_trees,
)
from visdup.templates.layouts import LayoutClusterer  # noqa: E402
from visdup.templates.signature import (  # noqa: E402
    DEFAULT_STUB_DEPTH,
    Layout,
    body_marks,
    layout_main,
    layout_signature,
    make_layout,
    marked,
    spine_path,
    stub_depth,
)
from visdup.templates.stm import FlatTree, page_tree, stm  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "warpcore"
COARSE = {"scaladoc-class": "scaladoc-entity", "scaladoc-object": "scaladoc-entity"}
COARSE["scaladoc-trait"] = "scaladoc-entity"


def load() -> tuple[dict[str, bytes], dict[str, str]]:
    with (DATA / "labels.csv").open() as fh:
        labels = {row["path"]: row["template"] for row in csv.DictReader(fh)}
    pages = {p: (DATA / "site" / p).read_bytes() for p in labels}
    return pages, labels


def term_tree(data: bytes) -> FlatTree:
    from visdup.structure.term import page_term

    try:
        term = page_term(data)
    except Exception:  # unusable page: an empty tree, as page_tree gives
        return FlatTree((), ())
    return FlatTree(term.labels, term.sizes)


def scores(clusters, labels: dict[str, str]) -> tuple[float, float, float, float]:
    pred = {m: c.id for c in clusters for m in c.members}
    keys = sorted(labels)
    fine = [labels[k] for k in keys]
    coarse = [COARSE.get(labels[k], labels[k]) for k in keys]
    got = [pred[k] for k in keys]
    return (
        adjusted_rand_index(fine, got),
        purity(fine, got),
        adjusted_rand_index(coarse, got),
        purity(coarse, got),
    )


def compare_representations(pages, labels, thresholds) -> None:
    variants = {
        "dom (tags + text leaves)": lambda b: page_tree(b),
        "dom, class names in labels": lambda b: page_tree(b, classes=True),
        "visual term (compressed)": term_tree,
    }
    print(f"warpcore: {len(pages)} pages, {len(set(labels.values()))} labelled templates")
    print("ARI/purity against the 7 labels, and against 'coarse' labels where")
    print("scaladoc class/object/trait pages (one Scaladoc entity template) count as one.")
    header = f"{'representation':30} {'thr':>4} {'k':>4} {'ARI':>6} {'pur':>6}"
    print(header + f" {'ARIc':>6} {'purc':>6} {'conv s':>7} {'clus s':>7}")
    for name, make in variants.items():
        t0 = time.perf_counter()
        trees = {k: make(v) for k, v in pages.items()}
        conv = time.perf_counter() - t0
        for thr in thresholds:
            t0 = time.perf_counter()
            clusters = cluster_trees(trees.items(), threshold=thr)
            dt = time.perf_counter() - t0
            ari, pur, aric, purc = scores(clusters, labels)
            print(
                f"{name:30} {thr:4.2f} {len(clusters):4d} {ari:6.3f} {pur:6.3f} {aric:6.3f}"
                f" {purc:6.3f} {conv:7.2f} {dt:7.2f}"
            )
    trees = {k: page_tree(v) for k, v in pages.items()}
    clusters = cluster_trees(trees.items(), threshold=thresholds[-1])
    print(f"\nlargest clusters, dom at threshold {thresholds[-1]}:")
    for c in clusters[:6]:
        print(f"  {c.size:4d} {dict(Counter(labels[m] for m in c.members))}")


def stm_work(pages, labels) -> None:
    trees = {k: page_tree(v) for k, v in pages.items()}
    n = len(trees)
    for shrink in (0.0, DEFAULT_SHRINK):
        stats: dict[str, int] = {}
        t0 = time.perf_counter()
        clusters = cluster_trees(trees.items(), shrink=shrink, stats=stats)
        batch = time.perf_counter() - t0
        ari, _, aric, purc = scores(clusters, labels)
        print(
            f"\ndom, threshold {DEFAULT_THRESHOLD}, shrink {shrink}: {len(clusters)} clusters,"
            f" ARI {ari:.3f}, coarse ARI {aric:.3f}, coarse purity {purc:.3f}, {batch:.2f} s"
        )
        print(
            f"  pairs {stats['pairs']}, within the path bound {stats['candidate_pairs']},"
            f" exact STM runs {stats['stm_calls']}"
            f" ({stats['stm_calls'] / stats['pairs']:.1%} of all pairs)"
        )
    items = sorted(trees.values(), key=lambda t: t.nodes)
    rng = random.Random(1)
    sample = [(rng.choice(items), rng.choice(items)) for _ in range(200)]
    t0 = time.perf_counter()
    for a, b in sample:
        stm(a, b)
    compiled = (time.perf_counter() - t0) / len(sample)
    os.environ["VISDUP_PURE_PYTHON"] = "1"
    t0 = time.perf_counter()
    for a, b in sample[:40]:
        stm(a, b)
    python = (time.perf_counter() - t0) / 40
    del os.environ["VISDUP_PURE_PYTHON"]
    pairs = n * (n - 1) // 2
    print(f"\nSTM per pair (median page {items[n // 2].nodes} nodes):")
    print(f"  compiled {compiled * 1e3:.3f} ms, Python {python * 1e3:.2f} ms")
    print(f"  Python / compiled: {python / compiled:.1f}x")
    print(f"  all-pairs STM would take about {pairs * compiled:.1f} s compiled")


def synthetic(rng: random.Random, template: int, shared: list[str]) -> FlatTree:
    """A page: a shared header, a template-specific body, a few varying rows."""
    body_rng = random.Random(template)
    tags = ["div", "p", "span", "ul", "li", "a", "td", "tr", "table", "h2", "em", "b"]
    labels = ["html", "body", *shared]
    parents = [-1, 0] + [1] * len(shared)
    for _ in range(120):
        labels.append(body_rng.choice(tags))
        parents.append(body_rng.randrange(len(shared) + 2, len(labels) - 1 + 1) - 1)
    for _ in range(rng.randint(0, 15)):
        labels.append("li")
        parents.append(len(shared) + 2)
    # Parents come before children: recompute a preorder through child lists.
    kids: list[list[int]] = [[] for _ in labels]
    for i, p in enumerate(parents):
        if p >= 0:
            kids[p].append(i)
    order, stack = [], [0]
    while stack:
        x = stack.pop()
        order.append(x)
        stack.extend(reversed(kids[x]))
    pos = {x: k for k, x in enumerate(order)}
    sizes = [1] * len(order)
    for x in reversed(order):
        if parents[x] >= 0:
            sizes[pos[parents[x]]] += sizes[pos[x]]
    return FlatTree([labels[x] for x in order], sizes)


def online_cost() -> None:
    rng = random.Random(2)
    shared = ["div", "a", "ul", "li", "li", "li", "div", "p"] * 5
    print("\nonline assignment (synthetic sites: 40-node shared header, 120-node bodies)")
    print(f"{'clusters':>9} {'ms/page':>8} {'STM/page':>9} {'new':>5}")
    base = None
    for k in (10, 100, 1000):
        online = OnlineClusterer()
        for t in range(k):
            online.assign(f"seed{t}", synthetic(rng, t, shared))
        known = len(online.clusters)
        pages = [synthetic(rng, rng.randrange(k), shared) for _ in range(200)]
        online.stm_calls = 0
        t0 = time.perf_counter()
        for n, page in enumerate(pages):
            online.assign(f"p{n}", page)
        per = (time.perf_counter() - t0) / len(pages)
        base = base or per
        new = len(online.clusters) - known
        print(
            f"{known:9d} {per * 1e3:8.3f} {online.stm_calls / len(pages):9.2f} {new:5d}"
            f"   ({per / base:.1f}x the 10-cluster cost)"
        )


def layout_pages(which: str) -> tuple[dict[str, bytes], dict[str, str] | None]:
    if which == "warpcore":
        pages, labels = load()
        return pages, {k: COARSE.get(v, v) for k, v in labels.items()}
    if which == "aeb":  # 181 articles of 126 sites: labelled by site (host name)
        import gzip
        import json
        from urllib.parse import urlsplit

        d = ROOT.parent / "shared" / "data" / "aeb"
        truth = json.loads((d / "ground-truth.json").read_text())
        files = sorted((d / "html").glob("*.gz"))
        hosts = {
            p.name: (urlsplit(truth[p.name.split(".")[0]]["url"]).hostname or "").removeprefix(
                "www."
            )
            for p in files
        }
        return {p.name: gzip.decompress(p.read_bytes()) for p in files}, hosts
    if which == "swde":  # 300 book pages of one shop: one template (label "book")
        import gzip

        d = ROOT.parent / "shared" / "data" / "swde-booksamillion" / "pages"
        books = {p.name: gzip.decompress(p.read_bytes()) for p in sorted(d.glob("*.htm.gz"))}
        return books, {name: "book" for name in books}
    if which in ("blog", "blog17"):  # generated WordPress blogs: posts, day archives, home
        from bench.blogs import make_blog

        blog = make_blog("twentyseventeen" if which == "blog17" else "twentytwentyone", posts=120)
        return {path: html.encode() for path, html in blog.pages.items()}, dict(blog.kinds)
    if which == "demo":  # the demo site's nine layouts (visdup/demo/site/EXPECTED.json)
        import json

        site = ROOT / "visdup" / "demo" / "site"
        kinds = {}
        for kind, urls in json.loads((site / "EXPECTED.json").read_text())["templates"].items():
            for url in urls:
                path = url.lstrip("/")
                path = path + "index.html" if not path or path.endswith("/") else path
                if (site / path).is_file():
                    kinds[path] = kind
        return {path: (site / path).read_bytes() for path in kinds}, kinds
    if which == "fixture":  # the test site of three templates (tests/fixtures/sites/templates)
        import json

        site = ROOT / "tests" / "fixtures" / "sites" / "templates"
        kinds = {}
        for kind, urls in json.loads((site / "EXPECTED.json").read_text())["templates"].items():
            for url in urls:
                path = url.lstrip("/")
                kinds[path + "index.html" if not path or path.endswith("/") else path] = kind
        return {path: (site / path).read_bytes() for path in kinds}, kinds
    typed = _typed_pages(which)
    if typed is not None:
        return typed
    from bench._data import debian_docs, html_files

    # Any directory of pages (a site built or mirrored on this machine): no labels.
    base = Path(which) if Path(which).is_dir() else debian_docs(which)
    return {str(p.relative_to(base)): p.read_bytes() for p in html_files(base)}, None


#: Generated sites with known page types (``bench/typed_sites.py``): ``shop``, ``forum``,
#: ``tblog``, ``news`` (page types), ``eras`` (a news site's articles labelled by redesign) and
#: ``newsvar`` (the same, articles of one design varying in media, embeds, live updates,
#: paywalls and comments: ``bench/news_variety.py``),
#: seeds 0-4 unless named (``shop@5-9``). Keys are ``seed::path``: each site is clustered alone.
TYPED = {
    "shop": "shop",
    "forum": "forum",
    "tblog": "blog",
    "news": "news",
    "eras": "eras",
    "newsvar": "newsvar",
}


def _typed_pages(which: str) -> tuple[dict[str, bytes], dict[str, str]] | None:
    from bench.news_variety import newsvar_eras
    from bench.typed_sites import make_site, news_eras

    name, _, seeds = which.partition("@")
    if name not in TYPED:
        return None
    first, _, last = (seeds or "0-4").partition("-")
    pages: dict[str, bytes] = {}
    labels: dict[str, str] = {}
    for seed in range(int(first), int(last or first) + 1):
        if name in ("eras", "newsvar"):
            site = news_eras(seed) if name == "eras" else newsvar_eras(seed)
        else:
            site = make_site(TYPED[name], seed)
        for path, html in site.pages.items():
            pages[f"{seed}::{path}"] = html.encode()
            labels[f"{seed}::{path}"] = f"{seed}:{site.kinds[path]}"
    return pages, labels


def site_of(key: str) -> str:
    """The site a page key belongs to: the part before ``::`` (one site when none)."""
    return key.split("::", 1)[0] if "::" in key else ""


#: Signature variants measured: (labels, depth below <body>, stub depth, region): region
#: "region" is the widened content region (the crawl's; "unmarked" and "no outline" the same),
#: "main" the main-content finder's own pick, None no stub (the whole skeleton). Stub
#: "path": only the end of the region's spine is a stub, what is beside the spine keeps
#: 2 levels (``signature.spine_path``, down to the finder's pick first); "text path": the same
#: spine by text alone; "spine": the whole region is a stub as deep as its spine.
#: Labels "a/b": ``a`` outside the content region, ``b`` inside its stub. The "path", "text
#: path" and "spine" variants on "region" carry the marks of the page's <body>
#: (``signature.body_marks``), as the crawl's signatures do; "no outline" drops the frame's
#: heading outline (``Layout.outline``), which every "path" variant otherwise keeps.
VARIANTS: list[tuple[str, int, int | str | None, str | None]] = [
    ("tag", 8, "path", "region"),  # the default: the spine's end a stub, beside it 2 levels
    ("tag", 8, "text path", "region"),  # the same, the spine by text alone (the finder's pick
    # not followed first)
    ("tag", 8, "path", "no outline"),  # the same without the frame's heading outline
    ("tag", 8, "path", "unmarked"),  # the same without the marks of <body>
    ("tag", 8, "spine", "region"),  # the default before: the region down its text spine
    ("tag", 8, 2, "region"),  # the default before that
    ("class", 8, "spine", "region"),
    ("tag", 8, 1, "region"),
    ("tag", 8, 3, "region"),
    ("tag", 14, 8, "region"),
    ("tag", 8, 1, "main"),
    ("tag", 8, 2, "main"),
    ("id", 8, 2, "region"),
    ("class", 8, 2, "region"),
    ("id/tag", 8, 2, "region"),
    ("class/tag", 8, 2, "region"),
    ("tag", 8, None, None),
]
DEFAULT_VARIANT = VARIANTS[0]


def per_site(items: dict[str, Layout], threshold: float) -> tuple[dict[str, Any], int]:
    """Each site's pages clustered alone (:func:`site_of`): key → (site, cluster id), and the
    atoms in all."""
    sites: dict[str, dict[str, Layout]] = {}
    for key, layout in items.items():
        sites.setdefault(site_of(key), {})[key] = layout
    pred: dict[str, Any] = {}
    atoms = 0
    for site, mine in sites.items():
        clusterer = LayoutClusterer(threshold=threshold)
        for layout in mine.values():
            clusterer.add(layout)
        atoms += len(clusterer.atoms)
        pred.update({k: (site, clusterer.cluster_of(s.key)) for k, s in mine.items()})
    return pred, atoms


def layouts(sets: list[str], thresholds: list[float], variants: str = "all") -> None:
    from visdup.content import main_content, page_title, remove_invisible
    from visdup.page.parse import parse_html

    print("layout signatures: single-link clusters of distinct signatures (atoms)")
    print(
        f"{'set':9} {'variant':16} {'thr':>4} {'atoms':>5} {'clus':>5} {'top1':>6} {'top4':>6}"
        f" {'ARI':>6}"
    )
    for which in sets:
        try:
            pages, labels = layout_pages(which)
        except (SystemExit, FileNotFoundError):
            print(f"{which}: skipped (data absent)")
            continue
        chosen = VARIANTS if variants == "all" else [VARIANTS[int(i)] for i in variants.split(",")]
        sigs: dict[tuple[Any, ...], dict[str, Layout]] = {v: {} for v in chosen}
        spent = 0.0
        widening = 0.0
        for key, body in pages.items():
            doc = parse_html(body)
            if doc.root is None:
                continue
            title = page_title(doc.root)
            remove_invisible(doc.root)
            root = doc.root

            def measure(
                node: Any, key: str = key, root: Any = root, sigs: Any = sigs, chosen: Any = chosen
            ) -> None:
                nonlocal spent, widening
                t0 = time.perf_counter()
                region = layout_main(root, node)
                widening += time.perf_counter() - t0
                marks = body_marks(root, "http://site/" + key.lstrip("/"))
                for v in chosen:
                    labelling, depth, stub, where = v
                    mode, _, inside = labelling.partition("/")
                    t0 = time.perf_counter()
                    stub_node = None if where is None else node if where == "main" else region
                    spine = None
                    if stub in ("path", "text path"):
                        toward = node if stub == "path" and where != "main" else None
                        spine, stub = spine_path(stub_node, toward=toward), DEFAULT_STUB_DEPTH
                    elif stub == "spine":
                        stub = stub_depth(stub_node)
                    made = layout_signature(
                        root,
                        stub_node,
                        depth=depth,
                        stub_depth=int(stub or 0),
                        mode=mode,
                        stub_mode=inside or None,
                        spine=spine,
                    )
                    if where == "no outline":
                        made = make_layout(made.labels, made.sizes, marks)
                    elif where == "region" and v[2] in ("path", "text path", "spine"):  # marks
                        made = make_layout(
                            made.labels, made.sizes, marks, made.outline, made.shape, made.frame
                        )
                    sigs[v][key] = made
                    spent += time.perf_counter() - t0

            got = main_content(root, cleaned=True, title=title, chosen=measure)
            if key not in sigs[DEFAULT_VARIANT]:  # no article chosen: the page as it is
                measure(got.node)
        for v, items in sigs.items():
            for thr in thresholds:
                pred, atoms = per_site(items, thr)
                sizes = sorted(Counter(pred.values()).values(), reverse=True)
                keys = sorted(pred)
                aric = "     -"
                if labels:
                    score = adjusted_rand_index([labels[k] for k in keys], [pred[k] for k in keys])
                    aric = f"{score:6.3f}"
                print(
                    f"{which:9} {v!s:16} {thr!s:>4} {atoms:5d} {len(sizes):5d}"
                    f" {sizes[0] / len(pred):6.3f} {sum(sizes[:4]) / len(pred):6.3f} {aric}"
                )
        print(
            f"{which}: content region (layout_main) {widening / len(pages) * 1e3:.2f} ms"
            f" + signature {spent / len(chosen) / len(pages) * 1e3:.2f} ms per page"
        )
        # Order independence and the cost of placing a page, default variant.
        items = list(sigs[DEFAULT_VARIANT].items())
        first = None
        for seed in range(3):
            random.Random(seed).shuffle(items)
            clusterer = LayoutClusterer()
            times = []
            for _key, layout in items:
                t0 = time.perf_counter()
                clusterer.add(layout)
                times.append(time.perf_counter() - t0)
            pred = {k: clusterer.cluster_of(s.key) for k, s in items}
            keys = sorted(pred)
            same = (
                adjusted_rand_index([first[k] for k in keys], [pred[k] for k in keys])
                if first
                else 1.0
            )
            first = first or pred
            # flat in the clusters' size: the last quarter of pages meets 4x the atoms
            quarter = max(1, len(times) // 4)
            early, late = (sum(t) / len(t) * 1e3 for t in (times[:quarter], times[-quarter:]))
            times.sort()
            st = clusterer.stats
            print(
                f"  shuffle {seed}: ARI to the first order {same:.3f}, same ids"
                f" {pred == first}; per page median {times[len(times) // 2] * 1e3:.3f} ms,"
                f" mean {sum(times) / len(times) * 1e3:.3f} ms,"
                f" p99 {times[len(times) * 99 // 100] * 1e3:.2f} ms,"
                f" mean of the first / last quarter {early:.3f} / {late:.3f} ms;"
                f" label-path bounds {st.bounds / st.pages:.1f} and exact STM"
                f" {st.exact / st.pages:.2f} per page; key hits {st.hits / st.pages:.0%}"
            )


def cost(sets: list[str], limit: int) -> None:
    """Per page, in one run: the crawl's template step today against layout signatures."""
    from visdup.content import main_content, page_title, remove_invisible
    from visdup.page.parse import parse_html

    for which in sets:
        pages, _ = layout_pages(which)
        keys = sorted(pages)[:limit]
        spent: Counter[str] = Counter()
        online = OnlineClusterer()
        layout_clusters = LayoutClusterer()
        for key in keys:
            doc = parse_html(pages[key])
            if doc.root is None:
                continue
            title = page_title(doc.root)
            remove_invisible(doc.root)
            t0 = time.perf_counter()
            tree = page_tree_of(doc.root)
            t1 = time.perf_counter()
            online.assign(key, tree)
            t2 = time.perf_counter()
            # as the crawl does (page_input): the signature is read when the article is
            # chosen, before main content prunes the page
            made: list[tuple[Layout, float, float]] = []

            def signature(
                node: Any, root: Any = doc.root, made: Any = made, key: str = key
            ) -> None:
                t0 = time.perf_counter()
                region = layout_main(root, node)
                t1 = time.perf_counter()
                sig = layout_signature(root, region, spine=spine_path(region))
                sig = marked(sig, root, "http://site/" + key.lstrip("/"))
                made.append((sig, t1 - t0, time.perf_counter() - t1))

            found = main_content(doc.root, cleaned=True, title=title, chosen=signature)
            if not made:
                signature(found.node)
            layout, widening, signing = made[0]
            t3 = time.perf_counter()
            layout_clusters.add(layout)
            t4 = time.perf_counter()
            spent["DOM tree"] += t1 - t0
            spent["DOM STM clusterer (today)"] += t2 - t1
            spent["main content (shared with the content channel)"] += t3 - t2 - widening - signing
            spent["content region (layout_main)"] += widening
            spent["layout signature"] += signing
            spent["layout clusterer"] += t4 - t3
        n = len(keys)
        print(f"{which}: {n} pages, ms per page")
        for step, secs in spent.items():
            print(f"  {step:48} {secs / n * 1e3:7.3f}")
        print(
            f"  clusters: DOM STM {len(online.clusters)}, layouts {len(layout_clusters.sizes())};"
            f" STM runs per page: DOM {online.stm_calls / n:.2f},"
            f" layouts {layout_clusters.stats.exact / n:.2f}"
        )


def page_tree_of(root: Any) -> FlatTree:
    from visdup.templates.stm import dom_tree

    return dom_tree(root)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--thresholds", default="0.3,0.4,0.5")
    parser.add_argument("--layouts", action="store_true")
    parser.add_argument("--sets", default="warpcore,python,postgres,aeb,swde,fixture,blog,blog17")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument(
        "--variants", default="all", help="--layouts: signature variants by index (0: default)"
    )
    parser.add_argument(
        "--layout-thresholds", default="0.75,0.8", help="--layouts: thresholds to cut at"
    )
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    if args.cost:
        cost(
            args.sets.split(",") if args.sets != parser.get_default("sets") else ["python"],
            args.limit,
        )
        return
    if args.layouts:
        cuts = [float(t) for t in args.layout_thresholds.split(",")]
        layouts(args.sets.split(","), cuts, args.variants)
        return
    thresholds = [float(x) for x in args.thresholds.split(",")]
    if not (DATA / "labels.csv").exists():
        print(f"skipped: {DATA} not found")
    else:
        pages, labels = load()
        compare_representations(pages, labels, thresholds)
        stm_work(pages, labels)
    online_cost()


if __name__ == "__main__":
    main()
