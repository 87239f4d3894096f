"""The content region's shape: one per page type, whatever the page's length."""

from __future__ import annotations

from visdup.templates.layout import make_layout
from visdup.templates.region import is_shape, shape_similarity, shapes_agree
from visdup.templates.signature import page_layout

FRAME = (
    "<html><body><header><a href='/'>Shop</a><nav><ul><li><a href='/a'>A</a></li>"
    "<li><a href='/b'>B</a></li></ul></nav></header><div class='wrap'><div class='content'>"
    "<ol class='crumbs'><li><a href='/'>Home</a></li></ol>{}</div></div>"
    "<footer><div><h4>Help</h4><ul><li><a href='/x'>Contact us</a></li></ul></div>"
    "<p>Shop, all rights reserved</p></footer></body></html>"
)
PROSE = "<p>" + "Words about shipping and returns, as prose reads. " * 12 + "</p>"


def card(i: int) -> str:
    return (
        f"<li><a href='/p/{i}'><img src='/{i}.jpg' alt=''></a>"
        f"<h3><a href='/p/{i}'>Product {i}</a></h3><span class='price'>$1{i}.00</span></li>"
    )


def listing(cards: int) -> str:
    grid = "<ul class='grid'>" + "".join(card(i) for i in range(cards)) + "</ul>"
    pager = "<nav class='pager'><span>1</span><a href='?page=2'>2</a></nav>"
    return FRAME.format("<h1>Garden</h1>" + grid + pager)


def info(paragraphs: int) -> str:
    return FRAME.format("<h1>Shipping</h1>" + PROSE * paragraphs + "<h2>Returns</h2>" + PROSE)


def test_length_does_not_change_a_shape() -> None:
    assert page_layout(listing(3)).shape == page_layout(listing(12)).shape
    assert page_layout(info(1)).shape == page_layout(info(9)).shape


def test_a_grid_and_prose_have_other_shapes() -> None:
    grid, prose = page_layout(listing(6)).shape, page_layout(info(4)).shape
    assert grid and prose
    assert not shapes_agree(grid, prose)
    assert shape_similarity(grid, prose) == shape_similarity(prose, grid)


def test_the_shape_is_stored_with_the_signature() -> None:
    layout = page_layout(listing(4))
    assert is_shape(layout.shape)
    back = make_layout(layout.stored_labels, layout.sizes)
    assert back.shape == layout.shape
    assert back.key == layout.key
    other = make_layout(layout.labels, layout.sizes, layout.marks, layout.outline)
    assert other.key != layout.key


def test_an_unknown_shape_agrees_with_any() -> None:
    assert shapes_agree("", page_layout(listing(4)).shape)


SECTIONS = ("gardening", "cycling", "cooking", "photography", "networking", "printers", "kernels")
MENU = "".join(f"<li><a href='/c/{w}'>{w.title()} and more {w}</a></li>" for w in SECTIONS)
BOARD_FOOTER = (
    f"<footer><div class='cols'><div><h4>Forums</h4><ul>{MENU}</ul></div><p>Powered by a board"
    " package. All times are UTC. Copyright the board's members and staff.</p></div></footer>"
)


def topic(i: int) -> str:
    return (
        f"<div class='topic'><div class='icon'></div><div class='main'>"
        f"<a href='/t/{i}'>Topic number {i} title</a><span class='by'>by user{i} on Mar {i + 1},"
        f" 2023</span></div><div class='stats'>{i} replies</div></div>"
    )


def board(rows: int, title: str = "<h1>Gardening</h1>") -> str:
    """A forum board's page of ``rows`` topics, in a frame whose menus and footer hold more
    text than one or two rows."""
    return (
        f"<html><body class='board'><header><a href='/'>Forum</a><nav><ul>{MENU}</ul></nav>"
        f"</header><div class='wrap'><ol class='crumbs'><li><a href='/'>Home</a></li></ol>{title}"
        "<div class='topics'>" + "".join(topic(i) for i in range(rows)) + "</div>"
        "<div class='pager'><a href='?page=1'>1</a><span>2</span></div></div>"
        f"{BOARD_FOOTER}</body></html>"
    )


def test_a_board_page_of_one_row_has_the_region_of_one_of_ten() -> None:
    """The last page of a board holds less text than its frame: the text finds no region
    there, or the footer; the child of <body> holding the page's title is the region, as it
    is on a page of ten rows."""
    from visdup.page.parse import parse_html
    from visdup.templates.layouts import cluster_layouts
    from visdup.templates.signature import layout_main

    def region(html: str) -> str:
        root = parse_html(html).root
        found = layout_main(root, root)  # no region found: the text decides
        return "/".join(f"{e.tag}.{e.get('class')}" for e in [found, *found.iterancestors()])

    assert (
        region(board(1)) == region(board(2)) == region(board(10)) == "div.wrap/body.board/html.None"
    )
    layouts = [(n, page_layout(board(n), url=f"http://f.example/b/x?page={n}")) for n in (1, 2, 10)]
    assert len({layout.shape for _, layout in layouts}) == 1
    assert len(set(cluster_layouts(layouts).values())) == 1


def test_a_short_page_without_a_title_keeps_what_its_text_finds() -> None:
    from visdup.page.parse import parse_html
    from visdup.templates.signature import layout_main

    for title in ("", "<p>Gardening</p>"):
        root = parse_html(board(2, title)).root
        assert layout_main(root, root).tag == "body"  # no title: nothing to go by
    root = parse_html(board(1, "").replace("<a href='/'>Forum</a>", "<h1>Forum</h1>")).root
    # a heading in the frame is not the page's title: the text's answer, not the header
    assert layout_main(root, root).tag == "footer"


def _title_rank_by_rank(scope):
    """The heading the region reads as the page's title, found one rank at a time."""
    from visdup.templates.region import _beside

    for level in range(1, 7):
        for heading in scope.iter(f"h{level}", f"H{level}"):
            if not _beside(heading):
                return heading
    return None


def test_the_title_is_the_first_heading_of_the_highest_rank_outside_the_frame() -> None:
    import random

    import lxml.html

    from visdup.templates.region import _title

    rng = random.Random(7)
    frames = ["nav", "aside", "header", "footer", "div", "section", "article", "main"]
    for _ in range(400):
        parts = []
        for _ in range(rng.randint(0, 8)):
            level = rng.randint(1, 6)
            tag = f"h{level}" if rng.random() < 0.8 else f"H{level}"
            heading = f"<{tag}>t{len(parts)}</{tag}>"
            for _ in range(rng.randint(0, 2)):
                wrap = rng.choice(frames)
                heading = f"<{wrap}>{heading}</{wrap}>"
            parts.append(heading)
        body = lxml.html.fromstring(f"<html><body>{''.join(parts)}<p>x</p></body></html>")
        body = body.find("body")
        expected = _title_rank_by_rank(body)
        assert _title(body) is expected
