"""The shape of a page's content: what kind of region its layout puts in the middle.

The layout signature is mostly frame (header, menus, sidebars, footer: some thirty nodes on a
small site) and its content region is a stub of a few nodes, so a shop's info page (a title,
paragraphs, a sub-heading) and its category listing (a title, a grid of cards, a pager)
differ by two nodes of thirty: 0.9 similar, one template at any threshold that keeps a
manual's pages together. What the region holds is the page type: records in a grid, prose,
a form. Compared on its own, as a second key with its own gate (:func:`shapes_agree`), it
keeps page types apart that the whole signature cannot, without a threshold per site. Two
shapes either side of running text (one holds paragraphs, the other none) must be closer
than two on one side: a forum thread's posts and a board's topic rows differ in little else
when both are ``div`` records.

The shape is read from the region's *container*: the element of the region's text spine
that holds the region's title (its first heading of the highest rank), so that the spine
going one step further on one page (into a long introduction, into the grid itself) than on
another does not move it. Below the container the shape keeps :data:`SHAPE_DEPTH` levels,
by tag, each kind of child once in the order it first appears (as the signature's stubs do):
a listing of three cards and one of twelve, a post of two paragraphs and one of forty, have
one shape.

What stands *around* the container is the page's frame (:func:`region_frame`): the blocks
beside each element from ``<body>`` down to it, two levels each (a top bar, the header, a
sidebar, the footer). In the signature it is a few nodes among many (an article's own
furniture, its header, figures and related links, outweighs it), so a redesign that adds a
top bar or drops a sidebar changes a few nodes of forty; :func:`frame_similarity` compares
frames alone, and :func:`visdup.templates.layout.similarity` weighs the signature by it.

Stored in the root label of a signature as one token (:data:`SHAPE_MARK`, then the shape's
nodes in preorder as ``depth`` + ``tag``): every node has a digit, so no mark of ``<body>``
(:func:`visdup.templates.marks.body_marks`, never a digit) reads as one. The frame's token
is stored the same way after :data:`FRAME_MARK`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from visdup.templates.dom_walk import HEADING_LEVELS, SKIP, tag_name
from visdup.templates.flat_tree import FlatTree
from visdup.templates.stm import stm

#: Levels kept below the container.
SHAPE_DEPTH = 3
#: Nodes a shape keeps at most (a preorder prefix).
SHAPE_NODES = 48
#: Two shapes this similar (2·STM/(n1+n2)) may share a template...
SHAPE_SHARE = 0.6
#: ... and this similar when one holds paragraphs and the other none (:func:`shapes_agree`).
TEXT_SHAPE_SHARE = 0.7
#: Starts the shape's token in a stored root label.
SHAPE_MARK = "@"
#: Elements a shape leaves out: they carry no layout, or stand beside the content
#: (a sidebar or a menu inside the content column).
_LEFT_OUT = SKIP | {"aside", "header", "footer"}


def _title(scope: Any) -> Any:
    """The first heading of the highest rank in ``scope`` outside the page's frame (its
    header, footer, sidebars, menus); None: none.

    One walk of ``scope`` finds its headings, rank by rank in document order: a page whose
    headings all stand in its frame, or that has no ``<h1>``, is not walked once a rank.
    """
    ranks: list[list[Any]] = [[] for _ in range(6)]
    for heading in scope.iter(*_HEADINGS):
        ranks[int(heading.tag[1]) - 1].append(heading)
        if heading.tag in _TOP and not _beside(heading):
            return heading  # the first <h1> outside the frame: no other can come before it
    for found in ranks[1:]:
        for heading in found:
            if not _beside(heading):
                return heading
    return None


_HEADINGS = tuple(f"{h}{level}" for level in range(1, 7) for h in ("h", "H"))
_TOP = frozenset(("h1", "H1"))


def _beside(el: Any) -> bool:
    """Whether ``el`` stands in the page's frame: a menu, a sidebar, or a header or footer
    outside any article (an article's own header holds its title)."""
    for a in el.iterancestors():
        tag = tag_name(a)
        if tag in ("nav", "aside"):
            return True
        if tag in ("header", "footer"):
            return not any(tag_name(b) in ("article", "main") for b in a.iterancestors())
    return False


def in_frame(el: Any) -> bool:
    """Whether ``el`` is, or stands in, the page's frame (:func:`_beside`): a header, footer,
    menu or sidebar holds no content region."""
    return tag_name(el) in _BESIDE or _beside(el)


def title_holder(body: Any) -> Any:
    """The child of ``body`` holding the page's title (:func:`_title`), outside the frame;
    None: no title, a title straight under ``body``, or one in the frame."""
    title = _title(body)
    if title is None:
        return None
    holder = title
    for parent in title.iterancestors():
        if parent is body:
            break
        holder = parent
    else:
        return None  # not under body
    return None if holder is title or in_frame(holder) else holder


def container_and_title(spine: Sequence[Any], body: Any = None) -> tuple[Any, Any, Any]:
    """The element of the region's spine (``spine[0]``: the region) holding the region's
    title (:func:`_title`), the deepest spine element with it inside, through wrappers of
    one element; the spine's end when the region has no title.

    Without a spine, or with a region in the page's frame (a short page, whose menus hold
    more text than its content), the title's own parent, raised past wrappers of the title
    alone: on the pages where the spine finds it, that is where the spine stops. None: no
    title either (``body``: where to look for one).

    With the container, the title and the element it was looked for in (None: nowhere),
    which :func:`region_frame` reads again where it can.
    """
    region = spine[0] if spine else None
    if region is not None and (tag_name(region) in _BESIDE or _beside(region)):
        region = None
    scope = region if region is not None else body
    title = _title(scope) if scope is not None else None
    if region is None:
        if title is None:
            return None, None, scope
        container = title.getparent()
        while container is not None and len(_kids(container)) <= 1:
            container = container.getparent()
        if container is None or tag_name(container) in ("body", "html"):
            container = None
        return container, title, scope
    if title is None:
        return spine[-1], None, scope
    # By id, holding the elements: an lxml element's proxy, once dropped, may leave its id
    # to another element's, and what is "above" would depend on what was parsed before.
    above = {id(el): el for el in (title, *title.iterancestors())}
    container = region
    for el in spine[1:]:
        if id(el) not in above:  # the spine goes on beside the title
            container = _settled(_title_branch(container, title, above), title, above)
            return container, title, scope
        container = el
    return _settled(container, title, above), title, scope


def _settled(container: Any, title: Any, above: dict[int, Any]) -> Any:
    """``container`` past the title itself and past wrappers of one element."""
    if tag_name(container) in HEADING_LEVELS:  # the spine went into the title itself
        container = container.getparent()
    while True:  # a wrapper of one element: the element (one level less on some pages)
        kids = _kids(container)
        if len(kids) != 1 or kids[0] is title or id(kids[0]) not in above:
            break
        container = kids[0]
    return _holder(container)


def _holder(container: Any) -> Any:
    """What holds an ``<article>``: one record, whose page type is told by what holds it
    (a post's page one, an archive several, a day's archive of one post one as well)."""
    if tag_name(container) != "article":
        return container
    parent = container.getparent()
    if parent is None or tag_name(parent) in ("body", "html") or _beside(container):
        return container
    return parent


def _title_branch(container: Any, title: Any, above: dict[int, Any]) -> Any:
    """The child of ``container`` holding the title, where the spine went into another
    child: when that child has text of its own (:data:`_OWN_TEXT`, not just the title and
    its byline) and no other child holds a heading of the title's rank (records of a list
    all do), it is the content, and the spine went into what stands after it (related
    products, a list of links) because its text was short on this page."""
    branch = next((k for k in container if id(k) in above), None)
    if branch is None or branch is title or tag_name(branch) in ("header", "hgroup"):
        return container
    rank = HEADING_LEVELS.get(tag_name(title) or "", 6)
    tags = [t for h, level in HEADING_LEVELS.items() if level <= rank for t in (h, h.upper())]
    for kid in container:
        if (
            kid is not branch
            and tag_name(kid) is not None
            and next(kid.iter(*tags), None) is not None
        ):
            return container
    own = _text_length(branch) - _text_length(title)
    return branch if own >= _OWN_TEXT else container


def _text_length(el: Any) -> int:
    return sum(len(t.strip()) for t in el.itertext())


#: Characters of text beside its title that make a branch content, not a heading block.
_OWN_TEXT = 200


def _prose(el: Any, kids: list[Any]) -> bool:
    """Whether ``el`` (its children ``kids``: :func:`_kids`) is prose: paragraphs among text
    blocks only (sub-headings, figures, quotes, lists of text), or paragraphs half of its
    element children at least. What else stands among them follows the text, not the
    layout."""
    paragraphs = sum(1 for k in kids if tag_name(k) == "p")
    if not paragraphs:
        return False
    return 2 * paragraphs >= len(kids) or all(_flows(k) for k in kids)


#: Elements that stand in a run of text: a post's sub-headings, figures, quotes, code.
_FLOW = frozenset(
    {
        "p", "h2", "h3", "h4", "h5", "h6", "figure", "blockquote", "pre", "table", "dl", "hr",
        "img", "picture", "video", "audio", "a", "span", "em", "strong", "b", "i", "code",
    }
)  # fmt: skip
#: Elements inside a line of text.
_INLINE = frozenset(
    {"a", "span", "em", "strong", "b", "i", "u", "s", "code", "small", "sup", "sub", "mark",
     "abbr", "time", "cite", "q", "kbd", "img", "picture", "source"}
)  # fmt: skip


def _flows(el: Any) -> bool:
    """Whether ``el`` stands in a run of text (:data:`_FLOW`, or a list of lines of text,
    not of records)."""
    tag = tag_name(el)
    if tag in _FLOW:
        return True
    if tag not in ("ul", "ol"):
        return False
    return all(
        tag_name(k) is None or all(tag_name(i) in _INLINE for i in k if tag_name(i) is not None)
        for k in el
    )


def _kids(el: Any) -> list[Any]:
    return [k for k in el if _label(k) is not None and not _link_list(k)]


#: Blocks of text: what is inside them (links, emphasis) follows the text, not the layout.
_TEXT_BLOCKS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "figcaption", "dd", "td", "th"}
)
#: A container inside one of these is no content region.
_BESIDE = frozenset({"header", "footer", "aside", "nav"})


def _link_list(el: Any) -> bool:
    """Whether ``el`` is a list of bare links (a breadcrumb trail, a menu, a table of
    contents): navigation standing in the content, not what the content is made of."""
    if tag_name(el) not in ("ul", "ol"):
        return False
    items = 0
    for li in el:
        tag = tag_name(li)
        if tag is None:
            continue
        inner = [k for k in li if tag_name(k) is not None]
        if tag != "li" or len(inner) != 1 or tag_name(inner[0]) != "a":
            return False
        items += 1
    return items > 0


def _label(el: Any) -> str | None:
    """A child's label in a shape (None: left out), by its tag as parsed."""
    tag = el.tag
    try:
        return _LABELS[tag]
    except KeyError:
        pass
    name = tag_name(el)
    label = None if name is None or name in _LEFT_OUT else "".join(filter(str.isalnum, name))
    label = "x" if label == "" else label
    if len(_LABELS) < _LABELS_KEPT:  # a page of endless made-up tags grows it no further
        _LABELS[tag] = label
    return label


#: Labels of the tags met so far (a page's tags are few, and met on every page).
_LABELS: dict[Any, str | None] = {}
_LABELS_KEPT = 4096


def region_shape(container: Any) -> str:
    """The shape token of a content container (empty: none)."""
    if container is None:
        return ""
    label = _label(container)
    if label is None:
        return ""
    nodes: list[str] = []
    _shape([container], label, 0, nodes)
    return SHAPE_MARK + ",".join(nodes[:SHAPE_NODES])


def _shape(els: list[Any], label: str, depth: int, out: list[str]) -> None:
    """Append the compressed subtree of ``els`` (siblings of one kind, as one node) to
    ``out`` (``depth`` + tag per node). Siblings of one kind are merged, children by kind in
    the order they first appear: a list's records, whichever comes first, give one shape,
    and a post's thumbnail beside its text is one ``div`` with both."""
    out.append(f"{depth}{label}")
    every: list[list[Any]] = []
    for el in els:  # each element's children read once, for the prose test and the kinds
        kids = _kids(el)
        if _prose(el, kids):  # paragraphs, whatever stands among them: prose
            out.append(f"{depth + 1}p")
            return
        every.append(kids)
    if depth >= SHAPE_DEPTH or label in _TEXT_BLOCKS:
        return
    kinds: dict[str, list[Any]] = {}
    for kids in every:
        for child in kids:
            kinds.setdefault(_label(child), []).append(child)  # type: ignore[arg-type]
    for child_label, group in kinds.items():
        if len(out) >= SHAPE_NODES:
            break
        _shape(group, child_label, depth + 1, out)


def _items(token: str) -> list[tuple[int, str]]:
    """A shape's or frame's nodes in preorder, as (depth, label): each item of the token is
    its depth's digits, then its label (a label may hold digits itself: ``3h1``)."""
    items = token[1:].split(",") if token else []  # past SHAPE_MARK or FRAME_MARK
    out = []
    for item in items:
        digits = 0
        while digits < len(item) and item[digits].isdigit():
            digits += 1
        out.append((int(item[:digits] or 0), item[digits:]))
    return out


@lru_cache(maxsize=4096)
def _depths(token: str) -> tuple[int, ...]:
    """The depth of each node of a shape or frame token, in preorder."""
    return tuple(depth for depth, _label in _items(token))


@lru_cache(maxsize=4096)
def _tree(shape: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A shape (or frame) token as a flat preorder tree (labels, subtree sizes)."""
    items = _items(shape)
    depths = [depth for depth, _label in items]
    labels = [label for _depth, label in items]
    sizes = [1] * len(labels)
    stack: list[int] = []
    for i, d in enumerate(depths):
        while stack and depths[stack[-1]] >= d:
            stack.pop()
        for j in stack:
            sizes[j] += 1
        stack.append(i)
    return tuple(labels), tuple(sizes)


@lru_cache(maxsize=4096)
def _flat(shape: str) -> FlatTree:
    """A shape as a tree STM reads, made once: a crawl compares each shape with many."""
    return FlatTree(*_tree(shape))


@lru_cache(maxsize=65536)
def shape_similarity(a: str, b: str) -> float:
    """``2·STM/(n1+n2)`` of two shapes (1.0: equal, or one is unknown)."""
    if a == b or not a or not b:
        return 1.0
    ta, tb = _flat(a), _flat(b)
    total = ta.nodes + tb.nodes
    if not total:
        return 1.0
    common = stm(ta, tb, max_nodes=max(ta.nodes, tb.nodes, 1))
    return 2.0 * common / total


def shapes_agree(
    a: str, b: str, share: float = SHAPE_SHARE, text_share: float = TEXT_SHAPE_SHARE
) -> bool:
    """Whether two pages' content shapes allow them one template: ``share`` similar, or
    ``text_share`` when one of them holds paragraphs (:func:`holds_paragraphs`) and the
    other none.

    Whether a region holds running text tells records of text from records of links: a
    forum thread's posts (an author block beside a body of paragraphs) and a board's topic
    rows (a link and a few figures) are both ``div`` records under a title, and as shapes
    they differ in the paragraphs alone. A page type does cross that line at times (a news
    gallery among text articles, a class without documentation): its shapes then agree
    closely in the rest, or its other pages link it (clusters are single-link), so the line
    raises the bar, it does not forbid.
    """
    similar = shape_similarity(a, b)
    if similar < share:
        return False
    return similar >= text_share or holds_paragraphs(a) == holds_paragraphs(b)


@lru_cache(maxsize=4096)
def holds_paragraphs(shape: str) -> bool:
    """Whether a shape holds a paragraph: a run of prose, or a ``<p>`` among other
    elements."""
    return "p" in _tree(shape)[0]


def is_shape(token: str) -> bool:
    """Whether a token of a stored root label is a shape (:data:`SHAPE_MARK`, digits)."""
    return token.startswith(SHAPE_MARK) and any(c.isdigit() for c in token)


#: Nodes a frame keeps at most (a preorder prefix).
FRAME_NODES = 64
#: Starts the frame's token in a stored root label.
FRAME_MARK = "%"
#: The container's label in a frame: what is inside it is the shape's.
_CONTAINER = "*"


def region_frame(container: Any, body: Any, known: tuple[Any, Any] | None = None) -> str:
    """The frame token of a page: the blocks around its content container (empty: none).

    From ``<body>`` down to the container, each element on the way keeps its children: the
    one on the way (the container itself as :data:`_CONTAINER`: what is inside is the
    shape's), and each other as a block of two levels (its tag, its children's tags each
    once), runs of equal blocks as one. An article's inside is content, never frame: a
    container inside an ``<article>`` counts from what holds the article. Beside the
    container, a block holding a heading of the title's rank is more of the content (the
    next section of a manual's page, another record), not frame, and is left out.

    ``known``: a title already looked for and where (:func:`container_and_title`), taken
    instead of a walk when it must be the same (:func:`_title_known`).
    """
    if container is None or body is None:
        return ""
    chain = [container]
    for parent in container.iterancestors():
        if parent is body:
            break
        chain.append(parent)
    else:
        return ""  # not under body
    for i in range(len(chain) - 1, 0, -1):  # the outermost article: what holds it
        if tag_name(chain[i]) == "article":
            held = _holder(chain[i])
            chain = chain[chain.index(held) :] if held in chain else chain[i:]
            break
    chain.append(body)
    chain.reverse()
    title = _title_known(chain[-1], known)
    if title is _UNKNOWN:
        title = _title(chain[-1])
    rank = HEADING_LEVELS.get(tag_name(title) or "", 0) if title is not None else 0
    ranks = [t for h, level in HEADING_LEVELS.items() if level <= rank for t in (h, h.upper())]
    nodes: list[str] = []
    _frame(chain, 0, ranks, nodes)
    return FRAME_MARK + ",".join(nodes[:FRAME_NODES])


#: What :func:`_title_known` answers when it cannot tell.
_UNKNOWN = object()


def _title_known(within: Any, known: tuple[Any, Any] | None) -> Any:
    """:func:`_title` of ``within`` from ``known``, the title ``(title, scope)`` found in
    ``scope`` (None: none there), when ``within`` is ``scope`` or inside it and holds that
    title (or there is none): every heading of ``within`` is one of ``scope``'s, so none
    of a higher rank, and none of its rank before it. Else :data:`_UNKNOWN`."""
    if known is None:
        return _UNKNOWN
    title, scope = known
    if scope is None or not _inside(within, scope):
        return _UNKNOWN
    if title is None or _inside(title, within):
        return title
    return _UNKNOWN


def _inside(el: Any, scope: Any) -> bool:
    """Whether ``el`` is ``scope`` or stands inside it."""
    return el is scope or any(a is scope for a in el.iterancestors())


def _frame(chain: list[Any], at: int, ranks: list[str], out: list[str]) -> None:
    """Append ``chain[at]`` and its children to ``out`` (``depth`` + tag per node), the
    child ``chain[at + 1]`` followed down."""
    el = chain[at]
    if at == len(chain) - 1:
        out.append(f"{at}{_CONTAINER}")
        return
    out.append(f"{at}{_name(el)}")
    on_way = chain[at + 1]
    last: tuple[str, tuple[str, ...]] | None = None
    for child in el:
        if len(out) >= FRAME_NODES:
            return
        if child is on_way:
            _frame(chain, at + 1, ranks, out)
            last = None
            continue
        tag = tag_name(child)
        if tag is None or tag in SKIP:
            continue
        if (
            at + 2 == len(chain)
            and ranks
            and tag not in _BESIDE
            and next(child.iter(*ranks), None) is not None
        ):
            continue  # beside the container, with a heading of the title's rank: content
        kinds: list[str] = []
        for kid in child:
            kind = tag_name(kid)
            if kind is not None and kind not in SKIP and _name(kid) not in kinds:
                kinds.append(_name(kid))
        block = (_name(child), tuple(kinds))
        if block == last:
            continue
        last = block
        out.append(f"{at + 1}{block[0]}")
        out.extend(f"{at + 2}{kind}" for kind in kinds)


def _name(el: Any) -> str:
    """An element's label in a frame: its tag, letters and digits only."""
    return "".join(filter(str.isalnum, tag_name(el) or "")) or "x"


@lru_cache(maxsize=65536)
def frame_similarity(a: str, b: str) -> float:
    """``2·STM/(n1+n2)`` of two frames (1.0: equal, or one is unknown), each read down to
    the shallower of the two containers: below it, what one page holds beside its container
    stands inside the other's container, content there (a manual's chapter whose container
    is one of its sections on one page and the whole chapter on the next).

    A container that is a child of ``<body>`` is the page's own wrapper: its frame (header,
    menus, sidebars) is inside it, in the signature, and what stands beside it is what a
    script shows over the page (a share box, a notice), present on one page and not the
    next. Such frames are not compared (1.0)."""
    if a == b or not a or not b:
        return 1.0
    depth = min(_container_depth(a), _container_depth(b))
    if depth <= 1:
        return 1.0
    ta, tb = _cut(a, depth), _cut(b, depth)
    total = ta.nodes + tb.nodes
    common = stm(ta, tb, max_nodes=max(ta.nodes, tb.nodes, 1))
    return 2.0 * common / total


def _container_depth(frame: str) -> int:
    """How deep a frame's container is (0: none in the token, cut by :data:`FRAME_NODES`)."""
    labels = _tree(frame)[0]
    return _depths(frame)[labels.index(_CONTAINER)] if _CONTAINER in labels else 0


@lru_cache(maxsize=4096)
def _cut(frame: str, depth: int) -> FlatTree:
    """A frame as a tree, the element on its way to the container at ``depth`` standing for
    the container (what is below it left out)."""
    labels, sizes = _tree(frame)
    if _CONTAINER not in labels or _container_depth(frame) <= depth:
        return _flat(frame)
    depths = _depths(frame)
    at = labels.index(_CONTAINER)
    while depths[at] != depth:  # the nearest node before it at that depth: its ancestor
        at -= 1
    gone = sizes[at] - 1
    kept_labels = [*labels[:at], _CONTAINER, *labels[at + sizes[at] :]]
    kept_sizes = [
        size - gone if i < at and i + size > at else size for i, size in enumerate(sizes[:at])
    ]
    kept_sizes += [1, *sizes[at + sizes[at] :]]
    return FlatTree(kept_labels, kept_sizes)


def is_frame(token: str) -> bool:
    """Whether a token of a stored root label is a frame (:data:`FRAME_MARK`, digits)."""
    return token.startswith(FRAME_MARK) and any(c.isdigit() for c in token)
