"""Thin pages: too little text for the content channel, yet duplicates a reader would see.

A login wall served at one URL per protected page, soft 404s at random URLs: each family
is one group (kind ``thin``); forum threads of one template with different short texts
stay apart. Every test crawls a generated site in-process.
"""

from __future__ import annotations

from collections import defaultdict
from urllib.parse import quote

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl
from tests.sites import page, request_id, serve_routes, thread_text
from visdup.content.textprint import visible_key
from visdup.storage.store import Store
from visdup.verdicts import DUPLICATE, THIN

PROTECTED = 30
THREADS = 40
MISSING = [f"/{request_id()}/{request_id()[:5]}.html" for _ in range(10)]


def _login(query: dict[str, list[str]]) -> str:
    back = query.get("ReturnUrl", ["/"])[0]
    return page(
        "Sign in",
        "<h1>Sign in</h1>"
        f"<p>Please sign in to see {back}</p>"
        f"<form action='/login'><input type='hidden' name='r' value='{back}'>"
        "<label>Name <input name='user'></label><button>Sign in</button></form>"
        f"<p class='small'>Request {request_id()}</p>",
    )


def _missing(path: str) -> str:
    return page(
        "Not found",
        f"<h1>Not found</h1><p>Sorry, {path} does not exist.</p>"
        f"<p class='small'>Request {request_id()}</p>",
    )


def _thread(i: int) -> str:
    title, body = thread_text(i)
    return page(
        title,
        f"<h1>{title}</h1><div class='post'><p>{body}</p></div><p class='small'>Thread {i}</p>",
    )


def _index() -> str:
    links = [f"/login/RedirectToLogin?ReturnUrl={quote(f'/messages/{i}', safe='')}"
             for i in range(PROTECTED)]  # fmt: skip
    links += [f"/thread/{i}" for i in range(THREADS)] + MISSING
    items = "".join(f"<li><a href='{u}'>{u}</a></li>" for u in links)
    return page("Forums", f"<h1>Forums</h1><ul class='topics'>{items}</ul>")


def route(path: str, query: dict[str, list[str]]) -> tuple[int, str] | None:
    if path == "/":
        return 200, _index()
    if path == "/login/RedirectToLogin":
        return 200, _login(query)
    if path in ("/members", "/help"):  # the menu's own pages
        name = path[1:].title()
        return 200, page(name, f"<h1>{name}</h1><p>The {path[1:]} page of the forum.</p>")
    if path.startswith("/thread/") and path[8:].isdigit():
        return 200, _thread(int(path[8:]))
    return 200, _missing(path)  # a soft 404: status 200


def _groups(rows: list) -> dict[int, set[str]]:
    by_id = {r.id: r for r in rows}
    groups: dict[int, set[str]] = defaultdict(set)
    for r in rows:
        if r.duplicate_of is not None:
            root = r.duplicate_of
            while by_id[root].duplicate_of is not None:
                root = by_id[root].duplicate_of
            groups[root] |= {r.url, by_id[root].url}
    return groups


@deferred_f_from_coro_f
async def test_login_walls_and_soft_404s_are_one_group_each_and_threads_none(tmp_path):
    db = f"sqlite:///{tmp_path / 'thin.sqlite3'}"
    with serve_routes(route) as base:
        crawler = await crawl(db, base + "/")
    rows = Store.from_url(db).rows()
    assert len(rows) == 3 + PROTECTED + THREADS + len(MISSING)
    groups = list(_groups(rows).values())
    logins = [g for g in groups if any("RedirectToLogin" in u for u in g)]
    missing = [g for g in groups if any(u.endswith(".html") for u in g)]
    assert len(logins) == 1 and len(logins[0]) == PROTECTED, logins
    assert all("RedirectToLogin" in u for u in logins[0])
    assert len(missing) == 1 and len(missing[0]) == len(MISSING), missing
    assert not [g for g in groups if any("/thread/" in u for u in g)], "threads stay apart"
    assert len(groups) == 2
    dups = [r for r in rows if r.duplicate_of is not None]
    assert {(r.verdict, r.kind) for r in dups} == {(DUPLICATE, THIN)}
    threads = [r for r in rows if "/thread/" in r.url]
    assert {r.verdict for r in threads} <= {"same_template", "novel"}
    assert all(r.kind is None for r in threads)
    stats = crawler.stats.get_stats()
    assert stats["visdup/duplicates/thin"] == len(dups) == PROTECTED - 1 + len(MISSING) - 1


def test_visible_key_ignores_what_varies_per_url() -> None:
    a = visible_key(
        "Please sign in to see /messages/3. Request 8f3a2c91d4e1",
        "http://x/login?ReturnUrl=%2Fmessages%2F3",
    )
    b = visible_key(
        "Please sign in to see /messages/17. Request 00aa11bb22cc",
        "http://x/login?ReturnUrl=/messages/17",
    )
    c = visible_key(
        "Please SIGN in  to see /messages/17 - request 31", "http://x/login?ReturnUrl=/messages/17"
    )
    assert a == b == c
    assert visible_key("Sorry, /a/b.html does not exist.", "http://x/a/b.html") == visible_key(
        "Sorry, /qq/zz.html does not exist.", "http://x/qq/zz.html"
    )
    # different words stay different, whatever the URL
    assert visible_key("My chain squeaks", "http://x/t/1") != visible_key(
        "My tyre squeaks", "http://x/t/1"
    )
