"""The site spider's links: resolved once per directory, the same as resolved each time."""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path
from urllib.parse import urljoin

import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler
from scrapy.utils.url import url_has_any_extension

from visdup.spiders import links, site
from visdup.spiders.links import _IGNORED, LinkResolver, _ignored_file, resolve_link
from visdup.spiders.site import SiteSpider

REPO = Path(__file__).resolve().parents[1]

BASES = [
    "http://127.0.0.1:8000/index.html",
    "http://127.0.0.1:8000/",
    "http://127.0.0.1:8000",
    "http://127.0.0.1:8000/library/os.html",
    "http://127.0.0.1:8000/library/os.html?x=1#top",
    "http://127.0.0.1:8000/library/",
    "http://127.0.0.1:8000/a/b;p/c.html?q=2",
    "http://127.0.0.1:8000/a/b/c",
    "http://127.0.0.1:8000/%C3%A9t%C3%A9/page.html",
    "http://sub.127.0.0.1.nip.io:8000/x/y.html",
    "https://127.0.0.1/library/os.html",
]
HREFS = [
    "os.html",
    "os.html#os.path",
    "./os.html",
    "../index.html",
    "../../../../x.html",
    "/abs/path.html",
    "//127.0.0.1:8000/proto.html",
    "http://127.0.0.1:8000/library/sys.html#f",
    "http://elsewhere.example/x.html",
    "?page=2",
    "?page=2#frag",
    "#section",
    "#",
    "",
    "  spaced.html  ",
    "été.html",
    "a b.html",
    "image.JPG",
    "archive.tar.gz",
    "mailto:someone@example.com",
    "javascript:void(0)",
    "http://[::1:bad/x",
    "sub/dir/",
    "sub/dir/?b=2&a=1",
    ";params",
    ";",
    "\x01?page=2",
    "\x1b",
    "//",
    "http:",
    "http:?q",
    "ht\ttp:?q",
    "/\n/127.0.0.1:8000/x",
    "other.html #top",
    "p.html#日本",
    "\\host\\x",
    "%2e%2e/x.html",
]


def _in_scope(url: str) -> bool:
    return url.startswith("http://127.0.0.1:8000/")


def _direct(base: str, href: str, encoding: str) -> str | None:
    url = resolve_link(base, href, encoding)
    return url if url is not None and _in_scope(url) else None


def test_remembered_links_resolve_as_fresh_ones_in_any_order() -> None:
    pairs = list(itertools.product(BASES, HREFS, ("utf-8", "cp1252")))
    for seed in range(5):
        random.Random(seed).shuffle(pairs)
        resolver = LinkResolver(_in_scope)
        for base, href, encoding in pairs:
            resolve = resolver.for_page(base, encoding)
            assert resolve(href) == _direct(base, href, encoding), (base, href, encoding)
        assert resolver.memory  # the second page of a directory reads what the first resolved


def test_random_links_resolve_as_fresh_ones() -> None:
    rnd = random.Random(7)
    folders = [
        "http://127.0.0.1:8000/d/",
        "http://127.0.0.1:8000/d;x/",
        "http://127.0.0.1:8000/",
        "http://127.0.0.1:8000",
        "http://127.0.0.1:8000/%7Ed/",
        "http://127.0.0.1:8000/d/../e/",
        "http://bücher.example/d/",
    ]
    lasts = ["", "p", "p;a=b", "p?x=1", "p#f/g", ";z", "?", "#", "%2Fp", "p%3Fx"]
    pieces = [*"ab/.;?#=&%~:@ é", "..", "%2e", "//", "http:", "\\", "\x01", "\t", "\n", "\xa0"]
    checked = 0
    for _trial in range(6):
        resolver = LinkResolver(lambda _u: True)
        for _ in range(2000):
            folder = rnd.choice(folders)
            base = folder + rnd.choice(lasts) if folder.endswith("/") else folder
            href = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 6)))
            encoding = rnd.choice(["utf-8", "cp1252"])
            got = resolver.for_page(base, encoding)(href)
            assert got == resolve_link(base, href, encoding), (base, href, encoding)
            checked += 1
    assert checked == 12_000


ELSEWHERE = [
    "http://elsewhere.example/x.html",
    "HTTP://WWW.Example.COM/x",
    "http://0x7f.0.0.1:8000/x",  # an address in another spelling: for the canonical form
    "http://127.1:8000/x",
    "http://2130706433:8000/x",
    "http://127.0.0.1.:8000/x",
    "https://127.0.0.1:8000/x",
    "http://127.0.0.1:8001/x",
    "http://127.0.0.1:08000/x",
    "http://sub.127.0.0.1.nip.io:8000/y",
    "http://127.0.0.1.nip.io:8000/y",
    "ftp://127.0.0.1:8000/x",
    "http://user@127.0.0.1:8000/x",
    "http://127.0.0.1%2e:8000/x",
    "http://b\u00fccher.example/d/",
    "http://xn--bcher-kva.example:8000/",
    "http://a..b/",
    "http://example.com:99999/",
    "http://127.0.0.1:8000",
    "http://127.0.0.1:8000?q",
    "http://127.0.0.1:8000#f",
    "http://exa_mple.com/",
]


@pytest.mark.parametrize(
    "origins",
    [
        frozenset({("http", "127.0.0.1", 8000)}),
        frozenset({("http", "nip.io", 8000), ("https", "127.0.0.1", 443)}),
        frozenset({("http", "example.com", 80), ("http", "www.example.com", 80)}),
    ],
)
def test_links_elsewhere_by_their_host_resolve_as_in_canonical_form(origins) -> None:
    """A resolver that knows the crawl's origins leaves a link to another host out without
    its canonical form; every link resolves as it would in canonical form (a host it cannot
    read plainly, an address in another spelling, goes through the canonical form)."""

    def in_scope(url: str) -> bool:
        o = site.origin(url)
        return o is not None and any(
            o[0] == s and o[2] == p and (o[1] == h or o[1].endswith("." + h)) for s, h, p in origins
        )

    hrefs = [*HREFS, *ELSEWHERE]
    for base in BASES:
        plain, knowing = LinkResolver(in_scope), LinkResolver(in_scope, origins)
        for href in hrefs:
            expected = plain.for_page(base, "utf-8")(href)
            assert knowing.for_page(base, "utf-8")(href) == expected, (base, href)
    assert links._surely_elsewhere("http://elsewhere.example/x.html", origins)
    assert not links._surely_elsewhere("http://0x7f.0.0.1:8000/x", origins)


def test_plain_links_resolve_as_their_canonical_form() -> None:
    """A link of plain characters joined to its page's URL is the canonical form itself:
    the same URL as the full canonical form gives, for every href and base below and for
    random plain paths (dot segments, double slashes, ports, hosts, schemes)."""
    rnd = random.Random(11)
    bases = [
        *BASES,
        "http://example.com",
        "http://example.com:80/a/",
        "https://a.b.c:443/q",
        "http://Example.com/a/b",
        "http://example.com/a/b/../c",
        "http://example.com/a/./b/",
        "http://example.com:8080/x/y?q=1",
        "http://example.com:080/x/",
        "http://h/a//b/c",
        "http://h/a/b;p",
        "http://example.com?x",
        "http://example.com#y/z",
        "file:///x/y",
        "https://example.com/~u/p.html",
    ]
    pieces = [*"ab/._~-Z9", "..", "./", "//", "/..", "~x", "-.", "._", "%", "A:", "?", "#"]
    hrefs = [*HREFS, *(links._link_ref(h) for h in HREFS)]
    hrefs += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 7))) for _ in range(4000)]
    plain = 0
    for base in bases:
        for ref in hrefs:
            for encoding in ("utf-8", "cp1252"):
                found = links._resolve_ref(base, ref, encoding)
                assert found == links._resolve_in_full(base, ref, encoding), (base, ref)
                if links._PLAIN_REF.match(ref):
                    joined = links._plain_join(base, ref)
                    assert joined in (None, urljoin(base, ref)), (base, ref)
                    plain += joined is not None
    assert plain > 20000


def test_remembered_links_are_bounded(monkeypatch) -> None:
    monkeypatch.setattr(LinkResolver, "limit", 10)
    resolver = LinkResolver(_in_scope)
    for n in range(100):
        resolve = resolver.for_page(f"http://127.0.0.1:8000/d{n}/p.html", "utf-8")
        assert resolve(f"x{n}.html") == f"http://127.0.0.1:8000/d{n}/x{n}.html"
        assert len(resolver.memory) <= 11
        assert sum(map(len, resolver.written.values())) <= 12


def test_spider_links_of_a_page() -> None:
    spider = SiteSpider(url="http://127.0.0.1:8000/index.html")
    body = "".join(f'<a href="{h}">x</a>' for h in HREFS) + '<area href="map.html">'
    for base in ("http://127.0.0.1:8000/library/os.html", "http://127.0.0.1:8000/library/sys.html"):
        response = HtmlResponse(
            url=base,
            body=f"<html><body>{body}</body></html>".encode(),
            encoding="utf-8",
            request=Request(base),
        )
        got = spider._links(response)
        want: list[str] = []
        for href in [*HREFS, "map.html"]:
            url = _direct(base, href, "utf-8")
            if url is not None and url not in want:
                want.append(url)
        assert got == want
    assert "http://127.0.0.1:8000/library/sys.html" in got  # its own "#section" and ""
    assert not any(u.endswith((".JPG", ".gz")) for u in got)


def _response(base: str, body: str) -> HtmlResponse:
    return HtmlResponse(
        url=base, body=f"<html><body>{body}</body></html>".encode(), request=Request(base)
    )


_ANCHORS = "".join(f'<a href="{h}">x</a>' for h in HREFS)
#: Pages whose links try the per-page cap, a ``<base>``, image maps, blank and missing hrefs.
LINK_BODIES = [
    _ANCHORS + '<area href="map.html"><a>no href</a><a href="">blank</a>',
    '<base href="/other/dir/">' + _ANCHORS,
    _ANCHORS * 3 + '<a href="  ">blank</a>' * 4,
    '<div style="display:none">' + _ANCHORS + "</div>",  # hidden links are links
    # one link under many fragments, and hrefs whose ``#`` follows a blank or a control
    "".join(
        f'<a href="{h}">x</a>'
        for h in [
            *("p.html#a", "p.html", "p.html#b", "#a", "#b", "p.html\xa0#a", "p.html&#9;#a"),
            *("p.html\xa0#b", "q.html#", "q.html", "?x#a", "?x#b", "p.html#a"),
        ]
    ),
]
LINK_CAPS = (0, 5, len(HREFS), 40)


def _fragment_at(href: str) -> int:
    """Where a fragment the spider's resolver drops begins (-1: none it drops)."""
    cut = href.find("#")
    return cut if cut > 0 and href[cut - 1] > " " and not href[cut - 1].isspace() else -1


def _two_spiders(cap: int) -> list[SiteSpider]:
    spiders = []
    for _ in range(2):
        spider = SiteSpider(url="http://127.0.0.1:8000/index.html")
        spider.max_links = cap
        spider.crawler = get_crawler(SiteSpider)
        spiders.append(spider)
    return spiders


def test_links_parsed_apart_are_the_responses_links_and_leave_no_tree() -> None:
    """Where the analysis runs in worker processes the spider parses a page for its links
    without keeping the tree on the response: the same links, cap included, and no tree."""
    base = "http://127.0.0.1:8000/library/os.html"
    capped = 0
    for cap in LINK_CAPS:
        for body in LINK_BODIES:
            kept, apart = _two_spiders(cap)
            apart._parse_apart = True
            response = _response(base, body)
            want = kept._links(response)
            assert response._cached_selector is not None
            alone = _response(base, body)
            assert apart._links(alone) == want
            assert alone._cached_selector is None, "no tree stays with the response"
            assert apart.crawler.stats.get_stats() == kept.crawler.stats.get_stats()
            capped += "visdup/pages_over_link_cap" in kept.crawler.stats.get_stats()
    assert capped >= 4  # the cap was reached, and counted the same, on several pages


def test_a_page_keeps_its_links_to_stored_pages_and_fetches_only_the_others() -> None:
    """Pages stored by earlier runs are not fetched again, but a page still lists its links to
    them: it is stored with every link (a crawl killed after the target and before the page
    fetches the page again, and the stored links are the frontier)."""
    from visdup.items import Page

    spider = SiteSpider(url="http://127.0.0.1:8000/index.html")
    spider.stored = {"http://127.0.0.1:8000/stored.html"}
    base = "http://127.0.0.1:8000/page.html"
    body = b'<html><body><a href="stored.html">s</a><a href="new.html">n</a></body></html>'
    response = HtmlResponse(url=base, body=body, encoding="utf-8", request=Request(base))
    out = list(spider.parse(response))
    [page] = [o for o in out if isinstance(o, Page)]
    assert page.links == ["http://127.0.0.1:8000/stored.html", "http://127.0.0.1:8000/new.html"]
    assert [r.url for r in out if isinstance(r, Request)] == ["http://127.0.0.1:8000/new.html"]


def test_a_url_is_asked_for_once_however_many_pages_link_to_it() -> None:
    """Pages share their menus: each page is stored with all its links, but a URL an earlier
    page (or the start) already asked for is not asked for again."""
    from visdup.items import Page

    spider = SiteSpider(url="http://127.0.0.1:8000/index.html")
    spider.crawler = get_crawler(SiteSpider)
    pages = {
        "http://127.0.0.1:8000/one.html": ["index.html", "menu.html", "one.html", "two.html"],
        "http://127.0.0.1:8000/two.html": ["menu.html", "one.html", "two.html", "three.html"],
        "http://127.0.0.1:8000/three.html": ["menu.html", "two.html", "three.html"],
    }
    spider._requested.add("http://127.0.0.1:8000/index.html")  # as start() does
    asked: list[str] = []
    for base, hrefs in pages.items():
        body = "".join(f'<a href="{h}">x</a>' for h in hrefs).encode()
        response = HtmlResponse(url=base, body=body, encoding="utf-8", request=Request(base))
        out = list(spider.parse(response))
        [page] = [o for o in out if isinstance(o, Page)]
        assert page.links == [f"http://127.0.0.1:8000/{h}" for h in hrefs]
        asked += [r.url for r in out if isinstance(r, Request)]
    assert asked == [
        "http://127.0.0.1:8000/menu.html",
        "http://127.0.0.1:8000/one.html",
        "http://127.0.0.1:8000/two.html",
        "http://127.0.0.1:8000/three.html",
    ]


def test_links_the_analysis_reads_are_the_spiders_own() -> None:
    """A worker process reads a page's hrefs from the tree it parses for the analysis; the
    spider resolves them into the links, cap and stats included, it would find itself. They
    cross to the crawl's process with the analysis, and leave it before the labelling."""
    import pickle

    from visdup.dedup.analysis import AnalysisOptions, analyse_bytes

    base = "http://127.0.0.1:8000/library/os.html"
    capped = 0
    for cap in LINK_CAPS:
        options = AnalysisOptions(template=True, links=cap)
        for body in LINK_BODIES:
            kept, read = _two_spiders(cap)
            response = _response(base, body)
            analysis = analyse_bytes(response.body, base, None, "text/html", "utf-8", options)
            crossed = pickle.loads(pickle.dumps(analysis))  # a worker's answer
            assert crossed.links == analysis.links is not None
            if crossed.links.total is None:  # each link crosses once, without a fragment
                hrefs = crossed.links.hrefs
                assert len(hrefs) == len(set(hrefs))
                assert all(_fragment_at(h) <= 0 for h in hrefs)
            assert read._links(response, crossed.links) == kept._links(response)
            assert read.crawler.stats.get_stats() == kept.crawler.stats.get_stats()
            capped += "visdup/pages_over_link_cap" in kept.crawler.stats.get_stats()
            labelled = crossed.without_links()
            assert labelled.links is None and getattr(labelled, "_parts", None) is None  # unopened
            onward = pickle.loads(pickle.dumps(labelled))  # on to the label process
            assert onward.links is None and onward.url == analysis.url
            assert onward.term == analysis.term and onward.content == analysis.content
            assert onward.template_input.layout.key == analysis.template_input.layout.key
    assert capped >= 4


def test_a_real_pages_links_crossed_once_each_are_its_links() -> None:
    """The Python manual's pages (hundreds of hrefs each, mostly anchors into a few pages):
    the links a worker sends, each once, resolve into the spider's own links, in its order."""
    from pathlib import Path

    from visdup.dedup.analysis import AnalysisOptions, analyse_bytes

    base_dir = Path(os.environ.get("VISDUP_DEBIAN_DOCS", REPO / "debian-docs"))
    manual = base_dir / "usr/share/doc/python3.11/html"
    files = sorted(manual.glob("library/*.html"))[:40] + sorted(manual.glob("genindex-*.html"))[:3]
    if not files:
        pytest.skip(f"{manual} is absent (bash ../shared/data/get-debian-docs.sh)")
    options = AnalysisOptions(template=False, content=False, links=0)
    sent = read = 0
    for path in files:
        url = "http://127.0.0.1:8000/" + path.relative_to(manual).as_posix()
        response = HtmlResponse(url=url, body=path.read_bytes(), request=Request(url))
        kept, spider = _two_spiders(0)
        analysis = analyse_bytes(response.body, url, None, "text/html", None, options)
        assert analysis.links is not None
        assert spider._links(response, analysis.links) == kept._links(response)
        sent += len(analysis.links.hrefs)
        read += len(response.xpath("//a[@href]|//area[@href]"))
    assert sent < read / 4  # most hrefs repeat a link


def test_ignored_files_as_scrapy_tells_them() -> None:
    """A link to a file by its extension is dropped exactly where Scrapy's
    ``url_has_any_extension`` says so (the same parse; a lookup per dot from the right)."""
    rnd = random.Random(11)
    pieces = ["a", "/", ".", "tar", "gz", "TAR", "Gz", "pdf", "PNG", "html", "x", ";p", "?q", "#f"]
    pieces += [".tar.gz", ".gz", ".tar", ".JPG", "..", "%2e", "ü", " "]
    urls = [
        "http://h/a.pdf",
        "http://h/a.PDF",
        "http://h/a.tar.gz",
        "http://h/a.tgz.html",
        "http://h/a.pdf;x",
        "http://h/a;x.pdf",
        "http://h/a?x.pdf",
        "http://h/a#x.pdf",
        "http://h/.pdf",
        "http://h/",
        "http://h",
    ]
    urls += [
        "http://h/" + "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 7)))
        for _ in range(5000)
    ]
    dropped = 0
    for url in urls:
        expected = url_has_any_extension(url, _IGNORED)
        assert _ignored_file(url) is expected, url
        dropped += expected
    assert 500 < dropped < 4500  # both answers are well represented
