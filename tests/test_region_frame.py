"""The frame around a page's content: one per design, whatever each article carries."""

from __future__ import annotations

from visdup.templates.layout import make_layout, similarity
from visdup.templates.layouts import DEFAULT_LAYOUT_THRESHOLD, cluster_layouts
from visdup.templates.region import frame_similarity, is_frame, region_frame
from visdup.templates.signature import page_layout
from visdup.templates.stm import stm

PARA = "<p>" + "Words of a news story, as a reporter writes them for the paper. " * 8 + "</p>"
MENU = "".join(f"<li><a href='/s/{s}'>{s.title()}</a></li>" for s in ("world", "sport", "arts"))
SIDEBAR = (
    "<aside class='sidebar'><div class='box'><h3>Most read</h3><ul>"
    + "".join(f"<li><a href='/m/{i}'>Story {i}</a></li>" for i in range(5))
    + "</ul></div></aside>"
)
TOPBAR = "<div><span>Free delivery</span><a href='/help'>Help</a></div>"


def article(furniture: str, paragraphs: int = 6) -> str:
    """A story in one markup: its header, ``furniture`` (a figure, a gallery, an embed), its
    text, tags and related links."""
    head = (
        "<header><span class='kicker'>World</span><h1>A headline of the day</h1>"
        "<p class='standfirst'>What happened, in a line.</p>"
        "<div class='byline'><a href='/author'>A Reporter</a><time>9 May</time></div></header>"
    )
    tags = "<footer><a href='/tag'>one</a><a href='/tag'>two</a></footer>"
    related = (
        "<section class='related'><h3>Related</h3><ul>"
        + "".join(f"<li><a href='/r/{i}'>Another story {i}</a></li>" for i in range(4))
        + "</ul></section>"
    )
    body = f"<div class='story-text'>{PARA * paragraphs}</div>"
    return f"<article>{head}{furniture}{body}{tags}{related}</article>"


def page(content: str, *, sidebar: bool, topbar: bool) -> str:
    """A page of the site's design: a header, wrappers, a sidebar or none, a footer."""
    header = (
        "<div class='header'><div class='inner'><a href='/' class='logo'><img src='/logo.png'"
        f" alt='Herald'></a><nav><ul>{MENU}</ul></nav></div></div>"
    )
    inner = (
        f"<div class='cols'>{SIDEBAR if sidebar else ''}<div class='content'>{content}</div></div>"
    )
    footer = (
        "<footer><div class='cols'><div><h4>About</h4><ul><li><a href='/x'>Contact</a></li>"
        "</ul></div></div><p>The Herald</p></footer>"
    )
    return (
        f"<html><body>{TOPBAR if topbar else ''}{header}<div class='wrap'>{inner}</div>"
        f"{footer}</body></html>"
    )


FIGURE = "<figure><img src='/a.jpg'><figcaption>A picture of it.</figcaption></figure>"
GALLERY = (
    "<div class='gallery'><ul>"
    + "".join(f"<li><figure><img src='/g{i}.jpg'><figcaption>Shot {i}</figcaption></figure></li>"
              for i in range(6))
    + "</ul><button>Next</button></div>"
)  # fmt: skip
EMBED = "<div class='embed'><div class='player'><video src='/v.mp4'></video></div></div>"
COMMENTS = (
    "<section class='comments'><h2>3 comments</h2><ol>"
    + "".join(f"<li><cite>Reader {i}</cite><p>A comment on it.</p></li>" for i in range(3))
    + "</ol></section>"
)


def raw_similarity(a: str, b: str) -> float:
    """The signatures' own ``2·STM/(n1+n2)``, without their frames."""
    la, lb = page_layout(a), page_layout(b)
    return 2.0 * stm(la, lb, max_nodes=max(la.nodes, lb.nodes)) / (la.nodes + lb.nodes)


def test_one_design_keeps_one_frame_whatever_its_articles_carry() -> None:
    pages = [
        page(article(FIGURE), sidebar=True, topbar=False),
        page(article(GALLERY, paragraphs=1), sidebar=True, topbar=False),
        page(article(EMBED, paragraphs=20) + COMMENTS, sidebar=True, topbar=False),
        page(article(""), sidebar=True, topbar=False),
    ]
    layouts = [page_layout(html) for html in pages]
    assert len({layout.frame for layout in layouts}) == 1
    assert len({layout.key for layout in layouts}) > 1  # the signatures do differ
    clusters = cluster_layouts((str(i), layout) for i, layout in enumerate(layouts))
    assert len(set(clusters.values())) == 1


def test_a_redesign_of_the_frame_is_another_template() -> None:
    """The same article markup in two designs: the second drops the sidebar and puts a
    top bar over the header. The signatures, mostly the article's furniture and the header's
    and footer's insides, stay alike; their frames do not."""
    old = [page(article(f), sidebar=True, topbar=False) for f in (FIGURE, "", EMBED)]
    new = [page(article(f), sidebar=False, topbar=True) for f in (FIGURE, "", EMBED)]
    a, b = page_layout(old[0]), page_layout(new[0])
    assert a.frame and b.frame and frame_similarity(a.frame, b.frame) < 1.0
    # the signatures alone would link the two designs; weighed by their frames they do not
    assert raw_similarity(old[0], new[0]) >= DEFAULT_LAYOUT_THRESHOLD
    assert similarity(a, b) < DEFAULT_LAYOUT_THRESHOLD
    items = [(f"old{i}", page_layout(h)) for i, h in enumerate(old)]
    items += [(f"new{i}", page_layout(h)) for i, h in enumerate(new)]
    clusters = cluster_layouts(items)
    assert len({clusters[k] for k, _ in items if k.startswith("old")}) == 1
    assert len({clusters[k] for k, _ in items if k.startswith("new")}) == 1
    assert clusters["old0"] != clusters["new0"]


def test_a_design_without_a_sidebar_keeps_its_similarity() -> None:
    """Pages of one design share their frame: the weighing leaves their similarity as the
    signatures have it."""
    a = page(article(FIGURE), sidebar=False, topbar=False)
    b = page(article(GALLERY, paragraphs=2) + COMMENTS, sidebar=False, topbar=False)
    la, lb = page_layout(a), page_layout(b)
    assert la.frame == lb.frame
    assert similarity(la, lb) == raw_similarity(a, b)


def test_the_frame_is_stored_with_the_signature() -> None:
    layout = page_layout(page(article(FIGURE), sidebar=True, topbar=True))
    assert is_frame(layout.frame)
    back = make_layout(layout.stored_labels, layout.sizes)
    assert back.frame == layout.frame
    assert back.shape == layout.shape
    assert back.key == layout.key
    other = make_layout(layout.labels, layout.sizes, layout.marks, layout.outline, layout.shape)
    assert other.key != layout.key
    assert similarity(back, layout) == 1.0


def test_content_beside_a_deeper_container_is_no_frame() -> None:
    """A manual's chapter: on one page its container is the chapter, on another one section
    of it (the title's), its next section beside. Read down to the shallower container, the
    two frames are one."""
    from lxml import html as lxml_html

    def chapter(sections: int) -> tuple[object, object]:
        parts = "".join(f"<section><h1>Part {i}</h1>{PARA}</section>" for i in range(sections))
        doc = lxml_html.fromstring(
            f"<html><body><div class='top'><a href='/'>Manual</a></div><div class='doc'>"
            f"<div class='body'>{parts}</div><div class='side'><h3>Contents</h3></div></div>"
            "</body></html>"
        )
        body = doc.find("body")
        inner = body.find("div[@class='doc']/div[@class='body']")
        return body, inner

    body, whole = chapter(2)
    one = region_frame(whole, body)
    body2, whole2 = chapter(2)
    first = region_frame(whole2[0], body2)  # the first section, its sibling beside it
    assert one != first
    assert frame_similarity(one, first) == 1.0


def test_no_frame_below_body_is_not_compared() -> None:
    """A container that is ``<body>``'s child is the page's wrapper: what stands beside it
    (a share box a script shows on some pages) is no frame to weigh."""
    from lxml import html as lxml_html

    def wrapped(extra: str) -> str:
        doc = lxml_html.fromstring(
            f"<html><body><div id='page'><h1>Title</h1>{PARA}</div>{extra}"
            "<div><ul><li>x</li></ul></div></body></html>"
        )
        body = doc.find("body")
        return region_frame(body[0], body)

    plain, boxed = wrapped(""), wrapped("<div><form></form><div></div></div>")
    assert plain != boxed
    assert frame_similarity(plain, boxed) == 1.0
    assert frame_similarity("", plain) == 1.0
