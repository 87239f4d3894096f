"""Block segmentation: a page's visible text as the paragraphs a reader sees.

Text is split at block elements (``<p>``, ``<div>``, ``<li>``, headings...); a paragraph
belongs to the deepest element that holds all of its text. One walk gives the paragraphs,
every element's number (preorder) and parent, and the attributes the weights read, so that
weighing and pruning never walk the tree again. The compiled walk
(``visdup._native._dom.blocks_walk``) reads libxml2's nodes directly and gives the same
:class:`Walk` as the Python one (tests compare them); both are iterative, since pages nest
thousands deep.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

from visdup._native import kernel
from visdup.page.dom import events

_kernel = kernel("_dom")

#: Elements that start a new paragraph of text; everything else flows inline.
BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd",
        "details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "li",
        "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td",
        "tfoot", "th", "thead", "tr", "ul", "br",
    }
)  # fmt: skip

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

_BLOCK_SET = set(BLOCK_TAGS)  # the compiled walk takes a plain set and dict
_HEADING_LEVELS = dict(HEADINGS)
_SPACE = re.compile(r"\s+")

#: What the weights read of an element: (tag, class, id, role, itemprop).
Key = tuple[Any, ...]


def char_count(text: str | None) -> int:
    """Visible characters, whitespace not counted: runs of spaces are layout, not text."""
    if not text:
        return 0
    return sum(map(len, text.split()))


def hyperlink(el: Any) -> bool:
    """Whether an ``<a>`` reads as a link: one a script handles (``href="javascript:"``)
    that holds paragraphs is a wrapper the page put around its text, not a link to follow;
    a script's button (Share, Back) still is one."""
    href = el.get("href")
    if href is None or not href.lstrip()[:11].lower().startswith("javascript:"):
        return True
    return not any(d.tag in BLOCK_TAGS for d in el.iterdescendants())


def attribute_key(el: Any) -> Key:
    get = el.get
    return (el.tag, get("class"), get("id"), get("role"), get("itemprop"))


@dataclass(slots=True)
class Block:
    """One paragraph of visible text; ``owner`` is its element (or element number).

    ``_text``: the text as :attr:`text` reads it, when the walk made it so (the compiled
    walk squeezes the whitespace itself).
    """

    owner: Any
    kind: str
    level: int
    parts: list[str] = field(default_factory=list)
    link_chars: int = 0
    chars: int = 0
    _text: str | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        """Read once per paragraph: weights, page text and the kept blocks all ask for it.

        (Kept by hand: ``functools.cached_property`` takes a lock on every first read, and a
        long page has thousands of paragraphs.)
        """
        text = self._text
        if text is None:
            text = self._text = " ".join("".join(self.parts).split())
        return text


#: A paragraph as text prints read it: (kind, level, text).
Row = tuple[str, int, str]


class Walk:
    """One walk of a subtree: paragraphs with their owners numbered in preorder.

    ``parents[i]`` is element i's parent (-1 for the walked root); ``spans[i]`` the
    [first, end) range of element i's paragraphs and whether no heading encloses it (then a
    walk of element i alone gives exactly those paragraphs). An element is reached through
    ``elements`` (the Python walk keeps them) or through its child ``positions``.
    ``factors``: each element's weight factor, when the walk was asked for them.

    The compiled walk gives its paragraphs as ``rows`` (kind, level, text) and int64
    ``columns`` (owner, link characters, characters per paragraph): what the weights, the
    page text and the kept content read, with no object per paragraph besides its row.
    :attr:`blocks` makes the :class:`Block` objects of those on first use.
    """

    __slots__ = (
        "_blocks", "columns", "elements", "factors", "keys", "parents", "positions", "root",
        "rows", "spans",
    )  # fmt: skip

    def __init__(
        self,
        root: Any,
        blocks: list[Block] | None,
        parents: list[int],
        spans: Mapping[int, tuple[int, int, bool]],
        keys: list[Key],
        positions: list[int] | None = None,
        elements: list[Any] | None = None,
        factors: Sequence[float] | None = None,
        rows: list[Row] | None = None,
        columns: Sequence[int] | None = None,
    ) -> None:
        self.root = root
        self._blocks = blocks
        self.parents = parents
        self.spans = spans
        self.keys = keys
        self.positions = positions
        self.elements = elements
        self.factors = factors
        self.rows = rows
        self.columns = columns

    @property
    def blocks(self) -> list[Block]:
        blocks = self._blocks
        if blocks is None:
            rows, columns = self.rows or [], self.columns or []
            blocks = self._blocks = [
                Block(columns[k], kind, level, [text], columns[k + 1], columns[k + 2], text)
                for k, (kind, level, text) in zip(range(0, 3 * len(rows), 3), rows, strict=True)
            ]
        return blocks

    @property
    def count(self) -> int:
        """How many paragraphs the walk found."""
        return len(self.rows) if self.rows is not None else len(self.blocks)

    def joined(self, first: int = 0, end: int | None = None) -> list[Row]:
        """:func:`join_blocks` of paragraphs [first, end)."""
        if self.rows is not None:
            return self.rows[first:end]  # every row the compiled walk made holds text
        return join_blocks(self.blocks[first:end])

    def visible_text(self) -> str:
        """The paragraphs' text, a space apart: the whole visible text of the walked page."""
        if self.rows is not None:
            return " ".join(map(_ROW_TEXT, self.rows))
        return " ".join(t for b in self.blocks if (t := b.text))

    def element(self, i: int) -> Any:
        if self.elements is not None:
            return self.elements[i]
        assert self.positions is not None
        steps = []
        while i > 0:
            steps.append(self.positions[i])
            i = self.parents[i]
        node = self.root
        for pos in reversed(steps):
            node = node[pos]
        return node


class Spans(Mapping[int, tuple[int, int, bool]]):
    """The compiled walk's spans: (element, first, end, free) int64 quads in preorder, read
    by bisection. A page asks for one span (its content's): no dict of them all is made."""

    __slots__ = ("_elements", "_quads")

    def __init__(self, raw: bytes) -> None:
        self._quads = memoryview(raw).cast("q")
        self._elements = self._quads[::4]

    def __getitem__(self, element: int) -> tuple[int, int, bool]:
        k = bisect_left(self._elements, element)
        if k == len(self._elements) or self._elements[k] != element:
            raise KeyError(element)
        quads = self._quads
        return quads[4 * k + 1], quads[4 * k + 2], bool(quads[4 * k + 3])

    def __iter__(self) -> Iterator[int]:
        return iter(self._elements.tolist())

    def __len__(self) -> int:
        return len(self._elements)


def walk(
    root: Any,
    factor: Callable[[Key], float] | None = None,
    known: dict[Key, float] | None = None,
) -> Walk:
    """Paragraphs and element numbers of a subtree, by the compiled walk when it can.

    ``factor``: the weight factor of an element's key, which the compiled walk then reads
    once per distinct key of the page (from ``known``, the factors already made, when it
    holds the key) and keeps in :attr:`Walk.factors`.
    """
    if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
        walked = _kernel.blocks_walk(root, _BLOCK_SET, _HEADING_LEVELS, True, True, factor, known)
        if walked is not None:
            rows, parents, spans, keys, positions, factors, columns = walked
            return Walk(
                root,
                None,
                parents,
                Spans(spans),
                keys,
                positions,
                factors=None if factors is None else array("d", factors),
                rows=rows,
                columns=memoryview(columns).cast("q"),
            )
    return python_walk(root)


def walk_paragraphs(root: Any) -> list[Block]:
    """The paragraphs of :func:`walk` alone: a second walk of the content needs no element
    numbers, keys or spans, and the compiled walk then makes none."""
    if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
        walked = _kernel.blocks_walk(root, _BLOCK_SET, _HEADING_LEVELS, False, True)
        if walked is not None:
            rows, columns = walked[0], memoryview(walked[6]).cast("q")
            return Walk(root, None, [], {}, [], rows=rows, columns=columns).blocks
    return python_walk(root).blocks


def paragraph_rows(root: Any) -> list[Row]:
    """:func:`join_blocks` of :func:`walk_paragraphs`: the rows the compiled walk makes."""
    if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
        walked = _kernel.blocks_walk(root, _BLOCK_SET, _HEADING_LEVELS, False, True)
        if walked is not None:
            rows: list[Row] = walked[0]
            return rows
    return join_blocks(python_walk(root).blocks)


def python_walk(root: Any) -> Walk:
    """:func:`walk` in Python: the reference the compiled walk is held to."""
    order: list[tuple[Any, Any]] = []
    spans: dict[Any, list[int]] = {}
    found = paragraphs(root, order, spans)
    elements = [el for el, _ in order]
    number = {el: i for i, el in enumerate(elements)}
    parents = [number[p] if p is not None else -1 for _, p in order]
    for b in found:
        b.owner = number[b.owner]
    return Walk(
        root,
        found,
        parents,
        {number[el]: (s[0], s[1], bool(s[2])) for el, s in spans.items()},
        [attribute_key(el) for el in elements],
        elements=elements,
    )


def paragraphs(
    root: Any,
    order: list[tuple[Any, Any]] | None = None,
    spans: dict[Any, list[int]] | None = None,
) -> list[Block]:
    """Split a subtree into paragraphs at block elements, iteratively.

    A paragraph belongs to the deepest element that holds all of its text, so that text
    flowing through inline wrappers (a <span> around a whole article) counts for them.
    ``order``, when given, receives (element, parent) in preorder. ``spans`` receives, per
    block element, the [first, end) range of its paragraphs and whether no heading encloses
    it.
    """
    blocks: list[Block] = []
    open_els: list[Any] = []
    # The paragraph being read: its text parts, counts, kind and heading level.
    parts: list[str] = []
    chars = links = 0
    kind, level = "paragraph", 0
    low = 0  # shallowest stack depth reached since the current paragraph began
    link_depth = 0
    heading: list[int] = []
    block_tags, headings = BLOCK_TAGS, HEADINGS
    record = order.append if order is not None else None

    for start, el in events(root):
        tag = el.tag
        if tag.__class__ is not str:
            tag = ""
        if start:
            if record is not None and tag:
                record((el, open_els[-1] if open_els else None))
            open_els.append(el)
        if tag in block_tags:  # its start and its end both end the paragraph being read
            if tag in headings:
                if start:
                    heading.append(headings[tag])
                else:
                    heading.pop()
            if chars:
                owner = open_els[low - 1] if low else root
                blocks.append(Block(owner, kind, level, parts, links, chars))
            low = len(open_els)
            kind, level = ("heading", heading[-1]) if heading else ("paragraph", 0)
            parts = []
            chars = links = 0
            if spans is not None and start:
                enclosed = len(heading) > (1 if tag in headings else 0)
                spans[el] = [len(blocks), -1, 0 if enclosed else 1]
            elif spans is not None:
                spans[el][1] = len(blocks)
        if tag == "a" and hyperlink(el):
            link_depth += 1 if start else -1
        if start:
            text = el.text
        else:
            open_els.pop()
            if len(open_els) < low:
                low = len(open_els)
            if el is root:
                continue
            text = el.tail
        if text:
            if text.isspace():
                parts.append(" ")
                continue
            n = char_count(text)
            parts.append(text)
            chars += n
            if link_depth:
                links += n
    if chars:
        blocks.append(Block(open_els[low - 1] if low else root, kind, level, parts, links, chars))
    return blocks


#: (kind, level, text) of a paragraph whose text the walk made.
_ROW = attrgetter("kind", "level", "_text")
_ROW_TEXT = itemgetter(2)


def join_blocks(blocks: Iterable[Block]) -> list[Row]:
    """(kind, level, text) of the paragraphs that hold text: what text prints read."""
    blocks = blocks if isinstance(blocks, list) else list(blocks)
    rows: list[Row] = list(map(_ROW, blocks))
    if all(map(_ROW_TEXT, rows)):  # every text made and none empty
        return rows
    return [(b.kind, b.level, text) for b in blocks if (text := b.text)]
