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
