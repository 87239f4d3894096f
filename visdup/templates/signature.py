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
against a title and a signature line with its sub-headings below.

The signature is a flat preorder tree (``labels``, ``sizes``) that the STM kernel compares in
microseconds, and ``key``: a 64-bit digest of it, stable across processes, so that pages with
the very same skeleton meet in a dictionary without any comparison.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from lxml import etree

from visdup._native import kernel
from visdup.storage.urls import canonical_url
from visdup.templates.stm import (
    HEADING_LEVELS,
    FlatTree,
    PackedTree,
    label_paths,
    stm,
    stm_upper_bound,
    stm_upper_bounds,
)

#: Levels below <body> kept in the skeleton.
DEFAULT_DEPTH = 8
#: Levels of the content region kept in its stub at least (0: one node).
DEFAULT_STUB_DEPTH = 2
#: The text spine goes this far below the region at most (:func:`spine_path`).
MAX_STUB_DEPTH = 8
#: Levels kept of an element inside the content region but off its text spine (a sidebar, a
#: header, a comment thread beside the article), itself included.
OFF_SPINE_DEPTH = 2
#: A child on the text spine holds at least this share of its parent's text.
SPINE_SHARE = 0.5
#: Bumped when the signature of a page changes meaning, or which signatures may share a
#: template: keys differ, so signatures stored by another version are told apart (their labels
#: alone may look the same) and their pages are reclustered, not left in a partition this
#: version would not make.
SIGNATURE_VERSION = 7
#: The signature is cut to this many nodes (a preorder prefix).
DEFAULT_MAX_NODES = 400
#: Label of the node standing for the main content.
MAIN = "#main"

#: Elements that never render, or carry no layout.
_SKIP = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "link",
        "meta",
        "base",
        "iframe",
        "br",
        "wbr",
        "svg",
    }
)
#: The same as a set, as the compiled walk takes it.
_SKIP_SET = set(_SKIP)


@dataclass(eq=False)
class Layout:
    """A layout signature: flat preorder ``labels``/``sizes``, the page's ``marks`` (the
    template names its ``<body>`` carries, :func:`body_marks`) and its 64-bit ``key``."""

    labels: tuple[str, ...]
    sizes: tuple[int, ...]
    key: int
    _paths: dict[int, int] | None = field(default=None, repr=False)
    marks: frozenset[str] = frozenset()
    #: Heading levels in the order they first appear in the content region's frame
    #: (:func:`layout_signature`): ``(1, 3, 4)`` for a title, a sub-heading, a signature line.
    outline: tuple[int, ...] = ()

    @property
    def nodes(self) -> int:
        return len(self.labels)

    @property
    def paths(self) -> dict[int, int]:
        """Label-path histogram (cached): STM's free upper bound."""
        if self._paths is None:
            self._paths = label_paths(self, len(self.labels))
        return self._paths

    def __getstate__(self) -> dict[str, Any]:
        # The path histogram's keys are hash() values, salted per process: never ship them.
        return {**self.__dict__, "_paths": None}

    @property
    def stored_labels(self) -> list[str]:
        """The labels as stored: the root's label carries the marks and the outline
        (:func:`make_layout` reads them back), so a store keeps its two columns."""
        labels = list(self.labels)
        if labels and (self.marks or self.outline):
            extra = [OUTLINE_MARK + "".join(map(str, self.outline))] if self.outline else []
            labels[0] = " ".join([labels[0], *sorted(self.marks), *extra])
        return labels

    def to_dict(self) -> dict[str, Any]:
        return {"labels": self.stored_labels, "sizes": list(self.sizes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Layout:
        return make_layout(data["labels"], data["sizes"])


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


def layout_key(labels: Sequence[str], sizes: Sequence[int]) -> int:
    """64-bit digest of a flat tree, the same in every process (``hash`` is salted)."""
    h = hashlib.blake2b(digest_size=8, person=b"visdup-layout-%d" % SIGNATURE_VERSION)
    for label, size in zip(labels, sizes, strict=True):
        h.update(label.encode("utf-8", "replace"))
        h.update(struct.pack("<I", size))
    return int.from_bytes(h.digest(), "little")


#: Starts the outline's token in a stored root label: ``^134``. Marks never hold a digit
#: (:func:`body_marks`), so the token cannot be read as one.
OUTLINE_MARK = "^"


def make_layout(
    labels: Sequence[str],
    sizes: Sequence[int],
    marks: Iterable[str] | None = None,
    outline: Sequence[int] = (),
) -> Layout:
    """A signature from its labels and sizes; ``marks`` None: the marks and the outline are
    read from the root's label, as :attr:`Layout.stored_labels` writes them."""
    labels, sizes = list(labels), tuple(sizes)
    levels = tuple(outline)
    if marks is None:
        found: frozenset[str] = frozenset()
        if labels and " " in labels[0]:
            root, *names = labels[0].split(" ")
            labels[0] = root
            kept = set()
            for name in names:
                if name.startswith(OUTLINE_MARK) and name[1:].isdigit():
                    levels = tuple(int(c) for c in name[1:])
                elif name:
                    kept.add(name)
            found = frozenset(kept)
    else:
        found = frozenset(marks)
    layout = Layout(tuple(labels), sizes, 0, marks=found, outline=levels)
    layout.key = layout_key(layout.stored_labels, sizes)
    return layout


#: Two pages' marks agree when they share this much of their union (Jaccard)...
MARKS_SHARE = 0.75
#: ... or differ in this many names at most beside a name both keep: one name in place of
#: another is a variant of one template (a shop's section, a post's format), more than that
#: another template. Marks that share no name at all (``article-page`` and ``product-page``, a
#: marked page and an unmarked one) name two templates: the page's whole name changed.
MARKS_SWAP = 2


def marks_agree(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two pages' marks allow them one template (:func:`body_marks`)."""
    if a == b:
        return True
    shared = len(a & b)
    return (shared > 0 and len(a ^ b) <= MARKS_SWAP) or shared >= MARKS_SHARE * len(a | b)


def outlines_agree(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether two pages' frame outlines allow them one template: the heading levels both
    use first appear in the same order.

    A level one page has and the other lacks says nothing (an optional sub-heading, a
    comment thread's title); the same levels met in another order is another frame. Scaladoc
    heads an entity page with its name, a sub-heading and a signature line (h1, h3, h4) and a
    package page with its name and signature line (h1, h4), then lists members under h3: the
    skeletons differ in one node of ~40, the order of their headings does not lie.
    """
    if a == b or not a or not b:
        return True
    shared = set(a) & set(b)
    return [x for x in a if x in shared] == [x for x in b if x in shared]


def may_link(a: Layout, b: Layout) -> bool:
    """Whether two signatures may share a template at all, before any measure: their
    ``<body>`` marks (:func:`marks_agree`) and their frame outlines (:func:`outlines_agree`)
    agree."""
    return marks_agree(a.marks, b.marks) and outlines_agree(a.outline, b.outline)


#: Marks kept from one page at most (the first in sorted order).
MAX_MARKS = 32
_DIGIT = re.compile(r"\d")
_SEGMENT_END = re.compile(r"\.[a-z0-9]{1,5}$")


def body_marks(root: Any, url: str | None = None) -> frozenset[str]:
    """The template names a page carries on its ``<body>``: its class names, case-folded,
    without those that name the page itself.

    Content systems write the page's template there (WordPress ``single-post`` against
    ``archive date``, Magento ``catalog-product-view``, Shopify ``template-collection``,
    Drupal ``page-node-type-article``), and it is often the only thing that tells two page
    types apart: a WordPress post and a day archive of one post differ in 4 of ~50 skeleton
    nodes. Names with a digit (``postid-73``, ``paged-2``), names outside ASCII (they read
    differently when a page is decoded without its charset), and names built on a segment of
    the page's own URL path (``category-news`` on ``/category/news/``, ``product-blue-shirt``
    on ``/blue-shirt.html``) name the page, not its template, and are left out.
    """
    if root is None:
        return frozenset()
    body = root
    if _tag(root) == "html":
        body = next((c for c in root if _tag(c) == "body"), None)
    if body is None or _tag(body) != "body":
        return frozenset()
    names = {n.casefold() for n in (body.get("class") or "").split()}
    if not names:
        return frozenset()
    segments: set[str] = set()
    if url:
        try:  # the stored form: a crawl and `visdup cluster --db` read the same path
            path = unquote(urlsplit(canonical_url(url)).path).casefold()
        except ValueError:
            path = ""
        for part in path.split("/")[:64]:
            part = _SEGMENT_END.sub("", part)
            if len(part) >= 2 and not part.isdigit():
                segments.add(part)
    kept = []
    for name in sorted(names):
        if len(name) > 64 or not name.isascii() or _DIGIT.search(name):
            continue  # ASCII only: a page decoded another way (no charset) has the same marks
        if any(name.endswith("-" + s) or name.startswith(s + "-") for s in segments):
            continue
        kept.append(name)
        if len(kept) == MAX_MARKS:
            break  # a hostile page's thousands of names: the signature stays small
    return frozenset(kept)


def similarity(a: Layout, b: Layout) -> float:
    """``2·STM/(n1+n2)``: seed 003's page similarity, on the two signatures."""
    total = a.nodes + b.nodes
    if total == 0:
        return 1.0
    if a.key == b.key:
        return 1.0
    return 2.0 * stm(a, b, max_nodes=max(a.nodes, b.nodes)) / total


def similarity_bound(a: Layout, b: Layout) -> float:
    """An upper bound on :func:`similarity` from the label-path histograms (no STM)."""
    return _bound(a, b, stm_upper_bound(a.paths, b.paths))


def similarity_bounds(a: Layout, others: Sequence[Layout]) -> list[float]:
    """:func:`similarity_bound` of ``a`` against each of ``others``, the histograms' shared
    counts summed in one kernel call."""
    shared = stm_upper_bounds(a.paths, [b.paths for b in others])
    return [_bound(a, b, common) for b, common in zip(others, shared, strict=True)]


def _bound(a: Layout, b: Layout, common: int) -> float:
    """The similarity two signatures would have if ``common`` of their nodes matched."""
    total = a.nodes + b.nodes
    if total == 0 or a.key == b.key:
        return 1.0
    return 2.0 * common / total


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


#: The compiled walks (``visdup._native._stm``): its text_length counts what the XPath
#: below counts, without building the element's text.
_kernel = kernel("_stm")


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

    Each text length reads a subtree, so none is read twice, and a region that holds
    :data:`GROW_SHARE` of the whole page's text goes up to the top at once: no ancestor below
    ``<body>`` holds more text than the page, so every step of the growth would pass.
    """
    if root is None or main is None:
        return main
    lengths = lengths if lengths is not None else TextLengths()
    body = root
    if _tag(root) == "html":
        body = next((c for c in root if _tag(c) == "body"), root)
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
                    if isinstance(k.tag, str) and _tag(k) not in _SKIP:
                        length = lengths[k]
                        if length >= TEXT_SHARE * page:
                            node, mine = k, length
                            break
                else:
                    break
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
    if region is None or _tag(region) in ("html", "body"):
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
            tag = _tag(child)
            if tag is None or tag in _SKIP:
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


def _label(el: Any, tag: str, mode: str) -> str:
    """A node's label in the signature: see :func:`layout_signature`'s ``mode``."""
    if mode == "tag":
        return tag
    ident = (el.get("id") or "").strip()
    if mode == "id":
        return f"{tag}#{ident}" if ident and not any(c.isdigit() for c in ident) else tag
    cls = ".".join(sorted((el.get("class") or "").split()))
    return f"{tag}.{cls}" if cls else tag


def _tag(el: Any) -> str | None:
    tag = el.tag
    if not isinstance(tag, str):
        return None  # comments, processing instructions, entities
    if tag[0] == "{":
        tag = tag.rsplit("}", 1)[1]
    return tag.lower()


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
    if _tag(root) == "html":
        for child in root:
            if _tag(child) == "body":
                start = child
                break
    # Post-order over an explicit stack. A frame: [element, label, depth left, stub depth
    # left or -1 outside the main content, iterator over children, collected children,
    # inside the region (on its spine or below), in the region's frame (on the spine or
    # beside it, not in the spine's end)].
    # A collected child is (structural hash, labels, sizes, in the frame) of its compressed
    # subtree.
    result: list[tuple[int, list[str], list[int], list[bool]]] = []
    if main is start or main is root:
        main = None  # no content apart from the page: a stub would hide the whole layout
    on_spine: dict[int, int] = {}
    end_stub = stub_depth
    if main is not None and spine and spine[0] is main:
        on_spine = {id(el): i for i, el in enumerate(spine)}
        end_stub = max(1, stub_depth - (len(spine) - 1))
    budget = max_nodes * 8  # elements visited at most: hostile pages cannot make this slow
    root_label = _tag(start) or "body"
    if _kernel is not None and mode == "tag" and stub_mode is None and _kernel.DOM_WALK:
        walked = _kernel.layout_walk(
            start,
            root_label,
            main,
            list(spine) if on_spine and spine else None,
            depth,
            stub_depth,
            end_stub,
            off_spine,
            budget,
            _SKIP_SET,
            MAIN,
        )
        if walked is not None:
            labels, sizes, frames = walked
            return _made(labels, sizes, frames, max_nodes)
    stack: list[list[Any]] = [[start, root_label, depth, -1, iter(start), [], False, False]]
    while stack:
        frame = stack[-1]
        _el, label, left, stub, children, got, inside, framed = frame
        child = None
        if left > 0 and stub != 0 and budget > 0:
            for candidate in children:
                tag = _tag(candidate)
                if tag is None or tag in _SKIP:
                    continue
                child = candidate
                break
        if child is not None:
            budget -= 1
            tag = _label(
                child, _tag(child) or "", stub_mode if stub_mode is not None and stub > 0 else mode
            )
            if on_spine and id(child) in on_spine:
                at_end = on_spine[id(child)] == len(spine or ()) - 1
                stack.append(
                    [
                        child,
                        MAIN if child is main else tag,
                        left - 1,
                        end_stub if at_end else -1,
                        iter(child),
                        [],
                        True,
                        not at_end,
                    ]
                )
            elif inside and stub < 0:  # inside the region, beside its spine
                stack.append(
                    [child, tag, left - 1, max(1, off_spine) - 1, iter(child), [], True, True]
                )
            elif stub < 0 and main is not None and child is main:
                stack.append([child, MAIN, left - 1, stub_depth, iter(child), [], True, False])
            else:
                stack.append(
                    [
                        child,
                        tag,
                        left - 1,
                        stub - 1 if stub > 0 else stub,
                        iter(child),
                        [],
                        inside,
                        framed,
                    ]
                )
            continue
        stack.pop()
        # Collapse runs of equal siblings (horizontal compression without counts). Inside a
        # stub of the spine's signature, a child equal to any earlier one is left out: the stub
        # says what kinds of element the content holds, in the order they first appear, not
        # how many. (Sorting the kinds instead split the test site's event pages: STM maps
        # children in order, and an extra kind sorted to the front shifted the rest.)
        labels = [label]
        sizes = [1]
        frames = [framed]
        parts = [label]
        last = None
        seen: set[int] | None = set() if on_spine and stub >= 0 else None
        for h, sub_labels, sub_sizes, sub_frames in got:
            if h == last:
                continue
            if seen is not None:
                if h in seen:
                    continue
                seen.add(h)
            last = h
            labels.extend(sub_labels)
            sizes.extend(sub_sizes)
            frames.extend(sub_frames)
            parts.append(h)
        sizes[0] = len(labels)
        node = (hash(tuple(parts)), labels, sizes, frames)
        if stack:
            stack[-1][5].append(node)
        else:
            result.append(node)
    _, labels, sizes, frames = result[0]
    return _made(labels, sizes, frames, max_nodes)


def _made(labels: list[str], sizes: list[int], frames: list[bool], max_nodes: int) -> Layout:
    """The signature of a walk's compressed nodes, its first ``max_nodes`` kept."""
    if len(labels) > max_nodes:
        labels, frames = labels[:max_nodes], frames[:max_nodes]
        sizes = [min(s, max_nodes - i) for i, s in enumerate(sizes[:max_nodes])]
    return make_layout(labels, sizes, (), _outline(labels, frames))


def _outline(labels: Sequence[str], frames: Sequence[bool]) -> tuple[int, ...]:
    """Heading levels in the order they first appear among the nodes of the region's frame.

    Only the frame counts: an article's own headings (in the spine's end) follow its text,
    h3 before h2 on one post and after it on the next, and headings outside the region
    (a sidebar's) come and go with optional blocks (a Sphinx page's local contents: its
    sidebar's h3 before or after the h4s).
    """
    seen: list[int] = []
    for label, framed in zip(labels, frames, strict=True):
        if framed:
            level = HEADING_LEVELS.get(label.partition(".")[0].partition("#")[0])
            if level is not None and level not in seen:
                seen.append(level)
    return tuple(seen)


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
    return make_layout(layout.labels, layout.sizes, marks, layout.outline) if marks else layout


def stub_depth(region: Any) -> int:
    """Levels of a whole-region stub down its text spine, two at least: the signature before
    only the spine's end was a stub, kept for ``bench/bench_cluster.py``'s comparison."""
    return max(DEFAULT_STUB_DEPTH, spine_depth(region))


def page_input(html: bytes | str, *, url: str | None = None, tree: bool = True) -> TemplateInput:
    """Parse a page and give what a crawl's template step gets: its signature and DOM tree.

    For page files and stored bodies (batch clustering, tests). Unusable input gives the
    empty signature and no tree.
    """
    from visdup.content import main_content, page_title, remove_invisible
    from visdup.page.parse import parse_html
    from visdup.templates.stm import dom_tree

    doc = parse_html(html, url=url)
    if doc.root is None:
        return TemplateInput(make_layout((), ()))
    title = page_title(doc.root)
    remove_invisible(doc.root)
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
