"""A page's layout signature: the skeleton around its content, small and bounded.

Template clusters should mean page *layouts*. Whole DOM trees measure how much content two
pages share (two pages of one layout with long, different bodies look unrelated) and cost
time in proportion to the body. The signature keeps what a layout is made of:

- the element skeleton outside the main content (header, navigation, sidebars, footer);
- the content region (the main content, widened the same way on every page:
  :func:`layout_main`) followed down its text spine (:func:`spine_path`) to where its text
  spreads out; only that end is a stub, and what stands beside the spine keeps two levels, so
  the frame around an article (its header, comments, the links to the next post, a list's
  pagination, a sidebar inside the page's wrapper) stays in the signature while the
  article's own flow of paragraphs does not: a stub keeps each kind of child once;
- runs of equal siblings collapsed to one (the visual term's horizontal compression, without
  the count): a table of 3 rows and one of 30 rows, a menu of 5 or 7 entries, look alike;
- depth below ``<body>`` capped, and the whole cut to ``max_nodes`` nodes.

Labels are tag names: class names carry page state in real sites (``current``, ``active``,
the page's own slug), which splits one layout into many. The choice is measured in
``bench/bench_cluster.py`` (README, "Template signatures"). One place where a class name
does mean the template is ``<body>``: content systems name the page's template there
(:func:`body_marks`), and two pages whose marks disagree (:func:`marks_agree`) are never
linked, however alike their skeletons. Nor are two pages whose frame around the content (the
region's spine and what stands beside it) meets its heading levels in another order
(:attr:`Layout.outline`, :func:`outlines_agree`): a title, a sub-heading and a signature line
against a title and a signature line with its sub-headings below. The blocks around the
content's container (a top bar, a sidebar, the wrappers: :func:`region_frame`) are read
apart as well, and two signatures' similarity is weighed by theirs: a redesign's frame is a
few nodes of a signature mostly made of the article's own furniture.

This module reads a page's signature: the content region and its spine here, the skeleton
from the compiled walk or :mod:`visdup.templates.skeleton`'s, the marks from
:mod:`visdup.templates.marks`. The signature itself, a :class:`Layout` with its key, and how
two compare are :mod:`visdup.templates.layout`'s. The names of all four are imported from
here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lxml import etree

from visdup._native import kernel
from visdup.templates.dom_walk import tag_name
from visdup.templates.layout import (
    OUTLINE_MARK,
    SIGNATURE_VERSION,
    Layout,
    layout_key,
    make_layout,
    may_link,
    outlines_agree,
    similarity,
    similarity_bound,
    similarity_bounds,
)
from visdup.templates.marks import MARKS_SHARE, MARKS_SWAP, MAX_MARKS, body_marks, marks_agree
from visdup.templates.region import (
    container_and_title,
    in_frame,
    region_frame,
    region_shape,
    shapes_agree,
    title_holder,
)
from visdup.templates.skeleton import (
    DEFAULT_DEPTH,
    DEFAULT_MAX_NODES,
    DEFAULT_STUB_DEPTH,
    MAIN,
    OFF_SPINE_DEPTH,
    SKIP,
    SKIP_SET,
    SkeletonWalk,
    made,
)
from visdup.templates.stm import FlatTree, PackedTree

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_MAX_NODES",
    "DEFAULT_STUB_DEPTH",
    "GROW_SHARE",
    "LIST_ITEMS",
    "MAIN",
    "MARKS_SHARE",
    "MARKS_SWAP",
    "MAX_MARKS",
    "MAX_STUB_DEPTH",
    "OFF_SPINE_DEPTH",
    "OUTLINE_MARK",
    "SIGNATURE_VERSION",
    "SPINE_BUDGET",
    "SPINE_SHARE",
    "STRAY_SHARE",
    "TEXT_SHARE",
    "Layout",
    "TemplateInput",
    "TextLengths",
    "body_marks",
    "layout_key",
    "layout_main",
    "layout_signature",
    "make_layout",
    "marked",
    "marks_agree",
    "may_link",
    "outlines_agree",
    "page_input",
    "page_layout",
    "page_layout_of",
    "shapes_agree",
    "similarity",
    "similarity_bound",
    "similarity_bounds",
    "spine_depth",
    "spine_path",
    "stub_depth",
]

#: The text spine goes this far below the region at most (:func:`spine_path`).
MAX_STUB_DEPTH = 8
#: A child on the text spine holds at least this share of its parent's text.
SPINE_SHARE = 0.5


#: A main-content node with this many equal siblings (tag and class) is one item of a list:
#: the list is the content.
LIST_ITEMS = 3
#: The content region grows to its parent while it holds this share of the parent's text.
GROW_SHARE = 0.4
#: A main-content node with less than this share of the page's text is a stray pick...
STRAY_SHARE = 0.3
#: ... replaced by the smallest element holding this share of the page's text.
TEXT_SHARE = 0.5


_TEXT_LENGTH = etree.XPath("string-length(normalize-space(.))")


#: The compiled walks (``visdup._native._dom``): its text_length counts what the XPath
#: below counts, without building the element's text.
_kernel = kernel("_dom")


def _text_length(el: Any) -> int:
    """Visible characters under an element (whitespace runs count once; computed by lxml).

    It reads the element's whole subtree: :func:`layout_main` asks it as few times as it can.
    """
    if _kernel is not None and (length := _kernel.text_length(el)) >= 0:
        return int(length)
    try:
        return int(_TEXT_LENGTH(el))
    except Exception:  # an element lxml cannot evaluate on (a detached proxy): no text
        return 0


class TextLengths(dict[Any, int]):
    """:func:`_text_length` of each element asked, read once: the region and the spine ask
    for the same large subtrees (the body, the region itself).

    Given the page's ``root``, the compiled walk measures every element under it at once
    (about thirty elements asked a page read its text six times over, one by one): read it
    before the tree changes.
    """

    def __init__(self, root: Any = None):
        super().__init__()
        self._table = (
            _kernel.text_lengths(root)
            if root is not None and _kernel is not None and hasattr(_kernel, "text_lengths")
            else None
        )

    def __missing__(self, el: Any) -> int:
        length = -1
        if self._table is not None and _kernel is not None:
            length = _kernel.text_length_of(self._table, el)
        if length < 0:  # not under the root, or one for XPath
            length = _text_length(el)
        self[el] = length
        return length


def _same_kind(a: Any, b: Any) -> bool:
    return a.tag == b.tag and (a.get("class") or "") == (b.get("class") or "")


def _in_list(node: Any, parent: Any) -> bool:
    """Whether ``node`` is one item of a list under ``parent``: LIST_ITEMS of its kind."""
    return sum(1 for k in parent if isinstance(k.tag, str) and _same_kind(k, node)) >= LIST_ITEMS


def layout_main(root: Any, main: Any, lengths: TextLengths | None = None) -> Any:
    """The content region of a page for its signature: the main content, made stable.

    The main-content finder answers "where is the article", and on pages of one layout it may
    pick the whole content column on one page, one list item or a search box on another; a
    signature that stubs different regions splits one layout. So the region is widened the
    same way on every page: the whole page, or a region with little of the page's text
    (:data:`STRAY_SHARE`), gives way to the smallest element holding half of it; from one item
    of a list to the list; then up while the region holds a good part (:data:`GROW_SHARE`) of
    its parent's text.

    A short page (a board's last page of one or two rows, a login form) holds less text than
    its menus and footer, and half of its text is in no child of ``<body>``, or in the footer.
    There the region is the child of ``<body>`` holding the page's title
    (:func:`visdup.templates.region.title_holder`): a page of that layout with more records
    has much of its text there, and its region goes up to that child as well.

    Each text length reads a subtree, so none is read twice, and a region that holds
    :data:`GROW_SHARE` of the whole page's text goes up to the top at once: no ancestor below
    ``<body>`` holds more text than the page, so every step of the growth would pass.
    """
    if root is None or main is None:
        return main
    lengths = lengths if lengths is not None else TextLengths()
    body = root
    if tag_name(root) == "html":
        body = next((c for c in root if tag_name(c) == "body"), root)
    node = main
    page = lengths[body]
    mine = -1  # the region's text length, -1: not read yet
    if page:
        stray = node is body or node is root
        if not stray:
            mine = lengths[node]
            stray = mine < STRAY_SHARE * page
        if stray:  # no region, or a stray one: the smallest element with half the text
            node, mine = body, page
            while True:
                for k in node:
                    if isinstance(k.tag, str) and tag_name(k) not in SKIP:
                        length = lengths[k]
                        if length >= TEXT_SHARE * page:
                            node, mine = k, length
                            break
                else:
                    break
            if node is body or in_frame(node):  # a short page: where its title is
                held = title_holder(body)
                if held is not None:
                    node, mine = held, lengths[held]
    while node is not body and node is not root:  # an item of a list: the list
        parent = node.getparent()
        if parent is None or parent is body:
            break
        if not _in_list(node, parent):
            break
        node, mine = parent, -1
    if mine < 0:
        mine = lengths[node]
    if page and mine >= GROW_SHARE * page:
        while node is not body and node is not root:
            parent = node.getparent()
            if parent is None or parent is body or parent is root:
                break
            node = parent
        return node
    while node is not body and node is not root:  # grow while it is much of its parent's text
        parent = node.getparent()
        if parent is None or parent is body or parent is root:
            break
        theirs = lengths[parent]
        if theirs == 0 or mine < GROW_SHARE * theirs:
            break
        node, mine = parent, theirs
    return node


#: Children whose text :func:`spine_depth` measures at most: a page of 200,000 siblings, or
#: of millions of tiny elements, costs what a normal page does.
SPINE_BUDGET = DEFAULT_MAX_NODES * 8


def _toward(region: Any, main: Any, cap: int) -> list[Any]:
    """The elements from below ``region`` down to the finder's pick ``main`` (an item of a
    list: the list), at most ``cap``; empty when ``main`` is not inside ``region``."""
    if main is None or main is region:
        return []
    parent = main.getparent()
    if parent is not None and _in_list(main, parent):
        main = parent  # the region itself, when it is the list: no step toward it
    chain = []
    node = main
    while node is not None and node is not region:
        chain.append(node)
        node = node.getparent()
    if node is None:
        return []  # not inside the region (a stray pick the region replaced)
    chain.reverse()
    return chain[:cap]


def spine_path(
    region: Any,
    *,
    share: float = SPINE_SHARE,
    cap: int = MAX_STUB_DEPTH,
    budget: int = SPINE_BUDGET,
    toward: Any = None,
    lengths: TextLengths | None = None,
) -> list[Any]:
    """The content region's text spine: the region, the child holding ``share`` of its text,
    then that child's child holding that share of its own, until the text spreads over
    siblings (empty: no region apart from the page).

    Widening makes the region stable and often makes it the page's whole wrapper (on most
    sites the article holds enough of the page's text to reach the top). The spine goes back
    down to the article's own container (an entry's content, a list of entries, a section),
    the same on every page of a layout whichever node the finder picked.

    ``toward``: the finder's pick. Inside the region, the spine first goes down to it (to its
    list, when it is an item of one), then on by text: on a short page a menu of the whole
    site holds more text than the article, and a spine by text alone went into the menu there
    and into the article elsewhere (a Furo manual: 110 and 77 pages of one layout, 181 of 205
    in one template since). The finder weighs links down; text alone does not.
    """
    if region is None or tag_name(region) in ("html", "body"):
        return []  # no region apart from the page: the signature keeps its whole skeleton
    lengths = lengths if lengths is not None else TextLengths()
    path = [region, *_toward(region, toward, cap)]
    node = path[-1]
    mine = lengths[node]
    while mine and len(path) <= cap and budget > 0:
        need = share * mine
        nxt = None
        left = mine  # text still to be found among the children: none can hold more
        length = 0
        for child in node:
            if left < need:
                break
            tag = tag_name(child)
            if tag is None or tag in SKIP:
                continue
            budget -= 1
            if budget < 0:
                break  # measured enough: the spine ends here
            length = lengths[child]
            if length >= need:
                nxt = child
                break
            left -= length
        if nxt is None:
            break
        path.append(nxt)
        node, mine = nxt, length
    return path


def spine_depth(
    region: Any,
    *,
    share: float = SPINE_SHARE,
    cap: int = MAX_STUB_DEPTH,
    budget: int = SPINE_BUDGET,
) -> int:
    """Levels from the content region down its text spine (:func:`spine_path`)."""
    return max(0, len(spine_path(region, share=share, cap=cap, budget=budget)) - 1)


def layout_signature(
    root: Any,
    main: Any = None,
    *,
    depth: int = DEFAULT_DEPTH,
    stub_depth: int = DEFAULT_STUB_DEPTH,
    max_nodes: int = DEFAULT_MAX_NODES,
    mode: str = "tag",
    stub_mode: str | None = None,
    spine: Sequence[Any] | None = None,
    off_spine: int = OFF_SPINE_DEPTH,
) -> Layout:
    """The layout signature of a parsed page (an lxml element); ``main``: its main content.

    Without ``spine`` the main content is a stub of ``stub_depth`` levels. With ``spine`` (the
    region's :func:`spine_path`, ``main`` first) only the spine's last element, the article's
    own container, is a stub, ``stub_depth`` levels below ``main`` (one below that element at
    least); elements on the spine keep the page's depth, and those beside it inside the region
    (a sidebar, a header, comments) keep ``off_spine`` levels. In those stubs a child equal to
    any earlier one is left out, not only one equal to the child before it: a post's
    paragraphs, figures and lists read as the kinds they are, in the order each first
    appears, however many of each there are.

    ``mode`` says what labels a node: ``tag``, ``id`` (tag#id for ids without digits) or
    ``class`` (tag.classes); measured, tags alone win. The page is only read. Elements below
    ``depth`` levels are not visited: the cost is that of the skeleton, not of the page.
    """
    if root is None:
        return make_layout((), ())
    start = root
    if tag_name(root) == "html":
        for child in root:
            if tag_name(child) == "body":
                start = child
                break
    if main is start or main is root:
        main = None  # no content apart from the page: a stub would hide the whole layout
    followed, end_stub = _followed_spine(main, spine, stub_depth)
    budget = max_nodes * 8  # elements visited at most: hostile pages cannot make this slow
    root_label = tag_name(start) or "body"
    if _kernel is not None and mode == "tag" and stub_mode is None and _kernel.DOM_WALK:
        walked = _kernel.layout_walk(
            start,
            root_label,
            main,
            list(followed) if followed else None,
            depth,
            stub_depth,
            end_stub,
            off_spine,
            budget,
            SKIP_SET,
            MAIN,
        )
        if walked is not None:
            labels, sizes, frames = walked
            return _shaped(made(labels, sizes, frames, max_nodes), followed or _alone(main), start)
    walk = SkeletonWalk(
        main,
        followed,
        stub_depth=stub_depth,
        end_stub=end_stub,
        off_spine=off_spine,
        mode=mode,
        stub_mode=stub_mode,
    )
    labels, sizes, frames = walk.run(start, root_label, depth, budget)
    return _shaped(made(labels, sizes, frames, max_nodes), followed or _alone(main), start)


def _alone(main: Any) -> list[Any]:
    """The spine of a region that is one stub: the region alone."""
    return [main] if main is not None else []


def _shaped(layout: Layout, spine: Sequence[Any], body: Any) -> Layout:
    """``layout`` with the shape of its content region's container
    (:mod:`visdup.templates.region`)."""
    container, title, scope = container_and_title(spine, body)
    shape = region_shape(container)
    frame = region_frame(container, body, (title, scope))
    if not shape and not frame:
        return layout
    return make_layout(layout.labels, layout.sizes, layout.marks, layout.outline, shape, frame)


def _followed_spine(
    main: Any, spine: Sequence[Any] | None, stub_depth: int
) -> tuple[Sequence[Any], int]:
    """The spine the walk follows (empty: the region is one stub) and the stub depth of its
    end: ``stub_depth`` levels below ``main`` in all, one below the spine's end at least."""
    if main is not None and spine and spine[0] is main:
        return spine, max(1, stub_depth - (len(spine) - 1))
    return (), stub_depth


def page_layout_of(root: Any, main: Any, url: str | None = None) -> Layout:
    """The layout signature of a parsed page whose main content is ``main`` (None: unknown),
    with the marks of its ``<body>`` (``url``: the page's, see :func:`body_marks`).

    Read the page before main content is pruned (:func:`visdup.content.main_content`'s
    ``chosen``): pruning inside a content region that is most of the page takes its skeleton.
    """
    lengths = TextLengths(root)
    region = layout_main(root, main, lengths)
    spine = spine_path(region, toward=main, lengths=lengths)
    return marked(layout_signature(root, region, spine=spine), root, url)


def marked(layout: Layout, root: Any, url: str | None) -> Layout:
    """``layout`` with the marks of the page's ``<body>`` (:func:`body_marks`)."""
    marks = body_marks(root, url)
    if not marks:
        return layout
    return make_layout(
        layout.labels, layout.sizes, marks, layout.outline, layout.shape, layout.frame
    )


def stub_depth(region: Any) -> int:
    """Levels of a whole-region stub down its text spine, two at least: the signature before
    only the spine's end was a stub, kept for ``bench/bench_cluster.py``'s comparison."""
    return max(DEFAULT_STUB_DEPTH, spine_depth(region))


@dataclass(frozen=True, slots=True)
class TemplateInput:
    """What the template step takes from a page: its layout and, for templates, its DOM tree
    (without invisible nodes, read before main content prunes it)."""

    layout: Layout
    tree: FlatTree | PackedTree | None = None
    #: The page's main content as text (its record's ``main_text``).
    text: str | None = None
    #: The page's own title (its ``<title>``): the template's title field reads the same.
    title: str | None = None


def page_input(html: bytes | str, *, url: str | None = None, tree: bool = True) -> TemplateInput:
    """Parse a page and give what a crawl's template step gets: its signature and DOM tree.

    For page files and stored bodies (batch clustering, tests). Unusable input gives the
    empty signature and no tree.
    """
    from visdup.content import main_content
    from visdup.content.visibility import titled_and_cleaned
    from visdup.page.parse import parse_html
    from visdup.templates.stm import dom_tree

    doc = parse_html(html, url=url)
    if doc.root is None:
        return TemplateInput(make_layout((), ()))
    title = titled_and_cleaned(doc.root)
    dom = dom_tree(doc.root) if tree else None
    root = doc.root
    layouts: list[Layout] = []
    found = main_content(
        root,
        cleaned=True,
        title=title,
        chosen=lambda node: layouts.append(page_layout_of(root, node, url)),
    )
    layout = layouts[0] if layouts else page_layout_of(root, found.node, url)
    return TemplateInput(layout, dom, found.text, title)


def page_layout(html: bytes | str, *, url: str | None = None) -> Layout:
    """The layout signature of a page given as bytes or text (see :func:`page_input`)."""
    return page_input(html, url=url, tree=False).layout
