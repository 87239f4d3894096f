from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import time
from collections import Counter
from pathlib import Path

import lxml.etree
import lxml.html
import pytest

from visdup.cli import content as content_command
from visdup.content import css as css_module
from visdup.content import extract, main_content, remove_invisible

FIXTURES = Path(__file__).parent / "fixtures" / "content"
AEB = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "aeb"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def doc(html: str) -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(html)


def visible_text(root: lxml.html.HtmlElement) -> str:
    return " ".join(root.text_content().split())


# ----------------------------------------------------------------- remove_invisible


def test_overlays_and_hidden_menus_are_removed() -> None:
    root = doc(fixture("overlays_hidden.html").decode())
    removed = remove_invisible(root)
    text = visible_text(root)
    # position:fixed inline (cookie bar) and from a <style> rule (toast)
    assert "We use cookies" not in text
    assert "new version of this page" not in text
    # display:none from a <style> rule and inline; visibility:hidden by id; hidden attribute
    assert "Timetables and fares" not in text
    assert "Drawer link" not in text
    assert "Subscribe today" not in text
    assert "Hidden by attribute" not in text
    assert "Template content" not in text
    # @media print and :hover rules do not apply on screen at load
    assert "After a pause of eleven years" in text
    # the menu button went (a widget), the article stayed
    assert "Menu" not in text
    assert removed >= 8


def test_aria_hidden_alone_keeps_content_but_not_when_also_visually_hidden() -> None:
    root = doc(fixture("overlays_hidden.html").decode())
    remove_invisible(root)
    text = visible_text(root)
    assert "Decorative duplicate" not in text  # aria-hidden and clipped: seen by nobody
    assert "★ Passengers rated" in text  # aria-hidden alone: still on screen
    assert "Screen reader note" in text  # clipped for eyes, but read aloud


def test_removal_keeps_tail_text() -> None:
    root = doc('<div><p>one <span style="display:none">secret</span> two</p></div>')
    assert remove_invisible(root) == 1
    assert visible_text(root) == "one two"


def test_more_specific_rule_shows_element_again() -> None:
    html = """<html><head><style>.menu { display: none } .menu.open { display: block }
    #x.menu { display: none !important } </style></head><body>
    <ul class="menu"><li>closed</li></ul><ul class="menu open"><li>opened</li></ul>
    <ul class="menu open" id="x"><li>forced</li></ul></body></html>"""
    root = doc(html)
    remove_invisible(root)
    text = visible_text(root)
    assert "closed" not in text
    assert "opened" in text
    assert "forced" not in text


def test_a_rule_with_spaces_inside_not_hides_as_a_browser_does() -> None:
    # WordPress's Jetpack writes ``html:not( .js ) .lazy``: valid CSS, which cssselect before
    # 1.5 refused to parse, so the same page was read otherwise by install
    html = """<html class="no-js"><head><style>
    html:not( .jetpack-lazy-images-js-enabled ):not( .js ) .jetpack-lazy-image { display: none }
    </style></head><body><p>kept</p><p class="jetpack-lazy-image">lazy placeholder</p>
    </body></html>"""
    root = doc(html)
    remove_invisible(root)
    text = visible_text(root)
    assert "kept" in text
    assert "lazy placeholder" not in text


def test_broken_css_does_not_raise() -> None:
    html = """<html><head><style>}}} .a { display: none; @media screen { .b { display:none }
    .c:nth-child(2n+ { display: none } [[[ { position: fixed }</style></head>
    <body><p class="b">kept or not, no exception</p><p>plain</p></body></html>"""
    root = doc(html)
    remove_invisible(root)
    assert "plain" in visible_text(root)


def test_hostile_stylesheet_stays_cheap() -> None:
    rules = "".join(f".a .b:nth-child({i}) {{ display: none }}\n" for i in range(20000))
    nested = "@media screen {" * 20000 + ".b { display: none }" + "}" * 20000
    html = f"""<html><head><style>{rules}</style><style>{nested}</style></head><body>
    <div class="a">{'<p class="b">x</p>' * 300}</div><p>kept</p></body></html>"""
    root = doc(html)
    evaluated = []
    real = css_module._select
    css_module._select = lambda r, selector: evaluated.append(selector) or real(r, selector)
    try:
        remove_invisible(root)
    finally:
        css_module._select = real
    # 20,000 complex selectors, each a scan of the tree: only the budget's worth are run
    assert len(evaluated) <= css_module.MAX_SELECTOR_EVALUATIONS
    assert "kept" in visible_text(root)


def test_scripted_reveal_keeps_most_of_the_page() -> None:
    paragraph = "This is the article text that a script reveals after loading the page. " * 10
    html = f"""<html><head><style>.js-reveal {{ display: none }}</style></head><body>
    <nav><a href="/">Home</a></nav><div class="js-reveal"><p>{paragraph}</p></div></body></html>"""
    root = doc(html)
    remove_invisible(root)
    assert "article text" in visible_text(root)


def test_remove_invisible_on_nothing() -> None:
    assert remove_invisible(None) == 0


# ----------------------------------------------------------------- main content


def test_same_article_in_two_templates_gives_the_same_text() -> None:
    one = extract(fixture("article_x_site1.html"))
    two = extract(fixture("article_x_site2.html"))
    assert one.text == two.text
    assert one.title == two.title == "River towns rebuild their levees before the spring floods"
    for noise in ("Most read", "Politics", "All rights reserved", "Share on", "riverfan",
                  "Related report", "Front page", "Jo Marsh", "Sign up"):  # fmt: skip
        assert noise not in one.text + two.text, noise
    assert one.text.startswith("A season of sandbags\n\nAlong the lower river")
    assert one.text.endswith("no formula for the payments has been published yet.")


def test_blocks_keep_headings_apart_with_their_levels() -> None:
    content = extract(fixture("article_x_site1.html"))
    kinds = [(kind, level) for kind, level, _ in content.blocks]
    assert kinds == [
        ("heading", 2),
        ("paragraph", 0),
        ("paragraph", 0),
        ("heading", 2),
        ("paragraph", 0),
        ("paragraph", 0),
        ("heading", 3),
        ("paragraph", 0),
        ("paragraph", 0),
    ]
    assert content.text == "\n\n".join(text for _, _, text in content.blocks)
    assert content.node is not None and content.node.get("class") == "entry-content"


def test_other_article_same_template() -> None:
    content = extract(fixture("article_y_site1.html"))
    assert content.title == "A small bakery wins the national bread prize"
    assert "sourdough rye" in content.text
    assert "levees" not in content.text
    assert "Most read" not in content.text


def test_boilerplate_only_page_has_no_content() -> None:
    content = extract(fixture("boilerplate_only.html"))
    assert content.text == ""
    assert content.title == "Page not found | The Valley Courier"


def test_cjk_article() -> None:
    content = extract(fixture("cjk_article.html"))
    assert content.title == "山区小学开通远程课堂"
    assert "远程课堂每周安排十二节课" in content.text
    assert "面对面的交流" in content.text
    assert ("heading", 2, "家长的期待") in content.blocks
    assert "首页" not in content.text and "版权所有" not in content.text
    assert "县城新建图书馆" not in content.text


def test_overlay_fixture_content() -> None:
    content = extract(fixture("overlays_hidden.html"))
    assert content.text.startswith("After a pause of eleven years")
    assert "cookies" not in content.text
    assert "Subscribe" not in content.text


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"   ",
        b"<html>",
        b"<html><body></body></html>",
        b"\x00\x01\x02binary\xff\xfe",
        b"<p>unclosed <div><b>bold <i>text</p></b> trailing",
        b"<html><body><table><tr><td>cell</table></body>",
        "<html><body><p>caf\xe9 ok</p></body></html>".encode("latin-1"),
    ],
)
def test_bad_input_never_raises(data: bytes) -> None:
    content = extract(data)
    assert isinstance(content.text, str)
    assert isinstance(content.blocks, list)


def test_title_sources() -> None:
    og = doc('<html><head><meta property="og:title" content="From OG"><title>T</title></head>'
             "<body><p>x</p></body></html>")  # fmt: skip
    assert main_content(og).title == "From OG"
    h1 = doc("<html><head><title>Story - Site</title></head><body><h1>Story</h1></body></html>")
    assert main_content(h1).title == "Story"
    bare = doc("<html><body><h1>Only heading</h1><p>text</p></body></html>")
    assert main_content(bare).title == "Only heading"


def test_title_sources_read_in_one_walk_as_by_xpath() -> None:
    """The first og:title with content (by property or name), the first <title>, every <h1>:
    wherever they stand, in document order."""
    page = doc(
        '<html><head><meta name="og:title"><meta name="og:title" content=" Named  OG ">'
        '<meta property="og:title" content="Second"></head><body><title>Late</title>'
        "<h1><a href='/'>Site</a></h1><p>x</p><h1>Other</h1></body></html>"
    )
    assert main_content(page).title == "Named OG"
    titled = doc("<html><head><title>A | Other</title><title>B</title></head><body>"
                 "<h1>Other</h1></body></html>")  # fmt: skip
    assert main_content(titled).title == "Other"


def test_the_content_is_read_from_the_first_body() -> None:
    from visdup.content.main import first_body

    page = doc("<html><head><title>t</title></head><body><p>Body text here.</p></body></html>")
    assert first_body(page).tag == "body" and first_body(page).getparent() is page
    # a <body> nested before the page's own (built: no parser makes one) comes first, as
    # in document order; no <body> at all: the root; a root that is a <body>: itself
    built = lxml.html.Element("html")
    head = lxml.etree.SubElement(built, "head")
    inner = lxml.etree.SubElement(lxml.etree.SubElement(head, "div"), "body")
    lxml.etree.SubElement(built, "body")
    assert first_body(built) is inner
    bare = lxml.html.Element("div")
    lxml.etree.SubElement(bare, "p").text = "text"
    assert first_body(bare) is bare
    alone = lxml.html.Element("body")
    assert first_body(alone) is alone


def test_deep_tree_does_not_recurse() -> None:
    root = lxml.html.Element("html")
    body = lxml.etree.SubElement(root, "body")
    node = body
    for _ in range(20000):
        node = lxml.etree.SubElement(node, "div")
    for i in range(3):
        p = lxml.etree.SubElement(node, "p")
        p.text = f"Paragraph {i} sits twenty thousand levels down, and it is still read whole."
    content = main_content(root)
    assert content.text.count("twenty thousand levels down") == 3


def test_deep_markup_through_the_parser() -> None:
    html = "<html><body>" + "<div>" * 5000 + "<p>Deep text survives parsing, in part.</p>"
    content = extract(html.encode())
    assert isinstance(content.text, str)


def test_main_content_of_nothing() -> None:
    content = main_content(None)
    assert content.node is None and content.text == "" and content.blocks == []


# ----------------------------------------------------------------- command line


def _run(paths: list[str], *flags: str) -> None:
    parser = argparse.ArgumentParser()
    content_command.add_arguments(parser)
    args = parser.parse_args([*flags, *paths])
    assert content_command.run(args) == 0


def test_command_json_walks_directories_and_gzip(tmp_path: Path, capsys) -> None:
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    (sub / "one.html").write_bytes(fixture("article_y_site1.html"))
    (tmp_path / "two.htm.gz").write_bytes(gzip.compress(fixture("cjk_article.html")))
    (tmp_path / "notes.txt").write_text("not a page")
    _run([str(tmp_path)], "--json")
    lines = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines]
    assert [Path(r["path"]).name for r in records] == ["one.html", "two.htm.gz"]
    assert records[0]["title"] == "A small bakery wins the national bread prize"
    assert "sourdough rye" in records[0]["text"]
    assert "远程课堂" in records[1]["text"]


def test_command_text_output(capsys) -> None:
    _run([str(FIXTURES / "article_x_site2.html")])
    out = capsys.readouterr().out
    assert "# River towns rebuild their levees before the spring floods" in out
    assert "Along the lower river" in out and "Related report" not in out


def test_command_bad_input(tmp_path: Path, capsys) -> None:
    """Unreadable files: one error line each, exit status 2 (the other files still print)."""
    parser = argparse.ArgumentParser()
    content_command.add_arguments(parser)
    bad = tmp_path / "bad.html.gz"
    bad.write_bytes(b"this is not gzip")
    args = parser.parse_args([str(tmp_path / "missing.html"), str(bad)])
    assert content_command.run(args) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "bad.html.gz" in err


# ----------------------------------------------------------------- AEB quality

_TOKEN = re.compile(r"\w+")


def _shingles(text: str) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text)
    n = min(4, len(tokens))
    if not n:
        return Counter()
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


@pytest.mark.slow
@pytest.mark.skipif(not (AEB / "ground-truth.json").exists(), reason="AEB data not present")
def test_aeb_f1() -> None:
    """AEB's own measure: 4-token shingles, multiset overlap, P and R averaged over pages."""
    truth = json.loads((AEB / "ground-truth.json").read_text(encoding="utf-8"))
    precisions, recalls = [], []
    start = time.perf_counter()
    for key, item in truth.items():
        path = AEB / "html" / f"{key}.html.gz"
        if not path.exists():
            continue
        expected = _shingles(item["articleBody"])
        predicted = _shingles(extract(gzip.decompress(path.read_bytes())).text)
        if not expected and not predicted:
            precisions.append(1.0)
            recalls.append(1.0)
            continue
        tp = sum((expected & predicted).values())
        precisions.append(tp / sum(predicted.values()) if predicted else 0.0)
        recalls.append(tp / sum(expected.values()) if expected else 1.0)
    assert len(precisions) > 150
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    f1 = 2 * p * r / (p + r)
    assert f1 >= 0.93, f"F1 {f1:.3f} (P {p:.3f}, R {r:.3f})"
    assert time.perf_counter() - start < 60


def _api_chain(levels: int) -> lxml.html.HtmlElement:
    """A tree built through lxml's API, one styled <div> inside the other (the parser would
    cut it at 256 levels). Every proxy is kept while building, then freed deepest first."""
    root = lxml.html.fromstring("<html><body><p>top</p></body></html>")
    chain = [root.find("body")]
    for i in range(levels):
        el = lxml.etree.SubElement(chain[-1], "div", {"style": "color:red"} if i % 7 else {})
        el.text = f"level {i} of a very deep page."
        el.tail = "x"
        if i == levels // 2:
            lxml.etree.SubElement(el, "span", {"style": "display:none"}).text = "gone"
        chain.append(el)
    chain.clear()
    return root


def test_trees_built_through_the_api_30000_deep() -> None:
    """D15: every walk is iterative and linear; the compiled scan hands such trees to Python.

    (Their speed is a benchmark's: `bench/bench_content.py --deep 100000`.)
    """
    from visdup.content.blocks import python_walk, walk

    root = _api_chain(30_000)
    assert remove_invisible(root) == 1
    body = root.find("body")
    fast, slow = walk(body), python_walk(body)
    assert [(b.owner, b.text) for b in fast.blocks] == [(b.owner, b.text) for b in slow.blocks]
    assert len(fast.blocks) > 30_000
    content = main_content(root, cleaned=True)
    assert "level 29999 of a very deep page." in content.text and "gone" not in content.text


# ----------------------------------------------------------------- listings and titles


def _archive(days: int = 8) -> str:
    teasers = "".join(
        f"<article class='post'><h2 class='entry-title'><a href='/2025/03/{d}/ride-{d}/'>"
        f"Morning ride number {d} along the canal</a></h2>"
        f"<div class='entry-summary'><p>We set off before sunrise on day {d} and followed the "
        f"towpath east, past the locks and the old mill, until the fog lifted over the "
        f"fields and the first walkers appeared […]</p></div>"
        f"<a class='more-link' href='/2025/03/{d}/ride-{d}/'>Read more</a></article>"
        for d in range(1, days + 1)
    )
    return (
        "<html><head><title>March 2025 – Canal Diaries</title></head><body>"
        "<header class='site-header'><a href='/'>Canal Diaries</a><nav><ul>"
        "<li><a href='/'>Home</a></li><li><a href='/about/'>About</a></li></ul></nav></header>"
        f"<div id='primary' class='content-area'><h1 class='page-title'>Month: March 2025</h1>"
        f"{teasers}</div>"
        "<aside class='widget-area'><h2>Archives</h2><ul><li><a href='/2025/02/'>February</a>"
        "</li></ul></aside>"
        "<footer class='site-footer'><p>© 2025 Canal Diaries. Proudly built with WordPress and "
        "a theme of our own making.</p></footer></body></html>"
    )


def test_archive_page_content_is_its_teasers_never_the_footer() -> None:
    content = extract(_archive())
    assert content.listing
    assert "Proudly built with WordPress" not in content.text
    for d in (1, 4, 8):
        assert f"Morning ride number {d} along the canal" in content.text
        assert f"before sunrise on day {d}" in content.text
    assert "February" not in content.text  # the archive widget stays out


def test_article_with_a_related_list_stays_an_article() -> None:
    related = "".join(
        f"<li><h3><a href='/r{i}'>Another story about cycling number {i}</a></h3></li>"
        for i in range(6)
    )
    html = (
        "<html><head><title>Long read</title></head><body><article><h1>Long read</h1>"
        + "".join(f"<p>{' '.join(['This sentence carries the article forward.'] * 6)}</p>"
                  for _ in range(5))
        + f"</article><aside class='related'><ul>{related}</ul></aside></body></html>"
    )  # fmt: skip
    content = extract(html)
    assert not content.listing
    assert "Another story" not in content.text and "carries the article" in content.text


def test_title_without_a_banner_h1() -> None:
    """A Sphinx page: the site banner in an <h1>, the page's own <h1> with a pilcrow."""
    html = (
        "<html><head><title>Models — Django 3.2.25 documentation</title></head><body>"
        "<div id='header'><h1><a href='index.html'>Django 3.2.25 documentation</a></h1></div>"
        "<div class='body' role='main'><h1>Models<a class='headerlink' href='#m'>¶</a></h1>"
        "<p>A model is the single, definitive source of information about your data.</p>"
        "</div></body></html>"
    )
    assert extract(html).title == "Models"


def test_site_titles_learn_the_affix_every_page_shares() -> None:
    from visdup.content.titles import SiteTitles

    titles = SiteTitles()
    names = [f"Chapter {i}" for i in range(10)]
    got = [
        titles.own(f"http://docs.example/{n}", f"{n} — Example 1.0 documentation") for n in names
    ]
    assert got[:4] == [f"{n} — Example 1.0 documentation" for n in names[:4]]  # not learnt yet
    assert got[5:] == names[5:]
    assert titles.own("http://other.example/x", "X — Example 1.0 documentation") == (
        "X — Example 1.0 documentation"
    ), "one site's affixes are not another's"
    banner = SiteTitles()
    for i in range(6):
        last = banner.own(f"http://b.example/{i}", "Example documentation", f"Page {i}")
    assert last == "Page 5"


def test_site_titles_stored_before_the_affix_was_learnt_get_their_own_at_the_end() -> None:
    from visdup.content.titles import SiteTitles

    titles = SiteTitles()
    names = [f"Chapter {i}" for i in range(10)]
    for i, n in enumerate(names):
        url = f"http://docs.example/{i}"
        raw = f"{n} — Example 1.0 documentation"
        titles.remember(i, url, raw, titles.own(url, raw))
    os_title = "os — Interfaces"  # a page's own parts
    titles.remember(20, "http://docs.example/os", os_title, titles.own("http://x/", os_title))
    titles.remember(22, "http://docs.example/one", "One part", "One part")
    assert titles.stale() == {i: names[i] for i in range(4)}
    assert titles.stale() == {}, "each page once"


def test_site_titles_trusted_early_by_a_share_the_site_does_not_keep() -> None:
    """An affix on the first pages' titles, trusted while the site had few pages, falls
    below its share as others come: every page keeps it, whichever came first."""
    from visdup.content.titles import SiteTitles

    pages = [(f"http://one.example/{i}", f"Part {i} — The Guide") for i in range(8)]
    pages += [(f"http://one.example/x{i}", f"Other {i}") for i in range(400)]
    finals = []
    for order in (pages, pages[::-1]):
        titles = SiteTitles()
        got = {}
        for i, (url, raw) in enumerate(order):
            got[url] = titles.own(url, raw)
            titles.remember(i, url, raw, got[url])
        ids = {i: url for i, (url, _raw) in enumerate(order)}
        for i, title in titles.stale().items():
            got[ids[i]] = title
        finals.append(got)
    assert finals[0] == finals[1]
    assert finals[0]["http://one.example/3"] == "Part 3 — The Guide"


def test_titles_of_the_python_manual() -> None:
    """No page of the manual is called by the site's banner or suffix."""
    from collections import Counter

    from tests.conftest import REPO
    from visdup.content import page_title
    from visdup.content.titles import SiteTitles
    from visdup.page.parse import parse_html

    base = REPO / "debian-docs" / "usr" / "share" / "doc" / "python3.11" / "html"
    if not base.is_dir():
        pytest.skip(f"{base} is absent (bash ../shared/data/get-debian-docs.sh debian-docs)")
    paths = sorted(base.rglob("*.html"))
    read = {
        p.relative_to(base).as_posix(): page_title(parse_html(p.read_bytes()).root) for p in paths
    }
    finals = []
    for order in (
        sorted(read),
        sorted(read, reverse=True),
        random.Random(3).sample(sorted(read), len(read)),
    ):
        site = SiteTitles()
        got = {}
        for i, key in enumerate(order):
            got[key] = site.own(f"http://docs/{key}", read[key])
            site.remember(i, f"http://docs/{key}", read[key], got[key])
        suffixed = [t for t in got.values() if t and "Python 3.11" in t and "documentation" in t]
        learning = max(SiteTitles.MIN_PAGES, SiteTitles.AFFIX_SHARE * len(got))
        assert len(suffixed) <= learning, "only pages seen before the affix was learnt"
        retitled = site.stale()
        for i, key in enumerate(order):
            got[key] = retitled.get(i, got[key])
        finals.append(got)
    got = finals[0]
    assert got["library/os.html"] == "os — Miscellaneous operating system interfaces"
    assert got["genindex-Z.html"] == "Index"
    assert not [t for t in got.values() if t and "Python 3.11" in t and "documentation" in t]
    assert finals[1] == got and finals[2] == got, "the same titles in any order"
    assert Counter(got.values()).most_common(1)[0][1] < 0.1 * len(got)


def _footer_page(heading: str, links: list[str], footer_class: str = "footer") -> str:
    items = "".join(f"<li><a href='/{i}.html'>{t}</a></li>" for i, t in enumerate(links))
    return (
        f"<html><head><title>{heading}</title></head><body><div class='document'>"
        f"<div role='main'><h1>{heading}</h1><ul>{items}</ul></div></div>"
        f"<div class='{footer_class}'><p>Copyright 2001-2026, the Foundation. This page is "
        "licensed under the Foundation's license, version two.</p><p>The Foundation is a "
        "non-profit corporation and welcomes donations from every reader.</p><p>Last updated "
        "on October 7, 2026; found a bug in this page? Tell us about it.</p></div></body></html>"
    )


def test_a_page_whose_prose_is_its_footer_has_no_article() -> None:
    faq = extract(_footer_page("FAQ", ["General questions", "Programming questions"]))
    index = extract(_footer_page("Index", ["Symbols", "A", "B", "C"]))
    for found in (faq, index):
        # the footer is the same on every page of the site: no article, not a copy of another
        assert found.text == "" and found.blocks == []
        assert "Copyright" in found.page_text  # compared as a thin page, by all its text
    # inside the footer, however deep the prose sits, and whatever the inner element is named
    copyright = " ".join(f"Copyright notice sentence number {i} of the site." for i in range(9))
    for footer in (
        f"<div class='footer'><div class='inner'><p>{copyright}</p><p>{copyright}</p></div></div>",
        f"<footer><p>{copyright}</p></footer>",
        f"<div role='contentinfo'><section><p>{copyright}</p></section></div>",
    ):
        found = extract(f"<html><body><ul><li><a href='/a'>A</a></li></ul>{footer}</body></html>")
        assert found.text == "", footer
    # widgets, menus, cookies and <nav> wrappers are no footer: page builders wrap whole
    # articles in a widget container, restaurants publish menus, blogs cookie recipes
    article = " ".join(f"This is sentence number {i} of a real article." for i in range(30))
    for wrapper in (
        "<div class='elementor-widget-container'>",
        "<div class='cookie-recipe'>",
        "<div class='menu'>",
        "<nav>",
    ):
        closing = "</nav>" if wrapper == "<nav>" else "</div>"
        built = extract(
            f"<html><body>{wrapper}<h1>A post</h1><p>{article}</p>{closing}"
            "<div class='footer'><p>Copyright 2026, the Foundation.</p></div></body></html>"
        )
        assert "sentence number 29" in built.text, wrapper
    # an article's own footer is part of the article
    entry = extract(f"<html><body><div class='entry-footer'><p>{article}</p></div></body></html>")
    assert "sentence number 29" in entry.text
