"""A shop visdup was not tuned on, crawled at three concurrencies, gives one answer.

Made here as an auditor's test shop is: product pages in one template, paginated category
listings, links with tracking parameters, a product copied with one word changed, print
versions, a login wall behind every "Sign in" link, and broken links. Each concurrency stores
the pages in another order; the pages table must not change, and the planted copies must be
linked to their originals with their own similarities.
"""

from __future__ import annotations

import pytest_twisted
from scrapy.utils.defer import deferred_from_coro

from tests._same_answer import Answer, disagreements, read_answer
from tests.crawling import crawl
from tests.sites import serve_routes

CONCURRENCY = (1, 4, 16)
PRODUCTS = 18
CATEGORIES = ("bikes", "lights", "locks")
WORDS = (
    "frame", "saddle", "chain", "pedal", "lamp", "beam", "shackle", "cable", "rim", "spoke",
    "brake", "gear", "tyre", "valve", "bell", "rack", "basket", "mudguard",
)  # fmt: skip


def _sentences(i: int) -> list[str]:
    w = WORDS[i % len(WORDS)]
    return [
        f"The {w} model {i} was designed in our workshop for riders who cross the city daily.",
        f"Every {w} of series {i} is tested on cobbles, tram rails and wet autumn leaves first.",
        f"We ship the {w} number {i} in recycled cardboard with a printed fitting guide inside.",
        f"Customers who chose model {i} tell us the {w} still runs smoothly after two winters.",
        f"Spare parts for the {w} of model {i} stay in stock for at least ten years from today.",
        f"Our mechanics fit the {w} of model {i} for free when you collect it from the shop.",
    ]


def _page(title: str, main: str, *, canonical: str | None = None) -> str:
    head = f"<link rel='canonical' href='{canonical}'>" if canonical else ""
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title} | Spoke Shop</title>"
        f"{head}</head><body><header><a href='/'>Spoke Shop</a><nav>"
        + "".join(f"<a href='/category/{c}.html'>{c}</a>" for c in CATEGORIES)
        + "<a href='/login?ReturnUrl=%2F'>Sign in</a></nav></header>"
        f"<main>{main}</main><footer><p>Spoke Shop, 4 Mill Lane. Open daily.</p></footer>"
        "</body></html>"
    )


def _product(i: int, edit: bool = False) -> str:
    text = _sentences(i)
    if edit:
        text[1] = text[1].replace("first", "before")
    body = "".join(f"<p>{s}</p>" for s in text)
    return _page(
        f"Model {i}",
        f"<h1>Model {i}</h1><p class=price>{100 + 7 * i} EUR</p><div class=desc>{body}</div>"
        f"<a href='/product/p{i}/print.html'>Print</a> "
        f"<a href='/product/p{i}/old-print.html'>Old print</a> "
        f"<a href='/login?ReturnUrl=%2Fproduct%2Fp{i}.html'>Sign in to review</a>",
    )


def _route(path: str, query: dict[str, list[str]]) -> tuple[int, str] | None:
    if path in ("/", "/index.html"):
        links = "".join(
            f"<li><a href='/product/p{i}.html?utm_source=home&utm_medium=grid'>Model {i}</a>"
            for i in range(0, PRODUCTS, 3)
        )
        return 200, _page("Home", f"<h1>Welcome</h1><ul>{links}</ul>")
    if path.startswith("/category/"):
        name = path.rsplit("/", 1)[-1].removesuffix(".html")
        if name not in CATEGORIES:
            return None
        page = int(query.get("page", ["1"])[0])
        start = CATEGORIES.index(name) * (PRODUCTS // 3) + (page - 1) * 3
        cards = "".join(
            f"<div class=card><a href='/product/p{i}.html'>Model {i}</a><span>{100 + 7 * i}"
            " EUR</span></div>"
            for i in range(start, start + 3)
        )
        pager = "" if page > 1 else f"<a href='/category/{name}.html?page=2'>Next</a>"
        return 200, _page(f"{name} page {page}", f"<h1>{name}</h1>{cards}{pager}")
    if path.startswith("/product/"):
        rest = path.removeprefix("/product/")
        if rest.endswith("/print.html"):
            i = int(rest.split("/")[0][1:])
            text = "".join(f"<p>{s}</p>" for s in _sentences(i))
            return 200, f"<html><head><title>Model {i}</title></head><body>{text}</body></html>"
        if rest.endswith("-v2.html"):
            i = int(rest.removesuffix("-v2.html")[1:])
            return 200, _product(i, edit=True)
        if rest.endswith(".html") and "/" not in rest:
            i = int(rest.removesuffix(".html")[1:])
            if i >= PRODUCTS:
                return None
            page = _product(i)
            if i == 5:  # the shop links a one-word edit of this product from its page
                page = page.replace("</main>", "<a href='/product/p5-v2.html'>Also</a></main>")
            return 200, page
        return None  # the old print links are broken
    if path == "/login":
        return 200, _page("Sign in", "<form><input name=user><input name=pw></form>")
    return None


async def _answers(tmp) -> list[Answer]:
    answers = []
    for n in CONCURRENCY:
        db = f"sqlite:///{tmp / f's{n}.sqlite3'}"
        with serve_routes(_route) as base:
            await crawl(
                db,
                f"{base}/",
                settings={"CONCURRENT_REQUESTS": n, "CONCURRENT_REQUESTS_PER_DOMAIN": n},
            )
        answers.append(read_answer(f"CONCURRENT_REQUESTS={n}", db, tmp / f"s{n}", base))
    return answers


@pytest_twisted.async_fixture(scope="module")
async def shop(tmp_path_factory) -> list[Answer]:
    return await deferred_from_coro(_answers(tmp_path_factory.mktemp("same-answer-shop")))


def test_a_shop_crawled_at_three_concurrencies_gives_one_pages_table(shop) -> None:
    assert len(shop[0].rows) >= PRODUCTS + 10
    assert len({tuple(a.stored_order) for a in shop}) > 1, "one storing order: nothing tested"
    diff = disagreements(shop, "rows")
    assert not diff, "the same shop got different labels:\n" + diff


def test_the_shops_broken_links_are_the_same_at_every_concurrency(shop) -> None:
    broken = {u for u, (kind, status, _) in shop[0].responses.items() if status == 404}
    assert broken == {f"/product/p{i}/old-print.html" for i in range(PRODUCTS)}
    for other in shop[1:]:
        assert other.responses == shop[0].responses, other.label


def test_the_shops_copies_are_linked_with_their_own_similarities(shop) -> None:
    rows = shop[0].rows
    tracked = rows["/product/p3.html?utm_medium=grid&utm_source=home"]
    assert (tracked["verdict"], tracked["kind"], tracked["duplicate_of"]) == (
        "duplicate",
        "exact",
        "/product/p3.html",
    )
    edit = rows["/product/p5-v2.html"]
    assert (edit["verdict"], edit["kind"], edit["duplicate_of"]) == (
        "duplicate",
        "content",
        "/product/p5.html",
    )
    # its own measures against the original (which also links to it: one more line of text),
    # whichever member linked it to the group
    assert 0.5 <= float(edit["content_similarity"]) < 1.0
    assert float(edit["layout_similarity"]) >= 0.95
    printed = rows["/product/p5/print.html"]
    assert (printed["verdict"], printed["duplicate_of"]) == ("moved", "/product/p5.html")
    assert rows["/product/p5.html"]["verdict"] == "original"
    walls = [u for u in rows if u.startswith("/login")]
    assert len(walls) > 3
    originals = [u for u in walls if rows[u]["verdict"] == "original"]
    assert len(originals) == 1, "one login wall, one original"
    # the server ignores the ReturnUrl: the same bytes at every URL, so exact copies
    assert all(
        rows[u]["kind"] == "exact" and rows[u]["duplicate_of"] == originals[0]
        for u in walls
        if u not in originals
    )
