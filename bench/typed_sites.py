"""Deterministic small sites with known page types: a development set for template clusters.

Template-driven sites have a handful of page types that share one frame (header, menu,
sidebar, footer) and differ only inside the content region: a shop's product pages, its
paginated category listings, a login form, a few prose info pages and a home page; a forum's
board index, boards and threads; a blog's posts, archives and home; a news site's articles,
section fronts and home. Within a type, content varies as it does on real sites: product
descriptions of one to ten paragraphs, with or without a specification table and reviews;
threads of one post or twenty-five; news briefs of two paragraphs and features of forty.

Each seed draws another frame (wrapper depth, header and menu markup, sidebar or none, footer
columns, breadcrumbs) and another markup for each page type, so that no signature tuned on
one seed fits the others by chance. A site marks its ``<body>`` with its page types only
sometimes (``marked``), as some content systems do and most hand-made sites do not.

``make_site(kind, seed)`` gives a :class:`TypedSite` (``kind``: shop, forum, blog, news);
``news_eras(seed)`` gives one news site in four redesigns ("eras"), ten articles of each,
labelled by era: pages of one era should be one cluster whatever their length. Links are
root-relative and every page is reachable from "/" (``start``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "TypedSite", "make_site", "news_eras"]

KINDS = ("shop", "forum", "blog", "news")

_WORDS = (
    "amber",
    "anchor",
    "autumn",
    "basin",
    "beacon",
    "birch",
    "bramble",
    "breeze",
    "canvas",
    "cedar",
    "cinder",
    "clover",
    "copper",
    "coral",
    "cotton",
    "crane",
    "delta",
    "ember",
    "fable",
    "fern",
    "flint",
    "garnet",
    "glacier",
    "harbor",
    "hazel",
    "heron",
    "indigo",
    "ivory",
    "juniper",
    "kestrel",
    "lagoon",
    "lantern",
    "linen",
    "maple",
    "meadow",
    "mica",
    "nectar",
    "oak",
    "orchid",
    "pebble",
    "pine",
    "quartz",
    "raven",
    "reed",
    "saffron",
    "sage",
    "slate",
    "spruce",
    "thistle",
    "timber",
    "tulip",
    "umber",
    "velvet",
    "willow",
    "wren",
    "yarrow",
)
_VERBS = (
    "brings",
    "carries",
    "finds",
    "keeps",
    "makes",
    "moves",
    "opens",
    "shapes",
    "shows",
    "turns",
    "builds",
    "holds",
    "meets",
    "leaves",
    "joins",
    "follows",
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 14))]
    words.insert(2, rng.choice(_VERBS))
    return " ".join(words).capitalize() + "."


def _para(rng: random.Random, lo: int = 2, hi: int = 6) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(lo, hi)))


def _title(rng: random.Random, n: int = 3) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).title()


def _e(tag: str, *children: str, cls: str | None = None, **attrs: str) -> str:
    """An element as text; ``cls`` its class, ``attrs`` others (``href_`` style keys)."""
    extra = "".join(f' {k.rstrip("_")}="{v}"' for k, v in attrs.items())
    if cls:
        extra = f' class="{cls}"' + extra
    if tag in ("img", "input"):
        return f"<{tag}{extra}>"
    return f"<{tag}{extra}>{''.join(children)}</{tag}>"


@dataclass(frozen=True)
class TypedSite:
    """A generated site: each page's HTML by path, its page type, the page a crawl starts at."""

    pages: dict[str, str]
    kinds: dict[str, str]
    start: str = "/"


class _Frame:
    """A site's frame: what every page shares around its content, drawn from the seed."""

    def __init__(self, rng: random.Random, name: str, menu: list[tuple[str, str]], marked: bool):
        self.rng = rng
        self.name = name
        self.marked = marked
        self.menu = menu
        self.wrappers = rng.choice([["div"], ["div", "div"], ["main"], ["div", "main"]])
        self.header = rng.randrange(3)
        self.topbar = rng.random() < 0.4
        self.sidebar = rng.choice(["none", "none", "left", "right"])
        self.side_boxes = rng.randint(1, 3)
        self.footer_cols = rng.randint(1, 4)
        self.crumbs = rng.random() < 0.6
        self.search = rng.random() < 0.5
        self.prefix = rng.choice(["site", "x", "c", "page", "tpl"])

    def _menu(self) -> str:
        items = [_e("a", label, href=href) for href, label in self.menu]
        if self.header == 0:
            return _e("nav", _e("ul", *(_e("li", a) for a in items)), cls="menu")
        if self.header == 1:
            return _e("div", *items, cls="nav")
        return _e("nav", _e("div", _e("ul", *(_e("li", a) for a in items))))

    def _head(self) -> str:
        logo = _e("a", _e("img", src="/logo.png", alt=self.name), href="/", cls="logo")
        parts = [logo, self._menu()]
        if self.search:
            parts.append(_e("form", _e("input", name="q"), _e("button", "Search"), action="/s"))
        top = (
            _e("div", _e("span", "Free delivery"), _e("a", "Help", href="/help"))
            if (self.topbar)
            else ""
        )
        if self.header == 1:
            return top + _e("div", _e("div", *parts, cls="inner"), cls="header")
        return top + _e("header", *parts)

    def _side(self) -> str:
        rng = random.Random(self.name)
        boxes = [
            _e(
                "div",
                _e("h3", _title(rng, 2)),
                _e("ul", *(_e("li", _e("a", _title(rng, 2), href="/x")) for _ in range(5))),
                cls="box",
            )
            for _ in range(self.side_boxes)
        ]
        return _e("aside", *boxes, cls="sidebar")

    def _foot(self) -> str:
        rng = random.Random(self.name + "foot")
        cols = [
            _e(
                "div",
                _e("h4", _title(rng, 1)),
                _e("ul", *(_e("li", _e("a", _title(rng, 2), href="/x")) for _ in range(4))),
            )
            for _ in range(self.footer_cols)
        ]
        return _e("footer", _e("div", *cols, cls="cols"), _e("p", f"© {self.name}"))

    def page(self, kind: str, title: str, content: str, crumbs: list[str] | None = None) -> str:
        inner = content
        if self.crumbs and crumbs:
            trail = _e("ol", *(_e("li", _e("a", c, href="/")) for c in crumbs), cls="crumbs")
            inner = trail + inner
        body = _e("div", inner, cls="content")
        if self.sidebar == "left":
            body = _e("div", self._side(), body, cls="cols")
        elif self.sidebar == "right":
            body = _e("div", body, self._side(), cls="cols")
        for tag in reversed(self.wrappers):
            body = _e(tag, body, cls="wrap")
        cls = f"{self.prefix} {self.prefix}-{kind}" if self.marked else self.prefix
        return (
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{title} | {self.name}</title></head>"
            f'<body class="{cls}">{self._head()}{body}{self._foot()}</body></html>'
        )


def _pager(rng: random.Random, base: str, n: int, pages: int) -> str:
    links = [_e("a", str(i), href=f"{base}?page={i}") for i in range(1, pages + 1) if i != n]
    return _e("nav", _e("span", str(n)), *links, cls="pager")


def _card(rng: random.Random, style: int, href: str, badge: bool) -> str:
    img = _e("img", src=f"{href}.jpg", alt="")
    name = _title(rng, 2)
    price = _e("span", f"${rng.randint(5, 300)}.{rng.randint(0, 99):02d}", cls="price")
    extra = _e("span", "Sale", cls="badge") if badge else ""
    if style == 0:
        return _e("li", _e("a", img, href=href), _e("h3", _e("a", name, href=href)), price, extra)
    if style == 1:
        return _e("div", _e("a", img, _e("span", name), href=href), _e("div", price, extra))
    return _e("article", _e("figure", _e("a", img, href=href)), _e("h2", name), price, extra)


def _grid(rng: random.Random, style: int, hrefs: list[str]) -> str:
    cards = [_card(rng, style, h, rng.random() < 0.2) for h in hrefs]
    return _e("ul", *cards, cls="grid") if style == 0 else _e("div", *cards, cls="grid")


def _login(rng: random.Random) -> str:
    form = _e(
        "form",
        _e("label", "Email"),
        _e("input", name="email"),
        _e("label", "Password"),
        _e("input", name="password", type="password"),
        _e("button", "Sign in"),
        _e("a", "Forgot your password?", href="/forgot"),
        action="/login",
        method="post",
    )
    return _e("h1", "Sign in") + form + _e("p", "New here? ", _e("a", "Register", href="/r"))


def _info(rng: random.Random, title: str) -> str:
    parts = [_e("h1", title)]
    for _ in range(rng.randint(1, 4)):
        parts.append(_e("p", _para(rng)))
        if rng.random() < 0.4:
            parts.append(_e("h2", _title(rng)))
    if rng.random() < 0.4:
        parts.append(_e("ul", *(_e("li", _sentence(rng)) for _ in range(rng.randint(2, 6)))))
    return "".join(parts)


def _shop(seed: int) -> TypedSite:
    rng = random.Random(f"shop-{seed}")
    name = _title(rng, 2) + " Store"
    cats = [_title(rng, 1).lower() for _ in range(3)]
    info = ["about", "shipping", "returns", "contact"]
    menu = [(f"/c/{c}", c.title()) for c in cats] + [("/login", "Sign in")]
    frame = _Frame(rng, name, menu, marked=rng.random() < 0.25)
    style = rng.randrange(3)
    pages: dict[str, str] = {}
    kinds: dict[str, str] = {}
    products = [f"/p/{_title(rng, 2).lower().replace(' ', '-')}-{i}" for i in range(30)]
    per = rng.choice([3, 4, 5])
    listing_pages = 0
    for ci, cat in enumerate(cats):
        mine = products[ci::3]
        n_pages = (len(mine) + per - 1) // per
        for n in range(1, n_pages + 1):
            chunk = mine[(n - 1) * per : n * per]
            body = _e("h1", cat.title())
            if rng.random() < 0.5 or n == 1:
                body += _e("p", _para(rng, 1, 2), cls="intro") if style != 1 else ""
            body += _grid(rng, style, chunk)
            if n_pages > 1:
                body += _pager(rng, f"/c/{cat}", n, n_pages)
            path = f"/c/{cat}" + (f"?page={n}" if n > 1 else "")
            pages[path] = frame.page("listing", cat, body, ["Home", cat])
            kinds[path] = "listing"
            listing_pages += 1
    for path in products:
        pages[path] = frame.page("product", _title(rng), _product(rng, style, products), ["Home"])
        kinds[path] = "product"
    pages["/login"] = frame.page("login", "Sign in", _login(rng))
    kinds["/login"] = "login"
    for slug in info:
        path = f"/{slug}"
        pages[path] = frame.page("info", slug.title(), _info(rng, slug.title()), ["Home"])
        kinds[path] = "info"
    hero = _e(
        "div",
        _e("h2", _title(rng, 4)),
        _e("p", _sentence(rng)),
        _e("a", "Shop now", href=f"/c/{cats[0]}"),
        cls="hero",
    )
    home = hero + _e("section", _e("h2", "Featured"), _grid(rng, style, products[:8]))
    home += _e(
        "section",
        _e("h2", "Categories"),
        _e("ul", *(_e("li", _e("a", c, href=f"/c/{c}")) for c in cats)),
    )
    home += _e("p", *(_e("a", s, href=f"/{s}") for s in info), cls="links")
    pages["/"] = frame.page("home", "Home", home)
    kinds["/"] = "home"
    return TypedSite(pages, kinds)


def _product(rng: random.Random, style: int, products: list[str]) -> str:
    gallery = _e("div", *(_e("img", src="/i.jpg") for _ in range(rng.randint(1, 5))), cls="gal")
    price = _e("span", f"${rng.randint(5, 300)}", cls="now")
    if rng.random() < 0.3:
        price += _e("del", f"${rng.randint(300, 400)}")
    buy = _e(
        "form",
        _e("select", *(_e("option", s) for s in ("S", "M", "L"))) if rng.random() < 0.5 else "",
        _e("input", name="qty", value="1"),
        _e("button", "Add to cart"),
        action="/cart",
    )
    summary = _e(
        "div",
        _e("h1", _title(rng)),
        _e("div", price, cls="price"),
        _e("p", f"SKU {rng.randint(1000, 9999)}", cls="sku"),
        buy,
        cls="summary",
    )
    desc = [_e("p", _para(rng)) for _ in range(rng.randint(1, 10))]
    if rng.random() < 0.4:
        desc.append(_e("ul", *(_e("li", _sentence(rng)) for _ in range(rng.randint(2, 6)))))
    parts = [_e("div", gallery, summary, cls="top"), _e("div", _e("h2", "Description"), *desc)]
    if rng.random() < 0.5:
        rows = (_e("tr", _e("th", _title(rng, 1)), _e("td", _title(rng, 2))) for _ in range(6))
        parts.append(_e("table", *rows, cls="specs"))
    if rng.random() < 0.6:
        reviews = [
            _e("div", _e("strong", _title(rng, 2)), _e("p", _para(rng, 1, 3)), cls="review")
            for _ in range(rng.randint(0, 6))
        ]
        parts.append(_e("section", _e("h2", "Reviews"), *reviews, cls="reviews"))
    if rng.random() < 0.5:
        parts.append(
            _e("section", _e("h2", "You may also like"), _grid(rng, style, rng.sample(products, 4)))
        )
    return "".join(parts)


def _forum(seed: int) -> TypedSite:
    rng = random.Random(f"forum-{seed}")
    name = _title(rng, 2) + " Forum"
    boards = [_title(rng, 2).lower().replace(" ", "-") for _ in range(rng.randint(3, 5))]
    menu = [("/", "Forums"), ("/members", "Members"), ("/login", "Log in")]
    frame = _Frame(rng, name, menu, marked=rng.random() < 0.25)
    table = rng.random() < 0.5
    pages: dict[str, str] = {}
    kinds: dict[str, str] = {}
    threads: dict[str, list[str]] = {b: [] for b in boards}
    for i in range(36):
        threads[boards[i % len(boards)]].append(f"/t/{i}")

    def row(cells: list[str]) -> str:
        if table:
            return _e("tr", *(_e("td", c) for c in cells))
        return _e("div", *(_e("div", c) for c in cells), cls="row")

    def rows(items: list[str]) -> str:
        return _e("table", *items) if table else _e("div", *items, cls="list")

    index = [_e("h1", name)]
    for b in boards:
        cells = [_e("a", b, href=f"/b/{b}") + _e("p", _sentence(rng)), str(rng.randint(9, 999))]
        index.append(rows([row(cells)]))
    pages["/"] = frame.page("index", name, "".join(index))
    kinds["/"] = "index"
    per = 5
    for b in boards:
        mine = threads[b]
        n_pages = (len(mine) + per - 1) // per
        for n in range(1, n_pages + 1):
            items = [
                row([_e("a", _title(rng, 4), href=t) + _e("span", _title(rng, 1)), str(n), "1"])
                for t in mine[(n - 1) * per : n * per]
            ]
            body = _e("h1", b) + _e("a", "New topic", href="/new", cls="button") + rows(items)
            if n_pages > 1:
                body += _pager(rng, f"/b/{b}", n, n_pages)
            path = f"/b/{b}" + (f"?page={n}" if n > 1 else "")
            pages[path] = frame.page("board", b, body, ["Forums", b])
            kinds[path] = "board"
        for t in mine:
            pages[t] = frame.page("thread", _title(rng), _thread(rng), ["Forums", b])
            kinds[t] = "thread"
    pages["/login"] = frame.page("login", "Log in", _login(rng))
    kinds["/login"] = "login"
    return TypedSite(pages, kinds)


def _thread(rng: random.Random) -> str:
    posts = []
    for _ in range(rng.choice([1, 1, 2, 3, 5, 8, 12, 25])):
        body = [_e("p", _para(rng, 1, 5)) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.2:
            body.insert(0, _e("blockquote", _e("p", _sentence(rng))))
        if rng.random() < 0.1:
            body.append(_e("pre", "code " + _sentence(rng)))
        author = _e(
            "div",
            _e("img", src="/a.png"),
            _e("a", _title(rng, 1), href="/u"),
            _e("span", "Member"),
            cls="author",
        )
        sig = _e("div", _sentence(rng), cls="sig") if rng.random() < 0.3 else ""
        posts.append(_e("div", author, _e("div", *body, cls="body"), sig, cls="post"))
    reply = _e("form", _e("textarea", name="text"), _e("button", "Reply"), action="/reply")
    return _e("h1", _title(rng, 4)) + _e("div", *posts, cls="posts") + reply


def _teaser(rng: random.Random, href: str, image: bool, style: int) -> str:
    img = _e("img", src=f"{href}.jpg") if image else ""
    head = _e("h2" if style else "h3", _e("a", _title(rng, 5), href=href))
    meta = _e("span", "March 3", cls="date")
    return _e("article", img, head, meta, _e("p", _para(rng, 1, 2)))


def _blog(seed: int) -> TypedSite:
    rng = random.Random(f"blog-{seed}")
    name = _title(rng, 2) + " Blog"
    months = ["2021-01", "2021-02", "2021-03", "2021-04"]
    cats = [_title(rng, 1).lower() for _ in range(3)]
    menu = [("/", "Home"), ("/about", "About")] + [(f"/category/{c}", c) for c in cats]
    frame = _Frame(rng, name, menu, marked=rng.random() < 0.25)
    style = rng.randrange(2)
    posts = [f"/{months[i % 4]}/{_title(rng, 2).lower().replace(' ', '-')}" for i in range(40)]
    pages: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for p in posts:
        pages[p] = frame.page("post", _title(rng), _post(rng), ["Home"])
        kinds[p] = "post"
    per = 10
    groups = {f"/{m}": posts[i::4] for i, m in enumerate(months)}
    groups.update({f"/category/{c}": posts[i::3] for i, c in enumerate(cats)})
    for base, mine in groups.items():
        n_pages = (len(mine) + per - 1) // per
        for n in range(1, n_pages + 1):
            items = [
                _teaser(rng, h, rng.random() < 0.5, style) for h in mine[(n - 1) * per :][:per]
            ]
            body = _e("header", _e("h1", "Archive: " + base.rsplit("/", 1)[1]), cls="archive")
            body += "".join(items) + (_pager(rng, base, n, n_pages) if n_pages > 1 else "")
            path = base + (f"?page={n}" if n > 1 else "")
            pages[path] = frame.page("archive", base, body, ["Home"])
            kinds[path] = "archive"
    for n in range(1, 5):
        items = [_teaser(rng, h, True, style) for h in posts[(n - 1) * per :][:per]]
        body = "".join(items) + _pager(rng, "/", n, 4)
        path = "/" + (f"?page={n}" if n > 1 else "")
        pages[path] = frame.page("home", name, body)
        kinds[path] = "home"
    pages["/about"] = frame.page("page", "About", _info(rng, "About"), ["Home"])
    kinds["/about"] = "page"
    return TypedSite(pages, kinds)


def _post(rng: random.Random) -> str:
    body: list[str] = []
    for _ in range(rng.randint(2, 20)):
        x = rng.random()
        if x < 0.1:
            body.append(_e("figure", _e("img", src="/f.jpg"), _e("figcaption", _sentence(rng))))
        elif x < 0.2:
            body.append(_e("h2", _title(rng)))
        elif x < 0.25:
            body.append(_e("blockquote", _e("p", _sentence(rng))))
        elif x < 0.3:
            body.append(_e("ul", *(_e("li", _sentence(rng)) for _ in range(3))))
        else:
            body.append(_e("p", _para(rng)))
    head = _e(
        "header", _e("h1", _title(rng, 5)), _e("div", "By ", _e("a", "Ann", href="/a"), cls="meta")
    )
    tags = _e("footer", *(_e("a", t, href="/tag") for t in ("one", "two")), cls="tags")
    comments = ""
    n = rng.choice([0, 0, 1, 3, 8])
    if n:
        items = [_e("li", _e("cite", _title(rng, 1)), _e("p", _para(rng, 1, 3))) for _ in range(n)]
        comments = _e("section", _e("h2", f"{n} comments"), _e("ol", *items), cls="comments")
    form = _e("form", _e("textarea", name="c"), _e("button", "Post comment"), action="/c")
    return _e("article", head, _e("div", *body, cls="entry"), tags) + comments + form


class _News:
    """A news site's markup, one era: the frame and each page type's own markup."""

    def __init__(self, rng: random.Random, name: str, sections: list[str]):
        menu = [("/", "Home")] + [(f"/s/{s}", s.title()) for s in sections]
        self.frame = _Frame(rng, name, menu, marked=rng.random() < 0.25)
        self.style = rng.randrange(2)
        self.kicker = rng.random() < 0.5
        self.related = rng.random() < 0.6
        self.share = rng.random() < 0.5

    def article(self, rng: random.Random, section: str) -> str:
        kind = rng.choice(["brief", "story", "story", "feature", "gallery"])
        n = {"brief": (2, 3), "story": (5, 14), "feature": (20, 40), "gallery": (1, 3)}[kind]
        head = [_e("span", section, cls="kicker")] if self.kicker else []
        head += [_e("h1", _title(rng, 6)), _e("p", _sentence(rng), cls="standfirst")]
        head.append(
            _e("div", _e("a", _title(rng, 2), href="/author"), _e("time", "9 May"), cls="byline")
        )
        parts = [_e("header", *head)]
        if kind != "brief" and rng.random() < 0.7:
            parts.append(_e("figure", _e("img", src="/a.jpg"), _e("figcaption", _sentence(rng))))
        if self.share:
            parts.append(_e("div", *(_e("a", s, href="/share") for s in "ftm"), cls="share"))
        body: list[str] = []
        for i in range(rng.randint(*n)):
            body.append(_e("p", _para(rng, 1, 5)))
            if kind == "feature" and i % 6 == 5:
                body.append(_e("h2", _title(rng)))
            if kind != "brief" and rng.random() < 0.05:
                body.append(_e("blockquote", _e("p", _sentence(rng)), cls="pull"))
            if kind == "story" and rng.random() < 0.04:
                more = _e("aside", _e("h4", "Read more"), _e("a", _title(rng), href="/s"))
                body.append(more)
        if kind == "gallery":
            body += [
                _e("figure", _e("img", src="/g.jpg"), _e("figcaption", _sentence(rng)))
                for _ in range(rng.randint(4, 12))
            ]
        parts.append(_e("div", *body, cls="body"))
        if self.related:
            links = (_e("li", _e("a", _title(rng, 5), href="/s")) for _ in range(4))
            parts.append(_e("section", _e("h3", "Related"), _e("ul", *links), cls="related"))
        return _e("article", *parts)

    def front(self, rng: random.Random, section: str, hrefs: list[str]) -> str:
        lead = _e("div", _teaser(rng, hrefs[0], True, 1), cls="lead")
        rest = [_teaser(rng, h, rng.random() < 0.6, self.style) for h in hrefs[1:]]
        return _e("h1", section.title()) + lead + _e("div", *rest, cls="list")

    def home(self, rng: random.Random, by_section: dict[str, list[str]]) -> str:
        blocks = []
        for s, hrefs in by_section.items():
            links = (_e("li", _e("a", _title(rng, 5), href=h)) for h in hrefs[1:5])
            blocks.append(
                _e(
                    "section",
                    _e("h2", _e("a", s, href=f"/s/{s}")),
                    _teaser(rng, hrefs[0], True, 0),
                    _e("ul", *links),
                )
            )
        return "".join(blocks)


def _news(seed: int) -> TypedSite:
    rng = random.Random(f"news-{seed}")
    sections = [_title(rng, 1).lower() for _ in range(4)]
    era = _News(rng, _title(rng, 2) + " Times", sections)
    pages: dict[str, str] = {}
    kinds: dict[str, str] = {}
    by_section: dict[str, list[str]] = {s: [] for s in sections}
    for i in range(48):
        s = sections[i % 4]
        path = f"/{s}/{i}-{_title(rng, 1).lower()}"
        by_section[s].append(path)
        pages[path] = era.frame.page("article", _title(rng), era.article(rng, s), ["Home", s])
        kinds[path] = "article"
    per = 6
    for s, hrefs in by_section.items():
        n_pages = (len(hrefs) + per - 1) // per
        for n in range(1, n_pages + 1):
            body = era.front(rng, s, hrefs[(n - 1) * per : n * per])
            body += _pager(rng, f"/s/{s}", n, n_pages)
            path = f"/s/{s}" + (f"?page={n}" if n > 1 else "")
            pages[path] = era.frame.page("section", s, body, ["Home"])
            kinds[path] = "section"
    pages["/"] = era.frame.page("home", "Home", era.home(rng, by_section))
    kinds["/"] = "home"
    return TypedSite(pages, kinds)


def news_eras(seed: int, eras: int = 4, articles: int = 10) -> TypedSite:
    """One news site in ``eras`` redesigns, ``articles`` article pages of each, labelled by
    era (``/e2/...`` is era 2): one era's articles of every length should be one cluster."""
    rng = random.Random(f"eras-{seed}")
    sections = [_title(rng, 1).lower() for _ in range(4)]
    name = _title(rng, 2) + " Post"
    pages: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for e in range(eras):
        era = _News(random.Random(f"eras-{seed}-{e}"), name, sections)
        for i in range(articles):
            s = sections[i % 4]
            path = f"/e{e}/{s}/{i}"
            pages[path] = era.frame.page("article", _title(rng), era.article(rng, s), ["Home", s])
            kinds[path] = f"era{e}"
    return TypedSite(pages, kinds, start=next(iter(pages)))


_MAKERS: dict[str, Any] = {"shop": _shop, "forum": _forum, "blog": _blog, "news": _news}


def make_site(kind: str, seed: int = 0) -> TypedSite:
    """A site of ``kind`` (:data:`KINDS`) drawn from ``seed``."""
    return _MAKERS[kind](seed)  # type: ignore[no-any-return]
