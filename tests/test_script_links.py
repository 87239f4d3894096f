"""A script's link around paragraphs is text; a script's button and a real link are links.

The compiled paragraph walk and the Python walk read links alike (the weights and every
prune read their link characters).
"""

from __future__ import annotations

from visdup.content import extract
from visdup.content.blocks import _kernel, python_walk, walk
from visdup.page.parse import parse_html

PAGES = [
    "<html><body><a href='javascript:'><p>abc</p><p>def</p>ghi</a></body></html>",
    "<html><body><p>Share: <a href='javascript:share()'>Facebook</a> <a href=' JavaScript:x'>"
    "Twitter</a></p><a href='JAVASCRIPT:void(0)'><div>a card</div><span>x</span></a>"
    "<a href='/x'><p>a teaser</p></a><a>no href</a><a href='javascript'><p>t</p></a>"
    "<a href='\tjavascript:go()'><span><b>deep <i>i</i></b><br></span>tail</a></body></html>",
]


def _rows(body: object, fast: bool) -> list[tuple[str, int, int]]:
    walked = walk(body) if fast else python_walk(body)
    return [(b.text, b.link_chars, b.chars) for b in walked.blocks]


def test_the_compiled_walk_reads_script_links_as_python_does() -> None:
    for html in PAGES:
        root = parse_html(html).root
        body = root.find("body")
        assert _rows(body, True) == _rows(body, False)
        if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
            assert walk(body).rows is not None  # the compiled walk read it, no fallback
    rows = _rows(parse_html(PAGES[1]).root.find("body"), False)
    links = {text: link for text, link, _ in rows}
    assert links["Share: Facebook Twitter"] == len("FacebookTwitter")  # buttons are links
    assert links["a card"] == 0 and links["a teaser"] == len("ateaser")
    assert links["deep i"] == 0  # a <br> is a block: the link holds one


def test_a_page_inside_a_scripts_link_is_read() -> None:
    assert extract(PAGES[0]).text == "abc\n\ndef\n\nghi"
