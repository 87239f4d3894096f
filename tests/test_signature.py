"""The content region a layout signature stubs (``layout_main``): where it lands, and that its
shortcuts land where the rule, applied one step at a time, does; the text spine
(``spine_depth``, ``spine_path``) and what of the region the signature keeps around it, and what
a page's signature then tells apart."""

from __future__ import annotations

import random
from collections.abc import Iterator

import lxml.html
import pytest

from tests.partition import adjusted_rand_index, purity
from visdup.templates.layouts import LayoutClusterer
from visdup.templates.signature import (
    DEFAULT_STUB_DEPTH,
    GROW_SHARE,
    LIST_ITEMS,
    MAIN,
    SPINE_SHARE,
    STRAY_SHARE,
    TEXT_SHARE,
    Layout,
    layout_main,
    layout_signature,
    make_layout,
    page_layout,
    page_layout_of,
    spine_depth,
    spine_path,
)

WORDS = "layout region content sidebar header footer entry member list prose".split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _page(body: str) -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(
        f"<html><head><title>t</title></head><body>{body}</body></html>"
    )


def _by_id(root: lxml.html.HtmlElement, ident: str) -> lxml.html.HtmlElement:
    return root.get_element_by_id(ident)


def test_the_region_grows_to_the_column_that_holds_the_content():
    prose = "<p>" + "words of the article " * 40 + "</p>"
    root = _page(
        "<div id='nav'><a href='/'>home</a> <a href='/a'>about</a></div>"
        f"<div id='column'><div id='article'><h1>Title</h1>{prose}</div>"
        "<div id='related'>see also</div></div>"
        "<div id='foot'>footer text</div>"
    )
    picked = root.xpath("//p")[0]
    assert layout_main(root, picked) is _by_id(root, "column")


def test_the_region_stops_below_a_parent_whose_text_is_mostly_elsewhere():
    article = "<p>" + "short article " * 10 + "</p>"
    sidebar = "<p>" + "a much longer sidebar of links and blurbs " * 30 + "</p>"
    root = _page(
        f"<div id='wrap'><div id='main'><div id='article'>{article}</div></div>"
        f"<div id='side'>{sidebar}</div></div>"
    )
    article_el = _by_id(root, "article")
    # the article holds too little of the page to count: the sidebar's paragraph, which holds
    # half the text, takes its place and grows (it is most of the sidebar, the sidebar most of
    # the wrapper)
    assert layout_main(root, article_el) is _by_id(root, "wrap")
    # a pick that holds enough of the page grows only while it holds GROW_SHARE of its parent
    root = _page(
        f"<div id='wrap'><div id='main'><div id='article'>{article * 6}</div></div>"
        f"<div id='side'>{sidebar}</div></div>"
    )
    assert layout_main(root, _by_id(root, "article")) is _by_id(root, "main")


def test_one_item_of_a_list_gives_the_list():
    items = "".join(
        f"<li class='entry'>entry number {i} " + "text " * 20 + "</li>" for i in range(5)
    )
    root = _page(
        f"<div id='top'>site</div><div id='col'><ul id='list'>{items}</ul><p>pager</p></div>"
    )
    item = root.xpath("//li")[2]
    assert layout_main(root, item) is _by_id(root, "col")


def test_a_whole_page_pick_gives_the_smallest_element_with_half_the_text():
    body = "<p>" + "body text " * 50 + "</p>"
    root = _page(f"<div id='outer'><div id='inner'>{body}</div></div><div id='aside'>x</div>")
    body_el = root.find("body")
    assert layout_main(root, body_el) is _by_id(root, "outer")  # grows back to the top
    assert layout_main(root, None) is None


def _length(el: lxml.html.HtmlElement) -> int:
    return len(" ".join(el.text_content().split()))


def _reference(root: lxml.html.HtmlElement, main: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    """The rule as the docstring states it, one step at a time, every length read afresh."""
    body = root.find("body")
    node = main
    page = _length(body)
    if page and (node is body or node is root or _length(node) < STRAY_SHARE * page):
        node = body
        while True:
            bigger = [k for k in node if isinstance(k.tag, str) and _length(k) >= TEXT_SHARE * page]
            if not bigger:
                break
            node = bigger[0]
    while node is not body and node is not root:
        parent = node.getparent()
        if parent is body:
            break
        same = [
            k
            for k in parent
            if isinstance(k.tag, str)
            and k.tag == node.tag
            and (k.get("class") or "") == (node.get("class") or "")
        ]
        if len(same) < LIST_ITEMS:
            break
        node = parent
    while node is not body and node is not root:
        parent = node.getparent()
        if parent is body or parent is root:
            break
        if _length(parent) == 0 or _length(node) < GROW_SHARE * _length(parent):
            break
        node = parent
    return node


def _random_tree(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.2:
        return _text(rng, rng.choice([0, 1, 3, 10, 40]))
    tag = rng.choice(["div", "div", "section", "ul", "p"])
    kids = rng.randint(1, 5)
    if tag == "ul":
        return (
            "<ul>"
            + "".join(f"<li>{_random_tree(rng, depth - 1)}</li>" for _ in range(kids))
            + "</ul>"
        )
    if tag == "p":
        return f"<p>{_text(rng, rng.randint(0, 60))}</p>"
    cls = rng.choice(["", "a", "b"])
    inner = "".join(_random_tree(rng, depth - 1) for _ in range(kids))
    return f"<{tag} class='{cls}'>{inner}</{tag}>"


def _random_pages(seed: int, count: int = 40) -> Iterator[lxml.html.HtmlElement]:
    rng = random.Random(seed)
    for _ in range(count):
        yield _page("".join(_random_tree(rng, 6) for _ in range(rng.randint(1, 4))))


def test_layout_main_lands_where_the_step_by_step_rule_does():
    picks = 0
    for root in _random_pages(7):
        body = root.find("body")
        for el in [body, *body.iter()]:
            if not isinstance(el.tag, str):
                continue
            picks += 1
            assert layout_main(root, el) is _reference(root, el), root.getroottree().getpath(el)
    assert picks > 500


def _spine_reference(region: lxml.html.HtmlElement) -> int:
    """The spine one child at a time, every child measured (no early stop)."""

    def length(el: lxml.html.HtmlElement) -> int:
        return len(" ".join(el.text_content().split()))

    depth, node = 0, region
    while length(node) and depth < 8:
        kids = [k for k in node if isinstance(k.tag, str) and k.tag not in ("script", "style")]
        best = max(kids, key=length, default=None)  # the largest child, the first of equals
        if best is None or length(best) < SPINE_SHARE * length(node):
            return depth
        node, depth = best, depth + 1
    return depth


def test_the_spine_stops_where_the_text_spreads_out_as_measured_child_by_child():
    regions = 0
    for root in _random_pages(11):
        body = root.find("body")
        assert spine_depth(body) == 0  # no region apart from the page: nothing to stub
        for el in body.iterdescendants():
            if isinstance(el.tag, str):
                regions += 1
                assert spine_depth(el) == _spine_reference(el), root.getroottree().getpath(el)
    assert regions > 500


def test_the_spine_measures_a_bounded_number_of_children():
    # the dominant child comes after many small ones: found within the budget, not beyond it
    root = _page(
        "<div id='region'>"
        + "<span>a</span>" * 20
        + "<div id='article'><p>"
        + "words " * 200
        + "</p><p>more words</p></div></div>"
    )
    region = _by_id(root, "region")
    assert spine_depth(region) == 2  # the article, then its long paragraph
    assert spine_depth(region, budget=10) == 0


def _blog(main: str, *, sidebar: int = 3) -> str:
    """A page of a blog theme: everything inside one wrapper, as most sites are built."""
    widgets = "".join(
        f"<section class='widget'><h2>Widget {i}</h2><ul>"
        + "".join(f"<li><a href='/p{j}'>Post number {j}</a></li>" for j in range(5))
        + "</ul></section>"
        for i in range(sidebar)
    )
    return (
        "<html><head><title>A post - Blog</title></head><body><div id='page'>"
        "<header><p class='site-title'><a href='/'>Blog</a></p><nav><ul>"
        "<li><a href='/about'>About</a></li><li><a href='/contact'>Contact</a></li></ul></nav>"
        f"</header><div id='content'><main>{main}</main><aside>{widgets}</aside></div>"
        "<footer><p>Powered by a blog engine.</p></footer></div></body></html>"
    )


def _entry(rng: random.Random, paragraphs: int, heading: str = "h1") -> str:
    body = "".join(f"<p>{_text(rng, rng.randint(30, 90))}</p>" for _ in range(paragraphs))
    return (
        f"<article><header><{heading}>{_text(rng, 5)}</{heading}><time>May 3</time></header>"
        f"<div class='entry-content'>{body}</div><footer><a href='/tag/x'>x</a></footer>"
        "</article>"
    )


def test_the_signature_keeps_the_frame_around_an_article_inside_a_page_wrapper():
    rng = random.Random(3)
    comments = (
        "<div id='comments'><h2>Comments</h2><ol>"
        + "".join(f"<li><b>Reader</b><p>{_text(rng, 20)}</p></li>" for _ in range(3))
        + "</ol><form><p><textarea></textarea></p><p><input type='submit'></p></form></div>"
    )
    nav = "<nav class='post-navigation'><a href='/prev'>Previous</a><a href='/next'>Next</a></nav>"
    posts = [page_layout(_blog(_entry(rng, n) + nav + comments)) for n in (4, 9, 17, 30)]
    # posts of any length: one signature (the paragraphs are the content, not the layout)
    assert len({p.key for p in posts}) == 1
    archive = page_layout(
        _blog(
            "<header class='page-header'><h1>Day: May 3</h1></header>"
            + "".join(_entry(rng, 3, "h2") for _ in range(4))
            + "<nav class='pagination'><a href='/page/2'>2</a></nav>"
        )
    )
    # the article's frame is in the signature: comments and post links against a page
    # header and a list of entries (a stub of fixed depth from the wrapper saw neither)
    assert archive.key != posts[0].key
    assert "form" in posts[0].labels and "form" not in archive.labels
    assert posts[0].nodes > 20


def test_a_shipped_signature_leaves_its_path_histogram_behind() -> None:
    # The histogram's keys are hash() values, salted per process: another process must build
    # its own, or the bound between its signatures and this one would read 0 and miss links.
    import pickle

    layout = make_layout(["body", "div", "p"], [3, 2, 1])
    assert layout.paths
    copy = pickle.loads(pickle.dumps(layout))
    assert copy._paths is None
    assert copy.key == layout.key and copy.paths == layout.paths


def _body(classes: str) -> object:
    return lxml.html.document_fromstring(f'<html><body class="{classes}"><p>x</p></body></html>')


def test_body_marks_name_the_template_not_the_page() -> None:
    from visdup.templates.signature import body_marks

    post = "post-template-default single single-post postid-73 single-format-standard no-js"
    assert body_marks(_body(post), "https://b.example/2017/02/05/a-post/") == {
        "post-template-default",
        "single",
        "single-post",
        "single-format-standard",
        "no-js",
    }
    # names built on the page's own URL path, and names with digits, name the page
    archive = "archive category category-news category-5 Paged"
    assert body_marks(_body(archive), "https://b.example/category/news/page/2/") == {
        "archive",
        "category",
        "paged",
    }
    shirt = "catalog-product-view product-blue-shirt page-layout-1column"
    assert body_marks(_body(shirt), "https://s.example/blue-shirt.html") == {"catalog-product-view"}
    assert body_marks(_body(""), "https://s.example/") == frozenset()
    assert body_marks(lxml.html.fragment_fromstring("<div>x</div>"), None) == frozenset()
    assert body_marks(None) == frozenset()


def test_body_marks_keep_names_built_on_a_directory_above_the_page() -> None:
    """A name ending in the page's own slug names the page; one built on a directory the page
    is in names what the directory's pages share, and every page of it keeps the name."""
    from visdup.templates.signature import body_marks

    men = "catalog-category-view categorypath-men-shirts page-products"
    assert body_marks(_body(men), "https://s.example/men/shirts.html") == {
        "catalog-category-view",
        "page-products",
    }
    assert body_marks(_body("page page-about-us"), "https://s.example/pages/about-us") == {"page"}
    shop = [
        "https://d.example/shop/",
        "https://d.example/shop/page/2.html",
        "https://d.example/shop/products/blue-shirt.html",
        "https://d.example/shop/x/y.html",
    ]
    assert all(body_marks(_body("shop-page"), url) == {"shop-page"} for url in shop)
    listing = ["https://d.example/blog/", "https://d.example/blog/page/2.html"]
    assert all(body_marks(_body("listing-page"), url) == {"listing-page"} for url in listing)
    help_pages = ["https://d.example/help/", "https://d.example/help/faq.html"]
    assert all(body_marks(_body("help-page"), url) == {"help-page"} for url in help_pages)
    # the slug is the last segment, its extension off; a number there names no class
    assert body_marks(_body("view-faq help-page"), "https://d.example/help/faq.html") == {
        "help-page"
    }
    assert body_marks(_body("archive-news"), "https://d.example/news/2") == {"archive-news"}


def test_body_marks_leave_out_the_terms_of_a_post() -> None:
    """A news site's articles carry their categories, tags and author on <body>, none on one
    article and several on the next: one template, one set of marks."""
    from visdup.templates.signature import body_marks, marks_agree

    plain = body_marks(_body("single single-post postid-5 single-format-standard"), None)
    tagged = "author-jane category-tech category-science tag-election tag-courts tag-economy"
    many = body_marks(_body("single single-post postid-6 single-format-standard " + tagged))
    assert plain == many == {"single", "single-post", "single-format-standard"}
    assert marks_agree(plain, many)
    # the archive of a term keeps the name of its template
    archive = body_marks(_body("archive tag tag-election"), "https://b.example/news/")
    assert archive == {"archive", "tag"}


def test_marks_agree_on_variants_of_a_template_only() -> None:
    from visdup.templates.signature import marks_agree

    common = {"wp-embed-responsive", "is-light-theme", "no-js", "has-main-navigation"}
    post = frozenset(common | {"post-template-default", "single", "single-post", "singular"})
    video = frozenset(post - {"single-format-standard"} | {"single-format-video"})
    day = frozenset(common | {"archive", "date", "hfeed"})
    category = frozenset(common | {"archive", "category", "hfeed"})
    home = frozenset(common | {"home", "blog", "hfeed"})
    assert marks_agree(post, video)  # a post's format
    assert marks_agree(day, category)  # one name swapped: archives both
    assert marks_agree(
        frozenset({"books", "product-detail"}), frozenset({"audio", "product-detail"})
    )
    assert not marks_agree(post, day)
    assert not marks_agree(home, day)
    assert marks_agree(frozenset(), frozenset())
    assert not marks_agree(frozenset(), post)
    # a page's one name swapped for another, nothing kept: two page types of a small site
    assert not marks_agree(frozenset({"article-page"}), frozenset({"product-page"}))
    assert not marks_agree(frozenset(), frozenset({"listing-page"}))
    assert not marks_agree(frozenset({"a", "b"}), frozenset({"c"}))


def test_marks_travel_with_the_stored_labels() -> None:
    page = page_layout(
        '<html><body class="single single-post postid-7"><div><p>text</p></div></body></html>',
        url="https://b.example/a-post/",
    )
    assert page.marks == {"single", "single-post"} and page.labels[0] == "body"
    again = make_layout(page.stored_labels, page.sizes)
    assert again.key == page.key and again.marks == page.marks and again.labels == page.labels
    plain = make_layout(page.labels, page.sizes, ())
    assert plain.key != page.key and plain.stored_labels == list(page.labels)


def test_pages_of_one_skeleton_that_name_different_templates_are_apart() -> None:
    from visdup.templates.layouts import cluster_layouts

    def page(classes: str, words: str) -> str:
        return (
            f'<html><body class="{classes}"><header><nav><a href="/">Home</a></nav></header>'
            f"<main><article><h1>Title</h1><div>{words}</div></article></main>"
            "<footer><p>Footer</p></footer></body></html>"
        )

    text = " ".join(WORDS * 20)
    pages = {
        "/a/": page("single single-post no-js", text),
        "/b/": page("single single-post no-js", text + " more"),
        "/2020/01/": page("archive date hfeed no-js", text),
        "/2020/02/": page("archive date hfeed no-js", text + " other"),
    }
    layouts = [(p, page_layout(h, url="http://x" + p)) for p, h in pages.items()]
    ids = cluster_layouts(layouts)
    assert ids["/a/"] == ids["/b/"] and ids["/2020/01/"] == ids["/2020/02/"]
    assert ids["/a/"] != ids["/2020/01/"]
    unmarked = [(p, make_layout(layout.labels, layout.sizes, ())) for p, layout in layouts]
    assert len(set(cluster_layouts(unmarked).values())) == 1  # the skeleton alone: one


def test_a_hostile_body_class_keeps_the_signature_small() -> None:
    from visdup.templates.signature import MAX_MARKS, body_marks

    names = " ".join(f"name-{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}x" for i in range(5000))
    marks = body_marks(_body(names + " " + "y" * 500), "http://x/" + "/".join(["a"] * 5000))
    assert len(marks) == MAX_MARKS and all(len(m) <= 64 for m in marks)


def test_body_marks_read_the_same_from_any_form_of_the_url_and_any_decoding() -> None:
    from visdup.templates.signature import body_marks

    page = _body("archive category category-news запись")
    # the crawl may hold a start URL as given, `visdup cluster --db` its stored form
    assert body_marks(page, "http://b.example/a/../category/./news/") == {"archive", "category"}
    assert body_marks(page, "http://b.example/category/news/") == {"archive", "category"}
    # a name outside ASCII reads differently when the page is decoded without its charset
    assert body_marks(_body("archive Ð·Ð°Ð¿Ð¸Ñ\x81Ñ\x8c"), None) == {"archive"}


def test_only_the_end_of_the_spine_is_a_stub_and_what_is_beside_it_keeps_two_levels() -> None:
    rng = random.Random(11)
    root = _page(
        "<div id='page'><header><nav><ul><li><a href='/'>Home</a></li></ul></nav></header>"
        "<div id='content'><main>"
        + _entry(rng, 12)
        + "<div id='comments'><h2>2 comments</h2><ol><li><p>Nice</p></li></ol></div>"
        "</main><aside><section><h2>Recent</h2><ul><li><a href='/p'>p</a></li></ul></section>"
        "</aside></div><footer><p>Powered</p></footer></div>"
    )
    region = _by_id(root, "page")
    spine = spine_path(region)
    assert [el.get("id") or el.tag for el in spine] == ["page", "content", "main", "article", "div"]
    layout = layout_signature(root, region, spine=spine)
    tree = _outline(layout)
    assert tree[0] == ("body", 0) and tree[1] == (MAIN, 1)
    depth = dict(tree)
    # on the spine: the page's depth; its end, the entry's text, a stub one level deep (its
    # twelve paragraphs are one node)
    assert depth["article"] == 4 and ("div", 5) in tree and tree.count(("p", 6)) == 1
    # beside the spine, two levels each: the sidebar's sections, the comments' list, the
    # site header's nav, but nothing below them
    for pair in [("aside", 3), ("section", 4), ("header", 2), ("nav", 3), ("ol", 5)]:
        assert pair in tree, pair
    assert ("ul", 4) not in tree and ("ul", 5) not in tree and ("li", 6) not in tree
    # in a stub, equal children collapse wherever they stand: prose, lists and figures in any
    # number, interleaved any way, are one post layout
    posts = []
    for order in ("p ul p figure p p", "p ul ul p p figure p p figure", "p p ul figure p ul p"):
        inner = "".join(
            f"<{t}>{_text(rng, 40)}</{t}>"
            if t == "p"
            else f"<{t}><li>{_text(rng, 30)}</li></{t}>"
            if t == "ul"
            else "<figure><img src='/i.png'><figcaption>x</figcaption></figure>"
            for t in order.split()
        )
        post = _page(
            "<div id='page'><header><nav><a href='/'>Home</a></nav></header><main><article>"
            f"<h1>Title</h1><div class='entry'>{inner}</div></article></main>"
            "<footer><p>Powered</p></footer></div>"
        )
        region = _by_id(post, "page")
        posts.append(layout_signature(post, region, spine=spine_path(region)))
    assert len({p.key for p in posts}) == 1
    # a spine that ends at the region itself: a stub two levels deep, as without one
    short = _page("<div id='r'><p>alpha</p><p>bravo</p><ul><li>charlie <b>x</b></li></ul></div>")
    region = _by_id(short, "r")
    assert spine_path(region) == [region]
    assert layout_signature(short, region, spine=[region]).key == (
        layout_signature(short, region, stub_depth=DEFAULT_STUB_DEPTH).key
    )


def test_the_spine_goes_to_the_article_the_finder_picked_past_a_heavier_menu():
    """A short page beside a menu of the whole manual (Furo, Read the Docs): the menu holds
    more of the page's text than the article, and a spine by text alone went into the menu on
    such pages and into the article on the others (Furo: 110 and 77 pages of one layout)."""
    links = "".join(f"<li><a href='/p{i}'>chapter of the manual {i}</a></li>" for i in range(40))
    root = _page(
        "<div id='page'><aside id='menu'><div><ul>" + links + "</ul></div></aside>"
        "<div id='main'><div id='container'><article id='article'><h1>Short</h1>"
        + "<p>"
        + "a short page of the manual " * 30
        + "</p></article></div></div></div>"
    )
    article = _by_id(root, "article")
    region = layout_main(root, article)
    assert region is _by_id(root, "page")
    assert [el.get("id") for el in spine_path(region)][:2] == ["page", "menu"]
    spine = spine_path(region, toward=article)
    assert [el.get("id") for el in spine[:4]] == ["page", "main", "container", "article"]
    assert [el.tag for el in spine[4:]] == ["p"]  # below the pick, by text as before
    # a pick outside the region, or an item of a list, leads the spine no further
    assert spine_path(_by_id(root, "main"), toward=_by_id(root, "menu")) == spine_path(
        _by_id(root, "main")
    )
    item = root.xpath("//li")[3]
    assert spine_path(region, toward=item)[-1].tag == "ul"
    # a list that is the region itself: any of its items leads where the list does
    items = "".join(
        f"<li id='i{i}' class='it'><div class='card'><h2>t{i}</h2><p>"
        + f"entry {i} text " * 10
        + "</p></div></li>"
        for i in range(6)
    )
    listing = _page(f"<ul id='list'>{items}</ul><footer>f</footer>")
    keys = set()
    for pick in ("i1", "i4", "list"):
        node = _by_id(listing, pick)
        assert layout_main(listing, node) is _by_id(listing, "list")
        keys.add(page_layout_of(listing, node).key)
    assert len(keys) == 1


def _outline(layout: Layout) -> list[tuple[str, int]]:
    """(label, depth) of each node of a signature, in preorder."""
    out: list[tuple[str, int]] = []
    open_sizes: list[int] = []
    for label, size in zip(layout.labels, layout.sizes, strict=True):
        while open_sizes and open_sizes[-1] == 0:
            open_sizes.pop()
        if open_sizes:
            open_sizes[-1] -= size
        out.append((label, len(open_sizes)))
        open_sizes.append(size - 1)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pages_of_a_blog_theme_give_one_template_per_page_type(seed: int) -> None:
    from bench.blogs import make_blog

    blog = make_blog("twentyseventeen", posts=60, seed=seed)
    clusterer = LayoutClusterer()
    keys = {}
    for path, html in blog.pages.items():
        layout = page_layout(html, url="http://blog.example" + path)
        clusterer.add(layout)
        keys[path] = layout.key
    paths = sorted(keys)
    truth = [blog.kinds[p] for p in paths]
    got = [clusterer.cluster_of(keys[p]) for p in paths]
    # posts of 1 to 3,500 words, with and without comment threads: one template each, and
    # no template holds two page types (a whole-region stub down the spine: ARI 0.67-0.92)
    assert purity(truth, got) == 1.0
    assert adjusted_rand_index(truth, got) >= 0.95


def test_the_demo_sites_layouts_are_its_templates() -> None:
    """Each layout of the demo site names itself on <body> with one class (or none), and its
    header, menu and footer are most of its small pages: one name in place of another, with
    no name kept, is another template (the earlier rule joined five layouts: ARI 0.18)."""
    import json

    from visdup.demo import SITE_ROOT

    expected = json.loads((SITE_ROOT / "EXPECTED.json").read_text())["templates"]
    clusterer = LayoutClusterer()
    keys, kinds = {}, {}
    marks: dict[str, set[frozenset[str]]] = {}
    for kind, urls in expected.items():
        for url in urls:
            path = url.lstrip("/")
            path = path + "index.html" if not path or path.endswith("/") else path
            html = (SITE_ROOT / path).read_text(encoding="utf-8")
            layout = page_layout(html, url="http://demo.example" + url)
            clusterer.add(layout)
            keys[url], kinds[url] = layout.key, kind
            marks.setdefault(kind, set()).add(layout.marks)
    # every page of a layout keeps its name, in /shop/ and /blog/page/2.html as elsewhere
    assert all(len(names) == 1 and frozenset() not in names for names in marks.values())
    urls = sorted(keys)
    truth = [kinds[u] for u in urls]
    got = [clusterer.cluster_of(keys[u]) for u in urls]
    assert purity(truth, got) == 1.0
    assert adjusted_rand_index(truth, got) >= 0.9


def _doc_page(header: str, sections: str) -> str:
    """A documentation page: a site bar, a content column whose header is ``header`` and
    whose member lists are ``sections``, a footer."""
    return (
        "<html><body><div id='bar'><span><a href='/'>Docs</a></span><input></div>"
        f"<div id='content'><div class='header'>{header}</div>"
        f"<div class='members'>{sections}</div></div>"
        "<div id='footer'><p>Generated</p></div></body></html>"
    )


def _members(rng: random.Random, titles: list[str]) -> str:
    return "".join(
        f"<div class='group'><h3>{title}</h3><ol>"
        + "".join(f"<li><a href='#m{i}'>member {i}</a> {_text(rng, 30)}</li>" for i in range(6))
        + "</ol></div>"
        for title in titles
    )


def test_the_frames_heading_outline_keeps_apart_pages_of_one_skeleton() -> None:
    """An API reference's entity page heads its content with a name, a sub-heading and a
    signature line (h1, h3, h4); a package page with a name and a signature line (h1, h4),
    and both list members under h3. Their skeletons differ in one node: only the order in
    which the frame's heading levels first appear tells them apart (warpcore: ARI 0.78 to
    0.985)."""
    from visdup.templates.layouts import cluster_layouts
    from visdup.templates.signature import outlines_agree, similarity

    rng = random.Random(5)
    groups = ["Type Members", "Value Members", "Instance Constructors"]
    entities = {
        f"/e{i}.html": _doc_page(
            f"<h1>Entity{i}</h1><h3>Companion object Entity{i}</h3>"
            f"<h4><span>class Entity{i} extends AnyRef</span></h4><p>{_text(rng, 40)}</p>",
            _members(rng, groups[: 2 + i % 2]),
        )
        for i in range(4)
    }
    packages = {
        f"/p{i}/index.html": _doc_page(
            f"<h1>pkg{i}</h1><h4><span>package pkg{i}</span></h4><p>{_text(rng, 40)}</p>",
            _members(rng, groups[: 1 + i % 2]),
        )
        for i in range(4)
    }
    layouts = {p: page_layout(h, url="http://api.example" + p) for p, h in entities.items()}
    layouts.update({p: page_layout(h, url="http://api.example" + p) for p, h in packages.items()})
    entity, package = layouts["/e0.html"], layouts["/p1/index.html"]
    assert entity.outline == (1, 3, 4) and package.outline == (1, 4, 3)
    assert similarity(entity, package) >= 0.75  # the skeletons alone would join them
    assert not outlines_agree(entity.outline, package.outline)
    ids = cluster_layouts(layouts.items())
    assert len({ids[p] for p in entities}) == 1 and len({ids[p] for p in packages}) == 1
    assert ids["/e0.html"] != ids["/p0/index.html"]
    plain = [(p, make_layout(x.labels, x.sizes, x.marks)) for p, x in layouts.items()]
    assert len(set(cluster_layouts(plain).values())) == 1  # without the outline: one


def test_outlines_agree_when_shared_levels_keep_their_order() -> None:
    from visdup.templates.signature import outlines_agree

    assert outlines_agree((1, 3, 4), (1, 3, 4))
    assert outlines_agree((1, 2, 3), (1, 3))  # an optional level says nothing
    assert outlines_agree((1,), ())
    assert outlines_agree((), ())
    assert not outlines_agree((1, 3, 4), (1, 4, 3))
    assert not outlines_agree((2, 1), (1, 2, 3))


def test_an_articles_own_headings_and_a_sidebars_leave_the_outline_alone() -> None:
    """Headings inside the article follow its text (h3 before h2 on one post, after it on the
    next), and a sidebar's come and go with optional blocks: neither is the frame."""
    rng = random.Random(8)
    outlines = set()
    for body, side in (("h2 p h3 p", "h3 h4"), ("h3 p h2 p", "h4 h3"), ("p p", "h4")):
        inner = "".join(f"<{t}>{_text(rng, 60 if t == 'p' else 3)}</{t}>" for t in body.split())
        aside = "".join(
            f"<div><{t}>{_text(rng, 2)}</{t}><ul><li>x</li></ul></div>" for t in side.split()
        )
        html = (
            "<html><body><div id='page'><header><nav><a href='/'>Home</a></nav></header>"
            "<div id='wrap'><main><article><header><h1>Title</h1></header>"
            f"<div class='entry'>{inner}</div></article></main></div>"
            f"</div><div id='side'>{aside}</div></body></html>"
        )
        outlines.add(page_layout(html, url="http://blog.example/a/").outline)
    assert outlines == {(1,)}


def test_the_outline_travels_with_the_stored_labels() -> None:
    page = page_layout(
        "<html><body class='single'><div id='c'><div class='head'><h1>T</h1><h3>S</h3></div>"
        f"<div class='text'><p>{'words of the page ' * 40}</p></div></div></body></html>",
        url="https://b.example/a/",
    )
    assert page.outline == (1, 3) and page.marks == {"single"}
    again = make_layout(page.stored_labels, page.sizes)
    assert again.key == page.key and again.outline == page.outline and again.marks == page.marks
    assert again.labels == page.labels
    bare = make_layout(page.labels, page.sizes, (), page.outline)
    assert bare.stored_labels[0] == "body ^13"
    assert make_layout(bare.stored_labels, bare.sizes).outline == (1, 3)
    # another outline is another signature, the same labels notwithstanding
    assert make_layout(page.labels, page.sizes, page.marks).key != page.key


def test_the_documentation_sites_templates_are_its_page_types() -> None:
    """warpcore (412 real pages: Hugo, reveal.js, Scaladoc), with Scaladoc's class, trait and
    object pages as one template, as its generator renders them."""
    import csv

    from tests.conftest import shared_data
    from visdup.templates.layouts import cluster_layouts

    root = shared_data("warpcore")
    with (root / "labels.csv").open(newline="") as fh:
        labels = {row["path"]: row["template"] for row in csv.DictReader(fh)}
    entity = {"scaladoc-class", "scaladoc-trait", "scaladoc-object"}
    truth = {p: "scaladoc-entity" if t in entity else t for p, t in labels.items()}
    layouts = [
        (p, page_layout((root / "site" / p).read_bytes(), url="http://warpcore.example/" + p))
        for p in sorted(labels)
    ]
    ids = cluster_layouts(layouts)
    paths = sorted(ids)
    got = [ids[p] for p in paths]
    assert adjusted_rand_index([truth[p] for p in paths], got) >= 0.95
    shuffled = layouts[:]
    random.Random(1).shuffle(shuffled)
    assert cluster_layouts(shuffled) == ids  # the same partition and ids in any order
