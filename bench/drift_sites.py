"""Generated sites in eras, for drift alarms (``bench/bench_drift.py``): the news-site test, made.

The test this stands in for: nine news sites, four eras each (a redesign between two eras), ten
article pages per site-era; five pages of an era as the baseline against five of the next
(an *era change*: should alarm) and against the other five of the same era (a *quiet half*:
should not). Nine sites give 27 era changes and 36 quiet halves.

A site here is one of ``bench/blogs.py``'s generated blogs (its posts, authors, comments; the
content depends on the seed only), and its eras are layouts drawn from :data:`LAYOUTS`: the two
WordPress themes of ``blogs.py`` and redesigns of them that a site's owner could make, from a
new theme (``newsroom``) to a refresh of the frame (header, sidebar, footer) to a change of the
article's own header and footer only (``twentytwentyone-article``, the subtle kind). Each era
holds its own ten posts (later posts, as on a news site the articles of a later year), each
page rendered in the era's layout. Pages are named as files the way ``visdup dups`` reads them:
``YYYY/MM/DD/slug.html`` on even seeds (one URL pattern for every article, as on most news
sites), ``YYYY/MM/DD/slug/index.html`` on odd ones (a pattern per article, as WordPress).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import timedelta

from bench import blogs as wp

__all__ = ["LAYOUTS", "Era", "EraSite", "era_pairs", "era_site"]

#: Articles per era, and how many of them one snapshot holds.
PER_ERA = 10
HALF = 5


@dataclass(frozen=True)
class Era:
    layout: str
    pages: list[tuple[str, str]]  # (file name, HTML), in the era's order


@dataclass(frozen=True)
class EraSite:
    seed: int
    eras: list[Era]

    def halves(self, k: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """Era ``k``'s pages in two halves of :data:`HALF`, split at random (seeded)."""
        pages = list(self.eras[k].pages)
        random.Random(self.seed * 1000 + k).shuffle(pages)
        return pages[:HALF], pages[HALF : 2 * HALF]


# --------------------------------------------------------------------------- redesigns

_ASIDE = re.compile(r"\t<aside class=\"widget-area\">.*?</aside><!-- \.widget-area -->", re.S)
_TT1_HEADER = re.compile(r"<header id=\"masthead\".*?</header><!-- #masthead -->", re.S)
_TT1_FOOTER = re.compile(r"<footer id=\"colophon\".*?</footer><!-- #colophon -->", re.S)
_TT17_CUSTOM = re.compile(r"<div class=\"custom-header\">.*?</div><!-- \.custom-header -->", re.S)
_TT17_ASIDE = re.compile(r"<aside id=\"secondary\".*?</aside><!-- #secondary -->", re.S)
_TT17_META = re.compile(
    r"(<div class=\"entry-meta\">.*?</div><!-- \.entry-meta -->)(<h1 class=\"entry-title\">.*?"
    r"</h1>)",
    re.S,
)


def _menu_links(theme: wp._Theme) -> str:
    return "".join(
        f'<li class="nav-item"><a class="nav-link" href="{item.href}">{wp._tx(item.label)}</a></li>'
        for item in theme.site.menu
    )


def _related(theme: wp._Theme, post: wp._Post, cls: str = "related-posts") -> str:
    """Five other posts of the site, the latest first (a "read more" box)."""
    others = [p for p in theme.posts[::-1] if p is not post][:5]
    items = "".join(
        f'<li class="related-item"><a href="{p.path}">{wp._tx(p.title)}</a> '
        f'<span class="related-date">{wp._date_text(p.when.date())}</span></li>'
        for p in others
    )
    return (
        f'<section class="{cls}" aria-label="Related"><h2 class="related-title">Read more</h2>'
        f'<ul class="related-list">{items}</ul></section>'
    )


def _share(post: wp._Post) -> str:
    links = "".join(
        f'<a class="share-{name}" href="https://{host}/share?u={post.path}" rel="nofollow">'
        f"{label}</a>"
        for name, host, label in (
            ("facebook", "facebook.com", "Share"),
            ("x", "x.com", "Post"),
            ("mail", "mail.example", "Email"),
        )
    )
    return f'<div class="share-bar">{links}</div>'


class _TT1Refresh(wp._TwentyTwentyOne):
    """Twenty Twenty-One, the frame redone: a flat header with a logo, no sidebar, a new
    footer, and a related-posts box after each article."""

    def single(self, ctx: wp._Ctx, post: wp._Post, prev: wp._Post | None, nxt: wp._Post | None):
        page = super().single(ctx, post, prev, nxt)
        page = page.replace(
            f"</article><!-- #post-{post.id} -->",
            f"</article><!-- #post-{post.id} -->\n{_related(self, post)}",
            1,
        )
        return page

    def document(self, ctx: wp._Ctx, body: str, main: str) -> str:
        page = super().document(ctx, body, main)
        name = wp._tx(self.site.name)
        header = (
            '<header class="topbar"><div class="topbar-inner"><a class="logo" href="/">'
            f'<span class="logo-mark">{name[:1]}</span><span class="logo-text">{name}</span></a>'
            f'<nav class="topnav" aria-label="Main"><ul class="nav-list">{_menu_links(self)}'
            '</ul></nav><a class="subscribe" href="/subscribe/">Subscribe</a></div></header>'
        )
        footer = (
            '<footer class="bottombar"><div class="bottombar-inner"><p class="copyright">&copy; '
            f'{name}</p><ul class="legal"><li><a href="/privacy-policy/">Privacy</a></li>'
            '<li><a href="/terms/">Terms</a></li></ul></div></footer>'
        )
        page = _TT1_HEADER.sub(lambda _m: header, page, 1)
        page = _TT1_FOOTER.sub(lambda _m: footer, page, 1)
        return _ASIDE.sub("", page, 1)


class _TT1Article(wp._TwentyTwentyOne):
    """Twenty Twenty-One with the article's own header and footer redone (the frame kept): the
    byline and date under the title with a share bar, the categories and tags as chips."""

    def single(self, ctx: wp._Ctx, post: wp._Post, prev: wp._Post | None, nxt: wp._Post | None):
        page = super().single(ctx, post, prev, nxt)
        meta = (
            f'<div class="entry-byline"><span class="author-name">{wp._tx(post.author.name)}'
            f'</span> <time datetime="{wp._iso(post.when)}">{post.when:%d.%m.%Y}</time></div>'
            f"{_share(post)}"
        )
        page = page.replace(
            "\n\t</header><!-- .entry-header -->", f"{meta}\n\t</header><!-- .entry-header -->", 1
        )
        chips = "".join(
            f'<a class="chip" href="/category/{t.slug}/">{wp._tx(t.name)}</a>'
            for t in [*post.categories, *post.tags]
        )
        return re.sub(
            r'<footer class="entry-footer default-max-width">.*?</footer><!-- \.entry-footer -->',
            lambda _m: f'<div class="entry-chips">{chips}</div>',
            page,
            count=1,
            flags=re.S,
        )


class _TT17Compact(wp._TwentySeventeen):
    """Twenty Seventeen without its big header image and its sidebar, the title above the
    date and byline, a share bar and related posts."""

    def single(self, ctx: wp._Ctx, post: wp._Post, prev: wp._Post | None, nxt: wp._Post | None):
        page = super().single(ctx, post, prev, nxt)
        page = _TT17_META.sub(lambda m: m.group(2) + m.group(1) + _share(post), page, 1)
        return page.replace(
            f"</article><!-- #post-{post.id} -->",
            f"</article><!-- #post-{post.id} -->\n{_related(self, post, 'more-stories')}",
            1,
        )

    def document(self, ctx: wp._Ctx, body: str, main: str, header: str = "", before: str = ""):
        page = super().document(ctx, body, main, header, "")
        name = wp._tx(self.site.name)
        slim = (
            f'<div class="slim-header"><p class="site-title"><a href="/" rel="home">{name}</a>'
            f'</p><p class="site-description">{wp._tx(self.site.tagline)}</p></div>'
        )
        page = _TT17_CUSTOM.sub(lambda _m: slim, page, 1)
        return _TT17_ASIDE.sub("", page, 1)


class _Newsroom(wp._Theme):
    """A news theme of its own: section navigation, headline, standfirst, byline, the story,
    topics, related stories; no comments on the page (a link to them)."""

    def single(self, ctx: wp._Ctx, post: wp._Post, prev: wp._Post | None, nxt: wp._Post | None):
        site = self.site
        name = wp._tx(site.name)
        first, *rest = post.blocks
        photo = ""
        if post.thumb is not None:
            img = post.thumb
            w, h = wp._fit(img.ratio, 1200)
            photo = (
                f'<figure class="lead-media"><img src="{img.base}-{w}x{h}.jpg" width="{w}" '
                f'height="{h}" alt="{wp._at(img.alt)}"><figcaption class="credit">'
                f"{wp._tx(img.alt)}</figcaption></figure>"
            )
        topics = "".join(
            f'<li><a href="/topic/{t.slug}/">{wp._tx(t.name)}</a></li>'
            for t in [*post.categories, *post.tags]
        )
        section = post.categories[0] if post.categories else None
        kicker = (
            f'<a class="kicker" href="/section/{section.slug}/">{wp._tx(section.name)}</a>'
            if section
            else ""
        )
        comments = ""
        if post.count:
            comments = (
                f'<a class="comments-link" href="{post.path}#comments">{post.count} comments</a>'
            )
        story = (
            f'<article class="story" data-id="{post.id}"><header class="story-header">{kicker}'
            f'<h1 class="headline">{wp._tx(post.title)}</h1><div class="standfirst">{first}'
            f'</div><div class="byline-block"><span class="byline">By <a rel="author" '
            f'href="/people/{post.author.nicename}/">{wp._tx(post.author.name)}</a></span> '
            f'<time class="published" datetime="{wp._iso(post.when)}">'
            f"{wp._date_text(post.when.date())}</time>{comments}</div></header>{photo}"
            f'<div class="story-body">{"".join(rest)}</div>'
            f'<footer class="story-footer"><ul class="topics">{topics}</ul>{_share(post)}'
            f"</footer></article>{_related(self, post, 'most-read')}"
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{wp._tx(post.title)} | {name}</title>"
            '<meta name="viewport" content="width=device-width">'
            '<link rel="stylesheet" href="/assets/newsroom.css"></head>'
            '<body class="article-page"><div class="ad-slot ad-top" data-slot="top"></div>'
            '<header class="masthead"><div class="brand"><a href="/" class="brand-name">'
            f'{name}</a><span class="edition">International edition</span></div>'
            f'<nav class="sections"><ul>{_menu_links(self)}</ul></nav>'
            '<form class="search" action="/search"><input name="q" type="search">'
            "<button>Search</button></form></header>"
            f'<main class="page-main"><div class="grid"><div class="col-main">{story}</div>'
            '<div class="col-side"><div class="ad-slot ad-side" data-slot="side"></div>'
            f"{_related(self, post, 'latest')}</div></div></main>"
            '<footer class="site-footer-news"><nav class="footer-links"><a href="/about/">'
            'About us</a><a href="/contact/">Contact</a><a href="/privacy-policy/">Privacy</a>'
            f'</nav><p class="legal">&copy; {name}</p></footer></body></html>\n'
        )


#: Layout name → renderer: the two themes of ``blogs.py`` and redesigns.
LAYOUTS: dict[str, type[wp._Theme]] = {
    "twentytwentyone": wp._TwentyTwentyOne,
    "twentyseventeen": wp._TwentySeventeen,
    "twentytwentyone-refresh": _TT1Refresh,
    "twentytwentyone-article": _TT1Article,
    "twentyseventeen-compact": _TT17Compact,
    "newsroom": _Newsroom,
}


# --------------------------------------------------------------------------- sites


def _file_name(post: wp._Post, flat: bool) -> str:
    day = post.when.date()
    stem = f"{day.year:04d}/{day.month:02d}/{day.day:02d}/{post.slug}"
    return f"{stem}.html" if flat else f"{stem}/index.html"


def era_site(
    seed: int, *, eras: int = 4, layouts: tuple[str, ...] | None = None, per_era: int = PER_ERA
) -> EraSite:
    """A site of ``eras`` eras of ``per_era`` articles each; its layouts are ``layouts`` or
    drawn (distinct, seeded) from :data:`LAYOUTS`, so that each era change is a redesign."""
    rng = random.Random(seed)
    site = wp._make_site(rng)
    writer = wp._Writer(rng, site.nouns)
    posts = eras * per_era
    times = wp._schedule(rng, posts)
    made = wp._make_posts(rng, site, writer, times, 750)
    now = made[-1].when + timedelta(days=rng.randint(0, 9), hours=rng.randint(1, 20))
    comments = wp._make_comments(rng, site, writer, made, now)
    chosen = list(layouts) if layouts else random.Random(seed + 7919).sample(sorted(LAYOUTS), eras)
    flat = seed % 2 == 0
    out: list[Era] = []
    for k, layout in enumerate(chosen[:eras]):
        theme = LAYOUTS[layout](site, made, comments, now)
        pages = []
        for i in range(k * per_era, (k + 1) * per_era):
            post = made[i]
            prev = made[i - 1] if i else None
            nxt = made[i + 1] if i + 1 < len(made) else None
            ctx = wp._Ctx("post", 1, post, (post.when.year, post.when.month))
            pages.append((_file_name(post, flat), theme.single(ctx, post, prev, nxt)))
        out.append(Era(layout, pages))
    return EraSite(seed, out)


Pages = list[tuple[str, str]]


def era_pairs(
    site: EraSite, *, by_time: bool = False
) -> tuple[list[tuple[str, Pages, Pages]], list[tuple[str, Pages, Pages]]]:
    """(era changes, quiet halves) of a site: each (label, baseline pages, current pages). An
    era change is five pages of an era against five of the next; a quiet half five against
    the other five of the same era. ``by_time``: no era changes, and the quiet halves are an
    era's first five articles against its last five (harsher: a blog's calendar widget shows
    the month of the post, so the baseline's template has known one or two months only)."""
    if by_time:
        quiet = [
            (f"site {site.seed} era {k} ({era.layout}) by time", era.pages[:HALF], era.pages[HALF:])
            for k, era in enumerate(site.eras)
        ]
        return [], quiet
    changes = []
    quiet = []
    for k, era in enumerate(site.eras):
        one, two = site.halves(k)
        quiet.append((f"site {site.seed} era {k} ({era.layout}) halves", one, two))
        if k + 1 < len(site.eras):
            nxt, _rest = site.halves(k + 1)
            label = f"site {site.seed} era {k}->{k + 1} ({era.layout} -> {site.eras[k + 1].layout})"
            changes.append((label, one, nxt))
    return changes, quiet
