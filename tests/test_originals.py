"""A group's original does not depend on crawl order.

The same site is crawled three times, its links in a different shuffled order each time
and one request at a time, so that each crawl stores the pages in another order. Every
crawl must give the same groups with the same originals: the page the group names
canonical, else the URL without tracking parameters or session ids, else the shortest path.
"""

from __future__ import annotations

import random
from collections import defaultdict

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import article, crawl, write_site
from visdup.demo.server import serve
from visdup.storage.store import Store
from visdup.verdicts import DUPLICATE_VERDICTS, original_rank, tracked

RIVER = [
    "The river rose two metres overnight after a week of heavy rain in the hills above town.",
    "Volunteers filled sandbags at the market square until the early hours of the morning.",
    "The old stone bridge stayed open to walkers, though cars were sent around the bypass.",
    "Engineers will inspect the embankment once the water falls back below the warning line.",
]
ORCHARD = [
    "The community orchard planted forty new apple trees along the eastern edge of the park.",
    "Each tree was chosen from an old local variety that had almost disappeared from gardens.",
    "Neighbours signed up to water the saplings in turns through the first dry summer ahead.",
    "The first small harvest is expected in three years, and it will be shared at a fair.",
]


def _print_version(title: str, paragraphs: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><div class='printable'><h2>{title}</h2>{body}</div></body></html>"
    )


def _with_canonical(html: str, url: str) -> str:
    return html.replace("</head>", f"<link rel='canonical' href='{url}'></head>")


def _site(root, base_hint: str = "/news/river.html"):
    river = article("River", RIVER, [])
    pages = {
        # group 1: every copy names /news/river.html canonical, which is not the shortest path
        "news/river.html": _with_canonical(river, base_hint),
        "r.html": _with_canonical(river.replace("Footer text", "Syndicated"), base_hint),
        "partners/city/river.html": _with_canonical(
            article("River", RIVER, []).replace("Site", "Partner"), base_hint
        ),
        "print/news/river.html": _print_version("River", RIVER),
        # group 2: no canonical anywhere; the same file also answers with a session id and
        # tracking parameters (the server ignores queries and ;params)
        "orchard.html": article("Orchard", ORCHARD, []),
        "archive/2024/orchard.html": article("Orchard", ORCHARD, []).replace("Footer", "Old"),
    }
    links = [
        "/news/river.html",
        "/r.html",
        "/partners/city/river.html",
        "/print/news/river.html",
        "/news/river.html?utm_source=feed&utm_medium=rss",
        "/orchard.html",
        "/orchard.html;jsessionid=8F2C41A09B7E",
        "/orchard.html?sessionid=77&utm_campaign=spring",
        "/archive/2024/orchard.html",
    ]
    for seed in (1, 2, 3):
        shuffled = links[:]
        random.Random(seed).shuffle(shuffled)
        items = "".join(f"<li><a href='{u}'>{u}</a></li>" for u in shuffled)
        pages[f"start{seed}.html"] = (
            f"<!DOCTYPE html><html><head><title>Start</title></head><body><ul>{items}</ul>"
            "</body></html>"
        )
    return write_site(root, pages)


def _groups(db: str, base: str) -> dict[str, frozenset[str]]:
    """original path -> member paths, following duplicate_of to the group's original."""
    rows = Store.from_url(db).rows()
    by_id = {r.id: r for r in rows}
    members: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r.duplicate_of is None:
            continue
        assert r.verdict in DUPLICATE_VERDICTS and r.kind is not None
        original = by_id[r.duplicate_of]
        assert original.duplicate_of is None, "a group names its original, never a copy"
        assert original.verdict not in DUPLICATE_VERDICTS and original.kind is None
        members[original.url.replace(base, "")].add(r.url.replace(base, ""))
    return {k: frozenset(v) for k, v in members.items()}


@deferred_f_from_coro_f
async def test_shuffled_crawls_give_the_same_original_per_group(tmp_path):
    root = _site(tmp_path / "site")
    results = []
    with serve(root) as server:
        for seed in (1, 2, 3):
            db = f"sqlite:///{tmp_path / f'o{seed}.sqlite3'}"
            await crawl(
                db,
                server.url_for(f"/start{seed}.html"),
                settings={"CONCURRENT_REQUESTS": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1},
            )
            rows = Store.from_url(db).rows()
            order = [r.url.replace(server.url, "") for r in sorted(rows, key=lambda r: r.id)]
            results.append((order, _groups(db, server.url)))
    orders = [order for order, _ in results]
    assert len({tuple(o) for o in orders}) > 1, "the crawls must store pages in other orders"
    groups = [g for _, g in results]
    assert groups[0] == groups[1] == groups[2]
    assert set(groups[0]) == {"/news/river.html", "/orchard.html"}
    assert groups[0]["/news/river.html"] == {
        "/r.html",
        "/partners/city/river.html",
        "/print/news/river.html",
        "/news/river.html?utm_medium=rss&utm_source=feed",
    } or groups[0]["/news/river.html"] == {
        "/r.html",
        "/partners/city/river.html",
        "/print/news/river.html",
        "/news/river.html?utm_source=feed&utm_medium=rss",
    }
    assert {"/archive/2024/orchard.html"} < groups[0]["/orchard.html"]
    assert len(groups[0]["/orchard.html"]) == 3


def test_original_rank_orders_canonical_then_clean_then_short() -> None:
    assert tracked("http://x/a.html?utm_source=feed")
    assert tracked("http://x/a.html;jsessionid=8F2C")
    assert tracked("http://x/login?ReturnUrl=%2Fm%2F3")
    assert not tracked("http://x/a.html?page=2")
    ranked = sorted(
        [
            ("http://x/archive/2024/a.html", False),
            ("http://x/a.html?utm_source=feed", False),
            ("http://x/b.html", False),
            ("http://x/a.html", False),
            ("http://x/news/long/path/a.html", True),
        ],
        key=lambda u: original_rank(*u),
    )
    # ties of length are broken by URL order, never by which page came first
    assert [u for u, _n in ranked] == [
        "http://x/news/long/path/a.html",
        "http://x/a.html",
        "http://x/b.html",
        "http://x/archive/2024/a.html",
        "http://x/a.html?utm_source=feed",
    ]
