"""Content shapes either side of running text: a thread's posts and a board's topic rows."""

from __future__ import annotations

from visdup.templates.layouts import LayoutClusterer
from visdup.templates.region import (
    SHAPE_SHARE,
    TEXT_SHAPE_SHARE,
    holds_paragraphs,
    shape_similarity,
    shapes_agree,
)
from visdup.templates.signature import page_layout

FRAME = (
    "<html><body class='forum'><header><a href='/'>Forum</a><nav><ul>"
    "<li><a href='/'>Forums</a></li><li><a href='/members'>Members</a></li>"
    "<li><a href='/login'>Log in</a></li></ul></nav></header>"
    "<div class='wrap'><div class='content'>"
    "<ol class='crumbs'><li><a href='/'>Forums</a></li><li><a href='/b/bikes'>Bikes</a></li></ol>"
    "{}</div></div><footer><div><h4>About</h4><ul><li><a href='/rules'>Rules</a></li>"
    "<li><a href='/faq'>Questions</a></li></ul></div><p>The forum, run by its members</p>"
    "</footer></body></html>"
)
SENTENCE = "The rear brake squeals in the rain after the new pads went in last week. "


def post(i: int, paragraphs: int) -> str:
    author = (
        f"<div class='author'><img src='/a/{i}.png'><a href='/u/{i}'>rider{i}</a>"
        "<span>Member</span></div>"
    )
    body = "".join(f"<p>{SENTENCE * (1 + (i + k) % 3)}</p>" for k in range(paragraphs))
    return f"<div class='post'>{author}<div class='body'>{body}</div></div>"


def thread(posts: int) -> str:
    items = "".join(post(i, 1 + i % 4) for i in range(posts))
    reply = "<form action='/reply'><textarea name='text'></textarea><button>Reply</button></form>"
    return FRAME.format(f"<h1>Squeaky brakes</h1><div class='posts'>{items}</div>{reply}")


def row(i: int) -> str:
    return (
        f"<div class='row'><div><a href='/t/{i}'>Brake pads for wet weather {i}</a>"
        f"<span>rider{i}</span></div><div>{i + 3}</div><div>{i * 7}</div></div>"
    )


def board(rows: int) -> str:
    items = "".join(row(i) for i in range(rows))
    pager = "<nav class='pager'><span>1</span><a href='?page=2'>2</a></nav>"
    return FRAME.format(
        f"<h1>Bikes</h1><a class='button' href='/new'>New topic</a>"
        f"<div class='list'>{items}</div>{pager}"
    )


def test_posts_hold_paragraphs_and_topic_rows_none() -> None:
    assert holds_paragraphs(page_layout(thread(1)).shape)
    assert holds_paragraphs(page_layout(thread(9)).shape)
    assert not holds_paragraphs(page_layout(board(2)).shape)
    assert not holds_paragraphs(page_layout(board(9)).shape)


def test_a_thread_and_a_board_are_two_templates() -> None:
    posts, rows = page_layout(thread(5)).shape, page_layout(board(5)).shape
    # as shapes alone they would pass the gate: only the line of running text parts them
    assert SHAPE_SHARE <= shape_similarity(posts, rows) < TEXT_SHAPE_SHARE
    assert not shapes_agree(posts, rows)
    threads = [page_layout(thread(n)) for n in (1, 2, 5, 12)]
    boards = [page_layout(board(n)) for n in (3, 6, 9)]
    clusterer = LayoutClusterer()
    for layout in threads + boards:
        clusterer.add(layout)
    assert len({clusterer.cluster_of(t.key) for t in threads}) == 1
    assert len({clusterer.cluster_of(b.key) for b in boards}) == 1
    assert clusterer.cluster_of(threads[0].key) != clusterer.cluster_of(boards[0].key)


def test_close_shapes_agree_across_the_line() -> None:
    # a gallery article and a text article of one design: one shape node apart
    gallery, text = "@0div,1article,2div,3div", "@0div,1article,2div,3p"
    assert holds_paragraphs(text) and not holds_paragraphs(gallery)
    assert shape_similarity(gallery, text) >= TEXT_SHAPE_SHARE
    assert shapes_agree(gallery, text)


def test_the_gate_never_asks_more_than_the_threshold() -> None:
    clusterer = LayoutClusterer(threshold=0.0)
    for html in (thread(4), board(4)):
        clusterer.add(page_layout(html))
    assert len(clusterer.clusters()) == 1
