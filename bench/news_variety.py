"""A news site in several redesigns whose articles of one design vary as real ones do.

:func:`bench.typed_sites.news_eras` draws one article markup per era and varies the length
and a few inline blocks. Real news articles of one design vary more: a lead image, a gallery,
a video embed or nothing at the top; pull quotes, embedded posts, ad slots and an inline
"related stories" box among the paragraphs; live blogs made of timed updates; a paywall
teaser that cuts the text after two paragraphs; comment sections from none to dozens; briefs
of two paragraphs and long reads with sub-headings; and where a content system names the
article on ``<body>`` (WordPress, Ghost, Drupal), its id, category, format and tags, none on
one article and six on the next. Pages of one era are still one template:
a layout signature should keep them together whatever each article carries.

``newsvar_eras(seed)`` gives such a site (four eras, ten articles each, labelled by era);
``bench/bench_cluster.py --sets newsvar`` measures it on seeds 0-4, ``newsvar@5-9`` held out.
"""

from __future__ import annotations

import random

from bench.typed_sites import TypedSite, _e, _Frame, _para, _sentence, _title

__all__ = ["newsvar_eras"]

_THEMES = ("aurora", "meridian", "ledger", "quartz", "harbor", "summit", "tidal", "ember")
_TAGS = ("election", "economy", "climate", "football", "courts", "health", "housing", "music")


class _Era:
    """One design of the site: its frame and the markup of each optional block."""

    def __init__(self, rng: random.Random, name: str, sections: list[str], theme: str):
        self.theme = theme  # a redesign is a new theme, named on <body> by a content system
        menu = [("/", "Home")] + [(f"/s/{s}", s.title()) for s in sections]
        self.frame = _Frame(rng, name, menu, marked=rng.random() < 0.25)
        self.body_cls = rng.choice(["body", "article-body", "story-text", "entry-content"])
        self.wrap_paras = rng.random() < 0.25  # each paragraph in a block of its own
        self.comments_inside = rng.random() < 0.5
        self.related_end = rng.random() < 0.6
        self.tags = rng.random() < 0.5
        self.kicker = rng.random() < 0.5
        # the content system naming each article on <body> (a redesign may change it too)
        self.cms = rng.choice(["wordpress", "wordpress", "ghost", "drupal", ""])

    def body_class(self, rng: random.Random, section: str, n: int, html: str) -> str:
        """``html`` with the ``<body>`` classes a content system writes: the template, the
        post's id, section and format, and one class per tag (none to six)."""
        if not self.cms:
            return html
        tags = [f"tag-{rng.choice(_TAGS)}" for _ in range(rng.choice([0, 0, 1, 2, 3, 6]))]
        if self.cms == "ghost":
            names = ["post-template", *tags]
        elif self.cms == "drupal":
            names = ["path-node", "page-node-type-article", f"page-node-{n}"]
        else:
            names = [f"theme-{self.theme}", "single", "single-post", f"postid-{n}"]
            names += [f"category-{section}", *tags]
            names.append(rng.choice(["single-format-standard"] * 3 + ["single-format-video"]))
            if rng.random() < 0.5:
                names.append("has-featured-image")
        start = html.index("<body")
        end = html.index(">", start)
        return html[:start] + f'<body class="{" ".join(names)}"' + html[end:]

    def _media(self, rng: random.Random) -> str:
        what = rng.choice(["image", "image", "image", "gallery", "video", "none"])
        if what == "image":
            return _e("figure", _e("img", src="/a.jpg"), _e("figcaption", _sentence(rng)))
        if what == "gallery":
            return self._gallery(rng)
        if what == "video":
            player = _e("iframe", src="https://video.example/embed/1")
            return _e("div", _e("div", player, cls="player"), _e("p", _sentence(rng)), cls="video")
        return ""

    def _gallery(self, rng: random.Random) -> str:
        shots = [
            _e("li", _e("figure", _e("img", src="/g.jpg"), _e("figcaption", _sentence(rng))))
            for _ in range(rng.randint(3, 12))
        ]
        return _e("div", _e("ul", *shots), _e("button", "Next"), cls="gallery")

    def _inline(self, rng: random.Random) -> str:
        """A block among the paragraphs: a pull quote, an embed, an ad, related stories."""
        what = rng.choice(["quote", "tweet", "ad", "related", "figure", "video"])
        if what == "quote":
            return _e("blockquote", _e("p", _sentence(rng)), _e("cite", _title(rng, 2)))
        if what == "tweet":
            inner = _e("p", _sentence(rng)), _e("a", "May 9", href="https://t.example/1")
            return _e("blockquote", *inner, cls="twitter-tweet")
        if what == "ad":
            return _e("div", _e("div", _e("iframe", src="/ad"), cls="slot"), cls="ad")
        if what == "related":
            links = (_e("li", _e("a", _title(rng, 5), href="/s")) for _ in range(rng.randint(2, 4)))
            return _e("aside", _e("h4", "Read more"), _e("ul", *links), cls="related-inline")
        if what == "figure":
            return _e("figure", _e("img", src="/b.jpg"), _e("figcaption", _sentence(rng)))
        return _e("div", _e("iframe", src="https://video.example/embed/2"), cls="embed")

    def _para(self, rng: random.Random) -> str:
        p = _e("p", _para(rng, 1, 5))
        return _e("div", p, cls="para") if self.wrap_paras else p

    def _live(self, rng: random.Random) -> list[str]:
        updates = []
        for _ in range(rng.randint(3, 20)):
            inner = [_e("time", "10:42"), _e("h3", _title(rng, 4)), self._para(rng)]
            if rng.random() < 0.3:
                inner.append(self._inline(rng))
            updates.append(_e("div", *inner, cls="update"))
        return [_e("div", *updates, cls="live")]

    def _text(self, rng: random.Random, kind: str) -> list[str]:
        n = {"brief": (2, 3), "story": (5, 14), "long": (20, 45), "paywall": (2, 2)}[kind]
        body: list[str] = []
        for i in range(rng.randint(*n)):
            body.append(self._para(rng))
            if kind == "long" and i % 6 == 5:
                body.append(_e("h2", _title(rng)))
            if kind != "brief" and rng.random() < 0.12:
                body.append(self._inline(rng))
        if kind == "paywall":
            offer = _e("p", _sentence(rng)), _e("a", "Subscribe", href="/subscribe")
            body.append(_e("div", _e("h3", "Read the full story"), *offer, cls="paywall"))
        return body

    def _comments(self, rng: random.Random) -> str:
        n = rng.choice([0, 0, 0, 2, 5, 12, 40, 120])
        if not n:
            return ""
        items = [
            _e("li", _e("div", _e("cite", _title(rng, 1)), _e("p", _para(rng, 1, 3)), cls="c"))
            for _ in range(n)
        ]
        form = _e("form", _e("textarea", name="c"), _e("button", "Post"), action="/c")
        return _e("section", _e("h2", f"{n} comments"), _e("ol", *items), form, cls="comments")

    def article(self, rng: random.Random, section: str) -> str:
        kind = rng.choice(
            ["brief", "story", "story", "story", "long", "live", "paywall", "photos", "opinion"]
        )
        head = [_e("span", section, cls="kicker")] if self.kicker else []
        head += [_e("h1", _title(rng, 6)), _e("p", _sentence(rng), cls="standfirst")]
        head.append(
            _e("div", _e("a", _title(rng, 2), href="/author"), _e("time", "9 May"), cls="byline")
        )
        parts = [_e("header", *head)]
        if kind not in ("brief", "photos"):
            parts.append(self._media(rng))
        if kind == "opinion":  # the columnist's photo and a line about them
            bio = _e("img", src="/face.jpg"), _e("p", _sentence(rng))
            parts.append(_e("div", *bio, cls="author-bio"))
        if kind == "live":
            body = self._live(rng)
        elif kind == "photos":  # the gallery is the story: a line of text or none
            body = [self._gallery(rng)] + [self._para(rng) for _ in range(rng.randint(0, 1))]
        else:
            body = self._text(rng, "story" if kind == "opinion" else kind)
        parts.append(_e("div", *body, cls=self.body_cls))
        if self.tags:
            parts.append(_e("footer", *(_e("a", t, href="/tag") for t in ("one", "two"))))
        if self.related_end:
            links = (_e("li", _e("a", _title(rng, 5), href="/s")) for _ in range(4))
            parts.append(_e("section", _e("h3", "Related"), _e("ul", *links), cls="related"))
        comments = self._comments(rng)
        if self.comments_inside:
            return _e("article", *parts, comments)
        return _e("article", *parts) + comments


def newsvar_eras(seed: int, eras: int = 4, articles: int = 10) -> TypedSite:
    """One news site in ``eras`` redesigns, ``articles`` varied article pages of each,
    labelled by era (``/e2/...`` is era 2)."""
    rng = random.Random(f"newsvar-{seed}")
    sections = [_title(rng, 1).lower() for _ in range(4)]
    name = _title(rng, 2) + " Herald"
    pages: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for e in range(eras):
        theme = _THEMES[(seed + e) % len(_THEMES)]
        era = _Era(random.Random(f"newsvar-{seed}-{e}"), name, sections, theme)
        for i in range(articles):
            s = sections[i % 4]
            path = f"/e{e}/{s}/{i}"
            html = era.frame.page("article", _title(rng), era.article(rng, s), ["Home", s])
            pages[path] = era.body_class(rng, s, 100 * e + i, html)
            kinds[path] = f"era{e}"
    return TypedSite(pages, kinds, start=next(iter(pages)))
